//! IPVS semantics through the golden-model director: persistence, timeouts
//! and expiry, quiescent and deleted servers, ICMP generation, ARP, and what
//! goes to the director's own stack.

use lvsnic_model::rules::{DestRule, FwdMethod, ServiceKey, Protocol};
use lvsnic_model::director::Director;
use lvsnic_model::time::{MSEC, SEC};
use lvsnic_model::wire::{TCP_ACK, TCP_RST, TCP_SYN};
use lvsnic_tests::*;
use std::net::{IpAddr, Ipv4Addr};

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn syn(c: Ipv4Addr, port: u16, dport: u16) -> Vec<u8> {
    tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), port, dport, TCP_SYN, 100, 0, b"")
}

/// The real server a forwarded NAT frame was sent to.
fn nat_target(f: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(f[30], f[31], f[32], f[33])
}

fn target_of(o: Out) -> Ipv4Addr {
    nat_target(&one_tx(o))
}

const NAT2: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1\n";

#[test]
fn persistence_sticks_to_the_template_and_masks_clients() {
    for b in 0..BACKENDS {
        let rules = "-A -t 10.0.0.100:80 -s rr -p 60 -M 255.255.255.0\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1\n";
        let mut d = dut(b, rules, "");
        assert_eq!(target_of(d.feed(T0, &syn(ip("198.51.100.7"), 1000, 80))), rs(2));
        // Another port of the same client, and a client in the same /24: same server.
        assert_eq!(target_of(d.feed(T0 + SEC, &syn(ip("198.51.100.7"), 1001, 80))), rs(2));
        assert_eq!(target_of(d.feed(T0 + 2 * SEC, &syn(ip("198.51.100.200"), 1000, 80))), rs(2));
        // A client in another /24 is scheduled: rr moves on.
        assert_eq!(target_of(d.feed(T0 + 3 * SEC, &syn(ip("198.51.101.7"), 1000, 80))), rs(1));
        assert_eq!(d.services.dest(d.services.live_services().next().unwrap().order[0]).persistconns, 1);
    }
}

#[test]
fn template_outlives_its_timeout_while_it_controls_connections() {
    for b in 0..BACKENDS {
        // SYN at T0: template (60 s) and connection (SYN_RECV, 60 s) both due at
        // T0+60. The connection was armed last, so it expires first; then the
        // template controls nothing and expires too: at T0+61 the client is
        // scheduled afresh (rr moves to the other server).
        let rules = "-A -t 10.0.0.100:80 -s rr -p 60\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1\n";
        let c = ip("198.51.100.7");
        let mut d = dut(b, rules, "");
        assert_eq!(target_of(d.feed(T0, &syn(c, 1000, 80))), rs(2));
        assert_eq!(target_of(d.feed(T0 + 61 * SEC, &syn(c, 1001, 80))), rs(1));

        // An established connection (900 s) outlives the template's 60 s: the
        // template is kept in 60 s steps while it controls it (expire_later),
        // and goes one step after the connection is gone.
        let mut d = dut(b, rules, "");
        assert_eq!(target_of(d.feed(T0, &syn(c, 1000, 80))), rs(2));
        let ack = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_ACK, 101, 1, b"");
        d.feed(T0 + SEC, &ack);
        d.advance(T0 + 61 * SEC);
        assert_eq!(d.conns.len(), 2, "template kept while it controls the connection");
        d.advance(T0 + 600 * SEC);
        assert_eq!(d.conns.len(), 2);
        let rst = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_RST, 101, 1, b"");
        d.feed(T0 + 700 * SEC, &rst); // CLOSE, 10 s
        d.advance(T0 + 715 * SEC);
        assert_eq!(d.conns.len(), 1, "connection gone at 710 s, template waits for its next step");
        d.advance(T0 + 719 * SEC);
        assert_eq!(d.conns.len(), 1);
        d.advance(T0 + 720 * SEC);
        assert_eq!(d.conns.len(), 0, "template expires at 60 + 11 * 60 s");
    }
}

#[test]
fn connection_timeouts_follow_the_tcp_state_and_udp_timeout() {
    for b in 0..BACKENDS {
        let c = ip("198.51.100.7");
        // A SYN-only connection (SYN_RECV, 60 s): a retransmitted SYN at 59 s
        // hits it, after 60 s a SYN is a new connection.
        let mut d = dut(b, NAT2, "");
        assert_eq!(target_of(d.feed(T0, &syn(c, 1000, 80))), rs(2));
        assert_eq!(target_of(d.feed(T0 + 59 * SEC, &syn(c, 1000, 80))), rs(2));
        assert_eq!(d.conns.len(), 1);
        assert_eq!(target_of(d.feed(T0 + 119 * SEC + 1, &syn(c, 1000, 80))), rs(1));
        // UDP: 300 s by default, `--set` style timeouts from DIRECTOR.toml.
        let udp_rules = "-A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.1:53 -m -w 1\n-a -u 10.0.0.100:53 -r 192.168.10.2:53 -m -w 1\n";
        let q = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 5000, 53, b"q", false);
        let mut d = dut(b, udp_rules, "[timeouts]\nudp = 10\n");
        assert_eq!(target_of(d.feed(T0, &q)), rs(2));
        assert_eq!(target_of(d.feed(T0 + 9 * SEC, &q)), rs(2));
        assert_eq!(target_of(d.feed(T0 + 19 * SEC + 1, &q)), rs(1));
        let mut d = dut(b, udp_rules, "");
        assert_eq!(target_of(d.feed(T0, &q)), rs(2));
        assert_eq!(target_of(d.feed(T0 + 299 * SEC, &q)), rs(2));
        assert_eq!(target_of(d.feed(T0 + 600 * SEC, &q)), rs(1));
        assert_eq!(d.counters.conns_expired, 1);
    }
}

#[test]
fn syn_reuses_a_time_wait_connection_port() {
    for b in 0..BACKENDS {
        // conn_reuse_mode 1: a SYN hitting a TIME_WAIT connection expires it and
        // is scheduled as a new connection.
        let c = ip("198.51.100.7");
        let mut d = dut(b, NAT2, "");
        assert_eq!(target_of(d.feed(T0, &syn(c, 1000, 80))), rs(2));
        let synack = tcp(rs_mac(2), DIRECTOR_MAC, Ip::new(rs(2), c), 80, 1000, TCP_SYN | TCP_ACK, 1, 101, b"");
        d.feed(T0 + 1, &synack);
        let ack = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_ACK, 101, 2, b"");
        d.feed(T0 + 2, &ack);
        let fin = |flags, from_rs: bool| {
            if from_rs {
                tcp(rs_mac(2), DIRECTOR_MAC, Ip::new(rs(2), c), 80, 1000, flags, 2, 102, b"")
            } else {
                tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, flags, 101, 3, b"")
            }
        };
        use lvsnic_model::wire::TCP_FIN;
        d.feed(T0 + 3, &fin(TCP_FIN | TCP_ACK, false)); // ES -> CLOSE_WAIT
        d.feed(T0 + 4, &fin(TCP_FIN | TCP_ACK, true)); // CW -> TIME_WAIT
        let (id, conn) = d.conns.iter().next().unwrap();
        assert_eq!(conn.state, lvsnic_model::conn::tcp::state::TIME_WAIT);
        let _ = id;
        // Without reuse the SYN would hit the TIME_WAIT conn (rs 2); with it rr moves on.
        assert_eq!(target_of(d.feed(T0 + 5, &syn(c, 1000, 80))), rs(1));
        let mut d2 = dut(b, NAT2, "[sysctl]\nconn_reuse_mode = 0\n");
        assert_eq!(target_of(d2.feed(T0, &syn(c, 1000, 80))), rs(2));
        d2.feed(T0 + 1, &synack);
        d2.feed(T0 + 2, &ack);
        d2.feed(T0 + 3, &fin(TCP_FIN | TCP_ACK, false));
        d2.feed(T0 + 4, &fin(TCP_FIN | TCP_ACK, true));
        assert_eq!(target_of(d2.feed(T0 + 5, &syn(c, 1000, 80))), rs(2));
    }
}

fn key80() -> ServiceKey {
    ServiceKey::Addr { proto: Protocol::Tcp, addr: IpAddr::V4(VIP), port: 80 }
}

fn dest(n: u8, weight: u32) -> DestRule {
    DestRule { addr: IpAddr::V4(rs(n)), port: 80, fwd: FwdMethod::Masq, weight, u_threshold: 0, l_threshold: 0 }
}

#[test]
fn quiescent_server_keeps_its_connections_and_templates() {
    for b in 0..BACKENDS {
        let c = ip("198.51.100.7");
        let mut d = dut(b, NAT2, "");
        let first = syn(c, 1000, 80);
        assert_eq!(target_of(d.feed(T0, &first)), rs(2));
        d.edit_dest(&key80(), &dest(2, 0)).unwrap();
        // Existing connection still goes to rs 2; new ones only to rs 1.
        assert_eq!(target_of(d.feed(T0 + 1, &first)), rs(2));
        for p in 0..4 {
            assert_eq!(target_of(d.feed(T0 + 2 + p, &syn(c, 2000 + p as u16, 80))), rs(1));
        }
        // Persistence: a client with a template on a weight-0 server keeps
        // getting it (expire_quiescent_template = 0), unless the sysctl is set.
        let prules = "-A -t 10.0.0.100:80 -s rr -p 300\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1\n";
        for (sysctl, expected) in [("", rs(2)), ("[sysctl]\nexpire_quiescent_template = 1\n", rs(1))] {
            let mut d = dut(b, prules, sysctl);
            assert_eq!(target_of(d.feed(T0, &syn(c, 1000, 80))), rs(2));
            d.edit_dest(&key80(), &dest(2, 0)).unwrap();
            assert_eq!(target_of(d.feed(T0 + SEC, &syn(c, 1001, 80))), expected);
        }
    }
}

#[test]
fn deleted_server_drops_or_expires_its_connections() {
    for b in 0..BACKENDS {
        let c = ip("198.51.100.7");
        let first = syn(c, 1000, 80);
        let ack = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_ACK, 101, 1, b"x");
        // expire_nodest_conn = 0: packets of the connection are dropped silently.
        let mut d = dut(b, NAT2, "");
        assert_eq!(target_of(d.feed(T0, &first)), rs(2));
        d.del_dest(&key80(), rs(2), 80).unwrap();
        assert_eq!(d.feed(T0 + 1, &ack), Out::Drop);
        assert_eq!(d.feed(T0 + 2, &ack), Out::Drop);
        // A new SYN from another port goes to the remaining server.
        assert_eq!(target_of(d.feed(T0 + 3, &syn(c, 1001, 80))), rs(1));
        // expire_nodest_conn = 1: the deleted server's connections are flushed,
        // so the stray ACK is no longer part of a connection (host stack).
        let mut d = dut(b, NAT2, "[sysctl]\nexpire_nodest_conn = 1\n");
        assert_eq!(target_of(d.feed(T0, &first)), rs(2));
        d.del_dest(&key80(), rs(2), 80).unwrap();
        assert!(matches!(d.feed(T0 + 1, &ack), Out::Host(_)));
        assert_eq!(target_of(d.feed(T0 + 2, &first)), rs(1));
        // Re-adding the server revives it with its statistics (trash).
        let mut d = dut(b, NAT2, "");
        d.feed(T0, &first);
        d.del_dest(&key80(), rs(2), 80).unwrap();
        d.add_dest(&key80(), &dest(2, 1)).unwrap();
        let id = d.services.live_services().next().unwrap().order[0];
        assert_eq!(d.services.dest(id).addr, rs(2));
        assert_eq!(d.services.dest(id).stats.conns, 1, "revived from the trash with its counters");
        assert_eq!(target_of(d.feed(T0 + 1, &ack)), rs(2), "and its connection resumes");
    }
}

#[test]
fn icmp_time_exceeded_port_unreachable_and_frag_needed() {
    for b in 0..BACKENDS {
        let c = ip("198.51.100.7");
        let mut d = dut(b, NAT2, "");
        // TTL 1: ICMP time exceeded from the VIP, quoting the packet as received.
        let mut i = Ip::new(c, VIP);
        i.ttl = 1;
        i.tos = 0x10;
        let s = tcp(GATEWAY_MAC, DIRECTOR_MAC, i, 1000, 80, TCP_SYN, 1, 0, b"");
        assert_eq!(one_tx(d.feed(T0, &s)), expect::icmp_error(&s, 11, 0, 0, VIP, GATEWAY_MAC, 0));
        // No available server: port unreachable (TCP too), from the VIP.
        let mut d = dut(b, "-A -t 10.0.0.100:80 -s wlc\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 0\n", "");
        let s = syn(c, 1000, 80);
        assert_eq!(one_tx(d.feed(T0, &s)), expect::icmp_error(&s, 3, 3, 0, VIP, GATEWAY_MAC, 0));
        // Per-destination rate limit: a burst of 6, then one per second.
        for k in 1..6 {
            assert!(matches!(d.feed(T0 + k, &s), Out::Tx(_)), "burst message {k}");
        }
        assert_eq!(d.feed(T0 + 10, &s), Out::Drop);
        assert!(matches!(d.feed(T0 + SEC + 10, &s), Out::Tx(_)));
        assert_eq!(d.counters.icmp_rate_limited, 1);
        // Tunnel: DF and too big after encapsulation → fragmentation needed
        // carrying mtu − 20, quoting the packet with its TTL already decremented.
        let mut d = dut(b, "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.5:80 -i -w 1\n", "");
        let big = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_SYN, 1, 0, &vec![7u8; 1460]);
        let mut quoted = big.clone();
        quoted[14 + 8] -= 1;
        lvsnic_model::xmit::ip_send_check(&mut quoted, 14);
        assert_eq!(one_tx(d.feed(T0, &big)), expect::icmp_error(&quoted, 3, 4, 1480, VIP, GATEWAY_MAC, 0));
    }
}

#[test]
fn arp_for_vips_and_the_director_only() {
    for b in 0..BACKENDS {
        use lvsnic_model::wire::build::arp_frame;
        use lvsnic_model::wire::{ArpOperation, ArpRepr, EthernetRepr, MacAddr};
        let mut d = dut(b, NAT2, "");
        let asker = MacAddr([0x02, 0xaa, 0, 0, 0, 1]);
        let req = |target: Ipv4Addr| {
            arp_frame(
                &EthernetRepr { src: asker, dst: MacAddr::BROADCAST, vlan_tci: None, ethertype: 0x0806 },
                &ArpRepr { operation: ArpOperation::Request, sender_mac: asker, sender_ip: ip("10.0.0.254"), target_mac: MacAddr::ZERO, target_ip: target },
            )
        };
        for target in [VIP, DIRECTOR_IP] {
            let reply = one_tx(d.feed(T0, &req(target)));
            let expected = arp_frame(
                &EthernetRepr { src: DIRECTOR_MAC, dst: asker, vlan_tci: None, ethertype: 0x0806 },
                &ArpRepr { operation: ArpOperation::Reply, sender_mac: DIRECTOR_MAC, sender_ip: target, target_mac: asker, target_ip: ip("10.0.0.254") },
            );
            assert_eq!(reply, expected);
        }
        assert!(matches!(d.feed(T0, &req(ip("10.0.0.50"))), Out::Host(_)));
        assert_eq!(d.counters.arp_replies, 2);
    }
}

#[test]
fn what_goes_to_the_host_stack() {
    for b in 0..BACKENDS {
        let c = ip("198.51.100.7");
        let mut d = dut(b, NAT2, "");
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("ssh to the director", tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, DIRECTOR_IP), 1000, 22, TCP_SYN, 1, 0, b"")),
            ("VIP port without service", syn(c, 1000, 443)),
            ("stray ACK to the VIP", tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_ACK, 1, 1, b"")),
            ("RST to the VIP", tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_RST, 1, 1, b"")),
            ("FTP data source port", syn(c, 20, 80)),
            ("not for us, routed", tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, ip("8.8.8.8")), 1000, 80, TCP_SYN, 1, 0, b"")),
        ];
        for (what, f) in cases {
            assert_eq!(d.feed(T0, &f), Out::Host(f.clone()), "{what}");
        }
        // A runt (shorter than an Ethernet header) is taken by no receiver:
        // dropped on receive, counted (issue 19). A bad header checksum
        // is the stack's to drop.
        assert_eq!(d.feed(T0, &[1, 2, 3]), Out::Drop);
        let mut bad = syn(c, 1000, 80);
        bad[14 + 10] ^= 0xff;
        assert_eq!(d.feed(T0, &bad), Out::Host(bad.clone()));
        // Another host's MAC is dropped by the NIC filter.
        let mut other = syn(c, 1000, 80);
        other[0..6].copy_from_slice(&[0x02, 9, 9, 9, 9, 9]);
        assert_eq!(d.feed(T0, &other), Out::Drop);
        assert_eq!(d.conns.len(), 0, "nothing above created a connection");
    }
}

/// `ipvsadm -L -n --rate` values of the first service and its servers:
/// `(cps, inpps, outpps, inbps, outbps)` each.
fn rates(d: &Director) -> Vec<[u64; 5]> {
    let (_, services) = lvsnic_model::stats::listings(d);
    let s = &services[0];
    let v = |r: &lvsnic_model::rules::ipvsadm::RateView| [r.cps, r.inpps, r.outpps, r.inbps, r.outbps];
    std::iter::once(v(&s.rates)).chain(s.dests.iter().map(|d| v(&d.rates))).collect()
}

#[test]
fn rate_estimator_sees_the_traffic_the_hardware_forwarded() {
    // Four established NAT connections, each carrying 10 client packets and
    // 10 server replies a second, plus one new connection a second, for 40 s:
    // the rates converge to 4 × 10 + 1 = 41 packets/s in, 40 out, 1 conn/s.
    // Nearly all of it is forwarded by the hardware on the model and sim
    // backends; their rates (computed by the director every 2 s) must equal
    // the golden model's, which sees every packet.
    let mut golden: Option<(Vec<[u64; 5]>, Vec<[u64; 5]>)> = None;
    for b in 0..BACKENDS {
        let mut d = dut(b, NAT2, "");
        let c = ip("198.51.100.7");
        let mut conns = Vec::new();
        for k in 0..4u16 {
            let port = 2000 + k;
            let rs = target_of(d.feed(T0, &syn(c, port, 80)));
            let n = rs.octets()[3];
            d.feed(T0 + 1000, &tcp(rs_mac(n), DIRECTOR_MAC, Ip::new(rs, c), 80, port, TCP_SYN | TCP_ACK, 9, 101, b""));
            d.feed(T0 + 2000, &tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), port, 80, TCP_ACK, 101, 10, b""));
            conns.push((port, rs, n));
        }
        let req = |port: u16| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), port, 80, TCP_ACK, 101, 10, &[0x41; 60]);
        let resp = |port: u16, rs: Ipv4Addr, n: u8| tcp(rs_mac(n), DIRECTOR_MAC, Ip::new(rs, c), 80, port, TCP_ACK, 10, 161, &[0x42; 460]);
        for s in 1..=40u64 {
            let base = T0 + s * SEC;
            d.feed(base, &syn(ip("198.51.100.8"), 3000 + s as u16, 80));
            for j in 0..10u64 {
                for (k, &(port, rs, n)) in conns.iter().enumerate() {
                    let t = base + 1000 + (j * 4 + k as u64) * (SEC / 50);
                    assert!(matches!(d.feed(t, &req(port)), Out::Tx(_)));
                    assert!(matches!(d.feed(t + 1000, &resp(port, rs, n)), Out::Tx(_)));
                }
            }
        }
        // The last tick fell at T0 + 40 s; listings between ticks are stable.
        d.advance(T0 + 41 * SEC);
        let at_41 = rates(&d);
        d.advance(T0 + 400 * SEC);
        let at_400 = rates(&d);
        if b == 0 {
            // IP total lengths: requests 40 + 60 = 100 bytes, replies 500, SYNs 40.
            let [cps, inpps, outpps, inbps, outbps] = at_41[0];
            assert_eq!(cps, 1, "{at_41:?}");
            assert!((40..=41).contains(&inpps), "{at_41:?}");
            assert!((39..=40).contains(&outpps), "{at_41:?}");
            assert!((4000..=4040).contains(&inbps), "{at_41:?}");
            assert!((19_800..=20_000).contains(&outbps), "{at_41:?}");
            // The servers share the service's traffic.
            let sum: u64 = at_41[1..].iter().map(|r| r[2]).sum();
            assert!((38..=40).contains(&sum), "{at_41:?}");
            // Idle for six minutes: every average has decayed to zero.
            assert!(at_400.iter().all(|r| *r == [0; 5]), "{at_400:?}");
            golden = Some((at_41, at_400));
        } else {
            assert!(d.in_hardware() > 1000, "{}: the traffic was forwarded in hardware", d.name);
            assert_eq!(golden.as_ref().unwrap(), &(at_41, at_400), "{}: rates differ from the golden model", d.name);
        }
    }
}

#[test]
fn icmp_rate_limit_counts_jiffies_with_the_kernel_clock() {
    // `inet_peer_xrlim_allow` adds whole jiffies to the peer's tokens: a
    // burst 3 ms into its jiffy earns the next message 997 ms later, when
    // 250 jiffies (HZ 250) have ticked; counted in nanoseconds it is 3 ms
    // short (what the model did before `[clock]`, divergence #15).
    let rules = "-A -t 10.0.0.100:80 -s wlc\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 0\n";
    let s = syn(ip("198.51.100.7"), 1000, 80);
    let clock = format!("[clock]\nhz = 250\njiffies = 1000\nat_ns = {}\n", T0 - 3 * MSEC);
    for b in 0..BACKENDS {
        for (extra, allowed) in [(clock.as_str(), true), ("", false)] {
            let mut d = dut(b, rules, extra);
            for k in 0..6 {
                assert!(matches!(d.feed(T0 + k, &s), Out::Tx(_)), "burst message {k}");
            }
            assert_eq!(d.feed(T0 + 10, &s), Out::Drop);
            let late = d.feed(T0 + 997 * MSEC, &s);
            assert_eq!(matches!(late, Out::Tx(_)), allowed, "backend {b}, clock: {}", !extra.is_empty());
        }
    }
}
