//! Connection synchronisation, wire-compatible with Linux IPVS
//! (`net/netfilter/ipvs/ip_vs_sync.c`, v6.1): the message codec, the
//! master's rules for which connections are sent and when ([`master`]) and
//! the backup's rules for installing what it receives ([`backup`]).
//!
//! Wire format (all multi-byte fields big-endian, as the kernel sends them):
//!
//! ```text
//! version 1 header (struct ip_vs_sync_mesg, 8 bytes)
//!   reserved:u8 = 0 | syncid:u8 | size:u16 | nr_conns:u8 | version:u8 = 1 | spare:u16 = 0
//! version 1 entry (struct ip_vs_sync_v4, 36 bytes; v6: 72), 32-bit aligned
//!   type:u8 (0: IPv4, 1: IPv6) | protocol:u8 | ver_size:u16 (version 4 bits, size 12 bits)
//!   flags:u32 | state:u16 | cport:u16 | vport:u16 | dport:u16
//!   fwmark:u32 | timeout:u32 (seconds) | caddr:u32 | vaddr:u32 | daddr:u32
//!     (struct ip_vs_sync_v6: caddr:[u8;16] | vaddr:[u8;16] | daddr:[u8;16])
//!   options: type:u8 | len:u8 | data   (SEQ_DATA 24 bytes, PE_DATA, PE_NAME)
//! version 0 header (struct ip_vs_sync_mesg_v0, 4 bytes)
//!   nr_conns:u8 | syncid:u8 | size:u16
//! version 0 entry (struct ip_vs_sync_conn_v0, 24 bytes)
//!   reserved:u8 | protocol:u8 | cport:u16 | vport:u16 | dport:u16
//!   caddr:u32 | vaddr:u32 | daddr:u32 | flags:u16 | state:u16
//!   [struct ip_vs_sync_conn_options, 24 bytes, when flags has IN_SEQ|OUT_SEQ]
//! ```
//!
//! [`decode`] follows `ip_vs_process_message`: a message is checked as a
//! whole (length, size field, syncid), then entry by entry; an error in an
//! entry's framing drops the rest of the message (the entries before it
//! stand, as in the kernel, which installs them as it goes), an entry the
//! receiver cannot use (unknown protocol, bad state, unknown mandatory
//! option) is skipped alone. Every drop has a [`DropReason`]; nothing
//! panics on any input.
//!
//! IPv6 entries (`struct ip_vs_sync_v6`, type [`STYPE_F_INET6`]) are the
//! IPv4 layout with three 16-byte addresses: 72 bytes before the options.
//! All three addresses of an entry are of one family, the connection's
//! (`cp->af`): the kernel refuses to run a sync daemon while a real server
//! of the other family (a tunnel across families) exists, and a real
//! server of the other family while a daemon runs.

pub mod backup;
pub mod master;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Default multicast group (`IP_VS_SYNC_GROUP`, 224.0.0.81).
pub const SYNC_GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 81);
/// Default UDP port (`IP_VS_SYNC_PORT`).
pub const SYNC_PORT: u16 = 8848;
/// `SYNC_PROTO_VER`.
pub const SYNC_PROTO_VER: u8 = 1;
/// `sizeof(struct ip_vs_sync_mesg)`.
pub const MESG_HEADER_LEN: usize = 8;
/// `sizeof(struct ip_vs_sync_mesg_v0)`.
pub const MESG_V0_HEADER_LEN: usize = 4;
/// `sizeof(struct ip_vs_sync_v4)`.
pub const CONN_V4_LEN: usize = 36;
/// `sizeof(struct ip_vs_sync_v6)`.
pub const CONN_V6_LEN: usize = 72;
/// `SIMPLE_CONN_SIZE` (`sizeof(struct ip_vs_sync_conn_v0)`).
pub const CONN_V0_LEN: usize = 24;
/// `sizeof(struct ip_vs_sync_conn_options)` (two `struct ip_vs_seq`).
pub const SEQ_OPTIONS_LEN: usize = 24;
/// `FULL_CONN_SIZE`.
pub const CONN_V0_FULL_LEN: usize = CONN_V0_LEN + SEQ_OPTIONS_LEN;
/// `STYPE_F_INET6`.
pub const STYPE_F_INET6: u8 = 1;
/// `SVER_SHIFT`: the entry version is `ver_size >> 12`.
pub const SVER_SHIFT: u16 = 12;
/// `SVER_MASK`: the entry size is `ver_size & 0x0fff`.
pub const SVER_MASK: u16 = 0x0fff;
/// `IPVS_OPT_SEQ_DATA`.
pub const OPT_SEQ_DATA: u8 = 1;
/// `IPVS_OPT_PE_DATA`.
pub const OPT_PE_DATA: u8 = 2;
/// `IPVS_OPT_PE_NAME`.
pub const OPT_PE_NAME: u8 = 3;
/// `IPVS_OPT_F_PARAM`: set on an option type the receiver may ignore.
pub const OPT_F_PARAM: u8 = 1 << (7 - 1);
/// `IP_VS_PEDATA_MAXLEN`.
pub const PEDATA_MAXLEN: usize = 255;
/// `IP_VS_PENAME_MAXLEN`.
pub const PENAME_MAXLEN: usize = 16;
/// Most connections in one message (`nr_conns` is a `u8`).
pub const MAX_CONNS_PER_MESG: usize = 255;
/// `IP_VS_CTPL_S_LAST`: template states.
pub const CTPL_S_LAST: u16 = 2;

/// Connection flags the sync code uses beyond [`crate::conn::flags`]
/// (`IP_VS_CONN_F_*`, include/uapi/linux/ip_vs.h).
pub mod cflags {
    use crate::conn::flags as f;
    /// `IP_VS_CONN_F_OUT_SEQ`.
    pub const OUT_SEQ: u32 = 0x0200;
    /// `IP_VS_CONN_F_IN_SEQ`.
    pub const IN_SEQ: u32 = 0x0400;
    /// `IP_VS_CONN_F_SEQ_MASK`.
    pub const SEQ_MASK: u32 = OUT_SEQ | IN_SEQ;
    /// `IP_VS_CONN_F_BACKUP_MASK`: the bits a backup takes from a message.
    pub const BACKUP_MASK: u32 = f::FWD_MASK as u32
        | f::NOOUTPUT as u32
        | f::INACTIVE as u32
        | SEQ_MASK
        | f::NO_CPORT as u32
        | f::TEMPLATE as u32;
    /// `IP_VS_CONN_F_BACKUP_UPD_MASK`: the bits an update may change.
    pub const BACKUP_UPD_MASK: u32 = f::INACTIVE as u32 | SEQ_MASK;
}

/// `struct ip_vs_seq`, host order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seq {
    /// Add delta from this seq on.
    pub init_seq: u32,
    /// Delta in sequence numbers.
    pub delta: u32,
    /// Delta in sequence numbers before the last resize.
    pub previous_delta: u32,
}

/// `struct ip_vs_sync_conn_options`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqOptions {
    /// Incoming direction.
    pub in_seq: Seq,
    /// Outgoing direction.
    pub out_seq: Seq,
}

/// One synchronised connection (an entry of a message), host order. Its
/// family is its client address's: an IPv6 `caddr` makes an IPv6 entry
/// (`struct ip_vs_sync_v6`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncConn {
    /// IP protocol (6, 17).
    pub protocol: u8,
    /// `cp->flags` as sent (without `IP_VS_CONN_F_HASHED`).
    pub flags: u32,
    /// Protocol state (template: `IP_VS_CTPL_S_*`).
    pub state: u16,
    /// Client port.
    pub cport: u16,
    /// Virtual port.
    pub vport: u16,
    /// Real server port.
    pub dport: u16,
    /// Firewall mark (0: none).
    pub fwmark: u32,
    /// Seconds; 0 in version 0 messages (the backup picks the protocol's).
    pub timeout: u32,
    /// Client address (a template's: the client network).
    pub caddr: IpAddr,
    /// Virtual address.
    pub vaddr: IpAddr,
    /// Real server address.
    pub daddr: IpAddr,
    /// `IPVS_OPT_SEQ_DATA` (v1) or the v0 options block.
    pub seq: Option<SeqOptions>,
    /// `IPVS_OPT_PE_DATA`, empty when absent.
    pub pe_data: Vec<u8>,
    /// `IPVS_OPT_PE_NAME`, empty when absent.
    pub pe_name: Vec<u8>,
}

impl Default for SyncConn {
    fn default() -> Self {
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        SyncConn {
            protocol: 0,
            flags: 0,
            state: 0,
            cport: 0,
            vport: 0,
            dport: 0,
            fwmark: 0,
            timeout: 0,
            caddr: any,
            vaddr: any,
            daddr: any,
            seq: None,
            pe_data: Vec::new(),
            pe_name: Vec::new(),
        }
    }
}

impl SyncConn {
    /// `IP_VS_CONN_F_TEMPLATE` is set.
    pub fn is_template(&self) -> bool {
        self.flags & crate::conn::flags::TEMPLATE as u32 != 0
    }

    /// Whether it is an IPv6 entry (`cp->af == AF_INET6`).
    pub fn is_v6(&self) -> bool {
        self.caddr.is_ipv6()
    }

    /// Length of its version 1 entry, options included, padding excluded
    /// (the `len` of `ip_vs_sync_conn`).
    pub fn v1_len(&self) -> usize {
        let mut len = if self.is_v6() { CONN_V6_LEN } else { CONN_V4_LEN };
        if self.flags & cflags::SEQ_MASK != 0 {
            len += SEQ_OPTIONS_LEN + 2;
        }
        if !self.pe_data.is_empty() {
            len += self.pe_data.len() + 2;
            if !self.pe_name.is_empty() {
                len += self.pe_name.len() + 2;
            }
        }
        len
    }

    /// Appends its version 1 entry (as `ip_vs_sync_conn` writes it).
    pub fn encode_v1(&self, out: &mut Vec<u8>) {
        let len = self.v1_len();
        out.push(if self.is_v6() { STYPE_F_INET6 } else { 0 });
        out.push(self.protocol);
        out.extend_from_slice(&((len as u16) & SVER_MASK).to_be_bytes());
        out.extend_from_slice(&(self.flags & !(crate::conn::flags::HASHED as u32)).to_be_bytes());
        out.extend_from_slice(&self.state.to_be_bytes());
        out.extend_from_slice(&self.cport.to_be_bytes());
        out.extend_from_slice(&self.vport.to_be_bytes());
        out.extend_from_slice(&self.dport.to_be_bytes());
        out.extend_from_slice(&self.fwmark.to_be_bytes());
        out.extend_from_slice(&self.timeout.to_be_bytes());
        for a in [self.caddr, self.vaddr, self.daddr] {
            if self.is_v6() {
                out.extend_from_slice(&in6_bytes(a));
            } else {
                out.extend_from_slice(&in_bytes(a));
            }
        }
        if self.flags & cflags::SEQ_MASK != 0 {
            out.push(OPT_SEQ_DATA);
            out.push(SEQ_OPTIONS_LEN as u8);
            put_seq_options(out, &self.seq.unwrap_or_default());
        }
        if !self.pe_data.is_empty() {
            out.push(OPT_PE_DATA);
            out.push(self.pe_data.len() as u8);
            out.extend_from_slice(&self.pe_data);
            if !self.pe_name.is_empty() {
                out.push(OPT_PE_NAME);
                out.push(self.pe_name.len() as u8);
                out.extend_from_slice(&self.pe_name);
            }
        }
    }
}

/// `a` as the 16 bytes of a `union nf_inet_addr` read as `in6` (an IPv4
/// address fills the first four; entries are of one family, so this is
/// only what a hand-built mixed entry writes).
fn in6_bytes(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V6(a) => a.octets(),
        IpAddr::V4(a) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&a.octets());
            b
        }
    }
}

/// `a` as the 4 bytes of a `union nf_inet_addr` read as `ip`.
fn in_bytes(a: IpAddr) -> [u8; 4] {
    match a {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(a) => {
            let o = a.octets();
            [o[0], o[1], o[2], o[3]]
        }
    }
}

fn put_seq_options(out: &mut Vec<u8>, o: &SeqOptions) {
    for s in [&o.in_seq, &o.out_seq] {
        out.extend_from_slice(&s.init_seq.to_be_bytes());
        out.extend_from_slice(&s.delta.to_be_bytes());
        out.extend_from_slice(&s.previous_delta.to_be_bytes());
    }
}

/// Message version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `ip_vs_sync_mesg_v0`.
    V0,
    /// `ip_vs_sync_mesg`, `SYNC_PROTO_VER`.
    V1,
}

/// Why a message, the rest of a message or one entry was not used. The
/// names are the counters' names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Shorter than a version 0 header ("message header too short").
    HeaderTooShort,
    /// Length differs from the header's size ("bogus message size").
    BadSize,
    /// Syncid differs from the backup's (non-zero) syncid.
    ForeignSyncId,
    /// v1: an entry's fixed part is beyond the message ("too small").
    EntryTruncated,
    /// v1: an entry's size is beyond the message ("msg > buffer").
    EntryBeyondMessage,
    /// v1: an entry's version bits are not 0.
    EntryBadVersion,
    /// v1: entry type is neither IPv4 nor IPv6 (-10).
    EntryBadType,
    /// v1: entry size smaller than its fixed part (-20).
    EntryTooShort,
    /// v1: an option header is cut (-30).
    OptionTruncated,
    /// v1: an option has length 0 or runs past the entry (-40).
    OptionBadLength,
    /// v1: bad or repeated sequence option (-50).
    BadSeqOption,
    /// v1: PE data too long or repeated (-60).
    BadPeData,
    /// v1: PE name too long or repeated (-70).
    BadPeName,
    /// v0: an entry or its options are cut ("bogus conn").
    V0EntryTruncated,
    /// An option this receiver does not know, not marked optional (20).
    UnknownMandatoryOption,
    /// Protocol without an IPVS protocol handler here (30).
    UnsupportedProtocol,
    /// State out of range for the protocol (40).
    InvalidState,
    /// PE data without a PE name, or a persistence engine not supported (50).
    PeUnsupported,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 18] = [
        DropReason::HeaderTooShort,
        DropReason::BadSize,
        DropReason::ForeignSyncId,
        DropReason::EntryTruncated,
        DropReason::EntryBeyondMessage,
        DropReason::EntryBadVersion,
        DropReason::EntryBadType,
        DropReason::EntryTooShort,
        DropReason::OptionTruncated,
        DropReason::OptionBadLength,
        DropReason::BadSeqOption,
        DropReason::BadPeData,
        DropReason::BadPeName,
        DropReason::V0EntryTruncated,
        DropReason::UnknownMandatoryOption,
        DropReason::UnsupportedProtocol,
        DropReason::InvalidState,
        DropReason::PeUnsupported,
    ];

    /// The counter name.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::HeaderTooShort => "header_too_short",
            DropReason::BadSize => "bad_size",
            DropReason::ForeignSyncId => "foreign_syncid",
            DropReason::EntryTruncated => "entry_truncated",
            DropReason::EntryBeyondMessage => "entry_beyond_message",
            DropReason::EntryBadVersion => "entry_bad_version",
            DropReason::EntryBadType => "entry_bad_type",
            DropReason::EntryTooShort => "entry_too_short",
            DropReason::OptionTruncated => "option_truncated",
            DropReason::OptionBadLength => "option_bad_length",
            DropReason::BadSeqOption => "bad_seq_option",
            DropReason::BadPeData => "bad_pe_data",
            DropReason::BadPeName => "bad_pe_name",
            DropReason::V0EntryTruncated => "v0_entry_truncated",
            DropReason::UnknownMandatoryOption => "unknown_mandatory_option",
            DropReason::UnsupportedProtocol => "unsupported_protocol",
            DropReason::InvalidState => "invalid_state",
            DropReason::PeUnsupported => "pe_unsupported",
        }
    }
}

/// A decoded message: the usable entries, in order, and what was dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// `None` when the header itself was refused.
    pub version: Option<Version>,
    /// The message's syncid.
    pub syncid: u8,
    /// Entries to install, in message order.
    pub conns: Vec<SyncConn>,
    /// Entries skipped one by one.
    pub skipped: Vec<DropReason>,
    /// Why the message (or its rest, after `conns`) was dropped.
    pub dropped: Option<DropReason>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn ip(b: &[u8], at: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]))
}

fn ip6(b: &[u8], at: usize) -> IpAddr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&b[at..at + 16]);
    IpAddr::V6(Ipv6Addr::from(o))
}

fn seq_options(b: &[u8]) -> SeqOptions {
    let s = |o: usize| Seq { init_seq: be32(b, o), delta: be32(b, o + 4), previous_delta: be32(b, o + 8) };
    SeqOptions { in_seq: s(0), out_seq: s(12) }
}

/// Number of protocol states (`pp->num_states`) of the protocols this
/// receiver handles; `None` for the others.
pub fn num_states(protocol: u8) -> Option<u16> {
    match protocol {
        6 => Some(crate::conn::tcp::TCP_STATES as u16),
        17 => Some(1), // IP_VS_UDP_S_LAST
        _ => None,
    }
}

/// The checks `ip_vs_proc_sync_conn` / `ip_vs_process_message_v0` make on
/// an entry's protocol, state and persistence-engine data.
fn entry_usable(c: &SyncConn) -> Result<(), DropReason> {
    if !c.is_template() {
        let n = num_states(c.protocol).ok_or(DropReason::UnsupportedProtocol)?;
        if c.state >= n {
            return Err(DropReason::InvalidState);
        }
    }
    // The kernel only logs a template state >= IP_VS_CTPL_S_LAST.
    if !c.pe_data.is_empty() {
        // No persistence engine is supported by this director (and PE data
        // without a PE name is refused by the kernel too).
        return Err(DropReason::PeUnsupported);
    }
    Ok(())
}

/// Decodes one received datagram as `ip_vs_process_message` does, for a
/// backup whose syncid is `syncid` (0 accepts every syncid).
pub fn decode(buf: &[u8], syncid: u8) -> Decoded {
    let mut d = Decoded::default();
    if buf.len() < MESG_V0_HEADER_LEN {
        d.dropped = Some(DropReason::HeaderTooShort);
        return d;
    }
    if buf.len() != be16(buf, 2) as usize {
        d.dropped = Some(DropReason::BadSize);
        return d;
    }
    d.syncid = buf[1];
    if syncid != 0 && buf[1] != syncid {
        d.dropped = Some(DropReason::ForeignSyncId);
        return d;
    }
    let v1 = buf.len() >= MESG_HEADER_LEN && buf[5] == SYNC_PROTO_VER && buf[0] == 0 && be16(buf, 6) == 0;
    if v1 {
        d.version = Some(Version::V1);
        decode_v1(buf, &mut d);
    } else {
        d.version = Some(Version::V0);
        decode_v0(buf, &mut d);
    }
    d
}

fn decode_v1(buf: &[u8], d: &mut Decoded) {
    let nr_conns = buf[4] as usize;
    let mut next = MESG_HEADER_LEN;
    for _ in 0..nr_conns {
        let p = next;
        if p + CONN_V4_LEN > buf.len() {
            d.dropped = Some(DropReason::EntryTruncated);
            return;
        }
        let ver_size = be16(buf, p + 2);
        let size = (ver_size & SVER_MASK) as usize;
        if p + size > buf.len() {
            d.dropped = Some(DropReason::EntryBeyondMessage);
            return;
        }
        if ver_size >> SVER_SHIFT != 0 {
            d.dropped = Some(DropReason::EntryBadVersion);
            return;
        }
        match decode_v1_entry(&buf[p..p + size], buf[p]) {
            Err(r) => {
                d.dropped = Some(r);
                return;
            }
            Ok(Err(r)) => d.skipped.push(r),
            Ok(Ok(c)) => d.conns.push(c),
        }
        next = p + ((size + 3) & !3);
    }
}

/// One v1 entry (`ip_vs_proc_sync_conn`): `Err` drops the rest of the
/// message, `Ok(Err)` skips this entry.
fn decode_v1_entry(e: &[u8], ty: u8) -> Result<Result<SyncConn, DropReason>, DropReason> {
    // `s->v6.type & STYPE_F_INET6` first: any type with that bit is IPv6.
    let v6 = ty & STYPE_F_INET6 != 0;
    let fixed = if v6 {
        CONN_V6_LEN
    } else if ty == 0 {
        CONN_V4_LEN
    } else {
        return Err(DropReason::EntryBadType);
    };
    if fixed > e.len() {
        return Err(DropReason::EntryTooShort);
    }
    let (caddr, vaddr, daddr) = if v6 { (ip6(e, 24), ip6(e, 40), ip6(e, 56)) } else { (ip(e, 24), ip(e, 28), ip(e, 32)) };
    let mut c = SyncConn {
        protocol: e[1],
        flags: be32(e, 4),
        state: be16(e, 8),
        cport: be16(e, 10),
        vport: be16(e, 12),
        dport: be16(e, 14),
        fwmark: be32(e, 16),
        timeout: be32(e, 20),
        caddr,
        vaddr,
        daddr,
        ..Default::default()
    };
    let (mut have_pe_data, mut have_pe_name) = (false, false);
    let mut unknown_mandatory = false;
    let mut p = fixed;
    while p < e.len() {
        if p + 2 > e.len() {
            return Err(DropReason::OptionTruncated);
        }
        let (ptype, plen) = (e[p], e[p + 1] as usize);
        p += 2;
        if plen == 0 || p + plen > e.len() {
            return Err(DropReason::OptionBadLength);
        }
        let data = &e[p..p + plen];
        match ptype & !OPT_F_PARAM {
            OPT_SEQ_DATA => {
                if plen != SEQ_OPTIONS_LEN || c.seq.is_some() {
                    return Err(DropReason::BadSeqOption);
                }
                c.seq = Some(seq_options(data));
            }
            OPT_PE_DATA => {
                if plen > PEDATA_MAXLEN || have_pe_data {
                    return Err(DropReason::BadPeData);
                }
                have_pe_data = true;
                c.pe_data = data.to_vec();
            }
            OPT_PE_NAME => {
                if plen > PENAME_MAXLEN || have_pe_name {
                    return Err(DropReason::BadPeName);
                }
                have_pe_name = true;
                c.pe_name = data.to_vec();
            }
            _ => {
                if ptype & OPT_F_PARAM == 0 {
                    // The kernel leaves the entry here (retc 20): options
                    // after it are not checked.
                    unknown_mandatory = true;
                    break;
                }
            }
        }
        p += plen;
    }
    if unknown_mandatory {
        return Ok(Err(DropReason::UnknownMandatoryOption));
    }
    c.flags &= cflags::BACKUP_MASK;
    c.flags |= crate::conn::flags::SYNC as u32;
    Ok(entry_usable(&c).map(|()| c))
}

fn decode_v0(buf: &[u8], d: &mut Decoded) {
    let nr_conns = buf[0] as usize;
    let mut p = MESG_V0_HEADER_LEN;
    for _ in 0..nr_conns {
        if p + CONN_V0_LEN > buf.len() {
            d.dropped = Some(DropReason::V0EntryTruncated);
            return;
        }
        let e = &buf[p..];
        let mut flags = be16(e, 20) as u32 | crate::conn::flags::SYNC as u32;
        flags &= !(crate::conn::flags::HASHED as u32);
        let seq = if flags & cflags::SEQ_MASK != 0 {
            p += CONN_V0_FULL_LEN;
            if p > buf.len() {
                d.dropped = Some(DropReason::V0EntryTruncated);
                return;
            }
            Some(seq_options(&e[CONN_V0_LEN..CONN_V0_FULL_LEN]))
        } else {
            p += CONN_V0_LEN;
            None
        };
        let c = SyncConn {
            protocol: e[1],
            flags,
            state: be16(e, 22),
            cport: be16(e, 2),
            vport: be16(e, 4),
            dport: be16(e, 6),
            caddr: ip(e, 8),
            vaddr: ip(e, 12),
            daddr: ip(e, 16),
            seq,
            ..Default::default()
        };
        match entry_usable(&c) {
            Ok(()) => d.conns.push(c),
            Err(r) => d.skipped.push(r),
        }
    }
}

/// Builds version 1 messages as the master's sync buffer does
/// (`ip_vs_sync_buff_create` + the packing of `ip_vs_sync_conn`).
#[derive(Clone, Debug)]
pub struct MessageBuilder {
    buf: Vec<u8>,
    /// `sb->end - sb->mesg`: the buffer's capacity.
    cap: usize,
}

impl MessageBuilder {
    /// An empty message with room for `maxlen` bytes (or one entry of
    /// `first_len` bytes if larger).
    pub fn new(syncid: u8, maxlen: usize, first_len: usize) -> Self {
        let cap = (first_len + MESG_HEADER_LEN).max(maxlen);
        let mut buf = Vec::with_capacity(cap);
        buf.extend_from_slice(&[0, syncid, 0, MESG_HEADER_LEN as u8, 0, SYNC_PROTO_VER, 0, 0]);
        MessageBuilder { buf, cap }
    }

    /// Number of entries.
    pub fn nr_conns(&self) -> usize {
        self.buf[4] as usize
    }

    /// Whether an entry of `len` bytes fits (with its alignment padding)
    /// and the count allows one more.
    pub fn fits(&self, len: usize) -> bool {
        let pad = self.buf.len().wrapping_neg() & 3;
        self.buf.len() + pad + len <= self.cap && self.nr_conns() < MAX_CONNS_PER_MESG
    }

    /// Appends `c` (the caller checked [`fits`](Self::fits)).
    pub fn push(&mut self, c: &SyncConn) {
        let pad = self.buf.len().wrapping_neg() & 3;
        self.buf.resize(self.buf.len() + pad, 0);
        c.encode_v1(&mut self.buf);
        let size = self.buf.len() as u16;
        self.buf[2..4].copy_from_slice(&size.to_be_bytes());
        self.buf[4] += 1;
    }

    /// The message bytes (its size field is their length).
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Encodes `conns` into version 1 messages of at most `maxlen` bytes each
/// (a single entry larger than that gets a message of its own).
pub fn encode_v1(syncid: u8, maxlen: usize, conns: &[SyncConn]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur: Option<MessageBuilder> = None;
    for c in conns {
        let len = c.v1_len();
        if cur.as_ref().is_some_and(|b| !b.fits(len)) {
            out.extend(cur.take().map(MessageBuilder::finish));
        }
        cur.get_or_insert_with(|| MessageBuilder::new(syncid, maxlen, len)).push(c);
    }
    out.extend(cur.map(MessageBuilder::finish));
    out
}

/// Encodes a version 0 message (`ip_vs_sync_conn_v0`'s layout, IPv4
/// only: the kernel's `ip_vs_sync_conn_v0` skips other entries), for
/// interop tests with old masters.
pub fn encode_v0(syncid: u8, conns: &[SyncConn]) -> Vec<u8> {
    let v4: Vec<&SyncConn> = conns.iter().filter(|c| !c.is_v6()).collect();
    let mut b = vec![v4.len() as u8, syncid, 0, 0];
    for c in v4 {
        b.push(0);
        b.push(c.protocol);
        for v in [c.cport, c.vport, c.dport] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for a in [c.caddr, c.vaddr, c.daddr] {
            b.extend_from_slice(&in_bytes(a));
        }
        b.extend_from_slice(&((c.flags & !(crate::conn::flags::HASHED as u32)) as u16).to_be_bytes());
        b.extend_from_slice(&c.state.to_be_bytes());
        if c.flags & cflags::SEQ_MASK != 0 {
            put_seq_options(&mut b, &c.seq.unwrap_or_default());
        }
    }
    let size = b.len() as u16;
    b[2..4].copy_from_slice(&size.to_be_bytes());
    b
}
