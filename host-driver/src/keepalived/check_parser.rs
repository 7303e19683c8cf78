//! The LVS keywords as keepalived's check/check_parser.c reads them:
//! `virtual_server_group` entries, `virtual_server` and `real_server`
//! blocks with keepalived's defaults, their health checkers (`checkers`),
//! and warnings for what lvsnic does not do (other checkers, VRRP, unknown
//! keywords).

use super::checkers::{checker, timing_keyword, ParsedChecker, Timing, RUN};
use super::parser::{Ctx, Loc, Node};
use lvsnic_model::rules::ipvsadm::{DEFAULT_SCHEDULER, KNOWN_PES, KNOWN_SCHEDULERS, MAX_TIMEOUT};
use lvsnic_model::rules::{Netmask, Protocol, SchedFlags, TunnelCsum, TunnelType, DEFAULT_PERSISTENT_TIMEOUT};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

/// keepalived's health checkers; those not in [`RUN`] are reported and the
/// server is taken as up.
pub(super) const CHECKERS: &[&str] = &[
    "HTTP_GET",
    "SSL_GET",
    "TCP_CHECK",
    "SMTP_CHECK",
    "DNS_CHECK",
    "MISC_CHECK",
    "BFD_CHECK",
    "UDP_CHECK",
    "PING_CHECK",
    "FILE_CHECK",
];

/// Top-level keywords of keepalived that are not about LVS (skipped).
pub(super) const OTHER_TOP: &[&str] = &[
    "global_defs",
    "static_ipaddress",
    "static_routes",
    "static_rules",
    "vrrp_script",
    "vrrp_sync_group",
    "vrrp_instance",
    "vrrp_track_process",
    "vrrp_track_file",
    "track_file",
    "track_process",
    "garp_group",
    "linkbeat_interfaces",
    "net_namespace",
    "net_namespace_ipvs",
    "use_pid_dir",
    "instance",
    "bfd_instance",
    "namespace_with_ipsets",
    "vrrp_garp_interval",
];

/// Virtual-server keywords that change nothing in the rules (health
/// checking, notification, SNMP...).
const VS_INERT: &[&str] = &["ha_suspend", "smtp_alert", "virtualhost", "omega", "weight", "hashed", "ip_family"];

/// A notify script: its words (the program and its arguments, as
/// `misc_path`).
fn script(ctx: &mut Ctx, k: &Node) -> Option<Vec<String>> {
    let argv: Vec<String> = k.words[1..].iter().flat_map(|w| w.split_whitespace()).map(str::to_string).collect();
    if argv.is_empty() {
        ctx.err(&k.loc, format!("{}: missing value", k.kw()));
        return None;
    }
    Some(argv)
}

/// Real-server keywords that change nothing in the rules.
const RS_INERT: &[&str] = &["smtp_alert", "virtualhost"];

/// A forwarding method as `lb_kind`/`lvs_method` give it.
#[derive(Clone, Debug)]
pub(super) struct Fwd {
    /// `NAT`, `DR` or `TUN`.
    pub(super) method: String,
    pub(super) tun: TunnelType,
    pub(super) csum: TunnelCsum,
}

/// A `real_server` block.
#[derive(Clone, Debug)]
pub(super) struct Rs {
    pub(super) addr: IpAddr,
    pub(super) port: Option<u16>,
    pub(super) weight: u32,
    pub(super) fwd: Option<Fwd>,
    pub(super) uth: u32,
    pub(super) lth: u32,
    /// `inhibit_on_failure` (default: the virtual server's).
    pub(super) inhibit: Option<bool>,
    /// Timing keywords and `alpha` for its checkers.
    pub(super) timing: Timing,
    /// The checkers lvsnic runs.
    pub(super) checkers: Vec<ParsedChecker>,
    pub(super) notify_up: Option<Vec<String>>,
    pub(super) notify_down: Option<Vec<String>>,
    pub(super) loc: Loc,
}

/// `lvs_method NAT|DR|TUN [type ipip|gue port N|gre] [nocsum|csum|remcsum]`.
fn fwd(ctx: &mut Ctx, n: &Node) -> Option<Fwd> {
    let m = ctx.val(n, 1)?;
    if !matches!(m, "NAT" | "DR" | "TUN") {
        ctx.err(&n.loc, format!("{}: unknown forwarding method '{m}' (expected NAT, DR or TUN)", n.kw()));
        return None;
    }
    let mut f = Fwd { method: m.to_string(), tun: TunnelType::Ipip, csum: TunnelCsum::NoCsum };
    let mut i = 2;
    while let Some(w) = n.arg(i) {
        match w {
            "type" if m == "TUN" => {
                match n.arg(i + 1) {
                    Some("ipip") => f.tun = TunnelType::Ipip,
                    Some("gre") => f.tun = TunnelType::Gre,
                    Some("gue") => {
                        if n.arg(i + 2) != Some("port") {
                            ctx.err(&n.loc, "TUN type gue: missing 'port N'");
                            return None;
                        }
                        let p = ctx.num(n, i + 3, 1, 65535)? as u16;
                        f.tun = TunnelType::Gue { port: p };
                        i += 2;
                    }
                    other => {
                        ctx.err(&n.loc, format!("TUN type: invalid value '{}'", other.unwrap_or("")));
                        return None;
                    }
                }
                i += 2;
            }
            "nocsum" if m == "TUN" => {
                f.csum = TunnelCsum::NoCsum;
                i += 1;
            }
            "csum" if m == "TUN" => {
                f.csum = TunnelCsum::Csum;
                i += 1;
            }
            "remcsum" if m == "TUN" => {
                f.csum = TunnelCsum::RemCsum;
                i += 1;
            }
            other => {
                ctx.err(&n.loc, format!("{}: unexpected '{other}'", n.kw()));
                return None;
            }
        }
    }
    Some(f)
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse().ok()
}

/// The services a `virtual_server` (or group entry) line names.
enum VsTarget {
    Keys(Vec<(ServiceKeyProto, Loc)>),
    Group(String),
}

/// A service key whose protocol is not known yet (`protocol` comes later).
#[derive(Clone, Debug)]
pub(super) enum ServiceKeyProto {
    Addr(IpAddr, u16),
    Fwmark(u32),
}

/// Entries of a `virtual_server_group`.
pub(super) fn group_entries(ctx: &mut Ctx, g: &Node) -> Vec<(ServiceKeyProto, Loc)> {
    let mut out = Vec::new();
    for e in g.children.iter().flatten() {
        if e.kw() == "fwmark" {
            if let Some(m) = ctx.num(e, 1, 1, u32::MAX as u64) {
                out.push((ServiceKeyProto::Fwmark(m as u32), e.loc.clone()));
            }
            continue;
        }
        // `IP PORT`, `IP/MASK PORT`, `IP-LAST PORT` (the last IPv4 octet
        // in decimal, the last 16-bit group of an IPv6 address in hex:
        // inet_stor) or `IP-IP PORT` (check_data.c's alloc_vsg_entry).
        let (first, last) = match e.kw().split_once('/').or_else(|| e.kw().split_once('-')) {
            Some((a, b)) => (a, Some(b)),
            None => (e.kw(), None),
        };
        let masked = e.kw().contains('/');
        let Some(addr) = parse_ip(first) else {
            ctx.err(&e.loc, format!("virtual_server_group {}: invalid address '{}'", g.arg(1).unwrap_or(""), e.kw()));
            continue;
        };
        let Some(port) = port_or_zero(ctx, e, 1) else { continue };
        let Some(last) = last else {
            out.push((ServiceKeyProto::Addr(addr, port), e.loc.clone()));
            continue;
        };
        let addrs = if masked { masked_addrs(addr, last) } else { range_addrs(addr, last) };
        match addrs {
            Ok(addrs) => out.extend(addrs.into_iter().map(|a| (ServiceKeyProto::Addr(a, port), e.loc.clone()))),
            Err(why) => ctx.err(&e.loc, format!("virtual_server_group {}: {why} '{}'", g.arg(1).unwrap_or(""), e.kw())),
        }
    }
    out
}

/// The addresses of a `virtual_server_group` range from `first` to `end`
/// (what follows the `-`), as keepalived 2.2.7 walks it
/// (`ipvs_group_range_cmd`): an IPv4 address up to the end address, an
/// IPv6 one through its last 16-bit group only. `end` is a whole address
/// when it has a `.` (IPv4) or `:` (IPv6), else the last octet in decimal
/// (IPv4, at most 255) or the last group in hex (IPv6, at most ffff); the
/// end must be past the start (keepalived skips the entry otherwise).
pub(super) fn range_addrs(first: IpAddr, end: &str) -> Result<Vec<IpAddr>, &'static str> {
    match first {
        IpAddr::V4(a) => {
            let start = u32::from(a);
            let last = if end.contains('.') {
                let e: Ipv4Addr = end.parse().map_err(|_| "invalid range end in")?;
                if u32::from(e) < start {
                    return Err("address range end is less than its start in");
                }
                u32::from(e)
            } else {
                let l: u32 = end.parse().map_err(|_| "invalid address range")?;
                if l > 255 {
                    return Err("address range end too large in");
                }
                if start & 0xff >= l {
                    return Err("address range end is not greater than its start in");
                }
                start & !0xff | l
            };
            Ok((start..=last).map(|x| IpAddr::V4(Ipv4Addr::from(x))).collect())
        }
        IpAddr::V6(a) => {
            let g = a.segments();
            let last = if end.contains(':') {
                let e: std::net::Ipv6Addr = end.parse().map_err(|_| "invalid range end in")?;
                // Compared group by group, as keepalived does.
                if e.segments() < g {
                    return Err("address range end is less than its start in");
                }
                e.segments()[7]
            } else {
                let l = u32::from_str_radix(end, 16).map_err(|_| "invalid address range")?;
                if l > 0xffff {
                    return Err("address range end too large in");
                }
                if u32::from(g[7]) >= l {
                    return Err("address range end is not greater than its start in");
                }
                l as u16
            };
            // Only the last group steps (wrapping at ffff, as keepalived's
            // 16-bit arithmetic does) until it equals the end's.
            let mut out = Vec::new();
            let mut s = g;
            loop {
                out.push(IpAddr::V6(std::net::Ipv6Addr::from(s)));
                if s[7] == last {
                    break;
                }
                s[7] = s[7].wrapping_add(1);
            }
            Ok(out)
        }
    }
}

/// The addresses of a `virtual_server_group` entry `first/mask`, as
/// keepalived 2.2.7 makes a range of it: the mask is 1..=32 (IPv4) or
/// 1..=128 (IPv6), the host bits of `first` must be zero, and the range
/// runs to the last address of the prefix, walked as
/// [`range_addrs`] walks it (for IPv6 only the last 16-bit group steps, so
/// a prefix shorter than /112 gives the 65536 addresses of that group).
pub(super) fn masked_addrs(first: IpAddr, mask: &str) -> Result<Vec<IpAddr>, &'static str> {
    let bits = if first.is_ipv4() { 32 } else { 128 };
    let m: u32 = match mask.parse() {
        Ok(m) if (1..=bits).contains(&m) => m,
        _ => return Err("invalid netmask in"),
    };
    let end = match first {
        IpAddr::V4(a) => {
            let host = if m == 32 { 0 } else { u32::MAX >> m };
            if u32::from(a) & host != 0 {
                return Err("address mask bits not empty in");
            }
            IpAddr::V4(Ipv4Addr::from(u32::from(a) | host)).to_string()
        }
        IpAddr::V6(a) => {
            let host = if m == 128 { 0 } else { u128::MAX >> m };
            if u128::from(a) & host != 0 {
                return Err("address mask bits not empty in");
            }
            std::net::Ipv6Addr::from(u128::from(a) | host).to_string()
        }
    };
    if end == first.to_string() {
        return Ok(vec![first]);
    }
    range_addrs(first, &end)
}

/// Groups' entries by name.
pub(super) type Groups = HashMap<String, Vec<(ServiceKeyProto, Loc)>>;

/// A `virtual_server` block as read, before it becomes services.
pub(super) struct VirtualServer {
    /// The words after `virtual_server`, for messages.
    pub(super) name: String,
    pub(super) sched: Option<String>,
    /// Scheduler flag keywords (`flag-1`, `sh-port`, ...) where they appear.
    pub(super) flags: Vec<(String, Loc)>,
    pub(super) fwd: Fwd,
    pub(super) persistent: Option<u32>,
    pub(super) granularity: Option<(Netmask, Loc)>,
    pub(super) pe: Option<String>,
    pub(super) proto: Protocol,
    pub(super) inet6: bool,
    pub(super) ops: bool,
    /// Timing keywords and `alpha` for every checker.
    pub(super) timing: Timing,
    pub(super) quorum: u64,
    pub(super) hysteresis: u64,
    /// `inhibit_on_failure` for every real server.
    pub(super) inhibit: bool,
    /// `sorry_server_inhibit`.
    pub(super) sorry_inhibit: bool,
    pub(super) quorum_up: Option<Vec<String>>,
    pub(super) quorum_down: Option<Vec<String>>,
    pub(super) sorry: Option<(IpAddr, u16, Loc)>,
    pub(super) sorry_fwd: Option<Fwd>,
    pub(super) rss: Vec<Rs>,
}

/// A `virtual_server` block ready to become services, one per key.
pub(super) struct VirtualServices {
    pub(super) vs: VirtualServer,
    /// The scheduler (keepalived's default when the block names none).
    pub(super) sched: String,
    /// The scheduler flags that apply to `sched`.
    pub(super) flags: SchedFlags,
    /// The address/port or fwmark of each service (one, or a group's entries).
    pub(super) keys: Vec<(ServiceKeyProto, Loc)>,
}

/// A `virtual_server` block; `None` when it cannot become services (the
/// errors are in `ctx`).
pub(super) fn virtual_server(ctx: &mut Ctx, n: &Node, groups: &Groups) -> Option<VirtualServices> {
    let target = vs_target(ctx, n)?;
    if n.words.len() > 3 {
        ctx.warn(&n.loc, format!("virtual_server: extra values '{}' ignored", n.words[3..].join(" ")));
    }
    let Some(body) = &n.children else {
        ctx.err(&n.loc, "virtual_server: missing '{' block");
        return None;
    };
    let mut vs = VirtualServer {
        name: n.words[1..].join(" "),
        sched: None,
        flags: Vec::new(),
        fwd: Fwd { method: "NAT".into(), tun: TunnelType::Ipip, csum: TunnelCsum::NoCsum },
        persistent: None,
        granularity: None,
        pe: None,
        // keepalived 2.2.7 (check_data.c): "no protocol set - defaulting
        // to UDP" (seen in the VM).
        proto: Protocol::Udp,
        inet6: false,
        ops: false,
        timing: Timing::default(),
        quorum: 1,
        hysteresis: 0,
        inhibit: false,
        sorry_inhibit: false,
        quorum_up: None,
        quorum_down: None,
        sorry: None,
        sorry_fwd: None,
        rss: Vec::new(),
    };
    for k in body {
        if vs_keyword(ctx, k, &mut vs) {
            ctx.no_block(k);
        }
    }

    if !body.iter().any(|k| k.kw() == "protocol") && n.arg(1) != Some("fwmark") {
        ctx.warn(&n.loc, format!("virtual_server {}: no protocol, using UDP (keepalived's default)", vs.name));
    }
    let sched = vs.sched.take().unwrap_or_else(|| {
        ctx.warn(&n.loc, format!("virtual_server {}: no lb_algo/lvs_sched, using {DEFAULT_SCHEDULER}", vs.name));
        DEFAULT_SCHEDULER.to_string()
    });
    let mut sf = 0u32;
    for (f, loc) in &vs.flags {
        // Only known flag names were collected.
        let Some((bit, only)) = SchedFlags::by_name(f) else { continue };
        match only {
            Some(s) if s != sched => ctx.warn(loc, format!("{f} only applies to the {s} scheduler - ignored")),
            _ => sf |= bit,
        }
    }
    if vs.granularity.is_some() && vs.persistent.is_none() {
        vs.persistent = Some(DEFAULT_PERSISTENT_TIMEOUT);
    }

    let keys = match target {
        VsTarget::Keys(k) => k,
        VsTarget::Group(g) => match groups.get(&g) {
            Some(e) => e.clone(),
            None => {
                ctx.err(&n.loc, format!("virtual_server group {g}: no such virtual_server_group"));
                return None;
            }
        },
    };
    Some(VirtualServices { vs, sched, flags: SchedFlags(sf), keys })
}

/// What the `virtual_server` line names: an address and port, a fwmark or
/// a group.
fn vs_target(ctx: &mut Ctx, n: &Node) -> Option<VsTarget> {
    Some(match (n.arg(1), n.arg(2)) {
        (None, _) => {
            ctx.err(&n.loc, "virtual_server: missing address");
            return None;
        }
        (Some("group"), Some(g)) => VsTarget::Group(g.to_string()),
        (Some("group"), None) => {
            ctx.err(&n.loc, "virtual_server group: missing group name");
            return None;
        }
        (Some("fwmark"), _) => {
            let m = ctx.num(n, 2, 1, u32::MAX as u64)?;
            VsTarget::Keys(vec![(ServiceKeyProto::Fwmark(m as u32), n.loc.clone())])
        }
        (Some(a), _) => {
            let Some(addr) = parse_ip(a) else {
                ctx.err(&n.loc, format!("virtual_server: invalid address '{a}'"));
                return None;
            };
            let port = port_or_zero(ctx, n, 2)?;
            VsTarget::Keys(vec![(ServiceKeyProto::Addr(addr, port), n.loc.clone())])
        }
    })
}

/// The port at word `i` (0 when absent), or an error.
fn port_or_zero(ctx: &mut Ctx, n: &Node, i: usize) -> Option<u16> {
    match n.arg(i) {
        None => Some(0),
        Some(_) => ctx.num(n, i, 0, 65535).map(|p| p as u16),
    }
}

/// One keyword of a `virtual_server` block into `vs`; false when the
/// keyword was rejected or is a block of its own (no "takes no block"
/// check then).
fn vs_keyword(ctx: &mut Ctx, k: &Node, vs: &mut VirtualServer) -> bool {
    match k.kw() {
        "lb_algo" | "lvs_sched" => {
            if let Some(s) = ctx.val(k, 1) {
                if !KNOWN_SCHEDULERS.contains(&s) {
                    ctx.warn(&k.loc, format!("unknown scheduler '{s}'"));
                }
                vs.sched = Some(s.to_string());
            }
        }
        "lb_kind" | "lvs_method" => {
            if let Some(f) = fwd(ctx, k) {
                vs.fwd = f;
            }
        }
        "persistence_timeout" => {
            vs.persistent = Some(match k.arg(1) {
                None => DEFAULT_PERSISTENT_TIMEOUT,
                Some(_) => match ctx.num(k, 1, 1, MAX_TIMEOUT as u64) {
                    Some(t) => t as u32,
                    None => return false,
                },
            })
        }
        "persistence_granularity" => {
            let Some(v) = ctx.val(k, 1) else { return false };
            if let Some(m) = granularity(ctx, k, v) {
                vs.granularity = Some((m, k.loc.clone()));
            }
        }
        "persistence_engine" => {
            if let Some(v) = ctx.val(k, 1) {
                if !KNOWN_PES.contains(&v) {
                    ctx.warn(&k.loc, format!("unknown persistence engine '{v}'"));
                }
                vs.pe = Some(v.to_string());
            }
        }
        "protocol" => {
            if let Some(v) = ctx.val(k, 1) {
                vs.proto = match v.to_ascii_uppercase().as_str() {
                    "TCP" => Protocol::Tcp,
                    "UDP" => Protocol::Udp,
                    "SCTP" => Protocol::Sctp,
                    _ => {
                        ctx.err(&k.loc, format!("protocol: unknown protocol '{v}'"));
                        return false;
                    }
                }
            }
        }
        "ip_family" => match ctx.val(k, 1) {
            Some("inet") => vs.inet6 = false,
            Some("inet6") => vs.inet6 = true,
            Some(v) => ctx.err(&k.loc, format!("ip_family: unknown address family '{v}'")),
            None => {}
        },
        "ops" => vs.ops = true,
        "flag-1" | "flag-2" | "flag-3" | "sh-port" | "sh-fallback" | "mh-port" | "mh-fallback" => {
            vs.flags.push((k.kw().to_string(), k.loc.clone()))
        }
        _ if timing_keyword(ctx, k, &mut vs.timing) => {}
        "hysteresis" => {
            if let Some(h) = ctx.num(k, 1, 0, u32::MAX as u64) {
                vs.hysteresis = h;
            }
        }
        "inhibit_on_failure" => vs.inhibit = ctx.bool_opt(k),
        "sorry_server_inhibit" => vs.sorry_inhibit = ctx.bool_opt(k),
        "quorum_up" => vs.quorum_up = script(ctx, k),
        "quorum_down" => vs.quorum_down = script(ctx, k),
        "notify_up" | "notify_down" => ctx.warn(&k.loc, format!("{} belongs in a real_server block: ignored", k.kw())),
        "quorum" => {
            if let Some(q) = ctx.num(k, 1, 0, u32::MAX as u64) {
                vs.quorum = q.max(1);
            }
        }
        "sorry_server" => match sorry_server(ctx, k) {
            Some(s) => vs.sorry = Some(s),
            None => return false,
        },
        "sorry_server_lvs_method" => vs.sorry_fwd = fwd(ctx, k),
        "real_server" => {
            if let Some(r) = real_server(ctx, k, &vs.name) {
                vs.rss.push(r);
            }
            return false;
        }
        c if CHECKERS.contains(&c) => {
            ctx.warn(&k.loc, format!("{c} outside a real_server ignored"));
            return false;
        }
        k2 if VS_INERT.contains(&k2) => {}
        other => {
            ctx.warn(&k.loc, format!("unknown keyword '{other}' in virtual_server {}", vs.name));
            return false;
        }
    }
    true
}

/// `persistence_granularity`: an IPv4 netmask or an IPv6 prefix length.
fn granularity(ctx: &mut Ctx, k: &Node, v: &str) -> Option<Netmask> {
    if v.contains('.') {
        match v.parse::<Ipv4Addr>() {
            Ok(m) if u32::from(m).leading_ones() + u32::from(m).trailing_zeros() == 32 => {
                Some(Netmask::V4(u32::from(m)))
            }
            _ => {
                ctx.err(&k.loc, format!("persistence_granularity: invalid netmask '{v}'"));
                None
            }
        }
    } else {
        match v.parse::<u8>() {
            Ok(p) if (1..=128).contains(&p) => Some(Netmask::V6(p)),
            _ => {
                ctx.err(&k.loc, format!("persistence_granularity: invalid IPv6 prefix '{v}'"));
                None
            }
        }
    }
}

/// `sorry_server ADDRESS [PORT]`.
fn sorry_server(ctx: &mut Ctx, k: &Node) -> Option<(IpAddr, u16, Loc)> {
    let a = ctx.val(k, 1)?;
    let Some(addr) = parse_ip(a) else {
        ctx.err(&k.loc, format!("sorry_server: invalid address '{a}'"));
        return None;
    };
    let port = port_or_zero(ctx, k, 2)?;
    Some((addr, port, k.loc.clone()))
}

/// A `real_server` block.
fn real_server(ctx: &mut Ctx, k: &Node, vs_name: &str) -> Option<Rs> {
    let a = ctx.val(k, 1)?;
    let Some(addr) = parse_ip(a) else {
        ctx.err(&k.loc, format!("real_server: invalid address '{a}'"));
        return None;
    };
    let port = match k.arg(2) {
        None => None,
        Some(_) => Some(ctx.num(k, 2, 0, 65535)? as u16),
    };
    let mut r = Rs {
        addr,
        port,
        weight: 1,
        fwd: None,
        uth: 0,
        lth: 0,
        inhibit: None,
        timing: Timing::default(),
        checkers: Vec::new(),
        notify_up: None,
        notify_down: None,
        loc: k.loc.clone(),
    };
    let name = match port {
        Some(p) => format!("{a} {p}"),
        None => a.to_string(),
    };
    for x in k.children.iter().flatten() {
        match x.kw() {
            "weight" => {
                if let Some(w) = ctx.num(x, 1, 0, 65535) {
                    r.weight = w as u32;
                }
            }
            "lvs_method" => r.fwd = fwd(ctx, x),
            "uthreshold" => {
                if let Some(v) = ctx.num(x, 1, 0, i32::MAX as u64) {
                    r.uth = v as u32;
                }
            }
            "lthreshold" => {
                if let Some(v) = ctx.num(x, 1, 0, i32::MAX as u64) {
                    r.lth = v as u32;
                }
            }
            "inhibit_on_failure" => r.inhibit = Some(ctx.bool_opt(x)),
            _ if timing_keyword(ctx, x, &mut r.timing) => {}
            c if RUN.contains(&c) => {
                let ck = checker(ctx, x);
                // check_conn_opts: a link-local IPv6 target needs `bind_if`
                // (its scope); without one keepalived reports the error and
                // drops the checker (the server then counts as up).
                let dst = ck.connect_ip.unwrap_or(addr);
                let link_local = matches!(dst, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80);
                if c != "MISC_CHECK" && link_local && ck.bind_if.is_none() {
                    ctx.warn(&x.loc, format!("Checker link local address {dst} requires a bind_if: {c} of real server {name} dropped"));
                } else {
                    r.checkers.push(ck);
                }
                continue;
            }
            c if CHECKERS.contains(&c) => {
                ctx.warn(
                    &x.loc,
                    format!("{c} of real server {name} (virtual_server {vs_name}) is not supported by lvsnic: the server is taken as up"),
                );
                continue;
            }
            "notify_up" => r.notify_up = script(ctx, x),
            "notify_down" => r.notify_down = script(ctx, x),
            k2 if RS_INERT.contains(&k2) => {}
            other => {
                ctx.warn(&x.loc, format!("unknown keyword '{other}' in real_server {name}"));
                continue;
            }
        }
        ctx.no_block(x);
    }
    if r.lth > r.uth && r.uth != 0 {
        ctx.err(&k.loc, format!("real_server {name}: lthreshold {} is higher than uthreshold {}", r.lth, r.uth));
    }
    Some(r)
}
