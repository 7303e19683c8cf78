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
//! Deviations, all documented in `docs/architecture.md`: no ICMP "fragment
//! reassembly time exceeded" for an expired queue; IP IDs the
//! kernel draws from a randomised generator come from a deterministic
//! counter (ICMP errors) or copy the inner header's ID (non-DF tunnel
//! headers); the global ICMP rate limit
//! (randomised in the kernel) is not modelled; ICMP "fragmentation needed"
//! for tunnels does not lower a cached path MTU.

use crate::config::DirectorConfig;
use crate::defrag::{Defrag, DefragFail, DefragResult, DefragUser};
use crate::conn::tcp::{self, Direction};
use crate::conn::{flags as cf, Conn, ConnId, ConnTable, NIL};
use crate::ipvs::estimator::EST_PERIOD;
use crate::ipvs::{DestId, Estimator, RuleError, ServiceId, ServiceTable, Stats};
use crate::rng::SplitMix64;
use crate::rules::{FwdMethod, Protocol, RuleSet, ServiceKey};
use crate::sched::SchedPacket;
use crate::time::{secs, Time, MSEC};
use crate::wire::{self, FrameError, FrameInfo, MacAddr, IPPROTO_ICMP, IPPROTO_IPIP, IPPROTO_TCP, IPPROTO_UDP};
use crate::xmit;
use std::collections::HashMap;
use std::net::Ipv4Addr;

const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const ICMP_DEST_UNREACH: u8 = 3;
const ICMP_SOURCE_QUENCH: u8 = 4;
const ICMP_TIME_EXCEEDED: u8 = 11;
const ICMP_PORT_UNREACH: u8 = 3;
const ICMP_FRAG_NEEDED: u8 = 4;

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
}

impl DropReason {
    pub const ALL: [DropReason; 10] = [
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
    ];
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

/// IPv4 reassembly counters (`ip_fragment.c`'s REASM* statistics).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReasmCounters {
    /// Fragments kept waiting for the rest of their datagram.
    pub held: u64,
    /// Datagrams completed (`REASMOKS`).
    pub reassembled: u64,
    /// Queues dropped after 30 s incomplete (`REASMTIMEOUT`).
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

/// Director-wide counters (beyond the IPVS per-service statistics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub frames_in: u64,
    pub frames_tx: u64,
    pub frames_host: u64,
    pub frames_dropped: u64,
    pub host: [u64; 9],
    pub drop: [u64; 10],
    /// Fragments held for reassembly.
    pub frames_held: u64,
    pub reasm: ReasmCounters,
    /// ICMP messages generated, by (type, code).
    pub icmp_sent: std::collections::BTreeMap<(u8, u8), u64>,
    /// ICMP errors suppressed by the per-destination rate limit.
    pub icmp_rate_limited: u64,
    /// ARP replies sent.
    pub arp_replies: u64,
    /// Connections created / expired.
    pub conns_created: u64,
    pub conns_expired: u64,
    pub templates_created: u64,
}

/// A problem with the rules for this director.
#[derive(Debug, thiserror::Error)]
pub enum DirectorError {
    #[error("service {service}: {error}")]
    Rule { service: String, error: RuleError },
    #[error("real server {addr} of service {service} has no entry in [neighbors] of the director configuration")]
    NoNeighbor { addr: Ipv4Addr, service: String },
}

/// The parsed facts of an IPv4 TCP/UDP/ICMP packet the logic needs.
#[derive(Clone, Copy, Debug)]
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

/// The golden-model director.
pub struct Director {
    pub cfg: DirectorConfig,
    pub services: ServiceTable,
    pub conns: ConnTable,
    /// `ipvs->tot_stats`.
    pub total: Stats,
    /// Rate estimator over `total`.
    pub total_est: Estimator,
    /// When the next rate-estimation tick falls (every 2 s from the start).
    est_next: Time,
    pub counters: Counters,
    rng: SplitMix64,
    now: Time,
    ip_id: u16,
    /// Per-destination ICMP rate limit state (`inet_peer` rate_tokens, rate_last).
    icmp_peers: HashMap<u32, (Time, Time)>,
    /// A deleted server's connections are to be flushed (`expire_nodest_conn`).
    nodest_flush: bool,
    /// The connection the last processed packet belonged to (for the host
    /// slow path that installs hardware flows).
    pub last_conn: Option<ConnId>,
    /// Next-hop MAC per real server (`DestId`), resolved once from the
    /// neighbor table like the kernel's cached route in `dest->dest_dst`.
    dest_mac: Vec<MacAddr>,
    /// Connections whose timer was forced to now (`ip_vs_conn_expire_now`):
    /// they expire whatever activity the hardware reports.
    forced_expiry: std::collections::HashSet<ConnId>,
    /// IPv4 reassembly queues.
    pub defrag: Defrag,
    /// Set while a reassembled datagram is processed.
    reasm: Option<ReasmInfo>,
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

fn fwd_flags(fwd: FwdMethod) -> u16 {
    match fwd {
        FwdMethod::Masq => cf::MASQ,
        FwdMethod::Local => cf::LOCALNODE,
        FwdMethod::Tunnel { .. } => cf::TUNNEL,
        FwdMethod::Route => cf::DROUTE,
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
            nodest_flush: false,
            last_conn: None,
            dest_mac: Vec::new(),
            forced_expiry: std::collections::HashSet::new(),
            defrag: Defrag::new(),
            reasm: None,
        };
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
            if a != self.cfg.ip && !self.cfg.neighbors.contains_key(&a) {
                return Err(DirectorError::NoNeighbor { addr: a, service: service.to_string() });
            }
        }
        Ok(())
    }

    /// Re-seeds the random source used by the `twos` scheduler.
    pub fn seed(&mut self, seed: u64) {
        self.rng = SplitMix64::new(seed);
    }

    /// Current model time (the last packet's timestamp).
    pub fn now(&self) -> Time {
        self.now
    }

    // ---------------------------------------------------------------- time

    /// Runs every timer due at or before `now`: connection and template
    /// expiry (`ip_vs_conn_expire`), the dest trash timer, the
    /// `expire_nodest_conn` flush. Time never goes backwards.
    pub fn advance(&mut self, now: Time) {
        self.advance_with(now, &mut NoOffload);
    }

    /// [`advance`](Self::advance) for a director whose connections may also
    /// be served elsewhere (the hardware): before a connection expires,
    /// `off` is asked when it was last used there, and told when it is removed.
    pub fn advance_with(&mut self, now: Time, off: &mut dyn Offload) {
        if now > self.now {
            self.now = now;
        }
        let now = self.now;
        self.run_estimators(now);
        self.counters.reasm.timeouts += self.defrag.expire(now);
        if self.nodest_flush {
            self.nodest_flush = false;
            self.flush_nodest_conns();
        }
        while let Some((id, at)) = self.conns.pop_due(now) {
            self.expire(id, at, off);
        }
        self.services.run_trash_timer(now);
    }

    /// Whether a rate-estimation tick falls at or before `now` (a slow path
    /// in front of hardware credits the hardware's counters first, so the
    /// tick sees every packet).
    pub fn estimator_due(&self, now: Time) -> bool {
        now.max(self.now) >= self.est_next
    }

    /// The rate-estimation ticks (`ip_vs_est.c`) due by `now`: every live
    /// service, every real server in a service and the totals. Once every
    /// average is zero and nothing has moved, the remaining ticks of a long
    /// idle gap change nothing and are skipped.
    fn run_estimators(&mut self, now: Time) {
        while self.est_next <= now {
            let mut active = self.total_est.tick(&self.total);
            let st = &mut self.services;
            for s in st.services.iter_mut().filter(|s| s.live) {
                active |= s.est.tick(&s.stats);
                for d in &s.order {
                    let d = &mut st.dests[d.index()];
                    active |= d.est.tick(&d.stats);
                }
            }
            self.est_next += EST_PERIOD;
            if !active && self.est_next <= now {
                self.est_next += (now - self.est_next) / EST_PERIOD * EST_PERIOD + EST_PERIOD;
            }
        }
    }

    /// `ipvsadm -Z [service]` (`ip_vs_zero_service` / `ip_vs_zero_all`):
    /// counters and rate averages restart from zero; without a service the
    /// director's totals too.
    pub fn zero_stats(&mut self, key: Option<&ServiceKey>) -> Result<(), RuleError> {
        self.services.zero(key)?;
        if key.is_none() {
            self.total = Stats::default();
            self.total_est = Estimator::default();
        }
        Ok(())
    }

    /// `ip_vs_conn_expire` for an entry whose timer fired.
    fn expire(&mut self, id: ConnId, at: Time, off: &mut dyn Offload) {
        let c = *self.conns.get(id);
        if !self.forced_expiry.remove(&id) {
            // Packets the hardware forwarded would have re-armed the timer.
            if let Some(t) = off.last_use(id, &c) {
                let due = t + c.timeout();
                if due > at {
                    self.conns.rearm_after_pop(id, due);
                    return;
                }
            }
        }
        if c.n_control > 0 {
            // expire_later: the timeout becomes 60 s for good.
            let cm = self.conns.get_mut(id);
            cm.set_timeout(secs(60));
            self.conns.rearm_after_pop(id, at + secs(60));
            return;
        }
        if c.control != NIL {
            let t = self.conns.get_mut(ConnId(c.control));
            t.n_control = t.n_control.saturating_sub(1);
        }
        self.unbind_dest(&c);
        off.removed(id, &c);
        self.conns.remove(id);
        self.counters.conns_expired += 1;
    }

    /// `ip_vs_conn_expire_now`: the timer fires at the current time (after
    /// the packet being processed).
    fn expire_now(&mut self, id: ConnId) {
        let now = self.now;
        self.forced_expiry.insert(id);
        self.conns.arm(id, now);
    }

    /// `ip_vs_expire_nodest_conn_flush`.
    fn flush_nodest_conns(&mut self) {
        let victims: Vec<(ConnId, u32)> = self
            .conns
            .iter()
            .filter(|(_, c)| c.dest != NIL && !self.services.dests[c.dest as usize].available && c.n_control == 0)
            .map(|(id, c)| (id, c.control))
            .collect();
        for (id, control) in victims {
            self.expire_now(id);
            if control != NIL && self.conns.get(ConnId(control)).n_control <= 1 {
                self.expire_now(ConnId(control));
            }
        }
    }

    // ------------------------------------------------------ dest binding

    /// `ip_vs_bind_dest`: inherit the forwarding flags, count the conn.
    fn bind_dest(&mut self, c: &mut Conn, dest: DestId) {
        let d = &self.services.dests[dest.index()];
        let mut fl = fwd_flags(d.fwd) | cf::INACTIVE;
        if d.addr == self.cfg.ip {
            fl = (fl & !cf::FWD_MASK) | cf::LOCALNODE;
        }
        if fl & cf::FWD_MASK != cf::MASQ {
            fl |= cf::NOOUTPUT;
        }
        c.flags |= fl;
        c.dest = dest.0;
        self.services.refs[dest.index()] += 1;
        let d = &mut self.services.dests[dest.index()];
        if c.flags & cf::TEMPLATE == 0 {
            if c.flags & cf::INACTIVE == 0 {
                d.activeconns += 1;
            } else {
                d.inactconns += 1;
            }
        } else {
            d.persistconns += 1;
        }
        if d.u_threshold != 0 && (d.activeconns + d.inactconns) as i64 >= d.u_threshold as i64 {
            d.overloaded = true;
        }
    }

    /// `ip_vs_unbind_dest`.
    fn unbind_dest(&mut self, c: &Conn) {
        if c.dest == NIL {
            return;
        }
        let i = c.dest as usize;
        self.services.refs[i] = self.services.refs[i].saturating_sub(1);
        let d = &mut self.services.dests[i];
        if c.flags & cf::TEMPLATE == 0 {
            if c.flags & cf::INACTIVE != 0 {
                d.inactconns -= 1;
            } else {
                d.activeconns -= 1;
            }
        } else {
            d.persistconns -= 1;
        }
        let total = d.activeconns as i64 + d.inactconns as i64;
        if d.l_threshold != 0 {
            if total < d.l_threshold as i64 {
                d.overloaded = false;
            }
        } else if d.u_threshold != 0 {
            if total * 4 < d.u_threshold as i64 * 3 {
                d.overloaded = false;
            }
        } else {
            d.overloaded = false;
        }
    }

    // --------------------------------------------------------- stats

    fn in_stats(&mut self, c: &Conn, len: u16) {
        if c.dest == NIL {
            return;
        }
        let d = &mut self.services.dests[c.dest as usize];
        if !d.available {
            return;
        }
        d.stats.inpkts += 1;
        d.stats.inbytes += len as u64;
        let s = &mut self.services.services[d.svc.0 as usize].stats;
        s.inpkts += 1;
        s.inbytes += len as u64;
        self.total.inpkts += 1;
        self.total.inbytes += len as u64;
    }

    fn out_stats(&mut self, c: &Conn, len: u64) {
        if c.dest == NIL {
            return;
        }
        let d = &mut self.services.dests[c.dest as usize];
        if !d.available {
            return;
        }
        d.stats.outpkts += 1;
        d.stats.outbytes += len;
        let s = &mut self.services.services[d.svc.0 as usize].stats;
        s.outpkts += 1;
        s.outbytes += len;
        self.total.outpkts += 1;
        self.total.outbytes += len;
    }

    /// Adds packets the hardware forwarded for real server `dest` to the
    /// IPVS statistics (`reply`: real server → client).
    pub fn credit_offloaded(&mut self, dest: DestId, reply: bool, pkts: u64, bytes: u64) {
        let d = &mut self.services.dests[dest.index()];
        let svc = d.svc;
        let add = |s: &mut Stats| {
            if reply {
                s.outpkts += pkts;
                s.outbytes += bytes;
            } else {
                s.inpkts += pkts;
                s.inbytes += bytes;
            }
        };
        add(&mut d.stats);
        add(&mut self.services.services[svc.0 as usize].stats);
        add(&mut self.total);
    }

    /// Adds frames the hardware forwarded to the frame counters.
    pub fn credit_forwarded_frames(&mut self, n: u64) {
        self.counters.frames_in += n;
        self.counters.frames_tx += n;
    }

    fn conn_stats(&mut self, dest: DestId, svc: ServiceId) {
        self.services.dests[dest.index()].stats.conns += 1;
        self.services.services[svc.0 as usize].stats.conns += 1;
        self.total.conns += 1;
    }

    // --------------------------------------------------------- states

    /// `ip_vs_set_state` → `tcp_state_transition` / `udp_state_transition`.
    fn set_state(&mut self, id: ConnId, dir: Direction, tcp_flags: u8) {
        let proto = self.conns.get(id).proto;
        if proto == IPPROTO_UDP {
            let t = self.cfg.timeouts.udp;
            self.conns.get_mut(id).set_timeout(t);
            return;
        }
        if proto != IPPROTO_TCP {
            return;
        }
        let c = *self.conns.get(id);
        let tr = tcp::next_state(c.state, dir, c.flags & cf::NOOUTPUT != 0, tcp_flags, self.cfg.sysctl.secure_tcp);
        let mut fl = c.flags;
        if tr.clear_nooutput {
            fl &= !cf::NOOUTPUT;
        }
        if tr.new_state != c.state && c.dest != NIL {
            let d = &mut self.services.dests[c.dest as usize];
            if fl & cf::INACTIVE == 0 && !tcp::is_active(tr.new_state) {
                d.activeconns -= 1;
                d.inactconns += 1;
                fl |= cf::INACTIVE;
            } else if fl & cf::INACTIVE != 0 && tcp::is_active(tr.new_state) {
                d.activeconns += 1;
                d.inactconns -= 1;
                fl &= !cf::INACTIVE;
            }
        }
        let timeout = self.cfg.timeouts.tcp.0[tr.new_state as usize];
        let cm = self.conns.get_mut(id);
        cm.flags = fl;
        cm.state = tr.new_state;
        cm.set_timeout(timeout);
    }

    /// `ip_vs_conn_put`: re-arm the timer (`now + timeout`, or now for
    /// one-packet conns).
    fn conn_put(&mut self, id: ConnId) {
        let c = self.conns.get(id);
        let t = if c.flags & cf::ONE_PACKET != 0 { 0 } else { c.timeout() };
        let at = self.now + t;
        self.conns.arm(id, at);
    }

    // ---------------------------------------------------------- output

    fn next_ip_id(&mut self) -> u16 {
        let id = self.ip_id;
        self.ip_id = self.ip_id.wrapping_add(1);
        id
    }

    /// `icmpv4_xrlim_allow` → `inet_peer_xrlim_allow`: token bucket per
    /// destination, `icmp_ratelimit` per message, burst 6; FRAG_NEEDED and
    /// types outside `icmp_ratemask` are not limited.
    fn icmp_allowed(&mut self, dst: u32, typ: u8, code: u8) -> bool {
        if typ > 18 {
            return true;
        }
        if typ == ICMP_DEST_UNREACH && code == ICMP_FRAG_NEEDED {
            return true;
        }
        if (1u32 << typ) & self.cfg.sysctl.icmp_ratemask == 0 {
            return true;
        }
        let timeout = self.cfg.sysctl.icmp_ratelimit_ms as Time * MSEC;
        let now = self.now;
        // A new peer starts with rate_last = now - 60 s (inet_getpeer).
        let (tokens, last) = self.icmp_peers.entry(dst).or_insert((0, now.saturating_sub(secs(60))));
        let mut token = *tokens + now.saturating_sub(*last);
        *last = now;
        if token > 6 * timeout {
            token = 6 * timeout;
        }
        let ok = token >= timeout;
        if ok {
            token -= timeout;
        }
        *tokens = token;
        ok
    }

    /// `icmp_send` in reply to the IPv4 packet at `frame[p.l3..]`: replaces
    /// `frame` with the ICMP error and returns Transmit, or returns the
    /// `drop` action when the kernel would send nothing.
    fn icmp_send(&mut self, frame: &mut Vec<u8>, p: &Pkt, typ: u8, code: u8, info: u32, src: u32, drop: DropReason) -> Action {
        // Never about a non-first fragment, nor about an ICMP error.
        let frag = u16::from_be_bytes([frame[p.l3 + 6], frame[p.l3 + 7]]) & xmit::IP_OFFSET;
        if frag != 0 {
            return self.drop(drop);
        }
        if p.proto == IPPROTO_ICMP {
            let it = p.l3 + p.ihl;
            if it >= frame.len() {
                return self.drop(drop);
            }
            let t = frame[it];
            if t > 18 || xmit::icmp_type_is_error(t) {
                return self.drop(drop);
            }
        }
        if !self.icmp_allowed(p.saddr, typ, code) {
            self.counters.icmp_rate_limited += 1;
            return self.drop(drop);
        }
        let ident = self.next_ip_id();
        let dst_mac = self.cfg.next_hop_mac(Ipv4Addr::from(p.saddr));
        let f = xmit::icmp_error_frame(
            frame,
            p.l3,
            typ,
            code,
            info,
            Ipv4Addr::from(src),
            ident,
            dst_mac,
            self.cfg.mac,
            self.cfg.mtu as usize,
        );
        *frame = f;
        *self.counters.icmp_sent.entry((typ, code)).or_default() += 1;
        self.counters.drop[drop as usize] += 1;
        self.counters.frames_dropped += 1;
        Action::Transmit
    }

    /// The size `ensure_mtu_is_adequate` compares with the MTU
    /// (`__mtu_check_toobig_v4`): the largest fragment of a reassembled
    /// datagram, else the packet.
    fn mtu_size(&self, p: &Pkt) -> u32 {
        match &self.reasm {
            Some(r) => r.frag_max_size as u32,
            None => p.len as u32,
        }
    }

    /// IPv4 fragments: reassembled before IPVS sees them, as Linux does
    /// (`ip_local_deliver` for local addresses, `ip_vs_gather_frags` in
    /// `ip_vs_out` for forwarded TCP/UDP/ICMP), then processed whole.
    fn defragment(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let local = p.daddr == u32::from(self.cfg.ip) || self.services.is_vip(p.daddr);
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
            DefragResult::Failed(f) => {
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

    fn drop(&mut self, r: DropReason) -> Action {
        self.counters.drop[r as usize] += 1;
        self.counters.frames_dropped += 1;
        Action::Drop(r)
    }

    fn host(&mut self, r: HostReason) -> Action {
        self.counters.host[r as usize] += 1;
        self.counters.frames_host += 1;
        Action::ToHost(r)
    }

    /// Splits an oversized (DF clear) packet into fragments: the first
    /// replaces `frame`, the rest go to `extra`.
    fn finish_tx(&mut self, frame: &mut Vec<u8>, l3: usize, extra: &mut Vec<Vec<u8>>) -> Action {
        let tot = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]) as usize;
        if let Some(r) = &self.reasm {
            // ip_finish_output: a reassembled packet always goes through
            // ip_fragment, at the smaller of the MTU and its largest
            // fragment. Gathered by ip_vs_out, its fragments are still
            // chained and go out as they came if they fit (frag-list fast
            // path, DF cleared); reassembled for local delivery, they were
            // coalesced into one buffer: cut anew (slow path).
            let mtu = (self.cfg.mtu as usize).min(r.frag_max_size as usize);
            let hl = xmit::ihl(frame, l3);
            let same_data = r.pieces.iter().sum::<usize>() == tot - hl;
            let mut frags = if r.user == DefragUser::VsOut && same_data && xmit::fraglist_fits(hl, mtu, &r.pieces) {
                xmit::fragment_fast(frame, l3, &r.pieces)
            } else {
                xmit::fragment_slow(frame, l3, mtu, r.pmtu)
            };
            *frame = frags.remove(0);
            extra.extend(frags);
            return Action::Transmit;
        }
        if tot > self.cfg.mtu as usize {
            let mut frags = xmit::fragment(frame, l3, self.cfg.mtu as usize);
            *frame = frags.remove(0);
            extra.extend(frags);
        }
        Action::Transmit
    }

    // ---------------------------------------------------------- process

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

    /// The connection-table key of an untagged IPv4 TCP/UDP frame.
    #[inline]
    fn lookup_key(&self, frame: &[u8]) -> Option<(u8, u32, u16)> {
        if frame.len() < 38 || frame[12] != 0x08 || frame[13] != 0x00 {
            return None;
        }
        let l4 = 14 + ((frame[14] & 0x0f) as usize) * 4;
        if frame.len() < l4 + 4 {
            return None;
        }
        let proto = frame[23];
        let s = u32::from_be_bytes([frame[26], frame[27], frame[28], frame[29]]);
        let d = u32::from_be_bytes([frame[30], frame[31], frame[32], frame[33]]);
        let sp = u16::from_be_bytes([frame[l4], frame[l4 + 1]]);
        let dp = u16::from_be_bytes([frame[l4 + 2], frame[l4 + 3]]);
        // Requests are keyed on the source, replies on the destination.
        Some(if self.services.is_vip(d) { (proto, s, sp) } else { (proto, d, dp) })
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
        let a = self.process_inner(frame, extra);
        match a {
            Action::Transmit => self.counters.frames_tx += 1 + extra.len() as u64,
            Action::Held => self.counters.frames_held += 1,
            _ => {}
        }
        a
    }

    fn process_inner(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>) -> Action {
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
            proto: ip.protocol,
            ttl: ip.ttl,
            df: ip.df,
            l4: info.l4.map(|l| (l.offset, l.src_port, l.dst_port, l.tcp_flags)),
        };
        if ip.is_fragment() {
            return self.defragment(frame, extra, &p);
        }
        let local = p.daddr == u32::from(self.cfg.ip) || self.services.is_vip(p.daddr);
        match (local, p.proto) {
            (true, IPPROTO_TCP) | (true, IPPROTO_UDP) => self.ip_vs_in(frame, extra, &p),
            (true, IPPROTO_ICMP) => self.ip_vs_in_icmp(frame, extra, &p),
            (true, _) => self.host(HostReason::Local),
            (false, IPPROTO_TCP) | (false, IPPROTO_UDP) => self.ip_vs_out(frame, extra, &p),
            (false, IPPROTO_ICMP) => self.ip_vs_out_icmp(frame, extra, &p),
            (false, _) => self.host(HostReason::Forward),
        }
    }

    /// ARP: answer requests for the director's address and every VIP.
    fn arp(&mut self, frame: &mut Vec<u8>, info: &FrameInfo) -> Action {
        let l3 = info.l2_len;
        if frame.len() < l3 + 28 {
            return self.host(HostReason::Malformed);
        }
        let a = &frame[l3..];
        let ok = a[0..2] == [0, 1] && a[2..4] == [8, 0] && a[4] == 6 && a[5] == 4;
        let op = u16::from_be_bytes([a[6], a[7]]);
        let tpa = Ipv4Addr::new(a[24], a[25], a[26], a[27]);
        if !ok || op != 1 {
            return self.host(HostReason::Arp);
        }
        if tpa != self.cfg.ip && !self.services.is_vip(u32::from(tpa)) {
            return self.host(HostReason::Arp);
        }
        *frame = xmit::arp_reply(frame, l3, self.cfg.mac, tpa);
        self.counters.arp_replies += 1;
        Action::Transmit
    }

    // ------------------------------------------------------------ ip_vs_in

    /// `ip_vs_in` for TCP/UDP to a local address.
    fn ip_vs_in(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let Some((_, sport, dport, tflags)) = p.l4 else {
            return self.host(HostReason::Malformed);
        };
        let mut cp = self.conns.in_get(p.proto, p.saddr, sport, p.daddr, dport);
        let is_syn = p.proto == IPPROTO_TCP && tflags & TCP_SYN != 0;
        let mode = self.cfg.sysctl.conn_reuse_mode;
        if let (true, true, Some(id)) = (mode != 0, is_syn, cp) {
            let c = *self.conns.get(id);
            let mut resched = false;
            if self.cfg.sysctl.expire_nodest_conn && c.dest != NIL && self.services.dests[c.dest as usize].weight == 0 {
                resched = true;
            } else if is_new_conn_expected(&c, mode) {
                // With conntrack off, `uses_ct` is false: always reschedule.
                resched = true;
            }
            if resched {
                if c.n_control == 0 {
                    self.expire_now(id);
                }
                cp = None;
            }
        }
        let id = match cp {
            Some(id) => id,
            None => match self.try_to_schedule(frame, p, sport, dport, tflags) {
                Ok(id) => id,
                Err(a) => return a,
            },
        };
        self.last_conn = Some(id);
        let c = *self.conns.get(id);
        if c.dest != NIL && !self.services.dests[c.dest as usize].available {
            if self.cfg.sysctl.expire_nodest_conn {
                self.expire_now(id);
            }
            return self.drop(DropReason::DestUnavailable);
        }
        self.in_stats(&c, p.len);
        self.set_state(id, Direction::Input, tflags);
        let a = self.xmit_request(frame, extra, p, id, false);
        self.conn_put(id);
        a
    }

    /// `tcp_conn_schedule`/`udp_conn_schedule` → `ip_vs_schedule`.
    fn try_to_schedule(&mut self, frame: &mut Vec<u8>, p: &Pkt, sport: u16, dport: u16, tflags: u8) -> Result<ConnId, Action> {
        if p.proto == IPPROTO_TCP && (tflags & TCP_RST != 0 || !(self.cfg.sysctl.sloppy_tcp || tflags & TCP_SYN != 0)) {
            return Err(self.host(HostReason::NotSyn));
        }
        let Some(svc) = self.services.find(p.proto, p.daddr, dport) else {
            return Err(self.host(HostReason::Local));
        };
        if sport == crate::ipvs::service::FTPDATA {
            return Err(self.host(HostReason::FtpData));
        }
        let pkt = SchedPacket {
            saddr: Ipv4Addr::from(p.saddr),
            daddr: Ipv4Addr::from(p.daddr),
            sport,
            dport,
            proto: p.proto,
        };
        let s = self.services.service(svc);
        let (persistent, svc_port, ops) = (s.persistent(), s.vport, s.rule.ops);
        let one_packet = if ops && p.proto == IPPROTO_UDP { cf::ONE_PACKET } else { 0 };
        if persistent {
            return match self.sched_persist(svc, &pkt, one_packet) {
                Some(id) => Ok(id),
                None => Err(self.leave(frame, p, svc, dport)),
            };
        }
        if dport != svc_port {
            return Err(self.leave(frame, p, svc, dport));
        }
        let now = self.now;
        let Some(dest) = self.services.schedule(svc, &pkt, now, &mut self.rng) else {
            return Err(self.leave(frame, p, svc, dport));
        };
        let d = self.services.dest(dest);
        let dp = if d.port != 0 { d.port } else { dport };
        let mut c = Conn::new(p.proto, p.saddr, sport, p.daddr, dport, u32::from(d.addr), dp, one_packet);
        self.bind_dest(&mut c, dest);
        let id = self.insert_conn(c);
        self.conn_stats(dest, svc);
        Ok(id)
    }

    fn insert_conn(&mut self, c: Conn) -> ConnId {
        self.counters.conns_created += 1;
        self.conns.insert(c)
    }

    /// `ip_vs_sched_persist`.
    fn sched_persist(&mut self, svc: ServiceId, pkt: &SchedPacket, one_packet: u16) -> Option<ConnId> {
        let s = self.services.service(svc);
        let snet = u32::from(pkt.saddr) & s.netmask();
        let svc_port = s.vport;
        let svc_timeout = s.timeout();
        let vport = if pkt.dport == svc_port && svc_port != crate::ipvs::service::FTPPORT { pkt.dport } else { 0 };
        let vaddr = u32::from(pkt.daddr);
        let proto = pkt.proto;
        let mut ct = self.conns.ct_in_get(proto, snet, 0, vaddr, vport);
        if let Some(t) = ct {
            if !self.check_template(t) {
                ct = None;
            }
        }
        let (ct, dest) = match ct {
            Some(t) => (t, DestId(self.conns.get(t).dest)),
            None => {
                let now = self.now;
                let dest = self.services.schedule(svc, pkt, now, &mut self.rng)?;
                let d = self.services.dest(dest);
                let tdport = if pkt.dport == svc_port && svc_port != crate::ipvs::service::FTPPORT { d.port } else { 0 };
                let mut t = Conn::new(proto, snet, 0, vaddr, vport, u32::from(d.addr), tdport, cf::TEMPLATE);
                self.bind_dest(&mut t, dest);
                t.set_timeout(svc_timeout);
                        let id = self.insert_conn(t);
                self.counters.templates_created += 1;
                (id, dest)
            }
        };
        let d = self.services.dest(dest);
        let mut dport = pkt.dport;
        if dport == svc_port && d.port != 0 {
            dport = d.port;
        }
        let mut c = Conn::new(proto, u32::from(pkt.saddr), pkt.sport, vaddr, pkt.dport, u32::from(d.addr), dport, one_packet);
        self.bind_dest(&mut c, dest);
        let id = self.insert_conn(c);
        // ip_vs_control_add + ip_vs_conn_put(ct)
        self.conns.get_mut(id).control = ct.0;
        self.conns.get_mut(ct).n_control += 1;
        self.conn_put(ct);
        self.conn_stats(dest, svc);
        Some(id)
    }

    /// `ip_vs_check_template`: false (and the template invalidated) when its
    /// server is gone, deleted, or quiescent with `expire_quiescent_template`.
    fn check_template(&mut self, t: ConnId) -> bool {
        let c = *self.conns.get(t);
        let bad = if c.dest == NIL {
            true
        } else {
            let d = &self.services.dests[c.dest as usize];
            !d.available || (self.cfg.sysctl.expire_quiescent_template && d.weight == 0)
        };
        if !bad {
            return true;
        }
        if c.vport != 0xffff {
            self.conns.rekey(t, |c| {
                c.dport = 0xffff;
                c.vport = 0xffff;
                c.cport = 0;
            });
        }
        false
    }

    /// `ip_vs_leave`: no server for a new connection.
    fn leave(&mut self, frame: &mut Vec<u8>, p: &Pkt, svc: ServiceId, dport: u16) -> Action {
        let s = self.services.service(svc);
        if s.vport == crate::ipvs::service::FTPPORT && dport != crate::ipvs::service::FTPPORT {
            return self.host(HostReason::FtpData);
        }
        let src = p.daddr;
        self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_PORT_UNREACH, 0, src, DropReason::NoRealServer)
    }

    /// The request-direction transmitters (`ip_vs_nat_xmit`, `ip_vs_dr_xmit`,
    /// `ip_vs_tunnel_xmit`), each starting with `__ip_vs_get_out_rt`.
    /// `icmp` marks a related ICMP error being forwarded (no MTU check).
    fn xmit_request(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt, id: ConnId, icmp: bool) -> Action {
        let c = *self.conns.get(id);
        let fwd = c.fwd();
        let daddr = Ipv4Addr::from(c.daddr);
        if fwd == cf::LOCALNODE || daddr == self.cfg.ip {
            return self.host(HostReason::LocalRealServer);
        }
        // decrement_ttl
        if p.ttl <= 1 {
            let src = p.daddr;
            return self.icmp_send(frame, p, ICMP_TIME_EXCEEDED, 0, 0, src, DropReason::TtlExceeded);
        }
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        let mut mtu = self.cfg.mtu as u32;
        let tunnel = fwd == cf::TUNNEL;
        if tunnel {
            mtu -= 20;
            if mtu < 68 {
                return self.drop(DropReason::FragNeeded);
            }
        }
        // ensure_mtu_is_adequate
        if !(tunnel && !self.cfg.sysctl.pmtu_disc) && p.df && self.mtu_size(p) > mtu && !icmp {
            let src = p.daddr;
            return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu, src, DropReason::FragNeeded);
        }
        match fwd {
            cf::MASQ => {
                if icmp {
                    xmit::nat_icmp(frame, p.l3, false, daddr, c.dport);
                } else {
                    xmit::nat_rewrite(frame, p.l3, true, daddr, c.dport);
                }
            }
            cf::DROUTE => xmit::ip_send_check(frame, p.l3),
            cf::TUNNEL => {
                // The kernel draws a non-DF outer ID from its randomised
                // generator; the model copies the inner ID (documented
                // deviation: deterministic, and the hardware can do it).
                let inner_id = u16::from_be_bytes([frame[p.l3 + 4], frame[p.l3 + 5]]);
                xmit::ipip_encap(frame, p.l3, self.cfg.ip, daddr, self.cfg.sysctl.pmtu_disc, inner_id);
            }
            _ => return self.host(HostReason::LocalRealServer),
        }
        let mac = self.dest_mac(c.dest, daddr);
        xmit::set_macs(frame, mac, self.cfg.mac);
        self.finish_tx(frame, p.l3, extra)
    }

    /// The next-hop MAC of real server `dest` (address `addr`).
    #[inline]
    fn dest_mac(&mut self, dest: u32, addr: Ipv4Addr) -> MacAddr {
        let i = dest as usize;
        if i >= self.dest_mac.len() {
            let n = self.services.dests.len().max(i + 1);
            let macs: Vec<MacAddr> =
                (self.dest_mac.len()..n).map(|j| self.cfg.next_hop_mac(self.services.dests[j].addr)).collect();
            self.dest_mac.extend(macs);
        }
        let m = self.dest_mac[i];
        debug_assert_eq!(m, self.cfg.next_hop_mac(addr));
        m
    }

    // ----------------------------------------------------------- ip_vs_out

    /// `ip_forward` + `ip_vs_out` for TCP/UDP not addressed to us: NAT
    /// replies from real servers.
    fn ip_vs_out(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let Some((_, sport, dport, tflags)) = p.l4 else {
            return self.host(HostReason::Forward);
        };
        let Some(id) = self.conns.out_get(p.proto, p.saddr, sport, p.daddr, dport) else {
            if self.cfg.sysctl.nat_icmp_send && self.has_real_service(p.proto, p.saddr, sport) && !(p.proto == IPPROTO_TCP && tflags & TCP_RST != 0) {
                let src = u32::from(self.cfg.ip);
                return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_PORT_UNREACH, 0, src, DropReason::NatIcmpSend);
            }
            return self.host(HostReason::Forward);
        };
        let c = *self.conns.get(id);
        if c.fwd() != cf::MASQ {
            return self.host(HostReason::Forward);
        }
        self.last_conn = Some(id);
        // ip_forward: TTL, MTU, decrement.
        if p.ttl <= 1 {
            let src = u32::from(self.cfg.ip);
            return self.icmp_send(frame, p, ICMP_TIME_EXCEEDED, 0, 0, src, DropReason::TtlExceeded);
        }
        if p.df && self.mtu_size(p) > self.cfg.mtu as u32 {
            let src = u32::from(self.cfg.ip);
            let mtu = self.cfg.mtu as u32;
            return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu, src, DropReason::FragNeeded);
        }
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        // handle_response
        xmit::nat_rewrite(frame, p.l3, false, Ipv4Addr::from(c.vaddr), c.vport);
        self.out_stats(&c, p.len as u64);
        self.set_state(id, Direction::Output, tflags);
        self.conn_put(id);
        let mac = self.cfg.next_hop_mac(Ipv4Addr::from(c.caddr));
        xmit::set_macs(frame, mac, self.cfg.mac);
        self.finish_tx(frame, p.l3, extra)
    }

    /// `ip_vs_has_real_service`: a NAT real server with this address/port.
    fn has_real_service(&self, proto: u8, addr: u32, port: u16) -> bool {
        self.services.live_services().any(|s| {
            s.proto.number() == proto
                && s.order.iter().any(|&d| {
                    let d = &self.services.dests[d.index()];
                    u32::from(d.addr) == addr && d.port == port && d.fwd == FwdMethod::Masq
                })
        })
    }

    // ------------------------------------------------------------- ICMP

    /// The embedded (quoted) packet of an ICMP error at `frame[p.l3..]`:
    /// offset of its IP header, its protocol, and its ports if present.
    fn icmp_inner(frame: &[u8], p: &Pkt) -> Option<(usize, u8, u32, u32, Option<(u16, u16)>, u16)> {
        let ic = p.l3 + p.ihl;
        let end = (p.l3 + p.len as usize).min(frame.len());
        let cl3 = ic + 8;
        if cl3 + 20 > end || frame[cl3] >> 4 != 4 {
            return None;
        }
        let chl = xmit::ihl(frame, cl3);
        if chl < 20 || cl3 + chl > end {
            return None;
        }
        let cproto = frame[cl3 + 9];
        let frag = u16::from_be_bytes([frame[cl3 + 6], frame[cl3 + 7]]);
        let saddr = u32::from_be_bytes(frame[cl3 + 12..cl3 + 16].try_into().ok()?);
        let daddr = u32::from_be_bytes(frame[cl3 + 16..cl3 + 20].try_into().ok()?);
        let ports = if cl3 + chl + 4 <= end && frag & xmit::IP_OFFSET == 0 {
            Some((
                u16::from_be_bytes([frame[cl3 + chl], frame[cl3 + chl + 1]]),
                u16::from_be_bytes([frame[cl3 + chl + 2], frame[cl3 + chl + 3]]),
            ))
        } else {
            None
        };
        Some((cl3, cproto, saddr, daddr, ports, frag))
    }

    fn icmp_checksum_ok(frame: &[u8], p: &Pkt) -> bool {
        let ic = p.l3 + p.ihl;
        let end = (p.l3 + p.len as usize).min(frame.len());
        ic <= end && wire::checksum::checksum(&frame[ic..end]) == 0
    }

    /// `ip_vs_in_icmp`: an ICMP error to a local address about one of our
    /// connections (client → VIP direction), or about our IPIP packets.
    fn ip_vs_in_icmp(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let ic = p.l3 + p.ihl;
        if ic + 8 > (p.l3 + p.len as usize).min(frame.len()) {
            return self.host(HostReason::Local);
        }
        let typ = frame[ic];
        if typ != ICMP_DEST_UNREACH && typ != ICMP_SOURCE_QUENCH && typ != ICMP_TIME_EXCEEDED {
            return self.host(HostReason::Local);
        }
        let Some((cl3, cproto, csaddr, cdaddr, cports, cfrag)) = Self::icmp_inner(frame, p) else {
            return self.host(HostReason::Local);
        };
        // IPIP: the error is about a tunnel packet we sent.
        if cproto == IPPROTO_IPIP {
            if cfrag & xmit::IP_OFFSET != 0 {
                return self.host(HostReason::Local);
            }
            let inner_p = Pkt { l3: cl3, ihl: xmit::ihl(frame, cl3), ..*p };
            let Some((il3, iproto, isaddr, idaddr, iports, ifrag)) = Self::icmp_inner_at(frame, &inner_p) else {
                return self.host(HostReason::Local);
            };
            if iproto != IPPROTO_TCP && iproto != IPPROTO_UDP {
                return self.host(HostReason::Local);
            }
            let Some((isport, idport)) = iports else { return self.host(HostReason::Local) };
            let Some(id) = self.conns.in_get(iproto, isaddr, isport, idaddr, idport) else {
                return self.host(HostReason::Local);
            };
            if !Self::icmp_checksum_ok(frame, p) {
                return self.drop(DropReason::BadIcmpChecksum);
            }
            let code = frame[ic + 1];
            let mut info = u32::from_be_bytes(frame[ic + 4..ic + 8].try_into().unwrap_or([0; 4]));
            if typ == ICMP_DEST_UNREACH && code == ICMP_FRAG_NEEDED {
                let reported = u16::from_be_bytes([frame[ic + 6], frame[ic + 7]]) as u32;
                if ifrag & xmit::IP_DF == 0 {
                    return self.drop(DropReason::TunnelIcmp);
                }
                // Route MTU after ipv4_update_pmtu (min PMTU 552), minus the tunnel header.
                let mut mtu = (self.cfg.mtu as u32).min(reported.max(552));
                if mtu > 68 + 20 {
                    mtu -= 20;
                }
                info = mtu;
            }
            // icmp_send about the inner packet, to the client, from the VIP.
            let end = (p.l3 + p.len as usize).min(frame.len());
            let inner_len = (end - il3) as u64;
            let c = *self.conns.get(id);
            self.out_stats(&c, inner_len);
            let ip = Pkt {
                l3: il3,
                ihl: xmit::ihl(frame, il3),
                len: u16::from_be_bytes([frame[il3 + 2], frame[il3 + 3]]),
                saddr: isaddr,
                daddr: idaddr,
                proto: iproto,
                ttl: frame[il3 + 8],
                df: ifrag & xmit::IP_DF != 0,
                l4: None,
            };
            // Quote only what the error quoted.
            let mut inner: Vec<u8> = frame[..p.l3].to_vec();
            inner.extend_from_slice(&frame[il3..end]);
            let ip = Pkt { l3: p.l3, ..ip };
            let a = self.icmp_send(&mut inner, &ip, typ, code, info, idaddr, DropReason::TunnelIcmp);
            if a == Action::Transmit {
                *frame = inner;
            }
            return a;
        }
        if cproto != IPPROTO_TCP && cproto != IPPROTO_UDP {
            return self.host(HostReason::Local);
        }
        let Some((csport, cdport)) = cports else { return self.host(HostReason::Local) };
        // The quoted packet went VIP → client: look the conn up reversed.
        let Some(id) = self.conns.in_get(cproto, cdaddr, cdport, csaddr, csport) else {
            return self.host(HostReason::Local);
        };
        if !Self::icmp_checksum_ok(frame, p) {
            return self.drop(DropReason::BadIcmpChecksum);
        }
        self.last_conn = Some(id);
        let c = *self.conns.get(id);
        self.in_stats(&c, p.len);
        self.xmit_request(frame, extra, p, id, true)
    }

    fn icmp_inner_at(frame: &[u8], p: &Pkt) -> Option<(usize, u8, u32, u32, Option<(u16, u16)>, u16)> {
        // `p.l3` is the tunnel header quoted in an ICMP error; the client's
        // packet follows it directly.
        let il3 = p.l3 + p.ihl;
        let end = frame.len();
        if il3 + 20 > end || frame[il3] >> 4 != 4 {
            return None;
        }
        let hl = xmit::ihl(frame, il3);
        if hl < 20 || il3 + hl > end {
            return None;
        }
        let proto = frame[il3 + 9];
        let frag = u16::from_be_bytes([frame[il3 + 6], frame[il3 + 7]]);
        let saddr = u32::from_be_bytes(frame[il3 + 12..il3 + 16].try_into().ok()?);
        let daddr = u32::from_be_bytes(frame[il3 + 16..il3 + 20].try_into().ok()?);
        let ports = if il3 + hl + 4 <= end && frag & xmit::IP_OFFSET == 0 {
            Some((
                u16::from_be_bytes([frame[il3 + hl], frame[il3 + hl + 1]]),
                u16::from_be_bytes([frame[il3 + hl + 2], frame[il3 + hl + 3]]),
            ))
        } else {
            None
        };
        Some((il3, proto, saddr, daddr, ports, frag))
    }

    /// `ip_forward` + `ip_vs_out_icmp`: an ICMP error from a real server
    /// about a NAT connection, on its way to the client.
    fn ip_vs_out_icmp(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let ic = p.l3 + p.ihl;
        if ic + 8 > (p.l3 + p.len as usize).min(frame.len()) {
            return self.host(HostReason::Forward);
        }
        let typ = frame[ic];
        if typ != ICMP_DEST_UNREACH && typ != ICMP_SOURCE_QUENCH && typ != ICMP_TIME_EXCEEDED {
            return self.host(HostReason::Forward);
        }
        let Some((_, cproto, csaddr, cdaddr, cports, _)) = Self::icmp_inner(frame, p) else {
            return self.host(HostReason::Forward);
        };
        if cproto != IPPROTO_TCP && cproto != IPPROTO_UDP {
            return self.host(HostReason::Forward);
        }
        let Some((csport, cdport)) = cports else { return self.host(HostReason::Forward) };
        // The quoted packet went client → real server: reversed out lookup.
        let Some(id) = self.conns.out_get(cproto, cdaddr, cdport, csaddr, csport) else {
            return self.host(HostReason::Forward);
        };
        let c = *self.conns.get(id);
        if c.fwd() != cf::MASQ {
            return self.host(HostReason::Forward);
        }
        // ip_forward first: an ICMP error whose TTL runs out is dropped
        // silently (no error about an error).
        if p.ttl <= 1 {
            return self.drop(DropReason::TtlExceeded);
        }
        if !Self::icmp_checksum_ok(frame, p) {
            return self.drop(DropReason::BadIcmpChecksum);
        }
        self.last_conn = Some(id);
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        xmit::nat_icmp(frame, p.l3, true, Ipv4Addr::from(c.vaddr), c.vport);
        self.out_stats(&c, p.len as u64);
        let mac = self.cfg.next_hop_mac(Ipv4Addr::from(c.caddr));
        xmit::set_macs(frame, mac, self.cfg.mac);
        self.finish_tx(frame, p.l3, extra)
    }

    // ------------------------------------------------------ rule changes

    /// Applies `ipvsadm -a` while traffic flows.
    pub fn add_dest(&mut self, key: &ServiceKey, d: &crate::rules::DestRule) -> Result<DestId, DirectorError> {
        let name = service_name(key);
        self.check_neighbor(d.addr, &name)?;
        self.services.add_dest(key, d).map_err(|error| DirectorError::Rule { service: name, error })
    }

    /// Applies `ipvsadm -A`.
    pub fn add_service(&mut self, rule: &crate::rules::ServiceRule) -> Result<ServiceId, DirectorError> {
        let name = service_name(&rule.key);
        for r in &rule.dests {
            self.check_neighbor(r.addr, &name)?;
        }
        let now = self.now;
        let id = self
            .services
            .add_service(rule, now)
            .map_err(|error| DirectorError::Rule { service: name.clone(), error })?;
        for r in &rule.dests {
            self.services.add_dest(&rule.key, r).map_err(|error| DirectorError::Rule { service: name.clone(), error })?;
        }
        Ok(id)
    }

    /// Applies `ipvsadm -E`.
    pub fn edit_service(&mut self, rule: &crate::rules::ServiceRule) -> Result<(), DirectorError> {
        let now = self.now;
        self.services.edit_service(rule, now).map_err(|error| DirectorError::Rule { service: service_name(&rule.key), error })
    }

    /// Applies `ipvsadm -e`.
    pub fn edit_dest(&mut self, key: &ServiceKey, d: &crate::rules::DestRule) -> Result<(), DirectorError> {
        self.services.edit_dest(key, d).map_err(|error| DirectorError::Rule { service: service_name(key), error })
    }

    /// Applies `ipvsadm -C`.
    pub fn clear(&mut self) {
        let now = self.now;
        self.services.clear(now);
        if self.cfg.sysctl.expire_nodest_conn {
            self.nodest_flush = true;
        }
    }

    /// Applies `ipvsadm -d`.
    pub fn del_dest(&mut self, key: &ServiceKey, addr: Ipv4Addr, port: u16) -> Result<(), DirectorError> {
        let now = self.now;
        self.services
            .del_dest(key, addr, port, now)
            .map_err(|error| DirectorError::Rule { service: service_name(key), error })?;
        if self.cfg.sysctl.expire_nodest_conn {
            self.nodest_flush = true;
        }
        Ok(())
    }

    /// Applies `ipvsadm -D`.
    pub fn del_service(&mut self, key: &ServiceKey) -> Result<(), DirectorError> {
        let now = self.now;
        self.services.del_service(key, now).map_err(|error| DirectorError::Rule { service: service_name(key), error })?;
        if self.cfg.sysctl.expire_nodest_conn {
            self.nodest_flush = true;
        }
        Ok(())
    }

    /// The protocol of a service key, for callers that print it.
    pub fn proto_of(key: &ServiceKey) -> Option<Protocol> {
        key.as_ipv4().map(|(p, _, _)| p)
    }
}

/// `is_new_conn_expected`: a SYN may replace an uncontrolled TCP conn in
/// TIME_WAIT or CLOSE (or FIN_WAIT without output, with `conn_reuse_mode & 2`).
fn is_new_conn_expected(c: &Conn, mode: u8) -> bool {
    if c.control != NIL {
        return false;
    }
    if c.proto != IPPROTO_TCP {
        return false;
    }
    c.state == tcp::state::TIME_WAIT
        || c.state == tcp::state::CLOSE
        || (mode & 2 != 0 && c.state == tcp::state::FIN_WAIT && c.flags & cf::NOOUTPUT != 0)
}
