// lvsnic_lookup: the decision pipeline of lvsnic_core (docs/hardware.md
// §3, §4, §5).
//
// One header (the frame's first 74 bytes, zero-filled past its end; for a
// frame other than IPv6 bytes 54..73 may be zero too) enters
// per cycle; twelve register stages (S0..S11) later a decision for the
// frame is pushed to the egress: forward (with the rewritten header bytes and the
// trim/realignment numbers) or host (with the §5 metadata).
//
//   S0  header register (from lvsnic_ingress) or host read token
//   S1  parse: rows 1..12 conditions, VIP / director-IP compares,
//       Toeplitz stage 1, IPv4 checksum stage 1
//   S2  hashes ready -> flow-table read address; checksum stage 2
//   S3  flow RAM output latch; checksum ready -> rows 1..12 reason
//   S4  flow RAM output register; 8 x 4 partial (26-bit) IPv4 key
//       compares; per-slot IPv4 eligibility (valid, not ipv6, not the tail
//       of a valid IPv6 head)
//   S5  per-slot match -> first match (way 0 before way 1, slot 0..3) by a
//       binary priority-mux tree
//   S6  hit / action index -> action RAM read address
//   S7  action RAM output latch
//   S8  action RAM output register; rows 13..19, DISABLED; build the
//       rewritten header (checksum fields pending), the outer IPIP header;
//       start the inner/outer IPv4 checksums and the L4 update
//   S9..S10  checksum pipelines; trim/realignment numbers
//   S11 checksums ready: insert them, push the decision
//
// All stages advance together on `ce`: the host steals one cycle to write a
// flow or action entry (steal request, then one cycle with ce = 0 in which
// the RAM is written), so a lookup never reads a RAM row while it is
// written (a lookup sees the old or the new entry: an IPv4 entry is one
// 160-bit RAM word; an IPv6 entry, an aligned slot pair, is written by
// WRITE_PAIR into the even and the odd slot's RAMs, same row, in the same
// stolen cycle). Host reads travel through the pipeline as tokens (they
// take the slot of a header) and return at S4 the slot and its pair
// partner (slot ^ 1: {partner, slot}, 320 bits) or at S8 the action.
// hdr_ready is a register (credits for the decision FIFO, steal and token
// announce). After reset the flow and action RAMs are swept to zero
// (init_busy).
//
// Parsing (docs/hardware.md §3): IPv4 (EtherType 0x0800, 20-byte header)
// and IPv6 (0x86DD, the 40-byte fixed header with TCP or UDP directly
// after it; extension headers to the host). Both families share the rows,
// the stages and the decision; `v6` selects the header fields.
//
// Matching (docs/hardware.md §4): an IPv4 frame's slot s matches if valid,
// ipv6 = 0, not the tail of a valid IPv6 head (s odd, slot s-1 valid with
// ipv6 = 1), and proto, addresses and ports equal. An IPv6 frame's pair
// (even slot s, s+1) matches if slot s is valid with ipv6 = 1 and the 296
// key bits of the pair equal the frame's (S4: 13 chunk compares per pair,
// beside the IPv4 ones; S5: the same priority tree over the even slots).
// An action whose ipv6 bit differs from the frame's family sends the frame
// to the host as ACTION_HOST, exactly like host = 1, and so does an IPv6
// TUNNEL action (ip6ip6 is not built here yet).
//
// Flow RAMs: 8 (2 ways x 4 slots) x 2^FLOW_BUCKETS_LOG2 x 160 bit
// (lvsnic_flow_entry). Action RAM: 2^ACTION_LOG2 x 256 bit
// (lvsnic_action_entry).
`default_nettype none

module lvsnic_lookup #(
    parameter integer DATA_WIDTH        = 64,
    parameter integer FLOW_BUCKETS_LOG2 = 10,
    parameter integer ACTION_LOG2       = 10,
    parameter integer VIP_COUNT         = 16,
    parameter integer IPV6              = 1,    // 0: IPv6 frames are NON_IPV4, no IPv6 logic built
    parameter integer DEC_DEPTH         = 32
) (
    input  wire                          clk,
    input  wire                          rst,

    // configuration registers
    input  wire                          cfg_enable,
    input  wire                          cfg_pmtu,
    input  wire [47:0]                   cfg_mac,      // byte 0 in [47:40]
    input  wire [31:0]                   cfg_ip,
    input  wire [15:0]                   cfg_mtu,
    input  wire [VIP_COUNT-1:0]          cfg_vip_valid,
    input  wire [VIP_COUNT*32-1:0]       cfg_vip,

    // headers from the ingress
    input  wire                          hdr_valid,
    output logic                         hdr_ready,
    input  wire [591:0]                  hdr_data,
    input  wire [6:0]                    hdr_bytes,
    input  wire [63:0]                   hdr_ts,
    input  wire [31:0]                   hdr_seq,

    // host access
    input  wire                          steal,        // pulse: the next cycle is stolen
    input  wire                          flow_wr,      // with steal; data held
    input  wire                          flow_wr_pair, // with flow_wr: both slots of the pair
    input  wire [FLOW_BUCKETS_LOG2+2:0]                  flow_wr_idx,
    input  wire [319:0]                  flow_wr_data, // slot 159:0; pair: even 159:0, odd 319:160
    input  wire                          act_wr,       // with steal; data held
    input  wire [ACTION_LOG2-1:0]                  act_wr_idx,
    input  wire [255:0]                  act_wr_data,
    input  wire                          tok_req,      // level until tok_ack
    input  wire                          tok_is_act,
    input  wire [((FLOW_BUCKETS_LOG2 + 3 > ACTION_LOG2) ? FLOW_BUCKETS_LOG2 + 3 : ACTION_LOG2)-1:0]               tok_idx,
    output logic                         tok_ack,
    output logic                         flow_rd_valid,
    output logic [319:0]                 flow_rd_data, // {slot ^ 1, slot}
    output logic                         act_rd_valid,
    output logic [255:0]                 act_rd_data,
    output logic                         init_busy,

    // decisions to the egress
    output logic                         dec_valid,
    output logic                         dec_fwd,
    output logic                         dec_tun,
    output logic                         dec_v6,       // IPv6: the rewritten head is 74 bytes
    output logic [4:0]                   dec_reason,
    output logic                         dec_hit,
    output logic                         dec_vip,
    output logic [31:0]                  dec_hash,
    output logic [31:0]                  dec_seq,
    output logic [63:0]                  dec_ts,
    output logic [591:0]                 dec_h,
    output logic [16-$clog2(DATA_WIDTH/8):0]               dec_j,
    output logic [16-$clog2(DATA_WIDTH/8):0]               dec_k,
    output logic [$clog2(DATA_WIDTH/8)-1:0]                dec_outlast_m1,
    output logic [ACTION_LOG2-1:0]                 dec_act,
    output logic [FLOW_BUCKETS_LOG2+2:0]                 dec_slot,
    output logic [15:0]                  dec_tl,
    input  wire                          dec_pop
);

    `include "lvsnic_regs.vh"

    localparam integer W    = DATA_WIDTH / 8;
    localparam integer LW   = $clog2(W);
    localparam integer B    = FLOW_BUCKETS_LOG2;
    localparam integer A    = ACTION_LOG2;
    localparam integer TOKW = (B + 3 > A) ? B + 3 : A;
    localparam integer JKW  = 17 - LW;
    localparam integer IW   = (B > A) ? B : A;          // init sweep counter
    localparam integer CW   = $clog2(DEC_DEPTH + 1);

    localparam logic [319:0] KEY0 = 320'h6d5a56da_255b0ec2_4167253d_43a38fb0_d0ca2bcb_ae7b30b4_77cb2da3_8030f20c_6a42b73b_beac01fa;
    localparam logic [319:0] KEY1 = 320'hd0ca2bcb_ae7b30b4_77cb2da3_8030f20c_6a42b73b_beac01fa_6d5a56da_255b0ec2_4167253d_43a38fb0;

    // The IPv4 flow slot (hw/regmap/lvsnic.rdl, lvsnic_flow_entry): the
    // flags, proto and action in word 0 (the same place in an IPv6 head,
    // lvsnic_flow6_entry), the addresses and ports contiguous from saddr to
    // dport (AD_LSB .. AD_LSB + AD_W - 1). The key compared is
    // {saddr..dport, proto} (KEY_W = 104 bits), gathered from the two
    // places by wiring only, in four chunks of 26 bits as before.
    localparam integer ENTRY_W = LVSNIC_FLOW_ENTRY_WORDS * 32;   // one slot
    localparam integer ACT_W   = LVSNIC_ACTION_ENTRY_WORDS * 32;
    localparam integer PR_LSB  = LVSNIC_FLOW_ENTRY_PROTO_LSB;
    localparam integer PR_W    = LVSNIC_FLOW_ENTRY_PROTO_WIDTH;
    localparam integer AD_LSB  = LVSNIC_FLOW_ENTRY_SADDR_LSB;
    localparam integer AD_W    = LVSNIC_FLOW_ENTRY_DPORT_LSB + LVSNIC_FLOW_ENTRY_DPORT_WIDTH - AD_LSB;
    localparam integer KEY_W   = AD_W + PR_W;
    // the IPv6 pair (lvsnic_flow6_entry, 320 bits over two slots): the
    // same word 0, saddr..dport contiguous (AD6_LSB .. AD6_LSB + AD6_W - 1);
    // the key compared is {saddr..dport, proto} (KEY6_W = 296 bits) in
    // NC6 chunks of C6 bits (zero-padded)
    localparam integer AD6_LSB = LVSNIC_FLOW6_ENTRY_SADDR_LSB;
    localparam integer AD6_W   = LVSNIC_FLOW6_ENTRY_DPORT_LSB + LVSNIC_FLOW6_ENTRY_DPORT_WIDTH - AD6_LSB;
    localparam integer KEY6_W  = AD6_W + PR_W;
    localparam integer C6      = 24;
    localparam integer NC6     = (KEY6_W + C6 - 1) / C6;
    localparam bit LAYOUT_OK =
        ENTRY_W == 160 && ACT_W == 256 && LVSNIC_FLOW6_ENTRY_WORDS * 32 == 2 * ENTRY_W
        // word 0 common to both layouts: valid, ack_fast, ipv6, proto, action
        && LVSNIC_FLOW_ENTRY_VALID_LSB == LVSNIC_FLOW6_ENTRY_VALID_LSB
        && LVSNIC_FLOW_ENTRY_ACK_FAST_LSB == LVSNIC_FLOW6_ENTRY_ACK_FAST_LSB
        && LVSNIC_FLOW_ENTRY_IPV6_LSB == LVSNIC_FLOW6_ENTRY_IPV6_LSB
        && LVSNIC_FLOW_ENTRY_PROTO_LSB == LVSNIC_FLOW6_ENTRY_PROTO_LSB
        && LVSNIC_FLOW_ENTRY_ACTION_LSB == LVSNIC_FLOW6_ENTRY_ACTION_LSB
        && LVSNIC_FLOW_ENTRY_VALID_WIDTH == 1 && LVSNIC_FLOW_ENTRY_ACK_FAST_WIDTH == 1
        && LVSNIC_FLOW_ENTRY_IPV6_WIDTH == 1 && PR_W == 8
        && LVSNIC_FLOW_ENTRY_ACTION_WIDTH >= A
        && LVSNIC_FLOW_ENTRY_ACTION_LSB + LVSNIC_FLOW_ENTRY_ACTION_WIDTH <= ENTRY_W
        // proto below the addresses, then saddr, daddr, sport, dport contiguous
        && PR_LSB + PR_W <= AD_LSB
        && LVSNIC_FLOW_ENTRY_DADDR_LSB == LVSNIC_FLOW_ENTRY_SADDR_LSB + LVSNIC_FLOW_ENTRY_SADDR_WIDTH
        && LVSNIC_FLOW_ENTRY_SPORT_LSB == LVSNIC_FLOW_ENTRY_DADDR_LSB + LVSNIC_FLOW_ENTRY_DADDR_WIDTH
        && LVSNIC_FLOW_ENTRY_DPORT_LSB == LVSNIC_FLOW_ENTRY_SPORT_LSB + LVSNIC_FLOW_ENTRY_SPORT_WIDTH
        && LVSNIC_FLOW_ENTRY_SADDR_WIDTH == 32 && LVSNIC_FLOW_ENTRY_DADDR_WIDTH == 32
        && LVSNIC_FLOW_ENTRY_SPORT_WIDTH == 16 && LVSNIC_FLOW_ENTRY_DPORT_WIDTH == 16
        && AD_LSB + AD_W <= ENTRY_W && KEY_W == 104
        && LVSNIC_FLOW6_ENTRY_DADDR_LSB == LVSNIC_FLOW6_ENTRY_SADDR_LSB + LVSNIC_FLOW6_ENTRY_SADDR_WIDTH
        && LVSNIC_FLOW6_ENTRY_SPORT_LSB == LVSNIC_FLOW6_ENTRY_DADDR_LSB + LVSNIC_FLOW6_ENTRY_DADDR_WIDTH
        && LVSNIC_FLOW6_ENTRY_DPORT_LSB == LVSNIC_FLOW6_ENTRY_SPORT_LSB + LVSNIC_FLOW6_ENTRY_SPORT_WIDTH
        && LVSNIC_FLOW6_ENTRY_SADDR_WIDTH == 128 && LVSNIC_FLOW6_ENTRY_DADDR_WIDTH == 128
        && LVSNIC_FLOW6_ENTRY_SPORT_WIDTH == 16 && LVSNIC_FLOW6_ENTRY_DPORT_WIDTH == 16
        && PR_LSB + PR_W <= AD6_LSB && AD6_LSB + AD6_W <= 2 * ENTRY_W && KEY6_W == 296
        && LVSNIC_ACTION_ENTRY_ADDR_WIDTH == 128
        // the action fields the rewrite reads (IPv4 address: addr's low 32 bits)
        && LVSNIC_ACTION_ENTRY_HOST_WIDTH == 1 && LVSNIC_ACTION_ENTRY_IPV6_WIDTH == 1
        && LVSNIC_ACTION_ENTRY_ADDR_WIDTH >= 32 && LVSNIC_ACTION_ENTRY_MAC_WIDTH == 48
        && LVSNIC_ACTION_ENTRY_ADDR_LSB + LVSNIC_ACTION_ENTRY_ADDR_WIDTH <= ACT_W
        && LVSNIC_ACTION_ENTRY_MAC_LSB + LVSNIC_ACTION_ENTRY_MAC_WIDTH <= ACT_W
        && LVSNIC_ACTION_ENTRY_L4_DELTA_LSB + LVSNIC_ACTION_ENTRY_L4_DELTA_WIDTH <= ACT_W
        && LVSNIC_ACTION_ENTRY_PORT_LSB + LVSNIC_ACTION_ENTRY_PORT_WIDTH <= ACT_W;
    generate
        if (!LAYOUT_OK) begin : g_layout_check
            $error("lvsnic_lookup: the entry layouts of hw/rtl/lvsnic_regs.vh no longer fit the key compare");
            lvsnic_lookup_layout_mismatch u_fail ();
        end
    endgenerate

    localparam logic [1:0] K_PKT = 2'd0;
    localparam logic [1:0] K_FTK = 2'd1;   // flow read token
    localparam logic [1:0] K_ATK = 2'd2;   // action read token

    // ------------------------------------------------------------------
    // control: clock enable, credits, init sweep, S0 load
    // ------------------------------------------------------------------
    logic steal_d, flow_wr_d, act_wr_d;
    always_ff @(posedge clk) begin
        if (rst) begin
            steal_d   <= 1'b0;
            flow_wr_d <= 1'b0;
            act_wr_d  <= 1'b0;
        end else begin
            steal_d   <= steal;
            flow_wr_d <= flow_wr;
            act_wr_d  <= act_wr;
        end
    end
    wire ce = !steal_d;

    logic [IW:0]   init_cnt;               // MSB set when done
    assign init_busy = !init_cnt[IW];
    always_ff @(posedge clk) begin
        if (rst)            init_cnt <= '0;
        else if (init_busy) init_cnt <= init_cnt + 1'b1;
    end

    // decision credits: headers pushed minus decisions popped, counted one
    // cycle late; hdr_ready (a register) leaves room for the two pushes not
    // yet counted. It is also dropped the cycle after a steal request (the
    // stolen cycle) and while a read token waits (the token then enters in
    // a cycle without header).
    logic [CW-1:0] inflight;
    logic          push_d, pop_d;
    wire   hdr_push  = hdr_valid && hdr_ready;
    wire   tok_push  = tok_req && !hdr_ready && ce && !init_busy;
    assign tok_ack   = tok_push;

    always_ff @(posedge clk) begin
        if (rst) begin
            inflight  <= '0;
            push_d    <= 1'b0;
            pop_d     <= 1'b0;
            hdr_ready <= 1'b0;
        end else begin
            push_d    <= hdr_push;
            pop_d     <= dec_pop;
            inflight  <= inflight + CW'(push_d) - CW'(pop_d);
            hdr_ready <= !steal && !tok_req && !init_busy && (inflight < CW'(DEC_DEPTH - 2));
        end
    end

    // ------------------------------------------------------------------
    // S0
    // ------------------------------------------------------------------
    logic            s0_v;
    logic [1:0]      s0_k;
    logic [591:0]    s0_h;
    logic [6:0]      s0_nb;
    logic [63:0]     s0_ts;
    logic [31:0]     s0_seq;
    logic [TOKW-1:0] s0_tok;

    always_ff @(posedge clk) begin
        if (rst)     s0_v <= 1'b0;
        else if (ce) s0_v <= hdr_push || tok_push;
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s0_k   <= tok_push ? (tok_is_act ? K_ATK : K_FTK) : K_PKT;
            s0_h   <= hdr_data;
            s0_nb  <= hdr_bytes;
            s0_ts  <= hdr_ts;
            s0_seq <= hdr_seq;
            s0_tok <= tok_idx;
        end
    end

    // header fields (byte i of the frame at [8i+7:8i])
    wire [47:0] f_dmac  = {s0_h[7:0], s0_h[15:8], s0_h[23:16], s0_h[31:24], s0_h[39:32], s0_h[47:40]};
    wire [15:0] f_etype = {s0_h[12*8 +: 8], s0_h[13*8 +: 8]};
    wire [3:0]  f_ver   = s0_h[14*8 + 4 +: 4];
    wire [3:0]  f_ihl   = s0_h[14*8 +: 4];
    wire [15:0] f_tl    = {s0_h[16*8 +: 8], s0_h[17*8 +: 8]};
    wire [13:0] f_frag  = {s0_h[20*8 +: 6], s0_h[21*8 +: 8]};   // MF + offset
    wire [7:0]  f_ttl   = s0_h[22*8 +: 8];
    wire [7:0]  f_proto = s0_h[23*8 +: 8];
    wire [31:0] f_src   = {s0_h[26*8 +: 8], s0_h[27*8 +: 8], s0_h[28*8 +: 8], s0_h[29*8 +: 8]};
    wire [31:0] f_dst   = {s0_h[30*8 +: 8], s0_h[31*8 +: 8], s0_h[32*8 +: 8], s0_h[33*8 +: 8]};
    wire [15:0] f_sport = {s0_h[34*8 +: 8], s0_h[35*8 +: 8]};
    wire [15:0] f_dport = {s0_h[36*8 +: 8], s0_h[37*8 +: 8]};
    wire [15:0] f_ucsum = {s0_h[40*8 +: 8], s0_h[41*8 +: 8]};
    wire [3:0]  f_tflag = {s0_h[47*8 + 4], s0_h[47*8 +: 3]};     // ACK, RST SYN FIN

    // IPv6 fields (fixed header at 14, the upper-layer header at 54)
    wire         f_v6     = (IPV6 != 0) && (f_etype == 16'h86DD);
    wire [15:0]  f6_plen  = {s0_h[18*8 +: 8], s0_h[19*8 +: 8]};
    wire [7:0]   f6_nh    = s0_h[20*8 +: 8];
    wire [7:0]   f6_hl    = s0_h[21*8 +: 8];
    logic [127:0] f6_src, f6_dst;
    always_comb begin
        for (int i = 0; i < 16; i++) begin
            f6_src[127 - 8*i -: 8] = s0_h[(22 + i)*8 +: 8];
            f6_dst[127 - 8*i -: 8] = s0_h[(38 + i)*8 +: 8];
        end
    end
    wire [15:0] f6_sport = {s0_h[54*8 +: 8], s0_h[55*8 +: 8]};
    wire [15:0] f6_dport = {s0_h[56*8 +: 8], s0_h[57*8 +: 8]};
    wire [15:0] f6_ucsum = {s0_h[60*8 +: 8], s0_h[61*8 +: 8]};
    wire [3:0]  f6_tflag = {s0_h[67*8 + 4], s0_h[67*8 +: 3]};
    // extension headers the kernel walks (ipv6_ext_hdr) but Fragment and
    // No Next Header: Hop-by-Hop, Routing, AH, Destination Options
    wire        f6_ext   = (f6_nh == 8'd0) || (f6_nh == 8'd43) || (f6_nh == 8'd51) || (f6_nh == 8'd60);
    wire [7:0]  f_l4p    = f_v6 ? f6_nh : f_proto;

    // 20-byte IPv4 header in network order for the checksum module
    logic [159:0] s0_ip_be;
    always_comb begin
        for (int i = 0; i < 20; i++) s0_ip_be[159 - 8*i -: 8] = s0_h[(14 + i)*8 +: 8];
    end

    // ------------------------------------------------------------------
    // S1: parse
    // ------------------------------------------------------------------
    logic            s1_v;
    logic [1:0]      s1_k;
    logic [591:0]    s1_h;
    logic [63:0]     s1_ts;
    logic [31:0]     s1_seq;
    logic [TOKW-1:0] s1_tok;
    logic            s1_runt, s1_mcast, s1_other, s1_vlan, s1_nonip, s1_malf, s1_opts;
    logic            s1_frag, s1_tcp, s1_udp, s1_l4tr, s1_ttl, s1_local, s1_ctl, s1_udp0;
    logic            s1_v6;
    logic [VIP_COUNT-1:0] s1_vipm;
    logic [16:0]     s1_tl;        // IP packet length (IPv6: 40 + payload length)
    logic [16:0]     s1_tl20;

    always_ff @(posedge clk) begin
        if (rst)     s1_v <= 1'b0;
        else if (ce) s1_v <= s0_v;
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s1_k     <= s0_k;
            s1_h     <= s0_h;
            s1_ts    <= s0_ts;
            s1_seq   <= s0_seq;
            s1_tok   <= s0_tok;
            s1_runt  <= (s0_nb < 7'd14);
            s1_mcast <= f_dmac[40];
            s1_other <= (f_dmac != cfg_mac);
            s1_vlan  <= (f_etype == 16'h8100);
            s1_nonip <= (f_etype != 16'h0800) && !f_v6;
            s1_v6    <= f_v6;
            s1_malf  <= f_v6 ? ((s0_nb < 7'd54) || (f_ver != 4'd6))
                             : ((s0_nb < 7'd34) || (f_ver != 4'd4) || (f_ihl < 4'd5)
                                || (f_tl < {10'b0, f_ihl, 2'b00}));
            s1_opts  <= f_v6 ? f6_ext : (f_ihl > 4'd5);
            s1_frag  <= f_v6 ? (f6_nh == 8'd44) : (f_frag[13] || (f_frag[12:0] != 13'd0));
            s1_tcp   <= (f_l4p == 8'd6);
            s1_udp   <= (f_l4p == 8'd17);
            // row 11: IP length too short for the fixed L4 header, or the
            // frame ends before it (IPv4: 54 bytes for TCP, 42 for UDP;
            // IPv6: 74, 62)
            if (f_v6)
                s1_l4tr <= (f_l4p == 8'd6) ? ((f6_plen < 16'd20) || (s0_nb < 7'd74))
                                           : ((f6_plen < 16'd8) || (s0_nb < 7'd62));
            else
                s1_l4tr <= (f_l4p == 8'd6) ? ((f_tl < 16'd40) || (s0_nb < 7'd54))
                                           : ((f_tl < 16'd28) || (s0_nb < 7'd42));
            s1_ttl   <= f_v6 ? (f6_hl <= 8'd1) : (f_ttl <= 8'd1);
            s1_local <= !f_v6 && (f_dst == cfg_ip);
            s1_ctl   <= f_v6 ? ((f6_tflag[2:0] != 3'b000) || !f6_tflag[3])
                             : ((f_tflag[2:0] != 3'b000) || !f_tflag[3]);   // SYN/FIN/RST or no ACK
            s1_udp0  <= ((f_v6 ? f6_ucsum : f_ucsum) == 16'h0000);
            s1_tl    <= f_v6 ? 17'd40 + {1'b0, f6_plen} : {1'b0, f_tl};
            s1_tl20  <= {1'b0, f_tl} + 17'd20;
            for (int i = 0; i < VIP_COUNT; i++) begin
                // no IPv6 VIP table: an IPv6 miss is MISS
                s1_vipm[i] <= !f_v6 && cfg_vip_valid[i] && (f_dst == cfg_vip[32*i +: 32]);
            end
        end
    end

    // Toeplitz hashes (2 stages: ready at S2) and header checksum (3: S3);
    // IPv4 (12-byte input) and IPv6 (36-byte input) hashed side by side,
    // the family's chosen at S2
    wire [95:0]  hash_in  = {f_src, f_dst, f_sport, f_dport};
    logic [31:0] s2_h4_0, s2_h4_1, s2_h6_0, s2_h6_1;
    lvsnic_toeplitz #(.KEY(KEY0)) u_hash0 (.clk(clk), .ce(ce), .in_data(hash_in), .hash(s2_h4_0));
    lvsnic_toeplitz #(.KEY(KEY1)) u_hash1 (.clk(clk), .ce(ce), .in_data(hash_in), .hash(s2_h4_1));
    // (read only by the IPv6 hashes: unused when IPV6 = 0)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [287:0] hash_in6 = {f6_src, f6_dst, f6_sport, f6_dport};
    /* verilator lint_on UNUSEDSIGNAL */
    generate
        if (IPV6 != 0) begin : g_hash6
            lvsnic_toeplitz #(.KEY(KEY0), .IN_BITS(288)) u_hash6_0 (.clk(clk), .ce(ce), .in_data(hash_in6), .hash(s2_h6_0));
            lvsnic_toeplitz #(.KEY(KEY1), .IN_BITS(288)) u_hash6_1 (.clk(clk), .ce(ce), .in_data(hash_in6), .hash(s2_h6_1));
        end else begin : g_no_hash6
            assign s2_h6_0 = 32'h0;
            assign s2_h6_1 = 32'h0;
        end
    endgenerate

    logic [15:0] s3_ipck;
    lvsnic_ip_csum u_ipck (.clk(clk), .ce(ce), .hdr(s0_ip_be), .csum(s3_ipck));

    // ------------------------------------------------------------------
    // S2: flow RAM read address
    // ------------------------------------------------------------------
    logic            s2_v;
    logic [1:0]      s2_k;
    logic [591:0]    s2_h;
    logic [63:0]     s2_ts;
    logic [31:0]     s2_seq;
    logic [TOKW-1:0] s2_tok;
    logic            s2_runt, s2_mcast, s2_other, s2_vlan, s2_nonip, s2_malf, s2_opts;
    logic            s2_frag, s2_tcp, s2_udp, s2_l4tr, s2_ttl, s2_local, s2_ctl, s2_udp0;
    logic            s2_vip, s2_big_n, s2_big_t, s2_v6;
    logic [15:0]     s2_tl;

    always_ff @(posedge clk) begin
        if (rst)     s2_v <= 1'b0;
        else if (ce) s2_v <= s1_v;
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s2_k <= s1_k; s2_h <= s1_h; s2_ts <= s1_ts; s2_seq <= s1_seq; s2_tok <= s1_tok;
            s2_runt <= s1_runt; s2_mcast <= s1_mcast; s2_other <= s1_other; s2_vlan <= s1_vlan;
            s2_nonip <= s1_nonip; s2_malf <= s1_malf; s2_opts <= s1_opts; s2_frag <= s1_frag;
            s2_tcp <= s1_tcp; s2_udp <= s1_udp; s2_l4tr <= s1_l4tr; s2_ttl <= s1_ttl;
            s2_local <= s1_local; s2_ctl <= s1_ctl; s2_udp0 <= s1_udp0;
            s2_vip   <= |s1_vipm;
            s2_v6    <= s1_v6;
            s2_big_n <= (s1_tl > {1'b0, cfg_mtu});
            s2_big_t <= (s1_tl20 > {1'b0, cfg_mtu});
            s2_tl    <= s1_tl[15:0];   // > 16 bits only when TOO_BIG (never forwarded)
        end
    end

    wire [31:0]  s2_hash0 = s2_v6 ? s2_h6_0 : s2_h4_0;
    wire [31:0]  s2_hash1 = s2_v6 ? s2_h6_1 : s2_h4_1;
    wire [B-1:0] s2_bkt0 = (s2_k == K_FTK) ? s2_tok[B+1:2] : s2_hash0[B-1:0];
    wire [B-1:0] s2_bkt1 = (s2_k == K_FTK) ? s2_tok[B+1:2] : s2_hash1[B-1:0];

    // flow RAMs: index n = way*4 + slot. WRITE writes the addressed slot's
    // RAM with data 159:0; WRITE_PAIR writes both RAMs of the pair (same
    // row, same cycle): the even one with 159:0, the odd one with 319:160.
    logic [8*ENTRY_W-1:0] s4_ent;
    genvar gn;
    generate
        for (gn = 0; gn < 8; gn = gn + 1) begin : g_flow
            wire          wr_hit = flow_wr_idx[B+2] == 1'(gn / 4)
                                  && flow_wr_idx[1] == 1'((gn % 4) / 2)
                                  && (flow_wr_pair || flow_wr_idx[0] == 1'(gn % 2));
            wire          we    = init_busy || (flow_wr_d && wr_hit);
            wire [B-1:0]  waddr = init_busy ? init_cnt[B-1:0] : flow_wr_idx[B+1:2];
            wire [ENTRY_W-1:0] wdata = init_busy ? '0
                                     : (flow_wr_pair && (gn % 2) == 1) ? flow_wr_data[ENTRY_W +: ENTRY_W]
                                     : flow_wr_data[0 +: ENTRY_W];
            lvsnic_sdp_ram #(.WIDTH(ENTRY_W), .ADDR_WIDTH(B), .OUT_REG(1)) u_ram (
                .clk(clk),
                .we(we), .waddr(waddr), .wdata(wdata),
                .re(ce), .raddr(gn < 4 ? s2_bkt0 : s2_bkt1), .oce(ce),
                .rdata(s4_ent[gn*ENTRY_W +: ENTRY_W])
            );
        end
    endgenerate

    // ------------------------------------------------------------------
    // S3: rows 1..12
    // ------------------------------------------------------------------
    logic            s3_v;
    logic [1:0]      s3_k;
    logic [591:0]    s3_h;
    logic [63:0]     s3_ts;
    logic [31:0]     s3_seq;
    logic [TOKW-1:0] s3_tok;
    logic            s3_runt, s3_mcast, s3_other, s3_vlan, s3_nonip, s3_malf, s3_opts;
    logic            s3_frag, s3_tcp, s3_udp, s3_l4tr, s3_ttl, s3_local, s3_ctl, s3_udp0;
    logic            s3_vip, s3_big_n, s3_big_t, s3_v6;
    logic [15:0]     s3_tl;
    logic [31:0]     s3_hash0;
    logic [B-1:0]    s3_bkt0, s3_bkt1;

    always_ff @(posedge clk) begin
        if (rst)     s3_v <= 1'b0;
        else if (ce) s3_v <= s2_v;
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s3_k <= s2_k; s3_h <= s2_h; s3_ts <= s2_ts; s3_seq <= s2_seq; s3_tok <= s2_tok;
            s3_runt <= s2_runt; s3_mcast <= s2_mcast; s3_other <= s2_other; s3_vlan <= s2_vlan;
            s3_nonip <= s2_nonip; s3_malf <= s2_malf; s3_opts <= s2_opts; s3_frag <= s2_frag;
            s3_tcp <= s2_tcp; s3_udp <= s2_udp; s3_l4tr <= s2_l4tr; s3_ttl <= s2_ttl;
            s3_local <= s2_local; s3_ctl <= s2_ctl; s3_udp0 <= s2_udp0;
            s3_vip <= s2_vip; s3_big_n <= s2_big_n; s3_big_t <= s2_big_t; s3_tl <= s2_tl;
            s3_v6 <= s2_v6;
            s3_hash0 <= s2_hash0;
            s3_bkt0 <= s2_bkt0; s3_bkt1 <= s2_bkt1;
        end
    end

    // first matching row of 1..12 (reason code), FORWARDED (0) if none
    logic [4:0] s3_pre;
    always_comb begin
        if      (s3_runt)            s3_pre = LVSNIC_REASON_MALFORMED;
        else if (s3_mcast)           s3_pre = LVSNIC_REASON_L2_MULTICAST;
        else if (s3_other)           s3_pre = LVSNIC_REASON_L2_OTHER_HOST;
        else if (s3_vlan)            s3_pre = LVSNIC_REASON_VLAN;
        else if (s3_nonip)           s3_pre = LVSNIC_REASON_NON_IPV4;
        else if (s3_malf)            s3_pre = LVSNIC_REASON_MALFORMED;
        else if (s3_opts)            s3_pre = LVSNIC_REASON_IP_OPTIONS;
        else if (!s3_v6 && s3_ipck != 16'h0) s3_pre = LVSNIC_REASON_IP_CHECKSUM;
        else if (s3_frag)            s3_pre = LVSNIC_REASON_FRAGMENT;
        else if (!s3_tcp && !s3_udp) s3_pre = LVSNIC_REASON_NOT_TCP_UDP;
        else if (s3_l4tr)            s3_pre = LVSNIC_REASON_L4_TRUNCATED;
        else if (s3_ttl)             s3_pre = LVSNIC_REASON_TTL;
        else                         s3_pre = LVSNIC_REASON_FORWARDED;
    end

    // ------------------------------------------------------------------
    // S4: key compares
    // ------------------------------------------------------------------
    logic            s4_v;
    logic [1:0]      s4_k;
    logic [591:0]    s4_h;
    logic [63:0]     s4_ts;
    logic [31:0]     s4_seq;
    logic [TOKW-1:0] s4_tok;
    logic [4:0]      s4_pre;
    logic            s4_tcp, s4_udp, s4_local, s4_ctl, s4_udp0, s4_vip, s4_big_n, s4_big_t, s4_v6;
    logic [15:0]     s4_tl;
    logic [31:0]     s4_hash0;
    logic [B-1:0]    s4_bkt0, s4_bkt1;

    always_ff @(posedge clk) begin
        if (rst)     s4_v <= 1'b0;
        else if (ce) s4_v <= s3_v;
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s4_k <= s3_k; s4_h <= s3_h; s4_ts <= s3_ts; s4_seq <= s3_seq; s4_tok <= s3_tok;
            s4_pre <= s3_pre;
            s4_tcp <= s3_tcp; s4_udp <= s3_udp; s4_local <= s3_local; s4_ctl <= s3_ctl;
            s4_udp0 <= s3_udp0; s4_vip <= s3_vip; s4_big_n <= s3_big_n; s4_big_t <= s3_big_t;
            s4_v6 <= s3_v6;
            s4_tl <= s3_tl; s4_hash0 <= s3_hash0;
            s4_bkt0 <= s3_bkt0; s4_bkt1 <= s3_bkt1;
        end
    end

    // packet key in the compare's order: {saddr..dport as in the entry
    // (entry[AD_LSB +: AD_W]), proto (entry[PR_LSB +: PR_W])}
    logic [AD_W-1:0]  s4_kad;
    logic [KEY_W-1:0] s4_key;
    always_comb begin
        s4_kad = '0;
        s4_kad[LVSNIC_FLOW_ENTRY_SADDR_LSB - AD_LSB +: 32] =
            {s4_h[26*8 +: 8], s4_h[27*8 +: 8], s4_h[28*8 +: 8], s4_h[29*8 +: 8]};
        s4_kad[LVSNIC_FLOW_ENTRY_DADDR_LSB - AD_LSB +: 32] =
            {s4_h[30*8 +: 8], s4_h[31*8 +: 8], s4_h[32*8 +: 8], s4_h[33*8 +: 8]};
        s4_kad[LVSNIC_FLOW_ENTRY_SPORT_LSB - AD_LSB +: 16] = {s4_h[34*8 +: 8], s4_h[35*8 +: 8]};
        s4_kad[LVSNIC_FLOW_ENTRY_DPORT_LSB - AD_LSB +: 16] = {s4_h[36*8 +: 8], s4_h[37*8 +: 8]};
        s4_key = {s4_kad, s4_h[23*8 +: 8]};
    end

    // slot keys in the same order (wiring only)
    logic [8*KEY_W-1:0] s4_ekey;
    always_comb begin
        for (int n = 0; n < 8; n++) begin
            s4_ekey[n*KEY_W +: KEY_W] = {s4_ent[n*ENTRY_W + AD_LSB +: AD_W], s4_ent[n*ENTRY_W + PR_LSB +: PR_W]};
        end
    end

    // partial key compares: 4 chunks of 26 bits per slot (match in S5)
    logic [31:0] s4_eqp;
    always_comb begin
        for (int n = 0; n < 8; n++) begin
            for (int c = 0; c < 4; c++) begin
                s4_eqp[n*4 + c] = (s4_ekey[n*KEY_W + 26*c +: 26] == s4_key[26*c +: 26]);
            end
        end
    end

    // IPv6: the packet's key and each pair's (way w, pair p: slots 4w+2p,
    // 4w+2p+1), in the same order; chunk compares (match in S5)
    logic [AD6_W-1:0]   s4_kad6;
    logic [NC6*C6-1:0]  s4_key6;
    logic [4*NC6*C6-1:0] s4_ekey6;
    logic [4*NC6-1:0]   s4_eqp6;
    always_comb begin
        s4_kad6 = '0;
        for (int i = 0; i < 16; i++) begin
            s4_kad6[LVSNIC_FLOW6_ENTRY_SADDR_LSB - AD6_LSB + 127 - 8*i -: 8] = s4_h[(22 + i)*8 +: 8];
            s4_kad6[LVSNIC_FLOW6_ENTRY_DADDR_LSB - AD6_LSB + 127 - 8*i -: 8] = s4_h[(38 + i)*8 +: 8];
        end
        s4_kad6[LVSNIC_FLOW6_ENTRY_SPORT_LSB - AD6_LSB +: 16] = {s4_h[54*8 +: 8], s4_h[55*8 +: 8]};
        s4_kad6[LVSNIC_FLOW6_ENTRY_DPORT_LSB - AD6_LSB +: 16] = {s4_h[56*8 +: 8], s4_h[57*8 +: 8]};
        s4_key6 = '0;
        s4_key6[KEY6_W-1:0] = {s4_kad6, s4_h[20*8 +: 8]};
        s4_ekey6 = '0;
        for (int p = 0; p < 4; p++) begin
            s4_ekey6[p*NC6*C6 +: KEY6_W] =
                {s4_ent[2*p*ENTRY_W + AD6_LSB +: AD6_W], s4_ent[2*p*ENTRY_W + PR_LSB +: PR_W]};
        end
        for (int p = 0; p < 4; p++) begin
            for (int c = 0; c < NC6; c++) begin
                s4_eqp6[p*NC6 + c] = (s4_ekey6[p*NC6*C6 + C6*c +: C6] == s4_key6[C6*c +: C6]);
            end
        end
    end

    // IPv4 eligibility per slot: valid, ipv6 = 0, and for an odd slot not
    // the tail of a valid IPv6 head in the even slot before it
    logic [7:0] s4_v4, s4_head6;
    always_comb begin
        for (int n = 0; n < 8; n++) begin
            s4_head6[n] = s4_ent[n*ENTRY_W + LVSNIC_FLOW_ENTRY_VALID_LSB]
                          && s4_ent[n*ENTRY_W + LVSNIC_FLOW_ENTRY_IPV6_LSB];
        end
        for (int n = 0; n < 8; n++) begin
            s4_v4[n] = s4_ent[n*ENTRY_W + LVSNIC_FLOW_ENTRY_VALID_LSB]
                       && !s4_ent[n*ENTRY_W + LVSNIC_FLOW_ENTRY_IPV6_LSB]
                       && !((n % 2) == 1 && s4_head6[n - (n % 2)]);
        end
    end

    // flow read token: return the addressed slot and its pair partner
    wire [2:0] s4_tok_n = {s4_tok[B+2], s4_tok[1:0]};
    wire [2:0] s4_tok_p = {s4_tok[B+2], s4_tok[1], !s4_tok[0]};
    always_ff @(posedge clk) begin
        if (rst) begin
            flow_rd_valid <= 1'b0;
        end else begin
            flow_rd_valid <= ce && s4_v && (s4_k == K_FTK);
        end
        if (ce && s4_v && s4_k == K_FTK)
            flow_rd_data <= {s4_ent[s4_tok_p*ENTRY_W +: ENTRY_W], s4_ent[s4_tok_n*ENTRY_W +: ENTRY_W]};
    end

    // ------------------------------------------------------------------
    // S5: first match
    // ------------------------------------------------------------------
    logic            s5_v;
    logic [1:0]      s5_k;
    logic [591:0]    s5_h;
    logic [63:0]     s5_ts;
    logic [31:0]     s5_seq;
    logic [TOKW-1:0] s5_tok;
    logic [4:0]      s5_pre;
    logic            s5_tcp, s5_udp, s5_local, s5_ctl, s5_udp0, s5_vip, s5_big_n, s5_big_t, s5_v6;
    logic [15:0]     s5_tl;
    logic [31:0]     s5_hash0;
    logic [B-1:0]    s5_bkt0, s5_bkt1;
    logic [31:0]     s5_eqp;
    logic [4*NC6-1:0] s5_eqp6;
    logic [3:0]      s5_head6;
    logic [7:0]      s5_val;
    logic [8*A-1:0]  s5_acts;
    logic [7:0]      s5_ackf;

    always_ff @(posedge clk) begin
        if (rst)     s5_v <= 1'b0;
        else if (ce) s5_v <= s4_v;
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s5_k <= s4_k; s5_h <= s4_h; s5_ts <= s4_ts; s5_seq <= s4_seq; s5_tok <= s4_tok;
            s5_pre <= s4_pre;
            s5_tcp <= s4_tcp; s5_udp <= s4_udp; s5_local <= s4_local; s5_ctl <= s4_ctl;
            s5_udp0 <= s4_udp0; s5_vip <= s4_vip; s5_big_n <= s4_big_n; s5_big_t <= s4_big_t;
            s5_v6 <= s4_v6;
            s5_tl <= s4_tl; s5_hash0 <= s4_hash0;
            s5_bkt0 <= s4_bkt0; s5_bkt1 <= s4_bkt1;
            s5_eqp   <= s4_eqp;
            s5_eqp6  <= s4_eqp6;
            for (int p = 0; p < 4; p++) s5_head6[p] <= s4_head6[2*p];
            for (int n = 0; n < 8; n++) begin
                s5_val[n]         <= s4_v4[n];
                s5_acts[n*A +: A] <= s4_ent[n*ENTRY_W + LVSNIC_FLOW_ENTRY_ACTION_LSB +: A];
                s5_ackf[n]        <= s4_ent[n*ENTRY_W + LVSNIC_FLOW_ENTRY_ACK_FAST_LSB];
            end
        end
    end

    // first match (way 0 before way 1, slot 0 before 3): a 3-level binary
    // priority-mux tree over (action index, ack_fast, slot number)
    localparam integer PW = A + 1 + 3;
    logic [7:0]      s5_match;
    logic [8*PW-1:0] s5_l0;
    logic [3:0]      s5_m1;
    logic [4*PW-1:0] s5_l1;
    logic [1:0]      s5_m2;
    logic [2*PW-1:0] s5_l2;
    logic [PW-1:0]   s5_pick;
    always_comb begin
        for (int n = 0; n < 8; n++) begin
            // IPv6: only a pair's head (even slot) matches
            s5_match[n]          = s5_v6 ? ((n % 2) == 0 && s5_head6[n/2] && (&s5_eqp6[(n/2)*NC6 +: NC6]))
                                         : (s5_val[n] && (&s5_eqp[n*4 +: 4]));
            s5_l0[n*PW +: PW]    = {s5_acts[n*A +: A], s5_ackf[n], 3'(n)};
        end
        for (int n = 0; n < 4; n++) begin
            s5_m1[n]          = s5_match[2*n] | s5_match[2*n+1];
            s5_l1[n*PW +: PW] = s5_match[2*n] ? s5_l0[(2*n)*PW +: PW] : s5_l0[(2*n+1)*PW +: PW];
        end
        for (int n = 0; n < 2; n++) begin
            s5_m2[n]          = s5_m1[2*n] | s5_m1[2*n+1];
            s5_l2[n*PW +: PW] = s5_m1[2*n] ? s5_l1[(2*n)*PW +: PW] : s5_l1[(2*n+1)*PW +: PW];
        end
        s5_pick = s5_m2[0] ? s5_l2[0 +: PW] : s5_l2[PW +: PW];
    end
    wire [A-1:0] s5_act   = s5_pick[PW-1 -: A];
    wire         s5_ackfs = s5_pick[3];
    wire [2:0]   s5_sel   = s5_pick[2:0];

    // ------------------------------------------------------------------
    // S6: action RAM address
    // ------------------------------------------------------------------
    logic            s6_v;
    logic [1:0]      s6_k;
    logic [591:0]    s6_h;
    logic [63:0]     s6_ts;
    logic [31:0]     s6_seq;
    logic [TOKW-1:0] s6_tok;
    logic [4:0]      s6_pre;
    logic            s6_tcp, s6_udp, s6_local, s6_ctl, s6_udp0, s6_vip, s6_big_n, s6_big_t, s6_v6;
    logic [15:0]     s6_tl;
    logic [31:0]     s6_hash0;
    logic            s6_hit, s6_ackf;
    logic [A-1:0]    s6_act;
    logic [B+2:0]    s6_slot;

    always_ff @(posedge clk) begin
        if (rst)     s6_v <= 1'b0;
        else if (ce) s6_v <= s5_v;
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s6_k <= s5_k; s6_h <= s5_h; s6_ts <= s5_ts; s6_seq <= s5_seq; s6_tok <= s5_tok;
            s6_pre <= s5_pre;
            s6_tcp <= s5_tcp; s6_udp <= s5_udp; s6_local <= s5_local; s6_ctl <= s5_ctl;
            s6_udp0 <= s5_udp0; s6_vip <= s5_vip; s6_big_n <= s5_big_n; s6_big_t <= s5_big_t;
            s6_v6 <= s5_v6;
            s6_tl <= s5_tl; s6_hash0 <= s5_hash0;
            s6_hit  <= |s5_m2;
            s6_ackf <= s5_ackfs;
            s6_act  <= s5_act;
            s6_slot <= {s5_sel[2], s5_sel[2] ? s5_bkt1 : s5_bkt0, s5_sel[1:0]};
        end
    end

    wire [A-1:0] s6_aaddr = (s6_k == K_ATK) ? s6_tok[A-1:0] : s6_act;

    logic [ACT_W-1:0] s8_actd;
    lvsnic_sdp_ram #(.WIDTH(ACT_W), .ADDR_WIDTH(A), .OUT_REG(1)) u_act_ram (
        .clk(clk),
        .we(init_busy || act_wr_d),
        .waddr(init_busy ? init_cnt[A-1:0] : act_wr_idx),
        .wdata(init_busy ? '0 : act_wr_data),
        .re(ce), .raddr(s6_aaddr), .oce(ce),
        .rdata(s8_actd)
    );

    // ------------------------------------------------------------------
    // S7, S8: carry while the action is read
    // ------------------------------------------------------------------
    logic            s7_v, s8_v;
    logic [1:0]      s7_k, s8_k;
    logic [591:0]    s7_h, s8_h;
    logic [63:0]     s7_ts, s8_ts;
    logic [31:0]     s7_seq, s8_seq;
    logic [4:0]      s7_pre, s8_pre;
    logic            s7_tcp, s7_udp, s7_local, s7_ctl, s7_udp0, s7_vip, s7_big_n, s7_big_t, s7_v6;
    logic            s8_tcp, s8_udp, s8_local, s8_ctl, s8_udp0, s8_vip, s8_big_n, s8_big_t, s8_v6;
    logic [15:0]     s7_tl, s8_tl;
    logic [31:0]     s7_hash0, s8_hash0;
    logic            s7_hit, s7_ackf, s8_hit, s8_ackf;
    logic [A-1:0]    s7_act, s8_act;
    logic [B+2:0]    s7_slot, s8_slot;

    always_ff @(posedge clk) begin
        if (rst) begin
            s7_v <= 1'b0;
            s8_v <= 1'b0;
        end else if (ce) begin
            s7_v <= s6_v;
            s8_v <= s7_v;
        end
    end
    always_ff @(posedge clk) begin
        if (ce) begin
            s7_k <= s6_k; s7_h <= s6_h; s7_ts <= s6_ts; s7_seq <= s6_seq; s7_pre <= s6_pre;
            s7_tcp <= s6_tcp; s7_udp <= s6_udp; s7_local <= s6_local; s7_ctl <= s6_ctl;
            s7_udp0 <= s6_udp0; s7_vip <= s6_vip; s7_big_n <= s6_big_n; s7_big_t <= s6_big_t;
            s7_tl <= s6_tl; s7_hash0 <= s6_hash0; s7_hit <= s6_hit; s7_ackf <= s6_ackf;
            s7_act <= s6_act; s7_slot <= s6_slot; s7_v6 <= s6_v6;

            s8_k <= s7_k; s8_h <= s7_h; s8_ts <= s7_ts; s8_seq <= s7_seq; s8_pre <= s7_pre;
            s8_tcp <= s7_tcp; s8_udp <= s7_udp; s8_local <= s7_local; s8_ctl <= s7_ctl;
            s8_udp0 <= s7_udp0; s8_vip <= s7_vip; s8_big_n <= s7_big_n; s8_big_t <= s7_big_t;
            s8_tl <= s7_tl; s8_hash0 <= s7_hash0; s8_hit <= s7_hit; s8_ackf <= s7_ackf;
            s8_act <= s7_act; s8_slot <= s7_slot; s8_v6 <= s7_v6;
        end
    end

    // action read token
    always_ff @(posedge clk) begin
        if (rst) act_rd_valid <= 1'b0;
        else     act_rd_valid <= ce && s8_v && (s8_k == K_ATK);
        if (ce && s8_v && s8_k == K_ATK) act_rd_data <= s8_actd;
    end

    // ------------------------------------------------------------------
    // S8: rows 13..19 and the rewrite
    // ------------------------------------------------------------------
    wire [1:0]  a_op    = s8_actd[LVSNIC_ACTION_ENTRY_OP_LSB +: LVSNIC_ACTION_ENTRY_OP_WIDTH];
    // ipv6: an address of the other family than the frame's, or an ip6ip6
    // tunnel: to the host like host (docs/hardware.md §3 row 16); an IPv4
    // address in addr's low 32 bits
    wire        a_v6    = s8_actd[LVSNIC_ACTION_ENTRY_IPV6_LSB];
    wire        a_tun0  = (s8_actd[LVSNIC_ACTION_ENTRY_OP_LSB +: LVSNIC_ACTION_ENTRY_OP_WIDTH] == LVSNIC_ACTION_OP_TUNNEL);
    wire        a_host  = s8_actd[LVSNIC_ACTION_ENTRY_HOST_LSB] || (a_v6 != s8_v6) || (s8_v6 && a_tun0);
    wire [127:0] a_addr6 = s8_actd[LVSNIC_ACTION_ENTRY_ADDR_LSB +: 128];
    wire [47:0] a_mac   = s8_actd[LVSNIC_ACTION_ENTRY_MAC_LSB +: LVSNIC_ACTION_ENTRY_MAC_WIDTH];
    wire [31:0] a_addr  = s8_actd[LVSNIC_ACTION_ENTRY_ADDR_LSB +: 32];
    wire [15:0] a_port  = s8_actd[LVSNIC_ACTION_ENTRY_PORT_LSB +: LVSNIC_ACTION_ENTRY_PORT_WIDTH];
    wire [15:0] a_delta = s8_actd[LVSNIC_ACTION_ENTRY_L4_DELTA_LSB +: LVSNIC_ACTION_ENTRY_L4_DELTA_WIDTH];
    wire        a_dnat  = (a_op == LVSNIC_ACTION_OP_NAT_DNAT);
    wire        a_snat  = (a_op == LVSNIC_ACTION_OP_NAT_SNAT);
    wire        a_tun   = (a_op == LVSNIC_ACTION_OP_TUNNEL);

    logic [4:0] s8_reason;
    always_comb begin
        if (!cfg_enable)                               s8_reason = LVSNIC_REASON_DISABLED;
        else if (s8_pre != LVSNIC_REASON_FORWARDED)    s8_reason = s8_pre;
        else if (!s8_hit)                              s8_reason = s8_vip ? LVSNIC_REASON_MISS_VIP
                                                                 : (s8_local ? LVSNIC_REASON_MISS_LOCAL : LVSNIC_REASON_MISS);
        else if (a_host)                               s8_reason = LVSNIC_REASON_ACTION_HOST;
        else if (s8_tcp && (s8_ctl || !s8_ackf))       s8_reason = LVSNIC_REASON_TCP_CONTROL;
        else if (s8_udp && s8_udp0 && (a_dnat || a_snat)) s8_reason = LVSNIC_REASON_UDP_ZERO_CSUM;
        else if (a_tun ? s8_big_t : s8_big_n)          s8_reason = LVSNIC_REASON_TOO_BIG;
        else                                           s8_reason = LVSNIC_REASON_FORWARDED;
    end
    // rows 1..11 all passed: hash_0 / hit / vip are reported (§5)
    wire s8_reached = cfg_enable && (s8_pre == 5'd0 || s8_pre == 5'd11);

    // rewritten 74-byte frame head (IPv4: 54 used), checksum fields not yet filled
    wire [7:0]  o_tos   = s8_h[15*8 +: 8];
    wire [15:0] o_id    = {s8_h[18*8 +: 8], s8_h[19*8 +: 8]};
    wire [15:0] o_tl    = {s8_h[16*8 +: 8], s8_h[17*8 +: 8]};
    wire        o_df    = s8_h[20*8 + 6];
    wire [7:0]  n_ttl   = s8_h[22*8 +: 8] - 8'd1;
    wire [31:0] o_src   = {s8_h[26*8 +: 8], s8_h[27*8 +: 8], s8_h[28*8 +: 8], s8_h[29*8 +: 8]};
    wire [31:0] o_dst   = {s8_h[30*8 +: 8], s8_h[31*8 +: 8], s8_h[32*8 +: 8], s8_h[33*8 +: 8]};
    wire [31:0] n_src   = a_snat ? a_addr : o_src;
    wire [31:0] n_dst   = a_dnat ? a_addr : o_dst;
    wire [15:0] o_l4ck  = s8_v6 ? (s8_tcp ? {s8_h[70*8 +: 8], s8_h[71*8 +: 8]} : {s8_h[60*8 +: 8], s8_h[61*8 +: 8]})
                                : (s8_tcp ? {s8_h[50*8 +: 8], s8_h[51*8 +: 8]} : {s8_h[40*8 +: 8], s8_h[41*8 +: 8]});
    wire [7:0]  n_hl    = s8_h[21*8 +: 8] - 8'd1;

    logic [591:0] s8_rw;       // rewritten head, little-endian byte lanes
    always_comb begin
        s8_rw = s8_h;
        for (int i = 0; i < 6; i++) begin
            s8_rw[i*8 +: 8]       = a_mac[47 - 8*i -: 8];
            s8_rw[(6 + i)*8 +: 8] = cfg_mac[47 - 8*i -: 8];
        end
        if (s8_v6) begin
            // IPv6: hop limit - 1; NAT: address (22 source, 38 destination)
            // and port (54, 56); the L4 checksum at S11
            s8_rw[21*8 +: 8] = n_hl;
            for (int i = 0; i < 16; i++) begin
                if (a_snat) s8_rw[(22 + i)*8 +: 8] = a_addr6[127 - 8*i -: 8];
                if (a_dnat) s8_rw[(38 + i)*8 +: 8] = a_addr6[127 - 8*i -: 8];
            end
            if (a_snat) begin
                s8_rw[54*8 +: 8] = a_port[15:8];
                s8_rw[55*8 +: 8] = a_port[7:0];
            end
            if (a_dnat) begin
                s8_rw[56*8 +: 8] = a_port[15:8];
                s8_rw[57*8 +: 8] = a_port[7:0];
            end
        end else begin
            s8_rw[22*8 +: 8] = n_ttl;
            s8_rw[24*8 +: 8] = 8'h00;
            s8_rw[25*8 +: 8] = 8'h00;
            for (int i = 0; i < 4; i++) begin
                s8_rw[(26 + i)*8 +: 8] = n_src[31 - 8*i -: 8];
                s8_rw[(30 + i)*8 +: 8] = n_dst[31 - 8*i -: 8];
            end
            if (a_snat) begin
                s8_rw[34*8 +: 8] = a_port[15:8];
                s8_rw[35*8 +: 8] = a_port[7:0];
            end
            if (a_dnat) begin
                s8_rw[36*8 +: 8] = a_port[15:8];
                s8_rw[37*8 +: 8] = a_port[7:0];
            end
        end
    end

    // inner header (network order) for the checksum, and the outer header
    logic [159:0] s8_in_be;
    always_comb begin
        for (int i = 0; i < 20; i++) s8_in_be[159 - 8*i -: 8] = s8_rw[(14 + i)*8 +: 8];
    end
    wire        df_copy = cfg_pmtu && o_df;
    wire [7:0]  t_tos   = (o_tos[1:0] == 2'b11) ? {o_tos[7:2], 2'b10} : o_tos;
    wire [159:0] s8_out_be = {8'h45, t_tos, o_tl + 16'd20,
                              df_copy ? 16'h0000 : o_id, df_copy ? 16'h4000 : 16'h0000,
                              n_ttl, 8'd4, 16'h0000, cfg_ip, a_addr};

    logic [15:0] s11_inck, s11_outck, s11_l4ck;
    lvsnic_ip_csum u_inck  (.clk(clk), .ce(ce), .hdr(s8_in_be),  .csum(s11_inck));
    lvsnic_ip_csum u_outck (.clk(clk), .ce(ce), .hdr(s8_out_be), .csum(s11_outck));
    lvsnic_l4_csum u_l4ck  (.clk(clk), .ce(ce), .old_csum(o_l4ck), .delta(a_delta),
                            .is_udp(!s8_tcp), .new_csum(s11_l4ck));

    // ------------------------------------------------------------------
    // S9..S11: carry; trim/realignment numbers at S9
    // ------------------------------------------------------------------
    logic            s9_v, s10_v, s11_v;
    logic [1:0]      s9_k, s10_k, s11_k;
    logic [591:0]    s9_rw, s10_rw, s11_rw;
    logic [159:0]    s9_ob, s10_ob, s11_ob;
    logic [63:0]     s9_ts, s10_ts, s11_ts;
    logic [31:0]     s9_seq, s10_seq, s11_seq;
    logic [4:0]      s9_reason, s10_reason, s11_reason;
    logic            s9_hit, s10_hit, s11_hit;
    logic            s9_vip, s10_vip, s11_vip;
    logic [31:0]     s9_hash, s10_hash, s11_hash;
    logic            s9_tun, s10_tun, s11_tun;
    logic            s9_nat, s10_nat, s11_nat;
    logic            s9_tcp, s10_tcp, s11_tcp;
    logic            s9_v6, s10_v6, s11_v6;
    logic [15:0]     s9_tl, s10_tl, s11_tl;
    logic [A-1:0]    s9_act, s10_act, s11_act;
    logic [B+2:0]    s9_slot, s10_slot, s11_slot;
    logic [JKW-1:0]  s10_j, s11_j, s10_k2, s11_k2;
    logic [LW-1:0]   s10_ol, s11_ol;

    always_ff @(posedge clk) begin
        if (rst) begin
            s9_v  <= 1'b0;
            s10_v <= 1'b0;
            s11_v <= 1'b0;
        end else if (ce) begin
            s9_v  <= s8_v;
            s10_v <= s9_v;
            s11_v <= s10_v;
        end
    end

    wire [16:0] s9_kf = 17'd13 + {1'b0, s9_tl};
    wire [16:0] s9_of = s9_kf + (s9_tun ? 17'd20 : 17'd0);

    always_ff @(posedge clk) begin
        if (ce) begin
            s9_k <= s8_k; s9_rw <= s8_rw; s9_ob <= s8_out_be; s9_ts <= s8_ts; s9_seq <= s8_seq;
            s9_reason <= s8_reason;
            s9_hit  <= s8_reached && s8_hit;
            s9_vip  <= s8_reached && s8_vip;
            s9_hash <= s8_reached ? s8_hash0 : 32'h0;
            s9_tun  <= a_tun && !s8_v6;
            s9_v6   <= s8_v6;
            s9_nat  <= a_dnat || a_snat;
            s9_tcp  <= s8_tcp;
            s9_tl   <= s8_tl;
            s9_act  <= s8_act;
            s9_slot <= s8_slot;

            s10_k <= s9_k; s10_rw <= s9_rw; s10_ob <= s9_ob; s10_ts <= s9_ts; s10_seq <= s9_seq;
            s10_reason <= s9_reason; s10_hit <= s9_hit; s10_vip <= s9_vip; s10_hash <= s9_hash;
            s10_tun <= s9_tun; s10_nat <= s9_nat; s10_tcp <= s9_tcp; s10_tl <= s9_tl;
            s10_act <= s9_act; s10_slot <= s9_slot; s10_v6 <= s9_v6;
            s10_k2   <= s9_kf[16:LW];
            s10_j    <= s9_of[16:LW];
            s10_ol   <= s9_of[LW-1:0];

            s11_k <= s10_k; s11_rw <= s10_rw; s11_ob <= s10_ob; s11_ts <= s10_ts; s11_seq <= s10_seq;
            s11_reason <= s10_reason; s11_hit <= s10_hit; s11_vip <= s10_vip; s11_hash <= s10_hash;
            s11_tun <= s10_tun; s11_nat <= s10_nat; s11_tcp <= s10_tcp; s11_tl <= s10_tl;
            s11_act <= s10_act; s11_slot <= s10_slot; s11_v6 <= s10_v6;
            s11_k2 <= s10_k2; s11_j <= s10_j; s11_ol <= s10_ol;
        end
    end

    // ------------------------------------------------------------------
    // S11: insert checksums, build the 74-byte head, push the decision
    // ------------------------------------------------------------------
    logic [591:0] s11_fin;     // rewritten head with checksums
    always_comb begin
        s11_fin = s11_rw;
        if (!s11_v6) begin
            s11_fin[24*8 +: 8] = s11_inck[15:8];
            s11_fin[25*8 +: 8] = s11_inck[7:0];
        end
        if (s11_nat && s11_v6) begin
            if (s11_tcp) begin
                s11_fin[70*8 +: 8] = s11_l4ck[15:8];
                s11_fin[71*8 +: 8] = s11_l4ck[7:0];
            end else begin
                s11_fin[60*8 +: 8] = s11_l4ck[15:8];
                s11_fin[61*8 +: 8] = s11_l4ck[7:0];
            end
        end else if (s11_nat) begin
            if (s11_tcp) begin
                s11_fin[50*8 +: 8] = s11_l4ck[15:8];
                s11_fin[51*8 +: 8] = s11_l4ck[7:0];
            end else begin
                s11_fin[40*8 +: 8] = s11_l4ck[15:8];
                s11_fin[41*8 +: 8] = s11_l4ck[7:0];
            end
        end
    end

    logic [591:0] s11_head;
    always_comb begin
        if (s11_tun) begin
            s11_head[0 +: 14*8] = s11_fin[0 +: 14*8];
            for (int i = 0; i < 20; i++) begin
                if (i == 10)      s11_head[(14 + i)*8 +: 8] = s11_outck[15:8];
                else if (i == 11) s11_head[(14 + i)*8 +: 8] = s11_outck[7:0];
                else              s11_head[(14 + i)*8 +: 8] = s11_ob[159 - 8*i -: 8];
            end
            s11_head[34*8 +: 40*8] = s11_fin[14*8 +: 40*8];
        end else begin
            s11_head = s11_fin;   // the egress takes 54 bytes (IPv4) or 74 (IPv6)
        end
    end

    assign dec_valid      = ce && s11_v && (s11_k == K_PKT);
    assign dec_fwd        = (s11_reason == LVSNIC_REASON_FORWARDED);
    assign dec_tun        = s11_tun;
    assign dec_v6         = s11_v6;
    assign dec_reason     = s11_reason;
    assign dec_hit        = s11_hit;
    assign dec_vip        = s11_vip;
    assign dec_hash       = s11_hash;
    assign dec_seq        = s11_seq;
    assign dec_ts         = s11_ts;
    assign dec_h          = s11_head;
    assign dec_j          = s11_j;
    assign dec_k          = s11_k2;
    assign dec_outlast_m1 = s11_ol;
    assign dec_act        = s11_act;
    assign dec_slot       = s11_slot;
    assign dec_tl         = s11_tl;

endmodule

`default_nettype wire
