//! `lvsnic daemon --backend etherbone` against an emulated board
//! (`device::board_emu`, in this process): the daemon opens the board over
//! Etherbone, loads its rules into the core, takes exceptions as datagrams
//! and injects the director's frames; what leaves the board's data port is
//! what the `model` backend transmits for the same frames.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic::device::board_emu::{BoardEmulator, EMU_GLUE_BASE};
use lvsnic::device::model::ModelDevice;
use lvsnic::device::rings::RingConfig;
use lvsnic::slowpath::SlowPath;
use lvsnic_fixtures::*;
use lvsnic_model::director::Director;
use lvsnic_model::hw::regs::{CNT_BASE, CNT_FWD};
use lvsnic_model::hw::{Csr, HwParams};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const PARAMS: HwParams = HwParams { data_width: 64, flow_buckets_log2: 10, action_log2: 8, vip_count: 16, ipv6: true };

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

#[test]
fn daemon_over_etherbone_forwards_like_the_model_backend() {
    let (emu, host) = BoardEmulator::start_on_loopback(PARAMS).unwrap();
    let dir = tmpdir("etherbone");
    let rules_path = write(&dir, "rules", MIXED_RULES);
    let device = emu.etherbone_addr().ip().to_string();
    let (host_s, glue) = (host.to_string(), format!("{EMU_GLUE_BASE:#x}"));
    let d = Daemon::start(
        &dir,
        &director_toml(),
        &["--backend", "etherbone", "--device", &device, "--bind", &host_s, "--glue", &glue, "--rules", rules_path.to_str().unwrap()],
    );
    // The daemon programmed and enabled the core over Etherbone (its last
    // writes go out at the exception loop's first poll).
    let t = Instant::now();
    while emu.with_core(|c| c.read32(0x010)) & 1 == 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(emu.with_core(|c| c.read32(0x010)) & 1, 1, "CTRL.enable");
    assert_eq!(emu.with_core(|c| c.read32(0x01C)), u32::from(DIRECTOR_IP));

    // Two connections (DR on 443, NAT on 80): SYN, ACK, data, data.
    let conn = |n: u8, dport: u16| {
        let c = Ipv4Addr::new(172, 16, 1, n);
        let p = move |flags, seq, data: &[u8]| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 41000 + n as u16, dport, flags, seq, 1, data);
        vec![p(TCP_SYN, 1, b""), p(TCP_ACK, 2, b""), p(TCP_ACK, 2, b"hello"), p(TCP_ACK, 7, b"world")]
    };
    let frames: Vec<Vec<u8>> = conn(1, 443).into_iter().chain(conn(2, 80)).collect();

    let t0 = now_ns();
    let rules = parse_rules(MIXED_RULES).unwrap();
    let mut reference =
        SlowPath::new(Director::new(config(""), &rules, t0).unwrap(), ModelDevice::model(PARAMS, RingConfig::default()).unwrap(), PARAMS)
            .unwrap();
    for (i, f) in frames.iter().enumerate() {
        let ts = t0 + 1000 * i as u64;
        let want = reference.frame(ts, f).unwrap().tx;
        emu.deliver(f, ts, i as u32);
        let mut got = Vec::new();
        let start = Instant::now();
        while got.len() < want.len() && start.elapsed() < Duration::from_secs(10) {
            got.extend(emu.take_transmitted().into_iter().map(|t| t.data));
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(20));
        got.extend(emu.take_transmitted().into_iter().map(|t| t.data));
        assert_eq!(got, want, "frame {i}: {}", std::fs::read_to_string(&d.log).unwrap_or_default());
    }
    // Established connections were forwarded by the core, not the host.
    let fwd = emu.with_core(|c| {
        let lo = c.read32(CNT_BASE + 8 * CNT_FWD);
        let hi = c.read32(CNT_BASE + 8 * CNT_FWD + 4);
        (hi as u64) << 32 | lo as u64
    });
    assert!(fwd >= 2, "forwarded by the core: {fwd}");
    let g = emu.glue_counters();
    assert!(g.host_frames >= 2 && g.inject_frames >= 2 && g.inject_bad == 0, "{g:?}");
    let listing = d.stdout(&["-L", "-n", "-c"]);
    assert!(listing.contains("172.16.1.1:41001") && listing.contains("172.16.1.2:41002"), "{listing}");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("Etherbone backend"), "{log}");
}

#[test]
fn daemon_etherbone_needs_a_device_and_a_board_that_answers() {
    let dir = tmpdir("etherbone-errors");
    let director = write(&dir, "director.toml", &director_toml());
    let run = |args: &[&str]| {
        let o = std::process::Command::new(LVSNIC)
            .arg("daemon")
            .arg("--director")
            .arg(&director)
            .arg("--socket")
            .arg(dir.join("s.sock"))
            .args(args)
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (code, err) = run(&["--backend", "etherbone"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("--backend etherbone needs --device"), "{err}");
    // Nobody at that address: one line, in bounded time.
    let (emu, host) = BoardEmulator::start_on_loopback(PARAMS).unwrap();
    let addr = emu.etherbone_addr().ip().to_string();
    drop(emu);
    let t = Instant::now();
    let (code, err) = run(&["--backend", "etherbone", "--device", &addr, "--bind", &host.to_string()]);
    assert_ne!(code, Some(0));
    assert!(err.contains(&format!("no Etherbone reply from {addr}:1234 after 3 tries")), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(t.elapsed() < Duration::from_secs(5));
}
