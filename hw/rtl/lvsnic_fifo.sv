// lvsnic_fifo: small synchronous first-word-fall-through FIFO.
//
// Storage is a plain array with an asynchronous read (maps to distributed
// LUT RAM); the head entry is visible on out_data whenever out_valid is set.
// One push and one pop per cycle. `count` is the number of stored entries
// (used by producers for credit-based flow control). Pushing when full or
// popping when empty is ignored (the callers never do it).
`default_nettype none

module lvsnic_fifo #(
    parameter integer WIDTH      = 8,
    parameter integer DEPTH_LOG2 = 4
) (
    input  wire                  clk,
    input  wire                  rst,

    input  wire                  in_valid,
    input  wire [WIDTH-1:0]      in_data,

    output logic                 out_valid,
    output logic [WIDTH-1:0]     out_data,
    input  wire                  out_pop,

    output logic [DEPTH_LOG2:0]  count
);

    localparam integer DEPTH = 1 << DEPTH_LOG2;

    logic [WIDTH-1:0]      mem [0:DEPTH-1];
    logic [DEPTH_LOG2:0]   wr_ptr;
    logic [DEPTH_LOG2:0]   rd_ptr;

    wire full  = (wr_ptr == {~rd_ptr[DEPTH_LOG2], rd_ptr[DEPTH_LOG2-1:0]});
    wire push  = in_valid && !full;
    wire pop   = out_pop && out_valid;

    always_ff @(posedge clk) begin
        if (push) mem[wr_ptr[DEPTH_LOG2-1:0]] <= in_data;
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            wr_ptr <= '0;
            rd_ptr <= '0;
        end else begin
            if (push) wr_ptr <= wr_ptr + 1'b1;
            if (pop)  rd_ptr <= rd_ptr + 1'b1;
        end
    end

    assign out_valid = (wr_ptr != rd_ptr);
    assign out_data  = mem[rd_ptr[DEPTH_LOG2-1:0]];
    assign count     = wr_ptr - rd_ptr;

endmodule

`default_nettype wire
