//! IPVS rules as `ipvsadm` expresses them: virtual services and their real
//! servers.
//!
//! These are the *configuration* types (what `ipvsadm -S -n` saves and
//! `ipvsadm -R` restores). Runtime state (counters, scheduler state) lives in
//! [`crate::ipvs`]. The text formats are in [`ipvsadm`].
//!
//! IPv6 and fwmark services are represented and round-trip through the
//! ipvsadm formats; the director itself forwards IPv4 TCP/UDP services only
//! and rejects the others with a clear error when rules are loaded.

pub mod ipvsadm;

use std::fmt;
use std::net::IpAddr;

/// Transport protocol of a virtual service (`-t`, `-u`, `--sctp-service`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Protocol {
    /// TCP (`-t`).
    Tcp,
    /// UDP (`-u`).
    Udp,
    /// SCTP (`--sctp-service`).
    Sctp,
}

impl Protocol {
    /// IP protocol number (IPPROTO_*).
    pub fn number(self) -> u8 {
        match self {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Sctp => 132,
        }
    }

    /// Name as ipvsadm's `-L` prints it ("TCP", "UDP", "SCTP").
    pub fn list_name(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }
}

/// Address family of a fwmark service (`-f N` or `-f N -6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddressFamily {
    /// IPv4 (`AF_INET`).
    Inet,
    /// IPv6 (`AF_INET6`, `-6`).
    Inet6,
}

/// What identifies a virtual service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServiceKey {
    /// `-t|-u|--sctp-service addr:port`
    Addr {
        /// Transport protocol.
        proto: Protocol,
        /// Virtual address.
        addr: IpAddr,
        /// Virtual port (0 for a persistent port-0 service).
        port: u16,
    },
    /// `-f mark [-6]`
    Fwmark {
        /// Firewall mark.
        mark: u32,
        /// Address family of the marked packets.
        af: AddressFamily,
    },
}

impl ServiceKey {
    /// The IPv4 protocol/address/port of an IPv4 address service.
    pub fn as_ipv4(&self) -> Option<(Protocol, std::net::Ipv4Addr, u16)> {
        match *self {
            ServiceKey::Addr { proto, addr: IpAddr::V4(a), port } => Some((proto, a, port)),
            _ => None,
        }
    }
}

impl fmt::Display for ServiceKey {
    /// ipvsadm's `-S -n` spelling: `-t 10.0.0.1:80`, `-u [2001:db8::1]:53`, `-f 1 -6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceKey::Addr { proto, addr, port } => {
                let sw = match proto {
                    Protocol::Tcp => "-t",
                    Protocol::Udp => "-u",
                    Protocol::Sctp => "--sctp-service",
                };
                match addr {
                    IpAddr::V4(a) => write!(f, "{sw} {a}:{port}"),
                    IpAddr::V6(a) => write!(f, "{sw} [{a}]:{port}"),
                }
            }
            ServiceKey::Fwmark { mark, af: AddressFamily::Inet } => write!(f, "-f {mark}"),
            ServiceKey::Fwmark { mark, af: AddressFamily::Inet6 } => write!(f, "-f {mark} -6"),
        }
    }
}

/// Scheduler flags (`-b`), kernel `IP_VS_SVC_F_SCHED1..3`.
///
/// `sh-fallback` and `mh-fallback` are SCHED1, `sh-port` and `mh-port` are
/// SCHED2 (include/uapi/linux/ip_vs.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SchedFlags(pub u32);

impl SchedFlags {
    /// `IP_VS_SVC_F_SCHED1` (`sh-fallback`, `mh-fallback`).
    pub const SCHED1: u32 = 0x0008;
    /// `IP_VS_SVC_F_SCHED2` (`sh-port`, `mh-port`).
    pub const SCHED2: u32 = 0x0010;
    /// `IP_VS_SVC_F_SCHED3`.
    pub const SCHED3: u32 = 0x0020;

    /// Whether flag `bit` is set.
    pub fn contains(self, bit: u32) -> bool {
        self.0 & bit != 0
    }
    /// Whether no scheduler flag is set.
    pub fn is_empty(self) -> bool {
        self.0 & (Self::SCHED1 | Self::SCHED2 | Self::SCHED3) == 0
    }
    /// SH/MH fallback flag (SCHED1).
    pub fn fallback(self) -> bool {
        self.contains(Self::SCHED1)
    }
    /// SH/MH port flag (SCHED2).
    pub fn port(self) -> bool {
        self.contains(Self::SCHED2)
    }

    /// A flag by its ipvsadm/keepalived name: its bit and the scheduler it
    /// is limited to, if any.
    pub fn by_name(name: &str) -> Option<(u32, Option<&'static str>)> {
        Some(match name {
            "flag-1" => (Self::SCHED1, None),
            "flag-2" => (Self::SCHED2, None),
            "flag-3" => (Self::SCHED3, None),
            "sh-fallback" => (Self::SCHED1, Some("sh")),
            "sh-port" => (Self::SCHED2, Some("sh")),
            "mh-fallback" => (Self::SCHED1, Some("mh")),
            "mh-port" => (Self::SCHED2, Some("mh")),
            _ => return None,
        })
    }
}

/// Persistence granularity (`-M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Netmask {
    /// IPv4 dotted mask, host byte order (`0xffffff00` for 255.255.255.0).
    V4(u32),
    /// IPv6 prefix length 1..=128.
    V6(u8),
}

impl Netmask {
    /// The IPv4 default, 255.255.255.255 (one client address per template).
    pub const V4_DEFAULT: Netmask = Netmask::V4(0xffff_ffff);
    /// The IPv6 default, /128.
    pub const V6_DEFAULT: Netmask = Netmask::V6(128);
}

/// Tunnel encapsulation type of a `-i` real server (`--tun-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TunnelType {
    /// IP in IP (RFC 2003), the default.
    Ipip,
    /// GUE with its UDP destination port (`--tun-port`).
    Gue {
        /// UDP destination port.
        port: u16,
    },
    /// GRE.
    Gre,
}

/// Tunnel checksum option (`--tun-nocsum` default, `--tun-csum`, `--tun-remcsum`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TunnelCsum {
    /// `--tun-nocsum`: no checksum (the default).
    #[default]
    NoCsum,
    /// `--tun-csum`: checksum in the tunnel header.
    Csum,
    /// `--tun-remcsum`: remote checksum offload.
    RemCsum,
}

/// Packet-forwarding method of a real server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FwdMethod {
    /// `-m`: NAT (IP_VS_CONN_F_MASQ).
    Masq,
    /// Local node (IP_VS_CONN_F_LOCALNODE): set by the kernel when the real
    /// server address is local; saved as `-g`.
    Local,
    /// `-i`: tunnelling (IP_VS_CONN_F_TUNNEL).
    Tunnel {
        /// Encapsulation.
        tun: TunnelType,
        /// Tunnel checksum option.
        csum: TunnelCsum,
    },
    /// `-g`: direct routing (IP_VS_CONN_F_DROUTE), ipvsadm's default.
    Route,
}

impl FwdMethod {
    /// IPIP tunnel, the only tunnel the director transmits.
    pub const IPIP: FwdMethod = FwdMethod::Tunnel { tun: TunnelType::Ipip, csum: TunnelCsum::NoCsum };

    /// The name `ipvsadm -L` prints in the Forward column.
    pub fn list_name(self) -> &'static str {
        match self {
            FwdMethod::Masq => "Masq",
            FwdMethod::Local => "Local",
            FwdMethod::Tunnel { .. } => "Tunnel",
            FwdMethod::Route => "Route",
        }
    }
}

/// A real server as configured (`-a`/`-e ... -r addr:port [-g|-m|-i] -w W -x U -y L`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestRule {
    /// Real server address.
    pub addr: IpAddr,
    /// Real server port (the service port when not given).
    pub port: u16,
    /// Forwarding method.
    pub fwd: FwdMethod,
    /// 0..=2147483647 (INT_MAX, Debian ipvsadm 1.31; 0 = quiescent).
    pub weight: u32,
    /// Upper connection threshold (`-x`), 0 = none.
    pub u_threshold: u32,
    /// Lower connection threshold (`-y`), 0 = none.
    pub l_threshold: u32,
}

/// A virtual service as configured (`-A`/`-E`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRule {
    /// What identifies the service.
    pub key: ServiceKey,
    /// Scheduler name as given to `-s` (default `wlc`).
    pub scheduler: String,
    /// Scheduler flags (`-b`).
    pub flags: SchedFlags,
    /// `-p [timeout]`: persistence timeout in seconds (default 360).
    pub persistent: Option<u32>,
    /// `-M`: persistence granularity.
    pub netmask: Netmask,
    /// `--pe`: persistence engine name (only `sip` exists).
    pub pe: Option<String>,
    /// `-o`: one-packet scheduling.
    pub ops: bool,
    /// Real servers in the order they were added (`-a` order). The kernel
    /// keeps them newest first; [`crate::ipvs`] does that reversal.
    pub dests: Vec<DestRule>,
}

impl ServiceRule {
    /// A service with ipvsadm's defaults (`wlc`, no persistence, host mask).
    pub fn new(key: ServiceKey) -> Self {
        let netmask = match key {
            ServiceKey::Addr { addr: IpAddr::V6(_), .. } | ServiceKey::Fwmark { af: AddressFamily::Inet6, .. } => {
                Netmask::V6_DEFAULT
            }
            _ => Netmask::V4_DEFAULT,
        };
        ServiceRule {
            key,
            scheduler: "wlc".to_string(),
            flags: SchedFlags::default(),
            persistent: None,
            netmask,
            pe: None,
            ops: false,
            dests: Vec::new(),
        }
    }
}

/// A whole rule set, services in the order they were added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// The services with their real servers.
    pub services: Vec<ServiceRule>,
}

/// Default persistence timeout when `-p` has no value (libipvs.h
/// `IPVS_SVC_PERSISTENT_TIMEOUT`, 6*60 s; ipvsadm(8) says 300, the code wins).
pub const DEFAULT_PERSISTENT_TIMEOUT: u32 = 360;
