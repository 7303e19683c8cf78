//! `lvsnic daemon --metrics` (issue 21, item 2): the metrics agree with
//! `lvsnic -L -n --stats` and `lvsnic status` after traffic and rule
//! changes; a bad `--metrics` is one clear line; and (as root, with
//! Debian's `prometheus`) a real Prometheus server scrapes the daemon and
//! has its values.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::*;
use lvsnic_model::wire::{TCP_ACK, TCP_PSH, TCP_SYN};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Two services: TCP 10.0.0.100:80 (rr over real servers 1 and 2, NAT)
/// and UDP 10.0.0.100:53 (one DR server).
const RULES: &str = "\
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 3
-A -u 10.0.0.100:53 -s rr
-a -u 10.0.0.100:53 -r 192.168.10.3:53 -g -w 2
";

/// Five clients opening connections to VIP:80 (SYN, ACK, data), and
/// client 6 sending a lone ACK (no connection: an exception the director
/// hands on or drops).
fn traffic() -> Vec<(u64, Vec<u8>)> {
    let mut frames = Vec::new();
    for n in 1..=5u8 {
        let t = T0 + n as u64 * 10 * MS;
        frames.push((t, from_client(n, TCP_SYN, 100, b"")));
        frames.push((t + 2 * MS, from_client(n, TCP_ACK, 101, b"")));
        frames.push((t + 3 * MS, from_client(n, TCP_ACK | TCP_PSH, 101, b"GET / HTTP/1.1\r\n\r\n")));
        frames.push((t + 4 * MS, from_client(n, TCP_ACK | TCP_PSH, 119, b"more data")));
    }
    frames.push((T0 + 100 * MS, from_client(6, TCP_ACK, 5, b"")));
    frames
}

/// A daemon on RULES with a step-paced pcap wire of [`traffic`] and
/// `--metrics 127.0.0.1:0`; the daemon and its metrics address.
fn metrics_daemon(name: &str) -> (Daemon, SocketAddr) {
    let dir = tmpdir(name);
    let rules = write(&dir, "rules", RULES);
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&inp, &traffic());
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d = Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step", "--metrics", "127.0.0.1:0"]);
    let log = std::fs::read_to_string(&d.log).unwrap();
    let addr = log
        .lines()
        .find_map(|l| l.strip_prefix("lvsnic daemon: metrics on http://")?.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in the daemon's log: {log}"))
        .parse()
        .unwrap();
    (d, addr)
}

/// One HTTP exchange: status line, headers, body.
fn http(addr: SocketAddr, request: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("not HTTP: {text:?}"));
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), headers.to_string(), body.to_string())
}

/// `GET /metrics` (text format 0.0.4): the body.
fn scrape(addr: SocketAddr) -> String {
    let (status, headers, body) = http(addr, "GET /metrics HTTP/1.1\r\nHost: lvsnic\r\nAccept: text/plain;version=0.0.4\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK", "{headers}\n{body}");
    assert!(headers.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"), "{headers}");
    body
}

/// One sample: name and labels.
type Key = (String, BTreeMap<String, String>);

/// The samples of an exposition (text format, simple label values).
fn samples(text: &str) -> BTreeMap<Key, f64> {
    let mut m = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (nl, v) = l.rsplit_once(' ').unwrap();
        let (name, labels) = match nl.split_once('{') {
            None => (nl.to_string(), BTreeMap::new()),
            Some((n, rest)) => {
                let body = rest.strip_suffix('}').unwrap();
                let labels = body
                    .split("\",")
                    .map(|kv| {
                        let (k, v) = kv.split_once("=\"").unwrap();
                        (k.to_string(), v.trim_end_matches('"').to_string())
                    })
                    .collect();
                (n.to_string(), labels)
            }
        };
        assert!(m.insert((name, labels), v.parse::<f64>().unwrap()).is_none(), "sample twice: {l}");
    }
    m
}

/// Labels from pairs.
fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// One row of a `-L -n` listing: the service's labels (`proto`, `vip`,
/// `port`), the real server's (`rip`, `rport`, if a real server row) and
/// the row's numbers.
#[derive(Debug)]
struct Row {
    labels: BTreeMap<String, String>,
    real_server: bool,
    numbers: Vec<u64>,
}

/// The rows of `lvsnic -L -n [--stats]` output, each with its service.
fn listing_rows(out: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut svc: Option<BTreeMap<String, String>> = None;
    let split = |a: &str| {
        let (h, p) = a.rsplit_once(':').unwrap();
        (h.trim_start_matches('[').trim_end_matches(']').to_string(), p.to_string())
    };
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            [p @ ("TCP" | "UDP" | "SCTP"), a, rest @ ..] => {
                let (vip, port) = split(a);
                let s = labels(&[("proto", p), ("vip", &vip), ("port", &port)]);
                let numbers = rest.iter().filter_map(|x| x.parse().ok()).collect();
                rows.push(Row { labels: s.clone(), real_server: false, numbers });
                svc = Some(s);
            }
            ["->", a, rest @ ..] if a.contains(':') && *a != "RemoteAddress:Port" => {
                let (rip, rport) = split(a);
                let mut s = svc.clone().expect("a real server row after its service");
                s.insert("rip".into(), rip);
                s.insert("rport".into(), rport);
                let numbers = rest.iter().filter_map(|x| x.parse().ok()).collect();
                rows.push(Row { labels: s, real_server: true, numbers });
            }
            _ => {}
        }
    }
    rows
}

/// The `--stats` families, in the listing's column order.
const SERVICE_STATS: [&str; 5] = [
    "lvsnic_service_connections_total",
    "lvsnic_service_incoming_packets_total",
    "lvsnic_service_outgoing_packets_total",
    "lvsnic_service_incoming_bytes_total",
    "lvsnic_service_outgoing_bytes_total",
];

/// The real servers' `--stats` families, in column order.
const REAL_SERVER_STATS: [&str; 5] = [
    "lvsnic_real_server_connections_total",
    "lvsnic_real_server_incoming_packets_total",
    "lvsnic_real_server_outgoing_packets_total",
    "lvsnic_real_server_incoming_bytes_total",
    "lvsnic_real_server_outgoing_bytes_total",
];

/// Checks that every `-L -n --stats` and `-L -n` number of `d` is the
/// matching sample of `m`; returns how many were compared.
fn check_listings(d: &Daemon, m: &BTreeMap<Key, f64>) -> usize {
    let mut compared = 0;
    let stats = d.stdout(&["-L", "-n", "--stats"]);
    for row in listing_rows(&stats) {
        let fams = if row.real_server { REAL_SERVER_STATS } else { SERVICE_STATS };
        assert_eq!(row.numbers.len(), 5, "{row:?}");
        for (f, want) in fams.iter().zip(&row.numbers) {
            let got = m.get(&(f.to_string(), row.labels.clone())).unwrap_or_else(|| panic!("no {f} {:?}", row.labels));
            assert_eq!(*got, *want as f64, "{f} {:?}\n{stats}", row.labels);
            compared += 1;
        }
    }
    let list = d.stdout(&["-L", "-n"]);
    for row in listing_rows(&list).into_iter().filter(|r| r.real_server) {
        // Weight ActiveConn InActConn
        let fams = ["lvsnic_real_server_weight", "lvsnic_real_server_active_connections", "lvsnic_real_server_inactive_connections"];
        assert_eq!(row.numbers.len(), 3, "{row:?}");
        for (f, want) in fams.iter().zip(&row.numbers) {
            assert_eq!(m.get(&(f.to_string(), row.labels.clone())), Some(&(*want as f64)), "{f} {:?}\n{list}", row.labels);
            compared += 1;
        }
    }
    compared
}

fn value(m: &BTreeMap<Key, f64>, name: &str, l: &[(&str, &str)]) -> f64 {
    *m.get(&(name.to_string(), labels(l))).unwrap_or_else(|| panic!("no {name} {l:?}"))
}

fn sum(m: &BTreeMap<Key, f64>, name: &str) -> f64 {
    m.iter().filter(|((n, _), _)| n == name).map(|(_, v)| v).sum()
}

#[test]
fn metrics_agree_with_the_listings_and_status_through_traffic_and_rule_changes() {
    let (d, addr) = metrics_daemon("metrics-agree");
    let before = samples(&scrape(addr));
    assert_eq!(value(&before, "lvsnic_service_connections_total", &[("proto", "TCP"), ("vip", "10.0.0.100"), ("port", "80")]), 0.0);
    assert!(check_listings(&d, &before) >= 30);

    // Traffic, then a rule change: a new service, a weight changed.
    wire(&d, &[]);
    d.ok(&["-A", "-t", "10.0.0.100:443", "-s", "wlc"]);
    d.ok(&["-a", "-t", "10.0.0.100:443", "-r", "192.168.10.4:443", "-g", "-w", "5"]);
    d.ok(&["-e", "-t", "10.0.0.100:80", "-r", "192.168.10.2:80", "-m", "-w", "7"]);
    let text = scrape(addr);
    let m = samples(&text);
    assert!(check_listings(&d, &m) >= 45);
    let svc80 = [("proto", "TCP"), ("vip", "10.0.0.100"), ("port", "80")];
    assert_eq!(value(&m, "lvsnic_service_connections_total", &svc80), 5.0, "five clients");
    assert!(value(&m, "lvsnic_service_incoming_bytes_total", &svc80) > 0.0);
    assert_eq!(value(&m, "lvsnic_real_server_weight", &[("proto", "TCP"), ("vip", "10.0.0.100"), ("port", "443"), ("rip", "192.168.10.4"), ("rport", "443")]), 5.0);

    // `lvsnic status`, counter by counter.
    let st = d.status();
    for (metric, path) in [
        ("lvsnic_received_frames_total", &["exception_loop", "frames"][..]),
        ("lvsnic_hardware_forwarded_frames_total", &["exception_loop", "in_hardware"]),
        ("lvsnic_transmitted_frames_total", &["exception_loop", "transmitted"]),
        ("lvsnic_rate_limited_frames_total", &["exception_loop", "rate_limited"]),
        ("lvsnic_offloaded_connections", &["offload", "connections"]),
        ("lvsnic_flow_table_full_total", &["offload", "table_full"]),
        ("lvsnic_flow_table_evicted_total", &["offload", "evicted"]),
        ("lvsnic_flow_table_used_entries", &["offload", "flow_entries"]),
        ("lvsnic_flow_table_size_entries", &["offload", "flow_capacity"]),
        ("lvsnic_action_table_used_entries", &["offload", "action_entries"]),
        ("lvsnic_action_table_size_entries", &["offload", "action_capacity"]),
        ("lvsnic_connections_created_total", &["director", "connections", "created"]),
        ("lvsnic_connection_table_entries", &["director", "connections", "live"]),
        ("lvsnic_director_connections_total", &["director", "total", "conns"]),
        ("lvsnic_director_received_frames_total", &["director", "frames", "input"]),
        ("lvsnic_pcap_frames_left", &["pcap_frames_left"]),
    ] {
        assert_eq!(value(&m, metric, &[]), counter(&st, path) as f64, "{metric} vs status {path:?}");
    }
    assert_eq!(sum(&m, "lvsnic_exception_frames_total"), counter(&st, &["exception_loop", "exceptions"]) as f64);
    for (reason, n) in st["exception_loop"]["exceptions_by_reason"].as_object().unwrap() {
        assert_eq!(value(&m, "lvsnic_exception_frames_total", &[("reason", reason)]), n.as_f64().unwrap(), "{reason}");
    }
    assert!(sum(&m, "lvsnic_exception_frames_total") > 0.0);
    for (reason, n) in st["director"]["dropped"].as_object().unwrap() {
        assert_eq!(value(&m, "lvsnic_director_dropped_frames_total", &[("reason", reason)]), n.as_f64().unwrap(), "{reason}");
    }
    assert!(value(&m, "lvsnic_offloaded_connections", &[]) > 0.0, "traffic reached the card's tables");
    assert!(value(&m, "lvsnic_flow_table_used_entries", &[]) > 0.0);

    // Connections by state: what `-L -n -c` lists.
    let listed = conns(&d);
    let established = listed.values().filter(|(s, _, _)| s == "ESTABLISHED").count();
    assert_eq!(established, 5, "{listed:?}");
    assert_eq!(value(&m, "lvsnic_connections", &[("proto", "TCP"), ("state", "ESTABLISHED")]), established as f64);
    assert_eq!(sum(&m, "lvsnic_connections"), listed.len() as f64);

    // VIPs (--vips master: all ours), sync (not running), the scrapes themselves.
    assert_eq!(value(&m, "lvsnic_vip_owned", &[("vip", "10.0.0.100")]), 1.0);
    assert_eq!(value(&m, "lvsnic_vips_mode", &[("mode", "master")]), 1.0);
    assert_eq!(value(&m, "lvsnic_sync_daemon_running", &[("role", "master")]), 0.0);
    assert_eq!(value(&m, "lvsnic_metrics_requests_total", &[("result", "ok")]), 1.0, "the first scrape, counted before this one");
    assert_eq!(counter(&st, &["metrics", "ok"]), 2);

    // Counters did not go back between the two scrapes.
    for ((name, l), v) in &before {
        if name.ends_with("_total") {
            let after = m.get(&(name.clone(), l.clone())).unwrap_or_else(|| panic!("{name} {l:?} gone"));
            assert!(after >= v, "{name} {l:?}: {v} then {after}");
        }
    }

    // A VIP released (VRRP backup) reads 0.
    d.ok(&["vip", "backup", "10.0.0.100"]);
    let m = samples(&scrape(addr));
    assert_eq!(value(&m, "lvsnic_vip_owned", &[("vip", "10.0.0.100")]), 0.0);

    // OpenMetrics when asked for; nothing but GET /metrics is served.
    let (status, headers, body) =
        http(addr, "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"), "{headers}");
    assert!(body.ends_with("# EOF\n") && body.contains("# TYPE lvsnic_service_connections counter\n"), "{body}");
    assert!(body.contains("\nlvsnic_service_connections_total{proto=\"TCP\",vip=\"10.0.0.100\",port=\"80\"} 5\n"), "{body}");
    assert_eq!(http(addr, "GET / HTTP/1.1\r\n\r\n").0, "HTTP/1.1 404 Not Found");
    assert_eq!(http(addr, "DELETE /metrics HTTP/1.1\r\n\r\n").0, "HTTP/1.1 404 Not Found");
    assert_eq!(http(addr, "\u{1}\u{2}garbage\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
    // A client that never finishes its request costs only its own thread:
    // the control socket and the next scrape are answered meanwhile.
    let idle = TcpStream::connect(addr).unwrap();
    (&idle).write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    assert!(scrape(addr).contains("lvsnic_service_connections_total"));
    d.stdout(&["-L", "-n"]);
    drop(idle);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

#[test]
fn a_bad_metrics_address_is_one_clear_line() {
    let dir = tmpdir("metrics-bad");
    let director = write(&dir, "director.toml", &director_toml());
    let run = |metrics: &str| {
        let o = std::process::Command::new(LVSNIC)
            .args(["daemon", "--backend", "model", "--director", director.to_str().unwrap(), "--socket", dir.join("s.sock").to_str().unwrap(), "--metrics", metrics])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (code, err) = run("localhost");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("invalid value 'localhost' for '--metrics <ADDR:PORT>'"), "{err}");
    // An address in use: the daemon does not start, and says why in one line.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = taken.local_addr().unwrap().to_string();
    let (code, err) = run(&a);
    assert_ne!(code, Some(0));
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("--metrics {a}: serving metrics: Address already in use")), "{err}");
}

/// `GET path` from a local HTTP server: the body of a 200 reply.
fn get_ok(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8(out).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    // `HTTP/1.0 200 OK` (Go answers in the request's version) or 1.1.
    (head.split(' ').nth(1) == Some("200")).then(|| body.to_string())
}

/// A query string's value, percent-encoded.
fn urlencode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// A Prometheus server of our own (Debian's /usr/bin/prometheus): a
/// temporary configuration and database, killed when dropped.
struct Prometheus {
    child: std::process::Child,
    addr: SocketAddr,
    dir: std::path::PathBuf,
}

impl Prometheus {
    /// Scraping `target` every second.
    fn start(dir: &std::path::Path, target: SocketAddr) -> Prometheus {
        const BIN: &str = "/usr/bin/prometheus";
        assert!(
            std::path::Path::new(BIN).exists(),
            "{BIN} is missing: install Debian's prometheus package (apt-get install -y prometheus; scripts/test.sh does as root)"
        );
        let config = write(
            dir,
            "prometheus.yml",
            &format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: lvsnic\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        );
        // A free port: bound, then released for Prometheus.
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let child = std::process::Command::new(BIN)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(dir.join("prometheus.out")).unwrap())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("start prometheus");
        Prometheus { child, addr, dir: dir.to_path_buf() }
    }

    /// `/api/v1/query?query=Q`: the result vector (labels, value).
    fn query(&self, q: &str) -> Vec<(serde_json::Value, String)> {
        let Some(body) = get_ok(self.addr, &format!("/api/v1/query?query={}", urlencode(q))) else { return Vec::new() };
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(v["status"], "success", "{body}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["metric"].clone(), r["value"][1].as_str().unwrap().to_string()))
            .collect()
    }

    /// Waits (up to a minute) until `f` of query `q` holds; the last result.
    fn wait_for(&mut self, q: &str, f: impl Fn(&[(serde_json::Value, String)]) -> bool) -> Vec<(serde_json::Value, String)> {
        let t0 = std::time::Instant::now();
        loop {
            let r = self.query(q);
            if f(&r) {
                return r;
            }
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!("prometheus exited ({st}): {}", std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{q}: {r:?}\ntargets: {:?}\n{}",
                get_ok(self.addr, "/api/v1/targets"),
                std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// PromQL selector of a listing row's labels.
fn selector(name: &str, l: &BTreeMap<String, String>) -> String {
    let inner: Vec<String> = l.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{job=\"lvsnic\",{}}}", inner.join(","))
}

#[test]
#[ignore = "needs Debian's prometheus package (scripts/test.sh installs it and runs this as root)"]
fn a_real_prometheus_scrapes_the_daemon_and_has_its_values() {
    let (d, addr) = metrics_daemon("metrics-prometheus");
    wire(&d, &[]);
    d.ok(&["-A", "-t", "10.0.0.101:8080", "-s", "wlc"]);
    let dir = tmpdir("metrics-prometheus-server");
    let mut p = Prometheus::start(&dir, addr);
    // The target is up (Prometheus parsed a scrape).
    let up = p.wait_for("up{job=\"lvsnic\"}", |r| r.len() == 1 && r[0].1 == "1");
    assert_eq!(up[0].0["instance"], addr.to_string());
    // Every service and real server row of `-L -n --stats` and `-L -n`,
    // as Prometheus stored it.
    let stats = d.stdout(&["-L", "-n", "--stats"]);
    let rows = listing_rows(&stats);
    assert!(rows.iter().filter(|r| !r.real_server).count() >= 3 && rows.iter().filter(|r| r.real_server).count() >= 3, "{stats}");
    let mut compared = 0;
    for row in &rows {
        let fams = if row.real_server { REAL_SERVER_STATS } else { SERVICE_STATS };
        for (f, want) in fams.iter().zip(&row.numbers) {
            let q = selector(f, &row.labels);
            let r = p.wait_for(&q, |r| r.len() == 1);
            assert_eq!(r[0].1, want.to_string(), "{q}\n{stats}");
            compared += 1;
        }
    }
    for row in listing_rows(&d.stdout(&["-L", "-n"])).into_iter().filter(|r| r.real_server) {
        for (f, want) in ["lvsnic_real_server_weight", "lvsnic_real_server_active_connections", "lvsnic_real_server_inactive_connections"].iter().zip(&row.numbers) {
            let q = selector(f, &row.labels);
            assert_eq!(p.wait_for(&q, |r| r.len() == 1)[0].1, want.to_string(), "{q}");
            compared += 1;
        }
    }
    assert!(compared >= 30, "{compared}");
    // The values of the traffic, not zeros; the service added, with none.
    let r = p.wait_for("lvsnic_service_connections_total{vip=\"10.0.0.100\",port=\"80\",proto=\"TCP\"}", |r| r.len() == 1);
    assert_eq!(r[0].1, "5");
    let r = p.wait_for("lvsnic_service_connections_total{vip=\"10.0.0.101\"}", |r| r.len() == 1);
    assert_eq!((r[0].0["proto"].as_str(), r[0].0["port"].as_str(), r[0].1.as_str()), (Some("TCP"), Some("8080"), "0"));
    let st = d.status();
    let r = p.wait_for("lvsnic_received_frames_total", |r| r.len() == 1);
    assert_eq!(r[0].1, counter(&st, &["exception_loop", "frames"]).to_string());
    let r = p.wait_for("lvsnic_vip_owned{vip=\"10.0.0.100\"}", |r| r.len() == 1);
    assert_eq!(r[0].1, "1");
    let r = p.wait_for("sum(lvsnic_connections{state=\"ESTABLISHED\"})", |r| r.len() == 1);
    assert_eq!(r[0].1, "5");
    // A change reaches Prometheus at the next scrapes.
    d.ok(&["-e", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-m", "-w", "9"]);
    p.wait_for("lvsnic_real_server_weight{rip=\"192.168.10.1\",port=\"80\"}", |r| r.len() == 1 && r[0].1 == "9");
    drop(p);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
