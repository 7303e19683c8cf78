//! Neighbour Discovery for the director's addresses: a Neighbour
//! Solicitation for its `ip6` or an IPv6 VIP is answered with the
//! Neighbour Advertisement Linux's stack sends (`icmpv6_rcv` →
//! `ndisc_rcv` → `ndisc_recv_ns` → `ndisc_send_na`, net/ipv6/ndisc.c), as
//! [`Director::arp`] answers ARP for IPv4. The VIPs are addresses of the
//! director's interface (`ipv6_get_ifaddr` finds them, not tentative), and
//! the director forwards IPv6 (`forwarding = 1`, which NAT replies need),
//! so the advertisement has the router flag.

use super::v6::Pkt6;
use super::{Action, Director, DropReason};
use crate::wire::icmpv6::{self, NeighbourAdvert, ALL_NODES, NA_OVERRIDE, NA_ROUTER, NA_SOLICITED};
use crate::wire::{ipv6, MacAddr};
use std::net::Ipv6Addr;

impl Director {
    /// A Neighbour Solicitation (ICMPv6 type 135 right after the fixed
    /// header, to our MAC or a multicast one). `None` when it is not for one
    /// of our addresses, or when Linux would first have to resolve the
    /// solicitor itself: the host stack's.
    pub(super) fn ndisc_rcv(&mut self, frame: &mut Vec<u8>, p: &Pkt6) -> Option<Action> {
        let at = p.l3 + ipv6::HEADER_LEN;
        let msg = &frame[at..(p.l3 + usize::from(p.len)).min(frame.len())];
        // Only a solicitation for one of our addresses is the model's (the
        // host stack drops the others, or proxies for them).
        let target = Ipv6Addr::from(<[u8; 16]>::try_from(msg.get(8..24)?).ok()?);
        if !self.local6(&target) {
            return None;
        }
        // icmpv6_rcv: the checksum; ndisc_rcv: hop limit 255 (the message
        // comes from the link), code 0.
        let dad = p.saddr.is_unspecified();
        if !icmpv6::verify(p.saddr, p.daddr, msg) || p.hop_limit != 255 || msg[1] != 0 || (dad && !is_solicited_node(&p.daddr)) {
            return Some(self.drop(DropReason::NdInvalid));
        }
        let Ok(slla) = icmpv6::parse_nd_options(&msg[icmpv6::ND_MSG_LEN..]) else {
            return Some(self.drop(DropReason::NdInvalid));
        };
        // ndisc_opt_addr_data: an Ethernet address option is 8 bytes long.
        let slla = match slla {
            Some(o) if o.len() != 8 || dad => return Some(self.drop(DropReason::NdInvalid)),
            Some(o) => MacAddr::from_bytes(&o[2..8]),
            None => None,
        };
        // Ours, and to a group we joined (all-nodes, the target's
        // solicited-node group) or to one of our addresses.
        let joined = p.daddr == ALL_NODES || p.daddr == icmpv6::solicited_node(&target) || self.local6(&p.daddr);
        if !joined {
            return None;
        }
        let inc = p.daddr.is_multicast();
        let (dst, dst_mac, flags, tlla) = if dad {
            // Another node probes our address: defend it to all nodes.
            (ALL_NODES, icmpv6::multicast_mac(&ALL_NODES), NA_ROUTER | NA_OVERRIDE, true)
        } else {
            // __neigh_lookup creates the solicitor's entry for a unicast
            // probe or one with its address; the reply goes to what the
            // entry knows (the option, else what was known before).
            let known = slla.or_else(|| self.cfg.neighbors6.get(&p.saddr).copied())?;
            let o = if inc { NA_OVERRIDE } else { 0 };
            (p.saddr, known, NA_ROUTER | NA_SOLICITED | o, inc)
        };
        let na = NeighbourAdvert { flags, target, tlla: tlla.then_some(self.cfg.mac), src: target, dst };
        *frame = icmpv6::na_frame(&frame[..p.l3], dst_mac, self.cfg.mac, &na);
        self.counters.nd_adverts += 1;
        Some(Action::Transmit)
    }
}

/// `ipv6_addr_is_solict_mult`: ff02::1:ff00:0/104.
fn is_solicited_node(a: &Ipv6Addr) -> bool {
    let s = a.segments();
    s[..5] == [0xff02, 0, 0, 0, 0] && s[5] == 1 && s[6] >> 8 == 0xff
}
