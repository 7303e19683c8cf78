// tb_prims: the small generic blocks of hw/rtl side by side in one Verilator
// build for the skid/, fifo/ and sdp_ram/ unit tests (one build instead of
// five). The two FIFOs share their inputs (fifo_*), as do the two RAMs
// (ram_*): one stimulus, each variant checked against its own model.
//   skid_*       lvsnic_axis_skid  WIDTH 32
//   fifo_* -> f0 lvsnic_fifo       WIDTH 16, DEPTH_LOG2 2, OREG 0
//          -> f1 lvsnic_fifo       WIDTH 16, DEPTH_LOG2 2, OREG 1
//   ram_*  -> r0 lvsnic_sdp_ram    WIDTH 16, ADDR_WIDTH 4, OUT_REG 0
//          -> r1 lvsnic_sdp_ram    WIDTH 16, ADDR_WIDTH 4, OUT_REG 1
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

    input  wire        fifo_flush,
    input  wire        fifo_in_valid,
    input  wire [15:0] fifo_in_data,
    input  wire        fifo_out_pop,
    output wire [1:0]  fifo_out_valid,    // [n]: FIFO fn
    output wire [31:0] fifo_out_data,     // [16n +: 16]
    output wire [5:0]  fifo_count,        // [3n +: 3]

    input  wire        ram_we,
    input  wire [3:0]  ram_waddr,
    input  wire [15:0] ram_wdata,
    input  wire        ram_re,
    input  wire [3:0]  ram_raddr,
    input  wire        ram_oce,
    output wire [31:0] ram_rdata          // [16n +: 16]: RAM rn
);
    lvsnic_axis_skid #(.WIDTH(32)) u_skid (
        .clk(clk), .rst(rst),
        .s_valid(skid_s_valid), .s_ready(skid_s_ready), .s_data(skid_s_data),
        .m_valid(skid_m_valid), .m_ready(skid_m_ready), .m_data(skid_m_data));

    genvar n;
    generate
        for (n = 0; n < 2; n = n + 1) begin : g_var
            lvsnic_fifo #(.WIDTH(16), .DEPTH_LOG2(2), .OREG(n)) u_fifo (
                .clk(clk), .rst(rst), .flush(fifo_flush), .in_valid(fifo_in_valid), .in_data(fifo_in_data),
                .out_valid(fifo_out_valid[n]), .out_data(fifo_out_data[16*n +: 16]), .out_pop(fifo_out_pop),
                .count(fifo_count[3*n +: 3]));

            lvsnic_sdp_ram #(.WIDTH(16), .ADDR_WIDTH(4), .OUT_REG(n)) u_ram (
                .clk(clk), .we(ram_we), .waddr(ram_waddr), .wdata(ram_wdata),
                .re(ram_re), .raddr(ram_raddr), .oce(ram_oce), .rdata(ram_rdata[16*n +: 16]));
        end
    endgenerate
endmodule
`default_nettype wire
