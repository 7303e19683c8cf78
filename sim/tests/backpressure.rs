//! Random tvalid gaps and tready backpressure: every frame arrives intact,
//! once, in order.

mod common;

use common::*;
use lvsnic_sim::{Core, Pattern, Width};

fn stress(width: Width, seed: u64, valid_pct: u8, ready_pct: u8, frames: usize) {
    let mut core = Core::new(width).expect("model");
    let mut rng = Rng::new(seed);
    core.rx().set_pattern(Pattern::random(seed ^ 1, valid_pct));
    core.inject()
        .set_pattern(Pattern::random(seed ^ 2, valid_pct));
    core.host()
        .set_pattern(Pattern::random(seed ^ 3, ready_pct));
    core.tx().set_pattern(Pattern::random(seed ^ 4, ready_pct));
    let mut rx = Vec::new();
    let mut inj = Vec::new();
    for i in 0..frames as u32 {
        // mostly short frames, some long ones: many frame boundaries
        let len = if rng.below(8) == 0 {
            1 + rng.below(3000)
        } else {
            1 + rng.below(200)
        } as usize;
        let a = rng.bytes(len);
        let blen = 1 + rng.below(300) as usize;
        let b = rng.bytes(blen);
        core.rx().push_bytes(&a, rx_user(i)).unwrap();
        core.inject().push_bytes(&b, inject_user(i)).unwrap();
        rx.push(a);
        inj.push(b);
    }
    core.run_until_idle(20_000_000).expect("drains");
    let host = core.host().take();
    let tx = core.tx().take();
    let what = format!("{width} seed {seed} valid {valid_pct}% ready {ready_pct}%");
    assert_eq!(host.len(), frames, "{what}: host count");
    assert_eq!(tx.len(), frames, "{what}: tx count");
    for (i, h) in host.iter().enumerate() {
        check_host(h, &rx[i], rx_user(i as u32), &format!("{what}: host {i}"));
    }
    for (i, t) in tx.iter().enumerate() {
        check_tx(
            t,
            &inj[i],
            inject_user(i as u32),
            &format!("{what}: tx {i}"),
        );
    }
    // frames leave in order and do not overlap on one port
    for p in host.windows(2).chain(tx.windows(2)) {
        assert!(p[1].first_beat > p[0].last_beat, "{what}: frames overlap");
    }
}

#[test]
fn random_gaps_and_backpressure_w64() {
    for (seed, v, r) in [
        (11, 50, 50),
        (12, 90, 20),
        (13, 20, 90),
        (14, 100, 5),
        (15, 5, 100),
    ] {
        stress(Width::W64, seed, v, r, 300);
    }
}

#[test]
fn random_gaps_and_backpressure_w512() {
    for (seed, v, r) in [
        (21, 50, 50),
        (22, 90, 20),
        (23, 20, 90),
        (24, 100, 5),
        (25, 5, 100),
    ] {
        stress(Width::W512, seed, v, r, 300);
    }
}

#[test]
fn backpressure_reaches_the_input() {
    // A sink that never takes data must, after the core's buffering, stop
    // the source: tready low on s_axis_rx while frames are still queued.
    for w in Width::ALL {
        let mut core = Core::new(w).unwrap();
        core.host().set_pattern(Pattern::never());
        for i in 0..64 {
            core.rx().push_bytes(&[i as u8; 256], rx_user(i)).unwrap();
        }
        core.run(2_000).unwrap();
        assert!(core.rx().pending() > 0, "{w}: the core absorbed everything");
        let taken = core.rx().beats();
        core.run(2_000).unwrap();
        assert_eq!(core.rx().beats(), taken, "{w}: input moved without output");
        // releasing the sink drains everything
        core.host().set_pattern(Pattern::always());
        core.run_until_idle(1_000_000).unwrap();
        assert_eq!(core.host().len(), 64);
    }
}

#[test]
fn repeat_patterns() {
    let mut core = Core::new(Width::W64).unwrap();
    core.rx()
        .set_pattern(Pattern::repeat(&[true, false, false]));
    core.host().set_pattern(Pattern::repeat(&[false, true]));
    let data: Vec<u8> = (0..=255).collect();
    core.rx().push_bytes(&data, rx_user(0)).unwrap();
    core.run_until_idle(100_000).unwrap();
    let f = core.host().pop().unwrap();
    check_host(&f, &data, rx_user(0), "repeat");
    // 32 beats, one every 3 cycles at best on the input
    let s = &core.rx().sent()[0];
    assert!(s.last_beat - s.first_beat >= 31 * 3);
}

#[test]
fn clear_keeps_the_frame_on_the_wire() {
    let mut core = Core::new(Width::W64).unwrap();
    core.host().set_pattern(Pattern::never());
    for i in 0..40 {
        core.rx().push_bytes(&[i as u8; 100], rx_user(i)).unwrap();
    }
    core.run(500).unwrap();
    let before = core.rx().pending();
    assert!(before > 1);
    let dropped = core.rx().clear();
    assert_eq!(core.rx().pending(), 1, "the presented frame stays");
    assert_eq!(dropped, before - 1);
    core.host().set_pattern(Pattern::always());
    core.run_until_idle(100_000).unwrap();
    let got = core.host().take();
    for (i, f) in got.iter().enumerate() {
        check_host(f, &[i as u8; 100], rx_user(i as u32), "after clear");
    }
    assert_eq!(got.len() as u64, core.rx().frames_sent());
}
