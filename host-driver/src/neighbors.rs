//! Neighbours: the next-hop MACs of the real servers, as Linux learns them.
//!
//! [`NeighborTable`] holds, for every real server the director sends to,
//! the MAC of its next hop (the real server itself, or the router the FIB
//! names for it), and the MAC of the gateway towards the clients when only
//! its address is configured (`[director] gateway` without `gateway_mac`;
//! [`set_gateway`](NeighborTable::set_gateway)), with where it
//! came from ([`Source`]): a static `[neighbors]` entry (always wins), the
//! kernel's own neighbour table (rtnetlink, [`crate::rtnl`]) or an ARP
//! frame seen on the wire (the `model`/`sim` backends' `--wire tap:`).
//! Between the two learned sources the latest word wins. Only next hops
//! of configured real servers are tracked (at most [`MAX_ENTRIES`]), so a
//! flood of ARP or netlink messages about other addresses changes nothing.
//!
//! A next hop without a MAC is resolved: [`NeighborTable::due_probes`]
//! says when to ask (at most [`MAX_PROBES`] requests a second apart, then
//! the entry is `failed` and asked again every [`FAILED_RETRY_NS`]; never
//! more than [`ARP_PER_SEC`] requests a second in all); a learned entry is
//! asked again after [`REACHABLE_NS`] (Linux's base reachable time) so a MAC
//! that changed without a gratuitous ARP is found. Frames to a real server
//! whose MAC is not known are held on its next hop, at most [`UNRES_QLEN`]
//! (the oldest dropped first, as Linux's `unres_qlen` does) and sent when
//! the MAC is known, or dropped when it fails; every drop is counted.
//!
//! [`NeighborWatch`] compares ARP senders with the static entries: a real
//! server whose MAC changed (a VM migrated, a NIC swapped) is black-holed
//! by a stale static entry while its health checker, which goes through
//! the host's own ARP, says it is up; this makes it visible: each
//! mismatching frame is counted (`neighbors.mismatches` in `lvsnic
//! status`), and the event log has one `neighbor_mismatch` warning when a
//! neighbour is first seen with another MAC (and again if that MAC
//! changes), and one `neighbor_match` when it answers with the configured
//! MAC again. Static entries still win: nothing is rewritten.

use lvsnic_model::wire::arp::ArpPacket;
use lvsnic_model::wire::MacAddr;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The watch over ARP senders.
#[derive(Debug, Default)]
pub struct NeighborWatch {
    /// ARP frames whose sender contradicted its `[neighbors]` entry.
    pub mismatches: u64,
    /// Neighbours last seen with another MAC than configured, and that MAC.
    seen: HashMap<Ipv4Addr, MacAddr>,
}

/// `neighbors` in `lvsnic status`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NeighborStatus {
    /// ARP frames whose sender contradicted its `[neighbors]` entry.
    pub mismatches: u64,
    /// Neighbours whose last ARP frame had another MAC: `IP` → `MAC seen`.
    pub mismatched: BTreeMap<String, String>,
    /// Real servers → next hop, MAC, source and state.
    pub entries: BTreeMap<String, EntryStatus>,
    /// The table's counters.
    #[serde(flatten)]
    pub counters: NeighborCounters,
}

/// One real server in `lvsnic status`.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct EntryStatus {
    /// Its next hop (itself, or the router the FIB names).
    pub next_hop: String,
    /// The next hop's MAC, if known.
    pub mac: Option<String>,
    /// `static`, `kernel` or `arp`.
    pub source: Option<&'static str>,
    /// `permanent`, `incomplete`, `reachable`, `stale` or `failed`.
    pub state: &'static str,
    /// Frames waiting for the MAC.
    pub held: usize,
    /// The MACs of the card's action entries that send to this real
    /// server (for the gateway: the reply actions towards clients behind
    /// it), as the host last wrote them (one per distinct rewrite).
    pub card_macs: Vec<String>,
    /// This is the gateway towards the clients (`[director] gateway`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gateway: bool,
}

/// The sender of an Ethernet ARP frame (untagged), if `frame` is one.
fn arp_sender(frame: &[u8]) -> Option<(Ipv4Addr, MacAddr, u16)> {
    if frame.len() < 14 || frame[12..14] != [0x08, 0x06] {
        return None;
    }
    let a = ArpPacket::new_checked(&frame[14..]).ok()?;
    Some((a.sender_protocol_addr(), a.sender_hardware_addr(), a.operation()))
}

impl NeighborWatch {
    /// Watches nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Looks at one received frame.
    pub fn observe(&mut self, neighbors: &BTreeMap<Ipv4Addr, MacAddr>, frame: &[u8]) {
        let Some((ip, mac, op)) = arp_sender(frame) else { return };
        let Some(&configured) = neighbors.get(&ip) else { return };
        let (ip_s, op_s) = (ip.to_string(), if op == 2 { "reply" } else { "request" });
        if mac == configured {
            if self.seen.remove(&ip).is_some() {
                crate::logging::event(log::Level::Info, "neighbor_match", &[("ip", &ip_s), ("mac", &mac.to_string()), ("arp", op_s)]);
            }
            return;
        }
        self.mismatches += 1;
        if self.seen.insert(ip, mac) != Some(mac) {
            crate::logging::event(
                log::Level::Warn,
                "neighbor_mismatch",
                &[("ip", &ip_s), ("configured", &configured.to_string()), ("seen", &mac.to_string()), ("arp", op_s)],
            );
        }
    }

    /// For `lvsnic status`.
    pub fn status(&self) -> NeighborStatus {
        NeighborStatus {
            mismatches: self.mismatches,
            mismatched: self.seen.iter().map(|(ip, mac)| (ip.to_string(), mac.to_string())).collect(),
            ..Default::default()
        }
    }
}

/// Next hops tracked at most (real servers' next hops; more are not
/// resolved and counted in `table_full`).
pub const MAX_ENTRIES: usize = 4096;
/// Frames held per unresolved next hop (Linux's `unres_qlen` default is
/// about 100 packets of socket-buffer size; frames here are whole).
pub const UNRES_QLEN: usize = 16;
/// Requests per resolution before the entry fails (`mcast_solicit`).
pub const MAX_PROBES: u32 = 3;
/// Between two requests for one next hop (`retrans_time`, 1 s).
pub const RETRANS_NS: u64 = 1_000_000_000;
/// A failed next hop is asked again after this long.
pub const FAILED_RETRY_NS: u64 = 5_000_000_000;
/// A learned MAC is confirmed again after this long (`base_reachable_time`).
pub const REACHABLE_NS: u64 = 30_000_000_000;
/// ARP requests sent per second at most, all next hops together.
pub const ARP_PER_SEC: u32 = 50;

/// Where a next hop's MAC came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `[neighbors]` in DIRECTOR.toml.
    Static,
    /// The kernel's neighbour table (rtnetlink).
    Kernel,
    /// An ARP frame on the wire.
    Arp,
}

impl Source {
    /// The name in `lvsnic status` and the event log.
    pub fn name(self) -> &'static str {
        match self {
            Source::Static => "static",
            Source::Kernel => "kernel",
            Source::Arp => "arp",
        }
    }
}

/// A learned next hop's state (a static one is `permanent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Being resolved: no MAC yet.
    Incomplete,
    /// A MAC confirmed less than [`REACHABLE_NS`] ago.
    Reachable,
    /// A MAC not confirmed for a while, being asked again (still used).
    Stale,
    /// No answer to [`MAX_PROBES`] requests: no MAC.
    Failed,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Incomplete => "incomplete",
            State::Reachable => "reachable",
            State::Stale => "stale",
            State::Failed => "failed",
        }
    }
}

/// One tracked next hop.
#[derive(Debug)]
struct Entry {
    mac: Option<MacAddr>,
    source: Option<Source>,
    state: State,
    /// When the MAC was last confirmed (ns).
    confirmed: u64,
    /// Requests sent in the current resolution.
    probes: u32,
    /// When the next request is due (ns).
    next_probe: u64,
    /// Frames waiting for the MAC.
    queue: VecDeque<Vec<u8>>,
}

impl Entry {
    fn new(now: u64) -> Self {
        Entry { mac: None, source: None, state: State::Incomplete, confirmed: 0, probes: 0, next_probe: now, queue: VecDeque::new() }
    }
}

/// The table's counters (in `lvsnic status` under `neighbors`, and in the
/// metrics).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct NeighborCounters {
    /// Next hops whose MAC became known.
    pub learned: u64,
    /// Learned MACs that changed.
    pub changed: u64,
    /// Resolutions that got no answer.
    pub failed: u64,
    /// Frames held while their next hop was resolved.
    pub held: u64,
    /// Held frames sent once the MAC was known.
    pub released: u64,
    /// Frames dropped unresolved: a full queue (oldest first) or a failed
    /// resolution.
    pub unresolved_drops: u64,
    /// ARP requests the daemon sent on the wire.
    pub arp_requests: u64,
    /// Requests postponed by the [`ARP_PER_SEC`] limit.
    pub arp_limited: u64,
    /// Next hops not tracked because the table was full.
    pub table_full: u64,
    /// Rejected inputs: an ARP or netlink neighbour with a MAC no host can
    /// have, or a netlink message that did not parse.
    pub bad_input: u64,
    /// Requests to, or answers from, the rtnetlink thread its bounded
    /// queues refused (the next dump makes up for them).
    pub queue_refused: u64,
}

/// A real server whose next-hop MAC is now this (`None`: unknown).
pub type NextHopChange = (IpAddr, Option<MacAddr>);

/// A next hop whose MAC is asked for now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The next hop.
    pub ip: IpAddr,
    /// The MAC it had (a refresh: Linux asks it by unicast), if any.
    pub known: Option<MacAddr>,
}

/// The next-hop table ([module docs](self)). Times are nanoseconds of any
/// monotonic clock the caller keeps to.
#[derive(Debug, Default)]
pub struct NeighborTable {
    /// `[neighbors]`.
    statics: BTreeMap<Ipv4Addr, MacAddr>,
    /// `[neighbors]`' IPv6 entries.
    statics6: BTreeMap<Ipv6Addr, MacAddr>,
    /// Real server → its next hop.
    targets: BTreeMap<IpAddr, IpAddr>,
    /// Next hop → what is known of it.
    entries: HashMap<IpAddr, Entry>,
    /// What the director was last given per real server.
    pushed: HashMap<IpAddr, MacAddr>,
    /// The mismatch watch over the static entries.
    pub watch: NeighborWatch,
    /// Counters.
    pub counters: NeighborCounters,
    /// ARP request tokens and when they were last refilled.
    tokens: (u32, u64),
    /// How long a learned MAC is trusted before it is asked again.
    reachable_ns: u64,
    /// No request is due before this (a lower bound: checking costs a
    /// pass over the entries, so the loop does it only when one may be due).
    earliest: u64,
    /// Real servers were added by [`hold`](Self::hold) since the last
    /// [`take_new_targets`](Self::take_new_targets).
    new_targets: bool,
    /// The gateway whose MAC is learned (`[director] gateway` without
    /// `gateway_mac`): a target of its own, its own next hop.
    gateway: Option<Ipv4Addr>,
}

impl NeighborTable {
    /// A table with the static entries `statics`.
    pub fn new(statics: BTreeMap<Ipv4Addr, MacAddr>) -> Self {
        NeighborTable { statics, tokens: (ARP_PER_SEC, 0), reachable_ns: REACHABLE_NS, ..Default::default() }
    }

    /// How long a learned MAC is trusted before it is asked again
    /// (default [`REACHABLE_NS`]).
    pub fn set_reachable(&mut self, ns: u64) {
        self.reachable_ns = ns.max(1);
    }

    /// Replaces the static entries (a reload).
    pub fn set_statics(&mut self, statics: BTreeMap<Ipv4Addr, MacAddr>) {
        self.statics = statics;
    }

    /// The static entries.
    pub fn statics(&self) -> &BTreeMap<Ipv4Addr, MacAddr> {
        &self.statics
    }

    /// Sets the static IPv6 entries (`[neighbors]`' IPv6 keys).
    pub fn set_statics6(&mut self, statics: BTreeMap<Ipv6Addr, MacAddr>) {
        self.statics6 = statics;
    }

    /// The static entry of `ip`, of either family.
    fn static_mac(&self, ip: IpAddr) -> Option<MacAddr> {
        match ip {
            IpAddr::V4(a) => self.statics.get(&a).copied(),
            IpAddr::V6(a) => self.statics6.get(&a).copied(),
        }
    }

    /// The gateway whose MAC is to be learned (`None`: a static
    /// `gateway_mac`, nothing to learn); it becomes a target at the next
    /// [`set_targets`](Self::set_targets).
    pub fn set_gateway(&mut self, gateway: Option<Ipv4Addr>) {
        self.gateway = gateway.filter(|g| !g.is_unspecified());
    }

    /// The gateway whose MAC is learned, if any.
    pub fn gateway(&self) -> Option<Ipv4Addr> {
        self.gateway
    }

    /// Sets the real servers to reach and each one's next hop (itself when
    /// on-link), with [the gateway](Self::set_gateway) as its own next
    /// hop: entries for new next hops start being resolved, those no
    /// real server needs any more are dropped (with their held frames,
    /// counted). A real server with a static entry needs no next hop.
    pub fn set_targets(&mut self, targets: impl IntoIterator<Item = (IpAddr, IpAddr)>, now: u64) {
        let mut t = BTreeMap::new();
        let gateway = self.gateway.map(|g| (g.into(), g.into()));
        for (rs, nh) in targets.into_iter().chain(gateway) {
            if self.static_mac(rs).is_some() {
                continue;
            }
            t.insert(rs, nh);
        }
        let needed: std::collections::HashSet<IpAddr> =
            t.values().copied().filter(|&nh| self.static_mac(nh).is_none()).collect();
        let gone: Vec<IpAddr> = self.entries.keys().filter(|ip| !needed.contains(ip)).copied().collect();
        for ip in gone {
            if let Some(e) = self.entries.remove(&ip) {
                self.counters.unresolved_drops += e.queue.len() as u64;
            }
        }
        for nh in needed {
            if self.entries.contains_key(&nh) {
                continue;
            }
            if self.entries.len() >= MAX_ENTRIES {
                self.counters.table_full += 1;
                continue;
            }
            self.entries.insert(nh, Entry::new(now));
            self.earliest = self.earliest.min(now);
        }
        self.targets = t;
    }

    /// The next hop of real server `rs`, if it is tracked.
    pub fn next_hop(&self, rs: IpAddr) -> Option<IpAddr> {
        self.targets.get(&rs).copied()
    }

    /// Whether `ip` is a next hop being tracked (learning about any other
    /// address changes nothing).
    pub fn tracks(&self, ip: IpAddr) -> bool {
        self.entries.contains_key(&ip)
    }

    /// The MAC the director should use for real server `rs`, and where it
    /// came from: its static entry, its next hop's static entry, or what
    /// was learned for its next hop.
    pub fn effective(&self, rs: IpAddr) -> Option<(MacAddr, Source)> {
        if let Some(m) = self.static_mac(rs) {
            return Some((m, Source::Static));
        }
        let nh = self.targets.get(&rs).copied().unwrap_or(rs);
        if let Some(m) = self.static_mac(nh) {
            return Some((m, Source::Static));
        }
        let e = self.entries.get(&nh)?;
        Some((e.mac?, e.source?))
    }

    /// `mac` for next hop `ip`, from `source` (a usable state): learned,
    /// changed or confirmed. Ignored for an address not tracked; a MAC no
    /// host can have is a counted bad input.
    pub fn learn(&mut self, ip: IpAddr, mac: MacAddr, source: Source, now: u64) {
        let Some(e) = self.entries.get_mut(&ip) else { return };
        if lvsnic_model::config::usable_mac(mac).is_err() {
            self.counters.bad_input += 1;
            return;
        }
        let ip_s = ip.to_string();
        match e.mac {
            None => {
                self.counters.learned += 1;
                crate::logging::event(
                    log::Level::Info,
                    "neighbor_learned",
                    &[("ip", &ip_s), ("mac", &mac.to_string()), ("source", source.name())],
                );
            }
            Some(old) if old != mac => {
                self.counters.changed += 1;
                crate::logging::event(
                    log::Level::Warn,
                    "neighbor_changed",
                    &[("ip", &ip_s), ("old", &old.to_string()), ("new", &mac.to_string()), ("source", source.name())],
                );
            }
            Some(_) => {}
        }
        e.mac = Some(mac);
        e.source = Some(source);
        e.state = State::Reachable;
        e.confirmed = now;
        e.probes = 0;
        e.next_probe = now.saturating_add(self.reachable_ns);
    }

    /// The kernel no longer has a usable MAC for `ip` (deleted, failed,
    /// incomplete): a MAC the kernel gave is forgotten and `ip` resolved
    /// again; one learned from ARP stays.
    pub fn kernel_lost(&mut self, ip: IpAddr, now: u64) {
        let Some(e) = self.entries.get_mut(&ip) else { return };
        if e.source == Some(Source::Kernel) {
            e.mac = None;
            e.source = None;
            e.state = State::Incomplete;
            e.probes = 0;
            e.next_probe = now;
            self.earliest = self.earliest.min(now);
            crate::logging::event(log::Level::Info, "neighbor_lost", &[("ip", &ip.to_string()), ("source", "kernel")]);
        }
    }

    /// An ARP frame (from the wire or handed up by the card): its sender,
    /// if it is a tracked next hop, is learned (a reply, a request, a
    /// gratuitous ARP, as Linux updates an entry it has from any of
    /// them); static entries are checked by the [`NeighborWatch`].
    pub fn observe(&mut self, frame: &[u8], now: u64) {
        self.watch.observe(&self.statics, frame);
        let Some((ip, mac, _)) = arp_sender(frame) else { return };
        if ip.is_unspecified() || !self.tracks(ip.into()) {
            return;
        }
        self.learn(ip.into(), mac, Source::Arp, now);
    }

    /// Holds frames for real server `rs` until its next hop's MAC is
    /// known; the oldest go first when more than [`UNRES_QLEN`] wait.
    pub fn hold(&mut self, rs: IpAddr, frames: Vec<Vec<u8>>, now: u64) {
        if rs.is_unspecified() {
            // Towards a gateway whose address is not known: nothing to ask.
            self.counters.unresolved_drops += frames.len() as u64;
            return;
        }
        let nh = match self.targets.get(&rs) {
            Some(&nh) => nh,
            None => {
                // A real server added since the targets were last set: on-link until the FIB says otherwise.
                self.targets.insert(rs, rs);
                self.new_targets = true;
                rs
            }
        };
        if !self.entries.contains_key(&nh) {
            if self.entries.len() >= MAX_ENTRIES {
                self.counters.table_full += 1;
                self.counters.unresolved_drops += frames.len() as u64;
                return;
            }
            self.entries.insert(nh, Entry::new(now));
            self.earliest = self.earliest.min(now);
        }
        let Some(e) = self.entries.get_mut(&nh) else { return };
        if e.state == State::Failed {
            // Linux drops at once while the entry is failed; a new
            // resolution starts when it is due.
            self.counters.unresolved_drops += frames.len() as u64;
            return;
        }
        for f in frames {
            if e.queue.len() >= UNRES_QLEN {
                e.queue.pop_front();
                self.counters.unresolved_drops += 1;
            }
            e.queue.push_back(f);
            self.counters.held += 1;
        }
    }

    /// The next hops to ask for now (resolutions and refreshes), within
    /// the rate limit; entries whose requests all went unanswered fail
    /// (their held frames dropped, counted, logged).
    pub fn due_probes(&mut self, now: u64) -> Vec<Probe> {
        if now < self.earliest {
            return Vec::new();
        }
        let refill = now.saturating_sub(self.tokens.1) / (1_000_000_000 / ARP_PER_SEC as u64);
        if refill > 0 {
            self.tokens.0 = (self.tokens.0 as u64 + refill).min(ARP_PER_SEC as u64) as u32;
            self.tokens.1 = now;
        }
        let mut due: Vec<(u64, IpAddr)> =
            self.entries.iter().filter(|(_, e)| e.next_probe <= now).map(|(&ip, e)| (e.next_probe, ip)).collect();
        due.sort_unstable();
        let mut out = Vec::new();
        for (_, ip) in due {
            let Some(e) = self.entries.get_mut(&ip) else { continue };
            if e.probes >= MAX_PROBES {
                // No answer: the MAC (if any) is gone, as Linux's entry goes FAILED.
                let dropped = e.queue.len();
                e.queue.clear();
                e.mac = None;
                e.source = None;
                e.state = State::Failed;
                e.probes = 0;
                e.next_probe = now.saturating_add(FAILED_RETRY_NS);
                self.counters.failed += 1;
                self.counters.unresolved_drops += dropped as u64;
                crate::logging::event(
                    log::Level::Warn,
                    "neighbor_failed",
                    &[("ip", &ip.to_string()), ("probes", &MAX_PROBES.to_string()), ("dropped", &dropped.to_string())],
                );
                continue;
            }
            if self.tokens.0 == 0 {
                self.counters.arp_limited += 1;
                e.next_probe = now.saturating_add(1_000_000_000 / ARP_PER_SEC as u64);
                continue;
            }
            self.tokens.0 -= 1;
            if e.state == State::Reachable {
                e.state = State::Stale;
            }
            if e.state == State::Failed {
                e.state = State::Incomplete;
            }
            e.probes += 1;
            e.next_probe = now.saturating_add(RETRANS_NS);
            // A refresh asks the MAC it had first (unicast, as Linux's
            // `ucast_solicit`), then everyone: a real server whose MAC
            // changed does not hear the first.
            out.push(Probe { ip, known: if e.probes == 1 { e.mac } else { None } });
        }
        self.earliest = self.entries.values().map(|e| e.next_probe).min().unwrap_or(u64::MAX);
        out
    }

    /// The earliest time a probe may be due, if any (for the caller's poll timeout).
    pub fn next_due(&self) -> Option<u64> {
        (!self.entries.is_empty()).then_some(self.earliest)
    }

    /// Whether [`hold`](Self::hold) added real servers the caller has not
    /// routed yet (it then sets the targets again).
    pub fn take_new_targets(&mut self) -> bool {
        std::mem::take(&mut self.new_targets)
    }

    /// What changed for the director since the last call: per real server,
    /// the next-hop MAC to use now (`None`: not known any more), and the
    /// frames held for it that can go now (their destination MAC set).
    pub fn reconcile(&mut self) -> (Vec<NextHopChange>, Vec<Vec<u8>>) {
        let mut changes = Vec::new();
        let rs_all: Vec<IpAddr> = self.targets.keys().chain(self.pushed.keys()).copied().collect();
        for rs in rs_all {
            let now = if self.targets.contains_key(&rs) { self.effective(rs).map(|(m, _)| m) } else { None };
            let was = self.pushed.get(&rs).copied();
            if now != was {
                match now {
                    Some(m) => self.pushed.insert(rs, m),
                    None => self.pushed.remove(&rs),
                };
                changes.push((rs, now));
            }
        }
        changes.sort_unstable_by_key(|c| c.0);
        changes.dedup_by_key(|c| c.0);
        let mut release = Vec::new();
        for e in self.entries.values_mut() {
            let Some(mac) = e.mac else { continue };
            for mut f in e.queue.drain(..) {
                if f.len() >= 6 {
                    f[..6].copy_from_slice(&mac.0);
                    release.push(f);
                }
            }
        }
        self.counters.released += release.len() as u64;
        (changes, release)
    }

    /// For `lvsnic status`.
    pub fn status(&self) -> NeighborStatus {
        let mut s = self.watch.status();
        s.counters = self.counters;
        let statics = self.statics.iter().map(|(ip, m)| (ip.to_string(), m)).chain(self.statics6.iter().map(|(ip, m)| (ip.to_string(), m)));
        for (rs, m) in statics {
            s.entries.insert(
                rs.clone(),
                EntryStatus { next_hop: rs, mac: Some(m.to_string()), source: Some("static"), state: "permanent", ..Default::default() },
            );
        }
        for (rs, nh) in &self.targets {
            let st = match (self.static_mac(*nh), self.entries.get(nh)) {
                (Some(m), _) => EntryStatus {
                    next_hop: nh.to_string(),
                    mac: Some(m.to_string()),
                    source: Some("static"),
                    state: "permanent",
                    ..Default::default()
                },
                (None, Some(e)) => EntryStatus {
                    next_hop: nh.to_string(),
                    mac: e.mac.map(|m| m.to_string()),
                    source: e.source.map(Source::name),
                    state: e.state.name(),
                    held: e.queue.len(),
                    ..Default::default()
                },
                (None, None) => EntryStatus { next_hop: nh.to_string(), state: "untracked", ..Default::default() },
            };
            s.entries.insert(rs.to_string(), EntryStatus { gateway: self.gateway.map(IpAddr::from) == Some(*rs), ..st });
        }
        s
    }
}

/// An ARP request for `target` from `(sip, smac)`: broadcast, or unicast
/// to `known` (a refresh, as Linux probes a stale entry).
pub fn arp_request(smac: MacAddr, sip: Ipv4Addr, target: Ipv4Addr, known: Option<MacAddr>) -> Vec<u8> {
    let dst = known.map(|m| m.0).unwrap_or([0xff; 6]);
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&smac.0);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&smac.0);
    f.extend_from_slice(&sip.octets());
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&target.octets());
    f.resize(60, 0);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arp(op: u16, sha: [u8; 6], spa: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&sha);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4]);
        f.extend_from_slice(&op.to_be_bytes());
        f.extend_from_slice(&sha);
        f.extend_from_slice(&spa);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&[10, 0, 0, 1]);
        f
    }

    #[test]
    fn mismatches_are_counted_and_remembered_until_the_configured_mac_answers() {
        let good = [2, 0, 0, 0, 0x10, 1];
        let moved = [2, 0, 0, 0, 0x99, 1];
        let nb = BTreeMap::from([(Ipv4Addr::new(192, 168, 10, 1), MacAddr(good))]);
        let mut w = NeighborWatch::default();
        w.observe(&nb, &arp(2, good, [192, 168, 10, 1]));
        w.observe(&nb, &arp(1, moved, [192, 168, 10, 9])); // not a configured neighbour
        w.observe(&nb, &arp(1, moved, [192, 168, 10, 1])[..20]); // truncated: not ARP enough
        assert_eq!(w.mismatches, 0);
        w.observe(&nb, &arp(2, moved, [192, 168, 10, 1]));
        w.observe(&nb, &arp(1, moved, [192, 168, 10, 1]));
        assert_eq!(w.mismatches, 2);
        assert_eq!(w.status().mismatched, BTreeMap::from([("192.168.10.1".to_string(), "02:00:00:00:99:01".to_string())]));
        w.observe(&nb, &arp(2, good, [192, 168, 10, 1]));
        assert_eq!(w.mismatches, 2);
        assert!(w.status().mismatched.is_empty());
    }

    const RS4: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 1);
    const RS: IpAddr = IpAddr::V4(RS4);
    const RS2: IpAddr = IpAddr::V4(Ipv4Addr::new(172, 16, 0, 5));
    const GW: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 168, 10, 254));
    const S: u64 = 1_000_000_000;

    #[test]
    fn static_entries_win_and_learned_sources_follow_the_latest_word() {
        let st = BTreeMap::from([(RS4, MacAddr([2, 0, 0, 0, 0x10, 1]))]);
        let mut t = NeighborTable::new(st);
        t.set_targets([(RS, RS), (RS2, GW)], 0);
        assert!(!t.tracks(RS), "a static real server is not resolved");
        assert!(t.tracks(GW));
        // An ARP reply from the static real server with another MAC: counted, not used.
        t.observe(&arp(2, [2, 0, 0, 0, 0x99, 1], [192, 168, 10, 1]), 1);
        assert_eq!(t.effective(RS), Some((MacAddr([2, 0, 0, 0, 0x10, 1]), Source::Static)));
        assert_eq!(t.watch.mismatches, 1);
        // The routed real server uses its router's MAC, from whichever source spoke last.
        assert_eq!(t.effective(RS2), None);
        t.learn(GW, MacAddr([2, 0, 0, 0, 0, 0xfe]), Source::Kernel, 2);
        assert_eq!(t.effective(RS2), Some((MacAddr([2, 0, 0, 0, 0, 0xfe]), Source::Kernel)));
        t.observe(&arp(1, [2, 0, 0, 0, 0, 0xfd], [192, 168, 10, 254]), 3);
        assert_eq!(t.effective(RS2), Some((MacAddr([2, 0, 0, 0, 0, 0xfd]), Source::Arp)));
        assert_eq!((t.counters.learned, t.counters.changed), (1, 1));
        // The kernel losing its entry does not forget what ARP said.
        t.kernel_lost(GW, 4);
        assert!(t.effective(RS2).is_some());
        t.learn(GW, MacAddr([2, 0, 0, 0, 0, 0xfe]), Source::Kernel, 5);
        t.kernel_lost(GW, 6);
        assert_eq!(t.effective(RS2), None);
        // A static entry for the router wins over what is learned for it.
        t.set_statics(BTreeMap::from([(Ipv4Addr::new(192, 168, 10, 254), MacAddr([2, 0, 0, 0, 0, 0xaa]))]));
        t.learn(GW, MacAddr([2, 0, 0, 0, 0, 0xfe]), Source::Kernel, 7);
        assert_eq!(t.effective(RS2), Some((MacAddr([2, 0, 0, 0, 0, 0xaa]), Source::Static)));
    }

    #[test]
    fn held_frames_go_with_the_learned_mac_or_are_dropped_counted() {
        let mut t = NeighborTable::new(BTreeMap::new());
        t.set_targets([(RS, RS)], 0);
        for i in 0..UNRES_QLEN + 3 {
            t.hold(RS, vec![vec![0; 6].into_iter().chain([i as u8; 54]).collect()], 0);
        }
        assert_eq!(t.counters.held, UNRES_QLEN as u64 + 3);
        assert_eq!(t.counters.unresolved_drops, 3, "the oldest went first");
        assert_eq!(t.reconcile(), (vec![], vec![]), "nothing known, nothing to send");
        t.learn(RS, MacAddr([2, 0, 0, 0, 0x10, 1]), Source::Arp, 1);
        let (changes, frames) = t.reconcile();
        assert_eq!(changes, vec![(RS, Some(MacAddr([2, 0, 0, 0, 0x10, 1])))]);
        assert_eq!(frames.len(), UNRES_QLEN);
        assert_eq!(frames[0][..7], [2, 0, 0, 0, 0x10, 1, 3], "destination set, oldest kept first");
        assert_eq!(t.reconcile(), (vec![], vec![]), "reported once");
        // The real server leaves the rules: the director forgets its MAC.
        t.set_targets([], 2);
        assert_eq!(t.reconcile().0, vec![(RS, None)]);
    }

    #[test]
    fn resolution_probes_retries_fails_and_refreshes() {
        let mut t = NeighborTable::new(BTreeMap::new());
        t.set_targets([(RS, RS)], 0);
        assert_eq!(t.due_probes(0), vec![Probe { ip: RS, known: None }]);
        assert!(t.due_probes(S / 2).is_empty(), "one a second");
        assert_eq!(t.due_probes(S).len(), 1);
        t.hold(RS, vec![vec![0; 60]], S);
        assert_eq!(t.due_probes(2 * S).len(), 1);
        assert!(t.due_probes(3 * S).is_empty(), "three unanswered: failed");
        assert_eq!((t.counters.failed, t.counters.unresolved_drops), (1, 1));
        assert_eq!(t.status().entries["192.168.10.1"].state, "failed");
        t.hold(RS, vec![vec![0; 60]], 3 * S);
        assert_eq!(t.counters.unresolved_drops, 2, "dropped at once while failed");
        assert_eq!(t.due_probes(3 * S + FAILED_RETRY_NS).len(), 1, "asked again later");
        t.learn(RS, MacAddr([2, 0, 0, 0, 0x10, 1]), Source::Arp, 9 * S);
        assert!(t.due_probes(10 * S).is_empty());
        // Refreshed after the reachable time, by unicast to the MAC it had, which stays in use.
        let p = t.due_probes(9 * S + REACHABLE_NS);
        assert_eq!(p, vec![Probe { ip: RS, known: Some(MacAddr([2, 0, 0, 0, 0x10, 1])) }]);
        assert_eq!(t.status().entries["192.168.10.1"].state, "stale");
        assert!(t.effective(RS).is_some());
    }

    #[test]
    fn floods_are_bounded() {
        let mut t = NeighborTable::new(BTreeMap::new());
        // ARP from addresses nobody asked about: nothing is created.
        for i in 0..10_000u32 {
            let ip = (0x0a00_0000u32 + i).to_be_bytes();
            t.observe(&arp(1, [2, 0, 0, 0, (i >> 8) as u8, i as u8], ip), 0);
        }
        assert!(t.entries.is_empty());
        // More real servers than the table holds: counted.
        let many: Vec<(IpAddr, IpAddr)> =
            (0..MAX_ENTRIES as u32 + 10).map(|i| IpAddr::from(Ipv4Addr::from(0xac10_0000 + i))).map(|ip| (ip, ip)).collect();
        t.set_targets(many, 0);
        assert_eq!(t.entries.len(), MAX_ENTRIES);
        assert_eq!(t.counters.table_full, 10);
        // Requests out are rate limited.
        let p = t.due_probes(0);
        assert_eq!(p.len(), ARP_PER_SEC as usize);
        assert!(t.counters.arp_limited > 0);
        // A broadcast or multicast sender MAC is refused.
        t.set_targets([(RS, RS)], 0);
        t.observe(&arp(2, [0xff; 6], [192, 168, 10, 1]), 1);
        t.observe(&arp(2, [1, 0, 0x5e, 0, 0, 1], [192, 168, 10, 1]), 1);
        t.observe(&arp(2, [2, 0, 0, 0, 0x10, 1], [192, 168, 10, 1])[..30], 1);
        assert_eq!(t.effective(RS), None);
        assert_eq!(t.counters.bad_input, 2);
    }

    #[test]
    fn the_gateway_is_a_target_of_its_own() {
        let mut t = NeighborTable::new(BTreeMap::new());
        let cgw4 = Ipv4Addr::new(10, 0, 0, 254);
        let cgw = IpAddr::V4(cgw4);
        t.set_gateway(Some(cgw4));
        t.set_targets([(RS, RS)], 0);
        assert!(t.tracks(cgw) && t.tracks(RS));
        assert_eq!(t.next_hop(cgw), Some(cgw));
        t.hold(cgw, vec![vec![0; 60]], 0);
        let st = t.status();
        assert_eq!((st.entries["10.0.0.254"].held, st.entries["10.0.0.254"].gateway), (1, true));
        assert!(!st.entries["192.168.10.1"].gateway);
        let json = serde_json::to_value(&st).unwrap();
        assert_eq!(json["entries"]["192.168.10.1"].get("gateway"), None, "only the gateway says so");
        // Towards a gateway whose address is unknown: dropped, counted, nothing asked.
        t.hold(Ipv4Addr::UNSPECIFIED.into(), vec![vec![0; 60]], 0);
        assert_eq!(t.counters.unresolved_drops, 1);
        assert!(!t.tracks(Ipv4Addr::UNSPECIFIED.into()));
        assert_eq!(t.due_probes(0).len(), 2, "the real server and the gateway");
        t.observe(&arp(2, [2, 0, 0, 0, 0, 0xfe], [10, 0, 0, 254]), 1);
        let (changes, frames) = t.reconcile();
        assert_eq!(changes, vec![(cgw, Some(MacAddr([2, 0, 0, 0, 0, 0xfe])))]);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0][..6], [2, 0, 0, 0, 0, 0xfe]);
        // No longer learned (a static gateway): untracked, and forgotten by the director.
        t.set_gateway(None);
        t.set_targets([(RS, RS)], 2);
        assert!(!t.tracks(cgw));
        assert_eq!(t.reconcile().0, vec![(cgw, None)]);
    }

    #[test]
    fn ipv6_next_hops_follow_the_same_rules() {
        let rs6: IpAddr = "2001:db8:1::1".parse().unwrap();
        let st6: IpAddr = "2001:db8:1::2".parse().unwrap();
        let via: IpAddr = "2001:db8:2::5".parse().unwrap();
        let router: IpAddr = "fe80::1".parse().unwrap();
        let mut t = NeighborTable::new(BTreeMap::new());
        t.set_statics6(BTreeMap::from([("2001:db8:1::2".parse().unwrap(), MacAddr([2, 0, 0, 0, 0x20, 2]))]));
        t.set_targets([(rs6, rs6), (st6, st6), (via, router), (RS, RS)], 0);
        assert!(t.tracks(rs6) && t.tracks(router) && t.tracks(RS));
        assert!(!t.tracks(st6), "a static IPv6 real server is not resolved");
        assert_eq!(t.effective(st6), Some((MacAddr([2, 0, 0, 0, 0x20, 2]), Source::Static)));
        let mut probes: Vec<IpAddr> = t.due_probes(0).into_iter().map(|p| p.ip).collect();
        probes.sort_unstable();
        assert_eq!(probes, vec![RS, rs6, router]);
        // Frames held on the IPv6 real server go once the kernel gives its MAC.
        t.hold(rs6, vec![vec![0; 60]], 0);
        t.learn(rs6, MacAddr([2, 0, 0, 0, 0x20, 1]), Source::Kernel, 1);
        t.learn(router, MacAddr([2, 0, 0, 0, 0x20, 0xfe]), Source::Kernel, 1);
        let (changes, frames) = t.reconcile();
        assert_eq!(
            changes,
            vec![(rs6, Some(MacAddr([2, 0, 0, 0, 0x20, 1]))), (via, Some(MacAddr([2, 0, 0, 0, 0x20, 0xfe])))],
            "a static real server is the director's own business"
        );
        assert_eq!((frames.len(), &frames[0][..6]), (1, &[2, 0, 0, 0, 0x20, 1][..]));
        // The kernel losing its entry: forgotten, resolved again.
        t.kernel_lost(rs6, 2);
        assert_eq!(t.reconcile().0, vec![(rs6, None)]);
        let st = t.status();
        assert_eq!(st.entries["2001:db8:1::1"].state, "incomplete");
        assert_eq!((st.entries["2001:db8:2::5"].next_hop.as_str(), st.entries["2001:db8:1::2"].source), ("fe80::1", Some("static")));
    }

    #[test]
    fn arp_requests_are_byte_exact() {
        let f = arp_request(MacAddr([2, 0, 0, 0, 0, 1]), Ipv4Addr::new(10, 0, 0, 1), RS4, None);
        let mut want = vec![0xff; 6];
        want.extend_from_slice(&[2, 0, 0, 0, 0, 1, 8, 6, 0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 192, 168, 10, 1]);
        want.resize(60, 0);
        assert_eq!(f, want);
        let u = arp_request(MacAddr([2, 0, 0, 0, 0, 1]), Ipv4Addr::new(10, 0, 0, 1), RS4, Some(MacAddr([2, 0, 0, 0, 0x10, 1])));
        assert_eq!(u[..6], [2, 0, 0, 0, 0x10, 1]);
        assert_eq!(u[6..], want[6..]);
    }
}
