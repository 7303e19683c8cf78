//! The metrics server of `--metrics ADDR:PORT`: HTTP/1.x `GET /metrics`,
//! off the forwarding path.
//!
//! An acceptor thread takes TCP connections and gives each a thread of
//! its own (at most [`HttpLimits::max_conns`] at a time; one more gets an
//! immediate `503`, counted). The connection's thread reads the request
//! head (at most [`HttpLimits::max_head`] bytes, `431` beyond) under one
//! deadline for the whole head ([`HttpLimits::deadline`]; a client that
//! sends a byte a second is cut when it passes), answers `GET /metrics`
//! (a query string is ignored) and nothing else (`404`; `400` for what is
//! not an HTTP request line), asks its [`Fetch`] for the exposition (the
//! daemon's: a snapshot taken by the forwarding loop through the control
//! queue, formatted here) and writes the reply under a write deadline,
//! then closes the connection. Every result is counted ([`HttpCounters`]).

use super::exposition::Format;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the metrics server's clients may take.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    /// Connections served at once; one more is answered `503` at once.
    pub max_conns: usize,
    /// Time from `accept` to the end of the request head.
    pub deadline: Duration,
    /// Time to write a reply.
    pub write_deadline: Duration,
    /// Largest request head (bytes).
    pub max_head: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits { max_conns: 16, deadline: Duration::from_secs(5), write_deadline: Duration::from_secs(10), max_head: 8192 }
    }
}

/// Produces the exposition in a format, or says why it cannot (`503`).
pub type Fetch = Arc<dyn Fn(Format) -> Result<String, String> + Send + Sync>;

/// The server's counters, by result.
#[derive(Debug, Default)]
pub struct HttpStats {
    ok: AtomicU64,
    not_found: AtomicU64,
    bad_request: AtomicU64,
    too_large: AtomicU64,
    deadline: AtomicU64,
    busy: AtomicU64,
    unavailable: AtomicU64,
    active: AtomicUsize,
}

/// [`HttpStats`] read at one instant (`status` → `metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HttpCounters {
    /// Scrapes answered.
    pub ok: u64,
    /// Requests for something other than `GET /metrics`.
    pub not_found: u64,
    /// Requests that were not HTTP.
    pub bad_request: u64,
    /// Request heads over the limit.
    pub too_large: u64,
    /// Clients cut at the request deadline.
    pub deadline: u64,
    /// Connections refused because the limit was being served.
    pub busy: u64,
    /// Scrapes the daemon could not answer (queue full, stopping).
    pub unavailable: u64,
}

impl HttpCounters {
    /// Every counter with its name.
    pub fn pairs(&self) -> [(&'static str, u64); 7] {
        [
            ("ok", self.ok),
            ("not_found", self.not_found),
            ("bad_request", self.bad_request),
            ("too_large", self.too_large),
            ("deadline", self.deadline),
            ("busy", self.busy),
            ("unavailable", self.unavailable),
        ]
    }
}

impl HttpStats {
    /// The counters now.
    pub fn counters(&self) -> HttpCounters {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        HttpCounters {
            ok: g(&self.ok),
            not_found: g(&self.not_found),
            bad_request: g(&self.bad_request),
            too_large: g(&self.too_large),
            deadline: g(&self.deadline),
            busy: g(&self.busy),
            unavailable: g(&self.unavailable),
        }
    }
}

/// The running server; stopped (its acceptor joined) when dropped.
pub struct MetricsServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<HttpStats>,
    addr: SocketAddr,
}

impl MetricsServer {
    /// Binds `addr` (port 0: any free port) and starts serving.
    pub fn start(addr: SocketAddr, fetch: Fetch, limits: HttpLimits) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(HttpStats::default());
        let (st, s2) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("lvsnic-metrics".into())
            .spawn(move || accept_loop(listener, fetch, limits, s2, st))?;
        Ok(MetricsServer { stop, thread: Some(thread), stats, addr })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counters.
    pub fn stats(&self) -> &Arc<HttpStats> {
        &self.stats
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: TcpListener, fetch: Fetch, limits: HttpLimits, stats: Arc<HttpStats>, stop: Arc<AtomicBool>) {
    super::client::accept_until(listener.as_raw_fd(), &stop, || listener.accept().map(|(s, _)| s), |s| {
        if stats.active.load(Ordering::SeqCst) >= limits.max_conns {
            stats.busy.fetch_add(1, Ordering::Relaxed);
            refuse(&s);
            return;
        }
        stats.active.fetch_add(1, Ordering::SeqCst);
        let (f, st) = (fetch.clone(), stats.clone());
        let s2 = s.try_clone();
        if std::thread::Builder::new().name("lvsnic-metrics-client".into()).spawn(move || serve(s, f, limits, st)).is_err() {
            stats.active.fetch_sub(1, Ordering::SeqCst);
            stats.busy.fetch_add(1, Ordering::Relaxed);
            if let Ok(s) = s2 {
                refuse(&s);
            }
        }
    });
}

/// The `503` of a connection beyond the limit, written without waiting.
fn refuse(s: &TcpStream) {
    let _ = s.set_nonblocking(true);
    let _ = (&*s).write(&response(503, "text/plain; charset=utf-8", b"too many metrics clients; try again\n"));
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// A whole HTTP/1.1 response that closes the connection.
fn response(code: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason_phrase(code),
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// Decrements a counter when dropped.
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why no request head was read.
#[derive(Debug, PartialEq, Eq)]
enum ReadFail {
    TooLarge,
    Deadline,
    /// Closed or failed before the head ended.
    Gone,
}

/// Reads the request head (to its empty line) before `deadline`.
fn read_head(mut s: &TcpStream, deadline: Instant, max: usize) -> Result<Vec<u8>, ReadFail> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        if let Some(end) = head_end(&head) {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() > max {
            return Err(ReadFail::TooLarge);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(ReadFail::Deadline);
        }
        s.set_read_timeout(Some((deadline - now).max(Duration::from_millis(1)))).map_err(|_| ReadFail::Gone)?;
        match s.read(&mut buf) {
            Ok(0) => return Err(ReadFail::Gone),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {}
            Err(_) => return Err(ReadFail::Gone),
        }
    }
}

/// Where the head ends (its empty line: CRLF CRLF, or LF LF).
fn head_end(b: &[u8]) -> Option<usize> {
    let crlf = b.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = b.windows(2).position(|w| w == b"\n\n");
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A parsed request head: method, path (without its query), `Accept`.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    method: String,
    path: String,
    accept: Option<String>,
}

fn parse_head(head: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut rl = lines.next()?.split(' ');
    let (method, target, version) = (rl.next()?, rl.next()?, rl.next()?);
    if rl.next().is_some() || !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return None;
    }
    let mut accept = None;
    for l in lines {
        let (k, v) = l.split_once(':')?;
        if k.trim().eq_ignore_ascii_case("accept") {
            accept = Some(v.trim().to_string());
        }
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    Some(Head { method: method.to_string(), path: path.to_string(), accept })
}

fn serve(s: TcpStream, fetch: Fetch, limits: HttpLimits, stats: Arc<HttpStats>) {
    // Formatting a scrape of many services: at idle priority (never starved).
    let _bulk = crate::bulk::enter();
    let _active = Held(&stats.active);
    let _ = s.set_nonblocking(false);
    let count = |c: &AtomicU64| {
        c.fetch_add(1, Ordering::Relaxed);
    };
    let text = "text/plain; charset=utf-8";
    let reply = match read_head(&s, Instant::now() + limits.deadline, limits.max_head) {
        Err(ReadFail::TooLarge) => {
            count(&stats.too_large);
            response(431, text, format!("request head over {} bytes\n", limits.max_head).as_bytes())
        }
        Err(ReadFail::Deadline) => {
            count(&stats.deadline);
            return;
        }
        Err(ReadFail::Gone) => return,
        Ok(head) => match parse_head(&head) {
            None => {
                count(&stats.bad_request);
                response(400, text, b"not an HTTP/1.x request\n")
            }
            Some(h) if h.method != "GET" || h.path != "/metrics" => {
                count(&stats.not_found);
                response(404, text, b"only GET /metrics is served here\n")
            }
            Some(h) => {
                let format = Format::from_accept(h.accept.as_deref());
                match fetch(format) {
                    Ok(body) => {
                        count(&stats.ok);
                        response(200, format.content_type(), body.as_bytes())
                    }
                    Err(why) => {
                        count(&stats.unavailable);
                        response(503, text, format!("{why}\n").as_bytes())
                    }
                }
            }
        },
    };
    let end = Instant::now() + limits.write_deadline;
    let mut off = 0;
    let mut w = &s;
    while off < reply.len() {
        let now = Instant::now();
        if now >= end || w.set_write_timeout(Some((end - now).max(Duration::from_millis(1)))).is_err() {
            return;
        }
        match w.write(&reply[off..]) {
            Ok(0) => return,
            Ok(n) => off += n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {}
            Err(_) => return,
        }
    }
    // Closing with unread bytes would reset the connection, and the
    // client might lose the reply: what the client still sends is read
    // (and thrown away) for a moment, up to a bound.
    let _ = s.shutdown(std::net::Shutdown::Write);
    let end = Instant::now() + Duration::from_secs(1);
    let (mut left, mut buf, mut r) = (64 * 1024usize, [0u8; 4096], &s);
    while left > 0 {
        let now = Instant::now();
        if now >= end || r.set_read_timeout(Some((end - now).max(Duration::from_millis(1)))).is_err() {
            return;
        }
        match r.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    fn server(limits: HttpLimits) -> MetricsServer {
        let fetch: Fetch = Arc::new(|f: Format| Ok(format!("# format {f:?}\n")));
        MetricsServer::start("127.0.0.1:0".parse().unwrap(), fetch, limits).unwrap()
    }

    /// Sends `req` and reads the whole reply (the server closes).
    fn exchange(addr: SocketAddr, req: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
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

    #[test]
    fn get_metrics_is_answered_in_the_format_asked_for() {
        let m = server(HttpLimits::default());
        let r = exchange(m.local_addr(), b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\n# format Text\n"), "{r}");
        assert!(r.contains("Content-Length: 14\r\n"), "{r}");
        let r = exchange(m.local_addr(), b"GET /metrics?x=1 HTTP/1.0\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\n\n");
        assert!(r.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"), "{r}");
        assert!(r.ends_with("# format OpenMetrics\n"), "{r}");
        assert_eq!(m.stats().counters().ok, 2);
    }

    #[test]
    fn anything_but_get_metrics_is_not_found_or_bad() {
        let m = server(HttpLimits::default());
        for req in [&b"GET / HTTP/1.1\r\n\r\n"[..], b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", b"GET /metricsx HTTP/1.1\r\n\r\n"] {
            let r = exchange(m.local_addr(), req);
            assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"), "{r}");
        }
        for req in [&b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"[..], b"GET /metrics\r\n\r\n", b"GET /metrics SPDY/3\r\n\r\n", b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n"] {
            let r = exchange(m.local_addr(), req);
            assert!(r.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{req:?}: {r}");
        }
        let c = m.stats().counters();
        assert_eq!((c.not_found, c.bad_request, c.ok), (3, 4, 0));
    }

    #[test]
    fn a_head_too_large_is_refused_and_a_slow_client_is_cut_at_the_deadline() {
        let limits = HttpLimits { deadline: Duration::from_millis(300), max_head: 1000, ..Default::default() };
        let m = server(limits);
        let mut big = b"GET /metrics HTTP/1.1\r\n".to_vec();
        big.extend(std::iter::repeat_n(b'a', 5000));
        let r = exchange(m.local_addr(), &big);
        assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
        // One byte every 50 ms: never a whole head.
        let mut s = TcpStream::connect(m.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let w = s.try_clone().unwrap();
        let feeder = std::thread::spawn(move || {
            let mut w = w;
            for b in b"GET /metrics HTTP/1.1\r\nX: ".iter().cycle().take(100) {
                if w.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out); // closed at the deadline, no reply
        assert!(out.is_empty());
        assert!(wait(|| m.stats().counters().deadline == 1));
        let _ = feeder.join();
        assert_eq!(m.stats().counters().too_large, 1);
    }

    #[test]
    fn connections_beyond_the_limit_get_503_and_the_server_still_serves() {
        let limits = HttpLimits { max_conns: 2, deadline: Duration::from_secs(3), ..Default::default() };
        let m = server(limits);
        let idle: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(m.local_addr()).unwrap()).collect();
        assert!(wait(|| m.stats.active.load(Ordering::SeqCst) == 2));
        let s = TcpStream::connect(m.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut line = String::new();
        std::io::BufReader::new(s).read_line(&mut line).unwrap();
        assert_eq!(line, "HTTP/1.1 503 Service Unavailable\r\n");
        assert_eq!(m.stats().counters().busy, 1);
        drop(idle);
        assert!(wait(|| m.stats.active.load(Ordering::SeqCst) == 0));
        assert!(exchange(m.local_addr(), b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 OK"));
    }

    #[test]
    fn a_daemon_that_cannot_answer_is_a_503() {
        let fetch: Fetch = Arc::new(|_| Err("the daemon is stopping".into()));
        let m = MetricsServer::start("127.0.0.1:0".parse().unwrap(), fetch, HttpLimits::default()).unwrap();
        let r = exchange(m.local_addr(), b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 503 Service Unavailable\r\n") && r.ends_with("the daemon is stopping\n"), "{r}");
        assert_eq!(m.stats().counters().unavailable, 1);
    }

    #[test]
    fn an_address_in_use_is_an_error_not_a_panic() {
        let m = server(HttpLimits::default());
        let e = MetricsServer::start(m.local_addr(), Arc::new(|_| Ok(String::new())), HttpLimits::default()).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }
}
