//! The data-plane model: [`HwPipeline::process`] (docs/hardware.md §3–§5)
//! and the register interface (§6).

use super::regs::*;
use super::tables::{apply_l4_delta, fold16, ActionEntry, ActionOp, FlowEntry, FlowKey};
use super::{Csr, HostMeta, Reason};
use crate::wire::MacAddr;

/// Elaboration parameters of `lvsnic_core`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwParams {
    pub data_width: u32,
    pub flow_buckets_log2: u32,
    pub action_log2: u32,
    pub vip_count: u32,
}

impl Default for HwParams {
    fn default() -> Self {
        HwParams { data_width: 64, flow_buckets_log2: 10, action_log2: 10, vip_count: 16 }
    }
}

impl HwParams {
    /// Flow table slots: 2 ways × buckets × 4.
    pub fn flow_slots(&self) -> usize {
        2 * 4 << self.flow_buckets_log2
    }
    pub fn actions(&self) -> usize {
        1 << self.action_log2
    }
    /// Slot index of (way, bucket, slot).
    pub fn slot_index(&self, way: usize, bucket: usize, slot: usize) -> usize {
        way << (self.flow_buckets_log2 + 2) | bucket << 2 | slot
    }
}

/// What the data plane does with one received frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HwOutput {
    /// Rewritten frame on `m_axis_tx`.
    Forward { frame: Vec<u8>, seq: u32 },
    /// The unchanged frame on `m_axis_host`.
    ToHost { meta: HostMeta, frame: Vec<u8> },
    /// An aborted frame on `m_axis_tx` (bytes unspecified) and the unchanged
    /// frame on `m_axis_host` with reason `TRUNCATED` (§3.1).
    Aborted { meta: HostMeta, frame: Vec<u8> },
}

/// The modelled `lvsnic_core`: registers, tables, counters.
#[derive(Clone, Debug)]
pub struct HwPipeline {
    pub params: HwParams,
    ctrl: u32,
    mac: MacAddr,
    ip: u32,
    mtu: u16,
    vip_valid: u32,
    vips: Vec<u32>,
    flows: Vec<u128>,
    last_hit: Vec<u64>,
    actions: Vec<u128>,
    act_pkts: Vec<u64>,
    act_bytes: Vec<u64>,
    counters: Vec<u64>,
    flow_staging: [u32; 4],
    flow_index: u32,
    flow_rdata: u128,
    flow_hit: u64,
    act_staging: [u32; 4],
    act_index: u32,
    act_rdata: u128,
    act_rpkts: u64,
    act_rbytes: u64,
    /// Per counter: its upper half as of its last `LO` read.
    hi_latch: Vec<u32>,
}

#[inline]
fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
#[inline]
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// One's-complement checksum of a 20-byte IPv4 header with its checksum
/// field taken as 0.
fn ip_header_checksum(h: &[u8]) -> u16 {
    let mut s: u64 = 0;
    for i in (0..20).step_by(2) {
        if i != 10 {
            s += be16(h, i) as u64;
        }
    }
    !fold16(s)
}

fn ip_header_ok(h: &[u8]) -> bool {
    let mut s: u64 = 0;
    for i in (0..20).step_by(2) {
        s += be16(h, i) as u64;
    }
    fold16(s) == 0xFFFF
}

impl HwPipeline {
    /// A core out of reset: disabled, `pmtu_disc` on, MTU 1500, empty tables.
    pub fn new(params: HwParams) -> Self {
        HwPipeline {
            params,
            ctrl: CTRL_PMTU_DISC,
            mac: MacAddr([0; 6]),
            ip: 0,
            mtu: 1500,
            vip_valid: 0,
            vips: vec![0; params.vip_count as usize],
            flows: vec![0; params.flow_slots()],
            last_hit: vec![0; params.flow_slots()],
            actions: vec![0; params.actions()],
            act_pkts: vec![0; params.actions()],
            act_bytes: vec![0; params.actions()],
            counters: vec![0; CNT_COUNT as usize],
            flow_staging: [0; 4],
            flow_index: 0,
            flow_rdata: 0,
            flow_hit: 0,
            act_staging: [0; 4],
            act_index: 0,
            act_rdata: 0,
            act_rpkts: 0,
            act_rbytes: 0,
            hi_latch: vec![0; CNT_COUNT as usize],
        }
    }

    fn is_vip(&self, a: u32) -> bool {
        self.vips.iter().enumerate().any(|(i, &v)| self.vip_valid >> i & 1 != 0 && v == a)
    }

    fn to_host(&mut self, reason: Reason, hit: bool, vip: bool, hash0: u32, seq: u32, ts: u64, frame: &[u8]) -> HwOutput {
        self.counters[CNT_HOST as usize] += 1;
        self.counters[(CNT_REASON_BASE + reason as u32) as usize] += 1;
        HwOutput::ToHost { meta: HostMeta { reason, hit, vip, hash0, seq, ts }, frame: frame.to_vec() }
    }

    /// Looks `key` up: the first valid matching slot, way 0 before way 1,
    /// slot 0 before slot 3.
    pub fn lookup(&self, key: &FlowKey, h0: u32, h1: u32) -> Option<(usize, FlowEntry)> {
        let mask = (1u32 << self.params.flow_buckets_log2) - 1;
        for (way, h) in [(0usize, h0), (1, h1)] {
            for slot in 0..4 {
                let idx = self.params.slot_index(way, (h & mask) as usize, slot);
                let e = FlowEntry::from_bits(self.flows[idx]);
                if e.valid && e.key() == *key {
                    return Some((idx, e));
                }
            }
        }
        None
    }

    /// Processes one received frame (`s_axis_rx`, `tuser` = ts, seq).
    pub fn process(&mut self, frame: &[u8], ts: u64, seq: u32) -> HwOutput {
        self.counters[CNT_RX as usize] += 1;
        let f = frame;
        if self.ctrl & CTRL_ENABLE == 0 {
            return self.to_host(Reason::Disabled, false, false, 0, seq, ts, f);
        }
        let host = |s: &mut Self, r: Reason| s.to_host(r, false, false, 0, seq, ts, f);
        if f.len() < 14 {
            return host(self, Reason::Malformed);
        }
        if f[0] & 1 != 0 {
            return host(self, Reason::L2Multicast);
        }
        if f[0..6] != self.mac.0 {
            return host(self, Reason::L2OtherHost);
        }
        match be16(f, 12) {
            0x8100 => return host(self, Reason::Vlan),
            0x0800 => {}
            _ => return host(self, Reason::NonIpv4),
        }
        if f.len() < 34 {
            return host(self, Reason::Malformed);
        }
        let ihl = (f[14] & 0x0f) as usize;
        let tot = be16(f, 16) as usize;
        if f[14] >> 4 != 4 || ihl < 5 || tot < ihl * 4 {
            return host(self, Reason::Malformed);
        }
        if ihl > 5 {
            return host(self, Reason::IpOptions);
        }
        if !ip_header_ok(&f[14..34]) {
            return host(self, Reason::IpChecksum);
        }
        let frag = be16(f, 20);
        if frag & 0x3fff != 0 {
            return host(self, Reason::Fragment);
        }
        let proto = f[23];
        let l4len = match proto {
            6 => 20,
            17 => 8,
            _ => return host(self, Reason::NotTcpUdp),
        };
        if tot < 20 + l4len || f.len() < 34 + l4len {
            return host(self, Reason::L4Truncated);
        }
        let key = FlowKey { proto, saddr: be32(f, 26), daddr: be32(f, 30), sport: be16(f, 34), dport: be16(f, 36) };
        let (h0, h1) = key.hashes();
        let vip = self.is_vip(key.daddr);
        let info = |s: &mut Self, r: Reason, hit: bool| s.to_host(r, hit, vip, h0, seq, ts, f);
        let found = self.lookup(&key, h0, h1);
        if f[22] <= 1 {
            return info(self, Reason::Ttl, found.is_some());
        }
        let Some((slot, entry)) = found else {
            let r = if vip {
                Reason::MissVip
            } else if key.daddr == self.ip {
                Reason::MissLocal
            } else {
                Reason::Miss
            };
            return info(self, r, false);
        };
        let action = ActionEntry::from_bits(self.actions[entry.action as usize & (self.params.actions() - 1)]);
        if proto == 6 {
            let flags = f[47];
            if flags & 0x07 != 0 || flags & 0x10 == 0 || !entry.ack_fast {
                return info(self, Reason::TcpControl, true);
            }
        }
        let nat = matches!(action.op, ActionOp::NatDnat | ActionOp::NatSnat);
        if proto == 17 && nat && be16(f, 40) == 0 {
            return info(self, Reason::UdpZeroCsum, true);
        }
        let out_len = tot + if action.op == ActionOp::Tunnel { 20 } else { 0 };
        if out_len > self.mtu as usize {
            return info(self, Reason::TooBig, true);
        }
        if f.len() < 14 + tot {
            self.counters[CNT_HOST as usize] += 1;
            self.counters[(CNT_REASON_BASE + Reason::Truncated as u32) as usize] += 1;
            return HwOutput::Aborted {
                meta: HostMeta { reason: Reason::Truncated, hit: true, vip, hash0: h0, seq, ts },
                frame: f.to_vec(),
            };
        }
        // Forward.
        let a = entry.action as usize & (self.params.actions() - 1);
        self.act_pkts[a] += 1;
        self.act_bytes[a] += tot as u64;
        self.last_hit[slot] = ts;
        self.counters[CNT_FWD as usize] += 1;
        HwOutput::Forward { frame: self.rewrite(&f[..14 + tot], &action), seq }
    }

    fn rewrite(&self, f: &[u8], a: &ActionEntry) -> Vec<u8> {
        let mut out = Vec::with_capacity(f.len() + 20);
        out.extend_from_slice(&a.mac.0);
        out.extend_from_slice(&self.mac.0);
        out.extend_from_slice(&f[12..]);
        let ip = 14;
        out[ip + 8] -= 1; // TTL > 1 checked
        match a.op {
            ActionOp::Route => {}
            ActionOp::NatDnat | ActionOp::NatSnat => {
                let (ao, po) = if a.op == ActionOp::NatDnat { (16, 2) } else { (12, 0) };
                out[ip + ao..ip + ao + 4].copy_from_slice(&a.addr.to_be_bytes());
                out[ip + 20 + po..ip + 22 + po].copy_from_slice(&a.port.to_be_bytes());
                let co = ip + 20 + if out[ip + 9] == 6 { 16 } else { 6 };
                let mut c = apply_l4_delta(be16(&out, co), a.l4_delta);
                if out[ip + 9] == 17 && c == 0 {
                    c = 0xFFFF;
                }
                out[co..co + 2].copy_from_slice(&c.to_be_bytes());
            }
            ActionOp::Tunnel => {}
        }
        let c = ip_header_checksum(&out[ip..ip + 20]);
        out[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
        if a.op == ActionOp::Tunnel {
            let inner_tot = be16(&out, ip + 2);
            let tos = out[ip + 1];
            let df = self.ctrl & CTRL_PMTU_DISC != 0 && be16(&out, ip + 6) & 0x4000 != 0;
            let mut h = [0u8; 20];
            h[0] = 0x45;
            h[1] = if tos & 3 == 3 { (tos & !3) | 2 } else { tos };
            h[2..4].copy_from_slice(&inner_tot.wrapping_add(20).to_be_bytes());
            if !df {
                h[4] = out[ip + 4];
                h[5] = out[ip + 5];
            } else {
                h[6] = 0x40;
            }
            h[8] = out[ip + 8];
            h[9] = 4;
            h[12..16].copy_from_slice(&self.ip.to_be_bytes());
            h[16..20].copy_from_slice(&a.addr.to_be_bytes());
            let c = ip_header_checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            out.splice(ip..ip, h);
        }
        out
    }

    /// A frame from the host (`s_axis_inject`): transmitted unchanged.
    pub fn inject(&mut self, frame: &[u8]) -> Vec<u8> {
        self.counters[CNT_INJECT as usize] += 1;
        frame.to_vec()
    }

    /// The flow table as 128-bit slot images, in slot-index order.
    pub fn flow_image(&self) -> &[u128] {
        &self.flows
    }

    /// The action table as 128-bit images, in index order.
    pub fn action_image(&self) -> &[u128] {
        &self.actions
    }

    /// Zeroes every counter and `last_hit`, as loading the tables after a
    /// reset leaves them (the register writes of [`state_writes`](Self::state_writes)).
    pub fn clear_activity(&mut self) {
        self.counters.iter_mut().for_each(|c| *c = 0);
        self.act_pkts.iter_mut().for_each(|c| *c = 0);
        self.act_bytes.iter_mut().for_each(|c| *c = 0);
        self.last_hit.iter_mut().for_each(|c| *c = 0);
    }

    /// Valid flow entries.
    pub fn flow_count(&self) -> usize {
        self.flows.iter().filter(|&&b| b & 1 != 0).count()
    }

    /// The register writes that bring a core out of reset into this
    /// state's configuration and tables (counters and `last_hit` aside):
    /// MAC, IP, MTU, VIPs, every non-empty flow slot and action, CTRL last.
    pub fn state_writes(&self) -> Vec<(u32, u32)> {
        let mut w = identity_writes(self.mac, self.ip, self.mtu).to_vec();
        for (i, v) in self.vips.iter().enumerate() {
            w.push((VIP_BASE + 4 * i as u32, *v));
        }
        w.push((VIP_VALID, self.vip_valid));
        let table = |w: &mut Vec<(u32, u32)>, img: &[u128], data: u32, index: u32, cmd: u32| {
            for (i, &b) in img.iter().enumerate() {
                if b == 0 {
                    continue;
                }
                for k in 0..4 {
                    w.push((data + 4 * k, (b >> (32 * k)) as u32));
                }
                w.push((index, i as u32));
                w.push((cmd, CMD_WRITE));
            }
        };
        table(&mut w, &self.flows, FLOW_DATA, FLOW_INDEX, FLOW_CMD);
        table(&mut w, &self.actions, ACT_DATA, ACT_INDEX, ACT_CMD);
        w.push((CTRL, self.ctrl));
        w
    }

    /// A counter's value (`CNT[n]`).
    pub fn counter(&self, n: u32) -> u64 {
        self.counters.get(n as usize).copied().unwrap_or(0)
    }

    fn flow_idx(&self) -> usize {
        self.flow_index as usize & (self.params.flow_slots() - 1)
    }

    fn act_idx(&self) -> usize {
        self.act_index as usize & (self.params.actions() - 1)
    }
}

fn words(v: [u32; 4]) -> u128 {
    v.iter().rev().fold(0u128, |a, &w| a << 32 | w as u128)
}

impl Csr for HwPipeline {
    fn write32(&mut self, addr: u32, v: u32) {
        match addr {
            CTRL => self.ctrl = v & 3,
            MAC_LO => {
                self.mac.0[2..6].copy_from_slice(&v.to_be_bytes());
            }
            MAC_HI => {
                self.mac.0[0] = (v >> 8) as u8;
                self.mac.0[1] = v as u8;
            }
            IP => self.ip = v,
            MTU => self.mtu = v as u16,
            VIP_VALID => {
                let n = self.params.vip_count;
                self.vip_valid = if n >= 32 { v } else { v & ((1 << n) - 1) };
            }
            a if (VIP_BASE..VIP_BASE + 4 * self.params.vip_count).contains(&a) && a % 4 == 0 => {
                self.vips[((a - VIP_BASE) / 4) as usize] = v;
            }
            a if (FLOW_DATA..FLOW_DATA + 16).contains(&a) && a % 4 == 0 => self.flow_staging[((a - FLOW_DATA) / 4) as usize] = v,
            FLOW_INDEX => self.flow_index = v,
            FLOW_CMD => {
                let i = self.flow_idx();
                match v {
                    CMD_WRITE => {
                        self.flows[i] = words(self.flow_staging);
                        self.last_hit[i] = 0;
                    }
                    CMD_READ => {
                        self.flow_rdata = self.flows[i];
                        self.flow_hit = self.last_hit[i];
                    }
                    _ => {}
                }
            }
            a if (ACT_DATA..ACT_DATA + 16).contains(&a) && a % 4 == 0 => self.act_staging[((a - ACT_DATA) / 4) as usize] = v,
            ACT_INDEX => self.act_index = v,
            ACT_CMD => {
                let i = self.act_idx();
                match v {
                    CMD_WRITE => {
                        self.actions[i] = words(self.act_staging);
                        self.act_pkts[i] = 0;
                        self.act_bytes[i] = 0;
                    }
                    CMD_READ => {
                        self.act_rdata = self.actions[i];
                        self.act_rpkts = self.act_pkts[i];
                        self.act_rbytes = self.act_bytes[i];
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn read32(&mut self, addr: u32) -> u32 {
        let p = self.params;
        match addr {
            ID => ID_VALUE,
            VERSION => VERSION_VALUE,
            CAPS0 => p.data_width | p.flow_buckets_log2 << 16 | p.action_log2 << 24,
            CAPS1 => 4 | 2 << 8 | p.vip_count << 16,
            CTRL => self.ctrl,
            MAC_LO => u32::from_be_bytes([self.mac.0[2], self.mac.0[3], self.mac.0[4], self.mac.0[5]]),
            MAC_HI => (self.mac.0[0] as u32) << 8 | self.mac.0[1] as u32,
            IP => self.ip,
            MTU => self.mtu as u32,
            VIP_VALID => self.vip_valid,
            a if (VIP_BASE..VIP_BASE + 4 * p.vip_count).contains(&a) && a % 4 == 0 => self.vips[((a - VIP_BASE) / 4) as usize],
            a if (FLOW_DATA..FLOW_DATA + 16).contains(&a) && a % 4 == 0 => self.flow_staging[((a - FLOW_DATA) / 4) as usize],
            FLOW_INDEX => self.flow_index,
            FLOW_STATUS | ACT_STATUS => 0,
            a if (FLOW_RDATA..FLOW_RDATA + 16).contains(&a) && a % 4 == 0 => (self.flow_rdata >> (8 * (a - FLOW_RDATA))) as u32,
            FLOW_HIT_LO => self.flow_hit as u32,
            FLOW_HIT_HI => (self.flow_hit >> 32) as u32,
            a if (ACT_DATA..ACT_DATA + 16).contains(&a) && a % 4 == 0 => self.act_staging[((a - ACT_DATA) / 4) as usize],
            ACT_INDEX => self.act_index,
            a if (ACT_RDATA..ACT_RDATA + 16).contains(&a) && a % 4 == 0 => (self.act_rdata >> (8 * (a - ACT_RDATA))) as u32,
            ACT_PKTS_LO => self.act_rpkts as u32,
            ACT_PKTS_HI => (self.act_rpkts >> 32) as u32,
            ACT_BYTES_LO => self.act_rbytes as u32,
            ACT_BYTES_HI => (self.act_rbytes >> 32) as u32,
            a if (CNT_BASE..CNT_BASE + 8 * CNT_COUNT).contains(&a) && a % 4 == 0 => {
                let n = ((a - CNT_BASE) / 8) as usize;
                if (a - CNT_BASE) % 8 == 0 {
                    self.hi_latch[n] = (self.counters[n] >> 32) as u32;
                    self.counters[n] as u32
                } else {
                    self.hi_latch[n]
                }
            }
            _ => 0,
        }
    }
}
