//! Direct routing and IPIP tunnelling, whole frames.

use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
use lvsnic_tests::*;

fn client() -> std::net::Ipv4Addr {
    "203.0.113.9".parse().unwrap()
}

#[test]
fn direct_routing_rewrites_only_mac_and_ttl() {
    for b in 0..BACKENDS {
        // ipvsadm forces the DR real-server port to the service port.
        let mut d = dut(b, "-A -t 10.0.0.100:443 -s wlc\n-a -t 10.0.0.100:443 -r 192.168.10.4:443 -g -w 3\n", "");
        let mut ip = Ip::new(client(), VIP);
        ip.tos = 0x28;
        ip.ttl = 57;
        let syn = tcp(GATEWAY_MAC, DIRECTOR_MAC, ip, 50000, 443, TCP_SYN, 9, 0, b"");
        assert_eq!(one_tx(d.feed(T0, &syn)), expect::dr(&syn, rs_mac(4)));
        let ack = tcp(GATEWAY_MAC, DIRECTOR_MAC, ip, 50000, 443, TCP_ACK, 10, 99, b"hello");
        assert_eq!(one_tx(d.feed(T0 + 5, &ack)), expect::dr(&ack, rs_mac(4)));
        // UDP with a zero checksum stays zero under DR.
        let mut d = dut(b, "-A -u 10.0.0.100:123 -s rr\n-a -u 10.0.0.100:123 -r 192.168.10.4:123 -g -w 1\n", "");
        let q = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(), VIP), 123, 123, b"ntp", true);
        assert_eq!(one_tx(d.feed(T0, &q)), expect::dr(&q, rs_mac(4)));
    }
}

#[test]
fn ipip_tunnel_outer_header_as_the_kernel_builds_it() {
    for b in 0..BACKENDS {
        let mut d = dut(b, "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.5:80 -i -w 1\n", "");
        // DF set: outer ID 0, DF copied; ECN CE becomes ECT(0) outside.
        let mut ip = Ip::new(client(), VIP);
        ip.tos = 0xb8 | 0x03;
        let syn = tcp(GATEWAY_MAC, DIRECTOR_MAC, ip, 41000, 80, TCP_SYN, 1, 0, b"");
        assert_eq!(one_tx(d.feed(T0, &syn)), expect::tun(&syn, rs(5), rs_mac(5), 0));
        // A full 1480-byte inner packet with DF fits exactly (1500 - 20).
        let payload = vec![0xabu8; 1480 - 40];
        let big = tcp(GATEWAY_MAC, DIRECTOR_MAC, ip, 41000, 80, TCP_ACK, 2, 1, &payload);
        let out = one_tx(d.feed(T0 + 10, &big));
        assert_eq!(out.len(), 14 + 1500);
        assert_eq!(out, expect::tun(&big, rs(5), rs_mac(5), 0));
    }
}

#[test]
fn tunnel_without_df_copies_the_inner_id_and_fragments() {
    for b in 0..BACKENDS {
        let mut d = dut(b, "-A -u 10.0.0.100:5000 -s rr\n-a -u 10.0.0.100:5000 -r 192.168.10.5:5000 -i -w 1\n", "");
        let mut ip = Ip::new(client(), VIP);
        ip.df = false;
        let small = udp(GATEWAY_MAC, DIRECTOR_MAC, ip, 7000, 5000, b"x", false);
        assert_eq!(one_tx(d.feed(T0, &small)), expect::tun(&small, rs(5), rs_mac(5), 0x1234));
        // 1500-byte inner datagram without DF: the 1520-byte tunnel packet is
        // fragmented (ip_fragment): 1500 + 40 bytes, offset in 8-byte units.
        let payload = vec![0x11u8; 1500 - 28];
        let big = udp(GATEWAY_MAC, DIRECTOR_MAC, ip, 7000, 5000, &payload, false);
        let whole = expect::tun(&big, rs(5), rs_mac(5), 0x1234);
        match d.feed(T0 + 10, &big) {
            Out::Tx(frames) => {
                assert_eq!(frames.len(), 2);
                let (f1, f2) = (&frames[0], &frames[1]);
                assert_eq!(f1.len(), 14 + 1500);
                assert_eq!(f2.len(), 14 + 20 + 20);
                // Same headers except total length, flags/offset and checksum.
                for f in [f1, f2] {
                    assert_eq!(f[..14], whole[..14]);
                    assert_eq!(f[14 + 4..14 + 6], [0x12, 0x34], "outer ID = inner ID");
                    assert_eq!(f[14 + 8..14 + 10], whole[14 + 8..14 + 10], "TTL and protocol");
                    assert_eq!(f[14 + 12..14 + 20], whole[14 + 12..14 + 20], "addresses");
                    let c = lvsnic_model::wire::checksum::checksum(&f[14..34]);
                    assert_eq!(c, 0, "valid header checksum");
                }
                assert_eq!(u16::from_be_bytes([f1[16], f1[17]]), 1500);
                assert_eq!(u16::from_be_bytes([f1[20], f1[21]]), 0x2000, "MF, offset 0");
                assert_eq!(u16::from_be_bytes([f2[16], f2[17]]), 40);
                assert_eq!(u16::from_be_bytes([f2[20], f2[21]]), 1480 / 8, "offset 185, last");
                let mut data = f1[34..].to_vec();
                data.extend_from_slice(&f2[34..]);
                assert_eq!(data, whole[34..], "fragments carry the whole tunnel payload");
            }
            o => panic!("expected fragments, got {o:?}"),
        }
    }
}
