//! Per-service rate limit on new-connection exceptions.
//!
//! Every frame that would make the golden model schedule a new connection
//! (a TCP SYN without ACK/RST, any first UDP datagram, to a live service,
//! with no connection yet) passes one token bucket per virtual service at
//! the entry of the slow path, before the golden model sees it. A frame
//! that finds the bucket empty is dropped and counted, as an overloaded
//! director drops SYNs it cannot take: a SYN flood on one service then
//! costs the exception loop one header parse per frame, and neither
//! established connections (forwarded by the data plane, or handed up
//! without being new) nor other services are starved.
//!
//! Configured in `DIRECTOR.toml`:
//!
//! ```toml
//! [limits]
//! new_conn_per_sec = 5000   # tokens per second and per service (absent: no limit)
//! burst = 10000             # bucket size (default: new_conn_per_sec, at least 1)
//! ```
//!
//! The `[limits]` table is read here and removed before the rest of the
//! file goes to [`DirectorConfig::parse`] (which knows nothing of it); the
//! other lines keep their numbers, so its errors still point at the file.

use lvsnic_model::config::{ConfigError, DirectorConfig};
use lvsnic_model::director::Director;
use lvsnic_model::time::{Time, SEC};
use lvsnic_model::wire::{
    ipv4, transport_ports, EthernetFrame, Ipv4Packet, TcpPacket, ETHERTYPE_IPV4, IPPROTO_TCP, IPPROTO_UDP, TCP_ACK,
    TCP_RST, TCP_SYN,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

/// The `[limits]` table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// New connections per second admitted per service; `None` = unlimited.
    pub new_conn_per_sec: Option<u64>,
    /// Bucket depth in connections.
    pub burst: Option<u64>,
}

impl Limits {
    /// Effective bucket depth.
    pub fn burst(&self) -> u64 {
        self.burst.or(self.new_conn_per_sec).unwrap_or(0).max(1)
    }
}

/// Reads `DIRECTOR.toml`: the director configuration and its `[limits]`.
pub fn load_director(path: &Path) -> Result<(DirectorConfig, Limits), ConfigError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io { path: p.clone(), source: e })?;
    parse_director(&text).map_err(|msg| ConfigError::Invalid { path: p, msg })
}

/// [`load_director`] on text; the error is one line.
pub fn parse_director(text: &str) -> Result<(DirectorConfig, Limits), String> {
    let (rest, limits_text) = split_limits(text);
    let limits = match limits_text {
        None => Limits::default(),
        Some(t) => parse_limits(&t)?,
    };
    let cfg = DirectorConfig::parse(&rest)?;
    Ok((cfg, limits))
}

/// Splits the lines of a `[limits]` table from the rest: both texts keep
/// every line of the file where it was (the other's lines blanked), so
/// errors in either name the file's line numbers.
fn split_limits(text: &str) -> (String, Option<String>) {
    let mut rest = String::with_capacity(text.len());
    let mut limits = String::new();
    let mut found = false;
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            let name = t.trim_start_matches('[').split(']').next().unwrap_or("").trim();
            inside = name == "limits" && !t.starts_with("[[");
            found |= inside;
        }
        let blank = if line.ends_with('\n') { "\n" } else { "" };
        let (to, other) = if inside { (&mut limits, &mut rest) } else { (&mut rest, &mut limits) };
        to.push_str(line);
        other.push_str(blank);
    }
    (rest, found.then_some(limits))
}

/// The `[limits]` table (in `text`, the file with its other lines
/// blanked); errors start with the line they are about.
fn parse_limits(text: &str) -> Result<Limits, String> {
    parse_limits_table(text).map_err(|msg| lvsnic_model::config::locate_key_error(text, &msg))
}

fn parse_limits_table(text: &str) -> Result<Limits, String> {
    let v: toml::Table = text.parse().map_err(|e: toml::de::Error| lvsnic_model::config::toml_error(text, &e))?;
    let t = match v.get("limits") {
        Some(toml::Value::Table(t)) => t,
        _ => return Err("[limits] must be a table".into()),
    };
    let mut l = Limits::default();
    for (k, v) in t {
        let n = match v {
            toml::Value::Integer(n) if *n > 0 => *n as u64,
            _ => return Err(format!("[limits] {k}: must be a positive integer")),
        };
        match k.as_str() {
            "new_conn_per_sec" => l.new_conn_per_sec = Some(n),
            "burst" => l.burst = Some(n),
            _ => return Err(format!("[limits] {k}: unknown key (expected new_conn_per_sec, burst)")),
        }
    }
    if l.burst.is_some() && l.new_conn_per_sec.is_none() {
        return Err("[limits] burst needs new_conn_per_sec".into());
    }
    Ok(l)
}

/// A virtual service as the limiter keys it.
pub type SvcKey = (u8, IpAddr, u16);

#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Credit in token-nanoseconds (`SEC` per token, scaled by the rate).
    credit: u128,
    last: Time,
}

/// Counters of one service's bucket.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct BucketCounters {
    /// New-connection frames that found a token and went on to the golden
    /// model.
    pub admitted: u64,
    /// New-connection frames that found the bucket empty: dropped.
    pub limited: u64,
}

/// Token buckets, one per service, filled by frame time.
#[derive(Clone, Debug, Default)]
pub struct Limiter {
    /// The `[limits]` configuration the buckets follow.
    pub limits: Limits,
    buckets: BTreeMap<SvcKey, Bucket>,
    counters: BTreeMap<SvcKey, BucketCounters>,
    /// Frames dropped by any service's bucket.
    pub limited_total: u64,
}

impl Limiter {
    /// A limiter with full buckets (created on each service's first frame).
    pub fn new(limits: Limits) -> Self {
        Limiter { limits, ..Default::default() }
    }

    /// Takes a token of service `svc` at time `now`: false when the bucket is empty.
    pub fn admit(&mut self, svc: SvcKey, now: Time) -> bool {
        let Some(rate) = self.limits.new_conn_per_sec else { return true };
        let cap = self.limits.burst() as u128 * SEC as u128;
        let b = self.buckets.entry(svc).or_insert(Bucket { credit: cap, last: now });
        let dt = now.saturating_sub(b.last) as u128;
        b.last = b.last.max(now);
        b.credit = (b.credit + dt * rate as u128).min(cap);
        let c = self.counters.entry(svc).or_default();
        if b.credit >= SEC as u128 {
            b.credit -= SEC as u128;
            c.admitted += 1;
            true
        } else {
            c.limited += 1;
            self.limited_total += 1;
            false
        }
    }

    /// Per-service counters, named as `ipvsadm -L` names services.
    pub fn counters(&self) -> BTreeMap<String, BucketCounters> {
        self.counters
            .iter()
            .map(|((p, a, port), c)| {
                let proto = match p {
                    6 => "TCP",
                    17 => "UDP",
                    _ => "?",
                };
                let a = match a {
                    IpAddr::V4(a) => a.to_string(),
                    IpAddr::V6(a) => format!("[{a}]"),
                };
                (format!("{proto} {a}:{port}"), *c)
            })
            .collect()
    }
}

/// The service a frame handed up by the data plane would open a new
/// connection on, if it would (see the module docs).
pub fn new_conn_service(d: &Director, frame: &[u8]) -> Option<SvcKey> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.dst_addr() != d.cfg.mac || eth.ethertype() != ETHERTYPE_IPV4 {
        return None;
    }
    let l3 = eth.into_payload();
    if l3.len() < ipv4::HEADER_LEN {
        return None;
    }
    let ip = Ipv4Packet::new_unchecked(l3);
    if ip.version() != 4 || ip.header_len() < ipv4::HEADER_LEN || ip.is_fragment() {
        return None;
    }
    let proto = ip.protocol();
    // Up to the TCP flags (RFC 9293: byte 13), or the UDP ports.
    let need = if proto == IPPROTO_TCP { 14 } else { 4 };
    let l4 = l3.get(ip.header_len()..).filter(|l4| l4.len() >= need)?;
    if proto != IPPROTO_TCP && proto != IPPROTO_UDP {
        return None;
    }
    let (saddr, daddr) = (u32::from(ip.src_addr()), u32::from(ip.dst_addr()));
    if !d.services.is_vip(daddr) {
        return None;
    }
    let (sport, dport) = transport_ports(l4)?;
    if proto == IPPROTO_TCP {
        let flags = TcpPacket::new_unchecked(l4).flags();
        let (syn, ack, rst) = (flags & TCP_SYN != 0, flags & TCP_ACK != 0, flags & TCP_RST != 0);
        if rst || !(d.cfg.sysctl.sloppy_tcp || (syn && !ack)) {
            return None;
        }
    }
    let svc = d.services.find(proto, daddr, dport)?;
    if d.conns.in_get(proto, saddr, sport, daddr, dport).is_some() {
        return None;
    }
    let s = d.services.service(svc);
    Some((proto, IpAddr::V4(s.vaddr_v4()?), s.vport))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use lvsnic_model::rules::ipvsadm::parse_rules;
    use lvsnic_model::wire::{build, EthernetRepr, Ipv4Repr, MacAddr, TcpRepr};

    #[test]
    fn limits_section_is_split_out_keeping_line_numbers() {
        let text = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n\n[limits]\nnew_conn_per_sec = 100\nburst = 20\n\n[timeouts]\ntcp = 60\n";
        let (cfg, l) = parse_director(text).unwrap();
        assert_eq!(l, Limits { new_conn_per_sec: Some(100), burst: Some(20) });
        assert_eq!(cfg.timeouts.get().0, 60);
        assert!(parse_director("[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n[limits]\nrate = 3\n")
            .unwrap_err()
            .contains("[limits] rate: unknown key"));
        // Errors in and after [limits] name the file's line.
        let head = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n";
        let e = parse_director(&format!("{head}[limits]\nnew_conn_per_sec = 10\nrate = 3\n")).unwrap_err();
        assert_eq!(e, "line 7: [limits] rate: unknown key (expected new_conn_per_sec, burst)");
        let e = parse_director(&format!("{head}[limits]\nnew_conn_per_sec = -1\n")).unwrap_err();
        assert_eq!(e, "line 6: [limits] new_conn_per_sec: must be a positive integer");
        let e = parse_director(&format!("{head}[limits]\nnew_conn_per_sec = 10 10\n")).unwrap_err();
        assert!(e.starts_with("line 6, column "), "{e}");
        let e = parse_director(&format!("{head}[limits]\nnew_conn_per_sec = 10\n[director]\nmtu = 1\n")).unwrap_err();
        assert!(e.starts_with("line 7, column 1: "), "{e}");
        let e = parse_director(&format!("[limits]\nburst = 3\n\n{head}")).unwrap_err();
        assert_eq!(e, "line 2: [limits] burst needs new_conn_per_sec");
        let e = parse_director(&format!("[limits]\nburst = 3\nnew_conn_per_sec = 1\n{head}mtu = \"x\"\n")).unwrap_err();
        assert!(e.starts_with("line 8, column 7: "), "{e}");
        let (_, l) = parse_director(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n",
        )
        .unwrap();
        assert_eq!(l, Limits::default());
    }

    #[test]
    fn bucket_refills_at_the_configured_rate() {
        let mut lim = Limiter::new(Limits { new_conn_per_sec: Some(10), burst: Some(2) });
        let k = (6, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 100)), 80);
        let t0 = 1_000 * SEC;
        assert!(lim.admit(k, t0));
        assert!(lim.admit(k, t0));
        assert!(!lim.admit(k, t0));
        // 10/s: one token after 100 ms, not before.
        assert!(!lim.admit(k, t0 + 99_000_000));
        assert!(lim.admit(k, t0 + 100_000_000));
        // Another service has its own bucket.
        assert!(lim.admit((6, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 101)), 80), t0));
        assert_eq!(lim.limited_total, 2);
        assert_eq!(lim.counters()["TCP 10.0.0.100:80"], BucketCounters { admitted: 3, limited: 2 });
        // Unlimited by default.
        let mut free = Limiter::default();
        assert!((0..1000).all(|_| free.admit(k, t0)));
    }

    /// A director with one TCP service, 10.0.0.100:80, and the limits given.
    fn limited_director(limits: &str) -> (Director, Limits) {
        let text = format!(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n\n\
             [neighbors]\n\"10.0.0.2\" = \"02:00:00:00:00:02\"\n\n[limits]\n{limits}"
        );
        let (cfg, l) = parse_director(&text).unwrap();
        let rules = parse_rules("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 10.0.0.2:80 -m\n").unwrap();
        (Director::new(cfg, &rules, 0).unwrap(), l)
    }

    /// A TCP segment from 198.51.100.7:`sport` to the service, to the
    /// director's MAC, with an 802.1Q tag when `vlan` is given.
    fn segment(d: &Director, vlan: Option<u16>, sport: u16, flags: u8) -> Vec<u8> {
        let eth = EthernetRepr { src: MacAddr([2, 0, 0, 0, 0, 0xfe]), dst: d.cfg.mac, vlan_tci: vlan, ethertype: ETHERTYPE_IPV4 };
        let ip = Ipv4Repr {
            src_addr: Ipv4Addr::new(198, 51, 100, 7),
            dst_addr: Ipv4Addr::new(10, 0, 0, 100),
            protocol: 0,
            payload_len: 0,
            ttl: 64,
            tos: 0,
            ident: 1,
            dont_frag: true,
        };
        let tcp = TcpRepr { src_port: sport, dst_port: 80, seq_number: 1, ack_number: 0, flags, window_len: 64240 };
        build::tcp_frame(&eth, &ip, &tcp, b"")
    }

    #[test]
    fn tagged_syn_is_limited_like_an_untagged_one() {
        let (d, limits) = limited_director("new_conn_per_sec = 1\nburst = 1\n");
        let svc = Some((6, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 100)), 80));
        let untagged = segment(&d, None, 40000, TCP_SYN);
        let tagged = segment(&d, Some(100), 40001, TCP_SYN);
        assert_eq!(new_conn_service(&d, &untagged), svc);
        assert_eq!(new_conn_service(&d, &tagged), svc);
        // Not new connections, tagged or not: an ACK, a SYN to another MAC.
        for vlan in [None, Some(100)] {
            assert_eq!(new_conn_service(&d, &segment(&d, vlan, 40002, TCP_ACK)), None);
            let mut other = segment(&d, vlan, 40003, TCP_SYN);
            other[5] ^= 0xff;
            assert_eq!(new_conn_service(&d, &other), None);
        }
        // One token per second: whichever SYN comes second is limited.
        let t0 = 1_000 * SEC;
        for (first, second) in [(&untagged, &tagged), (&tagged, &untagged)] {
            let mut lim = Limiter::new(limits);
            assert!(lim.admit(new_conn_service(&d, first).unwrap(), t0));
            assert!(!lim.admit(new_conn_service(&d, second).unwrap(), t0));
            assert_eq!(lim.limited_total, 1);
        }
    }
}
