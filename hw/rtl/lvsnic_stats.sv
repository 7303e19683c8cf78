// lvsnic_stats: per-action packet/byte counters and per-flow-slot last_hit
// timestamps (docs/hardware.md §4, §6).
//
// Operations, one per cycle, host operations before forwarding events:
//   event (from lvsnic_egress, one per forwarded frame that was not
//   aborted): counters[act] += {1, total length}; last_hit[slot] = ts;
//   host: zero last_hit[slot] (FLOW_CMD 1), read last_hit[slot] (FLOW_CMD
//   2), zero counters[act] (ACT_CMD 1), read counters[act] (ACT_CMD 2).
// The counters RAM (2^ACTION_LOG2 x {packets, bytes}) is updated by a
// read-modify-write pipeline (address, RAM latch, RAM output register +
// add + write) at one operation per cycle; the value of an operation that
// is still in flight on the same action is forwarded (from the two
// previous operations), so back-to-back hits on one action count exactly.
// last_hit: 8 RAMs (way x slot) x 2^FLOW_BUCKETS_LOG2 x 64 bit, written
// directly. After reset all entries are swept to zero (init_busy).
`default_nettype none

module lvsnic_stats #(
    parameter integer FLOW_BUCKETS_LOG2 = 10,
    parameter integer ACTION_LOG2       = 10,
    parameter integer EV_DEPTH          = 8
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire                 ev_valid,
    input  wire [ACTION_LOG2-1:0]         ev_act,
    input  wire [15:0]          ev_tl,
    input  wire [FLOW_BUCKETS_LOG2+2:0]         ev_slot,
    input  wire [63:0]          ev_ts,
    output logic                ev_pop,

    input  wire                 host_req,    // level until host_ack
    input  wire [1:0]           host_op,     // 0 zero last_hit, 1 read last_hit, 2 zero counters, 3 read counters
    input  wire [((FLOW_BUCKETS_LOG2 + 3 > ACTION_LOG2) ? FLOW_BUCKETS_LOG2 + 3 : ACTION_LOG2)-1:0] host_idx,
    output logic                host_ack,

    output logic                lh_rd_valid,
    output logic [63:0]         lh_rd_data,
    output logic                cnt_rd_valid,
    output logic [63:0]         cnt_rd_pkts,
    output logic [63:0]         cnt_rd_bytes,

    output logic                init_busy
);

    localparam integer B    = FLOW_BUCKETS_LOG2;
    localparam integer A    = ACTION_LOG2;
    localparam integer TOKW = (B + 3 > A) ? B + 3 : A;
    localparam integer IW   = (B > A) ? B : A;
    localparam integer EVL  = $clog2(EV_DEPTH);

    logic [IW:0] init_cnt;
    assign init_busy = !init_cnt[IW];
    always_ff @(posedge clk) begin
        if (rst)            init_cnt <= '0;
        else if (init_busy) init_cnt <= init_cnt + 1'b1;
    end

    // event queue
    localparam integer EQW = A + 16 + (B + 3) + 64;
    logic           eq_v;
    logic [EQW-1:0] eq;
    logic [EVL:0]   eq_count;
    lvsnic_fifo #(.WIDTH(EQW), .DEPTH_LOG2(EVL)) u_evq (
        .clk(clk), .rst(rst), .flush(1'b0),
        .in_valid(ev_valid), .in_data({ev_act, ev_tl, ev_slot, ev_ts}),
        .out_valid(eq_v), .out_data(eq), .out_pop(ev_pop),
        .count(eq_count)
    );
    wire [A-1:0]  e_act  = eq[EQW-1 -: A];
    wire [15:0]   e_tl   = eq[64 + B + 3 +: 16];
    wire [B+2:0]  e_slot = eq[64 +: B + 3];
    wire [63:0]   e_ts   = eq[63:0];

    // host operations are taken into a register first (ack), then run with
    // priority over the events
    logic            h_v;
    logic [1:0]      h_op;
    logic [TOKW-1:0] h_idx;
    assign host_ack = host_req && !h_v;
    always_ff @(posedge clk) begin
        if (rst) h_v <= 1'b0;
        else     h_v <= host_ack || (h_v && init_busy);
        if (host_ack) begin
            h_op  <= host_op;
            h_idx <= host_idx;
        end
    end

    wire do_host = h_v && !init_busy;
    wire do_ev   = !h_v && eq_v && !init_busy;
    assign ev_pop   = do_ev;

    // ------------------------------------------------------------------
    // last_hit
    // ------------------------------------------------------------------
    wire [B+2:0] lh_idx = do_host ? h_idx[B+2:0] : e_slot;
    wire [2:0]   lh_n   = {lh_idx[B+2], lh_idx[1:0]};
    wire [B-1:0] lh_bkt = lh_idx[B+1:2];
    wire         lh_wr  = do_ev || (do_host && h_op == 2'd0);
    wire         lh_rd  = do_host && h_op == 2'd1;
    wire [63:0]  lh_val = do_ev ? e_ts : 64'h0;

    logic [8*64-1:0] lh_q;
    genvar gn;
    generate
        for (gn = 0; gn < 8; gn = gn + 1) begin : g_lh
            lvsnic_sdp_ram #(.WIDTH(64), .ADDR_WIDTH(B), .OUT_REG(1)) u_ram (
                .clk(clk),
                .we(init_busy || (lh_wr && lh_n == 3'(gn))),
                .waddr(init_busy ? init_cnt[B-1:0] : lh_bkt),
                .wdata(init_busy ? 64'h0 : lh_val),
                .re(lh_rd && lh_n == 3'(gn)), .raddr(lh_bkt), .oce(1'b1),
                .rdata(lh_q[gn*64 +: 64])
            );
        end
    endgenerate

    logic       lh_rd1, lh_rd2;
    logic [2:0] lh_n1, lh_n2;
    always_ff @(posedge clk) begin
        if (rst) begin
            lh_rd1 <= 1'b0;
            lh_rd2 <= 1'b0;
            lh_rd_valid <= 1'b0;
        end else begin
            lh_rd1 <= lh_rd;
            lh_rd2 <= lh_rd1;
            lh_rd_valid <= lh_rd2;
        end
        lh_n1 <= lh_n;
        lh_n2 <= lh_n1;
        if (lh_rd2) lh_rd_data <= lh_q[lh_n2*64 +: 64];
    end

    // ------------------------------------------------------------------
    // counters: read-modify-write with forwarding
    // ------------------------------------------------------------------
    localparam logic [1:0] C_ADD = 2'd0, C_CLR = 2'd1, C_RD = 2'd2;

    wire         a_v    = do_ev || (do_host && h_op[1]);
    wire [1:0]   a_kind = do_ev ? C_ADD : (h_op[0] ? C_RD : C_CLR);
    wire [A-1:0] a_idx  = do_ev ? e_act : h_idx[A-1:0];
    wire [15:0]  a_tl   = e_tl;

    logic         b_v, c_v, w1_v;
    logic [1:0]   b_kind, c_kind;
    logic [A-1:0] b_idx, c_idx, w1_idx;
    logic [15:0]  b_tl, c_tl;
    logic         c_m1, c_m2;
    logic [127:0] w1_val, w2_val;
    logic [127:0] c_q;

    logic [127:0] c_new;
    wire          c_we = c_v;

    lvsnic_sdp_ram #(.WIDTH(128), .ADDR_WIDTH(A), .OUT_REG(1)) u_cnt (
        .clk(clk),
        .we(init_busy || c_we),
        .waddr(init_busy ? init_cnt[A-1:0] : c_idx),
        .wdata(init_busy ? 128'h0 : c_new),
        .re(a_v), .raddr(a_idx), .oce(1'b1),
        .rdata(c_q)
    );

    wire [127:0] c_old = c_m1 ? w1_val : (c_m2 ? w2_val : c_q);
    always_comb begin
        case (c_kind)
            C_ADD:   c_new = {c_old[127:64] + 64'd1, c_old[63:0] + {48'h0, c_tl}};
            C_CLR:   c_new = 128'h0;
            default: c_new = c_old;
        endcase
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            b_v  <= 1'b0;
            c_v  <= 1'b0;
            w1_v <= 1'b0;
            cnt_rd_valid <= 1'b0;
        end else begin
            b_v  <= a_v;
            c_v  <= b_v;
            w1_v <= c_v;
            cnt_rd_valid <= c_v && c_kind == C_RD;
        end
        b_kind <= a_kind; b_idx <= a_idx; b_tl <= a_tl;
        c_kind <= b_kind; c_idx <= b_idx; c_tl <= b_tl;
        // forwarding: when this op reaches C, w1 holds the op now at C and
        // w2 the op now in w1
        c_m1   <= c_v  && (b_idx == c_idx);
        c_m2   <= w1_v && (b_idx == w1_idx);
        w1_idx <= c_idx;
        w1_val <= c_new;
        w2_val <= w1_val;
        if (c_v && c_kind == C_RD) begin
            cnt_rd_pkts  <= c_old[127:64];
            cnt_rd_bytes <= c_old[63:0];
        end
    end

endmodule

`default_nettype wire
