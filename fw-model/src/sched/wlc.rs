//! Weighted least-connection (`wlc`, ipvsadm's default), after
//! `net/netfilter/ipvs/ip_vs_wlc.c` `ip_vs_wlc_schedule`.
//!
//! Stage 1: the first server in list order that is not overloaded and has
//! weight > 0 becomes `least`, `loh = ip_vs_dest_conn_overhead(least)` (C
//! `int`). Stage 2 continues the walk from there, skipping **only overloaded**
//! servers (a weight-0 server is not skipped, it just cannot win unless its
//! overhead wrapped negative), and replaces `least` when
//! `(s64)loh * dest->weight > (s64)doh * least->weight` (strict, so ties stay
//! with the earlier server). One walk over the list. No deviation.
//!
//! [`least_weighted`] is shared with lblc/lblcr (`__ip_vs_lblc_schedule`,
//! `__ip_vs_lblcr_schedule` are the same algorithm).

use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wlc;

/// The wlc selection over the whole service list (see module docs).
pub fn least_weighted(svc: &SvcView) -> Option<DestId> {
    let mut it = svc.iter();
    let (mut least, mut lw, mut loh) = loop {
        let (id, d) = it.next()?;
        if !d.overloaded && d.weight > 0 {
            break (id, d.weight, d.conn_overhead());
        }
    };
    for (id, d) in it {
        if d.overloaded {
            continue;
        }
        let doh = d.conn_overhead();
        if (loh as i64) * (d.weight as i64) > (doh as i64) * (lw as i64) {
            least = id;
            lw = d.weight;
            loh = doh;
        }
    }
    Some(least)
}

impl Scheduler for Wlc {
    fn name(&self) -> &'static str {
        "wlc"
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        least_weighted(svc)
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    #[test]
    fn overhead_per_weight() {
        let mut t = TestService::new("wlc");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 3);
        // A: 256/1, B: 512/3 -> B.
        t.set_conns(a, 1, 0);
        t.set_conns(b, 2, 0);
        assert_eq!(t.pick(), Some(b));
        // B: 1024/3 = 341.3 > 256 -> A.
        t.set_conns(b, 4, 0);
        assert_eq!(t.pick(), Some(a));
    }

    /// Equal load per weight: the earlier server in the list keeps it
    /// (strict `>`): list [B, A], B 512/2 == A 256/1.
    #[test]
    fn tie_stays_with_list_order() {
        let mut t = TestService::new("wlc");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 2);
        t.set_conns(a, 1, 0);
        t.set_conns(b, 2, 0);
        assert_eq!(t.pick(), Some(b));
        // all idle: first in list (the newest).
        t.set_conns(a, 0, 0);
        t.set_conns(b, 0, 0);
        assert_eq!(t.pick(), Some(b));
    }

    #[test]
    fn inactive_counts_one_256th() {
        let mut t = TestService::new("wlc");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        t.set_conns(b, 0, 256); // 256 == A's 1 active
        t.set_conns(a, 1, 0);
        assert_eq!(t.pick(), Some(b), "tie -> first in list (B)");
        t.set_conns(b, 0, 257);
        assert_eq!(t.pick(), Some(a));
    }

    #[test]
    fn first_stage_skips_quiescent_and_overloaded() {
        let mut t = TestService::new("wlc");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 0);
        let c = t.add(ip(3), 5);
        t.set_overloaded(c, true);
        t.set_conns(a, 1000, 0);
        assert_eq!(t.pick(), Some(a));
        t.set_overloaded(a, true);
        assert_eq!(t.pick(), None);
        let _ = b;
    }

    #[test]
    fn empty_and_all_zero() {
        let mut t = TestService::new("wlc");
        assert_eq!(t.pick(), None);
        t.add(ip(1), 0);
        t.add(ip(2), 0);
        assert_eq!(t.pick(), None);
    }

    /// Kernel quirk: stage 2 does not skip weight 0. `loh * 0 > doh * lw`
    /// holds when doh is negative: activeconns 0x0080_0000 gives overhead
    /// `0x0080_0000 << 8 = i32::MIN`, so the quiescent server wins.
    #[test]
    fn quiescent_server_with_wrapped_overhead_wins_stage_two() {
        let mut t = TestService::new("wlc");
        let a = t.add(ip(1), 0);
        let b = t.add(ip(2), 1);
        // list [B, A]: B is least after stage 1.
        t.set_conns(b, 0, 10);
        assert_eq!(t.pick(), Some(b));
        t.set_conns(a, 0x0080_0000, 0);
        assert_eq!(t.pick(), Some(a));
    }

    /// The products are 64-bit. List [B, A]; B: weight 1, 10000 active ->
    /// loh 2_560_000; A: weight 65535, 2_000_000 active -> 512_000_000.
    /// 2_560_000 * 65535 = 167_769_600_000 > 512_000_000 * 1 -> A. In 32-bit
    /// arithmetic the left side would wrap to 265_875_456 and B would stay.
    #[test]
    fn products_are_64_bit() {
        let mut t = TestService::new("wlc");
        let a = t.add(ip(1), 65535);
        let b = t.add(ip(2), 1);
        t.set_conns(a, 2_000_000, 0);
        t.set_conns(b, 10_000, 0);
        assert_eq!(t.pick(), Some(a));
        assert_eq!((2_560_000i64 * 65535) as i32, 265_875_456);
        let _ = b;
    }

    #[test]
    fn counters_near_max_do_not_panic() {
        let mut t = TestService::new("wlc");
        let a = t.add(ip(1), 65535);
        let b = t.add(ip(2), 65535);
        t.set_conns(a, i32::MAX, i32::MAX);
        t.set_conns(b, i32::MIN, i32::MAX);
        assert!(t.pick().is_some());
    }
}
