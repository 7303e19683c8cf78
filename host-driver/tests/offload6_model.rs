//! IPv6 connections in the card (issue 20, item 3), on the `model`
//! backend, every frame checked byte for byte against the golden model
//! alone (a `Director` with the same rules and configuration):
//!
//! * IPv6 NAT (TCP and UDP) and DR connections are offloaded once they may
//!   no longer be spoofed, as IPv4 ones: a NAT connection takes two IPv6
//!   entries (four slots), a DR one one entry (two slots); their next
//!   frames are forwarded by the card;
//! * expiry reads the IPv6 entries' activity back and takes the pair off
//!   the card; deleting the real server diverts its flows;
//! * ip6ip6 tunnels and IPv4 services tunnelled to IPv6 real servers are
//!   offloaded on a card with `CAPS1.tun6` (the card builds the IPv6 outer
//!   header from its IP6 registers, `[director] ip6`), their frames the
//!   golden model's up to the MTU boundary; without `[director] ip6`,
//!   with a tunnel MTU under 1280, on a card without tun6, and for IPv6
//!   in IPv4, they stay in software with the same frames;
//! * every IPv6 connection on a card built without IPv6 (`CAPS1.ipv6` 0)
//!   stays in software with the same frames;
//! * `replay --backend model` (and `sim`, the verilated RTL) of a capture
//!   mixing IPv4 and IPv6 sessions equals the golden model's, frames,
//!   statistics and listing, on both cards, and on a tiny table both
//!   families contend for.

#[path = "outcome_harness.rs"]
mod outcome;
use lvsnic::device::model::{ModelDevice, MODEL_PARAMS};
use lvsnic::device::rings::RingConfig;
use lvsnic::replay::{run, run_split, Backend};
use lvsnic::slowpath::{FrameResult, SlowPath};
use lvsnic_fixtures::*;
use lvsnic_model::director::Director;
use lvsnic_model::hw::HwParams;
use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::ipvs::DestId;
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::rules::{Protocol, ServiceKey};
use lvsnic_model::stats::Report;
use lvsnic_model::time::{Time, MSEC, SEC};
use lvsnic_model::wire::{MacAddr, TCP_ACK, TCP_FIN, TCP_PSH, TCP_SYN};
use std::net::Ipv6Addr;

/// IPv6 services: NAT (TCP, two servers; UDP), DR, ip6ip6 tunnel, a
/// tunnel to an IPv4 server (IPv6 in IPv4); an IPv4 NAT service and an
/// IPv4 service tunnelled to an IPv6 server (IPv4 in IPv6) beside them.
const RULES6: &str = "\
-A -t [2001:db8::10]:80 -s rr
-a -t [2001:db8::10]:80 -r [2001:db8:1::1]:8080 -m -w 1
-a -t [2001:db8::10]:80 -r [2001:db8:1::2]:8080 -m -w 1
-A -u [2001:db8::10]:53 -s rr
-a -u [2001:db8::10]:53 -r [2001:db8:1::1]:5353 -m -w 1
-A -t [2001:db8::11]:80 -s rr
-a -t [2001:db8::11]:80 -r [2001:db8:1::3]:80 -g -w 1
-A -t [2001:db8::12]:80 -s rr
-a -t [2001:db8::12]:80 -r [2001:db8:1::4]:80 -i -w 1
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1
-A -t 10.0.0.101:80 -s rr
-a -t 10.0.0.101:80 -r [2001:db8:1::5]:80 -i -w 1
-A -t [2001:db8::13]:80 -s rr
-a -t [2001:db8::13]:80 -r 192.168.10.2:80 -i -w 1
";

const NAT_VIP: &str = "2001:db8::10";
const DR_VIP: &str = "2001:db8::11";
const TUN_VIP: &str = "2001:db8::12";
/// IPv6 service tunnelled to an IPv4 real server.
const TUN6IN4_VIP: &str = "2001:db8::13";
/// IPv4 service tunnelled to an IPv6 real server (2001:db8:1::5).
const TUN4IN6_VIP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 0, 0, 101);

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// Real server `n` (IPv6): 2001:db8:1::n.
fn rs6(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, n)
}

fn rs6_mac(n: u16) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0x20, n as u8])
}

/// Client `n`, behind the gateway.
fn client6(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, n)
}

/// `[neighbors]` entries of the IPv6 real servers and the director's IPv6
/// address (for the tunnel), appended to the test network's DIRECTOR.toml.
fn extra6() -> String {
    (1..=5).map(|n| format!("\"{}\" = \"{}\"\n", rs6(n), rs6_mac(n))).collect()
}

fn config6() -> lvsnic_model::config::DirectorConfig {
    let toml = director_toml().replacen("[director]\n", "[director]\nip6 = \"2001:db8::1\"\n", 1) + &extra6();
    lvsnic_model::config::DirectorConfig::parse(&toml).unwrap()
}

/// A UDP/IPv6 frame (hop limit 64), checksum over the pseudo-header.
fn udp6(src_mac: MacAddr, dst_mac: MacAddr, (src, dst): (Ipv6Addr, Ipv6Addr), sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut seg = Vec::with_capacity(len);
    seg.extend_from_slice(&sport.to_be_bytes());
    seg.extend_from_slice(&dport.to_be_bytes());
    seg.extend_from_slice(&(len as u16).to_be_bytes());
    seg.extend_from_slice(&[0, 0]);
    seg.extend_from_slice(payload);
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for ch in b.chunks(2) {
            sum += u32::from(u16::from_be_bytes([ch[0], *ch.get(1).unwrap_or(&0)]));
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&(len as u32).to_be_bytes());
    add(&[0, 0, 0, 17]);
    add(&seg);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = match !(sum as u16) {
        0 => 0xffff,
        c => c,
    };
    seg[6..8].copy_from_slice(&c.to_be_bytes());
    let mut f = Vec::with_capacity(14 + 40 + len);
    f.extend_from_slice(&dst_mac.0);
    f.extend_from_slice(&src_mac.0);
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(len as u16).to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&seg);
    f
}

/// The card under test and the golden model beside it.
struct Pair {
    sp: SlowPath<ModelDevice>,
    golden: Director,
}

impl Pair {
    fn new(params: HwParams) -> Pair {
        Pair::with(params, config6)
    }

    /// The pair with the director configuration `cfg` gives.
    fn with(params: HwParams, cfg: fn() -> lvsnic_model::config::DirectorConfig) -> Pair {
        let rules = parse_rules(RULES6).unwrap();
        let d = Director::new(cfg(), &rules, T0).unwrap();
        let golden = Director::new(cfg(), &rules, T0).unwrap();
        let dev = ModelDevice::model(params, RingConfig::default()).unwrap();
        Pair { sp: SlowPath::new(d, dev, params).unwrap(), golden }
    }

    /// One frame through the card and through the golden model: the same
    /// frames leave.
    fn frame(&mut self, t: Time, f: &[u8]) -> FrameResult {
        let r = self.sp.frame(t, f).unwrap();
        let want = match feed(&mut self.golden, t, f) {
            Out::Tx(v) => v,
            _ => Vec::new(),
        };
        assert_eq!(r.tx, want, "the card's frames differ from the golden model's at t={t}");
        r
    }

    fn slots(&self) -> usize {
        self.sp.flows.table_use().0
    }
}

/// A client's TCP frame to `vip`.
fn from_client(c: (u16, u16), vip: &str, flags: u8, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    tcp6(GATEWAY_MAC, DIRECTOR_MAC, (client6(c.0), a6(vip)), c.1, 80, flags, seq, ack, payload)
}

/// A NAT real server's TCP reply to client `c` (`rs` as the director
/// scheduled it: address and port).
fn from_rs(rs: (Ipv6Addr, u16), c: (u16, u16), flags: u8, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    let n = rs.0.segments()[7];
    tcp6(rs6_mac(n), DIRECTOR_MAC, (rs.0, client6(c.0)), rs.1, c.1, flags, seq, ack, payload)
}

/// The real server the director gave client `c`'s connection to `vip`.
fn server_of(d: &Director, c: (u16, u16), proto: u8, vip: &str, vport: u16) -> (lvsnic_model::conn::ConnId, (Ipv6Addr, u16)) {
    let id = d.conns.in_get6(proto, &client6(c.0), c.1, &a6(vip), vport).expect("connection");
    let std::net::IpAddr::V6(daddr) = d.conns.addrs(id).daddr else { panic!("IPv6 server") };
    (id, (daddr, d.conns.get(id).dport))
}

/// An IPv6 NAT connection: not offloaded before ESTABLISHED, then two
/// IPv6 entries; both ways forwarded by the card, byte for byte the golden
/// model's frames.
fn nat6_session(p: &mut Pair, t: &mut Time, c: (u16, u16)) -> lvsnic_model::conn::ConnId {
    *t += MSEC;
    assert!(!p.frame(*t, &from_client(c, NAT_VIP, TCP_SYN, 100, 0, b"")).in_hardware);
    let (id, rs) = server_of(&p.sp.director, c, 6, NAT_VIP, 80);
    assert!(!p.sp.flows.is_offloaded(id), "SYN_RECV: not offloaded");
    *t += MSEC;
    assert!(!p.frame(*t, &from_rs(rs, c, TCP_SYN | TCP_ACK, 900, 101, b"")).in_hardware);
    *t += MSEC;
    p.frame(*t, &from_client(c, NAT_VIP, TCP_ACK, 101, 901, b""));
    assert!(p.sp.flows.is_offloaded(id), "ESTABLISHED: offloaded");
    *t += MSEC;
    let r = p.frame(*t, &from_client(c, NAT_VIP, TCP_ACK | TCP_PSH, 101, 901, b"GET /"));
    assert!(r.in_hardware, "request by the card");
    assert_eq!(r.tx.len(), 1);
    *t += MSEC;
    let r = p.frame(*t, &from_rs(rs, c, TCP_ACK | TCP_PSH, 901, 106, b"HTTP/1.0 200 OK"));
    assert!(r.in_hardware, "reply by the card");
    assert_eq!(r.tx.len(), 1);
    id
}

#[test]
fn ipv6_nat_and_dr_connections_are_offloaded_and_forwarded_as_the_golden_model_does() {
    let mut p = Pair::new(MODEL_PARAMS);
    let mut t = T0;
    let nat = nat6_session(&mut p, &mut t, (1, 40000));
    assert_eq!((p.sp.flows.len(), p.slots()), (1, 4), "NAT: request and reply IPv6 entries, two slots each");

    // DR: the client's ACK makes it ESTABLISHED; one IPv6 entry.
    let c = (2, 40001);
    t += MSEC;
    p.frame(t, &from_client(c, DR_VIP, TCP_SYN, 100, 0, b""));
    let (dr, _) = server_of(&p.sp.director, c, 6, DR_VIP, 80);
    assert!(!p.sp.flows.is_offloaded(dr));
    t += MSEC;
    p.frame(t, &from_client(c, DR_VIP, TCP_ACK, 101, 901, b""));
    assert!(p.sp.flows.is_offloaded(dr));
    assert_eq!((p.sp.flows.len(), p.slots()), (2, 6), "DR: one IPv6 entry");
    for i in 0..5u32 {
        t += MSEC;
        let r = p.frame(t, &from_client(c, DR_VIP, TCP_ACK | TCP_PSH, 101 + 5 * i, 901, b"GET /"));
        assert!(r.in_hardware, "DR request by the card");
    }

    // UDP NAT: offloaded on the real server's first reply, with the UDP
    // checksum fixed by the action's delta.
    let c = (3, 5000);
    let q = |p: &mut Pair, t: Time| p.frame(t, &udp6(GATEWAY_MAC, DIRECTOR_MAC, (client6(c.0), a6(NAT_VIP)), c.1, 53, b"query"));
    t += MSEC;
    assert!(!q(&mut p, t).in_hardware);
    let (udp, rs) = server_of(&p.sp.director, c, 17, NAT_VIP, 53);
    let answer = udp6(rs6_mac(1), DIRECTOR_MAC, (rs.0, client6(c.0)), rs.1, c.1, b"answer");
    t += MSEC;
    assert!(!p.frame(t, &answer).in_hardware);
    assert!(p.sp.flows.is_offloaded(udp), "a reply seen: offloaded");
    t += MSEC;
    assert!(q(&mut p, t).in_hardware);
    t += MSEC;
    assert!(p.frame(t, &answer).in_hardware);

    // The card's counters are the golden model's statistics.
    p.sp.settle();
    assert_eq!(Report::of(&p.sp.director), Report::of(&p.golden));

    // A FIN goes up (TCP control), the state leaves ESTABLISHED; the flows follow.
    t += MSEC;
    let r = p.frame(t, &from_client((1, 40000), NAT_VIP, TCP_FIN | TCP_ACK, 106, 916, b""));
    assert!(!r.in_hardware);

    // Expiry: once idle, the director expires them from the card's
    // activity, and the IPv6 pairs leave the table.
    t += 1000 * SEC;
    p.sp.advance(t);
    p.golden.advance(t);
    assert_eq!(p.sp.director.conns.len(), p.golden.conns.len());
    assert!(!p.sp.flows.is_offloaded(nat) && !p.sp.flows.is_offloaded(dr) && !p.sp.flows.is_offloaded(udp));
    assert_eq!((p.sp.flows.len(), p.slots()), (0, 0), "expired: the IPv6 pairs left the card");
    // A late frame of the expired DR connection: not the card's.
    t += MSEC;
    assert!(!p.frame(t, &from_client(c, DR_VIP, TCP_ACK, 200, 901, b"late")).in_hardware);
}

#[test]
fn an_ipv6_flow_keeps_its_activity_and_leaves_with_its_deleted_server() {
    let mut p = Pair::new(MODEL_PARAMS);
    let mut t = T0;
    let id = nat6_session(&mut p, &mut t, (7, 41000));
    let rs = server_of(&p.sp.director, (7, 41000), 6, NAT_VIP, 80).1;
    // Busy in the card for longer than the ESTABLISHED timeout (900 s):
    // the director keeps it because it reads the IPv6 entries' activity.
    for i in 0..20u32 {
        t += 60 * SEC;
        let r = p.frame(t, &from_client((7, 41000), NAT_VIP, TCP_ACK | TCP_PSH, 106 + i, 916, b"x"));
        assert!(r.in_hardware, "{i}");
    }
    assert!(p.sp.flows.is_offloaded(id), "active in the card: not expired");
    assert_eq!(p.sp.director.conns.len(), p.golden.conns.len());

    p.sp.settle();
    assert_eq!(Report::of(&p.sp.director), Report::of(&p.golden));

    // `ipvsadm -d` of its server: one action write diverts its flows to
    // the host; they leave the table on the next advance.
    let key = ServiceKey::Addr { proto: Protocol::Tcp, addr: a6(NAT_VIP).into(), port: 80 };
    let dest = DestId(p.sp.director.conns.get(id).dest);
    p.sp.director.del_dest(&key, rs.0, rs.1).unwrap();
    p.golden.del_dest(&key, rs.0, rs.1).unwrap();
    p.sp.flows.drop_dest(&mut p.sp.dp, &mut p.sp.director, dest);
    assert_eq!(p.sp.flows.diverted_pending(), 1);
    t += SEC;
    let r = p.frame(t, &from_client((7, 41000), NAT_VIP, TCP_ACK | TCP_PSH, 200, 916, b"x"));
    assert!(!r.in_hardware, "diverted: the host's");
    assert_eq!((p.sp.flows.len(), p.slots(), p.sp.flows.diverted_pending()), (0, 0, 0));
    p.sp.settle();
    assert_eq!(Report::of(&p.sp.director), Report::of(&p.golden));
}

/// Which tunnel a session uses: ip6ip6 (client `n` to the IPv6 TUN VIP),
/// IPv4 in IPv6 (IPv4 client 198.51.100.n to the IPv4 VIP of the IPv6
/// server), IPv6 in IPv4 (client `n` to the IPv6 VIP of the IPv4 server).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tun {
    Ip6ip6,
    FourIn6,
    SixIn4,
}

/// Client `c`'s TCP frame on tunnel `k`, `payload` bytes.
fn tun_frame(k: Tun, c: (u16, u16), flags: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    match k {
        Tun::Ip6ip6 => from_client(c, TUN_VIP, flags, seq, 901, payload),
        Tun::SixIn4 => from_client(c, TUN6IN4_VIP, flags, seq, 901, payload),
        Tun::FourIn6 => {
            let c4 = std::net::Ipv4Addr::new(198, 51, 100, c.0 as u8);
            tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c4, TUN4IN6_VIP), c.1, 80, flags, seq, 901, payload)
        }
    }
}

/// A tunnelled session: SYN and ACK (ESTABLISHED), then three requests,
/// each frame checked against the golden model ([`Pair::frame`]); returns
/// the connection and how many of the requests the card forwarded.
fn tun_session(p: &mut Pair, t: &mut Time, k: Tun, c: (u16, u16)) -> (lvsnic_model::conn::ConnId, usize) {
    *t += MSEC;
    assert!(!p.frame(*t, &tun_frame(k, c, TCP_SYN, 100, b"")).in_hardware, "{k:?}: SYN by the host");
    let d = &p.sp.director;
    let id = match k {
        Tun::FourIn6 => d.conns.in_get(6, u32::from(std::net::Ipv4Addr::new(198, 51, 100, c.0 as u8)), c.1, u32::from(TUN4IN6_VIP), 80),
        Tun::Ip6ip6 => d.conns.in_get6(6, &client6(c.0), c.1, &a6(TUN_VIP), 80),
        Tun::SixIn4 => d.conns.in_get6(6, &client6(c.0), c.1, &a6(TUN6IN4_VIP), 80),
    }
    .expect("connection");
    *t += MSEC;
    p.frame(*t, &tun_frame(k, c, TCP_ACK, 101, b""));
    let mut by_card = 0;
    for i in 0..3u32 {
        *t += MSEC;
        by_card += usize::from(p.frame(*t, &tun_frame(k, c, TCP_ACK | TCP_PSH, 101 + 5 * i, b"GET /")).in_hardware);
    }
    (id, by_card)
}

#[test]
fn ipv6_tunnels_are_offloaded_on_a_tun6_card_with_the_golden_models_frames() {
    let mut p = Pair::new(MODEL_PARAMS);
    let mut t = T0;
    // ip6ip6: one IPv6 entry (two slots), an IPv6 TUNNEL action.
    let (id6, n) = tun_session(&mut p, &mut t, Tun::Ip6ip6, (4, 42000));
    assert!(p.sp.flows.is_offloaded(id6), "ip6ip6 offloaded");
    assert_eq!((n, p.sp.flows.len(), p.slots()), (3, 1, 2), "ip6ip6: requests by the card");
    // IPv4 in IPv6: one IPv4 entry, an IPv6 TUNNEL action.
    let (id4, n) = tun_session(&mut p, &mut t, Tun::FourIn6, (9, 42001));
    assert!(p.sp.flows.is_offloaded(id4), "IPv4 in IPv6 offloaded");
    assert_eq!((n, p.sp.flows.len(), p.slots()), (3, 2, 3), "4in6: requests by the card");
    // IPv6 in IPv4 stays the host's (the outer IPv4 ID is random).
    let (id64, n) = tun_session(&mut p, &mut t, Tun::SixIn4, (5, 42002));
    assert!(!p.sp.flows.is_offloaded(id64));
    assert_eq!((n, p.sp.flows.len()), (0, 2), "6in4 in software");

    // The MTU boundary (1500): inner + 40 = 1500 by the card, one byte
    // more by the host (ICMP "fragmentation needed" / ICMPv6 packet too
    // big, as the golden model sends).
    for (k, c, hdr) in [(Tun::Ip6ip6, (4, 42000), 40 + 20), (Tun::FourIn6, (9, 42001), 20 + 20)] {
        let fits = vec![0x5a; 1500 - 40 - hdr];
        t += MSEC;
        let r = p.frame(t, &tun_frame(k, c, TCP_ACK | TCP_PSH, 200, &fits));
        assert!(r.in_hardware, "{k:?}: inner + 40 = MTU by the card");
        assert_eq!(r.tx.len(), 1);
        assert_eq!(r.tx[0].len(), 14 + 1500);
        let big = vec![0x5a; 1500 - 40 - hdr + 1];
        t += MSEC;
        let r = p.frame(t, &tun_frame(k, c, TCP_ACK | TCP_PSH, 200, &big));
        assert!(!r.in_hardware, "{k:?}: one byte over, the host's");
        assert_eq!(r.reason, Some(lvsnic_model::hw::Reason::TooBig));
    }

    // The card's counters are the golden model's statistics.
    p.sp.settle();
    assert_eq!(Report::of(&p.sp.director), Report::of(&p.golden));
    // Expiry takes both off the card.
    t += 1000 * SEC;
    p.sp.advance(t);
    p.golden.advance(t);
    assert_eq!(p.sp.director.conns.len(), p.golden.conns.len());
    assert_eq!((p.sp.flows.len(), p.slots()), (0, 0));
}

/// A director without `[director] ip6`: the golden model leaves IPv6
/// tunnels to the host stack.
fn config6_no_ip6() -> lvsnic_model::config::DirectorConfig {
    lvsnic_model::config::DirectorConfig::parse(&(director_toml() + &extra6())).unwrap()
}

/// A 1319-byte link: the tunnel's MTU (1279) is under IPv6's 1280, the
/// kernel refuses the route and the golden model drops.
fn config6_mtu_1319() -> lvsnic_model::config::DirectorConfig {
    let mut c = config6();
    c.mtu = 1319;
    c
}

/// 1320 bytes: the tunnel MTU is 1280 exactly.
fn config6_mtu_1320() -> lvsnic_model::config::DirectorConfig {
    let mut c = config6();
    c.mtu = 1320;
    c
}

#[test]
fn ipv6_tunnels_stay_in_software_without_ip6_tun6_or_a_1280_tunnel_mtu_with_the_same_frames() {
    // No [director] ip6; a tunnel MTU of 1279; a card that reports IPv6
    // but not tun6 (a core built before the field: the driver reads
    // CAPS1.tun6, SlowPath::new); a card without IPv6 (tun6 0 too).
    let old_core = |p: &mut Pair| p.sp.flows.set_card_caps(lvsnic::flows::CardCaps { ipv6: true, tun6: false });
    let no6 = HwParams { ipv6: false, ..MODEL_PARAMS };
    let cases: [(&str, HwParams, fn() -> lvsnic_model::config::DirectorConfig, bool); 4] = [
        ("no [director] ip6", MODEL_PARAMS, config6_no_ip6, false),
        ("tunnel MTU 1279", MODEL_PARAMS, config6_mtu_1319, false),
        ("CAPS1.tun6 0", MODEL_PARAMS, config6, true),
        ("CAPS1.ipv6 0", no6, config6, false),
    ];
    for (what, params, cfg, old) in cases {
        let mut p = Pair::with(params, cfg);
        assert_eq!(p.sp.flows.card_caps(), lvsnic::flows::CardCaps { ipv6: params.ipv6, tun6: params.ipv6 }, "{what}: read from CAPS1");
        if old {
            old_core(&mut p);
        }
        let mut t = T0;
        for (k, c) in [(Tun::Ip6ip6, (4, 42000)), (Tun::FourIn6, (9, 42001))] {
            let (id, n) = tun_session(&mut p, &mut t, k, c);
            assert!(!p.sp.flows.is_offloaded(id), "{what}: {k:?} stays in software");
            assert_eq!(n, 0, "{what}: {k:?} by the host");
        }
        assert_eq!(p.sp.flows.len(), 0, "{what}");
        p.sp.settle();
        assert_eq!(Report::of(&p.sp.director), Report::of(&p.golden), "{what}");
    }
    // A tunnel MTU of exactly 1280 is offloaded.
    let mut p = Pair::with(MODEL_PARAMS, config6_mtu_1320);
    let mut t = T0;
    for (k, c) in [(Tun::Ip6ip6, (4, 42000)), (Tun::FourIn6, (9, 42001))] {
        let (id, n) = tun_session(&mut p, &mut t, k, c);
        assert!(p.sp.flows.is_offloaded(id) && n == 3, "MTU 1320: {k:?} offloaded");
    }
}

#[test]
fn ipv6_on_a_card_without_ipv6_stays_in_software_with_the_same_frames() {
    // A card without IPv6: NAT and DR stay in software, same frames.
    let no6 = HwParams { ipv6: false, ..MODEL_PARAMS };
    let mut p = Pair::new(no6);
    let mut t = T0;
    let c = (5, 43000);
    t += MSEC;
    p.frame(t, &from_client(c, NAT_VIP, TCP_SYN, 100, 0, b""));
    let (id, server) = server_of(&p.sp.director, c, 6, NAT_VIP, 80);
    for f in [
        from_rs(server, c, TCP_SYN | TCP_ACK, 900, 101, b""),
        from_client(c, NAT_VIP, TCP_ACK, 101, 901, b""),
        from_client(c, NAT_VIP, TCP_ACK | TCP_PSH, 101, 901, b"GET /"),
        from_rs(server, c, TCP_ACK | TCP_PSH, 901, 106, b"HTTP/1.0 200 OK"),
    ] {
        t += MSEC;
        let r = p.frame(t, &f);
        assert!(!r.in_hardware);
        assert_eq!(r.tx.len(), 1);
    }
    assert!(!p.sp.flows.is_offloaded(id));
    let c = (6, 43001);
    for flags in [TCP_SYN, TCP_ACK, TCP_ACK | TCP_PSH] {
        t += MSEC;
        let r = p.frame(t, &from_client(c, DR_VIP, flags, 100, 901, b""));
        assert!(!r.in_hardware);
    }
    assert_eq!(p.sp.flows.len(), 0, "no IPv6 connection on a card without IPv6");
    // IPv4 still is offloaded on that card.
    let c4 = (std::net::Ipv4Addr::new(198, 51, 100, 9), 44000);
    let f4 = |flags, seq, ack, pl: &[u8]| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c4.0, VIP), c4.1, 80, flags, seq, ack, pl);
    t += MSEC;
    p.frame(t, &f4(TCP_SYN, 100, 0, b""));
    t += MSEC;
    p.frame(t, &tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), c4.0), 8080, c4.1, TCP_SYN | TCP_ACK, 900, 101, b""));
    t += MSEC;
    p.frame(t, &f4(TCP_ACK, 101, 901, b""));
    assert_eq!(p.sp.flows.len(), 1);
    t += MSEC;
    assert!(p.frame(t, &f4(TCP_ACK | TCP_PSH, 101, 901, b"GET /")).in_hardware);
}

/// A capture of `n` sessions (IPv6 TCP NAT, TCP DR, UDP NAT, and IPv4 TCP
/// NAT; one in five idle past its timeout between two exchanges)
/// interleaved in time.
fn capture6(n: u16) -> Vec<PcapRecord> {
    let rules = parse_rules(RULES6).unwrap();
    // The director that decides which real server answers (rr): the
    // capture's server replies come from it.
    let mut d = Director::new(config6(), &rules, T0).unwrap();
    let mut recs = Vec::new();
    let mut push = |d: &mut Director, t: Time, f: Vec<u8>| {
        let _ = feed(d, t, &f);
        recs.push(PcapRecord { ts_ns: t, orig_len: f.len() as u32, data: f });
    };
    let mut t = T0;
    for i in 0..n {
        let c = (100 + i % 37, 30000 + i);
        let idle = if i % 5 == 4 { 1000 * SEC } else { 0 };
        t += 3 * MSEC;
        match i % 4 {
            0 => {
                push(&mut d, t, from_client(c, NAT_VIP, TCP_SYN, 1, 0, b""));
                let (_, rs) = server_of(&d, c, 6, NAT_VIP, 80);
                push(&mut d, t + 1, from_rs(rs, c, TCP_SYN | TCP_ACK, 500, 2, b""));
                push(&mut d, t + 2, from_client(c, NAT_VIP, TCP_ACK, 2, 501, b""));
                for k in 0..6u32 {
                    let at = t + 3 + u64::from(k) * MSEC + if k == 3 { idle } else { 0 };
                    push(&mut d, at, from_client(c, NAT_VIP, TCP_ACK | TCP_PSH, 2 + k, 501, b"req"));
                    push(&mut d, at + 1, from_rs(rs, c, TCP_ACK | TCP_PSH, 501 + k, 5 + k, b"response"));
                }
            }
            1 => {
                push(&mut d, t, from_client(c, DR_VIP, TCP_SYN, 1, 0, b""));
                for k in 0..8u32 {
                    let at = t + 1 + u64::from(k) * MSEC + if k == 4 { idle } else { 0 };
                    push(&mut d, at, from_client(c, DR_VIP, TCP_ACK | if k > 0 { TCP_PSH } else { 0 }, 2 + k, 501, b"data"));
                }
            }
            3 => {
                let c4 = (std::net::Ipv4Addr::new(198, 51, 100, (c.0 % 200) as u8 + 1), c.1);
                let f4 = |flags, seq, ack, pl: &[u8]| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c4.0, VIP), c4.1, 80, flags, seq, ack, pl);
                let r4 = |flags, seq, ack, pl: &[u8]| tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), c4.0), 8080, c4.1, flags, seq, ack, pl);
                push(&mut d, t, f4(TCP_SYN, 1, 0, b""));
                push(&mut d, t + 1, r4(TCP_SYN | TCP_ACK, 500, 2, b""));
                push(&mut d, t + 2, f4(TCP_ACK, 2, 501, b""));
                for k in 0..6u32 {
                    let at = t + 3 + u64::from(k) * MSEC + if k == 3 { idle } else { 0 };
                    push(&mut d, at, f4(TCP_ACK | TCP_PSH, 2 + k, 501, b"req"));
                    push(&mut d, at + 1, r4(TCP_ACK | TCP_PSH, 501 + k, 5 + k, b"response"));
                }
            }
            _ => {
                let q = udp6(GATEWAY_MAC, DIRECTOR_MAC, (client6(c.0), a6(NAT_VIP)), c.1, 53, b"query");
                push(&mut d, t, q.clone());
                let (_, rs) = server_of(&d, (c.0, c.1), 17, NAT_VIP, 53);
                let a = udp6(rs6_mac(1), DIRECTOR_MAC, (rs.0, client6(c.0)), rs.1, c.1, b"answer");
                for k in 0..5u64 {
                    let at = t + 1 + k * MSEC + if k == 2 { idle } else { 0 };
                    push(&mut d, at, a.clone());
                    push(&mut d, at + 1, q.clone());
                }
            }
        }
    }
    recs.sort_by_key(|r| r.ts_ns);
    recs
}

#[test]
fn replay_of_ipv6_sessions_on_the_model_equals_the_golden_model_with_and_without_ipv6_in_the_card() {
    let rules = parse_rules(RULES6).unwrap();
    let recs = capture6(300);
    let plain = run(Backend::Golden, config6(), &rules, &recs).unwrap();
    let model = run(Backend::Model, config6(), &rules, &recs).unwrap();
    outcome::assert_same(&plain, &model);
    assert!(model.in_hardware as usize > recs.len() / 3, "not vacuous: {} of {} in hardware", model.in_hardware, recs.len());
    if cfg!(feature = "sim") {
        // The verilated RTL core (64 bits) with the same host: its IPv6
        // lookup and egress forward what the model's do.
        let rtl = lvsnic::replay::run_width(Backend::Sim, 64, config6(), &rules, &recs).unwrap();
        outcome::assert_same(&plain, &rtl);
        assert_eq!(rtl.in_hardware, model.in_hardware);
    }

    let no6 = HwParams { ipv6: false, ..MODEL_PARAMS };
    let dev = ModelDevice::model(no6, RingConfig::default()).unwrap();
    let start = recs[0].ts_ns;
    let sp = SlowPath::new(Director::new(config6(), &rules, start).unwrap(), dev, no6).unwrap();
    let soft = run_split(sp, no6, &recs).unwrap();
    outcome::assert_same(&plain, &soft);
    assert!(soft.in_hardware > 0 && soft.in_hardware < model.in_hardware, "IPv4 only: {} of {}", soft.in_hardware, model.in_hardware);
}

/// A flow table of 128 slots for IPv4 and IPv6 connections together:
/// IPv4 insertions move IPv6 pairs and IPv6 ones move IPv4 entries
/// (cuckoo moves keep their activity), idle connections of either family
/// are evicted for active ones, and the frames, statistics and listing
/// stay the golden model's.
#[test]
fn a_tiny_table_shared_by_both_families_still_equals_the_golden_model() {
    let rules = parse_rules(RULES6).unwrap();
    let recs = capture6(400);
    let plain = run(Backend::Golden, config6(), &rules, &recs).unwrap();
    let tiny = HwParams { flow_buckets_log2: 4, ..MODEL_PARAMS };
    let dev = ModelDevice::model(tiny, RingConfig::default()).unwrap();
    let sp = SlowPath::new(Director::new(config6(), &rules, recs[0].ts_ns).unwrap(), dev, tiny).unwrap();
    let out = run_split(sp, tiny, &recs).unwrap();
    outcome::assert_same(&plain, &out);
    eprintln!("{} frames: {} in hardware, {} placements failed, {} evicted", recs.len(), out.in_hardware, out.table_full, out.evicted);
    assert!(out.in_hardware > 0, "some frames in hardware");
    assert!(out.table_full > 0 || out.evicted > 0, "the table was contended: {} full, {} evicted", out.table_full, out.evicted);
}
