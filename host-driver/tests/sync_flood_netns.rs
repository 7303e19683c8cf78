//! A sync flood against a backup daemon, measured: `lvsnic daemon` (model
//! backend, `--wire tap:`, `[limits]` 5,000 new connections/s, burst
//! 10,000) in a network namespace of its own runs a backup sync daemon on
//! the namespace's loopback; a thread sends valid sync messages (the
//! model's encoder, 40 entries each, as a master with the default 1472-byte
//! `sync_maxlen` fills them, every entry a connection not seen before) to
//! the group at a fixed rate while another
//! probes the director with ARP requests for the VIP on the TAP wire and
//! times the replies. Three phases: no flood, the rate of a master at full
//! load (2,500 messages/s: one message per 40 connections at the ~100k new
//! connections/s this director handles, each synced once), and ten times
//! that (25,000 messages/s, 1 M entries/s). Printed with `--nocapture`
//! (docs/performance.md, "Sync flood").
//!
//! Asserted (not the times, which depend on the machine): the daemon
//! answers ARP in every phase; every datagram it did not install is
//! counted (`socket_buffer`, `queue_full`) or waits in the queue, no more
//! than were sent; the connections learned by sync stay within `[limits]`
//! (burst + rate × elapsed) and the rest are counted `rate_limited`; the
//! card's flow table is never full.
//!
//! Needs root, `/dev/net/tun` and iproute2: `#[ignore]`d in a plain
//! `cargo test`. Run: `cargo test --release -p lvsnic --test
//! sync_flood_netns -- --ignored --nocapture` (`LVSNIC_FLOOD_SECS` sets
//! the length of a phase, default 8 s).
#[path = "daemon_harness.rs"]
mod harness;
#[path = "netns_harness.rs"]
mod netns;
#[path = "packet_socket.rs"]
mod packet_socket;

use harness::*;
use lvsnic_fixtures::{director_toml, rs, VIP};
use packet_socket::{arp_reply_to, arp_request, PacketSocket};
use lvsnic_model::sync::{encode_v1, SyncConn};
use netns::*;
use std::net::{Ipv4Addr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Probes until `stop`: one request at a time, 20 ms apart, a reply
/// awaited for up to 1 s. Reply times in µs, and the number lost.
fn probe(p: &PacketSocket, stop: &AtomicBool) -> (Vec<u64>, u64) {
    let (mut times, mut lost) = (Vec::new(), 0);
    let mut buf = vec![0u8; 2048];
    let mut n = 0u8;
    while !stop.load(Ordering::Relaxed) {
        n = n % 250 + 1;
        let t0 = Instant::now();
        p.send(&arp_request([198, 51, 100, n]));
        let got = loop {
            if t0.elapsed() > Duration::from_secs(1) {
                break false;
            }
            if let Some(k) = p.recv(&mut buf) {
                if arp_reply_to(&buf[..k]) == Some([198, 51, 100, n]) {
                    break true;
                }
            }
        };
        if got {
            times.push(t0.elapsed().as_micros() as u64);
        } else {
            lost += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (times, lost)
}

/// Message `i` of a flood: 40 ESTABLISHED NAT connections to VIP:80 no
/// earlier message named (every entry would create a connection: the
/// flood that costs a backup most).
fn flood_message(i: u64) -> Vec<u8> {
    let conns: Vec<SyncConn> = (i * 40..i * 40 + 40)
        .map(|n| SyncConn {
            protocol: 6,
            flags: 0x0020, // IP_VS_CONN_F_SYNC, MASQ
            state: 1,      // ESTABLISHED
            cport: 1024 + (n % 60_000) as u16,
            vport: 80,
            dport: 8080,
            timeout: 900,
            caddr: Ipv4Addr::from(u32::from(Ipv4Addr::new(100, 64, 0, 0)) + (n / 60_000) as u32).into(),
            vaddr: VIP.into(),
            daddr: rs(1 + (n % 2) as u8).into(),
            ..Default::default()
        })
        .collect();
    encode_v1(0, 1472, &conns).remove(0)
}

/// Sends messages from `*next` on to the group at `rate` per second until
/// `stop`, counting them in `sent`.
fn flood(s: &UdpSocket, to: (Ipv4Addr, u16), next: &AtomicU64, rate: u64, stop: &AtomicBool, sent: &AtomicU64) {
    let t0 = Instant::now();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let due = t0.elapsed().as_nanos() as u64 * rate / 1_000_000_000;
        if i >= due {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        while i < due {
            let m = flood_message(next.fetch_add(1, Ordering::Relaxed));
            if s.send_to(&m, to).is_ok() {
                sent.fetch_add(1, Ordering::Relaxed);
            }
            i += 1;
        }
    }
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn num(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 (a measurement: run with --nocapture)"]
fn sync_flood_arp_latency_and_counters() {
    if let Some(why) = unavailable() {
        panic!("sync_flood_arp_latency_and_counters cannot run here: {why}");
    }
    let secs: u64 = std::env::var("LVSNIC_FLOOD_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let id = std::process::id() % 100_000;
    let mut nss = Namespaces::default();
    let ns = nss.add(format!("lvsf{id}"));
    must(&["ip", "-n", &ns, "link", "set", "lo", "multicast", "on"]);
    must(&["ip", "-n", &ns, "route", "add", "224.0.0.0/4", "dev", "lo"]);
    let tap = format!("lvf{id}");
    let dir = tmpdir("sync-flood");
    let rules = write(
        &dir,
        "rules",
        "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 1\n",
    );
    let (rate, burst) = (5000u64, 10_000u64);
    // LVSNIC_FLOOD_LIMITS=off: no [limits] (the table budget alone).
    let limited = std::env::var("LVSNIC_FLOOD_LIMITS").map_or(true, |v| v != "off");
    let toml = if limited {
        format!("{}\n[limits]\nnew_conn_per_sec = {rate}\nburst = {burst}\n", director_toml())
    } else {
        director_toml()
    };
    // LVSNIC_FLOOD_BIN: another build of the daemon to measure (e.g. the
    // code before the change); the clients are this build's.
    let other = std::env::var("LVSNIC_FLOOD_BIN").ok();
    let mut wrapper = vec!["ip", "netns", "exec", ns.as_str()];
    let script;
    if let Some(bin) = &other {
        script = format!("exec {bin} \"$@\"");
        wrapper.extend(["sh", "-c", script.as_str()]);
    }
    let d = Daemon::start_in(&wrapper, &dir, &toml, &["--rules", rules.to_str().unwrap(), "--wire", &format!("tap:{tap}"), "--create-taps"]);
    let port = 20000 + (id % 20000) as u16;
    d.ok(&["--start-daemon", "backup", "--mcast-interface", "lo", "--mcast-port", &port.to_string()]);
    let tap2 = tap.clone();
    let p = in_netns(&ns, move || PacketSocket::open(&tap2, Duration::from_millis(50), None));
    let tx = in_netns(&ns, || UdpSocket::bind("0.0.0.0:0")).unwrap();
    tx.set_multicast_loop_v4(false).unwrap();
    let next = Arc::new(AtomicU64::new(0));
    let t_start = Instant::now();

    let lim = if limited { format!("[limits] {rate}/s burst {burst}") } else { "no [limits]".into() };
    println!("\nsync flood, {secs} s per phase, {lim}{}", other.as_deref().map(|b| format!(", daemon {b}")).unwrap_or_default());
    println!("| flood (msgs/s × 40 entries) | sent | ARP probes | median | p99 | max | lost |");
    let mut rows = Vec::new();
    let mut total_sent = 0;
    for flood_rate in [0u64, 2_500, 25_000] {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let flooder = (flood_rate > 0).then(|| {
            let (s, m, st, n) = (tx.try_clone().unwrap(), next.clone(), stop.clone(), sent.clone());
            std::thread::spawn(move || flood(&s, (Ipv4Addr::new(224, 0, 0, 81), port), &m, flood_rate, &st, &n))
        });
        let st2 = stop.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            st2.store(true, Ordering::Relaxed);
        });
        let (mut times, lost) = probe(&p, &stop);
        stopper.join().unwrap();
        if let Some(f) = flooder {
            f.join().unwrap();
        }
        times.sort_unstable();
        let n = sent.load(Ordering::Relaxed);
        total_sent += n;
        let ms = |us: u64| format!("{:.2} ms", us as f64 / 1000.0);
        let row = format!(
            "| {flood_rate} | {n} | {} | {} | {} | {} | {lost} |",
            times.len() as u64 + lost,
            ms(pct(&times, 0.5)),
            ms(pct(&times, 0.99)),
            ms(times.last().copied().unwrap_or(0))
        );
        println!("{row}");
        rows.push((flood_rate, times.len(), lost));
    }
    let elapsed = t_start.elapsed();
    // Let the queue drain, then read the counters.
    let st = {
        let t0 = Instant::now();
        loop {
            let st = d.status();
            if num(&st["sync"]["backup"]["queued"]) == 0 || t0.elapsed() > Duration::from_secs(30) {
                break st;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let b = &st["sync"]["backup"];
    println!("\ncounters after the phases ({total_sent} datagrams sent, {:.1} s):", elapsed.as_secs_f64());
    println!("sync.backup = {}", serde_json::to_string(b).unwrap());
    println!("offload = {}", serde_json::to_string(&st["offload"]).unwrap());
    println!("connections in the golden model: {}", num(&st["director"]["connections"]["created"]));

    // Every phase got answers: the daemon stayed up and responsive.
    for (r, answered, lost) in &rows {
        assert!(*answered > 0, "no ARP reply during the {r}/s phase ({lost} lost)");
    }
    // Every datagram is installed, waiting, or counted.
    let dropped = &b["dropped"];
    assert!(dropped.get("socket_buffer").is_some() && dropped.get("queue_full").is_some(), "no flood counters: {b}");
    let accounted = num(&b["messages"]) + num(&b["queued"]) + num(&dropped["socket_buffer"]) + num(&dropped["queue_full"]);
    assert!(accounted <= total_sent, "{accounted} accounted for, {total_sent} sent: {b}");
    // [limits]: connections learned by sync stay within the bucket.
    let created = num(&b["created"]);
    if limited {
        let bound = burst + rate * (elapsed.as_secs() + 1);
        assert!(created <= bound, "{created} connections learned by sync, [limits] allows {bound}");
        assert!(num(&dropped["rate_limited"]) > 0, "{b}");
    }
    // The table budget (7/8 of the model card's 524,288 slots, two per NAT
    // connection): never an install that fails.
    assert_eq!(num(&st["offload"]["table_full"]), 0, "{st}");
    assert!(num(&st["offload"]["connections"]) * 2 <= 524_288 / 8 * 7, "{st}");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
