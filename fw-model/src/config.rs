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
    /// The kernel's jiffies and timer wheel (`[clock]`): `None` (no
    /// section) fires timers at their exact deadline.
    pub clock: Option<KernelClock>,
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
        Ok(DirectorConfig { ip, mac, mtu: mtu as u16, gateway_mac, vlan, neighbors, timeouts, sysctl, clock })
    }

    /// The MAC of the next hop towards `ip`: its neighbor entry, or the gateway.
    pub fn next_hop_mac(&self, ip: Ipv4Addr) -> MacAddr {
        self.neighbors.get(&ip).copied().unwrap_or(self.gateway_mac)
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

    fn err(lines: &str) -> String {
        match sysctl(lines) {
            Ok(s) => panic!("{lines}: accepted as {s:?}"),
            Err(e) => e,
        }
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
