// lvsnic_sdp_ram: inferred simple dual-port RAM (one write port, one read
// port, one clock) with a registered read and an optional output register.
//
// Written as a plain array so that Yosys/Vivado map it to block RAM: the
// read register (enabled by `re`) is the RAM's own output latch, the second
// register (enabled by `oce`, OUT_REG=1) its pipeline output register.
// Read-during-write on the same address returns unspecified data; callers
// never depend on it. Contents are not reset (callers sweep them).
`default_nettype none

module lvsnic_sdp_ram #(
    parameter integer WIDTH      = 8,
    parameter integer ADDR_WIDTH = 4,
    parameter integer OUT_REG    = 1
) (
    input  wire                   clk,

    input  wire                   we,
    input  wire [ADDR_WIDTH-1:0]  waddr,
    input  wire [WIDTH-1:0]       wdata,

    input  wire                   re,
    input  wire [ADDR_WIDTH-1:0]  raddr,
    input  wire                   oce,
    output logic [WIDTH-1:0]      rdata
);

    logic [WIDTH-1:0] mem [0:(1 << ADDR_WIDTH)-1];
    logic [WIDTH-1:0] rd_q;

    always_ff @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
    end

    always_ff @(posedge clk) begin
        if (re) rd_q <= mem[raddr];
    end

    generate
        if (OUT_REG != 0) begin : g_oreg
            always_ff @(posedge clk) begin
                if (oce) rdata <= rd_q;
            end
        end else begin : g_noreg
            assign rdata = rd_q;
        end
    endgenerate

endmodule

`default_nettype wire
