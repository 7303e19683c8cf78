//! The backup's rules (`ip_vs_proc_conn`, ip_vs_sync.c v6.1): a decoded
//! entry, IPv4 or IPv6, creates or updates a connection or template in the
//! golden model's [`ConnTable`](crate::conn::ConnTable), bound to the real
//! server `ip_vs_find_dest` finds (or unbound when there is none), with
//! the message's state and timeout.

use super::{cflags, decode, DropReason, SyncConn};
use crate::conn::{flags as cf, tcp, Conn, ConnAddrs, ConnId, NIL};
use crate::director::Director;
use crate::ipvs::DestId;
use crate::time::{Time, MSEC, SEC};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// What [`proc_conn`] did with one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Installed {
    /// A new entry was created.
    Created(ConnId),
    /// An existing entry was updated.
    Updated(ConnId),
    /// An expiration message for a connection already replaced here
    /// (other real server, `IP_VS_CONN_F_INACTIVE`): ignored.
    Ignored,
}

impl Installed {
    /// The entry created or updated.
    pub fn id(self) -> Option<ConnId> {
        match self {
            Installed::Created(id) | Installed::Updated(id) => Some(id),
            Installed::Ignored => None,
        }
    }
}

/// The backup's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BackupCounters {
    /// Datagrams received.
    pub messages: u64,
    /// Entries that created a connection or template.
    pub created: u64,
    /// Entries that updated one.
    pub updated: u64,
    /// Expiration messages for connections already replaced.
    pub ignored: u64,
    /// Entries created without a real server (none matched).
    pub unbound: u64,
    /// Drops by reason name (whole messages, rests of messages, entries).
    pub dropped: BTreeMap<&'static str, u64>,
}

impl BackupCounters {
    /// Counts a drop.
    pub fn drop(&mut self, r: DropReason) {
        *self.dropped.entry(r.name()).or_default() += 1;
    }

    /// Total drops.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }
}

/// `ip_vs_find_dest` for an entry without fwmark: the service of
/// `(protocol, vaddr, vport)`, then its real server `daddr:dport` (of the
/// entry's family: a sync entry has one family, `ip_vs_find_dest(ipvs,
/// type, type, ...)`).
pub fn find_dest(d: &Director, c: &SyncConn) -> Option<DestId> {
    if c.fwmark != 0 {
        return None; // fwmark services are not supported by this director
    }
    let svc = d.services.find_addr(c.protocol, c.vaddr, c.vport)?;
    d.services.service(svc).order.iter().copied().find(|&id| {
        let r = d.services.dest(id);
        r.addr == c.daddr && r.port == c.dport
    })
}

/// `ip_vs_conn_in_get` (a connection) or `ip_vs_ct_in_get` (a template)
/// for the entry's `<protocol, caddr, cport, vaddr, vport>`, in the table
/// of its family. An entry whose client and virtual addresses differ in
/// family matches nothing.
fn lookup(d: &Director, c: &SyncConn) -> Option<ConnId> {
    let t = &d.conns;
    match (c.caddr, c.vaddr, c.is_template()) {
        (IpAddr::V4(ca), IpAddr::V4(va), false) => t.in_get(c.protocol, u32::from(ca), c.cport, u32::from(va), c.vport),
        (IpAddr::V4(ca), IpAddr::V4(va), true) => t.ct_in_get(c.protocol, u32::from(ca), c.cport, u32::from(va), c.vport),
        (IpAddr::V6(ca), IpAddr::V6(va), false) => t.in_get6(c.protocol, &ca, c.cport, &va, c.vport),
        (IpAddr::V6(ca), IpAddr::V6(va), true) => t.ct_in_get6(c.protocol, &ca, c.cport, &va, c.vport),
        _ => None,
    }
}

/// Whether connection `id` goes to another real server than entry `c`
/// names (`cp->dport != dport || !ip_vs_addr_equal(cp->daf, &cp->daddr, daddr)`).
fn other_server(d: &Director, id: ConnId, c: &SyncConn) -> bool {
    d.conns.get(id).dport != c.dport || d.conns.addrs(id).daddr != c.daddr
}

/// `ip_vs_proc_conn` for one decoded entry, at the director's current time.
/// `sync_threshold` is what `in_pkts` would be set to (kept by callers that
/// may become master).
pub fn proc_conn(d: &mut Director, c: &SyncConn) -> Installed {
    let flags = c.flags;
    let template = flags & cf::TEMPLATE as u32 != 0;
    let mut found = if !template {
        match lookup(d, c) {
            Some(id) if other_server(d, id, c) => {
                if flags & cf::INACTIVE as u32 == 0 {
                    d.expire_now(id);
                    None
                } else {
                    return Installed::Ignored;
                }
            }
            other => other,
        }
    } else {
        lookup(d, c)
    };
    let result = match found.take() {
        Some(id) => {
            let cur = *d.conns.get(id);
            let changed = (cur.flags as u32 ^ flags) & cf::INACTIVE as u32 != 0;
            if changed && !template && cur.dest != NIL {
                let dest = &mut d.services.dests[cur.dest as usize];
                if flags & cf::INACTIVE as u32 != 0 {
                    dest.activeconns -= 1;
                    dest.inactconns += 1;
                } else {
                    dest.activeconns += 1;
                    dest.inactconns -= 1;
                }
            }
            let nf = (flags & cflags::BACKUP_UPD_MASK) | (cur.flags as u32 & !cflags::BACKUP_UPD_MASK);
            d.conns.get_mut(id).flags = nf as u16;
            if cur.dest == NIL {
                // ip_vs_try_bind_dest
                if let Some(dest) = find_dest(d, c) {
                    let mut cm = *d.conns.get(id);
                    d.bind_dest(&mut cm, dest);
                    *d.conns.get_mut(id) = cm;
                }
            }
            Installed::Updated(id)
        }
        None => {
            // ip_vs_conn_new(param, type, daddr, ...): the address fields
            // are filled from `addrs` (IPv4 ones as they are, IPv6 ones
            // beside the record).
            let dest = find_dest(d, c);
            let mut cm = Conn::new(c.protocol, 0, c.cport, 0, c.vport, 0, c.dport, flags as u16);
            if let Some(dest) = dest {
                d.bind_dest(&mut cm, dest);
            }
            let addrs = ConnAddrs { caddr: c.caddr, vaddr: c.vaddr, daddr: c.daddr };
            Installed::Created(d.insert_conn_addrs(cm, addrs))
        }
    };
    let id = result.id().unwrap_or_else(|| unreachable!());
    let timeout: Time = if c.timeout != 0 {
        c.timeout as Time * SEC
    } else if !template && c.protocol == 6 {
        d.cfg.timeouts.tcp.0[(c.state as usize).min(tcp::TCP_STATES - 1)]
    } else if !template && c.protocol == 17 {
        d.cfg.timeouts.udp
    } else {
        180 * SEC
    };
    let now = d.now();
    let cm = d.conns.get_mut(id);
    cm.state = c.state as u8;
    cm.set_timeout(timeout);
    let t = cm.timeout_ms as Time * MSEC;
    let at = d.timer_at(now, t, false);
    d.conns.arm(id, at);
    result
}

/// Whether [`proc_conn`] would create an entry for `c` (none matches its
/// addresses, or an active entry names another real server and replaces
/// the one there), rather than update one or ignore `c`.
pub fn creates(d: &Director, c: &SyncConn) -> bool {
    match lookup(d, c) {
        None => true,
        Some(_) if c.is_template() => false,
        Some(id) => other_server(d, id, c) && c.flags & cf::INACTIVE as u32 == 0,
    }
}

/// Decodes one datagram for a backup with `syncid` and installs what it
/// carries; counts everything in `counters`. Returns the entries created
/// or updated (for the offload path).
pub fn receive(d: &mut Director, buf: &[u8], syncid: u8, counters: &mut BackupCounters) -> Vec<ConnId> {
    receive_with(d, buf, syncid, counters, |_, _| Ok(()))
}

/// [`receive`], asking `admit` first about each decoded entry that would
/// create a connection or template ([`creates`]); an entry it refuses
/// (`Err(counter name)`) is counted under that name in
/// [`BackupCounters::dropped`] and not installed. Updates are not asked.
pub fn receive_with(
    d: &mut Director,
    buf: &[u8],
    syncid: u8,
    counters: &mut BackupCounters,
    mut admit: impl FnMut(&Director, &SyncConn) -> Result<(), &'static str>,
) -> Vec<ConnId> {
    counters.messages += 1;
    let m = decode(buf, syncid);
    let mut ids = Vec::new();
    for c in &m.conns {
        if creates(d, c) {
            if let Err(name) = admit(d, c) {
                *counters.dropped.entry(name).or_default() += 1;
                continue;
            }
        }
        match proc_conn(d, c) {
            Installed::Created(id) => {
                counters.created += 1;
                if d.conns.get(id).dest == NIL {
                    counters.unbound += 1;
                }
                ids.push(id);
            }
            Installed::Updated(id) => {
                counters.updated += 1;
                ids.push(id);
            }
            Installed::Ignored => counters.ignored += 1,
        }
    }
    for r in m.skipped {
        counters.drop(r);
    }
    if let Some(r) = m.dropped {
        counters.drop(r);
    }
    ids
}
