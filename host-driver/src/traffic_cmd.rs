//! `lvsnic traffic`: write a seeded, realistic capture of what arrives at
//! the director's NIC.
//!
//! ```text
//! lvsnic traffic --rules RULES --director DIRECTOR.toml --output OUT.pcap
//!                [--seed N] [--connections N] [--clients N] [--duration SECONDS]
//!                [--malformed F] [--other F] [--udp F] [--idle-gap SECONDS] [--port-reuse F]
//!                [--flows N [--packets M] [--payload BYTES]] [--micro]
//! ```
//!
//! Without `--flows`, the closed-loop generator
//! ([`lvsnic_traffic::generate_capture`]); with it, the open-loop
//! established traffic of the benchmarks
//! ([`lvsnic_traffic::established_flows`]). Prints one summary line.

use lvsnic_model::config::DirectorConfig;
use lvsnic_model::pcap::{PcapRecord, Resolution};
use lvsnic_model::rules::{ipvsadm, RuleSet};
use lvsnic_model::time::{Time, SEC};
use lvsnic_traffic::{self as traffic, FlowSpec, TrafficError, TrafficSpec};
use std::path::{Path, PathBuf};

/// Arguments of `lvsnic traffic`.
#[derive(Clone, Debug, clap::Args)]
pub struct TrafficArgs {
    /// Rules in `ipvsadm -S -n` format.
    #[arg(long)]
    pub rules: PathBuf,
    /// Director configuration (TOML).
    #[arg(long)]
    pub director: PathBuf,
    /// Capture to write (pcap, nanosecond timestamps unless --micro).
    #[arg(long)]
    pub output: PathBuf,
    /// Seed: the same arguments and seed give the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// TCP and UDP sessions the clients open [default: 1000].
    #[arg(long)]
    pub connections: Option<usize>,
    /// Distinct client addresses (in 198.18.0.0/15; towards IPv6 services
    /// the same in 2001:db8:c::/64) [default: 100; with --flows 256].
    #[arg(long)]
    pub clients: Option<usize>,
    /// Span of session start times, in seconds [default: 60].
    #[arg(long)]
    pub duration: Option<f64>,
    /// Share of deliberately malformed frames, 0..1 [default: 0.01].
    #[arg(long)]
    pub malformed: Option<f64>,
    /// Share of "other" frames (ARP, ICMP, IPv6, ...), 0..1 [default: 0.05].
    #[arg(long)]
    pub other: Option<f64>,
    /// Share of UDP sessions, 0..1 [default: 0.2].
    #[arg(long)]
    pub udp: Option<f64>,
    /// Idle gap in seconds [default: the protocol's timeout plus 5-30 s].
    #[arg(long)]
    pub idle_gap: Option<f64>,
    /// Share of sessions that reuse the client port of an earlier one after
    /// its TIME_WAIT (61-90 s after its close), 0..1 [default: 0.03].
    #[arg(long)]
    pub port_reuse: Option<f64>,
    /// Open loop: establish N flows, then send --packets data frames round-robin.
    #[arg(long)]
    pub flows: Option<usize>,
    /// Data frames after the handshakes (with --flows).
    #[arg(long, default_value_t = 100_000, requires = "flows")]
    pub packets: usize,
    /// Payload bytes per data frame (with --flows) [default: 512].
    #[arg(long, requires = "flows")]
    pub payload: Option<usize>,
    /// Write microsecond timestamps (the classic pcap format) instead of nanoseconds.
    #[arg(long)]
    pub micro: bool,
}

/// A failure the user sees as one line.
#[derive(Debug, thiserror::Error)]
pub enum TrafficCmdError {
    #[error("{0}")]
    Config(#[from] lvsnic_model::config::ConfigError),
    #[error("{path}: {msg}")]
    Rules { path: String, msg: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}")]
    Output(String),
    #[error("{0}")]
    Traffic(#[from] TrafficError),
    #[error("{0}")]
    Arg(String),
}

fn read_rules(path: &Path) -> Result<RuleSet, TrafficCmdError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TrafficCmdError::Io { path: p.clone(), source: e })?;
    ipvsadm::parse_rules(&text).map_err(|e| TrafficCmdError::Rules { path: p, msg: e.to_string() })
}

/// Seconds (a command-line number) to [`Time`].
fn seconds(name: &str, s: f64) -> Result<Time, TrafficCmdError> {
    if !s.is_finite() || !(0.0..=1e7).contains(&s) {
        return Err(TrafficCmdError::Arg(format!("--{name} {s}: expected seconds between 0 and 10000000")));
    }
    Ok((s * SEC as f64).round() as Time)
}

/// The whole `lvsnic traffic` command. Returns the one-line summary.
pub fn run(a: &TrafficArgs) -> Result<String, TrafficCmdError> {
    lvsnic::outfile::refuse_overlaps(&[("--rules", &a.rules), ("--director", &a.director)], &[("--output", &a.output)])
        .map_err(TrafficCmdError::Output)?;
    let cfg = DirectorConfig::load(&a.director)?;
    let rules = read_rules(&a.rules)?;
    let (records, summary) = match a.flows {
        Some(flows) => {
            let d = FlowSpec::default();
            let spec = FlowSpec {
                seed: a.seed,
                flows,
                packets: a.packets,
                clients: a.clients.unwrap_or(d.clients),
                payload_len: a.payload.unwrap_or(d.payload_len),
                ..d
            };
            let recs = traffic::established_flows(&spec, &cfg, &rules)?;
            let bytes: u64 = recs.iter().map(|r| r.data.len() as u64).sum();
            let s = format!("{} frames ({flows} flows, {} data frames), {bytes} bytes", recs.len(), a.packets);
            (recs, s)
        }
        None => {
            let d = TrafficSpec::default();
            let spec = TrafficSpec {
                seed: a.seed,
                connections: a.connections.unwrap_or(d.connections),
                clients: a.clients.unwrap_or(d.clients),
                duration: a.duration.map(|s| seconds("duration", s)).transpose()?.unwrap_or(d.duration),
                malformed_fraction: a.malformed.unwrap_or(d.malformed_fraction),
                other_fraction: a.other.unwrap_or(d.other_fraction),
                udp_fraction: a.udp.unwrap_or(d.udp_fraction),
                idle_gap: a.idle_gap.map(|s| seconds("idle-gap", s)).transpose()?,
                port_reuse_fraction: a.port_reuse.unwrap_or(d.port_reuse_fraction),
                ..d
            };
            let cap = traffic::generate_capture(&spec, &cfg, &rules)?;
            let c = &cap.counts;
            let span = match (cap.records.first(), cap.records.last()) {
                (Some(f), Some(l)) => (l.ts_ns - f.ts_ns) as f64 / SEC as f64,
                _ => 0.0,
            };
            let s = format!(
                "{} frames ({} session, {} other, {} malformed), {} connections ({} tcp, {} udp, {} ipv6), {} bytes, {span:.1} s",
                c.frames,
                c.session_frames,
                c.other_frames,
                c.malformed_frames,
                c.connections,
                c.tcp_sessions,
                c.udp_sessions,
                c.ipv6_sessions,
                c.bytes
            );
            (cap.records, s)
        }
    };
    write(&a.output, &records, if a.micro { Resolution::Micro } else { Resolution::Nano })?;
    Ok(format!("traffic (seed {}): {summary} -> {}", a.seed, a.output.display()))
}

/// Writes the capture under a temporary name and renames it over `path`
/// once complete (nothing partial is left on a failure).
fn write(path: &Path, recs: &[PcapRecord], res: Resolution) -> Result<(), TrafficCmdError> {
    let mut f = lvsnic::outfile::PcapFile::create(path, res).map_err(TrafficCmdError::Output)?;
    f.write_records(recs).map_err(TrafficCmdError::Output)?;
    f.commit().map_err(TrafficCmdError::Output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lvsnic_model::pcap;

    const DIRECTOR: &str =
        "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n\
        [neighbors]\n\"192.168.10.1\" = \"02:00:00:00:10:01\"\n\"192.168.10.2\" = \"02:00:00:00:10:02\"\n";
    const RULES: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1\n\
        -a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 1\n-A -u 10.0.0.100:53 -s rr\n\
        -a -u 10.0.0.100:53 -r 192.168.10.2:53 -m -w 1\n";

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn setup(name: &str) -> (Dir, TrafficArgs) {
        let dir = std::env::temp_dir().join(format!("lvsnic-traffic-cmd-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("DIRECTOR.toml"), DIRECTOR).unwrap();
        std::fs::write(dir.join("rules"), RULES).unwrap();
        let args = TrafficArgs {
            rules: dir.join("rules"),
            director: dir.join("DIRECTOR.toml"),
            output: dir.join("in.pcap"),
            seed: 5,
            connections: Some(40),
            clients: Some(10),
            duration: Some(5.0),
            malformed: None,
            other: None,
            udp: None,
            idle_gap: None,
            port_reuse: None,
            flows: None,
            packets: 100_000,
            payload: None,
            micro: false,
        };
        (Dir(dir), args)
    }

    #[test]
    fn writes_the_capture_and_one_line() {
        let (dir, args) = setup("ok");
        let line = run(&args).unwrap();
        assert!(line.starts_with("traffic (seed 5): "), "{line}");
        assert!(line.contains("40 connections"), "{line}");
        assert!(!line.contains('\n'));
        let recs = pcap::read_file(&args.output).unwrap();
        let frames: usize = line.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert_eq!(recs.len(), frames);
        let first = std::fs::read(&args.output).unwrap();
        run(&args).unwrap();
        assert_eq!(std::fs::read(&args.output).unwrap(), first, "same seed, same bytes");
        // Microsecond file: same frames, order kept.
        let micro = TrafficArgs { micro: true, output: dir.0.join("us.pcap"), ..args.clone() };
        run(&micro).unwrap();
        let us = pcap::read_file(&micro.output).unwrap();
        assert_eq!(us.len(), recs.len());
        assert!(us.windows(2).all(|w| w[1].ts_ns > w[0].ts_ns));
        // No port reuse: no session waits for a TIME_WAIT, so the capture is shorter.
        let short = TrafficArgs { idle_gap: Some(1.0), output: dir.0.join("r.pcap"), ..args.clone() };
        let line = run(&short).unwrap();
        let no_reuse = TrafficArgs { port_reuse: Some(0.0), output: dir.0.join("nr.pcap"), ..short };
        let line_nr = run(&no_reuse).unwrap();
        let span = |l: &str| l.split(" s -> ").next().unwrap().rsplit(' ').next().unwrap().parse::<f64>().unwrap();
        assert!(span(&line_nr) < span(&line), "{line_nr} vs {line}");
        // Open loop.
        let flows = TrafficArgs { flows: Some(20), packets: 300, ..args };
        let line = run(&flows).unwrap();
        assert!(line.contains("20 flows, 300 data frames"), "{line}");
        assert!(pcap::read_file(&flows.output).unwrap().len() > 300 + 40);
    }

    #[test]
    fn ipv6_services_get_ipv6_sessions() {
        let (dir, args) = setup("v6");
        let line = run(&args).unwrap();
        assert!(line.contains("udp, 0 ipv6)"), "{line}");
        std::fs::write(
            dir.0.join("DIRECTOR.toml"),
            format!("{DIRECTOR}\"2001:db8:a::5\" = \"02:00:00:00:a0:05\"\n"),
        )
        .unwrap();
        let v6 = "-A -t [2001:db8::10]:80 -s rr\n-a -t [2001:db8::10]:80 -r [2001:db8:a::5]:8080 -m -w 1\n";
        std::fs::write(dir.0.join("rules"), format!("{RULES}{v6}")).unwrap();
        let line = run(&args).unwrap();
        let n: usize = line.split(" udp, ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!(n > 5 && n < 40, "{line}");
        let recs = pcap::read_file(&args.output).unwrap();
        assert!(recs.iter().any(|r| r.data[12..14] == [0x86, 0xdd] && r.data[20] == 6), "IPv6 TCP frames");
    }

    #[test]
    fn errors_are_one_line() {
        let (dir, args) = setup("err");
        let missing = TrafficArgs { rules: dir.0.join("nope"), ..args.clone() };
        let e = run(&missing).unwrap_err().to_string();
        assert!(e.contains("nope") && !e.contains('\n'), "{e}");
        let e = run(&TrafficArgs { other: Some(2.0), ..args.clone() }).unwrap_err().to_string();
        assert_eq!(e, "invalid traffic spec: other_fraction 2 is not between 0 and 1");
        let e = run(&TrafficArgs { port_reuse: Some(1.5), ..args.clone() }).unwrap_err().to_string();
        assert_eq!(e, "invalid traffic spec: port_reuse_fraction 1.5 is not between 0 and 1");
        let e = run(&TrafficArgs { duration: Some(-1.0), ..args.clone() }).unwrap_err().to_string();
        assert!(e.contains("--duration -1"), "{e}");
        let e = run(&TrafficArgs { idle_gap: Some(f64::INFINITY), ..args.clone() }).unwrap_err().to_string();
        assert!(e.contains("--idle-gap inf"), "{e}");
        std::fs::write(dir.0.join("bad"), "-A -t nonsense\n").unwrap();
        let e = run(&TrafficArgs { rules: dir.0.join("bad"), ..args.clone() }).unwrap_err().to_string();
        assert!(e.contains("bad") && !e.contains('\n'), "{e}");
        let e = run(&TrafficArgs { output: dir.0.join("no/such/dir/x.pcap"), ..args.clone() }).unwrap_err().to_string();
        assert!(e.contains("x.pcap") && !e.contains('\n'), "{e}");
        let e = run(&TrafficArgs { flows: Some(10), payload: Some(5000), ..args }).unwrap_err().to_string();
        assert!(e.contains("exceeds the MSS"), "{e}");
    }
}
