//! One-pass frame classification ([`parse_frame`]), shared by the director
//! and the hardware model.
//!
//! The classifier reads Ethernet (one optional 802.1Q tag), IPv4 and the
//! fixed TCP/UDP header in a single pass, never panics and never allocates.
//! It fills [`FrameInfo`] as far as parsing got and records in
//! [`FrameInfo::error`] why it stopped, or what it found malformed. It does
//! not drop anything: policy (to the host, drop, forward) is the caller's.

use super::checksum;
use super::{get16, WireError, ETHERTYPE_IPV4, ETHERTYPE_VLAN, IPPROTO_TCP, IPPROTO_UDP};
use std::net::Ipv4Addr;

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
    /// The fixed TCP (20 bytes) or UDP (8 bytes) header does not fit inside
    /// the IPv4 Total Length.
    #[error("TCP/UDP header truncated")]
    L4Truncated,
    /// TCP Data Offset below 5 or beyond the IPv4 Total Length. The fixed
    /// header (ports, flags) was read and [`FrameInfo::l4`] is filled.
    #[error("bad TCP data offset")]
    TcpBadHeaderLen,
}

impl From<FrameError> for WireError {
    fn from(e: FrameError) -> WireError {
        match e {
            FrameError::Runt
            | FrameError::Ipv4Truncated
            | FrameError::Ipv4TotalLenExceedsFrame
            | FrameError::L4Truncated => WireError::Truncated,
            FrameError::Ipv4BadVersion => WireError::BadVersion,
            FrameError::Ipv4BadHeaderLen | FrameError::TcpBadHeaderLen => WireError::BadHeaderLen,
            FrameError::Ipv4BadTotalLen => WireError::BadTotalLen,
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
    pub protocol: u8,
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
    /// TCP/UDP ports and flags, when [`ipv4`](Self::ipv4) is present with a
    /// consistent Total Length, the protocol is TCP or UDP, the packet is
    /// not a non-first fragment, and the fixed L4 header fits inside Total
    /// Length.
    pub l4: Option<L4Info>,
    /// Why parsing stopped early or what is malformed; `None` when the frame
    /// parsed cleanly as far as this classifier goes (which includes
    /// non-IPv4 frames, ICMP, other protocols and non-first fragments).
    pub error: Option<FrameError>,
}

impl FrameInfo {
    /// Whether nothing malformed was found.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }
}

/// Classifies an Ethernet frame (no FCS) in one pass; never panics.
///
/// IPv4 checks follow RFC 791 and the order of Linux `ip_rcv_core`: at
/// least 20 bytes, then version 4 and IHL >= 5, then the whole header
/// present, then `header_len <= total_len <= available`. Bytes after Total
/// Length (Ethernet padding) are ignored. The header checksum is reported
/// in [`Ipv4Info::header_checksum_ok`], not treated as an error. The UDP
/// Length field is not validated (IPVS does not look at it either).
pub fn parse_frame(frame: &[u8]) -> FrameInfo {
    let mut info = FrameInfo::default();

    // --- Ethernet / 802.1Q ---
    if frame.len() < 14 {
        info.error = Some(FrameError::Runt);
        return info;
    }
    let outer = get16(frame, 12);
    if outer == ETHERTYPE_VLAN {
        if frame.len() < 18 {
            info.error = Some(FrameError::Runt);
            return info;
        }
        info.l2_len = 18;
        info.vlan_tci = Some(get16(frame, 14));
        info.ethertype = get16(frame, 16);
    } else {
        info.l2_len = 14;
        info.ethertype = outer;
    }
    if info.ethertype != ETHERTYPE_IPV4 {
        return info;
    }

    // --- IPv4 ---
    let l3 = info.l2_len;
    let ip = &frame[l3..];
    if ip.len() < 20 {
        info.error = Some(FrameError::Ipv4Truncated);
        return info;
    }
    if ip[0] >> 4 != 4 {
        info.error = Some(FrameError::Ipv4BadVersion);
        return info;
    }
    let header_len = usize::from(ip[0] & 0x0F) * 4;
    if header_len < 20 {
        info.error = Some(FrameError::Ipv4BadHeaderLen);
        return info;
    }
    if header_len > ip.len() {
        info.error = Some(FrameError::Ipv4Truncated);
        return info;
    }
    let total_len = get16(ip, 2);
    let flg_off = get16(ip, 6);
    let v4 = Ipv4Info {
        l3_offset: l3,
        header_len,
        total_len,
        src: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        dst: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
        protocol: ip[9],
        ttl: ip[8],
        tos: ip[1],
        ident: get16(ip, 4),
        df: flg_off & 0x4000 != 0,
        mf: flg_off & 0x2000 != 0,
        frag_offset_bytes: (flg_off & 0x1FFF) * 8,
        has_options: header_len > 20,
        header_checksum_ok: checksum::verify(&ip[..header_len], 0),
    };
    info.ipv4 = Some(v4);
    let total = usize::from(total_len);
    if total < header_len {
        info.error = Some(FrameError::Ipv4BadTotalLen);
        return info;
    }
    if total > ip.len() {
        info.error = Some(FrameError::Ipv4TotalLenExceedsFrame);
        return info;
    }

    // --- TCP / UDP ---
    if v4.is_non_first_fragment() {
        return info;
    }
    let l4 = &ip[header_len..total];
    let offset = l3 + header_len;
    match v4.protocol {
        IPPROTO_TCP => {
            if l4.len() < 20 {
                info.error = Some(FrameError::L4Truncated);
                return info;
            }
            let doff = usize::from(l4[12] >> 4) * 4;
            info.l4 = Some(L4Info {
                offset,
                src_port: get16(l4, 0),
                dst_port: get16(l4, 2),
                tcp_flags: l4[13],
                l4_header_len: doff,
            });
            if doff < 20 || doff > l4.len() {
                info.error = Some(FrameError::TcpBadHeaderLen);
            }
        }
        IPPROTO_UDP => {
            if l4.len() < 8 {
                info.error = Some(FrameError::L4Truncated);
                return info;
            }
            info.l4 = Some(L4Info {
                offset,
                src_port: get16(l4, 0),
                dst_port: get16(l4, 2),
                tcp_flags: 0,
                l4_header_len: 8,
            });
        }
        _ => {}
    }
    info
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
            assert_eq!((v4.protocol, v4.ttl, v4.tos, v4.ident), (IPPROTO_TCP, 61, 0x10, 0x4242));
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
}
