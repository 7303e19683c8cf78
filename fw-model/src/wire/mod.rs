//! Packet views and checksums: the packet layer of the golden model.
//!
//! The style follows smoltcp's `wire` module: each header has a typed,
//! zero-copy view over a byte buffer (`XxxPacket<T: AsRef<[u8]>>`) with
//! getters named after the RFC's fields and setters when the buffer is
//! mutable, plus a `XxxRepr` struct (a parsed, owned description of the
//! header) with `parse` and `emit`.
//!
//! Rules every view follows:
//!
//! * `new_unchecked` wraps any buffer; fixed-offset getters on a buffer that
//!   is too short panic (as with slice indexing), so only use it on buffers
//!   you built yourself.
//! * `new_checked` (= `new_unchecked` + `check_len`) validates every length
//!   the getters rely on and returns a [`WireError`]; after it succeeds no
//!   getter can go out of bounds, whatever the bytes are.
//! * Variable-length slices (`options()`, `payload()`, ...) are clamped to
//!   the buffer, so they never panic even on an unchecked view.
//! * Nothing allocates except `Repr::emit` helpers in [`build`].
//!
//! [`parse_frame`] is the one-pass classifier shared by the director and the
//! hardware model; [`checksum`] holds the Internet checksum (RFC 1071) and
//! its incremental update (RFC 1624) with Linux IPVS's exact semantics.
//!
//! ```
//! use lvsnic_model::wire::{build, checksum, parse_frame, EthernetRepr, Ipv4Packet, Ipv4Repr,
//!     MacAddr, TcpPacket, TcpRepr, ETHERTYPE_IPV4, TCP_SYN};
//! use std::net::Ipv4Addr;
//!
//! let eth = EthernetRepr { src: MacAddr([2, 0, 0, 0, 0, 1]), dst: MacAddr([2, 0, 0, 0, 0, 2]),
//!                          vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
//! let ip = Ipv4Repr { src_addr: Ipv4Addr::new(198, 51, 100, 7), dst_addr: Ipv4Addr::new(192, 0, 2, 80),
//!                     protocol: 0, payload_len: 0, ttl: 64, tos: 0, ident: 1, dont_frag: true };
//! let syn = TcpRepr { src_port: 40000, dst_port: 80, seq_number: 1, ack_number: 0,
//!                     flags: TCP_SYN, window_len: 64240 };
//! let mut frame = build::tcp_frame(&eth, &ip, &syn, b"");
//!
//! // Classify in one pass.
//! let info = parse_frame(&frame);
//! let (v4, l4) = (info.ipv4.unwrap(), info.l4.unwrap());
//! assert!(info.is_ok() && v4.header_checksum_ok && l4.tcp_flags == TCP_SYN);
//!
//! // NAT the destination to a real server with incremental checksum updates.
//! let rip = Ipv4Addr::new(10, 0, 0, 5);
//! let mut p = Ipv4Packet::new_checked(&mut frame[v4.l3_offset..]).unwrap();
//! p.set_dst_addr_incremental(rip);
//! let mut t = TcpPacket::new_checked(p.payload_mut()).unwrap();
//! let delta = checksum::delta_addr(v4.dst, rip) + checksum::delta16(80, 8080);
//! t.set_dst_port(8080);
//! t.set_checksum(checksum::apply_delta(t.checksum(), delta));
//! assert!(t.verify_checksum(v4.src, rip));
//! ```

pub mod arp;
pub mod build;
pub mod checksum;
pub mod ethernet;
pub mod frame;
pub mod icmp;
pub mod icmpv6;
pub mod ip;
pub mod ipv4_options;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use ethernet::{EthernetFrame, EthernetRepr};
pub use frame::{parse_frame, FrameError, FrameInfo, Ipv4Info, Ipv6Info, L4Info};
pub use icmp::{Icmpv4Packet, Icmpv4Repr};
pub use ip::IpProtocol;
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr};
pub use tcp::{TcpPacket, TcpRepr, TCP_ACK, TCP_CWR, TCP_ECE, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN, TCP_URG};
pub use udp::{UdpPacket, UdpRepr};

use std::fmt;
use std::str::FromStr;

/// EtherType of IPv4 (RFC 894).
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP (RFC 826).
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// Tag protocol identifier of an IEEE 802.1Q VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of IPv6 (RFC 8200 / RFC 2464).
pub const ETHERTYPE_IPV6: u16 = 0x86DD;

/// IP protocol number of ICMP (RFC 792).
pub const IPPROTO_ICMP: u8 = 1;
/// IP protocol number of IP-in-IP encapsulation (RFC 2003), used by IPVS
/// tunnelling (`-i`).
pub const IPPROTO_IPIP: u8 = 4;
/// IP protocol number of TCP (RFC 9293).
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of UDP (RFC 768).
pub const IPPROTO_UDP: u8 = 17;

/// The source and destination ports at the start of a TCP or UDP header
/// (both begin with them: RFC 9293 section 3.1, RFC 768), or `None` if
/// `l4` is shorter than 4 bytes.
pub fn transport_ports(l4: &[u8]) -> Option<(u16, u16)> {
    (l4.len() >= 4).then(|| (get16(l4, 0), get16(l4, 2)))
}

/// Sets the source port (the destination port when `dst`) at the start of
/// a TCP or UDP header and returns the port it replaces. `l4` must hold
/// that port (at least 2 bytes, 4 for the destination port).
pub fn replace_transport_port(l4: &mut [u8], dst: bool, port: u16) -> u16 {
    let off = if dst { 2 } else { 0 };
    let old = get16(l4, off);
    put16(l4, off, port);
    old
}

/// Why a buffer is not a valid packet of the expected kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum WireError {
    /// The buffer is shorter than the header (or than a length field says).
    #[error("truncated packet: buffer shorter than the header or its length fields say")]
    Truncated,
    /// IP version field is not 4 for IPv4 (RFC 791 section 3.1), or not 6
    /// for IPv6 (RFC 8200 section 3).
    #[error("bad IP version")]
    BadVersion,
    /// A header-length field is below its minimum (IPv4 IHL < 5, TCP data
    /// offset < 5).
    #[error("bad header length field")]
    BadHeaderLen,
    /// IPv4 total length is smaller than the header length.
    #[error("bad IPv4 total length (smaller than the header)")]
    BadTotalLen,
    /// A length field other than the IPv4 ones is inconsistent (UDP length
    /// below 8, RFC 768).
    #[error("bad length field")]
    BadLength,
    /// A checksum does not verify.
    #[error("bad checksum")]
    BadChecksum,
    /// A well-formed packet that this model does not handle.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}

/// Ethernet MAC address (IEEE 802), in transmission byte order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// The all-zero address `00:00:00:00:00:00` (ARP requests' unknown target).
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// Address from the first six bytes of `bytes`; `None` if fewer than six.
    pub fn from_bytes(bytes: &[u8]) -> Option<MacAddr> {
        let b: [u8; 6] = bytes.get(..6)?.try_into().ok()?;
        Some(MacAddr(b))
    }

    /// The six bytes.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether the group bit (I/G, least significant bit of the first octet)
    /// is set; broadcast is a multicast address too.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether this is an individual (unicast) address.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Whether the locally administered (U/L) bit is set.
    pub fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl fmt::Display for MacAddr {
    /// `aa:bb:cc:dd:ee:ff`, lowercase.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MacAddr({self})")
    }
}

/// A string that is not a MAC address in `aa:bb:cc:dd:ee:ff` form.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address {0:?}: expected six two-digit hex bytes separated by ':' (aa:bb:cc:dd:ee:ff)")]
pub struct MacParseError(pub String);

impl FromStr for MacAddr {
    type Err = MacParseError;

    /// Parses `aa:bb:cc:dd:ee:ff` (hex digits in either case, exactly two per
    /// byte).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || MacParseError(s.to_string());
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in out.iter_mut() {
            let p = parts.next().ok_or_else(err)?;
            if p.len() != 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err());
            }
            *byte = u8::from_str_radix(p, 16).map_err(|_| err())?;
        }
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(MacAddr(out))
    }
}

impl serde::Serialize for MacAddr {
    /// Serialized as its `aa:bb:cc:dd:ee:ff` string.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for MacAddr {
    /// Deserialized from an `aa:bb:cc:dd:ee:ff` string.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Whether `Repr::parse` functions verify checksums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ChecksumCheck {
    /// Reject a packet whose checksum does not verify with
    /// [`WireError::BadChecksum`].
    #[default]
    Verify,
    /// Do not look at the checksum.
    Ignore,
}

/// Big-endian 16-bit load at `off` (panics if out of bounds; callers check).
#[inline(always)]
pub(crate) fn get16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Big-endian 32-bit load at `off` (panics if out of bounds; callers check).
#[inline(always)]
pub(crate) fn get32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Big-endian 16-bit store at `off`.
#[inline(always)]
pub(crate) fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Big-endian 32-bit store at `off`.
#[inline(always)]
pub(crate) fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// `b[start..end]` with both ends clamped to the buffer (never panics).
#[inline(always)]
pub(crate) fn clamp(b: &[u8], start: usize, end: usize) -> &[u8] {
    let end = end.min(b.len());
    &b[start.min(end)..end]
}

/// Mutable `b[start..end]` with both ends clamped to the buffer.
#[inline(always)]
pub(crate) fn clamp_mut(b: &mut [u8], start: usize, end: usize) -> &mut [u8] {
    let end = end.min(b.len());
    &mut b[start.min(end)..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_display_and_parse() {
        let m = MacAddr([0x02, 0xAB, 0x00, 0x10, 0xfe, 0x09]);
        assert_eq!(m.to_string(), "02:ab:00:10:fe:09");
        assert_eq!("02:AB:00:10:FE:09".parse::<MacAddr>().unwrap(), m);
        assert_eq!("02:ab:00:10:fe:09".parse::<MacAddr>().unwrap(), m);
        for bad in ["", "02:ab:00:10:fe", "02:ab:00:10:fe:09:00", "2:ab:00:10:fe:09", "02:ab:00:10:fe:0g",
            "02-ab-00-10-fe-09", "02:ab:00:10:fe:+9", "002:ab:00:10:fe:9"]
        {
            let e = bad.parse::<MacAddr>().unwrap_err();
            assert!(e.to_string().contains("invalid MAC address"), "{bad}: {e}");
        }
    }

    #[test]
    fn mac_classes() {
        assert!(MacAddr::BROADCAST.is_broadcast());
        assert!(MacAddr::BROADCAST.is_multicast());
        let mc: MacAddr = "01:00:5e:00:00:01".parse().unwrap();
        assert!(mc.is_multicast() && !mc.is_broadcast());
        let uc: MacAddr = "00:11:22:33:44:55".parse().unwrap();
        assert!(uc.is_unicast() && !uc.is_local());
        assert!("02:00:00:00:00:01".parse::<MacAddr>().unwrap().is_local());
        assert_eq!(MacAddr::from_bytes(&[1, 2, 3, 4, 5]), None);
        assert_eq!(MacAddr::from_bytes(&[1, 2, 3, 4, 5, 6, 7]), Some(MacAddr([1, 2, 3, 4, 5, 6])));
    }

    #[test]
    fn mac_serde_as_string() {
        let m = MacAddr([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);
        let j = serde_json::to_string(&m).unwrap();
        assert_eq!(j, "\"aa:bb:cc:dd:ee:ff\"");
        assert_eq!(serde_json::from_str::<MacAddr>(&j).unwrap(), m);
        assert!(serde_json::from_str::<MacAddr>("\"nope\"").is_err());
    }
}
