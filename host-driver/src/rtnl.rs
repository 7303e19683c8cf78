//! rtnetlink, through the `netlink-packet-route` and `netlink-sys` crates
//! (used synchronously: plain sockets, no async runtime): the host's
//! address changes (`--vips host`), its neighbour tables, IPv4 (ARP) and
//! IPv6 (Neighbour Discovery) (dumped at start, then followed through
//! `RTNLGRP_NEIGH`, which carries both families), a resolution request for
//! a neighbour it does not know (`RTM_NEWNEIGH` with `NTF_USE`, which
//! makes the kernel send its ARP request or Neighbour Solicitation as a
//! packet to it would: `neigh_event_send` in net/core/neighbour.c's
//! `neigh_add`, the same for `arp_tbl` and `nd_tbl`), and the FIB's route
//! to a real server (`RTM_GETROUTE` of either family: output interface
//! and gateway, as `ip route get` prints them).
//!
//! Every message from the kernel is parsed by the crate; one that does not
//! parse is counted ([`NeighWatch::bad`]) and skipped, never a panic.

use lvsnic_model::wire::MacAddr;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteType};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::{AsRawFd, RawFd};

/// `RTMGRP_IPV4_IFADDR` (`<linux/rtnetlink.h>`): the legacy group bit.
const RTMGRP_IPV4_IFADDR: u32 = 0x10;
/// `RTMGRP_IPV6_IFADDR`.
const RTMGRP_IPV6_IFADDR: u32 = 0x100;
/// `RTMGRP_NEIGH`.
const RTMGRP_NEIGH: u32 = 0x4;

/// A non-blocking rtnetlink socket bound to `groups`.
fn subscribed(groups: u32) -> io::Result<Socket> {
    let mut s = Socket::new(NETLINK_ROUTE)?;
    s.bind(&SocketAddr::new(0, groups))?;
    s.set_non_blocking(true)?;
    Ok(s)
}

/// Reads one datagram without blocking: its length, or None when none waits.
/// An overflowed socket (`ENOBUFS`: notifications were lost) reads as
/// `Some(0)`.
fn recv_now(s: &Socket, buf: &mut [u8]) -> io::Result<Option<usize>> {
    let mut b = &mut buf[..];
    match s.recv(&mut b, libc::MSG_DONTWAIT) {
        Ok(n) => Ok(Some(n.min(buf.len()))),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(Some(0)),
        Err(e) => Err(e),
    }
}

/// The netlink messages in one datagram, in order; the rest of a datagram
/// after a message that does not parse is skipped (and counted in `bad`).
fn messages(mut buf: &[u8], bad: &mut u64) -> Vec<NetlinkMessage<RouteNetlinkMessage>> {
    let mut out = Vec::new();
    while buf.len() >= 16 {
        let len = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if len < 16 || len > buf.len() {
            *bad += 1;
            break;
        }
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[..len]) {
            Ok(m) => out.push(m),
            Err(_) => *bad += 1,
        }
        let step = (len + 3) & !3;
        if step >= buf.len() {
            break;
        }
        buf = &buf[step..];
    }
    out
}

/// Notifications of address changes in the daemon's network namespace
/// (an rtnetlink socket subscribed to `RTMGRP_IPV4_IFADDR` and
/// `RTMGRP_IPV6_IFADDR`), for `--vips host`: the VIPs follow the addresses
/// keepalived adds and removes (an IPv6 address is notified again when its
/// duplicate address detection ends).
pub struct AddrWatch {
    sock: Socket,
}

impl AddrWatch {
    /// Subscribes to address changes.
    pub fn open() -> io::Result<AddrWatch> {
        Ok(AddrWatch { sock: subscribed(RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR)? })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Reads every pending notification; whether there was any (or the
    /// socket overflowed, which also means addresses may have changed).
    pub fn changed(&self) -> bool {
        let mut buf = [0u8; 8192];
        let mut any = false;
        while let Ok(Some(_)) = recv_now(&self.sock, &mut buf) {
            any = true;
        }
        any
    }
}

/// Whether the stack takes packets to an IPv6 address with these flags
/// (`IFA_F_*`): not while it is tentative (duplicate address detection
/// running, or failed: `IFA_F_DADFAILED` keeps `IFA_F_TENTATIVE`), since
/// Linux adds the address's local route only once DAD completes, and a
/// packet to it is then not local (IPVS, at LOCAL_IN, never sees it). An
/// optimistic address (`IFA_F_OPTIMISTIC`, RFC 4429) has its local route
/// while tentative, and a deprecated one keeps it: both are taken.
pub fn ipv6_address_usable(flags: u32) -> bool {
    const TENTATIVE: u32 = 0x40; // IFA_F_TENTATIVE
    const OPTIMISTIC: u32 = 0x04; // IFA_F_OPTIMISTIC
    const DADFAILED: u32 = 0x08; // IFA_F_DADFAILED
    flags & DADFAILED == 0 && (flags & TENTATIVE == 0 || flags & OPTIMISTIC != 0)
}

/// The IPv6 addresses of the daemon's network namespace that the stack
/// takes packets to ([`ipv6_address_usable`]), from an `RTM_GETADDR` dump.
pub fn ipv6_addresses() -> io::Result<Vec<std::net::Ipv6Addr>> {
    use netlink_packet_route::address::{AddressAttribute, AddressMessage};
    let mut sock = Socket::new(NETLINK_ROUTE)?;
    sock.bind_auto()?;
    let mut m = AddressMessage::default();
    m.header.family = AddressFamily::Inet6;
    let mut h = NetlinkHeader::default();
    h.flags = NLM_F_REQUEST | NLM_F_DUMP;
    h.sequence_number = 1;
    let mut req = NetlinkMessage::new(h, NetlinkPayload::from(RouteNetlinkMessage::GetAddress(m)));
    req.finalize();
    let mut buf = vec![0u8; req.buffer_len()];
    req.serialize(&mut buf);
    sock.send_to(&buf, &SocketAddr::new(0, 0), 0)?;
    let mut out = Vec::new();
    let mut bad = 0u64;
    let mut buf = vec![0u8; 65536];
    loop {
        let n = {
            let mut b = &mut buf[..];
            sock.recv(&mut b, 0)?.min(buf.len())
        };
        for msg in messages(&buf[..n], &mut bad) {
            match msg.payload {
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewAddress(a)) if a.header.family == AddressFamily::Inet6 => {
                    // IFA_FLAGS (32 bits) when present, else the header's 8.
                    let mut flags = u32::from(a.header.flags.bits());
                    let mut addr = None;
                    for x in &a.attributes {
                        match x {
                            AddressAttribute::Flags(f) => flags = f.bits(),
                            AddressAttribute::Address(std::net::IpAddr::V6(v)) => addr = Some(*v),
                            _ => {}
                        }
                    }
                    if let Some(v) = addr.filter(|_| ipv6_address_usable(flags)) {
                        out.push(v);
                    }
                }
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) => {
                    return match e.code {
                        Some(c) => Err(io::Error::from_raw_os_error(-c.get())),
                        None => Ok(out),
                    }
                }
                _ => {}
            }
        }
    }
}

/// What the kernel says about one neighbour (IPv4 or IPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighEvent {
    /// Its address.
    pub ip: IpAddr,
    /// The interface it is on.
    pub ifindex: u32,
    /// Its MAC, when the entry's state makes it one (`REACHABLE`, `STALE`,
    /// `DELAY`, `PROBE`, `PERMANENT`, `NOARP`); `None` for a deletion or
    /// an `INCOMPLETE`/`FAILED`/`NONE` entry.
    pub mac: Option<MacAddr>,
}

/// The FIB's answer for one destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteHop {
    /// The output interface.
    pub oif: u32,
    /// The gateway, if the destination is not on a connected subnet.
    pub gateway: Option<IpAddr>,
}

/// One neighbour message as a [`NeighEvent`], if it is about an IPv4 or
/// IPv6 neighbour (deleted: no MAC).
fn neigh_event(m: &NeighbourMessage, deleted: bool) -> Option<NeighEvent> {
    if !matches!(m.header.family, AddressFamily::Inet | AddressFamily::Inet6) {
        return None;
    }
    let mut ip = None;
    let mut lladdr = None;
    for a in &m.attributes {
        match a {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(v)) => ip = Some(IpAddr::V4(*v)),
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(v)) => ip = Some(IpAddr::V6(*v)),
            NeighbourAttribute::LinkLayerAddress(l) if l.len() == 6 => {
                lladdr = Some(MacAddr([l[0], l[1], l[2], l[3], l[4], l[5]]));
            }
            _ => {}
        }
    }
    let usable = matches!(
        m.header.state,
        NeighbourState::Reachable
            | NeighbourState::Stale
            | NeighbourState::Delay
            | NeighbourState::Probe
            | NeighbourState::Permanent
            | NeighbourState::Noarp
    );
    Some(NeighEvent { ip: ip?, ifindex: m.header.ifindex, mac: if usable && !deleted { lladdr } else { None } })
}

/// The kernel's neighbour table and FIB: a socket subscribed to neighbour
/// changes, and one for requests (dump, resolve, route lookups).
pub struct NeighWatch {
    events: Socket,
    req: Socket,
    seq: u32,
    /// Messages that did not parse (skipped).
    pub bad: u64,
    /// Notifications lost to a full socket (`ENOBUFS`; the table is dumped again).
    pub overruns: u64,
}

impl NeighWatch {
    /// Subscribes to neighbour changes and opens the request socket.
    pub fn open() -> io::Result<NeighWatch> {
        let events = subscribed(RTMGRP_NEIGH)?;
        let mut req = Socket::new(NETLINK_ROUTE)?;
        req.bind_auto()?;
        req.set_non_blocking(true)?;
        Ok(NeighWatch { events, req, seq: 0, bad: 0, overruns: 0 })
    }

    /// The descriptor to poll for changes.
    pub fn fd(&self) -> RawFd {
        self.events.as_raw_fd()
    }

    fn send(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let mut h = NetlinkHeader::default();
        h.flags = flags;
        h.sequence_number = self.seq;
        let mut m = NetlinkMessage::new(h, NetlinkPayload::from(msg));
        m.finalize();
        let mut buf = vec![0u8; m.buffer_len()];
        m.serialize(&mut buf);
        self.req.send_to(&buf, &SocketAddr::new(0, 0), 0)?;
        Ok(self.seq)
    }

    /// The answers to request `seq`, until its end (`NLMSG_DONE`, an
    /// error or acknowledgement, or a single answer), waiting at most
    /// `timeout_ms` for each datagram.
    fn answers(&mut self, seq: u32, multi: bool, timeout_ms: i32) -> io::Result<Vec<RouteNetlinkMessage>> {
        let mut buf = vec![0u8; 65536];
        let mut out = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms as u64 * 4);
        loop {
            if std::time::Instant::now() > deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer from rtnetlink"));
            }
            let n = match recv_now(&self.req, &mut buf)? {
                Some(n) => n,
                None => {
                    if !crate::sys::poll_readable(&[self.req.as_raw_fd()], timeout_ms)?[0] {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer from rtnetlink"));
                    }
                    continue;
                }
            };
            for m in messages(&buf[..n], &mut self.bad) {
                if m.header.sequence_number != seq {
                    continue; // a late answer to an earlier request
                }
                match m.payload {
                    NetlinkPayload::Done(_) => return Ok(out),
                    NetlinkPayload::Error(e) => {
                        return match e.code {
                            Some(c) => Err(io::Error::from_raw_os_error(-c.get())),
                            None => Ok(out),
                        }
                    }
                    NetlinkPayload::InnerMessage(x) => {
                        out.push(x);
                        if !multi {
                            return Ok(out);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Every IPv4 and IPv6 neighbour the kernel has now (an
    /// `RTM_GETNEIGH` dump of each family).
    pub fn dump(&mut self) -> io::Result<Vec<NeighEvent>> {
        let mut out = Vec::new();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = NeighbourMessage::default();
            m.header.family = family;
            let seq = self.send(RouteNetlinkMessage::GetNeighbour(m), NLM_F_REQUEST | NLM_F_DUMP)?;
            let msgs = self.answers(seq, true, 500)?;
            out.extend(msgs.iter().filter_map(|x| match x {
                RouteNetlinkMessage::NewNeighbour(n) => neigh_event(n, false),
                _ => None,
            }));
        }
        Ok(out)
    }

    /// The changes notified since the last call, in order; `None` when
    /// notifications were lost (the caller dumps the table again).
    pub fn changes(&mut self) -> Option<Vec<NeighEvent>> {
        let mut buf = vec![0u8; 65536];
        let mut out = Vec::new();
        let mut lost = false;
        for _ in 0..256 {
            match recv_now(&self.events, &mut buf) {
                Ok(Some(0)) => {
                    lost = true;
                    self.overruns += 1;
                }
                Ok(Some(n)) => {
                    for m in messages(&buf[..n], &mut self.bad) {
                        match m.payload {
                            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewNeighbour(x)) => {
                                out.extend(neigh_event(&x, false))
                            }
                            NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelNeighbour(x)) => {
                                out.extend(neigh_event(&x, true))
                            }
                            _ => {}
                        }
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
        (!lost).then_some(out)
    }

    /// Asks the kernel to resolve `ip` on interface `ifindex` (creating
    /// the entry if needed): `RTM_NEWNEIGH` with `NTF_USE`, on which
    /// `neigh_add` calls `neigh_event_send`, as a packet to `ip` would.
    /// Its answer comes as a change notification. Only for a neighbour
    /// the kernel has no MAC for: the request sets the entry's state
    /// (`INCOMPLETE`) first, which would drop a MAC it has (seen on
    /// Linux 6.x: a `PERMANENT` entry asked this way ends `FAILED`). The
    /// same for an IPv6 neighbour (`nd_tbl`: a Neighbour Solicitation).
    pub fn resolve(&mut self, ip: IpAddr, ifindex: u32) -> io::Result<()> {
        let mut m = NeighbourMessage::default();
        m.header.ifindex = ifindex;
        m.header.state = NeighbourState::Incomplete;
        m.header.flags = NeighbourFlags::Use;
        let (family, dst) = match ip {
            IpAddr::V4(a) => (AddressFamily::Inet, NeighbourAddress::Inet(a)),
            IpAddr::V6(a) => (AddressFamily::Inet6, NeighbourAddress::Inet6(a)),
        };
        m.header.family = family;
        m.attributes.push(NeighbourAttribute::Destination(dst));
        let seq = self.send(RouteNetlinkMessage::NewNeighbour(m), NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK)?;
        self.answers(seq, false, 200).map(|_| ())
    }

    /// The gateway of the main table's default route out of interface
    /// `ifindex` (`ip route show default dev IF`; the lowest metric wins),
    /// from a route dump (`RTM_GETROUTE`); `None` without one.
    pub fn default_gateway(&mut self, ifindex: u32) -> io::Result<Option<Ipv4Addr>> {
        let mut m = RouteMessage::default();
        m.header.address_family = AddressFamily::Inet;
        let seq = self.send(RouteNetlinkMessage::GetRoute(m), NLM_F_REQUEST | NLM_F_DUMP)?;
        let msgs = self.answers(seq, true, 500)?;
        Ok(default_gateway_of(&msgs, ifindex))
    }

    /// The FIB's route to `ip` (`RTM_GETROUTE`, as `ip route get`): its
    /// output interface and gateway; `None` when there is no usable
    /// unicast route (unreachable, prohibited, local, ...).
    pub fn route(&mut self, ip: IpAddr) -> io::Result<Option<RouteHop>> {
        let mut m = RouteMessage::default();
        let (family, plen, dst) = match ip {
            IpAddr::V4(a) => (AddressFamily::Inet, 32, RouteAddress::Inet(a)),
            IpAddr::V6(a) => (AddressFamily::Inet6, 128, RouteAddress::Inet6(a)),
        };
        m.header.address_family = family;
        m.header.destination_prefix_length = plen;
        m.attributes.push(RouteAttribute::Destination(dst));
        let seq = self.send(RouteNetlinkMessage::GetRoute(m), NLM_F_REQUEST)?;
        let msgs = match self.answers(seq, false, 200) {
            Ok(m) => m,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EACCES | libc::EINVAL)) => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        for x in msgs {
            let RouteNetlinkMessage::NewRoute(r) = x else { continue };
            if r.header.kind != RouteType::Unicast {
                return Ok(None);
            }
            let mut hop = RouteHop { oif: 0, gateway: None };
            for a in &r.attributes {
                match a {
                    RouteAttribute::Oif(i) => hop.oif = *i,
                    RouteAttribute::Gateway(RouteAddress::Inet(g)) => hop.gateway = Some(IpAddr::V4(*g)),
                    RouteAttribute::Gateway(RouteAddress::Inet6(g)) => hop.gateway = Some(IpAddr::V6(*g)),
                    _ => {}
                }
            }
            return Ok((hop.oif != 0).then_some(hop));
        }
        Ok(None)
    }
}

/// The gateway of the main table's default route out of interface
/// `ifindex` in a route dump (the lowest metric wins), if any.
fn default_gateway_of(msgs: &[RouteNetlinkMessage], ifindex: u32) -> Option<Ipv4Addr> {
    let mut best: Option<(u32, Ipv4Addr)> = None;
    for x in msgs {
        let RouteNetlinkMessage::NewRoute(r) = x else { continue };
        let h = &r.header;
        if h.address_family != AddressFamily::Inet || h.destination_prefix_length != 0 || h.kind != RouteType::Unicast {
            continue;
        }
        let (mut table, mut oif, mut gw, mut prio) = (h.table as u32, 0, None, 0);
        for a in &r.attributes {
            match a {
                RouteAttribute::Table(t) => table = *t,
                RouteAttribute::Oif(i) => oif = *i,
                RouteAttribute::Gateway(RouteAddress::Inet(g)) => gw = Some(*g),
                RouteAttribute::Priority(p) => prio = *p,
                _ => {}
            }
        }
        if table != 254 || oif != ifindex {
            continue;
        }
        if let Some(g) = gw {
            if best.map_or(true, |(p, _)| prio < p) {
                best = Some((prio, g));
            }
        }
    }
    best.map(|(_, g)| g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    /// An `RTM_NEWNEIGH`/`RTM_DELNEIGH` message as the kernel writes it
    /// (`struct ndmsg`, `NDA_DST`, `NDA_LLADDR`), for an IPv4 (4 bytes)
    /// or IPv6 (16 bytes) address.
    fn neigh_bytes(ty: u16, state: u16, ip: &[u8], mac: Option<[u8; 6]>) -> Vec<u8> {
        let family = if ip.len() == 16 { libc::AF_INET6 } else { libc::AF_INET };
        let mut p = vec![family as u8, 0, 0, 0];
        p.extend_from_slice(&7u32.to_ne_bytes());
        p.extend_from_slice(&state.to_ne_bytes());
        p.extend_from_slice(&[0, 1]);
        p.extend_from_slice(&(4 + ip.len() as u16).to_ne_bytes());
        p.extend_from_slice(&1u16.to_ne_bytes()); // NDA_DST
        p.extend_from_slice(ip);
        if let Some(m) = mac {
            p.extend_from_slice(&10u16.to_ne_bytes());
            p.extend_from_slice(&2u16.to_ne_bytes()); // NDA_LLADDR
            p.extend_from_slice(&m);
            p.extend_from_slice(&[0, 0]);
        }
        let mut h = Vec::new();
        h.extend_from_slice(&((16 + p.len()) as u32).to_ne_bytes());
        h.extend_from_slice(&ty.to_ne_bytes());
        h.extend_from_slice(&[0; 10]);
        h.extend(p);
        h
    }

    #[test]
    fn neighbour_messages_parse_and_only_usable_states_give_a_mac() {
        let mut bad = 0;
        let v6 = |n: u8| Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, n as u16);
        let mut buf = neigh_bytes(28, 0x02, &[192, 168, 10, 1], Some([2, 0, 0, 0, 0x10, 1])); // NEWNEIGH REACHABLE
        buf.extend(neigh_bytes(28, 0x20, &[192, 168, 10, 2], Some([2, 0, 0, 0, 0x10, 2]))); // FAILED
        buf.extend(neigh_bytes(29, 0x80, &[192, 168, 10, 3], Some([2, 0, 0, 0, 0x10, 3]))); // DELNEIGH PERMANENT
        buf.extend(neigh_bytes(28, 0x04, &v6(1).octets(), Some([2, 0, 0, 0, 0x20, 1]))); // IPv6 STALE
        buf.extend(neigh_bytes(28, 0x01, &v6(2).octets(), None)); // IPv6 INCOMPLETE
        buf.extend(neigh_bytes(29, 0x02, &v6(3).octets(), Some([2, 0, 0, 0, 0x20, 3]))); // IPv6 DELNEIGH
        let ev: Vec<NeighEvent> = messages(&buf, &mut bad)
            .into_iter()
            .filter_map(|m| match m.payload {
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewNeighbour(x)) => neigh_event(&x, false),
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelNeighbour(x)) => neigh_event(&x, true),
                _ => None,
            })
            .collect();
        assert_eq!(bad, 0);
        assert_eq!(
            ev,
            vec![
                NeighEvent { ip: Ipv4Addr::new(192, 168, 10, 1).into(), ifindex: 7, mac: Some(MacAddr([2, 0, 0, 0, 0x10, 1])) },
                NeighEvent { ip: Ipv4Addr::new(192, 168, 10, 2).into(), ifindex: 7, mac: None },
                NeighEvent { ip: Ipv4Addr::new(192, 168, 10, 3).into(), ifindex: 7, mac: None },
                NeighEvent { ip: v6(1).into(), ifindex: 7, mac: Some(MacAddr([2, 0, 0, 0, 0x20, 1])) },
                NeighEvent { ip: v6(2).into(), ifindex: 7, mac: None },
                NeighEvent { ip: v6(3).into(), ifindex: 7, mac: None },
            ]
        );
    }

    #[test]
    fn the_default_gateway_is_the_main_tables_on_our_interface_lowest_metric_first() {
        let route = |prefix: u8, table: u32, oif: u32, gw: [u8; 4], prio: Option<u32>| {
            let mut r = RouteMessage::default();
            r.header.address_family = AddressFamily::Inet;
            r.header.destination_prefix_length = prefix;
            r.header.kind = RouteType::Unicast;
            r.attributes.push(RouteAttribute::Table(table));
            r.attributes.push(RouteAttribute::Oif(oif));
            r.attributes.push(RouteAttribute::Gateway(RouteAddress::Inet(Ipv4Addr::from(gw))));
            r.attributes.extend(prio.map(RouteAttribute::Priority));
            RouteNetlinkMessage::NewRoute(r)
        };
        let msgs = vec![
            route(24, 254, 7, [192, 168, 10, 1], None),   // not a default route
            route(0, 255, 7, [192, 168, 10, 2], None),    // not the main table
            route(0, 254, 3, [192, 168, 10, 3], None),    // another interface (management)
            route(0, 254, 7, [192, 168, 10, 4], Some(200)),
            route(0, 254, 7, [192, 168, 10, 5], Some(100)),
        ];
        assert_eq!(default_gateway_of(&msgs, 7), Some(Ipv4Addr::new(192, 168, 10, 5)));
        assert_eq!(default_gateway_of(&msgs, 3), Some(Ipv4Addr::new(192, 168, 10, 3)));
        assert_eq!(default_gateway_of(&msgs, 9), None);
    }

    #[test]
    fn malformed_messages_are_counted_never_a_panic() {
        let good = neigh_bytes(28, 0x02, &[192, 168, 10, 1], Some([2, 0, 0, 0, 0x10, 1]));
        let mut bad = 0;
        // Every truncation, and lengths that lie.
        for cut in 0..good.len() {
            let _ = messages(&good[..cut], &mut bad);
        }
        for lie in [0u32, 3, 15, 10_000] {
            let mut b = good.clone();
            b[..4].copy_from_slice(&lie.to_ne_bytes());
            let _ = messages(&b, &mut bad);
        }
        // An attribute whose length runs past the message.
        let mut b = good.clone();
        b[28..30].copy_from_slice(&200u16.to_ne_bytes());
        assert!(messages(&b, &mut bad).is_empty());
        assert!(bad > 0);
        // Random bytes.
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut b = good.clone();
            for byte in b.iter_mut().skip(16) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if x % 7 == 0 {
                    *byte = x as u8;
                }
            }
            for m in messages(&b, &mut bad) {
                if let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewNeighbour(n)) = m.payload {
                    let _ = neigh_event(&n, false);
                }
            }
        }
    }
}

#[cfg(test)]
mod addr_tests {
    use super::ipv6_address_usable;

    #[test]
    fn tentative_and_dad_failed_ipv6_addresses_are_not_taken() {
        // IFA_F_*: NODAD 0x02, OPTIMISTIC 0x04, DADFAILED 0x08,
        // DEPRECATED 0x20, TENTATIVE 0x40, PERMANENT 0x80.
        assert!(ipv6_address_usable(0x80), "permanent");
        assert!(ipv6_address_usable(0x82), "nodad (keepalived's VIPs)");
        assert!(ipv6_address_usable(0xa0), "deprecated");
        assert!(!ipv6_address_usable(0xc0), "tentative");
        assert!(!ipv6_address_usable(0xc8), "dadfailed");
        assert!(ipv6_address_usable(0xc4), "optimistic");
        assert!(!ipv6_address_usable(0xcc), "optimistic, dadfailed");
    }
}
