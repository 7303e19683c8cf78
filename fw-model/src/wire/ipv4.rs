//! IPv4 (RFC 791).
//!
//! ```text
//!  0       4       8              16    19                     31
//!  |Version|  IHL  |  DSCP  |ECN  |         Total Length         |
//!  |        Identification        |Flags|   Fragment Offset      |
//!  |  Time to Live |   Protocol   |       Header Checksum        |
//!  |                       Source Address                        |
//!  |                    Destination Address                      |
//!  |                    Options (IHL > 5)                        |
//! ```
//!
//! DSCP/ECN are the RFC 2474 / RFC 3168 split of the old TOS byte.

use super::checksum;
use super::{clamp, clamp_mut, get16, put16, ChecksumCheck, WireError};
use std::net::Ipv4Addr;

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;
/// Largest IPv4 header (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;

mod field {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLG_OFF: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: core::ops::Range<usize> = 12..16;
    pub const DST: core::ops::Range<usize> = 16..20;
}

/// The reserved flag bit of the Flags/Fragment Offset word.
pub const FLAG_RESERVED: u16 = 0x8000;
/// Don't Fragment bit of the Flags/Fragment Offset word.
pub const FLAG_DF: u16 = 0x4000;
/// More Fragments bit of the Flags/Fragment Offset word.
pub const FLAG_MF: u16 = 0x2000;
/// Fragment Offset bits (8-byte units) of the Flags/Fragment Offset word.
pub const OFFSET_MASK: u16 = 0x1FFF;

/// A zero-copy view of an IPv4 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps a buffer and [`check_len`](Self::check_len)s it.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Wraps a buffer that may hold only the start of a packet, as the copy
    /// of the offending datagram inside an ICMP error (RFC 792: header plus
    /// 64 bits of data). Checks what [`check_header`](Self::check_header)
    /// checks; `total_len` may exceed the buffer and
    /// [`payload`](Self::payload) then returns what is present.
    pub fn new_checked_header(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_header()?;
        Ok(p)
    }

    /// Checks the header alone: buffer at least 20 bytes
    /// ([`WireError::Truncated`]), version 4 ([`WireError::BadVersion`]), IHL
    /// at least 5 ([`WireError::BadHeaderLen`]), header within the buffer
    /// ([`WireError::Truncated`]).
    pub fn check_header(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if self.version() != 4 {
            return Err(WireError::BadVersion);
        }
        let h = self.header_len();
        if h < HEADER_LEN {
            return Err(WireError::BadHeaderLen);
        }
        if h > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// [`check_header`](Self::check_header), then: total length at least the
    /// header length ([`WireError::BadTotalLen`]) and within the buffer
    /// ([`WireError::Truncated`]). The buffer may be longer than the total
    /// length (Ethernet padding).
    pub fn check_len(&self) -> Result<(), WireError> {
        self.check_header()?;
        let t = usize::from(self.total_len());
        if t < self.header_len() {
            return Err(WireError::BadTotalLen);
        }
        if t > self.buffer.as_ref().len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Internet Header Length field, in 32-bit words.
    pub fn ihl(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] & 0x0F
    }

    /// Header length in bytes (IHL × 4, 20..=60 when valid).
    pub fn header_len(&self) -> usize {
        usize::from(self.ihl()) * 4
    }

    /// The whole Type of Service byte (DSCP << 2 | ECN).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    /// Differentiated Services Code Point (RFC 2474), upper 6 bits of TOS.
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// Explicit Congestion Notification (RFC 3168), lower 2 bits of TOS.
    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    /// Total Length: header plus data, in bytes.
    pub fn total_len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        get16(self.buffer.as_ref(), field::IDENT)
    }

    fn flg_off(&self) -> u16 {
        get16(self.buffer.as_ref(), field::FLG_OFF)
    }

    /// The whole Flags and Fragment Offset word ([`FLAG_DF`], [`FLAG_MF`],
    /// [`OFFSET_MASK`]).
    pub fn flags_frag_offset(&self) -> u16 {
        self.flg_off()
    }

    /// The reserved flag bit (must be zero, RFC 791).
    pub fn reserved_flag(&self) -> bool {
        self.flg_off() & FLAG_RESERVED != 0
    }

    /// Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.flg_off() & FLAG_DF != 0
    }

    /// More Fragments flag.
    pub fn more_frags(&self) -> bool {
        self.flg_off() & FLAG_MF != 0
    }

    /// Fragment Offset as on the wire, in 8-byte units (13 bits).
    pub fn frag_offset_units(&self) -> u16 {
        self.flg_off() & OFFSET_MASK
    }

    /// Fragment Offset in bytes (units × 8, at most 65528).
    pub fn frag_offset_bytes(&self) -> u16 {
        self.frag_offset_units() * 8
    }

    /// Whether this is a fragment: MF set or a non-zero offset.
    pub fn is_fragment(&self) -> bool {
        self.flg_off() & (FLAG_MF | OFFSET_MASK) != 0
    }

    /// Time to Live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol (an `IPPROTO_*` number).
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header Checksum as stored.
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source Address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let mut a = [0; 4];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        Ipv4Addr::from(a)
    }

    /// Destination Address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let mut a = [0; 4];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        Ipv4Addr::from(a)
    }

    /// The header bytes, options included (clamped to the buffer).
    pub fn header(&self) -> &[u8] {
        clamp(self.buffer.as_ref(), 0, self.header_len())
    }

    /// The options bytes (between byte 20 and the header length).
    pub fn options(&self) -> &[u8] {
        clamp(self.buffer.as_ref(), HEADER_LEN, self.header_len())
    }

    /// Whether the header carries options (IHL > 5).
    pub fn has_options(&self) -> bool {
        self.header_len() > HEADER_LEN
    }

    /// Whether the header checksum verifies (RFC 791, RFC 1071).
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(self.header(), 0)
    }

    /// The data after the header, bounded by Total Length (not by the
    /// buffer, which may carry Ethernet padding), and clamped to the buffer.
    pub fn payload(&self) -> &[u8] {
        clamp(self.buffer.as_ref(), self.header_len(), usize::from(self.total_len()))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv4Packet<&'a T> {
    /// [`payload`](Ipv4Packet::payload) with the lifetime of the underlying buffer rather than of the
    /// view, so a view built from it may outlive this one (e.g.
    /// `Ipv4Packet::new_checked(EthernetFrame::new_checked(f)?.into_payload())`).
    pub fn into_payload(self) -> &'a [u8] {
        clamp(self.buffer.as_ref(), self.header_len(), usize::from(self.total_len()))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the version nibble.
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0F) | (v << 4);
    }

    /// Sets the header length in bytes (stored as IHL = `len / 4`).
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xF0) | ((len / 4) & 0x0F);
    }

    /// Sets the whole TOS byte.
    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[field::TOS] = v;
    }

    /// Sets DSCP (6 bits), keeping ECN.
    pub fn set_dscp(&mut self, v: u8) {
        let t = (self.tos() & 0x03) | (v << 2);
        self.set_tos(t);
    }

    /// Sets ECN (2 bits), keeping DSCP.
    pub fn set_ecn(&mut self, v: u8) {
        let t = (self.tos() & 0xFC) | (v & 0x03);
        self.set_tos(t);
    }

    /// Sets Total Length.
    pub fn set_total_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Sets Identification.
    pub fn set_ident(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::IDENT, v);
    }

    /// Sets the whole Flags and Fragment Offset word.
    pub fn set_flags_frag_offset(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::FLG_OFF, v);
    }

    fn set_flg_off_bits(&mut self, mask: u16, value: u16) {
        let v = (self.flg_off() & !mask) | (value & mask);
        put16(self.buffer.as_mut(), field::FLG_OFF, v);
    }

    /// Sets the reserved flag bit.
    pub fn set_reserved_flag(&mut self, v: bool) {
        self.set_flg_off_bits(FLAG_RESERVED, if v { FLAG_RESERVED } else { 0 });
    }

    /// Sets Don't Fragment.
    pub fn set_dont_frag(&mut self, v: bool) {
        self.set_flg_off_bits(FLAG_DF, if v { FLAG_DF } else { 0 });
    }

    /// Sets More Fragments.
    pub fn set_more_frags(&mut self, v: bool) {
        self.set_flg_off_bits(FLAG_MF, if v { FLAG_MF } else { 0 });
    }

    /// Sets Fragment Offset in 8-byte units (low 13 bits used).
    pub fn set_frag_offset_units(&mut self, v: u16) {
        self.set_flg_off_bits(OFFSET_MASK, v);
    }

    /// Sets Fragment Offset in bytes (`v / 8`; the low 3 bits are dropped).
    pub fn set_frag_offset_bytes(&mut self, v: u16) {
        self.set_frag_offset_units(v / 8);
    }

    /// Sets Time to Live (checksum not updated).
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets Protocol.
    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }

    /// Sets the stored Header Checksum.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets Source Address (checksum not updated).
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a.octets());
    }

    /// Sets Destination Address (checksum not updated).
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a.octets());
    }

    /// Recomputes the header checksum from scratch (the kernel's
    /// `ip_send_check`). Never stores `0xFFFF`.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.header());
        self.set_checksum(c);
    }

    /// Decrements TTL and updates the checksum incrementally (RFC 1624 eqn.
    /// 3, [`checksum::update16`] on the TTL/Protocol word). Returns the new
    /// TTL, or `None` (packet unchanged) if TTL was already 0.
    ///
    /// This equals the kernel's `ip_decrease_ttl` (`check +=
    /// htons(0x0100)` with end-around carry) for every checksum value, and,
    /// if the checksum verified before, equals
    /// [`decrement_ttl_full`](Self::decrement_ttl_full): the 16-bit eqn. 3
    /// boundary case needs the old word to be `0xFFFF` and the new one
    /// `0x0000`, impossible when only the TTL byte drops by one.
    pub fn decrement_ttl_incremental(&mut self) -> Option<u8> {
        let ttl = self.ttl();
        if ttl == 0 {
            return None;
        }
        let old = get16(self.buffer.as_ref(), field::TTL);
        let new = old - 0x0100;
        self.set_ttl(ttl - 1);
        let c = checksum::update16(self.checksum(), old, new);
        self.set_checksum(c);
        Some(ttl - 1)
    }

    /// Decrements TTL and recomputes the checksum from scratch. Returns the
    /// new TTL, or `None` (packet unchanged) if TTL was already 0.
    pub fn decrement_ttl_full(&mut self) -> Option<u8> {
        let ttl = self.ttl();
        if ttl == 0 {
            return None;
        }
        self.set_ttl(ttl - 1);
        self.fill_checksum();
        Some(ttl - 1)
    }

    /// Sets Source Address and updates the header checksum incrementally
    /// ([`checksum::update_addr`]).
    pub fn set_src_addr_incremental(&mut self, a: Ipv4Addr) {
        let c = checksum::update_addr(self.checksum(), self.src_addr(), a);
        self.set_src_addr(a);
        self.set_checksum(c);
    }

    /// Sets Destination Address and updates the header checksum
    /// incrementally ([`checksum::update_addr`]).
    pub fn set_dst_addr_incremental(&mut self, a: Ipv4Addr) {
        let c = checksum::update_addr(self.checksum(), self.dst_addr(), a);
        self.set_dst_addr(a);
        self.set_checksum(c);
    }

    /// The mutable options bytes.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        clamp_mut(self.buffer.as_mut(), HEADER_LEN, h)
    }

    /// The mutable payload, bounded by Total Length and the buffer.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        let t = usize::from(self.total_len());
        clamp_mut(self.buffer.as_mut(), h, t)
    }
}

/// A parsed IPv4 header (options and fragmentation are not represented).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source Address.
    pub src_addr: Ipv4Addr,
    /// Destination Address.
    pub dst_addr: Ipv4Addr,
    /// Protocol (`IPPROTO_*`).
    pub protocol: u8,
    /// Payload length in bytes (Total Length − header length).
    pub payload_len: usize,
    /// Time to Live.
    pub ttl: u8,
    /// Whole TOS byte (DSCP and ECN).
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// Parses a packet. Checks lengths, the header checksum when `check` is
    /// [`ChecksumCheck::Verify`] ([`WireError::BadChecksum`]), and rejects
    /// fragments ([`WireError::Unsupported`]), which this repr cannot
    /// describe. Options are accepted and not represented: emitting the
    /// result gives an option-less header.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>, check: ChecksumCheck) -> Result<Self, WireError> {
        p.check_len()?;
        if check == ChecksumCheck::Verify && !p.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        if p.is_fragment() {
            return Err(WireError::Unsupported("IPv4 fragment"));
        }
        Ok(Ipv4Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - p.header_len(),
            ttl: p.ttl(),
            tos: p.tos(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
        })
    }

    /// Length of the emitted header (20).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus payload length.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes a 20-byte header (no options, not a fragment) with its
    /// checksum filled. The payload is written separately through
    /// [`Ipv4Packet::payload_mut`]. [`WireError::Truncated`] if the buffer
    /// is shorter than 20 bytes, [`WireError::BadTotalLen`] if
    /// `20 + payload_len` exceeds 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) -> Result<(), WireError> {
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let total = u16::try_from(self.buffer_len()).map_err(|_| WireError::BadTotalLen)?;
        let b = p.buffer.as_mut();
        b[field::VER_IHL] = 0x45;
        b[field::TOS] = self.tos;
        put16(b, field::LENGTH, total);
        put16(b, field::IDENT, self.ident);
        put16(b, field::FLG_OFF, if self.dont_frag { FLAG_DF } else { 0 });
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        b[field::SRC].copy_from_slice(&self.src_addr.octets());
        b[field::DST].copy_from_slice(&self.dst_addr.octets());
        p.fill_checksum();
        Ok(())
    }
}

impl<T: AsRef<[u8]>> std::fmt::Display for Ipv4Packet<T> {
    /// `IPv4 src=... dst=... proto=TCP ttl=64 len=40`, with `df`, the
    /// fragment offset and `options` when present; a header that does not
    /// check says why.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Err(e) = self.check_header() {
            return write!(f, "IPv4 ({e})");
        }
        write!(
            f,
            "IPv4 src={} dst={} proto={} ttl={} len={}",
            self.src_addr(),
            self.dst_addr(),
            super::IpProtocol::from(self.protocol()),
            self.ttl(),
            self.total_len()
        )?;
        if self.dont_frag() {
            write!(f, " df")?;
        }
        if self.is_fragment() {
            write!(f, " frag={}{}", self.frag_offset_bytes(), if self.more_frags() { "+" } else { "" })?;
        }
        if self.has_options() {
            write!(f, " options={}", self.options().len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::IPPROTO_UDP;

    /// Wikipedia "Internet checksum" example header + 3 data bytes + 2
    /// bytes of padding (total_len 0x73 is patched per test).
    const HDR: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
        0x00, 0xc7,
    ];

    fn packet(total: u16, buf_len: usize) -> Vec<u8> {
        let mut v = vec![0xabu8; buf_len];
        v[..20].copy_from_slice(&HDR);
        let mut p = Ipv4Packet::new_unchecked(&mut v[..]);
        p.set_total_len(total);
        p.fill_checksum();
        v
    }

    #[test]
    fn getters_on_known_header() {
        let mut buf = [0u8; 0x73];
        buf[..20].copy_from_slice(&HDR);
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 0x73);
        assert!(p.dont_frag() && !p.more_frags() && !p.is_fragment() && !p.reserved_flag());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IPPROTO_UDP);
        assert_eq!(p.checksum(), 0xb861);
        assert!(p.verify_checksum());
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert_eq!(p.payload().len(), 0x73 - 20);
        assert!(!p.has_options() && p.options().is_empty());
        let r = Ipv4Repr::parse(&p, ChecksumCheck::Verify).unwrap();
        let mut out = [0u8; 20];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, HDR);
    }

    #[test]
    fn payload_bounded_by_total_len() {
        let v = packet(23, 60); // 3 data bytes, 37 bytes of Ethernet padding
        let p = Ipv4Packet::new_checked(&v[..]).unwrap();
        assert_eq!(p.payload(), &[0xab, 0xab, 0xab]);
    }

    #[test]
    fn check_len_rejections() {
        assert_eq!(Ipv4Packet::new_checked(&HDR[..19]).unwrap_err(), WireError::Truncated);
        let mut v = packet(20, 20);
        v[0] = 0x65;
        assert_eq!(Ipv4Packet::new_checked(&v[..]).unwrap_err(), WireError::BadVersion);
        v[0] = 0x44;
        assert_eq!(Ipv4Packet::new_checked(&v[..]).unwrap_err(), WireError::BadHeaderLen);
        v[0] = 0x46; // 24-byte header in a 20-byte buffer
        assert_eq!(Ipv4Packet::new_checked(&v[..]).unwrap_err(), WireError::Truncated);
        let v = packet(19, 40);
        assert_eq!(Ipv4Packet::new_checked(&v[..]).unwrap_err(), WireError::BadTotalLen);
        let v = packet(41, 40);
        assert_eq!(Ipv4Packet::new_checked(&v[..]).unwrap_err(), WireError::Truncated);
        // The header-only check accepts it (ICMP error quotes).
        let p = Ipv4Packet::new_checked_header(&v[..]).unwrap();
        assert_eq!(p.payload().len(), 20);
        let mut v = packet(40, 40);
        v[0] = 0x47;
        let mut p = Ipv4Packet::new_unchecked(&mut v[..]);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&v[..]).unwrap();
        assert!(p.has_options());
        assert_eq!(p.options().len(), 8);
        assert_eq!(p.payload().len(), 12);
        assert!(p.verify_checksum());
    }

    #[test]
    fn repr_rejects_bad_checksum_and_fragments() {
        let mut v = packet(20, 20);
        v[11] ^= 1;
        let p = Ipv4Packet::new_checked(&v[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p, ChecksumCheck::Verify), Err(WireError::BadChecksum));
        assert!(Ipv4Repr::parse(&p, ChecksumCheck::Ignore).is_ok());
        let mut v = packet(20, 20);
        let mut p = Ipv4Packet::new_unchecked(&mut v[..]);
        p.set_frag_offset_bytes(1480);
        p.fill_checksum();
        assert_eq!(p.frag_offset_units(), 185);
        assert_eq!(p.frag_offset_bytes(), 1480);
        assert!(p.is_fragment());
        assert!(matches!(Ipv4Repr::parse(&p, ChecksumCheck::Verify), Err(WireError::Unsupported(_))));
        p.set_frag_offset_units(0);
        p.set_more_frags(true);
        assert!(p.is_fragment() && p.more_frags() && p.dont_frag());
        p.set_dont_frag(false);
        p.set_more_frags(false);
        assert!(!p.is_fragment() && !p.dont_frag());
    }

    #[test]
    fn setters() {
        let mut v = packet(20, 20);
        let mut p = Ipv4Packet::new_unchecked(&mut v[..]);
        p.set_dscp(46);
        p.set_ecn(3);
        assert_eq!((p.dscp(), p.ecn(), p.tos()), (46, 3, 0xbb));
        p.set_ecn(0);
        assert_eq!(p.tos(), 0xb8);
        p.set_ident(0xbeef);
        p.set_protocol(6);
        p.set_reserved_flag(true);
        assert!(p.reserved_flag());
        p.set_src_addr(Ipv4Addr::new(10, 1, 2, 3));
        p.set_dst_addr(Ipv4Addr::new(10, 4, 5, 6));
        p.set_header_len(24);
        assert_eq!(p.header_len(), 24);
        p.set_header_len(20);
        p.set_version(6);
        assert_eq!(p.version(), 6);
        p.set_version(4);
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!((p.ident(), p.protocol()), (0xbeef, 6));
        assert_eq!(p.src_addr(), Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(10, 4, 5, 6));
    }

    #[test]
    fn ttl_decrement_matches_kernel_ip_decrease_ttl() {
        // include/net/ip.h ip_decrease_ttl, on host-order values.
        fn kernel(check: u16) -> u16 {
            let c = u32::from(check) + 0x0100;
            (c + u32::from(c >= 0xFFFF)) as u16
        }
        for check in 0..=0xFFFFu16 {
            for (ttl, proto) in [(1u8, 6u8), (64, 17), (255, 255), (128, 0)] {
                let mut h = HDR;
                let mut p = Ipv4Packet::new_unchecked(&mut h[..]);
                p.set_ttl(ttl);
                p.set_protocol(proto);
                p.set_checksum(check);
                assert_eq!(p.decrement_ttl_incremental(), Some(ttl - 1));
                assert_eq!(p.checksum(), kernel(check), "check {check:#06x} ttl {ttl}");
            }
        }
        let mut h = HDR;
        let mut p = Ipv4Packet::new_unchecked(&mut h[..]);
        p.set_ttl(0);
        assert_eq!(p.decrement_ttl_incremental(), None);
        assert_eq!(p.decrement_ttl_full(), None);
    }

    #[test]
    fn incremental_addr_change() {
        let mut v = packet(20, 20);
        let mut p = Ipv4Packet::new_unchecked(&mut v[..]);
        p.set_src_addr_incremental(Ipv4Addr::new(172, 16, 0, 9));
        p.set_dst_addr_incremental(Ipv4Addr::new(255, 255, 255, 255));
        let inc = p.checksum();
        p.fill_checksum();
        assert_eq!(inc, p.checksum());
    }

    #[test]
    fn emit_errors() {
        let r = Ipv4Repr {
            src_addr: Ipv4Addr::LOCALHOST,
            dst_addr: Ipv4Addr::LOCALHOST,
            protocol: 6,
            payload_len: 65516,
            ttl: 1,
            tos: 0,
            ident: 0,
            dont_frag: false,
        };
        assert_eq!(r.emit(&mut Ipv4Packet::new_unchecked(&mut [0u8; 20][..])), Err(WireError::BadTotalLen));
        assert_eq!(r.emit(&mut Ipv4Packet::new_unchecked(&mut [0u8; 19][..])), Err(WireError::Truncated));
        let r = Ipv4Repr { payload_len: 65515, ..r };
        assert!(r.emit(&mut Ipv4Packet::new_unchecked(&mut [0u8; 20][..])).is_ok());
    }

    #[test]
    fn display() {
        let mut b = [0u8; 24];
        b[0] = 0x46;
        b[2..4].copy_from_slice(&24u16.to_be_bytes());
        b[6] = 0x40;
        b[8] = 64;
        b[9] = 17;
        b[12..16].copy_from_slice(&[10, 0, 0, 1]);
        b[16..20].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(Ipv4Packet::new_unchecked(&b[..]).to_string(), "IPv4 src=10.0.0.1 dst=10.0.0.2 proto=UDP ttl=64 len=24 df options=4");
        assert!(Ipv4Packet::new_unchecked(&b[..10]).to_string().starts_with("IPv4 (truncated"));
    }
}
