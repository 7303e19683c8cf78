//! The lvsnic register map and shared codes in Rust. Every module but this
//! one is generated from the single source `hw/regmap/lvsnic.rdl` by
//! `scripts/gen-regmap.py` (which `--check`s they are current), alongside
//! the RTL header `hw/rtl/lvsnic_regs.vh`, the cocotb tests' constants
//! `hw/tb/unit/lvsnic_regs.py` and `docs/registers.md`.
//!
//! * [`regs`]: addresses, fields and reset values of `lvsnic_core`'s registers.
//! * [`dma`]: the DMA engine's registers in a card's BAR0.
//! * [`Reason`], [`ActionOp`], [`TableCmd`]: the codes, and
//!   [`host_meta`]/[`flow_entry`]/[`action_entry`] the bit positions of the in-band data
//!   that carries them.

#![no_std]

mod codes;
pub mod dma;
pub mod regs;

pub use codes::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes are the numbers of docs/hardware.md §3 and §4.
    #[test]
    fn codes_are_the_contract() {
        use Reason::*;
        let reasons = [
            Forwarded, Malformed, L2Multicast, L2OtherHost, Vlan, NonIpv4, IpChecksum, IpOptions, Fragment, NotTcpUdp,
            L4Truncated, Ttl, MissVip, MissLocal, Miss, TcpControl, UdpZeroCsum, TooBig, Disabled, Truncated,
            ActionHost,
        ];
        assert_eq!(reasons.len(), Reason::COUNT);
        for (v, r) in reasons.into_iter().enumerate() {
            assert_eq!(r as usize, v);
            assert_eq!(Reason::from_u8(v as u8), Some(r));
        }
        assert_eq!(Reason::from_u8(Reason::COUNT as u8), None);
        assert_eq!((L2OtherHost.name(), UdpZeroCsum.name(), Forwarded.name()), ("l2_other_host", "udp_zero_csum", "forwarded"));
        let ops = [ActionOp::Route, ActionOp::NatDnat, ActionOp::NatSnat, ActionOp::Tunnel];
        for (v, op) in ops.into_iter().enumerate() {
            assert_eq!(op as u32, v as u32);
            assert_eq!(ActionOp::from_field(v as u32 | 0xFFFF_FFFC), op, "only bits 1:0 count");
        }
        assert_eq!((TableCmd::Write as u32, TableCmd::Read as u32, TableCmd::WritePair as u32), (1, 2, 3));
        assert_eq!((TableCmd::from_u8(0), TableCmd::from_u8(4)), (None, None));
    }

    /// `m_axis_host_tuser` as docs/hardware.md §5 lays it out.
    #[test]
    fn host_meta_is_the_contract() {
        use host_meta::*;
        let fields = [(REASON_LSB, REASON_WIDTH), (HIT_LSB, HIT_WIDTH), (VIP_LSB, VIP_WIDTH)];
        assert_eq!(fields, [(0, 8), (8, 1), (9, 1)]);
        let fields = [(HASH_0_LSB, HASH_0_WIDTH), (SEQ_LSB, SEQ_WIDTH), (TS_LSB, TS_WIDTH)];
        assert_eq!(fields, [(32, 32), (64, 32), (96, 64)]);
        assert_eq!(DEFINED, [0x3FF, !0, !0, !0, !0]);
    }

    /// The flow and action entries as docs/hardware.md §4 lays them out:
    /// 160-bit slots, IPv6 entries over a pair with word 0 shared, 256-bit
    /// actions.
    #[test]
    fn entry_layouts_are_the_contract() {
        use flow_entry as f;
        let fields = [
            (f::VALID_LSB, f::VALID_WIDTH),
            (f::ACK_FAST_LSB, f::ACK_FAST_WIDTH),
            (f::IPV6_LSB, f::IPV6_WIDTH),
            (f::PROTO_LSB, f::PROTO_WIDTH),
            (f::ACTION_LSB, f::ACTION_WIDTH),
            (f::SADDR_LSB, f::SADDR_WIDTH),
            (f::DADDR_LSB, f::DADDR_WIDTH),
            (f::SPORT_LSB, f::SPORT_WIDTH),
            (f::DPORT_LSB, f::DPORT_WIDTH),
        ];
        assert_eq!(fields, [(0, 1), (1, 1), (2, 1), (8, 8), (16, 16), (32, 32), (64, 32), (96, 16), (112, 16)]);
        assert_eq!((f::WORDS, f::DEFINED), (5, [0xFFFF_FF07, !0, !0, !0, 0]));
        use flow6_entry as g;
        let word0 = [(g::VALID_LSB, f::VALID_LSB), (g::ACK_FAST_LSB, f::ACK_FAST_LSB), (g::IPV6_LSB, f::IPV6_LSB), (g::PROTO_LSB, f::PROTO_LSB), (g::ACTION_LSB, f::ACTION_LSB)];
        assert!(word0.iter().all(|(a, b)| a == b), "word 0 is common to both layouts");
        let fields = [(g::SADDR_LSB, g::SADDR_WIDTH), (g::DADDR_LSB, g::DADDR_WIDTH), (g::SPORT_LSB, g::SPORT_WIDTH), (g::DPORT_LSB, g::DPORT_WIDTH)];
        assert_eq!(fields, [(32, 128), (160, 128), (288, 16), (304, 16)]);
        assert_eq!(g::WORDS, 2 * f::WORDS, "an IPv6 entry is a slot pair");
        use action_entry as a;
        let fields = [
            (a::OP_LSB, a::OP_WIDTH),
            (a::HOST_LSB, a::HOST_WIDTH),
            (a::IPV6_LSB, a::IPV6_WIDTH),
            (a::PORT_LSB, a::PORT_WIDTH),
            (a::L4_DELTA_LSB, a::L4_DELTA_WIDTH),
            (a::MAC_LSB, a::MAC_WIDTH),
            (a::ADDR_LSB, a::ADDR_WIDTH),
        ];
        assert_eq!(fields, [(0, 2), (2, 1), (3, 1), (16, 16), (32, 16), (48, 48), (96, 128)]);
        assert_eq!((a::WORDS, a::DEFINED), (8, [0xFFFF_000F, !0, !0, !0, !0, !0, !0, 0]));
    }
}
