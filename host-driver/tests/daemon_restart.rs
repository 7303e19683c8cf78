//! Nothing lost on restart or reload (issue 19, item 5): the running
//! configuration and the connections survive SIGTERM and kill -9; SIGHUP
//! and `lvsnic reload` apply only the rules file's difference and the
//! daemon keeps running; `lvsnic drain`; `lvsnic keepalived FILE --load`
//! twice gives exactly the second file's table, and a load that cannot be
//! applied changes nothing.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::*;
use lvsnic_model::pcap;
use lvsnic_model::wire::{TCP_ACK, TCP_PSH, TCP_SYN};
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;




fn start(dir: &Path, args: &[&str]) -> Daemon {
    Daemon::start(dir, &director_toml(), args)
}

/// The destination IPv4 address of each frame of a capture.
fn dsts(path: &Path) -> Vec<Ipv4Addr> {
    pcap::read_file(path).unwrap().iter().map(|r| Ipv4Addr::new(r.data[30], r.data[31], r.data[32], r.data[33])).collect()
}

/// The connection lines of `-L -n -c` without the expiry column.
fn conns(d: &Daemon) -> Vec<String> {
    let mut v: Vec<String> = d
        .stdout(&["-L", "-n", "-c"])
        .lines()
        .skip(2)
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {} {} {}", w[0], w[2], w[3], w[4], w[5])
        })
        .collect();
    v.sort();
    v
}

const RULES: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1\n";

#[test]
fn services_timeouts_and_vips_survive_sigterm_and_kill9() {
    let dir = tmpdir("restart-config");
    let rules = write(&dir, "rules", RULES);
    let r = rules.to_str().unwrap();
    let d = start(&dir, &["--rules", r]);
    d.ok(&["-A", "-t", "10.0.0.101:443", "-s", "wlc", "-p", "120"]);
    d.ok(&["-a", "-t", "10.0.0.101:443", "-r", "192.168.10.3:443", "-g", "-w", "2", "-x", "100", "-y", "10"]);
    d.ok(&["-e", "-t", "10.0.0.100:80", "-r", "192.168.10.2:80", "-m", "-w", "5"]);
    d.ok(&["--set", "901", "121", "301"]);
    d.ok(&["vip", "backup", "10.0.0.101", "--socket", d.sock.to_str().unwrap()]);
    let save = d.stdout(&["-S", "-n"]);
    let thresholds = d.stdout(&["-L", "-n", "--thresholds"]);
    let vips = d.stdout(&["vip", "--socket", d.sock.to_str().unwrap()]);
    assert!(vips.contains("10.0.0.101 backup"), "{vips}");
    let (code, _) = d.stop();
    assert_eq!(code, 0);

    // SIGTERM, then a start with the same --rules: the running state wins.
    let d = start(&dir, &["--rules", r]);
    assert_eq!(d.stdout(&["-S", "-n"]), save);
    assert_eq!(d.stdout(&["-L", "-n", "--thresholds"]), thresholds);
    assert_eq!(d.stdout(&["-L", "--timeout"]), "Timeout (tcp tcpfin udp): 901 121 301\n");
    assert_eq!(d.stdout(&["vip", "--socket", d.sock.to_str().unwrap()]), vips);

    // A change, then kill -9: the change is there after the restart.
    d.ok(&["-D", "-t", "10.0.0.101:443"]);
    d.ok(&["--set", "902", "0", "0"]);
    let save = d.stdout(&["-S", "-n"]);
    d.kill();
    let d = start(&dir, &["--rules", r]);
    assert_eq!(d.stdout(&["-S", "-n"]), save);
    assert!(!save.contains("10.0.0.101"));
    assert_eq!(d.stdout(&["-L", "--timeout"]), "Timeout (tcp tcpfin udp): 902 121 301\n");
    d.stop();
}

/// A state file that cannot be written (here `state.json` has become a
/// directory, so the rename over it fails): the change is still applied
/// and answered, the failure is counted in `status` (`state.failed`) and
/// logged once; once the disk is back, the next change is written.
#[test]
fn a_state_file_that_cannot_be_written_is_counted_not_fatal() {
    let dir = tmpdir("restart-unwritable");
    let rules = write(&dir, "rules", RULES);
    let d = start(&dir, &["--rules", rules.to_str().unwrap()]);
    let state = std::path::PathBuf::from(format!("{}.state", d.sock.display()));
    let count = |k: &str| d.status()["state"][k].as_u64().unwrap_or_else(|| panic!("status state.{k}: {}", d.status()));
    let failed = count("failed");
    let _ = std::fs::remove_file(state.join("state.json"));
    std::fs::create_dir_all(state.join("state.json").join("x")).unwrap();
    d.ok(&["-A", "-t", "10.0.0.101:443", "-s", "wlc"]);
    assert_eq!(count("failed"), failed + 1, "the failed write is counted before the reply");
    assert!(d.stdout(&["-S", "-n"]).contains("-A -t 10.0.0.101:443"), "the change is applied all the same");
    std::fs::remove_dir_all(state.join("state.json")).unwrap();
    let written = count("written");
    d.ok(&["-D", "-t", "10.0.0.101:443"]);
    assert_eq!(count("written"), written + 1);
    assert!(!std::fs::read_to_string(state.join("state.json")).unwrap().contains("10.0.0.101"));
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert_eq!(log.matches("saving the state").count(), 1, "one line for the failure: {log}");
}

#[test]
fn corrupt_state_file_stops_the_start_with_one_line() {
    let dir = tmpdir("restart-corrupt");
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("state.json"), "{\"version\":1,").unwrap();
    let o = std::process::Command::new(LVSNIC)
        .args(["daemon", "--backend", "model", "--director"])
        .arg(write(&dir, "director.toml", &director_toml()))
        .arg("--socket")
        .arg(dir.join("s.sock"))
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("{}: corrupt state file", state.join("state.json").display())), "{err}");
}

/// Five clients with established connections (rr over two servers).
fn five_connections() -> Vec<(u64, Vec<u8>)> {
    let mut frames = Vec::new();
    for n in 1..=5u8 {
        let t = T0 + n as u64 * 10 * MS;
        frames.push((t, from_client(n, TCP_SYN, 100, b"")));
        frames.push((t + 2 * MS, from_client(n, TCP_ACK, 101, b"")));
        frames.push((t + 3 * MS, from_client(n, TCP_ACK | TCP_PSH, 101, b"GET / HTTP/1.1\r\n\r\n")));
    }
    frames
}

/// A daemon in `dir` with RULES and a pcap wire in step mode that has
/// played [`five_connections`]: the daemon, the rules file and the output
/// capture.
fn five_connections_daemon(dir: &Path) -> (Daemon, std::path::PathBuf, std::path::PathBuf) {
    let rules = write(dir, "rules", RULES);
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&inp, &five_connections());
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d = start(dir, &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step"]);
    wire(&d, &[]);
    (d, rules, out)
}

#[test]
fn connections_survive_kill9_and_keep_their_real_servers() {
    let dir = tmpdir("restart-conns");
    let (d, rules, out) = five_connections_daemon(&dir);
    let before = conns(&d);
    assert_eq!(before.len(), 5, "{before:?}");
    // Client n's server, as the first daemon chose it.
    let first = dsts(&out);
    // The periodic snapshot (every second), then a crash.
    std::thread::sleep(Duration::from_millis(2500));
    d.kill();

    // A data frame of every old connection, 5 s later, to the restarted daemon.
    let later: Vec<(u64, Vec<u8>)> = (1..=5u8)
        .map(|n| (T0 + 5_000 * MS + n as u64 * MS, from_client(n, TCP_ACK | TCP_PSH, 119, b"more")))
        .collect();
    let (inp2, out2) = (dir.join("in2.pcap"), dir.join("out2.pcap"));
    write_pcap(&inp2, &later);
    let w2 = format!("pcap:{},{}", inp2.display(), out2.display());
    let d = start(&dir, &["--rules", rules.to_str().unwrap(), "--wire", &w2, "--pace", "step"]);
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(log.contains("5 connections (5 offloaded)"), "{log}");
    assert_eq!(conns(&d), before);
    wire(&d, &[]);
    let s = d.status();
    let second = dsts(&out2);
    assert_eq!(second.len(), 5, "{s}");
    // Each old connection's frame went to the server it had before.
    for n in 1..=5usize {
        // In the first capture, client n's frames leave at indexes 3(n-1)
        // (SYN), then ACK and data.
        assert_eq!(second[n - 1], first[3 * (n - 1)], "client {n}");
        assert!(second[n - 1] == rs(1) || second[n - 1] == rs(2));
    }
    // Forwarded by the card, not scheduled again.
    assert_eq!(s["exception_loop"]["in_hardware"], 5, "{s}");
    // Counted as they were: established connections are active.
    let act: Vec<i64> =
        s["director"]["services"][0]["real_servers"].as_array().unwrap().iter().map(|r| r["activeconns"].as_i64().unwrap()).collect();
    let to_rs1 = first.iter().filter(|a| **a == rs(1)).count() as i64 / 3;
    assert_eq!(act, [to_rs1, 5 - to_rs1], "{s}");
    d.stop();
}


/// A segment of IPv6 client `n` to `vip:port` (client port 1000 n).
fn from_client6(n: u8, vip: &str, port: u16, flags: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    let client: std::net::Ipv6Addr = format!("2001:db8:cafe:{n}::7").parse().unwrap();
    tcp6(GATEWAY_MAC, DIRECTOR_MAC, (client, vip.parse().unwrap()), 1000 * n as u16, port, flags, seq, 1, payload)
}

/// The IPv6 destination of each frame of a capture.
fn dsts6(path: &Path) -> Vec<Option<std::net::Ipv6Addr>> {
    pcap::read_file(path).unwrap().iter().map(|r| ipv6_dst(&r.data)).collect()
}

/// IPv6 connections (and the template of a persistent IPv6 service) are
/// kept in connections.json: after kill -9 and a restart, each client's
/// next segment goes to the server it had (the restarted rr would give
/// client 2 server 1), and `-L -n -c` lists the same entries.
#[test]
fn ipv6_connections_survive_kill9_and_keep_their_real_servers() {
    let dir = tmpdir("restart-conns6");
    let rules = write(&dir, "rules", IPV6_RULES);
    let clients = [(1u8, "2001:db8::10", 80u16), (2, "2001:db8::10", 80), (3, "2001:db8::20", 443)];
    let mut frames = Vec::new();
    for (i, &(n, vip, port)) in clients.iter().enumerate() {
        let t = T0 + (i as u64 + 1) * 10 * MS;
        frames.push((t, from_client6(n, vip, port, TCP_SYN, 100, b"")));
        frames.push((t + 2 * MS, from_client6(n, vip, port, TCP_ACK, 101, b"")));
        frames.push((t + 3 * MS, from_client6(n, vip, port, TCP_ACK | TCP_PSH, 101, b"GET / HTTP/1.1\r\n\r\n")));
    }
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d = start(&dir, &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step"]);
    wire(&d, &[]);
    let before = conns(&d);
    assert_eq!(before.len(), 4, "three connections and a template: {before:?}");
    let first = dsts6(&out);
    assert_eq!(first.len(), 9);
    assert_ne!(first[0], first[3], "rr gave clients 1 and 2 different servers");
    let state = std::path::PathBuf::from(format!("{}.state", d.sock.display()));
    std::thread::sleep(Duration::from_millis(2500));
    d.kill();
    let saved = std::fs::read_to_string(state.join("connections.json")).unwrap();
    assert!(saved.contains("\"version\":2") && saved.contains("\"conns6\""), "{saved}");

    // Client 2 first: a fresh rr would send it to server 1.
    let later: Vec<(u64, Vec<u8>)> = [1usize, 0, 2]
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let (n, vip, port) = clients[i];
            (T0 + 5_000 * MS + k as u64 * MS, from_client6(n, vip, port, TCP_ACK | TCP_PSH, 119, b"more"))
        })
        .collect();
    let (inp2, out2) = (dir.join("in2.pcap"), dir.join("out2.pcap"));
    write_pcap(&inp2, &later);
    let w2 = format!("pcap:{},{}", inp2.display(), out2.display());
    let d = start(&dir, &["--rules", rules.to_str().unwrap(), "--wire", &w2, "--pace", "step"]);
    let log = std::fs::read_to_string(&d.log).unwrap();
    // The three IPv6 connections are offloaded again (the model's card
    // forwards IPv6); the /64 template stays in software.
    assert!(log.contains("4 connections (3 offloaded)"), "{log}");
    assert_eq!(conns(&d), before);
    wire(&d, &[]);
    let second = dsts6(&out2);
    assert_eq!(second, [first[3], first[0], first[6]]);
    d.stop();
}

fn wait_log(d: &Daemon, what: &str) -> String {
    let t0 = Instant::now();
    loop {
        let log = std::fs::read_to_string(&d.log).unwrap();
        if log.contains(what) {
            return log;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "no `{what}` in the log: {log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sighup_applies_only_the_rules_files_difference_and_keeps_running() {
    let dir = tmpdir("restart-hup");
    let a = format!("{RULES}-A -t 10.0.0.101:80 -s wlc\n-a -t 10.0.0.101:80 -r 192.168.10.3:80 -g -w 1\n");
    let rules = write(&dir, "rules", &a);
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    let mut frames = five_connections();
    frames.push((T0 + 900 * MS, from_client(1, TCP_ACK | TCP_PSH, 119, b"after")));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d = start(&dir, &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step"]);
    wire(&d, &["--frames", "15"]);
    let before = conns(&d);
    let offloaded = d.status()["offload"].clone();
    // Service 10.0.0.101 goes, 10.0.0.102 comes, a server of the first
    // service changes weight; the first service's connections stay.
    let b = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 4\n\
             -A -t 10.0.0.102:80 -s sh\n-a -t 10.0.0.102:80 -r 192.168.10.4:80 -g -w 1\n";
    write(&dir, "rules", b);
    let k = std::process::Command::new("kill").args(["-HUP", &d.pid().to_string()]).status().unwrap();
    assert!(k.success());
    let log = wait_log(&d, "SIGHUP");
    assert!(log.contains("lvsnic -D -t 10.0.0.101:80"), "{log}");
    assert!(log.contains("lvsnic -e -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 4"), "{log}");
    assert!(!log.contains("-d -t 10.0.0.100:80"), "{log}");
    let expect = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 4\n\
                  -A -t 10.0.0.102:80 -s sh\n-a -t 10.0.0.102:80 -r 192.168.10.4:80 -g -w 1\n";
    assert_eq!(d.stdout(&["-S", "-n"]), expect);
    assert_eq!(conns(&d), before);
    assert_eq!(d.status()["offload"], offloaded);
    // The unchanged service's connection is still forwarded by the card.
    let hw = d.status()["exception_loop"]["in_hardware"].as_u64().unwrap();
    wire(&d, &[]);
    assert_eq!(d.status()["exception_loop"]["in_hardware"].as_u64().unwrap(), hw + 1);

    // What cannot change at run time is refused, and nothing changes.
    write(&dir, "director.toml", &director_toml().replace("02:00:00:00:00:01", "02:00:00:00:00:09"));
    write(&dir, "rules", RULES);
    let r = d.run(&["reload", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("[director] mac cannot change while the daemon runs"), "{r:?}");
    assert_eq!(d.stdout(&["-S", "-n"]), expect);
    // Put back: `lvsnic reload` applies the file.
    write(&dir, "director.toml", &director_toml());
    let r = d.run(&["reload", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(d.stdout(&["-S", "-n"]), RULES);
    let (code, _) = d.stop();
    assert_eq!(code, 0);
    // The output capture ends on a record boundary and reads back whole.
    assert!(pcap::read_file(&out).is_ok());
}

#[test]
fn drain_sets_weight_zero_waits_then_removes() {
    let dir = tmpdir("restart-drain");
    let (d, _, _) = five_connections_daemon(&dir);
    let sock = d.sock.to_str().unwrap().to_string();
    // rs1 has connections that do not end: the timeout removes it.
    let t0 = Instant::now();
    let r = d.run(&["drain", "--socket", &sock, "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "--timeout", "1"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(t0.elapsed() >= Duration::from_secs(1));
    assert_eq!(
        r.stdout,
        "192.168.10.1:80: weight 0 (no new connections)\n\
         192.168.10.1:80: 2 connection(s) still open after the 1 s timeout\n\
         192.168.10.1:80: removed from -t 10.0.0.100:80\n"
    );
    assert_eq!(d.stdout(&["-S", "-n"]), "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1\n");
    // A server without connections goes at once; its method is kept meanwhile.
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.3:80", "-m", "-w", "1"]);
    let r = d.run(&["drain", "--socket", &sock, "-t", "10.0.0.100:80", "-r", "192.168.10.3:80"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("192.168.10.3:80: no connections left after"), "{r:?}");
    // An unknown server: status 1, nothing changed.
    let r = d.run(&["drain", "--socket", &sock, "-t", "10.0.0.100:80", "-r", "192.168.10.7:80"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(r.stderr, "lvsnic drain: no real server 192.168.10.7:80 in service -t 10.0.0.100:80\n");
    assert_eq!(d.stdout(&["-S", "-n"]), "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1\n");
    d.stop();
}

fn keepalived_conf(persist: u32, reals: &[u8]) -> String {
    let mut s = format!(
        "virtual_server 10.0.0.100 80 {{\n  lb_algo rr\n  lb_kind NAT\n  protocol TCP\n  persistence_timeout {persist}\n"
    );
    for r in reals {
        s.push_str(&format!("  real_server 192.168.10.{r} 80 {{\n    weight 1\n  }}\n"));
    }
    s.push_str("}\nvirtual_server 10.0.0.101 443 {\n  lb_algo wlc\n  lb_kind DR\n  protocol TCP\n  real_server 192.168.10.5 443 {\n    weight 2\n  }\n}\n");
    s
}

#[test]
fn keepalived_load_twice_gives_exactly_the_second_files_table() {
    let dir = tmpdir("restart-ka");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s wlc\n-a -t 10.0.0.100:80 -r 192.168.10.8:80 -m -w 1\n");
    let d = start(&dir, &["--rules", rules.to_str().unwrap()]);
    let sock = d.sock.to_str().unwrap().to_string();
    let a = write(&dir, "a.conf", &keepalived_conf(300, &[1, 2]));
    let b = write(&dir, "b.conf", &keepalived_conf(60, &[2, 3]));
    let load = |f: &Path| d.run(&["keepalived", f.to_str().unwrap(), "--load", "--socket", &sock]);
    let print = |f: &Path| d.stdout(&["keepalived", f.to_str().unwrap()]);
    // On a daemon started with --rules: the file's table, not a merge.
    let r = load(&a);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!r.stderr.contains("already exists"), "{r:?}");
    assert_eq!(d.stdout(&["-S", "-n"]), print(&a));
    let r = load(&b);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(d.stdout(&["-S", "-n"]), print(&b));
    assert!(print(&b).contains("-p 60"));
    // A file the daemon refuses (a fwmark service, which the lvsnic
    // director does not carry out; a real server without a [neighbors]
    // entry is learned now, not refused): non-zero, and the table is the
    // one before.
    let bad_text = keepalived_conf(30, &[2, 3, 77])
        + "virtual_server fwmark 7 {\n  lb_algo rr\n  lb_kind DR\n  real_server 192.168.10.9 80 {\n    weight 1\n  }\n}\n";
    let bad = write(&dir, "bad.conf", &bad_text);
    let r = load(&bad);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("not loaded, the daemon's rules are unchanged"), "{r:?}");
    assert_eq!(d.stdout(&["-S", "-n"]), print(&b));
    // A service added by hand is not keepalived's: a load leaves it, and
    // a load deletes only what the previous load had and the file has not.
    d.ok(&["-A", "-t", "10.0.0.150:80", "-s", "rr"]);
    let c = write(&dir, "c.conf", &keepalived_conf(60, &[2, 3]).split("virtual_server 10.0.0.101").next().unwrap().to_string());
    let r = load(&c);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(d.stdout(&["-S", "-n"]), print(&c) + "-A -t 10.0.0.150:80 -s rr\n");
    d.stop();
}

/// A closed TCP port on this host.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn keepalived_reload_keeps_a_dead_servers_state() {
    let dir = tmpdir("restart-ka-checkers");
    let port = closed_port();
    let conf = |weight2: u32| {
        format!(
            "virtual_server 10.0.0.100 80 {{\n  delay_loop 0.2\n  lb_algo rr\n  lb_kind NAT\n  protocol TCP\n\
             real_server 192.168.10.1 80 {{\n    weight 1\n    TCP_CHECK {{\n      connect_ip 127.0.0.1\n      connect_port {port}\n      retry 0\n    }}\n  }}\n\
             real_server 192.168.10.2 80 {{\n    weight {weight2}\n  }}\n}}\n"
        )
    };
    let d = start(&dir, &[]);
    let sock = d.sock.to_str().unwrap().to_string();
    let a = write(&dir, "a.conf", &conf(1));
    let r = d.run(&["keepalived", a.to_str().unwrap(), "--load", "--socket", &sock]);
    assert_eq!(r.code, 0, "{r:?}");
    // The checker finds rs1 dead and takes it out.
    let t0 = Instant::now();
    while d.stdout(&["-S", "-n"]).contains("192.168.10.1") {
        assert!(t0.elapsed() < Duration::from_secs(10), "rs1 never taken out");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Reloading a file that changes only rs2 keeps rs1 out: it is not put
    // back, even briefly (the reload's commands touch rs2 only).
    let b = write(&dir, "b.conf", &conf(3));
    let r = d.run(&["keepalived", b.to_str().unwrap(), "--load", "--socket", &sock]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("1 rule change(s) applied"), "{r:?}");
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert_eq!(d.stdout(&["-S", "-n"]), "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 3\n", "{log}");
    let listing = d.stdout(&["checkers", "--socket", &sock]);
    assert!(listing.contains("192.168.10.1:80 down"), "{listing}");
    d.stop();
}

#[path = "netns_harness.rs"]
mod netns;

/// Long-lived real TCP connections (kernel clients and servers in network
/// namespaces, the daemon on a TAP wire) through a kill -9 of the director
/// and a restart: every connection goes on with its real server. Prints
/// how long the restart took and the longest pause a connection saw
/// (a message sent just after the kill, answered once the restarted
/// daemon forwards again: the client's TCP retransmits it). Root only.
#[test]
#[ignore = "needs root, /dev/net/tun and iproute2 network namespaces (scripts/test.sh runs it as root)"]
fn e2e_long_lived_tcp_survives_kill9_and_restart() {
    use netns::*;
    if let Some(why) = unavailable() {
        panic!("cannot run here: {why}");
    }
    let p = format!("lvsnic-rst-{}", std::process::id());
    let mut nss = Namespaces::default();
    let Segment { hub, cl, rsns } = nss.segment(&p, 2);
    must(&["ip", "-n", &hub, "tuntap", "add", "mode", "tap", "name", "lvs0"]);
    must(&["ip", "-n", &hub, "link", "set", "lvs0", "master", "br0", "up"]);
    let client_ip = Ipv4Addr::new(198, 51, 100, 10);
    leaf(&hub, &cl, "vcl", &GATEWAY_MAC.to_string(), &format!("{client_ip}/24"));
    must(&["ip", "-n", &cl, "route", "add", &format!("{VIP}/32"), "dev", "eth0"]);
    for n in 1..=2u8 {
        let ns = &rsns[n as usize - 1];
        leaf(&hub, ns, &format!("vrs{n}"), &rs_mac(n).to_string(), &format!("{}/24", rs(n)));
        must(&["ip", "-n", ns, "route", "add", &format!("{DIRECTOR_IP}/32"), "dev", "eth0"]);
        must(&["ip", "-n", ns, "route", "add", "default", "via", &DIRECTOR_IP.to_string(), "dev", "eth0"]);
    }
    let dir = tmpdir("restart-e2e");
    let state = dir.join("state");
    let args = ["--backend", "model", "--wire", "tap:lvs0", "--state-dir", state.to_str().unwrap()];
    let d = Daemon::start_in(&["ip", "netns", "exec", &hub], &dir, &director_toml(), &args);
    d.ok(&["-A", "-t", "10.0.0.100:80", "-s", "rr"]);
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-m", "-w", "1"]);
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.2:80", "-m", "-w", "1"]);
    let blob = std::sync::Arc::new(vec![b'x'; 1024]);
    let _servers = [Server::start(&rsns[0], 80, "rs1", blob.clone()), Server::start(&rsns[1], 80, "rs2", blob)];
    let to: std::net::SocketAddr = (VIP, 80).into();
    const N: usize = 20;
    let mut echoes = Vec::new();
    for i in 0..N {
        let mut e = Echo::open(&cl, to);
        let who = e.say(&format!("hello {i}")).unwrap();
        let server = who.split_whitespace().next().unwrap().to_string();
        echoes.push((e, server));
    }
    // Let the periodic snapshot see them, then crash.
    std::thread::sleep(Duration::from_millis(1500));
    d.kill();
    let killed = Instant::now();
    let threads: Vec<_> = echoes
        .into_iter()
        .enumerate()
        .map(|(i, (mut e, server))| {
            std::thread::spawn(move || {
                e.s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let r = e.say(&format!("after {i}"));
                (server, r, killed.elapsed())
            })
        })
        .collect();
    let d = Daemon::start_in(&["ip", "netns", "exec", &hub], &dir, &director_toml(), &args);
    let restarted = killed.elapsed();
    let mut survived = 0;
    let mut longest = Duration::ZERO;
    for t in threads {
        let (server, r, took) = t.join().unwrap();
        // Answered by the server it had before the crash.
        if r.as_ref().is_ok_and(|l| l.starts_with(&format!("{server} after"))) {
            survived += 1;
            longest = longest.max(took);
        } else {
            eprintln!("lost: {server}: {r:?}");
        }
    }
    let log = std::fs::read_to_string(&d.log).unwrap();
    eprintln!(
        "MEASURE restart after kill -9: {N} long-lived connections, {survived} survived; daemon back in {} ms; longest pause {} ms; {}",
        restarted.as_millis(),
        longest.as_millis(),
        log.lines().find(|l| l.contains("restored from")).unwrap_or("")
    );
    assert_eq!(survived, N, "{log}");
    d.stop();
}
