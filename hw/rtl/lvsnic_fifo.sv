// lvsnic_fifo: small synchronous first-word-fall-through FIFO.
//
// Storage is a plain array with an asynchronous read (maps to distributed
// LUT RAM). With OREG = 1 the head entry sits in an output register
// (out_valid/out_data are flip-flop outputs; an entry pushed into an empty
// FIFO reaches the output register directly, one cycle after the push);
// with OREG = 0 the head is the RAM's asynchronous read. One push and one
// pop per cycle. `count` is the number of stored entries (output register
// included). `flush` empties the FIFO (a push in the same cycle is lost).
// Pushing when full or popping when empty is ignored (callers never do).
`default_nettype none

module lvsnic_fifo #(
    parameter integer WIDTH      = 8,
    parameter integer DEPTH_LOG2 = 4,
    parameter integer OREG       = 0
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  flush,

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

    wire ram_full  = (wr_ptr == {~rd_ptr[DEPTH_LOG2], rd_ptr[DEPTH_LOG2-1:0]});
    wire ram_empty = (wr_ptr == rd_ptr);
    wire [DEPTH_LOG2:0] ram_count = wr_ptr - rd_ptr;

    generate
        if (OREG == 0) begin : g_fwft
            wire push = in_valid && !ram_full;
            wire pop  = out_pop && !ram_empty;
            always_ff @(posedge clk) begin
                if (push) mem[wr_ptr[DEPTH_LOG2-1:0]] <= in_data;
            end
            always_ff @(posedge clk) begin
                if (rst || flush) begin
                    wr_ptr <= '0;
                    rd_ptr <= '0;
                end else begin
                    if (push) wr_ptr <= wr_ptr + 1'b1;
                    if (pop)  rd_ptr <= rd_ptr + 1'b1;
                end
            end
            assign out_valid = !ram_empty;
            assign out_data  = mem[rd_ptr[DEPTH_LOG2-1:0]];
            assign count     = ram_count;
        end else begin : g_oreg
            logic o_v;
            // the output register takes the RAM head, or the pushed entry
            // directly when the RAM is empty
            wire take   = !o_v || out_pop;
            wire bypass = take && ram_empty && in_valid;
            wire push   = in_valid && !bypass && !ram_full;
            wire pop    = take && !ram_empty;
            always_ff @(posedge clk) begin
                if (push) mem[wr_ptr[DEPTH_LOG2-1:0]] <= in_data;
            end
            always_ff @(posedge clk) begin
                if (rst || flush) begin
                    wr_ptr <= '0;
                    rd_ptr <= '0;
                    o_v    <= 1'b0;
                end else begin
                    if (push) wr_ptr <= wr_ptr + 1'b1;
                    if (pop)  rd_ptr <= rd_ptr + 1'b1;
                    if (take) o_v <= !ram_empty || in_valid;
                end
            end
            always_ff @(posedge clk) begin
                if (take) out_data <= ram_empty ? in_data : mem[rd_ptr[DEPTH_LOG2-1:0]];
            end
            assign out_valid = o_v;
            assign count     = ram_count + {{DEPTH_LOG2{1'b0}}, o_v};
        end
    endgenerate

endmodule

`default_nettype wire
