//! The golden model against captures of real Linux IPVS, without a VM.
//!
//! Each directory under `tests/fixtures/kernel/` holds a scenario recorded
//! with `lvsnic conformance --keep DIR` on the Debian 6.1 kernel (see the
//! README there): `rules.txt`, `director.toml`, `in.pcap` (the frames as they
//! reached the kernel director, with the VM's timestamps), optionally
//! `changes.txt`, and `kernel-out.pcap`, what the kernel director
//! transmitted. `lvsnic replay` (golden backend) on `in.pcap` must transmit
//! only frames the kernel transmitted, byte for byte (except the fields the
//! kernel draws at random: IP ID and header checksum of non-DF IPIP outer
//! headers and of the director's own ICMP errors; and the times the kernel
//! wrote into IPv4 Timestamp options from its own clock), in the kernel's order,
//! and every other kernel frame must be the kernel stack's answer to a frame
//! lvsnic hands to its host.

use lvsnic::changes::Changes;
use lvsnic::conformance::compare::Compare;
use lvsnic::conformance::vm;
use lvsnic::replay::{run_changes, Backend};
use lvsnic_model::config::{DirectorConfig, VlanMode};
use lvsnic_model::pcap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernel")
}

fn load(dir: &Path) -> (DirectorConfig, lvsnic_model::rules::RuleSet, Vec<pcap::PcapRecord>, Changes) {
    let mut cfg = DirectorConfig::load(&dir.join("director.toml")).unwrap();
    // A fixture recorded with the VM's /proc/timer_list runs on the VM's
    // jiffies, as `lvsnic conformance` does.
    if let Some(k) = vm::vm_clock(dir, 250).unwrap() {
        cfg.clock = Some(k);
    }
    let rules_text = std::fs::read_to_string(dir.join("rules.txt")).unwrap();
    let rules = lvsnic_model::rules::ipvsadm::parse_rules(&rules_text).unwrap();
    let input = pcap::read_file(dir.join("in.pcap")).unwrap();
    let changes = match dir.join("changes.txt") {
        p if p.exists() => Changes::load(&p).unwrap(),
        _ => Changes::default(),
    };
    (cfg, rules, input, changes)
}

/// Replays one fixture and returns what does not agree with the kernel.
fn check(dir: &Path) -> Vec<String> {
    let (cfg, rules, input, changes) = load(dir);
    let kernel = pcap::read_file(dir.join("kernel-out.pcap")).unwrap();
    let mut local: Vec<IpAddr> = vec![cfg.ip.into()];
    local.extend(cfg.ip6.map(IpAddr::from));
    local.extend(rules.services.iter().filter_map(|s| match s.key {
        lvsnic_model::rules::ServiceKey::Addr { addr, .. } => Some(addr),
        _ => None,
    }));
    let out = run_changes(Backend::Golden, 64, Default::default(), cfg, &rules, &input, changes).unwrap();
    let s = Compare { kernel: &kernel, lvsnic: &out.tx, host: &out.host, local: &local, window_ns: 1_000_000_000 }.run();
    let mut problems = Vec::new();
    if s.unexplained() > 0 || s.order_only > 0 || s.identical != out.tx.len() || s.identical + s.explained != kernel.len() {
        problems.push(s.text());
    }
    problems
}

#[test]
fn golden_model_transmits_what_the_kernel_transmitted() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("kernel-out.pcap").is_file())
        .collect();
    dirs.sort();
    let names: Vec<String> = dirs.iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for want in ["conn-reuse-nodest", "ip-options", "ip-options-icmp", "ip4in6-fragment", "ip6-fragments-nat", "ip6-fragments-tun", "ip6-server-icmp-nat", "ip6ip6-too-big", "nat-icmp-send", "timer-wheel", "udp-wlc-persist", "vlan"] {
        assert!(names.iter().any(|n| n == want), "fixture {want} missing in {}", fixtures().display());
    }
    let mut failed = Vec::new();
    for d in &dirs {
        for p in check(d) {
            failed.push(format!("{}: {p}", d.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(failed.is_empty(), "differences from the kernel:\n{}", failed.join("\n"));
}

#[test]
fn timer_wheel_fixture_needs_the_kernel_clock() {
    // The same fixture with exact deadlines (no [clock]): the lc scheduler
    // sees connections expired that the kernel still counted (its timer
    // wheel fires a 10 s timer up to 256 ms late), so some probes go to
    // the other server.
    let dir = fixtures().join("timer-wheel");
    let (mut cfg, rules, input, changes) = load(&dir);
    assert!(cfg.clock.is_some(), "timer_list.txt gives the fixture the VM's jiffies");
    cfg.clock = None;
    let kernel = pcap::read_file(dir.join("kernel-out.pcap")).unwrap();
    let out = run_changes(Backend::Golden, 64, Default::default(), cfg, &rules, &input, changes).unwrap();
    let s = Compare { kernel: &kernel, lvsnic: &out.tx, host: &out.host, local: &[], window_ns: 1_000_000_000 }.run();
    assert!(s.differing > 0, "without the timer wheel the model should differ from the kernel: {}", s.text());
}

#[test]
fn vlan_balance_keeps_tagged_frames() {
    // The non-default choice: tagged frames are handled like untagged ones
    // and leave with their tag (not Linux: the fixture's kernel sent none).
    let dir = fixtures().join("vlan");
    let (mut cfg, rules, input, changes) = load(&dir);
    assert_eq!(cfg.vlan, VlanMode::Drop);
    cfg.vlan = VlanMode::Balance;
    let out = run_changes(Backend::Golden, 64, Default::default(), cfg, &rules, &input, changes).unwrap();
    let tagged: Vec<&[u8]> = out.tx.iter().map(|r| &r.data[..]).filter(|f| f[12..14] == [0x81, 0] && f[14..16] == [0, 5]).collect();
    // The SYN, the UDP query and the ARP reply; the echo request goes to the host.
    assert_eq!(tagged.len(), 3, "{} frames out", out.tx.len());
    // ... which the kernel did not send: the comparison the fixture test makes catches them.
    let kernel = pcap::read_file(dir.join("kernel-out.pcap")).unwrap();
    let local = [IpAddr::from([10, 0, 0, 1])];
    let s = Compare { kernel: &kernel, lvsnic: &out.tx, host: &out.host, local: &local, window_ns: 1_000_000_000 }.run();
    assert_eq!((s.only_lvsnic, s.unexplained()), (3, 3), "{}", s.text());
    let base = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n";
    assert_eq!(DirectorConfig::parse(base).unwrap().vlan, VlanMode::Drop);
    assert_eq!(DirectorConfig::parse(&format!("{base}vlan = \"balance\"\n")).unwrap().vlan, VlanMode::Balance);
    let e = DirectorConfig::parse(&format!("{base}vlan = \"strip\"\n")).unwrap_err();
    assert_eq!(e, "line 5: [director] vlan: 'strip' is not \"drop\" or \"balance\"");
}
