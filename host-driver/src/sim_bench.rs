//! `lvsnic sim-bench`: throughput and latency of the verilated core
//! streaming back-to-back established-flow frames, in cycles.
//!
//! ```text
//! lvsnic sim-bench --width 64|512 --frame-len L --mode nat|dr|tun|nat6|dr6|tun6 [--frames N] [--json]
//! lvsnic sim-bench --width 64|512 --mode nat|dr|tun|nat6|dr6|tun6 --sweep 60..9014 [--frames N]   # every length
//! lvsnic sim-bench --width 64|512 --vectors DIR [--json]     # simulation speed on test vectors
//! ```
//!
//! Flows are installed through the registers (as the host does), then
//! frames of exactly `L` bytes (Ethernet header to the end of the payload,
//! no FCS) of those flows are offered on every cycle (`tvalid` always
//! high), outputs always ready. Reported:
//!
//! * `cycles`: from the first input beat accepted to the last input beat
//!   accepted, inclusive — the input streaming window;
//! * `bus_utilization`: input bytes / (`cycles` × width/8);
//! * `latency_cycles_min`/`max`: first input beat to first output beat of
//!   the same frame;
//! * `drain_cycles`: from the last input beat to the last output beat.
//!
//! A sweep also reports, for 10, 25 and 100 Gb/s Ethernet, the core clock
//! needed to keep up with line rate at the worst frame length of the
//! sweep: a frame of `L` bytes (no FCS) occupies `L + 24` bytes of wire
//! time (FCS 4, preamble and SFD 8, inter-frame gap 12), so line rate `R`
//! brings `R / (8 (L + 24))` frames per second, and a core that takes `c(L)`
//! cycles per frame (measured: input window / frames) needs a clock of
//! `c(L) R / (8 (L + 24))`.

use crate::device::sim_core::SimCore;
use lvsnic_model::hw::placement::FlowPlacer;
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::tables::{ActionEntry, ActionOp, Flow6Entry, FlowEntry, FlowKey, FlowKey6};
use lvsnic_model::hw::Csr;
use lvsnic_model::wire::build::tcp_frame;
use lvsnic_model::wire::{EthernetRepr, Ipv4Repr, MacAddr, TcpRepr, ETHERTYPE_IPV4, TCP_ACK};
use lvsnic_sim::{Pattern, RxUser};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What to forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchMode {
    /// NAT: the action rewrites the destination to 192.168.10.1:8080
    /// (`NAT_DNAT`).
    Nat,
    /// Direct routing: only the destination MAC is rewritten (`ROUTE`).
    Dr,
    /// IPIP tunnel to 192.168.10.1: 20 bytes added per frame (`TUNNEL`).
    Tun,
    /// NAT of IPv6 frames (IPv6 flows in slot pairs): the destination
    /// rewritten to [2001:db8:a::1]:8080 (`NAT_DNAT`, an IPv6 action).
    Nat6,
    /// Direct routing of IPv6 frames (`ROUTE`, an IPv6 action).
    Dr6,
    /// ip6ip6 tunnel of IPv6 frames to [2001:db8:a::1]: 40 bytes added per
    /// frame (`TUNNEL`, an IPv6 action; the source from `IP6`).
    Tun6,
}

impl BenchMode {
    /// Whether the mode streams IPv6 frames.
    pub fn is_ipv6(self) -> bool {
        matches!(self, BenchMode::Nat6 | BenchMode::Dr6 | BenchMode::Tun6)
    }

    /// The shortest frame the mode forwards: 60 bytes (the smallest
    /// Ethernet frame) for IPv4, 74 for IPv6 (Ethernet, IPv6 and TCP
    /// headers).
    pub fn min_frame_len(self) -> usize {
        if self.is_ipv6() {
            MIN_FRAME_LEN_IPV6
        } else {
            MIN_FRAME_LEN
        }
    }
}

/// The flows a bench streams: IPv4 or IPv6 keys.
enum Keys {
    V4(Vec<FlowKey>),
    V6(Vec<FlowKey6>),
}

/// One measurement.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchResult {
    /// Data width of the core in bits (64 or 512).
    pub width: u32,
    /// The mode, `nat`, `dr` or `tun`.
    pub mode: String,
    /// Length of every frame in bytes (Ethernet header to end of payload,
    /// no FCS).
    pub frame_len: usize,
    /// Cycles from the first input beat accepted to the last, inclusive (the
    /// input streaming window).
    pub cycles: u64,
    /// Frames streamed in.
    pub frames: u64,
    /// Bytes streamed in.
    pub bytes_in: u64,
    /// Bytes of the forwarded frames that came out.
    pub bytes_out: u64,
    /// `bytes_in` / (`cycles` × width/8): the share of the input bus's
    /// capacity used, 0..=1.
    pub bus_utilization: f64,
    /// Fewest cycles from a frame's first input beat to its first output
    /// beat (0 if nothing came out).
    pub latency_cycles_min: u64,
    /// Most cycles from a frame's first input beat to its first output beat.
    pub latency_cycles_max: u64,
    /// Cycles from the last input beat to the last output beat.
    pub drain_cycles: u64,
    /// Frames forwarded during the run (`CNT[1]` difference).
    pub forwarded: u64,
    /// Frames sent to the host during the run (`CNT[2]` difference); 0
    /// expected.
    pub to_host: u64,
    /// Wall-clock simulation speed (host-dependent, for information).
    pub sim_frames_per_sec: f64,
    /// Wall-clock simulation speed in cycles per second (host-dependent,
    /// for information).
    pub sim_cycles_per_sec: f64,
}

const DIR_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
const VIP: u32 = 0x0A00_0064;
const VIP6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10);
const RS6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 1);

fn program(core: &mut SimCore, mode: BenchMode, flows: usize) -> Result<Keys, String> {
    let params = SimCore::params(core.rtl.width().bits());
    let w = |c: &mut SimCore, a: u32, v: u32| c.write32(a, v);
    w(core, MAC_HI, 0x0200);
    w(core, MAC_LO, 0x0000_0001);
    w(core, IP, 0x0A00_0001);
    // 2001:db8:ff::1, the source of IPv6 tunnel headers
    for (i, v) in [0x2001_0DB8u32, 0x00FF_0000, 0, 1].into_iter().enumerate() {
        w(core, IP6_BASE + 4 * i as u32, v);
    }
    w(core, MTU, 9216);
    w(core, VIP_BASE, VIP);
    w(core, VIP_VALID, 1);
    let mac = MacAddr([0x02, 0, 0, 0, 0x10, 0x01]);
    let action = match mode {
        BenchMode::Nat6 | BenchMode::Dr6 | BenchMode::Tun6 => {
            let (op, port) = match mode {
                BenchMode::Nat6 => (ActionOp::NatDnat, 8080),
                BenchMode::Tun6 => (ActionOp::Tunnel, 0),
                _ => (ActionOp::Route, 0),
            };
            ActionEntry { op, host: false, mac, addr: IpAddr::V6(RS6), port, l4_delta: ActionEntry::nat_delta6(VIP6, 80, RS6, port) }
        }
        _ => {
            let (op, addr, port) = match mode {
                BenchMode::Nat => (ActionOp::NatDnat, 0xC0A8_0A01, 8080),
                BenchMode::Tun => (ActionOp::Tunnel, 0xC0A8_0A01, 0),
                _ => (ActionOp::Route, 0, 0),
            };
            ActionEntry { op, host: false, mac, addr: IpAddr::V4(Ipv4Addr::from(addr)), port, l4_delta: ActionEntry::nat_delta(VIP, 80, addr, port) }
        }
    };
    crate::flows::write_table(core, ACT_STATUS, &action_writes(1, &action.to_bits()));
    let mut placer = FlowPlacer::new(params);
    let mut keys4 = Vec::new();
    let mut keys6 = Vec::new();
    for i in 0..flows {
        let writes = if mode.is_ipv6() {
            let saddr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, i as u16);
            let key = FlowKey6 { proto: 6, saddr, daddr: VIP6, sport: 40000 + i as u16, dport: 80 };
            keys6.push(key);
            placer.insert6(Flow6Entry::new(key, 1, true)).map_err(|e| e.to_string())?
        } else {
            let key = FlowKey { proto: 6, saddr: 0xC612_0000 + i as u32, daddr: VIP, sport: 40000 + i as u16, dport: 80 };
            keys4.push(key);
            placer.insert(FlowEntry::new(key, 1, true)).map_err(|e| e.to_string())?
        };
        for wr in writes {
            crate::flows::write_table(core, FLOW_STATUS, &wr.register_writes());
        }
    }
    let keys = if mode.is_ipv6() { Keys::V6(keys6) } else { Keys::V4(keys4) };
    w(core, CTRL, CTRL_ENABLE | CTRL_PMTU_DISC);
    if let Some(e) = core.error.take() {
        return Err(format!("sim: {e}"));
    }
    Ok(keys)
}

/// Shortest frame measured: the smallest Ethernet frame without its FCS
/// (64 bytes on the wire with it); it still holds the 54 header bytes.
pub const MIN_FRAME_LEN: usize = 60;
/// Shortest IPv6 frame measured: Ethernet 14, IPv6 40, TCP 20.
pub const MIN_FRAME_LEN_IPV6: usize = 74;
/// Longest frame measured: a 9000-byte jumbo payload plus the Ethernet header.
pub const MAX_FRAME_LEN: usize = 9014;
/// Wire bytes per frame beyond the bytes the core sees: FCS 4, preamble and
/// SFD 8, inter-frame gap 12.
pub const WIRE_OVERHEAD: usize = 4 + 8 + 12;
/// Ethernet line rates a sweep reports the needed clock for, Gb/s.
pub const LINE_RATES_GBPS: [u32; 3] = [10, 25, 100];

/// Core clock in Hz that keeps up with `gbps` Gb/s Ethernet when every
/// frame is `len` bytes (no FCS) and takes `cycles_per_frame` cycles.
pub fn clock_for_line_rate(gbps: f64, len: usize, cycles_per_frame: f64) -> f64 {
    gbps * 1e9 / (8.0 * (len + WIRE_OVERHEAD) as f64) * cycles_per_frame
}

fn frame(key: &FlowKey, len: usize) -> Vec<u8> {
    let eth = EthernetRepr { src: MacAddr([0x02, 0, 0, 0, 0, 0xfe]), dst: DIR_MAC, vlan_tci: None, ethertype: ETHERTYPE_IPV4 };
    let ip = Ipv4Repr {
        src_addr: Ipv4Addr::from(key.saddr),
        dst_addr: Ipv4Addr::from(key.daddr),
        protocol: 6,
        payload_len: 0,
        ttl: 64,
        tos: 0,
        ident: 7,
        dont_frag: true,
    };
    let t = TcpRepr { src_port: key.sport, dst_port: key.dport, seq_number: 1, ack_number: 1, flags: TCP_ACK, window_len: 512 };
    tcp_frame(&eth, &ip, &t, &vec![0x5au8; len.saturating_sub(54)])
}

/// An IPv6 TCP ACK segment of `len` bytes (≥ 74) for `key`, with a valid
/// TCP checksum.
fn frame6(key: &FlowKey6, len: usize) -> Vec<u8> {
    use lvsnic_model::wire::checksum;
    let plen = len - 54;
    let mut f = DIR_MAC.0.to_vec();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0xfe, 0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(plen as u16).to_be_bytes());
    f.extend_from_slice(&[6, 64]);
    f.extend_from_slice(&key.saddr.octets());
    f.extend_from_slice(&key.daddr.octets());
    f.extend_from_slice(&key.sport.to_be_bytes());
    f.extend_from_slice(&key.dport.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0x50, TCP_ACK, 2, 0, 0, 0, 0, 0]);
    f.resize(len, 0x5a);
    let s = checksum::ones_sum(&f[54..], checksum::pseudo_header_sum_v6(key.saddr, key.daddr, 6, plen as u32));
    f[70..72].copy_from_slice(&(!checksum::fold(s)).to_be_bytes());
    f
}

/// Streams `frames` frames of `frame_len` bytes in `mode` through a core of `width` bits.
pub fn bench(width: u32, mode: BenchMode, frame_len: usize, frames: usize) -> Result<BenchResult, String> {
    let min = mode.min_frame_len();
    if !(min..=MAX_FRAME_LEN).contains(&frame_len) {
        return Err(format!("frame length {frame_len} outside {min}..={MAX_FRAME_LEN}"));
    }
    let mut core = SimCore::new(width)?;
    let frames_v: Vec<Vec<u8>> = match program(&mut core, mode, 64)? {
        Keys::V4(keys) => keys.iter().map(|k| frame(k, frame_len)).collect(),
        Keys::V6(keys) => keys.iter().map(|k| frame6(k, frame_len)).collect(),
    };
    core.rtl.rx().set_pattern(Pattern::always());
    core.rtl.tx().set_pattern(Pattern::always());
    core.rtl.host().set_pattern(Pattern::always());
    let fwd0 = core.read32(CNT_BASE + 8 * CNT_FWD);
    let host0 = core.read32(CNT_BASE + 8 * CNT_HOST);
    core.rtl.rx().set_recording(true);
    let wall = std::time::Instant::now();
    let c0 = core.rtl.cycle();
    for i in 0..frames {
        core.rtl
            .rx()
            .push_bytes(&frames_v[i % frames_v.len()], RxUser { timestamp: 1_000 + i as u64, seq: i as u32 + 1 })
            .map_err(|e| format!("sim: {e}"))?;
    }
    core.rtl.run_until_idle(1_000_000_000).map_err(|e| format!("sim: {e}"))?;
    let elapsed = wall.elapsed().as_secs_f64();
    let total_cycles = core.rtl.cycle() - c0;
    let sent = core.rtl.rx().take_sent();
    let out = core.rtl.tx().take();
    let host = core.rtl.host().take();
    let fwd = core.read32(CNT_BASE + 8 * CNT_FWD) - fwd0;
    let to_host = core.read32(CNT_BASE + 8 * CNT_HOST) - host0;
    let first = sent.first().map(|s| s.first_beat).unwrap_or(0);
    let last_in = sent.last().map(|s| s.last_beat).unwrap_or(0);
    let cycles = last_in - first + 1;
    let bytes_in: u64 = sent.iter().map(|s| s.len as u64).sum();
    let bytes_out: u64 = out.iter().map(|f| f.data.len() as u64).sum();
    let mut lat_min = u64::MAX;
    let mut lat_max = 0;
    for (s, o) in sent.iter().zip(&out) {
        let l = o.first_beat.saturating_sub(s.first_beat);
        lat_min = lat_min.min(l);
        lat_max = lat_max.max(l);
    }
    let last_out = out.last().map(|f| f.last_beat).or(host.last().map(|f| f.last_beat)).unwrap_or(last_in);
    Ok(BenchResult {
        width,
        mode: format!("{mode:?}").to_lowercase(),
        frame_len,
        cycles,
        frames: sent.len() as u64,
        bytes_in,
        bytes_out,
        bus_utilization: bytes_in as f64 / (cycles as f64 * (width / 8) as f64),
        latency_cycles_min: if out.is_empty() { 0 } else { lat_min },
        latency_cycles_max: lat_max,
        drain_cycles: last_out.saturating_sub(last_in),
        forwarded: fwd as u64,
        to_host: to_host as u64,
        sim_frames_per_sec: frames as f64 / elapsed,
        sim_cycles_per_sec: total_cycles as f64 / elapsed,
    })
}

/// Simulation speed on `lvsnic vectors` output: every input frame streamed
/// through the core after the register script; checks the output counts
/// against the expected files.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct VectorBench {
    /// Data width of the core in bits (64 or 512).
    pub width: u32,
    /// Input frames streamed (`input.pcap`).
    pub frames: usize,
    /// Cycles simulated until the core was idle.
    pub cycles: u64,
    /// Wall-clock seconds the simulation took.
    pub seconds: f64,
    /// Input frames simulated per wall-clock second.
    pub frames_per_sec: f64,
    /// Cycles simulated per wall-clock second.
    pub cycles_per_sec: f64,
    /// Frames out of the transmit port (expected + aborted frames of the
    /// vectors).
    pub tx_frames: usize,
    /// Frames out of the host port (`expected_host.txt`).
    pub host_frames: usize,
}

/// Streams the `lvsnic vectors` output in `dir` (`regs.txt`,
/// `input.pcap`, `expected_*.txt`) through a core of `width` bits, after
/// the register script, and measures simulation speed; fails if the
/// output counts differ from the expected files.
pub fn bench_vectors(width: u32, dir: &std::path::Path) -> Result<VectorBench, String> {
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).map_err(|e| format!("{}: {e}", dir.join(n).display()));
    let regs = read("regs.txt")?;
    let input_path = dir.join("input.pcap");
    let input = lvsnic_model::pcap::read_file(&input_path).map_err(|e| format!("{}: {e}", input_path.display()))?;
    let exp_tx = read("expected_tx.txt")?.lines().count();
    let exp_host = read("expected_host.txt")?.lines().count();
    let aborts = read("expected_abort.txt")?.lines().count();
    let mut core = SimCore::new(width)?;
    for line in regs.lines() {
        let mut it = line.split_whitespace();
        let (Some(a), Some(v)) = (it.next(), it.next()) else { continue };
        let a = u32::from_str_radix(a, 16).map_err(|e| format!("regs.txt: {e}"))?;
        let v = u32::from_str_radix(v, 16).map_err(|e| format!("regs.txt: {e}"))?;
        core.write32(a, v);
    }
    let wall = std::time::Instant::now();
    let c0 = core.rtl.cycle();
    for (i, r) in input.iter().enumerate() {
        core.rtl.rx().push_bytes(&r.data, RxUser { timestamp: r.ts_ns, seq: i as u32 + 1 }).map_err(|e| format!("sim: {e}"))?;
    }
    core.rtl.run_until_idle(1_000_000_000).map_err(|e| format!("sim: {e}"))?;
    let seconds = wall.elapsed().as_secs_f64();
    let cycles = core.rtl.cycle() - c0;
    let tx = core.rtl.tx().take().len();
    let host = core.rtl.host().take().len();
    if tx != exp_tx + aborts || host != exp_host {
        return Err(format!(
            "outputs differ from the vectors: {tx} tx (expected {}), {host} host (expected {exp_host})",
            exp_tx + aborts
        ));
    }
    Ok(VectorBench {
        width,
        frames: input.len(),
        cycles,
        seconds,
        frames_per_sec: input.len() as f64 / seconds,
        cycles_per_sec: cycles as f64 / seconds,
        tx_frames: tx,
        host_frames: host,
    })
}

/// A sweep over frame lengths: the worst input bus utilization against its
/// goal and the worst latency.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SweepResult {
    /// Data width of the core in bits (64 or 512).
    pub width: u32,
    /// The mode, `nat`, `dr` or `tun`.
    pub mode: String,
    /// First frame length of the sweep, bytes.
    pub first_len: usize,
    /// Last frame length of the sweep, bytes.
    pub last_len: usize,
    /// Frame lengths measured.
    pub lengths: usize,
    /// Frames streamed at each length.
    pub frames_per_length: usize,
    /// Lowest `bus_utilization` and its frame length.
    pub min_utilization: f64,
    /// The frame length of `min_utilization`.
    pub min_utilization_len: usize,
    /// Lowest ratio `bus_utilization / bound`, where the bound is 1, or for
    /// TUN the share the 20 added output bytes leave (input beats / output
    /// beats per frame, when the output bus is the limit).
    pub min_utilization_vs_bound: f64,
    /// The frame length of `min_utilization_vs_bound`.
    pub min_utilization_vs_bound_len: usize,
    /// Lengths whose utilization is under 0.99 of their bound.
    pub below_goal: Vec<usize>,
    /// Fewest cycles from first input beat to first output beat, over all
    /// lengths.
    pub latency_cycles_min: u64,
    /// Most cycles from first input beat to first output beat, over all
    /// lengths.
    pub latency_cycles_max: u64,
    /// The length needing the highest clock per unit of line rate (most
    /// cycles per wire byte) and its measured cycles per frame.
    pub line_rate_worst_len: usize,
    /// Cycles per frame measured at `line_rate_worst_len` (input window
    /// / frames).
    pub line_rate_worst_cycles_per_frame: f64,
    /// The clock needed for each of [`LINE_RATES_GBPS`] at that length.
    pub line_rate_clock: Vec<LineRateClock>,
    /// Wall-clock seconds the sweep took.
    pub seconds: f64,
}

/// Core clock needed for one Ethernet line rate.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LineRateClock {
    /// The Ethernet line rate, Gb/s.
    pub gbps: u32,
    /// The core clock it needs, MHz.
    pub mhz: f64,
}

/// The best input utilization a mode allows at `len` bytes: 1, or for TUN,
/// when each frame's output needs more beats than its input, input beats /
/// output beats (the output bus saturated).
pub fn utilization_bound(width: u32, mode: BenchMode, len: usize) -> f64 {
    let wb = (width / 8) as usize;
    let beats_in = len.div_ceil(wb);
    let beats_out = match mode {
        BenchMode::Tun => (len + 20).div_ceil(wb),
        BenchMode::Tun6 => (len + 40).div_ceil(wb),
        _ => beats_in,
    };
    let ideal = len as f64 / (beats_in * wb) as f64;
    // Input utilization counts bytes, so a frame that does not fill its last
    // beat cannot reach 1 without packing frames into beats (the stream
    // never does): the bound is the byte share of the beats used.
    ideal * (beats_in as f64 / beats_out.max(beats_in) as f64)
}

/// Runs [`bench`] for every `step`-th length of `lengths`.
pub fn sweep(width: u32, mode: BenchMode, lengths: std::ops::RangeInclusive<usize>, step: usize, frames: usize) -> Result<SweepResult, String> {
    let wall = std::time::Instant::now();
    let (first, last) = (*lengths.start(), *lengths.end());
    let mut r = SweepResult {
        width,
        mode: format!("{mode:?}").to_lowercase(),
        first_len: first,
        last_len: last,
        lengths: 0,
        frames_per_length: frames,
        min_utilization: f64::INFINITY,
        min_utilization_len: 0,
        min_utilization_vs_bound: f64::INFINITY,
        min_utilization_vs_bound_len: 0,
        below_goal: Vec::new(),
        latency_cycles_min: u64::MAX,
        latency_cycles_max: 0,
        line_rate_worst_len: 0,
        line_rate_worst_cycles_per_frame: 0.0,
        line_rate_clock: Vec::new(),
        seconds: 0.0,
    };
    let mut worst_per_wire_byte = 0.0;
    for len in lengths.step_by(step.max(1)) {
        let b = bench(width, mode, len, frames)?;
        if b.forwarded != b.frames || b.to_host != 0 {
            return Err(format!("{len}-byte frames: {} of {} forwarded, {} to host", b.forwarded, b.frames, b.to_host));
        }
        r.lengths += 1;
        if b.bus_utilization < r.min_utilization {
            r.min_utilization = b.bus_utilization;
            r.min_utilization_len = len;
        }
        let rel = b.bus_utilization / utilization_bound(width, mode, len);
        if rel < r.min_utilization_vs_bound {
            r.min_utilization_vs_bound = rel;
            r.min_utilization_vs_bound_len = len;
        }
        if rel < 0.99 {
            r.below_goal.push(len);
        }
        r.latency_cycles_min = r.latency_cycles_min.min(b.latency_cycles_min);
        r.latency_cycles_max = r.latency_cycles_max.max(b.latency_cycles_max);
        let per_frame = b.cycles as f64 / b.frames as f64;
        let per_wire_byte = per_frame / (len + WIRE_OVERHEAD) as f64;
        if per_wire_byte > worst_per_wire_byte {
            worst_per_wire_byte = per_wire_byte;
            r.line_rate_worst_len = len;
            r.line_rate_worst_cycles_per_frame = per_frame;
        }
    }
    r.line_rate_clock = LINE_RATES_GBPS
        .iter()
        .map(|&g| LineRateClock {
            gbps: g,
            mhz: clock_for_line_rate(g as f64, r.line_rate_worst_len, r.line_rate_worst_cycles_per_frame) / 1e6,
        })
        .collect();
    r.seconds = wall.elapsed().as_secs_f64();
    Ok(r)
}
