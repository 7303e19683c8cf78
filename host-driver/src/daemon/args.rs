//! What `lvsnic daemon` takes: the backend, the wire, the pace of a pcap
//! wire, VIP ownership, and all of its arguments.

use std::path::PathBuf;

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
    /// Control socket (default: `LVSNIC_SOCKET`, else /run/lvsnic/lvsnic.sock).
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
    /// `--socket-group NAME|GID` (resolved): the socket is 0660 with this
    /// group, whose members may list ([`super::socket`]).
    pub socket_group: Option<u32>,
    /// Where the running state is kept ([`crate::state::state_dir`]).
    pub state_dir: Option<PathBuf>,
    /// `--create-taps`: TAP devices named by `--wire tap:` and `--host-tap`
    /// are created when missing (otherwise a missing one is an error).
    pub create_taps: bool,
    /// `--neighbor-reachable-ms`: how long a learned MAC is trusted
    /// before it is asked again.
    pub neighbor_reachable_ms: u64,
    /// `--log-level`: the least severe event logged ([`crate::logging`]).
    pub log_level: log::LevelFilter,
    /// `--metrics ADDR:PORT`: serve Prometheus metrics there
    /// ([`super::metrics`]).
    pub metrics: Option<std::net::SocketAddr>,
    /// `--loop-cpu CPU`: the forwarding loop alone on this CPU, every
    /// other thread on the rest ([`super::placement`]).
    pub loop_cpu: Option<usize>,
    /// `--loop-nice NICE`: the forwarding loop's nice value
    /// ([`crate::bulk::raise_loop`]).
    pub loop_nice: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_specs_parse_or_say_what_is_expected() {
        assert_eq!(
            "pcap:a.pcap,b.pcap".parse::<WireSpec>(),
            Ok(WireSpec::Pcap { input: "a.pcap".into(), output: "b.pcap".into(), host: None })
        );
        assert_eq!(
            "pcap:a,b,c".parse::<WireSpec>(),
            Ok(WireSpec::Pcap { input: "a".into(), output: "b".into(), host: Some("c".into()) })
        );
        assert_eq!("tap:lvs0".parse::<WireSpec>(), Ok(WireSpec::Tap("lvs0".into())));
        for bad in ["pcap:a", "pcap:a,,b", "pcap:a,b,c,d", "pcap:"] {
            assert_eq!(bad.parse::<WireSpec>(), Err("expected pcap:IN.pcap,OUT.pcap[,HOST.pcap]".into()), "{bad}");
        }
        assert_eq!("tap:".parse::<WireSpec>(), Err("expected tap:NAME".into()));
        assert_eq!("eth0".parse::<WireSpec>(), Err("expected pcap:IN.pcap,OUT.pcap or tap:NAME".into()));
    }

    #[test]
    fn vip_mode_names_are_the_option_values() {
        use clap::ValueEnum;
        for m in [VipMode::Master, VipMode::Backup, VipMode::Host] {
            assert_eq!(m.to_possible_value().unwrap().get_name(), m.name());
        }
    }
}
