//! ARP for Ethernet and IPv4 (RFC 826).
//!
//! ```text
//!  0        2        4     5     6      8     14    18    24    28
//!  | htype  | ptype  | hlen| plen| oper | sha  | spa | tha | tpa |
//! ```
//!
//! Only hardware type 1 (Ethernet, 6-byte addresses) with protocol type
//! `0x0800` (IPv4, 4-byte addresses) is understood: the address getters use
//! that fixed 28-byte layout, and [`ArpRepr::parse`] rejects anything else.

use super::{get16, put16, MacAddr, WireError, ETHERTYPE_IPV4};
use std::net::Ipv4Addr;

/// ARP hardware type of Ethernet (RFC 826, IANA "Hardware Types").
pub const HTYPE_ETHERNET: u16 = 1;
/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;

mod field {
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: core::ops::Range<usize> = 8..14;
    pub const SPA: core::ops::Range<usize> = 14..18;
    pub const THA: core::ops::Range<usize> = 18..24;
    pub const TPA: core::ops::Range<usize> = 24..28;
}

/// A zero-copy view of an ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

fn ip_at(b: &[u8], r: core::ops::Range<usize>) -> Ipv4Addr {
    let mut a = [0; 4];
    a.copy_from_slice(&b[r]);
    Ipv4Addr::from(a)
}

fn mac_at(b: &[u8], r: core::ops::Range<usize>) -> MacAddr {
    let mut a = [0; 6];
    a.copy_from_slice(&b[r]);
    MacAddr(a)
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wraps a buffer and [`check_len`](Self::check_len)s it.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensures the buffer holds the 28-byte Ethernet/IPv4 layout and the
    /// layout the length fields declare (`8 + 2 * (hlen + plen)` bytes);
    /// [`WireError::Truncated`] otherwise. Trailing bytes (Ethernet padding)
    /// are allowed.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < PACKET_LEN {
            return Err(WireError::Truncated);
        }
        let declared = 8 + 2 * (usize::from(b[field::HLEN]) + usize::from(b[field::PLEN]));
        if b.len() < declared {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Hardware type (HTYPE; 1 = Ethernet).
    pub fn hardware_type(&self) -> u16 {
        get16(self.buffer.as_ref(), field::HTYPE)
    }

    /// Protocol type (PTYPE; an EtherType, `0x0800` = IPv4).
    pub fn protocol_type(&self) -> u16 {
        get16(self.buffer.as_ref(), field::PTYPE)
    }

    /// Hardware address length (HLEN; 6 for Ethernet).
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length (PLEN; 4 for IPv4).
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation (OPER; 1 = request, 2 = reply).
    pub fn operation(&self) -> u16 {
        get16(self.buffer.as_ref(), field::OPER)
    }

    /// Sender hardware address (SHA), Ethernet/IPv4 layout.
    pub fn sender_hardware_addr(&self) -> MacAddr {
        mac_at(self.buffer.as_ref(), field::SHA)
    }

    /// Sender protocol address (SPA), Ethernet/IPv4 layout.
    pub fn sender_protocol_addr(&self) -> Ipv4Addr {
        ip_at(self.buffer.as_ref(), field::SPA)
    }

    /// Target hardware address (THA), Ethernet/IPv4 layout.
    pub fn target_hardware_addr(&self) -> MacAddr {
        mac_at(self.buffer.as_ref(), field::THA)
    }

    /// Target protocol address (TPA), Ethernet/IPv4 layout.
    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        ip_at(self.buffer.as_ref(), field::TPA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets HTYPE.
    pub fn set_hardware_type(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::HTYPE, v);
    }

    /// Sets PTYPE.
    pub fn set_protocol_type(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::PTYPE, v);
    }

    /// Sets HLEN.
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    /// Sets PLEN.
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    /// Sets OPER.
    pub fn set_operation(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::OPER, v);
    }

    /// Sets SHA.
    pub fn set_sender_hardware_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&a.0);
    }

    /// Sets SPA.
    pub fn set_sender_protocol_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&a.octets());
    }

    /// Sets THA.
    pub fn set_target_hardware_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&a.0);
    }

    /// Sets TPA.
    pub fn set_target_protocol_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&a.octets());
    }
}

/// ARP operation (RFC 826 `ar$op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum ArpOperation {
    /// `ares_op$REQUEST`.
    Request = 1,
    /// `ares_op$REPLY`.
    Reply = 2,
}

impl From<ArpOperation> for u16 {
    fn from(op: ArpOperation) -> u16 {
        op as u16
    }
}

impl TryFrom<u16> for ArpOperation {
    type Error = WireError;

    /// 1 and 2; other operations (RARP, InARP, ...) are
    /// [`WireError::Unsupported`].
    fn try_from(v: u16) -> Result<Self, WireError> {
        match v {
            1 => Ok(ArpOperation::Request),
            2 => Ok(ArpOperation::Reply),
            _ => Err(WireError::Unsupported("ARP operation other than request/reply")),
        }
    }
}

/// A parsed Ethernet/IPv4 ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Request or reply.
    pub operation: ArpOperation,
    /// Sender hardware address.
    pub sender_mac: MacAddr,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (zero in a request).
    pub target_mac: MacAddr,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Parses an Ethernet/IPv4 request or reply; other hardware/protocol
    /// types or lengths and other operations are [`WireError::Unsupported`].
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<Self, WireError> {
        p.check_len()?;
        if p.hardware_type() != HTYPE_ETHERNET || p.hardware_len() != 6 {
            return Err(WireError::Unsupported("ARP hardware type is not Ethernet"));
        }
        if p.protocol_type() != ETHERTYPE_IPV4 || p.protocol_len() != 4 {
            return Err(WireError::Unsupported("ARP protocol type is not IPv4"));
        }
        Ok(ArpRepr {
            operation: ArpOperation::try_from(p.operation())?,
            sender_mac: p.sender_hardware_addr(),
            sender_ip: p.sender_protocol_addr(),
            target_mac: p.target_hardware_addr(),
            target_ip: p.target_protocol_addr(),
        })
    }

    /// Length of the emitted packet (28).
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes the 28-byte packet; [`WireError::Truncated`] if the buffer is
    /// shorter.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ArpPacket<T>) -> Result<(), WireError> {
        if p.buffer.as_ref().len() < PACKET_LEN {
            return Err(WireError::Truncated);
        }
        p.set_hardware_type(HTYPE_ETHERNET);
        p.set_protocol_type(ETHERTYPE_IPV4);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(self.operation.into());
        p.set_sender_hardware_addr(self.sender_mac);
        p.set_sender_protocol_addr(self.sender_ip);
        p.set_target_hardware_addr(self.target_mac);
        p.set_target_protocol_addr(self.target_ip);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A who-has 10.0.0.1 tell 10.0.0.2 request.
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 10, 0, 0, 2, 0, 0, 0, 0,
        0, 0, 10, 0, 0, 1,
    ];

    #[test]
    fn parse_request_and_round_trip() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        let r = ArpRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            ArpRepr {
                operation: ArpOperation::Request,
                sender_mac: MacAddr([2, 0, 0, 0, 0, 2]),
                sender_ip: Ipv4Addr::new(10, 0, 0, 2),
                target_mac: MacAddr::ZERO,
                target_ip: Ipv4Addr::new(10, 0, 0, 1),
            }
        );
        let mut out = [0xeeu8; 28];
        r.emit(&mut ArpPacket::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, REQUEST);
    }

    #[test]
    fn rejects() {
        for n in 0..28 {
            assert_eq!(ArpPacket::new_checked(&REQUEST[..n]).unwrap_err(), WireError::Truncated);
        }
        let mut b = REQUEST;
        b[4] = 8; // claims 8-byte hardware addresses: 8 + 2*12 = 32 > 28
        assert_eq!(ArpPacket::new_checked(&b[..]).unwrap_err(), WireError::Truncated);
        let mut padded = [0u8; 46];
        padded[..28].copy_from_slice(&b);
        let p = ArpPacket::new_checked(&padded[..]).unwrap();
        assert!(matches!(ArpRepr::parse(&p), Err(WireError::Unsupported(_))));
        let mut b = REQUEST;
        b[1] = 6; // IEEE 802
        assert!(matches!(ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])), Err(WireError::Unsupported(_))));
        let mut b = REQUEST;
        b[2] = 0x86;
        b[3] = 0xdd;
        assert!(matches!(ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])), Err(WireError::Unsupported(_))));
        let mut b = REQUEST;
        b[7] = 3; // RARP request
        assert!(matches!(ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])), Err(WireError::Unsupported(_))));
        b[7] = 2;
        assert_eq!(ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])).unwrap().operation, ArpOperation::Reply);
        let r = ArpRepr::parse(&ArpPacket::new_unchecked(&REQUEST[..])).unwrap();
        assert_eq!(r.emit(&mut ArpPacket::new_unchecked(&mut [0u8; 27][..])), Err(WireError::Truncated));
    }
}
