//! Source hashing (`sh`), after `net/netfilter/ipvs/ip_vs_sh.c`:
//! `ip_vs_sh_hashkey`, `ip_vs_sh_get`, `ip_vs_sh_get_fallback`,
//! `ip_vs_sh_reassign` (init, add, del **and upd**), `ip_vs_sh_get_port`,
//! `ip_vs_sh_schedule`.
//!
//! * Table: 256 buckets (`CONFIG_IP_VS_SH_TAB_BITS` 8). `ip_vs_sh_reassign`
//!   walks the list from the head, cyclically, giving each server `weight`
//!   consecutive buckets (`if (++d_count >= weight) next server`), so a
//!   **weight-0 server still gets one bucket** (1 >= 0) and a server with
//!   weight >= 256 at the head takes every bucket. The current `weight` is
//!   used (not `last_weight`), and the table is rebuilt on every add, delete
//!   and edit.
//! * Key: `hash_32(ntohs(port) + ntohl(saddr), 8)` (u32 wrap-around sum),
//!   plus `offset` for the fallback walk, `& 255`. `port` is 0 unless
//!   `sh-port` (`IP_VS_SVC_F_SCHED_SH_PORT` = SCHED2) is set, and then the
//!   packet's source port for TCP/UDP/SCTP, 0 for other protocols.
//! * Without `sh-fallback` (SCHED1): the bucket's server, or none when it is
//!   overloaded or has weight <= 0 (`is_unavailable`).
//! * With `sh-fallback`: if the bucket's server is unavailable, try
//!   `roffset = (offset + ihash) % 256` for offset 0..255, bucket
//!   `(roffset + hash) & 255` (note: the hash is added twice, as in the
//!   kernel), first available server wins.
//!
//! The kernel hashes the destination address instead when the packet is the
//! "inverse" direction (`ip_vs_iph_inverse`, ICMP replies); new connections
//! are scheduled from the client side, so the model always hashes `saddr`.

use super::hash::hash_32;
use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::{Dest, DestId};
use crate::rng::RandomSource;
use crate::time::Time;

/// `IP_VS_SH_TAB_BITS`.
pub const SH_TAB_BITS: u32 = 8;
/// `IP_VS_SH_TAB_SIZE`.
pub const SH_TAB_SIZE: usize = 1 << SH_TAB_BITS;
const SH_TAB_MASK: u32 = (SH_TAB_SIZE as u32) - 1;

/// `struct ip_vs_sh_state`: the bucket table.
#[derive(Clone)]
pub struct Sh {
    buckets: [Option<DestId>; SH_TAB_SIZE],
}

impl std::fmt::Debug for Sh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sh {{ buckets: {:?}.. }}", &self.buckets[..8])
    }
}

/// `ip_vs_sh_get_port` / `ip_vs_mh_get_port`: the source port for TCP, UDP
/// and SCTP, 0 otherwise.
#[inline]
pub(crate) fn sched_port(pkt: &SchedPacket) -> u16 {
    match pkt.proto {
        6 | 17 | 132 => pkt.sport,
        _ => 0,
    }
}

/// `is_unavailable` of ip_vs_sh.c / ip_vs_mh.c.
#[inline]
pub(crate) fn is_unavailable(d: &Dest) -> bool {
    d.weight <= 0 || d.overloaded
}

/// `ip_vs_sh_hashkey(af, addr, port, offset)` for IPv4 (`addr` in host order).
#[inline]
pub fn sh_hashkey(addr: u32, port: u16, offset: u32) -> usize {
    (offset.wrapping_add(hash_32((port as u32).wrapping_add(addr), SH_TAB_BITS)) & SH_TAB_MASK) as usize
}

impl Sh {
    /// `ip_vs_sh_init_svc`: a table for the current list.
    pub fn new(svc: &SvcView) -> Self {
        let mut s = Sh { buckets: [None; SH_TAB_SIZE] };
        s.reassign(svc);
        s
    }

    /// The bucket table, for tests.
    #[cfg(test)]
    pub(crate) fn buckets(&self) -> &[Option<DestId>; SH_TAB_SIZE] {
        &self.buckets
    }

    /// `ip_vs_sh_reassign`.
    fn reassign(&mut self, svc: &SvcView) {
        let n = svc.order.len();
        if n == 0 {
            self.buckets = [None; SH_TAB_SIZE];
            return;
        }
        let mut p = 0usize;
        let mut d_count: i32 = 0;
        for b in self.buckets.iter_mut() {
            if p == n {
                p = 0;
            }
            let id = svc.order[p];
            *b = Some(id);
            d_count += 1;
            if d_count >= svc.dest(id).weight {
                p += 1;
                d_count = 0;
            }
        }
    }

    fn get(&self, svc: &SvcView, addr: u32, port: u16) -> Option<DestId> {
        let id = self.buckets[sh_hashkey(addr, port, 0)]?;
        if is_unavailable(svc.dest(id)) {
            None
        } else {
            Some(id)
        }
    }

    fn get_fallback(&self, svc: &SvcView, addr: u32, port: u16) -> Option<DestId> {
        let ihash = sh_hashkey(addr, port, 0);
        let id = self.buckets[ihash]?;
        if !is_unavailable(svc.dest(id)) {
            return Some(id);
        }
        for offset in 0..SH_TAB_SIZE as u32 {
            let roffset = (offset + ihash as u32) % SH_TAB_SIZE as u32;
            let hash = sh_hashkey(addr, port, roffset);
            let id = self.buckets[hash]?;
            if !is_unavailable(svc.dest(id)) {
                return Some(id);
            }
        }
        None
    }
}

impl Scheduler for Sh {
    fn name(&self) -> &'static str {
        "sh"
    }

    fn add_dest(&mut self, svc: &SvcView, _id: DestId) {
        self.reassign(svc);
    }

    fn del_dest(&mut self, svc: &SvcView, _id: DestId, _former_pos: usize) {
        self.reassign(svc);
    }

    fn upd_dest(&mut self, svc: &SvcView, _id: DestId) {
        self.reassign(svc);
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
    use crate::sched::testing::{ip, TestService};
    use std::net::Ipv4Addr;

    /// Bucket of a client, straight from the definitions:
    /// `hash_32(v, 8) = (v * 0x61C88647 mod 2^32) >> 24`, v = port + addr.
    fn bucket(addr: Ipv4Addr, port: u16) -> usize {
        let v = u32::from(addr).wrapping_add(port as u32);
        (v.wrapping_mul(0x61C8_8647) >> 24) as usize
    }

    #[test]
    fn hand_computed_buckets() {
        // 10.0.0.1 = 0x0A000001: 0x0A000001 * 0x61C88647 = 0x27C88647 (mod 2^32),
        // top byte 0x27 = 39.
        assert_eq!(sh_hashkey(0x0A00_0001, 0, 0), 39);
        assert_eq!(bucket(Ipv4Addr::new(10, 0, 0, 1), 0), 39);
        // 192.0.2.10 = 0xC000020A. Mod 2^32: 0xC0000000 * 0x61C88647 =
        // 0x40000000 (only the low nibble of 0xC * 0x61C88647 = ..54 survives
        // << 28); 0x200 * 0x61C88647 = 0x910C8E00; 0xA * 0x61C88647 =
        // 0xD1D53EC6; sum 0xA2E1CCC6 -> top byte 0xA2 = 162.
        assert_eq!(sh_hashkey(0xC000_020A, 0, 0), 162);
        assert_eq!(bucket(Ipv4Addr::new(192, 0, 2, 10), 0), 162);
        // offset is added after hashing, mod 256.
        assert_eq!(sh_hashkey(0x0A00_0001, 0, 250), (39 + 250) % 256);
        // port is added before hashing.
        assert_eq!(sh_hashkey(0x0A00_0001, 1, 0), bucket(Ipv4Addr::new(10, 0, 0, 2), 0));
    }

    /// IPv6 clients hash by `ip_vs_sh_hashkey`'s AF_INET6 fold: the XOR of
    /// the four 32-bit words, then `hash_32(port + fold, 8)`.
    #[test]
    fn ipv6_clients_hash_by_the_folded_address() {
        use std::net::Ipv6Addr;
        let mut t = TestService::new("sh");
        let a = t.add("2001:db8:1::1".parse::<Ipv6Addr>().unwrap(), 1);
        let b = t.add("2001:db8:1::2".parse::<Ipv6Addr>().unwrap(), 1);
        // list [B, A]: even buckets B, odd A.
        // 2001:db8::10: words 0x20010db8, 0, 0, 0x10: fold 0x20010da8;
        // buckets computed from the definition of hash_32.
        let by_fold = |fold: u32| (fold.wrapping_mul(0x61C8_8647) >> 24) as usize;
        let c: Ipv6Addr = "2001:db8::10".parse().unwrap();
        assert_eq!(t.pick_from(c), Some([b, a][by_fold(0x2001_0da8) % 2]));
        for x in 1..=40u16 {
            let c = Ipv6Addr::new(0x2001, 0xdb8, 7, 0, 0, 0, x, 0x100 + x);
            let fold = 0x2001_0db8 ^ 0x0007_0000 ^ 0 ^ (((x as u32) << 16) | (0x100 + x as u32));
            assert_eq!(t.pick_from(c), Some([b, a][by_fold(fold) % 2]), "{c}");
        }
        // An IPv6 client whose fold equals an IPv4 client's address goes
        // where that IPv4 client goes.
        let v4 = Ipv4Addr::new(172, 16, 0, 9);
        let o = u32::from(v4).to_be_bytes();
        let v6 = Ipv6Addr::from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, o[0], o[1], o[2], o[3]]);
        assert_eq!(t.pick_from(v6), t.pick_from(v4));
    }

    /// Weights 1, 2, 3 added A, B, C: list [C, B, A]: buckets repeat
    /// C C C B B A; 256 = 42*6 + 4, so the table ends C C C B:
    /// A 42, B 84 + 1, C 126 + 3.
    #[test]
    fn weighted_bucket_assignment() {
        let mut t = TestService::new("sh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 2);
        let c = t.add(ip(3), 3);
        let pattern = [c, c, c, b, b, a];
        let sh = Sh::new(&t.view());
        for i in 0..SH_TAB_SIZE {
            assert_eq!(sh.buckets()[i], Some(pattern[i % 6]), "bucket {i}");
        }
        let counts = [a, b, c].map(|id| sh.buckets().iter().filter(|&&x| x == Some(id)).count());
        assert_eq!(counts, [42, 85, 129]);
        // The scheduler's own table (built incrementally) is the same.
        for last in 1..=60u8 {
            let client = Ipv4Addr::new(172, 16, 0, last);
            assert_eq!(t.pick_from(client), Some(pattern[bucket(client, 0) % 6]), "{client}");
        }
    }

    /// A weight-0 server keeps one bucket; clients hashed there get nothing
    /// (no fallback), or the next available server (fallback).
    #[test]
    fn quiescent_server_keeps_a_bucket() {
        let mut t = TestService::new("sh");
        let a = t.add(ip(1), 0);
        let b = t.add(ip(2), 1);
        // list [B(1), A(0)]: B A B A ...: odd buckets are A's.
        let sh = Sh::new(&t.view());
        assert_eq!(sh.buckets()[0], Some(b));
        assert_eq!(sh.buckets()[1], Some(a));
        assert_eq!(sh.buckets()[255], Some(a));
        let odd = (1..=255u8).map(|x| Ipv4Addr::new(172, 16, 1, x)).find(|&c| bucket(c, 0) & 1 == 1).unwrap();
        let even = (1..=255u8).map(|x| Ipv4Addr::new(172, 16, 1, x)).find(|&c| bucket(c, 0) & 1 == 0).unwrap();
        assert_eq!(t.pick_from(odd), None);
        assert_eq!(t.pick_from(even), Some(b));
        // Fallback: offset 0 looks at bucket (ihash + ihash) & 255, even -> B.
        let mut f = TestService::with_flags("sh", SchedFlags(SchedFlags::SCHED1));
        let _a = f.add(ip(1), 0);
        let fb = f.add(ip(2), 1);
        assert_eq!(f.pick_from(odd), Some(fb));
    }

    #[test]
    fn overloaded_without_and_with_fallback() {
        for flags in [SchedFlags(0), SchedFlags(SchedFlags::SCHED1)] {
            let mut t = TestService::with_flags("sh", flags);
            let a = t.add(ip(1), 1);
            let b = t.add(ip(2), 1);
            // list [B, A]: even buckets B, odd A.
            let client = (1..=255u8).map(|x| Ipv4Addr::new(172, 16, 2, x)).find(|&c| bucket(c, 0) & 1 == 0).unwrap();
            assert_eq!(t.pick_from(client), Some(b));
            t.set_overloaded(b, true);
            if flags.fallback() {
                // 2*ihash is even -> B again, overloaded; offset 1: (ihash+1+ihash)
                // is odd -> A.
                assert_eq!(t.pick_from(client), Some(a));
            } else {
                assert_eq!(t.pick_from(client), None);
            }
            t.set_overloaded(a, true);
            assert_eq!(t.pick_from(client), None, "everyone unavailable");
        }
    }

    /// `sh-port` adds the source port (TCP/UDP/SCTP only) before hashing.
    #[test]
    fn port_flag() {
        let mut t = TestService::with_flags("sh", SchedFlags(SchedFlags::SCHED2));
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let pick_for = |t: &mut TestService, port: u16| {
            let client = Ipv4Addr::new(172, 16, 3, 3);
            let want = [b, a][bucket(client, port) % 2];
            assert_eq!(t.pick_from_port(client, port), Some(want), "port {port}");
            want
        };
        let got: Vec<_> = (1000..1010).map(|p| pick_for(&mut t, p)).collect();
        assert!(got.contains(&a) && got.contains(&b), "ports spread over both servers");
        // ICMP: port ignored.
        let client = Ipv4Addr::new(172, 16, 3, 3);
        let pkt = SchedPacket { saddr: client.into(), sport: 1001, proto: 1, ..t.pkt };
        assert_eq!(t.pick_pkt(pkt), Some([b, a][bucket(client, 0) % 2]));
        // Without the flag the port does not matter.
        let mut u = TestService::new("sh");
        let ua = u.add(ip(1), 1);
        let ub = u.add(ip(2), 1);
        for p in 1000..1010 {
            assert_eq!(u.pick_from_port(client, p), Some([ub, ua][bucket(client, 0) % 2]));
        }
    }

    #[test]
    fn delete_and_edit_reassign() {
        let mut t = TestService::new("sh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 1);
        let client = (1..=255u8).map(|x| Ipv4Addr::new(172, 16, 4, x)).find(|&c| bucket(c, 0) & 1 == 1).unwrap();
        assert_eq!(t.pick_from(client), Some(a));
        // weight 2 on B: B B A pattern -> bucket k%3.
        t.set_weight(b, 2);
        assert_eq!(t.pick_from(client), Some([b, b, a][bucket(client, 0) % 3]));
        t.del(b);
        assert_eq!(t.pick_from(client), Some(a));
        t.del(a);
        assert_eq!(t.pick_from(client), None, "empty");
    }

    /// A huge weight at the head takes all 256 buckets.
    #[test]
    fn huge_weight_takes_everything() {
        let mut t = TestService::new("sh");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 65535);
        let sh = Sh::new(&t.view());
        assert!(sh.buckets().iter().all(|&x| x == Some(b)));
        let _ = a;
    }
}
