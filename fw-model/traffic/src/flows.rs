//! Open-loop established traffic for benchmarks ([`established_flows`]).

use lvsnic_model::wire::MacAddr;
use super::frames::{self as fb, Filler, L2, L3};
use super::{client_addr6, client_addrs, per_2_32, subseed, Outcome, TrafficError, DEFAULT_START, MAX_CLIENTS};
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::conn::flags as cf;
use lvsnic_model::director::Director;
use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::rng::SplitMix64;
use lvsnic_model::rules::{Protocol, RuleSet, ServiceKey};
use lvsnic_model::time::Time;
use lvsnic_model::wire::{checksum, TcpRepr, TCP_ACK, TCP_PSH, TCP_SYN};
use std::net::IpAddr;

/// What [`established_flows`] generates.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    /// Seed of everything.
    pub seed: u64,
    /// Flows (connections) to establish.
    pub flows: usize,
    /// Data frames after the handshakes, round-robin over the flows.
    pub packets: usize,
    /// Distinct client addresses; flow `i` is client `i % clients`, port
    /// `32768 + i / clients`.
    pub clients: usize,
    /// Timestamp of the first frame.
    pub start: Time,
    /// Time between consecutive frames (at least 1 µs).
    pub gap: Time,
    /// TCP/UDP payload bytes of each data frame (0 = pure ACKs; at most the
    /// MSS, MTU − 40).
    pub payload_len: usize,
    /// Share of flows that are UDP (when the rules have both TCP and UDP
    /// services).
    pub udp_fraction: f64,
    /// Whether NAT flows alternate client and real-server frames (otherwise
    /// all data frames come from clients).
    pub replies: bool,
}

impl Default for FlowSpec {
    fn default() -> Self {
        FlowSpec {
            seed: 1,
            flows: 1000,
            packets: 100_000,
            clients: 256,
            start: DEFAULT_START,
            gap: 1_000,
            payload_len: 512,
            udp_fraction: 0.0,
            replies: true,
        }
    }
}

/// A flow after its handshake: templates of its next client and server
/// data frames and the numbers to patch into them.
struct Flow {
    tcp: bool,
    nat: bool,
    /// IPv6: no IP ID to patch, the TCP header after 40 bytes of IP.
    v6: bool,
    client_tpl: Vec<u8>,
    server_tpl: Vec<u8>,
    c_seq: u32,
    s_seq: u32,
    c_id: u16,
    s_id: u16,
    sent_c: u32,
    sent_s: u32,
    turns: u64,
}

const L3_OFF: usize = 14;
const L4_OFF: usize = 34;
const L4_OFF6: usize = L3_OFF + lvsnic_model::wire::ipv6::HEADER_LEN;

/// Open-loop established traffic: every flow's handshake (client SYN, the
/// real server's SYN-ACK for NAT, client ACK; for UDP the first datagram
/// and, for NAT, the reply), then `spec.packets` data frames round-robin
/// over the flows the director accepted, each `spec.gap` after the previous
/// one.
///
/// The handshakes run through a private [`Director`] (to learn each flow's
/// real server, so NAT replies come from the right address and MAC); the
/// data frames do not: they are copies of per-flow templates with sequence,
/// acknowledgement and IP ID (IPv4) patched and the checksums updated
/// incrementally (RFC 1624), consistent with each other (ack numbers follow
/// the other side's data). Flows whose SYN the director does not forward
/// are left out of the data phase. Flows to IPv6 services come from the
/// clients' IPv6 addresses ([`client_addr6`](super::client_addr6)), with an
/// MSS of MTU − 60.
pub fn established_flows(
    spec: &FlowSpec,
    cfg: &DirectorConfig,
    rules: &RuleSet,
) -> Result<Vec<PcapRecord>, TrafficError> {
    let mss = cfg.mtu.saturating_sub(40).clamp(536, 1460) as usize;
    let bad = |m: String| Err(TrafficError::Spec(m));
    if cfg.gateway_mac.is_none() {
        return Err(lvsnic_model::director::DirectorError::NoGatewayMac.into());
    }
    if spec.clients == 0 || spec.clients > MAX_CLIENTS {
        return bad(format!("clients {} is not between 1 and {MAX_CLIENTS}", spec.clients));
    }
    if spec.gap < 1_000 {
        return bad(format!("gap {} ns is below 1 µs", spec.gap));
    }
    if spec.payload_len > mss {
        return bad(format!("payload {} bytes exceeds the MSS ({mss})", spec.payload_len));
    }
    if !(0.0..=1.0).contains(&spec.udp_fraction) {
        return bad(format!("udp_fraction {} is not between 0 and 1", spec.udp_fraction));
    }
    let per_client = spec.flows.div_ceil(spec.clients);
    if per_client > 60999 - 32768 + 1 {
        return bad(format!("{} flows need {per_client} ports per client: use more clients", spec.flows));
    }
    let end = spec.start as u128 + (spec.flows as u128 * 4 + spec.packets as u128) * spec.gap as u128;
    if end >= (u32::MAX as u128) * 1_000_000_000 {
        return bad("the capture would end beyond what a pcap timestamp holds".into());
    }
    let mut tcp_svcs: Vec<(IpAddr, u16)> = Vec::new();
    let mut udp_svcs: Vec<(IpAddr, u16)> = Vec::new();
    for s in &rules.services {
        let or = |p: u16, default: u16| if p == 0 { default } else { p };
        match s.key {
            ServiceKey::Addr { proto: Protocol::Tcp, addr, port } => tcp_svcs.push((addr, or(port, 80))),
            ServiceKey::Addr { proto: Protocol::Udp, addr, port } => udp_svcs.push((addr, or(port, 53))),
            _ => {}
        }
    }
    let mss6 = cfg.mtu.saturating_sub(60).clamp(1220, 1440) as usize;
    if spec.payload_len > mss6 && tcp_svcs.iter().chain(&udp_svcs).any(|s| s.0.is_ipv6()) {
        return bad(format!("payload {} bytes exceeds the IPv6 MSS ({mss6})", spec.payload_len));
    }
    if spec.flows > 0 && tcp_svcs.is_empty() && udp_svcs.is_empty() {
        return Err(TrafficError::NoServices);
    }
    let mut d = Director::new(cfg.clone(), rules, spec.start)?;
    let mut r = SplitMix64::new(subseed(spec.seed, 2));
    let addrs = client_addrs(spec.clients, &mut r);
    let filler = Filler::new();
    let mut payload = Vec::with_capacity(spec.payload_len);
    filler.extend(&mut payload, r.below(Filler::LEN as u64) as usize, spec.payload_len);
    let udp_thr = per_2_32(spec.udp_fraction);

    let mut out = Vec::with_capacity(spec.flows * 3 + spec.packets);
    let mut ts = spec.start;
    let mut extra = Vec::new();
    let mut run = |d: &mut Director, frame: Vec<u8>, out: &mut Vec<PcapRecord>| -> Outcome {
        let mut work = frame.clone();
        extra.clear();
        let o = Outcome::of(d, ts, &mut work, &mut extra);
        out.push(PcapRecord { ts_ns: ts, orig_len: frame.len() as u32, data: frame });
        ts += spec.gap;
        o
    };
    let client_l2 = L2 { src: cfg.gateway_mac.unwrap_or(MacAddr::ZERO), dst: cfg.mac, vlan: None };
    let mut flows = Vec::with_capacity(spec.flows);
    for i in 0..spec.flows {
        let caddr4 = addrs[i % spec.clients];
        let cport = 32768 + (i / spec.clients) as u16;
        let tcp = if udp_svcs.is_empty() {
            true
        } else if tcp_svcs.is_empty() {
            false
        } else {
            r.below(1 << 32) >= udp_thr
        };
        let list = if tcp { &tcp_svcs } else { &udp_svcs };
        let (vip, vport) = list[r.below(list.len() as u64) as usize];
        let v6 = vip.is_ipv6();
        let caddr = if v6 { IpAddr::V6(client_addr6(caddr4)) } else { IpAddr::V4(caddr4) };
        let mss = if v6 { mss6 } else { mss };
        let ttl = 64 - (2 + r.below(20) as u8);
        let mut c_id = r.next_u64() as u16;
        let mut s_id = r.next_u64() as u16;
        let cl3 = |id: &mut u16| {
            *id = id.wrapping_add(1);
            L3 { src: caddr, dst: vip, ttl, ident: *id, df: true }
        };
        let c_isn = r.next_u64() as u32;
        let s_isn = r.next_u64() as u32;
        let first = if tcp {
            let t = TcpRepr {
                src_port: cport,
                dst_port: vport,
                seq_number: c_isn,
                ack_number: 0,
                flags: TCP_SYN,
                window_len: 64240,
            };
            fb::tcp(&client_l2, &cl3(&mut c_id), &t, &fb::client_syn_options(mss as u16), &[], &[])
        } else {
            fb::udp(&client_l2, &cl3(&mut c_id), cport, vport, &payload, false)
        };
        if run(&mut d, first, &mut out) != Outcome::Forwarded {
            continue;
        }
        let Some(id) = d.last_conn else { continue };
        let c = *d.conns.get(id);
        let rs = d.conns.addrs(id).daddr;
        let nat = c.fwd() == cf::MASQ;
        let rs_mac = match rs {
            IpAddr::V4(a) => cfg.next_hop_mac(a),
            IpAddr::V6(a) => cfg.neighbors6.get(&a).copied().or(cfg.gateway_mac).unwrap_or(MacAddr::ZERO),
        };
        let server_l2 = L2 { src: rs_mac, dst: cfg.mac, vlan: None };
        let sl3 = |id: &mut u16| {
            *id = id.wrapping_add(1);
            L3 { src: rs, dst: caddr, ttl: 64, ident: *id, df: true }
        };
        let (c_seq, s_seq) = (c_isn.wrapping_add(1), s_isn.wrapping_add(1));
        if tcp {
            if nat {
                let t = TcpRepr {
                    src_port: c.dport,
                    dst_port: cport,
                    seq_number: s_isn,
                    ack_number: c_seq,
                    flags: TCP_SYN | TCP_ACK,
                    window_len: 65160,
                };
                let f = fb::tcp(&server_l2, &sl3(&mut s_id), &t, &fb::server_synack_options(mss as u16), &[], &[]);
                if run(&mut d, f, &mut out) != Outcome::Forwarded {
                    continue;
                }
            }
            let t = TcpRepr {
                src_port: cport,
                dst_port: vport,
                seq_number: c_seq,
                ack_number: s_seq,
                flags: TCP_ACK,
                window_len: 502,
            };
            let f = fb::tcp(&client_l2, &cl3(&mut c_id), &t, &[], &[], &[]);
            if run(&mut d, f, &mut out) != Outcome::Forwarded {
                continue;
            }
        } else if nat {
            let f = fb::udp(&server_l2, &sl3(&mut s_id), c.dport, cport, &payload, false);
            if run(&mut d, f, &mut out) != Outcome::Forwarded {
                continue;
            }
        }
        let flags = TCP_ACK | if payload.is_empty() { 0 } else { TCP_PSH };
        let (client_tpl, server_tpl) = if tcp {
            let t = TcpRepr {
                src_port: cport,
                dst_port: vport,
                seq_number: c_seq,
                ack_number: s_seq,
                flags,
                window_len: 502,
            };
            let ct = fb::tcp(&client_l2, &cl3(&mut c_id), &t, &[], &[], &payload);
            let t = TcpRepr {
                src_port: c.dport,
                dst_port: cport,
                seq_number: s_seq,
                ack_number: c_seq,
                flags,
                window_len: 509,
            };
            let st = if nat { fb::tcp(&server_l2, &sl3(&mut s_id), &t, &[], &[], &payload) } else { Vec::new() };
            (ct, st)
        } else {
            let ct = fb::udp(&client_l2, &cl3(&mut c_id), cport, vport, &payload, false);
            let st =
                if nat { fb::udp(&server_l2, &sl3(&mut s_id), c.dport, cport, &payload, false) } else { Vec::new() };
            (ct, st)
        };
        flows.push(Flow {
            tcp,
            nat,
            v6,
            client_tpl,
            server_tpl,
            c_seq,
            s_seq,
            c_id,
            s_id,
            sent_c: 0,
            sent_s: 0,
            turns: 0,
        });
    }
    if flows.is_empty() {
        return Ok(out);
    }
    let n = flows.len();
    let len = payload.len() as u32;
    for j in 0..spec.packets {
        let f = &mut flows[j % n];
        let server = spec.replies && f.nat && f.turns % 2 == 1;
        f.turns += 1;
        let (tpl, k, id0) = if server { (&f.server_tpl, f.sent_s, f.s_id) } else { (&f.client_tpl, f.sent_c, f.c_id) };
        let mut frame = tpl.clone();
        let l4 = if f.v6 {
            L4_OFF6
        } else {
            let new_id = id0.wrapping_add(k as u16);
            patch16(&mut frame, L3_OFF + 4, L3_OFF + 10, new_id);
            L4_OFF
        };
        if f.tcp {
            let (seq0, ack0) = if server { (f.s_seq, f.c_seq) } else { (f.c_seq, f.s_seq) };
            let (mine, theirs) = if server { (f.sent_s, f.sent_c) } else { (f.sent_c, f.sent_s) };
            patch32(&mut frame, l4 + 4, l4 + 16, seq0.wrapping_add(mine.wrapping_mul(len)));
            patch32(&mut frame, l4 + 8, l4 + 16, ack0.wrapping_add(theirs.wrapping_mul(len)));
        }
        if server {
            f.sent_s += 1;
        } else {
            f.sent_c += 1;
        }
        out.push(PcapRecord { ts_ns: ts, orig_len: frame.len() as u32, data: frame });
        ts += spec.gap;
    }
    Ok(out)
}

/// Writes the 16-bit field at `at` and updates the checksum at `csum`.
fn patch16(f: &mut [u8], at: usize, csum: usize, v: u16) {
    let old = u16::from_be_bytes([f[at], f[at + 1]]);
    let c = u16::from_be_bytes([f[csum], f[csum + 1]]);
    f[at..at + 2].copy_from_slice(&v.to_be_bytes());
    f[csum..csum + 2].copy_from_slice(&checksum::update16(c, old, v).to_be_bytes());
}

/// Writes the 32-bit field at `at` and updates the checksum at `csum`.
fn patch32(f: &mut [u8], at: usize, csum: usize, v: u32) {
    let old = u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
    let c = u16::from_be_bytes([f[csum], f[csum + 1]]);
    f[at..at + 4].copy_from_slice(&v.to_be_bytes());
    f[csum..csum + 2].copy_from_slice(&checksum::update32(c, old, v).to_be_bytes());
}
