//! Locality-based least-connection (`lblc`), after
//! `net/netfilter/ipvs/ip_vs_lblc.c`: `ip_vs_lblc_hashkey`, `ip_vs_lblc_get`,
//! `ip_vs_lblc_new`, `ip_vs_lblc_full_check`, `ip_vs_lblc_check_expire`,
//! `ip_vs_lblc_init_svc`, `__ip_vs_lblc_schedule`, `is_overloaded`,
//! `ip_vs_lblc_schedule`.
//!
//! * A per-service cache maps a packet's **destination address** to a server:
//!   1024 hash buckets (`hash_32(ntohl(daddr), 10)`), new entries at the head
//!   of their bucket, each with `lastuse`.
//! * Schedule: look up `daddr`; if found, `lastuse = now` and, if its server is
//!   available (`IP_VS_DEST_F_AVAILABLE`), has weight > 0 and is not
//!   `is_overloaded`, use it. `is_overloaded(dest)`: `activeconns > weight`
//!   **and** some server in the service has `activeconns * 2 < weight`
//!   (the server's own `IP_VS_DEST_F_OVERLOAD` flag is *not* checked here).
//!   Otherwise pick with the wlc rule over the whole service
//!   (`__ip_vs_lblc_schedule`, [`super::wlc::least_weighted`]) and store it
//!   (`ip_vs_lblc_new`: replace the entry if its server differs, `lastuse = now`;
//!   an entry that already names the picked server is left as it is).
//! * Garbage collection (`ip_vs_lblc_check_expire`), a timer armed 60 s after
//!   `init_service` and re-armed 60 s after each run, with `counter` starting
//!   at 1: when `counter % 30 == 0`, a full check drops every entry with
//!   `now >= lastuse + lblc_expiration` (default 24 h) and sets `counter = 1`;
//!   otherwise, if there are at most `max_size = 1024 * 16` entries,
//!   `counter++`; otherwise a partial pass drops entries idle for
//!   `ENTRY_TIMEOUT` (6 min) bucket by bucket from `rover + 1`, stopping after
//!   the bucket in which `goal = min((entries - max_size) * 4 / 3, max_size / 2)`
//!   was reached, and leaves `rover` on the last bucket visited.
//!
//! Model notes:
//! * The timer is run lazily: before each decision, every expiry due at or
//!   before `now` runs, in order, with its own time as `jiffies`. The cache is
//!   only read or changed by `schedule`, so this is decision-for-decision the
//!   same as a real timer (a timer due exactly at a packet's time runs first).
//!   With an empty cache the pending runs are skipped arithmetically (they
//!   only advance `counter`).
//! * Times are compared in nanoseconds, the kernel compares jiffies.
//! * Cache entries live in a slab with per-bucket linked lists; creating an
//!   entry may grow the slab (the kernel `kmalloc`s one); lookups and hits do
//!   not allocate.

use super::hash::hash_32;
use super::wlc::least_weighted;
use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::{Dest, DestId};
use crate::rng::RandomSource;
use crate::time::{secs, Time};
use std::net::IpAddr;

/// `IP_VS_LBLC_TAB_BITS` (also lblcr's).
pub const TAB_BITS: u32 = 10;
/// `IP_VS_LBLC_TAB_SIZE`.
pub const TAB_SIZE: usize = 1 << TAB_BITS;
const TAB_MASK: usize = TAB_SIZE - 1;
/// `CHECK_EXPIRE_INTERVAL`.
pub const CHECK_EXPIRE_INTERVAL: Time = secs(60);
/// `ENTRY_TIMEOUT`.
pub const ENTRY_TIMEOUT: Time = secs(6 * 60);
/// `COUNT_FOR_FULL_EXPIRATION`.
pub const COUNT_FOR_FULL_EXPIRATION: i32 = 30;
/// `tbl->max_size = IP_VS_LBLC_TAB_SIZE * 16`.
pub const MAX_SIZE: i32 = (TAB_SIZE as i32) * 16;

const NIL: u32 = u32::MAX;

/// `ip_vs_lblc_hashkey` / `ip_vs_lblcr_hashkey`: `hash_32` of the folded
/// address ([`addr_fold`](super::hash::addr_fold)).
#[inline]
pub fn lblc_hashkey(addr: IpAddr) -> usize {
    hash_32(super::hash::addr_fold(&addr), TAB_BITS) as usize
}

/// `is_overloaded()` of ip_vs_lblc.c and ip_vs_lblcr.c (identical there):
/// `activeconns > weight` and some server in the service with
/// `activeconns * 2 < weight` (int arithmetic, wrapping).
pub fn is_overloaded(dest: &Dest, svc: &SvcView) -> bool {
    if dest.activeconns > dest.weight {
        for (_, d) in svc.iter() {
            if d.activeconns.wrapping_mul(2) < d.weight {
                return true;
            }
        }
    }
    false
}

/// A cache entry in the slab.
#[derive(Clone, Debug)]
pub(crate) struct Slot<V> {
    pub addr: IpAddr,
    pub lastuse: Time,
    pub val: V,
    next: u32,
}

/// The hash table shared by lblc (value: a server) and lblcr (value: a
/// server set): 1024 buckets of singly linked entries, new entries at the
/// bucket head, plus the garbage-collection state of
/// `ip_vs_lblc_check_expire` / `ip_vs_lblcr_check_expire`.
#[derive(Clone, Debug)]
pub(crate) struct Table<V> {
    heads: Vec<u32>,
    slots: Vec<Option<Slot<V>>>,
    free: Vec<u32>,
    entries: i32,
    rover: usize,
    counter: i32,
    next_timer: Time,
    expiration: Time,
}

impl<V> Table<V> {
    /// `init_service`: empty table, `rover = 0`, `counter = 1`, timer at
    /// `now + 60 s`.
    pub fn new(now: Time, expiration: Time) -> Self {
        Table {
            heads: vec![NIL; TAB_SIZE],
            slots: Vec::new(),
            free: Vec::new(),
            entries: 0,
            rover: 0,
            counter: 1,
            next_timer: now.saturating_add(CHECK_EXPIRE_INTERVAL),
            expiration,
        }
    }

    pub fn len(&self) -> usize {
        self.entries as usize
    }

    /// Find the entry for `addr` (`ip_vs_lblc_get`).
    pub fn get_mut(&mut self, addr: IpAddr) -> Option<&mut Slot<V>> {
        let mut i = self.heads[lblc_hashkey(addr)];
        while i != NIL {
            let s = self.slots[i as usize].as_ref().expect("linked slot");
            if s.addr == addr {
                return self.slots[i as usize].as_mut();
            }
            i = s.next;
        }
        None
    }

    /// Insert a new entry at the head of its bucket (`hlist_add_head_rcu`,
    /// `atomic_inc(&tbl->entries)`); the caller made sure `addr` is absent.
    pub fn insert(&mut self, addr: IpAddr, lastuse: Time, val: V) {
        let b = lblc_hashkey(addr);
        let slot = Slot { addr, lastuse, val, next: self.heads[b] };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                (self.slots.len() - 1) as u32
            }
        };
        self.heads[b] = i;
        self.entries += 1;
    }

    /// Remove the entry for `addr` if present.
    pub fn remove(&mut self, addr: IpAddr) {
        let b = lblc_hashkey(addr);
        self.remove_in_bucket(b, |s| s.addr == addr);
    }

    /// Remove every entry of bucket `b` matching `pred`; returns how many.
    fn remove_in_bucket(&mut self, b: usize, mut pred: impl FnMut(&Slot<V>) -> bool) -> i32 {
        let mut removed = 0;
        let mut prev: Option<u32> = None;
        let mut i = self.heads[b];
        while i != NIL {
            let s = self.slots[i as usize].as_ref().expect("linked slot");
            let next = s.next;
            if pred(s) {
                match prev {
                    None => self.heads[b] = next,
                    Some(p) => self.slots[p as usize].as_mut().expect("linked slot").next = next,
                }
                self.slots[i as usize] = None;
                self.free.push(i);
                self.entries -= 1;
                removed += 1;
            } else {
                prev = Some(i);
            }
            i = next;
        }
        removed
    }

    /// Run every garbage-collection timer due at or before `now`.
    pub fn run_timers(&mut self, now: Time) {
        while self.next_timer <= now {
            if self.entries == 0 {
                // Nothing to expire: each pending run only moves `counter`
                // (a full check on an empty table leaves `rover` where it was).
                let k = (now - self.next_timer) / CHECK_EXPIRE_INTERVAL + 1;
                let c = (self.counter - 1) as u64;
                self.counter = ((c + k) % COUNT_FOR_FULL_EXPIRATION as u64) as i32 + 1;
                self.next_timer = self.next_timer.saturating_add(k.saturating_mul(CHECK_EXPIRE_INTERVAL));
                break;
            }
            let t = self.next_timer;
            self.check_expire(t);
            self.next_timer = t.saturating_add(CHECK_EXPIRE_INTERVAL);
        }
    }

    /// `ip_vs_lblc_check_expire` at time `now`.
    fn check_expire(&mut self, now: Time) {
        if self.counter % COUNT_FOR_FULL_EXPIRATION == 0 {
            self.full_check(now);
            self.counter = 1;
            return;
        }
        if self.entries <= MAX_SIZE {
            self.counter += 1;
            return;
        }
        let mut goal = (self.entries - MAX_SIZE) * 4 / 3;
        if goal > MAX_SIZE / 2 {
            goal = MAX_SIZE / 2;
        }
        let mut j = self.rover;
        for _ in 0..TAB_SIZE {
            j = (j + 1) & TAB_MASK;
            goal -= self.remove_in_bucket(j, |s| now >= s.lastuse.saturating_add(ENTRY_TIMEOUT));
            if goal <= 0 {
                break;
            }
        }
        self.rover = j;
    }

    /// `ip_vs_lblc_full_check` at time `now`.
    fn full_check(&mut self, now: Time) {
        let exp = self.expiration;
        let mut j = self.rover;
        for _ in 0..TAB_SIZE {
            j = (j + 1) & TAB_MASK;
            self.remove_in_bucket(j, |s| now >= s.lastuse.saturating_add(exp));
        }
        self.rover = j;
    }
}

/// lblc state: the destination-address cache.
#[derive(Clone)]
pub struct Lblc {
    table: Table<DestId>,
}

impl std::fmt::Debug for Lblc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lblc")
            .field("entries", &self.table.entries)
            .field("rover", &self.table.rover)
            .field("counter", &self.table.counter)
            .field("next_timer", &self.table.next_timer)
            .finish()
    }
}

impl Lblc {
    /// `ip_vs_lblc_init_svc` at `now` with `lblc_expiration`.
    pub fn new(_svc: &SvcView, now: Time, expiration: Time) -> Self {
        Lblc { table: Table::new(now, expiration) }
    }

    /// Number of cache entries (after the timers that were run).
    pub fn entries(&self) -> usize {
        self.table.len()
    }
}

impl Scheduler for Lblc {
    fn name(&self) -> &'static str {
        "lblc"
    }

    fn schedule(&mut self, svc: &SvcView, pkt: &SchedPacket, now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        self.table.run_timers(now);
        let daddr = pkt.daddr;
        if let Some(en) = self.table.get_mut(daddr) {
            en.lastuse = now;
            let id = en.val;
            let d = svc.dest(id);
            if d.available && d.weight > 0 && !is_overloaded(d, svc) {
                return Some(id);
            }
        }
        let id = least_weighted(svc)?;
        // ip_vs_lblc_new
        match self.table.get_mut(daddr) {
            Some(en) if en.val == id => {}
            Some(_) => {
                self.table.remove(daddr);
                self.table.insert(daddr, now, id);
            }
            None => self.table.insert(daddr, now, id),
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{ip, TestService};
    use crate::sched::SchedSysctls;
    use std::net::Ipv4Addr;

    const D1: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
    const D2: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 2);

    /// Service with A(w10) and B(w10); D1 cached on A, then B made the wlc
    /// choice (A busier) without A being "overloaded" for lblc.
    fn sticky() -> (TestService, DestId, DestId) {
        let mut t = TestService::new("lblc");
        let a = t.add(ip(1), 10);
        let b = t.add(ip(2), 10);
        t.set_conns(b, 1, 0);
        assert_eq!(t.pick_to(D1), Some(a));
        // Now A has more load; wlc would pick B, but A is not is_overloaded
        // (activeconns 5 <= weight 10).
        t.set_conns(a, 5, 0);
        t.set_conns(b, 0, 0);
        (t, a, b)
    }

    /// IPv6 destinations are cached by their whole address: two that fold
    /// to the same 32 bits (same bucket of `ip_vs_lblc_hashkey`) are two
    /// entries.
    #[test]
    fn ipv6_destinations_with_the_same_fold_are_distinct_entries() {
        use std::net::Ipv6Addr;
        let mut t = TestService::new("lblc");
        let a = t.add("2001:db8:1::1".parse::<Ipv6Addr>().unwrap(), 10);
        let b = t.add("2001:db8:1::2".parse::<Ipv6Addr>().unwrap(), 10);
        // Words [0x20010db8, 0, 0, 0x10] and [0x10, 0, 0, 0x20010db8].
        let d1: Ipv6Addr = "2001:db8::10".parse().unwrap();
        let d2: Ipv6Addr = "0:10::2001:db8".parse().unwrap();
        assert_eq!(lblc_hashkey(d1.into()), lblc_hashkey(d2.into()));
        t.set_conns(b, 1, 0);
        assert_eq!(t.pick_to(d1), Some(a));
        t.set_conns(a, 5, 0);
        t.set_conns(b, 0, 0);
        assert_eq!(t.pick_to(d2), Some(b), "not d1's entry: a new one, by wlc");
        assert_eq!(t.pick_to(d1), Some(a), "d1 still cached on A");
        assert_eq!(t.pick_to(d2), Some(b));
    }

    #[test]
    fn sticks_to_cached_server() {
        let (mut t, a, b) = sticky();
        assert_eq!(t.pick_to(D1), Some(a));
        assert_eq!(t.pick_to(D2), Some(b), "new destination: wlc");
        assert_eq!(t.pick_to(D2), Some(b));
    }

    /// is_overloaded needs both: the cached server above its weight and some
    /// server below half its weight.
    #[test]
    fn reschedules_when_overloaded_and_someone_is_half_idle() {
        let (mut t, a, b) = sticky();
        t.set_conns(a, 11, 0); // > weight 10
        t.set_conns(b, 5, 0); // 5*2 < 10 is false
        assert_eq!(t.pick_to(D1), Some(a), "nobody below half weight");
        t.set_conns(b, 4, 0); // 8 < 10
        assert_eq!(t.pick_to(D1), Some(b));
        // The entry now names B: it sticks even when A becomes lighter.
        t.set_conns(a, 0, 0);
        t.set_conns(b, 9, 0);
        assert_eq!(t.pick_to(D1), Some(b));
    }

    /// The "someone below half its weight" test looks at every server in the
    /// service, whatever its state; a weight-0 server never satisfies
    /// `2 * active < 0` (for active >= 0), a server given weight 13 later does.
    #[test]
    fn half_idle_check_uses_all_servers() {
        let (mut t, a, _b) = sticky();
        let c = t.add(ip(3), 0);
        t.set_conns(a, 11, 0);
        t.set_conns(_b, 6, 0);
        assert_eq!(t.pick_to(D1), Some(a));
        t.set_weight(c, 13); // C: 0*2 < 13
        // wlc: list [C(13,0), B(10,6), A(10,11)] -> C (overhead 0)
        assert_eq!(t.pick_to(D1), Some(c));
    }

    #[test]
    fn overload_flag_alone_does_not_move_cached_entry() {
        let (mut t, a, _b) = sticky();
        t.set_overloaded(a, true);
        assert_eq!(t.pick_to(D1), Some(a), "lblc's is_overloaded ignores IP_VS_DEST_F_OVERLOAD");
    }

    #[test]
    fn quiescent_or_deleted_cached_server_is_replaced() {
        let (mut t, a, b) = sticky();
        t.set_weight(a, 0);
        assert_eq!(t.pick_to(D1), Some(b));
        t.set_weight(a, 10);
        t.set_conns(b, 5, 0);
        t.set_conns(a, 0, 0);
        assert_eq!(t.pick_to(D1), Some(b), "entry replaced by B");
        t.del(b);
        assert_eq!(t.pick_to(D1), Some(a));
        t.del(a);
        assert_eq!(t.pick_to(D1), None, "empty service");
    }

    #[test]
    fn nothing_available() {
        let mut t = TestService::new("lblc");
        assert_eq!(t.pick_to(D1), None);
        let a = t.add(ip(1), 1);
        t.set_overloaded(a, true);
        assert_eq!(t.pick_to(D1), None);
    }

    /// Entry used at t=0 with the default 24 h expiration: full checks run
    /// at timer runs 30, 60, ... (every 30 min from creation). The first full
    /// check with `now >= 0 + 24 h` is at 86400 s exactly.
    #[test]
    fn expires_at_first_full_check_after_24h() {
        for (at, cached) in [(secs(86_400) - 1, true), (secs(86_400), false)] {
            let (mut t, a, b) = sticky();
            t.now = at;
            assert_eq!(t.pick_to(D1), Some(if cached { a } else { b }), "at {at}");
        }
    }

    /// Last use at 100 s: the entry is stale from 86500 s, but only the full
    /// check at 88200 s (run 1470) removes it.
    #[test]
    fn expiry_waits_for_the_full_check() {
        for (at, cached) in [(secs(88_200) - 1, true), (secs(88_200), false)] {
            let (mut t, a, b) = sticky();
            t.now = secs(100);
            assert_eq!(t.pick_to(D1), Some(a));
            t.now = at;
            assert_eq!(t.pick_to(D1), Some(if cached { a } else { b }), "at {at}");
        }
    }

    /// Each use refreshes lastuse.
    #[test]
    fn use_refreshes_entry() {
        let (mut t, a, _) = sticky();
        for h in 1..=5u64 {
            t.now = secs(h * 20 * 3600);
            assert_eq!(t.pick_to(D1), Some(a), "hour {}", h * 20);
        }
    }

    /// The timer is armed from the scheduler's creation time (ipvsadm -E).
    /// (Each probe refreshes `lastuse`, so every probe time gets a fresh
    /// service.)
    #[test]
    fn timer_counts_from_init() {
        for (at, cached) in [(secs(1000 + 86_400) - 1, true), (secs(1000 + 86_400), false)] {
            let mut t = TestService::new("rr");
            let a = t.add(ip(1), 10);
            let b = t.add(ip(2), 10);
            t.now = secs(1000);
            t.switch_scheduler("lblc");
            t.set_conns(b, 1, 0);
            assert_eq!(t.pick_to(D1), Some(a));
            t.set_conns(b, 0, 0);
            t.set_conns(a, 5, 0);
            // Full checks at 1000 + 1800k s; the first at or after
            // 1000 + 86400 s is 1000 + 86400 (1800 * 48 = 86400).
            t.now = at;
            assert_eq!(t.pick_to(D1), Some(if cached { a } else { b }), "at {at}");
        }
    }

    #[test]
    fn custom_expiration() {
        let sys = SchedSysctls { lblc_expiration: secs(600), ..SchedSysctls::default() };
        for (at, cached) in [(secs(1800) - 1, true), (secs(1800), false)] {
            let mut t = TestService::with("lblc", Default::default(), sys);
            let a = t.add(ip(1), 10);
            let b = t.add(ip(2), 10);
            t.set_conns(b, 1, 0);
            assert_eq!(t.pick_to(D1), Some(a));
            t.set_conns(b, 0, 0);
            t.set_conns(a, 5, 0);
            // stale since 600 s; the first full check is at 1800 s.
            t.now = at;
            assert_eq!(t.pick_to(D1), Some(if cached { a } else { b }), "at {at}");
        }
    }

    /// The partial collection when the table holds more than 16384 entries:
    /// 16387 entries created at t = 0 (all on A); at each run while
    /// entries > max_size the counter does not move, so no full check.
    /// Runs 1-5 (60-300 s) find nothing idle for 6 min. Run 6 (360 s):
    /// goal = 3 * 4 / 3 = 4; buckets 1, 2, ... are emptied until at least
    /// 4 entries went, then it stops.
    #[test]
    fn partial_collection_over_max_size() {
        let mut t = TestService::new("lblc");
        let a = t.add(ip(1), 100);
        let b = t.add(ip(2), 100);
        t.set_conns(b, 1, 0);
        let n = MAX_SIZE as u32 + 3;
        let dst = |i: u32| Ipv4Addr::from(0x6400_0000u32 + i * 7919);
        for i in 0..n {
            assert_eq!(t.pick_to(dst(i)), Some(a));
        }
        // Expected victims: walk buckets from 1 until >= 4 entries counted.
        let mut per_bucket = vec![0u32; TAB_SIZE];
        for i in 0..n {
            per_bucket[(u32::from(dst(i)).wrapping_mul(0x61C8_8647) >> 22) as usize] += 1;
        }
        let mut removed = 0;
        let mut last = 0;
        for (j, &count) in per_bucket.iter().enumerate().skip(1) {
            removed += count;
            last = j;
            if removed >= 4 {
                break;
            }
        }
        // Make B the wlc choice; A stays valid for cached entries.
        t.set_conns(b, 0, 0);
        t.set_conns(a, 50, 0);
        t.now = secs(360);
        let mut moved = 0;
        for i in 0..n {
            let bucket = (u32::from(dst(i)).wrapping_mul(0x61C8_8647) >> 22) as usize;
            let want = if (1..=last).contains(&bucket) { b } else { a };
            assert_eq!(t.pick_to(dst(i)), Some(want), "entry {i} bucket {bucket}");
            moved += (want == b) as u32;
        }
        assert_eq!(moved, removed);
    }

    #[test]
    fn lazy_timer_skips_idle_periods() {
        let mut t = TestService::new("lblc");
        let a = t.add(ip(1), 1);
        t.now = secs(10 * 365 * 24 * 3600);
        assert_eq!(t.pick_to(D1), Some(a));
        t.now += secs(24 * 3600 + 1800);
        assert_eq!(t.pick_to(D2), Some(a));
    }
}
