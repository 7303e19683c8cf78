// tb_egress: test wrapper around lvsnic_egress. Frames enter on an
// AXI-Stream port (tuser[0] on a frame = its "short" flag, as lvsnic_ingress
// would compute it); decisions are driven directly on d_* with d_valid (the
// test keeps at most 32 outstanding, d_inflight); statistics events are
// consumed at once.
`default_nettype none
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
    lvsnic_egress #(.DATA_WIDTH(DATA_WIDTH), .FLOW_BUCKETS_LOG2(4), .ACTION_LOG2(4)) dut (
        .clk(clk), .rst(rst),
        .fb_valid(s_axis_tvalid && fb_ready), .fb_ready(fb_ready), .fb_data(kdata),
        .fb_last(s_axis_tlast), .fb_cnt_m1(s_axis_tlast ? cnt_m1 : {LW{1'b1}}), .fb_short(s_axis_tuser),
        .dec_valid(d_valid), .dec_fwd(d_fwd), .dec_tun(d_tun), .dec_reason(d_reason),
        .dec_hit(d_hit), .dec_vip(d_vip), .dec_hash(d_hash), .dec_seq(d_seq), .dec_ts(d_ts),
        .dec_h(d_h), .dec_j(d_j), .dec_k(d_k), .dec_outlast_m1(d_ol), .dec_act(4'd1),
        .dec_slot(7'd3), .dec_tl(d_tl), .dec_pop(dec_pop),
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
