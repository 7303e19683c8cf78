//! NAT (masquerading) end to end through the golden-model director: both
//! directions, whole frames compared with independently built expectations.

use lvsnic_model::wire::{TCP_ACK, TCP_FIN, TCP_PSH, TCP_SYN};
use lvsnic_tests::*;

const RULES: &str = "\
-A -t 10.0.0.100:80 -s rr
-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1
-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 1
";

fn client() -> std::net::Ipv4Addr {
    "198.51.100.7".parse().unwrap()
}

#[test]
fn tcp_handshake_data_and_close_both_directions() {
    for b in 0..BACKENDS {
        let mut d = dut(b, RULES, "");
        let c = client();
        let t = T0;
        // rr walks the list newest first: 192.168.10.2 is picked first.
        let syn = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_SYN, 1000, 0, b"");
        let out = one_tx(d.feed(t, &syn));
        assert_eq!(out, expect::nat_request(&syn, rs(2), 8080, rs_mac(2)));

        let synack = tcp(rs_mac(2), DIRECTOR_MAC, Ip::new(rs(2), c), 8080, 40000, TCP_SYN | TCP_ACK, 5000, 1001, b"");
        let out = one_tx(d.feed(t + 1000, &synack));
        assert_eq!(out, expect::nat_reply(&synack, VIP, 80));

        let ack = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_ACK, 1001, 5001, b"");
        assert_eq!(one_tx(d.feed(t + 2000, &ack)), expect::nat_request(&ack, rs(2), 8080, rs_mac(2)));

        let req = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_ACK | TCP_PSH, 1001, 5001, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(one_tx(d.feed(t + 3000, &req)), expect::nat_request(&req, rs(2), 8080, rs_mac(2)));

        let resp = tcp(rs_mac(2), DIRECTOR_MAC, Ip::new(rs(2), c), 8080, 40000, TCP_ACK | TCP_PSH, 5001, 1028, &[0x55; 1200]);
        assert_eq!(one_tx(d.feed(t + 4000, &resp)), expect::nat_reply(&resp, VIP, 80));

        let fin = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 80, TCP_FIN | TCP_ACK, 1028, 6201, b"");
        assert_eq!(one_tx(d.feed(t + 5000, &fin)), expect::nat_request(&fin, rs(2), 8080, rs_mac(2)));

        // Connection counters: SYN_RECV/ESTABLISHED are active, after the FIN it is CLOSE_WAIT (inactive).
        d.settle();
        if d.name != "golden" {
            assert!(d.in_hardware() >= 2, "the established data packets were forwarded by the hardware");
        }
        let s = &d.services;
        let rs2 = s.live_services().next().unwrap().order[0];
        assert_eq!(s.dest(rs2).addr, rs(2));
        assert_eq!((s.dest(rs2).activeconns, s.dest(rs2).inactconns), (0, 1));
        assert_eq!(s.dest(rs2).stats.conns, 1);
        assert_eq!(s.dest(rs2).stats.inpkts, 4);
        assert_eq!(s.dest(rs2).stats.outpkts, 2);

        // The next client goes to the other server.
        let syn2 = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40001, 80, TCP_SYN, 77, 0, b"");
        assert_eq!(one_tx(d.feed(t + 6000, &syn2)), expect::nat_request(&syn2, rs(1), 8080, rs_mac(1)));
    }
}

#[test]
fn padded_minimum_frames_are_trimmed() {
    for b in 0..BACKENDS {
        let mut d = dut(b, RULES, "");
        let mut syn = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(), VIP), 40000, 80, TCP_SYN, 1, 0, b"");
        let exact = syn.clone();
        lvsnic_model::wire::build::pad_min(&mut syn);
        assert_eq!(syn.len(), 60);
        assert_eq!(one_tx(d.feed(T0, &syn)), expect::nat_request(&exact, rs(2), 8080, rs_mac(2)));
    }
}

#[test]
fn udp_with_and_without_checksum() {
    for b in 0..BACKENDS {
        let rules = "-A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.3:5353 -m -w 1\n";
        let mut d = dut(b, rules, "");
        let c = client();
        let q = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 33333, 53, b"query", false);
        assert_eq!(one_tx(d.feed(T0, &q)), expect::nat_request(&q, rs(3), 5353, rs_mac(3)));
        // A zero UDP checksum gets a full checksum (udp_dnat_handler).
        let q0 = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 33334, 53, b"query2", true);
        assert_eq!(one_tx(d.feed(T0 + 10, &q0)), expect::nat_request(&q0, rs(3), 5353, rs_mac(3)));
        let r0 = udp(rs_mac(3), DIRECTOR_MAC, Ip::new(rs(3), c), 5353, 33334, b"answer", true);
        assert_eq!(one_tx(d.feed(T0 + 20, &r0)), expect::nat_reply(&r0, VIP, 53));
    }
}
