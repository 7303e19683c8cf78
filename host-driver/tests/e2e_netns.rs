//! End to end with real kernel TCP: clients and real servers in network
//! namespaces, the lvsnic daemon as the director on a TAP wire between them.
//!
//! ```text
//! netns P-hub: bridge br0 ── TAP lvs0 (`lvsnic daemon --wire tap:lvs0`, run in P-hub)
//!                         ── veth ── netns P-cl  198.51.100.10, MAC = gateway_mac,
//!                                    10.0.0.100/32 on-link (the director answers ARP for it)
//!                         ── veth ── netns P-rs1 192.168.10.1, MAC 02:00:00:00:10:01, default via 10.0.0.1
//!                         ── veth ── netns P-rs2 192.168.10.2, MAC 02:00:00:00:10:02, default via 10.0.0.1
//!                         ── veth ── netns P-rs3 192.168.10.3, MAC 02:00:00:00:10:03, VIP on lo
//!                                    (arp_ignore=1, arp_announce=2), 198.51.100.0/24 on-link (DR)
//! ```
//!
//! The TAP has no checksum offload, so every frame the daemon reads is fully
//! checksummed (the kernel completes partial checksums and segments GSO
//! frames from the veths before handing them to the TAP).
//!
//! What runs, on `--backend model` and on `--backend sim --width 512` (the
//! verilated RTL), each with its own namespaces (`P` = pid and backend):
//!
//! 1. NAT service 10.0.0.100:80 `rr` over rs1, rs2 (added in that order):
//!    20 sequential HTTP/1.0 GETs from the client answer rs2, rs1, rs2, ...
//!    (IPVS keeps servers newest-first and rr starts at the list head).
//! 2. `-L -n`: 0 active, 10 inactive connections per server; `--stats`:
//!    10 Conns each; `-L -n -c`: each of the 20 connections (by client port)
//!    in TIME_WAIT with the server that answered it.
//! 3. Rule changes under traffic: two long-lived connections (to rs2, then
//!    rs1); `-e` rs1 to weight 0: new connections all go to rs2, the
//!    long-lived one keeps talking to rs1; `-d` rs1: its packets are
//!    dropped (`expire_nodest_conn` = 0, as in IPVS), no answer comes back,
//!    while the one on rs2 and new connections keep working.
//! 4. A 1 MiB download through NAT arrives byte for byte; most of its
//!    frames were forwarded by the data plane (`exception_loop.in_hardware`).
//! 5. DR service 10.0.0.100:8080 to rs3 (`-g`): requests are answered by rs3
//!    directly to the client; the director sees no reply packets.
//! 6. UDP NAT service 10.0.0.100:53 to rs1:5353: 4000-byte datagrams each
//!    way, fragmented by the sending kernel, reassembled by the director,
//!    rewritten, fragmented again, and reassembled by the receiving kernel
//!    (which checks the UDP checksum over the whole datagram).
//!
//! Needs root, `/dev/net/tun` and iproute2 network namespaces, so the tests
//! are `#[ignore]`d in a plain `cargo test` (which reports them as ignored);
//! `scripts/test.sh` runs them when it runs as root and lists them as not
//! run otherwise. Run by hand (`cargo test --release -p lvsnic --test
//! e2e_netns -- --ignored`) on a machine that lacks any of these, they fail
//! and say what is missing. Each socket operation has a timeout: a broken
//! path fails, it does not hang.

#[path = "daemon_harness.rs"]
mod harness;
#[path = "netns_harness.rs"]
mod netns;

use harness::*;
use netns::*;
use lvsnic_fixtures::{director_toml, rs, rs_mac, DIRECTOR_IP, GATEWAY_MAC, VIP};
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The client's address.
const CLIENT: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
/// Size of the large download.
const BIG: usize = 1 << 20;

/// The two backends run one after the other (2 cores; the RTL is heavy).
static SERIAL: Mutex<()> = Mutex::new(());

/// Why the tests are ignored by default.
const NEEDS: &str = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)";

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn e2e_netns_model() {
    run("model", &["--backend", "model"]);
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn e2e_netns_sim512() {
    run("sim512", &["--backend", "sim", "--width", "512"]);
}

// ------------------------------------------------------------ servers

/// Deterministic contents of the large download.
fn blob() -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..BIG)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect()
}

// ------------------------------------------------------------ client

/// A UDP server in a real server's namespace answering each datagram with
/// `"{id}:"` followed by the datagram.
struct UdpEcho {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl UdpEcho {
    fn start(ns: &str, port: u16, id: &'static str) -> UdpEcho {
        let s = in_netns(ns, move || UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port)))
            .unwrap_or_else(|e| panic!("udp bind in {ns}: {e}"));
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !st.load(Ordering::Relaxed) {
                if let Ok((n, from)) = s.recv_from(&mut buf) {
                    let mut reply = format!("{id}:").into_bytes();
                    reply.extend_from_slice(&buf[..n]);
                    let _ = s.send_to(&reply, from);
                }
            }
        });
        UdpEcho { stop, thread: Some(thread) }
    }
}

impl Drop for UdpEcho {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ------------------------------------------------------------ listings

/// `-L -n` row of a real server: `  -> ADDR  Masq|Route  weight active inactive`.
fn rs_row(addr: &str, fwd: &str, weight: u32, active: u32, inactive: u32) -> String {
    format!("  -> {addr:<28} {fwd:<7} {weight:<6} {active:<10} {inactive:<10}\n")
}


// ------------------------------------------------------------ the test

fn run(tag: &str, backend: &[&str]) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable() {
        panic!("e2e_netns ({tag}) cannot run here: {why} ({NEEDS})");
    }
    let t0 = Instant::now();
    let p = format!("lvsnic-e2e-{}-{tag}", std::process::id());
    let mut nss = Namespaces::default();
    let Segment { hub, cl, rsns } = nss.segment(&p, 3);

    // The director's TAP on the bridge (attached to by the daemon), then veths.
    must(&["ip", "-n", &hub, "tuntap", "add", "mode", "tap", "name", "lvs0"]);
    must(&["ip", "-n", &hub, "link", "set", "lvs0", "master", "br0", "up"]);
    let leaf = |ns: &str, veth: &str, mac: String, addr: String| leaf(&hub, ns, veth, &mac, &addr);
    // Replies toward clients go to gateway_mac: the client has it.
    leaf(&cl, "vcl", GATEWAY_MAC.to_string(), format!("{CLIENT}/24"));
    must(&["ip", "-n", &cl, "route", "add", &format!("{VIP}/32"), "dev", "eth0"]);
    for n in 1..=3u8 {
        let ns = &rsns[n as usize - 1];
        leaf(ns, &format!("vrs{n}"), rs_mac(n).to_string(), format!("{}/24", rs(n)));
    }
    // NAT servers answer through the director.
    for ns in &rsns[..2] {
        must(&["ip", "-n", ns, "route", "add", &format!("{DIRECTOR_IP}/32"), "dev", "eth0"]);
        must(&["ip", "-n", ns, "route", "add", "default", "via", &DIRECTOR_IP.to_string(), "dev", "eth0"]);
    }
    // The DR server holds the VIP without answering ARP for it and talks to the client directly.
    sysctl(&rsns[2], &["net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2"]);
    must(&["ip", "-n", &rsns[2], "addr", "add", &format!("{VIP}/32"), "dev", "lo"]);
    must(&["ip", "-n", &rsns[2], "route", "add", "198.51.100.0/24", "dev", "eth0"]);

    let dir = tmpdir(&format!("e2e-{tag}"));
    let mut args = backend.to_vec();
    args.extend(["--wire", "tap:lvs0"]);
    let d = Daemon::start_in(&["ip", "netns", "exec", &hub], &dir, &director_toml(), &args);
    let vip80 = format!("{VIP}:80");
    let vip8080 = format!("{VIP}:8080");
    let (rs1, rs2, rs3) = (format!("{}:80", rs(1)), format!("{}:80", rs(2)), format!("{}:8080", rs(3)));
    d.ok(&["-A", "-t", &vip80, "-s", "rr"]);
    d.ok(&["-a", "-t", &vip80, "-r", &rs1, "-m", "-w", "1"]);
    d.ok(&["-a", "-t", &vip80, "-r", &rs2, "-m", "-w", "1"]);
    d.ok(&["-A", "-t", &vip8080, "-s", "rr"]);
    d.ok(&["-a", "-t", &vip8080, "-r", &rs3, "-g", "-w", "1"]);
    let blob = Arc::new(blob());
    let _servers = [
        Server::start(&rsns[0], 80, "rs1", blob.clone()),
        Server::start(&rsns[1], 80, "rs2", blob.clone()),
        Server::start(&rsns[2], 8080, "rs3", blob.clone()),
    ];
    let setup = t0.elapsed();
    let to80: SocketAddr = (VIP, 80).into();
    let to8080: SocketAddr = (VIP, 8080).into();

    // 1. rr over real kernel connections: newest server first, alternating.
    let mut served = Vec::new();
    for i in 0..20 {
        let (port, server, body) = http_get(&cl, to80, "/");
        let want = if i % 2 == 0 { "rs2" } else { "rs1" };
        let body = String::from_utf8_lossy(&body);
        assert_eq!((server.as_str(), body.as_ref()), (want, format!("{want}\n").as_str()), "request {i}");
        served.push((port, want));
    }

    // 2. The listings after the traffic.
    let list = d.run(&["-L", "-n"]).stdout;
    for a in [&rs1, &rs2] {
        assert!(list.contains(&rs_row(a, "Masq", 1, 0, 10)), "{a}: 0 active, 10 inactive\n{list}");
    }
    let st = stats_of(&d.run(&["-L", "-n", "--stats"]).stdout);
    assert_eq!(st[&format!("TCP {vip80}")][0], 20, "{st:?}");
    for a in [&rs1, &rs2] {
        let [n_conns, inpkts, outpkts, inbytes, outbytes] = st[a.as_str()];
        assert_eq!(n_conns, 10, "{a}: {st:?}");
        // Per connection at least SYN, ACK, request, FIN in and SYN-ACK, response, FIN out.
        assert!(inpkts >= 40 && outpkts >= 30 && inbytes > 0 && outbytes > 0, "{a}: {st:?}");
    }
    let served: Vec<(String, String)> =
        served.iter().map(|(port, who)| (format!("{CLIENT}:{port}"), if *who == "rs1" { rs1.clone() } else { rs2.clone() })).collect();
    let last = assert_all_time_wait(&d, &vip80, &served);
    assert_eq!(last.len(), 20, "{last:#?}");

    // 3. Rule changes under traffic. rr goes on: rs2, then rs1.
    let mut long2 = Echo::open(&cl, to80);
    assert_eq!(long2.say("hello").unwrap(), "rs2 hello");
    let mut long1 = Echo::open(&cl, to80);
    assert_eq!(long1.say("hello").unwrap(), "rs1 hello");
    d.ok(&["-e", "-t", &vip80, "-r", &rs1, "-m", "-w", "0"]);
    let list = d.run(&["-L", "-n"]).stdout;
    assert!(list.contains(&rs_row(&rs1, "Masq", 0, 1, 10)), "rs1 quiesced, one active\n{list}");
    for i in 0..6 {
        let (_, server, _) = http_get(&cl, to80, "/");
        assert_eq!(server, "rs2", "new connection {i} with rs1 at weight 0");
        assert_eq!(long1.say(&format!("ping {i}")).unwrap(), format!("rs1 ping {i}"));
        assert_eq!(long2.say(&format!("ping {i}")).unwrap(), format!("rs2 ping {i}"));
    }
    let dropped = |st: &serde_json::Value| st["director"]["dropped"]["dest_unavailable"].as_u64();
    let before = d.status();
    d.ok(&["-d", "-t", &vip80, "-r", &rs1]);
    long1.s.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
    match long1.say("after delete") {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("the connection to the deleted rs1 must get no answer, got {other:?}"),
    }
    let after = d.status();
    assert!(
        dropped(&after).unwrap_or(0) > dropped(&before).unwrap_or(0),
        "drops of the deleted server's packets counted: {after}"
    );
    assert_eq!(long2.say("still there").unwrap(), "rs2 still there");
    for i in 0..3 {
        let (_, server, _) = http_get(&cl, to80, "/");
        assert_eq!(server, "rs2", "new connection {i} after deleting rs1");
    }
    drop(long1);
    drop(long2);

    // 4. 1 MiB through NAT, exact bytes, forwarded by the data plane.
    let before = d.status();
    let t_big = Instant::now();
    let (_, server, body) = http_get(&cl, to80, "/big");
    let big_time = t_big.elapsed();
    assert_eq!(server, "rs2");
    assert!(body.len() == BIG && body == *blob, "1 MiB intact ({} bytes received)", body.len());
    let after = d.status();
    let frames = counter(&after, &["exception_loop", "frames"]) - counter(&before, &["exception_loop", "frames"]);
    let hw = counter(&after, &["exception_loop", "in_hardware"]) - counter(&before, &["exception_loop", "in_hardware"]);
    assert!(frames >= (BIG / 1460) as u64, "frames of the download: {frames}");
    assert!(hw * 10 >= frames * 9, "{hw} of {frames} frames forwarded in hardware\n{after}");

    // 5. DR: rs3 answers the client itself.
    for i in 0..3 {
        let (_, server, body) = http_get(&cl, to8080, "/");
        assert_eq!((server.as_str(), String::from_utf8_lossy(&body).as_ref()), ("rs3", "rs3\n"), "DR request {i}");
    }
    let st = stats_of(&d.run(&["-L", "-n", "--stats"]).stdout);
    let [n_conns, inpkts, outpkts, ..] = st[&format!("TCP {vip8080}")];
    assert_eq!((n_conns, outpkts), (3, 0), "DR: 3 connections, no reply through the director: {st:?}");
    assert!(inpkts >= 12, "{st:?}");
    let c = conns(&d);
    assert_eq!(c.values().filter(|(_, v, dst)| *v == vip8080 && *dst == rs3).count(), 3, "{c:#?}");

    // 6. Fragmented UDP both ways through NAT.
    let vip53 = format!("{VIP}:53");
    d.ok(&["-A", "-u", &vip53, "-s", "rr"]);
    d.ok(&["-a", "-u", &vip53, "-r", &format!("{}:5353", rs(1)), "-m", "-w", "1"]);
    let _udp = UdpEcho::start(&rsns[0], 5353, "rs1");
    let sock = in_netns(&cl, || UdpSocket::bind((CLIENT, 0))).expect("udp socket in the client");
    sock.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut buf = vec![0u8; 65536];
    for i in 0..3usize {
        let msg = &blob[i * 4000..(i + 1) * 4000];
        sock.send_to(msg, (VIP, 53)).expect("send");
        let (n, from) = sock.recv_from(&mut buf).unwrap_or_else(|e| panic!("datagram {i}: no answer: {e}"));
        assert_eq!(from, SocketAddr::from((VIP, 53)), "answer from the VIP");
        assert_eq!(&buf[..4], b"rs1:", "datagram {i}");
        assert!(n == 4004 && buf[4..n] == *msg, "datagram {i}: {n} bytes, contents intact: {}", buf[4..n] == *msg);
    }
    let st = d.status();
    let reasm = &st["director"]["reassembly"];
    assert!(reasm["reassembled"].as_u64().unwrap_or(0) >= 6, "requests and replies reassembled: {reasm}");

    let st = d.status();
    // Nothing else was dropped: no checksum or malformed-frame drops.
    let drops = st["director"]["dropped"].as_object().expect("director.dropped");
    assert!(drops.keys().all(|k| k == "dest_unavailable"), "unexpected drops: {st}");
    eprintln!(
        "e2e_netns ({tag}): setup {:.1?}, 1 MiB in {:.2?}, total {:.1?}; frames {} ({} in hardware), tx_dropped {}, to the host {}, reassembly {}",
        setup,
        big_time,
        t0.elapsed(),
        counter(&st, &["exception_loop", "frames"]),
        counter(&st, &["exception_loop", "in_hardware"]),
        st["tx_dropped"],
        st["director"]["to_host"],
        st["director"]["reassembly"]
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
