//! Packet transforms of the IPVS transmitters (`net/netfilter/ipvs/ip_vs_xmit.c`,
//! the protocol handlers in `ip_vs_proto_{tcp,udp}.c`) and of the IPv4
//! paths they use (`ip_decrease_ttl`, `ip_fragment`, `icmp_send`).
//!
//! Every function works on a whole Ethernet frame in a `Vec<u8>` with the
//! offset of its IPv4 header (`l3`), rewrites in place through the [`wire`]
//! views, and never panics on the frames the director hands it (it only
//! hands parsed, length-checked frames). Checksum arithmetic is the
//! kernel's: RFC 1624 incremental updates for TCP/UDP
//! (`tcp_fast_csum_update`), full recomputation of the IPv4 header checksum
//! (`ip_send_check`).
//!
//! [`wire`]: crate::wire

use crate::wire::checksum;
use crate::wire::ipv4::{self, Ipv4Packet};
use crate::wire::{arp, icmp, replace_transport_port, tcp, udp};
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetFrame, Icmpv4Packet, MacAddr, TcpPacket, UdpPacket, IPPROTO_ICMP,
    IPPROTO_IPIP, IPPROTO_TCP, IPPROTO_UDP,
};
use std::net::Ipv4Addr;

/// The IPv4 header at `frame[l3..]`.
#[inline]
fn ip_at(frame: &[u8], l3: usize) -> Ipv4Packet<&[u8]> {
    Ipv4Packet::new_unchecked(&frame[l3..])
}

/// The IPv4 header at `frame[l3..]`, mutable.
#[inline]
fn ip_at_mut(frame: &mut [u8], l3: usize) -> Ipv4Packet<&mut [u8]> {
    Ipv4Packet::new_unchecked(&mut frame[l3..])
}

/// `ip_send_check`: recompute the IPv4 header checksum of the packet at
/// `frame[l3..]` ([`Ipv4Packet::fill_checksum`]).
#[inline]
pub fn ip_send_check(frame: &mut [u8], l3: usize) {
    ip_at_mut(frame, l3).fill_checksum();
}

/// `ip_decrease_ttl` (include/net/ip.h): TTL - 1 with the incremental
/// header checksum fix the kernel uses
/// ([`Ipv4Packet::decrement_ttl_incremental`]). The TTL must be above 0.
#[inline]
pub fn ip_decrease_ttl(frame: &mut [u8], l3: usize) {
    ip_at_mut(frame, l3).decrement_ttl_incremental();
}

/// Sets the Ethernet addresses.
#[inline]
pub fn set_macs(frame: &mut [u8], dst: MacAddr, src: MacAddr) {
    let mut eth = EthernetFrame::new_unchecked(frame);
    eth.set_dst_addr(dst);
    eth.set_src_addr(src);
}

/// Drops Ethernet padding (and anything else) after the IPv4 packet, as
/// `ip_rcv` trims the skb to the IP total length.
#[inline]
pub fn trim_to_ip(frame: &mut Vec<u8>, l3: usize) {
    let tot = usize::from(ip_at(frame, l3).total_len());
    frame.truncate(l3 + tot);
}

/// Rewrites one endpoint (address in the IPv4 header, port in the L4
/// header) of a TCP or UDP packet, as the IPVS NAT handlers do:
/// `tcp_dnat_handler`/`tcp_snat_handler` (incremental TCP checksum,
/// `tcp_fast_csum_update`), `udp_*nat_handler` (incremental when the UDP
/// checksum is non-zero, with 0 stored as 0xFFFF; full recomputation over
/// the segment when it is 0), then `ip_send_check`. `dst == true` rewrites
/// the destination.
///
/// The L4 header must be present (the director checked); fragments other
/// than the first carry no L4 header and only get the address rewrite.
///
/// The header checksum is that of `ip_send_check` (a full recomputation).
/// Without options it is obtained incrementally from the old checksum
/// ([`checksum::apply_delta`], equal to the recomputation whenever the old
/// checksum verified, which the director checked on receive and the TTL
/// decrement kept): reading back the header just written costs a
/// store-forwarding stall per packet. With options (which
/// `ip_rcv_options` may have filled in without a checksum update) it is
/// recomputed.
pub fn nat_rewrite(frame: &mut [u8], l3: usize, dst: bool, new_addr: Ipv4Addr, new_port: u16) {
    let mut ip = ip_at_mut(frame, l3);
    let old_check = ip.checksum();
    let (mut src_addr, mut dst_addr) = (ip.src_addr(), ip.dst_addr());
    let old_addr = if dst { dst_addr } else { src_addr };
    if dst {
        ip.set_dst_addr(new_addr);
        dst_addr = new_addr;
    } else {
        ip.set_src_addr(new_addr);
        src_addr = new_addr;
    }
    if ip.frag_offset_units() == 0 {
        let proto = ip.protocol();
        let seg = ip.payload_mut();
        let l4_len = match proto {
            IPPROTO_TCP => tcp::HEADER_LEN,
            IPPROTO_UDP => udp::HEADER_LEN,
            _ => usize::MAX,
        };
        if seg.len() >= l4_len {
            let old_port = replace_transport_port(seg, dst, new_port);
            let delta = checksum::delta_addr(old_addr, new_addr) + checksum::delta16(old_port, new_port);
            if proto == IPPROTO_TCP {
                let mut tcp = TcpPacket::new_unchecked(seg);
                tcp.set_checksum(checksum::apply_delta(tcp.checksum(), delta));
            } else {
                let mut udp = UdpPacket::new_unchecked(seg);
                let check = udp.checksum();
                if check != 0 {
                    udp.set_checksum(checksum::udp_finalize(checksum::apply_delta(check, delta)));
                } else {
                    // udp_*nat_handler: a zero checksum gets a full one.
                    udp.fill_checksum_segment(src_addr, dst_addr);
                }
            }
        }
    }
    if ip.header_len() == ipv4::HEADER_LEN {
        ip.set_checksum(checksum::apply_delta(old_check, checksum::delta_addr(old_addr, new_addr)));
    } else {
        ip.fill_checksum();
    }
}

/// `INET_ECN_encapsulate(inner, inner)`: DSCP and ECN copied, CE becomes ECT(0).
#[inline]
pub fn ecn_encapsulate(tos: u8) -> u8 {
    let ecn = tos & 0x03;
    (tos & !0x03) | if ecn == 0x03 { 0x02 } else { ecn }
}

/// IPIP encapsulation as `ip_vs_tunnel_xmit` + `ip_vs_prepare_tunneled_skb`
/// build it (the inner TTL must already be decremented): the inner header
/// checksum is recomputed, and a 20-byte outer header is inserted after the
/// Ethernet header: version 4, IHL 5, TOS = ECN-encapsulated inner TOS,
/// total length, ID (`outer_id`, used only when DF is clear — the kernel's
/// `ip_select_ident` gives 0 when DF is set, a random-keyed ID otherwise;
/// the director passes the inner packet's ID), DF copied from the inner
/// header when `pmtu_disc`, TTL = inner TTL, protocol 4, source `src`,
/// destination `dst`.
pub fn ipip_encap(frame: &mut Vec<u8>, l3: usize, src: Ipv4Addr, dst: Ipv4Addr, pmtu_disc: bool, outer_id: u16) {
    let mut inner = ip_at_mut(frame, l3);
    inner.fill_checksum();
    let df = pmtu_disc && inner.dont_frag();
    let mut h = [0u8; ipv4::HEADER_LEN];
    let mut outer = Ipv4Packet::new_unchecked(&mut h[..]);
    outer.set_version(4);
    outer.set_header_len(ipv4::HEADER_LEN as u8);
    outer.set_tos(ecn_encapsulate(inner.tos()));
    outer.set_total_len(inner.total_len().wrapping_add(ipv4::HEADER_LEN as u16));
    outer.set_ident(if df { 0 } else { outer_id });
    outer.set_dont_frag(df);
    outer.set_ttl(inner.ttl());
    outer.set_protocol(IPPROTO_IPIP);
    outer.set_src_addr(src);
    outer.set_dst_addr(dst);
    outer.fill_checksum();
    frame.splice(l3..l3, h);
}

/// `ip_options_fragment`: options without the copied flag become NOPs in
/// every fragment after the first (lengths unchanged).
fn options_fragment(opts: &mut [u8]) {
    let mut i = 0;
    while i < opts.len() {
        let t = opts[i];
        match t {
            0 => return, // IPOPT_END
            1 => {
                i += 1; // IPOPT_NOOP
                continue;
            }
            _ => {}
        }
        if i + 1 >= opts.len() {
            return;
        }
        let l = opts[i + 1] as usize;
        if l < 2 || i + l > opts.len() {
            return;
        }
        if t & 0x80 == 0 {
            for b in &mut opts[i..i + l] {
                *b = 1;
            }
        }
        i += l;
    }
}

/// One fragment: a copy of `header` (Ethernet + IPv4 up to `l3 + hl`)
/// followed by `data`, with the flags/offset word `flags_frag`, its total
/// length and checksum set.
fn fragment_frame(header: &[u8], l3: usize, data: &[u8], flags_frag: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(header.len() + data.len());
    f.extend_from_slice(header);
    f.extend_from_slice(data);
    let hl = header.len() - l3;
    let mut ip = ip_at_mut(&mut f, l3);
    ip.set_flags_frag_offset(flags_frag);
    ip.set_total_len((hl + data.len()) as u16);
    ip.fill_checksum();
    f
}

/// `ip_do_fragment` (slow path): splits an IPv4 packet larger than `mtu`
/// into fragments of at most `mtu` bytes, each with a copy of the Ethernet
/// header. Fragment data sizes are multiples of 8 except the last; the ID,
/// DF and the original offset/MF are kept; options are copied in full into
/// the first fragment only.
pub fn fragment(frame: &[u8], l3: usize, mtu: usize) -> Vec<Vec<u8>> {
    let df = ip_at(frame, l3).dont_frag();
    fragment_slow(frame, l3, mtu, df)
}

/// [`fragment`] with DF in every fragment given by `df` (`ip_frag_init`'s
/// `DF`: the `IPSKB_FRAG_PMTU` flag of a reassembled packet).
pub fn fragment_slow(frame: &[u8], l3: usize, mtu: usize, df: bool) -> Vec<Vec<u8>> {
    let ip = ip_at(frame, l3);
    let hl = ip.header_len();
    let tot = usize::from(ip.total_len());
    let df = if df { ipv4::FLAG_DF } else { 0 };
    let not_last = ip.more_frags();
    let mut offset = usize::from(ip.frag_offset_bytes());
    let data_space = mtu.saturating_sub(hl).max(8);
    let mut header: Vec<u8> = frame[..l3 + hl].to_vec();
    let mut left = tot - hl;
    let mut ptr = l3 + hl;
    let mut out = Vec::new();
    let mut first = true;
    while left > 0 {
        let mut len = left.min(data_space);
        if len < left {
            len &= !7;
        }
        let mut w = ((offset >> 3) as u16) | df;
        if left - len > 0 || not_last {
            w |= ipv4::FLAG_MF;
        }
        out.push(fragment_frame(&header, l3, &frame[ptr..ptr + len], w));
        if first {
            options_fragment(ip_at_mut(&mut header, l3).options_mut());
            first = false;
        }
        ptr += len;
        offset += len;
        left -= len;
    }
    out
}

/// `ip_do_fragment`'s frag-list fast path (`ip_fraglist_init`,
/// `ip_fraglist_prepare`) for a reassembled packet whose fragments fit the
/// MTU: the data leaves in the pieces it arrived in (`pieces`: data lengths
/// in order, summing to the payload). DF is cleared: the first fragment's
/// flags word is MF, each later one the offset, with MF unless last; the
/// later headers copy the first with its options fragmented.
pub fn fragment_fast(frame: &[u8], l3: usize, pieces: &[usize]) -> Vec<Vec<u8>> {
    let hl = ip_at(frame, l3).header_len();
    let mut header: Vec<u8> = frame[..l3 + hl].to_vec();
    let mut out = Vec::with_capacity(pieces.len());
    let mut ptr = l3 + hl;
    let mut offset = 0usize;
    for (i, &len) in pieces.iter().enumerate() {
        let mut w = (offset >> 3) as u16;
        if i + 1 < pieces.len() {
            w |= ipv4::FLAG_MF;
        }
        out.push(fragment_frame(&header, l3, &frame[ptr..ptr + len], w));
        if i == 0 {
            options_fragment(ip_at_mut(&mut header, l3).options_mut());
        }
        ptr += len;
        offset += len;
    }
    out
}

/// Whether `ip_do_fragment` may use the frag-list fast path for a packet
/// with header length `hl` whose data arrived in `pieces`, at data space
/// `mtu - hl`: every piece fits and all but the last are multiples of 8.
pub fn fraglist_fits(hl: usize, mtu: usize, pieces: &[usize]) -> bool {
    let space = mtu.saturating_sub(hl);
    let n = pieces.len();
    n > 1 && pieces.iter().enumerate().all(|(i, &len)| len <= space && (len & 7 == 0 || i + 1 == n))
}

/// What an ICMP error says, and from where (see [`icmp_error_frame`]).
pub struct IcmpError<'a> {
    /// ICMP type and code.
    pub typ: u8,
    /// ICMP code.
    pub code: u8,
    /// The 32-bit word after the checksum (pointer, MTU, ...).
    pub info: u32,
    /// Source address.
    pub src: Ipv4Addr,
    /// IP ID.
    pub ident: u16,
    /// IPv4 options of the error's own header (a multiple of 4 bytes:
    /// `__ip_options_echo` of the original's, see
    /// [`crate::wire::ipv4_options::echo_options`]).
    pub options: &'a [u8],
}

/// Builds the frame `icmp_send` would transmit in reply to the IPv4 packet
/// at `orig[l3..]`: an IPv4 header (TOS `(orig_tos & 0x1E) | 0xC0` for
/// errors, ID `e.ident`, no DF, TTL 64, protocol 1, source `e.src`,
/// destination the original source, options `e.options`), the ICMP header
/// (type, code, the 32-bit `info` word, checksum over the whole message)
/// and as much of the original IP packet as fits in 576 bytes (RFC 1812
/// 4.3.2.3; `icmp_send` caps at 576, options included). The Ethernet
/// header (with the original VLAN tag) is `dst_mac`/`src_mac`.
pub fn icmp_error_frame(orig: &[u8], l3: usize, e: &IcmpError, dst_mac: MacAddr, src_mac: MacAddr, mtu: usize) -> Vec<u8> {
    let (typ, code, info) = (e.typ, e.code, e.info);
    let o = ip_at(orig, l3);
    let tot = usize::from(o.total_len()).min(orig.len() - l3);
    let hl = ipv4::HEADER_LEN + e.options.len();
    let head = hl + icmp::HEADER_LEN;
    let quote = tot.min(mtu.min(576).saturating_sub(head));
    let (orig_src, orig_tos) = (o.src_addr(), o.tos());
    let mut f = Vec::with_capacity(l3 + head + quote);
    f.extend_from_slice(&orig[..l3]);
    set_macs(&mut f, dst_mac, src_mac);
    f.resize(l3 + ipv4::HEADER_LEN, 0);
    f.extend_from_slice(e.options);
    f.resize(l3 + head, 0);
    f.extend_from_slice(&orig[l3..l3 + quote]);
    let mut ip = ip_at_mut(&mut f, l3);
    ip.set_version(4);
    ip.set_header_len(hl as u8);
    ip.set_tos(if icmp::is_error_type(typ) { (orig_tos & 0x1E) | 0xC0 } else { orig_tos });
    ip.set_total_len((head + quote) as u16);
    ip.set_ident(e.ident);
    ip.set_ttl(64);
    ip.set_protocol(IPPROTO_ICMP);
    ip.set_src_addr(e.src);
    ip.set_dst_addr(orig_src);
    ip.fill_checksum();
    let mut icmp = Icmpv4Packet::new_unchecked(ip.payload_mut());
    icmp.set_msg_type(typ);
    icmp.set_msg_code(code);
    icmp.set_rest_of_header(info);
    icmp.fill_checksum();
    f
}

/// Rewrites an ICMP error that relates to a NAT connection
/// (`ip_vs_nat_icmp`): `inout == true` (real server → client): outer
/// source and embedded destination become the VIP, embedded destination
/// port the virtual port; `false` (client → real server): outer
/// destination and embedded source become the real server, embedded source
/// port the real port. Both IP header checksums are recomputed and the
/// ICMP checksum is recomputed over the whole message.
pub fn nat_icmp(frame: &mut [u8], l3: usize, inout: bool, addr: Ipv4Addr, port: u16) {
    let mut ip = ip_at_mut(frame, l3);
    if inout {
        ip.set_src_addr(addr);
    } else {
        ip.set_dst_addr(addr);
    }
    ip.fill_checksum();
    let mut icmp = Icmpv4Packet::new_unchecked(ip.payload_mut());
    let mut quoted = Ipv4Packet::new_unchecked(icmp.data_mut());
    if inout {
        quoted.set_dst_addr(addr);
    } else {
        quoted.set_src_addr(addr);
    }
    quoted.fill_checksum();
    let qproto = quoted.protocol();
    let qhl = quoted.header_len();
    // The quoted transport header: only its port is rewritten, its
    // checksum is left as quoted (as the kernel does).
    let quoted = quoted.into_inner();
    let port_end = qhl + if inout { 4 } else { 2 };
    if (qproto == IPPROTO_TCP || qproto == IPPROTO_UDP) && quoted.len() >= port_end {
        replace_transport_port(&mut quoted[qhl..], inout, port);
    }
    icmp.fill_checksum();
}

/// A gratuitous ARP request announcing that `vip` is at `our_mac`, as
/// Linux's `arp_send(ARPOP_REQUEST, ETH_P_ARP, vip, dev, vip, NULL,
/// dev_addr, NULL)`: Ethernet broadcast, sender = target = `vip`, target
/// hardware address zero, 42 bytes (untagged, not padded).
pub fn gratuitous_arp(our_mac: MacAddr, vip: Ipv4Addr) -> Vec<u8> {
    let eth = crate::wire::EthernetRepr { src: our_mac, dst: MacAddr::BROADCAST, vlan_tci: None, ethertype: 0 };
    let req = ArpRepr {
        operation: ArpOperation::Request,
        sender_mac: our_mac,
        sender_ip: vip,
        target_mac: MacAddr::ZERO,
        target_ip: vip,
    };
    crate::wire::build::arp_frame(&eth, &req)
}

/// The unsolicited Neighbour Advertisement announcing that the IPv6 `vip`
/// is at `our_mac`, as keepalived's `ndisc_send_unsolicited_na` builds it
/// (its IPv6 counterpart of a gratuitous ARP): to all nodes (ff02::1,
/// 33:33:00:00:00:01) from `vip`, hop limit 255, Override set, Router
/// set when `router` (keepalived: `get_ipv6_forwarding` of its interface,
/// the `forwarding` sysctl), the target link-layer address option; 86
/// bytes, untagged.
pub fn unsolicited_na(our_mac: MacAddr, vip: std::net::Ipv6Addr, router: bool) -> Vec<u8> {
    use crate::wire::icmpv6::{self, NeighbourAdvert, ALL_NODES, NA_OVERRIDE, NA_ROUTER};
    let flags = if router { NA_ROUTER | NA_OVERRIDE } else { NA_OVERRIDE };
    let na = NeighbourAdvert { flags, target: vip, tlla: Some(our_mac), src: vip, dst: ALL_NODES };
    icmpv6::na_frame(&[0; 14], icmpv6::multicast_mac(&ALL_NODES), our_mac, &na)
}

/// An ARP reply for `target_ip` (ours) to the request in `req` (whose ARP
/// payload starts at `l3`): Ethernet destination = the requester's
/// hardware address, source = `our_mac`, VLAN tag kept, 42 bytes untagged
/// (`arp_process` → `arp_send_dst`).
pub fn arp_reply(req: &[u8], l3: usize, our_mac: MacAddr, target_ip: Ipv4Addr) -> Vec<u8> {
    let r = ArpPacket::new_unchecked(&req[l3..]);
    let (sha, spa) = (r.sender_hardware_addr(), r.sender_protocol_addr());
    let mut f = Vec::with_capacity(l3 + arp::PACKET_LEN);
    f.extend_from_slice(&req[..l3]);
    set_macs(&mut f, sha, our_mac);
    f.resize(l3 + arp::PACKET_LEN, 0);
    let reply = ArpRepr {
        operation: ArpOperation::Reply,
        sender_mac: our_mac,
        sender_ip: target_ip,
        target_mac: sha,
        target_ip: spa,
    };
    // The buffer was sized for the packet: emit cannot fail.
    let _ = reply.emit(&mut ArpPacket::new_unchecked(&mut f[l3..]));
    f
}

// ---------------------------------------------------------------------------
// IPv6 (the AF_INET6 branches of the same transmitters)

/// The byte offset of the upper layer of the IPv6 packet at `frame[l3..]`
/// (the director hands only packets without extension headers).
const V6_L4: usize = crate::wire::ipv6::HEADER_LEN;

/// `ip_rcv`'s trim for IPv6 (`ipv6_rcv` → `pskb_trim_rcsum` to the
/// Payload Length + 40).
pub fn trim_to_ipv6(frame: &mut Vec<u8>, l3: usize) {
    let pl = usize::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]));
    frame.truncate(l3 + V6_L4 + pl);
}

/// `decrement_ttl` for AF_INET6: `ipv6_hdr(skb)->hop_limit--` (the caller
/// checked `hop_limit > 1`).
pub fn ipv6_decrease_hop_limit(frame: &mut [u8], l3: usize) {
    frame[l3 + 7] = frame[l3 + 7].wrapping_sub(1);
}

/// One IPv6 endpoint of a TCP or UDP packet rewritten as the IPVS NAT
/// handlers do for `cp->af == AF_INET6`: the address in the IPv6 header,
/// the port in the L4 header, and the L4 checksum updated incrementally
/// over the pseudo-header's changed address (eight 16-bit words) and the
/// port (`tcp_fast_csum_update` / `udp_fast_csum_update` with
/// `ip_vs_check_diff16`). UDP as in [`nat_rewrite`]: a non-zero checksum
/// is updated (a result of 0 stored as `0xFFFF`); a zero one is computed
/// in full. There is no IPv6 header checksum. `dst == true` rewrites the
/// destination. `(l4, proto)`: where the TCP/UDP header is in the frame
/// (after any extension headers) and which it is.
pub fn nat_rewrite6(frame: &mut [u8], l3: usize, (l4, proto): (usize, u8), dst: bool, new_addr: std::net::Ipv6Addr, new_port: u16) {
    use crate::wire::ipv6::Ipv6Packet;
    let mut ip = Ipv6Packet::new_unchecked(&mut frame[l3..]);
    let old_addr = if dst { ip.dst_addr() } else { ip.src_addr() };
    if dst {
        ip.set_dst_addr(new_addr);
    } else {
        ip.set_src_addr(new_addr);
    }
    let (src, daddr) = (ip.src_addr(), ip.dst_addr());
    let seg = &mut frame[l4..];
    let old_port = replace_transport_port(seg, dst, new_port);
    let delta = old_addr
        .segments()
        .iter()
        .zip(new_addr.segments().iter())
        .map(|(&o, &n)| checksum::delta16(o, n))
        .sum::<u32>()
        + checksum::delta16(old_port, new_port);
    if proto == IPPROTO_TCP {
        let mut tcp = TcpPacket::new_unchecked(seg);
        tcp.set_checksum(checksum::apply_delta(tcp.checksum(), delta));
    } else {
        let mut udp = UdpPacket::new_unchecked(&mut *seg);
        let check = udp.checksum();
        if check != 0 {
            udp.set_checksum(checksum::udp_finalize(checksum::apply_delta(check, delta)));
        } else {
            seg[6] = 0;
            seg[7] = 0;
            let sum = checksum::ones_sum(seg, checksum::pseudo_header_sum_v6(src, daddr, IPPROTO_UDP, seg.len() as u32));
            let c = checksum::udp_finalize(!checksum::fold(sum));
            seg[6..8].copy_from_slice(&c.to_be_bytes());
        }
    }
}

/// ip6ip6 encapsulation as `ip_vs_tunnel_xmit_v6` +
/// `ip_vs_prepare_tunneled_skb` build it (the inner hop limit already
/// decremented): a 40-byte outer header inserted after the Ethernet
/// header: version 6, traffic class = `INET_ECN_encapsulate` of the inner
/// one, flow label 0, payload length = inner Payload Length + 40, next
/// header 41 (`IPPROTO_IPV6`), hop limit = the inner hop limit, source
/// `src` (the director's address), destination `dst` (the real server).
pub fn ip6ip6_encap(frame: &mut Vec<u8>, l3: usize, src: std::net::Ipv6Addr, dst: std::net::Ipv6Addr) {
    use crate::wire::ipv6::Ipv6Packet;
    let inner = Ipv6Packet::new_unchecked(&frame[l3..]);
    let (tc, pl, hop) = (inner.traffic_class(), inner.payload_len(), inner.hop_limit());
    let mut h = [0u8; V6_L4];
    let mut outer = Ipv6Packet::new_unchecked(&mut h[..]);
    outer.set_version(6);
    outer.set_traffic_class(ecn_encapsulate(tc));
    outer.set_flow_label(0);
    outer.set_payload_len(pl.wrapping_add(V6_L4 as u16));
    outer.set_next_header(crate::wire::IpProtocol::from(41u8));
    outer.set_hop_limit(hop);
    outer.set_src_addr(src);
    outer.set_dst_addr(dst);
    frame.splice(l3..l3, h);
}

/// IPv6-in-IPv4 encapsulation (`ip_vs_tunnel_xmit` for an IPv6 packet,
/// `ip_vs_prepare_tunneled_skb` with `skb_af == AF_INET6`; the inner hop
/// limit already decremented): a 20-byte IPv4 header inserted after the
/// Ethernet header, whose EtherType becomes IPv4: version 4, IHL 5,
/// TOS = `INET_ECN_encapsulate` of the
/// inner traffic class, total length = 20 + 40 + inner Payload Length, ID
/// `ident`, DF clear, TTL = the inner hop limit, protocol 41, source
/// `src`, destination `dst`, header checksum.
pub fn ip6in4_encap(frame: &mut Vec<u8>, l3: usize, src: Ipv4Addr, dst: Ipv4Addr, ident: u16) {
    use crate::wire::ipv6::Ipv6Packet;
    let inner = Ipv6Packet::new_unchecked(&frame[l3..]);
    let (tc, pl, hop) = (inner.traffic_class(), inner.payload_len(), inner.hop_limit());
    let mut h = [0u8; ipv4::HEADER_LEN];
    let mut outer = Ipv4Packet::new_unchecked(&mut h[..]);
    outer.set_version(4);
    outer.set_header_len(ipv4::HEADER_LEN as u8);
    outer.set_tos(ecn_encapsulate(tc));
    outer.set_total_len(pl.wrapping_add((ipv4::HEADER_LEN + V6_L4) as u16));
    outer.set_ident(ident);
    outer.set_dont_frag(false);
    outer.set_ttl(hop);
    outer.set_protocol(41);
    outer.set_src_addr(src);
    outer.set_dst_addr(dst);
    outer.fill_checksum();
    frame.splice(l3..l3, h);
    // The frame now carries IPv4 (the EtherType just before the header,
    // after any 802.1Q tag).
    frame[l3 - 2..l3].copy_from_slice(&crate::wire::ETHERTYPE_IPV4.to_be_bytes());
}

/// `ip6_fragment` (slow path) of the IPv6 packet at `l3` in `frame`, which
/// has no extension headers, for a link of `mtu` bytes: fragments of
/// `(mtu - 40 - 8) & !7` data bytes (see [`ip6_fragment_pieces`]). Linux
/// draws `ident` in `ipv6_select_ident` (a keyed hash: random to any
/// observer). Returns the frames, the first first; `frame` is left as it
/// was.
pub fn ip6_fragment(frame: &[u8], l3: usize, mtu: usize, ident: u32) -> Vec<Vec<u8>> {
    let pl = usize::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]));
    let data = pl.min(frame.len() - l3 - V6_L4);
    ip6_fragment_pieces(frame, l3, V6_L4, &ip6_slow_pieces(data, mtu - V6_L4 - 8), ident)
}

/// The data lengths `ip6_fragment`'s slow path cuts `data` bytes into at
/// `space` bytes of room after the headers: the largest multiple of 8
/// that fits, the rest last.
pub fn ip6_slow_pieces(data: usize, space: usize) -> Vec<usize> {
    let chunk = (space & !7).max(8);
    let mut out = Vec::with_capacity(data / chunk + 1);
    let mut left = data;
    while left > 0 {
        let n = chunk.min(left);
        out.push(n);
        left -= n;
    }
    out
}

/// `ip6_find_1stfragopt`: the length of the unfragmentable part of the
/// IPv6 packet `pkt` (the fixed header, Hop-by-Hop, Routing, and
/// Destination Options before a Routing header), where the Fragment header
/// goes.
pub fn ip6_find_1stfragopt(pkt: &[u8]) -> usize {
    let mut offset = V6_L4;
    let mut next = pkt[6];
    let mut found_rhdr = false;
    loop {
        match next {
            0 => {}
            43 => found_rhdr = true,
            60 if !found_rhdr => {}
            _ => return offset,
        }
        let Some(h) = pkt.get(offset..offset + 2) else { return offset };
        let len = (usize::from(h[1]) + 1) * 8;
        if offset + len > pkt.len() {
            return offset;
        }
        next = h[0];
        offset += len;
    }
}

/// The IPv6 packet at `l3` in `frame` as `ip6_fragment` sends it in
/// fragments of `pieces` data bytes (summing to what follows the first
/// `hlen` bytes, the unfragmentable part): each fragment is the frame up
/// to that part (Payload Length adjusted, the Next Header that named the
/// first fragmentable header now 44), an 8-byte Fragment header (that
/// Next Header, reserved 0, offset and more-fragments flag,
/// identification `ident`), then its data.
pub fn ip6_fragment_pieces(frame: &[u8], l3: usize, hlen: usize, pieces: &[usize], ident: u32) -> Vec<Vec<u8>> {
    let pkt = &frame[l3..];
    // The Next Header byte naming the first fragmentable header.
    let mut nh_at = 6;
    let mut at = V6_L4;
    while at < hlen {
        nh_at = at;
        at += (usize::from(pkt[at + 1]) + 1) * 8;
    }
    let next = pkt[nh_at];
    let mut out = Vec::with_capacity(pieces.len());
    let mut off = 0;
    for (i, &n) in pieces.iter().enumerate() {
        let more = i + 1 < pieces.len();
        let mut f = frame[..l3 + hlen].to_vec();
        f[l3 + 4..l3 + 6].copy_from_slice(&((hlen - V6_L4 + 8 + n) as u16).to_be_bytes());
        f[l3 + nh_at] = 44;
        f.extend_from_slice(&[next, 0]);
        f.extend_from_slice(&((off as u16) | u16::from(more)).to_be_bytes());
        f.extend_from_slice(&ident.to_be_bytes());
        f.extend_from_slice(&pkt[hlen + off..hlen + off + n]);
        out.push(f);
        off += n;
    }
    out
}

/// IPv4-in-IPv6 encapsulation (`ip_vs_tunnel_xmit_v6` for an IPv4 packet,
/// `ip_vs_prepare_tunneled_skb` with `skb_af == AF_INET`; the inner TTL
/// already decremented): the inner header checksum recomputed
/// (`ip_send_check`), then a 40-byte IPv6 header inserted after the
/// Ethernet header, whose EtherType becomes IPv6: version 6, traffic class = `INET_ECN_encapsulate` of
/// the inner TOS, flow label 0, payload length = the inner total length,
/// next header 4 (`IPPROTO_IPIP`), hop limit = the inner TTL, source
/// `src`, destination `dst`.
pub fn ip4in6_encap(frame: &mut Vec<u8>, l3: usize, src: std::net::Ipv6Addr, dst: std::net::Ipv6Addr) {
    use crate::wire::ipv6::Ipv6Packet;
    let mut inner = ip_at_mut(frame, l3);
    inner.fill_checksum();
    let (tos, tot, ttl) = (inner.tos(), inner.total_len(), inner.ttl());
    let mut h = [0u8; V6_L4];
    let mut outer = Ipv6Packet::new_unchecked(&mut h[..]);
    outer.set_version(6);
    outer.set_traffic_class(ecn_encapsulate(tos));
    outer.set_flow_label(0);
    outer.set_payload_len(tot);
    outer.set_next_header(crate::wire::IpProtocol::from(IPPROTO_IPIP));
    outer.set_hop_limit(ttl);
    outer.set_src_addr(src);
    outer.set_dst_addr(dst);
    frame.splice(l3..l3, h);
    // The frame now carries IPv6 (the EtherType just before the header,
    // after any 802.1Q tag).
    frame[l3 - 2..l3].copy_from_slice(&crate::wire::ETHERTYPE_IPV6.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::wire::build::{tcp_frame, udp_frame};
    use crate::wire::{EthernetRepr, Ipv4Repr, TcpRepr, UdpRepr, ETHERTYPE_IPV4};

    fn frame(rng: &mut SplitMix64, udp: bool, ident: u16) -> Vec<u8> {
        let eth = EthernetRepr { src: MacAddr([2, 0, 0, 0, 0, 9]), dst: MacAddr([2, 0, 0, 0, 0, 1]), vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
        let ip = Ipv4Repr {
            src_addr: Ipv4Addr::from(rng.next_u64() as u32),
            dst_addr: Ipv4Addr::from(rng.next_u64() as u32),
            protocol: if udp { 17 } else { 6 },
            payload_len: 0,
            ttl: 2 + rng.below(254) as u8,
            tos: rng.next_u64() as u8,
            ident,
            dont_frag: rng.next_u64() & 1 == 0,
        };
        let (sp, dp) = (rng.next_u64() as u16, rng.next_u64() as u16);
        if udp {
            udp_frame(&eth, &ip, &UdpRepr { src_port: sp, dst_port: dp }, &[1, 2, 3])
        } else {
            tcp_frame(&eth, &ip, &TcpRepr { src_port: sp, dst_port: dp, seq_number: 1, ack_number: 2, flags: 0x10, window_len: 512 }, &[])
        }
    }

    /// `nat_rewrite` after `ip_decrease_ttl`, as the director runs them,
    /// checked against the full recomputation (`ip_send_check`) of the
    /// rewritten header: random headers, and the two boundaries of the
    /// one's-complement zero (a received checksum stored as `0xFFFF`, and a
    /// rewritten header whose checksum is `0x0000`).
    #[test]
    fn nat_header_checksum_is_the_recomputed_one() {
        let mut rng = SplitMix64::new(5);
        let check = |f: &[u8]| Ipv4Packet::new_unchecked(&f[14..]).checksum();
        let rewrite = |f: &mut Vec<u8>, dst: bool, addr: u32, port: u16| {
            ip_decrease_ttl(f, 14);
            nat_rewrite(f, 14, dst, Ipv4Addr::from(addr), port);
            let mut full = f.clone();
            ip_send_check(&mut full, 14);
            assert_eq!(*f, full);
        };
        let (mut minus_zero, mut zero_out) = (0, 0);
        for i in 0..50_000u32 {
            let udp = i % 2 == 0;
            let mut f = frame(&mut rng, udp, i as u16);
            if check(&f) == 0 {
                // The other representation of zero verifies as well.
                Ipv4Packet::new_unchecked(&mut f[14..]).set_checksum(0xFFFF);
                minus_zero += 1;
            }
            let addr = rng.next_u64() as u32;
            rewrite(&mut f, i % 4 < 2, addr, rng.next_u64() as u16);
            zero_out += usize::from(check(&f) == 0);
        }
        // Headers made to hit the boundaries: an ident whose checksum is
        // zero (stored as 0xFFFF), and a new address making the result zero.
        let base = frame(&mut rng, false, 0);
        let ident = (0..=u16::MAX)
            .find(|&id| {
                let mut f = base.clone();
                let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
                ip.set_ident(id);
                ip.fill_checksum();
                ip.checksum() == 0
            })
            .unwrap();
        let mut f = base.clone();
        let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
        ip.set_ident(ident);
        ip.set_checksum(0xFFFF);
        rewrite(&mut f, true, 0x0a00_0001, 80);
        minus_zero += 1;
        for lo in 0..=u16::MAX {
            let mut f = base.clone();
            rewrite(&mut f, true, 0x0a00_0000 | u32::from(lo), 80);
            if check(&f) == 0 {
                zero_out += 1;
                break;
            }
        }
        assert!(minus_zero >= 1 && zero_out >= 1, "{minus_zero} {zero_out}");
    }
}
