//! The IPVS rate estimator (`net/netfilter/ipvs/ip_vs_est.c`): what
//! `ipvsadm -L --rate` shows (CPS, InPPS, OutPPS, InBPS, OutBPS).
//!
//! Every [`EST_PERIOD`] (2 s, the kernel's estimation interval) each
//! service, each real server and the director's totals take the difference
//! of their counters since the previous tick and fold it into an
//! exponentially weighted average with weight 1/4 (`ip_vs_chain_estimation`,
//! older kernels `estimation_timer`):
//!
//! ```text
//! rate = (conns   - last_conns)   << 9     // per second, scaled by 2^10
//! cps += (rate - cps) >> 2                 // signed, arithmetic shift
//! rate = (inbytes - last_inbytes) << 4     // per second, scaled by 2^5
//! inbps += (rate - inbps) >> 2
//! ```
//!
//! and reads back rounded (`ip_vs_read_estimator`): `(cps + 0x1FF) >> 10`
//! for the connection and packet rates, `(bps + 0xF) >> 5` for the byte
//! rates. `ipvsadm -Z` takes the current counters as the new reference and
//! zeroes the averages (`ip_vs_zero_estimator`).
//!
//! In the model the ticks are driven by packet timestamps: they fall at
//! `start + k × 2 s` (the director's start time), a tick at time `t` sees
//! every packet stamped before `t`.

use super::Stats;
use crate::time::{Time, SEC};

/// The estimation interval (`2 * HZ`).
pub const EST_PERIOD: Time = 2 * SEC;

/// `struct ip_vs_estimator`: the counters at the previous tick and the
/// scaled averages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimator {
    last: Stats,
    /// Connections per second × 2^10.
    pub cps: u64,
    /// Packets per second × 2^10, in and out.
    pub inpps: u64,
    /// Packets per second × 2^10, out.
    pub outpps: u64,
    /// Bytes per second × 2^5, in and out.
    pub inbps: u64,
    /// Bytes per second × 2^5, out.
    pub outbps: u64,
}

/// Rates as `ip_vs_read_estimator` rounds them (per second).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Rates {
    /// Connections per second.
    pub cps: u64,
    /// Packets per second, client → real server.
    pub inpps: u64,
    /// Packets per second, real server → client.
    pub outpps: u64,
    /// Bytes per second, client → real server.
    pub inbps: u64,
    /// Bytes per second, real server → client.
    pub outbps: u64,
}

/// `avg += ((s64)rate - (s64)avg) >> 2` on the kernel's u64 fields.
fn ewma(avg: u64, rate: u64) -> u64 {
    avg.wrapping_add(((rate as i64).wrapping_sub(avg as i64) >> 2) as u64)
}

impl Estimator {
    /// An estimator whose reference is `now` (a service or server that
    /// starts with counters already non-zero).
    pub fn starting_at(now: &Stats) -> Self {
        Estimator { last: *now, ..Default::default() }
    }

    /// One estimation tick over the counters `s`; returns whether any
    /// average is non-zero afterwards (an idle estimator stays idle until
    /// its counters move).
    pub fn tick(&mut self, s: &Stats) -> bool {
        let l = &mut self.last;
        self.cps = ewma(self.cps, s.conns.wrapping_sub(l.conns) << 9);
        self.inpps = ewma(self.inpps, s.inpkts.wrapping_sub(l.inpkts) << 9);
        self.outpps = ewma(self.outpps, s.outpkts.wrapping_sub(l.outpkts) << 9);
        self.inbps = ewma(self.inbps, s.inbytes.wrapping_sub(l.inbytes) << 4);
        self.outbps = ewma(self.outbps, s.outbytes.wrapping_sub(l.outbytes) << 4);
        *l = *s;
        self.cps | self.inpps | self.outpps | self.inbps | self.outbps != 0
    }

    /// `ip_vs_zero_estimator`: the counters `now` become the reference and
    /// the averages restart from zero.
    pub fn zero(&mut self, now: &Stats) {
        *self = Self::starting_at(now);
    }

    /// `ip_vs_read_estimator`.
    pub fn read(&self) -> Rates {
        Rates {
            cps: self.cps.wrapping_add(0x1FF) >> 10,
            inpps: self.inpps.wrapping_add(0x1FF) >> 10,
            outpps: self.outpps.wrapping_add(0x1FF) >> 10,
            inbps: self.inbps.wrapping_add(0xF) >> 5,
            outbps: self.outbps.wrapping_add(0xF) >> 5,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(conns: u64, inpkts: u64, outpkts: u64, inbytes: u64, outbytes: u64) -> Stats {
        Stats { conns, inpkts, outpkts, inbytes, outbytes }
    }

    #[test]
    fn steady_rate_converges_to_the_true_rate() {
        // 100 conn/s, 1000 pkt/s in, 500 out, 64 kB/s in, 1 MB/s out, for
        // 80 ticks: the average approaches the rate from below and stops
        // within 3 of it (the shift truncates).
        let mut e = Estimator::default();
        let mut s = Stats::default();
        for _ in 0..80 {
            s = stats(s.conns + 200, s.inpkts + 2000, s.outpkts + 1000, s.inbytes + 128_000, s.outbytes + 2_000_000);
            e.tick(&s);
        }
        assert_eq!(e.read(), Rates { cps: 100, inpps: 1000, outpps: 500, inbps: 64_000, outbps: 1_000_000 });
    }

    #[test]
    fn first_ticks_by_hand() {
        // 10 connections in the first 2 s: rate = 10 << 9 = 5120,
        // cps = 0 + (5120 - 0) >> 2 = 1280, read (1280 + 511) >> 10 = 1.
        let mut e = Estimator::default();
        e.tick(&stats(10, 0, 0, 0, 0));
        assert_eq!(e.cps, 1280);
        assert_eq!(e.read().cps, 1);
        // Nothing new: cps = 1280 + (0 - 1280) >> 2 = 960, read 1.
        e.tick(&stats(10, 0, 0, 0, 0));
        assert_eq!(e.cps, 960);
        assert_eq!(e.read().cps, 1);
        // 100 bytes: rate = 100 << 4 = 1600, inbps = 400, read (400+15)>>5 = 12.
        e.tick(&stats(10, 0, 0, 100, 0));
        assert_eq!(e.inbps, 400);
        assert_eq!(e.read().inbps, 12);
    }

    #[test]
    fn decay_is_signed_and_reaches_zero() {
        let mut e = Estimator::default();
        e.tick(&stats(1000, 1000, 1000, 1000, 1000));
        let mut ticks = 0;
        while e.tick(&stats(1000, 1000, 1000, 1000, 1000)) {
            ticks += 1;
            assert!(ticks < 200, "the average never reached zero");
        }
        assert_eq!(e.read(), Rates::default());
        assert_eq!(e, Estimator::starting_at(&stats(1000, 1000, 1000, 1000, 1000)));
    }

    #[test]
    fn zero_takes_the_counters_as_reference() {
        let mut e = Estimator::default();
        e.tick(&stats(50, 50, 50, 50, 50));
        e.zero(&stats(50, 50, 50, 50, 50));
        assert_eq!(e.read(), Rates::default());
        // The next tick only sees what came after the zeroing.
        e.tick(&stats(54, 50, 50, 50, 50));
        assert_eq!(e.cps, (4 << 9) >> 2);
    }
}
