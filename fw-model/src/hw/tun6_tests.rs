//! TUNNEL actions with an IPv6 address (docs/hardware.md §3 rows 16 and
//! 19, §4 TUNNEL; `CAPS1.tun6`, `IP6`): the model's frames against the
//! golden director's transmitters, the MTU boundary, the rows that keep
//! such frames the host's, and the registers.

use super::regs::*;
use super::tables::{ActionEntry, ActionOp, Flow6Entry, FlowEntry, FlowKey, FlowKey6};
use super::{Csr, HwOutput, HwParams, HwPipeline, Reason};
use crate::rng::SplitMix64;
use crate::wire::build::{pad_min, tcp6_frame, tcp_frame, udp6_frame, udp_frame};
use crate::wire::{
    EthernetRepr, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, MacAddr, TcpRepr, UdpRepr, ETHERTYPE_IPV4,
    ETHERTYPE_IPV6, TCP_ACK, TCP_PSH,
};
use crate::xmit;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const DIR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const DIR_IP: u32 = 0x0a00_0001;
const DIR_IP6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const RS_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0x10, 5]);

fn params(ipv6: bool) -> HwParams {
    HwParams { flow_buckets_log2: 4, action_log2: 4, ipv6, ..Default::default() }
}

/// A core out of reset given the director's identity (MAC, IP, IP6, MTU
/// 1500), enabled with `pmtu_disc`.
fn core(ipv6: bool) -> HwPipeline {
    let mut hw = HwPipeline::new(params(ipv6));
    for (a, v) in identity_writes(DIR_MAC, DIR_IP, DIR_IP6, 1500) {
        hw.write32(a, v);
    }
    hw.write32(CTRL, CTRL_ENABLE | CTRL_PMTU_DISC);
    hw
}

/// One generated frame: the frame, its flow (IPv4 or IPv6 key) and the
/// inner packet length (IPv4 total length, IPv6 40 + payload length).
struct Gen {
    frame: Vec<u8>,
    key: Key,
    tot: usize,
}

#[derive(Clone, Copy)]
enum Key {
    V4(FlowKey),
    V6(FlowKey6),
}

fn rand6(rng: &mut SplitMix64) -> Ipv6Addr {
    Ipv6Addr::from(u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()))
}

/// A TCP ACK (or PSH ACK) or UDP frame of `family` to the director's MAC
/// with random addresses, ports, TOS/traffic class (ECN CE included),
/// TTL/hop limit ≥ 2 and payload; `pad` bytes after it (Ethernet
/// padding) beyond the 60-byte minimum.
fn gen(rng: &mut SplitMix64, v6: bool, udp: bool, ttl: u8, pad: usize) -> Gen {
    let eth = EthernetRepr { src: MacAddr([2, 0, 0, 0, 0, 9]), dst: DIR_MAC, vlan_tci: None, ethertype: if v6 { ETHERTYPE_IPV6 } else { ETHERTYPE_IPV4 } };
    let payload: Vec<u8> = (0..rng.below(120)).map(|_| rng.next_u64() as u8).collect();
    let (sport, dport) = (1 + rng.below(65535) as u16, 1 + rng.below(65535) as u16);
    let tos = rng.next_u64() as u8;
    let tcp = TcpRepr { src_port: sport, dst_port: dport, seq_number: rng.next_u64() as u32, ack_number: 7, flags: TCP_ACK | if rng.chance(1, 2) { TCP_PSH } else { 0 }, window_len: 512 };
    let u = UdpRepr { src_port: sport, dst_port: dport };
    let proto = if udp { 17 } else { 6 };
    let (mut frame, key) = if v6 {
        let ip = Ipv6Repr {
            src_addr: rand6(rng),
            dst_addr: rand6(rng),
            next_header: IpProtocol::from(proto),
            payload_len: 0,
            hop_limit: ttl,
            traffic_class: tos,
            flow_label: rng.below(1 << 20) as u32,
        };
        let f = if udp { udp6_frame(&eth, &ip, &u, &payload) } else { tcp6_frame(&eth, &ip, &tcp, &payload) };
        (f, Key::V6(FlowKey6 { proto, saddr: ip.src_addr, daddr: ip.dst_addr, sport, dport }))
    } else {
        let ip = Ipv4Repr {
            src_addr: Ipv4Addr::from(rng.next_u64() as u32),
            dst_addr: Ipv4Addr::from(rng.next_u64() as u32),
            protocol: proto,
            payload_len: 0,
            ttl,
            tos,
            ident: rng.next_u64() as u16,
            dont_frag: rng.chance(1, 2),
        };
        let f = if udp { udp_frame(&eth, &ip, &u, &payload) } else { tcp_frame(&eth, &ip, &tcp, &payload) };
        (f, Key::V4(FlowKey { proto, saddr: ip.src_addr.into(), daddr: ip.dst_addr.into(), sport, dport }))
    };
    let tot = frame.len() - 14;
    pad_min(&mut frame);
    frame.extend((0..pad).map(|i| 0xe0 | i as u8));
    Gen { frame, key, tot }
}

/// Installs `key`'s flow (ACK fast path on) pointing at action 1 = `act`.
fn install(hw: &mut HwPipeline, key: Key, act: &ActionEntry) {
    let p = hw.params;
    let mask = (1 << p.flow_buckets_log2) - 1;
    for (a, v) in action_writes(1, &act.to_bits()) {
        hw.write32(a, v);
    }
    let w = match key {
        Key::V4(k) => flow_writes(p.slot_index(0, (k.hashes().0 & mask) as usize, 0), &FlowEntry::new(k, 1, true).to_bits()),
        Key::V6(k) => flow_writes(p.slot_index(0, (k.hashes().0 & mask) as usize, 0), &Flow6Entry::new(k, 1, true).to_bits()),
    };
    for (a, v) in w {
        hw.write32(a, v);
    }
}

fn tunnel(addr: IpAddr) -> ActionEntry {
    ActionEntry { op: ActionOp::Tunnel, host: false, mac: RS_MAC, addr, port: 0, l4_delta: 0 }
}

/// The reason a frame went up with (`None`: forwarded), and whether its
/// metadata says a flow hit.
fn outcome(hw: &mut HwPipeline, f: &[u8]) -> Option<(Reason, bool)> {
    match hw.process(f, 5, 1) {
        HwOutput::Forward { .. } => None,
        HwOutput::ToHost { meta, .. } | HwOutput::Aborted { meta, .. } => Some((meta.reason, meta.hit)),
    }
}

/// The golden director's tunnelled frame, built apart from the model:
/// padding trimmed, TTL/hop limit − 1, [`xmit::ip4in6_encap`] or
/// [`xmit::ip6ip6_encap`] from the director's IPv6 address, the real
/// server's MAC and the director's, EtherType IPv6.
fn golden(g: &Gen, rs: Ipv6Addr) -> Vec<u8> {
    let mut f = g.frame[..14 + g.tot].to_vec();
    match g.key {
        Key::V4(_) => {
            xmit::ip_decrease_ttl(&mut f, 14);
            xmit::ip4in6_encap(&mut f, 14, DIR_IP6, rs);
        }
        Key::V6(_) => {
            xmit::ipv6_decrease_hop_limit(&mut f, 14);
            xmit::ip6ip6_encap(&mut f, 14, DIR_IP6, rs);
        }
    }
    xmit::set_macs(&mut f, RS_MAC, DIR_MAC);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
    f
}

/// Random TCP and UDP frames of both families, any TOS/traffic class
/// (ECN CE included), TTLs and hop limits from 2, padded or not: the
/// forwarded frame is the golden director's byte for byte, and the
/// action counts the inner packet.
#[test]
fn tunnel_into_ipv6_equals_the_golden_transmitters() {
    let mut rng = SplitMix64::new(0x7e56);
    let mut seen = [0usize; 4];
    for i in 0..400 {
        let (v6, udp) = (i % 2 == 1, i / 2 % 2 == 1);
        let ttl = if i % 7 == 0 { 2 } else { 2 + rng.below(254) as u8 };
        let pad = rng.below(9) as usize;
        let g = gen(&mut rng, v6, udp, ttl, pad);
        let rs = rand6(&mut rng);
        let mut hw = core(true);
        install(&mut hw, g.key, &tunnel(IpAddr::V6(rs)));
        let HwOutput::Forward { frame, .. } = hw.process(&g.frame, 5, 1) else { panic!("frame {i} (v6 {v6}, udp {udp}) not forwarded") };
        let want = golden(&g, rs);
        assert_eq!(frame, want, "frame {i} (v6 {v6}, udp {udp}, ttl {ttl})");
        assert_eq!(frame.len(), 14 + 40 + g.tot, "padding removed");
        let outer = Ipv6Packet::new_unchecked(&frame[14..]);
        assert_eq!((outer.src_addr(), outer.dst_addr(), usize::from(outer.payload_len())), (DIR_IP6, rs, g.tot));
        assert_eq!(outer.hop_limit(), ttl - 1);
        assert_ne!(outer.traffic_class() & 3, 3, "CE is not copied out");
        if !v6 {
            assert!(Ipv4Packet::new_unchecked(&frame[54..]).verify_checksum(), "inner checksum recomputed");
        }
        hw.write32(ACT_INDEX, 1);
        hw.write32(ACT_CMD, CMD_READ);
        assert_eq!((hw.read32(ACT_PKTS_LO), hw.read32(ACT_BYTES_LO)), (1, g.tot as u32), "packets +1, bytes += inner length");
        seen[usize::from(v6) * 2 + usize::from(udp)] += 1;
    }
    assert!(seen.iter().all(|&n| n >= 90), "every family and protocol: {seen:?}");
}

/// Row 19 with a 40-byte outer header: inner length + 40 = MTU is
/// forwarded, one byte more goes up as `TOO_BIG`; an IPv4 outer header
/// still adds 20.
#[test]
fn too_big_counts_the_ipv6_outer_header() {
    let mut rng = SplitMix64::new(19);
    for v6 in [false, true] {
        let g = gen(&mut rng, v6, false, 64, 0);
        let rs = rand6(&mut rng);
        let mut hw = core(true);
        install(&mut hw, g.key, &tunnel(IpAddr::V6(rs)));
        hw.write32(MTU, (g.tot + 40) as u32);
        assert_eq!(outcome(&mut hw, &g.frame), None, "v6 {v6}: tot + 40 = MTU fits");
        hw.write32(MTU, (g.tot + 39) as u32);
        assert_eq!(outcome(&mut hw, &g.frame), Some((Reason::TooBig, true)), "v6 {v6}: tot + 40 = MTU + 1");
    }
    let g = gen(&mut rng, false, true, 64, 0);
    let mut hw = core(true);
    install(&mut hw, g.key, &tunnel(IpAddr::V4(Ipv4Addr::new(192, 168, 10, 1))));
    hw.write32(MTU, (g.tot + 20) as u32);
    assert_eq!(outcome(&mut hw, &g.frame), None, "IPIP: tot + 20 = MTU fits");
    hw.write32(MTU, (g.tot + 19) as u32);
    assert_eq!(outcome(&mut hw, &g.frame), Some((Reason::TooBig, true)));
}

/// Row 16: an IPv6 frame on a TUNNEL into IPv4 stays the host's (the
/// kernel's outer ID is random), and so do ROUTE and NAT actions of the
/// other family; an IPv4 frame on IPIP is forwarded as before.
#[test]
fn ipv6_in_ipv4_and_cross_family_rewrites_are_the_hosts() {
    let mut rng = SplitMix64::new(16);
    let rs4 = Ipv4Addr::new(192, 168, 10, 1);
    let g6 = gen(&mut rng, true, false, 64, 0);
    let mut hw = core(true);
    install(&mut hw, g6.key, &tunnel(IpAddr::V4(rs4)));
    assert_eq!(outcome(&mut hw, &g6.frame), Some((Reason::ActionHost, true)), "IPv6 in IPv4");
    let g4 = gen(&mut rng, false, false, 64, 0);
    for op in [ActionOp::Route, ActionOp::NatDnat, ActionOp::NatSnat] {
        let mut hw = core(true);
        install(&mut hw, g4.key, &ActionEntry { op, addr: IpAddr::V6(DIR_IP6), ..tunnel(IpAddr::V6(DIR_IP6)) });
        assert_eq!(outcome(&mut hw, &g4.frame), Some((Reason::ActionHost, true)), "{op:?} into IPv6");
    }
    let mut hw = core(true);
    install(&mut hw, g4.key, &tunnel(IpAddr::V4(rs4)));
    let HwOutput::Forward { frame, .. } = hw.process(&g4.frame, 5, 1) else { panic!("IPIP not forwarded") };
    assert_eq!((u16::from_be_bytes([frame[12], frame[13]]), frame[14 + 9]), (ETHERTYPE_IPV4, 4), "IPIP: IPv4 outer header");
}

/// `IP6[0..4]` read back what was written; `CAPS1.tun6` is set.
#[test]
fn ip6_registers_read_back_on_a_tun6_core() {
    let mut hw = HwPipeline::new(params(true));
    assert_eq!((0..4).map(|i| hw.read32(IP6_BASE + 4 * i)).collect::<Vec<_>>(), [0; 4], "reset 0");
    let a: Ipv6Addr = "2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff".parse().unwrap();
    for (r, v) in identity_writes(DIR_MAC, DIR_IP, a, 1500) {
        hw.write32(r, v);
    }
    assert_eq!((0..4).map(|i| hw.read32(IP6_BASE + 4 * i)).collect::<Vec<_>>(), [0x2001_0db8, 0xaaaa_bbbb, 0xcccc_dddd, 0xeeee_ffff]);
    hw.write32(IP6_BASE + 8, 0x1234_5678);
    assert_eq!(hw.read32(IP6_BASE + 8), 0x1234_5678);
    assert_eq!(hw.read32(CAPS1) >> 25 & 1, 1, "CAPS1.tun6");
    assert!(hw.state_writes().contains(&(IP6_BASE + 8, 0x1234_5678)), "the state's writes carry IP6");
}

/// A core built without `IPV6`: `CAPS1.tun6` 0, `IP6` reads 0 and ignores
/// writes, and an IPv4 frame on a TUNNEL into IPv6 goes up as
/// `ACTION_HOST` (IPIP is still forwarded).
#[test]
fn without_ipv6_the_core_has_no_ipv6_tunnels() {
    let mut rng = SplitMix64::new(25);
    let mut hw = core(false);
    assert_eq!(hw.read32(CAPS1) >> 24 & 3, 0, "ipv6 and tun6 clear");
    hw.write32(IP6_BASE, 0x2001_0db8);
    assert_eq!((0..4).map(|i| hw.read32(IP6_BASE + 4 * i)).collect::<Vec<_>>(), [0; 4], "writes ignored");
    let g = gen(&mut rng, false, false, 64, 0);
    install(&mut hw, g.key, &tunnel(IpAddr::V6(rand6(&mut rng))));
    assert_eq!(outcome(&mut hw, &g.frame), Some((Reason::ActionHost, true)));
    install(&mut hw, g.key, &tunnel(IpAddr::V4(Ipv4Addr::new(192, 168, 10, 1))));
    assert_eq!(outcome(&mut hw, &g.frame), None, "IPIP");
}
