//! Byte layouts of an lvsnic board's management port (boards/README.md
//! "Management port"): Etherbone packets (registers) and the exception and
//! inject datagrams (frames).
//!
//! **Etherbone** as LiteEth speaks it (32-bit addresses and data, one
//! record per packet, no configuration space), all fields big-endian:
//!
//! ```text
//! packet header (8 bytes)
//!   0..2  magic 0x4E6F
//!   2     [7:4] version (1), [2] NR no reads, [1] PR probe reply, [0] PF probe flag
//!   3     [7:4] address size, [3:0] port (data) size, in bytes: 0x44
//!   4..8  padding (0)
//! record header (4 bytes)
//!   0     flags (BCA, RCA, RFF, CYC, WCA, WFF; 0 here)
//!   1     byte enable (0x0F: all four bytes)
//!   2     wcount: writes that follow
//!   3     rcount: reads that follow
//! if wcount > 0: base write address (byte address), then wcount values,
//!                written to base, base + 4, ... in order
//! if rcount > 0: base return address, then rcount read addresses
//! ```
//!
//! A record's writes are carried out before its reads. A record with reads
//! is answered with one packet whose record has `wcount` = the request's
//! `rcount`, the request's base return address as its base write address
//! and the values read. A record with writes only is not answered. This
//! driver uses the base return address as a request tag: a reply whose
//! address is not the tag of the request in flight is a stale one.
//!
//! **Exception datagram** (board port 0x4C56 → host), little-endian: bytes
//! 0..20 the 160-bit metadata (five words, bits 31:0 first), 20..24 magic
//! `"LVCX"`, then the frame. **Inject datagram** (host → board port
//! 0x4C56): 0..4 sequence number, 4..8 magic `"LVNJ"`, then the frame (14
//! bytes or more).

use lvsnic_model::hw::HostMeta;

/// The Etherbone magic, bytes `4E 6F` on the wire.
pub const EB_MAGIC: u16 = 0x4E6F;
/// The Etherbone version spoken.
pub const EB_VERSION: u8 = 1;
/// UDP port of LiteEth's Etherbone (both ends: the board answers to this
/// port, not to the request's source port).
pub const EB_PORT: u16 = 1234;
/// Length of the packet header.
pub const PACKET_HEADER_LEN: usize = 8;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 4;
/// Most writes (or reads) one record carries (`wcount`/`rcount` are bytes).
pub const MAX_COUNT: usize = 255;
/// Address and data size byte: 32-bit addresses, 32-bit data.
const SIZES_32: u8 = 0x44;

/// UDP port of the board's exception and inject datagrams (0x4C56, "LV").
pub const DATA_PORT: u16 = 0x4C56;
/// Magic of an exception datagram, `"LVCX"` read as a little-endian word.
pub const EXC_MAGIC: u32 = 0x5843_564C;
/// Magic of an inject datagram, `"LVNJ"` read as a little-endian word.
pub const INJ_MAGIC: u32 = 0x4A4E_564C;
/// Bytes before the frame in an exception datagram.
pub const EXC_HEADER_LEN: usize = 24;
/// Bytes before the frame in an inject datagram.
pub const INJ_HEADER_LEN: usize = 8;
/// The shortest frame the board injects (an Ethernet header).
pub const INJ_FRAME_MIN: usize = 14;
/// The longest frame one datagram carries (IPv4 UDP payload limit minus
/// the inject header).
pub const INJ_FRAME_MAX: usize = 65_507 - INJ_HEADER_LEN;

/// Writes of a record: `values[i]` goes to byte address `base + 4 * i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writes {
    /// Byte address of the first value.
    pub base: u32,
    /// The values, in address order (1 to [`MAX_COUNT`]).
    pub values: Vec<u32>,
}

/// Reads of a record: the values of `addrs`, returned to `ret`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// Base return address (this driver: the request's tag).
    pub ret: u32,
    /// Byte addresses to read (1 to [`MAX_COUNT`]).
    pub addrs: Vec<u32>,
}

/// One Etherbone record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Record flags byte (BCA, RCA, RFF, CYC, WCA, WFF), passed as is.
    pub flags: u8,
    /// Byte enable (0x0F for 32-bit accesses).
    pub byte_enable: u8,
    /// Writes, carried out first.
    pub writes: Option<Writes>,
    /// Reads, carried out after the writes.
    pub reads: Option<Reads>,
}

impl Record {
    /// A 32-bit record with `writes` then `reads`.
    pub fn new(writes: Option<Writes>, reads: Option<Reads>) -> Record {
        Record { flags: 0, byte_enable: 0x0F, writes, reads }
    }
}

/// One Etherbone packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Header bit NR (no reads follow).
    pub no_reads: bool,
    /// Header bit PR (this is a probe reply).
    pub probe_reply: bool,
    /// Header bit PF (this is a probe).
    pub probe: bool,
    /// The records.
    pub records: Vec<Record>,
}

impl Packet {
    /// A plain (non-probe) packet carrying `records`.
    pub fn new(records: Vec<Record>) -> Packet {
        Packet { no_reads: false, probe_reply: false, probe: false, records }
    }

    /// The packet's bytes. Panics if a record holds more than
    /// [`MAX_COUNT`] writes or reads (the builders here never make one).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(PACKET_HEADER_LEN + self.records.len() * 16);
        b.extend_from_slice(&EB_MAGIC.to_be_bytes());
        b.push(EB_VERSION << 4 | (self.no_reads as u8) << 2 | (self.probe_reply as u8) << 1 | self.probe as u8);
        b.push(SIZES_32);
        b.extend_from_slice(&[0; 4]);
        for r in &self.records {
            let wc = r.writes.as_ref().map_or(0, |w| w.values.len());
            let rc = r.reads.as_ref().map_or(0, |x| x.addrs.len());
            assert!(wc <= MAX_COUNT && rc <= MAX_COUNT, "Etherbone record of {wc} writes, {rc} reads");
            b.extend_from_slice(&[r.flags, r.byte_enable, wc as u8, rc as u8]);
            if let Some(w) = r.writes.as_ref().filter(|w| !w.values.is_empty()) {
                b.extend_from_slice(&w.base.to_be_bytes());
                w.values.iter().for_each(|v| b.extend_from_slice(&v.to_be_bytes()));
            }
            if let Some(x) = r.reads.as_ref().filter(|x| !x.addrs.is_empty()) {
                b.extend_from_slice(&x.ret.to_be_bytes());
                x.addrs.iter().for_each(|a| b.extend_from_slice(&a.to_be_bytes()));
            }
        }
        b
    }

    /// Parses a packet (any number of records).
    pub fn decode(b: &[u8]) -> Result<Packet, WireError> {
        if b.len() < PACKET_HEADER_LEN {
            return Err(WireError::Short { len: b.len() });
        }
        let magic = u16::from_be_bytes([b[0], b[1]]);
        if magic != EB_MAGIC {
            return Err(WireError::Magic(magic));
        }
        if b[2] >> 4 != EB_VERSION {
            return Err(WireError::Version(b[2] >> 4));
        }
        if b[3] != SIZES_32 {
            return Err(WireError::Sizes(b[3]));
        }
        let mut p = Packet {
            no_reads: b[2] & 4 != 0,
            probe_reply: b[2] & 2 != 0,
            probe: b[2] & 1 != 0,
            records: Vec::new(),
        };
        let mut rest = &b[PACKET_HEADER_LEN..];
        let words = |rest: &mut &[u8], n: usize| -> Result<(u32, Vec<u32>), WireError> {
            let need = 4 * (n + 1);
            if rest.len() < need {
                return Err(WireError::Truncated { need, have: rest.len() });
            }
            let w: Vec<u32> = rest[..need].chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])).collect();
            *rest = &rest[need..];
            Ok((w[0], w[1..].to_vec()))
        };
        while !rest.is_empty() {
            if rest.len() < RECORD_HEADER_LEN {
                return Err(WireError::Truncated { need: RECORD_HEADER_LEN, have: rest.len() });
            }
            let (flags, byte_enable, wc, rc) = (rest[0], rest[1], rest[2] as usize, rest[3] as usize);
            rest = &rest[RECORD_HEADER_LEN..];
            let writes = if wc > 0 {
                let (base, values) = words(&mut rest, wc)?;
                Some(Writes { base, values })
            } else {
                None
            };
            let reads = if rc > 0 {
                let (ret, addrs) = words(&mut rest, rc)?;
                Some(Reads { ret, addrs })
            } else {
                None
            };
            p.records.push(Record { flags, byte_enable, writes, reads });
        }
        Ok(p)
    }
}

/// An Etherbone packet that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than the packet header.
    #[error("{len} bytes, shorter than an Etherbone header")]
    Short {
        /// The packet's length.
        len: usize,
    },
    /// Not the Etherbone magic.
    #[error("magic {0:#06x}, expected 0x4e6f")]
    Magic(u16),
    /// Another version.
    #[error("Etherbone version {0}, expected 1")]
    Version(u8),
    /// Not 32-bit addresses and data.
    #[error("address/data size byte {0:#04x}, expected 0x44 (32-bit)")]
    Sizes(u8),
    /// A record runs past the end of the packet.
    #[error("record truncated: {need} bytes needed, {have} left")]
    Truncated {
        /// Bytes the record needs.
        need: usize,
        /// Bytes left in the packet.
        have: usize,
    },
}

/// An exception datagram that is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DatagramError {
    /// Shorter than the 24-byte header (or no frame after it).
    #[error("{0} bytes, too short for an exception datagram")]
    Short(usize),
    /// Not `"LVCX"`.
    #[error("magic {0:#010x}, expected 0x5843564c (\"LVCX\")")]
    Magic(u32),
    /// The metadata words are not valid (reserved bits, reason).
    #[error("metadata does not parse")]
    Meta,
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Parses an exception datagram: the metadata and the frame. A datagram
/// with no frame after the header is [`DatagramError::Short`].
pub fn parse_exception(b: &[u8]) -> Result<(HostMeta, &[u8]), DatagramError> {
    if b.len() <= EXC_HEADER_LEN {
        return Err(DatagramError::Short(b.len()));
    }
    let magic = le32(&b[20..24]);
    if magic != EXC_MAGIC {
        return Err(DatagramError::Magic(magic));
    }
    let w = [le32(&b[0..]), le32(&b[4..]), le32(&b[8..]), le32(&b[12..]), le32(&b[16..])];
    let meta = HostMeta::from_words(w).ok_or(DatagramError::Meta)?;
    Ok((meta, &b[EXC_HEADER_LEN..]))
}

/// An exception datagram (as the board's glue builds it) of metadata words
/// `meta` (word 0 = bits 31:0) and `frame`.
pub fn encode_exception(meta: [u32; 5], frame: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(EXC_HEADER_LEN + frame.len());
    meta.iter().for_each(|w| b.extend_from_slice(&w.to_le_bytes()));
    b.extend_from_slice(&EXC_MAGIC.to_le_bytes());
    b.extend_from_slice(frame);
    b
}

/// An inject datagram: sequence number `seq`, `frame`.
pub fn encode_inject(seq: u32, frame: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(INJ_HEADER_LEN + frame.len());
    b.extend_from_slice(&seq.to_le_bytes());
    b.extend_from_slice(&INJ_MAGIC.to_le_bytes());
    b.extend_from_slice(frame);
    b
}

/// Parses an inject datagram as the board's glue does: the sequence number
/// and the frame, or `None` (dropped, counted in `glue_inject_bad`) for
/// another magic or a frame shorter than 14 bytes.
pub fn parse_inject(b: &[u8]) -> Option<(u32, &[u8])> {
    if b.len() < INJ_HEADER_LEN + INJ_FRAME_MIN || le32(&b[4..8]) != INJ_MAGIC {
        return None;
    }
    Some((le32(&b[0..4]), &b[INJ_HEADER_LEN..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lvsnic_model::hw::Reason;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// A read of `ID` (byte address 0) returned to 0x10, byte by byte from
    /// the layout in the module documentation (Etherbone spec, LiteEth).
    #[test]
    fn a_read_request_is_the_spec_layout() {
        let p = Packet::new(vec![Record::new(None, Some(Reads { ret: 0x10, addrs: vec![0x0000_0000] }))]);
        let want = hex("4e6f 10 44 00000000   00 0f 00 01   00000010   00000000");
        assert_eq!(p.encode(), want);
        assert_eq!(Packet::decode(&want).unwrap(), p);
    }

    /// Three writes from 0x200 (FLOW_DATA0..2) then two reads, one record.
    #[test]
    fn writes_then_reads_in_one_record() {
        let p = Packet::new(vec![Record::new(
            Some(Writes { base: 0x200, values: vec![0x1122_3344, 0xAABB_CCDD, 1] }),
            Some(Reads { ret: 0x8000_0004, addrs: vec![0x218, 0x0001_0800] }),
        )]);
        let want = hex(
            "4e6f1044 00000000  000f0302  00000200 11223344 aabbccdd 00000001  80000004 00000218 00010800",
        );
        assert_eq!(p.encode(), want);
        assert_eq!(Packet::decode(&want).unwrap(), p);
    }

    /// The board's answer to a two-read record: a record of two writes to
    /// the base return address (LiteEth's reply shape).
    #[test]
    fn a_reply_parses() {
        let b = hex("4e6f1044 00000000  000f0200  00000010  4c56534e 00010000");
        let p = Packet::decode(&b).unwrap();
        assert_eq!(p.records.len(), 1);
        let r = &p.records[0];
        assert_eq!(r.reads, None);
        assert_eq!(r.writes, Some(Writes { base: 0x10, values: vec![0x4C56_534E, 0x0001_0000] }));
        assert!(!p.probe && !p.probe_reply && !p.no_reads);
        // Header flag bits: NR = 0x04, PR = 0x02, PF = 0x01 of byte 2.
        let probe = Packet::decode(&hex("4e6f1344 00000000")).unwrap();
        assert!(probe.probe && probe.probe_reply && !probe.no_reads && probe.records.is_empty());
    }

    #[test]
    fn bad_packets_are_errors_not_panics() {
        assert_eq!(Packet::decode(&hex("4e6f10")), Err(WireError::Short { len: 3 }));
        assert_eq!(Packet::decode(&hex("6f4e1044 00000000")), Err(WireError::Magic(0x6F4E)));
        assert_eq!(Packet::decode(&hex("4e6f2044 00000000")), Err(WireError::Version(2)));
        assert_eq!(Packet::decode(&hex("4e6f1022 00000000")), Err(WireError::Sizes(0x22)));
        assert_eq!(Packet::decode(&hex("4e6f1044 00000000 000f")), Err(WireError::Truncated { need: 4, have: 2 }));
        // wcount 2 needs base + 2 values = 12 bytes.
        assert_eq!(
            Packet::decode(&hex("4e6f1044 00000000 000f0200 00000010 4c56534e")),
            Err(WireError::Truncated { need: 12, have: 8 })
        );
        for n in 0..40 {
            let _ = Packet::decode(&vec![0x4E; n]);
        }
    }

    /// An exception datagram as boards/README.md draws it: metadata words
    /// little-endian, bits 31:0 first, then "LVCX", then the frame.
    #[test]
    fn exception_datagram_layout() {
        // reason 14 (MISS), vip; hash 0xDEADBEEF; seq 7; ts 0x1122334455667788.
        let b = hex(
            "0e020000 efbeadde 07000000 88776655 44332211  4c564358  ffffffffffff 020000000001 0800 45",
        );
        let (meta, frame) = parse_exception(&b).unwrap();
        assert_eq!((meta.reason, meta.hit, meta.vip), (Reason::Miss, false, true));
        assert_eq!((meta.hash0, meta.seq, meta.ts), (0xDEAD_BEEF, 7, 0x1122_3344_5566_7788));
        assert_eq!(frame, &b[24..]);
        assert_eq!(encode_exception(meta.to_words(), frame), b);
        assert_eq!(parse_exception(&b[..24]), Err(DatagramError::Short(24)));
        let mut bad = b.clone();
        bad[23] = b'Y';
        assert_eq!(parse_exception(&bad), Err(DatagramError::Magic(0x5943_564C)));
        let mut bad = b.clone();
        bad[0] = 0xFF; // no such reason
        assert_eq!(parse_exception(&bad), Err(DatagramError::Meta));
    }

    #[test]
    fn inject_datagram_layout() {
        let frame = hex("020000000001 020000000002 0800");
        let b = encode_inject(0x0102_0304, &frame);
        assert_eq!(b, hex("04030201 4c564e4a 020000000001 020000000002 0800"));
        assert_eq!(parse_inject(&b), Some((0x0102_0304, &frame[..])));
        assert_eq!(parse_inject(&b[..21]), None); // 13-byte frame
        let mut bad = b.clone();
        bad[4] = 0;
        assert_eq!(parse_inject(&bad), None);
    }
}
