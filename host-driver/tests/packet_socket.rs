//! A raw Ethernet endpoint for the root-only tests: an AF_PACKET socket
//! bound to one interface (a TAP wire, a veth), sending whole frames and
//! receiving what arrives on the interface (not what the socket itself
//! sent), and the ARP request/reply frames the latency probes use.
//! Included by the tests that need it (`#[path = "packet_socket.rs"] mod
//! packet_socket;`); the only `unsafe` of those tests is here, each block
//! with its `// SAFETY:` line.
#![allow(unsafe_code, dead_code)]

use lvsnic_fixtures::{GATEWAY_MAC, VIP};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// `CLOCK_REALTIME` now, ns (the clock of [`PacketSocket::recv_stamped`]).
pub fn realtime_ns() -> u64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    d.as_nanos() as u64
}

/// An AF_PACKET socket bound to one interface.
pub struct PacketSocket(i32);

impl PacketSocket {
    /// Binds to `ifname` (in the calling thread's network namespace) with
    /// `timeout` on each receive; `bufs` forces the socket's receive and
    /// send buffers to that many bytes (a probe that must not lose frames).
    pub fn open(ifname: &str, timeout: Duration, bufs: Option<i32>) -> PacketSocket {
        let name = std::ffi::CString::new(ifname).unwrap();
        // SAFETY: `name` is a NUL-terminated string alive for the call;
        // `sll`, `tv` and `buf` are plain-old-data values (all-zero is valid
        // for `sll`) that outlive the bind/setsockopt calls, passed with
        // their exact sizes.
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
            let rc = libc::bind(fd, &sll as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as u32);
            assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
            let tv = libc::timeval { tv_sec: timeout.as_secs() as _, tv_usec: timeout.subsec_micros() as _ };
            let rc = libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as u32,
            );
            assert_eq!(rc, 0, "SO_RCVTIMEO: {}", std::io::Error::last_os_error());
            if let Some(buf) = bufs {
                for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
                    let rc = libc::setsockopt(fd, libc::SOL_SOCKET, opt, &buf as *const _ as *const libc::c_void, 4);
                    assert_eq!(rc, 0, "socket buffers: {}", std::io::Error::last_os_error());
                }
            }
            PacketSocket(fd)
        }
    }

    /// Sends one whole frame; the error if it did not go out whole.
    pub fn try_send(&self, frame: &[u8]) -> std::io::Result<()> {
        // SAFETY: `frame` is a live slice of `frame.len()` bytes.
        let n = unsafe { libc::send(self.0, frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
        match n {
            n if n == frame.len() as isize => Ok(()),
            n if n < 0 => Err(std::io::Error::last_os_error()),
            n => Err(std::io::Error::other(format!("sent {n} of {} bytes", frame.len()))),
        }
    }

    /// Sends one whole frame, or fails the test.
    pub fn send(&self, frame: &[u8]) {
        self.try_send(frame).unwrap_or_else(|e| panic!("send: {e}"));
    }

    /// One received (not outgoing) frame into `buf`, or None after the
    /// timeout.
    pub fn recv(&self, buf: &mut [u8]) -> Option<usize> {
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
        // SAFETY: `buf` is writable for `buf.len()` bytes and `from` for
        // `len` bytes, both alive for the call.
        let n = unsafe {
            libc::recvfrom(self.0, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0, &mut from as *mut _ as *mut libc::sockaddr, &mut len)
        };
        (n > 0 && from.sll_pkttype != libc::PACKET_OUTGOING).then_some(n as usize)
    }

    /// [`recv`](Self::recv), with the time the kernel received the frame
    /// (`CLOCK_REALTIME`, ns; `SIOCGSTAMPNS`): a latency probe that times
    /// its replies with it does not count its own wait for a CPU.
    pub fn recv_stamped(&self, buf: &mut [u8]) -> Option<(usize, Option<u64>)> {
        /// `SIOCGSTAMPNS` (`asm-generic/sockios.h`; the 64-bit `timespec`).
        const SIOCGSTAMPNS: libc::c_ulong = 0x8907;
        let n = self.recv(buf)?;
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: the ioctl writes one `timespec` into `ts`, which is alive
        // and of that type for the call.
        let rc = unsafe { libc::ioctl(self.0, SIOCGSTAMPNS as _, &mut ts as *mut libc::timespec) };
        // The first call turns the stamps on (ENOENT for that frame).
        Some((n, (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)))
    }

    /// Discards every frame already queued on the socket (without
    /// waiting); how many there were. A probe that times replies must not
    /// count the time it takes to read past frames of an earlier phase.
    pub fn drain(&self) -> usize {
        let mut buf = vec![0u8; 65536];
        let mut n = 0;
        loop {
            // SAFETY: `buf` is writable for `buf.len()` bytes and alive for
            // the call; no source address is asked for.
            let r = unsafe {
                libc::recvfrom(self.0, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT, std::ptr::null_mut(), std::ptr::null_mut())
            };
            if r < 0 {
                return n;
            }
            n += 1;
        }
    }

    /// Whether a received frame equal to `want` arrives within 5 s.
    pub fn expect(&self, want: &[u8]) -> bool {
        let t0 = Instant::now();
        let mut buf = vec![0u8; 65536];
        while t0.elapsed() < Duration::from_secs(5) {
            if self.recv(&mut buf).is_some_and(|n| &buf[..n] == want) {
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

/// A broadcast ARP request from the gateway's MAC for the fixtures' VIP,
/// with sender protocol address `sender` (a probe's number).
pub fn arp_request(sender: [u8; 4]) -> Vec<u8> {
    arp_request_for(sender, VIP)
}

/// An ARP request from the gateway's MAC and `sender` for `target`.
pub fn arp_request_for(sender: [u8; 4], target: Ipv4Addr) -> Vec<u8> {
    let mut f = Vec::with_capacity(42);
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(&GATEWAY_MAC.0);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&GATEWAY_MAC.0);
    f.extend_from_slice(&sender);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&target.octets());
    f
}

/// The target protocol address of `f` if it is an ARP reply for the VIP
/// (the sender of the [`arp_request`] it answers).
pub fn arp_reply_to(f: &[u8]) -> Option<[u8; 4]> {
    arp_reply_from(f, VIP)
}

/// The target protocol address of `f` if it is an ARP reply for `target`.
pub fn arp_reply_from(f: &[u8], target: Ipv4Addr) -> Option<[u8; 4]> {
    let is_reply = f.len() >= 42 && f[12..14] == [0x08, 0x06] && f[20..22] == [0, 2] && f[28..32] == target.octets();
    is_reply.then(|| [f[38], f[39], f[40], f[41]])
}
