//! `lvsnic replay`: run a capture through the director.
//!
//! ```text
//! lvsnic replay --rules RULES --director DIRECTOR.toml --input IN.pcap --output OUT.pcap
//!               [--host HOST.pcap] [--stats STATS.json] [--backend model]
//! ```
//! Every frame the director transmits goes to OUT.pcap in transmission
//! order, stamped with the time of the frame that caused it; frames handed
//! to the director's own stack go to HOST.pcap.

use lvsnic_model::config::DirectorConfig;
use crate::slowpath::SlowPath;
use lvsnic_model::director::{Action, Director};
use crate::control::Control;
use crate::changes::Changes;
use crate::device::model::{ModelDevice, MODEL_PARAMS};
use crate::device::rings::RingConfig;
use crate::device::{Device, Wire};
use crate::limits::Limits;
use crate::setup::{load_director_and_rules, Loaded};
use lvsnic_model::hw::HwParams;
use lvsnic_model::pcap::{self, PcapRecord};
use lvsnic_model::rules::ipvsadm;
use lvsnic_model::stats::{Intake, OffloadCounts, ReceiveDrop, Report};
use std::path::{Path, PathBuf};

/// Which implementation of the data plane runs the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The hardware model (`lvsnic_model::hw`) forwards established flows;
    /// the host slow path (golden model) handles what it hands up.
    Model,
    /// The golden model alone, every frame in software (the reference the
    /// other backends are compared with).
    Golden,
    /// The verilated RTL core (`lvsnic-sim`, width from `--width`) with the
    /// host slow path (cargo feature `sim`).
    Sim,
}

/// Inputs and outputs of one replay.
#[derive(Clone, Debug)]
pub struct ReplayArgs {
    /// Rules (`ipvsadm -S` format).
    pub rules: PathBuf,
    /// DIRECTOR.toml.
    pub director: PathBuf,
    /// Frames arriving at the director (pcap).
    pub input: PathBuf,
    /// Frames it transmits (pcap).
    pub output: PathBuf,
    /// Frames for the director's own stack (pcap).
    pub host: Option<PathBuf>,
    /// Counters as JSON.
    pub stats: Option<PathBuf>,
    /// The data plane.
    pub backend: Backend,
    /// Also print `ipvsadm -L -n --stats`, `-L -n` and `-L -n --rate` of the final state.
    pub list: bool,
    /// Data width of the simulated core (`--backend sim`): 64 or 512.
    pub width: u32,
    /// Rule changes at capture times (`--changes`, see `changes`).
    pub changes: Option<PathBuf>,
}

/// A failure the user sees as one line.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
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
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The data plane failed or could not be built.
    #[error("{0}")]
    Device(String),
    /// An output cannot be written, or names an input or another output.
    #[error("{0}")]
    Output(String),
    /// A `--changes` line is not valid or could not be applied.
    #[error("{0}")]
    Changes(#[from] crate::changes::ChangeError),
    /// DIRECTOR.toml or the rules file.
    #[error("{0}")]
    Load(#[from] crate::setup::LoadError),
}

/// What a replay produced. `report.intake` says what became of every
/// frame read (`frames_read = frames.input + rate_limited +
/// dropped_on_receive`), the same on every backend.
pub struct ReplayOutcome {
    /// Transmitted frames, stamped with the time of the frame that caused them.
    pub tx: Vec<PcapRecord>,
    /// Frames for the director's own stack.
    pub host: Vec<PcapRecord>,
    /// The director's counters at the end.
    pub report: Report,
    /// `ipvsadm -L -n --stats` followed by `ipvsadm -L -n` of the final state.
    pub listing: String,
    /// Frames the data plane forwarded without the host (0 for `golden`).
    pub in_hardware: u64,
    /// Connections whose flows did not fit in the hardware tables.
    pub table_full: u64,
    /// Idle offloaded connections evicted for one that did not fit.
    pub evicted: u64,
}

/// Runs `records` through a fresh director on `backend` (the simulated
/// core at 64 bits).
pub fn run(backend: Backend, cfg: DirectorConfig, rules: &lvsnic_model::rules::RuleSet, records: &[PcapRecord]) -> Result<ReplayOutcome, ReplayError> {
    run_width(backend, 64, cfg, rules, records)
}

/// [`run`] with the simulated core's data width.
pub fn run_width(
    backend: Backend,
    width: u32,
    cfg: DirectorConfig,
    rules: &lvsnic_model::rules::RuleSet,
    records: &[PcapRecord],
) -> Result<ReplayOutcome, ReplayError> {
    run_limited(backend, width, Limits::default(), cfg, rules, records)
}

/// [`run_width`] with the per-service new-connection rate limit
/// (`[limits]`: at the slow path's entry, or in front of the golden model
/// on the `golden` backend).
pub fn run_limited(
    backend: Backend,
    width: u32,
    limits: Limits,
    cfg: DirectorConfig,
    rules: &lvsnic_model::rules::RuleSet,
    records: &[PcapRecord],
) -> Result<ReplayOutcome, ReplayError> {
    run_changes(backend, width, limits, cfg, rules, records, Changes::default())
}

/// [`run_limited`] with rule changes applied at their capture times.
pub fn run_changes(
    backend: Backend,
    width: u32,
    limits: Limits,
    cfg: DirectorConfig,
    rules: &lvsnic_model::rules::RuleSet,
    records: &[PcapRecord],
    mut changes: Changes,
) -> Result<ReplayOutcome, ReplayError> {
    changes.start(records.first().map(|r| r.ts_ns).unwrap_or(0));
    match backend {
        #[cfg(feature = "sim")]
        Backend::Sim => {
            use crate::device::sim_core::{sim_device, SimCore};
            let start = records.first().map(|r| r.ts_ns).unwrap_or(0);
            let d = Director::new(cfg, rules, start)?;
            let dev = sim_device(width).map_err(ReplayError::Device)?;
            let params = SimCore::params(width);
            let sp = SlowPath::new(d, dev, params).map_err(|e| ReplayError::Device(e.to_string()))?;
            run_split_changes(sp, params, limits, records, changes)
        }
        #[cfg(not(feature = "sim"))]
        Backend::Sim => {
            let _ = width;
            Err(ReplayError::Device(crate::NO_SIM_BACKEND.into()))
        }
        Backend::Golden => run_golden_limited(limits, cfg, rules, records, changes),
        Backend::Model => {
            let start = records.first().map(|r| r.ts_ns).unwrap_or(0);
            let d = Director::new(cfg, rules, start)?;
            let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).map_err(|e| ReplayError::Device(e.to_string()))?;
            let sp = SlowPath::new(d, dev, MODEL_PARAMS).map_err(|e| ReplayError::Device(e.to_string()))?;
            run_split_changes(sp, MODEL_PARAMS, limits, records, changes)
        }
    }
}

/// Runs `records` through the daemon's exception loop ([`Control`], no
/// rate limit) over a slow path in front of a data plane.
pub fn run_split<D: Device + Wire>(sp: SlowPath<D>, params: HwParams, records: &[PcapRecord]) -> Result<ReplayOutcome, ReplayError> {
    run_split_limited(sp, params, Limits::default(), records)
}

/// [`run_split`] with a rate limit.
pub fn run_split_limited<D: Device + Wire>(
    sp: SlowPath<D>,
    params: HwParams,
    limits: Limits,
    records: &[PcapRecord],
) -> Result<ReplayOutcome, ReplayError> {
    run_split_changes(sp, params, limits, records, Changes::default())
}

/// [`run_split_limited`] with rule changes (applied through the daemon's command path).
pub fn run_split_changes<D: Device + Wire>(
    sp: SlowPath<D>,
    params: HwParams,
    limits: Limits,
    records: &[PcapRecord],
    mut changes: Changes,
) -> Result<ReplayOutcome, ReplayError> {
    let mut ctl = Control::new(sp, params.vip_count, limits);
    let mut tx = Vec::with_capacity(records.len());
    let mut host = Vec::new();
    let mut in_hw = 0u64;
    let mut intake = Intake::default();
    for r in records {
        changes.apply_control(&mut ctl, r.ts_ns)?;
        intake.frames_read += 1;
        let out = ctl.frame(r.ts_ns, &r.data).map_err(|e| ReplayError::Device(e.to_string()))?;
        if let Some(why) = out.dropped {
            intake.dropped_on_receive.count(why);
        }
        intake.rate_limited += out.refused as u64;
        in_hw += out.in_hardware as u64;
        for f in out.tx {
            tx.push(PcapRecord { ts_ns: r.ts_ns, orig_len: f.len() as u32, data: f });
        }
        if let Some(f) = out.host {
            host.push(PcapRecord { ts_ns: r.ts_ns, orig_len: f.len() as u32, data: f });
        }
    }
    ctl.settle();
    let mut out = finish(ctl.director(), tx, host)?;
    out.in_hardware = in_hw;
    out.table_full = ctl.table_full();
    out.evicted = ctl.evicted();
    out.report.intake = Some(intake);
    Ok(out)
}

fn finish(d: &Director, tx: Vec<PcapRecord>, host: Vec<PcapRecord>) -> Result<ReplayOutcome, ReplayError> {
    let report = Report::of(d);
    let (header, services) = lvsnic_model::stats::listings(d);
    let stats_opts = ipvsadm::ListOptions { numeric: true, stats: true, ..Default::default() };
    let plain_opts = ipvsadm::ListOptions { numeric: true, ..Default::default() };
    let rate_opts = ipvsadm::ListOptions { numeric: true, rate: true, ..Default::default() };
    let listing = ipvsadm::format_list(&header, &services, &stats_opts)
        + &ipvsadm::format_list(&header, &services, &plain_opts)
        + &ipvsadm::format_list(&header, &services, &rate_opts);
    Ok(ReplayOutcome { tx, host, report, listing, in_hardware: 0, table_full: 0, evicted: 0 })
}

/// Runs `records` through the golden model alone.
pub fn run_golden(cfg: DirectorConfig, rules: &lvsnic_model::rules::RuleSet, records: &[PcapRecord]) -> Result<ReplayOutcome, ReplayError> {
    let mut changes = Changes::default();
    changes.start(records.first().map(|r| r.ts_ns).unwrap_or(0));
    run_golden_changes(cfg, rules, records, changes)
}

/// [`run_golden`] with rule changes (anchored by [`Changes::start`]).
pub fn run_golden_changes(
    cfg: DirectorConfig,
    rules: &lvsnic_model::rules::RuleSet,
    records: &[PcapRecord],
    changes: Changes,
) -> Result<ReplayOutcome, ReplayError> {
    run_golden_limited(Limits::default(), cfg, rules, records, changes)
}

/// [`run_golden_changes`] with `[limits]`: the rate limit the slow path
/// applies on the other backends, in front of the golden model (a frame
/// that would open a new connection takes a token of its service's
/// bucket, after the timers ran up to its time), so that every backend
/// drops the same frames. Frames no receiver takes (empty, runt,
/// oversize) are dropped on receive as on the other backends.
pub fn run_golden_limited(
    limits: Limits,
    cfg: DirectorConfig,
    rules: &lvsnic_model::rules::RuleSet,
    records: &[PcapRecord],
    mut changes: Changes,
) -> Result<ReplayOutcome, ReplayError> {
    let start = records.first().map(|r| r.ts_ns).unwrap_or(0);
    let mut d = Director::new(cfg, rules, start)?;
    let mut limiter = crate::limits::Limiter::new(limits);
    let mut intake = Intake::default();
    let mut tx = Vec::with_capacity(records.len());
    let mut host = Vec::new();
    let mut extra = Vec::new();
    for r in records {
        changes.apply_golden(&mut d, r.ts_ns)?;
        intake.frames_read += 1;
        if let Some(why) = ReceiveDrop::of_len(r.data.len()) {
            intake.dropped_on_receive.count(why);
            continue;
        }
        d.advance(r.ts_ns);
        if let Some(svc) = crate::limits::new_conn_service(&d, &r.data) {
            if !limiter.admit(svc, r.ts_ns) {
                intake.rate_limited += 1;
                continue;
            }
        }
        let mut frame = r.data.clone();
        extra.clear();
        match d.process_now(&mut frame, &mut extra) {
            Action::Transmit => {
                tx.push(PcapRecord { ts_ns: r.ts_ns, orig_len: frame.len() as u32, data: frame });
                for f in extra.drain(..) {
                    tx.push(PcapRecord { ts_ns: r.ts_ns, orig_len: f.len() as u32, data: f });
                }
            }
            // The stack gets the frame as the director leaves it: the input,
            // or the datagram a fragment completed.
            Action::ToHost(_) => host.push(PcapRecord { ts_ns: r.ts_ns, orig_len: frame.len() as u32, data: frame }),
            Action::Drop(_) | Action::Held => {}
        }
    }
    let mut out = finish(&d, tx, host)?;
    out.report.intake = Some(intake);
    Ok(out)
}

/// The whole `lvsnic replay` command. Returns the one-line summary.
///
/// Before anything runs, every output is checked against the inputs and
/// the other outputs ([`refuse_overlaps`](crate::outfile::refuse_overlaps))
/// and created under a temporary name beside its target (a directory, a
/// missing directory or an unwritable one fails here, before any output
/// exists); they are renamed over their targets only when all were
/// written, so a failed replay leaves nothing behind and no input changed.
pub fn replay(args: &ReplayArgs) -> Result<String, ReplayError> {
    use crate::outfile::{refuse_overlaps, AtomicFile, PcapFile};
    let mut inputs: Vec<(&str, &Path)> =
        vec![("--input", &args.input), ("--rules", &args.rules), ("--director", &args.director)];
    if let Some(c) = &args.changes {
        inputs.push(("--changes", c));
    }
    let mut outputs: Vec<(&str, &Path)> = vec![("--output", &args.output)];
    if let Some(h) = &args.host {
        outputs.push(("--host", h));
    }
    if let Some(s) = &args.stats {
        outputs.push(("--stats", s));
    }
    refuse_overlaps(&inputs, &outputs).map_err(ReplayError::Output)?;
    // DIRECTOR.toml as the daemon reads it, [limits] included.
    let Loaded { cfg, limits, rules, rules_text } = load_director_and_rules(&args.director, Some(&args.rules))?;
    if let Some(n) = first_comment_line(&rules_text) {
        let p = args.rules.display();
        eprintln!("lvsnic: warning: {p}: line {n} is a `#` comment: lvsnic skips it, the real `ipvsadm -R` rejects the file");
    }
    let inp = args.input.display().to_string();
    let records = pcap::read_file(&args.input).map_err(|e| ReplayError::Pcap { path: inp.clone(), msg: e.to_string() })?;
    let changes = match &args.changes {
        Some(p) => Changes::load(p)?,
        None => Changes::default(),
    };
    let pcap_file = |p: &Path| PcapFile::create(p, pcap::Resolution::Nano).map_err(ReplayError::Output);
    let mut out_file = pcap_file(&args.output)?;
    let mut host_file = args.host.as_deref().map(pcap_file).transpose()?;
    let mut stats_file = args.stats.as_deref().map(|p| AtomicFile::create(p).map_err(ReplayError::Output)).transpose()?;
    let mut out = run_changes(args.backend, args.width, limits, cfg, &rules, &records, changes)?;
    if args.backend != Backend::Golden {
        out.report.offload = Some(OffloadCounts { in_hardware: out.in_hardware, table_full: out.table_full, evicted: out.evicted });
    }
    // Everything written first, then renamed: a failure leaves no output.
    out_file.write_records(&out.tx).map_err(ReplayError::Output)?;
    if let Some(h) = &mut host_file {
        h.write_records(&out.host).map_err(ReplayError::Output)?;
    }
    if let Some(s) = &mut stats_file {
        s.write_all_named((out.report.to_json() + "\n").as_bytes()).map_err(ReplayError::Output)?;
    }
    out_file.flush().map_err(ReplayError::Output)?;
    if let Some(h) = &mut host_file {
        h.flush().map_err(ReplayError::Output)?;
    }
    out_file.commit().map_err(ReplayError::Output)?;
    if let Some(h) = host_file {
        h.commit().map_err(ReplayError::Output)?;
    }
    if let Some(s) = stats_file {
        s.commit().map_err(ReplayError::Output)?;
    }
    let r = &out.report;
    let hw = if args.backend == Backend::Golden {
        String::new()
    } else {
        format!(" ({} frames in hardware, {} flows did not fit the card's tables)", out.in_hardware, out.table_full)
    };
    let listing = if args.list { format!("\n{}", out.listing) } else { String::new() };
    let intake = r.intake.unwrap_or_default();
    let rx = intake.dropped_on_receive;
    let rx_detail = [("empty", rx.empty), ("runt", rx.runt), ("oversize", rx.oversize), ("ring", rx.ring)]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(format!(
        "replay ({:?} backend): {} frames read: {} rate limited, {} dropped on receive{}, {} frames in, {} transmitted, {} to host, {} dropped{}; {} services, {} connections created, {} live",
        args.backend,
        intake.frames_read,
        intake.rate_limited,
        rx.total(),
        if rx_detail.is_empty() { String::new() } else { format!(" ({rx_detail})") },
        r.frames.input,
        r.frames.transmitted,
        r.frames.to_host,
        r.frames.dropped,
        if r.frames.held > 0 { format!(", {} fragments held for reassembly", r.frames.held) } else { String::new() },
        r.services.len(),
        r.connections.created,
        r.connections.live
    )
    .to_lowercase()
        + &hw
        + &listing)
}

/// The first line (1-based) that lvsnic's rules reader skips as a `#`
/// comment; ipvsadm 1.31's `-R` has no comments and rejects such a line.
pub fn first_comment_line(rules: &str) -> Option<usize> {
    rules.split('\n').position(|l| lvsnic_model::rules::ipvsadm::split_line(l).first().is_some_and(|w| w.starts_with('#'))).map(|i| i + 1)
}
