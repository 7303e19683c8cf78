//! The Debian package and its systemd unit, as an operator installs them
//! (root only: it installs the package on this machine and removes it at
//! the end; the test command runs it as root):
//!
//! * `scripts/package-deb.sh` builds the .deb from this build's binary:
//!   the files, conffiles and Depends an operator's dpkg sees;
//! * `dpkg -i` installs it; the man pages are found by man(1) and render
//!   without a groff warning; `systemd-analyze verify` accepts the unit;
//!   the unit's directories are the daemon's defaults (socket, state);
//! * the unit's `ExecStart=` line, run as systemd would run it (its
//!   `EnvironmentFile=` variables, `NOTIFY_SOCKET`, `WATCHDOG_USEC`; the
//!   machine's PID 1 is not systemd): `READY=1` comes once the default
//!   socket answers, `WATCHDOG=1` at half the watchdog period, SIGHUP gives
//!   `RELOADING=1` then `READY=1`, SIGTERM `STOPPING=1` and a clean exit;
//!   a change made over the CLI survives the restart through the unit's
//!   `StateDirectory=`;
//! * `dpkg --purge` removes the binary, the unit, the conffiles and the
//!   kept state.

use std::collections::HashMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LVSNIC: &str = env!("CARGO_BIN_EXE_lvsnic");
const UNIT: &str = "/lib/systemd/system/lvsnic.service";
const SOCKET: &str = "/run/lvsnic/lvsnic.sock";
const STATE: &str = "/var/lib/lvsnic";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn run(cmd: &mut Command) -> std::process::Output {
    cmd.env_remove("LVSNIC_SOCKET").output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn ok(cmd: &mut Command) -> String {
    let o = run(cmd);
    assert!(o.status.success(), "{cmd:?}: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The unit's `[Service]` keys (the last value of each, as systemd keeps
/// the last assignment of a single-valued setting).
fn unit_keys(text: &str) -> HashMap<String, String> {
    let mut section = String::new();
    let mut m = HashMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if !line.is_empty() && !line.starts_with('#') {
            if let Some((k, v)) = line.split_once('=') {
                m.insert(format!("{section}{k}"), v.to_string());
            }
        }
    }
    m
}

/// `KEY="value"` lines of an environment file.
fn env_file(text: &str) -> HashMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

/// The ExecStart line as systemd splits it: `$VAR` alone as a word is
/// the variable split at whitespace.
fn exec_argv(line: &str, env: &HashMap<String, String>) -> Vec<String> {
    let mut v = Vec::new();
    for w in line.split_whitespace() {
        match w.strip_prefix('$') {
            Some(var) => v.extend(env.get(var).map(|s| s.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap_or_default()),
            None => v.push(w.to_string()),
        }
    }
    v
}

/// The daemon started from the unit's line, with the notifications it sent.
struct Service {
    child: Child,
    notify: UnixDatagram,
    seen: Vec<String>,
}

impl Service {
    fn start(argv: &[String], dir: &Path, watchdog_usec: u64) -> Service {
        let path = dir.join("notify");
        let _ = std::fs::remove_file(&path);
        let notify = UnixDatagram::bind(&path).unwrap();
        notify.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .env_remove("LVSNIC_SOCKET")
            .env("NOTIFY_SOCKET", &path)
            .env("WATCHDOG_USEC", watchdog_usec.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("daemon.log")).unwrap())
            .spawn()
            .unwrap();
        Service { child, notify, seen: Vec::new() }
    }

    /// Waits until a notification has `KEY=VALUE` (after those seen).
    fn wait_for(&mut self, what: &str, within: Duration) -> Instant {
        let until = Instant::now() + within;
        let mut buf = [0u8; 4096];
        while Instant::now() < until {
            if let Ok(n) = self.notify.recv(&mut buf) {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                let has = msg.lines().any(|l| l == what);
                self.seen.push(msg);
                if has {
                    return Instant::now();
                }
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("the daemon exited ({st}) before {what}; notifications {:?}", self.seen);
            }
        }
        panic!("no {what} within {within:?}; notifications {:?}", self.seen);
    }

    fn signal(&self, sig: &str) {
        ok(Command::new("kill").args([sig, &self.child.id().to_string()]));
    }
}

/// A failed assertion does not leave the daemon running.
impl Drop for Service {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn lvsnic_installed(args: &[&str]) -> std::process::Output {
    run(Command::new("/usr/sbin/lvsnic").args(args))
}

#[test]
#[ignore = "needs root: installs the package on this machine (scripts/test.sh runs it as root)"]
fn deb_installs_a_notify_unit_that_serves_reloads_restarts_and_purges() {
    assert_eq!(ok(Command::new("id").arg("-u")).trim(), "0", "run as root");
    assert!(UnixStream::connect(SOCKET).is_err(), "a daemon answers on {SOCKET}: not touching this machine's director");
    let dir = std::env::temp_dir().join(format!("lvsnic-deb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A package left by an earlier run goes first.
    let _ = run(Command::new("dpkg").args(["--purge", "lvsnic"]));
    let _ = std::fs::remove_dir_all(STATE);

    // The package from this build.
    let deb = ok(Command::new(repo().join("scripts/package-deb.sh")).arg(LVSNIC).arg(dir.join("deb")).current_dir(repo()));
    let deb = deb.trim().to_string();
    let files = ok(Command::new("dpkg-deb").args(["--contents", &deb]));
    for f in [
        "./usr/sbin/lvsnic",
        "./lib/systemd/system/lvsnic.service",
        "./etc/default/lvsnic",
        "./etc/lvsnic/director.toml",
        "./usr/share/man/man8/lvsnic.8.gz",
        "./usr/share/man/man8/lvsnic-daemon.8.gz",
        "./usr/share/doc/lvsnic/copyright",
    ] {
        assert!(files.lines().any(|l| l.ends_with(f)), "{f} not in the package:\n{files}");
    }
    let conffiles = ok(Command::new("sh").arg("-c").arg(format!("dpkg-deb --ctrl-tarfile {deb} | tar -xO ./conffiles")));
    assert_eq!(conffiles, "/etc/default/lvsnic\n/etc/lvsnic/director.toml\n");
    let depends = ok(Command::new("dpkg-deb").args(["--field", &deb, "Depends"]));
    assert!(depends.contains("libc6 (>="), "{depends}");

    ok(Command::new("dpkg").args(["--install", &deb]));
    let v = lvsnic_installed(&["daemon", "--help"]);
    assert!(v.status.success() && String::from_utf8_lossy(&v.stdout).contains("--backend"));
    // Man pages: found by man(1), rendered without a warning.
    for page in ["lvsnic", "lvsnic-daemon", "lvsnic-keepalived"] {
        let p = ok(Command::new("man").args(["-w", page]));
        assert!(p.trim().ends_with(&format!("/usr/share/man/man8/{page}.8.gz")), "{p}");
        let o = run(Command::new("sh").arg("-c").arg(format!("zcat {} | groff -man -ww -z", p.trim())));
        assert!(o.status.success() && o.stderr.is_empty(), "{page}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let top = ok(Command::new("sh").arg("-c").arg("zcat /usr/share/man/man8/lvsnic.8.gz"));
    assert!(top.contains("IPVSADM COMMAND LINE") && top.contains("--add-service     -A"), "{top}");
    // The unit as systemd reads it.
    let o = run(Command::new("systemd-analyze").args(["verify", UNIT]));
    assert!(o.status.success() && o.stderr.is_empty(), "systemd-analyze verify: {}", String::from_utf8_lossy(&o.stderr));
    let unit = unit_keys(&std::fs::read_to_string(UNIT).unwrap());
    assert_eq!(unit["[Service]Type"], "notify");
    assert_eq!(Path::new("/run").join(&unit["[Service]RuntimeDirectory"]), Path::new(SOCKET).parent().unwrap());
    assert_eq!(Path::new("/var/lib").join(&unit["[Service]StateDirectory"]), Path::new(STATE));
    let watchdog: u64 = unit["[Service]WatchdogSec"].trim_end_matches('s').parse().unwrap();
    assert!(watchdog > 0);

    // The shipped /etc/default/lvsnic names no card: the daemon says what
    // it needs and exits, it does not fall back to another backend.
    let env = env_file(&std::fs::read_to_string("/etc/default/lvsnic").unwrap());
    let argv = exec_argv(&unit["[Service]ExecStart"], &env);
    let o = run(Command::new(&argv[0]).args(&argv[1..]).env("NOTIFY_SOCKET", dir.join("none")));
    assert!(!o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("`CARD-PCI-ADDRESS` is not a PCI address"), "{}", String::from_utf8_lossy(&o.stderr));

    // The operator's options: the model backend and the example rules.
    let mut env = env;
    env.insert("LVSNIC_OPTS".into(), "--backend model --rules /usr/share/doc/lvsnic/examples/rules.txt".into());
    let argv = exec_argv(&unit["[Service]ExecStart"], &env);
    assert_eq!(argv[..3], ["/usr/sbin/lvsnic", "daemon", "--director"]);
    let mut svc = Service::start(&argv, &dir, 400_000);
    svc.wait_for("READY=1", Duration::from_secs(60));
    // Serving the moment it says so, on the default socket, with the rules.
    let l = lvsnic_installed(&["-L", "-n"]);
    assert!(l.status.success(), "{l:?}");
    assert!(String::from_utf8_lossy(&l.stdout).contains("TCP  10.0.0.100:80 wlc"), "{l:?}");
    let run_dir = std::fs::metadata("/run/lvsnic").unwrap();
    assert_eq!(run_dir.mode() & 0o7777, 0o755);
    let s = std::fs::symlink_metadata(SOCKET).unwrap();
    assert!(s.file_type().is_socket() && s.mode() & 0o777 == 0o600, "{:o}", s.mode());
    // The watchdog: pinged at half of WATCHDOG_USEC (0.2 s) from the loop.
    let t0 = svc.wait_for("WATCHDOG=1", Duration::from_secs(2));
    svc.wait_for("WATCHDOG=1", Duration::from_secs(2));
    let t2 = svc.wait_for("WATCHDOG=1", Duration::from_secs(2));
    assert!(t2 - t0 < Duration::from_secs(2), "{:?}", t2 - t0);
    // A reload (ExecReload: SIGHUP), then a change over the CLI (a reload
    // makes the running rules the file's again, so it comes after).
    svc.signal("-HUP");
    svc.wait_for("RELOADING=1", Duration::from_secs(10));
    svc.wait_for("READY=1", Duration::from_secs(10));
    assert!(lvsnic_installed(&["-A", "-t", "10.9.9.9:80", "-s", "rr"]).status.success());
    // Stop (systemd sends SIGTERM).
    svc.signal("-TERM");
    svc.wait_for("STOPPING=1", Duration::from_secs(10));
    let st = svc.child.wait().unwrap();
    assert!(st.success(), "{st}: {}", std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default());
    assert!(std::fs::symlink_metadata(SOCKET).is_err(), "socket file left behind");

    // The restart comes back with the change (StateDirectory=).
    let mut svc = Service::start(&argv, &dir, 400_000);
    svc.wait_for("READY=1", Duration::from_secs(60));
    let l = lvsnic_installed(&["-L", "-n"]);
    assert!(String::from_utf8_lossy(&l.stdout).contains("TCP  10.9.9.9:80 rr"), "{l:?}");
    svc.signal("-TERM");
    assert!(svc.child.wait().unwrap().success());

    // Purge: nothing of it is left.
    ok(Command::new("dpkg").args(["--purge", "lvsnic"]));
    for p in ["/usr/sbin/lvsnic", UNIT, "/etc/default/lvsnic", "/etc/lvsnic/director.toml", STATE] {
        assert!(!Path::new(p).exists(), "{p} left after purge");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exec_lines_split_as_systemd_splits_them() {
    let env = HashMap::from([("OPTS".to_string(), "--backend  vfio --device 0000:3b:00.0".to_string())]);
    assert_eq!(
        exec_argv("/usr/sbin/lvsnic daemon --director /etc/x $OPTS", &env),
        ["/usr/sbin/lvsnic", "daemon", "--director", "/etc/x", "--backend", "vfio", "--device", "0000:3b:00.0"]
    );
    assert_eq!(exec_argv("/bin/a $MISSING", &env), ["/bin/a"]);
    let keys = unit_keys("[Unit]\nA=1\n[Service]\n# c\nType=simple\nType=notify\n");
    assert_eq!(keys["[Service]Type"], "notify");
    assert_eq!(keys["[Unit]A"], "1");
}
