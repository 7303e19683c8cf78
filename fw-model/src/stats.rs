//! The `STATS.json` report of a director: per service and per real server
//! the counters `ipvsadm -L -n --stats` shows plus the connection counts
//! `ipvsadm -L -n` shows, and the director's frame, drop, host-handoff and
//! ICMP counters.

use crate::director::{Director, DropReason, HostReason};
use crate::ipvs::{Rates, Stats};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct RealServerReport {
    pub server: String,
    pub forward: String,
    pub weight: i32,
    pub activeconns: i32,
    pub inactconns: i32,
    pub persistconns: i32,
    #[serde(flatten)]
    pub stats: Stats,
    /// The rate estimator's averages (`ipvsadm -L --rate`).
    pub rates: Rates,
}

#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct ServiceReport {
    pub service: String,
    pub scheduler: String,
    pub activeconns: i64,
    pub inactconns: i64,
    #[serde(flatten)]
    pub stats: Stats,
    /// The rate estimator's averages (`ipvsadm -L --rate`).
    pub rates: Rates,
    pub real_servers: Vec<RealServerReport>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct FrameCounts {
    pub input: u64,
    pub transmitted: u64,
    pub to_host: u64,
    pub dropped: u64,
    /// Fragments kept for reassembly (their datagram went on when complete).
    pub held: u64,
}

#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct ConnCounts {
    pub live: usize,
    pub created: u64,
    pub expired: u64,
    pub templates_created: u64,
}

/// The whole report.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub services: Vec<ServiceReport>,
    pub total: Stats,
    pub total_rates: Rates,
    pub frames: FrameCounts,
    pub to_host: BTreeMap<String, u64>,
    pub dropped: BTreeMap<String, u64>,
    pub icmp_sent: BTreeMap<String, u64>,
    pub icmp_rate_limited: u64,
    pub arp_replies: u64,
    pub connections: ConnCounts,
    /// IPv4 reassembly.
    pub reassembly: crate::director::ReasmCounters,
}

impl Report {
    /// Builds the report of a director's current state.
    pub fn of(d: &Director) -> Report {
        let services = d
            .services
            .live_services()
            .map(|s| {
                let real_servers: Vec<RealServerReport> = s
                    .order
                    .iter()
                    .rev()
                    .map(|&id| {
                        let r = d.services.dest(id);
                        RealServerReport {
                            server: format!("{}:{}", r.addr, r.port),
                            forward: r.fwd.list_name().to_string(),
                            weight: r.weight,
                            activeconns: r.activeconns,
                            inactconns: r.inactconns,
                            persistconns: r.persistconns,
                            stats: r.stats,
                            rates: r.est.read(),
                        }
                    })
                    .collect();
                ServiceReport {
                    service: format!("{} {}:{}", s.proto.list_name(), s.vaddr, s.vport),
                    scheduler: s.rule.scheduler.clone(),
                    activeconns: real_servers.iter().map(|r| r.activeconns as i64).sum(),
                    inactconns: real_servers.iter().map(|r| r.inactconns as i64).sum(),
                    stats: s.stats,
                    rates: s.est.read(),
                    real_servers,
                }
            })
            .collect();
        let c = &d.counters;
        Report {
            services,
            total: d.total,
            total_rates: d.total_est.read(),
            frames: FrameCounts {
                input: c.frames_in,
                transmitted: c.frames_tx,
                to_host: c.frames_host,
                dropped: c.frames_dropped,
                held: c.frames_held,
            },
            to_host: HostReason::ALL
                .iter()
                .filter(|r| c.host[**r as usize] > 0)
                .map(|r| (r.name().to_string(), c.host[*r as usize]))
                .collect(),
            dropped: DropReason::ALL
                .iter()
                .filter(|r| c.drop[**r as usize] > 0)
                .map(|r| (r.name().to_string(), c.drop[*r as usize]))
                .collect(),
            icmp_sent: c.icmp_sent.iter().map(|((t, code), n)| (format!("type {t} code {code}"), *n)).collect(),
            icmp_rate_limited: c.icmp_rate_limited,
            arp_replies: c.arp_replies,
            connections: ConnCounts {
                live: d.conns.len(),
                created: c.conns_created,
                expired: c.conns_expired,
                templates_created: c.templates_created,
            },
            reassembly: c.reasm.clone(),
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// The director's services as `ipvsadm -L` lists them (counters and the
/// rate estimator's averages included).
pub fn listings(d: &Director) -> (crate::rules::ipvsadm::ListingHeader, Vec<crate::rules::ipvsadm::ServiceListing>) {
    use crate::rules::ipvsadm::{DestListing, ListingHeader, RateView, ServiceListing, StatsView};
    let sv = |s: &Stats| StatsView { conns: s.conns, inpkts: s.inpkts, outpkts: s.outpkts, inbytes: s.inbytes, outbytes: s.outbytes };
    let rv = |e: &crate::ipvs::Estimator| {
        let r = e.read();
        RateView { cps: r.cps, inpps: r.inpps, outpps: r.outpps, inbps: r.inbps, outbps: r.outbps }
    };
    let header = ListingHeader { conn_tab_size: 1u32 << d.cfg.sysctl.conn_tab_bits };
    let services = d
        .services
        .live_services()
        .map(|s| ServiceListing {
            key: s.rule.key,
            scheduler: s.rule.scheduler.clone(),
            flags: s.rule.flags,
            persistent: s.rule.persistent,
            netmask: s.rule.netmask,
            pe: s.rule.pe.clone(),
            ops: s.rule.ops,
            stats: sv(&s.stats),
            rates: rv(&s.est),
            dests: s
                .order
                .iter()
                .map(|&id| {
                    let r = d.services.dest(id);
                    DestListing {
                        addr: std::net::IpAddr::V4(r.addr),
                        port: r.port,
                        fwd: r.fwd,
                        weight: r.weight as u32,
                        u_threshold: r.u_threshold,
                        l_threshold: r.l_threshold,
                        activeconns: r.activeconns as u32,
                        inactconns: r.inactconns as u32,
                        persistconns: r.persistconns as u32,
                        stats: sv(&r.stats),
                        rates: rv(&r.est),
                    }
                })
                .collect(),
        })
        .collect();
    (header, services)
}

/// The connection table as `ipvsadm -L -n -c` lists it (`/proc/net/ip_vs_conn`
/// order is the hash table's; the model lists by slot).
pub fn connection_listings(d: &Director) -> Vec<crate::rules::ipvsadm::ConnListing> {
    use crate::conn::tcp::STATE_NAMES;
    use crate::rules::{ipvsadm::ConnListing, Protocol};
    use std::net::{IpAddr, Ipv4Addr};
    let now = d.now();
    d.conns
        .iter()
        .map(|(_, c)| {
            let proto = match c.proto {
                17 => Protocol::Udp,
                132 => Protocol::Sctp,
                _ => Protocol::Tcp,
            };
            let state = match c.proto {
                6 => STATE_NAMES.get(c.state as usize).copied().unwrap_or("ERR!").to_string(),
                17 => "UDP".to_string(),
                _ => "NONE".to_string(),
            };
            let left = c.expires.saturating_sub(now) / crate::time::SEC;
            ConnListing {
                proto,
                caddr: IpAddr::V4(Ipv4Addr::from(c.caddr)),
                cport: c.cport,
                vaddr: IpAddr::V4(Ipv4Addr::from(c.vaddr)),
                vport: c.vport,
                daddr: IpAddr::V4(Ipv4Addr::from(c.daddr)),
                dport: c.dport,
                state,
                expires_secs: left.min(u32::MAX as u64) as u32,
                pe_name: None,
                pe_data: None,
            }
        })
        .collect()
}
