//! Host driver benchmarks (criterion, one core), `model` backend:
//!
//! * `exception_loop/new_conn`: a SYN of a new connection through the
//!   daemon's exception loop — the card model hands it up the receive ring,
//!   the golden model schedules it, the NAT frame is injected down the
//!   transmit ring (since the half-open rule, docs/architecture.md "When a
//!   connection is offloaded", the SYN installs no flow: the connection's
//!   two flows and its actions are installed at the ACK that makes it
//!   ESTABLISHED; before, at the SYN, through the registers);
//! * `flow_install/cuckoo`: one flow entry placed (cuckoo, 2 ways × 4
//!   slots, ~70 % full table) and written through the registers;
//! * `table_full/spoofed_syn`: a SYN from a random (spoofed) source
//!   through the exception loop while the flow table (8192 slots) is full
//!   of established NAT connections;
//! * `table_full/unplaceable_established`: a data frame of an established
//!   connection that did not fit in that full table (handled by the host);
//! * `cli/round_trip`: `lvsnic -L -n` over the Unix socket to a running
//!   daemon (request, listing, reply).
//!
//! `cargo bench -p lvsnic --bench driver`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lvsnic::control::Control;
use lvsnic::device::model::ModelDevice;
use lvsnic::limits::Limits;
use lvsnic::device::model::MODEL_PARAMS;
use lvsnic::slowpath::SlowPath;
use lvsnic_model::director::Director;
use lvsnic_model::hw::placement::FlowPlacer;
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::tables::{FlowEntry, FlowKey};
use lvsnic_model::hw::{Csr, HwPipeline};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::time::SEC;
use lvsnic_model::wire::TCP_SYN;
use lvsnic_fixtures::*;
use std::hint::black_box;

const RULES: &str = "-A -t 10.0.0.100:80 -s wlc\n\
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 2\n\
-a -t 10.0.0.100:80 -r 192.168.10.3:80 -m -w 3\n-a -t 10.0.0.100:80 -r 192.168.10.4:80 -m -w 1\n";

fn bench_exception_loop(c: &mut Criterion) {
    let rules = parse_rules(RULES).unwrap();
    let mut g = c.benchmark_group("exception_loop");
    g.throughput(Throughput::Elements(1));
    let make = || {
        let d = Director::new(config("[timeouts]\ntcp = 2678400\n"), &rules, T0).unwrap();
        let dev = ModelDevice::model(MODEL_PARAMS, Default::default()).unwrap();
        Control::new(SlowPath::new(d, dev, MODEL_PARAMS).unwrap(), MODEL_PARAMS.vip_count, Limits::default())
    };
    let mut ctl = make();
    let mut n: u32 = 0;
    let mut t = T0;
    g.bench_function("new_conn", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let batch = left.min(20_000);
                left -= batch;
                if ctl.offloaded() > 150_000 {
                    // Keep the tables well below full: start over (untimed).
                    ctl = make();
                    t = T0;
                }
                let frames: Vec<Vec<u8>> = (0..batch)
                    .map(|_| {
                        n = n.wrapping_add(1);
                        let client = std::net::Ipv4Addr::from(0xC612_0000 + (n >> 10));
                        tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client, VIP), 1024 + (n & 1023) as u16, 80, TCP_SYN, 1, 0, b"")
                    })
                    .collect();
                let start = std::time::Instant::now();
                for f in &frames {
                    t += 1000;
                    black_box(ctl.frame(t, f).unwrap());
                }
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
    let _ = SEC;
}

fn bench_flow_install(c: &mut Criterion) {
    let mut g = c.benchmark_group("flow_install");
    g.throughput(Throughput::Elements(1));
    let params = MODEL_PARAMS;
    let mut hw = HwPipeline::new(params);
    let mut placer = FlowPlacer::new(params);
    let fill = params.flow_slots() * 7 / 10;
    let key = |i: u64| FlowKey { proto: 6, saddr: 0xC612_0000 + (i as u32 >> 8), daddr: 0x0A00_0064, sport: 1024 + (i as u16 & 255), dport: 80 };
    for i in 0..fill as u64 {
        let _ = placer.insert(FlowEntry::new(key(i), 1, true));
    }
    let mut i = fill as u64;
    g.bench_function("cuckoo", |b| {
        b.iter(|| {
            i += 1;
            // Insert one, remove an old one: occupancy stays at ~70 %.
            if let Ok(writes) = placer.insert(FlowEntry::new(key(i), 1, true)) {
                for w in writes {
                    for (a, v) in w.register_writes() {
                        hw.write32(a, v);
                    }
                }
            }
            if let Some(w) = placer.remove(&key(i - fill as u64)) {
                hw.write32(FLOW_INDEX, w.index as u32);
                black_box(&w);
            }
        })
    });
    // A full table: the search for a free slot runs to its end
    // (MAX_BFS_NODES) and fails, as it does for every new connection of a
    // flood before an idle entry is evicted.
    let mut full = FlowPlacer::new(params);
    let mut n = 0u64;
    let mut refused = 0;
    while refused < 64 {
        n += 1;
        if full.insert(FlowEntry::new(key(n), 1, true)).is_err() {
            refused += 1;
        }
    }
    g.bench_function("cuckoo_full_refused", |b| {
        b.iter(|| {
            n += 1;
            black_box(full.insert(FlowEntry::new(key(n), 1, true)).is_err())
        })
    });
    g.finish();
}

/// A card with 8192 flow slots full of established NAT connections
/// (SYN then ACK from 8000 clients), and a client whose connection did
/// not fit.
fn full_table() -> (Control<ModelDevice>, (std::net::Ipv4Addr, u16), lvsnic_model::time::Time) {
    use lvsnic_model::wire::TCP_ACK;
    let params = lvsnic_model::hw::HwParams { flow_buckets_log2: 10, ..MODEL_PARAMS };
    let rules = parse_rules(RULES).unwrap();
    let d = Director::new(config("[timeouts]\ntcp = 2678400\n"), &rules, T0).unwrap();
    let dev = ModelDevice::model(params, Default::default()).unwrap();
    let mut ctl = Control::new(SlowPath::new(d, dev, params).unwrap(), params.vip_count, Limits::default());
    let mut t = T0;
    let mut unplaced = None;
    for n in 0..8000u32 {
        let c = (std::net::Ipv4Addr::from(0xC633_0000 + n), 40000u16);
        let full = ctl.table_full();
        t += 100;
        ctl.frame(t, &tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c.0, VIP), c.1, 80, TCP_SYN, 1, 0, b"")).unwrap();
        t += 100;
        ctl.frame(t, &tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c.0, VIP), c.1, 80, TCP_ACK, 2, 1, b"")).unwrap();
        if ctl.table_full() > full && unplaced.is_none() {
            unplaced = Some(c);
        }
    }
    (ctl, unplaced.expect("the table filled"), t)
}

fn bench_table_full(c: &mut Criterion) {
    use lvsnic_model::wire::{TCP_ACK, TCP_PSH};
    let mut g = c.benchmark_group("table_full");
    g.throughput(Throughput::Elements(1));
    let (mut ctl, _, mut t) = full_table();
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut sent = 0u64;
    g.bench_function("spoofed_syn", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let batch = left.min(20_000);
                left -= batch;
                if sent > 200_000 {
                    // The director's SYN_RECV entries pile up: start over (untimed).
                    (ctl, _, t) = full_table();
                    sent = 0;
                }
                let frames: Vec<Vec<u8>> = (0..batch)
                    .map(|_| {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let client = std::net::Ipv4Addr::from(0x0100_0000 + (rng as u32 % 0xDF00_0000));
                        tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client, VIP), 1024 + (rng >> 40) as u16 % 60000, 80, TCP_SYN, 1, 0, b"")
                    })
                    .collect();
                sent += batch;
                let start = std::time::Instant::now();
                for f in &frames {
                    t += 100;
                    black_box(ctl.frame(t, f).unwrap());
                }
                total += start.elapsed();
            }
            total
        })
    });
    let (mut ctl, mut x, mut t) = full_table();
    let mut sent = 0u64;
    g.bench_function("unplaceable_established", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let batch = left.min(20_000);
                left -= batch;
                if sent > 200_000 {
                    // Keep simulated time well under a second (no eviction).
                    (ctl, x, t) = full_table();
                    sent = 0;
                }
                sent += batch;
                let f = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(x.0, VIP), x.1, 80, TCP_ACK | TCP_PSH, 2, 1, b"data");
                let start = std::time::Instant::now();
                for _ in 0..batch {
                    t += 100;
                    black_box(ctl.frame(t, &f).unwrap());
                }
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}

fn bench_cli(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("lvsnic-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let sock = dir.join("sock");
    let cfg = dir.join("director.toml");
    std::fs::write(&cfg, director_toml()).unwrap();
    let rules = dir.join("rules");
    std::fs::write(&rules, RULES).unwrap();
    let exe = std::env::var("CARGO_BIN_EXE_lvsnic").unwrap_or_else(|_| "target/release/lvsnic".into());
    let mut child = std::process::Command::new(exe)
        .args(["daemon", "--backend", "model", "--director"])
        .arg(&cfg)
        .arg("--socket")
        .arg(&sock)
        .arg("--rules")
        .arg(&rules)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("daemon");
    for _ in 0..200 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let req = lvsnic::daemon::proto::Request::Ipvsadm { prog: None, argv: vec!["-L".into(), "-n".into()], stdin: None };
    let mut g = c.benchmark_group("cli");
    g.bench_function("round_trip", |b| {
        b.iter(|| black_box(lvsnic::daemon::proto::call(&sock, &req).expect("daemon reply")))
    });
    g.finish();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The benchmarks of this file as criterion's group `benches` (a private
/// module: the `pub fn` the macro generates needs no documentation).
mod group {
    use super::*;

    criterion_group! {
        name = benches;
        config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3)).warm_up_time(std::time::Duration::from_secs(1));
        targets = bench_exception_loop, bench_flow_install, bench_table_full, bench_cli
    }
}
criterion_main!(group::benches);
