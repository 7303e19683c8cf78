//! Real servers as the kernel keeps them (`struct ip_vs_dest`), their
//! traffic counters (`struct ip_vs_kstats`) and rate estimator: what both
//! the schedulers ([`crate::sched`], through their view of a service) and
//! the service table ([`crate::ipvs`]) work with. Below both, so that
//! services depend on schedulers and not the other way round.
//!
//! Real servers live in one arena ([`Dest`] by [`DestId`]) for the lifetime
//! of the director: a deleted server keeps its slot (the kernel moves it to a
//! trash list and revives it when the same server is added again), so
//! connections may keep pointing at it.

pub mod estimator;

pub use estimator::{Estimator, Rates};

use crate::rules::FwdMethod;
use std::net::{IpAddr, Ipv4Addr};

/// Index of a service in the table's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct ServiceId(pub u32);

/// Index of a real server in the director's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct DestId(pub u32);

impl DestId {
    /// The arena index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Traffic counters (`struct ip_vs_kstats`), what `ipvsadm -L --stats` shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Connections scheduled.
    pub conns: u64,
    /// Packets client → real server.
    pub inpkts: u64,
    /// Packets real server → client (seen by the director, i.e. NAT only).
    pub outpkts: u64,
    /// Bytes (IP total length) client → real server.
    pub inbytes: u64,
    /// Bytes real server → client.
    pub outbytes: u64,
}

/// A real server of a service (`struct ip_vs_dest`).
#[derive(Clone, Debug)]
pub struct Dest {
    /// The service this server belongs to.
    pub svc: ServiceId,
    /// Real server address (`dest->af` is its family; it may differ from
    /// its service's for tunnels).
    pub addr: IpAddr,
    /// Real server port.
    pub port: u16,
    /// Forwarding method.
    pub fwd: FwdMethod,
    /// Current weight (kernel `atomic_t weight`), 0..=INT_MAX.
    pub weight: i32,
    /// Latest non-zero weight (kernel `last_weight`: set on add, and on edit
    /// only when the new weight is not 0; mh uses it).
    pub last_weight: i32,
    /// `-x` upper threshold, 0 = none.
    pub u_threshold: u32,
    /// `-y` lower threshold, 0 = none.
    pub l_threshold: u32,
    /// Connections in an active state (kernel `activeconns`).
    pub activeconns: i32,
    /// Connections in an inactive state (kernel `inactconns`).
    pub inactconns: i32,
    /// Persistence templates bound to this server (kernel `persistconns`).
    pub persistconns: i32,
    /// `IP_VS_DEST_F_AVAILABLE`: in its service's list (false once deleted).
    pub available: bool,
    /// `IP_VS_DEST_F_OVERLOAD`: upper threshold reached.
    pub overloaded: bool,
    /// Traffic counters.
    pub stats: Stats,
    /// Rate estimator over `stats` (`ipvsadm -L --rate`).
    pub est: Estimator,
}

impl Dest {
    /// A fresh, available server with zero counters.
    pub fn new(svc: ServiceId, addr: IpAddr, port: u16, fwd: FwdMethod, weight: i32) -> Self {
        Dest {
            svc,
            addr,
            port,
            fwd,
            weight,
            last_weight: weight,
            u_threshold: 0,
            l_threshold: 0,
            activeconns: 0,
            inactconns: 0,
            persistconns: 0,
            available: true,
            overloaded: false,
            stats: Stats::default(),
            est: Estimator::default(),
        }
    }

    /// `ip_vs_dest_conn_overhead`: `(activeconns << 8) + inactconns`, the
    /// load measure of lc/wlc/lblc/lblcr/fo... (ip_vs.h).
    pub fn conn_overhead(&self) -> i32 {
        self.activeconns.wrapping_shl(8).wrapping_add(self.inactconns)
    }

    /// The address and port of this server.
    pub fn sockaddr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::new(self.addr, self.port)
    }

    /// The IPv4 address in host order, for the IPv4 packet path; 0 for an
    /// IPv6 server, which that path never reaches (a service's servers are
    /// of its own family: see `ServiceTable::add_dest`).
    #[inline]
    pub fn addr4(&self) -> u32 {
        self.addr_v4().map_or(0, u32::from)
    }

    /// The address when the server is IPv4.
    pub fn addr_v4(&self) -> Option<Ipv4Addr> {
        match self.addr {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        }
    }
}
