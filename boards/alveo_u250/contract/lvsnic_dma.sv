// PORT CONTRACT ONLY -- NOT AN IMPLEMENTATION.
//
// lvsnic_dma is the card's DMA engine of docs/hardware.md §8 (the rings
// the host driver's `vfio` backend speaks; its Rust model is
// host-driver/src/device/dma_model.rs). Its RTL is not written yet. This
// file fixes the ports the generated Alveo top connects, so that the lint
// checks the top's wiring; it has no behaviour and is never part of a
// build: build.tcl reads hw/rtl/lvsnic_dma.sv and stops with an error
// while that file does not exist (boards/alveo_u250/README.md).
`default_nettype none
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */

module lvsnic_dma #(
    parameter integer DATA_WIDTH = 512,
    // DMA_CAPS.MAX_FRAME (bytes)
    parameter integer MAX_FRAME  = 16384
) (
    input  wire                     clk,            // PCIe AXI clock
    input  wire                     rst,

    // registers 0x800..0x8FF of BAR0, offset from 0x800 (AXI4-Lite)
    input  wire [7:0]               s_axil_awaddr,
    input  wire                     s_axil_awvalid,
    output wire                     s_axil_awready,
    input  wire [31:0]              s_axil_wdata,
    input  wire [3:0]               s_axil_wstrb,
    input  wire                     s_axil_wvalid,
    output wire                     s_axil_wready,
    output wire [1:0]               s_axil_bresp,
    output wire                     s_axil_bvalid,
    input  wire                     s_axil_bready,
    input  wire [7:0]               s_axil_araddr,
    input  wire                     s_axil_arvalid,
    output wire                     s_axil_arready,
    output wire [31:0]              s_axil_rdata,
    output wire [1:0]               s_axil_rresp,
    output wire                     s_axil_rvalid,
    input  wire                     s_axil_rready,

    // RX queue: exception frames from lvsnic_core's m_axis_host
    input  wire [DATA_WIDTH-1:0]    s_axis_host_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_host_tkeep,
    input  wire                     s_axis_host_tvalid,
    output wire                     s_axis_host_tready,
    input  wire                     s_axis_host_tlast,
    input  wire [159:0]             s_axis_host_tuser,

    // TX queue: frames for lvsnic_core's s_axis_inject
    output wire [DATA_WIDTH-1:0]    m_axis_inject_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_inject_tkeep,
    output wire                     m_axis_inject_tvalid,
    input  wire                     m_axis_inject_tready,
    output wire                     m_axis_inject_tlast,
    output wire [31:0]              m_axis_inject_tuser,

    // AXI4 master into host memory (device/IOMMU addresses)
    output wire [3:0]               m_axi_awid,
    output wire [63:0]              m_axi_awaddr,
    output wire [7:0]               m_axi_awlen,
    output wire [2:0]               m_axi_awsize,
    output wire [1:0]               m_axi_awburst,
    output wire                     m_axi_awvalid,
    input  wire                     m_axi_awready,
    output wire [DATA_WIDTH-1:0]    m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]  m_axi_wstrb,
    output wire                     m_axi_wlast,
    output wire                     m_axi_wvalid,
    input  wire                     m_axi_wready,
    input  wire [3:0]               m_axi_bid,
    input  wire [1:0]               m_axi_bresp,
    input  wire                     m_axi_bvalid,
    output wire                     m_axi_bready,
    output wire [3:0]               m_axi_arid,
    output wire [63:0]              m_axi_araddr,
    output wire [7:0]               m_axi_arlen,
    output wire [2:0]               m_axi_arsize,
    output wire [1:0]               m_axi_arburst,
    output wire                     m_axi_arvalid,
    input  wire                     m_axi_arready,
    input  wire [3:0]               m_axi_rid,
    input  wire [DATA_WIDTH-1:0]    m_axi_rdata,
    input  wire [1:0]               m_axi_rresp,
    input  wire                     m_axi_rlast,
    input  wire                     m_axi_rvalid,
    output wire                     m_axi_rready,

    // IRQ.arm fired: [0] RX queue (vector 0), [1] TX queue (vector 1); one-cycle pulses
    output wire [1:0]               irq
);
    assign {s_axil_awready, s_axil_wready, s_axil_bresp, s_axil_bvalid, s_axil_arready,
            s_axil_rdata, s_axil_rresp, s_axil_rvalid} = '0;
    assign s_axis_host_tready = 1'b0;
    assign {m_axis_inject_tdata, m_axis_inject_tkeep, m_axis_inject_tvalid, m_axis_inject_tlast,
            m_axis_inject_tuser} = '0;
    assign {m_axi_awid, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awvalid,
            m_axi_wdata, m_axi_wstrb, m_axi_wlast, m_axi_wvalid, m_axi_bready, m_axi_arid,
            m_axi_araddr, m_axi_arlen, m_axi_arsize, m_axi_arburst, m_axi_arvalid,
            m_axi_rready} = '0;
    assign irq = '0;
endmodule

/* verilator lint_on UNUSEDSIGNAL */
`default_nettype wire
