//! Learned neighbours through the exception loop on the `model` backend,
//! byte for byte against a director whose `[neighbors]` has the same MAC:
//! a real server without an entry is accepted, the first frame to it is
//! held until an ARP answer gives its MAC and then sent exactly as the
//! static director sends it; the connection is offloaded; a gratuitous ARP
//! with a new MAC rewrites the card's action in place and the connection's
//! next frames leave the card with the new MAC, nothing else changed.

use lvsnic::control::Control;
use lvsnic::device::model::{ModelDevice, MODEL_PARAMS};
use lvsnic::device::rings::RingConfig;
use lvsnic::slowpath::SlowPath;
use lvsnic_fixtures::*;
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::rules::ipvsadm::parse_rules_full;
use lvsnic_model::wire::{MacAddr, TCP_ACK, TCP_PSH, TCP_SYN};
use std::net::Ipv4Addr;

type Ctl = Control<ModelDevice>;

fn control(learning: bool) -> Ctl {
    let head = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n";
    let text = if learning { head.to_string() } else { format!("{head}[neighbors]\n\"192.168.10.1\" = \"{}\"\n", rs_mac(1)) };
    let mut cfg = DirectorConfig::parse(&text).unwrap();
    cfg.resolve_neighbors = learning;
    let rules = parse_rules_full("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n").unwrap().rules;
    let d = lvsnic_model::director::Director::new(cfg, &rules, T0).unwrap();
    let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
    Control::new(SlowPath::new(d, dev, MODEL_PARAMS).unwrap(), MODEL_PARAMS.vip_count, Default::default())
}

fn arp(op: u16, sha: MacAddr, spa: Ipv4Addr, tpa: Ipv4Addr) -> Vec<u8> {
    let mut f = if op == 2 { DIRECTOR_MAC.0.to_vec() } else { vec![0xff; 6] };
    f.extend_from_slice(&sha.0);
    f.extend_from_slice(&[8, 6, 0, 1, 8, 0, 6, 4]);
    f.extend_from_slice(&op.to_be_bytes());
    f.extend_from_slice(&sha.0);
    f.extend_from_slice(&spa.octets());
    f.extend_from_slice(&if op == 2 { DIRECTOR_MAC.0 } else { [0; 6] });
    f.extend_from_slice(&tpa.octets());
    f.resize(60, 0);
    f
}

const CLIENT: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
const MS: u64 = 1_000_000;

fn from_client(flags: u8, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(CLIENT, VIP), 40000, 80, flags, seq, ack, payload)
}

#[test]
fn held_until_arp_then_byte_exact_and_a_mac_change_rewrites_the_action_in_place() {
    let (mut st, mut lr) = (control(false), control(true));
    let mut t = T0;
    let mut both = |t: u64, f: &[u8]| (st.frame(t, f).unwrap(), lr.frame(t, f).unwrap());

    // The SYN: the static director sends it; the learning one holds it.
    let (a, b) = both(t, &from_client(TCP_SYN, 1000, 0, b""));
    assert_eq!(a.tx.len(), 1);
    assert!(b.tx.is_empty(), "held, not sent to an unknown MAC");
    let held_syn = a.tx[0].clone();
    assert_eq!(held_syn[..6], rs_mac(1).0);
    t += MS;
    // The real server's ARP answer releases it, byte for byte as the static director sent it.
    let (_, b) = both(t, &arp(2, rs_mac(1), rs(1), DIRECTOR_IP));
    assert_eq!(b.tx, vec![held_syn]);
    t += MS;
    let syn_ack = tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), CLIENT), 80, 40000, TCP_SYN | TCP_ACK, 5000, 1001, b"");
    let (a, b) = both(t, &syn_ack);
    assert_eq!(a.tx, b.tx);
    t += MS;
    let (a, b) = both(t, &from_client(TCP_ACK, 1001, 5001, b""));
    assert_eq!(a.tx, b.tx);
    t += MS;
    let (a, b) = both(t, &from_client(TCP_ACK | TCP_PSH, 1001, 5001, b"hello"));
    assert_eq!((a.in_hardware, b.in_hardware), (true, true), "offloaded on both");
    assert_eq!(a.tx, b.tx);

    // A gratuitous ARP with a new MAC.
    let moved = MacAddr([2, 0, 0, 0, 0x77, 1]);
    t += MS;
    let r = lr.frame(t, &arp(1, moved, rs(1), rs(1))).unwrap();
    assert!(r.tx.is_empty(), "{:?}", r.tx);
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!(s["neighbors"]["entries"]["192.168.10.1"]["card_macs"], serde_json::json!([moved.to_string()]), "{s}");
    assert_eq!(s["offload"]["connections"], 1, "{s}");
    assert_eq!(s["neighbors"]["changed"], 1);
    // The connection's next frame: forwarded by the card, to the new MAC,
    // otherwise exactly what the static director forwards.
    t += MS;
    let f = from_client(TCP_ACK | TCP_PSH, 1006, 5001, b"again");
    let a = st.frame(t, &f).unwrap();
    let b = lr.frame(t, &f).unwrap();
    assert!(b.in_hardware, "still on the card");
    let mut want = a.tx[0].clone();
    want[..6].copy_from_slice(&moved.0);
    assert_eq!(b.tx, vec![want]);
    assert_eq!(lr.director().conns.len(), st.director().conns.len());
}

#[test]
fn a_real_server_without_a_mac_is_refused_only_without_learning() {
    let head = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n";
    let rules = parse_rules_full("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n").unwrap().rules;
    let cfg = DirectorConfig::parse(head).unwrap();
    let e = lvsnic_model::director::Director::new(cfg.clone(), &rules, T0).err().expect("refused");
    assert!(e.to_string().contains("has no entry in [neighbors]"), "{e}");
    let mut cfg = cfg;
    cfg.resolve_neighbors = true;
    assert!(lvsnic_model::director::Director::new(cfg, &rules, T0).is_ok());
}

const GW: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);
const S: u64 = 1_000_000_000;

/// A director whose real server is static and whose gateway is
/// `gateway_mac` (`learning` false) or only its address, learned.
fn gateway_control(learning: bool) -> Ctl {
    let head = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\n";
    let gw = if learning { "gateway = \"10.0.0.254\"\n".to_string() } else { format!("gateway_mac = \"{GATEWAY_MAC}\"\n") };
    let text = format!("{head}{gw}[neighbors]\n\"192.168.10.1\" = \"{}\"\n", rs_mac(1));
    let mut cfg = DirectorConfig::parse(&text).unwrap();
    cfg.resolve_neighbors = learning;
    let rules = parse_rules_full("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n").unwrap().rules;
    let d = lvsnic_model::director::Director::new(cfg, &rules, T0).unwrap();
    let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
    Control::new(SlowPath::new(d, dev, MODEL_PARAMS).unwrap(), MODEL_PARAMS.vip_count, Default::default())
}

fn pair(st: &mut Ctl, lr: &mut Ctl, t: u64, f: &[u8]) -> (lvsnic::slowpath::FrameResult, lvsnic::slowpath::FrameResult) {
    (st.frame(t, f).unwrap(), lr.frame(t, f).unwrap())
}

fn from_rs(flags: u8, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), CLIENT), 80, 40000, flags, seq, ack, payload)
}

#[test]
fn a_nat_reply_is_held_until_the_gateways_arp_and_a_gateway_mac_change_rewrites_the_reply_action_in_place() {
    let (mut st, mut lr) = (gateway_control(false), gateway_control(true));
    let mut t = T0;

    let (a, b) = pair(&mut st, &mut lr, t, &from_client(TCP_SYN, 1000, 0, b""));
    assert_eq!(a.tx, b.tx, "the request goes to the (static) real server alike");
    // The SYN-ACK towards the client: the gateway's MAC is not known yet.
    t += MS;
    let (a, b) = pair(&mut st, &mut lr, t, &from_rs(TCP_SYN | TCP_ACK, 5000, 1001, b""));
    assert_eq!(a.tx.len(), 1);
    assert_eq!(a.tx[0][..6], GATEWAY_MAC.0);
    assert!(b.tx.is_empty(), "held, not sent to an unknown MAC");
    let s = serde_json::to_value(lr.status()).unwrap();
    let gw = &s["neighbors"]["entries"]["10.0.0.254"];
    assert_eq!((gw["gateway"].clone(), gw["held"].clone(), gw["state"].clone()), (true.into(), 1.into(), "incomplete".into()), "{s}");
    // The gateway's ARP reply releases it, byte for byte as the static director sent it.
    t += MS;
    let (_, b) = pair(&mut st, &mut lr, t, &arp(2, GATEWAY_MAC, GW, DIRECTOR_IP));
    assert_eq!(b.tx, a.tx);
    t += MS;
    let (a, b) = pair(&mut st, &mut lr, t, &from_client(TCP_ACK, 1001, 5001, b""));
    assert_eq!(a.tx, b.tx);
    t += MS;
    let (a, b) = pair(&mut st, &mut lr, t, &from_client(TCP_ACK | TCP_PSH, 1001, 5001, b"hello"));
    assert_eq!((a.in_hardware, b.in_hardware), (true, true), "offloaded on both");
    assert_eq!(a.tx, b.tx);
    t += MS;
    let (a, b) = pair(&mut st, &mut lr, t, &from_rs(TCP_ACK | TCP_PSH, 5001, 1006, b"world"));
    assert_eq!((a.in_hardware, b.in_hardware), (true, true), "the reply too");
    assert_eq!(a.tx, b.tx);
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!(s["neighbors"]["entries"]["10.0.0.254"]["card_macs"], serde_json::json!([GATEWAY_MAC.to_string()]), "{s}");

    // The gateway's MAC changes (a gratuitous ARP): the reply action is
    // rewritten in place, the connection stays on the card.
    let moved = MacAddr([2, 0, 0, 0, 0x77, 0xfe]);
    t += MS;
    let r = lr.frame(t, &arp(1, moved, GW, GW)).unwrap();
    assert!(r.tx.is_empty(), "{:?}", r.tx);
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!(s["neighbors"]["entries"]["10.0.0.254"]["card_macs"], serde_json::json!([moved.to_string()]), "{s}");
    assert_eq!(s["offload"]["connections"], 1, "{s}");
    assert_eq!(s["neighbors"]["changed"], 1);
    // The connection's next reply: forwarded by the card, to the new MAC,
    // otherwise exactly what the static director forwards.
    t += MS;
    let f = from_rs(TCP_ACK | TCP_PSH, 5006, 1006, b"again");
    let a = st.frame(t, &f).unwrap();
    let b = lr.frame(t, &f).unwrap();
    assert!(b.in_hardware, "still on the card");
    let mut want = a.tx[0].clone();
    want[..6].copy_from_slice(&moved.0);
    assert_eq!(b.tx, vec![want]);
    // And the requests are untouched.
    t += MS;
    let f = from_client(TCP_ACK | TCP_PSH, 1006, 5011, b"more");
    let (a, b) = (st.frame(t, &f).unwrap(), lr.frame(t, &f).unwrap());
    assert!(b.in_hardware);
    assert_eq!(a.tx, b.tx);

    // The gateway stops answering: after its refresh requests the entry
    // fails, and the connection leaves the card (its replies come up and
    // are held again).
    let learned_at = t - 2 * MS;
    for k in 0..4 {
        let now = learned_at + lvsnic::neighbors::REACHABLE_NS + k * S;
        lr.advance(now);
        lr.neighbors_mut().due_probes(now);
    }
    assert!(lr.apply_neighbors().is_empty());
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!(s["neighbors"]["entries"]["10.0.0.254"]["state"], "failed", "{s}");
    assert_eq!(s["offload"]["connections"], 0, "{s}");
    let f = from_rs(TCP_ACK | TCP_PSH, 5011, 1010, b"late");
    let b = lr.frame(learned_at + lvsnic::neighbors::REACHABLE_NS + 4 * S, &f).unwrap();
    assert!(!b.in_hardware && b.tx.is_empty(), "to the host, and not sent without a MAC");
    assert_eq!(lr.director().conns.len(), st.director().conns.len());
}

#[test]
fn a_gateway_that_moves_takes_its_connections_off_the_card_until_the_new_one_answers() {
    // `gateway = "fib"`: the default route moved to another router.
    let (mut st, mut lr) = (gateway_control(false), gateway_control(true));
    let mut t = T0;
    pair(&mut st, &mut lr, t, &from_client(TCP_SYN, 1000, 0, b""));
    t += MS;
    pair(&mut st, &mut lr, t, &arp(2, GATEWAY_MAC, GW, DIRECTOR_IP));
    t += MS;
    pair(&mut st, &mut lr, t, &from_rs(TCP_SYN | TCP_ACK, 5000, 1001, b""));
    t += MS;
    let (a, b) = pair(&mut st, &mut lr, t, &from_client(TCP_ACK, 1001, 5001, b""));
    assert_eq!(a.tx, b.tx);
    t += MS;
    let (_, b) = pair(&mut st, &mut lr, t, &from_rs(TCP_ACK | TCP_PSH, 5001, 1001, b"hi"));
    assert!(b.in_hardware, "offloaded with the first gateway's MAC");

    let next = Ipv4Addr::new(10, 0, 0, 253);
    let next_mac = MacAddr([2, 0, 0, 0, 0, 0xfd]);
    lr.set_gateway_address(Some(next));
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!(s["offload"]["connections"], 0, "{s}");
    assert_eq!(s["neighbors"]["entries"]["10.0.0.253"]["gateway"], true, "{s}");
    assert_eq!(s["neighbors"]["entries"]["10.0.0.254"], serde_json::Value::Null, "{s}");
    // The next reply is held for the new gateway, then goes to its MAC.
    t += MS;
    let f = from_rs(TCP_ACK | TCP_PSH, 5003, 1001, b"there");
    let a = st.frame(t, &f).unwrap();
    let b = lr.frame(t, &f).unwrap();
    assert!(!b.in_hardware && b.tx.is_empty(), "held");
    t += MS;
    let r = lr.frame(t, &arp(2, next_mac, next, DIRECTOR_IP)).unwrap();
    let mut want = a.tx[0].clone();
    want[..6].copy_from_slice(&next_mac.0);
    assert_eq!(r.tx, vec![want]);
}

/// An IPv6 director with a NAT service to 2001:db8:1::1: its `[neighbors]`
/// has the real server's MAC (`learning` false), or it learns it from the
/// host (`resolve_neighbors6`, as `lvsnic daemon --host-tap`).
fn control6(learning: bool) -> Ctl {
    let head = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n";
    let text = if learning { head.to_string() } else { format!("{head}[neighbors]\n\"2001:db8:1::1\" = \"{RS6_MAC}\"\n") };
    let mut cfg = DirectorConfig::parse(&text).unwrap();
    cfg.resolve_neighbors = true;
    cfg.resolve_neighbors6 = learning;
    let rules = parse_rules_full("-A -t [2001:db8::10]:80 -s rr\n-a -t [2001:db8::10]:80 -r [2001:db8:1::1]:80 -m -w 1\n").unwrap().rules;
    let d = lvsnic_model::director::Director::new(cfg, &rules, T0).unwrap();
    let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
    Control::new(SlowPath::new(d, dev, MODEL_PARAMS).unwrap(), MODEL_PARAMS.vip_count, Default::default())
}

const RS6_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0x20, 1]);

#[test]
fn ipv6_held_until_the_kernel_knows_the_mac_then_byte_exact_and_a_mac_change_rewrites_the_action_in_place() {
    use lvsnic::neighbors::Source;
    use std::net::{IpAddr, Ipv6Addr};
    let rs6: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
    let (client, vip): (Ipv6Addr, Ipv6Addr) = ("2001:db8:ff::10".parse().unwrap(), "2001:db8::10".parse().unwrap());
    let from_client = |flags: u8, seq: u32, ack: u32, payload: &[u8]| tcp6(GATEWAY_MAC, DIRECTOR_MAC, (client, vip), 40000, 80, flags, seq, ack, payload);
    let (mut st, mut lr) = (control6(false), control6(true));
    let mut t = T0;
    let syn = from_client(TCP_SYN, 1000, 0, b"");
    let a = st.frame(t, &syn).unwrap();
    let b = lr.frame(t, &syn).unwrap();
    assert_eq!(a.tx.len(), 1);
    assert_eq!(a.tx[0][..6], RS6_MAC.0);
    assert!(b.tx.is_empty(), "held, not sent to an unknown MAC");
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!((s["neighbors"]["held"].clone(), s["neighbors"]["entries"]["2001:db8:1::1"]["state"].clone()), (1.into(), "incomplete".into()), "{s}");
    // The real server is among those the host resolves (the daemon asks the kernel).
    assert_eq!(lr.real_servers(), vec![IpAddr::V6(rs6)]);
    assert!(st.real_servers().is_empty(), "without resolve_neighbors6 IPv6 real servers are not resolved");
    // The kernel's answer releases it, byte for byte as the static director sent it.
    t += MS;
    lr.neighbors_mut().learn(rs6.into(), RS6_MAC, Source::Kernel, t);
    assert_eq!(lr.apply_neighbors(), a.tx);
    let syn_ack = tcp6(RS6_MAC, DIRECTOR_MAC, (rs6, client), 80, 40000, TCP_SYN | TCP_ACK, 5000, 1001, b"");
    for f in [syn_ack, from_client(TCP_ACK, 1001, 5001, b"")] {
        t += MS;
        let (a, b) = (st.frame(t, &f).unwrap(), lr.frame(t, &f).unwrap());
        assert_eq!(a.tx, b.tx);
    }
    t += MS;
    let f = from_client(TCP_ACK | TCP_PSH, 1001, 5001, b"hello");
    let (a, b) = (st.frame(t, &f).unwrap(), lr.frame(t, &f).unwrap());
    assert_eq!((a.in_hardware, b.in_hardware), (true, true), "offloaded on both");
    assert_eq!(a.tx, b.tx);

    // The kernel says the MAC changed: the card's action is rewritten in place.
    let moved = MacAddr([2, 0, 0, 0, 0x77, 1]);
    t += MS;
    lr.neighbors_mut().learn(rs6.into(), moved, Source::Kernel, t);
    assert!(lr.apply_neighbors().is_empty());
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!(s["neighbors"]["entries"]["2001:db8:1::1"]["card_macs"], serde_json::json!([moved.to_string()]), "{s}");
    assert_eq!((s["offload"]["connections"].clone(), s["neighbors"]["changed"].clone()), (1.into(), 1.into()), "{s}");
    t += MS;
    let f = from_client(TCP_ACK | TCP_PSH, 1006, 5001, b"again");
    let (a, b) = (st.frame(t, &f).unwrap(), lr.frame(t, &f).unwrap());
    assert!(b.in_hardware, "still on the card");
    let mut want = a.tx[0].clone();
    want[..6].copy_from_slice(&moved.0);
    assert_eq!(b.tx, vec![want]);

    // The kernel loses it: the connection leaves the card, its next frame is held.
    t += MS;
    lr.neighbors_mut().kernel_lost(rs6.into(), t);
    lr.apply_neighbors();
    let s = serde_json::to_value(lr.status()).unwrap();
    assert_eq!(s["offload"]["connections"], 0, "{s}");
    t += MS;
    let f = from_client(TCP_ACK | TCP_PSH, 1011, 5001, b"third");
    let b = lr.frame(t, &f).unwrap();
    assert!(!b.in_hardware && b.tx.is_empty(), "held while unknown: {:?}", b.tx);
    assert_eq!(serde_json::to_value(lr.status()).unwrap()["neighbors"]["held"], 2);
}
