//! The daemon's neighbour resolvers, feeding [`crate::neighbors`]:
//!
//! * the kernel's neighbour tables (IPv4 and IPv6) and FIB through
//!   rtnetlink ([`crate::rtnl`]) for the interface of the director's own
//!   stack (`--host-tap`), on a thread of its own ([`KernelThread`]): it follows
//!   the neighbour notifications, dumps the table once a second, looks up
//!   the real servers' routes and asks the kernel to resolve next hops, and
//!   hands what it learns to the forwarding loop through a bounded queue
//!   (an eventfd wakes the loop; a full queue is counted, and the next
//!   dump makes up for what it refused). A slow or flooding kernel socket
//!   costs that thread only;
//! * ARP requests of the daemon's own on a simulated wire (`--wire`, and a
//!   card without `--host-tap`), whose answers [`Control::frame`] reads
//!   (IPv4 only: IPv6 real servers are resolved through the kernel, so
//!   only with `--host-tap`; without it they are reached as before, through
//!   `[neighbors]` or `gateway_mac`).
//!
//! Everything is bounded by the table ([`crate::neighbors::MAX_ENTRIES`],
//! the ARP rate limit) and by the queues.

use super::{Daemon, DaemonError};
use crate::control::Control;
use crate::device::Device;
use crate::neighbors::Source;
use crate::rtnl::{NeighEvent, NeighWatch};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the real servers of the rules and their routes are looked at again.
const TARGETS_EVERY: Duration = Duration::from_secs(1);
/// Requests queued for the kernel thread at most.
const TO_KERNEL: usize = 64;
/// Answers queued for the loop at most.
const FROM_KERNEL: usize = 256;
/// Neighbour events per answer at most (a dump of a larger table is cut).
const EVENTS_PER_ANSWER: usize = 4 * crate::neighbors::MAX_ENTRIES;

/// What the loop asks of the kernel thread.
enum Ask {
    /// The routes of these real servers.
    Routes(Vec<IpAddr>),
    /// Resolve these next hops.
    Resolve(Vec<IpAddr>),
}

/// What the kernel thread tells the loop.
enum Told {
    /// Neighbours on our interface (a dump or notifications).
    Neigh(Vec<NeighEvent>),
    /// Real server → next hop (the FIB's gateway, or itself), and the
    /// gateway of the default route out of our interface.
    Routes(Vec<(IpAddr, IpAddr)>, Option<Ipv4Addr>),
}

/// The kernel side, on its own thread.
struct KernelThread {
    tx: SyncSender<Ask>,
    rx: Receiver<Told>,
    wake: Arc<crate::sys::EventFd>,
    stop: Arc<AtomicBool>,
    /// Answers the queue refused.
    refused: Arc<AtomicU64>,
    /// Messages that did not parse.
    bad: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KernelThread {
    fn start(ifindex: u32) -> std::io::Result<KernelThread> {
        let mut nw = NeighWatch::open()?;
        let (tx, ask_rx) = sync_channel::<Ask>(TO_KERNEL);
        let (told_tx, rx) = sync_channel::<Told>(FROM_KERNEL);
        let wake = Arc::new(crate::sys::EventFd::new()?);
        let stop = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicU64::new(0));
        let bad = Arc::new(AtomicU64::new(0));
        let (w, s, r, b) = (wake.clone(), stop.clone(), refused.clone(), bad.clone());
        let thread = std::thread::Builder::new().name("lvsnic-rtnl".into()).spawn(move || {
            let send = |t: Told| match told_tx.try_send(t) {
                Ok(()) => {
                    w.notify();
                    true
                }
                Err(TrySendError::Full(_)) => {
                    r.fetch_add(1, Ordering::Relaxed);
                    w.notify();
                    true
                }
                Err(TrySendError::Disconnected(_)) => false,
            };
            let ours = |ev: Vec<NeighEvent>| -> Vec<NeighEvent> {
                ev.into_iter().filter(|e| e.ifindex == ifindex).take(EVENTS_PER_ANSWER).collect()
            };
            // Which of our interface's neighbours the kernel has a MAC for:
            // those are never asked to resolve (an `RTM_NEWNEIGH` updates the
            // entry's state before `neigh_event_send`, so it would knock a
            // permanent or reachable entry down to incomplete).
            let mut usable: HashMap<IpAddr, bool> = HashMap::new();
            let mut next_dump = Instant::now();
            while !s.load(Ordering::Relaxed) {
                if Instant::now() >= next_dump {
                    // The whole table once a second: what a lost
                    // notification or a refused answer missed.
                    if let Ok(ev) = nw.dump() {
                        let ev = ours(ev);
                        usable = ev.iter().map(|e| (e.ip, e.mac.is_some())).collect();
                        if !send(Told::Neigh(ev)) {
                            return;
                        }
                    }
                    next_dump = Instant::now() + TARGETS_EVERY;
                }
                let readable = crate::sys::poll_readable(&[nw.fd()], 50).map(|r| r[0]).unwrap_or(false);
                if readable {
                    match nw.changes() {
                        Some(ev) => {
                            let ev = ours(ev);
                            for e in &ev {
                                if usable.len() < EVENTS_PER_ANSWER || usable.contains_key(&e.ip) {
                                    usable.insert(e.ip, e.mac.is_some());
                                }
                            }
                            if !ev.is_empty() && !send(Told::Neigh(ev)) {
                                return;
                            }
                        }
                        None => next_dump = Instant::now(),
                    }
                }
                while let Ok(a) = ask_rx.try_recv() {
                    match a {
                        Ask::Routes(servers) => {
                            let routes = servers
                                .into_iter()
                                .map(|rs| {
                                    let nh = match nw.route(rs) {
                                        Ok(Some(hop)) if hop.oif == ifindex => hop.gateway.unwrap_or(rs),
                                        _ => rs,
                                    };
                                    (rs, nh)
                                })
                                .collect();
                            let default = nw.default_gateway(ifindex).ok().flatten();
                            if !send(Told::Routes(routes, default)) {
                                return;
                            }
                        }
                        Ask::Resolve(ips) => {
                            for ip in ips.into_iter().filter(|ip| !usable.get(ip).copied().unwrap_or(false)) {
                                // A refusal (the interface went away) shows as a failed entry.
                                let _ = nw.resolve(ip, ifindex);
                            }
                        }
                    }
                }
                b.store(nw.bad, Ordering::Relaxed);
            }
        })?;
        Ok(KernelThread { tx, rx, wake, stop, refused, bad, thread: Some(thread) })
    }

    fn ask(&self, a: Ask) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(a) {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for KernelThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The resolvers.
pub(super) struct Resolver {
    /// rtnetlink, when the director's stack has an interface here.
    kernel: Option<KernelThread>,
    /// Whether the daemon sends ARP requests of its own (a simulated wire).
    arp: bool,
    /// When the targets are due again.
    targets_due: Instant,
    /// The FIB's next hop per real server (the kernel thread's answers).
    routes: HashMap<IpAddr, IpAddr>,
    /// Frames to send: ARP requests and held frames released.
    pub(super) out: Vec<Vec<u8>>,
}

impl Resolver {
    /// No resolver (until the daemon is set up).
    pub(super) fn inert() -> Resolver {
        Resolver { kernel: None, arp: false, targets_due: Instant::now(), routes: HashMap::new(), out: Vec::new() }
    }

    /// Resolvers for a daemon whose own stack is on `host_tap` (rtnetlink
    /// on it) and that sends its own ARP requests if `arp`.
    pub(super) fn new(host_tap: Option<&str>, arp: bool) -> Result<Resolver, DaemonError> {
        let kernel = match host_tap.and_then(crate::sys::ifindex) {
            Some(ifx) => Some(KernelThread::start(ifx).map_err(super::io_err("watching the host's neighbours (rtnetlink)"))?),
            None => None,
        };
        Ok(Resolver { kernel, arp, ..Resolver::inert() })
    }

    /// The descriptor to poll (the kernel thread's wake-up), if any.
    pub(super) fn fd(&self) -> Option<RawFd> {
        self.kernel.as_ref().map(|k| k.wake.fd())
    }

    /// One turn: what the kernel thread told, the targets (once a second,
    /// or at once for a real server a frame was held for), the requests
    /// due, and what the table's changes mean for the director (frames
    /// released).
    pub(super) fn work<D: Device>(&mut self, ctl: &mut Control<D>, readable: bool) {
        if !ctl.director().cfg.resolve_neighbors {
            return;
        }
        let now = ctl.director().now();
        let wall = Instant::now();
        let mut routes_changed = false;
        if let (Some(k), true) = (self.kernel.as_ref(), readable) {
            k.wake.drain();
            while let Ok(t) = k.rx.try_recv() {
                match t {
                    Told::Neigh(ev) => {
                        let table = ctl.neighbors_mut();
                        for e in ev {
                            match e.mac {
                                Some(m) => table.learn(e.ip, m, Source::Kernel, now),
                                None => table.kernel_lost(e.ip, now),
                            }
                        }
                    }
                    Told::Routes(r, default) => {
                        for (rs, nh) in r {
                            routes_changed |= self.routes.insert(rs, nh) != Some(nh);
                        }
                        // `gateway = "fib"`: the default route's gateway.
                        let cfg = &ctl.director().cfg;
                        if cfg.gateway_from_fib && cfg.gateway_mac.is_none() && cfg.gateway != default {
                            ctl.set_gateway_address(default);
                            routes_changed = true;
                        }
                    }
                }
            }
            let c = &mut ctl.neighbors_mut().counters;
            c.bad_input = c.bad_input.max(k.bad.load(Ordering::Relaxed));
        }
        if wall >= self.targets_due || routes_changed || ctl.neighbors_mut().take_new_targets() {
            let servers = ctl.real_servers();
            self.routes.retain(|rs, _| servers.binary_search(rs).is_ok());
            let targets: Vec<(IpAddr, IpAddr)> =
                servers.iter().map(|&rs| (rs, self.routes.get(&rs).copied().unwrap_or(rs))).collect();
            // The gateway towards the clients, when only its address is
            // configured: learned like a real server on the link.
            let cfg = &ctl.director().cfg;
            let gateway = cfg.gateway.filter(|_| cfg.gateway_mac.is_none());
            ctl.neighbors_mut().set_gateway(gateway);
            ctl.neighbors_mut().set_targets(targets, now);
            if wall >= self.targets_due {
                if let Some(k) = &self.kernel {
                    k.ask(Ask::Routes(servers));
                }
                self.targets_due = wall + TARGETS_EVERY;
            }
        }
        let probes = ctl.neighbors_mut().due_probes(now);
        if !probes.is_empty() {
            if let Some(k) = &self.kernel {
                // Resolution through the stack's own ARP (its request goes
                // out through --host-tap and the card).
                k.ask(Ask::Resolve(probes.iter().map(|p| p.ip).collect()));
            }
            if self.arp {
                let (mac, ip) = (ctl.director().cfg.mac, ctl.director().cfg.ip);
                let mut sent = 0;
                for p in &probes {
                    // (IPv6 next hops are tracked only with the kernel's resolver.)
                    if let IpAddr::V4(target) = p.ip {
                        self.out.push(crate::neighbors::arp_request(mac, ip, target, p.known));
                        sent += 1;
                    }
                }
                ctl.neighbors_mut().counters.arp_requests += sent;
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

    /// Answers of the kernel thread its queue refused (for `lvsnic status`).
    pub(super) fn refused(&self) -> u64 {
        self.kernel.as_ref().map(|k| k.refused.load(Ordering::Relaxed)).unwrap_or(0)
    }
}

impl<D: Device> Daemon<D> {
    /// The resolvers' turn ([`Resolver::work`]).
    pub(super) fn neighbor_work(&mut self, readable: bool) {
        self.neigh.work(&mut self.ctl, readable);
        let refused = self.neigh.refused();
        let c = &mut self.ctl.neighbors_mut().counters;
        c.queue_refused = c.queue_refused.max(refused);
    }
}
