//! The `lvsnic` command.

use clap::{Parser, Subcommand};
use lvsnic::replay::{self, Backend, ReplayArgs};
use std::path::PathBuf;
use std::process::ExitCode;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Replay { rules, director, input, output, host, stats, backend, list } => {
            replay::replay(&ReplayArgs { rules, director, input, output, host, stats, backend, list }).map_err(|e| e.to_string())
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
