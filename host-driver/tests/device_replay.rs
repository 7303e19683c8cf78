//! `lvsnic replay` through the ring path: the slow path over a
//! [`ModelDevice`] (hardware model behind the modelled DMA engine, exception
//! frames received and injected frames sent through the §8 rings in DMA
//! memory) must transmit and hand to the host exactly what the golden model
//! alone does, frame for frame, with the same statistics and listings.

#[path = "outcome_harness.rs"]
mod outcome;
use outcome::assert_same;
use lvsnic::device::model::ModelDevice;
use lvsnic::device::rings::RingConfig;
use lvsnic::device::{Device, Wire};
use lvsnic::device::model::MODEL_PARAMS;
use lvsnic::replay::{run, run_split, Backend};
use lvsnic::slowpath::SlowPath;
use lvsnic_model::director::Director;
use lvsnic_model::hw::regs::CTRL;
use lvsnic_model::hw::{HostMeta, Reason};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::time::SEC;
use lvsnic_traffic::{generate, TrafficSpec};
use lvsnic_fixtures::*;

const RULES: &str = MIXED_RULES;

fn replay_both(cfg: RingConfig, spec: &TrafficSpec) {
    let rules = parse_rules(RULES).unwrap();
    let dcfg = config("");
    let recs = generate(spec, &dcfg, &rules).expect("traffic");
    let start = recs.first().map(|r| r.ts_ns).unwrap_or(0);
    // The golden model alone, every frame in software ...
    let plain = run(Backend::Golden, dcfg.clone(), &rules, &recs).unwrap();
    // ... and the hardware model behind the DMA engine model and the host rings.
    let dev = ModelDevice::model(MODEL_PARAMS, cfg).unwrap();
    let sp = SlowPath::new(Director::new(dcfg.clone(), &rules, start).unwrap(), dev, MODEL_PARAMS).unwrap();
    let ringed = run_split(sp, MODEL_PARAMS, &recs).unwrap();
    // `replay --backend model` is the ringed path.
    let via_replay = run(Backend::Model, dcfg.clone(), &rules, &recs).unwrap();
    assert_same(&ringed, &via_replay);
    assert_eq!((ringed.in_hardware, ringed.table_full), (via_replay.in_hardware, via_replay.table_full));
    assert_same(&plain, &ringed);
    assert!(
        ringed.in_hardware as usize > recs.len() / 3,
        "not vacuous: {} of {} in hardware",
        ringed.in_hardware,
        recs.len()
    );

    // The same run by hand, to look at the device's counters afterwards.
    let dev = ModelDevice::model(MODEL_PARAMS, cfg).unwrap();
    let mut sp = SlowPath::new(Director::new(dcfg, &rules, start).unwrap(), dev, MODEL_PARAMS).unwrap();
    let (mut tx, mut host) = (0u64, 0u64);
    for r in &recs {
        let out = sp.frame(r.ts_ns, &r.data).unwrap();
        tx += out.tx.len() as u64;
        host += out.host.is_some() as u64;
    }
    assert_eq!((tx, host), (plain.tx.len() as u64, plain.host.len() as u64));
    let c = sp.dp.counters();
    assert_eq!(c.rx.errors(), 0, "{:?}", c.rx);
    assert_eq!(c.tx.errors(), 0, "{:?}", c.tx);
    assert_eq!((c.rxq.err_desc, c.rxq.err_index, c.rxq.err_dma, c.rxq.drop), (0, 0, 0, 0), "{:?}", c.rxq);
    assert_eq!((c.txq.err_desc, c.txq.err_index, c.txq.err_dma, c.txq.drop), (0, 0, 0, 0), "{:?}", c.txq);
    // Every frame a MAC takes reached the core (runts are dropped on
    // receive, before it); every exception crossed the receive ring,
    // every injection the transmit ring.
    let taken = recs.iter().filter(|r| lvsnic_model::stats::ReceiveDrop::of_len(r.data.len()).is_none()).count();
    assert!(taken < recs.len(), "the capture has runts");
    assert_eq!(c.core.rx, taken as u64);
    assert_eq!(c.rx.frames, c.core.to_host);
    assert_eq!(c.tx.frames, c.core.injected);
    assert_eq!(c.core.forwarded + c.core.injected, tx);
    assert!(c.rx.frames > 1000 && c.tx.frames > 1000, "{c:?}");
    eprintln!(
        "{} frames: {} forwarded in hardware, {} through the receive ring, {} through the transmit ring",
        recs.len(),
        c.core.forwarded,
        c.rx.frames,
        c.tx.frames
    );
}

#[test]
fn replay_through_rings_equals_golden_model() {
    for seed in [1u64, 2] {
        let spec = TrafficSpec { seed, connections: 600, clients: 80, duration: 120 * SEC, ..TrafficSpec::default() };
        replay_both(RingConfig::default(), &spec);
    }
}

#[test]
fn replay_through_tiny_rings_equals_golden_model() {
    // Four slots each way, small buffers: every slot is reused thousands of
    // times, both phases and the completion-overflow guard are exercised.
    let cfg = RingConfig { rx_log2: 2, tx_log2: 2, rx_buf: 2048, tx_buf: 2048 };
    let spec = TrafficSpec { seed: 7, connections: 300, clients: 40, duration: 60 * SEC, ..TrafficSpec::default() };
    replay_both(cfg, &spec);
}

#[test]
fn positions_wrap_past_16_bits_without_losing_a_frame() {
    let cfg = RingConfig { rx_log2: 2, tx_log2: 2, rx_buf: 256, tx_buf: 256 };
    let mut dev = ModelDevice::model(MODEL_PARAMS, cfg).unwrap();
    let bcast = |i: u32| {
        let mut f = vec![0xFFu8; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 9, 0x08, 0x06]);
        f.extend_from_slice(&i.to_be_bytes());
        f
    };
    let mut out = Vec::new();
    let n = 70_000u32;
    for i in 0..n {
        dev.deliver(&bcast(i), 1000 + i as u64, i);
        if i % 3 == 2 {
            // Three frames per poll: the four-slot ring is nearly full each time.
            assert_eq!(dev.recv(&mut out, 16).unwrap(), 3);
        }
        if i % 5 == 0 {
            let f = bcast(i);
            dev.send(&[(&f, i)]).unwrap();
            assert_eq!(dev.transmitted().len(), 1);
        }
    }
    dev.recv(&mut out, 16).unwrap();
    assert_eq!(out.len(), n as usize);
    for (i, f) in out.iter().enumerate() {
        // The core is disabled (CTRL.enable = 0 out of reset): everything goes up as DISABLED.
        assert_eq!(
            f.meta,
            HostMeta { reason: Reason::Disabled, hit: false, vip: false, hash0: 0, seq: i as u32, ts: 1000 + i as u64 }
        );
        assert_eq!(f.data, bcast(i as u32));
    }
    let c = dev.counters();
    assert_eq!(c.rx.errors() + c.tx.errors(), 0);
    assert_eq!(c.rxq.drop, 0);
    assert_eq!(c.rxq.cq_prod, n & 0xFFFF, "the device's position wrapped too");
    assert_eq!(c.tx.frames, 14_000);
    // Now enable the core: the broadcast frames are still exceptions, with their real reason.
    dev.write32_ctrl_enable();
    dev.deliver(&bcast(1), 5, 77);
    dev.recv(&mut out, 1).unwrap();
    assert_eq!(out.last().unwrap().meta.reason, Reason::L2Multicast);
}

trait EnableCore {
    fn write32_ctrl_enable(&mut self);
}
impl<D: lvsnic_model::hw::Csr> EnableCore for D {
    fn write32_ctrl_enable(&mut self) {
        self.write32(CTRL, 1);
    }
}
