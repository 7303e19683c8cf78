//! Register addresses (docs/hardware.md §6).

pub const ID: u32 = 0x000;
pub const VERSION: u32 = 0x004;
pub const CAPS0: u32 = 0x008;
pub const CAPS1: u32 = 0x00C;
pub const CTRL: u32 = 0x010;
pub const MAC_LO: u32 = 0x014;
pub const MAC_HI: u32 = 0x018;
pub const IP: u32 = 0x01C;
pub const MTU: u32 = 0x020;
pub const VIP_VALID: u32 = 0x024;
pub const VIP_BASE: u32 = 0x100;
pub const FLOW_DATA: u32 = 0x200;
pub const FLOW_INDEX: u32 = 0x210;
pub const FLOW_CMD: u32 = 0x214;
pub const FLOW_STATUS: u32 = 0x218;
pub const FLOW_RDATA: u32 = 0x220;
pub const FLOW_HIT_LO: u32 = 0x230;
pub const FLOW_HIT_HI: u32 = 0x234;
pub const ACT_DATA: u32 = 0x300;
pub const ACT_INDEX: u32 = 0x310;
pub const ACT_CMD: u32 = 0x314;
pub const ACT_STATUS: u32 = 0x318;
pub const ACT_RDATA: u32 = 0x320;
pub const ACT_PKTS_LO: u32 = 0x330;
pub const ACT_PKTS_HI: u32 = 0x334;
pub const ACT_BYTES_LO: u32 = 0x338;
pub const ACT_BYTES_HI: u32 = 0x33C;
pub const CNT_BASE: u32 = 0x400;

/// `ID` register value ("LVSN").
pub const ID_VALUE: u32 = 0x4C56_534E;
/// `VERSION` register value (1.0).
pub const VERSION_VALUE: u32 = 0x0001_0000;

pub const CTRL_ENABLE: u32 = 1 << 0;
pub const CTRL_PMTU_DISC: u32 = 1 << 1;

pub const CMD_WRITE: u32 = 1;
pub const CMD_READ: u32 = 2;

/// Counter numbers (`CNT[n]` at `CNT_BASE + 8n`).
pub const CNT_RX: u32 = 0;
pub const CNT_FWD: u32 = 1;
pub const CNT_HOST: u32 = 2;
pub const CNT_INJECT: u32 = 3;
pub const CNT_REASON_BASE: u32 = 32;
/// Number of counters.
pub const CNT_COUNT: u32 = 64;
