//! IPv6 fragments through the director, whole frames byte for byte:
//! `nf_defrag_ipv6` reassembles them before IPVS, the datagram is
//! forwarded whole (NAT, DR, ip6ip6) and `ip6_fragment` cuts it again at
//! its largest fragment's size: in the pieces it came in when they fit
//! (frag-list fast path), else in the largest multiples of 8 (slow path),
//! as the kernel did in the conformance VM (matrix group g6-frag6). The
//! expected fragments are cut here by hand from the expected whole packet;
//! only the identification is taken from the output (Linux draws it at
//! random), and must be the same in every fragment.

use super::v6_xmit_tests::{a, director, frame, ip6, tcp, udp, DIR, GW, RS1, RS2, RS3, T0};
use super::{Action, Director, DropReason};
use crate::time::SEC;
use std::net::Ipv6Addr;

/// The Ethernet frames of an IPv6 packet whose fixed header is followed
/// by `upper` (next header `nh`), cut into fragments of `pieces` data bytes
/// (the last takes the rest) with identification `id`.
#[allow(clippy::too_many_arguments)]
fn fragments(dst: [u8; 6], src: [u8; 6], hop: u8, s: Ipv6Addr, d: Ipv6Addr, nh: u8, upper: &[u8], pieces: &[usize], id: u32) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut off = 0;
    for (i, &n) in pieces.iter().chain(std::iter::once(&usize::MAX)).enumerate() {
        let last = i == pieces.len();
        let data = if last { &upper[off..] } else { &upper[off..off + n] };
        let mut fh = vec![nh, 0];
        fh.extend_from_slice(&((off as u16) | u16::from(!last)).to_be_bytes());
        fh.extend_from_slice(&id.to_be_bytes());
        fh.extend_from_slice(data);
        out.push(frame(dst, src, 0, 0, 44, hop, s, d, &fh));
        off += data.len();
    }
    out
}

/// Offers `frames` in order; every one but the last must be held, the last
/// transmitted: returns what it sent (first frame first).
fn send_all(d: &mut Director, ts: u64, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let (last, held) = frames.split_last().unwrap();
    for f in held {
        assert_eq!(d.process(ts, &mut f.clone(), &mut Vec::new()), Action::Held);
    }
    let (mut f, mut extra) = (last.clone(), Vec::new());
    assert_eq!(d.process(ts, &mut f, &mut extra), Action::Transmit);
    std::iter::once(f).chain(extra).collect()
}

/// The identification of the fragment frame `f` (Fragment header right
/// after the fixed header).
fn ident(f: &[u8]) -> u32 {
    assert_eq!(f[14 + 6], 44, "a fragment");
    u32::from_be_bytes([f[58], f[59], f[60], f[61]])
}

fn body(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| seed.wrapping_add((i * 7) as u8)).collect()
}

#[test]
fn nat_tcp_fragments_out_of_order_leave_in_their_pieces() {
    let mut d = director();
    let (client, vip, rs) = (a("2001:db8:ff::5"), a("2001:db8::10"), a("2001:db8:1::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40000, 80, 1000, 0, 0x02, b""));
    assert_eq!(d.process(T0, &mut syn.clone(), &mut Vec::new()), Action::Transmit);
    // 1820 bytes of TCP in 1232 + 588, the second first.
    let data = body(1800, 1);
    let mut frags = fragments(DIR, GW, 64, client, vip, 6, &tcp(client, vip, 40000, 80, 1001, 1, 0x18, &data), &[1232], 0x1001);
    frags.reverse();
    let out = send_all(&mut d, T0 + SEC, &frags);
    let id = ident(&out[0]);
    let want = fragments(RS1, DIR, 63, client, rs, 6, &tcp(client, rs, 40000, 8080, 1001, 1, 0x18, &data), &[1232], id);
    assert_eq!(out, want);
    assert_eq!((d.counters.reasm.held, d.counters.reasm.reassembled), (1, 1));
    assert!(d.defrag6.is_empty() && d.defrag6.memory_bytes() == 0);
    // The service counts the datagram once, at its reassembled size.
    let svc = d.services.find_addr(6, vip.into(), 80).unwrap();
    let st = d.services.service(svc).stats;
    assert_eq!((st.inpkts, st.inbytes), (2, 60 + 40 + 1820));
}

#[test]
fn nat_reply_fragments_are_reassembled_rewritten_and_cut_again() {
    let mut d = director();
    let (client, vip, rs) = (a("2001:db8:ff::9"), a("2001:db8::10"), a("2001:db8:1::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    assert_eq!(d.process(T0, &mut syn.clone(), &mut Vec::new()), Action::Transmit);
    let data = body(2500, 3);
    let frags = fragments(DIR, RS1, 64, rs, client, 6, &tcp(rs, client, 8080, 40001, 9, 2, 0x12, &data), &[1232, 1232], 0x2001);
    let out = send_all(&mut d, T0 + SEC, &frags);
    let want = fragments(GW, DIR, 63, vip, client, 6, &tcp(vip, client, 80, 40001, 9, 2, 0x12, &data), &[1232, 1232], ident(&out[0]));
    assert_eq!(out, want);
}

#[test]
fn dr_unequal_fragments_keep_their_geometry() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::6"), a("2001:db8::10"));
    let seg = tcp(client, vip, 50000, 443, 1, 0, 0x02, &body(1900, 5));
    let frags = fragments(DIR, GW, 64, client, vip, 6, &seg, &[512, 1232], 0x1004);
    let out = send_all(&mut d, T0, &frags);
    assert_eq!(out, fragments(RS2, DIR, 63, client, vip, 6, &seg, &[512, 1232], ident(&out[0])));
}

/// The ip6ip6 fragments of `inner` (an IPv6 packet) from the director's
/// `ip6` to the third real server, cut into `pieces` (then the rest).
fn tunnelled(inner: &[u8], pieces: &[usize], id: u32) -> Vec<Vec<u8>> {
    fragments(RS3, DIR, 63, a("2001:db8::1"), a("2001:db8:1::3"), 41, inner, pieces, id)
}

#[test]
fn ip6ip6_fast_path_when_the_first_piece_still_fits_else_slow_path() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::7"), a("2001:db8::10"));
    // 1000 + 316: with the inner header the first piece is 1040, within
    // the 1232 bytes a 1280-byte fragment holds (frag_max_size 1048 is
    // raised to 1280): the pieces are kept.
    let seg = udp(client, vip, 5353, 53, &body(1308, 7));
    let out = send_all(&mut d, T0, &fragments(DIR, GW, 64, client, vip, 17, &seg, &[1000], 0x1003));
    let mut inner = ip6(0, 0, seg.len(), 17, 63, client, vip);
    inner.extend_from_slice(&seg);
    assert_eq!(out, tunnelled(&inner, &[1040], ident(&out[0])));
    // 1232 + 596: the first piece would be 1272: cut anew at 1232.
    let seg = udp(client, vip, 5354, 53, &body(1820, 8));
    let out = send_all(&mut d, T0 + SEC, &fragments(DIR, GW, 64, client, vip, 17, &seg, &[1232], 0x1005));
    let mut inner = ip6(0, 0, seg.len(), 17, 63, client, vip);
    inner.extend_from_slice(&seg);
    assert_eq!(out, tunnelled(&inner, &[1232], ident(&out[0])));
    assert_ne!(ident(&out[0]), 0x1005);
}

#[test]
fn ip6ip6_largest_fragment_over_the_tunnel_mtu_is_too_big() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::8"), a("2001:db8::10"));
    let seg = udp(client, vip, 5355, 53, &body(2000, 9));
    let frags = fragments(DIR, GW, 64, client, vip, 17, &seg, &[1448], 0x1007);
    let out = send_all(&mut d, T0, &frags);
    // ICMPv6 packet too big, MTU 1460 (1500 less the tunnel's 40), to the
    // client, quoting the reassembled datagram.
    assert_eq!(out.len(), 1);
    let f = &out[0];
    assert_eq!((f[14 + 6], f[54], &f[58..62]), (58, 2, &1460u32.to_be_bytes()[..]));
    assert_eq!(d.counters.drop[DropReason::FragNeeded as usize], 1);
}

#[test]
fn duplicates_overlaps_truncated_and_unaligned_fragments() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::a"), a("2001:db8::10"));
    let seg = tcp(client, vip, 50001, 443, 1, 0, 0x02, &body(2000, 11));
    let f = fragments(DIR, GW, 64, client, vip, 6, &seg, &[1232], 0x2000);
    // A duplicate is dropped alone; the datagram still completes.
    assert_eq!(d.process(T0, &mut f[0].clone(), &mut Vec::new()), Action::Held);
    assert_eq!(d.process(T0, &mut f[0].clone(), &mut Vec::new()), Action::Drop(DropReason::Reassembly));
    let out = send_all(&mut d, T0, &f[1..]);
    assert_eq!(out, fragments(RS2, DIR, 63, client, vip, 6, &seg, &[1232], ident(&out[0])));
    assert_eq!(d.counters.reasm.duplicates, 1);
    // An overlap drops the queue: the last fragment then starts a new one.
    let f = fragments(DIR, GW, 64, client, vip, 6, &seg, &[1232], 0x2001);
    let mut overlap = fragments(DIR, GW, 64, client, vip, 6, &seg[1224..], &[], 0x2001).remove(0);
    overlap[14 + 40 + 2..14 + 40 + 4].copy_from_slice(&1224u16.to_be_bytes());
    assert_eq!(d.process(T0, &mut f[0].clone(), &mut Vec::new()), Action::Held);
    assert_eq!(d.process(T0, &mut overlap, &mut Vec::new()), Action::Drop(DropReason::Reassembly));
    assert_eq!(d.counters.reasm.overlaps, 1);
    assert!(d.defrag6.is_empty());
    assert_eq!(d.process(T0, &mut f[1].clone(), &mut Vec::new()), Action::Held);
    assert_eq!(d.defrag6.len(), 1);
    // A first fragment without the whole TCP header is not reassembled
    // (`ipv6frag_thdr_truncated`), nor a non-last fragment whose end is not
    // a multiple of 8: both go on as they are (to the host stack here).
    let f = fragments(DIR, GW, 64, client, vip, 6, &seg, &[8], 0x2002);
    assert!(matches!(d.process(T0, &mut f[0].clone(), &mut Vec::new()), Action::ToHost(_)));
    let f = fragments(DIR, GW, 64, client, vip, 6, &seg, &[1230], 0x2003);
    assert!(matches!(d.process(T0, &mut f[0].clone(), &mut Vec::new()), Action::ToHost(_)));
    // A queue never completed is dropped 60 s after its first fragment.
    d.advance(T0 + 59 * SEC);
    assert_eq!((d.defrag6.len(), d.counters.reasm.timeouts), (1, 0));
    d.advance(T0 + 60 * SEC);
    assert_eq!((d.defrag6.len(), d.defrag6.memory_bytes(), d.counters.reasm.timeouts), (0, 0, 1));
}

#[test]
fn no_fragment_is_taken_above_the_memory_threshold() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::b"), a("2001:db8::10"));
    let seg = tcp(client, vip, 50002, 443, 1, 0, 0x02, &body(2000, 12));
    let mut n = 0u32;
    while d.defrag6.memory_bytes() <= crate::defrag6::HIGH_THRESH6 {
        let f = fragments(DIR, GW, 64, client, vip, 6, &seg, &[1232], n).remove(0);
        assert_eq!(d.process(T0, &mut f.clone(), &mut Vec::new()), Action::Held);
        n += 1;
    }
    let f = fragments(DIR, GW, 64, client, vip, 6, &seg, &[1232], n).remove(0);
    assert_eq!(d.process(T0, &mut f.clone(), &mut Vec::new()), Action::Drop(DropReason::Reassembly));
    assert_eq!(d.counters.reasm.no_memory, 1);
    d.advance(T0 + 60 * SEC);
    assert_eq!(d.defrag6.memory_bytes(), 0);
}

#[test]
fn ah_before_tcp_is_carried_and_the_tcp_header_rewritten() {
    let mut d = director();
    let (client, vip, rs) = (a("2001:db8:ff::c"), a("2001:db8::10"), a("2001:db8:1::1"));
    let ah = |nh: u8| {
        let mut h = vec![nh, 4, 0, 0, 0, 0, 1, 0x99, 0, 0, 0, 1];
        h.extend_from_slice(&[0xab; 12]);
        h
    };
    let mut upper = ah(6);
    upper.extend_from_slice(&tcp(client, vip, 40009, 80, 5, 0, 0x02, b""));
    let syn = frame(DIR, GW, 0, 0, 51, 64, client, vip, &upper);
    let mut want = ah(6);
    want.extend_from_slice(&tcp(client, rs, 40009, 8080, 5, 0, 0x02, b""));
    let (mut f, mut extra) = (syn, Vec::new());
    assert_eq!(d.process(T0, &mut f, &mut extra), Action::Transmit);
    assert_eq!(f, frame(RS1, DIR, 0, 0, 51, 63, client, rs, &want));
}

#[test]
fn an_unknown_next_header_goes_to_the_host_stack() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::d"), a("2001:db8::10"));
    let f = frame(DIR, GW, 0, 0, 253, 64, client, vip, &body(16, 1));
    assert!(matches!(d.process(T0, &mut f.clone(), &mut Vec::new()), Action::ToHost(_)));
}
