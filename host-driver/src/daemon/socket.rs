//! The control socket, and who may do what on it.
//!
//! * Safe from its first instant: the socket is bound inside a private
//!   directory created beside its path (mode 0700, the daemon's own),
//!   given its final mode (0600, or 0660 and group `--socket-group`) and
//!   owner there, then renamed onto its path. rename(2) is atomic: the path
//!   never names a socket with another mode, whatever the umask was, and
//!   nobody can connect to it inside the private directory (connecting
//!   needs search permission on every directory of the path). The
//!   directories from `/` down to it must be root's (or the daemon's) and
//!   not world-writable unless sticky (as /tmp is). A stale
//!   socket file (nobody answers) is replaced by the same rename; a daemon
//!   that answers is refused; the file is removed on drop (if still ours).
//! * Every accepted connection's peer is known from the kernel
//!   (`SO_PEERCRED`, `SO_PEERGROUPS`, recorded at connect time): root or
//!   the daemon's own user may do everything ([`PeerRole::Admin`]); a
//!   member of `--socket-group` (primary or supplementary) only what
//!   changes nothing ([`PeerRole::ReadOnly`], see [`allowed`]); anyone
//!   else nothing. A refused request gets one line on stderr (exit 2) and
//!   is counted ([`refused_requests`], `control_refused` in `status`).

use super::proto::{Reply, Request};
use super::sys::{self, PeerCred};
use super::{io_err, DaemonError};
use crate::invocation::Output;
use lvsnic_model::rules::ipvsadm::{parse_command, Command};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Requests refused by [`authorize`] since the daemon started.
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// How many requests [`authorize`] refused (`control_refused` in `status`).
pub fn refused_requests() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// The bound control socket; removes its file when dropped (if still ours).
pub struct ControlSocket {
    /// The listening socket (non-blocking).
    pub(crate) listener: UnixListener,
    path: PathBuf,
    ino: (u64, u64),
    group: Option<u32>,
}

/// A directory only the daemon can enter, beside the socket's path; removed
/// (with what is left in it) when dropped.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn create(beside: &Path) -> Result<PrivateDir, DaemonError> {
        use std::os::unix::fs::DirBuilderExt;
        let parent = match beside.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        parent_is_safe(parent)?;
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        for n in 0..100u32 {
            let d = parent.join(format!(".lvsnic-{:x}-{:x}", std::process::id(), stamp.wrapping_add(n)));
            // mkdir(2) never follows or reuses what is there; the umask can
            // only take bits away from 0700.
            match std::fs::DirBuilder::new().mode(0o700).create(&d) {
                Ok(()) => {
                    let dir = PrivateDir(d);
                    let m = std::fs::symlink_metadata(&dir.0).map_err(io_err(dir.0.display().to_string()))?;
                    if !m.is_dir() || m.uid() != sys::euid() || m.mode() & 0o077 != 0 {
                        return Err(DaemonError::Io {
                            what: format!("{}: not the private directory just made", dir.0.display()),
                            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                        });
                    }
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(DaemonError::Io { what: format!("creating {}", d.display()), source: e }),
            }
        }
        Err(DaemonError::Io {
            what: format!("creating a private directory beside {}", beside.display()),
            source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        })
    }
}

/// Every directory from `/` down to `dir` (symbolic links resolved) must
/// be root's or the daemon's and not world-writable (a sticky one such as
/// /tmp may be): otherwise someone else could rename the private
/// directory, or the socket, under the daemon's feet.
fn parent_is_safe(dir: &Path) -> Result<(), DaemonError> {
    let unsafe_dir = |what: String| DaemonError::Io {
        what,
        source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    };
    let real = std::fs::canonicalize(dir).map_err(io_err(dir.display().to_string()))?;
    let mut cur = PathBuf::new();
    for c in real.components() {
        cur.push(c);
        let m = std::fs::symlink_metadata(&cur).map_err(io_err(cur.display().to_string()))?;
        let mode = m.mode();
        let sticky = mode & 0o1000 != 0;
        // World-writable only: a directory of the daemon's user that its
        // group may write (umask 002) is the operator's choice.
        let writable = mode & 0o002 != 0;
        if m.uid() != 0 && m.uid() != sys::euid() {
            return Err(unsafe_dir(format!("{}: owned by uid {}, the control socket needs directories only root can change", cur.display(), m.uid())));
        }
        if writable && !sticky {
            return Err(unsafe_dir(format!("{}: writable by others (mode {:04o}), the control socket needs directories only root can change", cur.display(), mode & 0o7777)));
        }
    }
    Ok(())
}

/// The default socket's directory (`/run/lvsnic`), made when it is not
/// there as systemd's `RuntimeDirectory=` makes it: mode 0755 whatever the
/// umask (clients of `--socket-group` must be able to reach the socket),
/// the daemon's own. An existing one is left as it is and judged by
/// [`parent_is_safe`] when the socket is bound.
pub fn make_run_dir(dir: &Path) -> Result<(), DaemonError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(io_err(format!("chmod {}", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(DaemonError::Io { what: format!("creating {}", dir.display()), source: e }),
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0.join("s"));
        let _ = std::fs::remove_dir(&self.0);
    }
}

impl ControlSocket {
    /// Binds `path` (mode 0600, or 0660 with group `group`), refusing when
    /// a daemon already answers there.
    pub fn bind(path: &Path, group: Option<u32>) -> Result<Self, DaemonError> {
        let p = path.display().to_string();
        if let Ok(m) = std::fs::symlink_metadata(path) {
            if !m.file_type().is_socket() {
                return Err(DaemonError::NotASocket(p));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(DaemonError::AlreadyRunning(p));
            }
            // A stale socket: the rename below replaces it.
        }
        let dir = PrivateDir::create(path)?;
        let tmp = dir.0.join("s");
        let listener = UnixListener::bind(&tmp).map_err(io_err(format!("binding {p} (as {})", tmp.display())))?;
        if let Some(g) = group {
            std::os::unix::fs::chown(&tmp, None, Some(g)).map_err(io_err(format!("chown {p} to group {g}")))?;
        }
        let mode = if group.is_some() { 0o660 } else { 0o600 };
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).map_err(io_err(format!("chmod {p}")))?;
        listener.set_nonblocking(true).map_err(io_err(p.clone()))?;
        std::fs::rename(&tmp, path).map_err(io_err(format!("renaming {} to {p}", tmp.display())))?;
        drop(dir);
        let m = std::fs::symlink_metadata(path).map_err(io_err(p.clone()))?;
        Ok(ControlSocket { listener, path: path.to_path_buf(), ino: (m.dev(), m.ino()), group })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The group whose members may list (`--socket-group`).
    pub fn group(&self) -> Option<u32> {
        self.group
    }

    /// The next waiting connection and who made it; None when none waits.
    pub fn accept(&self) -> std::io::Result<Option<(UnixStream, Peer)>> {
        match self.listener.accept() {
            Ok((s, _)) => {
                let peer = Peer::of(&s, self.group);
                Ok(Some((s, peer)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// `--socket-group NAME|GID`: the group's id.
pub fn parse_group(s: &str) -> Result<u32, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u32>().map_err(|_| format!("--socket-group {s}: not a group id"));
    }
    match sys::group_by_name(s) {
        Ok(Some(g)) => Ok(g),
        Ok(None) => Err(format!("--socket-group {s}: no such group")),
        Err(e) => Err(format!("--socket-group {s}: {e}")),
    }
}

/// What a client may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerRole {
    /// Root or the daemon's own user: everything.
    Admin,
    /// A member of `--socket-group`: listings only.
    ReadOnly,
    /// Anyone else (or a peer whose credentials could not be read): nothing.
    Refused,
}

/// The process at the other end of a control connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its credentials at connect time (None: unreadable).
    pub cred: Option<PeerCred>,
    /// What it may do.
    pub role: PeerRole,
}

impl Peer {
    /// The peer of connection `s` on a socket whose listing group is `group`.
    pub fn of(s: &UnixStream, group: Option<u32>) -> Peer {
        let Ok(cred) = sys::peer_cred(s.as_raw_fd()) else {
            return Peer { cred: None, role: PeerRole::Refused };
        };
        let groups = match group {
            Some(g) if cred.gid != g => peer_groups(s, cred.pid),
            _ => Vec::new(),
        };
        Peer { cred: Some(cred), role: role_of(&cred, &groups, sys::euid(), group) }
    }
}

/// The peer's supplementary groups: `SO_PEERGROUPS`, else (kernels before
/// 4.13) the `Groups:` line of /proc/PID/status.
fn peer_groups(s: &UnixStream, pid: i32) -> Vec<u32> {
    if let Ok(g) = sys::peer_groups(s.as_raw_fd()) {
        return g;
    }
    if pid <= 0 {
        return Vec::new();
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| g.split_whitespace().filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_default()
}

/// What a peer with `cred` and supplementary `groups` may do on the socket
/// of a daemon running as `our_euid` whose listing group is `group`.
pub fn role_of(cred: &PeerCred, groups: &[u32], our_euid: u32, group: Option<u32>) -> PeerRole {
    if cred.uid == 0 || cred.uid == our_euid {
        return PeerRole::Admin;
    }
    match group {
        Some(g) if cred.gid == g || groups.contains(&g) => PeerRole::ReadOnly,
        _ => PeerRole::Refused,
    }
}

/// The request's name in messages.
fn request_name(req: &Request) -> String {
    match req {
        Request::Ipvsadm { argv, .. } if argv.is_empty() => "ipvsadm".into(),
        Request::Ipvsadm { argv, .. } => {
            let a: String = argv.join(" ").chars().filter(|c| !c.is_control()).take(60).collect();
            format!("ipvsadm {a}")
        }
        Request::Status => "status".into(),
        Request::Wire { .. } => "wire".into(),
        Request::Shutdown => "shutdown".into(),
        Request::Health { .. } => "health".into(),
        Request::Checkers => "checkers".into(),
        Request::SyncDaemons { .. } => "sync daemons".into(),
        Request::Vip { state: None, .. } => "vip".into(),
        Request::Vip { state: Some(_), .. } => "vip (change)".into(),
        Request::Reload { .. } => "reload".into(),
        Request::Metrics { .. } => "metrics".into(),
    }
}

/// An ipvsadm command line that changes nothing: a listing (`-L`, `-l`,
/// no arguments), `-S`, `-h`, `-v`, as the daemon's own parser reads it
/// (the one that runs it), so `-L` beside a command is refused with it.
/// `-Z` zeroes counters: a change.
pub(super) fn ipvsadm_read_only(argv: &[String]) -> bool {
    let words: Vec<&str> = argv.iter().map(String::as_str).collect();
    matches!(parse_command(&words), Ok(Command::List(_) | Command::Save { .. } | Command::Help | Command::Version))
}

/// Whether a client with `role` may make request `req`; the error is the
/// one line it gets.
pub fn allowed(role: PeerRole, req: &Request) -> Result<(), String> {
    let read_only = match req {
        Request::Ipvsadm { argv, .. } => ipvsadm_read_only(argv),
        Request::Status | Request::Checkers | Request::Vip { state: None, .. } | Request::Metrics { .. } => true,
        Request::Vip { state: Some(_), .. }
        | Request::Wire { .. }
        | Request::Shutdown
        | Request::Health { .. }
        | Request::SyncDaemons { .. }
        | Request::Reload { .. } => false,
    };
    match role {
        PeerRole::Admin => Ok(()),
        PeerRole::ReadOnly if read_only => Ok(()),
        PeerRole::ReadOnly => Err(format!(
            "permission denied: {} changes the director; members of the socket group may only list (root may change)",
            request_name(req)
        )),
        PeerRole::Refused => Err("permission denied: the control socket serves root (and the --socket-group's members, listings only)".into()),
    }
}

/// [`allowed`] for a connected peer: the reply to send instead of running
/// the request when it is refused (counted).
pub fn authorize(peer: &Peer, req: &Request) -> Result<(), Reply> {
    allowed(peer.role, req).map_err(|msg| {
        REFUSED.fetch_add(1, Ordering::Relaxed);
        let who = match peer.cred {
            Some(c) => format!(" (uid {}, gid {}, pid {})", c.uid, c.gid, c.pid),
            None => " (credentials unreadable)".into(),
        };
        eprintln!("lvsnic daemon: refused {}{who}", request_name(req));
        Output { stdout: String::new(), stderr: format!("lvsnic daemon: {msg}\n"), exit: 2 }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::proto::{SyncDaemonSpec, SyncRole, VrrpState};

    fn ipvsadm(args: &str) -> Request {
        Request::Ipvsadm { prog: None, argv: args.split_whitespace().map(String::from).collect(), stdin: None }
    }

    fn ro(req: &Request) -> bool {
        allowed(PeerRole::ReadOnly, req).is_ok()
    }

    #[test]
    fn roles_from_credentials() {
        let c = |uid, gid| PeerCred { pid: 1, uid, gid };
        assert_eq!(role_of(&c(0, 0), &[], 0, None), PeerRole::Admin);
        assert_eq!(role_of(&c(1000, 1000), &[], 1000, None), PeerRole::Admin, "the daemon's own user");
        assert_eq!(role_of(&c(65534, 65534), &[], 0, None), PeerRole::Refused);
        assert_eq!(role_of(&c(65534, 65534), &[65534], 0, Some(50)), PeerRole::Refused);
        assert_eq!(role_of(&c(1001, 50), &[], 0, Some(50)), PeerRole::ReadOnly, "primary group");
        assert_eq!(role_of(&c(1001, 1001), &[4, 50], 0, Some(50)), PeerRole::ReadOnly, "supplementary group");
        assert_eq!(role_of(&c(1001, 1001), &[4, 51], 0, Some(50)), PeerRole::Refused);
    }

    #[test]
    fn ipvsadm_listings_are_read_only() {
        for a in [
            "", "-L", "-l", "-L -n", "-Ln", "-lnc", "-L -n --stats", "-L -n --rate", "-L --thresholds -n",
            "-L -n --persistent-conn", "-L -c -n", "-L --timeout", "-L --daemon", "-L -t 10.0.0.1:80 -n",
            "-L --tcp-service=10.0.0.1:80", "-Lt10.0.0.1:80", "-L -f 5", "-S", "-S -n", "-Sn", "--save", "--list --numeric",
            "-h", "--help", "-v", "--version",
        ] {
            assert!(ro(&ipvsadm(a)), "`{a}` lists");
        }
    }

    #[test]
    fn ipvsadm_changes_are_not_read_only() {
        for a in [
            "-A -t 10.0.0.1:80 -s rr",
            "-E -t 10.0.0.1:80 -s wlc",
            "-D -t 10.0.0.1:80",
            "-C",
            "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m",
            "-e -t 10.0.0.1:80 -r 10.0.1.1:80 -w 0",
            "-d -t 10.0.0.1:80 -r 10.0.1.1:80",
            "-R",
            "--restore",
            "-Z",
            "-Z -t 10.0.0.1:80",
            "--zero",
            "--set 1 2 3",
            "--start-daemon master --mcast-interface eth0",
            "--stop-daemon master",
            // -L beside a command, a command hidden in a cluster, options
            // of nothing, garbage.
            "-L -A -t 10.0.0.1:80",
            "-L -Z",
            "-LZ",
            "-Z -L",
            "-L -C",
            "-LC",
            "-nC",
            "-L --set 1 2 3",
            "-L --start-daemon master",
            "-n",
            "--bogus",
            "-L -t",
            "x",
        ] {
            assert!(!ro(&ipvsadm(a)), "`{a}` changes (or is not a listing)");
            assert!(allowed(PeerRole::Admin, &ipvsadm(a)).is_ok());
        }
        // -R with the rules on stdin.
        let r = Request::Ipvsadm { prog: None, argv: vec!["-R".into()], stdin: Some("-A -t 1.2.3.4:80\n".into()) };
        assert!(!ro(&r));
    }

    #[test]
    fn every_request_kind() {
        let sync = Request::SyncDaemons {
            daemons: vec![SyncDaemonSpec {
                role: SyncRole::Master,
                ifname: "eth0".into(),
                syncid: 1,
                maxlen: None,
                group: None,
                port: None,
                ttl: None,
            }],
        };
        let vip = "10.0.0.100".parse().unwrap();
        let cases = [
            (ipvsadm("-L -n"), true),
            (ipvsadm("-A -t 10.0.0.1:80"), false),
            (Request::Status, true),
            (Request::Checkers, true),
            (Request::Vip { state: None, vips: vec![] }, true),
            (Request::Vip { state: None, vips: vec![vip] }, true),
            (Request::Vip { state: Some(VrrpState::Master), vips: vec![vip] }, false),
            (Request::Vip { state: Some(VrrpState::Backup), vips: vec![vip] }, false),
            (Request::Vip { state: Some(VrrpState::Fault), vips: vec![] }, false),
            (Request::Wire { frames: None, until_ns: None }, false),
            (Request::Wire { frames: Some(1), until_ns: None }, false),
            (Request::Shutdown, false),
            (Request::Health { config: Default::default() }, false),
            (sync, false),
        ];
        for (req, read_only) in &cases {
            assert_eq!(ro(req), *read_only, "{req:?}");
            assert!(allowed(PeerRole::Admin, req).is_ok(), "{req:?}");
            let e = allowed(PeerRole::Refused, req).unwrap_err();
            assert!(e.starts_with("permission denied: ") && !e.contains('\n'), "{e}");
        }
        let e = allowed(PeerRole::ReadOnly, &Request::Shutdown).unwrap_err();
        assert_eq!(e, "permission denied: shutdown changes the director; members of the socket group may only list (root may change)");
    }

    #[test]
    fn authorize_counts_refusals() {
        let nobody = Peer { cred: Some(PeerCred { pid: 7, uid: 65534, gid: 65534 }), role: PeerRole::Refused };
        let before = refused_requests();
        let r = authorize(&nobody, &Request::Status).unwrap_err();
        assert_eq!(r.exit, 2);
        assert!(r.stderr.starts_with("lvsnic daemon: permission denied") && r.stderr.lines().count() == 1, "{}", r.stderr);
        assert!(refused_requests() > before);
        let root = Peer { cred: Some(PeerCred { pid: 7, uid: 0, gid: 0 }), role: PeerRole::Admin };
        assert!(authorize(&root, &Request::Shutdown).is_ok());
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lvsnic-sock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn bind_mode_stale_running_and_drop() {
        let d = tmp("bind");
        let p = d.join("c.sock");
        {
            let s = ControlSocket::bind(&p, None).unwrap();
            let m = std::fs::symlink_metadata(&p).unwrap();
            assert!(m.file_type().is_socket());
            assert_eq!(m.mode() & 0o7777, 0o600);
            // Nothing left beside it.
            let names: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, vec![std::ffi::OsString::from("c.sock")]);
            // A second daemon is refused while this one answers.
            assert!(matches!(ControlSocket::bind(&p, None), Err(DaemonError::AlreadyRunning(_))));
            // The peer of our own connections (the second daemon's probe
            // and this one) is us.
            let _c = UnixStream::connect(&p).unwrap();
            for _ in 0..2 {
                let (_s, peer) = s.accept().unwrap().unwrap();
                assert_eq!(peer.cred.map(|c| (c.uid, c.pid)), Some((sys::euid(), std::process::id() as i32)));
                assert_eq!(peer.role, PeerRole::Admin);
            }
            assert!(s.accept().unwrap().is_none());
        }
        assert!(std::fs::symlink_metadata(&p).is_err(), "removed on drop");
        // A stale socket (nobody listening) is replaced.
        drop(UnixListener::bind(&p).unwrap());
        let s = ControlSocket::bind(&p, Some(sys::egid())).unwrap();
        assert_eq!(std::fs::symlink_metadata(&p).unwrap().mode() & 0o7777, 0o660);
        assert_eq!(s.group(), Some(sys::egid()));
        drop(s);
        // Something that is not a socket is left alone.
        std::fs::write(&p, "x").unwrap();
        assert!(matches!(ControlSocket::bind(&p, None), Err(DaemonError::NotASocket(_))));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "x");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn refuses_a_directory_others_may_change() {
        let d = tmp("open-dir");
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = ControlSocket::bind(&open.join("c.sock"), None).err().expect("bound in a world-writable directory");
        assert!(e.to_string().contains("writable by others (mode 0777)"), "{e}");
        assert!(std::fs::read_dir(&open).unwrap().next().is_none(), "left something behind");
        // Sticky (as /tmp is): fine.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        drop(ControlSocket::bind(&open.join("c.sock"), None).unwrap());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn socket_group_names_and_ids() {
        assert_eq!(parse_group("0"), Ok(0));
        assert_eq!(parse_group("root"), Ok(0));
        assert_eq!(parse_group("no-such-group-lvsnic"), Err("--socket-group no-such-group-lvsnic: no such group".into()));
        assert!(parse_group("99999999999").is_err());
    }
}
