// Stand-in RTL for the lvsnic-sim harness tests only (not the real core).
// A synchronous FIFO with a valid/ready interface on both sides: elastic
// buffering so that backpressure on the output reaches the input after
// 2**DEPTH_LOG2 beats.
`default_nettype none

module stub_axis_fifo #(
    parameter int WIDTH = 8,
    parameter int DEPTH_LOG2 = 3
) (
    input  wire logic             clk,
    input  wire logic             rst,

    input  wire logic [WIDTH-1:0] s_data,
    input  wire logic             s_valid,
    output      logic             s_ready,

    output      logic [WIDTH-1:0] m_data,
    output      logic             m_valid,
    input  wire logic             m_ready
);
    if (WIDTH < 1) begin : g_bad_width
        $error("stub_axis_fifo: WIDTH must be >= 1");
    end
    if (DEPTH_LOG2 < 1 || DEPTH_LOG2 > 10) begin : g_bad_depth
        $error("stub_axis_fifo: DEPTH_LOG2 must be 1..10");
    end

    logic [WIDTH-1:0] mem [2**DEPTH_LOG2];
    logic [DEPTH_LOG2:0] wr_ptr, rd_ptr;

    wire full  = (wr_ptr[DEPTH_LOG2] != rd_ptr[DEPTH_LOG2])
              && (wr_ptr[DEPTH_LOG2-1:0] == rd_ptr[DEPTH_LOG2-1:0]);
    wire empty = (wr_ptr == rd_ptr);

    assign s_ready = !full;
    assign m_valid = !empty;
    assign m_data  = mem[rd_ptr[DEPTH_LOG2-1:0]];

    always_ff @(posedge clk) begin
        if (s_valid && s_ready) begin
            mem[wr_ptr[DEPTH_LOG2-1:0]] <= s_data;
        end
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            wr_ptr <= '0;
            rd_ptr <= '0;
        end else begin
            if (s_valid && s_ready) wr_ptr <= wr_ptr + 1'b1;
            if (m_valid && m_ready) rd_ptr <= rd_ptr + 1'b1;
        end
    end
endmodule

`default_nettype wire
