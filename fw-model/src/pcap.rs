//! Classic libpcap capture files
//! (<https://wiki.wireshark.org/Development/LibpcapFileFormat>), the vector
//! format of lvsnic: Wireshark opens them.
//!
//! ```text
//! global header (24 bytes): magic u32, version_major u16, version_minor u16,
//!                           thiszone i32, sigfigs u32, snaplen u32, network u32
//! record header (16 bytes): ts_sec u32, ts_frac u32, incl_len u32, orig_len u32
//! ```
//!
//! The magic `0xa1b2c3d4` means microsecond timestamps, `0xa1b23c4d`
//! nanosecond ones; read in the file's byte order it tells that byte order.
//! Timestamps are converted to nanoseconds ([`crate::time::Time`]). The
//! writer always writes the native little-endian form, version 2.4.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// Magic of a microsecond-resolution file, in the writer's byte order.
pub const MAGIC_MICRO: u32 = 0xa1b2_c3d4;
/// Magic of a nanosecond-resolution file, in the writer's byte order.
pub const MAGIC_NANO: u32 = 0xa1b2_3c4d;
/// `LINKTYPE_ETHERNET`.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Largest record this reader accepts (256 KiB); larger captured lengths
/// mean a corrupt file.
pub const MAX_CAPLEN: u32 = 256 * 1024;
/// Default snapshot length written by [`write_file`] (tcpdump's default).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

const GLOBAL_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;

/// Timestamp resolution of a pcap file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resolution {
    /// Microseconds (magic `0xa1b2c3d4`).
    Micro,
    /// Nanoseconds (magic `0xa1b23c4d`).
    Nano,
}

/// An error reading or writing a pcap file; the message names the byte
/// offset (and record index) where it happened.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The underlying reader or writer failed.
    #[error("I/O error at byte {offset}: {source}")]
    Io {
        /// Byte offset in the file where the operation started.
        offset: u64,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The first four bytes are not a pcap magic number.
    #[error("not a pcap file: bad magic 0x{magic:08x} at byte 0 (expected a1b2c3d4 or a1b23c4d in either byte order)")]
    BadMagic {
        /// The four bytes read as a little-endian number.
        magic: u32,
    },
    /// The file ends inside the 24-byte global header.
    #[error("truncated pcap file header: file ends at byte {got}, header needs 24 bytes")]
    TruncatedHeader {
        /// Bytes present.
        got: usize,
    },
    /// The file ends inside a record header.
    #[error("record {index} at byte {offset}: truncated record header ({got} of 16 bytes)")]
    TruncatedRecordHeader {
        /// Record index (0-based).
        index: u64,
        /// Byte offset of the record header.
        offset: u64,
        /// Bytes present.
        got: usize,
    },
    /// The file ends inside a record's packet data.
    #[error("record {index} at byte {offset}: truncated packet data ({got} of {caplen} bytes)")]
    TruncatedRecord {
        /// Record index (0-based).
        index: u64,
        /// Byte offset of the record header.
        offset: u64,
        /// Captured length the header announces.
        caplen: u32,
        /// Bytes present.
        got: usize,
    },
    /// A record header announces an absurd captured length.
    #[error("record {index} at byte {offset}: captured length {caplen} exceeds {max} bytes (corrupt file?)", max = MAX_CAPLEN)]
    CaplenTooLarge {
        /// Record index (0-based).
        index: u64,
        /// Byte offset of the record header.
        offset: u64,
        /// Captured length the header announces.
        caplen: u32,
    },
    /// The file's link type is not Ethernet.
    #[error("pcap link type {linktype} is not Ethernet (1); lvsnic reads Ethernet captures only")]
    NotEthernet {
        /// The global header's network field.
        linktype: u32,
    },
    /// A record cannot be written (data longer than 4 GiB, or a timestamp
    /// beyond what 32-bit seconds can hold).
    #[error("record {index}: cannot be written: {reason}")]
    Unrepresentable {
        /// Record index (0-based).
        index: u64,
        /// What does not fit.
        reason: &'static str,
    },
}

/// One captured packet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PcapRecord {
    /// Timestamp in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Length of the packet on the wire (may exceed `data.len()` if the
    /// capture was truncated by the snapshot length).
    pub orig_len: u32,
    /// The captured bytes.
    pub data: Vec<u8>,
}

/// Reads as many bytes as available into `buf`; returns how many (short
/// only at end of input).
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A streaming pcap reader.
#[derive(Debug)]
pub struct PcapReader<R: Read> {
    reader: R,
    big_endian: bool,
    resolution: Resolution,
    version: (u16, u16),
    snaplen: u32,
    linktype: u32,
    index: u64,
    offset: u64,
}

impl<R: Read> PcapReader<R> {
    /// Reads and checks the global header.
    pub fn new(mut reader: R) -> Result<Self, PcapError> {
        let mut h = [0u8; GLOBAL_HEADER_LEN];
        let got = read_full(&mut reader, &mut h).map_err(|source| PcapError::Io { offset: 0, source })?;
        let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        if got < 4 {
            return Err(PcapError::TruncatedHeader { got });
        }
        let (big_endian, resolution) = match magic_le {
            MAGIC_MICRO => (false, Resolution::Micro),
            MAGIC_NANO => (false, Resolution::Nano),
            m if m.swap_bytes() == MAGIC_MICRO => (true, Resolution::Micro),
            m if m.swap_bytes() == MAGIC_NANO => (true, Resolution::Nano),
            magic => return Err(PcapError::BadMagic { magic }),
        };
        if got < GLOBAL_HEADER_LEN {
            return Err(PcapError::TruncatedHeader { got });
        }
        let u16_at = |o: usize| {
            let b = [h[o], h[o + 1]];
            if big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        };
        let u32_at = |o: usize| {
            let b = [h[o], h[o + 1], h[o + 2], h[o + 3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        Ok(PcapReader {
            reader,
            big_endian,
            resolution,
            version: (u16_at(4), u16_at(6)),
            snaplen: u32_at(16),
            linktype: u32_at(20),
            index: 0,
            offset: GLOBAL_HEADER_LEN as u64,
        })
    }

    /// The link type (the global header's `network` field; 1 = Ethernet).
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// [`PcapError::NotEthernet`] unless the link type is Ethernet.
    pub fn require_ethernet(&self) -> Result<(), PcapError> {
        if self.linktype == LINKTYPE_ETHERNET {
            Ok(())
        } else {
            Err(PcapError::NotEthernet { linktype: self.linktype })
        }
    }

    /// Timestamp resolution of the file.
    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// Whether the file was written big-endian.
    pub fn is_big_endian(&self) -> bool {
        self.big_endian
    }

    /// Format version (major, minor), normally (2, 4).
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// Snapshot length from the global header.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Byte offset of the next record header.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next record; `Ok(None)` at a clean end of file.
    pub fn next_record(&mut self) -> Result<Option<PcapRecord>, PcapError> {
        let (index, offset) = (self.index, self.offset);
        let mut h = [0u8; RECORD_HEADER_LEN];
        let got = read_full(&mut self.reader, &mut h).map_err(|source| PcapError::Io { offset, source })?;
        if got == 0 {
            return Ok(None);
        }
        if got < RECORD_HEADER_LEN {
            return Err(PcapError::TruncatedRecordHeader { index, offset, got });
        }
        let be = self.big_endian;
        let u32_at = |o: usize| {
            let b = [h[o], h[o + 1], h[o + 2], h[o + 3]];
            if be {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let (ts_sec, ts_frac, caplen, orig_len) = (u32_at(0), u32_at(4), u32_at(8), u32_at(12));
        if caplen > MAX_CAPLEN {
            return Err(PcapError::CaplenTooLarge { index, offset, caplen });
        }
        let mut data = vec![0u8; caplen as usize];
        let data_offset = offset + RECORD_HEADER_LEN as u64;
        let got = read_full(&mut self.reader, &mut data)
            .map_err(|source| PcapError::Io { offset: data_offset, source })?;
        if got < data.len() {
            return Err(PcapError::TruncatedRecord { index, offset, caplen, got });
        }
        let frac_ns = match self.resolution {
            Resolution::Micro => u64::from(ts_frac) * 1_000,
            Resolution::Nano => u64::from(ts_frac),
        };
        self.index += 1;
        self.offset = data_offset + u64::from(caplen);
        Ok(Some(PcapRecord { ts_ns: u64::from(ts_sec) * 1_000_000_000 + frac_ns, orig_len, data }))
    }

    /// Returns the underlying reader.
    pub fn into_inner(self) -> R {
        self.reader
    }
}

impl<R: Read> Iterator for PcapReader<R> {
    type Item = Result<PcapRecord, PcapError>;

    /// [`next_record`](PcapReader::next_record) as an iterator (stops after
    /// the first error is returned only if the caller stops).
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// A pcap writer (little-endian, version 2.4).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    writer: W,
    resolution: Resolution,
    index: u64,
    offset: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header for `resolution`, `linktype` and `snaplen`.
    pub fn new(mut writer: W, resolution: Resolution, linktype: u32, snaplen: u32) -> Result<Self, PcapError> {
        let magic = match resolution {
            Resolution::Micro => MAGIC_MICRO,
            Resolution::Nano => MAGIC_NANO,
        };
        let mut h = [0u8; GLOBAL_HEADER_LEN];
        h[0..4].copy_from_slice(&magic.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone = 0, sigfigs = 0
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&linktype.to_le_bytes());
        writer.write_all(&h).map_err(|source| PcapError::Io { offset: 0, source })?;
        Ok(PcapWriter { writer, resolution, index: 0, offset: GLOBAL_HEADER_LEN as u64 })
    }

    /// Writes a record with captured length = original length =
    /// `data.len()`. Microsecond files truncate the sub-microsecond part.
    pub fn write_record(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), PcapError> {
        let len = u32::try_from(data.len())
            .map_err(|_| PcapError::Unrepresentable { index: self.index, reason: "data longer than 4 GiB" })?;
        self.write_record_orig(ts_ns, len, data)
    }

    /// Writes a record whose original length was `orig_len` (raised to
    /// `data.len()` if smaller).
    pub fn write_record_orig(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> Result<(), PcapError> {
        let index = self.index;
        let caplen =
            u32::try_from(data.len()).map_err(|_| PcapError::Unrepresentable { index, reason: "data longer than 4 GiB" })?;
        let sec = u32::try_from(ts_ns / 1_000_000_000)
            .map_err(|_| PcapError::Unrepresentable { index, reason: "timestamp beyond year 2106" })?;
        let ns = (ts_ns % 1_000_000_000) as u32;
        let frac = match self.resolution {
            Resolution::Micro => ns / 1_000,
            Resolution::Nano => ns,
        };
        let mut h = [0u8; RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&sec.to_le_bytes());
        h[4..8].copy_from_slice(&frac.to_le_bytes());
        h[8..12].copy_from_slice(&caplen.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.max(caplen).to_le_bytes());
        let offset = self.offset;
        self.writer
            .write_all(&h)
            .and_then(|()| self.writer.write_all(data))
            .map_err(|source| PcapError::Io { offset, source })?;
        self.index += 1;
        self.offset += (RECORD_HEADER_LEN + data.len()) as u64;
        Ok(())
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        self.writer.flush().map_err(|source| PcapError::Io { offset: self.offset, source })
    }

    /// Returns the underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.writer
    }
}

/// Reads every record of an Ethernet pcap file. Errors do not name the
/// file: the caller does, once (`PATH: not a pcap file: ...`).
pub fn read_file(path: impl AsRef<Path>) -> Result<Vec<PcapRecord>, PcapError> {
    let path = path.as_ref();
    let f = File::open(path).map_err(|source| PcapError::Io { offset: 0, source })?;
    let mut r = PcapReader::new(BufReader::new(f))?;
    r.require_ethernet()?;
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(rec);
    }
    Ok(out)
}

/// Writes an Ethernet pcap file (snapshot length [`DEFAULT_SNAPLEN`]) with
/// the given records, keeping each record's `orig_len`. Errors do not
/// name the file: the caller does, once.
pub fn write_file<I>(path: impl AsRef<Path>, resolution: Resolution, records: I) -> Result<(), PcapError>
where
    I: IntoIterator,
    I::Item: std::borrow::Borrow<PcapRecord>,
{
    use std::borrow::Borrow;
    let path = path.as_ref();
    let f = File::create(path).map_err(|source| PcapError::Io { offset: 0, source })?;
    let mut w = PcapWriter::new(BufWriter::new(f), resolution, LINKTYPE_ETHERNET, DEFAULT_SNAPLEN)?;
    for rec in records {
        let rec = rec.borrow();
        w.write_record_orig(rec.ts_ns, rec.orig_len, &rec.data)?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<PcapRecord> {
        vec![
            PcapRecord { ts_ns: 1_700_000_000_123_456_789, orig_len: 3, data: vec![1, 2, 3] },
            PcapRecord { ts_ns: 1_700_000_001_000_000_000, orig_len: 0, data: vec![] },
            PcapRecord { ts_ns: 999, orig_len: 60, data: (0..60).collect() },
        ]
    }

    fn write(res: Resolution, recs: &[PcapRecord]) -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new(), res, LINKTYPE_ETHERNET, 65535).unwrap();
        for r in recs {
            w.write_record(r.ts_ns, &r.data).unwrap();
        }
        w.flush().unwrap();
        w.into_inner()
    }

    #[test]
    fn round_trip_nano() {
        let bytes = write(Resolution::Nano, &records());
        assert_eq!(&bytes[..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!((r.resolution(), r.linktype(), r.snaplen(), r.version()), (Resolution::Nano, 1, 65535, (2, 4)));
        assert!(!r.is_big_endian());
        r.require_ethernet().unwrap();
        let got: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, records());
        assert_eq!(r.offset(), bytes.len() as u64);
    }

    #[test]
    fn round_trip_micro_truncates_to_microseconds() {
        let bytes = write(Resolution::Micro, &records());
        assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        let got: Vec<_> = PcapReader::new(&bytes[..]).unwrap().collect::<Result<_, _>>().unwrap();
        let want: Vec<_> = records().into_iter().map(|r| PcapRecord { ts_ns: r.ts_ns / 1000 * 1000, ..r }).collect();
        assert_eq!(got, want);
        assert_eq!(got[0].ts_ns, 1_700_000_000_123_456_000);
        assert_eq!(got[2].ts_ns, 0);
    }

    #[test]
    fn hand_written_big_endian_micro() {
        #[rustfmt::skip]
        let bytes: Vec<u8> = vec![
            0xa1, 0xb2, 0xc3, 0xd4, // magic, big-endian
            0x00, 0x02, 0x00, 0x04, // version 2.4
            0x00, 0x00, 0x00, 0x00, // thiszone
            0x00, 0x00, 0x00, 0x00, // sigfigs
            0x00, 0x00, 0xff, 0xff, // snaplen 65535
            0x00, 0x00, 0x00, 0x01, // Ethernet
            // record 0: 2 s + 500000 us, caplen 4, orig_len 1514
            0x00, 0x00, 0x00, 0x02, 0x00, 0x07, 0xa1, 0x20, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x05, 0xea,
            0xde, 0xad, 0xbe, 0xef,
            // record 1: 3 s + 1 us, caplen 1, orig_len 1
            0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
            0x42,
        ];
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert!(r.is_big_endian());
        assert_eq!((r.resolution(), r.snaplen(), r.linktype()), (Resolution::Micro, 65535, 1));
        let a = r.next_record().unwrap().unwrap();
        assert_eq!(a, PcapRecord { ts_ns: 2_500_000_000, orig_len: 1514, data: vec![0xde, 0xad, 0xbe, 0xef] });
        let b = r.next_record().unwrap().unwrap();
        assert_eq!(b, PcapRecord { ts_ns: 3_000_001_000, orig_len: 1, data: vec![0x42] });
        assert!(r.next_record().unwrap().is_none());
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn hand_written_big_endian_nano() {
        let mut bytes = vec![0xa1, 0xb2, 0x3c, 0x4d, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 1];
        bytes.extend_from_slice(&[0, 0, 0, 1, 0x3b, 0x9a, 0xc9, 0xff, 0, 0, 0, 1, 0, 0, 0, 1, 7]);
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.resolution(), Resolution::Nano);
        assert_eq!(r.next_record().unwrap().unwrap().ts_ns, 1_999_999_999);
    }

    #[test]
    fn errors_name_positions() {
        let e = PcapReader::new(&[0u8; 24][..]).unwrap_err();
        assert!(matches!(e, PcapError::BadMagic { magic: 0 }));
        assert!(e.to_string().contains("bad magic 0x00000000 at byte 0"), "{e}");
        let e = PcapReader::new(&[0xd4, 0xc3][..]).unwrap_err();
        assert!(matches!(e, PcapError::TruncatedHeader { got: 2 }), "{e}");
        let e = PcapReader::new(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0][..]).unwrap_err();
        assert!(e.to_string().contains("ends at byte 6"), "{e}");

        let bytes = write(Resolution::Nano, &records());
        // Cut inside record 1's header (record 0 is 16 + 3 bytes at 24).
        let e = PcapReader::new(&bytes[..24 + 19 + 5]).unwrap().nth(1).unwrap().unwrap_err();
        assert!(matches!(e, PcapError::TruncatedRecordHeader { index: 1, offset: 43, got: 5 }), "{e}");
        assert_eq!(e.to_string(), "record 1 at byte 43: truncated record header (5 of 16 bytes)");
        // Cut inside record 2's data.
        let e = PcapReader::new(&bytes[..bytes.len() - 1]).unwrap().nth(2).unwrap().unwrap_err();
        assert!(matches!(e, PcapError::TruncatedRecord { index: 2, offset: 59, caplen: 60, got: 59 }), "{e}");
        // Absurd caplen.
        let mut bad = bytes.clone();
        bad[24 + 8..24 + 12].copy_from_slice(&(MAX_CAPLEN + 1).to_le_bytes());
        let e = PcapReader::new(&bad[..]).unwrap().next().unwrap().unwrap_err();
        assert!(matches!(e, PcapError::CaplenTooLarge { index: 0, offset: 24, .. }), "{e}");
        assert!(e.to_string().starts_with("record 0 at byte 24: captured length 262145 exceeds 262144"), "{e}");
        // Not Ethernet.
        let raw = PcapWriter::new(Vec::new(), Resolution::Micro, 101, 100).unwrap().into_inner();
        let r = PcapReader::new(&raw[..]).unwrap();
        assert_eq!(r.linktype(), 101);
        let e = r.require_ethernet().unwrap_err();
        assert!(e.to_string().contains("link type 101 is not Ethernet"), "{e}");
    }

    #[test]
    fn writer_limits() {
        let mut w = PcapWriter::new(Vec::new(), Resolution::Nano, 1, 100).unwrap();
        let e = w.write_record(u64::from(u32::MAX) * 1_000_000_000 + 1_000_000_000, &[1]).unwrap_err();
        assert!(matches!(e, PcapError::Unrepresentable { index: 0, .. }));
        w.write_record_orig(5, 1000, &[1, 2]).unwrap();
        let bytes = w.into_inner();
        let rec = PcapReader::new(&bytes[..]).unwrap().next().unwrap().unwrap();
        assert_eq!((rec.ts_ns, rec.orig_len, rec.data), (5, 1000, vec![1, 2]));
    }

    #[test]
    fn files() {
        let dir = std::env::temp_dir().join(format!("lvsnic-pcap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.pcap");
        write_file(&p, Resolution::Nano, records()).unwrap();
        assert_eq!(read_file(&p).unwrap(), records());
        write_file(&p, Resolution::Micro, records().iter()).unwrap();
        assert_eq!(read_file(&p).unwrap()[1], records()[1]);
        std::fs::write(&p, b"garbage garbage garbage garbage").unwrap();
        let e = read_file(&p).unwrap_err();
        let msg = e.to_string();
        // The caller names the file (once): the error does not.
        assert!(msg.starts_with("not a pcap file: bad magic"), "{msg}");
        let e = read_file(dir.join("missing.pcap")).unwrap_err();
        assert!(e.to_string().starts_with("I/O error at byte 0: "), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
