//! Shared helpers for lvsnic's conformance tests: a small test network, frame
//! builders, and *independent* constructions of the frames a Linux IPVS
//! director transmits.
//!
//! The expected frames here are built from scratch with the `wire` reprs and
//! builders (full checksum computation, fields copied one by one), never with
//! the model's transmit code (`xmit.rs`, which edits bytes in place and
//! updates checksums incrementally), so a test comparing the two compares two
//! different derivations of the same kernel behaviour.

use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::{Action, Director};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::time::{Time, SEC};
use lvsnic_model::wire::build::{icmp_frame, tcp_frame, udp_frame};
use lvsnic_model::wire::icmp::Icmpv4Repr;
use lvsnic_model::wire::{
    ChecksumCheck, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, MacAddr, TcpPacket, TcpRepr, UdpPacket, UdpRepr,
    ETHERTYPE_IPV4,
};
use std::net::Ipv4Addr;

/// The director's address.
pub const DIRECTOR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The director's MAC.
pub const DIRECTOR_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
/// The router towards the clients.
pub const GATEWAY_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0xfe]);
/// The VIP used by most tests.
pub const VIP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 100);

/// Real server `n` (1-based): 192.168.10.n.
pub fn rs(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(192, 168, 10, n)
}

/// MAC of real server `n`.
pub fn rs_mac(n: u8) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0x10, n])
}

/// DIRECTOR.toml of the test network: real servers 1..=8 are neighbors.
pub fn director_toml() -> String {
    let mut s = String::from(
        "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n\n[neighbors]\n",
    );
    for n in 1..=8u8 {
        s.push_str(&format!("\"{}\" = \"{}\"\n", rs(n), rs_mac(n)));
    }
    s
}

/// The test network's director config, with `extra` TOML appended
/// (e.g. a `[sysctl]` section).
pub fn config(extra: &str) -> DirectorConfig {
    DirectorConfig::parse(&(director_toml() + extra)).expect("test director config")
}

/// Rules with every forwarding method and a mix of schedulers, persistence
/// and protocols on the test network (real servers 1..=8): NAT wlc, DR sh
/// with persistence, UDP with NAT and DR servers, TUN mh, persistent lc.
pub const MIXED_RULES: &str = "\
-A -t 10.0.0.100:80 -s wlc
-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 3
-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 1
-A -t 10.0.0.100:443 -s sh -p 120
-a -t 10.0.0.100:443 -r 192.168.10.3:443 -g -w 1
-a -t 10.0.0.100:443 -r 192.168.10.4:443 -g -w 2
-A -u 10.0.0.101:53 -s rr
-a -u 10.0.0.101:53 -r 192.168.10.5:53 -m -w 1
-a -u 10.0.0.101:53 -r 192.168.10.6:53 -g -w 1
-A -t 10.0.0.102:80 -s mh -b mh-port
-a -t 10.0.0.102:80 -r 192.168.10.7:80 -i -w 1
-a -t 10.0.0.102:80 -r 192.168.10.8:80 -i -w 1
-A -t 10.0.0.103:25 -s lc -p 60
-a -t 10.0.0.103:25 -r 192.168.10.1:25 -m -w 1
-a -t 10.0.0.103:25 -r 192.168.10.2:25 -m -w 1
";

/// Test start time (2023-11-14T22:13:20Z).
pub const T0: Time = 1_700_000_000 * SEC;

/// A director at [`T0`] with `rules` (ipvsadm -S format) and `extra` config.
pub fn director(rules: &str, extra: &str) -> Director {
    let rules = parse_rules(rules).expect("test rules");
    Director::new(config(extra), &rules, T0).expect("test director")
}

/// A director under test: the golden model alone, or the hardware model
/// with the host slow path (`hw model + host == golden`). Reads go to the
/// golden model inside (`Deref`); frames and rule changes go through the
/// whole stack.
pub struct Dut {
    pub name: &'static str,
    kind: DutKind,
}

enum DutKind {
    Golden(Director),
    Model(Box<lvsnic::slowpath::SlowPath<lvsnic::device::model::ModelDevice>>),
    Sim(Box<lvsnic::slowpath::SlowPath<lvsnic::device::model::ModelDevice<lvsnic::device::sim_core::SimCore>>>),
}

/// Table sizes of the modelled data plane in tests (small, so cuckoo
/// displacement and action sharing are exercised).
pub const TEST_PARAMS: lvsnic_model::hw::HwParams =
    lvsnic_model::hw::HwParams { data_width: 64, flow_buckets_log2: 6, action_log2: 6, vip_count: 16 };

/// Number of backends the conformance tests run on: golden, model, and the
/// verilated RTL at 64 and 512 bits. (A sim crate built with its stand-in
/// core instead of `hw/rtl/` fails these tests; it is not a data plane.)
pub const BACKENDS: usize = 4;

/// Backend `b` (0 golden, 1 model, 2 sim 64-bit, 3 sim 512-bit) with `rules`
/// and `extra` config, at [`T0`].
pub fn dut(b: usize, rules: &str, extra: &str) -> Dut {
    match b {
        0 => Dut { name: "golden", kind: DutKind::Golden(director(rules, extra)) },
        1 => {
            let dev = lvsnic::device::model::ModelDevice::model(TEST_PARAMS, Default::default()).expect("model device");
            let sp = lvsnic::slowpath::SlowPath::new(director(rules, extra), dev, TEST_PARAMS).expect("model data plane");
            Dut { name: "model", kind: DutKind::Model(Box::new(sp)) }
        }
        _ => {
            let width = if b == 2 { 64 } else { 512 };
            let dev = lvsnic::replay::sim_device(width).expect("simulated core");
            let params = lvsnic::device::sim_core::SimCore::params(width);
            let sp = lvsnic::slowpath::SlowPath::new(director(rules, extra), dev, params).expect("sim data plane");
            Dut { name: if b == 2 { "sim64" } else { "sim512" }, kind: DutKind::Sim(Box::new(sp)) }
        }
    }
}

impl std::ops::Deref for Dut {
    type Target = Director;
    fn deref(&self) -> &Director {
        match &self.kind {
            DutKind::Golden(d) => d,
            DutKind::Model(sp) => &sp.director,
            DutKind::Sim(sp) => &sp.director,
        }
    }
}

impl Dut {
    /// Feeds one frame at time `t`.
    pub fn feed(&mut self, t: Time, frame: &[u8]) -> Out {
        match &mut self.kind {
            DutKind::Golden(d) => feed(d, t, frame),
            DutKind::Model(sp) => split_out(sp.frame(t, frame).expect("data plane")),
            DutKind::Sim(sp) => split_out(sp.frame(t, frame).expect("simulated data plane")),
        }
    }

    /// Runs timers up to `t`.
    pub fn advance(&mut self, t: Time) {
        match &mut self.kind {
            DutKind::Golden(d) => d.advance(t),
            DutKind::Model(sp) => sp.advance(t),
            DutKind::Sim(sp) => sp.advance(t),
        }
    }

    pub fn edit_dest(&mut self, key: &lvsnic_model::rules::ServiceKey, r: &lvsnic_model::rules::DestRule) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.edit_dest(key, r),
            DutKind::Model(sp) => sp.edit_dest(key, r),
            DutKind::Sim(sp) => sp.edit_dest(key, r),
        }
    }

    pub fn add_dest(&mut self, key: &lvsnic_model::rules::ServiceKey, r: &lvsnic_model::rules::DestRule) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.add_dest(key, r).map(|_| ()),
            DutKind::Model(sp) => sp.add_dest(key, r),
            DutKind::Sim(sp) => sp.add_dest(key, r),
        }
    }

    pub fn del_dest(&mut self, key: &lvsnic_model::rules::ServiceKey, addr: Ipv4Addr, port: u16) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.del_dest(key, addr, port),
            DutKind::Model(sp) => sp.del_dest(key, addr, port),
            DutKind::Sim(sp) => sp.del_dest(key, addr, port),
        }
    }

    pub fn add_service(&mut self, rule: &lvsnic_model::rules::ServiceRule) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.add_service(rule).map(|_| ()),
            DutKind::Model(sp) => sp.add_service(rule),
            DutKind::Sim(sp) => sp.add_service(rule),
        }
    }

    pub fn del_service(&mut self, key: &lvsnic_model::rules::ServiceKey) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.del_service(key),
            DutKind::Model(sp) => sp.del_service(key),
            DutKind::Sim(sp) => sp.del_service(key),
        }
    }

    /// Credits what the hardware counted to the statistics (before reading them).
    pub fn settle(&mut self) {
        match &mut self.kind {
            DutKind::Golden(_) => {}
            DutKind::Model(sp) => sp.settle(),
            DutKind::Sim(sp) => sp.settle(),
        }
    }

    /// Frames the hardware forwarded without the host so far (model only).
    pub fn in_hardware(&mut self) -> u64 {
        match &mut self.kind {
            DutKind::Golden(_) => 0,
            DutKind::Model(sp) => {
                use lvsnic_model::hw::Csr;
                sp.dp.read32(lvsnic_model::hw::regs::CNT_BASE + 8) as u64
            }
            DutKind::Sim(sp) => {
                use lvsnic_model::hw::Csr;
                sp.dp.read32(lvsnic_model::hw::regs::CNT_BASE + 8) as u64
            }
        }
    }
}

fn split_out(r: lvsnic::slowpath::FrameResult) -> Out {
    if !r.tx.is_empty() {
        Out::Tx(r.tx)
    } else if let Some(h) = r.host {
        Out::Host(h)
    } else {
        Out::Drop
    }
}

/// What came out for one input frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    /// Transmitted frames, in order.
    Tx(Vec<Vec<u8>>),
    /// Handed to the host stack (unchanged).
    Host(Vec<u8>),
    /// Nothing sent (dropped, or a fragment held for reassembly).
    Drop,
}

/// Feeds one frame at time `t`.
pub fn feed(d: &mut Director, t: Time, frame: &[u8]) -> Out {
    let mut f = frame.to_vec();
    let mut extra = Vec::new();
    match d.process(t, &mut f, &mut extra) {
        Action::Transmit => {
            let mut v = vec![f];
            v.extend(extra);
            Out::Tx(v)
        }
        Action::ToHost(_) => Out::Host(f),
        // Nothing leaves for a fragment kept for reassembly either.
        Action::Drop(_) | Action::Held => Out::Drop,
    }
}

/// Asserts that exactly one frame was transmitted and returns it.
pub fn one_tx(o: Out) -> Vec<u8> {
    match o {
        Out::Tx(mut v) if v.len() == 1 => v.remove(0),
        other => panic!("expected one transmitted frame, got {other:?}"),
    }
}

/// IPv4 header options of a packet being built.
#[derive(Clone, Copy, Debug)]
pub struct Ip {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub tos: u8,
    pub ident: u16,
    pub df: bool,
}

impl Ip {
    /// A typical Linux client packet: TTL 64, DF, TOS 0.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr) -> Self {
        Ip { src, dst, ttl: 64, tos: 0, ident: 0x1234, df: true }
    }
    fn repr(&self) -> Ipv4Repr {
        Ipv4Repr {
            src_addr: self.src,
            dst_addr: self.dst,
            protocol: 0,
            payload_len: 0,
            ttl: self.ttl,
            tos: self.tos,
            ident: self.ident,
            dont_frag: self.df,
        }
    }
}

/// A TCP frame from `src_mac` to `dst_mac`.
#[allow(clippy::too_many_arguments)]
pub fn tcp(src_mac: MacAddr, dst_mac: MacAddr, ip: Ip, sport: u16, dport: u16, flags: u8, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    let eth = EthernetRepr { src: src_mac, dst: dst_mac, vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
    let t = TcpRepr { src_port: sport, dst_port: dport, seq_number: seq, ack_number: ack, flags, window_len: 29200 };
    tcp_frame(&eth, &ip.repr(), &t, payload)
}

/// A UDP frame from `src_mac` to `dst_mac`; `zero_csum` sends checksum 0.
pub fn udp(src_mac: MacAddr, dst_mac: MacAddr, ip: Ip, sport: u16, dport: u16, payload: &[u8], zero_csum: bool) -> Vec<u8> {
    let eth = EthernetRepr { src: src_mac, dst: dst_mac, vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
    let u = UdpRepr { src_port: sport, dst_port: dport };
    let mut f = udp_frame(&eth, &ip.repr(), &u, payload);
    if zero_csum {
        let l = 14 + 20 + 6;
        f[l] = 0;
        f[l + 1] = 0;
    }
    f
}

/// Everything about a parsed TCP/UDP frame needed to rebuild it.
struct Parsed {
    eth: EthernetRepr,
    ip: Ipv4Repr,
    l4: L4,
    payload: Vec<u8>,
}

enum L4 {
    Tcp(TcpRepr),
    Udp(UdpRepr, u16),
}

fn parse(frame: &[u8]) -> Parsed {
    let e = EthernetFrame::new_checked(frame).expect("ethernet");
    let eth = EthernetRepr::parse(&e).expect("eth repr");
    let l2 = e.header_len();
    let p = Ipv4Packet::new_checked(&frame[l2..]).expect("ipv4");
    let ip = Ipv4Repr::parse(&p, ChecksumCheck::Verify).expect("ipv4 repr");
    let l4b = p.payload();
    match ip.protocol {
        6 => {
            let t = TcpPacket::new_checked(l4b).expect("tcp");
            let r = TcpRepr::parse(&t, ip.src_addr, ip.dst_addr, ChecksumCheck::Verify).expect("tcp repr");
            Parsed { eth, ip, l4: L4::Tcp(r), payload: t.payload().to_vec() }
        }
        17 => {
            let u = UdpPacket::new_checked(l4b).expect("udp");
            let r = UdpRepr::parse(&u, ip.src_addr, ip.dst_addr, ChecksumCheck::Verify).expect("udp repr");
            Parsed { eth, ip, l4: L4::Udp(r, u.checksum()), payload: u.payload().to_vec() }
        }
        p => panic!("unexpected protocol {p}"),
    }
}

fn rebuild(p: &Parsed) -> Vec<u8> {
    match &p.l4 {
        L4::Tcp(t) => tcp_frame(&p.eth, &p.ip, t, &p.payload),
        // A zero UDP checksum is replaced by a full one by IPVS NAT, and a
        // full one is what the builder computes.
        L4::Udp(u, _) => udp_frame(&p.eth, &p.ip, u, &p.payload),
    }
}

/// Expected frames, derived independently of the model's transmit code.
pub mod expect {
    use super::*;

    /// NAT request (`ip_vs_nat_xmit`): destination address and port become
    /// the real server's, TTL − 1, all checksums valid; MACs to the real
    /// server.
    pub fn nat_request(frame: &[u8], rs_ip: Ipv4Addr, rs_port: u16, rs_mac: MacAddr) -> Vec<u8> {
        let mut p = parse(frame);
        p.ip.dst_addr = rs_ip;
        p.ip.ttl -= 1;
        match &mut p.l4 {
            L4::Tcp(t) => t.dst_port = rs_port,
            L4::Udp(u, _) => u.dst_port = rs_port,
        }
        p.eth.dst = rs_mac;
        p.eth.src = DIRECTOR_MAC;
        rebuild(&p)
    }

    /// NAT reply (`ip_forward` + `handle_response`): source becomes VIP:vport,
    /// TTL − 1; MACs to the gateway.
    pub fn nat_reply(frame: &[u8], vip: Ipv4Addr, vport: u16) -> Vec<u8> {
        let mut p = parse(frame);
        p.ip.src_addr = vip;
        p.ip.ttl -= 1;
        match &mut p.l4 {
            L4::Tcp(t) => t.src_port = vport,
            L4::Udp(u, _) => u.src_port = vport,
        }
        p.eth.dst = GATEWAY_MAC;
        p.eth.src = DIRECTOR_MAC;
        rebuild(&p)
    }

    /// Direct routing (`ip_vs_dr_xmit`): only the MACs and the TTL change.
    pub fn dr(frame: &[u8], rs_mac: MacAddr) -> Vec<u8> {
        let mut p = parse(frame);
        p.ip.ttl -= 1;
        p.eth.dst = rs_mac;
        p.eth.src = DIRECTOR_MAC;
        let mut f = rebuild(&p);
        if let L4::Udp(_, 0) = p.l4 {
            // DR does not touch L4: a zero UDP checksum stays zero.
            let l = p.eth.header_len() + 20 + 6;
            f[l] = 0;
            f[l + 1] = 0;
        }
        f
    }

    /// IPIP tunnel (`ip_vs_tunnel_xmit`): the inner packet with TTL − 1,
    /// inside a 20-byte header from the director to the real server (TOS
    /// copied with CE → ECT(0), DF copied, ID 0 when DF else `outer_id` (the
/// model's choice: the inner ID),
    /// TTL = inner TTL).
    pub fn tun(frame: &[u8], rs_ip: Ipv4Addr, rs_mac: MacAddr, outer_id: u16) -> Vec<u8> {
        let mut p = parse(frame);
        p.ip.ttl -= 1;
        let inner = rebuild(&p);
        let l2 = p.eth.header_len();
        let inner_ip = &inner[l2..];
        let mut tos = p.ip.tos;
        if tos & 3 == 3 {
            tos = (tos & !3) | 2;
        }
        let outer = Ipv4Repr {
            src_addr: DIRECTOR_IP,
            dst_addr: rs_ip,
            protocol: 4,
            payload_len: inner_ip.len(),
            ttl: p.ip.ttl,
            tos,
            ident: if p.ip.dont_frag { 0 } else { outer_id },
            dont_frag: p.ip.dont_frag,
        };
        let eth = EthernetRepr { src: DIRECTOR_MAC, dst: rs_mac, vlan_tci: p.eth.vlan_tci, ethertype: ETHERTYPE_IPV4 };
        let mut out = vec![0u8; l2 + 20 + inner_ip.len()];
        eth.emit(&mut EthernetFrame::new_unchecked(&mut out[..])).unwrap();
        let mut ipp = Ipv4Packet::new_unchecked(&mut out[l2..]);
        outer.emit(&mut ipp).unwrap();
        ipp.payload_mut().copy_from_slice(inner_ip);
        out
    }

    /// An ICMP error as `icmp_send` builds it about the IPv4 packet in
    /// `orig` (which starts with a 14-byte Ethernet header): TOS
    /// (orig & 0x1E) | 0xC0, TTL 64, no DF, the first min(len, 548) bytes
    /// of the original datagram quoted.
    #[allow(clippy::too_many_arguments)]
    pub fn icmp_error(orig: &[u8], typ: u8, code: u8, rest: u32, src: Ipv4Addr, dst_mac: MacAddr, ident: u16) -> Vec<u8> {
        let ip = Ipv4Packet::new_checked(&orig[14..]).unwrap();
        let tot = ip.total_len() as usize;
        let quote = &orig[14..14 + tot.min(548)];
        let eth = EthernetRepr { src: DIRECTOR_MAC, dst: dst_mac, vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
        let r = Ipv4Repr {
            src_addr: src,
            dst_addr: ip.src_addr(),
            protocol: 1,
            payload_len: 0,
            ttl: 64,
            tos: (ip.tos() & 0x1e) | 0xc0,
            ident,
            dont_frag: false,
        };
        icmp_frame(&eth, &r, &Icmpv4Repr { msg_type: typ, msg_code: code, rest_of_header: rest }, quote)
    }
}
