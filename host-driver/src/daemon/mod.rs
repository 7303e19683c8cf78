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
//! * Control: the Unix socket of [`proto`] (default `/run/lvsnic.sock`,
//!   `--socket` or `LVSNIC_SOCKET` override). Requests are applied between
//!   frames. A second daemon on a socket that answers is refused with a
//!   clear error; a stale socket file (nobody listening) is replaced.
//! * Wire `pcap:IN,OUT[,HOST]`: the frames of IN in timestamp order (stable
//!   for equal stamps), model time = frame timestamps; transmitted frames go
//!   to OUT stamped with the time of the frame that caused them, frames for
//!   the director's own stack to HOST (if given) and to `--host-tap` (if
//!   given). `--pace asap` (default) runs the capture at once, `realtime`
//!   keeps its inter-frame gaps, `step` runs frames only when a `wire`
//!   request asks (for tests that change rules at exact points of a
//!   capture). The daemon keeps serving after the capture ends.
//! * Wire `tap:NAME`: Ethernet frames on TAP device NAME (created if
//!   needed, link set up), model time = arrival time (CLOCK_REALTIME ns);
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

pub mod proto;
pub mod sys;

use crate::control::Control;
use crate::device::model::{ModelDevice, MODEL_PARAMS};
use crate::device::rings::RingConfig;
use crate::device::vfio::VfioDevice;
use crate::device::{Device, Wire as SimulatedWire};
use crate::invocation::Output;
use crate::limits;
use crate::slowpath::SlowPath;
use lvsnic_model::director::Director;
use lvsnic_model::rules::ipvsadm::{DaemonState, SyncDaemon};
use lvsnic_model::pcap::{self, PcapRecord, PcapWriter, Resolution};
use lvsnic_model::time::Time;
use proto::{Reply, Request};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Data-plane implementation the daemon drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DaemonBackend {
    /// The hardware model behind the DMA engine model and the host rings.
    Model,
    /// The verilated RTL core (`--width`) behind the DMA engine model and
    /// the host rings.
    Sim,
    /// A real card through VFIO (`--device BDF`); frames come from its own
    /// ports, the exception ring is polled.
    Vfio,
    /// An lvsnic board over its management port (`--device HOST[:PORT]`,
    /// `--glue`, `--bind`): registers over Etherbone, exceptions and
    /// injected frames as UDP datagrams; frames come from its data port.
    Etherbone,
}

/// How a pcap wire is played.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Pace {
    /// As fast as possible, at start.
    #[default]
    Asap,
    /// With the capture's inter-frame gaps.
    Realtime,
    /// Only when a `wire` request asks.
    Step,
}

/// Which VIPs are this director's: it answers ARP for them and
/// load-balances their traffic; another director's VIPs go to the host
/// stack (docs/ha.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum VipMode {
    /// Every VIP, until `lvsnic vip backup` releases it (no VRRP).
    #[default]
    Master,
    /// None, until `lvsnic vip master` takes it (keepalived's notify
    /// scripts); a restarted daemon does not answer for VIPs another
    /// director holds.
    Backup,
    /// A VIP is this director's while it is an address of the director's
    /// own stack (the network namespace the daemon runs in): keepalived's
    /// `virtual_ipaddress` adds and removes it, and lvsnic follows at once
    /// (rtnetlink), as Linux IPVS handles only packets to local addresses.
    Host,
}

impl VipMode {
    /// The name `--vips` takes.
    pub fn name(self) -> &'static str {
        match self {
            VipMode::Master => "master",
            VipMode::Backup => "backup",
            VipMode::Host => "host",
        }
    }
}

/// Where frames come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireSpec {
    /// Frames from a capture; transmitted frames (and host frames) to captures.
    Pcap {
        /// The capture whose frames arrive on the wire (`IN.pcap`).
        input: PathBuf,
        /// Where transmitted frames are written (`OUT.pcap`).
        output: PathBuf,
        /// Where frames handed to the host stack are written (`HOST.pcap`),
        /// if given.
        host: Option<PathBuf>,
    },
    /// Frames on a TAP device.
    Tap(String),
}

impl std::str::FromStr for WireSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(rest) = s.strip_prefix("pcap:") {
            let parts: Vec<&str> = rest.split(',').collect();
            if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
                return Err("expected pcap:IN.pcap,OUT.pcap[,HOST.pcap]".into());
            }
            return Ok(WireSpec::Pcap {
                input: parts[0].into(),
                output: parts[1].into(),
                host: parts.get(2).map(PathBuf::from),
            });
        }
        if let Some(name) = s.strip_prefix("tap:") {
            if name.is_empty() {
                return Err("expected tap:NAME".into());
            }
            return Ok(WireSpec::Tap(name.to_string()));
        }
        Err("expected pcap:IN.pcap,OUT.pcap or tap:NAME".into())
    }
}

/// Everything `lvsnic daemon` takes.
#[derive(Clone, Debug)]
pub struct DaemonArgs {
    /// The data plane.
    pub backend: DaemonBackend,
    /// DIRECTOR.toml.
    pub director: PathBuf,
    /// Control socket (default: `LVSNIC_SOCKET`, else /run/lvsnic.sock).
    pub socket: Option<PathBuf>,
    /// Rules loaded at start (`ipvsadm -S` format).
    pub rules: Option<PathBuf>,
    /// Where frames come from (simulated backends).
    pub wire: Option<WireSpec>,
    /// How a pcap wire is played.
    pub pace: Pace,
    /// TAP device of the director's own stack.
    pub host_tap: Option<String>,
    /// Which VIPs are this director's (VRRP).
    pub vips: VipMode,
    /// PCI address of the card (`vfio`), or the board's address
    /// `HOST[:PORT]` (`etherbone`).
    pub device: Option<String>,
    /// `etherbone`: the glue's CSRs, as the address of `glue_host_ip` or
    /// the build's `csr.csv` ([`crate::device::etherbone::GlueMap::parse_option`]).
    pub glue: Option<String>,
    /// `etherbone`: local address to bind (default: any).
    pub bind: Option<std::net::IpAddr>,
    /// Data width of the simulated core (`sim`).
    pub width: u32,
    /// Where the running state is kept ([`crate::state::state_dir`]).
    pub state_dir: Option<PathBuf>,
}

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
    /// The state directory or a file in it.
    #[error("{0}")]
    State(#[from] crate::state::StateError),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DaemonError {
    let what = what.into();
    move |source| DaemonError::Io { what, source }
}

/// The bound control socket; removes its file when dropped (if still ours).
pub struct ControlSocket {
    listener: UnixListener,
    path: PathBuf,
    ino: (u64, u64),
}

impl ControlSocket {
    /// Binds `path`, refusing when a daemon already answers there.
    pub fn bind(path: &Path) -> Result<Self, DaemonError> {
        let p = path.display().to_string();
        if let Ok(m) = std::fs::symlink_metadata(path) {
            if !m.file_type().is_socket() {
                return Err(DaemonError::NotASocket(p));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(DaemonError::AlreadyRunning(p));
            }
            std::fs::remove_file(path).map_err(io_err(format!("removing stale socket {p}")))?;
        }
        let listener = UnixListener::bind(path).map_err(io_err(format!("binding {p}")))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io_err(format!("chmod {p}")))?;
        listener.set_nonblocking(true).map_err(io_err(p.clone()))?;
        let m = std::fs::metadata(path).map_err(io_err(p.clone()))?;
        Ok(ControlSocket { listener, path: path.to_path_buf(), ino: (m.dev(), m.ino()) })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        if let Ok(m) = std::fs::metadata(&self.path) {
            if (m.dev(), m.ino()) == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

type PcapOut = PcapWriter<BufWriter<File>>;

fn pcap_out(path: &Path) -> Result<PcapOut, DaemonError> {
    let f = File::create(path).map_err(io_err(path.display().to_string()))?;
    PcapWriter::new(BufWriter::new(f), Resolution::Nano, 1, 65535)
        .map_err(|e| DaemonError::Pcap { path: path.display().to_string(), msg: e.to_string() })
}

/// A pcap wire being played.
struct PcapWire {
    records: Vec<PcapRecord>,
    next: usize,
    out: PcapOut,
    host: Option<PcapOut>,
    pace: Pace,
    /// Realtime pacing: wall clock and capture time of the first frame.
    origin: Option<(Instant, Time)>,
    /// Step pacing: frames to run / stamp to run to.
    budget: u64,
    until: Option<Time>,
}

/// The wire the loop runs over.
enum Wire {
    None,
    Pcap(Box<PcapWire>),
    Tap(sys::Tap),
}

/// Runs what the wire (and the host TAP) has for now.
type RunWire<D> = fn(&mut Daemon<D>, &mut Vec<u8>) -> Result<(), DaemonError>;

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
    addr_watch: Option<sys::AddrWatch>,
    /// `--vips host`: the IPv4 addresses of the director's own stack.
    host_addrs: Vec<std::net::Ipv4Addr>,
    /// Gratuitous ARPs of VIPs taken over (`lvsnic vip master`), each
    /// with the model time it is due.
    garps: Vec<(Time, Vec<u8>)>,
    /// The state directory and reloads.
    keeper: crate::state::Keeper,
}

/// keepalived's `vrrp_garp_master_repeat` default: gratuitous ARPs per VIP
/// in each burst after becoming master.
pub const GARP_MASTER_REPEAT: usize = 5;
/// keepalived's `vrrp_garp_master_delay` default: the second burst follows
/// the first (sent at once) after this long.
pub const GARP_MASTER_DELAY_NS: Time = 5_000_000_000;

/// Runs `lvsnic daemon` until SIGINT/SIGTERM; returns the closing summary.
pub fn run(args: &DaemonArgs) -> Result<String, DaemonError> {
    #[cfg(not(feature = "sim"))]
    if args.backend == DaemonBackend::Sim {
        return Err(DaemonError::Device(crate::NO_SIM_BACKEND.into()));
    }
    let (mut cfg, limits) = limits::load_director(&args.director)?;
    let rules = match &args.rules {
        None => Default::default(),
        Some(p) => {
            let ps = p.display().to_string();
            let text = std::fs::read_to_string(p).map_err(io_err(ps.clone()))?;
            let script = lvsnic_model::rules::ipvsadm::parse_rules_full(&text)
                .map_err(|e| DaemonError::Rules { path: ps, msg: e.to_string() })?;
            if let Some(t) = script.timeouts {
                cfg.timeouts.set(t.tcp, t.tcpfin, t.udp);
            }
            script.rules
        }
    };
    // The wire first: its first frame sets the model's start time.
    let (wire, live, start) = match &args.wire {
        // No wire: the director's clock is the real one (a backup director
        // that only learns connections by sync must see them expire).
        None => (Wire::None, true, sys::realtime_ns()),
        Some(WireSpec::Pcap { input, output, host }) => {
            let ip = input.display().to_string();
            let mut records = pcap::read_file(input).map_err(|e| DaemonError::Pcap { path: ip, msg: e.to_string() })?;
            records.sort_by_key(|r| r.ts_ns);
            let start = records.first().map(|r| r.ts_ns).unwrap_or(0);
            let w = PcapWire {
                records,
                next: 0,
                out: pcap_out(output)?,
                host: host.as_deref().map(pcap_out).transpose()?,
                pace: args.pace,
                origin: None,
                budget: 0,
                until: None,
            };
            (Wire::Pcap(Box::new(w)), false, start)
        }
        Some(WireSpec::Tap(name)) => {
            let t = sys::Tap::open(name).map_err(io_err(format!("TAP device {name}")))?;
            (Wire::Tap(t), true, sys::realtime_ns())
        }
    };
    let host_tap = match &args.host_tap {
        None => None,
        Some(n) => Some(sys::Tap::open(n).map_err(io_err(format!("TAP device {n}")))?),
    };
    let mut director = Director::new(cfg, &rules, start)?;
    director.set_vips_owned_by_default(args.vips == VipMode::Master);
    let dev_err = |e: String| DaemonError::Device(e);
    match args.backend {
        DaemonBackend::Model => {
            let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).map_err(|e| dev_err(e.to_string()))?;
            let sp = SlowPath::new(director, dev, MODEL_PARAMS).map_err(|e| dev_err(e.to_string()))?;
            let ctl = Control::new(sp, MODEL_PARAMS.vip_count, limits);
            serve(Daemon::new(ctl, Daemon::run_wire, wire, host_tap, live), args)
        }
        #[cfg(feature = "sim")]
        DaemonBackend::Sim => {
            use crate::device::sim_core::{sim_device, SimCore};
            let dev = sim_device(args.width).map_err(dev_err)?;
            let params = SimCore::params(args.width);
            let sp = SlowPath::new(director, dev, params).map_err(|e| dev_err(e.to_string()))?;
            let ctl = Control::new(sp, params.vip_count, limits);
            serve(Daemon::new(ctl, Daemon::run_wire, wire, host_tap, live), args)
        }
        #[cfg(not(feature = "sim"))]
        DaemonBackend::Sim => Err(dev_err(crate::NO_SIM_BACKEND.into())),
        DaemonBackend::Vfio => {
            let bdf = args.device.as_deref().ok_or_else(|| dev_err("--backend vfio needs --device <PCI address>, e.g. --device 0000:3b:00.0".into()))?;
            if !matches!(wire, Wire::None) {
                return Err(dev_err("--backend vfio takes its frames from the card's ports: no --wire".into()));
            }
            let mut dev = VfioDevice::open(bdf, RingConfig::default()).map_err(|e| dev_err(e.to_string()))?;
            let params = params_from_caps(&mut dev);
            let sp = SlowPath::new(director, dev, params).map_err(|e| dev_err(e.to_string()))?;
            let ctl = Control::new(sp, params.vip_count, limits);
            let mut d = Daemon::new(ctl, Daemon::run_host_tap, wire, host_tap, true);
            d.polls_card = true;
            serve(d, args)
        }
        DaemonBackend::Etherbone => {
            use crate::device::etherbone::{EtherboneConfig, EtherboneDevice, GlueMap};
            let spec = args.device.as_deref().ok_or_else(|| {
                dev_err("--backend etherbone needs --device <board address>[:PORT], e.g. --device 192.168.1.50".into())
            })?;
            if !matches!(wire, Wire::None) {
                return Err(dev_err("--backend etherbone takes its frames from the board's data port: no --wire".into()));
            }
            let mut cfg = EtherboneConfig::new(EtherboneConfig::parse_device(spec).map_err(|e| dev_err(e.to_string()))?);
            cfg.glue = args.glue.as_deref().map(GlueMap::parse_option).transpose().map_err(dev_err)?;
            if let Some(ip) = args.bind {
                cfg.bind = ip;
            }
            let dev = EtherboneDevice::open(cfg).map_err(|e| dev_err(e.to_string()))?;
            let params = dev.identity.params;
            let sp = SlowPath::new(director, dev, params).map_err(|e| dev_err(e.to_string()))?;
            let ctl = Control::new(sp, params.vip_count, limits);
            let mut d = Daemon::new(ctl, Daemon::run_host_tap, wire, host_tap, true);
            d.polls_card = true;
            serve(d, args)
        }
    }
}

/// The table sizes a core reports in `CAPS0`/`CAPS1`.
fn params_from_caps(csr: &mut dyn lvsnic_model::hw::Csr) -> lvsnic_model::hw::HwParams {
    use lvsnic_model::hw::regs::{CAPS0, CAPS1};
    let c0 = csr.read32(CAPS0);
    let c1 = csr.read32(CAPS1);
    lvsnic_model::hw::HwParams {
        data_width: c0 & 0xffff,
        flow_buckets_log2: c0 >> 16 & 0xff,
        action_log2: c0 >> 24,
        vip_count: c1 >> 16 & 0xff,
    }
}

fn serve<D: Device>(mut d: Daemon<D>, args: &DaemonArgs) -> Result<String, DaemonError> {
    let path = proto::socket_path(args.socket.as_deref());
    let dir = crate::state::state_dir(args.state_dir.as_deref(), &path, path == Path::new(proto::DEFAULT_SOCKET));
    d.keeper = crate::state::Keeper::new(dir, &args.director, args.rules.as_deref())?;
    let sock = ControlSocket::bind(&path)?;
    let (restored, health) = d.keeper.restore(&mut d.ctl, args.vips != VipMode::Host)?;
    if let Some(cfg) = health {
        d.health = crate::health::Health::start(cfg).ok();
    }
    sys::install_signal_handlers().map_err(io_err("installing signal handlers"))?;
    let wire_desc = match (&args.wire, &d.wire) {
        (Some(WireSpec::Pcap { input, .. }), Wire::Pcap(w)) => {
            format!("pcap {} ({} frames, pace {:?})", input.display(), w.records.len(), w.pace).to_lowercase()
        }
        (Some(WireSpec::Tap(n)), _) => format!("tap {n}"),
        _ => "none".into(),
    };
    eprintln!(
        "lvsnic daemon: {:?} backend, {} services, wire {wire_desc}, listening on {}",
        args.backend,
        d.ctl.service_keys().len(),
        sock.path().display()
    );
    if let Some(line) = restored {
        eprintln!("lvsnic daemon: {line}");
    }
    d.vips = args.vips;
    if args.vips == VipMode::Host {
        d.addr_watch = Some(sys::AddrWatch::open().map_err(io_err("watching the host's addresses (rtnetlink)"))?);
        d.refresh_host_addrs()?;
    }
    let mut buf = vec![0u8; 65536];
    let mut last_tick = Instant::now();
    while !sys::shutdown_requested() {
        let mut fds = vec![sock.listener.as_raw_fd()];
        if let Some(w) = &d.addr_watch {
            fds.push(w.fd());
        }
        if let Wire::Tap(t) = &d.wire {
            fds.push(t.fd());
        }
        if let Some(h) = &d.host_tap {
            fds.push(h.fd());
        }
        fds.extend(d.ctl.sync.fds());
        let timeout = if d.ctl.sync.master_pending() { d.poll_timeout().min(100) } else { d.poll_timeout() };
        let ready = sys::poll_readable(&fds, timeout).map_err(io_err("poll"))?;
        if ready[0] {
            d.accept_all(&sock.listener)?;
        }
        // `--vips host`: address changes first, so that a frame for a VIP
        // keepalived has just added is not handed to the host stack (which
        // would answer it with a reset).
        if d.addr_watch.as_ref().is_some_and(|w| w.changed()) {
            d.refresh_host_addrs()?;
        } else if ready[0] && d.addr_watch.is_some() {
            d.follow_host_addrs(); // services may have come or gone
        }
        (d.run_wire)(&mut d, &mut buf)?;
        d.run_health();
        // A real card's exceptions arrive on its receive ring (polled).
        d.ctl.poll_device(256).map_err(|e| DaemonError::Device(e.to_string()))?;
        // Connection sync: what the backup received, what the master sends.
        d.ctl.sync.run(&mut d.ctl.sp);
        if d.live && last_tick.elapsed() >= Duration::from_millis(100) {
            d.ctl.advance(sys::realtime_ns());
            last_tick = Instant::now();
        }
        if sys::take_reload() {
            let r = d.request(Request::Reload { rules: None, health: None });
            eprint!("lvsnic daemon: SIGHUP: {}{}", r.stdout.replace('\n', "; ").trim_end_matches("; "), if r.stdout.is_empty() { "" } else { "\n" });
            eprint!("{}", r.stderr);
            d.keeper.save(&d.ctl);
        }
        d.keeper.tick(&mut d.ctl);
    }
    d.flush()?;
    d.keeper.save(&d.ctl);
    d.keeper.save_conns(&mut d.ctl);
    drop(sock);
    let c = d.ctl.counters;
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
            keeper: crate::state::Keeper::disabled(),
        }
    }

    fn poll_timeout(&self) -> i32 {
        match &self.wire {
            Wire::Pcap(w) if w.next < w.records.len() => match w.pace {
                Pace::Asap => 0,
                Pace::Step if w.budget > 0 || w.until.is_some() => 0,
                Pace::Step => 200,
                Pace::Realtime => match w.origin {
                    None => 0,
                    Some((t0, c0)) => {
                        let due = Duration::from_nanos(w.records[w.next].ts_ns.saturating_sub(c0));
                        let el = t0.elapsed();
                        if due <= el {
                            0
                        } else {
                            ((due - el).as_millis() as i32).clamp(1, 200)
                        }
                    }
                },
            },
            Wire::Tap(_) => 100,
            // No wire: a real card is polled every millisecond.
            Wire::None if self.polls_card => 1,
            _ => 200,
        }
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
        for argv in cmds {
            let out = self.ctl.ipvsadm("lvsnic", &argv, None);
            if out.exit != 0 {
                h.refused(&argv, &out.stderr);
            }
        }
    }

    fn accept_all(&mut self, l: &UnixListener) -> Result<(), DaemonError> {
        loop {
            match l.accept() {
                Ok((s, _)) => self.handle(s),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Ok(()),
                Err(e) => return Err(DaemonError::Io { what: "accept".into(), source: e }),
            }
        }
    }

    /// One client: one request line, one reply line.
    fn handle(&mut self, s: UnixStream) {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
        let mut line = String::new();
        let read = BufReader::new((&s).take(proto::MAX_REQUEST)).read_line(&mut line);
        let reply = match read {
            Err(e) => bad(format!("reading the request: {e}")),
            Ok(_) => match serde_json::from_str::<Request>(&line) {
                Err(e) => bad(format!("bad request: {e}")),
                Ok(req) => {
                    let changes = req.changes_state();
                    let r = self.request(req);
                    if changes {
                        self.keeper.save(&self.ctl);
                    }
                    r
                }
            },
        };
        let mut text = serde_json::to_string(&reply).unwrap_or_default();
        text.push('\n');
        let _ = (&s).write_all(text.as_bytes());
    }

    fn request(&mut self, req: Request) -> Reply {
        if self.live {
            self.ctl.advance(sys::realtime_ns());
        }
        match req {
            Request::Ipvsadm { prog, argv, stdin } => {
                self.ctl.ipvsadm(prog.as_deref().unwrap_or("lvsnic"), &argv, stdin.as_deref())
            }
            Request::Status => {
                let mut j: serde_json::Value =
                    serde_json::from_str(&self.ctl.status_json()).unwrap_or(serde_json::Value::Null);
                if let Some(o) = j.as_object_mut() {
                    o.insert("host_dropped".into(), self.host_dropped.into());
                    o.insert("tx_dropped".into(), self.tx_dropped.into());
                    o.insert("vips".into(), self.vips.name().into());
                    if let Some(h) = &self.health {
                        o.insert("health".into(), h.counters());
                    }
                    if let Wire::Pcap(w) = &self.wire {
                        o.insert("pcap_frames_left".into(), ((w.records.len() - w.next) as u64).into());
                    }
                }
                Output { stdout: serde_json::to_string_pretty(&j).unwrap_or_default() + "\n", ..Default::default() }
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
                        self.health = Some(h);
                        Output::default()
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
                    match self.ctl.sync.ensure(&d) {
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
            Request::Shutdown => {
                sys::request_shutdown();
                Output { stdout: "lvsnic daemon: shutting down\n".into(), ..Default::default() }
            }
        }
    }

    /// `lvsnic vip [STATE VIP...]`: VRRP ownership of VIPs. Becoming
    /// master queues two bursts of gratuitous ARPs per VIP (now and
    /// [`GARP_MASTER_DELAY_NS`] later), as keepalived's defaults do.
    fn vip(&mut self, state: Option<proto::VrrpState>, vips: &[std::net::Ipv4Addr]) -> Reply {
        let Some(state) = state else {
            let d = &self.ctl.sp.director;
            let mut all: Vec<std::net::Ipv4Addr> = d.services.live_services().map(|s| s.vaddr).collect();
            all.extend(d.vip_states().map(|(a, _)| a));
            all.sort_unstable();
            all.dedup();
            let stdout = all
                .iter()
                .map(|&a| format!("{a} {}\n", if d.vip_owned(a) { "master" } else { "backup" }))
                .collect();
            return Output { stdout, ..Default::default() };
        };
        if vips.is_empty() {
            return bad("vip: no VIP given".into());
        }
        if self.vips == VipMode::Host {
            return bad("vip: the VIPs follow the director's own addresses (--vips host); keepalived's virtual_ipaddress moves them".into());
        }
        let master = state == proto::VrrpState::Master;
        let now = self.ctl.sp.director.now();
        for &v in vips {
            self.ctl.sp.set_vip_owned(v, master);
            if master {
                let f = lvsnic_model::xmit::gratuitous_arp(self.ctl.sp.director.cfg.mac, v);
                for due in [now, now + GARP_MASTER_DELAY_NS] {
                    self.garps.extend(std::iter::repeat_n((due, f.clone()), GARP_MASTER_REPEAT));
                }
            }
        }
        if !master {
            self.garps.retain(|(_, f)| !vips.iter().any(|v| f[38..42] == v.octets()));
        }
        Output::default()
    }

    /// `--vips host`: reads the stack's addresses again and follows them.
    fn refresh_host_addrs(&mut self) -> Result<(), DaemonError> {
        self.host_addrs = sys::ipv4_addresses().map_err(io_err("reading the host's addresses"))?;
        self.follow_host_addrs();
        Ok(())
    }

    /// `--vips host`: every VIP (of a service, or named before) is ours
    /// exactly while it is one of the stack's addresses.
    fn follow_host_addrs(&mut self) {
        let d = &self.ctl.sp.director;
        let mut vips: Vec<std::net::Ipv4Addr> = d.services.live_services().map(|s| s.vaddr).collect();
        vips.extend(d.vip_states().map(|(a, _)| a));
        vips.sort_unstable();
        vips.dedup();
        for v in vips {
            let ours = self.host_addrs.contains(&v);
            if self.ctl.sp.director.vip_owned(v) != ours {
                self.ctl.sp.set_vip_owned(v, ours);
            }
        }
    }

    /// The queued gratuitous ARPs due by the director's current time.
    fn due_garps(&mut self) -> Vec<Vec<u8>> {
        let now = self.ctl.sp.director.now();
        let (due, later) = std::mem::take(&mut self.garps).into_iter().partition(|(t, _)| *t <= now);
        self.garps = later;
        due.into_iter().map(|(_, f): (Time, Vec<u8>)| f).collect()
    }

    /// What the director's own stack sends (on `--host-tap`, and the
    /// gratuitous ARPs due) goes down the card's transmit ring and leaves
    /// on its port (a real card).
    fn run_host_tap(&mut self, buf: &mut Vec<u8>) -> Result<(), DaemonError> {
        for f in self.due_garps() {
            self.ctl.host_tx(&f).map_err(|e| DaemonError::Device(e.to_string()))?;
        }
        self.host_tap_frames(buf, |d, f| d.ctl.host_tx(f).map_err(|e| DaemonError::Device(e.to_string())))
    }

    /// Reads up to 256 frames from `--host-tap` and hands each to `each`.
    fn host_tap_frames(
        &mut self,
        buf: &mut Vec<u8>,
        mut each: impl FnMut(&mut Self, &[u8]) -> Result<(), DaemonError>,
    ) -> Result<(), DaemonError> {
        if self.host_tap.is_none() {
            return Ok(());
        }
        if buf.len() < 65536 {
            buf.resize(65536, 0);
        }
        for _ in 0..256 {
            let Some(ht) = &mut self.host_tap else { return Ok(()) };
            let n = match ht.recv(buf).map_err(io_err(format!("reading {}", ht.name())))? {
                None => return Ok(()),
                Some(n) => n,
            };
            each(self, &buf[..n])?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), DaemonError> {
        if let Wire::Pcap(w) = &mut self.wire {
            w.out.flush().map_err(|e| DaemonError::Pcap { path: "output".into(), msg: e.to_string() })?;
            if let Some(h) = &mut w.host {
                h.flush().map_err(|e| DaemonError::Pcap { path: "host".into(), msg: e.to_string() })?;
            }
        }
        Ok(())
    }
}

fn bad(msg: String) -> Reply {
    Output { stdout: String::new(), stderr: format!("lvsnic daemon: {msg}\n"), exit: 2 }
}

/// The wire of a card whose network is simulated.
impl<D: Device + SimulatedWire> Daemon<D> {
    /// Runs what the wire has for now.
    fn run_wire(&mut self, buf: &mut Vec<u8>) -> Result<(), DaemonError> {
        match &mut self.wire {
            Wire::None => Ok(()),
            Wire::Pcap(_) => self.run_pcap(),
            Wire::Tap(_) => {
                if buf.len() < 65536 {
                    buf.resize(65536, 0);
                }
                self.run_tap(buf)
            }
        }?;
        self.run_host_tap_wire(buf)
    }

    fn run_pcap(&mut self) -> Result<(), DaemonError> {
        let Wire::Pcap(w) = &mut self.wire else { return Ok(()) };
        let was_running = w.next < w.records.len();
        let mut n = 0;
        while w.next < w.records.len() && !sys::shutdown_requested() {
            let ts = w.records[w.next].ts_ns;
            match w.pace {
                Pace::Asap => {
                    if n == 256 {
                        break; // let the control socket in
                    }
                }
                Pace::Step => {
                    let by_until = w.until.is_some_and(|u| ts <= u);
                    if !by_until && w.budget == 0 {
                        break;
                    }
                    if !by_until {
                        w.budget -= 1;
                    }
                }
                Pace::Realtime => {
                    let (t0, c0) = *w.origin.get_or_insert((Instant::now(), ts));
                    if n == 256 || Duration::from_nanos(ts.saturating_sub(c0)) > t0.elapsed() {
                        break;
                    }
                }
            }
            let rec = std::mem::take(&mut w.records[w.next].data);
            w.next += 1;
            n += 1;
            let r = self.ctl.frame(ts, &rec).map_err(|e| DaemonError::Device(e.to_string()))?;
            let perr = |e: lvsnic_model::pcap::PcapError| DaemonError::Pcap {
                path: "output capture".into(),
                msg: e.to_string(),
            };
            for f in &r.tx {
                w.out.write_record(ts, f).map_err(perr)?;
            }
            if let Some(h) = r.host {
                if let Some(hp) = &mut w.host {
                    hp.write_record(ts, &h).map_err(perr)?;
                }
                let sent = match &mut self.host_tap {
                    Some(t) => t.send(&h).unwrap_or(false),
                    None => w.host.is_some(),
                };
                if !sent {
                    self.host_dropped += 1;
                }
            }
        }
        if w.pace == Pace::Step {
            w.budget = 0;
            w.until = None;
        }
        let done = was_running && w.next >= w.records.len();
        if n > 0 || done {
            // Captures on disk end on a record boundary between batches.
            self.flush()?;
        }
        if done {
            eprintln!("lvsnic daemon: capture done ({} frames)", self.ctl.counters.frames);
        }
        Ok(())
    }

    fn run_tap(&mut self, buf: &mut [u8]) -> Result<(), DaemonError> {
        for _ in 0..256 {
            let Wire::Tap(t) = &mut self.wire else { return Ok(()) };
            let n = match t.recv(buf).map_err(io_err(format!("reading {}", t.name())))? {
                None => return Ok(()),
                Some(n) => n,
            };
            let ts = sys::realtime_ns();
            let r = self.ctl.frame(ts, &buf[..n]).map_err(|e| DaemonError::Device(e.to_string()))?;
            let Wire::Tap(t) = &mut self.wire else { return Ok(()) };
            for f in &r.tx {
                if !t.send(f).map_err(io_err(format!("writing {}", t.name())))? {
                    self.tx_dropped += 1;
                }
            }
            if let Some(h) = r.host {
                match &mut self.host_tap {
                    Some(ht) => {
                        if !ht.send(&h).unwrap_or(false) {
                            self.host_dropped += 1;
                        }
                    }
                    None => self.host_dropped += 1,
                }
            }
        }
        Ok(())
    }

    /// What the director's own stack sends (on `--host-tap`, and the
    /// gratuitous ARPs due) goes out on the wire as the card transmitted it.
    fn run_host_tap_wire(&mut self, buf: &mut Vec<u8>) -> Result<(), DaemonError> {
        for f in self.due_garps() {
            self.host_frame_to_wire(&f)?;
        }
        self.host_tap_frames(buf, |d, frame| d.host_frame_to_wire(frame))
    }

    fn host_frame_to_wire(&mut self, frame: &[u8]) -> Result<(), DaemonError> {
        let f = self.ctl.host_tx_observed(frame).map_err(|e| DaemonError::Device(e.to_string()))?;
        match &mut self.wire {
            Wire::Tap(t) => {
                if !t.send(&f).unwrap_or(false) {
                    self.tx_dropped += 1;
                }
            }
            Wire::Pcap(w) => {
                let ts = self.ctl.sp.director.now();
                w.out.write_record(ts, &f).map_err(|e| DaemonError::Pcap { path: "output".into(), msg: e.to_string() })?;
            }
            Wire::None => self.tx_dropped += 1,
        }
        Ok(())
    }
}
