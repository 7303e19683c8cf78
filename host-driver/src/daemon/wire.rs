//! The wire the forwarding loop runs over: a capture played (`pcap:`), a
//! TAP device (`tap:`), or none (a real card's own ports); and the
//! director's own stack (`--host-tap`, gratuitous ARPs).

use super::{io_err, sys, Daemon, DaemonError, Pace, WireSpec};
use crate::device::{Device, Wire as SimulatedWire};
use lvsnic_model::pcap::{self, PcapRecord, PcapWriter, Resolution};
use lvsnic_model::time::Time;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) type PcapOut = PcapWriter<BufWriter<File>>;

fn pcap_out(path: &Path) -> Result<PcapOut, DaemonError> {
    let f = File::create(path).map_err(io_err(path.display().to_string()))?;
    PcapWriter::new(BufWriter::new(f), Resolution::Nano, 1, 65535)
        .map_err(|e| DaemonError::Pcap { path: path.display().to_string(), msg: e.to_string() })
}

/// A pcap wire being played.
pub(super) struct PcapWire {
    pub(super) records: Vec<PcapRecord>,
    pub(super) next: usize,
    out: PcapOut,
    host: Option<PcapOut>,
    pub(super) pace: Pace,
    /// Realtime pacing: wall clock and capture time of the first frame.
    pub(super) origin: Option<(Instant, Time)>,
    /// Step pacing: frames to run / stamp to run to.
    pub(super) budget: u64,
    pub(super) until: Option<Time>,
}

/// The wire the loop runs over.
pub(super) enum Wire {
    None,
    Pcap(Box<PcapWire>),
    Tap(sys::Tap),
}

impl Wire {
    /// Opens the wire `spec` names (none: [`Wire::None`]); with whether
    /// model time is the wall clock, and the model's start time (a
    /// capture's first frame).
    pub(super) fn open(spec: Option<&WireSpec>, pace: Pace, create_taps: bool) -> Result<(Wire, bool, Time), DaemonError> {
        Ok(match spec {
            // No wire: the director's clock is the real one (a backup director
            // that only learns connections by sync must see them expire).
            None => (Wire::None, true, sys::realtime_ns()),
            Some(WireSpec::Pcap { input, output, host }) => {
                let ip = input.display().to_string();
                let mut records = pcap::read_file(input).map_err(|e| DaemonError::Pcap { path: ip, msg: e.to_string() })?;
                records.sort_by_key(|r| r.ts_ns);
                let start = records.first().map(|r| r.ts_ns).unwrap_or(0);
                let w = PcapWire {
                    records,
                    next: 0,
                    out: pcap_out(output)?,
                    host: host.as_deref().map(pcap_out).transpose()?,
                    pace,
                    origin: None,
                    budget: 0,
                    until: None,
                };
                (Wire::Pcap(Box::new(w)), false, start)
            }
            Some(WireSpec::Tap(name)) => {
                let t = super::open_tap(name, create_taps)?;
                (Wire::Tap(t), true, sys::realtime_ns())
            }
        })
    }

    /// How long the loop may wait in poll(2) for this wire (ms); a real
    /// card without a wire (`polls_card`) is polled every millisecond.
    pub(super) fn poll_timeout(&self, polls_card: bool) -> i32 {
        match self {
            Wire::Pcap(w) if w.next < w.records.len() => match w.pace {
                Pace::Asap => 0,
                Pace::Step if w.budget > 0 || w.until.is_some() => 0,
                Pace::Step => 200,
                Pace::Realtime => match w.origin {
                    None => 0,
                    Some((t0, c0)) => {
                        let due = Duration::from_nanos(w.records[w.next].ts_ns.saturating_sub(c0));
                        let el = t0.elapsed();
                        if due <= el {
                            0
                        } else {
                            ((due - el).as_millis() as i32).clamp(1, 200)
                        }
                    }
                },
            },
            Wire::Tap(_) => 100,
            Wire::None if polls_card => 1,
            _ => 200,
        }
    }
}

/// Runs what the wire (and the host TAP) has for now.
pub(super) type RunWire<D> = fn(&mut Daemon<D>, &mut Vec<u8>) -> Result<(), DaemonError>;

impl<D: Device> Daemon<D> {
    /// What the director's own stack sends (on `--host-tap`, and the
    /// gratuitous ARPs due) goes down the card's transmit ring and leaves
    /// on its port (a real card).
    pub(super) fn run_host_tap(&mut self, buf: &mut Vec<u8>) -> Result<(), DaemonError> {
        for f in self.due_garps() {
            self.ctl.host_tx(&f).map_err(|e| DaemonError::Device(e.to_string()))?;
        }
        self.host_tap_frames(buf, |d, f| d.ctl.host_tx(f).map_err(|e| DaemonError::Device(e.to_string())))
    }

    /// Reads up to 256 frames from `--host-tap` and hands each to `each`.
    fn host_tap_frames(
        &mut self,
        buf: &mut Vec<u8>,
        mut each: impl FnMut(&mut Self, &[u8]) -> Result<(), DaemonError>,
    ) -> Result<(), DaemonError> {
        if self.host_tap.is_none() {
            return Ok(());
        }
        if buf.len() < 65536 {
            buf.resize(65536, 0);
        }
        for _ in 0..256 {
            let Some(ht) = &mut self.host_tap else { return Ok(()) };
            let n = match ht.recv(buf).map_err(io_err(format!("reading {}", ht.name())))? {
                None => return Ok(()),
                Some(n) => n,
            };
            each(self, &buf[..n])?;
        }
        Ok(())
    }

    pub(super) fn flush(&mut self) -> Result<(), DaemonError> {
        if let Wire::Pcap(w) = &mut self.wire {
            w.out.flush().map_err(|e| DaemonError::Pcap { path: "output".into(), msg: e.to_string() })?;
            if let Some(h) = &mut w.host {
                h.flush().map_err(|e| DaemonError::Pcap { path: "host".into(), msg: e.to_string() })?;
            }
        }
        Ok(())
    }
}

/// The wire of a card whose network is simulated.
impl<D: Device + SimulatedWire> Daemon<D> {
    /// Runs what the wire has for now.
    pub(super) fn run_wire(&mut self, buf: &mut Vec<u8>) -> Result<(), DaemonError> {
        match &mut self.wire {
            Wire::None => Ok(()),
            Wire::Pcap(_) => self.run_pcap(),
            Wire::Tap(_) => {
                if buf.len() < 65536 {
                    buf.resize(65536, 0);
                }
                self.run_tap(buf)
            }
        }?;
        self.run_host_tap_wire(buf)
    }

    fn run_pcap(&mut self) -> Result<(), DaemonError> {
        let Wire::Pcap(w) = &mut self.wire else { return Ok(()) };
        let was_running = w.next < w.records.len();
        let mut n = 0;
        while w.next < w.records.len() && !sys::shutdown_requested() {
            let ts = w.records[w.next].ts_ns;
            match w.pace {
                Pace::Asap => {
                    if n == 256 {
                        break; // let the control socket in
                    }
                }
                Pace::Step => {
                    let by_until = w.until.is_some_and(|u| ts <= u);
                    if !by_until && w.budget == 0 {
                        break;
                    }
                    if !by_until {
                        w.budget -= 1;
                    }
                }
                Pace::Realtime => {
                    let (t0, c0) = *w.origin.get_or_insert((Instant::now(), ts));
                    if n == 256 || Duration::from_nanos(ts.saturating_sub(c0)) > t0.elapsed() {
                        break;
                    }
                }
            }
            let rec = std::mem::take(&mut w.records[w.next].data);
            w.next += 1;
            n += 1;
            let r = self.ctl.frame(ts, &rec).map_err(|e| DaemonError::Device(e.to_string()))?;
            let perr = |e: lvsnic_model::pcap::PcapError| DaemonError::Pcap {
                path: "output capture".into(),
                msg: e.to_string(),
            };
            for f in &r.tx {
                w.out.write_record(ts, f).map_err(perr)?;
            }
            if let Some(h) = r.host {
                if let Some(hp) = &mut w.host {
                    hp.write_record(ts, &h).map_err(perr)?;
                }
                let sent = match &mut self.host_tap {
                    Some(t) => t.send(&h).unwrap_or(false),
                    None => w.host.is_some(),
                };
                if !sent {
                    self.host_dropped += 1;
                }
            }
        }
        if w.pace == Pace::Step {
            w.budget = 0;
            w.until = None;
        }
        let done = was_running && w.next >= w.records.len();
        if n > 0 || done {
            // Captures on disk end on a record boundary between batches.
            self.flush()?;
        }
        if done {
            eprintln!("lvsnic daemon: capture done ({} frames)", self.ctl.counters().frames);
        }
        Ok(())
    }

    fn run_tap(&mut self, buf: &mut [u8]) -> Result<(), DaemonError> {
        for _ in 0..256 {
            let Wire::Tap(t) = &mut self.wire else { return Ok(()) };
            let n = match t.recv(buf).map_err(io_err(format!("reading {}", t.name())))? {
                None => return Ok(()),
                Some(n) => n,
            };
            let ts = sys::realtime_ns();
            let r = self.ctl.frame(ts, &buf[..n]).map_err(|e| DaemonError::Device(e.to_string()))?;
            let Wire::Tap(t) = &mut self.wire else { return Ok(()) };
            for f in &r.tx {
                if !t.send(f).map_err(io_err(format!("writing {}", t.name())))? {
                    self.tx_dropped += 1;
                }
            }
            if let Some(h) = r.host {
                match &mut self.host_tap {
                    Some(ht) => {
                        if !ht.send(&h).unwrap_or(false) {
                            self.host_dropped += 1;
                        }
                    }
                    None => self.host_dropped += 1,
                }
            }
        }
        Ok(())
    }

    /// What the director's own stack sends (on `--host-tap`, and the
    /// gratuitous ARPs due) goes out on the wire as the card transmitted it.
    fn run_host_tap_wire(&mut self, buf: &mut Vec<u8>) -> Result<(), DaemonError> {
        for f in self.due_garps() {
            self.host_frame_to_wire(&f)?;
        }
        self.host_tap_frames(buf, |d, frame| d.host_frame_to_wire(frame))
    }

    fn host_frame_to_wire(&mut self, frame: &[u8]) -> Result<(), DaemonError> {
        let f = self.ctl.host_tx_observed(frame).map_err(|e| DaemonError::Device(e.to_string()))?;
        match &mut self.wire {
            Wire::Tap(t) => {
                if !t.send(&f).unwrap_or(false) {
                    self.tx_dropped += 1;
                }
            }
            Wire::Pcap(w) => {
                let ts = self.ctl.director().now();
                w.out.write_record(ts, &f).map_err(|e| DaemonError::Pcap { path: "output".into(), msg: e.to_string() })?;
            }
            Wire::None => self.tx_dropped += 1,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_timeouts_follow_the_wire() {
        assert_eq!(Wire::None.poll_timeout(true), 1);
        assert_eq!(Wire::None.poll_timeout(false), 200);
        let dir = std::env::temp_dir().join(format!("lvsnic-wire-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("out.pcap");
        let rec = |t| PcapRecord { ts_ns: t, orig_len: 60, data: vec![0; 60] };
        let mut w = PcapWire {
            records: vec![rec(1), rec(2)],
            next: 0,
            out: pcap_out(&out).unwrap(),
            host: None,
            pace: Pace::Step,
            origin: None,
            budget: 0,
            until: None,
        };
        w.pace = Pace::Asap;
        let mut wire = Wire::Pcap(Box::new(w));
        assert_eq!(wire.poll_timeout(false), 0, "frames left, asap: no wait");
        if let Wire::Pcap(w) = &mut wire {
            w.pace = Pace::Step;
        }
        assert_eq!(wire.poll_timeout(false), 200, "step without a budget waits for a request");
        if let Wire::Pcap(w) = &mut wire {
            w.budget = 1;
        }
        assert_eq!(wire.poll_timeout(false), 0);
        if let Wire::Pcap(w) = &mut wire {
            w.next = 2;
        }
        assert_eq!(wire.poll_timeout(false), 200, "capture done");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
