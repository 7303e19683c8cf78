//! `hw model + host slow path == golden director`: the `model` backend
//! (hardware model forwarding established flows, the golden model deciding
//! everything handed up) must transmit exactly what the golden model alone
//! transmits, hand the same frames to the host, and end with the same
//! connection states, counters and statistics.

use lvsnic::replay::{run, Backend, ReplayOutcome};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::time::SEC;
use lvsnic_traffic::{generate, TrafficSpec};
use lvsnic_tests::*;

const RULES: &str = MIXED_RULES;

fn both(extra_cfg: &str, spec: &TrafficSpec) -> (ReplayOutcome, ReplayOutcome, usize) {
    let rules = parse_rules(RULES).unwrap();
    let cfg = config(extra_cfg);
    let recs = generate(spec, &cfg, &rules).expect("traffic");
    let g = run(Backend::Golden, cfg.clone(), &rules, &recs).unwrap();
    let m = run(Backend::Model, cfg, &rules, &recs).unwrap();
    (g, m, recs.len())
}

fn assert_same(g: &ReplayOutcome, m: &ReplayOutcome) {
    assert_eq!(g.tx.len(), m.tx.len(), "transmitted frame count");
    for (i, (a, b)) in g.tx.iter().zip(&m.tx).enumerate() {
        assert_eq!(a.ts_ns, b.ts_ns, "tx {i} timestamp");
        assert_eq!(a.data, b.data, "tx frame {i} differs");
    }
    assert_eq!(g.host.len(), m.host.len(), "host frame count");
    for (i, (a, b)) in g.host.iter().zip(&m.host).enumerate() {
        assert_eq!(a.data, b.data, "host frame {i} differs");
    }
    assert_eq!(g.report, m.report, "reports differ:\ngolden {}\nmodel  {}", g.report.to_json(), m.report.to_json());
    assert_eq!(g.listing, m.listing);
}

#[test]
fn split_equals_golden_on_generated_traffic() {
    for seed in [1u64, 2, 3] {
        let spec = TrafficSpec { seed, connections: 600, clients: 80, duration: 120 * SEC, ..TrafficSpec::default() };
        let (g, m, n) = both("", &spec);
        assert_same(&g, &m);
        // Not vacuous: most frames went through, and many never left the hardware.
        assert!(g.tx.len() > n / 2, "seed {seed}: {} of {n} transmitted", g.tx.len());
        assert!(m.in_hardware as usize > n / 3, "seed {seed}: only {} of {n} frames forwarded in hardware", m.in_hardware);
        assert_eq!(m.table_full, 0);
        eprintln!("seed {seed}: {n} frames, {} transmitted, {} in hardware", g.tx.len(), m.in_hardware);
    }
}

#[test]
fn split_equals_golden_with_short_timeouts_and_sysctls() {
    let extra = "[timeouts]\ntcp = 30\ntcpfin = 10\nudp = 20\n[sysctl]\nexpire_nodest_conn = 1\nconn_reuse_mode = 3\nsecure_tcp = 1\n";
    let spec = TrafficSpec {
        seed: 9,
        connections: 400,
        duration: 300 * SEC,
        idle_gap_fraction: 0.2,
        ..TrafficSpec::default()
    };
    let (g, m, _) = both(extra, &spec);
    assert_same(&g, &m);
    assert!(g.report.connections.expired > 0, "expiry exercised");
}

#[test]
fn split_equals_golden_on_the_kernel_timer_wheel() {
    // With `[clock]` a replaced connection lingers until the next jiffy
    // (`ip_vs_conn_expire_now`) and expiries are rounded up per wheel
    // level: the hardware must hand its flows to the connection the
    // kernel's lookup finds (the newest), and age flows as the wheel does.
    let extra = "[timeouts]\ntcp = 30\ntcpfin = 10\nudp = 20\n[clock]\nhz = 250\njiffies = 4294892296\nat_ns = 1700000000123456789\n";
    for seed in [1u64, 2, 3, 4] {
        let spec = TrafficSpec { seed, connections: 1500, clients: 40, duration: 200 * SEC, port_reuse_fraction: 0.3, ..TrafficSpec::default() };
        let (g, m, n) = both(extra, &spec);
        assert_same(&g, &m);
        assert!(m.in_hardware as usize > n / 3, "seed {seed}: only {} of {n} frames forwarded in hardware", m.in_hardware);
        assert!(g.report.connections.expired > 0, "expiry exercised");
    }
}
