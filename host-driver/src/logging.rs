//! The daemon's event log: what an operator needs for a post-mortem or an
//! alert, one structured line per event, as keepalived logs its checker,
//! quorum and VRRP events. Each line is logfmt (`event=NAME key=value
//! ...`, values quoted when they hold spaces, quotes or `=`), sent through
//! the `log` facade at a level `lvsnic daemon --log-level` chooses:
//!
//! | event | level | when |
//! |---|---|---|
//! | `daemon_start`, `daemon_stop`, `reload` | info | the daemon starts, stops, reloads (SIGHUP or `lvsnic reload`) |
//! | `rule_change` | info | a request changed the rules: who (`uid`, `pid` from `SO_PEERCRED`, or `health`/`reload`), the command, its exit status |
//! | `checker_up`, `checker_down` | warn (down), info (up) | a checker's verdict changed, with its reason |
//! | `quorum_up`, `quorum_down` | warn (down), info (up) | a virtual server gained or lost its quorum |
//! | `sorry_server_in`, `sorry_server_out` | warn (in), info (out) | the sorry server became the pool, or left it |
//! | `vip_master`, `vip_backup` | info | this director took or released a VIP |
//! | `sync_start`, `sync_stop` | info | a sync daemon started or stopped |
//! | `sync_loss`, `table_full`, `rate_limited` | warn at onset, info at the end | datagrams lost, flows not offloaded, new connections dropped (checked once a second: one line when it begins, one when a second passes without more) |
//!
//! Under systemd (`$JOURNAL_STREAM` set: standard error is the journal)
//! each line starts with its syslog priority (`<4>`, `<6>`), which journald
//! turns into the entry's priority (`journalctl -u lvsnic -p warning`);
//! elsewhere it reads `lvsnic daemon: LEVEL: event=...` on standard error.

use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;

/// The logger the daemon installs.
struct Logger {
    level: LevelFilter,
    journal: bool,
}

/// The syslog priority of a level (sd-daemon(3)'s `<N>` prefixes).
fn priority(l: Level) -> u8 {
    match l {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    }
}

/// One line as written: the journal's priority prefix, or the program
/// and level.
pub fn line(level: Level, journal: bool, msg: &str) -> String {
    if journal {
        format!("<{}>{msg}\n", priority(level))
    } else {
        format!("lvsnic daemon: {}: {msg}\n", level.as_str().to_lowercase())
    }
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        m.level() <= self.level
    }

    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        // One write per line: lines of threads do not interleave.
        let _ = std::io::stderr().lock().write_all(line(r.level(), self.journal, &r.args().to_string()).as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// Installs the daemon's logger at `level` (once per process; a second
/// call keeps the first logger and only changes the level).
pub fn init(level: LevelFilter) {
    let journal = std::env::var_os("JOURNAL_STREAM").is_some_and(|s| !s.is_empty());
    let _ = log::set_boxed_logger(Box::new(Logger { level, journal }));
    log::set_max_level(level);
}

/// A logfmt value: bare when it is a plain word, else quoted with `"` and
/// `\` escaped (control characters as `\n`, `\t` or `\u{..}`).
pub fn value(v: &str) -> String {
    let plain = !v.is_empty() && v.chars().all(|c| c.is_ascii_graphic() && c != '"' && c != '=' && c != '\\');
    if plain {
        return v.to_string();
    }
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            c if c.is_control() => s.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// `event=NAME k1=v1 k2=v2 ...`.
pub fn format(event: &str, fields: &[(&str, &str)]) -> String {
    let mut s = format!("event={event}");
    for (k, v) in fields {
        s.push(' ');
        s.push_str(k);
        s.push('=');
        s.push_str(&value(v));
    }
    s
}

/// Logs event `event` with `fields` at `level`.
pub fn event(level: Level, event: &str, fields: &[(&str, &str)]) {
    if log::log_enabled!(level) {
        log::log!(level, "{}", format(event, fields));
    }
}

/// A counter watched for the onset and the end of a condition (table full,
/// rate limiting, sync losses), sampled once a second: `Some(true)` when
/// it starts to grow, `Some(false)` when a sample finds it still.
#[derive(Debug, Default)]
pub struct Onset {
    last: u64,
    /// The counter when the condition began.
    since: u64,
    active: bool,
}

impl Onset {
    /// A new sample: the change of state, if any, and the count since the
    /// onset.
    pub fn sample(&mut self, now: u64) -> Option<(bool, u64)> {
        let grew = now > self.last;
        self.last = now;
        match (self.active, grew) {
            (false, true) => {
                self.active = true;
                Some((true, now - self.since.min(now)))
            }
            (true, false) => {
                self.active = false;
                let n = now - self.since.min(now);
                self.since = now;
                Some((false, n))
            }
            (false, false) => {
                self.since = now;
                None
            }
            (true, true) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logfmt_values_are_bare_words_or_quoted() {
        assert_eq!(value("10.0.0.100:80"), "10.0.0.100:80");
        assert_eq!(value("connection refused"), "\"connection refused\"");
        assert_eq!(value(""), "\"\"");
        assert_eq!(value("a=b"), "\"a=b\"");
        assert_eq!(value("say \"hi\"\\n"), "\"say \\\"hi\\\"\\\\n\"");
        assert_eq!(value("line\nnext\t\u{7}"), "\"line\\nnext\\t\\u{7}\"");
        assert_eq!(
            format("checker_down", &[("vs", "TCP 10.0.0.100:80"), ("rs", "192.168.10.1:80")]),
            "event=checker_down vs=\"TCP 10.0.0.100:80\" rs=192.168.10.1:80"
        );
    }

    #[test]
    fn journal_lines_carry_the_syslog_priority() {
        assert_eq!(line(Level::Warn, true, "event=x"), "<4>event=x\n");
        assert_eq!(line(Level::Info, true, "event=x"), "<6>event=x\n");
        assert_eq!(line(Level::Error, false, "event=x"), "lvsnic daemon: error: event=x\n");
    }

    #[test]
    fn onsets_and_ends_once_each() {
        let mut o = Onset::default();
        assert_eq!(o.sample(0), None);
        assert_eq!(o.sample(0), None);
        // Starts growing: one onset, then quiet while it grows.
        assert_eq!(o.sample(5), Some((true, 5)));
        assert_eq!(o.sample(9), None);
        assert_eq!(o.sample(20), None);
        // A second without growth: the end, with the count since the onset.
        assert_eq!(o.sample(20), Some((false, 20)));
        assert_eq!(o.sample(20), None);
        assert_eq!(o.sample(23), Some((true, 3)));
        assert_eq!(o.sample(23), Some((false, 3)));
    }
}
