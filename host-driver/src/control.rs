//! The control plane of the daemon: ipvsadm commands applied to the running
//! director (golden model + flow manager + data plane), between frames.
//!
//! [`Control::ipvsadm`] takes an ipvsadm argument list (and, for `-R`, the
//! text ipvsadm would read from standard input) and returns what ipvsadm
//! would print on stdout and stderr and its exit status:
//!
//! * listings (`-L`/`-l` with `-n -c --stats --rate --thresholds
//!   --persistent-conn --tun-info --timeout --daemon --exact --nosort`,
//!   `-L -t VIP:port`, and no arguments at all) and `-S` use the byte-exact
//!   printers of `lvsnic_model::rules::ipvsadm`; rates print 0 (the kernel's
//!   rate estimator is not modelled);
//! * rule changes (`-A -E -D -C -a -e -d -Z --set`) go to the golden model
//!   with the kernel's checks in the kernel's order; deleting real servers
//!   (`-d`, and `-D`/`-C` for every server of the services) removes their
//!   offloaded flows from the data plane so it stops forwarding them, and
//!   every change rewrites the data plane's VIP table;
//! * errors are printed as ipvsadm prints them (ipvsadm.c): `fail()`
//!   messages verbatim with status 2, libipvs `ipvs_strerror()` messages
//!   for what the kernel refuses with status 255 (`process_options` returns
//!   -1), popt errors as `OPTION: reason` with status 255, "Try `PROG -h'
//!   or 'PROG --help' for more information." with status 255 when there is
//!   no command, and "No such service" with status 1 for `-L` of a missing
//!   service;
//! * `-R` runs each line as ipvsadm's `restore_table` does: a `fail()`
//!   ends the restore (status 2), kernel and popt errors are printed and the
//!   restore goes on, and the status is that of the last line. There are
//!   no comments: a line starting with `#` is not a command, so it ends the
//!   restore with "Try `PROG -h' ..." and status 255, as in ipvsadm 1.31
//!   (seen in the VM; `parse_rules`, for rules files, skips such lines).
//!
//! [`Control::apply`] is the typed API under the text: it applies one
//! parsed [`Command`] with all its side effects and returns a
//! [`KernelError`] (whose `Display` is what ipvsadm prints) on refusal.
//! Health checkers, reloads and the state restore use it directly, so no
//! ipvsadm argument list is built to be parsed again; [`command_line`]
//! spells a change as `ipvsadm -S` does, for what they print.
//!
//! Heavy operations run a slice at a time, so that the daemon can forward
//! frames between slices ([`Control::ipvsadm_begin`]): `-R` a slice of
//! lines at a time ([`Control::restore_step`]; the kernel's ipvsadm also
//! sends one netlink command per line, with packets flowing between them),
//! `-L -c` a slice of the connection table at a time
//! ([`Control::conns_step`], as the kernel's `/proc/net/ip_vs_conn`
//! seq_file reads it: not an atomic snapshot). [`Control::ipvsadm`] runs
//! them to the end at once.
//!
//! What the lvsnic director cannot do (fwmark, IPv6 and SCTP services,
//! persistence engines, GUE/GRE tunnels, and, unless the daemon resolves
//! neighbours, real servers without a `[neighbors]` entry) is refused with one clear line and status 255,
//! where a kernel would have accepted it. `--start-daemon`/`--stop-daemon`
//! run the connection sync daemons of [`crate::sync`].

use crate::device::{Device, DeviceError, RxFrame, Wire};
use crate::flows::OffloadView;
pub use crate::invocation::Output;
use crate::invocation::{usage, version};
use crate::limits::{self, Limiter, Limits};
use crate::slowpath::{FrameResult, SlowPath};
use lvsnic_model::conn::ConnId;
use lvsnic_model::director::Offload;
use lvsnic_model::director::DirectorError;
use lvsnic_model::ipvs::{DestId, RuleError};
use lvsnic_model::rules::ipvsadm::{
    format_connections, format_daemon, format_list, format_save, format_timeout, parse_command, Command, CommandError,
    check_scheduler, ApplyError, ConnListing, ListOptions,
};
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::Director;
use lvsnic_model::rules::ipvsadm::first_option_fails;
use lvsnic_model::rules::ipvsadm::SyncDaemon;
use lvsnic_model::rules::{ServiceKey, ServiceRule};
use lvsnic_model::stats::{connection_listing, listing_header, listings, service_listing, service_report, services_step, Report, ServiceReport};
use lvsnic_model::time::Time;
use serde::Serialize;
use std::net::IpAddr;
use std::time::Instant;

/// ipvsadm's `fail(2, ...)`.
pub const EXIT_FAIL: i32 = 2;
/// `process_options` returning -1 (kernel or popt error), as an exit status.
pub const EXIT_ERR: i32 = 255;
/// `exit(1)` of the listing functions.
pub const EXIT_LIST: i32 = 1;

/// Counters of the exception loop.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LoopCounters {
    /// Frames received from the wire.
    pub frames: u64,
    /// Of those, forwarded by the data plane without the host.
    pub in_hardware: u64,
    /// Handed up by the data plane (exceptions).
    pub exceptions: u64,
    /// New-connection exceptions dropped by the rate limit.
    pub rate_limited: u64,
    /// Frames transmitted on the wire.
    pub transmitted: u64,
    /// Frames given to the director's own stack.
    pub to_host: u64,
    /// Frames dropped on receive (empty, runt, oversize, receive ring), by reason.
    pub dropped_on_receive: lvsnic_model::stats::ReceiveDrops,
    /// `exceptions` by the reason the data plane gave (its metadata's
    /// `reason`: `miss_vip`, `tcp_control`, ...; zero counts left out).
    pub exceptions_by_reason: ExceptionReasons,
}

/// Exception frames by the data plane's reason code, in [`LoopCounters`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExceptionReasons(pub [u64; lvsnic_model::hw::Reason::COUNT]);

impl Default for ExceptionReasons {
    fn default() -> Self {
        ExceptionReasons([0; lvsnic_model::hw::Reason::COUNT])
    }
}

impl ExceptionReasons {
    /// Counts one exception of `reason`.
    pub fn count(&mut self, reason: lvsnic_model::hw::Reason) {
        self.0[reason as usize] += 1;
    }

    /// Every reason code with its name and count (zero counts too).
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().enumerate().filter_map(|(i, &n)| lvsnic_model::hw::Reason::from_u8(i as u8).map(|r| (r.name(), n)))
    }
}

/// A map of reason name to count, zero counts left out.
impl Serialize for ExceptionReasons {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (name, n) in self.iter().filter(|&(_, n)| n > 0) {
            m.serialize_entry(name, &n)?;
        }
        m.end()
    }
}

/// The director's state as `lvsnic status` shows it
/// ([`Control::status`]); the daemon adds its own sections beside these.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The director's clock (model time, ns).
    pub now_ns: Time,
    /// The director report, as `lvsnic replay --stats` writes it
    /// (`director.total.inpkts`, `director.connections.created`, ...).
    pub director: Report,
    /// The exception loop's counters (`exception_loop.frames`,
    /// `exception_loop.dropped_on_receive`, ...).
    pub exception_loop: LoopCounters,
    /// The data plane's flow table.
    pub offload: OffloadStatus,
    /// The new-connection rate limit (`[limits]`).
    pub limits: LimitsStatus,
    /// The connection sync daemons.
    pub sync: crate::sync::SyncStatus,
    /// The real servers' next hops and MACs, and ARP senders that
    /// contradicted their `[neighbors]` entry.
    pub neighbors: crate::neighbors::NeighborStatus,
}

/// The data plane's flow table, in [`Status`].
#[derive(Clone, Copy, Debug, Serialize)]
pub struct OffloadStatus {
    /// Connections offloaded to the card now.
    pub connections: usize,
    /// Queued for removal: connections of deleted real servers whose
    /// frames already go to the host (their actions' `host` bit); those
    /// still offloaded are counted in `connections` too.
    pub diverted: usize,
    /// Flows that did not fit in the card's table (their connection stays in software).
    pub table_full: u64,
    /// Idle offloaded connections evicted for one that did not fit.
    pub evicted: u64,
    /// Table commands that found the device busy for too long.
    pub busy_timeouts: u64,
    /// Flow-table entries in use (an IPv6 flow takes two).
    pub flow_entries: usize,
    /// The flow table's entries (slots).
    pub flow_capacity: usize,
    /// Action-table entries in use.
    pub action_entries: usize,
    /// The action table's usable entries (entry 0 is never used).
    pub action_capacity: usize,
}

/// The connection table counted by protocol and state, a slice at a time
/// ([`Control::conn_states_step`]); as `-L -c`, not an atomic snapshot.
#[derive(Clone, Debug, Default)]
pub struct ConnStates {
    /// The next connection id to look at.
    next: u32,
    /// Connections (templates not included) by (protocol, state) as
    /// `ipvsadm -L -n -c` names them (`TCP`, `ESTABLISHED`).
    pub counts: std::collections::BTreeMap<(&'static str, &'static str), u64>,
    /// Persistence templates.
    pub templates: u64,
}

/// The new-connection rate limit, in [`Status`].
#[derive(Clone, Debug, Serialize)]
pub struct LimitsStatus {
    /// `[limits] new_conn_per_sec` (none: no limit).
    pub new_conn_per_sec: Option<u64>,
    /// The bucket's depth (`[limits] burst`, or its default).
    pub burst: u64,
    /// Frames dropped by any service's bucket.
    pub limited: u64,
    /// Each service's bucket counters, by service name.
    pub services: std::collections::BTreeMap<String, limits::BucketCounters>,
}

/// A sync daemon's role as ipvsadm names it.
fn sync_role(s: lvsnic_model::rules::ipvsadm::DaemonState) -> &'static str {
    match s {
        lvsnic_model::rules::ipvsadm::DaemonState::Master => "master",
        lvsnic_model::rules::ipvsadm::DaemonState::Backup => "backup",
    }
}

/// How an ipvsadm run ended: `process_options` returned, or `exit()` was called.
enum Done {
    Ret(i32),
    Exit(i32),
}

/// An ipvsadm command begun by [`Control::ipvsadm_begin`].
pub enum Step {
    /// It ran: what it printed and its status.
    Done(Output),
    /// `-R`: run its lines with [`Control::restore_step`].
    Restore(Restore),
    /// `-L -c`: take the table's rows with [`Control::conns_step`].
    Conns(ConnList),
    /// A listing taken from the tables (a copy), to be formatted away
    /// from the forwarding loop: 10,000 services take tens of
    /// milliseconds to format.
    Later(Later),
    /// `-S`: copy the rules with [`Control::rules_step`], then format
    /// them away from the loop with [`format_save`].
    Rules(RulesCopy),
    /// `-C`: delete the services with [`Control::flush_step`].
    Flush(Flush),
    /// A service listing (`-L`, `--stats`, `--rate`...): copy the services
    /// with [`Control::listing_step`], then format them away from the loop
    /// with [`Control::listing_text`].
    Listing(ListOptions, ServicesCopy<lvsnic_model::rules::ipvsadm::ServiceListing>),
}

/// Something made of every live service, made a slice of services at a
/// time ([`Control::services_step`]).
#[derive(Debug)]
pub struct ServicesCopy<T> {
    next: usize,
    /// What was made so far.
    pub items: Vec<T>,
}

impl<T> Default for ServicesCopy<T> {
    fn default() -> Self {
        ServicesCopy { next: 0, items: Vec::new() }
    }
}

/// A `-C` deleting services a few at a time: each is deleted as `-D`
/// deletes it (its servers to the trash, their offloaded flows diverted),
/// so that 10,000 services do not hold forwarding for the whole flush.
/// Packets between two slices see the services not yet deleted, as they
/// do in the kernel, whose `ip_vs_flush` unlinks services one by one
/// while packets look them up under RCU.
#[derive(Debug)]
pub struct Flush {
    /// The services left to delete, the last first.
    left: Vec<ServiceKey>,
    vips_written: Option<Instant>,
}

/// The rules of every service (what `-S` prints and the state file keeps)
/// being copied a slice of services at a time: 10,000 services take 1–2 ms
/// to copy, longer than forwarding should wait.
#[derive(Debug, Default)]
pub struct RulesCopy {
    /// The next service index to look at.
    next: usize,
    /// What was copied so far.
    pub rules: lvsnic_model::rules::RuleSet,
}

/// Services whose rules are copied between two looks at the clock.
const RULES_PER_LOOK: usize = 64;

/// What formats a reply from a copy of the tables, on another thread.
pub type Later = Box<dyn FnOnce() -> Output + Send>;

/// A `-R` being applied a slice of lines at a time.
pub struct Restore {
    prog: String,
    text: String,
    /// Byte offset of the next line in `text`.
    pos: usize,
    /// The status of the last line run.
    result: i32,
    out: Output,
    /// When the data plane's VIP table was last written during it.
    vips_written: Option<Instant>,
}

/// How often a `-R` in progress rewrites the data plane's VIP table (and
/// once more when it ends): computing it takes a scan of every service
/// (about a millisecond for 10,000), too much for every slice of lines.
const RESTORE_VIP_WRITE_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl Restore {
    /// Lines of `text` not yet run (for progress reports).
    pub fn bytes_left(&self) -> usize {
        self.text.len().saturating_sub(self.pos)
    }
}

/// A `-L -c` listing being taken a slice of the connection table at a time.
pub struct ConnList {
    /// The next connection id to look at.
    next: u32,
    /// `--persistent-conn`.
    pub persistent: bool,
}

/// The text of a `-L -c` listing, formatted a slice of rows at a time
/// (byte for byte what [`format_connections`] prints of all of them).
#[derive(Default)]
pub struct ConnText {
    text: String,
    started: bool,
}

impl ConnText {
    /// Appends the lines of `rows` (the header first, once).
    pub fn push(&mut self, rows: &[ConnListing], persistent: bool) {
        let t = self.chunk(rows, persistent);
        self.text.push_str(&t);
    }

    /// The lines of `rows`, after the header if no slice came before
    /// (for a caller that writes the listing as it comes).
    pub fn chunk(&mut self, rows: &[ConnListing], persistent: bool) -> String {
        let t = format_connections(rows, persistent);
        if self.started {
            // Every slice is formatted with the header lines; they are printed once.
            let head = format_connections(&[], persistent);
            t.strip_prefix(head.as_str()).map(str::to_string).unwrap_or(t)
        } else {
            self.started = true;
            t
        }
    }

    /// The listing.
    pub fn finish(self, persistent: bool) -> String {
        if self.started {
            self.text
        } else {
            format_connections(&[], persistent)
        }
    }
}

/// The director as the daemon runs it. Its parts are private: rule
/// changes go through [`Control::ipvsadm`], everything else through the
/// named methods below (the state keeper's snapshots reach the slow path
/// through [`Control::slow_path_mut`], crate-private).
pub struct Control<D: Device> {
    /// The golden model and flow manager in front of the card.
    sp: SlowPath<D>,
    /// VIP table entries of the data plane.
    vip_count: u32,
    /// The per-service new-connection rate limit.
    limiter: Limiter,
    /// The exception loop's counters.
    counters: LoopCounters,
    /// The connection sync daemons (`--start-daemon`).
    sync: crate::sync::SyncDaemons,
    /// The real servers' next hops and their MACs ([`crate::neighbors`]).
    neighbors: crate::neighbors::NeighborTable,
}

/// Why the director (as the kernel would) refused a change. `Display` is
/// the line ipvsadm prints for it (libipvs `ipvs_strerror()`, or
/// `strerror()` where libipvs has no text of its own), byte for byte.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// A refusal of the kernel's own (EEXIST, ESRCH, ENOENT, ERANGE), the
    /// same [`ApplyError`] a rules file gets from the model (which adds
    /// what was refused to its text; ipvsadm prints libipvs' line alone).
    #[error("{}", .0.ipvsadm_text())]
    Refused(ApplyError),
    /// `--start-daemon`/`--stop-daemon` refused.
    #[error("{0}")]
    Sync(crate::sync::SyncError),
    /// What the lvsnic director does not carry out (fwmark, IPv6, SCTP, ...).
    #[error("{0}")]
    Unsupported(String),
    /// Any other refusal (a real server with no `[neighbors]` entry, ...).
    #[error("{0}")]
    Other(String),
    /// A listing, `-S`, `-R`, `-h` or `-v` given to [`Control::apply`].
    #[error("`{0}` is not a change of the rules")]
    NotAChange(String),
}

impl KernelError {
    /// A refusal of a service command (`-A`, `-E`, `-D`).
    fn of_service(e: &DirectorError) -> Self {
        match e {
            DirectorError::Rule { error: RuleError::UnknownScheduler(s), .. } => {
                KernelError::Refused(ApplyError::SchedulerNotFound(s.clone()))
            }
            other => Self::other(other),
        }
    }

    /// A refusal of a real server command (`-a`, `-e`, `-d`).
    /// `thresholds`: the command's `-y` and `-x` (an ERANGE names them).
    fn of_dest(e: &DirectorError, (lower, upper): (u32, u32)) -> Self {
        match e {
            DirectorError::Rule { error: RuleError::NoSuchService, .. } => KernelError::Refused(ApplyError::ServiceNotDefined),
            DirectorError::Rule { error: RuleError::DestExists, .. } => KernelError::Refused(ApplyError::DestExists),
            DirectorError::Rule { error: RuleError::NoSuchDest, .. } => KernelError::Refused(ApplyError::NoSuchDest),
            // ip_vs_new_dest: EINVAL for an IPv6 server not global unicast.
            DirectorError::Rule { error: RuleError::BadDestAddress, .. } => KernelError::Refused(ApplyError::InvalidOperation),
            // ip_vs_add_dest/ip_vs_edit_dest: -ERANGE, which libipvs leaves to strerror().
            DirectorError::Rule { error: RuleError::Thresholds, .. } => {
                KernelError::Refused(ApplyError::ThresholdRange { lower, upper })
            }
            other => Self::other(other),
        }
    }

    fn other(e: &DirectorError) -> Self {
        match e {
            DirectorError::Rule { error: RuleError::Unsupported(m), .. } => KernelError::Unsupported(m.clone()),
            other => KernelError::Other(other.to_string()),
        }
    }
}

/// One change as the ipvsadm arguments that ask for it (no program name),
/// in `ipvsadm -S -n`'s spelling: `-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1`,
/// thresholds (which `-S` leaves out) after the weight as `-x U -y L`;
/// `-d -t 10.0.0.1:80 -r 10.0.1.1:80`. What reloads print and health
/// checkers report.
pub fn command_line(cmd: &Command) -> String {
    use lvsnic_model::rules::ipvsadm::DaemonState;
    use lvsnic_model::rules::RuleSet;
    let service = |op: &str, r: &ServiceRule| {
        let mut svc = r.clone();
        svc.dests.clear();
        let text = format_save(&RuleSet { services: vec![svc] });
        let line = text.lines().next().unwrap_or_default();
        format!("{op}{}", line.strip_prefix("-A").unwrap_or(line))
    };
    let dest = |op: &str, key: &ServiceKey, d: &lvsnic_model::rules::DestRule| {
        let mut svc = ServiceRule::new(*key);
        svc.dests = vec![d.clone()];
        let text = format_save(&RuleSet { services: vec![svc] });
        let line = text.lines().nth(1).unwrap_or_default();
        let mut l = format!("{op}{}", line.strip_prefix("-a").unwrap_or(line));
        if d.u_threshold != 0 {
            l.push_str(&format!(" -x {}", d.u_threshold));
        }
        if d.l_threshold != 0 {
            l.push_str(&format!(" -y {}", d.l_threshold));
        }
        l
    };
    let role = |s: DaemonState| match s {
        DaemonState::Master => "master",
        DaemonState::Backup => "backup",
    };
    match cmd {
        Command::AddService(r) => service("-A", r),
        Command::EditService(r) => service("-E", r),
        Command::DeleteService(k) => format!("-D {k}"),
        Command::Clear => "-C".into(),
        Command::AddDest(k, d) => dest("-a", k, d),
        Command::EditDest(k, d) => dest("-e", k, d),
        Command::DeleteDest(k, IpAddr::V4(a), p) => format!("-d {k} -r {a}:{p}"),
        Command::DeleteDest(k, IpAddr::V6(a), p) => format!("-d {k} -r [{a}]:{p}"),
        Command::Zero(None) => "-Z".into(),
        Command::Zero(Some(k)) => format!("-Z {k}"),
        Command::SetTimeouts { tcp, tcpfin, udp } => format!("--set {tcp} {tcpfin} {udp}"),
        Command::StartDaemon(d) => {
            let mut l = format!("--start-daemon {} --mcast-interface {} --syncid {}", role(d.state), d.mcast_ifn, d.syncid);
            if let Some(g) = d.mcast_group {
                l.push_str(&format!(" --mcast-group {g}"));
            }
            if let Some(p) = d.mcast_port {
                l.push_str(&format!(" --mcast-port {p}"));
            }
            if let Some(t) = d.mcast_ttl {
                l.push_str(&format!(" --mcast-ttl {t}"));
            }
            if let Some(m) = d.sync_maxlen {
                l.push_str(&format!(" --sync-maxlen {m}"));
            }
            l
        }
        Command::StopDaemon(d) => format!("--stop-daemon {}", role(d.state)),
        Command::List(_) => "-L -n".into(),
        Command::Save { .. } => "-S -n".into(),
        Command::Restore => "-R".into(),
        Command::Help => "-h".into(),
        Command::Version => "-v".into(),
    }
}

impl<D: Device> Control<D> {
    /// The control plane over `sp`, with `vip_count` VIP table entries and the rate limit `limits`.
    pub fn new(sp: SlowPath<D>, vip_count: u32, limits: Limits) -> Self {
        // The sync daemons follow DIRECTOR.toml's `[sysctl] sync_*`.
        let mut sync = crate::sync::SyncDaemons::new(sp.director.cfg.sysctl.sync);
        sync.set_limits(limits); // a backup's entries obey `[limits]` too
        let mut neighbors = crate::neighbors::NeighborTable::new(sp.director.cfg.neighbors.clone());
        neighbors.set_statics6(sp.director.cfg.neighbors6.clone());
        let cfg = &sp.director.cfg;
        if cfg.resolve_neighbors && cfg.gateway_mac.is_none() {
            // The gateway is tracked from the start: its ARP is learned
            // before the first frame towards it.
            neighbors.set_gateway(cfg.gateway);
            neighbors.set_targets([], sp.director.now());
        }
        Control { sp, vip_count, limiter: Limiter::new(limits), counters: LoopCounters::default(), sync, neighbors }
    }

    /// The golden model (read only: rules change through [`ipvsadm`](Self::ipvsadm)).
    pub fn director(&self) -> &Director {
        &self.sp.director
    }

    /// The exception loop's counters.
    pub fn counters(&self) -> LoopCounters {
        self.counters
    }

    /// Connections whose flows are on the card now.
    pub fn offloaded(&self) -> usize {
        self.sp.flows.len()
    }

    /// Connections whose flows did not fit in the card's tables.
    pub fn table_full(&self) -> u64 {
        self.sp.flows.table_full
    }

    /// Idle offloaded connections evicted for one that did not fit.
    pub fn evicted(&self) -> u64 {
        self.sp.flows.evicted
    }

    /// Credits the data plane's counters to the director's statistics and
    /// runs the flow manager's pending work (before reading them).
    pub fn settle(&mut self) {
        self.sp.settle();
    }

    /// `ipvsadm --set tcp tcpfin udp` (0 keeps a value).
    pub fn set_timeouts(&mut self, tcp: u32, tcpfin: u32, udp: u32) {
        self.sp.director.cfg.timeouts.set(tcp, tcpfin, udp);
    }

    /// Takes `vip` (VRRP master) or releases it (backup, fault), in the
    /// golden model and on the card; whether that changed anything.
    pub fn set_vip_owned(&mut self, vip: impl Into<std::net::IpAddr>, owned: bool) -> bool {
        self.sp.set_vip_owned(vip.into(), owned)
    }

    /// The director's configuration, for what a reload changes at run time
    /// (neighbors, timeouts); rules change through [`ipvsadm`](Self::ipvsadm).
    pub fn config_mut(&mut self) -> &mut DirectorConfig {
        &mut self.sp.director.cfg
    }

    /// The next-hop table (for the daemon's resolvers: what to ask for,
    /// what they learned). Call [`apply_neighbors`](Self::apply_neighbors)
    /// after changing it.
    pub fn neighbors_mut(&mut self) -> &mut crate::neighbors::NeighborTable {
        &mut self.neighbors
    }

    /// The next-hop table.
    pub fn neighbors(&self) -> &crate::neighbors::NeighborTable {
        &self.neighbors
    }

    /// The real servers of the rules whose next hops the host resolves
    /// (not the director itself), each once: the IPv4 ones, and the IPv6
    /// ones with `cfg.resolve_neighbors6`.
    pub fn real_servers(&self) -> Vec<std::net::IpAddr> {
        let d = &self.sp.director;
        let v6 = d.cfg.resolve_neighbors6;
        let mut v: Vec<std::net::IpAddr> = d
            .services
            .live_services()
            .flat_map(|s| s.order.iter().map(|&id| d.services.dest(id).addr))
            .filter(|a| match a {
                std::net::IpAddr::V4(a) => *a != d.cfg.ip,
                std::net::IpAddr::V6(a) => v6 && Some(*a) != d.cfg.ip6,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Brings the golden model and the card in line with the next-hop
    /// table: real servers whose next-hop MAC changed get it (the card's
    /// action entries are rewritten in place, connections stay); returns
    /// the held frames that can go now (destination MAC set), for the
    /// caller to send.
    pub fn apply_neighbors(&mut self) -> Vec<Vec<u8>> {
        if !self.sp.director.cfg.resolve_neighbors {
            return Vec::new();
        }
        let (changes, release) = self.neighbors.reconcile();
        for (rs, mac) in changes {
            self.sp.set_next_hop(rs, mac);
        }
        release
    }

    /// The gateway's address moved (`[director] gateway = "fib"`: the
    /// default route changed): the golden model sends towards the new one
    /// (unknown until learned: frames towards it are held), and every
    /// offloaded connection is brought in line (those replying through the
    /// gateway leave the card until its MAC is known).
    pub fn set_gateway_address(&mut self, gateway: Option<std::net::Ipv4Addr>) {
        let old = self.sp.director.cfg.gateway;
        crate::logging::event(
            log::Level::Info,
            "gateway_moved",
            &[("old", &addr_or_none(old)), ("new", &addr_or_none(gateway)), ("source", "fib")],
        );
        self.sp.director.cfg.gateway = gateway;
        self.neighbors.set_gateway(gateway);
        let now = self.sp.director.now();
        let targets: Vec<_> = self.real_servers().into_iter().map(|rs| (rs, self.neighbors.next_hop(rs).unwrap_or(rs))).collect();
        self.neighbors.set_targets(targets, now);
        self.sp.gateway_moved();
    }

    /// `[neighbors]` as a reload found it: the static entries are replaced
    /// (with `cfg.resolve_neighbors`: a changed or removed entry takes
    /// effect at once, the card's actions rewritten in place).
    pub fn set_static_neighbors(&mut self, statics: std::collections::BTreeMap<std::net::Ipv4Addr, lvsnic_model::wire::MacAddr>) {
        let old = std::mem::replace(&mut self.sp.director.cfg.neighbors, statics.clone());
        let mut changed: Vec<std::net::Ipv4Addr> =
            old.iter().filter(|(ip, m)| statics.get(ip) != Some(m)).map(|(ip, _)| *ip).collect();
        changed.extend(statics.keys().filter(|ip| !old.contains_key(ip)));
        self.neighbors.set_statics(statics);
        self.sp.statics_changed(&changed);
    }

    /// The connection sync daemons.
    pub fn sync_daemons(&self) -> &crate::sync::SyncDaemons {
        &self.sync
    }

    /// Starts a sync daemon, or restarts it with another configuration
    /// (`lvsnic sync`, keepalived's `lvs_sync_daemon`).
    pub fn ensure_sync(&mut self, d: &SyncDaemon) -> Result<crate::sync::Ensured, crate::sync::SyncError> {
        if self.sp.director.services.mixed_family_dests() > 0 {
            return Err(crate::sync::SyncError::MixedFamily);
        }
        self.sync.ensure(d)
    }

    /// Runs the sync daemons: what the backup received, what the master sends.
    pub fn run_sync(&mut self) {
        self.sync.run(&mut self.sp);
    }

    /// The slow path itself, for the state keeper's connection snapshots
    /// and their restore ([`crate::state`]).
    pub(crate) fn slow_path_mut(&mut self) -> &mut SlowPath<D> {
        &mut self.sp
    }

    /// Runs the director's timers up to `ts` (frames do it themselves; the
    /// daemon calls it when idle in live mode and before requests).
    pub fn advance(&mut self, ts: Time) {
        self.sp.advance(ts);
    }

    /// Handles the exception frames the card handed up on its receive ring
    /// by itself (a real card's, from its own ports; a simulated card's
    /// exceptions are taken by [`frame`](Self::frame)): up to `max` per call;
    /// returns how many.
    pub fn poll_device(&mut self, max: usize) -> Result<usize, DeviceError> {
        let mut batch = Vec::new();
        let n = self.sp.dp.recv(&mut batch, max)?;
        for RxFrame { meta, data: frame } in batch {
            self.counters.frames += 1;
            self.counters.exceptions += 1;
            self.neighbors.observe(&frame, meta.ts);
            self.counters.exceptions_by_reason.count(meta.reason);
            if let Some(svc) = limits::new_conn_service(&self.sp.director, &frame) {
                if !self.limiter.admit(svc, meta.ts) {
                    self.counters.rate_limited += 1;
                    continue;
                }
            }
            // The sync master looks at the frame after the golden model.
            let copy = self.sync.master_running().then(|| frame.clone());
            let mut r = self.sp.device_exception(meta.ts, frame, meta.seq)?;
            if let Some((rs, held)) = r.held.take() {
                self.neighbors.hold(rs, held, meta.ts);
            }
            for f in self.apply_neighbors() {
                self.host_tx(&f)?;
            }
            if let Some(f) = copy {
                self.sync.after_frame(&self.sp, &f);
            }
            self.counters.transmitted += r.injected as u64;
            self.counters.to_host += r.host.is_some() as u64;
        }
        Ok(n)
    }

    /// A frame the director's own stack sends: down the card's transmit
    /// ring, out of its network port.
    pub fn host_tx(&mut self, frame: &[u8]) -> Result<(), DeviceError> {
        self.sp.host_tx(frame)?;
        self.counters.transmitted += 1;
        Ok(())
    }

    /// The director's state (`lvsnic status`): the director report (as
    /// `replay --stats` writes it), the loop counters, the rate limit, the
    /// offload state and the sync daemons. Runs the flow manager's pending
    /// work first, so that the counters include it.
    pub fn status(&mut self) -> Status {
        self.sp.settle();
        let mut c = ServicesCopy::default();
        while !self.services_step(&mut c, service_report, None) {}
        self.status_with(c.items)
    }

    /// [`status`](Self::status) with its services' reports taken before
    /// (the card's counters credited first: [`settle`](Self::settle), then
    /// [`services_step`](Self::services_step) with [`service_report`]).
    pub fn status_with(&mut self, services: Vec<ServiceReport>) -> Status {
        Status {
            now_ns: self.sp.director.now(),
            director: Report::with_services(&self.sp.director, services),
            exception_loop: self.counters,
            offload: OffloadStatus {
                connections: self.sp.flows.len(),
                diverted: self.sp.flows.diverted_pending(),
                table_full: self.sp.flows.table_full,
                evicted: self.sp.flows.evicted,
                busy_timeouts: crate::flows::BUSY_TIMEOUTS.load(std::sync::atomic::Ordering::Relaxed),
                flow_entries: self.sp.flows.table_use().0,
                flow_capacity: self.sp.flows.table_use().1,
                action_entries: self.sp.flows.action_use().0,
                action_capacity: self.sp.flows.action_use().1,
            },
            limits: LimitsStatus {
                new_conn_per_sec: self.limiter.limits.new_conn_per_sec,
                burst: self.limiter.limits.burst(),
                limited: self.limiter.limited_total,
                services: self.limiter.counters(),
            },
            sync: self.sync.status(),
            neighbors: {
                let mut n = self.neighbors.status();
                for (rs, e) in n.entries.iter_mut() {
                    if let Ok(ip) = rs.parse() {
                        let macs = if e.gateway {
                            self.sp.flows.gateway_macs(&self.sp.director)
                        } else {
                            self.sp.flows.request_macs(&self.sp.director, ip)
                        };
                        e.card_macs = macs.iter().map(|m| m.to_string()).collect();
                    }
                }
                n
            },
        }
    }

    /// One ipvsadm invocation: `prog` is the program name ipvsadm would
    /// print in its messages (its `argv[0]`), `args` the arguments after
    /// it, `stdin` what `-R` reads.
    pub fn ipvsadm(&mut self, prog: &str, args: &[String], stdin: Option<&str>) -> Output {
        match self.ipvsadm_begin(prog, args, stdin.map(str::to_string)) {
            Step::Done(out) => out,
            Step::Restore(mut r) => loop {
                if let Some(out) = self.restore_step(&mut r, None) {
                    break out;
                }
            },
            Step::Conns(mut l) => {
                let mut text = ConnText::default();
                loop {
                    let (rows, done) = self.conns_step(&mut l, None);
                    text.push(&rows, l.persistent);
                    if done {
                        break Output { stdout: text.finish(l.persistent), ..Default::default() };
                    }
                }
            }
            Step::Later(f) => f(),
            Step::Rules(mut c) => {
                while !self.rules_step(&mut c, None) {}
                Output { stdout: format_save(&c.rules), ..Default::default() }
            }
            Step::Listing(opts, mut c) => {
                while !self.listing_step(&mut c, None) {}
                let text = self.listing_text(&opts);
                text(c.items)
            }
            Step::Flush(mut f) => loop {
                if let Some(out) = self.flush_step(&mut f, None) {
                    break out;
                }
            },
        }
    }

    /// [`ipvsadm`](Self::ipvsadm), except that a `-R` or a `-L -c` is only
    /// begun: the caller runs it with [`restore_step`](Self::restore_step)
    /// or [`conns_step`](Self::conns_step), a slice at a time.
    pub fn ipvsadm_begin(&mut self, prog: &str, args: &[String], stdin: Option<String>) -> Step {
        // A NUL would silently cut an argument or a `-R` line (ipvsadm's C
        // strings): refused, naming it, before anything changes.
        use lvsnic_model::rules::ipvsadm::find_nul;
        let nul = args.iter().enumerate().find_map(|(i, a)| {
            find_nul(a).map(|(_, col)| format!("argument {} {:?} has a NUL byte at column {col}", i + 1, a))
        });
        let nul = nul.or_else(|| find_nul(stdin.as_deref().unwrap_or("")).map(|(l, c)| format!("-R input line {l} has a NUL byte at column {c}")));
        if let Some(what) = nul {
            return Step::Done(Output {
                stderr: format!("{prog}: {what} (ipvsadm would silently cut it there); nothing was changed\n"),
                exit: EXIT_FAIL,
                ..Default::default()
            });
        }
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        match parse_command(&words) {
            Ok(Command::Restore) => {
                return Step::Restore(Restore {
                    prog: prog.to_string(),
                    text: stdin.unwrap_or_default(),
                    pos: 0,
                    result: 0,
                    out: Output::default(),
                    vips_written: None,
                })
            }
            Ok(Command::List(opts)) if opts.connections => {
                self.sp.settle();
                return Step::Conns(ConnList { next: 0, persistent: opts.persistent_conn });
            }
            // The service listings (`-L`, `-L -t VIP:PORT`, with `--stats`,
            // `--rate`...): the loop copies the tables, the caller formats.
            Ok(Command::List(opts)) if !opts.timeout && !opts.daemon => {
                if let Some(key) = &opts.service {
                    if self.sp.director.services.lookup_key(key).is_none() {
                        return Step::Done(Output { stderr: "No such service\n".into(), exit: EXIT_LIST, ..Default::default() });
                    }
                }
                self.sp.settle();
                return Step::Listing(opts, ServicesCopy::default());
            }
            Ok(Command::Save { .. }) => return Step::Rules(RulesCopy::default()),
            Ok(Command::Clear) => {
                let left = self.sp.director.services.live_services().map(|s| s.rule.key).collect();
                return Step::Flush(Flush { left, vips_written: None });
            }
            _ => {}
        }
        Step::Done(self.ipvsadm_now(prog, &words, stdin.as_deref()))
    }

    /// Runs lines of a `-R` until `until` (if given) has passed or the
    /// restore has ended; its output and status once it has ended. The
    /// data plane's VIP table is written at the first slice, then every
    /// [`RESTORE_VIP_WRITE_EVERY`], and when the restore ends.
    pub fn restore_step(&mut self, r: &mut Restore, until: Option<Instant>) -> Option<Output> {
        let mut ended = None;
        while r.pos <= r.text.len() {
            let end = r.text[r.pos..].find('\n').map_or(r.text.len(), |i| r.pos + i);
            let words = lvsnic_model::rules::ipvsadm::split_line(&r.text[r.pos..end]);
            r.pos = end + 1;
            // Blank lines are skipped; anything else, a `# comment` too, is
            // a command line: ipvsadm 1.31 has no comments in `-R` (a `#`
            // line ends the restore with "Try `ipvsadm -h' ...", status 255).
            if words.is_empty() {
                continue;
            }
            match self.run_words(&r.prog, &words, "", true, &mut r.out) {
                Done::Ret(c) => r.result = c,
                Done::Exit(c) => {
                    ended = Some(c);
                    break;
                }
            }
            if until.is_some_and(crate::deadline::passed) {
                break;
            }
        }
        if ended.is_none() && r.pos > r.text.len() {
            ended = Some(r.result);
        }
        if ended.is_some() || r.vips_written.is_none_or(|t| t.elapsed() >= RESTORE_VIP_WRITE_EVERY) {
            self.sp.sync_vips(self.vip_count);
            r.vips_written = Some(Instant::now());
        }
        let code = ended?;
        let mut out = std::mem::take(&mut r.out);
        out.exit = code;
        Some(out)
    }

    /// Makes `f` of services from where the last call stopped until
    /// `until` (if given) has passed or every service is done; whether
    /// they all are.
    pub fn services_step<T>(
        &self,
        c: &mut ServicesCopy<T>,
        f: fn(&lvsnic_model::director::Director, &lvsnic_model::ipvs::Service) -> T,
        until: Option<Instant>,
    ) -> bool {
        loop {
            if services_step(&self.sp.director, &mut c.next, RULES_PER_LOOK, &mut c.items, f) {
                return true;
            }
            if until.is_some_and(crate::deadline::passed) {
                return false;
            }
        }
    }

    /// A service listing's services, a slice at a time ([`Step::Listing`]).
    pub fn listing_step(&self, c: &mut ServicesCopy<lvsnic_model::rules::ipvsadm::ServiceListing>, until: Option<Instant>) -> bool {
        self.services_step(c, service_listing, until)
    }

    /// What formats a service listing once its services are copied: the
    /// header taken now, the text made by whoever runs it.
    pub fn listing_text(&self, opts: &ListOptions) -> impl FnOnce(Vec<lvsnic_model::rules::ipvsadm::ServiceListing>) -> Output + Send + 'static {
        let (h, opts) = (listing_header(&self.sp.director), opts.clone());
        move |s| Output { stdout: format_list(&h, &s, &opts), ..Default::default() }
    }

    /// Deletes services of a `-C` until `until` (if given) has passed or
    /// none is left; its output once none is left. The data plane's VIP
    /// table is written as during a restore.
    pub fn flush_step(&mut self, f: &mut Flush, until: Option<Instant>) -> Option<Output> {
        let mut n = 0;
        while let Some(key) = f.left.pop() {
            // Only this flush deletes services meanwhile (requests wait for
            // it); a health checker's change may come between slices,
            // which changes no service's existence.
            let _ = self.apply_change(Command::DeleteService(key));
            n += 1;
            if n % 16 == 0 && until.is_some_and(crate::deadline::passed) {
                break;
            }
        }
        let done = f.left.is_empty();
        if done || f.vips_written.is_none_or(|t| t.elapsed() >= RESTORE_VIP_WRITE_EVERY) {
            self.sp.sync_vips(self.vip_count);
            f.vips_written = Some(Instant::now());
        }
        done.then(Output::default)
    }

    /// Copies services' rules from where the last call stopped until
    /// `until` (if given) has passed or every service is copied; whether
    /// the copy is complete. The caller changes no rule between calls.
    pub fn rules_step(&self, c: &mut RulesCopy, until: Option<Instant>) -> bool {
        let services = &self.sp.director.services;
        loop {
            if services.to_rules_step(&mut c.next, RULES_PER_LOOK, &mut c.rules) {
                return true;
            }
            if until.is_some_and(crate::deadline::passed) {
                return false;
            }
        }
    }

    /// Rows of the connection table from where the last call stopped until
    /// `until` (if given) has passed or the table's end; whether the end
    /// was reached. Packets the data plane forwarded re-arm a connection's
    /// timer as they would in the kernel: a row shows the expiry they imply.
    pub fn conns_step(&mut self, l: &mut ConnList, until: Option<Instant>) -> (Vec<ConnListing>, bool) {
        let d = &self.sp.director;
        let bound = d.conns.id_bound();
        let now = d.now();
        let mut view = OffloadView { flows: &mut self.sp.flows, hw: &mut self.sp.dp, removed: Vec::new() };
        let mut rows = Vec::new();
        while l.next < bound {
            let id = ConnId(l.next);
            l.next += 1;
            if !d.conns.is_live(id) {
                continue;
            }
            let c = d.conns.get(id);
            let mut row = connection_listing(d, id);
            if let Some(t) = view.last_use(id, c) {
                let exp = (t + c.timeout()).max(c.expires);
                row.expires_secs = (exp.saturating_sub(now) / lvsnic_model::time::SEC).min(u32::MAX as u64) as u32;
            }
            rows.push(row);
            if rows.len() % 16 == 0 && until.is_some_and(crate::deadline::passed) {
                break;
            }
        }
        (rows, l.next >= bound)
    }

    /// Counts connections by protocol and state from where the last call
    /// stopped until `until` (if given) has passed or the table's end;
    /// whether the end was reached.
    pub fn conn_states_step(&mut self, s: &mut ConnStates, until: Option<Instant>) -> bool {
        use lvsnic_model::conn::tcp::STATE_NAMES;
        let conns = &self.sp.director.conns;
        let bound = conns.id_bound();
        let mut n = 0u32;
        while s.next < bound {
            let id = ConnId(s.next);
            s.next += 1;
            if !conns.is_live(id) {
                continue;
            }
            let c = conns.get(id);
            if c.is_template() {
                s.templates += 1;
            } else {
                // The names `-L -c` prints (stats::connection_listing).
                let key = match c.proto {
                    6 => ("TCP", STATE_NAMES.get(c.state as usize).copied().unwrap_or("ERR!")),
                    17 => ("UDP", "UDP"),
                    132 => ("SCTP", "NONE"),
                    _ => ("TCP", "NONE"),
                };
                *s.counts.entry(key).or_default() += 1;
            }
            n += 1;
            if n % 256 == 0 && until.is_some_and(crate::deadline::passed) {
                break;
            }
        }
        s.next >= bound
    }

    /// Runs one ipvsadm command to the end.
    fn ipvsadm_now(&mut self, prog: &str, words: &[&str], stdin: Option<&str>) -> Output {
        let mut out = Output::default();
        out.exit = if words.is_empty() {
            self.list(&ListOptions::default(), &mut out);
            0
        } else {
            match self.run_words(prog, words, stdin.unwrap_or(""), false, &mut out) {
                Done::Ret(c) | Done::Exit(c) => c,
            }
        };
        out
    }

    fn tryhelp(prog: &str, out: &mut Output) -> Done {
        out.stderr.push_str(&format!("Try `{prog} -h' or '{prog} --help' for more information.\n"));
        Done::Exit(EXIT_ERR)
    }

    /// `process_options()` for one argument list.
    fn run_words(&mut self, prog: &str, words: &[&str], stdin: &str, reading_stdin: bool, out: &mut Output) -> Done {
        let cmd = match parse_command(words) {
            Ok(c) => c,
            Err(CommandError::Usage(_)) => return Self::tryhelp(prog, out),
            Err(CommandError::BadOption { option, reason }) => {
                if first_option_fails(words) {
                    return Self::tryhelp(prog, out);
                }
                out.stderr.push_str(&format!("{option}: {reason}\n"));
                return Done::Ret(EXIT_ERR);
            }
            Err(CommandError::Invalid(m)) => {
                out.stderr.push_str(&m);
                // fail(2, "-6 used before -f\n") prints its own newline too.
                out.stderr.push_str(if m == "-6 used before -f" { "\n\n" } else { "\n" });
                return Done::Exit(EXIT_FAIL);
            }
            // ipvsadm prints only its own message for a name it cannot
            // resolve; lvsnic resolves none, so the message is the same.
            Err(CommandError::NotNumeric { context, .. }) => {
                out.stderr.push_str(context);
                out.stderr.push('\n');
                return Done::Exit(EXIT_FAIL);
            }
        };
        // A change writes the VIP table ([`apply`](Self::apply)); a restore
        // now and then ([`restore_step`](Self::restore_step)).
        self.execute(prog, cmd, stdin, reading_stdin, out)
    }

    fn kernel_err(out: &mut Output, msg: impl std::fmt::Display) -> Done {
        out.stderr.push_str(&format!("{msg}\n"));
        Done::Ret(EXIT_ERR)
    }

    /// The text layer over [`apply`](Self::apply): listings, `-S`, `-R`,
    /// `-h` and `-v` print; a change is applied and a refusal printed as
    /// ipvsadm prints it (status 255). In a restore (`reading_stdin`) the
    /// VIP table is written by the caller ([`restore_step`](Self::restore_step)).
    fn execute(&mut self, prog: &str, cmd: Command, stdin: &str, reading_stdin: bool, out: &mut Output) -> Done {
        match cmd {
            Command::List(opts) => {
                if let Some(key) = &opts.service {
                    if !opts.connections && self.sp.director.services.lookup_key(key).is_none() {
                        out.stderr.push_str("No such service\n");
                        return Done::Exit(EXIT_LIST);
                    }
                }
                self.list(&opts, out);
                Done::Ret(0)
            }
            Command::Save { .. } => {
                out.stdout.push_str(&format_save(&self.sp.director.services.to_rules()));
                Done::Ret(0)
            }
            Command::Restore => {
                if reading_stdin {
                    return Self::tryhelp(prog, out);
                }
                self.restore(prog, stdin, out)
            }
            Command::Help => {
                out.stdout.push_str(&usage(prog));
                Done::Exit(0)
            }
            Command::Version => {
                out.stdout.push_str(&version(prog));
                Done::Exit(0)
            }
            change => {
                let r = if reading_stdin { self.apply_change(change) } else { self.apply(change) };
                match r {
                    Ok(()) => Done::Ret(0),
                    Err(e) => Self::kernel_err(out, e),
                }
            }
        }
    }

    /// Applies one change to the running director, with every side effect:
    /// the golden model's rules (the kernel's checks in the kernel's
    /// order), the offloaded flows of deleted real servers removed from the
    /// data plane (`-d`, and `-D`/`-C` for every server of the services),
    /// the data plane's VIP table, the sync daemons (`--start-daemon`,
    /// `--stop-daemon`), `--set` and `-Z`. A refusal changes nothing; its
    /// `Display` is what ipvsadm prints for it. Listings, `-S`, `-R`, `-h`
    /// and `-v` are not changes: [`KernelError::NotAChange`].
    pub fn apply(&mut self, cmd: Command) -> Result<(), KernelError> {
        let changes = !matches!(
            cmd,
            Command::List(_) | Command::Save { .. } | Command::Restore | Command::Help | Command::Version
        );
        let r = self.apply_change(cmd);
        if changes {
            self.sp.sync_vips(self.vip_count);
        }
        r
    }

    /// `ip_vs_genl_set_cmd` for `-a`/`-e` of a real server of the other
    /// family than its service's (a tunnel across families): EINVAL while
    /// a sync daemon runs ("The synchronization protocol is incompatible
    /// with mixed family services").
    fn check_mixed_while_syncing(&self, key: &ServiceKey, dest: &lvsnic_model::rules::DestRule) -> Result<(), KernelError> {
        let svc = self.sp.director.services.lookup_key(key).map(|id| self.sp.director.services.service(id).vaddr);
        let syncing = self.sync.master_running() || self.sync.backup_running();
        if syncing && svc.is_some_and(|a| a.is_ipv4() != dest.addr.is_ipv4()) {
            return Err(KernelError::Refused(ApplyError::InvalidOperation));
        }
        Ok(())
    }

    /// [`apply`](Self::apply) without writing the VIP table (a restore
    /// writes it now and then: [`restore_step`](Self::restore_step)).
    fn apply_change(&mut self, cmd: Command) -> Result<(), KernelError> {
        match cmd {
            Command::List(_) | Command::Save { .. } | Command::Restore | Command::Help | Command::Version => {
                Err(KernelError::NotAChange(command_line(&cmd)))
            }
            Command::StartDaemon(d) => {
                // ip_vs_genl_new_daemon: "The synchronization protocol is
                // incompatible with mixed family services" (EINVAL), before
                // start_sync_thread's own checks.
                if self.sp.director.services.mixed_family_dests() > 0 {
                    return Err(KernelError::Sync(crate::sync::SyncError::MixedFamily));
                }
                let r = self.sync.start(&d).map_err(KernelError::Sync);
                if r.is_ok() {
                    let (id, ifn) = (d.syncid.to_string(), d.mcast_ifn.clone());
                    crate::logging::event(log::Level::Info, "sync_start", &[("role", sync_role(d.state)), ("syncid", &id), ("interface", &ifn)]);
                }
                r
            }
            Command::StopDaemon(d) => {
                let r = self.sync.stop(d.state).map_err(KernelError::Sync);
                if r.is_ok() {
                    crate::logging::event(log::Level::Info, "sync_stop", &[("role", sync_role(d.state))]);
                }
                r
            }
            Command::SetTimeouts { tcp, tcpfin, udp } => {
                self.sp.director.cfg.timeouts.set(tcp, tcpfin, udp);
                Ok(())
            }
            Command::Zero(key) => {
                self.sp.settle();
                self.sp.director.zero_stats(key.as_ref()).map_err(|_| KernelError::Refused(ApplyError::NoSuchService))
            }
            Command::Clear => {
                let dests: Vec<DestId> =
                    self.sp.director.services.live_services().flat_map(|s| s.order.iter().copied()).collect();
                self.sp.director.clear();
                self.drop_flows(&dests);
                Ok(())
            }
            Command::AddService(rule) => {
                if self.sp.director.services.lookup_key(&rule.key).is_some() {
                    return Err(KernelError::Refused(ApplyError::ServiceExists));
                }
                check_scheduler(&rule).map_err(KernelError::Refused)?;
                self.sp.director.add_service(&rule).map(|_| ()).map_err(|e| KernelError::of_service(&e))
            }
            Command::EditService(rule) => {
                if self.sp.director.services.lookup_key(&rule.key).is_none() {
                    return Err(KernelError::Refused(ApplyError::NoSuchService));
                }
                check_scheduler(&rule).map_err(KernelError::Refused)?;
                self.sp.director.edit_service(&rule).map_err(|e| KernelError::of_service(&e))
            }
            Command::DeleteService(key) => {
                let Some(id) = self.sp.director.services.lookup_key(&key) else {
                    return Err(KernelError::Refused(ApplyError::NoSuchService));
                };
                let dests = self.sp.director.services.service(id).order.clone();
                self.sp.director.del_service(&key).map_err(|e| KernelError::of_service(&e))?;
                self.drop_flows(&dests);
                Ok(())
            }
            Command::AddDest(key, dest) => {
                if self.sp.director.services.lookup_key(&key).is_none() {
                    return Err(KernelError::Refused(ApplyError::ServiceNotDefined));
                }
                self.check_mixed_while_syncing(&key, &dest)?;
                self.sp.director.add_dest(&key, &dest).map(|_| ()).map_err(|e| KernelError::of_dest(&e, (dest.l_threshold, dest.u_threshold)))
            }
            Command::EditDest(key, dest) => {
                if self.sp.director.services.lookup_key(&key).is_none() {
                    return Err(KernelError::Refused(ApplyError::ServiceNotDefined));
                }
                self.check_mixed_while_syncing(&key, &dest)?;
                self.sp.director.edit_dest(&key, &dest).map_err(|e| KernelError::of_dest(&e, (dest.l_threshold, dest.u_threshold)))
            }
            Command::DeleteDest(key, addr, port) => {
                let Some(id) = self.sp.director.services.lookup_key(&key) else {
                    return Err(KernelError::Refused(ApplyError::ServiceNotDefined));
                };
                let d = &self.sp.director.services;
                let Some(dest) =
                    d.service(id).order.iter().copied().find(|&x| d.dest(x).addr == addr && d.dest(x).port == port)
                else {
                    return Err(KernelError::Refused(ApplyError::NoSuchDest));
                };
                self.sp.director.del_dest(&key, addr, port).map_err(|e| KernelError::of_dest(&e, (0, 0)))?;
                self.drop_flows(&[dest]);
                Ok(())
            }
        }
    }

    /// Removes the offloaded flows of deleted real servers.
    fn drop_flows(&mut self, dests: &[DestId]) {
        self.sp.flows.drop_dests(&mut self.sp.dp, &mut self.sp.director, dests);
    }

    /// `list_conn` / `list_service` / `list_timeout` / `list_daemon` / `list_all`.
    fn list(&mut self, opts: &ListOptions, out: &mut Output) {
        self.sp.settle();
        let text = if opts.connections {
            let mut l = ConnList { next: 0, persistent: opts.persistent_conn };
            let mut text = ConnText::default();
            loop {
                let (rows, done) = self.conns_step(&mut l, None);
                text.push(&rows, l.persistent);
                if done {
                    break text.finish(l.persistent);
                }
            }
        } else if opts.service.is_some() {
            let (h, s) = listings(&self.sp.director);
            format_list(&h, &s, opts)
        } else if opts.timeout {
            let (t, f, u) = self.sp.director.cfg.timeouts.get();
            format_timeout(t, f, u)
        } else if opts.daemon {
            format_daemon(&self.sync.listing())
        } else {
            let (h, s) = listings(&self.sp.director);
            format_list(&h, &s, opts)
        };
        out.stdout.push_str(&text);
    }

    /// `restore_table()`: each line of `text` as one ipvsadm command.
    fn restore(&mut self, prog: &str, text: &str, out: &mut Output) -> Done {
        let mut r = Restore { prog: prog.to_string(), text: text.to_string(), pos: 0, result: 0, out: Output::default(), vips_written: None };
        let o = loop {
            if let Some(o) = self.restore_step(&mut r, None) {
                break o;
            }
        };
        out.stdout.push_str(&o.stdout);
        out.stderr.push_str(&o.stderr);
        Done::Ret(o.exit)
    }

    /// The live rules as a service key list (for tests and status).
    pub fn service_keys(&self) -> Vec<ServiceKey> {
        self.sp.director.services.live_services().map(|s| s.rule.key).collect()
    }
}

/// The exception loop over a card whose network is simulated.
impl<D: Device + Wire> Control<D> {
    /// One frame from the wire at `ts`: the data plane forwards it, or hands
    /// it up; a new-connection exception passes the service's rate limit,
    /// then the golden model decides and the connection's flows are synced
    /// (`SlowPath::frame_gated`).
    pub fn frame(&mut self, ts: Time, frame: &[u8]) -> Result<FrameResult, DeviceError> {
        self.counters.frames += 1;
        self.neighbors.observe(frame, ts);
        let limiter = &mut self.limiter;
        let mut r = self.sp.frame_gated(ts, frame, |d, f| match limits::new_conn_service(d, f) {
            Some(svc) => limiter.admit(svc, ts),
            None => true,
        })?;
        if let Some(why) = r.dropped {
            self.counters.dropped_on_receive.count(why);
            return Ok(r);
        }
        if r.in_hardware {
            self.counters.in_hardware += 1;
        } else {
            self.counters.exceptions += 1;
        }
        if let Some(why) = r.reason {
            self.counters.exceptions_by_reason.count(why);
        }
        if r.refused {
            self.counters.rate_limited += 1;
        }
        if !r.in_hardware && !r.refused {
            self.sync.after_frame(&self.sp, frame);
        }
        if let Some((rs, held)) = r.held.take() {
            self.neighbors.hold(rs, held, ts);
        }
        // What the frame taught (an ARP answer) goes out with it: held
        // frames whose next hop is now known.
        for f in self.apply_neighbors() {
            let out = self.sp.host_tx_observed(&f)?;
            r.tx.push(out);
        }
        self.counters.transmitted += r.tx.len() as u64;
        self.counters.to_host += r.host.is_some() as u64;
        Ok(r)
    }

    /// [`host_tx`](Control::host_tx), returning the frame as it left the
    /// card's MAC.
    pub fn host_tx_observed(&mut self, frame: &[u8]) -> Result<Vec<u8>, DeviceError> {
        let f = self.sp.host_tx_observed(frame)?;
        self.counters.transmitted += 1;
        Ok(f)
    }
}

/// An address for the event log, `none` when there is none.
fn addr_or_none(a: Option<std::net::Ipv4Addr>) -> String {
    a.map_or_else(|| "none".to_string(), |a| a.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_formatted_in_slices_is_the_listing_formatted_whole() {
        use lvsnic_model::rules::Protocol;
        let row = |i: u32| ConnListing {
            proto: if i % 3 == 0 { Protocol::Udp } else { Protocol::Tcp },
            caddr: IpAddr::V4(std::net::Ipv4Addr::from(0xc633_6400 + i)),
            cport: 40000 + i as u16,
            vaddr: IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 100)),
            vport: 80,
            daddr: IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 10, 1)),
            dport: 8080,
            state: if i % 3 == 0 { "UDP".into() } else { "ESTABLISHED".into() },
            expires_secs: 60 * i,
            pe_name: None,
            pe_data: None,
        };
        let rows: Vec<ConnListing> = (0..10).map(row).collect();
        for persistent in [false, true] {
            let whole = format_connections(&rows, persistent);
            for cut in [&[][..], &[0, 3, 3, 9][..], &[1, 2, 3, 4, 5, 6, 7, 8, 9][..]] {
                let mut t = ConnText::default();
                let mut from = 0;
                for &c in cut.iter().chain([&10]) {
                    t.push(&rows[from..c], persistent);
                    from = c;
                }
                assert_eq!(t.finish(persistent), whole, "slices at {cut:?}");
            }
            assert_eq!(ConnText::default().finish(persistent), format_connections(&[], persistent));
        }
    }

    use crate::device::model::{ModelDevice, MODEL_PARAMS};
    use crate::device::rings::RingConfig;
    use lvsnic_fixtures::{director, rs, tcp, Ip, DIRECTOR_MAC, GATEWAY_MAC, MIXED_RULES, T0, VIP};
    use lvsnic_model::rules::ipvsadm::parse_command;
    use lvsnic_model::conn::ConnId;
    use lvsnic_model::wire::{TCP_ACK, TCP_SYN};

    /// The daemon's control plane over the card model, MIXED_RULES.
    fn control() -> Control<ModelDevice> {
        let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
        let sp = SlowPath::new(director(MIXED_RULES, ""), dev, MODEL_PARAMS).unwrap();
        Control::new(sp, MODEL_PARAMS.vip_count, Limits::default())
    }

    /// `-L` and `-S` are taken from a copy of the tables in the loop (a
    /// slice of services at a time) and formatted later by whoever asked
    /// (the client's thread): what comes out is the table as it was when
    /// copied, even if it changed since; a missing service is still
    /// refused at once.
    #[test]
    fn listings_and_save_are_formatted_later_from_a_copy() {
        let mut ctl = control();
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let before = ctl.ipvsadm("ipvsadm", &a(&["-L", "-n", "--stats"]), None);
        let Step::Listing(opts, mut copy) = ctl.ipvsadm_begin("ipvsadm", &a(&["-L", "-n", "--stats"]), None) else {
            panic!("-L -n is copied in slices")
        };
        while !ctl.listing_step(&mut copy, Some(Instant::now())) {}
        let text = ctl.listing_text(&opts);
        let list = move || text(copy.items);
        let Step::Rules(mut copy) = ctl.ipvsadm_begin("ipvsadm", &a(&["-S", "-n"]), None) else { panic!("-S is copied in slices") };
        while !ctl.rules_step(&mut copy, Some(Instant::now())) {}
        let save = move || Output { stdout: format_save(&copy.rules), ..Default::default() };
        ctl.apply(cmd("-A -t 10.0.0.99:80 -s rr")).unwrap();
        let (list, save) = std::thread::spawn(move || (list(), save())).join().unwrap();
        assert_eq!(list, before, "the listing as it was when asked");
        assert!(save.stdout.contains("-A -t 10.0.0.100:80") && !save.stdout.contains("10.0.0.99"), "{}", save.stdout);
        assert!(ctl.ipvsadm("ipvsadm", &a(&["-S", "-n"]), None).stdout.contains("-A -t 10.0.0.99:80"));
        let Step::Done(o) = ctl.ipvsadm_begin("ipvsadm", &a(&["-L", "-n", "-t", "10.0.0.98:80"]), None) else {
            panic!("a missing service is answered at once")
        };
        assert_eq!((o.stdout.as_str(), o.stderr.as_str(), o.exit), ("", "No such service\n", EXIT_LIST));
    }

    fn cmd(line: &str) -> Command {
        let words: Vec<&str> = line.split_whitespace().collect();
        parse_command(&words).unwrap()
    }

    /// With more services than one slice copies, a listing, `-S` and the
    /// status report are taken over several calls and come out as taken
    /// at once.
    #[test]
    fn listings_save_and_status_of_many_services_are_copied_in_slices() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let mut ctl = control();
        for i in 0..300 {
            ctl.apply(cmd(&format!("-A -t 10.0.{}.{}:80 -s wlc", 1 + i / 256, i % 256))).unwrap();
            ctl.apply(cmd(&format!("-a -t 10.0.{}.{}:80 -r 192.168.10.1:80 -m -w {}", 1 + i / 256, i % 256, i % 7))).unwrap();
        }
        syns(&mut ctl, 5);
        let whole = ctl.ipvsadm("ipvsadm", &a(&["-L", "-n", "--stats"]), None);
        let Step::Listing(opts, mut copy) = ctl.ipvsadm_begin("ipvsadm", &a(&["-L", "-n", "--stats"]), None) else { panic!() };
        let mut slices = 0;
        while !ctl.listing_step(&mut copy, Some(Instant::now())) {
            slices += 1;
        }
        assert!(slices >= 3, "{slices} slices");
        assert_eq!(ctl.listing_text(&opts)(copy.items), whole);
        let saved = ctl.ipvsadm("ipvsadm", &a(&["-S", "-n"]), None);
        let Step::Rules(mut copy) = ctl.ipvsadm_begin("ipvsadm", &a(&["-S", "-n"]), None) else { panic!() };
        let mut slices = 0;
        while !ctl.rules_step(&mut copy, Some(Instant::now())) {
            slices += 1;
        }
        assert!(slices >= 3, "{slices} slices");
        assert_eq!(format_save(&copy.rules), saved.stdout);
        assert_eq!(saved.stdout.lines().filter(|l| l.starts_with("-A")).count(), 300 + MIXED_RULES.lines().filter(|l| l.starts_with("-A")).count());
        let whole = serde_json::to_value(ctl.status()).unwrap();
        let mut copy = ServicesCopy::default();
        while !ctl.services_step(&mut copy, service_report, Some(Instant::now())) {}
        let mut sliced = serde_json::to_value(ctl.status_with(copy.items)).unwrap();
        sliced["now_ns"] = whole["now_ns"].clone();
        assert_eq!(sliced, whole);
    }

    /// `-C` deletes services a slice at a time, as the kernel's
    /// `ip_vs_flush` unlinks them one by one while packets still find the
    /// others: between slices a service not yet deleted takes new
    /// connections; at the end the director is as after a one-shot flush.
    #[test]
    fn a_flush_deletes_services_a_slice_at_a_time_and_ends_as_one() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let (mut one, mut sliced) = (control(), control());
        for ctl in [&mut one, &mut sliced] {
            for i in 0..40 {
                ctl.apply(cmd(&format!("-A -t 10.0.1.{i}:80 -s rr"))).unwrap();
                ctl.apply(cmd(&format!("-a -t 10.0.1.{i}:80 -r 192.168.10.1:80 -m"))).unwrap();
            }
            syns(ctl, 5);
        }
        let live = |c: &Control<ModelDevice>| c.sp.director.services.live_services().count();
        let before = live(&sliced);
        assert!(!sliced.sp.flows.is_empty(), "connections are offloaded");
        one.apply(Command::Clear).unwrap();
        let Step::Flush(mut f) = sliced.ipvsadm_begin("ipvsadm", &a(&["-C"]), None) else { panic!("-C is applied in slices") };
        let mut slices = 0;
        let out = loop {
            // A budget already spent: each call does the least a slice does.
            if let Some(out) = sliced.flush_step(&mut f, Some(Instant::now())) {
                break out;
            }
            slices += 1;
            let n = live(&sliced);
            assert!(n > 0 && n <= before - 16 * slices, "{n} of {before} services left after {slices} slices");
            if slices == 1 {
                // The first service (MIXED_RULES' VIP:80) is deleted last.
                let conns = sliced.sp.director.conns.len();
                let c = std::net::Ipv4Addr::new(198, 51, 100, 200);
                let syn = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_SYN, 1, 0, &[]);
                sliced.frame(T0 + 50, &syn).unwrap();
                assert_eq!(sliced.sp.director.conns.len(), conns + 1, "a service not yet deleted still schedules");
            }
        };
        assert!(slices >= 2, "{before} services in {slices} slices");
        assert_eq!((out.stdout.as_str(), out.stderr.as_str(), out.exit), ("", "", 0));
        assert_eq!(live(&sliced), 0);
        remove_all_diverted(&mut sliced);
        remove_all_diverted(&mut one);
        assert_eq!(sliced.ipvsadm("ipvsadm", &a(&["-L", "-n"]), None), one.ipvsadm("ipvsadm", &a(&["-L", "-n"]), None));
        assert_eq!(sliced.ipvsadm("ipvsadm", &a(&["-S", "-n"]), None).stdout, "");
        assert_eq!((sliced.sp.flows.len(), sliced.sp.flows.table_use()), (one.sp.flows.len(), one.sp.flows.table_use()));
        assert_eq!(sliced.sp.flows.len(), 0, "the deleted servers' flows left the card");
    }

    /// Handshakes (SYN, then the ACK that makes IPVS's state ESTABLISHED
    /// and the connection offloaded) of clients 1..=n to VIP:80 (NAT, wlc
    /// over rs1 and rs2).
    fn syns(ctl: &mut Control<ModelDevice>, n: u32) {
        for i in 1..=n {
            let c = std::net::Ipv4Addr::new(198, 51, 100, i as u8);
            let f = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_SYN, 1, 0, &[]);
            ctl.frame(T0 + u64::from(i), &f).unwrap();
            let f = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_ACK, 2, 1, &[]);
            ctl.frame(T0 + u64::from(i), &f).unwrap();
        }
    }

    /// The offloaded connections to real server `rs(n)`, by client address.
    fn offloaded_to(ctl: &Control<ModelDevice>, n: u8) -> Vec<ConnId> {
        let d = &ctl.sp.director;
        let mut v: Vec<ConnId> =
            ctl.sp.flows.offloaded().into_iter().filter(|&id| d.conns.get(id).daddr == u32::from(rs(n))).collect();
        v.sort_by_key(|id| d.conns.get(*id).caddr);
        v
    }

    /// An ACK from connection `id`'s client.
    fn ack_of(ctl: &Control<ModelDevice>, id: ConnId) -> Vec<u8> {
        let c = ctl.sp.director.conns.get(id);
        let ip = Ip::new(std::net::Ipv4Addr::from(c.caddr), std::net::Ipv4Addr::from(c.vaddr));
        tcp(GATEWAY_MAC, DIRECTOR_MAC, ip, c.cport, c.vport, TCP_ACK, 2, 1, &[])
    }

    /// Why the card hands a FIN of connection `id`'s client to the host
    /// (it never forwards one: `TCP_CONTROL` on a live action).
    fn card_reason(ctl: &mut Control<ModelDevice>, id: ConnId) -> lvsnic_model::hw::Reason {
        let c = ctl.sp.director.conns.get(id);
        let ip = Ip::new(std::net::Ipv4Addr::from(c.caddr), std::net::Ipv4Addr::from(c.vaddr));
        let f = tcp(GATEWAY_MAC, DIRECTOR_MAC, ip, c.cport, c.vport, TCP_ACK | lvsnic_model::wire::TCP_FIN, 2, 1, &[]);
        match crate::device::offer(&mut ctl.sp.dp, &f, T0 + 100, 1).unwrap() {
            lvsnic_model::hw::HwOutput::ToHost { meta, .. } => meta.reason,
            o => panic!("forwarded {o:?}"),
        }
    }

    /// Removes every flow of deleted servers still on the card; whether
    /// some were left (never, with a minute).
    fn remove_all_diverted(ctl: &mut Control<ModelDevice>) -> bool {
        ctl.sp.remove_diverted_until(std::time::Instant::now() + std::time::Duration::from_secs(60))
    }

    #[test]
    fn apply_returns_the_kernels_refusals_typed_with_ipvsadms_text() {
        let mut ctl = control();
        let e = ctl.apply(cmd("-A -t 10.0.0.100:80 -s rr")).unwrap_err();
        assert!(matches!(e, KernelError::Refused(ApplyError::ServiceExists)), "{e:?}");
        assert_eq!(e.to_string(), "Service already exists");
        let e = ctl.apply(cmd("-d -t 10.0.0.100:80 -r 192.168.10.7:8080")).unwrap_err();
        assert!(matches!(e, KernelError::Refused(ApplyError::NoSuchDest)), "{e:?}");
        assert_eq!(e.to_string(), "No such destination");
        let e = ctl.apply(cmd("-a -t 10.0.0.99:80 -r 192.168.10.1:80")).unwrap_err();
        assert!(matches!(e, KernelError::Refused(ApplyError::ServiceNotDefined)), "{e:?}");
        let e = ctl.apply(cmd("-E -t 10.0.0.99:80 -s rr")).unwrap_err();
        assert!(matches!(e, KernelError::Refused(ApplyError::NoSuchService)), "{e:?}");
        let e = ctl.apply(cmd("-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m")).unwrap_err();
        assert!(matches!(e, KernelError::Refused(ApplyError::DestExists)), "{e:?}");
        let e = ctl.apply(cmd("-A -t 10.0.0.99:80 -s nosuch")).unwrap_err();
        assert!(matches!(e, KernelError::Refused(ApplyError::SchedulerNotFound(_))), "{e:?}");
        let e = ctl.apply(cmd("-e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -x 10 -y 20")).unwrap_err();
        assert!(matches!(e, KernelError::Refused(ApplyError::ThresholdRange { .. })), "{e:?}");
        assert_eq!(e.to_string(), "Numerical result out of range");
        let e = ctl.apply(cmd("-A -f 1 -s rr")).unwrap_err();
        assert!(matches!(e, KernelError::Unsupported(_)), "{e:?}");
        let e = ctl.apply(cmd("--stop-daemon master")).unwrap_err();
        assert!(matches!(e, KernelError::Sync(crate::sync::SyncError::NotRunning)), "{e:?}");
        let e = ctl.apply(cmd("-L -n")).unwrap_err();
        assert!(matches!(e, KernelError::NotAChange(_)), "{e:?}");
        // The text layer prints the same error, status 255.
        let out = ctl.ipvsadm("ipvsadm", &["-A".into(), "-t".into(), "10.0.0.100:80".into()], None);
        assert_eq!((out.stderr.as_str(), out.exit), ("Service already exists\n", EXIT_ERR));
        // Nothing was changed by the refusals; a change is applied.
        assert_eq!(ctl.service_keys().len(), 5);
        ctl.apply(cmd("-A -t 10.0.0.99:80 -s rr")).unwrap();
        assert_eq!(ctl.service_keys().len(), 6);
    }

    #[test]
    fn apply_delete_dest_removes_its_offloaded_flows() {
        use lvsnic_model::hw::Reason;
        let mut ctl = control();
        syns(&mut ctl, 40);
        let (of, reason) = (offloaded_to, card_reason);
        let (one, two) = (of(&ctl, 1), of(&ctl, 2));
        assert!(!one.is_empty() && !two.is_empty(), "offloaded: rs1 {}, rs2 {}", one.len(), two.len());
        // A FIN comes up as TCP_CONTROL.
        assert_eq!(reason(&mut ctl, one[0]), Reason::TcpControl);
        let before = ctl.sp.flows.len();
        ctl.apply(cmd("-d -t 10.0.0.100:80 -r 192.168.10.1:8080")).unwrap();
        // At once, every rs1 flow sends its frames to the host: the host
        // bit of rs1's action, one write, not one per flow.
        for &id in &one {
            assert_eq!(reason(&mut ctl, id), Reason::ActionHost, "conn {id:?}");
        }
        assert_eq!(reason(&mut ctl, two[0]), Reason::TcpControl, "rs2's flows are untouched");
        assert_eq!(ctl.sp.flows.diverted_pending(), one.len(), "rs1's entries wait for removal");
        assert!(!remove_all_diverted(&mut ctl));
        assert_eq!(of(&ctl, 1), vec![], "rs1's flows left the card");
        assert_eq!(of(&ctl, 2), two, "rs2's flows stay");
        assert_eq!(ctl.sp.flows.len(), before - one.len());
        assert_eq!(reason(&mut ctl, one[0]), Reason::MissVip, "removed from the table");
        // -D takes the rest of the service's flows.
        ctl.apply(cmd("-D -t 10.0.0.100:80")).unwrap();
        for &id in &two {
            assert_eq!(reason(&mut ctl, id), Reason::ActionHost, "conn {id:?}");
        }
        remove_all_diverted(&mut ctl);
        assert_eq!(of(&ctl, 2), vec![]);
        assert_eq!(ctl.sp.flows.diverted_pending(), 0);
    }

    /// A deleted server's connections wait on the card with their frames
    /// diverted; one that sends meanwhile meets IPVS's rule for a deleted
    /// destination in software (dropped, `expire_nodest_conn` = 0) and
    /// leaves the card then; the server added back gets a fresh action,
    /// whose new connections are forwarded and never taken for the old
    /// ones.
    #[test]
    fn diverted_flows_meet_the_deleted_servers_rule_and_spare_the_server_added_back() {
        use lvsnic_model::hw::Reason;
        let mut ctl = control();
        syns(&mut ctl, 240);
        let old = offloaded_to(&ctl, 1);
        assert!(old.len() >= 2, "{old:?}");
        ctl.apply(cmd("-d -t 10.0.0.100:80 -r 192.168.10.1:8080")).unwrap();
        // One of them sends: dropped in software, as Linux drops it, and
        // its flows leave the card at once.
        let unavailable = lvsnic_model::director::DropReason::DestUnavailable as usize;
        let dropped = ctl.sp.director.counters.drop[unavailable];
        let r = ctl.frame(T0 + 200, &ack_of(&ctl, old[0])).unwrap();
        assert!(r.tx.is_empty() && !r.in_hardware, "{r:?}");
        assert_eq!(ctl.sp.director.counters.drop[unavailable], dropped + 1);
        assert!(!ctl.sp.flows.is_offloaded(old[0]));
        // (Each frame also removes a few waiting flows: SlowPath::advance.)
        assert!(ctl.sp.flows.diverted_pending() < old.len() - 1);
        // The server comes back; new clients reach it through the card.
        // (Weight 100: its old connections still count for wlc.)
        ctl.apply(cmd("-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 100")).unwrap();
        for i in 1..=6u32 {
            let c = std::net::Ipv4Addr::new(198, 51, 101, i as u8);
            let f = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 41000, 80, TCP_SYN, 1, 0, &[]);
            ctl.frame(T0 + 300 + u64::from(i), &f).unwrap();
            let f = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 41000, 80, TCP_ACK, 2, 1, &[]);
            ctl.frame(T0 + 300 + u64::from(i), &f).unwrap();
        }
        let fresh: Vec<ConnId> = offloaded_to(&ctl, 1).into_iter().filter(|id| !old.contains(id)).collect();
        assert!(!fresh.is_empty());
        assert!(ctl.sp.flows.diverted_pending() > 0, "old flows still wait beside the new ones");
        assert_eq!(card_reason(&mut ctl, fresh[0]), Reason::TcpControl, "a live action, not diverted");
        assert!(!remove_all_diverted(&mut ctl));
        assert_eq!(ctl.sp.flows.diverted_pending(), 0);
        assert!(old.iter().all(|&id| !ctl.sp.flows.is_offloaded(id)), "the deleted server's flows are gone");
        assert!(fresh.iter().all(|&id| ctl.sp.flows.is_offloaded(id)), "the new ones stay");
    }

    #[test]
    fn command_line_is_the_save_spelling() {
        for line in [
            "-A -t 10.0.0.100:80 -s wlc",
            "-E -t 10.0.0.100:443 -s sh -p 120",
            "-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 3",
            "-e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 3 -x 100 -y 50",
            "-d -t 10.0.0.100:80 -r 192.168.10.1:8080",
            "-D -u 10.0.0.101:53",
            "-C",
            "--set 10 20 30",
        ] {
            assert_eq!(command_line(&cmd(line)), line);
        }
    }

    /// `status` reports what the frames did: the loop's counters, the
    /// director's, the rate limit's and the flow table's.
    #[test]
    fn status_counts_what_the_frames_did() {
        use crate::device::model::{ModelDevice, MODEL_PARAMS};
        use crate::device::rings::RingConfig;
        use lvsnic_fixtures::{director, tcp, Ip, DIRECTOR_MAC, GATEWAY_MAC, T0, VIP};
        use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
        let d = director("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1\n", "");
        let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
        let sp = SlowPath::new(d, dev, MODEL_PARAMS).unwrap();
        let limits = Limits { new_conn_per_sec: Some(1), burst: Some(1) };
        let mut ctl = Control::new(sp, MODEL_PARAMS.vip_count, limits);
        let client = |n: u8| std::net::Ipv4Addr::new(198, 51, 100, n);
        let syn = |n: u8| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(n), VIP), 40000, 80, TCP_SYN, 1, 0, b"");
        let ack = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(1), VIP), 40000, 80, TCP_ACK, 2, 1, b"");
        let ms = lvsnic_model::time::MSEC;
        ctl.frame(T0, &syn(1)).unwrap(); // admitted: the bucket's one token
        ctl.frame(T0 + ms, &syn(2)).unwrap(); // refused by the rate limit
        ctl.frame(T0 + 2 * ms, &ack).unwrap();
        ctl.frame(T0 + 3 * ms, &[0u8; 5]).unwrap(); // a runt
        let s = ctl.status();
        assert_eq!(s.now_ns, T0 + 2 * ms, "the last frame the director saw (not the runt)");
        let l = s.exception_loop;
        assert_eq!((l.frames, l.rate_limited, l.dropped_on_receive.runt), (4, 1, 1));
        assert_eq!(l.in_hardware + l.exceptions, 3);
        assert_eq!(l.transmitted, 2, "the SYN and the ACK, NATed");
        assert_eq!(s.director.connections.created, 1);
        assert_eq!(s.director.total.inpkts, 2);
        assert_eq!(s.director.services.len(), 1);
        assert_eq!((s.limits.new_conn_per_sec, s.limits.burst, s.limits.limited), (Some(1), 1, 1));
        let b = s.limits.services["TCP 10.0.0.100:80"];
        assert_eq!((b.admitted, b.limited), (1, 1));
        assert_eq!(s.offload.connections, 1, "the connection's flows are on the card");
        assert!(s.sync.master.is_none() && s.sync.backup.is_none());
        // The JSON names `lvsnic status` prints.
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["director"]["total"]["inpkts"], 2);
        assert_eq!(j["exception_loop"]["dropped_on_receive"]["runt"], 1);
        assert_eq!(j["limits"]["services"]["TCP 10.0.0.100:80"]["limited"], 1);
        assert_eq!(j["offload"]["connections"], 1);
        assert_eq!(j["now_ns"], T0 + 2 * ms);
    }

    /// The kernel's mixed-family rule for sync (`ip_vs_genl_set_cmd`,
    /// `ip_vs_genl_new_daemon`): a real server of the other family (a
    /// tunnel) is refused while a sync daemon runs, and a daemon while one
    /// exists, both EINVAL; a server of the service's own family is not;
    /// `-d` finds an IPv6 server.
    #[test]
    fn no_cross_family_server_while_syncing_and_no_sync_with_one() {
        let mut ctl = control();
        let port = 20000 + (std::process::id() % 20000) as u16 + 11;
        ctl.apply(cmd(&format!("--start-daemon master --mcast-interface lo --mcast-port {port}"))).unwrap();
        ctl.apply(cmd("-A -t 10.0.0.150:80 -s rr")).unwrap();
        let e = ctl.apply(cmd("-a -t 10.0.0.150:80 -r [2001:db8:1::9]:80 -i")).unwrap_err();
        assert_eq!(e.to_string(), "Invalid operation.  Possibly wrong module version, address not unicast, ...");
        ctl.apply(cmd("-a -t 10.0.0.150:80 -r 192.168.10.8:80 -i")).unwrap();
        ctl.apply(cmd("--stop-daemon master")).unwrap();
        ctl.apply(cmd("-a -t 10.0.0.150:80 -r [2001:db8:1::9]:80 -i")).unwrap();
        assert_eq!(ctl.director().services.mixed_family_dests(), 1);
        let e = ctl.apply(cmd(&format!("--start-daemon master --mcast-interface lo --mcast-port {port}"))).unwrap_err();
        assert_eq!(e.to_string(), "Invalid operation.  Possibly wrong module version, address not unicast, ...");
        ctl.apply(cmd("-d -t 10.0.0.150:80 -r [2001:db8:1::9]:80")).unwrap();
        ctl.apply(cmd(&format!("--start-daemon master --mcast-interface lo --mcast-port {port}"))).unwrap();
    }
}
