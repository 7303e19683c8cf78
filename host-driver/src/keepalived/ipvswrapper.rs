//! From keepalived's virtual servers to IPVS services and real servers,
//! what keepalived's check/ipwrapper.c and ipvswrapper.c do once every
//! server's state is known: one service per key, real servers with the
//! service's (or their own) forwarding method, servers starting down left
//! out or at weight 0, the sorry server below quorum; and the `ipvsadm -R`
//! script that loads the result.

use super::check_parser::{Fwd, ServiceKeyProto, VirtualServer, VirtualServices};
use super::parser::{Ctx, Loc};
use lvsnic_model::rules::ipvsadm::format_save;
use lvsnic_model::rules::{
    AddressFamily, DestRule, FwdMethod, Netmask, Protocol, RuleSet, ServiceKey, ServiceRule,
};
use std::net::IpAddr;

/// The services of a virtual server, one per key, appended to `rules`.
pub(super) fn add_services(ctx: &mut Ctx, v: VirtualServices, rules: &mut RuleSet) {
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
        add_dests(ctx, &vs, &mut rule);
        rules.services.push(rule);
    }
}

/// The real servers of `vs` (and its sorry server below quorum) into `rule`.
///
/// keepalived 2.2.7 (check_data.c, ipwrapper.c; seen in the VM): a
/// `quorum` above the real servers' total weight is reduced to it; the
/// quorum is up when the live weight reaches it and the total weight is not
/// 0; when it is down and there is a sorry server, the sorry server is
/// added and the live real servers are taken out of the pool.
fn add_dests(ctx: &mut Ctx, vs: &VirtualServer, rule: &mut ServiceRule) {
    let mut live_weight: u64 = 0;
    let mut live = Vec::new();
    for r in &vs.rss {
        let f = r.fwd.as_ref().unwrap_or(&vs.fwd);
        let mut d = dest(ctx, &rule.key, r.addr, r.port, f, &r.loc);
        d.weight = r.weight;
        d.u_threshold = r.uth;
        d.l_threshold = r.lth;
        let down = r.alpha.unwrap_or(vs.alpha) && !r.checkers.is_empty();
        for (cloc, what) in &r.checkers {
            let state = if down { "the server stays down (alpha)" } else { "the server is taken as up" };
            ctx.warn(cloc, format!("{what}: {state}"));
        }
        if down {
            if r.inhibit {
                ctx.warn(&r.loc, format!("real server {} starts down (alpha) and no checker runs here: added with weight 0 (inhibit_on_failure)", r.addr));
                d.weight = 0;
            } else {
                ctx.warn(
                    &r.loc,
                    format!("real server {} starts down (alpha) and no checker runs here: not added", r.addr),
                );
                continue;
            }
        } else {
            live_weight += r.weight as u64;
        }
        if rule.dests.iter().any(|x| x.addr == d.addr && x.port == d.port) {
            ctx.err(&r.loc, format!("real server {} port {} defined twice", d.addr, d.port));
            continue;
        }
        live.push(!down);
        rule.dests.push(d);
    }
    let total: u64 = vs.rss.iter().map(|r| r.weight as u64).sum();
    let quorum = vs.quorum.min(total);
    let quorum_up = total > 0 && live_weight >= quorum;
    if let Some((a, p, sloc)) = &vs.sorry {
        if !quorum_up {
            let f = vs.sorry_fwd.as_ref().unwrap_or(&vs.fwd);
            let d = dest(ctx, &rule.key, *a, Some(*p), f, sloc);
            let mut i = 0;
            rule.dests.retain(|_| {
                i += 1;
                !live[i - 1]
            });
            ctx.warn(sloc, format!("sorry_server {a} {p} added instead of the live real servers: their live weight {live_weight} is below quorum ({quorum}), or their total weight is 0"));
            if !rule.dests.iter().any(|x| x.addr == d.addr && x.port == d.port) {
                rule.dests.push(d);
            }
        } else {
            ctx.warn(sloc, format!("sorry_server {a} {p} not added: it only serves while the real servers' live weight is below quorum ({quorum})"));
        }
    }
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
