//! The few system calls the daemon needs beyond std: SIGINT/SIGTERM
//! handling, TAP devices, poll(2), the stack's addresses (rtnetlink,
//! getifaddrs(3)). All of the daemon's `unsafe` is here.
// `unsafe` allowed here (the crate denies it): sigaction(2), poll(2), the TUNSETIFF and SIOCSIFFLAGS ioctls, netlink sockets, getifaddrs(3).
#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

static SHUTDOWN: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if sig == libc::SIGHUP {
        RELOAD.store(true, Ordering::SeqCst);
    } else {
        SHUTDOWN.store(true, Ordering::SeqCst);
    }
}

/// Whether SIGHUP asked for a reload since the last call.
pub fn take_reload() -> bool {
    RELOAD.swap(false, Ordering::SeqCst)
}

/// Makes SIGINT, SIGTERM and SIGQUIT request a clean shutdown and SIGHUP a
/// reload (without `SA_RESTART`, so a blocked poll returns).
pub fn install_signal_handlers() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a handler that only stores an
        // atomic is a valid, async-signal-safe disposition.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether a shutdown was requested (signal or `shutdown` request).
pub fn shutdown_requested() -> bool {
    SHUTDOWN.load(Ordering::SeqCst)
}

/// Requests a shutdown.
pub fn request_shutdown() {
    SHUTDOWN.store(true, Ordering::SeqCst);
}

/// poll(2) for readability on `fds`; returns which are readable. An
/// interrupted poll returns all false.
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: `p` is a valid array of `p.len()` pollfd structures.
    let rc = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(p.iter().map(|x| x.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0).collect())
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

fn ifreq(name: &str) -> io::Result<IfReq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name `{name}'")));
    }
    let mut r = IfReq { name: [0; libc::IFNAMSIZ], flags: 0, _pad: [0; 22] };
    r.name[..name.len()].copy_from_slice(name.as_bytes());
    Ok(r)
}

/// A TAP device: Ethernet frames in and out, one per read/write.
pub struct Tap {
    file: File,
    name: String,
}

impl Tap {
    /// Creates (or attaches to) TAP device `name`, non-blocking, and sets
    /// its link up.
    pub fn open(name: &str) -> io::Result<Tap> {
        let mut req = ifreq(name)?;
        req.flags = IFF_TAP | IFF_NO_PI;
        let file = std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which
        // `req` is (name, flags, padding to 40 bytes).
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fcntl on a valid descriptor.
        unsafe {
            let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            if fl < 0 || libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        set_link_up(name)?;
        Ok(Tap { file, name: name.to_string() })
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The TAP file descriptor (for `poll`).
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// One frame, or None when none is waiting.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sends one frame; false when the device queue is full (frame dropped).
    pub fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        match self.file.write(frame) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Sets IFF_UP on interface `name`.
fn set_link_up(name: &str) -> io::Result<()> {
    // SAFETY: a datagram socket used only for interface ioctls; closed by OwnedFd.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `sock` is a fresh descriptor we own.
    let sock = unsafe { OwnedFd::from_raw_fd(sock) };
    let mut req = ifreq(name)?;
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write one `struct ifreq`.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut req as *mut IfReq) < 0 {
            return Err(io::Error::last_os_error());
        }
        req.flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS as _, &mut req as *mut IfReq) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// CLOCK_REALTIME in nanoseconds.
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Notifications of IPv4 address changes in the daemon's network namespace
/// (an rtnetlink socket subscribed to `RTMGRP_IPV4_IFADDR`), for
/// `--vips host`: the VIPs follow the addresses keepalived adds and removes.
pub struct AddrWatch {
    fd: OwnedFd,
}

impl AddrWatch {
    /// Subscribes to address changes.
    pub fn open() -> io::Result<AddrWatch> {
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let fd = unsafe {
            libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_nl is plain data; all-zero is valid before the fields are set.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        sa.nl_groups = libc::RTMGRP_IPV4_IFADDR as u32;
        // SAFETY: bind(2) reads `size_of::<sockaddr_nl>()` bytes from `sa`, which lives across the call.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(AddrWatch { fd })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads every pending notification; whether there was any (or the
    /// socket overflowed, which also means addresses may have changed).
    pub fn changed(&self) -> bool {
        let mut buf = [0u8; 8192];
        let mut any = false;
        loop {
            // SAFETY: recv(2) writes at most `buf.len()` bytes into `buf`.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
            if n > 0 {
                any = true;
                continue;
            }
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOBUFS) {
                any = true;
                continue;
            }
            return any;
        }
    }
}

/// The IPv4 addresses of every interface in the daemon's network namespace
/// (getifaddrs(3)).
pub fn ipv4_addresses() -> io::Result<Vec<std::net::Ipv4Addr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs(3) stores a list it allocated in `head`; freed below.
    if unsafe { libc::getifaddrs(&mut head) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*p };
        if !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr points to a sockaddr whose family says its type.
            let family = unsafe { (*ifa.ifa_addr).sa_family } as libc::c_int;
            if family == libc::AF_INET {
                // SAFETY: an AF_INET ifa_addr is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                out.push(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        p = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}
