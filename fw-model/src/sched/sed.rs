//! Shortest expected delay (`sed`), after `net/netfilter/ipvs/ip_vs_sed.c`
//! `ip_vs_sed_dest_overhead`, `ip_vs_sed_schedule`.
//!
//! Overhead is `activeconns + 1` (C `int`, inactive connections are ignored).
//! Stage 1: first server in list order that is not overloaded with weight > 0.
//! Stage 2 continues the walk, skipping only overloaded servers, and replaces
//! `least` when `(s64)loh * dest->weight > (s64)doh * least->weight` (strict:
//! ties stay with the earlier server). No deviation.

use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::{Dest, DestId};
use crate::rng::RandomSource;
use crate::time::Time;

/// Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sed;

/// `ip_vs_sed_dest_overhead` (also nq's): `activeconns + 1`, wrapping like
/// the kernel's int arithmetic.
#[inline]
pub(crate) fn expected_overhead(d: &Dest) -> i32 {
    d.activeconns.wrapping_add(1)
}

impl Scheduler for Sed {
    fn name(&self) -> &'static str {
        "sed"
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let mut it = svc.iter();
        let (mut least, mut lw, mut loh) = loop {
            let (id, d) = it.next()?;
            if !d.overloaded && d.weight > 0 {
                break (id, d.weight, expected_overhead(d));
            }
        };
        for (id, d) in it {
            if d.overloaded {
                continue;
            }
            let doh = expected_overhead(d);
            if (loh as i64) * (d.weight as i64) > (doh as i64) * (lw as i64) {
                least = id;
                lw = d.weight;
                loh = doh;
            }
        }
        Some(least)
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    /// (C+1)/W: A(w1, 0 active) = 1, B(w3, 1 active) = 2/3 -> B, although
    /// wlc would pick the idle A.
    #[test]
    fn includes_the_new_job() {
        let mut t = TestService::new("sed");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 3);
        t.set_conns(b, 1, 0);
        assert_eq!(t.pick(), Some(b));
        // B: 3/3 = 1 == A: 1/1 -> tie stays with B (first in list).
        t.set_conns(b, 2, 0);
        assert_eq!(t.pick(), Some(b));
        // B: 4/3 > 1 -> A.
        t.set_conns(b, 3, 0);
        assert_eq!(t.pick(), Some(a));
    }

    #[test]
    fn inactive_connections_ignored() {
        let mut t = TestService::new("sed");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        t.set_conns(b, 0, 1_000_000);
        t.set_conns(a, 0, 0);
        assert_eq!(t.pick(), Some(b));
    }

    #[test]
    fn skips_and_empty() {
        let mut t = TestService::new("sed");
        assert_eq!(t.pick(), None);
        let a = t.add(ip(1), 0);
        assert_eq!(t.pick(), None);
        let b = t.add(ip(2), 2);
        t.set_overloaded(b, true);
        assert_eq!(t.pick(), None);
        t.set_weight(a, 1);
        assert_eq!(t.pick(), Some(a));
    }

    /// Stage 2 does not skip weight 0 (as in wlc): with doh = activeconns + 1
    /// wrapped negative (activeconns = i32::MAX), `loh * 0 > doh * lw` holds.
    #[test]
    fn quiescent_server_with_wrapped_overhead_wins_stage_two() {
        let mut t = TestService::new("sed");
        let a = t.add(ip(1), 0);
        let b = t.add(ip(2), 1);
        assert_eq!(t.pick(), Some(b));
        t.set_conns(a, i32::MAX, 0);
        assert_eq!(t.pick(), Some(a));
    }
}
