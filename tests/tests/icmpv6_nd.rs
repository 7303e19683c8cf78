//! ICMPv6 and Neighbour Discovery through the whole stack: the hardware
//! model hands Neighbour Solicitations (multicast) and IPv6 packets it does
//! not forward to the host slow path, whose director answers on the wire
//! exactly as the golden model alone does (the golden model's frames are
//! checked byte for byte in `fw-model/src/director/icmp6_tests.rs`).

use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::Director;
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::wire::icmpv6;
use lvsnic_tests::*;
use std::net::Ipv6Addr;

const CFG: &str = "[director]\nip = \"10.0.0.1\"\nip6 = \"2001:db8::1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\n\
gateway_mac = \"02:00:00:00:00:fe\"\n[neighbors]\n\"2001:db8:1::1\" = \"02:00:00:00:10:01\"\n";
const RULES: &str = "-A -t [2001:db8::10]:80 -s rr\n-a -t [2001:db8::10]:80 -r [2001:db8:1::1]:8080 -m -w 1\n";

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn golden() -> Director {
    Director::new(DirectorConfig::parse(CFG).unwrap(), &parse_rules(RULES).unwrap(), T0).unwrap()
}

/// An Ethernet frame with an IPv6 packet (traffic class and flow label 0).
fn ip6_frame(dst_mac: [u8; 6], hop: u8, nh: u8, src: Ipv6Addr, dst: Ipv6Addr, upper: &[u8]) -> Vec<u8> {
    let mut f = dst_mac.to_vec();
    f.extend_from_slice(&[0x02, 0xaa, 0, 0, 0, 1, 0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(upper.len() as u16).to_be_bytes());
    f.extend_from_slice(&[nh, hop]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(upper);
    f
}

#[test]
fn the_slow_path_answers_neighbour_solicitations_and_sends_icmpv6_errors_as_the_golden_model() {
    let dev = lvsnic::device::model::ModelDevice::model(TEST_PARAMS, Default::default()).expect("model device");
    let mut sp = lvsnic::slowpath::SlowPath::new(golden(), dev, TEST_PARAMS).expect("model data plane");
    let mut g = golden();
    let (client, vip) = (v6("2001:db8::99"), v6("2001:db8::10"));
    // Multicast NS for the VIP with the solicitor's link-layer address.
    let snm = icmpv6::solicited_node(&vip);
    let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
    ns.extend_from_slice(&vip.octets());
    ns.extend_from_slice(&[1, 1, 0x02, 0xaa, 0, 0, 0, 1]);
    icmpv6::fill_checksum(client, snm, &mut ns);
    let ns = ip6_frame(icmpv6::multicast_mac(&snm).0, 255, 58, client, snm, &ns);
    // A SYN with hop limit 1: time exceeded from the VIP.
    let mut syn = vec![0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x02, 0, 0, 0, 0, 0];
    let c = icmpv6::checksum(client, vip, &syn); // any checksum: not verified on this path
    syn[16..18].copy_from_slice(&c.to_be_bytes());
    let syn = ip6_frame([2, 0, 0, 0, 0, 1], 1, 6, client, vip, &syn);
    for f in [&ns, &syn] {
        let want = one_tx(feed(&mut g, T0, f));
        let got = sp.frame(T0, f).expect("data plane");
        assert_eq!(got.tx, vec![want], "{f:02x?}");
    }
    assert_eq!((sp.director.counters.nd_adverts, g.counters.nd_adverts), (1, 1));
    assert_eq!(sp.director.counters.icmp6_sent.get(&(3, 0)), Some(&1));
}
