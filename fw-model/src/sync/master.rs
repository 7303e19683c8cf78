//! The master's rules (`ip_vs_sync_conn`, `ip_vs_sync_conn_needed`, the
//! sync buffer queue of ip_vs_sync.c, v6.1) as a pure state machine over
//! the golden model's connection events: no sockets, no clock of its own.
//!
//! Events: [`SyncMaster::in_packet`] for every packet of a connection in
//! the client-to-server direction (the kernel calls `ip_vs_sync_conn` from
//! `ip_vs_in_hook` after the state transition, with `pkts` = the
//! connection's incremented `in_pkts`, or `sync_threshold` for one-packet
//! connections), and [`SyncMaster::expire_later`] when an entry's timer
//! fires while it still controls connections (`ip_vs_conn_expire`'s
//! delayed path). Messages come out of [`SyncMaster::poll`].
//!
//! Time is model time; the kernel's jiffies are taken at HZ = 1000
//! (1 jiffy = 1 ms), so `sync_endtime` and its two low "retries" bits work
//! as in the kernel.

use super::{MessageBuilder, SyncConn};
use crate::conn::{flags as cf, tcp::state as ts, Conn, ConnId, ConnTable, NIL};
use crate::time::{Time, MSEC};
use std::collections::{HashMap, VecDeque};

/// `IPVS_SYNC_FLUSH_TIME`: the current buffer is sent when this old.
pub const SYNC_FLUSH_TIME: Time = 2000 * MSEC;

/// The sync sysctls (`net.ipv4.vs.sync_*`), kernel defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncSysctl {
    /// `sync_threshold[0]` (3).
    pub sync_threshold: u32,
    /// `sync_threshold[1]`, the sync period (50).
    pub sync_period: u32,
    /// `sync_refresh_period`, ms (0: off).
    pub sync_refresh_period_ms: u64,
    /// `sync_retries` (0..=3, default 0).
    pub sync_retries: u32,
    /// `sync_qlen_max`: messages waiting to be sent (the kernel's default
    /// is a memory fraction; here a fixed number).
    pub sync_qlen_max: usize,
    /// `sync_persist_mode`: connections under a persistence template are
    /// not synced, only their templates.
    pub sync_persist_mode: bool,
}

impl Default for SyncSysctl {
    fn default() -> Self {
        SyncSysctl {
            sync_threshold: 3,
            sync_period: 50,
            sync_refresh_period_ms: 0,
            sync_retries: 0,
            sync_qlen_max: 4096,
            sync_persist_mode: false,
        }
    }
}

/// The per-connection fields the kernel keeps for sync (`in_pkts`,
/// `old_state`, `sync_endtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnSyncState {
    /// Packets in the client-to-server direction (`cp->in_pkts`).
    pub in_pkts: u32,
    /// State at the last sync (`cp->old_state`).
    pub old_state: u8,
    /// Jiffies (ms); low 2 bits: retries.
    pub sync_endtime: u64,
}

impl ConnSyncState {
    /// As `ip_vs_conn_new` leaves them at jiffy `now`.
    pub fn new(now: u64) -> Self {
        ConnSyncState { in_pkts: 0, old_state: 0, sync_endtime: now & !3 }
    }
}

fn synced_tcp_state(s: u8) -> bool {
    matches!(s, ts::ESTABLISHED | ts::FIN_WAIT | ts::CLOSE | ts::CLOSE_WAIT | ts::TIME_WAIT)
}

/// `ip_vs_sync_conn_needed` at jiffy `now` (ms) for `c` with `pkts`.
/// `in_persistence`: `c` is controlled by a template.
pub fn sync_conn_needed(cfg: &SyncSysctl, now: u64, c: &Conn, st: &mut ConnSyncState, pkts: u32, in_persistence: bool) -> bool {
    let orig = st.sync_endtime;
    let timeout = c.timeout_ms as u64;
    let mut n = now.wrapping_add(timeout) & !3;
    // A TCP state change (other than to ESTABLISHED) is sent at once
    // ("force"); after `set:` the kernel's cmpxchg cannot fail here (one
    // writer), so the answer is then always yes.
    let mut set = false;
    if c.flags & cf::TEMPLATE != 0 {
        // templates: rate limited only by the refresh period
    } else if cfg.sync_persist_mode && in_persistence {
        return false;
    } else if c.proto == 6 {
        if !synced_tcp_state(c.state) {
            return false;
        }
        set = c.state != st.old_state && c.state != ts::ESTABLISHED;
    }
    if !set {
        let refresh = cfg.sync_refresh_period_ms;
        if refresh > 0 {
            let diff = n.wrapping_sub(orig) as i64;
            let min_diff = (timeout >> 1).max(10_000) as i64;
            if diff.unsigned_abs() < (refresh as i64).min(min_diff) as u64 {
                let retries = (orig & 3) as u32;
                if retries >= cfg.sync_retries {
                    return false;
                }
                // time_before(now, orig - timeout + refresh/8)
                let due = orig.wrapping_sub(timeout).wrapping_add(refresh >> 3);
                if (now.wrapping_sub(due) as i64) < 0 {
                    return false;
                }
                n |= retries as u64 + 1;
            }
        }
        if cfg.sync_period > 0 {
            if c.flags & cf::TEMPLATE == 0 && pkts % cfg.sync_period != cfg.sync_threshold {
                return false;
            }
        } else if refresh == 0 && pkts != cfg.sync_threshold {
            return false;
        }
    }
    st.old_state = c.state;
    st.sync_endtime = n;
    true
}

/// The entry `ip_vs_sync_conn` writes for entry `id` of `conns` (timeout
/// in whole seconds; an IPv6 entry's addresses in full).
pub fn sync_conn_of(conns: &ConnTable, id: ConnId) -> SyncConn {
    let c = conns.get(id);
    let a = conns.addrs(id);
    SyncConn {
        protocol: c.proto,
        flags: (c.flags & !cf::HASHED) as u32,
        state: c.state as u16,
        cport: c.cport,
        vport: c.vport,
        dport: c.dport,
        fwmark: 0,
        timeout: c.timeout_ms / 1000,
        caddr: a.caddr,
        vaddr: a.vaddr,
        daddr: a.daddr,
        ..Default::default()
    }
}

/// The master's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MasterCounters {
    /// Entries written into messages.
    pub conns_synced: u64,
    /// Messages handed out by [`SyncMaster::poll`].
    pub messages: u64,
    /// Messages dropped because the queue held `sync_qlen_max`.
    pub queue_full: u64,
}

type ConnKey = (u8, u32, u16, u32, u16, u32, u16, bool);

fn key_of(c: &Conn) -> ConnKey {
    (c.proto, c.caddr, c.cport, c.vaddr, c.vport, c.daddr, c.dport, c.is_template())
}

/// The master sync state: per-connection sync fields, the current buffer
/// and the send queue.
#[derive(Debug)]
pub struct SyncMaster {
    /// The sysctls it follows.
    pub cfg: SyncSysctl,
    /// Syncid written in every message.
    pub syncid: u8,
    /// `sync_maxlen`: largest message.
    pub maxlen: usize,
    per_conn: HashMap<ConnId, (ConnKey, ConnSyncState)>,
    cur: Option<(MessageBuilder, Time)>,
    queue: VecDeque<Vec<u8>>,
    /// When the per-connection fields were last pruned.
    last_prune: Time,
    /// Counters.
    pub counters: MasterCounters,
}

fn jiffies(t: Time) -> u64 {
    t / MSEC
}

impl SyncMaster {
    /// No connection seen yet, no buffer.
    pub fn new(cfg: SyncSysctl, syncid: u8, maxlen: usize) -> Self {
        SyncMaster {
            cfg,
            syncid,
            maxlen,
            per_conn: HashMap::new(),
            cur: None,
            queue: VecDeque::new(),
            last_prune: 0,
            counters: MasterCounters::default(),
        }
    }

    /// The sync fields of connection `id` (created at first sight, as
    /// `ip_vs_conn_new` would have at that jiffy).
    pub fn state_of(&mut self, now: Time, conns: &ConnTable, id: ConnId) -> &mut ConnSyncState {
        let k = key_of(conns.get(id));
        let e = self.per_conn.entry(id).or_insert((k, ConnSyncState::new(jiffies(now))));
        if e.0 != k {
            *e = (k, ConnSyncState::new(jiffies(now)));
        }
        &mut e.1
    }

    /// A packet of connection `id` in the client-to-server direction, after
    /// its state transition (`ip_vs_in_hook`).
    /// Returns whether `id` itself was written.
    pub fn in_packet(&mut self, now: Time, conns: &ConnTable, id: ConnId) -> bool {
        let c = *conns.get(id);
        let pkts = if c.flags & cf::ONE_PACKET != 0 {
            self.cfg.sync_threshold
        } else {
            let st = self.state_of(now, conns, id);
            st.in_pkts = st.in_pkts.wrapping_add(1);
            st.in_pkts
        };
        self.sync_conn(now, conns, id, pkts)
    }

    /// `ip_vs_conn_expire` postponing an entry that still controls
    /// connections: it is synced with `pkts = sync_threshold`.
    pub fn expire_later(&mut self, now: Time, conns: &ConnTable, id: ConnId) {
        let t = self.cfg.sync_threshold;
        self.sync_conn(now, conns, id, t);
    }

    /// `ip_vs_sync_conn` (version 1): `id`, then its controlling template
    /// (`cp->control`), each if its rules say so. Returns whether `id`
    /// itself was written.
    pub fn sync_conn(&mut self, now: Time, conns: &ConnTable, id: ConnId, pkts: u32) -> bool {
        let mut cur = id;
        let mut pkts = pkts;
        let mut first = true;
        let mut wrote = false;
        loop {
            let c = *conns.get(cur);
            // A connection to a real server of the other family has no
            // entry in the protocol (one family per entry): the kernel
            // refuses to run a sync daemon while such a server exists
            // (`mixed_address_family_dests`), so none is ever offered.
            let skip = (first && c.flags & cf::ONE_PACKET != 0) || c.af != c.daf;
            if !skip {
                let in_persistence = in_persistence(conns, &c);
                let cfg = self.cfg;
                let st = self.state_of(now, conns, cur);
                if sync_conn_needed(&cfg, jiffies(now), &c, st, pkts, in_persistence) {
                    self.append(now, &sync_conn_of(conns, cur));
                    wrote |= first;
                }
            }
            first = false;
            if c.control == NIL || !conns.is_live(ConnId(c.control)) {
                return wrote;
            }
            cur = ConnId(c.control);
            let t = *conns.get(cur);
            pkts = if t.flags & cf::TEMPLATE != 0 {
                let st = self.state_of(now, conns, cur);
                st.in_pkts = st.in_pkts.wrapping_add(1);
                st.in_pkts
            } else {
                self.cfg.sync_threshold
            };
        }
    }

    /// Writes one entry into the current buffer, queueing the buffer first
    /// when the entry does not fit.
    fn append(&mut self, now: Time, e: &SyncConn) {
        let len = e.v1_len();
        if self.cur.as_ref().is_some_and(|(b, _)| !b.fits(len)) {
            self.queue_current();
        }
        let (b, _) = self.cur.get_or_insert_with(|| (MessageBuilder::new(self.syncid, self.maxlen, len), now));
        b.push(e);
        self.counters.conns_synced += 1;
    }

    /// `sb_queue_tail`: the current buffer joins the queue, or is dropped
    /// when the queue is full.
    fn queue_current(&mut self) {
        if let Some((b, _)) = self.cur.take() {
            if self.queue.len() < self.cfg.sync_qlen_max {
                self.queue.push_back(b.finish());
            } else {
                self.counters.queue_full += 1;
            }
        }
    }

    /// Messages to send at `now`: every queued one, then the current buffer
    /// if it is [`SYNC_FLUSH_TIME`] old (`next_sync_buff`). Also forgets the
    /// sync fields of connections that are gone (at most once a second).
    pub fn poll(&mut self, now: Time, conns: &ConnTable) -> Vec<Vec<u8>> {
        if self.cur.as_ref().is_some_and(|(_, first)| now.saturating_sub(*first) >= SYNC_FLUSH_TIME) {
            let (b, _) = self.cur.take().unwrap_or_else(|| unreachable!());
            self.queue.push_back(b.finish());
        }
        if now.saturating_sub(self.last_prune) >= 1000 * MSEC {
            self.last_prune = now;
            self.per_conn.retain(|id, (k, _)| conns.is_live(*id) && key_of(conns.get(*id)) == *k);
        }
        let out: Vec<Vec<u8>> = self.queue.drain(..).collect();
        self.counters.messages += out.len() as u64;
        out
    }

    /// The current buffer, whatever its age (for a caller whose clock runs
    /// while the model's stands still).
    pub fn flush_current(&mut self) -> Option<Vec<u8>> {
        let (b, _) = self.cur.take()?;
        self.counters.messages += 1;
        Some(b.finish())
    }

    /// Entries waiting in the current (not yet full) buffer.
    pub fn pending_conns(&self) -> usize {
        self.cur.as_ref().map_or(0, |(b, _)| b.nr_conns())
    }
}

/// `in_persistence`: some entry up the control chain is a template.
fn in_persistence(conns: &ConnTable, c: &Conn) -> bool {
    let mut ctl = c.control;
    let mut hops = 0;
    while ctl != NIL && conns.is_live(ConnId(ctl)) && hops < 8 {
        let t = conns.get(ConnId(ctl));
        if t.flags & cf::TEMPLATE != 0 {
            return true;
        }
        ctl = t.control;
        hops += 1;
    }
    false
}

/// `sync_maxlen` of a daemon (`start_sync_thread`): `--sync-maxlen`
/// clamped to `[1 (master) | 1024 (backup), 65535 - hlen]`, else the MTU
/// (1500 for a master, the interface's clamped to 1500..=65535 for a
/// backup) less hlen, the IP and UDP headers of the sync group's family
/// (IPv4 28, IPv6 48).
pub fn sync_maxlen(backup: bool, requested: Option<u16>, if_mtu: u32, ipv6_group: bool) -> u32 {
    let hlen = if ipv6_group { 40 + 8 } else { 20 + 8 };
    let mtu = if backup { if_mtu.clamp(1500, 65535) } else { 1500 };
    let min = if backup { 1024 } else { 1 };
    match requested {
        Some(l) if l != 0 => (l as u32).clamp(min, 65535 - hlen),
        _ => mtu - hlen,
    }
}
