//! The traffic generator with IPv6 services: IPv6 sessions beside the IPv4
//! ones, their checksums (verified here by an independent pseudo-header
//! sum), the connections a fresh golden model makes of them, and the
//! malformed IPv6 frames.

use lvsnic_model::config::DirectorConfig;
use lvsnic_model::conn::ConnAddrs;
use lvsnic_model::director::{Director, DropReason, HostReason};
use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::rules::{FwdMethod, Protocol, RuleSet};
use lvsnic_model::wire::{parse_frame, FrameError, IpProtocol, TCP_ACK, TCP_SYN};
use lvsnic_traffic::*;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::OnceLock;

const DIRECTOR: &str = r#"
[director]
ip = "10.0.0.1"
ip6 = "2001:db8::1"
mac = "02:00:00:00:00:01"
gateway_mac = "02:00:00:00:00:fe"
[neighbors]
"192.168.10.1" = "02:00:00:00:10:01"
"2001:db8:a::5" = "02:00:00:00:a0:05"
"2001:db8:a::6" = "02:00:00:00:a0:06"
"2001:db8:b::7" = "02:00:00:00:b0:07"
"2001:db8:b::8" = "02:00:00:00:b0:08"
"#;

/// An IPv4 NAT service, IPv6 NAT (TCP and UDP), DR and TUN services.
const RULES: &str = "\
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1
-A -t [2001:db8::10]:80 -s rr
-a -t [2001:db8::10]:80 -r [2001:db8:a::5]:8080 -m -w 1
-a -t [2001:db8::10]:80 -r [2001:db8:a::6]:8080 -m -w 1
-A -u [2001:db8::10]:53 -s rr
-a -u [2001:db8::10]:53 -r [2001:db8:a::5]:53 -m -w 1
-A -t [2001:db8::11]:80 -s rr
-a -t [2001:db8::11]:80 -r [2001:db8:b::7]:80 -g -w 1
-A -t [2001:db8::12]:80 -s rr
-a -t [2001:db8::12]:80 -r [2001:db8:b::8]:80 -i -w 1
";

fn cfg() -> DirectorConfig {
    DirectorConfig::parse(DIRECTOR).unwrap()
}

fn rules() -> RuleSet {
    parse_rules(RULES).unwrap()
}

fn spec() -> TrafficSpec {
    // Enough malformed frames for every IPv6 kind to come up.
    TrafficSpec { seed: 11, connections: 300, clients: 40, malformed_fraction: 0.03, ..TrafficSpec::default() }
}

fn capture() -> &'static Capture {
    static CAP: OnceLock<Capture> = OnceLock::new();
    CAP.get_or_init(|| generate_capture(&spec(), &cfg(), &rules()).unwrap())
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn vips() -> BTreeSet<Ipv6Addr> {
    ["2001:db8::10", "2001:db8::11", "2001:db8::12"].into_iter().map(v6).collect()
}

/// In 2001:db8:c::/64, the generator's client prefix.
fn is_client6(a: Ipv6Addr) -> bool {
    a.segments()[..4] == [0x2001, 0xdb8, 0xc, 0]
}

/// The TCP or UDP checksum of an IPv6 packet verified from scratch: the
/// RFC 8200 section 8.1 pseudo-header (source, destination, 32-bit
/// upper-layer length, three zero bytes, next header) and the segment,
/// summed in 16-bit one's complement.
fn l4_checksum_ok_v6(src: Ipv6Addr, dst: Ipv6Addr, next: u8, seg: &[u8]) -> bool {
    let mut bytes = Vec::with_capacity(40 + seg.len() + 1);
    bytes.extend_from_slice(&src.octets());
    bytes.extend_from_slice(&dst.octets());
    bytes.extend_from_slice(&(seg.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&[0, 0, 0, next]);
    bytes.extend_from_slice(seg);
    if bytes.len() % 2 == 1 {
        bytes.push(0);
    }
    let mut sum: u64 = bytes.chunks(2).map(|w| u64::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let stored = u16::from_be_bytes([seg[if next == 6 { 16 } else { 6 }], seg[if next == 6 { 17 } else { 7 }]]);
    // IPv6 UDP must carry a checksum (RFC 8200 section 8.1); a TCP
    // checksum may come out as 0.
    sum == 0xffff && (next != 17 || stored != 0)
}

/// What a fresh director did with one frame: the outcome, for a forwarded
/// frame the addresses of the connection it used, and the frame as sent.
type Replayed = (Outcome, Option<ConnAddrs>, Vec<u8>);

/// Replays `records` through a fresh director, frame by frame.
fn replay(records: &[PcapRecord], rules: &RuleSet) -> (Vec<Replayed>, Director) {
    let mut d = Director::new(cfg(), rules, records.first().map_or(0, |r| r.ts_ns)).unwrap();
    let mut extra = Vec::new();
    let out = records
        .iter()
        .map(|r| {
            let mut f = r.data.clone();
            extra.clear();
            let o = Outcome::of(&mut d, r.ts_ns, &mut f, &mut extra);
            let addrs = (o == Outcome::Forwarded).then(|| d.last_conn.map(|id| d.conns.addrs(id))).flatten();
            (o, addrs, f)
        })
        .collect();
    (out, d)
}

#[test]
fn ipv6_services_get_ipv6_sessions_beside_the_ipv4_ones() {
    let cap = capture();
    let c = &cap.counts;
    assert_eq!(c.connections, 300);
    assert!(c.ipv6_sessions > 150 && c.ipv6_sessions < 300, "{} IPv6 sessions of 300", c.ipv6_sessions);
    assert!(c.ipv6_frames > 1000, "{} IPv6 frames", c.ipv6_frames);
    // Every IPv6 service has sessions, and every forwarding method served.
    let mut per_service: BTreeMap<String, u64> = BTreeMap::new();
    let mut methods = BTreeSet::new();
    let mut icmp6_errors = 0;
    for s in &cap.sessions {
        *per_service.entry(s.service.to_string()).or_default() += 1;
        assert_eq!(s.client.is_ipv6(), s.service.is_ipv6(), "{s:?}");
        if let IpAddr::V6(a) = s.client.ip() {
            assert!(is_client6(a), "client {}", s.client);
            match s.forwarding {
                Some(FwdMethod::Masq) => methods.insert("nat"),
                Some(FwdMethod::Route) => methods.insert("dr"),
                Some(FwdMethod::Tunnel { .. }) => methods.insert("tun"),
                Some(f) => panic!("{f:?}: {s:?}"),
                None => false,
            };
            // What IPv6 has not: IPv4 options, DF, zero checksums.
            assert!(!s.ip_options && !s.zero_checksum, "{s:?}");
            if s.client_icmp_error {
                icmp6_errors += 1;
            }
            assert!(!matches!(s.end, SessionEnd::Open | SessionEnd::Lost | SessionEnd::GaveUp), "{s:?}");
        }
    }
    // UDP sessions ending with the client's ICMPv6 port unreachable.
    assert!(icmp6_errors > 0, "no IPv6 session ends with an ICMPv6 error");
    for svc in ["[2001:db8::10]:80", "[2001:db8::10]:53", "[2001:db8::11]:80", "[2001:db8::12]:80", "10.0.0.100:80"] {
        assert!(per_service.get(svc).copied().unwrap_or(0) > 10, "{svc}: {per_service:?}");
    }
    assert_eq!(methods, BTreeSet::from(["dr", "nat", "tun"]));
    assert!(cap.sessions.iter().any(|s| s.protocol == Protocol::Udp && s.service.is_ipv6()));

    // The capture holds IPv6 SYNs from the clients to the VIPs, and the NAT
    // real servers' SYN-ACKs from their own addresses and MACs.
    let cfg = cfg();
    let (mut syns, mut synacks) = (0, 0);
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        let f = &r.data;
        let info = parse_frame(f);
        let (Some(ip), Some(l4)) = (info.ipv6, info.l4) else { continue };
        if t.category.is_malformed() || ip.upper.map(|u| u.protocol) != Some(IpProtocol::Tcp) {
            continue;
        }
        if l4.tcp_flags == TCP_SYN && t.category == Category::TcpClient {
            assert!(is_client6(ip.src) && vips().contains(&ip.dst), "{} -> {}", ip.src, ip.dst);
            assert_eq!(&f[6..12], &cfg.gateway_mac.unwrap().0);
            assert_eq!(&f[0..6], &cfg.mac.0);
            syns += 1;
        }
        if l4.tcp_flags == TCP_SYN | TCP_ACK && t.category == Category::TcpServer {
            assert!(is_client6(ip.dst), "{}", ip.dst);
            assert_eq!(&f[6..12], &cfg.neighbors6[&ip.src].0, "server {}", ip.src);
            assert_eq!(l4.src_port, 8080);
            synacks += 1;
        }
    }
    assert!(syns > 100 && synacks > 30, "{syns} SYNs, {synacks} SYN-ACKs");
    // Path MTU discovery off the IPv6 tunnel service (ICMPv6 packet too big).
    assert!(c.pmtu_reductions > 0);
}

#[test]
fn every_ipv6_tcp_and_udp_frame_has_a_valid_checksum() {
    let cap = capture();
    let mut checked = BTreeMap::new();
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        if t.category.is_malformed() {
            continue;
        }
        let f = &r.data;
        let info = parse_frame(f);
        let Some(ip) = info.ipv6 else { continue };
        assert_eq!(info.error, None, "{:?}: {f:02x?}", t.category);
        // Full-size segments fit the 1500-byte MTU (MSS 1440).
        assert!(f.len() <= 1514, "{:?}: {} bytes", t.category, f.len());
        let up = ip.upper.unwrap();
        let next = u8::from(up.protocol);
        if t.category == Category::ServerIcmpError {
            // A NAT real server's port unreachable to the client, quoting
            // the query as the director forwarded it (to the server).
            let msg = &f[ip.l3_offset + 40..ip.l3_offset + 40 + ip.payload_len as usize];
            assert_eq!((next, msg[0], msg[1]), (58, 1, 4), "{f:02x?}");
            assert!(l4_checksum_ok_v6(ip.src, ip.dst, 58, msg), "bad ICMPv6 checksum {f:02x?}");
            let q = &msg[8..];
            assert!(q[0] >> 4 == 6 && q[6] == 17, "{f:02x?}");
            assert_eq!((&q[8..24], &q[24..40]), (&ip.dst.octets()[..], &ip.src.octets()[..]), "{f:02x?}");
            *checked.entry((t.category, next)).or_insert(0u32) += 1;
            continue;
        }
        if t.category == Category::ClientIcmpError {
            // ICMPv6 destination unreachable, port unreachable (RFC 4443),
            // valid checksum, quoting the VIP's datagram to this client
            // within 1280 bytes.
            let msg = &f[ip.l3_offset + 40..ip.l3_offset + 40 + ip.payload_len as usize];
            assert_eq!((next, msg[0], msg[1]), (58, 1, 4), "{f:02x?}");
            assert!(l4_checksum_ok_v6(ip.src, ip.dst, 58, msg), "bad ICMPv6 checksum {f:02x?}");
            let q = &msg[8..];
            assert!(40 + msg.len() <= 1280 && q[0] >> 4 == 6 && q[6] == 17, "{f:02x?}");
            assert_eq!((&q[8..24], &q[24..40]), (&ip.dst.octets()[..], &ip.src.octets()[..]), "{f:02x?}");
            *checked.entry((t.category, next)).or_insert(0u32) += 1;
            continue;
        }
        if next != 6 && next != 17 {
            continue;
        }
        // No extension headers: the segment is the whole payload.
        assert_eq!(up.offset, 40);
        let seg = &f[ip.l3_offset + 40..ip.l3_offset + 40 + ip.payload_len as usize];
        assert!(l4_checksum_ok_v6(ip.src, ip.dst, next, seg), "{:?}: bad checksum {f:02x?}", t.category);
        *checked.entry((t.category, next)).or_insert(0u32) += 1;
    }
    for k in [
        (Category::TcpClient, 6),
        (Category::TcpServer, 6),
        (Category::UdpClient, 17),
        (Category::UdpServer, 17),
        (Category::HopLimit1, 6),
        (Category::ClientIcmpError, 58),
        (Category::ServerIcmpError, 58),
    ] {
        assert!(checked.get(&k).copied().unwrap_or(0) > 0, "no {k:?} checked: {checked:?}");
    }
}

#[test]
fn a_fresh_golden_model_makes_ipv6_connections_to_the_real_servers() {
    let cap = capture();
    let (out, d) = replay(&cap.records, &rules());
    let real = ["2001:db8:a::5", "2001:db8:a::6", "2001:db8:b::7", "2001:db8:b::8"].map(|a| IpAddr::V6(v6(a)));
    let mut to_server: BTreeMap<IpAddr, u64> = BTreeMap::new();
    for (i, ((o, addrs, sent), t)) in out.iter().zip(&cap.tags).enumerate() {
        assert_eq!(*o, t.outcome, "frame {i} ({:?})", t.category);
        let Some(s) = t.session else { continue };
        let s = &cap.sessions[s as usize];
        if !s.service.is_ipv6() || *o != Outcome::Forwarded {
            continue;
        }
        let a = addrs.unwrap_or_else(|| panic!("frame {i}: forwarded without a connection"));
        assert_eq!((a.caddr, a.vaddr), (s.client.ip(), s.service.ip()), "frame {i}");
        assert!(real.contains(&a.daddr), "frame {i}: to {}", a.daddr);
        assert_eq!(Some(a.daddr), s.real_server.map(|r| r.ip()), "frame {i}");
        let sent = parse_frame(sent);
        match (s.forwarding, t.category) {
            // NAT requests (and the client's ICMPv6 error about a reply)
            // go to the real server, replies to the client from the VIP.
            (Some(FwdMethod::Masq), Category::TcpClient | Category::UdpClient | Category::ClientIcmpError) => {
                assert_eq!(IpAddr::V6(sent.ipv6.unwrap().dst), a.daddr, "frame {i}");
            }
            (Some(FwdMethod::Masq), _) => {
                let ip = sent.ipv6.unwrap();
                assert_eq!((IpAddr::V6(ip.src), IpAddr::V6(ip.dst)), (a.vaddr, a.caddr), "frame {i}");
            }
            // DR: the same packet to the server's MAC; TUN: inside ip6ip6.
            (Some(FwdMethod::Route), _) => assert_eq!(IpAddr::V6(sent.ipv6.unwrap().dst), a.vaddr),
            (Some(FwdMethod::Tunnel { .. }), _) => assert_eq!(IpAddr::V6(sent.ipv6.unwrap().dst), a.daddr),
            (f, c) => panic!("frame {i}: {f:?} {c:?}"),
        }
        *to_server.entry(a.daddr).or_default() += 1;
    }
    for a in real {
        assert!(to_server.get(&a).copied().unwrap_or(0) > 20, "{a}: {to_server:?}");
    }
    // The generator's director and the fresh one agree.
    let g = &cap.counts.director;
    let f = &d.counters;
    assert_eq!((g.frames_in, g.frames_tx, g.conns_created), (f.frames_in, f.frames_tx, f.conns_created));
    assert_eq!((g.host, g.drop, &g.icmp_sent), (f.host, f.drop, &f.icmp_sent));
}

#[test]
fn malformed_ipv6_frames_are_there_and_the_model_does_not_take_them() {
    let cap = capture();
    let mut seen: BTreeMap<Category, u64> = BTreeMap::new();
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        let c = t.category;
        if !c.is_ipv6() {
            continue;
        }
        *seen.entry(c).or_default() += 1;
        let f = &r.data;
        let info = parse_frame(f);
        assert_eq!(u16::from_be_bytes([f[12], f[13]]), 0x86dd, "{c:?}");
        let expect_err = match c {
            Category::MalformedTruncatedIpv6 => Some(FrameError::Ipv6Truncated),
            Category::MalformedIpv6PayloadLength => Some(FrameError::Ipv6PayloadLenExceedsFrame),
            Category::MalformedIpv6ShortPayload => Some(FrameError::L4Truncated),
            Category::MalformedIpv6HopByHop => Some(FrameError::Ipv6BadExtHeader),
            _ => None,
        };
        assert_eq!(info.error, expect_err, "{c:?}: {f:02x?}");
        match c {
            Category::MalformedIpv6UnknownNext => {
                let up = info.ipv6.unwrap().upper.unwrap();
                assert!(matches!(up.protocol, IpProtocol::Unknown(146..=252)), "{up:?}");
                assert_eq!(up.offset, 48, "after one Destination Options header");
            }
            Category::HopLimit1 => {
                let ip = info.ipv6.unwrap();
                assert_eq!(ip.hop_limit, 1);
                assert!(vips().contains(&ip.dst) && is_client6(ip.src), "{} -> {}", ip.src, ip.dst);
            }
            _ => {}
        }
        // What the golden model does with them: hop limit 1 is answered
        // with ICMPv6 time exceeded (or dropped by its rate limit); the rest
        // go to the host stack, which IPVS does not see them past.
        if c == Category::HopLimit1 {
            let ttl = DropReason::TtlExceeded;
            assert!(matches!(t.outcome, Outcome::IcmpError(r) | Outcome::Dropped(r) if r == ttl), "{:?}", t.outcome);
        } else {
            assert_eq!(t.outcome, Outcome::ToHost(HostReason::NonIp), "{c:?}");
        }
    }
    for &c in Category::ALL.iter().filter(|c| c.is_ipv6()) {
        assert!(seen.get(&c).copied().unwrap_or(0) > 0, "no {c:?}: {seen:?}");
    }
    // Counted by a fresh director as the generator's saw them.
    let (out, d) = replay(&cap.records, &rules());
    let n = |c| cap.counts.category(c);
    let ttl = DropReason::TtlExceeded;
    let is_ttl = |o: &Outcome| matches!(o, Outcome::IcmpError(r) | Outcome::Dropped(r) if *r == ttl);
    let exceeded = out.iter().filter(|o| is_ttl(&o.0)).count();
    assert_eq!(exceeded as u64, n(Category::HopLimit1) + n(Category::Ttl1));
    assert_eq!(d.counters.drop[ttl as usize], exceeded as u64);
    let non_ip = d.counters.host[HostReason::NonIp as usize];
    let malformed6: u64 = Category::ALL.iter().filter(|c| c.is_ipv6() && c.is_malformed()).map(|&c| n(c)).sum();
    assert_eq!(non_ip, malformed6 + n(Category::Ipv6) + n(Category::OtherEthertype));
}

#[test]
fn same_seed_same_bytes_and_ipv4_only_rules_get_no_ipv6() {
    let a = generate(&spec(), &cfg(), &rules()).unwrap();
    assert_eq!(a, capture().records);
    // IPv6-only rules: sessions all IPv6, no IPv4 VIP probes.
    let only6 = parse_rules(&RULES.lines().skip(2).collect::<Vec<_>>().join("\n")).unwrap();
    let cap = generate_capture(&TrafficSpec { connections: 60, ..spec() }, &cfg(), &only6).unwrap();
    assert_eq!(cap.counts.ipv6_sessions, 60);
    for c in [Category::ArpVip, Category::IcmpEchoVip, Category::Ttl1, Category::Fragment, Category::IpOptions] {
        assert_eq!(cap.counts.category(c), 0, "{c:?}");
    }
    let (out, _) = replay(&cap.records, &only6);
    for ((o, _, _), t) in out.iter().zip(&cap.tags) {
        assert_eq!(*o, t.outcome);
    }
}

#[test]
fn established_ipv6_flows_are_established() {
    let spec = FlowSpec { flows: 120, packets: 3000, clients: 16, udp_fraction: 0.25, ..FlowSpec::default() };
    let recs = established_flows(&spec, &cfg(), &rules()).unwrap();
    assert_eq!(recs, established_flows(&spec, &cfg(), &rules()).unwrap());
    let (out, d) = replay(&recs, &rules());
    assert!(out.iter().all(|o| o.0 == Outcome::Forwarded), "{:?}", out.iter().find(|o| o.0 != Outcome::Forwarded));
    assert_eq!(d.counters.conns_created - d.counters.templates_created, 120);
    // Data frames, patched from templates, keep valid checksums and
    // consistent numbers: a sender's sequence grows by the payload.
    let mut last: BTreeMap<(IpAddr, u16, IpAddr, u16), u32> = BTreeMap::new();
    let (mut v6_frames, mut v6_replies) = (0, 0);
    for r in &recs[recs.len() - 3000..] {
        let f = &r.data;
        let info = parse_frame(f);
        assert_eq!(info.error, None);
        let Some(ip) = info.ipv6 else { continue };
        v6_frames += 1;
        let next = u8::from(ip.upper.unwrap().protocol);
        let seg = &f[ip.l3_offset + 40..ip.l3_offset + 40 + ip.payload_len as usize];
        assert!(l4_checksum_ok_v6(ip.src, ip.dst, next, seg), "bad checksum {f:02x?}");
        v6_replies += !is_client6(ip.src) as u32;
        if next == 6 {
            let l4 = info.l4.unwrap();
            let seq = u32::from_be_bytes(seg[4..8].try_into().unwrap());
            assert_eq!(seg.len() - l4.l4_header_len, 512);
            let key = (IpAddr::V6(ip.src), l4.src_port, IpAddr::V6(ip.dst), l4.dst_port);
            if let Some(prev) = last.insert(key, seq) {
                assert_eq!(seq, prev.wrapping_add(512));
            }
        }
    }
    assert!(v6_frames > 1500 && v6_replies > 300, "{v6_frames} IPv6 data frames, {v6_replies} NAT replies");
    let e = established_flows(&FlowSpec { payload_len: 1450, ..spec }, &cfg(), &rules()).unwrap_err();
    assert!(e.to_string().contains("exceeds the IPv6 MSS (1440)"), "{e}");
}
