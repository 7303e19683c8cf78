//! Any frame, any size (issue 19, item 1): no frame (empty, runt, longer
//! than every buffer, truncated headers, garbage) stops a replay on any
//! backend. Frames no receiver takes are counted drops with a reason
//! (`empty`, `runt`, `oversize`), every frame read is accounted for, and
//! the backends agree frame for frame.

#[path = "outcome_harness.rs"]
mod outcome;
use lvsnic::replay::{run, run_width, Backend, ReplayOutcome};
use lvsnic_fixtures::*;
use lvsnic_model::pcap::{self, PcapRecord, Resolution};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::stats::{ReceiveDrops, MAX_RX_FRAME};
use lvsnic_model::wire::TCP_SYN;
use lvsnic_traffic::{generate, TrafficSpec};
use outcome::assert_same;
use proptest::prelude::*;
use std::process::Command;
use std::sync::OnceLock;

/// Every backend this build has, the simulated core at 64 bits.
fn backends() -> Vec<Backend> {
    let mut v = vec![Backend::Golden, Backend::Model];
    if cfg!(feature = "sim") {
        v.push(Backend::Sim);
    }
    v
}

/// Every frame read is accounted for: read = reached the director + rate
/// limited + dropped on receive.
fn accounted(o: &ReplayOutcome, n: usize, what: &str) {
    let i = o.report.intake.expect("replay reports its intake");
    assert_eq!(i.frames_read, n as u64, "{what}: frames read");
    assert_eq!(
        o.report.frames.input + i.rate_limited + i.dropped_on_receive.total(),
        n as u64,
        "{what}: counters add up: {:?} {:?}",
        o.report.frames,
        i
    );
}

/// Runs `recs` through every backend: no error, everything accounted
/// for, every backend the same as the golden model. Returns the golden
/// outcome.
fn through_every_backend(recs: &[PcapRecord], sim: bool) -> ReplayOutcome {
    let rules = parse_rules(MIXED_RULES).unwrap();
    let cfg = config("");
    let golden = run(Backend::Golden, cfg.clone(), &rules, recs).unwrap_or_else(|e| panic!("golden: {e}"));
    accounted(&golden, recs.len(), "golden");
    for b in backends() {
        if b == Backend::Golden || (b == Backend::Sim && !sim) {
            continue;
        }
        let o = run_width(b, 64, cfg.clone(), &rules, recs).unwrap_or_else(|e| panic!("{b:?}: {e}"));
        accounted(&o, recs.len(), &format!("{b:?}"));
        assert_same(&golden, &o);
    }
    golden
}

fn rec(ts_ns: u64, data: Vec<u8>) -> PcapRecord {
    PcapRecord { ts_ns, orig_len: data.len() as u32, data }
}

/// A valid SYN to the NAT service, padded to `len` bytes (Ethernet
/// padding after the IP datagram).
fn syn_padded(sport: u16, len: usize) -> Vec<u8> {
    let c: std::net::Ipv4Addr = "198.51.100.7".parse().unwrap();
    let mut f = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), sport, 80, TCP_SYN, 1, 0, b"");
    f.resize(len.max(f.len()), 0);
    f
}

/// The frames of the issue: empty, runt, truncated headers, and frames
/// longer than every buffer (16,385, 20,000, 65,535 bytes), between valid
/// SYNs; one SYN exactly [`MAX_RX_FRAME`] long is still taken.
fn odd_capture() -> Vec<PcapRecord> {
    let mut truncated = syn_padded(1000, 0);
    truncated.truncate(14 + 9);
    let frames = vec![
        syn_padded(1001, 0),
        Vec::new(),
        vec![0x02; 5],
        truncated,
        syn_padded(1002, MAX_RX_FRAME + 1),
        syn_padded(1003, 20_000),
        vec![0xff; 65_535],
        syn_padded(1004, MAX_RX_FRAME),
        syn_padded(1005, 0),
    ];
    frames.into_iter().enumerate().map(|(i, f)| rec(T0 + i as u64 * 1000, f)).collect()
}

#[test]
fn frames_of_any_size_are_counted_drops_on_every_backend() {
    let recs = odd_capture();
    let g = through_every_backend(&recs, true);
    let i = g.report.intake.unwrap();
    assert_eq!(i.dropped_on_receive, ReceiveDrops { empty: 1, runt: 1, oversize: 3, ring: 0 });
    assert_eq!(i.rate_limited, 0);
    // The three full SYNs (one of them 16,384 bytes) opened connections.
    assert_eq!(g.report.connections.created, 3);
    assert_eq!(g.report.dropped.get("oversize"), None, "receive drops are not director drops");
    // The longest valid datagrams, and after them the odd frames again.
    let mut recs = longest_valid_datagrams();
    let t = recs.last().unwrap().ts_ns;
    recs.extend(odd_capture().into_iter().map(|r| rec(r.ts_ns - T0 + t + 1, r.data)));
    let g = through_every_backend(&recs, true);
    assert_eq!(g.report.intake.unwrap().dropped_on_receive.total(), 5);
    assert!(g.tx.len() > 30, "{} transmitted", g.tx.len());
}

/// `lvsnic replay` on the same capture: exit 0 on every backend, the
/// drops by reason in STATS.json and in the summary.
#[test]
fn frames_replay_command_survives_odd_frames() {
    let dir = std::env::temp_dir().join(format!("lvsnic-frames-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (rules, director, input) = (dir.join("rules"), dir.join("director.toml"), dir.join("in.pcap"));
    std::fs::write(&rules, MIXED_RULES).unwrap();
    std::fs::write(&director, director_toml()).unwrap();
    pcap::write_file(&input, Resolution::Nano, odd_capture()).unwrap();
    for b in backends() {
        let name = format!("{b:?}").to_lowercase();
        let (out, stats) = (dir.join(format!("{name}.pcap")), dir.join(format!("{name}.json")));
        let o = Command::new(env!("CARGO_BIN_EXE_lvsnic"))
            .args(["replay", "--backend", &name, "--rules"])
            .arg(&rules)
            .arg("--director")
            .arg(&director)
            .arg("--input")
            .arg(&input)
            .arg("--output")
            .arg(&out)
            .arg("--stats")
            .arg(&stats)
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{name}: {stderr}");
        assert!(
            stdout.contains("9 frames read: 0 rate limited, 5 dropped on receive (1 empty, 1 runt, 3 oversize), 4 frames in"),
            "{name}: {stdout}"
        );
        let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        let d = &j["intake"]["dropped_on_receive"];
        assert_eq!((d["empty"].as_u64(), d["runt"].as_u64(), d["oversize"].as_u64()), (Some(1), Some(1), Some(3)), "{name}: {j}");
        assert_eq!(j["intake"]["frames_read"].as_u64(), Some(9));
        assert_eq!(j["intake"]["rate_limited"].as_u64(), Some(0));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A seeded, realistic capture (sessions, other and malformed frames)
/// that the properties mutate.
fn base() -> &'static [PcapRecord] {
    static B: OnceLock<Vec<PcapRecord>> = OnceLock::new();
    B.get_or_init(|| {
        let rules = parse_rules(MIXED_RULES).unwrap();
        let spec = TrafficSpec { seed: 19, connections: 12, clients: 4, ..TrafficSpec::default() };
        let mut v = generate(&spec, &config(""), &rules).unwrap();
        v.truncate(160);
        v
    })
}

/// One change to the base capture.
#[derive(Clone, Debug)]
enum Edit {
    /// Insert arbitrary bytes before frame `at`.
    Insert { at: usize, data: Vec<u8> },
    /// Insert `len` bytes of `fill` (lengths up to 70,000).
    InsertLong { at: usize, len: usize, fill: u8 },
    /// Flip bits of byte `pos` (modulo its length) of frame `at`.
    Flip { at: usize, pos: usize, mask: u8 },
    /// Cut frame `at` to `len` bytes (modulo its length + 1).
    Truncate { at: usize, len: usize },
    /// Append `len` bytes to frame `at` (past every buffer if long enough).
    Extend { at: usize, len: usize, fill: u8 },
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = 0usize..1000;
    prop_oneof![
        (at.clone(), prop::collection::vec(any::<u8>(), 0..80)).prop_map(|(at, data)| Edit::Insert { at, data }),
        (at.clone(), prop_oneof![0usize..=70_000, (MAX_RX_FRAME - 8)..=(MAX_RX_FRAME + 8), 65_530usize..=65_540], any::<u8>())
            .prop_map(|(at, len, fill)| Edit::InsertLong { at, len, fill }),
        (at.clone(), any::<usize>(), 1u8..=255).prop_map(|(at, pos, mask)| Edit::Flip { at, pos, mask }),
        (at.clone(), any::<usize>()).prop_map(|(at, len)| Edit::Truncate { at, len }),
        (at, prop_oneof![0usize..64, (MAX_RX_FRAME - 1600)..(MAX_RX_FRAME + 200)], any::<u8>())
            .prop_map(|(at, len, fill)| Edit::Extend { at, len, fill }),
    ]
}

/// The base capture with `edits` applied (timestamps stay in order).
fn mutated(edits: &[Edit]) -> Vec<PcapRecord> {
    let mut v: Vec<PcapRecord> = base().to_vec();
    for e in edits {
        let n = v.len();
        match e.clone() {
            Edit::Insert { at, data } => {
                let ts = v[at % n].ts_ns;
                v.insert(at % n, rec(ts, data));
            }
            Edit::InsertLong { at, len, fill } => {
                let ts = v[at % n].ts_ns;
                v.insert(at % n, rec(ts, vec![fill; len]));
            }
            Edit::Flip { at, pos, mask } => {
                let f = &mut v[at % n].data;
                if !f.is_empty() {
                    let p = pos % f.len();
                    f[p] ^= mask;
                }
            }
            Edit::Truncate { at, len } => {
                let f = &mut v[at % n].data;
                f.truncate(len % (f.len() + 1));
            }
            Edit::Extend { at, len, fill } => v[at % n].data.extend(std::iter::repeat_n(fill, len)),
        }
    }
    for r in &mut v {
        r.orig_len = r.data.len() as u32;
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Mutated valid frames and arbitrary frames of any length through the
    /// golden model and the model backend.
    #[test]
    fn frames_arbitrary_through_golden_and_model(edits in prop::collection::vec(edit(), 1..12)) {
        let recs = mutated(&edits);
        through_every_backend(&recs, false);
    }

    /// Arbitrary byte strings alone (any length, mostly garbage).
    #[test]
    fn frames_garbage_only(frames in prop::collection::vec(prop_oneof![
        prop::collection::vec(any::<u8>(), 0..100),
        (0usize..=70_000, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
    ], 1..20)) {
        let recs: Vec<PcapRecord> = frames.into_iter().enumerate().map(|(i, f)| rec(T0 + i as u64, f)).collect();
        through_every_backend(&recs, false);
    }
}

#[cfg(feature = "sim")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// The same through the verilated core (64 bits) too.
    #[test]
    fn frames_arbitrary_through_sim(edits in prop::collection::vec(edit(), 1..8)) {
        let recs = mutated(&edits);
        through_every_backend(&recs, true);
    }
}

/// The properties start from a capture the data plane partly forwards by
/// itself (so mutated frames meet offloaded flows too).
#[test]
fn frames_base_capture_is_not_vacuous() {
    let rules = parse_rules(MIXED_RULES).unwrap();
    let m = run(Backend::Model, config(""), &rules, base()).unwrap();
    assert_eq!(base().len(), 160);
    assert!(m.in_hardware > 20 && m.report.connections.created > 5, "{} in hardware", m.in_hardware);
}

/// The daemon's exception loop ([`Control::frame`], what the daemon runs
/// for every frame of its TAP or pcap wire): odd frames are counted drops
/// by reason in the loop counters and in `lvsnic status`, never an error.
#[test]
fn frames_daemon_loop_counts_drops_in_status() {
    use lvsnic::control::Control;
    use lvsnic::device::model::{ModelDevice, MODEL_PARAMS};
    use lvsnic::device::rings::RingConfig;
    use lvsnic::slowpath::SlowPath;
    let rules = parse_rules(MIXED_RULES).unwrap();
    let d = lvsnic_model::director::Director::new(config(""), &rules, T0).unwrap();
    let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
    let sp = SlowPath::new(d, dev, MODEL_PARAMS).unwrap();
    let mut ctl = Control::new(sp, MODEL_PARAMS.vip_count, Default::default());
    for r in odd_capture() {
        ctl.frame(r.ts_ns, &r.data).unwrap_or_else(|e| panic!("{} bytes: {e}", r.data.len()));
    }
    let c = ctl.counters();
    assert_eq!(c.frames, 9);
    assert_eq!(c.dropped_on_receive, ReceiveDrops { empty: 1, runt: 1, oversize: 3, ring: 0 });
    assert_eq!(c.exceptions + c.in_hardware + c.dropped_on_receive.total(), 9);
    let j = serde_json::to_value(ctl.status()).unwrap();
    let d = &j["exception_loop"]["dropped_on_receive"];
    assert_eq!((d["empty"].as_u64(), d["runt"].as_u64(), d["oversize"].as_u64()), (Some(1), Some(1), Some(3)), "{j}");
}

/// A card whose receive buffers are shorter than a frame it hands up
/// (2 KiB here) drops it on its receive ring: a counted drop (`ring`),
/// not a device error that stops the loop; the next frame goes on.
#[test]
fn frames_receive_ring_drop_is_counted_not_an_error() {
    use lvsnic::device::model::{ModelDevice, MODEL_PARAMS};
    use lvsnic::device::rings::RingConfig;
    use lvsnic::slowpath::SlowPath;
    use lvsnic_model::stats::ReceiveDrop;
    let rules = parse_rules(MIXED_RULES).unwrap();
    let d = lvsnic_model::director::Director::new(config(""), &rules, T0).unwrap();
    let dev = ModelDevice::model(MODEL_PARAMS, RingConfig { rx_buf: 2048, ..RingConfig::default() }).unwrap();
    let mut sp = SlowPath::new(d, dev, MODEL_PARAMS).unwrap();
    let r = sp.frame(T0, &syn_padded(2000, 4000)).expect("a ring drop is not an error");
    assert_eq!(r.dropped, Some(ReceiveDrop::Ring));
    assert!(r.tx.is_empty() && r.host.is_none());
    let r = sp.frame(T0 + 1, &syn_padded(2001, 0)).unwrap();
    assert_eq!((r.dropped, r.tx.len()), (None, 1), "the next SYN is scheduled and sent");
}

/// Valid datagrams as long as a receiver takes (IP total length up to
/// 16,370 bytes, with and without DF) to every service of the mixed rules
/// (NAT, DR, TUN, UDP): what the director transmits for them (fragments,
/// ICMP "fragmentation needed", encapsulated frames) never stops a backend.
fn longest_valid_datagrams() -> Vec<PcapRecord> {
    let c: std::net::Ipv4Addr = "198.51.100.77".parse().unwrap();
    let vips: [(std::net::Ipv4Addr, u16, bool); 5] = [
        ("10.0.0.100".parse().unwrap(), 80, false),
        ("10.0.0.100".parse().unwrap(), 443, false),
        ("10.0.0.101".parse().unwrap(), 53, true),
        ("10.0.0.102".parse().unwrap(), 80, false),
        ("10.0.0.103".parse().unwrap(), 25, false),
    ];
    let mut recs = Vec::new();
    let mut t = T0;
    for (i, (vip, port, is_udp)) in vips.iter().enumerate() {
        for (j, len) in [1400usize, 9000, MAX_RX_FRAME - 14 - 20 - 20].into_iter().enumerate() {
            for df in [false, true] {
                let payload = vec![0x5a; len];
                let mut ip = Ip::new(c, *vip);
                ip.df = df;
                let sport = 2000 + (i * 10 + j * 2 + df as usize) as u16;
                let f = if *is_udp {
                    udp(GATEWAY_MAC, DIRECTOR_MAC, ip, sport, *port, &payload, false)
                } else {
                    tcp(GATEWAY_MAC, DIRECTOR_MAC, ip, sport, *port, TCP_SYN, 1, 0, &payload)
                };
                assert!(f.len() <= MAX_RX_FRAME);
                recs.push(rec(t, f));
                t += 1000;
            }
        }
    }
    recs
}
