//! The gateway's MAC learned at run time (`[director] gateway` without
//! `gateway_mac`), against a director with the same MAC static.

use super::{Action, Director, DirectorError};
use crate::config::{DirectorConfig, NO_STATIC_GATEWAY};
use crate::rules::ipvsadm::parse_rules;
use crate::time::SEC;
use crate::wire::build::tcp_frame;
use crate::wire::{EthernetRepr, Ipv4Repr, MacAddr, TcpRepr, TCP_ACK, TCP_PSH, TCP_SYN};
use std::net::Ipv4Addr;

const HEAD: &str = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\n";
const NB: &str = "[neighbors]\n\"192.168.10.1\" = \"02:00:00:00:10:01\"\n";
const RULES: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n";
const DIR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const GW_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xfe]);
const RS_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0x10, 1]);
const GW: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);
const CLIENT: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
const VIP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 100);
const RS: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 1);
const T0: u64 = 1_700_000_000 * SEC;

fn director(director_keys: &str, learning: bool) -> Director {
    let mut cfg = DirectorConfig::parse(&format!("{HEAD}{director_keys}{NB}")).unwrap();
    cfg.resolve_neighbors = learning;
    Director::new(cfg, &parse_rules(RULES).unwrap(), T0).unwrap()
}

#[allow(clippy::too_many_arguments)]
fn tcp(src: MacAddr, s: Ipv4Addr, d: Ipv4Addr, sp: u16, dp: u16, flags: u8, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let eth = EthernetRepr { src, dst: DIR_MAC, vlan_tci: None, ethertype: 0 };
    let ip = Ipv4Repr { src_addr: s, dst_addr: d, protocol: 6, payload_len: 0, ttl, tos: 0, ident: 7, dont_frag: true };
    let t = TcpRepr { src_port: sp, dst_port: dp, seq_number: 1000, ack_number: 5001, flags, window_len: 512 };
    tcp_frame(&eth, &ip, &t, payload)
}

/// What a director transmits for `f` and which next hop it left unresolved.
fn run(d: &mut Director, ts: u64, f: &[u8]) -> (Vec<Vec<u8>>, Option<std::net::IpAddr>) {
    let (mut f, mut extra) = (f.to_vec(), Vec::new());
    match d.process(ts, &mut f, &mut extra) {
        Action::Transmit => (std::iter::once(f).chain(extra).collect(), d.unresolved),
        a => panic!("not transmitted: {a:?}"),
    }
}

#[test]
fn towards_an_unknown_gateway_frames_are_marked_unresolved_and_go_byte_exact_once_it_is_learned() {
    let mut st = director("gateway_mac = \"02:00:00:00:00:fe\"\n", false);
    let mut lr = director("gateway = \"10.0.0.254\"\n", true);
    assert_eq!(lr.gateway_mac(), None);
    let syn = tcp(GW_MAC, CLIENT, VIP, 40000, 80, TCP_SYN, 64, b"");
    let (a, ua) = run(&mut st, T0, &syn);
    let (b, ub) = run(&mut lr, T0, &syn);
    assert_eq!((a.clone(), ua), (b, ub), "the request goes to the real server alike");
    assert_eq!(a[0][..6], RS_MAC.0);
    // The NAT reply towards the client: the gateway's MAC is unknown.
    let syn_ack = tcp(RS_MAC, RS, CLIENT, 80, 40000, TCP_SYN | TCP_ACK, 64, b"");
    let (a, ua) = run(&mut st, T0 + SEC, &syn_ack);
    let (b, ub) = run(&mut lr, T0 + SEC, &syn_ack);
    assert_eq!(ua, None);
    assert_eq!(ub, Some(GW.into()), "held on the gateway");
    assert_eq!(a[0][..6], GW_MAC.0);
    assert_eq!(b[0][..6], [0; 6], "no MAC yet");
    assert_eq!(a[0][6..], b[0][6..], "otherwise the same frame");
    // An ICMP error towards the client (TTL exceeded on a request) too.
    let dying = tcp(GW_MAC, CLIENT, VIP, 40000, 80, TCP_ACK, 1, b"x");
    let (a, _) = run(&mut st, T0 + 2 * SEC, &dying);
    let (b, ub) = run(&mut lr, T0 + 2 * SEC, &dying);
    assert_eq!(ub, Some(GW.into()));
    assert_eq!((a[0][..6] == GW_MAC.0, b[0][..6] == [0; 6]), (true, true));
    assert_eq!(a[0][6..], b[0][6..]);
    // The host learns it: released frames get it (the host writes it),
    // and from now on frames leave with it, exactly as the static director's.
    assert!(lr.set_learned(GW, Some(GW_MAC)), "what the director sends changed");
    assert_eq!(lr.gateway_mac(), Some(GW_MAC));
    let data = tcp(RS_MAC, RS, CLIENT, 80, 40000, TCP_ACK | TCP_PSH, 64, b"hello");
    let (a, ua) = run(&mut st, T0 + 3 * SEC, &data);
    let (b, ub) = run(&mut lr, T0 + 3 * SEC, &data);
    assert_eq!((a, ua), (b, ub));
    // Forgotten again (failed): marked unresolved again.
    lr.set_learned(GW, None);
    let (b, ub) = run(&mut lr, T0 + 4 * SEC, &data);
    assert_eq!((b[0][..6] == [0; 6], ub), (true, Some(GW.into())));
}

#[test]
fn a_static_gateway_mac_wins_and_neighbours_are_not_the_gateway() {
    let mut d = director("gateway_mac = \"02:00:00:00:00:fe\"\ngateway = \"10.0.0.254\"\n", true);
    assert!(d.set_learned(GW, Some(MacAddr([2, 0, 0, 0, 0, 0x99]))));
    assert_eq!(d.next_hop_mac(CLIENT), Some(GW_MAC), "gateway_mac is static: it wins");
    let mut d = director("gateway = \"10.0.0.254\"\n", true);
    assert_eq!(d.next_hop_mac(RS), Some(RS_MAC), "a neighbour is not behind the gateway");
    assert!(!d.via_gateway(RS) && d.via_gateway(CLIENT));
    d.set_learned(CLIENT, Some(MacAddr([2, 0, 0, 0, 0, 0x33])));
    assert!(!d.via_gateway(CLIENT));
    assert_eq!(d.next_hop_mac(Ipv4Addr::new(198, 51, 100, 11)), None);
}

#[test]
fn without_learning_a_gateway_address_alone_is_refused_in_one_line() {
    let cfg = DirectorConfig::parse(&format!("{HEAD}gateway = \"10.0.0.254\"\n{NB}")).unwrap();
    assert_eq!((cfg.gateway, cfg.gateway_mac), (Some(GW), None));
    let e = Director::new(cfg, &parse_rules(RULES).unwrap(), T0).err().expect("refused");
    assert!(matches!(e, DirectorError::NoGatewayMac));
    assert_eq!(e.to_string(), NO_STATIC_GATEWAY);
    assert!(!e.to_string().contains('\n'));
}
