//! The `STATS.json` report of a director: per service and per real server
//! the counters `ipvsadm -L -n --stats` shows plus the connection counts
//! `ipvsadm -L -n` shows, and the director's frame, drop, host-handoff and
//! ICMP counters.

use crate::director::{Director, DropReason, HostReason};
use crate::ipvs::Stats;
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
}

#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct ServiceReport {
    pub service: String,
    pub scheduler: String,
    pub activeconns: i64,
    pub inactconns: i64,
    #[serde(flatten)]
    pub stats: Stats,
    pub real_servers: Vec<RealServerReport>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct FrameCounts {
    pub input: u64,
    pub transmitted: u64,
    pub to_host: u64,
    pub dropped: u64,
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
    pub frames: FrameCounts,
    pub to_host: BTreeMap<String, u64>,
    pub dropped: BTreeMap<String, u64>,
    pub icmp_sent: BTreeMap<String, u64>,
    pub icmp_rate_limited: u64,
    pub arp_replies: u64,
    pub connections: ConnCounts,
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
                        }
                    })
                    .collect();
                ServiceReport {
                    service: format!("{} {}:{}", s.proto.list_name(), s.vaddr, s.vport),
                    scheduler: s.rule.scheduler.clone(),
                    activeconns: real_servers.iter().map(|r| r.activeconns as i64).sum(),
                    inactconns: real_servers.iter().map(|r| r.inactconns as i64).sum(),
                    stats: s.stats,
                    real_servers,
                }
            })
            .collect();
        let c = &d.counters;
        Report {
            services,
            total: d.total,
            frames: FrameCounts {
                input: c.frames_in,
                transmitted: c.frames_tx,
                to_host: c.frames_host,
                dropped: c.frames_dropped,
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
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}
