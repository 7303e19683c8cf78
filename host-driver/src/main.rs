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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Replay { rules, director, input, output, host, stats, backend, list } => {
            replay::replay(&ReplayArgs { rules, director, input, output, host, stats, backend, list }).map_err(|e| e.to_string())
        }
        Cmd::Traffic(args) => traffic_cmd::run(&args).map_err(|e| e.to_string()),
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
