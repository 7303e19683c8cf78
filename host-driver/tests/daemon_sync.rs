//! Two `lvsnic daemon`s (model backend) syncing connections over UDP
//! multicast on the loopback interface: the master's capture creates
//! connections, the backup learns them from the kernel-format sync messages
//! and lists them with `-L -n -c`; `-L --daemon` as ipvsadm 1.31 prints it;
//! a third daemon with another syncid is ignored and counted; stopping.
//! Needs root (the backup binds its socket to the interface,
//! `SO_BINDTODEVICE`, as the kernel's does): `#[ignore]`d in a plain
//! `cargo test`; `scripts/test.sh` runs it as root and lists it as not run
//! otherwise.
// `unsafe` allowed in this test (the workspace denies it): geteuid(2) through libc.
#![allow(unsafe_code)]

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::*;
use lvsnic_model::pcap::{self, PcapRecord, Resolution};
use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;

/// libipvs' line for any EINVAL (`ipvs_strerror`).
const EINVAL_TEXT: &str = "Invalid operation.  Possibly wrong module version, address not unicast, ...\n";

fn client(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(198, 51, 100, n)
}

/// Clients `ns` each open a connection to VIP:80 (SYN, ACK, ACK: the
/// third packet reaches sync_threshold).
fn capture(path: &Path, ns: &[u8]) {
    let mut recs = Vec::new();
    let mut t = 1_700_000_000_000 * MS;
    for &n in ns {
        for f in [TCP_SYN, TCP_ACK, TCP_ACK] {
            let data = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(n), VIP), 40000 + n as u16, 80, f, 1, 1, b"");
            recs.push(PcapRecord { ts_ns: t, orig_len: data.len() as u32, data });
            t += MS;
        }
    }
    pcap::write_file(path, Resolution::Nano, recs.into_iter()).unwrap();
}

fn start(name: &str, ns: Option<&[u8]>) -> Daemon {
    let dir = tmpdir(name);
    let rules = write(&dir, "rules", MIXED_RULES);
    let mut args = vec!["--rules".to_string(), rules.display().to_string()];
    if let Some(ns) = ns {
        let input = dir.join("in.pcap");
        capture(&input, ns);
        args.push("--wire".into());
        args.push(format!("pcap:{},{}", input.display(), dir.join("out.pcap").display()));
        args.extend(["--pace".into(), "step".into()]);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    Daemon::start(&dir, &director_toml(), &a)
}

fn run_wire(d: &Daemon) {
    let r = d.run(&["wire", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
}

/// `-L -n -c` lines without the expire column (the two directors' clocks differ).
fn conns_without_expiry(text: &str) -> Vec<String> {
    text.lines().skip(2).map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        format!("{} {} {} {} {}", w[0], w[2], w[3], w[4], w[5])
    }).collect()
}

#[test]
#[ignore = "needs root (SO_BINDTODEVICE on lo; scripts/test.sh runs it as root)"]
fn a_backup_daemon_learns_the_masters_connections() {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(root, "a_backup_daemon_learns_the_masters_connections cannot run here: needs root");
    let port = (20000 + std::process::id() % 20000).to_string();
    let master = start("sync-master", Some(&[1, 2, 3]));
    let backup = start("sync-backup", None);
    let other = start("sync-other", Some(&[4]));

    master.ok(&["--start-daemon", "master", "--mcast-interface", "lo", "--syncid", "7", "--mcast-port", &port]);
    backup.ok(&["--start-daemon", "backup", "--mcast-interface", "lo", "--syncid", "7", "--mcast-port", &port]);
    other.ok(&["--start-daemon", "master", "--mcast-interface", "lo", "--syncid", "9", "--mcast-port", &port]);

    // ipvsadm 1.31 list_daemon(): master first; maxlen as the kernel sets it
    // (master: 1500 - 28; backup: lo's MTU 65536 clamped to 65535, - 28).
    let r = master.run(&["-L", "--daemon"]);
    assert_eq!(r.stdout, format!("master sync daemon (mcast=lo, syncid=7, maxlen=1472, group=224.0.0.81, port={port}, ttl=1)\n"));
    // The kernel's own line for a master on lo with syncid 7 and the
    // default port (tests/fixtures/kernel-sync, Linux 6.1, ipvsadm 1.31).
    let kernel = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/kernel-sync/kernel-daemon.txt")).unwrap();
    assert_eq!(r.stdout.replace(&format!("port={port}"), "port=8848"), kernel);
    let r = backup.run(&["-L", "--daemon"]);
    assert_eq!(r.stdout, format!("backup sync daemon (mcast=lo, syncid=7, maxlen=65507, group=224.0.0.81, port={port}, ttl=1)\n"));
    let kernel = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/kernel-sync/kernel-backup-daemon.txt")).unwrap();
    assert_eq!(r.stdout.replace(&format!("port={port}"), "port=8848"), kernel);
    let r = master.run(&["--start-daemon", "master", "--mcast-interface", "lo"]);
    assert_eq!((r.code, r.stderr.as_str()), (255, "Daemon has already run\n"));
    let r = master.run(&["--start-daemon", "backup", "--mcast-interface", "nosuchif0"]);
    assert_eq!((r.code, r.stderr.as_str()), (255, "No such device\n"));

    run_wire(&master);
    run_wire(&other);
    let want = master.run(&["-L", "-n", "-c"]).stdout;
    assert_eq!(want.lines().count(), 2 + 3, "{want}");

    // The master flushes its buffer within 2 s (IPVS_SYNC_FLUSH_TIME).
    let t0 = Instant::now();
    let got = loop {
        let got = backup.run(&["-L", "-n", "-c"]).stdout;
        if got.lines().count() >= 2 + 3 || t0.elapsed() > Duration::from_secs(10) {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // The backup's clock is real time: an entry installed a moment before
    // the listing shows 15:00 or 14:59 (the kernel truncates too).
    let fresh = |l: &str| if ["14:59", "14:58"].contains(&&l[4..9]) { l.replacen(&l[4..9], "15:00", 1) } else { l.to_string() };
    assert_eq!(
        got.lines().map(fresh).map(|l| l + "\n").collect::<String>(),
        "IPVS connection entries\n\
         pro expire state       source             virtual            destination\n"
            .to_string()
            + &want.lines().skip(2).map(|l| l.replacen(&l[4..9], "15:00", 1) + "\n").collect::<String>(),
        "master:\n{want}"
    );
    assert_eq!(conns_without_expiry(&got), conns_without_expiry(&want));

    // Wait for the other master's message, then check the counters.
    let t0 = Instant::now();
    let st = loop {
        let st = backup.status();
        if st["sync"]["backup"]["dropped"]["foreign_syncid"].as_u64() == Some(1) || t0.elapsed() > Duration::from_secs(10) {
            break st;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Installed through the offload path: the backup's card has their flows.
    assert_eq!(st["offload"]["connections"], 3, "{st}");
    let b = &st["sync"]["backup"];
    assert_eq!(b["dropped"]["foreign_syncid"], 1, "{st}");
    assert_eq!((b["created"].as_u64(), b["messages"].as_u64()), (Some(3), Some(2)), "{st}");
    let ms = master.status();
    assert_eq!(ms["sync"]["master"]["conns_synced"], 3, "{ms}");
    assert_eq!(ms["sync"]["master"]["messages"], 1, "{ms}");

    // Stopping.
    backup.ok(&["--stop-daemon", "backup"]);
    assert_eq!(backup.run(&["-L", "--daemon"]).stdout, "");
    let r = backup.run(&["--stop-daemon", "backup"]);
    assert_eq!((r.code, r.stderr.as_str()), (255, "No daemon is running\n"));
    master.ok(&["--stop-daemon", "master"]);
}

/// The kernel's rule (`ip_vs_sync_conn_needed`, TCP in ESTABLISHED without a
/// state change, no refresh period): the packet counts `pkts` that make it
/// send the connection, for `[sysctl] sync_threshold = "T P"`.
fn kernel_sends(t: u32, p: u32, pkts: std::ops::RangeInclusive<u32>) -> Vec<u32> {
    pkts.filter(|&n| if p > 0 { n % p == t } else { n == t }).collect()
}

/// Services whose real server is the director itself (LOCALNODE): their
/// connections never go to the card, so the host sees and counts every
/// packet, as the kernel does; 10.0.0.105 is persistent (templates).
const LOCAL_RULES: &str = "\
-A -t 10.0.0.104:80 -s rr
-a -t 10.0.0.104:80 -r 10.0.0.1:80 -m -w 1
-A -t 10.0.0.105:80 -s rr -p 60
-a -t 10.0.0.105:80 -r 10.0.0.1:80 -m -w 1
";

/// One connection from client 1 to `vip:80`: SYN, ACK (ESTABLISHED), then
/// 20 more ACKs: `in_pkts` 1 ..= 22. (A segment without ACK would not do:
/// the kernel's `set_tcp_state` moves a connection to CLOSE on a segment
/// with none of SYN, FIN, ACK, RST.)
fn counted_capture(path: &Path, vip: Ipv4Addr) {
    let mut recs = Vec::new();
    let mut t = 1_700_000_000_000 * MS;
    for f in [TCP_SYN].into_iter().chain(std::iter::repeat(TCP_ACK).take(21)) {
        let data = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(1), vip), 40001, 80, f, 1, 1, b"");
        recs.push(PcapRecord { ts_ns: t, orig_len: data.len() as u32, data });
        t += MS;
    }
    pcap::write_file(path, Resolution::Nano, recs.into_iter()).unwrap();
}

/// A daemon whose DIRECTOR.toml has `sysctl` in `[sysctl]`, its wire a
/// capture of one connection to `vip:80`, with a master sending to `port`
/// on `lo`.
fn sysctl_master(name: &str, sysctl: &str, vip: Ipv4Addr, port: u16) -> Daemon {
    let dir = tmpdir(name);
    let rules = write(&dir, "rules", LOCAL_RULES);
    let input = dir.join("in.pcap");
    counted_capture(&input, vip);
    let wire = format!("pcap:{},{}", input.display(), dir.join("out.pcap").display());
    let toml = format!("{}\n[sysctl]\n{sysctl}\n", director_toml());
    let d = Daemon::start(&dir, &toml, &["--rules", rules.to_str().unwrap(), "--wire", &wire, "--pace", "step"]);
    d.ok(&["--start-daemon", "master", "--mcast-interface", "lo", "--syncid", "3", "--mcast-port", &port.to_string()]);
    d
}

/// A socket on the sync group and `port`, joined on `lo` (no root needed).
fn listener(port: u16) -> std::net::UdpSocket {
    let s = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port)).unwrap();
    s.join_multicast_v4(&Ipv4Addr::new(224, 0, 0, 81), &Ipv4Addr::LOCALHOST).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    s
}

/// The entries (cport, template?, state) received on `s` until as many as
/// the master counted have come (or 10 s).
fn received(s: &std::net::UdpSocket, d: &Daemon) -> Vec<(u16, bool, u16)> {
    sync_received(s, d).iter().map(|c| (c.cport, c.is_template(), c.state)).collect()
}

/// `[sysctl] sync_threshold` and `sync_persist_mode` of DIRECTOR.toml reach
/// the daemon's master: the packets of a connection that make it send the
/// connection are those the kernel's rule picks for those values, and
/// persist mode sends the persistence template but never the connection
/// under it. (The master's socket needs no privilege; the test receives
/// on `lo`.)
#[test]
fn sync_sysctls_from_director_toml_change_what_the_master_sends() {
    let base = 20000 + (std::process::id() % 10000) as u16 * 4;
    let cases: [(&str, u32, u32); 4] =
        [("", 3, 50), ("sync_threshold = \"2 5\"", 2, 5), ("sync_threshold = \"4 6\"", 4, 6), ("sync_threshold = \"2 0\"", 2, 0)];
    let vip = Ipv4Addr::new(10, 0, 0, 104);
    let mut runs = Vec::new();
    for (i, (sysctl, t, p)) in cases.iter().enumerate() {
        let port = base + i as u16;
        let l = listener(port);
        let d = sysctl_master(&format!("sync-sysctl-{i}"), sysctl, vip, port);
        run_wire(&d);
        runs.push((l, d, *t, *p, *sysctl));
    }
    let mut counts = Vec::new();
    for (l, d, t, p, sysctl) in &runs {
        let got = received(l, d);
        // ESTABLISHED from the ACK (pkts 2) to the last packet (22).
        let kernel = kernel_sends(*t, *p, 2..=22);
        assert_eq!(got, vec![(40001, false, 1); kernel.len()], "[sysctl] {sysctl:?}: the kernel sends at pkts {kernel:?}");
        counts.push(got.len());
    }
    // Not the defaults' answer: the values were applied, not only parsed.
    assert_eq!(counts, [1, 5, 4, 1]);

    // 10.0.0.105:80 is persistent: the template is sent on every packet
    // (templates pass the period rule), the connection on the third; with
    // sync_persist_mode the connection never.
    let vip = Ipv4Addr::new(10, 0, 0, 105);
    let mut seen = Vec::new();
    for (i, sysctl) in ["sync_persist_mode = 0", "sync_persist_mode = 1"].iter().enumerate() {
        let port = base + 4 + i as u16;
        let l = listener(port);
        let d = sysctl_master(&format!("sync-persist-{i}"), sysctl, vip, port);
        run_wire(&d);
        seen.push(received(&l, &d));
    }
    let conns = |v: &[(u16, bool, u16)]| v.iter().filter(|e| !e.1).count();
    let templates = |v: &[(u16, bool, u16)]| v.iter().filter(|e| e.1).count();
    assert_eq!((conns(&seen[0]), templates(&seen[0])), (1, 22), "persist mode 0: {:?}", seen[0]);
    assert_eq!((conns(&seen[1]), templates(&seen[1])), (0, 22), "persist mode 1: {:?}", seen[1]);
}

/// A bad `[sysctl] sync_*` value stops the daemon at start with the key's name.
#[test]
fn a_bad_sync_sysctl_is_refused_at_start() {
    let dir = tmpdir("sync-sysctl-bad");
    let director = write(&dir, "director.toml", &format!("{}\n[sysctl]\nsync_threshold = \"50 50\"\n", director_toml()));
    let o = std::process::Command::new(LVSNIC)
        .args(["daemon", "--backend", "model", "--director", director.to_str().unwrap(), "--socket", dir.join("s.sock").to_str().unwrap()])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("[sysctl] sync_threshold: \"50 50\": the threshold must be less than the period (or the period 0)"),
        "{err}"
    );
}


/// A daemon over IPV6_RULES; with `play`, a capture of IPv6 clients 1 and 2
/// to the NAT service and 3 to the persistent one (SYN, ACK, ACK each).
fn start6(name: &str, play: bool) -> Daemon {
    let dir = tmpdir(name);
    let rules = write(&dir, "rules", IPV6_RULES);
    let mut args = vec!["--rules".to_string(), rules.display().to_string()];
    if play {
        let mut recs = Vec::new();
        let mut t = 1_700_000_000_000 * MS;
        for (n, vip, port) in [(1u8, "2001:db8::10", 80u16), (2, "2001:db8::10", 80), (3, "2001:db8::20", 443)] {
            let client: std::net::Ipv6Addr = format!("2001:db8:cafe:{n}::7").parse().unwrap();
            for f in [TCP_SYN, TCP_ACK, TCP_ACK] {
                let data = tcp6(GATEWAY_MAC, DIRECTOR_MAC, (client, vip.parse().unwrap()), 40000 + n as u16, port, f, 1, 1, b"");
                recs.push(PcapRecord { ts_ns: t, orig_len: data.len() as u32, data });
                t += MS;
            }
        }
        let input = dir.join("in.pcap");
        pcap::write_file(&input, Resolution::Nano, recs.into_iter()).unwrap();
        args.push("--wire".into());
        args.push(format!("pcap:{},{}", input.display(), dir.join("out.pcap").display()));
        args.extend(["--pace".into(), "step".into()]);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    Daemon::start(&dir, &director_toml(), &a)
}

#[test]
#[ignore = "needs root (SO_BINDTODEVICE on lo; scripts/test.sh runs it as root)"]
fn ipv6_connections_are_synced_and_cross_family_servers_refused_while_syncing() {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(root, "ipv6_connections_are_synced_and_cross_family_servers_refused_while_syncing cannot run here: needs root");
    let port = (20000 + (std::process::id() + 7) % 20000).to_string();
    let master = start6("sync6-master", true);
    let backup = start6("sync6-backup", false);
    master.ok(&["--start-daemon", "master", "--mcast-interface", "lo", "--syncid", "6", "--mcast-port", &port]);
    backup.ok(&["--start-daemon", "backup", "--mcast-interface", "lo", "--syncid", "6", "--mcast-port", &port]);
    run_wire(&master);
    let want = master.run(&["-L", "-n", "-c"]).stdout;
    // Three connections and the persistent one's template.
    assert_eq!(want.lines().count(), 2 + 4, "{want}");
    let t0 = Instant::now();
    let got = loop {
        let got = backup.run(&["-L", "-n", "-c"]).stdout;
        if got.lines().count() >= 2 + 4 || t0.elapsed() > Duration::from_secs(10) {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut g = conns_without_expiry(&got);
    let mut w = conns_without_expiry(&want);
    g.sort();
    w.sort();
    assert_eq!(g, w, "master:\n{want}\nbackup:\n{got}");
    assert!(got.contains("[2001:db8:cafe:1::7]:40001"), "{got}");
    let st = backup.status();
    assert_eq!(st["sync"]["backup"]["unbound"], 0, "{st}");

    // A real server of the other family (a tunnel) while a daemon runs:
    // EINVAL, as ip_vs_genl_set_cmd says it (and ipvsadm prints it).
    master.ok(&["-A", "-t", "10.0.0.150:80", "-s", "rr"]);
    let r = master.run(&["-a", "-t", "10.0.0.150:80", "-r", "[2001:db8:1::9]:80", "-i"]);
    assert_eq!((r.code, r.stderr.as_str()), (255, EINVAL_TEXT), "{r:?}");
    master.ok(&["--stop-daemon", "master"]);
    master.ok(&["-a", "-t", "10.0.0.150:80", "-r", "[2001:db8:1::9]:80", "-i"]);
    // ...and no daemon while one exists (ip_vs_genl_new_daemon).
    let r = master.run(&["--start-daemon", "master", "--mcast-interface", "lo", "--mcast-port", &port]);
    assert_eq!((r.code, r.stderr.as_str()), (255, EINVAL_TEXT), "{r:?}");
    master.ok(&["-d", "-t", "10.0.0.150:80", "-r", "[2001:db8:1::9]:80"]);
    master.ok(&["--start-daemon", "master", "--mcast-interface", "lo", "--mcast-port", &port]);
}

/// A veth pair in this namespace for a test of its own (IPv6 multicast does
/// not leave `lo`, which has no multicast route): DAD off, so the
/// link-local source addresses are usable at once; deleted on drop.
struct VethPair(String);

impl VethPair {
    fn new(tag: &str) -> VethPair {
        let a = format!("{tag}{}a", std::process::id() % 10000);
        let sh = |c: &str| {
            let ok = std::process::Command::new("sh").arg("-c").arg(c).status().map(|s| s.success()).unwrap_or(false);
            assert!(ok, "{c}");
        };
        sh(&format!("ip link add {a} type veth peer name {a}b"));
        for i in [a.clone(), format!("{a}b")] {
            sh(&format!("sysctl -qw net.ipv6.conf.{i}.accept_dad=0 && ip link set {i} up"));
        }
        let p = VethPair(a);
        // The link-local addresses appear when the links come up.
        let t0 = Instant::now();
        while !p.has_link_local() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        p
    }
    fn has_link_local(&self) -> bool {
        let out = std::process::Command::new("ip").args(["-6", "addr", "show", "dev", &self.0]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).contains("fe80::")
    }
    fn a(&self) -> &str {
        &self.0
    }
    fn b(&self) -> String {
        format!("{}b", self.0)
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip").args(["link", "del", &self.0]).status();
    }
}

#[test]
#[ignore = "needs root (a veth pair, SO_BINDTODEVICE; scripts/test.sh runs it as root)"]
fn connections_are_synced_over_an_ipv6_multicast_group() {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(root, "connections_are_synced_over_an_ipv6_multicast_group cannot run here: needs root");
    let veth = VethPair::new("sy6");
    let port = (20000 + (std::process::id() + 13) % 20000).to_string();
    let master = start6("sync6g-master", true);
    let backup = start6("sync6g-backup", false);
    let group = ["--mcast-group", "ff02::81", "--mcast-port", &port];
    master.ok(&[&["--start-daemon", "master", "--mcast-interface", veth.a(), "--syncid", "6"][..], &group].concat());
    let b = veth.b();
    backup.ok(&[&["--start-daemon", "backup", "--mcast-interface", &b, "--syncid", "6"][..], &group].concat());
    // ipvsadm's list_daemon with an IPv6 group; maxlen as start_sync_thread
    // sets it for AF_INET6: the MTU less the IPv6 and UDP headers (48).
    let r = master.run(&["-L", "--daemon"]);
    assert_eq!(r.stdout, format!("master sync daemon (mcast={}, syncid=6, maxlen=1452, group=ff02::81, port={port}, ttl=1)\n", veth.a()));
    let r = backup.run(&["-L", "--daemon"]);
    assert_eq!(r.stdout, format!("backup sync daemon (mcast={b}, syncid=6, maxlen=1452, group=ff02::81, port={port}, ttl=1)\n"));
    run_wire(&master);
    let want = master.run(&["-L", "-n", "-c"]).stdout;
    assert_eq!(want.lines().count(), 2 + 4, "{want}");
    let t0 = Instant::now();
    let got = loop {
        let got = backup.run(&["-L", "-n", "-c"]).stdout;
        if got.lines().count() >= 2 + 4 || t0.elapsed() > Duration::from_secs(10) {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut g = conns_without_expiry(&got);
    let mut w = conns_without_expiry(&want);
    g.sort();
    w.sort();
    assert_eq!(g, w, "master:\n{want}\nbackup:\n{got}");
    let st = backup.status();
    assert_eq!(st["sync"]["backup"]["messages"], 1, "{st}");
    backup.ok(&["--stop-daemon", "backup"]);
    master.ok(&["--stop-daemon", "master"]);
}
