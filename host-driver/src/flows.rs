//! Offloading connections to the data plane: which flow and action
//! entries a connection needs, placing them in the cuckoo table, keeping
//! them in step with the connection's state, reading their activity back
//! for expiry, and crediting the hardware's counters to IPVS statistics.
//!
//! IPv4 connections have IPv4 flow entries (one slot); IPv6 connections,
//! on a card that forwards IPv6 ([`HwParams::ipv6`]), IPv6 entries (an
//! aligned slot pair) with IPv6 actions. Both go through the same paths,
//! keyed by [`AnyFlowKey`]. A tunnel to an IPv6 real server (ip6ip6, or
//! IPv4 in IPv6 for an IPv4 service) has an IPv6 TUNNEL action on a card
//! that builds IPv6 outer headers ([`CardCaps::tun6`]).

use lvsnic_model::conn::tcp::{self, Direction};
use lvsnic_model::conn::{flags as cf, Conn, ConnId, AF_INET6, NIL};
use lvsnic_model::director::{Director, Offload};
use lvsnic_model::hw::placement::{FlowPlacer, PlaceError, Placed, SlotWrite};
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::tables::{ActionBits, ActionEntry, ActionOp, Flow6Entry, FlowEntry, FlowKey, FlowKey6};
use lvsnic_model::hw::{Csr, HwParams};
use lvsnic_model::ipvs::DestId;
use lvsnic_model::time::{Time, SEC};
use lvsnic_model::wire::TCP_ACK;
use lvsnic_model::fasthash::FastMap as HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The key of a flow entry of either family: an IPv4 entry's (one slot)
/// or an IPv6 entry's (an aligned slot pair). The placer's calls of the
/// two families behind one set of methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnyFlowKey {
    /// An IPv4 entry's key.
    V4(FlowKey),
    /// An IPv6 entry's key.
    V6(FlowKey6),
}

impl AnyFlowKey {
    /// The key of packets from `(saddr, sport)` to `(daddr, dport)`;
    /// `None` when the two addresses' families differ.
    pub fn new(proto: u8, (saddr, sport): (IpAddr, u16), (daddr, dport): (IpAddr, u16)) -> Option<Self> {
        match (saddr, daddr) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Some(AnyFlowKey::V4(FlowKey { proto, saddr: s.into(), daddr: d.into(), sport, dport })),
            (IpAddr::V6(saddr), IpAddr::V6(daddr)) => Some(AnyFlowKey::V6(FlowKey6 { proto, saddr, daddr, sport, dport })),
            _ => None,
        }
    }

    /// The source address, if IPv4 (the next hops the host learns are
    /// IPv4 ones).
    fn saddr_v4(&self) -> Option<Ipv4Addr> {
        match self {
            AnyFlowKey::V4(k) => Some(Ipv4Addr::from(k.saddr)),
            AnyFlowKey::V6(_) => None,
        }
    }

    fn insert(&self, p: &mut FlowPlacer, action: u16, ack_fast: bool) -> Result<Vec<SlotWrite>, PlaceError> {
        match *self {
            AnyFlowKey::V4(k) => p.insert(FlowEntry::new(k, action, ack_fast)),
            AnyFlowKey::V6(k) => p.insert6(Flow6Entry::new(k, action, ack_fast)),
        }
    }

    fn update(&self, p: &mut FlowPlacer, action: u16, ack_fast: bool) -> Option<SlotWrite> {
        match *self {
            AnyFlowKey::V4(k) => p.update(FlowEntry::new(k, action, ack_fast)),
            AnyFlowKey::V6(k) => p.update6(Flow6Entry::new(k, action, ack_fast)),
        }
    }

    fn remove(&self, p: &mut FlowPlacer) -> Option<SlotWrite> {
        match self {
            AnyFlowKey::V4(k) => p.remove(k),
            AnyFlowKey::V6(k) => p.remove6(k),
        }
    }

    /// The slot whose `last_hit` the card sets on a hit (an IPv6 entry's
    /// head).
    fn slot_of(&self, p: &FlowPlacer) -> Option<usize> {
        match self {
            AnyFlowKey::V4(k) => p.slot_of(k),
            AnyFlowKey::V6(k) => p.slot_of6(k),
        }
    }

    /// The slots the key may take: an IPv4 key's 8 candidate slots, an
    /// IPv6 key's 4 candidate pairs (both slots of each).
    fn candidates(&self, p: &FlowPlacer) -> [usize; 8] {
        match self {
            AnyFlowKey::V4(k) => p.candidates(k),
            AnyFlowKey::V6(k) => {
                let c = p.candidates6(k);
                std::array::from_fn(|i| c[i / 2] + i % 2)
            }
        }
    }

    /// The key of the entry occupying `slot`, of either family.
    fn at(p: &FlowPlacer, slot: usize) -> Option<Self> {
        p.key_at(slot).map(AnyFlowKey::V4).or_else(|| p.key6_at(slot).map(AnyFlowKey::V6))
    }

    /// The key of the entry a table write installs.
    fn of(e: &Placed) -> Self {
        match e {
            Placed::V4(e) => AnyFlowKey::V4(e.key()),
            Placed::V6(e) => AnyFlowKey::V6(e.key()),
        }
    }
}

/// The flows one connection needs in hardware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// The request direction's flow key, action and whether it is offloaded.
    pub req: (AnyFlowKey, ActionEntry, bool),
    /// The reply direction (NAT), likewise.
    pub rep: Option<(AnyFlowKey, ActionEntry, bool)>,
    /// The real server.
    pub dest: DestId,
}

/// Whether an ACK-only TCP segment leaves the state unchanged.
fn ack_stable(c: &Conn, dir: Direction, secure_tcp: bool) -> bool {
    if c.proto != 6 {
        return true;
    }
    let tr = tcp::next_state(c.state, dir, c.flags & cf::NOOUTPUT != 0, TCP_ACK, secure_tcp);
    tr.new_state == c.state && !tr.clear_nooutput
}

/// What the card can forward, from its `CAPS1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CardCaps {
    /// `CAPS1.ipv6`: the card forwards IPv6 frames ([`HwParams::ipv6`]).
    pub ipv6: bool,
    /// `CAPS1.tun6`: the card builds IPv6 outer headers for TUNNEL
    /// actions with an IPv6 address (ip6ip6 and IPv4 in IPv6).
    pub tun6: bool,
}

impl CardCaps {
    /// The capabilities a card's `CAPS1` register reports.
    pub fn from_caps1(caps1: u32) -> Self {
        CardCaps { ipv6: caps1 & lvsnic_model::hw::regs_gen::CAPS1_IPV6_MASK != 0, tun6: HwParams::caps1_tun6(caps1) }
    }

    /// The capabilities of a core elaborated with `params` (its `CAPS1`).
    pub fn of(params: HwParams) -> Self {
        Self::from_caps1(params.caps().1)
    }
}

/// The hardware flows connection `id` needs, or None if it must stay in
/// software (templates, one-packet, local or unavailable servers, a VIP
/// another director owns; IPv6 connections on a card without IPv6
/// ([`CardCaps::ipv6`]); IPv6 in IPv4 tunnels; tunnels to an IPv6 real
/// server on a card without [`CardCaps::tun6`], without `[director] ip6`,
/// or with a link MTU less 40 under 1280).
pub fn wanted(d: &Director, id: ConnId, card: CardCaps) -> Option<Wanted> {
    let c = d.conns.get(id);
    if c.is_template() || c.flags & cf::ONE_PACKET != 0 || c.dest == NIL || !(c.proto == 6 || c.proto == 17) {
        return None;
    }
    let v6 = c.af == AF_INET6;
    let d6 = c.daf == AF_INET6;
    if v6 && !card.ipv6 {
        // A card built without IPv6 hands every IPv6 frame up.
        return None;
    }
    if c.af != c.daf && !(d6 && c.fwd() == cf::TUNNEL) {
        // The card does not rewrite across families (its frames go to the
        // host as ACTION_HOST), nor build IPv6 in IPv4 (the kernel draws
        // the outer ID at random): only IPv4 in IPv6 crosses.
        return None;
    }
    let owned = if v6 { d.vip_owned(d.conns.addrs(id).vaddr) } else { d.owns_vip(c.vaddr) };
    if !owned {
        // VRRP backup for the VIP (IPv4 or IPv6): its packets go to the
        // host stack, as on Linux once the address is gone; replies from
        // the real servers are still rewritten, in software (ip_vs_out
        // needs no local VIP).
        return None;
    }
    let dest = DestId(c.dest);
    let r = d.services.dest(dest);
    if !r.available {
        return None;
    }
    let a = d.conns.addrs(id);
    if a.daddr == IpAddr::V4(d.cfg.ip) || d.cfg.ip6.is_some_and(|ip6| a.daddr == IpAddr::V6(ip6)) {
        return None;
    }
    let secure = d.cfg.sysctl.secure_tcp;
    let req_key = AnyFlowKey::new(c.proto, (a.caddr, c.cport), (a.vaddr, c.vport))?;
    // A real server whose next hop has no MAC yet stays in software: its
    // frames are held by the host until the MAC is known.
    let mac = next_hop(d, a.daddr, true)?;
    let (req_action, rep) = match c.fwd() {
        cf::MASQ => {
            // Replies go to the client's next hop (the gateway, mostly):
            // while its MAC is not known the connection stays in software.
            let client_mac = next_hop(d, a.caddr, false)?;
            let a_req = ActionEntry {
                op: ActionOp::NatDnat,
                host: false,
                mac,
                addr: a.daddr,
                port: c.dport,
                l4_delta: nat_delta(a.vaddr, c.vport, a.daddr, c.dport)?,
            };
            let rk = AnyFlowKey::new(c.proto, (a.daddr, c.dport), (a.caddr, c.cport))?;
            let a_rep = ActionEntry {
                op: ActionOp::NatSnat,
                host: false,
                mac: client_mac,
                addr: a.vaddr,
                port: c.vport,
                l4_delta: nat_delta(a.daddr, c.dport, a.vaddr, c.vport)?,
            };
            (a_req, Some((rk, a_rep, ack_stable(c, Direction::Output, secure))))
        }
        cf::DROUTE => {
            // The egress ignores a ROUTE action's address; its `ipv6` bit is
            // the frame's family (an IPv6 frame on an IPv4 action goes up).
            let addr = if v6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
            (ActionEntry { op: ActionOp::Route, host: false, mac, addr, port: 0, l4_delta: 0 }, None)
        }
        // IPIP (both ends IPv4: IPv6 in IPv4 left above).
        cf::TUNNEL if !d6 => (ActionEntry { op: ActionOp::Tunnel, host: false, mac, addr: a.daddr, port: 0, l4_delta: 0 }, None),
        // ip6ip6 and IPv4 in IPv6: the card's IPv6 outer header comes from
        // its IP6 registers (`[director] ip6`, written by the slow path);
        // without the address the golden director leaves the packets to
        // the host stack, and under a tunnel MTU of 1280 it drops them
        // (the kernel refuses the route): both stay in software.
        cf::TUNNEL if card.tun6 && d.cfg.ip6.is_some() && tunnel6_mtu_ok(d.cfg.mtu) => {
            (ActionEntry { op: ActionOp::Tunnel, host: false, mac, addr: a.daddr, port: 0, l4_delta: 0 }, None)
        }
        _ => return None,
    };
    Some(Wanted { req: (req_key, req_action, ack_stable(c, Direction::Input, secure)), rep, dest })
}

/// Whether a link of `mtu` bytes leaves an IPv6 tunnel the 1280 bytes
/// IPv6 needs once the 40-byte outer header is taken off.
fn tunnel6_mtu_ok(mtu: u16) -> bool {
    usize::from(mtu).saturating_sub(lvsnic_model::wire::ipv6::HEADER_LEN) >= lvsnic_model::wire::ipv6::MIN_MTU
}

/// The next-hop MAC the director sends with towards `ip`: a real server's
/// (`server`) or a client's.
fn next_hop(d: &Director, ip: IpAddr, server: bool) -> Option<lvsnic_model::wire::MacAddr> {
    match ip {
        IpAddr::V4(ip) if server => d.real_server_mac(ip),
        IpAddr::V4(ip) => d.next_hop_mac(ip),
        IpAddr::V6(ip) if server => d.v6_real_server_mac(&ip),
        IpAddr::V6(ip) => d.v6_next_hop(&ip),
    }
}

/// The action's `l4_delta` for a NAT rewrite of `(old, old_port)` into
/// `(new, new_port)`, of either family (`None` across families).
fn nat_delta(old: IpAddr, old_port: u16, new: IpAddr, new_port: u16) -> Option<u16> {
    match (old, new) {
        (IpAddr::V4(o), IpAddr::V4(n)) => Some(ActionEntry::nat_delta(o.into(), old_port, n.into(), new_port)),
        (IpAddr::V6(o), IpAddr::V6(n)) => Some(ActionEntry::nat_delta6(o, old_port, n, new_port)),
        _ => None,
    }
}

/// The request direction's flow key of connection `id` (`None` only for
/// an entry whose client and virtual addresses differ in family, which
/// the table never holds).
fn request_key(d: &Director, id: ConnId) -> Option<AnyFlowKey> {
    let c = d.conns.get(id);
    let a = d.conns.addrs(id);
    AnyFlowKey::new(c.proto, (a.caddr, c.cport), (a.vaddr, c.vport))
}

/// The reply direction's flow key of NAT connection `id`.
fn reply_key(d: &Director, id: ConnId) -> Option<AnyFlowKey> {
    let c = d.conns.get(id);
    let a = d.conns.addrs(id);
    AnyFlowKey::new(c.proto, (a.daddr, c.dport), (a.caddr, c.cport))
}

/// How long an offloaded connection's flows must have forwarded nothing
/// before a connection that cannot be placed may evict them (the default
/// of [`FlowManager::evict_idle`]).
pub const EVICT_IDLE: Time = SEC;

/// What the host keeps about a connection that is not in the card: the
/// evidence that it is not a spoofed one-packet flow, and how long it is
/// known not to fit.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// The connection's request key: a reused [`ConnId`] with another key
    /// is another connection.
    key: Option<AnyFlowKey>,
    /// May be offloaded (UDP: a reply seen for NAT, a second client
    /// packet for DR/TUN; any protocol: it was offloaded before).
    ready: bool,
    /// Client packets seen (UDP).
    inputs: u8,
    /// Placement failed: no new search before this time unless a flow
    /// slot is freed (0: no mark).
    retry_at: Time,
}

/// How an installation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Install {
    Done,
    /// A newer connection the director's lookup finds holds a key.
    Shadowed,
    /// The flow or action table had no place.
    Full,
}

#[derive(Clone, Copy, Debug)]
struct Installed {
    wanted: Wanted,
    /// When the flows were installed (an entry never hit is idle since).
    installed_at: Time,
    req_action: u16,
    rep_action: Option<u16>,
    /// Latest `last_hit` seen for the connection's flows (0: none).
    last_use: Time,
    /// Where the connection is in its request action's
    /// [`FlowManager::members`].
    member_at: u32,
}

#[derive(Clone, Copy, Debug)]
struct ActionSlot {
    key: (DestId, bool, ActionBits),
    refs: u32,
    /// Counters already credited to the statistics.
    credited: (u64, u64),
    /// The entry's `host` bit is set: its real server was deleted, its
    /// connections wait in [`FlowManager::members`] for removal, and no
    /// new flow may point here.
    diverted: bool,
}

/// Hardware flow state of the host.
pub struct FlowManager {
    placer: FlowPlacer,
    conns: HashMap<ConnId, Installed>,
    by_key: HashMap<AnyFlowKey, ConnId>,
    actions: Vec<Option<ActionSlot>>,
    action_index: HashMap<(DestId, bool, ActionBits), u16>,
    free_actions: Vec<u16>,
    /// Activity saved from slots rewritten by cuckoo moves.
    moved_hits: HashMap<AnyFlowKey, Time>,
    /// The connections whose request action is each action (by index),
    /// in no particular order.
    members: Vec<Vec<ConnId>>,
    /// Diverted actions (their real server was deleted) whose connections
    /// are still installed: their frames already go to the host; their
    /// flow entries leave the table a few at a time
    /// ([`FlowManager::remove_diverted`]) so that a `-d` or `-C` costs one
    /// action write per real server where forwarding waits, not one table
    /// write per flow, nor a scan of the flows.
    diverted: std::collections::VecDeque<u16>,
    /// Offload bookkeeping of connections not in the card.
    pending: HashMap<ConnId, Pending>,
    /// Flow slots freed since the last failed placement: each lets one
    /// connection marked unplaceable search again before its mark ends.
    free_credits: u64,
    /// When the last failed placement may succeed by eviction (the
    /// mark's end).
    retry_at: Time,
    /// Placements that failed: no place, and no idle entry to evict (the
    /// connection stays in software, marked unplaceable).
    pub table_full: u64,
    /// Placement searches run (each a cuckoo search of up to
    /// `MAX_BFS_NODES` slots).
    pub placements: u64,
    /// Syncs of a connection marked unplaceable that searched nothing.
    pub placement_skipped: u64,
    /// Offloaded connections evicted (idle for [`evict_idle`](Self::evict_idle))
    /// for a connection that did not fit.
    pub evicted: u64,
    /// Syncs of connections not offloaded because they may still be
    /// spoofed (TCP before ESTABLISHED, UDP without a reply or a second
    /// packet).
    pub deferred: u64,
    /// Idle time after which an offloaded connection may be evicted.
    pub evict_idle: Time,
    /// Frames the hardware forwarded, credited so far (`CNT_FWD`).
    pub forwarded_credited: u64,
    /// Slots of the flow table.
    slots: usize,
    /// What the card forwards (`CAPS1`): IPv6 connections (`ipv6`) and
    /// tunnels to IPv6 real servers (`tun6`) are offloaded too.
    card: CardCaps,
}

impl FlowManager {
    /// No flows, for tables of `params`.
    pub fn new(params: HwParams) -> Self {
        let n = params.actions();
        // Sized for a full table at once (a connection has one flow or
        // more): growing a map rehashes every entry at once, in the middle
        // of an install, with the loop waiting.
        let slots = params.flow_slots();
        FlowManager {
            placer: FlowPlacer::new(params),
            conns: HashMap::with_capacity_and_hasher(slots, Default::default()),
            by_key: HashMap::with_capacity_and_hasher(slots, Default::default()),
            actions: vec![None; n],
            members: vec![Vec::new(); n],
            action_index: HashMap::default(),
            // Index 0 stays unused so an all-zero entry never points at a live action.
            free_actions: (1..n as u16).rev().collect(),
            moved_hits: HashMap::default(),
            diverted: Default::default(),
            pending: HashMap::default(),
            free_credits: 0,
            retry_at: 0,
            table_full: 0,
            placements: 0,
            placement_skipped: 0,
            evicted: 0,
            deferred: 0,
            evict_idle: EVICT_IDLE,
            forwarded_credited: 0,
            slots: params.flow_slots(),
            card: CardCaps::of(params),
        }
    }

    /// Takes the card's capabilities from the `CAPS1` it reports (a core
    /// built before `CAPS1.tun6` reports `ipv6` without it): what
    /// [`wanted`] offloads from now on.
    pub fn set_card_caps(&mut self, card: CardCaps) {
        self.card = card;
    }

    /// What the card forwards, as [`wanted`] uses it.
    pub fn card_caps(&self) -> CardCaps {
        self.card
    }

    /// The hardware flows connection `id` needs on this card ([`wanted`]).
    pub fn wanted(&self, d: &Director, id: ConnId) -> Option<Wanted> {
        wanted(d, id, self.card)
    }

    /// Flow-table slots in use (an IPv6 entry takes two) and the table's
    /// slots (for a budget that stops offloading before installs start
    /// failing).
    pub fn table_use(&self) -> (usize, usize) {
        (self.placer.slots_used(), self.slots)
    }

    /// Action-table entries in use and the entries there are to use
    /// (entry 0 never is).
    pub fn action_use(&self) -> (usize, usize) {
        let usable = self.actions.len().saturating_sub(1);
        (usable - self.free_actions.len(), usable)
    }

    /// Offloaded connections.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether no connection is offloaded.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    fn write_slot(hw: &mut dyn Csr, w: &SlotWrite) {
        write_table(hw, FLOW_STATUS, &w.register_writes());
    }

    fn read_hit(hw: &mut dyn Csr, index: usize) -> Time {
        hw.write32(FLOW_INDEX, index as u32);
        command(hw, FLOW_STATUS, FLOW_CMD, CMD_READ);
        wait_idle(hw, FLOW_STATUS);
        let lo = hw.read32(FLOW_HIT_LO) as u64;
        let hi = hw.read32(FLOW_HIT_HI) as u64;
        hi << 32 | lo
    }

    fn read_action_counters(hw: &mut dyn Csr, index: u16) -> (u64, u64) {
        hw.write32(ACT_INDEX, index as u32);
        command(hw, ACT_STATUS, ACT_CMD, CMD_READ);
        wait_idle(hw, ACT_STATUS);
        let r = |hw: &mut dyn Csr, lo: u32, hi: u32| {
            let lo = hw.read32(lo) as u64;
            (hw.read32(hi) as u64) << 32 | lo
        };
        (r(hw, ACT_PKTS_LO, ACT_PKTS_HI), r(hw, ACT_BYTES_LO, ACT_BYTES_HI))
    }

    fn write_action(hw: &mut dyn Csr, i: u16, b: &ActionBits) {
        write_table(hw, ACT_STATUS, &action_writes(i as usize, b));
    }

    fn acquire_action(&mut self, hw: &mut dyn Csr, dest: DestId, reply: bool, a: ActionEntry) -> Option<u16> {
        let key = (dest, reply, a.to_bits());
        if let Some(&i) = self.action_index.get(&key) {
            if let Some(s) = self.actions[i as usize].as_mut() {
                s.refs += 1;
            }
            return Some(i);
        }
        let i = self.free_actions.pop()?;
        Self::write_action(hw, i, &key.2);
        self.actions[i as usize] = Some(ActionSlot { key, refs: 1, credited: (0, 0), diverted: false });
        self.action_index.insert(key, i);
        Some(i)
    }

    fn release_action(&mut self, hw: &mut dyn Csr, d: &mut Director, i: u16) {
        let Some(s) = self.actions[i as usize].as_mut() else { return };
        s.refs -= 1;
        if s.refs == 0 {
            self.credit_action(hw, d, i);
            if let Some(s) = self.actions[i as usize].take() {
                if !s.diverted {
                    self.action_index.remove(&s.key);
                }
            }
            self.free_actions.push(i);
        }
    }

    /// Adds what action `i` counted since the last credit to its real
    /// server's, service's and the director's statistics.
    fn credit_action(&mut self, hw: &mut dyn Csr, d: &mut Director, i: u16) {
        let Some(s) = self.actions[i as usize].as_mut() else { return };
        let (pkts, bytes) = Self::read_action_counters(hw, i);
        // Counters only grow while the action lives; a device that reads
        // back less is not trusted to make statistics go backwards.
        let (dp, db) = (pkts.saturating_sub(s.credited.0), bytes.saturating_sub(s.credited.1));
        s.credited = (pkts, bytes);
        if dp == 0 {
            return;
        }
        let (dest, reply, _) = s.key;
        d.credit_offloaded(dest, reply, dp, db);
    }

    /// Credits every live action's counters (before reporting).
    pub fn credit_all(&mut self, hw: &mut dyn Csr, d: &mut Director) {
        for i in 0..self.actions.len() as u16 {
            if self.actions[i as usize].is_some() {
                self.credit_action(hw, d, i);
            }
        }
        let fwd = {
            hw.read32(CNT_BASE + 8 * CNT_FWD) as u64 | (hw.read32(CNT_BASE + 8 * CNT_FWD + 4) as u64) << 32
        };
        d.credit_forwarded_frames(fwd - self.forwarded_credited);
        self.forwarded_credited = fwd;
    }

    /// Places flow `key` (action `action`) of connection `id`, evicting
    /// an idle connection from its candidate slots if it does not fit.
    /// An IPv4 victim frees a slot the IPv4 key can take; an IPv6 key may
    /// still not fit after one eviction (the pair's other slot), which
    /// counts as a table full like any failed placement.
    fn place(&mut self, hw: &mut dyn Csr, d: &mut Director, key: AnyFlowKey, action: u16, ack_fast: bool, id: ConnId) -> bool {
        self.placements += 1;
        let mut r = key.insert(&mut self.placer, action, ack_fast);
        if r.is_err() {
            match self.victim(hw, d, &key, id) {
                Ok((o, h)) => {
                    self.uninstall(hw, d, o, h);
                    self.mark_ready(d, o);
                    self.evicted += 1;
                    self.placements += 1;
                    r = key.insert(&mut self.placer, action, ack_fast);
                    // The freed slot is taken at once: not a free to credit.
                    self.free_credits = self.free_credits.saturating_sub(1);
                }
                Err(at) => self.retry_at = at,
            }
        }
        match r {
            Ok(writes) => {
                for w in &writes {
                    // A cuckoo move resets the moved entry's `last_hit`
                    // (an IPv6 entry's is its head's): keep it.
                    if let Some(old) = w.from {
                        let h = Self::read_hit(hw, old);
                        let m = self.moved_hits.entry(AnyFlowKey::of(&w.entry)).or_insert(0);
                        *m = (*m).max(h);
                    }
                    Self::write_slot(hw, w);
                }
                self.by_key.insert(key, id);
                true
            }
            Err(_) => {
                self.table_full += 1;
                false
            }
        }
    }

    /// The connection to evict so that `key` (of connection `id`) can take
    /// a slot: among the connections whose flows sit in `key`'s 8
    /// candidate slots, the one idle longest (last hit, or installed and
    /// never hit), if it has been idle for [`evict_idle`](Self::evict_idle);
    /// otherwise when the first of them may be.
    fn victim(&mut self, hw: &mut dyn Csr, d: &Director, key: &AnyFlowKey, id: ConnId) -> Result<(ConnId, Installed), Time> {
        let now = d.now();
        let mut best: Option<(Time, ConnId, Installed)> = None;
        for s in key.candidates(&self.placer) {
            let Some(k) = AnyFlowKey::at(&self.placer, s) else { continue };
            let Some(&o) = self.by_key.get(&k) else { continue };
            if o == id {
                continue;
            }
            let Some(h) = self.conns.get(&o).copied() else { continue };
            let since = self.activity(hw, o).unwrap_or(0).max(h.installed_at);
            if best.is_none_or(|b| since < b.0) {
                best = Some((since, o, h));
            }
        }
        match best {
            Some((since, o, h)) if now.saturating_sub(since) >= self.evict_idle => Ok((o, h)),
            Some((since, ..)) => Err(since.saturating_add(self.evict_idle).max(now + 1)),
            None => Err(now.saturating_add(self.evict_idle)),
        }
    }

    /// The other connection whose flow holds key `k` of connection `id`
    /// (its request key, or its reply key when `reply`), and whether the
    /// director's lookup of `k` finds `id` rather than that one.
    fn holder_of(&self, d: &Director, id: ConnId, k: &AnyFlowKey, reply: bool) -> Option<(ConnId, bool)> {
        let &other = self.by_key.get(k)?;
        if other == id {
            return None;
        }
        let found = match (k, reply) {
            (AnyFlowKey::V4(k), true) => d.conns.out_get(k.proto, k.saddr, k.sport, k.daddr, k.dport),
            (AnyFlowKey::V4(k), false) => d.conns.in_get(k.proto, k.saddr, k.sport, k.daddr, k.dport),
            (AnyFlowKey::V6(k), true) => d.conns.out_get6(k.proto, &k.saddr, k.sport, &k.daddr, k.dport),
            (AnyFlowKey::V6(k), false) => d.conns.in_get6(k.proto, &k.saddr, k.sport, &k.daddr, k.dport),
        };
        Some((other, found == Some(id)))
    }

    /// Connection `id` (live, not offloaded) replaced a connection whose
    /// flows hold one of its keys (a SYN on a TIME_WAIT entry, with
    /// `conn_reuse_mode`; the old entry lingers until the next jiffy):
    /// the director's lookup finds `id` now, so the old flows leave the
    /// card, or the card would forward `id`'s frames with the old
    /// connection's action. A few map lookups.
    fn unshadow(&mut self, hw: &mut dyn Csr, d: &mut Director, id: ConnId) {
        if self.by_key.is_empty() {
            return;
        }
        let req = request_key(d, id);
        let rep = if d.conns.get(id).fwd() == cf::MASQ { reply_key(d, id) } else { None };
        for (k, reply) in req.map(|k| (k, false)).into_iter().chain(rep.map(|k| (k, true))) {
            let Some((other, true)) = self.holder_of(d, id, &k, reply) else { continue };
            if let Some(h) = self.conns.get(&other).copied() {
                self.uninstall(hw, d, other, h);
                self.mark_ready(d, other);
            }
        }
    }

    /// Whether connection `id` (live, not offloaded) may be offloaded: it
    /// can no longer be a spoofed first packet (docs/architecture.md,
    /// "Flows and cuckoo placement"). TCP: IPVS's state is ESTABLISHED
    /// (the client's ACK completed the handshake). UDP: NAT, a reply from
    /// the real server was seen; DR/TUN, a second packet from the client.
    /// Any connection that was offloaded before may come back.
    fn ready(&self, d: &Director, id: ConnId) -> bool {
        let c = d.conns.get(id);
        if c.proto == 6 && c.state == tcp::state::ESTABLISHED {
            return true;
        }
        self.pending.get(&id).is_some_and(|p| p.ready && p.key == request_key(d, id))
    }

    /// The bookkeeping of connection `id` (live), fresh if it was another
    /// connection's.
    fn pending_mut(&mut self, d: &Director, id: ConnId) -> &mut Pending {
        let key = request_key(d, id);
        let p = self.pending.entry(id).or_insert(Pending { key, ready: false, inputs: 0, retry_at: 0 });
        if p.key != key {
            *p = Pending { key, ready: false, inputs: 0, retry_at: 0 };
        }
        p
    }

    /// Connection `id` (live) left the card but may come back.
    fn mark_ready(&mut self, d: &Director, id: ConnId) {
        if d.conns.is_live(id) {
            self.pending_mut(d, id).ready = true;
        }
    }

    /// Whether connection `id` is marked unplaceable: its last placement
    /// failed, no flow slot was freed since (a free lets one marked
    /// connection search again) and no entry of its buckets can have
    /// become idle enough to evict. O(1): one map lookup.
    fn unplaceable(&mut self, d: &Director, id: ConnId) -> bool {
        let Some(p) = self.pending.get(&id) else { return false };
        if p.retry_at == 0 || d.now() >= p.retry_at {
            return false;
        }
        if self.free_credits > 0 {
            self.free_credits -= 1;
            return false;
        }
        true
    }

    /// Connection `id` got a packet in direction `dir` (`None`: an ICMP
    /// error about it): the evidence the offload rule counts is noted
    /// (UDP), then its flows are brought in line ([`sync`](Self::sync)).
    pub fn seen(&mut self, hw: &mut dyn Csr, d: &mut Director, id: ConnId, dir: Option<Direction>) {
        if d.conns.is_live(id) && !self.conns.contains_key(&id) {
            let c = *d.conns.get(id);
            if c.proto == 17 && !c.is_template() {
                let p = self.pending_mut(d, id);
                match dir {
                    Some(Direction::Output) => p.ready = true,
                    Some(Direction::Input) => {
                        p.inputs = p.inputs.saturating_add(1);
                        if c.fwd() != cf::MASQ && p.inputs >= 2 {
                            p.ready = true;
                        }
                    }
                    None => {}
                }
            }
        }
        self.sync(hw, d, id);
    }

    /// Brings connection `id`'s hardware flows in line with its state.
    ///
    /// A connection not in the card is offloaded only once it is
    /// [`ready`](Self::ready) (never a half-open one), and not while it is
    /// marked unplaceable.
    pub fn sync(&mut self, hw: &mut dyn Csr, d: &mut Director, id: ConnId) {
        let live = d.conns.is_live(id);
        let have = self.conns.get(&id).copied();
        if have.is_none() {
            if !live {
                self.pending.remove(&id);
                return;
            }
            // Not offloaded yet, but its keys must not lead to a
            // connection it replaced.
            self.unshadow(hw, d, id);
            if !self.ready(d, id) {
                self.deferred += 1;
                return;
            }
        }
        let want = if live { self.wanted(d, id) } else { None };
        match (have, want) {
            (None, None) => {}
            (Some(h), None) => {
                self.uninstall(hw, d, id, h);
                self.mark_ready(d, id);
            }
            (Some(h), Some(w)) if h.wanted == w => {}
            (Some(h), Some(w)) if h.wanted.req.0 == w.req.0 && h.wanted.req.1 == w.req.1 && h.wanted.rep.map(|r| (r.0, r.1)) == w.rep.map(|r| (r.0, r.1)) => {
                // Only the ack_fast bits changed: rewrite in place.
                if let Some(wr) = w.req.0.update(&mut self.placer, h.req_action, w.req.2) {
                    Self::write_slot(hw, &wr);
                }
                if let (Some(r), Some(ra)) = (w.rep, h.rep_action) {
                    if let Some(wr) = r.0.update(&mut self.placer, ra, r.2) {
                        Self::write_slot(hw, &wr);
                    }
                }
                self.conns.insert(id, Installed { wanted: w, ..h });
            }
            (Some(h), Some(w)) => {
                self.uninstall(hw, d, id, h);
                self.mark_ready(d, id);
                self.offload(hw, d, id, w);
            }
            (None, Some(w)) => {
                if self.unplaceable(d, id) {
                    self.placement_skipped += 1;
                    return;
                }
                self.offload(hw, d, id, w);
            }
        }
    }

    /// Installs `w` for connection `id` (ready); marks it unplaceable if
    /// the tables had no place.
    fn offload(&mut self, hw: &mut dyn Csr, d: &mut Director, id: ConnId, w: Wanted) {
        match self.install(hw, d, id, w) {
            Install::Done => {
                self.pending.remove(&id);
            }
            Install::Shadowed => {}
            Install::Full => {
                let at = self.retry_at.max(d.now() + 1);
                let p = self.pending_mut(d, id);
                p.ready = true;
                p.retry_at = at;
                self.free_credits = 0;
            }
        }
    }

    fn install(&mut self, hw: &mut dyn Csr, d: &mut Director, id: ConnId, w: Wanted) -> Install {
        // No place in the action table: an idle connection's flows may
        // free one only by chance, so none is evicted for it.
        self.retry_at = d.now().saturating_add(self.evict_idle);
        // A key another connection's flow holds: the kernel's lookups
        // (`ip_vs_conn_in_get`, `ip_vs_conn_out_get`) find the newest
        // connection first (`ip_vs_conn_hash` adds at the chain's head), so
        // when the director's lookup finds this one, the other (replaced,
        // not yet expired: `ip_vs_conn_expire_now` acts at the next jiffy)
        // leaves the card; otherwise this one stays in software.
        let keys = std::iter::once((w.req.0, false)).chain(w.rep.map(|r| (r.0, true)));
        for (k, reply) in keys {
            let other = match self.holder_of(d, id, &k, reply) {
                None => continue,
                Some((_, false)) => return Install::Shadowed,
                Some((other, true)) => other,
            };
            if let Some(h) = self.conns.get(&other).copied() {
                self.uninstall(hw, d, other, h);
            }
        }
        let Some(ra) = self.acquire_action(hw, w.dest, false, w.req.1) else {
            self.table_full += 1;
            return Install::Full;
        };
        let rep_action = match w.rep {
            Some(r) => match self.acquire_action(hw, w.dest, true, r.1) {
                Some(i) => Some(i),
                None => {
                    self.release_action(hw, d, ra);
                    self.table_full += 1;
                    return Install::Full;
                }
            },
            None => None,
        };
        if !self.place(hw, d, w.req.0, ra, w.req.2, id) {
            self.release_action(hw, d, ra);
            if let Some(x) = rep_action {
                self.release_action(hw, d, x);
            }
            return Install::Full;
        }
        if let (Some(r), Some(x)) = (w.rep, rep_action) {
            if !self.place(hw, d, r.0, x, r.2, id) {
                if let Some(wr) = w.req.0.remove(&mut self.placer) {
                    Self::write_slot(hw, &wr);
                }
                self.by_key.remove(&w.req.0);
                self.release_action(hw, d, ra);
                self.release_action(hw, d, x);
                return Install::Full;
            }
        }
        let member_at = self.members[ra as usize].len() as u32;
        self.members[ra as usize].push(id);
        self.conns.insert(id, Installed { wanted: w, installed_at: d.now(), req_action: ra, rep_action, last_use: 0, member_at });
        Install::Done
    }

    fn uninstall(&mut self, hw: &mut dyn Csr, d: &mut Director, id: ConnId, h: Installed) {
        let keys = std::iter::once(h.wanted.req.0).chain(h.wanted.rep.map(|r| r.0));
        for k in keys {
            if let Some(wr) = k.remove(&mut self.placer) {
                Self::write_slot(hw, &wr);
                self.free_credits += 1;
            }
            self.by_key.remove(&k);
            self.moved_hits.remove(&k);
        }
        // Out of its action's members: the last member takes its place.
        let m = &mut self.members[h.req_action as usize];
        let at = h.member_at as usize;
        if m.get(at) == Some(&id) {
            m.swap_remove(at);
            if let Some(&moved) = m.get(at) {
                if let Some(x) = self.conns.get_mut(&moved) {
                    x.member_at = at as u32;
                }
            }
        }
        self.release_action(hw, d, h.req_action);
        if let Some(x) = h.rep_action {
            self.release_action(hw, d, x);
        }
        self.conns.remove(&id);
    }

    /// Latest hardware activity of connection `id`'s flows.
    /// Whether connection `id` has flows in the data plane.
    pub fn is_offloaded(&self, id: ConnId) -> bool {
        self.conns.contains_key(&id)
    }

    /// When the data plane last forwarded a packet of connection `id`.
    pub fn activity(&mut self, hw: &mut dyn Csr, id: ConnId) -> Option<Time> {
        let h = self.conns.get(&id).copied()?;
        let mut t = h.last_use;
        for k in std::iter::once(h.wanted.req.0).chain(h.wanted.rep.map(|r| r.0)) {
            if let Some(i) = k.slot_of(&self.placer) {
                t = t.max(Self::read_hit(hw, i));
            }
            if let Some(&m) = self.moved_hits.get(&k) {
                t = t.max(m);
            }
        }
        if let Some(x) = self.conns.get_mut(&id) {
            x.last_use = t;
        }
        (t > 0).then_some(t)
    }

    /// The connections that have flows in the data plane.
    pub fn offloaded(&self) -> Vec<ConnId> {
        self.conns.keys().copied().collect()
    }

    /// The next hop towards `ip` has a new MAC (`Director::set_learned`,
    /// already applied to `d`): every request action of a real server at
    /// `ip` is rewritten in place with the MAC the director now uses (one
    /// write per action, whatever the number of flows; the flows, the
    /// connections and the action's counters stay), and offloaded NAT
    /// connections of a client at `ip` get reply flows with the new MAC.
    /// Returns how many action entries were rewritten.
    ///
    /// Of either family: an IPv6 real server's MAC is learned too
    /// (`cfg.resolve_neighbors6`); IPv6 clients are reached through
    /// `[neighbors]` or `gateway_mac`, which do not change while the
    /// daemon runs.
    pub fn next_hop_changed(&mut self, hw: &mut dyn Csr, d: &mut Director, ip: IpAddr) -> usize {
        let mut rewritten = 0;
        for i in 0..self.actions.len() as u16 {
            let Some(s) = self.actions[i as usize] else { continue };
            let (dest, reply, bits) = s.key;
            if s.diverted || reply || d.services.dests.get(dest.index()).map(|r| r.addr) != Some(ip) {
                continue;
            }
            let Some(mac) = next_hop(d, ip, true) else { continue };
            let old = ActionEntry::from_bits(&bits);
            if old.mac == mac {
                continue;
            }
            let new = ActionEntry { mac, ..old };
            let key = (dest, reply, new.to_bits());
            Self::write_action(hw, i, &key.2);
            if self.action_index.get(&s.key) == Some(&i) {
                self.action_index.remove(&s.key);
            }
            self.action_index.entry(key).or_insert(i);
            if let Some(slot) = self.actions[i as usize].as_mut() {
                slot.key = key;
            }
            for &id in &self.members[i as usize] {
                if let Some(x) = self.conns.get_mut(&id) {
                    x.wanted.req.1 = new;
                }
            }
            rewritten += 1;
        }
        // Reply actions carry the client's next hop: connections whose
        // client is `ip` (a real server or router that is also a client)
        // are brought in line one by one.
        let IpAddr::V4(ip) = ip else { return rewritten };
        let clients: Vec<ConnId> =
            self.conns.iter().filter(|(_, h)| h.wanted.rep.is_some() && h.wanted.req.0.saddr_v4() == Some(ip)).map(|(&id, _)| id).collect();
        for id in clients {
            self.sync(hw, d, id);
        }
        if d.cfg.gateway == Some(ip) && d.cfg.gateway_mac.is_none() {
            rewritten += self.gateway_changed(hw, d);
        }
        rewritten
    }

    /// The gateway's learned MAC changed (already applied to `d`): every
    /// reply action whose connections all reply through the gateway is
    /// rewritten in place (one write per action; flows, connections and
    /// counters stay); a connection sharing its reply action with clients
    /// that are neighbours themselves is brought in line alone. Returns
    /// how many action entries were rewritten. IPv6 connections reply
    /// through the static `gateway_mac` only (a learned gateway is an IPv4
    /// one): their actions are not touched.
    fn gateway_changed(&mut self, hw: &mut dyn Csr, d: &mut Director) -> usize {
        let Some(mac) = d.gateway_mac() else { return 0 };
        // Per reply action: whether every connection on it replies through the gateway.
        let mut via: HashMap<u16, bool> = HashMap::default();
        for h in self.conns.values() {
            let (Some(ra), Some(client)) = (h.rep_action, h.wanted.req.0.saddr_v4()) else { continue };
            *via.entry(ra).or_insert(true) &= d.via_gateway(client);
        }
        let mut rewritten = 0;
        let mut alone = Vec::new();
        for (&i, &all) in &via {
            let Some(s) = self.actions[i as usize] else { continue };
            if s.diverted {
                continue;
            }
            let old = ActionEntry::from_bits(&s.key.2);
            if old.mac == mac {
                continue;
            }
            if !all {
                alone.push(i);
                continue;
            }
            let new = ActionEntry { mac, ..old };
            let key = (s.key.0, s.key.1, new.to_bits());
            Self::write_action(hw, i, &key.2);
            if self.action_index.get(&s.key) == Some(&i) {
                self.action_index.remove(&s.key);
            }
            self.action_index.entry(key).or_insert(i);
            if let Some(slot) = self.actions[i as usize].as_mut() {
                slot.key = key;
            }
            for h in self.conns.values_mut() {
                if let (Some(ra), Some(rep)) = (h.rep_action, h.wanted.rep.as_mut()) {
                    if ra == i {
                        rep.1 = new;
                    }
                }
            }
            rewritten += 1;
        }
        if !alone.is_empty() {
            let ids: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, h)| {
                    h.rep_action.is_some_and(|ra| alone.contains(&ra)) && h.wanted.req.0.saddr_v4().is_some_and(|c| d.via_gateway(c))
                })
                .map(|(&id, _)| id)
                .collect();
            for id in ids {
                self.sync(hw, d, id);
            }
        }
        rewritten
    }

    /// The MACs of the live reply actions of IPv4 connections whose
    /// clients reply through the (learned) gateway (for the gateway's
    /// `card_macs`).
    pub fn gateway_macs(&self, d: &Director) -> Vec<lvsnic_model::wire::MacAddr> {
        let mut v: Vec<_> = self
            .conns
            .values()
            .filter(|h| h.wanted.req.0.saddr_v4().is_some_and(|c| d.via_gateway(c)))
            .filter_map(|h| h.rep_action)
            .filter_map(|i| self.actions.get(i as usize)?.as_ref())
            .filter(|s| !s.diverted)
            .map(|s| ActionEntry::from_bits(&s.key.2).mac)
            .collect();
        v.sort_unstable_by_key(|m| m.0);
        v.dedup();
        v
    }

    /// The MAC of action entry `i` as the host last wrote it (tests,
    /// `lvsnic status`), if it is in use.
    pub fn action_mac(&self, i: u16) -> Option<lvsnic_model::wire::MacAddr> {
        let s = self.actions.get(i as usize)?.as_ref()?;
        Some(ActionEntry::from_bits(&s.key.2).mac)
    }

    /// The MACs of the live request actions of real servers at `ip`.
    pub fn request_macs(&self, d: &Director, ip: IpAddr) -> Vec<lvsnic_model::wire::MacAddr> {
        let mut v: Vec<_> = self
            .actions
            .iter()
            .flatten()
            .filter(|s| !s.diverted && !s.key.1 && d.services.dests.get(s.key.0.index()).map(|r| r.addr) == Some(ip))
            .map(|s| ActionEntry::from_bits(&s.key.2).mac)
            .collect();
        v.sort_unstable_by_key(|m| m.0);
        v.dedup();
        v
    }

    /// The request action of an offloaded connection.
    pub fn request_action(&self, id: ConnId) -> Option<u16> {
        self.conns.get(&id).map(|h| h.req_action)
    }

    /// Takes every offloaded connection of real server `dest` (deleted)
    /// off the card.
    pub fn drop_dest(&mut self, hw: &mut dyn Csr, d: &mut Director, dest: DestId) {
        self.drop_dests(hw, d, &[dest]);
    }

    /// Takes every offloaded connection of the real servers `dests`
    /// (deleted) off the card: one write per action sets its `host` bit,
    /// so from then on their frames come to the host (reason
    /// `ACTION_HOST`) as if their flows were gone, and the flows wait in a
    /// queue for [`remove_diverted`](Self::remove_diverted). One pass over
    /// the card's actions whatever the number of servers or flows.
    pub fn drop_dests(&mut self, hw: &mut dyn Csr, d: &mut Director, dests: &[DestId]) {
        if dests.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<DestId> = dests.iter().copied().collect();
        for i in 0..self.actions.len() as u16 {
            let Some(s) = self.actions[i as usize] else { continue };
            if s.diverted || !gone.contains(&s.key.0) {
                continue;
            }
            // What it forwarded until now belongs to the deleted server;
            // with `host` set it forwards nothing more.
            self.credit_action(hw, d, i);
            let diverted = ActionEntry { host: true, ..ActionEntry::from_bits(&s.key.2) };
            Self::write_action(hw, i, &diverted.to_bits());
            self.action_index.remove(&s.key);
            if let Some(s) = self.actions[i as usize].as_mut() {
                s.diverted = true;
            }
            if !self.members[i as usize].is_empty() {
                self.diverted.push_back(i);
            }
        }
    }

    /// Connections of deleted real servers still in the table (their
    /// frames already go to the host).
    pub fn diverted_pending(&self) -> usize {
        self.diverted.iter().filter(|&&a| self.is_diverted(a)).map(|&a| self.members[a as usize].len()).sum()
    }

    /// Whether connections of deleted real servers are still in the table.
    pub fn has_diverted(&self) -> bool {
        self.diverted.iter().any(|&a| self.is_diverted(a) && !self.members[a as usize].is_empty())
    }

    fn is_diverted(&self, a: u16) -> bool {
        self.actions[a as usize].is_some_and(|s| s.diverted)
    }

    /// Removes up to `max` queued flows of deleted real servers; returns
    /// how many connections left the card.
    pub fn remove_diverted(&mut self, hw: &mut dyn Csr, d: &mut Director, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some(&a) = self.diverted.front() else { break };
            // Emptied (its last connection left: the action was freed and
            // may already serve a new server) or done: next action.
            let last = if self.is_diverted(a) { self.members[a as usize].last().copied() } else { None };
            let Some(id) = last else {
                self.diverted.pop_front();
                continue;
            };
            match self.conns.get(&id).copied() {
                Some(h) => self.uninstall(hw, d, id, h),
                // Not installed (cannot happen: uninstall unlinks it).
                None => {
                    self.members[a as usize].pop();
                }
            }
            n += 1;
        }
        n
    }
}

/// [`Offload`] view of the flows over a register interface, for
/// [`Director::advance_with`].
pub struct OffloadView<'a> {
    /// The flow manager.
    pub flows: &'a mut FlowManager,
    /// The card's registers.
    pub hw: &'a mut dyn Csr,
    /// Connections removed during the advance (their flows are uninstalled
    /// afterwards, when the director can be borrowed again).
    pub removed: Vec<ConnId>,
}

impl Offload for OffloadView<'_> {
    fn last_use(&mut self, id: ConnId, _conn: &Conn) -> Option<Time> {
        self.flows.activity(self.hw, id)
    }
    fn removed(&mut self, id: ConnId, _conn: &Conn) {
        self.removed.push(id);
    }
}

impl FlowManager {
    /// Uninstalls the flows of connections the director removed.
    pub fn forget(&mut self, hw: &mut dyn Csr, d: &mut Director, ids: &[ConnId]) {
        for &id in ids {
            if let Some(h) = self.conns.get(&id).copied() {
                self.uninstall(hw, d, id, h);
            }
            self.pending.remove(&id);
        }
    }
}

/// Table commands that found the table still busy after [`BUSY_POLLS`]
/// status reads (a misbehaving device); the command was written anyway.
pub static BUSY_TIMEOUTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Status reads before a busy table counts as a timeout.
pub const BUSY_POLLS: u32 = 10_000;

/// Waits until `status`' busy bit is clear (docs/hardware.md §6: the host
/// waits for busy = 0 before the next command, and before reading a read
/// command's results). On the model it is always clear; the RTL is busy for
/// a few cycles per command and for the table sweep after reset.
pub(crate) fn wait_idle(hw: &mut dyn Csr, status: u32) {
    for _ in 0..BUSY_POLLS {
        if hw.read32(status) & 1 == 0 {
            return;
        }
    }
    BUSY_TIMEOUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Issues a table command once the table is idle.
pub(crate) fn command(hw: &mut dyn Csr, status: u32, cmd_reg: u32, cmd: u32) {
    wait_idle(hw, status);
    hw.write32(cmd_reg, cmd);
}

/// Applies a table write (`flow_writes`/`action_writes`: staging words,
/// index, then the command, issued once the table is idle).
pub(crate) fn write_table(hw: &mut dyn Csr, status: u32, writes: &[(u32, u32)]) {
    let Some((&(cmd_reg, cmd), staging)) = writes.split_last() else { return };
    for &(a, v) in staging {
        hw.write32(a, v);
    }
    command(hw, status, cmd_reg, cmd);
}
