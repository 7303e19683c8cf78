// lvsnic_egress: frame buffer, rewrite/realignment and the two output
// queues of lvsnic_core (docs/hardware.md §3.1, §4 Rewrite, §5).
//
// Frame buffer: every received beat is written (bytes outside tkeep zero,
// with its `last` flag and byte count) to an inferred RAM sized for one
// maximum forwardable frame (14 + 65535 bytes) plus margin. Space is
// released only by the slot engine (free pointer), so a forwarded frame
// stays in the buffer until it is known not to be short.
//
// Streamer: reads the buffer in order, one beat per cycle, into a small
// prefetch FIFO (credit-based, so the 2-cycle RAM read never stalls). The
// slot engine can rewind it to a frame's first beat (an epoch bit drops the
// reads in flight and the prefetch FIFO is flushed).
//
// Slot engine: takes the frames in order, one decision (from lvsnic_lookup)
// per frame, and emits one output beat ("slot") per cycle:
//   * host frames: the received beats, unchanged (cut through), with the
//     160-bit metadata;
//   * forwarded frames: output beat j = 0..J. The output is the 54-byte
//     (74 with a tunnel or IPv6) rewritten head H followed by the received
//     bytes from offset |H| - shift, shift 0, 20 (IPIP: from 54) or 40 (an
//     IPv6 outer header, IPV6 = 1: from 34); it ends at 14 + total length
//     + shift. Output lane l takes H[jW + l] while jW + l < |H|, else
//     received byte jW + l - shift, from the received beat consumed by this
//     slot (j - D, D = shift / W) or the previous one (constant wiring for
//     each shift). Received beats after the last needed one (Ethernet
//     padding) are consumed without output.
//   * the buffer space of a forwarded frame is released only when the beat
//     holding its byte 14 + total length - 1 is consumed (the frame is not
//     short); that slot also produces the statistics event. If the frame's
//     last beat comes first, the tx frame is ended with tuser[32] (abort),
//     the streamer is rewound to the frame's first beat and the frame is
//     replayed to the host with reason TRUNCATED, hit set.
// Slots are registered once, assembled, and written to 16-entry output
// FIFOs; the engine only fires a slot when its destination FIFO has room
// (credits), so nothing after it stalls. All per-slot decisions use
// registered flags (slot index == J, beats left == 0, ...).
`default_nettype none
`include "lvsnic_decision.vh"

module lvsnic_egress #(
    parameter integer DATA_WIDTH        = 64,
    parameter integer KEEP_WIDTH        = DATA_WIDTH/8,
    parameter integer FLOW_BUCKETS_LOG2 = 10,
    parameter integer ACTION_LOG2       = 10,
    parameter integer IPV6              = 1,    // 1: tunnels with an IPv6 outer header (shift 40)
    parameter integer DEC_DEPTH         = 32,
    parameter integer EV_DEPTH          = 8
) (
    input  wire                     clk,
    input  wire                     rst,

    // frame buffer write port (from lvsnic_ingress)
    input  wire                     fb_valid,
    output logic                    fb_ready,
    input  wire [DATA_WIDTH-1:0]    fb_data,
    input  wire                     fb_last,
    input  wire [$clog2(KEEP_WIDTH)-1:0] fb_cnt_m1,
    input  wire                     fb_short,

    // decisions (from lvsnic_lookup); space guaranteed by its credits
    input  wire                     dec_valid,
    input  wire [`LVSNIC_DEC_W($clog2(KEEP_WIDTH), ACTION_LOG2, FLOW_BUCKETS_LOG2)-1:0] dec_data,   // lvsnic_decision.vh
    output logic                    dec_pop,

    // forwarded frames (to the tx arbiter)
    output logic                    tx_valid,
    input  wire                     tx_ready,
    output logic [DATA_WIDTH-1:0]   tx_data,
    output logic [KEEP_WIDTH-1:0]   tx_keep,
    output logic                    tx_last,
    output logic [32:0]             tx_user,

    // exceptions (to m_axis_host)
    output logic                    host_valid,
    input  wire                     host_ready,
    output logic [DATA_WIDTH-1:0]   host_data,
    output logic [KEEP_WIDTH-1:0]   host_keep,
    output logic                    host_last,
    output logic [159:0]            host_user,

    // statistics events (to lvsnic_stats), EV_DEPTH credits
    output logic                    ev_valid,
    output logic [ACTION_LOG2-1:0]  ev_act,
    output logic [15:0]             ev_tl,
    output logic [FLOW_BUCKETS_LOG2+2:0] ev_slot,
    output logic [63:0]             ev_ts,
    input  wire                     ev_pop,

    // global counter pulses
    output logic                    cnt_fwd,
    output logic                    cnt_host,
    output logic [4:0]              cnt_host_reason
);

    `include "lvsnic_regs.vh"

    localparam integer W     = KEEP_WIDTH;
    localparam integer LW    = $clog2(W);
    localparam integer B     = FLOW_BUCKETS_LOG2;
    localparam integer A     = ACTION_LOG2;
    localparam integer JKW   = 17 - LW;
    // frame buffer: one maximum forwardable frame (14 + 65535 bytes) + margin
    localparam integer FA    = $clog2((14 + 65535 + W - 1) / W + 64);
    localparam integer DEPTH = 1 << FA;
    localparam integer D     = 20 / W;          // IPIP: whole beats of shift
    localparam integer R     = 20 % W;          // IPIP: remaining byte shift
    localparam integer D6    = 40 / W;          // outer IPv6: whole beats of shift
    localparam integer R6    = 40 % W;          // outer IPv6: remaining byte shift
    // bytes of the previous beat kept for the realignment
    localparam integer RP    = (IPV6 != 0 && R6 > R) ? R6 : R;
    localparam integer DM    = (IPV6 != 0) ? D6 : D;
    localparam integer DW    = (DM > 0) ? $clog2(DM + 1) : 1;
    localparam integer DECL  = $clog2(DEC_DEPTH);
    localparam integer OQL   = 4;               // output FIFOs: 16 (+1) entries
    localparam integer OQD   = 1 << OQL;
    localparam integer EVW   = $clog2(EV_DEPTH + 1);
    localparam integer PFL   = 3;               // prefetch FIFO: 8 (+1) entries
    localparam integer HB    = 74;              // head bytes (IPIP)

`define LVSNIC_DECISION_BODY
`include "lvsnic_decision.vh"
`undef LVSNIC_DECISION_BODY
    generate
        if (DEC_W != `LVSNIC_DEC_W(LW, A, B)) begin : g_dec_check
            $error("lvsnic_egress: DEC_W and `LVSNIC_DEC_W disagree (hw/rtl/lvsnic_decision.vh)");
            lvsnic_egress_decision_mismatch u_fail ();
        end
    endgenerate

    // ------------------------------------------------------------------
    // frame buffer
    // ------------------------------------------------------------------
    logic [FA:0] wr_ptr, rd_ptr, free_ptr;
    logic        space_ok;

    wire [FA:0] used = wr_ptr - free_ptr;
    always_ff @(posedge clk) begin
        if (rst) begin
            wr_ptr   <= '0;
            space_ok <= 1'b0;
        end else begin
            if (fb_valid) wr_ptr <= wr_ptr + 1'b1;
            space_ok <= (used < (FA+1)'(DEPTH - 3));   // registered + one beat in the ingress
        end
    end
    assign fb_ready = space_ok;

    localparam integer FBW = DATA_WIDTH + 2 + LW;
    logic           rd_fire;
    logic [FBW-1:0] ram_q;
    lvsnic_sdp_ram #(.WIDTH(FBW), .ADDR_WIDTH(FA), .OUT_REG(1)) u_fb (
        .clk(clk),
        .we(fb_valid), .waddr(wr_ptr[FA-1:0]), .wdata({fb_cnt_m1, fb_short, fb_last, fb_data}),
        .re(rd_fire), .raddr(rd_ptr[FA-1:0]), .oce(1'b1),
        .rdata(ram_q)
    );

    // ------------------------------------------------------------------
    // streamer: buffer -> prefetch FIFO
    // ------------------------------------------------------------------
    logic        rewind;                // from the slot engine (abort)
    logic        epoch;
    logic        r1_v, r2_v, r1_e, r2_e;
    logic [FA:0] r1_next, r2_next;      // address + 1 of the beat read
    logic        pf_ok;

    wire avail = (rd_ptr != wr_ptr);
    assign rd_fire = avail && pf_ok && !rewind;

    always_ff @(posedge clk) begin
        if (rst) begin
            rd_ptr <= '0;
            epoch  <= 1'b0;
            r1_v   <= 1'b0;
            r2_v   <= 1'b0;
        end else begin
            if (rewind) begin
                rd_ptr <= free_ptr;          // the aborted frame's first beat
                epoch  <= !epoch;
            end else if (rd_fire) begin
                rd_ptr <= rd_ptr + 1'b1;
            end
            r1_v <= rd_fire;
            r2_v <= r1_v;
        end
        r1_e    <= epoch;
        r2_e    <= r1_e;
        r1_next <= rd_ptr + 1'b1;
        r2_next <= r1_next;
    end

    localparam integer PFW = FBW + FA + 1;
    logic              pv;
    logic [PFW-1:0]    pq;
    logic [PFL:0]      pf_count;
    logic              pf_pop;
    lvsnic_fifo #(.WIDTH(PFW), .DEPTH_LOG2(PFL), .OREG(1)) u_pf (
        .clk(clk), .rst(rst), .flush(rewind),
        .in_valid(r2_v && r2_e == epoch), .in_data({r2_next, ram_q}),
        .out_valid(pv), .out_data(pq), .out_pop(pf_pop),
        .count(pf_count)
    );
    always_ff @(posedge clk) begin
        if (rst) pf_ok <= 1'b0;
        else     pf_ok <= ((PFL+2)'(pf_count) + (PFL+2)'(r1_v) + (PFL+2)'(r2_v)) < (PFL+2)'((1 << PFL) - 2);
    end

    wire [FA:0]           p_next = pq[PFW-1 -: FA+1];
    wire [LW-1:0]         p_cnt  = pq[FBW-1 -: LW];
    wire                  p_last = pq[DATA_WIDTH];
    wire                  p_short = pq[DATA_WIDTH + 1];   // last beat of a frame < 14 + total length
    wire [DATA_WIDTH-1:0] p_data = pq[DATA_WIDTH-1:0];

    // ------------------------------------------------------------------
    // decision FIFO (registered head)
    // ------------------------------------------------------------------
    // the decision bundle, queued whole
    logic             dq_v;
    logic [DEC_W-1:0] dq;
    logic [DECL:0]    dq_count;
    lvsnic_fifo #(.WIDTH(DEC_W), .DEPTH_LOG2(DECL), .OREG(1)) u_dec (
        .clk(clk), .rst(rst), .flush(1'b0),
        .in_valid(dec_valid), .in_data(dec_data),
        .out_valid(dq_v), .out_data(dq), .out_pop(dec_pop),
        .count(dq_count)
    );

    wire             q_fwd    = dq[DEC_FWD_BIT];
    wire             q_tun    = dq[DEC_TUN_BIT];
    wire             q_v6     = dq[DEC_V6_BIT];   // IPv6 out (a tunnel's outer header)
    wire             q_t6     = (IPV6 != 0) && q_tun && q_v6;   // shift 40
    wire [4:0]       q_reason = dq[DEC_REASON_LSB +: DEC_REASON_W];
    wire             q_hit    = dq[DEC_HIT_BIT];
    wire             q_vip    = dq[DEC_VIP_BIT];
    wire [31:0]      q_hash   = dq[DEC_HASH_LSB +: 32];
    wire [31:0]      q_seq    = dq[DEC_SEQ_LSB +: 32];
    wire [63:0]      q_ts     = dq[DEC_TS_LSB +: 64];
    wire [591:0]     q_h      = dq[DEC_HEAD_LSB +: DEC_HEAD_W];
    wire [JKW-1:0]   q_j      = dq[DEC_J_LSB +: DEC_JK_W];
    wire [JKW-1:0]   q_k      = dq[DEC_K_LSB +: DEC_JK_W];
    wire [LW-1:0]    q_ol     = dq[DEC_OL_LSB +: DEC_OL_W];
    wire [A-1:0]     q_act    = dq[DEC_ACT_LSB +: DEC_ACT_W];
    wire [B+2:0]     q_slot   = dq[DEC_SLOT_LSB +: DEC_SLOT_W];
    wire [15:0]      q_tl     = dq[DEC_TL_LSB +: DEC_TL_W];

    // ------------------------------------------------------------------
    // slot engine state
    // ------------------------------------------------------------------
    logic            cur_v, cur_fwd, cur_skip, cur_rep;
    logic            cur_tun, cur_t6, cur_hit, cur_vip;
    logic [4:0]      cur_reason;
    logic [31:0]     cur_hash, cur_seq;
    logic [63:0]     cur_ts;
    logic [LW-1:0]   cur_ol;
    logic [A-1:0]    cur_act;
    logic [B+2:0]    cur_slot;
    logic [15:0]     cur_tl;
    logic [JKW-1:0]  jrem;                      // output slots left after this one
    logic            f_last;                    // this slot is the last output beat (jrem == 0)
    logic [JKW-1:0]  krem;                      // received beats to consume before beat K
    logic            at_k;                      // (krem == 0)
    logic [DW-1:0]   pre_left;                  // IPIP slots before the first read
    logic            need_read;                 // this slot consumes a received beat
                                                // (IPIP lead slots over, beat K not yet consumed)
    logic            in_done;                   // the frame's last beat has been consumed
    logic [HB*8-1:0] h_sr;                      // head bytes from this slot on
    logic [HB-1:0]   m_sr;                      // head byte valid, from this slot on

    logic            tx_ok, host_ok, ev_ok;     // registered, conservative credits
    logic [OQL+1:0]  tx_cred, host_cred;
    logic [EVW-1:0]  ev_cred;

    // mode flags (registered): host/replay, forwarded, forwarded padding skip
    wire m_host = cur_v && !cur_fwd;
    wire m_fwd  = cur_v && cur_fwd && !cur_skip;
    wire m_skip = cur_v && cur_fwd && cur_skip;

    // host / replay: one slot per received beat
    wire fire_h  = m_host && pv && host_ok;
    // forwarded: one slot per output beat
    wire fire_f  = m_fwd && tx_ok && ev_ok && (!need_read || pv);
    // consuming the last beat of a frame that is shorter than 14 + total
    // length: it ends before beat K or inside it before the needed byte
    wire f_short = need_read && p_last && p_short;
    wire slot_fire  = fire_f && !f_short;
    wire abort_fire = fire_f && f_short;
    wire f_commit   = need_read && at_k;         // with slot_fire: not short
    wire f_ends     = f_last && (in_done || (need_read && p_last));
    // padding after the last output beat of a forwarded frame
    wire fire_s  = m_skip && pv;

    wire frame_done = (fire_h && p_last) || (slot_fire && f_ends) || (fire_s && p_last);
    wire load       = dq_v && (!cur_v || frame_done);
    assign dec_pop  = load;
    assign rewind   = abort_fire;
    assign pf_pop   = fire_h || fire_s || (fire_f && need_read);

    // buffer release: host/replay/padding beats as consumed; a forwarded
    // frame's beats up to and including beat K once it is known complete
    always_ff @(posedge clk) begin
        if (rst) free_ptr <= '0;
        else if (fire_h || fire_s || (slot_fire && f_commit)) free_ptr <= p_next;
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            cur_v    <= 1'b0;
            cur_fwd  <= 1'b0;
            cur_skip <= 1'b0;
            cur_rep  <= 1'b0;
        end else if (load) begin
            cur_v    <= 1'b1;
            cur_fwd  <= q_fwd;
            cur_skip <= 1'b0;
            cur_rep  <= 1'b0;
        end else if (frame_done) begin
            cur_v    <= 1'b0;
        end else if (abort_fire) begin
            cur_fwd  <= 1'b0;          // replay to the host
            cur_rep  <= 1'b1;
        end else if (slot_fire && f_last) begin
            cur_skip <= 1'b1;          // padding follows (f_ends false)
        end
    end

    always_ff @(posedge clk) begin
        if (load) begin
            cur_tun    <= q_tun;
            cur_t6     <= q_t6;
            cur_hit    <= q_hit;
            cur_vip    <= q_vip;
            cur_reason <= q_reason;
            cur_hash   <= q_hash;
            cur_seq    <= q_seq;
            cur_ts     <= q_ts;
            cur_ol     <= q_ol;
            cur_act    <= q_act;
            cur_slot   <= q_slot;
            cur_tl     <= q_tl;
            jrem       <= q_j;
            f_last     <= (q_j == '0);
            krem       <= q_k;
            at_k       <= (q_k == '0);
            pre_left   <= q_t6 ? DW'(D6) : (q_tun ? DW'(D) : '0);
            need_read  <= q_t6 ? (D6 == 0) : !(q_tun && D > 0);
            in_done    <= 1'b0;
            h_sr       <= q_h;
            m_sr       <= (q_tun || q_v6) ? {HB{1'b1}} : {20'h0, {54{1'b1}}};
        end else if (slot_fire) begin
            jrem   <= jrem - 1'b1;
            f_last <= (jrem == JKW'(1));
            h_sr   <= h_sr >> (W*8);
            m_sr   <= m_sr >> W;
            if (pre_left != '0) begin
                pre_left  <= pre_left - 1'b1;
                need_read <= (pre_left == DW'(1));
            end
            if (need_read) begin
                krem      <= krem - 1'b1;
                at_k      <= (krem == JKW'(1));
                need_read <= !at_k;
                in_done   <= p_last;
            end
        end
    end

    // ------------------------------------------------------------------
    // slot register, assembly, output FIFOs
    // ------------------------------------------------------------------
    logic                  sl_v, sl_tx, sl_rd, sl_last, sl_abort, sl_tun, sl_t6;
    logic [W-1:0]          sl_keep, sl_mask;
    logic [DATA_WIDTH-1:0] sl_data, sl_ov;
    logic [31:0]           sl_seq;
    logic [159:0]          sl_meta;

    // m_axis_host_tuser (lvsnic_host_meta); bits not listed are 0
    function automatic logic [159:0] host_meta(input logic [4:0] reason, input logic hit, input logic vip,
                                               input logic [31:0] hash, input logic [31:0] seq,
                                               input logic [63:0] ts);
        host_meta = '0;
        host_meta[LVSNIC_HOST_META_REASON_LSB +: LVSNIC_HOST_META_REASON_WIDTH] = LVSNIC_HOST_META_REASON_WIDTH'(reason);
        host_meta[LVSNIC_HOST_META_HIT_LSB]                                     = hit;
        host_meta[LVSNIC_HOST_META_VIP_LSB]                                     = vip;
        host_meta[LVSNIC_HOST_META_HASH_0_LSB +: LVSNIC_HOST_META_HASH_0_WIDTH] = hash;
        host_meta[LVSNIC_HOST_META_SEQ_LSB +: LVSNIC_HOST_META_SEQ_WIDTH]       = seq;
        host_meta[LVSNIC_HOST_META_TS_LSB +: LVSNIC_HOST_META_TS_WIDTH]         = ts;
    endfunction

    wire [4:0]    h_reason = cur_rep ? LVSNIC_REASON_TRUNCATED : cur_reason;
    wire          h_hit    = cur_rep ? 1'b1 : cur_hit;
    wire          s_last   = fire_h ? p_last : (f_last || f_short);
    wire [LW-1:0] s_cnt    = fire_h ? (p_last ? p_cnt : {LW{1'b1}})
                                    : ((f_last && !f_short) ? cur_ol : {LW{1'b1}});

    always_ff @(posedge clk) begin
        if (rst) sl_v <= 1'b0;
        else     sl_v <= fire_h || fire_f;
    end
    always_ff @(posedge clk) begin
        sl_tx    <= !fire_h;
        sl_rd    <= need_read;
        sl_last  <= s_last;
        sl_abort <= f_short;
        sl_tun   <= cur_tun;
        sl_t6    <= cur_t6;
        sl_data  <= p_data;
        sl_ov    <= h_sr[DATA_WIDTH-1:0];
        sl_mask  <= fire_h ? {W{1'b0}} : m_sr[W-1:0];
        sl_seq   <= cur_seq;
        sl_meta  <= host_meta(h_reason, h_hit, cur_vip, cur_hash, cur_seq, cur_ts);
        for (int l = 0; l < W; l++) sl_keep[l] <= (LW'(l) <= s_cnt);
    end

    // assembly: head override, tunnel realignment by 20 (or 40) bytes,
    // zero past tkeep
    logic [8*RP-1:0]       prev;        // top RP bytes of the previous consumed beat
    logic [DATA_WIDTH-1:0] shifted;     // received bytes realigned by 20
    logic [DATA_WIDTH-1:0] shifted6;    // received bytes realigned by 40 (IPV6 = 1)
    logic [DATA_WIDTH-1:0] asm_data;
    genvar gl;
    generate
        for (gl = 0; gl < W; gl = gl + 1) begin : g_lane
            if (gl < R) begin : g_lo
                assign shifted[8*gl +: 8] = prev[8*(RP - R + gl) +: 8];
            end else begin : g_hi
                assign shifted[8*gl +: 8] = sl_data[8*(gl - R) +: 8];
            end
            if (IPV6 == 0) begin : g_no6
                assign shifted6[8*gl +: 8] = shifted[8*gl +: 8];
            end else if (gl < R6) begin : g_lo6
                assign shifted6[8*gl +: 8] = prev[8*(RP - R6 + gl) +: 8];
            end else begin : g_hi6
                assign shifted6[8*gl +: 8] = sl_data[8*(gl - R6) +: 8];
            end
            assign asm_data[8*gl +: 8] = !sl_keep[gl] ? 8'h00
                                       : sl_mask[gl]  ? sl_ov[8*gl +: 8]
                                       : sl_t6        ? shifted6[8*gl +: 8]
                                       : sl_tun       ? shifted[8*gl +: 8]
                                       :                sl_data[8*gl +: 8];
        end
    endgenerate
    always_ff @(posedge clk) begin
        if (sl_v && sl_tx && sl_rd) prev <= sl_data[DATA_WIDTH-1 -: 8*RP];
    end

    localparam integer TQW = DATA_WIDTH + W + 1 + 1 + 32;
    localparam integer HQW = DATA_WIDTH + W + 1 + 160;

    logic           tq_v, hq_v;
    logic [TQW-1:0] tq;
    logic [HQW-1:0] hq;
    logic [OQL:0]   tq_count, hq_count;
    wire            tx_pop   = tx_valid && tx_ready;
    wire            host_pop = host_valid && host_ready;

    lvsnic_fifo #(.WIDTH(TQW), .DEPTH_LOG2(OQL), .OREG(1)) u_txq (
        .clk(clk), .rst(rst), .flush(1'b0),
        .in_valid(sl_v && sl_tx),
        .in_data({asm_data, sl_keep, sl_last, sl_abort && sl_last, sl_seq}),
        .out_valid(tq_v), .out_data(tq), .out_pop(tx_pop),
        .count(tq_count)
    );
    lvsnic_fifo #(.WIDTH(HQW), .DEPTH_LOG2(OQL), .OREG(1)) u_hostq (
        .clk(clk), .rst(rst), .flush(1'b0),
        .in_valid(sl_v && !sl_tx),
        .in_data({sl_data, sl_keep, sl_last, sl_meta}),
        .out_valid(hq_v), .out_data(hq), .out_pop(host_pop),
        .count(hq_count)
    );


    assign tx_valid   = tq_v;
    assign tx_data    = tq[TQW-1 -: DATA_WIDTH];
    assign tx_last    = tq[33];
    assign tx_user    = {tq[32], tq[31:0]};
    assign host_valid = hq_v;
    assign host_data  = hq[HQW-1 -: DATA_WIDTH];
    assign host_last  = hq[160];
    assign host_user  = hq[159:0];
    assign tx_keep    = tq[TQW-DATA_WIDTH-1 -: W];
    assign host_keep  = hq[HQW-DATA_WIDTH-1 -: W];

    // credits: free entries in the output FIFOs (16 + output register) minus
    // slots in flight; the fire conditions use registered flags that keep
    // one entry of margin
    always_ff @(posedge clk) begin
        if (rst) begin
            tx_cred   <= (OQL+2)'(OQD);
            host_cred <= (OQL+2)'(OQD);
            ev_cred   <= EVW'(EV_DEPTH);
            tx_ok     <= 1'b0;
            host_ok   <= 1'b0;
            ev_ok     <= 1'b0;
        end else begin
            tx_cred   <= tx_cred   - (OQL+2)'(fire_f) + (OQL+2)'(tx_pop);
            host_cred <= host_cred - (OQL+2)'(fire_h) + (OQL+2)'(host_pop);
            ev_cred   <= ev_cred   - EVW'(slot_fire && f_commit) + EVW'(ev_pop);
            tx_ok     <= (tx_cred   >= (OQL+2)'(2));
            host_ok   <= (host_cred >= (OQL+2)'(2));
            ev_ok     <= (ev_cred   >= EVW'(2));
        end
    end

    // ------------------------------------------------------------------
    // statistics event and counters
    // ------------------------------------------------------------------
    always_ff @(posedge clk) begin
        if (rst) begin
            ev_valid <= 1'b0;
            cnt_fwd  <= 1'b0;
            cnt_host <= 1'b0;
        end else begin
            ev_valid <= slot_fire && f_commit;
            cnt_fwd  <= slot_fire && f_commit;
            cnt_host <= fire_h && p_last;
        end
    end
    always_ff @(posedge clk) begin
        ev_act  <= cur_act;
        ev_tl   <= cur_tl;
        ev_slot <= cur_slot;
        ev_ts   <= cur_ts;
        cnt_host_reason <= h_reason;
    end

endmodule

`default_nettype wire
