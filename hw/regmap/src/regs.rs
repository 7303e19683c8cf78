// generated from hw/regmap/lvsnic.rdl by scripts/gen-regmap.py: do not edit
//! Register addresses, fields and reset values (docs/registers.md).

/// Identification.
pub const ID: u32 = 0x000;
/// Identification: value after reset.
pub const ID_RESET: u32 = 0x4C56534E;
/// Register map version.
pub const VERSION: u32 = 0x004;
/// Register map version: value after reset.
pub const VERSION_RESET: u32 = 0x00020000;
/// Register map version: field `minor` (bits 15:0).
pub const VERSION_MINOR_MASK: u32 = 0x0000FFFF;
/// Register map version: field `minor` shift.
pub const VERSION_MINOR_SHIFT: u32 = 0;
/// Register map version: field `major` (bits 31:16).
pub const VERSION_MAJOR_MASK: u32 = 0xFFFF0000;
/// Register map version: field `major` shift.
pub const VERSION_MAJOR_SHIFT: u32 = 16;
/// Capabilities 0.
pub const CAPS0: u32 = 0x008;
/// Capabilities 0: value after reset.
pub const CAPS0_RESET: u32 = 0x00000000;
/// Capabilities 0: field `data_width` (bits 15:0).
pub const CAPS0_DATA_WIDTH_MASK: u32 = 0x0000FFFF;
/// Capabilities 0: field `data_width` shift.
pub const CAPS0_DATA_WIDTH_SHIFT: u32 = 0;
/// Capabilities 0: field `flow_buckets_log2` (bits 23:16).
pub const CAPS0_FLOW_BUCKETS_LOG2_MASK: u32 = 0x00FF0000;
/// Capabilities 0: field `flow_buckets_log2` shift.
pub const CAPS0_FLOW_BUCKETS_LOG2_SHIFT: u32 = 16;
/// Capabilities 0: field `action_log2` (bits 31:24).
pub const CAPS0_ACTION_LOG2_MASK: u32 = 0xFF000000;
/// Capabilities 0: field `action_log2` shift.
pub const CAPS0_ACTION_LOG2_SHIFT: u32 = 24;
/// Capabilities 1.
pub const CAPS1: u32 = 0x00C;
/// Capabilities 1: value after reset.
pub const CAPS1_RESET: u32 = 0x00000000;
/// Capabilities 1: field `slots` (bits 7:0).
pub const CAPS1_SLOTS_MASK: u32 = 0x000000FF;
/// Capabilities 1: field `slots` shift.
pub const CAPS1_SLOTS_SHIFT: u32 = 0;
/// Capabilities 1: field `ways` (bits 15:8).
pub const CAPS1_WAYS_MASK: u32 = 0x0000FF00;
/// Capabilities 1: field `ways` shift.
pub const CAPS1_WAYS_SHIFT: u32 = 8;
/// Capabilities 1: field `vip_count` (bits 23:16).
pub const CAPS1_VIP_COUNT_MASK: u32 = 0x00FF0000;
/// Capabilities 1: field `vip_count` shift.
pub const CAPS1_VIP_COUNT_SHIFT: u32 = 16;
/// Capabilities 1: field `ipv6` (bits 24:24).
pub const CAPS1_IPV6_MASK: u32 = 0x01000000;
/// Capabilities 1: field `ipv6` shift.
pub const CAPS1_IPV6_SHIFT: u32 = 24;
/// Capabilities 1: field `tun6` (bits 25:25).
pub const CAPS1_TUN6_MASK: u32 = 0x02000000;
/// Capabilities 1: field `tun6` shift.
pub const CAPS1_TUN6_SHIFT: u32 = 25;
/// Control.
pub const CTRL: u32 = 0x010;
/// Control: value after reset.
pub const CTRL_RESET: u32 = 0x00000002;
/// Control: field `enable` (bits 0:0).
pub const CTRL_ENABLE_MASK: u32 = 0x00000001;
/// Control: field `enable` shift.
pub const CTRL_ENABLE_SHIFT: u32 = 0;
/// Control: field `pmtu_disc` (bits 1:1).
pub const CTRL_PMTU_DISC_MASK: u32 = 0x00000002;
/// Control: field `pmtu_disc` shift.
pub const CTRL_PMTU_DISC_SHIFT: u32 = 1;
/// Director MAC, low.
pub const MAC_LO: u32 = 0x014;
/// Director MAC, low: value after reset.
pub const MAC_LO_RESET: u32 = 0x00000000;
/// Director MAC, high.
pub const MAC_HI: u32 = 0x018;
/// Director MAC, high: value after reset.
pub const MAC_HI_RESET: u32 = 0x00000000;
/// Director MAC, high: field `mac` (bits 15:0).
pub const MAC_HI_MAC_MASK: u32 = 0x0000FFFF;
/// Director MAC, high: field `mac` shift.
pub const MAC_HI_MAC_SHIFT: u32 = 0;
/// Director IPv4 address.
pub const IP: u32 = 0x01C;
/// Director IPv4 address: value after reset.
pub const IP_RESET: u32 = 0x00000000;
/// Egress MTU.
pub const MTU: u32 = 0x020;
/// Egress MTU: value after reset.
pub const MTU_RESET: u32 = 0x000005DC;
/// Egress MTU: field `mtu` (bits 15:0).
pub const MTU_MTU_MASK: u32 = 0x0000FFFF;
/// Egress MTU: field `mtu` shift.
pub const MTU_MTU_SHIFT: u32 = 0;
/// VIP entries valid.
pub const VIP_VALID: u32 = 0x024;
/// VIP entries valid: value after reset.
pub const VIP_VALID_RESET: u32 = 0x00000000;
/// Director IPv6 address: base address of 4 × 4-byte entries.
pub const IP6_BASE: u32 = 0x028;
/// Director IPv6 address: bytes between entries.
pub const IP6_STRIDE: u32 = 4;
/// Director IPv6 address: entries.
pub const IP6_LEN: u32 = 4;
/// VIP entry: base address of 32 × 4-byte entries.
pub const VIP_BASE: u32 = 0x100;
/// VIP entry: bytes between entries.
pub const VIP_STRIDE: u32 = 4;
/// VIP entry: entries.
pub const VIP_LEN: u32 = 32;
/// Staging word: base address of 10 × 4-byte entries.
pub const FLOW_DATA_BASE: u32 = 0x200;
/// Staging word: bytes between entries.
pub const FLOW_DATA_STRIDE: u32 = 4;
/// Staging word: entries.
pub const FLOW_DATA_LEN: u32 = 10;
/// Table index.
pub const FLOW_INDEX: u32 = 0x240;
/// Table index: value after reset.
pub const FLOW_INDEX_RESET: u32 = 0x00000000;
/// Table command.
pub const FLOW_CMD: u32 = 0x244;
/// Table command: value after reset.
pub const FLOW_CMD_RESET: u32 = 0x00000000;
/// Table command: field `cmd` (bits 1:0).
pub const FLOW_CMD_CMD_MASK: u32 = 0x00000003;
/// Table command: field `cmd` shift.
pub const FLOW_CMD_CMD_SHIFT: u32 = 0;
/// Table status.
pub const FLOW_STATUS: u32 = 0x248;
/// Table status: value after reset.
pub const FLOW_STATUS_RESET: u32 = 0x00000000;
/// Table status: field `busy` (bits 0:0).
pub const FLOW_STATUS_BUSY_MASK: u32 = 0x00000001;
/// Table status: field `busy` shift.
pub const FLOW_STATUS_BUSY_SHIFT: u32 = 0;
/// Read-back word: base address of 10 × 4-byte entries.
pub const FLOW_RDATA_BASE: u32 = 0x260;
/// Read-back word: bytes between entries.
pub const FLOW_RDATA_STRIDE: u32 = 4;
/// Read-back word: entries.
pub const FLOW_RDATA_LEN: u32 = 10;
/// Low half.
pub const FLOW_HIT_LO: u32 = 0x290;
/// Low half: value after reset.
pub const FLOW_HIT_LO_RESET: u32 = 0x00000000;
/// High half.
pub const FLOW_HIT_HI: u32 = 0x294;
/// High half: value after reset.
pub const FLOW_HIT_HI_RESET: u32 = 0x00000000;
/// Staging word: base address of 8 × 4-byte entries.
pub const ACT_DATA_BASE: u32 = 0x300;
/// Staging word: bytes between entries.
pub const ACT_DATA_STRIDE: u32 = 4;
/// Staging word: entries.
pub const ACT_DATA_LEN: u32 = 8;
/// Table index.
pub const ACT_INDEX: u32 = 0x320;
/// Table index: value after reset.
pub const ACT_INDEX_RESET: u32 = 0x00000000;
/// Table command.
pub const ACT_CMD: u32 = 0x324;
/// Table command: value after reset.
pub const ACT_CMD_RESET: u32 = 0x00000000;
/// Table command: field `cmd` (bits 1:0).
pub const ACT_CMD_CMD_MASK: u32 = 0x00000003;
/// Table command: field `cmd` shift.
pub const ACT_CMD_CMD_SHIFT: u32 = 0;
/// Table status.
pub const ACT_STATUS: u32 = 0x328;
/// Table status: value after reset.
pub const ACT_STATUS_RESET: u32 = 0x00000000;
/// Table status: field `busy` (bits 0:0).
pub const ACT_STATUS_BUSY_MASK: u32 = 0x00000001;
/// Table status: field `busy` shift.
pub const ACT_STATUS_BUSY_SHIFT: u32 = 0;
/// Read-back word: base address of 8 × 4-byte entries.
pub const ACT_RDATA_BASE: u32 = 0x340;
/// Read-back word: bytes between entries.
pub const ACT_RDATA_STRIDE: u32 = 4;
/// Read-back word: entries.
pub const ACT_RDATA_LEN: u32 = 8;
/// Low half.
pub const ACT_PKTS_LO: u32 = 0x360;
/// Low half: value after reset.
pub const ACT_PKTS_LO_RESET: u32 = 0x00000000;
/// High half.
pub const ACT_PKTS_HI: u32 = 0x364;
/// High half: value after reset.
pub const ACT_PKTS_HI_RESET: u32 = 0x00000000;
/// Low half.
pub const ACT_BYTES_LO: u32 = 0x368;
/// Low half: value after reset.
pub const ACT_BYTES_LO_RESET: u32 = 0x00000000;
/// High half.
pub const ACT_BYTES_HI: u32 = 0x36C;
/// High half: value after reset.
pub const ACT_BYTES_HI_RESET: u32 = 0x00000000;
/// 64-bit counter: base address of 64 × 8-byte entries.
pub const CNT_BASE: u32 = 0x400;
/// 64-bit counter: bytes between entries.
pub const CNT_STRIDE: u32 = 8;
/// 64-bit counter: entries.
pub const CNT_LEN: u32 = 64;
/// 64-bit counter: offset of `LO` within an entry.
pub const CNT_LO_OFFSET: u32 = 0x0;
/// 64-bit counter: offset of `HI` within an entry.
pub const CNT_HI_OFFSET: u32 = 0x4;
