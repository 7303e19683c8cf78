//! The whole director: Linux IPVS as one Ethernet-in, Ethernet-out
//! function.
//!
//! [`Director::process`] takes a frame arriving at the director's NIC and its
//! timestamp and says what the director does with it: transmit it
//! (rewritten, or replaced by a generated ARP/ICMP reply, possibly followed
//! by more frames such as IP fragments), hand it to the director's own
//! network stack, or drop it. The decision logic follows `ip_vs_core.c`
//! (`ip_vs_in`, `ip_vs_out`, `ip_vs_in_icmp`, `ip_vs_out_icmp`,
//! `ip_vs_schedule`, `ip_vs_sched_persist`, `ip_vs_leave`), `ip_vs_conn.c`
//! (timers, `ip_vs_bind_dest`/`ip_vs_unbind_dest`, `ip_vs_check_template`)
//! and `ip_vs_xmit.c` (`__ip_vs_get_out_rt`, the NAT/DR/TUN transmitters).
//!
//! What the kernel does outside IPVS is modelled where it shows on the
//! wire: `ip_forward` for NAT replies (TTL check and decrement, MTU check),
//! `icmp_send` (source address, quoting, per-destination rate limit),
//! `ip_fragment`, ARP replies for the director's address and every VIP.
//! Everything the kernel would deliver locally or route without IPVS
//! (traffic to the director's address, to a VIP port without a service,
//! non-IP, unrelated forwarded traffic) is handed to the host stack.
//!
//! IPv4 fragments are reassembled first ([`crate::defrag`]) and the datagram
//! is processed whole, then fragmented again on output.
//!
//! The code is split as the kernel's is: [`ip_vs_in`] and [`ip_vs_out`]
//! (the hooks of ip_vs_core.c), [`icmp`] (`ip_vs_in_icmp`,
//! `ip_vs_out_icmp`), [`output`] (the transmitters of ip_vs_xmit.c and
//! `icmp_send`), [`bind`] and [`timers`] (ip_vs_conn.c), [`stats`] and
//! [`ctl`] (rule changes, ip_vs_ctl.c); this module holds the types and
//! the entry point that classifies each frame.
//!
//! Deviations, all documented in `docs/architecture.md`: no ICMP "fragment
//! reassembly time exceeded" for an expired queue; IP IDs the
//! kernel draws from a randomised generator come from a deterministic
//! counter (ICMP errors) or copy the inner header's ID (non-DF tunnel
//! headers); the global ICMP rate limit
//! (randomised in the kernel) is not modelled; ICMP "fragmentation needed"
//! for tunnels does not lower a cached path MTU.

mod bind;
mod ctl;
mod fast;
#[cfg(test)]
mod frag6_tests;
mod icmp;
mod icmp6;
#[cfg(test)]
mod icmp6_tests;
mod ip_vs_in;
mod ip_vs_out;
mod ndisc;
mod output;
mod stats;
#[cfg(test)]
mod tests;
mod timers;
pub mod v6;
#[cfg(test)]
mod v6_tests;
#[cfg(test)]
mod v6_xmit_tests;

use crate::config::DirectorConfig;
use crate::defrag::{Defrag, DefragFail, DefragResult, DefragUser};
use crate::conn::{Conn, ConnId, ConnTable};
use crate::ipvs::estimator::EST_PERIOD;
use crate::ipvs::{Estimator, RuleError, ServiceTable, Stats};
use crate::rng::SplitMix64;
use crate::rules::{RuleSet, ServiceKey};
use crate::time::Time;
use crate::wire::{
    self, ArpOperation, ArpPacket, ArpRepr, EthernetFrame, FrameError, FrameInfo, Ipv4Packet, MacAddr,
    IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use crate::xmit;
use std::collections::HashMap;
use std::net::Ipv4Addr;


/// Why a frame went to the director's own network stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostReason {
    /// Runt, truncated or invalid headers (the stack drops these).
    Malformed,
    /// Not IPv4 and not ARP.
    NonIp,
    /// ARP not asking for one of our addresses, or an ARP reply.
    Arp,
    /// An IPv4 fragment left to the stack unreassembled: forwarded traffic
    /// of other protocols than TCP/UDP/ICMP, or one `ip_forward` refuses
    /// (TTL ≤ 1, DF and too big).
    Fragment,
    /// To a local address, not a load-balanced service (ping, ssh to the director...).
    Local,
    /// TCP segment without SYN (or with RST) that matches no connection.
    NotSyn,
    /// Source port 20 (FTP data is never scheduled), or FTP service pass-through.
    FtpData,
    /// Real server is the director itself (LOCALNODE).
    LocalRealServer,
    /// Not addressed to the director, and not a NAT reply: routed by the stack.
    Forward,
}

impl HostReason {
    /// Every reason, in counter-index order.
    pub const ALL: [HostReason; 9] = [
        HostReason::Malformed,
        HostReason::NonIp,
        HostReason::Arp,
        HostReason::Fragment,
        HostReason::Local,
        HostReason::NotSyn,
        HostReason::FtpData,
        HostReason::LocalRealServer,
        HostReason::Forward,
    ];
    /// The name in `STATS.json` and the replay summary.
    pub fn name(self) -> &'static str {
        match self {
            HostReason::Malformed => "malformed",
            HostReason::NonIp => "non_ip",
            HostReason::Arp => "arp",
            HostReason::Fragment => "fragment",
            HostReason::Local => "local",
            HostReason::NotSyn => "not_syn",
            HostReason::FtpData => "ftp_data",
            HostReason::LocalRealServer => "local_real_server",
            HostReason::Forward => "forward",
        }
    }
}

/// Why a frame was not sent anywhere (an ICMP error may have been sent
/// instead: see [`Counters::icmp_sent`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Ethernet destination is another host.
    OtherHost,
    /// TTL would expire (ICMP time exceeded sent, unless rate limited).
    TtlExceeded,
    /// DF set and too big for the egress MTU (ICMP fragmentation needed sent).
    FragNeeded,
    /// No real server available for a new connection (ICMP port unreachable).
    NoRealServer,
    /// Packet of a connection whose real server was deleted (`expire_nodest_conn`).
    DestUnavailable,
    /// ICMP error related to a connection with a bad ICMP checksum.
    BadIcmpChecksum,
    /// ICMP error about our tunnel, consumed after answering the client.
    TunnelIcmp,
    /// Unsolicited packet from a real server answered with port unreachable (`nat_icmp_send`).
    NatIcmpSend,
    /// Truncated transport header on a packet IPVS had to look into.
    Truncated,
    /// A fragment given up by reassembly (duplicate, overlap, inconsistent
    /// length, oversize, ECN mix, memory: see [`ReasmCounters`]).
    Reassembly,
    /// A Neighbour Solicitation for one of the director's addresses that
    /// `ndisc_rcv`/`ndisc_recv_ns` refuses (hop limit not 255, code not 0,
    /// bad checksum, bad options, a DAD probe with a source link-layer
    /// address or not to a solicited-node group).
    NdInvalid,
}

impl DropReason {
    /// Every reason, in counter-index order.
    pub const ALL: [DropReason; 11] = [
        DropReason::OtherHost,
        DropReason::TtlExceeded,
        DropReason::FragNeeded,
        DropReason::NoRealServer,
        DropReason::DestUnavailable,
        DropReason::BadIcmpChecksum,
        DropReason::TunnelIcmp,
        DropReason::NatIcmpSend,
        DropReason::Truncated,
        DropReason::Reassembly,
        DropReason::NdInvalid,
    ];
    /// The name in `STATS.json` and the replay summary.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::OtherHost => "other_host",
            DropReason::TtlExceeded => "ttl_exceeded",
            DropReason::FragNeeded => "frag_needed",
            DropReason::NoRealServer => "no_real_server",
            DropReason::DestUnavailable => "dest_unavailable",
            DropReason::BadIcmpChecksum => "bad_icmp_checksum",
            DropReason::TunnelIcmp => "tunnel_icmp",
            DropReason::NatIcmpSend => "nat_icmp_send",
            DropReason::Truncated => "truncated",
            DropReason::Reassembly => "reassembly",
            DropReason::NdInvalid => "nd_invalid",
        }
    }
}

/// What to do with the frame after [`Director::process`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Transmit the (rewritten or replaced) frame, then every frame in the
    /// `extra` vector, in order.
    Transmit,
    /// Hand the frame to the director's network stack: unchanged, or the
    /// reassembled datagram when the frame completed one.
    ToHost(HostReason),
    /// Send nothing.
    Drop(DropReason),
    /// A fragment kept for reassembly; the datagram is not complete yet.
    Held,
}

/// Reassembly counters, IPv4 and IPv6 together (`ip_fragment.c`'s and
/// `nf_conntrack_reasm.c`'s REASM* statistics).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReasmCounters {
    /// Fragments kept waiting for the rest of their datagram.
    pub held: u64,
    /// Datagrams completed (`REASMOKS`).
    pub reassembled: u64,
    /// Queues dropped incomplete after 30 s (IPv4) or 60 s (IPv6)
    /// (`REASMTIMEOUT`).
    pub timeouts: u64,
    /// Fragments inside data already queued (dropped alone).
    pub duplicates: u64,
    /// Fragments overlapping queued data (`REASM_OVERLAPS`; queue dropped).
    pub overlaps: u64,
    /// Zero-length fragments, data past the end, two different ends.
    pub invalid: u64,
    /// Datagrams over 65535 bytes.
    pub oversize: u64,
    /// ECN-capable and not-ECT fragments mixed.
    pub ecn_mix: u64,
    /// Fragments refused over `ipfrag_high_thresh`.
    pub no_memory: u64,
}

/// What the output path needs to know about the datagram being processed
/// when it was reassembled from fragments.
#[derive(Clone, Debug)]
struct ReasmInfo {
    /// `IPCB(skb)->frag_max_size`.
    frag_max_size: u16,
    /// `IPSKB_FRAG_PMTU`.
    pmtu: bool,
    /// Data length of each fragment, in order.
    pieces: Vec<usize>,
    user: DefragUser,
}

/// What `ip6_fragment` needs to know about the IPv6 datagram being
/// processed when `nf_defrag_ipv6` reassembled it.
#[derive(Clone, Debug)]
struct Reasm6Info {
    /// `IP6CB(skb)->frag_max_size`.
    frag_max_size: u16,
    /// Data length of each fragment, in order.
    pieces: Vec<usize>,
}

/// Director-wide counters (beyond the IPVS per-service statistics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received (and credited from the hardware).
    pub frames_in: u64,
    /// Frames transmitted (fragments and generated replies included).
    pub frames_tx: u64,
    /// Frames handed to the director's own stack.
    pub frames_host: u64,
    /// Frames dropped (an ICMP error sent instead counts too).
    pub frames_dropped: u64,
    /// Frames handed to the stack, by [`HostReason`] index.
    pub host: [u64; 9],
    /// Frames dropped, by [`DropReason`] index.
    pub drop: [u64; 11],
    /// Fragments held for reassembly.
    pub frames_held: u64,
    /// IPv4 reassembly counters.
    pub reasm: ReasmCounters,
    /// ICMP messages generated, by (type, code).
    pub icmp_sent: std::collections::BTreeMap<(u8, u8), u64>,
    /// ICMP errors suppressed by the per-destination rate limit (ICMPv6
    /// errors included).
    pub icmp_rate_limited: u64,
    /// ICMPv6 messages generated, by (type, code).
    pub icmp6_sent: std::collections::BTreeMap<(u8, u8), u64>,
    /// Neighbour Advertisements sent (in answer to solicitations).
    pub nd_adverts: u64,
    /// ARP replies sent.
    pub arp_replies: u64,
    /// Connections created.
    pub conns_created: u64,
    /// Connections expired.
    pub conns_expired: u64,
    /// Persistence templates created.
    pub templates_created: u64,
}

/// A problem with the rules for this director.
#[derive(Debug, thiserror::Error)]
pub enum DirectorError {
    /// The kernel would refuse a rule.
    #[error("service {service}: {error}")]
    Rule {
        /// The service, as `ipvsadm -L` names it.
        service: String,
        /// What the kernel would say.
        error: RuleError,
    },
    /// No static gateway MAC, and nothing learns it (only `lvsnic daemon` does).
    #[error("{}", crate::config::NO_STATIC_GATEWAY)]
    NoGatewayMac,
    /// A real server the director cannot reach: no next-hop MAC.
    #[error("real server {addr} of service {service} has no entry in [neighbors] of the director configuration")]
    NoNeighbor {
        /// The real server.
        addr: Ipv4Addr,
        /// Its service.
        service: String,
    },
}

/// The parsed facts of an IPv4 TCP/UDP/ICMP packet the logic needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pkt {
    l3: usize,
    ihl: usize,
    len: u16,
    saddr: u32,
    daddr: u32,
    proto: u8,
    ttl: u8,
    df: bool,
    /// L4 present (not a later fragment, header within total length).
    l4: Option<(usize, u16, u16, u8)>,
}

/// What `ip_options_compile` asks of the director for one received packet.
struct RcvOptionsHost<'a> {
    director: &'a Director,
    spec_dst: Ipv4Addr,
}

impl wire::ipv4_options::OptionsHost for RcvOptionsHost<'_> {
    fn spec_dst(&self) -> Ipv4Addr {
        self.spec_dst
    }
    fn timestamp(&self) -> u32 {
        wire::ipv4_options::ms_since_midnight(self.director.now)
    }
    fn stamps_prespecified(&self, addr: Ipv4Addr) -> bool {
        let d = self.director;
        wire::ipv4_options::not_unicast(addr, |a| a == d.cfg.ip || d.owns_vip(u32::from(a)))
    }
}

/// The golden-model director.
pub struct Director {
    /// The director configuration.
    pub cfg: DirectorConfig,
    /// Services and real servers.
    pub services: ServiceTable,
    /// The connection table.
    pub conns: ConnTable,
    /// `ipvs->tot_stats`.
    pub total: Stats,
    /// Rate estimator over `total`.
    pub total_est: Estimator,
    /// When the next rate-estimation tick falls (every 2 s from the start).
    est_next: Time,
    /// Director-wide counters.
    pub counters: Counters,
    rng: SplitMix64,
    now: Time,
    ip_id: u16,
    /// Per-destination ICMP rate limit state (`inet_peer` rate_tokens, rate_last).
    icmp_peers: HashMap<u32, (Time, Time)>,
    /// `icmpv6_xrlim_allow`'s token buckets, by destination.
    icmp6_peers: HashMap<std::net::Ipv6Addr, (Time, Time)>,
    /// A deleted server's connections are to be flushed (`expire_nodest_conn`).
    nodest_flush: bool,
    /// The connection the last processed packet belonged to (for the host
    /// slow path that installs hardware flows).
    pub last_conn: Option<ConnId>,
    /// The direction of that packet in its connection (`None`: an ICMP
    /// error about it), for the slow path's offload rule (a UDP NAT
    /// connection is offloaded once a reply has been seen).
    pub last_dir: Option<crate::conn::tcp::Direction>,
    /// Next-hop MAC per real server (`DestId`), resolved once from the
    /// neighbor table like the kernel's cached route in `dest->dest_dst`
    /// (emptied when a learned next hop changes).
    dest_mac: Vec<MacAddr>,
    /// Next-hop MACs the host resolved at run time (`cfg.resolve_neighbors`),
    /// by destination address: a real server's own MAC, or its router's.
    /// `[neighbors]` entries win over these.
    learned: HashMap<Ipv4Addr, MacAddr>,
    /// IPv6 next-hop MACs the host resolved at run time
    /// (`cfg.resolve_neighbors6`), by real server address.
    learned6: HashMap<std::net::Ipv6Addr, MacAddr>,
    /// The real server whose next hop had no MAC when the last processed
    /// frame was transmitted to it, or the gateway (`cfg.gateway`) when
    /// the frame went towards it without its MAC known
    /// (`cfg.resolve_neighbors` only): the
    /// frames of that [`Action::Transmit`] carry the all-zero destination
    /// MAC, and the host holds them until the MAC is known (Linux queues
    /// them on the neighbour, `arp_queue`).
    pub unresolved: Option<std::net::IpAddr>,
    /// Connections whose timer was forced to now (`ip_vs_conn_expire_now`):
    /// they expire whatever activity the hardware reports.
    forced_expiry: std::collections::HashSet<ConnId>,
    /// IPv4 reassembly queues.
    pub defrag: Defrag,
    /// Set while a reassembled datagram is processed.
    reasm: Option<ReasmInfo>,
    /// IPv6 reassembly queues (`nf_defrag_ipv6`, on once an IPv6 service
    /// exists).
    pub defrag6: crate::defrag6::Defrag6,
    /// Set while a reassembled IPv6 datagram is processed.
    reasm6: Option<Reasm6Info>,
    /// The IPv4 options of the packet being processed, as received.
    ip_opts: Option<wire::ipv4_options::CompiledOptions>,
    /// VRRP state of the VIPs named by [`set_vip_owned`](Self::set_vip_owned):
    /// `true` ours (master), `false` another director's (backup or fault:
    /// not answered in ARP, not load-balanced).
    /// IPv4 and IPv6 VIPs alike.
    vip_state: std::collections::BTreeMap<std::net::IpAddr, bool>,
    /// Whether a VIP not in `vip_state` is ours (default `true`: without
    /// VRRP every VIP is).
    vips_owned_by_default: bool,
}

/// Connections served outside the director's packet path (by the
/// hardware), as [`Director::advance_with`] sees them.
pub trait Offload {
    /// When a packet of connection `id` was last forwarded elsewhere, if ever.
    fn last_use(&mut self, id: ConnId, conn: &Conn) -> Option<Time>;
    /// Connection `id` is being removed from the table.
    fn removed(&mut self, id: ConnId, conn: &Conn);
}

/// No offload: the director sees every packet.
pub struct NoOffload;

impl Offload for NoOffload {
    fn last_use(&mut self, _: ConnId, _: &Conn) -> Option<Time> {
        None
    }
    fn removed(&mut self, _: ConnId, _: &Conn) {}
}

/// An IPv4 address of the IPv4 packet path in host order (0 for IPv6, which
/// that path never carries).
#[inline]
fn v4(a: std::net::IpAddr) -> u32 {
    match a {
        std::net::IpAddr::V4(a) => u32::from(a),
        std::net::IpAddr::V6(_) => 0,
    }
}

fn service_name(key: &ServiceKey) -> String {
    match key {
        ServiceKey::Addr { proto, addr, port } => format!("{} {}:{}", proto.list_name(), addr, port),
        ServiceKey::Fwmark { mark, .. } => format!("FWM {mark}"),
    }
}

impl Director {
    /// A director with `rules` loaded in file order at time `start`
    /// (normally the first packet's timestamp). Every real server must have
    /// a neighbor entry (or be the director itself).
    pub fn new(cfg: DirectorConfig, rules: &RuleSet, start: Time) -> Result<Self, DirectorError> {
        let mut d = Director {
            cfg,
            services: ServiceTable::new(),
            conns: ConnTable::with_capacity(1 << 16),
            total: Stats::default(),
            total_est: Estimator::default(),
            est_next: start + EST_PERIOD,
            counters: Counters::default(),
            rng: SplitMix64::new(0x7770_5EED),
            now: start,
            ip_id: 0,
            icmp_peers: HashMap::new(),
            icmp6_peers: HashMap::new(),
            nodest_flush: false,
            last_conn: None,
            last_dir: None,
            dest_mac: Vec::new(),
            learned: HashMap::new(),
            learned6: HashMap::new(),
            unresolved: None,
            forced_expiry: std::collections::HashSet::new(),
            defrag: Defrag::new(),
            reasm: None,
            defrag6: crate::defrag6::Defrag6::new(),
            reasm6: None,
            ip_opts: None,
            vip_state: std::collections::BTreeMap::new(),
            vips_owned_by_default: true,
        };
        if d.cfg.gateway_mac.is_none() && !d.cfg.resolve_neighbors {
            return Err(DirectorError::NoGatewayMac);
        }
        for s in &rules.services {
            let name = service_name(&s.key);
            d.services.add_service(s, start).map_err(|error| DirectorError::Rule { service: name.clone(), error })?;
            for r in &s.dests {
                d.check_neighbor(r.addr, &name)?;
                d.services.add_dest(&s.key, r).map_err(|error| DirectorError::Rule { service: name.clone(), error })?;
            }
        }
        Ok(d)
    }

    fn check_neighbor(&self, addr: std::net::IpAddr, service: &str) -> Result<(), DirectorError> {
        if let std::net::IpAddr::V4(a) = addr {
            if a != self.cfg.ip && !self.cfg.neighbors.contains_key(&a) && !self.cfg.resolve_neighbors {
                return Err(DirectorError::NoNeighbor { addr: a, service: service.to_string() });
            }
        }
        Ok(())
    }

    /// The MAC of the next hop towards `ip`: its `[neighbors]` entry, else
    /// the one the host learned, else the [gateway's](Self::gateway_mac);
    /// `None` while that is unknown (learned, not resolved yet).
    pub fn next_hop_mac(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        match self.cfg.neighbors.get(&ip).or_else(|| self.learned.get(&ip)) {
            Some(&m) => Some(m),
            None => self.gateway_mac(),
        }
    }

    /// The gateway's MAC: `[director] gateway_mac` (static, wins), else
    /// the `[neighbors]` entry or learned MAC of `[director] gateway`;
    /// `None` while it is not known.
    pub fn gateway_mac(&self) -> Option<MacAddr> {
        if let Some(m) = self.cfg.gateway_mac {
            return Some(m);
        }
        let g = self.cfg.gateway?;
        self.cfg.neighbors.get(&g).or_else(|| self.learned.get(&g)).copied()
    }

    /// Whether frames to `ip` go through the gateway (no `[neighbors]`
    /// entry, nothing learned for it).
    pub fn via_gateway(&self, ip: Ipv4Addr) -> bool {
        !self.cfg.neighbors.contains_key(&ip) && !self.learned.contains_key(&ip)
    }

    /// [`next_hop_mac`](Self::next_hop_mac) for a frame being transmitted:
    /// while the gateway's MAC is unknown, the all-zero MAC, and the frame
    /// is marked [unresolved](Self::unresolved) on the gateway (the host
    /// holds it until the MAC is known; an unknown gateway address marks
    /// it on 0.0.0.0, which the host drops, counted).
    pub(super) fn tx_next_hop_mac(&mut self, ip: Ipv4Addr) -> MacAddr {
        match self.next_hop_mac(ip) {
            Some(m) => m,
            None => {
                self.unresolved = Some(self.cfg.gateway.unwrap_or(Ipv4Addr::UNSPECIFIED).into());
                MacAddr::ZERO
            }
        }
    }

    /// The next-hop MAC of real server `ip`: its `[neighbors]` entry, else
    /// the one the host learned; `None` while it is unknown
    /// (`cfg.resolve_neighbors`; without it, the gateway as for any other
    /// address).
    pub fn real_server_mac(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        match self.cfg.neighbors.get(&ip).or_else(|| self.learned.get(&ip)) {
            Some(&m) => Some(m),
            None if self.cfg.resolve_neighbors => None,
            None => self.cfg.gateway_mac,
        }
    }

    /// Sets (or, with `None`, forgets) the next-hop MAC the host resolved
    /// for destination `ip`; whether what the director would send to `ip`
    /// changed. A `[neighbors]` entry for `ip` still wins.
    pub fn set_learned(&mut self, ip: Ipv4Addr, mac: Option<MacAddr>) -> bool {
        let had = self.learned.get(&ip).copied();
        match mac {
            Some(m) => self.learned.insert(ip, m),
            None => self.learned.remove(&ip),
        };
        if had != mac {
            self.dest_mac.clear();
        }
        had != mac && !self.cfg.neighbors.contains_key(&ip)
    }

    /// [`set_learned`](Self::set_learned) for an IPv6 real server
    /// (`cfg.resolve_neighbors6`): whether what the director would send to
    /// it changed. A `[neighbors]` entry for `ip` still wins.
    pub fn set_learned6(&mut self, ip: std::net::Ipv6Addr, mac: Option<MacAddr>) -> bool {
        let had = match mac {
            Some(m) => self.learned6.insert(ip, m),
            None => self.learned6.remove(&ip),
        };
        had != mac && !self.cfg.neighbors6.contains_key(&ip)
    }

    /// The next-hop MACs the host resolved, by destination.
    pub fn learned(&self) -> &HashMap<Ipv4Addr, MacAddr> {
        &self.learned
    }

    /// Forgets the per-real-server next-hop cache (after `cfg.neighbors`
    /// changed).
    pub fn neighbors_changed(&mut self) {
        self.dest_mac.clear();
    }

    /// Re-seeds the random source used by the `twos` scheduler.
    pub fn seed(&mut self, seed: u64) {
        self.rng = SplitMix64::new(seed);
    }

    /// Current model time (the last packet's timestamp).
    pub fn now(&self) -> Time {
        self.now
    }


    /// Warms the cache for the connection lookups of a batch of frames
    /// (request or reply direction) without changing any state, with
    /// independent loads that overlap in the memory system. Receive loops
    /// call it on each batch before processing the frames one by one;
    /// results of [`process`](Self::process) do not depend on it. Returns a
    /// value derived from the loads (give it to `std::hint::black_box`).
    pub fn warm_batch(&self, frames: &[&[u8]]) -> u32 {
        let mut keys = [(0u8, 0u32, 0u16); 32];
        let mut heads = [0u32; 32];
        let n = frames.len().min(32);
        for (k, f) in keys.iter_mut().zip(frames.iter()) {
            *k = self.lookup_key(f).unwrap_or((0, 0, 0));
        }
        self.conns.touch_batch(&keys[..n], &mut heads[..n])
    }

    /// The connection-table key of an IPv4 TCP/UDP frame (802.1Q-tagged or
    /// not).
    #[inline]
    fn lookup_key(&self, frame: &[u8]) -> Option<(u8, u32, u16)> {
        let eth = EthernetFrame::new_checked(frame).ok()?;
        if eth.ethertype() != wire::ETHERTYPE_IPV4 {
            return None;
        }
        let ip = Ipv4Packet::new_checked_header(eth.into_payload()).ok()?;
        let (sp, dp) = wire::transport_ports(&ip.into_inner()[ip.header_len()..])?;
        let (s, d) = (u32::from(ip.src_addr()), u32::from(ip.dst_addr()));
        // Requests are keyed on the source, replies on the destination.
        Some(if self.services.is_vip(d) { (ip.protocol(), s, sp) } else { (ip.protocol(), d, dp) })
    }

    /// Processes one frame received at time `ts`. On [`Action::Transmit`]
    /// the frame (rewritten in place, or replaced) goes to the wire followed
    /// by `extra`; on [`Action::ToHost`] it is unchanged.
    pub fn process(&mut self, ts: Time, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>) -> Action {
        self.advance(ts);
        self.process_now(frame, extra)
    }

    /// [`process`](Self::process) at the current time, without running
    /// timers (the caller ran [`advance_with`](Self::advance_with)).
    pub fn process_now(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>) -> Action {
        self.counters.frames_in += 1;
        self.last_conn = None;
        self.last_dir = None;
        self.unresolved = None;
        let a = self.process_inner(frame, extra);
        match a {
            Action::Transmit => self.counters.frames_tx += 1 + extra.len() as u64,
            Action::Held => self.counters.frames_held += 1,
            _ => {}
        }
        a
    }

    fn process_inner(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>) -> Action {
        if let Some(p) = fast::fast_pkt(frame) {
            // The checks below, for the frame the full classifier takes to
            // the IPv4 path unchanged.
            let dst_mac = MacAddr::from_bytes(&frame[0..6]).unwrap_or(MacAddr::ZERO);
            if dst_mac != self.cfg.mac {
                if !dst_mac.is_multicast() {
                    return self.drop(DropReason::OtherHost);
                }
                return self.host(HostReason::Local);
            }
            return self.ipv4_received(frame, extra, p);
        }
        let info = wire::parse_frame(frame);
        if frame.len() < 14 || info.error == Some(FrameError::Runt) {
            return self.host(HostReason::Malformed);
        }
        let dst_mac = MacAddr::from_bytes(&frame[0..6]).unwrap_or(MacAddr::ZERO);
        if dst_mac != self.cfg.mac && !dst_mac.is_multicast() {
            return self.drop(DropReason::OtherHost);
        }
        // No VLAN sub-interface: vlan_do_receive marks the frame PACKET_OTHERHOST.
        if info.vlan_tci.is_some() && self.cfg.vlan == crate::config::VlanMode::Drop {
            return self.drop(DropReason::OtherHost);
        }
        match info.ethertype {
            wire::ETHERTYPE_ARP => return self.arp(frame, &info),
            wire::ETHERTYPE_IPV4 => {}
            wire::ETHERTYPE_IPV6 => return self.ipv6(frame, extra, &info),
            _ => return self.host(HostReason::NonIp),
        }
        // IPVS does not look at the TCP data offset, only the fixed header.
        if !matches!(info.error, None | Some(FrameError::TcpBadHeaderLen)) {
            return self.host(HostReason::Malformed);
        }
        let Some(ip) = info.ipv4 else {
            return self.host(HostReason::Malformed);
        };
        if !ip.header_checksum_ok {
            return self.host(HostReason::Malformed);
        }
        if dst_mac != self.cfg.mac {
            // Broadcast/multicast IP traffic is never load-balanced.
            return self.host(HostReason::Local);
        }
        let p = Pkt {
            l3: ip.l3_offset,
            ihl: ip.header_len,
            len: ip.total_len,
            saddr: u32::from(ip.src),
            daddr: u32::from(ip.dst),
            proto: u8::from(ip.protocol),
            ttl: ip.ttl,
            df: ip.df,
            l4: info.l4.map(|l| (l.offset, l.src_port, l.dst_port, l.tcp_flags)),
        };
        if ip.is_fragment() {
            // A fragment of a VIP the director no longer owns goes to the
            // host unassembled, as any packet to it.
            if self.services.is_vip(p.daddr) && !self.owns_vip(p.daddr) {
                return self.host(HostReason::Forward);
            }
            return self.defragment(frame, extra, &p);
        }
        self.ipv4_received(frame, extra, p)
    }

    /// An IPv4 packet that is not a fragment, classified (`p`): IPVS (or
    /// the host) as its destination and protocol say.
    fn ipv4_received(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: Pkt) -> Action {
        // One VIP lookup serves both questions below.
        let is_vip = self.services.is_vip(p.daddr);
        let owned = is_vip && self.vip_owned(Ipv4Addr::from(p.daddr));
        if is_vip && !owned {
            // The address is no longer ours (VRRP backup): the host stack
            // routes or drops the packet, IPVS does not see it as local.
            return self.host(HostReason::Forward);
        }
        let local = p.daddr == u32::from(self.cfg.ip) || owned;
        // ip_rcv_options: the options are filled in before IPVS sees the
        // packet; the host stack gets the frame as it arrived (it does the
        // same itself).
        let received = if p.ihl > wire::ipv4::HEADER_LEN {
            match self.rcv_options(frame, &p, local) {
                Ok(orig) => Some(orig),
                Err(a) => return a,
            }
        } else {
            None
        };
        let a = match (local, p.proto) {
            (true, IPPROTO_TCP) | (true, IPPROTO_UDP) => self.ip_vs_in(frame, extra, &p),
            (true, IPPROTO_ICMP) => self.ip_vs_in_icmp(frame, extra, &p),
            (true, _) => self.host(HostReason::Local),
            (false, IPPROTO_TCP) | (false, IPPROTO_UDP) => self.ip_vs_out(frame, extra, &p),
            (false, IPPROTO_ICMP) => self.ip_vs_out_icmp(frame, extra, &p),
            (false, _) => self.host(HostReason::Forward),
        };
        self.ip_opts = None;
        if let (Action::ToHost(_), Some(orig)) = (a, received) {
            *frame = orig;
        }
        a
    }

    /// `ip_rcv_options` → `ip_options_compile` on the frame's IPv4 options
    /// (see [`wire::ipv4_options`]): fills them in place and keeps what it
    /// found for `ip_forward_options`; returns the frame as it arrived.
    /// Options the kernel refuses (ICMP parameter problem) and source
    /// routes (`accept_source_route` is off) make it drop the packet before
    /// IPVS: the frame goes to the host stack, which does the same.
    fn rcv_options(&mut self, frame: &mut Vec<u8>, p: &Pkt, local: bool) -> Result<Vec<u8>, Action> {
        let orig = frame.clone();
        let host = RcvOptionsHost {
            director: self,
            // fib_compute_spec_dst: the destination of a local packet; for a
            // forwarded one the preferred source of the route back, the
            // director's only address.
            spec_dst: if local { Ipv4Addr::from(p.daddr) } else { self.cfg.ip },
        };
        let mut ip = Ipv4Packet::new_unchecked(&mut frame[p.l3..]);
        match wire::ipv4_options::compile_rcv(ip.options_mut(), &host) {
            Ok(c) if !c.srr => {
                self.ip_opts = Some(c);
                Ok(orig)
            }
            _ => {
                *frame = orig;
                Err(self.host(HostReason::Malformed))
            }
        }
    }

    /// `ip_forward_options` for a forwarded packet IPVS rewrote (NAT reply,
    /// ICMP error from a real server): IPVS re-routed it as a local output
    /// (`ip_vs_route_me_harder`), so a Record Route slot taken on receive
    /// gets the packet's new source address (`ip_rt_get_source`); the
    /// header checksum is then recomputed.
    pub(super) fn forward_options(&self, frame: &mut [u8], l3: usize) {
        if let Some(c) = &self.ip_opts {
            let mut ip = Ipv4Packet::new_unchecked(&mut frame[l3..]);
            let src = ip.src_addr();
            if wire::ipv4_options::forward_options(ip.options_mut(), c, src) {
                ip.fill_checksum();
            }
        }
    }

    /// Whether `addr` is a VIP this director owns: a service address that
    /// [`set_vip_owned`](Self::set_vip_owned) made ours, or did not name
    /// while [VIPs are owned by default](Self::set_vips_owned_by_default).
    pub fn owns_vip(&self, addr: u32) -> bool {
        self.services.is_vip(addr) && self.vip_owned(Ipv4Addr::from(addr))
    }

    /// [`owns_vip`](Self::owns_vip) for an IPv6 address: a VIP of an IPv6
    /// service whose VRRP ownership is ours.
    pub fn owns_vip6(&self, addr: &std::net::Ipv6Addr) -> bool {
        self.services.is_vip6(addr) && self.vip_owned(*addr)
    }

    /// The VRRP ownership of `vip` (whether or not a service uses it): as
    /// [`set_vip_owned`](Self::set_vip_owned) last set it, else the default.
    pub fn vip_owned(&self, vip: impl Into<std::net::IpAddr>) -> bool {
        self.vip_state.get(&vip.into()).copied().unwrap_or(self.vips_owned_by_default)
    }

    /// VRRP: takes `vip` (master) or releases it (backup, fault). Returns
    /// whether the director's ownership of it changed.
    pub fn set_vip_owned(&mut self, vip: impl Into<std::net::IpAddr>, owned: bool) -> bool {
        let vip = vip.into();
        let before = self.vip_state.get(&vip).copied().unwrap_or(self.vips_owned_by_default);
        self.vip_state.insert(vip, owned);
        before != owned
    }

    /// Whether a VIP that [`set_vip_owned`](Self::set_vip_owned) has not
    /// named is ours: `true` (the default) without VRRP; `false` when a
    /// VRRP instance must make the director master first (`lvsnic daemon
    /// --vips-start backup`), so that a restarted director does not answer
    /// for a VIP another director holds.
    pub fn set_vips_owned_by_default(&mut self, owned: bool) {
        self.vips_owned_by_default = owned;
    }

    /// The addresses [`set_vip_owned`](Self::set_vip_owned) has named, with
    /// whether each is ours.
    pub fn vip_states(&self) -> impl Iterator<Item = (std::net::IpAddr, bool)> + '_ {
        self.vip_state.iter().map(|(&a, &o)| (a, o))
    }

    /// ARP: answer requests for the director's address and every VIP it owns.
    fn arp(&mut self, frame: &mut Vec<u8>, info: &FrameInfo) -> Action {
        let l3 = info.l2_len;
        if frame.len() < l3 + wire::arp::PACKET_LEN {
            return self.host(HostReason::Malformed);
        }
        let Ok(req) = ArpRepr::parse(&ArpPacket::new_unchecked(&frame[l3..])) else {
            return self.host(HostReason::Arp);
        };
        if req.operation != ArpOperation::Request {
            return self.host(HostReason::Arp);
        }
        let tpa = req.target_ip;
        if tpa != self.cfg.ip && !self.owns_vip(u32::from(tpa)) {
            return self.host(HostReason::Arp);
        }
        *frame = xmit::arp_reply(frame, l3, self.cfg.mac, tpa);
        self.counters.arp_replies += 1;
        Action::Transmit
    }


    /// Counts a fragment reassembly gave up, and drops it.
    fn reasm_failed(&mut self, f: DefragFail) -> Action {
        let c = &mut self.counters.reasm;
        *match f {
            DefragFail::Duplicate => &mut c.duplicates,
            DefragFail::Overlap => &mut c.overlaps,
            DefragFail::Invalid => &mut c.invalid,
            DefragFail::Oversize => &mut c.oversize,
            DefragFail::EcnMix => &mut c.ecn_mix,
            DefragFail::NoMemory => &mut c.no_memory,
        } += 1;
        self.drop(DropReason::Reassembly)
    }

    /// IPv4 fragments: reassembled before IPVS sees them, as Linux does
    /// (`ip_local_deliver` for local addresses, `ip_vs_gather_frags` in
    /// `ip_vs_out` for forwarded TCP/UDP/ICMP), then processed whole.
    fn defragment(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let local = p.daddr == u32::from(self.cfg.ip) || self.owns_vip(p.daddr);
        let user = if local {
            DefragUser::LocalDeliver
        } else if matches!(p.proto, IPPROTO_TCP | IPPROTO_UDP | IPPROTO_ICMP) && !self.services.services.is_empty() {
            // ip_vs_out gathers only once IPVS is enabled (`ipvs->enable`:
            // a service was added at some point). ip_forward checks each
            // fragment before the FORWARD hook.
            if p.ttl <= 1 || (p.df && p.len > self.cfg.mtu) {
                return self.host(HostReason::Fragment);
            }
            DefragUser::VsOut
        } else {
            return self.host(HostReason::Fragment);
        };
        let c = &mut self.counters.reasm;
        match self.defrag.queue(self.now, frame, p.l3, user) {
            DefragResult::Queued => {
                c.held += 1;
                Action::Held
            }
            DefragResult::Failed(f) => self.reasm_failed(f),
            DefragResult::Complete(r) => {
                c.reassembled += 1;
                *frame = r.frame;
                self.reasm = Some(ReasmInfo { frag_max_size: r.frag_max_size, pmtu: r.pmtu, pieces: r.pieces, user });
                let a = self.process_inner(frame, extra);
                self.reasm = None;
                a
            }
        }
    }
}
