//! ICMPv6 (RFC 4443) and the Neighbour Discovery messages the director
//! answers (RFC 4861 §4.3, §4.4): numbers, the checksum over the IPv6
//! pseudo-header, and the two messages the director's stack builds,
//! `icmp6_send`'s error and `ndisc_send_na`'s advertisement.
//!
//! ```text
//!  0               8              16                              31
//!  |     Type      |     Code      |           Checksum            |
//!  |            MTU / pointer / unused (errors), flags (NA)          |
//!  |  as much of the invoking packet as fits (errors), target (ND)   |
//! ```

use super::checksum;
use super::ipv6::{self, Ipv6Packet};
use super::{IpProtocol, MacAddr, WireError, ETHERTYPE_IPV6};
use std::net::Ipv6Addr;

/// Length of the ICMPv6 header (type, code, checksum, 32-bit word).
pub const HEADER_LEN: usize = 8;
/// IP protocol (Next Header) number of ICMPv6.
pub const IPPROTO_ICMPV6: u8 = 58;
/// Destination Unreachable.
pub const ICMPV6_DEST_UNREACH: u8 = 1;
/// Packet Too Big.
pub const ICMPV6_PKT_TOOBIG: u8 = 2;
/// Time Exceeded.
pub const ICMPV6_TIME_EXCEED: u8 = 3;
/// Destination Unreachable code 4: port unreachable.
pub const ICMPV6_PORT_UNREACH: u8 = 4;
/// Time Exceeded code 0: hop limit exceeded in transit.
pub const ICMPV6_EXC_HOPLIMIT: u8 = 0;
/// Types with this bit set are informational, the others errors.
pub const ICMPV6_INFOMSG_MASK: u8 = 0x80;
/// Neighbour Solicitation.
pub const NDISC_NEIGHBOUR_SOLICITATION: u8 = 135;
/// Neighbour Advertisement.
pub const NDISC_NEIGHBOUR_ADVERTISEMENT: u8 = 136;
/// ND option: source link-layer address.
pub const ND_OPT_SOURCE_LL_ADDR: u8 = 1;
/// ND option: target link-layer address.
pub const ND_OPT_TARGET_LL_ADDR: u8 = 2;
/// Length of an NS or NA without options (`struct nd_msg`).
pub const ND_MSG_LEN: usize = 24;
/// The most of the invoking packet an error quotes: `icmp6_send` keeps the
/// error within the minimum MTU (`IPV6_MIN_MTU - sizeof(ipv6hdr) -
/// sizeof(icmp6hdr)`).
pub const ERROR_MAX_QUOTE: usize = ipv6::MIN_MTU - ipv6::HEADER_LEN - HEADER_LEN;
/// NA flag: the sender is a router.
pub const NA_ROUTER: u8 = 0x80;
/// NA flag: sent in response to a solicitation.
pub const NA_SOLICITED: u8 = 0x40;
/// NA flag: override an existing cache entry.
pub const NA_OVERRIDE: u8 = 0x20;
/// The all-nodes link-local multicast address, ff02::1.
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// The checksum of the ICMPv6 message `msg` (its checksum field taken as
/// it is, so zero it first) from `src` to `dst`: over the pseudo-header of
/// RFC 8200 §8.1 with Next Header 58 and the message (`csum_ipv6_magic`).
pub fn checksum(src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) -> u16 {
    let ph = checksum::pseudo_header_sum_v6(src, dst, IPPROTO_ICMPV6, msg.len() as u32);
    !checksum::fold(checksum::ones_sum(msg, ph))
}

/// Whether the message `msg` from `src` to `dst` carries a correct checksum
/// (`icmpv6_rcv`'s `skb_checksum_validate`).
pub fn verify(src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) -> bool {
    checksum::verify(msg, checksum::pseudo_header_sum_v6(src, dst, IPPROTO_ICMPV6, msg.len() as u32))
}

/// Recomputes the checksum of the message at `msg` in place.
pub fn fill_checksum(src: Ipv6Addr, dst: Ipv6Addr, msg: &mut [u8]) {
    msg[2..4].copy_from_slice(&[0, 0]);
    let c = checksum(src, dst, msg);
    msg[2..4].copy_from_slice(&c.to_be_bytes());
}

/// The solicited-node multicast address of `a` (RFC 4291 §2.7.1):
/// ff02::1:ff00:0/104 with the low 24 bits of `a`.
pub fn solicited_node(a: &Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00 | u16::from(o[13]), u16::from_be_bytes([o[14], o[15]]))
}

/// The Ethernet multicast address of an IPv6 multicast address (RFC 2464
/// §7): 33:33 and its low 32 bits.
pub fn multicast_mac(a: &Ipv6Addr) -> MacAddr {
    let o = a.octets();
    MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

/// An IPv6 packet carrying the ICMPv6 message `msg` (checksum filled in
/// here) in an Ethernet frame: `l2` is the received frame's Ethernet header
/// (an 802.1Q tag is kept), with the MACs replaced. Traffic class and flow
/// label 0.
fn frame(l2: &[u8], dst_mac: MacAddr, src_mac: MacAddr, hop_limit: u8, src: Ipv6Addr, dst: Ipv6Addr, mut msg: Vec<u8>) -> Vec<u8> {
    fill_checksum(src, dst, &mut msg);
    let l3 = l2.len();
    let mut f = Vec::with_capacity(l3 + ipv6::HEADER_LEN + msg.len());
    f.extend_from_slice(l2);
    f[0..6].copy_from_slice(&dst_mac.0);
    f[6..12].copy_from_slice(&src_mac.0);
    f[l3 - 2..l3].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
    f.resize(l3 + ipv6::HEADER_LEN, 0);
    let mut ip = Ipv6Packet::new_unchecked(&mut f[l3..]);
    ip.set_version(6);
    ip.set_payload_len(msg.len() as u16);
    ip.set_next_header(IpProtocol::Icmpv6);
    ip.set_hop_limit(hop_limit);
    ip.set_src_addr(src);
    ip.set_dst_addr(dst);
    f.extend_from_slice(&msg);
    f
}

/// What an ICMPv6 error says and between whom (see [`error_frame`]).
#[derive(Clone, Copy, Debug)]
pub struct Icmpv6Error {
    /// Type.
    pub typ: u8,
    /// Code.
    pub code: u8,
    /// The 32-bit word after the checksum (MTU for Packet Too Big).
    pub info: u32,
    /// Source address (`icmp6_send`'s choice).
    pub src: Ipv6Addr,
    /// Destination: the invoking packet's source.
    pub dst: Ipv6Addr,
    /// Hop limit (the route's, `ip6_sk_dst_hoplimit`: 64 by default).
    pub hop_limit: u8,
}

/// The frame `icmp6_send` transmits about the invoking IPv6 packet `orig`
/// (from its fixed header to the end of its payload): traffic class 0,
/// flow label 0 (see the note in the director's ICMPv6 module), Next Header
/// 58; the message quotes the first [`ERROR_MAX_QUOTE`] bytes of `orig` at
/// most, so that the error fits in 1280 bytes. `l2` is the Ethernet header
/// to reuse.
pub fn error_frame(l2: &[u8], dst_mac: MacAddr, src_mac: MacAddr, e: &Icmpv6Error, orig: &[u8]) -> Vec<u8> {
    let quote = &orig[..orig.len().min(ERROR_MAX_QUOTE)];
    let mut msg = Vec::with_capacity(HEADER_LEN + quote.len());
    msg.extend_from_slice(&[e.typ, e.code, 0, 0]);
    msg.extend_from_slice(&e.info.to_be_bytes());
    msg.extend_from_slice(quote);
    frame(l2, dst_mac, src_mac, e.hop_limit, e.src, e.dst, msg)
}

/// What a Neighbour Advertisement says (see [`na_frame`]).
#[derive(Clone, Copy, Debug)]
pub struct NeighbourAdvert {
    /// R, S, O in the first byte ([`NA_ROUTER`], [`NA_SOLICITED`],
    /// [`NA_OVERRIDE`]).
    pub flags: u8,
    /// The target address (the one solicited).
    pub target: Ipv6Addr,
    /// The target link-layer address option, when included.
    pub tlla: Option<MacAddr>,
    /// IPv6 source (the target, ours).
    pub src: Ipv6Addr,
    /// IPv6 destination.
    pub dst: Ipv6Addr,
}

/// The frame `ndisc_send_na` transmits: hop limit 255 (the ND socket's),
/// traffic class 0 (`ndisc_tclass`), flow label 0 (`ip6_nd_hdr`); the
/// message: type 136, code 0, checksum, the flags byte and three reserved
/// bytes, the target, then the target link-layer address option (type 2,
/// length 1, the MAC) when asked for.
pub fn na_frame(l2: &[u8], dst_mac: MacAddr, src_mac: MacAddr, na: &NeighbourAdvert) -> Vec<u8> {
    let mut msg = Vec::with_capacity(ND_MSG_LEN + 8);
    msg.extend_from_slice(&[NDISC_NEIGHBOUR_ADVERTISEMENT, 0, 0, 0, na.flags, 0, 0, 0]);
    msg.extend_from_slice(&na.target.octets());
    if let Some(m) = na.tlla {
        msg.extend_from_slice(&[ND_OPT_TARGET_LL_ADDR, 1]);
        msg.extend_from_slice(&m.0);
    }
    frame(l2, dst_mac, src_mac, 255, na.src, na.dst, msg)
}

/// The ND options after the fixed part of an NS (`ndisc_parse_options`):
/// [`WireError::BadLength`] when one has length 0 or runs past the message; the first source
/// link-layer address option otherwise (later ones are ignored, as are
/// unknown types).
pub fn parse_nd_options(mut opts: &[u8]) -> Result<Option<&[u8]>, WireError> {
    let mut slla = None;
    while !opts.is_empty() {
        let l = usize::from(*opts.get(1).ok_or(WireError::BadLength)?) * 8;
        if l == 0 || l > opts.len() {
            return Err(WireError::BadLength);
        }
        if opts[0] == ND_OPT_SOURCE_LL_ADDR && slla.is_none() {
            slla = Some(&opts[..l]);
        }
        opts = &opts[l..];
    }
    Ok(slla)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solicited_node_and_its_mac() {
        let a: Ipv6Addr = "2001:db8::12:3456:789a".parse().unwrap();
        assert_eq!(solicited_node(&a), "ff02::1:ff56:789a".parse::<Ipv6Addr>().unwrap());
        assert_eq!(multicast_mac(&solicited_node(&a)).0, [0x33, 0x33, 0xff, 0x56, 0x78, 0x9a]);
        assert_eq!(multicast_mac(&ALL_NODES).0, [0x33, 0x33, 0, 0, 0, 1]);
    }

    /// RFC 4443 §2.3: the checksum verifies, and any changed word breaks it.
    #[test]
    fn checksum_round_trip() {
        let (s, d): (Ipv6Addr, Ipv6Addr) = ("fe80::1".parse().unwrap(), "ff02::1".parse().unwrap());
        let mut m = vec![136, 0, 0, 0, 0x60, 0, 0, 0, 1, 2, 3];
        fill_checksum(s, d, &mut m);
        assert!(verify(s, d, &m));
        m[4] ^= 0x80;
        assert!(!verify(s, d, &m));
    }

    #[test]
    fn nd_options_are_walked_as_ndisc_parse_options_does() {
        let slla = [1, 1, 2, 0, 0, 0, 0, 9];
        let mut o = vec![14, 1, 0, 0, 0, 0, 0, 0];
        o.extend_from_slice(&slla);
        o.extend_from_slice(&[1, 1, 2, 0, 0, 0, 0, 8]);
        assert_eq!(parse_nd_options(&o), Ok(Some(&slla[..])), "unknown skipped, the first SLLA kept");
        assert_eq!(parse_nd_options(&[]), Ok(None));
        assert_eq!(parse_nd_options(&[1, 0, 0, 0, 0, 0, 0, 0]), Err(WireError::BadLength), "length 0");
        assert_eq!(parse_nd_options(&[1, 2, 0, 0, 0, 0, 0, 0]), Err(WireError::BadLength), "past the end");
        assert_eq!(parse_nd_options(&[1]), Err(WireError::BadLength), "half a header");
    }
}
