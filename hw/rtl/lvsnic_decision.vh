// lvsnic_decision.vh: the decision bundle, declared once.
//
// One decision per frame leaves lvsnic_lookup (S11) as `dec_data`, crosses
// lvsnic_core as one wire and is queued whole in lvsnic_egress's decision
// FIFO, which unpacks it with the same positions. lvsnic_lookup,
// lvsnic_core and lvsnic_egress include this file twice: before the module
// (it then defines only `LVSNIC_DEC_W(LW, A, B), the bundle's width, for
// the port lists) and inside the module body with LVSNIC_DECISION_BODY
// defined, after the localparams the positions are computed from:
//   LW  log2 of the bytes per beat (DATA_WIDTH / 8)
//   A   ACTION_LOG2
//   B   FLOW_BUCKETS_LOG2
// (the cocotb lookup testbench reads the DEC_* localparams from the
// design to decode dec_data, so the positions are written only here).
//
// Each includer checks at elaboration that `LVSNIC_DEC_W equals DEC_W.
//
// Fields, least significant first:
//   tl          IP packet length (IPv6: 40 + payload length), 16 bits
//   slot        flow slot of the hit {way, bucket, slot}, B + 3 bits
//   act         action index of the hit, A bits
//   outlast_m1  bytes in the last output beat - 1, LW bits
//   k           beat of the received frame holding its last IP byte
//   j           output beats - 1 (a tunnel: 20 or 40 bytes more), 17 - LW bits each
//   head        the rewritten frame head (74 bytes, byte i at [8i+7:8i];
//               a tunnel: the outer header inserted at 14), 592 bits
//   ts, seq     the frame's timestamp (64) and sequence number (32)
//   hash        hash_0 when rows 1..11 passed, else 0 (§5)
//   vip, hit    VIP match, flow hit (§5 metadata)
//   reason      reason code (FORWARDED = 0), 5 bits
//   v6          the output is IPv6: an IPv6 frame, or with tun an IPv6 outer
//               header (the head's 74 bytes are all rewritten bytes)
//   tun         a tunnel: IPIP (shift 20), or with v6 an IPv6 outer header
//               (shift 40)
//   fwd         forwarded (reason == FORWARDED)

`ifndef LVSNIC_DEC_W
`define LVSNIC_DEC_W(LW, A, B) (16 + (B) + 3 + (A) + (LW) + 2 * (17 - (LW)) + 74 * 8 + 64 + 32 + 32 + 1 + 1 + 5 + 1 + 1 + 1)
`endif

`ifdef LVSNIC_DECISION_BODY

localparam integer DEC_TL_LSB     = 0;
localparam integer DEC_TL_W       = 16;
localparam integer DEC_SLOT_LSB   = DEC_TL_LSB + DEC_TL_W;
localparam integer DEC_SLOT_W     = B + 3;
localparam integer DEC_ACT_LSB    = DEC_SLOT_LSB + DEC_SLOT_W;
localparam integer DEC_ACT_W      = A;
localparam integer DEC_OL_LSB     = DEC_ACT_LSB + DEC_ACT_W;
localparam integer DEC_OL_W       = LW;
localparam integer DEC_K_LSB      = DEC_OL_LSB + DEC_OL_W;
localparam integer DEC_JK_W       = 17 - LW;
localparam integer DEC_J_LSB      = DEC_K_LSB + DEC_JK_W;
localparam integer DEC_HEAD_LSB   = DEC_J_LSB + DEC_JK_W;
localparam integer DEC_HEAD_W     = 74 * 8;
localparam integer DEC_TS_LSB     = DEC_HEAD_LSB + DEC_HEAD_W;
localparam integer DEC_SEQ_LSB    = DEC_TS_LSB + 64;
localparam integer DEC_HASH_LSB   = DEC_SEQ_LSB + 32;
localparam integer DEC_VIP_BIT    = DEC_HASH_LSB + 32;
localparam integer DEC_HIT_BIT    = DEC_VIP_BIT + 1;
localparam integer DEC_REASON_LSB = DEC_HIT_BIT + 1;
localparam integer DEC_REASON_W   = 5;
localparam integer DEC_V6_BIT     = DEC_REASON_LSB + DEC_REASON_W;
localparam integer DEC_TUN_BIT    = DEC_V6_BIT + 1;
localparam integer DEC_FWD_BIT    = DEC_TUN_BIT + 1;
localparam integer DEC_W          = DEC_FWD_BIT + 1;
`endif
