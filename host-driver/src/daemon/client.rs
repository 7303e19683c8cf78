//! Control clients, served off the forwarding path.
//!
//! An acceptor thread takes connections on the control socket and gives
//! each client a thread of its own (at most [`ClientLimits::max_clients`]
//! at a time; one more gets an immediate one-line refusal, counted). The
//! client's thread reads its one request line under a deadline for the
//! whole request ([`ClientLimits::deadline`], not per read: a client that
//! sends a byte a second is cut when it passes), refuses a request larger
//! than [`ClientLimits::max_request`] with "request too large (N bytes,
//! limit M)", parses it, checks its sender ([`super::socket::authorize`]) and hands it to
//! the forwarding loop through a bounded queue ([`Inbox`], woken through an
//! eventfd). The loop answers through a channel of the job's own
//! ([`Part`]); a `-L -c` listing arrives as slices of rows, which the
//! client's thread formats. The reply is written under a write deadline.
//!
//! So a slow or hostile client costs its own thread only: the forwarding
//! loop never reads from or writes to a client socket.

use super::proto::{self, Reply, Request};
use super::sys;
use crate::control::ConnText;
use crate::invocation::Output;
use lvsnic_model::rules::ipvsadm::ConnListing;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the control socket's clients may take.
#[derive(Clone, Copy, Debug)]
pub struct ClientLimits {
    /// Clients served at once; one more is refused at once.
    pub max_clients: usize,
    /// Time from `accept` to the end of the request line.
    pub deadline: Duration,
    /// Time to write a reply.
    pub write_deadline: Duration,
    /// Largest request (bytes, with its newline).
    pub max_request: u64,
    /// How much of a too-large request is read (and thrown away) before
    /// the reply, so that a client still writing it can read the reply.
    pub discard_cap: u64,
    /// `--socket-group`: its members may list ([`super::socket::authorize`]).
    pub socket_group: Option<u32>,
}

impl Default for ClientLimits {
    fn default() -> Self {
        ClientLimits {
            max_clients: 128,
            deadline: Duration::from_secs(5),
            write_deadline: Duration::from_secs(30),
            max_request: proto::MAX_REQUEST,
            discard_cap: 4 * proto::MAX_REQUEST,
            socket_group: None,
        }
    }
}

/// What the forwarding loop sends back for one request.
pub enum Part {
    /// Rows of a `-L -c` listing (with `--persistent-conn`?), formatted by
    /// the client's thread; the listing's text comes before the reply's
    /// stdout.
    Conns(Vec<ConnListing>, bool),
    /// The reply; the last part.
    Done(Reply),
    /// The reply, made by the client's thread from a copy of the tables
    /// (a listing, `-S`, `status`); the last part.
    Later(Box<dyn FnOnce() -> Reply + Send>),
}

/// One request for the forwarding loop, with where its reply goes.
pub struct Job {
    /// The request, parsed and authorized.
    pub req: Request,
    /// Where the reply goes (the client may be gone: sends can fail).
    pub reply: mpsc::Sender<Part>,
}

/// Counters of the control socket's clients (`status` → `control`).
#[derive(Debug, Default)]
pub struct ClientStats {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Connections refused because [`ClientLimits::max_clients`] were being served.
    pub refused_busy: AtomicU64,
    /// Clients cut at the request deadline.
    pub deadline_cut: AtomicU64,
    /// Requests refused as too large.
    pub too_large: AtomicU64,
    /// Requests that were not one JSON request.
    pub bad_request: AtomicU64,
    /// Requests refused by [`super::socket::authorize`].
    pub unauthorized: AtomicU64,
    /// Requests refused because the queue to the forwarding loop was full.
    pub queue_full: AtomicU64,
    /// Clients being served now.
    pub active: AtomicUsize,
    /// Requests handed to the forwarding loop whose reply is not yet written.
    pub pending: AtomicUsize,
}

impl ClientStats {
    /// The counters now.
    pub fn counters(&self) -> ClientCounters {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClientCounters {
            accepted: g(&self.accepted),
            refused_busy: g(&self.refused_busy),
            deadline_cut: g(&self.deadline_cut),
            too_large: g(&self.too_large),
            bad_request: g(&self.bad_request),
            unauthorized: g(&self.unauthorized),
            queue_full: g(&self.queue_full),
            active: self.active.load(Ordering::Relaxed),
        }
    }
}

/// [`ClientStats`] read at one instant (`status` → `control`).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct ClientCounters {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections refused because [`ClientLimits::max_clients`] were being served.
    pub refused_busy: u64,
    /// Clients cut at the request deadline.
    pub deadline_cut: u64,
    /// Requests refused as too large.
    pub too_large: u64,
    /// Requests that were not one JSON request.
    pub bad_request: u64,
    /// Requests refused by [`super::socket::authorize`].
    pub unauthorized: u64,
    /// Requests refused because the queue to the forwarding loop was full.
    pub queue_full: u64,
    /// Clients being served now.
    pub active: usize,
}

/// The forwarding loop's end of the control queue.
pub struct Inbox {
    rx: Receiver<Job>,
    wake: Arc<sys::EventFd>,
}

impl Inbox {
    /// The descriptor to poll: readable when jobs were queued.
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.wake.fd()
    }

    /// The next queued job, if any (clears the wake-up first, so that a
    /// job queued after this call wakes the loop again).
    pub fn next(&self) -> Option<Job> {
        self.wake.drain();
        self.rx.try_recv().ok()
    }
}

/// The acceptor thread; stopped and joined when dropped.
pub struct Acceptor {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<ClientStats>,
    submitter: Submitter,
}

/// How the daemon's other threads (the metrics server) hand a request to
/// the forwarding loop: through the same bounded queue as the clients'.
#[derive(Clone)]
pub struct Submitter {
    tx: SyncSender<Job>,
    wake: Arc<sys::EventFd>,
    stats: Arc<ClientStats>,
}

impl Submitter {
    /// Queues `req` without waiting; the channel its reply arrives on. A
    /// full queue is refused (and counted in `queue_full`), as is a
    /// stopping daemon.
    pub fn submit(&self, req: Request) -> Result<Receiver<Part>, &'static str> {
        let (tx, rx) = mpsc::channel();
        match self.tx.try_send(Job { req, reply: tx }) {
            Ok(()) => {
                self.wake.notify();
                Ok(rx)
            }
            Err(TrySendError::Full(_)) => {
                self.stats.queue_full.fetch_add(1, Ordering::Relaxed);
                Err("the control queue is full")
            }
            Err(TrySendError::Disconnected(_)) => Err("the daemon is stopping"),
        }
    }
}

impl Acceptor {
    /// The clients' counters.
    pub fn stats(&self) -> &Arc<ClientStats> {
        &self.stats
    }

    /// A handle that queues requests for the forwarding loop.
    pub fn submitter(&self) -> Submitter {
        self.submitter.clone()
    }

    /// Stops accepting, then waits up to `grace` for the replies of
    /// requests already handed to the loop to be written (a `shutdown`
    /// request's own reply among them). Drop `inbox` first: requests still
    /// queued are then answered "the daemon stopped".
    pub fn stop(mut self, grace: Duration) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let t0 = Instant::now();
        while self.stats.pending.load(Ordering::SeqCst) > 0 && t0.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts serving `listener` (a non-blocking listening socket): the
/// acceptor, and the queue its clients' requests arrive on.
pub fn start(listener: UnixListener, limits: ClientLimits) -> io::Result<(Acceptor, Inbox)> {
    let wake = Arc::new(sys::EventFd::new()?);
    // Each client has at most one job queued: the queue holds them all.
    let (tx, rx) = mpsc::sync_channel(limits.max_clients.max(1));
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(ClientStats::default());
    listener.set_nonblocking(true)?;
    let submitter = Submitter { tx: tx.clone(), wake: wake.clone(), stats: stats.clone() };
    let ctx = Ctx { tx, wake: wake.clone(), stats: stats.clone(), limits };
    let st = stop.clone();
    let thread = std::thread::Builder::new()
        .name("lvsnic-accept".into())
        .spawn(move || accept_loop(listener, ctx, st))?;
    Ok((Acceptor { stop, thread: Some(thread), stats, submitter }, Inbox { rx, wake }))
}

/// What every client thread shares.
#[derive(Clone)]
struct Ctx {
    tx: SyncSender<Job>,
    wake: Arc<sys::EventFd>,
    stats: Arc<ClientStats>,
    limits: ClientLimits,
}

/// The accept loop of the control socket and of the metrics server: waits
/// for connections (polls of 100 ms, so that `stop` and a shutdown are
/// seen, and [`crate::bulk::watch`] runs) and hands each accepted one to
/// `each`, until either.
pub(super) fn accept_until<S>(fd: std::os::fd::RawFd, stop: &AtomicBool, mut accept: impl FnMut() -> io::Result<S>, mut each: impl FnMut(S)) {
    while !stop.load(Ordering::SeqCst) && !sys::shutdown_requested() {
        // Bulk threads starved at idle priority go back to normal.
        crate::bulk::watch(Instant::now());
        match sys::poll_readable(&[fd], 100) {
            Ok(r) if r[0] => {}
            Ok(_) => continue,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        }
        loop {
            match accept() {
                Ok(s) => each(s),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: all taken; anything else (EMFILE...): try again
                // at the next poll rather than stop serving.
                Err(_) => break,
            }
        }
    }
}

fn accept_loop(listener: UnixListener, ctx: Ctx, stop: Arc<AtomicBool>) {
    accept_until(listener.as_raw_fd(), &stop, || listener.accept().map(|(s, _)| s), |s| {
        ctx.stats.accepted.fetch_add(1, Ordering::Relaxed);
        if ctx.stats.active.load(Ordering::SeqCst) >= ctx.limits.max_clients {
            ctx.stats.refused_busy.fetch_add(1, Ordering::Relaxed);
            refuse(&s, ctx.limits.max_clients);
            return;
        }
        ctx.stats.active.fetch_add(1, Ordering::SeqCst);
        let c = ctx.clone();
        let s2 = s.try_clone();
        if std::thread::Builder::new().name("lvsnic-client".into()).spawn(move || serve_client(s, c)).is_err() {
            ctx.stats.active.fetch_sub(1, Ordering::SeqCst);
            ctx.stats.refused_busy.fetch_add(1, Ordering::Relaxed);
            if let Ok(s) = s2 {
                refuse(&s, ctx.limits.max_clients);
            }
        }
    });
}

/// The one-line refusal of a client beyond the limit, written without
/// waiting (a client that does not read it loses it).
fn refuse(s: &UnixStream, max: usize) {
    let _ = s.set_nonblocking(true);
    let r = bad(format!("too many control clients ({max} being served); try again"));
    let mut text = serde_json::to_string(&r).unwrap_or_default();
    text.push('\n');
    let _ = (&*s).write(text.as_bytes());
}

fn bad(msg: String) -> Reply {
    Output { stdout: String::new(), stderr: format!("lvsnic daemon: {msg}\n"), exit: 2 }
}

/// Decrements a counter when dropped.
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why no request was read.
#[derive(Debug)]
enum ReadFail {
    /// The request passed the limit; bytes received in all.
    TooLarge(u64),
    /// The deadline passed; bytes received.
    Deadline(u64),
    Io(io::Error),
}

/// Reads one request line (up to and with its `\n`, or to end of file)
/// before `deadline`.
fn read_request(mut s: &UnixStream, deadline: Instant, l: &ClientLimits) -> Result<Vec<u8>, ReadFail> {
    let mut req = Vec::new();
    let mut total: u64 = 0;
    let mut too_large = false;
    let mut buf = vec![0u8; 65536];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(if too_large { ReadFail::TooLarge(total) } else { ReadFail::Deadline(total) });
        }
        let left = (deadline - now).max(Duration::from_millis(1));
        s.set_read_timeout(Some(left)).map_err(ReadFail::Io)?;
        let n = match s.read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {
                continue
            }
            Err(e) => return Err(ReadFail::Io(e)),
        };
        if n == 0 {
            return if too_large { Err(ReadFail::TooLarge(total)) } else { Ok(req) };
        }
        let nl = buf[..n].iter().position(|&b| b == b'\n');
        let take = nl.map_or(n, |i| i + 1);
        total += take as u64;
        if !too_large {
            if total > l.max_request {
                too_large = true;
                req = Vec::new();
            } else {
                req.extend_from_slice(&buf[..take]);
            }
        }
        if nl.is_some() {
            return if too_large { Err(ReadFail::TooLarge(total)) } else { Ok(req) };
        }
        if too_large && total >= l.discard_cap {
            return Err(ReadFail::TooLarge(total));
        }
    }
}

fn serve_client(s: UnixStream, ctx: Ctx) {
    // Formatting a reply can be seconds of CPU: at idle priority (never starved).
    let _bulk = crate::bulk::enter();
    let _active = Held(&ctx.stats.active);
    let deadline = Instant::now() + ctx.limits.deadline;
    let _ = s.set_nonblocking(false);
    let st = &ctx.stats;
    let count = |c: &AtomicU64| {
        c.fetch_add(1, Ordering::Relaxed);
    };
    let reply = match read_request(&s, deadline, &ctx.limits) {
        Err(ReadFail::TooLarge(n)) => {
            count(&st.too_large);
            bad(format!("request too large ({n} bytes, limit {})", ctx.limits.max_request))
        }
        Err(ReadFail::Deadline(n)) => {
            count(&st.deadline_cut);
            bad(format!("no complete request within {} s ({n} bytes received)", ctx.limits.deadline.as_secs_f64()))
        }
        Err(ReadFail::Io(e)) => bad(format!("reading the request: {e}")),
        Ok(bytes) => match std::str::from_utf8(&bytes) {
            Err(_) => {
                count(&st.bad_request);
                bad("reading the request: stream did not contain valid UTF-8".into())
            }
            Ok(line) => match serde_json::from_str::<Request>(line) {
                Err(e) => {
                    count(&st.bad_request);
                    bad(format!("bad request: {e}"))
                }
                Ok(req) => {
                    // The peer's credentials, read once, checked here before
                    // the request is queued (socket::authorize counts and
                    // logs a refusal).
                    let peer = super::socket::Peer::of(&s, ctx.limits.socket_group);
                    match super::socket::authorize(&peer, &req) {
                        Err(refused) => {
                            count(&st.unauthorized);
                            refused
                        }
                        Ok(()) => {
                            st.pending.fetch_add(1, Ordering::SeqCst);
                            let _pending = Held(&st.pending);
                            exchange(&ctx, req, &s, &peer);
                            return;
                        }
                    }
                }
            },
        },
    };
    write_reply(&s, &reply, ctx.limits.write_deadline);
}

/// Hands `req` to the forwarding loop, waits for its reply and writes it
/// to `s`. A `-L -c` listing is written as its slices arrive (the JSON
/// reply's `stdout` string streamed: escaping a string piece by piece is
/// escaping it whole), so that no copy of a listing of millions of rows is
/// held in memory.
fn exchange(ctx: &Ctx, req: Request, s: &UnixStream, peer: &super::socket::Peer) {
    // Changes, and ipvsadm lines that are not listings (refused ones
    // included: who tried what is in the log too).
    let attempt = match &req {
        Request::Ipvsadm { argv, .. } => !argv.is_empty() && !super::socket::ipvsadm_read_only(argv),
        other => other.changes_state(),
    };
    let change = attempt.then(|| change_text(&req));
    let (tx, rx) = mpsc::channel();
    let refused = match ctx.tx.try_send(Job { req, reply: tx }) {
        Ok(()) => {
            ctx.wake.notify();
            None
        }
        Err(TrySendError::Full(_)) => {
            ctx.stats.queue_full.fetch_add(1, Ordering::Relaxed);
            Some(bad("the control queue is full; try again".into()))
        }
        Err(TrySendError::Disconnected(_)) => Some(bad("the daemon is stopping".into())),
    };
    if let Some(r) = refused {
        write_reply(s, &r, ctx.limits.write_deadline);
        return;
    }
    let mut out = Stream { s, end: None, limit: ctx.limits.write_deadline };
    let mut text = ConnText::default();
    let mut started = false;
    let escaped = |t: &str| {
        let j = serde_json::to_string(t).unwrap_or_default();
        j[1..j.len() - 1].to_string()
    };
    let r = loop {
        match rx.recv() {
            Ok(Part::Conns(rows, persistent)) => {
                let chunk = text.chunk(&rows, persistent);
                if !started {
                    started = true;
                    if !out.write(b"{\"stdout\":\"") {
                        return; // gone: the listing stops (the loop's sends fail)
                    }
                }
                if !out.write(escaped(&chunk).as_bytes()) {
                    return;
                }
            }
            Ok(Part::Done(r)) => break r,
            Ok(Part::Later(f)) => break f(),
            Err(_) => {
                let r = bad("the daemon stopped before replying".into());
                if started {
                    let stderr = serde_json::to_string(&r.stderr).unwrap_or_default();
                    out.write(format!("\",\"stderr\":{stderr},\"exit\":{}}}\n", r.exit).as_bytes());
                } else {
                    write_reply(s, &r, ctx.limits.write_deadline);
                }
                return;
            }
        }
    };
    if let Some(what) = change {
        log_change(peer, &what, &r);
    }
    if !started {
        write_reply(s, &r, ctx.limits.write_deadline);
        return;
    }
    let stderr = serde_json::to_string(&r.stderr).unwrap_or_default();
    let tail = format!("{}\",\"stderr\":{stderr},\"exit\":{}}}\n", escaped(&r.stdout), r.exit);
    out.write(tail.as_bytes());
}

/// A change request in the event log: the command line (at most 200
/// characters, control characters left out), `-R` with its line count.
fn change_text(req: &Request) -> String {
    let clip = |t: String| t.chars().filter(|c| !c.is_control()).take(200).collect::<String>();
    match req {
        Request::Ipvsadm { argv, stdin, .. } => {
            let mut t = clip(format!("ipvsadm {}", argv.join(" ")));
            if let Some(s) = stdin {
                t.push_str(&format!(" ({} lines)", s.lines().count()));
            }
            t
        }
        Request::Vip { state: Some(st), vips } => {
            clip(format!("vip {} {}", format!("{st:?}").to_lowercase(), vips.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ")))
        }
        Request::Reload { health: Some(_), .. } => "keepalived --load".into(),
        Request::Reload { .. } => "reload".into(),
        Request::Health { .. } => "health".into(),
        Request::SyncDaemons { .. } => "sync daemons".into(),
        Request::Vip { state: None, .. } | Request::Status | Request::Wire { .. } | Request::Shutdown | Request::Checkers | Request::Metrics { .. } => {
            "request".into()
        }
    }
}

/// `rule_change`: who (the peer's uid and pid, from `SO_PEERCRED`), what,
/// and how it ended.
fn log_change(peer: &super::socket::Peer, what: &str, r: &Reply) {
    let (uid, pid) = peer.cred.map(|c| (c.uid.to_string(), c.pid.to_string())).unwrap_or_default();
    let lvl = if r.exit == 0 { log::Level::Info } else { log::Level::Warn };
    let err = r.stderr.lines().next().unwrap_or("");
    crate::logging::event(lvl, "rule_change", &[("uid", &uid), ("pid", &pid), ("command", what), ("exit", &r.exit.to_string()), ("error", err)]);
}

/// A reply written in pieces, under one write deadline from its first piece.
struct Stream<'a> {
    s: &'a UnixStream,
    end: Option<Instant>,
    limit: Duration,
}

impl Stream<'_> {
    /// Writes `bytes`; false when the client is gone or the deadline passed.
    fn write(&mut self, bytes: &[u8]) -> bool {
        let end = *self.end.get_or_insert_with(|| Instant::now() + self.limit);
        write_until(self.s, bytes, end)
    }
}

/// Writes `reply` as one JSON line, giving up when `limit` has passed.
fn write_reply(s: &UnixStream, reply: &Reply, limit: Duration) {
    let mut text = serde_json::to_string(reply).unwrap_or_default();
    text.push('\n');
    write_until(s, text.as_bytes(), Instant::now() + limit);
}

/// Writes all of `bytes` before `end`; whether it did.
fn write_until(mut s: &UnixStream, bytes: &[u8], end: Instant) -> bool {
    let mut off = 0;
    while off < bytes.len() {
        let now = Instant::now();
        if now >= end {
            return false;
        }
        if s.set_write_timeout(Some((end - now).max(Duration::from_millis(1)))).is_err() {
            return false;
        }
        match s.write(&bytes[off..]) {
            Ok(0) => return false,
            Ok(n) => off += n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {}
            Err(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};

    fn sock_dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("lvsnic-client-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join("s.sock")
    }

    /// A loop stand-in: answers every job with its request's debug text
    /// until `n` jobs were answered.
    fn answer(inbox: Inbox, n: usize) -> JoinHandle<Inbox> {
        std::thread::spawn(move || {
            let mut done = 0;
            while done < n {
                let _ = sys::poll_readable(&[inbox.fd()], 50);
                while let Some(j) = inbox.next() {
                    let _ = j.reply.send(Part::Done(Output { stdout: format!("{:?}\n", j.req), ..Default::default() }));
                    done += 1;
                }
            }
            inbox
        })
    }

    fn reply_of(s: UnixStream) -> Reply {
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    #[test]
    fn a_request_is_answered_through_the_queue() {
        let p = sock_dir("ok");
        let (acc, inbox) = start(UnixListener::bind(&p).unwrap(), ClientLimits::default()).unwrap();
        let t = answer(inbox, 1);
        let r = proto::call(&p, &Request::Status).unwrap();
        assert_eq!(r.stdout, "Status\n");
        let _inbox = t.join().unwrap();
        assert_eq!(acc.stats().accepted.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_listing_sent_in_slices_is_written_as_one_reply() {
        use lvsnic_model::rules::ipvsadm::format_connections;
        use lvsnic_model::rules::Protocol;
        let row = |i: u32| ConnListing {
            proto: Protocol::Tcp,
            caddr: std::net::IpAddr::V4(std::net::Ipv4Addr::from(0xc633_6400 + i)),
            cport: 40000,
            vaddr: std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 100)),
            vport: 80,
            daddr: std::net::IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 10, 1)),
            dport: 80,
            state: "ESTABLISHED\\\"".into(), // characters JSON escapes
            expires_secs: i,
            pe_name: None,
            pe_data: None,
        };
        let rows: Vec<ConnListing> = (0..300).map(row).collect();
        let p = sock_dir("slices");
        let (_acc, inbox) = start(UnixListener::bind(&p).unwrap(), ClientLimits::default()).unwrap();
        let chunks = rows.clone();
        let t = std::thread::spawn(move || loop {
            let _ = sys::poll_readable(&[inbox.fd()], 50);
            if let Some(j) = inbox.next() {
                for c in chunks.chunks(7).chain([&[][..]]) {
                    j.reply.send(Part::Conns(c.to_vec(), false)).unwrap();
                }
                let _ = j.reply.send(Part::Done(Output { stderr: "e\n".into(), exit: 0, ..Default::default() }));
                return;
            }
        });
        let req = Request::Ipvsadm { prog: None, argv: vec!["-L".into(), "-n".into(), "-c".into()], stdin: None };
        let mut s = UnixStream::connect(&p).unwrap();
        s.write_all((serde_json::to_string(&req).unwrap() + "\n").as_bytes()).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let whole = Output { stdout: format_connections(&rows, false), stderr: "e\n".into(), exit: 0 };
        assert_eq!(text, serde_json::to_string(&whole).unwrap() + "\n");
        t.join().unwrap();
    }

    #[test]
    fn a_slow_client_is_cut_at_the_whole_request_deadline() {
        let p = sock_dir("slow");
        let limits = ClientLimits { deadline: Duration::from_millis(300), ..Default::default() };
        let (acc, _inbox) = start(UnixListener::bind(&p).unwrap(), limits).unwrap();
        let s = UnixStream::connect(&p).unwrap();
        // One byte every 50 ms: each read is well within any per-read
        // timeout, but the request never ends.
        let w = s.try_clone().unwrap();
        let feeder = std::thread::spawn(move || {
            let mut w = w;
            for b in br#"{"op":"status""#.iter().cycle().take(100) {
                if w.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let r = reply_of(s);
        assert!(r.stderr.starts_with("lvsnic daemon: no complete request within 0.3 s ("), "{r:?}");
        assert_eq!(r.exit, 2);
        assert_eq!(acc.stats().deadline_cut.load(Ordering::Relaxed), 1);
        let _ = feeder.join();
    }

    #[test]
    fn a_request_too_large_is_read_to_its_end_and_refused_with_its_size() {
        let p = sock_dir("large");
        let limits = ClientLimits { max_request: 1000, discard_cap: 1 << 20, ..Default::default() };
        let (acc, _inbox) = start(UnixListener::bind(&p).unwrap(), limits).unwrap();
        let req = Request::Ipvsadm { prog: None, argv: vec!["-R".into()], stdin: Some("x".repeat(200_000)) };
        let line = serde_json::to_string(&req).unwrap() + "\n";
        // Through the client's own `call`: it writes the whole request
        // before it reads, so it gets the reply only if the daemon read it all.
        let r = proto::call(&p, &req).unwrap();
        assert_eq!(r.stderr, format!("lvsnic daemon: request too large ({} bytes, limit 1000)\n", line.len()));
        assert_eq!(r.exit, 2);
        assert_eq!(acc.stats().too_large.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn clients_beyond_the_limit_are_refused_at_once_and_counted() {
        let p = sock_dir("busy");
        let limits = ClientLimits { max_clients: 2, deadline: Duration::from_secs(3), ..Default::default() };
        let (acc, _inbox) = start(UnixListener::bind(&p).unwrap(), limits).unwrap();
        let idle: Vec<UnixStream> = (0..2).map(|_| UnixStream::connect(&p).unwrap()).collect();
        assert!(wait(|| acc.stats().active.load(Ordering::SeqCst) == 2));
        let s = UnixStream::connect(&p).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let r = reply_of(s);
        assert_eq!(r.stderr, "lvsnic daemon: too many control clients (2 being served); try again\n");
        assert_eq!(acc.stats().refused_busy.load(Ordering::Relaxed), 1);
        drop(idle);
        assert!(wait(|| acc.stats().active.load(Ordering::SeqCst) == 0));
    }

    #[test]
    fn a_client_gone_before_the_reply_does_not_stop_the_others() {
        let p = sock_dir("gone");
        let (_acc, inbox) = start(UnixListener::bind(&p).unwrap(), ClientLimits::default()).unwrap();
        let t = answer(inbox, 2);
        {
            let mut s = UnixStream::connect(&p).unwrap();
            s.write_all(b"{\"op\":\"checkers\"}\n").unwrap();
        } // closed without reading
        let r = proto::call(&p, &Request::Checkers).unwrap();
        assert_eq!(r.stdout, "Checkers\n");
        let _ = t.join();
    }

    fn wait(mut f: impl FnMut() -> bool) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}
