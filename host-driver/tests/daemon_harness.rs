//! Helpers for the daemon tests (included by them with `#[path]`): start
//! `lvsnic daemon` on a private socket, run `lvsnic` client commands
//! against it, stop it with SIGTERM.
// `unsafe` allowed in this test helper (the workspace denies it): kill(2) through libc.
#![allow(unsafe_code)]
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `lvsnic` binary under test.
pub const LVSNIC: &str = env!("CARGO_BIN_EXE_lvsnic");

/// Writes `frames` (timestamp in ns, frame) as a nanosecond pcap.
pub fn write_pcap(path: &Path, frames: &[(u64, Vec<u8>)]) {
    lvsnic_model::pcap::write_file(
        path,
        lvsnic_model::pcap::Resolution::Nano,
        frames
            .iter()
            .map(|(t, f)| lvsnic_model::pcap::PcapRecord { ts_ns: *t, orig_len: f.len() as u32, data: f.clone() }),
    )
    .unwrap();
}

/// A fresh directory for one test.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lvsnic-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `text` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// What a command printed and returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// Exit status.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `lvsnic ARGS` with `LVSNIC_SOCKET=sock`, feeding `stdin`.
pub fn lvsnic_at(sock: &Path, args: &[&str], stdin: Option<&str>) -> Ran {
    lvsnic_as(LVSNIC, sock, args, stdin)
}

/// [`lvsnic_at`] with `argv[0]` = `arg0` (e.g. `ipvsadm`, so that messages
/// name that program as ipvsadm's do).
pub fn lvsnic_as(arg0: &str, sock: &Path, args: &[&str], stdin: Option<&str>) -> Ran {
    let mut c = Command::new(LVSNIC);
    std::os::unix::process::CommandExt::arg0(&mut c, arg0);
    let mut c = c
        .args(args)
        .env("LVSNIC_SOCKET", sock)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lvsnic");
    if let Some(s) = stdin {
        c.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    let o = c.wait_with_output().unwrap();
    Ran {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A running daemon.
pub struct Daemon {
    child: Option<Child>,
    /// The test's directory.
    pub dir: PathBuf,
    /// The daemon's control socket.
    pub sock: PathBuf,
    /// The daemon's standard error, as a file.
    pub log: PathBuf,
}

impl Daemon {
    /// Starts `lvsnic daemon --director DIR/director.toml --socket DIR/lvsnic.sock ARGS`.
    pub fn start(dir: &Path, director_toml: &str, args: &[&str]) -> Daemon {
        Daemon::start_in(&[], dir, director_toml, args)
    }

    /// [`Daemon::start`] through a wrapper that execs its arguments, e.g.
    /// `["ip", "netns", "exec", NS]` (the child's pid stays the daemon's).
    pub fn start_in(wrapper: &[&str], dir: &Path, director_toml: &str, args: &[&str]) -> Daemon {
        let director = write(dir, "director.toml", director_toml);
        let sock = dir.join("lvsnic.sock");
        let log = dir.join("daemon.log");
        let mut cmd = match wrapper.split_first() {
            None => Command::new(LVSNIC),
            Some((w, rest)) => {
                let mut c = Command::new(w);
                c.args(rest).arg(LVSNIC);
                c
            }
        };
        // The backend has no default: the model unless the test names one.
        let backend: &[&str] = if args.contains(&"--backend") { &[] } else { &["--backend", "model"] };
        let child = cmd
            .arg("daemon")
            .args(backend)
            .arg("--director")
            .arg(&director)
            .arg("--socket")
            .arg(&sock)
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("daemon.out")).unwrap())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start lvsnic daemon");
        let mut d = Daemon { child: Some(child), dir: dir.to_path_buf(), sock, log };
        d.wait_ready();
        d
    }

    fn wait_ready(&mut self) {
        let t0 = Instant::now();
        loop {
            // Connectable (the socket is bound before the state is
            // restored) and the start line written (after it).
            let started = || std::fs::read_to_string(&self.log).is_ok_and(|l| l.contains(", listening on "));
            if std::os::unix::net::UnixStream::connect(&self.sock).is_ok() && started() {
                return;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("daemon exited ({st}): {}", std::fs::read_to_string(&self.log).unwrap_or_default());
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `lvsnic ARGS` against this daemon.
    pub fn run(&self, args: &[&str]) -> Ran {
        lvsnic_at(&self.sock, args, None)
    }

    /// `lvsnic ARGS < stdin` against this daemon.
    pub fn run_in(&self, args: &[&str], stdin: &str) -> Ran {
        lvsnic_at(&self.sock, args, Some(stdin))
    }

    /// Runs an ipvsadm command that must succeed silently.
    pub fn ok(&self, args: &[&str]) {
        let r = self.run(args);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "lvsnic {args:?}: {r:?}");
    }

    /// Runs a command that must succeed: its standard output.
    pub fn stdout(&self, args: &[&str]) -> String {
        let r = self.run(args);
        assert_eq!(r.code, 0, "lvsnic {args:?}: {r:?}");
        r.stdout
    }

    /// `lvsnic status` as JSON.
    pub fn status(&self) -> serde_json::Value {
        let r = lvsnic_at(&self.sock, &["status", "--socket", self.sock.to_str().unwrap()], None);
        assert_eq!(r.code, 0, "{r:?}");
        serde_json::from_str(&r.stdout).unwrap()
    }

    /// Sends SIGTERM and waits: exit status and the daemon's stderr.
    pub fn stop(mut self) -> (i32, String) {
        let mut c = self.child.take().unwrap();
        // SAFETY: kill(2) has no memory effects; the pid is our own child's,
        // not yet reaped, so it cannot have been reused.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        let st = c.wait().unwrap();
        (st.code().unwrap_or(-1), std::fs::read_to_string(&self.log).unwrap_or_default())
    }
}

impl Daemon {
    /// Sends SIGKILL (the director dies without cleaning up) and reaps it.
    pub fn kill(mut self) {
        let mut c = self.child.take().unwrap();
        let _ = c.kill();
        let _ = c.wait();
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: as in `stop`: our own unreaped child.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
            let _ = c.wait();
        }
    }
}

// ---------------------------------------------- listings the e2e tests compare

/// `-L -n --stats` columns (Conns, InPkts, OutPkts, InBytes, OutBytes) by
/// the row's address (`TCP 10.0.0.100:80` for services, `RS:PORT` for
/// real servers).
pub fn stats_of(out: &str) -> std::collections::BTreeMap<String, [u64; 5]> {
    let mut m = std::collections::BTreeMap::new();
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let (key, nums) = match w.as_slice() {
            ["->", a, rest @ ..] if rest.len() == 5 => (a.to_string(), rest),
            ["TCP" | "UDP", a, rest @ ..] if rest.len() == 5 => (format!("{} {a}", w[0]), rest),
            _ => continue,
        };
        let mut v = [0u64; 5];
        for (i, n) in nums.iter().enumerate() {
            v[i] = n.parse().unwrap_or_else(|_| panic!("--stats column {n:?} in {l:?}"));
        }
        m.insert(key, v);
    }
    m
}

/// `-L -n -c` rows without the expiry: client source → (state, virtual, destination).
pub fn conns(d: &Daemon) -> std::collections::BTreeMap<String, (String, String, String)> {
    let out = d.run(&["-L", "-n", "-c"]).stdout;
    out.lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["TCP", _expire, state, src, vip, dst] => {
                Some((src.to_string(), (state.to_string(), vip.to_string(), dst.to_string())))
            }
            _ => None,
        })
        .collect()
}

/// Waits up to 5 s for every connection of `served` (its client as `-L
/// -n -c` prints it, `ADDR:PORT` or `[ADDR]:PORT`, and the real server
/// that answered it) to be listed in TIME_WAIT with virtual service `vip`
/// and that server; panics with the last listing if one is not.
pub fn assert_all_time_wait(d: &Daemon, vip: &str, served: &[(String, String)]) -> std::collections::BTreeMap<String, (String, String, String)> {
    let t0 = std::time::Instant::now();
    loop {
        let last = conns(d);
        let all = served.iter().all(|(client, dst)| last.get(client) == Some(&("TIME_WAIT".into(), vip.to_string(), dst.clone())));
        if all {
            return last;
        }
        assert!(t0.elapsed() < std::time::Duration::from_secs(5), "every connection in TIME_WAIT with its server: {last:#?}\nserved {served:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The number at `path` in a daemon's status JSON.
pub fn counter(st: &serde_json::Value, path: &[&str]) -> u64 {
    let mut v = st;
    for p in path {
        v = &v[*p];
    }
    v.as_u64().unwrap_or_else(|| panic!("no counter {path:?} in {st}"))
}

/// `lvsnic wire --socket SOCK ARGS...` against `d` (a pcap wire in step
/// mode: play frames); what it printed.
pub fn wire(d: &Daemon, args: &[&str]) -> String {
    let mut a = vec!["wire", "--socket", d.sock.to_str().unwrap()];
    a.extend_from_slice(args);
    d.stdout(&a)
}

/// The connections a master daemon `d` sent in sync messages to `s`
/// (decoded by the model), until as many have come as it counted
/// (`sync.master.conns_synced`) or 10 s have passed.
pub fn sync_received(s: &std::net::UdpSocket, d: &Daemon) -> Vec<lvsnic_model::sync::SyncConn> {
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let want = d.status()["sync"]["master"]["conns_synced"].as_u64().unwrap_or(0) as usize;
        if let Ok(n) = s.recv(&mut buf) {
            got.extend(lvsnic_model::sync::decode(&buf[..n], 0).conns);
        }
        if (want > 0 && got.len() >= want) || t0.elapsed() > Duration::from_secs(10) {
            return got;
        }
    }
}

/// Client `n` of the fixtures' client network (198.51.100.`n`).
pub fn client(n: u8) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(198, 51, 100, n)
}

/// A TCP segment from client `n` (port 1000 × `n`) to the fixtures' VIP:80,
/// on the wire from the gateway to the director.
pub fn from_client(n: u8, flags: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    use lvsnic_fixtures::{tcp, Ip, DIRECTOR_MAC, GATEWAY_MAC, VIP};
    tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(n), VIP), 1000 * n as u16, 80, flags, seq, 1, payload)
}
