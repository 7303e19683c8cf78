//! Health checks in the daemon, keepalived's semantics, end to end: a
//! keepalived.conf loaded with `lvsnic keepalived FILE --load`, real TCP
//! and HTTP servers on 127.0.0.1 (ephemeral ports, the checkers'
//! `connect_ip`/`connect_port`), TLS servers with self-signed
//! certificates (rcgen, rustls) for SSL_GET, a MISC_CHECK script in a
//! temporary directory; the state is read back through the daemon's control socket
//! (`lvsnic -S -n`, `lvsnic checkers`, `lvsnic status`).

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A TCP port on 127.0.0.1 that accepts connections (up) or refuses them (down).
struct Port {
    port: u16,
    listener: Option<TcpListener>,
}

impl Port {
    fn open() -> Port {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        Port { port: l.local_addr().unwrap().port(), listener: Some(l) }
    }
    fn closed() -> Port {
        let mut p = Port::open();
        p.down();
        p
    }
    fn down(&mut self) {
        self.listener = None;
    }
    fn up(&mut self) {
        self.listener = Some(TcpListener::bind(("127.0.0.1", self.port)).unwrap());
    }
}

/// An HTTP server on 127.0.0.1 answering every GET with the current status and body.
struct Http {
    port: u16,
    answer: Arc<Mutex<(u16, String)>>,
    /// Every request received, as text.
    requests: Arc<Mutex<Vec<String>>>,
}

impl Http {
    fn start(status: u16, body: &str) -> Http {
        Http::start_on("127.0.0.1", status, body)
    }

    /// The server on `ip` (`::1` for IPv6).
    fn start_on(ip: &str, status: u16, body: &str) -> Http {
        let l = TcpListener::bind((ip, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let answer = Arc::new(Mutex::new((status, body.to_string())));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (a, seen) = (answer.clone(), requests.clone());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                seen.lock().unwrap().push(String::from_utf8_lossy(&req).into_owned());
                let (st, body) = a.lock().unwrap().clone();
                let _ = write!(s, "HTTP/1.0 {st} X\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            }
        });
        Http { port, answer, requests }
    }
    fn set(&self, status: u16, body: &str) {
        *self.answer.lock().unwrap() = (status, body.to_string());
    }
}

/// An HTTPS server on 127.0.0.1 with a self-signed certificate (any name),
/// answering every GET with the current status and body; it records the
/// SNI name of every handshake, and with `client_ca` asks for a client
/// certificate signed by it.
struct Https {
    port: u16,
    answer: Arc<Mutex<(u16, String)>>,
    /// The SNI name of each completed handshake (`None`: none sent).
    sni: Arc<Mutex<Vec<Option<String>>>>,
}

impl Https {
    fn start(status: u16, body: &str) -> Https {
        Https::start_with(status, body, None)
    }

    fn start_with(status: u16, body: &str, client_ca: Option<rustls::pki_types::CertificateDer<'static>>) -> Https {
        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let ck = rcgen::generate_simple_self_signed(vec!["server.invalid".to_string()]).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
        let b = rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().unwrap();
        let b = match client_ca {
            None => b.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(ca).unwrap();
                let v = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
                b.with_client_cert_verifier(v)
            }
        };
        let cfg = Arc::new(b.with_single_cert(vec![ck.cert.der().clone()], key).unwrap());
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let answer = Arc::new(Mutex::new((status, body.to_string())));
        let sni = Arc::new(Mutex::new(Vec::new()));
        let (a, names) = (answer.clone(), sni.clone());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, s);
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                if tls.conn.is_handshaking() {
                    continue;
                }
                names.lock().unwrap().push(tls.conn.server_name().map(str::to_string));
                let (st, body) = a.lock().unwrap().clone();
                let _ = write!(tls, "HTTP/1.0 {st} X\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        });
        Https { port, answer, sni }
    }

    fn set(&self, status: u16, body: &str) {
        *self.answer.lock().unwrap() = (status, body.to_string());
    }

    fn sni(&self) -> Vec<Option<String>> {
        self.sni.lock().unwrap().clone()
    }
}

/// `lvsnic -S -n` holds exactly this line.
fn holds(d: &Daemon, line: &str) -> bool {
    d.run(&["-S", "-n"]).stdout.lines().any(|l| l == line)
}

/// `lvsnic -S -n` names this real server at all.
fn names(d: &Daemon, rs: &str) -> bool {
    d.run(&["-S", "-n"]).stdout.contains(&format!("-r {rs} "))
}

/// Waits (up to 10 s) until `cond` holds; returns how long it took.
fn wait_until(d: &Daemon, what: &str, cond: impl Fn(&Daemon) -> bool) -> Duration {
    let t0 = Instant::now();
    while !cond(d) {
        if t0.elapsed() > Duration::from_secs(10) {
            panic!(
                "timed out waiting for {what}\n-S -n:\n{}\ncheckers:\n{}",
                d.run(&["-S", "-n"]).stdout,
                checkers(d)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    t0.elapsed()
}

fn checkers(d: &Daemon) -> String {
    let r = d.run(&["checkers", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    r.stdout
}

/// Starts a daemon, loads `conf` into it and waits for every checker's first result.
fn load(name: &str, conf: &str) -> (Daemon, std::path::PathBuf) {
    let dir = tmpdir(name);
    // The scripts run as the user running the tests (keepalived's
    // script_user; without it, as root, lvsnic would refuse them).
    let me = std::process::Command::new("id").arg("-un").output().unwrap();
    let me = String::from_utf8(me.stdout).unwrap();
    // (At the end, so that the checkers' line numbers stay.)
    let conf = format!("{conf}global_defs {{\n    script_user {}\n}}\n", me.trim());
    let f = write(&dir, "keepalived.conf", &conf);
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &[]);
    assert_eq!(checkers(&d), "no health checkers (`lvsnic keepalived FILE --load` starts them)\n");
    let r = d.run(&["keepalived", f.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{r:?}");
    assert!(!r.stderr.contains("not run"), "{}", r.stderr);
    wait_until(&d, "the first checks", |d| !checkers(d).contains("not run yet"));
    (d, f)
}

/// The event-log lines (`event=...`) the daemon wrote so far.
fn events(d: &Daemon) -> Vec<String> {
    std::fs::read_to_string(&d.log).unwrap().lines().filter(|l| l.contains("event=")).map(String::from).collect()
}

/// Whether one event line starts with `prefix`.
fn logged(events: &[String], prefix: &str) -> bool {
    events.iter().any(|l| l.starts_with(prefix))
}

fn health(d: &Daemon) -> serde_json::Value {
    d.status()["health"].clone()
}

#[test]
fn tcp_check_retry_removal_and_inhibit_on_failure() {
    let mut p1 = Port::open();
    let mut p2 = Port::open();
    let rs1 = "-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 3";
    let rs2 = "-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 2";
    let conf = format!(
        "\
virtual_server 10.0.0.100 80 {{
    delay_loop 0.3
    lb_algo rr
    lb_kind NAT
    protocol TCP
    real_server 192.168.10.1 80 {{
        weight 3
        TCP_CHECK {{
            connect_ip 127.0.0.1
            connect_port {}
            connect_timeout 1
            retry 2
            delay_before_retry 0.5
        }}
    }}
    real_server 192.168.10.2 80 {{
        weight 2
        inhibit_on_failure
        TCP_CHECK {{
            connect_ip 127.0.0.1
            connect_port {}
            nb_get_retry 0
        }}
    }}
}}
",
        p1.port, p2.port
    );
    let (d, _) = load("hc-tcp", &conf);
    assert!(holds(&d, rs1) && holds(&d, rs2));
    let l = checkers(&d);
    assert!(l.contains("TCP  10.0.0.100:80 quorum 1 hysteresis 0 live weight 5: quorum up"), "{l}");
    assert!(l.contains(&format!("TCP_CHECK 127.0.0.1:{} up retry 0/2", p1.port)), "{l}");

    // Server 1 fails: removed only after the check and its 2 retries
    // (0.5 s apart) failed, i.e. not before ~1 s.
    p1.down();
    let took = wait_until(&d, "192.168.10.1 removed", |d| !names(d, "192.168.10.1:80"));
    assert!(took >= Duration::from_millis(900), "removed after {took:?}: retries not honoured");
    let l = checkers(&d);
    assert!(l.contains("-> 192.168.10.1:80 down weight 3, ipvs absent"), "{l}");
    assert!(l.contains("connection refused") || l.contains("Connection refused"), "{l}");
    assert!(holds(&d, rs2));

    // Server 2 fails: inhibit_on_failure keeps it at weight 0 (no retry).
    p2.down();
    wait_until(&d, "192.168.10.2 at weight 0", |d| holds(d, "-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 0"));

    // Both come back, with their configured weights.
    p1.up();
    p2.up();
    wait_until(&d, "both back", |d| holds(d, rs1) && holds(d, rs2));
    let h = health(&d);
    assert_eq!(h["checkers"], 2);
    assert_eq!(h["checker_down"], 2, "{h}");
    assert_eq!(h["checker_up"], 2, "{h}");
    assert_eq!(h["commands"], 4, "{h}");
    assert_eq!(h["command_errors"], 0, "{h}");
    assert!(h["failures"].as_u64().unwrap() >= 4, "{h}");
    // The event log (issue 21, item 4): each transition with its reason,
    // each change it made, the load and who made it.
    let ev = events(&d);
    let e = ev.join("\n");
    let me = std::process::Command::new("id").arg("-u").output().unwrap();
    let me = String::from_utf8(me.stdout).unwrap();
    assert!(logged(&ev, "lvsnic daemon: info: event=daemon_start backend=model services=0 wire=none socket="), "{e}");
    assert!(logged(&ev, &format!("lvsnic daemon: info: event=rule_change uid={} pid=", me.trim())), "{e}");
    assert!(e.contains("command=\"keepalived --load\" exit=0"), "{e}");
    for (rs, port) in [("192.168.10.1:80", p1.port), ("192.168.10.2:80", p2.port)] {
        let down = format!("lvsnic daemon: warn: event=checker_down vs=TCP/10.0.0.100:80 rs={rs} check=TCP_CHECK target=127.0.0.1:{port} reason=");
        assert!(ev.iter().any(|l| l.starts_with(&down) && l.to_lowercase().contains("connection refused")), "{down}\n{e}");
        let up = format!("lvsnic daemon: info: event=checker_up vs=TCP/10.0.0.100:80 rs={rs} check=TCP_CHECK target=127.0.0.1:{port} reason=");
        assert!(logged(&ev, &up), "{up}\n{e}");
    }
    for cmd in [
        "ipvsadm -d -t 10.0.0.100:80 -r 192.168.10.1:80",
        "ipvsadm -e -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 0",
        "ipvsadm -a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 3",
        "ipvsadm -e -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 2",
    ] {
        let want = format!("lvsnic daemon: info: event=rule_change source=health command=\"{cmd}\" exit=0");
        assert!(ev.contains(&want), "{want}\n{e}");
    }
}

#[test]
fn http_get_status_code_and_digest() {
    let a = Http::start(200, "abc");
    let b = Http::start(200, "anything");
    // MD5("abc"), RFC 1321 A.5.
    let conf = format!(
        "\
virtual_server 10.0.0.100 80 {{
    delay_loop 0.3
    lb_algo wlc
    lb_kind NAT
    protocol TCP
    real_server 192.168.10.3 80 {{
        HTTP_GET {{
            url {{
                path /index.html
                digest 900150983cd24fb0d6963f7d28e17f72
            }}
            connect_ip 127.0.0.1
            connect_port {}
            retry 0
        }}
    }}
    real_server 192.168.10.4 80 {{
        weight 2
        HTTP_GET {{
            url {{
                path /health
                status_code 200 204
            }}
            connect_ip 127.0.0.1
            connect_port {}
            retry 0
        }}
    }}
}}
",
        a.port, b.port
    );
    let (d, _) = load("hc-http", &conf);
    let rs3 = "-a -t 10.0.0.100:80 -r 192.168.10.3:80 -m -w 1";
    let rs4 = "-a -t 10.0.0.100:80 -r 192.168.10.4:80 -m -w 2";
    assert!(holds(&d, rs3) && holds(&d, rs4));
    digest_and_status_drill(&d, |st, body| a.set(st, body), |st, body| b.set(st, body), (rs3, rs4), 80, "GET /health from");
}

/// The drill HTTP_GET and SSL_GET share, on real servers 3 and 4 (`rs3`,
/// `rs4`: their `-a` lines, port `vport`) answered by `set3` and `set4`
/// (both answering 200 with the expected bodies): a body whose MD5 differs
/// takes server 3 out and the right one brings it back; 204 keeps server 4,
/// 503 takes it out (the listing says `why_503`), 200 brings it back.
fn digest_and_status_drill(d: &Daemon, set3: impl Fn(u16, &str), set4: impl Fn(u16, &str), (rs3, rs4): (&str, &str), vport: u16, why_503: &str) {
    let (n3, n4) = (format!("192.168.10.3:{vport}"), format!("192.168.10.4:{vport}"));
    // A body whose MD5 differs takes server 3 out.
    set3(200, "message digest");
    wait_until(d, "192.168.10.3 removed", |d| !names(d, &n3));
    let l = checkers(d);
    assert!(l.contains("digest f96b697d7cb7938d525a2f31aaf161d0, expected 900150983cd24fb0d6963f7d28e17f72"), "{l}");
    set3(200, "abc");
    wait_until(d, "192.168.10.3 back", |d| holds(d, rs3));
    // 204 is accepted, 503 is not.
    set4(204, "");
    std::thread::sleep(Duration::from_millis(700));
    assert!(holds(d, rs4));
    set4(503, "busy");
    wait_until(d, "192.168.10.4 removed", |d| !names(d, &n4));
    assert!(checkers(d).contains(why_503), "{}", checkers(d));
    set4(200, "ok");
    wait_until(d, "192.168.10.4 back", |d| holds(d, rs4));
}

/// An executable shell script `dir/name`.
fn script(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let s = write(dir, name, text);
    std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o755)).unwrap();
    s
}

#[test]
fn misc_dynamic_alpha_quorum_and_sorry_server() {
    let sdir = tmpdir("hc-misc-script");
    let code = write(&sdir, "code", "0\n");
    let sh = script(&sdir, "check.sh", "#!/bin/sh\nexit $(cat \"$1\")\n");
    let log = sdir.join("notify.log");
    let nsh = script(&sdir, "notify.sh", &format!("#!/bin/sh\necho \"$1\" >> {}\n", log.display()));
    let mut p6 = Port::closed();
    let conf = format!(
        "\
virtual_server 10.0.0.101 80 {{
    delay_loop 0.3
    lb_algo wrr
    lb_kind NAT
    protocol TCP
    quorum 2
    quorum_up \"{nsh} quorum-up\"
    quorum_down \"{nsh} quorum-down\"
    sorry_server 192.168.10.8 80
    real_server 192.168.10.5 80 {{
        weight 5
        notify_up \"{nsh} rs5-up\"
        notify_down \"{nsh} rs5-down\"
        MISC_CHECK {{
            misc_path \"{} {}\"
            misc_timeout 2
            misc_dynamic
        }}
    }}
    real_server 192.168.10.6 80 {{
        weight 1
        TCP_CHECK {{
            alpha
            connect_ip 127.0.0.1
            connect_port {}
            retry 0
        }}
    }}
}}
",
        sh.display(),
        code.display(),
        p6.port,
        nsh = nsh.display()
    );
    let rs5 = |w: u32| format!("-a -t 10.0.0.101:80 -r 192.168.10.5:80 -m -w {w}");
    let rs6 = "-a -t 10.0.0.101:80 -r 192.168.10.6:80 -m -w 1";
    let sorry = "-a -t 10.0.0.101:80 -r 192.168.10.8:80 -m -w 1";

    // alpha: 192.168.10.6 starts down, so the import leaves it out.
    let f = write(&sdir, "k.conf", &conf);
    let r = lvsnic_at(&sdir.join("none.sock"), &["keepalived", f.to_str().unwrap()], None);
    assert_eq!(r.stdout, format!("-A -t 10.0.0.101:80 -s wrr\n{}\n", rs5(5)), "{r:?}");

    let (d, _) = load("hc-misc", &conf);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!names(&d, "192.168.10.6:80"), "alpha server added while its check fails");
    assert!(holds(&d, &rs5(5)));

    // Its check succeeds: added.
    p6.up();
    wait_until(&d, "192.168.10.6 up", |d| holds(d, rs6));

    // misc_dynamic: exit 4 -> weight 2.
    std::fs::write(&code, "4\n").unwrap();
    wait_until(&d, "weight 2", |d| holds(d, &rs5(2)));

    // exit 1: down; live weight 1 < quorum 2: the sorry server serves alone.
    std::fs::write(&code, "1\n").unwrap();
    wait_until(&d, "sorry server in", |d| holds(d, sorry));
    let saved = d.run(&["-S", "-n"]).stdout;
    assert_eq!(saved, format!("-A -t 10.0.0.101:80 -s wrr\n{sorry}\n"));
    let l = checkers(&d);
    assert!(l.contains("live weight 1: quorum down"), "{l}");
    assert!(l.contains("sorry server 192.168.10.8:80: ipvs weight 1"), "{l}");

    // exit 0: up with the configured weight; the quorum is back, the sorry server out.
    std::fs::write(&code, "0\n").unwrap();
    wait_until(&d, "quorum back", |d| {
        d.run(&["-S", "-n"]).stdout == format!("-A -t 10.0.0.101:80 -s wrr\n{}\n{rs6}\n", rs5(5))
    });
    let h = health(&d);
    assert_eq!((h["sorry_in"].as_u64(), h["sorry_out"].as_u64()), (Some(1), Some(1)), "{h}");
    assert!(h["weight_changes"].as_u64().unwrap() >= 2, "{h}");
    assert_eq!(h["command_errors"], 0, "{h}");
    // The notify scripts ran once at each transition (started without
    // waiting, so they may finish in any order).
    let ran = || {
        let mut l: Vec<String> = std::fs::read_to_string(&log).unwrap_or_default().lines().map(String::from).collect();
        l.sort();
        l
    };
    let want = ["quorum-down", "quorum-up", "rs5-down", "rs5-up"];
    let t0 = Instant::now();
    while ran() != want && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(ran(), want);
    assert_eq!(h["notifies"], 4, "{h}");
    // The event log: the quorum lost and regained, the sorry server in and out.
    let ev = events(&d);
    let e = ev.join("\n");
    for want in [
        "lvsnic daemon: warn: event=quorum_down vs=TCP/10.0.0.101:80 live_weight=1 quorum=2 hysteresis=0",
        "lvsnic daemon: warn: event=sorry_server_in vs=TCP/10.0.0.101:80 rs=192.168.10.8:80",
        "lvsnic daemon: info: event=quorum_up vs=TCP/10.0.0.101:80 live_weight=6 quorum=2 hysteresis=0",
        "lvsnic daemon: info: event=sorry_server_out vs=TCP/10.0.0.101:80 rs=192.168.10.8:80",
    ] {
        assert!(ev.iter().any(|l| l == want), "{want}\n{e}");
    }
}

#[test]
fn misc_timeout_kills_the_script() {
    let sdir = tmpdir("hc-timeout-script");
    let s = script(&sdir, "slow.sh", "#!/bin/sh\nsleep 5\n");
    let conf = format!(
        "\
virtual_server 10.0.0.101 80 {{
    delay_loop 0.3
    lb_algo rr
    real_server 192.168.10.5 80 {{
        MISC_CHECK {{
            misc_path {}
            misc_timeout 0.3
        }}
    }}
}}
",
        s.display()
    );
    let (d, _) = load("hc-timeout", &conf);
    let took = wait_until(&d, "192.168.10.5 removed", |d| !names(d, "192.168.10.5:80"));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(checkers(&d).contains("timed out after"), "{}", checkers(&d));
}

#[test]
fn ssl_get_status_code_digest_and_sni() {
    let a = Https::start(200, "abc");
    let b = Https::start(200, "anything");
    // MD5("abc"), RFC 1321 A.5; a virtualhost sent as SNI with enable_sni
    // only.
    let conf = format!(
        "\
virtual_server 10.0.0.100 443 {{
    delay_loop 0.3
    lb_algo wlc
    lb_kind NAT
    protocol TCP
    real_server 192.168.10.3 443 {{
        SSL_GET {{
            url {{
                path /index.html
                digest 900150983cd24fb0d6963f7d28e17f72
            }}
            connect_ip 127.0.0.1
            connect_port {}
            virtualhost www.example.test
            enable_sni
            retry 0
        }}
    }}
    real_server 192.168.10.4 443 {{
        weight 2
        SSL_GET {{
            url {{
                path /health
                status_code 200 204
            }}
            connect_ip 127.0.0.1
            connect_port {}
            virtualhost other.example.test
            retry 0
        }}
    }}
}}
",
        a.port, b.port
    );
    let (d, f) = load("hc-ssl", &conf);
    let rs3 = "-a -t 10.0.0.100:443 -r 192.168.10.3:443 -m -w 1";
    let rs4 = "-a -t 10.0.0.100:443 -r 192.168.10.4:443 -m -w 2";
    assert!(holds(&d, rs3) && holds(&d, rs4));
    let l = checkers(&d);
    let fp = f.display();
    assert!(
        l.contains(&format!("SSL_GET 127.0.0.1:{} /index.html sni www.example.test up retry 0/0", a.port)),
        "{l}"
    );
    assert!(l.contains(&format!("({fp}:7): GET /index.html from 127.0.0.1:{}: ok", a.port)), "{l}");
    assert!(l.contains(&format!("SSL_GET 127.0.0.1:{} /health up retry 0/0", b.port)), "{l}");
    // SNI: the virtualhost with enable_sni, nothing without.
    let sa = a.sni();
    assert!(!sa.is_empty() && sa.iter().all(|n| n.as_deref() == Some("www.example.test")), "{sa:?}");
    let sb = b.sni();
    assert!(!sb.is_empty() && sb.iter().all(Option::is_none), "{sb:?}");

    let why = format!("GET /health from 127.0.0.1:{}: status 503", b.port);
    digest_and_status_drill(&d, |st, body| a.set(st, body), |st, body| b.set(st, body), (rs3, rs4), 443, &why);
    let h = health(&d);
    assert_eq!(h["command_errors"], 0, "{h}");
}

#[test]
fn ssl_get_fails_on_plain_tcp_and_on_a_stalled_handshake() {
    let plain = Http::start(200, "abc");
    let plain2 = Http::start(200, "abc");
    // Accepts connections and never answers: the TLS handshake stalls.
    let stall = TcpListener::bind("127.0.0.1:0").unwrap();
    let stall_port = stall.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in stall.incoming() {
            held.push(s);
        }
    });
    let conf = format!(
        "\
virtual_server 10.0.0.100 443 {{
    delay_loop 0.3
    lb_algo rr
    protocol TCP
    real_server 192.168.10.5 443 {{
        SSL_GET {{
            url {{
                path /
            }}
            connect_ip 127.0.0.1
            connect_port {}
            retry 0
        }}
    }}
    real_server 192.168.10.6 443 {{
        SSL_GET {{
            url {{
                path /
            }}
            connect_ip 127.0.0.1
            connect_port {stall_port}
            connect_timeout 0.5
            retry 0
        }}
    }}
    real_server 192.168.10.7 443 {{
        HTTP_GET {{
            url {{
                path /
            }}
            connect_ip 127.0.0.1
            connect_port {}
            retry 0
        }}
    }}
}}
",
        plain.port, plain2.port
    );
    let (d, _) = load("hc-ssl-fail", &conf);
    // The plain HTTP server passes HTTP_GET and fails SSL_GET; the stalled
    // handshake fails after connect_timeout.
    wait_until(&d, "both SSL_GET servers removed", |d| {
        !names(d, "192.168.10.5:443") && !names(d, "192.168.10.6:443")
    });
    assert!(holds(&d, "-a -t 10.0.0.100:443 -r 192.168.10.7:443 -m -w 1"));
    let l = checkers(&d);
    assert!(l.contains(&format!("GET / from 127.0.0.1:{}: TLS handshake: received corrupt message", plain.port)), "{l}");
    assert!(l.contains(&format!("GET / from 127.0.0.1:{stall_port}: TLS handshake: timed out after 500ms")), "{l}");

    // connect_timeout bounds the handshake (checked directly, without the daemon).
    use lvsnic::health::config::{Target, UrlCheck};
    let t = Target { addr: ([127, 0, 0, 1], stall_port).into(), timeout: Duration::from_millis(500), bind: None, bind_if: None };
    let u = UrlCheck { path: "/".into(), status: vec![], digest: None };
    let t0 = Instant::now();
    let o = lvsnic::health::ssl::check(&t, &[u.clone()], None, false, None);
    let took = t0.elapsed();
    assert!(!o.ok, "{o:?}");
    assert!(took >= Duration::from_millis(450) && took < Duration::from_secs(3), "{took:?} {o:?}");
    // ... and the same check passes against a TLS server.
    let ok = Https::start(200, "x");
    let t = Target { addr: ([127, 0, 0, 1], ok.port).into(), timeout: Duration::from_millis(500), bind: None, bind_if: None };
    let o = lvsnic::health::ssl::check(&t, &[u], None, false, None);
    assert!(o.ok, "{o:?}");
}

#[test]
fn ssl_get_offers_the_ssl_block_client_certificate() {
    let client = rcgen::generate_simple_self_signed(vec!["client.invalid".to_string()]).unwrap();
    let srv = Https::start_with(200, "ok", Some(client.cert.der().clone()));
    let dir = tmpdir("hc-ssl-client-pem");
    let cert = write(&dir, "client.pem", &client.cert.pem());
    let key = write(&dir, "client.key", &client.key_pair.serialize_pem());
    // The SSL block may come after the checkers that use it.
    let conf = format!(
        "\
virtual_server 10.0.0.100 443 {{
    delay_loop 0.3
    lb_algo rr
    protocol TCP
    real_server 192.168.10.8 443 {{
        SSL_GET {{
            url {{
                path /
            }}
            connect_ip 127.0.0.1
            connect_port {}
            retry 0
        }}
    }}
}}
SSL {{
    certificate {}
    key {}
}}
",
        srv.port,
        cert.display(),
        key.display()
    );
    let (d, _) = load("hc-ssl-client", &conf);
    let l = checkers(&d);
    assert!(l.contains(&format!("SSL_GET 127.0.0.1:{} / up", srv.port)) && l.contains(": ok"), "{l}");
    assert!(!srv.sni().is_empty());
    // Without the client certificate the server refuses the handshake.
    use lvsnic::health::config::{Target, UrlCheck};
    let t = Target { addr: ([127, 0, 0, 1], srv.port).into(), timeout: Duration::from_secs(1), bind: None, bind_if: None };
    let u = UrlCheck { path: "/".into(), status: vec![], digest: None };
    let o = lvsnic::health::ssl::check(&t, &[u], None, false, None);
    assert!(!o.ok, "{o:?}");
}

/// IPv6 real servers (issue 20): TCP_CHECK to the real server's own
/// address, TCP_CHECK and HTTP_GET through an IPv6 `connect_ip`, all on
/// ::1, as keepalived 2.2.7 checks them (an AF_INET6 socket to
/// `[connect_ip]:connect_port`; HTTP_GET's Host header is the bracketed
/// address and port, check_http.c's `request_template_ipv6`).
#[test]
fn ipv6_real_servers_are_checked_over_ipv6() {
    let up = TcpListener::bind("[::1]:0").unwrap();
    let up_port = up.local_addr().unwrap().port();
    let down_port = {
        let l = TcpListener::bind("[::1]:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let web = Http::start_on("::1", 200, "abc");
    let conf = format!(
        "\
virtual_server 2001:db8::10 80 {{
    delay_loop 0.3
    lb_algo rr
    lb_kind NAT
    protocol TCP
    real_server ::1 {up_port} {{
        TCP_CHECK {{
            retry 0
        }}
    }}
    real_server 2001:db8:1::2 80 {{
        TCP_CHECK {{
            connect_ip ::1
            connect_port {down_port}
            retry 0
        }}
    }}
    real_server 2001:db8:1::3 80 {{
        HTTP_GET {{
            url {{
                path /index.html
                digest 900150983cd24fb0d6963f7d28e17f72
            }}
            connect_ip ::1
            connect_port {}
            retry 0
        }}
    }}
}}
",
        web.port
    );
    let (d, _) = load("hc-ipv6", &conf);
    let rs1 = format!("-a -t [2001:db8::10]:80 -r [::1]:{up_port} -m -w 1");
    let rs3 = "-a -t [2001:db8::10]:80 -r [2001:db8:1::3]:80 -m -w 1";
    wait_until(&d, "the refused server removed", |d| !names(d, "[2001:db8:1::2]:80"));
    assert!(holds(&d, &rs1) && holds(&d, rs3), "{}", d.run(&["-S", "-n"]).stdout);
    let l = checkers(&d);
    assert!(l.contains(&format!("TCP_CHECK [::1]:{up_port} up")), "{l}");
    assert!(l.contains(&format!("TCP_CHECK [::1]:{down_port} down")), "{l}");
    assert!(l.contains("-> [2001:db8:1::2]:80 down weight 1, ipvs absent"), "{l}");
    let req = web.requests.lock().unwrap()[0].clone();
    assert_eq!(req, format!("GET /index.html HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: [::1]:{}\r\n\r\n", web.port));
    // A body whose MD5 differs takes the HTTP server out; the right one
    // brings it back.
    web.set(200, "abd");
    wait_until(&d, "digest mismatch removes the server", |d| !holds(d, rs3));
    let l = checkers(&d);
    assert!(l.contains("digest"), "{l}");
    web.set(200, "abc");
    wait_until(&d, "the server back", |d| holds(d, rs3));
    drop(up);
}

/// `bindto`, `bind_port` and `bind_if` with IPv6 (keepalived's
/// socket_bind_connect: SO_BINDTODEVICE, bind(2), then connect(2)): the
/// server sees the connection come from [::1]:bind_port; a `bindto` of
/// the other family than `connect_ip` is skipped with keepalived's words.
#[test]
fn ipv6_checks_bind_to_the_configured_source() {
    use lvsnic::health::config::CheckKind;
    let l = TcpListener::bind("[::1]:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let bind_port = {
        let p = TcpListener::bind("[::1]:0").unwrap();
        p.local_addr().unwrap().port()
    };
    let dir = tmpdir("hc-bind6");
    let f = write(
        &dir,
        "k.conf",
        &format!(
            "virtual_server 2001:db8::10 80 {{\n    protocol TCP\n    lb_algo rr\n    real_server 2001:db8:1::2 80 {{\n        TCP_CHECK {{\n\
             \x20           connect_ip ::1\n            connect_port {port}\n            bindto ::1\n            bind_port {bind_port}\n\
             \x20           bind_if lo\n            bindto 127.0.0.1\n        }}\n    }}\n}}\n"
        ),
    );
    let imp = lvsnic::keepalived::import(&f).unwrap();
    let w: Vec<String> = imp.warnings.iter().map(|d| format!("{}: {}", d.loc, d.msg)).collect();
    assert_eq!(w, [format!("{}:11: bindto address 127.0.0.1 does not match address family of connect_ip - skipping", f.display())]);
    let c = &imp.health.services[0].reals[0].checkers[0];
    let CheckKind::Tcp(t) = &c.kind else { panic!("{c:?}") };
    assert_eq!(t.bind, Some(format!("[::1]:{bind_port}").parse().unwrap()));
    assert_eq!(t.bind_if.as_deref(), Some("lo"));
    let o = lvsnic::health::tcp::check(t);
    assert!(o.ok, "{o:?}");
    let (_, peer) = l.accept().unwrap();
    assert_eq!(peer, format!("[::1]:{bind_port}").parse().unwrap());
    // Bound to an interface that does not exist: the check fails.
    let mut t2 = t.clone();
    t2.bind_if = Some("nosuchif0".into());
    t2.bind = None;
    let o = lvsnic::health::tcp::check(&t2);
    assert!(!o.ok, "{o:?}");
}
