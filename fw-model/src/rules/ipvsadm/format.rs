//! Byte-exact ipvsadm output: `-S -n` (`print_service_entry` with
//! FMT_RULE), `-L -n` and its variants (`list_all`, `list_service`,
//! `print_title`, `print_service_entry`, `print_largenum`), `-L -n -c`
//! (`list_conn`/`print_conn`), `--timeout` (`list_timeout`) and `--daemon`
//! (`list_daemon`), including libipvs's sort order (`ipvs_cmp_services`,
//! `ipvs_cmp_dests`) and glibc qsort's merge sort.
//!
//! Names are never resolved: output is what ipvsadm prints with `-n`.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};

use super::libc::{addr_port, ntop};
use super::parse::{DaemonState, ListOptions, SVC_F_SCHED_MASK};
use crate::rules::{
    AddressFamily, DestRule, FwdMethod, Netmask, Protocol, RuleSet, SchedFlags, ServiceKey, ServiceRule, TunnelCsum,
    TunnelType,
};

/// The kernel's `IP_VS_VERSION_CODE` (1.2.1), which `-L` prints.
pub const IP_VS_VERSION_CODE: u32 = 0x01_02_01;

/// Default connection hash table size (`CONFIG_IP_VS_TAB_BITS` = 12).
pub const DEFAULT_CONN_TAB_SIZE: u32 = 1 << 12;

/// Traffic counters of a service or server (`struct ip_vs_stats64`, totals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsView {
    /// Connections scheduled.
    pub conns: u64,
    /// Packets client → real server.
    pub inpkts: u64,
    /// Packets real server → client.
    pub outpkts: u64,
    /// Bytes client → real server.
    pub inbytes: u64,
    /// Bytes real server → client.
    pub outbytes: u64,
}

/// Rate estimates of a service or server (`struct ip_vs_stats64`, rates).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateView {
    /// Connections per second.
    pub cps: u64,
    /// Packets per second, client → real server.
    pub inpps: u64,
    /// Packets per second, real server → client.
    pub outpps: u64,
    /// Bytes per second, client → real server.
    pub inbps: u64,
    /// Bytes per second, real server → client.
    pub outbps: u64,
}

/// A real server as `-L` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestListing {
    /// Real server address.
    pub addr: IpAddr,
    /// Real server port.
    pub port: u16,
    /// Forwarding method.
    pub fwd: FwdMethod,
    /// Weight.
    pub weight: u32,
    /// Upper connection threshold (`-x`), 0 = none.
    pub u_threshold: u32,
    /// Lower connection threshold (`-y`), 0 = none.
    pub l_threshold: u32,
    /// Active connections.
    pub activeconns: u32,
    /// Inactive connections.
    pub inactconns: u32,
    /// Persistence templates.
    pub persistconns: u32,
    /// Traffic counters.
    pub stats: StatsView,
    /// Rate estimates.
    pub rates: RateView,
}

impl DestListing {
    /// A configured server with zero counters.
    pub fn from_rule(d: &DestRule) -> Self {
        DestListing {
            addr: d.addr,
            port: d.port,
            fwd: d.fwd,
            weight: d.weight,
            u_threshold: d.u_threshold,
            l_threshold: d.l_threshold,
            activeconns: 0,
            inactconns: 0,
            persistconns: 0,
            stats: StatsView::default(),
            rates: RateView::default(),
        }
    }
}

/// A virtual service as `-L` shows it. `dests` should be in the kernel's
/// order (newest first): that is the `--nosort` order, and the input order
/// of the sort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceListing {
    /// What identifies the service.
    pub key: ServiceKey,
    /// Scheduler name.
    pub scheduler: String,
    /// Scheduler flags (`-b`).
    pub flags: SchedFlags,
    /// Persistence timeout in seconds, when persistent.
    pub persistent: Option<u32>,
    /// Persistence granularity (`-M`).
    pub netmask: Netmask,
    /// Persistence engine (`--pe`).
    pub pe: Option<String>,
    /// One-packet scheduling (`-o`).
    pub ops: bool,
    /// Traffic counters.
    pub stats: StatsView,
    /// Rate estimates.
    pub rates: RateView,
    /// The real servers.
    pub dests: Vec<DestListing>,
}

impl ServiceListing {
    /// A configured service with zero counters; its servers newest first,
    /// as the kernel keeps them.
    pub fn from_rule(r: &ServiceRule) -> Self {
        ServiceListing {
            key: r.key,
            scheduler: r.scheduler.clone(),
            flags: r.flags,
            persistent: r.persistent,
            netmask: r.netmask,
            pe: r.pe.clone(),
            ops: r.ops,
            stats: StatsView::default(),
            rates: RateView::default(),
            dests: r.dests.iter().rev().map(DestListing::from_rule).collect(),
        }
    }
}

/// What `-L` prints in its first line (`ipvs_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListingHeader {
    /// Connection hash table size (`size=`).
    pub conn_tab_size: u32,
}

impl Default for ListingHeader {
    fn default() -> Self {
        ListingHeader { conn_tab_size: DEFAULT_CONN_TAB_SIZE }
    }
}

// ---------------------------------------------------------------------------
// Sorting (libipvs ipvs_cmp_services / ipvs_cmp_dests, glibc qsort)

const AF_INET: i32 = 2;
const AF_INET6: i32 = 10;

fn addr_words(a: &IpAddr) -> [u32; 4] {
    match a {
        IpAddr::V4(v4) => [u32::from(*v4), 0, 0, 0],
        IpAddr::V6(v6) => {
            let o = v6.octets();
            let w = |i: usize| u32::from_be_bytes([o[i], o[i + 1], o[i + 2], o[i + 3]]);
            [w(0), w(4), w(8), w(12)]
        }
    }
}

fn af_of_addr(a: &IpAddr) -> i32 {
    if a.is_ipv6() {
        AF_INET6
    } else {
        AF_INET
    }
}

fn key_af(k: &ServiceKey) -> i32 {
    match k {
        ServiceKey::Addr { addr, .. } => af_of_addr(addr),
        ServiceKey::Fwmark { af: AddressFamily::Inet6, .. } => AF_INET6,
        ServiceKey::Fwmark { .. } => AF_INET,
    }
}

/// `ntohl(a) - ntohl(b)` stored in an int, per word while equal (IPv6).
fn cmp_addr_words(v6: bool, a: &[u32; 4], b: &[u32; 4]) -> i32 {
    if v6 {
        for i in 0..4 {
            let r = a[i].wrapping_sub(b[i]) as i32;
            if r != 0 {
                return r;
            }
        }
        0
    } else {
        a[0].wrapping_sub(b[0]) as i32
    }
}

/// libipvs `ipvs_cmp_services()`, with the fields a netlink dump fills in
/// (protocol, address and port are 0 for fwmark services). The unsigned
/// differences wrap into an int, so 192.168.0.1 sorts before 10.0.0.1.
pub fn ipvs_cmp_services(a: &ServiceKey, b: &ServiceKey) -> i32 {
    fn fields(k: &ServiceKey) -> (u32, i32, i32, [u32; 4], i32) {
        match k {
            ServiceKey::Addr { proto, addr, port } => {
                (0, af_of_addr(addr), i32::from(proto.number()), addr_words(addr), i32::from(*port))
            }
            ServiceKey::Fwmark { mark, .. } => (*mark, key_af(k), 0, [0; 4], 0),
        }
    }
    let (fa, afa, pa, wa, porta) = fields(a);
    let (fb, afb, pb, wb, portb) = fields(b);
    let r = fa.wrapping_sub(fb) as i32;
    if r != 0 {
        return r;
    }
    let r = afa - afb;
    if r != 0 {
        return r;
    }
    let r = pa - pb;
    if r != 0 {
        return r;
    }
    let r = cmp_addr_words(afa == AF_INET6, &wa, &wb);
    if r != 0 {
        return r;
    }
    porta - portb
}

/// libipvs `ipvs_cmp_dests()` (address with the int-wrap quirk, then port).
pub fn ipvs_cmp_dests(a_addr: &IpAddr, a_port: u16, b_addr: &IpAddr, b_port: u16) -> i32 {
    let r = cmp_addr_words(a_addr.is_ipv6(), &addr_words(a_addr), &addr_words(b_addr));
    if r != 0 {
        return r;
    }
    i32::from(a_port) - i32::from(b_port)
}

/// glibc `qsort()` (its merge sort, `msort_with_tmp`): the order it produces
/// for a comparator that is not transitive, as libipvs's is.
pub(crate) fn glibc_qsort<T: Clone>(v: &mut [T], cmp: &dyn Fn(&T, &T) -> i32) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (left, right) = v.split_at_mut(n1);
        glibc_qsort(left, cmp);
        glibc_qsort(right, cmp);
    }
    let mut tmp: Vec<T> = Vec::with_capacity(n);
    let (mut i, mut j) = (0usize, n1);
    while i < n1 && j < n {
        if cmp(&v[i], &v[j]) <= 0 {
            tmp.push(v[i].clone());
            i += 1;
        } else {
            tmp.push(v[j].clone());
            j += 1;
        }
    }
    tmp.extend_from_slice(&v[i..n1]);
    let k = tmp.len();
    v[..k].clone_from_slice(&tmp);
}

fn sort_services(v: &mut [&ServiceListing]) {
    glibc_qsort(v, &|a: &&ServiceListing, b: &&ServiceListing| ipvs_cmp_services(&a.key, &b.key));
}

fn sorted_dests(dests: &[DestListing]) -> Vec<&DestListing> {
    let mut v: Vec<&DestListing> = dests.iter().collect();
    glibc_qsort(&mut v, &|a: &&DestListing, b: &&DestListing| ipvs_cmp_dests(&a.addr, a.port, &b.addr, b.port));
    v
}

/// The order `ipvsadm -L`/`-S` prints a rule set in: services, and each
/// service's servers (fed to the sort newest first, as the kernel lists them).
pub fn ipvsadm_sorted(rules: &RuleSet) -> RuleSet {
    let mut services = rules.services.clone();
    glibc_qsort(&mut services, &|a: &ServiceRule, b: &ServiceRule| ipvs_cmp_services(&a.key, &b.key));
    for s in &mut services {
        s.dests.reverse();
        glibc_qsort(&mut s.dests, &|a: &DestRule, b: &DestRule| ipvs_cmp_dests(&a.addr, a.port, &b.addr, b.port));
    }
    RuleSet { services }
}

// ---------------------------------------------------------------------------
// Pieces of print_service_entry

#[derive(Clone, Copy, Default)]
struct Fmt {
    rule: bool,
    stats: bool,
    rate: bool,
    thresholds: bool,
    persistent_conn: bool,
    nosort: bool,
    exact: bool,
    tun_info: bool,
}

impl Fmt {
    fn from_opts(o: &ListOptions) -> Self {
        Fmt {
            rule: false,
            stats: o.stats,
            rate: o.rate,
            thresholds: o.thresholds,
            persistent_conn: o.persistent_conn,
            nosort: o.nosort,
            exact: o.exact,
            tun_info: o.tun_info,
        }
    }
}

/// `print_largenum()`: `%9llu` below 10^8, else scaled to K/M/G/T in
/// `%8llu` plus the unit; with `--exact` the full number, at least 9 wide,
/// always with one leading blank.
pub fn print_largenum(i: u64, exact: bool) -> String {
    if exact {
        let len = i.to_string().len();
        let w = if len <= 8 { 9 } else { len + 1 };
        return format!("{i:>w$}");
    }
    if i < 100_000_000 {
        format!("{i:>9}")
    } else if i < 1_000_000_000 {
        format!("{:>8}K", i / 1000)
    } else if i < 100_000_000_000 {
        format!("{:>8}M", i / 1_000_000)
    } else if i < 100_000_000_000_000 {
        format!("{:>8}G", i / 1_000_000_000)
    } else {
        format!("{:>8}T", i / 1_000_000_000_000)
    }
}

/// `print_sched_flags()`: names depend on the scheduler.
fn sched_flags_text(sched: &str, flags: SchedFlags) -> String {
    let f = flags.0;
    let mut names: Vec<&str> = Vec::new();
    match sched {
        "sh" => {
            if f & SchedFlags::SCHED1 != 0 {
                names.push("sh-fallback");
            }
            if f & SchedFlags::SCHED2 != 0 {
                names.push("sh-port");
            }
        }
        "mh" => {
            if f & SchedFlags::SCHED1 != 0 {
                names.push("mh-fallback");
            }
            if f & SchedFlags::SCHED2 != 0 {
                names.push("mh-port");
            }
        }
        _ => {
            if f & SchedFlags::SCHED1 != 0 {
                names.push("flag-1");
            }
            if f & SchedFlags::SCHED2 != 0 {
                names.push("flag-2");
            }
            if f & SchedFlags::SCHED3 != 0 {
                names.push("flag-3");
            }
        }
    }
    names.join(",")
}

fn truncated(mut s: String, n: usize) -> String {
    if s.len() > n {
        let mut k = n;
        while !s.is_char_boundary(k) {
            k -= 1;
        }
        s.truncate(k);
    }
    s
}

fn svc_name(key: &ServiceKey, rule: bool) -> String {
    match key {
        ServiceKey::Fwmark { mark, af } => match (rule, af) {
            (true, AddressFamily::Inet6) => format!("-f {mark} -6"),
            (true, AddressFamily::Inet) => format!("-f {mark}"),
            (false, AddressFamily::Inet6) => format!("FWM  {mark} IPv6"),
            (false, AddressFamily::Inet) => format!("FWM  {mark}"),
        },
        ServiceKey::Addr { proto, addr, port } => {
            let vname = addr_port(addr, *port);
            if rule {
                let sw = match proto {
                    Protocol::Tcp => "-t",
                    Protocol::Udp => "-u",
                    Protocol::Sctp => "--sctp-service",
                };
                format!("{sw} {vname}")
            } else {
                let s = format!("{:<4} {}", proto.list_name(), vname);
                if addr.is_ipv6() {
                    s
                } else {
                    truncated(s, 33)
                }
            }
        }
    }
}

/// The mask text when it differs from the family's default.
fn mask_text(key: &ServiceKey, netmask: &Netmask) -> Option<String> {
    match (key_af(key), netmask) {
        (AF_INET, Netmask::V4(m)) if *m != 0xffff_ffff => Some(Ipv4Addr::from(*m).to_string()),
        (AF_INET6, Netmask::V6(p)) if *p != 128 => Some(p.to_string()),
        _ => None,
    }
}

fn fwd_name(f: &FwdMethod) -> &'static str {
    f.list_name()
}

fn fwd_switch(f: &FwdMethod) -> &'static str {
    match f {
        FwdMethod::Masq => "-m",
        FwdMethod::Tunnel { .. } => "-i",
        FwdMethod::Local | FwdMethod::Route => "-g",
    }
}

fn csum_index(c: &TunnelCsum) -> usize {
    match c {
        TunnelCsum::NoCsum => 0,
        TunnelCsum::Csum => 1,
        TunnelCsum::RemCsum => 2,
    }
}

/// `fwd_tun_info()`: `ipip`, `gue:PORT:-c|+c|r+c`, `gre:-c|+c`; `None` (n/a)
/// for other methods.
fn tun_info(f: &FwdMethod) -> Option<String> {
    const TUNFLAGS: [&str; 3] = ["-c", "+c", "r+c"];
    match f {
        FwdMethod::Tunnel { tun: TunnelType::Ipip, .. } => Some("ipip".to_string()),
        FwdMethod::Tunnel { tun: TunnelType::Gue { port }, csum } => {
            Some(truncated(format!("gue:{port}:{}", TUNFLAGS[csum_index(csum)]), 15))
        }
        FwdMethod::Tunnel { tun: TunnelType::Gre, csum } => Some(format!("gre:{}", TUNFLAGS[csum_index(csum)])),
        _ => None,
    }
}

fn print_title(out: &mut String, f: &Fmt) {
    if f.stats {
        let _ = writeln!(
            out,
            "{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n  -> RemoteAddress:Port",
            "Prot LocalAddress:Port", "Conns", "InPkts", "OutPkts", "InBytes", "OutBytes"
        );
    } else if f.rate {
        let _ = writeln!(
            out,
            "{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n  -> RemoteAddress:Port",
            "Prot LocalAddress:Port", "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS"
        );
    } else if f.thresholds {
        let _ = writeln!(
            out,
            "{:<33} {:<10} {:<10} {:<10} {:<10}\n  -> RemoteAddress:Port",
            "Prot LocalAddress:Port", "Uthreshold", "Lthreshold", "ActiveConn", "InActConn"
        );
    } else if f.persistent_conn {
        let _ = writeln!(
            out,
            "{:<33} {:<9} {:<11} {:<10} {:<10}\n  -> RemoteAddress:Port",
            "Prot LocalAddress:Port", "Weight", "PersistConn", "ActiveConn", "InActConn"
        );
    } else if f.tun_info {
        out.push_str(
            "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward TunnelInfo    Weight ActiveConn InActConn\n",
        );
    } else if !f.rule {
        out.push_str(
            "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n",
        );
    }
}

fn push_stats(out: &mut String, s: &StatsView, exact: bool) {
    for v in [s.conns, s.inpkts, s.outpkts, s.inbytes, s.outbytes] {
        out.push_str(&print_largenum(v, exact));
    }
}

fn push_rates(out: &mut String, r: &RateView, exact: bool) {
    for v in [r.cps, r.inpps, r.outpps, r.inbps, r.outbps] {
        out.push_str(&print_largenum(v, exact));
    }
}

/// `print_service_entry()`
fn print_service_entry(out: &mut String, se: &ServiceListing, f: &Fmt) {
    let name = svc_name(&se.key, f.rule);
    let sched_bits = se.flags.0 & SVC_F_SCHED_MASK != 0;
    let pe = se.pe.as_deref().filter(|p| !p.is_empty());
    if f.rule {
        let _ = write!(out, "-A {} -s {}", name, se.scheduler);
        if let Some(t) = se.persistent {
            let _ = write!(out, " -p {t}");
            if let Some(m) = mask_text(&se.key, &se.netmask) {
                let _ = write!(out, " -M {m}");
            }
        }
        if let Some(pe) = pe {
            let _ = write!(out, " --pe {pe}");
        }
        if se.ops {
            out.push_str(" -o");
        }
        if sched_bits {
            out.push_str(" -b ");
            out.push_str(&sched_flags_text(&se.scheduler, se.flags));
        }
    } else if f.stats {
        let _ = write!(out, "{name:<33}");
        push_stats(out, &se.stats, f.exact);
    } else if f.rate {
        let _ = write!(out, "{name:<33}");
        push_rates(out, &se.rates, f.exact);
    } else {
        let _ = write!(out, "{} {}", name, se.scheduler);
        if sched_bits {
            let _ = write!(out, " ({})", sched_flags_text(&se.scheduler, se.flags));
        }
        if let Some(t) = se.persistent {
            let _ = write!(out, " persistent {t}");
            if let Some(m) = mask_text(&se.key, &se.netmask) {
                let _ = write!(out, " mask {m}");
            }
            if let Some(pe) = pe {
                let _ = write!(out, " pe {pe}");
            }
        }
        if se.ops {
            out.push_str(" ops");
        }
    }
    out.push('\n');

    let dests: Vec<&DestListing> = if f.nosort { se.dests.iter().collect() } else { sorted_dests(&se.dests) };
    for e in dests {
        let mut dname = addr_port(&e.addr, e.port);
        if !f.rule && !e.addr.is_ipv6() {
            dname = truncated(dname, 28);
        }
        let weight = e.weight as i32;
        if f.rule {
            let sw = fwd_switch(&e.fwd);
            match e.fwd {
                FwdMethod::Tunnel { tun: TunnelType::Gre, csum } => {
                    let _ = writeln!(
                        out,
                        "-a {name} -r {dname} {sw} -w {weight} --tun-type gre {}",
                        TUN_CSUM_OPTS[csum_index(&csum)]
                    );
                }
                FwdMethod::Tunnel { tun: TunnelType::Gue { port }, csum } => {
                    let _ = writeln!(
                        out,
                        "-a {name} -r {dname} {sw} -w {weight} --tun-type gue --tun-port {port} {}",
                        TUN_CSUM_OPTS[csum_index(&csum)]
                    );
                }
                FwdMethod::Tunnel { tun: TunnelType::Ipip, .. } => {
                    let _ = writeln!(out, "-a {name} -r {dname} {sw} -w {weight} --tun-type ipip");
                }
                _ => {
                    let _ = writeln!(out, "-a {name} -r {dname} {sw} -w {weight}");
                }
            }
        } else if f.stats {
            let _ = write!(out, "  -> {dname:<28}");
            push_stats(out, &e.stats, f.exact);
            out.push('\n');
        } else if f.rate {
            let _ = write!(out, "  -> {:<28} {:>8} {:>8} {:>8}", dname, e.rates.cps, e.rates.inpps, e.rates.outpps);
            out.push_str(&print_largenum(e.rates.inbps, f.exact));
            out.push_str(&print_largenum(e.rates.outbps, f.exact));
            out.push('\n');
        } else if f.thresholds {
            let _ = writeln!(
                out,
                "  -> {:<28} {:<10} {:<10} {:<10} {:<10}",
                dname, e.u_threshold, e.l_threshold, e.activeconns, e.inactconns
            );
        } else if f.persistent_conn {
            let _ = writeln!(
                out,
                "  -> {:<28} {:<9} {:<11} {:<10} {:<10}",
                dname, e.weight, e.persistconns, e.activeconns, e.inactconns
            );
        } else if f.tun_info {
            let ti = tun_info(&e.fwd).unwrap_or_else(|| "n/a".to_string());
            let _ = writeln!(
                out,
                "  -> {:<28} {:<7} {:<13} {:<6} {:<10} {:<10}",
                dname,
                fwd_name(&e.fwd),
                ti,
                weight,
                e.activeconns,
                e.inactconns
            );
        } else {
            let _ = writeln!(
                out,
                "  -> {:<28} {:<7} {:<6} {:<10} {:<10}",
                dname,
                fwd_name(&e.fwd),
                weight,
                e.activeconns,
                e.inactconns
            );
        }
    }
}

const TUN_CSUM_OPTS: [&str; 3] = ["--tun-nocsum", "--tun-csum", "--tun-remcsum"];

// ---------------------------------------------------------------------------
// Public printers

/// `ipvsadm -S -n`: each service line followed by its servers, sorted as
/// ipvsadm sorts them. Thresholds are not saved; Local servers save as `-g`.
pub fn format_save(rules: &RuleSet) -> String {
    let listings: Vec<ServiceListing> = rules.services.iter().map(ServiceListing::from_rule).collect();
    let mut refs: Vec<&ServiceListing> = listings.iter().collect();
    sort_services(&mut refs);
    let f = Fmt { rule: true, ..Fmt::default() };
    let mut out = String::new();
    for s in refs {
        print_service_entry(&mut out, s, &f);
    }
    out
}

/// `ipvsadm -L -n` with the `--stats`, `--rate`, `--thresholds`,
/// `--persistent-conn`, `--tun-info`, `--exact` and `--nosort` modifiers
/// (the first of stats, rate, thresholds, persistent-conn, tun-info wins, as
/// in ipvsadm), for all services or, with `opts.service`, for that one
/// (`list_service`: no version line).
///
/// `services` (and their `dests`) should be in the kernel's order, which
/// `--nosort` prints as is. When `opts.service` names no service ipvsadm
/// prints nothing on stdout and "No such service" on stderr: this returns
/// an empty string and the caller reports
/// [`ApplyError::NoSuchService`](super::ApplyError::NoSuchService).
/// `numeric` is ignored (always numeric); `connections`, `timeout` and
/// `daemon` have their own printers ([`format_connections`],
/// [`format_timeout`], [`format_daemon`]).
pub fn format_list(header: &ListingHeader, services: &[ServiceListing], opts: &ListOptions) -> String {
    let f = Fmt::from_opts(opts);
    let mut out = String::new();
    if let Some(key) = &opts.service {
        if let Some(se) = services.iter().find(|s| s.key == *key) {
            print_title(&mut out, &f);
            print_service_entry(&mut out, se, &f);
        }
        return out;
    }
    let v = IP_VS_VERSION_CODE;
    let _ = writeln!(
        out,
        "IP Virtual Server version {}.{}.{} (size={})",
        (v >> 16) & 0xff,
        (v >> 8) & 0xff,
        v & 0xff,
        header.conn_tab_size as i32
    );
    print_title(&mut out, &f);
    let mut refs: Vec<&ServiceListing> = services.iter().collect();
    if !f.nosort {
        sort_services(&mut refs);
    }
    for s in refs {
        print_service_entry(&mut out, s, &f);
    }
    out
}

/// `ipvsadm -L --timeout`
pub fn format_timeout(tcp: u32, tcpfin: u32, udp: u32) -> String {
    format!("Timeout (tcp tcpfin udp): {} {} {}\n", tcp as i32, tcpfin as i32, udp as i32)
}

/// One connection of `/proc/net/ip_vs_conn`, as `ipvsadm -L -c` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnListing {
    /// Protocol.
    pub proto: Protocol,
    /// Client address.
    pub caddr: IpAddr,
    /// Client port.
    pub cport: u16,
    /// Virtual address.
    pub vaddr: IpAddr,
    /// Virtual port.
    pub vport: u16,
    /// Real server address.
    pub daddr: IpAddr,
    /// Real server port.
    pub dport: u16,
    /// Kernel state name (`ESTABLISHED`, `SYN_RECV`, `FIN_WAIT`, `UDP`, `NONE`, ...).
    pub state: String,
    /// Seconds until expiry (printed mm:ss).
    pub expires_secs: u32,
    /// Persistence engine name and data, when the connection has pe data.
    pub pe_name: Option<String>,
    /// Persistence engine data.
    pub pe_data: Option<String>,
}

/// `ipvsadm -L -n -c` (and `-c --persistent-conn`, which adds the
/// persistence engine columns).
pub fn format_connections(conns: &[ConnListing], persistent_conn: bool) -> String {
    let mut out = String::from("IPVS connection entries\n");
    if persistent_conn {
        // "pro expire %-11s %-18s %-18s %-18s %-16s %s\n"
        let _ = writeln!(
            out,
            "pro expire {:<11} {:<18} {:<18} {:<18} {:<16} pe_data",
            "state", "source", "virtual", "destination", "pe name"
        );
    } else {
        // "pro expire %-11s %-18s %-18s %s\n"
        let _ = writeln!(out, "pro expire {:<11} {:<18} {:<18} destination", "state", "source", "virtual");
    }
    for c in conns {
        let expire = format!("{:02}:{:02}", c.expires_secs / 60, c.expires_secs % 60);
        let cname = addr_port(&c.caddr, c.cport);
        let vname = addr_port(&c.vaddr, c.vport);
        let dname = addr_port(&c.daddr, c.dport);
        let proto = c.proto.list_name();
        let pe = match (&c.pe_name, &c.pe_data) {
            (Some(n), Some(d)) if !n.is_empty() && !d.is_empty() => Some((n, d)),
            _ => None,
        };
        match pe {
            Some((pn, pd)) if persistent_conn => {
                let _ = writeln!(
                    out,
                    "{proto:<3} {expire:<6} {:<11} {cname:<18} {vname:<18} {dname:<16} {pn:<18} {pd}",
                    c.state
                );
            }
            _ => {
                let _ = writeln!(out, "{proto:<3} {expire:<6} {:<11} {cname:<18} {vname:<18} {dname}", c.state);
            }
        }
    }
    out
}

/// One sync daemon as `ipvsadm -L --daemon` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonListing {
    /// Master or backup.
    pub state: DaemonState,
    /// Multicast interface.
    pub mcast_ifn: String,
    /// Sync ID.
    pub syncid: u32,
    /// 0 = not reported.
    pub sync_maxlen: u32,
    /// Multicast group, when reported.
    pub mcast_group: Option<IpAddr>,
    /// 0 = not reported.
    pub mcast_port: u16,
    /// 0 = not reported.
    pub mcast_ttl: u8,
}

/// `ipvsadm -L --daemon` (nothing when no daemon runs).
pub fn format_daemon(daemons: &[DaemonListing]) -> String {
    let mut out = String::new();
    for d in daemons {
        let ty = match d.state {
            DaemonState::Master => "master",
            DaemonState::Backup => "backup",
        };
        let _ = write!(out, "{ty} sync daemon (mcast={}, syncid={}", d.mcast_ifn, d.syncid as i32);
        if d.sync_maxlen != 0 {
            let _ = write!(out, ", maxlen={}", d.sync_maxlen);
        }
        if let Some(g) = &d.mcast_group {
            let _ = write!(out, ", group={}", ntop(g));
        }
        if d.mcast_port != 0 {
            let _ = write!(out, ", port={}", d.mcast_port);
        }
        if d.mcast_ttl != 0 {
            let _ = write!(out, ", ttl={}", d.mcast_ttl);
        }
        out.push_str(")\n");
    }
    out
}
