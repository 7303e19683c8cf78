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
use lvsnic_model::director::{Action, Director};
use lvsnic_model::pcap::{self, PcapRecord};
use lvsnic_model::rules::ipvsadm;
use lvsnic_model::stats::Report;
use std::path::{Path, PathBuf};

/// Which implementation of the data plane runs the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The golden model in software.
    Model,
}

/// Inputs and outputs of one replay.
#[derive(Clone, Debug)]
pub struct ReplayArgs {
    pub rules: PathBuf,
    pub director: PathBuf,
    pub input: PathBuf,
    pub output: PathBuf,
    pub host: Option<PathBuf>,
    pub stats: Option<PathBuf>,
    pub backend: Backend,
    /// Also print `ipvsadm -L -n --stats` and `ipvsadm -L -n` of the final state.
    pub list: bool,
}

/// A failure the user sees as one line.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{0}")]
    Config(#[from] lvsnic_model::config::ConfigError),
    #[error("{path}: {msg}")]
    Rules { path: String, msg: String },
    #[error("{path}: {msg}")]
    Pcap { path: String, msg: String },
    #[error("{0}")]
    Director(#[from] lvsnic_model::director::DirectorError),
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// What a replay produced.
pub struct ReplayOutcome {
    pub tx: Vec<PcapRecord>,
    pub host: Vec<PcapRecord>,
    pub report: Report,
    /// `ipvsadm -L -n --stats` followed by `ipvsadm -L -n` of the final state.
    pub listing: String,
}

fn read_rules(path: &Path) -> Result<lvsnic_model::rules::RuleSet, ReplayError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ReplayError::Io { path: p.clone(), source: e })?;
    ipvsadm::parse_rules(&text).map_err(|e| ReplayError::Rules { path: p, msg: e.to_string() })
}

/// Runs `records` through a fresh director.
pub fn run(cfg: DirectorConfig, rules: &lvsnic_model::rules::RuleSet, records: &[PcapRecord]) -> Result<ReplayOutcome, ReplayError> {
    let start = records.first().map(|r| r.ts_ns).unwrap_or(0);
    let mut d = Director::new(cfg, rules, start)?;
    let mut tx = Vec::with_capacity(records.len());
    let mut host = Vec::new();
    let mut extra = Vec::new();
    for r in records {
        let mut frame = r.data.clone();
        extra.clear();
        match d.process(r.ts_ns, &mut frame, &mut extra) {
            Action::Transmit => {
                tx.push(PcapRecord { ts_ns: r.ts_ns, orig_len: frame.len() as u32, data: frame });
                for f in extra.drain(..) {
                    tx.push(PcapRecord { ts_ns: r.ts_ns, orig_len: f.len() as u32, data: f });
                }
            }
            Action::ToHost(_) => host.push(r.clone()),
            Action::Drop(_) => {}
        }
    }
    let report = Report::of(&d);
    let (header, services) = lvsnic_model::stats::listings(&d);
    let stats_opts = ipvsadm::ListOptions { numeric: true, stats: true, ..Default::default() };
    let plain_opts = ipvsadm::ListOptions { numeric: true, ..Default::default() };
    let listing = ipvsadm::format_list(&header, &services, &stats_opts) + &ipvsadm::format_list(&header, &services, &plain_opts);
    Ok(ReplayOutcome { tx, host, report, listing })
}

/// The whole `lvsnic replay` command. Returns the one-line summary.
pub fn replay(args: &ReplayArgs) -> Result<String, ReplayError> {
    let cfg = DirectorConfig::load(&args.director)?;
    let rules = read_rules(&args.rules)?;
    let inp = args.input.display().to_string();
    let records = pcap::read_file(&args.input).map_err(|e| ReplayError::Pcap { path: inp.clone(), msg: e.to_string() })?;
    let out = match args.backend {
        Backend::Model => run(cfg, &rules, &records)?,
    };
    let write = |path: &Path, recs: &[PcapRecord]| -> Result<(), ReplayError> {
        pcap::write_file(path, pcap::Resolution::Nano, recs.iter().cloned())
            .map_err(|e| ReplayError::Pcap { path: path.display().to_string(), msg: e.to_string() })
    };
    write(&args.output, &out.tx)?;
    if let Some(h) = &args.host {
        write(h, &out.host)?;
    }
    if let Some(s) = &args.stats {
        std::fs::write(s, out.report.to_json() + "\n")
            .map_err(|e| ReplayError::Io { path: s.display().to_string(), source: e })?;
    }
    let r = &out.report;
    let listing = if args.list { format!("\n{}", out.listing) } else { String::new() };
    Ok(format!(
        "replay ({:?} backend): {} frames in, {} transmitted, {} to host, {} dropped; {} services, {} connections created, {} live",
        args.backend,
        r.frames.input,
        r.frames.transmitted,
        r.frames.to_host,
        r.frames.dropped,
        r.services.len(),
        r.connections.created,
        r.connections.live
    )
    .to_lowercase()
        + &listing)
}
