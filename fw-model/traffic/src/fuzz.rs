//! Random worlds for differential testing of the data plane (`RTL == hw
//! model`): a random but consistent configuration and table contents, and a
//! stream of frames that mostly hit installed flows (so every rewrite path
//! runs) with every kind of oddity mixed in: malformed, truncated, runt,
//! jumbo, padded, VLAN-tagged, IP options, fragments, bad checksums, TTL
//! 0..2, TCP control flags, zero UDP checksums, misses, non-IP frames; and
//! IPv6 frames of installed IPv6 flows (every op) and of none, with
//! extension headers, fragments, bad versions and lengths, hop limits 0..2.
//! Table and register changes can be interleaved with the traffic.

use lvsnic_model::hw::placement::FlowPlacer;
use lvsnic_model::hw::pipeline::HwParams;
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::tables::{ActionEntry, ActionOp, Flow6Entry, FlowEntry, FlowKey, FlowKey6};
use lvsnic_model::rng::SplitMix64;
use lvsnic_model::wire::checksum;
use lvsnic_model::wire::MacAddr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A random data-plane configuration with its flows and actions.
#[derive(Clone, Debug)]
pub struct FuzzWorld {
    /// Table and VIP sizes of the data plane the world is built for.
    pub params: HwParams,
    /// The director's MAC address (`MAC_LO`/`MAC_HI`).
    pub mac: MacAddr,
    /// The director's IPv4 address, host order.
    pub ip: u32,
    /// The link MTU (1500, 9000 or 576).
    pub mtu: u16,
    /// Whether `CTRL_PMTU_DISC` is set in `CTRL`.
    pub pmtu_disc: bool,
    /// Virtual IPs installed in the VIP table, host order.
    pub vips: Vec<u32>,
    /// The action table: `actions[i]` is written at action index `i + 1`.
    pub actions: Vec<ActionEntry>,
    /// Installed flows: key, action index, ack_fast.
    pub flows: Vec<(FlowKey, u16, bool)>,
    /// Installed IPv6 flows: key, action index, ack_fast.
    pub flows6: Vec<(FlowKey6, u16, bool)>,
    /// Installed IPv6 entries, each a decoy: its tail slot, read as an IPv4
    /// slot, is a valid entry for the IPv4 key beside it, which the card
    /// must never match (docs/hardware.md §4) and the traffic sends.
    pub decoys: Vec<(FlowKey6, FlowKey)>,
    placer: FlowPlacer,
    rng: SplitMix64,
    ts: u64,
    seq: u32,
}

fn be16(v: u16) -> [u8; 2] {
    v.to_be_bytes()
}

impl FuzzWorld {
    /// A world from `seed` with about `nflows` flows.
    pub fn new(seed: u64, params: HwParams, nflows: usize) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mac = MacAddr([0x02, 0, 0, 0, 0, 1]);
        let nvip = (1 + rng.below(params.vip_count as u64)) as usize;
        let vips: Vec<u32> = (0..nvip).map(|i| 0x0A00_0064 + i as u32).collect();
        let nact = (params.actions() - 1).min(64);
        let mut actions = Vec::with_capacity(nact);
        for i in 0..nact {
            let op = [ActionOp::Route, ActionOp::NatDnat, ActionOp::NatSnat, ActionOp::Tunnel][i % 4];
            actions.push(ActionEntry {
                op,
                // One action in eight diverts its flows to the host; five
                // in sixteen are IPv6 ones (every op; IPv6 flows use them,
                // and an IPv4 flow on one goes to the host).
                host: i % 8 == 7,
                mac: MacAddr([0x02, 0, 0, 0, 0x10, i as u8]),
                addr: if i % 16 >= 11 {
                    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0xa, i as u16))
                } else {
                    IpAddr::V4(Ipv4Addr::from(0xC0A8_0A00 + i as u32))
                },
                port: rng.below(65536) as u16,
                l4_delta: rng.below(65536) as u16,
            });
        }
        let mut w = FuzzWorld {
            params,
            mac,
            ip: 0x0A00_0001,
            mtu: [1500u16, 1500, 9000, 576][rng.below(4) as usize],
            pmtu_disc: rng.below(4) != 0,
            vips,
            actions,
            flows: Vec::new(),
            flows6: Vec::new(),
            decoys: Vec::new(),
            placer: FlowPlacer::new(params),
            rng,
            ts: 1_700_000_000_000_000_000,
            seq: 0,
        };
        for i in 0..nflows {
            if i % 16 == 15 {
                w.add_decoy(&mut Vec::new());
            } else if i % 8 == 3 {
                w.add_random_flow6(&mut Vec::new());
            } else {
                w.add_random_flow(&mut Vec::new());
            }
        }
        w
    }

    fn random_key(&mut self) -> FlowKey {
        let r = &mut self.rng;
        let proto = if r.below(3) == 0 { 17 } else { 6 };
        let daddr = if r.below(4) != 0 { self.vips[r.below(self.vips.len() as u64) as usize] } else { 0xC633_6400 + r.below(256) as u32 };
        FlowKey {
            proto,
            saddr: 0xC612_0000 + r.below(1 << 16) as u32,
            daddr,
            sport: 1024 + r.below(64512) as u16,
            dport: [80u16, 443, 53, 8080][r.below(4) as usize],
        }
    }

    fn add_random_flow(&mut self, writes: &mut Vec<(u32, u32)>) {
        let key = self.random_key();
        let action = 1 + self.rng.below(self.actions.len() as u64) as u16;
        let ack_fast = self.rng.below(5) != 0;
        if self.placer.slot_of(&key).is_some() || self.decoys.iter().any(|d| d.1 == key) {
            return;
        }
        if let Ok(ws) = self.placer.insert(FlowEntry::new(key, action, ack_fast)) {
            writes.extend(ws.iter().flat_map(|w| w.register_writes()));
            self.flows.push((key, action, ack_fast));
        }
    }

    fn random_key6(&mut self) -> FlowKey6 {
        let r = &mut self.rng;
        let proto = if r.below(3) == 0 { 17 } else { 6 };
        FlowKey6 {
            proto,
            saddr: Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, r.below(4) as u16, r.below(65536) as u16),
            daddr: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10 + r.below(4) as u16),
            sport: 1024 + r.below(64512) as u16,
            dport: [80u16, 443, 53, 8080][r.below(4) as usize],
        }
    }

    /// Installs an IPv6 flow, mostly on an IPv6 action (one in eight on
    /// any action: an IPv4 one sends its frames to the host).
    fn add_random_flow6(&mut self, writes: &mut Vec<(u32, u32)>) {
        let key = self.random_key6();
        let v6: Vec<u16> = (0..self.actions.len()).filter(|&i| self.actions[i].addr.is_ipv6()).map(|i| i as u16 + 1).collect();
        let action = if v6.is_empty() || self.rng.below(8) == 0 {
            1 + self.rng.below(self.actions.len() as u64) as u16
        } else {
            v6[self.rng.below(v6.len() as u64) as usize]
        };
        let ack_fast = self.rng.below(5) != 0;
        if self.placer.slot_of6(&key).is_some() || self.decoys.iter().any(|d| d.0 == key) {
            return;
        }
        if let Ok(ws) = self.placer.insert6(Flow6Entry::new(key, action, ack_fast)) {
            writes.extend(ws.iter().flat_map(|w| w.register_writes()));
            self.flows6.push((key, action, ack_fast));
        }
    }

    /// Installs an IPv6 entry whose tail slot holds the bits of a valid
    /// IPv4 entry for a fresh key (its destination address is those bits,
    /// its ports 0), in a bucket that key's lookup reads.
    fn add_decoy(&mut self, writes: &mut Vec<(u32, u32)>) {
        let k4 = self.random_key();
        if self.placer.slot_of(&k4).is_some() || self.decoys.iter().any(|d| d.1 == k4) {
            return;
        }
        let action = 1 + self.rng.below(self.actions.len() as u64) as u16;
        let b = FlowEntry::new(k4, action, true).to_bits();
        let daddr = Ipv6Addr::from(b[..4].iter().rev().fold(0u128, |a, &w| a << 32 | w as u128));
        let mask = (1u32 << self.params.flow_buckets_log2) - 1;
        let buckets = |h: (u32, u32)| (h.0 & mask, h.1 & mask);
        let want = buckets(k4.hashes());
        // A source address that puts one of the pair's buckets on one of
        // the IPv4 key's (same way).
        let Some(k6) = (0..4096).find_map(|_| {
            let saddr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, self.rng.below(65536) as u16, self.rng.below(65536) as u16);
            let k6 = FlowKey6 { proto: 6, saddr, daddr, sport: 0, dport: 0 };
            let got = buckets(k6.hashes());
            (got.0 == want.0 || got.1 == want.1).then_some(k6)
        }) else {
            return;
        };
        let Ok(ws) = self.placer.insert6(Flow6Entry::new(k6, action, true)) else { return };
        writes.extend(ws.iter().flat_map(|w| w.register_writes()));
        let head = self.placer.slot_of6(&k6).expect("just installed");
        let (way, bucket) = (head >> (self.params.flow_buckets_log2 + 2), (head >> 2) as u32 & mask);
        if bucket == if way == 0 { want.0 } else { want.1 } {
            self.decoys.push((k6, k4));
        } else if let Some(w) = self.placer.remove6(&k6) {
            writes.extend(w.register_writes());
        }
    }

    /// Register writes that load this world into a core out of reset.
    pub fn setup_writes(&self) -> Vec<(u32, u32)> {
        // IP6: the source of the IPv6 tunnel headers of the IPv6 TUNNEL actions.
        let mut w = identity_writes(self.mac, self.ip, std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1), self.mtu).to_vec();
        for (i, v) in self.vips.iter().enumerate() {
            w.push((VIP_BASE + 4 * i as u32, *v));
        }
        w.push((VIP_VALID, (1u64 << self.vips.len()) as u32 - 1));
        for (i, a) in self.actions.iter().enumerate() {
            w.extend(action_writes(i + 1, &a.to_bits()));
        }
        w.extend(self.placer.load_writes().iter().flat_map(|s| s.register_writes()));
        w.push((CTRL, CTRL_ENABLE | if self.pmtu_disc { CTRL_PMTU_DISC } else { 0 }));
        w
    }

    /// Random table and register changes (flows added, removed and
    /// rewritten, an action changed, MTU or pmtu_disc toggled), as register
    /// writes to apply between two frames.
    pub fn mutate(&mut self) -> Vec<(u32, u32)> {
        let mut w = Vec::new();
        for _ in 0..1 + self.rng.below(4) {
            match self.rng.below(10) {
                0 if self.rng.below(4) == 0 => {
                    if !self.decoys.is_empty() && self.rng.below(2) == 0 {
                        let i = self.rng.below(self.decoys.len() as u64) as usize;
                        let (k6, _) = self.decoys.swap_remove(i);
                        if let Some(s) = self.placer.remove6(&k6) {
                            w.extend(s.register_writes());
                        }
                    } else {
                        self.add_decoy(&mut w);
                    }
                }
                0 | 1 if self.rng.below(3) == 0 => {
                    if !self.flows6.is_empty() && self.rng.below(2) == 0 {
                        let i = self.rng.below(self.flows6.len() as u64) as usize;
                        let (k6, _, _) = self.flows6.swap_remove(i);
                        if let Some(s) = self.placer.remove6(&k6) {
                            w.extend(s.register_writes());
                        }
                    } else {
                        self.add_random_flow6(&mut w);
                    }
                }
                0..=3 => self.add_random_flow(&mut w),
                4..=6 if !self.flows.is_empty() => {
                    let i = self.rng.below(self.flows.len() as u64) as usize;
                    let (k, _, _) = self.flows.swap_remove(i);
                    if let Some(s) = self.placer.remove(&k) {
                        w.extend(s.register_writes());
                    }
                }
                7 if !self.flows.is_empty() => {
                    let i = self.rng.below(self.flows.len() as u64) as usize;
                    self.flows[i].2 = !self.flows[i].2;
                    let (k, a, f) = self.flows[i];
                    if let Some(s) = self.placer.update(FlowEntry::new(k, a, f)) {
                        w.extend(s.register_writes());
                    }
                }
                8 => {
                    let i = self.rng.below(self.actions.len() as u64) as usize;
                    self.actions[i].port = self.rng.below(65536) as u16;
                    self.actions[i].l4_delta = self.rng.below(65536) as u16;
                    w.extend(action_writes(i + 1, &self.actions[i].to_bits()));
                }
                _ => {
                    if self.rng.below(2) == 0 {
                        self.mtu = [1500u16, 9000, 576, 1400][self.rng.below(4) as usize];
                        w.push((MTU, self.mtu as u32));
                    } else {
                        self.pmtu_disc = !self.pmtu_disc;
                        w.push((CTRL, CTRL_ENABLE | if self.pmtu_disc { CTRL_PMTU_DISC } else { 0 }));
                    }
                }
            }
        }
        w
    }

    /// The next random frame with its timestamp and sequence number.
    pub fn frame(&mut self) -> (Vec<u8>, u64, u32) {
        self.ts += 1 + self.rng.below(50_000);
        self.seq = self.seq.wrapping_add(1);
        let f = self.build_frame();
        (f, self.ts, self.seq)
    }

    fn build_frame(&mut self) -> Vec<u8> {
        let kind = self.rng.below(100);
        if kind < 6 {
            return self.odd_l2_frame();
        }
        if kind >= 86 {
            return self.build_frame6();
        }
        // An IPv4 TCP/UDP frame, mostly of an installed flow.
        let key = if kind < 75 && !self.flows.is_empty() {
            let i = self.rng.below(self.flows.len() as u64) as usize;
            self.flows[i].0
        } else if kind < 80 && !self.decoys.is_empty() {
            let i = self.rng.below(self.decoys.len() as u64) as usize;
            self.decoys[i].1
        } else {
            let mut k = self.random_key();
            if self.rng.below(4) == 0 {
                k.daddr = self.ip;
            }
            k
        };
        let r = &mut self.rng;
        let l4 = if key.proto == 6 { 20 } else { 8 };
        let payload_len = match r.below(10) {
            0 => 0,
            1..=5 => r.below(64) as usize,
            6..=7 => r.below(1500) as usize,
            8 => 1400 + r.below(200) as usize,
            _ => r.below(9000) as usize,
        };
        let tot = 20 + l4 + payload_len;
        let mut f = Vec::with_capacity(14 + tot + 64);
        f.extend_from_slice(&self.mac.0);
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0xfe]);
        f.extend_from_slice(&be16(0x0800));
        let ttl = match r.below(20) {
            0 => 0,
            1 => 1,
            2 => 2,
            _ => 64,
        };
        let df = r.below(3) != 0;
        let tos = [0u8, 0x10, 0xb8, 0x03, 0xbb, 0x02][r.below(6) as usize];
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2..4].copy_from_slice(&be16(tot as u16));
        ip[4..6].copy_from_slice(&be16(r.below(65536) as u16));
        ip[6..8].copy_from_slice(&be16(if df { 0x4000 } else { 0 }));
        ip[8] = ttl;
        ip[9] = key.proto;
        ip[12..16].copy_from_slice(&key.saddr.to_be_bytes());
        ip[16..20].copy_from_slice(&key.daddr.to_be_bytes());
        let c = checksum::checksum(&ip);
        ip[10..12].copy_from_slice(&be16(c));
        f.extend_from_slice(&ip);
        let l4s = f.len();
        f.extend_from_slice(&be16(key.sport));
        f.extend_from_slice(&be16(key.dport));
        if key.proto == 6 {
            f.extend_from_slice(&(r.next_u64() as u32).to_be_bytes());
            f.extend_from_slice(&(r.next_u64() as u32).to_be_bytes());
            f.push(0x50);
            let flags = match r.below(10) {
                0 => 0x02,
                1 => 0x12,
                2 => 0x11,
                3 => 0x04,
                4 => 0x00,
                _ => 0x10 | (r.below(2) as u8 * 0x08),
            };
            f.push(flags);
            f.extend_from_slice(&be16(29200));
            f.extend_from_slice(&[0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&be16((8 + payload_len) as u16));
            f.extend_from_slice(&[0, 0]);
        }
        for _ in 0..payload_len {
            f.push(r.next_u64() as u8);
        }
        // L4 checksum (or a zero UDP one).
        let zero_udp = key.proto == 17 && r.below(6) == 0;
        if !zero_udp {
            let co = if key.proto == 6 { 16 } else { 6 };
            let src = std::net::Ipv4Addr::from(key.saddr);
            let dst = std::net::Ipv4Addr::from(key.daddr);
            let mut s = checksum::pseudo_header_sum(src, dst, key.proto, (l4 + payload_len) as u16);
            s = checksum::ones_sum(&f[l4s..], s);
            let mut c = !checksum::fold(s);
            if key.proto == 17 && c == 0 {
                c = 0xffff;
            }
            f[l4s + co..l4s + co + 2].copy_from_slice(&be16(c));
            if r.below(50) == 0 {
                f[l4s + co] ^= 0x5a; // a bad L4 checksum: forwarded as is
            }
        }
        self.oddities(f)
    }

    /// Random damage and variations on a well-formed IPv4 frame.
    fn oddities(&mut self, mut f: Vec<u8>) -> Vec<u8> {
        let r = &mut self.rng;
        match r.below(40) {
            0 => f[14 + 10] ^= 0x01,                       // bad IP checksum
            1 => f[14] = 0x65,                             // version 6
            2 => f[14] = 0x44,                             // IHL 4
            3 => {
                // IP options: IHL 6 with a NOP word (checksum fixed).
                f.splice(34..34, [1u8, 1, 1, 0]);
                f[14] = 0x46;
                let tot = u16::from_be_bytes([f[16], f[17]]) + 4;
                f[16..18].copy_from_slice(&be16(tot));
                fix_ip_csum(&mut f, 24);
            }
            4 => {
                f[14 + 6] |= 0x20; // MF
                fix_ip_csum(&mut f, 20);
            }
            5 => {
                f[14 + 7] |= 0x08; // fragment offset
                fix_ip_csum(&mut f, 20);
            }
            6 => f.truncate(14 + r.below(40) as usize),    // truncated headers
            7 | 8 => {
                // Truncated body (shorter than total length).
                let tot = u16::from_be_bytes([f[16], f[17]]) as usize;
                if tot > 20 {
                    let keep = 34 + 20 + r.below((tot - 20).max(1) as u64) as usize;
                    f.truncate(keep.min(14 + tot - 1).max(15));
                }
            }
            9 | 10 => {
                // Ethernet padding / trailing bytes.
                let n = 1 + r.below(80) as usize;
                for _ in 0..n {
                    f.push(r.next_u64() as u8);
                }
            }
            11 => {
                // 802.1Q tag.
                f.splice(12..12, [0x81u8, 0x00, 0x00, 0x64]);
            }
            12 => {
                // Protocol not TCP/UDP (ICMP, GRE...).
                f[14 + 9] = [1u8, 47, 4, 50][r.below(4) as usize];
                fix_ip_csum(&mut f, 20);
            }
            13 => {
                // Total length below the L4 header.
                let t = 20 + r.below(8) as u16;
                f[16..18].copy_from_slice(&be16(t));
                fix_ip_csum(&mut f, 20);
            }
            14 => {
                // Total length below the IP header.
                f[16..18].copy_from_slice(&be16(r.below(20) as u16));
                fix_ip_csum(&mut f, 20);
            }
            _ => {}
        }
        f
    }

    /// An IPv6 TCP/UDP frame, mostly of an installed IPv6 flow, with the
    /// IPv6 oddities.
    fn build_frame6(&mut self) -> Vec<u8> {
        let key = if self.rng.below(5) != 0 && !self.flows6.is_empty() {
            let i = self.rng.below(self.flows6.len() as u64) as usize;
            self.flows6[i].0
        } else {
            self.random_key6()
        };
        let r = &mut self.rng;
        let l4 = if key.proto == 6 { 20 } else { 8 };
        let payload_len = match r.below(10) {
            0 => 0,
            1..=5 => r.below(64) as usize,
            6..=7 => r.below(1500) as usize,
            8 => 1400 + r.below(200) as usize,
            _ => r.below(9000) as usize,
        };
        let plen = l4 + payload_len;
        let mut f = Vec::with_capacity(54 + plen + 64);
        f.extend_from_slice(&self.mac.0);
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0xfe]);
        f.extend_from_slice(&be16(0x86dd));
        let hl = match r.below(20) {
            0 => 0,
            1 => 1,
            2 => 2,
            _ => 64,
        };
        let tc = [0u8, 0x10, 0xb8, 0x03][r.below(4) as usize];
        let flow = r.below(1 << 20) as u32;
        f.extend_from_slice(&(6u32 << 28 | (tc as u32) << 20 | flow).to_be_bytes());
        f.extend_from_slice(&be16(plen as u16));
        f.push(key.proto);
        f.push(hl);
        f.extend_from_slice(&key.saddr.octets());
        f.extend_from_slice(&key.daddr.octets());
        let l4s = f.len();
        f.extend_from_slice(&be16(key.sport));
        f.extend_from_slice(&be16(key.dport));
        if key.proto == 6 {
            f.extend_from_slice(&(r.next_u64() as u32).to_be_bytes());
            f.extend_from_slice(&(r.next_u64() as u32).to_be_bytes());
            f.push(0x50);
            let flags = match r.below(10) {
                0 => 0x02,
                1 => 0x11,
                2 => 0x04,
                _ => 0x10 | (r.below(2) as u8 * 0x08),
            };
            f.push(flags);
            f.extend_from_slice(&be16(29200));
            f.extend_from_slice(&[0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&be16(plen as u16));
            f.extend_from_slice(&[0, 0]);
        }
        for _ in 0..payload_len {
            f.push(r.next_u64() as u8);
        }
        let zero_udp = key.proto == 17 && r.below(6) == 0;
        if !zero_udp {
            let co = if key.proto == 6 { 16 } else { 6 };
            let s = checksum::ones_sum(&f[l4s..], checksum::pseudo_header_sum_v6(key.saddr, key.daddr, key.proto, plen as u32));
            let mut c = !checksum::fold(s);
            if key.proto == 17 && c == 0 {
                c = 0xffff;
            }
            f[l4s + co..l4s + co + 2].copy_from_slice(&be16(c));
        }
        self.oddities6(f)
    }

    /// Random damage and variations on a well-formed IPv6 frame.
    fn oddities6(&mut self, mut f: Vec<u8>) -> Vec<u8> {
        let r = &mut self.rng;
        match r.below(30) {
            0 => f[14] = 0x45,                                           // version 4
            1 | 2 => f[20] = [0u8, 43, 44, 60, 51, 58, 59, 50][r.below(8) as usize], // extension header, ICMPv6, none, ESP
            3 => f.truncate(14 + r.below(60) as usize),                 // truncated headers
            4 | 5 => {
                // Truncated body (shorter than the payload length).
                let plen = u16::from_be_bytes([f[18], f[19]]) as usize;
                let keep = 54 + 8 + r.below(plen.max(1) as u64) as usize;
                f.truncate(keep.min(54 + plen - 1));
            }
            6 | 7 => {
                // Ethernet padding / trailing bytes.
                let n = 1 + r.below(80) as usize;
                f.extend((0..n).map(|_| r.next_u64() as u8));
            }
            8 => f.splice(12..12, [0x81u8, 0x00, 0x00, 0x64]).for_each(drop), // 802.1Q tag
            9 => {
                // Payload length below the L4 header.
                let p = r.below(20) as u16;
                f[18..20].copy_from_slice(&be16(p));
            }
            _ => {}
        }
        f
    }

    fn odd_l2_frame(&mut self) -> Vec<u8> {
        let r = &mut self.rng;
        match r.below(6) {
            0 => (0..1 + r.below(13)).map(|_| r.next_u64() as u8).collect(), // runt
            1 => {
                let mut f = vec![0xff; 6];
                f.extend_from_slice(&[0x02, 0, 0, 0, 0, 9, 0x08, 0x06]);
                f.resize(60, 0);
                f
            }
            2 => {
                let mut f = vec![0x02, 0, 0, 0, 0, 0x77, 0x02, 0, 0, 0, 0, 9, 0x08, 0x00];
                f.resize(60 + r.below(100) as usize, 0x45);
                f
            }
            3 => {
                let mut f = self.mac.0.to_vec();
                f.extend_from_slice(&[0x02, 0, 0, 0, 0, 9, 0x86, 0xdd]);
                f.resize(80, 0x60);
                f
            }
            4 => {
                let mut f = vec![0x01, 0x00, 0x5e, 0, 0, 1, 0x02, 0, 0, 0, 0, 9, 0x08, 0x00];
                f.resize(70, 0x45);
                f
            }
            _ => {
                let mut f = self.mac.0.to_vec();
                f.extend_from_slice(&[0x02, 0, 0, 0, 0, 9]);
                f.extend_from_slice(&be16(r.below(65536) as u16));
                let n = r.below(120) as usize;
                f.extend((0..n).map(|_| r.next_u64() as u8));
                f
            }
        }
    }
}

fn fix_ip_csum(f: &mut [u8], hl: usize) {
    if f.len() < 14 + hl {
        return;
    }
    f[24] = 0;
    f[25] = 0;
    let c = checksum::checksum(&f[14..14 + hl]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
}


#[cfg(test)]
mod tests {
    use super::*;
    use lvsnic_model::hw::{Csr, HwOutput, HwPipeline, Reason};
    use std::collections::BTreeMap;

    /// The decoys are real: each tail slot, read alone as an IPv4 slot, is a
    /// valid entry for its IPv4 key, yet the lookup does not match it.
    #[test]
    fn decoy_tails_look_like_ipv4_entries_and_never_match() {
        let params = HwParams { flow_buckets_log2: 8, action_log2: 8, ..Default::default() };
        let w = FuzzWorld::new(9, params, 300);
        let mut hw = HwPipeline::new(params);
        for (a, v) in w.setup_writes() {
            hw.write32(a, v);
        }
        assert!(w.decoys.len() >= 5, "{} decoys", w.decoys.len());
        for (k6, k4) in &w.decoys {
            let (h0, h1) = k6.hashes();
            let (head, _) = hw.lookup6(k6, h0, h1).expect("decoy installed");
            let tail = FlowEntry::from_bits(&hw.flow_image()[head + 1]);
            assert!(tail.valid && tail.key() == *k4, "the tail reads as a valid entry for {k4:?}");
            let (h0, h1) = k4.hashes();
            let mask = (1 << params.flow_buckets_log2) - 1;
            let way = head >> (params.flow_buckets_log2 + 2);
            assert_eq!((head >> 2) as u32 & mask, [h0, h1][way] & mask, "the tail is in a bucket {k4:?}'s lookup reads");
            assert!(hw.lookup(k4, h0, h1).is_none(), "{k4:?} matched the tail of {k6:?}");
        }
    }

    /// The world exercises every outcome of the pipeline (so a differential
    /// run with it covers every RTL path), and the model never panics.
    #[test]
    fn covers_every_reason_and_op() {
        let params = HwParams { flow_buckets_log2: 8, action_log2: 8, ..Default::default() };
        let mut reasons: BTreeMap<u8, u32> = BTreeMap::new();
        let mut reasons6: BTreeMap<u8, u32> = BTreeMap::new();
        let mut fwd_ops = [0u32; 4];
        let mut fwd_ops6 = [0u32; 4];
        for seed in 0..4 {
            let mut w = FuzzWorld::new(seed, params, 300);
            let mut hw = HwPipeline::new(params);
            for (a, v) in w.setup_writes() {
                hw.write32(a, v);
            }
            for i in 0..20_000 {
                if i % 1000 == 999 {
                    for (a, v) in w.mutate() {
                        hw.write32(a, v);
                    }
                }
                let (f, ts, seq) = w.frame();
                let v6 = f.len() >= 14 && f[12..14] == [0x86, 0xdd];
                match hw.process(&f, ts, seq) {
                    HwOutput::Forward { frame, .. } if v6 => {
                        let op = if frame[22..38] != f[22..38] {
                            2
                        } else if frame[38..54] != f[38..54] {
                            1
                        } else {
                            0
                        };
                        fwd_ops6[op] += 1;
                        *reasons6.entry(0).or_default() += 1;
                    }
                    HwOutput::ToHost { meta, .. } | HwOutput::Aborted { meta, .. } if v6 => {
                        *reasons6.entry(meta.reason as u8).or_default() += 1;
                    }
                    HwOutput::Forward { frame, .. } => {
                        let op = if frame.len() == f.len().min(14 + u16::from_be_bytes([f[16], f[17]]) as usize) + 20 {
                            3
                        } else if frame[26..30] != f[26..30] {
                            2
                        } else if frame[30..34] != f[30..34] {
                            1
                        } else {
                            0
                        };
                        fwd_ops[op] += 1;
                        *reasons.entry(0).or_default() += 1;
                    }
                    HwOutput::ToHost { meta, .. } | HwOutput::Aborted { meta, .. } => {
                        *reasons.entry(meta.reason as u8).or_default() += 1;
                    }
                }
            }
        }
        for r in 0..Reason::COUNT as u8 {
            if r == Reason::Disabled as u8 {
                continue;
            }
            assert!(reasons.get(&r).copied().unwrap_or(0) > 0, "reason {r} never produced: {reasons:?}");
        }
        assert!(fwd_ops.iter().all(|&n| n > 100), "every op forwards: {fwd_ops:?}");
        // IPv6: every row an IPv6 frame can reach (no IP checksum, no VIP
        // or local miss: docs/hardware.md §3), and DR and both NATs forward.
        use Reason::*;
        for r in [Forwarded, Malformed, IpOptions, Fragment, NotTcpUdp, L4Truncated, Ttl, Miss, ActionHost, TcpControl, UdpZeroCsum, TooBig, Truncated] {
            assert!(reasons6.get(&(r as u8)).copied().unwrap_or(0) > 0, "IPv6 reason {r:?} never produced: {reasons6:?}");
        }
        for r in [IpChecksum, MissVip, MissLocal] {
            assert_eq!(reasons6.get(&(r as u8)), None, "IPv6 frames cannot be {r:?}");
        }
        assert!(fwd_ops6[..3].iter().all(|&n| n > 100), "every IPv6 op but TUN forwards: {fwd_ops6:?}");
    }
}
