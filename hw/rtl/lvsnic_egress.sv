// lvsnic_egress: frame buffer, per-frame reader, rewrite/realignment and the
// two output queues of lvsnic_core (docs/hardware.md §3.1, §4 Rewrite, §5).
//
// Frame buffer: every received beat is written (bytes outside tkeep zero) to
// an inferred RAM sized for one maximum forwardable frame (14 + 65535 bytes)
// plus margin; an "end" FIFO records the buffer address and byte count of
// each frame's last beat as it is written, so the reader knows at issue time
// whether the beat it reads is its frame's last.
//
// Reader: takes the frames in order, one decision (from lvsnic_lookup) per
// frame, and issues one output "slot" per cycle:
//   * host frames: one slot per received beat, streamed unchanged (cut
//     through), with the 160-bit metadata;
//   * forwarded frames: one slot per *output* beat j = 0..J. The output is
//     the 54-byte (74 with IPIP) rewritten head H followed by the received
//     bytes from offset 54 shifted by 0 (20 with IPIP); it ends at
//     14 + total length (+ 20). Slot j reads received beat j - D when that
//     beat is needed (D = 20 / W for IPIP, else 0); output lane l takes
//     H[jW + l] while jW + l < |H|, else received byte jW + l - shift, from
//     the beat read by this slot or the previous one (constant wiring).
//     Received beats past the last needed one (Ethernet padding) are
//     skipped without being read.
//   * the buffer space of a forwarded frame is released only once the beat
//     holding its byte 14 + total length - 1 has been read (the frame is not
//     short); if the frame's last beat comes first, the tx frame is ended
//     with tuser[32] (abort) and the reader rewinds to the frame's first
//     beat and replays it to the host with reason TRUNCATED (19), hit set.
//     A forwarded frame that is not short produces one statistics event
//     (action counters, last_hit) when that beat is read.
// Slots go through the RAM read (2 cycles) and one assembly register into
// small output FIFOs; the reader only issues a slot when the destination
// FIFO has room for it (credits), so the slot pipeline never stalls.
`default_nettype none

module lvsnic_egress #(
    parameter integer DATA_WIDTH        = 64,
    parameter integer KEEP_WIDTH        = DATA_WIDTH/8,
    parameter integer FLOW_BUCKETS_LOG2 = 10,
    parameter integer ACTION_LOG2       = 10,
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
    input  wire [$clog2(KEEP_WIDTH)-1:0]            fb_cnt_m1,

    // decisions (from lvsnic_lookup); space guaranteed by its credits
    input  wire                     dec_valid,
    input  wire                     dec_fwd,
    input  wire                     dec_tun,
    input  wire [4:0]               dec_reason,
    input  wire                     dec_hit,
    input  wire                     dec_vip,
    input  wire [31:0]              dec_hash,
    input  wire [31:0]              dec_seq,
    input  wire [63:0]              dec_ts,
    input  wire [591:0]             dec_h,
    input  wire [16-$clog2(KEEP_WIDTH):0]           dec_j,
    input  wire [16-$clog2(KEEP_WIDTH):0]           dec_k,
    input  wire [$clog2(KEEP_WIDTH)-1:0]            dec_need_m1,
    input  wire [$clog2(KEEP_WIDTH)-1:0]            dec_outlast_m1,
    input  wire [ACTION_LOG2-1:0]             dec_act,
    input  wire [FLOW_BUCKETS_LOG2+2:0]             dec_slot,
    input  wire [15:0]              dec_tl,
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
    output logic [ACTION_LOG2-1:0]            ev_act,
    output logic [15:0]             ev_tl,
    output logic [FLOW_BUCKETS_LOG2+2:0]            ev_slot,
    output logic [63:0]             ev_ts,
    input  wire                     ev_pop,

    // global counter pulses
    output logic                    cnt_fwd,
    output logic                    cnt_host,
    output logic [4:0]              cnt_host_reason
);

    localparam integer W    = KEEP_WIDTH;
    localparam integer LW   = $clog2(W);
    localparam integer B    = FLOW_BUCKETS_LOG2;
    localparam integer A    = ACTION_LOG2;
    localparam integer JKW  = 17 - LW;
    // frame buffer: one maximum forwardable frame (14 + 65535 bytes) + margin
    localparam integer FA   = $clog2((14 + 65535 + W - 1) / W + 64);
    localparam integer DEPTH = 1 << FA;
    localparam integer D    = 20 / W;           // IPIP: whole beats of shift
    localparam integer R    = 20 % W;           // IPIP: remaining byte shift
    localparam integer DW   = (D > 0) ? $clog2(D + 1) : 1;
    localparam integer DECL = $clog2(DEC_DEPTH);
    localparam integer OQL  = 4;                // output FIFOs: 16 entries
    localparam integer OQD  = 1 << OQL;
    localparam integer EVW  = $clog2(EV_DEPTH + 1);

    // ------------------------------------------------------------------
    // frame buffer and end FIFO
    // ------------------------------------------------------------------
    logic [FA:0] wr_ptr, rd_ptr, free_ptr;
    logic        space_ok, end_ok;

    wire [FA:0] used = wr_ptr - free_ptr;
    always_ff @(posedge clk) begin
        if (rst) begin
            wr_ptr   <= '0;
            space_ok <= 1'b0;
        end else begin
            if (fb_valid) wr_ptr <= wr_ptr + 1'b1;
            space_ok <= (used < (FA+1)'(DEPTH - 2));
        end
    end

    logic                 end_v;
    logic [FA+LW:0]       end_head;
    logic                 end_pop;
    logic [6:0]           end_count;
    lvsnic_fifo #(.WIDTH(FA + 1 + LW), .DEPTH_LOG2(6)) u_end (
        .clk(clk), .rst(rst),
        .in_valid(fb_valid && fb_last), .in_data({wr_ptr, fb_cnt_m1}),
        .out_valid(end_v), .out_data(end_head), .out_pop(end_pop),
        .count(end_count)
    );
    wire [FA:0]   end_ptr = end_head[FA+LW:LW];
    wire [LW-1:0] end_cnt = end_head[LW-1:0];

    always_ff @(posedge clk) begin
        if (rst) end_ok <= 1'b0;
        else     end_ok <= (end_count < 7'd62);
    end
    assign fb_ready = space_ok && end_ok;

    logic                  ram_re;
    logic [DATA_WIDTH-1:0] ram_q;
    lvsnic_sdp_ram #(.WIDTH(DATA_WIDTH), .ADDR_WIDTH(FA), .OUT_REG(1)) u_fb (
        .clk(clk),
        .we(fb_valid), .waddr(wr_ptr[FA-1:0]), .wdata(fb_data),
        .re(ram_re), .raddr(rd_ptr[FA-1:0]), .oce(1'b1),
        .rdata(ram_q)
    );

    // ------------------------------------------------------------------
    // decision FIFO
    // ------------------------------------------------------------------
    localparam integer DQW = 1 + 1 + 5 + 1 + 1 + 32 + 32 + 64 + 592 + 2*JKW + 2*LW + A + (B+3) + 16;

    logic           dq_v;
    logic [DQW-1:0] dq;
    logic [DECL:0]  dq_count;
    lvsnic_fifo #(.WIDTH(DQW), .DEPTH_LOG2(DECL)) u_dec (
        .clk(clk), .rst(rst),
        .in_valid(dec_valid),
        .in_data({dec_fwd, dec_tun, dec_reason, dec_hit, dec_vip, dec_hash, dec_seq, dec_ts,
                  dec_h, dec_j, dec_k, dec_need_m1, dec_outlast_m1, dec_act, dec_slot, dec_tl}),
        .out_valid(dq_v), .out_data(dq), .out_pop(dec_pop),
        .count(dq_count)
    );

    wire             q_fwd, q_tun, q_hit, q_vip;
    wire [4:0]       q_reason;
    wire [31:0]      q_hash, q_seq;
    wire [63:0]      q_ts;
    wire [591:0]     q_h;
    wire [JKW-1:0]   q_j, q_k;
    wire [LW-1:0]    q_need, q_ol;
    wire [A-1:0]     q_act;
    wire [B+2:0]     q_slot;
    wire [15:0]      q_tl;
    assign {q_fwd, q_tun, q_reason, q_hit, q_vip, q_hash, q_seq, q_ts,
            q_h, q_j, q_k, q_need, q_ol, q_act, q_slot, q_tl} = dq;

    // ------------------------------------------------------------------
    // reader state
    // ------------------------------------------------------------------
    logic            cur_v, cur_fwd, cur_skip, cur_rep;
    logic            cur_tun, cur_hit, cur_vip;
    logic [4:0]      cur_reason;
    logic [31:0]     cur_hash, cur_seq;
    logic [63:0]     cur_ts;
    logic [JKW-1:0]  cur_j;                     // J: index of the last output slot
    logic [LW-1:0]   cur_need, cur_ol;
    logic [A-1:0]    cur_act;
    logic [B+2:0]    cur_slot;
    logic [15:0]     cur_tl;
    logic [JKW-1:0]  j_cnt;                     // output slot index
    logic [JKW-1:0]  krem;                      // reads left before beat K
    logic            rd_done;                   // beat K has been read
    logic            in_done;                   // the frame's last beat has been read
    logic [DW-1:0]   pre_left;                  // IPIP slots before the first read
    logic [591:0]    h_sr;                      // head bytes from this slot on
    logic [6:0]      hrem;                      // head bytes left (0..74)

    logic [OQL:0]    tx_cred, host_cred;
    logic [EVW-1:0]  ev_cred;
    wire             tx_ok   = (tx_cred != '0);
    wire             host_ok = (host_cred != '0);
    wire             ev_ok   = (ev_cred != '0);

    wire avail  = (rd_ptr != wr_ptr);
    wire at_end = end_v && (rd_ptr == end_ptr);

    // host / replay slots
    wire h_act  = cur_v && !cur_fwd;
    wire h_fire = h_act && avail && host_ok;

    // forwarded slots
    wire f_act     = cur_v && cur_fwd && !cur_skip;
    wire need_read = (pre_left == '0) && !rd_done;
    wire at_k      = (krem == '0);
    wire f_fire    = f_act && tx_ok && ev_ok && (!need_read || avail);
    wire f_short   = need_read && at_end && (!at_k || (end_cnt < cur_need));
    wire f_commit  = need_read && at_k && !f_short;
    wire f_last    = (j_cnt == cur_j);
    wire f_indone  = in_done || (need_read && at_end);

    // skip the rest of a forwarded frame (padding) once all slots are out
    wire s_act = cur_v && cur_fwd && cur_skip;

    wire abort_fire = f_fire && f_short;
    wire slot_fire  = f_fire && !f_short;

    wire frame_done = (h_fire && at_end)
                   || (slot_fire && f_last && f_indone)
                   || (s_act && end_v);

    wire load = dq_v && (!cur_v || frame_done);
    assign dec_pop = load;
    assign end_pop = frame_done;

    // next read pointer
    logic [FA:0] rd_next;
    always_comb begin
        rd_next = rd_ptr;
        if (h_fire)                       rd_next = rd_ptr + 1'b1;
        else if (abort_fire)              rd_next = free_ptr;      // rewind to the frame start
        else if (slot_fire && need_read)  rd_next = rd_ptr + 1'b1;
        else if (s_act)                   rd_next = end_v ? end_ptr + 1'b1 : wr_ptr;
    end

    // the buffer is released as it is read, except for a forwarded frame
    // that is not yet known to be complete
    wire free_follow = !cur_v || !cur_fwd || rd_done || (slot_fire && f_commit) || cur_skip;

    assign ram_re = h_fire || (f_fire && need_read);

    always_ff @(posedge clk) begin
        if (rst) begin
            rd_ptr   <= '0;
            free_ptr <= '0;
            cur_v    <= 1'b0;
        end else begin
            rd_ptr <= rd_next;
            if (free_follow && !abort_fire) free_ptr <= rd_next;
            if (load)            cur_v <= 1'b1;
            else if (frame_done) cur_v <= 1'b0;
        end
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            cur_fwd  <= 1'b0;
            cur_skip <= 1'b0;
            cur_rep  <= 1'b0;
        end else if (load) begin
            cur_fwd  <= q_fwd;
            cur_skip <= 1'b0;
            cur_rep  <= 1'b0;
        end else if (abort_fire) begin
            cur_fwd  <= 1'b0;          // replay to the host
            cur_rep  <= 1'b1;
        end else if (slot_fire && f_last && !f_indone) begin
            cur_skip <= 1'b1;
        end
    end

    always_ff @(posedge clk) begin
        if (load) begin
            cur_tun    <= q_tun;
            cur_hit    <= q_hit;
            cur_vip    <= q_vip;
            cur_reason <= q_reason;
            cur_hash   <= q_hash;
            cur_seq    <= q_seq;
            cur_ts     <= q_ts;
            cur_j      <= q_j;
            cur_need   <= q_need;
            cur_ol     <= q_ol;
            cur_act    <= q_act;
            cur_slot   <= q_slot;
            cur_tl     <= q_tl;
            j_cnt      <= '0;
            krem       <= q_k;
            rd_done    <= 1'b0;
            in_done    <= 1'b0;
            pre_left   <= q_tun ? DW'(D) : '0;
            h_sr       <= q_h;
            hrem       <= q_tun ? 7'd74 : 7'd54;
        end else if (slot_fire) begin
            j_cnt   <= j_cnt + 1'b1;
            h_sr    <= h_sr >> (W*8);
            hrem    <= (hrem > 7'(W)) ? hrem - 7'(W) : 7'd0;
            if (pre_left != '0) pre_left <= pre_left - 1'b1;
            if (need_read) begin
                krem    <= krem - 1'b1;
                rd_done <= at_k;
                in_done <= f_indone;
            end
        end
    end

    // ------------------------------------------------------------------
    // slot pipeline: issue (sl1, RAM latch) -> sl2 (RAM output register)
    // -> assembly -> output FIFOs
    // ------------------------------------------------------------------
    logic                  sl1_v, sl1_tx, sl1_rd, sl1_last, sl1_abort, sl1_tun;
    logic [W-1:0]          sl1_keep, sl1_mask;
    logic [LW-1:0]         sl1_cnt;
    logic [DATA_WIDTH-1:0] sl1_ov;
    logic [31:0]           sl1_seq;
    logic [159:0]          sl1_meta;

    logic [LW-1:0] iss_cnt;
    logic          iss_last;
    always_comb begin
        if (h_fire) begin
            iss_last = at_end;
            iss_cnt  = at_end ? end_cnt : {LW{1'b1}};
        end else begin
            iss_last = f_last || f_short;
            iss_cnt  = (f_last && !f_short) ? cur_ol : {LW{1'b1}};
        end
    end

    wire [4:0] h_reason = cur_rep ? 5'd19 : cur_reason;
    wire       h_hit    = cur_rep ? 1'b1 : cur_hit;

    always_ff @(posedge clk) begin
        if (rst) sl1_v <= 1'b0;
        else     sl1_v <= h_fire || f_fire;
    end
    always_ff @(posedge clk) begin
        sl1_tx    <= !h_fire;
        sl1_rd    <= ram_re;
        sl1_last  <= iss_last;
        sl1_abort <= f_short;
        sl1_tun   <= cur_tun;
        sl1_cnt   <= iss_cnt;
        sl1_ov    <= h_sr[DATA_WIDTH-1:0];
        sl1_seq   <= cur_seq;
        sl1_meta  <= {cur_ts, cur_seq, cur_hash, 16'h0, 6'h0, cur_vip, h_hit, 3'h0, h_reason};
        for (int l = 0; l < W; l++) begin
            sl1_keep[l] <= (LW'(l) <= iss_cnt);
            sl1_mask[l] <= !h_fire && (7'(l) < hrem);
        end
    end

    logic                  sl2_v, sl2_tx, sl2_rd, sl2_last, sl2_abort, sl2_tun;
    logic [W-1:0]          sl2_keep, sl2_mask;
    logic [LW-1:0]         sl2_cnt;
    logic [DATA_WIDTH-1:0] sl2_ov;
    logic [31:0]           sl2_seq;
    logic [159:0]          sl2_meta;

    always_ff @(posedge clk) begin
        if (rst) sl2_v <= 1'b0;
        else     sl2_v <= sl1_v;
    end
    always_ff @(posedge clk) begin
        sl2_tx <= sl1_tx; sl2_rd <= sl1_rd; sl2_last <= sl1_last; sl2_abort <= sl1_abort;
        sl2_tun <= sl1_tun; sl2_keep <= sl1_keep; sl2_mask <= sl1_mask; sl2_cnt <= sl1_cnt;
        sl2_ov <= sl1_ov; sl2_seq <= sl1_seq; sl2_meta <= sl1_meta;
    end

    // assembly: head override, IPIP realignment by 20 bytes, zero past tkeep
    logic [8*R-1:0]        prev;        // top R bytes of the previous read beat
    logic [DATA_WIDTH-1:0] shifted;     // received bytes realigned by 20
    logic [DATA_WIDTH-1:0] asm_data;
    genvar gl;
    generate
        for (gl = 0; gl < W; gl = gl + 1) begin : g_lane
            if (gl < R) begin : g_lo
                assign shifted[8*gl +: 8] = prev[8*gl +: 8];
            end else begin : g_hi
                assign shifted[8*gl +: 8] = ram_q[8*(gl - R) +: 8];
            end
            assign asm_data[8*gl +: 8] = !sl2_keep[gl] ? 8'h00
                                       : sl2_mask[gl] ? sl2_ov[8*gl +: 8]
                                       : sl2_tun      ? shifted[8*gl +: 8]
                                       :                ram_q[8*gl +: 8];
        end
    endgenerate
    always_ff @(posedge clk) begin
        if (sl2_v && sl2_tx && sl2_rd) prev <= ram_q[DATA_WIDTH-1 -: 8*R];
    end

    // ------------------------------------------------------------------
    // output FIFOs
    // ------------------------------------------------------------------
    localparam integer TQW = DATA_WIDTH + LW + 1 + 1 + 32;
    localparam integer HQW = DATA_WIDTH + LW + 1 + 160;

    logic           tq_v, hq_v;
    logic [TQW-1:0] tq;
    logic [HQW-1:0] hq;
    logic [OQL:0]   tq_count, hq_count;

    lvsnic_fifo #(.WIDTH(TQW), .DEPTH_LOG2(OQL)) u_txq (
        .clk(clk), .rst(rst),
        .in_valid(sl2_v && sl2_tx),
        .in_data({asm_data, sl2_cnt, sl2_last, sl2_abort && sl2_last, sl2_seq}),
        .out_valid(tq_v), .out_data(tq), .out_pop(tx_valid && tx_ready),
        .count(tq_count)
    );
    lvsnic_fifo #(.WIDTH(HQW), .DEPTH_LOG2(OQL)) u_hostq (
        .clk(clk), .rst(rst),
        .in_valid(sl2_v && !sl2_tx),
        .in_data({ram_q, sl2_cnt, sl2_last, sl2_meta}),
        .out_valid(hq_v), .out_data(hq), .out_pop(host_valid && host_ready),
        .count(hq_count)
    );

    wire [LW-1:0] tq_cnt = tq[TQW-DATA_WIDTH-1 -: LW];
    wire [LW-1:0] hq_cnt = hq[HQW-DATA_WIDTH-1 -: LW];

    assign tx_valid  = tq_v;
    assign tx_data   = tq[TQW-1 -: DATA_WIDTH];
    assign tx_last   = tq[33];
    assign tx_user   = {tq[32], tq[31:0]};
    assign host_valid = hq_v;
    assign host_data = hq[HQW-1 -: DATA_WIDTH];
    assign host_last = hq[160];
    assign host_user = hq[159:0];
    always_comb begin
        for (int l = 0; l < W; l++) begin
            tx_keep[l]   = (LW'(l) <= tq_cnt);
            host_keep[l] = (LW'(l) <= hq_cnt);
        end
    end

    // credits: entries free in the output FIFOs minus slots in flight
    always_ff @(posedge clk) begin
        if (rst) begin
            tx_cred   <= (OQL+1)'(OQD);
            host_cred <= (OQL+1)'(OQD);
            ev_cred   <= EVW'(EV_DEPTH);
        end else begin
            tx_cred   <= tx_cred   - (OQL+1)'(f_fire) + (OQL+1)'(tx_valid && tx_ready);
            host_cred <= host_cred - (OQL+1)'(h_fire) + (OQL+1)'(host_valid && host_ready);
            ev_cred   <= ev_cred   - EVW'(slot_fire && f_commit) + EVW'(ev_pop);
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
            cnt_host <= h_fire && at_end;
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
