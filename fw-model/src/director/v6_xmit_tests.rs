//! IPv6 TCP/UDP through the director, whole frames byte for byte. Every
//! expected frame is assembled by hand here, with L4 checksums from this
//! file's own one's-complement sum over the RFC 8200 §8.1 pseudo-header,
//! and the header rules of the kernel's AF_INET6 paths:
//! * NAT request (`ip_vs_nat_xmit_v6`): destination address and port
//!   rewritten, L4 checksum updated, hop limit − 1 (`decrement_ttl`),
//!   traffic class and flow label untouched;
//! * NAT reply (`ip6_forward` + `handle_response`): hop limit − 1, source
//!   rewritten to the VIP and service port;
//! * DR (`ip_vs_dr_xmit_v6`): only the MACs and hop limit − 1;
//! * TUN (`ip_vs_tunnel_xmit_v6`): the inner packet (hop limit − 1) behind
//!   a 40-byte header: version 6, traffic class `INET_ECN_encapsulate`d,
//!   flow label 0, payload length inner + 40, next header 41, hop limit
//!   the inner one, source the director's `ip6`, destination the server.

use super::{Action, Director};
use crate::config::DirectorConfig;
use crate::rules::ipvsadm::{format_connections, parse_rules};
use crate::time::SEC;
use std::net::Ipv6Addr;

pub(super) const CFG: &str = "[director]\nip = \"10.0.0.1\"\nip6 = \"2001:db8::1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\n\
gateway_mac = \"02:00:00:00:00:fe\"\n[neighbors]\n\"2001:db8:1::1\" = \"02:00:00:00:10:01\"\n\
\"2001:db8:1::2\" = \"02:00:00:00:10:02\"\n\"2001:db8:1::3\" = \"02:00:00:00:10:03\"\n";
pub(super) const RULES: &str = "\
-A -t [2001:db8::10]:80 -s rr
-a -t [2001:db8::10]:80 -r [2001:db8:1::1]:8080 -m -w 1
-A -t [2001:db8::10]:443 -s rr
-a -t [2001:db8::10]:443 -r [2001:db8:1::2]:443 -g -w 1
-A -u [2001:db8::10]:53 -s rr
-a -u [2001:db8::10]:53 -r [2001:db8:1::3]:53 -i -w 1
-A -t [2001:db8::20]:80 -s rr -p 300 -M 64
-a -t [2001:db8::20]:80 -r [2001:db8:1::1]:80 -g -w 1
-a -t [2001:db8::20]:80 -r [2001:db8:1::2]:80 -g -w 1
";
pub(super) const T0: u64 = 1_700_000_000 * SEC;
pub(super) const DIR: [u8; 6] = [2, 0, 0, 0, 0, 1];
pub(super) const GW: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];
pub(super) const RS1: [u8; 6] = [2, 0, 0, 0, 0x10, 1];
pub(super) const RS2: [u8; 6] = [2, 0, 0, 0, 0x10, 2];
pub(super) const RS3: [u8; 6] = [2, 0, 0, 0, 0x10, 3];

pub(super) fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

pub(super) fn director() -> Director {
    Director::new(DirectorConfig::parse(CFG).unwrap(), &parse_rules(RULES).unwrap(), T0).unwrap()
}

/// RFC 1071 sum of 16-bit big-endian words (odd byte padded), folded.
fn sum16(data: &[u8], mut acc: u64) -> u64 {
    for ch in data.chunks(2) {
        acc += u64::from(u16::from_be_bytes([ch[0], *ch.get(1).unwrap_or(&0)]));
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc
}

/// The upper-layer checksum over the IPv6 pseudo-header and `seg` (whose
/// checksum field must be zero); UDP's 0 becomes 0xFFFF (RFC 8200 §8.1).
pub(super) fn l4_csum(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, seg: &[u8]) -> u16 {
    let mut ph = Vec::new();
    ph.extend_from_slice(&src.octets());
    ph.extend_from_slice(&dst.octets());
    ph.extend_from_slice(&(seg.len() as u32).to_be_bytes());
    ph.extend_from_slice(&[0, 0, 0, nh]);
    let c = !(sum16(seg, sum16(&ph, 0)) as u16);
    if nh == 17 && c == 0 {
        0xffff
    } else {
        c
    }
}

/// A TCP segment (20-byte header, window 512) with its checksum.
#[allow(clippy::too_many_arguments)]
pub(super) fn tcp(src: Ipv6Addr, dst: Ipv6Addr, sp: u16, dp: u16, seq: u32, ack: u32, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&sp.to_be_bytes());
    s.extend_from_slice(&dp.to_be_bytes());
    s.extend_from_slice(&seq.to_be_bytes());
    s.extend_from_slice(&ack.to_be_bytes());
    s.extend_from_slice(&[0x50, flags, 0x02, 0x00, 0, 0, 0, 0]);
    s.extend_from_slice(data);
    let c = l4_csum(src, dst, 6, &s);
    s[16..18].copy_from_slice(&c.to_be_bytes());
    s
}

/// A UDP datagram with its checksum.
pub(super) fn udp(src: Ipv6Addr, dst: Ipv6Addr, sp: u16, dp: u16, data: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&sp.to_be_bytes());
    s.extend_from_slice(&dp.to_be_bytes());
    s.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    s.extend_from_slice(&[0, 0]);
    s.extend_from_slice(data);
    let c = l4_csum(src, dst, 17, &s);
    s[6..8].copy_from_slice(&c.to_be_bytes());
    s
}

/// The fixed IPv6 header.
pub(super) fn ip6(tc: u8, flow: u32, plen: usize, nh: u8, hop: u8, src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    let w = (6u32 << 28) | (u32::from(tc) << 20) | (flow & 0xf_ffff);
    let mut h = w.to_be_bytes().to_vec();
    h.extend_from_slice(&(plen as u16).to_be_bytes());
    h.extend_from_slice(&[nh, hop]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h
}

/// An Ethernet frame carrying an IPv6 packet with upper layer `seg`.
#[allow(clippy::too_many_arguments)]
pub(super) fn frame(dst: [u8; 6], src: [u8; 6], tc: u8, flow: u32, nh: u8, hop: u8, s: Ipv6Addr, d: Ipv6Addr, seg: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&ip6(tc, flow, seg.len(), nh, hop, s, d));
    f.extend_from_slice(seg);
    f
}

pub(super) fn run(d: &mut Director, ts: u64, f: &[u8]) -> Result<Vec<u8>, Action> {
    let (mut f, mut extra) = (f.to_vec(), Vec::new());
    match d.process(ts, &mut f, &mut extra) {
        Action::Transmit => {
            assert!(extra.is_empty());
            Ok(f)
        }
        a => Err(a),
    }
}

#[test]
fn nat_request_and_reply_byte_exact() {
    let mut d = director();
    let (client, vip, rs) = (a("2001:db8:ff::5"), a("2001:db8::10"), a("2001:db8:1::1"));
    let syn = frame(DIR, GW, 0x28, 0x12345, 6, 64, client, vip, &tcp(client, vip, 40000, 80, 1000, 0, 0x02, b""));
    let want = frame(RS1, DIR, 0x28, 0x12345, 6, 63, client, rs, &tcp(client, rs, 40000, 8080, 1000, 0, 0x02, b""));
    assert_eq!(run(&mut d, T0, &syn).unwrap(), want);
    // The reply: source back to the VIP and service port, towards the
    // client's next hop (the gateway).
    let syn_ack = frame(DIR, RS1, 0, 0x777, 6, 64, rs, client, &tcp(rs, client, 8080, 40000, 7000, 1001, 0x12, b"ok"));
    let want = frame(GW, DIR, 0, 0x777, 6, 63, vip, client, &tcp(vip, client, 80, 40000, 7000, 1001, 0x12, b"ok"));
    assert_eq!(run(&mut d, T0 + SEC, &syn_ack).unwrap(), want);
    // A data segment, odd length, with Ethernet padding trimmed away.
    let mut push = frame(DIR, GW, 0, 0, 6, 9, client, vip, &tcp(client, vip, 40000, 80, 1001, 7001, 0x18, b"GET /x"));
    let want = frame(RS1, DIR, 0, 0, 6, 8, client, rs, &tcp(client, rs, 40000, 8080, 1001, 7001, 0x18, b"GET /x"));
    push.extend_from_slice(&[0xaa; 3]);
    assert_eq!(run(&mut d, T0 + 2 * SEC, &push).unwrap(), want);
    let svc = d.services.find_addr(6, vip.into(), 80).unwrap();
    let st = d.services.service(svc).stats;
    assert_eq!((st.conns, st.inpkts, st.outpkts, st.inbytes, st.outbytes), (1, 2, 1, 60 + 66, 62));
    // The connection as `ipvsadm -L -n -c` lists it (the ACK made it
    // ESTABLISHED, 900 s).
    let rows = crate::stats::connection_listings(&d);
    assert_eq!(
        format_connections(&rows, false),
        "IPVS connection entries\n\
pro expire state       source             virtual            destination\n\
TCP 15:00  ESTABLISHED [2001:db8:ff::5]:40000 [2001:db8::10]:80  [2001:db8:1::1]:8080\n"
    );
}

#[test]
fn dr_request_only_macs_and_hop_limit_change() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::6"), a("2001:db8::10"));
    let seg = tcp(client, vip, 50000, 443, 1, 0, 0x02, b"");
    let syn = frame(DIR, GW, 0xb8, 0xabcde, 6, 2, client, vip, &seg);
    let want = frame(RS2, DIR, 0xb8, 0xabcde, 6, 1, client, vip, &seg);
    assert_eq!(run(&mut d, T0, &syn).unwrap(), want);
    // Replies of DR connections do not pass the director: a packet from
    // the server to the client is not IPVS's.
    let back = frame(DIR, RS2, 0, 0, 6, 64, vip, client, &tcp(vip, client, 443, 50000, 9, 2, 0x12, b""));
    assert!(matches!(run(&mut d, T0 + SEC, &back), Err(Action::ToHost(_))));
}

#[test]
fn tunnel_ip6ip6_byte_exact() {
    let mut d = director();
    let (client, vip, rs, me) = (a("2001:db8:ff::7"), a("2001:db8::10"), a("2001:db8:1::3"), a("2001:db8::1"));
    let seg = udp(client, vip, 5353, 53, b"\x12\x34query");
    // DSCP 46 with ECN CE (0b11): the outer header gets ECT(0) (0b10).
    let q = frame(DIR, GW, 0xbb, 0x54321, 17, 64, client, vip, &seg);
    let inner = ip6(0xbb, 0x54321, seg.len(), 17, 63, client, vip);
    let mut want = RS3.to_vec();
    want.extend_from_slice(&DIR);
    want.extend_from_slice(&[0x86, 0xdd]);
    want.extend_from_slice(&ip6(0xba, 0, 40 + seg.len(), 41, 63, me, rs));
    want.extend_from_slice(&inner);
    want.extend_from_slice(&seg);
    assert_eq!(run(&mut d, T0, &q).unwrap(), want);
    // ECT(1) is kept as it is.
    let q = frame(DIR, GW, 0x01, 0, 17, 64, client, vip, &seg);
    let out = run(&mut d, T0 + SEC, &q).unwrap();
    assert_eq!(&out[14..16], &[0x60, 0x10]);
}

#[test]
fn non_syn_without_connection_and_unknown_port_go_to_the_host() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::9"), a("2001:db8::10"));
    let ack = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40002, 80, 1, 1, 0x10, b""));
    assert!(matches!(run(&mut d, T0, &ack), Err(Action::ToHost(super::HostReason::NotSyn))));
    let other = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40002, 81, 1, 0, 0x02, b""));
    assert!(matches!(run(&mut d, T0, &other), Err(Action::ToHost(super::HostReason::Local))));
    // Not a VIP, not a reply: the host stack's, as before.
    let elsewhere = a("2001:db8::99");
    let f = frame(DIR, GW, 0, 0, 6, 64, client, elsewhere, &tcp(client, elsewhere, 1, 80, 1, 0, 0x02, b""));
    assert!(matches!(run(&mut d, T0, &f), Err(Action::ToHost(super::HostReason::NonIp))));
    assert_eq!(d.conns.len(), 0);
}

/// `-p 300 -M 64`: clients of one /64 share a template (and a server);
/// rr gives the next /64 the other server.
#[test]
fn persistence_by_ipv6_prefix() {
    let mut d = director();
    let vip = a("2001:db8::20");
    let rs_mac = |f: &[u8]| <[u8; 6]>::try_from(&f[0..6]).unwrap();
    let send = |d: &mut Director, c: Ipv6Addr, sp: u16| {
        let syn = frame(DIR, GW, 0, 0, 6, 64, c, vip, &tcp(c, vip, sp, 80, 1, 0, 0x02, b""));
        run(d, T0, &syn).unwrap()
    };
    let first = rs_mac(&send(&mut d, a("2001:db8:aa:1::1"), 1000));
    let other = rs_mac(&send(&mut d, a("2001:db8:aa:2::1"), 1000));
    assert_ne!(first, other);
    for c in ["2001:db8:aa:1::2", "2001:db8:aa:1:ffff:ffff:ffff:ffff", "2001:db8:aa:1::1"] {
        assert_eq!(rs_mac(&send(&mut d, a(c), 2000)), first, "{c}");
    }
    assert_eq!(rs_mac(&send(&mut d, a("2001:db8:aa:2::77"), 2000)), other);
    // Two templates, keyed on the /64 networks.
    let t1 = d.conns.ct_in_get6(6, &a("2001:db8:aa:1::"), 0, &vip, 80);
    let t2 = d.conns.ct_in_get6(6, &a("2001:db8:aa:2::"), 0, &vip, 80);
    assert!(t1.is_some() && t2.is_some());
    assert_eq!(d.counters.templates_created, 2);
    assert_eq!(d.conns.get(t1.unwrap()).n_control, 4, "the first client and three more");
}

#[test]
fn ipv6_addr_prefix_masks_to_the_prefix_length() {
    use super::v6::ipv6_addr_prefix;
    let x = a("2001:db8:aa:bbbb:cccc:dddd:eeee:ffff");
    assert_eq!(ipv6_addr_prefix(&x, 128), x);
    assert_eq!(ipv6_addr_prefix(&x, 64), a("2001:db8:aa:bbbb::"));
    assert_eq!(ipv6_addr_prefix(&x, 60), a("2001:db8:aa:bbb0::"));
    assert_eq!(ipv6_addr_prefix(&x, 1), a("::"));
    assert_eq!(ipv6_addr_prefix(&a("8000::1"), 1), a("8000::"));
    assert_eq!(ipv6_addr_prefix(&x, 0), a("::"));
}

/// Connections expire on the IPv4 path's timers (TCP SYN_RECV 60 s) and
/// their addresses go with them.
#[test]
fn ipv6_connections_expire() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::10"), a("2001:db8::10"));
    let syn = frame(DIR, GW, 0, 0, 6, 64, client, vip, &tcp(client, vip, 40003, 80, 1, 0, 0x02, b""));
    run(&mut d, T0, &syn).unwrap();
    assert_eq!(d.conns.len(), 1);
    d.advance(T0 + 61 * SEC);
    assert_eq!(d.conns.len(), 0);
    assert_eq!(d.conns.in_get6(6, &client, 40003, &vip, 80), None);
}

// ---------------------------------------------------------------------------
// Tunnels across families (`ip_vs_genl_set_cmd` accepts them for -i only)

const MIXED_CFG: &str = "[director]\nip = \"10.0.0.1\"\nip6 = \"2001:db8::1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\n\
gateway_mac = \"02:00:00:00:00:fe\"\n[neighbors]\n\"2001:db8:1::4\" = \"02:00:00:00:10:04\"\n\
\"192.168.10.3\" = \"02:00:00:00:0a:03\"\n";
const MIXED_RULES: &str = "\
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r [2001:db8:1::4]:80 -i -w 1
-A -u [2001:db8::30]:53 -s rr
-a -u [2001:db8::30]:53 -r 192.168.10.3:53 -i -w 1
";
const RS4: [u8; 6] = [2, 0, 0, 0, 0x10, 4];
const RS_V4: [u8; 6] = [2, 0, 0, 0, 0x0a, 3];

fn mixed() -> Director {
    Director::new(DirectorConfig::parse(MIXED_CFG).unwrap(), &parse_rules(MIXED_RULES).unwrap(), T0).unwrap()
}

/// An IPv4 header (IHL 5) with its checksum, from this file's own sum.
#[allow(clippy::too_many_arguments)]
fn ip4(tos: u8, tot: usize, id: u16, df: bool, ttl: u8, proto: u8, s: [u8; 4], d: [u8; 4]) -> Vec<u8> {
    let mut h = vec![0x45, tos];
    h.extend_from_slice(&(tot as u16).to_be_bytes());
    h.extend_from_slice(&id.to_be_bytes());
    h.extend_from_slice(&[if df { 0x40 } else { 0 }, 0, ttl, proto, 0, 0]);
    h.extend_from_slice(&s);
    h.extend_from_slice(&d);
    let c = !(sum16(&h, 0) as u16);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// A TCP segment over IPv4 (pseudo-header of RFC 793) with its checksum.
fn tcp4(s: [u8; 4], d: [u8; 4], sp: u16, dp: u16, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut seg = Vec::new();
    seg.extend_from_slice(&sp.to_be_bytes());
    seg.extend_from_slice(&dp.to_be_bytes());
    seg.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x02, 0x00, 0, 0, 0, 0]);
    seg.extend_from_slice(data);
    let mut ph = s.to_vec();
    ph.extend_from_slice(&d);
    ph.extend_from_slice(&[0, 6]);
    ph.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    let c = !(sum16(&seg, sum16(&ph, 0)) as u16);
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    seg
}

/// IPv4 client, IPv6 real server: `ip_vs_tunnel_xmit_v6` puts the IPv4
/// packet (TTL − 1, header checksum redone) behind an IPv6 header with
/// next header 4, payload length the IPv4 total length, hop limit the
/// inner TTL, traffic class the ECN-encapsulated TOS, flow label 0.
#[test]
fn ipv4_client_to_ipv6_server_tunnel_byte_exact() {
    let mut d = mixed();
    let (client, vip) = ([198, 51, 100, 10], [10, 0, 0, 100]);
    let seg = tcp4(client, vip, 40000, 80, 0x02, b"");
    let mut syn = DIR.to_vec();
    syn.extend_from_slice(&GW);
    syn.extend_from_slice(&[0x08, 0x00]);
    syn.extend_from_slice(&ip4(0x2b, 40, 0x1234, true, 64, 6, client, vip));
    syn.extend_from_slice(&seg);
    let mut want = RS4.to_vec();
    want.extend_from_slice(&DIR);
    want.extend_from_slice(&[0x86, 0xdd]);
    // TOS 0x2b: DSCP 10, ECN CE → ECT(0): traffic class 0x2a.
    want.extend_from_slice(&ip6(0x2a, 0, 40, 4, 63, a("2001:db8::1"), a("2001:db8:1::4")));
    want.extend_from_slice(&ip4(0x2b, 40, 0x1234, true, 63, 6, client, vip));
    want.extend_from_slice(&seg);
    assert_eq!(run(&mut d, T0, &syn).unwrap(), want);
    // `ipvsadm -L -n -c` shows its IPv6 server as ipvsadm's print_conn
    // does: parsed as hex up to the first ':' of /proc's `%pI6`.
    let rows = crate::stats::connection_listings(&d);
    assert!(
        format_connections(&rows, false).ends_with("TCP 01:00  SYN_RECV    198.51.100.10:40000 10.0.0.100:80      0.0.32.1:80\n"),
        "{}",
        format_connections(&rows, false)
    );
    // DF and too big for the link less 40: "fragmentation needed" with
    // MTU 1460 (`ensure_mtu_is_adequate` for AF_INET).
    let big = tcp4(client, vip, 40000, 80, 0x10, &[0u8; 1440]);
    let mut f = DIR.to_vec();
    f.extend_from_slice(&GW);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&ip4(0, 1480, 7, true, 64, 6, client, vip));
    f.extend_from_slice(&big);
    let out = run(&mut d, T0 + SEC, &f).unwrap();
    assert_eq!((out[34], out[35]), (3, 4), "ICMP destination unreachable, fragmentation needed");
    assert_eq!(u16::from_be_bytes([out[40], out[41]]), 1460);
    // Quoted with the TTL already decremented and its checksum updated
    // (`__ip_vs_get_out_rt_v6` runs `decrement_ttl` before the MTU check;
    // the kernel's frames: conformance matrix g5-mixed).
    assert_eq!(out[42 + 8], 63, "quoted TTL");
    assert!(crate::wire::checksum::verify(&out[42..62], 0), "quoted header checksum");
}

/// IPv6 client, IPv4 real server: `ip_vs_tunnel_xmit` puts the IPv6
/// packet (hop limit − 1) behind an IPv4 header: protocol 41, DF clear,
/// TTL the inner hop limit, TOS the ECN-encapsulated traffic class; the ID
/// (random in Linux) from the model's counter, 0 first.
#[test]
fn ipv6_client_to_ipv4_server_tunnel_byte_exact() {
    let mut d = mixed();
    let (client, vip) = (a("2001:db8:ff::11"), a("2001:db8::30"));
    let seg = udp(client, vip, 5353, 53, b"abc");
    let q = frame(DIR, GW, 0x01, 0x9, 17, 64, client, vip, &seg);
    let mut want = RS_V4.to_vec();
    want.extend_from_slice(&DIR);
    want.extend_from_slice(&[0x08, 0x00]);
    want.extend_from_slice(&ip4(0x01, 20 + 40 + seg.len(), 0, false, 63, 41, [10, 0, 0, 1], [192, 168, 10, 3]));
    want.extend_from_slice(&ip6(0x01, 0x9, seg.len(), 17, 63, client, vip));
    want.extend_from_slice(&seg);
    assert_eq!(run(&mut d, T0, &q).unwrap(), want);
}

/// With `vlan = "balance"`, an 802.1Q-tagged request keeps its tag; the
/// EtherType after the tag becomes the outer header's.
#[test]
fn tagged_ipv6_request_tunnelled_to_an_ipv4_server_keeps_its_tag() {
    let cfg = MIXED_CFG.replace("mtu = 1500\n", "mtu = 1500\nvlan = \"balance\"\n");
    let mut d = Director::new(DirectorConfig::parse(&cfg).unwrap(), &parse_rules(MIXED_RULES).unwrap(), T0).unwrap();
    let (client, vip) = (a("2001:db8:ff::12"), a("2001:db8::30"));
    let seg = udp(client, vip, 5353, 53, b"tagged");
    let untagged = frame(DIR, GW, 0, 0, 17, 64, client, vip, &seg);
    let mut q = untagged[..12].to_vec();
    q.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
    q.extend_from_slice(&untagged[12..]);
    let mut want = RS_V4.to_vec();
    want.extend_from_slice(&DIR);
    want.extend_from_slice(&[0x81, 0x00, 0x00, 0x07, 0x08, 0x00]);
    want.extend_from_slice(&ip4(0, 20 + 40 + seg.len(), 0, false, 63, 41, [10, 0, 0, 1], [192, 168, 10, 3]));
    want.extend_from_slice(&ip6(0, 0, seg.len(), 17, 63, client, vip));
    want.extend_from_slice(&seg);
    assert_eq!(run(&mut d, T0, &q).unwrap(), want);
}

/// Extension headers IPVS walks over (`ipv6_find_hdr`) stay where they are:
/// NAT rewrites the TCP header after them, DR and the errors the director
/// sends carry them as they came.
#[test]
fn extension_headers_before_tcp_are_carried() {
    let mut d = director();
    let (client, vip, rs) = (a("2001:db8:ff::20"), a("2001:db8::10"), a("2001:db8:1::1"));
    // Hop-by-Hop: PadN with 4 zero bytes (6 bytes of padding); then
    // Destination Options: six Pad1.
    let ext = [[60, 0, 1, 4, 0, 0, 0, 0], [6, 0, 0, 0, 0, 0, 0, 0]].concat();
    let syn = frame(DIR, GW, 0, 0, 0, 64, client, vip, &[ext.clone(), tcp(client, vip, 40010, 80, 1, 0, 0x02, b"")].concat());
    let want = frame(RS1, DIR, 0, 0, 0, 63, client, rs, &[ext.clone(), tcp(client, rs, 40010, 8080, 1, 0, 0x02, b"")].concat());
    assert_eq!(run(&mut d, T0, &syn), Ok(want));
    // The reply behind a Routing header (type 0, segments left 0).
    let rh = [6u8, 0, 0, 0, 0, 0, 0, 0];
    let reply = frame(DIR, RS1, 0, 0, 43, 64, rs, client, &[&rh[..], &tcp(rs, client, 8080, 40010, 9, 2, 0x12, b"")].concat());
    let want = frame(GW, DIR, 0, 0, 43, 63, vip, client, &[&rh[..], &tcp(vip, client, 80, 40010, 9, 2, 0x12, b"")].concat());
    assert_eq!(run(&mut d, T0, &reply), Ok(want));
    // DR: only the MACs and the hop limit change.
    let seg = [ext.clone(), tcp(client, vip, 40011, 443, 1, 0, 0x02, b"")].concat();
    let syn = frame(DIR, GW, 0, 0, 0, 64, client, vip, &seg);
    assert_eq!(run(&mut d, T0, &syn), Ok(frame(RS2, DIR, 0, 0, 0, 63, client, vip, &seg)));
}

/// Hop-by-Hop options other than padding (here Router Alert), more than 7
/// bytes of padding in a row (which `ip6_parse_tlv` refuses), and ESP
/// (not an extension header `ipv6_find_hdr` walks over: IPVS has no
/// protocol for it) go to the host stack. (AH is carried: `frag6_tests`.)
#[test]
fn other_extension_headers_go_to_the_host() {
    let mut d = director();
    let (client, vip) = (a("2001:db8:ff::21"), a("2001:db8::10"));
    let seg = tcp(client, vip, 40012, 80, 1, 0, 0x02, b"");
    let host = Err(Action::ToHost(super::HostReason::NonIp));
    let ra = [6, 0, 5, 2, 0, 0, 1, 0];
    assert_eq!(run(&mut d, T0, &frame(DIR, GW, 0, 0, 0, 64, client, vip, &[&ra[..], &seg].concat())), host);
    let pad14 = [6, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(run(&mut d, T0, &frame(DIR, GW, 0, 0, 0, 64, client, vip, &[&pad14[..], &seg].concat())), host);
    let pad_nonzero = [6, 0, 1, 4, 0, 0, 9, 0];
    assert_eq!(run(&mut d, T0, &frame(DIR, GW, 0, 0, 0, 64, client, vip, &[&pad_nonzero[..], &seg].concat())), host);
    let esp = [0, 0, 1, 0, 0, 0, 0, 1];
    assert_eq!(run(&mut d, T0, &frame(DIR, GW, 0, 0, 50, 64, client, vip, &[&esp[..], &seg].concat())), host);
    assert_eq!(d.conns.len(), 0);
}
