//! AXI-Stream drivers: a source (frames into the core) and a sink (frames
//! out of the core), each with its own per-cycle `tvalid` / `tready`
//! pattern, frame timing records and protocol checks on the RTL's side.

use std::collections::VecDeque;

use crate::error::{Port, SimError};
use crate::ffi::DATA_WORDS;
use crate::meta::Tuser;
use crate::pattern::Pattern;

/// A frame to send: bytes (at least one) and the `tuser` of its first beat
/// (held on every beat).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The frame's bytes, byte 0 first.
    pub data: Vec<u8>,
    /// `tuser` (must fit the port's width).
    pub tuser: Tuser,
}

impl Frame {
    /// A frame from bytes and `tuser`.
    pub fn new(data: impl Into<Vec<u8>>, tuser: impl Into<Tuser>) -> Frame {
        Frame {
            data: data.into(),
            tuser: tuser.into(),
        }
    }
}

/// A frame a source has sent completely, with its timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentFrame {
    /// The id [`AxisSource::push`] returned (0, 1, 2, ... per source).
    pub id: u64,
    /// Length in bytes.
    pub len: usize,
    /// Its `tuser`.
    pub tuser: Tuser,
    /// Cycle in which its first beat was taken (`tvalid && tready`).
    pub first_beat: u64,
    /// Cycle in which its last beat was taken.
    pub last_beat: u64,
}

/// A frame a sink has received completely, with its timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceivedFrame {
    /// The bytes whose `tkeep` bits were set, byte 0 first.
    pub data: Vec<u8>,
    /// `tuser` of the first beat (the frame's metadata).
    pub tuser: Tuser,
    /// `tuser` of the last beat (carries `m_axis_tx_tuser[32]`, abort).
    pub tuser_last: Tuser,
    /// Cycle in which its first beat was taken.
    pub first_beat: u64,
    /// Cycle in which its last beat was taken.
    pub last_beat: u64,
}

impl ReceivedFrame {
    /// Cycles from `sent`'s first beat entering to this frame's first beat
    /// leaving (`None` if this frame started first).
    pub fn latency_from(&self, sent: &SentFrame) -> Option<u64> {
        self.first_beat.checked_sub(sent.first_beat)
    }
}

struct Queued {
    id: u64,
    data: Vec<u8>,
    tuser: Tuser,
}

/// The signals of one source port inside the model's input struct.
pub(crate) struct SrcLanes<'a> {
    pub tdata: &'a mut [u32; DATA_WORDS],
    pub tkeep: &'a mut u64,
    pub tvalid: &'a mut u8,
    pub tlast: &'a mut u8,
    pub tuser: &'a mut [u32],
}

/// The signals of one sink port, as sampled after the clk=0 eval.
pub(crate) struct SinkLanes<'a> {
    pub tdata: &'a [u32; DATA_WORDS],
    pub tkeep: u64,
    pub tvalid: bool,
    pub tlast: bool,
    pub tuser: &'a [u32],
}

fn full_keep(width_bytes: usize) -> u64 {
    if width_bytes >= 64 {
        u64::MAX
    } else {
        (1u64 << width_bytes) - 1
    }
}

/// Drives an AXI-Stream input of the core (`s_axis_rx`, `s_axis_inject`)
/// from a queue of frames.
pub struct AxisSource {
    port: Port,
    width_bytes: usize,
    queue: VecDeque<Queued>,
    offset: usize,
    presenting: bool,
    first_beat: u64,
    pattern: Pattern,
    next_id: u64,
    sent: Vec<SentFrame>,
    record: bool,
    beats: u64,
    frames: u64,
}

impl AxisSource {
    pub(crate) fn new(port: Port, width_bytes: usize) -> AxisSource {
        AxisSource {
            port,
            width_bytes,
            queue: VecDeque::new(),
            offset: 0,
            presenting: false,
            first_beat: 0,
            pattern: Pattern::always(),
            next_id: 0,
            sent: Vec::new(),
            record: true,
            beats: 0,
            frames: 0,
        }
    }

    /// The port this source drives.
    pub fn port(&self) -> Port {
        self.port
    }

    /// Queues a frame; returns its id (0, 1, 2, ... in push order).
    /// Errors: an empty frame, or `tuser` wider than the port.
    pub fn push(&mut self, frame: Frame) -> Result<u64, SimError> {
        if frame.data.is_empty() {
            return Err(SimError::EmptyFrame { port: self.port });
        }
        let bits = self.port.tuser_bits();
        if frame.tuser.significant_bits() > bits {
            return Err(SimError::TuserTooWide {
                port: self.port,
                bits,
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back(Queued {
            id,
            data: frame.data,
            tuser: frame.tuser,
        });
        Ok(id)
    }

    /// Queues a frame given as bytes and `tuser` (see [`AxisSource::push`]).
    pub fn push_bytes(&mut self, data: &[u8], tuser: impl Into<Tuser>) -> Result<u64, SimError> {
        self.push(Frame::new(data, tuser))
    }

    /// Sets the `tvalid` pattern: a beat is presented only in a cycle where
    /// the pattern says `true` (gaps between and inside frames).
    pub fn set_pattern(&mut self, pattern: Pattern) {
        self.pattern = pattern;
    }

    /// Whether to keep a [`SentFrame`] per frame (default true; turn off for
    /// very long runs).
    pub fn set_recording(&mut self, on: bool) {
        self.record = on;
    }

    /// Frames not yet completely taken by the core (queued or in progress).
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Whether every queued frame has been taken.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether a frame has been partly taken.
    pub fn in_frame(&self) -> bool {
        self.offset > 0
    }

    /// Timing records of the frames sent so far (oldest first).
    pub fn sent(&self) -> &[SentFrame] {
        &self.sent
    }

    /// Takes the timing records, leaving none.
    pub fn take_sent(&mut self) -> Vec<SentFrame> {
        std::mem::take(&mut self.sent)
    }

    /// Beats taken by the core so far.
    pub fn beats(&self) -> u64 {
        self.beats
    }

    /// Frames taken completely so far.
    pub fn frames_sent(&self) -> u64 {
        self.frames
    }

    /// Drops the frames not yet started (a frame in progress, or whose first
    /// beat is already presented, stays: AXI-Stream cannot take it back).
    /// Returns how many were dropped.
    pub fn clear(&mut self) -> usize {
        // a frame partly taken, or whose first beat is presented, must finish
        let keep = usize::from(self.offset > 0 || self.presenting);
        let n = self.queue.len().saturating_sub(keep);
        self.queue.truncate(keep);
        n
    }

    /// Reset of the core: a frame in progress is lost (dropped from the queue).
    pub(crate) fn abort(&mut self) {
        if self.offset > 0 {
            self.queue.pop_front();
        }
        self.offset = 0;
        self.presenting = false;
    }

    /// Decides this cycle's `tvalid` and, for a new beat, its payload.
    #[inline]
    pub(crate) fn drive(&mut self, l: SrcLanes<'_>) {
        let go = self.pattern.next_bit();
        if !self.presenting && go {
            if let Some(head) = self.queue.front() {
                self.presenting = true;
                let len = head.data.len();
                let end = (self.offset + self.width_bytes).min(len);
                let chunk = &head.data[self.offset..end];
                let n = chunk.len();
                let words = self.width_bytes / 4;
                let mut it = chunk.chunks_exact(4);
                let mut i = 0;
                for c in &mut it {
                    l.tdata[i] = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    i += 1;
                }
                let rem = it.remainder();
                if !rem.is_empty() {
                    let mut b = [0u8; 4];
                    b[..rem.len()].copy_from_slice(rem);
                    l.tdata[i] = u32::from_le_bytes(b);
                    i += 1;
                }
                for w in &mut l.tdata[i..words] {
                    *w = 0;
                }
                *l.tkeep = if n == self.width_bytes {
                    full_keep(self.width_bytes)
                } else {
                    (1u64 << n) - 1
                };
                *l.tlast = u8::from(end == len);
                let tw = head.tuser.words();
                let k = l.tuser.len();
                l.tuser.copy_from_slice(&tw[..k]);
            }
        }
        *l.tvalid = u8::from(self.presenting);
    }

    /// Applies this cycle's handshake (`fire` = tvalid && tready).
    #[inline]
    pub(crate) fn after(&mut self, fire: bool, cycle: u64) {
        if !fire {
            return;
        }
        self.presenting = false;
        self.beats += 1;
        if self.offset == 0 {
            self.first_beat = cycle;
        }
        self.offset += self.width_bytes;
        let done = self
            .queue
            .front()
            .map_or(true, |h| self.offset >= h.data.len());
        if done {
            self.offset = 0;
            self.frames += 1;
            if let Some(h) = self.queue.pop_front() {
                if self.record {
                    self.sent.push(SentFrame {
                        id: h.id,
                        len: h.data.len(),
                        tuser: h.tuser,
                        first_beat: self.first_beat,
                        last_beat: cycle,
                    });
                }
            }
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "{}: {} frame(s) queued{}",
            self.port,
            self.queue.len(),
            if self.presenting {
                ", tvalid high (not taken)"
            } else {
                ""
            }
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Snapshot {
    tdata: [u32; DATA_WORDS],
    tkeep: u64,
    tlast: bool,
    tuser: [u32; Tuser::WORDS],
}

impl Snapshot {
    fn of(l: &SinkLanes<'_>, words: usize) -> Snapshot {
        let mut s = Snapshot {
            tdata: [0; DATA_WORDS],
            tkeep: l.tkeep,
            tlast: l.tlast,
            tuser: [0; Tuser::WORDS],
        };
        s.tdata[..words].copy_from_slice(&l.tdata[..words]);
        s.tuser[..l.tuser.len()].copy_from_slice(l.tuser);
        s
    }
}

/// Collects the frames of an AXI-Stream output of the core (`m_axis_tx`,
/// `m_axis_host`) and checks the RTL's side of the protocol: `tkeep` all
/// ones but on the last beat, contiguous from byte 0 and non-zero there, and
/// `tvalid` plus payload held while `tready` is low.
pub struct AxisSink {
    port: Port,
    width_bytes: usize,
    pattern: Pattern,
    ready: bool,
    cur: Vec<u8>,
    cur_tuser: Tuser,
    cur_first: u64,
    in_frame: bool,
    frames: VecDeque<ReceivedFrame>,
    beats: u64,
    received: u64,
    stalled: Option<Snapshot>,
    max_frame_len: usize,
}

impl AxisSink {
    pub(crate) fn new(port: Port, width_bytes: usize, max_frame_len: usize) -> AxisSink {
        AxisSink {
            port,
            width_bytes,
            pattern: Pattern::always(),
            ready: false,
            cur: Vec::new(),
            cur_tuser: Tuser::ZERO,
            cur_first: 0,
            in_frame: false,
            frames: VecDeque::new(),
            beats: 0,
            received: 0,
            stalled: None,
            max_frame_len,
        }
    }

    /// The port this sink collects.
    pub fn port(&self) -> Port {
        self.port
    }

    /// Sets the `tready` pattern (backpressure).
    pub fn set_pattern(&mut self, pattern: Pattern) {
        self.pattern = pattern;
    }

    /// Frames received and not yet taken, oldest first.
    pub fn frames(&self) -> &VecDeque<ReceivedFrame> {
        &self.frames
    }

    /// Number of frames received and not yet taken.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no received frame is waiting.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Takes the oldest received frame.
    pub fn pop(&mut self) -> Option<ReceivedFrame> {
        self.frames.pop_front()
    }

    /// Takes every received frame.
    pub fn take(&mut self) -> Vec<ReceivedFrame> {
        self.frames.drain(..).collect()
    }

    /// Whether a frame has started but not ended (no `tlast` yet).
    pub fn in_frame(&self) -> bool {
        self.in_frame
    }

    /// Beats taken so far.
    pub fn beats(&self) -> u64 {
        self.beats
    }

    /// Frames completed so far (including those already taken).
    pub fn frames_received(&self) -> u64 {
        self.received
    }

    pub(crate) fn set_max_frame_len(&mut self, max: usize) {
        self.max_frame_len = max;
    }

    /// Reset of the core: a partial frame is dropped.
    pub(crate) fn abort(&mut self) {
        self.cur.clear();
        self.in_frame = false;
        self.stalled = None;
        self.ready = false;
    }

    /// This cycle's `tready`.
    #[inline]
    pub(crate) fn drive(&mut self) -> u8 {
        self.ready = self.pattern.next_bit();
        u8::from(self.ready)
    }

    fn violation(&self, cycle: u64, what: String) -> SimError {
        SimError::Protocol {
            port: self.port.rtl_name(),
            cycle,
            what,
        }
    }

    /// Samples the port after the clk=0 eval; returns whether a beat was taken.
    #[inline]
    pub(crate) fn sample(&mut self, l: SinkLanes<'_>, cycle: u64) -> Result<bool, SimError> {
        let words = self.width_bytes / 4;
        if let Some(prev) = self.stalled.take() {
            if !l.tvalid {
                return Err(
                    self.violation(cycle, "tvalid dropped before the beat was taken".into())
                );
            }
            if Snapshot::of(&l, words) != prev {
                return Err(self.violation(
                    cycle,
                    "tdata/tkeep/tlast/tuser changed while tvalid high and tready low".into(),
                ));
            }
        }
        if !l.tvalid {
            return Ok(false);
        }
        if !self.ready {
            self.stalled = Some(Snapshot::of(&l, words));
            return Ok(false);
        }
        let full = full_keep(self.width_bytes);
        let n = if l.tlast {
            if l.tkeep == 0 || l.tkeep & l.tkeep.wrapping_add(1) != 0 || l.tkeep & !full != 0 {
                return Err(self.violation(
                    cycle,
                    format!("tkeep {:#x} on a last beat is not 2^n-1 with n>=1", l.tkeep),
                ));
            }
            l.tkeep.count_ones() as usize
        } else {
            if l.tkeep != full {
                return Err(self.violation(
                    cycle,
                    format!("tkeep {:#x} on a beat that is not the last", l.tkeep),
                ));
            }
            self.width_bytes
        };
        self.beats += 1;
        if !self.in_frame {
            self.in_frame = true;
            self.cur_first = cycle;
            self.cur_tuser = Tuser::from_words(l.tuser);
        }
        let base = self.cur.len();
        for w in &l.tdata[..n.div_ceil(4)] {
            self.cur.extend_from_slice(&w.to_le_bytes());
        }
        self.cur.truncate(base + n);
        if self.cur.len() > self.max_frame_len {
            let max = self.max_frame_len;
            self.abort();
            return Err(SimError::FrameTooLong {
                port: self.port,
                max,
                cycle,
            });
        }
        if l.tlast {
            self.in_frame = false;
            self.received += 1;
            self.frames.push_back(ReceivedFrame {
                data: std::mem::take(&mut self.cur),
                tuser: self.cur_tuser,
                tuser_last: Tuser::from_words(l.tuser),
                first_beat: self.cur_first,
                last_beat: cycle,
            });
        }
        Ok(true)
    }

    pub(crate) fn describe(&self, tvalid: bool) -> String {
        format!(
            "{}: {}{}{}",
            self.port,
            if tvalid { "tvalid high" } else { "tvalid low" },
            if self.ready {
                ", tready high"
            } else {
                ", tready low"
            },
            if self.in_frame {
                ", inside a frame"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Beat {
        tdata: [u32; DATA_WORDS],
        tkeep: u64,
        tvalid: bool,
        tlast: bool,
        tuser: [u32; 2],
    }

    fn beat(bytes: &[u8], tkeep: u64, tlast: bool) -> Beat {
        let mut tdata = [0u32; DATA_WORDS];
        for (i, b) in bytes.iter().enumerate() {
            tdata[i / 4] |= u32::from(*b) << (8 * (i % 4));
        }
        Beat {
            tdata,
            tkeep,
            tvalid: true,
            tlast,
            tuser: [7, 1],
        }
    }

    fn feed(s: &mut AxisSink, b: &Beat, ready: bool, cycle: u64) -> Result<bool, SimError> {
        s.ready = ready;
        s.sample(
            SinkLanes {
                tdata: &b.tdata,
                tkeep: b.tkeep,
                tvalid: b.tvalid,
                tlast: b.tlast,
                tuser: &b.tuser,
            },
            cycle,
        )
    }

    #[test]
    fn sink_assembles_frames() {
        let mut s = AxisSink::new(Port::Tx, 8, 100);
        assert!(feed(
            &mut s,
            &beat(&[1, 2, 3, 4, 5, 6, 7, 8], 0xFF, false),
            true,
            10
        )
        .unwrap());
        assert!(!feed(&mut s, &beat(&[9, 10, 11], 0x07, true), false, 11).unwrap());
        assert!(feed(&mut s, &beat(&[9, 10, 11], 0x07, true), true, 12).unwrap());
        let f = s.pop().unwrap();
        assert_eq!(f.data, (1..=11).collect::<Vec<u8>>());
        assert_eq!((f.first_beat, f.last_beat), (10, 12));
        assert_eq!(f.tuser.words(), [7, 1, 0, 0, 0]);
        assert_eq!(s.beats(), 2);
    }

    #[test]
    fn sink_rejects_bad_tkeep() {
        for (keep, last) in [(0x7F, false), (0x00, true), (0x05, true), (0x1FF, true)] {
            let mut s = AxisSink::new(Port::Host, 8, 100);
            let e = feed(&mut s, &beat(&[0; 8], keep, last), true, 3).unwrap_err();
            assert!(
                matches!(
                    e,
                    SimError::Protocol {
                        port: "m_axis_host",
                        cycle: 3,
                        ..
                    }
                ),
                "{keep:#x}: {e}"
            );
        }
        // 512-bit: full and 2^n-1 keeps are fine
        let mut s = AxisSink::new(Port::Host, 64, 1000);
        feed(&mut s, &beat(&[0; 64], u64::MAX, false), true, 0).unwrap();
        feed(&mut s, &beat(&[0; 64], u64::MAX >> 1, true), true, 1).unwrap();
        assert_eq!(s.pop().unwrap().data.len(), 127);
    }

    #[test]
    fn sink_checks_stability_under_backpressure() {
        let mut s = AxisSink::new(Port::Tx, 8, 100);
        feed(&mut s, &beat(&[1; 8], 0xFF, false), false, 0).unwrap();
        let e = feed(&mut s, &beat(&[2; 8], 0xFF, false), false, 1).unwrap_err();
        assert!(e.to_string().contains("changed while tvalid high"), "{e}");

        let mut s = AxisSink::new(Port::Tx, 8, 100);
        feed(&mut s, &beat(&[1; 8], 0xFF, false), false, 0).unwrap();
        let mut idle = beat(&[1; 8], 0xFF, false);
        idle.tvalid = false;
        let e = feed(&mut s, &idle, true, 1).unwrap_err();
        assert!(e.to_string().contains("tvalid dropped"), "{e}");
    }

    #[test]
    fn sink_limits_frame_length() {
        let mut s = AxisSink::new(Port::Tx, 8, 20);
        for c in 0..2 {
            feed(&mut s, &beat(&[0; 8], 0xFF, false), true, c).unwrap();
        }
        let e = feed(&mut s, &beat(&[0; 8], 0xFF, false), true, 2).unwrap_err();
        assert_eq!(
            e,
            SimError::FrameTooLong {
                port: Port::Tx,
                max: 20,
                cycle: 2
            }
        );
        assert!(!s.in_frame());
    }

    #[test]
    fn source_beats_and_keep() {
        let mut src = AxisSource::new(Port::Rx, 8);
        src.push_bytes(&(1..=9).collect::<Vec<u8>>(), Tuser::from_u128(0xABC))
            .unwrap();
        let mut tdata = [0u32; DATA_WORDS];
        let (mut tkeep, mut tvalid, mut tlast, mut tuser) = (0u64, 0u8, 0u8, [0u32; 3]);
        let mut drive = |src: &mut AxisSource| {
            src.drive(SrcLanes {
                tdata: &mut tdata,
                tkeep: &mut tkeep,
                tvalid: &mut tvalid,
                tlast: &mut tlast,
                tuser: &mut tuser,
            });
            (tdata[0], tdata[1], tkeep, tvalid, tlast, tuser[0])
        };
        assert_eq!(
            drive(&mut src),
            (0x0403_0201, 0x0807_0605, 0xFF, 1, 0, 0xABC)
        );
        src.after(false, 0); // not taken: same beat again
        assert_eq!(
            drive(&mut src),
            (0x0403_0201, 0x0807_0605, 0xFF, 1, 0, 0xABC)
        );
        src.after(true, 1);
        assert_eq!(drive(&mut src), (0x09, 0, 0x01, 1, 1, 0xABC));
        src.after(true, 2);
        assert_eq!(drive(&mut src).3, 0, "idle after the frame");
        assert_eq!(
            src.sent()[0],
            SentFrame {
                id: 0,
                len: 9,
                tuser: Tuser::from_u128(0xABC),
                first_beat: 1,
                last_beat: 2
            }
        );
    }
}
