//! Flow and action table entries and their 128-bit layouts
//! (docs/hardware.md §4). The bit positions are the register map's
//! (`lvsnic_flow_entry`, `lvsnic_action_entry` in hw/regmap/lvsnic.rdl),
//! the same the RTL and the cocotb reference are generated with.

use crate::wire::MacAddr;
use lvsnic_regmap::{action_entry as ae, flow_entry as fe};

/// Field `lsb +: width` of an entry.
fn get(b: u128, lsb: u32, width: u32) -> u128 {
    b >> lsb & ((1u128 << width) - 1)
}

/// `v` placed in field `lsb +: width` (bits above the width dropped).
fn put(v: u128, lsb: u32, width: u32) -> u128 {
    (v & ((1u128 << width) - 1)) << lsb
}

/// The 5-tuple a flow entry matches (as the packet is received).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// IP protocol number (6 TCP, 17 UDP).
    pub proto: u8,
    /// IPv4 source address, as received.
    pub saddr: u32,
    /// IPv4 destination address, as received.
    pub daddr: u32,
    /// L4 source port.
    pub sport: u16,
    /// L4 destination port.
    pub dport: u16,
}

impl FlowKey {
    /// The Toeplitz hashes of the two ways.
    pub fn hashes(&self) -> (u32, u32) {
        let inp = super::toeplitz::hash_input(self.saddr, self.daddr, self.sport, self.dport);
        let (t0, t1) = super::toeplitz::tables();
        (t0.hash(&inp), t1.hash(&inp))
    }
}

/// A flow table slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowEntry {
    /// Bit 0: the slot holds an entry.
    pub valid: bool,
    /// Bit 1: TCP segments with only ACK (of SYN/FIN/RST/ACK) may be
    /// forwarded; otherwise every TCP segment goes to the host.
    pub ack_fast: bool,
    /// Bits 15:8: IP protocol of the key.
    pub proto: u8,
    /// Bits 47:16: IPv4 source address of the key.
    pub saddr: u32,
    /// Bits 79:48: IPv4 destination address of the key.
    pub daddr: u32,
    /// Bits 95:80: source port of the key.
    pub sport: u16,
    /// Bits 111:96: destination port of the key.
    pub dport: u16,
    /// Bits 127:112: index of the action table entry applied on a match.
    pub action: u16,
}

impl FlowEntry {
    /// A valid entry matching `key` and applying action `action`.
    pub fn new(key: FlowKey, action: u16, ack_fast: bool) -> Self {
        FlowEntry {
            valid: true,
            ack_fast,
            proto: key.proto,
            saddr: key.saddr,
            daddr: key.daddr,
            sport: key.sport,
            dport: key.dport,
            action,
        }
    }

    /// The 5-tuple this entry matches.
    pub fn key(&self) -> FlowKey {
        FlowKey { proto: self.proto, saddr: self.saddr, daddr: self.daddr, sport: self.sport, dport: self.dport }
    }

    /// The 128-bit slot layout (reserved bits 0), `FLOW_DATA0` = bits
    /// 31:0.
    pub fn to_bits(&self) -> u128 {
        put(self.valid as u128, fe::VALID_LSB, fe::VALID_WIDTH)
            | put(self.ack_fast as u128, fe::ACK_FAST_LSB, fe::ACK_FAST_WIDTH)
            | put(self.proto as u128, fe::PROTO_LSB, fe::PROTO_WIDTH)
            | put(self.saddr as u128, fe::SADDR_LSB, fe::SADDR_WIDTH)
            | put(self.daddr as u128, fe::DADDR_LSB, fe::DADDR_WIDTH)
            | put(self.sport as u128, fe::SPORT_LSB, fe::SPORT_WIDTH)
            | put(self.dport as u128, fe::DPORT_LSB, fe::DPORT_WIDTH)
            | put(self.action as u128, fe::ACTION_LSB, fe::ACTION_WIDTH)
    }

    /// Decodes a slot (reserved bits ignored, as the hardware does).
    pub fn from_bits(b: u128) -> Self {
        FlowEntry {
            valid: get(b, fe::VALID_LSB, fe::VALID_WIDTH) != 0,
            ack_fast: get(b, fe::ACK_FAST_LSB, fe::ACK_FAST_WIDTH) != 0,
            proto: get(b, fe::PROTO_LSB, fe::PROTO_WIDTH) as u8,
            saddr: get(b, fe::SADDR_LSB, fe::SADDR_WIDTH) as u32,
            daddr: get(b, fe::DADDR_LSB, fe::DADDR_WIDTH) as u32,
            sport: get(b, fe::SPORT_LSB, fe::SPORT_WIDTH) as u16,
            dport: get(b, fe::DPORT_LSB, fe::DPORT_WIDTH) as u16,
            action: get(b, fe::ACTION_LSB, fe::ACTION_WIDTH) as u16,
        }
    }
}

/// What an action does (`op`, bits 1:0), generated from the register map.
pub use lvsnic_regmap::ActionOp;

/// An action table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActionEntry {
    /// Bits 1:0: the rewrite (`ROUTE`, `NAT_DNAT`, `NAT_SNAT`, `TUNNEL`).
    pub op: ActionOp,
    /// Bit 2: frames of the flows pointing here go to the host (reason
    /// `ACTION_HOST`) instead of being rewritten.
    pub host: bool,
    /// Bits 63:16: destination MAC written into the frame (byte 0 in bits
    /// 63:56).
    pub mac: MacAddr,
    /// Bits 95:64: new destination (`NAT_DNAT`), new source (`NAT_SNAT`) or
    /// tunnel destination (`TUNNEL`) IPv4 address.
    pub addr: u32,
    /// Bits 111:96: new destination (`NAT_DNAT`) or source (`NAT_SNAT`)
    /// port.
    pub port: u16,
    /// Bits 127:112: the folded one's-complement L4 checksum delta of the
    /// NAT rewrite (see [`ActionEntry::nat_delta`]).
    pub l4_delta: u16,
}

impl ActionEntry {
    /// The 128-bit entry layout (reserved bits 0), `ACT_DATA0` = bits
    /// 31:0.
    pub fn to_bits(&self) -> u128 {
        let mac = self.mac.0.iter().fold(0u128, |a, &b| a << 8 | b as u128);
        put(self.op as u128, ae::OP_LSB, ae::OP_WIDTH)
            | put(self.host as u128, ae::HOST_LSB, ae::HOST_WIDTH)
            | put(mac, ae::MAC_LSB, ae::MAC_WIDTH)
            | put(self.addr as u128, ae::ADDR_LSB, ae::ADDR_WIDTH)
            | put(self.port as u128, ae::PORT_LSB, ae::PORT_WIDTH)
            | put(self.l4_delta as u128, ae::L4_DELTA_LSB, ae::L4_DELTA_WIDTH)
    }

    /// Decodes an entry (reserved bits ignored, as the hardware does).
    pub fn from_bits(b: u128) -> Self {
        let op = ActionOp::from_field(get(b, ae::OP_LSB, ae::OP_WIDTH) as u32);
        let m = get(b, ae::MAC_LSB, ae::MAC_WIDTH) as u64;
        let mut mac = [0u8; 6];
        for (i, x) in mac.iter_mut().enumerate() {
            *x = (m >> (40 - 8 * i)) as u8;
        }
        ActionEntry {
            op,
            host: get(b, ae::HOST_LSB, ae::HOST_WIDTH) != 0,
            mac: MacAddr(mac),
            addr: get(b, ae::ADDR_LSB, ae::ADDR_WIDTH) as u32,
            port: get(b, ae::PORT_LSB, ae::PORT_WIDTH) as u16,
            l4_delta: get(b, ae::L4_DELTA_LSB, ae::L4_DELTA_WIDTH) as u16,
        }
    }

    /// The folded L4 checksum delta for rewriting `(old_addr, old_port)`
    /// into `(new_addr, new_port)`: `~old_addr_hi + ~old_addr_lo +
    /// new_addr_hi + new_addr_lo + ~old_port + new_port`, end-around carry.
    pub fn nat_delta(old_addr: u32, old_port: u16, new_addr: u32, new_port: u16) -> u16 {
        let d = crate::wire::checksum::delta32(old_addr, new_addr) as u64
            + crate::wire::checksum::delta16(old_port, new_port) as u64;
        fold16(d)
    }
}

/// End-around-carry fold to 16 bits (no complement).
pub fn fold16(mut s: u64) -> u16 {
    while s > 0xFFFF {
        s = (s & 0xFFFF) + (s >> 16);
    }
    s as u16
}

/// The contract's L4 checksum update: `~fold16(0xFFFF + (~old & 0xFFFF) + delta)`.
pub fn apply_l4_delta(old: u16, delta: u16) -> u16 {
    !fold16(0xFFFF + (!old) as u64 + delta as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::checksum;

    #[test]
    fn entries_round_trip_their_bit_layout() {
        let f = FlowEntry { valid: true, ack_fast: true, proto: 6, saddr: 0xC0A80001, daddr: 0x0A000064, sport: 40000, dport: 80, action: 0x1234 };
        let b = f.to_bits();
        assert_eq!(b & 0xff, 0b11);
        assert_eq!((b >> 8) & 0xff, 6);
        assert_eq!((b >> 16) as u32, 0xC0A80001);
        assert_eq!((b >> 112) as u16, 0x1234);
        assert_eq!(FlowEntry::from_bits(b), f);
        let a = ActionEntry { op: ActionOp::Tunnel, host: true, mac: MacAddr([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]), addr: 0xC0A80A05, port: 8080, l4_delta: 0xBEEF };
        let b = a.to_bits();
        assert_eq!((b >> 56) as u8, 0x02, "MAC byte 0 in bits 63:56");
        assert_eq!((b >> 16) as u8, 0x55);
        assert_eq!(b & 0xffff, 3 | 1 << 2, "op in bits 1:0, host in bit 2");
        assert_eq!(ActionEntry::from_bits(b & !(1 << 2)), ActionEntry { host: false, ..a });
        assert_eq!(ActionEntry::from_bits(b), a);
    }

    /// The contract's formula equals the kernel-semantics update the golden
    /// model uses (`checksum::apply_delta` with the unfolded delta), for
    /// every old checksum value and a spread of address/port changes.
    #[test]
    fn delta_formula_matches_the_golden_update() {
        let mut rng = crate::rng::SplitMix64::new(5);
        for _ in 0..2000 {
            let (oa, na) = (rng.next_u64() as u32, rng.next_u64() as u32);
            let (op, np) = (rng.next_u64() as u16, rng.next_u64() as u16);
            let d = ActionEntry::nat_delta(oa, op, na, np);
            let raw = checksum::delta32(oa, na) + checksum::delta16(op, np);
            for old in [0u16, 1, 0x7fff, 0xfffe, 0xffff, rng.next_u64() as u16] {
                assert_eq!(apply_l4_delta(old, d), checksum::apply_delta(old, raw), "old {old:#x}");
            }
        }
        // Extreme: nothing changes and the old checksum is 0xFFFF.
        assert_eq!(apply_l4_delta(0xffff, 0), checksum::apply_delta(0xffff, 0));
    }
}
