//! `--changes FILE`: rule changes at capture times, for `lvsnic replay` and
//! `lvsnic conformance`.
//!
//! One change per line: `T ipvsadm-args`, where `T` is the time in seconds
//! after the capture's first frame and the arguments are one ipvsadm
//! command line (an optional leading `ipvsadm` word is dropped, as in
//! `ipvsadm -R` input), e.g.
//!
//! ```text
//! # weight 0 at 12.5 s, delete at 30 s
//! 12.5 -e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 0
//! 30 -d -t 10.0.0.100:80 -r 192.168.10.1:8080
//! ```
//!
//! Blank lines and lines starting with `#` are skipped (this file is
//! lvsnic's own, not ipvsadm input). Times must not decrease. Each line is
//! parsed by the same parser as the CLI and `-R` use; only rule changes
//! (`-A -E -D -C -a -e -d -Z --set`) are allowed. A change is applied before
//! the first frame stamped at or after its time; the VM side runs the same
//! arguments with the real ipvsadm at the same offset from the replay's
//! start.

use crate::control::Control;
use crate::device::Device;
use lvsnic_model::director::Director;
use lvsnic_model::rules::ipvsadm::{parse_command, split_line, Command};
use lvsnic_model::time::Time;
use std::net::IpAddr;
use std::path::Path;

/// A problem with a changes file or with applying one of its lines.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The changes file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line of the changes file does not parse, is not a rule change, or
    /// goes back in time.
    #[error("{path}: line {line}: {msg}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// The director refused a change when it was applied (as ipvsadm would print it).
    #[error("change at {secs} s (line {line}: \"{text}\"): {msg}")]
    Refused {
        /// 1-based line in the changes file.
        line: usize,
        /// The time as written (seconds after the first frame).
        secs: String,
        /// The ipvsadm arguments of the line, joined by spaces.
        text: String,
        /// Why the director refused it.
        msg: String,
    },
}

/// One line of a changes file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// 1-based line in the file.
    pub line: usize,
    /// The time as written (seconds after the first frame).
    pub secs: String,
    /// The same time in nanoseconds after the first frame.
    pub offset_ns: u64,
    /// The ipvsadm arguments, as words.
    pub args: Vec<String>,
    /// The arguments parsed as an ipvsadm command (a rule change).
    pub cmd: Command,
}

/// A whole changes file, applied in order as the replay's clock passes
/// each line's time.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    /// The changes in file order (times not decreasing).
    pub list: Vec<Change>,
    /// Capture time of the first frame (set by [`Changes::start`]).
    start: Time,
    next: usize,
}

/// `"12.5"` → 12_500_000_000 ns; at most 9 decimals, no sign, no exponent.
fn parse_secs(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) {
        return None;
    }
    let i: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let f: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().ok()? };
    i.checked_mul(1_000_000_000)?.checked_add(f)
}

impl Changes {
    /// Parses changes text; `path` only names the file in errors.
    pub fn parse(text: &str, path: &str) -> Result<Changes, ChangeError> {
        let mut list: Vec<Change> = Vec::new();
        for (i, raw) in text.split('\n').enumerate() {
            let line = i + 1;
            let bad = |msg: String| ChangeError::Invalid { path: path.to_string(), line, msg };
            let words = split_line(raw);
            if words.is_empty() || words[0].starts_with('#') {
                continue;
            }
            let secs = words[0];
            let offset_ns = parse_secs(secs).ok_or_else(|| bad(format!("`{secs}` is not a time in seconds")))?;
            if let Some(prev) = list.last() {
                if offset_ns < prev.offset_ns {
                    return Err(bad(format!("time {secs} is before the previous change's {}", prev.secs)));
                }
            }
            let args = &words[1..];
            if args.is_empty() {
                return Err(bad("no ipvsadm command after the time".into()));
            }
            let cmd = parse_command(args).map_err(|e| bad(format!("\"{}\": {e}", args.join(" "))))?;
            match cmd {
                Command::AddService(_)
                | Command::EditService(_)
                | Command::DeleteService(_)
                | Command::Clear
                | Command::AddDest(..)
                | Command::EditDest(..)
                | Command::DeleteDest(..)
                | Command::Zero(_)
                | Command::SetTimeouts { .. } => {}
                _ => return Err(bad(format!("\"{}\" is not a rule change", args.join(" ")))),
            }
            list.push(Change { line, secs: secs.to_string(), offset_ns, args: args.iter().map(|s| s.to_string()).collect(), cmd });
        }
        Ok(Changes { list, start: 0, next: 0 })
    }

    /// Reads and parses a changes file.
    pub fn load(path: &Path) -> Result<Changes, ChangeError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ChangeError::Io { path: p.clone(), source: e })?;
        Self::parse(&text, &p)
    }

    /// Anchors the offsets at the capture time of the first frame.
    pub fn start(&mut self, first_frame: Time) {
        self.start = first_frame;
        self.next = 0;
    }

    /// The changes due at `ts` that are not applied yet, with their
    /// absolute capture times; each is returned once.
    fn due(&mut self, ts: Time) -> Vec<(Time, Change)> {
        let mut v = Vec::new();
        while let Some(c) = self.list.get(self.next) {
            let at = self.start.saturating_add(c.offset_ns);
            if at > ts {
                break;
            }
            v.push((at, c.clone()));
            self.next += 1;
        }
        v
    }

    /// Applies to the golden model every change due at `ts` (the director's
    /// timers run up to each change's own time first).
    pub fn apply_golden(&mut self, d: &mut Director, ts: Time) -> Result<(), ChangeError> {
        for (at, c) in self.due(ts) {
            d.advance(at);
            let refused = |msg: String| ChangeError::Refused { line: c.line, secs: c.secs.clone(), text: c.args.join(" "), msg };
            let s = |e: lvsnic_model::director::DirectorError| e.to_string();
            let r: Result<(), String> = match &c.cmd {
                Command::AddService(rule) => d.add_service(rule).map(drop).map_err(s),
                Command::EditService(rule) => d.edit_service(rule).map_err(s),
                Command::DeleteService(key) => d.del_service(key).map_err(s),
                Command::Clear => {
                    d.clear();
                    Ok(())
                }
                Command::AddDest(key, dest) => d.add_dest(key, dest).map(drop).map_err(s),
                Command::EditDest(key, dest) => d.edit_dest(key, dest).map_err(s),
                Command::DeleteDest(key, IpAddr::V4(a), port) => d.del_dest(key, *a, *port).map_err(s),
                Command::Zero(key) => d.zero_stats(key.as_ref()).map_err(|e| e.to_string()),
                Command::SetTimeouts { tcp, tcpfin, udp } => {
                    d.cfg.timeouts.set(*tcp, *tcpfin, *udp);
                    Ok(())
                }
                Command::DeleteDest(..) => Err("No such destination".into()),
                _ => Err("not a rule change".into()),
            };
            r.map_err(refused)?;
        }
        Ok(())
    }

    /// Applies every change due at `ts` through the daemon's command path
    /// (`Control::ipvsadm`, which also updates the data plane's tables).
    pub fn apply_control<D: Device>(&mut self, ctl: &mut Control<D>, ts: Time) -> Result<(), ChangeError> {
        for (at, c) in self.due(ts) {
            ctl.advance(at);
            let out = ctl.ipvsadm("ipvsadm", &c.args, None);
            if out.exit != 0 {
                let msg = out.stderr.trim().replace('\n', " ");
                return Err(ChangeError::Refused { line: c.line, secs: c.secs, text: c.args.join(" "), msg });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_commands() {
        let c = Changes::parse(
            "# comment\n\n12.5 -e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 0\n30 ipvsadm -d -t 10.0.0.100:80 -r 192.168.10.1:8080\n",
            "C",
        )
        .unwrap();
        assert_eq!(c.list.len(), 2);
        assert_eq!((c.list[0].line, c.list[0].offset_ns), (3, 12_500_000_000));
        assert_eq!(c.list[1].args, ["-d", "-t", "10.0.0.100:80", "-r", "192.168.10.1:8080"]);
        assert!(matches!(c.list[1].cmd, Command::DeleteDest(..)));
        assert_eq!(parse_secs(".25"), Some(250_000_000));
        assert_eq!(parse_secs("0.000000001"), Some(1));
        for bad in ["-1", "1e3", "x", ".", "1.0000000001", ""] {
            assert_eq!(parse_secs(bad), None, "{bad}");
        }
    }

    #[test]
    fn errors_name_the_line() {
        let e = Changes::parse("1 -L -n\n", "C").unwrap_err().to_string();
        assert_eq!(e, "C: line 1: \"-L -n\" is not a rule change");
        let e = Changes::parse("2 -C\n1 -C\n", "C").unwrap_err().to_string();
        assert_eq!(e, "C: line 2: time 1 is before the previous change's 2");
        let e = Changes::parse("soon -C\n", "C").unwrap_err().to_string();
        assert_eq!(e, "C: line 1: `soon` is not a time in seconds");
        let e = Changes::parse("1\n", "C").unwrap_err().to_string();
        assert_eq!(e, "C: line 1: no ipvsadm command after the time");
        let e = Changes::parse("1 -a -t 10.0.0.1:80 -r 1.2.3.4 -w 2147483648\n", "C").unwrap_err().to_string();
        assert!(e.starts_with("C: line 1: \"-a -t 10.0.0.1:80 -r 1.2.3.4 -w 2147483648\": "), "{e}");
    }

    #[test]
    fn due_once_in_order() {
        let mut c = Changes::parse("1 -C\n1 -C\n2.5 -C\n", "C").unwrap();
        c.start(10_000_000_000);
        assert!(c.due(10_999_999_999).is_empty());
        let d = c.due(11_000_000_000);
        assert_eq!(d.iter().map(|(t, c)| (*t, c.line)).collect::<Vec<_>>(), [(11_000_000_000, 1), (11_000_000_000, 2)]);
        assert!(c.due(12_000_000_000).is_empty());
        assert_eq!(c.due(u64::MAX).len(), 1);
    }
}
