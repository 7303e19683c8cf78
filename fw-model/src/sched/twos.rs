//! Power of two choices (`twos`), after `net/netfilter/ipvs/ip_vs_twos.c`
//! `ip_vs_twos_schedule`, with `get_random_u32_below()` from
//! `drivers/char/random.c` (`__get_random_u32_below`). (An earlier revision
//! of ip_vs_twos.c drew `prandom_u32() % total_weight`, a different mapping
//! from random numbers to servers; the model follows the
//! `get_random_u32_below` version in mainline.)
//!
//! * Walk 1: `total_weight` = sum of the weights > 0 of the non-overloaded
//!   servers (C `int`); `choice1` = the *last* such server. None → no server,
//!   and no random number is drawn.
//! * `total_weight += 1`; `rweight1 = get_random_u32_below(total_weight)`,
//!   then `rweight2` the same way (two independent draws, in that order).
//! * Walk 2 over the same servers: subtract each weight from both; the first
//!   server at which `rweight1 <= 0` becomes choice1 (weight1, overhead1), the
//!   first at which `rweight2 <= 0` choice2. So a draw `r` maps to the first
//!   server whose cumulative weight is `>= r` (r = 0 → the first server; the
//!   first server covers `w1 + 1` of the `total + 1` values).
//! * Result: choice2 if `weight2 * overhead1 > weight1 * overhead2` (C `int`
//!   products, wrapping), else choice1; ties keep choice1.
//!
//! `get_random_u32_below(ceil)` for a non-constant ceil is Lemire's method
//! with rejection: `m = (u64)ceil * rand32`; if `(u32)m < ceil`, compute
//! `bound = (-ceil) % ceil` (= 2^32 mod ceil) and draw again while
//! `(u32)m < bound`; the result is `m >> 32`. [`random_below`] does exactly
//! this with the injected [`RandomSource`], so the same sequence of 32-bit
//! random values picks the same servers as the kernel would given the same
//! `get_random_u32()` outputs. (`get_random_u32` itself is the kernel CRNG;
//! only the mapping is reproducible, not the kernel's random stream.)

use super::{SchedPacket, Scheduler, SvcView};
use crate::dest::DestId;
use crate::rng::RandomSource;
use crate::time::Time;

/// Stateless (randomness comes from the caller).
#[derive(Clone, Copy, Debug, Default)]
pub struct Twos;

/// `__get_random_u32_below(ceil)` over `rng` (ceil 0 returns the raw draw,
/// as the kernel does).
pub fn random_below(rng: &mut dyn RandomSource, ceil: u32) -> u32 {
    let rand = rng.next_u32();
    if ceil == 0 {
        return rand;
    }
    let mut mult = ceil as u64 * rand as u64;
    if (mult as u32) < ceil {
        let bound = ceil.wrapping_neg() % ceil;
        while (mult as u32) < bound {
            mult = ceil as u64 * rng.next_u32() as u64;
        }
    }
    (mult >> 32) as u32
}

impl Scheduler for Twos {
    fn name(&self) -> &'static str {
        "twos"
    }

    fn schedule(&mut self, svc: &SvcView, _pkt: &SchedPacket, _now: Time, rng: &mut dyn RandomSource) -> Option<DestId> {
        let mut total_weight: i32 = 0;
        let mut choice1: Option<DestId> = None;
        for (id, d) in svc.iter() {
            if !d.overloaded && d.weight > 0 {
                total_weight = total_weight.wrapping_add(d.weight);
                choice1 = Some(id);
            }
        }
        choice1?;
        total_weight = total_weight.wrapping_add(1);
        let mut rweight1 = random_below(rng, total_weight as u32) as i32;
        let mut rweight2 = random_below(rng, total_weight as u32) as i32;

        let (mut weight1, mut weight2, mut overhead1, mut overhead2) = (-1i32, -1i32, 0i32, 0i32);
        let mut choice2: Option<DestId> = None;
        for (id, d) in svc.iter() {
            if d.overloaded {
                continue;
            }
            let weight = d.weight;
            if weight <= 0 {
                continue;
            }
            rweight1 = rweight1.wrapping_sub(weight);
            rweight2 = rweight2.wrapping_sub(weight);
            if rweight1 <= 0 && weight1 == -1 {
                choice1 = Some(id);
                weight1 = weight;
                overhead1 = d.conn_overhead();
            }
            if rweight2 <= 0 && weight2 == -1 {
                choice2 = Some(id);
                weight2 = weight;
                overhead2 = d.conn_overhead();
            }
            if weight1 != -1 && weight2 != -1 {
                break;
            }
        }
        if choice2.is_some() && weight2.wrapping_mul(overhead1) > weight1.wrapping_mul(overhead2) {
            choice1 = choice2;
        }
        choice1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{ip, ScriptedRandom, TestService};

    /// A 32-bit value that `random_below(ceil)` maps to `k` without
    /// rejection: r0 = ceil(k * 2^32 / ceil) is the smallest r with
    /// (ceil * r) >> 32 == k, but its low part is below `ceil` (and might be
    /// below the rejection bound); r0 + 1 has a low part >= ceil.
    fn raw_for(k: u64, ceil: u64) -> u32 {
        ((k << 32).div_ceil(ceil) + 1) as u32
    }

    #[test]
    fn random_below_is_lemire_with_rejection() {
        // ceil 7: 2^32 mod 7 = 4 (7 * 613566756 = 4294967292).
        let mut r = ScriptedRandom::new(vec![u32::MAX]);
        // 7 * 0xFFFFFFFF = 6 * 2^32 + (2^32 - 7): high 6, low 4294967289 >= 7.
        assert_eq!(random_below(&mut r, 7), 6);
        assert_eq!(r.draws(), 1);
        // rand 0: low part 0 < 7 and 0 < bound 4 -> rejected; next 0x80000000:
        // 7 * 2^31 = 3.5 * 2^32 -> high 3, low 2^31.
        let mut r = ScriptedRandom::new(vec![0, 0x8000_0000]);
        assert_eq!(random_below(&mut r, 7), 3);
        assert_eq!(r.draws(), 2);
        // rand 1: low 7, not < 7 -> accepted, result 0.
        let mut r = ScriptedRandom::new(vec![1]);
        assert_eq!(random_below(&mut r, 7), 0);
        // A low part below ceil but not below bound is accepted: ceil 7,
        // rand = 613566757 -> 7 * r = 4294967299 = 2^32 + 3: low 3 < 7,
        // 3 < bound 4 -> rejected; rand 613566757 * 2 = 1227133514 ->
        // 2 * 2^32 + 6: low 6 >= 4 -> accepted, result 2.
        let mut r = ScriptedRandom::new(vec![613_566_757, 1_227_133_514]);
        assert_eq!(random_below(&mut r, 7), 2);
        assert_eq!(r.draws(), 2);
        for k in 0..7 {
            let mut r = ScriptedRandom::new(vec![raw_for(k, 7)]);
            assert_eq!(random_below(&mut r, 7) as u64, k);
        }
    }

    /// Weights 1, 2, 3 added A, B, C: list [C(3), B(2), A(1)], total 6 + 1.
    /// r in 0..=3 -> C, 4..=5 -> B, 6 -> A. Idle servers: ties keep choice1.
    #[test]
    fn draws_map_to_cumulative_weights() {
        let mut t = TestService::new("twos");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 2);
        let c = t.add(ip(3), 3);
        let expect = [c, c, c, c, b, b, a];
        for r1 in 0..7u64 {
            t.rng.script(vec![raw_for(r1, 7), raw_for(0, 7)]);
            let before = t.rng.draws();
            assert_eq!(t.pick(), Some(expect[r1 as usize]), "r1 = {r1}");
            assert_eq!(t.rng.draws() - before, 2);
        }
    }

    /// choice2 wins only if its load per weight is strictly lower:
    /// w2 * oh1 > w1 * oh2.
    #[test]
    fn second_choice_wins_when_less_loaded() {
        let mut t = TestService::new("twos");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 2);
        let c = t.add(ip(3), 3);
        let script = |t: &mut TestService| t.rng.script(vec![raw_for(0, 7), raw_for(6, 7)]); // C, A
        t.set_conns(c, 3, 0); // oh1 = 768, w1 = 3
        t.set_conns(a, 1, 0); // oh2 = 256, w2 = 1: 1*768 > 3*256? no (tie)
        script(&mut t);
        assert_eq!(t.pick(), Some(c));
        t.set_conns(a, 0, 255); // 1*768 > 3*255 -> A
        script(&mut t);
        assert_eq!(t.pick(), Some(a));
        let _ = b;
    }

    #[test]
    fn skips_overloaded_and_quiescent_in_both_walks() {
        let mut t = TestService::new("twos");
        let a = t.add(ip(1), 1);
        let b = t.add(ip(2), 0);
        let c = t.add(ip(3), 3);
        t.set_overloaded(c, true);
        // Only A counts: total 1 + 1 = 2; both draws map to A.
        for r in [0u64, 1] {
            t.rng.script(vec![raw_for(r, 2), raw_for(1 - r, 2)]);
            assert_eq!(t.pick(), Some(a));
        }
        let _ = b;
    }

    #[test]
    fn nothing_available_draws_nothing() {
        let mut t = TestService::new("twos");
        assert_eq!(t.pick(), None);
        let a = t.add(ip(1), 0);
        assert_eq!(t.pick(), None);
        t.set_weight(a, 1);
        t.set_overloaded(a, true);
        assert_eq!(t.pick(), None);
        assert_eq!(t.rng.draws(), 0);
    }

    #[test]
    fn huge_weights_and_counters_do_not_panic() {
        let mut t = TestService::new("twos");
        for i in 0..40 {
            let id = t.add(ip(i + 1), 65535);
            t.set_conns(id, i32::MAX - i as i32, i32::MAX);
        }
        for _ in 0..100 {
            assert!(t.pick().is_some());
        }
    }
}
