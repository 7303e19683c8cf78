//! The few system calls the daemon (and its health checkers and sync
//! daemons) need beyond std: SIGINT/SIGTERM
//! handling, TAP devices, poll(2), the stack's addresses (getifaddrs(3);
//! rtnetlink is [`crate::rtnl`], on the netlink crates), interface indexes, the control queue's wake-up (eventfd(2)) and a control
//! client's credentials (`SO_PEERCRED`), a health check's bound TCP
//! connection (`bindto`, `bind_if`). All of the daemon's `unsafe` is here.
// `unsafe` allowed here (the crate denies it): sigaction(2), poll(2), the TUNSETIFF and SIOCSIFFLAGS ioctls, getifaddrs(3), if_nametoindex(3), eventfd(2), getsockopt(2), gettid(2), sched_{get,set}affinity(2), a health check's socket(2)/setsockopt(2)/bind(2)/connect(2).
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
    let t = (timeout_ms >= 0).then(|| std::time::Duration::from_millis(timeout_ms as u64));
    poll_readable_for(fds, t)
}

/// [`poll_readable`] with a timeout finer than a millisecond (`ppoll(2)`;
/// None: no timeout).
pub fn poll_readable_for(fds: &[RawFd], timeout: Option<std::time::Duration>) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ts = timeout.map(|t| libc::timespec { tv_sec: t.as_secs() as libc::time_t, tv_nsec: t.subsec_nanos() as libc::c_long });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `p` is a valid array of `p.len()` pollfd structures; `tsp` is
    // null or points at `ts`, alive for the call; no signal mask is passed.
    let rc = unsafe { libc::ppoll(p.as_mut_ptr(), p.len() as libc::nfds_t, tsp, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(p.iter().map(|x| x.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0).collect())
}

/// Whether `fd` is readable now (`poll(2)` with no timeout; an error
/// reads as not readable).
pub fn readable_now(fd: RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: `p` is one valid pollfd, alive for the call.
    let rc = unsafe { libc::poll(&mut p, 1, 0) };
    rc > 0 && p.revents & libc::POLLIN != 0
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

/// Whether network device `name` exists in this process's network
/// namespace (`/proc/net/dev`, which is per namespace).
pub fn netdev_exists(name: &str) -> io::Result<bool> {
    let t = std::fs::read_to_string("/proc/net/dev")?;
    Ok(t.lines().skip(2).any(|l| l.split(':').next().map(str::trim) == Some(name)))
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

/// The index of network interface `name` in the daemon's network
/// namespace (if_nametoindex(3)), or None when there is none.
pub fn ifindex(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: if_nametoindex reads the NUL-terminated `c`, which lives across the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
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

/// An eventfd(2): threads that queue work for the forwarding loop
/// [`notify`](EventFd::notify) it; the loop polls its descriptor and
/// [`drain`](EventFd::drain)s it.
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A non-blocking eventfd with count 0.
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd(2) with constant arguments; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The descriptor to poll (readable while notified).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Makes the descriptor readable (never blocks: a full counter is
    /// readable already).
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: write(2) reads 8 bytes from `one`, which lives across the call.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    /// Resets the counter (the descriptor is no longer readable).
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: read(2) writes at most 8 bytes into `v`, which lives across the call.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }
}

/// `addr` as a `sockaddr_in`/`sockaddr_in6` for bind(2) and connect(2).
fn sockaddr(addr: &std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        std::net::SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A TCP connection to `dst` within `timeout` as keepalived's checkers
/// open it (`socket_bind_connect`, core/layer4.c): on interface `device`
/// first when given (`SO_BINDTODEVICE`: `bind_if`, which a link-local
/// IPv6 address needs), from `src` when given (bind(2): `bindto`,
/// `bind_port`), then a non-blocking connect(2) awaited with poll(2).
pub fn tcp_connect_bound(
    dst: std::net::SocketAddr,
    src: Option<std::net::SocketAddr>,
    device: Option<&str>,
    timeout: std::time::Duration,
) -> io::Result<std::net::TcpStream> {
    let family = if dst.is_ipv6() { libc::AF_INET6 } else { libc::AF_INET };
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    if let Some(dev) = device {
        let name = std::ffi::CString::new(dev).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let b = name.as_bytes_with_nul();
        // SAFETY: setsockopt reads `b.len()` bytes from `b`, which lives across the call.
        let rc = unsafe {
            libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_BINDTODEVICE, b.as_ptr().cast(), b.len() as libc::socklen_t)
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    if let Some(src) = src {
        let (ss, len) = sockaddr(&src);
        // SAFETY: bind reads `len` bytes of `ss`, a valid sockaddr of that length.
        if unsafe { libc::bind(sock.as_raw_fd(), &ss as *const _ as *const libc::sockaddr, len) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let (ss, len) = sockaddr(&dst);
    // SAFETY: connect reads `len` bytes of `ss`, a valid sockaddr of that length.
    if unsafe { libc::connect(sock.as_raw_fd(), &ss as *const _ as *const libc::sockaddr, len) } < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        let mut p = libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: poll reads and writes the one pollfd `p`.
        let rc = unsafe { libc::poll(&mut p, 1, ms) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        if rc == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "connection timed out"));
        }
        let mut err: libc::c_int = 0;
        let mut elen = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `elen` bytes into `err`.
        let rc = unsafe { libc::getsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, (&mut err as *mut libc::c_int).cast(), &mut elen) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
    }
    let stream = std::net::TcpStream::from(sock);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// The credentials the kernel recorded for the process at the other end
/// of a connected Unix socket when it connected (`SO_PEERCRED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    /// Its process id (0 when it is in another pid namespace).
    pub pid: i32,
    /// Its effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
}

/// `SO_PEERCRED` of a connected Unix socket.
pub fn peer_cred(fd: RawFd) -> io::Result<PeerCred> {
    let mut c = libc::ucred { pid: 0, uid: u32::MAX, gid: u32::MAX };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED writes at most `len` bytes (one `struct ucred`)
    // into `c`, which lives across the call; `len` is updated in place.
    let rc = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, &mut c as *mut libc::ucred as *mut libc::c_void, &mut len)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != std::mem::size_of::<libc::ucred>() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "SO_PEERCRED: short answer"));
    }
    Ok(PeerCred { pid: c.pid, uid: c.uid, gid: c.gid })
}

/// `SO_PEERGROUPS` (Linux 4.13): the peer's supplementary groups when it
/// connected.
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_PEERGROUPS: libc::c_int = 0x3d;
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
const SO_PEERGROUPS: libc::c_int = 59;

/// The supplementary groups of the process at the other end of a
/// connected Unix socket, as the kernel recorded them when it connected
/// (`SO_PEERGROUPS`).
pub fn peer_groups(fd: RawFd) -> io::Result<Vec<u32>> {
    let mut groups: Vec<libc::gid_t> = vec![0; 64];
    loop {
        let mut len = (groups.len() * std::mem::size_of::<libc::gid_t>()) as libc::socklen_t;
        // SAFETY: SO_PEERGROUPS writes at most `len` bytes into `groups`
        // (a buffer of exactly `len` bytes that lives across the call) and
        // sets `len` to the size it has or needs.
        let rc = unsafe {
            libc::getsockopt(fd, libc::SOL_SOCKET, SO_PEERGROUPS, groups.as_mut_ptr() as *mut libc::c_void, &mut len)
        };
        let n = len as usize / std::mem::size_of::<libc::gid_t>();
        if rc == 0 {
            groups.truncate(n);
            return Ok(groups);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ERANGE) && n > groups.len() && n <= 65536 {
            groups.resize(n, 0);
            continue;
        }
        return Err(e);
    }
}

/// The daemon's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The daemon's effective group id.
pub fn egid() -> u32 {
    // SAFETY: getegid(2) has no arguments and cannot fail.
    unsafe { libc::getegid() }
}

/// A user of the system's user database (getpwnam_r(3), so NSS too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserEntry {
    /// Its name.
    pub name: String,
    /// Its user id.
    pub uid: u32,
    /// Its primary group.
    pub gid: u32,
}

fn c_name(name: &str) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a user or group name"))
}

/// The calling convention of getpwnam_r(3)/getgrnam_r(3): `call` looks up
/// the NUL-terminated name with `buf` as room for the entry's strings and
/// returns the call's status and the entry if found; the room grows (up to
/// 1 MiB) while the status is ERANGE.
fn nss_lookup<T>(
    name: &str,
    mut call: impl FnMut(&std::ffi::CStr, &mut [libc::c_char]) -> (libc::c_int, Option<T>),
) -> io::Result<Option<T>> {
    let cname = c_name(name)?;
    let mut buf: Vec<libc::c_char> = vec![0; 4096];
    loop {
        let (rc, found) = call(&cname, &mut buf);
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        return Ok(found);
    }
}

/// The user named `name`, or None when there is none (getpwnam_r(3)).
pub fn user_by_name(name: &str) -> io::Result<Option<UserEntry>> {
    nss_lookup(name, |cname, buf| {
        // SAFETY: passwd is plain data (pointers and integers); all-zero is valid before getpwnam_r fills it.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut res: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: getpwnam_r reads the NUL-terminated `cname` and writes `pw`,
        // at most `buf.len()` bytes of `buf`, and `res`; all live across the call.
        let rc = unsafe { libc::getpwnam_r(cname.as_ptr(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut res) };
        (rc, (!res.is_null()).then(|| UserEntry { name: name.to_string(), uid: pw.pw_uid, gid: pw.pw_gid }))
    })
}

/// The id of the group named `name`, or None when there is none (getgrnam_r(3)).
pub fn group_by_name(name: &str) -> io::Result<Option<u32>> {
    nss_lookup(name, |cname, buf| {
        // SAFETY: group is plain data (pointers and integers); all-zero is valid before getgrnam_r fills it.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut res: *mut libc::group = std::ptr::null_mut();
        // SAFETY: getgrnam_r reads the NUL-terminated `cname` and writes `gr`,
        // at most `buf.len()` bytes of `buf`, and `res`; all live across the call.
        let rc = unsafe { libc::getgrnam_r(cname.as_ptr(), &mut gr, buf.as_mut_ptr(), buf.len(), &mut res) };
        (rc, (!res.is_null()).then_some(gr.gr_gid))
    })
}

/// Sends SIGKILL to process group `pgid` (a script started in a group of
/// its own, with whatever it started).
pub fn kill_process_group(pgid: u32) -> io::Result<()> {
    let Ok(p) = libc::pid_t::try_from(pgid) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    if p <= 1 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill(2) with a negative pid (a process group other than 0,
    // -1 and init's) and a constant signal has no memory effects.
    if unsafe { libc::kill(-p, libc::SIGKILL) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name service lookups: users and groups every Linux system has,
    /// names none has, and a NUL refused before the call.
    #[test]
    fn users_and_groups_by_name() {
        let root = user_by_name("root").unwrap().expect("root");
        assert_eq!((root.name.as_str(), root.uid, root.gid), ("root", 0, 0));
        assert_eq!(group_by_name("root").unwrap(), Some(0));
        assert_eq!(user_by_name("lvsnic-no-such-user").unwrap().map(|u| u.uid), None);
        assert_eq!(group_by_name("lvsnic-no-such-group").unwrap(), None);
        assert_eq!(user_by_name("ro\0ot").unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert_eq!(group_by_name("ro\0ot").unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }
}

/// The calling thread's kernel thread id (gettid(2)).
pub fn gettid() -> i32 {
    // SAFETY: gettid(2) takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPUs thread `tid` (0: the calling thread) may run on
/// (sched_getaffinity(2)), in increasing order.
pub fn cpu_affinity(tid: i32) -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most size_of::<cpu_set_t>() bytes into `set`, which lives across the call.
    if unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET reads `set` within its bounds (the index is below CPU_SETSIZE).
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// Lets thread `tid` (0: the calling thread) run only on `cpus`
/// (sched_setaffinity(2)). A CPU number at or above `CPU_SETSIZE` is an
/// `InvalidInput` error.
pub fn set_cpu_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {c} is beyond the {} this build knows", libc::CPU_SETSIZE)));
        }
        // SAFETY: `c` is below CPU_SETSIZE (checked above), so CPU_SET writes inside `set`.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: the kernel reads size_of::<cpu_set_t>() bytes from `set`, which lives across the call.
    if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel thread ids of this process's threads (`/proc/self/task`).
pub fn thread_ids() -> io::Result<Vec<i32>> {
    let mut ids = Vec::new();
    for e in std::fs::read_dir("/proc/self/task")? {
        if let Some(id) = e?.file_name().to_str().and_then(|n| n.parse().ok()) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Puts thread `tid` (0: the calling thread) in `SCHED_IDLE` (`idle`) or
/// back in `SCHED_OTHER` (sched_setscheduler(2)). An idle thread runs only
/// when nothing of normal priority wants the CPU, and anything of normal
/// priority that wakes up takes the CPU from it at once.
pub fn set_sched_idle(tid: i32, idle: bool) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: 0 };
    let policy = if idle { libc::SCHED_IDLE } else { libc::SCHED_OTHER };
    // SAFETY: sched_setscheduler(2) reads `p`, which lives across the call.
    if unsafe { libc::sched_setscheduler(tid, policy, &p) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Thread `tid`'s (0: the calling thread) nice value (getpriority(2);
/// on Linux `PRIO_PROCESS` names one thread).
pub fn nice(tid: i32) -> io::Result<i32> {
    // -1 is a nice value as well as the error return: errno tells.
    // SAFETY: __errno_location returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: getpriority(2) takes ids only.
    let n = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) };
    if n == -1 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(0) {
            return Err(e);
        }
    }
    Ok(n)
}

/// Sets thread `tid`'s (0: the calling thread) nice value (setpriority(2)):
/// lowering it (a higher priority) needs `CAP_SYS_NICE` or `RLIMIT_NICE`.
pub fn set_nice(tid: i32, nice: i32) -> io::Result<()> {
    // SAFETY: setpriority(2) takes ids and a value only.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether thread `tid` (0: the calling thread) is in `SCHED_IDLE`.
pub fn sched_idle(tid: i32) -> io::Result<bool> {
    // SAFETY: sched_getscheduler(2) takes a thread id only.
    let p = unsafe { libc::sched_getscheduler(tid) };
    if p < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(p == libc::SCHED_IDLE)
}

/// Thread `tid` of this process's scheduling times in nanoseconds
/// (`/proc/self/task/TID/schedstat`): on a CPU, and runnable but waiting
/// for one.
pub fn thread_sched_ns(tid: i32) -> io::Result<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))?;
    let mut f = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    match (f.next().flatten(), f.next().flatten()) {
        (Some(on_cpu), Some(waiting)) => Ok((on_cpu, waiting)),
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, format!("/proc/self/task/{tid}/schedstat: {s:?}"))),
    }
}
