//! `lvsnic` as ipvsadm against a running daemon: listings and saves byte
//! for byte against texts built here from ipvsadm's printf formats, `-R`
//! round trips, ipvsadm's error messages and exit statuses, daemon
//! lifecycle (second daemon refused, clean shutdown, stale socket).

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::director_toml;
use std::time::{Duration, Instant};

const RULES: &str = "\
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 3
-A -u 10.0.0.53:53 -s wlc -p 360 -M 255.255.255.0
-a -u 10.0.0.53:53 -r 192.168.10.3:53 -g -w 2
-A -t 10.0.0.101:443 -s sh -b sh-fallback,sh-port
-a -t 10.0.0.101:443 -r 192.168.10.4:443 -i -w 1 -x 100 -y 50
-A -t 192.168.0.10:80 -s wlc
-a -t 192.168.0.10:80 -r 192.168.10.5:80 -m -w 0
";

/// `ipvsadm -S -n` of RULES: services sorted by libipvs's comparison
/// (TCP before UDP; 192.168.0.10 before 10.0.0.100 because the address
/// difference wraps negative in an int), servers by address, thresholds
/// not saved, ipip tunnels with `--tun-type ipip`.
const SAVED: &str = "\
-A -t 192.168.0.10:80 -s wlc
-a -t 192.168.0.10:80 -r 192.168.10.5:80 -m -w 0
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 3
-A -t 10.0.0.101:443 -s sh -b sh-fallback,sh-port
-a -t 10.0.0.101:443 -r 192.168.10.4:443 -i -w 1 --tun-type ipip
-A -u 10.0.0.53:53 -s wlc -p 360 -M 255.255.255.0
-a -u 10.0.0.53:53 -r 192.168.10.3:53 -g -w 2
";

const HEAD: &str = "IP Virtual Server version 1.2.1 (size=4096)\n";
const TITLE: &str =
    "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n";

/// `"  -> %-28s %-7s %-6d %-10u %-10u\n"`
fn dest(addr: &str, fwd: &str, w: i32, act: u32, inact: u32) -> String {
    format!("  -> {addr:<28} {fwd:<7} {w:<6} {act:<10} {inact:<10}\n")
}

/// `"%-33s"` then five `"%9llu"`.
fn stats_line(name: &str, v: [u64; 5]) -> String {
    let mut s = format!("{name:<33}");
    for x in v {
        s.push_str(&format!("{x:>9}"));
    }
    s + "\n"
}

fn start(name: &str) -> Daemon {
    let dir = tmpdir(name);
    let rules = write(&dir, "rules", RULES);
    Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap()])
}

#[test]
fn listings_and_save_are_byte_exact() {
    let d = start("formats");
    let expect_list = format!(
        "{HEAD}{TITLE}TCP  192.168.0.10:80 wlc\n{}TCP  10.0.0.100:80 rr\n{}{}TCP  10.0.0.101:443 sh (sh-fallback,sh-port)\n{}UDP  10.0.0.53:53 wlc persistent 360 mask 255.255.255.0\n{}",
        dest("192.168.10.5:80", "Masq", 0, 0, 0),
        dest("192.168.10.1:80", "Masq", 1, 0, 0),
        dest("192.168.10.2:8080", "Masq", 3, 0, 0),
        dest("192.168.10.4:443", "Tunnel", 1, 0, 0),
        dest("192.168.10.3:53", "Route", 2, 0, 0),
    );
    let r = d.run(&["-L", "-n"]);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    assert_eq!(r.stdout, expect_list);
    // `-l`, clustered `-Ln`, long options and bare `lvsnic` list the same.
    for args in [&["-l", "-n"][..], &["-Ln"], &["--list", "--numeric"], &[]] {
        assert_eq!(d.run(args).stdout, expect_list, "{args:?}");
    }

    let r = d.run(&["-S", "-n"]);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, SAVED, ""));
    assert_eq!(d.run(&["--save"]).stdout, SAVED);

    let z = [0u64; 5];
    let expect_stats = format!(
        "{HEAD}{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n  -> RemoteAddress:Port\n{}{}{}{}{}{}{}{}{}",
        "Prot LocalAddress:Port",
        "Conns",
        "InPkts",
        "OutPkts",
        "InBytes",
        "OutBytes",
        stats_line("TCP  192.168.0.10:80", z),
        stats_line("  -> 192.168.10.5:80", z),
        stats_line("TCP  10.0.0.100:80", z),
        stats_line("  -> 192.168.10.1:80", z),
        stats_line("  -> 192.168.10.2:8080", z),
        stats_line("TCP  10.0.0.101:443", z),
        stats_line("  -> 192.168.10.4:443", z),
        stats_line("UDP  10.0.0.53:53", z),
        stats_line("  -> 192.168.10.3:53", z),
    );
    assert_eq!(d.run(&["-L", "-n", "--stats"]).stdout, expect_stats);
    // --rate: the same layout, every rate 0 (no traffic yet).
    let rates = d.run(&["-L", "-n", "--rate"]).stdout;
    assert!(rates.starts_with(&format!(
        "{HEAD}{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
        "Prot LocalAddress:Port", "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS"
    )));
    assert!(
        rates.contains(&format!("  -> {:<28} {:>8} {:>8} {:>8}{:>9}{:>9}\n", "192.168.10.1:80", 0, 0, 0, 0, 0)),
        "{rates}"
    );

    // --thresholds: "  -> %-28s %-10u %-10u %-10u %-10u"
    let th = d.run(&["-L", "-n", "--thresholds", "-t", "10.0.0.101:443"]).stdout;
    assert_eq!(
        th,
        format!(
            "{:<33} {:<10} {:<10} {:<10} {:<10}\n  -> RemoteAddress:Port\nTCP  10.0.0.101:443 sh (sh-fallback,sh-port)\n  -> {:<28} {:<10} {:<10} {:<10} {:<10}\n",
            "Prot LocalAddress:Port", "Uthreshold", "Lthreshold", "ActiveConn", "InActConn", "192.168.10.4:443", 100, 50, 0, 0
        )
    );

    // One service: no version line.
    let one = d.run(&["-L", "-n", "-t", "10.0.0.100:80"]).stdout;
    assert_eq!(
        one,
        format!(
            "{TITLE}TCP  10.0.0.100:80 rr\n{}{}",
            dest("192.168.10.1:80", "Masq", 1, 0, 0),
            dest("192.168.10.2:8080", "Masq", 3, 0, 0)
        )
    );

    // --timeout, --set (0 keeps a value), --daemon (none runs).
    assert_eq!(d.run(&["-L", "--timeout"]).stdout, "Timeout (tcp tcpfin udp): 900 120 300\n");
    d.ok(&["--set", "60", "0", "30"]);
    assert_eq!(d.run(&["-L", "-n", "--timeout"]).stdout, "Timeout (tcp tcpfin udp): 60 120 30\n");
    assert_eq!(d.run(&["-L", "--daemon"]), Ran { code: 0, stdout: String::new(), stderr: String::new() });

    // -L -n -c with no connections: the two title lines.
    assert_eq!(
        d.run(&["-L", "-n", "-c"]).stdout,
        "IPVS connection entries\npro expire state       source             virtual            destination\n"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

#[test]
fn rule_changes_then_restore_of_a_save_reproduces_it() {
    let d = start("restore");
    d.ok(&["-E", "-t", "10.0.0.100:80", "-s", "wrr"]);
    d.ok(&["-e", "-t", "10.0.0.100:80", "-r", "192.168.10.2:8080", "-m", "-w", "5"]);
    d.ok(&["-d", "-t", "10.0.0.101:443", "-r", "192.168.10.4"]);
    d.ok(&["-D", "-t", "192.168.0.10:80"]);
    d.ok(&["-A", "-u", "10.0.0.54:5060", "-s", "rr", "-o"]);
    d.ok(&["-a", "-u", "10.0.0.54:5060", "-r", "192.168.10.6", "-m"]);
    let saved = "\
-A -t 10.0.0.100:80 -s wrr
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 5
-A -t 10.0.0.101:443 -s sh -b sh-fallback,sh-port
-A -u 10.0.0.53:53 -s wlc -p 360 -M 255.255.255.0
-a -u 10.0.0.53:53 -r 192.168.10.3:53 -g -w 2
-A -u 10.0.0.54:5060 -s rr -o
-a -u 10.0.0.54:5060 -r 192.168.10.6:5060 -m -w 1
";
    assert_eq!(d.run(&["-S", "-n"]).stdout, saved);
    // Save, clear, restore: the same save.
    d.ok(&["-C"]);
    assert_eq!(d.run(&["-S", "-n"]).stdout, "");
    assert_eq!(d.run(&["-L", "-n"]).stdout, format!("{HEAD}{TITLE}"));
    let r = d.run_in(&["-R"], saved);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
    assert_eq!(d.run(&["-S", "-n"]).stdout, saved);
    // The original rules file (another order, thresholds, `ipvsadm` words)
    // restores to SAVED.
    d.ok(&["--clear"]);
    let script = RULES.replace("-A -u", "ipvsadm -A -u");
    let r = d.run_in(&["--restore"], &script);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    assert_eq!(d.run(&["-S", "-n"]).stdout, SAVED);
    // ipvsadm 1.31's -R has no comments (seen in the VM): a `#` line ends
    // the restore as a usage error; the lines before it stay loaded.
    d.ok(&["--clear"]);
    let r = d.run_in(&["--restore"], &format!("-A -t 10.0.0.100:80 -s rr\n# from a script\n{script}"));
    assert_eq!(r.code, 255);
    assert!(r.stderr.starts_with("Try `") && r.stderr.lines().count() == 1, "{}", r.stderr);
    assert_eq!(d.run(&["-S", "-n"]).stdout, "-A -t 10.0.0.100:80 -s rr\n");
}

#[test]
fn errors_are_printed_as_ipvsadm_prints_them() {
    let d = start("errors");
    let cases: &[(&[&str], i32, &str)] = &[
        // libipvs ipvs_strerror() for what the kernel refuses: status 255.
        (&["-A", "-t", "10.0.0.100:80"], 255, "Service already exists\n"),
        (&["-E", "-t", "10.9.9.9:80", "-s", "rr"], 255, "No such service\n"),
        (&["-D", "-t", "10.9.9.9:80"], 255, "No such service\n"),
        (&["-Z", "-t", "10.9.9.9:80"], 255, "No such service\n"),
        (&["-a", "-t", "10.9.9.9:80", "-r", "192.168.10.1"], 255, "Service not defined\n"),
        (&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-m"], 255, "Destination already exists\n"),
        (&["-e", "-t", "10.0.0.100:80", "-r", "192.168.10.7:80", "-m"], 255, "No such destination\n"),
        (&["-d", "-t", "10.0.0.100:80", "-r", "192.168.10.8:80"], 255, "No such destination\n"),
        (&["-A", "-t", "10.0.0.9:80", "-s", "bogus"], 255, "Scheduler or persistence engine not found\n"),
        (&["-E", "-t", "10.0.0.100:80", "-s", "bogus"], 255, "Scheduler or persistence engine not found\n"),
        (
            &["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.6:80", "-m", "-x", "5", "-y", "10"],
            255,
            "Numerical result out of range\n",
        ),
        // fail(2, ...): ipvsadm's own checks, status 2.
        (&["-A", "-t", "10.0.0.9:80", "-w", "2"], 2, "Illegal 'weight' option with the 'add-service' command\n"),
        (&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-w", "2147483648"], 2, "illegal weight specified\n"),
        (&["-A", "-t", "10.0.0.9:0", "-s", "rr"], 2, "Zero port specified for non-persistent service\n"),
        (
            &["-a", "-t", "10.0.0.100:80"],
            2,
            "You need to supply the 'real-server' option for the 'add-server' command\n",
        ),
        (&["--set", "1", "2"], 2, "--set option requires 3 timeout values\n"),
        (&["-L", "-n", "-c", "--stats"], 2, "options conflicts in the list command\n"),
        (&["-A", "-A"], 2, "invalid option `-A'\n"),
        (&["-A", "-t", "10.0.0.9:80", "-s", "rr", "foo"], 2, "unexpected argument foo\n"),
        // popt errors after the command: status 255.
        (&["-A", "-Q"], 255, "-Q: unknown option\n"),
        (&["-A", "-t"], 255, "-t: missing argument\n"),
        // -L of a missing service: exit(1).
        (&["-L", "-n", "-t", "10.9.9.9:80"], 1, "No such service\n"),
    ];
    for (args, code, err) in cases {
        let r = d.run(args);
        assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (*code, "", *err), "lvsnic {args:?}");
    }
    // No command: "Try `PROG -h' ..." with PROG as invoked, status 255.
    let r = d.run(&["-Q"]);
    assert_eq!(r.code, 255);
    assert_eq!(r.stderr, format!("Try `{LVSNIC} -h' or '{LVSNIC} --help' for more information.\n"));
    // What the lvsnic director cannot do: one line, status 255.
    for args in [
        &["-A", "-f", "1", "-s", "rr"][..],
        &["-A", "--sctp-service", "10.0.0.9:80"],
        // (A real server without a [neighbors] entry is no longer one:
        // the daemon learns its MAC, tests/neighbors_model.rs.)
    ] {
        let r = d.run(args);
        assert_eq!(r.code, 255, "{args:?}: {r:?}");
        assert_eq!(r.stderr.lines().count(), 1, "{r:?}");
    }
    // Nothing changed.
    assert_eq!(d.run(&["-S", "-n"]).stdout, SAVED);
    // -R: kernel errors are printed and the restore goes on; the status is the last line's.
    let r = d.run_in(&["-R"], "-A -t 10.0.0.100:80 -s rr\n-A -t 10.0.0.102:80 -s rr\n");
    assert_eq!((r.code, r.stderr.as_str()), (0, "Service already exists\n"));
    let r = d.run_in(&["-R"], "-A -t 10.0.0.103:80 -s rr\n-A -t 10.0.0.100:80 -s rr\n");
    assert_eq!((r.code, r.stderr.as_str()), (255, "Service already exists\n"));
    // ... and a fail() ends it.
    let r = d.run_in(&["-R"], "-A -t 10.0.0.104:80 -w 1\n-A -t 10.0.0.105:80 -s rr\n");
    assert_eq!((r.code, r.stderr.as_str()), (2, "Illegal 'weight' option with the 'add-service' command\n"));
    let keys = d.run(&["-S", "-n"]).stdout;
    assert!(
        keys.contains("10.0.0.102:80") && keys.contains("10.0.0.103:80") && !keys.contains("10.0.0.105:80"),
        "{keys}"
    );
}

#[test]
fn help_and_version_work_without_a_daemon_and_a_missing_daemon_is_one_clear_error() {
    let dir = tmpdir("nodaemon");
    let sock = dir.join("none.sock");
    let r = lvsnic_at(&sock, &["-h"], None);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains(&format!("  {LVSNIC} -A|E virtual-service [-s scheduler]")), "{}", r.stdout);
    assert!(r.stdout.contains("--set tcp tcpfin udp        set connection timeout values"));
    let r = lvsnic_at(&sock, &["-v"], None);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("ipvsadm v1.31"));
    for args in [&["-L", "-n"][..], &[]] {
        let r = lvsnic_at(&sock, args, None);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains(sock.to_str().unwrap()), "{r:?}");
        assert_eq!(r.stdout, "");
    }
}

#[test]
fn one_daemon_per_socket_clean_shutdown_and_stale_socket() {
    let dir = tmpdir("lifecycle");
    let d = Daemon::start(&dir, &director_toml(), &[]);
    // A second daemon on the same socket is refused, and leaves it alone.
    let o = std::process::Command::new(LVSNIC)
        .args([
            "daemon",
            "--backend",
            "model",
            "--director",
            dir.join("director.toml").to_str().unwrap(),
            "--socket",
            d.sock.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim_end(), format!("lvsnic: another lvsnic daemon is already listening on {}", d.sock.display()));
    d.ok(&["-A", "-t", "10.0.0.100:80", "-s", "rr"]);
    let sock = d.sock.clone();
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let out = std::fs::read_to_string(dir.join("daemon.out")).unwrap();
    assert!(out.starts_with("lvsnic daemon: stopped;"), "{log} {out}");
    assert!(!sock.exists(), "socket removed on SIGTERM");

    // A stale socket file (nobody listening) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let d = Daemon::start(&dir, &director_toml(), &[]);
    // It comes back with the running state (issue 19: SOCKET.state).
    assert_eq!(d.run(&["-S", "-n"]).stdout, "-A -t 10.0.0.100:80 -s rr\n", "the state kept");
    // SIGINT stops it too.
    let sock = d.sock.clone();
    let status = d.status();
    assert_eq!(status["director"]["services"].as_array().unwrap().len(), 1);
    drop(d);
    assert!(!sock.exists());

    // A file that is not a socket is not removed.
    std::fs::write(&sock, "x").unwrap();
    let o = std::process::Command::new(LVSNIC)
        .args(["daemon", "--backend", "model", "--director", dir.join("director.toml").to_str().unwrap(), "--socket", sock.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a socket"));
    assert_eq!(std::fs::read_to_string(&sock).unwrap(), "x");
}

#[test]
fn bad_configuration_is_one_line() {
    let dir = tmpdir("badcfg");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -w 2147483648\n");
    let dcfg = write(&dir, "director.toml", &director_toml());
    let run = |args: &[&str]| {
        let o = std::process::Command::new(LVSNIC)
            .arg("daemon")
            .args(["--backend", "model"])
            .args(args)
            .arg("--socket")
            .arg(dir.join("s"))
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (c, e) = run(&["--director", dcfg.to_str().unwrap(), "--rules", rules.to_str().unwrap()]);
    assert_eq!(c, Some(1));
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("line 2") && e.contains("illegal weight specified"), "{e}");
    let bad = write(&dir, "bad.toml", &(director_toml() + "[limits]\nnew_conn_per_sec = 0\n"));
    let (c, e) = run(&["--director", bad.to_str().unwrap()]);
    assert_eq!(c, Some(1));
    assert!(e.contains("new_conn_per_sec") && e.lines().count() == 1, "{e}");
}

/// `lvsnic status` keeps the sections and counters that the tests and
/// docs read (docs/user-guide.md: `exception_loop.dropped_on_receive`,
/// `exception_loop.in_hardware`, `control_refused`; e2e_ha:
/// `director.total.inpkts`; ...), with the director's and the daemon's
/// sections side by side at the top level.
#[test]
fn status_keeps_the_keys_tests_and_docs_read() {
    let dir = tmpdir("statuskeys");
    let rules = write(&dir, "rules", RULES);
    let cfg = director_toml() + "[limits]\nnew_conn_per_sec = 1000\n";
    // `lvsnic traffic` takes no `[limits]`.
    let dcfg = write(&dir, "d.toml", &director_toml());
    let (r, c) = (rules.to_str().unwrap(), dcfg.to_str().unwrap());
    let inp = dir.join("in.pcap");
    let o = std::process::Command::new(LVSNIC)
        .args(["traffic", "--rules", r, "--director", c, "--output", inp.to_str().unwrap(), "--seed", "3", "--connections", "20"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w = format!("pcap:{},{}", inp.display(), dir.join("out.pcap").display());
    let d = Daemon::start(&dir, &cfg, &["--rules", r, "--wire", &w, "--pace", "step"]);
    d.stdout(&["wire", "--socket", d.sock.to_str().unwrap()]);
    let st = d.status();
    let top: Vec<&str> = st.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "control",
        "control_refused",
        "director",
        "exception_loop",
        "host_dropped",
        "limits",
        "loop_nice",
        "loop_steps",
        "neighbors",
        "now_ns",
        "offload",
        "pcap_frames_left",
        "state",
        "sync",
        "tx_dropped",
        "vips",
    ];
    want.sort();
    assert_eq!(top, want, "{st}");
    let num = |path: &[&str]| {
        let v = path.iter().fold(&st, |v, k| &v[*k]);
        v.as_u64().unwrap_or_else(|| panic!("status {} is not a count: {v}", path.join(".")))
    };
    for path in [
        &["now_ns"][..],
        &["director", "total", "inpkts"],
        &["director", "total", "outpkts"],
        &["director", "connections", "created"],
        &["director", "connections", "live"],
        &["director", "frames", "input"],
        &["director", "reassembly", "held"],
        &["exception_loop", "frames"],
        &["exception_loop", "in_hardware"],
        &["exception_loop", "exceptions"],
        &["exception_loop", "rate_limited"],
        &["exception_loop", "transmitted"],
        &["exception_loop", "to_host"],
        &["exception_loop", "dropped_on_receive", "empty"],
        &["exception_loop", "dropped_on_receive", "runt"],
        &["exception_loop", "dropped_on_receive", "oversize"],
        &["exception_loop", "dropped_on_receive", "ring"],
        &["offload", "connections"],
        &["offload", "diverted"],
        &["offload", "table_full"],
        &["offload", "busy_timeouts"],
        &["limits", "new_conn_per_sec"],
        &["limits", "burst"],
        &["limits", "limited"],
        &["limits", "services", "TCP 10.0.0.100:80", "admitted"],
        &["limits", "services", "TCP 10.0.0.100:80", "limited"],
        &["host_dropped"],
        &["tx_dropped"],
        &["state", "written"],
        &["state", "failed"],
        &["control", "accepted"],
        &["control", "deadline_cut"],
        &["control", "too_large"],
        &["control", "longest_control_us"],
        &["control", "bulk_promoted"],
        &["control_refused"],
        &["pcap_frames_left"],
    ] {
        num(path);
    }
    // Each step of the forwarding loop, timed: its longest run and how
    // many runs took over a millisecond.
    for step in ["neighbors", "host_addrs", "control", "wire", "health", "device", "sync", "timers", "state", "diverted"] {
        num(&["loop_steps", step, "longest_us"]);
        num(&["loop_steps", step, "over_1ms"]);
    }
    assert_eq!(st["loop_steps"].as_object().map(|o| o.len()), Some(10), "{st}");
    assert!(num(&["loop_steps", "wire", "longest_us"]) > 0, "frames were run: {st}");
    assert!(num(&["exception_loop", "frames"]) > 50 && num(&["director", "total", "inpkts"]) > 0, "{st}");
    assert_eq!(num(&["pcap_frames_left"]), 0);
    assert_eq!(num(&["limits", "new_conn_per_sec"]), 1000);
    assert!(st["director"]["services"].is_array() && st["director"]["dropped"].is_object(), "{st}");
    assert!(st["sync"].is_object() && st["sync"]["master"].is_null() && st["sync"]["backup"].is_null(), "{st}");
    assert_eq!(st["vips"], "master", "{st}");
}

/// The event log (issue 21, item 4): a rule change names who made it (uid
/// and pid from the socket), the command and its status, a refused one
/// its error; VIP ownership changes are logged; `--log-level warn` keeps
/// the info lines out.
#[test]
fn event_log_names_who_changed_what_and_honours_the_level() {
    let events = |d: &Daemon| -> Vec<String> {
        std::fs::read_to_string(&d.log).unwrap().lines().filter(|l| l.contains("event=")).map(String::from).collect()
    };
    let me = String::from_utf8(std::process::Command::new("id").arg("-u").output().unwrap().stdout).unwrap();
    let dir = tmpdir("eventlog");
    let d = Daemon::start(&dir, &director_toml(), &[]);
    d.ok(&["-A", "-t", "10.0.0.100:80", "-s", "rr"]);
    let r = d.run(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-w", "-1"]);
    assert_ne!(r.code, 0);
    assert_eq!(d.run(&["vip", "backup", "10.0.0.100"]).code, 0);
    assert_eq!(d.run(&["vip", "master", "10.0.0.100"]).code, 0);
    d.ok(&["-L", "-n"]);
    let ev = events(&d);
    let e = ev.join("\n");
    let who = format!("lvsnic daemon: info: event=rule_change uid={} pid=", me.trim());
    let added: Vec<&String> = ev.iter().filter(|l| l.starts_with(&who)).collect();
    assert!(added.iter().any(|l| l.ends_with(" command=\"ipvsadm -A -t 10.0.0.100:80 -s rr\" exit=0 error=\"\"")), "{e}");
    // The refused one: a warning with ipvsadm's first line of error.
    let refused = format!("lvsnic daemon: warn: event=rule_change uid={} pid=", me.trim());
    assert!(ev.iter().any(|l| l.starts_with(&refused) && l.contains("command=\"ipvsadm -a -t 10.0.0.100:80 -r 192.168.10.1:80 -w -1\" exit=2 error=\"illegal weight specified\"")), "{e}");
    assert!(ev.contains(&"lvsnic daemon: info: event=vip_backup vip=10.0.0.100 source=\"lvsnic vip\"".to_string()), "{e}");
    assert!(ev.contains(&"lvsnic daemon: info: event=vip_master vip=10.0.0.100 source=\"lvsnic vip\"".to_string()), "{e}");
    // Listings are not changes.
    assert!(!e.contains("-L -n"), "{e}");
    drop(d);

    let dir = tmpdir("eventlog-warn");
    let d = Daemon::start(&dir, &director_toml(), &["--log-level", "warn"]);
    d.ok(&["-A", "-t", "10.0.0.100:80", "-s", "rr"]);
    let _ = d.run(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-w", "-1"]);
    let ev = events(&d);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(ev[0].starts_with("lvsnic daemon: warn: event=rule_change"), "{ev:?}");
}

/// The event log marks the onset and the end of rate limiting: one warning
/// when new connections start being dropped, one line when a second passes
/// without more (not one line per dropped frame).
#[test]
fn event_log_marks_the_onset_and_end_of_rate_limiting() {
    let dir = tmpdir("eventlog-limits");
    let rules = write(&dir, "rules", RULES);
    let dcfg = write(&dir, "d.toml", &director_toml());
    let (r, c) = (rules.to_str().unwrap(), dcfg.to_str().unwrap());
    let inp = dir.join("in.pcap");
    let o = std::process::Command::new(LVSNIC)
        .args(["traffic", "--rules", r, "--director", c, "--output", inp.to_str().unwrap(), "--seed", "5", "--connections", "300", "--duration", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cfg = director_toml() + "[limits]\nnew_conn_per_sec = 10\nburst = 5\n";
    let w = format!("pcap:{},{}", inp.display(), dir.join("out.pcap").display());
    let d = Daemon::start(&dir, &cfg, &["--rules", r, "--wire", &w]);
    let t0 = std::time::Instant::now();
    let ended = loop {
        let log = std::fs::read_to_string(&d.log).unwrap();
        let ev: Vec<String> = log.lines().filter(|l| l.contains("event=rate_limited")).map(String::from).collect();
        if ev.len() >= 2 || t0.elapsed() > std::time::Duration::from_secs(20) {
            break ev;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let st = d.status();
    let limited = st["exception_loop"]["rate_limited"].as_u64().unwrap();
    assert!(limited > 0, "{}", st["limits"]);
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert!(ended[0].starts_with("lvsnic daemon: warn: event=rate_limited state=begin dropped="), "{ended:?}");
    assert_eq!(ended[1], format!("lvsnic daemon: info: event=rate_limited state=end dropped={limited} total={limited}"));
}

/// A real server whose ARP answers disagree with its `[neighbors]` entry
/// (issue 21, item 4): counted in `status`, one warning in the event log
/// (not one per frame), and one line when it answers with the configured
/// MAC again; the static entry still wins.
#[test]
fn arp_answers_that_contradict_a_static_neighbor_are_logged_and_counted() {
    let arp = |op: u16, sha: [u8; 6], spa: [u8; 4]| -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 0x01];
        f.extend_from_slice(&sha);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4]);
        f.extend_from_slice(&op.to_be_bytes());
        f.extend_from_slice(&sha);
        f.extend_from_slice(&spa);
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 10, 0, 0, 1]);
        f.resize(60, 0);
        f
    };
    let (good, moved) = ([2, 0, 0, 0, 0x10, 1], [2, 0, 0, 0, 0x99, 1]);
    let frames = vec![
        (1_000_000_000, arp(2, good, [192, 168, 10, 1])),
        (1_100_000_000, arp(2, moved, [192, 168, 10, 1])),
        (1_200_000_000, arp(1, moved, [192, 168, 10, 1])),
        (1_300_000_000, arp(2, moved, [192, 168, 10, 1])),
        (1_400_000_000, arp(2, moved, [192, 168, 10, 77])), // not a neighbour
    ];
    let dir = tmpdir("neighbor-mismatch");
    let inp = dir.join("in.pcap");
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{}", inp.display(), dir.join("out.pcap").display());
    let d = Daemon::start(&dir, &director_toml(), &["--wire", &w, "--pace", "step"]);
    d.stdout(&["wire", "--socket", d.sock.to_str().unwrap()]);
    let st = d.status();
    assert_eq!(st["neighbors"]["mismatches"], 3, "{}", st["neighbors"]);
    assert_eq!(st["neighbors"]["mismatched"]["192.168.10.1"], "02:00:00:00:99:01");
    let log = std::fs::read_to_string(&d.log).unwrap();
    let ev: Vec<&str> = log.lines().filter(|l| l.contains("event=neighbor")).collect();
    assert_eq!(
        ev,
        ["lvsnic daemon: warn: event=neighbor_mismatch ip=192.168.10.1 configured=02:00:00:00:10:01 seen=02:00:00:00:99:01 arp=reply"]
    );
    drop(d);
    // The configured MAC answers again: the mismatch is over.
    let dir = tmpdir("neighbor-mismatch-back");
    let inp = dir.join("in.pcap");
    write_pcap(&inp, &[frames[1].clone(), (1_500_000_000, arp(2, good, [192, 168, 10, 1]))]);
    let w = format!("pcap:{},{}", inp.display(), dir.join("out.pcap").display());
    let d = Daemon::start(&dir, &director_toml(), &["--wire", &w, "--pace", "step"]);
    d.stdout(&["wire", "--socket", d.sock.to_str().unwrap()]);
    let st = d.status();
    assert_eq!(st["neighbors"]["mismatches"], 1);
    assert_eq!(st["neighbors"]["mismatched"], serde_json::json!({}));
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(log.contains("lvsnic daemon: info: event=neighbor_match ip=192.168.10.1 mac=02:00:00:00:10:01 arp=reply"), "{log}");
}

/// The CPUs a thread of process `pid` may run on, from
/// `/proc/PID/task/TID/status` (`Cpus_allowed_list`, e.g. `0-3,5`).
fn cpus_allowed(pid: u32, tid: &str) -> Vec<usize> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap_or_default();
    let list = st.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap_or("").trim().to_string();
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

/// `--loop-cpu CPU`: the forwarding loop (the daemon's main thread) runs
/// on CPU alone and every other thread on the rest, including a thread
/// started from the loop after the start (a sync daemon); `status` says
/// so; a CPU the process may not use, or the only one, is one clear line.
#[test]
fn loop_cpu_puts_the_loop_alone_on_its_cpu() {
    let allowed = cpus_allowed(std::process::id(), &std::process::id().to_string());
    let dir = tmpdir("loopcpu");
    let dcfg = write(&dir, "director.toml", &director_toml());
    let refused = |cpu: &str, taskset: Option<&str>| {
        let mut c = match taskset {
            Some(cpus) => {
                let mut c = std::process::Command::new("taskset");
                c.args(["-c", cpus, LVSNIC]);
                c
            }
            None => std::process::Command::new(LVSNIC),
        };
        let o = c.args(["daemon", "--backend", "model", "--director", dcfg.to_str().unwrap(), "--loop-cpu", cpu, "--socket"]).arg(dir.join("s")).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (c, e) = refused("1023", None);
    assert_eq!((c, e.lines().count()), (Some(1), 1), "{e}");
    assert!(e.starts_with("lvsnic: --loop-cpu 1023: this process may run on CPUs "), "{e}");
    if allowed.len() < 2 {
        eprintln!("loop_cpu_puts_the_loop_alone_on_its_cpu: one CPU only, placement not tried");
        return;
    }
    let only = allowed[0].to_string();
    let (c, e) = refused(&only, Some(&only));
    assert_eq!(c, Some(1), "{e}");
    assert!(e.contains("it is the only CPU this process may run on"), "{e}");

    let cpu = *allowed.last().unwrap();
    let others: Vec<usize> = allowed.iter().copied().filter(|&c| c != cpu).collect();
    let d = Daemon::start(&dir, &director_toml(), &["--loop-cpu", &cpu.to_string()]);
    // A thread the loop starts: the backup sync daemon's receiver (on
    // loopback, a port of its own).
    let port = (20_000 + std::process::id() % 20_000).to_string();
    d.ok(&["--start-daemon", "backup", "--mcast-interface", "lo", "--syncid", "7", "--mcast-port", &port]);
    let pid = d.pid();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tids: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let placed = tids.iter().map(|t| (t.clone(), cpus_allowed(pid, t))).collect::<Vec<_>>();
        let main_ok = placed.iter().any(|(t, c)| t == &pid.to_string() && c == &vec![cpu]);
        let rest_ok = placed.iter().filter(|(t, _)| t != &pid.to_string()).all(|(_, c)| c == &others);
        if main_ok && rest_ok && tids.len() >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "threads and their CPUs (loop {cpu}, others {others:?}): {placed:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let st = d.status();
    assert_eq!(st["placement"]["loop_cpu"], cpu, "{st}");
    assert_eq!(st["placement"]["others"], serde_json::json!(others), "{st}");
    assert!(counter(&st, &["placement", "moved"]) >= 1, "the sync daemon's thread was moved: {st}");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
