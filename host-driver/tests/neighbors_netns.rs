//! Neighbours as Linux learns them (issue 21, item 1), with real kernels:
//!
//! * over a TAP wire, a real server in a namespace and no `[neighbors]`
//!   entry: the daemon ARPs for it, holds the first frames, a real TCP
//!   client through the VIP works; the real server's MAC changes (`ip link
//!   set address`, whose gratuitous ARP the daemon reads), the established
//!   connection keeps working and the card's action entry has the new MAC;
//!   the gateway towards the clients is only an address (`[director]
//!   gateway`): its MAC is learned from its ARP answer, NAT replies wait
//!   for it, and when it changes the card's reply action follows;
//! * rtnetlink: the daemon's own stack (`--host-tap`) has the neighbour
//!   table: entries added, changed and deleted there are followed, an
//!   unknown real server is resolved by the kernel on the daemon's request
//!   (`NTF_USE`), and a real server behind a route `via` a gateway uses the
//!   gateway's MAC; the gateway towards the clients (`[director] gateway`)
//!   is learned from the kernel's table like a real server, or taken from
//!   the default route (`gateway = "fib"`) and followed when it moves.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;

#[path = "netns_harness.rs"]
mod netns;
use lvsnic_fixtures::*;
use std::net::Ipv4Addr;
use std::time::Duration;

const DIRECTOR_NO_NEIGHBORS: &str =
    "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n";

/// No `gateway_mac`: the gateway (an address of the client's namespace,
/// 198.51.100.1) is learned.
const DIRECTOR_LEARNED_GATEWAY: &str =
    "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway = \"198.51.100.1\"\n";

/// The tests share `ip netns` probes named by the process id: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn entry(d: &Daemon, rs: &str) -> serde_json::Value {
    d.status()["neighbors"]["entries"][rs].clone()
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn e2e_real_server_mac_learned_on_the_wire_and_followed_when_it_changes() {
    use netns::*;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable() {
        panic!("cannot run here: {why}");
    }
    let p = format!("lvsnic-nb-{}", std::process::id());
    let mut nss = Namespaces::default();
    let Segment { hub, cl, rsns } = nss.segment(&p, 1);
    must(&["ip", "-n", &hub, "tuntap", "add", "mode", "tap", "name", "lvs0"]);
    must(&["ip", "-n", &hub, "link", "set", "lvs0", "master", "br0", "up"]);
    let client_ip = Ipv4Addr::new(198, 51, 100, 10);
    leaf(&hub, &cl, "vcl", &GATEWAY_MAC.to_string(), &format!("{client_ip}/24"));
    must(&["ip", "-n", &cl, "route", "add", &format!("{VIP}/32"), "dev", "eth0"]);
    // The client's router, as the director sees it: an address of the
    // client's namespace, answering ARP with the client's MAC.
    must(&["ip", "-n", &cl, "addr", "add", "198.51.100.1/32", "dev", "eth0"]);
    must(&["ip", "-n", &cl, "route", "add", &format!("{DIRECTOR_IP}/32"), "dev", "eth0"]);
    let ns = &rsns[0];
    let old_mac = "02:00:00:00:10:01";
    let new_mac = "02:00:00:00:77:01";
    leaf(&hub, ns, "vrs1", old_mac, &format!("{}/24", rs(1)));
    must(&["ip", "-n", ns, "route", "add", &format!("{DIRECTOR_IP}/32"), "dev", "eth0"]);
    must(&["ip", "-n", ns, "route", "add", "default", "via", &DIRECTOR_IP.to_string(), "dev", "eth0"]);
    let dir = tmpdir("neighbors-wire");
    let state = dir.join("state");
    // Learned MACs asked again every 1.5 s (Linux: 30 s), so that the
    // change without a gratuitous ARP below is found quickly.
    let args =
        ["--backend", "model", "--wire", "tap:lvs0", "--state-dir", state.to_str().unwrap(), "--neighbor-reachable-ms", "1500"];
    let d = Daemon::start_in(&["ip", "netns", "exec", &hub], &dir, DIRECTOR_LEARNED_GATEWAY, &args);
    d.ok(&["-A", "-t", "10.0.0.100:80", "-s", "rr"]);
    // Accepted without a [neighbors] entry.
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-m", "-w", "1"]);
    let _server = Server::start(ns, 80, "rs1", std::sync::Arc::new(vec![b'x'; 64]));
    let to: std::net::SocketAddr = (VIP, 80).into();
    let t0 = std::time::Instant::now();
    let mut e = Echo::open(&cl, to);
    assert_eq!(e.say("one").unwrap(), "rs1 one");
    let first = t0.elapsed();
    let en = entry(&d, "192.168.10.1");
    assert_eq!(en["mac"], old_mac, "{en}");
    assert_eq!(en["source"], "arp", "{en}");
    assert_eq!(en["card_macs"], serde_json::json!([old_mac]), "the connection is on the card: {en}");
    // The gateway: learned from its ARP answer, the reply action has its MAC.
    let gw = entry(&d, "198.51.100.1");
    assert_eq!((gw["gateway"].clone(), gw["mac"].clone(), gw["source"].clone()), (true.into(), GATEWAY_MAC.to_string().into(), "arp".into()), "{gw}");
    assert_eq!(gw["card_macs"], serde_json::json!([GATEWAY_MAC.to_string()]), "{gw}");
    let st = d.status();
    assert!(st["neighbors"]["arp_requests"].as_u64().unwrap() >= 2, "{}", st["neighbors"]);
    assert_eq!(st["offload"]["connections"], 1, "{}", st["offload"]);
    let port = e.local_port();

    // The real server's NIC changes; Linux announces it with a gratuitous
    // ARP (arp_notify).
    sysctl(ns, &["net.ipv4.conf.eth0.arp_notify=1"]);
    let t1 = std::time::Instant::now();
    must(&["ip", "-n", ns, "link", "set", "dev", "eth0", "address", new_mac]);
    assert!(
        wait_for(Duration::from_secs(10), || entry(&d, "192.168.10.1")["mac"] == new_mac),
        "new MAC not learned: {}",
        entry(&d, "192.168.10.1")
    );
    let garp = t1.elapsed();
    e.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(e.say("two").unwrap(), "rs1 two", "the established connection goes on");
    assert_eq!(e.local_port(), port);
    let st = d.status();
    let en = &st["neighbors"]["entries"]["192.168.10.1"];
    assert_eq!(en["card_macs"], serde_json::json!([new_mac]), "the card's action has the new MAC: {en}");
    assert_eq!(st["offload"]["connections"], 1, "the connection was not taken off the card: {}", st["offload"]);
    assert_eq!(st["neighbors"]["changed"], 1, "{}", st["neighbors"]);
    assert_eq!(st["neighbors"]["unresolved_drops"], 0, "{}", st["neighbors"]);
    let conns = d.stdout(&["-L", "-n", "-c"]);
    assert_eq!(conns.lines().filter(|l| l.contains("ESTABLISHED")).count(), 1, "{conns}");
    // A new connection goes to the new MAC too.
    let mut e2 = Echo::open(&cl, to);
    assert_eq!(e2.say("three").unwrap(), "rs1 three");

    // Changed again, silently (no arp_notify): found from the ARP request
    // the real server sends for the director (Linux flushes a device's
    // neighbours when its address changes), or by the daemon asking again
    // (--neighbor-reachable-ms), whichever comes first.
    sysctl(ns, &["net.ipv4.conf.eth0.arp_notify=0"]);
    let t1 = std::time::Instant::now();
    let third_mac = "02:00:00:00:88:01";
    must(&["ip", "-n", ns, "link", "set", "dev", "eth0", "address", third_mac]);
    assert!(
        wait_for(Duration::from_secs(15), || entry(&d, "192.168.10.1")["mac"] == third_mac),
        "silent change not found: {}",
        entry(&d, "192.168.10.1")
    );
    let silent = t1.elapsed();
    assert_eq!(e.say("four").unwrap(), "rs1 four");
    eprintln!(
        "MEASURE first connection with ARP resolution {first:?}; new MAC learned {garp:?} after a change with gratuitous ARP, {silent:?} after a silent one (status polled every 20 ms)"
    );
    assert_eq!(e2.say("five").unwrap(), "rs1 five");
    let st = d.status();
    assert_eq!(st["neighbors"]["entries"]["192.168.10.1"]["card_macs"], serde_json::json!([third_mac]));
    assert_eq!(st["offload"]["connections"], 2, "{}", st["offload"]);

    // The gateway's MAC changes (with a gratuitous ARP): the reply action
    // is rewritten in place, both connections stay on the card and go on.
    sysctl(&cl, &["net.ipv4.conf.eth0.arp_notify=1"]);
    let gw_new = "02:00:00:00:77:fe";
    must(&["ip", "-n", &cl, "link", "set", "dev", "eth0", "address", gw_new]);
    assert!(
        wait_for(Duration::from_secs(10), || entry(&d, "198.51.100.1")["mac"] == gw_new),
        "new gateway MAC not learned: {}",
        entry(&d, "198.51.100.1")
    );
    assert_eq!(e.say("six").unwrap(), "rs1 six");
    assert_eq!(e2.say("seven").unwrap(), "rs1 seven");
    let st = d.status();
    assert_eq!(st["neighbors"]["entries"]["198.51.100.1"]["card_macs"], serde_json::json!([gw_new]), "{}", st["neighbors"]);
    assert_eq!(st["offload"]["connections"], 2, "{}", st["offload"]);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("event=neighbor_learned ip=198.51.100.1 mac=02:00:00:00:00:fe source=arp"), "{log}");
    assert!(log.contains("event=neighbor_changed ip=198.51.100.1 old=02:00:00:00:00:fe new=02:00:00:00:77:fe"), "{log}");
    assert!(log.contains("event=neighbor_learned ip=192.168.10.1 mac=02:00:00:00:10:01 source=arp"), "{log}");
    assert!(log.contains("event=neighbor_changed ip=192.168.10.1 old=02:00:00:00:10:01 new=02:00:00:00:77:01"), "{log}");
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn kernel_neighbour_table_is_followed_and_a_routed_real_server_uses_its_gateway() {
    use netns::*;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable() {
        panic!("cannot run here: {why}");
    }
    let mut nss = Namespaces::default();
    let ns = nss.add(format!("lvsnic-nbk-{}", std::process::id()));
    must(&["ip", "-n", &ns, "tuntap", "add", "mode", "tap", "name", "lvsh"]);
    must(&["ip", "-n", &ns, "link", "set", "lvsh", "address", "02:00:00:00:00:01", "up"]);
    must(&["ip", "-n", &ns, "addr", "add", "192.168.10.254/24", "dev", "lvsh"]);
    must(&["ip", "-n", &ns, "route", "add", "172.16.0.0/24", "via", "192.168.10.9", "dev", "lvsh"]);
    // Known to the kernel before the daemon starts: dumped at start.
    must(&["ip", "-n", &ns, "neigh", "replace", "192.168.10.1", "lladdr", "02:00:00:00:10:01", "dev", "lvsh", "nud", "permanent"]);
    let dir = tmpdir("neighbors-kernel");
    let state = dir.join("state");
    let args = ["--backend", "model", "--host-tap", "lvsh", "--state-dir", state.to_str().unwrap()];
    // The gateway towards the clients, by address only: resolved through the kernel.
    let director = DIRECTOR_NO_NEIGHBORS.replace("gateway_mac = \"02:00:00:00:00:fe\"", "gateway = \"192.168.10.7\"");
    let d = Daemon::start_in(&["ip", "netns", "exec", &ns], &dir, &director, &args);
    d.ok(&["-A", "-t", "10.0.0.100:80", "-s", "rr"]);
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-g", "-w", "1"]);
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.2:80", "-g", "-w", "1"]);
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "172.16.0.5:80", "-g", "-w", "1"]);
    let is = |rs: &str, mac: serde_json::Value| {
        let ok = wait_for(Duration::from_secs(5), || entry(&d, rs)["mac"] == mac);
        assert!(ok, "{rs}: want {mac}, have {}", entry(&d, rs));
    };
    is("192.168.10.1", "02:00:00:00:10:01".into());
    assert_eq!(entry(&d, "192.168.10.1")["source"], "kernel");
    // Unknown to the kernel: the daemon asks it to resolve (an entry appears).
    let neigh = || {
        let o = std::process::Command::new("ip").args(["-n", &ns, "neigh", "show", "dev", "lvsh"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    assert!(wait_for(Duration::from_secs(5), || neigh().contains("192.168.10.2 ")), "no resolution asked: {}", neigh());
    assert!(wait_for(Duration::from_secs(5), || neigh().contains("192.168.10.9 ")), "the gateway not asked for: {}", neigh());
    assert_eq!(entry(&d, "192.168.10.2")["mac"], serde_json::Value::Null);
    // Learned as the kernel learns it (an answer would do the same).
    must(&["ip", "-n", &ns, "neigh", "replace", "192.168.10.2", "lladdr", "02:00:00:00:10:02", "dev", "lvsh", "nud", "reachable"]);
    is("192.168.10.2", "02:00:00:00:10:02".into());
    // The routed real server: the FIB's gateway, its MAC.
    assert!(wait_for(Duration::from_secs(5), || entry(&d, "172.16.0.5")["next_hop"] == "192.168.10.9"), "{}", entry(&d, "172.16.0.5"));
    must(&["ip", "-n", &ns, "neigh", "replace", "192.168.10.9", "lladdr", "02:00:00:00:10:09", "dev", "lvsh", "nud", "reachable"]);
    is("172.16.0.5", "02:00:00:00:10:09".into());
    // The gateway: asked for like a real server, learned from the kernel's table.
    assert!(wait_for(Duration::from_secs(5), || neigh().contains("192.168.10.7 ")), "the client gateway not asked for: {}", neigh());
    must(&["ip", "-n", &ns, "neigh", "replace", "192.168.10.7", "lladdr", "02:00:00:00:10:07", "dev", "lvsh", "nud", "reachable"]);
    is("192.168.10.7", "02:00:00:00:10:07".into());
    assert_eq!((entry(&d, "192.168.10.7")["gateway"].clone(), entry(&d, "192.168.10.7")["source"].clone()), (true.into(), "kernel".into()));
    // A change, then a deletion, followed.
    must(&["ip", "-n", &ns, "neigh", "replace", "192.168.10.1", "lladdr", "02:00:00:00:10:11", "dev", "lvsh", "nud", "permanent"]);
    is("192.168.10.1", "02:00:00:00:10:11".into());
    must(&["ip", "-n", &ns, "neigh", "del", "192.168.10.1", "dev", "lvsh"]);
    is("192.168.10.1", serde_json::Value::Null);
    // A static entry wins over the kernel.
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("event=neighbor_learned ip=192.168.10.9 mac=02:00:00:00:10:09 source=kernel"), "{log}");
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn the_gateway_from_the_default_route_is_learned_and_followed_when_the_route_moves() {
    use netns::*;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable() {
        panic!("cannot run here: {why}");
    }
    let mut nss = Namespaces::default();
    let ns = nss.add(format!("lvsnic-nbf-{}", std::process::id()));
    must(&["ip", "-n", &ns, "tuntap", "add", "mode", "tap", "name", "lvsh"]);
    must(&["ip", "-n", &ns, "link", "set", "lvsh", "address", "02:00:00:00:00:01", "up"]);
    must(&["ip", "-n", &ns, "addr", "add", "192.168.10.254/24", "dev", "lvsh"]);
    must(&["ip", "-n", &ns, "route", "add", "default", "via", "192.168.10.7", "dev", "lvsh"]);
    let dir = tmpdir("neighbors-fib");
    let state = dir.join("state");
    let args = ["--backend", "model", "--host-tap", "lvsh", "--state-dir", state.to_str().unwrap()];
    let director = DIRECTOR_NO_NEIGHBORS.replace("gateway_mac = \"02:00:00:00:00:fe\"", "gateway = \"fib\"");
    let d = Daemon::start_in(&["ip", "netns", "exec", &ns], &dir, &director, &args);
    let neigh = || {
        let o = std::process::Command::new("ip").args(["-n", &ns, "neigh", "show", "dev", "lvsh"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    assert!(wait_for(Duration::from_secs(5), || entry(&d, "192.168.10.7")["gateway"] == true), "{}", d.status()["neighbors"]);
    assert!(wait_for(Duration::from_secs(5), || neigh().contains("192.168.10.7 ")), "the gateway not asked for: {}", neigh());
    must(&["ip", "-n", &ns, "neigh", "replace", "192.168.10.7", "lladdr", "02:00:00:00:10:07", "dev", "lvsh", "nud", "reachable"]);
    assert!(wait_for(Duration::from_secs(5), || entry(&d, "192.168.10.7")["mac"] == "02:00:00:00:10:07"), "{}", entry(&d, "192.168.10.7"));
    assert_eq!(entry(&d, "192.168.10.7")["source"], "kernel");
    // The default route moves: so does the gateway.
    must(&["ip", "-n", &ns, "route", "replace", "default", "via", "192.168.10.8", "dev", "lvsh"]);
    assert!(wait_for(Duration::from_secs(5), || entry(&d, "192.168.10.8")["gateway"] == true), "{}", d.status()["neighbors"]);
    assert_eq!(entry(&d, "192.168.10.7"), serde_json::Value::Null, "the old gateway is no longer tracked");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("event=gateway_moved old=none new=192.168.10.7 source=fib"), "{log}");
    assert!(log.contains("event=gateway_moved old=192.168.10.7 new=192.168.10.8 source=fib"), "{log}");
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn kernel_ipv6_neighbour_table_is_followed_and_a_routed_real_server_uses_its_gateway() {
    use netns::*;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable() {
        panic!("cannot run here: {why}");
    }
    let mut nss = Namespaces::default();
    let ns = nss.add(format!("lvsnic-nbk6-{}", std::process::id()));
    enable_ipv6(&ns);
    must(&["ip", "-n", &ns, "tuntap", "add", "mode", "tap", "name", "lvsh"]);
    must(&["ip", "-n", &ns, "link", "set", "lvsh", "address", "02:00:00:00:00:01", "up"]);
    must(&["ip", "-n", &ns, "-6", "addr", "add", "2001:db8:1::fe/64", "dev", "lvsh", "nodad"]);
    // A real server behind a router, as IPv6 routes usually name one: by its link-local address.
    must(&["ip", "-n", &ns, "-6", "route", "add", "2001:db8:2::/64", "via", "fe80::9", "dev", "lvsh"]);
    // Known to the kernel before the daemon starts: dumped at start.
    must(&["ip", "-n", &ns, "-6", "neigh", "replace", "2001:db8:1::1", "lladdr", "02:00:00:00:20:01", "dev", "lvsh", "nud", "permanent"]);
    let dir = tmpdir("neighbors-kernel6");
    let state = dir.join("state");
    let args = ["--backend", "model", "--host-tap", "lvsh", "--state-dir", state.to_str().unwrap()];
    let d = Daemon::start_in(&["ip", "netns", "exec", &ns], &dir, DIRECTOR_NO_NEIGHBORS, &args);
    d.ok(&["-A", "-t", "[2001:db8::10]:80", "-s", "rr"]);
    for rs in ["[2001:db8:1::1]:80", "[2001:db8:1::2]:80", "[2001:db8:2::5]:80"] {
        d.ok(&["-a", "-t", "[2001:db8::10]:80", "-r", rs, "-g", "-w", "1"]);
    }
    let is = |rs: &str, mac: serde_json::Value| {
        let ok = wait_for(Duration::from_secs(5), || entry(&d, rs)["mac"] == mac);
        assert!(ok, "{rs}: want {mac}, have {}", entry(&d, rs));
    };
    is("2001:db8:1::1", "02:00:00:00:20:01".into());
    assert_eq!(entry(&d, "2001:db8:1::1")["source"], "kernel");
    // Unknown to the kernel: the daemon asks it to resolve (an entry appears).
    let neigh = || {
        let o = std::process::Command::new("ip").args(["-n", &ns, "-6", "neigh", "show", "dev", "lvsh"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    assert!(wait_for(Duration::from_secs(5), || neigh().contains("2001:db8:1::2 ")), "no resolution asked: {}", neigh());
    assert!(wait_for(Duration::from_secs(5), || neigh().contains("fe80::9 ")), "the router not asked for: {}", neigh());
    assert_eq!(entry(&d, "2001:db8:1::2")["mac"], serde_json::Value::Null);
    // Learned as the kernel learns it (an advertisement would do the same).
    must(&["ip", "-n", &ns, "-6", "neigh", "replace", "2001:db8:1::2", "lladdr", "02:00:00:00:20:02", "dev", "lvsh", "nud", "reachable"]);
    is("2001:db8:1::2", "02:00:00:00:20:02".into());
    // The routed real server: the FIB's gateway, its MAC.
    assert!(wait_for(Duration::from_secs(5), || entry(&d, "2001:db8:2::5")["next_hop"] == "fe80::9"), "{}", entry(&d, "2001:db8:2::5"));
    must(&["ip", "-n", &ns, "-6", "neigh", "replace", "fe80::9", "lladdr", "02:00:00:00:20:09", "dev", "lvsh", "nud", "reachable"]);
    is("2001:db8:2::5", "02:00:00:00:20:09".into());
    // A change, then a deletion, followed.
    must(&["ip", "-n", &ns, "-6", "neigh", "replace", "2001:db8:1::1", "lladdr", "02:00:00:00:20:11", "dev", "lvsh", "nud", "permanent"]);
    is("2001:db8:1::1", "02:00:00:00:20:11".into());
    must(&["ip", "-n", &ns, "-6", "neigh", "del", "2001:db8:1::1", "dev", "lvsh"]);
    is("2001:db8:1::1", serde_json::Value::Null);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("event=neighbor_learned ip=fe80::9 mac=02:00:00:00:20:09 source=kernel"), "{log}");
    assert!(log.contains("event=neighbor_changed ip=2001:db8:1::1 old=02:00:00:00:20:01 new=02:00:00:00:20:11"), "{log}");
}
