//! `RTL == hw model`: seeded random differential runs of the verilated
//! `lvsnic_core` against `lvsnic_model::hw::HwPipeline`, at 64 and 512 bits,
//! with random `tvalid` gaps and `tready` backpressure, and table, action
//! and register changes between batches of traffic. Every output frame and
//! its sideband, every counter, every action's packet and byte counters
//! and sampled flow `last_hit` values read back, zero mismatches; a watchdog fails the run if
//! a frame does not come out.
//!
//! `LVSNIC_DIFF_FRAMES` sets the frames per width (default 120000: 240000
//! per run).

use lvsnic_traffic::fuzz::FuzzWorld;
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::{Csr, HwOutput, HwParams, HwPipeline};
use lvsnic_sim::{Core, HostUser, Pattern, RxUser, TxUser, Width};

fn frames_per_width() -> usize {
    std::env::var("LVSNIC_DIFF_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(120_000)
}

fn assert_real_rtl() {
    assert_ne!(lvsnic_sim::RTL_ORIGIN, "stub", "the sim crate was built with its stand-in core, not hw/rtl");
}

struct Rtl(Core);

/// Reads one table entry's read-back registers through a read command,
/// waiting for `busy` = 0 as the contract asks: a flow slot's `last_hit`,
/// or an action's packet and byte counters.
fn read_back(hw: &mut dyn Csr, action: bool, index: u32) -> Vec<u32> {
    let (status, idx, cmd, regs): (u32, u32, u32, &[u32]) = if action {
        (ACT_STATUS, ACT_INDEX, ACT_CMD, &[ACT_PKTS_LO, ACT_PKTS_HI, ACT_BYTES_LO, ACT_BYTES_HI])
    } else {
        (FLOW_STATUS, FLOW_INDEX, FLOW_CMD, &[FLOW_HIT_LO, FLOW_HIT_HI])
    };
    let idle = |hw: &mut dyn Csr| {
        for _ in 0..1000 {
            if hw.read32(status) & 1 == 0 {
                return;
            }
        }
        panic!("table stays busy");
    };
    idle(hw);
    hw.write32(idx, index);
    hw.write32(cmd, CMD_READ);
    idle(hw);
    regs.iter().map(|&r| hw.read32(r)).collect()
}

impl Csr for Rtl {
    fn write32(&mut self, a: u32, v: u32) {
        self.0.write(a, v).expect("AXI-Lite write");
    }
    fn read32(&mut self, a: u32) -> u32 {
        self.0.read(a).expect("AXI-Lite read")
    }
}

fn run(width: u32, seed: u64, total: usize) {
    let params = HwParams {
        data_width: width,
        flow_buckets_log2: lvsnic_sim::params::FLOW_BUCKETS_LOG2,
        action_log2: lvsnic_sim::params::ACTION_LOG2,
        vip_count: lvsnic_sim::params::VIP_COUNT,
        ipv6: lvsnic_sim::params::IPV6 != 0,
    };
    let mut world = FuzzWorld::new(seed, params, 400);
    let mut model = HwPipeline::new(params);
    let core = Core::new(if width == 64 { Width::W64 } else { Width::W512 }).expect("core");
    let mut rtl = Rtl(core);
    rtl.0.rx().set_pattern(Pattern::random(seed ^ 1, 80));
    rtl.0.tx().set_pattern(Pattern::random(seed ^ 2, 70));
    rtl.0.host().set_pattern(Pattern::random(seed ^ 3, 60));
    for (a, v) in world.setup_writes() {
        model.write32(a, v);
        rtl.write32(a, v);
    }
    let mut done = 0;
    let mut batch_no = 0;
    // Forwarded frames with an IPv6 outer header: IPv6 in IPv6, IPv4 in IPv6.
    let (mut ip6ip6, mut ip4in6) = (0usize, 0usize);
    while done < total {
        let n = (200 + (seed as usize * 7919 + batch_no * 104729) % 800).min(total - done);
        let mut expect_tx = Vec::new();
        let mut expect_host = Vec::new();
        let mut inputs = std::collections::HashMap::new();
        for _ in 0..n {
            let (f, ts, seq) = world.frame();
            inputs.insert(seq, f.clone());
            match model.process(&f, ts, seq) {
                HwOutput::Forward { frame, seq } => expect_tx.push((seq, false, Some(frame))),
                HwOutput::ToHost { meta, frame } => expect_host.push((meta, frame)),
                HwOutput::Aborted { meta, frame } => {
                    expect_tx.push((seq, true, None));
                    expect_host.push((meta, frame));
                }
            }
            rtl.0.rx().push_bytes(&f, RxUser { timestamp: ts, seq }).expect("push");
        }
        rtl.0.run_until_idle(50_000_000).unwrap_or_else(|e| panic!("width {width} seed {seed} batch {batch_no}: {e}"));
        let got_tx = rtl.0.tx().take();
        let got_host = rtl.0.host().take();
        // First divergence in which frames went where, with the model's view.
        let gtx: Vec<u32> = got_tx.iter().map(|g| TxUser::from_tuser(&g.tuser_last).seq).collect();
        let etx: Vec<u32> = expect_tx.iter().map(|e| e.0).collect();
        let ghost: Vec<(u32, u8)> = got_host.iter().map(|g| {
            let u = HostUser::from_tuser(&g.tuser);
            (u.seq, u.reason)
        }).collect();
        let ehost: Vec<(u32, u8)> = expect_host.iter().map(|(m, _)| (m.seq, m.reason as u8)).collect();
        if gtx != etx || ghost != ehost {
            let first_tx = gtx.iter().zip(&etx).position(|(a, b)| a != b).unwrap_or(gtx.len().min(etx.len()));
            let first_host = ghost.iter().zip(&ehost).position(|(a, b)| a != b).unwrap_or(ghost.len().min(ehost.len()));
            let seqs = [etx.get(first_tx).copied(), ehost.get(first_host).map(|h| h.0)];
            let first = seqs.iter().flatten().min().copied().unwrap_or(0);
            let hex: String = inputs.get(&first).map(|f| f.iter().map(|b| format!("{b:02x}")).collect()).unwrap_or_default();
            panic!(
                "width {width} seed {seed} batch {batch_no}: routing differs: tx at #{first_tx} rtl {:?} model {:?}; host at #{first_host} rtl (seq, reason) {:?} model {:?}\nframe {first}: {hex}",
                gtx.get(first_tx..(first_tx + 3).min(gtx.len())),
                etx.get(first_tx..(first_tx + 3).min(etx.len())),
                ghost.get(first_host..(first_host + 3).min(ghost.len())),
                ehost.get(first_host..(first_host + 3).min(ehost.len())),
            );
        }
        for (g, (seq, abort, frame)) in got_tx.iter().zip(&expect_tx) {
            let u = TxUser::from_tuser(&g.tuser_last);
            assert_eq!((u.seq, u.abort), (*seq, *abort), "width {width} seed {seed}: tx sideband of frame {seq}");
            if let Some(f) = frame {
                assert_eq!(&g.data, f, "width {width} seed {seed}: tx frame {seq} differs");
                let outer6 = |nh: u8| f.len() > 20 && f[12..14] == [0x86, 0xdd] && f[20] == nh;
                let was6 = inputs.get(seq).is_some_and(|i| i.len() > 14 && i[12..14] == [0x86, 0xdd]);
                ip6ip6 += usize::from(outer6(41) && was6);
                ip4in6 += usize::from(outer6(4) && !was6);
            }
        }
        for (g, (meta, frame)) in got_host.iter().zip(&expect_host) {
            let u = HostUser::from_tuser(&g.tuser);
            let want = (meta.reason as u8, meta.hit, meta.vip, meta.hash0, meta.seq, meta.ts, 0u32);
            let got = (u.reason, u.hit, u.vip, u.hash, u.seq, u.timestamp, u.reserved);
            assert_eq!(got, want, "width {width} seed {seed}: host metadata of frame {}", meta.seq);
            assert_eq!(&g.data, frame, "width {width} seed {seed}: host frame {} differs", meta.seq);
        }
        // Counters, LO halves of a pair before their HI halves (each
        // counter has its own HI latch), checked against the model's values
        // and its register reads.
        for c in (0..CNT_COUNT).step_by(2) {
            let (a, b) = (CNT_BASE + 8 * c, CNT_BASE + 8 * (c + 1));
            let got: Vec<u32> = [a, b, a + 4, b + 4].iter().map(|&r| rtl.read32(r)).collect();
            let want: Vec<u32> = [a, b, a + 4, b + 4].iter().map(|&r| model.read32(r)).collect();
            assert_eq!(got, want, "width {width} seed {seed}: counters {c}, {}", c + 1);
            assert_eq!((got[2] as u64) << 32 | got[0] as u64, model.counter(c), "width {width} seed {seed}: counter {c}");
        }
        // Activity and action counters, read back as the host does: every
        // action and a random sample of flow slots each batch.
        for i in 0..params.actions() as u32 {
            assert_eq!(read_back(&mut rtl, true, i), read_back(&mut model, true, i), "width {width} seed {seed}: action {i} counters");
        }
        for k in 0..48u32 {
            let i = (k.wrapping_mul(2654435761) ^ batch_no as u32 * 7919) % params.flow_slots() as u32;
            assert_eq!(read_back(&mut rtl, false, i), read_back(&mut model, false, i), "width {width} seed {seed}: flow slot {i} last_hit");
        }
        for (a, v) in world.mutate() {
            model.write32(a, v);
            rtl.write32(a, v);
        }
        done += n;
        batch_no += 1;
    }
    if params.ipv6 && total >= 2000 {
        assert!(ip6ip6 > 0 && ip4in6 > 0, "width {width} seed {seed}: IPv6 tunnels forwarded: ip6ip6 {ip6ip6}, IPv4 in IPv6 {ip4in6}");
    }
    eprintln!("width {width} seed {seed}: {total} frames, {ip6ip6} ip6ip6 and {ip4in6} IPv4-in-IPv6 forwarded");
}

#[test]
fn rtl_equals_model_64() {
    assert_real_rtl();
    let total = frames_per_width();
    run(64, 1, total / 2);
    run(64, 2, total - total / 2);
}

#[test]
fn rtl_equals_model_512() {
    assert_real_rtl();
    let total = frames_per_width();
    run(512, 3, total / 2);
    run(512, 4, total - total / 2);
}
