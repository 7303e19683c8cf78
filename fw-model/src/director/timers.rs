//! Timers: the model clock ([`Director::advance`]), connection expiry
//! (`ip_vs_conn_expire`, `ip_vs_conn_expire_now` in ip_vs_conn.c;
//! `ip_vs_expire_nodest_conn_flush` in ip_vs_ctl.c), the rate-estimation
//! ticks (`ip_vs_est.c`), and the per-packet state and timer update
//! (`ip_vs_set_state`, `ip_vs_conn_put`).

use super::{Director, NoOffload, Offload};
use crate::conn::tcp::{self, Direction};
use crate::conn::{flags as cf, ConnId, NIL};
use crate::ipvs::estimator::EST_PERIOD;
use crate::time::{secs, Time};
use crate::wire::{IPPROTO_TCP, IPPROTO_UDP};

impl Director {

    /// Runs every timer due at or before `now`: connection and template
    /// expiry (`ip_vs_conn_expire`), the dest trash timer, the
    /// `expire_nodest_conn` flush. Time never goes backwards.
    pub fn advance(&mut self, now: Time) {
        self.advance_with(now, &mut NoOffload);
    }

    /// [`advance`](Self::advance) for a director whose connections may also
    /// be served elsewhere (the hardware): before a connection expires,
    /// `off` is asked when it was last used there, and told when it is removed.
    pub fn advance_with(&mut self, now: Time, off: &mut dyn Offload) {
        if now > self.now {
            self.now = now;
        }
        let now = self.now;
        self.run_estimators(now);
        self.counters.reasm.timeouts += self.defrag.expire(now) + self.defrag6.expire(now);
        if self.nodest_flush {
            self.nodest_flush = false;
            self.flush_nodest_conns();
        }
        while let Some((id, at)) = self.conns.pop_due(now) {
            self.expire(id, at, off);
        }
        self.services.run_trash_timer(now);
    }

    /// Whether a rate-estimation tick falls at or before `now` (a slow path
    /// in front of hardware credits the hardware's counters first, so the
    /// tick sees every packet).
    pub fn estimator_due(&self, now: Time) -> bool {
        now.max(self.now) >= self.est_next
    }

    /// The rate-estimation ticks (`ip_vs_est.c`) due by `now`: every live
    /// service, every real server in a service and the totals. Once every
    /// average is zero and nothing has moved, the remaining ticks of a long
    /// idle gap change nothing and are skipped.
    pub(super) fn run_estimators(&mut self, now: Time) {
        while self.est_next <= now {
            let mut active = self.total_est.tick(&self.total);
            let st = &mut self.services;
            for s in st.services.iter_mut().filter(|s| s.live) {
                active |= s.est.tick(&s.stats);
                for d in &s.order {
                    let d = &mut st.dests[d.index()];
                    active |= d.est.tick(&d.stats);
                }
            }
            self.est_next += EST_PERIOD;
            if !active && self.est_next <= now {
                self.est_next += (now - self.est_next) / EST_PERIOD * EST_PERIOD + EST_PERIOD;
            }
        }
    }

    /// `ip_vs_conn_expire` for an entry whose timer fired.
    pub(super) fn expire(&mut self, id: ConnId, at: Time, off: &mut dyn Offload) {
        let c = *self.conns.get(id);
        if !self.forced_expiry.remove(&id) {
            // Packets the hardware forwarded would have re-armed the timer.
            if let Some(t) = off.last_use(id, &c) {
                let due = self.timer_at(t, c.timeout(), false);
                if due > at {
                    self.conns.rearm_after_pop(id, due);
                    return;
                }
            }
        }
        if c.n_control > 0 {
            // expire_later: the timeout becomes 60 s for good.
            let cm = self.conns.get_mut(id);
            cm.set_timeout(secs(60));
            let due = self.timer_at(at, secs(60), true);
            self.conns.rearm_after_pop(id, due);
            return;
        }
        if c.control != NIL {
            let t = self.conns.get_mut(ConnId(c.control));
            t.n_control = t.n_control.saturating_sub(1);
        }
        self.unbind_dest(&c);
        off.removed(id, &c);
        self.conns.remove(id);
        self.counters.conns_expired += 1;
    }

    /// `ip_vs_conn_expire_now`: `mod_timer(timer, jiffies)`, which fires at
    /// the next jiffy (with [`KernelClock`](crate::time::KernelClock)), or
    /// at the current time, after the packet being processed (without).
    pub(crate) fn expire_now(&mut self, id: ConnId) {
        let at = self.timer_at(self.now, 0, false);
        self.forced_expiry.insert(id);
        self.conns.arm(id, at);
    }

    /// When a timer armed at `from` with `timeout` fires: `from + timeout`,
    /// or, with the kernel's clock configured, where the timer wheel puts
    /// `mod_timer(jiffies + timeout)` (`in_timer`: armed from a timer
    /// callback, e.g. `expire_later`).
    pub(crate) fn timer_at(&self, from: Time, timeout: Time, in_timer: bool) -> Time {
        match &self.cfg.clock {
            Some(k) => k.fire_time(k.arm(from, timeout, in_timer)),
            None => from + timeout,
        }
    }

    /// `ip_vs_expire_nodest_conn_flush`.
    pub(super) fn flush_nodest_conns(&mut self) {
        let victims: Vec<(ConnId, u32)> = self
            .conns
            .iter()
            .filter(|(_, c)| c.dest != NIL && !self.services.dests[c.dest as usize].available && c.n_control == 0)
            .map(|(id, c)| (id, c.control))
            .collect();
        for (id, control) in victims {
            self.expire_now(id);
            if control != NIL && self.conns.get(ConnId(control)).n_control <= 1 {
                self.expire_now(ConnId(control));
            }
        }
    }


    /// `ip_vs_set_state` → `tcp_state_transition` / `udp_state_transition`.
    pub(super) fn set_state(&mut self, id: ConnId, dir: Direction, tcp_flags: u8) {
        let proto = self.conns.get(id).proto;
        if proto == IPPROTO_UDP {
            let t = self.cfg.timeouts.udp;
            self.conns.get_mut(id).set_timeout(t);
            return;
        }
        if proto != IPPROTO_TCP {
            return;
        }
        let c = *self.conns.get(id);
        let tr = tcp::next_state(c.state, dir, c.flags & cf::NOOUTPUT != 0, tcp_flags, self.cfg.sysctl.secure_tcp);
        let mut fl = c.flags;
        if tr.clear_nooutput {
            fl &= !cf::NOOUTPUT;
        }
        if tr.new_state != c.state && c.dest != NIL {
            let d = &mut self.services.dests[c.dest as usize];
            if fl & cf::INACTIVE == 0 && !tcp::is_active(tr.new_state) {
                d.activeconns -= 1;
                d.inactconns += 1;
                fl |= cf::INACTIVE;
            } else if fl & cf::INACTIVE != 0 && tcp::is_active(tr.new_state) {
                d.activeconns += 1;
                d.inactconns -= 1;
                fl &= !cf::INACTIVE;
            }
        }
        let timeout = self.cfg.timeouts.tcp.0[tr.new_state as usize];
        let cm = self.conns.get_mut(id);
        cm.flags = fl;
        cm.state = tr.new_state;
        cm.set_timeout(timeout);
    }

    /// `ip_vs_conn_put`: re-arm the timer (`now + timeout`, or now for
    /// one-packet conns).
    pub(super) fn conn_put(&mut self, id: ConnId) {
        let c = self.conns.get(id);
        let t = if c.flags & cf::ONE_PACKET != 0 { 0 } else { c.timeout() };
        let at = self.timer_at(self.now, t, false);
        self.conns.arm(id, at);
    }
}
