//! systemd's service notification (sd_notify(3)) for the `Type=notify`
//! unit (packaging/lvsnic.service):
//!
//! * `READY=1` once the control socket answers, the state is restored and
//!   the rules are loaded (a unit ordered after lvsnic finds it serving);
//! * `WATCHDOG=1` from the forwarding loop itself, at half of the unit's
//!   `WatchdogSec=` (`$WATCHDOG_USEC`): a loop that stops turning stops
//!   the pings, and systemd kills and restarts the daemon, whose state
//!   directory brings the rules and connections back;
//! * `RELOADING=1` ... `READY=1` around a SIGHUP reload;
//! * `STOPPING=1` when the loop ends;
//! * `STATUS=` with the start line, for `systemctl status`.
//!
//! Nothing is sent when `$NOTIFY_SOCKET` is unset (the daemon was not
//! started by systemd). As sd_watchdog_enabled(3): the watchdog is on when
//! `$WATCHDOG_USEC` is a positive number and `$WATCHDOG_PID`, if set, is
//! this process. A notification that cannot be sent is counted, never an
//! error: the director forwards whether or not systemd hears it.

use sd_notify::NotifyState;
use std::time::{Duration, Instant};

/// The daemon's link to its service manager.
#[derive(Debug)]
pub struct Notifier {
    enabled: bool,
    /// Ping interval: half of `WatchdogSec=`.
    interval: Option<Duration>,
    next_ping: Instant,
    /// Notifications that could not be sent.
    pub failed: u64,
    /// Watchdog pings sent.
    pub pings: u64,
}

/// The watchdog's timeout from the environment, as sd_watchdog_enabled(3)
/// reads it (`pid`: this process).
pub fn watchdog_timeout(usec: Option<&str>, watchdog_pid: Option<&str>, pid: u32) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok().filter(|&u| u > 0)?;
    match watchdog_pid {
        Some(p) if p.trim().parse::<u32>().ok() != Some(pid) => None,
        _ => Some(Duration::from_micros(usec)),
    }
}

impl Notifier {
    /// From the environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`,
    /// `WATCHDOG_PID`).
    pub fn from_env() -> Notifier {
        let enabled = std::env::var_os("NOTIFY_SOCKET").is_some_and(|s| !s.is_empty());
        let timeout = watchdog_timeout(
            std::env::var("WATCHDOG_USEC").ok().as_deref(),
            std::env::var("WATCHDOG_PID").ok().as_deref(),
            std::process::id(),
        );
        Notifier { enabled, interval: timeout.map(|t| t / 2), next_ping: Instant::now(), failed: 0, pings: 0 }
    }

    /// Whether systemd is listening.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The watchdog ping interval, if the unit has a watchdog.
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.interval.filter(|_| self.enabled)
    }

    fn send(&mut self, states: &[NotifyState]) {
        if self.enabled && sd_notify::notify(false, states).is_err() {
            self.failed += 1;
        }
    }

    /// Serving: `READY=1` with `status` for `systemctl status`.
    pub fn ready(&mut self, status: &str) {
        self.send(&[NotifyState::Ready, NotifyState::Status(status)]);
        self.next_ping = Instant::now();
    }

    /// A reload begins (`RELOADING=1` with the monotonic time systemd
    /// asks for).
    pub fn reloading(&mut self) {
        match NotifyState::monotonic_usec_now() {
            Ok(t) => self.send(&[NotifyState::Reloading, t]),
            Err(_) => self.send(&[NotifyState::Reloading]),
        }
    }

    /// The loop is ending (`STOPPING=1`).
    pub fn stopping(&mut self) {
        self.send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
    }

    /// Called every loop turn: pings the watchdog when it is due.
    pub fn tick(&mut self, now: Instant) {
        let Some(iv) = self.watchdog_interval() else { return };
        if now >= self.next_ping {
            self.send(&[NotifyState::Watchdog]);
            self.pings += 1;
            self.next_ping = now + iv;
        }
    }

    /// The longest the loop may sleep in poll(2) and still ping in time
    /// (milliseconds), given the timeout it wanted.
    pub fn poll_timeout(&self, wanted_ms: i32, now: Instant) -> i32 {
        if self.watchdog_interval().is_none() {
            return wanted_ms;
        }
        let left = self.next_ping.saturating_duration_since(now).as_millis().min(i32::MAX as u128) as i32;
        if wanted_ms < 0 {
            left
        } else {
            wanted_ms.min(left)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_from_the_environment_as_sd_watchdog_enabled() {
        assert_eq!(watchdog_timeout(Some("10000000"), None, 7), Some(Duration::from_secs(10)));
        assert_eq!(watchdog_timeout(Some("10000000"), Some("7"), 7), Some(Duration::from_secs(10)));
        // Another process's watchdog (inherited by a child) is not ours.
        assert_eq!(watchdog_timeout(Some("10000000"), Some("8"), 7), None);
        assert_eq!(watchdog_timeout(Some("0"), None, 7), None);
        assert_eq!(watchdog_timeout(Some("ten"), None, 7), None);
        assert_eq!(watchdog_timeout(None, Some("7"), 7), None);
    }

    #[test]
    fn poll_sleeps_no_longer_than_the_next_ping() {
        let now = Instant::now();
        let mut n = Notifier { enabled: true, interval: Some(Duration::from_millis(500)), next_ping: now, failed: 0, pings: 0 };
        n.next_ping = now + Duration::from_millis(200);
        assert_eq!(n.poll_timeout(1000, now), 200);
        assert_eq!(n.poll_timeout(-1, now), 200);
        assert_eq!(n.poll_timeout(50, now), 50);
        // Without a watchdog the loop sleeps as it wanted.
        n.interval = None;
        assert_eq!(n.poll_timeout(1000, now), 1000);
        assert_eq!(n.poll_timeout(-1, now), -1);
    }
}
