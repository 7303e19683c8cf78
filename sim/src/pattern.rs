//! Per-cycle on/off patterns for `tvalid` (sources) and `tready` (sinks).

/// A seeded, deterministic pattern of one bit per clock cycle.
///
/// A source asks its pattern every cycle and may start presenting a beat
/// only when it says `true` (a beat once presented stays until taken, as
/// AXI-Stream requires); a sink drives `tready` with it directly.
#[derive(Clone, Debug)]
pub struct Pattern {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Always,
    Never,
    Random { state: u64, threshold: u64 },
    Repeat { bits: Vec<bool>, pos: usize },
}

impl Default for Pattern {
    fn default() -> Self {
        Pattern::always()
    }
}

impl Pattern {
    /// `true` every cycle (no gaps, no backpressure).
    pub fn always() -> Pattern {
        Pattern { kind: Kind::Always }
    }

    /// `false` every cycle (a stalled sink, a silent source).
    pub fn never() -> Pattern {
        Pattern { kind: Kind::Never }
    }

    /// `true` with probability `percent`/100 per cycle, from a generator
    /// seeded with `seed` (percent above 100 counts as 100).
    pub fn random(seed: u64, percent: u8) -> Pattern {
        let p = u64::from(percent.min(100));
        // next() yields true when a uniform u64 is below threshold.
        let threshold = if p == 100 {
            u64::MAX
        } else {
            ((u128::from(u64::MAX) + 1) * u128::from(p) / 100) as u64
        };
        Pattern {
            kind: Kind::Random {
                state: seed ^ 0x6a09_e667_f3bc_c909,
                threshold,
            },
        }
    }

    /// The given bits, repeated (an empty slice behaves like [`Pattern::always`]).
    pub fn repeat(bits: &[bool]) -> Pattern {
        if bits.is_empty() {
            return Pattern::always();
        }
        Pattern {
            kind: Kind::Repeat {
                bits: bits.to_vec(),
                pos: 0,
            },
        }
    }

    /// Whether the pattern is `true` every cycle.
    pub fn is_always(&self) -> bool {
        matches!(self.kind, Kind::Always)
    }

    /// The bit for the next cycle.
    #[inline]
    pub fn next_bit(&mut self) -> bool {
        match &mut self.kind {
            Kind::Always => true,
            Kind::Never => false,
            Kind::Random { state, threshold } => {
                if *threshold == u64::MAX {
                    return true;
                }
                splitmix64(state) < *threshold
            }
            Kind::Repeat { bits, pos } => {
                let b = bits[*pos];
                *pos = (*pos + 1) % bits.len();
                b
            }
        }
    }
}

/// SplitMix64: small, fast, good enough for test stimulus.
#[inline]
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_density_and_determinism() {
        let mut a = Pattern::random(7, 30);
        let mut b = Pattern::random(7, 30);
        let bits: Vec<bool> = (0..100_000).map(|_| a.next_bit()).collect();
        assert!(bits.iter().all(|&x| x == b.next_bit()));
        let ones = bits.iter().filter(|&&x| x).count();
        assert!((28_000..32_000).contains(&ones), "{ones}");
        let mut z = Pattern::random(1, 0);
        assert!((0..1000).all(|_| !z.next_bit()));
        let mut f = Pattern::random(1, 100);
        assert!((0..1000).all(|_| f.next_bit()));
    }

    #[test]
    fn repeat_cycles() {
        let mut p = Pattern::repeat(&[true, false, false]);
        let v: Vec<bool> = (0..6).map(|_| p.next_bit()).collect();
        assert_eq!(v, [true, false, false, true, false, false]);
    }
}
