//! ICMPv6 and connections: the errors the director's stack generates
//! (`icmp6_send`, net/ipv6/icmp.c, as IPVS's `decrement_ttl`,
//! `ensure_mtu_is_adequate` and `ip_vs_leave` and the forwarding path's
//! `ip6_forward` call it), and errors about connections relayed as
//! `ip_vs_in_icmp_v6` (client side) and `ip_vs_out_icmp_v6` (NAT real
//! server side) do in ip_vs_core.c.
//!
//! One field is not the kernel's: the flow label of a generated error. Linux
//! fills it from `ip6_make_flowlabel` (`auto_flowlabels`, on by default), a
//! hash of the flow keyed with a random number drawn at boot, which no
//! model can predict; the model sends 0.

use super::v6::Pkt6;
use super::{Action, Director, DropReason, HostReason};
use crate::conn::flags as cf;
use crate::time::Time;
use crate::wire::icmpv6::{self, Icmpv6Error, ICMPV6_INFOMSG_MASK, ICMPV6_PKT_TOOBIG, IPPROTO_ICMPV6};
use crate::wire::ipv6::{self, Ipv6Packet};
use crate::wire::{self, FrameInfo, IpProtocol, MacAddr, IPPROTO_TCP, IPPROTO_UDP};
use crate::xmit;
use std::net::Ipv6Addr;

/// `icmpv6_time`, the default per-destination interval between errors (ms).
const ICMPV6_TIME_MS: Time = 1000;
/// The hop limit of the director's own IPv6 packets (`ip6_dst_hoplimit`:
/// the interface's `hop_limit`, 64 by default).
const HOP_LIMIT: u8 = 64;
/// The prefix length assumed for the route to an on-link `[neighbors]`
/// address (a /64 link); a destination through the gateway uses the default
/// route (/0).
const ON_LINK_PLEN: u32 = 64;

/// The IPv6 packet quoted by an ICMPv6 error, as `ip_vs_fill_iph_skb_icmp`
/// reads it (`ipv6_find_hdr` from the quoted header) with its ports.
#[derive(Clone, Copy, Debug)]
struct Quoted6 {
    proto: u8,
    saddr: Ipv6Addr,
    daddr: Ipv6Addr,
    sport: u16,
    dport: u16,
    /// Offset of the quoted upper-layer header in the frame.
    l4: usize,
}

/// The packet quoted from `frame[at..end]`: `None` when the kernel lets the
/// error go (`NF_ACCEPT`): no whole version-6 header, an extension chain
/// that does not parse, a later fragment, not TCP or UDP, or no ports.
fn quoted6(frame: &[u8], at: usize, end: usize) -> Option<Quoted6> {
    let b = frame.get(at..end).filter(|b| b.len() >= ipv6::HEADER_LEN)?;
    let q = Ipv6Packet::new_unchecked(b);
    if q.version() != 6 {
        return None;
    }
    // The walk reads the skb, not bounded by the quoted Payload Length.
    let mut whole = frame[at..end].to_vec();
    let pl = (end - at - ipv6::HEADER_LEN).min(usize::from(u16::MAX)) as u16;
    whole[4..6].copy_from_slice(&pl.to_be_bytes());
    let up = Ipv6Packet::new_unchecked(&whole[..]).upper_layer().ok()?;
    if up.is_non_first_fragment() {
        return None;
    }
    let proto = u8::from(up.protocol);
    if proto != IPPROTO_TCP && proto != IPPROTO_UDP {
        return None;
    }
    let (sport, dport) = wire::transport_ports(frame.get(at + up.offset..end)?)?;
    Some(Quoted6 { proto, saddr: q.src_addr(), daddr: q.dst_addr(), sport, dport, l4: at + up.offset })
}

/// `is_ineligible`: never an error about an ICMPv6 error (nor about an
/// ICMPv6 packet whose type is not there). The model's packets have the
/// upper layer right after the fixed header.
fn is_ineligible(frame: &[u8], l3: usize, end: usize) -> bool {
    if frame[l3 + 6] != IPPROTO_ICMPV6 {
        return false;
    }
    let t = l3 + ipv6::HEADER_LEN;
    t >= end || frame[t] & ICMPV6_INFOMSG_MASK == 0
}

impl Director {
    /// Whether `a` is one of the director's IPv6 addresses (its `ip6` or a
    /// VIP): `ipv6_chk_addr`.
    pub(super) fn local6(&self, a: &Ipv6Addr) -> bool {
        Some(*a) == self.cfg.ip6 || self.owns_vip6(a)
    }

    /// `icmpv6_xrlim_allow`: informational messages and Packet Too Big are
    /// not limited (nor any type outside the default `icmp/ratemask`,
    /// 0-1,3-127); the others by a token bucket per destination whose
    /// interval is `icmpv6_time` shifted right by `(128 - plen) >> 5` for
    /// the route's prefix length ("more bandwidth to wider prefixes").
    fn icmp6_allowed(&mut self, dst: Ipv6Addr, typ: u8) -> bool {
        if typ & ICMPV6_INFOMSG_MASK != 0 || typ == ICMPV6_PKT_TOOBIG {
            return true;
        }
        let plen = if self.cfg.neighbors6.contains_key(&dst) { ON_LINK_PLEN } else { 0 };
        let (timeout, now, minute) = self.xrlim_clock(ICMPV6_TIME_MS, (128 - plen) >> 5);
        let bucket = self.icmp6_peers.entry(dst).or_insert((0, now.wrapping_sub(minute)));
        super::output::inet_peer_xrlim_allow(bucket, now, timeout)
    }

    /// `icmp6_send` in reply to the IPv6 packet at `frame[l3..]`: replaces
    /// `frame` with the error and returns Transmit (counted as a `drop`
    /// too), or returns the `drop` action when the kernel sends nothing.
    /// The source is the packet's destination when that is ours, else the
    /// director's `ip6` (`ipv6_dev_get_saddr` on the input device).
    pub(super) fn icmp6_send(&mut self, frame: &mut Vec<u8>, l3: usize, typ: u8, code: u8, info: u32, drop: DropReason) -> Action {
        let hdr = Ipv6Packet::new_unchecked(&frame[l3..]);
        let (saddr, daddr) = (hdr.src_addr(), hdr.dst_addr());
        let end = (l3 + ipv6::HEADER_LEN + usize::from(hdr.payload_len())).min(frame.len());
        let src = if self.local6(&daddr) { Some(daddr) } else { self.cfg.ip6 };
        let src = match src {
            Some(s) if !daddr.is_multicast() => s,
            // To a multicast group, only Packet Too Big (the model receives
            // none); no address: nothing the model could send from.
            _ => return self.drop(drop),
        };
        if saddr.is_unspecified() || saddr.is_multicast() || is_ineligible(frame, l3, end) {
            return self.drop(drop);
        }
        if !self.icmp6_allowed(saddr, typ) {
            self.counters.icmp_rate_limited += 1;
            return self.drop(drop);
        }
        let Some(mac) = self.v6_next_hop(&saddr) else {
            return self.drop(drop);
        };
        let e = Icmpv6Error { typ, code, info, src, dst: saddr, hop_limit: HOP_LIMIT };
        *frame = icmpv6::error_frame(&frame[..l3], mac, self.cfg.mac, &e, &frame[l3..end]);
        *self.counters.icmp6_sent.entry((typ, code)).or_default() += 1;
        self.counters.drop[drop as usize] += 1;
        self.counters.frames_dropped += 1;
        Action::Transmit
    }

    /// ICMPv6 right after the fixed header: Neighbour Solicitations
    /// ([`ndisc_rcv`](Self::ndisc_rcv)), errors to a VIP
    /// (`ip_vs_in_icmp_v6`) and errors passing through
    /// (`ip_vs_out_icmp_v6`). `None`: not ICMPv6, or to the director's own
    /// `ip6` (the host stack's).
    pub(super) fn icmpv6_rcv(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, info: &FrameInfo) -> Option<Action> {
        let ip = info.ipv6.as_ref()?;
        if ip.next_header != IpProtocol::Icmpv6 || info.error.is_some() {
            return None;
        }
        let p = Pkt6::icmp(ip.l3_offset, ip.payload_len, ip.src, ip.dst, ip.hop_limit);
        let end = p.l3 + usize::from(p.len);
        let typ = frame.get(p.l3 + ipv6::HEADER_LEN).copied();
        if typ == Some(icmpv6::NDISC_NEIGHBOUR_SOLICITATION) {
            if let Some(a) = self.ndisc_rcv(frame, &p) {
                return Some(a);
            }
        }
        if MacAddr::from_bytes(&frame[0..6]) != Some(self.cfg.mac) || Some(p.daddr) == self.cfg.ip6 {
            return None;
        }
        let vip = self.services.is_vip6(&p.daddr);
        if vip && !self.vip_owned(p.daddr) {
            // A VIP another director owns (VRRP backup): the host stack's,
            // as for IPv4.
            return Some(self.host(HostReason::Forward));
        }
        if end < p.l3 + ipv6::HEADER_LEN + icmpv6::HEADER_LEN {
            // frag_safe_skb_hp fails: NF_DROP, once IPVS is enabled.
            if vip || !self.services.services.is_empty() {
                return Some(self.drop(DropReason::Truncated));
            }
            return None;
        }
        if vip {
            Some(self.ip_vs_in_icmp_v6(frame, extra, &p))
        } else {
            Some(self.ip_vs_out_icmp_v6(frame, &p))
        }
    }

    /// `ip_vs_in_icmp_v6`: an ICMPv6 error to a VIP about one of our
    /// connections (it quotes a packet VIP → client). Related to a NAT
    /// connection, it goes to the real server rewritten
    /// (`ip_vs_icmp_xmit_v6`: `ip_vs_nat_icmp_v6` after
    /// `__ip_vs_get_out_rt_v6`); DR and TUN send it on as a packet of the
    /// connection (`cp->packet_xmit`). The kernel does not check the ICMPv6
    /// checksum on this path; NAT recomputes it.
    fn ip_vs_in_icmp_v6(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt6) -> Action {
        let at = p.l3 + ipv6::HEADER_LEN;
        if frame[at] & ICMPV6_INFOMSG_MASK != 0 {
            return self.host(HostReason::Local);
        }
        let end = p.l3 + usize::from(p.len);
        let Some(q) = quoted6(frame, at + icmpv6::HEADER_LEN, end) else {
            return self.host(HostReason::Local);
        };
        // The quoted packet went VIP → client: look the conn up reversed.
        let Some(id) = self.conns.in_get6(q.proto, &q.daddr, q.dport, &q.saddr, q.sport) else {
            return self.host(HostReason::Local);
        };
        self.last_conn = Some(id);
        let c = *self.conns.get(id);
        self.in_stats(&c, p.len);
        let a = self.xmit_request6(frame, extra, p, id, Some(q.l4));
        self.conn_put(id);
        a
    }

    /// `ip6_forward` + `ip_vs_out_icmp_v6` → `handle_response_icmp`: an
    /// ICMPv6 error from a real server about a NAT connection (it quotes a
    /// packet client → real server), rewritten toward the client. The
    /// forwarding path sends no error about an error (`is_ineligible`), so
    /// hop limit 1 and too big are silent drops. Anything else the host
    /// stack forwards, counted `non_ip` as the other IPv6 packets that are
    /// not the model's.
    fn ip_vs_out_icmp_v6(&mut self, frame: &mut Vec<u8>, p: &Pkt6) -> Action {
        let at = p.l3 + ipv6::HEADER_LEN;
        if frame[at] & ICMPV6_INFOMSG_MASK != 0 {
            return self.host(HostReason::NonIp);
        }
        let end = p.l3 + usize::from(p.len);
        let Some(q) = quoted6(frame, at + icmpv6::HEADER_LEN, end) else {
            return self.host(HostReason::NonIp);
        };
        // client → real server, reversed: the reply direction's lookup.
        let Some(id) = self.conns.out_get6(q.proto, &q.daddr, q.dport, &q.saddr, q.sport) else {
            return self.host(HostReason::NonIp);
        };
        let c = *self.conns.get(id);
        let a = self.conns.addrs(id);
        let (std::net::IpAddr::V6(caddr), std::net::IpAddr::V6(vaddr), cf::MASQ) = (a.caddr, a.vaddr, c.fwd()) else {
            return self.host(HostReason::NonIp);
        };
        if p.hop_limit <= 1 {
            return self.drop(DropReason::TtlExceeded);
        }
        if u32::from(p.len) > u32::from(self.cfg.mtu).max(ipv6::MIN_MTU as u32) {
            return self.drop(DropReason::FragNeeded);
        }
        // handle_response_icmp: "Ensure the checksum is correct", with
        // `ip_vs_checksum_complete(skb, sizeof(struct ipv6hdr))`: the sum of
        // the ICMPv6 message alone, without the pseudo-header that ICMPv6's
        // checksum covers (RFC 4443 §2.3). A correct error is therefore
        // dropped (unless its pseudo-header happens to sum to zero); one
        // whose checksum leaves out the pseudo-header is relayed, with a
        // correct checksum from `nat_icmp_v6`. The packet has not passed
        // `icmpv6_rcv` (it is forwarded), so nothing has validated it
        // (`skb_csum_unnecessary` is false for a frame from the wire).
        // Seen in the conformance matrix (divergence #20).
        if !wire::checksum::verify(&frame[at..end], 0) {
            return self.drop(DropReason::BadIcmpChecksum);
        }
        let Some(mac) = self.v6_next_hop(&caddr) else {
            return self.host(HostReason::NonIp);
        };
        self.last_conn = Some(id);
        xmit::trim_to_ipv6(frame, p.l3);
        xmit::ipv6_decrease_hop_limit(frame, p.l3);
        nat_icmp_v6(frame, p.l3, q.l4, true, vaddr, c.vport);
        self.out_stats(&c, u64::from(p.len));
        self.conn_put(id);
        xmit::set_macs(frame, mac, self.cfg.mac);
        Action::Transmit
    }

    /// `decrement_ttl` (AF_INET6) for the packet `p`: ICMPv6 time exceeded
    /// at hop limit 1 or 0, from the VIP.
    pub(super) fn hop_limit_exceeded6(&mut self, frame: &mut Vec<u8>, p: &Pkt6) -> Action {
        self.icmp6_send(frame, p.l3, icmpv6::ICMPV6_TIME_EXCEED, icmpv6::ICMPV6_EXC_HOPLIMIT, 0, DropReason::TtlExceeded)
    }

    /// `ensure_mtu_is_adequate` → `__mtu_check_toobig_v6` failed: ICMPv6
    /// packet too big carrying `mtu` (never about a relayed error).
    pub(super) fn too_big6(&mut self, frame: &mut Vec<u8>, p: &Pkt6, mtu: u32) -> Action {
        self.icmp6_send(frame, p.l3, ICMPV6_PKT_TOOBIG, 0, mtu, DropReason::FragNeeded)
    }

}

/// `ip_vs_nat_icmp_v6`: `inout` (real server → client): outer source and
/// quoted destination become `addr`, the quoted destination port `port`;
/// else (client → real server) outer destination and quoted source become
/// `addr`, the quoted source port `port`. The quoted transport checksum is
/// left as quoted; the ICMPv6 checksum is computed anew over the whole
/// message. `l4` is the quoted transport header's offset in the frame.
pub(super) fn nat_icmp_v6(frame: &mut [u8], l3: usize, l4: usize, inout: bool, addr: Ipv6Addr, port: u16) {
    let q = l3 + ipv6::HEADER_LEN + icmpv6::HEADER_LEN;
    {
        let mut ip = Ipv6Packet::new_unchecked(&mut frame[l3..]);
        if inout {
            ip.set_src_addr(addr);
        } else {
            ip.set_dst_addr(addr);
        }
        let mut quoted = Ipv6Packet::new_unchecked(&mut frame[q..]);
        if inout {
            quoted.set_dst_addr(addr);
        } else {
            quoted.set_src_addr(addr);
        }
    }
    wire::replace_transport_port(&mut frame[l4..], inout, port);
    let ip = Ipv6Packet::new_unchecked(&frame[l3..]);
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let end = l3 + ipv6::HEADER_LEN + usize::from(ip.payload_len());
    icmpv6::fill_checksum(src, dst, &mut frame[l3 + ipv6::HEADER_LEN..end]);
}
