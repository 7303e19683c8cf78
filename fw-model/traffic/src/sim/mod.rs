//! The closed-loop, event-driven simulation behind [`super::generate`].
//!
//! Events (session steps, "other" frames) sit in a min-heap keyed by
//! `(time, sequence number)`. A handler builds frames, [`Sim::emit`]s them
//! (timestamp clamped to at least 1 µs after the previous frame, frame run
//! through the private director at once) and schedules the next steps from
//! the emission times and what the director did. Handlers only emit frames
//! a few microseconds apart (back-to-back segments); anything later is a new
//! event, so the capture stays in causal order.
//!
//! This module holds the simulation's state, its setup and the event loop;
//! the handlers live in one submodule per concern: [`plan`] (sessions fixed
//! up front), [`emit`] (capture and director), [`session`] (both ends of a
//! session), [`tcp`], [`udp`], [`other`] and [`probe`] (frames outside the
//! sessions) and [`malformed`].

mod emit;
mod malformed;
mod other;
mod plan;
mod probe;
mod session;
mod tcp;
mod udp;

use super::frames::{self as fb, Filler, Malformed, Malformed6, Msg, L2, L3};
use super::*;
use lvsnic_model::conn::flags as cf;
use lvsnic_model::conn::tcp::state as tcp_state;
use lvsnic_model::time::MSEC;
use lvsnic_model::wire::icmp::{ICMP_DEST_UNREACH, ICMP_ECHO_REQUEST, ICMP_UNREACH_PORT};
use lvsnic_model::wire::icmpv6::{self, ICMPV6_PKT_TOOBIG};
use lvsnic_model::wire::{
    IpProtocol,
    parse_frame, ArpOperation, Icmpv4Repr, MacAddr, TcpRepr, IPPROTO_TCP, IPPROTO_UDP, TCP_ACK, TCP_FIN,
    TCP_PSH, TCP_RST, TCP_SYN,
};
use std::cmp::Reverse;
use lvsnic_model::rules::ServiceKey;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const US: Time = 1_000;
const MIN_GAP: Time = US;
/// Segments per flight (initial window 10).
const FLIGHT: usize = 10;
const PORT_LO: u16 = 32768;
const PORT_HI: u16 = 60999;
const SERVER_WINDOW: u16 = 509;

/// Steps of a TCP session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum T {
    Syn,
    SynAck,
    Ack,
    Send,
    SrvAck,
    Respond,
    CliAcks,
    Think,
    CliFin,
    SrvFinAck,
    CliLastAck,
    SrvFin,
    CliAckFin,
    CliFinAfterAck,
    SrvLastAck,
    CliRst,
    SrvRst,
}

/// Steps of a UDP session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum U {
    Query,
    Reply,
    IcmpErr,
    Next,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Start(u32),
    Tcp(u32, T),
    Udp(u32, U),
    Other(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Close {
    ClientFin,
    ServerFin,
    ClientRst,
    ServerRst,
}

struct Client {
    addr: Ipv4Addr,
    /// The address it uses towards IPv6 services ([`client_addr6`]).
    addr6: Ipv6Addr,
    /// TTL as the client's packets arrive at the director.
    ttl: u8,
    hops: u8,
    rtt: Time,
    window: u16,
    next_port: u16,
    vlan: u16,
}

#[derive(Clone, Copy, Debug)]
struct Rs {
    addr: IpAddr,
    port: u16,
    mac: MacAddr,
    fwd: u16,
}

struct Svc {
    proto: u8,
    vip: IpAddr,
    vport: u16,
    persistent: bool,
    tunnel_only: bool,
}

struct Sess {
    info: SessionInfo,
    rng: SplitMix64,
    client: u32,
    svc: u32,
    proto: u8,
    cport: u16,
    vport: u16,
    close: Close,
    follower: Option<u32>,
    rs: Option<Rs>,
    /// Exchanges (TCP) or queries (UDP) left, the current one included.
    exchanges: u16,
    first_exchange: bool,
    c_nxt: u32,
    c_rcv: u32,
    s_nxt: u32,
    s_rcv: u32,
    s_isn: u32,
    mss: u16,
    c_id: u16,
    s_id: u16,
    req: Msg,
    resp: Msg,
    flight_ends: Vec<u32>,
    attempts: u8,
    gap_pending: bool,
    gap_done: bool,
    query: Vec<u8>,
    quote: Vec<u8>,
}

struct Other {
    cat: Category,
    step: u8,
    steps: u8,
    client: u32,
    port: u16,
    seq: u32,
    ack: u32,
    ident: u16,
}

struct Sim<'a> {
    spec: &'a TrafficSpec,
    cfg: &'a DirectorConfig,
    d: Director,
    rng: SplitMix64,
    heap: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
    clients: Vec<Client>,
    svcs: Vec<Svc>,
    sess: Vec<Sess>,
    others: Vec<Other>,
    records: Vec<PcapRecord>,
    tags: Vec<FrameTag>,
    counts: TrafficCounts,
    last_ts: Option<Time>,
    extra: Vec<Vec<u8>>,
    filler: Filler,
    /// Largest MSS (MTU − 40, at most 1460).
    mss: u16,
    /// Largest MSS over IPv6 (MTU − 60, at most 1440).
    mss6: u16,
    /// The VIPs of the IPv4 services, one per service in rule order (the
    /// targets of the IPv4 other and malformed frames).
    vips4: Vec<Ipv4Addr>,
    /// The VIPs of the IPv6 services, likewise.
    vips6: Vec<Ipv6Addr>,
    rate_other: f64,
    rate_malformed: f64,
    credit_other: f64,
    credit_malformed: f64,
    deck_other: Vec<Category>,
    deck_other_at: usize,
    deck_malformed: Vec<Category>,
    deck_malformed_at: usize,
    gateway_ip: Ipv4Addr,
    /// TCP port of the director's own address that no service uses (ssh).
    director_tcp_port: Option<u16>,
    /// IPv4 VIP and a TCP port without a service there.
    closed_port: Option<(Ipv4Addr, u16)>,
}

pub(super) fn run(spec: &TrafficSpec, cfg: &DirectorConfig, rules: &RuleSet) -> Result<Capture, TrafficError> {
    let d = Director::new(cfg.clone(), rules, spec.start)?;
    let mut sim = Sim::new(spec, cfg, rules, d);
    sim.plan()?;
    while let Some(Reverse((t, _, ev))) = sim.heap.pop() {
        match ev {
            Ev::Start(s) => sim.start(t, s),
            Ev::Tcp(s, step) => sim.tcp(t, s, step),
            Ev::Udp(s, step) => sim.udp(t, s, step),
            Ev::Other(i) => sim.other(t, i),
        }
    }
    Ok(sim.finish())
}

fn quota(f: f64, eligible: usize) -> usize {
    if f <= 0.0 || eligible == 0 {
        0
    } else {
        ((f * eligible as f64).round() as usize).clamp(1, eligible)
    }
}

/// `k` distinct elements of `from`, in random order (partial Fisher-Yates).
fn pick(r: &mut SplitMix64, mut from: Vec<usize>, k: usize) -> Vec<usize> {
    let k = k.min(from.len());
    for i in 0..k {
        let j = i + r.below((from.len() - i) as u64) as usize;
        from.swap(i, j);
    }
    from.truncate(k);
    from
}

fn shuffle<T>(r: &mut SplitMix64, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = r.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// Uniform in `lo..=hi`.
fn between(r: &mut SplitMix64, lo: u64, hi: u64) -> u64 {
    lo + r.below(hi - lo + 1)
}

fn fwd_method(fwd: u16) -> FwdMethod {
    match fwd {
        cf::MASQ => FwdMethod::Masq,
        cf::DROUTE => FwdMethod::Route,
        cf::TUNNEL => FwdMethod::IPIP,
        _ => FwdMethod::Local,
    }
}

/// Time to put `len` bytes on a 1 Gb/s wire (plus preamble and gap).
fn ser(len: usize) -> Time {
    (len as Time + 20) * 8
}

fn sock(a: IpAddr, p: u16) -> SocketAddr {
    SocketAddr::new(a, p)
}

impl<'a> Sim<'a> {
    /// Whether session `sid` is to an IPv6 service.
    fn is_v6(&self, sid: u32) -> bool {
        self.sess[sid as usize].info.service.is_ipv6()
    }

    /// The largest MSS of session `sid`'s address family.
    fn family_mss(&self, sid: u32) -> u16 {
        if self.is_v6(sid) {
            self.mss6
        } else {
            self.mss
        }
    }

    /// The MAC of the next hop towards `ip` (a real server).
    fn next_hop_mac(&self, ip: IpAddr) -> MacAddr {
        match ip {
            IpAddr::V4(a) => self.cfg.next_hop_mac(a),
            IpAddr::V6(a) => {
                self.cfg.neighbors6.get(&a).copied().or(self.cfg.gateway_mac).unwrap_or(MacAddr::ZERO)
            }
        }
    }

    fn new(spec: &'a TrafficSpec, cfg: &'a DirectorConfig, rules: &RuleSet, d: Director) -> Self {
        let mut svcs = Vec::new();
        for s in &rules.services {
            let ServiceKey::Addr { proto, addr: vip, port: vport } = s.key else { continue };
            let proto = match proto {
                Protocol::Tcp => IPPROTO_TCP,
                Protocol::Udp => IPPROTO_UDP,
                Protocol::Sctp => continue,
            };
            let tunnel_only = !s.dests.is_empty()
                && s.dests.iter().all(|d| matches!(d.fwd, FwdMethod::Tunnel { .. }))
                && s.dests.iter().any(|d| d.weight > 0);
            svcs.push(Svc { proto, vip, vport, persistent: s.persistent.is_some(), tunnel_only });
        }
        let mut rng = SplitMix64::new(subseed(spec.seed, 1));
        let clients = Self::make_clients(spec, &mut rng);
        let o = cfg.ip.octets();
        let gateway_ip = Ipv4Addr::new(o[0], o[1], o[2], if o[3] == 254 { 253 } else { 254 });
        let mss = (cfg.mtu.saturating_sub(40)).clamp(536, 1460);
        let mss6 = (cfg.mtu.saturating_sub(60)).clamp(1220, 1440);
        let vips4: Vec<Ipv4Addr> =
            svcs.iter().filter_map(|s| if let IpAddr::V4(a) = s.vip { Some(a) } else { None }).collect();
        let vips6: Vec<Ipv6Addr> =
            svcs.iter().filter_map(|s| if let IpAddr::V6(a) = s.vip { Some(a) } else { None }).collect();
        let denom = 1.0 - spec.other_fraction - spec.malformed_fraction;
        let tcp_taken = |a: Ipv4Addr, p: u16| {
            svcs.iter().any(|s| s.proto == IPPROTO_TCP && s.vip == IpAddr::V4(a) && (s.vport == p || s.vport == 0))
        };
        let director_tcp_port = [22u16, 2222, 8022].into_iter().find(|&p| !tcp_taken(cfg.ip, p));
        let closed_port = vips4.iter().filter(|&&v| v != cfg.ip).find_map(|&v| {
            [23u16, 3389, 8443, 6379, 5432, 1521].into_iter().find(|&p| !tcp_taken(v, p)).map(|p| (v, p))
        });
        let mut sim = Sim {
            spec,
            cfg,
            d,
            rng,
            heap: BinaryHeap::new(),
            seq: 0,
            clients,
            svcs,
            sess: Vec::new(),
            others: Vec::new(),
            records: Vec::new(),
            tags: Vec::new(),
            counts: TrafficCounts { categories: vec![0; Category::COUNT], ..TrafficCounts::default() },
            last_ts: None,
            extra: Vec::new(),
            filler: Filler::new(),
            mss,
            mss6,
            vips4,
            vips6,
            rate_other: spec.other_fraction / denom,
            rate_malformed: spec.malformed_fraction / denom,
            credit_other: 0.0,
            credit_malformed: 0.0,
            deck_other: Vec::new(),
            deck_other_at: 0,
            deck_malformed: Vec::new(),
            deck_malformed_at: 0,
            gateway_ip,
            director_tcp_port,
            closed_port,
        };
        sim.build_decks();
        // The first other/malformed frames come early, not only after a
        // whole unit's worth of credit.
        sim.credit_other = sim.rng.below(1000) as f64 / 1000.0;
        sim.credit_malformed = sim.rng.below(1000) as f64 / 1000.0;
        sim
    }

    fn make_clients(spec: &TrafficSpec, r: &mut SplitMix64) -> Vec<Client> {
        client_addrs(spec.clients, r)
            .into_iter()
            .map(|addr| {
                let windows_like = r.chance(1, 4);
                let hops = between(r, 2, 24) as u8;
                let ttl = if windows_like { 128 } else { 64 } - hops;
                // Round trip 2 ms .. 256 ms, roughly log-uniform (integers only).
                let base = (2 * MSEC) << r.below(7);
                let rtt = base + r.below(base);
                let window = [64240u16, 65535, 502, 2052, 1026, 8192][r.below(6) as usize];
                let next_port = between(r, PORT_LO as u64, PORT_HI as u64) as u16;
                let vlan = 100 + r.below(8) as u16;
                Client { addr, addr6: client_addr6(addr), ttl, hops, rtt, window, next_port, vlan }
            })
            .collect()
    }

    fn build_decks(&mut self) {
        use Category::*;
        let mut other = vec![
            ArpVip,
            ArpDirector,
            ArpOther,
            IcmpEchoVip,
            IcmpEchoDirector,
            Ipv6,
            OtherEthertype,
            OtherMac,
            Broadcast,
            Ttl1,
            Fragment,
            IpOptions,
        ];
        if self.director_tcp_port.is_some() {
            other.push(TcpToDirector);
        }
        if self.closed_port.is_some() {
            other.push(SynNoService);
        }
        let v4 = |s: &&Svc| s.vip.is_ipv4();
        if self.svcs.iter().filter(v4).any(|s| s.proto == IPPROTO_TCP && s.vport != 0) {
            other.push(StrayAck);
        }
        if self.svcs.iter().filter(v4).any(|s| s.tunnel_only) {
            other.push(OversizeDfTunnel);
        }
        if self.vips4.is_empty() {
            other.retain(|c| !matches!(c, ArpVip | IcmpEchoVip | Ttl1 | Fragment | IpOptions));
        }
        let ipv6 = !self.vips6.is_empty();
        if ipv6 {
            other.push(HopLimit1);
        }
        self.deck_other = other;
        self.deck_other_at = self.deck_other.len();
        self.deck_malformed =
            Category::ALL.iter().copied().filter(|c| c.is_malformed() && (ipv6 || !c.is_ipv6())).collect();
        self.deck_malformed_at = self.deck_malformed.len();
    }

    fn push(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn finish(self) -> Capture {
        let mut counts = self.counts;
        counts.director = self.d.counters.clone();
        let mut ends = BTreeMap::new();
        for s in &self.sess {
            if s.info.end != SessionEnd::Open || s.info.frames > 0 {
                *ends.entry(format!("{:?}", s.info.end)).or_insert(0) += 1;
            }
        }
        counts.ends = ends;
        Capture {
            records: self.records,
            tags: self.tags,
            sessions: self.sess.into_iter().map(|s| s.info).collect(),
            counts,
        }
    }
}
