//! SipHash as `lib/siphash.c` implements it, for the mh (Maglev) scheduler.
//!
//! `ip_vs_mh.c` hashes with `hsiphash()`. On a 64-bit kernel
//! (`BITS_PER_LONG == 64`) `hsiphash` is **SipHash-1-3** over 64-bit state
//! with a 128-bit key (`hsiphash_key_t` is `unsigned long key[2]`), returning
//! the low 32 bits of `(v0 ^ v1) ^ (v2 ^ v3)` (the `HPOSTAMBLE` of
//! lib/siphash.c: one compression round per 8-byte block, three finalization
//! rounds). On 32-bit kernels it is HalfSipHash-1-3 instead; this model follows
//! the 64-bit variant, which is what a 64-bit director runs.
//!
//! Message bytes are read little-endian (`le64_to_cpup` / `get_unaligned_le32`),
//! so hashing a `u32` that lives in host memory (mh hashes `&v, sizeof(v)`)
//! depends on host byte order: [`hsiphash_u32_le_host`] is the value a
//! little-endian host (x86-64, arm64 LE) computes.
//!
//! Pinned by the kernel's own known-answer vectors (lib/siphash_kunit.c,
//! originally from the SipHash reference implementation).

/// SipHash with `C` compression rounds and `D` finalization rounds over
/// `data`, key `(k0, k1)` as the kernel's `key->key[0]`, `key->key[1]`.
pub fn siphash_cd<const C: usize, const D: usize>(data: &[u8], k0: u64, k1: u64) -> u64 {
    let mut v0: u64 = 0x736f_6d65_7073_6575 ^ k0;
    let mut v1: u64 = 0x646f_7261_6e64_6f6d ^ k1;
    let mut v2: u64 = 0x6c79_6765_6e65_7261 ^ k0;
    let mut v3: u64 = 0x7465_6462_7974_6573 ^ k1;

    #[inline(always)]
    fn round(v0: &mut u64, v1: &mut u64, v2: &mut u64, v3: &mut u64) {
        *v0 = v0.wrapping_add(*v1);
        *v1 = v1.rotate_left(13);
        *v1 ^= *v0;
        *v0 = v0.rotate_left(32);
        *v2 = v2.wrapping_add(*v3);
        *v3 = v3.rotate_left(16);
        *v3 ^= *v2;
        *v0 = v0.wrapping_add(*v3);
        *v3 = v3.rotate_left(21);
        *v3 ^= *v0;
        *v2 = v2.wrapping_add(*v1);
        *v1 = v1.rotate_left(17);
        *v1 ^= *v2;
        *v2 = v2.rotate_left(32);
    }

    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let m = u64::from_le_bytes(w);
        v3 ^= m;
        for _ in 0..C {
            round(&mut v0, &mut v1, &mut v2, &mut v3);
        }
        v0 ^= m;
    }
    // Last block: remaining bytes little-endian, length in the top byte.
    let mut b: u64 = (data.len() as u64) << 56;
    for (i, &byte) in chunks.remainder().iter().enumerate() {
        b |= (byte as u64) << (8 * i);
    }
    v3 ^= b;
    for _ in 0..C {
        round(&mut v0, &mut v1, &mut v2, &mut v3);
    }
    v0 ^= b;
    v2 ^= 0xff;
    for _ in 0..D {
        round(&mut v0, &mut v1, &mut v2, &mut v3);
    }
    (v0 ^ v1) ^ (v2 ^ v3)
}

/// The kernel's `siphash()` (SipHash-2-4).
pub fn siphash(data: &[u8], key: [u64; 2]) -> u64 {
    siphash_cd::<2, 4>(data, key[0], key[1])
}

/// The kernel's `hsiphash()` on a 64-bit kernel: SipHash-1-3, truncated to u32.
pub fn hsiphash(data: &[u8], key: [u64; 2]) -> u32 {
    siphash_cd::<1, 3>(data, key[0], key[1]) as u32
}

/// `hsiphash(&v, sizeof(v), key)` for a `u32 v` in the memory of a
/// little-endian 64-bit host (what `ip_vs_mh_hashkey` computes on x86-64).
#[inline]
pub fn hsiphash_u32_le_host(v: u32, key: [u64; 2]) -> u32 {
    hsiphash(&v.to_le_bytes(), key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lib/siphash_kunit.c `test_key_siphash` / `test_key_hsiphash` (64-bit).
    const KEY: [u64; 2] = [0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908];

    /// lib/siphash_kunit.c `test_vectors_hsiphash[]` for `BITS_PER_LONG == 64`:
    /// hsiphash of the bytes 0, 1, ..., i-1 for i = 0..63.
    const HSIPHASH_64BIT_VECTORS: [u32; 64] = [
        0x050fc4dc, 0x7d57ca93, 0x4dc7d44d, 0xe7ddf7fb, 0x88d38328, 0x49533b67, 0xc59f22a7, 0x9bb11140,
        0x8d299a8e, 0x6c063de4, 0x92ff097f, 0xf94dc352, 0x57b4d9a2, 0x1229ffa7, 0xc0f95d34, 0x2a519956,
        0x7d908b66, 0x63dbd80c, 0xb473e63e, 0x8d297d1c, 0xa6cce040, 0x2b45f844, 0xa320872e, 0xdae6c123,
        0x67349c8c, 0x705b0979, 0xca9913a5, 0x4ade3b35, 0xef6cd00d, 0x4ab1e1f4, 0x43c5e663, 0x8c21d1bc,
        0x16a7b60d, 0x7a8ff9bf, 0x1f2a753e, 0xbf186b91, 0xada26206, 0xa3c33057, 0xae3a36a1, 0x7b108392,
        0x99e41531, 0x3f1ad944, 0xc8138825, 0xc28949a6, 0xfaf8876b, 0x9f042196, 0x68b1d623, 0x8b5114fd,
        0xdf074c46, 0x12cc86b3, 0x0a52098f, 0x9d292f9a, 0xa2f41f12, 0x43a71ed0, 0x73f0bce6, 0x70a7e980,
        0x243c6d75, 0xfdb71513, 0xa67d8a08, 0xb7e8f148, 0xf7a644ee, 0x0f1837f2, 0x4b6694e0, 0xb7bbb3a8,
    ];

    /// First entries of lib/siphash_kunit.c `test_vectors_siphash[]`
    /// (the SipHash-2-4 reference vectors).
    const SIPHASH_VECTORS: [u64; 9] = [
        0x726fdb47dd0e0e31,
        0x74f839c593dc67fd,
        0x0d6c8009d9a94f5a,
        0x85676696d7fb7e2d,
        0xcf2794e0277187b7,
        0x18765564cd99a68d,
        0xcbc9466e58fee3ce,
        0xab0200f58b01d137,
        0x93f5f5799a932462,
    ];

    #[test]
    fn hsiphash_64bit_kernel_known_answers() {
        let input: Vec<u8> = (0u8..64).collect();
        for (i, &expect) in HSIPHASH_64BIT_VECTORS.iter().enumerate() {
            assert_eq!(hsiphash(&input[..i], KEY), expect, "hsiphash vector {i}");
        }
    }

    #[test]
    fn hsiphash_u32_matches_kernel_1u32_vector() {
        // siphash_kunit.c: hsiphash_1u32(0x03020100) == test_vectors_hsiphash[4],
        // i.e. a u32 hashed as its 4 little-endian bytes.
        assert_eq!(hsiphash_u32_le_host(0x0302_0100, KEY), HSIPHASH_64BIT_VECTORS[4]);
    }

    #[test]
    fn siphash24_reference_vectors() {
        let input: Vec<u8> = (0u8..64).collect();
        for (i, &expect) in SIPHASH_VECTORS.iter().enumerate() {
            assert_eq!(siphash(&input[..i], KEY), expect, "siphash vector {i}");
        }
    }
}
