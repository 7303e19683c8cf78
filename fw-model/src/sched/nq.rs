//! Never queue (`nq`), after `net/netfilter/ipvs/ip_vs_nq.c`
//! `ip_vs_nq_schedule`.
//!
//! One walk in list order, skipping servers that are overloaded or have
//! weight 0. The first such server with `activeconns == 0` is returned at
//! once. Otherwise the sed rule: overhead `activeconns + 1` (int), and a
//! server replaces `least` when `!least || (s64)loh * dest->weight >
//! (s64)doh * least->weight` (ties stay with the earlier server). No deviation.

use super::sed::expected_overhead;
use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Nq;

impl Scheduler for Nq {
    fn name(&self) -> &'static str {
        "nq"
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let mut least: Option<(DestId, i32, i32)> = None;
        for (id, d) in svc.iter() {
            if d.overloaded || d.weight == 0 {
                continue;
            }
            let doh = expected_overhead(d);
            if d.activeconns == 0 {
                return Some(id);
            }
            match least {
                Some((_, lw, loh)) if (loh as i64) * (d.weight as i64) <= (doh as i64) * (lw as i64) => {}
                _ => least = Some((id, d.weight, doh)),
            }
        }
        least.map(|(id, _, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    /// An idle server wins at once, even a light one late in the list.
    #[test]
    fn idle_server_first() {
        let mut t = TestService::new("nq");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 100);
        t.set_conns(b, 1, 0);
        assert_eq!(t.pick(), Some(a));
        // Two idle servers: the first in list order (newest).
        t.set_conns(b, 0, 50);
        assert_eq!(t.pick(), Some(b), "inactive connections do not count");
    }

    /// No idle server: sed rule. A(w1, 1 active): 2; B(w3, 2 active): 1.
    #[test]
    fn busy_servers_use_sed_rule() {
        let mut t = TestService::new("nq");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 3);
        t.set_conns(a, 1, 0);
        t.set_conns(b, 2, 0);
        assert_eq!(t.pick(), Some(b));
        // B: 6/3 == A: 2/1 -> tie stays with B (first in list).
        t.set_conns(b, 5, 0);
        assert_eq!(t.pick(), Some(b));
        t.set_conns(b, 6, 0);
        assert_eq!(t.pick(), Some(a));
    }

    #[test]
    fn skips_quiescent_and_overloaded_idle_servers() {
        let mut t = TestService::new("nq");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 0);
        let c = t.add(ip(3), 1);
        t.set_overloaded(c, true);
        t.set_conns(a, 7, 0);
        assert_eq!(t.pick(), Some(a), "idle B is quiescent, idle C overloaded");
        t.set_overloaded(a, true);
        assert_eq!(t.pick(), None);
        let _ = b;
    }

    #[test]
    fn empty() {
        let mut t = TestService::new("nq");
        assert_eq!(t.pick(), None);
    }
}
