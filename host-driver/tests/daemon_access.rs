//! Who may use the daemon (root only: the tests start processes as the
//! user `nobody`, `setuid` in the child through std's `CommandExt::uid`):
//!
//! * the control socket is safe from its first instant: daemons started
//!   under umask 000 while `nobody` connects in a loop (a Perl loop, perl
//!   being Essential on Debian) and the test itself `lstat`s the socket
//!   path in a loop: nobody gets in, and the path never shows another mode
//!   than 0600 (`LVSNIC_ACCESS_STARTS`, default 1000; `LVSNIC_ACCESS_BIN`
//!   runs another build, e.g. the code before this test, to compare);
//! * every connection's `SO_PEERCRED` is checked: `nobody` on a socket
//!   made world-writable by hand is refused with one line and counted;
//! * `--socket-group`: its members (primary or supplementary group) may
//!   list, not change;
//! * `MISC_CHECK` scripts run as keepalived's script user, never as root
//!   unless `script_user root` says so, and `enable_script_security`
//!   refuses a script under a directory anyone may write.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;
const NOGROUP: u32 = 65534;
/// A group nobody is not in (no name needed: `--socket-group` takes a GID).
const LISTERS: u32 = 4242;

/// The daemon binary under test (`LVSNIC_ACCESS_BIN` to compare another build).
fn bin() -> String {
    std::env::var("LVSNIC_ACCESS_BIN").unwrap_or_else(|_| LVSNIC.to_string())
}

/// A directory `nobody` may enter (tmpdir's are root's, 0755).
fn open_dir(name: &str) -> PathBuf {
    let d = tmpdir(name);
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// `lvsnic ARGS` as `uid:gid` (supplementary groups cleared by std's `uid`).
fn lvsnic_as_user(uid: u32, gid: u32, sock: &Path, args: &[&str]) -> Ran {
    let o = Command::new(LVSNIC)
        .args(args)
        .env("LVSNIC_SOCKET", sock)
        .uid(uid)
        .gid(gid)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Ran {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// One request from root on `sock`; the raw reply line.
fn request(sock: &Path, json: &str) -> String {
    let mut s = UnixStream::connect(sock).unwrap();
    s.write_all(format!("{json}\n").as_bytes()).unwrap();
    let mut r = String::new();
    BufReader::new(s).read_line(&mut r).unwrap();
    r
}

/// The racer: `nobody` connecting to `sock` in a loop until `stop`
/// exists, sending an `-A` on every connection; prints "tries connects
/// executed" (executed: a reply that is not a refusal).
const RACER: &str = r#"
use strict; use IO::Socket::UNIX;
my ($sock, $stop) = @ARGV;
my ($tries, $conn, $in) = (0, 0, 0);
$| = 1;
until (-e $stop) {
    $tries++;
    my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $sock) or next;
    $conn++;
    print $s "{\"op\":\"ipvsadm\",\"argv\":[\"-A\",\"-t\",\"10.66.0.$conn:80\"]}\n";
    my $r = <$s>;
    if (defined $r && $r !~ /permission denied/) { $in++; print STDERR "got in: $r"; }
}
print "$tries $conn $in\n";
"#;

#[test]
#[ignore = "needs root (processes as nobody); scripts/test.sh runs it as root"]
fn nobody_racing_daemon_starts_never_gets_in() {
    let starts: u32 = std::env::var("LVSNIC_ACCESS_STARTS").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let dir = open_dir("access-race");
    let director = write(&dir, "director.toml", &lvsnic_fixtures::director_toml());
    let sock = dir.join("lvsnic.sock");
    let stop = dir.join("stop");
    let script = write(&dir, "racer.pl", RACER);
    let racer = Command::new("perl")
        .arg(&script)
        .arg(&sock)
        .arg(&stop)
        .uid(NOBODY)
        .gid(NOGROUP)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perl");
    // Root watches the path too: any instant it names a socket whose mode
    // is not 0600 (or that is not root's) is an exposure.
    let done = Arc::new(AtomicBool::new(false));
    let exposed = Arc::new(AtomicU64::new(0));
    let looks = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (done, exposed, looks, sock) = (done.clone(), exposed.clone(), looks.clone(), sock.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Ok(m) = std::fs::symlink_metadata(&sock) {
                    looks.fetch_add(1, Ordering::Relaxed);
                    if m.mode() & 0o7777 != 0o600 || m.uid() != 0 {
                        exposed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                std::thread::yield_now();
            }
        })
    };
    let t0 = Instant::now();
    for i in 0..starts {
        let mut d = Command::new("sh")
            .args(["-c", "umask 000; exec \"$0\" \"$@\""])
            .arg(bin())
            .arg("daemon")
            .args(["--backend", "model"])
            .arg("--director")
            .arg(&director)
            .arg("--socket")
            .arg(&sock)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        let mut conn = loop {
            if let Ok(s) = UnixStream::connect(&sock) {
                break s;
            }
            if let Some(st) = d.try_wait().unwrap() {
                panic!("start {i}: the daemon exited ({st})");
            }
            assert!(t.elapsed() < Duration::from_secs(20), "start {i}: the daemon did not start");
            std::thread::yield_now();
        };
        conn.write_all(b"{\"op\":\"shutdown\"}\n").unwrap();
        let mut r = String::new();
        let _ = BufReader::new(conn).read_line(&mut r);
        assert!(d.wait().unwrap().success(), "start {i}");
    }
    let took = t0.elapsed();
    std::fs::write(&stop, "").unwrap();
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let out = racer.wait_with_output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    let n: Vec<u64> = line.split_whitespace().map(|w| w.parse().unwrap()).collect();
    assert_eq!(n.len(), 3, "racer: {line} {}", String::from_utf8_lossy(&out.stderr));
    let (exposed, looks) = (exposed.load(Ordering::Relaxed), looks.load(Ordering::Relaxed));
    eprintln!(
        "{starts} daemon starts under umask 000 in {took:.1?} ({:.1} ms each): nobody tried to connect {} times, connected {}, got in {}; \
         root saw the socket path {looks} times, {exposed} of them with another mode than 0600",
        took.as_secs_f64() * 1000.0 / f64::from(starts.max(1)),
        n[0],
        n[1],
        n[2]
    );
    assert!(n[0] > u64::from(starts), "the racer hardly ran: {line}");
    assert_eq!(n[2], 0, "nobody got in: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(n[1], 0, "nobody could even connect");
    assert_eq!(exposed, 0, "the socket path was seen with another mode than 0600");
}

#[test]
#[ignore = "needs root (processes as nobody); scripts/test.sh runs it as root"]
fn nobody_is_refused_by_peer_credentials() {
    let dir = open_dir("access-peercred");
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &[]);
    let m = std::fs::metadata(&d.sock).unwrap();
    assert_eq!((m.mode() & 0o7777, m.uid()), (0o600, 0));
    // The file's mode keeps nobody out...
    let r = lvsnic_as_user(NOBODY, NOGROUP, &d.sock, &["-L", "-n"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        format!(
            "lvsnic: permission denied on {}: the control socket is mode 0600, root's only: run as root (sudo), or start the daemon with --socket-group GROUP to let that group's members list\n",
            d.sock.display()
        )
    );
    // ...and were it opened to all, the peer's credentials would.
    std::fs::set_permissions(&d.sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    for args in [&["-A", "-t", "10.66.0.1:80", "-s", "rr"][..], &["-L", "-n"], &["status"], &["vip", "master", "10.0.0.100"]] {
        let r = lvsnic_as_user(NOBODY, NOGROUP, &d.sock, args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert_eq!(r.stdout, "");
        assert!(r.stderr.starts_with("lvsnic daemon: permission denied: ") && r.stderr.lines().count() == 1, "{r:?}");
    }
    // Nothing nobody asked for happened; root still may do everything.
    assert_eq!(d.stdout(&["-S", "-n"]), "");
    assert_eq!(counter(&d.status(), &["control_refused"]), 4);
    let raw = request(&d.sock, r#"{"op":"shutdown"}"#);
    assert!(raw.contains("\"exit\":0"), "root may: {raw}");
    let (_, log) = d.stop();
    assert_eq!(log.matches("lvsnic daemon: refused").count(), 4, "{log}");
    assert!(log.contains("refused ipvsadm -A -t 10.66.0.1:80 -s rr (uid 65534, gid 65534, pid "), "{log}");
}

#[test]
#[ignore = "needs root (processes as nobody); scripts/test.sh runs it as root"]
fn socket_group_members_list_but_do_not_change() {
    let dir = open_dir("access-group");
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &["--socket-group", &LISTERS.to_string()]);
    let m = std::fs::metadata(&d.sock).unwrap();
    assert_eq!((m.mode() & 0o7777, m.uid(), m.gid()), (0o660, 0, LISTERS));
    d.ok(&["-A", "-t", "10.0.0.100:80", "-s", "rr"]);
    let listing = d.stdout(&["-L", "-n"]);
    // A member by its primary group...
    let r = lvsnic_as_user(NOBODY, LISTERS, &d.sock, &["-L", "-n"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, listing.as_str()), "{r:?}");
    for args in [&["-S", "-n"][..], &["status"], &["checkers"], &["vip"]] {
        let r = lvsnic_as_user(NOBODY, LISTERS, &d.sock, args);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
    }
    for args in [
        &["-A", "-t", "10.66.0.1:80", "-s", "rr"][..],
        &["-D", "-t", "10.0.0.100:80"],
        &["-Z"],
        &["-C"],
        &["--set", "1", "2", "3"],
        &["vip", "backup", "10.0.0.100"],
    ] {
        let r = lvsnic_as_user(NOBODY, LISTERS, &d.sock, args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert!(r.stderr.starts_with("lvsnic daemon: permission denied: ") && r.stderr.lines().count() == 1, "{r:?}");
    }
    // ...or a supplementary one (SO_PEERGROUPS).
    let o = Command::new("setpriv")
        .args(["--reuid", &NOBODY.to_string(), "--regid", &NOGROUP.to_string(), "--groups", &LISTERS.to_string(), LVSNIC, "-L", "-n"])
        .env("LVSNIC_SOCKET", &d.sock)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), listing);
    let o = Command::new("setpriv")
        .args(["--reuid", &NOBODY.to_string(), "--regid", &NOGROUP.to_string(), "--groups", &LISTERS.to_string(), LVSNIC, "-C"])
        .env("LVSNIC_SOCKET", &d.sock)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    // A non-member cannot connect at all, and is told which permission
    // it lacks (one line, not "is the daemon running?").
    let r = lvsnic_as_user(NOBODY, NOGROUP, &d.sock, &["-L", "-n"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(
        r.stderr,
        format!(
            "lvsnic: permission denied on {}: the control socket is mode 0660, group {LISTERS}: listings need membership of that group (the daemon's --socket-group), changes need root\n",
            d.sock.display()
        ),
    );
    // Nothing changed; the refusals were counted.
    assert_eq!(d.stdout(&["-L", "-n"]), listing);
    assert_eq!(counter(&d.status(), &["control_refused"]), 7);
}

/// A script that writes its uid into `out` (a file in a directory anyone may write).
fn id_script(dir: &Path, name: &str) -> PathBuf {
    let s = write(dir, name, "#!/bin/sh\nid -u > \"$1\"\n");
    std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o755)).unwrap();
    s
}

/// A keepalived.conf with one MISC_CHECK running `script OUT`.
fn misc_conf(global: &str, script: &Path, out: &Path) -> String {
    format!(
        "global_defs {{\n{global}}}\nvirtual_server 10.0.0.101 80 {{\n    delay_loop 0.2\n    lb_algo rr\n    protocol TCP\n    \
         real_server 192.168.10.5 80 {{\n        MISC_CHECK {{\n            misc_path \"{} {}\"\n        }}\n    }}\n}}\n",
        script.display(),
        out.display()
    )
}

/// Loads `conf` into `d` (its rules replacing any): the client's result.
fn load(d: &Daemon, conf: &str) -> Ran {
    d.ok(&["-C"]);
    let f = write(&d.dir, "keepalived.conf", conf);
    d.run(&["keepalived", f.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()])
}

/// The uid the script wrote, waiting up to 5 s; None if it never ran.
fn ran_as(out: &Path) -> Option<String> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if let Ok(s) = std::fs::read_to_string(out) {
            if s.ends_with('\n') {
                return Some(s.trim().to_string());
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
#[ignore = "needs root (scripts run as another user); scripts/test.sh runs it as root"]
fn misc_check_runs_as_the_script_user_never_root_unless_configured() {
    let dir = open_dir("access-misc");
    let outs = dir.join("outs");
    std::fs::create_dir(&outs).unwrap();
    std::fs::set_permissions(&outs, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let s = id_script(&dir, "id.sh");
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &[]);

    // script_user nobody: runs as nobody.
    let out = outs.join("nobody");
    let r = load(&d, &misc_conf("    script_user nobody\n", &s, &out));
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(ran_as(&out).as_deref(), Some("65534"));

    // No script_user: keepalived_script if it exists, else not run at all
    // (keepalived 2.2.7 would run it as root).
    let out = outs.join("default");
    let r = load(&d, &misc_conf("", &s, &out));
    assert_eq!(r.code, 0, "{r:?}");
    let default_user = Command::new("id").args(["-u", "keepalived_script"]).output().unwrap();
    if default_user.status.success() {
        assert_eq!(ran_as(&out), Some(String::from_utf8_lossy(&default_user.stdout).trim().to_string()));
    } else {
        assert!(r.stderr.contains("no script user: the user keepalived_script does not exist") && r.stderr.contains(": not run"), "{r:?}");
        assert!(!r.stderr.contains("health checker(s) running"), "{r:?}");
        assert_eq!(ran_as(&out), None, "the script ran without a script user");
        let l = d.stdout(&["checkers"]);
        assert!(l.contains("script MISC_CHECK (") && l.contains("not run"), "{l}");
        assert_eq!(counter(&d.status(), &["health", "scripts_refused"]), 1);
    }

    // A user that does not exist: not run.
    let out = outs.join("ghost");
    let r = load(&d, &misc_conf("    script_user no-such-user-lvsnic\n", &s, &out));
    assert!(r.stderr.contains("script user 'no-such-user-lvsnic' does not exist"), "{r:?}");
    assert_eq!(ran_as(&out), None);

    // MISC_CHECK's own `user` wins over script_user.
    let out = outs.join("own");
    let conf = misc_conf("    script_user root\n", &s, &out).replace("misc_path", "user nobody\n            misc_path");
    let r = load(&d, &conf);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(ran_as(&out).as_deref(), Some("65534"));

    // script_user root, said explicitly: root.
    let out = outs.join("root");
    let r = load(&d, &misc_conf("    script_user root\n", &s, &out));
    assert_eq!((r.code, r.stderr.contains("not run")), (0, false), "{r:?}");
    assert_eq!(ran_as(&out).as_deref(), Some("0"));
}

#[test]
#[ignore = "needs root (scripts run as root); scripts/test.sh runs it as root"]
fn enable_script_security_refuses_a_root_script_under_a_world_writable_directory() {
    let dir = open_dir("access-security");
    let outs = dir.join("outs");
    std::fs::create_dir(&outs).unwrap();
    std::fs::set_permissions(&outs, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let unsafe_script = id_script(&open, "id.sh");
    let safe_script = id_script(&dir, "id.sh");
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &[]);
    let secure = "    script_user root\n    enable_script_security\n";

    let out = outs.join("refused");
    let r = load(&d, &misc_conf(secure, &unsafe_script, &out));
    assert_eq!(r.code, 0, "{r:?}");
    let why = format!("unsafe permissions: {} is writable by others (mode 0777)", open.display());
    assert!(r.stderr.contains(&why) && r.stderr.contains(": not run"), "{r:?}");
    assert_eq!(ran_as(&out), None, "a root script under a world-writable directory ran");

    // The same script under root's own directory runs (as root, as configured).
    let out = outs.join("safe");
    let r = load(&d, &misc_conf(secure, &safe_script, &out));
    assert_eq!((r.code, r.stderr.contains("unsafe"), r.stderr.contains("not run")), (0, false, false), "{r:?}");
    assert!(r.stderr.contains("1 health checker(s) running"), "{r:?}");
    assert_eq!(ran_as(&out).as_deref(), Some("0"));

    // Without enable_script_security keepalived runs it, with a warning.
    let out = outs.join("warned");
    let r = load(&d, &misc_conf("    script_user root\n", &unsafe_script, &out));
    assert!(r.stderr.contains(&why) && r.stderr.contains("enable_script_security would refuse it"), "{r:?}");
    assert_eq!(ran_as(&out).as_deref(), Some("0"));
}
