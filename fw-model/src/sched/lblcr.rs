//! Locality-based least-connection with replication (`lblcr`), after
//! `net/netfilter/ipvs/ip_vs_lblcr.c`: `ip_vs_dest_set_insert`,
//! `ip_vs_dest_set_erase`, `ip_vs_dest_set_min`, `ip_vs_dest_set_max`,
//! `ip_vs_lblcr_new`, `ip_vs_lblcr_full_check`, `ip_vs_lblcr_check_expire`,
//! `__ip_vs_lblcr_schedule`, `is_overloaded`, `ip_vs_lblcr_schedule`.
//!
//! * The cache maps a packet's **destination address** to a *set* of servers
//!   (same 1024-bucket table, `lastuse`, timers and full/partial collection
//!   as lblc, see [`super::lblc`], with `lblcr_expiration`). A set is a list
//!   with new members at the head and a `lastmod` time, set whenever a member
//!   is added or removed.
//! * Schedule with an entry: `lastuse = now`; `dest = set_min` (walking the
//!   set from its head: the first member that is not overloaded, has a
//!   positive weight and is available, then any later non-overloaded,
//!   available member with
//!   `(s64)loh * w > (s64)doh * least_w`). Then, if the set has more than one
//!   member and `now > lastmod + lblcr_expiration` (strictly after), the
//!   `set_max` member is removed (`set_max`: first member with weight > 0, then
//!   later members with weight > 0 and `(s64)moh * w < (s64)doh * most_w`;
//!   overload and availability are not looked at) — this happens after
//!   `dest` was chosen, so the removed server may still be returned. If `dest`
//!   exists and is not `is_overloaded` (`activeconns > weight` and some
//!   server in the service with `activeconns * 2 < weight`, same as lblc), it
//!   is returned. Otherwise the wlc rule over the service picks a server,
//!   which is added to the set if not already a member, and returned.
//! * Schedule without an entry: wlc rule, then a new entry with a one-member
//!   set.
//!
//! Model notes as for lblc: timers run lazily before each decision, in
//! order; times in nanoseconds; creating an entry or adding a set member
//! allocates (the kernel `kmalloc`s), lookups do not.

use super::lblc::{is_overloaded, Table};
use super::wlc::least_weighted;
use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// `struct ip_vs_dest_set`: members newest first, `lastmod`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestSet {
    /// The servers, newest first.
    pub members: Vec<DestId>,
    /// When the set last changed (`lastmod`).
    pub lastmod: Time,
}

impl DestSet {
    /// `ip_vs_dest_set_insert(set, dest, check)` (check = true).
    fn insert(&mut self, id: DestId, now: Time) {
        if self.members.contains(&id) {
            return;
        }
        self.members.insert(0, id);
        self.lastmod = now;
    }

    /// `ip_vs_dest_set_erase`.
    fn erase(&mut self, id: DestId, now: Time) {
        if let Some(p) = self.members.iter().position(|&m| m == id) {
            self.members.remove(p);
            self.lastmod = now;
        }
    }

    /// `ip_vs_dest_set_min`.
    fn min(&self, svc: &SvcView) -> Option<DestId> {
        let mut it = self.members.iter();
        let (mut least, mut lw, mut loh) = loop {
            let &id = it.next()?;
            let d = svc.dest(id);
            if d.overloaded {
                continue;
            }
            if d.weight > 0 && d.available {
                break (id, d.weight, d.conn_overhead());
            }
        };
        for &id in it {
            let d = svc.dest(id);
            if d.overloaded {
                continue;
            }
            let doh = d.conn_overhead();
            if (loh as i64) * (d.weight as i64) > (doh as i64) * (lw as i64) && d.available {
                least = id;
                lw = d.weight;
                loh = doh;
            }
        }
        Some(least)
    }

    /// `ip_vs_dest_set_max`.
    fn max(&self, svc: &SvcView) -> Option<DestId> {
        let mut it = self.members.iter();
        let (mut most, mut mw, mut moh) = loop {
            let &id = it.next()?;
            let d = svc.dest(id);
            if d.weight > 0 {
                break (id, d.weight, d.conn_overhead());
            }
        };
        for &id in it {
            let d = svc.dest(id);
            let doh = d.conn_overhead();
            if (moh as i64) * (d.weight as i64) < (doh as i64) * (mw as i64) && d.weight > 0 {
                most = id;
                mw = d.weight;
                moh = doh;
            }
        }
        Some(most)
    }
}

/// lblcr state: the destination-address cache of server sets.
#[derive(Clone)]
pub struct Lblcr {
    table: Table<DestSet>,
    expiration: Time,
}

impl std::fmt::Debug for Lblcr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lblcr").field("entries", &self.table.len()).field("expiration", &self.expiration).finish()
    }
}

impl Lblcr {
    /// `ip_vs_lblcr_init_svc` at `now` with `lblcr_expiration`.
    pub fn new(_svc: &SvcView, now: Time, expiration: Time) -> Self {
        Lblcr { table: Table::new(now, expiration), expiration }
    }

    /// The server set cached for `daddr` (host order), for tests. Does not
    /// run timers.
    #[cfg(test)]
    pub(crate) fn set_of(&mut self, daddr: std::net::IpAddr) -> Option<DestSet> {
        self.table.get_mut(daddr).map(|s| s.val.clone())
    }
}

impl Scheduler for Lblcr {
    fn name(&self) -> &'static str {
        "lblcr"
    }

    fn schedule(&mut self, svc: &SvcView, pkt: &SchedPacket, now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        self.table.run_timers(now);
        let daddr = pkt.daddr;
        let exp = self.expiration;
        if let Some(en) = self.table.get_mut(daddr) {
            en.lastuse = now;
            let set = &mut en.val;
            let dest = set.min(svc);
            if set.members.len() > 1 && now > set.lastmod.saturating_add(exp) {
                if let Some(m) = set.max(svc) {
                    set.erase(m, now);
                }
            }
            if let Some(id) = dest {
                if !is_overloaded(svc.dest(id), svc) {
                    return Some(id);
                }
            }
            let id = least_weighted(svc)?;
            set.insert(id, now);
            return Some(id);
        }
        let id = least_weighted(svc)?;
        self.table.insert(daddr, now, DestSet { members: vec![id], lastmod: now });
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{ip, TestService};
    use crate::sched::SchedSysctls;
    use crate::time::secs;
    use std::net::Ipv4Addr;

    const D1: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

    /// Drives a harness and a twin `Lblcr` with the same calls so the set
    /// contents can be inspected.
    struct Twin {
        t: TestService,
        s: Lblcr,
    }

    impl Twin {
        fn new() -> Self {
            Self::with_exp(secs(24 * 3600))
        }
        fn with_exp(exp: Time) -> Self {
            let sys = SchedSysctls { lblcr_expiration: exp, ..SchedSysctls::default() };
            let t = TestService::with("lblcr", Default::default(), sys);
            let s = Lblcr::new(&t.view(), 0, exp);
            Twin { t, s }
        }
        fn pick(&mut self, daddr: Ipv4Addr) -> Option<DestId> {
            let got = self.t.pick_to(daddr);
            let pkt = SchedPacket { daddr: daddr.into(), ..self.t.pkt };
            let mut rng = crate::rng::SplitMix64::new(0);
            let twin = self.s.schedule(&self.t.view(), &pkt, self.t.now, &mut rng);
            assert_eq!(got, twin);
            got
        }
        fn members(&mut self, daddr: Ipv4Addr) -> Vec<DestId> {
            self.s.set_of(daddr.into()).map(|s| s.members).unwrap_or_default()
        }
    }

    #[test]
    fn grows_the_set_when_overloaded() {
        let mut w = Twin::new();
        let a = w.t.add(ip(1), 10);
        let b = w.t.add(ip(2), 10);
        w.t.set_conns(b, 1, 0);
        assert_eq!(w.pick(D1), Some(a));
        assert_eq!(w.members(D1), [a]);
        // A busier but not is_overloaded: stays.
        w.t.set_conns(a, 10, 0);
        w.t.set_conns(b, 0, 0);
        assert_eq!(w.pick(D1), Some(a));
        // A above weight and B below half: wlc picks B, B joins the set.
        w.t.set_conns(a, 11, 0);
        assert_eq!(w.pick(D1), Some(b));
        assert_eq!(w.members(D1), [b, a]);
        // Now the set minimum decides between A and B.
        w.t.set_conns(a, 0, 0);
        w.t.set_conns(b, 3, 0);
        assert_eq!(w.pick(D1), Some(a));
        w.t.set_conns(a, 4, 0);
        assert_eq!(w.pick(D1), Some(b));
        assert_eq!(w.members(D1), [b, a], "no growth without overload");
    }

    /// Servers outside the set are not considered while a member is fine.
    #[test]
    fn set_members_only() {
        let mut w = Twin::new();
        let a = w.t.add(ip(1), 10);
        assert_eq!(w.pick(D1), Some(a));
        let c = w.t.add(ip(3), 10);
        w.t.set_conns(a, 9, 0);
        assert_eq!(w.pick(D1), Some(a), "idle C is not in the set");
        let _ = c;
    }

    /// After `lblcr_expiration` without a change (strictly after), a set
    /// with more than one member loses its most loaded member; the pick was
    /// made before that and may be the removed server.
    #[test]
    fn shrinks_after_expiration() {
        let exp = secs(600);
        let mut w = Twin::with_exp(exp);
        let a = w.t.add(ip(1), 10);
        let b = w.t.add(ip(2), 10);
        w.t.set_conns(b, 1, 0);
        assert_eq!(w.pick(D1), Some(a));
        w.t.now = secs(10);
        w.t.set_conns(a, 11, 0);
        w.t.set_conns(b, 0, 0);
        assert_eq!(w.pick(D1), Some(b)); // set {B, A}, lastmod 10 s
        assert_eq!(w.members(D1), [b, a]);
        // Now A is idle and B has 5 active connections.
        w.t.set_conns(a, 0, 0);
        w.t.set_conns(b, 5, 0);
        w.t.now = secs(610); // == lastmod + exp: not yet
        assert_eq!(w.pick(D1), Some(a));
        assert_eq!(w.members(D1), [b, a]);
        w.t.now = secs(610) + 1;
        // set_min = A (0 active); set_max = B (5 active) is erased; A returned.
        assert_eq!(w.pick(D1), Some(a));
        assert_eq!(w.members(D1), [a]);
    }

    #[test]
    fn removed_member_may_still_be_returned() {
        let exp = secs(600);
        let mut w = Twin::with_exp(exp);
        let a = w.t.add(ip(1), 10);
        let b = w.t.add(ip(2), 10);
        w.t.set_conns(b, 1, 0);
        assert_eq!(w.pick(D1), Some(a));
        w.t.set_conns(a, 11, 0);
        w.t.set_conns(b, 0, 0);
        assert_eq!(w.pick(D1), Some(b)); // {B, A}
        // Both members at the same load per weight: set_min keeps the first
        // (B) and set_max keeps the first (B) too: B is erased and returned.
        w.t.set_conns(a, 2, 0);
        w.t.set_conns(b, 2, 0);
        w.t.now = secs(601);
        assert_eq!(w.pick(D1), Some(b));
        assert_eq!(w.members(D1), [a]);
    }

    #[test]
    fn unavailable_members_skipped_by_min() {
        let mut w = Twin::new();
        let a = w.t.add(ip(1), 10);
        let b = w.t.add(ip(2), 10);
        w.t.set_conns(b, 1, 0);
        assert_eq!(w.pick(D1), Some(a));
        w.t.set_conns(a, 11, 0);
        w.t.set_conns(b, 0, 0);
        assert_eq!(w.pick(D1), Some(b)); // {B, A}
        w.t.set_conns(a, 0, 0);
        w.t.del(a);
        assert_eq!(w.pick(D1), Some(b), "deleted A is still a member but not available");
        w.t.set_weight(b, 0);
        assert_eq!(w.pick(D1), None, "no member usable and no server for wlc");
        w.t.set_overloaded(b, true);
        assert_eq!(w.pick(D1), None);
    }

    #[test]
    fn entry_expires_like_lblc() {
        let mut w = Twin::new();
        let a = w.t.add(ip(1), 10);
        let b = w.t.add(ip(2), 10);
        w.t.set_conns(b, 1, 0);
        assert_eq!(w.pick(D1), Some(a));
        w.t.set_conns(a, 5, 0);
        w.t.set_conns(b, 0, 0);
        // The full check at 86400 s would drop an entry last used at 0.
        w.t.now = secs(86_400) - 1;
        assert_eq!(w.pick(D1), Some(a));
        // Last use 86400 s - 1 ns: stale from 172800 s - 1 ns, dropped by the
        // full check at 172800 s.
        w.t.now = secs(2 * 86_400);
        assert_eq!(w.pick(D1), Some(b), "gone at the first full check >= lastuse + 24 h");
        assert_eq!(w.members(D1), [b]);
    }

    #[test]
    fn empty_service() {
        let mut w = Twin::new();
        assert_eq!(w.pick(D1), None);
        assert!(w.members(D1).is_empty());
    }
}
