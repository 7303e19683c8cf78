//! IPv4 fragments, on every backend: reassembled before IPVS as Linux does
//! (`ip_local_deliver` for the VIPs, `ip_vs_gather_frags` for NAT replies),
//! scheduled and rewritten whole, then fragmented again on output
//! (`ip_do_fragment`: cut anew at the smaller of the MTU and the largest
//! fragment after local delivery, the arriving pieces kept, DF cleared, for
//! gathered replies). Expected frames are built here from the whole
//! datagram (`lvsnic_tests::expect`) and cut by this file's own splitter.

use lvsnic_model::time::SEC;
use lvsnic_tests::*;
use std::net::Ipv4Addr;

const UDP_NAT: &str = "-A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.1:5353 -m -w 1\n";
const UDP_TUN: &str = "-A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.2:53 -i -w 1\n";

fn client() -> Ipv4Addr {
    Ipv4Addr::new(198, 51, 100, 9)
}

/// The IPv4 header checksum of `h` (its checksum field zeroed first).
fn ip_csum(h: &mut [u8]) {
    h[10] = 0;
    h[11] = 0;
    let mut s: u32 = h.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    h[10..12].copy_from_slice(&(!(s as u16)).to_be_bytes());
}

/// Cuts the unfragmented IPv4 packet in `frame` (14-byte Ethernet header,
/// 20-byte IP header) into fragments carrying `sizes` bytes of its data each.
fn split(frame: &[u8], sizes: &[usize], df: bool) -> Vec<Vec<u8>> {
    assert_eq!(frame[14], 0x45);
    let data = &frame[34..];
    assert_eq!(sizes.iter().sum::<usize>(), data.len(), "sizes cover the data");
    let mut out = Vec::new();
    let mut off = 0;
    for (i, &n) in sizes.iter().enumerate() {
        let mut f = frame[..34].to_vec();
        f.extend_from_slice(&data[off..off + n]);
        f[16..18].copy_from_slice(&((20 + n) as u16).to_be_bytes());
        let mut fo = (off / 8) as u16;
        if i + 1 < sizes.len() {
            fo |= 0x2000;
        }
        if df {
            fo |= 0x4000;
        }
        f[20..22].copy_from_slice(&fo.to_be_bytes());
        ip_csum(&mut f[14..34]);
        out.push(f);
        off += n;
    }
    out
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

/// A 3000-byte UDP datagram (2972 bytes of data) from the client to VIP:53.
fn big_query(ident: u16, df: bool) -> Vec<u8> {
    let ip = Ip { ident, df, ..Ip::new(client(), VIP) };
    udp(GATEWAY_MAC, DIRECTOR_MAC, ip, 40000, 53, &payload(2972), false)
}

#[test]
fn fragmented_request_is_reassembled_scheduled_and_cut_again() {
    let whole = big_query(0x4242, false);
    let frags = split(&whole, &[1480, 1480, 20], false);
    let want = split(&expect::nat_request(&whole, rs(1), 5353, rs_mac(1)), &[1480, 1480, 20], false);
    for b in 0..BACKENDS {
        let mut d = dut(b, UDP_NAT, "");
        // Out of order: the datagram leaves when its last piece arrives.
        assert_eq!(d.feed(T0, &frags[1]), Out::Drop, "{}", d.name);
        assert_eq!(d.feed(T0 + 10, &frags[2]), Out::Drop, "{}", d.name);
        assert_eq!(d.feed(T0 + 20, &frags[0]), Out::Tx(want.clone()), "{}", d.name);
        d.settle();
        let svc = d.services.live_services().next().unwrap();
        assert_eq!((svc.stats.conns, svc.stats.inpkts, svc.stats.inbytes), (1, 1, 3000), "{}", d.name);
        assert_eq!((d.counters.reasm.held, d.counters.reasm.reassembled), (2, 1));
        assert!(d.defrag.is_empty());
    }
}

#[test]
fn small_fragments_are_cut_at_the_largest_fragment_size() {
    // 576-byte fragments (556 bytes of data is not a multiple of 8: 552).
    let whole = big_query(0x4343, false);
    let sizes = [552, 552, 552, 552, 552, 220];
    let frags = split(&whole, &sizes, false);
    let want = split(&expect::nat_request(&whole, rs(1), 5353, rs_mac(1)), &sizes, false);
    for b in 0..BACKENDS {
        let mut d = dut(b, UDP_NAT, "");
        let mut out = Out::Drop;
        for (i, f) in frags.iter().enumerate() {
            out = d.feed(T0 + i as u64, f);
        }
        assert_eq!(out, Out::Tx(want.clone()), "{}", d.name);
    }
}

#[test]
fn fragmented_reply_keeps_its_pieces_and_loses_df() {
    for df in [false, true] {
        for b in 0..BACKENDS {
            let mut d = dut(b, UDP_NAT, "");
            let q = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(), VIP), 40000, 53, b"query", false);
            one_tx(d.feed(T0, &q));
            let ip = Ip { ident: 0x777, df, ..Ip::new(rs(1), client()) };
            let whole = udp(rs_mac(1), DIRECTOR_MAC, ip, 5353, 40000, &payload(2392), false);
            // Not what a fresh cut at 1020 would give (1000, 1000, 400).
            let sizes = [1000, 600, 800];
            let frags = split(&whole, &sizes, df);
            // Gathered by ip_vs_out: the fragments go out as they came, SNATed,
            // TTL − 1, without DF (ip_fraglist_init/prepare).
            let want = split(&expect::nat_reply(&whole, VIP, 53), &sizes, false);
            assert_eq!(d.feed(T0 + 100, &frags[0]), Out::Drop);
            assert_eq!(d.feed(T0 + 101, &frags[1]), Out::Drop);
            assert_eq!(d.feed(T0 + 102, &frags[2]), Out::Tx(want), "{} df={df}", d.name);
            d.settle();
            let svc = d.services.live_services().next().unwrap();
            assert_eq!((svc.stats.outpkts, svc.stats.outbytes), (1, 2420), "{}", d.name);
        }
    }
}

#[test]
fn tunnelled_datagram_is_encapsulated_whole_then_fragmented() {
    let whole = big_query(0x4444, false);
    let frags = split(&whole, &[1480, 1480, 20], false);
    // 3020 bytes after encapsulation, cut at 1500: 1480 + 1480 + 40.
    let outer = expect::tun(&whole, rs(2), rs_mac(2), 0x4444);
    let want = split(&outer, &[1480, 1480, 40], false);
    for b in 0..BACKENDS {
        let mut d = dut(b, UDP_TUN, "");
        d.feed(T0, &frags[0]);
        d.feed(T0 + 1, &frags[1]);
        assert_eq!(d.feed(T0 + 2, &frags[2]), Out::Tx(want.clone()), "{}", d.name);
    }
}

#[test]
fn a_datagram_for_no_service_reaches_the_stack_whole() {
    let ip = Ip { ident: 0x99, df: false, ..Ip::new(client(), VIP) };
    let whole = udp(GATEWAY_MAC, DIRECTOR_MAC, ip, 40000, 9999, &payload(2000), false);
    let frags = split(&whole, &[1480, 528], false);
    for b in 0..BACKENDS {
        let mut d = dut(b, UDP_NAT, "");
        assert_eq!(d.feed(T0, &frags[0]), Out::Drop);
        assert_eq!(d.feed(T0 + 1, &frags[1]), Out::Host(whole.clone()), "{}", d.name);
    }
}

#[test]
fn duplicates_overlaps_and_timeouts() {
    let whole = big_query(0x4545, false);
    let frags = split(&whole, &[1480, 1480, 20], false);
    let want = split(&expect::nat_request(&whole, rs(1), 5353, rs_mac(1)), &[1480, 1480, 20], false);
    for b in 0..BACKENDS {
        // A duplicate is dropped alone: the datagram still completes.
        let mut d = dut(b, UDP_NAT, "");
        d.feed(T0, &frags[0]);
        assert_eq!(d.feed(T0 + 1, &frags[0]), Out::Drop);
        d.feed(T0 + 2, &frags[1]);
        assert_eq!(d.feed(T0 + 3, &frags[2]), Out::Tx(want.clone()), "{}", d.name);
        assert_eq!(d.counters.reasm.duplicates, 1);

        // An overlapping fragment kills the queue: the rest waits in a new
        // one that never completes, and times out after 30 s.
        let mut d = dut(b, UDP_NAT, "");
        let shifted = split(&whole, &[1472, 1488, 20], false);
        d.feed(T0, &frags[0]);
        d.feed(T0 + 1, &frags[2]);
        assert_eq!(d.feed(T0 + 2, &shifted[1]), Out::Drop);
        assert_eq!(d.counters.reasm.overlaps, 1);
        assert_eq!(d.feed(T0 + 3, &frags[1]), Out::Drop, "{}: no datagram after the overlap", d.name);
        d.advance(T0 + 3 + 30 * SEC);
        assert_eq!(d.counters.reasm.timeouts, 1);
        assert!(d.defrag.is_empty());

        // 30 s after its first fragment a queue is gone, however close the rest.
        let mut d = dut(b, UDP_NAT, "");
        d.feed(T0, &frags[0]);
        d.feed(T0 + 29 * SEC, &frags[1]);
        assert_eq!(d.feed(T0 + 30 * SEC, &frags[2]), Out::Drop, "{}", d.name);
        assert_eq!(d.counters.reasm.timeouts, 1);
        let s = d.services.live_services().next().unwrap().stats;
        assert_eq!(s.conns, 0);
    }
}

#[test]
fn forwarded_fragments_are_gathered_only_once_ipvs_is_enabled() {
    // Routed through the director, not a NAT reply of any connection.
    let ip = Ip { ident: 0x55, df: false, ..Ip::new(rs(1), Ipv4Addr::new(203, 0, 113, 5)) };
    let whole = udp(rs_mac(1), DIRECTOR_MAC, ip, 7000, 7001, &payload(2000), false);
    let frags = split(&whole, &[1480, 528], false);
    for b in 0..BACKENDS {
        // No service ever added: IPVS is off, the stack routes the fragments.
        let mut d = dut(b, "", "");
        assert_eq!(d.feed(T0, &frags[0]), Out::Host(frags[0].clone()), "{}", d.name);
        assert_eq!(d.feed(T0 + 1, &frags[1]), Out::Host(frags[1].clone()), "{}", d.name);
        // With a service, ip_vs_out gathers them; unrelated, the datagram
        // goes on to the stack whole.
        let mut d = dut(b, UDP_NAT, "");
        assert_eq!(d.feed(T0, &frags[0]), Out::Drop, "{}", d.name);
        assert_eq!(d.feed(T0 + 1, &frags[1]), Out::Host(whole.clone()), "{}", d.name);
    }
}
