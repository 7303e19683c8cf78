//! Virtual services and their real servers, managed as `ip_vs_ctl.c` does:
//! `ip_vs_add_service`, `ip_vs_edit_service`, `ip_vs_del_service`,
//! `ip_vs_add_dest` (with revival from the trash), `ip_vs_edit_dest`,
//! `ip_vs_del_dest`, the dest trash timer, and `ip_vs_service_find`.

use super::{Dest, DestId, Estimator, Stats};
use crate::rng::RandomSource;
use crate::rules::{FwdMethod, Netmask, Protocol, RuleSet, SchedFlags, ServiceKey, ServiceRule, TunnelType, DestRule};
use crate::sched::{self, SchedPacket, Scheduler, SvcView};
use crate::time::{secs, Time};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use crate::dest::ServiceId;

/// FTP control port (`FTPPORT`).
pub const FTPPORT: u16 = 21;
/// FTP data port (`FTPDATA`).
pub const FTPDATA: u16 = 20;
/// `IP_VS_DEST_TRASH_PERIOD` (ip_vs_ctl.c): 120 s; the trash timer runs
/// every half period.
pub const DEST_TRASH_PERIOD: Time = secs(120);

use crate::fasthash::FastMap;

/// A virtual service (`struct ip_vs_service`).
#[derive(Debug)]
pub struct Service {
    /// Its index in the table.
    pub id: ServiceId,
    /// The service as configured (its `dests` field is unused: see `order`).
    pub rule: ServiceRule,
    /// Protocol.
    pub proto: Protocol,
    /// Virtual address (IPv4 or IPv6: `svc->af` is its family).
    pub vaddr: IpAddr,
    /// Virtual port.
    pub vport: u16,
    /// Real servers in kernel list order (newest first).
    pub order: Vec<DestId>,
    /// The bound scheduler (`svc->scheduler` with its data).
    pub sched: Box<dyn Scheduler>,
    /// Traffic counters.
    pub stats: Stats,
    /// Rate estimator over `stats` (`ipvsadm -L --rate`).
    pub est: Estimator,
    /// False once deleted (the slot stays for connections that refer to it).
    pub live: bool,
}

impl Service {
    /// `IP_VS_SVC_F_PERSISTENT`.
    pub fn persistent(&self) -> bool {
        self.rule.persistent.is_some()
    }

    /// Persistence timeout (`svc->timeout`).
    pub fn timeout(&self) -> Time {
        secs(self.rule.persistent.unwrap_or(0) as u64)
    }

    /// Persistence netmask of an IPv4 service in host byte order
    /// (`svc->netmask`).
    pub fn netmask(&self) -> u32 {
        match self.rule.netmask {
            Netmask::V4(m) => m,
            Netmask::V6(_) => 0xffff_ffff,
        }
    }

    /// Persistence prefix length of an IPv6 service (`svc->netmask`, which
    /// for AF_INET6 holds a prefix length, 1..=128, default 128).
    pub fn plen(&self) -> u8 {
        match self.rule.netmask {
            Netmask::V6(p) => p,
            Netmask::V4(_) => 128,
        }
    }

    /// The virtual address when the service is IPv4.
    pub fn vaddr_v4(&self) -> Option<Ipv4Addr> {
        match self.vaddr {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        }
    }
}

/// A rule operation the kernel would refuse, with ipvsadm's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// `-A` of an existing service (EEXIST).
    #[error("Service already exists")]
    ServiceExists,
    /// A missing service (ESRCH).
    #[error("No such service")]
    NoSuchService,
    /// `-a` of an existing real server (EEXIST).
    #[error("Destination already exists")]
    DestExists,
    /// A missing real server (ENOENT).
    #[error("No such destination")]
    NoSuchDest,
    /// A scheduler the model does not implement (ENOENT).
    #[error("Scheduler not found: {0}")]
    UnknownScheduler(String),
    /// `-y` above `-x` (ERANGE).
    #[error("lower threshold is higher than upper threshold")]
    Thresholds,
    /// A real server of another address family than its service, other
    /// than a tunnel (`ip_vs_genl_set_cmd`: EINVAL).
    #[error("Invalid argument")]
    MixedFamily,
    /// An IPv6 real server that is not a global unicast address
    /// (`ip_vs_new_dest`: `!(atype & IPV6_ADDR_UNICAST) || atype &
    /// IPV6_ADDR_LINKLOCAL`: EINVAL).
    #[error("Invalid argument")]
    BadDestAddress,
    /// A rule the director does not carry out (fwmark, SCTP, ...).
    #[error("{0}")]
    Unsupported(String),
}

/// All services and real servers of a director.
#[derive(Debug, Default)]
pub struct ServiceTable {
    /// Every service ever added, by [`ServiceId`] (deleted ones stay, not
    /// live). Boxed, as are the real servers: when the vector grows it
    /// moves pointers, not every service (at 8,192 services moving them
    /// took 4 ms, a pause in forwarding in the middle of a `-R`).
    pub services: Vec<Box<Service>>,
    /// The real server arena, by [`DestId`].
    pub dests: Vec<Box<Dest>>,
    /// Live services by (protocol, address, port).
    index: FastMap<(u8, IpAddr, u16), ServiceId>,
    ftpsvc_counter: u32,
    nullsvc_counter: u32,
    /// Deleted servers, most recently deleted first (`ipvs->dest_trash`).
    trash: std::collections::VecDeque<DestId>,
    /// `idle_start` per trashed dest (0 = not yet seen idle by the timer).
    idle_start: HashMap<DestId, Time>,
    /// When the trash timer fires next, if armed.
    trash_timer: Option<Time>,
    /// References held by connections and templates, per dest (`refcnt - 1`).
    pub refs: Vec<u32>,
    /// Addresses of live services (VIPs), sorted, one entry per live
    /// service, for the per-packet "is this local" test (a binary search)
    /// and so that adding or deleting a service costs no scan of them all.
    vips: Vec<u32>,
    /// Addresses of live IPv6 services, sorted, one entry per service.
    vips6: Vec<Ipv6Addr>,
}

/// The director forwards IPv4 and IPv6 TCP/UDP address services with ipip
/// tunnels: the checks here name what is not supported.
fn check_supported_service(rule: &ServiceRule) -> Result<(Protocol, IpAddr, u16), RuleError> {
    match rule.key {
        ServiceKey::Fwmark { .. } => Err(RuleError::Unsupported(
            "fwmark services (-f) are not supported by the lvsnic director (no packet marks on the wire)".into(),
        )),
        ServiceKey::Addr { proto: Protocol::Sctp, .. } => {
            Err(RuleError::Unsupported("SCTP services are not supported by the lvsnic director yet".into()))
        }
        ServiceKey::Addr { proto, addr: a, port } => {
            if rule.pe.is_some() {
                return Err(RuleError::Unsupported("persistence engines (--pe) are not supported yet".into()));
            }
            Ok((proto, a, port))
        }
    }
}

/// A real server of `svc_addr`'s service (`ip_vs_genl_set_cmd`): one of
/// another address family only with tunnelling (EINVAL otherwise; also
/// EINVAL while a sync daemon runs, which the daemon's control plane
/// checks, as it owns the sync daemons), carried as a tunnel
/// across families (`ip_vs_tunnel_xmit_v6` for an IPv4 client,
/// `ip_vs_tunnel_xmit` for an IPv6 one).
fn check_supported_dest(d: &DestRule, svc_addr: IpAddr) -> Result<IpAddr, RuleError> {
    let addr = d.addr;
    if addr.is_ipv4() != svc_addr.is_ipv4() && !matches!(d.fwd, FwdMethod::Tunnel { .. }) {
        return Err(RuleError::MixedFamily);
    }
    if let IpAddr::V6(a) = addr {
        // ip_vs_new_dest: an IPv6 server must be unicast and not
        // link-local (unless it is one of the director's own addresses,
        // which the model's servers are not).
        let seg0 = a.segments()[0];
        if a.is_unspecified() || a.is_multicast() || (seg0 & 0xffc0) == 0xfe80 {
            return Err(RuleError::BadDestAddress);
        }
    }
    match d.fwd {
        FwdMethod::Tunnel { tun: TunnelType::Ipip, .. } | FwdMethod::Masq | FwdMethod::Route | FwdMethod::Local => {}
        FwdMethod::Tunnel { .. } => {
            return Err(RuleError::Unsupported(
                "only ipip tunnels are supported (--tun-type gue/gre are not)".into(),
            ))
        }
    }
    if d.l_threshold > d.u_threshold {
        return Err(RuleError::Thresholds);
    }
    Ok(addr)
}

impl ServiceTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn key_of(proto: Protocol, a: IpAddr, port: u16) -> (u8, IpAddr, u16) {
        (proto.number(), a, port)
    }

    /// The live service with this key.
    pub fn lookup_key(&self, key: &ServiceKey) -> Option<ServiceId> {
        match *key {
            ServiceKey::Addr { proto, addr, port } => self.index.get(&Self::key_of(proto, addr, port)).copied(),
            ServiceKey::Fwmark { .. } => None,
        }
    }

    /// The service with this id.
    pub fn service(&self, id: ServiceId) -> &Service {
        &self.services[id.0 as usize]
    }

    /// The real server with this id.
    pub fn dest(&self, id: DestId) -> &Dest {
        &self.dests[id.index()]
    }

    /// The real server with this id, mutable.
    pub fn dest_mut(&mut self, id: DestId) -> &mut Dest {
        &mut self.dests[id.index()]
    }

    /// The scheduler's view of a service.
    pub fn view(&self, id: ServiceId) -> SvcView<'_> {
        let s = &self.services[id.0 as usize];
        SvcView { dests: &self.dests, order: &s.order, flags: s.rule.flags, proto: s.proto, port: s.vport, v6: s.vaddr.is_ipv6() }
    }

    /// Live services in the order they were added.
    pub fn live_services(&self) -> impl Iterator<Item = &Service> {
        self.services.iter().map(|s| &**s).filter(|s| s.live)
    }

    /// `ip_vs_service_find`: exact match, then the FTP service for FTP data
    /// (TCP to port 20 or an unprivileged port), then the port-0 service.
    pub fn find(&self, proto: u8, vaddr: u32, vport: u16) -> Option<ServiceId> {
        self.find_addr(proto, IpAddr::V4(Ipv4Addr::from(vaddr)), vport)
    }

    /// [`find`](Self::find) for a virtual address of either family
    /// (`ip_vs_service_find` takes `af` and a `union nf_inet_addr`).
    pub fn find_addr(&self, proto: u8, vaddr: IpAddr, vport: u16) -> Option<ServiceId> {
        if let Some(&id) = self.index.get(&(proto, vaddr, vport)) {
            return Some(id);
        }
        if proto == 6 && self.ftpsvc_counter > 0 && (vport == FTPDATA || vport >= 1024) {
            if let Some(&id) = self.index.get(&(proto, vaddr, FTPPORT)) {
                return Some(id);
            }
        }
        if self.nullsvc_counter > 0 {
            if let Some(&id) = self.index.get(&(proto, vaddr, 0)) {
                return Some(id);
            }
        }
        None
    }

    /// Real servers of another address family than their service's (tunnels
    /// across families: the kernel's `mixed_address_family_dests`, with
    /// which no sync daemon may run).
    pub fn mixed_family_dests(&self) -> usize {
        self.live_services()
            .map(|s| s.order.iter().filter(|&&d| self.dest(d).addr.is_ipv4() != s.vaddr.is_ipv4()).count())
            .sum()
    }

    /// The distinct addresses of live services (VIPs), in ascending order.
    pub fn vips(&self) -> impl Iterator<Item = u32> + '_ {
        self.vips.iter().enumerate().filter(|&(i, v)| i == 0 || self.vips[i - 1] != *v).map(|(_, &v)| v)
    }

    /// Is `addr` the address of any live service (a VIP)?
    #[inline]
    pub fn is_vip(&self, addr: u32) -> bool {
        self.vips.binary_search(&addr).is_ok()
    }

    /// Is `addr` the address of any live IPv6 service?
    pub fn is_vip6(&self, addr: &Ipv6Addr) -> bool {
        self.vips6.binary_search(addr).is_ok()
    }

    /// Whether any IPv6 service is live (`nf_defrag_ipv6` runs then:
    /// `ip_vs_add_service` enables it for an IPv6 service).
    pub fn has_v6(&self) -> bool {
        !self.vips6.is_empty()
    }

    fn vip_insert(&mut self, a: IpAddr) {
        match a {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                let at = self.vips.partition_point(|&v| v < a);
                self.vips.insert(at, a);
            }
            IpAddr::V6(a) => {
                let at = self.vips6.partition_point(|v| *v < a);
                self.vips6.insert(at, a);
            }
        }
    }

    fn vip_remove(&mut self, a: IpAddr) {
        match a {
            IpAddr::V4(a) => {
                if let Ok(at) = self.vips.binary_search(&u32::from(a)) {
                    self.vips.remove(at);
                }
            }
            IpAddr::V6(a) => {
                if let Ok(at) = self.vips6.binary_search(&a) {
                    self.vips6.remove(at);
                }
            }
        }
    }

    /// `ip_vs_add_service`.
    pub fn add_service(&mut self, rule: &ServiceRule, now: Time) -> Result<ServiceId, RuleError> {
        let (proto, vaddr, vport) = check_supported_service(rule)?;
        let key = Self::key_of(proto, vaddr, vport);
        if self.index.contains_key(&key) {
            return Err(RuleError::ServiceExists);
        }
        let id = ServiceId(self.services.len() as u32);
        let order: Vec<DestId> = Vec::new();
        let view = SvcView { dests: &self.dests, order: &order, flags: rule.flags, proto, port: vport, v6: vaddr.is_ipv6() };
        let sched = sched::new_scheduler(&rule.scheduler, &view, now)
            .map_err(|_| RuleError::UnknownScheduler(rule.scheduler.clone()))?;
        let mut r = rule.clone();
        r.dests.clear();
        self.services.push(Box::new(Service {
            id,
            rule: r,
            proto,
            vaddr,
            vport,
            order,
            sched,
            stats: Stats::default(),
            est: Estimator::default(),
            live: true,
        }));
        self.index.insert(key, id);
        self.vip_insert(vaddr);
        if vport == FTPPORT {
            self.ftpsvc_counter += 1;
        } else if vport == 0 {
            self.nullsvc_counter += 1;
        }
        Ok(id)
    }

    /// `ip_vs_edit_service`: flags, timeout, netmask; the scheduler is
    /// replaced (and its state reset) only when its name changes.
    pub fn edit_service(&mut self, rule: &ServiceRule, now: Time) -> Result<(), RuleError> {
        check_supported_service(rule)?;
        let id = self.lookup_key(&rule.key).ok_or(RuleError::NoSuchService)?;
        let s = &self.services[id.0 as usize];
        if s.rule.scheduler != rule.scheduler {
            let view = SvcView { dests: &self.dests, order: &s.order, flags: rule.flags, proto: s.proto, port: s.vport, v6: s.vaddr.is_ipv6() };
            let sched = sched::new_scheduler(&rule.scheduler, &view, now)
                .map_err(|_| RuleError::UnknownScheduler(rule.scheduler.clone()))?;
            self.services[id.0 as usize].sched = sched;
        }
        let s = &mut self.services[id.0 as usize];
        let dests = std::mem::take(&mut s.rule.dests);
        s.rule = rule.clone();
        s.rule.dests = dests;
        s.rule.dests.clear();
        Ok(())
    }

    /// `ip_vs_del_service` / `__ip_vs_del_service`: every server goes to the
    /// trash; connections keep pointing at them.
    pub fn del_service(&mut self, key: &ServiceKey, now: Time) -> Result<(), RuleError> {
        let id = self.lookup_key(key).ok_or(RuleError::NoSuchService)?;
        let order = std::mem::take(&mut self.services[id.0 as usize].order);
        for d in order {
            self.dests[d.index()].available = false;
            self.trash_dest(d, now);
        }
        let s = &mut self.services[id.0 as usize];
        s.live = false;
        let key = Self::key_of(s.proto, s.vaddr, s.vport);
        if s.vport == FTPPORT {
            self.ftpsvc_counter -= 1;
        } else if s.vport == 0 {
            self.nullsvc_counter -= 1;
        }
        let vaddr = s.vaddr;
        self.index.remove(&key);
        self.vip_remove(vaddr);
        Ok(())
    }

    /// `ip_vs_flush`: delete every service.
    pub fn clear(&mut self, now: Time) {
        let keys: Vec<ServiceKey> = self.live_services().map(|s| s.rule.key).collect();
        // Every VIP goes: emptied at once, not one sorted removal per
        // service (10,000 services: 5 ms of moves).
        self.vips.clear();
        self.vips6.clear();
        for k in keys {
            let _ = self.del_service(&k, now);
        }
    }

    fn find_dest_in(&self, svc: ServiceId, addr: IpAddr, port: u16) -> Option<(usize, DestId)> {
        self.services[svc.0 as usize]
            .order
            .iter()
            .enumerate()
            .find(|(_, &d)| self.dests[d.index()].addr == addr && self.dests[d.index()].port == port)
            .map(|(i, &d)| (i, d))
    }

    /// `ip_vs_add_dest`: a new server, or a deleted one revived from the
    /// trash (`ip_vs_trash_get_dest`), inserted at the head of the list.
    pub fn add_dest(&mut self, key: &ServiceKey, d: &DestRule) -> Result<DestId, RuleError> {
        let svc = self.lookup_key(key).ok_or(RuleError::NoSuchService)?;
        let addr = check_supported_dest(d, self.services[svc.0 as usize].vaddr)?;
        if self.find_dest_in(svc, addr, d.port).is_some() {
            return Err(RuleError::DestExists);
        }
        let (proto, vaddr, vport) = {
            let s = &self.services[svc.0 as usize];
            (s.proto, s.vaddr, s.vport)
        };
        // Trash lookup: same address/port and same virtual service key.
        let revived = self.trash.iter().position(|&t| {
            let td = &self.dests[t.index()];
            let old = &self.services[td.svc.0 as usize];
            td.addr == addr && td.port == d.port && old.proto == proto && old.vaddr == vaddr && old.vport == vport
        });
        let id = match revived.and_then(|pos| self.trash.remove(pos)) {
            Some(id) => {
                self.idle_start.remove(&id);
                if self.dests[id.index()].svc != svc {
                    // Bound to a new service incarnation: stats restart.
                    self.dests[id.index()].stats = Stats::default();
                    self.dests[id.index()].est = Estimator::default();
                    self.dests[id.index()].svc = svc;
                }
                id
            }
            None => {
                let id = DestId(self.dests.len() as u32);
                self.dests.push(Box::new(Dest::new(svc, addr, d.port, d.fwd, d.weight as i32)));
                self.refs.push(0);
                id
            }
        };
        self.update_dest(svc, id, d, true);
        Ok(id)
    }

    /// `__ip_vs_update_dest`.
    fn update_dest(&mut self, svc: ServiceId, id: DestId, d: &DestRule, add: bool) {
        {
            let dest = &mut self.dests[id.index()];
            if add || d.weight != 0 {
                dest.last_weight = d.weight as i32;
            }
            dest.weight = d.weight as i32;
            dest.fwd = d.fwd;
            dest.available = true;
            if d.u_threshold == 0 || d.u_threshold > dest.u_threshold {
                dest.overloaded = false;
            }
            dest.u_threshold = d.u_threshold;
            dest.l_threshold = d.l_threshold;
        }
        if add {
            self.services[svc.0 as usize].order.insert(0, id);
        }
        let dests = &self.dests;
        let s = &mut self.services[svc.0 as usize];
        let view = SvcView { dests, order: &s.order, flags: s.rule.flags, proto: s.proto, port: s.vport, v6: s.vaddr.is_ipv6() };
        if add {
            s.sched.add_dest(&view, id);
        } else {
            s.sched.upd_dest(&view, id);
        }
    }

    /// `ip_vs_edit_dest`.
    pub fn edit_dest(&mut self, key: &ServiceKey, d: &DestRule) -> Result<(), RuleError> {
        let svc = self.lookup_key(key).ok_or(RuleError::NoSuchService)?;
        let addr = check_supported_dest(d, self.services[svc.0 as usize].vaddr)?;
        let (_, id) = self.find_dest_in(svc, addr, d.port).ok_or(RuleError::NoSuchDest)?;
        self.update_dest(svc, id, d, false);
        Ok(())
    }

    /// `ip_vs_del_dest`: unlink (scheduler `del_dest`), then to the trash.
    pub fn del_dest(&mut self, key: &ServiceKey, addr: IpAddr, port: u16, now: Time) -> Result<DestId, RuleError> {
        let svc = self.lookup_key(key).ok_or(RuleError::NoSuchService)?;
        let (pos, id) = self.find_dest_in(svc, addr, port).ok_or(RuleError::NoSuchDest)?;
        self.dests[id.index()].available = false;
        self.services[svc.0 as usize].order.remove(pos);
        let dests = &self.dests;
        let s = &mut self.services[svc.0 as usize];
        let view = SvcView { dests, order: &s.order, flags: s.rule.flags, proto: s.proto, port: s.vport, v6: s.vaddr.is_ipv6() };
        s.sched.del_dest(&view, id, pos);
        self.trash_dest(id, now);
        Ok(id)
    }

    /// `__ip_vs_del_dest`: into the trash; arm the trash timer if the trash
    /// was empty.
    fn trash_dest(&mut self, id: DestId, now: Time) {
        if self.trash.is_empty() {
            self.trash_timer = Some(now + DEST_TRASH_PERIOD / 2);
        }
        self.trash.push_front(id);
        self.idle_start.insert(id, 0);
    }

    /// Runs the dest trash timer (`ip_vs_dest_trash_expire`) for every tick
    /// due at or before `now`. Freed dests can no longer be revived.
    pub fn run_trash_timer(&mut self, now: Time) {
        while let Some(at) = self.trash_timer {
            if at > now {
                break;
            }
            let mut keep = std::collections::VecDeque::with_capacity(self.trash.len());
            for &d in &self.trash {
                if self.refs[d.index()] > 0 {
                    keep.push_back(d);
                    continue;
                }
                let idle = self.idle_start.get(&d).copied().unwrap_or(0);
                if idle != 0 {
                    if at < idle + DEST_TRASH_PERIOD {
                        keep.push_back(d);
                        continue;
                    }
                } else {
                    self.idle_start.insert(d, at.max(1));
                    keep.push_back(d);
                    continue;
                }
                self.idle_start.remove(&d);
            }
            self.trash = keep;
            self.trash_timer = if self.trash.is_empty() { None } else { Some(at + DEST_TRASH_PERIOD / 2) };
        }
    }

    /// Runs the service's scheduler for a new connection.
    pub fn schedule(&mut self, svc: ServiceId, pkt: &SchedPacket, now: Time, rng: &mut dyn RandomSource) -> Option<DestId> {
        let dests = &self.dests;
        let s = &mut self.services[svc.0 as usize];
        let view = SvcView { dests, order: &s.order, flags: s.rule.flags, proto: s.proto, port: s.vport, v6: s.vaddr.is_ipv6() };
        s.sched.schedule(&view, pkt, now, rng)
    }

    /// Applies a whole rule set in file order (`ipvsadm -R`).
    pub fn load(&mut self, rules: &RuleSet, now: Time) -> Result<(), (usize, RuleError)> {
        for (i, s) in rules.services.iter().enumerate() {
            self.add_service(s, now).map_err(|e| (i, e))?;
            for d in &s.dests {
                self.add_dest(&s.key, d).map_err(|e| (i, e))?;
            }
        }
        Ok(())
    }

    /// The live rules, services in the order added, servers in the order
    /// `ipvsadm -R` would re-add them (oldest first).
    pub fn to_rules(&self) -> RuleSet {
        let (mut next, mut rules) = (0, RuleSet::default());
        while !self.to_rules_step(&mut next, usize::MAX, &mut rules) {}
        rules
    }

    /// [`to_rules`](Self::to_rules) a slice at a time: the rules of the
    /// live services from service index `*next` on, looking at `max`
    /// services at most, appended to `out`; whether the table's end was
    /// reached. (A caller that must not hold its thread for 10,000
    /// services copies them over several calls, with the table unchanged
    /// in between.)
    pub fn to_rules_step(&self, next: &mut usize, max: usize, out: &mut RuleSet) -> bool {
        let end = self.services.len().min(next.saturating_add(max));
        for s in self.services[(*next).min(end)..end].iter().filter(|s| s.live) {
            let mut r = s.rule.clone();
            r.dests = s
                .order
                .iter()
                .rev()
                .map(|&d| {
                    let d = &self.dests[d.index()];
                    DestRule {
                        addr: d.addr,
                        port: d.port,
                        fwd: d.fwd,
                        weight: d.weight as u32,
                        u_threshold: d.u_threshold,
                        l_threshold: d.l_threshold,
                    }
                })
                .collect();
            out.services.push(r);
        }
        *next = end;
        end == self.services.len()
    }

    /// `ip_vs_zero_service` / `ip_vs_zero_all`: zero the traffic counters.
    pub fn zero(&mut self, key: Option<&ServiceKey>) -> Result<(), RuleError> {
        let ids: Vec<ServiceId> = match key {
            Some(k) => vec![self.lookup_key(k).ok_or(RuleError::NoSuchService)?],
            None => self.live_services().map(|s| s.id).collect(),
        };
        for id in ids {
            self.services[id.0 as usize].stats = Stats::default();
            self.services[id.0 as usize].est = Estimator::default();
            let order = self.services[id.0 as usize].order.clone();
            for d in order {
                self.dests[d.index()].stats = Stats::default();
                self.dests[d.index()].est = Estimator::default();
            }
        }
        Ok(())
    }

    /// Scheduler flags of a service (used by the listing).
    pub fn flags(&self, id: ServiceId) -> SchedFlags {
        self.services[id.0 as usize].rule.flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::ipvsadm::parse_rules;

    fn table(text: &str) -> ServiceTable {
        let mut t = ServiceTable::new();
        t.load(&parse_rules(text).unwrap(), 0).unwrap();
        t
    }

    #[test]
    fn vips_are_distinct_and_ascending() {
        let t = table(
            "-A -t 10.0.0.9:80 -s rr\n-A -t 10.0.0.2:80 -s rr\n-A -u 10.0.0.9:53 -s rr\n-A -t 10.0.0.2:443 -s rr\n-A -t 10.0.0.5:80 -s rr\n",
        );
        let v: Vec<Ipv4Addr> = t.vips().map(Ipv4Addr::from).collect();
        assert_eq!(v, ["10.0.0.2", "10.0.0.5", "10.0.0.9"].map(|a| a.parse::<Ipv4Addr>().unwrap()));
    }

    #[test]
    fn rules_copied_in_slices_equal_one_copy() {
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&format!("-A -t 10.0.1.{i}:80 -s wrr\n-a -t 10.0.1.{i}:80 -r 192.168.0.{i}:80 -m -w {i}\n"));
            text.push_str(&format!("-a -t 10.0.1.{i}:80 -r 192.168.1.{i}:80 -g -w 1\n"));
        }
        let mut t = table(&text);
        // Deleted services leave holes the slices step over.
        for i in [0, 7, 8, 49] {
            t.del_service(&parse_rules(&format!("-A -t 10.0.1.{i}:80\n")).unwrap().services[0].key, 0).unwrap();
        }
        let whole = t.to_rules();
        assert_eq!(whole.services.len(), 46);
        for max in [1, 3, 7, 50, 1000] {
            let (mut next, mut out, mut calls) = (0, RuleSet::default(), 0);
            while !t.to_rules_step(&mut next, max, &mut out) {
                calls += 1;
                assert!(calls <= 50, "the copy ends");
            }
            assert_eq!(out, whole, "slices of {max}");
        }
        // The slices are bounded: one service looked at gives at most one rule.
        let (mut next, mut out) = (0, RuleSet::default());
        assert!(!t.to_rules_step(&mut next, 1, &mut out));
        assert_eq!((next, out.services.len()), (1, 0), "service 0 was deleted");
        assert!(!t.to_rules_step(&mut next, 1, &mut out));
        assert_eq!((next, out.services.len()), (2, 1));
    }
}
