//! IPv6 TCP/UDP through IPVS: `ip_vs_in` and `ip_vs_out` (ip_vs_core.c)
//! for `af == AF_INET6`, and the AF_INET6 transmitters of ip_vs_xmit.c
//! (`ip_vs_nat_xmit_v6`, `ip_vs_dr_xmit_v6`, `ip_vs_tunnel_xmit_v6`, each
//! after `__ip_vs_get_out_rt_v6` with `decrement_ttl`). The connection
//! table, schedulers, persistence, TCP state machine, statistics and
//! timers are the IPv4 path's own.
//!
//! Where the kernel sends an ICMPv6 error (hop limit exceeded, packet too
//! big, no real server) the model sends it ([`super::icmp6`]); ICMPv6
//! errors about connections are relayed there too, and Neighbour
//! Solicitations for the director's addresses answered ([`super::ndisc`]).
//!
//! Hop-by-Hop (padding only), Routing, Destination Options and
//! Authentication headers before TCP/UDP are carried where they are (IPVS
//! walks over them with `ipv6_find_hdr`, AH included, and rewrites the
//! transport header after them; an AH's ICV is not checked nor fixed, as
//! in the kernel, whose IPsec input runs only after the LOCAL_IN hook).
//!
//! Fragments are reassembled first ([`crate::defrag6`], `nf_defrag_ipv6`,
//! on once an IPv6 service exists), the datagram is processed whole, and
//! `ip6_fragment` cuts it again on output at its largest fragment's size
//! ([`Director::refragment6`]).
//!
//! What the model does not do for IPv6 yet (such frames go to the host
//! stack, counted `non_ip`): Hop-by-Hop options other than padding,
//! unknown next headers and ESP (the stack answers those), packets to or
//! from the director's own address.

use super::{Action, Director, DropReason, HostReason};
use crate::conn::tcp::Direction;
use crate::defrag6::Defrag6Result;
use crate::conn::{flags as cf, Conn, ConnAddrs, ConnId};
use crate::ipvs::{DestId, ServiceId};
use crate::sched::SchedPacket;
use crate::wire::{self, FrameInfo, IpProtocol, MacAddr, IPPROTO_TCP, IPPROTO_UDP, TCP_RST, TCP_SYN};
use crate::xmit;
use std::net::{IpAddr, Ipv6Addr};

/// The parsed facts of an IPv6 TCP/UDP packet without extension headers
/// (or of an ICMPv6 error about one of its connections).
#[derive(Clone, Copy, Debug)]
pub(super) struct Pkt6 {
    pub(super) l3: usize,
    /// 40 + Payload Length: what `ip_vs_in_stats` counts (`skb->len`).
    pub(super) len: u16,
    pub(super) saddr: Ipv6Addr,
    pub(super) daddr: Ipv6Addr,
    proto: u8,
    pub(super) hop_limit: u8,
    /// Offset of the TCP/UDP header in the frame (after any extension
    /// headers).
    l4: usize,
    sport: u16,
    dport: u16,
    tflags: u8,
}

impl Pkt6 {
    /// An ICMPv6 packet right after the fixed header.
    pub(super) fn icmp(l3: usize, payload_len: u16, saddr: Ipv6Addr, daddr: Ipv6Addr, hop_limit: u8) -> Pkt6 {
        let len = payload_len.wrapping_add(wire::ipv6::HEADER_LEN as u16);
        let l4 = l3 + wire::ipv6::HEADER_LEN;
        Pkt6 { l3, len, saddr, daddr, proto: wire::icmpv6::IPPROTO_ICMPV6, hop_limit, l4, sport: 0, dport: 0, tflags: 0 }
    }
}

/// `ipv6_addr_prefix`: `a` masked to its first `plen` bits (the client
/// network of an IPv6 persistence template, `ip_vs_sched_persist`).
pub fn ipv6_addr_prefix(a: &Ipv6Addr, plen: u8) -> Ipv6Addr {
    let bits = u128::from(*a);
    let mask = if plen == 0 { 0 } else { u128::MAX << (128 - u32::from(plen.min(128))) };
    Ipv6Addr::from(bits & mask)
}

impl Director {
    /// An IPv6 frame: TCP/UDP to an IPv6 VIP goes through `ip_vs_in`, a
    /// TCP/UDP reply from a NAT real server through `ip_vs_out`;
    /// everything else to the host stack.
    pub(super) fn ipv6(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, info: &FrameInfo) -> Action {
        if self.reasm6.is_none() && self.services.has_v6() {
            if let Some(a) = self.defragment6(frame, extra, info) {
                return a;
            }
        }
        if let Some(a) = self.icmpv6_rcv(frame, extra, info) {
            return a;
        }
        let Some(p) = self.pkt6(frame, info) else {
            return self.host(HostReason::NonIp);
        };
        if self.services.is_vip6(&p.daddr) {
            if !self.vip_owned(p.daddr) {
                // As for IPv4: the address is no longer ours (VRRP backup),
                // the host stack routes or drops the packet.
                return self.host(HostReason::Forward);
            }
            return self.ip_vs_in6(frame, extra, &p);
        }
        if let Some(id) = self.conns.out_get6(p.proto, &p.saddr, p.sport, &p.daddr, p.dport) {
            if self.conns.get(id).fwd() == cf::MASQ {
                return self.ip_vs_out6(frame, extra, &p, id);
            }
        }
        self.host(HostReason::NonIp)
    }

    /// `nf_defrag_ipv6`'s PRE_ROUTING hook: a fragment unicast to our MAC
    /// is queued ([`Action::Held`]) or dropped, or completes a datagram,
    /// which is then processed whole (`None`: the frame goes on as it is,
    /// not being a fragment the hook takes).
    fn defragment6(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, info: &FrameInfo) -> Option<Action> {
        let ip = info.ipv6.as_ref()?;
        if MacAddr::from_bytes(&frame[0..6]) != Some(self.cfg.mac) || frame.len() < ip.l3_offset + wire::ipv6::HEADER_LEN + usize::from(ip.payload_len) {
            return None;
        }
        // Only a packet with a Fragment header somewhere can be one.
        if ip.next_header != IpProtocol::Ipv6Frag && ip.upper.is_some_and(|u| u.fragment.is_none()) {
            return None;
        }
        match self.defrag6.gather(self.now, frame, ip.l3_offset) {
            Defrag6Result::Pass => None,
            Defrag6Result::Queued => {
                self.counters.reasm.held += 1;
                Some(Action::Held)
            }
            Defrag6Result::Failed(f) => Some(self.reasm_failed(f)),
            Defrag6Result::Complete(r) => {
                self.counters.reasm.reassembled += 1;
                *frame = r.frame;
                self.reasm6 = Some(super::Reasm6Info { frag_max_size: r.frag_max_size, pieces: r.pieces });
                let info = wire::parse_frame(frame);
                let a = self.ipv6(frame, extra, &info);
                self.reasm6 = None;
                Some(a)
            }
        }
    }

    /// The size `__mtu_check_toobig_v6` and `ip6_pkt_too_big` compare with
    /// the MTU: the largest fragment of a reassembled datagram, else the
    /// packet.
    fn mtu_size6(&self, p: &Pkt6) -> u32 {
        match &self.reasm6 {
            Some(r) => u32::from(r.frag_max_size),
            None => u32::from(p.len),
        }
    }

    /// `ip6_finish_output` for a datagram `nf_defrag_ipv6` reassembled (the
    /// IPv6 packet at `l3`, as transmitted: NAT-rewritten, or inside its
    /// ip6ip6 header): longer than its largest fragment (always, once
    /// there were several), it goes through `ip6_fragment` at that size
    /// (`frag_max_size`, at least 1280), with a fresh identification. Its
    /// fragments are still chained (`nf_ct_frag6_reasm` does not coalesce
    /// them), so they go out as they came when they fit (the frag-list
    /// fast path: the first one carrying whatever was put before its data,
    /// such as an ip6ip6 header); else the slow path cuts the packet into
    /// the largest multiples of 8 that fit (seen in the conformance VM:
    /// matrix g6-frag6, the ip6ip6 scenario's 1232 + 628 after 1232 + 588
    /// and 552 + 1232 + 208 after 512 + 1232 + 208).
    ///
    /// `Err` when the unfragmentable headers leave no room for 8 bytes of
    /// data (`ip6_fragment`'s `fail_toobig`: the packet is dropped).
    pub(super) fn refragment6(&mut self, frame: &mut Vec<u8>, l3: usize, extra: &mut Vec<Vec<u8>>) -> Result<(), ()> {
        let Some(r) = &self.reasm6 else { return Ok(()) };
        let pl = usize::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]));
        let total = (wire::ipv6::HEADER_LEN + pl).min(frame.len() - l3);
        if total <= usize::from(r.frag_max_size) && total <= usize::from(self.cfg.mtu) {
            return Ok(());
        }
        let mtu = usize::from(r.frag_max_size).max(wire::ipv6::MIN_MTU);
        let hlen = xmit::ip6_find_1stfragopt(&frame[l3..l3 + total]);
        if mtu < hlen + 8 + 8 {
            return Err(());
        }
        let data = total - hlen;
        let mut pieces = r.pieces.clone();
        let known: usize = pieces.iter().sum();
        let fast = known <= data && {
            pieces[0] += data - known;
            xmit::fraglist_fits(hlen + 8, mtu, &pieces)
        };
        if !fast {
            pieces = xmit::ip6_slow_pieces(data, mtu - hlen - 8);
        }
        let ident = u32::from(self.next_ip_id());
        let mut frags = xmit::ip6_fragment_pieces(frame, l3, hlen, &pieces, ident);
        *frame = frags.remove(0);
        extra.extend(frags);
        Ok(())
    }

    /// The packet facts, when the model carries it: unicast to our MAC,
    /// TCP or UDP with the whole L4 header there, after the fixed header or
    /// after the extension headers IPVS walks over (`ipv6_find_hdr`):
    /// Routing, Destination Options and AH (processed only after the
    /// LOCAL_IN hook that IPVS takes the packet at) and Hop-by-Hop Options
    /// holding nothing but the padding `ip6_parse_tlv` accepts (`ipv6_rcv`
    /// parses them before IPVS; any other option goes to the host stack).
    /// Fragments left whole by `nf_defrag_ipv6` (none while an IPv6
    /// service exists but those it lets through) go to the host stack.
    fn pkt6(&self, frame: &[u8], info: &FrameInfo) -> Option<Pkt6> {
        if info.error.is_some() && info.error != Some(wire::FrameError::TcpBadHeaderLen) {
            return None;
        }
        let ip = info.ipv6.as_ref()?;
        if MacAddr::from_bytes(&frame[0..6]) != Some(self.cfg.mac) {
            return None;
        }
        let up = ip.upper?;
        let proto = u8::from(up.protocol);
        if proto != IPPROTO_TCP && proto != IPPROTO_UDP || up.fragment.is_some() {
            return None; // ICMPv6, fragments, others
        }
        let l4 = info.l4?;
        if l4.offset != ip.l3_offset + wire::ipv6::HEADER_LEN && !ext_headers_carried(&frame[ip.l3_offset..l4.offset], ip.next_header) {
            return None;
        }
        Some(Pkt6 {
            l3: ip.l3_offset,
            len: ip.payload_len.wrapping_add(wire::ipv6::HEADER_LEN as u16),
            saddr: ip.src,
            daddr: ip.dst,
            proto,
            hop_limit: ip.hop_limit,
            l4: l4.offset,
            sport: l4.src_port,
            dport: l4.dst_port,
            tflags: l4.tcp_flags,
        })
    }

    /// `ip_vs_in` for IPv6 TCP/UDP to a VIP.
    fn ip_vs_in6(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt6) -> Action {
        let cp = self.conns.in_get6(p.proto, &p.saddr, p.sport, &p.daddr, p.dport);
        let cp = self.reuse_or_resched(cp, p.proto, p.tflags);
        let id = match cp {
            Some(id) => id,
            None => match self.try_to_schedule6(frame, p) {
                Ok(id) => id,
                Err(a) => return a,
            },
        };
        if let Err(a) = self.request_found(id, p.len, p.tflags) {
            return a;
        }
        let a = self.xmit_request6(frame, extra, p, id, None);
        self.conn_put(id);
        a
    }

    /// `ip_vs_schedule` for IPv6 (`tcp_conn_schedule`/`udp_conn_schedule`).
    fn try_to_schedule6(&mut self, frame: &mut Vec<u8>, p: &Pkt6) -> Result<ConnId, Action> {
        if p.proto == IPPROTO_TCP && (p.tflags & TCP_RST != 0 || !(self.cfg.sysctl.sloppy_tcp || p.tflags & TCP_SYN != 0)) {
            return Err(self.host(HostReason::NotSyn));
        }
        let Some(svc) = self.services.find_addr(p.proto, IpAddr::V6(p.daddr), p.dport) else {
            return Err(self.host(HostReason::Local));
        };
        if p.sport == crate::ipvs::service::FTPDATA {
            return Err(self.host(HostReason::FtpData));
        }
        let pkt = SchedPacket { saddr: p.saddr.into(), daddr: p.daddr.into(), sport: p.sport, dport: p.dport, proto: p.proto };
        let s = self.services.service(svc);
        let (persistent, svc_port, ops) = (s.persistent(), s.vport, s.rule.ops);
        let one_packet = if ops && p.proto == IPPROTO_UDP { cf::ONE_PACKET } else { 0 };
        if persistent {
            return match self.sched_persist6(svc, p, &pkt, one_packet) {
                Some(id) => Ok(id),
                None => Err(self.leave6(frame, p, svc)),
            };
        }
        if p.dport != svc_port {
            return Err(self.leave6(frame, p, svc));
        }
        let now = self.now;
        let Some(dest) = self.services.schedule(svc, &pkt, now, &mut self.rng) else {
            return Err(self.leave6(frame, p, svc));
        };
        let d = self.services.dest(dest);
        let (dp, daddr) = (if d.port != 0 { d.port } else { p.dport }, d.addr);
        let id = self.new_conn6(p.proto, (p.saddr, p.sport), (p.daddr, p.dport), (daddr, dp), one_packet, dest);
        self.conn_stats(dest, svc);
        Ok(id)
    }

    /// `ip_vs_conn_new` for IPv6 + `ip_vs_bind_dest` + hash.
    fn new_conn6(
        &mut self,
        proto: u8,
        (caddr, cport): (Ipv6Addr, u16),
        (vaddr, vport): (Ipv6Addr, u16),
        (daddr, dport): (IpAddr, u16),
        flags: u16,
        dest: DestId,
    ) -> ConnId {
        let mut c = Conn::new(proto, 0, cport, 0, vport, 0, dport, flags);
        self.bind_dest(&mut c, dest);
        self.insert_conn_addrs(c, ConnAddrs { caddr: caddr.into(), vaddr: vaddr.into(), daddr })
    }

    /// `ip_vs_sched_persist` for IPv6: the template is keyed on the client
    /// address masked to the service's prefix length (`-M`, default 128:
    /// `ipv6_addr_prefix(&snet.in6, &iph->saddr.in6, (__force __u32)
    /// svc->netmask)`).
    fn sched_persist6(&mut self, svc: ServiceId, p: &Pkt6, pkt: &SchedPacket, one_packet: u16) -> Option<ConnId> {
        let s = self.services.service(svc);
        let snet = ipv6_addr_prefix(&p.saddr, s.plen());
        let (svc_port, svc_timeout) = (s.vport, s.timeout());
        let ftp = crate::ipvs::service::FTPPORT;
        let vport = if p.dport == svc_port && svc_port != ftp { p.dport } else { 0 };
        let mut ct = self.conns.ct_in_get6(p.proto, &snet, 0, &p.daddr, vport);
        if let Some(t) = ct {
            if !self.check_template(t) {
                ct = None;
            }
        }
        let (ct, dest) = match ct {
            Some(t) => (t, DestId(self.conns.get(t).dest)),
            None => {
                let now = self.now;
                let dest = self.services.schedule(svc, pkt, now, &mut self.rng)?;
                let d = self.services.dest(dest);
                let tdport = if p.dport == svc_port && svc_port != ftp { d.port } else { 0 };
                let daddr = d.addr;
                let t = self.new_conn6(p.proto, (snet, 0), (p.daddr, vport), (daddr, tdport), cf::TEMPLATE, dest);
                self.conns.get_mut(t).set_timeout(svc_timeout);
                self.counters.templates_created += 1;
                (t, dest)
            }
        };
        let d = self.services.dest(dest);
        let mut dport = p.dport;
        if dport == svc_port && d.port != 0 {
            dport = d.port;
        }
        let daddr = d.addr;
        let id = self.new_conn6(p.proto, (p.saddr, p.sport), (p.daddr, p.dport), (daddr, dport), one_packet, dest);
        self.conns.get_mut(id).control = ct.0;
        self.conns.get_mut(ct).n_control += 1;
        self.conn_put(ct);
        self.conn_stats(dest, svc);
        Some(id)
    }

    /// `ip_vs_leave` for IPv6: ICMPv6 port unreachable from the VIP
    /// (`icmpv6_send(skb, ICMPV6_DEST_UNREACH, ICMPV6_PORT_UNREACH, 0)`).
    fn leave6(&mut self, frame: &mut Vec<u8>, p: &Pkt6, svc: ServiceId) -> Action {
        let s = self.services.service(svc);
        if s.vport == crate::ipvs::service::FTPPORT && p.dport != crate::ipvs::service::FTPPORT {
            return self.host(HostReason::FtpData);
        }
        let (t, c) = (wire::icmpv6::ICMPV6_DEST_UNREACH, wire::icmpv6::ICMPV6_PORT_UNREACH);
        self.icmp6_send(frame, p.l3, t, c, 0, DropReason::NoRealServer)
    }

    /// `ip_vs_nat_xmit_v6`, `ip_vs_dr_xmit_v6`, `ip_vs_tunnel_xmit_v6`,
    /// and `ip_vs_tunnel_xmit` for an IPv4 real server; with `icmp` (the
    /// quoted transport header's offset) an ICMPv6 error about the
    /// connection: `ip_vs_icmp_xmit_v6` (NAT rewrites it with
    /// `ip_vs_nat_icmp_v6`, the others send it as a packet of the
    /// connection). No ICMPv6 error is sent about an error
    /// (`is_ineligible`, `ip_vs_iph_icmp`).
    pub(super) fn xmit_request6(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt6, id: ConnId, icmp: Option<usize>) -> Action {
        let c = *self.conns.get(id);
        let fwd = c.fwd();
        if fwd == cf::LOCALNODE {
            return self.host(HostReason::LocalRealServer);
        }
        let daddr = match self.conns.addrs(id).daddr {
            IpAddr::V6(d) => d,
            IpAddr::V4(d) if fwd == cf::TUNNEL => return self.tunnel_6in4(frame, p, c.dest, d),
            IpAddr::V4(_) => return self.host(HostReason::NonIp),
        };
        let tunnel = fwd == cf::TUNNEL;
        let tun_src = match (tunnel, self.cfg.ip6) {
            (true, None) => return self.host(HostReason::NonIp),
            (_, s) => s.unwrap_or(Ipv6Addr::UNSPECIFIED),
        };
        // decrement_ttl (AF_INET6): ICMPv6 time exceeded at hop limit <= 1.
        if p.hop_limit <= 1 {
            return self.hop_limit_exceeded6(frame, p);
        }
        // __ip_vs_get_out_rt_v6 decrements the hop limit before its MTU
        // check, so a packet too big quotes the packet with the hop limit
        // already decremented (seen in the conformance VM: matrix g4-ipv6,
        // the ip6ip6 TCP scenarios' packet-too-big errors).
        xmit::ipv6_decrease_hop_limit(frame, p.l3);
        // A tunnel's MTU is the route's less 40; below 1280 the route is
        // refused (no error sent).
        let mtu = u32::from(self.cfg.mtu) - if tunnel { wire::ipv6::HEADER_LEN as u32 } else { 0 };
        if tunnel && mtu < wire::ipv6::MIN_MTU as u32 {
            return self.drop(DropReason::FragNeeded);
        }
        // ensure_mtu_is_adequate → __mtu_check_toobig_v6: ICMPv6 packet too
        // big carrying that MTU (for a reassembled datagram, when its
        // largest fragment is over it).
        if self.mtu_size6(p) > mtu {
            return self.too_big6(frame, p, mtu);
        }
        let mac = match self.v6_real_server_mac(&daddr) {
            Some(m) => m,
            // Being resolved (`cfg.resolve_neighbors6`): the host holds
            // the frames until it knows the MAC, as Linux queues them on
            // the neighbour.
            None if self.cfg.resolve_neighbors6 => {
                self.unresolved = Some(daddr.into());
                MacAddr::ZERO
            }
            None => {
                // The host stack gets the packet as it arrived.
                frame[p.l3 + 7] = p.hop_limit;
                return self.host(HostReason::NonIp);
            }
        };
        xmit::trim_to_ipv6(frame, p.l3);
        match (fwd, icmp) {
            (cf::MASQ, Some(ql4)) => super::icmp6::nat_icmp_v6(frame, p.l3, ql4, false, daddr, c.dport),
            (cf::MASQ, None) => xmit::nat_rewrite6(frame, p.l3, (p.l4, p.proto), true, daddr, c.dport),
            (cf::DROUTE, _) => {}
            (cf::TUNNEL, _) => xmit::ip6ip6_encap(frame, p.l3, tun_src, daddr),
            _ => return self.host(HostReason::LocalRealServer),
        }
        if self.refragment6(frame, p.l3, extra).is_err() {
            return self.drop(DropReason::FragNeeded);
        }
        for f in std::iter::once(&mut *frame).chain(extra.iter_mut()) {
            xmit::set_macs(f, mac, self.cfg.mac);
        }
        Action::Transmit
    }

    /// `ip_vs_tunnel_xmit` for an IPv6 connection to an IPv4 real server
    /// (`cp->af == AF_INET6`, `cp->daf == AF_INET`): `__ip_vs_get_out_rt`
    /// decrements the hop limit, the MTU is the link's less 20 (below 68
    /// refused), too big is answered with ICMPv6 packet too big carrying
    /// that MTU (`ensure_mtu_is_adequate` for `skb_af == AF_INET6`); the
    /// outer IPv4 header: TOS the
    /// `INET_ECN_encapsulate`d traffic class, DF clear (the inner packet
    /// is IPv6: `ip_vs_prepare_tunneled_skb` gives df 0), TTL the inner hop
    /// limit, protocol 41, source the director's address, checksum. The ID
    /// Linux draws from `ip_select_ident` comes from the model's counter.
    fn tunnel_6in4(&mut self, frame: &mut Vec<u8>, p: &Pkt6, dest: u32, daddr: std::net::Ipv4Addr) -> Action {
        if self.reasm6.is_some() {
            // A reassembled IPv6 datagram in IPv4 (cut by ip_fragment
            // after encapsulation) is not modelled: the host stack has it.
            return self.host(HostReason::Fragment);
        }
        if p.hop_limit <= 1 {
            return self.hop_limit_exceeded6(frame, p);
        }
        // Decremented before the MTU check (`__ip_vs_get_out_rt`), as above.
        xmit::ipv6_decrease_hop_limit(frame, p.l3);
        let mtu = u32::from(self.cfg.mtu) - wire::ipv4::HEADER_LEN as u32;
        if mtu < 68 {
            return self.drop(DropReason::FragNeeded);
        }
        if u32::from(p.len) > mtu {
            return self.too_big6(frame, p, mtu);
        }
        xmit::trim_to_ipv6(frame, p.l3);
        let id = self.next_ip_id();
        xmit::ip6in4_encap(frame, p.l3, self.cfg.ip, daddr, id);
        let mac = self.dest_mac(dest, daddr);
        xmit::set_macs(frame, mac, self.cfg.mac);
        Action::Transmit
    }

    /// `ip6_forward` + `ip_vs_out` for a NAT reply (`handle_response`):
    /// hop limit checked and decremented by the forwarding path, source
    /// rewritten to the VIP and service port.
    fn ip_vs_out6(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt6, id: ConnId) -> Action {
        let c = *self.conns.get(id);
        let a = self.conns.addrs(id);
        let (IpAddr::V6(caddr), IpAddr::V6(vaddr)) = (a.caddr, a.vaddr) else {
            return self.host(HostReason::NonIp);
        };
        self.last_conn = Some(id);
        self.last_dir = Some(Direction::Output);
        // ip6_forward: hop limit <= 1 → ICMPv6 time exceeded; too big
        // for the route's MTU (at least 1280) → ICMPv6 packet too big, both
        // from the director's address.
        if p.hop_limit <= 1 {
            return self.hop_limit_exceeded6(frame, p);
        }
        let mtu = u32::from(self.cfg.mtu).max(wire::ipv6::MIN_MTU as u32);
        if self.mtu_size6(p) > mtu {
            return self.too_big6(frame, p, mtu);
        }
        let Some(mac) = self.v6_next_hop(&caddr) else {
            return self.host(HostReason::NonIp);
        };
        xmit::trim_to_ipv6(frame, p.l3);
        xmit::ipv6_decrease_hop_limit(frame, p.l3);
        xmit::nat_rewrite6(frame, p.l3, (p.l4, p.proto), false, vaddr, c.vport);
        self.out_stats(&c, u64::from(p.len));
        self.set_state(id, Direction::Output, p.tflags);
        self.conn_put(id);
        if self.refragment6(frame, p.l3, extra).is_err() {
            return self.drop(DropReason::FragNeeded);
        }
        for f in std::iter::once(&mut *frame).chain(extra.iter_mut()) {
            xmit::set_macs(f, mac, self.cfg.mac);
        }
        Action::Transmit
    }

    /// The next-hop MAC towards an IPv6 address: its `[neighbors]` entry,
    /// else the one the host learned for it (a real server's,
    /// `cfg.resolve_neighbors6`), else the static gateway MAC; `None` (the
    /// frame stays with the host) when none is known. A reload does not
    /// change `[neighbors]`' IPv6 entries; a learned MAC that changes has
    /// the host rewrite the card's actions (`Director::set_learned6`).
    pub fn v6_next_hop(&self, a: &Ipv6Addr) -> Option<MacAddr> {
        self.cfg.neighbors6.get(a).or_else(|| self.learned6.get(a)).copied().or(self.cfg.gateway_mac)
    }

    /// The next-hop MAC of IPv6 real server `a`: its `[neighbors]` entry,
    /// else the one the host learned; `None` while it is unknown
    /// (`cfg.resolve_neighbors6`; without it, the gateway MAC as for any
    /// other address).
    pub fn v6_real_server_mac(&self, a: &Ipv6Addr) -> Option<MacAddr> {
        match self.cfg.neighbors6.get(a).or_else(|| self.learned6.get(a)) {
            Some(&m) => Some(m),
            None if self.cfg.resolve_neighbors6 => None,
            None => self.cfg.gateway_mac,
        }
    }
}

/// Whether the extension headers of the IPv6 packet `hdrs` (from its fixed
/// header to the upper layer; `first` the fixed header's Next Header) are
/// ones the model carries (see `pkt6`): Routing, Destination Options and
/// Authentication headers anywhere, Hop-by-Hop first with only Pad1/PadN (`ip6_parse_tlv`: at most
/// 7 bytes of padding in a row, PadN's bytes zero).
fn ext_headers_carried(hdrs: &[u8], first: IpProtocol) -> bool {
    let mut next = first;
    let mut at = wire::ipv6::HEADER_LEN;
    while at < hdrs.len() {
        let Some(&[nh, len]) = hdrs.get(at..at + 2) else {
            return false;
        };
        let end = at + if next == IpProtocol::Ah { (usize::from(len) + 2) * 4 } else { (usize::from(len) + 1) * 8 };
        match next {
            IpProtocol::HopByHop if at == wire::ipv6::HEADER_LEN => {
                if !pad_only(hdrs.get(at + 2..end).unwrap_or(&[1])) {
                    return false;
                }
            }
            IpProtocol::Ipv6Route | IpProtocol::Ipv6Opts | IpProtocol::Ah => {}
            _ => return false,
        }
        next = IpProtocol::from(nh);
        at = end;
    }
    at == hdrs.len()
}

/// `ip6_parse_tlv` on options that must all be padding: Pad1 (one zero
/// byte) and PadN (type 1, length, that many zero bytes), no more than 7
/// bytes of padding in a row.
fn pad_only(mut opts: &[u8]) -> bool {
    let mut padlen = 0;
    while let Some(&t) = opts.first() {
        let optlen = match t {
            0 => 1,
            1 => match opts.get(1) {
                Some(&l) if usize::from(l) + 2 <= opts.len() && opts[2..usize::from(l) + 2].iter().all(|&b| b == 0) => usize::from(l) + 2,
                _ => return false,
            },
            _ => return false,
        };
        padlen += optlen;
        if padlen > 7 {
            return false;
        }
        opts = &opts[optlen..];
    }
    true
}
