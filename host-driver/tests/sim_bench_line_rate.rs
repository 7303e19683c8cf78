//! `lvsnic sim-bench` on the smallest Ethernet frames and the line-rate
//! clock it derives (issue 10, item 5).
//!
//! Expected values are computed here from the Ethernet arithmetic, not by
//! the code under test: a frame of L bytes (no FCS) takes L + 4 (FCS) + 8
//! (preamble, SFD) + 12 (inter-frame gap) bytes of wire time.

use lvsnic::sim_bench::{bench, sweep, BenchMode};

/// 60 bytes is the smallest frame without its FCS: it is measured, and at
/// 512 bits each one takes exactly one beat, back to back.
#[test]
fn sixty_byte_frames_stream_one_per_beat_at_512_bits() {
    let r = bench(512, BenchMode::Nat, 60, 32).expect("60-byte frames are accepted");
    assert_eq!(r.frames, 32);
    assert_eq!(r.forwarded, 32);
    assert_eq!(r.to_host, 0);
    assert_eq!(r.cycles, 32, "one input beat per frame, one beat per cycle");
    assert_eq!(r.bytes_in, 60 * 32);
}

#[test]
fn sixty_byte_frames_are_forwarded_at_64_bits() {
    let r = bench(64, BenchMode::Dr, 60, 16).expect("60-byte frames are accepted");
    assert_eq!(r.forwarded, 16);
    assert_eq!(r.cycles, 16 * 8, "eight 64-bit beats per 60-byte frame");
}

#[test]
fn below_sixty_bytes_is_refused_with_a_clear_error() {
    let e = bench(512, BenchMode::Nat, 59, 4).unwrap_err();
    assert!(e.contains("59") && e.contains("60..=9014"), "{e}");
}

/// Around the first beat boundary at 512 bits the worst length is 65 bytes
/// (two beats for 89 wire bytes): 100 GbE needs 2 * 100e9 / (8 * 89) Hz.
#[test]
fn sweep_reports_the_clock_for_line_rate_at_the_worst_length() {
    let r = sweep(512, BenchMode::Nat, 60..=70, 1, 16).unwrap();
    assert_eq!(r.first_len, 60);
    assert_eq!(r.line_rate_worst_len, 65);
    assert_eq!(r.line_rate_worst_cycles_per_frame, 2.0);
    let mhz: Vec<(u32, f64)> = r.line_rate_clock.iter().map(|c| (c.gbps, c.mhz)).collect();
    let expect = [(10, 28.08988), (25, 70.22472), (100, 280.89888)];
    assert_eq!(mhz.len(), 3);
    for ((g, m), (eg, em)) in mhz.iter().zip(expect) {
        assert_eq!(*g, eg);
        assert!((m - em).abs() < 1e-3, "{g} GbE: {m} MHz, expected {em}");
    }
}

/// IPv6 (DR and NAT on IPv6 flows in slot pairs): the smallest IPv6 TCP
/// frame (74 bytes) and the 129-byte one (three beats at 512 bits: the
/// worst around the second beat boundary) stream one beat per cycle, all
/// forwarded; the first output beat comes 19 cycles after the first input
/// beat (the IPv6 header ends on beat 1, one cycle after IPv4's 18).
#[test]
fn ipv6_frames_stream_one_beat_per_cycle_at_512_bits() {
    for mode in [BenchMode::Dr6, BenchMode::Nat6] {
        for (len, beats) in [(74, 2), (128, 2), (129, 3)] {
            let r = bench(512, mode, len, 32).expect("IPv6 frames are accepted");
            assert_eq!((r.forwarded, r.to_host), (32, 0), "{mode:?} {len}");
            assert_eq!(r.cycles, 32 * beats, "{mode:?} {len}: one input beat per cycle");
            assert_eq!(r.bytes_out, r.bytes_in, "{mode:?} {len}: same length out");
            assert_eq!((r.latency_cycles_min, r.latency_cycles_max), (19, 19), "{mode:?} {len}");
        }
    }
    let e = bench(512, BenchMode::Nat6, 73, 4).unwrap_err();
    assert!(e.contains("74..=9014"), "{e}");
}
