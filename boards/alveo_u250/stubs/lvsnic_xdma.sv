// Port stub of the PCIe instance `lvsnic_xdma` (xdma 4.1, "DMA/Bridge
// Subsystem for PCI Express", functional mode AXI Bridge; PG195, the
// bridge's interfaces as in PG194) as build.tcl configures it: Gen3 x16,
// 512-bit AXI at 250 MHz (axi_aclk), one 64 KiB BAR0 on the AXI master
// (m_axib: host -> card register accesses), the AXI slave bridge (s_axib:
// card -> host memory, 64-bit addresses, 4-bit IDs), MSI. No behaviour.
`default_nettype none
// one file holds several modules, named as the vendor names them
/* verilator lint_off DECLFILENAME */
/* verilator lint_off UNUSEDSIGNAL */

module lvsnic_xdma (
    input  wire         sys_clk,
    input  wire         sys_clk_gt,
    input  wire         sys_rst_n,
    output wire         user_lnk_up,
    output wire [15:0]  pci_exp_txp,
    output wire [15:0]  pci_exp_txn,
    input  wire [15:0]  pci_exp_rxp,
    input  wire [15:0]  pci_exp_rxn,
    output wire         axi_aclk,
    output wire         axi_aresetn,
    output wire         axi_ctl_aresetn,

    // interrupts (MSI)
    output wire         interrupt_out,
    input  wire         intx_msi_request,
    output wire         intx_msi_grant,
    output wire         msi_enable,
    output wire [2:0]   msi_vector_width,
    input  wire [4:0]   msi_vector_num,

    // AXI4 master: BAR accesses from the host
    output wire [3:0]   m_axib_awid,
    output wire [63:0]  m_axib_awaddr,
    output wire [7:0]   m_axib_awlen,
    output wire [2:0]   m_axib_awsize,
    output wire [1:0]   m_axib_awburst,
    output wire [2:0]   m_axib_awprot,
    output wire         m_axib_awvalid,
    input  wire         m_axib_awready,
    output wire         m_axib_awlock,
    output wire [3:0]   m_axib_awcache,
    output wire [511:0] m_axib_wdata,
    output wire [63:0]  m_axib_wstrb,
    output wire         m_axib_wlast,
    output wire         m_axib_wvalid,
    input  wire         m_axib_wready,
    input  wire [3:0]   m_axib_bid,
    input  wire [1:0]   m_axib_bresp,
    input  wire         m_axib_bvalid,
    output wire         m_axib_bready,
    output wire [3:0]   m_axib_arid,
    output wire [63:0]  m_axib_araddr,
    output wire [7:0]   m_axib_arlen,
    output wire [2:0]   m_axib_arsize,
    output wire [1:0]   m_axib_arburst,
    output wire [2:0]   m_axib_arprot,
    output wire         m_axib_arvalid,
    input  wire         m_axib_arready,
    output wire         m_axib_arlock,
    output wire [3:0]   m_axib_arcache,
    input  wire [3:0]   m_axib_rid,
    input  wire [511:0] m_axib_rdata,
    input  wire [1:0]   m_axib_rresp,
    input  wire         m_axib_rlast,
    input  wire         m_axib_rvalid,
    output wire         m_axib_rready,

    // AXI4 slave bridge: card accesses to host memory
    input  wire [3:0]   s_axib_awid,
    input  wire [63:0]  s_axib_awaddr,
    input  wire [3:0]   s_axib_awregion,
    input  wire [7:0]   s_axib_awlen,
    input  wire [2:0]   s_axib_awsize,
    input  wire [1:0]   s_axib_awburst,
    input  wire         s_axib_awvalid,
    output wire         s_axib_awready,
    input  wire [511:0] s_axib_wdata,
    input  wire [63:0]  s_axib_wstrb,
    input  wire         s_axib_wlast,
    input  wire         s_axib_wvalid,
    output wire         s_axib_wready,
    output wire [3:0]   s_axib_bid,
    output wire [1:0]   s_axib_bresp,
    output wire         s_axib_bvalid,
    input  wire         s_axib_bready,
    input  wire [3:0]   s_axib_arid,
    input  wire [63:0]  s_axib_araddr,
    input  wire [3:0]   s_axib_arregion,
    input  wire [7:0]   s_axib_arlen,
    input  wire [2:0]   s_axib_arsize,
    input  wire [1:0]   s_axib_arburst,
    input  wire         s_axib_arvalid,
    output wire         s_axib_arready,
    output wire [3:0]   s_axib_rid,
    output wire [511:0] s_axib_rdata,
    output wire [1:0]   s_axib_rresp,
    output wire         s_axib_rlast,
    output wire         s_axib_rvalid,
    input  wire         s_axib_rready,

    // AXI4-Lite slave: the bridge's own control registers (unused, tied off)
    input  wire [31:0]  s_axil_awaddr,
    input  wire [2:0]   s_axil_awprot,
    input  wire         s_axil_awvalid,
    output wire         s_axil_awready,
    input  wire [31:0]  s_axil_wdata,
    input  wire [3:0]   s_axil_wstrb,
    input  wire         s_axil_wvalid,
    output wire         s_axil_wready,
    output wire         s_axil_bvalid,
    output wire [1:0]   s_axil_bresp,
    input  wire         s_axil_bready,
    input  wire [31:0]  s_axil_araddr,
    input  wire [2:0]   s_axil_arprot,
    input  wire         s_axil_arvalid,
    output wire         s_axil_arready,
    output wire [31:0]  s_axil_rdata,
    output wire [1:0]   s_axil_rresp,
    output wire         s_axil_rvalid,
    input  wire         s_axil_rready
);
    assign {user_lnk_up, pci_exp_txp, pci_exp_txn, axi_aclk, axi_aresetn, axi_ctl_aresetn} = '0;
    assign {interrupt_out, intx_msi_grant, msi_enable, msi_vector_width} = '0;
    assign {m_axib_awid, m_axib_awaddr, m_axib_awlen, m_axib_awsize, m_axib_awburst, m_axib_awprot,
            m_axib_awvalid, m_axib_awlock, m_axib_awcache, m_axib_wdata, m_axib_wstrb, m_axib_wlast,
            m_axib_wvalid, m_axib_bready, m_axib_arid, m_axib_araddr, m_axib_arlen, m_axib_arsize,
            m_axib_arburst, m_axib_arprot, m_axib_arvalid, m_axib_arlock, m_axib_arcache,
            m_axib_rready} = '0;
    assign {s_axib_awready, s_axib_wready, s_axib_bid, s_axib_bresp, s_axib_bvalid, s_axib_arready,
            s_axib_rid, s_axib_rdata, s_axib_rresp, s_axib_rlast, s_axib_rvalid} = '0;
    assign {s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_bresp, s_axil_arready, s_axil_rdata,
            s_axil_rresp, s_axil_rvalid} = '0;
endmodule

/* verilator lint_on UNUSEDSIGNAL */
`default_nettype wire
