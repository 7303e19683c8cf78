//! The receive classification of the common frame in one short pass: an
//! untagged IPv4 TCP or UDP packet without options, not a fragment, whose
//! header verifies and whose lengths are consistent. For such a frame
//! [`fast_pkt`] gives exactly the [`Pkt`] that the full classifier
//! ([`wire::parse_frame`](crate::wire::parse_frame) and the checks of
//! `process_inner`) would build; any other frame (tagged, options,
//! fragment, ICMP, IPv6, ARP, malformed) gets `None` and takes the full
//! path. It saves the building and copying of a whole `FrameInfo` per
//! packet on the established-connection path (issue 22 item 5).

use super::Pkt;
use crate::wire::{checksum, ETHERTYPE_IPV4, IPPROTO_TCP, IPPROTO_UDP};

/// Ethernet header of an untagged frame.
const L3: usize = 14;
/// IPv4 header without options.
const IHL: usize = 20;

/// The [`Pkt`] of an untagged, option-less, unfragmented IPv4 TCP or UDP
/// frame that the full classifier accepts without error and whose header
/// checksum verifies; `None` for every other frame.
#[inline]
pub(super) fn fast_pkt(frame: &[u8]) -> Option<Pkt> {
    if frame.len() < L3 + IHL || u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = &frame[L3..];
    // Version 4, IHL 5.
    if ip[0] != 0x45 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if total < IHL || total > ip.len() {
        return None;
    }
    let flg_off = u16::from_be_bytes([ip[6], ip[7]]);
    // MF or a fragment offset: reassembly first.
    if flg_off & 0x3FFF != 0 {
        return None;
    }
    let proto = ip[9];
    let l4 = &ip[IHL..total];
    let flags = match proto {
        IPPROTO_TCP => {
            let doff = usize::from(l4.get(12)? >> 4) * 4;
            if l4.len() < 20 || doff < 20 || doff > l4.len() {
                return None;
            }
            l4[13]
        }
        IPPROTO_UDP if l4.len() >= 8 => 0,
        _ => return None,
    };
    if !checksum::verify(&ip[..IHL], 0) {
        return None;
    }
    let be32 = |o: usize| u32::from_be_bytes([ip[o], ip[o + 1], ip[o + 2], ip[o + 3]]);
    Some(Pkt {
        l3: L3,
        ihl: IHL,
        len: total as u16,
        saddr: be32(12),
        daddr: be32(16),
        proto,
        ttl: ip[8],
        df: flg_off & 0x4000 != 0,
        l4: Some((L3 + IHL, u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]]), flags)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::wire::build::{tcp_frame, udp_frame};
    use crate::wire::{parse_frame, EthernetRepr, Ipv4Repr, MacAddr, TcpRepr, UdpRepr, ETHERTYPE_VLAN};
    use std::net::Ipv4Addr;

    /// What `process_inner` builds from the full classifier for a frame it
    /// takes to the IPv4 TCP/UDP path with no error, untagged and without
    /// options (the frames [`fast_pkt`] claims); `None` otherwise.
    fn full_pkt(frame: &[u8]) -> Option<Pkt> {
        let info = parse_frame(frame);
        if frame.len() < 14 || info.error.is_some() || info.vlan_tci.is_some() || info.ethertype != ETHERTYPE_IPV4 {
            return None;
        }
        let ip = info.ipv4?;
        if !ip.header_checksum_ok || ip.has_options || ip.is_fragment() {
            return None;
        }
        let l4 = info.l4?;
        Some(Pkt {
            l3: ip.l3_offset,
            ihl: ip.header_len,
            len: ip.total_len,
            saddr: u32::from(ip.src),
            daddr: u32::from(ip.dst),
            proto: u8::from(ip.protocol),
            ttl: ip.ttl,
            df: ip.df,
            l4: Some((l4.offset, l4.src_port, l4.dst_port, l4.tcp_flags)),
        })
    }

    fn base(rng: &mut SplitMix64, udp: bool) -> Vec<u8> {
        let eth = EthernetRepr { src: MacAddr([2, 0, 0, 0, 0, 9]), dst: MacAddr([2, 0, 0, 0, 0, 1]), vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
        let ip = Ipv4Repr {
            src_addr: Ipv4Addr::from(rng.next_u64() as u32),
            dst_addr: Ipv4Addr::from(rng.next_u64() as u32),
            protocol: if udp { 17 } else { 6 },
            payload_len: 0,
            ttl: rng.next_u64() as u8,
            tos: rng.next_u64() as u8,
            ident: rng.next_u64() as u16,
            dont_frag: rng.next_u64() & 1 == 0,
        };
        let payload = vec![0xA5u8; rng.below(40) as usize];
        if udp {
            let u = UdpRepr { src_port: rng.next_u64() as u16, dst_port: rng.next_u64() as u16 };
            udp_frame(&eth, &ip, &u, &payload)
        } else {
            let t = TcpRepr { src_port: rng.next_u64() as u16, dst_port: rng.next_u64() as u16, seq_number: 1, ack_number: 2, flags: rng.next_u64() as u8, window_len: 512 };
            tcp_frame(&eth, &ip, &t, &payload)
        }
    }

    /// On valid frames and on frames with one to three random bytes of the
    /// headers changed, random truncation or padding, or a VLAN tag, the
    /// fast classification is exactly what the full path builds for the
    /// frames it claims, and `None` for every other.
    #[test]
    fn agrees_with_the_full_classifier() {
        let mut rng = SplitMix64::new(22_5);
        let mut fast = 0usize;
        for i in 0..200_000 {
            let mut f = base(&mut rng, i % 3 == 0);
            match i % 8 {
                0 => {}
                1 => f.truncate(rng.below(f.len() as u64 + 1) as usize),
                2 => f.extend(std::iter::repeat(0).take(rng.below(30) as usize)),
                3 => {
                    // An 802.1Q tag.
                    let tag = [(ETHERTYPE_VLAN >> 8) as u8, ETHERTYPE_VLAN as u8, 0, 5];
                    f.splice(12..12, tag);
                }
                _ => {
                    for _ in 0..1 + rng.below(3) {
                        let at = 12 + rng.below(22 + 20) as usize;
                        if at < f.len() {
                            f[at] = rng.next_u64() as u8;
                        }
                    }
                }
            }
            let got = fast_pkt(&f);
            assert_eq!(got, full_pkt(&f), "frame {i}: {f:02x?}");
            fast += usize::from(got.is_some());
        }
        // Many frames are claimed (every unchanged or padded one), so the
        // comparison above covered both answers.
        assert!(fast > 50_000 && fast < 190_000, "{fast} of 200000 claimed");
    }
}
