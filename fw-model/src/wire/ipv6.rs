//! IPv6 (RFC 8200) and its extension-header chain.
//!
//! ```text
//!  0       4               12                                      31
//!  |Version| Traffic Class |              Flow Label                 |
//!  |         Payload Length        |  Next Header  |   Hop Limit     |
//!  |                  Source Address (128 bits)                      |
//!  |               Destination Address (128 bits)                    |
//! ```
//!
//! [`Ipv6Packet::upper_layer`] walks the extension headers as Linux's
//! `ipv6_find_hdr(skb, &offset, -1, &fragoff, &flags)` does for IPVS
//! (`ip_vs_fill_iph_skb_off`): Hop-by-Hop, Routing, Destination Options and
//! AH are skipped by their length fields, a Fragment header by its 8 bytes;
//! a fragment other than the first ends the walk with the Fragment header's
//! Next Header when that is not itself an extension header (and fails
//! otherwise); No Next Header and any non-extension number end it.

use super::{clamp, get16, put16, IpProtocol, WireError};
use std::fmt;
use std::net::Ipv6Addr;

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = 40;
/// The minimum link MTU every IPv6 link carries (RFC 8200 §5).
pub const MIN_MTU: usize = 1280;

mod field {
    pub const VER_TC_FL: core::ops::Range<usize> = 0..4;
    pub const LENGTH: usize = 4;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: core::ops::Range<usize> = 8..24;
    pub const DST: core::ops::Range<usize> = 24..40;
}

/// A Fragment header met on the way to the upper layer (RFC 8200 §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragmentInfo {
    /// Offset of the Fragment header from the start of the IPv6 header.
    pub header_offset: usize,
    /// Fragment Offset in bytes (the field × 8).
    pub offset_bytes: u16,
    /// The M flag: more fragments follow.
    pub more: bool,
    /// Identification.
    pub ident: u32,
}

/// Where the upper-layer header is (the result of
/// [`Ipv6Packet::upper_layer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UpperLayer {
    /// The upper-layer protocol (`IPPROTO_NONE` when the chain says No Next
    /// Header).
    pub protocol: IpProtocol,
    /// Offset of the upper-layer header from the start of the IPv6 header;
    /// meaningless for a non-first fragment, and past the packet when the
    /// last extension header's length says so (as in the kernel, whose walk
    /// reads only the first two bytes of each header).
    pub offset: usize,
    /// The Fragment header, if the chain has one.
    pub fragment: Option<FragmentInfo>,
}

impl UpperLayer {
    /// A fragment other than the first: no upper-layer header here.
    pub fn is_non_first_fragment(&self) -> bool {
        self.fragment.is_some_and(|f| f.offset_bytes != 0)
    }
}

/// A zero-copy view of an IPv6 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Wraps a buffer and [`check_len`](Self::check_len)s it.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensures the fixed header is present with version 6, and that the
    /// Payload Length fits in the buffer (`ipv6_rcv`'s checks; a Payload
    /// Length of 0, a jumbogram's, is taken as it stands).
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if self.version() != 6 {
            return Err(WireError::BadVersion);
        }
        if HEADER_LEN + usize::from(self.payload_len()) > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn word0(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::VER_TC_FL];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Version (6).
    pub fn version(&self) -> u8 {
        (self.word0() >> 28) as u8
    }

    /// Traffic Class (DSCP and ECN, RFC 2474 / RFC 3168).
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }

    /// Flow Label (20 bits, RFC 6437).
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000F_FFFF
    }

    /// Payload Length: the bytes after the fixed header, extension headers
    /// included.
    pub fn payload_len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Next Header: the first extension header or the upper layer.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Hop Limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source Address.
    pub fn src_addr(&self) -> Ipv6Addr {
        let b: [u8; 16] = self.buffer.as_ref()[field::SRC].try_into().expect("16 bytes");
        Ipv6Addr::from(b)
    }

    /// Destination Address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let b: [u8; 16] = self.buffer.as_ref()[field::DST].try_into().expect("16 bytes");
        Ipv6Addr::from(b)
    }

    /// The payload (extension headers and upper layer) up to Payload
    /// Length, clamped to the buffer.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        clamp(b, HEADER_LEN, HEADER_LEN + usize::from(self.payload_len()))
    }

    /// Walks the extension headers to the upper layer as
    /// `ipv6_find_hdr(.., -1, ..)` does (module documentation). The walk
    /// reads only within Payload Length. [`WireError::Truncated`] when a
    /// header it must read is cut off (the kernel's `-EBADMSG`),
    /// [`WireError::BadLength`] for a non-first fragment whose Next Header
    /// is another extension header (`-ENOENT`).
    pub fn upper_layer(&self) -> Result<UpperLayer, WireError> {
        let pkt = clamp(self.buffer.as_ref(), 0, HEADER_LEN + usize::from(self.payload_len()));
        let mut next = self.next_header();
        let mut start = HEADER_LEN;
        let mut fragment = None;
        loop {
            if !next.is_ipv6_ext_header() || next == IpProtocol::Ipv6NoNext {
                return Ok(UpperLayer { protocol: next, offset: start, fragment });
            }
            let hdr = clamp(pkt, start, start + 2);
            if hdr.len() < 2 {
                return Err(WireError::Truncated);
            }
            let (hdr_next, hdr_len_field) = (IpProtocol::from(hdr[0]), usize::from(hdr[1]));
            let len = match next {
                IpProtocol::Ipv6Route => {
                    // ipv6_rt_hdr: 4 bytes must be there (segments left).
                    if clamp(pkt, start, start + 4).len() < 4 {
                        return Err(WireError::Truncated);
                    }
                    (hdr_len_field + 1) * 8
                }
                IpProtocol::Ipv6Frag => {
                    let f = clamp(pkt, start, start + 8);
                    if f.len() < 4 {
                        return Err(WireError::Truncated);
                    }
                    let off_m = get16(f, 2);
                    let ident = if f.len() == 8 { u32::from_be_bytes([f[4], f[5], f[6], f[7]]) } else { 0 };
                    let info = FragmentInfo { header_offset: start, offset_bytes: off_m & !7, more: off_m & 1 != 0, ident };
                    fragment = Some(info);
                    if info.offset_bytes != 0 {
                        if !hdr_next.is_ipv6_ext_header() || hdr_next == IpProtocol::Ipv6NoNext {
                            return Ok(UpperLayer { protocol: hdr_next, offset: start, fragment });
                        }
                        return Err(WireError::BadLength);
                    }
                    8
                }
                IpProtocol::Ah => (hdr_len_field + 2) * 4,
                _ => (hdr_len_field + 1) * 8,
            };
            next = hdr_next;
            start += len;
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    fn set_word0(&mut self, w: u32) {
        self.buffer.as_mut()[field::VER_TC_FL].copy_from_slice(&w.to_be_bytes());
    }

    /// Sets Version.
    pub fn set_version(&mut self, v: u8) {
        let w = self.word0() & 0x0FFF_FFFF | u32::from(v & 0xF) << 28;
        self.set_word0(w);
    }

    /// Sets Traffic Class.
    pub fn set_traffic_class(&mut self, v: u8) {
        let w = self.word0() & 0xF00F_FFFF | u32::from(v) << 20;
        self.set_word0(w);
    }

    /// Sets Flow Label (low 20 bits of `v`).
    pub fn set_flow_label(&mut self, v: u32) {
        let w = self.word0() & 0xFFF0_0000 | v & 0x000F_FFFF;
        self.set_word0(w);
    }

    /// Sets Payload Length.
    pub fn set_payload_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Sets Next Header.
    pub fn set_next_header(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = p.into();
    }

    /// Sets Hop Limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Sets Source Address.
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a.octets());
    }

    /// Sets Destination Address.
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a.octets());
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Ipv6Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return write!(f, "IPv6 (truncated: {} bytes)", self.buffer.as_ref().len());
        }
        write!(
            f,
            "IPv6 src={} dst={} nxt_hdr={} hop_limit={} len={}",
            self.src_addr(),
            self.dst_addr(),
            self.next_header(),
            self.hop_limit(),
            self.payload_len()
        )?;
        if self.traffic_class() != 0 || self.flow_label() != 0 {
            write!(f, " tc={:#04x} flow={:#07x}", self.traffic_class(), self.flow_label())?;
        }
        Ok(())
    }
}

/// A parsed IPv6 fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source Address.
    pub src_addr: Ipv6Addr,
    /// Destination Address.
    pub dst_addr: Ipv6Addr,
    /// Next Header.
    pub next_header: IpProtocol,
    /// Payload Length.
    pub payload_len: u16,
    /// Hop Limit.
    pub hop_limit: u8,
    /// Traffic Class.
    pub traffic_class: u8,
    /// Flow Label.
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<Self, WireError> {
        p.check_len()?;
        Ok(Ipv6Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            next_header: p.next_header(),
            payload_len: p.payload_len(),
            hop_limit: p.hop_limit(),
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
        })
    }

    /// Writes the fixed header into the first 40 bytes of `p`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv6Packet<T>) -> Result<(), WireError> {
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        p.set_word0(6 << 28);
        p.set_traffic_class(self.traffic_class);
        p.set_flow_label(self.flow_label);
        p.set_payload_len(self.payload_len);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(next: u8, ext: &[u8], upper: &[u8]) -> Vec<u8> {
        let repr = Ipv6Repr {
            src_addr: "2001:db8::1".parse().unwrap(),
            dst_addr: "2001:db8::10".parse().unwrap(),
            next_header: IpProtocol::from(next),
            payload_len: (ext.len() + upper.len()) as u16,
            hop_limit: 64,
            traffic_class: 0xb8,
            flow_label: 0xabcde,
        };
        let mut b = vec![0u8; HEADER_LEN];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut b[..])).unwrap();
        b.extend_from_slice(ext);
        b.extend_from_slice(upper);
        b
    }

    #[test]
    fn fields_round_trip_and_print() {
        let b = packet(6, &[], &[0; 20]);
        assert_eq!(&b[..4], &[0x6b, 0x8a, 0xbc, 0xde], "version, traffic class, flow label");
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        let r = Ipv6Repr::parse(&p).unwrap();
        assert_eq!((r.traffic_class, r.flow_label, r.payload_len, r.hop_limit), (0xb8, 0xabcde, 20, 64));
        assert_eq!(r.next_header, IpProtocol::Tcp);
        assert_eq!(
            p.to_string(),
            "IPv6 src=2001:db8::1 dst=2001:db8::10 nxt_hdr=TCP hop_limit=64 len=20 tc=0xb8 flow=0xabcde"
        );
        assert_eq!(p.upper_layer(), Ok(UpperLayer { protocol: IpProtocol::Tcp, offset: 40, fragment: None }));
    }

    #[test]
    fn checks_like_ipv6_rcv() {
        let b = packet(17, &[], &[0; 8]);
        assert_eq!(Ipv6Packet::new_checked(&b[..39]).unwrap_err(), WireError::Truncated);
        assert_eq!(Ipv6Packet::new_checked(&b[..47]).unwrap_err(), WireError::Truncated, "payload length past the end");
        let mut v4 = b.clone();
        v4[0] = 0x45;
        assert_eq!(Ipv6Packet::new_checked(&v4[..]).unwrap_err(), WireError::BadVersion);
        let mut padded = b.clone();
        padded.extend_from_slice(&[0; 10]);
        assert_eq!(Ipv6Packet::new_checked(&padded[..]).unwrap().payload().len(), 8, "bytes past Payload Length are not payload");
    }

    #[test]
    fn walks_extension_headers_as_ipv6_find_hdr() {
        // Hop-by-Hop (8 bytes) -> Destination Options (16) -> Routing (8) -> AH (12) -> UDP.
        let hbh = [60, 0, 1, 4, 0, 0, 0, 0];
        let dst = [43, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let rt = [51, 0, 0, 0, 0, 0, 0, 0];
        let ah = [17, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let ext: Vec<u8> = [&hbh[..], &dst, &rt, &ah].concat();
        let b = packet(0, &ext, &[0; 8]);
        let u = Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer().unwrap();
        assert_eq!((u.protocol, u.offset, u.fragment), (IpProtocol::Udp, 40 + 44, None));
        // ESP is not an extension header for the walk: it is the upper layer.
        let b = packet(60, &[50, 0, 0, 0, 0, 0, 0, 0], &[0; 8]);
        assert_eq!(Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer().unwrap().protocol, IpProtocol::Esp);
        // No Next Header ends the walk and is reported.
        let b = packet(59, &[], &[]);
        assert_eq!(Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer().unwrap().protocol, IpProtocol::Ipv6NoNext);
        // A header cut off by Payload Length.
        let b = packet(0, &[6], &[]);
        assert_eq!(Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer(), Err(WireError::Truncated));
        let b = packet(43, &[6, 0], &[]);
        assert_eq!(Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer(), Err(WireError::Truncated), "routing needs 4 bytes");
        // A last header whose length runs past the end: as in the kernel,
        // the walk reports the upper layer at an offset past the packet
        // (reading it is the caller's check); one more header would fail.
        let b = packet(60, &[6, 3, 0, 0, 0, 0, 0, 0], &[0; 8]);
        let u = Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer().unwrap();
        assert_eq!((u.protocol, u.offset), (IpProtocol::Tcp, 40 + 32));
        let b = packet(60, &[60, 3, 0, 0, 0, 0, 0, 0], &[0; 8]);
        assert_eq!(Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer(), Err(WireError::Truncated));
    }

    #[test]
    fn fragments_first_and_later() {
        // First fragment, M set: the walk goes on to TCP.
        let first = [6, 0, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef];
        let b = packet(44, &first, &[0; 20]);
        let u = Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer().unwrap();
        assert_eq!((u.protocol, u.offset), (IpProtocol::Tcp, 48));
        assert_eq!(u.fragment, Some(FragmentInfo { header_offset: 40, offset_bytes: 0, more: true, ident: 0xdeadbeef }));
        assert!(!u.is_non_first_fragment());
        // Later fragment (offset 1448): the Fragment header's Next Header.
        let later = [17, 0, 0x05, 0xa8, 0, 0, 0, 7];
        let b = packet(44, &later, &[0; 8]);
        let u = Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer().unwrap();
        assert_eq!(u.protocol, IpProtocol::Udp);
        assert!(u.is_non_first_fragment());
        assert_eq!(u.fragment.unwrap().offset_bytes, 1448);
        // Later fragment whose Next Header is an extension header: -ENOENT.
        let b = packet(44, &[60, 0, 0x05, 0xa8, 0, 0, 0, 7], &[0; 8]);
        assert_eq!(Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer(), Err(WireError::BadLength));
    }
}
