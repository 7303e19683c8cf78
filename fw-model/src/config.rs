//! `DIRECTOR.toml`: the director's own addresses, its neighbors, IPVS
//! timeouts and sysctls.
//!
//! ```toml
//! [director]
//! ip = "10.0.0.1"              # the director's own address (tunnel source, ICMP source)
//! mac = "02:00:00:00:00:01"    # the NIC's MAC (source of every transmitted frame)
//! mtu = 1500                   # egress MTU
//! gateway_mac = "02:00:00:00:00:fe"  # next hop for everything that is not a neighbor
//! vlan = "drop"                # 802.1Q-tagged frames: "drop" (Linux without a VLAN
//!                              # sub-interface) or "balance" (handled like untagged, tag kept)
//!
//! [neighbors]                  # real server IP -> MAC
//! "192.168.10.1" = "02:00:00:00:10:01"
//!
//! [timeouts]                   # ipvsadm --set tcp tcpfin udp (seconds, 0 = keep)
//! tcp = 900
//! tcpfin = 120
//! udp = 300
//!
//! [sysctl]                     # /proc/sys/net/ipv4/vs/* (kernel defaults shown)
//! expire_nodest_conn = 0
//! expire_quiescent_template = 0
//! conn_reuse_mode = 1
//! pmtu_disc = 1
//! secure_tcp = 0
//! sloppy_tcp = 0
//! nat_icmp_send = 0
//! ```

use crate::conn::tcp::{state, TcpTimeouts, UDP_DEFAULT_TIMEOUT};
use crate::time::{secs, Time};
use crate::wire::MacAddr;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// A problem with `DIRECTOR.toml`, as one line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file does not parse or holds a bad value.
    #[error("{path}: {msg}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, naming the section and key.
        msg: String,
    },
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// IPVS sysctls the model honours (`/proc/sys/net/ipv4/vs/*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysctl {
    /// Drop (0) or expire-and-reschedule (1) packets of conns whose server was deleted.
    pub expire_nodest_conn: bool,
    /// Invalidate templates of weight-0 servers.
    pub expire_quiescent_template: bool,
    /// 0, 1 (default), 2, 3: reschedule SYNs hitting TIME_WAIT/CLOSE (bit 0)
    /// and FIN_WAIT without output (bit 1).
    pub conn_reuse_mode: u8,
    /// Copy DF into the tunnel header and send FRAG_NEEDED (default 1).
    pub pmtu_disc: bool,
    /// Use the `tcp_states_dos` table.
    pub secure_tcp: bool,
    /// Schedule TCP conns on any segment without RST, not only SYN.
    pub sloppy_tcp: bool,
    /// Send port unreachable for unmatched packets from real servers.
    pub nat_icmp_send: bool,
    /// `net.ipv4.icmp_ratelimit` in ms (default 1000).
    pub icmp_ratelimit_ms: u32,
    /// `net.ipv4.icmp_ratemask` (default 6168).
    pub icmp_ratemask: u32,
    /// Connection table bits (`conn_tab_bits`, default 12): only what
    /// `ipvsadm -L` prints as `size=`.
    pub conn_tab_bits: u8,
}

impl Default for Sysctl {
    fn default() -> Self {
        Sysctl {
            expire_nodest_conn: false,
            expire_quiescent_template: false,
            conn_reuse_mode: 1,
            pmtu_disc: true,
            secure_tcp: false,
            sloppy_tcp: false,
            nat_icmp_send: false,
            icmp_ratelimit_ms: 1000,
            icmp_ratemask: 6168,
            conn_tab_bits: 12,
        }
    }
}

/// Protocol timeouts (the kernel's per-netns timeout tables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP timeout per state (`tcp_timeouts[]`; `ipvsadm --set` changes
    /// ESTABLISHED and FIN_WAIT).
    pub tcp: TcpTimeouts,
    /// UDP timeout (default 300 s), ns.
    pub udp: Time,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { tcp: TcpTimeouts::default(), udp: UDP_DEFAULT_TIMEOUT }
    }
}

impl Timeouts {
    /// `ip_vs_set_timeout` (`ipvsadm --set tcp tcpfin udp`): 0 keeps a value.
    pub fn set(&mut self, tcp: u32, tcpfin: u32, udp: u32) {
        if tcp != 0 {
            self.tcp.0[state::ESTABLISHED as usize] = secs(tcp as u64);
        }
        if tcpfin != 0 {
            self.tcp.0[state::FIN_WAIT as usize] = secs(tcpfin as u64);
        }
        if udp != 0 {
            self.udp = secs(udp as u64);
        }
    }

    /// The three values `ipvsadm -L --timeout` prints, in seconds.
    pub fn get(&self) -> (u32, u32, u32) {
        let s = |t: Time| (t / crate::time::SEC) as u32;
        (
            s(self.tcp.0[state::ESTABLISHED as usize]),
            s(self.tcp.0[state::FIN_WAIT as usize]),
            s(self.udp),
        )
    }
}

/// What the director does with 802.1Q-tagged frames (`[director] vlan`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VlanMode {
    /// Drop them, as a Linux director whose NIC has no VLAN sub-interface
    /// does (`vlan_do_receive` finds no device and marks the frame
    /// PACKET_OTHERHOST; counted as `OtherHost`). The default.
    #[default]
    Drop,
    /// Handle them like untagged frames and transmit with the same tag
    /// (a deliberate difference from Linux; `lvsnic conformance` reports the
    /// frames as explained).
    Balance,
}

/// The whole director configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectorConfig {
    /// The director's own address (`[director] ip`): tunnel and ICMP
    /// source.
    pub ip: Ipv4Addr,
    /// The NIC's MAC (`[director] mac`): source of every transmitted frame.
    pub mac: MacAddr,
    /// Egress MTU in bytes (`[director] mtu`, 68..=9216, default 1500).
    pub mtu: u16,
    /// Next-hop MAC for every destination that is not a neighbor
    /// (`[director] gateway_mac`).
    pub gateway_mac: MacAddr,
    /// What to do with 802.1Q-tagged frames (`[director] vlan`).
    pub vlan: VlanMode,
    /// Directly reachable hosts (real servers), IP to MAC (`[neighbors]`).
    pub neighbors: BTreeMap<Ipv4Addr, MacAddr>,
    /// Protocol timeouts (`[timeouts]`).
    pub timeouts: Timeouts,
    /// IPVS sysctls (`[sysctl]`).
    pub sysctl: Sysctl,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    director: RawDirector,
    #[serde(default)]
    neighbors: BTreeMap<String, String>,
    timeouts: Option<RawTimeouts>,
    sysctl: Option<RawSysctl>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDirector {
    ip: String,
    mac: String,
    mtu: Option<u32>,
    gateway_mac: String,
    vlan: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTimeouts {
    tcp: Option<u32>,
    tcpfin: Option<u32>,
    udp: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSysctl {
    expire_nodest_conn: Option<u8>,
    expire_quiescent_template: Option<u8>,
    conn_reuse_mode: Option<u8>,
    pmtu_disc: Option<u8>,
    secure_tcp: Option<u8>,
    sloppy_tcp: Option<u8>,
    nat_icmp_send: Option<u8>,
    icmp_ratelimit: Option<u32>,
    icmp_ratemask: Option<u32>,
    conn_tab_bits: Option<u8>,
}

impl DirectorConfig {
    /// Reads and validates a `DIRECTOR.toml` file.
    pub fn load(path: &std::path::Path) -> Result<Self, ConfigError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io { path: p.clone(), source: e })?;
        Self::parse(&text).map_err(|msg| ConfigError::Invalid { path: p, msg })
    }

    /// Parses `DIRECTOR.toml` text; the error is one line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| e.message().to_string().replace('\n', " "))?;
        let ip: Ipv4Addr =
            raw.director.ip.parse().map_err(|_| format!("[director] ip: '{}' is not an IPv4 address", raw.director.ip))?;
        let mac: MacAddr =
            raw.director.mac.parse().map_err(|_| format!("[director] mac: '{}' is not a MAC address", raw.director.mac))?;
        let gateway_mac: MacAddr = raw
            .director
            .gateway_mac
            .parse()
            .map_err(|_| format!("[director] gateway_mac: '{}' is not a MAC address", raw.director.gateway_mac))?;
        let mtu = raw.director.mtu.unwrap_or(1500);
        if !(68..=9216).contains(&mtu) {
            return Err(format!("[director] mtu: {mtu} is outside 68..=9216"));
        }
        let vlan = match raw.director.vlan.as_deref() {
            None | Some("drop") => VlanMode::Drop,
            Some("balance") => VlanMode::Balance,
            Some(x) => return Err(format!("[director] vlan: '{x}' is not \"drop\" or \"balance\"")),
        };
        let mut neighbors = BTreeMap::new();
        for (k, v) in &raw.neighbors {
            let a: Ipv4Addr = k.parse().map_err(|_| format!("[neighbors] '{k}' is not an IPv4 address"))?;
            let m: MacAddr = v.parse().map_err(|_| format!("[neighbors] {k}: '{v}' is not a MAC address"))?;
            neighbors.insert(a, m);
        }
        let mut timeouts = Timeouts::default();
        if let Some(t) = raw.timeouts {
            timeouts.set(t.tcp.unwrap_or(0), t.tcpfin.unwrap_or(0), t.udp.unwrap_or(0));
        }
        let mut sysctl = Sysctl::default();
        if let Some(s) = raw.sysctl {
            let b = |name: &str, v: Option<u8>, d: bool| -> Result<bool, String> {
                match v {
                    None => Ok(d),
                    Some(0) => Ok(false),
                    Some(1) => Ok(true),
                    Some(x) => Err(format!("[sysctl] {name}: {x} must be 0 or 1")),
                }
            };
            sysctl.expire_nodest_conn = b("expire_nodest_conn", s.expire_nodest_conn, false)?;
            sysctl.expire_quiescent_template = b("expire_quiescent_template", s.expire_quiescent_template, false)?;
            sysctl.pmtu_disc = b("pmtu_disc", s.pmtu_disc, true)?;
            sysctl.secure_tcp = b("secure_tcp", s.secure_tcp, false)?;
            sysctl.sloppy_tcp = b("sloppy_tcp", s.sloppy_tcp, false)?;
            sysctl.nat_icmp_send = b("nat_icmp_send", s.nat_icmp_send, false)?;
            if let Some(m) = s.conn_reuse_mode {
                if m > 3 {
                    return Err(format!("[sysctl] conn_reuse_mode: {m} must be 0..=3"));
                }
                sysctl.conn_reuse_mode = m;
            }
            if let Some(r) = s.icmp_ratelimit {
                sysctl.icmp_ratelimit_ms = r;
            }
            if let Some(m) = s.icmp_ratemask {
                sysctl.icmp_ratemask = m;
            }
            if let Some(b) = s.conn_tab_bits {
                if !(8..=20).contains(&b) {
                    return Err(format!("[sysctl] conn_tab_bits: {b} must be 8..=20"));
                }
                sysctl.conn_tab_bits = b;
            }
        }
        Ok(DirectorConfig { ip, mac, mtu: mtu as u16, gateway_mac, vlan, neighbors, timeouts, sysctl })
    }

    /// The MAC of the next hop towards `ip`: its neighbor entry, or the gateway.
    pub fn next_hop_mac(&self, ip: Ipv4Addr) -> MacAddr {
        self.neighbors.get(&ip).copied().unwrap_or(self.gateway_mac)
    }
}
