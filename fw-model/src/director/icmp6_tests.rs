//! ICMPv6 through the director, whole frames byte for byte: the errors its
//! stack generates, errors about connections relayed both ways, and
//! Neighbour Advertisements. Every expected frame is assembled by hand
//! here from the RFC layouts and the kernel's rules:
//! * `icmp6_send` (net/ipv6/icmp.c): traffic class 0, Next Header 58, hop
//!   limit 64 (the route's default), source the packet's destination when
//!   it is ours else the director's `ip6`, destination the packet's
//!   source; type, code, the 32-bit word (the MTU for Packet Too Big), then
//!   the invoking packet from its IPv6 header, cut at 1232 bytes so that
//!   the error fits in 1280; checksum over the RFC 8200 §8.1 pseudo-header.
//!   The flow label is Linux's keyed hash (`auto_flowlabels`): 0 here.
//! * `ip_vs_nat_icmp_v6`: outer address, quoted address and quoted port
//!   rewritten, quoted transport checksum left alone, ICMPv6 checksum
//!   computed anew; hop limit − 1 on the way.
//! * `ndisc_send_na`: hop limit 255, flow label 0, R (the director
//!   forwards), S for an answer, O when the solicitation was multicast, and
//!   the target link-layer address option (type 2, length 1) only then.

use super::v6_xmit_tests::{a, director, frame, ip6, l4_csum, run, tcp, udp, CFG, DIR, GW, RS1, RS2, RS3, RULES, T0};
use super::{Action, Director, DropReason, HostReason};
use crate::config::DirectorConfig;
use crate::rules::ipvsadm::parse_rules;
use crate::time::MSEC;
use std::net::Ipv6Addr;

const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0x20, 1];

/// An ICMPv6 message: type, code, checksum, the 32-bit word, body; the
/// checksum computed over the pseudo-header from `src` to `dst`.
fn icmp(src: Ipv6Addr, dst: Ipv6Addr, typ: u8, code: u8, word: u32, body: &[u8]) -> Vec<u8> {
    let mut m = vec![typ, code, 0, 0];
    m.extend_from_slice(&word.to_be_bytes());
    m.extend_from_slice(body);
    let c = l4_csum(src, dst, 58, &m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// The 16-bit ones' complement sum of `b` (no pseudo-header), folded.
fn fold_sum(b: &[u8]) -> u16 {
    let mut s: u32 = b.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The IPv6 packet (header and upper layer) inside an Ethernet frame.
fn packet(f: &[u8]) -> &[u8] {
    &f[14..]
}

/// The test director with more `[neighbors]` and more rules.
fn director_with(extra_neighbors: &str, extra_rules: &str) -> Director {
    let (cfg, rules) = (format!("{CFG}{extra_neighbors}"), format!("{RULES}{extra_rules}"));
    Director::new(DirectorConfig::parse(&cfg).unwrap(), &parse_rules(&rules).unwrap(), T0).unwrap()
}

#[test]
fn hop_limit_one_to_a_vip_is_answered_with_time_exceeded_from_the_vip() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::8"), a("2001:db8::10"));
    let syn = frame(DIR, GW, 0x28, 0x12345, 6, 1, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    let want = frame(GW, DIR, 0, 0, 58, 64, vip, client, &icmp(vip, client, 3, 0, 0, packet(&syn)));
    assert_eq!(run(&mut d, T0, &syn), Ok(want));
    assert_eq!(d.counters.icmp6_sent.get(&(3, 0)), Some(&1));
    assert_eq!(d.counters.drop[DropReason::TtlExceeded as usize], 1);
    assert_eq!(d.conns.len(), 1, "the connection was made before the transmitter refused");
}

#[test]
fn hop_limit_one_on_a_nat_reply_is_answered_from_the_directors_address() {
    let mut d = director();
    let (client, vip, rs) = (a("2001:db8:ff::8"), a("2001:db8::10"), a("2001:db8:1::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let synack = frame(DIR, RS1, 0, 0, 6, 1, rs, client, &tcp(rs, client, 8080, 40001, 7, 2, 0x12, b""));
    let me = a("2001:db8::1");
    let want = frame(RS1, DIR, 0, 0, 58, 64, me, rs, &icmp(me, rs, 3, 0, 0, packet(&synack)));
    assert_eq!(run(&mut d, T0, &synack), Ok(want));
}

/// ip6ip6: the route's MTU less 40 (1460); a packet of 1461 bytes gets
/// Packet Too Big carrying 1460, quoting its first 1232 bytes with the hop
/// limit already decremented (`__ip_vs_get_out_rt_v6` runs `decrement_ttl`
/// before its MTU check; the kernel's frames: fixture `ip6ip6-too-big`).
#[test]
fn too_big_for_the_ip6ip6_tunnel_is_answered_with_packet_too_big() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::9"), a("2001:db8::10"));
    let dgram = udp(client, vip, 5353, 53, &[0x5a; 1461 - 48]);
    let q = frame(DIR, GW, 0, 0, 17, 64, client, vip, &dgram);
    assert_eq!(q.len(), 14 + 1461);
    let q63 = frame(DIR, GW, 0, 0, 17, 63, client, vip, &dgram);
    let want = frame(GW, DIR, 0, 0, 58, 64, vip, client, &icmp(vip, client, 2, 0, 1460, &packet(&q63)[..1232]));
    assert_eq!(want.len(), 14 + 1280, "the error fills the minimum MTU exactly");
    assert_eq!(run(&mut d, T0, &q), Ok(want));
    assert_eq!(d.counters.icmp6_sent.get(&(2, 0)), Some(&1));
    // One byte less passes through the tunnel.
    let dgram = udp(client, vip, 5353, 53, &[0x5a; 1460 - 48]);
    let out = run(&mut d, T0, &frame(DIR, GW, 0, 0, 17, 64, client, vip, &dgram)).unwrap();
    assert_eq!((&out[0..6], out.len()), (&RS3[..], 14 + 40 + 1460));
}

#[test]
fn too_big_for_nat_and_small_errors_quote_the_whole_packet() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::a"), a("2001:db8::10"));
    let seg = tcp(client, vip, 40003, 80, 1, 0, 0x02, &[7; 1441]);
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &seg);
    assert_eq!(syn.len(), 14 + 1501);
    // Quoted with the hop limit decremented, as for the tunnel above.
    let syn63 = frame(DIR, GW, 0, 0, 6, 63, client, vip, &seg);
    let want = frame(GW, DIR, 0, 0, 58, 64, vip, client, &icmp(vip, client, 2, 0, 1500, &packet(&syn63)[..1232]));
    assert_eq!(run(&mut d, T0, &syn), Ok(want));
    assert_eq!(d.counters.drop[DropReason::FragNeeded as usize], 1);
}

#[test]
fn no_real_server_is_answered_with_port_unreachable() {
    let mut d = director_with("", "-A -u [2001:db8::30]:5000 -s rr\n");
    let (client, vip) = (a("2001:db8:ff::b"), a("2001:db8::30"));
    let q = frame(DIR, GW, 0, 0, 17, 64, client, vip, &udp(client, vip, 999, 5000, b"hello"));
    // Ethernet padding past the payload is not quoted.
    let mut padded = q.clone();
    padded.extend_from_slice(&[0; 3]);
    let want = frame(GW, DIR, 0, 0, 58, 64, vip, client, &icmp(vip, client, 1, 4, 0, packet(&q)));
    assert_eq!(run(&mut d, T0, &padded), Ok(want));
    assert_eq!(d.counters.drop[DropReason::NoRealServer as usize], 1);
}

/// `icmpv6_xrlim_allow`: the client is behind the gateway (the default
/// route, /0), so the interval is 1 s >> 4 = 62.5 ms and a burst of six.
#[test]
fn errors_to_one_destination_are_rate_limited() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::c"), a("2001:db8::10"));
    let syn = |sp: u16| frame(DIR, GW, 0, 0, 6, 1, client, vip, &tcp(client, vip, sp, 80, 1, 0, 0x02, b""));
    for sp in 0..6 {
        assert!(run(&mut d, T0, &syn(1000 + sp)).is_ok(), "{sp}");
    }
    assert_eq!(run(&mut d, T0, &syn(2000)), Err(Action::Drop(DropReason::TtlExceeded)));
    assert_eq!(d.counters.icmp_rate_limited, 1);
    assert_eq!(run(&mut d, T0 + 62 * MSEC, &syn(2001)), Err(Action::Drop(DropReason::TtlExceeded)));
    assert!(run(&mut d, T0 + 63 * MSEC, &syn(2002)).is_ok());
    // Packet Too Big is never limited.
    let big = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 3000, 80, 1, 0, 0x02, &[0; 1500]));
    for _ in 0..10 {
        assert!(run(&mut d, T0 + 63 * MSEC, &big).is_ok());
    }
}

/// Destination unreachable (address unreachable) from a router on the way
/// to the client, about the NAT reply VIP:80 → client: to the real server
/// as about its own packet RS:8080 → client. The kernel does not check the
/// received checksum here; the one sent is computed anew.
#[test]
fn error_from_the_client_side_about_a_nat_connection_goes_to_the_real_server_rewritten() {
    let mut d = director();
    let (client, vip, rs, router) = (a("2001:db8:ff::8"), a("2001:db8::10"), a("2001:db8:1::1"), a("2001:db8:fe::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let reply = tcp(vip, client, 80, 40001, 7, 2, 0x12, b"");
    let quoted = [ip6(0, 0, reply.len(), 6, 60, vip, client), reply.clone()].concat();
    let mut msg = icmp(router, vip, 1, 3, 0, &quoted);
    msg[2] ^= 0xff; // a bad checksum is relayed all the same
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &msg);
    let mut rquoted = [ip6(0, 0, reply.len(), 6, 60, rs, client), reply].concat();
    rquoted[40..42].copy_from_slice(&8080u16.to_be_bytes());
    let want = frame(RS1, DIR, 0, 0, 58, 60, router, rs, &icmp(router, rs, 1, 3, 0, &rquoted));
    assert_eq!(run(&mut d, T0, &err), Ok(want));
    let id = d.conns.in_get6(6, &client, 40001, &vip, 80).unwrap();
    assert_eq!(d.conns.get(id).state, crate::conn::tcp::state::SYN_RECV, "the state is not touched");
}

/// DR and TUN send the error on as a packet of the connection: DR with
/// only the MACs and the hop limit changed, TUN inside ip6ip6.
#[test]
fn error_from_the_client_side_about_dr_and_tun_connections_is_forwarded() {
    let mut d = director();
    let (client, vip, router, me) = (a("2001:db8:ff::8"), a("2001:db8::10"), a("2001:db8:fe::1"), a("2001:db8::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40002, 443, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let reply = tcp(vip, client, 443, 40002, 7, 2, 0x12, b"");
    let quoted = [ip6(0, 0, reply.len(), 6, 60, vip, client), reply].concat();
    let msg = icmp(router, vip, 3, 0, 0, &quoted);
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &msg);
    assert_eq!(run(&mut d, T0, &err), Ok(frame(RS2, DIR, 0, 0, 58, 60, router, vip, &msg)));

    let q = frame(DIR, GW, 0, 0, 17, 64, client, vip, &udp(client, vip, 5353, 53, b"q"));
    run(&mut d, T0, &q).unwrap();
    let reply = udp(vip, client, 53, 5353, b"answer");
    let quoted = [ip6(0, 0, reply.len(), 17, 60, vip, client), reply].concat();
    let msg = icmp(router, vip, 1, 4, 0, &quoted);
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &msg);
    let inner = [ip6(0, 0, msg.len(), 58, 60, router, vip), msg.clone()].concat();
    let want = frame(RS3, DIR, 0, 0, 41, 60, me, a("2001:db8:1::3"), &inner);
    assert_eq!(run(&mut d, T0, &err), Ok(want));
}

#[test]
fn client_side_errors_the_director_does_not_relate_go_to_the_host() {
    let mut d = director();
    let (client, vip, router) = (a("2001:db8:ff::8"), a("2001:db8::10"), a("2001:db8:fe::1"));
    let reply = tcp(vip, client, 80, 40009, 7, 2, 0x12, b"");
    let quoted = [ip6(0, 0, reply.len(), 6, 60, vip, client), reply].concat();
    // No such connection.
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &icmp(router, vip, 1, 3, 0, &quoted));
    assert_eq!(run(&mut d, T0, &err), Err(Action::ToHost(HostReason::Local)));
    // Echo request: informational.
    let ping = frame(DIR, GW, 0, 0, 58, 61, client, vip, &icmp(client, vip, 128, 0, 0x0001_0001, b"ping"));
    assert_eq!(run(&mut d, T0, &ping), Err(Action::ToHost(HostReason::Local)));
    // Quoting less than a whole IPv6 header, or no ports.
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &icmp(router, vip, 1, 3, 0, &quoted[..39]));
    assert_eq!(run(&mut d, T0, &err), Err(Action::ToHost(HostReason::Local)));
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &icmp(router, vip, 1, 3, 0, &quoted[..43]));
    assert_eq!(run(&mut d, T0, &err), Err(Action::ToHost(HostReason::Local)));
    // Shorter than the ICMPv6 header: dropped, counted.
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &[1, 3, 0, 0]);
    assert_eq!(run(&mut d, T0, &err), Err(Action::Drop(DropReason::Truncated)));
    // To the director's own address: the host stack's.
    let me = a("2001:db8::1");
    let err = frame(DIR, GW, 0, 0, 58, 61, router, me, &icmp(router, me, 1, 3, 0, &quoted));
    assert_eq!(run(&mut d, T0, &err), Err(Action::ToHost(HostReason::NonIp)));
    assert!(d.counters.icmp6_sent.is_empty());
}

/// A real server's port unreachable about client:40001 → RS:8080 leaves
/// the director as the VIP's about client → VIP:80.
#[test]
fn error_from_a_nat_real_server_goes_to_the_client_rewritten() {
    let mut d = director();
    let (client, vip, rs) = (a("2001:db8:ff::8"), a("2001:db8::10"), a("2001:db8:1::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let sent = tcp(client, rs, 40001, 8080, 1, 0, 0x02, b"");
    let quoted = [ip6(0, 0, sent.len(), 6, 63, client, rs), sent.clone()].concat();
    // handle_response_icmp checks the message's sum without the
    // pseudo-header: a message whose checksum leaves it out passes and is
    // relayed with a correct checksum...
    let mut msg = icmp(rs, client, 1, 4, 0, &quoted);
    msg[2..4].copy_from_slice(&[0, 0]);
    let plain = !fold_sum(&msg);
    msg[2..4].copy_from_slice(&plain.to_be_bytes());
    let err = frame(DIR, RS1, 0, 0, 58, 64, rs, client, &msg);
    let mut vquoted = [ip6(0, 0, sent.len(), 6, 63, client, vip), sent].concat();
    vquoted[42..44].copy_from_slice(&80u16.to_be_bytes());
    let want = frame(GW, DIR, 0, 0, 58, 63, vip, client, &icmp(vip, client, 1, 4, 0, &vquoted));
    assert_eq!(run(&mut d, T0, &err), Ok(want));

    // ...while a correct ICMPv6 checksum (RFC 4443, over the pseudo-header)
    // fails that check: dropped, counted, as the 6.1 kernel does (matrix
    // g4, divergence #20).
    let err = frame(DIR, RS1, 0, 0, 58, 64, rs, client, &icmp(rs, client, 1, 4, 0, &quoted));
    assert_eq!(run(&mut d, T0, &err), Err(Action::Drop(DropReason::BadIcmpChecksum)));
    let mut msg = icmp(rs, client, 1, 4, 0, &quoted);
    msg[3] ^= 1;
    let err = frame(DIR, RS1, 0, 0, 58, 64, rs, client, &msg);
    assert_eq!(run(&mut d, T0, &err), Err(Action::Drop(DropReason::BadIcmpChecksum)));
    // Hop limit 1: dropped by ip6_forward, no error about an error.
    let err = frame(DIR, RS1, 0, 0, 58, 1, rs, client, &icmp(rs, client, 1, 4, 0, &quoted));
    assert_eq!(run(&mut d, T0, &err), Err(Action::Drop(DropReason::TtlExceeded)));
    assert!(d.counters.icmp6_sent.is_empty());
    // About a DR connection: forwarded by the stack untouched.
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40002, 443, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let rs2 = a("2001:db8:1::2");
    let sent = tcp(client, vip, 40002, 443, 1, 0, 0x02, b"");
    let quoted = [ip6(0, 0, sent.len(), 6, 63, client, vip), sent].concat();
    let err = frame(DIR, RS2, 0, 0, 58, 64, rs2, client, &icmp(rs2, client, 1, 4, 0, &quoted));
    assert_eq!(run(&mut d, T0, &err), Err(Action::ToHost(HostReason::NonIp)));
}

/// An NS as RFC 4861 §4.3 lays it out: type 135, code 0, reserved, target,
/// then the options given.
fn ns(src: Ipv6Addr, dst: Ipv6Addr, target: Ipv6Addr, opts: &[u8]) -> Vec<u8> {
    let mut body = target.octets().to_vec();
    body.extend_from_slice(opts);
    icmp(src, dst, 135, 0, 0, &body)
}

/// An NA (§4.4): type 136, flags, target, the target link-layer address
/// option of the director's MAC when `tlla`.
fn na(src: Ipv6Addr, dst: Ipv6Addr, flags: u8, target: Ipv6Addr, tlla: bool) -> Vec<u8> {
    let mut body = target.octets().to_vec();
    if tlla {
        body.extend_from_slice(&[2, 1]);
        body.extend_from_slice(&DIR);
    }
    icmp(src, dst, 136, 0, u32::from(flags) << 24, &body)
}

#[test]
fn neighbour_solicitations_for_a_vip_are_answered_as_ndisc_does() {
    let mut d = director();
    let (client, vip) = (a("2001:db8::99"), a("2001:db8::10"));
    let snm = a("ff02::1:ff00:10");
    let mc = [0x33, 0x33, 0xff, 0, 0, 0x10];
    let slla = [1, 1, 2, 0, 0, 0, 0x20, 1];
    // Multicast, with the solicitor's address: R S O and our address.
    let q = frame(mc, CLIENT_MAC, 0, 0, 58, 255, client, snm, &ns(client, snm, vip, &slla));
    let want = frame(CLIENT_MAC, DIR, 0, 0, 58, 255, vip, client, &na(vip, client, 0xe0, vip, true));
    assert_eq!(want.len(), 14 + 40 + 32);
    assert_eq!(run(&mut d, T0, &q), Ok(want));
    // Unicast from a known neighbour, without the option: R S, no option.
    let rs = a("2001:db8:1::1");
    let q = frame(DIR, RS1, 0, 0, 58, 255, rs, vip, &ns(rs, vip, vip, &[]));
    let want = frame(RS1, DIR, 0, 0, 58, 255, vip, rs, &na(vip, rs, 0xc0, vip, false));
    assert_eq!(run(&mut d, T0, &q), Ok(want));
    // The director's own address likewise.
    let me = a("2001:db8::1");
    let snm1 = a("ff02::1:ff00:1");
    let q = frame([0x33, 0x33, 0xff, 0, 0, 1], CLIENT_MAC, 0, 0, 58, 255, client, snm1, &ns(client, snm1, me, &slla));
    let want = frame(CLIENT_MAC, DIR, 0, 0, 58, 255, me, client, &na(me, client, 0xe0, me, true));
    assert_eq!(run(&mut d, T0, &q), Ok(want));
    // Duplicate address detection by another node: defended to all nodes.
    let q = frame(mc, CLIENT_MAC, 0, 0, 58, 255, Ipv6Addr::UNSPECIFIED, snm, &ns(Ipv6Addr::UNSPECIFIED, snm, vip, &[]));
    let all = a("ff02::1");
    let want = frame([0x33, 0x33, 0, 0, 0, 1], DIR, 0, 0, 58, 255, vip, all, &na(vip, all, 0xa0, vip, true));
    assert_eq!(run(&mut d, T0, &q), Ok(want));
    assert_eq!(d.counters.nd_adverts, 4);
}

#[test]
fn neighbour_solicitations_ndisc_refuses_are_dropped_and_others_go_to_the_host() {
    let mut d = director();
    let (client, vip) = (a("2001:db8::99"), a("2001:db8::10"));
    let snm = a("ff02::1:ff00:10");
    let mc = [0x33, 0x33, 0xff, 0, 0, 0x10];
    let slla = [1, 1, 2, 0, 0, 0, 0x20, 1];
    let bad = DropReason::NdInvalid;
    let send = |d: &mut Director, hop: u8, s: Ipv6Addr, msg: &[u8]| run(d, T0, &frame(mc, CLIENT_MAC, 0, 0, 58, hop, s, snm, msg));
    assert_eq!(send(&mut d, 254, client, &ns(client, snm, vip, &slla)), Err(Action::Drop(bad)), "hop limit");
    let mut m = ns(client, snm, vip, &slla);
    m[5] ^= 1;
    assert_eq!(send(&mut d, 255, client, &m), Err(Action::Drop(bad)), "checksum");
    let mut m = ns(client, snm, vip, &slla);
    m[1] = 1;
    m[2..4].copy_from_slice(&[0, 0]);
    let c = l4_csum(client, snm, 58, &m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    assert_eq!(send(&mut d, 255, client, &m), Err(Action::Drop(bad)), "code 1");
    assert_eq!(send(&mut d, 255, client, &ns(client, snm, vip, &[1, 0, 0, 0, 0, 0, 0, 0])), Err(Action::Drop(bad)), "option length 0");
    assert_eq!(send(&mut d, 255, client, &ns(client, snm, vip, &[1, 2, 2, 0, 0, 0, 0, 1])), Err(Action::Drop(bad)), "option past the end");
    let u = Ipv6Addr::UNSPECIFIED;
    assert_eq!(send(&mut d, 255, u, &ns(u, snm, vip, &slla)), Err(Action::Drop(bad)), "DAD with an address");
    let dad = ns(u, a("ff02::1"), vip, &[]);
    let q = frame([0x33, 0x33, 0, 0, 0, 1], CLIENT_MAC, 0, 0, 58, 255, u, a("ff02::1"), &dad);
    assert_eq!(run(&mut d, T0, &q), Err(Action::Drop(bad)), "DAD not to the solicited-node group");
    assert_eq!(d.counters.drop[bad as usize], 7);
    // Not ours (a multicast target is not, a message too short to have a
    // target has none): the stack's, which drops or proxies. Multicast
    // without the solicitor's address from an unknown node: Linux has no
    // neighbour entry to answer to.
    let host = Err(Action::ToHost(HostReason::NonIp));
    assert_eq!(send(&mut d, 255, client, &ns(client, snm, a("ff02::1"), &slla)), host, "multicast target");
    assert_eq!(send(&mut d, 255, client, &icmp(client, snm, 135, 0, 0, &[0; 8])), host, "short");
    let other = a("2001:db8::77");
    assert_eq!(send(&mut d, 255, client, &ns(client, snm, other, &slla)), host);
    assert_eq!(send(&mut d, 254, client, &ns(client, snm, other, &slla)), host, "invalid, and not ours");
    assert_eq!(send(&mut d, 255, client, &ns(client, snm, vip, &[])), Err(Action::ToHost(HostReason::NonIp)));
    assert_eq!(d.counters.nd_adverts, 0);
}

/// An IPv6 connection to an IPv4 real server (`ip_vs_tunnel_xmit`): the
/// MTU is the IPv4 route's less 20, and too big is answered with ICMPv6
/// packet too big (`ensure_mtu_is_adequate` with `skb_af == AF_INET6`).
#[test]
fn too_big_for_the_ipv4_tunnel_of_an_ipv6_service_is_answered_with_packet_too_big() {
    let mut d = director_with("\"10.0.0.5\" = \"02:00:00:00:10:05\"\n", "-A -t [2001:db8::40]:80 -s rr\n-a -t [2001:db8::40]:80 -r 10.0.0.5:80 -i -w 1\n");
    let (client, vip) = (a("2001:db8:ff::d"), a("2001:db8::40"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 4000, 80, 1, 0, 0x02, &[1; 1481 - 60]));
    // `__ip_vs_get_out_rt` decrements the hop limit before its MTU check too.
    let syn63 = frame(DIR, GW, 0, 0, 6, 63, client, vip, &tcp(client, vip, 4000, 80, 1, 0, 0x02, &[1; 1481 - 60]));
    let want = frame(GW, DIR, 0, 0, 58, 64, vip, client, &icmp(vip, client, 2, 0, 1480, &packet(&syn63)[..1232]));
    assert_eq!(run(&mut d, T0, &syn), Ok(want));
    // Hop limit 1: time exceeded, as for an IPv6 real server.
    let syn = frame(DIR, GW, 0, 0, 6, 1, client, vip, &tcp(client, vip, 4001, 80, 1, 0, 0x02, b""));
    let want = frame(GW, DIR, 0, 0, 58, 64, vip, client, &icmp(vip, client, 3, 0, 0, packet(&syn)));
    assert_eq!(run(&mut d, T0, &syn), Ok(want));
}

/// The quoted packet's extension headers are walked (`ipv6_find_hdr` from
/// the quoted header): the port rewritten is the one after them.
#[test]
fn an_error_quoting_extension_headers_is_rewritten_after_them() {
    let mut d = director();
    let (client, vip, rs, router) = (a("2001:db8:ff::e"), a("2001:db8::10"), a("2001:db8:1::1"), a("2001:db8:fe::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40005, 80, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let reply = tcp(vip, client, 80, 40005, 7, 2, 0x12, b"");
    // Destination Options, 8 bytes (Next Header TCP, length 0, PadN).
    let dopt = [6, 0, 1, 4, 0, 0, 0, 0];
    let quoted = [ip6(0, 0, 8 + reply.len(), 60, 60, vip, client), dopt.to_vec(), reply.clone()].concat();
    let err = frame(DIR, GW, 0, 0, 58, 61, router, vip, &icmp(router, vip, 1, 3, 0, &quoted));
    let mut rquoted = [ip6(0, 0, 8 + reply.len(), 60, 60, rs, client), dopt.to_vec(), reply].concat();
    rquoted[48..50].copy_from_slice(&8080u16.to_be_bytes());
    let want = frame(RS1, DIR, 0, 0, 58, 60, router, rs, &icmp(router, rs, 1, 3, 0, &rquoted));
    assert_eq!(run(&mut d, T0, &err), Ok(want));
}

/// Malformed ICMPv6 and ND never stop the director: every truncation and
/// every flipped byte of valid messages gives some action.
#[test]
fn truncated_and_corrupted_icmpv6_never_panics() {
    let mut d = director();
    let (client, vip, rs, router) = (a("2001:db8:ff::8"), a("2001:db8::10"), a("2001:db8:1::1"), a("2001:db8:fe::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let reply = tcp(vip, client, 80, 40001, 7, 2, 0x12, b"");
    let quoted = [ip6(0, 0, reply.len(), 6, 60, vip, client), reply].concat();
    let sent = tcp(client, rs, 40001, 8080, 1, 0, 0x02, b"");
    let squoted = [ip6(0, 0, sent.len(), 6, 63, client, rs), sent].concat();
    let snm = a("ff02::1:ff00:10");
    let frames = [
        frame(DIR, GW, 0, 0, 58, 61, router, vip, &icmp(router, vip, 1, 3, 0, &quoted)),
        frame(DIR, RS1, 0, 0, 58, 64, rs, client, &icmp(rs, client, 1, 4, 0, &squoted)),
        frame([0x33, 0x33, 0xff, 0, 0, 0x10], CLIENT_MAC, 0, 0, 58, 255, client, snm, &ns(client, snm, vip, &[1, 1, 2, 0, 0, 0, 0x20, 1])),
    ];
    for f in &frames {
        for n in 0..f.len() {
            let _ = run(&mut d, T0, &f[..n]);
            let mut g = f.clone();
            g[n] ^= 0xff;
            let _ = run(&mut d, T0, &g);
            // The payload length says more than there is.
            let mut h = f.clone();
            h[18..20].copy_from_slice(&0xffffu16.to_be_bytes());
            h.truncate(n.max(54));
            let _ = run(&mut d, T0, &h);
        }
    }
}

/// A relayed error that cannot go on (hop limit 1 on the way to the real
/// server) is dropped without an error about it (`is_ineligible`).
#[test]
fn no_error_is_sent_about_a_relayed_error() {
    let mut d = director();
    let (client, vip, router) = (a("2001:db8:ff::8"), a("2001:db8::10"), a("2001:db8:fe::1"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    let reply = tcp(vip, client, 80, 40001, 7, 2, 0x12, b"");
    let quoted = [ip6(0, 0, reply.len(), 6, 60, vip, client), reply].concat();
    let err = frame(DIR, GW, 0, 0, 58, 1, router, vip, &icmp(router, vip, 1, 3, 0, &quoted));
    assert_eq!(run(&mut d, T0, &err), Err(Action::Drop(DropReason::TtlExceeded)));
    assert!(d.counters.icmp6_sent.is_empty());
}

#[test]
fn an_ipv6_vip_another_director_owns_is_the_host_stacks_as_for_ipv4() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::8"), a("2001:db8::10"));
    assert!(d.set_vip_owned(vip, false));
    // TCP to it, an ICMPv6 echo to it: routed (or dropped) by the host
    // stack, as an IPv4 VIP in VRRP backup (`ipv6_chk_addr` fails, IPVS
    // at LOCAL_IN never sees them).
    let syn = frame(DIR, GW, 0, 0, 6, 1, client, vip, &tcp(client, vip, 40001, 80, 1, 0, 0x02, b""));
    assert_eq!(run(&mut d, T0, &syn), Err(Action::ToHost(HostReason::Forward)));
    let echo = frame(DIR, GW, 0, 0, 58, 64, client, vip, &icmp(client, vip, 128, 0, 7, b"ping"));
    assert_eq!(run(&mut d, T0, &echo), Err(Action::ToHost(HostReason::Forward)));
    assert_eq!(d.conns.len(), 0);
    // Its solicitations are not answered (as ARP requests for an IPv4 VIP
    // in backup): the host stack's.
    let snm = a("ff02::1:ff00:10");
    let slla = [1, 1, 2, 0, 0, 0, 0x20, 1];
    let q = frame([0x33, 0x33, 0xff, 0, 0, 0x10], CLIENT_MAC, 0, 0, 58, 255, client, snm, &ns(client, snm, vip, &slla));
    assert_eq!(run(&mut d, T0, &q), Err(Action::ToHost(HostReason::NonIp)));
    assert_eq!(d.counters.nd_adverts, 0);
    // Master again: the solicitation is answered (R S O, our MAC) and the
    // SYN is IPVS's (hop limit 1: Time Exceeded from the VIP).
    assert!(d.set_vip_owned(vip, true));
    let want = frame(CLIENT_MAC, DIR, 0, 0, 58, 255, vip, client, &na(vip, client, 0xe0, vip, true));
    assert_eq!(run(&mut d, T0, &q), Ok(want));
    let want = frame(GW, DIR, 0, 0, 58, 64, vip, client, &icmp(vip, client, 3, 0, 0, packet(&syn)));
    assert_eq!(run(&mut d, T0, &syn), Ok(want));
}

#[test]
fn the_unsolicited_neighbour_advertisement_is_keepaliveds() {
    // ndisc_send_unsolicited_na: to 33:33:00:00:00:01 / ff02::1 from the
    // VIP, hop limit 255, R and O, target the VIP, TLLA option.
    let vip = a("2001:db8::10");
    let all = a("ff02::1");
    let want = frame([0x33, 0x33, 0, 0, 0, 1], DIR, 0, 0, 58, 255, vip, all, &na(vip, all, 0xa0, vip, true));
    assert_eq!(want.len(), 86);
    assert_eq!(crate::xmit::unsolicited_na(crate::wire::MacAddr(DIR), vip, true), want);
    // An interface that does not forward: Override only (0x20).
    let want = frame([0x33, 0x33, 0, 0, 0, 1], DIR, 0, 0, 58, 255, vip, all, &na(vip, all, 0x20, vip, true));
    assert_eq!(crate::xmit::unsolicited_na(crate::wire::MacAddr(DIR), vip, false), want);
}
