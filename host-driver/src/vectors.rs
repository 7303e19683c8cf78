//! `lvsnic vectors`: test vectors for any testbench of `lvsnic_core`.
//!
//! The capture is replayed through the `model` backend (hardware model +
//! host slow path) with the given table sizes; the data plane's state is
//! snapshotted when it holds the most flows. The vectors are that state and
//! what the hardware model does with every input frame given it:
//!
//! | file | content |
//! |---|---|
//! | `manifest.json` | parameters, file list, frame counts, expected counters |
//! | `regs.txt` | `ADDR VALUE` (hex) AXI-Lite writes that load the state after reset |
//! | `flows.hex`, `actions.hex` | table images, one 160-bit slot / 256-bit action per line (`$readmemh`) |
//! | `input.pcap` | frames for `s_axis_rx`; `tuser` = timestamp (pcap time, ns), sequence = frame number from 1 |
//! | `expected_tx.pcap` | forwarded frames in order (aborted frames omitted) |
//! | `expected_tx.txt` | `SEQ` per forwarded frame |
//! | `expected_host.pcap` | frames on `m_axis_host` in order |
//! | `expected_host.txt` | `SEQ REASON HIT VIP HASH0 TS` per host frame (hex hash) |
//! | `expected_abort.txt` | `SEQ` of frames aborted on `m_axis_tx` |

use crate::device::model::ModelDevice;
use crate::device::rings::RingConfig;
use crate::replay::ReplayError;
use crate::slowpath::SlowPath;
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::Director;
use lvsnic_model::hw::{HwOutput, HwParams, HwPipeline};
use lvsnic_model::pcap::{self, PcapRecord, Resolution};
use lvsnic_model::rules::RuleSet;
use std::fmt::Write as _;
use std::path::Path;

/// What `vectors` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorSummary {
    /// Input frames.
    pub frames: usize,
    /// Of those, forwarded by the data plane.
    pub forwarded: usize,
    /// Handed to the host.
    pub to_host: usize,
    /// Aborted on `m_axis_tx` (and handed up).
    pub aborted: usize,
    /// Flow entries in the snapshot.
    pub flows: usize,
    /// Register writes that load the snapshot.
    pub register_writes: usize,
}

/// The data-plane snapshot with the most flows during a model replay.
pub fn snapshot(cfg: DirectorConfig, rules: &RuleSet, records: &[PcapRecord], params: HwParams) -> Result<HwPipeline, ReplayError> {
    let start = records.first().map(|r| r.ts_ns).unwrap_or(0);
    let d = Director::new(cfg, rules, start)?;
    let dev = ModelDevice::model(params, RingConfig::default()).map_err(|e| ReplayError::Device(e.to_string()))?;
    let mut sp = SlowPath::new(d, dev, params).map_err(|e| ReplayError::Device(e.to_string()))?;
    let mut best = sp.dp.card().core.hw.clone();
    let mut best_n = best.flow_count();
    for r in records {
        sp.frame(r.ts_ns, &r.data).map_err(|e| ReplayError::Device(e.to_string()))?;
        let n = sp.flows.len();
        if n > best_n {
            best = sp.dp.card().core.hw.clone();
            best_n = best.flow_count();
        }
    }
    Ok(best)
}

/// Writes the vectors of `records` to `dir`.
pub fn write_vectors(
    dir: &Path,
    cfg: DirectorConfig,
    rules: &RuleSet,
    records: &[PcapRecord],
    params: HwParams,
) -> Result<VectorSummary, ReplayError> {
    let io = |e: std::io::Error| ReplayError::Io { path: dir.display().to_string(), source: e };
    std::fs::create_dir_all(dir).map_err(io)?;
    let state = snapshot(cfg, rules, records, params)?;
    let writes = state.state_writes();
    let mut regs = String::new();
    for (a, v) in &writes {
        let _ = writeln!(regs, "{a:04x} {v:08x}");
    }
    std::fs::write(dir.join("regs.txt"), regs).map_err(io)?;
    // One entry per line, most significant word first (`$readmemh`).
    fn img<const N: usize>(v: &[[u32; N]]) -> String {
        v.iter().map(|b| b.iter().rev().map(|w| format!("{w:08x}")).collect::<String>() + "\n").collect()
    }
    std::fs::write(dir.join("flows.hex"), img(state.flow_image())).map_err(io)?;
    std::fs::write(dir.join("actions.hex"), img(state.action_image())).map_err(io)?;
    let mut hw = state.clone();
    hw.clear_activity();
    let (mut tx, mut host) = (Vec::new(), Vec::new());
    let (mut tx_txt, mut host_txt, mut abort_txt) = (String::new(), String::new(), String::new());
    let mut input = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let seq = i as u32 + 1;
        input.push(r.clone());
        match hw.process(&r.data, r.ts_ns, seq) {
            HwOutput::Forward { frame, seq } => {
                let _ = writeln!(tx_txt, "{seq}");
                tx.push(PcapRecord { ts_ns: r.ts_ns, orig_len: frame.len() as u32, data: frame });
            }
            HwOutput::ToHost { meta, frame } | HwOutput::Aborted { meta, frame } => {
                if meta.reason == lvsnic_model::hw::Reason::Truncated {
                    let _ = writeln!(abort_txt, "{seq}");
                }
                let _ = writeln!(
                    host_txt,
                    "{} {} {} {} {:08x} {}",
                    meta.seq, meta.reason as u8, meta.hit as u8, meta.vip as u8, meta.hash0, meta.ts
                );
                host.push(PcapRecord { ts_ns: r.ts_ns, orig_len: frame.len() as u32, data: frame });
            }
        }
    }
    let w = |name: &str, recs: &[PcapRecord]| {
        pcap::write_file(&dir.join(name), Resolution::Nano, recs.iter().cloned())
            .map_err(|e| ReplayError::Pcap { path: dir.join(name).display().to_string(), msg: e.to_string() })
    };
    w("input.pcap", &input)?;
    w("expected_tx.pcap", &tx)?;
    w("expected_host.pcap", &host)?;
    std::fs::write(dir.join("expected_tx.txt"), tx_txt).map_err(io)?;
    std::fs::write(dir.join("expected_host.txt"), host_txt).map_err(io)?;
    std::fs::write(dir.join("expected_abort.txt"), &abort_txt).map_err(io)?;
    let counters: Vec<u64> = (0..lvsnic_model::hw::regs::CNT_COUNT).map(|n| hw.counter(n)).collect();
    let summary = VectorSummary {
        frames: records.len(),
        forwarded: tx.len(),
        to_host: host.len(),
        aborted: abort_txt.lines().count(),
        flows: state.flow_count(),
        register_writes: writes.len(),
    };
    let manifest = serde_json::json!({
        "format": "lvsnic-vectors-1",
        "params": {
            "data_width_any": true,
            "flow_buckets_log2": params.flow_buckets_log2,
            "action_log2": params.action_log2,
            "vip_count": params.vip_count,
        },
        "files": ["regs.txt", "flows.hex", "actions.hex", "input.pcap", "expected_tx.pcap", "expected_tx.txt",
                  "expected_host.pcap", "expected_host.txt", "expected_abort.txt"],
        "frames": summary.frames,
        "forwarded": summary.forwarded,
        "to_host": summary.to_host,
        "aborted": summary.aborted,
        "flows": summary.flows,
        "expected_counters": counters,
    });
    std::fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n").map_err(io)?;
    Ok(summary)
}
