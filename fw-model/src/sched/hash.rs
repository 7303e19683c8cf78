//! Small integer hashing helpers shared by the hashing schedulers.
//!
//! * [`hash_32`] is `include/linux/hash.h` `hash_32()` on a host without an
//!   architecture override (x86-64, arm64): `val * GOLDEN_RATIO_32 >> (32 - bits)`
//!   with `GOLDEN_RATIO_32 = 0x61C88647` (the constant used since Linux 4.7;
//!   older kernels multiplied by `GOLDEN_RATIO_PRIME_32 = 0x9e370001`).
//!   sh/dh use 8 bits (256 buckets), lblc/lblcr 10 bits (1024 buckets).
//! * [`fls`] is the kernel's `fls()` (find last set bit, 1-based, `fls(0) == 0`).
//! * [`gcd`] is `lib/math/gcd.c` `gcd()` for the positive weights wrr and mh feed it.

/// `GOLDEN_RATIO_32` from `include/linux/hash.h`.
pub const GOLDEN_RATIO_32: u32 = 0x61C8_8647;

/// `hash_32(val, bits)`: the top `bits` bits of `val * GOLDEN_RATIO_32` (mod 2^32).
///
/// `bits` must be in `1..=32`; other values give 0 rather than panicking.
#[inline]
pub fn hash_32(val: u32, bits: u32) -> u32 {
    if bits == 0 || bits > 32 {
        return 0;
    }
    val.wrapping_mul(GOLDEN_RATIO_32) >> (32 - bits)
}

/// The kernel's `fls(x)`: position of the most significant set bit, counting
/// from 1; `fls(0) == 0`, `fls(1) == 1`, `fls(0x80000000) == 32`.
#[inline]
pub fn fls(x: i32) -> i32 {
    32 - (x as u32).leading_zeros() as i32
}

/// Greatest common divisor of two positive ints (the kernel only calls
/// `gcd()` with positive weights here). Returns the other value when one is 0.
#[inline]
pub fn gcd(a: i32, b: i32) -> i32 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_32_is_top_bits_of_golden_product() {
        // 1 * 0x61C88647 = 0x61C88647: top 8 bits 0x61, top 10 bits 0x187.
        assert_eq!(hash_32(1, 8), 0x61);
        assert_eq!(hash_32(1, 10), 0x61C8_8647 >> 22);
        assert_eq!(hash_32(1, 10), 0x187);
        assert_eq!(hash_32(0, 8), 0);
        // 2 * 0x61C88647 = 0xC3910C8E -> 0xC3.
        assert_eq!(hash_32(2, 8), 0xC3);
        // 3 * 0x61C88647 = 0x1_2559_92D5 -> wraps to 0x255992D5 -> 0x25.
        assert_eq!(hash_32(3, 8), 0x25);
        // 10.0.0.1 = 0x0A000001: 0x0A000001 * 0x61C88647 mod 2^32.
        // 0x0A000000 * 0x61C88647 = 0x61C88647 * 10 << 24 -> only the low
        // byte of 0x61C88647*10 = 0x3_D1D5_3EC6 survives shifted by 24: 0xC6000000;
        // plus 0x61C88647 = 0x1_27C8_8647 -> 0x27C88647 -> top byte 0x27.
        assert_eq!(hash_32(0x0A00_0001, 8), 0x27);
    }

    #[test]
    fn fls_matches_kernel_definition() {
        assert_eq!(fls(0), 0);
        assert_eq!(fls(1), 1);
        assert_eq!(fls(2), 2);
        assert_eq!(fls(3), 2);
        assert_eq!(fls(64), 7);
        assert_eq!(fls(65535), 16);
        assert_eq!(fls(i32::MIN), 32);
    }

    #[test]
    fn gcd_small() {
        assert_eq!(gcd(4, 6), 2);
        assert_eq!(gcd(3, 4), 1);
        assert_eq!(gcd(65535, 255), 255);
        assert_eq!(gcd(7, 0), 7);
    }
}
