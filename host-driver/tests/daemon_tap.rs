//! The daemon over a TAP wire, end to end through the kernel: frames sent
//! on the TAP interface with a packet socket reach the daemon, what it
//! transmits comes back on the interface, frames for the director's own
//! stack come out of `--host-tap`. Needs root (TAP devices), so it is
//! `#[ignore]`d in a plain `cargo test`; `scripts/test.sh` runs it when it
//! runs as root and lists it as not run otherwise. Run by hand without root
//! or `/dev/net/tun` it fails and says so.
// `unsafe` allowed in this test (the workspace denies it): geteuid(2) through libc.
#![allow(unsafe_code)]

#[path = "daemon_harness.rs"]
mod harness;
#[path = "packet_socket.rs"]
mod packet_socket;

use harness::*;
use lvsnic_model::wire::TCP_SYN;
use lvsnic_fixtures::*;
use std::net::Ipv4Addr;
use packet_socket::PacketSocket;
use std::time::Duration;

#[test]
#[ignore = "needs root and /dev/net/tun (scripts/test.sh runs it as root)"]
fn tap_wire_end_to_end() {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let tun = std::path::Path::new("/dev/net/tun").exists();
    assert!(root && tun, "tap_wire_end_to_end cannot run here: needs root (euid 0: {root}) and /dev/net/tun (present: {tun})");
    let id = std::process::id() % 100_000;
    let (wire_if, host_if) = (format!("lvw{id}"), format!("lvh{id}"));
    let dir = tmpdir("tap");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let d = Daemon::start(
        &dir,
        &director_toml(),
        &["--rules", rules.to_str().unwrap(), "--wire", &format!("tap:{wire_if}"), "--host-tap", &host_if, "--create-taps"],
    );
    for i in [&wire_if, &host_if] {
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{i}/disable_ipv6"), "1");
    }
    let w = PacketSocket::open(&wire_if, Duration::from_millis(200), None);
    let h = PacketSocket::open(&host_if, Duration::from_millis(200), None);
    let c = Ipv4Addr::new(198, 51, 100, 7);
    // A new connection: scheduled, NATed to rs1, back out of the wire.
    let syn = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_SYN, 1, 0, b"");
    w.send(&syn);
    assert!(w.expect(&expect::nat_request(&syn, rs(1), 80, rs_mac(1))), "NATed SYN on {wire_if}");
    // To the director itself: handed to its stack, out of the host TAP unchanged.
    let ssh = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, DIRECTOR_IP), 40001, 22, TCP_SYN, 1, 0, b"");
    w.send(&ssh);
    assert!(h.expect(&ssh), "frame for the host stack on {host_if}");
    // What the stack sends on the host TAP leaves on the wire.
    let from_stack = tcp(DIRECTOR_MAC, GATEWAY_MAC, Ip::new(DIRECTOR_IP, c), 22, 40001, TCP_SYN | 0x10, 9, 2, b"");
    h.send(&from_stack);
    assert!(w.expect(&from_stack), "host stack frame on {wire_if}");
    let st = d.status();
    assert!(st["exception_loop"]["frames"].as_u64().unwrap() >= 2, "{st}");
    assert!(st["exception_loop"]["to_host"].as_u64().unwrap() >= 1, "{st}");
    assert_eq!(st["director"]["connections"]["created"], 1, "{st}");
    // The live clock: model time is the arrival time.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let model = st["now_ns"].as_u64().unwrap();
    assert!(now.abs_diff(model) < 60_000_000_000, "model time {model} vs {now}");
    let list = d.run(&["-L", "-n"]).stdout;
    assert!(
        list.contains(&format!("  -> {:<28} {:<7} {:<6} {:<10} {:<10}\n", "192.168.10.1:80", "Masq", 1, 1, 0)),
        "{list}"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
