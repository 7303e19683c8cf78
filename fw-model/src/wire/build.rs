//! Builders of complete Ethernet frames for tests and the traffic
//! generator: correct lengths and all checksums, no FCS.
//!
//! The reprs describe the headers; the builders fill in what follows from
//! the layering: the Ethernet EtherType (IPv4 or ARP), the IPv4 Protocol and
//! `payload_len`, and the L4 lengths. Frames are not padded; call
//! [`pad_min`] for a minimum-size Ethernet frame.

use super::ethernet::MIN_FRAME_LEN;
use super::{
    ArpPacket, ArpRepr, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr, IpProtocol, Ipv4Packet, Ipv4Repr,
    Ipv6Packet, Ipv6Repr, TcpPacket, TcpRepr, UdpPacket, UdpRepr, WireError, ETHERTYPE_ARP, ETHERTYPE_IPV4,
    ETHERTYPE_IPV6, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP,
};
use std::net::Ipv4Addr;

/// Pads `frame` with zero bytes to the 60-byte Ethernet minimum (IEEE
/// 802.3's 64 bytes less the FCS); longer frames are left alone.
pub fn pad_min(frame: &mut Vec<u8>) {
    if frame.len() < MIN_FRAME_LEN {
        frame.resize(MIN_FRAME_LEN, 0);
    }
}

/// Ethernet + IPv4 frame whose L4 part (`l4_len` bytes) `fill` writes.
fn ipv4_frame(
    eth: &EthernetRepr,
    ip: &Ipv4Repr,
    protocol: u8,
    l4_len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), WireError>,
) -> Result<Vec<u8>, WireError> {
    let eth = EthernetRepr { ethertype: ETHERTYPE_IPV4, ..*eth };
    let ip = Ipv4Repr { protocol, payload_len: l4_len, ..*ip };
    let l2 = eth.header_len();
    let mut buf = vec![0u8; l2 + ip.buffer_len()];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]))?;
    let mut p = Ipv4Packet::new_unchecked(&mut buf[l2..]);
    ip.emit(&mut p)?;
    fill(p.payload_mut())?;
    Ok(buf)
}

fn built(r: Result<Vec<u8>, WireError>) -> Vec<u8> {
    match r {
        Ok(v) => v,
        // Buffers are sized from the reprs, so the only possible failure is
        // a datagram longer than IPv4 (or an IPv6 payload) can carry.
        Err(e) => panic!("frame builder: IP datagram longer than 65535 bytes ({e})"),
    }
}

/// A complete TCP/IPv4 frame: `eth`, `ip` (Protocol 6, lengths computed),
/// `tcp` with `payload`, IPv4 and TCP checksums filled.
///
/// # Panics
/// If the IPv4 datagram would exceed 65535 bytes.
pub fn tcp_frame(eth: &EthernetRepr, ip: &Ipv4Repr, tcp: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (ip.src_addr, ip.dst_addr);
    built(ipv4_frame(eth, ip, IPPROTO_TCP, tcp.buffer_len(payload.len()), |b| {
        tcp.emit(&mut TcpPacket::new_unchecked(b), payload, src, dst)
    }))
}

/// A complete UDP/IPv4 frame: `eth`, `ip` (Protocol 17, lengths computed),
/// `udp` with `payload`, IPv4 and UDP checksums filled (a computed 0 stored
/// as `0xFFFF`).
///
/// # Panics
/// If the IPv4 datagram would exceed 65535 bytes.
pub fn udp_frame(eth: &EthernetRepr, ip: &Ipv4Repr, udp: &UdpRepr, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (ip.src_addr, ip.dst_addr);
    built(ipv4_frame(eth, ip, IPPROTO_UDP, udp.buffer_len(payload.len()), |b| {
        udp.emit(&mut UdpPacket::new_unchecked(b), payload, src, dst)
    }))
}

/// Ethernet + IPv6 frame (no extension headers) whose upper-layer part
/// (`l4_len` bytes) `fill` writes.
fn ipv6_frame(
    eth: &EthernetRepr,
    ip: &Ipv6Repr,
    next_header: u8,
    l4_len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), WireError>,
) -> Result<Vec<u8>, WireError> {
    let eth = EthernetRepr { ethertype: ETHERTYPE_IPV6, ..*eth };
    let payload_len = u16::try_from(l4_len).map_err(|_| WireError::BadLength)?;
    let ip = Ipv6Repr { next_header: IpProtocol::from(next_header), payload_len, ..*ip };
    let l2 = eth.header_len();
    let mut buf = vec![0u8; l2 + super::ipv6::HEADER_LEN + l4_len];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]))?;
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut buf[l2..]))?;
    fill(&mut buf[l2 + super::ipv6::HEADER_LEN..])?;
    Ok(buf)
}

/// A complete TCP/IPv6 frame: `eth`, `ip` (Next Header 6, Payload Length
/// computed), `tcp` with `payload`, the TCP checksum over the IPv6
/// pseudo-header.
///
/// # Panics
/// If the TCP segment would exceed 65535 bytes.
pub fn tcp6_frame(eth: &EthernetRepr, ip: &Ipv6Repr, tcp: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (ip.src_addr, ip.dst_addr);
    built(ipv6_frame(eth, ip, IPPROTO_TCP, tcp.buffer_len(payload.len()), |b| {
        let mut p = TcpPacket::new_unchecked(b);
        tcp.emit(&mut p, payload, Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED)?;
        p.fill_checksum_v6(src, dst);
        Ok(())
    }))
}

/// A complete UDP/IPv6 frame: `eth`, `ip` (Next Header 17, lengths
/// computed), `udp` with `payload`, the UDP checksum over the IPv6
/// pseudo-header (a computed 0 stored as `0xFFFF`).
///
/// # Panics
/// If the UDP datagram would exceed 65535 bytes.
pub fn udp6_frame(eth: &EthernetRepr, ip: &Ipv6Repr, udp: &UdpRepr, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (ip.src_addr, ip.dst_addr);
    built(ipv6_frame(eth, ip, IPPROTO_UDP, udp.buffer_len(payload.len()), |b| {
        let mut p = UdpPacket::new_unchecked(b);
        udp.emit(&mut p, payload, Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED)?;
        p.fill_checksum_v6(src, dst);
        Ok(())
    }))
}

/// A complete ICMPv6 frame: `eth`, `ip` (Next Header 58, Payload Length
/// computed) and the message `msg` (type, code, checksum, body), its
/// checksum filled over the IPv6 pseudo-header.
///
/// # Panics
/// If the message is shorter than its 8-byte header or exceeds 65535
/// bytes.
pub fn icmpv6_frame(eth: &EthernetRepr, ip: &Ipv6Repr, msg: &[u8]) -> Vec<u8> {
    assert!(msg.len() >= super::icmpv6::HEADER_LEN, "an ICMPv6 message of {} bytes", msg.len());
    let (src, dst) = (ip.src_addr, ip.dst_addr);
    built(ipv6_frame(eth, ip, super::icmpv6::IPPROTO_ICMPV6, msg.len(), |b| {
        b.copy_from_slice(msg);
        super::icmpv6::fill_checksum(src, dst, b);
        Ok(())
    }))
}

/// A complete ICMP/IPv4 frame: `eth`, `ip` (Protocol 1, lengths computed),
/// `icmp` with `data`, IPv4 and ICMP checksums filled.
///
/// # Panics
/// If the IPv4 datagram would exceed 65535 bytes.
pub fn icmp_frame(eth: &EthernetRepr, ip: &Ipv4Repr, icmp: &Icmpv4Repr, data: &[u8]) -> Vec<u8> {
    built(ipv4_frame(eth, ip, IPPROTO_ICMP, icmp.buffer_len(data.len()), |b| {
        icmp.emit(&mut Icmpv4Packet::new_unchecked(b), data)
    }))
}

/// A complete ARP frame (EtherType `0x0806`, 28-byte ARP packet, not
/// padded).
pub fn arp_frame(eth: &EthernetRepr, arp: &ArpRepr) -> Vec<u8> {
    let eth = EthernetRepr { ethertype: ETHERTYPE_ARP, ..*eth };
    let l2 = eth.header_len();
    let mut buf = vec![0u8; l2 + arp.buffer_len()];
    // Both emits only fail on a short buffer; the buffer is sized above.
    let r = eth
        .emit(&mut EthernetFrame::new_unchecked(&mut buf[..]))
        .and_then(|()| arp.emit(&mut ArpPacket::new_unchecked(&mut buf[l2..])));
    debug_assert!(r.is_ok());
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::icmp::{ICMP_ECHO_REQUEST, ICMP_TIME_EXCEEDED};
    use crate::wire::{parse_frame, ArpOperation, ChecksumCheck, MacAddr, TCP_ACK};
    use std::net::Ipv4Addr;

    fn eth() -> EthernetRepr {
        EthernetRepr { src: MacAddr([2, 0, 0, 0, 0, 1]), dst: MacAddr::BROADCAST, vlan_tci: None, ethertype: 0 }
    }

    fn ip() -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            protocol: 0,
            payload_len: 999,
            ttl: 64,
            tos: 0,
            ident: 1,
            dont_frag: false,
        }
    }

    #[test]
    fn tcp_frame_parses_back() {
        let t = TcpRepr { src_port: 1, dst_port: 2, seq_number: 3, ack_number: 4, flags: TCP_ACK, window_len: 5 };
        let f = tcp_frame(&eth(), &ip(), &t, b"data");
        assert_eq!(f.len(), 14 + 20 + 20 + 4);
        let e = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(e.ethertype(), ETHERTYPE_IPV4);
        let p = Ipv4Packet::new_checked(e.payload()).unwrap();
        let r = Ipv4Repr::parse(&p, ChecksumCheck::Verify).unwrap();
        assert_eq!(r, Ipv4Repr { protocol: IPPROTO_TCP, payload_len: 24, ..ip() });
        let s = TcpPacket::new_checked(p.payload()).unwrap();
        assert_eq!(TcpRepr::parse(&s, r.src_addr, r.dst_addr, ChecksumCheck::Verify).unwrap(), t);
        assert_eq!(s.payload(), b"data");
    }

    #[test]
    fn udp_and_icmp_frames() {
        let f = udp_frame(&eth(), &ip(), &UdpRepr { src_port: 9, dst_port: 10 }, b"");
        assert_eq!(f.len(), 42);
        let p = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert!(p.verify_checksum());
        let u = UdpPacket::new_checked(p.payload()).unwrap();
        assert!(u.checksum() != 0 && u.verify_checksum(p.src_addr(), p.dst_addr()));

        let f = icmp_frame(&eth(), &ip(), &Icmpv4Repr::echo(ICMP_ECHO_REQUEST, 7, 8), b"ping");
        let p = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(p.protocol(), IPPROTO_ICMP);
        let i = Icmpv4Packet::new_checked(p.payload()).unwrap();
        assert!(i.verify_checksum());
        assert_eq!((i.echo_ident(), i.echo_seq_no(), i.data()), (7, 8, &b"ping"[..]));

        // An ICMP time-exceeded quoting the echo frame's IP header + 8 bytes.
        let quoted = &f[14..14 + 28];
        let te = Icmpv4Repr { msg_type: ICMP_TIME_EXCEEDED, msg_code: 0, rest_of_header: 0 };
        let g = icmp_frame(&eth(), &ip(), &te, quoted);
        let p = Ipv4Packet::new_checked(&g[14..]).unwrap();
        let i = Icmpv4Packet::new_checked(p.payload()).unwrap();
        assert!(i.is_error() && i.verify_checksum());
        let inner = Ipv4Packet::new_checked_header(i.data()).unwrap();
        assert_eq!(inner.total_len(), 32);
        assert_eq!(inner.payload().len(), 8);
        // The full check fails: the quote is shorter than its Total Length.
        assert_eq!(Ipv4Packet::new_checked(i.data()).unwrap_err(), WireError::Truncated);
    }

    #[test]
    fn arp_frame_and_padding() {
        let a = ArpRepr {
            operation: ArpOperation::Reply,
            sender_mac: MacAddr([2, 0, 0, 0, 0, 9]),
            sender_ip: Ipv4Addr::new(10, 0, 0, 9),
            target_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            target_ip: Ipv4Addr::new(10, 0, 0, 1),
        };
        let mut f = arp_frame(&EthernetRepr { vlan_tci: Some(7), ..eth() }, &a);
        assert_eq!(f.len(), 18 + 28);
        pad_min(&mut f);
        assert_eq!(f.len(), 60);
        assert!(f[46..].iter().all(|&b| b == 0));
        let e = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!((e.ethertype(), e.vlan_tci()), (ETHERTYPE_ARP, Some(7)));
        assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(e.payload()).unwrap()).unwrap(), a);
        let mut long = vec![1u8; 61];
        pad_min(&mut long);
        assert_eq!(long.len(), 61);
        assert!(parse_frame(&f).is_ok());
    }

    #[test]
    fn tcp6_and_udp6_frames_parse_back_with_pseudo_header_checksums() {
        let (src, dst) = ("2001:db8:c::7".parse().unwrap(), "2001:db8::10".parse().unwrap());
        let ip6 = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol::from(0),
            payload_len: 999,
            hop_limit: 61,
            traffic_class: 0,
            flow_label: 0x12345,
        };
        let t = TcpRepr { src_port: 1, dst_port: 80, seq_number: 3, ack_number: 4, flags: TCP_ACK, window_len: 5 };
        let f = tcp6_frame(&eth(), &ip6, &t, b"data");
        assert_eq!(f.len(), 14 + 40 + 20 + 4);
        let i = parse_frame(&f);
        assert_eq!(i.error, None);
        let v6 = i.ipv6.unwrap();
        assert_eq!((v6.payload_len, v6.hop_limit, v6.flow_label, v6.next_header), (24, 61, 0x12345, IpProtocol::Tcp));
        let s = TcpPacket::new_checked(&f[54..]).unwrap();
        assert!(s.verify_checksum_v6(src, dst));
        assert!(!s.verify_checksum_v6(dst, dst));
        assert_eq!((s.dst_port(), s.payload()), (80, &b"data"[..]));
        let f = udp6_frame(&eth(), &ip6, &UdpRepr { src_port: 9, dst_port: 53 }, b"q");
        assert_eq!(parse_frame(&f).error, None);
        let u = UdpPacket::new_checked(&f[54..]).unwrap();
        assert_eq!(u.len(), 9);
        assert!(u.verify_checksum_v6(src, dst));
        assert!(!u.verify_checksum_v6(src, src));
    }

    #[test]
    #[should_panic(expected = "longer than 65535")]
    fn oversize_panics_with_message() {
        let big = vec![0u8; 65536 - 20 - 8];
        udp_frame(&eth(), &ip(), &UdpRepr { src_port: 1, dst_port: 2 }, &big);
    }
}
