//! The daemon over a TAP wire, end to end through the kernel: frames sent
//! on the TAP interface with a packet socket reach the daemon, what it
//! transmits comes back on the interface, frames for the director's own
//! stack come out of `--host-tap`. Needs root (TAP devices), so it is
//! `#[ignore]`d in a plain `cargo test`; `scripts/test.sh` runs it when it
//! runs as root and lists it as not run otherwise. Run by hand without root
//! or `/dev/net/tun` it fails and says so.
// `unsafe` allowed in this test (the workspace denies it): AF_PACKET sockets and geteuid(2) through libc.
#![allow(unsafe_code)]

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_model::wire::TCP_SYN;
use lvsnic_fixtures::*;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// An AF_PACKET socket bound to one interface.
struct PacketSocket(i32);

impl PacketSocket {
    fn open(ifname: &str) -> PacketSocket {
        let name = std::ffi::CString::new(ifname).unwrap();
        // SAFETY: `name` is a NUL-terminated string alive for the call;
        // `sll` and `tv` are plain-old-data structs (all-zero is valid) that
        // outlive the bind/setsockopt calls, passed with their exact sizes.
        unsafe {
            let idx = libc::if_nametoindex(name.as_ptr());
            assert!(idx != 0, "no interface {ifname}");
            let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, proto);
            assert!(fd >= 0, "packet socket: {}", std::io::Error::last_os_error());
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto as u16;
            sll.sll_ifindex = idx as i32;
            let rc = libc::bind(
                fd,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
            let tv = libc::timeval { tv_sec: 0, tv_usec: 200_000 };
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as u32,
            );
            PacketSocket(fd)
        }
    }

    fn send(&self, frame: &[u8]) {
        // SAFETY: `frame` is a live slice of `frame.len()` bytes.
        let n = unsafe { libc::send(self.0, frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
        assert_eq!(n, frame.len() as isize, "send: {}", std::io::Error::last_os_error());
    }

    /// Waits up to 5 s for a received (not outgoing) frame equal to `want`.
    fn expect(&self, want: &[u8]) -> bool {
        let t0 = Instant::now();
        let mut buf = vec![0u8; 65536];
        while t0.elapsed() < Duration::from_secs(5) {
            // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: `buf` is writable for `buf.len()` bytes and `from` for
            // `len` bytes, both alive for the call.
            let n = unsafe {
                libc::recvfrom(
                    self.0,
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                    &mut from as *mut _ as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n > 0 && from.sll_pkttype != libc::PACKET_OUTGOING && &buf[..n as usize] == want {
                return true;
            }
        }
        false
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this socket owns, once.
        unsafe {
            libc::close(self.0);
        }
    }
}

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
        &["--rules", rules.to_str().unwrap(), "--wire", &format!("tap:{wire_if}"), "--host-tap", &host_if],
    );
    for i in [&wire_if, &host_if] {
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{i}/disable_ipv6"), "1");
    }
    let w = PacketSocket::open(&wire_if);
    let h = PacketSocket::open(&host_if);
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
