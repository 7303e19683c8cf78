// tb_prims: the small generic blocks of hw/rtl side by side in one Verilator
// build for the skid/, fifo/ and sdp_ram/ unit tests (one build instead of
// five; each test drives only its instance's ports, named <instance>_<port>).
//   skid_*  lvsnic_axis_skid  WIDTH 32
//   f0_*    lvsnic_fifo       WIDTH 16, DEPTH_LOG2 2, OREG 0
//   f1_*    lvsnic_fifo       WIDTH 16, DEPTH_LOG2 2, OREG 1
//   r0_*    lvsnic_sdp_ram    WIDTH 16, ADDR_WIDTH 4, OUT_REG 0
//   r1_*    lvsnic_sdp_ram    WIDTH 16, ADDR_WIDTH 4, OUT_REG 1
`default_nettype none
module tb_prims (
    input  wire        clk,
    input  wire        rst,

    input  wire        skid_s_valid,
    output wire        skid_s_ready,
    input  wire [31:0] skid_s_data,
    output wire        skid_m_valid,
    input  wire        skid_m_ready,
    output wire [31:0] skid_m_data,

    input  wire        f0_flush,
    input  wire        f0_in_valid,
    input  wire [15:0] f0_in_data,
    output wire        f0_out_valid,
    output wire [15:0] f0_out_data,
    input  wire        f0_out_pop,
    output wire [2:0]  f0_count,

    input  wire        f1_flush,
    input  wire        f1_in_valid,
    input  wire [15:0] f1_in_data,
    output wire        f1_out_valid,
    output wire [15:0] f1_out_data,
    input  wire        f1_out_pop,
    output wire [2:0]  f1_count,

    input  wire        r0_we,
    input  wire [3:0]  r0_waddr,
    input  wire [15:0] r0_wdata,
    input  wire        r0_re,
    input  wire [3:0]  r0_raddr,
    input  wire        r0_oce,
    output wire [15:0] r0_rdata,

    input  wire        r1_we,
    input  wire [3:0]  r1_waddr,
    input  wire [15:0] r1_wdata,
    input  wire        r1_re,
    input  wire [3:0]  r1_raddr,
    input  wire        r1_oce,
    output wire [15:0] r1_rdata
);
    lvsnic_axis_skid #(.WIDTH(32)) u_skid (
        .clk(clk), .rst(rst),
        .s_valid(skid_s_valid), .s_ready(skid_s_ready), .s_data(skid_s_data),
        .m_valid(skid_m_valid), .m_ready(skid_m_ready), .m_data(skid_m_data));

    lvsnic_fifo #(.WIDTH(16), .DEPTH_LOG2(2), .OREG(0)) u_f0 (
        .clk(clk), .rst(rst), .flush(f0_flush), .in_valid(f0_in_valid), .in_data(f0_in_data),
        .out_valid(f0_out_valid), .out_data(f0_out_data), .out_pop(f0_out_pop), .count(f0_count));

    lvsnic_fifo #(.WIDTH(16), .DEPTH_LOG2(2), .OREG(1)) u_f1 (
        .clk(clk), .rst(rst), .flush(f1_flush), .in_valid(f1_in_valid), .in_data(f1_in_data),
        .out_valid(f1_out_valid), .out_data(f1_out_data), .out_pop(f1_out_pop), .count(f1_count));

    lvsnic_sdp_ram #(.WIDTH(16), .ADDR_WIDTH(4), .OUT_REG(0)) u_r0 (
        .clk(clk), .we(r0_we), .waddr(r0_waddr), .wdata(r0_wdata),
        .re(r0_re), .raddr(r0_raddr), .oce(r0_oce), .rdata(r0_rdata));

    lvsnic_sdp_ram #(.WIDTH(16), .ADDR_WIDTH(4), .OUT_REG(1)) u_r1 (
        .clk(clk), .we(r1_we), .waddr(r1_waddr), .wdata(r1_wdata),
        .re(r1_re), .raddr(r1_raddr), .oce(r1_oce), .rdata(r1_rdata));
endmodule
`default_nettype wire
