//! Time in the model: nanoseconds taken from packet timestamps.
//!
//! The kernel counts in jiffies; the model counts in nanoseconds, so a
//! timeout of `t` seconds is `t * SEC`. A timer armed at `now` with timeout
//! `t` fires at the first packet whose timestamp is `>= now + t`.

/// A point in time, in nanoseconds (pcap timestamps converted).
pub type Time = u64;

/// One second in [`Time`] units.
pub const SEC: Time = 1_000_000_000;

/// One millisecond in [`Time`] units.
pub const MSEC: Time = 1_000_000;

/// Seconds to [`Time`], saturating.
pub const fn secs(s: u64) -> Time {
    s.saturating_mul(SEC)
}
