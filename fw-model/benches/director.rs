//! Golden-model director benchmarks (criterion, one core):
//!
//! * `forward/<mode>`: ns per packet of an established flow (NAT request,
//!   NAT reply, DR, TUN) with 1M connections in the table, random flows;
//! * `new_conn/<scheduler>`: ns per new connection (SYN → scheduled,
//!   connection created, frame transmitted) with 1M connections in the table;
//! * the memory per connection is printed once (`ConnTable::memory_bytes`).
//!
//! `cargo bench -p lvsnic-model --bench director`

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::{Action, Director};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::rng::SplitMix64;
use lvsnic_model::time::{Time, SEC};
use lvsnic_model::wire::build::tcp_frame;
use lvsnic_model::wire::{EthernetRepr, Ipv4Repr, MacAddr, TcpRepr, ETHERTYPE_IPV4, TCP_ACK, TCP_SYN};
use std::hint::black_box;
use std::net::Ipv4Addr;

const DMAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const GW: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xfe]);
const T0: Time = 1_700_000_000 * SEC;
/// Connections in the table (env `LVSNIC_BENCH_CONNS` overrides 1M).
fn conns() -> usize {
    std::env::var("LVSNIC_BENCH_CONNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn cfg() -> DirectorConfig {
    let mut s = String::from(
        "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n[timeouts]\ntcp = 2678400\n[neighbors]\n",
    );
    for i in 1..=40u8 {
        s.push_str(&format!("\"192.168.10.{i}\" = \"02:00:00:00:10:{i:02x}\"\n"));
    }
    DirectorConfig::parse(&s).unwrap()
}

fn rules(extra: &str) -> String {
    let mut r = String::new();
    for (vip, fwd, base) in [("10.0.0.100", "-m", 1u8), ("10.0.0.101", "-g", 11), ("10.0.0.102", "-i", 21)] {
        r.push_str(&format!("-A -t {vip}:80 -s wlc\n"));
        for i in 0..8u8 {
            r.push_str(&format!("-a -t {vip}:80 -r 192.168.10.{}:80 {fwd} -w {}\n", base + i, 1 + i % 3));
        }
    }
    r + extra
}

fn frame(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, flags: u8, mac_src: MacAddr, len: usize) -> Vec<u8> {
    let eth = EthernetRepr { src: mac_src, dst: DMAC, vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
    let ip = Ipv4Repr { src_addr: src, dst_addr: dst, protocol: 6, payload_len: 0, ttl: 64, tos: 0, ident: 1, dont_frag: true };
    let t = TcpRepr { src_port: sport, dst_port: dport, seq_number: 1, ack_number: 1, flags, window_len: 1000 };
    tcp_frame(&eth, &ip, &t, &vec![0u8; len])
}

fn client(i: usize) -> (Ipv4Addr, u16) {
    // 16k clients x 64 ports per VIP slice.
    let a = Ipv4Addr::from(0xC612_0000u32 + (i as u32 >> 6));
    (a, 32768 + (i as u16 & 63) * 7)
}

/// A director with `conns()` established connections spread over the three
/// services (NAT, DR, TUN); returns it with the time after setup.
fn loaded(extra_rules: &str) -> (Director, Time) {
    let r = parse_rules(&rules(extra_rules)).unwrap();
    let mut d = Director::new(cfg(), &r, T0).unwrap();
    let vips = [Ipv4Addr::new(10, 0, 0, 100), Ipv4Addr::new(10, 0, 0, 101), Ipv4Addr::new(10, 0, 0, 102)];
    let mut t = T0;
    let mut extra = Vec::new();
    for i in 0..conns() {
        let (c, p) = client(i);
        let vip = vips[i % 3];
        for flags in [TCP_SYN, TCP_ACK] {
            let mut f = frame(c, vip, p, 80, flags, GW, 0);
            t += 1;
            extra.clear();
            let a = d.process(t, &mut f, &mut extra);
            assert_eq!(a, Action::Transmit);
        }
    }
    (d, t)
}

fn bench_forward(c: &mut Criterion) {
    let (mut d, mut t) = loaded("");
    eprintln!(
        "conn table: {} entries, {} bytes, {:.1} bytes/connection",
        d.conns.len(),
        d.conns.memory_bytes(),
        d.conns.memory_bytes() as f64 / d.conns.len() as f64
    );
    let mut rng = SplitMix64::new(42);
    let vips = [Ipv4Addr::new(10, 0, 0, 100), Ipv4Addr::new(10, 0, 0, 101), Ipv4Addr::new(10, 0, 0, 102)];
    let mut g = c.benchmark_group("forward");
    g.throughput(Throughput::Elements(1));
    for (mode, slot) in [("nat_request", 0usize), ("dr", 1), ("tun", 2)] {
        // 4096 random established flows of this service, 64-byte frames.
        let frames: Vec<Vec<u8>> = (0..4096)
            .map(|_| {
                let i = (rng.below((conns() / 3) as u64) as usize) * 3 + slot;
                let (cl, p) = client(i);
                frame(cl, vips[slot], p, 80, TCP_ACK, GW, 0)
            })
            .collect();
        let mut k = 0usize;
        let mut buf = Vec::with_capacity(2048);
        let mut extra = Vec::new();
        g.bench_function(mode, |b| {
            b.iter(|| {
                buf.clear();
                buf.extend_from_slice(&frames[k & 4095]);
                k += 1;
                t += 1;
                let a = d.process(t, &mut buf, &mut extra);
                black_box(a);
            })
        });
        // The same in batches of 16 with the lookups warmed first.
        g.throughput(Throughput::Elements(16));
        g.bench_function(format!("{mode}_batch16"), |b| {
            b.iter(|| {
                let base = k & 4095 & !15;
                let refs: [&[u8]; 16] = std::array::from_fn(|j| frames[base + j].as_slice());
                black_box(d.warm_batch(&refs));
                for f in refs {
                    buf.clear();
                    buf.extend_from_slice(f);
                    t += 1;
                    black_box(d.process(t, &mut buf, &mut extra));
                }
                k += 16;
            })
        });
        g.throughput(Throughput::Elements(1));
    }
    // NAT replies: from the real server chosen for each flow.
    let frames: Vec<Vec<u8>> = (0..4096)
        .map(|_| {
            let i = (rng.below((conns() / 3) as u64) as usize) * 3;
            let (cl, p) = client(i);
            let id = d.conns.in_get(6, u32::from(cl), p, u32::from(vips[0]), 80).unwrap();
            let rs = Ipv4Addr::from(d.conns.get(id).daddr);
            frame(rs, cl, 80, p, TCP_ACK, MacAddr([2, 0, 0, 0, 0x10, rs.octets()[3]]), 0)
        })
        .collect();
    let mut k = 0usize;
    let mut buf = Vec::with_capacity(2048);
    let mut extra = Vec::new();
    g.bench_function("nat_reply", |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(&frames[k & 4095]);
            k += 1;
            t += 1;
            black_box(d.process(t, &mut buf, &mut extra));
        })
    });
    g.finish();
}

fn bench_new_conn(c: &mut Criterion) {
    let mut g = c.benchmark_group("new_conn");
    g.throughput(Throughput::Elements(1));
    let scheds = lvsnic_model::sched::SCHEDULERS;
    // One extra service per scheduler on 10.0.1.x, 10 NAT servers each.
    let mut extra = String::new();
    for (n, s) in scheds.iter().enumerate() {
        extra.push_str(&format!("-A -t 10.0.1.{}:80 -s {s}\n", n + 1));
        for i in 0..10u8 {
            extra.push_str(&format!("-a -t 10.0.1.{}:80 -r 192.168.10.{}:80 -m -w {}\n", n + 1, 30 + i, 1 + i % 4));
        }
    }
    let (mut d, mut t) = loaded(&extra);
    let mut seq = 0u32;
    for (n, s) in scheds.iter().enumerate() {
        let vip = Ipv4Addr::new(10, 0, 1, n as u8 + 1);
        g.bench_function(*s, |b| {
            b.iter_batched(
                || {
                    // Fresh client tuple each time; old SYN_RECV conns of the
                    // previous batches expire (60 s) outside the timing.
                    seq = seq.wrapping_add(1);
                    let a = Ipv4Addr::from(0x6440_0000u32 + (seq >> 10));
                    frame(a, vip, 1024 + (seq & 1023) as u16, 80, TCP_SYN, GW, 0)
                },
                |mut f| {
                    t += 1;
                    let mut e = Vec::new();
                    black_box(d.process(t, &mut f, &mut e))
                },
                BatchSize::SmallInput,
            );
            t += 61 * SEC;
            d.advance(t);
        });
    }
    g.finish();
}

/// The benchmarks of this file as criterion's group `benches` (a private
/// module: the `pub fn` the macro generates needs no documentation).
mod group {
    use super::*;

    criterion_group! {
        name = benches;
        config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3)).warm_up_time(std::time::Duration::from_secs(1));
        targets = bench_forward, bench_new_conn
    }
}
criterion_main!(group::benches);
