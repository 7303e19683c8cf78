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
//       rewritten header (checksum fields pending), the outer IPIP or
//       IPv6 header;
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
// to the host as ACTION_HOST, exactly like host = 1, but for TUNNEL: an
// IPv4 TUNNEL action of an IPv6 frame goes to the host (IPv6 in IPv4: the
// kernel's outer ID is random), an IPv6 one of either family's frame is
// forwarded with a 40-byte IPv6 outer header (ip6ip6, IPv4 in IPv6) when
// IPV6 = 1; its head is Ethernet, the outer header and the inner packet's
// first 20 bytes, the rest follows shifted by 40.
//
// Flow RAMs: 8 (2 ways x 4 slots) x 2^FLOW_BUCKETS_LOG2 x 160 bit
// (lvsnic_flow_entry). Action RAM: 2^ACTION_LOG2 x 256 bit
// (lvsnic_action_entry).
`default_nettype none
`include "lvsnic_decision.vh"

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
    input  wire [127:0]                  cfg_ip6,      // source of IPv6 tunnel headers
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

    // decisions to the egress: the decision bundle (lvsnic_decision.vh)
    output logic                         dec_valid,
    output logic [`LVSNIC_DEC_W($clog2(DATA_WIDTH/8), ACTION_LOG2, FLOW_BUCKETS_LOG2)-1:0] dec_data,
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

`define LVSNIC_DECISION_BODY
`include "lvsnic_decision.vh"
`undef LVSNIC_DECISION_BODY

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
        if (DEC_W != `LVSNIC_DEC_W(LW, A, B)) begin : g_dec_check
            $error("lvsnic_lookup: DEC_W and `LVSNIC_DEC_W disagree (hw/rtl/lvsnic_decision.vh)");
            lvsnic_lookup_decision_mismatch u_fail ();
        end
        if (!LAYOUT_OK) begin : g_layout_check
            $error("lvsnic_lookup: the entry layouts of hw/rtl/lvsnic_regs.vh no longer fit the key compare");
            lvsnic_lookup_layout_mismatch u_fail ();
        end
    endgenerate

    localparam logic [1:0] K_PKT = 2'd0;
    localparam logic [1:0] K_FTK = 2'd1;   // flow read token
    localparam logic [1:0] K_ATK = 2'd2;   // action read token

    // ------------------------------------------------------------------
    // header byte offsets (docs/hardware.md §3): byte i of the frame is
    // at [8i+7:8i] of a head; multi-byte fields in network order
    // ------------------------------------------------------------------
    localparam integer ETH_DST   = 0;
    localparam integer ETH_SRC   = 6;
    localparam integer ETH_TYPE  = 12;
    localparam integer IP_VER    = 14;    // version (high nibble), IPv4 IHL (low)
    localparam integer IP4_TOS   = 15;
    localparam integer IP4_TL    = 16;
    localparam integer IP4_ID    = 18;
    localparam integer IP4_FRAG  = 20;    // flags, fragment offset
    localparam integer IP4_TTL   = 22;
    localparam integer IP4_PROTO = 23;
    localparam integer IP4_CSUM  = 24;
    localparam integer IP4_SRC   = 26;
    localparam integer IP4_DST   = 30;
    localparam integer IP4_L4    = 34;    // TCP/UDP after a 20-byte IPv4 header
    localparam integer IP6_PLEN  = 18;
    localparam integer IP6_NH    = 20;
    localparam integer IP6_HL    = 21;
    localparam integer IP6_SRC   = 22;
    localparam integer IP6_DST   = 38;
    localparam integer IP6_L4    = 54;    // TCP/UDP after the 40-byte IPv6 header
    // within the TCP or UDP header
    localparam integer L4_SPORT  = 0;
    localparam integer L4_DPORT  = 2;
    localparam integer UDP_CSUM  = 6;
    localparam integer TCP_FLAGS = 13;
    localparam integer TCP_CSUM  = 16;
    localparam integer HW        = 74 * 8; // a head: the first 74 bytes

    function automatic logic [15:0] be16(input logic [HW-1:0] h, input integer off);
        be16 = {h[off*8 +: 8], h[(off + 1)*8 +: 8]};
    endfunction
    function automatic logic [31:0] be32(input logic [HW-1:0] h, input integer off);
        be32 = {be16(h, off), be16(h, off + 2)};
    endfunction
    function automatic logic [127:0] be128(input logic [HW-1:0] h, input integer off);
        for (int i = 0; i < 16; i++) be128[127 - 8*i -: 8] = h[(off + i)*8 +: 8];
    endfunction

    // ------------------------------------------------------------------
    // per-frame flags, set by the parse (S1; VIP and TOO_BIG at S2) and
    // carried in st_f: bit positions
    // ------------------------------------------------------------------
    localparam integer F_RUNT  = 0;     // row 1: shorter than an Ethernet header
    localparam integer F_MCAST = 1;     // row 2
    localparam integer F_OTHER = 2;     // row 3: destination MAC not ours
    localparam integer F_VLAN  = 3;     // row 4
    localparam integer F_NONIP = 4;     // row 5
    localparam integer F_MALF  = 5;     // row 6
    localparam integer F_OPTS  = 6;     // row 7: IPv4 options, IPv6 extension headers
    localparam integer F_FRAG  = 7;     // row 9
    localparam integer F_TCP   = 8;
    localparam integer F_UDP   = 9;
    localparam integer F_L4TR  = 10;    // row 11
    localparam integer F_TTL   = 11;    // row 12: TTL / hop limit <= 1
    localparam integer F_LOCAL = 12;    // destination is the director's IP
    localparam integer F_CTL   = 13;    // TCP SYN/FIN/RST or no ACK
    localparam integer F_UDP0  = 14;    // UDP checksum 0
    localparam integer F_V6    = 15;    // IPv6 frame
    localparam integer F_VIP   = 16;    // (S2) destination is a VIP
    localparam integer F_BIG_N = 17;    // (S2) longer than MTU
    localparam integer F_BIG_T = 18;    // (S2) longer than MTU with IPIP's 20 bytes
    localparam integer F_BIG_6 = 19;    // (S2) longer than MTU with an IPv6 outer header's 40
    localparam integer FW      = 20;

    // ------------------------------------------------------------------
    // stage arrays: index = stage (S0..S11). Everything a stage passes on
    // unchanged moves one index per cycle (on ce); what a stage computes
    // enters its array at that stage's index.
    // ------------------------------------------------------------------
    localparam integer NS = 12;
    logic [NS-1:0]            st_v;      // stage holds a header or a read token
    logic [NS-1:0][1:0]       st_k;      // K_PKT / K_FTK / K_ATK
    logic [NS-1:0][63:0]      st_ts;
    logic [NS-1:0][31:0]      st_seq;
    logic [8:0][HW-1:0]       st_h;      // the received head (S0..S8)
    logic [6:0][TOKW-1:0]     st_tok;    // read-token index (S0..S6)
    logic [NS-1:1][FW-1:0]    st_f;      // flags F_* (S1..S11)
    logic [NS-1:2][15:0]      st_tl;     // IP packet length (S2..S11)
    logic [8:3][31:0]         st_hash;   // hash_0 (S3..S8)
    logic [5:3][B-1:0]        st_bkt0, st_bkt1;  // flow buckets (S3..S5)
    logic [8:4][4:0]          st_pre;    // reason of rows 1..12 (S4..S8)
    logic [8:6]               st_hit, st_ackf;   // flow hit, its ack_fast (S6..S8)
    logic [NS-1:6][A-1:0]     st_act;    // action index (S6..S11)
    logic [NS-1:6][B+2:0]     st_slot;   // flow slot of the hit (S6..S11)
    // the decision taking shape (S9..S11)
    logic [NS-1:9][HW-1:0]    st_rw;     // rewritten head, checksums pending
    logic [NS-1:9][159:0]     st_ob;     // IPIP outer header, network order (checksum pending)
    logic [NS-1:9][4:0]       st_reason;
    logic [NS-1:9]            st_dhit, st_dvip, st_tun, st_tun6, st_nat;
    logic [NS-1:9][31:0]      st_dhash;
    logic [NS-1:10][JKW-1:0]  st_j, st_kb;  // output beats - 1, beat of the last IP byte
    logic [NS-1:10][LW-1:0]   st_ol;     // bytes in the last output beat - 1

    // ------------------------------------------------------------------
    // control: clock enable, credits, init sweep
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
    // the carried state: S0 load, then one stage per cycle
    // ------------------------------------------------------------------
    logic [6:0] s0_nb;                     // header bytes present (S0 only)

    always_ff @(posedge clk) begin
        if (rst)     st_v <= '0;
        else if (ce) st_v <= {st_v[NS-2:0], hdr_push || tok_push};
    end
    // ------------------------------------------------------------------
    // S0 -> S1: parse
    // ------------------------------------------------------------------
    wire [HW-1:0] h0 = st_h[0];
    wire [47:0] f_dmac  = {h0[ETH_DST*8 +: 8], h0[(ETH_DST+1)*8 +: 8], h0[(ETH_DST+2)*8 +: 8],
                           h0[(ETH_DST+3)*8 +: 8], h0[(ETH_DST+4)*8 +: 8], h0[(ETH_DST+5)*8 +: 8]};
    wire [15:0] f_etype = be16(h0, ETH_TYPE);
    wire [3:0]  f_ver   = h0[IP_VER*8 + 4 +: 4];
    wire [3:0]  f_ihl   = h0[IP_VER*8 +: 4];
    wire [15:0] f_tl    = be16(h0, IP4_TL);
    wire [13:0] f_frag  = {h0[IP4_FRAG*8 +: 6], h0[(IP4_FRAG+1)*8 +: 8]};   // MF + offset
    wire [7:0]  f_ttl   = h0[IP4_TTL*8 +: 8];
    wire [7:0]  f_proto = h0[IP4_PROTO*8 +: 8];
    wire [31:0] f_src   = be32(h0, IP4_SRC);
    wire [31:0] f_dst   = be32(h0, IP4_DST);
    wire [15:0] f_sport = be16(h0, IP4_L4 + L4_SPORT);
    wire [15:0] f_dport = be16(h0, IP4_L4 + L4_DPORT);
    wire [15:0] f_ucsum = be16(h0, IP4_L4 + UDP_CSUM);
    wire [3:0]  f_tflag = {h0[(IP4_L4+TCP_FLAGS)*8 + 4], h0[(IP4_L4+TCP_FLAGS)*8 +: 3]};  // ACK, RST SYN FIN

    wire         f_v6     = (IPV6 != 0) && (f_etype == 16'h86DD);
    wire [15:0]  f6_plen  = be16(h0, IP6_PLEN);
    wire [7:0]   f6_nh    = h0[IP6_NH*8 +: 8];
    wire [7:0]   f6_hl    = h0[IP6_HL*8 +: 8];
    wire [127:0] f6_src   = be128(h0, IP6_SRC);
    wire [127:0] f6_dst   = be128(h0, IP6_DST);
    wire [15:0]  f6_sport = be16(h0, IP6_L4 + L4_SPORT);
    wire [15:0]  f6_dport = be16(h0, IP6_L4 + L4_DPORT);
    wire [15:0]  f6_ucsum = be16(h0, IP6_L4 + UDP_CSUM);
    wire [3:0]   f6_tflag = {h0[(IP6_L4+TCP_FLAGS)*8 + 4], h0[(IP6_L4+TCP_FLAGS)*8 +: 3]};
    // extension headers the kernel walks (ipv6_ext_hdr) but Fragment and
    // No Next Header: Hop-by-Hop, Routing, AH, Destination Options
    wire        f6_ext   = (f6_nh == 8'd0) || (f6_nh == 8'd43) || (f6_nh == 8'd51) || (f6_nh == 8'd60);
    wire [7:0]  f_l4p    = f_v6 ? f6_nh : f_proto;

    // 20-byte IPv4 header in network order for the checksum module
    logic [159:0] s0_ip_be;
    always_comb begin
        for (int i = 0; i < 20; i++) s0_ip_be[159 - 8*i -: 8] = h0[(IP_VER + i)*8 +: 8];
    end

    logic [FW-1:0] s0_f;                   // the flags of rows 1..12 and the L4 facts
    always_comb begin
        s0_f          = '0;
        s0_f[F_RUNT]  = (s0_nb < 7'd14);
        s0_f[F_MCAST] = f_dmac[40];
        s0_f[F_OTHER] = (f_dmac != cfg_mac);
        s0_f[F_VLAN]  = (f_etype == 16'h8100);
        s0_f[F_NONIP] = (f_etype != 16'h0800) && !f_v6;
        s0_f[F_V6]    = f_v6;
        s0_f[F_MALF]  = f_v6 ? ((s0_nb < 7'd54) || (f_ver != 4'd6))
                             : ((s0_nb < 7'd34) || (f_ver != 4'd4) || (f_ihl < 4'd5)
                                || (f_tl < {10'b0, f_ihl, 2'b00}));
        s0_f[F_OPTS]  = f_v6 ? f6_ext : (f_ihl > 4'd5);
        s0_f[F_FRAG]  = f_v6 ? (f6_nh == 8'd44) : (f_frag[13] || (f_frag[12:0] != 13'd0));
        s0_f[F_TCP]   = (f_l4p == 8'd6);
        s0_f[F_UDP]   = (f_l4p == 8'd17);
        // row 11: IP length too short for the fixed L4 header, or the
        // frame ends before it (IPv4: 54 bytes for TCP, 42 for UDP;
        // IPv6: 74, 62)
        if (f_v6)
            s0_f[F_L4TR] = (f_l4p == 8'd6) ? ((f6_plen < 16'd20) || (s0_nb < 7'd74))
                                           : ((f6_plen < 16'd8) || (s0_nb < 7'd62));
        else
            s0_f[F_L4TR] = (f_l4p == 8'd6) ? ((f_tl < 16'd40) || (s0_nb < 7'd54))
                                           : ((f_tl < 16'd28) || (s0_nb < 7'd42));
        s0_f[F_TTL]   = f_v6 ? (f6_hl <= 8'd1) : (f_ttl <= 8'd1);
        s0_f[F_LOCAL] = !f_v6 && (f_dst == cfg_ip);
        s0_f[F_CTL]   = f_v6 ? ((f6_tflag[2:0] != 3'b000) || !f6_tflag[3])
                             : ((f_tflag[2:0] != 3'b000) || !f_tflag[3]);   // SYN/FIN/RST or no ACK
        s0_f[F_UDP0]  = ((f_v6 ? f6_ucsum : f_ucsum) == 16'h0000);
    end

    // S1-only: the VIP compares and the lengths for the S2 flags
    logic [VIP_COUNT-1:0] s1_vipm;
    logic [16:0]          s1_tl;           // IP packet length (IPv6: 40 + payload length)
    logic [16:0]          s1_tl20;
    logic [16:0]          s1_tl40;         // with an IPv6 outer header
    always_ff @(posedge clk) begin
        if (ce) begin
            s1_tl   <= f_v6 ? 17'd40 + {1'b0, f6_plen} : {1'b0, f_tl};
            s1_tl20 <= {1'b0, f_tl} + 17'd20;
            s1_tl40 <= f_v6 ? 17'd80 + {1'b0, f6_plen} : {1'b0, f_tl} + 17'd40;
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
    // S1 -> S2: VIP, TOO_BIG; S2: flow RAM read address
    // ------------------------------------------------------------------
    // the S2 flags: VIP and TOO_BIG join the frame's flags
    wire s1_vip   = |s1_vipm;
    wire s1_big_n = (s1_tl > {1'b0, cfg_mtu});
    wire s1_big_t = (s1_tl20 > {1'b0, cfg_mtu});
    wire s1_big_6 = (IPV6 != 0) && (s1_tl40 > {1'b0, cfg_mtu});

    wire         s2_v6    = st_f[2][F_V6];
    wire [31:0]  s2_hash0 = s2_v6 ? s2_h6_0 : s2_h4_0;
    wire [31:0]  s2_hash1 = s2_v6 ? s2_h6_1 : s2_h4_1;
    wire [B-1:0] s2_bkt0 = (st_k[2] == K_FTK) ? st_tok[2][B+1:2] : s2_hash0[B-1:0];
    wire [B-1:0] s2_bkt1 = (st_k[2] == K_FTK) ? st_tok[2][B+1:2] : s2_hash1[B-1:0];

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
    // S3: rows 1..12 -> first matching row's reason, FORWARDED (0) if none
    // ------------------------------------------------------------------
    wire [FW-1:0] f3 = st_f[3];
    logic [4:0] s3_pre;
    always_comb begin
        if      (f3[F_RUNT])                s3_pre = LVSNIC_REASON_MALFORMED;
        else if (f3[F_MCAST])               s3_pre = LVSNIC_REASON_L2_MULTICAST;
        else if (f3[F_OTHER])               s3_pre = LVSNIC_REASON_L2_OTHER_HOST;
        else if (f3[F_VLAN])                s3_pre = LVSNIC_REASON_VLAN;
        else if (f3[F_NONIP])               s3_pre = LVSNIC_REASON_NON_IPV4;
        else if (f3[F_MALF])                s3_pre = LVSNIC_REASON_MALFORMED;
        else if (f3[F_OPTS])                s3_pre = LVSNIC_REASON_IP_OPTIONS;
        else if (!f3[F_V6] && s3_ipck != 16'h0) s3_pre = LVSNIC_REASON_IP_CHECKSUM;
        else if (f3[F_FRAG])                s3_pre = LVSNIC_REASON_FRAGMENT;
        else if (!f3[F_TCP] && !f3[F_UDP])  s3_pre = LVSNIC_REASON_NOT_TCP_UDP;
        else if (f3[F_L4TR])                s3_pre = LVSNIC_REASON_L4_TRUNCATED;
        else if (f3[F_TTL])                 s3_pre = LVSNIC_REASON_TTL;
        else                                s3_pre = LVSNIC_REASON_FORWARDED;
    end

    // ------------------------------------------------------------------
    // S4: key compares
    // ------------------------------------------------------------------
    wire [HW-1:0] h4 = st_h[4];

    // packet key in the compare's order: {saddr..dport as in the entry
    // (entry[AD_LSB +: AD_W]), proto (entry[PR_LSB +: PR_W])}
    logic [AD_W-1:0]  s4_kad;
    logic [KEY_W-1:0] s4_key;
    always_comb begin
        s4_kad = '0;
        s4_kad[LVSNIC_FLOW_ENTRY_SADDR_LSB - AD_LSB +: 32] = be32(h4, IP4_SRC);
        s4_kad[LVSNIC_FLOW_ENTRY_DADDR_LSB - AD_LSB +: 32] = be32(h4, IP4_DST);
        s4_kad[LVSNIC_FLOW_ENTRY_SPORT_LSB - AD_LSB +: 16] = be16(h4, IP4_L4 + L4_SPORT);
        s4_kad[LVSNIC_FLOW_ENTRY_DPORT_LSB - AD_LSB +: 16] = be16(h4, IP4_L4 + L4_DPORT);
        s4_key = {s4_kad, h4[IP4_PROTO*8 +: 8]};
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
        s4_kad6[LVSNIC_FLOW6_ENTRY_SADDR_LSB - AD6_LSB +: 128] = be128(h4, IP6_SRC);
        s4_kad6[LVSNIC_FLOW6_ENTRY_DADDR_LSB - AD6_LSB +: 128] = be128(h4, IP6_DST);
        s4_kad6[LVSNIC_FLOW6_ENTRY_SPORT_LSB - AD6_LSB +: 16]  = be16(h4, IP6_L4 + L4_SPORT);
        s4_kad6[LVSNIC_FLOW6_ENTRY_DPORT_LSB - AD6_LSB +: 16]  = be16(h4, IP6_L4 + L4_DPORT);
        s4_key6 = '0;
        s4_key6[KEY6_W-1:0] = {s4_kad6, h4[IP6_NH*8 +: 8]};
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
    wire [TOKW-1:0] tok4 = st_tok[4];
    wire [2:0] s4_tok_n = {tok4[B+2], tok4[1:0]};
    wire [2:0] s4_tok_p = {tok4[B+2], tok4[1], !tok4[0]};
    always_ff @(posedge clk) begin
        if (rst) begin
            flow_rd_valid <= 1'b0;
        end else begin
            flow_rd_valid <= ce && st_v[4] && (st_k[4] == K_FTK);
        end
        if (ce && st_v[4] && st_k[4] == K_FTK)
            flow_rd_data <= {s4_ent[s4_tok_p*ENTRY_W +: ENTRY_W], s4_ent[s4_tok_n*ENTRY_W +: ENTRY_W]};
    end

    // S4 -> S5: the compare results and each slot's action and ack_fast
    logic [31:0]      s5_eqp;
    logic [4*NC6-1:0] s5_eqp6;
    logic [3:0]       s5_head6;
    logic [7:0]       s5_val;
    logic [8*A-1:0]   s5_acts;
    logic [7:0]       s5_ackf;
    always_ff @(posedge clk) begin
        if (ce) begin
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

    // ------------------------------------------------------------------
    // S5: first match (way 0 before way 1, slot 0 before 3): a 3-level
    // binary priority-mux tree over (action index, ack_fast, slot number)
    // ------------------------------------------------------------------
    localparam integer PW = A + 1 + 3;
    wire             s5_v6 = st_f[5][F_V6];
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
    // S6: action RAM address; S7, S8: the action is read
    // ------------------------------------------------------------------
    wire [TOKW-1:0] tok6 = st_tok[6];
    wire [A-1:0] s6_aaddr = (st_k[6] == K_ATK) ? tok6[A-1:0] : st_act[6];

    logic [ACT_W-1:0] s8_actd;
    lvsnic_sdp_ram #(.WIDTH(ACT_W), .ADDR_WIDTH(A), .OUT_REG(1)) u_act_ram (
        .clk(clk),
        .we(init_busy || act_wr_d),
        .waddr(init_busy ? init_cnt[A-1:0] : act_wr_idx),
        .wdata(init_busy ? '0 : act_wr_data),
        .re(ce), .raddr(s6_aaddr), .oce(ce),
        .rdata(s8_actd)
    );

    // action read token
    always_ff @(posedge clk) begin
        if (rst) act_rd_valid <= 1'b0;
        else     act_rd_valid <= ce && st_v[8] && (st_k[8] == K_ATK);
        if (ce && st_v[8] && st_k[8] == K_ATK) act_rd_data <= s8_actd;
    end

    // ------------------------------------------------------------------
    // S8: rows 13..19 and the rewrite
    // ------------------------------------------------------------------
    wire [HW-1:0] h8  = st_h[8];
    wire [FW-1:0] f8  = st_f[8];
    wire          s8_v6  = f8[F_V6];
    wire          s8_tcp = f8[F_TCP];
    wire [4:0]    s8_pre = st_pre[8];
    wire          s8_hit = st_hit[8];

    wire [1:0]  a_op    = s8_actd[LVSNIC_ACTION_ENTRY_OP_LSB +: LVSNIC_ACTION_ENTRY_OP_WIDTH];
    // ipv6: the address's family. ROUTE and NAT of a frame of the other
    // family, and TUNNEL of an IPv6 frame into IPv4 (the kernel's outer ID
    // is random), go to the host like host (docs/hardware.md §3 row 16);
    // TUNNEL into IPv6 (ip6ip6, IPv4 in IPv6) is built when IPV6 = 1. An
    // IPv4 address is in addr's low 32 bits.
    wire        a_v6    = s8_actd[LVSNIC_ACTION_ENTRY_IPV6_LSB];
    wire        a_tun0  = (s8_actd[LVSNIC_ACTION_ENTRY_OP_LSB +: LVSNIC_ACTION_ENTRY_OP_WIDTH] == LVSNIC_ACTION_OP_TUNNEL);
    wire        a_host  = s8_actd[LVSNIC_ACTION_ENTRY_HOST_LSB]
                       || (a_tun0 ? (a_v6 ? (IPV6 == 0) : s8_v6) : (a_v6 != s8_v6));
    wire        a_tun6  = (IPV6 != 0) && a_tun0 && a_v6;   // outer IPv6 header (with !a_host)
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
        else if (!s8_hit)                              s8_reason = f8[F_VIP] ? LVSNIC_REASON_MISS_VIP
                                                                 : (f8[F_LOCAL] ? LVSNIC_REASON_MISS_LOCAL : LVSNIC_REASON_MISS);
        else if (a_host)                               s8_reason = LVSNIC_REASON_ACTION_HOST;
        else if (s8_tcp && (f8[F_CTL] || !st_ackf[8])) s8_reason = LVSNIC_REASON_TCP_CONTROL;
        else if (f8[F_UDP] && f8[F_UDP0] && (a_dnat || a_snat)) s8_reason = LVSNIC_REASON_UDP_ZERO_CSUM;
        else if (a_tun ? (a_tun6 ? f8[F_BIG_6] : f8[F_BIG_T]) : f8[F_BIG_N])
                                                       s8_reason = LVSNIC_REASON_TOO_BIG;
        else                                           s8_reason = LVSNIC_REASON_FORWARDED;
    end
    // rows 1..11 all passed: hash_0 / hit / vip are reported (§5)
    wire s8_reached = cfg_enable && (s8_pre == 5'd0 || s8_pre == 5'd11);

    // rewritten 74-byte frame head (IPv4: 54 used), checksum fields not yet filled
    wire [7:0]  o_tos   = h8[IP4_TOS*8 +: 8];
    wire [15:0] o_id    = be16(h8, IP4_ID);
    wire [15:0] o_tl    = be16(h8, IP4_TL);
    wire        o_df    = h8[IP4_FRAG*8 + 6];
    wire [7:0]  n_ttl   = h8[IP4_TTL*8 +: 8] - 8'd1;
    wire [31:0] o_src   = be32(h8, IP4_SRC);
    wire [31:0] o_dst   = be32(h8, IP4_DST);
    wire [31:0] n_src   = a_snat ? a_addr : o_src;
    wire [31:0] n_dst   = a_dnat ? a_addr : o_dst;
    wire [15:0] o_l4ck  = s8_v6 ? (s8_tcp ? be16(h8, IP6_L4 + TCP_CSUM) : be16(h8, IP6_L4 + UDP_CSUM))
                                : (s8_tcp ? be16(h8, IP4_L4 + TCP_CSUM) : be16(h8, IP4_L4 + UDP_CSUM));
    wire [7:0]  n_hl    = h8[IP6_HL*8 +: 8] - 8'd1;

    logic [HW-1:0] s8_rw;      // rewritten head, little-endian byte lanes
    always_comb begin
        s8_rw = h8;
        for (int i = 0; i < 6; i++) begin
            s8_rw[(ETH_DST + i)*8 +: 8] = a_mac[47 - 8*i -: 8];
            s8_rw[(ETH_SRC + i)*8 +: 8] = cfg_mac[47 - 8*i -: 8];
        end
        if (s8_v6) begin
            // IPv6: hop limit - 1; NAT: address and port; the L4 checksum at S11
            s8_rw[IP6_HL*8 +: 8] = n_hl;
            for (int i = 0; i < 16; i++) begin
                if (a_snat) s8_rw[(IP6_SRC + i)*8 +: 8] = a_addr6[127 - 8*i -: 8];
                if (a_dnat) s8_rw[(IP6_DST + i)*8 +: 8] = a_addr6[127 - 8*i -: 8];
            end
            if (a_snat) begin
                s8_rw[(IP6_L4 + L4_SPORT)*8 +: 8]     = a_port[15:8];
                s8_rw[(IP6_L4 + L4_SPORT + 1)*8 +: 8] = a_port[7:0];
            end
            if (a_dnat) begin
                s8_rw[(IP6_L4 + L4_DPORT)*8 +: 8]     = a_port[15:8];
                s8_rw[(IP6_L4 + L4_DPORT + 1)*8 +: 8] = a_port[7:0];
            end
        end else begin
            s8_rw[IP4_TTL*8 +: 8]        = n_ttl;
            s8_rw[IP4_CSUM*8 +: 8]       = 8'h00;
            s8_rw[(IP4_CSUM + 1)*8 +: 8] = 8'h00;
            for (int i = 0; i < 4; i++) begin
                s8_rw[(IP4_SRC + i)*8 +: 8] = n_src[31 - 8*i -: 8];
                s8_rw[(IP4_DST + i)*8 +: 8] = n_dst[31 - 8*i -: 8];
            end
            if (a_snat) begin
                s8_rw[(IP4_L4 + L4_SPORT)*8 +: 8]     = a_port[15:8];
                s8_rw[(IP4_L4 + L4_SPORT + 1)*8 +: 8] = a_port[7:0];
            end
            if (a_dnat) begin
                s8_rw[(IP4_L4 + L4_DPORT)*8 +: 8]     = a_port[15:8];
                s8_rw[(IP4_L4 + L4_DPORT + 1)*8 +: 8] = a_port[7:0];
            end
        end
    end

    // inner header (network order) for the checksum, and the outer header
    logic [159:0] s8_in_be;
    always_comb begin
        for (int i = 0; i < 20; i++) s8_in_be[159 - 8*i -: 8] = s8_rw[(IP_VER + i)*8 +: 8];
    end
    wire        df_copy = cfg_pmtu && o_df;
    wire [7:0]  t_tos   = (o_tos[1:0] == 2'b11) ? {o_tos[7:2], 2'b10} : o_tos;
    wire [159:0] s8_out_be = {8'h45, t_tos, o_tl + 16'd20,
                              df_copy ? 16'h0000 : o_id, df_copy ? 16'h4000 : 16'h0000,
                              n_ttl, 8'd4, 16'h0000, cfg_ip, a_addr};

    // the IPv6 outer header (network order, no checksum): traffic class =
    // the inner TOS / traffic class ECN-encapsulated, flow label 0, payload
    // length = the inner packet length, next header 4 or 41, hop limit =
    // the inner one after the decrement; and the head it makes: Ethernet
    // (EtherType 0x86DD), the 40 bytes, the inner packet's first 20 bytes
    // (IPv4: its header, checksum inserted at S11; IPv6: up to the source
    // address's 4th byte; the rest follows from the received frame)
    wire [7:0]  i_tc    = s8_v6 ? {h8[IP_VER*8 +: 4], h8[(IP_VER+1)*8 + 4 +: 4]} : o_tos;
    wire [7:0]  t_tc    = (i_tc[1:0] == 2'b11) ? {i_tc[7:2], 2'b10} : i_tc;
    wire [319:0] s8_out6_be = {4'h6, t_tc, 20'h0, st_tl[8], s8_v6 ? 8'd41 : 8'd4,
                               s8_v6 ? n_hl : n_ttl, cfg_ip6, a_addr6};
    logic [HW-1:0] s8_rw6;
    always_comb begin
        s8_rw6 = '0;
        s8_rw6[0 +: ETH_TYPE*8] = s8_rw[0 +: ETH_TYPE*8];
        s8_rw6[ETH_TYPE*8 +: 8]       = 8'h86;
        s8_rw6[(ETH_TYPE + 1)*8 +: 8] = 8'hDD;
        for (int i = 0; i < 40; i++) s8_rw6[(IP_VER + i)*8 +: 8] = s8_out6_be[319 - 8*i -: 8];
        s8_rw6[(IP_VER + 40)*8 +: 20*8] = s8_rw[IP_VER*8 +: 20*8];
    end
    wire s8_t6 = a_tun && a_tun6;

    logic [15:0] s11_inck, s11_outck, s11_l4ck;
    lvsnic_ip_csum u_inck  (.clk(clk), .ce(ce), .hdr(s8_in_be),  .csum(s11_inck));
    lvsnic_ip_csum u_outck (.clk(clk), .ce(ce), .hdr(s8_out_be), .csum(s11_outck));
    lvsnic_l4_csum u_l4ck  (.clk(clk), .ce(ce), .old_csum(o_l4ck), .delta(a_delta),
                            .is_udp(!s8_tcp), .new_csum(s11_l4ck));

    // ------------------------------------------------------------------
    // S9 -> S10: trim/realignment numbers
    // ------------------------------------------------------------------
    wire [16:0] s9_kf = 17'd13 + {1'b0, st_tl[9]};
    wire [16:0] s9_of = s9_kf + (st_tun[9] ? 17'd20 : (st_tun6[9] ? 17'd40 : 17'd0));

    // ------------------------------------------------------------------
    // the stage arrays advance (one block, as the arrays are one variable each)
    // ------------------------------------------------------------------
    always_ff @(posedge clk) begin
        if (ce) begin
            st_k[0]   <= tok_push ? (tok_is_act ? K_ATK : K_FTK) : K_PKT;
            st_h[0]   <= hdr_data;
            st_ts[0]  <= hdr_ts;
            st_seq[0] <= hdr_seq;
            st_tok[0] <= tok_idx;
            s0_nb     <= hdr_bytes;
            // (whole slices, not loops: one assignment per array)
            st_k[NS-1:1]      <= st_k[NS-2:0];
            st_ts[NS-1:1]     <= st_ts[NS-2:0];
            st_seq[NS-1:1]    <= st_seq[NS-2:0];
            st_h[8:1]         <= st_h[7:0];
            st_tok[6:1]       <= st_tok[5:0];
            st_f[NS-1:2]      <= st_f[NS-2:1];
            st_tl[NS-1:3]     <= st_tl[NS-2:2];
            st_hash[8:4]      <= st_hash[7:3];
            st_bkt0[5:4]      <= st_bkt0[4:3];
            st_bkt1[5:4]      <= st_bkt1[4:3];
            st_pre[8:5]       <= st_pre[7:4];
            st_hit[8:7]       <= st_hit[7:6];
            st_ackf[8:7]      <= st_ackf[7:6];
            st_act[NS-1:7]    <= st_act[NS-2:6];
            st_slot[NS-1:7]   <= st_slot[NS-2:6];
            st_rw[NS-1:10]    <= st_rw[NS-2:9];
            st_ob[NS-1:10]    <= st_ob[NS-2:9];
            st_reason[NS-1:10] <= st_reason[NS-2:9];
            st_dhit[NS-1:10]  <= st_dhit[NS-2:9];
            st_dvip[NS-1:10]  <= st_dvip[NS-2:9];
            st_dhash[NS-1:10] <= st_dhash[NS-2:9];
            st_tun[NS-1:10]   <= st_tun[NS-2:9];
            st_tun6[NS-1:10]  <= st_tun6[NS-2:9];
            st_nat[NS-1:10]   <= st_nat[NS-2:9];
            st_j[NS-1]        <= st_j[NS-2];
            st_kb[NS-1]       <= st_kb[NS-2];
            st_ol[NS-1]       <= st_ol[NS-2];

            // what each stage computes enters at its index
            st_f[1]      <= s0_f;                       // S1: parse
            st_f[2][F_VIP]   <= s1_vip;                 // S2: VIP, TOO_BIG (the rest shifted)
            st_f[2][F_BIG_N] <= s1_big_n;
            st_f[2][F_BIG_T] <= s1_big_t;
            st_f[2][F_BIG_6] <= s1_big_6;
            st_tl[2]     <= s1_tl[15:0];                // > 16 bits only when TOO_BIG (never forwarded)
            st_hash[3]   <= s2_hash0;                   // S3: hash, buckets
            st_bkt0[3]   <= s2_bkt0;
            st_bkt1[3]   <= s2_bkt1;
            st_pre[4]    <= s3_pre;                     // S4: rows 1..12
            st_hit[6]    <= |s5_m2;                     // S6: first match
            st_ackf[6]   <= s5_ackfs;
            st_act[6]    <= s5_act;
            st_slot[6]   <= {s5_sel[2], s5_sel[2] ? st_bkt1[5] : st_bkt0[5], s5_sel[1:0]};
            st_rw[9]     <= s8_t6 ? s8_rw6 : s8_rw;     // S9: the decision's fields
            st_ob[9]     <= s8_out_be;
            st_reason[9] <= s8_reason;
            st_dhit[9]   <= s8_reached && s8_hit;
            st_dvip[9]   <= s8_reached && f8[F_VIP];
            st_dhash[9]  <= s8_reached ? st_hash[8] : 32'h0;
            st_tun[9]    <= a_tun && !a_tun6 && !s8_v6;  // IPIP
            st_tun6[9]   <= s8_t6;                      // outer IPv6
            st_nat[9]    <= a_dnat || a_snat;
            st_kb[10]    <= s9_kf[16:LW];               // S10: trim/realignment
            st_j[10]     <= s9_of[16:LW];
            st_ol[10]    <= s9_of[LW-1:0];
        end
    end

    // ------------------------------------------------------------------
    // S11: insert checksums, build the 74-byte head, push the decision
    // ------------------------------------------------------------------
    wire s11_v6  = st_f[11][F_V6];
    wire s11_tcp = st_f[11][F_TCP];
    wire s11_nat = st_nat[11];
    wire s11_t6  = st_tun6[11];
    wire [159:0] s11_ob = st_ob[11];

    logic [HW-1:0] s11_fin;    // rewritten head with checksums
    always_comb begin
        s11_fin = st_rw[11];
        if (s11_t6) begin
            // IPv4 in IPv6: the inner header follows the 40-byte outer one
            if (!s11_v6) begin
                s11_fin[(IP4_CSUM + 40)*8 +: 8]     = s11_inck[15:8];
                s11_fin[(IP4_CSUM + 40 + 1)*8 +: 8] = s11_inck[7:0];
            end
        end else if (!s11_v6) begin
            s11_fin[IP4_CSUM*8 +: 8]       = s11_inck[15:8];
            s11_fin[(IP4_CSUM + 1)*8 +: 8] = s11_inck[7:0];
        end
        if (s11_nat && s11_v6) begin
            if (s11_tcp) begin
                s11_fin[(IP6_L4 + TCP_CSUM)*8 +: 8]     = s11_l4ck[15:8];
                s11_fin[(IP6_L4 + TCP_CSUM + 1)*8 +: 8] = s11_l4ck[7:0];
            end else begin
                s11_fin[(IP6_L4 + UDP_CSUM)*8 +: 8]     = s11_l4ck[15:8];
                s11_fin[(IP6_L4 + UDP_CSUM + 1)*8 +: 8] = s11_l4ck[7:0];
            end
        end else if (s11_nat) begin
            if (s11_tcp) begin
                s11_fin[(IP4_L4 + TCP_CSUM)*8 +: 8]     = s11_l4ck[15:8];
                s11_fin[(IP4_L4 + TCP_CSUM + 1)*8 +: 8] = s11_l4ck[7:0];
            end else begin
                s11_fin[(IP4_L4 + UDP_CSUM)*8 +: 8]     = s11_l4ck[15:8];
                s11_fin[(IP4_L4 + UDP_CSUM + 1)*8 +: 8] = s11_l4ck[7:0];
            end
        end
    end

    logic [HW-1:0] s11_head;
    always_comb begin
        if (st_tun[11]) begin
            s11_head[0 +: IP_VER*8] = s11_fin[0 +: IP_VER*8];
            for (int i = 0; i < 20; i++) begin
                if (i == 10)      s11_head[(IP_VER + i)*8 +: 8] = s11_outck[15:8];
                else if (i == 11) s11_head[(IP_VER + i)*8 +: 8] = s11_outck[7:0];
                else              s11_head[(IP_VER + i)*8 +: 8] = s11_ob[159 - 8*i -: 8];
            end
            s11_head[(IP_VER + 20)*8 +: 40*8] = s11_fin[IP_VER*8 +: 40*8];
        end else begin
            s11_head = s11_fin;   // the egress takes 54 bytes (IPv4) or 74 (IPv6, outer IPv6)
        end
    end

    assign dec_valid = ce && st_v[11] && (st_k[11] == K_PKT);
    always_comb begin
        dec_data = '0;
        dec_data[DEC_FWD_BIT]                      = (st_reason[11] == LVSNIC_REASON_FORWARDED);
        dec_data[DEC_TUN_BIT]                      = st_tun[11] || s11_t6;
        dec_data[DEC_V6_BIT]                       = s11_v6 || s11_t6;
        dec_data[DEC_REASON_LSB +: DEC_REASON_W]   = st_reason[11];
        dec_data[DEC_HIT_BIT]                      = st_dhit[11];
        dec_data[DEC_VIP_BIT]                      = st_dvip[11];
        dec_data[DEC_HASH_LSB +: 32]               = st_dhash[11];
        dec_data[DEC_SEQ_LSB +: 32]                = st_seq[11];
        dec_data[DEC_TS_LSB +: 64]                 = st_ts[11];
        dec_data[DEC_HEAD_LSB +: DEC_HEAD_W]       = s11_head;
        dec_data[DEC_J_LSB +: DEC_JK_W]            = st_j[11];
        dec_data[DEC_K_LSB +: DEC_JK_W]            = st_kb[11];
        dec_data[DEC_OL_LSB +: DEC_OL_W]           = st_ol[11];
        dec_data[DEC_ACT_LSB +: DEC_ACT_W]         = st_act[11];
        dec_data[DEC_SLOT_LSB +: DEC_SLOT_W]       = st_slot[11];
        dec_data[DEC_TL_LSB +: DEC_TL_W]           = st_tl[11];
    end

endmodule

`default_nettype wire
