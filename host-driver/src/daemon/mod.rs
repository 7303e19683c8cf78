//! `lvsnic daemon`: holds the director, serves the control socket and runs
//! the exception loop over a wire.
//!
//! ```text
//! lvsnic daemon --backend model [--director DIRECTOR.toml] [--socket PATH] [--rules FILE]
//!               [--wire pcap:IN.pcap,OUT.pcap[,HOST.pcap] [--pace asap|realtime|step] | --wire tap:NAME]
//!               [--host-tap NAME] [--vips master|backup|host]
//! lvsnic daemon --backend vfio --device BDF ...
//! lvsnic daemon --backend etherbone --device HOST[:PORT] [--glue ADDR|csr.csv] [--bind IP] ...
//! ```
//!
//! * State: a [`Control`] (golden model + flow manager in front of a
//!   [`Device`]). `--backend model` is the hardware model behind the DMA
//!   engine model and the host rings, `sim` the verilated core in its
//!   place (cargo feature `sim`), `vfio` a real card, `etherbone` a board
//!   over its management port (`--device HOST[:PORT]`); the loop is generic
//!   over the device. `--wire` needs a card whose network is simulated
//!   ([`device::Wire`](crate::device::Wire): `model`, `sim`); a real card
//!   takes its frames from its ports and hands exceptions up on its
//!   receive ring, which the loop polls on every backend.
//! * Control: the Unix socket of [`proto`] (default `/run/lvsnic/lvsnic.sock`,
//!   `--socket` or `LVSNIC_SOCKET` override), served off the forwarding
//!   path ([`client`]): each client has a thread of its own with a deadline
//!   for its whole request and a bounded request size; parsed requests
//!   reach the forwarding loop through a bounded queue, and the loop spends
//!   at most [`CONTROL_BUDGET`] on them between batches of frames: a `-R`
//!   is applied a slice of lines at a time, a `-L -c` listing taken a slice
//!   of the connection table at a time (formatted by the client's thread).
//!   The loop waits on nothing but its wire, the card and the queue's
//!   wake-up. A second daemon on a socket that answers is refused with a
//!   clear error; a stale socket file (nobody listening) is replaced.
//! * Wire `pcap:IN,OUT[,HOST]`: the frames of IN in timestamp order (stable
//!   for equal stamps), model time = frame timestamps; transmitted frames go
//!   to OUT stamped with the time of the frame that caused them, frames for
//!   the director's own stack to HOST (if given) and to `--host-tap` (if
//!   given). `--pace asap` (default) runs the capture at once, `realtime`
//!   keeps its inter-frame gaps, `step` runs frames only when a `wire`
//!   request asks (for tests that change rules at exact points of a
//!   capture). The daemon keeps serving after the capture ends.
//! * Wire `tap:NAME`: Ethernet frames on TAP device NAME (which must exist
//!   unless `--create-taps`; link set up), model time = arrival time (CLOCK_REALTIME ns);
//!   transmitted frames are written back to it. Frames for the director's
//!   own stack go to `--host-tap` if given (and what the stack sends there
//!   is transmitted on the wire), else they are counted and dropped.
//!   Timers run every 100 ms when idle.
//! * Health checks: a `health` request (`lvsnic keepalived FILE --load`)
//!   starts keepalived's checkers ([`crate::health`]) in threads of their
//!   own; the loop takes their results between frames and applies the
//!   real server changes they imply as ipvsadm commands (`-a`, `-e`,
//!   `-d`), through the same path as the control socket's. `checkers`
//!   lists them; `status` has their counters under `health`.
//! * VIPs ([`VipMode`], `--vips`): all of them (`master`, no VRRP), those
//!   `lvsnic vip master` named (`backup`, keepalived notify scripts), or
//!   those that are addresses of the director's own stack (`host`,
//!   keepalived's `virtual_ipaddress` unchanged; followed through
//!   rtnetlink before each batch of frames).
//! * SIGINT/SIGTERM/SIGQUIT (or a `shutdown` request): the loop stops,
//!   output captures are flushed, the socket file is removed. SIGHUP (or a
//!   `reload` request) applies DIRECTOR.toml and the rules file again as
//!   differences ([`crate::reload`]).
//! * State (`--state-dir`, [`crate::state`]): the running configuration is
//!   saved after every request that changes it, the connections every
//!   second and at exit; a restart comes back with both.
//! * Metrics (`--metrics ADDR:PORT`, [`metrics`]): Prometheus scrapes
//!   `GET /metrics` from a server thread of its own ([`metrics_http`]);
//!   each scrape is a request on the control queue, for which the loop
//!   counts the connection table by state a slice at a time (as a `-L -c`
//!   listing) and then copies what `status` and `-L --stats --rate` are
//!   made from; the server's thread formats the copy.

pub mod args;

pub mod client;
pub mod notify;
pub mod placement;
pub mod exposition;
pub mod metrics;
pub mod metrics_http;
pub mod proto;
pub mod socket;
mod steps;
/// The system calls of the daemon (kept at the crate's top: health checkers
/// and sync use them too).
pub use crate::sys;
mod vips;
mod neigh;
mod wire;

pub use args::{DaemonArgs, DaemonBackend, Pace, VipMode, WireSpec};
pub use vips::{GARP_MASTER_DELAY_NS, GARP_MASTER_REPEAT};

use crate::control::{ConnList, ConnStates, Control, Restore, RulesCopy, ServicesCopy, Step};
use crate::device::model::{ModelDevice, MODEL_PARAMS};
use crate::device::rings::RingConfig;
use crate::device::vfio::VfioDevice;
use crate::device::Device;
use crate::invocation::Output;
use crate::limits;
use crate::slowpath::SlowPath;
use client::{Inbox, Job, Part};
use lvsnic_model::director::Director;
use lvsnic_model::hw::HwParams;
use lvsnic_model::rules::ipvsadm::{DaemonState, SyncDaemon};
use lvsnic_model::time::Time;
use proto::{Reply, Request};
use socket::ControlSocket;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use steps::Step as LoopStep;
use wire::{RunWire, Wire};

/// The most the forwarding loop spends on control work (requests, slices
/// of a `-R` or of a connection listing) before it runs frames again.
pub const CONTROL_BUDGET: Duration = Duration::from_micros(100);

/// How long the loop sleeps (unless a frame comes) between two slices of
/// control work: a `-R` of 10,000 services or a listing of 2M connections
/// runs at about half of one CPU instead of all of it, and the loop wakes
/// for frames as a thread that sleeps does (on two shared cores this took
/// the probe's p99 during a `-R` from 2-3 ms to ...; docs/performance.md).
pub const CONTROL_PAUSE: Duration = Duration::from_micros(100);

/// A failure the user sees as one line.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// DIRECTOR.toml is not valid.
    #[error("{0}")]
    Config(#[from] lvsnic_model::config::ConfigError),
    /// The rules file is not valid.
    #[error("{path}: {msg}")]
    Rules {
        /// The rules file.
        path: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A capture could not be read or written.
    #[error("{path}: {msg}")]
    Pcap {
        /// The capture file.
        path: String,
        /// What is wrong with it.
        msg: String,
    },
    /// The director refused its configuration or rules.
    #[error("{0}")]
    Director(#[from] lvsnic_model::director::DirectorError),
    /// A system call or file failed.
    #[error("{what}: {source}")]
    Io {
        /// What failed: the call or the file (e.g. `accept`).
        what: String,
        /// The error it returned.
        source: std::io::Error,
    },
    /// Another daemon answers on the socket.
    #[error("another lvsnic daemon is already listening on {0}")]
    AlreadyRunning(String),
    /// The socket path is taken by something else.
    #[error("{0} exists and is not a socket")]
    NotASocket(String),
    /// The card failed or could not be opened.
    #[error("{0}")]
    Device(String),
    /// An output would overwrite an input or another output.
    #[error("{0}")]
    Overlap(String),
    /// The state directory or a file in it.
    #[error("{0}")]
    State(#[from] crate::state::StateError),
    /// DIRECTOR.toml or the rules file.
    #[error("{0}")]
    Load(#[from] crate::setup::LoadError),
    /// `--loop-cpu` cannot be honoured.
    #[error("{0}")]
    Placement(String),
}

/// Opens TAP device `name`: it must exist unless `create` (`--create-taps`),
/// so that a mistyped name is an error rather than a new, unconnected
/// device.
fn open_tap(name: &str, create: bool) -> Result<sys::Tap, DaemonError> {
    let what = format!("TAP device {name}");
    if !create && !sys::netdev_exists(name).map_err(io_err("/proc/net/dev"))? {
        return Err(DaemonError::Io {
            what,
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no such network device (create it first: `ip tuntap add mode tap name {name}`; or let the daemon create it: --create-taps)"),
            ),
        });
    }
    sys::Tap::open(name).map_err(io_err(what))
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DaemonError {
    let what = what.into();
    move |source| DaemonError::Io { what, source }
}

/// A request the loop applies a slice at a time, with where its reply goes.
enum Work {
    Restore(Restore),
    Conns(ConnList),
    /// `-S`: the rules copied a slice at a time, formatted by the client's
    /// thread.
    Rules(RulesCopy),
    /// `-C`: services deleted a slice at a time.
    Flush(crate::control::Flush),
    /// A change applied: the running configuration copied for the state
    /// file a slice at a time (no other change may start meanwhile), then
    /// the reply, sent once the file is on disk.
    Save(crate::state::SaveCopy, Output),
    /// A scrape: the connection table counted by state, then the
    /// services' reports and listings copied, a slice at a time.
    Metrics(Box<MetricsCopy>),
    /// `lvsnic status`: the services' reports copied a slice at a time.
    Status(ServicesCopy<lvsnic_model::stats::ServiceReport>),
    /// A service listing, copied a slice at a time.
    Listing(lvsnic_model::rules::ipvsadm::ListOptions, ServicesCopy<lvsnic_model::rules::ipvsadm::ServiceListing>),
}

/// A scrape being taken ([`Work::Metrics`]).
struct MetricsCopy {
    states: ConnStates,
    format: exposition::Format,
    reports: ServicesCopy<lvsnic_model::stats::ServiceReport>,
    listings: ServicesCopy<lvsnic_model::rules::ipvsadm::ServiceListing>,
}

/// What `lvsnic status` prints: [`Control::status`] and, beside its
/// sections, the daemon's own.
#[derive(serde::Serialize)]
struct DaemonStatus {
    /// `now_ns`, `director`, `exception_loop`, `offload`, `limits`, `sync`.
    #[serde(flatten)]
    director: crate::control::Status,
    /// Frames for the host stack dropped (no `--host-tap`) or not written.
    host_dropped: u64,
    /// Frames the TAP could not take.
    tx_dropped: u64,
    /// `--vips`.
    vips: &'static str,
    /// The control clients' counters (absent without a control socket).
    #[serde(skip_serializing_if = "Option::is_none")]
    control: Option<ControlStatus>,
    /// Requests [`socket::authorize`] refused.
    control_refused: u64,
    /// The health checkers' counters, when they run.
    #[serde(skip_serializing_if = "Option::is_none")]
    health: Option<crate::health::HealthCounters>,
    /// Frames of a pcap wire not yet played.
    #[serde(skip_serializing_if = "Option::is_none")]
    pcap_frames_left: Option<u64>,
    /// The state directory's writes (absent when no state is kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<StateStatus>,
    /// The metrics server's requests, by result (absent without `--metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<metrics_http::HttpCounters>,
    /// `--loop-cpu`: where the threads run (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    placement: Option<PlacementStatus>,
    /// The forwarding loop's nice value (`--loop-nice`; the process's own
    /// when it could not be raised).
    loop_nice: i32,
    /// Each step of the forwarding loop: its longest run and how many runs
    /// took over a millisecond ([`steps`]).
    loop_steps: std::collections::BTreeMap<&'static str, steps::StepTimes>,
}

/// `status` → `placement` (`--loop-cpu`).
#[derive(serde::Serialize)]
struct PlacementStatus {
    /// The forwarding loop's CPU.
    loop_cpu: usize,
    /// The CPUs of every other thread.
    others: Vec<usize>,
    /// Threads the loop started and moved off its CPU since the start.
    moved: u64,
}

/// `status` → `state`: files of the state directory written, and writes
/// that failed (each failure is also logged, once until a write succeeds).
#[derive(serde::Serialize)]
struct StateStatus {
    written: u64,
    failed: u64,
}

/// `status` → `control`.
#[derive(serde::Serialize)]
struct ControlStatus {
    #[serde(flatten)]
    clients: client::ClientCounters,
    /// The longest time one iteration spent on control work (µs).
    longest_control_us: u64,
    /// Client threads put back from idle to normal priority because they
    /// were starved ([`crate::bulk`]).
    bulk_promoted: u64,
}

/// The daemon's whole state.
struct Daemon<D: Device> {
    ctl: Control<D>,
    /// [`Daemon::run_wire`] for a card with a simulated network,
    /// [`Daemon::run_host_tap`] for a real card (no `--wire`).
    run_wire: RunWire<D>,
    wire: Wire,
    host_tap: Option<sys::Tap>,
    /// Frames for the host stack dropped (no --host-tap) or not written.
    host_dropped: u64,
    /// Frames the TAP could not take.
    tx_dropped: u64,
    live: bool,
    /// The health checkers (`lvsnic keepalived --load`).
    health: Option<crate::health::Health>,
    /// `--vips`.
    vips: VipMode,
    /// A real card without a simulated wire: its receive ring is polled
    /// every millisecond.
    polls_card: bool,
    /// `--vips host`: address change notifications.
    addr_watch: Option<crate::rtnl::AddrWatch>,
    /// `--vips host`: the IPv4 addresses of the director's own stack.
    host_addrs: Vec<std::net::IpAddr>,
    /// Gratuitous ARPs of VIPs taken over (`lvsnic vip master`), each
    /// with the model time it is due.
    garps: Vec<(Time, Vec<u8>)>,
    /// The request being applied a slice at a time, if any (the queue
    /// waits behind it: requests are applied one at a time, in order).
    current: Option<(mpsc::Sender<Part>, Work)>,
    /// Control work is left for the next iteration (the budget ran out).
    backlog: bool,
    /// The control clients' counters (for `status`).
    clients: Option<std::sync::Arc<client::ClientStats>>,
    /// The longest time one iteration spent on control work (µs): what
    /// forwarding waited for at most.
    longest_control_us: u64,
    /// The state directory and reloads.
    keeper: crate::state::Keeper,
    /// systemd's notification socket and watchdog ([`notify`]).
    notifier: notify::Notifier,
    /// Conditions whose onset and end are logged ([`Self::log_onsets`]).
    onsets: Onsets,
    /// The metrics server's counters (`--metrics`).
    metrics: Option<std::sync::Arc<metrics_http::HttpStats>>,
    /// The neighbour resolvers (rtnetlink, ARP on the wire).
    neigh: neigh::Resolver,
    /// `--loop-cpu`: the loop alone on one CPU ([`placement`]).
    placement: Option<placement::Placement>,
    /// The loop's nice value in effect (`--loop-nice`, [`crate::bulk::raise_loop`]).
    loop_nice: i32,
    /// The loop's steps, timed ([`steps`]).
    steps: steps::LoopSteps,
}

/// The counters watched once a second for the event log.
struct Onsets {
    due: Instant,
    table_full: crate::logging::Onset,
    rate_limited: crate::logging::Onset,
    sync_loss: crate::logging::Onset,
}

/// Runs `lvsnic daemon` until SIGINT/SIGTERM; returns the closing summary.
pub fn run(args: &DaemonArgs) -> Result<String, DaemonError> {
    crate::logging::init(args.log_level);
    // Before the daemon starts any thread: they all inherit the other CPUs.
    let placement = args.loop_cpu.map(placement::Placement::start).transpose().map_err(DaemonError::Placement)?;
    #[cfg(not(feature = "sim"))]
    if args.backend == DaemonBackend::Sim {
        return Err(DaemonError::Device(crate::NO_SIM_BACKEND.into()));
    }
    let crate::setup::Loaded { mut cfg, limits, rules, .. } =
        crate::setup::load_director_and_rules(&args.director, args.rules.as_deref())?;
    // Real servers without a [neighbors] entry are resolved at run time.
    cfg.resolve_neighbors = true;
    // IPv6 ones too when the kernel resolves them (the director's own stack).
    cfg.resolve_neighbors6 = args.host_tap.is_some();
    if cfg.gateway_from_fib && cfg.gateway_mac.is_none() && args.host_tap.is_none() {
        return Err(DaemonError::Config(lvsnic_model::config::ConfigError::Invalid {
            path: args.director.display().to_string(),
            msg: lvsnic_model::config::FIB_NEEDS_HOST_TAP.into(),
        }));
    }
    // The wire first: its first frame sets the model's start time.
    if let Some(WireSpec::Pcap { input, output, host }) = &args.wire {
        // Before anything is opened for writing: `pcap:a.pcap,a.pcap` would
        // have truncated its own input.
        let mut inputs = vec![("--wire pcap IN", input.as_path()), ("--director", args.director.as_path())];
        inputs.extend(args.rules.as_deref().map(|r| ("--rules", r)));
        let mut outputs = vec![("--wire pcap OUT", output.as_path())];
        outputs.extend(host.as_deref().map(|h| ("--wire pcap HOST", h)));
        crate::outfile::refuse_overlaps(&inputs, &outputs).map_err(DaemonError::Overlap)?;
    }
    let (wire, live, start) = Wire::open(args.wire.as_ref(), args.pace, args.create_taps)?;
    let host_tap = match &args.host_tap {
        None => None,
        Some(n) => Some(open_tap(n, args.create_taps)?),
    };
    let mut director = Director::new(cfg, &rules, start)?;
    director.set_vips_owned_by_default(args.vips == VipMode::Master);
    let dev_err = |e: String| DaemonError::Device(e);
    let parts = Parts { director, limits, wire, host_tap, live, placement };
    match args.backend {
        DaemonBackend::Model => {
            let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).map_err(|e| dev_err(e.to_string()))?;
            serve(parts.daemon(dev, MODEL_PARAMS, Daemon::run_wire, false)?, args)
        }
        #[cfg(feature = "sim")]
        DaemonBackend::Sim => {
            use crate::device::sim_core::{sim_device, SimCore};
            let dev = sim_device(args.width).map_err(dev_err)?;
            serve(parts.daemon(dev, SimCore::params(args.width), Daemon::run_wire, false)?, args)
        }
        #[cfg(not(feature = "sim"))]
        DaemonBackend::Sim => Err(dev_err(crate::NO_SIM_BACKEND.into())),
        DaemonBackend::Vfio => {
            let bdf = args.device.as_deref().ok_or_else(|| dev_err("--backend vfio needs --device <PCI address>, e.g. --device 0000:3b:00.0".into()))?;
            if !matches!(parts.wire, Wire::None) {
                return Err(dev_err("--backend vfio takes its frames from the card's ports: no --wire".into()));
            }
            let dev = VfioDevice::open(bdf, RingConfig::default()).map_err(|e| dev_err(e.to_string()))?;
            let params = dev.identity.params;
            serve(parts.daemon(dev, params, Daemon::run_host_tap, true)?, args)
        }
        DaemonBackend::Etherbone => {
            use crate::device::etherbone::{EtherboneConfig, EtherboneDevice, GlueMap};
            let spec = args.device.as_deref().ok_or_else(|| {
                dev_err("--backend etherbone needs --device <board address>[:PORT], e.g. --device 192.168.1.50".into())
            })?;
            if !matches!(parts.wire, Wire::None) {
                return Err(dev_err("--backend etherbone takes its frames from the board's data port: no --wire".into()));
            }
            let mut cfg = EtherboneConfig::new(EtherboneConfig::parse_device(spec).map_err(|e| dev_err(e.to_string()))?);
            cfg.glue = args.glue.as_deref().map(GlueMap::parse_option).transpose().map_err(dev_err)?;
            if let Some(ip) = args.bind {
                cfg.bind = ip;
            }
            let dev = EtherboneDevice::open(cfg).map_err(|e| dev_err(e.to_string()))?;
            let params = dev.identity.params;
            serve(parts.daemon(dev, params, Daemon::run_host_tap, true)?, args)
        }
    }
}

/// What every backend's daemon is built from.
struct Parts {
    director: Director,
    limits: limits::Limits,
    wire: Wire,
    host_tap: Option<sys::Tap>,
    live: bool,
    placement: Option<placement::Placement>,
}

impl Parts {
    /// The daemon over card `dev` with tables `params`: the slow path in
    /// front of it, the control plane over that. A real card (`polls_card`)
    /// runs on the wall clock and its receive ring is polled.
    fn daemon<D: Device>(self, dev: D, params: HwParams, run_wire: RunWire<D>, polls_card: bool) -> Result<Daemon<D>, DaemonError> {
        let sp = SlowPath::new(self.director, dev, params).map_err(|e| DaemonError::Device(e.to_string()))?;
        let ctl = Control::new(sp, params.vip_count, self.limits);
        let mut d = Daemon::new(ctl, run_wire, self.wire, self.host_tap, self.live || polls_card);
        d.polls_card = polls_card;
        d.placement = self.placement;
        Ok(d)
    }
}

fn serve<D: Device>(mut d: Daemon<D>, args: &DaemonArgs) -> Result<String, DaemonError> {
    let path = proto::socket_path(args.socket.as_deref());
    let dir = crate::state::state_dir(args.state_dir.as_deref(), &path, path == std::path::Path::new(proto::DEFAULT_SOCKET));
    d.keeper = crate::state::Keeper::new(dir, &args.director, args.rules.as_deref())?;
    if path == std::path::Path::new(proto::DEFAULT_SOCKET) {
        if let Some(run) = path.parent() {
            socket::make_run_dir(run)?;
        }
    }
    let sock = ControlSocket::bind(&path, args.socket_group)?;
    let (restored, health) = d.keeper.restore(&mut d.ctl, args.vips != VipMode::Host)?;
    if let Some(cfg) = health {
        d.health = crate::health::Health::start(cfg).ok();
    }
    sys::install_signal_handlers().map_err(io_err("installing signal handlers"))?;
    let listener = sock.listener.try_clone().map_err(io_err("the control socket"))?;
    let (acceptor, inbox) =
        client::start(listener, client::ClientLimits { socket_group: args.socket_group, ..Default::default() }).map_err(io_err("starting the control socket's acceptor"))?;
    d.clients = Some(acceptor.stats().clone());
    let metrics_server = match args.metrics {
        None => None,
        Some(addr) => {
            let m = metrics_http::MetricsServer::start(addr, scrape(acceptor.submitter()), Default::default())
                .map_err(io_err(format!("--metrics {addr}: serving metrics")))?;
            d.metrics = Some(m.stats().clone());
            Some(m)
        }
    };
    let metrics_line = metrics_server.as_ref().map(|m| format!("lvsnic daemon: metrics on http://{}/metrics\n", m.local_addr())).unwrap_or_default();
    let wire_desc = match (&args.wire, &d.wire) {
        (Some(WireSpec::Pcap { input, .. }), Wire::Pcap(w)) => {
            format!("pcap {} ({} frames, pace {:?})", input.display(), w.records.len(), w.pace).to_lowercase()
        }
        (Some(WireSpec::Tap(n)), _) => format!("tap {n}"),
        _ => "none".into(),
    };
    // One write: whoever sees the first line sees what was restored too.
    let restored = restored.map(|line| format!("lvsnic daemon: {line}\n")).unwrap_or_default();
    let started = format!(
        "{:?} backend, {} services, wire {wire_desc}, listening on {}",
        args.backend,
        d.ctl.service_keys().len(),
        sock.path().display()
    );
    eprint!("{metrics_line}lvsnic daemon: {started}\n{restored}");
    d.vips = args.vips;
    d.neigh = neigh::Resolver::new(args.host_tap.as_deref(), args.wire.is_some() || args.host_tap.is_none())?;
    d.ctl.neighbors_mut().set_reachable(args.neighbor_reachable_ms.saturating_mul(1_000_000));
    if args.vips == VipMode::Host {
        d.addr_watch = Some(crate::rtnl::AddrWatch::open().map_err(io_err("watching the host's addresses (rtnetlink)"))?);
        d.refresh_host_addrs()?;
    }
    // systemd (Type=notify): serving from here on.
    d.notifier.ready(&started);
    let services = d.ctl.service_keys().len().to_string();
    let socket_path = sock.path().display().to_string();
    crate::logging::event(
        log::Level::Info,
        "daemon_start",
        &[("backend", &format!("{:?}", args.backend).to_lowercase()), ("services", &services), ("wire", &wire_desc), ("socket", &socket_path)],
    );
    let r = match d.placement.as_mut().map(|p| p.enter_loop()) {
        Some(Err(e)) => Err(DaemonError::Placement(e)),
        _ => {
            // Control slices give way to frames waiting on the wire.
            crate::deadline::watch_wire(match &d.wire {
                Wire::Tap(t) => Some(t.fd()),
                _ => None,
            });
            let (nice, refused) = crate::bulk::raise_loop(args.loop_nice);
            d.loop_nice = nice;
            if let Some(why) = refused {
                crate::logging::event(log::Level::Warn, "loop_nice", &[("error", &why)]);
            }
            d.forward(&inbox)
        }
    };
    d.notifier.stopping();
    match &r {
        Ok(()) => crate::logging::event(log::Level::Info, "daemon_stop", &[]),
        Err(e) => crate::logging::event(log::Level::Error, "daemon_stop", &[("error", &e.to_string())]),
    }
    // Requests still queued are answered "the daemon stopped"; replies
    // already made (a `shutdown` request's) are given a moment to be written.
    drop(inbox);
    d.current = None;
    acceptor.stop(Duration::from_secs(2));
    drop(metrics_server);
    r?;
    d.flush()?;
    d.keeper.save(&d.ctl);
    d.keeper.save_conns(&mut d.ctl);
    d.keeper.finish();
    drop(sock);
    let c = d.ctl.counters();
    Ok(format!(
        "lvsnic daemon: stopped; {} frames in ({} in hardware), {} transmitted, {} to host, {} rate limited",
        c.frames, c.in_hardware, c.transmitted, c.to_host, c.rate_limited
    ))
}

impl<D: Device> Daemon<D> {
    fn new(ctl: Control<D>, run_wire: RunWire<D>, wire: Wire, host_tap: Option<sys::Tap>, live: bool) -> Self {
        Daemon {
            ctl,
            run_wire,
            wire,
            host_tap,
            host_dropped: 0,
            tx_dropped: 0,
            live,
            health: None,
            garps: Vec::new(),
            vips: VipMode::Master,
            polls_card: false,
            addr_watch: None,
            host_addrs: Vec::new(),
            current: None,
            backlog: false,
            clients: None,
            longest_control_us: 0,
            keeper: crate::state::Keeper::disabled(),
            notifier: notify::Notifier::from_env(),
            onsets: Onsets {
                due: Instant::now(),
                table_full: Default::default(),
                rate_limited: Default::default(),
                sync_loss: Default::default(),
            },
            metrics: None,
            neigh: neigh::Resolver::inert(),
            placement: None,
            loop_nice: 0,
            steps: Default::default(),
        }
    }

    /// Once a second: the onset and the end of a full flow table, of rate
    /// limiting and of sync losses go to the event log, one line each.
    fn log_onsets(&mut self) {
        self.onsets.due = Instant::now() + Duration::from_secs(1);
        let full = self.ctl.table_full();
        let limited = self.ctl.counters().rate_limited;
        let lost: u64 = self.ctl.sync_daemons().status().backup.map(|b| b.counters.dropped.values().sum()).unwrap_or(0);
        for (o, now, ev, what) in [
            (&mut self.onsets.table_full, full, "table_full", "flows_not_offloaded"),
            (&mut self.onsets.rate_limited, limited, "rate_limited", "dropped"),
            (&mut self.onsets.sync_loss, lost, "sync_loss", "dropped"),
        ] {
            if let Some((began, n)) = o.sample(now) {
                let (lvl, state) = if began { (log::Level::Warn, "begin") } else { (log::Level::Info, "end") };
                crate::logging::event(lvl, ev, &[("state", state), (what, &n.to_string()), ("total", &now.to_string())]);
            }
        }
    }

    /// The forwarding loop, until a shutdown is requested: it blocks in
    /// poll(2) on its wire, the card, the sync sockets and the control
    /// queue's wake-up only, and spends at most [`CONTROL_BUDGET`] on
    /// control work per iteration.
    fn forward(&mut self, inbox: &Inbox) -> Result<(), DaemonError> {
        let mut buf = vec![0u8; 65536];
        let mut last_tick = Instant::now();
        while !sys::shutdown_requested() {
            let mut fds = vec![inbox.fd()];
            if let Some(w) = &self.addr_watch {
                fds.push(w.fd());
            }
            let neigh_at = fds.len();
            if let Some(fd) = self.neigh.fd() {
                fds.push(fd);
            }
            if let Wire::Tap(t) = &self.wire {
                fds.push(t.fd());
            }
            if let Some(h) = &self.host_tap {
                fds.push(h.fd());
            }
            fds.extend(self.ctl.sync_daemons().fds());
            let mut timeout = self.wire.poll_timeout(self.polls_card);
            timeout = self.neigh.poll_timeout(&self.ctl, timeout);
            if self.ctl.sync_daemons().master_pending() {
                timeout = timeout.min(100);
            }
            // Control work left for the next turn: the loop sleeps
            // [`CONTROL_PAUSE`] between slices (unless something else wants
            // it back at once), so that on a busy machine it stays a thread
            // that sleeps and wakes for its frames rather than one the
            // scheduler sees as using its whole share.
            let control_pending = self.backlog || self.current.is_some() || self.keeper.busy();
            let pause = control_pending && timeout != 0;
            if control_pending {
                timeout = 0;
            } else if self.ctl.slow_path_mut().flows.has_diverted() {
                // Background work that nobody waits for: a slice a
                // millisecond, sleeping in poll(2) between slices, so that
                // the loop stays a thread that wakes for its frames rather
                // than one the scheduler sees as busy and makes wait.
                timeout = timeout.min(1);
            }
            // A unit's watchdog is pinged from this loop: it never sleeps past a ping.
            let timeout = self.notifier.poll_timeout(timeout, Instant::now());
            let readable = if pause && timeout == 0 {
                sys::poll_readable_for(&fds, Some(CONTROL_PAUSE))
            } else {
                sys::poll_readable(&fds, timeout)
            }
            .map_err(io_err("poll"))?;
            self.notifier.tick(Instant::now());
            // Neighbours first: a MAC the kernel just learned releases the
            // frames held for it and updates the card before more come.
            let t = Instant::now();
            self.neighbor_work(self.neigh.fd().is_some() && readable.get(neigh_at).copied().unwrap_or(false));
            self.steps.done(LoopStep::Neighbors, t);
            // `--vips host`: address changes first, so that a frame for a VIP
            // keepalived has just added is not handed to the host stack (which
            // would answer it with a reset).
            let t = Instant::now();
            if self.addr_watch.as_ref().is_some_and(|w| w.changed()) {
                self.refresh_host_addrs()?;
            }
            self.steps.done(LoopStep::HostAddrs, t);
            let t = Instant::now();
            self.control_work(inbox);
            let us = self.steps.done(LoopStep::Control, t);
            self.longest_control_us = self.longest_control_us.max(us);
            let t = Instant::now();
            (self.run_wire)(self, &mut buf)?;
            self.steps.done(LoopStep::Wire, t);
            // Health results wait while a save copies the rules: the copy
            // must see no change between its slices.
            if !matches!(self.current, Some((_, Work::Save(..)))) {
                let t = Instant::now();
                self.run_health();
                self.steps.done(LoopStep::Health, t);
            }
            // A real card's exceptions arrive on its receive ring (polled).
            let t = Instant::now();
            self.ctl.poll_device(256).map_err(|e| DaemonError::Device(e.to_string()))?;
            self.steps.done(LoopStep::Device, t);
            // Connection sync: what the backup received, what the master sends.
            let t = Instant::now();
            self.ctl.run_sync();
            self.steps.done(LoopStep::Sync, t);
            if self.live && last_tick.elapsed() >= Duration::from_millis(100) {
                let t = Instant::now();
                self.ctl.advance(sys::realtime_ns());
                last_tick = Instant::now();
                self.steps.done(LoopStep::Timers, t);
            }
            if sys::take_reload() {
                self.notifier.reloading();
                let r = self.request(Request::Reload { rules: None, health: None });
                self.notifier.ready("reloaded");
                crate::logging::event(
                    if r.exit == 0 { log::Level::Info } else { log::Level::Error },
                    "reload",
                    &[("source", "SIGHUP"), ("exit", &r.exit.to_string()), ("result", r.stdout.trim()), ("error", r.stderr.trim())],
                );
                eprint!("lvsnic daemon: SIGHUP: {}{}", r.stdout.replace('\n', "; ").trim_end_matches("; "), if r.stdout.is_empty() { "" } else { "\n" });
                eprint!("{}", r.stderr);
                self.keeper.save(&self.ctl);
            }
            let t = Instant::now();
            self.keeper.tick(&mut self.ctl, Instant::now() + CONTROL_BUDGET);
            self.steps.done(LoopStep::State, t);
            if self.onsets.due <= Instant::now() {
                self.log_onsets();
            }
            if let Some(p) = &mut self.placement {
                p.sweep(Instant::now());
            }
            // Flows of deleted real servers: their frames already come up
            // (the `host` bit of their actions); the entries leave the
            // table a slice per iteration.
            if self.ctl.slow_path_mut().flows.has_diverted() {
                let t = Instant::now();
                self.ctl.slow_path_mut().remove_diverted_until(t + CONTROL_BUDGET);
                let us = self.steps.done(LoopStep::Diverted, t);
                self.longest_control_us = self.longest_control_us.max(us);
            }
        }
        Ok(())
    }

    /// Control work for at most [`CONTROL_BUDGET`]: the request in progress
    /// a slice further, then queued requests, one at a time.
    fn control_work(&mut self, inbox: &Inbox) {
        let until = Instant::now() + CONTROL_BUDGET;
        loop {
            if let Some((tx, mut work)) = self.current.take() {
                let done = match &mut work {
                    Work::Restore(r) => match self.ctl.restore_step(r, Some(until)) {
                        Some(out) => {
                            self.answer(true, tx.clone(), out);
                            true
                        }
                        None => false,
                    },
                    Work::Metrics(m) => {
                        let done = self.ctl.conn_states_step(&mut m.states, Some(until))
                            && self.ctl.services_step(&mut m.reports, lvsnic_model::stats::service_report, Some(until))
                            && self.ctl.listing_step(&mut m.listings, Some(until));
                        if done {
                            let format = m.format;
                            let (states, reports, listings) =
                                (std::mem::take(&mut m.states), std::mem::take(&mut m.reports.items), std::mem::take(&mut m.listings.items));
                            let snap = self.metrics_snapshot(states, reports, listings);
                            let f = move || Output { stdout: metrics::render(&snap, format), ..Default::default() };
                            let _ = tx.send(Part::Later(Box::new(f)));
                        }
                        done
                    }
                    Work::Status(c) => {
                        let done = self.ctl.services_step(c, lvsnic_model::stats::service_report, Some(until));
                        if done {
                            let st = self.status_with(std::mem::take(&mut c.items));
                            let f = move || Output { stdout: serde_json::to_string_pretty(&st).unwrap_or_default() + "\n", ..Default::default() };
                            let _ = tx.send(Part::Later(Box::new(f)));
                        }
                        done
                    }
                    Work::Listing(opts, c) => {
                        let done = self.ctl.listing_step(c, Some(until));
                        if done {
                            let text = self.ctl.listing_text(opts);
                            let items = std::mem::take(&mut c.items);
                            let _ = tx.send(Part::Later(Box::new(move || text(items))));
                        }
                        done
                    }
                    Work::Rules(c) => {
                        let done = self.ctl.rules_step(c, Some(until));
                        if done {
                            let rules = std::mem::take(&mut c.rules);
                            let f = move || Output { stdout: lvsnic_model::rules::ipvsadm::format_save(&rules), ..Default::default() };
                            let _ = tx.send(Part::Later(Box::new(f)));
                        }
                        done
                    }
                    Work::Save(c, _) => c.step(&self.ctl, Some(until)),
                    Work::Flush(f) => match self.ctl.flush_step(f, Some(until)) {
                        Some(out) => {
                            self.answer(true, tx.clone(), out);
                            true
                        }
                        None => false,
                    },
                    Work::Conns(l) => {
                        let (rows, done) = self.ctl.conns_step(l, Some(until));
                        // A client gone: the listing stops.
                        let gone = tx.send(Part::Conns(rows, l.persistent)).is_err();
                        if done {
                            let _ = tx.send(Part::Done(Output::default()));
                        }
                        done || gone
                    }
                };
                if !done {
                    self.current = Some((tx, work));
                    self.backlog = true;
                    return;
                }
                if let Work::Save(copy, out) = work {
                    self.keeper.save_copied(copy, &self.ctl, Some(Box::new(move || drop(tx.send(Part::Done(out))))));
                }
            }
            if crate::deadline::passed(until) {
                self.backlog = true;
                return;
            }
            match inbox.next() {
                Some(job) => self.start(job),
                None => {
                    self.backlog = false;
                    return;
                }
            }
        }
    }

    /// Begins `job`: applies it, or makes it the request in progress.
    fn start(&mut self, job: Job) {
        let Job { req, reply } = job;
        let changes = req.changes_state();
        if self.live {
            self.ctl.advance(sys::realtime_ns());
        }
        let r = match req {
            Request::Ipvsadm { prog, argv, stdin } => {
                match self.ctl.ipvsadm_begin(prog.as_deref().unwrap_or("lvsnic"), &argv, stdin) {
                    Step::Done(out) => out,
                    Step::Restore(r) => {
                        self.current = Some((reply, Work::Restore(r)));
                        return;
                    }
                    Step::Conns(l) => {
                        self.current = Some((reply, Work::Conns(l)));
                        return;
                    }
                    Step::Later(f) => {
                        let _ = reply.send(Part::Later(f));
                        return;
                    }
                    Step::Rules(c) => {
                        self.current = Some((reply, Work::Rules(c)));
                        return;
                    }
                    Step::Flush(f) => {
                        self.current = Some((reply, Work::Flush(f)));
                        return;
                    }
                    Step::Listing(opts, c) => {
                        self.current = Some((reply, Work::Listing(opts, c)));
                        return;
                    }
                }
            }
            // A scrape: counted a slice at a time, formatted by the metrics
            // server's thread.
            Request::Metrics { openmetrics } => {
                let format = if openmetrics { exposition::Format::OpenMetrics } else { exposition::Format::Text };
                self.ctl.settle();
                let m = MetricsCopy { states: ConnStates::default(), format, reports: Default::default(), listings: Default::default() };
                self.current = Some((reply, Work::Metrics(Box::new(m))));
                return;
            }
            // `status`: taken here, serialized by the client's thread.
            Request::Status => {
                self.ctl.settle();
                self.current = Some((reply, Work::Status(ServicesCopy::default())));
                return;
            }
            other => self.request(other),
        };
        self.answer(changes, reply, r);
    }

    /// After a request was applied: `--vips host` follows services that
    /// came or went, and the reply goes to the client. A request that may
    /// have changed the running configuration (`changes`) is answered once
    /// the configuration is on disk (a client that sees the reply may count
    /// on the change surviving a crash); the state's writer thread sends
    /// it, so forwarding does not wait for the disk.
    fn answer(&mut self, changes: bool, tx: std::sync::mpsc::Sender<Part>, out: Output) {
        if self.addr_watch.is_some() {
            self.follow_host_addrs(); // services may have come or gone
        }
        if !changes {
            let _ = tx.send(Part::Done(out));
        } else if let Some(copy) = self.keeper.begin_save() {
            // Copied a slice at a time by `control_work`; requests queued
            // behind it wait, so no rule changes while it is copied.
            self.current = Some((tx, Work::Save(copy, out)));
        } else {
            let _ = tx.send(Part::Done(out));
        }
    }

    /// `lvsnic status`: the director's state and the daemon's own sections.
    fn status(&mut self) -> DaemonStatus {
        let director = self.ctl.status();
        self.daemon_status(director)
    }

    /// [`status`](Self::status) with the services' reports taken before.
    fn status_with(&mut self, services: Vec<lvsnic_model::stats::ServiceReport>) -> DaemonStatus {
        let director = self.ctl.status_with(services);
        self.daemon_status(director)
    }

    fn daemon_status(&mut self, director: crate::control::Status) -> DaemonStatus {
        DaemonStatus {
            director,
            host_dropped: self.host_dropped,
            tx_dropped: self.tx_dropped,
            vips: self.vips.name(),
            control: self
                .clients
                .as_ref()
                .map(|c| ControlStatus { clients: c.counters(), longest_control_us: self.longest_control_us, bulk_promoted: crate::bulk::promoted() }),
            control_refused: socket::refused_requests(),
            health: self.health.as_ref().map(|h| h.counters),
            pcap_frames_left: match &self.wire {
                Wire::Pcap(w) => Some((w.records.len() - w.next) as u64),
                _ => None,
            },
            state: self.keeper.dir().map(|_| {
                let (written, failed) = self.keeper.writes();
                StateStatus { written, failed }
            }),
            metrics: self.metrics.as_ref().map(|m| m.counters()),
            placement: self.placement.as_ref().map(|p| PlacementStatus { loop_cpu: p.loop_cpu, others: p.others.clone(), moved: p.moved }),
            loop_nice: self.loop_nice,
            loop_steps: self.steps.report(),
        }
    }

    /// What a scrape is formatted from (`conn_states` counted already).
    fn metrics_snapshot(
        &mut self,
        conn_states: ConnStates,
        reports: Vec<lvsnic_model::stats::ServiceReport>,
        services: Vec<lvsnic_model::rules::ipvsadm::ServiceListing>,
    ) -> metrics::Snapshot {
        let status = self.status_with(reports);
        let d = self.ctl.director();
        let vips = vips::known_vips(d).into_iter().map(|a| (a, d.vip_owned(a))).collect();
        let (checkers, quorums) = self.health.as_ref().map(|h| (h.checkers_now(), h.quorums())).unwrap_or_default();
        metrics::Snapshot { status, services, conn_states, checkers, quorums, vips }
    }

    /// Applies what the health checkers found since the last call.
    fn run_health(&mut self) {
        let Some(h) = &mut self.health else { return };
        let cmds = h.poll();
        if cmds.is_empty() {
            return;
        }
        if self.live {
            self.ctl.advance(sys::realtime_ns());
        }
        for cmd in cmds {
            let line = crate::control::command_line(&cmd);
            match self.ctl.apply(cmd.clone()) {
                Ok(()) => crate::logging::event(log::Level::Info, "rule_change", &[("source", "health"), ("command", &format!("ipvsadm {line}")), ("exit", "0")]),
                Err(e) => {
                    let err = e.to_string();
                    crate::logging::event(log::Level::Warn, "rule_change", &[("source", "health"), ("command", &format!("ipvsadm {line}")), ("error", err.trim())]);
                    h.refused(&cmd, &err);
                }
            }
        }
    }

    /// A request other than an ipvsadm command, applied at once.
    fn request(&mut self, req: Request) -> Reply {
        match req {
            Request::Ipvsadm { prog, argv, stdin } => {
                self.ctl.ipvsadm(prog.as_deref().unwrap_or("lvsnic"), &argv, stdin.as_deref())
            }
            Request::Status => {
                let st = self.status();
                Output { stdout: serde_json::to_string_pretty(&st).unwrap_or_default() + "\n", ..Default::default() }
            }
            Request::Wire { frames, until_ns } => match &mut self.wire {
                Wire::Pcap(w) if w.pace == Pace::Step => {
                    let before = w.next;
                    match (frames, until_ns) {
                        (None, None) => w.budget = u64::MAX,
                        (f, u) => {
                            w.budget = f.unwrap_or(0);
                            w.until = u;
                        }
                    }
                    let mut buf = Vec::new();
                    if let Err(e) = (self.run_wire)(self, &mut buf) {
                        return Output { stderr: format!("{e}\n"), exit: 1, ..Default::default() };
                    }
                    let _ = self.flush();
                    let Wire::Pcap(w) = &self.wire else { unreachable!() };
                    Output {
                        stdout: format!("{} frames run, {} left\n", w.next - before, w.records.len() - w.next),
                        ..Default::default()
                    }
                }
                _ => bad("wire requests need a pcap wire with --pace step".into()),
            },
            Request::Reload { rules, health: Some(cfg) } => {
                self.keeper.load_keepalived(&mut self.ctl, &mut self.health, rules.as_deref().unwrap_or(""), cfg)
            }
            Request::Reload { rules, health: None } => self.keeper.reload(&mut self.ctl, rules.as_deref()),
            Request::Health { config } => {
                self.health = None;
                self.keeper.health = Some(config.clone());
                match crate::health::Health::start(config) {
                    Ok(h) => {
                        // Scripts refused or warned about (health::misc::vet).
                        let stderr = h.script_notes.iter().map(|n| format!("lvsnic daemon: {n}\n")).collect();
                        self.health = Some(h);
                        Output { stderr, ..Default::default() }
                    }
                    Err(e) => bad(format!("starting the health checkers: {e}")),
                }
            }
            Request::Checkers => Output {
                stdout: match &self.health {
                    Some(h) => h.listing(),
                    None => "no health checkers (`lvsnic keepalived FILE --load` starts them)\n".into(),
                },
                ..Default::default()
            },
            Request::Vip { state, vips } => self.vip(state, &vips),
            Request::SyncDaemons { daemons } => {
                let mut out = Output::default();
                for spec in daemons {
                    let (state, name) = match spec.role {
                        proto::SyncRole::Master => (DaemonState::Master, "master"),
                        proto::SyncRole::Backup => (DaemonState::Backup, "backup"),
                    };
                    let d = SyncDaemon {
                        state,
                        mcast_ifn: spec.ifname,
                        syncid: spec.syncid,
                        sync_maxlen: spec.maxlen,
                        mcast_group: spec.group,
                        mcast_port: spec.port,
                        mcast_ttl: spec.ttl,
                    };
                    match self.ctl.ensure_sync(&d) {
                        Ok(e) => out.stdout.push_str(&format!("{name} {}\n", e.name())),
                        Err(e) => {
                            out.stderr = format!("{name}: {e}\n");
                            out.exit = crate::control::EXIT_ERR;
                            break;
                        }
                    }
                }
                out
            }
            Request::Metrics { .. } => bad("metrics are served over HTTP (--metrics ADDR:PORT)".into()),
            Request::Shutdown => {
                sys::request_shutdown();
                Output { stdout: "lvsnic daemon: shutting down\n".into(), ..Default::default() }
            }
        }
    }
}

/// The metrics server's source: a `metrics` request on the control queue,
/// answered by the loop with a copy that this (the server's) thread formats.
fn scrape(submit: client::Submitter) -> metrics_http::Fetch {
    std::sync::Arc::new(move |format| {
        let openmetrics = format == exposition::Format::OpenMetrics;
        let rx = submit.submit(Request::Metrics { openmetrics })?;
        // The loop answers between batches of frames; a stopped loop drops the job.
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Part::Later(f)) => Ok(f().stdout),
            Ok(Part::Done(r)) if r.exit == 0 => Ok(r.stdout),
            Ok(Part::Done(r)) => Err(r.stderr.trim().to_string()),
            Ok(Part::Conns(..)) => Err("unexpected reply".into()),
            Err(_) => Err("the daemon did not answer".into()),
        }
    })
}

fn bad(msg: String) -> Reply {
    Output { stdout: String::new(), stderr: format!("lvsnic daemon: {msg}\n"), exit: 2 }
}
