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
