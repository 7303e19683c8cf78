//! The traffic generator: determinism, well-formedness, the mix, and what a
//! fresh director does with every frame.

use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::{Director, DropReason, HostReason};
use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::rules::{FwdMethod, Protocol, RuleSet};
use lvsnic_model::time::SEC;
use lvsnic_traffic::*;
use lvsnic_model::wire::{
    IpProtocol,
    parse_frame, FrameError, Icmpv4Packet, Ipv4Packet, TcpPacket, UdpPacket, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP,
    TCP_FIN, TCP_SYN,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::OnceLock;

const DIRECTOR: &str = r#"
[director]
ip = "10.0.0.1"
mac = "02:00:00:00:00:01"
gateway_mac = "02:00:00:00:00:fe"
[neighbors]
"192.168.10.1" = "02:00:00:00:10:01"
"192.168.10.2" = "02:00:00:00:10:02"
"192.168.10.3" = "02:00:00:00:10:03"
"192.168.10.4" = "02:00:00:00:10:04"
"192.168.20.5" = "02:00:00:00:20:05"
"192.168.20.6" = "02:00:00:00:20:06"
"#;

/// NAT, persistent NAT, DR, TUN, UDP NAT and UDP DR services.
const RULES: &str = "\
-A -t 10.0.0.100:80 -s wlc
-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1
-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 2
-A -t 10.0.0.100:443 -s rr -p 300
-a -t 10.0.0.100:443 -r 192.168.10.1:443 -m -w 1
-a -t 10.0.0.100:443 -r 192.168.10.2:443 -m -w 1
-A -t 10.0.0.101:80 -s rr
-a -t 10.0.0.101:80 -r 192.168.10.3:80 -g -w 1
-a -t 10.0.0.101:80 -r 192.168.10.4:80 -g -w 1
-A -t 10.0.0.102:80 -s sh
-a -t 10.0.0.102:80 -r 192.168.20.5:80 -i -w 1
-a -t 10.0.0.102:80 -r 192.168.20.6:80 -i -w 1
-A -u 10.0.0.100:53 -s rr
-a -u 10.0.0.100:53 -r 192.168.10.1:53 -m -w 1
-a -u 10.0.0.100:53 -r 192.168.10.2:53 -m -w 1
-A -u 10.0.0.101:53 -s rr
-a -u 10.0.0.101:53 -r 192.168.10.3:53 -g -w 1
";

fn cfg() -> DirectorConfig {
    DirectorConfig::parse(DIRECTOR).unwrap()
}

fn rules() -> RuleSet {
    parse_rules(RULES).unwrap()
}

fn moderate() -> TrafficSpec {
    TrafficSpec { seed: 7, connections: 300, clients: 40, ..TrafficSpec::default() }
}

/// The moderate capture, generated once for the tests that only read it.
fn capture() -> &'static Capture {
    static CAP: OnceLock<Capture> = OnceLock::new();
    CAP.get_or_init(|| generate_capture(&moderate(), &cfg(), &rules()).unwrap())
}

/// Replays `records` through a fresh director, frame by frame.
fn replay(records: &[PcapRecord]) -> (Vec<Outcome>, Director) {
    let mut d = Director::new(cfg(), &rules(), records.first().map_or(0, |r| r.ts_ns)).unwrap();
    let mut extra = Vec::new();
    let out = records
        .iter()
        .map(|r| {
            let mut f = r.data.clone();
            extra.clear();
            Outcome::of(&mut d, r.ts_ns, &mut f, &mut extra)
        })
        .collect();
    (out, d)
}

#[test]
fn outcome_classification_relies_on_reason_order() {
    // `Outcome::of` maps the director's drop counter index back to the reason.
    for (i, r) in DropReason::ALL.iter().enumerate() {
        assert_eq!(*r as usize, i);
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = generate(&moderate(), &cfg(), &rules()).unwrap();
    let b = generate(&moderate(), &cfg(), &rules()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, capture().records);
    let c = generate(&TrafficSpec { seed: 8, ..moderate() }, &cfg(), &rules()).unwrap();
    assert_ne!(a, c);
    // Byte-identical through the pcap writer too.
    let dir = std::env::temp_dir().join(format!("lvsnic-traffic-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (p, q) = (dir.join("a.pcap"), dir.join("b.pcap"));
    lvsnic_model::pcap::write_file(&p, lvsnic_model::pcap::Resolution::Nano, a.iter()).unwrap();
    lvsnic_model::pcap::write_file(&q, lvsnic_model::pcap::Resolution::Nano, b.iter()).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&q).unwrap());
    assert_eq!(lvsnic_model::pcap::read_file(&p).unwrap(), a);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fnv(records: &[PcapRecord]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for r in records {
        for &x in r.ts_ns.to_le_bytes().iter().chain(&r.data) {
            h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Output pinned across hosts and runs. One real server per service, so the
/// digests depend on the generator and on IPVS forwarding, not on scheduler
/// tie-breaks. If a deliberate change to the generator (or to the
/// director's forwarding) moves them, update the values.
#[test]
fn pinned_digests() {
    let rules = parse_rules(
        "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1\n\
         -A -t 10.0.0.101:80 -s rr\n-a -t 10.0.0.101:80 -r 192.168.10.3:80 -g -w 1\n\
         -A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.2:53 -m -w 1\n",
    )
    .unwrap();
    let spec = TrafficSpec { seed: 42, connections: 60, clients: 10, ..TrafficSpec::default() };
    let recs = generate(&spec, &cfg(), &rules).unwrap();
    let flows =
        established_flows(&FlowSpec { flows: 20, packets: 200, ..FlowSpec::default() }, &cfg(), &rules).unwrap();
    assert_eq!(
        (recs.len(), fnv(&recs).as_str(), flows.len(), fnv(&flows).as_str()),
        (1892, "c2a8f3cefc19e5f9", 250, "8888c1e54af8f33a"),
    );
}

#[test]
fn timestamps_strictly_increase_by_a_microsecond() {
    let cap = capture();
    assert!(cap.records.len() > 3000, "{} frames", cap.records.len());
    assert_eq!(cap.records[0].ts_ns, moderate().start);
    for w in cap.records.windows(2) {
        assert!(w[1].ts_ns >= w[0].ts_ns + 1000, "{} then {}", w[0].ts_ns, w[1].ts_ns);
        // Microsecond truncation keeps the order.
        assert!(w[1].ts_ns / 1000 > w[0].ts_ns / 1000);
    }
    for r in &cap.records {
        assert_eq!(r.orig_len as usize, r.data.len());
        assert!(r.data.len() <= 1518, "{} bytes", r.data.len());
    }
    assert_eq!(cap.tags.len(), cap.records.len());
}

/// Checks the L4 checksum of a well-formed, unfragmented IPv4 frame.
fn l4_checksum_ok(frame: &[u8]) -> bool {
    let info = parse_frame(frame);
    let v4 = info.ipv4.unwrap();
    if v4.is_fragment() {
        return true;
    }
    let p = Ipv4Packet::new_checked(&frame[v4.l3_offset..]).unwrap();
    match u8::from(v4.protocol) {
        IPPROTO_TCP => TcpPacket::new_checked(p.payload()).unwrap().verify_checksum(v4.src, v4.dst),
        IPPROTO_UDP => UdpPacket::new_checked(p.payload()).unwrap().verify_checksum(v4.src, v4.dst),
        IPPROTO_ICMP => Icmpv4Packet::new_checked(p.payload()).unwrap().verify_checksum(),
        _ => true,
    }
}

#[test]
fn frames_parse_as_intended() {
    let cap = capture();
    let mut malformed = 0;
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        let f = &r.data;
        let info = parse_frame(f);
        let c = t.category;
        let expect_err = match c {
            Category::MalformedRunt => Some(FrameError::Runt),
            Category::MalformedTruncatedIpv4 => Some(FrameError::Ipv4Truncated),
            Category::MalformedBadVersion => Some(FrameError::Ipv4BadVersion),
            Category::MalformedBadIhl => Some(FrameError::Ipv4BadHeaderLen),
            Category::MalformedTotalLength => Some(FrameError::Ipv4TotalLenExceedsFrame),
            Category::MalformedTruncatedTcp => Some(FrameError::L4Truncated),
            _ => None,
        };
        if c.is_malformed() {
            malformed += 1;
            assert_eq!(info.error, expect_err, "{c:?}: {f:02x?}");
            if c == Category::MalformedBadChecksum {
                assert!(!info.ipv4.unwrap().header_checksum_ok);
            }
            continue;
        }
        assert_eq!(info.error, None, "{c:?}: {f:02x?}");
        assert!(f.len() >= 60, "{c:?} frame of {} bytes is not padded", f.len());
        match c {
            Category::Ipv6 => assert_eq!(info.ethertype, 0x86dd),
            Category::OtherEthertype => assert_eq!(info.ethertype, 0x88cc),
            Category::ArpVip | Category::ArpDirector | Category::ArpOther => assert_eq!(info.ethertype, 0x0806),
            _ => {
                let v4 = info.ipv4.unwrap_or_else(|| panic!("{c:?} is not IPv4"));
                assert!(v4.header_checksum_ok, "{c:?}");
                assert!(l4_checksum_ok(f), "{c:?}: bad L4 checksum");
                let is_frag = c == Category::Fragment;
                assert_eq!(v4.is_fragment(), is_frag, "{c:?}");
                if c == Category::IpOptions {
                    assert!(v4.has_options);
                }
                if c == Category::Ttl1 {
                    assert_eq!(v4.ttl, 1);
                }
            }
        }
        // Client frames come from the router, server frames from the
        // server's MAC, all to the director (other-MAC, broadcast and
        // multicast frames excepted).
        let dst = &f[0..6];
        match c {
            Category::TcpClient | Category::UdpClient | Category::TcpIdleResume | Category::ClientIcmpError => {
                assert_eq!(dst, cfg().mac.0);
                assert_eq!(&f[6..12], cfg().gateway_mac.unwrap().0);
            }
            Category::TcpServer | Category::UdpServer | Category::ServerIcmpError => {
                assert_eq!(dst, cfg().mac.0);
                let src = info.ipv4.unwrap().src;
                assert_eq!(&f[6..12], cfg().neighbors[&src].0);
            }
            Category::OtherMac => assert_ne!(dst, cfg().mac.0),
            Category::Broadcast => assert_eq!(dst, [0xff; 6]),
            _ => {}
        }
    }
    assert_eq!(malformed, cap.counts.malformed_frames);
    assert!(malformed > 0);
    let c = &cap.counts;
    assert_eq!(c.frames as usize, cap.records.len());
    assert_eq!(c.bytes, cap.records.iter().map(|r| r.data.len() as u64).sum::<u64>());
    assert_eq!(c.session_frames + c.other_frames + c.malformed_frames, c.frames);
}

/// What the director must do with each category (for rules where every
/// server is available and default sysctls).
fn intended(c: Category, o: Outcome) -> bool {
    use Category::*;
    use Outcome::*;
    match c {
        TcpClient | TcpServer | UdpClient | UdpServer | ClientIcmpError | ServerIcmpError => o == Forwarded,
        TcpIdleResume => o == ToHost(HostReason::NotSyn),
        OversizeDfTunnel => o == IcmpError(DropReason::FragNeeded),
        ArpVip | ArpDirector => o == ArpReply,
        ArpOther => o == ToHost(HostReason::Arp),
        IcmpEchoVip | IcmpEchoDirector | IpOptions | SynNoService | Broadcast => o == ToHost(HostReason::Local),
        TcpToDirector => matches!(o, ToHost(HostReason::Local | HostReason::NotSyn)),
        StrayAck => o == ToHost(HostReason::NotSyn),
        Ipv6 | OtherEthertype => o == ToHost(HostReason::NonIp),
        OtherMac => o == Dropped(DropReason::OtherHost),
        Ttl1 => matches!(o, IcmpError(DropReason::TtlExceeded) | Dropped(DropReason::TtlExceeded)),
        // A DNS query in two fragments: the first is held, the datagram goes
        // to a real server (UDP service on port 53) or to the stack.
        Fragment => matches!(o, Held | Forwarded | ToHost(HostReason::Local)),
        _ => o == ToHost(HostReason::Malformed),
    }
}

#[test]
fn fresh_director_does_what_the_generator_saw_and_meant() {
    let cap = capture();
    let (outcomes, d) = replay(&cap.records);
    for (i, (o, t)) in outcomes.iter().zip(&cap.tags).enumerate() {
        assert_eq!(*o, t.outcome, "frame {i} ({:?})", t.category);
        assert!(intended(t.category, *o), "frame {i}: {:?} got {o:?}", t.category);
        // NAT replies all matched a connection.
        assert_ne!(*o, Outcome::ToHost(HostReason::Forward), "frame {i} {:?}", t.category);
    }
    // The generator's director and the fresh one agree.
    let (g, f) = (&cap.counts.director, &d.counters);
    assert_eq!(
        (g.frames_in, g.frames_tx, g.frames_host, g.frames_dropped),
        (f.frames_in, f.frames_tx, f.frames_host, f.frames_dropped)
    );
    assert_eq!((g.host, g.drop, &g.icmp_sent), (f.host, f.drop, &f.icmp_sent));
    assert_eq!((g.arp_replies, g.conns_created, g.conns_expired), (f.arp_replies, f.conns_created, f.conns_expired));

    // Counters consistent with what the generator says it produced.
    let n = |c| cap.counts.category(c);
    let host = |r: HostReason| f.host[r as usize];
    let drop = |r: DropReason| f.drop[r as usize];
    assert_eq!(f.frames_in, cap.counts.frames);
    assert_eq!(f.arp_replies, n(Category::ArpVip) + n(Category::ArpDirector));
    assert_eq!(host(HostReason::Arp), n(Category::ArpOther));
    assert_eq!(host(HostReason::Malformed), cap.counts.malformed_frames);
    // Fragmented datagrams (two fragments each) are reassembled: the first
    // fragment is held, the second completes the datagram.
    assert_eq!(host(HostReason::Fragment), 0);
    assert_eq!((f.reasm.held, f.reasm.reassembled), (n(Category::Fragment) / 2, n(Category::Fragment) / 2));
    assert_eq!(f.frames_held, n(Category::Fragment) / 2);
    assert!(n(Category::Fragment) > 0);
    let frag_local = outcomes
        .iter()
        .zip(&cap.tags)
        .filter(|(o, t)| t.category == Category::Fragment && **o == Outcome::ToHost(HostReason::Local))
        .count() as u64;
    assert_eq!(host(HostReason::NonIp), n(Category::Ipv6) + n(Category::OtherEthertype));
    assert_eq!(host(HostReason::Forward), 0);
    assert_eq!(
        host(HostReason::Local) + host(HostReason::NotSyn),
        n(Category::IcmpEchoVip)
            + n(Category::IcmpEchoDirector)
            + n(Category::IpOptions)
            + n(Category::SynNoService)
            + n(Category::Broadcast)
            + n(Category::TcpToDirector)
            + n(Category::StrayAck)
            + n(Category::TcpIdleResume)
            + frag_local
    );
    assert_eq!(drop(DropReason::OtherHost), n(Category::OtherMac));
    assert_eq!(drop(DropReason::FragNeeded), n(Category::OversizeDfTunnel));
    assert_eq!(f.icmp_sent.get(&(3, 4)).copied().unwrap_or(0), n(Category::OversizeDfTunnel));
    assert_eq!(f.icmp_sent.get(&(11, 0)).copied().unwrap_or(0) + f.icmp_rate_limited, n(Category::Ttl1),);
    assert_eq!(drop(DropReason::TtlExceeded), n(Category::Ttl1));
    assert_eq!(
        f.frames_host,
        host(HostReason::Arp)
            + cap.counts.malformed_frames
            + host(HostReason::Fragment)
            + host(HostReason::NonIp)
            + host(HostReason::Local)
            + host(HostReason::NotSyn)
    );
}

#[test]
fn mix_has_every_category_and_feature() {
    let c = &capture().counts;
    for &cat in Category::ALL {
        // IPv4 rules: no IPv6 probes or malformed IPv6 frames (the IPv6
        // tests check those).
        if cat.is_ipv6() {
            assert_eq!(c.category(cat), 0, "{cat:?} frames without an IPv6 service");
            continue;
        }
        assert!(c.category(cat) > 0, "no {cat:?} frames: {c:#?}");
    }
    assert_eq!(c.ipv6_sessions, 0);
    assert_eq!(c.connections, 300);
    assert_eq!(c.tcp_sessions + c.udp_sessions, 300);
    assert!(c.udp_sessions > 20 && c.tcp_sessions > 150, "{c:?}");
    for e in [
        SessionEnd::ClientClose,
        SessionEnd::ServerClose,
        SessionEnd::ClientReset,
        SessionEnd::ServerReset,
        SessionEnd::HalfOpen,
        SessionEnd::IdleReset,
        SessionEnd::Completed,
    ] {
        assert!(c.ended(e) > 0, "no session ended {e:?}: {:?}", c.ends);
    }
    assert!(c.handshakes > 150);
    assert!(c.idle_gaps > 0 && c.port_reuses > 0 && c.persistent_bursts > 0);
    assert!(c.pmtu_reductions > 0 && c.retransmissions > 0);
    // The default director drops 802.1Q frames: the generator sends none
    // (other_configurations covers `vlan = "balance"`).
    assert!(c.vlan_frames == 0 && c.zero_checksum_frames > 0);
    // Session SYNs with options plus the Record Route pings.
    assert!(c.ip_option_frames > c.category(Category::IpOptions));
    assert!(c.ttl128_frames > 0 && c.ttl64_frames > 0);
    assert!(c.df_frames > 0 && c.df_frames < c.frames - c.malformed_frames);
    // Roughly the requested shares.
    let share = |x: u64| x as f64 / c.frames as f64;
    assert!((0.03..0.08).contains(&share(c.other_frames)), "other share {}", share(c.other_frames));
    assert!((0.005..0.02).contains(&share(c.malformed_frames)), "malformed share {}", share(c.malformed_frames));
}

/// The sockets, numbers, flags and payload length of a TCP/IPv4 or
/// TCP/IPv6 frame.
fn tcp_fields(f: &[u8]) -> (SocketAddr, SocketAddr, u32, u32, u8, usize) {
    let info = parse_frame(f);
    let (src, dst): (IpAddr, IpAddr) = match (info.ipv4, info.ipv6) {
        (Some(v4), _) => (v4.src.into(), v4.dst.into()),
        (_, Some(v6)) => (v6.src.into(), v6.dst.into()),
        _ => panic!("not IP: {f:02x?}"),
    };
    let l4 = info.l4.unwrap();
    let ip_end = info.ipv4.map_or_else(
        || info.ipv6.unwrap().l3_offset + 40 + info.ipv6.unwrap().payload_len as usize,
        |v4| v4.l3_offset + v4.total_len as usize,
    );
    let t = TcpPacket::new_checked(&f[l4.offset..ip_end]).unwrap();
    (
        SocketAddr::new(src, t.src_port()),
        SocketAddr::new(dst, t.dst_port()),
        t.seq_number(),
        t.ack_number(),
        t.flags(),
        t.payload().len(),
    )
}

#[test]
fn tcp_sequence_numbers_are_consistent() {
    let cap = capture();
    // Per session and direction: the next sequence number expected.
    let mut next: HashMap<(u32, bool), u32> = HashMap::new();
    // Highest sequence number each side sent, to bound the other's acks.
    let mut sent_hi: HashMap<(u32, bool), u32> = HashMap::new();
    let mut last_ack: HashMap<(u32, bool), u32> = HashMap::new();
    let mut checked = 0;
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        let Some(s) = t.session else { continue };
        let info = &cap.sessions[s as usize];
        if info.protocol != Protocol::Tcp {
            continue;
        }
        let (src, dst, seq, ack, flags, len) = tcp_fields(&r.data);
        let from_client = src == info.client;
        if from_client {
            assert_eq!(dst, info.service);
        } else {
            assert_eq!((Some(src), dst), (info.real_server, info.client));
        }
        let key = (s, from_client);
        if let Some(&want) = next.get(&key) {
            // A retransmitted SYN(-ACK) repeats the initial number.
            let want = if flags & TCP_SYN != 0 && seq == want.wrapping_sub(1) { seq } else { want };
            assert_eq!(seq, want, "session {s} {} seq", if from_client { "client" } else { "server" });
        }
        if flags & 0x10 != 0 {
            // Acks never go back, and never beyond what the other side sent
            // (known for NAT sessions, whose server segments are visible).
            if let Some(&prev) = last_ack.get(&key) {
                assert!(ack.wrapping_sub(prev) as i32 >= 0, "session {s}: ack went back");
            }
            last_ack.insert(key, ack);
            if let Some(&hi) = sent_hi.get(&(s, !from_client)) {
                assert!(hi.wrapping_sub(ack) as i32 >= 0, "session {s}: ack {ack} beyond {hi}");
                if !from_client && flags & TCP_SYN == 0 {
                    assert_eq!(ack, hi, "session {s}: a server acks all it got");
                }
            }
        }
        // Segments the director did not forward are resent with the same
        // sequence number.
        let delivered = t.outcome == Outcome::Forwarded;
        let adv = len as u32 + (flags & (TCP_SYN | TCP_FIN) != 0) as u32;
        let nxt = if delivered { seq.wrapping_add(adv) } else { seq };
        next.insert(key, nxt);
        if delivered && info.forwarding == Some(FwdMethod::Masq) {
            sent_hi.insert(key, nxt);
        }
        checked += 1;
    }
    assert!(checked > 3000);
}

#[test]
fn sessions_behave() {
    let cap = capture();
    let ss = &cap.sessions;
    let net = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    let mut sockets = HashSet::new();
    for (i, s) in ss.iter().enumerate() {
        let IpAddr::V4(c) = s.client.ip() else { panic!("IPv6 client {} of IPv4 rules", s.client) };
        assert_eq!(u32::from(c) & 0xfffe_0000, net, "client {}", s.client);
        assert!((32768..=60999).contains(&s.client.port()), "{}", s.client);
        if s.kind == SessionKind::PortReuse {
            let p = &ss[s.reuses.unwrap() as usize];
            assert_eq!(s.client, p.client, "a reuse keeps the client port");
            assert!(s.start >= p.start + 61 * SEC);
            assert!(s.frames > 0);
        } else {
            assert!(sockets.insert((s.protocol, s.client)), "session {i}: client socket {} reused", s.client);
        }
        if s.frames > 0 {
            assert!(s.real_server.is_some(), "session {i} ended {:?}", s.end);
        }
        match s.kind {
            SessionKind::HalfOpen => assert_eq!(s.end, SessionEnd::HalfOpen),
            SessionKind::Idle if s.protocol == Protocol::Tcp => assert_eq!(s.end, SessionEnd::IdleReset),
            _ => assert!(!matches!(s.end, SessionEnd::Open | SessionEnd::Lost | SessionEnd::GaveUp), "{s:?}"),
        }
    }
    // A burst to a persistent service lands on one real server.
    let mut bursts: BTreeMap<u32, HashSet<SocketAddr>> = BTreeMap::new();
    for s in ss {
        if let Some(b) = s.burst {
            bursts.entry(b).or_default().insert(s.real_server.unwrap());
        }
    }
    assert!(!bursts.is_empty());
    for (b, rs) in &bursts {
        assert_eq!(rs.len(), 1, "burst {b} went to {rs:?}");
    }
    // Every forwarding method was used.
    let methods: HashSet<_> = ss.iter().filter_map(|s| s.forwarding).collect();
    assert_eq!(methods, HashSet::from([FwdMethod::Masq, FwdMethod::Route, FwdMethod::IPIP]));
    // Half-open NAT sessions: the server's SYN-ACKs (retransmitted), no ACK.
    let ho = ss.iter().position(|s| s.kind == SessionKind::HalfOpen && s.forwarding == Some(FwdMethod::Masq));
    if let Some(h) = ho {
        let cats: Vec<Category> = cap.tags.iter().filter(|t| t.session == Some(h as u32)).map(|t| t.category).collect();
        assert_eq!(cats, [Category::TcpClient, Category::TcpServer, Category::TcpServer, Category::TcpServer]);
    }
}

#[test]
fn idle_gaps_outlast_the_timeouts() {
    let cap = capture();
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut seen = 0;
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        let Some(s) = t.session else { continue };
        if t.category == Category::TcpIdleResume {
            assert!(r.ts_ns - last[&s] > 900 * SEC, "gap of {} s", (r.ts_ns - last[&s]) / SEC);
            seen += 1;
        }
        last.insert(s, r.ts_ns);
    }
    assert!(seen > 0);
    // A UDP idle session gets a new connection after the gap.
    let udp_idle = cap.sessions.iter().position(|s| s.kind == SessionKind::Idle && s.protocol == Protocol::Udp);
    if let Some(u) = udp_idle {
        let ts: Vec<u64> = cap
            .records
            .iter()
            .zip(&cap.tags)
            .filter(|(_, t)| t.session == Some(u as u32) && t.category == Category::UdpClient)
            .map(|(r, _)| r.ts_ns)
            .collect();
        assert!(ts.windows(2).any(|w| w[1] - w[0] > 300 * SEC));
    }
}

#[test]
fn client_icmp_errors_quote_the_reply_they_got() {
    let cap = capture();
    let mut n = 0;
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        if t.category != Category::ClientIcmpError {
            continue;
        }
        let s = &cap.sessions[t.session.unwrap() as usize];
        let f = &r.data;
        let v4 = parse_frame(f).ipv4.unwrap();
        assert_eq!((IpAddr::V4(v4.src), IpAddr::V4(v4.dst)), (s.client.ip(), s.service.ip()));
        let p = Ipv4Packet::new_checked(&f[v4.l3_offset..]).unwrap();
        let i = Icmpv4Packet::new_checked(p.payload()).unwrap();
        assert_eq!((i.msg_type(), i.msg_code()), (3, 3));
        let q = Ipv4Packet::new_checked(i.data()).unwrap();
        assert!(q.verify_checksum());
        let (src, dst) = (IpAddr::V4(q.src_addr()), IpAddr::V4(q.dst_addr()));
        assert_eq!((src, dst, q.protocol()), (s.service.ip(), s.client.ip(), IPPROTO_UDP));
        let u = UdpPacket::new_checked(q.payload()).unwrap();
        assert_eq!((u.src_port(), u.dst_port()), (s.service.port(), s.client.port()));
        assert!(u.verify_checksum(q.src_addr(), q.dst_addr()), "the quoted reply is the NAT-rewritten one");
        n += 1;
    }
    assert!(n > 0);
}

/// A NAT real server's port unreachable: from its address and MAC to the
/// client, quoting the query as the director forwarded it (destination the
/// real server, checksums valid); the session ends refused, nothing after.
#[test]
fn server_icmp_errors_quote_the_query_the_server_got() {
    let cap = capture();
    let mut n = 0;
    for (i, (r, t)) in cap.records.iter().zip(&cap.tags).enumerate() {
        if t.category != Category::ServerIcmpError {
            continue;
        }
        let sid = t.session.unwrap();
        let s = &cap.sessions[sid as usize];
        assert!(s.server_icmp_error && s.forwarding == Some(FwdMethod::Masq), "{s:?}");
        assert_eq!(s.end, SessionEnd::Refused, "{s:?}");
        let rs = s.real_server.unwrap();
        let f = &r.data;
        let v4 = parse_frame(f).ipv4.unwrap();
        assert_eq!((IpAddr::V4(v4.src), IpAddr::V4(v4.dst)), (rs.ip(), s.client.ip()));
        let p = Ipv4Packet::new_checked(&f[v4.l3_offset..]).unwrap();
        assert!(p.verify_checksum());
        let icmp = Icmpv4Packet::new_checked(p.payload()).unwrap();
        assert_eq!((icmp.msg_type(), icmp.msg_code()), (3, 3));
        assert!(icmp.verify_checksum());
        let q = Ipv4Packet::new_checked(icmp.data()).unwrap();
        assert!(q.verify_checksum());
        let (src, dst) = (IpAddr::V4(q.src_addr()), IpAddr::V4(q.dst_addr()));
        assert_eq!((src, dst, q.protocol()), (s.client.ip(), rs.ip(), IPPROTO_UDP));
        let u = UdpPacket::new_checked(q.payload()).unwrap();
        assert_eq!((u.src_port(), u.dst_port()), (s.client.port(), rs.port()));
        assert!(u.verify_checksum(q.src_addr(), q.dst_addr()), "the quoted query is the NAT-rewritten one");
        // Nothing of the session after its error.
        assert!(!cap.tags[i + 1..].iter().any(|t| t.session == Some(sid)), "frames after the error: {s:?}");
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn shorter_idle_gaps_keep_connections() {
    let spec = TrafficSpec {
        idle_gap: Some(100 * SEC),
        idle_gap_fraction: 0.1,
        other_fraction: 0.0,
        malformed_fraction: 0.0,
        connections: 100,
        ..moderate()
    };
    let cap = generate_capture(&spec, &cfg(), &rules()).unwrap();
    assert_eq!(cap.counts.other_frames + cap.counts.malformed_frames, 0);
    assert!(cap.counts.idle_gaps >= 5);
    let resumes: Vec<_> = cap.tags.iter().filter(|t| t.category == Category::TcpIdleResume).collect();
    assert!(!resumes.is_empty());
    assert!(resumes.iter().all(|t| t.outcome == Outcome::Forwarded));
    assert_eq!(cap.counts.ended(SessionEnd::IdleReset), 0);
}

#[test]
fn refused_connections_give_up_or_retry() {
    // The only server is quiescent: every SYN is answered with ICMP port
    // unreachable, except when the per-client ICMP rate limit swallows the
    // answer; then the client retransmits its SYN (1 s, then 2 s later).
    let r = parse_rules("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 0\n").unwrap();
    let spec = TrafficSpec {
        connections: 40,
        clients: 2,
        duration: 3 * SEC,
        other_fraction: 0.0,
        malformed_fraction: 0.0,
        half_open_fraction: 0.0,
        ..moderate()
    };
    let cap = generate_capture(&spec, &cfg(), &r).unwrap();
    assert_eq!(cap.counts.category(Category::TcpServer), 0);
    assert_eq!(cap.counts.handshakes, 0);
    for t in &cap.tags {
        assert!(
            matches!(
                t.outcome,
                Outcome::IcmpError(DropReason::NoRealServer) | Outcome::Dropped(DropReason::NoRealServer)
            ),
            "{t:?}"
        );
    }
    assert!(cap.counts.retransmissions > 0);
    assert!(cap.counts.ended(SessionEnd::Refused) > 0);
    assert_eq!(cap.counts.ended(SessionEnd::Refused) + cap.counts.ended(SessionEnd::GaveUp), 40);
    assert_eq!(cap.records.len() as u64, 40 + cap.counts.retransmissions);
    // At most three SYNs per session.
    assert!(cap.sessions.iter().all(|s| (1..=3).contains(&s.frames)));
}

#[test]
fn other_configurations() {
    // A small MTU: MSS follows it, full-size packets still fit NAT and DR.
    let small = DIRECTOR.replace("gateway_mac", "mtu = 1400\ngateway_mac");
    let cfg2 = DirectorConfig::parse(&small).unwrap();
    let spec = TrafficSpec { connections: 120, ..moderate() };
    let cap = generate_capture(&spec, &cfg2, &rules()).unwrap();
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        if let Some(v4) = parse_frame(&r.data).ipv4 {
            assert!(v4.total_len <= 1400 || t.category.is_malformed(), "{:?} {}", t.category, v4.total_len);
        }
        if matches!(t.category, Category::TcpClient | Category::TcpServer | Category::UdpClient | Category::UdpServer) {
            assert_eq!(t.outcome, Outcome::Forwarded);
        }
    }
    // A director that balances 802.1Q frames gets tagged sessions, forwarded with their tag.
    let tagged = DIRECTOR.replace("gateway_mac", "vlan = \"balance\"\ngateway_mac");
    let cfg3 = DirectorConfig::parse(&tagged).unwrap();
    let cap = generate_capture(&spec, &cfg3, &rules()).unwrap();
    assert!(cap.counts.vlan_frames > 0);
    for (r, t) in cap.records.iter().zip(&cap.tags) {
        if parse_frame(&r.data).vlan_tci.is_some() && matches!(t.category, Category::TcpClient | Category::UdpClient) {
            assert_eq!(t.outcome, Outcome::Forwarded);
        }
    }
    // Only UDP services; only one TCP NAT service.
    for text in [
        "-A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.1:53 -m\n",
        "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m\n",
    ] {
        let r = parse_rules(text).unwrap();
        let cap = generate_capture(&TrafficSpec { connections: 50, ..moderate() }, &cfg(), &r).unwrap();
        assert_eq!(cap.counts.connections, 50);
        assert!(cap.tags.iter().all(|t| t.category != Category::OversizeDfTunnel));
    }
    // No connections: an empty capture.
    let cap = generate_capture(&TrafficSpec { connections: 0, ..moderate() }, &cfg(), &rules()).unwrap();
    assert!(cap.records.is_empty());
}

#[test]
fn errors_are_clear() {
    let e = generate(&moderate(), &cfg(), &RuleSet::default()).unwrap_err();
    assert!(matches!(e, TrafficError::NoServices), "{e}");
    assert!(e.to_string().contains("no TCP or UDP virtual service"));
    let e = generate(&TrafficSpec { udp_fraction: 1.5, ..moderate() }, &cfg(), &rules()).unwrap_err();
    assert_eq!(e.to_string(), "invalid traffic spec: udp_fraction 1.5 is not between 0 and 1");
    let e = generate(&TrafficSpec { other_fraction: f64::NAN, ..moderate() }, &cfg(), &rules()).unwrap_err();
    assert!(e.to_string().contains("other_fraction NaN"), "{e}");
    let e = generate(&TrafficSpec { clients: 0, ..moderate() }, &cfg(), &rules()).unwrap_err();
    assert!(e.to_string().contains("clients 0"), "{e}");
    let e = generate(&TrafficSpec { connections: 50_000, clients: 1, ..moderate() }, &cfg(), &rules()).unwrap_err();
    assert!(e.to_string().contains("use more clients"), "{e}");
    let e = generate(&TrafficSpec { other_fraction: 0.5, malformed_fraction: 0.5, ..moderate() }, &cfg(), &rules())
        .unwrap_err();
    assert!(e.to_string().contains("no room for sessions"), "{e}");
    // A real server without a neighbor entry: the director's own error.
    let r = parse_rules("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.99.9:80 -m\n").unwrap();
    let e = generate(&moderate(), &cfg(), &r).unwrap_err();
    assert!(e.to_string().contains("192.168.99.9"), "{e}");
}

#[test]
fn established_flows_are_established() {
    let spec = FlowSpec { flows: 200, packets: 5000, clients: 16, udp_fraction: 0.25, ..FlowSpec::default() };
    let recs = established_flows(&spec, &cfg(), &rules()).unwrap();
    assert_eq!(recs, established_flows(&spec, &cfg(), &rules()).unwrap());
    assert!(recs.len() > 5000 + 200 * 2 && recs.len() <= 5000 + 200 * 3);
    for w in recs.windows(2) {
        assert_eq!(w[1].ts_ns, w[0].ts_ns + 1000);
    }
    for r in &recs {
        let info = parse_frame(&r.data);
        assert!(info.is_ok() && info.ipv4.unwrap().header_checksum_ok);
        assert!(l4_checksum_ok(&r.data));
    }
    let (outcomes, d) = replay(&recs);
    assert!(
        outcomes.iter().all(|o| *o == Outcome::Forwarded),
        "{:?}",
        outcomes.iter().find(|o| **o != Outcome::Forwarded)
    );
    assert_eq!(d.counters.conns_created - d.counters.templates_created, 200);
    // Data frames carry the payload and consistent numbers: a client's
    // sequence grows by the payload each time.
    let data = &recs[recs.len() - 5000..];
    let mut last: HashMap<(SocketAddr, SocketAddr), u32> = HashMap::new();
    let mut replies = 0;
    for r in data {
        let v4 = parse_frame(&r.data).ipv4.unwrap();
        if v4.protocol != IpProtocol::Tcp {
            continue;
        }
        let (src, dst, seq, _, _, len) = tcp_fields(&r.data);
        assert_eq!(len, 512);
        if let Some(prev) = last.insert((src, dst), seq) {
            assert_eq!(seq, prev.wrapping_add(512));
        }
        replies += matches!(src.ip(), IpAddr::V4(a) if a.octets()[0] == 192) as u32;
    }
    assert!(replies > 1000, "NAT flows alternate with server frames");

    let e = established_flows(&FlowSpec { payload_len: 9000, ..spec.clone() }, &cfg(), &rules()).unwrap_err();
    assert!(e.to_string().contains("exceeds the MSS"), "{e}");
    let e = established_flows(&FlowSpec { gap: 10, ..spec }, &cfg(), &rules()).unwrap_err();
    assert!(e.to_string().contains("below 1 µs"), "{e}");
}

#[test]
fn ten_thousand_connections() {
    let t0 = std::time::Instant::now();
    let spec =
        TrafficSpec { seed: 3, connections: 10_000, clients: 2000, duration: 600 * SEC, ..TrafficSpec::default() };
    let cap = generate_capture(&spec, &cfg(), &rules()).unwrap();
    let took = t0.elapsed();
    println!("10k connections: {} frames, {} bytes in {took:?}", cap.records.len(), cap.counts.bytes);
    assert_eq!(cap.counts.connections, 10_000);
    if !cfg!(debug_assertions) {
        assert!(took.as_secs_f64() < 2.0, "took {took:?}");
    }
}

#[test]
fn a_gateway_known_only_by_its_address_is_refused_in_one_line() {
    // Client frames come from the gateway's MAC: the generator needs `gateway_mac`.
    let c = DirectorConfig::parse(&DIRECTOR.replace("gateway_mac = \"02:00:00:00:00:fe\"", "gateway = \"10.0.0.254\"")).unwrap();
    assert_eq!(c.gateway_mac, None);
    let e = generate(&moderate(), &c, &rules()).unwrap_err().to_string();
    assert_eq!(e, lvsnic_model::config::NO_STATIC_GATEWAY);
    let e = established_flows(&FlowSpec::default(), &c, &rules()).unwrap_err().to_string();
    assert_eq!(e, lvsnic_model::config::NO_STATIC_GATEWAY);
}
