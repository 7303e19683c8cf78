//! Flow and action table entries and their layouts (docs/hardware.md §4):
//! 160-bit flow slots holding an IPv4 entry each, IPv6 entries over an
//! aligned pair of slots, 256-bit actions. The bit positions are the
//! register map's (`lvsnic_flow_entry`, `lvsnic_flow6_entry`,
//! `lvsnic_action_entry` in hw/regmap/lvsnic.rdl), the same the RTL and the
//! cocotb reference are generated with.

use crate::wire::MacAddr;
use lvsnic_regmap::{action_entry as ae, flow6_entry as fe6, flow_entry as fe};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A flow slot's bits, `FLOW_DATA0` (bits 31:0) first.
pub type SlotBits = [u32; fe::WORDS];
/// An IPv6 entry's bits over a slot pair: the even slot's 5 words, then the
/// odd slot's.
pub type PairBits = [u32; fe6::WORDS];
/// An action entry's bits, `ACT_DATA0` first.
pub type ActionBits = [u32; ae::WORDS];

/// Field `lsb +: width` (width ≤ 128) of an entry held as 32-bit words
/// (bits past the words read 0).
fn get(b: &[u32], lsb: u32, width: u32) -> u128 {
    let (w, sh) = ((lsb / 32) as usize, lsb % 32);
    let word = |i: usize| b.get(w + i).copied().unwrap_or(0) as u128;
    let lo = word(0) | word(1) << 32 | word(2) << 64 | word(3) << 96;
    let v = if sh == 0 { lo } else { lo >> sh | word(4) << (128 - sh) };
    if width >= 128 {
        v
    } else {
        v & ((1u128 << width) - 1)
    }
}

/// Sets field `lsb +: width` (width ≤ 128) of `b` to `v` (bits above the
/// width dropped), word by word.
fn put(b: &mut [u32], v: u128, lsb: u32, width: u32) {
    let end = lsb + width;
    for k in lsb / 32..end.div_ceil(32) {
        let base = 32 * k;
        let (lo, hi) = (lsb.max(base), end.min(base + 32));
        let n = hi - lo;
        let mask = ((1u64 << n) - 1) as u32;
        let part = (v >> (lo - lsb)) as u32 & mask;
        let w = &mut b[k as usize];
        *w = *w & !(mask << (lo - base)) | part << (lo - base);
    }
}

/// Whether a slot's bits are the head of a valid IPv6 entry (its pair's odd
/// slot is then the entry's tail, never an entry of its own).
pub fn is_ipv6_head(b: &SlotBits) -> bool {
    get(b, fe::VALID_LSB, 1) != 0 && get(b, fe::IPV6_LSB, 1) != 0
}

/// Whether a slot's bits hold a valid entry (the IPv4 entry, or the head of
/// an IPv6 one).
pub fn is_valid(b: &SlotBits) -> bool {
    get(b, fe::VALID_LSB, 1) != 0
}

/// The 5-tuple an IPv4 flow entry matches (as the packet is received).
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

/// The 5-tuple an IPv6 flow entry matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey6 {
    /// The upper-layer protocol after the fixed header (6 TCP, 17 UDP).
    pub proto: u8,
    /// IPv6 source address, as received.
    pub saddr: Ipv6Addr,
    /// IPv6 destination address, as received.
    pub daddr: Ipv6Addr,
    /// L4 source port.
    pub sport: u16,
    /// L4 destination port.
    pub dport: u16,
}

impl FlowKey6 {
    /// The Toeplitz hashes of the two ways (36-byte input, §4).
    pub fn hashes(&self) -> (u32, u32) {
        let inp = super::toeplitz::hash_input6(&self.saddr.octets(), &self.daddr.octets(), self.sport, self.dport);
        (super::toeplitz::toeplitz(&super::toeplitz::KEY0, &inp), super::toeplitz::toeplitz(&super::toeplitz::KEY1, &inp))
    }
}

/// An IPv4 flow entry: one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowEntry {
    /// The slot holds an entry.
    pub valid: bool,
    /// TCP segments with only ACK (of SYN/FIN/RST/ACK) may be forwarded;
    /// otherwise every TCP segment goes to the host.
    pub ack_fast: bool,
    /// IP protocol of the key.
    pub proto: u8,
    /// IPv4 source address of the key.
    pub saddr: u32,
    /// IPv4 destination address of the key.
    pub daddr: u32,
    /// Source port of the key.
    pub sport: u16,
    /// Destination port of the key.
    pub dport: u16,
    /// Index of the action table entry applied on a match.
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

    /// The slot's bits (`ipv6` and reserved bits 0).
    pub fn to_bits(&self) -> SlotBits {
        let mut b = [0; fe::WORDS];
        put(&mut b, self.valid as u128, fe::VALID_LSB, fe::VALID_WIDTH);
        put(&mut b, self.ack_fast as u128, fe::ACK_FAST_LSB, fe::ACK_FAST_WIDTH);
        put(&mut b, self.proto as u128, fe::PROTO_LSB, fe::PROTO_WIDTH);
        put(&mut b, self.action as u128, fe::ACTION_LSB, fe::ACTION_WIDTH);
        put(&mut b, self.saddr as u128, fe::SADDR_LSB, fe::SADDR_WIDTH);
        put(&mut b, self.daddr as u128, fe::DADDR_LSB, fe::DADDR_WIDTH);
        put(&mut b, self.sport as u128, fe::SPORT_LSB, fe::SPORT_WIDTH);
        put(&mut b, self.dport as u128, fe::DPORT_LSB, fe::DPORT_WIDTH);
        b
    }

    /// Decodes a slot as an IPv4 entry (reserved bits ignored, as the
    /// hardware does; `valid` is false for the head of an IPv6 entry).
    pub fn from_bits(b: &SlotBits) -> Self {
        FlowEntry {
            valid: is_valid(b) && get(b, fe::IPV6_LSB, 1) == 0,
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

/// An IPv6 flow entry: an aligned pair of slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow6Entry {
    /// The pair holds an entry.
    pub valid: bool,
    /// As [`FlowEntry::ack_fast`].
    pub ack_fast: bool,
    /// The upper-layer protocol of the key.
    pub proto: u8,
    /// IPv6 source address of the key.
    pub saddr: Ipv6Addr,
    /// IPv6 destination address of the key.
    pub daddr: Ipv6Addr,
    /// Source port of the key.
    pub sport: u16,
    /// Destination port of the key.
    pub dport: u16,
    /// Index of the action table entry applied on a match.
    pub action: u16,
}

impl Default for Flow6Entry {
    fn default() -> Self {
        Flow6Entry {
            valid: false,
            ack_fast: false,
            proto: 0,
            saddr: Ipv6Addr::UNSPECIFIED,
            daddr: Ipv6Addr::UNSPECIFIED,
            sport: 0,
            dport: 0,
            action: 0,
        }
    }
}

impl Flow6Entry {
    /// A valid entry matching `key` and applying action `action`.
    pub fn new(key: FlowKey6, action: u16, ack_fast: bool) -> Self {
        Flow6Entry {
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
    pub fn key(&self) -> FlowKey6 {
        FlowKey6 { proto: self.proto, saddr: self.saddr, daddr: self.daddr, sport: self.sport, dport: self.dport }
    }

    /// The pair's bits: `ipv6` set with `valid` (an empty pair is all 0).
    pub fn to_bits(&self) -> PairBits {
        let mut b = [0; fe6::WORDS];
        put(&mut b, self.valid as u128, fe6::VALID_LSB, fe6::VALID_WIDTH);
        put(&mut b, self.valid as u128, fe6::IPV6_LSB, fe6::IPV6_WIDTH);
        put(&mut b, self.ack_fast as u128, fe6::ACK_FAST_LSB, fe6::ACK_FAST_WIDTH);
        put(&mut b, self.proto as u128, fe6::PROTO_LSB, fe6::PROTO_WIDTH);
        put(&mut b, self.action as u128, fe6::ACTION_LSB, fe6::ACTION_WIDTH);
        put(&mut b, u128::from(self.saddr), fe6::SADDR_LSB, fe6::SADDR_WIDTH);
        put(&mut b, u128::from(self.daddr), fe6::DADDR_LSB, fe6::DADDR_WIDTH);
        put(&mut b, self.sport as u128, fe6::SPORT_LSB, fe6::SPORT_WIDTH);
        put(&mut b, self.dport as u128, fe6::DPORT_LSB, fe6::DPORT_WIDTH);
        b
    }

    /// Decodes a pair (`valid` only when the head's `ipv6` is set).
    pub fn from_bits(b: &PairBits) -> Self {
        Flow6Entry {
            valid: get(b, fe6::VALID_LSB, 1) != 0 && get(b, fe6::IPV6_LSB, 1) != 0,
            ack_fast: get(b, fe6::ACK_FAST_LSB, fe6::ACK_FAST_WIDTH) != 0,
            proto: get(b, fe6::PROTO_LSB, fe6::PROTO_WIDTH) as u8,
            saddr: Ipv6Addr::from(get(b, fe6::SADDR_LSB, fe6::SADDR_WIDTH)),
            daddr: Ipv6Addr::from(get(b, fe6::DADDR_LSB, fe6::DADDR_WIDTH)),
            sport: get(b, fe6::SPORT_LSB, fe6::SPORT_WIDTH) as u16,
            dport: get(b, fe6::DPORT_LSB, fe6::DPORT_WIDTH) as u16,
            action: get(b, fe6::ACTION_LSB, fe6::ACTION_WIDTH) as u16,
        }
    }

    /// The pair from its two slots (even first).
    pub fn from_slots(head: &SlotBits, tail: &SlotBits) -> Self {
        let mut b = [0; fe6::WORDS];
        b[..fe::WORDS].copy_from_slice(head);
        b[fe::WORDS..].copy_from_slice(tail);
        Self::from_bits(&b)
    }
}

/// What an action does (`op`, bits 1:0), generated from the register map.
pub use lvsnic_regmap::ActionOp;

/// An action table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActionEntry {
    /// The rewrite (`ROUTE`, `NAT_DNAT`, `NAT_SNAT`, `TUNNEL`).
    pub op: ActionOp,
    /// Frames of the flows pointing here go to the host (reason
    /// `ACTION_HOST`) instead of being rewritten.
    pub host: bool,
    /// Destination MAC written into the frame.
    pub mac: MacAddr,
    /// New destination (`NAT_DNAT`), new source (`NAT_SNAT`) or tunnel
    /// destination (`TUNNEL`) address; its family is the entry's `ipv6` bit.
    pub addr: IpAddr,
    /// New destination (`NAT_DNAT`) or source (`NAT_SNAT`) port.
    pub port: u16,
    /// The folded one's-complement L4 checksum delta of the NAT rewrite
    /// (see [`ActionEntry::nat_delta`]).
    pub l4_delta: u16,
}

impl ActionEntry {
    /// The entry's bits (reserved bits 0).
    pub fn to_bits(&self) -> ActionBits {
        let mut b = [0; ae::WORDS];
        let mac = self.mac.0.iter().fold(0u128, |a, &b| a << 8 | b as u128);
        let (v6, addr) = match self.addr {
            IpAddr::V4(a) => (false, u32::from(a) as u128),
            IpAddr::V6(a) => (true, u128::from(a)),
        };
        put(&mut b, self.op as u128, ae::OP_LSB, ae::OP_WIDTH);
        put(&mut b, self.host as u128, ae::HOST_LSB, ae::HOST_WIDTH);
        put(&mut b, v6 as u128, ae::IPV6_LSB, ae::IPV6_WIDTH);
        put(&mut b, self.port as u128, ae::PORT_LSB, ae::PORT_WIDTH);
        put(&mut b, self.l4_delta as u128, ae::L4_DELTA_LSB, ae::L4_DELTA_WIDTH);
        put(&mut b, mac, ae::MAC_LSB, ae::MAC_WIDTH);
        put(&mut b, addr, ae::ADDR_LSB, ae::ADDR_WIDTH);
        b
    }

    /// Decodes an entry (reserved bits ignored, as the hardware does; an
    /// IPv4 address is the field's low 32 bits).
    pub fn from_bits(b: &ActionBits) -> Self {
        let op = ActionOp::from_field(get(b, ae::OP_LSB, ae::OP_WIDTH) as u32);
        let m = get(b, ae::MAC_LSB, ae::MAC_WIDTH) as u64;
        let mut mac = [0u8; 6];
        for (i, x) in mac.iter_mut().enumerate() {
            *x = (m >> (40 - 8 * i)) as u8;
        }
        let a = get(b, ae::ADDR_LSB, ae::ADDR_WIDTH);
        let addr = if get(b, ae::IPV6_LSB, 1) != 0 { IpAddr::V6(Ipv6Addr::from(a)) } else { IpAddr::V4(Ipv4Addr::from(a as u32)) };
        ActionEntry {
            op,
            host: get(b, ae::HOST_LSB, ae::HOST_WIDTH) != 0,
            mac: MacAddr(mac),
            addr,
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

    /// [`nat_delta`](Self::nat_delta) for IPv6: the eight 16-bit words of
    /// each address in place of the two of an IPv4 one.
    pub fn nat_delta6(old_addr: Ipv6Addr, old_port: u16, new_addr: Ipv6Addr, new_port: u16) -> u16 {
        let (o, n) = (old_addr.segments(), new_addr.segments());
        let d = o.iter().zip(n).map(|(&o, n)| crate::wire::checksum::delta16(o, n) as u64).sum::<u64>()
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
        assert_eq!(b[0], 0x1234_0603, "valid, ack_fast, ipv6 0, proto, action in word 0");
        assert_eq!(b[1..], [0xC0A80001, 0x0A000064, 80 << 16 | 40000, 0]);
        assert_eq!(FlowEntry::from_bits(&b), f);
        assert!(!is_ipv6_head(&b));

        let saddr: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let daddr: Ipv6Addr = "2001:db8:0:1::10".parse().unwrap();
        let key = FlowKey6 { proto: 17, saddr, daddr, sport: 5353, dport: 53 };
        let g = Flow6Entry::new(key, 0x0042, false);
        let p = g.to_bits();
        assert_eq!(p[0], 0x0042_1105, "valid, ipv6, proto 17, action");
        assert_eq!(p[4], 0x2001_0db8, "the source's first bytes at the top of its field (bits 159:128)");
        assert_eq!(p[1], 1);
        assert_eq!(p[8], 0x2001_0db8);
        assert_eq!(p[9], 53 << 16 | 5353);
        let (head, tail) = (p[..5].try_into().unwrap(), p[5..].try_into().unwrap());
        assert!(is_ipv6_head(&head));
        assert!(!FlowEntry::from_bits(&head).valid, "an IPv6 head is not an IPv4 entry");
        assert_eq!(Flow6Entry::from_slots(&head, &tail), g);
        assert_eq!(Flow6Entry::from_bits(&p).key(), key);
        assert!(!Flow6Entry::from_bits(&f.to_bits().iter().chain(&[0; 5]).copied().collect::<Vec<_>>().try_into().unwrap()).valid);

        let a = ActionEntry {
            op: ActionOp::Tunnel,
            host: true,
            mac: MacAddr([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]),
            addr: IpAddr::V4(Ipv4Addr::new(192, 168, 10, 5)),
            port: 8080,
            l4_delta: 0xBEEF,
        };
        let b = a.to_bits();
        assert_eq!(b[0], 8080 << 16 | 3 | 1 << 2, "op in bits 1:0, host in bit 2, ipv6 0, port in 31:16");
        assert_eq!(b[1], 0x4455_BEEF, "l4_delta in 47:32, MAC byte 5 from bit 48");
        assert_eq!(b[2], 0x0211_2233, "MAC byte 0 in bits 95:88");
        assert_eq!(b[3..], [0xC0A80A05, 0, 0, 0, 0]);
        let mut nohost = b;
        nohost[0] &= !(1 << 2);
        assert_eq!(ActionEntry::from_bits(&nohost), ActionEntry { host: false, ..a });
        assert_eq!(ActionEntry::from_bits(&b), a);
        let a6 = ActionEntry { addr: IpAddr::V6(daddr), host: false, ..a };
        let b6 = a6.to_bits();
        assert_eq!(b6[0] & 0xF, 3 | 1 << 3, "ipv6 in bit 3");
        assert_eq!(b6[6], 0x2001_0db8);
        assert_eq!(ActionEntry::from_bits(&b6), a6);
    }

    /// The word-wise field access equals a bit-by-bit one for every
    /// position and width an entry can have.
    #[test]
    fn field_access_equals_bitwise() {
        let mut rng = crate::rng::SplitMix64::new(8);
        for _ in 0..3000 {
            let width = 1 + rng.below(128) as u32;
            let lsb = rng.below(320 - width as u64 + 1) as u32;
            let v = (rng.next_u64() as u128) << 64 | rng.next_u64() as u128;
            let mut words: [u32; 10] = std::array::from_fn(|_| rng.next_u64() as u32);
            let before = words;
            put(&mut words, v, lsb, width);
            for bit in 0..320u32 {
                let got = words[(bit / 32) as usize] >> (bit % 32) & 1;
                let want = if (lsb..lsb + width).contains(&bit) {
                    (v >> (bit - lsb) & 1) as u32
                } else {
                    before[(bit / 32) as usize] >> (bit % 32) & 1
                };
                assert_eq!(got, want, "bit {bit} after put at {lsb} +: {width}");
            }
            let mask = if width == 128 { u128::MAX } else { (1u128 << width) - 1 };
            assert_eq!(get(&words, lsb, width), v & mask);
        }
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
