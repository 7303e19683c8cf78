//! ICMP for IPv4 (RFC 792).
//!
//! ```text
//!  0       8       16              31
//!  | Type  | Code  |   Checksum    |
//!  |        Rest of Header         |
//!  |     data ...                  |
//! ```
//!
//! The rest-of-header word is the identifier and sequence number of echo
//! messages, the next-hop MTU of "fragmentation needed" (RFC 1191), and
//! unused otherwise. An error message's data is the offending datagram's IP
//! header plus at least 64 bits of its data; view it with
//! [`Ipv4Packet::new_checked_header`](super::Ipv4Packet::new_checked_header).
//! The message is the whole buffer: wrap the IPv4 payload.

use super::checksum;
use super::{clamp, clamp_mut, get16, get32, put16, put32, ChecksumCheck, WireError};

/// Length of the ICMP header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = 8;

/// Echo Reply (type 0).
pub const ICMP_ECHO_REPLY: u8 = 0;
/// Destination Unreachable (type 3).
pub const ICMP_DEST_UNREACH: u8 = 3;
/// Destination Unreachable code: net unreachable.
pub const ICMP_UNREACH_NET: u8 = 0;
/// Destination Unreachable code: host unreachable.
pub const ICMP_UNREACH_HOST: u8 = 1;
/// Destination Unreachable code: protocol unreachable.
pub const ICMP_UNREACH_PROTO: u8 = 2;
/// Destination Unreachable code: port unreachable.
pub const ICMP_UNREACH_PORT: u8 = 3;
/// Destination Unreachable code: fragmentation needed and DF set (carries
/// the next-hop MTU, RFC 1191).
pub const ICMP_UNREACH_FRAG_NEEDED: u8 = 4;
/// Source Quench (type 4, deprecated by RFC 6633); an error message.
pub const ICMP_SOURCE_QUENCH: u8 = 4;
/// Redirect (type 5); an error message.
pub const ICMP_REDIRECT: u8 = 5;
/// Echo Request (type 8).
pub const ICMP_ECHO_REQUEST: u8 = 8;
/// Time Exceeded (type 11).
pub const ICMP_TIME_EXCEEDED: u8 = 11;
/// Time Exceeded code: TTL exceeded in transit.
pub const ICMP_EXC_TTL: u8 = 0;
/// Time Exceeded code: fragment reassembly time exceeded.
pub const ICMP_EXC_FRAGTIME: u8 = 1;
/// Parameter Problem (type 12).
pub const ICMP_PARAMETER_PROBLEM: u8 = 12;

/// Whether messages of type `t` are errors (RFC 1122 3.2.2; the kernel's
/// `icmp_pointers[].error`).
pub fn is_error_type(t: u8) -> bool {
    matches!(t, ICMP_DEST_UNREACH | ICMP_SOURCE_QUENCH | ICMP_REDIRECT | ICMP_TIME_EXCEEDED | ICMP_PARAMETER_PROBLEM)
}

mod field {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const REST: usize = 4;
}

/// A zero-copy view of an ICMPv4 message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv4Packet { buffer }
    }

    /// Wraps a buffer and [`check_len`](Self::check_len)s it.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Buffer at least 8 bytes; [`WireError::Truncated`] otherwise.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Code.
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum as stored.
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The 32-bit rest-of-header word (bytes 4..8).
    pub fn rest_of_header(&self) -> u32 {
        get32(self.buffer.as_ref(), field::REST)
    }

    /// Echo identifier (upper 16 bits of rest of header).
    pub fn echo_ident(&self) -> u16 {
        get16(self.buffer.as_ref(), field::REST)
    }

    /// Echo sequence number (lower 16 bits of rest of header).
    pub fn echo_seq_no(&self) -> u16 {
        get16(self.buffer.as_ref(), field::REST + 2)
    }

    /// Next-hop MTU of a type 3 code 4 message (lower 16 bits of rest of
    /// header, RFC 1191 section 4; 0 from pre-RFC 1191 routers).
    pub fn next_hop_mtu(&self) -> u16 {
        get16(self.buffer.as_ref(), field::REST + 2)
    }

    /// Whether the type is an error message that quotes a datagram
    /// (destination unreachable, source quench, redirect, time exceeded,
    /// parameter problem).
    pub fn is_error(&self) -> bool {
        is_error_type(self.msg_type())
    }

    /// The data after the 8-byte header.
    pub fn data(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        clamp(b, HEADER_LEN, b.len())
    }

    /// Whether the checksum over the whole message verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(self.buffer.as_ref(), 0)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv4Packet<&'a T> {
    /// [`data`](Icmpv4Packet::data) with the lifetime of the underlying buffer rather than of the
    /// view, so a view built from it may outlive this one (e.g.
    /// `Ipv4Packet::new_checked(EthernetFrame::new_checked(f)?.into_payload())`).
    pub fn into_data(self) -> &'a [u8] {
        let b = self.buffer.as_ref();
        clamp(b, HEADER_LEN, b.len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Sets Type.
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }

    /// Sets Code.
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    /// Sets the stored Checksum.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets the rest-of-header word.
    pub fn set_rest_of_header(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::REST, v);
    }

    /// Sets the echo identifier.
    pub fn set_echo_ident(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::REST, v);
    }

    /// Sets the echo sequence number.
    pub fn set_echo_seq_no(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::REST + 2, v);
    }

    /// Sets the next-hop MTU (and zeroes the unused upper 16 bits).
    pub fn set_next_hop_mtu(&mut self, v: u16) {
        self.set_rest_of_header(u32::from(v));
    }

    /// Computes the checksum over the whole message and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }

    /// The mutable data after the header.
    pub fn data_mut(&mut self) -> &mut [u8] {
        let b = self.buffer.as_mut();
        let len = b.len();
        clamp_mut(b, HEADER_LEN, len)
    }
}

/// A parsed ICMP header. The data is [`Icmpv4Packet::data`] when parsing
/// and an argument of [`emit`](Self::emit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Icmpv4Repr {
    /// Type.
    pub msg_type: u8,
    /// Code.
    pub msg_code: u8,
    /// Rest-of-header word (echo ident << 16 | seq, or next-hop MTU).
    pub rest_of_header: u32,
}

impl Icmpv4Repr {
    /// An echo request/reply header.
    pub const fn echo(msg_type: u8, ident: u16, seq_no: u16) -> Self {
        Icmpv4Repr { msg_type, msg_code: 0, rest_of_header: ((ident as u32) << 16) | seq_no as u32 }
    }

    /// Parses a message, verifying its checksum when `check` is
    /// [`ChecksumCheck::Verify`] ([`WireError::BadChecksum`]).
    pub fn parse<T: AsRef<[u8]>>(p: &Icmpv4Packet<T>, check: ChecksumCheck) -> Result<Self, WireError> {
        p.check_len()?;
        if check == ChecksumCheck::Verify && !p.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        Ok(Icmpv4Repr { msg_type: p.msg_type(), msg_code: p.msg_code(), rest_of_header: p.rest_of_header() })
    }

    /// Message length for `data_len` bytes of data.
    pub const fn buffer_len(&self, data_len: usize) -> usize {
        HEADER_LEN + data_len
    }

    /// Writes the header and `data` and fills the checksum. The buffer must
    /// be exactly [`buffer_len`](Self::buffer_len)`(data.len())` bytes (the
    /// checksum covers all of it): [`WireError::Truncated`] if shorter,
    /// [`WireError::BadLength`] if longer.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Icmpv4Packet<T>, data: &[u8]) -> Result<(), WireError> {
        let need = self.buffer_len(data.len());
        let have = p.buffer.as_ref().len();
        if have < need {
            return Err(WireError::Truncated);
        }
        if have > need {
            return Err(WireError::BadLength);
        }
        p.set_msg_type(self.msg_type);
        p.set_msg_code(self.msg_code);
        p.set_rest_of_header(self.rest_of_header);
        p.data_mut().copy_from_slice(data);
        p.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The classic Windows `ping` echo request (id 1, seq 1, 32 bytes
    /// "abcdefghijklmnopqrstuvwabcdefghi"), checksum 0x4d5a.
    fn windows_ping() -> Vec<u8> {
        let mut v = vec![0x08, 0x00, 0x4d, 0x5a, 0x00, 0x01, 0x00, 0x01];
        v.extend_from_slice(b"abcdefghijklmnopqrstuvwabcdefghi");
        v
    }

    #[test]
    fn known_echo_request() {
        let v = windows_ping();
        let p = Icmpv4Packet::new_checked(&v[..]).unwrap();
        assert_eq!((p.msg_type(), p.msg_code()), (ICMP_ECHO_REQUEST, 0));
        assert_eq!((p.echo_ident(), p.echo_seq_no(), p.rest_of_header()), (1, 1, 0x0001_0001));
        assert_eq!(p.checksum(), 0x4d5a);
        assert!(p.verify_checksum());
        assert!(!p.is_error());
        assert_eq!(p.data().len(), 32);
        let r = Icmpv4Repr::parse(&p, ChecksumCheck::Verify).unwrap();
        assert_eq!(r, Icmpv4Repr::echo(ICMP_ECHO_REQUEST, 1, 1));
        let mut out = vec![0u8; r.buffer_len(32)];
        r.emit(&mut Icmpv4Packet::new_unchecked(&mut out[..]), p.data()).unwrap();
        assert_eq!(out, v);
        assert_eq!(r.emit(&mut Icmpv4Packet::new_unchecked(&mut out[..39]), p.data()), Err(WireError::Truncated));
        let mut longer = [0u8; 41];
        assert_eq!(r.emit(&mut Icmpv4Packet::new_unchecked(&mut longer[..]), p.data()), Err(WireError::BadLength));
    }

    #[test]
    fn frag_needed() {
        let mut v = [0u8; 8 + 28];
        let mut p = Icmpv4Packet::new_unchecked(&mut v[..]);
        p.set_msg_type(ICMP_DEST_UNREACH);
        p.set_msg_code(ICMP_UNREACH_FRAG_NEEDED);
        p.set_next_hop_mtu(1480);
        p.fill_checksum();
        assert!(p.is_error());
        assert_eq!(p.next_hop_mtu(), 1480);
        assert_eq!(p.rest_of_header(), 1480);
        assert!(p.verify_checksum());
        p.set_echo_ident(7);
        p.set_echo_seq_no(9);
        assert_eq!(p.rest_of_header(), 0x0007_0009);
        assert!(!p.verify_checksum());
        let mut bad = windows_ping();
        bad[9] ^= 0x40;
        let p = Icmpv4Packet::new_checked(&bad[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&p, ChecksumCheck::Verify), Err(WireError::BadChecksum));
    }

    #[test]
    fn truncation() {
        let v = windows_ping();
        for n in 0..8 {
            assert_eq!(Icmpv4Packet::new_checked(&v[..n]).unwrap_err(), WireError::Truncated);
        }
        assert!(Icmpv4Packet::new_checked(&v[..8]).unwrap().data().is_empty());
    }
}
