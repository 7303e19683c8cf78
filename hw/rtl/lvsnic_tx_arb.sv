// lvsnic_tx_arb: m_axis_tx arbitration between forwarded frames (from
// lvsnic_egress) and frames injected by the host (s_axis_inject), switching
// only at frame boundaries, forwarded frames first when both wait
// (docs/hardware.md §2). Injected frames pass unchanged; their 32-bit tuser
// (sequence number) becomes tx tuser[31:0] with the abort bit clear.
// Pulses inj_frame when an injected frame's last beat is sent.
`default_nettype none

module lvsnic_tx_arb #(
    parameter integer DATA_WIDTH = 64,
    parameter integer KEEP_WIDTH = DATA_WIDTH/8
) (
    input  wire                    clk,
    input  wire                    rst,

    input  wire                    fwd_valid,
    output logic                   fwd_ready,
    input  wire [DATA_WIDTH-1:0]   fwd_data,
    input  wire [KEEP_WIDTH-1:0]   fwd_keep,
    input  wire                    fwd_last,
    input  wire [32:0]             fwd_user,

    input  wire                    inj_valid,
    output logic                   inj_ready,
    input  wire [DATA_WIDTH-1:0]   inj_data,
    input  wire [KEEP_WIDTH-1:0]   inj_keep,
    input  wire                    inj_last,
    input  wire [31:0]             inj_user,

    output logic                   m_valid,
    input  wire                    m_ready,
    output logic [DATA_WIDTH-1:0]  m_data,
    output logic [KEEP_WIDTH-1:0]  m_keep,
    output logic                   m_last,
    output logic [32:0]            m_user,

    output logic                   inj_frame
);

    logic in_fwd, in_inj;      // inside a frame of that source

    wire g_fwd = in_fwd || (!in_inj && fwd_valid);
    wire g_inj = in_inj || (!in_fwd && !fwd_valid && inj_valid);

    assign m_valid   = (g_fwd && fwd_valid) || (g_inj && inj_valid);
    assign fwd_ready = g_fwd && m_ready;
    assign inj_ready = g_inj && m_ready;
    assign m_data    = g_fwd ? fwd_data : inj_data;
    assign m_keep    = g_fwd ? fwd_keep : inj_keep;
    assign m_last    = g_fwd ? fwd_last : inj_last;
    assign m_user    = g_fwd ? fwd_user : {1'b0, inj_user};

    wire fwd_hs = fwd_valid && fwd_ready;
    wire inj_hs = inj_valid && inj_ready;

    always_ff @(posedge clk) begin
        if (rst) begin
            in_fwd    <= 1'b0;
            in_inj    <= 1'b0;
            inj_frame <= 1'b0;
        end else begin
            if (fwd_hs) in_fwd <= !fwd_last;
            if (inj_hs) in_inj <= !inj_last;
            inj_frame <= inj_hs && inj_last;
        end
    end

endmodule

`default_nettype wire
