//! TCP segments (RFC 9293, formerly RFC 793).
//!
//! ```text
//!  0               16              31
//!  |  Source Port  |   Dest Port   |
//!  |        Sequence Number        |
//!  |     Acknowledgment Number     |
//!  |DOff|Rsv |Flags|    Window     |
//!  |   Checksum    |Urgent Pointer |
//!  |     Options (DOff > 5)        |
//! ```
//!
//! TCP has no length field: a view's segment is its whole buffer, so wrap
//! the IPv4 payload (which is bounded by Total Length), not the rest of the
//! frame.

use super::checksum;
use super::{clamp, clamp_mut, get16, get32, put16, put32, ChecksumCheck, WireError, IPPROTO_TCP};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = 20;

/// FIN flag.
pub const TCP_FIN: u8 = 0x01;
/// SYN flag.
pub const TCP_SYN: u8 = 0x02;
/// RST flag.
pub const TCP_RST: u8 = 0x04;
/// PSH flag.
pub const TCP_PSH: u8 = 0x08;
/// ACK flag.
pub const TCP_ACK: u8 = 0x10;
/// URG flag.
pub const TCP_URG: u8 = 0x20;
/// ECE flag (RFC 3168).
pub const TCP_ECE: u8 = 0x40;
/// CWR flag (RFC 3168).
pub const TCP_CWR: u8 = 0x80;

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DOFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
}

/// A zero-copy view of a TCP segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps a buffer and [`check_len`](Self::check_len)s it.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Buffer at least 20 bytes ([`WireError::Truncated`]), data offset at
    /// least 5 words ([`WireError::BadHeaderLen`]), header within the buffer
    /// ([`WireError::Truncated`]).
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
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

    /// Sequence Number.
    pub fn seq_number(&self) -> u32 {
        get32(self.buffer.as_ref(), field::SEQ)
    }

    /// Acknowledgment Number.
    pub fn ack_number(&self) -> u32 {
        get32(self.buffer.as_ref(), field::ACK)
    }

    /// Data Offset in bytes (the 4-bit field × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DOFF] >> 4) * 4
    }

    /// The 8 control bits CWR ECE URG ACK PSH RST SYN FIN (byte 13; see the
    /// `TCP_*` constants).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// FIN.
    pub fn fin(&self) -> bool {
        self.flags() & TCP_FIN != 0
    }

    /// SYN.
    pub fn syn(&self) -> bool {
        self.flags() & TCP_SYN != 0
    }

    /// RST.
    pub fn rst(&self) -> bool {
        self.flags() & TCP_RST != 0
    }

    /// PSH.
    pub fn psh(&self) -> bool {
        self.flags() & TCP_PSH != 0
    }

    /// ACK.
    pub fn ack(&self) -> bool {
        self.flags() & TCP_ACK != 0
    }

    /// URG.
    pub fn urg(&self) -> bool {
        self.flags() & TCP_URG != 0
    }

    /// ECE (RFC 3168).
    pub fn ece(&self) -> bool {
        self.flags() & TCP_ECE != 0
    }

    /// CWR (RFC 3168).
    pub fn cwr(&self) -> bool {
        self.flags() & TCP_CWR != 0
    }

    /// Window.
    pub fn window_len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::WINDOW)
    }

    /// Checksum as stored.
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Urgent Pointer.
    pub fn urgent_at(&self) -> u16 {
        get16(self.buffer.as_ref(), field::URGENT)
    }

    /// The options bytes (between byte 20 and the data offset).
    pub fn options(&self) -> &[u8] {
        clamp(self.buffer.as_ref(), HEADER_LEN, self.header_len())
    }

    /// The data after the header (to the end of the buffer).
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        clamp(b, self.header_len(), b.len())
    }

    /// Whether the checksum verifies over the pseudo-header (`src`, `dst`,
    /// protocol 6, buffer length) and the whole buffer (RFC 9293 section
    /// 3.1).
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let b = self.buffer.as_ref();
        checksum::verify(b, checksum::pseudo_header_sum_len(src, dst, IPPROTO_TCP, b.len()))
    }

    /// [`verify_checksum`](Self::verify_checksum) over the IPv6
    /// pseudo-header (RFC 8200 section 8.1).
    pub fn verify_checksum_v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let b = self.buffer.as_ref();
        checksum::verify(b, checksum::pseudo_header_sum_v6(src, dst, IPPROTO_TCP, b.len() as u32))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> TcpPacket<&'a T> {
    /// [`payload`](TcpPacket::payload) with the lifetime of the underlying buffer rather than of the
    /// view, so a view built from it may outlive this one (e.g.
    /// `Ipv4Packet::new_checked(EthernetFrame::new_checked(f)?.into_payload())`).
    pub fn into_payload(self) -> &'a [u8] {
        let b = self.buffer.as_ref();
        clamp(b, self.header_len(), b.len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Sets Source Port (checksum not updated).
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, v);
    }

    /// Sets Destination Port (checksum not updated).
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, v);
    }

    /// Sets Sequence Number.
    pub fn set_seq_number(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Sets Acknowledgment Number.
    pub fn set_ack_number(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::ACK, v);
    }

    /// Sets the Data Offset from a length in bytes (`len / 4`), keeping the
    /// reserved bits.
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::DOFF];
        *b = (*b & 0x0F) | (((len / 4) & 0x0F) << 4);
    }

    /// Sets the 8 control bits (byte 13).
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    /// Sets Window.
    pub fn set_window_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::WINDOW, v);
    }

    /// Sets the stored Checksum.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Sets Urgent Pointer.
    pub fn set_urgent_at(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::URGENT, v);
    }

    /// Computes the checksum over the pseudo-header and the whole buffer
    /// and stores it (never `0xFFFF`).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let sum = checksum::ones_sum(b, checksum::pseudo_header_sum_len(src, dst, IPPROTO_TCP, b.len()));
        self.set_checksum(!checksum::fold(sum));
    }

    /// [`fill_checksum`](Self::fill_checksum) over the IPv6 pseudo-header
    /// (RFC 8200 section 8.1).
    pub fn fill_checksum_v6(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let sum = checksum::ones_sum(b, checksum::pseudo_header_sum_v6(src, dst, IPPROTO_TCP, b.len() as u32));
        self.set_checksum(!checksum::fold(sum));
    }

    /// The mutable options bytes.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        clamp_mut(self.buffer.as_mut(), HEADER_LEN, h)
    }

    /// The mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        let b = self.buffer.as_mut();
        let len = b.len();
        clamp_mut(b, h, len)
    }
}

/// A parsed TCP header (options and urgent pointer not represented). The
/// payload is not part of the repr: it is [`TcpPacket::payload`] when
/// parsing and an argument of [`emit`](Self::emit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source Port.
    pub src_port: u16,
    /// Destination Port.
    pub dst_port: u16,
    /// Sequence Number.
    pub seq_number: u32,
    /// Acknowledgment Number.
    pub ack_number: u32,
    /// Control bits (`TCP_*`).
    pub flags: u8,
    /// Window.
    pub window_len: u16,
}

impl TcpRepr {
    /// Parses a segment, verifying its checksum against `src`/`dst` when
    /// `check` is [`ChecksumCheck::Verify`] ([`WireError::BadChecksum`]).
    pub fn parse<T: AsRef<[u8]>>(
        p: &TcpPacket<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        check: ChecksumCheck,
    ) -> Result<Self, WireError> {
        p.check_len()?;
        if check == ChecksumCheck::Verify && !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        Ok(TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq_number: p.seq_number(),
            ack_number: p.ack_number(),
            flags: p.flags(),
            window_len: p.window_len(),
        })
    }

    /// Length of the emitted header (20).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Segment length for a payload of `payload_len` bytes.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes a 20-byte header (no options, urgent pointer 0) followed by
    /// `payload`, and fills the checksum for `src`/`dst`. The buffer must be
    /// exactly [`buffer_len`](Self::buffer_len)`(payload.len())` bytes (the
    /// checksum covers the whole buffer); otherwise
    /// [`WireError::Truncated`] (shorter) or [`WireError::BadLength`]
    /// (longer).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        p: &mut TcpPacket<T>,
        payload: &[u8],
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<(), WireError> {
        let need = self.buffer_len(payload.len());
        let have = p.buffer.as_ref().len();
        if have < need {
            return Err(WireError::Truncated);
        }
        if have > need {
            return Err(WireError::BadLength);
        }
        let b = p.buffer.as_mut();
        put16(b, field::SRC_PORT, self.src_port);
        put16(b, field::DST_PORT, self.dst_port);
        put32(b, field::SEQ, self.seq_number);
        put32(b, field::ACK, self.ack_number);
        b[field::DOFF] = ((HEADER_LEN / 4) as u8) << 4;
        b[field::FLAGS] = self.flags;
        put16(b, field::WINDOW, self.window_len);
        put16(b, field::URGENT, 0);
        b[HEADER_LEN..].copy_from_slice(payload);
        p.fill_checksum(src, dst);
        Ok(())
    }
}

/// TCP control bits as tcpdump writes them: `S`, `A`, `F`, `R`, `P`, `U`,
/// `E`, `C`, in that order.
pub fn flag_letters(flags: u8) -> String {
    let letters = [(TCP_SYN, 'S'), (TCP_ACK, 'A'), (TCP_FIN, 'F'), (TCP_RST, 'R'), (TCP_PSH, 'P'), (TCP_URG, 'U'), (TCP_ECE, 'E'), (TCP_CWR, 'C')];
    letters.iter().filter(|(b, _)| flags & b != 0).map(|&(_, c)| c).collect()
}

impl<T: AsRef<[u8]>> std::fmt::Display for TcpPacket<T> {
    /// `TCP src=40000 dst=80 seq=.. ack=.. win=.. [SA]` (tcpdump's flag
    /// letters); a short buffer says so.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return write!(f, "TCP (truncated: {} bytes)", self.buffer.as_ref().len());
        }
        let flags = flag_letters(self.flags());
        write!(
            f,
            "TCP src={} dst={} seq={} ack={} win={} [{flags}]",
            self.src_port(),
            self.dst_port(),
            self.seq_number(),
            self.ack_number(),
            self.window_len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SYN from 10.0.0.1:49152 to 10.0.0.2:80, seq 1, window 64240, MSS
    /// 1460 option; checksum 0xc8e1 worked out independently of this crate
    /// (a separate word-by-word script over the pseudo-header 0a00 0001 0a00
    /// 0002 0006 0018 and the segment).
    const SYN: [u8; 24] = [
        0xc0, 0x00, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x60, 0x02, 0xfa, 0xf0, 0xc8, 0xe1,
        0x00, 0x00, 0x02, 0x04, 0x05, 0xb4,
    ];
    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    #[test]
    fn known_syn() {
        let p = TcpPacket::new_checked(&SYN[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (49152, 80));
        assert_eq!((p.seq_number(), p.ack_number()), (1, 0));
        assert_eq!(p.header_len(), 24);
        assert!(p.syn() && !p.ack() && !p.fin() && !p.rst() && !p.psh() && !p.urg() && !p.ece() && !p.cwr());
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.options(), &[0x02, 0x04, 0x05, 0xb4]);
        assert!(p.payload().is_empty());
        assert_eq!(p.checksum(), 0xc8e1);
        assert!(p.verify_checksum(A, B));
        assert!(!p.verify_checksum(B, A.to_bits().wrapping_add(1).into()));
        let mut c = SYN;
        let mut q = TcpPacket::new_unchecked(&mut c[..]);
        q.set_checksum(0x1234);
        q.fill_checksum(A, B);
        assert_eq!(c, SYN);
    }

    #[test]
    fn repr_round_trip() {
        let r = TcpRepr {
            src_port: 1234,
            dst_port: 443,
            seq_number: 0xdead_beef,
            ack_number: 0x0102_0304,
            flags: TCP_ACK | TCP_PSH,
            window_len: 512,
        };
        let payload = b"hello, world!";
        let mut buf = vec![0u8; r.buffer_len(payload.len())];
        r.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), payload, A, B).unwrap();
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.payload(), payload);
        assert!(p.psh() && p.ack());
        assert_eq!(TcpRepr::parse(&p, A, B, ChecksumCheck::Verify).unwrap(), r);
        assert_eq!(TcpRepr::parse(&p, B, B, ChecksumCheck::Verify), Err(WireError::BadChecksum));
        assert_eq!(TcpRepr::parse(&p, B, B, ChecksumCheck::Ignore).unwrap(), r);
        let mut short = [0u8; 32];
        assert_eq!(r.emit(&mut TcpPacket::new_unchecked(&mut short[..]), payload, A, B), Err(WireError::Truncated));
        let mut long = [0u8; 34];
        assert_eq!(r.emit(&mut TcpPacket::new_unchecked(&mut long[..]), payload, A, B), Err(WireError::BadLength));
    }

    #[test]
    fn check_len_rejections() {
        for n in 0..20 {
            assert_eq!(TcpPacket::new_checked(&SYN[..n]).unwrap_err(), WireError::Truncated);
        }
        assert_eq!(TcpPacket::new_checked(&SYN[..23]).unwrap_err(), WireError::Truncated);
        let mut b = SYN;
        b[12] = 0x40;
        assert_eq!(TcpPacket::new_checked(&b[..]).unwrap_err(), WireError::BadHeaderLen);
        b[12] = 0xf0;
        assert_eq!(TcpPacket::new_checked(&b[..]).unwrap_err(), WireError::Truncated);
        // Unchecked views never panic on slices.
        let p = TcpPacket::new_unchecked(&b[..]);
        assert_eq!(p.options().len(), 4);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn setters() {
        let mut b = SYN;
        let mut p = TcpPacket::new_unchecked(&mut b[..]);
        p.set_src_port(1);
        p.set_dst_port(2);
        p.set_seq_number(3);
        p.set_ack_number(4);
        p.set_flags(TCP_FIN | TCP_ACK | TCP_CWR | TCP_ECE | TCP_URG | TCP_RST);
        p.set_window_len(5);
        p.set_urgent_at(6);
        p.set_header_len(20);
        p.fill_checksum(A, B);
        let q = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!((q.src_port(), q.dst_port(), q.seq_number(), q.ack_number()), (1, 2, 3, 4));
        assert!(q.fin() && q.ack() && q.cwr() && q.ece() && q.urg() && q.rst() && !q.syn() && !q.psh());
        assert_eq!((q.window_len(), q.urgent_at(), q.header_len()), (5, 6, 20));
        assert_eq!(q.payload(), &[0x02, 0x04, 0x05, 0xb4]);
        assert!(q.verify_checksum(A, B));
    }

    #[test]
    fn display() {
        let mut b = [0u8; 20];
        b[0..2].copy_from_slice(&40000u16.to_be_bytes());
        b[2..4].copy_from_slice(&80u16.to_be_bytes());
        b[4..8].copy_from_slice(&7u32.to_be_bytes());
        b[12] = 0x50;
        b[13] = TCP_SYN | TCP_ACK;
        b[14..16].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(TcpPacket::new_unchecked(&b[..]).to_string(), "TCP src=40000 dst=80 seq=7 ack=0 win=1000 [SA]");
        assert_eq!(TcpPacket::new_unchecked(&b[..8]).to_string(), "TCP (truncated: 8 bytes)");
    }
}
