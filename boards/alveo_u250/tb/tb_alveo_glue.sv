// Test-bench wrapper (boards/alveo_u250/test_glue.py): the board glue side
// by side in one Verilator build, ports prefixed ff_ (frame FIFO, 64 bit,
// 32 beats) and bar_ (BAR0 decoder).
`default_nettype none

module tb_alveo_glue (
    input  wire         clk,
    input  wire         rst,

    input  wire [63:0]  ff_s_tdata,
    input  wire [7:0]   ff_s_tkeep,
    input  wire         ff_s_tvalid,
    input  wire         ff_s_tlast,
    input  wire [15:0]  ff_s_tuser,
    input  wire         ff_s_bad,
    output wire [63:0]  ff_m_tdata,
    output wire [7:0]   ff_m_tkeep,
    output wire         ff_m_tvalid,
    input  wire         ff_m_tready,
    output wire         ff_m_tlast,
    output wire [15:0]  ff_m_tuser,
    output wire [31:0]  ff_frames,
    output wire [31:0]  ff_bad,
    output wire [31:0]  ff_overflow,

    input  wire [15:0]  bar_s_awaddr,
    input  wire         bar_s_awvalid,
    output wire         bar_s_awready,
    input  wire [31:0]  bar_s_wdata,
    input  wire [3:0]   bar_s_wstrb,
    input  wire         bar_s_wvalid,
    output wire         bar_s_wready,
    output wire [1:0]   bar_s_bresp,
    output wire         bar_s_bvalid,
    input  wire         bar_s_bready,
    input  wire [15:0]  bar_s_araddr,
    input  wire         bar_s_arvalid,
    output wire         bar_s_arready,
    output wire [31:0]  bar_s_rdata,
    output wire [1:0]   bar_s_rresp,
    output wire         bar_s_rvalid,
    input  wire         bar_s_rready,
    output wire [15:0]  bar_m_awaddr,
    output wire [1:0]   bar_m_awvalid,
    input  wire [1:0]   bar_m_awready,
    output wire [31:0]  bar_m_wdata,
    output wire [3:0]   bar_m_wstrb,
    output wire [1:0]   bar_m_wvalid,
    input  wire [1:0]   bar_m_wready,
    input  wire [3:0]   bar_m_bresp,
    input  wire [1:0]   bar_m_bvalid,
    output wire [1:0]   bar_m_bready,
    output wire [15:0]  bar_m_araddr,
    output wire [1:0]   bar_m_arvalid,
    input  wire [1:0]   bar_m_arready,
    input  wire [63:0]  bar_m_rdata,
    input  wire [3:0]   bar_m_rresp,
    input  wire [1:0]   bar_m_rvalid,
    output wire [1:0]   bar_m_rready
);

    lvsnic_alveo_frame_fifo #(.DATA_WIDTH(64), .USER_WIDTH(16), .DEPTH_LOG2(5)) u_ff (
        .clk (clk), .rst (rst),
        .s_tdata (ff_s_tdata), .s_tkeep (ff_s_tkeep), .s_tvalid (ff_s_tvalid),
        .s_tlast (ff_s_tlast), .s_tuser (ff_s_tuser), .s_bad (ff_s_bad),
        .m_tdata (ff_m_tdata), .m_tkeep (ff_m_tkeep), .m_tvalid (ff_m_tvalid),
        .m_tready (ff_m_tready), .m_tlast (ff_m_tlast), .m_tuser (ff_m_tuser),
        .frames (ff_frames), .bad (ff_bad), .overflow (ff_overflow)
    );

    lvsnic_alveo_bar0 #(.ADDR_WIDTH(16)) u_bar (
        .clk (clk), .rst (rst),
        .s_awaddr (bar_s_awaddr), .s_awvalid (bar_s_awvalid), .s_awready (bar_s_awready),
        .s_wdata (bar_s_wdata), .s_wstrb (bar_s_wstrb), .s_wvalid (bar_s_wvalid),
        .s_wready (bar_s_wready), .s_bresp (bar_s_bresp), .s_bvalid (bar_s_bvalid),
        .s_bready (bar_s_bready), .s_araddr (bar_s_araddr), .s_arvalid (bar_s_arvalid),
        .s_arready (bar_s_arready), .s_rdata (bar_s_rdata), .s_rresp (bar_s_rresp),
        .s_rvalid (bar_s_rvalid), .s_rready (bar_s_rready),
        .m_awaddr (bar_m_awaddr), .m_awvalid (bar_m_awvalid), .m_awready (bar_m_awready),
        .m_wdata (bar_m_wdata), .m_wstrb (bar_m_wstrb), .m_wvalid (bar_m_wvalid),
        .m_wready (bar_m_wready), .m_bresp (bar_m_bresp), .m_bvalid (bar_m_bvalid),
        .m_bready (bar_m_bready), .m_araddr (bar_m_araddr), .m_arvalid (bar_m_arvalid),
        .m_arready (bar_m_arready), .m_rdata (bar_m_rdata), .m_rresp (bar_m_rresp),
        .m_rvalid (bar_m_rvalid), .m_rready (bar_m_rready)
    );

endmodule

`default_nettype wire
