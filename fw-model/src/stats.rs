//! The `STATS.json` report of a director: per service and per real server
//! the counters `ipvsadm -L -n --stats` shows plus the connection counts
//! `ipvsadm -L -n` shows, and the director's frame, drop, host-handoff and
//! ICMP counters.

use crate::director::{Director, DropReason, HostReason};
use crate::ipvs::{Rates, Stats};
use serde::Serialize;
use std::collections::BTreeMap;

/// One real server of a service in the report: its configuration,
/// connection counts (`ipvsadm -L -n`) and counters (`--stats`).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct RealServerReport {
    /// `ADDR:PORT` of the real server.
    pub server: String,
    /// Forwarding method as `ipvsadm -L` names it (`Masq`, `Route`,
    /// `Tunnel`, `Local`).
    pub forward: String,
    /// Current weight (kernel `dest->weight`).
    pub weight: i32,
    /// Connections in an active state (kernel `activeconns`).
    pub activeconns: i32,
    /// Connections in an inactive state (kernel `inactconns`).
    pub inactconns: i32,
    /// Persistence templates bound to this server (kernel
    /// `persistconns`).
    pub persistconns: i32,
    /// The server's IPVS counters (`conns`, `inpkts`, `outpkts`,
    /// `inbytes`, `outbytes`), flattened into this object.
    #[serde(flatten)]
    pub stats: Stats,
    /// The rate estimator's averages (`ipvsadm -L --rate`).
    pub rates: Rates,
}

/// One virtual service in the report, with its real servers.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct ServiceReport {
    /// `PROTO VIP:PORT` as `ipvsadm -L -n` shows it, e.g. `TCP
    /// 10.0.0.1:80`.
    pub service: String,
    /// Scheduler name (`rr`, `wlc`, ...).
    pub scheduler: String,
    /// Sum of the real servers' `activeconns`.
    pub activeconns: i64,
    /// Sum of the real servers' `inactconns`.
    pub inactconns: i64,
    /// The service's IPVS counters (`conns`, `inpkts`, `outpkts`,
    /// `inbytes`, `outbytes`), flattened into this object.
    #[serde(flatten)]
    pub stats: Stats,
    /// The rate estimator's averages (`ipvsadm -L --rate`).
    pub rates: Rates,
    /// Its real servers, in `ipvsadm -L` order.
    pub real_servers: Vec<RealServerReport>,
}

/// What became of the frames the director received.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct FrameCounts {
    /// Frames received (and credited from the hardware).
    pub input: u64,
    /// Frames transmitted (fragments and generated replies included).
    pub transmitted: u64,
    /// Frames handed to the director's own stack.
    pub to_host: u64,
    /// Frames dropped (an ICMP error sent instead counts too).
    pub dropped: u64,
    /// Fragments kept for reassembly (their datagram went on when complete).
    pub held: u64,
}

/// The connection table's size and turnover.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct ConnCounts {
    /// Entries in the connection table now (templates included).
    pub live: usize,
    /// Connections created since start.
    pub created: u64,
    /// Connections expired since start.
    pub expired: u64,
    /// Persistence templates created since start.
    pub templates_created: u64,
}

/// The whole report.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Every live virtual service.
    pub services: Vec<ServiceReport>,
    /// The director-wide IPVS counters (kernel `ipvs->tot_stats`).
    pub total: Stats,
    /// The rate estimator's averages over `total`.
    pub total_rates: Rates,
    /// What became of the frames received.
    pub frames: FrameCounts,
    /// Frames handed to the stack, by reason name (`local`, `not_syn`,
    /// ...); reasons with a zero count left out.
    pub to_host: BTreeMap<String, u64>,
    /// Frames dropped, by reason name (`no_real_server`, `ttl_exceeded`,
    /// ...); reasons with a zero count left out.
    pub dropped: BTreeMap<String, u64>,
    /// ICMP messages generated, keyed `type T code C`.
    pub icmp_sent: BTreeMap<String, u64>,
    /// ICMP errors suppressed by the per-destination rate limit.
    pub icmp_rate_limited: u64,
    /// ARP replies sent.
    pub arp_replies: u64,
    /// ICMPv6 messages generated, keyed `type T code C`.
    pub icmp6_sent: BTreeMap<String, u64>,
    /// Neighbour Advertisements sent.
    pub nd_adverts: u64,
    /// The connection table's size and turnover.
    pub connections: ConnCounts,
    /// IPv4 reassembly.
    pub reassembly: crate::director::ReasmCounters,
    /// What happened to the frames read before the director saw them
    /// (replay and daemon; absent in a report of the director alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intake: Option<Intake>,
    /// The data plane's offload counters (replay on a backend with a card).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<OffloadCounts>,
}

/// The longest frame a receiver takes: the card's DMA buffers and its
/// MAC's largest frame (`MAX_FRAME` of docs/hardware.md §8, 16 KiB); a
/// longer one is dropped on receive as `oversize`.
pub const MAX_RX_FRAME: usize = 16384;

/// The shortest frame a receiver takes: an Ethernet header (Linux's
/// `eth_type_trans` needs 14 bytes; `tun` refuses shorter writes).
pub const MIN_RX_FRAME: usize = 14;

/// Why a frame was dropped on receive, before the director saw it (as a
/// NIC's MAC and its driver drop it: Linux counts these in
/// `rx_length_errors`; ice and igb name them `rx_oversize`/`rx_undersize`
/// and `rx_long_length_errors`/`rx_short_length_errors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiveDrop {
    /// No bytes at all.
    Empty,
    /// Shorter than an Ethernet header ([`MIN_RX_FRAME`]).
    Runt,
    /// Longer than the longest receive buffer ([`MAX_RX_FRAME`]).
    Oversize,
    /// Refused by the card's receive ring (no buffer posted, a buffer too
    /// short): a receive-ring drop of the card, counted instead of failing.
    Ring,
}

impl ReceiveDrop {
    /// The drop reason of a frame of `len` bytes, if it is dropped on receive.
    pub fn of_len(len: usize) -> Option<ReceiveDrop> {
        match len {
            0 => Some(ReceiveDrop::Empty),
            n if n < MIN_RX_FRAME => Some(ReceiveDrop::Runt),
            n if n > MAX_RX_FRAME => Some(ReceiveDrop::Oversize),
            _ => None,
        }
    }

    /// The name in `STATS.json` and `lvsnic status`.
    pub fn name(self) -> &'static str {
        match self {
            ReceiveDrop::Empty => "empty",
            ReceiveDrop::Runt => "runt",
            ReceiveDrop::Oversize => "oversize",
            ReceiveDrop::Ring => "ring",
        }
    }
}

/// Frames dropped on receive, by [`ReceiveDrop`] reason.
#[derive(Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiveDrops {
    /// Zero-length frames.
    pub empty: u64,
    /// Frames shorter than an Ethernet header.
    pub runt: u64,
    /// Frames longer than [`MAX_RX_FRAME`].
    pub oversize: u64,
    /// Frames the card's receive ring refused.
    pub ring: u64,
}

impl ReceiveDrops {
    /// Counts one drop.
    pub fn count(&mut self, why: ReceiveDrop) {
        match why {
            ReceiveDrop::Empty => self.empty += 1,
            ReceiveDrop::Runt => self.runt += 1,
            ReceiveDrop::Oversize => self.oversize += 1,
            ReceiveDrop::Ring => self.ring += 1,
        }
    }

    /// Every drop.
    pub fn total(&self) -> u64 {
        self.empty + self.runt + self.oversize + self.ring
    }
}

/// The frames read, and those that did not reach the director:
/// `frames_read = frames.input + rate_limited + dropped_on_receive.total()`
/// (`frames.input` counts the frames the director saw, in software or
/// credited from the hardware).
#[derive(Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Intake {
    /// Every frame read (from the capture or the wire).
    pub frames_read: u64,
    /// Dropped on receive, by reason.
    pub dropped_on_receive: ReceiveDrops,
    /// New-connection frames dropped by the `[limits]` rate limit.
    pub rate_limited: u64,
}

/// The card's side of a run: what it forwarded alone, what did not fit.
#[derive(Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OffloadCounts {
    /// Frames the data plane forwarded without the host.
    pub in_hardware: u64,
    /// Connections whose flows did not fit in the card's tables (failed
    /// placements; a connection marked unplaceable searches again only
    /// after a slot is freed or an entry may have become idle).
    pub table_full: u64,
    /// Offloaded connections evicted, idle, for a connection that did
    /// not fit.
    pub evicted: u64,
}

/// Items made by `f` from the live services of `d`, from service index
/// `*next` on, looking at `max` services at most, appended to `out`;
/// whether the table's end was reached. What a caller that must not hold
/// its thread for 10,000 services uses to copy them over several calls.
pub fn services_step<T>(
    d: &Director,
    next: &mut usize,
    max: usize,
    out: &mut Vec<T>,
    f: impl Fn(&Director, &crate::ipvs::Service) -> T,
) -> bool {
    let all = &d.services.services;
    let end = all.len().min(next.saturating_add(max));
    out.extend(all[(*next).min(end)..end].iter().filter(|s| s.live).map(|s| f(d, s)));
    *next = end;
    end == all.len()
}

/// One service of a [`Report`].
pub fn service_report(d: &Director, s: &crate::ipvs::Service) -> ServiceReport {
    let real_servers: Vec<RealServerReport> = s
        .order
        .iter()
        .rev()
        .map(|&id| {
            let r = d.services.dest(id);
            RealServerReport {
                server: std::net::SocketAddr::new(r.addr, r.port).to_string(),
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
        service: format!("{} {}", s.proto.list_name(), std::net::SocketAddr::new(s.vaddr, s.vport)),
        scheduler: s.rule.scheduler.clone(),
        activeconns: real_servers.iter().map(|r| r.activeconns as i64).sum(),
        inactconns: real_servers.iter().map(|r| r.inactconns as i64).sum(),
        stats: s.stats,
        rates: s.est.read(),
        real_servers,
    }
}

impl Report {
    /// Builds the report of a director's current state.
    pub fn of(d: &Director) -> Report {
        let (mut next, mut services) = (0, Vec::new());
        while !services_step(d, &mut next, usize::MAX, &mut services, service_report) {}
        Report::with_services(d, services)
    }

    /// The report of `d` with `services` as its services' part (taken
    /// before, a slice at a time: [`services_step`] with [`service_report`]).
    pub fn with_services(d: &Director, services: Vec<ServiceReport>) -> Report {
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
            icmp6_sent: c.icmp6_sent.iter().map(|((t, code), n)| (format!("type {t} code {code}"), *n)).collect(),
            nd_adverts: c.nd_adverts,
            connections: ConnCounts {
                live: d.conns.len(),
                created: c.conns_created,
                expired: c.conns_expired,
                templates_created: c.templates_created,
            },
            reassembly: c.reasm.clone(),
            intake: None,
            offload: None,
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
    let (mut next, mut services) = (0, Vec::new());
    while !services_step(d, &mut next, usize::MAX, &mut services, service_listing) {}
    (listing_header(d), services)
}

/// The header line's part of [`listings`].
pub fn listing_header(d: &Director) -> crate::rules::ipvsadm::ListingHeader {
    crate::rules::ipvsadm::ListingHeader { conn_tab_size: 1u32 << d.cfg.sysctl.conn_tab_bits }
}

/// One service of [`listings`].
pub fn service_listing(d: &Director, s: &crate::ipvs::Service) -> crate::rules::ipvsadm::ServiceListing {
    use crate::rules::ipvsadm::{DestListing, RateView, ServiceListing, StatsView};
    let sv = |s: &Stats| StatsView { conns: s.conns, inpkts: s.inpkts, outpkts: s.outpkts, inbytes: s.inbytes, outbytes: s.outbytes };
    let rv = |e: &crate::ipvs::Estimator| {
        let r = e.read();
        RateView { cps: r.cps, inpps: r.inpps, outpps: r.outpps, inbps: r.inbps, outbps: r.outbps }
    };
    ServiceListing {
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
                    addr: r.addr,
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
    }
}

/// The connection table as `ipvsadm -L -n -c` lists it (`/proc/net/ip_vs_conn`
/// order is the hash table's; the model lists by slot).
pub fn connection_listings(d: &Director) -> Vec<crate::rules::ipvsadm::ConnListing> {
    d.conns.iter().map(|(id, _)| connection_listing(d, id)).collect()
}

/// One row of [`connection_listings`]: connection `id` of `d` as
/// `ipvsadm -L -n -c` prints it (the daemon lists its table a slice at a
/// time, as the kernel's `/proc/net/ip_vs_conn` reads do).
pub fn connection_listing(d: &Director, id: crate::conn::ConnId) -> crate::rules::ipvsadm::ConnListing {
    let c = d.conns.get(id);
    use crate::conn::tcp::STATE_NAMES;
    use crate::rules::{ipvsadm::ConnListing, Protocol};
    use std::net::IpAddr;
    let now = d.now();
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
    let crate::conn::ConnAddrs { caddr, vaddr, mut daddr } = d.conns.addrs(id);
    // ipvsadm's print_conn reads the three addresses of a
    // /proc/net/ip_vs_conn line in the client's family
    // (ip_vs_conn_seq_show prints the server's in its own: `%pI6` or
    // `%08X`). A tunnel across families so shows its server wrongly: an
    // IPv6 server of an IPv4 client goes through `strtoul(.., 16)`, which
    // stops at the first ':' (2001:0db8:... shows as 0.0.32.1); an IPv4
    // server of an IPv6 client fails `inet_pton` and leaves ipvsadm's
    // buffer uninitialised (the model shows ::).
    daddr = match (caddr, daddr) {
        (IpAddr::V4(_), IpAddr::V6(a)) => IpAddr::V4(u32::from(a.segments()[0]).into()),
        (IpAddr::V6(_), IpAddr::V4(_)) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        (_, a) => a,
    };
    ConnListing {
        proto,
        caddr,
        cport: c.cport,
        vaddr,
        vport: c.vport,
        daddr,
        dport: c.dport,
        state,
        expires_secs: left.min(u32::MAX as u64) as u32,
        pe_name: None,
        pe_data: None,
    }
}
