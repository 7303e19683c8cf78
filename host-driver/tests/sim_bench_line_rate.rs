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

/// ip6ip6 (an IPv6 TUNNEL action: 40 bytes inserted): every frame
/// forwarded 40 bytes longer; the input streams one beat per cycle, and
/// the output back to back at one beat per cycle: ceil((L + 40) / 64)
/// beats per frame, one more than the input's when the 40 bytes cross a
/// beat boundary (89 bytes: 2 beats in, 129 out = 3), as many otherwise
/// (74, 88, 1496). The output's span is measured from the first output
/// beat: input span + drain - the first frame's latency.
#[test]
fn ip6ip6_frames_stream_at_the_output_pace_at_512_bits() {
    for len in [74u64, 88, 89, 1496, 1497, 1500] {
        let (beats_in, beats_out) = (len.div_ceil(64), (len + 40).div_ceil(64));
        let r = bench(512, BenchMode::Tun6, len as usize, 32).expect("IPv6 frames are accepted");
        assert_eq!((r.forwarded, r.to_host), (32, 0), "{len}");
        assert_eq!(r.bytes_out, r.bytes_in + 32 * 40, "{len}: 40 bytes more per frame");
        assert_eq!(r.cycles, 32 * beats_in, "{len}: one input beat per cycle");
        let out_span = r.cycles + r.drain_cycles - r.latency_cycles_min;
        assert_eq!(out_span, 32 * beats_in.max(beats_out), "{len}: output beats back to back ({beats_in} in, {beats_out} out per frame)");
    }
}
