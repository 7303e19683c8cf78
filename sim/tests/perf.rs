//! Streaming throughput of the harness + model (cycles per second, printed;
//! the test asserts only that every port streams). Run with `cargo test
//! --release -p lvsnic-sim --test perf -- --nocapture`.

mod common;

use common::*;
use lvsnic_sim::{Core, Width};
use std::time::Instant;

fn stream(width: Width, cycles_target: u64) -> (u64, f64, u64) {
    let mut core = Core::new(width).unwrap();
    core.rx().set_recording(false);
    core.inject().set_recording(false);
    let mut rng = Rng::new(5);
    // enough 1500-byte frames on both inputs to keep every port busy
    let frames = (cycles_target * width.bytes() as u64 / 1500 + 1) as u32;
    let data = rng.bytes(1500);
    for i in 0..frames {
        core.rx().push_bytes(&data, rx_user(i)).unwrap();
        core.inject().push_bytes(&data, inject_user(i)).unwrap();
    }
    let start_cycle = core.cycle();
    let t = Instant::now();
    let mut done = 0;
    while done < frames as usize * 2 {
        core.run(10_000).unwrap();
        done += core.host().take().len() + core.tx().take().len();
        assert!(
            core.cycle() - start_cycle < cycles_target * 4,
            "not draining"
        );
    }
    let secs = t.elapsed().as_secs_f64();
    let cycles = core.cycle() - start_cycle;
    (cycles, cycles as f64 / secs, core.rx().beats())
}

#[test]
fn streaming_cycles_per_second() {
    let target = if cfg!(debug_assertions) {
        100_000
    } else {
        2_000_000
    };
    for w in Width::ALL {
        let (cycles, rate, beats) = stream(w, target);
        println!(
            "lvsnic-sim perf: {w}: {cycles} cycles, {:.2} M cycles/s, rx beats/cycle {:.3}",
            rate / 1e6,
            beats as f64 / cycles as f64
        );
        // every port streams at one beat per cycle, minus frame overhead
        // (the rate is printed, not asserted: a wall-clock limit fails on a
        // loaded machine; the speed figures are in docs/hardware.md)
        assert!(beats as f64 / cycles as f64 > 0.9, "{w}: rx not streaming");
    }
}
