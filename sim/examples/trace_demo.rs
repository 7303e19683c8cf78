//! Writes a short FST trace: `cargo run -p lvsnic-sim --example trace_demo -- out.fst`.

use lvsnic_sim::{Core, CoreConfig, Pattern, RxUser, SimError, Width};

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "lvsnic_core.fst".into());
    if let Err(e) = run(&path) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    println!("wrote {path}");
}

fn run(path: &str) -> Result<(), SimError> {
    let config = CoreConfig {
        trace: Some(path.into()),
        ..CoreConfig::default()
    };
    let mut core = Core::with_config(Width::W64, config)?;
    core.host().set_pattern(Pattern::random(1, 50));
    let frame: Vec<u8> = (0..=40).collect();
    for seq in 0..4 {
        core.rx().push_bytes(
            &frame,
            RxUser {
                timestamp: 1000 + u64::from(seq),
                seq,
            },
        )?;
    }
    core.write(0x014, 0x0203_0405)?;
    core.run_until_idle(10_000)?;
    core.disable_trace()
}
