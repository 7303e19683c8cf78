//! What a restart of `lvsnic daemon` must keep, in the state directory
//! (`--state-dir DIR`; default `/var/lib/lvsnic` for the default socket,
//! `SOCKET.state` beside any other socket):
//!
//! * `state.json`: the running configuration ([`RunningState`]): the rules
//!   as `ipvsadm -S -n` prints them (with `-x`/`-y`), the `--set` timeouts, VIP ownership
//!   (`lvsnic vip`), the sync daemons (`--start-daemon`, as ipvsadm
//!   arguments) and the health checkers `lvsnic keepalived --load` started.
//!   Written after every control request that changes one of them.
//! * `connections.json`: the connection table ([`ConnSnapshot`]), written
//!   every second while it is not empty (less often for a table so big
//!   that writing it takes over 100 ms: [`Keeper::tick`]) and when the
//!   daemon stops. IPv4 connections and templates are in `conns`; those
//!   with an IPv6 address (IPv6 ones, and IPv4 ones tunnelled to an IPv6
//!   real server) in `conns6`, a list version 1 did not have: a table with
//!   one is written as version 2 ([`CONNS_VERSION`]), one without as
//!   version 1, which every lvsnic reads; this one reads both.
//!
//! Both are written atomically ([`write_atomic`]: a temporary file in the
//! same directory, fsync, rename, fsync of the directory), so a crash
//! leaves the old file or the new one, never half of one. They are written
//! by a thread of their own ([`Writer`]), never by the forwarding loop: the
//! loop takes a copy (the connection table a slice per loop turn,
//! [`Snapshot`]), the writer formats and writes it, and the reply to a
//! control request that changed the configuration is sent by the writer
//! once the file is on disk. Each has a
//! `version`; a file of another version, or one that does not parse, is a
//! one-line error naming the file and the daemon does not start (never a
//! silent fresh start that would forget the configuration).
//!
//! At start the state file wins over `--rules`: `--rules` is the first
//! configuration, the state file the running one (what ipvsadm's init
//! scripts do with `ipvsadm-save` at stop and `ipvsadm-restore` at start);
//! `lvsnic reload` (or SIGHUP) applies the rules file again. Connections
//! come back through the sync backup's path ([`restore_conns`]): each is
//! installed as a connection learned from another director is, bound to
//! its real server, with the time it had left, and offloaded to the card.

use crate::control::Control;
use crate::device::Device;
use crate::health::config::HealthConfig;
use crate::limits::Limits;
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::conn::NIL;
use lvsnic_model::director::Offload;
use lvsnic_model::rules::ipvsadm::parse_rules_full;
use lvsnic_model::sync::backup;
use lvsnic_model::sync::SyncConn;
use lvsnic_model::time::{Time, MSEC, SEC};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// Version of `state.json` this build writes and reads, and the oldest
/// version of `connections.json` it reads.
pub const STATE_VERSION: u32 = 1;
/// Newest version of `connections.json` this build reads and writes: 2
/// added `conns6` (written only when it is not empty).
pub const CONNS_VERSION: u32 = 2;
/// The running configuration's file in the state directory.
pub const STATE_FILE: &str = "state.json";
/// The connection table's file in the state directory.
pub const CONNS_FILE: &str = "connections.json";
/// The state directory of a daemon on the default socket.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/lvsnic";

/// A state file that cannot be read, written or understood (one line).
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file does not parse, or is of another version.
    #[error("{path}: corrupt state file ({msg}); move it away to start without it")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        msg: String,
    },
}

/// The running configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunningState {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// The services and real servers, as `ipvsadm -S -n` prints them.
    pub rules: String,
    /// `--set`: TCP, TCP FIN, UDP timeouts in seconds.
    pub timeouts: (u32, u32, u32),
    /// VIPs `lvsnic vip` named, and whether each is ours.
    #[serde(default)]
    pub vips: Vec<(IpAddr, bool)>,
    /// The sync daemons running, each as the ipvsadm arguments that start it.
    #[serde(default)]
    pub sync_daemons: Vec<Vec<String>>,
    /// The health checkers `lvsnic keepalived --load` started.
    #[serde(default)]
    pub health: Option<HealthConfig>,
    /// The services the last `lvsnic keepalived --load` loaded (`-t VIP:PORT`):
    /// the next load deletes those its file no longer has.
    #[serde(default)]
    pub keepalived_services: Vec<String>,
}

/// One connection as saved: what `ipvsadm -L -n -c` shows and what the
/// golden model needs to install it again. Addresses are IPv4 (`conns`,
/// compact for millions of entries) or of either family
/// (`SavedConn<IpAddr>`, `conns6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedConn<A = Ipv4Addr> {
    /// IP protocol (6, 17).
    pub proto: u8,
    /// Client address (a template's: the client network).
    pub caddr: A,
    /// Client port.
    pub cport: u16,
    /// VIP.
    pub vaddr: A,
    /// Virtual port.
    pub vport: u16,
    /// Real server (a tunnel's may be of the other family).
    pub daddr: A,
    /// Real server port.
    pub dport: u16,
    /// `IP_VS_CONN_F_*`.
    pub flags: u16,
    /// Protocol state.
    pub state: u8,
    /// The state's timeout, ms.
    pub timeout_ms: u32,
    /// Time left when saved, ms.
    pub left_ms: u64,
}

impl<A> SavedConn<A> {
    /// The same entry with these addresses.
    fn with_addrs<B>(self, caddr: B, vaddr: B, daddr: B) -> SavedConn<B> {
        let SavedConn { proto, cport, vport, dport, flags, state, timeout_ms, left_ms, .. } = self;
        SavedConn { proto, caddr, cport, vaddr, vport, daddr, dport, flags, state, timeout_ms, left_ms }
    }
}

impl<A: Copy + Into<IpAddr>> SavedConn<A> {
    /// The sync entry that installs it again (`ip_vs_proc_conn`'s input).
    fn sync_conn(&self) -> SyncConn {
        SyncConn {
            protocol: self.proto,
            flags: (self.flags & !lvsnic_model::conn::flags::HASHED) as u32,
            state: self.state as u16,
            cport: self.cport,
            vport: self.vport,
            dport: self.dport,
            timeout: self.timeout_ms.div_ceil(1000),
            caddr: self.caddr.into(),
            vaddr: self.vaddr.into(),
            daddr: self.daddr.into(),
            ..SyncConn::default()
        }
    }
}

/// The connection table file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnSnapshot {
    /// [`STATE_VERSION`] (1), or [`CONNS_VERSION`] (2) when `conns6` is
    /// not empty.
    pub version: u32,
    /// Director time of the snapshot (ns).
    pub taken_ns: u64,
    /// The IPv4 connections and templates.
    pub conns: Vec<SavedConn>,
    /// Those with an IPv6 address (version 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conns6: Vec<SavedConn<IpAddr>>,
}

/// Writes `bytes` to `path` so that a crash leaves the old content or the
/// new, whole: a temporary file beside it, fsync, rename, fsync of the
/// directory. On failure the temporary file is removed and `path` is
/// untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// [`write_atomic`] of what `body` writes (through a buffer, so that a
/// file of hundreds of megabytes is never one buffer in memory).
pub fn write_atomic_with(path: &Path, body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let r = (|| {
        let f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
        body(&mut w)?;
        let f = w.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path, version: impl Fn(&T) -> u32) -> Result<Option<T>, StateError> {
    read_json_versions(path, version, STATE_VERSION)
}

/// [`read_json`] of a file whose versions [`STATE_VERSION`]..=`newest` this
/// build reads.
fn read_json_versions<T: for<'de> Deserialize<'de>>(
    path: &Path,
    version: impl Fn(&T) -> u32,
    newest: u32,
) -> Result<Option<T>, StateError> {
    let p = path.display().to_string();
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StateError::Io { path: p, source: e }),
    };
    let v: T = serde_json::from_slice(&text).map_err(|e| StateError::Corrupt { path: p.clone(), msg: e.to_string() })?;
    if !(STATE_VERSION..=newest).contains(&version(&v)) {
        let reads = if newest == STATE_VERSION {
            format!("version {STATE_VERSION}")
        } else {
            format!("versions {STATE_VERSION} to {newest}")
        };
        return Err(StateError::Corrupt { path: p, msg: format!("version {}, this lvsnic reads {reads}", version(&v)) });
    }
    Ok(Some(v))
}

fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), StateError> {
    let text = serde_json::to_vec(v).map_err(|e| StateError::Corrupt { path: path.display().to_string(), msg: e.to_string() })?;
    write_atomic(path, &text).map_err(|e| StateError::Io { path: path.display().to_string(), source: e })
}

/// Writes `s` as `serde_json` writes its [`ConnSnapshot`], byte for byte,
/// a connection at a time from its chunks: neither the whole table nor its
/// 150 MB of JSON (2M connections) is ever put together in memory.
fn write_snapshot_json(w: &mut dyn Write, s: &Snapshot) -> std::io::Result<()> {
    let version = s.version();
    write!(w, "{{\"version\":{version},\"taken_ns\":{},\"conns\":[", s.taken_ns)?;
    for (i, c) in s.chunks.iter().flatten().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        serde_json::to_writer(&mut *w, c).map_err(std::io::Error::other)?;
    }
    w.write_all(b"]")?;
    if !s.six.is_empty() {
        // Few beside the IPv4 table: written whole.
        w.write_all(b",\"conns6\":")?;
        serde_json::to_writer(&mut *w, &s.six).map_err(std::io::Error::other)?;
    }
    w.write_all(b"}")
}

/// Chunks of finished snapshots, emptied, for the next one to fill
/// ([`Snapshot`]): the loop then writes into memory it has touched before
/// instead of faulting in 100 MB of new pages for every snapshot, and the
/// writer frees nothing. The pool holds at most the chunks of the largest
/// snapshot taken (3 MB each; 100 MB at 2M connections).
pub type ChunkPool = std::sync::Arc<std::sync::Mutex<Vec<Vec<SavedConn>>>>;

/// What the [`Writer`] runs after a file is on disk (a reply to the
/// client whose change it saved).
pub type AfterWrite = Box<dyn FnOnce() + Send>;

/// What a [`WriteJob`] writes: bytes, or a connection snapshot the writer
/// serializes itself (hundreds of megabytes for millions of connections:
/// not the forwarding loop's work).
enum Payload {
    /// Bytes as they are (the writer's own tests).
    #[cfg(test)]
    Bytes(Vec<u8>),
    /// A connection snapshot, put together by the writer.
    Conns(Snapshot),
    /// The running state and its rules, formatted by the writer.
    State(Box<RunningState>, lvsnic_model::rules::RuleSet),
}

/// One file for the [`Writer`]: its bytes, and what to run once it is
/// on disk (or the write failed: the error is printed either way).
struct WriteJob {
    path: PathBuf,
    bytes: Payload,
    then: Option<AfterWrite>,
    /// A connection snapshot: clears [`Writer::conns_pending`] when done.
    conns: bool,
}

/// Writes the state directory's files on a thread of its own, one after
/// the other in the order given ([`write_atomic`] each), so that the
/// forwarding loop never waits for the disk: an fsync can take seconds on
/// a busy disk, and frames would wait that long. The loop serializes (a
/// consistent copy of its state), the writer writes. Dropping the writer
/// writes what is queued and joins the thread (the daemon's last snapshot
/// at exit is on disk when it returns).
pub struct Writer {
    tx: Option<std::sync::mpsc::Sender<WriteJob>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A connection snapshot is queued or being written: the next one is
    /// skipped rather than queued behind it (the writer never falls behind
    /// by more than one table).
    conns_pending: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Files written and failures, for `status` and tests.
    written: std::sync::Arc<std::sync::atomic::AtomicU64>,
    failed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// How long the last connection snapshot took the writer (ns).
    conns_write_ns: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Where written snapshots leave their chunks for the next.
    pool: ChunkPool,
}

impl Writer {
    /// Starts the writer thread; `idle`: it formats and writes at idle
    /// priority, never starved ([`crate::bulk`]; the daemon, whose
    /// acceptor watches bulk threads).
    pub fn start(idle: bool) -> std::io::Result<Writer> {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;
        let (tx, rx) = std::sync::mpsc::channel::<WriteJob>();
        let conns_pending = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let conns_write_ns = Arc::new(AtomicU64::new(0));
        let (p, w, f, c) = (conns_pending.clone(), written.clone(), failed.clone(), conns_write_ns.clone());
        let thread = std::thread::Builder::new().name("lvsnic-state".into()).spawn(move || {
            // The last error printed, so that a failing disk is one line,
            // not one a second.
            let mut failing = false;
            for job in rx {
                // Formatting 10,000 services or 2M connections is tens of
                // milliseconds to seconds of CPU: at idle priority the
                // forwarding loop takes the CPU back the moment it wakes.
                let _bulk = if idle { crate::bulk::enter() } else { None };
                let t0 = std::time::Instant::now();
                let written = match job.bytes {
                    #[cfg(test)]
                    Payload::Bytes(b) => write_atomic(&job.path, &b),
                    Payload::Conns(mut s) => {
                        let r = write_atomic_with(&job.path, |w| write_snapshot_json(w, &s));
                        s.recycle();
                        r
                    }
                    Payload::State(mut st, rules) => {
                        st.rules = crate::reload::rules_text(&rules);
                        serde_json::to_vec(&st).map_err(std::io::Error::other).and_then(|b| write_atomic(&job.path, &b))
                    }
                };
                match written {
                    Ok(()) => {
                        failing = false;
                        w.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        if !failing {
                            eprintln!("lvsnic daemon: saving the state: {}: {e}", job.path.display());
                        }
                        failing = true;
                        f.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if job.conns {
                    c.store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    p.store(false, Ordering::Release);
                }
                if let Some(then) = job.then {
                    then();
                }
            }
        })?;
        Ok(Writer { tx: Some(tx), thread: Some(thread), conns_pending, written, failed, conns_write_ns, pool: ChunkPool::default() })
    }

    /// Queues `bytes` for `path`; `then` runs once it is written. A writer
    /// whose thread is gone runs `then` at once.
    #[cfg(test)]
    fn write(&self, path: PathBuf, bytes: Vec<u8>, then: Option<AfterWrite>, conns: bool) {
        self.send(WriteJob { path, bytes: Payload::Bytes(bytes), then, conns });
    }

    /// Queues a connection snapshot for `path` (serialized by the writer).
    fn write_conns(&self, path: PathBuf, snap: Snapshot) {
        self.send(WriteJob { path, bytes: Payload::Conns(snap), then: None, conns: true });
    }

    fn send(&self, job: WriteJob) {
        let Some(tx) = &self.tx else {
            if let Some(t) = job.then {
                t();
            }
            return;
        };
        if let Err(std::sync::mpsc::SendError(job)) = tx.send(job) {
            if let Some(t) = job.then {
                t();
            }
        }
    }

    /// Files written, and writes that failed, so far.
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering;
        (self.written.load(Ordering::Relaxed), self.failed.load(Ordering::Relaxed))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads `DIR/state.json`: `None` when there is none.
pub fn load_state(dir: &Path) -> Result<Option<RunningState>, StateError> {
    let p = dir.join(STATE_FILE);
    let st: Option<RunningState> = read_json(&p, |s: &RunningState| s.version)?;
    if let Some(s) = &st {
        // The rules must load again, or the file is no use.
        parse_rules_full(&s.rules)
            .map_err(|e| StateError::Corrupt { path: p.display().to_string(), msg: format!("rules: {e}") })?;
    }
    Ok(st)
}

/// Writes `DIR/state.json` atomically.
pub fn save_state(dir: &Path, st: &RunningState) -> Result<(), StateError> {
    write_json(&dir.join(STATE_FILE), st)
}

/// Reads `DIR/connections.json`: `None` when there is none.
pub fn load_conns(dir: &Path) -> Result<Option<ConnSnapshot>, StateError> {
    read_json_versions(&dir.join(CONNS_FILE), |s: &ConnSnapshot| s.version, CONNS_VERSION)
}

/// Writes `DIR/connections.json` atomically.
pub fn save_conns(dir: &Path, s: &ConnSnapshot) -> Result<(), StateError> {
    write_json(&dir.join(CONNS_FILE), s)
}

/// The running configuration of `ctl` (`health`: the checkers' config).
pub fn capture<D: Device>(ctl: &Control<D>, health: Option<&HealthConfig>) -> RunningState {
    let (mut st, rules) = capture_parts(ctl, health);
    st.rules = crate::reload::rules_text(&rules);
    st
}

/// [`capture`] without the rules' text: the running state with `rules`
/// empty, and the rules to write there. Formatting 10,000 services takes
/// tens of milliseconds, so the daemon leaves it to the writer thread.
fn capture_parts<D: Device>(ctl: &Control<D>, health: Option<&HealthConfig>) -> (RunningState, lvsnic_model::rules::RuleSet) {
    (capture_settings(ctl, health), ctl.director().services.to_rules())
}

/// The running state but for the rules (cheap: timeouts, VIPs, sync
/// daemons, checkers).
fn capture_settings<D: Device>(ctl: &Control<D>, health: Option<&HealthConfig>) -> RunningState {
    let d = ctl.director();
    let mut vips: Vec<(IpAddr, bool)> = d.vip_states().collect();
    vips.sort_unstable();
    let sync_daemons = ctl
        .sync_daemons()
        .listing()
        .iter()
        .map(|l| {
            let role = match l.state {
                lvsnic_model::rules::ipvsadm::DaemonState::Master => "master",
                lvsnic_model::rules::ipvsadm::DaemonState::Backup => "backup",
            };
            let mut a: Vec<String> =
                vec!["--start-daemon".into(), role.into(), "--mcast-interface".into(), l.mcast_ifn.clone()];
            a.extend(["--syncid".into(), l.syncid.to_string()]);
            if let Some(g) = l.mcast_group {
                a.extend(["--mcast-group".into(), g.to_string()]);
            }
            a.extend(["--mcast-port".into(), l.mcast_port.to_string()]);
            a.extend(["--mcast-ttl".into(), l.mcast_ttl.to_string()]);
            a.extend(["--sync-maxlen".into(), l.sync_maxlen.to_string()]);
            a
        })
        .collect();
    let st = RunningState {
        version: STATE_VERSION,
        rules: String::new(),
        timeouts: d.cfg.timeouts.get(),
        vips,
        sync_daemons,
        health: health.cloned(),
        keepalived_services: Vec::new(),
    };
    st
}

/// A save being copied ([`Keeper::begin_save`]).
pub struct SaveCopy {
    rules: crate::control::RulesCopy,
}

impl SaveCopy {
    /// Copies rules until `until` or the end; whether the copy is complete.
    /// No rule may change between the first step and the last.
    pub fn step<D: Device>(&mut self, ctl: &Control<D>, until: Option<std::time::Instant>) -> bool {
        ctl.rules_step(&mut self.rules, until)
    }
}

/// The connection table of `ctl` now: every live connection and template
/// with the time it has left (an offloaded connection's last use on the
/// card re-arms it, as `ipvsadm -L -c` shows).
pub fn snapshot<D: Device>(ctl: &mut Control<D>) -> ConnSnapshot {
    let mut s = Snapshot::begin(ctl, None);
    while !s.step(ctl, None) {}
    s.into_snapshot()
}

/// A connection snapshot taken a slice of the table at a time, so that a
/// big table does not hold the forwarding loop ([`Keeper::tick`]): as
/// `ipvsadm -L -c` reads the table, it is not one instant's copy (each
/// connection's time left is that of the moment its slice was taken).
pub struct Snapshot {
    next: u32,
    taken_ns: Time,
    /// The connections taken, in chunks of [`SNAPSHOT_CHUNK`]: one vector
    /// of 2M connections would be moved whole each time it grows (10 ms
    /// with the loop waiting), and the table may grow while it is taken.
    chunks: Vec<Vec<SavedConn>>,
    /// The entries with an IPv6 address.
    six: Vec<SavedConn<IpAddr>>,
    /// Time the loop spent on it.
    cost: std::time::Duration,
    /// Where its chunks come from and go back to once it is written.
    pool: Option<ChunkPool>,
}

/// Connections per chunk of a [`Snapshot`] (3 MB).
const SNAPSHOT_CHUNK: usize = 65536;

impl Snapshot {
    /// Connections taken so far.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum::<usize>() + self.six.len()
    }

    /// Whether none was taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&mut self, c: SavedConn) {
        match self.chunks.last_mut() {
            Some(v) if v.len() < SNAPSHOT_CHUNK => v.push(c),
            _ => {
                let spare = self.pool.as_ref().and_then(|p| p.try_lock().ok()?.pop());
                let mut v = spare.unwrap_or_else(|| Vec::with_capacity(SNAPSHOT_CHUNK));
                v.push(c);
                self.chunks.push(v);
            }
        }
    }

    /// Gives the chunks back to the pool, emptied (the snapshot written).
    fn recycle(&mut self) {
        let Some(pool) = &self.pool else { return };
        let Ok(mut p) = pool.lock() else { return };
        for mut c in self.chunks.drain(..) {
            c.clear();
            p.push(c);
        }
    }

    /// Begins a snapshot of `ctl`'s table (the card's counters credited).
    pub fn begin<D: Device>(ctl: &mut Control<D>, pool: Option<ChunkPool>) -> Snapshot {
        let t0 = std::time::Instant::now();
        ctl.settle();
        let d = ctl.director();
        Snapshot { next: 0, taken_ns: d.now(), chunks: Vec::new(), six: Vec::new(), cost: t0.elapsed(), pool }
    }

    /// Takes connections until `until` (if given) has passed or the table
    /// has been read to its end; whether it has.
    pub fn step<D: Device>(&mut self, ctl: &mut Control<D>, until: Option<std::time::Instant>) -> bool {
        let t0 = std::time::Instant::now();
        let sp = ctl.slow_path_mut();
        let d = &sp.director;
        let now = d.now();
        let bound = d.conns.id_bound();
        let mut view = crate::flows::OffloadView { flows: &mut sp.flows, hw: &mut sp.dp, removed: Vec::new() };
        let mut n = 0u32;
        while self.next < bound {
            let id = lvsnic_model::conn::ConnId(self.next);
            self.next += 1;
            n += 1;
            if n % 64 == 0 && until.is_some_and(crate::deadline::passed) {
                self.next -= 1;
                break;
            }
            if !d.conns.is_live(id) {
                continue;
            }
            let c = d.conns.get(id);
            let mut exp = c.expires;
            if let Some(t) = view.last_use(id, c) {
                exp = exp.max(t + c.timeout());
            }
            let left = exp.saturating_sub(now);
            if left == 0 {
                continue;
            }
            let saved = SavedConn {
                proto: c.proto,
                caddr: Ipv4Addr::from(c.caddr),
                cport: c.cport,
                vaddr: Ipv4Addr::from(c.vaddr),
                vport: c.vport,
                daddr: Ipv4Addr::from(c.daddr),
                dport: c.dport,
                flags: c.flags,
                state: c.state,
                timeout_ms: c.timeout_ms,
                left_ms: left.div_ceil(MSEC),
            };
            if c.is_v4_only() {
                self.push(saved);
            } else {
                let a = d.conns.addrs(id);
                self.six.push(saved.with_addrs(a.caddr, a.vaddr, a.daddr));
            }
        }
        self.cost += t0.elapsed();
        self.next >= bound
    }

    /// The snapshot taken.
    pub fn into_snapshot(self) -> ConnSnapshot {
        ConnSnapshot { version: self.version(), taken_ns: self.taken_ns, conns: self.chunks.concat(), conns6: self.six }
    }

    /// The file version it is written as: 1 ([`STATE_VERSION`]) when every
    /// entry is IPv4, as older lvsnic reads it; [`CONNS_VERSION`] with
    /// `conns6`.
    fn version(&self) -> u32 {
        if self.six.is_empty() {
            STATE_VERSION
        } else {
            CONNS_VERSION
        }
    }
}

/// What [`restore_conns`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Connections and templates installed again.
    pub installed: u64,
    /// Of those, bound to no real server (its service or server is gone).
    pub unbound: u64,
    /// Installed but not offloaded to the card.
    pub not_offloaded: u64,
}

/// Installs the connections of `snap` in `ctl` as the sync backup installs
/// a connection learned from another director (`ip_vs_proc_conn`), with
/// the time each had left, and offloads each through the flow manager's
/// sync path. An entry already in the table is updated, not duplicated.
pub fn restore_conns<D: Device>(ctl: &mut Control<D>, snap: &ConnSnapshot) -> Restored {
    let mut r = Restored::default();
    for s in &snap.conns {
        restore_one(ctl, s, &mut r);
    }
    for s in &snap.conns6 {
        restore_one(ctl, s, &mut r);
    }
    r
}

/// [`restore_conns`] for one saved entry.
fn restore_one<D: Device, A: Copy + Into<IpAddr>>(ctl: &mut Control<D>, s: &SavedConn<A>, r: &mut Restored) {
    let sp = ctl.slow_path_mut();
    let sc = s.sync_conn();
    let Some(id) = backup::proc_conn(&mut sp.director, &sc).id() else { return };
    let d = &mut sp.director;
    // Active or inactive as it was (a sync-learned entry is bound
    // inactive), with the server's counters to match.
    let c = *d.conns.get(id);
    let inactive = lvsnic_model::conn::flags::INACTIVE;
    if (c.flags ^ s.flags) & inactive != 0 && !c.is_template() && c.dest != NIL {
        let dest = &mut d.services.dests[c.dest as usize];
        if s.flags & inactive != 0 {
            dest.activeconns -= 1;
            dest.inactconns += 1;
        } else {
            dest.activeconns += 1;
            dest.inactconns -= 1;
        }
        d.conns.get_mut(id).flags ^= inactive;
    }
    // The state's full timeout stays the connection's; only this
    // first expiry is what it had left.
    d.conns.get_mut(id).timeout_ms = s.timeout_ms;
    let left: Time = (s.left_ms * MSEC).max(SEC / 1000);
    let at = d.now() + left;
    d.conns.arm(id, at);
    r.installed += 1;
    if d.conns.get(id).dest == NIL {
        r.unbound += 1;
    }
    sp.flows.sync(&mut sp.dp, &mut sp.director, id);
    if !sp.flows.is_offloaded(id) {
        r.not_offloaded += 1;
    }
}

/// The state directory of a daemon: `explicit`, else [`DEFAULT_STATE_DIR`]
/// for the default socket (`default_socket`), else `SOCKET.state` beside
/// the socket (so that daemons on different sockets never share one).
pub fn state_dir(explicit: Option<&Path>, socket: &Path, default_socket: bool) -> PathBuf {
    if let Some(d) = explicit {
        return d.to_path_buf();
    }
    if default_socket {
        return PathBuf::from(DEFAULT_STATE_DIR);
    }
    let mut s = socket.as_os_str().to_owned();
    s.push(".state");
    PathBuf::from(s)
}

/// The daemon's keeper of its state directory: restores at start, saves
/// after changes, snapshots the connections, and reloads.
pub struct Keeper {
    dir: Option<PathBuf>,
    director: Option<PathBuf>,
    rules: Option<PathBuf>,
    /// DIRECTOR.toml as last read.
    loaded: Option<(DirectorConfig, Limits)>,
    /// The checkers' configuration (`lvsnic keepalived --load`).
    pub health: Option<HealthConfig>,
    /// The services of the last `lvsnic keepalived --load`.
    ka_services: Vec<String>,
    last_snapshot: Option<std::time::Instant>,
    /// Connections in the last snapshot written.
    last_count: usize,
    /// How long the last snapshot took the loop (its slices together).
    last_cost: std::time::Duration,
    /// The snapshot being taken, a slice per loop iteration.
    taking: Option<Snapshot>,
    /// Writes the files off the loop (`None`: disabled, or written inline
    /// by a keeper without a thread).
    writer: Option<Writer>,
}

impl Keeper {
    /// A keeper that keeps nothing (no state directory) and reloads nothing.
    pub fn disabled() -> Self {
        Keeper {
            dir: None,
            director: None,
            rules: None,
            loaded: None,
            health: None,
            ka_services: Vec::new(),
            last_snapshot: None,
            last_count: 0,
            last_cost: std::time::Duration::ZERO,
            taking: None,
            writer: None,
        }
    }

    /// A keeper of `dir` (created if needed, mode 0700) for a daemon
    /// started with DIRECTOR.toml `director` and rules file `rules`.
    pub fn new(dir: PathBuf, director: &Path, rules: Option<&Path>) -> Result<Self, StateError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| StateError::Io { path: dir.display().to_string(), source: e })?;
        let loaded = crate::limits::load_director(director).ok();
        let writer = Writer::start(true).map_err(|e| StateError::Io { path: dir.display().to_string(), source: e })?;
        Ok(Keeper {
            writer: Some(writer),
            dir: Some(dir),
            director: Some(director.to_path_buf()),
            rules: rules.map(Path::to_path_buf),
            loaded,
            ..Keeper::disabled()
        })
    }

    /// The state directory.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Brings `ctl` back to the saved state, if there is one (`vips`:
    /// whether VIP ownership is restored, not followed from the host).
    /// Returns a line saying what came back, and the checkers to start.
    pub fn restore<D: Device>(
        &mut self,
        ctl: &mut Control<D>,
        vips: bool,
    ) -> Result<(Option<String>, Option<HealthConfig>), StateError> {
        let Some(dir) = self.dir.clone() else { return Ok((None, None)) };
        let st = load_state(&dir)?;
        let conns = load_conns(&dir)?;
        let mut said = Vec::new();
        if let Some(st) = &st {
            let script = parse_rules_full(&st.rules).map_err(|e| StateError::Corrupt {
                path: dir.join(STATE_FILE).display().to_string(),
                msg: format!("rules: {e}"),
            })?;
            crate::reload::converge(ctl, &script.rules).map_err(|e| StateError::Corrupt {
                path: dir.join(STATE_FILE).display().to_string(),
                msg: e,
            })?;
            let (t, f, u) = st.timeouts;
            ctl.set_timeouts(t, f, u);
            if vips {
                for &(v, owned) in &st.vips {
                    ctl.set_vip_owned(v, owned);
                }
            }
            // state.json keeps each daemon as its `--start-daemon` arguments.
            for argv in &st.sync_daemons {
                let words: Vec<&str> = argv.iter().map(String::as_str).collect();
                let r = match lvsnic_model::rules::ipvsadm::parse_command(&words) {
                    Ok(cmd @ lvsnic_model::rules::ipvsadm::Command::StartDaemon(_)) => {
                        ctl.apply(cmd).map_err(|e| e.to_string())
                    }
                    Ok(_) => Err("not a --start-daemon".to_string()),
                    Err(e) => Err(e.to_string()),
                };
                if let Err(e) = r {
                    eprintln!("lvsnic daemon: restoring `{}`: {}", argv.join(" "), e);
                }
            }
            self.health = st.health.clone();
            self.ka_services = st.keepalived_services.clone();
            said.push(format!("{} services", script.rules.services.len()));
        }
        if let Some(c) = &conns {
            let r = restore_conns(ctl, c);
            said.push(format!("{} connections ({} offloaded)", r.installed, r.installed - r.not_offloaded));
            self.last_count = c.conns.len() + c.conns6.len();
        }
        let line = (!said.is_empty()).then(|| format!("restored from {}: {}", dir.display(), said.join(", ")));
        Ok((line, self.health.clone()))
    }

    /// Writes the running configuration (after a change); `then` runs
    /// once it is on disk (a reply: a client that sees it may count on the
    /// change surviving a crash), while the loop goes on forwarding.
    pub fn save_then<D: Device>(&mut self, ctl: &Control<D>, then: Option<AfterWrite>) {
        if self.dir.is_none() {
            if let Some(t) = then {
                t();
            }
            return;
        }
        let mut copy = SaveCopy { rules: crate::control::RulesCopy::default() };
        while !copy.step(ctl, None) {}
        self.save_copied(copy, ctl, then);
    }

    /// A save of the running configuration whose rules are copied a slice
    /// at a time ([`SaveCopy::step`]), then handed to the writer with
    /// [`save_copied`](Self::save_copied): the forwarding loop never holds
    /// for the whole copy. None when no state is kept.
    pub fn begin_save(&self) -> Option<SaveCopy> {
        self.dir.as_ref().map(|_| SaveCopy { rules: crate::control::RulesCopy::default() })
    }

    /// A save copied: its settings are taken now, and the file is written
    /// by the writer thread, then `then` runs.
    pub fn save_copied<D: Device>(&mut self, copy: SaveCopy, ctl: &Control<D>, then: Option<AfterWrite>) {
        let Some(dir) = self.dir.clone() else {
            if let Some(t) = then {
                t();
            }
            return;
        };
        let mut st = capture_settings(ctl, self.health.as_ref());
        st.keepalived_services = self.ka_services.clone();
        let job = WriteJob { path: dir.join(STATE_FILE), bytes: Payload::State(Box::new(st), copy.rules.rules), then, conns: false };
        self.writer().send(job);
    }

    /// Writes the running configuration (after a change).
    pub fn save<D: Device>(&mut self, ctl: &Control<D>) {
        self.save_then(ctl, None);
    }

    /// Writes the connection table now, whole (the daemon's exit: queued
    /// behind a snapshot still being written, if there is one).
    pub fn save_conns<D: Device>(&mut self, ctl: &mut Control<D>) {
        if self.dir.is_none() {
            return;
        }
        self.taking = None;
        self.writer().conns_pending.store(true, std::sync::atomic::Ordering::Release);
        let pool = self.writer.as_ref().map(|w| w.pool.clone());
        let mut s = Snapshot::begin(ctl, pool);
        while !s.step(ctl, None) {}
        self.written(s);
    }

    /// A snapshot taken: to the writer.
    fn written(&mut self, s: Snapshot) {
        let Some(dir) = self.dir.clone() else { return };
        self.last_cost = s.cost;
        self.last_count = s.len();
        self.writer().write_conns(dir.join(CONNS_FILE), s);
        self.last_snapshot = Some(std::time::Instant::now());
    }

    /// Waits until everything queued is on disk (the daemon's exit); the
    /// keeper writes no more.
    pub fn finish(&mut self) {
        drop(self.writer.take());
    }

    /// Files written and failed writes so far.
    pub fn writes(&self) -> (u64, u64) {
        self.writer.as_ref().map(Writer::counts).unwrap_or_default()
    }

    fn writer(&mut self) -> &Writer {
        // A keeper with a directory has a writer until `finish`; after it,
        // a thread-less writer runs the follow-ups at once and writes
        // nothing.
        self.writer.get_or_insert_with(|| Writer {
            tx: None,
            thread: None,
            conns_pending: Default::default(),
            written: Default::default(),
            failed: Default::default(),
            conns_write_ns: Default::default(),
            pool: Default::default(),
        })
    }

    /// Every second (or less often for a big table: ten times as long as
    /// the last snapshot took the loop, four times as long as the writer
    /// took to write it): the connection table, while it is not empty (and
    /// once more when it has become empty). The snapshot is taken a slice
    /// at a time, until `until` in each call ([`Snapshot`]), and written by
    /// the writer thread.
    pub fn tick<D: Device>(&mut self, ctl: &mut Control<D>, until: std::time::Instant) {
        if self.dir.is_none() {
            return;
        }
        if let Some(mut s) = self.taking.take() {
            if s.step(ctl, Some(until)) {
                self.written(s);
            } else {
                self.taking = Some(s);
            }
            return;
        }
        let writer_ns = self.writer().conns_write_ns.load(std::sync::atomic::Ordering::Relaxed);
        let every = std::time::Duration::from_secs(1).max(self.last_cost * 10).max(std::time::Duration::from_nanos(writer_ns) * 4);
        if self.last_snapshot.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        if ctl.director().conns.len() == 0 && self.last_count == 0 {
            self.last_snapshot = Some(std::time::Instant::now());
            return;
        }
        if self.writer().conns_pending.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return; // the last one is still being written
        }
        let pool = self.writer().pool.clone();
        self.taking = Some(Snapshot::begin(ctl, Some(pool)));
    }

    /// Whether a snapshot is being taken (the loop should not sleep).
    pub fn busy(&self) -> bool {
        self.taking.is_some()
    }

    /// `lvsnic keepalived FILE --load` into a running daemon, a reload:
    /// the file's services (`rules`, `ipvsadm -R` text) replace those of
    /// the same key, the previous load's services the file no longer has
    /// are deleted, others (added by hand) stay; real servers whose
    /// checkers are unchanged keep their checkers' state
    /// ([`carry_over`](crate::health::state::carry_over)), so a server
    /// known dead is not put back. All of it is applied, or nothing.
    pub fn load_keepalived<D: Device>(
        &mut self,
        ctl: &mut Control<D>,
        running: &mut Option<crate::health::Health>,
        rules: &str,
        cfg: HealthConfig,
    ) -> crate::invocation::Output {
        let fail = |msg: String| crate::invocation::Output {
            stderr: format!("lvsnic reload: {msg}\n"),
            exit: 1,
            ..Default::default()
        };
        let mut started = cfg.clone();
        if let Some(h) = running.as_ref() {
            let (old, up) = h.checker_states();
            crate::health::state::carry_over(&mut started, &old, &up);
        }
        let text = crate::reload::with_holdings(rules, &started);
        let file = match parse_rules_full(&text) {
            Ok(s) => s.rules,
            Err(e) => return fail(format!("rules: {e}")),
        };
        let ids = crate::reload::service_ids(&file);
        let mut target = ctl.director().services.to_rules();
        let current = crate::reload::service_ids(&target);
        let keep: Vec<bool> = current.iter().map(|k| !ids.contains(k) && !self.ka_services.contains(k)).collect();
        let mut it = keep.iter();
        target.services.retain(|_| *it.next().unwrap_or(&false));
        target.services.extend(file.services);
        let cmds = match crate::reload::converge(ctl, &target) {
            Ok(c) => c,
            Err(e) => return fail(e),
        };
        *running = None;
        let mut out = crate::invocation::Output::default();
        for c in &cmds {
            out.stdout.push_str(&format!("lvsnic {}\n", crate::control::command_line(c)));
        }
        match crate::health::Health::start(started) {
            Ok(h) => {
                // Scripts refused or warned about (health::misc::vet).
                for n in &h.script_notes {
                    out.stderr.push_str(&format!("lvsnic daemon: {n}\n"));
                }
                *running = Some(h);
            }
            Err(e) => {
                out.stderr = format!("lvsnic daemon: starting the health checkers: {e}\n");
                out.exit = 2;
            }
        }
        self.health = Some(cfg);
        self.ka_services = ids;
        out
    }

    /// `lvsnic reload` / SIGHUP: DIRECTOR.toml and the rules file again,
    /// or `rules` (`ipvsadm -S` text, from `lvsnic keepalived --load`)
    /// instead of the rules file.
    pub fn reload<D: Device>(&mut self, ctl: &mut Control<D>, rules: Option<&str>) -> crate::invocation::Output {
        let text = match (rules, &self.rules) {
            (Some(t), _) => Some(("rules", t.to_string())),
            (None, Some(p)) => match std::fs::read_to_string(p) {
                Ok(t) => Some(("", t)),
                Err(e) => {
                    return crate::invocation::Output {
                        stderr: format!("lvsnic reload: {}: {e}\n", p.display()),
                        exit: 1,
                        ..Default::default()
                    }
                }
            },
            (None, None) => None,
        };
        let name = self.rules.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let rt = text.as_ref().map(|(n, t)| (if n.is_empty() { name.as_str() } else { *n }, t.as_str()));
        let director = if rules.is_some() { None } else { self.director.clone() };
        crate::reload::reload(ctl, director.as_deref(), &mut self.loaded, rt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot of more connections than a chunk holds keeps every one,
    /// in the order taken, and only the last chunk is partly filled (the
    /// loop never moves what it has already taken).
    #[test]
    fn a_snapshot_is_taken_in_chunks_and_written_whole() {
        let mut s = Snapshot { next: 0, taken_ns: 7, chunks: Vec::new(), six: Vec::new(), cost: Default::default(), pool: None };
        let conn = |i: usize| SavedConn {
            proto: 6,
            caddr: Ipv4Addr::from(i as u32),
            cport: (i % 65536) as u16,
            vaddr: Ipv4Addr::new(10, 0, 0, 1),
            vport: 80,
            daddr: Ipv4Addr::new(192, 168, 0, 1),
            dport: 80,
            flags: 0,
            state: 1,
            timeout_ms: 900_000,
            left_ms: 1 + i as u64,
        };
        let n = 2 * SNAPSHOT_CHUNK + 3;
        for i in 0..n {
            s.push(conn(i));
        }
        assert_eq!((s.len(), s.chunks.len()), (n, 3));
        assert!(s.chunks.iter().all(|c| c.capacity() == SNAPSHOT_CHUNK), "no chunk grew past its size");
        let snap = s.into_snapshot();
        assert_eq!((snap.taken_ns, snap.conns.len()), (7, n));
        assert!(snap.conns.iter().enumerate().all(|(i, c)| c.caddr == Ipv4Addr::from(i as u32) && c.left_ms == 1 + i as u64));
    }

    /// The writer streams a snapshot chunk by chunk into exactly the bytes
    /// `serde_json` makes of the whole [`ConnSnapshot`] (what
    /// [`load_conns`] reads), and its chunks go back to the pool, emptied,
    /// for the next snapshot to fill without allocating.
    #[test]
    fn a_snapshot_is_streamed_as_its_json_and_its_chunks_reused() {
        let conn = |i: usize| SavedConn {
            proto: if i % 2 == 0 { 6 } else { 17 },
            caddr: Ipv4Addr::from(0x0a00_0000 + i as u32),
            cport: (i % 65536) as u16,
            vaddr: Ipv4Addr::new(10, 0, 0, 1),
            vport: 80,
            daddr: Ipv4Addr::new(192, 168, 0, (i % 7) as u8),
            dport: 8080,
            flags: (i % 3) as u16,
            state: (i % 11) as u8,
            timeout_ms: 900_000,
            left_ms: 1 + i as u64,
        };
        let pool = ChunkPool::default();
        let n = SNAPSHOT_CHUNK + 5;
        let mut s = Snapshot { next: 0, taken_ns: 123_456_789, chunks: Vec::new(), six: Vec::new(), cost: Default::default(), pool: Some(pool.clone()) };
        for i in 0..n {
            s.push(conn(i));
        }
        let path = tmp("stream").join(CONNS_FILE);
        write_atomic_with(&path, |w| write_snapshot_json(w, &s)).unwrap();
        let whole = ConnSnapshot { version: STATE_VERSION, taken_ns: 123_456_789, conns: (0..n).map(conn).collect(), conns6: Vec::new() };
        assert_eq!(std::fs::read(&path).unwrap(), serde_json::to_vec(&whole).unwrap());
        assert_eq!(load_conns(path.parent().unwrap()).unwrap(), Some(whole));
        // An empty table is `[]`, as serde writes it.
        let empty = Snapshot { next: 0, taken_ns: 1, chunks: Vec::new(), six: Vec::new(), cost: Default::default(), pool: None };
        write_atomic_with(&path, |w| write_snapshot_json(w, &empty)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), serde_json::to_vec(&ConnSnapshot { version: STATE_VERSION, taken_ns: 1, conns: Vec::new(), conns6: Vec::new() }).unwrap());

        let first: Vec<*const SavedConn> = s.chunks.iter().map(|c| c.as_ptr()).collect();
        s.recycle();
        assert!(s.chunks.is_empty());
        assert_eq!(pool.lock().unwrap().len(), 2);
        assert!(pool.lock().unwrap().iter().all(|c| c.is_empty() && c.capacity() == SNAPSHOT_CHUNK));
        let mut next = Snapshot { next: 0, taken_ns: 2, chunks: Vec::new(), six: Vec::new(), cost: Default::default(), pool: Some(pool.clone()) };
        for i in 0..n {
            next.push(conn(i));
        }
        let mut again: Vec<*const SavedConn> = next.chunks.iter().map(|c| c.as_ptr()).collect();
        let mut first = first;
        first.sort();
        again.sort();
        assert_eq!(first, again, "the second snapshot filled the first one's chunks");
        assert!(pool.lock().unwrap().is_empty());
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lvsnic-state-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn sample() -> RunningState {
        RunningState {
            version: STATE_VERSION,
            rules: "-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\n".into(),
            timeouts: (901, 121, 301),
            vips: vec![("10.0.0.1".parse().unwrap(), false)],
            sync_daemons: vec![vec!["--start-daemon".into(), "master".into()]],
            health: None,
            keepalived_services: vec!["-t 10.0.0.1:80".into()],
        }
    }

    #[test]
    fn state_round_trip() {
        let d = tmp("rt");
        assert_eq!(load_state(&d).unwrap(), None);
        save_state(&d, &sample()).unwrap();
        assert_eq!(load_state(&d).unwrap(), Some(sample()));
        let snap = ConnSnapshot {
            version: STATE_VERSION,
            taken_ns: 5,
            conns: vec![SavedConn {
                proto: 6,
                caddr: "192.168.0.1".parse().unwrap(),
                cport: 4000,
                vaddr: "10.0.0.1".parse().unwrap(),
                vport: 80,
                daddr: "10.0.1.1".parse().unwrap(),
                dport: 80,
                flags: 0x100,
                state: 1,
                timeout_ms: 900_000,
                left_ms: 899_500,
            }],
            conns6: Vec::new(),
        };
        save_conns(&d, &snap).unwrap();
        assert_eq!(load_conns(&d).unwrap(), Some(snap));
        // Only the two files: no temporary left behind.
        let mut names: Vec<String> =
            std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, [CONNS_FILE, STATE_FILE]);
    }

    /// The writer thread takes the disk's time, not its caller's: writes
    /// queued while it is held (as by an fsync on a busy disk) are all
    /// accepted at once, then written in order, each follow-up (a client's
    /// reply) run after its file is on disk; dropping the writer writes
    /// what is queued.
    #[test]
    fn writer_never_makes_the_caller_wait() {
        let d = tmp("writer");
        let w = Writer::start(false).unwrap();
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<(u32, Vec<u8>)>();
        w.write(d.join("first"), b"x".to_vec(), Some(Box::new(move || {
            let _ = hold_rx.recv();
        })), false);
        for i in 0..100u32 {
            let (tx, path) = (done_tx.clone(), d.join(STATE_FILE));
            let then: AfterWrite = Box::new(move || drop(tx.send((i, std::fs::read(&path).unwrap()))));
            w.write(d.join(STATE_FILE), i.to_string().into_bytes(), Some(then), false);
        }
        // All queued while the thread is held: nothing written or answered.
        assert!(done_rx.try_recv().is_err());
        assert!(!d.join(STATE_FILE).exists());
        hold_tx.send(()).unwrap();
        for i in 0..100u32 {
            let (n, on_disk) = done_rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
            assert_eq!((n, on_disk), (i, i.to_string().into_bytes()), "in order, each answered once on disk");
        }
        w.write(d.join(CONNS_FILE), b"last".to_vec(), None, true);
        assert_eq!(w.counts(), (101, 0));
        drop(w);
        assert_eq!(std::fs::read(d.join(CONNS_FILE)).unwrap(), b"last");
    }

    /// A write that fails is counted and its follow-up still runs (the
    /// client gets its reply; the error was printed).
    #[test]
    fn writer_counts_failures() {
        let d = tmp("writer-fail");
        let w = Writer::start(false).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        w.write(d.join("no-such-dir").join(STATE_FILE), b"x".to_vec(), Some(Box::new(move || {
            let _ = tx.send(());
        })), false);
        rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        assert_eq!(w.counts(), (0, 1));
    }

    #[test]
    fn failed_write_leaves_the_old_file() {
        let d = tmp("atomic");
        save_state(&d, &sample()).unwrap();
        let before = std::fs::read(d.join(STATE_FILE)).unwrap();
        // The temporary name is taken by a directory: the write fails
        // before the rename.
        std::fs::create_dir(d.join(format!(".{STATE_FILE}.tmp.{}", std::process::id()))).unwrap();
        let mut other = sample();
        other.timeouts = (1, 2, 3);
        assert!(save_state(&d, &other).is_err());
        assert_eq!(std::fs::read(d.join(STATE_FILE)).unwrap(), before);
        assert_eq!(load_state(&d).unwrap(), Some(sample()));
    }

    #[test]
    fn corrupt_file_is_one_line_naming_it() {
        let d = tmp("corrupt");
        std::fs::write(d.join(STATE_FILE), "{\"version\":1,\"rules\":").unwrap();
        let e = load_state(&d).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: corrupt state file (", d.join(STATE_FILE).display())), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let mut s = sample();
        s.version = 7;
        std::fs::write(d.join(STATE_FILE), serde_json::to_vec(&s).unwrap()).unwrap();
        assert!(load_state(&d).unwrap_err().to_string().contains("version 7, this lvsnic reads version 1"));
        std::fs::write(d.join(CONNS_FILE), r#"{"version":3,"taken_ns":0,"conns":[]}"#).unwrap();
        assert!(load_conns(&d).unwrap_err().to_string().contains("version 3, this lvsnic reads versions 1 to 2"));
        s.version = 1;
        s.rules = "-A -t 10.0.0.1:80 -s nosuch-option -Q\n".into();
        std::fs::write(d.join(STATE_FILE), serde_json::to_vec(&s).unwrap()).unwrap();
        assert!(load_state(&d).unwrap_err().to_string().contains("rules: "));
        std::fs::write(d.join(CONNS_FILE), "[1,2]").unwrap();
        assert!(load_conns(&d).unwrap_err().to_string().contains(CONNS_FILE));
    }

    /// What the current code writes for IPv4 connections: version 1, no
    /// `conns6` (a file of the build before IPv6 was kept).
    const OLD_SNAPSHOT: &str = r#"{"version":1,"taken_ns":5,"conns":[{"proto":6,"caddr":"192.168.0.1","cport":4000,"vaddr":"10.0.0.1","vport":80,"daddr":"10.0.1.1","dport":80,"flags":256,"state":1,"timeout_ms":900000,"left_ms":899500}]}"#;

    #[test]
    fn an_old_snapshot_still_loads_and_ipv4_tables_are_still_written_as_version_1() {
        let d = tmp("old-snap");
        std::fs::write(d.join(CONNS_FILE), OLD_SNAPSHOT).unwrap();
        let snap = load_conns(&d).unwrap().unwrap();
        assert_eq!((snap.version, snap.conns.len(), snap.conns6.len()), (1, 1, 0));
        assert_eq!(snap.conns[0].daddr, Ipv4Addr::new(10, 0, 1, 1));
        // Written again by this build: the same bytes (what an older
        // lvsnic reads).
        save_conns(&d, &snap).unwrap();
        assert_eq!(std::fs::read_to_string(d.join(CONNS_FILE)).unwrap(), OLD_SNAPSHOT);
    }


    fn control6() -> Control<crate::device::model::ModelDevice> {
        use crate::device::model::{ModelDevice, MODEL_PARAMS};
        let dev = ModelDevice::model(MODEL_PARAMS, crate::device::rings::RingConfig::default()).unwrap();
        let sp = crate::slowpath::SlowPath::new(lvsnic_fixtures::director(&format!("{}-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n", lvsnic_fixtures::IPV6_RULES), ""), dev, MODEL_PARAMS).unwrap();
        Control::new(sp, MODEL_PARAMS.vip_count, Limits::default())
    }

    fn a6(s: &str) -> std::net::Ipv6Addr {
        s.parse().unwrap()
    }

    /// A TCP segment of client `n` (`2001:db8:cafe:n::7`) to `vip:port`.
    fn seg6(n: u8, vip: &str, port: u16, flags: u8) -> Vec<u8> {
        use lvsnic_fixtures::{tcp6, DIRECTOR_MAC, GATEWAY_MAC};
        let client = a6(&format!("2001:db8:cafe:{n}::7"));
        tcp6(GATEWAY_MAC, DIRECTOR_MAC, (client, a6(vip)), 40000 + u16::from(n), port, flags, 1, 1, b"")
    }

    /// Where the director sends `frame` now (its IPv6 destination).
    fn sent_to(ctl: &mut Control<crate::device::model::ModelDevice>, t: Time, frame: &[u8]) -> Option<std::net::Ipv6Addr> {
        let r = ctl.frame(t, frame).unwrap();
        assert_eq!(r.tx.len(), 1, "{r:?}");
        lvsnic_fixtures::ipv6_dst(&r.tx[0])
    }

    /// IPv6 connections and templates are in the snapshot (`conns6`,
    /// version 2) and a restart restores them: each client's next segment
    /// goes to the server it had, not to the one a fresh scheduler picks.
    #[test]
    fn ipv6_connections_and_templates_survive_a_restart() {
        use lvsnic_model::time::SEC;
        use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
        let t0 = lvsnic_fixtures::T0;
        let mut ctl = control6();
        // Clients 1 and 2 on the rr NAT service (servers 1 then 2), client
        // 3 on the persistent one (server 1, and a /64 template).
        let mut first = Vec::new();
        for (i, (n, vip, port)) in [(1, "2001:db8::10", 80), (2, "2001:db8::10", 80), (3, "2001:db8::20", 443)].into_iter().enumerate() {
            let t = t0 + i as u64 * SEC / 10;
            first.push(sent_to(&mut ctl, t, &seg6(n, vip, port, TCP_SYN)));
            sent_to(&mut ctl, t + 1000, &seg6(n, vip, port, TCP_ACK));
        }
        let snap = snapshot(&mut ctl);
        assert_eq!((snap.version, snap.conns.len(), snap.conns6.len()), (CONNS_VERSION, 0, 4), "{snap:?}");
        assert_eq!(snap.conns6.iter().filter(|c| c.flags & lvsnic_model::conn::flags::TEMPLATE != 0).count(), 1);
        let d = tmp("conns6");
        // The writer's streamed file is what serde makes of the whole.
        let mut streamed = Snapshot::begin(&mut ctl, None);
        while !streamed.step(&mut ctl, None) {}
        write_atomic_with(&d.join(CONNS_FILE), |w| write_snapshot_json(w, &streamed)).unwrap();
        assert_eq!(std::fs::read(d.join(CONNS_FILE)).unwrap(), serde_json::to_vec(&snap).unwrap());
        save_conns(&d, &snap).unwrap();
        let text = std::fs::read_to_string(d.join(CONNS_FILE)).unwrap();
        assert!(text.contains(r#""conns6":[{"proto":6,"caddr":"2001:db8:cafe:"#), "{text}");
        let loaded = load_conns(&d).unwrap().unwrap();
        assert_eq!(loaded, snap);

        // The restarted daemon: a fresh table, its rr at the start again.
        let mut ctl = control6();
        let r = restore_conns(&mut ctl, &loaded);
        // The three ESTABLISHED IPv6 connections are offloaded again (the
        // model's card forwards IPv6); the template stays in software.
        assert_eq!(r, Restored { installed: 4, unbound: 0, not_offloaded: 1 });
        let t = t0 + 5 * SEC;
        let after: Vec<_> = [(2, "2001:db8::10", 80), (1, "2001:db8::10", 80), (3, "2001:db8::20", 443)]
            .into_iter()
            .map(|(n, vip, port)| sent_to(&mut ctl, t, &seg6(n, vip, port, TCP_ACK)))
            .collect();
        assert_eq!(after, [first[1], first[0], first[2]]);
        assert_ne!(first[0], first[1]);
        // Counted as they were: established, so active.
        let act: Vec<i32> = ctl.director().services.dests.iter().take(2).map(|d| d.activeconns).collect();
        assert_eq!(act, [1, 1]);
        // The template still holds client 3's /64 on its server: a new
        // host there goes to the same server.
        let other = lvsnic_fixtures::tcp6(
            lvsnic_fixtures::GATEWAY_MAC,
            lvsnic_fixtures::DIRECTOR_MAC,
            (a6("2001:db8:cafe:3::99"), a6("2001:db8::20")),
            5555,
            443,
            TCP_SYN,
            1,
            0,
            b"",
        );
        assert_eq!(sent_to(&mut ctl, t + 1, &other), first[2]);
    }

    #[test]
    fn state_dir_per_socket() {
        assert_eq!(state_dir(None, Path::new("/run/lvsnic/lvsnic.sock"), true), PathBuf::from("/var/lib/lvsnic"));
        assert_eq!(state_dir(None, Path::new("/tmp/x/a.sock"), false), PathBuf::from("/tmp/x/a.sock.state"));
        assert_eq!(state_dir(Some(Path::new("/s")), Path::new("/tmp/a.sock"), false), PathBuf::from("/s"));
    }
}
