//! Overflow-connection (`ovf`), after `net/netfilter/ipvs/ip_vs_ovf.c`
//! `ip_vs_ovf_schedule`.
//!
//! The highest-weight server among those that are not overloaded, have
//! weight > 0 and have `activeconns <= weight` (the kernel skips a server
//! only when `activeconns > w`, so a server exactly at its weight is still
//! eligible). Ties go to the first in list order (`!h || w > hw`). Inactive
//! connections are not looked at. No deviation.

use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ovf;

impl Scheduler for Ovf {
    fn name(&self) -> &'static str {
        "ovf"
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let mut h: Option<DestId> = None;
        let mut hw = 0;
        for (id, d) in svc.iter() {
            let w = d.weight;
            if d.overloaded || d.activeconns > w || w == 0 {
                continue;
            }
            if h.is_none() || w > hw {
                h = Some(id);
                hw = w;
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    #[test]
    fn overflows_when_active_exceeds_weight() {
        let mut t = TestService::new("ovf");
        let a = t.add(ip(1), 3);
        let b = t.add(ip(2), 2);
        t.set_conns(a, 2, 100);
        assert_eq!(t.pick(), Some(a));
        t.set_conns(a, 3, 0);
        assert_eq!(t.pick(), Some(a), "activeconns == weight is still eligible");
        t.set_conns(a, 4, 0);
        assert_eq!(t.pick(), Some(b));
        t.set_conns(b, 3, 0);
        assert_eq!(t.pick(), None, "everyone above weight");
    }

    #[test]
    fn ties_first_in_list_and_skips() {
        let mut t = TestService::new("ovf");
        assert_eq!(t.pick(), None);
        let a = t.add(ip(1), 5);
        let b = t.add(ip(2), 5);
        let c = t.add(ip(3), 0);
        assert_eq!(t.pick(), Some(b));
        t.set_overloaded(b, true);
        assert_eq!(t.pick(), Some(a));
        let _ = c;
    }

    /// A quiescent server with activeconns <= 0 is still skipped (w == 0).
    #[test]
    fn quiescent_never() {
        let mut t = TestService::new("ovf");
        let a = t.add(ip(1), 0);
        t.set_conns(a, -1, 0);
        assert_eq!(t.pick(), None);
    }
}
