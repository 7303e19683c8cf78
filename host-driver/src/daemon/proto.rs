//! The control socket protocol.
//!
//! A Unix stream socket (default `/run/lvsnic/lvsnic.sock`, mode 0600). A client
//! connects, writes **one request**: a JSON object on one line ending in
//! `\n`, and reads **one reply**: a JSON object on one line ending in `\n`;
//! then the daemon closes the connection. Requests are applied between
//! frames, one at a time, in the order they are accepted.
//!
//! Requests (`op` names the kind):
//!
//! ```text
//! {"op":"ipvsadm","argv":["-L","-n","--stats"]}
//! {"op":"ipvsadm","argv":["-R"],"stdin":"-A -t 10.0.0.1:80 -s rr\n...","prog":"lvsnic"}
//! {"op":"status"}
//! {"op":"wire","frames":10}        (pcap wire, --pace step: run the next 10 frames)
//! {"op":"wire","until_ns":1700000000500000000}   (... every frame stamped up to then)
//! {"op":"wire"}                    (... every frame left)
//! {"op":"shutdown"}
//! {"op":"health","config":{...}}  (start health checkers, replacing any; lvsnic keepalived --load)
//! {"op":"checkers"}               (list them: lvsnic checkers)
//! {"op":"vip","state":"master","vips":["10.0.0.100"]}  (VRRP: lvsnic vip master 10.0.0.100)
//! {"op":"vip"}                    (which VIPs are owned: lvsnic vip)
//! {"op":"reload"}                 (DIRECTOR.toml and the rules file again, as differences: lvsnic reload, SIGHUP)
//! {"op":"reload","rules":"-A ...","health":{...}} (a keepalived.conf's rules and checkers: lvsnic keepalived --load)
//! ```
//!
//! `argv` is the ipvsadm argument list without the program name; `stdin`
//! is what `-R` reads; `prog` is the program name used in messages such as
//! "Try `lvsnic -h' ..." (default `lvsnic`).
//!
//! Every reply has the same shape: what the command prints on standard
//! output and standard error, and its exit status.
//!
//! ```text
//! {"stdout":"IP Virtual Server version 1.2.1 (size=4096)\n...","stderr":"","exit":0}
//! {"stdout":"","stderr":"Service already exists\n","exit":255}
//! ```
//!
//! `status` replies with a JSON document in `stdout` (the director report
//! `lvsnic replay --stats` writes, plus the exception loop's counters, the
//! rate limit's counters and the offload state). A malformed request gets
//! exit status 2 and a one-line `stderr`.

use crate::invocation::Output;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default control socket, in the daemon's run directory (the systemd
/// unit's `RuntimeDirectory=lvsnic`; the daemon makes it when it is not
/// there, [`super::socket::make_run_dir`]).
pub const DEFAULT_SOCKET: &str = "/run/lvsnic/lvsnic.sock";

/// The control socket: `explicit`, else `$LVSNIC_SOCKET`, else [`DEFAULT_SOCKET`].
pub fn socket_path(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    match std::env::var_os("LVSNIC_SOCKET") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(DEFAULT_SOCKET),
    }
}

/// One request on the control socket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// An ipvsadm command line.
    Ipvsadm {
        /// Program name for messages (default `lvsnic`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prog: Option<String>,
        /// The arguments, without the program name.
        argv: Vec<String>,
        /// What `-R` reads.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stdin: Option<String>,
    },
    /// The daemon's counters as JSON.
    Status,
    /// Run frames of a `--pace step` pcap wire.
    Wire {
        /// Run this many frames.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frames: Option<u64>,
        /// Run every frame stamped at or before this time (ns).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until_ns: Option<u64>,
    },
    /// Stop the daemon (as SIGTERM does).
    Shutdown,
    /// Run these health checkers (replacing the running ones).
    Health {
        /// What to check.
        config: crate::health::config::HealthConfig,
    },
    /// List the health checkers and their state.
    Checkers,
    /// Run these sync daemons: start each role not running, keep one that
    /// runs with the same settings, replace one that runs with others
    /// (`lvsnic keepalived --load` of an `lvs_sync_daemon`). The reply's
    /// stdout has a line `ROLE started|kept|replaced` per daemon; a
    /// failure stops there, with `ROLE: ERROR` on stderr and exit 255.
    SyncDaemons {
        /// The daemons, in order.
        daemons: Vec<SyncDaemonSpec>,
    },
    /// Apply DIRECTOR.toml and the rules file again, or `rules`, as the
    /// difference from the running rules (`crate::reload`): all or nothing.
    Reload {
        /// `ipvsadm -S` text to run instead of the rules file's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rules: Option<String>,
        /// `lvsnic keepalived --load`: the checkers of `rules`' services,
        /// replacing the running ones; a real server whose checkers are
        /// unchanged keeps their state, and the services of the previous
        /// load that `rules` no longer has are deleted (others stay).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        health: Option<crate::health::config::HealthConfig>,
    },
    /// VRRP: take (master) or release (backup, fault) VIPs; without a
    /// state, list the VIPs and their ownership.
    Vip {
        /// The VRRP instance's new state; none: list.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<VrrpState>,
        /// The instance's VIPs.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        vips: Vec<std::net::IpAddr>,
    },
    /// The metrics server's scrape (`--metrics`): made inside the daemon,
    /// never read from the control socket (it has no JSON form).
    #[serde(skip)]
    Metrics {
        /// OpenMetrics text rather than Prometheus text 0.0.4.
        openmetrics: bool,
    },
}

impl Request {
    /// Whether the request may change what the state file keeps (rules,
    /// timeouts, VIPs, sync daemons, checkers): the daemon saves it after.
    pub fn changes_state(&self) -> bool {
        use lvsnic_model::rules::ipvsadm::{parse_command, Command};
        match self {
            Request::Ipvsadm { argv, .. } => {
                let w: Vec<&str> = argv.iter().map(String::as_str).collect();
                !matches!(
                    parse_command(&w),
                    Err(_) | Ok(Command::List(_) | Command::Save { .. } | Command::Help | Command::Version)
                ) && !w.is_empty()
            }
            Request::Vip { state, .. } => state.is_some(),
            Request::Health { .. } | Request::SyncDaemons { .. } | Request::Reload { .. } => true,
            Request::Status | Request::Wire { .. } | Request::Shutdown | Request::Checkers | Request::Metrics { .. } => false,
        }
    }
}

/// A connection sync daemon's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncRole {
    /// Sends the director's connections.
    Master,
    /// Installs another director's.
    Backup,
}

/// One connection sync daemon to run, as `--start-daemon` takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncDaemonSpec {
    /// Master or backup.
    pub role: SyncRole,
    /// `--mcast-interface`.
    pub ifname: String,
    /// `--syncid`.
    pub syncid: u8,
    /// `--sync-maxlen`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maxlen: Option<u16>,
    /// `--mcast-group`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<std::net::IpAddr>,
    /// `--mcast-port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// `--mcast-ttl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u8>,
}

/// A keepalived VRRP instance state, as its notify scripts name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum VrrpState {
    /// The VIPs are ours: answer ARP, load-balance, announce them.
    Master,
    /// Another director has them.
    Backup,
    /// The instance failed: the VIPs are not ours.
    Fault,
}

/// One reply: stdout, stderr, exit status.
pub type Reply = Output;

/// Largest request the daemon reads (a `-R` of a big rule file fits).
pub const MAX_REQUEST: u64 = 64 << 20;

/// A failed exchange with the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The socket does not answer.
    #[error("{path}: {source}")]
    Connect {
        /// The daemon's socket path.
        path: String,
        /// The error from `connect(2)`.
        source: std::io::Error,
    },
    /// Writing the request or reading the reply failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The reply is not one JSON line.
    #[error("bad reply from the daemon: {0}")]
    BadReply(String),
    /// The request is larger than the daemon reads ([`MAX_REQUEST`]):
    /// refused before anything is sent.
    #[error("request too large ({size} bytes, limit {limit})")]
    TooLarge {
        /// The request's size in bytes (its JSON line).
        size: u64,
        /// [`MAX_REQUEST`].
        limit: u64,
    },
}

/// The name of group `gid` from /etc/group, else the number.
fn group_name(gid: u32) -> String {
    std::fs::read_to_string("/etc/group")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() >= 3 && f[2].parse::<u32>().ok() == Some(gid)).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| gid.to_string())
}

/// What a user refused by the socket's permissions needs, in one line:
/// the socket's mode and group, and which permission it takes.
pub fn permission_text(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let p = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.mode() & 0o060 != 0 => format!(
            "permission denied on {p}: the control socket is mode {:04o}, group {}: listings need membership of that group (the daemon's --socket-group), changes need root",
            m.mode() & 0o7777,
            group_name(m.gid())
        ),
        Ok(m) => format!(
            "permission denied on {p}: the control socket is mode {:04o}, root's only: run as root (sudo), or start the daemon with --socket-group GROUP to let that group's members list",
            m.mode() & 0o7777
        ),
        Err(e) => format!("permission denied on {p}: a directory above it cannot be searched by this user ({e})"),
    }
}

/// The one line a client prints when the daemon cannot be reached.
pub fn reach_text(path: &Path, e: &ProtoError) -> String {
    if e.permission_denied() {
        permission_text(path)
    } else {
        format!("can't reach the daemon: {e}")
    }
}

impl ProtoError {
    /// The socket's permissions refused this user (`connect(2)`: EACCES).
    pub fn permission_denied(&self) -> bool {
        matches!(self, ProtoError::Connect { source, .. } if source.kind() == ErrorKind::PermissionDenied)
    }

    /// Whether the daemon could not be reached or stopped answering (as
    /// opposed to a request refused before sending).
    pub fn unreachable(&self) -> bool {
        !matches!(self, ProtoError::TooLarge { .. })
    }
}

/// Sends one request to the daemon at `path` and waits for its reply.
pub fn call(path: &Path, req: &Request) -> Result<Reply, ProtoError> {
    let mut s =
        UnixStream::connect(path).map_err(|e| ProtoError::Connect { path: path.display().to_string(), source: e })?;
    s.set_read_timeout(Some(Duration::from_secs(600)))?;
    let mut line = serde_json::to_string(req).map_err(|e| ProtoError::BadReply(e.to_string()))?;
    line.push('\n');
    let size = line.len() as u64;
    if size > MAX_REQUEST {
        return Err(ProtoError::TooLarge { size, limit: MAX_REQUEST });
    }
    // The daemon may answer and close before reading the whole request
    // (it refused it): the write then fails (EPIPE, ECONNRESET) but its
    // reply is there to read, and is what the user must see.
    let sent = s.write_all(line.as_bytes()).and_then(|()| s.flush());
    let mut r = BufReader::new(s);
    let mut reply = String::new();
    match sent {
        Ok(()) => {
            r.read_line(&mut reply)?;
        }
        Err(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => {
            if r.read_line(&mut reply).is_err() || reply.is_empty() {
                return Err(e.into());
            }
        }
        Err(e) => return Err(e.into()),
    }
    if reply.is_empty() {
        return Err(ProtoError::BadReply("connection closed without a reply".into()));
    }
    serde_json::from_str(&reply).map_err(|e| ProtoError::BadReply(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixListener;

    fn sock(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("lvsnic-proto-{name}-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn a_request_over_the_limit_is_refused_before_sending() {
        let p = sock("large");
        let l = UnixListener::bind(&p).unwrap();
        let stdin = "-A -t 10.0.0.1:80 -s rr\n".repeat((MAX_REQUEST / 24 + 1) as usize);
        let req = Request::Ipvsadm { prog: None, argv: vec!["-R".into()], stdin: Some(stdin) };
        let size = serde_json::to_string(&req).unwrap().len() as u64 + 1;
        let e = call(&p, &req).unwrap_err();
        assert_eq!(e.to_string(), format!("request too large ({size} bytes, limit {MAX_REQUEST})"));
        assert!(!e.unreachable());
        // Nothing was sent: the connection carries no byte.
        l.set_nonblocking(true).unwrap();
        let (mut c, _) = l.accept().unwrap();
        c.set_nonblocking(false).unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        assert!(got.is_empty(), "{} bytes sent", got.len());
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn the_reply_of_a_daemon_that_stopped_reading_is_read_after_a_broken_pipe() {
        let p = sock("epipe");
        let l = UnixListener::bind(&p).unwrap();
        // A daemon that reads a little of the request, answers and closes
        // (with unread data: the client's write then fails).
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            c.read_exact(&mut buf).unwrap();
            c.write_all(b"{\"stdout\":\"\",\"stderr\":\"request too large (9 bytes, limit 8)\\n\",\"exit\":2}\n").unwrap();
        });
        let stdin = "x".repeat(8 << 20);
        let req = Request::Ipvsadm { prog: None, argv: vec!["-R".into()], stdin: Some(stdin) };
        let r = call(&p, &req).unwrap();
        server.join().unwrap();
        assert_eq!((r.stderr.as_str(), r.exit), ("request too large (9 bytes, limit 8)\n", 2));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn wire_format() {
        let r = Request::Ipvsadm { prog: None, argv: vec!["-L".into(), "-n".into()], stdin: None };
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"op":"ipvsadm","argv":["-L","-n"]}"#);
        assert_eq!(serde_json::from_str::<Request>(r#"{"op":"status"}"#).unwrap(), Request::Status);
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"op":"wire","frames":3}"#).unwrap(),
            Request::Wire { frames: Some(3), until_ns: None }
        );
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"op":"vip","state":"backup","vips":["10.0.0.100"]}"#).unwrap(),
            Request::Vip { state: Some(VrrpState::Backup), vips: vec!["10.0.0.100".parse().unwrap()] }
        );
        assert_eq!(serde_json::to_string(&Request::Vip { state: None, vips: vec![] }).unwrap(), r#"{"op":"vip"}"#);
        let o = Output { stdout: "x\n".into(), stderr: String::new(), exit: 255 };
        assert_eq!(serde_json::to_string(&o).unwrap(), r#"{"stdout":"x\n","stderr":"","exit":255}"#);
    }
}
