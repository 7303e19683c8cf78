//! The bit-exact model of the lvsnic data plane (`lvsnic_core`), defined by
//! `docs/hardware.md`: classification, the flow and action tables, the
//! rewrites, the exception metadata and the AXI-Lite register interface.
//!
//! [`HwPipeline::process`] is what the RTL must equal frame for frame;
//! [`HwPipeline::write32`]/[`read32`](HwPipeline::read32) are its register
//! interface, so host code that programs the tables runs unchanged on the
//! model, the simulated RTL and a card ([`Csr`]).

pub mod pipeline;
pub mod placement;
pub mod regs;
pub use lvsnic_regmap::regs as regs_gen;
pub mod tables;
pub mod toeplitz;
#[cfg(test)]
mod tun6_tests;

pub use pipeline::{HwOutput, HwParams, HwPipeline};

/// Exception reason codes (docs/hardware.md §3), generated from the register map.
pub use lvsnic_regmap::Reason;
use lvsnic_regmap::host_meta;

/// Exception metadata (`m_axis_host_tuser`, docs/hardware.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostMeta {
    /// Bits 7:0: why the frame went to the host (§3).
    pub reason: Reason,
    /// Bit 8: a flow entry matched (from classification row 12 on; 1 for
    /// `TRUNCATED`).
    pub hit: bool,
    /// Bit 9: the destination address is a valid VIP (from row 12 on).
    pub vip: bool,
    /// Bits 63:32: `hash_0`, the way-0 Toeplitz hash of the addresses and
    /// ports, when classification reached row 12, else 0.
    pub hash0: u32,
    /// Bits 95:64: the frame's sequence number (from `s_axis_rx_tuser`).
    pub seq: u32,
    /// Bits 159:96: the ingress timestamp (ns, from `s_axis_rx_tuser`).
    pub ts: u64,
}

impl HostMeta {
    /// The 160-bit `tuser` value as five little-endian 32-bit words
    /// (bit positions: `lvsnic_regmap::host_meta`).
    pub fn to_words(&self) -> [u32; host_meta::WORDS] {
        let mut w = [0; host_meta::WORDS];
        put(&mut w, host_meta::REASON_LSB, host_meta::REASON_WIDTH, self.reason as u64);
        put(&mut w, host_meta::HIT_LSB, host_meta::HIT_WIDTH, self.hit as u64);
        put(&mut w, host_meta::VIP_LSB, host_meta::VIP_WIDTH, self.vip as u64);
        put(&mut w, host_meta::HASH_0_LSB, host_meta::HASH_0_WIDTH, self.hash0 as u64);
        put(&mut w, host_meta::SEQ_LSB, host_meta::SEQ_WIDTH, self.seq as u64);
        put(&mut w, host_meta::TS_LSB, host_meta::TS_WIDTH, self.ts);
        w
    }

    /// Parses a 160-bit `tuser` value; None for an unknown reason or
    /// non-zero reserved bits.
    pub fn from_words(w: [u32; host_meta::WORDS]) -> Option<HostMeta> {
        if w.iter().zip(host_meta::DEFINED).any(|(w, d)| w & !d != 0) {
            return None;
        }
        Some(HostMeta {
            reason: Reason::from_u8(get(&w, host_meta::REASON_LSB, host_meta::REASON_WIDTH) as u8)?,
            hit: get(&w, host_meta::HIT_LSB, host_meta::HIT_WIDTH) != 0,
            vip: get(&w, host_meta::VIP_LSB, host_meta::VIP_WIDTH) != 0,
            hash0: get(&w, host_meta::HASH_0_LSB, host_meta::HASH_0_WIDTH) as u32,
            seq: get(&w, host_meta::SEQ_LSB, host_meta::SEQ_WIDTH) as u32,
            ts: get(&w, host_meta::TS_LSB, host_meta::TS_WIDTH),
        })
    }
}

/// ORs the low `width` bits of `v` into bits `lsb..lsb + width` of the words.
fn put(w: &mut [u32], lsb: u32, width: u32, v: u64) {
    for i in 0..width {
        let b = lsb + i;
        w[(b / 32) as usize] |= (((v >> i) & 1) as u32) << (b % 32);
    }
}

/// Bits `lsb..lsb + width` (width ≤ 64) of the words.
fn get(w: &[u32], lsb: u32, width: u32) -> u64 {
    (0..width).fold(0, |v, i| {
        let b = lsb + i;
        v | (((w[(b / 32) as usize] >> (b % 32)) & 1) as u64) << i
    })
}

/// Register access to the data plane (AXI-Lite), the same for the model,
/// the simulated RTL and a real card.
pub trait Csr {
    /// Writes the 32-bit register at byte address `addr`.
    fn write32(&mut self, addr: u32, value: u32);
    /// Reads the 32-bit register at byte address `addr`.
    fn read32(&mut self, addr: u32) -> u32;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of docs/hardware.md §5, and back.
    #[test]
    fn host_meta_words_are_the_contract() {
        let m = HostMeta { reason: Reason::Truncated, hit: true, vip: true, hash0: 0xDEAD_BEEF, seq: 7, ts: 0x1122_3344_5566_7788 };
        let w = m.to_words();
        assert_eq!(w, [19 | 1 << 8 | 1 << 9, 0xDEAD_BEEF, 7, 0x5566_7788, 0x1122_3344]);
        assert_eq!(HostMeta::from_words(w), Some(m));
        let plain = HostMeta { reason: Reason::Miss, hit: false, vip: false, hash0: 0, seq: 0, ts: 0 };
        assert_eq!(plain.to_words(), [14, 0, 0, 0, 0]);
        for bad in [[1 << 10, 0, 0, 0, 0], [1 << 31, 0, 0, 0, 0], [21, 0, 0, 0, 0], [0xFF, 0, 0, 0, 0]] {
            assert_eq!(HostMeta::from_words(bad), None, "{bad:x?}: reserved bits or no such reason");
        }
    }
}
