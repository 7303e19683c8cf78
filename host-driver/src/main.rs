//! The `lvsnic` command.

use clap::{Parser, Subcommand};
use lvsnic::replay::{self, Backend, ReplayArgs};
use std::path::PathBuf;
use std::process::ExitCode;

mod traffic_cmd;

#[derive(Parser)]
#[command(name = "lvsnic", version, about = "LVS/IPVS director on an FPGA SmartNIC")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a packet capture through the director and write what it transmits.
    Replay {
        /// Rules in `ipvsadm -S -n` format.
        #[arg(long)]
        rules: PathBuf,
        /// Director configuration (TOML).
        #[arg(long)]
        director: PathBuf,
        /// Frames arriving at the director's NIC (pcap).
        #[arg(long)]
        input: PathBuf,
        /// Frames the director transmits (pcap).
        #[arg(long)]
        output: PathBuf,
        /// Frames handed to the director's own network stack (pcap).
        #[arg(long)]
        host: Option<PathBuf>,
        /// Counters as JSON.
        #[arg(long)]
        stats: Option<PathBuf>,
        /// Data-plane implementation.
        #[arg(long, value_enum, default_value = "model")]
        backend: Backend,
        /// Also print the services as `ipvsadm -L -n --stats` and `-L -n` show them at the end.
        #[arg(long)]
        list: bool,
    },
    /// Write a seeded, realistic capture of what arrives at the director's NIC.
    Traffic(traffic_cmd::TrafficArgs),
    /// Write test vectors for a testbench of the RTL core (tables, input
    /// frames, expected forwarded and to-host frames; see docs/hardware.md).
    Vectors {
        #[arg(long)]
        rules: PathBuf,
        #[arg(long)]
        director: PathBuf,
        #[arg(long)]
        input: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Flow table buckets per way, log2 (the RTL's FLOW_BUCKETS_LOG2).
        #[arg(long, default_value_t = 8)]
        flow_buckets_log2: u32,
        /// Action entries, log2 (the RTL's ACTION_LOG2).
        #[arg(long, default_value_t = 8)]
        action_log2: u32,
        /// VIP entries (the RTL's VIP_COUNT).
        #[arg(long, default_value_t = 16)]
        vip_count: u32,
    },
}

#[allow(clippy::too_many_arguments)]
fn vectors(
    rules: &std::path::Path,
    director: &std::path::Path,
    input: &std::path::Path,
    out: &std::path::Path,
    flow_buckets_log2: u32,
    action_log2: u32,
    vip_count: u32,
) -> Result<String, String> {
    if !(4..=16).contains(&flow_buckets_log2) || !(4..=16).contains(&action_log2) || !(1..=32).contains(&vip_count) {
        return Err("table sizes out of range (flow buckets log2 and action log2: 4..=16, VIPs: 1..=32)".into());
    }
    let cfg = lvsnic_model::config::DirectorConfig::load(director).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(rules).map_err(|e| format!("{}: {e}", rules.display()))?;
    let rules = lvsnic_model::rules::ipvsadm::parse_rules(&text).map_err(|e| format!("{}: {e}", rules.display()))?;
    let recs = lvsnic_model::pcap::read_file(input).map_err(|e| format!("{}: {e}", input.display()))?;
    let params = lvsnic_model::hw::HwParams { data_width: 64, flow_buckets_log2, action_log2, vip_count };
    let s = lvsnic::vectors::write_vectors(out, cfg, &rules, &recs, params).map_err(|e| e.to_string())?;
    Ok(format!(
        "vectors: {} frames ({} forwarded, {} to host, {} aborted), {} flows, {} register writes -> {}",
        s.frames,
        s.forwarded,
        s.to_host,
        s.aborted,
        s.flows,
        s.register_writes,
        out.display()
    ))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Replay { rules, director, input, output, host, stats, backend, list } => {
            replay::replay(&ReplayArgs { rules, director, input, output, host, stats, backend, list }).map_err(|e| e.to_string())
        }
        Cmd::Traffic(args) => traffic_cmd::run(&args).map_err(|e| e.to_string()),
        Cmd::Vectors { rules, director, input, out, flow_buckets_log2, action_log2, vip_count } => {
            vectors(&rules, &director, &input, &out, flow_buckets_log2, action_log2, vip_count)
        }
    };
    match r {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lvsnic: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_arguments() {
        let cli = Cli::try_parse_from([
            "lvsnic", "traffic", "--rules", "R", "--director", "D", "--output", "O", "--seed", "9", "--connections",
            "10", "--clients", "3", "--duration", "2.5", "--malformed", "0.02", "--other", "0.1",
        ])
        .unwrap();
        let Cmd::Traffic(a) = cli.cmd else { panic!("not traffic") };
        assert_eq!((a.seed, a.connections, a.clients, a.duration), (9, Some(10), Some(3), Some(2.5)));
        assert_eq!((a.malformed, a.other, a.flows), (Some(0.02), Some(0.1), None));
        // --packets only with --flows.
        assert!(Cli::try_parse_from(["lvsnic", "traffic", "--rules", "R", "--director", "D", "--output", "O", "--packets", "5"]).is_err());
        assert!(Cli::try_parse_from(["lvsnic", "traffic", "--rules", "R", "--director", "D"]).is_err());
    }
}
