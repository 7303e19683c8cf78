//! End to end over IPv6 with real kernel TCP (issue 20, item 8): clients
//! and real servers in network namespaces, the lvsnic daemon as the
//! director on a TAP wire between them, as `e2e_netns.rs` does for IPv4.
//!
//! ```text
//! netns P-hub: bridge br0 (no multicast snooping: the director sends no MLD reports)
//!              ── TAP lvs0 (`lvsnic daemon --wire tap:lvs0`, run in P-hub)
//!              ── veth ── netns P-cl  2001:db8:ff::10, MAC = gateway_mac,
//!                                     the VIPs 2001:db8::10, ::11 on-link (the director answers NS)
//!              ── veth ── netns P-cl2 2001:db8:ff::20, MAC 02:00:00:00:ff:20 (a `[neighbors]` entry)
//!              ── veth ── netns P-rs1 2001:db8:1::1, MAC 02:00:00:00:20:01, default via 2001:db8::1
//!              ── veth ── netns P-rs2 2001:db8:1::2, MAC 02:00:00:00:20:02, default via 2001:db8::1
//!              ── veth ── netns P-rs3 2001:db8:1::3, MAC 02:00:00:00:20:03, VIP 2001:db8::11 on lo,
//!                                     2001:db8:ff::/64 on-link (DR)
//! ```
//!
//! Every address is added `nodad` in namespaces without duplicate address
//! detection or router solicitations (`netns::enable_ipv6`), so nothing
//! waits a second for an address to leave `tentative`. Linux needs nothing
//! more for IPv6 DR: a VIP on `lo` is not answered for on `eth0`
//! (`ndisc_recv_ns` looks the target up on the receiving device only), so
//! no `arp_ignore` counterpart exists or is needed.
//!
//! What runs, on `--backend model` and `--backend sim --width 512` (the
//! verilated RTL), both cards with `CAPS1.ipv6`:
//!
//! 1. NAT service `[2001:db8::10]:80` `rr` over rs1, rs2: sequential
//!    HTTP/1.0 GETs answer rs2, rs1, rs2, ...; `-L -n` and `--stats` count
//!    them per server, `-L -n -c` lists each connection (by client port)
//!    in TIME_WAIT;
//! 2. several clients at once (both client namespaces, four connections
//!    each): each sends its own 48 KiB and half-closes; the server records
//!    what it received and from whom (the client's own address: NAT keeps
//!    it) and answers its name, the peer it saw and the bytes reversed;
//!    each client gets exactly that back from the VIP;
//! 3. long-lived connections are on the card: `offload.connections`
//!    counts them and each NAT connection takes four flow-table entries
//!    (two IPv6 flows of two entries), and the metrics endpoint says the
//!    same (`lvsnic_offloaded_connections`, `lvsnic_flow_table_used_entries`,
//!    per IPv6 real server `lvsnic_real_server_connections_total`); a 1 MiB
//!    download arrives byte for byte, most of its frames forwarded by the
//!    card (`exception_loop.in_hardware`);
//! 4. DR service `[2001:db8::11]:80` to rs3 (`-g`): rs3 (the VIP on lo)
//!    answers the client directly, the director sees no reply; a
//!    long-lived DR connection is offloaded.
//!
//! `e2e_netns6_learned` runs the same without any IPv6 `[neighbors]`
//! entry: the real servers' MACs are learned from the kernel neighbour
//! table of the director's own stack (`--host-tap`, an address on the
//! real servers' subnet), which resolves them at the daemon's request;
//! then (5.) a real server's MAC changes under an established connection,
//! announced by an unsolicited Neighbour Advertisement (`ndisc_notify`):
//! the card's action is rewritten in place and the connection goes on.
//!
//! Needs root, `/dev/net/tun` and iproute2 network namespaces (`#[ignore]`d;
//! `scripts/test.sh` runs them as root). Each socket operation has a
//! timeout: a broken path fails, it does not hang.

#[path = "daemon_harness.rs"]
mod harness;
#[path = "netns_harness.rs"]
mod netns;

use harness::*;
use lvsnic_fixtures::GATEWAY_MAC;
use netns::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The NAT VIP.
const VIP_NAT: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10);
/// The DR VIP.
const VIP_DR: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x11);
/// The director's own IPv6 address (`[director] ip6`): the NAT servers' router.
const DIRECTOR6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
/// The clients.
const CLIENT: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, 0x10);
const CLIENT2: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, 0x20);
const CLIENT2_MAC: &str = "02:00:00:00:ff:20";
/// Size of the large download.
const BIG: usize = 1 << 20;
/// What each client sends in step 2.
const UPLOAD: usize = 48 * 1024;

/// Real server `n`: 2001:db8:1::n.
fn rs6(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, n)
}

fn rs6_mac(n: u16) -> String {
    format!("02:00:00:00:20:{n:02x}")
}

/// The tests share namespaces' names by process id: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const NEEDS: &str = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)";

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn e2e_netns6_model() {
    run("model", &["--backend", "model"], false);
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn e2e_netns6_sim512() {
    run("sim512", &["--backend", "sim", "--width", "512"], false);
}

#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn e2e_netns6_learned() {
    run("learned", &["--backend", "model"], true);
}

/// DIRECTOR.toml: the director's addresses, the clients' gateway MAC and,
/// unless `learned`, `[neighbors]` entries for the IPv6 real servers; the
/// second client's entry in both (clients are not learned: they are
/// reached through `gateway_mac` or `[neighbors]`, as IPv4 ones).
fn director_toml(learned: bool) -> String {
    let mut s = format!(
        "[director]\nip = \"10.0.0.1\"\nip6 = \"{DIRECTOR6}\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"{GATEWAY_MAC}\"\n\n[neighbors]\n"
    );
    if !learned {
        for n in 1..=3 {
            s.push_str(&format!("\"{}\" = \"{}\"\n", rs6(n), rs6_mac(n)));
        }
        s.push_str(&format!("\"{CLIENT2}\" = \"{CLIENT2_MAC}\"\n"));
    }
    s
}

/// Deterministic contents of the large download.
fn blob(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect()
}

// ------------------------------------------------------------ exchange server

/// What the exchange server saw on one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    peer: SocketAddr,
    received: Vec<u8>,
}

/// A TCP server on `[::]:port` in a namespace: per connection it reads
/// everything until the client half-closes, records it with the peer,
/// and answers `"{id} {peer}\n"` and the bytes reversed, then closes.
struct Exchange {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Exchange {
    fn start(ns: &str, port: u16, id: &'static str) -> Exchange {
        let l = in_netns(ns, move || TcpListener::bind((Ipv6Addr::UNSPECIFIED, port)))
            .unwrap_or_else(|e| panic!("listen in {ns}: {e}"));
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (st, sn) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, peer)) => {
                        let sn = sn.clone();
                        std::thread::spawn(move || {
                            let _ = exchange_one(s, peer, id, &sn);
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
                    Err(_) => return,
                }
            }
        });
        Exchange { stop, thread: Some(thread), seen }
    }
}

fn exchange_one(mut s: TcpStream, peer: SocketAddr, id: &str, seen: &Mutex<Vec<Seen>>) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut received = Vec::new();
    s.read_to_end(&mut received)?;
    let mut reply = format!("{id} {peer}\n").into_bytes();
    reply.extend(received.iter().rev());
    seen.lock().unwrap().push(Seen { peer, received });
    s.write_all(&reply)
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One exchange from namespace `ns`: sends `data`, half-closes, reads the
/// answer; the client's own address and the peer it talked to with it.
fn exchange(ns: &str, to: SocketAddr, data: Vec<u8>) -> (SocketAddr, SocketAddr, Vec<u8>) {
    let mut s = connect(ns, to);
    let (local, peer) = (s.local_addr().unwrap(), s.peer_addr().unwrap());
    s.write_all(&data).unwrap_or_else(|e| panic!("send from {local}: {e}"));
    s.shutdown(Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap_or_else(|e| panic!("answer to {local}: {e} after {} bytes", answer.len()));
    (local, peer, answer)
}

/// `GET /metrics` of the daemon's endpoint `addr` in namespace `ns`: the body.
fn scrape(ns: &str, addr: SocketAddr) -> String {
    let mut s = connect(ns, addr);
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: lvsnic\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or_else(|| panic!("not HTTP: {out:?}"));
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    body.to_string()
}

/// The value of sample `key` (name and labels as written) in an exposition.
fn sample(text: &str, key: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
}

// ------------------------------------------------------------ the test

fn run(tag: &str, backend: &[&str], learned: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable() {
        panic!("e2e_netns6 ({tag}) cannot run here: {why} ({NEEDS})");
    }
    let t0 = Instant::now();
    let p = format!("lvsnic-e6-{}-{tag}", std::process::id());
    let mut nss = Namespaces::default();
    let Segment { hub, cl, rsns } = nss.segment(&p, 3);
    let cl2 = nss.add(format!("{p}-cl2"));
    for ns in rsns.iter().chain([&cl, &cl2]) {
        enable_ipv6(ns);
    }
    // The daemon sends no MLD reports for its VIPs' solicited-node groups:
    // a snooping bridge would stop flooding solicitations to it.
    must(&["ip", "-n", &hub, "link", "set", "br0", "type", "bridge", "mcast_snooping", "0"]);
    must(&["ip", "-n", &hub, "tuntap", "add", "mode", "tap", "name", "lvs0"]);
    must(&["ip", "-n", &hub, "link", "set", "lvs0", "master", "br0", "up"]);
    // Replies toward the first client go to gateway_mac: the client has it.
    leaf6(&hub, &cl, "vcl", &GATEWAY_MAC.to_string(), &format!("{CLIENT}/64"));
    leaf6(&hub, &cl2, "vcl2", CLIENT2_MAC, &format!("{CLIENT2}/64"));
    for ns in [&cl, &cl2] {
        for vip in [VIP_NAT, VIP_DR] {
            must(&["ip", "-n", ns, "-6", "route", "add", &format!("{vip}/128"), "dev", "eth0"]);
        }
    }
    for n in 1..=3u16 {
        leaf6(&hub, &rsns[n as usize - 1], &format!("vrs{n}"), &rs6_mac(n), &format!("{}/64", rs6(n)));
    }
    // NAT servers answer through the director.
    for ns in &rsns[..2] {
        must(&["ip", "-n", ns, "-6", "route", "add", &format!("{DIRECTOR6}/128"), "dev", "eth0"]);
        must(&["ip", "-n", ns, "-6", "route", "add", "default", "via", &DIRECTOR6.to_string(), "dev", "eth0"]);
    }
    // The DR server holds the VIP on lo and talks to the clients directly.
    must(&["ip", "-n", &rsns[2], "-6", "addr", "add", &format!("{VIP_DR}/128"), "dev", "lo", "nodad"]);
    must(&["ip", "-n", &rsns[2], "-6", "route", "add", "2001:db8:ff::/64", "dev", "eth0"]);

    let dir = tmpdir(&format!("e2e6-{tag}"));
    let mut args = backend.to_vec();
    args.extend(["--wire", "tap:lvs0", "--metrics", "127.0.0.1:0"]);
    if learned {
        // The director's own stack, on the real servers' subnet: its
        // kernel resolves them (its solicitations go out through the card).
        sysctl(&hub, &["net.ipv6.conf.default.disable_ipv6=0", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.default.router_solicitations=0"]);
        must(&["ip", "-n", &hub, "tuntap", "add", "mode", "tap", "name", "lvsh"]);
        must(&["ip", "-n", &hub, "link", "set", "lvsh", "address", "02:00:00:00:00:01", "up"]);
        must(&["ip", "-n", &hub, "-6", "addr", "add", "2001:db8:1::fe/64", "dev", "lvsh", "nodad"]);
        args.extend(["--host-tap", "lvsh"]);
    }
    let d = Daemon::start_in(&["ip", "netns", "exec", &hub], &dir, &director_toml(learned), &args);
    let log = std::fs::read_to_string(&d.log).unwrap();
    let metrics: SocketAddr = log
        .lines()
        .find_map(|l| l.strip_prefix("lvsnic daemon: metrics on http://")?.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in the daemon's log: {log}"))
        .parse()
        .unwrap();
    let vip80 = format!("[{VIP_NAT}]:80");
    let vipdr = format!("[{VIP_DR}]:80");
    let (rs1, rs2, rs3) = (format!("[{}]:80", rs6(1)), format!("[{}]:80", rs6(2)), format!("[{}]:80", rs6(3)));
    d.ok(&["-A", "-t", &vip80, "-s", "rr"]);
    d.ok(&["-a", "-t", &vip80, "-r", &rs1, "-m", "-w", "1"]);
    d.ok(&["-a", "-t", &vip80, "-r", &rs2, "-m", "-w", "1"]);
    d.ok(&["-A", "-t", &vipdr, "-s", "rr"]);
    d.ok(&["-a", "-t", &vipdr, "-r", &rs3, "-g", "-w", "1"]);
    let big = Arc::new(blob(BIG, 0x1234_5678));
    let any6 = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    let servers = [
        Server::start_on(&rsns[0], any6, 80, "rs1", big.clone()),
        Server::start_on(&rsns[1], any6, 80, "rs2", big.clone()),
        Server::start_on(&rsns[2], any6, 80, "rs3", big.clone()),
    ];
    let mut first = None;
    if learned {
        // Learned from the kernel: each real server's entry, with its MAC.
        for n in 1..=3u16 {
            let key = rs6(n).to_string();
            let ok = wait_for(Duration::from_secs(10), || d.status()["neighbors"]["entries"][&key]["mac"] == rs6_mac(n).as_str());
            let en = d.status()["neighbors"]["entries"][&key].clone();
            assert!(ok, "{key} not learned: {en}");
            assert_eq!((en["source"].as_str(), en["next_hop"].as_str()), (Some("kernel"), Some(key.as_str())), "{en}");
        }
        first = Some(t0.elapsed());
    }
    let setup = t0.elapsed();
    let to80: SocketAddr = (VIP_NAT, 80).into();
    let todr: SocketAddr = (VIP_DR, 80).into();

    // 1. rr over real kernel connections: newest server first, alternating.
    let mut served = Vec::new();
    for i in 0..10 {
        let (port, server, body) = http_get(&cl, to80, "/");
        let want = if i % 2 == 0 { "rs2" } else { "rs1" };
        assert_eq!((server.as_str(), String::from_utf8_lossy(&body).as_ref()), (want, format!("{want}\n").as_str()), "request {i}");
        served.push((port, want));
    }
    let list = d.run(&["-L", "-n"]).stdout;
    for a in [&rs1, &rs2] {
        let row = format!("  -> {a:<28} {:<7} {:<6} {:<10} {:<10}\n", "Masq", 1, 0, 5);
        assert!(list.contains(&row), "{a}: 0 active, 5 inactive\n{list}");
    }
    let st = stats_of(&d.run(&["-L", "-n", "--stats"]).stdout);
    assert_eq!(st[&format!("TCP {vip80}")][0], 10, "{st:?}");
    for a in [&rs1, &rs2] {
        let [n_conns, inpkts, outpkts, inbytes, outbytes] = st[a.as_str()];
        assert_eq!(n_conns, 5, "{a}: {st:?}");
        assert!(inpkts >= 20 && outpkts >= 15 && inbytes > 0 && outbytes > 0, "{a}: {st:?}");
    }
    let served: Vec<(String, String)> =
        served.iter().map(|(port, who)| (format!("[{CLIENT}]:{port}"), if *who == "rs1" { rs1.clone() } else { rs2.clone() })).collect();
    assert_all_time_wait(&d, &vip80, &served);

    // 2. Several clients at once, data both ways.
    drop(servers);
    let ex = [Exchange::start(&rsns[0], 80, "rs1"), Exchange::start(&rsns[1], 80, "rs2")];
    let clients: Vec<String> = if learned { vec![cl.clone()] } else { vec![cl.clone(), cl2.clone()] };
    let mut threads = Vec::new();
    for (c, ns) in clients.iter().enumerate() {
        for k in 0..4u32 {
            let ns = ns.clone();
            let data = blob(UPLOAD, 0x100 * (c as u32 + 1) + k);
            threads.push(std::thread::spawn(move || {
                let (local, peer, answer) = exchange(&ns, to80, data.clone());
                (local, peer, answer, data)
            }));
        }
    }
    let results: Vec<_> = threads.into_iter().map(|t| t.join().expect("client thread")).collect();
    let seen: Vec<(&'static str, Seen)> =
        ["rs1", "rs2"].iter().zip(&ex).flat_map(|(id, e)| e.seen.lock().unwrap().iter().map(|s| (*id, s.clone())).collect::<Vec<_>>()).collect();
    assert_eq!(seen.len(), results.len(), "every connection reached a server once: {:?}", seen.iter().map(|s| s.1.peer).collect::<Vec<_>>());
    for (local, peer, answer, data) in &results {
        assert_eq!(*peer, to80, "the client talks to the VIP");
        let (id, s) = seen.iter().find(|(_, s)| s.peer == *local).unwrap_or_else(|| panic!("no server saw {local} (NAT keeps the client's address)"));
        assert!(s.received == *data, "{local}: the server received {} bytes, {} sent, equal: {}", s.received.len(), data.len(), s.received == *data);
        let mut want = format!("{id} {local}\n").into_bytes();
        want.extend(data.iter().rev());
        assert!(*answer == want, "{local}: answer of {} bytes, want {} ({id}), head {:?}", answer.len(), want.len(), String::from_utf8_lossy(&answer[..answer.len().min(60)]));
    }
    let per_rs = |id: &str| seen.iter().filter(|(i, _)| *i == id).count();
    assert_eq!((per_rs("rs1"), per_rs("rs2")), (results.len() / 2, results.len() / 2), "rr shares them");
    drop(ex);
    let _servers = [
        Server::start_on(&rsns[0], any6, 80, "rs1", big.clone()),
        Server::start_on(&rsns[1], any6, 80, "rs2", big.clone()),
        Server::start_on(&rsns[2], any6, 80, "rs3", big.clone()),
    ];

    // 3. On the card: long-lived connections, and a 1 MiB download.
    let offload = |d: &Daemon| d.status()["offload"].clone();
    let base = offload(&d);
    let mut long = [Echo::open(&cl, to80), Echo::open(&cl, to80)];
    for (i, e) in long.iter_mut().enumerate() {
        let r = e.say(&format!("hello {i}")).unwrap();
        assert!(r == format!("rs1 hello {i}") || r == format!("rs2 hello {i}"), "{r}");
    }
    let on_card = wait_for(Duration::from_secs(5), || {
        let o = offload(&d);
        o["connections"].as_u64() >= base["connections"].as_u64().map(|c| c + 2)
    });
    let o = offload(&d);
    assert!(on_card, "the two IPv6 NAT connections offloaded: before {base}, now {o}");
    let entries = o["flow_entries"].as_u64().unwrap() - base["flow_entries"].as_u64().unwrap();
    let conns_now = o["connections"].as_u64().unwrap() - base["connections"].as_u64().unwrap();
    assert_eq!(entries, 4 * conns_now, "an IPv6 NAT connection takes two flows of two entries: before {base}, now {o}");
    // The metrics say the same.
    let text = scrape(&hub, metrics);
    let o = offload(&d);
    assert_eq!(sample(&text, "lvsnic_offloaded_connections"), o["connections"].as_u64().map(|c| c as f64), "{o}\n{text}");
    assert_eq!(sample(&text, "lvsnic_flow_table_used_entries"), o["flow_entries"].as_u64().map(|c| c as f64), "{o}\n{text}");
    let rs_conns = format!("lvsnic_real_server_connections_total{{proto=\"TCP\",vip=\"{VIP_NAT}\",port=\"80\",rip=\"{}\",rport=\"80\"}}", rs6(1));
    assert!(sample(&text, &rs_conns).is_some_and(|n| n >= 5.0), "{rs_conns} in\n{text}");
    let before = d.status();
    let t_big = Instant::now();
    let (_, _, body) = http_get(&cl, to80, "/big");
    let big_time = t_big.elapsed();
    assert!(body.len() == BIG && body == *big, "1 MiB intact ({} bytes received)", body.len());
    let after = d.status();
    let frames = counter(&after, &["exception_loop", "frames"]) - counter(&before, &["exception_loop", "frames"]);
    let hw = counter(&after, &["exception_loop", "in_hardware"]) - counter(&before, &["exception_loop", "in_hardware"]);
    assert!(frames >= (BIG / 1440) as u64, "frames of the download: {frames}");
    assert!(hw * 10 >= frames * 9, "{hw} of {frames} frames forwarded in hardware\n{after}");
    for (i, e) in long.iter_mut().enumerate() {
        let r = e.say(&format!("still {i}")).unwrap();
        assert!(r.ends_with(&format!(" still {i}")), "{r}");
    }
    drop(long);

    // 4. DR: rs3 answers the clients itself.
    let base = offload(&d);
    let mut dr = Echo::open(&cl, todr);
    assert_eq!(dr.say("dr").unwrap(), "rs3 dr");
    for i in 0..3 {
        let (_, server, body) = http_get(&cl, todr, "/");
        assert_eq!((server.as_str(), String::from_utf8_lossy(&body).as_ref()), ("rs3", "rs3\n"), "DR request {i}");
    }
    assert!(wait_for(Duration::from_secs(5), || offload(&d)["connections"].as_u64() > base["connections"].as_u64()), "the DR connection offloaded: {}", offload(&d));
    assert_eq!(dr.say("dr again").unwrap(), "rs3 dr again");
    let st = stats_of(&d.run(&["-L", "-n", "--stats"]).stdout);
    let [n_conns, inpkts, outpkts, ..] = st[&format!("TCP {vipdr}")];
    assert_eq!((n_conns, outpkts), (4, 0), "DR: 4 connections, no reply through the director: {st:?}");
    assert!(inpkts >= 14, "{st:?}");
    let c = conns(&d);
    assert_eq!(c.values().filter(|(_, v, dst)| *v == vipdr && *dst == rs3).count(), 4, "{c:#?}");
    drop(dr);

    // 5. Learned: a real server's NIC changes; Linux announces it with an
    // unsolicited Neighbour Advertisement (`ndisc_notify`), which the
    // director's own stack takes in: the established connection goes on,
    // the card's action has the new MAC, the connection stayed on the card.
    let mut change = None;
    if learned {
        let mut e = Echo::open(&cl, to80);
        let who = e.say("before").unwrap();
        let n: u16 = if who.starts_with("rs1 ") { 1 } else { 2 };
        let (ns, key, new_mac) = (&rsns[n as usize - 1], rs6(n).to_string(), format!("02:00:00:00:77:{n:02x}"));
        let on_card = offload(&d)["connections"].clone();
        sysctl(ns, &["net.ipv6.conf.eth0.ndisc_notify=1"]);
        let t1 = Instant::now();
        must(&["ip", "-n", ns, "link", "set", "dev", "eth0", "address", &new_mac]);
        let ok = wait_for(Duration::from_secs(10), || d.status()["neighbors"]["entries"][&key]["mac"] == new_mac.as_str());
        assert!(ok, "new MAC of {key} not learned: {}", d.status()["neighbors"]["entries"][&key]);
        change = Some(t1.elapsed());
        assert_eq!(e.say("after").unwrap(), format!("rs{n} after"), "the established connection goes on");
        let st = d.status();
        assert_eq!(st["neighbors"]["entries"][&key]["card_macs"], serde_json::json!([new_mac]), "{}", st["neighbors"]);
        assert_eq!(st["offload"]["connections"], on_card, "not taken off the card: {}", st["offload"]);
        assert_eq!(st["neighbors"]["changed"], 1, "{}", st["neighbors"]);
    }

    let st = d.status();
    let drops = st["director"]["dropped"].as_object().expect("director.dropped");
    assert!(drops.is_empty(), "unexpected drops: {}", st["director"]["dropped"]);
    if learned {
        let n = &st["neighbors"];
        assert_eq!((n["unresolved_drops"].as_u64(), n["failed"].as_u64()), (Some(0), Some(0)), "{n}");
        for k in 1..=3 {
            assert_eq!(n["entries"][rs6(k).to_string()]["card_macs"].as_array().map(|a| a.len() <= 1), Some(true), "{n}");
        }
    }
    eprintln!(
        "MEASURE e2e_netns6 ({tag}): setup {setup:.1?} (real servers learned after {first:.1?}, a changed MAC after {change:.1?}), 1 MiB in {big_time:.2?}, total {:.1?}; frames {} ({} in hardware), to the host {}",
        t0.elapsed(),
        counter(&st, &["exception_loop", "frames"]),
        counter(&st, &["exception_loop", "in_hardware"]),
        st["director"]["to_host"],
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
