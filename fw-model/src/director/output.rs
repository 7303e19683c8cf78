//! The output side: the request transmitters (`ip_vs_nat_xmit`,
//! `ip_vs_dr_xmit`, `ip_vs_tunnel_xmit` in ip_vs_xmit.c, each after
//! `__ip_vs_get_out_rt`), `icmp_send` with its per-destination rate limit
//! (`icmpv4_xrlim_allow`), `ip_finish_output`'s fragmentation, and the
//! drop and host-handoff accounting.

use crate::wire::icmp::{self, ICMP_DEST_UNREACH, ICMP_TIME_EXCEEDED, ICMP_UNREACH_FRAG_NEEDED};
use crate::wire::{self, Icmpv4Packet, Ipv4Packet, IPPROTO_ICMP};
use super::{Action, Director, DropReason, HostReason, Pkt};
use crate::conn::{flags as cf, ConnId};
use crate::defrag::DefragUser;
use crate::time::{secs, Time, MSEC};
use crate::wire::MacAddr;
use crate::xmit;
use std::net::Ipv4Addr;

impl Director {

    pub(super) fn next_ip_id(&mut self) -> u16 {
        let id = self.ip_id;
        self.ip_id = self.ip_id.wrapping_add(1);
        id
    }

    /// `icmpv4_xrlim_allow` → `inet_peer_xrlim_allow`: token bucket per
    /// destination, `icmp_ratelimit` per message, burst 6; FRAG_NEEDED and
    /// types outside `icmp_ratemask` are not limited.
    pub(super) fn icmp_allowed(&mut self, dst: u32, typ: u8, code: u8) -> bool {
        if typ > 18 {
            return true;
        }
        if typ == ICMP_DEST_UNREACH && code == ICMP_UNREACH_FRAG_NEEDED {
            return true;
        }
        if (1u32 << typ) & self.cfg.sysctl.icmp_ratemask == 0 {
            return true;
        }
        let (timeout, now, minute) = self.xrlim_clock(self.cfg.sysctl.icmp_ratelimit_ms as Time, 0);
        let bucket = self.icmp_peers.entry(dst).or_insert((0, now.wrapping_sub(minute)));
        inet_peer_xrlim_allow(bucket, now, timeout)
    }

    /// The timeout of `ms` milliseconds shifted right by `shift`, the time
    /// now and one minute, in jiffies with the kernel's clock configured
    /// (the sysctls are stored as `msecs_to_jiffies`), else in ns. A new
    /// peer starts with `rate_last = now - 60 s` (`inet_getpeer`), in the
    /// kernel's unsigned arithmetic (wrapping near time zero).
    pub(super) fn xrlim_clock(&self, ms: Time, shift: u32) -> (Time, Time, Time) {
        match &self.cfg.clock {
            Some(k) => (k.to_jiffies(ms * MSEC) >> shift, k.jiffies(self.now), k.to_jiffies(secs(60))),
            None => ((ms * MSEC) >> shift, self.now, secs(60)),
        }
    }

    /// `icmp_send` in reply to the IPv4 packet at `frame[p.l3..]`: replaces
    /// `frame` with the ICMP error and returns Transmit, or returns the
    /// `drop` action when the kernel would send nothing.
    pub(super) fn icmp_send(&mut self, frame: &mut Vec<u8>, p: &Pkt, typ: u8, code: u8, info: u32, src: u32, drop: DropReason) -> Action {
        // Never about a non-first fragment, nor about an ICMP error.
        if Ipv4Packet::new_unchecked(&frame[p.l3..]).frag_offset_units() != 0 {
            return self.drop(drop);
        }
        if p.proto == IPPROTO_ICMP {
            let it = p.l3 + p.ihl;
            if it >= frame.len() {
                return self.drop(drop);
            }
            let t = Icmpv4Packet::new_unchecked(&frame[it..]).msg_type();
            if t > 18 || icmp::is_error_type(t) {
                return self.drop(drop);
            }
        }
        if !self.icmp_allowed(p.saddr, typ, code) {
            self.counters.icmp_rate_limited += 1;
            return self.drop(drop);
        }
        // __ip_options_echo: the error carries the packet's Record Route and
        // Timestamp options, with its own slot filled in.
        let opts = match &self.ip_opts {
            Some(c) => {
                let host = super::RcvOptionsHost { director: self, spec_dst: Ipv4Addr::from(src) };
                let received = Ipv4Packet::new_unchecked(&frame[p.l3..]);
                match wire::ipv4_options::echo_options(received.options(), c, Ipv4Addr::from(src), &host) {
                    Some(o) => o,
                    None => return self.drop(drop),
                }
            }
            None => Vec::new(),
        };
        let ident = self.next_ip_id();
        let dst_mac = self.tx_next_hop_mac(Ipv4Addr::from(p.saddr));
        let f = xmit::icmp_error_frame(
            frame,
            p.l3,
            &xmit::IcmpError { typ, code, info, src: Ipv4Addr::from(src), ident, options: &opts },
            dst_mac,
            self.cfg.mac,
            self.cfg.mtu as usize,
        );
        *frame = f;
        *self.counters.icmp_sent.entry((typ, code)).or_default() += 1;
        self.counters.drop[drop as usize] += 1;
        self.counters.frames_dropped += 1;
        Action::Transmit
    }

    /// The size `ensure_mtu_is_adequate` compares with the MTU
    /// (`__mtu_check_toobig_v4`): the largest fragment of a reassembled
    /// datagram, else the packet.
    pub(super) fn mtu_size(&self, p: &Pkt) -> u32 {
        match &self.reasm {
            Some(r) => r.frag_max_size as u32,
            None => p.len as u32,
        }
    }
    pub(super) fn drop(&mut self, r: DropReason) -> Action {
        self.counters.drop[r as usize] += 1;
        self.counters.frames_dropped += 1;
        Action::Drop(r)
    }

    pub(super) fn host(&mut self, r: HostReason) -> Action {
        self.counters.host[r as usize] += 1;
        self.counters.frames_host += 1;
        Action::ToHost(r)
    }

    /// Splits an oversized (DF clear) packet into fragments: the first
    /// replaces `frame`, the rest go to `extra`.
    pub(super) fn finish_tx(&mut self, frame: &mut Vec<u8>, l3: usize, extra: &mut Vec<Vec<u8>>) -> Action {
        let ip = Ipv4Packet::new_unchecked(&frame[l3..]);
        let (tot, hl) = (usize::from(ip.total_len()), ip.header_len());
        if let Some(r) = &self.reasm {
            // ip_finish_output: a reassembled packet always goes through
            // ip_fragment, at the smaller of the MTU and its largest
            // fragment. Gathered by ip_vs_out, its fragments are still
            // chained and go out as they came if they fit (frag-list fast
            // path, DF cleared); reassembled for local delivery, they were
            // coalesced into one buffer: cut anew (slow path).
            let mtu = (self.cfg.mtu as usize).min(r.frag_max_size as usize);
            let same_data = r.pieces.iter().sum::<usize>() == tot - hl;
            let mut frags = if r.user == DefragUser::VsOut && same_data && xmit::fraglist_fits(hl, mtu, &r.pieces) {
                xmit::fragment_fast(frame, l3, &r.pieces)
            } else {
                xmit::fragment_slow(frame, l3, mtu, r.pmtu)
            };
            *frame = frags.remove(0);
            extra.extend(frags);
            return Action::Transmit;
        }
        if tot > self.cfg.mtu as usize {
            let mut frags = xmit::fragment(frame, l3, self.cfg.mtu as usize);
            *frame = frags.remove(0);
            extra.extend(frags);
        }
        Action::Transmit
    }

    /// The request-direction transmitters (`ip_vs_nat_xmit`, `ip_vs_dr_xmit`,
    /// `ip_vs_tunnel_xmit`), each starting with `__ip_vs_get_out_rt`.
    /// `icmp` marks a related ICMP error being forwarded (no MTU check).
    pub(super) fn xmit_request(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt, id: ConnId, icmp: bool) -> Action {
        let c = *self.conns.get(id);
        let fwd = c.fwd();
        if c.daf != crate::conn::AF_INET {
            return self.tunnel_4in6(frame, extra, p, id, icmp);
        }
        let daddr = Ipv4Addr::from(c.daddr);
        if fwd == cf::LOCALNODE || daddr == self.cfg.ip {
            return self.host(HostReason::LocalRealServer);
        }
        // decrement_ttl
        if p.ttl <= 1 {
            let src = p.daddr;
            return self.icmp_send(frame, p, ICMP_TIME_EXCEEDED, 0, 0, src, DropReason::TtlExceeded);
        }
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        let mut mtu = self.cfg.mtu as u32;
        let tunnel = fwd == cf::TUNNEL;
        if tunnel {
            mtu -= 20;
            if mtu < 68 {
                return self.drop(DropReason::FragNeeded);
            }
        }
        // ensure_mtu_is_adequate
        if !(tunnel && !self.cfg.sysctl.pmtu_disc) && p.df && self.mtu_size(p) > mtu && !icmp {
            let src = p.daddr;
            return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_UNREACH_FRAG_NEEDED, mtu, src, DropReason::FragNeeded);
        }
        match fwd {
            cf::MASQ => {
                if icmp {
                    xmit::nat_icmp(frame, p.l3, false, daddr, c.dport);
                } else {
                    xmit::nat_rewrite(frame, p.l3, true, daddr, c.dport);
                }
            }
            cf::DROUTE => xmit::ip_send_check(frame, p.l3),
            cf::TUNNEL => {
                // The kernel draws a non-DF outer ID from its randomised
                // generator; the model copies the inner ID (documented
                // deviation: deterministic, and the hardware can do it).
                let inner_id = Ipv4Packet::new_unchecked(&frame[p.l3..]).ident();
                xmit::ipip_encap(frame, p.l3, self.cfg.ip, daddr, self.cfg.sysctl.pmtu_disc, inner_id);
            }
            _ => return self.host(HostReason::LocalRealServer),
        }
        let mac = self.dest_mac(c.dest, daddr);
        xmit::set_macs(frame, mac, self.cfg.mac);
        self.finish_tx(frame, p.l3, extra)
    }

    /// `ip_vs_tunnel_xmit_v6` for an IPv4 connection to an IPv6 real
    /// server (`cp->af == AF_INET`, `cp->daf == AF_INET6`):
    /// `__ip_vs_get_out_rt_v6` decrements the TTL (`decrement_ttl` for
    /// AF_INET: time exceeded at TTL ≤ 1), the MTU is the link's less 40
    /// (below 1280 refused, silently), and `ensure_mtu_is_adequate` for
    /// AF_INET answers DF and too big with "fragmentation needed" unless
    /// `pmtu_disc` is off; then the 40-byte IPv6 header
    /// ([`xmit::ip4in6_encap`]). A packet still too big for the link once
    /// encapsulated (DF clear) is fragmented by `ip6_fragment`
    /// ([`xmit::ip6_fragment`]).
    fn tunnel_4in6(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt, id: ConnId, icmp: bool) -> Action {
        let c = *self.conns.get(id);
        let std::net::IpAddr::V6(daddr) = self.conns.addrs(id).daddr else {
            return self.host(HostReason::Forward);
        };
        if c.fwd() != cf::TUNNEL {
            return self.host(HostReason::LocalRealServer);
        }
        let Some(src) = self.cfg.ip6 else {
            return self.host(HostReason::Forward);
        };
        if p.ttl <= 1 {
            let src = p.daddr;
            return self.icmp_send(frame, p, ICMP_TIME_EXCEEDED, 0, 0, src, DropReason::TtlExceeded);
        }
        let mac = match self.v6_real_server_mac(&daddr) {
            Some(m) => m,
            // Being resolved: the host holds the frames until it knows the MAC.
            None if self.cfg.resolve_neighbors6 => {
                self.unresolved = Some(daddr.into());
                MacAddr::ZERO
            }
            None => return self.host(HostReason::Forward),
        };
        // The TTL is decremented before the MTU check, so "fragmentation
        // needed" quotes the header with the TTL (and checksum) already
        // decreased, as in the IPv4 tunnel (seen in the conformance VM:
        // matrix g5-mixed, `v6-mixed-4in6-rr-tcp`).
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        let mtu = self.cfg.mtu as u32 - crate::wire::ipv6::HEADER_LEN as u32;
        if mtu < crate::wire::ipv6::MIN_MTU as u32 {
            return self.drop(DropReason::FragNeeded);
        }
        if self.cfg.sysctl.pmtu_disc && p.df && self.mtu_size(p) > mtu && !icmp {
            let src = p.daddr;
            return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_UNREACH_FRAG_NEEDED, mtu, src, DropReason::FragNeeded);
        }
        let too_big = Ipv4Packet::new_unchecked(&frame[p.l3..]).total_len() as u32 > mtu;
        xmit::ip4in6_encap(frame, p.l3, src, daddr);
        if too_big {
            // DF clear (or pmtu_disc 0) and too big once encapsulated:
            // `skb->ignore_df` is set, so `ip6_fragment` cuts the IPv6
            // packet at the link MTU (seen in the conformance VM: matrix
            // g5-mixed, `v6-mixed-4in6-rr-tcp`, 1448 + 52 bytes). Its
            // identification is Linux's keyed hash; the model's IP ID
            // counter stands in for it.
            let ident = u32::from(self.next_ip_id());
            let mut frags = xmit::ip6_fragment(frame, p.l3, self.cfg.mtu as usize, ident);
            for f in &mut frags {
                xmit::set_macs(f, mac, self.cfg.mac);
            }
            *frame = frags.remove(0);
            extra.extend(frags);
            return Action::Transmit;
        }
        xmit::set_macs(frame, mac, self.cfg.mac);
        Action::Transmit
    }

    /// The next-hop MAC of real server `dest` (address `addr`).
    #[inline]
    pub(super) fn dest_mac(&mut self, dest: u32, addr: Ipv4Addr) -> MacAddr {
        let i = dest as usize;
        if i >= self.dest_mac.len() {
            let n = self.services.dests.len().max(i + 1);
            let macs: Vec<MacAddr> = (self.dest_mac.len()..n)
                .map(|j| match self.services.dests[j].addr {
                    std::net::IpAddr::V4(a) => self.real_server_mac(a).unwrap_or(MacAddr::ZERO),
                    // Not reached: IPv6 servers carry no IPv4 traffic.
                    std::net::IpAddr::V6(_) => MacAddr::ZERO,
                })
                .collect();
            self.dest_mac.extend(macs);
        }
        let m = self.dest_mac[i];
        debug_assert_eq!(m, self.real_server_mac(addr).unwrap_or(MacAddr::ZERO));
        if m == MacAddr::ZERO {
            // Not resolved yet (`cfg.resolve_neighbors`): the host holds
            // the frames until it knows the MAC.
            self.unresolved = Some(addr.into());
        }
        m
    }
}

/// `inet_peer_xrlim_allow`: a token bucket of `(tokens, rate_last)` that
/// earns one token per unit of time, holds at most 6 timeouts
/// (`XRLIM_BURST_FACTOR`) and spends `timeout` per message.
pub(super) fn inet_peer_xrlim_allow(bucket: &mut (Time, Time), now: Time, timeout: Time) -> bool {
    let (tokens, last) = bucket;
    let mut token = tokens.saturating_add(now.wrapping_sub(*last));
    *last = now;
    if token > 6 * timeout {
        token = 6 * timeout;
    }
    let ok = token >= timeout;
    if ok {
        token -= timeout;
    }
    *tokens = token;
    ok
}
