//! Destination hashing (`dh`), after `net/netfilter/ipvs/ip_vs_dh.c`:
//! `ip_vs_dh_hashkey`, `ip_vs_dh_reassign` (init, add, del), `ip_vs_dh_schedule`.
//!
//! * Table: 256 buckets; `ip_vs_dh_reassign` gives bucket `i` the server at
//!   list position `i % n` (one bucket per server per round; weights do not
//!   shape the table). The kernel registers no `upd_dest` for dh, and none is
//!   needed since the table does not depend on weights.
//! * Key: `hash_32(ntohl(daddr), 8)` (no port, no fallback).
//! * The bucket's server is used only if it is available, has weight > 0 and
//!   is not overloaded; otherwise no server. No deviation.

use super::hash::hash_32;
use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// `IP_VS_DH_TAB_BITS`.
pub const DH_TAB_BITS: u32 = 8;
/// `IP_VS_DH_TAB_SIZE`.
pub const DH_TAB_SIZE: usize = 1 << DH_TAB_BITS;

/// `struct ip_vs_dh_state`.
#[derive(Clone)]
pub struct Dh {
    buckets: [Option<DestId>; DH_TAB_SIZE],
}

impl std::fmt::Debug for Dh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dh {{ buckets: {:?}.. }}", &self.buckets[..8])
    }
}

impl Dh {
    /// `ip_vs_dh_init_svc`.
    pub fn new(svc: &SvcView) -> Self {
        let mut s = Dh { buckets: [None; DH_TAB_SIZE] };
        s.reassign(svc);
        s
    }

    /// `ip_vs_dh_reassign`.
    fn reassign(&mut self, svc: &SvcView) {
        let n = svc.order.len();
        for (i, b) in self.buckets.iter_mut().enumerate() {
            *b = if n == 0 { None } else { Some(svc.order[i % n]) };
        }
    }
}

impl Scheduler for Dh {
    fn name(&self) -> &'static str {
        "dh"
    }

    fn add_dest(&mut self, svc: &SvcView, _id: DestId) {
        self.reassign(svc);
    }

    fn del_dest(&mut self, svc: &SvcView, _id: DestId, _former_pos: usize) {
        self.reassign(svc);
    }

    fn schedule(&mut self, svc: &SvcView, pkt: &SchedPacket, _now: Time, _rng: &mut dyn RandomSource) -> Option<DestId> {
        let id = self.buckets[hash_32(super::hash::addr_fold(&pkt.daddr), DH_TAB_BITS) as usize]?;
        let d = svc.dest(id);
        if !d.available || d.weight <= 0 || d.overloaded {
            return None;
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testing::{ip, TestService};
    use std::net::Ipv4Addr;

    fn bucket(daddr: Ipv4Addr) -> usize {
        (u32::from(daddr).wrapping_mul(0x61C8_8647) >> 24) as usize
    }

    /// `ip_vs_dh_hashkey` for AF_INET6: `hash_32` of the XOR of the four
    /// words of the destination.
    #[test]
    fn ipv6_destinations_hash_by_the_folded_address() {
        use std::net::Ipv6Addr;
        let mut t = TestService::new("dh");
        let a = t.add("2001:db8:1::1".parse::<Ipv6Addr>().unwrap(), 1);
        let b = t.add("2001:db8:1::2".parse::<Ipv6Addr>().unwrap(), 1);
        let c = t.add("2001:db8:1::3".parse::<Ipv6Addr>().unwrap(), 1);
        let order = [c, b, a];
        for x in 1..=50u16 {
            let dst = Ipv6Addr::new(0x2001, 0xdb8, 0xff, x, 0, 0, 0, 0x10);
            let fold: u32 = 0x2001_0db8 ^ (0x00ff_0000 | x as u32) ^ 0 ^ 0x10;
            let bucket = (fold.wrapping_mul(0x61C8_8647) >> 24) as usize;
            assert_eq!(t.pick_to(dst), Some(order[bucket % 3]), "{dst}");
        }
    }

    #[test]
    fn bucket_i_is_server_i_mod_n() {
        let mut t = TestService::new("dh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 5);
        let c = t.add(ip(3), 9);
        let order = [c, b, a];
        // 10.0.0.1 hashes to bucket 39 (0x27C88647 >> 24): 39 % 3 = 0 -> C.
        assert_eq!(t.pick_to(Ipv4Addr::new(10, 0, 0, 1)), Some(c));
        for x in 1..=50u8 {
            let dst = Ipv4Addr::new(203, 0, 113, x);
            assert_eq!(t.pick_to(dst), Some(order[bucket(dst) % 3]), "{dst}");
        }
        // The source address does not matter.
        let dst = Ipv4Addr::new(203, 0, 113, 7);
        let want = t.pick_to(dst);
        for x in 1..=20u8 {
            let pkt = crate::sched::SchedPacket { saddr: Ipv4Addr::new(192, 0, 2, x).into(), daddr: dst.into(), ..t.pkt };
            assert_eq!(t.pick_pkt(pkt), want);
        }
    }

    #[test]
    fn unavailable_bucket_owner_gives_none() {
        let mut t = TestService::new("dh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let dst = (1..=255u8).map(|x| Ipv4Addr::new(203, 0, 113, x)).find(|&d| bucket(d) & 1 == 0).unwrap();
        assert_eq!(t.pick_to(dst), Some(b));
        t.set_overloaded(b, true);
        assert_eq!(t.pick_to(dst), None);
        t.set_overloaded(b, false);
        t.set_weight(b, 0);
        assert_eq!(t.pick_to(dst), None, "weight 0 -> none, no fallback");
        t.del(b);
        assert_eq!(t.pick_to(dst), Some(a), "table rebuilt without B");
        t.del(a);
        assert_eq!(t.pick_to(dst), None);
    }
}
