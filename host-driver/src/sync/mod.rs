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
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

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
    /// An IPv6 group (the kernel would take it; lvsnic syncs over IPv4).
    #[error("lvsnic: connection sync over an IPv6 multicast group is not supported")]
    Ipv6Group,
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
    /// `--mcast-group` (default 224.0.0.81).
    pub group: Ipv4Addr,
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
            mcast_group: Some(IpAddr::V4(self.group)),
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

struct Backup {
    cfg: DaemonConfig,
    sock: UdpSocket,
    counters: BackupCounters,
    buf: Vec<u8>,
}

/// The daemons' counters (in `lvsnic status`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SyncStatus {
    /// The master's, when it runs.
    pub master: Option<MasterStatus>,
    /// The backup's, when it runs.
    pub backup: Option<BackupCounters>,
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
}

impl SyncDaemons {
    /// No daemon running; a master started later follows `sysctl`
    /// (`[sysctl] sync_*` of DIRECTOR.toml).
    pub fn new(sysctl: SyncSysctl) -> Self {
        SyncDaemons { master: None, backup: None, sysctl }
    }

    /// The configuration `d` gives a daemon (the kernel's defaults and
    /// `sync_maxlen`), with the interface's index.
    fn config_of(d: &SyncDaemon) -> Result<(DaemonConfig, u32), SyncError> {
        let backup = d.state == DaemonState::Backup;
        let group = match d.mcast_group {
            None => SYNC_GROUP,
            Some(IpAddr::V4(g)) => g,
            Some(IpAddr::V6(_)) => return Err(SyncError::Ipv6Group),
        };
        let (ifindex, mtu) = sock::interface(&d.mcast_ifn).map_err(|_| SyncError::NoDevice)?;
        let cfg = DaemonConfig {
            ifname: d.mcast_ifn.clone(),
            syncid: d.syncid,
            maxlen: sync_maxlen(backup, d.sync_maxlen, mtu),
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
            let buf = vec![0; cfg.maxlen as usize];
            self.backup = Some(Backup { cfg, sock, counters: BackupCounters::default(), buf });
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

    /// Descriptors to poll for input (the backup's socket).
    pub fn fds(&self) -> Vec<RawFd> {
        self.backup.iter().map(|b| b.sock.as_raw_fd()).collect()
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
            backup: self.backup.as_ref().map(|b| b.counters.clone()),
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
        if ipv4_dst_proto(frame) != Some((c.vaddr, c.proto)) {
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

    /// Receives and installs what the backup socket holds; sends what the
    /// master has ready.
    pub fn run<D: Device>(&mut self, sp: &mut SlowPath<D>) {
        if let Some(b) = &mut self.backup {
            // At most 256 datagrams a turn: the exception loop stays responsive.
            for _ in 0..256 {
                let n = match b.sock.recv(&mut b.buf) {
                    Ok(n) => n,
                    Err(_) => break,
                };
                let ids = backup::receive(&mut sp.director, &b.buf[..n], b.cfg.syncid, &mut b.counters);
                for id in ids {
                    sp.flows.sync(&mut sp.dp, &mut sp.director, id);
                }
            }
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

/// Destination address and protocol of an IPv4 frame (Ethernet, with or
/// without one 802.1Q tag).
fn ipv4_dst_proto(frame: &[u8]) -> Option<(u32, u8)> {
    let mut off = 12;
    let mut ty = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    if ty == 0x8100 {
        off += 4;
        ty = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    }
    if ty != 0x0800 {
        return None;
    }
    let ip = frame.get(off + 2..off + 22)?;
    Some((u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]), ip[9]))
}
