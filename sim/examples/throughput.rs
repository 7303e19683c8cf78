//! Harness throughput: `cargo run --release -p lvsnic-sim --example throughput`.
//! Prints cycles per second for an idle core and for full-rate streaming on
//! all four AXI-Stream ports, at both widths.

use lvsnic_sim::{Core, InjectUser, RxUser, SimError, Width};
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), SimError> {
    println!(
        "RTL: {} ({})",
        lvsnic_sim::RTL_FILELIST,
        lvsnic_sim::RTL_ORIGIN
    );
    for w in Width::ALL {
        let mut core = Core::new(w)?;
        let n = 1_000_000;
        let t = Instant::now();
        core.run(n)?;
        let idle = n as f64 / t.elapsed().as_secs_f64();

        let mut core = Core::new(w)?;
        core.rx().set_recording(false);
        core.inject().set_recording(false);
        let frame = vec![0x5Au8; 1500];
        let frames = (2_000_000 * w.bytes() / 1500) as u32;
        for i in 0..frames {
            core.rx().push_bytes(
                &frame,
                RxUser {
                    timestamp: u64::from(i),
                    seq: i,
                },
            )?;
            core.inject().push_bytes(&frame, InjectUser { seq: i })?;
        }
        let c0 = core.cycle();
        let t = Instant::now();
        while core.rx().pending() > 0 || core.inject().pending() > 0 {
            core.run(10_000)?;
            core.host().take();
            core.tx().take();
        }
        let cycles = core.cycle() - c0;
        let secs = t.elapsed().as_secs_f64();
        let gbps = (core.rx().beats() * w.bytes() as u64 * 8) as f64 / cycles as f64 * 0.25;
        println!(
            "{w}: idle {:.2} M cycles/s; streaming {:.2} M cycles/s ({cycles} cycles, {:.1} Gb/s per port at 250 MHz)",
            idle / 1e6,
            cycles as f64 / secs / 1e6,
            gbps
        );
    }
    Ok(())
}
