//! End to end through the simulated board: real kernel TCP clients and
//! servers in network namespaces, the Versa SoC (the `lvsnic_core` RTL,
//! the LiteX glue, LiteEth) in LiteX's Verilator simulation
//! (`boards/sim/run.sh`) as the director's NIC, driven by the real host
//! driver, `lvsnic daemon --backend etherbone`, over the board's
//! management port.
//!
//! ```text
//! netns P-hub: bridge br0 (no multicast snooping: the director sends no MLD reports)
//!                         ── TAP lvdPID (the board's data port: created here, so run.sh uses it as it
//!                                        is; put on the bridge once the daemon runs the board)
//!                         ── veth ── netns P-cl  198.51.100.10, MAC = gateway_mac, 10.0.0.100/32 on-link
//!                                                2001:db8:ff::10, 2001:db8::100/128 on-link
//!                         ── veth ── netns P-rs1 192.168.10.1 (NAT), default via 10.0.0.1
//!                                                2001:db8:1::1, default via 2001:db8::1
//!                         ── veth ── netns P-rs2 192.168.10.2 (NAT), default via 10.0.0.1
//!                                                2001:db8:1::2, default via 2001:db8::1
//!                         ── veth ── netns P-rs3 192.168.10.3 (DR), VIP on lo, arp_ignore=1, arp_announce=2
//!                                                2001:db8:1::3, VIP6 on lo, 2001:db8:ff::/64 on-link
//!              TAP lvmPID 192.168.1.100/24 (management port; created by run.sh) ── board 192.168.1.50
//!              `lvsnic daemon --backend etherbone --device 192.168.1.50 --glue csr.csv`
//! ```
//!
//! The same network as `e2e_netns`, with the board's data tap where the
//! daemon's `--wire` TAP is there, dual stack: the IPv6 addresses,
//! routes and DR set-up of `e2e_netns6` (addresses `nodad`, no router
//! solicitations; a VIP on `lo` needs no `arp_ignore` counterpart), the
//! director's `[director] ip6 = 2001:db8::1` and `[neighbors]` entries
//! for the IPv6 real servers (their IPv4 MACs). The simulated board's
//! core is built with `IPV6 = 1`. The routes TCP takes have `rto_min 2s`
//! ([`RTO_MIN`]: the host path stalls for a few hundred ms while the
//! daemon writes a connection's flows over Etherbone, which would make
//! the kernels retransmit). A packet socket on the data tap
//! records every frame from the tap's creation on; the tap joins the
//! bridge only when the daemon has enabled the core (a frame before that
//! would go up as a `DISABLED` exception nobody takes), and leaves it
//! before the final counts (what the kernels send later would reach the
//! board but not the comparison). What runs:
//!
//! 1. NAT service 10.0.0.100:80 `rr` over rs1, rs2 and DR service
//!    10.0.0.100:8080 to rs3, NAT service [2001:db8::100]:80 `rr` over
//!    rs1, rs2 (2001:db8:1::1, ::2) and DR service [2001:db8::100]:8080
//!    to rs3 (2001:db8:1::3), added with the ipvsadm commands (programmed
//!    into the core over Etherbone).
//! 2. IPv4: 6 sequential HTTP/1.0 GETs to :80 answer rs2, rs1, rs2, ...
//!    with the right bodies; two long-lived echo connections (rs2, then
//!    rs1) each carry 4 lines both ways; 3 GETs to :8080 are answered by
//!    rs3 directly. Then, once every IPv4 connection is in TIME_WAIT,
//!    IPv6: 4 GETs to [VIP6]:80 answer rs2, rs1, rs2, rs1; a long-lived
//!    echo connection (rs2) carries 4 lines and is on the card meanwhile
//!    (the daemon's `offload`: one more connection, 4 more flow entries:
//!    two IPv6 flows); 3 GETs to [VIP6]:8080 are answered by rs3 directly.
//! 3. The listings: 0 active and 4 inactive connections per IPv4 NAT
//!    server, 2 (rs1) and 3 (rs2) per IPv6 one, 3 connections per DR service with no
//!    reply packet through the director, every connection in TIME_WAIT
//!    with its server; some frames were forwarded by the core itself, and
//!    while only the IPv6 connections ran the core forwarded more frames
//!    than the IPv4 frames that came in meanwhile (none, normally)
//!    could explain (the daemon's status before and after the IPv6 part:
//!    received frames, to which it credits the core's forwarded count,
//!    less its exceptions; checked equal to the core's counter at the
//!    end). The glue's counters (read over Etherbone after the daemon has
//!    stopped) show nothing dropped, no bad inject datagram, and as many
//!    frames in and out of the data port as the capture below saw.
//! 4. The golden model: every frame that entered the board's data port
//!    (a packet socket on the data tap, outgoing direction) is played,
//!    padded to 60 bytes as the board's MAC does, through `lvsnic daemon
//!    --backend model --wire pcap:IN,OUT` with the same rules (IPv4 and
//!    IPv6) and DIRECTOR.toml. Its
//!    `-L -n`, `-L -n --stats` and `-L -n -c` (without the expiry column)
//!    equal the board daemon's, and what it transmits equals, as a
//!    multiset, what the board sent out of its data port (Ethernet padding
//!    removed on both sides).
//!
//! The simulation runs a few thousand frames/s (boards/README.md
//! "Full-system simulation"), so the traffic is small. `run.sh` installs
//! and builds what it needs (a cold Verilator build takes minutes, a
//! cached one is reused); the board is stopped and the namespaces (with
//! their taps) deleted when the test ends, also when it fails.
//!
//! Needs root, `/dev/net/tun` and iproute2 network namespaces (and apt
//! and pip for the first build), so it is `#[ignore]`d in a plain `cargo
//! test`; `scripts/test.sh` runs it when it runs as root and lists it as
//! not run otherwise. Run by hand: `cargo test --release -p lvsnic --test
//! e2e_board -- --ignored --nocapture`.
// `unsafe` allowed in this test (the workspace denies it): the packet
// socket on the data tap (socket, bind, setsockopt, recvfrom through libc).
#![allow(unsafe_code)]

#[path = "daemon_harness.rs"]
mod harness;
#[path = "netns_harness.rs"]
mod netns;

use harness::*;
use lvsnic::device::etherbone::{EtherboneConfig, EtherboneDevice, GlueMap};
use lvsnic::device::Device;
use lvsnic_fixtures::{director_toml, rs, rs_mac, DIRECTOR_IP, GATEWAY_MAC, VIP};
use netns::*;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The client's address.
const CLIENT: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
/// The client's IPv6 address (as in `e2e_netns6`).
const CLIENT6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, 0x10);
/// The IPv6 VIP of both IPv6 services.
const VIP6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x100);
/// The director's own IPv6 address (`[director] ip6`): the IPv6 NAT servers' router.
const DIRECTOR6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);

/// The `rto_min` of the routes TCP takes (client to the VIPs, real
/// servers to the client). Over Etherbone to the simulated board, the
/// daemon's table writes when a connection is offloaded or leaves the
/// card (and its counter reads) hold the exception path for 0.3–0.6 s;
/// with the kernel's 200 ms a FIN held meanwhile is retransmitted, the
/// crossing retransmissions end the close with a RST now and then, and
/// the director's connection is in CLOSE (expired after 10 s), not in
/// TIME_WAIT. A lost frame would be resent after 2 s, not 0.2 s.
const RTO_MIN: &str = "2s";

/// IPv6 real server `n`: 2001:db8:1::n (as in `e2e_netns6`).
fn rs6(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, n)
}

/// The rules, as the golden model loads them (`ipvsadm -S` format); the
/// board daemon gets the same as ipvsadm commands.
const RULES: &str = "\
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1
-A -t 10.0.0.100:8080 -s rr
-a -t 10.0.0.100:8080 -r 192.168.10.3:8080 -g -w 1
-A -t [2001:db8::100]:80 -s rr
-a -t [2001:db8::100]:80 -r [2001:db8:1::1]:80 -m -w 1
-a -t [2001:db8::100]:80 -r [2001:db8:1::2]:80 -m -w 1
-A -t [2001:db8::100]:8080 -s rr
-a -t [2001:db8::100]:8080 -r [2001:db8:1::3]:8080 -g -w 1
";

/// DIRECTOR.toml: the test network's (`lvsnic_fixtures::director_toml`)
/// with the director's IPv6 address and the IPv6 real servers' MACs (the
/// IPv4 ones' MACs: a real server's NIC has one MAC for both families).
fn director_toml6() -> String {
    let base = director_toml();
    let ip4 = format!("ip = \"{DIRECTOR_IP}\"\n");
    assert!(base.contains(&ip4) && base.trim_end().ends_with(&format!("\"{}\"", rs_mac(8))), "{base}");
    let mut s = base.replacen(&ip4, &format!("{ip4}ip6 = \"{DIRECTOR6}\"\n"), 1);
    for n in 1..=3u8 {
        s.push_str(&format!("\"{}\" = \"{}\"\n", rs6(n.into()), rs_mac(n)));
    }
    s
}

/// Whether frame `f` is IPv4 (any protocol).
fn is_ipv4(f: &[u8]) -> bool {
    f.len() >= 14 && f[12..14] == [0x08, 0x00]
}

/// Whether frame `f` is an IPv6 TCP segment (no extension header).
fn is_tcp6(f: &[u8]) -> bool {
    f.len() >= 54 && f[12..14] == [0x86, 0xdd] && f[20] == 6
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 network namespaces and the simulated board (boards/sim/run.sh installs and builds it; scripts/test.sh runs it as root)"]
fn e2e_board_sim() {
    if let Some(why) = unavailable() {
        panic!("e2e_board cannot run here: {why} (needs root, /dev/net/tun and iproute2 network namespaces)");
    }
    let t0 = Instant::now();
    let pid = std::process::id();
    let p = format!("lvsnic-e2eb-{pid}");
    let mut nss = Namespaces::default();
    let Segment { hub, cl, rsns } = nss.segment(&p, 3);
    // Dual stack: IPv6 on the client and the real servers (not in the
    // hub, whose bridge and taps stay silent).
    for ns in rsns.iter().chain([&cl]) {
        enable_ipv6(ns);
    }
    // The director sends no MLD reports for its solicited-node groups: a
    // snooping bridge would stop flooding neighbour solicitations to the board.
    must(&["ip", "-n", &hub, "link", "set", "br0", "type", "bridge", "mcast_snooping", "0"]);

    // The board's data tap on the bridge, then veths.
    let (data_tap, mgmt_tap) = (format!("lvd{pid}"), format!("lvm{pid}"));
    must(&["ip", "-n", &hub, "tuntap", "add", "mode", "tap", "name", &data_tap]);
    // Off the bridge until the daemon runs the board: frames from before
    // would go up as DISABLED exceptions nobody takes.
    must(&["ip", "-n", &hub, "link", "set", &data_tap, "up"]);
    // Everything that enters or leaves the data port, from the start.
    let cap = Capture::start(&hub, &data_tap);
    leaf(&hub, &cl, "vcl", &GATEWAY_MAC.to_string(), &format!("{CLIENT}/24"));
    must(&["ip", "-n", &cl, "route", "add", &format!("{VIP}/32"), "dev", "eth0", "rto_min", RTO_MIN]);
    // IPv6 as e2e_netns6 sets it up: addresses `nodad`, the VIP on-link
    // (the director answers its neighbour solicitations).
    must(&["ip", "-n", &cl, "-6", "addr", "add", &format!("{CLIENT6}/64"), "dev", "eth0", "nodad"]);
    must(&["ip", "-n", &cl, "-6", "route", "add", &format!("{VIP6}/128"), "dev", "eth0", "rto_min", RTO_MIN]);
    for n in 1..=3u8 {
        let ns = &rsns[n as usize - 1];
        leaf(&hub, ns, &format!("vrs{n}"), &rs_mac(n).to_string(), &format!("{}/24", rs(n)));
        must(&["ip", "-n", ns, "-6", "addr", "add", &format!("{}/64", rs6(n.into())), "dev", "eth0", "nodad"]);
    }
    for ns in &rsns[..2] {
        must(&["ip", "-n", ns, "route", "add", &format!("{DIRECTOR_IP}/32"), "dev", "eth0"]);
        must(&["ip", "-n", ns, "route", "add", "default", "via", &DIRECTOR_IP.to_string(), "dev", "eth0", "rto_min", RTO_MIN]);
        must(&["ip", "-n", ns, "-6", "route", "add", &format!("{DIRECTOR6}/128"), "dev", "eth0"]);
        must(&["ip", "-n", ns, "-6", "route", "add", "default", "via", &DIRECTOR6.to_string(), "dev", "eth0", "rto_min", RTO_MIN]);
    }
    sysctl(&rsns[2], &["net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2"]);
    must(&["ip", "-n", &rsns[2], "addr", "add", &format!("{VIP}/32"), "dev", "lo"]);
    must(&["ip", "-n", &rsns[2], "route", "add", "198.51.100.0/24", "dev", "eth0", "rto_min", RTO_MIN]);
    // IPv6 DR: the VIP on lo is not answered for on eth0 (`ndisc_recv_ns`
    // looks the target up on the receiving device only), no sysctl needed.
    must(&["ip", "-n", &rsns[2], "-6", "addr", "add", &format!("{VIP6}/128"), "dev", "lo", "nodad"]);
    must(&["ip", "-n", &rsns[2], "-6", "route", "add", "2001:db8:ff::/64", "dev", "eth0", "rto_min", RTO_MIN]);

    // The board, in the hub (its management tap gets 192.168.1.100/24 there).
    let t_sim = Instant::now();
    let sim = Sim::start(&hub, &data_tap, &mgmt_tap);
    let sim_start = t_sim.elapsed();

    let dir = tmpdir("e2e-board");
    let d = Daemon::start_in(
        &["ip", "netns", "exec", &hub],
        &dir,
        &director_toml6(),
        &["--backend", "etherbone", "--device", &sim.ip, "--glue", &sim.csr_csv, "--bind", &sim.host_ip],
    );
    let vip80 = format!("{VIP}:80");
    let vip8080 = format!("{VIP}:8080");
    let (rs1, rs2, rs3) = (format!("{}:80", rs(1)), format!("{}:80", rs(2)), format!("{}:8080", rs(3)));
    let vip6_80 = format!("[{VIP6}]:80");
    let vip6_8080 = format!("[{VIP6}]:8080");
    let (rs6_1, rs6_2, rs6_3) = (format!("[{}]:80", rs6(1)), format!("[{}]:80", rs6(2)), format!("[{}]:8080", rs6(3)));
    for l in RULES.lines() {
        d.ok(&l.split_whitespace().collect::<Vec<_>>());
    }
    // The daemon enables the core with its first poll: wait for it, then
    // attach the board to the segment.
    assert!(
        wait_for(Duration::from_secs(5), || d.status()["exception_loop"].is_object()),
        "daemon status"
    );
    std::thread::sleep(Duration::from_millis(300));
    let attached = now_ns();
    must(&["ip", "-n", &hub, "link", "set", &data_tap, "master", "br0"]);
    let blob = Arc::new(Vec::new());
    // On `::`: both families.
    let any = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    let servers = [
        Server::start_on(&rsns[0], any, 80, "rs1", blob.clone()),
        Server::start_on(&rsns[1], any, 80, "rs2", blob.clone()),
        Server::start_on(&rsns[2], any, 8080, "rs3", blob.clone()),
    ];
    let setup = t0.elapsed();
    let to80: SocketAddr = (VIP, 80).into();
    let to8080: SocketAddr = (VIP, 8080).into();

    // 2. Traffic.
    let t_traffic = Instant::now();
    let mut served = gets_answered_by(&cl, to80, &["rs2", "rs1", "rs2", "rs1", "rs2", "rs1"], "request");
    let mut long2 = Echo::open(&cl, to80);
    let mut long1 = Echo::open(&cl, to80);
    served.push((long2.local_port(), "rs2"));
    served.push((long1.local_port(), "rs1"));
    for i in 0..4 {
        assert_eq!(long2.say(&format!("line {i}")).unwrap(), format!("rs2 line {i}"));
        assert_eq!(long1.say(&format!("line {i}")).unwrap(), format!("rs1 line {i}"));
    }
    drop(long1);
    drop(long2);
    let dr_ports: Vec<u16> = gets_answered_by(&cl, to8080, &["rs3"; 3], "DR request").into_iter().map(|(p, _)| p).collect();
    let traffic = t_traffic.elapsed();

    // 3. The board daemon's view once every connection has closed (the
    // IPv4 ones first).
    let mut last = BTreeMap::new();
    let closed = wait_for(Duration::from_secs(20), || {
        last = conns(&d);
        served.iter().all(|(port, who)| {
            let dst = if *who == "rs1" { &rs1 } else { &rs2 };
            last.get(&format!("{CLIENT}:{port}")).map(|(s, v, t)| (s.as_str(), v, t)) == Some(("TIME_WAIT", &vip80, dst))
        }) && dr_ports.iter().all(|port| last.get(&format!("{CLIENT}:{port}")).is_some_and(|(_, v, t)| *v == vip8080 && *t == rs3))
    });
    assert!(closed, "every NAT connection in TIME_WAIT with its server, the DR ones listed: {last:#?}\nserved {served:?}, DR {dr_ports:?}");
    assert_eq!(last.len(), 11, "{last:#?}");
    // Let the last IPv4 frames (the client's final ACKs of DR
    // connections) arrive: from here on, only IPv6 connections run.
    std::thread::sleep(Duration::from_millis(500));
    let (v6_from, before6) = (now_ns(), d.status());

    // 2, IPv6 (on the same board, every IPv4 connection closed): GETs, a
    // long-lived connection on the card, DR GETs.
    let t_traffic6 = Instant::now();
    let to6_80: SocketAddr = (VIP6, 80).into();
    let to6_8080: SocketAddr = (VIP6, 8080).into();
    let mut served6 = gets_answered_by(&cl, to6_80, &["rs2", "rs1", "rs2", "rs1"], "IPv6 request");
    let offload = |d: &Daemon| d.status()["offload"].clone();
    let base = offload(&d);
    let mut long6 = Echo::open(&cl, to6_80);
    served6.push((long6.local_port(), "rs2"));
    assert_eq!(long6.say("line 0").unwrap(), "rs2 line 0");
    // An IPv6 NAT connection on the card: two IPv6 flows of two entries.
    let on_card = wait_for(Duration::from_secs(5), || {
        let o = offload(&d);
        o["connections"].as_u64() > base["connections"].as_u64() && o["flow_entries"].as_u64() >= base["flow_entries"].as_u64().map(|e| e + 4)
    });
    assert!(on_card, "the IPv6 NAT connection offloaded: before {base}, now {}", offload(&d));
    for i in 1..4 {
        assert_eq!(long6.say(&format!("line {i}")).unwrap(), format!("rs2 line {i}"));
    }
    drop(long6);
    let dr6_ports: Vec<u16> = gets_answered_by(&cl, to6_8080, &["rs3"; 3], "IPv6 DR request").into_iter().map(|(p, _)| p).collect();
    let traffic6 = t_traffic6.elapsed();
    let closed6 = wait_for(Duration::from_secs(20), || {
        last = conns(&d);
        served6.iter().all(|(port, who)| {
            let dst = if *who == "rs1" { &rs6_1 } else { &rs6_2 };
            last.get(&format!("[{CLIENT6}]:{port}")).map(|(s, v, t)| (s.as_str(), v, t)) == Some(("TIME_WAIT", &vip6_80, dst))
        }) && dr6_ports.iter().all(|port| last.get(&format!("[{CLIENT6}]:{port}")).is_some_and(|(_, v, t)| *v == vip6_8080 && *t == rs6_3))
    });
    assert!(closed6, "every IPv6 NAT connection in TIME_WAIT with its server, the DR ones listed: {last:#?}\nserved {served6:?}, DR {dr6_ports:?}");
    assert_eq!(last.len(), 11 + 8, "{last:#?}");
    // Let the last frames (the client's final ACKs of DR connections)
    // arrive, then take the board off the bridge: what the kernels send
    // later (neighbour probes of the director's address, say) would reach
    // the board but not the capture, or come too late for the daemon.
    std::thread::sleep(Duration::from_millis(500));
    let (v6_to, after6) = (now_ns(), d.status());
    drop(servers);
    must(&["ip", "-n", &hub, "link", "set", &data_tap, "nomaster"]);
    std::thread::sleep(Duration::from_millis(300));
    let list = d.stdout(&["-L", "-n"]);
    for a in [&rs1, &rs2] {
        assert!(list.contains(&rs_row(a, "Masq", 1, 0, 4)), "{a}: 0 active, 4 inactive\n{list}");
    }
    for (a, inactive) in [(&rs6_1, 2), (&rs6_2, 3)] {
        assert!(list.contains(&rs_row(a, "Masq", 1, 0, inactive)), "{a}: 0 active, {inactive} inactive\n{list}");
    }
    let st = stats_of(&d.stdout(&["-L", "-n", "--stats"]));
    assert_eq!((st[&format!("TCP {vip80}")][0], st[&format!("TCP {vip6_80}")][0]), (8, 5), "{st:?}");
    for vip in [&vip8080, &vip6_8080] {
        let [n_conns, inpkts, outpkts, ..] = st[&format!("TCP {vip}")];
        assert_eq!((n_conns, outpkts), (3, 0), "DR {vip}: 3 connections, no reply through the director: {st:?}");
        assert!(inpkts >= 12, "{st:?}");
    }
    let status = d.status();
    let frames = counter(&status, &["exception_loop", "frames"]);
    let drops = status["director"]["dropped"].as_object().expect("director.dropped");
    assert!(drops.is_empty() || drops.values().all(|v| v.as_u64() == Some(0)), "unexpected drops: {status}");

    // 4. The golden model over the same frames.
    let (into_board, from_board, cap_drops) = cap.stop();
    // Nothing reached the board before it was on the segment.
    let early: Vec<String> = into_board.iter().filter(|(t, _)| *t < attached).map(|(_, f)| summary(f)).collect();
    assert!(early.is_empty(), "frames into the data tap before it joined the bridge: {early:#?}");
    assert_eq!(cap_drops, 0, "the capture of the data tap dropped frames");
    let gdir = tmpdir("e2e-board-golden");
    let inp = gdir.join("in.pcap");
    let out = gdir.join("out.pcap");
    let padded: Vec<(u64, Vec<u8>)> = into_board
        .iter()
        .map(|(t, f)| {
            let mut f = f.clone();
            if f.len() < 60 {
                f.resize(60, 0);
            }
            (*t, f)
        })
        .collect();
    write_pcap(&inp, &padded);
    let rules = write(&gdir, "rules", RULES);
    let wire = format!("pcap:{},{}", inp.display(), out.display());
    let g = Daemon::start(&gdir, &director_toml6(), &["--backend", "model", "--rules", rules.to_str().unwrap(), "--wire", &wire]);
    assert!(wait_for(Duration::from_secs(30), || g.status()["pcap_frames_left"] == 0), "the golden model played the capture");
    for args in [&["-L", "-n"][..], &["-L", "-n", "--stats"]] {
        assert_eq!(d.stdout(args), g.stdout(args), "`lvsnic {}`: board (left) and golden model (right)", args.join(" "));
    }
    assert_eq!(conns(&d), conns(&g), "`-L -n -c` without the expiry: board (left) and golden model (right)");
    let gstatus = g.status();
    let (gcode, glog) = g.stop();
    assert_eq!(gcode, 0, "{glog}");
    let mut want: Vec<Vec<u8>> =
        lvsnic_model::pcap::read_file(&out).unwrap().into_iter().map(|r| unpad(&r.data).to_vec()).collect();
    let mut got: Vec<Vec<u8>> = from_board.iter().map(|(_, f)| unpad(f).to_vec()).collect();
    want.sort();
    got.sort();
    if got != want {
        let missing: Vec<String> = want.iter().filter(|f| !got.contains(f)).map(|f| summary(f)).collect();
        let extra: Vec<String> = got.iter().filter(|f| !want.contains(f)).map(|f| summary(f)).collect();
        panic!(
            "the board sent {} frames, the golden model {}; only the model's: {missing:#?}\nonly the board's: {extra:#?}",
            got.len(),
            want.len()
        );
    }

    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    // The board's own counts (read once the daemon has let go of UDP 1234):
    // nothing dropped, and the capture saw what the board did.
    let (ip, csv) = (sim.ip.clone(), sim.csr_csv.clone());
    let (core, glue) = in_netns(&hub, move || {
        let mut cfg = EtherboneConfig::new(EtherboneConfig::parse_device(&ip).unwrap());
        cfg.glue = Some(GlueMap::parse_option(&csv).unwrap());
        let mut dev = EtherboneDevice::open(cfg).unwrap_or_else(|e| panic!("Etherbone to the board after the daemon: {e}"));
        let c = dev.counters();
        (c.core, c.management.and_then(|m| m.glue).expect("glue counters"))
    });
    assert!(
        glue.rx_overflow == 0
            && glue.host_overflow == 0
            && glue.inject_bad == 0
            && glue.inject_overflow == 0
            && glue.tx_overflow == 0
            && glue.tx_aborted == 0,
        "the glue dropped frames: {glue:?}"
    );
    // Established connections were forwarded by the core; the rest went
    // up as exceptions, one each (the daemon saw `frames`).
    assert!(core.forwarded > 0, "frames forwarded by the core: {core:?}");
    assert_eq!((core.rx, core.to_host), (core.forwarded + frames, frames), "core counters and the daemon's {frames} exceptions: {core:?}");
    // IPv6 frames forwarded by the core: the daemon credits the core's
    // forwarded count (CNT_FWD) to its received frames when it reports,
    // so its status before and after the IPv6 part tells how many frames
    // the core forwarded meanwhile (the final status says as many as the
    // core's own counter). While the IPv6 part ran, the only IPv4 frames
    // into the board were late ones of closed connections, if any (the
    // core forwards IPv4 or IPv6 TCP and UDP, nothing else): the core
    // forwarded more than they could explain.
    let fwd = |s: &serde_json::Value| counter(s, &["director", "frames", "input"]) - counter(s, &["exception_loop", "frames"]);
    assert_eq!(fwd(&status), core.forwarded, "the daemon's credited forwarded frames and the core's counter: {core:?}\n{status}");
    let fwd6 = fwd(&after6) - fwd(&before6);
    let in_window = |f: &dyn Fn(&[u8]) -> bool| into_board.iter().filter(|(t, fr)| (v6_from..v6_to).contains(t) && f(fr)).count() as u64;
    let (ip4_in, tcp6_in) = (in_window(&is_ipv4), in_window(&is_tcp6));
    assert!(tcp6_in > 0 && fwd6 > ip4_in, "the core forwarded {fwd6} frames while {tcp6_in} IPv6 TCP and {ip4_in} IPv4 frames entered the board");
    assert_eq!(glue.rx_frames as usize, into_board.len(), "frames into the board (glue) and captured going into the data tap: {glue:?}");
    assert_eq!(glue.tx_frames as usize, from_board.len(), "frames out of the board (glue) and captured coming from the data tap: {glue:?}");

    eprintln!(
        "e2e_board: run.sh start {:.1?} (with a build when needed), setup {:.1?}, traffic {:.1?} (IPv6 {traffic6:.1?}), total {:.1?}; {} frames into the board, {} out; \
         core: {} forwarded ({fwd6} of them while {tcp6_in} IPv6 TCP and {ip4_in} IPv4 frames came in), {} to the host, {} injected; \
         golden model: {} exceptions",
        sim_start,
        setup,
        traffic + traffic6,
        t0.elapsed(),
        into_board.len(),
        from_board.len(),
        core.forwarded,
        core.to_host,
        core.injected,
        counter(&gstatus, &["exception_loop", "frames"]),
    );
    drop(sim);
}

// ------------------------------------------------------------ the board

/// The simulated board, started by `boards/sim/run.sh` in a namespace;
/// stopped (its taps deleted) when dropped.
struct Sim {
    netns: String,
    taps: [String; 2],
    ip: String,
    host_ip: String,
    csr_csv: String,
    /// run.sh's state directory of this instance (its log, pid, env).
    state: Option<PathBuf>,
}

fn run_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../boards/sim/run.sh")
}

impl Sim {
    fn start(netns: &str, data_tap: &str, mgmt_tap: &str) -> Sim {
        let mut sim = Sim {
            netns: netns.to_string(),
            taps: [data_tap.to_string(), mgmt_tap.to_string()],
            ip: String::new(),
            host_ip: String::new(),
            csr_csv: String::new(),
            state: None,
        };
        let o = Command::new(run_sh())
            .args(["start", data_tap, mgmt_tap])
            .env("LVSNIC_SIM_NETNS", netns)
            .output()
            .expect("run boards/sim/run.sh");
        let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        let ready = out.lines().find(|l| l.starts_with("lvsnic-sim: ready"));
        let ready = match (o.status.success(), ready) {
            (true, Some(l)) => l.to_string(),
            _ => panic!("boards/sim/run.sh start failed ({}):\n{out}{err}", o.status),
        };
        eprintln!("{}", err.trim_end());
        eprintln!("{ready}");
        let field = |k: &str| {
            ready
                .split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("no {k}= in {ready:?}"))
                .to_string()
        };
        sim.ip = field("sim_ip");
        sim.host_ip = field("host_ip");
        sim.csr_csv = field("csr_csv");
        sim.state = Path::new(&field("log")).parent().map(Path::to_path_buf);
        sim
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = Command::new(run_sh()).arg("stop").args(&self.taps).env("LVSNIC_SIM_NETNS", &self.netns).status();
        // The state directory is kept (with the model's log) when the test failed.
        if let Some(dir) = &self.state {
            if std::thread::panicking() {
                eprintln!("e2e_board: the simulated board's log: {}", dir.join("sim.log").display());
            } else {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

// ------------------------------------------------------------ the capture

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// Frames (CLOCK_REALTIME ns, bytes).
type Frames = Vec<(u64, Vec<u8>)>;

/// A packet socket on the data tap, read by a thread: frames the host
/// sends into the tap (they enter the board) and frames the board sends.
struct Capture {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<(Frames, Frames)>>,
    fd: Arc<OwnedFd>,
}

fn setsockopt<T>(fd: i32, level: i32, name: i32, v: &T) {
    // SAFETY: `v` is a valid T for the duration of the call and its size is passed.
    let rc = unsafe { libc::setsockopt(fd, level, name, v as *const T as *const libc::c_void, std::mem::size_of::<T>() as u32) };
    assert_eq!(rc, 0, "setsockopt({level}, {name}): {}", std::io::Error::last_os_error());
}

impl Capture {
    fn start(ns: &str, ifname: &str) -> Capture {
        let ifname = ifname.to_string();
        let fd = in_netns(ns, move || {
            let proto = (libc::ETH_P_ALL as u16).to_be();
            // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
            let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
            assert!(raw >= 0, "packet socket: {}", std::io::Error::last_os_error());
            // SAFETY: `raw` is a fresh descriptor nobody else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            let name = std::ffi::CString::new(ifname.clone()).unwrap();
            // SAFETY: a NUL-terminated name.
            let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
            assert_ne!(index, 0, "{ifname}: {}", std::io::Error::last_os_error());
            // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = index as i32;
            // SAFETY: `sll` is a valid sockaddr_ll and its size is passed.
            let rc = unsafe {
                libc::bind(
                    fd.as_raw_fd(),
                    &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                )
            };
            assert_eq!(rc, 0, "bind to {ifname}: {}", std::io::Error::last_os_error());
            setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &(8i32 << 20));
            let tv = libc::timeval { tv_sec: 0, tv_usec: 50_000 };
            setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv);
            fd
        });
        let fd = Arc::new(fd);
        let stop = Arc::new(AtomicBool::new(false));
        let (st, rfd) = (stop.clone(), fd.clone());
        let thread = std::thread::spawn(move || {
            let (mut into, mut from) = (Vec::new(), Vec::new());
            let mut buf = vec![0u8; 65536];
            let mut idle_after_stop = false;
            while !idle_after_stop {
                let stopping = st.load(Ordering::Relaxed);
                // SAFETY: as above; all-zero is a valid sockaddr_ll.
                let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
                let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
                // SAFETY: `buf` and `sll` are valid for writes of the lengths passed.
                let n = unsafe {
                    libc::recvfrom(
                        rfd.as_raw_fd(),
                        buf.as_mut_ptr() as *mut libc::c_void,
                        buf.len(),
                        libc::MSG_TRUNC,
                        &mut sll as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                        &mut len,
                    )
                };
                if n < 0 {
                    // The timeout: after a stop request, the queue is empty.
                    idle_after_stop = stopping;
                    continue;
                }
                let n = n as usize;
                assert!(n <= buf.len(), "frame of {n} bytes");
                let ts = now_ns();
                if sll.sll_pkttype == libc::PACKET_OUTGOING {
                    into.push((ts, buf[..n].to_vec()));
                } else {
                    from.push((ts, buf[..n].to_vec()));
                }
            }
            (into, from)
        });
        Capture { stop, thread: Some(thread), fd }
    }

    /// Stops: (frames into the board, frames from the board, frames the socket dropped).
    fn stop(mut self) -> (Frames, Frames, u32) {
        self.stop.store(true, Ordering::Relaxed);
        let (into, from) = self.thread.take().unwrap().join().expect("capture thread");
        // SAFETY: tpacket_stats is plain data; all-zero is valid.
        let mut stats: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: `stats` is valid for writes of `len` bytes.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut stats as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(rc, 0, "PACKET_STATISTICS: {}", std::io::Error::last_os_error());
        (into, from, stats.tp_drops)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A frame without Ethernet padding (IPv4: up to the IP total length;
/// IPv6: the 40-byte header and its payload length; ARP over
/// Ethernet/IPv4: 42 bytes).
fn unpad(f: &[u8]) -> &[u8] {
    if f.len() >= 34 && f[12..14] == [0x08, 0x00] {
        let total = 14 + usize::from(u16::from_be_bytes([f[16], f[17]]));
        return &f[..total.min(f.len())];
    }
    if f.len() >= 54 && f[12..14] == [0x86, 0xdd] {
        let total = 54 + usize::from(u16::from_be_bytes([f[18], f[19]]));
        return &f[..total.min(f.len())];
    }
    if f.len() >= 42 && f[12..14] == [0x08, 0x06] {
        return &f[..42];
    }
    f
}

/// One line about a frame for failure messages.
fn summary(f: &[u8]) -> String {
    let hex: String = f.iter().take(64).map(|b| format!("{b:02x}")).collect();
    format!("{} bytes: {hex}", f.len())
}

// ------------------------------------------------------------ listings

/// `-L -n` row of a real server: `  -> ADDR  Masq|Route  weight active inactive`.
fn rs_row(addr: &str, fwd: &str, weight: u32, active: u32, inactive: u32) -> String {
    format!("  -> {addr:<28} {fwd:<7} {weight:<6} {active:<10} {inactive:<10}\n")
}

