//! Round-robin (`rr`), after `net/netfilter/ipvs/ip_vs_rr.c`:
//! `ip_vs_rr_init_svc`, `ip_vs_rr_del_dest`, `ip_vs_rr_schedule`.
//!
//! * The cursor (`svc->sched_data`) points at the list head after
//!   `init_service`, so the first pick is the first server in list order, i.e.
//!   the **newest** one: servers added A, B, C are picked C, B, A, C, B, A, ...
//! * A pick walks on from the server after the cursor, wrapping once, and takes
//!   the first server that is not `IP_VS_DEST_F_OVERLOAD` and has weight > 0;
//!   the cursor itself is checked last. The cursor moves to the pick. When no
//!   server qualifies the cursor stays where it was.
//! * `add_dest` is not implemented by the kernel: a new server goes to the
//!   head; the cursor keeps pointing at the same server (or at the head, in
//!   which case the new server is next).
//! * `del_dest`: if the cursor is on the deleted server it moves to that
//!   server's predecessor (or the head), so the next pick is the server that
//!   followed the deleted one.
//!
//! The cursor is kept as a list position (`None` = list head) and adjusted on
//! add/del to keep pointing at the same server, which is what the kernel's
//! `list_head` pointer does. No deviation.

use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// Round-robin state: the cursor.
#[derive(Clone, Debug)]
pub struct Rr {
    /// Position of the last pick in the list; `None` is the list head.
    cursor: Option<usize>,
}

impl Rr {
    /// `ip_vs_rr_init_svc`: cursor at the list head.
    pub fn new(_svc: &SvcView) -> Self {
        Rr { cursor: None }
    }
}

impl Scheduler for Rr {
    fn name(&self) -> &'static str {
        "rr"
    }

    fn add_dest(&mut self, _svc: &SvcView, _id: DestId) {
        // The new server is at index 0; the cursor's server moved one down.
        if let Some(p) = self.cursor {
            self.cursor = Some(p + 1);
        }
    }

    fn del_dest(&mut self, _svc: &SvcView, _id: DestId, former_pos: usize) {
        // ip_vs_rr_del_dest: `if (p == &dest->n_list) sched_data = p->next->prev`,
        // i.e. the deleted server's predecessor (or the head).
        if let Some(p) = self.cursor {
            self.cursor = if p == former_pos {
                former_pos.checked_sub(1)
            } else if p > former_pos {
                Some(p - 1)
            } else {
                Some(p)
            };
        }
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let n = svc.order.len();
        // A cursor past the end (list changed without a callback) is treated
        // as the head.
        let start = match self.cursor {
            Some(p) if p < n => Some(p),
            _ => None,
        };
        // Walk: positions after the cursor to the end, then (if the cursor is
        // not the head) from the first server up to and including the cursor.
        let first = start.map_or(0, |p| p + 1);
        for k in 0..n {
            let pos = (first + k) % n;
            let d = svc.dest(svc.order[pos]);
            if !d.overloaded && d.weight > 0 {
                self.cursor = Some(pos);
                return Some(svc.order[pos]);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};

    #[test]
    fn newest_first_order() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let c = t.add(ip(3), 1);
        // list is [C, B, A]; cursor starts at the head.
        let got = t.picks(7);
        let want = [c, b, a, c, b, a, c].map(Some);
        assert_eq!(got, want);
    }

    #[test]
    fn weight_is_only_a_gate() {
        // rr ignores weight magnitudes: 100 and 1 alternate.
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 100);
        let b = t.add(ip(2), 1);
        assert_eq!(t.picks(4), [b, a, b, a].map(Some));
    }

    #[test]
    fn skips_quiescent_and_overloaded() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 0);
        let c = t.add(ip(3), 1);
        t.set_overloaded(c, true);
        assert_eq!(t.picks(3), [a, a, a].map(Some));
        t.set_overloaded(c, false);
        // cursor is on A (last in list): the walk wraps to C.
        assert_eq!(t.picks(3), [c, a, c].map(Some));
        let _ = b;
    }

    #[test]
    fn nothing_available() {
        let mut t = TestService::new("rr");
        assert_eq!(t.pick(), None, "empty service");
        let a = t.add(ip(1), 0);
        let b = t.add(ip(2), 0);
        assert_eq!(t.pick(), None, "all quiescent");
        t.set_weight(a, 1);
        t.set_weight(b, 1);
        t.set_overloaded(a, true);
        t.set_overloaded(b, true);
        assert_eq!(t.pick(), None, "all overloaded");
        // A failed pick leaves the cursor at the head: the next pick is the first
        // available server in list order.
        t.set_overloaded(a, false);
        t.set_overloaded(b, false);
        assert_eq!(t.pick(), Some(b));
    }

    #[test]
    fn failed_pick_keeps_cursor() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let c = t.add(ip(3), 1);
        assert_eq!(t.picks(2), [c, b].map(Some)); // cursor on B
        for id in [a, b, c] {
            t.set_overloaded(id, true);
        }
        assert_eq!(t.pick(), None);
        for id in [a, b, c] {
            t.set_overloaded(id, false);
        }
        assert_eq!(t.picks(2), [a, c].map(Some));
    }

    #[test]
    fn delete_server_under_cursor_moves_to_predecessor() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let c = t.add(ip(3), 1);
        assert_eq!(t.picks(2), [c, b].map(Some)); // cursor on B (pos 1)
        t.del(b);
        // cursor -> C (B's predecessor); next is the server after C: A.
        assert_eq!(t.picks(3), [a, c, a].map(Some));
    }

    #[test]
    fn delete_first_server_under_cursor_moves_to_head() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let c = t.add(ip(3), 1);
        assert_eq!(t.pick(), Some(c)); // cursor on C (pos 0)
        t.del(c);
        // cursor -> head: the walk starts at the first server.
        assert_eq!(t.picks(3), [b, a, b].map(Some));
    }

    #[test]
    fn delete_other_server_keeps_cursor_server() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let c = t.add(ip(3), 1);
        assert_eq!(t.picks(2), [c, b].map(Some)); // cursor on B
        t.del(c); // before the cursor
        assert_eq!(t.picks(3), [a, b, a].map(Some));
        let d = t.add(ip(4), 1); // list [D, B, A], cursor on A
        assert_eq!(t.picks(4), [d, b, a, d].map(Some));
    }

    #[test]
    fn add_while_cursor_at_head_is_picked_next() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        // cursor at head; add C at the head: C comes first.
        let c = t.add(ip(3), 1);
        assert_eq!(t.picks(3), [c, b, a].map(Some));
        // cursor on A (last); add D: the wrap reaches D first.
        let d = t.add(ip(4), 1);
        assert_eq!(t.picks(4), [d, c, b, a].map(Some));
    }

    #[test]
    fn revived_server_goes_to_head() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        t.del(a);
        let a2 = t.add(ip(1), 1);
        assert_eq!(a, a2, "same arena slot");
        // list [A, B], cursor at head.
        assert_eq!(t.picks(3), [a, b, a].map(Some));
    }

    #[test]
    fn switching_scheduler_restarts_at_head() {
        let mut t = TestService::new("rr");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        assert_eq!(t.pick(), Some(b));
        t.switch_scheduler("rr");
        assert_eq!(t.picks(2), [b, a].map(Some));
    }

}
