//! Packet transforms of the IPVS transmitters (`net/netfilter/ipvs/ip_vs_xmit.c`,
//! the protocol handlers in `ip_vs_proto_{tcp,udp}.c`) and of the IPv4
//! paths they use (`ip_decrease_ttl`, `ip_fragment`, `icmp_send`).
//!
//! Every function works on a whole Ethernet frame in a `Vec<u8>` with the
//! offset of its IPv4 header (`l3`), rewrites in place, and never panics on
//! the frames the director hands it (it only hands parsed, length-checked
//! frames). Checksum arithmetic is the kernel's: RFC 1624 incremental
//! updates for TCP/UDP (`tcp_fast_csum_update`), full recomputation of the
//! IPv4 header checksum (`ip_send_check`).

use crate::wire::checksum;
use crate::wire::{MacAddr, IPPROTO_ICMP, IPPROTO_IPIP, IPPROTO_TCP, IPPROTO_UDP};
use std::net::Ipv4Addr;

#[inline]
pub(crate) fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
#[inline]
fn wr16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_be_bytes());
}
#[inline]
fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
#[inline]
fn wr32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_be_bytes());
}

// IPv4 header field offsets (RFC 791).
const IP_TOS: usize = 1;
const IP_TOTLEN: usize = 2;
const IP_ID: usize = 4;
const IP_FRAG: usize = 6;
const IP_TTL: usize = 8;
const IP_PROTO: usize = 9;
const IP_CSUM: usize = 10;
const IP_SRC: usize = 12;
const IP_DST: usize = 16;
/// Don't Fragment bit of the flags/offset word.
pub const IP_DF: u16 = 0x4000;
/// More Fragments bit.
pub const IP_MF: u16 = 0x2000;
/// Fragment offset mask.
pub const IP_OFFSET: u16 = 0x1FFF;

/// IPv4 header length in bytes.
#[inline]
pub fn ihl(frame: &[u8], l3: usize) -> usize {
    ((frame[l3] & 0x0f) as usize) * 4
}

/// `ip_send_check`: recompute the IPv4 header checksum.
#[inline]
pub fn ip_send_check(frame: &mut [u8], l3: usize) {
    let hl = ihl(frame, l3);
    wr16(frame, l3 + IP_CSUM, 0);
    let c = if hl == 20 {
        // The common option-less header: ten words, summed as five u32.
        let h: &[u8; 20] = frame[l3..l3 + 20].try_into().unwrap_or(&[0; 20]);
        let mut acc: u64 = 0;
        for i in 0..5 {
            acc += u32::from_be_bytes([h[4 * i], h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]]) as u64;
        }
        acc = (acc & 0xffff_ffff) + (acc >> 32);
        acc = (acc & 0xffff) + (acc >> 16);
        acc = (acc & 0xffff) + (acc >> 16);
        acc = (acc & 0xffff) + (acc >> 16);
        !(acc as u16)
    } else {
        checksum::checksum(&frame[l3..l3 + hl])
    };
    wr16(frame, l3 + IP_CSUM, c);
}

/// `ip_decrease_ttl` (include/net/ip.h): TTL - 1 with the RFC 1141 style
/// incremental header checksum fix the kernel uses.
#[inline]
pub fn ip_decrease_ttl(frame: &mut [u8], l3: usize) {
    let mut check = rd16(frame, l3 + IP_CSUM) as u32;
    check += 0x0100;
    let check = (check + (check >= 0xFFFF) as u32) as u16;
    wr16(frame, l3 + IP_CSUM, check);
    frame[l3 + IP_TTL] = frame[l3 + IP_TTL].wrapping_sub(1);
}

/// Sets the Ethernet addresses.
#[inline]
pub fn set_macs(frame: &mut [u8], dst: MacAddr, src: MacAddr) {
    frame[0..6].copy_from_slice(&dst.0);
    frame[6..12].copy_from_slice(&src.0);
}

/// Drops Ethernet padding (and anything else) after the IPv4 packet, as
/// `ip_rcv` trims the skb to the IP total length.
#[inline]
pub fn trim_to_ip(frame: &mut Vec<u8>, l3: usize) {
    let tot = rd16(frame, l3 + IP_TOTLEN) as usize;
    frame.truncate(l3 + tot);
}

/// The TCP/UDP checksum offset within the L4 header, or None for other
/// protocols.
fn l4_csum_off(proto: u8) -> Option<usize> {
    match proto {
        IPPROTO_TCP => Some(16),
        IPPROTO_UDP => Some(6),
        _ => None,
    }
}

/// Full TCP/UDP checksum over the L4 segment (pseudo-header included).
fn l4_full_checksum(frame: &[u8], l3: usize, l4: usize, proto: u8, csum_off: usize) -> u16 {
    let tot = rd16(frame, l3 + IP_TOTLEN) as usize;
    let end = (l3 + tot).min(frame.len());
    let src = Ipv4Addr::from(rd32(frame, l3 + IP_SRC));
    let dst = Ipv4Addr::from(rd32(frame, l3 + IP_DST));
    let len = (end - l4) as u16;
    let mut sum = checksum::pseudo_header_sum(src, dst, proto, len);
    sum = checksum::ones_sum(&frame[l4..l4 + csum_off], sum);
    sum = checksum::ones_sum(&frame[l4 + csum_off + 2..end], sum);
    !checksum::fold(sum)
}

/// Rewrites one endpoint (address in the IPv4 header, port in the L4
/// header) of a TCP or UDP packet, as the IPVS NAT handlers do:
/// `tcp_dnat_handler`/`tcp_snat_handler` (incremental TCP checksum,
/// `tcp_fast_csum_update`), `udp_*nat_handler` (incremental when the UDP
/// checksum is non-zero, with 0 stored as 0xFFFF; full recomputation when it
/// is 0), then `ip_send_check`. `dst == true` rewrites the destination.
///
/// The L4 header must be present (the director checked); fragments other
/// than the first carry no L4 header and only get the address rewrite.
pub fn nat_rewrite(frame: &mut [u8], l3: usize, dst: bool, new_addr: Ipv4Addr, new_port: u16) {
    let hl = ihl(frame, l3);
    let l4 = l3 + hl;
    let proto = frame[l3 + IP_PROTO];
    let addr_off = l3 + if dst { IP_DST } else { IP_SRC };
    let port_off = l4 + if dst { 2 } else { 0 };
    let old_addr = rd32(frame, addr_off);
    let new_a = u32::from(new_addr);
    let frag_off = rd16(frame, l3 + IP_FRAG) & IP_OFFSET;
    if frag_off == 0 {
        if let Some(co) = l4_csum_off(proto) {
            if frame.len() >= l4 + co + 2 {
                let old_port = rd16(frame, port_off);
                wr16(frame, port_off, new_port);
                let check = rd16(frame, l4 + co);
                let delta = checksum::delta32(old_addr, new_a) + checksum::delta16(old_port, new_port);
                if proto == IPPROTO_TCP {
                    wr16(frame, l4 + co, checksum::apply_delta(check, delta));
                } else if check != 0 {
                    wr16(frame, l4 + co, checksum::udp_finalize(checksum::apply_delta(check, delta)));
                } else {
                    // udp_*nat_handler: a zero checksum gets a full one.
                    wr32(frame, addr_off, new_a);
                    let c = l4_full_checksum(frame, l3, l4, proto, co);
                    wr16(frame, l4 + co, checksum::udp_finalize(c));
                }
            }
        }
    }
    wr32(frame, addr_off, new_a);
    ip_send_check(frame, l3);
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
    ip_send_check(frame, l3);
    let inner_len = rd16(frame, l3 + IP_TOTLEN);
    let df = if pmtu_disc { rd16(frame, l3 + IP_FRAG) & IP_DF } else { 0 };
    let tos = ecn_encapsulate(frame[l3 + IP_TOS]);
    let ttl = frame[l3 + IP_TTL];
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[IP_TOS] = tos;
    wr16(&mut h, IP_TOTLEN, inner_len.wrapping_add(20));
    wr16(&mut h, IP_ID, if df != 0 { 0 } else { outer_id });
    wr16(&mut h, IP_FRAG, df);
    h[IP_TTL] = ttl;
    h[IP_PROTO] = IPPROTO_IPIP;
    wr32(&mut h, IP_SRC, u32::from(src));
    wr32(&mut h, IP_DST, u32::from(dst));
    let c = checksum::checksum(&h);
    wr16(&mut h, IP_CSUM, c);
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

/// `ip_do_fragment` (slow path): splits an IPv4 packet larger than `mtu`
/// into fragments of at most `mtu` bytes, each with a copy of the Ethernet
/// header. Fragment data sizes are multiples of 8 except the last; the ID,
/// DF and the original offset/MF are kept; options are copied in full into
/// the first fragment only.
pub fn fragment(frame: &[u8], l3: usize, mtu: usize) -> Vec<Vec<u8>> {
    let df = rd16(frame, l3 + IP_FRAG) & IP_DF != 0;
    fragment_slow(frame, l3, mtu, df)
}

/// [`fragment`] with DF in every fragment given by `df` (`ip_frag_init`'s
/// `DF`: the `IPSKB_FRAG_PMTU` flag of a reassembled packet).
pub fn fragment_slow(frame: &[u8], l3: usize, mtu: usize, df: bool) -> Vec<Vec<u8>> {
    let hl = ihl(frame, l3);
    let tot = rd16(frame, l3 + IP_TOTLEN) as usize;
    let frag_word = rd16(frame, l3 + IP_FRAG);
    let df = if df { IP_DF } else { 0 };
    let not_last = frag_word & IP_MF != 0;
    let mut offset = ((frag_word & IP_OFFSET) as usize) << 3;
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
        let mut f = Vec::with_capacity(l3 + hl + len);
        f.extend_from_slice(&header);
        f.extend_from_slice(&frame[ptr..ptr + len]);
        let mut w = ((offset >> 3) as u16) | df;
        if left - len > 0 || not_last {
            w |= IP_MF;
        }
        wr16(&mut f, l3 + IP_FRAG, w);
        wr16(&mut f, l3 + IP_TOTLEN, (hl + len) as u16);
        ip_send_check(&mut f, l3);
        out.push(f);
        if first {
            options_fragment(&mut header[l3 + 20..l3 + hl]);
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
    let hl = ihl(frame, l3);
    let mut header: Vec<u8> = frame[..l3 + hl].to_vec();
    let mut out = Vec::with_capacity(pieces.len());
    let mut ptr = l3 + hl;
    let mut offset = 0usize;
    for (i, &len) in pieces.iter().enumerate() {
        let mut f = Vec::with_capacity(l3 + hl + len);
        f.extend_from_slice(&header);
        f.extend_from_slice(&frame[ptr..ptr + len]);
        let mut w = (offset >> 3) as u16;
        if i + 1 < pieces.len() {
            w |= IP_MF;
        }
        wr16(&mut f, l3 + IP_FRAG, w);
        wr16(&mut f, l3 + IP_TOTLEN, (hl + len) as u16);
        ip_send_check(&mut f, l3);
        out.push(f);
        if i == 0 {
            options_fragment(&mut header[l3 + 20..l3 + hl]);
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

/// ICMP types that are errors (`icmp_pointers[].error`).
pub fn icmp_type_is_error(t: u8) -> bool {
    matches!(t, 3 | 4 | 5 | 11 | 12)
}

/// Builds the frame `icmp_send` would transmit in reply to the IPv4 packet
/// at `orig[l3..]`: an IPv4 header (TOS `(orig_tos & 0x1E) | 0xC0` for
/// errors, ID `ident`, no DF, TTL 64, protocol 1, source `src`, destination
/// the original source), the ICMP header (`typ`, `code`, the 32-bit `info`
/// word, checksum over the whole message) and as much of the original IP
/// packet as fits in 576 bytes (RFC 1812 4.3.2.3; `icmp_send` caps at 576).
/// The Ethernet header (with the original VLAN tag) is `dst_mac`/`src_mac`.
#[allow(clippy::too_many_arguments)]
pub fn icmp_error_frame(
    orig: &[u8],
    l3: usize,
    typ: u8,
    code: u8,
    info: u32,
    src: Ipv4Addr,
    ident: u16,
    dst_mac: MacAddr,
    src_mac: MacAddr,
    mtu: usize,
) -> Vec<u8> {
    let tot = (rd16(orig, l3 + IP_TOTLEN) as usize).min(orig.len() - l3);
    let room = mtu.min(576) - 20 - 8;
    let quote = tot.min(room);
    let orig_src = rd32(orig, l3 + IP_SRC);
    let orig_tos = orig[l3 + IP_TOS];
    let mut f = Vec::with_capacity(l3 + 28 + quote);
    f.extend_from_slice(&orig[..l3]);
    set_macs(&mut f, dst_mac, src_mac);
    let ip = f.len();
    f.resize(ip + 28, 0);
    f[ip] = 0x45;
    f[ip + IP_TOS] = if icmp_type_is_error(typ) { (orig_tos & 0x1E) | 0xC0 } else { orig_tos };
    wr16(&mut f, ip + IP_TOTLEN, (28 + quote) as u16);
    wr16(&mut f, ip + IP_ID, ident);
    f[ip + IP_TTL] = 64;
    f[ip + IP_PROTO] = IPPROTO_ICMP;
    wr32(&mut f, ip + IP_SRC, u32::from(src));
    wr32(&mut f, ip + IP_DST, orig_src);
    ip_send_check(&mut f, ip);
    let ic = ip + 20;
    f[ic] = typ;
    f[ic + 1] = code;
    wr32(&mut f, ic + 4, info);
    f.extend_from_slice(&orig[l3..l3 + quote]);
    let c = checksum::checksum(&f[ic..]);
    wr16(&mut f, ic + 2, c);
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
    let hl = ihl(frame, l3);
    let ic = l3 + hl;
    let cl3 = ic + 8;
    let a = u32::from(addr);
    if inout {
        wr32(frame, l3 + IP_SRC, a);
        ip_send_check(frame, l3);
        wr32(frame, cl3 + IP_DST, a);
    } else {
        wr32(frame, l3 + IP_DST, a);
        ip_send_check(frame, l3);
        wr32(frame, cl3 + IP_SRC, a);
    }
    let chl = ihl(frame, cl3);
    ip_send_check(frame, cl3);
    let cproto = frame[cl3 + IP_PROTO];
    if cproto == IPPROTO_TCP || cproto == IPPROTO_UDP {
        let p = cl3 + chl + if inout { 2 } else { 0 };
        if frame.len() >= p + 2 {
            wr16(frame, p, port);
        }
    }
    let tot = rd16(frame, l3 + IP_TOTLEN) as usize;
    let end = (l3 + tot).min(frame.len());
    wr16(frame, ic + 2, 0);
    let c = checksum::checksum(&frame[ic..end]);
    wr16(frame, ic + 2, c);
}

/// An ARP reply for `target_ip` (ours) to the request in `req` (whose ARP
/// payload starts at `l3`): Ethernet destination = the requester's
/// hardware address, source = `our_mac`, VLAN tag kept, 42 bytes untagged
/// (`arp_process` → `arp_send_dst`).
pub fn arp_reply(req: &[u8], l3: usize, our_mac: MacAddr, target_ip: Ipv4Addr) -> Vec<u8> {
    let sha: [u8; 6] = req[l3 + 8..l3 + 14].try_into().unwrap_or([0; 6]);
    let spa: [u8; 4] = req[l3 + 14..l3 + 18].try_into().unwrap_or([0; 4]);
    let mut f = Vec::with_capacity(l3 + 28);
    f.extend_from_slice(&req[..l3]);
    set_macs(&mut f, MacAddr(sha), our_mac);
    let a = f.len();
    f.resize(a + 28, 0);
    wr16(&mut f, a, 1); // htype Ethernet
    wr16(&mut f, a + 2, 0x0800);
    f[a + 4] = 6;
    f[a + 5] = 4;
    wr16(&mut f, a + 6, 2); // reply
    f[a + 8..a + 14].copy_from_slice(&our_mac.0);
    f[a + 14..a + 18].copy_from_slice(&target_ip.octets());
    f[a + 18..a + 24].copy_from_slice(&sha);
    f[a + 24..a + 28].copy_from_slice(&spa);
    f
}
