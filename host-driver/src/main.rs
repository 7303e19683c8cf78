//! The `lvsnic` command: subcommands (`replay`, `traffic`, `vectors`,
//! `daemon`, `status`, `wire`, `keepalived`, `checkers`, `vip`), or, when the first argument
//! starts with `-` (or there is none), an ipvsadm command line for the
//! daemon (see `lvsnic::cli`).

use clap::{Parser, Subcommand};
use lvsnic::daemon::proto::{self, Request};
use lvsnic::daemon::{DaemonArgs, DaemonBackend, Pace, WireSpec};
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
        /// Also print the services as `ipvsadm -L -n --stats`, `-L -n` and `-L -n --rate` show them at the end.
        #[arg(long)]
        list: bool,
        /// Data width of the simulated core (`--backend sim`): 64 or 512.
        #[arg(long, default_value_t = 64)]
        width: u32,
        /// Rule changes at capture times: lines `SECONDS ipvsadm-args`.
        #[arg(long)]
        changes: Option<PathBuf>,
    },
    /// Compare the golden model with real Linux IPVS in a VM on the same capture.
    Conformance {
        /// Rules in `ipvsadm -S -n` format, given unchanged to the kernel's `ipvsadm -R`.
        #[arg(long)]
        rules: PathBuf,
        /// Director configuration (TOML) the VM's director is set up from.
        #[arg(long)]
        director: PathBuf,
        /// Frames replayed into both directors at the capture's pace (pcap).
        #[arg(long)]
        input: PathBuf,
        /// Rule changes at capture times: lines `SECONDS ipvsadm-args`.
        #[arg(long)]
        changes: Option<PathBuf>,
        /// Write the comparison as JSON.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Keep every pcap and log in DIR.
        #[arg(long)]
        keep: Option<PathBuf>,
        /// Matching window in capture time (ms).
        #[arg(long, default_value_t = 1000)]
        window_ms: u64,
        /// `prepare` (work directory only) or `compare` (kernel captures already in --keep DIR).
        #[arg(long, value_enum, default_value = "all")]
        stage: lvsnic::conformance::Stage,
        /// Scenarios of a merged replay: lines `NAME ADDRESS...` (the VIPs and
        /// real servers each owns); one report line per scenario.
        #[arg(long)]
        scenarios: Option<PathBuf>,
    },
    /// Write a seeded, realistic capture of what arrives at the director's NIC.
    Traffic(traffic_cmd::TrafficArgs),
    /// Measure the simulated RTL core: throughput and latency streaming
    /// established-flow frames, or simulation speed on test vectors.
    #[cfg(feature = "sim")]
    SimBench {
        /// Data width of the core: 64 or 512.
        #[arg(long, default_value_t = 64)]
        width: u32,
        /// Frame length in bytes (Ethernet header to end of payload, no FCS):
        /// 60..=9014 (IPv6 modes: 74..=9014).
        #[arg(long, default_value_t = 64)]
        frame_len: usize,
        #[arg(long, value_enum, default_value = "nat")]
        mode: lvsnic::sim_bench::BenchMode,
        /// Frames to stream.
        #[arg(long, default_value_t = 2000)]
        frames: usize,
        /// Measure every frame length in `FIRST..LAST` (inclusive, bytes,
        /// within 60..=9014, 74..=9014 for IPv6 modes) and report the worst utilization and latency,
        /// and the clock 10/25/100 GbE line rate needs at the worst length.
        #[arg(long, value_name = "FIRST..LAST")]
        sweep: Option<String>,
        /// With `--sweep`: measure every STEP-th length.
        #[arg(long, default_value_t = 1)]
        step: usize,
        /// Measure simulation speed on `lvsnic vectors` output instead.
        #[arg(long)]
        vectors: Option<PathBuf>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
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
    /// Run the director: control socket, exception loop over a wire.
    Daemon {
        /// Data-plane implementation: no default, so that a host with a
        /// card never runs the software model by mistake (`vfio` or
        /// `etherbone` for a card, `model` or `sim` to run without one).
        #[arg(long, value_enum)]
        backend: DaemonBackend,
        /// Director configuration (TOML).
        #[arg(long, default_value = "/etc/lvsnic/director.toml")]
        director: PathBuf,
        /// Control socket to listen on (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
        /// Rules to start with (`ipvsadm -S -n` format).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Frames: `pcap:IN.pcap,OUT.pcap[,HOST.pcap]` or `tap:NAME`.
        #[arg(long)]
        wire: Option<WireSpec>,
        /// How a pcap wire is played.
        #[arg(long, value_enum, default_value = "asap")]
        pace: Pace,
        /// TAP device for the director's own network stack.
        #[arg(long)]
        host_tap: Option<String>,
        /// Which VIPs are this director's: `master` (default, no VRRP:
        /// all, until `lvsnic vip backup`), `backup` (none until `lvsnic vip
        /// master`, for keepalived notify scripts) or `host` (those that are
        /// addresses of the director's own stack: keepalived's
        /// virtual_ipaddress, unchanged).
        #[arg(long, value_enum, default_value = "master")]
        vips: lvsnic::daemon::VipMode,
        /// PCI address of the card (`--backend vfio`), e.g. 0000:3b:00.0;
        /// the board's address (`--backend etherbone`), HOST[:PORT], e.g.
        /// 192.168.1.50 (Etherbone port 1234 by default).
        #[arg(long)]
        device: Option<String>,
        /// `--backend etherbone`: the glue's CSRs, as the byte address of
        /// glue_host_ip (the others follow one word apart in the documented
        /// order) or the build's csr.csv. Without it exceptions are awaited
        /// on UDP port 19542 and no glue counters are read.
        #[arg(long)]
        glue: Option<String>,
        /// `--backend etherbone`: local address to bind the management
        /// port's sockets to (default: any).
        #[arg(long)]
        bind: Option<std::net::IpAddr>,
        /// Data width of the simulated core (`--backend sim`): 64 or 512.
        #[arg(long, default_value_t = 64)]
        width: u32,
        /// The control socket is mode 0660 with this group (a name or a
        /// GID), whose members may list (`-L`, `-S`, status, checkers,
        /// vip); changes stay root's. Default: 0600, root only.
        #[arg(long, value_name = "NAME|GID", value_parser = lvsnic::daemon::socket::parse_group)]
        socket_group: Option<u32>,
        /// Where the running configuration and connections are kept across
        /// restarts (default: /var/lib/lvsnic for the default socket, else
        /// SOCKET.state).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// Create the TAP devices of `--wire tap:NAME` and `--host-tap` when
        /// they do not exist (without it a missing one is an error: a
        /// mistyped name would otherwise be a new device nothing is wired to).
        #[arg(long)]
        create_taps: bool,
        /// How long a real server's learned MAC is trusted before it is
        /// asked again (ARP), in ms: Linux's base_reachable_time_ms, 30000
        /// by default, so a MAC that changed without a gratuitous ARP is
        /// found (docs/user-guide.md, "Neighbours").
        #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
        neighbor_reachable_ms: u64,
        /// The least severe event written to the log (standard error; the
        /// journal under systemd): off, error, warn, info or debug.
        #[arg(long, default_value = "info")]
        log_level: log::LevelFilter,
        /// Serve Prometheus metrics over HTTP at ADDR:PORT (`GET /metrics`;
        /// text format 0.0.4, or OpenMetrics when asked for), e.g.
        /// 127.0.0.1:9742 or [::]:9742; port 0 picks a free one (printed at
        /// start). Metric list: docs/user-guide.md, "Metrics".
        #[arg(long, value_name = "ADDR:PORT")]
        metrics: Option<std::net::SocketAddr>,
        /// Run the forwarding loop alone on this CPU and every other thread
        /// of the daemon (control clients, state writer, health checkers,
        /// sync, metrics) on the CPUs left; default: no placement.
        #[arg(long, value_name = "CPU")]
        loop_cpu: Option<usize>,
        /// The forwarding loop's nice value, -20 to 19 (the kernel forwards
        /// in softirq context, above every process; the daemon's other
        /// threads keep the process's). Raising it needs CAP_SYS_NICE;
        /// without it the loop stays where it is, and says so at start.
        #[arg(long, value_name = "NICE", default_value_t = lvsnic::bulk::LOOP_NICE, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
        loop_nice: i32,
    },
    /// Apply DIRECTOR.toml and the rules file again, as differences (as SIGHUP does).
    Reload {
        /// The daemon's control socket (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
    },
    /// Take a real server out gently: weight 0, wait for its connections to end (or the timeout), then remove it.
    Drain {
        /// The daemon's control socket (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
        /// The service, VIP:PORT (TCP).
        #[arg(short = 't', long = "tcp-service", conflicts_with = "udp_service")]
        tcp_service: Option<String>,
        /// The service, VIP:PORT (UDP).
        #[arg(short = 'u', long = "udp-service")]
        udp_service: Option<String>,
        /// The real server, RIP:PORT.
        #[arg(short = 'r', long = "real-server")]
        real_server: String,
        /// Seconds to wait for its connections to end.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// Print the daemon's counters (JSON).
    Status {
        /// The daemon's control socket (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
    },
    /// Run frames of a daemon's `--pace step` pcap wire (all that are left by default).
    Wire {
        /// The daemon's control socket (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
        /// Run this many frames.
        #[arg(long)]
        frames: Option<u64>,
        /// Run every frame stamped at or before this time (ns since the epoch).
        #[arg(long)]
        until_ns: Option<u64>,
    },
    /// List the daemon's health checkers (from `keepalived --load`) and their state.
    Checkers {
        /// The daemon's control socket (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
    },
    /// VRRP (keepalived notify scripts): `vip master VIP...` takes the VIPs
    /// (answers ARP for them, load-balances, sends gratuitous ARPs),
    /// `vip backup|fault VIP...` releases them; `vip` lists them.
    Vip {
        /// The daemon's control socket (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
        /// The VRRP instance's new state.
        #[arg(value_enum, requires = "vips")]
        state: Option<proto::VrrpState>,
        /// The VIPs of the instance.
        vips: Vec<std::net::IpAddr>,
    },
    /// Write the man pages (lvsnic.8, lvsnic-SUBCOMMAND.8) into DIR (packaging).
    #[command(hide = true)]
    Manpages {
        /// Directory to write the pages to.
        dir: PathBuf,
    },
    /// Convert keepalived.conf virtual servers to `ipvsadm -S -n` rules (or load them).
    Keepalived {
        /// keepalived configuration file.
        file: PathBuf,
        /// Load the rules into the running daemon instead of printing them.
        #[arg(long)]
        load: bool,
        /// The daemon's control socket (default: $LVSNIC_SOCKET, else /run/lvsnic/lvsnic.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
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
    let params = lvsnic_model::hw::HwParams { data_width: 64, flow_buckets_log2, action_log2, vip_count, ipv6: true };
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

/// The subcommands, one line each, for `lvsnic --help` (after ipvsadm's
/// usage, which is what `lvsnic` with options is).
fn subcommand_help() -> String {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let mut s = String::from("\nSubcommands (lvsnic SUBCOMMAND --help; man lvsnic-SUBCOMMAND):\n");
    for c in cmd.get_subcommands().filter(|c| !c.is_hide_set()) {
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        s.push_str(&format!("  {:<12} {}\n", c.get_name(), about));
    }
    s
}

/// A request to the daemon from a subcommand: prints the reply, returns its status.
fn call(socket: Option<&std::path::Path>, req: &Request) -> u8 {
    let path = lvsnic::cli::socket_path(socket);
    match proto::call(&path, req) {
        Ok(r) => lvsnic::cli::emit(&r) as u8,
        Err(e) => {
            eprintln!("lvsnic: {}", proto::reach_text(&path, &e));
            2
        }
    }
}

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let prog = argv.next().unwrap_or_else(|| "lvsnic".into());
    let args: Vec<String> = argv.collect();
    // `lvsnic --help`: ipvsadm's usage, then the subcommands (invoked as
    // `ipvsadm`, exactly ipvsadm's usage).
    let as_ipvsadm = std::path::Path::new(&prog).file_name().is_some_and(|n| n == "ipvsadm");
    if !as_ipvsadm && matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        print!("{}{}", lvsnic::invocation::usage(&prog), subcommand_help());
        return ExitCode::SUCCESS;
    }
    if lvsnic::cli::is_ipvsadm_mode(&args) {
        return ExitCode::from(lvsnic::cli::run_ipvsadm(&prog, &args) as u8);
    }
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Daemon { backend, director, socket, rules, wire, pace, host_tap, vips, device, glue, bind, width, socket_group, state_dir, create_taps, neighbor_reachable_ms, log_level, metrics, loop_cpu, loop_nice } => {
            lvsnic::daemon::run(&DaemonArgs { backend, director, socket, rules, wire, pace, host_tap, vips, device, glue, bind, width, socket_group, state_dir, create_taps, neighbor_reachable_ms, log_level, metrics, loop_cpu, loop_nice })
                .map_err(|e| e.to_string())
        }
        Cmd::Manpages { dir } => {
            use clap::CommandFactory;
            lvsnic::manpages::write(Cli::command(), &dir)
                .map(|p| format!("{} man pages in {}", p.len(), dir.display()))
                .map_err(|e| format!("{}: {e}", dir.display()))
        }
        Cmd::Reload { socket } => return ExitCode::from(call(socket.as_deref(), &Request::Reload { rules: None, health: None })),
        Cmd::Drain { socket, tcp_service, udp_service, real_server, timeout } => {
            let svc = match (tcp_service, udp_service) {
                (Some(t), _) => ("-t", t),
                (None, Some(u)) => ("-u", u),
                (None, None) => {
                    eprintln!("lvsnic drain: -t VIP:PORT or -u VIP:PORT is needed");
                    return ExitCode::from(2);
                }
            };
            let path = lvsnic::cli::socket_path(socket.as_deref());
            return ExitCode::from(lvsnic::drain::run(&path, svc, &real_server, timeout));
        }
        Cmd::Status { socket } => return ExitCode::from(call(socket.as_deref(), &Request::Status)),
        Cmd::Checkers { socket } => return ExitCode::from(call(socket.as_deref(), &Request::Checkers)),
        Cmd::Vip { socket, state, vips } => return ExitCode::from(call(socket.as_deref(), &Request::Vip { state, vips })),
        Cmd::Wire { socket, frames, until_ns } => {
            return ExitCode::from(call(socket.as_deref(), &Request::Wire { frames, until_ns }))
        }
        Cmd::Keepalived { file, load, socket } => return ExitCode::from(lvsnic::keepalived::run(&prog, &file, load, socket.as_deref())),
        Cmd::Replay { rules, director, input, output, host, stats, backend, list, width, changes } => {
            replay::replay(&ReplayArgs { rules, director, input, output, host, stats, backend, list, width, changes }).map_err(|e| e.to_string())
        }
        Cmd::Conformance { rules, director, input, changes, report, keep, window_ms, stage, scenarios } => {
            let a = lvsnic::conformance::ConformanceArgs { rules, director, input, changes, report, keep, window_ms, stage, scenarios };
            return match lvsnic::conformance::run(&a) {
                Ok(None) => ExitCode::SUCCESS,
                Ok(Some(s)) => {
                    print!("{}", s.text());
                    ExitCode::from(u8::from(s.any_unexplained()))
                }
                Err(e) => {
                    eprintln!("lvsnic: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Cmd::Traffic(args) => traffic_cmd::run(&args).map_err(|e| e.to_string()),
        #[cfg(feature = "sim")]
        Cmd::SimBench { width, mode, frames, sweep: Some(range), step, json, .. } => parse_range(&range)
            .and_then(|(a, b)| lvsnic::sim_bench::sweep(width, mode, a..=b, step, frames))
            .map(|r| {
                if json {
                    serde_json::to_string(&r).unwrap_or_default()
                } else {
                    format!(
                        "sim-bench sweep {} {} bits, {} lengths {}..={}: utilization min {:.4} ({} bytes), vs bound min {:.4} ({} bytes), {} below 0.99; latency {}..{} cycles; line rate at the worst length ({} bytes, {:.2} cycles/frame) needs {}",
                        r.mode, r.width, r.lengths, r.first_len, r.last_len, r.min_utilization, r.min_utilization_len,
                        r.min_utilization_vs_bound, r.min_utilization_vs_bound_len, r.below_goal.len(), r.latency_cycles_min, r.latency_cycles_max,
                        r.line_rate_worst_len, r.line_rate_worst_cycles_per_frame,
                        r.line_rate_clock.iter().map(|c| format!("{:.1} MHz for {} GbE", c.mhz, c.gbps)).collect::<Vec<_>>().join(", ")
                    )
                }
            }),
        #[cfg(feature = "sim")]
        Cmd::SimBench { width, frame_len, mode, frames, vectors, json, .. } => match vectors {
            Some(dir) => lvsnic::sim_bench::bench_vectors(width, &dir).map(|r| {
                if json {
                    serde_json::to_string(&r).unwrap_or_default()
                } else {
                    format!(
                        "sim-bench vectors: {} frames, {} cycles in {:.2} s: {:.0} frames/s, {:.2} M cycles/s ({} bits)",
                        r.frames, r.cycles, r.seconds, r.frames_per_sec, r.cycles_per_sec / 1e6, r.width
                    )
                }
            }),
            None => lvsnic::sim_bench::bench(width, mode, frame_len, frames).map(|r| {
                if json {
                    serde_json::to_string(&r).unwrap_or_default()
                } else {
                    format!(
                        "sim-bench {} {} bits, {}-byte frames: {} frames in {} cycles, bus utilization {:.4}, latency {}..{} cycles, {} forwarded, {} to host",
                        r.mode, r.width, r.frame_len, r.frames, r.cycles, r.bus_utilization, r.latency_cycles_min, r.latency_cycles_max, r.forwarded, r.to_host
                    )
                }
            }),
        },
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
            "10", "--clients", "3", "--duration", "2.5", "--malformed", "0.02", "--other", "0.1", "--port-reuse", "0",
        ])
        .unwrap();
        let Cmd::Traffic(a) = cli.cmd else { panic!("not traffic") };
        assert_eq!((a.seed, a.connections, a.clients, a.duration), (9, Some(10), Some(3), Some(2.5)));
        assert_eq!((a.malformed, a.other, a.flows, a.port_reuse), (Some(0.02), Some(0.1), None, Some(0.0)));
        // --packets only with --flows.
        assert!(Cli::try_parse_from(["lvsnic", "traffic", "--rules", "R", "--director", "D", "--output", "O", "--packets", "5"]).is_err());
        assert!(Cli::try_parse_from(["lvsnic", "traffic", "--rules", "R", "--director", "D"]).is_err());
    }
}

/// `FIRST..LAST` (or `FIRST..=LAST`), inclusive.
#[cfg(feature = "sim")]
fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("--sweep {s}: expected FIRST..LAST"))?;
    let b = b.strip_prefix('=').unwrap_or(b);
    let p = |x: &str| x.trim().parse::<usize>().map_err(|_| format!("--sweep {s}: `{x}` is not a length"));
    let (a, b) = (p(a)?, p(b)?);
    if a > b {
        return Err(format!("--sweep {s}: empty range"));
    }
    Ok((a, b))
}
