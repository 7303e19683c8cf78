// tb_egress: test wrapper around lvsnic_egress. Frames enter on an
// AXI-Stream port (tuser[0] on a frame = its "short" flag, as lvsnic_ingress
// would compute it); decisions are driven directly on d_* with d_valid (the
// test keeps at most 32 outstanding, d_inflight) and packed into the
// decision bundle with lvsnic_decision.vh's positions; statistics events
// are consumed at once.
`default_nettype none
`include "lvsnic_decision.vh"
module tb_egress #(
    parameter integer DATA_WIDTH = 64
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire [DATA_WIDTH-1:0]    s_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_tkeep,
    input  wire                     s_axis_tvalid,
    output wire                     s_axis_tready,
    input  wire                     s_axis_tlast,
    input  wire                     s_axis_tuser,

    input  wire                     d_valid,
    input  wire                     d_fwd,
    input  wire                     d_tun,
    input  wire                     d_v6,       // IPv6 out: 74-byte head; with d_tun the 40-byte shift
    input  wire [4:0]               d_reason,
    input  wire                     d_hit,
    input  wire                     d_vip,
    input  wire [31:0]              d_hash,
    input  wire [31:0]              d_seq,
    input  wire [63:0]              d_ts,
    input  wire [591:0]             d_h,
    input  wire [16-$clog2(DATA_WIDTH/8):0] d_j,
    input  wire [16-$clog2(DATA_WIDTH/8):0] d_k,
    input  wire [$clog2(DATA_WIDTH/8)-1:0]  d_ol,
    input  wire [15:0]              d_tl,
    output logic [6:0]              d_inflight,

    output wire [DATA_WIDTH-1:0]    m_axis_tx_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_tx_tkeep,
    output wire                     m_axis_tx_tvalid,
    input  wire                     m_axis_tx_tready,
    output wire                     m_axis_tx_tlast,
    output wire [32:0]              m_axis_tx_tuser,

    output wire [DATA_WIDTH-1:0]    m_axis_host_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_host_tkeep,
    output wire                     m_axis_host_tvalid,
    input  wire                     m_axis_host_tready,
    output wire                     m_axis_host_tlast,
    output wire [159:0]             m_axis_host_tuser,

    output logic [31:0]             n_events
);
    localparam integer W  = DATA_WIDTH / 8;
    localparam integer LW = $clog2(W);
    localparam integer A  = 4;
    localparam integer B  = 4;

`define LVSNIC_DECISION_BODY
`include "lvsnic_decision.vh"
`undef LVSNIC_DECISION_BODY

    logic [DEC_W-1:0] d_data;
    always_comb begin
        d_data = '0;
        d_data[DEC_FWD_BIT]                    = d_fwd;
        d_data[DEC_TUN_BIT]                    = d_tun;
        d_data[DEC_V6_BIT]                     = d_v6;
        d_data[DEC_REASON_LSB +: DEC_REASON_W] = d_reason;
        d_data[DEC_HIT_BIT]                    = d_hit;
        d_data[DEC_VIP_BIT]                    = d_vip;
        d_data[DEC_HASH_LSB +: 32]             = d_hash;
        d_data[DEC_SEQ_LSB +: 32]              = d_seq;
        d_data[DEC_TS_LSB +: 64]               = d_ts;
        d_data[DEC_HEAD_LSB +: DEC_HEAD_W]     = d_h;
        d_data[DEC_J_LSB +: DEC_JK_W]          = d_j;
        d_data[DEC_K_LSB +: DEC_JK_W]          = d_k;
        d_data[DEC_OL_LSB +: DEC_OL_W]         = d_ol;
        d_data[DEC_ACT_LSB +: DEC_ACT_W]       = 4'd1;
        d_data[DEC_SLOT_LSB +: DEC_SLOT_W]     = 7'd3;
        d_data[DEC_TL_LSB +: DEC_TL_W]         = d_tl;
    end

    logic [LW-1:0] cnt_m1;
    always_comb begin
        cnt_m1 = '0;
        for (int k = 0; k < W; k++) if (s_axis_tkeep[k]) cnt_m1 = LW'(k);
    end
    logic [DATA_WIDTH-1:0] kdata;
    always_comb begin
        for (int k = 0; k < W; k++) kdata[8*k +: 8] = s_axis_tkeep[k] ? s_axis_tdata[8*k +: 8] : 8'h00;
    end

    wire dec_pop, ev_valid, fb_ready;
    assign s_axis_tready = fb_ready;

    always_ff @(posedge clk) begin
        if (rst) begin
            d_inflight <= '0;
            n_events   <= '0;
        end else begin
            d_inflight <= d_inflight + 7'(d_valid) - 7'(dec_pop);
            if (ev_valid) n_events <= n_events + 1;
        end
    end

    /* verilator lint_off PINCONNECTEMPTY */
    lvsnic_egress #(.DATA_WIDTH(DATA_WIDTH), .FLOW_BUCKETS_LOG2(B), .ACTION_LOG2(A)) dut (
        .clk(clk), .rst(rst),
        .fb_valid(s_axis_tvalid && fb_ready), .fb_ready(fb_ready), .fb_data(kdata),
        .fb_last(s_axis_tlast), .fb_cnt_m1(s_axis_tlast ? cnt_m1 : {LW{1'b1}}), .fb_short(s_axis_tuser),
        .dec_valid(d_valid), .dec_data(d_data), .dec_pop(dec_pop),
        .tx_valid(m_axis_tx_tvalid), .tx_ready(m_axis_tx_tready), .tx_data(m_axis_tx_tdata),
        .tx_keep(m_axis_tx_tkeep), .tx_last(m_axis_tx_tlast), .tx_user(m_axis_tx_tuser),
        .host_valid(m_axis_host_tvalid), .host_ready(m_axis_host_tready), .host_data(m_axis_host_tdata),
        .host_keep(m_axis_host_tkeep), .host_last(m_axis_host_tlast), .host_user(m_axis_host_tuser),
        .ev_valid(ev_valid), .ev_act(), .ev_tl(), .ev_slot(), .ev_ts(), .ev_pop(ev_valid),
        .cnt_fwd(), .cnt_host(), .cnt_host_reason()
    );
    /* verilator lint_on PINCONNECTEMPTY */
endmodule
`default_nettype wire
