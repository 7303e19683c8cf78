//! The connection sync daemons of `lvsnic daemon`, wire-compatible with
//! Linux IPVS: `--start-daemon master|backup --mcast-interface IF
//! [--syncid N] [--mcast-group A] [--mcast-port P] [--mcast-ttl T]
//! [--sync-maxlen L]`, `--stop-daemon master|backup`, `-L --daemon`.
//!
//! * Master: every packet of a connection the golden model handles in the
//!   client-to-server direction is an event for the kernel's sync rules
//!   ([`lvsnic_model::sync::master`]); the messages they produce are sent
//!   to the group (default 224.0.0.81:8848) out of the interface.
//! * Backup: datagrams received on the group, on the interface, are
//!   decoded and installed in the golden model's connection table
//!   ([`lvsnic_model::sync::backup`]); each connection created or updated
//!   then goes through the flow manager's `sync`, the path that offloads
//!   connections to the card. Malformed messages and messages of another
//!   syncid are counted by reason and not installed.
//!
//! The backup's socket is read by a thread of its own into a bounded queue
//! ([`BACKUP_QUEUE`] datagrams, stamped with their arrival time); the
//! forwarding loop installs at most [`RUN_MAX_MESSAGES`] messages and about
//! [`RUN_MAX_ENTRIES`] entries per [`SyncDaemons::run`], so a flood of sync
//! messages (unauthenticated, as in the kernel) costs forwarding a bounded
//! slice of each turn. What a flood costs is counted, beside the decoder's
//! drop reasons: `socket_buffer` (datagrams the socket's receive buffer
//! refused before the thread read them: `SO_RXQ_OVFL`, `SO_MEMINFO`),
//! `queue_full` (read, but the queue was full) and `rate_limited`
//! (entries that would have created a connection or template beyond the
//! `[limits]` rate). Entries learned by sync obey the same `[limits]` as
//! local connections, in buckets of their own (a forged flood cannot take
//! real clients' new connections): per service (one more bucket for
//! entries of no service), one token per new connection and one per new
//! template; updates of existing entries always pass. They obey a table
//! budget too: a synced connection is offloaded only while the card's flow
//! table is below [`SYNC_TABLE_BUDGET`] of its slots and no install has
//! failed since the last entry left it; otherwise it stays in software
//! (the golden model forwards it) and is counted `kept_in_software`.
//!
//! Both can run at once, as in the kernel. The master follows the
//! `[sysctl] sync_*` values of DIRECTOR.toml ([`SyncDaemons::new`]).

pub mod sock;

use crate::device::Device;
use crate::slowpath::SlowPath;
use lvsnic_model::conn::ConnId;
use lvsnic_model::time::Time;
use std::collections::HashMap;
use lvsnic_model::rules::ipvsadm::{DaemonListing, DaemonState, SyncDaemon};
use lvsnic_model::sync::backup::{self, BackupCounters};
use lvsnic_model::sync::master::{sync_maxlen, MasterCounters, SyncMaster, SyncSysctl, SYNC_FLUSH_TIME};
use lvsnic_model::sync::{SYNC_GROUP, SYNC_PORT};
use serde::Serialize;
use crate::limits::{BucketCounters, Limiter, Limits, SvcKey};
use lvsnic_model::director::Director;
use lvsnic_model::sync::SyncConn;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Datagrams the backup's queue holds between its receiving thread and the
/// forwarding loop; one more is dropped and counted (`queue_full`).
pub const BACKUP_QUEUE: usize = 1024;
/// Most messages one [`SyncDaemons::run`] installs.
pub const RUN_MAX_MESSAGES: usize = 64;
/// One [`SyncDaemons::run`] stops taking messages once it installed this
/// many entries (a message is installed whole: at most 255 more).
pub const RUN_MAX_ENTRIES: usize = 256;
/// Share of the card's flow-table slots connections learned by sync may
/// fill (numerator, denominator): 7/8, where the bucketed cuckoo table
/// still places an entry in a few moves; the rest stays for the
/// director's own new connections.
pub const SYNC_TABLE_BUDGET: (usize, usize) = (7, 8);

/// Why a daemon could not be started or stopped (one line, as ipvsadm
/// prints the kernel's refusal).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// `EEXIST`.
    #[error("Daemon has already run")]
    AlreadyRunning,
    /// `ESRCH`.
    #[error("No daemon is running")]
    NotRunning,
    /// `ENODEV`: no such interface.
    #[error("No such device")]
    NoDevice,
    /// `EINVAL`: a real server of the other family than its service's
    /// exists (`mixed_address_family_dests`), which the protocol cannot
    /// carry (libipvs' text for an EINVAL).
    #[error("Invalid operation.  Possibly wrong module version, address not unicast, ...")]
    MixedFamily,
    /// A socket could not be set up.
    #[error("sync socket on {ifname}: {source}")]
    Socket {
        /// The interface.
        ifname: String,
        /// What the socket call said.
        source: std::io::Error,
    },
}

/// One daemon's configuration, as the kernel completes it
/// (`start_sync_thread`: defaults for group, port, TTL, `sync_maxlen`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonConfig {
    /// `--mcast-interface`.
    pub ifname: String,
    /// `--syncid` (0: a backup takes every syncid).
    pub syncid: u8,
    /// `sync_maxlen` as the kernel computes it.
    pub maxlen: u32,
    /// `--mcast-group` (default 224.0.0.81; IPv4 or IPv6).
    pub group: IpAddr,
    /// `--mcast-port` (default 8848).
    pub port: u16,
    /// `--mcast-ttl` (default 1).
    pub ttl: u8,
}

impl DaemonConfig {
    /// The listing line's fields.
    fn listing(&self, state: DaemonState) -> DaemonListing {
        DaemonListing {
            state,
            mcast_ifn: self.ifname.clone(),
            syncid: self.syncid as u32,
            sync_maxlen: self.maxlen,
            mcast_group: Some(self.group),
            mcast_port: self.port,
            mcast_ttl: self.ttl,
        }
    }
}

struct Master {
    cfg: DaemonConfig,
    sock: UdpSocket,
    rules: SyncMaster,
    /// Wall-clock start of the current buffer (the model's clock stands
    /// still between frames of a capture).
    pending_since: Option<Instant>,
    send_errors: u64,
    /// Offloaded connections: model time of their last sync and the
    /// hardware activity seen then.
    offloaded: HashMap<ConnId, (Time, Time)>,
    last_scan: Instant,
}

/// What the backup's receiving thread and the forwarding loop share.
struct Inbox {
    /// Datagrams with their arrival time (ns since `epoch`).
    queue: Mutex<VecDeque<(Time, Vec<u8>)>>,
    epoch: Instant,
    /// Datagrams read while the queue was full.
    queue_full: AtomicU64,
    /// The socket's drop count, as the last datagram reported it.
    socket_drops: AtomicU64,
    /// Receive errors other than timeouts.
    recv_errors: AtomicU64,
    stop: AtomicBool,
}

struct Backup {
    cfg: DaemonConfig,
    sock: Arc<UdpSocket>,
    inbox: Arc<Inbox>,
    thread: Option<JoinHandle<()>>,
    /// Readable while the queue holds datagrams (polled by the loop).
    wake_rx: UnixDatagram,
    wake_tx: UnixDatagram,
    counters: BackupCounters,
    /// `[limits]` buckets for entries that create a connection, and for
    /// those that create a template.
    conn_limiter: Limiter,
    template_limiter: Limiter,
    /// Entries that stayed in software for the table budget.
    kept_in_software: u64,
    /// Flow-table entries in use when an install from sync failed: none is
    /// tried again until fewer are.
    full_at: Option<usize>,
}

impl Backup {
    /// Starts the receiving thread on `sock` (which should count drops:
    /// [`sock::count_drops`]).
    fn start(cfg: DaemonConfig, sock: UdpSocket, limits: Limits) -> std::io::Result<Backup> {
        sock.set_nonblocking(false)?;
        // The thread checks for a stop this often even if no wake-up comes.
        sock.set_read_timeout(Some(Duration::from_millis(200)))?;
        let (wake_rx, wake_tx) = UnixDatagram::pair()?;
        wake_rx.set_nonblocking(true)?;
        wake_tx.set_nonblocking(true)?;
        let inbox = Arc::new(Inbox {
            queue: Mutex::new(VecDeque::with_capacity(BACKUP_QUEUE)),
            epoch: Instant::now(),
            queue_full: AtomicU64::new(0),
            socket_drops: AtomicU64::new(0),
            recv_errors: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let sock = Arc::new(sock);
        let (s, ib, tx) = (sock.clone(), inbox.clone(), wake_tx.try_clone()?);
        let maxlen = cfg.maxlen as usize;
        let thread = std::thread::Builder::new()
            .name("lvsnic-sync-rx".into())
            .spawn(move || {
                // Started by the loop (`--start-daemon`): not at its priority.
                crate::bulk::leave_loop_priority();
                receive_loop(&s, &ib, &tx, maxlen)
            })?;
        Ok(Backup {
            cfg,
            sock,
            inbox,
            thread: Some(thread),
            wake_rx,
            wake_tx,
            counters: BackupCounters::default(),
            conn_limiter: Limiter::new(limits),
            template_limiter: Limiter::new(limits),
            kept_in_software: 0,
            full_at: None,
        })
    }

    fn pop(&self) -> Option<(Time, Vec<u8>)> {
        self.inbox.queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
    }

    fn queued(&self) -> usize {
        self.inbox.queue.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Installs what the queue holds, within the per-call bounds; leaves
    /// the wake-up readable when datagrams remain.
    fn run<D: Device>(&mut self, sp: &mut SlowPath<D>) {
        let mut b = [0u8; 64];
        while self.wake_rx.recv(&mut b).is_ok() {}
        let mut entries = 0;
        for _ in 0..RUN_MAX_MESSAGES {
            if entries >= RUN_MAX_ENTRIES {
                break;
            }
            let Some((ts, msg)) = self.pop() else { break };
            entries += self.install(sp, &msg, ts);
        }
        if self.queued() > 0 {
            let _ = self.wake_tx.send(&[1]);
        }
    }

    /// Decodes and installs one message that arrived at `ts`; returns how
    /// many entries it carried.
    fn install<D: Device>(&mut self, sp: &mut SlowPath<D>, msg: &[u8], ts: Time) -> usize {
        let (conns, templates) = (&mut self.conn_limiter, &mut self.template_limiter);
        let taken = |c: &BackupCounters| {
            c.created + c.updated + c.ignored + c.dropped.get(RATE_LIMITED).copied().unwrap_or(0)
        };
        let before = taken(&self.counters);
        let ids = backup::receive_with(&mut sp.director, msg, self.cfg.syncid, &mut self.counters, |d, c| {
            let lim = if c.is_template() { &mut *templates } else { &mut *conns };
            if lim.admit(limit_key(d, c), ts) {
                Ok(())
            } else {
                Err(RATE_LIMITED)
            }
        });
        for id in ids {
            self.offload(sp, id);
        }
        (taken(&self.counters) - before) as usize
    }

    /// The flow manager's `sync` for a connection learned by sync, within
    /// the table budget.
    fn offload<D: Device>(&mut self, sp: &mut SlowPath<D>, id: ConnId) {
        let (used, slots) = sp.flows.table_use();
        let (num, den) = SYNC_TABLE_BUDGET;
        // A NAT connection takes two entries: two slots, four for an IPv6 one.
        let need = if sp.director.conns.is_live(id) && sp.director.conns.get(id).is_v6() { 4 } else { 2 };
        let over = used + need > slots / den * num || self.full_at.is_some_and(|f| used >= f);
        if over && !sp.flows.is_offloaded(id) {
            if sp.director.conns.is_live(id) && sp.flows.wanted(&sp.director, id).is_some() {
                self.kept_in_software += 1;
            }
            return;
        }
        let failed = sp.flows.table_full;
        sp.flows.sync(&mut sp.dp, &mut sp.director, id);
        if sp.flows.table_full > failed {
            self.full_at = Some(sp.flows.table_use().0);
        } else if self.full_at.is_some_and(|f| used < f) {
            self.full_at = None;
        }
    }

    fn status(&self) -> BackupStatus {
        let mut counters = self.counters.clone();
        let cmsg = self.inbox.socket_drops.load(Ordering::Relaxed);
        let now = sock::socket_drops(&self.sock).map(u64::from).unwrap_or(0);
        counters.dropped.insert(SOCKET_BUFFER, cmsg.max(now));
        counters.dropped.insert(QUEUE_FULL, self.inbox.queue_full.load(Ordering::Relaxed));
        counters.dropped.entry(RATE_LIMITED).or_insert(0);
        let mut per_service = self.conn_limiter.counters();
        for (k, t) in self.template_limiter.counters() {
            let c = per_service.entry(k).or_default();
            c.admitted += t.admitted;
            c.limited += t.limited;
        }
        BackupStatus {
            counters,
            queued: self.queued(),
            queue_capacity: BACKUP_QUEUE,
            recv_errors: self.inbox.recv_errors.load(Ordering::Relaxed),
            kept_in_software: self.kept_in_software,
            rate_limit: per_service,
        }
    }
}

impl Drop for Backup {
    fn drop(&mut self) {
        self.inbox.stop.store(true, Ordering::Relaxed);
        sock::shutdown_read(&self.sock);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Counter name: datagrams the socket's receive buffer dropped.
pub const SOCKET_BUFFER: &str = "socket_buffer";
/// Counter name: datagrams dropped because the queue was full.
pub const QUEUE_FULL: &str = "queue_full";
/// Counter name: entries that would have created a connection or template
/// beyond the `[limits]` rate.
pub const RATE_LIMITED: &str = "rate_limited";

/// The backup's receiving thread: datagrams into the queue until stopped.
fn receive_loop(s: &UdpSocket, inbox: &Inbox, wake: &UnixDatagram, maxlen: usize) {
    let mut buf = vec![0u8; maxlen.max(1)];
    while !inbox.stop.load(Ordering::Relaxed) {
        match sock::recv_counting(s, &mut buf) {
            Ok((n, drops)) => {
                if inbox.stop.load(Ordering::Relaxed) {
                    break; // woken by the shutdown
                }
                if let Some(d) = drops {
                    inbox.socket_drops.fetch_max(d as u64, Ordering::Relaxed);
                }
                let ts = inbox.epoch.elapsed().as_nanos() as Time + 1;
                let mut q = inbox.queue.lock().unwrap_or_else(|e| e.into_inner());
                if q.len() >= BACKUP_QUEUE {
                    inbox.queue_full.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                q.push_back((ts, buf[..n.min(buf.len())].to_vec()));
                if q.len() == 1 {
                    let _ = wake.send(&[1]);
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
            Err(_) => {
                inbox.recv_errors.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// The `[limits]` bucket a creating entry takes a token from: its service,
/// or one bucket for every entry of no service here.
fn limit_key(d: &Director, c: &SyncConn) -> SvcKey {
    match d.services.find_addr(c.protocol, c.vaddr, c.vport) {
        Some(svc) if c.fwmark == 0 => {
            let s = d.services.service(svc);
            (c.protocol, s.vaddr, s.vport)
        }
        _ => (0, IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
    }
}

/// The backup's counters (in `lvsnic status`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BackupStatus {
    /// What the decoder and installer counted; `dropped` also has
    /// `socket_buffer`, `queue_full` and `rate_limited`.
    #[serde(flatten)]
    pub counters: BackupCounters,
    /// Datagrams waiting in the queue.
    pub queued: usize,
    /// The queue's size ([`BACKUP_QUEUE`]).
    pub queue_capacity: usize,
    /// Receive errors of the socket (other than timeouts).
    pub recv_errors: u64,
    /// Entries installed in the golden model but not offloaded: the card's
    /// flow table was at its budget for sync ([`SYNC_TABLE_BUDGET`]).
    pub kept_in_software: u64,
    /// `[limits]` buckets of entries learned by sync, per service
    /// (`? 0.0.0.0:0`: entries of no service).
    pub rate_limit: BTreeMap<String, BucketCounters>,
}

/// The daemons' counters (in `lvsnic status`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SyncStatus {
    /// The master's, when it runs.
    pub master: Option<MasterStatus>,
    /// The backup's, when it runs.
    pub backup: Option<BackupStatus>,
}

/// The master's counters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MasterStatus {
    /// The rules' counters.
    #[serde(flatten)]
    pub counters: MasterCounters,
    /// Messages the socket refused.
    pub send_errors: u64,
}

/// What [`SyncDaemons::ensure`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ensured {
    /// The role was not running: started.
    Started,
    /// It ran with the same configuration: left alone.
    Kept,
    /// It ran with another configuration: stopped and started.
    Replaced,
}

impl Ensured {
    /// `started`, `kept`, `replaced`.
    pub fn name(self) -> &'static str {
        match self {
            Ensured::Started => "started",
            Ensured::Kept => "kept",
            Ensured::Replaced => "replaced",
        }
    }
}

/// The master and backup sync daemons (none running by default).
pub struct SyncDaemons {
    master: Option<Master>,
    backup: Option<Backup>,
    /// The sysctls the master follows.
    pub sysctl: SyncSysctl,
    /// The `[limits]` entries learned by a backup obey.
    limits: Limits,
}

impl SyncDaemons {
    /// No daemon running; a master started later follows `sysctl`
    /// (`[sysctl] sync_*` of DIRECTOR.toml).
    pub fn new(sysctl: SyncSysctl) -> Self {
        SyncDaemons { master: None, backup: None, sysctl, limits: Limits::default() }
    }

    /// The `[limits]` of DIRECTOR.toml, which connections and templates a
    /// backup learns obey (in buckets of their own, refilled as
    /// configured); a running backup's buckets start again full.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
        if let Some(b) = &mut self.backup {
            b.conn_limiter = Limiter::new(limits);
            b.template_limiter = Limiter::new(limits);
        }
    }

    /// The configuration `d` gives a daemon (the kernel's defaults and
    /// `sync_maxlen`), with the interface's index.
    fn config_of(d: &SyncDaemon) -> Result<(DaemonConfig, u32), SyncError> {
        let backup = d.state == DaemonState::Backup;
        let group = d.mcast_group.unwrap_or(IpAddr::V4(SYNC_GROUP));
        let (ifindex, mtu) = sock::interface(&d.mcast_ifn).map_err(|_| SyncError::NoDevice)?;
        let cfg = DaemonConfig {
            ifname: d.mcast_ifn.clone(),
            syncid: d.syncid,
            maxlen: sync_maxlen(backup, d.sync_maxlen, mtu, group.is_ipv6()),
            group,
            port: d.mcast_port.unwrap_or(SYNC_PORT),
            ttl: d.mcast_ttl.unwrap_or(1),
        };
        Ok((cfg, ifindex))
    }

    /// `--start-daemon`.
    pub fn start(&mut self, d: &SyncDaemon) -> Result<(), SyncError> {
        let backup = d.state == DaemonState::Backup;
        if (backup && self.backup.is_some()) || (!backup && self.master.is_some()) {
            return Err(SyncError::AlreadyRunning);
        }
        let (cfg, ifindex) = Self::config_of(d)?;
        let sock_err = |source| SyncError::Socket { ifname: cfg.ifname.clone(), source };
        if backup {
            let sock = sock::recv_socket(&cfg.ifname, ifindex, cfg.group, cfg.port).map_err(sock_err)?;
            let ifname = cfg.ifname.clone();
            let b = Backup::start(cfg, sock, self.limits).map_err(|source| SyncError::Socket { ifname, source })?;
            self.backup = Some(b);
        } else {
            let sock = sock::send_socket(ifindex, cfg.group, cfg.port, cfg.ttl).map_err(sock_err)?;
            let rules = SyncMaster::new(self.sysctl, cfg.syncid, cfg.maxlen as usize);
            self.master = Some(Master {
                cfg,
                sock,
                rules,
                pending_since: None,
                send_errors: 0,
                offloaded: HashMap::new(),
                last_scan: Instant::now(),
            });
        }
        Ok(())
    }

    /// Makes the daemon `d` describes run (`lvsnic keepalived --load` of
    /// an `lvs_sync_daemon`): started if its role is not running, kept if
    /// it runs with the same configuration (its socket, buffer and the
    /// master's per-connection sync state stay), else stopped and started
    /// again with the new one, as keepalived does on a reload
    /// (`ipvs_syncd_changed`: stop both, start). An unknown interface
    /// leaves a running daemon alone; a socket that fails after the stop
    /// leaves the role stopped.
    pub fn ensure(&mut self, d: &SyncDaemon) -> Result<Ensured, SyncError> {
        let (cfg, _) = Self::config_of(d)?;
        let running = match d.state {
            DaemonState::Master => self.master.as_ref().map(|m| &m.cfg),
            DaemonState::Backup => self.backup.as_ref().map(|b| &b.cfg),
        };
        match running {
            Some(c) if *c == cfg => Ok(Ensured::Kept),
            Some(_) => {
                self.stop(d.state)?;
                self.start(d)?;
                Ok(Ensured::Replaced)
            }
            None => {
                self.start(d)?;
                Ok(Ensured::Started)
            }
        }
    }

    /// `--stop-daemon` (a master's unsent buffers are discarded, as the
    /// kernel's are).
    pub fn stop(&mut self, state: DaemonState) -> Result<(), SyncError> {
        let slot = match state {
            DaemonState::Master => self.master.take().map(|_| ()),
            DaemonState::Backup => self.backup.take().map(|_| ()),
        };
        slot.ok_or(SyncError::NotRunning)
    }

    /// `-L --daemon`: master first, then backup.
    pub fn listing(&self) -> Vec<DaemonListing> {
        let mut v = Vec::new();
        if let Some(m) = &self.master {
            v.push(m.cfg.listing(DaemonState::Master));
        }
        if let Some(b) = &self.backup {
            v.push(b.cfg.listing(DaemonState::Backup));
        }
        v
    }

    /// Whether a master daemon runs.
    pub fn master_running(&self) -> bool {
        self.master.is_some()
    }

    /// Whether a backup daemon runs.
    pub fn backup_running(&self) -> bool {
        self.backup.is_some()
    }

    /// Descriptors to poll for input: readable while the backup's queue
    /// holds datagrams (its socket is read by a thread of its own).
    pub fn fds(&self) -> Vec<RawFd> {
        self.backup.iter().map(|b| b.wake_rx.as_raw_fd()).collect()
    }

    /// Whether the master has a buffer waiting (the loop should wake up
    /// to flush it).
    pub fn master_pending(&self) -> bool {
        self.master.as_ref().is_some_and(|m| m.rules.pending_conns() > 0)
    }

    /// Counters.
    pub fn status(&self) -> SyncStatus {
        SyncStatus {
            master: self.master.as_ref().map(|m| MasterStatus { counters: m.rules.counters, send_errors: m.send_errors }),
            backup: self.backup.as_ref().map(Backup::status),
        }
    }

    /// After the golden model handled `frame`: a packet of its connection
    /// in the client-to-server direction is a master event. When that
    /// packet made the connection offloaded, its next packets are forwarded
    /// by the card and never counted here: it is synced now as the kernel
    /// does when `in_pkts` reaches `sync_threshold` (unless this packet
    /// already sent it), and again on each later packet the host sees until
    /// one such sync was written (a connection offloaded in SYN_RECV is
    /// sent when its ACK makes it ESTABLISHED).
    pub fn after_frame<D: Device>(&mut self, sp: &SlowPath<D>, frame: &[u8]) {
        let Some(m) = &mut self.master else { return };
        let d = &sp.director;
        let Some(id) = d.last_conn else { return };
        if !d.conns.is_live(id) {
            return;
        }
        let c = d.conns.get(id);
        if dst_proto(frame) != Some((d.conns.addrs(id).vaddr, c.proto)) {
            return;
        }
        let now = d.now();
        let wrote = m.rules.in_packet(now, &d.conns, id);
        if c.proto == 6 && c.state == lvsnic_model::conn::tcp::state::SYN_RECV {
            // A new handshake on this entry (a SYN takes a FIN_WAIT,
            // TIME_WAIT or CLOSE entry back to SYN_RECV, `set_tcp_state`,
            // or a new entry starts there): it is sent again when offloaded
            // in ESTABLISHED.
            m.offloaded.remove(&id);
        }
        if sp.flows.is_offloaded(id) && !m.offloaded.contains_key(&id) {
            let t = m.rules.cfg.sync_threshold;
            if wrote || m.rules.sync_conn(now, &d.conns, id, t) {
                m.offloaded.insert(id, (now, now));
            }
        }
        if m.pending_since.is_none() && m.rules.pending_conns() > 0 {
            m.pending_since = Some(Instant::now());
        }
    }

    /// Offloaded connections the card kept forwarding are synced again
    /// once half their timeout has passed since their last sync (the
    /// kernel re-sends every `sync_period` packets, which the host does not
    /// see for offloaded connections).
    fn refresh_offloaded<D: Device>(m: &mut Master, sp: &mut SlowPath<D>) {
        if m.last_scan.elapsed() < Duration::from_secs(1) {
            return;
        }
        m.last_scan = Instant::now();
        let now = sp.director.now();
        let ids: Vec<ConnId> = m.offloaded.keys().copied().collect();
        for id in ids {
            if !sp.director.conns.is_live(id) || !sp.flows.is_offloaded(id) {
                m.offloaded.remove(&id);
                continue;
            }
            let (synced, seen) = m.offloaded[&id];
            let Some(act) = sp.flows.activity(&mut sp.dp, id) else { continue };
            let half = sp.director.conns.get(id).timeout() / 2;
            if act > seen && now.saturating_sub(synced) >= half {
                let t = m.rules.cfg.sync_threshold;
                m.rules.sync_conn(now, &sp.director.conns, id, t);
                m.offloaded.insert(id, (now, act));
                if m.pending_since.is_none() && m.rules.pending_conns() > 0 {
                    m.pending_since = Some(Instant::now());
                }
            }
        }
    }

    /// Installs part of what the backup's queue holds (at most
    /// [`RUN_MAX_MESSAGES`] messages, about [`RUN_MAX_ENTRIES`] entries:
    /// the forwarding loop calls it every turn and is held only that long;
    /// [`fds`](Self::fds) stays readable while more wait); sends what the
    /// master has ready.
    pub fn run<D: Device>(&mut self, sp: &mut SlowPath<D>) {
        if let Some(b) = &mut self.backup {
            b.run(sp);
        }
        if let Some(m) = &mut self.master {
            Self::refresh_offloaded(m, sp);
            let d = &sp.director;
            let mut msgs = m.rules.poll(d.now(), &d.conns);
            if m.pending_since.is_some_and(|t| t.elapsed() >= Duration::from_nanos(SYNC_FLUSH_TIME)) {
                msgs.extend(m.rules.flush_current());
            }
            if m.rules.pending_conns() == 0 {
                m.pending_since = None;
            }
            for msg in msgs {
                if m.sock.send(&msg).is_err() {
                    m.send_errors += 1;
                }
            }
        }
    }
}

/// Destination address and protocol of an IPv4 or IPv6 frame (Ethernet,
/// with or without one 802.1Q tag; for IPv6 the fixed header's next
/// header, which is the protocol of every packet the model carries).
fn dst_proto(frame: &[u8]) -> Option<(IpAddr, u8)> {
    let mut off = 12;
    let mut ty = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    if ty == 0x8100 {
        off += 4;
        ty = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    }
    match ty {
        0x0800 => {
            let ip = frame.get(off + 2..off + 22)?;
            Some((IpAddr::V4(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19])), ip[9]))
        }
        0x86dd => {
            let ip = frame.get(off + 2..off + 42)?;
            let mut dst = [0u8; 16];
            dst.copy_from_slice(&ip[24..40]);
            Some((IpAddr::V6(dst.into()), ip[6]))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::model::ModelDevice;
    use crate::device::rings::RingConfig;
    use lvsnic_fixtures::{director, rs, MIXED_RULES, VIP};
    use lvsnic_model::conn::flags as cf;
    use lvsnic_model::hw::HwParams;
    use lvsnic_model::sync::encode_v1;
    use lvsnic_model::time::SEC;

    const ES: u16 = 1; // IP_VS_TCP_S_ESTABLISHED

    /// A slow path over the card model with a flow table of
    /// `2 * 4 << buckets_log2` slots, MIXED_RULES.
    fn slow_path(buckets_log2: u32) -> SlowPath<ModelDevice> {
        let params = HwParams { data_width: 64, flow_buckets_log2: buckets_log2, action_log2: 8, vip_count: 16, ipv6: true };
        let dev = ModelDevice::model(params, RingConfig::default()).unwrap();
        SlowPath::new(director(MIXED_RULES, ""), dev, params).unwrap()
    }

    /// A loopback UDP socket that counts its drops, and where to send to it.
    fn socket() -> (UdpSocket, std::net::SocketAddr) {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock::count_drops(&s).unwrap();
        let a = s.local_addr().unwrap();
        (s, a)
    }

    /// A backup (syncid 0) on `s`, following `limits`.
    fn backup_on(s: UdpSocket, limits: Limits) -> SyncDaemons {
        let mut d = SyncDaemons::new(SyncSysctl::default());
        d.set_limits(limits);
        let cfg = DaemonConfig { ifname: "lo".into(), syncid: 0, maxlen: 65507, group: IpAddr::V4(SYNC_GROUP), port: 0, ttl: 1 };
        d.backup = Some(Backup::start(cfg, s, limits).unwrap());
        d
    }

    /// ESTABLISHED NAT connection of client `n` (198.51.0.0 + n, port
    /// 40000) to VIP:80 on rs 1; with `TEMPLATE` in `flags`, a template.
    fn entry(n: u32, flags: u32) -> SyncConn {
        let template = flags & cf::TEMPLATE as u32 != 0;
        SyncConn {
            protocol: 6,
            flags: flags | cf::SYNC as u32,
            state: if template { 0 } else { ES },
            cport: if template { 0 } else { 40000 },
            vport: 80,
            dport: 8080,
            timeout: 900,
            caddr: Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 51, 0, 0)) + n).into(),
            vaddr: VIP.into(),
            daddr: rs(1).into(),
            ..Default::default()
        }
    }

    /// Messages of 40 entries (a master's 1472-byte maxlen) for clients `range`.
    fn messages(range: std::ops::Range<u32>, flags: u32) -> Vec<Vec<u8>> {
        let conns: Vec<SyncConn> = range.map(|n| entry(n, flags)).collect();
        let msgs = encode_v1(0, 1472, &conns);
        assert!(msgs.iter().all(|m| m[4] as usize == 40 || m == msgs.last().unwrap()));
        msgs
    }

    fn st(s: &SyncDaemons) -> BackupStatus {
        s.status().backup.unwrap()
    }

    fn dropped(st: &BackupStatus, name: &str) -> u64 {
        st.counters.dropped.get(name).copied().unwrap_or(0)
    }

    /// Polls `cond` every 10 ms for up to 10 s (a hang guard, not a timing).
    fn settle(mut cond: impl FnMut() -> bool) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn a_flood_faster_than_the_loop_is_queued_bounded_and_counted() {
        let (s, to) = socket();
        let mut sync = backup_on(s, Limits::default());
        let mut sp = slow_path(10);
        // 3,000 valid messages of 40 entries, while the loop installs none.
        let msgs = messages(0..120_000, 0);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let accounted = |b: &BackupStatus| b.queued as u64 + dropped(b, QUEUE_FULL) + dropped(b, SOCKET_BUFFER);
        // In bursts of 32 (the socket's buffer holds more), each read by
        // the thread before the next.
        let mut sent = 0;
        for burst in msgs.chunks(32) {
            for m in burst {
                tx.send_to(m, to).unwrap();
            }
            sent += burst.len() as u64;
            assert!(settle(|| accounted(&st(&sync)) == sent), "{:?}", st(&sync));
        }
        let b = st(&sync);
        // The queue is full, the rest was refused and counted.
        assert_eq!(b.queued, BACKUP_QUEUE);
        assert_eq!(dropped(&b, QUEUE_FULL) + dropped(&b, SOCKET_BUFFER), sent - BACKUP_QUEUE as u64);
        assert!(dropped(&b, QUEUE_FULL) > 0, "{b:?}");
        assert_eq!(b.counters.messages, 0);
        // The loop installs a bounded slice per call: 7 messages of 40
        // entries reach RUN_MAX_ENTRIES (256).
        sync.run(&mut sp);
        assert_eq!(st(&sync).counters.messages, 7);
        assert_eq!(st(&sync).counters.created, 280);
        // The descriptor stays readable while the queue holds more.
        let mut calls = 1;
        while st(&sync).queued > 0 {
            let fd = sync.fds()[0];
            assert!(crate::sys::poll_readable(&[fd], 0).unwrap()[0], "wake-up lost");
            let m0 = st(&sync).counters.messages;
            sync.run(&mut sp);
            assert!(st(&sync).counters.messages - m0 <= 7);
            calls += 1;
        }
        let b = st(&sync);
        assert_eq!(b.counters.messages, BACKUP_QUEUE as u64);
        assert_eq!(calls, BACKUP_QUEUE.div_ceil(7));
        assert_eq!(b.counters.messages + dropped(&b, QUEUE_FULL) + dropped(&b, SOCKET_BUFFER), sent);
    }

    #[test]
    fn socket_buffer_drops_are_counted() {
        let (s, to) = socket();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Before the backup reads: the socket's buffer overflows.
        let msgs = messages(0..40 * 2000, 0);
        for m in &msgs {
            tx.send_to(m, to).unwrap();
        }
        let sync = backup_on(s, Limits::default());
        let b = sync.backup.as_ref().unwrap();
        let st = || sync.status().backup.unwrap();
        // SO_MEMINFO: what the buffer dropped, whatever was read since.
        assert!(settle(|| st().queued as u64 + dropped(&st(), SOCKET_BUFFER) == msgs.len() as u64), "{:?}", st());
        let lost = dropped(&st(), SOCKET_BUFFER);
        assert!(lost > 0 && st().queued > 0, "{:?}", st());
        // SO_RXQ_OVFL: the next datagram carries the count to the thread.
        assert_eq!(b.inbox.socket_drops.load(Ordering::Relaxed), 0);
        tx.send_to(&msgs[0], to).unwrap();
        assert!(settle(|| b.inbox.socket_drops.load(Ordering::Relaxed) == lost));
    }

    #[test]
    fn limits_bound_the_new_connections_learned_by_sync() {
        let (s, _) = socket();
        let limits = Limits { new_conn_per_sec: Some(10), burst: Some(20) };
        let mut sync = backup_on(s, limits);
        let mut sp = slow_path(10);
        let b = sync.backup.as_mut().unwrap();
        let t0 = 5 * SEC;
        // 100 new connections at once: the burst is created, the rest counted.
        for m in messages(0..100, 0) {
            b.install(&mut sp, &m, t0);
        }
        let st = b.status();
        assert_eq!((st.counters.created, dropped(&st, RATE_LIMITED)), (20, 80));
        assert_eq!(sp.director.conns.len(), 20);
        assert_eq!(st.rate_limit["TCP 10.0.0.100:80"], BucketCounters { admitted: 20, limited: 80 });
        // Again: the 20 known ones are updates (always taken), the others
        // still find the bucket empty.
        for m in messages(0..100, cf::INACTIVE as u32) {
            b.install(&mut sp, &m, t0);
        }
        let st = b.status();
        assert_eq!((st.counters.created, st.counters.updated, dropped(&st, RATE_LIMITED)), (20, 20, 160));
        // An active entry naming another real server would replace a known
        // connection: a creation, refused while the bucket is empty (the
        // connection stays with its server); an inactive one is the old
        // connection's expiry: ignored, not refused.
        let mut other = entry(0, 0);
        other.daddr = rs(2).into();
        b.install(&mut sp, &encode_v1(0, 1472, std::slice::from_ref(&other)).remove(0), t0);
        assert_eq!(dropped(&b.status(), RATE_LIMITED), 161);
        let IpAddr::V4(ca) = other.caddr else { unreachable!() };
        let id = sp.director.conns.in_get(6, u32::from(ca), 40000, u32::from(VIP), 80).unwrap();
        assert_eq!(sp.director.conns.get(id).daddr, u32::from(rs(1)));
        other.flags |= cf::INACTIVE as u32;
        b.install(&mut sp, &encode_v1(0, 1472, &[other]).remove(0), t0);
        assert_eq!((b.status().counters.ignored, dropped(&b.status(), RATE_LIMITED)), (1, 161));
        // One second later, ten more tokens.
        for m in messages(100..200, 0) {
            b.install(&mut sp, &m, t0 + SEC);
        }
        assert_eq!(b.status().counters.created, 30);
        // Templates have buckets of their own (a new persistent connection
        // carries a template and a connection).
        let mut tpl = entry(0, cf::TEMPLATE as u32);
        tpl.vport = 443;
        tpl.daddr = rs(3).into();
        tpl.dport = 443;
        b.install(&mut sp, &encode_v1(0, 1472, &[tpl]).remove(0), t0 + SEC);
        assert_eq!(b.status().counters.created, 31);
        // Without [limits] every entry is taken, as by the kernel's backup.
        let (s, _) = socket();
        let mut free = backup_on(s, Limits::default());
        let mut sp = slow_path(10);
        for m in messages(0..100, 0) {
            free.backup.as_mut().unwrap().install(&mut sp, &m, t0);
        }
        assert_eq!(free.status().backup.unwrap().counters.created, 100);
    }

    #[test]
    fn synced_connections_stay_in_software_beyond_the_table_budget() {
        let (s, _) = socket();
        let mut sync = backup_on(s, Limits::default());
        // 128 slots: the budget is 112 entries, 56 NAT connections.
        let mut sp = slow_path(4);
        let b = sync.backup.as_mut().unwrap();
        for m in messages(0..200, 0) {
            b.install(&mut sp, &m, SEC);
        }
        let (used, slots) = sp.flows.table_use();
        assert_eq!((used, slots), (112, 128));
        assert_eq!(sp.flows.len(), 56);
        // No install was tried, and failed, beyond the budget.
        assert_eq!(sp.flows.table_full, 0);
        assert_eq!(b.status().kept_in_software, 200 - 56);
        // The golden model has them all (it forwards the others).
        assert_eq!(sp.director.conns.len(), 200);
        // Updates of offloaded connections still reach the card: a closing
        // state leaves it in step (no second copy, no failure).
        for m in messages(0..200, cf::INACTIVE as u32) {
            b.install(&mut sp, &m, SEC);
        }
        assert_eq!(sp.flows.table_use().0, 112);
        assert_eq!(sp.flows.table_full, 0);
    }
}
