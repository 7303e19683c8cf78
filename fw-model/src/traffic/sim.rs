//! The closed-loop, event-driven simulation behind [`super::generate`].
//!
//! Events (session steps, "other" frames) sit in a min-heap keyed by
//! `(time, sequence number)`. A handler builds frames, [`Sim::emit`]s them
//! (timestamp clamped to at least 1 µs after the previous frame, frame run
//! through the private director at once) and schedules the next steps from
//! the emission times and what the director did. Handlers only emit frames
//! a few microseconds apart (back-to-back segments); anything later is a new
//! event, so the capture stays in causal order.

use super::frames::{self as fb, Filler, Malformed, Msg, L2, L3};
use super::*;
use crate::conn::flags as cf;
use crate::conn::tcp::state as tcp_state;
use crate::time::MSEC;
use crate::wire::icmp::{ICMP_DEST_UNREACH, ICMP_ECHO_REQUEST, ICMP_UNREACH_PORT};
use crate::wire::{
    parse_frame, ArpOperation, Icmpv4Repr, MacAddr, TcpRepr, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP, TCP_ACK, TCP_FIN,
    TCP_PSH, TCP_RST, TCP_SYN,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::Ipv4Addr;

const US: Time = 1_000;
const MIN_GAP: Time = US;
/// Segments per flight (initial window 10).
const FLIGHT: usize = 10;
const PORT_LO: u16 = 32768;
const PORT_HI: u16 = 60999;
/// Longest ICMP error a Linux host sends (RFC 1812: 576 bytes in all).
const ICMP_QUOTE_MAX: usize = 576 - 28;
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
    addr: Ipv4Addr,
    port: u16,
    mac: MacAddr,
    fwd: u16,
}

struct Svc {
    proto: u8,
    vip: Ipv4Addr,
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
    /// VIP and a TCP port without a service there.
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

fn sock(a: Ipv4Addr, p: u16) -> SocketAddrV4 {
    SocketAddrV4::new(a, p)
}

impl<'a> Sim<'a> {
    fn new(spec: &'a TrafficSpec, cfg: &'a DirectorConfig, rules: &RuleSet, d: Director) -> Self {
        let mut svcs = Vec::new();
        for s in &rules.services {
            let Some((proto, vip, vport)) = s.key.as_ipv4() else { continue };
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
        let denom = 1.0 - spec.other_fraction - spec.malformed_fraction;
        let tcp_taken = |a: Ipv4Addr, p: u16| {
            svcs.iter().any(|s| s.proto == IPPROTO_TCP && s.vip == a && (s.vport == p || s.vport == 0))
        };
        let director_tcp_port = [22u16, 2222, 8022].into_iter().find(|&p| !tcp_taken(cfg.ip, p));
        let closed_port = svcs.iter().filter(|s| s.vip != cfg.ip).find_map(|s| {
            [23u16, 3389, 8443, 6379, 5432, 1521].into_iter().find(|&p| !tcp_taken(s.vip, p)).map(|p| (s.vip, p))
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
                Client { addr, ttl, hops, rtt, window, next_port, vlan }
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
        if self.svcs.iter().any(|s| s.proto == IPPROTO_TCP && s.vport != 0) {
            other.push(StrayAck);
        }
        if self.svcs.iter().any(|s| s.tunnel_only) {
            other.push(OversizeDfTunnel);
        }
        if self.svcs.is_empty() {
            other.retain(|c| !matches!(c, ArpVip | IcmpEchoVip | Ttl1 | Fragment | IpOptions));
        }
        self.deck_other = other;
        self.deck_other_at = self.deck_other.len();
        self.deck_malformed = Category::ALL.iter().copied().filter(|c| c.is_malformed()).collect();
        self.deck_malformed_at = self.deck_malformed.len();
    }

    fn push(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    // ------------------------------------------------------------ planning

    fn plan(&mut self) -> Result<(), TrafficError> {
        let spec = self.spec;
        let n = spec.connections;
        if n == 0 {
            return Ok(());
        }
        let tcp: Vec<usize> = (0..self.svcs.len()).filter(|&i| self.svcs[i].proto == IPPROTO_TCP).collect();
        let udp: Vec<usize> = (0..self.svcs.len()).filter(|&i| self.svcs[i].proto == IPPROTO_UDP).collect();
        if tcp.is_empty() && udp.is_empty() {
            return Err(TrafficError::NoServices);
        }
        let r = &mut self.rng;
        let hot = (spec.clients / 20).max(1) as u64;
        let udp_thr = per_2_32(spec.udp_fraction);
        let burst_thr = per_2_32(spec.persistent_burst_fraction);

        // (start, svc, client, burst)
        let mut plans: Vec<(Time, usize, usize, Option<u32>)> = Vec::with_capacity(n);
        let mut bursts = 0u32;
        while plans.len() < n {
            let use_udp = if tcp.is_empty() {
                true
            } else if udp.is_empty() {
                false
            } else {
                r.below(1 << 32) < udp_thr
            };
            let list = if use_udp { &udp } else { &tcp };
            let svc = list[r.below(list.len() as u64) as usize];
            let client = if r.chance(1, 4) { r.below(hot) } else { r.below(spec.clients as u64) } as usize;
            let start = spec.start + r.below(spec.duration + 1);
            let room = n - plans.len();
            let burst = self.svcs[svc].persistent
                && room >= 2
                && burst_thr > 0
                && (bursts == 0 || r.below(1 << 32) < burst_thr);
            if burst {
                let k = (between(r, 2, 4) as usize).min(room);
                for j in 0..k {
                    let at = if j == 0 { start } else { start + r.below(2 * SEC) };
                    plans.push((at, svc, client, Some(bursts)));
                }
                bursts += 1;
            } else {
                plans.push((start, svc, client, None));
            }
        }
        self.counts.persistent_bursts = bursts as u64;
        plans.sort_by_key(|p| p.0);
        // The first session starts at `start`.
        let shift = plans[0].0 - spec.start;
        for p in &mut plans {
            p.0 -= shift;
        }

        let mut per_client = vec![0usize; spec.clients];
        for p in &plans {
            per_client[p.2] += 1;
        }
        if let Some(m) = per_client.iter().copied().max().filter(|&m| m > MAX_SESSIONS_PER_CLIENT) {
            return Err(TrafficError::Spec(format!(
                "{m} connections from one client exceed {MAX_SESSIONS_PER_CLIENT}: use more clients"
            )));
        }

        for (i, &(start, svc, client, burst)) in plans.iter().enumerate() {
            let s = self.new_session(i as u32, start, svc, client, burst);
            self.sess.push(s);
        }
        let r = &mut self.rng;
        let is_tcp = |s: &Sess| s.proto == IPPROTO_TCP;
        let all: Vec<usize> = (0..self.sess.len()).collect();
        let tcp_ids: Vec<usize> = all.iter().copied().filter(|&i| is_tcp(&self.sess[i])).collect();
        let udp_ids: Vec<usize> = all.iter().copied().filter(|&i| !is_tcp(&self.sess[i])).collect();

        for i in pick(r, tcp_ids.clone(), quota(spec.half_open_fraction, tcp_ids.len())) {
            self.sess[i].info.kind = SessionKind::HalfOpen;
        }
        let live: Vec<usize> = all.iter().copied().filter(|&i| self.sess[i].info.kind == SessionKind::Normal).collect();
        let live_tcp: Vec<usize> = live.iter().copied().filter(|&i| is_tcp(&self.sess[i])).collect();
        for (k, i) in pick(r, live_tcp.clone(), quota(spec.rst_fraction, live_tcp.len())).into_iter().enumerate() {
            self.sess[i].close = if k % 2 == 0 { Close::ClientRst } else { Close::ServerRst };
        }
        for i in pick(r, live.clone(), quota(spec.idle_gap_fraction, live.len())) {
            let s = &mut self.sess[i];
            s.info.kind = SessionKind::Idle;
            s.exchanges = s.exchanges.max(2);
        }
        // Port reuse: pairs of plain TCP sessions; the later one becomes a
        // follower of the earlier, which the client closes first: it opens
        // from the same client port 61-90 s after that close.
        let plain: Vec<usize> = live_tcp
            .iter()
            .copied()
            .filter(|&i| {
                let s = &self.sess[i];
                s.info.kind == SessionKind::Normal && matches!(s.close, Close::ClientFin | Close::ServerFin)
            })
            .collect();
        let k = quota(spec.port_reuse_fraction, n).min(plain.len() / 2);
        let mut pairs = pick(r, plain, 2 * k);
        for pair in pairs.chunks_exact_mut(2) {
            pair.sort_unstable();
            let (p, f) = (pair[0], pair[1]);
            let (svc, client, vport, service) = {
                let ps = &mut self.sess[p];
                ps.close = Close::ClientFin;
                ps.follower = Some(f as u32);
                (ps.svc, ps.client, ps.vport, ps.info.service)
            };
            let fs = &mut self.sess[f];
            fs.info.kind = SessionKind::PortReuse;
            fs.info.reuses = Some(p as u32);
            fs.info.client = sock(self.clients[client as usize].addr, 0);
            fs.info.service = service;
            fs.info.burst = None;
            (fs.svc, fs.client, fs.vport) = (svc, client, vport);
        }
        let r = &mut self.rng;
        let all: Vec<usize> = (0..self.sess.len()).collect();
        let tcp_ids: Vec<usize> = all.iter().copied().filter(|&i| is_tcp(&self.sess[i])).collect();
        let tcp_live: Vec<usize> =
            tcp_ids.iter().copied().filter(|&i| self.sess[i].info.kind != SessionKind::HalfOpen).collect();
        // 802.1Q sessions only for a director that balances tagged frames
        // (the default drops them, as Linux without a VLAN sub-interface);
        // the draw is made either way so that the rest of the capture stays the same.
        let balance = self.cfg.vlan == crate::config::VlanMode::Balance;
        for i in pick(r, all.clone(), quota(spec.vlan_fraction, all.len())) {
            self.sess[i].info.vlan = balance;
        }
        for i in pick(r, tcp_ids.clone(), quota(spec.ip_options_fraction, tcp_ids.len())) {
            self.sess[i].info.ip_options = true;
        }
        for i in pick(r, all.clone(), quota(spec.no_df_fraction, all.len())) {
            self.sess[i].info.dont_frag = false;
        }
        for i in pick(r, tcp_live.clone(), quota(spec.upload_fraction, tcp_live.len())) {
            self.sess[i].info.upload = true;
        }
        for i in pick(r, udp_ids.clone(), quota(spec.zero_checksum_fraction, udp_ids.len())) {
            self.sess[i].info.zero_checksum = true;
        }
        for i in pick(r, udp_ids.clone(), quota(spec.icmp_error_fraction, udp_ids.len())) {
            self.sess[i].info.client_icmp_error = true;
        }
        for i in 0..n {
            if self.sess[i].info.kind != SessionKind::PortReuse {
                let t = self.sess[i].info.start;
                self.push(t, Ev::Start(i as u32));
            }
        }
        Ok(())
    }

    fn new_session(&mut self, id: u32, start: Time, svc: usize, client: usize, burst: Option<u32>) -> Sess {
        let mut r = SplitMix64::new(subseed(self.spec.seed, 1000 + id as u64));
        let v = &self.svcs[svc];
        let vport = if v.vport != 0 { v.vport } else { [80u16, 443, 8080][r.below(3) as usize] };
        let proto = v.proto;
        let exchanges = if proto == IPPROTO_TCP {
            match r.below(100) {
                0..=49 => 1,
                50..=84 => between(&mut r, 2, 3),
                _ => between(&mut r, 4, 8),
            }
        } else if r.chance(2, 3) {
            1
        } else {
            between(&mut r, 2, 3)
        } as u16;
        let close = if r.chance(3, 5) { Close::ClientFin } else { Close::ServerFin };
        let info = SessionInfo {
            protocol: if proto == IPPROTO_TCP { Protocol::Tcp } else { Protocol::Udp },
            client: sock(self.clients[client].addr, 0),
            service: sock(v.vip, vport),
            start,
            kind: SessionKind::Normal,
            burst,
            reuses: None,
            vlan: false,
            ip_options: false,
            dont_frag: true,
            upload: false,
            zero_checksum: false,
            client_icmp_error: false,
            real_server: None,
            forwarding: None,
            end: SessionEnd::Open,
            frames: 0,
        };
        let c_nxt = r.next_u64() as u32;
        let s_isn = r.next_u64() as u32;
        let c_id = r.next_u64() as u16;
        let s_id = r.next_u64() as u16;
        Sess {
            info,
            rng: r,
            client: client as u32,
            svc: svc as u32,
            proto,
            cport: 0,
            vport,
            close,
            follower: None,
            rs: None,
            exchanges,
            first_exchange: true,
            c_nxt,
            c_rcv: 0,
            s_nxt: s_isn,
            s_rcv: 0,
            s_isn,
            mss: self.mss,
            c_id,
            s_id,
            req: Msg::default(),
            resp: Msg::default(),
            flight_ends: Vec::new(),
            attempts: 0,
            gap_pending: false,
            gap_done: false,
            query: Vec::new(),
            quote: Vec::new(),
        }
    }

    /// The client's next ephemeral port: sequential from a random start,
    /// wrapping, so a port comes back only after 28 232 others.
    fn alloc_port(&mut self, client: u32) -> u16 {
        let c = &mut self.clients[client as usize];
        let p = c.next_port;
        c.next_port = if p == PORT_HI { PORT_LO } else { p + 1 };
        p
    }

    // ------------------------------------------------------------- emission

    /// Puts `frame` in the capture at `at` (or 1 µs after the previous
    /// frame), runs it through the director and returns the timestamp, the
    /// outcome and the frame as the director left it.
    fn emit(&mut self, at: Time, frame: Vec<u8>, cat: Category, session: Option<u32>) -> (Time, Outcome, Vec<u8>) {
        let ts = match self.last_ts {
            Some(l) => at.max(l + MIN_GAP),
            None => at,
        };
        self.last_ts = Some(ts);
        let mut work = frame.clone();
        self.extra.clear();
        let outcome = Outcome::of(&mut self.d, ts, &mut work, &mut self.extra);
        self.count_frame(&frame, cat);
        if cat.is_malformed() {
            self.counts.malformed_frames += 1;
        } else if session.is_none() {
            self.counts.other_frames += 1;
        }
        if let Some(s) = session {
            self.counts.session_frames += 1;
            self.sess[s as usize].info.frames += 1;
            self.credit(ts);
        }
        self.records.push(PcapRecord { ts_ns: ts, orig_len: frame.len() as u32, data: frame });
        self.tags.push(FrameTag { category: cat, session, outcome });
        (ts, outcome, work)
    }

    fn count_frame(&mut self, frame: &[u8], cat: Category) {
        let c = &mut self.counts;
        c.frames += 1;
        c.bytes += frame.len() as u64;
        c.categories[cat.index()] += 1;
        if cat.is_malformed() {
            return;
        }
        let info = parse_frame(frame);
        if info.vlan_tci.is_some() {
            c.vlan_frames += 1;
        }
        if let Some(v4) = info.ipv4 {
            c.ip_option_frames += v4.has_options as u64;
            c.df_frames += v4.df as u64;
            if v4.ttl > 64 {
                c.ttl128_frames += 1;
            } else if v4.ttl > 1 {
                c.ttl64_frames += 1;
            }
            if v4.protocol == IPPROTO_UDP && !v4.is_non_first_fragment() {
                let o = v4.l4_offset() + 6;
                if frame.len() >= o + 2 && frame[o] == 0 && frame[o + 1] == 0 {
                    c.zero_checksum_frames += 1;
                }
            }
        }
    }

    /// Session frames earn credit for other and malformed frames, so that
    /// their shares of the capture are the spec's fractions.
    fn credit(&mut self, ts: Time) {
        self.credit_other += self.rate_other;
        while self.credit_other >= 1.0 && !self.deck_other.is_empty() {
            let k = self.spawn_other(ts, false);
            self.credit_other -= k as f64;
        }
        self.credit_malformed += self.rate_malformed;
        while self.credit_malformed >= 1.0 {
            self.spawn_other(ts, true);
            self.credit_malformed -= 1.0;
        }
    }

    fn deal(&mut self, malformed: bool) -> Category {
        let (deck, at) = if malformed {
            (&mut self.deck_malformed, &mut self.deck_malformed_at)
        } else {
            (&mut self.deck_other, &mut self.deck_other_at)
        };
        if *at >= deck.len() {
            shuffle(&mut self.rng, deck);
            *at = 0;
        }
        *at += 1;
        deck[*at - 1]
    }

    /// Schedules an other (or malformed) unit soon after `ts`; returns the
    /// number of frames it will send.
    fn spawn_other(&mut self, ts: Time, malformed: bool) -> u32 {
        let cat = self.deal(malformed);
        let client = self.rng.below(self.clients.len() as u64) as u32;
        let steps = match cat {
            Category::IcmpEchoVip | Category::IcmpEchoDirector => between(&mut self.rng, 1, 3) as u8,
            Category::TcpToDirector => 5,
            _ => 1,
        };
        let frames = if cat == Category::Fragment { 2 } else { steps as u32 };
        let port = self.alloc_port(client);
        let o = Other {
            cat,
            step: 0,
            steps,
            client,
            port,
            seq: self.rng.next_u64() as u32,
            ack: self.rng.next_u64() as u32,
            ident: self.rng.next_u64() as u16,
        };
        let idx = self.others.len() as u32;
        self.others.push(o);
        let at = ts + US + self.rng.below(300 * MSEC);
        self.push(at, Ev::Other(idx));
        frames
    }

    // ------------------------------------------------------ session frames

    fn client_l2(&self, sid: u32) -> L2 {
        let s = &self.sess[sid as usize];
        let vlan = s.info.vlan.then(|| self.clients[s.client as usize].vlan);
        L2 { src: self.cfg.gateway_mac, dst: self.cfg.mac, vlan }
    }

    fn client_l3(&mut self, sid: u32, df: bool) -> L3 {
        let s = &mut self.sess[sid as usize];
        let c = &self.clients[s.client as usize];
        s.c_id = s.c_id.wrapping_add(1);
        L3 { src: c.addr, dst: *s.info.service.ip(), ttl: c.ttl, ident: s.c_id, df }
    }

    fn server_l2l3(&mut self, sid: u32) -> (L2, L3) {
        let s = &mut self.sess[sid as usize];
        let rs = s.rs.expect("server frames only after the director chose a server");
        s.s_id = s.s_id.wrapping_add(1);
        let l2 = L2 { src: rs.mac, dst: self.cfg.mac, vlan: None };
        let l3 = L3 { src: rs.addr, dst: self.clients[s.client as usize].addr, ttl: 64, ident: s.s_id, df: true };
        (l2, l3)
    }

    /// A client TCP segment with the session's current numbers.
    fn client_seg(&mut self, sid: u32, flags: u8, opts: &[u8], ip_opts: &[u8], payload: &[u8]) -> Vec<u8> {
        let l2 = self.client_l2(sid);
        let df = self.sess[sid as usize].info.dont_frag;
        let l3 = self.client_l3(sid, df);
        let s = &self.sess[sid as usize];
        let t = TcpRepr {
            src_port: s.cport,
            dst_port: s.vport,
            seq_number: s.c_nxt,
            ack_number: if flags & TCP_ACK != 0 { s.c_rcv } else { 0 },
            flags,
            window_len: if flags & TCP_SYN != 0 { 64240 } else { self.clients[s.client as usize].window },
        };
        fb::tcp(&l2, &l3, &t, opts, ip_opts, payload)
    }

    /// A real server TCP segment with the session's current numbers.
    fn server_seg(&mut self, sid: u32, flags: u8, opts: &[u8], payload: &[u8]) -> Vec<u8> {
        let (l2, l3) = self.server_l2l3(sid);
        let s = &self.sess[sid as usize];
        let rs = s.rs.expect("server chosen");
        let t = TcpRepr {
            src_port: rs.port,
            dst_port: s.cport,
            seq_number: s.s_nxt,
            ack_number: s.s_rcv,
            flags,
            window_len: if flags & TCP_SYN != 0 { 65160 } else { SERVER_WINDOW },
        };
        fb::tcp(&l2, &l3, &t, opts, &[], payload)
    }

    fn learn_rs(&mut self, sid: u32) {
        let Some(id) = self.d.last_conn else { return };
        let c = *self.d.conns.get(id);
        let addr = Ipv4Addr::from(c.daddr);
        let rs = Rs { addr, port: c.dport, mac: self.cfg.next_hop_mac(addr), fwd: c.fwd() };
        let s = &mut self.sess[sid as usize];
        s.rs = Some(rs);
        s.info.real_server = Some(sock(addr, c.dport));
        s.info.forwarding = Some(fwd_method(rs.fwd));
    }

    fn is_nat(&self, sid: u32) -> bool {
        self.sess[sid as usize].rs.is_some_and(|r| r.fwd == cf::MASQ)
    }

    fn rtt(&mut self, sid: u32) -> Time {
        let s = &mut self.sess[sid as usize];
        let base = self.clients[s.client as usize].rtt;
        base + s.rng.below(base / 10 + 1)
    }

    fn lan(&mut self, sid: u32) -> Time {
        between(&mut self.sess[sid as usize].rng, 60 * US, 400 * US)
    }

    fn server_think(&mut self, sid: u32) -> Time {
        let r = &mut self.sess[sid as usize].rng;
        if r.chance(4, 5) {
            between(r, 100 * US, 2 * MSEC)
        } else {
            between(r, 2 * MSEC, 20 * MSEC)
        }
    }

    fn client_think(&mut self, sid: u32) -> Time {
        between(&mut self.sess[sid as usize].rng, 20 * MSEC, 3 * SEC)
    }

    fn idle_gap(&mut self, sid: u32) -> Time {
        let s = &mut self.sess[sid as usize];
        self.counts.idle_gaps += 1;
        s.gap_done = true;
        match self.spec.idle_gap {
            Some(g) => g,
            None => {
                let timeout = if s.proto == IPPROTO_TCP {
                    self.cfg.timeouts.tcp.0[tcp_state::ESTABLISHED as usize]
                } else {
                    self.cfg.timeouts.udp
                };
                timeout + between(&mut s.rng, 5 * SEC, 30 * SEC)
            }
        }
    }

    fn end(&mut self, sid: u32, ts: Time, how: SessionEnd) {
        let s = &mut self.sess[sid as usize];
        s.info.end = how;
        let (cport, follower) = (s.cport, s.follower);
        if let Some(f) = follower {
            let delay = between(&mut s.rng, 61 * SEC, 90 * SEC);
            let fs = &mut self.sess[f as usize];
            fs.cport = cport;
            fs.info.start = ts + delay;
            self.counts.port_reuses += 1;
            self.push(ts + delay, Ev::Start(f));
        }
    }

    fn start(&mut self, now: Time, sid: u32) {
        let client = self.sess[sid as usize].client;
        if self.sess[sid as usize].cport == 0 {
            let p = self.alloc_port(client);
            self.sess[sid as usize].cport = p;
        }
        let s = &mut self.sess[sid as usize];
        s.info.client.set_port(s.cport);
        s.info.start = now;
        self.counts.connections += 1;
        if s.proto == IPPROTO_TCP {
            self.counts.tcp_sessions += 1;
            self.new_exchange(sid);
            self.tcp(now, sid, T::Syn);
        } else {
            self.counts.udp_sessions += 1;
            self.udp(now, sid, U::Query);
        }
    }

    // --------------------------------------------------------------- TCP

    fn new_exchange(&mut self, sid: u32) {
        let s = &mut self.sess[sid as usize];
        let r = &mut s.rng;
        let upload = s.first_exchange && s.info.upload;
        s.first_exchange = false;
        let req_size = if upload {
            between(r, 3000, 40_000)
        } else if r.chance(4, 5) {
            between(r, 120, 900)
        } else {
            between(r, 900, 3000)
        } as u32;
        let resp_size = match r.below(100) {
            0..=64 => between(r, 200, 1500),
            65..=91 => between(r, 1500, 16 * 1024),
            _ => between(r, 16 * 1024, 128 * 1024),
        } as u32;
        let path = r.next_u64() >> 40;
        s.req = fb::http_request(*s.info.service.ip(), path, req_size, upload);
        s.resp = fb::http_response(resp_size);
    }

    /// The server's FIN-ACK; the client answers with `next` one RTT later.
    fn server_fin(&mut self, now: Time, sid: u32, next: T) {
        let f = self.server_seg(sid, TCP_FIN | TCP_ACK, &[], &[]);
        let Some(ts) = self.emit_server(now, sid, f) else { return };
        let s = &mut self.sess[sid as usize];
        s.s_nxt = s.s_nxt.wrapping_add(1);
        let d = self.rtt(sid);
        self.push(ts + d, Ev::Tcp(sid, next));
    }

    fn tcp(&mut self, now: Time, sid: u32, step: T) {
        match step {
            T::Syn => self.tcp_syn(now, sid),
            T::SynAck => self.tcp_synack(now, sid),
            T::Ack => self.tcp_ack(now, sid),
            T::Send => self.tcp_send(now, sid),
            T::SrvAck => {
                let f = self.server_seg(sid, TCP_ACK, &[], &[]);
                self.emit_server(now, sid, f);
            }
            T::Respond => self.tcp_respond(now, sid),
            T::CliAcks => self.tcp_cli_acks(now, sid),
            T::Think => self.tcp_think(now, sid),
            T::CliFin => {
                let f = self.client_seg(sid, TCP_FIN | TCP_ACK, &[], &[], &[]);
                let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) else { return };
                let s = &mut self.sess[sid as usize];
                s.c_nxt = s.c_nxt.wrapping_add(1);
                s.s_rcv = s.c_nxt;
                if self.is_nat(sid) {
                    let d = self.lan(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::SrvFinAck));
                } else {
                    // The server's FIN-ACK goes straight to the client.
                    let s = &mut self.sess[sid as usize];
                    s.s_nxt = s.s_nxt.wrapping_add(1);
                    let d = self.rtt(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::CliLastAck));
                }
            }
            T::SrvFinAck => self.server_fin(now, sid, T::CliLastAck),
            T::CliLastAck => {
                let s = &mut self.sess[sid as usize];
                s.c_rcv = s.s_nxt;
                let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
                if let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) {
                    self.end(sid, ts, SessionEnd::ClientClose);
                }
            }
            T::SrvFin => self.server_fin(now, sid, T::CliAckFin),
            T::CliAckFin => {
                let s = &mut self.sess[sid as usize];
                s.c_rcv = s.s_nxt;
                if s.rng.chance(1, 2) {
                    // ACK the FIN now, close a little later.
                    let later = between(&mut s.rng, 100 * US, 5 * MSEC);
                    let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
                    if let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) {
                        self.push(ts + later, Ev::Tcp(sid, T::CliFinAfterAck));
                    }
                } else {
                    self.tcp(now, sid, T::CliFinAfterAck);
                }
            }
            T::CliFinAfterAck => {
                let f = self.client_seg(sid, TCP_FIN | TCP_ACK, &[], &[], &[]);
                let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) else { return };
                let s = &mut self.sess[sid as usize];
                s.c_nxt = s.c_nxt.wrapping_add(1);
                s.s_rcv = s.c_nxt;
                if self.is_nat(sid) {
                    let d = self.lan(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::SrvLastAck));
                } else {
                    self.end(sid, ts, SessionEnd::ServerClose);
                }
            }
            T::SrvLastAck => {
                let f = self.server_seg(sid, TCP_ACK, &[], &[]);
                if let Some(ts) = self.emit_server(now, sid, f) {
                    self.end(sid, ts, SessionEnd::ServerClose);
                }
            }
            T::CliRst => {
                let f = self.client_seg(sid, TCP_RST | TCP_ACK, &[], &[], &[]);
                if let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) {
                    self.end(sid, ts, SessionEnd::ClientReset);
                }
            }
            T::SrvRst => {
                let f = self.server_seg(sid, TCP_RST | TCP_ACK, &[], &[]);
                if let Some(ts) = self.emit_server(now, sid, f) {
                    self.end(sid, ts, SessionEnd::ServerReset);
                }
            }
        }
    }

    /// Emits a client segment of an established session; on anything but
    /// forwarding the session ends (the director's stack resets it, or it
    /// is refused). Returns the timestamp when forwarded.
    fn emit_client(&mut self, now: Time, sid: u32, f: Vec<u8>, cat: Category) -> Option<Time> {
        let (ts, out, _) = self.emit(now, f, cat, Some(sid));
        match out {
            Outcome::Forwarded => Some(ts),
            Outcome::ToHost(_) if cat == Category::TcpIdleResume => {
                self.end(sid, ts, SessionEnd::IdleReset);
                None
            }
            Outcome::Dropped(_) => {
                self.end(sid, ts, SessionEnd::GaveUp);
                None
            }
            _ => {
                self.end(sid, ts, SessionEnd::Refused);
                None
            }
        }
    }

    /// Emits a real server's segment; if the director does not forward it
    /// the client never hears of it and the session is lost.
    fn emit_server(&mut self, now: Time, sid: u32, f: Vec<u8>) -> Option<Time> {
        let cat = if self.sess[sid as usize].proto == IPPROTO_TCP { Category::TcpServer } else { Category::UdpServer };
        let (ts, out, _) = self.emit(now, f, cat, Some(sid));
        if out == Outcome::Forwarded {
            Some(ts)
        } else {
            self.end(sid, ts, SessionEnd::Lost);
            None
        }
    }

    fn tcp_syn(&mut self, now: Time, sid: u32) {
        let s = &self.sess[sid as usize];
        let ip_opts: &[u8] = if s.info.ip_options { &fb::IP_OPT_TIMESTAMP } else { &[] };
        let opts = fb::client_syn_options(self.mss);
        let f = self.client_seg(sid, TCP_SYN, &opts, ip_opts, &[]);
        let (ts, out, _) = self.emit(now, f, Category::TcpClient, Some(sid));
        match out {
            Outcome::Forwarded => {
                self.learn_rs(sid);
                let nat = self.is_nat(sid);
                let s = &mut self.sess[sid as usize];
                s.c_nxt = s.c_nxt.wrapping_add(1);
                s.s_rcv = s.c_nxt;
                s.attempts = 0;
                if nat {
                    let d = self.lan(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::SynAck));
                } else if s.info.kind == SessionKind::HalfOpen {
                    self.end(sid, ts, SessionEnd::HalfOpen);
                } else {
                    // The SYN-ACK went straight to the client.
                    s.s_nxt = s.s_isn.wrapping_add(1);
                    let d = self.rtt(sid) + self.lan(sid) / 2;
                    self.push(ts + d, Ev::Tcp(sid, T::Ack));
                }
            }
            Outcome::Dropped(_) => self.retry(ts, sid, Ev::Tcp(sid, T::Syn), 2, SEC),
            _ => self.end(sid, ts, SessionEnd::Refused),
        }
    }

    /// Retransmits `ev` after `rto << attempts`, at most `max` times.
    fn retry(&mut self, ts: Time, sid: u32, ev: Ev, max: u8, rto: Time) {
        let s = &mut self.sess[sid as usize];
        if s.attempts >= max {
            self.end(sid, ts, SessionEnd::GaveUp);
            return;
        }
        let at = ts + (rto << s.attempts);
        s.attempts += 1;
        self.counts.retransmissions += 1;
        self.push(at, ev);
    }

    fn tcp_synack(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        s.s_nxt = s.s_isn;
        let opts = fb::server_synack_options(self.mss);
        let f = self.server_seg(sid, TCP_SYN | TCP_ACK, &opts, &[]);
        let Some(ts) = self.emit_server(now, sid, f) else { return };
        let s = &mut self.sess[sid as usize];
        s.s_nxt = s.s_isn.wrapping_add(1);
        if s.info.kind == SessionKind::HalfOpen {
            // Nobody answers: the server retransmits its SYN-ACK twice.
            if s.attempts < 2 {
                let at = ts + (SEC << s.attempts);
                s.attempts += 1;
                self.counts.retransmissions += 1;
                self.push(at, Ev::Tcp(sid, T::SynAck));
            } else {
                self.end(sid, ts, SessionEnd::HalfOpen);
            }
            return;
        }
        let d = self.rtt(sid);
        self.push(ts + d, Ev::Tcp(sid, T::Ack));
    }

    fn tcp_ack(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        s.c_rcv = s.s_nxt;
        let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
        let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) else { return };
        self.counts.handshakes += 1;
        let s = &mut self.sess[sid as usize];
        let d = between(&mut s.rng, 30 * US, 300 * US);
        self.push(ts + d, Ev::Tcp(sid, T::Send));
    }

    /// Whether a client packet of `ip_len` bytes will bounce off the tunnel
    /// MTU (DF set, tunnel server, PMTU discovery on).
    fn bounces(&self, sid: u32, ip_len: usize) -> bool {
        let s = &self.sess[sid as usize];
        s.info.dont_frag
            && self.cfg.sysctl.pmtu_disc
            && s.rs.is_some_and(|r| r.fwd == cf::TUNNEL)
            && ip_len + 20 > self.cfg.mtu as usize
    }

    fn tcp_send(&mut self, now: Time, sid: u32) {
        let mut t = now;
        let mut last = now;
        let mut sent = 0;
        loop {
            let s = &self.sess[sid as usize];
            if s.req.left() == 0 || sent == FLIGHT {
                break;
            }
            let n = s.req.left().min(s.mss as u32);
            let payload = s.req.bytes(&self.filler, s.req.off, n);
            let flags = TCP_ACK | if n == s.req.left() { TCP_PSH } else { 0 };
            let cat = if s.gap_pending {
                Category::TcpIdleResume
            } else if self.bounces(sid, 40 + n as usize) {
                Category::OversizeDfTunnel
            } else {
                Category::TcpClient
            };
            self.sess[sid as usize].gap_pending = false;
            let f = self.client_seg(sid, flags, &[], &[], &payload);
            let flen = f.len();
            let (ts, out, work) = self.emit(t, f, cat, Some(sid));
            match out {
                Outcome::Forwarded => {
                    let s = &mut self.sess[sid as usize];
                    s.c_nxt = s.c_nxt.wrapping_add(n);
                    s.s_rcv = s.c_nxt;
                    s.req.off += n;
                    s.attempts = 0;
                    sent += 1;
                    last = ts;
                    t = ts + ser(flen);
                }
                Outcome::IcmpError(DropReason::FragNeeded) => {
                    let mtu = icmp_next_hop_mtu(&work).unwrap_or(0);
                    let s = &mut self.sess[sid as usize];
                    let new_mss = mtu.saturating_sub(40);
                    if new_mss < 536 || new_mss >= s.mss {
                        self.end(sid, ts, SessionEnd::GaveUp);
                        return;
                    }
                    s.mss = new_mss;
                    self.counts.pmtu_reductions += 1;
                    let d = self.rtt(sid) / 2 + between(&mut self.sess[sid as usize].rng, 20 * US, 200 * US);
                    self.push(ts + d, Ev::Tcp(sid, T::Send));
                    return;
                }
                Outcome::Dropped(_) => {
                    let rto = (2 * self.clients[self.sess[sid as usize].client as usize].rtt).max(200 * MSEC);
                    self.retry(ts, sid, Ev::Tcp(sid, T::Send), 3, rto);
                    return;
                }
                Outcome::ToHost(_) if cat == Category::TcpIdleResume => {
                    self.end(sid, ts, SessionEnd::IdleReset);
                    return;
                }
                _ => {
                    self.end(sid, ts, SessionEnd::Refused);
                    return;
                }
            }
        }
        let nat = self.is_nat(sid);
        if self.sess[sid as usize].req.left() > 0 {
            // Window full: the server acknowledges, the client goes on.
            let lan = self.lan(sid);
            if nat {
                self.push(last + lan, Ev::Tcp(sid, T::SrvAck));
            }
            let d = self.rtt(sid) + lan;
            self.push(last + d, Ev::Tcp(sid, T::Send));
        } else {
            let d = self.lan(sid) / 2 + self.server_think(sid);
            self.push(last + d, Ev::Tcp(sid, T::Respond));
        }
    }

    fn tcp_respond(&mut self, now: Time, sid: u32) {
        let nat = self.is_nat(sid);
        let mut t = now;
        let mut last = now;
        self.sess[sid as usize].flight_ends.clear();
        for _ in 0..FLIGHT {
            let s = &self.sess[sid as usize];
            if s.resp.left() == 0 {
                break;
            }
            let n = s.resp.left().min(self.mss as u32);
            if nat {
                let payload = s.resp.bytes(&self.filler, s.resp.off, n);
                let flags = TCP_ACK | if n == s.resp.left() { TCP_PSH } else { 0 };
                let f = self.server_seg(sid, flags, &[], &payload);
                let flen = f.len();
                let Some(ts) = self.emit_server(t, sid, f) else { return };
                last = ts;
                t = ts + ser(flen);
            }
            let s = &mut self.sess[sid as usize];
            s.s_nxt = s.s_nxt.wrapping_add(n);
            s.resp.off += n;
            let e = s.s_nxt;
            s.flight_ends.push(e);
        }
        let d = self.rtt(sid);
        self.push(last + d, Ev::Tcp(sid, T::CliAcks));
    }

    fn tcp_cli_acks(&mut self, now: Time, sid: u32) {
        let ends = std::mem::take(&mut self.sess[sid as usize].flight_ends);
        let mut t = now;
        let mut last = now;
        for (i, &e) in ends.iter().enumerate() {
            if i % 2 == 0 && i + 1 != ends.len() {
                continue;
            }
            self.sess[sid as usize].c_rcv = e;
            let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
            let Some(ts) = self.emit_client(t, sid, f, Category::TcpClient) else { return };
            last = ts;
            t = ts + 2 * ser(1514);
        }
        if self.sess[sid as usize].resp.left() > 0 {
            let d = self.lan(sid) / 2;
            self.push(last + d, Ev::Tcp(sid, T::Respond));
        } else {
            self.push(last, Ev::Tcp(sid, T::Think));
        }
    }

    fn tcp_think(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        s.exchanges = s.exchanges.saturating_sub(1);
        if s.exchanges > 0 {
            let idle = s.info.kind == SessionKind::Idle && !s.gap_done;
            self.new_exchange(sid);
            let d = if idle {
                self.sess[sid as usize].gap_pending = true;
                self.idle_gap(sid)
            } else {
                self.client_think(sid)
            };
            self.push(now + d, Ev::Tcp(sid, T::Send));
            return;
        }
        let nat = self.is_nat(sid);
        let close = self.sess[sid as usize].close;
        let soon = between(&mut self.sess[sid as usize].rng, 50 * US, 50 * MSEC);
        match close {
            Close::ClientFin => self.push(now + soon, Ev::Tcp(sid, T::CliFin)),
            Close::ClientRst => self.push(now + soon, Ev::Tcp(sid, T::CliRst)),
            Close::ServerFin if nat => {
                let d = self.lan(sid) / 2;
                self.push(now + d, Ev::Tcp(sid, T::SrvFin));
            }
            Close::ServerFin => {
                // The server's FIN went straight to the client.
                let s = &mut self.sess[sid as usize];
                s.s_nxt = s.s_nxt.wrapping_add(1);
                let d = self.rtt(sid) / 2;
                self.push(now + d, Ev::Tcp(sid, T::CliAckFin));
            }
            Close::ServerRst if nat => {
                let d = self.lan(sid) / 2 + soon;
                self.push(now + d, Ev::Tcp(sid, T::SrvRst));
            }
            Close::ServerRst => self.end(sid, now, SessionEnd::ServerReset),
        }
    }

    // --------------------------------------------------------------- UDP

    fn udp(&mut self, now: Time, sid: u32, step: U) {
        match step {
            U::Query => self.udp_query(now, sid),
            U::Reply => self.udp_reply(now, sid),
            U::IcmpErr => {
                let s = &self.sess[sid as usize];
                let quote = s.quote.clone();
                let l2 = self.client_l2(sid);
                let mut l3 = self.client_l3(sid, false);
                l3.dst = *self.sess[sid as usize].info.service.ip();
                let i = Icmpv4Repr { msg_type: ICMP_DEST_UNREACH, msg_code: ICMP_UNREACH_PORT, rest_of_header: 0 };
                let f = fb::icmp(&l2, &l3, &i, &quote, &[]);
                let (ts, _, _) = self.emit(now, f, Category::ClientIcmpError, Some(sid));
                self.end(sid, ts, SessionEnd::Completed);
            }
            U::Next => {
                let s = &mut self.sess[sid as usize];
                s.exchanges = s.exchanges.saturating_sub(1);
                if s.exchanges == 0 {
                    self.end(sid, now, SessionEnd::Completed);
                    return;
                }
                let d = if s.info.kind == SessionKind::Idle && !s.gap_done {
                    self.idle_gap(sid)
                } else {
                    between(&mut s.rng, 10 * MSEC, 2 * SEC)
                };
                self.push(now + d, Ev::Udp(sid, U::Query));
            }
        }
    }

    fn udp_query(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        if s.attempts == 0 {
            let id = s.rng.next_u64() as u16;
            let name = format!("h{}.svc{}.example.com", s.rng.below(1000), s.svc);
            let qtype = if s.rng.chance(1, 10) { 16 } else { 1 };
            s.query = fb::dns_query(id, &name, qtype);
        }
        let (cport, vport, zero) = (s.cport, s.vport, s.info.zero_checksum);
        let query = s.query.clone();
        let l2 = self.client_l2(sid);
        let df = self.sess[sid as usize].info.dont_frag;
        let l3 = self.client_l3(sid, df);
        let f = fb::udp(&l2, &l3, cport, vport, &query, zero);
        let (ts, out, _) = self.emit(now, f, Category::UdpClient, Some(sid));
        match out {
            Outcome::Forwarded => {
                self.learn_rs(sid);
                self.sess[sid as usize].attempts = 0;
                let last = self.sess[sid as usize].exchanges == 1;
                let icmp_err = last && self.sess[sid as usize].info.client_icmp_error;
                if self.is_nat(sid) {
                    let d = self.lan(sid) + self.server_think(sid);
                    self.push(ts + d, Ev::Udp(sid, U::Reply));
                } else {
                    if icmp_err {
                        // The reply (from the VIP, straight from the server)
                        // as the client got it.
                        let resp = self.dns_answer(sid);
                        let s = &self.sess[sid as usize];
                        let c = &self.clients[s.client as usize];
                        let l2 = L2 { src: MacAddr::ZERO, dst: MacAddr::ZERO, vlan: None };
                        let l3 = L3 { src: *s.info.service.ip(), dst: c.addr, ttl: 64, ident: s.s_id, df: false };
                        let f = fb::udp(&l2, &l3, s.vport, s.cport, &resp, false);
                        let hops = c.hops;
                        self.sess[sid as usize].quote = fb::quote_received(&f, 14, hops, ICMP_QUOTE_MAX);
                    }
                    let d = self.rtt(sid) + self.server_think(sid);
                    self.push(ts + d, Ev::Udp(sid, if icmp_err { U::IcmpErr } else { U::Next }));
                }
            }
            Outcome::Dropped(_) => self.retry(ts, sid, Ev::Udp(sid, U::Query), 2, SEC),
            _ => self.end(sid, ts, SessionEnd::Refused),
        }
    }

    fn dns_answer(&mut self, sid: u32) -> Vec<u8> {
        let s = &mut self.sess[sid as usize];
        let a = between(&mut s.rng, 1, 8) as u16;
        let txt = between(&mut s.rng, 100, 1100) as usize;
        fb::dns_response(&s.query, a, txt, &mut s.rng)
    }

    fn udp_reply(&mut self, now: Time, sid: u32) {
        let resp = self.dns_answer(sid);
        let (l2, l3) = self.server_l2l3(sid);
        let s = &self.sess[sid as usize];
        let rs = s.rs.expect("server chosen");
        let f = fb::udp(&l2, &l3, rs.port, s.cport, &resp, false);
        let (ts, out, work) = self.emit(now, f, Category::UdpServer, Some(sid));
        if out != Outcome::Forwarded {
            self.end(sid, ts, SessionEnd::Lost);
            return;
        }
        let s = &self.sess[sid as usize];
        let icmp_err = s.exchanges == 1 && s.info.client_icmp_error;
        if icmp_err {
            let hops = self.clients[s.client as usize].hops;
            let l3 = parse_frame(&work).l2_len;
            self.sess[sid as usize].quote = fb::quote_received(&work, l3, hops.saturating_sub(1), ICMP_QUOTE_MAX);
        }
        let d = self.rtt(sid) / 2 + between(&mut self.sess[sid as usize].rng, 10 * US, 500 * US);
        self.push(ts + d, Ev::Udp(sid, if icmp_err { U::IcmpErr } else { U::Next }));
    }

    // --------------------------------------------------- other frames

    fn random_neighbor(&mut self) -> Option<(Ipv4Addr, MacAddr)> {
        let n = self.cfg.neighbors.len();
        if n == 0 {
            return None;
        }
        let i = self.rng.below(n as u64) as usize;
        self.cfg.neighbors.iter().nth(i).map(|(a, m)| (*a, *m))
    }

    fn random_mac(&mut self) -> MacAddr {
        let v = self.rng.next_u64().to_be_bytes();
        MacAddr([0x02, v[1], v[2], v[3], v[4], v[5]])
    }

    /// An address of the director's /24 that is nobody we know.
    fn unrelated_ip(&mut self) -> Ipv4Addr {
        let o = self.cfg.ip.octets();
        for tries in 0.. {
            let a = if tries < 1000 {
                Ipv4Addr::new(o[0], o[1], o[2], between(&mut self.rng, 2, 250) as u8)
            } else {
                // A crowded /24: TEST-NET-1 then.
                Ipv4Addr::new(192, 0, 2, between(&mut self.rng, 2, 250) as u8)
            };
            if a != self.cfg.ip
                && a != self.gateway_ip
                && !self.cfg.neighbors.contains_key(&a)
                && !self.svcs.iter().any(|s| s.vip == a)
            {
                return a;
            }
        }
        unreachable!("an unrelated address is always found")
    }

    fn gw_l2(&self) -> L2 {
        L2 { src: self.cfg.gateway_mac, dst: self.cfg.mac, vlan: None }
    }

    fn other_l3(&self, o: &Other, dst: Ipv4Addr, ttl: Option<u8>, df: bool) -> L3 {
        let c = &self.clients[o.client as usize];
        L3 { src: c.addr, dst, ttl: ttl.unwrap_or(c.ttl), ident: o.ident.wrapping_add(o.step as u16), df }
    }

    fn other(&mut self, now: Time, idx: u32) {
        let o = &self.others[idx as usize];
        let cat = o.cat;
        let (step, steps) = (o.step, o.steps);
        let next_step_in = match cat {
            Category::IcmpEchoVip | Category::IcmpEchoDirector => self.icmp_echo(now, idx),
            Category::TcpToDirector => self.ssh_step(now, idx),
            Category::Fragment => {
                self.fragment(now, idx);
                None
            }
            c if c.is_malformed() => {
                self.malformed(now, idx);
                None
            }
            _ => {
                let f = self.single_other(idx);
                self.emit(now, f, cat, None);
                None
            }
        };
        if let Some(d) = next_step_in {
            if step + 1 < steps {
                self.others[idx as usize].step += 1;
                self.push(now + d, Ev::Other(idx));
            }
        }
    }

    fn icmp_echo(&mut self, now: Time, idx: u32) -> Option<Time> {
        let cat = self.others[idx as usize].cat;
        let dst = if cat == Category::IcmpEchoVip { self.random_vip_of(idx) } else { self.cfg.ip };
        let o = &self.others[idx as usize];
        let l3 = self.other_l3(o, dst, None, true);
        let i = Icmpv4Repr::echo(ICMP_ECHO_REQUEST, o.port, o.step as u16 + 1);
        let f = fb::icmp(&self.gw_l2(), &l3, &i, &fb::ping_data(now), &[]);
        self.emit(now, f, cat, None);
        Some(SEC + self.rng.below(MSEC))
    }

    /// The VIP an other unit talks to (stable across its steps).
    fn random_vip_of(&mut self, idx: u32) -> Ipv4Addr {
        let k = self.others[idx as usize].seq as usize % self.svcs.len().max(1);
        self.svcs.get(k).map(|s| s.vip).unwrap_or(self.cfg.ip)
    }

    fn ssh_step(&mut self, now: Time, idx: u32) -> Option<Time> {
        let port = self.director_tcp_port.unwrap_or(22);
        let o = &self.others[idx as usize];
        let rtt = self.clients[o.client as usize].rtt;
        let l3 = self.other_l3(o, self.cfg.ip, None, true);
        let (flags, payload, opts): (u8, Vec<u8>, Vec<u8>) = match o.step {
            0 => (TCP_SYN, vec![], fb::client_syn_options(self.mss).to_vec()),
            1 => (TCP_ACK, vec![], vec![]),
            2 => (TCP_ACK | TCP_PSH, b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n".to_vec(), vec![]),
            3 => (TCP_ACK | TCP_PSH, fb::ssh_kexinit(&mut self.rng), vec![]),
            _ => (TCP_FIN | TCP_ACK, vec![], vec![]),
        };
        let t = TcpRepr {
            src_port: o.port,
            dst_port: port,
            seq_number: o.seq,
            ack_number: if flags & TCP_ACK != 0 { o.ack } else { 0 },
            flags,
            window_len: 64240,
        };
        let f = fb::tcp(&self.gw_l2(), &l3, &t, &opts, &[], &payload);
        self.emit(now, f, Category::TcpToDirector, None);
        let o = &mut self.others[idx as usize];
        let used = payload.len() as u32 + (flags & (TCP_SYN | TCP_FIN) != 0) as u32;
        o.seq = o.seq.wrapping_add(used);
        // The director's sshd: SYN-ACK (1), banner (32), kex (~1000).
        o.ack = o.ack.wrapping_add(match o.step {
            0 => 1,
            1 => 32,
            3 => 1080,
            _ => 0,
        });
        Some(match o.step {
            0 => rtt,
            1 => 200 * US,
            2 => rtt,
            _ => rtt + 5 * MSEC,
        })
    }

    fn fragment(&mut self, now: Time, idx: u32) {
        let udp_svc = self.svcs.iter().find(|s| s.proto == IPPROTO_UDP).map(|s| (s.vip, s.vport));
        let (vip, vport) = match udp_svc {
            Some((v, p)) if p != 0 => (v, p),
            _ => (self.random_vip_of(idx), 53),
        };
        let o = &self.others[idx as usize];
        let l3 = self.other_l3(o, vip, None, false);
        // Two fragments: the first as large as the MTU allows.
        let first = ((self.cfg.mtu as usize).min(1500) - 20) / 8 * 8;
        let len = between(&mut self.rng, first as u64 + 100, 2 * first as u64 - 16) as usize;
        let payload = fb::dns_query_padded(o.ident, "big.example.com", 255, len);
        let l2 = self.gw_l2();
        let full = crate::wire::build::udp_frame(
            &crate::wire::EthernetRepr { src: l2.src, dst: l2.dst, vlan_tci: None, ethertype: 0 },
            &crate::wire::Ipv4Repr {
                src_addr: l3.src,
                dst_addr: l3.dst,
                protocol: 0,
                payload_len: 0,
                ttl: l3.ttl,
                tos: 0,
                ident: l3.ident,
                dont_frag: false,
            },
            &crate::wire::UdpRepr { src_port: o.port, dst_port: vport },
            &payload,
        );
        let [a, b] = fb::fragment_in_two(&full, 14, first);
        let (ts, _, _) = self.emit(now, a, Category::Fragment, None);
        self.emit(ts + 2 * US, b, Category::Fragment, None);
    }

    fn single_other(&mut self, idx: u32) -> Vec<u8> {
        let cat = self.others[idx as usize].cat;
        let gw = (self.cfg.gateway_mac, self.gateway_ip);
        match cat {
            Category::ArpVip => {
                let vip = self.random_vip_of(idx);
                let l2 = L2 { src: gw.0, dst: MacAddr::BROADCAST, vlan: None };
                fb::arp(&l2, ArpOperation::Request, gw, (MacAddr::ZERO, vip))
            }
            Category::ArpDirector => {
                let sender = self.random_neighbor().map(|(a, m)| (m, a)).unwrap_or(gw);
                // A broadcast request, or a unicast refresh of a stale entry.
                let dst = if self.rng.chance(1, 2) { MacAddr::BROADCAST } else { self.cfg.mac };
                let l2 = L2 { src: sender.0, dst, vlan: None };
                fb::arp(&l2, ArpOperation::Request, sender, (MacAddr::ZERO, self.cfg.ip))
            }
            Category::ArpOther => {
                let l2b = |src| L2 { src, dst: MacAddr::BROADCAST, vlan: None };
                match self.random_neighbor() {
                    Some((a, m)) if self.rng.chance(1, 2) => {
                        // Gratuitous ARP from a real server.
                        fb::arp(&l2b(m), ArpOperation::Reply, (m, a), (MacAddr::BROADCAST, a))
                    }
                    _ => {
                        let target = self.unrelated_ip();
                        fb::arp(&l2b(gw.0), ArpOperation::Request, gw, (MacAddr::ZERO, target))
                    }
                }
            }
            Category::SynNoService | Category::StrayAck | Category::Ttl1 | Category::OversizeDfTunnel => {
                self.probe(idx, cat)
            }
            Category::Ipv6 => {
                let src = if self.rng.chance(1, 2) { self.cfg.gateway_mac } else { self.random_mac() };
                if self.rng.chance(1, 2) {
                    let low = self.rng.next_u64() as u32;
                    fb::ipv6_neighbor_solicitation(src, low, &mut self.rng)
                } else {
                    fb::ipv6_echo(src, self.cfg.mac, &mut self.rng)
                }
            }
            Category::OtherEthertype => {
                let mac = self.random_mac();
                let port = between(&mut self.rng, 1, 48) as u16;
                fb::lldp(mac, port)
            }
            Category::OtherMac => {
                let mut dst = self.random_mac();
                if dst == self.cfg.mac {
                    dst.0[5] ^= 1;
                }
                let host = self.unrelated_ip();
                let o = &self.others[idx as usize];
                let l3 = self.other_l3(o, host, None, true);
                let t = TcpRepr {
                    src_port: o.port,
                    dst_port: 443,
                    seq_number: o.seq,
                    ack_number: o.ack,
                    flags: TCP_ACK | TCP_PSH,
                    window_len: 1026,
                };
                let mut payload = vec![0x17, 0x03, 0x03, 0x00, 0x40];
                self.filler.extend(&mut payload, o.ack as usize, 64);
                fb::tcp(&L2 { src: self.cfg.gateway_mac, dst, vlan: None }, &l3, &t, &[], &[], &payload)
            }
            Category::Broadcast => {
                let mac = self.random_mac();
                let xid = self.rng.next_u64() as u32;
                fb::dhcp_discover(mac, xid)
            }
            Category::IpOptions => {
                let vip = self.random_vip_of(idx);
                let o = &self.others[idx as usize];
                let l3 = self.other_l3(o, vip, None, false);
                let i = Icmpv4Repr::echo(ICMP_ECHO_REQUEST, o.port, 1);
                fb::icmp(&self.gw_l2(), &l3, &i, &fb::ping_data(o.seq as u64 * 1000), &fb::ip_opt_record_route())
            }
            _ => unreachable!("not a single-frame other category: {cat:?}"),
        }
    }

    /// Frames to a VIP service port from a fresh client port: a SYN to a
    /// closed port, a stray ACK, a TTL-1 probe, an oversized DF packet to a
    /// tunnel service.
    fn probe(&mut self, idx: u32, cat: Category) -> Vec<u8> {
        let pick_svc = |sim: &mut Sim, f: &dyn Fn(&Svc) -> bool| -> Option<usize> {
            let c: Vec<usize> = (0..sim.svcs.len()).filter(|&i| f(&sim.svcs[i])).collect();
            (!c.is_empty()).then(|| c[sim.rng.below(c.len() as u64) as usize])
        };
        let svc = match cat {
            Category::StrayAck => pick_svc(self, &|s| s.proto == IPPROTO_TCP && s.vport != 0),
            Category::OversizeDfTunnel => pick_svc(self, &|s| s.tunnel_only),
            _ => pick_svc(self, &|_| true),
        };
        let (proto, vip, vport) = match (cat, svc) {
            (Category::SynNoService, _) => {
                let (v, p) = self.closed_port.expect("deck has SynNoService only with a closed port");
                (IPPROTO_TCP, v, p)
            }
            (_, Some(i)) => {
                let s = &self.svcs[i];
                (s.proto, s.vip, if s.vport != 0 { s.vport } else { 80 })
            }
            (_, None) => unreachable!("deck has {cat:?} only with a matching service"),
        };
        let o = &self.others[idx as usize];
        let ttl = (cat == Category::Ttl1).then_some(1);
        let df = cat != Category::Ttl1 || self.rng.chance(1, 2);
        let l2 = self.gw_l2();
        let l3 = self.other_l3(o, vip, ttl, df);
        let big = cat == Category::OversizeDfTunnel;
        if proto == IPPROTO_UDP {
            let payload = if big {
                fb::dns_query_padded(o.ident, "probe.example.com", 1, self.cfg.mtu as usize - 28)
            } else {
                fb::dns_query(o.ident, "probe.example.com", 1)
            };
            return fb::udp(&l2, &l3, o.port, vport, &payload, false);
        }
        let opts = fb::client_syn_options(self.mss);
        let (flags, opts, payload): (u8, &[u8], Vec<u8>) = match cat {
            Category::StrayAck => (TCP_ACK, &[], vec![]),
            Category::OversizeDfTunnel => {
                // A TCP Fast Open SYN carrying a full packet of data.
                let mut p = Vec::new();
                self.filler.extend(&mut p, o.seq as usize, self.cfg.mtu as usize - 40 - opts.len());
                (TCP_SYN, &opts, p)
            }
            _ => (TCP_SYN, &opts, vec![]),
        };
        let t = TcpRepr {
            src_port: o.port,
            dst_port: vport,
            seq_number: o.seq,
            ack_number: if flags & TCP_ACK != 0 { o.ack } else { 0 },
            flags,
            window_len: 64240,
        };
        fb::tcp(&l2, &l3, &t, opts, &[], &payload)
    }

    fn malformed(&mut self, now: Time, idx: u32) {
        let o = &self.others[idx as usize];
        let cat = o.cat;
        let dst = if self.svcs.is_empty() { self.cfg.ip } else { self.svcs[o.seq as usize % self.svcs.len()].vip };
        let l3 = self.other_l3(o, dst, None, true);
        let t = TcpRepr {
            src_port: o.port,
            dst_port: 80,
            seq_number: o.seq,
            ack_number: 0,
            flags: TCP_SYN,
            window_len: 64240,
        };
        let good = crate::wire::build::tcp_frame(
            &crate::wire::EthernetRepr { src: self.cfg.gateway_mac, dst: self.cfg.mac, vlan_tci: None, ethertype: 0 },
            &crate::wire::Ipv4Repr {
                src_addr: l3.src,
                dst_addr: l3.dst,
                protocol: IPPROTO_TCP,
                payload_len: 0,
                ttl: l3.ttl,
                tos: 0,
                ident: l3.ident,
                dont_frag: true,
            },
            &t,
            b"",
        );
        let kind = match cat {
            Category::MalformedRunt => Malformed::Runt,
            Category::MalformedTruncatedIpv4 => Malformed::TruncatedIpv4Header,
            Category::MalformedBadVersion => Malformed::BadVersion,
            Category::MalformedBadIhl => Malformed::BadIhl,
            Category::MalformedBadChecksum => Malformed::BadHeaderChecksum,
            Category::MalformedTotalLength => Malformed::TotalLenTooLarge,
            _ => Malformed::TruncatedTcpHeader,
        };
        let f = fb::malform(good, 14, kind, &mut self.rng);
        self.emit(now, f, cat, None);
    }

    // -------------------------------------------------------------- finish

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

/// The next-hop MTU of the ICMP "fragmentation needed" in `frame`.
fn icmp_next_hop_mtu(frame: &[u8]) -> Option<u16> {
    let v4 = parse_frame(frame).ipv4?;
    if v4.protocol != IPPROTO_ICMP {
        return None;
    }
    let o = v4.l4_offset();
    frame.get(o + 6..o + 8).map(|b| u16::from_be_bytes([b[0], b[1]]))
}
