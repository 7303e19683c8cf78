//! A small harness that drives a scheduler the way `ip_vs_ctl.c` does, for
//! the schedulers' unit tests (compiled only for them).
//!
//! It keeps an arena of [`Dest`]s and one service's list in kernel order
//! (index 0 = newest; adding A, B, C gives `[C, B, A]`), and calls the
//! scheduler callbacks exactly where the kernel does:
//!
//! * [`TestService::add`]: `__ip_vs_update_dest(..., add=1)`: sets weight and
//!   `last_weight`, marks the server available, clears the overload flag (no
//!   upper threshold), `list_add_rcu` at the head, then `add_dest`. Adding a
//!   server that was deleted revives the same arena slot (the kernel's trash).
//! * [`TestService::del`]: `__ip_vs_unlink_dest`: clears `available`,
//!   `list_del_rcu`, then `del_dest` with the former list position.
//! * [`TestService::set_weight`]: `__ip_vs_update_dest(..., add=0)`:
//!   `last_weight` keeps the latest non-zero weight, then `upd_dest`.
//! * Counters and the overload flag are set directly (the kernel changes them
//!   from the connection code without telling the scheduler).

use super::{new_scheduler_with, SchedPacket, SchedSysctls, Scheduler, SvcView};
use crate::dest::{Dest, DestId, ServiceId};
use crate::rng::{RandomSource, SplitMix64};
use crate::rules::{FwdMethod, Protocol, SchedFlags};
use crate::time::Time;
use std::net::Ipv4Addr;

/// A random source that replays scripted values, then continues with a
/// seeded SplitMix64; counts how many values were drawn.
#[derive(Clone, Debug)]
pub struct ScriptedRandom {
    values: Vec<u32>,
    pos: usize,
    fallback: SplitMix64,
    draws: usize,
}

impl ScriptedRandom {
    /// A source that returns `values` in order, then a fixed-seed sequence.
    pub fn new(values: Vec<u32>) -> Self {
        ScriptedRandom { values, pos: 0, fallback: SplitMix64::new(0x5EED), draws: 0 }
    }

    /// Replace the remaining script.
    pub fn script(&mut self, values: Vec<u32>) {
        self.values = values;
        self.pos = 0;
    }

    /// Values drawn so far (scripted or not).
    pub fn draws(&self) -> usize {
        self.draws
    }
}

impl RandomSource for ScriptedRandom {
    fn next_u32(&mut self) -> u32 {
        self.draws += 1;
        if self.pos < self.values.len() {
            self.pos += 1;
            self.values[self.pos - 1]
        } else {
            self.fallback.next_u32()
        }
    }
}

/// One virtual service with a scheduler, driven like ip_vs_ctl.c drives it.
pub struct TestService {
    /// The real server arena.
    pub dests: Vec<Box<Dest>>,
    /// The service's servers in kernel list order (newest first).
    pub order: Vec<DestId>,
    /// Scheduler flags (`-b`).
    pub flags: SchedFlags,
    /// Service protocol.
    pub proto: Protocol,
    /// Service port.
    pub port: u16,
    /// The service is IPv6.
    pub v6: bool,
    /// The sysctls the scheduler was bound with.
    pub sysctls: SchedSysctls,
    /// The scheduler under test.
    pub sched: Box<dyn Scheduler>,
    /// Current time, given to `schedule`.
    pub now: Time,
    /// Random source for `twos`.
    pub rng: ScriptedRandom,
    /// Packet used by [`TestService::pick`].
    pub pkt: SchedPacket,
}

impl TestService {
    /// An empty TCP service on port 80 with scheduler `name`, created at time 0
    /// (the kernel binds the scheduler in `ip_vs_add_service`, before any
    /// server is added).
    pub fn new(name: &str) -> Self {
        Self::with(name, SchedFlags::default(), SchedSysctls::default())
    }

    /// As [`TestService::new`] with scheduler flags (`-b`).
    pub fn with_flags(name: &str, flags: SchedFlags) -> Self {
        Self::with(name, flags, SchedSysctls::default())
    }

    /// As [`TestService::new`] with flags and sysctls.
    pub fn with(name: &str, flags: SchedFlags, sysctls: SchedSysctls) -> Self {
        let view = SvcView { dests: &[], order: &[], flags, proto: Protocol::Tcp, port: 80, v6: false };
        let sched = new_scheduler_with(name, &view, 0, &sysctls).expect("known scheduler");
        TestService {
            dests: Vec::new(),
            order: Vec::new(),
            flags,
            proto: Protocol::Tcp,
            port: 80,
            v6: false,
            sysctls,
            sched,
            now: 0,
            rng: ScriptedRandom::new(Vec::new()),
            pkt: SchedPacket {
                saddr: Ipv4Addr::new(192, 0, 2, 10).into(),
                daddr: Ipv4Addr::new(198, 51, 100, 1).into(),
                sport: 40000,
                dport: 80,
                proto: 6,
            },
        }
    }

    /// The scheduler's view of the service.
    pub fn view(&self) -> SvcView<'_> {
        SvcView { dests: &self.dests, order: &self.order, flags: self.flags, proto: self.proto, port: self.port, v6: self.v6 }
    }

    /// `ipvsadm -a -r addr:80 -w weight`. Returns the server's id (the same id
    /// again when a deleted server is re-added).
    pub fn add(&mut self, addr: impl Into<std::net::IpAddr>, weight: i32) -> DestId {
        self.add_port(addr, 80, weight)
    }

    /// `ipvsadm -a -r addr:port -w weight`.
    pub fn add_port(&mut self, addr: impl Into<std::net::IpAddr>, port: u16, weight: i32) -> DestId {
        let addr: std::net::IpAddr = addr.into();
        let existing = self.dests.iter().position(|d| d.addr == addr && d.port == port);
        let id = match existing {
            Some(i) => {
                let id = DestId(i as u32);
                assert!(!self.order.contains(&id), "server {addr}:{port} already in the service");
                let d = &mut self.dests[i];
                d.weight = weight;
                d.last_weight = weight;
                d.available = true;
                d.overloaded = false;
                id
            }
            None => {
                let id = DestId(self.dests.len() as u32);
                self.dests.push(Box::new(Dest::new(ServiceId(0), addr, port, FwdMethod::Route, weight)));
                id
            }
        };
        self.order.insert(0, id);
        let view = SvcView { dests: &self.dests, order: &self.order, flags: self.flags, proto: self.proto, port: self.port, v6: self.v6 };
        self.sched.add_dest(&view, id);
        id
    }

    /// `ipvsadm -d`: unlink the server, then `del_dest`.
    pub fn del(&mut self, id: DestId) {
        let pos = self.order.iter().position(|&x| x == id).expect("server in the service");
        self.order.remove(pos);
        self.dests[id.index()].available = false;
        let view = SvcView { dests: &self.dests, order: &self.order, flags: self.flags, proto: self.proto, port: self.port, v6: self.v6 };
        self.sched.del_dest(&view, id, pos);
    }

    /// `ipvsadm -e -w weight`: new weight, `last_weight` = latest non-zero
    /// weight, then `upd_dest`.
    pub fn set_weight(&mut self, id: DestId, weight: i32) {
        let d = &mut self.dests[id.index()];
        d.weight = weight;
        if weight != 0 {
            d.last_weight = weight;
        }
        let view = SvcView { dests: &self.dests, order: &self.order, flags: self.flags, proto: self.proto, port: self.port, v6: self.v6 };
        self.sched.upd_dest(&view, id);
    }

    /// Set the connection counters (no scheduler callback, as in the kernel).
    pub fn set_conns(&mut self, id: DestId, active: i32, inact: i32) {
        let d = &mut self.dests[id.index()];
        d.activeconns = active;
        d.inactconns = inact;
    }

    /// Set or clear `IP_VS_DEST_F_OVERLOAD` (no scheduler callback).
    pub fn set_overloaded(&mut self, id: DestId, overloaded: bool) {
        self.dests[id.index()].overloaded = overloaded;
    }

    /// `ipvsadm -E -s name`: a new scheduler bound to the current list at `now`.
    pub fn switch_scheduler(&mut self, name: &str) {
        let view = SvcView { dests: &self.dests, order: &self.order, flags: self.flags, proto: self.proto, port: self.port, v6: self.v6 };
        self.sched = new_scheduler_with(name, &view, self.now, &self.sysctls).expect("known scheduler");
    }

    /// Schedule a new connection with the default packet at the current time.
    pub fn pick(&mut self) -> Option<DestId> {
        let pkt = self.pkt;
        self.pick_pkt(pkt)
    }

    /// Schedule a new connection for `pkt` at the current time.
    pub fn pick_pkt(&mut self, pkt: SchedPacket) -> Option<DestId> {
        let view = SvcView { dests: &self.dests, order: &self.order, flags: self.flags, proto: self.proto, port: self.port, v6: self.v6 };
        self.sched.schedule(&view, &pkt, self.now, &mut self.rng)
    }

    /// Schedule for a packet from `saddr` (default packet otherwise).
    pub fn pick_from(&mut self, saddr: impl Into<std::net::IpAddr>) -> Option<DestId> {
        let pkt = SchedPacket { saddr: saddr.into(), ..self.pkt };
        self.pick_pkt(pkt)
    }

    /// Schedule for a packet from `saddr:sport`.
    pub fn pick_from_port(&mut self, saddr: impl Into<std::net::IpAddr>, sport: u16) -> Option<DestId> {
        let pkt = SchedPacket { saddr: saddr.into(), sport, ..self.pkt };
        self.pick_pkt(pkt)
    }

    /// Schedule for a packet to `daddr` (lblc/lblcr/dh key).
    pub fn pick_to(&mut self, daddr: impl Into<std::net::IpAddr>) -> Option<DestId> {
        let pkt = SchedPacket { daddr: daddr.into(), ..self.pkt };
        self.pick_pkt(pkt)
    }

    /// `n` picks with the default packet.
    pub fn picks(&mut self, n: usize) -> Vec<Option<DestId>> {
        (0..n).map(|_| self.pick()).collect()
    }
}

/// Shorthand for `Ipv4Addr::new(10, 0, 0, last)`.
pub fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, last)
}
