//! One-pass frame classification ([`parse_frame`]), shared by the director
//! and the hardware model.
//!
//! The classifier reads Ethernet (one optional 802.1Q tag), IPv4 or IPv6
//! (with its extension-header chain) and the fixed TCP/UDP header in a
//! single pass through the typed views of this module's siblings, never
//! panics and never allocates. It fills [`FrameInfo`] as far as parsing got
//! and records in [`FrameInfo::error`] why it stopped, or what it found
//! malformed. It does not drop anything: policy (to the host, drop,
//! forward) is the caller's.

use super::ipv6::{self, FragmentInfo, Ipv6Packet, UpperLayer};
use super::{ipv4, tcp, udp};
use super::{EthernetFrame, IpProtocol, Ipv4Packet, TcpPacket, UdpPacket, WireError, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Why [`parse_frame`] stopped early, or what it found malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum FrameError {
    /// Shorter than the Ethernet header (14 bytes, or 18 when the EtherType
    /// is the 802.1Q TPID).
    #[error("runt frame: shorter than its Ethernet header")]
    Runt,
    /// Fewer than 20 bytes, or fewer than IHL × 4, after the Ethernet header.
    #[error("truncated IPv4 header")]
    Ipv4Truncated,
    /// IPv4 EtherType but version field not 4.
    #[error("IPv4 EtherType with IP version not 4")]
    Ipv4BadVersion,
    /// IHL below 5.
    #[error("IPv4 header length (IHL) below 5")]
    Ipv4BadHeaderLen,
    /// Total Length below the header length.
    #[error("IPv4 total length below header length")]
    Ipv4BadTotalLen,
    /// Total Length larger than the bytes after the Ethernet header.
    #[error("IPv4 total length exceeds the frame")]
    Ipv4TotalLenExceedsFrame,
    /// Fewer than 40 bytes after the Ethernet header.
    #[error("truncated IPv6 header")]
    Ipv6Truncated,
    /// IPv6 EtherType but version field not 6.
    #[error("IPv6 EtherType with IP version not 6")]
    Ipv6BadVersion,
    /// 40 + Payload Length larger than the bytes after the Ethernet header.
    #[error("IPv6 payload length exceeds the frame")]
    Ipv6PayloadLenExceedsFrame,
    /// The extension-header chain cannot be walked to an upper layer
    /// (`ipv6_find_hdr` fails: a header cut off, or a later fragment whose
    /// Next Header is another extension header).
    #[error("bad IPv6 extension-header chain")]
    Ipv6BadExtHeader,
    /// The fixed TCP (20 bytes) or UDP (8 bytes) header does not fit inside
    /// the IP packet.
    #[error("TCP/UDP header truncated")]
    L4Truncated,
    /// TCP Data Offset below 5 or beyond the IP packet. The fixed header
    /// (ports, flags) was read and [`FrameInfo::l4`] is filled.
    #[error("bad TCP data offset")]
    TcpBadHeaderLen,
}

impl From<FrameError> for WireError {
    fn from(e: FrameError) -> WireError {
        match e {
            FrameError::Runt
            | FrameError::Ipv4Truncated
            | FrameError::Ipv4TotalLenExceedsFrame
            | FrameError::Ipv6Truncated
            | FrameError::Ipv6PayloadLenExceedsFrame
            | FrameError::L4Truncated => WireError::Truncated,
            FrameError::Ipv4BadVersion | FrameError::Ipv6BadVersion => WireError::BadVersion,
            FrameError::Ipv4BadHeaderLen | FrameError::TcpBadHeaderLen => WireError::BadHeaderLen,
            FrameError::Ipv4BadTotalLen => WireError::BadTotalLen,
            FrameError::Ipv6BadExtHeader => WireError::BadLength,
        }
    }
}

/// The IPv4 header fields classification needs (RFC 791).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Info {
    /// Offset of the IPv4 header in the frame (= [`FrameInfo::l2_len`]).
    pub l3_offset: usize,
    /// Header length in bytes (IHL × 4).
    pub header_len: usize,
    /// Total Length.
    pub total_len: u16,
    /// Source Address.
    pub src: Ipv4Addr,
    /// Destination Address.
    pub dst: Ipv4Addr,
    /// Protocol.
    pub protocol: IpProtocol,
    /// Time to Live.
    pub ttl: u8,
    /// Whole TOS byte.
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment.
    pub df: bool,
    /// More Fragments.
    pub mf: bool,
    /// Fragment Offset **in bytes** (the wire field × 8).
    pub frag_offset_bytes: u16,
    /// IHL > 5.
    pub has_options: bool,
    /// Whether the header checksum verifies.
    pub header_checksum_ok: bool,
}

impl Ipv4Info {
    /// Whether this is a fragment (MF or a non-zero offset).
    pub fn is_fragment(&self) -> bool {
        self.mf || self.frag_offset_bytes != 0
    }

    /// Whether this is a fragment other than the first (offset non-zero):
    /// no L4 header.
    pub fn is_non_first_fragment(&self) -> bool {
        self.frag_offset_bytes != 0
    }

    /// Offset of the L4 header in the frame.
    pub fn l4_offset(&self) -> usize {
        self.l3_offset + self.header_len
    }

    /// Bytes after the IPv4 header (Total Length − header length; 0 if the
    /// total length is inconsistent).
    pub fn payload_len(&self) -> usize {
        usize::from(self.total_len).saturating_sub(self.header_len)
    }
}

/// The IPv6 header fields and extension-header chain classification needs
/// (RFC 8200).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Info {
    /// Offset of the IPv6 header in the frame (= [`FrameInfo::l2_len`]).
    pub l3_offset: usize,
    /// Payload Length.
    pub payload_len: u16,
    /// Source Address.
    pub src: Ipv6Addr,
    /// Destination Address.
    pub dst: Ipv6Addr,
    /// Next Header of the fixed header.
    pub next_header: IpProtocol,
    /// Hop Limit.
    pub hop_limit: u8,
    /// Traffic Class.
    pub traffic_class: u8,
    /// Flow Label.
    pub flow_label: u32,
    /// The upper layer found by the extension-header walk, when the
    /// Payload Length fits the frame and the walk succeeded.
    pub upper: Option<UpperLayer>,
}

impl Ipv6Info {
    /// The Fragment header, if the chain has one.
    pub fn fragment(&self) -> Option<FragmentInfo> {
        self.upper.and_then(|u| u.fragment)
    }
}

/// The fixed TCP/UDP header fields classification needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct L4Info {
    /// Offset of the TCP/UDP header in the frame.
    pub offset: usize,
    /// Source Port.
    pub src_port: u16,
    /// Destination Port.
    pub dst_port: u16,
    /// TCP control bits (byte 13); 0 for UDP.
    pub tcp_flags: u8,
    /// TCP Data Offset × 4 as found (may be invalid when
    /// [`FrameError::TcpBadHeaderLen`] is reported); 8 for UDP.
    pub l4_header_len: usize,
}

/// What [`parse_frame`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FrameInfo {
    /// Ethernet header length: 14, 18 with an 802.1Q tag, 0 for a runt.
    pub l2_len: usize,
    /// 802.1Q TCI if tagged.
    pub vlan_tci: Option<u16>,
    /// Payload EtherType (after the tag); 0 for a runt.
    pub ethertype: u16,
    /// IPv4 header fields, when the EtherType is IPv4 and the whole IPv4
    /// header (IHL × 4 bytes, IHL >= 5, version 4) is present.
    pub ipv4: Option<Ipv4Info>,
    /// IPv6 header fields, when the EtherType is IPv6 and the fixed header
    /// (version 6) is present.
    pub ipv6: Option<Ipv6Info>,
    /// TCP/UDP ports and flags, when [`ipv4`](Self::ipv4) (with a
    /// consistent Total Length) or [`ipv6`](Self::ipv6) (with an upper
    /// layer found) is present, the protocol is TCP or UDP, the packet is
    /// not a non-first fragment, and the fixed L4 header fits inside the
    /// IP packet.
    pub l4: Option<L4Info>,
    /// Why parsing stopped early or what is malformed; `None` when the frame
    /// parsed cleanly as far as this classifier goes (which includes
    /// non-IP frames, ICMP, other protocols and non-first fragments).
    pub error: Option<FrameError>,
}

impl FrameInfo {
    /// Whether nothing malformed was found.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// Records why parsing stopped and returns the result.
    #[inline(always)]
    fn stop(mut self, e: FrameError) -> FrameInfo {
        self.error = Some(e);
        self
    }
}

/// Classifies an Ethernet frame (no FCS) in one pass; never panics.
///
/// IPv4 checks follow RFC 791 and the order of Linux `ip_rcv_core`: at
/// least 20 bytes, then version 4 and IHL >= 5, then the whole header
/// present, then `header_len <= total_len <= available`. IPv6 checks follow
/// `ipv6_rcv`: 40 bytes, version 6, `40 + payload_len <= available`; then
/// the extension headers are walked as IPVS walks them
/// ([`Ipv6Packet::upper_layer`]). Bytes after the IP packet (Ethernet
/// padding) are ignored. The IPv4 header checksum is reported in
/// [`Ipv4Info::header_checksum_ok`], not treated as an error. The UDP
/// Length field is not validated (IPVS does not look at it either).
pub fn parse_frame(frame: &[u8]) -> FrameInfo {
    let info = FrameInfo::default();
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return info.stop(FrameError::Runt);
    };
    let info = FrameInfo { l2_len: eth.header_len(), vlan_tci: eth.vlan_tci(), ethertype: eth.ethertype(), ..info };
    let l3 = info.l2_len;
    match info.ethertype {
        ETHERTYPE_IPV4 => parse_ipv4(info, eth.payload(), l3),
        ETHERTYPE_IPV6 => parse_ipv6(info, eth.payload(), l3),
        _ => info,
    }
}

// Inlined (as parse_l4 and stop): FrameInfo passes by value, and each
// call that is not inlined copies it (a memmove per frame).
#[inline(always)]
fn parse_ipv4(mut info: FrameInfo, bytes: &[u8], l3: usize) -> FrameInfo {
    if bytes.len() < ipv4::HEADER_LEN {
        return info.stop(FrameError::Ipv4Truncated);
    }
    let ip = Ipv4Packet::new_unchecked(bytes);
    if ip.version() != 4 {
        return info.stop(FrameError::Ipv4BadVersion);
    }
    let header_len = ip.header_len();
    if header_len < ipv4::HEADER_LEN {
        return info.stop(FrameError::Ipv4BadHeaderLen);
    }
    if header_len > bytes.len() {
        return info.stop(FrameError::Ipv4Truncated);
    }
    let v4 = Ipv4Info {
        l3_offset: l3,
        header_len,
        total_len: ip.total_len(),
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        protocol: IpProtocol::from(ip.protocol()),
        ttl: ip.ttl(),
        tos: ip.tos(),
        ident: ip.ident(),
        df: ip.dont_frag(),
        mf: ip.more_frags(),
        frag_offset_bytes: ip.frag_offset_bytes(),
        has_options: ip.has_options(),
        header_checksum_ok: ip.verify_checksum(),
    };
    info.ipv4 = Some(v4);
    let total = usize::from(v4.total_len);
    if total < header_len {
        return info.stop(FrameError::Ipv4BadTotalLen);
    }
    if total > bytes.len() {
        return info.stop(FrameError::Ipv4TotalLenExceedsFrame);
    }
    if v4.is_non_first_fragment() {
        return info;
    }
    parse_l4(info, v4.protocol, &bytes[header_len..total], l3 + header_len)
}

fn parse_ipv6(mut info: FrameInfo, bytes: &[u8], l3: usize) -> FrameInfo {
    if bytes.len() < ipv6::HEADER_LEN {
        return info.stop(FrameError::Ipv6Truncated);
    }
    let ip = Ipv6Packet::new_unchecked(bytes);
    if ip.version() != 6 {
        return info.stop(FrameError::Ipv6BadVersion);
    }
    let mut v6 = Ipv6Info {
        l3_offset: l3,
        payload_len: ip.payload_len(),
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        next_header: ip.next_header(),
        hop_limit: ip.hop_limit(),
        traffic_class: ip.traffic_class(),
        flow_label: ip.flow_label(),
        upper: None,
    };
    info.ipv6 = Some(v6);
    let end = ipv6::HEADER_LEN + usize::from(v6.payload_len);
    if end > bytes.len() {
        return info.stop(FrameError::Ipv6PayloadLenExceedsFrame);
    }
    let Ok(upper) = ip.upper_layer() else {
        return info.stop(FrameError::Ipv6BadExtHeader);
    };
    v6.upper = Some(upper);
    info.ipv6 = Some(v6);
    if upper.is_non_first_fragment() {
        return info;
    }
    parse_l4(info, upper.protocol, &bytes[upper.offset.min(end)..end], l3 + upper.offset)
}

/// The fixed TCP or UDP header of an IP packet's upper-layer bytes `l4`
/// (which end where the IP packet ends), at frame offset `offset`.
#[inline(always)]
fn parse_l4(mut info: FrameInfo, protocol: IpProtocol, l4: &[u8], offset: usize) -> FrameInfo {
    match protocol {
        IpProtocol::Tcp => {
            if l4.len() < tcp::HEADER_LEN {
                return info.stop(FrameError::L4Truncated);
            }
            let t = TcpPacket::new_unchecked(l4);
            let doff = t.header_len();
            info.l4 = Some(L4Info { offset, src_port: t.src_port(), dst_port: t.dst_port(), tcp_flags: t.flags(), l4_header_len: doff });
            if doff < tcp::HEADER_LEN || doff > l4.len() {
                return info.stop(FrameError::TcpBadHeaderLen);
            }
            info
        }
        IpProtocol::Udp => {
            if l4.len() < udp::HEADER_LEN {
                return info.stop(FrameError::L4Truncated);
            }
            let u = UdpPacket::new_unchecked(l4);
            info.l4 = Some(L4Info { offset, src_port: u.src_port(), dst_port: u.dst_port(), tcp_flags: 0, l4_header_len: udp::HEADER_LEN });
            info
        }
        _ => info,
    }
}

impl fmt::Display for FrameInfo {
    /// One line: the layers found, then the error if any. For example
    /// `VLAN 100 IPv4 198.51.100.7 > 203.0.113.10 ttl 61 TCP 40000 > 80 [S]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.l2_len == 0 {
            return write!(f, "runt");
        }
        let mut sep = "";
        if let Some(tci) = self.vlan_tci {
            write!(f, "VLAN {}", tci & 0x0FFF)?;
            sep = " ";
        }
        if let Some(v4) = self.ipv4 {
            write!(f, "{sep}IPv4 {} > {} ttl {}", v4.src, v4.dst, v4.ttl)?;
            if v4.is_fragment() {
                write!(f, " frag id {} off {}{}", v4.ident, v4.frag_offset_bytes, if v4.mf { "+" } else { "" })?;
            }
            if self.l4.is_none() {
                write!(f, " {}", v4.protocol)?;
            }
        } else if let Some(v6) = self.ipv6 {
            write!(f, "{sep}IPv6 {} > {} hlim {}", v6.src, v6.dst, v6.hop_limit)?;
            if let Some(fr) = v6.fragment() {
                write!(f, " frag id {} off {}{}", fr.ident, fr.offset_bytes, if fr.more { "+" } else { "" })?;
            }
            if self.l4.is_none() {
                match v6.upper {
                    Some(u) => write!(f, " {}", u.protocol)?,
                    None => write!(f, " nxt {}", v6.next_header)?,
                }
            }
        } else {
            write!(f, "{sep}ethertype {:#06x}", self.ethertype)?;
        }
        if let Some(l4) = self.l4 {
            if self.l4_is_udp() {
                write!(f, " UDP {} > {}", l4.src_port, l4.dst_port)?;
            } else {
                write!(f, " TCP {} > {} [{}]", l4.src_port, l4.dst_port, tcp::flag_letters(l4.tcp_flags))?;
            }
        }
        if let Some(e) = self.error {
            write!(f, " ({e})")?;
        }
        Ok(())
    }
}

impl FrameInfo {
    fn l4_is_udp(&self) -> bool {
        let p = self.ipv4.map(|v| v.protocol).or_else(|| self.ipv6.and_then(|v| v.upper.map(|u| u.protocol)));
        p == Some(IpProtocol::Udp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::{pad_min, tcp_frame, udp_frame};
    use crate::wire::{EthernetRepr, Ipv4Repr, MacAddr, TcpRepr, UdpRepr, ETHERTYPE_ARP, TCP_ACK, TCP_SYN};

    fn eth(vlan: Option<u16>) -> EthernetRepr {
        EthernetRepr {
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            dst: MacAddr([2, 0, 0, 0, 0, 2]),
            vlan_tci: vlan,
            ethertype: ETHERTYPE_IPV4,
        }
    }

    fn ip() -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Addr::new(198, 51, 100, 7),
            dst_addr: Ipv4Addr::new(203, 0, 113, 10),
            protocol: 0,
            payload_len: 0,
            ttl: 61,
            tos: 0x10,
            ident: 0x4242,
            dont_frag: true,
        }
    }

    fn tcp() -> TcpRepr {
        TcpRepr { src_port: 40000, dst_port: 80, seq_number: 7, ack_number: 0, flags: TCP_SYN, window_len: 1000 }
    }

    #[test]
    fn tcp_untagged_and_tagged() {
        for vlan in [None, Some(0x0064)] {
            let f = tcp_frame(&eth(vlan), &ip(), &tcp(), b"xyz");
            let i = parse_frame(&f);
            let l2 = if vlan.is_some() { 18 } else { 14 };
            assert_eq!(i.error, None);
            assert_eq!((i.l2_len, i.vlan_tci, i.ethertype), (l2, vlan, ETHERTYPE_IPV4));
            let v4 = i.ipv4.unwrap();
            assert_eq!(v4.l3_offset, l2);
            assert_eq!((v4.header_len, v4.total_len), (20, 43));
            assert_eq!((v4.src, v4.dst), (ip().src_addr, ip().dst_addr));
            assert_eq!((v4.protocol, v4.ttl, v4.tos, v4.ident), (IpProtocol::Tcp, 61, 0x10, 0x4242));
            assert!(v4.df && !v4.mf && v4.frag_offset_bytes == 0 && !v4.has_options && v4.header_checksum_ok);
            let l4 = i.l4.unwrap();
            assert_eq!(l4, L4Info { offset: l2 + 20, src_port: 40000, dst_port: 80, tcp_flags: TCP_SYN, l4_header_len: 20 });
        }
    }

    #[test]
    fn udp_with_padding() {
        let mut f = udp_frame(&eth(None), &ip(), &UdpRepr { src_port: 53, dst_port: 5353 }, b"q");
        assert_eq!(f.len(), 14 + 20 + 8 + 1);
        pad_min(&mut f);
        assert_eq!(f.len(), 60);
        let i = parse_frame(&f);
        assert!(i.is_ok());
        assert_eq!(i.ipv4.unwrap().total_len, 29);
        assert_eq!(i.l4.unwrap().tcp_flags, 0);
        assert_eq!(i.l4.unwrap().l4_header_len, 8);
        assert_eq!((i.l4.unwrap().src_port, i.l4.unwrap().dst_port), (53, 5353));
    }

    #[test]
    fn stop_reasons() {
        let good = tcp_frame(&eth(None), &ip(), &tcp(), b"");
        assert_eq!(parse_frame(&good[..13]).error, Some(FrameError::Runt));
        assert_eq!(parse_frame(&good[..13]).l2_len, 0);
        let tagged = tcp_frame(&eth(Some(5)), &ip(), &tcp(), b"");
        assert_eq!(parse_frame(&tagged[..17]).error, Some(FrameError::Runt));
        assert_eq!(parse_frame(&good[..33]).error, Some(FrameError::Ipv4Truncated));
        let mut f = good.clone();
        f[14] = 0x65;
        assert_eq!(parse_frame(&f).error, Some(FrameError::Ipv4BadVersion));
        f[14] = 0x44;
        assert_eq!(parse_frame(&f).error, Some(FrameError::Ipv4BadHeaderLen));
        f[14] = 0x4f; // 60-byte header, only 40 bytes present
        assert_eq!(parse_frame(&f).error, Some(FrameError::Ipv4Truncated));
        assert_eq!(parse_frame(&f).ipv4, None);
        let mut f = good.clone();
        f[16..18].copy_from_slice(&19u16.to_be_bytes());
        let i = parse_frame(&f);
        assert_eq!(i.error, Some(FrameError::Ipv4BadTotalLen));
        assert!(i.ipv4.is_some() && !i.ipv4.unwrap().header_checksum_ok && i.l4.is_none());
        f[16..18].copy_from_slice(&41u16.to_be_bytes());
        assert_eq!(parse_frame(&f).error, Some(FrameError::Ipv4TotalLenExceedsFrame));
        f[16..18].copy_from_slice(&39u16.to_be_bytes());
        assert_eq!(parse_frame(&f).error, Some(FrameError::L4Truncated));
        let mut f = good.clone();
        f[14 + 20 + 12] = 0x40;
        let i = parse_frame(&f);
        assert_eq!(i.error, Some(FrameError::TcpBadHeaderLen));
        assert_eq!(i.l4.unwrap().dst_port, 80);
        f[14 + 20 + 12] = 0x60; // 24 bytes of header, 20 present
        assert_eq!(parse_frame(&f).error, Some(FrameError::TcpBadHeaderLen));
        assert_eq!(WireError::from(FrameError::TcpBadHeaderLen), WireError::BadHeaderLen);
    }

    #[test]
    fn fragments_and_non_ip() {
        let mut f = tcp_frame(&eth(None), &ip(), &tcp(), b"");
        // First fragment (MF, offset 0): ports still reported.
        f[20] |= 0x20;
        let i = parse_frame(&f);
        assert!(i.ipv4.unwrap().mf && i.ipv4.unwrap().is_fragment());
        assert!(i.l4.is_some() && i.is_ok());
        // Non-first fragment: no L4, not an error.
        f[21] = 0x03;
        let i = parse_frame(&f);
        assert_eq!(i.ipv4.unwrap().frag_offset_bytes, 24);
        assert!(i.ipv4.unwrap().is_non_first_fragment());
        assert!(i.l4.is_none() && i.is_ok());
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        let i = parse_frame(&arp);
        assert_eq!((i.ethertype, i.ipv4, i.error), (ETHERTYPE_ARP, None, None));
        let mut syn_ack = tcp();
        syn_ack.flags = TCP_SYN | TCP_ACK;
        let f = tcp_frame(&eth(None), &ip(), &syn_ack, b"");
        assert_eq!(parse_frame(&f).l4.unwrap().tcp_flags, TCP_SYN | TCP_ACK);
    }

    fn ipv6_frame(next: u8, ext: &[u8], upper: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        let repr = crate::wire::Ipv6Repr {
            src_addr: "2001:db8::7".parse().unwrap(),
            dst_addr: "2001:db8::10".parse().unwrap(),
            next_header: IpProtocol::from(next),
            payload_len: (ext.len() + upper.len()) as u16,
            hop_limit: 63,
            traffic_class: 0,
            flow_label: 0,
        };
        let mut ip = vec![0u8; 40];
        repr.emit(&mut crate::wire::Ipv6Packet::new_unchecked(&mut ip[..])).unwrap();
        f.extend_from_slice(&ip);
        f.extend_from_slice(ext);
        f.extend_from_slice(upper);
        f
    }

    fn tcp_header(sport: u16, dport: u16, flags: u8) -> Vec<u8> {
        let mut t = vec![0u8; 20];
        t[0..2].copy_from_slice(&sport.to_be_bytes());
        t[2..4].copy_from_slice(&dport.to_be_bytes());
        t[12] = 0x50;
        t[13] = flags;
        t
    }

    #[test]
    fn ipv6_tcp_through_extension_headers() {
        let f = ipv6_frame(6, &[], &tcp_header(40000, 443, TCP_SYN));
        let i = parse_frame(&f);
        assert_eq!(i.error, None);
        assert!(i.ipv4.is_none());
        let v6 = i.ipv6.unwrap();
        assert_eq!((v6.l3_offset, v6.payload_len, v6.hop_limit, v6.next_header), (14, 20, 63, IpProtocol::Tcp));
        assert_eq!(i.l4.unwrap(), L4Info { offset: 54, src_port: 40000, dst_port: 443, tcp_flags: TCP_SYN, l4_header_len: 20 });
        assert_eq!(i.to_string(), "IPv6 2001:db8::7 > 2001:db8::10 hlim 63 TCP 40000 > 443 [S]");
        // Hop-by-Hop then Destination Options before UDP: L4 found after them.
        let ext = [60, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0];
        let f = ipv6_frame(0, &ext, &[0, 53, 0x14, 0xe9, 0, 8, 0, 0]);
        let i = parse_frame(&f);
        assert_eq!(i.error, None);
        assert_eq!(i.ipv6.unwrap().next_header, IpProtocol::HopByHop);
        assert_eq!(i.l4.unwrap().offset, 14 + 40 + 16);
        assert_eq!((i.l4.unwrap().src_port, i.l4.unwrap().dst_port), (53, 5353));
        assert_eq!(i.to_string(), "IPv6 2001:db8::7 > 2001:db8::10 hlim 63 UDP 53 > 5353");
    }

    #[test]
    fn ipv6_stop_reasons() {
        let good = ipv6_frame(6, &[], &tcp_header(1, 2, TCP_ACK));
        assert_eq!(parse_frame(&good[..14 + 39]).error, Some(FrameError::Ipv6Truncated));
        let mut f = good.clone();
        f[14] = 0x40;
        assert_eq!(parse_frame(&f).error, Some(FrameError::Ipv6BadVersion));
        let i = parse_frame(&good[..good.len() - 1]);
        assert_eq!(i.error, Some(FrameError::Ipv6PayloadLenExceedsFrame));
        assert!(i.ipv6.is_some() && i.ipv6.unwrap().upper.is_none() && i.l4.is_none());
        // A Hop-by-Hop header whose length runs past the payload: the walk
        // ends at TCP past the end (L4 missing); with a second extension
        // header after it, the walk itself fails.
        let f = ipv6_frame(0, &[6, 4, 0, 0, 0, 0, 0, 0], &tcp_header(1, 2, TCP_ACK));
        assert_eq!(parse_frame(&f).error, Some(FrameError::L4Truncated));
        let f = ipv6_frame(0, &[60, 4, 0, 0, 0, 0, 0, 0], &tcp_header(1, 2, TCP_ACK));
        assert_eq!(parse_frame(&f).error, Some(FrameError::Ipv6BadExtHeader));
        // TCP cut short inside the payload.
        let f = ipv6_frame(6, &[], &tcp_header(1, 2, TCP_ACK)[..19]);
        assert_eq!(parse_frame(&f).error, Some(FrameError::L4Truncated));
        // Padding after the payload is not payload.
        let mut f = ipv6_frame(17, &[], &[0, 1, 0, 2, 0, 8, 0, 0]);
        f.extend_from_slice(&[0xee; 6]);
        assert!(parse_frame(&f).is_ok());
        assert_eq!(WireError::from(FrameError::Ipv6BadExtHeader), WireError::BadLength);
    }

    #[test]
    fn ipv6_fragments() {
        // First fragment: ports reported, fragment described.
        let f = ipv6_frame(44, &[6, 0, 0, 1, 0, 0, 0, 9], &tcp_header(5, 6, TCP_ACK));
        let i = parse_frame(&f);
        assert!(i.is_ok());
        let fr = i.ipv6.unwrap().fragment().unwrap();
        assert_eq!((fr.offset_bytes, fr.more, fr.ident), (0, true, 9));
        assert_eq!(i.l4.unwrap().dst_port, 6);
        assert_eq!(i.to_string(), "IPv6 2001:db8::7 > 2001:db8::10 hlim 63 frag id 9 off 0+ TCP 5 > 6 [A]");
        // A later fragment: no L4, not an error.
        let f = ipv6_frame(44, &[17, 0, 0, 0x10, 0, 0, 0, 9], &[0; 16]);
        let i = parse_frame(&f);
        assert!(i.is_ok() && i.l4.is_none());
        assert_eq!(i.to_string(), "IPv6 2001:db8::7 > 2001:db8::10 hlim 63 frag id 9 off 16 UDP");
    }

    #[test]
    fn display_names_the_layers_and_the_error() {
        let f = tcp_frame(&eth(Some(100)), &ip(), &tcp(), b"");
        assert_eq!(parse_frame(&f).to_string(), "VLAN 100 IPv4 198.51.100.7 > 203.0.113.10 ttl 61 TCP 40000 > 80 [S]");
        assert_eq!(parse_frame(&f[..10]).to_string(), "runt");
        let mut bad = tcp_frame(&eth(None), &ip(), &tcp(), b"");
        bad[16..18].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(parse_frame(&bad).to_string(), "IPv4 198.51.100.7 > 203.0.113.10 ttl 61 TCP (IPv4 total length below header length)");
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&crate::wire::ETHERTYPE_ARP.to_be_bytes());
        assert_eq!(parse_frame(&arp).to_string(), "ethertype 0x0806");
    }
}
