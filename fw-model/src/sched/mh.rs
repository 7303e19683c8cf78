//! Maglev hashing (`mh`), after `net/netfilter/ipvs/ip_vs_mh.c`:
//! `generate_hash_secret`, `ip_vs_mh_hashkey`, `ip_vs_mh_permutate`,
//! `ip_vs_mh_populate`, `ip_vs_mh_gcd_weight`, `ip_vs_mh_shift_weight`,
//! `ip_vs_mh_reassign` (init, add, del, upd), `ip_vs_mh_get`,
//! `ip_vs_mh_get_fallback`, `ip_vs_mh_schedule`.
//!
//! * Table size 4093 (`CONFIG_IP_VS_MH_TAB_INDEX` 12 → `primes[12 - 8]`),
//!   `IP_VS_MH_TAB_BITS = 12 / 2 = 6`.
//! * Keys (fixed, `generate_hash_secret`): hash1 = {2654435761, 2654435761},
//!   hash2 = {2654446892, 2654446892}. Hash: `hsiphash(&v, 4, key)` with
//!   `v = offset + ntohs(port) + ntohl(addr)` (u32, wrapping), i.e.
//!   SipHash-1-3 on a 64-bit kernel over v's 4 bytes in host (little-endian)
//!   order — see [`super::siphash`].
//! * Per server (list order): `offset = h1(addr, port) % 4093`,
//!   `skip = h2(addr, port) % 4092 + 1`, and
//!   `turns = ((last_weight / gcd) >> rshift) ?: (last_weight != 0)`, where
//!   `gcd` is the gcd of the positive **`last_weight`s** and
//!   `rshift = max(0, fls(max_last_weight / gcd) - 6)`.
//!   `last_weight` is the latest non-zero weight the server was given
//!   (`__ip_vs_update_dest`), so setting a weight to 0 does not remove the
//!   server from the table; it is skipped at lookup time instead.
//! * Populate: rounds over the list; each server with `turns >= 1` claims
//!   `turns` entries in a row, each at its next free slot of its permutation
//!   (`perm += skip` mod 4093), until all 4093 entries are taken. If no server
//!   has a positive `last_weight` the table is emptied.
//! * Lookup: entry `h1(saddr, port) % 4093`; no server if it is
//!   unavailable (weight <= 0 or overloaded). With `mh-fallback` (SCHED1):
//!   try `roffset = (offset + ihash) % 4093`, entry
//!   `h1 with offset roffset % 4093`, for offset 0..4092. `mh-port` (SCHED2)
//!   hashes the source port (TCP/UDP/SCTP only).
//! * With more than 4093 servers `ip_vs_mh_reassign` fails with -EINVAL and
//!   the old table is kept; the model does the same.
//!
//! As for sh, the source address is hashed (the kernel's "inverse" case is
//! not a new-connection case).

use super::hash::{fls, gcd};
use super::sh::{is_unavailable, sched_port};
use super::siphash::hsiphash_u32_le_host;
use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// `IP_VS_MH_TAB_SIZE` for the default `CONFIG_IP_VS_MH_TAB_INDEX` 12.
pub const MH_TAB_SIZE: usize = 4093;
/// `IP_VS_MH_TAB_BITS`.
pub const MH_TAB_BITS: i32 = 6;
/// `generate_hash_secret`: hash1.
pub const MH_HASH1: [u64; 2] = [2654435761, 2654435761];
/// `generate_hash_secret`: hash2.
pub const MH_HASH2: [u64; 2] = [2654446892, 2654446892];

/// `ip_vs_mh_hashkey(af, addr, port, key, offset)` for IPv4 (`addr` host order).
#[inline]
pub fn mh_hashkey(addr: u32, port: u16, key: [u64; 2], offset: u32) -> u32 {
    let v = offset.wrapping_add(port as u32).wrapping_add(addr);
    hsiphash_u32_le_host(v, key)
}

/// `struct ip_vs_mh_state`: the lookup table and the weight scaling.
#[derive(Clone)]
pub struct Mh {
    lookup: Vec<Option<DestId>>,
    gcd: i32,
    rshift: i32,
}

impl std::fmt::Debug for Mh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mh {{ gcd: {}, rshift: {}, lookup: {:?}.. }}", self.gcd, self.rshift, &self.lookup[..8])
    }
}

/// `ip_vs_mh_gcd_weight`: gcd of the positive `last_weight`s, 0 if none.
fn gcd_weight(svc: &SvcView) -> i32 {
    let mut g = 0;
    for (_, d) in svc.iter() {
        let w = d.last_weight;
        if w > 0 {
            g = if g > 0 { gcd(w, g) } else { w };
        }
    }
    g
}

/// `ip_vs_mh_shift_weight`.
fn shift_weight(svc: &SvcView, gcd: i32) -> i32 {
    if gcd < 1 {
        return 0;
    }
    let weight = svc.iter().map(|(_, d)| d.last_weight).fold(0, i32::max);
    let mw = weight / gcd;
    let shift = fls(mw) - MH_TAB_BITS;
    if shift >= 0 {
        shift
    } else {
        0
    }
}

impl Mh {
    /// `ip_vs_mh_init_svc`.
    pub fn new(svc: &SvcView) -> Self {
        let mut s = Mh { lookup: vec![None; MH_TAB_SIZE], gcd: 0, rshift: 0 };
        s.dest_changed(svc);
        s
    }

    /// The lookup table, for tests.
    #[cfg(test)]
    pub(crate) fn lookup(&self) -> &[Option<DestId>] {
        &self.lookup
    }

    /// `ip_vs_mh_dest_changed` (and the body of init).
    fn dest_changed(&mut self, svc: &SvcView) {
        self.gcd = gcd_weight(svc);
        self.rshift = shift_weight(svc, self.gcd);
        self.reassign(svc);
    }

    /// `ip_vs_mh_reassign`: `ip_vs_mh_permutate` + `ip_vs_mh_populate`.
    fn reassign(&mut self, svc: &SvcView) {
        let n = svc.order.len();
        if n > MH_TAB_SIZE {
            return; // -EINVAL, table unchanged
        }
        if self.gcd < 1 {
            self.lookup.iter_mut().for_each(|e| *e = None); // ip_vs_mh_reset
            return;
        }
        // ip_vs_mh_permutate
        struct Setup {
            skip: u32,
            perm: u32,
            turns: i32,
        }
        let mut setup: Vec<Setup> = svc
            .iter()
            .map(|(_, d)| {
                let addr = super::hash::addr_fold_as(&d.addr, svc.v6);
                let offset = mh_hashkey(addr, d.port, MH_HASH1, 0) % MH_TAB_SIZE as u32;
                let skip = mh_hashkey(addr, d.port, MH_HASH2, 0) % (MH_TAB_SIZE as u32 - 1) + 1;
                let lw = d.last_weight;
                let t = (lw / self.gcd) >> self.rshift;
                let turns = if t != 0 { t } else { (lw != 0) as i32 };
                Setup { skip, perm: offset, turns }
            })
            .collect();
        // ip_vs_mh_populate
        let mut taken = vec![0u64; MH_TAB_SIZE.div_ceil(64)];
        let mut filled = 0usize;
        // gcd >= 1 means some server has last_weight > 0, hence turns >= 1,
        // so every round places at least one entry and the loop ends.
        'fill: loop {
            for (i, ds) in setup.iter_mut().enumerate() {
                if ds.turns < 1 {
                    continue;
                }
                for _ in 0..ds.turns {
                    let mut c = ds.perm as usize;
                    while taken[c / 64] & (1 << (c % 64)) != 0 {
                        ds.perm += ds.skip;
                        if ds.perm >= MH_TAB_SIZE as u32 {
                            ds.perm -= MH_TAB_SIZE as u32;
                        }
                        c = ds.perm as usize;
                    }
                    taken[c / 64] |= 1 << (c % 64);
                    self.lookup[c] = Some(svc.order[i]);
                    filled += 1;
                    if filled == MH_TAB_SIZE {
                        break 'fill;
                    }
                }
            }
        }
    }

    fn get(&self, svc: &SvcView, addr: u32, port: u16) -> Option<DestId> {
        let hash = mh_hashkey(addr, port, MH_HASH1, 0) as usize % MH_TAB_SIZE;
        let id = self.lookup[hash]?;
        if is_unavailable(svc.dest(id)) {
            None
        } else {
            Some(id)
        }
    }

    fn get_fallback(&self, svc: &SvcView, addr: u32, port: u16) -> Option<DestId> {
        let ihash = mh_hashkey(addr, port, MH_HASH1, 0) % MH_TAB_SIZE as u32;
        let id = self.lookup[ihash as usize]?;
        if !is_unavailable(svc.dest(id)) {
            return Some(id);
        }
        for offset in 0..MH_TAB_SIZE as u32 {
            let roffset = (offset + ihash) % MH_TAB_SIZE as u32;
            let hash = mh_hashkey(addr, port, MH_HASH1, roffset) as usize % MH_TAB_SIZE;
            let id = self.lookup[hash]?;
            if !is_unavailable(svc.dest(id)) {
                return Some(id);
            }
        }
        None
    }
}

impl Scheduler for Mh {
    fn name(&self) -> &'static str {
        "mh"
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

    fn schedule(&mut self, svc: &SvcView, pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let port = if svc.flags.port() { sched_port(pkt) } else { 0 };
        let addr = super::hash::addr_fold(&pkt.saddr);
        if svc.flags.fallback() {
            self.get_fallback(svc, addr, port)
        } else {
            self.get(svc, addr, port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::SchedFlags;
    use crate::sched::siphash::hsiphash;
    use crate::sched::testing::{ip, TestService};
    use std::net::Ipv4Addr;

    fn counts(mh: &Mh, ids: &[DestId]) -> Vec<usize> {
        ids.iter().map(|&id| mh.lookup().iter().filter(|&&e| e == Some(id)).count()).collect()
    }

    fn table(t: &TestService) -> Mh {
        Mh::new(&t.view())
    }

    /// `ip_vs_mh_hashkey` sees an address only through its fold (by the
    /// service's family): an IPv6 service whose servers and clients fold
    /// to some IPv4 addresses, or an IPv4 service whose IPv6 (tunnel)
    /// servers start with them, builds the same table and picks the same
    /// server as the IPv4 service of those addresses.
    #[test]
    fn ipv6_addresses_hash_by_their_fold() {
        use std::net::Ipv6Addr;
        // Words [0x20010db8, 0, 7, x ^ 0x20010db8 ^ 7]: fold x.
        let folding_to = |x: Ipv4Addr| {
            let w = u32::from(x) ^ 0x2001_0db8 ^ 7;
            Ipv6Addr::from((0x2001_0db8u128 << 96) | (7u128 << 32) | w as u128)
        };
        // First word x, the rest anything: read as x by an IPv4 service.
        let starting_with = |x: Ipv4Addr| Ipv6Addr::from(((u32::from(x) as u128) << 96) | 0xdead_beef);
        let servers: Vec<Ipv4Addr> = (1..=5).map(|i| Ipv4Addr::from(0xAC10_0000u32 + i)).collect();
        let (mut t4, mut t4b) = (TestService::new("mh"), TestService::new("mh"));
        let mut t6 = TestService::new("mh");
        t6.v6 = true;
        let mut tx = TestService::new("mh");
        for (i, &s) in servers.iter().enumerate() {
            let w = i as i32 + 1;
            assert_eq!(t4.add(s, w), t6.add(folding_to(s), w));
            assert_eq!(t4b.add_port(s, 81, w), tx.add_port(starting_with(s), 81, w));
        }
        assert_eq!(table(&t4).lookup(), table(&t6).lookup());
        assert_eq!(table(&t4b).lookup(), table(&tx).lookup());
        // Not a coincidence of the weights: other addresses, other tables.
        assert_ne!(table(&t4).lookup(), table(&t4b).lookup());
        for i in 0..200u32 {
            let c = Ipv4Addr::from(0xC633_6400u32 + i * 17);
            assert_eq!(t4.pick_from(c), t6.pick_from(folding_to(c)), "{c}");
        }
    }

    #[test]
    fn table_size_is_prime_4093() {
        assert_eq!(MH_TAB_SIZE, 4093);
        assert!((2..64).all(|p| 4093 % p != 0));
    }

    /// Two servers of weight 1: the fill alternates one entry each, the first
    /// in list order starting; 4093 is odd so it gets one more.
    #[test]
    fn equal_weights_alternate() {
        let mut t = TestService::new("mh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let mh = table(&t);
        assert_eq!(counts(&mh, &[b, a]), [2047, 2046]);
        assert!(mh.lookup().iter().all(|e| e.is_some()));
    }

    /// Weights 1, 2, 3 (gcd 1, rshift 0): each round places 3 + 2 + 1 = 6
    /// entries, C first (list [C, B, A]). 4093 = 682 * 6 + 1, so after 682
    /// rounds C places one more: C 2047, B 1364, A 682.
    #[test]
    fn proportional_to_weights() {
        let mut t = TestService::new("mh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 2);
        let c = t.add(ip(3), 3);
        assert_eq!(counts(&table(&t), &[c, b, a]), [2047, 1364, 682]);
        // Scaling by gcd: 2, 4, 6 gives the same turns.
        t.set_weight(a, 2);
        t.set_weight(b, 4);
        t.set_weight(c, 6);
        assert_eq!(counts(&table(&t), &[c, b, a]), [2047, 1364, 682]);
    }

    /// rshift: weights 1 and 200 (gcd 1): fls(200) = 8, rshift = 8 - 6 = 2;
    /// turns = 200 >> 2 = 50 and (1 >> 2 = 0) ?: 1 = 1. Rounds of 51:
    /// 4093 = 80 * 51 + 13; list [B(200), A(1)]: B 80*50 + 13, A 80.
    #[test]
    fn large_weights_are_shifted() {
        let mut t = TestService::new("mh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 200);
        let mh = table(&t);
        assert_eq!((mh.gcd, mh.rshift), (1, 2));
        assert_eq!(counts(&mh, &[b, a]), [4013, 80]);
    }

    /// The first placement of the first server in list order is its own
    /// offset slot (the table is empty then); the second server's first
    /// placement is its offset unless that slot was just taken. A client
    /// hashed to such a slot goes to that server.
    #[test]
    fn first_choice_slots_known_answer() {
        let mut t = TestService::new("mh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let off = |d: Ipv4Addr| hsiphash(&(u32::from(d).wrapping_add(80)).to_le_bytes(), MH_HASH1) as usize % 4093;
        let (ob, oa) = (off(ip(2)), off(ip(1)));
        let mh = table(&t);
        assert_eq!(mh.lookup()[ob], Some(b));
        if oa != ob {
            assert_eq!(mh.lookup()[oa], Some(a));
        }
        // find a client whose entry is B's offset slot
        let client = (0u32..)
            .map(|i| Ipv4Addr::from(0xAC10_0000u32 + i))
            .find(|&c| hsiphash(&u32::from(c).to_le_bytes(), MH_HASH1) as usize % 4093 == ob)
            .unwrap();
        assert_eq!(t.pick_from(client), Some(b));
    }

    /// Lookups agree with the table for many clients, and the client address
    /// is hashed with hash1 (the same key as the server offsets).
    #[test]
    fn lookup_uses_table_entry() {
        let mut t = TestService::new("mh");
        let ids = [t.add(ip(1), 1), t.add(ip(2), 2), t.add(ip(3), 3)];
        let mh = table(&t);
        for i in 0..500u32 {
            let client = Ipv4Addr::from(0xC633_6400u32 + i);
            let e = hsiphash(&u32::from(client).to_le_bytes(), MH_HASH1) as usize % 4093;
            assert_eq!(t.pick_from(client), mh.lookup()[e]);
            assert!(ids.contains(&t.pick_from(client).unwrap()));
        }
    }

    /// Weight 0 at add time: last_weight 0, no entries. Weight set to 0
    /// later: entries kept (last_weight stays), lookups there give none, or
    /// the next available entry with fallback.
    #[test]
    fn quiescent_servers() {
        let mut t = TestService::new("mh");
        let a = t.add(ip(1), 1);
        let z = t.add(ip(9), 0);
        let b = t.add(ip(2), 1);
        assert_eq!(counts(&table(&t), &[b, z, a]), [2047, 0, 2046]);
        t.set_weight(b, 0);
        let mh = table(&t);
        assert_eq!(counts(&mh, &[b, z, a]), [2047, 0, 2046], "table unchanged");
        let client_b = (0u32..)
            .map(|i| Ipv4Addr::from(0xAC11_0000u32 + i))
            .find(|&c| mh.lookup()[hsiphash(&u32::from(c).to_le_bytes(), MH_HASH1) as usize % 4093] == Some(b))
            .unwrap();
        assert_eq!(t.pick_from(client_b), None);
        t.flags = SchedFlags(SchedFlags::SCHED1);
        assert_eq!(t.pick_from(client_b), Some(a), "fallback finds the only available server");
        t.set_overloaded(a, true);
        assert_eq!(t.pick_from(client_b), None, "fallback with nothing available");
    }

    #[test]
    fn all_zero_and_empty() {
        let mut t = TestService::new("mh");
        assert_eq!(t.pick(), None);
        let a = t.add(ip(1), 0);
        assert!(table(&t).lookup().iter().all(|e| e.is_none()));
        assert_eq!(t.pick(), None);
        t.set_weight(a, 3);
        assert_eq!(t.pick(), Some(a));
        t.del(a);
        assert_eq!(t.pick(), None);
    }

    /// mh-port: the source port is added to the hashed value.
    #[test]
    fn port_flag() {
        let mut t = TestService::with_flags("mh", SchedFlags(SchedFlags::SCHED2));
        t.add(ip(1), 1);
        t.add(ip(2), 1);
        t.add(ip(3), 1);
        let mh = table(&t);
        let client = Ipv4Addr::new(172, 16, 9, 9);
        let mut seen = std::collections::HashSet::new();
        for port in 1000..1100u16 {
            let v = u32::from(client).wrapping_add(port as u32);
            let e = hsiphash(&v.to_le_bytes(), MH_HASH1) as usize % 4093;
            let got = t.pick_from_port(client, port);
            assert_eq!(got, mh.lookup()[e], "port {port}");
            seen.insert(got);
        }
        assert_eq!(seen.len(), 3, "ports spread the client over all servers");
    }

    /// Deleting a server: its entries move to the others (Maglev keeps most
    /// other entries in place).
    #[test]
    fn delete_reassigns() {
        let mut t = TestService::new("mh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let c = t.add(ip(3), 1);
        let before = table(&t);
        t.del(b);
        let after = table(&t);
        assert_eq!(counts(&after, &[c, a]), [2047, 2046]);
        assert_eq!(counts(&after, &[b]), [0]);
        let kept = (0..MH_TAB_SIZE).filter(|&i| before.lookup()[i] != Some(b) && before.lookup()[i] == after.lookup()[i]).count();
        let others = (0..MH_TAB_SIZE).filter(|&i| before.lookup()[i] != Some(b)).count();
        assert!(kept * 10 >= others * 8, "most entries of remaining servers stay: {kept}/{others}");
        // The scheduler's incrementally maintained table equals a fresh one.
        for i in 0..200u32 {
            let client = Ipv4Addr::from(0x0A0B_0000u32 + i);
            let e = hsiphash(&u32::from(client).to_le_bytes(), MH_HASH1) as usize % 4093;
            assert_eq!(t.pick_from(client), after.lookup()[e]);
        }
    }
}
