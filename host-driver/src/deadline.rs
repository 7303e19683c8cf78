//! When a slice of control work on the forwarding loop ends: at its
//! deadline, or as soon as a frame waits on the loop's wire.
//!
//! The daemon's loop does the control plane's long work (a listing of 2M
//! connections, a `-C` of 10,000 services, the state file's snapshot of
//! the table) a slice at a time between batches of frames, each slice at
//! most [`CONTROL_BUDGET`](crate::daemon::CONTROL_BUDGET) long. A frame
//! that arrives during a slice waited for its end: during a `-L -n -c` of
//! 2M connections the ARP probe's median answer took 0.12 ms, against
//! 0.01 ms with no client. The kernel's IPVS forwards in softirq context,
//! which interrupts the process reading `/proc/net/ip_vs_conn` the moment
//! a packet arrives; the nearest a single thread gets is this: each time a
//! slice looks at the clock, it also looks at the wire (a `poll(2)` with
//! no timeout), and ends when a frame waits. A slice still does its first
//! batch of work whatever waits, so a flood slows control work down but
//! never stops it.
//!
//! The loop names its wire for its own thread ([`watch_wire`]); other
//! threads (replay, tests, the CLI's one-shot commands) watch nothing and
//! get plain deadlines.

use crate::sys;
use std::cell::Cell;
use std::os::fd::RawFd;
use std::time::Instant;

thread_local! {
    /// The wire this thread's slices give way to.
    static WIRE: Cell<Option<RawFd>> = const { Cell::new(None) };
}

/// From now on, slices of control work on the calling thread end early
/// when a frame is readable on `fd` (`None`: they never do).
pub fn watch_wire(fd: Option<RawFd>) {
    WIRE.with(|w| w.set(fd));
}

/// Whether a slice due to end at `until` should end now: the time has
/// come, or a frame waits on the calling thread's wire.
pub fn passed(until: Instant) -> bool {
    Instant::now() >= until || WIRE.with(Cell::get).is_some_and(sys::readable_now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;

    /// A slice with time left ends as soon as its thread's wire has a
    /// frame, not before, and never on another thread's wire.
    #[test]
    fn a_slice_ends_at_its_time_or_when_a_frame_waits() {
        let (rx, mut tx) = std::os::unix::net::UnixStream::pair().unwrap();
        let later = Instant::now() + Duration::from_secs(60);
        assert!(passed(Instant::now()), "its time has come");
        assert!(!passed(later), "no wire watched");
        watch_wire(Some(std::os::fd::AsRawFd::as_raw_fd(&rx)));
        assert!(!passed(later), "nothing waits");
        tx.write_all(b"frame").unwrap();
        assert!(passed(later), "a frame waits");
        let other = std::thread::spawn(move || passed(later)).join().unwrap();
        assert!(!other, "another thread does not watch this thread's wire");
        watch_wire(None);
        assert!(!passed(later));
    }
}
