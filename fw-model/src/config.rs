//! `DIRECTOR.toml`: the director's own addresses, its neighbors, IPVS
//! timeouts and sysctls.
//!
//! ```toml
//! [director]
//! ip = "10.0.0.1"              # the director's own address (tunnel source, ICMP source)
//! mac = "02:00:00:00:00:01"    # the NIC's MAC (source of every transmitted frame)
//! mtu = 1500                   # egress MTU
//! gateway_mac = "02:00:00:00:00:fe"  # next hop for everything that is not a neighbor
//! gateway = "10.0.0.254"       # or its address: `lvsnic daemon` learns its MAC
//!                              # ("fib": the default route's, with --host-tap)
//!                              # (one of the two is needed; gateway_mac wins)
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
//! sync_threshold = "3 50"      # connection sync (docs/ha.md): threshold and period,
//!                              # as the proc file takes them ("T P" or "T" alone)
//! sync_refresh_period = 0      # seconds (the kernel stores jiffies)
//! sync_retries = 0             # 0..=3
//! sync_persist_mode = 0        # any integer, non-zero = on
//! sync_qlen_max = 4096         # the kernel's default is free memory / 32 pages
//! sync_version = 1             # lvsnic implements only 1
//! sync_ports = 1               # lvsnic implements only 1
//! sync_sock_size = 0           # lvsnic implements only 0
//!
//! [clock]                      # optional: time connection expiry as the kernel's
//! hz = 250                     # timer wheel does (CONFIG_HZ; Debian: 250)
//! jiffies = 4294937296         # optional anchor: jiffies ticked to this value ...
//! at_ns = 1764770000000000000  # ... at this capture time (ns since the epoch)
//! ```
//!
//! Without `[clock]` a connection expires at the first packet at or after
//! its exact deadline. With it (what `lvsnic conformance` uses, with the
//! anchor read off the VM's `/proc/timer_list`) timers are rounded up to
//! their timer-wheel level's granularity as Linux does (256 ms for a 10 s
//! timeout, 2.048 s for 20-120 s, 16.4 s for 300-900 s at HZ 250),
//! `ip_vs_conn_expire_now` acts at the next jiffy and the ICMP rate limiter
//! counts jiffies ([`KernelClock`]).
//!
//! The `sync_*` sysctls are validated as `/proc/sys/net/ipv4/vs/*` of
//! Linux 6.1 validates a write (`ip_vs_ctl.c`: `proc_do_sync_threshold`,
//! `proc_do_sync_ports`, `proc_dointvec_jiffies`, `proc_dointvec_minmax`
//! of `sync_retries` and `sync_version`, `proc_doulongvec_minmax` of
//! `sync_qlen_max`): a value the kernel refuses with `EINVAL` is an error
//! here, never clamped. Stricter than the kernel: a negative
//! `sync_refresh_period` (the kernel stores it and reads it back as a huge
//! unsigned period) is refused, and `sync_version`, `sync_ports` and
//! `sync_sock_size` take only the value lvsnic implements.

use crate::conn::tcp::{state, TcpTimeouts, UDP_DEFAULT_TIMEOUT};
use crate::sync::master::SyncSysctl;
use crate::time::{secs, KernelClock, Time};
use crate::wire::MacAddr;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

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
    /// The connection sync sysctls (`sync_threshold`, `sync_refresh_period`,
    /// `sync_retries`, `sync_persist_mode`, `sync_qlen_max`).
    pub sync: SyncSysctl,
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
            sync: SyncSysctl::default(),
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
    /// (`[director] gateway_mac`): static, it wins over what is learned
    /// for [`gateway`](Self::gateway). `None`: learned at run time
    /// (`resolve_neighbors`); a [`Director`](crate::director::Director)
    /// that does not learn refuses to start without it.
    pub gateway_mac: Option<MacAddr>,
    /// The gateway's address on the director's segment (`[director]
    /// gateway`): with [`resolve_neighbors`](Self::resolve_neighbors) and
    /// no `gateway_mac`, its MAC is resolved like a real server's and
    /// frames towards it are held until it is known.
    pub gateway: Option<Ipv4Addr>,
    /// `[director] gateway = "fib"`: the gateway is the default route's
    /// (main table) through the director's own stack (`lvsnic daemon
    /// --host-tap`), followed at run time into [`gateway`](Self::gateway).
    pub gateway_from_fib: bool,
    /// What to do with 802.1Q-tagged frames (`[director] vlan`).
    pub vlan: VlanMode,
    /// Directly reachable hosts (real servers), IP to MAC (`[neighbors]`).
    pub neighbors: BTreeMap<Ipv4Addr, MacAddr>,
    /// The director's own IPv6 address (`[director] ip6`, optional): the
    /// source of ip6ip6 tunnel headers. Without it IPv6 tunnel
    /// connections stay with the host stack.
    pub ip6: Option<Ipv6Addr>,
    /// Directly reachable IPv6 hosts, IPv6 address to MAC (`[neighbors]`
    /// keys that are IPv6 addresses). IPv6 destinations without an entry
    /// go through `gateway_mac`.
    pub neighbors6: BTreeMap<Ipv6Addr, MacAddr>,
    /// Protocol timeouts (`[timeouts]`).
    pub timeouts: Timeouts,
    /// IPVS sysctls (`[sysctl]`).
    pub sysctl: Sysctl,
    /// The kernel's jiffies and timer wheel (`[clock]`): `None` (no
    /// section) fires timers at their exact deadline.
    pub clock: Option<KernelClock>,
    /// Real servers' next-hop MACs are resolved at run time by the host
    /// (`lvsnic daemon`: the kernel's neighbour table, ARP on the wire)
    /// besides `[neighbors]`: a real server without an entry is accepted,
    /// and frames to it are marked unresolved until the host gives its MAC
    /// ([`Director::set_learned`](crate::director::Director::set_learned)).
    /// Not a key of the file; `false` (every real server needs a
    /// `[neighbors]` entry) unless the host sets it.
    pub resolve_neighbors: bool,
    /// IPv6 real servers' next-hop MACs are resolved at run time too (`lvsnic
    /// daemon --host-tap`: the kernel's neighbour table): an IPv6 real
    /// server without a `[neighbors]` entry is reached through the MAC the
    /// host learned for it, and frames to it are marked unresolved until
    /// then ([`Director::set_learned6`](crate::director::Director::set_learned6)).
    /// Without it such a real server is reached through `gateway_mac`. Not
    /// a key of the file; `false` unless the host sets it.
    pub resolve_neighbors6: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    director: RawDirector,
    #[serde(default)]
    neighbors: BTreeMap<String, String>,
    timeouts: Option<RawTimeouts>,
    sysctl: Option<RawSysctl>,
    clock: Option<RawClock>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClock {
    hz: Option<u32>,
    jiffies: Option<u64>,
    at_ns: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDirector {
    ip: String,
    mac: String,
    mtu: Option<u32>,
    gateway_mac: Option<String>,
    gateway: Option<String>,
    vlan: Option<String>,
    ip6: Option<String>,
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
    sync_threshold: Option<toml::Value>,
    sync_refresh_period: Option<i64>,
    sync_retries: Option<i64>,
    sync_persist_mode: Option<i64>,
    sync_qlen_max: Option<i64>,
    sync_version: Option<i64>,
    sync_ports: Option<i64>,
    sync_sock_size: Option<i64>,
}

impl DirectorConfig {
    /// Reads and validates a `DIRECTOR.toml` file.
    pub fn load(path: &std::path::Path) -> Result<Self, ConfigError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io { path: p.clone(), source: e })?;
        Self::parse(&text).map_err(|msg| ConfigError::Invalid { path: p, msg })
    }

    /// Parses `DIRECTOR.toml` text; the error is one line and starts with
    /// the line (and, for a TOML syntax or type error, the column) it is
    /// about: `line 3, column 15: gateway_mac: expected a MAC address in
    /// quotes, ...`, `line 2: [director] mac: ...`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        Self::check(raw).map_err(|msg| locate_key_error(text, &msg))
    }

    /// The checks of [`DirectorConfig::parse`] after TOML: errors start
    /// with `[section] key`, which [`locate_key_error`] finds in the text.
    fn check(raw: RawFile) -> Result<Self, String> {
        let ip: Ipv4Addr =
            raw.director.ip.parse().map_err(|_| format!("[director] ip: '{}' is not an IPv4 address", raw.director.ip))?;
        let mac: MacAddr =
            raw.director.mac.parse().map_err(|_| format!("[director] mac: '{}' is not a MAC address", raw.director.mac))?;
        usable_mac(mac).map_err(|why| format!("[director] mac: {mac} {why}"))?;
        let gateway_mac = match &raw.director.gateway_mac {
            None => None,
            Some(g) => {
                let m: MacAddr = g.parse().map_err(|_| format!("[director] gateway_mac: '{g}' is not a MAC address"))?;
                usable_mac(m).map_err(|why| format!("[director] gateway_mac: {m} {why}"))?;
                Some(m)
            }
        };
        let gateway_from_fib = raw.director.gateway.as_deref() == Some("fib");
        let gateway = match &raw.director.gateway {
            None => None,
            Some(g) if g == "fib" => None,
            Some(g) => {
                let a: Ipv4Addr = g
                    .parse()
                    .map_err(|_| format!("[director] gateway: '{g}' is not an IPv4 address (or \"fib\": the default route's)"))?;
                if a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a == ip {
                    return Err(format!("[director] gateway: {a} cannot be a next hop (unspecified, broadcast, multicast or the director's own address)"));
                }
                Some(a)
            }
        };
        if gateway_mac.is_none() && gateway.is_none() && !gateway_from_fib {
            return Err(MISSING_GATEWAY.into());
        }
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
        let mut neighbors6 = BTreeMap::new();
        for (k, v) in &raw.neighbors {
            let a6 = k.parse::<Ipv6Addr>().ok();
            let a: Option<Ipv4Addr> = match a6 {
                Some(_) => None,
                None => Some(k.parse().map_err(|_| format!("[neighbors] {k}: '{k}' is not an IPv4 address"))?),
            };
            let m: MacAddr = v.parse().map_err(|_| format!("[neighbors] {k}: '{v}' is not a MAC address"))?;
            usable_mac(m).map_err(|why| format!("[neighbors] {k}: {m} {why}"))?;
            match (a, a6) {
                (Some(a), _) => {
                    neighbors.insert(a, m);
                }
                (None, Some(a6)) => {
                    neighbors6.insert(a6, m);
                }
                (None, None) => {}
            }
        }
        let ip6 = match &raw.director.ip6 {
            None => None,
            Some(s) => Some(
                s.parse::<Ipv6Addr>().map_err(|_| format!("[director] ip6: '{s}' is not an IPv6 address"))?,
            ),
        };
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
            sysctl.sync = parse_sync(&s)?;
        }
        let clock = match raw.clock {
            None => None,
            Some(c) => {
                let hz = c.hz.unwrap_or(250);
                if ![100, 250, 300, 1000].contains(&hz) {
                    return Err(format!("[clock] hz: {hz} is not a CONFIG_HZ (100, 250, 300 or 1000)"));
                }
                if c.jiffies.is_some() != c.at_ns.is_some() {
                    return Err("[clock] jiffies and at_ns go together (the jiffies value at that time)".into());
                }
                Some(KernelClock { hz, anchor_ns: c.at_ns.unwrap_or(0), anchor_jiffies: c.jiffies.unwrap_or(0) })
            }
        };
        Ok(DirectorConfig {
            ip,
            mac,
            mtu: mtu as u16,
            gateway_mac,
            gateway,
            gateway_from_fib,
            vlan,
            neighbors,
            ip6,
            neighbors6,
            timeouts,
            sysctl,
            clock,
            resolve_neighbors: false,
            resolve_neighbors6: false,
        })
    }

    /// The MAC of the next hop towards `ip`: its neighbor entry, or the
    /// gateway's static MAC (all zeros when only its address is given:
    /// what is learned is the [`Director`](crate::director::Director)'s).
    pub fn next_hop_mac(&self, ip: Ipv4Addr) -> MacAddr {
        self.neighbors.get(&ip).copied().or(self.gateway_mac).unwrap_or(MacAddr::ZERO)
    }

    /// The static `gateway_mac`, or the one-line error of a path that does
    /// not learn the gateway's MAC (replay, conformance, vectors, traffic).
    pub fn static_gateway_mac(&self) -> Result<MacAddr, String> {
        self.gateway_mac.ok_or_else(|| NO_STATIC_GATEWAY.to_string())
    }
}

/// Neither `gateway_mac` nor `gateway` in `[director]`.
pub const MISSING_GATEWAY: &str =
    "[director]: gateway_mac (the gateway's MAC) or gateway (its IPv4 address, or \"fib\", for `lvsnic daemon` to learn the MAC) is needed: the next hop towards the clients";

/// `gateway = "fib"` without the director's own stack to ask.
pub const FIB_NEEDS_HOST_TAP: &str =
    "[director] gateway = \"fib\" takes the default route of the director's own stack: run `lvsnic daemon` with --host-tap NAME, or name the gateway's address";

/// `gateway` without `gateway_mac` where nothing learns the MAC.
pub const NO_STATIC_GATEWAY: &str =
    "[director] gateway_mac is needed here: only `lvsnic daemon` learns the gateway's MAC from [director] gateway";

/// Why `m` cannot be a host's own MAC (the source of its frames and the
/// destination of frames sent to it): broadcast, all zeros, or a group
/// (multicast) address. A director with such a MAC, or sending to such a
/// next hop, would have every frame dropped.
pub fn usable_mac(m: MacAddr) -> Result<(), &'static str> {
    if m.is_broadcast() {
        Err("is the broadcast address, not a host's MAC")
    } else if m == MacAddr::ZERO {
        Err("is all zeros, not a host's MAC")
    } else if m.is_multicast() {
        Err("is a multicast address (the low bit of the first octet is set), not a host's MAC")
    } else {
        Ok(())
    }
}

/// Line (1-based) and column (1-based, in characters) of byte `offset` of `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut off = offset.min(text.len());
    while !text.is_char_boundary(off) {
        off -= 1;
    }
    let before = &text[..off];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// What a person should have written for a key whose value must be a
/// quoted string, with an example.
fn string_hint(section: &str, key: &str) -> Option<&'static str> {
    match (section, key) {
        ("director", "mac" | "gateway_mac") | ("neighbors", _) => {
            Some("expected a MAC address in quotes, e.g. \"02:00:00:00:00:01\"")
        }
        ("director", "ip" | "gateway") => Some("expected an IPv4 address in quotes, e.g. \"10.0.0.1\""),
        ("director", "vlan") => Some("expected \"drop\" or \"balance\" in quotes"),
        _ => None,
    }
}

/// What TOML makes of an unquoted value, in words.
fn toml_reads_as(v: &str) -> &'static str {
    let v = v.trim();
    let digits = v.chars().next().is_some_and(|c| c.is_ascii_digit());
    if v.is_empty() {
        "(no value)"
    } else if digits && v.contains(':') {
        "(without quotes TOML reads it as a time)"
    } else if digits && v.contains('-') {
        "(without quotes TOML reads it as a date)"
    } else if v.parse::<f64>().is_ok() {
        "(without quotes TOML reads it as a number)"
    } else if v == "true" || v == "false" {
        "(without quotes TOML reads it as a boolean)"
    } else {
        "(TOML needs quotes around text)"
    }
}

/// A TOML error as one line that starts with its line and column:
/// `line 3, column 15: unknown field ...`. A value that had to be a quoted
/// string (an address, a MAC) but was written bare is said so in words:
/// `line 3, column 15: gateway_mac: expected a MAC address in quotes,
/// e.g. "02:00:00:00:00:01" (without quotes TOML reads it as a time)`.
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else { return msg };
    let (line, col) = line_col(text, span.start);
    let at = format!("line {line}, column {col}");
    // The section the line is in, and the line's own `key = value`.
    let mut section = String::new();
    let mut this = "";
    for (i, l) in text.split('\n').enumerate() {
        let t = l.trim();
        if i + 1 == line {
            this = l;
            break;
        }
        if t.starts_with('[') && !t.starts_with("[[") {
            section = t.trim_start_matches('[').split(']').next().unwrap_or("").trim().to_string();
        }
    }
    if let Some((k, raw_v)) = this.split_once('=') {
        let bare_key = !k.trim().starts_with('"') && !k.trim().starts_with('\'');
        if section == "neighbors" && bare_key {
            let col = this.len() - this.trim_start().len() + 1;
            return format!(
                "line {line}, column {col}: [neighbors]: the IP address must be in quotes, e.g. \"192.168.10.1\" = \"02:00:00:00:10:01\""
            );
        }
        let k = k.trim().trim_matches('"');
        let v = raw_v.split('#').next().unwrap_or("").trim();
        if let Some(hint) = string_hint(&section, k) {
            if !v.starts_with('"') && !v.starts_with('\'') {
                // The column of the value (TOML's span may point inside it).
                let col = this.len() - raw_v.trim_start().len();
                let at = format!("line {line}, column {}", this[..col].chars().count() + 1);
                return format!("{at}: {k}: {hint} {}", toml_reads_as(v));
            }
        }
    }
    format!("{at}: {msg}")
}

/// Prefixes an error of our own checks that starts with `[section] key`
/// (`[director] mac: ...`) with the line of that key in `text`:
/// `line 3: [director] mac: ...`. A message naming no key of the text is
/// returned as it is.
pub fn locate_key_error(text: &str, msg: &str) -> String {
    use serde::de::IgnoredAny;
    use toml::Spanned;
    type Doc = BTreeMap<String, BTreeMap<Spanned<String>, IgnoredAny>>;
    let Ok(doc) = toml::from_str::<Doc>(text) else { return msg.to_string() };
    let Some(rest) = msg.strip_prefix('[') else { return msg.to_string() };
    let Some((section, rest)) = rest.split_once("] ") else { return msg.to_string() };
    let Some(keys) = doc.get(section) else { return msg.to_string() };
    // The longest key the message starts with (`burst` before `b`).
    let found = keys
        .keys()
        .filter(|k| {
            let k = k.get_ref().as_str();
            rest.strip_prefix(k).is_some_and(|r| r.starts_with(':') || r.starts_with(' ') || r.is_empty())
        })
        .max_by_key(|k| k.get_ref().len());
    match found {
        Some(k) => format!("line {}: {msg}", line_col(text, k.span().start).0),
        None => msg.to_string(),
    }
}

/// `INT_MAX / HZ` (HZ = 1000): the largest `sync_refresh_period` in seconds
/// `proc_dointvec_jiffies` accepts.
pub const SYNC_REFRESH_PERIOD_MAX: i64 = i32::MAX as i64 / 1000;

/// One integer as `proc_dointvec` reads it (`-EINVAL` outside `int`).
fn int_of(name: &str, v: i64) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("[sysctl] {name}: {v} is not an int (the kernel refuses it)"))
}

/// `sync_threshold` as the proc file takes it: "THRESHOLD PERIOD", or
/// "THRESHOLD" alone (the period keeps its value, the default 50), or a
/// TOML integer (the threshold alone); checked as `proc_do_sync_threshold`
/// does: both >= 0, and the threshold below the period unless the period
/// is 0.
fn parse_sync_threshold(v: &toml::Value) -> Result<(u32, u32), String> {
    const N: &str = "[sysctl] sync_threshold";
    let words: Vec<String> = match v {
        toml::Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
        toml::Value::Integer(i) => vec![i.to_string()],
        other => return Err(format!("{N}: {other} is not a string \"THRESHOLD PERIOD\"")),
    };
    if words.is_empty() {
        return Err(format!("{N}: no value (\"THRESHOLD PERIOD\", e.g. \"3 50\")"));
    }
    if words.len() > 2 {
        return Err(format!("{N}: '{}' has more than two values (THRESHOLD PERIOD)", words.join(" ")));
    }
    let mut vals = [3i64, 50];
    for (i, w) in words.iter().enumerate() {
        let x: i64 = w.parse().map_err(|_| format!("{N}: '{w}' is not an integer"))?;
        vals[i] = int_of("sync_threshold", x)? as i64;
    }
    let [t, p] = vals;
    if t < 0 || p < 0 {
        return Err(format!("{N}: \"{t} {p}\": threshold and period must be >= 0"));
    }
    if p != 0 && t >= p {
        return Err(format!("{N}: \"{t} {p}\": the threshold must be less than the period (or the period 0)"));
    }
    Ok((t as u32, p as u32))
}

/// The `sync_*` keys of `[sysctl]`.
fn parse_sync(s: &RawSysctl) -> Result<SyncSysctl, String> {
    let mut c = SyncSysctl::default();
    if let Some(v) = &s.sync_threshold {
        (c.sync_threshold, c.sync_period) = parse_sync_threshold(v)?;
    }
    if let Some(r) = s.sync_refresh_period {
        if r < 0 {
            return Err(format!(
                "[sysctl] sync_refresh_period: {r}: lvsnic refuses a negative period (the kernel stores it and reads it back as a huge unsigned one)"
            ));
        }
        if r > SYNC_REFRESH_PERIOD_MAX {
            return Err(format!(
                "[sysctl] sync_refresh_period: {r} is more than {SYNC_REFRESH_PERIOD_MAX} s (INT_MAX / HZ; the kernel refuses it)"
            ));
        }
        c.sync_refresh_period_ms = r as u64 * 1000;
    }
    if let Some(r) = s.sync_retries {
        if !(0..=3).contains(&r) {
            return Err(format!("[sysctl] sync_retries: {r} must be 0..=3"));
        }
        c.sync_retries = r as u32;
    }
    if let Some(m) = s.sync_persist_mode {
        c.sync_persist_mode = int_of("sync_persist_mode", m)? != 0;
    }
    if let Some(q) = s.sync_qlen_max {
        if q < 0 {
            return Err(format!("[sysctl] sync_qlen_max: {q} must be >= 0 (an unsigned long)"));
        }
        c.sync_qlen_max = usize::try_from(q).map_err(|_| format!("[sysctl] sync_qlen_max: {q} is too large"))?;
    }
    if let Some(v) = s.sync_version {
        match v {
            1 => {}
            0 => {
                return Err(
                    "[sysctl] sync_version: 0: lvsnic implements only sync_version 1 (its master sends version 1 messages; version 0 is received)"
                        .into(),
                )
            }
            _ => return Err(format!("[sysctl] sync_version: {v} must be 0 or 1 (lvsnic implements only 1)")),
        }
    }
    if let Some(p) = s.sync_ports {
        if p < 1 || p > i32::MAX as i64 || (p as u64).count_ones() != 1 {
            return Err(format!("[sysctl] sync_ports: {p} must be a power of two >= 1 (lvsnic implements only 1)"));
        }
        if p != 1 {
            return Err(format!("[sysctl] sync_ports: {p}: lvsnic implements only sync_ports 1 (one sync thread)"));
        }
    }
    if let Some(z) = s.sync_sock_size {
        int_of("sync_sock_size", z)?;
        if z != 0 {
            return Err(format!(
                "[sysctl] sync_sock_size: {z}: lvsnic implements only sync_sock_size 0 (socket buffer sizes left to the system)"
            ));
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysctl(lines: &str) -> Result<Sysctl, String> {
        let text = format!(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n[sysctl]\n{lines}"
        );
        DirectorConfig::parse(&text).map(|c| c.sysctl)
    }

    fn sync(lines: &str) -> SyncSysctl {
        sysctl(lines).unwrap_or_else(|e| panic!("{lines}: {e}")).sync
    }

    /// The error of a one-line `[sysctl]` body, which is line 6 of the
    /// file: the message must say so, and is returned without it.
    fn err(lines: &str) -> String {
        match sysctl(lines) {
            Ok(s) => panic!("{lines}: accepted as {s:?}"),
            Err(e) => match e.strip_prefix("line 6: ").or_else(|| e.strip_prefix("line 6, column ")) {
                Some(rest) => rest.to_string(),
                None => panic!("{lines}: error without its line: {e}"),
            },
        }
    }

    const HEAD: &str = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n";

    fn parse_err(text: &str) -> String {
        match DirectorConfig::parse(text) {
            Ok(c) => panic!("{text}: accepted as {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_bare_mac_is_explained_with_its_line_and_column() {
        // TOML reads `02:00` as a (bad) time and `02:00:00` as a time.
        let e = parse_err("[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = 02:00\n");
        assert_eq!(
            e,
            "line 4, column 15: gateway_mac: expected a MAC address in quotes, e.g. \"02:00:00:00:00:01\" \
             (without quotes TOML reads it as a time)"
        );
        let e = parse_err("[director]\nip = \"10.0.0.1\"\nmac = 02:00:00\ngateway_mac = \"02:00:00:00:00:fe\"\n");
        assert!(e.starts_with("line 3, column 7: mac: expected a MAC address in quotes"), "{e}");
        assert!(e.ends_with("(without quotes TOML reads it as a time)"), "{e}");
        let e = parse_err(&format!("{HEAD}vlan = strip\n"));
        assert_eq!(e, "line 5, column 8: vlan: expected \"drop\" or \"balance\" in quotes (TOML needs quotes around text)");
        let e = parse_err(&format!("{HEAD}[neighbors]\n192.168.10.1 = \"02:00:00:00:10:01\"\n"));
        assert_eq!(
            e,
            "line 6, column 1: [neighbors]: the IP address must be in quotes, e.g. \"192.168.10.1\" = \"02:00:00:00:10:01\""
        );
        let e = parse_err(&format!("{HEAD}[neighbors]\n\"192.168.10.1\" = 02:00:00:00:10:01\n"));
        assert!(e.starts_with("line 6, column 18: 192.168.10.1: expected a MAC address in quotes"), "{e}");
        let e = parse_err("[director]\nip = 10.0.0.1\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n");
        assert!(e.starts_with("line 2, column "), "{e}");
        assert!(e.contains("ip: expected an IPv4 address in quotes, e.g. \"10.0.0.1\""), "{e}");
    }

    #[test]
    fn toml_errors_name_line_and_column() {
        let e = parse_err(&format!("{HEAD}mtu = 1500\nmtux = 3\n"));
        assert!(e.starts_with("line 6, column 1: unknown field `mtux`"), "{e}");
        let e = parse_err(&format!("{HEAD}[timeouts]\ntcp = \"900\"\n"));
        assert!(e.starts_with("line 6, column 7: "), "{e}");
        let e = parse_err("[director]\nip = \"10.0.0.1\"\n  mac = [\n");
        assert_eq!(e, "line 4, column 1: invalid array expected `]`");
        assert_eq!(line_col("ab\ncé\nx", 6), (2, 3));
        assert_eq!(line_col("ab\ncé\nx", 5), (2, 2));
        assert_eq!(line_col("ab", 99), (1, 3));
    }

    #[test]
    fn values_our_checks_refuse_name_key_and_line() {
        let e = parse_err(&format!("{HEAD}\nmtu = 40\n"));
        assert_eq!(e, "line 6: [director] mtu: 40 is outside 68..=9216");
        let e = parse_err(&format!("{HEAD}[neighbors]\n\"10.0.0.2\" = \"02:00:00:00:00:02\"\n\"10.0.0.x\" = \"02:00:00:00:00:03\"\n"));
        assert_eq!(e, "line 7: [neighbors] 10.0.0.x: '10.0.0.x' is not an IPv4 address");
        let e = parse_err(&format!("{HEAD}[clock]\nhz = 250\njiffies = 5\n"));
        assert!(e.starts_with("line 7: [clock] jiffies and at_ns go together"), "{e}");
    }

    #[test]
    fn the_gateway_is_its_mac_or_its_address_and_one_is_needed() {
        let head = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\n";
        let e = parse_err(head);
        assert_eq!(e, MISSING_GATEWAY);
        assert!(e.contains("gateway_mac") && e.contains("gateway (") && !e.contains('\n'), "{e}");
        let c = DirectorConfig::parse(&format!("{head}gateway = \"10.0.0.254\"\n")).unwrap();
        assert_eq!((c.gateway, c.gateway_mac), (Some(Ipv4Addr::new(10, 0, 0, 254)), None));
        assert_eq!(c.static_gateway_mac().unwrap_err(), NO_STATIC_GATEWAY);
        let c = DirectorConfig::parse(&format!("{head}gateway_mac = \"02:00:00:00:00:fe\"\ngateway = \"10.0.0.254\"\n")).unwrap();
        assert_eq!(c.static_gateway_mac(), Ok(MacAddr([2, 0, 0, 0, 0, 0xfe])));
        assert_eq!(
            parse_err(&format!("{head}gateway = \"10.0.0.x\"\n")),
            "line 4: [director] gateway: '10.0.0.x' is not an IPv4 address (or \"fib\": the default route's)"
        );
        let c = DirectorConfig::parse(&format!("{head}gateway = \"fib\"\n")).unwrap();
        assert_eq!((c.gateway, c.gateway_mac, c.gateway_from_fib), (None, None, true));
        assert!(parse_err(&format!("{head}gateway = \"10.0.0.1\"\n")).starts_with("line 4: [director] gateway: 10.0.0.1 cannot be a next hop"));
        assert!(parse_err(&format!("{head}gateway = \"255.255.255.255\"\n")).starts_with("line 4: [director] gateway: 255.255.255.255 cannot"));
        let e = parse_err(&format!("{head}gateway = 10.0.0.254\n"));
        assert!(e.starts_with("line 4, column 11: gateway: expected an IPv4 address in quotes"), "{e}");
    }

    #[test]
    fn impossible_macs_are_refused_with_key_and_line() {
        let cfg = |mac: &str, gw: &str, nb: &str| {
            format!(
                "[director]\nip = \"10.0.0.1\"\nmac = \"{mac}\"\ngateway_mac = \"{gw}\"\n[neighbors]\n\"10.0.0.2\" = \"{nb}\"\n"
            )
        };
        let ok = "02:00:00:00:00:01";
        assert!(DirectorConfig::parse(&cfg(ok, "00:1b:21:00:00:fe", ok)).is_ok());
        assert_eq!(
            parse_err(&cfg("ff:ff:ff:ff:ff:ff", ok, ok)),
            "line 3: [director] mac: ff:ff:ff:ff:ff:ff is the broadcast address, not a host's MAC"
        );
        assert_eq!(
            parse_err(&cfg(ok, "00:00:00:00:00:00", ok)),
            "line 4: [director] gateway_mac: 00:00:00:00:00:00 is all zeros, not a host's MAC"
        );
        assert_eq!(
            parse_err(&cfg("01:00:5e:00:00:01", ok, ok)),
            "line 3: [director] mac: 01:00:5e:00:00:01 is a multicast address (the low bit of the first octet is set), not a host's MAC"
        );
        assert!(parse_err(&cfg(ok, "33:33:00:00:00:01", ok)).starts_with("line 4: [director] gateway_mac: 33:33:00:00:00:01 is a multicast"));
        assert_eq!(
            parse_err(&cfg(ok, ok, "ff:ff:ff:ff:ff:ff")),
            "line 6: [neighbors] 10.0.0.2: ff:ff:ff:ff:ff:ff is the broadcast address, not a host's MAC"
        );
        assert!(parse_err(&cfg(ok, ok, "03:00:00:00:00:00")).starts_with("line 6: [neighbors] 10.0.0.2: 03:00:00:00:00:00 is a multicast"));
    }

    #[test]
    fn sync_sysctls_default_to_the_kernels() {
        assert_eq!(sync(""), SyncSysctl::default());
        let d = SyncSysctl::default();
        assert_eq!((d.sync_threshold, d.sync_period, d.sync_refresh_period_ms, d.sync_retries), (3, 50, 0, 0));
        assert!(!d.sync_persist_mode);
        // The documented defaults parse to the defaults.
        let doc = "sync_threshold = \"3 50\"\nsync_refresh_period = 0\nsync_retries = 0\nsync_persist_mode = 0\n\
                   sync_qlen_max = 4096\nsync_version = 1\nsync_ports = 1\nsync_sock_size = 0\n";
        assert_eq!(sync(doc), d);
    }

    #[test]
    fn sync_threshold_is_read_as_the_proc_file_takes_it() {
        let s = sync("sync_threshold = \"2 10\"");
        assert_eq!((s.sync_threshold, s.sync_period), (2, 10));
        let s = sync("sync_threshold = \"  7\t 0 \"");
        assert_eq!((s.sync_threshold, s.sync_period), (7, 0));
        // One value: only the threshold changes (the period keeps 50).
        let s = sync("sync_threshold = \"10\"");
        assert_eq!((s.sync_threshold, s.sync_period), (10, 50));
        let s = sync("sync_threshold = 0");
        assert_eq!((s.sync_threshold, s.sync_period), (0, 50));
        // proc_do_sync_threshold: -EINVAL.
        assert_eq!(
            err("sync_threshold = \"50 50\""),
            "[sysctl] sync_threshold: \"50 50\": the threshold must be less than the period (or the period 0)"
        );
        assert!(err("sync_threshold = \"60\"").contains("\"60 50\": the threshold must be less"));
        assert_eq!(err("sync_threshold = \"-1 50\""), "[sysctl] sync_threshold: \"-1 50\": threshold and period must be >= 0");
        assert!(err("sync_threshold = \"3 -5\"").contains("must be >= 0"));
        assert!(err("sync_threshold = \"\"").starts_with("[sysctl] sync_threshold: no value"));
        assert!(err("sync_threshold = \"3 50 7\"").contains("more than two values"));
        assert_eq!(err("sync_threshold = \"3 x\""), "[sysctl] sync_threshold: 'x' is not an integer");
        assert!(err("sync_threshold = \"3 4294967296\"").contains("4294967296 is not an int"));
        assert!(err("sync_threshold = [3, 50]").starts_with("[sysctl] sync_threshold: "));
    }

    #[test]
    fn sync_refresh_period_is_seconds_stored_as_jiffies() {
        assert_eq!(sync("sync_refresh_period = 30").sync_refresh_period_ms, 30_000);
        assert_eq!(sync("sync_refresh_period = 2147483").sync_refresh_period_ms, 2_147_483_000);
        assert!(err("sync_refresh_period = 2147484").contains("more than 2147483 s"));
        assert!(err("sync_refresh_period = -1").starts_with("[sysctl] sync_refresh_period: -1: lvsnic refuses"));
    }

    #[test]
    fn sync_retries_persist_mode_and_qlen_max() {
        assert_eq!(sync("sync_retries = 3").sync_retries, 3);
        // proc_dointvec_minmax 0..3: refused, not clamped.
        assert_eq!(err("sync_retries = 4"), "[sysctl] sync_retries: 4 must be 0..=3");
        assert_eq!(err("sync_retries = -1"), "[sysctl] sync_retries: -1 must be 0..=3");
        // proc_dointvec: any int, non-zero is on.
        assert!(sync("sync_persist_mode = 1").sync_persist_mode);
        assert!(sync("sync_persist_mode = -2").sync_persist_mode);
        assert!(!sync("sync_persist_mode = 0").sync_persist_mode);
        assert!(err("sync_persist_mode = 2147483648").contains("is not an int"));
        assert_eq!(sync("sync_qlen_max = 0").sync_qlen_max, 0);
        assert_eq!(sync("sync_qlen_max = 100000").sync_qlen_max, 100_000);
        assert_eq!(err("sync_qlen_max = -1"), "[sysctl] sync_qlen_max: -1 must be >= 0 (an unsigned long)");
    }

    #[test]
    fn sync_version_ports_and_sock_size_take_only_what_lvsnic_implements() {
        assert_eq!(sync("sync_version = 1\nsync_ports = 1\nsync_sock_size = 0"), SyncSysctl::default());
        assert!(err("sync_version = 0").contains("lvsnic implements only sync_version 1"));
        assert!(err("sync_version = 2").starts_with("[sysctl] sync_version: 2 must be 0 or 1"));
        assert!(err("sync_ports = 2").contains("lvsnic implements only sync_ports 1"));
        assert!(err("sync_ports = 3").starts_with("[sysctl] sync_ports: 3 must be a power of two"));
        assert!(err("sync_ports = 0").starts_with("[sysctl] sync_ports: 0 must be a power of two"));
        assert!(err("sync_sock_size = 65536").contains("lvsnic implements only sync_sock_size 0"));
        assert!(err("sync_sock_size = -1").contains("lvsnic implements only sync_sock_size 0"));
    }

    #[test]
    fn unknown_sysctls_are_still_refused() {
        assert!(err("sync_thresold = \"3 50\"").contains("unknown field"));
    }
}
