//! The few system calls the daemon needs beyond std: SIGINT/SIGTERM
//! handling, TAP devices, poll(2). All of the daemon's `unsafe` is here.
// `unsafe` allowed here (the crate denies it): sigaction(2), poll(2), the TUNSETIFF and SIOCSIFFLAGS ioctls.
#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

static SHUTDOWN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SHUTDOWN.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM request a clean shutdown (without
/// `SA_RESTART`, so a blocked poll returns).
pub fn install_signal_handlers() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
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
