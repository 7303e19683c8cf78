//! The IPVS connection table (`net/netfilter/ipvs/ip_vs_conn.c`), sized for
//! millions of entries.
//!
//! Like the kernel's, one hash table holds connections *and* persistence
//! templates, all keyed by `(protocol, client address, client port)`
//! (`ip_vs_conn_hashkey_conn`), so a request lookup ([`ConnTable::in_get`]),
//! a reply lookup ([`ConnTable::out_get`], hashed on the reply's destination)
//! and a template lookup ([`ConnTable::ct_in_get`]) walk the same chains. New
//! entries go to the head of their chain (`hlist_add_head_rcu`), so the
//! newest entry wins when two match.
//!
//! Storage is a slab of fixed-size [`Conn`] records (64 bytes) with `u32`
//! links; the bucket array holds `u32` heads. Timers are one min-heap entry
//! per connection, re-armed lazily: a packet only moves `Conn::expires`,
//! and when the heap entry comes due with a later `expires` it is pushed
//! again. Memory per connection is measured by the `conn_table` benchmark.

pub mod tcp;
pub mod timer;

use timer::TimerQueue;

use crate::time::Time;
use std::cmp::Reverse;
use std::net::{IpAddr, Ipv6Addr};

/// Connection flags (`IP_VS_CONN_F_*`, include/uapi/linux/ip_vs.h).
pub mod flags {
    /// `IP_VS_CONN_F_FWD_MASK`: the bits holding the forwarding method.
    pub const FWD_MASK: u16 = 0x0007;
    /// `IP_VS_CONN_F_MASQ`: forwarding method NAT (masquerading).
    pub const MASQ: u16 = 0x0000;
    /// `IP_VS_CONN_F_LOCALNODE`: forwarding method local (the real server
    /// is the director itself).
    pub const LOCALNODE: u16 = 0x0001;
    /// `IP_VS_CONN_F_TUNNEL`: forwarding method IPIP tunnel.
    pub const TUNNEL: u16 = 0x0002;
    /// `IP_VS_CONN_F_DROUTE`: forwarding method direct routing.
    pub const DROUTE: u16 = 0x0003;
    /// `IP_VS_CONN_F_BYPASS`: cache bypass (packets go to their original
    /// destination).
    pub const BYPASS: u16 = 0x0004;
    /// `IP_VS_CONN_F_SYNC`: entry created from a sync message (backup).
    pub const SYNC: u16 = 0x0020;
    /// `IP_VS_CONN_F_HASHED`: entry is in the hash table; here also marks a
    /// live slab slot.
    pub const HASHED: u16 = 0x0040;
    /// `IP_VS_CONN_F_NOOUTPUT`: no reply packet seen yet.
    pub const NOOUTPUT: u16 = 0x0080;
    /// `IP_VS_CONN_F_INACTIVE`: connection not established (counted in the
    /// real server's `inactconns`).
    pub const INACTIVE: u16 = 0x0100;
    /// `IP_VS_CONN_F_NO_CPORT`: client port not set yet (template of a
    /// port-0 persistent service).
    pub const NO_CPORT: u16 = 0x0800;
    /// `IP_VS_CONN_F_TEMPLATE`: a persistence template, not a connection.
    pub const TEMPLATE: u16 = 0x1000;
    /// `IP_VS_CONN_F_ONE_PACKET`: forward one packet only, keep no
    /// connection (`ipvsadm -o`).
    pub const ONE_PACKET: u16 = 0x2000;
}

/// `AF_INET`: [`Conn::af`] of an IPv4 entry.
pub const AF_INET: u8 = 2;
/// `AF_INET6`: [`Conn::af`] of an IPv6 entry.
pub const AF_INET6: u8 = 10;

/// The addresses of an entry with an IPv6 side (`cp->caddr`, `cp->vaddr`
/// of family `cp->af`, `cp->daddr` of family `cp->daf`), kept beside the
/// slab: the [`Conn`] holds IPv4 addresses as they are and IPv6 ones as
/// their 32-bit folds ([`crate::sched::hash::addr_fold`]) in its `u32`
/// fields, so the record keeps its size and IPv4-only entries pay nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnAddrs {
    /// Client address.
    pub caddr: IpAddr,
    /// Virtual address (the client's family).
    pub vaddr: IpAddr,
    /// Real server address (its own family: a tunnel may cross families).
    pub daddr: IpAddr,
}

/// The `u32` a [`Conn`] holds for an address: an IPv4 address itself, the
/// fold of an IPv6 one.
#[inline]
fn held(a: &IpAddr) -> u32 {
    crate::sched::hash::addr_fold(a)
}

/// The 32-bit fold of an IPv6 address (what an IPv6 [`Conn`] holds).
#[inline]
pub fn fold6(a: &std::net::Ipv6Addr) -> u32 {
    crate::sched::hash::addr_fold(&std::net::IpAddr::V6(*a))
}

/// Index of a connection in the table's slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u32);

/// "No link" value for `u32` links.
pub const NIL: u32 = u32::MAX;

/// `Conn::expires` of an entry whose timer is not armed yet.
pub const UNARMED: Time = Time::MAX;

/// One connection or persistence template (`struct ip_vs_conn`, reduced to
/// what the model needs). Addresses are IPv4 in host byte order
/// (`u32::from(Ipv4Addr)`); for an IPv6 entry ([`af`](Self::af)
/// [`AF_INET6`]) they are folds, and the addresses themselves are in the
/// table ([`ConnTable::v6_addrs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Conn {
    /// Client address (`cp->caddr`).
    pub caddr: u32,
    /// Virtual address, the VIP (`cp->vaddr`).
    pub vaddr: u32,
    /// Real server address (`cp->daddr`).
    pub daddr: u32,
    /// Client port (`cp->cport`; 0 in a template with `NO_CPORT`).
    pub cport: u16,
    /// Virtual port (`cp->vport`).
    pub vport: u16,
    /// Real server port (`cp->dport`).
    pub dport: u16,
    /// `IP_VS_CONN_F_*`.
    pub flags: u16,
    /// IP protocol (6, 17; 0 = IPPROTO_IP for fwmark templates).
    pub proto: u8,
    /// Protocol state (TCP: [`tcp::state`]; UDP: 0 = "UDP").
    pub state: u8,
    /// Address family of the client side (`cp->af`): [`AF_INET`] or
    /// [`AF_INET6`].
    pub af: u8,
    /// Address family of the real server (`cp->daf`): differs from
    /// [`af`](Self::af) only for a tunnel across families.
    pub daf: u8,
    /// Real server (`DestId.0`), or [`NIL`].
    pub dest: u32,
    /// Controlling template (`cp->control`), or [`NIL`].
    pub control: u32,
    /// Connections this template controls (`cp->n_control`).
    pub n_control: u32,
    /// Current timeout in milliseconds (`cp->timeout`).
    pub timeout_ms: u32,
    /// When the timer fires (`cp->timer.expires`), ns.
    pub expires: Time,
    /// Hash chain link when live; free-list link when free.
    next: u32,
    /// Bumped on every allocation so stale heap entries are recognised.
    gen: u32,
    /// Arm order of the current deadline: among timers due at the same
    /// time, the most recently armed runs first, as in the kernel's timer
    /// wheel (`hlist_add_head` on enqueue, `head->first` on expiry).
    seq: u32,
}

impl Conn {
    /// A blank entry for a new connection: state NONE, 3 s timeout
    /// (`ip_vs_conn_new`).
    pub fn new(proto: u8, caddr: u32, cport: u16, vaddr: u32, vport: u16, daddr: u32, dport: u16, flags: u16) -> Self {
        Conn {
            caddr,
            vaddr,
            daddr,
            cport,
            vport,
            dport,
            flags,
            proto,
            state: 0,
            af: AF_INET,
            daf: AF_INET,
            dest: NIL,
            control: NIL,
            n_control: 0,
            timeout_ms: 3000,
            expires: UNARMED,
            next: NIL,
            gen: 0,
            seq: 0,
        }
    }

    /// Whether this is an IPv6 entry (client side).
    #[inline]
    pub fn is_v6(&self) -> bool {
        self.af == AF_INET6
    }

    /// Whether every address of the entry is IPv4 (its `u32` fields are
    /// the addresses themselves).
    #[inline]
    pub fn is_v4_only(&self) -> bool {
        self.af == AF_INET && self.daf == AF_INET
    }

    /// Whether this is a persistence template (`IP_VS_CONN_F_TEMPLATE`).
    pub fn is_template(&self) -> bool {
        self.flags & flags::TEMPLATE != 0
    }

    /// Forwarding method bits (`IP_VS_FWD_METHOD`).
    pub fn fwd(&self) -> u16 {
        self.flags & flags::FWD_MASK
    }

    /// Timeout as [`Time`].
    pub fn timeout(&self) -> Time {
        self.timeout_ms as Time * crate::time::MSEC
    }

    /// Sets the timeout from a [`Time`] (saturating at u32::MAX ms, ~49 days).
    pub fn set_timeout(&mut self, t: Time) {
        self.timeout_ms = (t / crate::time::MSEC).min(u32::MAX as u64) as u32;
    }
}

/// Hash of the `(protocol, client address, client port)` key.
#[inline]
fn hash_key(proto: u8, caddr: u32, cport: u16, seed: u64) -> u64 {
    let k = ((caddr as u64) << 32) | ((cport as u64) << 16) | proto as u64;
    let mut h = (k ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 32)
}

/// Chains moved to the new heads per insert while the table doubles:
/// the doubling ends after an eighth as many inserts as it has chains,
/// long before the next one.
const GROW_STEP: usize = 8;

/// The table doubles its chain heads when the entries would exceed
/// `1 / MAX_LOAD_INV` of them. A hit visits `1 + load / 2` entries on
/// average, each a random access into the slab (a cache and TLB miss at a
/// million connections): at a load of at most 1/2 that is 1.25 entries
/// instead of 1.5 at a load of 1, for 4 more bytes per connection.
const MAX_LOAD_INV: usize = 2;

/// The connection table.
#[derive(Debug)]
pub struct ConnTable {
    slab: Vec<Conn>,
    free_head: u32,
    /// The chain heads (`mask + 1` of them).
    buckets: Vec<u32>,
    mask: u64,
    /// While the table doubles: the chain heads before, moved into
    /// `buckets` a few per insert ([`GROW_STEP`]) so that no single insert
    /// rehashes the whole table (at 1M → 2M connections that held the
    /// forwarding loop 60-95 ms). Chains of `old` from `moved` on are still
    /// there; those before it are in `buckets`. Empty when not doubling.
    old: Vec<u32>,
    moved: usize,
    seed: u64,
    live: usize,
    timers: TimerQueue,
    arm_seq: u32,
    /// Addresses of the entries with an IPv6 side, by slab index.
    v6: std::collections::HashMap<u32, ConnAddrs>,
}

impl Default for ConnTable {
    fn default() -> Self {
        Self::with_capacity(1024)
    }
}

impl ConnTable {
    /// A table pre-sized for `capacity` entries (it grows beyond that).
    pub fn with_capacity(capacity: usize) -> Self {
        let nb = (capacity.max(16) * MAX_LOAD_INV).next_power_of_two();
        ConnTable {
            slab: Vec::with_capacity(capacity),
            free_head: NIL,
            buckets: vec![NIL; nb],
            mask: (nb - 1) as u64,
            old: Vec::new(),
            moved: 0,
            seed: 0x5EED_1F5E_ED00_0001,
            live: 0,
            timers: TimerQueue::new(),
            arm_seq: 0,
            v6: std::collections::HashMap::new(),
        }
    }

    /// Number of live entries (connections + templates).
    pub fn len(&self) -> usize {
        self.live
    }

    /// No live entry.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes of memory held by the table (slab, buckets, timer heap), for the
    /// bytes-per-connection measurement.
    pub fn memory_bytes(&self) -> usize {
        self.slab.capacity() * std::mem::size_of::<Conn>()
            + (self.buckets.capacity() + self.old.capacity()) * 4
            + self.timers.memory_bytes()
    }

    /// Where the chain of a key lives: `(true, i)` for `old[i]` (not yet
    /// moved), `(false, i)` for `buckets[i]`.
    #[inline]
    fn chain_of(&self, proto: u8, caddr: u32, cport: u16) -> (bool, usize) {
        let h = hash_key(proto, caddr, cport, self.seed);
        if self.moved < self.old.len() {
            let ob = h as usize & (self.old.len() - 1);
            if ob >= self.moved {
                return (true, ob);
            }
        }
        (false, (h & self.mask) as usize)
    }

    /// The first entry of the chain of a key.
    #[inline]
    fn head(&self, proto: u8, caddr: u32, cport: u16) -> u32 {
        match self.chain_of(proto, caddr, cport) {
            (true, i) => self.old[i],
            (false, i) => self.buckets[i],
        }
    }

    fn set_head(&mut self, at: (bool, usize), id: u32) {
        match at {
            (true, i) => self.old[i] = id,
            (false, i) => self.buckets[i] = id,
        }
    }

    /// One more than the largest id ever allocated: every live id is
    /// below it (for walking the table in slices of ids).
    pub fn id_bound(&self) -> u32 {
        self.slab.len() as u32
    }

    /// Whether `id` is a live entry.
    pub fn is_live(&self, id: ConnId) -> bool {
        self.slab.get(id.0 as usize).is_some_and(|c| c.flags & flags::HASHED != 0)
    }

    /// The entry with this id. Panics on an id that was never allocated
    /// (ids come only from this table).
    #[inline]
    pub fn get(&self, id: ConnId) -> &Conn {
        &self.slab[id.0 as usize]
    }

    /// The entry with this id, to change it (its key fields must not
    /// change: the entry stays in its hash chain). Panics on an id that was
    /// never allocated.
    #[inline]
    pub fn get_mut(&mut self, id: ConnId) -> &mut Conn {
        &mut self.slab[id.0 as usize]
    }

    /// Inserts a new entry at the head of its chain and arms its timer at
    /// `conn.expires`, unless that is [`UNARMED`] (the caller arms it later
    /// with [`arm`](Self::arm)). Returns its id.
    pub fn insert(&mut self, mut conn: Conn) -> ConnId {
        if (self.live + 1) * MAX_LOAD_INV > self.buckets.len() {
            self.grow();
        }
        self.move_chains(GROW_STEP);
        let id = if self.free_head != NIL {
            let id = self.free_head;
            self.free_head = self.slab[id as usize].next;
            conn.gen = self.slab[id as usize].gen.wrapping_add(1);
            self.slab[id as usize] = conn;
            id
        } else {
            let id = self.slab.len() as u32;
            conn.gen = 0;
            self.slab.push(conn);
            id
        };
        self.link(id);
        self.live += 1;
        if self.slab[id as usize].expires != UNARMED {
            let seq = self.next_seq();
            let c = &mut self.slab[id as usize];
            c.seq = seq;
            self.timers.push((c.expires, Reverse(seq), id, c.gen));
        }
        ConnId(id)
    }

    fn link(&mut self, id: u32) {
        let c = &self.slab[id as usize];
        let at = self.chain_of(c.proto, c.caddr, c.cport);
        self.slab[id as usize].next = self.head(c.proto, c.caddr, c.cport);
        self.set_head(at, id);
        self.slab[id as usize].flags |= flags::HASHED;
    }

    fn unlink(&mut self, id: u32) {
        let c = self.slab[id as usize];
        let at = self.chain_of(c.proto, c.caddr, c.cport);
        let mut cur = self.head(c.proto, c.caddr, c.cport);
        let mut prev = NIL;
        while cur != NIL {
            if cur == id {
                let nxt = self.slab[cur as usize].next;
                if prev == NIL {
                    self.set_head(at, nxt);
                } else {
                    self.slab[prev as usize].next = nxt;
                }
                self.slab[id as usize].flags &= !flags::HASHED;
                return;
            }
            prev = cur;
            cur = self.slab[cur as usize].next;
        }
    }

    /// Changes the hash key fields of an entry (`ip_vs_conn_unhash` +
    /// edit + `ip_vs_conn_rehash`): it moves to the head of its new chain.
    pub fn rekey(&mut self, id: ConnId, f: impl FnOnce(&mut Conn)) {
        self.unlink(id.0);
        f(&mut self.slab[id.0 as usize]);
        self.link(id.0);
    }

    /// Inserts a new entry of any families: `conn` with its address fields
    /// and families set from `addrs`, as [`insert`](Self::insert); an
    /// all-IPv4 entry is stored exactly as `insert` stores it.
    pub fn insert_addrs(&mut self, mut conn: Conn, addrs: ConnAddrs) -> ConnId {
        let fam = |a: &IpAddr| if a.is_ipv4() { AF_INET } else { AF_INET6 };
        conn.af = fam(&addrs.caddr);
        conn.daf = fam(&addrs.daddr);
        conn.caddr = held(&addrs.caddr);
        conn.vaddr = held(&addrs.vaddr);
        conn.daddr = held(&addrs.daddr);
        let wide = !conn.is_v4_only();
        let id = self.insert(conn);
        if wide {
            self.v6.insert(id.0, addrs);
        }
        id
    }

    /// The addresses of entry `id`, of whatever families.
    #[inline]
    pub fn addrs(&self, id: ConnId) -> ConnAddrs {
        let c = &self.slab[id.0 as usize];
        // An IPv4-only entry's are its own fields: no lookup (the host's
        // flow manager asks for every connection it syncs).
        match if c.is_v4_only() { None } else { self.v6.get(&id.0) } {
            Some(a) => *a,
            None => ConnAddrs {
                caddr: IpAddr::V4(c.caddr.into()),
                vaddr: IpAddr::V4(c.vaddr.into()),
                daddr: IpAddr::V4(c.daddr.into()),
            },
        }
    }

    /// Removes an entry from the table and frees its slot.
    pub fn remove(&mut self, id: ConnId) -> Conn {
        if !self.slab[id.0 as usize].is_v4_only() {
            self.v6.remove(&id.0);
        }
        self.unlink(id.0);
        let c = self.slab[id.0 as usize];
        self.slab[id.0 as usize].next = self.free_head;
        self.slab[id.0 as usize].flags = 0;
        self.free_head = id.0;
        self.live -= 1;
        c
    }

    /// Doubles the bucket array. Each old chain is re-linked tail first, so
    /// entries that share a key keep their newest-first order.
    /// Doubles the chain heads; the chains move over the next inserts
    /// ([`move_chains`](Self::move_chains)).
    fn grow(&mut self) {
        // The last doubling's chains have all moved by now (it had half
        // as many chains as inserts until this one); finish it if not.
        self.move_chains(usize::MAX);
        let nb = self.buckets.len() * 2;
        self.old = std::mem::replace(&mut self.buckets, vec![NIL; nb]);
        self.mask = (nb - 1) as u64;
        self.moved = 0;
    }

    /// Moves up to `n` chains of the last doubling into the new heads,
    /// each entry keeping its order in its chain.
    fn move_chains(&mut self, n: usize) {
        let mut chain: Vec<u32> = Vec::new();
        for _ in 0..n {
            if self.moved >= self.old.len() {
                break;
            }
            chain.clear();
            let mut cur = std::mem::replace(&mut self.old[self.moved], NIL);
            while cur != NIL {
                chain.push(cur);
                cur = self.slab[cur as usize].next;
            }
            for &id in chain.iter().rev() {
                let c = &self.slab[id as usize];
                let b = (hash_key(c.proto, c.caddr, c.cport, self.seed) & self.mask) as usize;
                self.slab[id as usize].next = self.buckets[b];
                self.buckets[b] = id;
            }
            self.moved += 1;
        }
        if self.moved >= self.old.len() && !self.old.is_empty() {
            self.old = Vec::new();
            self.moved = 0;
        }
    }

    /// Loads the chain heads of a batch of keys, then the first entry of each
    /// chain, so the loads of a batch are independent of each other
    /// and overlap in the memory system (like a bulk hash lookup).
    pub fn touch_batch(&self, keys: &[(u8, u32, u16)], heads: &mut [u32]) -> u32 {
        let n = keys.len().min(heads.len());
        for i in 0..n {
            let (p, a, port) = keys[i];
            heads[i] = self.head(p, a, port);
        }
        let mut x = 0;
        for &h in &heads[..n] {
            if h != NIL {
                x ^= self.slab[h as usize].caddr;
            }
        }
        x
    }

    /// Request lookup `__ip_vs_conn_in_get`: a packet from `caddr:cport`
    /// to `vaddr:vport`. Templates never match (their cport is 0 and they
    /// lack NO_CPORT).
    #[inline]
    pub fn in_get(&self, proto: u8, caddr: u32, cport: u16, vaddr: u32, vport: u16) -> Option<ConnId> {
        let mut cur = self.head(proto, caddr, cport);
        while cur != NIL {
            let c = &self.slab[cur as usize];
            if c.cport == cport
                && c.vport == vport
                && c.caddr == caddr
                && c.vaddr == vaddr
                && ((cport == 0) ^ (c.flags & flags::NO_CPORT == 0))
                && c.proto == proto
                && c.af == AF_INET
            {
                return Some(ConnId(cur));
            }
            cur = c.next;
        }
        None
    }

    /// Reply lookup `ip_vs_conn_out_get`: a packet from `saddr:sport` (the
    /// real server, or the VIP for DR/TUN conns) to `daddr:dport` (the
    /// client), hashed on the destination.
    #[inline]
    pub fn out_get(&self, proto: u8, saddr: u32, sport: u16, daddr: u32, dport: u16) -> Option<ConnId> {
        let mut cur = self.head(proto, daddr, dport);
        while cur != NIL {
            let c = &self.slab[cur as usize];
            if c.cport == dport {
                let (a, p) = if c.fwd() != flags::MASQ { (c.vaddr, c.vport) } else { (c.daddr, c.dport) };
                if sport == p && c.caddr == daddr && saddr == a && c.proto == proto && c.af == AF_INET {
                    return Some(ConnId(cur));
                }
            }
            cur = c.next;
        }
        None
    }

    /// Template lookup `ip_vs_ct_in_get` for `<proto, caddr, cport, vaddr, vport>`.
    #[inline]
    pub fn ct_in_get(&self, proto: u8, caddr: u32, cport: u16, vaddr: u32, vport: u16) -> Option<ConnId> {
        let mut cur = self.head(proto, caddr, cport);
        while cur != NIL {
            let c = &self.slab[cur as usize];
            if c.caddr == caddr
                && c.vaddr == vaddr
                && c.vport == vport
                && c.cport == cport
                && c.flags & flags::TEMPLATE != 0
                && c.proto == proto
                && c.af == AF_INET
            {
                return Some(ConnId(cur));
            }
            cur = c.next;
        }
        None
    }

    /// [`in_get`](Self::in_get) for IPv6 (`__ip_vs_conn_in_get` with
    /// `af == AF_INET6`: `ip_vs_addr_equal` on the whole addresses).
    pub fn in_get6(&self, proto: u8, caddr: &Ipv6Addr, cport: u16, vaddr: &Ipv6Addr, vport: u16) -> Option<ConnId> {
        let (fc, fv) = (fold6(caddr), fold6(vaddr));
        let mut cur = self.head(proto, fc, cport);
        while cur != NIL {
            let c = &self.slab[cur as usize];
            if c.af == AF_INET6
                && c.cport == cport
                && c.vport == vport
                && c.caddr == fc
                && c.vaddr == fv
                && ((cport == 0) ^ (c.flags & flags::NO_CPORT == 0))
                && c.proto == proto
                && self.v6.get(&cur).is_some_and(|a| a.caddr == IpAddr::V6(*caddr) && a.vaddr == IpAddr::V6(*vaddr))
            {
                return Some(ConnId(cur));
            }
            cur = c.next;
        }
        None
    }

    /// [`out_get`](Self::out_get) for IPv6.
    pub fn out_get6(&self, proto: u8, saddr: &Ipv6Addr, sport: u16, daddr: &Ipv6Addr, dport: u16) -> Option<ConnId> {
        let fd = fold6(daddr);
        let mut cur = self.head(proto, fd, dport);
        while cur != NIL {
            let c = &self.slab[cur as usize];
            if c.af == AF_INET6 && c.cport == dport && c.caddr == fd && c.proto == proto {
                if let Some(a) = self.v6.get(&cur) {
                    let (addr, p) = if c.fwd() != flags::MASQ { (a.vaddr, c.vport) } else { (a.daddr, c.dport) };
                    if sport == p && a.caddr == IpAddr::V6(*daddr) && IpAddr::V6(*saddr) == addr {
                        return Some(ConnId(cur));
                    }
                }
            }
            cur = c.next;
        }
        None
    }

    /// [`ct_in_get`](Self::ct_in_get) for IPv6 (`caddr` already masked to
    /// the persistence prefix).
    pub fn ct_in_get6(&self, proto: u8, caddr: &Ipv6Addr, cport: u16, vaddr: &Ipv6Addr, vport: u16) -> Option<ConnId> {
        let (fc, fv) = (fold6(caddr), fold6(vaddr));
        let mut cur = self.head(proto, fc, cport);
        while cur != NIL {
            let c = &self.slab[cur as usize];
            if c.af == AF_INET6
                && c.caddr == fc
                && c.vaddr == fv
                && c.vport == vport
                && c.cport == cport
                && c.flags & flags::TEMPLATE != 0
                && c.proto == proto
                && self.v6.get(&cur).is_some_and(|a| a.caddr == IpAddr::V6(*caddr) && a.vaddr == IpAddr::V6(*vaddr))
            {
                return Some(ConnId(cur));
            }
            cur = c.next;
        }
        None
    }

    fn next_seq(&mut self) -> u32 {
        self.arm_seq = self.arm_seq.wrapping_add(1);
        self.arm_seq
    }

    /// Re-arms the timer of `id` to fire at `at` (`mod_timer`). Cheap: the
    /// heap entry is fixed up lazily when it comes due, unless `at` is
    /// earlier than the deadline the entry already has.
    #[inline]
    pub fn arm(&mut self, id: ConnId, at: Time) {
        if self.slab[id.0 as usize].expires == at {
            // mod_timer to the same expiry (or, on the timer wheel, the same
            // bucket) keeps the timer's place among those due with it.
            return;
        }
        let seq = self.next_seq();
        let c = &mut self.slab[id.0 as usize];
        let not_later = at <= c.expires;
        c.expires = at;
        c.seq = seq;
        if not_later {
            // The existing heap entry (if any) is not earlier than the new
            // deadline, or has an older arm order: push one for the new
            // deadline; the old one is discarded when popped.
            let gen = c.gen;
            self.timers.push((at, Reverse(seq), id.0, gen));
        }
    }

    /// Pops the next entry whose timer is due at or before `now`, fixing up
    /// stale heap entries on the way. The caller runs the expiry logic
    /// (`ip_vs_conn_expire`) and either removes the entry or re-arms it with
    /// [`rearm_after_pop`](Self::rearm_after_pop).
    pub fn pop_due(&mut self, now: Time) -> Option<(ConnId, Time)> {
        while let Some((at, Reverse(seq), id, gen)) = self.timers.pop_due(now) {
            let c = &self.slab[id as usize];
            if c.gen != gen || c.flags & flags::HASHED == 0 || c.expires == UNARMED {
                continue; // freed or reallocated since, or disarmed
            }
            if c.expires < at || (c.expires == at && c.seq != seq) {
                continue; // a fresher entry for this conn exists
            }
            if c.expires > at {
                // Re-armed later by traffic: queue the real deadline.
                let e = (c.expires, Reverse(c.seq), id, gen);
                self.timers.push(e);
                continue;
            }
            // Due. The entry now has no timer until the caller either
            // removes it or calls `rearm_after_pop`.
            self.slab[id as usize].expires = UNARMED;
            return Some((ConnId(id), at));
        }
        None
    }

    /// After [`pop_due`](Self::pop_due) returned `id`, re-arms it (e.g.
    /// `expire_later`).
    pub fn rearm_after_pop(&mut self, id: ConnId, at: Time) {
        let seq = self.next_seq();
        let c = &mut self.slab[id.0 as usize];
        c.expires = at;
        c.seq = seq;
        let gen = c.gen;
        self.timers.push((at, Reverse(seq), id.0, gen));
    }

    /// Iterates over live entries (any order).
    pub fn iter(&self) -> impl Iterator<Item = (ConnId, &Conn)> {
        self.slab
            .iter()
            .enumerate()
            .filter(|(_, c)| c.flags & flags::HASHED != 0)
            .map(|(i, c)| (ConnId(i as u32), c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(caddr: u32, cport: u16) -> Conn {
        Conn::new(6, caddr, cport, 0x0a00_0001, 80, 0xc0a8_0001, 8080, flags::MASQ)
    }

    #[test]
    fn lookups_by_direction() {
        let mut t = ConnTable::with_capacity(4);
        let id = t.insert(conn(0x0101_0101, 40000));
        assert_eq!(t.in_get(6, 0x0101_0101, 40000, 0x0a00_0001, 80), Some(id));
        assert_eq!(t.in_get(6, 0x0101_0101, 40000, 0x0a00_0001, 81), None);
        assert_eq!(t.in_get(17, 0x0101_0101, 40000, 0x0a00_0001, 80), None);
        // NAT reply comes from the real server's address and port.
        assert_eq!(t.out_get(6, 0xc0a8_0001, 8080, 0x0101_0101, 40000), Some(id));
        assert_eq!(t.out_get(6, 0x0a00_0001, 80, 0x0101_0101, 40000), None);
        t.get_mut(id).flags = flags::DROUTE;
        // DR/TUN replies would come from the VIP.
        assert_eq!(t.out_get(6, 0x0a00_0001, 80, 0x0101_0101, 40000), Some(id));
    }

    #[test]
    fn a_doubling_moves_a_few_chains_per_insert_and_every_entry_stays_found() {
        let mut t = ConnTable::with_capacity(16);
        // Pairs of entries with one key: the newer must stay first in its
        // chain through every move.
        let mut pairs = Vec::new();
        let mut removed = Vec::new();
        let mut max_moved = 0;
        let mut doublings = 0;
        let mut insert = |t: &mut ConnTable, i: u32| {
            let (moved, old, heads) = (t.moved, t.old.len(), t.buckets.len());
            let id = t.insert(conn(0x0b00_0000 + i, 1 + (i % 50_000) as u16));
            if t.buckets.len() != heads {
                doublings += 1;
                assert_eq!(old, 0, "the last doubling ended before the next began");
            } else if old > 0 {
                max_moved = max_moved.max(if t.old.is_empty() { old - moved } else { t.moved - moved });
            }
            id
        };
        for i in 0..20_000u32 {
            let older = insert(&mut t, i);
            let newer = insert(&mut t, i);
            pairs.push((i, older, newer));
            if i % 7 == 0 {
                // Removed while its chain may be in either table.
                t.remove(newer);
                removed.push(i);
            }
            if i % 997 == 0 {
                for &(j, older, newer) in &pairs {
                    let want = if j % 7 == 0 { older } else { newer };
                    assert_eq!(t.in_get(6, 0x0b00_0000 + j, 1 + (j % 50_000) as u16, 0x0a00_0001, 80), Some(want), "entry {j} at insert {i}");
                    assert_eq!(t.out_get(6, 0xc0a8_0001, 8080, 0x0b00_0000 + j, 1 + (j % 50_000) as u16), Some(want));
                }
            }
        }
        assert!(doublings >= 10, "{doublings} doublings");
        assert!(max_moved <= GROW_STEP, "an insert moved {max_moved} chains");
        for &(j, older, newer) in &pairs {
            let want = if j % 7 == 0 { older } else { newer };
            assert_eq!(t.in_get(6, 0x0b00_0000 + j, 1 + (j % 50_000) as u16, 0x0a00_0001, 80), Some(want));
            t.remove(want);
            let other = if want == older { (j % 7 != 0).then_some(newer) } else { Some(older) };
            assert_eq!(t.in_get(6, 0x0b00_0000 + j, 1 + (j % 50_000) as u16, 0x0a00_0001, 80), other.filter(|&o| t.is_live(o)));
        }
        assert_eq!(t.len(), pairs.len() - removed.len());
    }

    #[test]
    fn newest_first_and_grow_keeps_order() {
        let mut t = ConnTable::with_capacity(16);
        let a = t.insert(conn(7, 7));
        let b = t.insert(conn(7, 7));
        assert_eq!(t.in_get(6, 7, 7, 0x0a00_0001, 80), Some(b));
        for i in 0..1000u32 {
            t.insert(conn(1000 + i, 1));
        }
        assert_eq!(t.in_get(6, 7, 7, 0x0a00_0001, 80), Some(b));
        t.remove(b);
        assert_eq!(t.in_get(6, 7, 7, 0x0a00_0001, 80), Some(a));
        assert_eq!(t.len(), 1001);
        for i in 0..1000u32 {
            assert!(t.in_get(6, 1000 + i, 1, 0x0a00_0001, 80).is_some());
        }
    }

    #[test]
    fn timers_fire_in_order_and_rearm_lazily() {
        let mut t = ConnTable::with_capacity(4);
        let mut c1 = conn(1, 1);
        c1.expires = 100;
        let mut c2 = conn(2, 2);
        c2.expires = 50;
        let id1 = t.insert(c1);
        let id2 = t.insert(c2);
        assert_eq!(t.pop_due(49).map(|x| x.0), None);
        t.arm(id2, 200); // traffic moved it later
        assert_eq!(t.pop_due(150).map(|x| x.0), Some(id1));
        t.remove(id1);
        assert_eq!(t.pop_due(150).map(|x| x.0), None);
        assert_eq!(t.pop_due(200).map(|x| x.0), Some(id2));
        t.rearm_after_pop(id2, 300);
        assert_eq!(t.pop_due(299).map(|x| x.0), None);
        t.arm(id2, 250); // earlier than before
        assert_eq!(t.pop_due(260).map(|x| x.0), Some(id2));
        t.remove(id2);
        assert_eq!(t.pop_due(1000).map(|x| x.0), None);
    }

    #[test]
    fn reused_slot_ignores_old_timer() {
        let mut t = ConnTable::with_capacity(4);
        let mut c = conn(1, 1);
        c.expires = 10;
        let id = t.insert(c);
        t.remove(id);
        let mut c = conn(2, 2);
        c.expires = 500;
        let id2 = t.insert(c);
        assert_eq!(id, id2, "slot reused");
        assert_eq!(t.pop_due(100).map(|x| x.0), None);
        assert_eq!(t.pop_due(500).map(|x| x.0), Some(id2));
    }

    #[test]
    fn conn_is_compact() {
        assert_eq!(std::mem::size_of::<Conn>(), 64);
    }

    #[test]
    fn equal_deadlines_run_newest_armed_first() {
        let mut t = ConnTable::with_capacity(4);
        let a = t.insert(conn(1, 1));
        let b = t.insert(conn(2, 2));
        t.arm(a, 100);
        t.arm(b, 100);
        assert_eq!(t.pop_due(100).map(|x| x.0), Some(b));
        assert_eq!(t.pop_due(100).map(|x| x.0), Some(a));
        // Re-arming a pending timer at the deadline it already has keeps
        // its place (`mod_timer`: `timer->expires == expires` returns
        // early; on the wheel, the same bucket index keeps it enqueued).
        let c = t.insert(conn(3, 3));
        t.rearm_after_pop(a, 200);
        t.arm(c, 200);
        t.arm(a, 200);
        assert_eq!(t.pop_due(200).map(|x| x.0), Some(c));
        assert_eq!(t.pop_due(200).map(|x| x.0), Some(a));
        // A new deadline moves it (to the head of the new bucket).
        t.arm(a, 300);
        t.arm(c, 300);
        t.arm(a, 301);
        t.arm(a, 300);
        assert_eq!(t.pop_due(300).map(|x| x.0), Some(a));
        assert_eq!(t.pop_due(300).map(|x| x.0), Some(c));
        assert_eq!(t.pop_due(1000).map(|x| x.0), None);
    }
}
