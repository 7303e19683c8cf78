//! From keepalived's virtual servers to IPVS services and real servers,
//! what keepalived's check/ipwrapper.c and ipvswrapper.c do once every
//! server's state is known: one service per key, real servers with the
//! service's (or their own) forwarding method, servers starting down left
//! out or at weight 0, the sorry server below quorum (the state machine of
//! `crate::health::state`); what the daemon's checkers need; and the
//! `ipvsadm -R` script that loads the result.

use super::check_parser::{Fwd, ServiceKeyProto, VirtualServer, VirtualServices};
use super::checkers::{ParsedChecker, Timing};
use super::parser::{Ctx, Loc};
use crate::health::config::{
    CheckKind, CheckerConfig, DestHealth, HealthConfig, RsHealth, Target, VsHealth, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_DELAY_BEFORE_RETRY, DEFAULT_DELAY_LOOP, DEFAULT_RETRY,
};
use crate::health::state::VsState;
use lvsnic_model::rules::ipvsadm::format_save;
use lvsnic_model::rules::{
    AddressFamily, DestRule, FwdMethod, Netmask, Protocol, RuleSet, ServiceKey, ServiceRule,
};
use std::net::{IpAddr, SocketAddr};

/// The services of a virtual server, one per key, appended to `rules`.
pub(super) fn add_services(ctx: &mut Ctx, v: VirtualServices, rules: &mut RuleSet, health: &mut HealthConfig) {
    let VirtualServices { vs, sched, flags, keys } = v;
    for (kp, kloc) in keys {
        let key = match kp {
            ServiceKeyProto::Addr(a, port) => ServiceKey::Addr { proto: vs.proto, addr: a, port },
            ServiceKeyProto::Fwmark(m) => {
                let v6 = vs.inet6 || vs.rss.iter().any(|r| r.addr.is_ipv6());
                ServiceKey::Fwmark { mark: m, af: if v6 { AddressFamily::Inet6 } else { AddressFamily::Inet } }
            }
        };
        let mut rule = ServiceRule::new(key);
        rule.scheduler = sched.clone();
        rule.flags = flags;
        rule.persistent = vs.persistent;
        rule.pe = vs.pe.clone();
        rule.ops = vs.ops;
        if let Some((m, gloc)) = &vs.granularity {
            match (m, rule.netmask) {
                (Netmask::V4(_), Netmask::V4(_)) | (Netmask::V6(_), Netmask::V6(_)) => rule.netmask = *m,
                _ => ctx.err(gloc, "persistence_granularity: address family does not match the service"),
            }
        }
        let is_fwmark = matches!(key, ServiceKey::Fwmark { .. });
        if let ServiceKey::Addr { port: 0, .. } = key {
            if vs.persistent.is_none() {
                ctx.err(&kloc, "Zero port specified for non-persistent service");
            }
        }
        if vs.ops && !is_fwmark && vs.proto != Protocol::Udp {
            ctx.err(&kloc, "One-Packet Scheduling is only for UDP virtual services");
        }
        if rules.services.iter().any(|s| s.key == key) {
            ctx.err(&kloc, format!("virtual server {key} defined twice"));
            continue;
        }
        // keepalived 2.2.7 (check_data.c): "Virtual server ... has no real
        // servers - ignoring", even with a sorry_server (seen in the VM).
        if vs.rss.is_empty() {
            ctx.warn(&kloc, format!("virtual_server {} has no real servers: ignored, as keepalived does", vs.name));
            continue;
        }
        let h = add_dests(ctx, &vs, &mut rule);
        if h.reals.iter().any(|r| !r.checkers.is_empty()) {
            health.services.push(h);
        }
        rules.services.push(rule);
    }
}

/// The real servers of `vs` (and its sorry server below quorum) into
/// `rule`, as the checkers' state at start has them (keepalived's
/// `init_service_rs` and `update_quorum_state`: servers with an `alpha`
/// checker start down); returns what the checkers need.
fn add_dests(ctx: &mut Ctx, vs: &VirtualServer, rule: &mut ServiceRule) -> VsHealth {
    let mut dests: Vec<DestRule> = Vec::new();
    let mut reals = Vec::new();
    for r in &vs.rss {
        let f = r.fwd.as_ref().unwrap_or(&vs.fwd);
        let mut d = dest(ctx, &rule.key, r.addr, r.port, f, &r.loc);
        d.weight = r.weight;
        d.u_threshold = r.uth;
        d.l_threshold = r.lth;
        if dests.iter().any(|x| x.addr == d.addr && x.port == d.port) {
            ctx.err(&r.loc, format!("real server {} port {} defined twice", d.addr, d.port));
            continue;
        }
        let timing = r.timing.or(&vs.timing);
        let checkers = r.checkers.iter().map(|c| resolve(c, &c.timing.or(&timing), d.addr, d.port)).collect();
        reals.push(RsHealth {
            dest: DestHealth { dest: dest_args(rule, &d), weight: d.weight, inhibit: r.inhibit.unwrap_or(vs.inhibit) },
            name: SocketAddr::new(d.addr, d.port).to_string(),
            checkers,
            notify_up: r.notify_up.clone(),
            notify_down: r.notify_down.clone(),
        });
        dests.push(d);
    }
    let mut sorry = None;
    if let Some((a, p, sloc)) = &vs.sorry {
        let f = vs.sorry_fwd.as_ref().unwrap_or(&vs.fwd);
        let d = dest(ctx, &rule.key, *a, Some(*p), f, sloc);
        if dests.iter().any(|x| x.addr == d.addr && x.port == d.port) {
            ctx.warn(sloc, format!("sorry_server {a} {p} is also a real server: not used as sorry server"));
        } else {
            sorry = Some((DestHealth { dest: dest_args(rule, &d), weight: d.weight, inhibit: vs.sorry_inhibit }, d));
        }
    }
    let cfg = VsHealth {
        service: service_args(rule),
        // keepalived 2.2.7 (check_data.c, seen in the VM): a quorum above
        // the real servers' total weight is reduced to that total.
        quorum: vs.quorum.min(vs.rss.iter().map(|r| r.weight as u64).sum()),
        hysteresis: vs.hysteresis,
        sorry: sorry.as_ref().map(|(h, _)| h.clone()),
        reals,
        quorum_up: vs.quorum_up.clone(),
        quorum_down: vs.quorum_down.clone(),
    };
    let (held, sorry_held) = VsState::initial(&cfg).desired();
    for (mut d, h) in dests.into_iter().zip(held) {
        if let Some(w) = h {
            d.weight = w;
            rule.dests.push(d);
        }
    }
    if let (Some((_, mut d)), Some(w)) = (sorry, sorry_held) {
        d.weight = w;
        rule.dests.push(d);
    }
    cfg
}

/// A checker with its defaults resolved: it connects to the real server
/// unless `connect_ip`/`connect_port` say otherwise.
fn resolve(c: &ParsedChecker, t: &Timing, addr: IpAddr, port: u16) -> CheckerConfig {
    let delay_loop = t.delay_loop.unwrap_or(DEFAULT_DELAY_LOOP);
    let dst = SocketAddr::new(c.connect_ip.unwrap_or(addr), c.connect_port.unwrap_or(port));
    // `bind_port` without `bindto` binds nothing: keepalived stores the
    // port in a sockaddr whose family stays AF_UNSPEC, and
    // socket_bind_connect binds only one with a family.
    let bind = c.bindto.map(|a| SocketAddr::new(a, c.bind_port.unwrap_or(0)));
    let target = Target {
        addr: dst,
        timeout: t.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        bind,
        bind_if: c.bind_if.clone(),
    };
    let (kind, retry) = match c.kw.as_str() {
        "HTTP_GET" => (
            CheckKind::Http { target, urls: c.urls.clone(), virtualhost: c.virtualhost.clone() },
            DEFAULT_RETRY,
        ),
        "SSL_GET" => (
            CheckKind::Ssl {
                target,
                urls: c.urls.clone(),
                virtualhost: c.virtualhost.clone(),
                enable_sni: c.enable_sni,
                // From the top-level `SSL` block, once the whole file is read.
                client_cert: None,
            },
            DEFAULT_RETRY,
        ),
        "MISC_CHECK" => (
            CheckKind::Misc {
                argv: c.misc_argv.clone(),
                timeout: c.misc_timeout.unwrap_or(delay_loop),
                dynamic: c.misc_dynamic,
                user: c.misc_user.clone(),
                // Set by the daemon when it has checked the script.
                run_as: None,
            },
            0,
        ),
        _ => (CheckKind::Tcp(target), DEFAULT_RETRY),
    };
    CheckerConfig {
        kind,
        delay_loop,
        retry: t.retry.unwrap_or(retry),
        delay_before_retry: t.delay_before_retry.unwrap_or(DEFAULT_DELAY_BEFORE_RETRY),
        alpha: t.alpha.unwrap_or(false),
        warmup: t.warmup.unwrap_or_default(),
        origin: c.loc.to_string(),
    }
}

/// The service's ipvsadm words (`-t VIP:PORT`), as `-S` writes them.
fn service_args(rule: &ServiceRule) -> Vec<String> {
    let mut svc = rule.clone();
    svc.dests.clear();
    let text = format_save(&RuleSet { services: vec![svc] });
    text.split_whitespace().skip(1).take_while(|w| *w != "-s").map(str::to_string).collect()
}

/// A real server's ipvsadm words (`-r ADDR:PORT -m ...`, thresholds
/// included, no `-w`).
fn dest_args(rule: &ServiceRule, d: &DestRule) -> Vec<String> {
    let skip = 1 + service_args(rule).len();
    let mut one = rule.clone();
    one.dests = vec![d.clone()];
    let text = format_save(&RuleSet { services: vec![one] });
    let line = text.lines().nth(1).unwrap_or_default();
    let words: Vec<&str> = line.split_whitespace().skip(skip).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "-w" {
            i += 2;
            continue;
        }
        out.push(words[i].to_string());
        i += 1;
    }
    for (flag, v) in [("-x", d.u_threshold), ("-y", d.l_threshold)] {
        if v != 0 {
            out.push(flag.into());
            out.push(v.to_string());
        }
    }
    out
}

/// A real server of the service `key` (weight 1, no thresholds); DR and
/// TUN keep the service port (warned about when the server names another).
fn dest(ctx: &mut Ctx, key: &ServiceKey, addr: IpAddr, port: Option<u16>, f: &Fwd, loc: &Loc) -> DestRule {
    let (vport, is_fwmark) = match *key {
        ServiceKey::Addr { port, .. } => (port, false),
        ServiceKey::Fwmark { .. } => (0, true),
    };
    let fwdm = match f.method.as_str() {
        "NAT" => FwdMethod::Masq,
        "DR" => FwdMethod::Route,
        _ => FwdMethod::Tunnel { tun: f.tun, csum: f.csum },
    };
    let mut port = port.unwrap_or(vport);
    if !is_fwmark && f.method != "NAT" && port != vport {
        ctx.warn(
            loc,
            format!(
                "{} server {addr} port {port} becomes {vport}: {} forwarding keeps the service port",
                f.method, f.method
            ),
        );
        port = vport;
    }
    DestRule { addr, port, fwd: fwdm, weight: 1, u_threshold: 0, l_threshold: 0 }
}

/// The `ipvsadm -R` script that loads `rules` in configuration order
/// (thresholds included, which `-S` does not show).
pub fn restore_script(rules: &RuleSet) -> String {
    let mut out = String::new();
    for s in &rules.services {
        let mut svc = s.clone();
        svc.dests.clear();
        out.push_str(&format_save(&RuleSet { services: vec![svc.clone()] }));
        for d in &s.dests {
            let mut one = svc.clone();
            one.dests = vec![d.clone()];
            let text = format_save(&RuleSet { services: vec![one] });
            let line = text.lines().nth(1).unwrap_or_default();
            out.push_str(line);
            if d.u_threshold != 0 {
                out.push_str(&format!(" -x {}", d.u_threshold));
            }
            if d.l_threshold != 0 {
                out.push_str(&format!(" -y {}", d.l_threshold));
            }
            out.push('\n');
        }
    }
    out
}
