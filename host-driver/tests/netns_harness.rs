//! Helpers for the tests that build networks of namespaces (included with
//! `#[path]`): whether this machine can, commands that must succeed,
//! sysctls, namespaces deleted on drop, threads in a namespace, polling,
//! and the TCP servers and clients that run in them.
// `unsafe` allowed in this test helper (the workspace denies it): geteuid(2) and setns(2) through libc.
#![allow(unsafe_code)]
#![allow(dead_code)]

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Timeout of every socket operation (unless a `_within` variant says otherwise).
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Why this machine cannot run the test, if it cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    // Unique per call: tests of one file run in parallel threads.
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = format!("lvsnic-e2e-probe-{}-{n}", std::process::id());
    match Command::new("ip").args(["netns", "add", &probe]).output() {
        Err(e) => Some(format!("cannot run `ip` (iproute2): {e}")),
        Ok(o) if !o.status.success() => {
            Some(format!("`ip netns add` failed: {}", String::from_utf8_lossy(&o.stderr).trim()))
        }
        Ok(_) => {
            let _ = Command::new("ip").args(["netns", "del", &probe]).status();
            None
        }
    }
}

/// Runs `args`, panicking with its stderr when it fails.
pub fn must(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// `sysctl -w` settings inside namespace `ns`.
pub fn sysctl(ns: &str, settings: &[&str]) {
    let mut a = vec!["ip", "netns", "exec", ns, "sysctl", "-qw"];
    a.extend_from_slice(settings);
    must(&a);
}

/// Named network namespaces, deleted when dropped (also on panic).
#[derive(Default)]
pub struct Namespaces(pub Vec<String>);

impl Namespaces {
    /// Creates namespace `name` (deleting a leftover of that name first),
    /// with loopback up, IPv6 off and no reverse-path filter; returns it.
    pub fn add(&mut self, name: String) -> String {
        let _ = Command::new("ip").args(["netns", "del", &name]).output(); // a leftover of a killed run
        must(&["ip", "netns", "add", &name]);
        self.0.push(name.clone());
        must(&["ip", "-n", &name, "link", "set", "lo", "up"]);
        sysctl(
            &name,
            &[
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
                "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0",
            ],
        );
        name
    }
}

/// Turns IPv6 on in namespace `ns` (made by [`Namespaces::add`], which
/// turns it off), for the interfaces made or moved into it afterwards,
/// without the delays and chatter that would slow or disturb a test: no
/// duplicate address detection (an address is usable at once, not
/// `tentative` for a second), no router solicitations.
pub fn enable_ipv6(ns: &str) {
    let mut settings = Vec::new();
    for scope in ["all", "default"] {
        for (k, v) in [("disable_ipv6", 0), ("accept_dad", 0), ("dad_transmits", 0), ("router_solicitations", 0), ("accept_ra", 0)] {
            settings.push(format!("net.ipv6.conf.{scope}.{k}={v}"));
        }
    }
    sysctl(ns, &settings.iter().map(String::as_str).collect::<Vec<_>>());
}

/// [`leaf`] for an IPv6 host: `ns` has had [`enable_ipv6`]; `addr` (with
/// prefix) is added `nodad`, usable at once.
pub fn leaf6(hub: &str, ns: &str, veth: &str, mac: &str, addr: &str) {
    must(&["ip", "-n", hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns]);
    must(&["ip", "-n", hub, "link", "set", veth, "master", "br0", "up"]);
    sysctl(ns, &["net.ipv6.conf.eth0.disable_ipv6=0", "net.ipv6.conf.eth0.accept_dad=0"]);
    must(&["ip", "-n", ns, "link", "set", "eth0", "address", mac, "up"]);
    must(&["ip", "-n", ns, "-6", "addr", "add", addr, "dev", "eth0", "nodad"]);
}

/// The namespaces of an end-to-end segment ([`Namespaces::segment`]).
pub struct Segment {
    /// `P-hub`, with the bridge `br0` up: every other end joins it.
    pub hub: String,
    /// `P-cl`, the client's.
    pub cl: String,
    /// `P-rs1`, `P-rs2`, ...: the real servers'.
    pub rsns: Vec<String>,
}

impl Namespaces {
    /// The namespaces of a segment named `p`: a hub with bridge `br0` up,
    /// a client and `servers` real servers (joined to the hub with
    /// [`leaf`] by the test, which knows their addresses).
    pub fn segment(&mut self, p: &str, servers: usize) -> Segment {
        let hub = self.add(format!("{p}-hub"));
        let cl = self.add(format!("{p}-cl"));
        let rsns = (1..=servers).map(|n| self.add(format!("{p}-rs{n}"))).collect();
        must(&["ip", "-n", &hub, "link", "add", "br0", "type", "bridge"]);
        must(&["ip", "-n", &hub, "link", "set", "br0", "up"]);
        Segment { hub, cl, rsns }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in self.0.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Namespace `ns` as a leaf of bridge `br0` in namespace `hub`: veth `veth`
/// on the bridge, its peer `eth0` in `ns` with MAC `mac` and address
/// `addr` (with prefix), up.
pub fn leaf(hub: &str, ns: &str, veth: &str, mac: &str, addr: &str) {
    must(&["ip", "-n", hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns]);
    must(&["ip", "-n", hub, "link", "set", veth, "master", "br0", "up"]);
    must(&["ip", "-n", ns, "link", "set", "eth0", "address", mac, "up"]);
    must(&["ip", "-n", ns, "addr", "add", addr, "dev", "eth0"]);
}

/// Runs `f` on a thread in network namespace `ns`; sockets it creates
/// stay in `ns` wherever they are used afterwards.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    let nsfile = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    std::thread::spawn(move || {
        // SAFETY: setns(2) with a valid network-namespace descriptor; it
        // moves only this short-lived thread, which ends after `f`.
        let rc = unsafe { libc::setns(nsfile.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .expect("thread in netns")
}

/// Polls `cond` every 20 ms for up to `limit`.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ------------------------------------------------------------ servers

/// A TCP server in a real server's namespace, answering as `id`:
/// `GET /big` → [`blob`], any other `GET` → `"{id}\n"` (HTTP/1.0, the
/// server closes first), `ECHO` → every following line back as `"{id} LINE"`.
pub struct Server {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `port` in namespace `ns`, answering as `id` (`blob` for `GET /big`).
    pub fn start(ns: &str, port: u16, id: &'static str, blob: Arc<Vec<u8>>) -> Server {
        Server::start_on(ns, Ipv4Addr::UNSPECIFIED.into(), port, id, blob)
    }

    /// [`Server::start`] on address `addr` (`::` for IPv6).
    pub fn start_on(ns: &str, addr: std::net::IpAddr, port: u16, id: &'static str, blob: Arc<Vec<u8>>) -> Server {
        let l = in_netns(ns, move || TcpListener::bind((addr, port)))
            .unwrap_or_else(|e| panic!("listen in {ns}: {e}"));
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => {
                        let (st, blob) = (st.clone(), blob.clone());
                        std::thread::spawn(move || {
                            let _ = serve_one(s, id, &blob, &st);
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
                    Err(_) => return,
                }
            }
        });
        Server { stop, thread: Some(thread) }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_one(s: TcpStream, id: &str, blob: &[u8], stop: &AtomicBool) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_millis(500)))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut r = BufReader::new(s.try_clone()?);
    let mut line = String::new();
    // Reads one line, waiting (while not stopped) across read timeouts.
    let read_line = |r: &mut BufReader<TcpStream>, line: &mut String| -> std::io::Result<usize> {
        loop {
            match r.read_line(line) {
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if stop.load(Ordering::Relaxed) {
                        return Err(e);
                    }
                }
                x => return x,
            }
        }
    };
    read_line(&mut r, &mut line)?;
    if line.starts_with("ECHO") {
        loop {
            line.clear();
            if read_line(&mut r, &mut line)? == 0 {
                return Ok(());
            }
            (&s).write_all(format!("{id} {line}").as_bytes())?;
        }
    }
    loop {
        let mut h = String::new();
        if read_line(&mut r, &mut h)? == 0 || h.trim().is_empty() {
            break;
        }
    }
    let id_body = format!("{id}\n");
    let body: &[u8] = if line.starts_with("GET /big ") { blob } else { id_body.as_bytes() };
    let head = format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\nX-Server: {id}\r\n\r\n", body.len());
    (&s).write_all(head.as_bytes())?;
    (&s).write_all(body)?;
    Ok(()) // dropping `s` closes: the server's FIN comes first
}

// ------------------------------------------------------------ client

/// A TCP connection from namespace `ns`, with timeouts.
pub fn connect(ns: &str, to: SocketAddr) -> TcpStream {
    connect_within(ns, to, IO_TIMEOUT).unwrap_or_else(|e| panic!("connect {to} from {ns}: {e}"))
}

/// A TCP connection from namespace `ns`; `timeout` for the connect and
/// for every later read and write.
pub fn connect_within(ns: &str, to: SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    let s = in_netns(ns, move || TcpStream::connect_timeout(&to, timeout))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    Ok(s)
}

/// GETs `/` from `ns` to `to`, one per name in `servers`, and asserts that
/// each is answered by that server (the body its name and a newline, as
/// [`Server`] serves it); returns (client port, server) per request.
/// `what` names the requests in failure messages.
pub fn gets_answered_by(ns: &str, to: SocketAddr, servers: &[&'static str], what: &str) -> Vec<(u16, &'static str)> {
    servers
        .iter()
        .enumerate()
        .map(|(i, &want)| {
            let (port, server, body) = http_get(ns, to, "/");
            assert_eq!((server.as_str(), String::from_utf8_lossy(&body).as_ref()), (want, format!("{want}\n").as_str()), "{what} {i}");
            (port, want)
        })
        .collect()
}

/// An HTTP/1.0 GET from `ns`: the client port, the X-Server header, the body.
pub fn http_get(ns: &str, to: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    http_get_within(ns, to, path, IO_TIMEOUT).unwrap_or_else(|e| panic!("{e}"))
}

/// [`http_get`] with `timeout` for each socket operation; what went wrong
/// as an error.
pub fn http_get_within(ns: &str, to: SocketAddr, path: &str, timeout: Duration) -> Result<(u16, String, Vec<u8>), String> {
    let mut s = connect_within(ns, to, timeout).map_err(|e| format!("connect {to} from {ns}: {e}"))?;
    let port = s.local_addr().map_err(|e| e.to_string())?.port();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {to}\r\n\r\n").map_err(|e| format!("GET {path} from port {port}: {e}"))?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).map_err(|e| format!("GET {path} from port {port}: {e} after {} bytes", resp.len()))?;
    let end = resp.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| format!("no header in {resp:?}"))?;
    let head = String::from_utf8_lossy(&resp[..end]).into_owned();
    if !head.starts_with("HTTP/1.0 200 OK\r\n") {
        return Err(format!("GET {path} from port {port}: {head}"));
    }
    let server = head.lines().find_map(|l| l.strip_prefix("X-Server: ")).unwrap_or("").to_string();
    Ok((port, server, resp[end + 4..].to_vec()))
}

/// A long-lived line-echo connection.
pub struct Echo {
    /// The connection.
    pub s: TcpStream,
    r: BufReader<TcpStream>,
}

impl Echo {
    /// Opens an echo connection from `ns` to `to` (panics on failure).
    pub fn open(ns: &str, to: SocketAddr) -> Echo {
        Echo::open_within(ns, to, IO_TIMEOUT).unwrap_or_else(|e| panic!("echo connection to {to} from {ns}: {e}"))
    }

    /// The connection's client port.
    pub fn local_port(&self) -> u16 {
        self.s.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// [`Echo::open`] with `timeout` for each socket operation.
    pub fn open_within(ns: &str, to: SocketAddr, timeout: Duration) -> std::io::Result<Echo> {
        let mut s = connect_within(ns, to, timeout)?;
        s.write_all(b"ECHO\n")?;
        let r = BufReader::new(s.try_clone()?);
        Ok(Echo { s, r })
    }

    /// Sends `msg`, returns the answer line (or the read error).
    pub fn say(&mut self, msg: &str) -> std::io::Result<String> {
        self.s.write_all(format!("{msg}\n").as_bytes())?;
        let mut line = String::new();
        match self.r.read_line(&mut line)? {
            0 => Err(ErrorKind::UnexpectedEof.into()),
            _ => Ok(line.trim_end().to_string()),
        }
    }
}

// ------------------------------------------------------------ traced client

/// What one traced HTTP GET ([`http_get_traced`]) did.
#[derive(Clone, Debug)]
pub struct GetTrace {
    /// Wall-clock start and end (ns since the epoch).
    pub t0_ns: u64,
    /// See `t0_ns`.
    pub t1_ns: u64,
    /// The client port, once the connection was made.
    pub port: Option<u16>,
    /// The answering server (X-Server), or what went wrong.
    pub result: Result<String, String>,
    /// Whether the error was a reset (`ECONNRESET`) after the connection was made.
    pub reset: bool,
}

/// Nanoseconds since the epoch, now.
pub fn wall_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// [`http_get_within`] that also says when it ran, from which client port,
/// and whether it ended in a reset.
pub fn http_get_traced(ns: &str, to: SocketAddr, timeout: Duration) -> GetTrace {
    let t0_ns = wall_ns();
    let mut port = None;
    let mut reset = false;
    let result = (|| {
        let mut s = connect_within(ns, to, timeout).map_err(|e| format!("connect {to} from {ns}: {e}"))?;
        port = s.local_addr().ok().map(|a| a.port());
        let p = port.unwrap_or(0);
        let io = |e: std::io::Error, reset: &mut bool| {
            *reset = e.kind() == ErrorKind::ConnectionReset;
            e
        };
        write!(s, "GET / HTTP/1.0\r\nHost: {to}\r\n\r\n").map_err(|e| format!("GET from port {p}: {}", io(e, &mut reset)))?;
        let mut resp = Vec::new();
        s.read_to_end(&mut resp).map_err(|e| format!("GET from port {p}: {} after {} bytes", io(e, &mut reset), resp.len()))?;
        let head = String::from_utf8_lossy(&resp).into_owned();
        if !head.starts_with("HTTP/1.0 200 OK\r\n") {
            return Err(format!("GET from port {p}: {head:?}"));
        }
        Ok(head.lines().find_map(|l| l.strip_prefix("X-Server: ")).unwrap_or("").to_string())
    })();
    GetTrace { t0_ns, t1_ns: wall_ns(), port, result, reset }
}

// ------------------------------------------------------------ capture

/// One frame a [`Capture`] saw arrive on an interface.
#[derive(Clone, Debug)]
pub struct Frame {
    /// The kernel's receive time (ns since the epoch).
    pub t_ns: u64,
    /// The interface it arrived on (a port of the bridge: who sent it).
    pub ifname: String,
    /// The frame from its Ethernet header, cut at 2048 bytes.
    pub bytes: Vec<u8>,
}

/// `SIOCGSTAMPNS` (linux/sockios.h): the receive time of the last frame read.
const SIOCGSTAMPNS: libc::c_ulong = 0x8907;

/// Every IPv4 and ARP frame arriving on any interface of a namespace
/// (an `AF_PACKET` socket; frames an interface transmits are left out, so
/// each frame crossing a bridge is seen once, on the port it came in by).
pub struct Capture {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    frames: Arc<std::sync::Mutex<Vec<Frame>>>,
}

impl Capture {
    /// Starts capturing in namespace `ns`.
    pub fn start(ns: &str) -> Capture {
        let path = format!("/var/run/netns/{ns}");
        let nsfile = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let stop = Arc::new(AtomicBool::new(false));
        let frames = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (st, fr) = (stop.clone(), frames.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            // SAFETY: setns(2) with a valid network-namespace descriptor; it
            // moves only this thread, which lives for the capture.
            let rc = unsafe { libc::setns(nsfile.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            // SAFETY: socket(2) with constant arguments; the descriptor is owned below.
            let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, (libc::ETH_P_ALL as u16).to_be() as i32) };
            assert!(fd >= 0, "AF_PACKET socket: {}", std::io::Error::last_os_error());
            // SAFETY: `fd` is a fresh descriptor nothing else owns.
            let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
            let tv = libc::timeval { tv_sec: 0, tv_usec: 100_000 };
            // SAFETY: setsockopt(2) with a pointer to a live timeval of the size given.
            let rc = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    &tv as *const libc::timeval as *const libc::c_void,
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                )
            };
            assert_eq!(rc, 0, "SO_RCVTIMEO: {}", std::io::Error::last_os_error());
            ready_tx.send(()).unwrap();
            let mut buf = vec![0u8; 65536];
            let mut names: std::collections::HashMap<i32, String> = std::collections::HashMap::new();
            while !st.load(Ordering::Relaxed) {
                // SAFETY: all-zero is a valid sockaddr_ll.
                let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
                let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
                // SAFETY: recvfrom(2) into `buf` (its length given) and `sll` (its size in `len`).
                let n = unsafe {
                    libc::recvfrom(
                        fd.as_raw_fd(),
                        buf.as_mut_ptr() as *mut libc::c_void,
                        buf.len(),
                        0,
                        &mut sll as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                        &mut len,
                    )
                };
                if n < 0 || sll.sll_pkttype == libc::PACKET_OUTGOING as u8 {
                    continue;
                }
                let bytes = &buf[..n as usize];
                if bytes.len() < 14 || !matches!(u16::from_be_bytes([bytes[12], bytes[13]]), 0x0800 | 0x0806) {
                    continue;
                }
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: SIOCGSTAMPNS writes one timespec to the pointer given.
                let rc = unsafe { libc::ioctl(fd.as_raw_fd(), SIOCGSTAMPNS as _, &mut ts as *mut libc::timespec) };
                let t_ns = if rc == 0 { ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64 } else { wall_ns() };
                let ifname = names
                    .entry(sll.sll_ifindex)
                    .or_insert_with(|| {
                        let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
                        // SAFETY: if_indextoname(3) writes at most IF_NAMESIZE bytes to `name`.
                        let p = unsafe { libc::if_indextoname(sll.sll_ifindex as u32, name.as_mut_ptr()) };
                        if p.is_null() {
                            format!("if{}", sll.sll_ifindex)
                        } else {
                            // SAFETY: if_indextoname wrote a NUL-terminated name.
                            unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned()
                        }
                    })
                    .clone();
                let keep = bytes.len().min(2048);
                fr.lock().unwrap().push(Frame { t_ns, ifname, bytes: bytes[..keep].to_vec() });
            }
        });
        ready_rx.recv_timeout(Duration::from_secs(10)).expect("capture socket");
        Capture { stop, thread: Some(thread), frames }
    }

    /// The frames seen so far, in the order they arrived.
    pub fn frames(&self) -> Vec<Frame> {
        self.frames.lock().unwrap().clone()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
