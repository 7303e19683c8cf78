// Elaboration parameters of the verilated models. This file is the single
// source of truth: `build.rs` includes it to pass `-G` overrides to
// Verilator, and the library re-exports the values (`lvsnic_sim::params`).
// Small tables keep the models quick to build and to reset.

/// `FLOW_BUCKETS_LOG2`: buckets per way (log2); 2 ways x 4 slots each.
pub const FLOW_BUCKETS_LOG2: u32 = 8;
/// `ACTION_LOG2`: action entries (log2).
pub const ACTION_LOG2: u32 = 8;
/// `VIP_COUNT`: VIP match entries.
pub const VIP_COUNT: u32 = 16;
/// `IPV6`: the core forwards IPv6 (1) or sends it to the host (0).
pub const IPV6: u32 = 1;
/// `AXIL_ADDR_WIDTH`: AXI-Lite byte-address width in bits.
pub const AXIL_ADDR_WIDTH: u32 = 16;
/// The `DATA_WIDTH` values a model is built for (one model per value).
pub const DATA_WIDTHS: [u32; 2] = [64, 512];
