//! Weighted round-robin (`wrr`), after `net/netfilter/ipvs/ip_vs_wrr.c`:
//! `ip_vs_wrr_gcd_weight`, `ip_vs_wrr_max_weight`, `ip_vs_wrr_init_svc`,
//! `ip_vs_wrr_dest_changed` (add/del/upd), `ip_vs_wrr_schedule`.
//!
//! State (`struct ip_vs_wrr_mark`): `cl` the current server or the list head,
//! `cw` the current weight, `mw` the maximum weight minus `(di - 1)`, `di` the
//! gcd of the positive weights (1 when there is none). A pick walks on from
//! `cl` and takes the first server that is not overloaded with
//! `weight >= cw`; each time the walk passes the end of the list `cw` drops by
//! `di`, and when it reaches 0 or less it restarts at `mw`. The `last_pass` /
//! `restarted` / `stop` logic ends a fruitless search after every server was
//! checked with `cw <= di` (i.e. effectively `weight >= 1`).
//!
//! `dest_changed` (every add, delete and edit) puts `cl` back on the list head,
//! recomputes `di`/`mw`, and keeps `cw` unless it is 0 or above the new `mw`
//! (then `cw = mw`), rounding it to `k*di + 1` when `di > 1`. Because the
//! scheduler is bound to an empty service and servers are added one by one,
//! `cw` is typically left small (e.g. 1) after the last add, so the very first
//! round starts low; see the test `kernel_sequence_for_4_3_2`.
//!
//! All arithmetic is C `int` (i32); no deviation. The walk only reads
//! positions; `cl` is stored as a list position (`None` = head), which is
//! valid between picks because every list change resets it to the head.

use super::hash::gcd;
use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// `struct ip_vs_wrr_mark`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wrr {
    /// Current server position, `None` = list head.
    cl: Option<usize>,
    /// Current weight.
    cw: i32,
    /// Maximum weight minus (di - 1).
    mw: i32,
    /// Decreasing interval: gcd of the positive weights, or 1.
    di: i32,
}

/// `ip_vs_wrr_gcd_weight`.
fn gcd_weight(svc: &SvcView) -> i32 {
    let mut g = 0;
    for (_, d) in svc.iter() {
        let w = d.weight;
        if w > 0 {
            g = if g > 0 { gcd(w, g) } else { w };
        }
    }
    if g != 0 {
        g
    } else {
        1
    }
}

/// `ip_vs_wrr_max_weight`.
fn max_weight(svc: &SvcView) -> i32 {
    svc.iter().map(|(_, d)| d.weight).fold(0, i32::max)
}

impl Wrr {
    /// `ip_vs_wrr_init_svc`.
    pub fn new(svc: &SvcView) -> Self {
        let di = gcd_weight(svc);
        let mw = max_weight(svc).wrapping_sub(di - 1);
        Wrr { cl: None, cw: mw, mw, di }
    }

    /// `ip_vs_wrr_dest_changed`.
    fn dest_changed(&mut self, svc: &SvcView) {
        self.cl = None;
        self.di = gcd_weight(svc);
        self.mw = max_weight(svc).wrapping_sub(self.di - 1);
        if self.cw > self.mw || self.cw == 0 {
            self.cw = self.mw;
        } else if self.di > 1 {
            self.cw = (self.cw / self.di).wrapping_mul(self.di).wrapping_add(1);
        }
    }
}

impl Scheduler for Wrr {
    fn name(&self) -> &'static str {
        "wrr"
    }

    fn add_dest(&mut self, svc: &SvcView, _id: DestId) {
        self.dest_changed(svc);
    }

    fn del_dest(&mut self, svc: &SvcView, _id: DestId, _former_pos: usize) {
        self.dest_changed(svc);
    }

    fn upd_dest(&mut self, svc: &SvcView, _id: DestId) {
        self.dest_changed(svc);
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let n = svc.order.len();
        // `dest = mark->cl` (a stale position is treated as the head).
        let mut dest: Option<usize> = match self.cl {
            Some(p) if p < n => Some(p),
            _ => None,
        };
        if self.mw == 0 {
            // err_noavail: cl = dest (unchanged).
            self.cl = dest;
            return None;
        }
        let last = dest;
        let mut stop: Option<usize> = None;
        let mut last_pass = false;
        let mut restarted = false;
        loop {
            // list_for_each_entry_continue_rcu(dest, &svc->destinations, ...)
            let from = dest.map_or(0, |p| p + 1);
            for pos in from..n {
                dest = Some(pos);
                let d = svc.dest(svc.order[pos]);
                if !d.overloaded && d.weight >= self.cw {
                    // found
                    self.cl = Some(pos);
                    return Some(svc.order[pos]);
                }
                if stop == Some(pos) {
                    // err_over
                    self.cl = dest;
                    return None;
                }
            }
            // The walk reached the list head.
            dest = None;
            self.cw = self.cw.wrapping_sub(self.di);
            if self.cw <= 0 {
                self.cw = self.mw;
                // Stop if the last pass was already made from the first
                // server, or the search started at the head.
                if last_pass || last.is_none() {
                    self.cl = dest;
                    return None;
                }
                restarted = true;
            }
            last_pass = self.cw <= self.di;
            if last_pass && restarted && last.is_some() {
                stop = last;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    /// Weights 4, 3, 2 added in the order A, B, C.
    ///
    /// Why `C B A A B A C B A` (repeating): the list is newest-first,
    /// `[C(2), B(3), A(4)]`. The service starts empty (`di=1, mw=0, cw=0`).
    /// Adding A(4): `di=4, mw=4-3=1`, `cw` was 0 so `cw=mw=1`. Adding B(3):
    /// `di=gcd(3,4)=1, mw=4`, `cw=1` is kept (not 0, not > mw, di == 1).
    /// Adding C(2): same, `cw=1`. So the first round runs with `cw=1` from the
    /// head: C, B, A (all weights >= 1). Passing the end drops `cw` to 0, which
    /// wraps to `mw=4`: A; then `cw=3`: B, A; `cw=2`: C, B, A; `cw=1`: C, B, A;
    /// and so on. The 9-pick window C B A | A | B A | C B A repeats exactly
    /// because the round with `cw=1` (C B A) ends every cycle and the cycle
    /// `A, B A, C B A, C B A` (4+3+2 = 9 picks) is entered right after it.
    #[test]
    fn kernel_sequence_for_4_3_2() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 4);
        let b = t.add(ip(2), 3);
        let c = t.add(ip(3), 2);
        let cycle = [c, b, a, a, b, a, c, b, a].map(Some);
        let got = t.picks(27);
        for (i, chunk) in got.chunks(9).enumerate() {
            assert_eq!(chunk, cycle, "cycle {i}");
        }
    }

    #[test]
    fn state_after_sequential_adds() {
        let mut t = TestService::new("wrr");
        t.add(ip(1), 4);
        t.add(ip(2), 3);
        t.add(ip(3), 2);
        let s = format!("{:?}", t.sched);
        assert!(s.contains("cl: None, cw: 1, mw: 4, di: 1"), "{s}");
    }

    /// `ipvsadm -E -s wrr` on an existing list: `init_service` sets `cw = mw`,
    /// so the cycle starts with the heaviest server.
    #[test]
    fn init_on_full_list_starts_at_max_weight() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 4);
        let b = t.add(ip(2), 3);
        let c = t.add(ip(3), 2);
        t.switch_scheduler("wrr");
        let cycle = [a, b, a, c, b, a, c, b, a].map(Some);
        assert_eq!(t.picks(9), cycle);
        assert_eq!(t.picks(9), cycle);
    }

    /// gcd: weights 4 and 2 behave as 2 and 1. Derivation: after adding A(4)
    /// (`di=4, mw=1, cw=1`) and B(2) (`di=2, mw=4-1=3`, `cw=1` kept: `(1/2)*2+1=1`),
    /// list `[B, A]`: cw=1: B, A; wrap (cw=-1 -> 3): A; cw=1: B, A; ...
    #[test]
    fn gcd_scaling() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 4);
        let b = t.add(ip(2), 2);
        assert_eq!(t.picks(9), [b, a, a, b, a, a, b, a, a].map(Some));
    }

    /// Overloaded servers are skipped; the other two keep their 3:2 ratio.
    /// State after the adds: cw=1, list [C(2), B(3), A(4)], A overloaded.
    /// cw=1: C, B; end -> cw=4 (restart): nobody; cw=3: B; cw=2: C, B;
    /// cw=1: C, B; end -> cw=4: nobody; cw=3: B; ...
    #[test]
    fn overloaded_skipped() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 4);
        let b = t.add(ip(2), 3);
        let c = t.add(ip(3), 2);
        t.set_overloaded(a, true);
        let got = t.picks(12);
        assert_eq!(got, [c, b, b, c, b, c, b, b, c, b, c, b].map(Some));
    }

    /// All overloaded: None, with `cl` left where the search stopped and `cw`
    /// back at 1 (the last pass); clearing the flags resumes from there.
    #[test]
    fn all_overloaded_then_recover() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 4);
        let b = t.add(ip(2), 3);
        let c = t.add(ip(3), 2);
        assert_eq!(t.picks(2), [c, b].map(Some)); // cl on B, cw = 1
        for id in [a, b, c] {
            t.set_overloaded(id, true);
        }
        assert_eq!(t.pick(), None);
        assert_eq!(t.pick(), None);
        for id in [a, b, c] {
            t.set_overloaded(id, false);
        }
        // From B with cw=1: A; end -> cw=4: A; cw=3: B, A; ...
        assert_eq!(t.picks(4), [a, a, b, a].map(Some));
    }

    #[test]
    fn empty_and_all_quiescent() {
        let mut t = TestService::new("wrr");
        assert_eq!(t.pick(), None);
        let a = t.add(ip(1), 0);
        let b = t.add(ip(2), 0);
        assert_eq!(t.pick(), None);
        // mw == 0 exits before touching anything.
        t.set_weight(a, 2);
        assert_eq!(t.picks(3), [a, a, a].map(Some));
        let _ = b;
    }

    /// One quiescent server among others is never picked.
    #[test]
    fn quiescent_skipped() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 0);
        let c = t.add(ip(3), 1);
        assert_eq!(t.picks(4), [c, a, c, a].map(Some));
        let _ = b;
    }

    /// Deleting a server resets the cursor to the head and recomputes mw/di;
    /// cw is kept when still valid.
    #[test]
    fn delete_mid_stream_resets_cursor() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 4);
        let b = t.add(ip(2), 3);
        let c = t.add(ip(3), 2);
        // C B A A B : now cl = B, cw = 3.
        assert_eq!(t.picks(5), [c, b, a, a, b].map(Some));
        t.del(c);
        // dest_changed: cl = head, di = 1, mw = 4, cw = 3 kept.
        // list [B(3), A(4)]: cw=3: B, A; cw=2: B, A; cw=1: B, A; cw=4: A; ...
        assert_eq!(t.picks(7), [b, a, b, a, b, a, a].map(Some));
    }

    /// Editing a weight resets the cursor; a cw above the new mw is clamped.
    #[test]
    fn weight_edit_resets_state() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 4);
        let b = t.add(ip(2), 3);
        let c = t.add(ip(3), 2);
        assert_eq!(t.picks(4), [c, b, a, a].map(Some)); // cw = 4, cl = A
        t.set_weight(a, 1);
        // di = 1, mw = 3, cw = 4 > 3 -> cw = 3, cl = head.
        // list [C(2), B(3), A(1)]: cw=3: B; cw=2: C, B; cw=1: C, B, A; cw=3: B ...
        assert_eq!(t.picks(7), [b, c, b, c, b, a, b].map(Some));
    }

    /// With di > 1 a kept cw is rounded to k*di + 1.
    #[test]
    fn cw_rounding_with_gcd() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 6);
        let b = t.add(ip(2), 3);
        t.switch_scheduler("wrr"); // di = 3, mw = 6 - 2 = 4, cw = 4
        // list [B(3), A(6)]: cw=4: A; cw=1: B, A; cw=4: A ...
        assert_eq!(t.picks(4), [a, b, a, a].map(Some));
        // now cl = A, cw = 4. Add C(9): di = 3, mw = 9 - 2 = 7; cw = 4 kept
        // and rounded: (4/3)*3 + 1 = 4.
        let c = t.add(ip(3), 9);
        // list [C(9), B(3), A(6)]: cw=4: C, A; cw=1: C, B, A; cw=7: C; cw=4: C, A; ...
        assert_eq!(t.picks(8), [c, a, c, b, a, c, c, a].map(Some));
    }

    #[test]
    fn huge_weights_do_not_panic() {
        let mut t = TestService::new("wrr");
        let a = t.add(ip(1), 65535);
        let b = t.add(ip(2), 65534);
        // gcd 1, mw 65535: A alone for cw=65535, then B, A, ...
        assert_eq!(t.picks(3), [b, a, a].map(Some));
        let got = t.picks(1000);
        assert!(got.iter().all(|x| x.is_some()));
    }
}
