//! IPVS schedulers, decision for decision as Linux `net/netfilter/ipvs/ip_vs_*.c`.
//!
//! A scheduler sees its service through a [`SvcView`]: the real servers in
//! the kernel's list order (newest added first, `list_add_rcu` in
//! `__ip_vs_update_dest`), their weights, counters and flags. It is told about
//! list changes with the same callbacks the kernel uses (`add_dest`,
//! `del_dest`, `upd_dest`) and picks a server for a new connection with
//! [`Scheduler::schedule`].
//!
//! One module per kernel scheduler (`rr`, `wrr`, `lc`, `wlc`, `sed`, `nq`,
//! `fo`, `ovf`, `sh`, `dh`, `mh`, `lblc`, `lblcr`, `twos`), each naming the
//! kernel functions it follows; shared pieces in [`hash`] (`hash_32`, `fls`,
//! `gcd`) and [`siphash`] (the kernel's `hsiphash`); the unit tests' `testing`
//! harness drives a scheduler the way `ip_vs_ctl.c` does.
//!
//! How the owner of a service must drive a scheduler (what the kernel does):
//! * [`new_scheduler`] when the service is created (`ipvsadm -A`, empty list)
//!   and when `ipvsadm -E` changes the scheduler *name* (`ip_vs_edit_service`
//!   rebinds only if the scheduler differs), with the list at that moment.
//! * [`Scheduler::add_dest`] after a server was put at the head of the list
//!   (also when a deleted server is revived); its `last_weight` must already
//!   be its weight (`__ip_vs_update_dest`).
//! * [`Scheduler::del_dest`] after the server was removed from the list and
//!   marked unavailable, with its former position.
//! * [`Scheduler::upd_dest`] after every `ipvsadm -e` of a server (any field),
//!   with `last_weight` updated to the new weight if that is not 0.
//! * [`Scheduler::schedule`] with non-decreasing `now` (lblc/lblcr run their
//!   periodic garbage collection lazily up to `now`).
//! * `schedule` reads `svc.flags` each time (`sh-port`, `sh-fallback`, ...),
//!   as the kernel reads `svc->flags`.
//!
//! `schedule` does not allocate, except that lblc/lblcr may when they create
//! a cache entry (the kernel `kmalloc`s one); see `tests.rs`.

use crate::dest::{Dest, DestId};
use crate::rng::RandomSource;
use crate::rules::{Protocol, SchedFlags};
use crate::time::{secs, Time};
use std::net::IpAddr;

pub mod hash;
pub mod siphash;
#[cfg(test)]
pub(crate) mod testing;

pub mod dh;
pub mod fo;
pub mod lblc;
pub mod lblcr;
pub mod lc;
pub mod mh;
pub mod nq;
pub mod ovf;
pub mod rr;
pub mod sed;
pub mod sh;
pub mod twos;
pub mod wlc;
pub mod wrr;

/// What a scheduler may look at in its service.
#[derive(Clone, Copy)]
pub struct SvcView<'a> {
    /// The director's arena of real servers (indexed by [`DestId`]).
    pub dests: &'a [Box<Dest>],
    /// This service's servers in kernel list order: index 0 is the newest.
    pub order: &'a [DestId],
    /// Scheduler flags (`-b`).
    pub flags: SchedFlags,
    /// Service protocol.
    pub proto: Protocol,
    /// Service port (0 for a port-0 service).
    pub port: u16,
    /// The service is IPv6 (`svc->af == AF_INET6`): how mh folds its
    /// servers' addresses.
    pub v6: bool,
}

impl<'a> SvcView<'a> {
    /// The server with this id.
    pub fn dest(&self, id: DestId) -> &'a Dest {
        &self.dests[id.index()]
    }

    /// The service's servers in list order, with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (DestId, &'a Dest)> + 'a {
        let dests = self.dests;
        self.order.iter().map(move |&id| (id, &*dests[id.index()]))
    }

    /// Number of servers in the list (`svc->num_dests`).
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the service has no server.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// The packet facts schedulers hash on (from `struct ip_vs_iphdr` and the
/// transport header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedPacket {
    /// Source address.
    pub saddr: IpAddr,
    /// Destination address.
    pub daddr: IpAddr,
    /// Source port; 0 when the packet has none (fragment, other protocol).
    pub sport: u16,
    /// Destination port; 0 when the packet has none.
    pub dport: u16,
    /// IP protocol number.
    pub proto: u8,
}

/// A scheduling algorithm bound to one service (`struct ip_vs_scheduler` +
/// its `svc->sched_data`).
pub trait Scheduler: Send + std::fmt::Debug {
    /// Kernel name (`rr`, `wlc`, ...).
    fn name(&self) -> &'static str;

    /// Called after `id` was inserted at the head of the list
    /// (`svc.order[0] == id`), or after a deleted server was revived.
    fn add_dest(&mut self, _svc: &SvcView, _id: DestId) {}

    /// Called after `id` was removed from the list; `former_pos` is the
    /// index it had in `svc.order` before removal.
    fn del_dest(&mut self, _svc: &SvcView, _id: DestId, _former_pos: usize) {}

    /// Called after the weight or thresholds of `id` were edited.
    fn upd_dest(&mut self, _svc: &SvcView, _id: DestId) {}

    /// Picks a real server for a new connection (or persistence template),
    /// or `None` when no server is available (the kernel then calls
    /// `ip_vs_scheduler_err` and the packet gets `ip_vs_leave`).
    fn schedule(
        &mut self,
        svc: &SvcView,
        pkt: &SchedPacket,
        now: Time,
        rng: &mut dyn RandomSource,
    ) -> Option<DestId>;
}

/// Scheduler names the model implements.
pub const SCHEDULERS: &[&str] = &[
    "rr", "wrr", "lc", "wlc", "sed", "nq", "fo", "ovf", "sh", "dh", "mh", "lblc", "lblcr", "twos",
];

/// Error for a scheduler name the kernel would not find a module for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheduler '{0}' (known: rr wrr lc wlc sed nq fo ovf sh dh mh lblc lblcr twos)")]
pub struct UnknownScheduler(pub String);

/// The sysctls that change scheduler decisions (`/proc/sys/net/ipv4/vs/*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedSysctls {
    /// `lblc_expiration`: an lblc cache entry unused this long is dropped by
    /// the next full check (default `24*60*60*HZ`, ip_vs_lblc.c
    /// `DEFAULT_EXPIRATION`).
    pub lblc_expiration: Time,
    /// `lblcr_expiration`: same for lblcr entries, and the age after which an
    /// lblcr server set with more than one member loses its most loaded member
    /// (default 24 h, ip_vs_lblcr.c `DEFAULT_EXPIRATION`).
    pub lblcr_expiration: Time,
}

impl Default for SchedSysctls {
    fn default() -> Self {
        SchedSysctls { lblc_expiration: secs(24 * 60 * 60), lblcr_expiration: secs(24 * 60 * 60) }
    }
}

/// Binds scheduler `name` to a service (`ip_vs_bind_scheduler` →
/// `init_service`), with the service's current list: empty when called from
/// `ipvsadm -A`, the existing servers when the scheduler is switched with
/// `ipvsadm -E`. `now` is that moment; lblc/lblcr arm their 60 s garbage
/// collection timer from it. Default sysctls.
pub fn new_scheduler(name: &str, svc: &SvcView, now: Time) -> Result<Box<dyn Scheduler>, UnknownScheduler> {
    new_scheduler_with(name, svc, now, &SchedSysctls::default())
}

/// [`new_scheduler`] with explicit sysctls.
pub fn new_scheduler_with(
    name: &str,
    svc: &SvcView,
    now: Time,
    sysctls: &SchedSysctls,
) -> Result<Box<dyn Scheduler>, UnknownScheduler> {
    Ok(match name {
        "rr" => Box::new(rr::Rr::new(svc)),
        "wrr" => Box::new(wrr::Wrr::new(svc)),
        "lc" => Box::new(lc::Lc),
        "wlc" => Box::new(wlc::Wlc),
        "sed" => Box::new(sed::Sed),
        "nq" => Box::new(nq::Nq),
        "fo" => Box::new(fo::Fo),
        "ovf" => Box::new(ovf::Ovf),
        "sh" => Box::new(sh::Sh::new(svc)),
        "dh" => Box::new(dh::Dh::new(svc)),
        "mh" => Box::new(mh::Mh::new(svc)),
        "lblc" => Box::new(lblc::Lblc::new(svc, now, sysctls.lblc_expiration)),
        "lblcr" => Box::new(lblcr::Lblcr::new(svc, now, sysctls.lblcr_expiration)),
        "twos" => Box::new(twos::Twos),
        _ => return Err(UnknownScheduler(name.to_string())),
    })
}

#[cfg(test)]
mod tests;
