//! The data-plane model: [`HwPipeline::process`] (docs/hardware.md §3–§5)
//! and the register interface (§6).

use super::regs::*;
use super::tables::{
    apply_l4_delta, is_ipv6_head, is_valid, ActionBits, ActionEntry, ActionOp, Flow6Entry, FlowEntry, FlowKey, FlowKey6, PairBits,
    SlotBits,
};
use super::{Csr, HostMeta, Reason};
use crate::wire::{
    checksum, ethernet, ipv4, ipv6, replace_transport_port, tcp, transport_ports, udp, EthernetFrame, Ipv4Packet, Ipv6Packet, MacAddr,
    TcpPacket, UdpPacket, ETHERTYPE_IPV4, ETHERTYPE_IPV6, IPPROTO_TCP, IPPROTO_UDP, TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN,
};
use crate::xmit;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Elaboration parameters of `lvsnic_core`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwParams {
    /// AXI-Stream data width in bits (`DATA_WIDTH`).
    pub data_width: u32,
    /// log2 of the flow table buckets per way (`FLOW_BUCKETS_LOG2`).
    pub flow_buckets_log2: u32,
    /// log2 of the action table entries (`ACTION_LOG2`).
    pub action_log2: u32,
    /// VIP table entries (`VIP_COUNT`).
    pub vip_count: u32,
    /// Whether the core forwards IPv6 (`IPV6`; `CAPS1.ipv6`). Without it an
    /// IPv6 frame goes to the host as `NON_IPV4`. The same parameter makes
    /// the core build IPv6 tunnel headers ([`tun6`](Self::tun6)).
    pub ipv6: bool,
}

impl Default for HwParams {
    fn default() -> Self {
        HwParams { data_width: 64, flow_buckets_log2: 10, action_log2: 10, vip_count: 16, ipv6: true }
    }
}

impl HwParams {
    /// Whether the core builds IPv6 outer headers for `TUNNEL` actions
    /// with `ipv6` set (ip6ip6 and IPv4 in IPv6; `CAPS1.tun6`, the `IP6`
    /// registers): the parameter `IPV6`, so always [`ipv6`](Self::ipv6).
    /// A driver reads `CAPS1.tun6` itself ([`caps1_tun6`](Self::caps1_tun6)):
    /// a core built before the field reports `ipv6` without it.
    pub fn tun6(&self) -> bool {
        self.ipv6
    }

    /// `CAPS1.tun6`: the core forwards TUNNEL actions with an IPv6 address.
    pub fn caps1_tun6(caps1: u32) -> bool {
        caps1 & lvsnic_regmap::regs::CAPS1_TUN6_MASK != 0
    }

    /// Slots per bucket and ways, as every core reports them in `CAPS1`.
    pub const SLOTS: u32 = 4;
    /// See [`HwParams::SLOTS`].
    pub const WAYS: u32 = 2;

    /// The parameters `CAPS0` and `CAPS1` report (fields decoded with the
    /// register map's masks; not range-checked: see the driver's identity
    /// check).
    pub fn from_caps(caps0: u32, caps1: u32) -> Self {
        use lvsnic_regmap::regs::*;
        HwParams {
            data_width: (caps0 & CAPS0_DATA_WIDTH_MASK) >> CAPS0_DATA_WIDTH_SHIFT,
            flow_buckets_log2: (caps0 & CAPS0_FLOW_BUCKETS_LOG2_MASK) >> CAPS0_FLOW_BUCKETS_LOG2_SHIFT,
            action_log2: (caps0 & CAPS0_ACTION_LOG2_MASK) >> CAPS0_ACTION_LOG2_SHIFT,
            vip_count: (caps1 & CAPS1_VIP_COUNT_MASK) >> CAPS1_VIP_COUNT_SHIFT,
            ipv6: caps1 & CAPS1_IPV6_MASK != 0,
        }
    }

    /// `(CAPS0, CAPS1)` of a core elaborated with these parameters.
    pub fn caps(&self) -> (u32, u32) {
        use lvsnic_regmap::regs::*;
        let caps0 = self.data_width << CAPS0_DATA_WIDTH_SHIFT & CAPS0_DATA_WIDTH_MASK
            | self.flow_buckets_log2 << CAPS0_FLOW_BUCKETS_LOG2_SHIFT & CAPS0_FLOW_BUCKETS_LOG2_MASK
            | self.action_log2 << CAPS0_ACTION_LOG2_SHIFT & CAPS0_ACTION_LOG2_MASK;
        let caps1 = Self::SLOTS << CAPS1_SLOTS_SHIFT & CAPS1_SLOTS_MASK
            | Self::WAYS << CAPS1_WAYS_SHIFT & CAPS1_WAYS_MASK
            | self.vip_count << CAPS1_VIP_COUNT_SHIFT & CAPS1_VIP_COUNT_MASK
            | u32::from(self.ipv6) << CAPS1_IPV6_SHIFT & CAPS1_IPV6_MASK
            | u32::from(self.tun6()) << CAPS1_TUN6_SHIFT & CAPS1_TUN6_MASK;
        (caps0, caps1)
    }

    /// Whether `CAPS1` reports the slots and ways this driver handles.
    pub fn caps1_geometry_ok(caps1: u32) -> bool {
        use lvsnic_regmap::regs::*;
        (caps1 & CAPS1_SLOTS_MASK) >> CAPS1_SLOTS_SHIFT == Self::SLOTS
            && (caps1 & CAPS1_WAYS_MASK) >> CAPS1_WAYS_SHIFT == Self::WAYS
    }

    /// Flow table slots: 2 ways × buckets × 4.
    pub fn flow_slots(&self) -> usize {
        2 * 4 << self.flow_buckets_log2
    }
    /// Action table entries.
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
    Forward {
        /// The rewritten frame.
        frame: Vec<u8>,
        /// The receive sequence number (`tuser`).
        seq: u32,
    },
    /// The unchanged frame on `m_axis_host`.
    ToHost {
        /// The host metadata (reason, hit, hash, seq, ts).
        meta: HostMeta,
        /// The frame as received.
        frame: Vec<u8>,
    },
    /// An aborted frame on `m_axis_tx` (bytes unspecified) and the unchanged
    /// frame on `m_axis_host` with reason `TRUNCATED` (§3.1).
    Aborted {
        /// The host metadata (reason `TRUNCATED`).
        meta: HostMeta,
        /// The frame as received.
        frame: Vec<u8>,
    },
}

/// The modelled `lvsnic_core`: registers, tables, counters.
#[derive(Clone, Debug)]
pub struct HwPipeline {
    /// The elaboration parameters.
    pub params: HwParams,
    ctrl: u32,
    mac: MacAddr,
    ip: u32,
    /// `IP6[0..4]`: the source of IPv6 tunnel headers (stays 0 without
    /// `tun6`).
    ip6: [u32; IP6_LEN as usize],
    mtu: u16,
    vip_valid: u32,
    vips: Vec<u32>,
    flows: Vec<SlotBits>,
    last_hit: Vec<u64>,
    actions: Vec<ActionBits>,
    act_pkts: Vec<u64>,
    act_bytes: Vec<u64>,
    counters: Vec<u64>,
    flow_staging: PairBits,
    flow_index: u32,
    flow_rdata: PairBits,
    flow_hit: u64,
    act_staging: ActionBits,
    act_index: u32,
    act_rdata: ActionBits,
    act_rpkts: u64,
    act_rbytes: u64,
    /// Per counter: its upper half as of its last `LO` read.
    hi_latch: Vec<u32>,
}

/// Where the core finds the headers: it handles untagged IPv4 without
/// options and IPv6 without extension headers only, so they are at fixed
/// offsets.
const L3: usize = ethernet::HEADER_LEN;
const L4: usize = L3 + ipv4::HEADER_LEN;
const L4_6: usize = L3 + ipv6::HEADER_LEN;

/// Rows 14 and 15 on the L4 header `l4`: a TCP segment with SYN, FIN or
/// RST, without ACK, or of a flow without `ack_fast` (`TCP_CONTROL`); a
/// UDP datagram without a checksum that NAT would rewrite
/// (`UDP_ZERO_CSUM`). The same for both families.
fn l4_exception(l4: &[u8], proto: u8, op: ActionOp, ack_fast: bool) -> Option<Reason> {
    if proto == IPPROTO_TCP {
        let flags = TcpPacket::new_unchecked(l4).flags();
        if flags & (TCP_FIN | TCP_SYN | TCP_RST) != 0 || flags & TCP_ACK == 0 || !ack_fast {
            return Some(Reason::TcpControl);
        }
    }
    let nat = matches!(op, ActionOp::NatDnat | ActionOp::NatSnat);
    (proto == IPPROTO_UDP && nat && UdpPacket::new_unchecked(l4).checksum() == 0).then_some(Reason::UdpZeroCsum)
}

/// IPv6 Next Header values the core sends to the host as `IP_OPTIONS`:
/// the extension headers Linux walks (`ipv6_ext_hdr`) other than the
/// Fragment header (`FRAGMENT`) and No Next Header (`NOT_TCP_UDP`):
/// Hop-by-Hop, Routing, AH, Destination Options.
pub const IPV6_EXT_OPTIONS: [u8; 4] = [0, 43, 51, 60];
/// The IPv6 Fragment header's Next Header value.
pub const IPV6_FRAGMENT: u8 = 44;

impl HwPipeline {
    /// A core out of reset: disabled, `pmtu_disc` on, MTU 1500, empty tables.
    pub fn new(params: HwParams) -> Self {
        HwPipeline {
            params,
            ctrl: CTRL_PMTU_DISC,
            mac: MacAddr([0; 6]),
            ip: 0,
            ip6: [0; IP6_LEN as usize],
            mtu: 1500,
            vip_valid: 0,
            vips: vec![0; params.vip_count as usize],
            flows: vec![SlotBits::default(); params.flow_slots()],
            last_hit: vec![0; params.flow_slots()],
            actions: vec![ActionBits::default(); params.actions()],
            act_pkts: vec![0; params.actions()],
            act_bytes: vec![0; params.actions()],
            counters: vec![0; CNT_COUNT as usize],
            flow_staging: PairBits::default(),
            flow_index: 0,
            flow_rdata: PairBits::default(),
            flow_hit: 0,
            act_staging: ActionBits::default(),
            act_index: 0,
            act_rdata: ActionBits::default(),
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

    /// Looks an IPv4 `key` up: the first valid IPv4 slot that matches, way
    /// 0 before way 1, slot 0 before slot 3; the tail of an IPv6 entry is
    /// never an entry (docs/hardware.md §4).
    pub fn lookup(&self, key: &FlowKey, h0: u32, h1: u32) -> Option<(usize, FlowEntry)> {
        let mask = (1u32 << self.params.flow_buckets_log2) - 1;
        for (way, h) in [(0usize, h0), (1, h1)] {
            for slot in 0..4 {
                let idx = self.params.slot_index(way, (h & mask) as usize, slot);
                if slot % 2 == 1 && is_ipv6_head(&self.flows[idx - 1]) {
                    continue;
                }
                let e = FlowEntry::from_bits(&self.flows[idx]);
                if e.valid && e.key() == *key {
                    return Some((idx, e));
                }
            }
        }
        None
    }

    /// Looks an IPv6 `key` up: the first pair whose head is a valid IPv6
    /// entry matching it; returns the head's slot index.
    pub fn lookup6(&self, key: &FlowKey6, h0: u32, h1: u32) -> Option<(usize, Flow6Entry)> {
        let mask = (1u32 << self.params.flow_buckets_log2) - 1;
        for (way, h) in [(0usize, h0), (1, h1)] {
            for pair in 0..2 {
                let idx = self.params.slot_index(way, (h & mask) as usize, 2 * pair);
                let e = Flow6Entry::from_slots(&self.flows[idx], &self.flows[idx + 1]);
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
        if f.len() < ethernet::HEADER_LEN {
            return host(self, Reason::Malformed);
        }
        let eth = EthernetFrame::new_unchecked(f);
        if eth.dst_addr().is_multicast() {
            return host(self, Reason::L2Multicast);
        }
        if eth.dst_addr() != self.mac {
            return host(self, Reason::L2OtherHost);
        }
        if eth.has_vlan() {
            return host(self, Reason::Vlan);
        }
        if eth.ethertype() == ETHERTYPE_IPV6 && self.params.ipv6 {
            return self.process6(f, ts, seq);
        }
        if eth.ethertype() != ETHERTYPE_IPV4 {
            return host(self, Reason::NonIpv4);
        }
        if f.len() < L4 {
            return host(self, Reason::Malformed);
        }
        let ip = Ipv4Packet::new_unchecked(&f[L3..]);
        let tot = usize::from(ip.total_len());
        if ip.version() != 4 || ip.header_len() < ipv4::HEADER_LEN || tot < ip.header_len() {
            return host(self, Reason::Malformed);
        }
        if ip.has_options() {
            return host(self, Reason::IpOptions);
        }
        if !ip.verify_checksum() {
            return host(self, Reason::IpChecksum);
        }
        if ip.is_fragment() {
            return host(self, Reason::Fragment);
        }
        let proto = ip.protocol();
        let l4len = match proto {
            IPPROTO_TCP => tcp::HEADER_LEN,
            IPPROTO_UDP => udp::HEADER_LEN,
            _ => return host(self, Reason::NotTcpUdp),
        };
        if tot < ipv4::HEADER_LEN + l4len || f.len() < L4 + l4len {
            return host(self, Reason::L4Truncated);
        }
        let (sport, dport) = transport_ports(&f[L4..]).unwrap_or_default();
        let (saddr, daddr) = (u32::from(ip.src_addr()), u32::from(ip.dst_addr()));
        let key = FlowKey { proto, saddr, daddr, sport, dport };
        let (h0, h1) = key.hashes();
        let vip = self.is_vip(key.daddr);
        let info = |s: &mut Self, r: Reason, hit: bool| s.to_host(r, hit, vip, h0, seq, ts, f);
        let found = self.lookup(&key, h0, h1);
        if ip.ttl() <= 1 {
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
        let action = ActionEntry::from_bits(&self.actions[entry.action as usize & (self.params.actions() - 1)]);
        if self.action_host(&action, false) {
            return info(self, Reason::ActionHost, true);
        }
        if let Some(r) = l4_exception(&f[L4..], proto, action.op, entry.ack_fast) {
            return info(self, r, true);
        }
        if tot + outer_len(&action) > self.mtu as usize {
            return info(self, Reason::TooBig, true);
        }
        if f.len() < L3 + tot {
            return self.truncated(f, vip, h0, seq, ts);
        }
        self.count_forward(entry.action, tot, slot, ts);
        let frame = match action.addr {
            IpAddr::V4(new_addr) => self.rewrite(&f[..L3 + tot], &action, new_addr),
            // Row 16 let only a TUNNEL through: IPv4 in IPv6.
            IpAddr::V6(dst) => self.tunnel6(&f[..L3 + tot], &action, dst, false),
        };
        HwOutput::Forward { frame, seq }
    }

    /// Row 16 (`ACTION_HOST`) for a hit of a frame of family `frame_v6`:
    /// the action's `host` bit; for ROUTE and NAT an address of the other
    /// family; for TUNNEL an IPv6 frame into IPv4 (the kernel draws the
    /// outer IPv4 ID at random), or into IPv6 on a core without `tun6`.
    fn action_host(&self, a: &ActionEntry, frame_v6: bool) -> bool {
        let act_v6 = a.addr.is_ipv6();
        a.host
            || match a.op {
                ActionOp::Tunnel => frame_v6 && !act_v6 || act_v6 && !self.params.tun6(),
                ActionOp::Route | ActionOp::NatDnat | ActionOp::NatSnat => act_v6 != frame_v6,
            }
    }

    /// The IPv6 path of [`process`](Self::process) (docs/hardware.md §3,
    /// rows 6–19 for IPv6): the same rows as IPv4 with the IPv6 header's
    /// facts, no header checksum, no VIP table (a miss is `MISS`).
    fn process6(&mut self, f: &[u8], ts: u64, seq: u32) -> HwOutput {
        let host = |s: &mut Self, r: Reason| s.to_host(r, false, false, 0, seq, ts, f);
        if f.len() < L4_6 {
            return host(self, Reason::Malformed);
        }
        let ip = Ipv6Packet::new_unchecked(&f[L3..]);
        if ip.version() != 6 {
            return host(self, Reason::Malformed);
        }
        let tot = ipv6::HEADER_LEN + usize::from(ip.payload_len());
        let proto = u8::from(ip.next_header());
        if IPV6_EXT_OPTIONS.contains(&proto) {
            return host(self, Reason::IpOptions);
        }
        if proto == IPV6_FRAGMENT {
            return host(self, Reason::Fragment);
        }
        let l4len = match proto {
            IPPROTO_TCP => tcp::HEADER_LEN,
            IPPROTO_UDP => udp::HEADER_LEN,
            _ => return host(self, Reason::NotTcpUdp),
        };
        if tot < ipv6::HEADER_LEN + l4len || f.len() < L4_6 + l4len {
            return host(self, Reason::L4Truncated);
        }
        let (sport, dport) = transport_ports(&f[L4_6..]).unwrap_or_default();
        let key = FlowKey6 { proto, saddr: ip.src_addr(), daddr: ip.dst_addr(), sport, dport };
        let (h0, h1) = key.hashes();
        // No IPv6 VIP table: `vip` is 0 and a miss is MISS.
        let info = |s: &mut Self, r: Reason, hit: bool| s.to_host(r, hit, false, h0, seq, ts, f);
        let found = self.lookup6(&key, h0, h1);
        if ip.hop_limit() <= 1 {
            return info(self, Reason::Ttl, found.is_some());
        }
        let Some((slot, entry)) = found else {
            return info(self, Reason::Miss, false);
        };
        let action = ActionEntry::from_bits(&self.actions[entry.action as usize & (self.params.actions() - 1)]);
        if self.action_host(&action, true) {
            return info(self, Reason::ActionHost, true);
        }
        // Row 16 passed: the action's address is IPv6 (ROUTE, NAT, ip6ip6).
        let IpAddr::V6(new_addr) = action.addr else {
            return info(self, Reason::ActionHost, true);
        };
        if let Some(r) = l4_exception(&f[L4_6..], proto, action.op, entry.ack_fast) {
            return info(self, r, true);
        }
        if tot + outer_len(&action) > self.mtu as usize {
            return info(self, Reason::TooBig, true);
        }
        if f.len() < L3 + tot {
            return self.truncated(f, false, h0, seq, ts);
        }
        self.count_forward(entry.action, tot, slot, ts);
        let frame = if action.op == ActionOp::Tunnel {
            self.tunnel6(&f[..L3 + tot], &action, new_addr, true)
        } else {
            self.rewrite6(&f[..L3 + tot], &action, new_addr)
        };
        HwOutput::Forward { frame, seq }
    }

    /// The TUNNEL rewrite into IPv6 (docs/hardware.md §4, TUNNEL with
    /// `ipv6`): MACs; the inner TTL − 1 with its header checksum
    /// recomputed (IPv4, `inner_v6` false) or hop limit − 1 (IPv6); then a
    /// 40-byte IPv6 header from `IP6` to `dst` (the golden director's
    /// [`xmit::ip4in6_encap`] / [`xmit::ip6ip6_encap`], which set the
    /// EtherType to IPv6). `f` ends at the inner packet's end.
    fn tunnel6(&self, f: &[u8], a: &ActionEntry, dst: Ipv6Addr, inner_v6: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(f.len() + ipv6::HEADER_LEN);
        out.extend_from_slice(f);
        xmit::set_macs(&mut out, a.mac, self.mac);
        let src = ip6_of_words(self.ip6);
        if inner_v6 {
            let mut ip = Ipv6Packet::new_unchecked(&mut out[L3..]);
            ip.set_hop_limit(ip.hop_limit() - 1); // hop limit > 1 checked
            xmit::ip6ip6_encap(&mut out, L3, src, dst);
        } else {
            let mut ip = Ipv4Packet::new_unchecked(&mut out[L3..]);
            ip.set_ttl(ip.ttl() - 1); // TTL > 1 checked
            xmit::ip4in6_encap(&mut out, L3, src, dst); // recomputes the inner checksum
        }
        out
    }

    /// Row 19 (`TRUNCATED`): the frame ends before the IP length, found
    /// when it is already leaving; it is aborted and counted as the host's.
    fn truncated(&mut self, f: &[u8], vip: bool, h0: u32, seq: u32, ts: u64) -> HwOutput {
        self.counters[CNT_HOST as usize] += 1;
        self.counters[(CNT_REASON_BASE + Reason::Truncated as u32) as usize] += 1;
        HwOutput::Aborted { meta: HostMeta { reason: Reason::Truncated, hit: true, vip, hash0: h0, seq, ts }, frame: f.to_vec() }
    }

    /// A forwarded frame's counters: its action's packets and bytes (`tot`,
    /// the IP length), its slot's `last_hit`, `CNT_FWD`.
    fn count_forward(&mut self, action: u16, tot: usize, slot: usize, ts: u64) {
        let a = action as usize & (self.params.actions() - 1);
        self.act_pkts[a] += 1;
        self.act_bytes[a] += tot as u64;
        self.last_hit[slot] = ts;
        self.counters[CNT_FWD as usize] += 1;
    }

    /// The IPv6 rewrite: MACs, hop limit − 1 (as the IPv4 path's TTL), and
    /// for NAT the address, the port and the L4 checksum by the action's
    /// `l4_delta` (computed by the host over the addresses' eight words;
    /// IPv6 has no header checksum).
    fn rewrite6(&self, f: &[u8], a: &ActionEntry, addr: Ipv6Addr) -> Vec<u8> {
        let mut out = f.to_vec();
        xmit::set_macs(&mut out, a.mac, self.mac);
        let mut ip = Ipv6Packet::new_unchecked(&mut out[L3..]);
        ip.set_hop_limit(ip.hop_limit() - 1); // hop limit > 1 checked
        if matches!(a.op, ActionOp::NatDnat | ActionOp::NatSnat) {
            let dnat = a.op == ActionOp::NatDnat;
            if dnat {
                ip.set_dst_addr(addr);
            } else {
                ip.set_src_addr(addr);
            }
            let proto = u8::from(ip.next_header());
            let l4 = &mut out[L4_6..];
            replace_transport_port(l4, dnat, a.port);
            if proto == IPPROTO_TCP {
                let mut t = TcpPacket::new_unchecked(l4);
                t.set_checksum(apply_l4_delta(t.checksum(), a.l4_delta));
            } else {
                let mut u = UdpPacket::new_unchecked(l4);
                u.set_checksum(checksum::udp_finalize(apply_l4_delta(u.checksum(), a.l4_delta)));
            }
        }
        out
    }

    fn rewrite(&self, f: &[u8], a: &ActionEntry, addr: Ipv4Addr) -> Vec<u8> {
        let mut out = Vec::with_capacity(f.len() + ipv4::HEADER_LEN);
        out.extend_from_slice(f);
        xmit::set_macs(&mut out, a.mac, self.mac);
        let mut ip = Ipv4Packet::new_unchecked(&mut out[L3..]);
        ip.set_ttl(ip.ttl() - 1); // TTL > 1 checked
        if matches!(a.op, ActionOp::NatDnat | ActionOp::NatSnat) {
            let dnat = a.op == ActionOp::NatDnat;
            if dnat {
                ip.set_dst_addr(addr);
            } else {
                ip.set_src_addr(addr);
            }
            let proto = ip.protocol();
            let l4 = ip.payload_mut();
            replace_transport_port(l4, dnat, a.port);
            if proto == IPPROTO_TCP {
                let mut t = TcpPacket::new_unchecked(l4);
                t.set_checksum(apply_l4_delta(t.checksum(), a.l4_delta));
            } else {
                let mut u = UdpPacket::new_unchecked(l4);
                u.set_checksum(checksum::udp_finalize(apply_l4_delta(u.checksum(), a.l4_delta)));
            }
        }
        ip.fill_checksum();
        if a.op == ActionOp::Tunnel {
            // The outer header copies the inner ID when DF is clear.
            let pmtu_disc = self.ctrl & CTRL_PMTU_DISC != 0;
            let ident = ip.ident();
            xmit::ipip_encap(&mut out, L3, Ipv4Addr::from(self.ip), addr, pmtu_disc, ident);
        }
        out
    }

    /// A frame from the host (`s_axis_inject`): transmitted unchanged.
    pub fn inject(&mut self, frame: &[u8]) -> Vec<u8> {
        self.counters[CNT_INJECT as usize] += 1;
        frame.to_vec()
    }

    /// The flow table as slot images, in slot-index order.
    pub fn flow_image(&self) -> &[SlotBits] {
        &self.flows
    }

    /// The action table as images, in index order.
    pub fn action_image(&self) -> &[ActionBits] {
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

    /// Valid flow entries (an IPv6 entry counts once).
    pub fn flow_count(&self) -> usize {
        self.flows.iter().filter(|b| is_valid(b)).count()
    }

    /// The register writes that bring a core out of reset into this
    /// state's configuration and tables (counters and `last_hit` aside):
    /// MAC, IP, IP6, MTU, VIPs, every non-empty flow slot and action, CTRL last.
    pub fn state_writes(&self) -> Vec<(u32, u32)> {
        let mut w = identity_writes(self.mac, self.ip, ip6_of_words(self.ip6), self.mtu).to_vec();
        for (i, v) in self.vips.iter().enumerate() {
            w.push((VIP_BASE + 4 * i as u32, *v));
        }
        w.push((VIP_VALID, self.vip_valid));
        let mut i = 0;
        while i < self.flows.len() {
            if is_ipv6_head(&self.flows[i]) && i % 2 == 0 {
                let pair: Vec<u32> = self.flows[i].iter().chain(&self.flows[i + 1]).copied().collect();
                w.extend(flow_writes(i, &pair));
                i += 2;
                continue;
            }
            if self.flows[i] != SlotBits::default() {
                w.extend(flow_writes(i, &self.flows[i]));
            }
            i += 1;
        }
        for (i, b) in self.actions.iter().enumerate() {
            if *b != ActionBits::default() {
                w.extend(action_writes(i, b));
            }
        }
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


/// Row 19's addition to the packet length: the outer header a TUNNEL
/// inserts (20 bytes of IPv4, or 40 of IPv6 with the action's `ipv6`).
fn outer_len(a: &ActionEntry) -> usize {
    match (a.op, a.addr) {
        (ActionOp::Tunnel, IpAddr::V4(_)) => ipv4::HEADER_LEN,
        (ActionOp::Tunnel, IpAddr::V6(_)) => ipv6::HEADER_LEN,
        _ => 0,
    }
}

/// Whether `a` is one of the `len` words of the register array at `base`.
fn staged(a: u32, base: u32, len: u32) -> bool {
    (base..base + 4 * len).contains(&a) && a % 4 == 0
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
            a if staged(a, IP6_BASE, IP6_LEN) => {
                if self.params.tun6() {
                    self.ip6[((a - IP6_BASE) / 4) as usize] = v;
                }
            }
            MTU => self.mtu = v as u16,
            VIP_VALID => {
                let n = self.params.vip_count;
                self.vip_valid = if n >= 32 { v } else { v & ((1 << n) - 1) };
            }
            a if (VIP_BASE..VIP_BASE + 4 * self.params.vip_count).contains(&a) && a % 4 == 0 => {
                self.vips[((a - VIP_BASE) / 4) as usize] = v;
            }
            a if staged(a, FLOW_DATA, FLOW_DATA_LEN) => self.flow_staging[((a - FLOW_DATA) / 4) as usize] = v,
            FLOW_INDEX => self.flow_index = v,
            FLOW_CMD => {
                let i = self.flow_idx();
                let n = SlotBits::default().len();
                match v {
                    CMD_WRITE => {
                        self.flows[i].copy_from_slice(&self.flow_staging[..n]);
                        self.last_hit[i] = 0;
                    }
                    CMD_WRITE_PAIR => {
                        let even = i & !1;
                        self.flows[even].copy_from_slice(&self.flow_staging[..n]);
                        self.flows[even + 1].copy_from_slice(&self.flow_staging[n..]);
                        self.last_hit[even] = 0;
                        self.last_hit[even + 1] = 0;
                    }
                    CMD_READ => {
                        self.flow_rdata[..n].copy_from_slice(&self.flows[i]);
                        self.flow_rdata[n..].copy_from_slice(&self.flows[i ^ 1]);
                        self.flow_hit = self.last_hit[i];
                    }
                    _ => {}
                }
            }
            a if staged(a, ACT_DATA, ACT_DATA_LEN) => self.act_staging[((a - ACT_DATA) / 4) as usize] = v,
            ACT_INDEX => self.act_index = v,
            ACT_CMD => {
                let i = self.act_idx();
                match v {
                    CMD_WRITE => {
                        self.actions[i] = self.act_staging;
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
            CAPS0 => p.caps().0,
            CAPS1 => p.caps().1,
            CTRL => self.ctrl,
            MAC_LO => u32::from_be_bytes([self.mac.0[2], self.mac.0[3], self.mac.0[4], self.mac.0[5]]),
            MAC_HI => (self.mac.0[0] as u32) << 8 | self.mac.0[1] as u32,
            IP => self.ip,
            a if staged(a, IP6_BASE, IP6_LEN) => self.ip6[((a - IP6_BASE) / 4) as usize],
            MTU => self.mtu as u32,
            VIP_VALID => self.vip_valid,
            a if (VIP_BASE..VIP_BASE + 4 * p.vip_count).contains(&a) && a % 4 == 0 => self.vips[((a - VIP_BASE) / 4) as usize],
            // FLOW_DATA / ACT_DATA are write-only: they read 0 (the default arm)
            FLOW_INDEX => self.flow_index,
            FLOW_STATUS | ACT_STATUS => 0,
            a if staged(a, FLOW_RDATA, FLOW_RDATA_LEN) => self.flow_rdata[((a - FLOW_RDATA) / 4) as usize],
            FLOW_HIT_LO => self.flow_hit as u32,
            FLOW_HIT_HI => (self.flow_hit >> 32) as u32,
            ACT_INDEX => self.act_index,
            a if staged(a, ACT_RDATA, ACT_RDATA_LEN) => self.act_rdata[((a - ACT_RDATA) / 4) as usize],
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

#[cfg(test)]
mod tests {
    use super::HwParams;

    /// `CAPS0`/`CAPS1` as docs/registers.md lays them out: data width in
    /// 15:0, buckets log2 in 23:16, actions log2 in 31:24; slots 7:0, ways
    /// 15:8, VIPs 23:16, ipv6 24, tun6 25 (equal to ipv6).
    #[test]
    fn caps_are_the_register_fields() {
        let p = HwParams { data_width: 512, flow_buckets_log2: 16, action_log2: 12, vip_count: 32, ipv6: true };
        let (c0, c1) = p.caps();
        assert_eq!((c0, c1), (512 | 16 << 16 | 12 << 24, 4 | 2 << 8 | 32 << 16 | 1 << 24 | 1 << 25));
        assert_eq!(HwParams::from_caps(c0, c1), p);
        assert!(HwParams::caps1_tun6(c1) && p.tun6());
        let no6 = HwParams { ipv6: false, ..p };
        assert_eq!(no6.caps(), (c0, 4 | 2 << 8 | 32 << 16));
        assert_eq!(HwParams::from_caps(c0, no6.caps().1), no6);
        assert!(!HwParams::caps1_tun6(no6.caps().1) && !no6.tun6());
        assert!(HwParams::caps1_geometry_ok(c1));
        assert!(!HwParams::caps1_geometry_ok(c1 & !0xff | 8), "8 slots");
        assert!(!HwParams::caps1_geometry_ok(c1 & !0xff00 | 4 << 8), "4 ways");
    }

    /// `WRITE_PAIR` writes both slots of the index's pair in one command,
    /// `READ` returns the slot then its partner, and `WRITE` writes one
    /// slot only: the table commands of docs/hardware.md §6.
    #[test]
    fn pair_commands_write_and_read_both_slots() {
        use super::super::regs::*;
        use super::super::tables::{Flow6Entry, FlowEntry, FlowKey, FlowKey6};
        use super::super::Csr;
        use super::HwPipeline;
        let params = HwParams { flow_buckets_log2: 4, ..Default::default() };
        let mut hw = HwPipeline::new(params);
        let k6 = FlowKey6 { proto: 6, saddr: "2001:db8::1".parse().unwrap(), daddr: "2001:db8::2".parse().unwrap(), sport: 1, dport: 2 };
        let e6 = Flow6Entry::new(k6, 7, true);
        // Index 13 (odd): the pair is slots 12 and 13.
        for (a, v) in flow_writes(13, &e6.to_bits()) {
            hw.write32(a, v);
        }
        assert_eq!(Flow6Entry::from_slots(&hw.flow_image()[12], &hw.flow_image()[13]), e6);
        hw.write32(FLOW_INDEX, 13);
        hw.write32(FLOW_CMD, CMD_READ);
        let rd: Vec<u32> = (0..FLOW_RDATA_LEN).map(|k| hw.read32(FLOW_RDATA + 4 * k)).collect();
        let p = e6.to_bits();
        assert_eq!(rd[..5], p[5..], "slot 13 first");
        assert_eq!(rd[5..], p[..5], "then its partner, 12");
        assert_eq!(hw.flow_count(), 1);
        // WRITE touches one slot: an IPv4 entry at 14 leaves the pair alone.
        let e4 = FlowEntry::new(FlowKey { proto: 17, saddr: 1, daddr: 2, sport: 3, dport: 4 }, 9, false);
        for (a, v) in flow_writes(14, &e4.to_bits()) {
            hw.write32(a, v);
        }
        assert_eq!(FlowEntry::from_bits(&hw.flow_image()[14]), e4);
        assert_eq!(Flow6Entry::from_slots(&hw.flow_image()[12], &hw.flow_image()[13]), e6);
        // An empty pair written with WRITE_PAIR empties both slots at once.
        for (a, v) in flow_writes(12, &Flow6Entry::default().to_bits()) {
            hw.write32(a, v);
        }
        assert_eq!(hw.flow_image()[12..14], [[0; 5]; 2]);
        assert_eq!(hw.flow_count(), 1);
    }

    /// An IPv6 frame to the director's MAC: next header `nh`, hop limit
    /// `hl`, L4 header from the key's ports (TCP ACK or UDP), a valid L4
    /// checksum over the IPv6 pseudo-header.
    fn frame6(mac: [u8; 6], k: &super::super::tables::FlowKey6, nh: u8, hl: u8, payload: usize) -> Vec<u8> {
        use crate::wire::checksum;
        let l4len = if k.proto == 6 { 20 } else { 8 };
        let plen = l4len + payload;
        let mut f = mac.to_vec();
        f.extend_from_slice(&[2, 0, 0, 0, 0, 9, 0x86, 0xdd]);
        f.extend_from_slice(&[0x6b, 0x81, 0x23, 0x45]);
        f.extend_from_slice(&(plen as u16).to_be_bytes());
        f.extend_from_slice(&[nh, hl]);
        f.extend_from_slice(&k.saddr.octets());
        f.extend_from_slice(&k.daddr.octets());
        let l4 = f.len();
        f.extend_from_slice(&k.sport.to_be_bytes());
        f.extend_from_slice(&k.dport.to_be_bytes());
        if k.proto == 6 {
            f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x10, 0x72, 0x10, 0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&(plen as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
        f.extend((0..payload).map(|i| i as u8));
        let co = l4 + if k.proto == 6 { 16 } else { 6 };
        let s = checksum::ones_sum(&f[l4..], checksum::pseudo_header_sum_v6(k.saddr, k.daddr, k.proto, plen as u32));
        let c = !checksum::fold(s);
        f[co..co + 2].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
        f
    }

    /// IPv6 frames (docs/hardware.md §3): the classification rows, a hit on
    /// an IPv6 pair forwarded by DR and NAT (hop limit − 1, the L4
    /// checksum valid over the new pseudo-header) and ip6ip6
    /// (`tun6_tests` checks its bytes).
    #[test]
    fn ipv6_frames_are_classified_and_forwarded() {
        use super::super::regs::*;
        use super::super::tables::{ActionEntry, ActionOp, Flow6Entry, FlowKey6};
        use super::super::{Csr, Reason};
        use super::{HwOutput, HwPipeline};
        use crate::wire::{checksum, MacAddr};
        use std::net::{IpAddr, Ipv6Addr};
        let params = HwParams { flow_buckets_log2: 4, action_log2: 4, ..Default::default() };
        let mut hw = HwPipeline::new(params);
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        for (a, v) in identity_writes(mac, 0x0a00_0001, std::net::Ipv6Addr::UNSPECIFIED, 1500) {
            hw.write32(a, v);
        }
        let client: Ipv6Addr = "2001:db8:c::7".parse().unwrap();
        let vip: Ipv6Addr = "2001:db8::10".parse().unwrap();
        let rs: Ipv6Addr = "2001:db8:a::5".parse().unwrap();
        let mut flows = Vec::new();
        for (i, (proto, op)) in [(6u8, ActionOp::Route), (6, ActionOp::NatDnat), (17, ActionOp::NatDnat), (6, ActionOp::NatSnat), (6, ActionOp::Tunnel)]
            .into_iter()
            .enumerate()
        {
            let k = FlowKey6 { proto, saddr: client, daddr: vip, sport: 1000 + i as u16, dport: 80 };
            let port = 8080;
            let (addr, delta) = match op {
                ActionOp::NatSnat => (client, ActionEntry::nat_delta6(client, k.sport, rs, port)),
                _ => (rs, ActionEntry::nat_delta6(vip, 80, rs, port)),
            };
            let addr = if op == ActionOp::NatSnat { rs } else { addr };
            let act = ActionEntry { op, host: false, mac: MacAddr([2, 0, 0, 0, 0x10, i as u8]), addr: IpAddr::V6(addr), port, l4_delta: delta };
            for (a, v) in action_writes(i + 1, &act.to_bits()) {
                hw.write32(a, v);
            }
            let (h0, _) = k.hashes();
            let slot = params.slot_index(0, (h0 & 15) as usize, 2 * (i % 2));
            for (a, v) in flow_writes(slot, &Flow6Entry::new(k, i as u16 + 1, true).to_bits()) {
                hw.write32(a, v);
            }
            assert!(hw.lookup6(&k, h0, k.hashes().1).is_some(), "{k:?} installed");
            flows.push((k, op));
        }
        hw.write32(CTRL, CTRL_ENABLE | CTRL_PMTU_DISC);
        let reason = |hw: &mut HwPipeline, f: &[u8]| match hw.process(f, 1, 1) {
            HwOutput::ToHost { meta, .. } | HwOutput::Aborted { meta, .. } => Some(meta.reason),
            HwOutput::Forward { .. } => None,
        };
        let (k, _) = flows[0];
        let good = frame6(mac.0, &k, 6, 64, 10);
        assert_eq!(reason(&mut hw, &good), None);
        for (nh, r) in [(0u8, Reason::IpOptions), (43, Reason::IpOptions), (60, Reason::IpOptions), (51, Reason::IpOptions), (44, Reason::Fragment), (58, Reason::NotTcpUdp), (59, Reason::NotTcpUdp)] {
            assert_eq!(reason(&mut hw, &frame6(mac.0, &k, nh, 64, 10)), Some(r), "next header {nh}");
        }
        let mut bad = good.clone();
        bad[14] = 0x4b;
        assert_eq!(reason(&mut hw, &bad), Some(Reason::Malformed), "version 4 in an IPv6 frame");
        assert_eq!(reason(&mut hw, &good[..14 + 39]), Some(Reason::Malformed), "39 bytes of header");
        assert_eq!(reason(&mut hw, &good[..14 + 40 + 19]), Some(Reason::L4Truncated));
        let mut short = good.clone();
        short[18..20].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(reason(&mut hw, &short), Some(Reason::L4Truncated), "payload length 19");
        assert_eq!(reason(&mut hw, &good[..good.len() - 1]), Some(Reason::Truncated), "frame shorter than the payload length");
        for hl in [0, 1] {
            assert_eq!(reason(&mut hw, &frame6(mac.0, &k, 6, hl, 10)), Some(Reason::Ttl));
        }
        let miss = FlowKey6 { sport: 1, ..k };
        assert_eq!(reason(&mut hw, &frame6(mac.0, &miss, 6, 64, 10)), Some(Reason::Miss));
        assert_eq!(reason(&mut hw, &frame6(mac.0, &flows[4].0, 6, 64, 10)), None, "ip6ip6 is forwarded (CAPS1.tun6)");
        hw.write32(MTU, 40 + 20 + 9);
        assert_eq!(reason(&mut hw, &good), Some(Reason::TooBig));
        hw.write32(MTU, 40 + 20 + 10);
        for (k, op) in &flows[..4] {
            let f = frame6(mac.0, k, k.proto, 64, 10);
            let mut padded = f.clone();
            padded.extend_from_slice(&[0xee; 7]);
            let HwOutput::Forward { frame: out, .. } = hw.process(&padded, 1, 1) else { panic!("{op:?} not forwarded") };
            assert_eq!(out.len(), f.len(), "padding removed");
            assert_eq!(out[..6], [2, 0, 0, 0, 0x10, out[5]]);
            assert_eq!(out[21], 63, "hop limit - 1");
            let ip = crate::wire::Ipv6Packet::new_unchecked(&out[14..]);
            let (src, dst) = (ip.src_addr(), ip.dst_addr());
            match op {
                ActionOp::Route => assert_eq!(out[14..], f[14..21].iter().chain(&[63]).chain(&f[22..]).copied().collect::<Vec<u8>>()[..]),
                ActionOp::NatDnat => assert_eq!((src, dst, out[56..58] == 8080u16.to_be_bytes()), (client, rs, true)),
                _ => assert_eq!((src, dst, out[54..56] == 8080u16.to_be_bytes()), (rs, vip, true)),
            }
            let s = checksum::ones_sum(&out[54..], checksum::pseudo_header_sum_v6(src, dst, k.proto, (out.len() - 54) as u32));
            assert_eq!(checksum::fold(s), 0xffff, "{op:?}: L4 checksum valid after the rewrite");
        }
    }

    /// A core built with `IPV6` = 0 sends the IPv6 frame that the default
    /// core forwards to the host as `NON_IPV4` (the Versa ECP5 build).
    #[test]
    fn without_ipv6_an_ipv6_frame_is_non_ipv4() {
        use super::super::regs::*;
        use super::super::tables::{ActionEntry, ActionOp, Flow6Entry, FlowKey6};
        use super::super::{Csr, Reason};
        use super::{HwOutput, HwPipeline};
        use crate::wire::MacAddr;
        use std::net::IpAddr;
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let k = FlowKey6 { proto: 6, saddr: "2001:db8:c::7".parse().unwrap(), daddr: "2001:db8::10".parse().unwrap(), sport: 1000, dport: 80 };
        let act = ActionEntry { op: ActionOp::Route, host: false, mac: MacAddr([2, 0, 0, 0, 0x10, 1]), addr: IpAddr::V6("2001:db8:a::5".parse().unwrap()), port: 0, l4_delta: 0 };
        let f = frame6(mac.0, &k, 6, 64, 10);
        let mut outcomes = Vec::new();
        for ipv6 in [true, false] {
            let params = HwParams { flow_buckets_log2: 4, action_log2: 4, ipv6, ..Default::default() };
            let mut hw = HwPipeline::new(params);
            for (a, v) in identity_writes(mac, 0x0a00_0001, std::net::Ipv6Addr::UNSPECIFIED, 1500).into_iter().chain(action_writes(1, &act.to_bits())) {
                hw.write32(a, v);
            }
            let slot = params.slot_index(0, (k.hashes().0 & 15) as usize, 0);
            for (a, v) in flow_writes(slot, &Flow6Entry::new(k, 1, true).to_bits()) {
                hw.write32(a, v);
            }
            hw.write32(CTRL, CTRL_ENABLE | CTRL_PMTU_DISC);
            assert_eq!(hw.read32(CAPS1) >> 24 & 1, u32::from(ipv6));
            outcomes.push(match hw.process(&f, 1, 1) {
                HwOutput::Forward { .. } => None,
                HwOutput::ToHost { meta, .. } | HwOutput::Aborted { meta, .. } => Some(meta.reason),
            });
        }
        assert_eq!(outcomes, [None, Some(Reason::NonIpv4)]);
    }
}
