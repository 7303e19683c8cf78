//! The daemon's neighbour resolvers, feeding [`crate::neighbors`]: the
//! kernel's neighbour table and FIB through rtnetlink ([`crate::rtnl`])
//! for the interface of the director's own stack (`--host-tap`), and ARP
//! requests of the daemon's own on a simulated wire (`--wire`), whose
//! answers [`Control::frame`] reads. Run from the forwarding loop between
//! frames: the netlink socket is polled with the others, requests to the
//! kernel are answered within milliseconds, and everything is bounded by
//! the table ([`crate::neighbors::MAX_ENTRIES`], the ARP rate limit).

use super::{Daemon, DaemonError};
use crate::control::Control;
use crate::device::Device;
use crate::neighbors::Source;
use crate::rtnl::{NeighEvent, NeighWatch};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How often the real servers of the rules and their routes are looked at again.
const TARGETS_EVERY: Duration = Duration::from_secs(1);
/// How long a route lookup is kept.
const ROUTE_TTL: Duration = Duration::from_secs(10);

/// The resolvers.
pub(super) struct Resolver {
    /// rtnetlink, when the director's stack has an interface here.
    kernel: Option<NeighWatch>,
    /// That interface (`--host-tap`).
    ifindex: Option<u32>,
    /// Whether the daemon sends ARP requests of its own (a simulated wire).
    arp: bool,
    /// When the targets are due again.
    targets_due: Instant,
    /// Real servers seen last time (a change is applied at once).
    servers: Vec<Ipv4Addr>,
    /// FIB answers per real server: next hop and when asked.
    routes: HashMap<Ipv4Addr, (Ipv4Addr, Instant)>,
    /// Frames to send: ARP requests and held frames released.
    pub(super) out: Vec<Vec<u8>>,
}

impl Resolver {
    /// Resolvers for a daemon whose own stack is on `host_tap` (rtnetlink
    /// on it) and that sends its own ARP requests if `arp`.
    pub(super) fn new(host_tap: Option<&str>, arp: bool) -> Result<Resolver, DaemonError> {
        let ifindex = host_tap.and_then(crate::sys::ifindex);
        let kernel = match ifindex {
            Some(_) => Some(NeighWatch::open().map_err(super::io_err("watching the host's neighbours (rtnetlink)"))?),
            None => None,
        };
        Ok(Resolver {
            kernel,
            ifindex,
            arp,
            targets_due: Instant::now(),
            servers: Vec::new(),
            routes: HashMap::new(),
            out: Vec::new(),
        })
    }

    /// No resolver (until the daemon is set up).
    pub(super) fn inert() -> Resolver {
        Resolver {
            kernel: None,
            ifindex: None,
            arp: false,
            targets_due: Instant::now(),
            servers: Vec::new(),
            routes: HashMap::new(),
            out: Vec::new(),
        }
    }

    /// The descriptor to poll, if any.
    pub(super) fn fd(&self) -> Option<RawFd> {
        self.kernel.as_ref().map(NeighWatch::fd)
    }

    /// What the kernel said: learned or lost, for entries on our interface.
    fn apply_kernel<D: Device>(&self, ctl: &mut Control<D>, events: &[NeighEvent], now: u64) {
        for e in events {
            if Some(e.ifindex) != self.ifindex {
                continue;
            }
            let t = ctl.neighbors_mut();
            match e.mac {
                Some(m) => t.learn(e.ip, m, Source::Kernel, now),
                None => t.kernel_lost(e.ip, now),
            }
        }
    }

    /// The next hop of real server `rs`: the FIB's gateway when its route
    /// leaves through our interface, else `rs` itself (on-link; also
    /// without a kernel interface: the director's segment).
    fn next_hop(&mut self, rs: Ipv4Addr, now: Instant) -> Ipv4Addr {
        let (Some(k), Some(ifx)) = (self.kernel.as_mut(), self.ifindex) else { return rs };
        if let Some(&(nh, at)) = self.routes.get(&rs) {
            if now.duration_since(at) < ROUTE_TTL {
                return nh;
            }
        }
        let nh = match k.route(rs) {
            Ok(Some(hop)) if hop.oif == ifx => hop.gateway.unwrap_or(rs),
            _ => rs,
        };
        self.routes.insert(rs, (nh, now));
        nh
    }

    /// One turn: kernel notifications, the targets (once a second or when
    /// the rules' real servers changed), the requests due, and what the
    /// table's changes mean for the director (frames released).
    pub(super) fn work<D: Device>(&mut self, ctl: &mut Control<D>, readable: bool) {
        if !ctl.director().cfg.resolve_neighbors {
            return;
        }
        let now = ctl.director().now();
        let wall = Instant::now();
        if readable {
            if let Some(k) = self.kernel.as_mut() {
                let ev = match k.changes() {
                    Some(ev) => ev,
                    // Lost notifications: the table again.
                    None => k.dump().unwrap_or_default(),
                };
                let bad = k.bad;
                self.apply_kernel(ctl, &ev, now);
                ctl.neighbors_mut().counters.bad_input = ctl.neighbors().counters.bad_input.max(bad);
            }
        }
        let servers = ctl.real_servers();
        if wall >= self.targets_due || servers != self.servers {
            let first = self.servers.is_empty() && !servers.is_empty();
            let targets: Vec<(Ipv4Addr, Ipv4Addr)> = servers.iter().map(|&rs| (rs, self.next_hop(rs, wall))).collect();
            ctl.neighbors_mut().set_targets(targets, now);
            if first || wall >= self.targets_due {
                // What the kernel knows already, before asking it.
                if let Some(k) = self.kernel.as_mut() {
                    if let Ok(ev) = k.dump() {
                        self.apply_kernel(ctl, &ev, now);
                    }
                }
            }
            self.servers = servers;
            self.targets_due = wall + TARGETS_EVERY;
        }
        let probes = ctl.neighbors_mut().due_probes(now);
        for p in probes {
            // Kernel: resolution through the stack's own ARP (its request
            // goes out through --host-tap and the card); wire: our own.
            if let (Some(k), Some(ifx)) = (self.kernel.as_mut(), self.ifindex) {
                // A refusal (the interface went away) shows as a failed entry.
                let _ = k.resolve(p.ip, ifx);
            }
            if self.arp {
                let cfg = &ctl.director().cfg;
                self.out.push(crate::neighbors::arp_request(cfg.mac, cfg.ip, p.ip, p.known));
                ctl.neighbors_mut().counters.arp_requests += 1;
            }
        }
        let released = ctl.apply_neighbors();
        self.out.extend(released);
    }

    /// How long the loop may sleep before a request is due (ms).
    pub(super) fn poll_timeout<D: Device>(&self, ctl: &Control<D>, timeout: i32) -> i32 {
        if !ctl.director().cfg.resolve_neighbors {
            return timeout;
        }
        let now = ctl.director().now();
        let due = ctl.neighbors().next_due().map(|t| (t.saturating_sub(now) / 1_000_000).min(1000) as i32);
        let targets = self.targets_due.saturating_duration_since(Instant::now()).as_millis().min(1000) as i32;
        timeout.min(due.unwrap_or(1000).max(1)).min(targets.max(1))
    }
}

impl<D: Device> Daemon<D> {
    /// The resolvers' turn ([`Resolver::work`]).
    pub(super) fn neighbor_work(&mut self, readable: bool) {
        self.neigh.work(&mut self.ctl, readable);
    }
}
