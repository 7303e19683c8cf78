//! Weighted fail-over (`fo`), after `net/netfilter/ipvs/ip_vs_fo.c`
//! `ip_vs_fo_schedule`.
//!
//! The non-overloaded server with the highest weight; `hw` starts at 0 and
//! the test is `weight > hw`, so weight-0 servers never win and ties go to the
//! first server in list order (the newest). No deviation.

use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fo;

impl Scheduler for Fo {
    fn name(&self) -> &'static str {
        "fo"
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let mut best = None;
        let mut hw = 0;
        for (id, d) in svc.iter() {
            if !d.overloaded && d.weight > hw {
                best = Some(id);
                hw = d.weight;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    #[test]
    fn highest_weight_regardless_of_load() {
        let mut t = TestService::new("fo");
        let a = t.add(ip(1), 10);
        let b = t.add(ip(2), 5);
        t.set_conns(a, 10_000, 0);
        assert_eq!(t.picks(3), [a, a, a].map(Some));
        t.set_overloaded(a, true);
        assert_eq!(t.pick(), Some(b));
    }

    #[test]
    fn tie_goes_to_first_in_list() {
        let mut t = TestService::new("fo");
        let a = t.add(ip(1), 7);
        let b = t.add(ip(2), 7);
        assert_eq!(t.pick(), Some(b));
        t.del(b);
        assert_eq!(t.pick(), Some(a));
    }

    #[test]
    fn none_cases() {
        let mut t = TestService::new("fo");
        assert_eq!(t.pick(), None);
        let a = t.add(ip(1), 0);
        assert_eq!(t.pick(), None, "weight 0 never wins");
        t.set_weight(a, 1);
        t.set_overloaded(a, true);
        assert_eq!(t.pick(), None);
    }
}
