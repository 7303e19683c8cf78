//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624),
//! with the exact results Linux IPVS produces.
//!
//! # Representation of zero
//!
//! One's-complement arithmetic has two zeros, `0x0000` (+0) and `0xFFFF`
//! (−0). Adding with end-around carry never produces +0 unless every addend
//! is +0, so [`fold`] of a non-zero sum is always in `1..=0xFFFF` and a
//! checksum computed from scratch ([`checksum`], `!fold(..)`) is always in
//! `0..=0xFFFE` for any data that is not all zeros. IPv4 headers (version
//! nibble 4) and TCP/UDP segments (the pseudo-header carries the non-zero
//! protocol number) are never all zeros, so their full checksum is never
//! `0xFFFF`. A receiver accepts either representation: it checks that the
//! folded sum of everything, checksum included, is `0xFFFF`.
//!
//! # Incremental update: which zero?
//!
//! RFC 1624 section 3 derives eqn. 3, `HC' = ~(~HC + ~m + m')`, to fix
//! RFC 1141's eqn. 2, which could yield `0xFFFF` where recomputation yields
//! `0x0000`. Evaluated purely in 16-bit one's-complement arithmetic (as the
//! kernel's `csum_replace2` does, see [`update16_16bit`]), eqn. 3 still has
//! one boundary case: the sum `~HC + ~m + m'` is +0 exactly when `HC ==
//! 0xFFFF`, `m == 0xFFFF` and `m' == 0x0000` (all three addends +0), and then
//! `HC' = 0xFFFF` whereas recomputation gives `0x0000`.
//!
//! Linux IPVS does not evaluate it in 16 bits. `tcp_fast_csum_update` /
//! `udp_fast_csum_update` compute
//! `csum_fold(ip_vs_check_diff4(oldip, newip, ip_vs_check_diff2(oldport,
//! newport, ~csum_unfold(check))))`, where `csum_unfold` zero-extends the
//! 16-bit checksum to 32 bits, so `~csum_unfold(check)` is `0xFFFF_0000 |
//! !check`: the accumulator always carries an extra −0 in its upper half and
//! can never be +0. Hence [`update16`], [`update32`], [`update_addr`] and
//! [`apply_delta`] here (which reproduce that code) always return the
//! canonical value in `0..=0xFFFE`, and **equal a full recomputation
//! exactly** whenever the old checksum verified and the new data's sum is not
//! +0 (always true for IPv4/TCP/UDP). Equivalently, for RTL: compute the
//! 16-bit eqn. 3 and replace a result of `0xFFFF` by `0x0000`.
//!
//! The kernel's `ip_decrease_ttl` (`check += htons(0x0100)` with its own
//! end-around carry) gives the same result as [`update16`] for every input;
//! see [`crate::wire::ipv4::Ipv4Packet::decrement_ttl_incremental`].
//!
//! # UDP
//!
//! A UDP checksum of 0 means "no checksum" (RFC 768), so a computed 0 is
//! transmitted as `0xFFFF`. The `udp_*` helpers leave a 0 checksum alone and
//! map a computed 0 to `0xFFFF` (the kernel's `CSUM_MANGLED_0`). Note that
//! IPVS's UDP NAT handlers do *not* leave a zero checksum alone: when the
//! checksum is 0 (and the skb is not `CHECKSUM_PARTIAL`) they fall through to
//! a full checksum computation (`udp_snat_handler`/`udp_dnat_handler`:
//! `else if (!payload_csum && (udph->check != 0))` fast path, `else` full
//! path). Whether the model follows the kernel there is the transmit path's
//! decision; these helpers give the RFC 768-preserving alternative.

use std::net::{Ipv4Addr, Ipv6Addr};

/// One's-complement sum (RFC 1071) of `data` as big-endian 16-bit words (an
/// odd trailing byte is padded with a zero byte), added to `initial`.
///
/// The result is folded to at most `0xFFFF` (end-around carry), so a few
/// results can be added in a `u32` without overflow before [`fold`]ing. It is
/// 0 only if `initial` and all of `data` are zero. Processes 8 bytes per step.
pub fn ones_sum(data: &[u8], initial: u32) -> u32 {
    // Each 8-byte chunk contributes two 32-bit halves (< 2^33 per chunk), so
    // a u64 accumulator cannot overflow for any buffer below 2^31 chunks.
    // Summing 32-bit halves is the 16-bit one's-complement sum because
    // 2^16 ≡ 1 (mod 0xFFFF).
    let mut acc: u64 = u64::from(initial);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        acc += (w >> 32) + (w & 0xFFFF_FFFF);
    }
    let mut words = chunks.remainder().chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    u32::from(fold_raw(acc))
}

/// End-around-carry fold of a 64-bit sum to 16 bits, without complement.
#[inline(always)]
fn fold_raw(mut s: u64) -> u16 {
    // Each step keeps the value non-zero if it was non-zero.
    s = (s & 0xFFFF_FFFF) + (s >> 32);
    s = (s & 0xFFFF_FFFF) + (s >> 32);
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    s as u16
}

/// Folds a one's-complement sum to 16 bits with end-around carry (RFC 1071
/// section 4.1), *without* complementing. Returns 0 only for a zero sum; any
/// non-zero sum gives `1..=0xFFFF`. Accepts `u16`, `u32` or `u64`.
#[inline]
pub fn fold(sum: impl Into<u64>) -> u16 {
    fold_raw(sum.into())
}

/// The checksum to store for `data` (with its checksum field zeroed):
/// `!fold(ones_sum(data, 0))` (RFC 1071). For data that is not all zeros the
/// result is never `0xFFFF`.
pub fn checksum(data: &[u8]) -> u16 {
    !fold(ones_sum(data, 0))
}

/// Whether `data` (checksum field included) verifies: its folded sum plus
/// `initial` is −0 (`0xFFFF`), RFC 1071 section 1 step (3).
pub fn verify(data: &[u8], initial: u32) -> bool {
    fold(ones_sum(data, initial)) == 0xFFFF
}

/// One's-complement sum of the TCP/UDP IPv4 pseudo-header (RFC 9293
/// section 3.1, RFC 768): source, destination, zero, protocol, L4 length.
/// Folded to at most `0xFFFF`; non-zero whenever `proto` is non-zero.
pub fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, l4_len: u16) -> u32 {
    let s = u32::from(src);
    let d = u32::from(dst);
    let acc = u64::from(s >> 16)
        + u64::from(s & 0xFFFF)
        + u64::from(d >> 16)
        + u64::from(d & 0xFFFF)
        + u64::from(proto)
        + u64::from(l4_len);
    u32::from(fold_raw(acc))
}

/// One's-complement sum of the IPv6 upper-layer pseudo-header (RFC 8200
/// section 8.1): source, destination, the 32-bit upper-layer packet length,
/// three zero bytes and the Next Header value of the upper layer. Folded to
/// at most `0xFFFF`.
pub fn pseudo_header_sum_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, l4_len: u32) -> u32 {
    let words = |a: Ipv6Addr| a.segments().into_iter().map(u64::from).sum::<u64>();
    let acc = words(src) + words(dst) + u64::from(l4_len >> 16) + u64::from(l4_len & 0xFFFF) + u64::from(next_header);
    u32::from(fold_raw(acc))
}

/// [`pseudo_header_sum`] for a length given as `usize` (the L4 buffer
/// length); lengths beyond 16 bits are summed as a 32-bit quantity, which no
/// valid IPv4 packet needs.
pub(crate) fn pseudo_header_sum_len(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, l4_len: usize) -> u32 {
    let len = l4_len as u64;
    let base = pseudo_header_sum(src, dst, proto, 0);
    u32::from(fold_raw(u64::from(base) + (len & 0xFFFF) + ((len >> 16) & 0xFFFF) + (len >> 32)))
}

/// `~csum_unfold(check)` as the kernel computes it: the 16-bit checksum
/// zero-extended to 32 bits, then complemented (upper half `0xFFFF`).
#[inline(always)]
fn unfolded_not(check: u16) -> u64 {
    u64::from(!u32::from(check))
}

/// RFC 1624 eqn. 3 for one changed 16-bit word, with IPVS's semantics
/// (`csum_fold(ip_vs_check_diff2(old, new, ~csum_unfold(check)))`):
/// `HC' = ~fold(~HC + ~m + m')` where `~HC` is taken in 32 bits.
///
/// Never returns `0xFFFF`; equals full recomputation whenever `check`
/// verified (see the module documentation).
#[inline]
pub fn update16(check: u16, old: u16, new: u16) -> u16 {
    !fold_raw(unfolded_not(check) + u64::from(!old) + u64::from(new))
}

/// RFC 1624 eqn. 3 evaluated purely in 16-bit one's-complement arithmetic
/// (the kernel's `csum_replace2`). Differs from [`update16`] in exactly one
/// case: `check == 0xFFFF && old == 0xFFFF && new == 0x0000`, where this
/// returns `0xFFFF` and [`update16`] returns `0x0000`. Provided to document
/// and test that boundary; the model uses [`update16`].
pub fn update16_16bit(check: u16, old: u16, new: u16) -> u16 {
    let add = |a: u16, b: u16| {
        let (s, c) = a.overflowing_add(b);
        s + u16::from(c) // cannot overflow again: s <= 0xFFFE when c is set
    };
    !add(add(!check, !old), new)
}

/// RFC 1624 eqn. 3 for a changed 32-bit field (two 16-bit words), with
/// IPVS's semantics (`ip_vs_check_diff4`). Never returns `0xFFFF`.
#[inline]
pub fn update32(check: u16, old: u32, new: u32) -> u16 {
    apply_delta(check, delta32(old, new))
}

/// [`update32`] for an IPv4 address change (as IPVS NAT does for the
/// pseudo-header's address in TCP/UDP checksums).
#[inline]
pub fn update_addr(check: u16, old: Ipv4Addr, new: Ipv4Addr) -> u16 {
    update32(check, u32::from(old), u32::from(new))
}

/// The one's-complement difference `~old + new` of a changed 16-bit word,
/// as a plain integer (at most `0x1FFFE`). Deltas of several changed fields
/// can be added with ordinary integer addition (thousands of them fit a
/// `u32`) and applied once with [`apply_delta`]; the result is the same as
/// applying each change in turn with [`update16`]/[`update32`].
#[inline]
pub const fn delta16(old: u16, new: u16) -> u32 {
    (!old) as u32 + new as u32
}

/// [`delta16`] for a 32-bit field: `~old_hi + ~old_lo + new_hi + new_lo`
/// (at most `0x3FFFC`).
#[inline]
pub const fn delta32(old: u32, new: u32) -> u32 {
    delta16((old >> 16) as u16, (new >> 16) as u16) + delta16(old as u16, new as u16)
}

/// [`delta32`] for an IPv4 address change.
#[inline]
pub fn delta_addr(old: Ipv4Addr, new: Ipv4Addr) -> u32 {
    delta32(u32::from(old), u32::from(new))
}

/// Applies a summed delta to a stored checksum: `~fold(~check + delta)` with
/// `~check` in 32 bits, as IPVS does. Never returns `0xFFFF`.
#[inline]
pub fn apply_delta(check: u16, delta: u32) -> u16 {
    !fold_raw(unfolded_not(check) + u64::from(delta))
}

/// Maps a computed UDP checksum of 0 to `0xFFFF`: RFC 768 ("if the computed
/// checksum is zero, it is transmitted as all ones"), the kernel's
/// `CSUM_MANGLED_0`.
#[inline]
pub const fn udp_finalize(check: u16) -> u16 {
    if check == 0 {
        0xFFFF
    } else {
        check
    }
}

/// [`update16`] for a UDP checksum: a stored 0 ("no checksum", RFC 768) is
/// left as 0, and an updated value of 0 is stored as `0xFFFF` (as
/// `udp_fast_csum_update` does).
#[inline]
pub fn udp_update16(check: u16, old: u16, new: u16) -> u16 {
    udp_apply_delta(check, delta16(old, new))
}

/// [`update32`] for a UDP checksum (0 left alone, 0 result → `0xFFFF`).
#[inline]
pub fn udp_update32(check: u16, old: u32, new: u32) -> u16 {
    udp_apply_delta(check, delta32(old, new))
}

/// [`update_addr`] for a UDP checksum (0 left alone, 0 result → `0xFFFF`).
#[inline]
pub fn udp_update_addr(check: u16, old: Ipv4Addr, new: Ipv4Addr) -> u16 {
    udp_apply_delta(check, delta_addr(old, new))
}

/// [`apply_delta`] for a UDP checksum (0 left alone, 0 result → `0xFFFF`).
#[inline]
pub fn udp_apply_delta(check: u16, delta: u32) -> u16 {
    if check == 0 {
        0
    } else {
        udp_finalize(apply_delta(check, delta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: plain 16-bit word loop, as RFC 1071 section 4.1.
    fn slow_sum(data: &[u8]) -> u32 {
        let mut s: u64 = 0;
        for c in data.chunks(2) {
            let w = if c.len() == 2 { u16::from_be_bytes([c[0], c[1]]) } else { u16::from(c[0]) << 8 };
            s += u64::from(w);
        }
        while s > 0xFFFF {
            s = (s & 0xFFFF) + (s >> 16);
        }
        s as u32
    }

    #[test]
    fn rfc1071_example_sum() {
        // RFC 1071 section 3 example: bytes 00 01 f2 03 f4 f5 f6 f7 sum to
        // ddf2 (after end-around carry).
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(ones_sum(&d, 0), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn wikipedia_ipv4_header() {
        // https://en.wikipedia.org/wiki/Internet_checksum: the header
        // 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7 has checksum
        // b861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0,
            0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0xb861);
        h[10] = 0xb8;
        h[11] = 0x61;
        assert!(verify(&h, 0));
        assert_eq!(checksum(&h), 0);
        h[11] = 0x62;
        assert!(!verify(&h, 0));
    }

    #[test]
    fn odd_lengths_and_initial() {
        assert_eq!(ones_sum(&[], 0), 0);
        assert_eq!(ones_sum(&[0xab], 0), 0xab00);
        assert_eq!(ones_sum(&[0xab], 0x1234), 0xbd34);
        let data: Vec<u8> = (0..=255u8).cycle().take(1001).collect();
        for len in 0..data.len() {
            assert_eq!(ones_sum(&data[..len], 0), slow_sum(&data[..len]), "len {len}");
        }
        // Summing in two parts with an even split equals summing at once.
        assert_eq!(ones_sum(&data[500..], ones_sum(&data[..500], 0)), ones_sum(&data, 0));
        // Carry-heavy input.
        let ff = vec![0xffu8; 4097];
        assert_eq!(slow_sum(&ff), 0xFF00);
        assert_eq!(ones_sum(&ff, 0), 0xFF00);
        // 0xFFFF_FFFF is -0 in one's complement: adding it changes nothing.
        assert_eq!(ones_sum(&ff, 0xFFFF_FFFF), 0xFF00);
        assert_eq!(ones_sum(&[], 0xFFFF_FFFF), 0xFFFF);
    }

    #[test]
    fn fold_keeps_nonzero() {
        assert_eq!(fold(0u32), 0);
        assert_eq!(fold(0xFFFFu32), 0xFFFF);
        assert_eq!(fold(0x1_0000u32), 1);
        assert_eq!(fold(0xFFFF_0000u32), 0xFFFF);
        assert_eq!(fold(u64::MAX), 0xFFFF);
        assert_eq!(fold(0x1_0000_0000u64), 1);
        assert_eq!(fold(0x2_FFFDu32), 0xFFFF);
    }

    #[test]
    fn rfc1624_section3_example() {
        // RFC 1624 section 3/4: sum of the other header words 0xCD7A,
        // m = 0x5555 changes to m' = 0x3285.
        let hc = !fold(0xCD7Au32 + 0x5555);
        assert_eq!(hc, 0xDD2F);
        let recomputed = !fold(0xCD7Au32 + 0x3285);
        assert_eq!(recomputed, 0x0000);
        // Eqn. 2 (RFC 1141) gives -0 here...
        let eqn2 = fold(u32::from(hc) + 0x5555 + u32::from(!0x3285u16));
        assert_eq!(eqn2, 0xFFFF);
        // ...eqn. 3 gives the recomputed value.
        assert_eq!(update16(hc, 0x5555, 0x3285), 0x0000);
        assert_eq!(update16_16bit(hc, 0x5555, 0x3285), 0x0000);
        assert_eq!(apply_delta(hc, delta16(0x5555, 0x3285)), 0x0000);
    }

    #[test]
    fn the_one_boundary_case() {
        // The only input where 16-bit eqn. 3 and IPVS's form differ.
        assert_eq!(update16_16bit(0xFFFF, 0xFFFF, 0x0000), 0xFFFF);
        assert_eq!(update16(0xFFFF, 0xFFFF, 0x0000), 0x0000);
        // Exhaustive over the checksum for a sample of (old, new), and over
        // (old, new) for boundary checksums.
        for check in 0..=0xFFFFu16 {
            for (old, new) in [(0u16, 0u16), (0xFFFF, 0), (0, 0xFFFF), (0x1234, 0xEDCB), (0x5555, 0x3285)] {
                let a = update16(check, old, new);
                let b = update16_16bit(check, old, new);
                assert_ne!(a, 0xFFFF);
                if check == 0xFFFF && old == 0xFFFF && new == 0 {
                    assert_eq!((a, b), (0, 0xFFFF));
                } else {
                    assert_eq!(a, if b == 0xFFFF { 0 } else { b }, "check {check:#x} {old:#x}->{new:#x}");
                }
            }
        }
    }

    #[test]
    fn kernel_csum_fold_reference() {
        // The generic kernel csum_fold: ~(sum + ror32(sum, 16)) >> 16, on the
        // 32-bit csum_partial result; ip_vs_check_diff2 adds {~old, new} as
        // one 32-bit word to ~csum_unfold(check) with end-around carry.
        fn add32(a: u32, b: u32) -> u32 {
            let (s, c) = a.overflowing_add(b);
            s.wrapping_add(u32::from(c))
        }
        fn csum_fold(sum: u32) -> u16 {
            (!(sum.wrapping_add(sum.rotate_right(16))) >> 16) as u16
        }
        fn kernel_diff2(check: u16, old: u16, new: u16) -> u16 {
            let word = (u32::from(!old) << 16) | u32::from(new);
            csum_fold(add32(!u32::from(check), word))
        }
        let mut x: u32 = 0x1234_5678;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let check = (x >> 16) as u16;
            let old = x as u16;
            let new = x.rotate_left(7) as u16;
            assert_eq!(update16(check, old, new), kernel_diff2(check, old, new));
        }
        for (c, o, n) in [(0xFFFF, 0xFFFF, 0), (0, 0, 0), (0xFFFF, 0, 0xFFFF), (0, 0xFFFF, 0)] {
            assert_eq!(update16(c, o, n), kernel_diff2(c, o, n));
        }
    }

    #[test]
    fn pseudo_header() {
        let s = pseudo_header_sum(Ipv4Addr::new(192, 168, 0, 1), Ipv4Addr::new(192, 168, 0, 199), 17, 0x5f);
        assert_eq!(s, slow_sum(&[192, 168, 0, 1, 192, 168, 0, 199, 0, 17, 0, 0x5f]));
        assert_eq!(
            pseudo_header_sum_len(Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8), 6, 1234),
            pseudo_header_sum(Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8), 6, 1234)
        );
    }

    /// The IPv6 pseudo-header sum equals the sum over its 40-byte layout
    /// (RFC 8200 section 8.1), lengths beyond 16 bits included.
    #[test]
    fn pseudo_header_v6() {
        let src: Ipv6Addr = "fe80::200:f8ff:fe21:67cf".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8:ffff:ffff::1".parse().unwrap();
        for len in [0u32, 8, 1480, 0x1_0004] {
            let mut b = Vec::new();
            b.extend_from_slice(&src.octets());
            b.extend_from_slice(&dst.octets());
            b.extend_from_slice(&len.to_be_bytes());
            b.extend_from_slice(&[0, 0, 0, 58]);
            assert_eq!(pseudo_header_sum_v6(src, dst, 58, len), slow_sum(&b), "length {len}");
        }
    }

    #[test]
    fn udp_helpers() {
        assert_eq!(udp_finalize(0), 0xFFFF);
        assert_eq!(udp_finalize(7), 7);
        assert_eq!(udp_update16(0, 1, 2), 0);
        assert_eq!(udp_update32(0, 1, 2), 0);
        assert_eq!(udp_update_addr(0, Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2)), 0);
        // A result of 0 becomes 0xFFFF: RFC 1624 example values.
        assert_eq!(update16(0xDD2F, 0x5555, 0x3285), 0);
        assert_eq!(udp_update16(0xDD2F, 0x5555, 0x3285), 0xFFFF);
        assert_eq!(udp_update16(0x1000, 0x0001, 0x0002), update16(0x1000, 1, 2));
    }

    #[test]
    fn deltas_compose() {
        let c = 0xA55A;
        let seq = update_addr(update16(c, 80, 8080), Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(192, 168, 1, 20));
        let d = delta16(80, 8080) + delta_addr(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(192, 168, 1, 20));
        assert_eq!(apply_delta(c, d), seq);
        assert_eq!(update32(c, 0xDEAD_BEEF, 0x0BAD_F00D), update16(update16(c, 0xDEAD, 0x0BAD), 0xBEEF, 0xF00D));
    }
}
