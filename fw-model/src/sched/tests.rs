//! Tests across all schedulers: the registry, robustness under random list
//! states, no allocation in `schedule`. Timing is in `benches/director.rs`.

use super::testing::{ip, TestService};
use super::*;
use crate::rng::SplitMix64;
use crate::time::SEC;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts allocations made by the current thread (tests run in parallel).
struct CountingAlloc;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// `unsafe` allowed here (the workspace denies it): a `GlobalAlloc` impl is
// `unsafe` by definition; it only counts and forwards to `System`.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocs() -> usize {
    ALLOCS.with(|c| c.get())
}

#[test]
fn registry_knows_every_scheduler() {
    let view = SvcView { dests: &[], order: &[], flags: SchedFlags::default(), proto: Protocol::Tcp, port: 80, v6: false };
    for &name in SCHEDULERS {
        let s = new_scheduler(name, &view, 0).expect(name);
        assert_eq!(s.name(), name);
    }
    assert_eq!(SCHEDULERS.len(), 14);
    let err = new_scheduler("wrrr", &view, 0).unwrap_err();
    assert_eq!(err, UnknownScheduler("wrrr".into()));
    assert!(err.to_string().contains("unknown scheduler 'wrrr'"));
    assert!(new_scheduler("RR", &view, 0).is_err(), "names are case-sensitive like the kernel's");
}

#[test]
fn every_scheduler_handles_an_empty_service() {
    for &name in SCHEDULERS {
        let mut t = TestService::new(name);
        assert_eq!(t.pick(), None, "{name}");
        let a = t.add(ip(1), 1);
        t.del(a);
        assert_eq!(t.pick(), None, "{name} after add+del");
    }
}

#[test]
fn every_scheduler_handles_all_quiescent_and_all_overloaded() {
    for &name in SCHEDULERS {
        let mut t = TestService::new(name);
        let ids: Vec<_> = (1..=4).map(|i| t.add(ip(i), 0)).collect();
        for _ in 0..3 {
            assert_eq!(t.pick(), None, "{name} all weight 0");
        }
        for &id in &ids {
            t.set_weight(id, 5);
            t.set_overloaded(id, true);
        }
        // (lblc/lblcr ignore the flag for a cached server, but nothing is
        // cached yet: their wlc rule finds nothing.)
        for _ in 0..3 {
            assert_eq!(t.pick(), None, "{name} all overloaded");
        }
    }
}

/// Random adds, deletes, edits, counters (including extremes), overload
/// flags, packets and time jumps: no panic, and every pick is a server of the
/// service; schedulers that never return a quiescent or overloaded server
/// are checked for that too.
#[test]
fn random_list_states_never_panic() {
    for &name in SCHEDULERS {
        let mut rng = SplitMix64::new(0xC0FFEE ^ name.len() as u64);
        let flags = SchedFlags(((rng.next_u64() % 4) as u32) * SchedFlags::SCHED1);
        let mut t = TestService::with_flags(name, flags);
        let strict = !matches!(name, "wlc" | "sed" | "lblc" | "lblcr");
        for step in 0..3000 {
            let op = rng.below(100);
            let n = t.order.len();
            match op {
                0..=14 => {
                    let addr = ip(1 + rng.below(16) as u8);
                    let in_svc = t.order.iter().any(|&id| t.dests[id.index()].addr == addr);
                    if !in_svc {
                        let w = [0, 1, 2, 3, 7, 100, 65535, rng.below(65536) as i32][rng.below(8) as usize];
                        t.add(addr, w);
                    }
                }
                15..=22 if n > 0 => {
                    let id = t.order[rng.below(n as u64) as usize];
                    t.del(id);
                }
                23..=32 if n > 0 => {
                    let id = t.order[rng.below(n as u64) as usize];
                    let w = [0, 1, 5, 65535, rng.below(65536) as i32][rng.below(5) as usize];
                    t.set_weight(id, w);
                }
                33..=45 if n > 0 => {
                    let id = t.order[rng.below(n as u64) as usize];
                    let pick = |r: &mut SplitMix64| match r.below(6) {
                        0 => i32::MAX,
                        1 => i32::MAX - 1,
                        2 => 0x0080_0000,
                        3 => -1,
                        _ => r.below(1000) as i32,
                    };
                    let (x, y) = (pick(&mut rng), pick(&mut rng));
                    t.set_conns(id, x, y);
                }
                46..=52 if n > 0 => {
                    let id = t.order[rng.below(n as u64) as usize];
                    let v = rng.below(2) == 0;
                    t.set_overloaded(id, v);
                }
                53..=56 => {
                    t.now += match rng.below(4) {
                        0 => rng.below(120) * SEC,
                        1 => rng.below(3600 * 30) * SEC,
                        2 => rng.below(1000),
                        _ => 400 * 24 * 3600 * SEC,
                    };
                }
                _ => {
                    let pkt = SchedPacket {
                        saddr: std::net::Ipv4Addr::from(rng.next_u32()).into(),
                        daddr: std::net::Ipv4Addr::from(0xCB00_7100 | (rng.below(64) as u32)).into(),
                        sport: rng.next_u32() as u16,
                        dport: 80,
                        proto: [6, 17, 132, 1][rng.below(4) as usize],
                    };
                    if let Some(id) = t.pick_pkt(pkt) {
                        assert!(t.order.contains(&id), "{name} step {step}: picked a server not in the list");
                        let d = &t.dests[id.index()];
                        assert!(d.available, "{name} step {step}");
                        if strict {
                            assert!(d.weight > 0 && !d.overloaded, "{name} step {step}: {d:?}");
                        }
                    }
                }
            }
        }
    }
}

/// Ten servers of mixed weights and loads.
fn ten_servers(name: &str) -> TestService {
    let mut t = TestService::new(name);
    for i in 0..10u8 {
        let id = t.add(ip(i + 1), [1, 2, 3, 5, 8][i as usize % 5]);
        t.set_conns(id, i as i32 * 3, i as i32 * 17);
    }
    t
}

/// `schedule` does not allocate (lblc/lblcr: once their cache entry exists).
#[test]
fn schedule_does_not_allocate() {
    // The counter works: a Vec allocation is seen.
    let probe = allocs();
    std::hint::black_box(vec![1u8; 16]);
    assert!(allocs() > probe, "allocation counter is live");
    for &name in SCHEDULERS {
        let mut t = ten_servers(name);
        let mut rng = SplitMix64::new(1);
        // Warm up: lblc/lblcr create their cache entry for the default
        // destination here.
        for _ in 0..50 {
            t.pick();
        }
        let before = allocs();
        for _ in 0..1000 {
            let pkt = SchedPacket { saddr: std::net::Ipv4Addr::from(rng.next_u32()).into(), sport: rng.next_u32() as u16, ..t.pkt };
            let got = t.pick_pkt(pkt);
            std::hint::black_box(got);
        }
        assert_eq!(allocs() - before, 0, "{name} allocated in schedule");
    }
}
