//! `lvsnic conformance`: the golden model checked against real Linux IPVS.
//!
//! ```text
//! lvsnic conformance --rules RULES --director DIRECTOR.toml --input IN.pcap
//!                    [--changes CHANGES] [--report REPORT.json] [--keep DIR]
//! ```
//! Boots the Debian kernel in a VM (`scripts/vm/run.sh`), configures a
//! director there as DIRECTOR.toml says, loads RULES with the real
//! `ipvsadm -R`, replays IN.pcap at the capture's pace and captures what it
//! transmits (`scripts/vm/director.sh`); runs the golden model on the same
//! input and compares ([`compare`]). See docs/conformance.md.

pub mod compare;
pub mod fields;
pub mod split;
pub mod vm;

use crate::replay::{self, Backend};
use crate::changes::{self, Changes};
use lvsnic_model::pcap::{self, PcapRecord};
use std::path::{Path, PathBuf};

/// A run that could not compare, as one line.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    /// Loading the director, the rules or the input for lvsnic's side failed.
    #[error("{0}")]
    Replay(#[from] replay::ReplayError),
    /// DIRECTOR.toml or the rules file.
    #[error("{0}")]
    Load(#[from] crate::setup::LoadError),
    /// The `--changes` file is unreadable or invalid, or lvsnic refused one
    /// of its changes.
    #[error("{0}")]
    Changes(#[from] changes::ChangeError),
    /// A capture could not be read or written.
    #[error("{path}: {msg}")]
    Pcap {
        /// The capture file.
        path: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A file of the work directory or the report could not be read or
    /// written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The VM could not run (no kernel image, did not boot, timed out).
    #[error("{0}")]
    Vm(String),
    /// The kernel director refused its set-up (e.g. `ipvsadm -R` rejected the rules).
    #[error("kernel: {0}")]
    Kernel(String),
    /// The tester in the VM did not replay every input frame unchanged and
    /// in order; says which.
    #[error("replay lost frames: {0}")]
    LostFrames(String),
}

/// `lvsnic conformance` arguments.
#[derive(Clone, Debug)]
pub struct ConformanceArgs {
    /// The rules (`--rules`, `ipvsadm -R`/`-S` format).
    pub rules: PathBuf,
    /// The director's configuration (`--director DIRECTOR.toml`).
    pub director: PathBuf,
    /// The capture replayed into both directors (`--input IN.pcap`).
    pub input: PathBuf,
    /// Rule changes at capture times (`--changes`), applied on both sides.
    pub changes: Option<PathBuf>,
    /// Where to write the comparison's [`Summary`](compare::Summary) as
    /// JSON (`--report`).
    pub report: Option<PathBuf>,
    /// Keep the work directory (all pcaps, logs) here.
    pub keep: Option<PathBuf>,
    /// Matching window in capture time, ms.
    pub window_ms: u64,
    /// Which part of the run to do (`--stage`).
    pub stage: Stage,
    /// `--scenarios FILE`: one report line per scenario of a merged replay ([`split`]).
    pub scenarios: Option<PathBuf>,
}

/// What one invocation does (several scenarios share one VM boot with
/// `prepare` for each, `scripts/vm/scenarios.sh` in one VM, `compare` for each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Stage {
    /// Write the work directory, run the VM, compare.
    #[default]
    All,
    /// Only write the work directory (`--keep DIR`) and lvsnic's outputs.
    Prepare,
    /// Only compare, with the kernel's captures already in `--keep DIR`.
    Compare,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ConformanceError + '_ {
    move |source| ConformanceError::Io { path: path.display().to_string(), source }
}

fn read_pcap(path: &Path) -> Result<Vec<PcapRecord>, ConformanceError> {
    pcap::read_file(path).map_err(|e| ConformanceError::Pcap { path: path.display().to_string(), msg: e.to_string() })
}

fn write_pcap(path: &Path, recs: &[PcapRecord]) -> Result<(), ConformanceError> {
    pcap::write_file(path, pcap::Resolution::Nano, recs.iter().cloned())
        .map_err(|e| ConformanceError::Pcap { path: path.display().to_string(), msg: e.to_string() })
}

/// A work directory the VM can write: `--keep DIR`, else a fresh one under
/// `$HOME/.cache/lvsnic` (the VM's /tmp is its own).
fn work_dir(keep: Option<&Path>) -> Result<PathBuf, ConformanceError> {
    let d = match keep {
        Some(k) => k.to_path_buf(),
        None => {
            let base = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
            base.join(".cache/lvsnic").join(format!("conformance.{}", std::process::id()))
        }
    };
    std::fs::create_dir_all(&d).map_err(io(&d))?;
    std::fs::canonicalize(&d).map_err(io(&d))
}

/// Runs the comparison; returns the summary (the caller prints
/// [`compare::Summary::text`] and exits non-zero on unexplained
/// differences), or `None` for `--stage prepare`.
pub fn run(args: &ConformanceArgs) -> Result<Option<compare::Summary>, ConformanceError> {
    if args.stage != Stage::All && args.keep.is_none() {
        return Err(ConformanceError::Vm("--stage prepare|compare needs --keep DIR".into()));
    }
    // `--set` lines in RULES: the real ipvsadm -R applies them after DIRECTOR.toml's.
    let crate::setup::Loaded { cfg, rules, rules_text, .. } =
        crate::setup::load_director_and_rules(&args.director, Some(&args.rules)).map_err(|e| match e {
            crate::setup::LoadError::Rules { path, msg } => {
                crate::setup::LoadError::Rules { path, msg: format!("lvsnic refuses the rules: {msg}") }
            }
            e => e,
        })?;
    let input = read_pcap(&args.input)?;
    let changes = match &args.changes {
        Some(p) => Changes::load(p)?,
        None => Changes::default(),
    };
    let local = vm::local_addresses(&cfg, &rules, &changes);
    let local6 = vm::local_addresses6(&cfg, &rules, &changes);
    let scenarios = args.scenarios.as_deref().map(split::Scenarios::load).transpose().map_err(ConformanceError::Vm)?;

    let work = work_dir(args.keep.as_deref())?;
    let put = |name: &str, data: &[u8]| {
        let p = work.join(name);
        std::fs::write(&p, data).map_err(io(&p))
    };
    if args.stage != Stage::Compare {
        for stale in ["status", "kernel-out.pcap", "kernel-sent.pcap", "log.txt", "changes.log"] {
            let _ = std::fs::remove_file(work.join(stale));
        }
    }
    if args.stage != Stage::Compare {
        put("director.env", vm::director_env(&cfg, &local, &local6).as_bytes())?;
        put("rules.txt", rules_text.as_bytes())?;
        put("in.pcap", &std::fs::read(&args.input).map_err(io(&args.input))?)?;
        put("changes.txt", vm::changes_txt(&changes).as_bytes())?;
        // The golden model on the capture's own clock: bad input fails here, before the slow VM.
        replay::run_changes(Backend::Golden, 64, Default::default(), cfg.clone(), &rules, &input, changes.clone())?;
    }
    let vm_run = match args.stage {
        Stage::Prepare => return Ok(None),
        Stage::All => {
            let span = match (input.first(), input.last()) {
                (Some(a), Some(b)) => b.ts_ns.saturating_sub(a.ts_ns),
                _ => 0,
            };
            vm::run_vm(&work, span)
        }
        Stage::Compare => vm::check_status(&work),
    };
    let result = vm_run.and_then(|()| {
        let out = read_pcap(&work.join("kernel-out.pcap"))?;
        let sent = read_pcap(&work.join("kernel-sent.pcap"))?;
        let wire = vm::replayable(&input);
        vm::check_sent(&wire, &sent)?;
        let applied = vm::applied_changes(&work, &changes, &sent)?;
        Ok((out, sent, wire, applied))
    });
    let (kernel, sent, wire, applied) = match result {
        Ok(k) => k,
        Err(e) => {
            if args.keep.is_none() {
                eprintln!("lvsnic: work files kept in {}", work.display());
            }
            return Err(e);
        }
    };
    // The golden model on the kernel's clock: the frames as they reached the
    // kernel director (TCG falls behind the capture's pace; IPVS timers run
    // on the VM's clock), the changes when the VM applied them.
    // ... and on the kernel's jiffies: connection timers fire when the VM's
    // timer wheel fires them (divergence #5).
    let cfg_ip6 = cfg.ip6;
    let mut cfg = cfg;
    if let Some(k) = vm::vm_clock(&work, cfg.clock.map_or(250, |c| c.hz))? {
        cfg.clock = Some(k);
    }
    let golden = replay::run_changes(Backend::Golden, 64, Default::default(), cfg, &rules, &sent, applied)?;
    write_pcap(&work.join("lvsnic-out.pcap"), &golden.tx)?;
    write_pcap(&work.join("lvsnic-host.pcap"), &golden.host)?;
    let mine: Vec<std::net::IpAddr> =
        local.iter().map(|a| (*a).into()).chain(cfg_ip6.map(Into::into)).chain(local6.iter().map(|a| (*a).into())).collect();
    let cmp = compare::Compare {
        kernel: &kernel,
        lvsnic: &golden.tx,
        host: &golden.host,
        local: &mine,
        window_ns: args.window_ms * 1_000_000,
    };
    let summary = compare::Summary {
        input_frames: input.len(),
        not_replayed: input.len() - wire.len(),
        replay_lag_ms: vm::max_lag_ns(&wire, &sent) as f64 / 1e6,
        scenarios: scenarios.map(|s| s.compare(&cmp, &wire, &sent)).unwrap_or_default(),
        ..cmp.run()
    };
    if let Some(r) = &args.report {
        let json = serde_json::to_string_pretty(&summary).unwrap_or_default();
        std::fs::write(r, json + "\n").map_err(io(r))?;
    }
    if args.keep.is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(Some(summary))
}
