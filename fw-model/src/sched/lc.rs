//! Least-connection (`lc`), after `net/netfilter/ipvs/ip_vs_lc.c`
//! `ip_vs_lc_schedule`.
//!
//! One walk over the list; servers that are overloaded or have weight 0 are
//! skipped; the server with the smallest `ip_vs_dest_conn_overhead`
//! (`(activeconns << 8) + inactconns`, C `int`) wins, compared as
//! **`unsigned int`** (`loh`/`doh` are unsigned in ip_vs_lc.c, so an
//! overhead that wrapped negative counts as huge). Ties go to the first server
//! in list order (strict `<`). No deviation.

use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lc;

impl Scheduler for Lc {
    fn name(&self) -> &'static str {
        "lc"
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let mut least: Option<DestId> = None;
        let mut loh: u32 = 0;
        for (id, d) in svc.iter() {
            if d.overloaded || d.weight == 0 {
                continue;
            }
            let doh = d.conn_overhead() as u32;
            if least.is_none() || doh < loh {
                least = Some(id);
                loh = doh;
            }
        }
        least
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    #[test]
    fn least_overhead_active_counts_256() {
        let mut t = TestService::new("lc");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        t.set_conns(a, 1, 0); // 256
        t.set_conns(b, 0, 255); // 255
        assert_eq!(t.pick(), Some(b));
        t.set_conns(b, 0, 257); // 257
        assert_eq!(t.pick(), Some(a));
    }

    #[test]
    fn weights_are_ignored_except_zero() {
        let mut t = TestService::new("lc");
        let a = t.add(ip(1), 100);
        let b = t.add(ip(2), 1);
        t.set_conns(a, 0, 5);
        t.set_conns(b, 0, 4);
        assert_eq!(t.pick(), Some(b));
        t.set_weight(b, 0);
        assert_eq!(t.pick(), Some(a));
    }

    #[test]
    fn ties_go_to_list_order_newest_first() {
        let mut t = TestService::new("lc");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let c = t.add(ip(3), 1);
        assert_eq!(t.pick(), Some(c));
        t.set_conns(c, 0, 1);
        assert_eq!(t.pick(), Some(b));
        let _ = a;
    }

    #[test]
    fn overloaded_quiescent_empty() {
        let mut t = TestService::new("lc");
        assert_eq!(t.pick(), None);
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 0);
        t.set_conns(a, 100, 0);
        assert_eq!(t.pick(), Some(a));
        t.set_overloaded(a, true);
        assert_eq!(t.pick(), None);
        let _ = b;
    }

    /// `(activeconns << 8)` is an int shift: 0x0080_0000 << 8 = 0x8000_0000,
    /// negative as int, 2^31 as the unsigned `loh`: loses to overhead 5.
    /// 0x0100_0000 << 8 wraps to 0: wins against overhead 5.
    #[test]
    fn overhead_wraps_like_c_and_compares_unsigned() {
        let mut t = TestService::new("lc");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        t.set_conns(a, 0, 5);
        t.set_conns(b, 0x0080_0000, 0);
        assert_eq!(t.pick(), Some(a));
        t.set_conns(b, 0x0100_0000, 0);
        assert_eq!(t.pick(), Some(b));
        t.set_conns(b, i32::MAX, i32::MAX);
        assert!(t.pick().is_some());
    }
}
