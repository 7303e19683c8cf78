// Port stub of the CMAC instance `lvsnic_cmac` (cmac_usplus 3.1, PG203) as
// build.tcl configures it: CAUI-4 (4x25G), AXI4-Stream user interface
// (512 bit), RS-FEC included, GT DRP, no AXI4-Lite, no PTP, no OTN, no
// flow control. Ports of that configuration the top does not use (the
// statistics increment outputs, GT status) are left out. No behaviour.
`default_nettype none
// one file holds several modules, named as the vendor names them
/* verilator lint_off DECLFILENAME */
/* verilator lint_off UNUSEDSIGNAL */

module lvsnic_cmac (
    input  wire         gt0_rxp_in, gt0_rxn_in, gt1_rxp_in, gt1_rxn_in,
    input  wire         gt2_rxp_in, gt2_rxn_in, gt3_rxp_in, gt3_rxn_in,
    output wire         gt0_txp_out, gt0_txn_out, gt1_txp_out, gt1_txn_out,
    output wire         gt2_txp_out, gt2_txn_out, gt3_txp_out, gt3_txn_out,
    input  wire         gt_ref_clk_p,
    input  wire         gt_ref_clk_n,
    input  wire         init_clk,
    input  wire         sys_reset,
    input  wire [11:0]  gt_loopback_in,
    input  wire         gtwiz_reset_tx_datapath,
    input  wire         gtwiz_reset_rx_datapath,
    output wire         gt_txusrclk2,
    output wire         gt_rxusrclk2,
    output wire [3:0]   gt_powergoodout,
    output wire         usr_rx_reset,
    output wire         usr_tx_reset,

    // RX: 512-bit AXI4-Stream in the rx_clk domain, no tready
    input  wire         rx_clk,
    input  wire         core_rx_reset,
    output wire         rx_axis_tvalid,
    output wire [511:0] rx_axis_tdata,
    output wire         rx_axis_tlast,
    output wire [63:0]  rx_axis_tkeep,
    output wire         rx_axis_tuser,
    output wire [55:0]  rx_preambleout,
    input  wire         ctl_rx_enable,
    input  wire         ctl_rx_force_resync,
    input  wire         ctl_rx_test_pattern,
    output wire         stat_rx_aligned,
    output wire         stat_rx_aligned_err,
    output wire [2:0]   stat_rx_bad_fcs,
    output wire         stat_rx_status,

    // TX: 512-bit AXI4-Stream in the gt_txusrclk2 domain
    input  wire         core_tx_reset,
    output wire         tx_axis_tready,
    input  wire         tx_axis_tvalid,
    input  wire [511:0] tx_axis_tdata,
    input  wire         tx_axis_tlast,
    input  wire [63:0]  tx_axis_tkeep,
    input  wire         tx_axis_tuser,
    output wire         tx_ovfout,
    output wire         tx_unfout,
    input  wire [55:0]  tx_preamblein,
    input  wire         ctl_tx_enable,
    input  wire         ctl_tx_send_idle,
    input  wire         ctl_tx_send_rfi,
    input  wire         ctl_tx_send_lfi,
    input  wire         ctl_tx_test_pattern,

    // RS-FEC (100GBASE-SR4 / CR4 need it)
    input  wire         ctl_tx_rsfec_enable,
    input  wire         ctl_rx_rsfec_enable,
    input  wire         ctl_rsfec_ieee_error_indication_mode,
    input  wire         ctl_rx_rsfec_enable_correction,
    input  wire         ctl_rx_rsfec_enable_indication,

    // DRP
    input  wire         core_drp_reset,
    input  wire         drp_clk,
    input  wire [9:0]   drp_addr,
    input  wire [15:0]  drp_di,
    input  wire         drp_en,
    output wire [15:0]  drp_do,
    output wire         drp_rdy,
    input  wire         drp_we
);
    assign {gt0_txp_out, gt0_txn_out, gt1_txp_out, gt1_txn_out,
            gt2_txp_out, gt2_txn_out, gt3_txp_out, gt3_txn_out} = '0;
    assign {gt_txusrclk2, gt_rxusrclk2, gt_powergoodout, usr_rx_reset, usr_tx_reset} = '0;
    assign {rx_axis_tvalid, rx_axis_tdata, rx_axis_tlast, rx_axis_tkeep, rx_axis_tuser,
            rx_preambleout} = '0;
    assign {stat_rx_aligned, stat_rx_aligned_err, stat_rx_bad_fcs, stat_rx_status} = '0;
    assign {tx_axis_tready, tx_ovfout, tx_unfout, drp_do, drp_rdy} = '0;
endmodule

/* verilator lint_on UNUSEDSIGNAL */
`default_nettype wire
