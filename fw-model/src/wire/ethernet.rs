//! Ethernet II frames (RFC 894 for IPv4 over Ethernet) with an optional
//! single IEEE 802.1Q VLAN tag. Frames here never carry the FCS.
//!
//! ```text
//!  0      6      12         14        16         18
//!  | dst  | src  | ethertype | payload...                  (untagged)
//!  | dst  | src  | 0x8100    | TCI     | ethertype | payload (tagged)
//! ```

use super::{clamp, clamp_mut, get16, put16, MacAddr, WireError, ETHERTYPE_VLAN};

/// Length of an untagged Ethernet header.
pub const HEADER_LEN: usize = 14;
/// Length of an Ethernet header with one 802.1Q tag.
pub const VLAN_HEADER_LEN: usize = 18;
/// Minimum Ethernet frame length without the FCS (IEEE 802.3: 64 with FCS).
pub const MIN_FRAME_LEN: usize = 60;

mod field {
    pub const DST: core::ops::Range<usize> = 0..6;
    pub const SRC: core::ops::Range<usize> = 6..12;
    pub const TYPE: usize = 12;
    pub const TCI: usize = 14;
    pub const INNER_TYPE: usize = 16;
}

/// A zero-copy view of an Ethernet frame (without FCS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps a buffer and [`check_len`](Self::check_len)s it.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Ensures the header (14 bytes, or 18 when the first EtherType is the
    /// 802.1Q TPID) fits in the buffer; [`WireError::Truncated`] otherwise.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if get16(b, field::TYPE) == ETHERTYPE_VLAN && b.len() < VLAN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC address.
    pub fn dst_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        MacAddr(a)
    }

    /// Source MAC address.
    pub fn src_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        MacAddr(a)
    }

    /// Whether the frame carries an 802.1Q tag (TPID `0x8100` at offset 12).
    pub fn has_vlan(&self) -> bool {
        get16(self.buffer.as_ref(), field::TYPE) == ETHERTYPE_VLAN
    }

    /// The 802.1Q tag control information (PCP 3 bits, DEI 1 bit, VID 12
    /// bits) if the frame is tagged.
    pub fn vlan_tci(&self) -> Option<u16> {
        if self.has_vlan() {
            Some(get16(self.buffer.as_ref(), field::TCI))
        } else {
            None
        }
    }

    /// The EtherType of the payload: the one after the 802.1Q tag if there
    /// is one. A second tag (Q-in-Q) is not parsed: its TPID is returned.
    pub fn ethertype(&self) -> u16 {
        let b = self.buffer.as_ref();
        if self.has_vlan() {
            get16(b, field::INNER_TYPE)
        } else {
            get16(b, field::TYPE)
        }
    }

    /// Header length: 14, or 18 with an 802.1Q tag.
    pub fn header_len(&self) -> usize {
        if self.has_vlan() {
            VLAN_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// The payload: everything after the header, including any padding.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        clamp(b, self.header_len(), b.len())
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> EthernetFrame<&'a T> {
    /// [`payload`](EthernetFrame::payload) with the lifetime of the underlying buffer rather than of the
    /// view, so a view built from it may outlive this one (e.g.
    /// `Ipv4Packet::new_checked(EthernetFrame::new_checked(f)?.into_payload())`).
    pub fn into_payload(self) -> &'a [u8] {
        let b = self.buffer.as_ref();
        clamp(b, self.header_len(), b.len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC address.
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a.0);
    }

    /// Sets the source MAC address.
    pub fn set_src_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a.0);
    }

    /// Sets the payload EtherType (the inner one on a tagged frame).
    pub fn set_ethertype(&mut self, t: u16) {
        let off = if self.has_vlan() { field::INNER_TYPE } else { field::TYPE };
        put16(self.buffer.as_mut(), off, t);
    }

    /// Sets the 802.1Q TCI of a tagged frame. A tag cannot be added in
    /// place, so an untagged frame gives [`WireError::Unsupported`].
    pub fn set_vlan_tci(&mut self, tci: u16) -> Result<(), WireError> {
        if !self.has_vlan() {
            return Err(WireError::Unsupported("frame has no 802.1Q tag"));
        }
        put16(self.buffer.as_mut(), field::TCI, tci);
        Ok(())
    }

    /// The mutable payload (everything after the header).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        let b = self.buffer.as_mut();
        let len = b.len();
        clamp_mut(b, h, len)
    }
}

/// A parsed Ethernet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source MAC address.
    pub src: MacAddr,
    /// Destination MAC address.
    pub dst: MacAddr,
    /// 802.1Q TCI if the frame is tagged.
    pub vlan_tci: Option<u16>,
    /// Payload EtherType (after the tag).
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Parses a checked frame's header.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self, WireError> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src: frame.src_addr(),
            dst: frame.dst_addr(),
            vlan_tci: frame.vlan_tci(),
            ethertype: frame.ethertype(),
        })
    }

    /// Length of the header this repr emits (14 or 18).
    pub const fn header_len(&self) -> usize {
        if self.vlan_tci.is_some() {
            VLAN_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Writes the header at the start of `frame`'s buffer;
    /// [`WireError::Truncated`] if the buffer is shorter than
    /// [`header_len`](Self::header_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) -> Result<(), WireError> {
        let b = frame.buffer.as_mut();
        if b.len() < self.header_len() {
            return Err(WireError::Truncated);
        }
        b[field::DST].copy_from_slice(&self.dst.0);
        b[field::SRC].copy_from_slice(&self.src.0);
        match self.vlan_tci {
            Some(tci) => {
                put16(b, field::TYPE, ETHERTYPE_VLAN);
                put16(b, field::TCI, tci);
                put16(b, field::INNER_TYPE, self.ethertype);
            }
            None => put16(b, field::TYPE, self.ethertype),
        }
        Ok(())
    }
}

impl<T: AsRef<[u8]>> std::fmt::Display for EthernetFrame<T> {
    /// `EthernetII src=02:00:00:00:00:01 dst=... type=0x0800`, the tag's
    /// VLAN ID when tagged; a short buffer says so.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.check_len().is_err() {
            return write!(f, "EthernetII (truncated: {} bytes)", self.buffer.as_ref().len());
        }
        write!(f, "EthernetII src={} dst={}", self.src_addr(), self.dst_addr())?;
        if let Some(tci) = self.vlan_tci() {
            write!(f, " vlan={}", tci & 0x0FFF)?;
        }
        write!(f, " type={:#06x}", self.ethertype())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ETHERTYPE_ARP, ETHERTYPE_IPV4};

    const UNTAGGED: [u8; 16] =
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0xaa, 0xbb];
    const TAGGED: [u8; 20] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x81, 0x00, 0x20, 0x64, 0x08, 0x00,
        0x45, 0x00,
    ];

    #[test]
    fn untagged() {
        let f = EthernetFrame::new_checked(&UNTAGGED[..]).unwrap();
        assert!(f.dst_addr().is_broadcast());
        assert_eq!(f.src_addr().to_string(), "02:00:00:00:00:01");
        assert_eq!(f.ethertype(), ETHERTYPE_ARP);
        assert_eq!(f.vlan_tci(), None);
        assert_eq!(f.header_len(), 14);
        assert_eq!(f.payload(), &[0xaa, 0xbb]);
    }

    #[test]
    fn tagged() {
        let f = EthernetFrame::new_checked(&TAGGED[..]).unwrap();
        assert_eq!(f.vlan_tci(), Some(0x2064)); // PCP 1, VID 100
        assert_eq!(f.ethertype(), ETHERTYPE_IPV4);
        assert_eq!(f.header_len(), 18);
        assert_eq!(f.payload(), &[0x45, 0x00]);
        let r = EthernetRepr::parse(&f).unwrap();
        let mut buf = [0u8; 20];
        buf[18..].copy_from_slice(&[0x45, 0x00]);
        r.emit(&mut EthernetFrame::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(buf, TAGGED);
    }

    #[test]
    fn truncation() {
        for n in 0..14 {
            assert_eq!(EthernetFrame::new_checked(&UNTAGGED[..n]).unwrap_err(), WireError::Truncated);
        }
        for n in 0..18 {
            assert_eq!(EthernetFrame::new_checked(&TAGGED[..n]).unwrap_err(), WireError::Truncated);
        }
        let f = EthernetFrame::new_checked(&TAGGED[..18]).unwrap();
        assert!(f.payload().is_empty());
        let r = EthernetRepr { src: MacAddr::ZERO, dst: MacAddr::ZERO, vlan_tci: Some(1), ethertype: 0 };
        assert_eq!(r.emit(&mut EthernetFrame::new_unchecked(&mut [0u8; 17][..])), Err(WireError::Truncated));
    }

    #[test]
    fn setters() {
        let mut buf = TAGGED;
        let mut f = EthernetFrame::new_checked(&mut buf[..]).unwrap();
        f.set_dst_addr(MacAddr([1, 2, 3, 4, 5, 6]));
        f.set_src_addr(MacAddr([7, 8, 9, 10, 11, 12]));
        f.set_ethertype(ETHERTYPE_ARP);
        f.set_vlan_tci(0x0fff).unwrap();
        f.payload_mut()[0] = 0x46;
        assert_eq!(f.dst_addr(), MacAddr([1, 2, 3, 4, 5, 6]));
        assert_eq!(f.src_addr(), MacAddr([7, 8, 9, 10, 11, 12]));
        assert_eq!(f.ethertype(), ETHERTYPE_ARP);
        assert_eq!(f.vlan_tci(), Some(0x0fff));
        assert_eq!(buf[18], 0x46);
        let mut u = UNTAGGED;
        let mut f = EthernetFrame::new_checked(&mut u[..]).unwrap();
        assert!(f.set_vlan_tci(5).is_err());
        f.set_ethertype(ETHERTYPE_IPV4);
        assert_eq!(&u[12..14], &[0x08, 0x00]);
    }

    #[test]
    fn display() {
        let mut b = [0u8; 18];
        b[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        b[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        b[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        assert_eq!(EthernetFrame::new_unchecked(&b[..]).to_string(), "EthernetII src=02:00:00:00:00:01 dst=02:00:00:00:00:02 type=0x0800");
        b[12..18].copy_from_slice(&[0x81, 0x00, 0x20, 0x64, 0x86, 0xdd]);
        assert_eq!(EthernetFrame::new_unchecked(&b[..]).to_string(), "EthernetII src=02:00:00:00:00:01 dst=02:00:00:00:00:02 vlan=100 type=0x86dd");
        assert_eq!(EthernetFrame::new_unchecked(&b[..10]).to_string(), "EthernetII (truncated: 10 bytes)");
    }
}
