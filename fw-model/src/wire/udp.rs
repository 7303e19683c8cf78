//! UDP datagrams (RFC 768).
//!
//! ```text
//!  0               16              31
//!  |  Source Port  |   Dest Port   |
//!  |    Length     |   Checksum    |
//!  |     data ...                  |
//! ```
//!
//! A checksum of 0 means the sender computed none; a computed 0 is sent as
//! `0xFFFF`. Incremental updates that respect this are
//! [`checksum::udp_update16`] and friends.

use super::checksum;
use super::{clamp, clamp_mut, get16, put16, ChecksumCheck, WireError, IPPROTO_UDP};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
}

/// A zero-copy view of a UDP datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps a buffer and [`check_len`](Self::check_len)s it.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Buffer at least 8 bytes ([`WireError::Truncated`]), Length at least 8
    /// ([`WireError::BadLength`]) and within the buffer
    /// ([`WireError::Truncated`]). Bytes after Length are ignored.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let l = usize::from(self.len());
        if l < HEADER_LEN {
            return Err(WireError::BadLength);
        }
        if l > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source Port.
    pub fn src_port(&self) -> u16 {
        get16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination Port.
    pub fn dst_port(&self) -> u16 {
        get16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length: header plus data, in bytes.
    pub fn len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Whether Length says there is no data (Length <= 8).
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum as stored (0 = none).
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The datagram bytes `[0, Length)`, clamped to the buffer.
    fn datagram(&self) -> &[u8] {
        clamp(self.buffer.as_ref(), 0, usize::from(self.len()))
    }

    /// The data, bounded by Length (and the buffer).
    pub fn payload(&self) -> &[u8] {
        clamp(self.buffer.as_ref(), HEADER_LEN, usize::from(self.len()))
    }

    /// Whether the checksum verifies over the pseudo-header and the
    /// datagram (`Length` bytes); a 0 checksum (none transmitted) verifies.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let d = self.datagram();
        checksum::verify(d, checksum::pseudo_header_sum_len(src, dst, IPPROTO_UDP, d.len()))
    }

    /// Whether the checksum verifies over the IPv6 pseudo-header (RFC 8200
    /// section 8.1) and the datagram; a 0 checksum does not (IPv6 requires
    /// one).
    pub fn verify_checksum_v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let d = self.datagram();
        let ph = checksum::pseudo_header_sum_v6(src, dst, IPPROTO_UDP, d.len() as u32);
        self.checksum() != 0 && checksum::verify(d, ph)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> UdpPacket<&'a T> {
    /// [`payload`](UdpPacket::payload) with the lifetime of the underlying buffer rather than of the
    /// view, so a view built from it may outlive this one (e.g.
    /// `Ipv4Packet::new_checked(EthernetFrame::new_checked(f)?.into_payload())`).
    pub fn into_payload(self) -> &'a [u8] {
        clamp(self.buffer.as_ref(), HEADER_LEN, usize::from(self.len()))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets Source Port (checksum not updated).
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, v);
    }

    /// Sets Destination Port (checksum not updated).
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, v);
    }

    /// Sets Length.
    pub fn set_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Sets the stored Checksum (0 = none).
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Computes the checksum over the pseudo-header and the datagram
    /// (`Length` bytes) and stores it, a computed 0 as `0xFFFF` (RFC 768).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let d = self.datagram();
        let sum = checksum::ones_sum(d, checksum::pseudo_header_sum_len(src, dst, IPPROTO_UDP, d.len()));
        self.set_checksum(checksum::udp_finalize(!checksum::fold(sum)));
    }

    /// [`fill_checksum`](Self::fill_checksum) over the IPv6 pseudo-header
    /// (RFC 8200 section 8.1).
    pub fn fill_checksum_v6(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let d = self.datagram();
        let sum = checksum::ones_sum(d, checksum::pseudo_header_sum_v6(src, dst, IPPROTO_UDP, d.len() as u32));
        self.set_checksum(checksum::udp_finalize(!checksum::fold(sum)));
    }

    /// [`fill_checksum`](Self::fill_checksum) over the whole buffer instead
    /// of `Length` bytes: what IPVS's UDP NAT handlers compute for a
    /// datagram that had no checksum (over the IP payload, `skb->len -
    /// udphoff`). Wrap the IPv4 payload.
    pub fn fill_checksum_segment(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let d = self.buffer.as_ref();
        let sum = checksum::ones_sum(d, checksum::pseudo_header_sum_len(src, dst, IPPROTO_UDP, d.len()));
        self.set_checksum(checksum::udp_finalize(!checksum::fold(sum)));
    }

    /// The mutable data, bounded by Length and the buffer.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let l = usize::from(self.len());
        clamp_mut(self.buffer.as_mut(), HEADER_LEN, l)
    }
}

/// A parsed UDP header. The data is [`UdpPacket::payload`] when parsing and
/// an argument of [`emit`](Self::emit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source Port.
    pub src_port: u16,
    /// Destination Port.
    pub dst_port: u16,
}

impl UdpRepr {
    /// Parses a datagram, verifying a non-zero checksum when `check` is
    /// [`ChecksumCheck::Verify`] ([`WireError::BadChecksum`]).
    pub fn parse<T: AsRef<[u8]>>(
        p: &UdpPacket<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        check: ChecksumCheck,
    ) -> Result<Self, WireError> {
        p.check_len()?;
        if check == ChecksumCheck::Verify && !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        Ok(UdpRepr { src_port: p.src_port(), dst_port: p.dst_port() })
    }

    /// Datagram length for `payload_len` bytes of data.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the header and `payload` and fills the checksum (never 0).
    /// [`WireError::Truncated`] if the buffer is shorter than
    /// [`buffer_len`](Self::buffer_len), [`WireError::BadLength`] if the
    /// datagram exceeds 65535 bytes. Bytes after the datagram are left as
    /// they are.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        p: &mut UdpPacket<T>,
        payload: &[u8],
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<(), WireError> {
        let need = self.buffer_len(payload.len());
        let len = u16::try_from(need).map_err(|_| WireError::BadLength)?;
        if p.buffer.as_ref().len() < need {
            return Err(WireError::Truncated);
        }
        let b = p.buffer.as_mut();
        put16(b, field::SRC_PORT, self.src_port);
        put16(b, field::DST_PORT, self.dst_port);
        put16(b, field::LENGTH, len);
        b[HEADER_LEN..need].copy_from_slice(payload);
        p.fill_checksum(src, dst);
        Ok(())
    }
}

impl<T: AsRef<[u8]>> std::fmt::Display for UdpPacket<T> {
    /// `UDP src=53 dst=5353 len=9`; a short buffer says so.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return write!(f, "UDP (truncated: {} bytes)", self.buffer.as_ref().len());
        }
        write!(f, "UDP src={} dst={} len={}", self.src_port(), self.dst_port(), self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 199);

    /// 192.168.0.1:1024 -> 192.168.0.199:53, 4 data bytes "abcd"; checksum
    /// 0xb4c1 worked out independently of this crate (separate word-by-word
    /// script).
    const DGRAM: [u8; 12] = [0x04, 0x00, 0x00, 0x35, 0x00, 0x0c, 0xb4, 0xc1, b'a', b'b', b'c', b'd'];

    #[test]
    fn known_datagram() {
        let p = UdpPacket::new_checked(&DGRAM[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.len()), (1024, 53, 12));
        assert_eq!(p.payload(), b"abcd");
        assert!(!p.is_empty());
        assert_eq!(p.checksum(), 0xb4c1);
        assert!(p.verify_checksum(A, B));
        // (The pseudo-header sum is symmetric in the addresses: swap is not a test.)
        assert!(!p.verify_checksum(A, A));
        let r = UdpRepr::parse(&p, A, B, ChecksumCheck::Verify).unwrap();
        let mut out = [0u8; 12];
        r.emit(&mut UdpPacket::new_unchecked(&mut out[..]), b"abcd", A, B).unwrap();
        assert_eq!(out, DGRAM);
    }

    #[test]
    fn zero_checksum_means_none() {
        let mut b = DGRAM;
        b[6] = 0;
        b[7] = 0;
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum(B, B));
        assert!(UdpRepr::parse(&p, B, B, ChecksumCheck::Verify).is_ok());
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        // Choose the last data word so that the full sum is -0: then the
        // checksum computes to 0 and must be stored as 0xFFFF.
        let mut b = DGRAM;
        b[10] = 0;
        b[11] = 0;
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.fill_checksum(A, B);
        let c = p.checksum();
        // Putting the checksum value into the data word makes the sum of
        // everything but the checksum field equal to -0.
        b[10..12].copy_from_slice(&c.to_be_bytes());
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.fill_checksum(A, B);
        assert_eq!(p.checksum(), 0xFFFF);
        assert!(p.verify_checksum(A, B));
    }

    #[test]
    fn length_bounds() {
        for n in 0..8 {
            assert_eq!(UdpPacket::new_checked(&DGRAM[..n]).unwrap_err(), WireError::Truncated);
        }
        assert_eq!(UdpPacket::new_checked(&DGRAM[..11]).unwrap_err(), WireError::Truncated);
        let mut b = DGRAM;
        b[5] = 7;
        assert_eq!(UdpPacket::new_checked(&b[..]).unwrap_err(), WireError::BadLength);
        // Length shorter than the buffer: data bounded by Length.
        let mut b = [0u8; 16];
        b[..12].copy_from_slice(&DGRAM);
        b[12..].copy_from_slice(b"XXXX");
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload(), b"abcd");
        assert!(p.verify_checksum(A, B));
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.set_len(8);
        assert!(p.is_empty() && p.payload_mut().is_empty());
    }

    #[test]
    fn emit_errors() {
        let r = UdpRepr { src_port: 1, dst_port: 2 };
        assert_eq!(r.emit(&mut UdpPacket::new_unchecked(&mut [0u8; 9][..]), b"ab", A, B), Err(WireError::Truncated));
        let big = vec![0u8; 65528];
        let mut buf = vec![0u8; 65536];
        assert_eq!(r.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), &big, A, B), Err(WireError::BadLength));
        assert!(r.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), &big[1..], A, B).is_ok());
    }

    #[test]
    fn display() {
        let b = [0, 53, 0x14, 0xe9, 0, 9, 0, 0, b'q'];
        assert_eq!(UdpPacket::new_unchecked(&b[..]).to_string(), "UDP src=53 dst=5353 len=9");
        assert_eq!(UdpPacket::new_unchecked(&b[..3]).to_string(), "UDP (truncated: 3 bytes)");
    }
}
