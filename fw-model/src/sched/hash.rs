//! Small integer hashing helpers shared by the hashing schedulers.
//!
//! * [`hash_32`] is `include/linux/hash.h` `hash_32()` on a host without an
//!   architecture override (x86-64, arm64): `val * GOLDEN_RATIO_32 >> (32 - bits)`
//!   with `GOLDEN_RATIO_32 = 0x61C88647` (the constant used since Linux 4.7;
//!   older kernels multiplied by `GOLDEN_RATIO_PRIME_32 = 0x9e370001`).
//!   sh/dh use 8 bits (256 buckets), lblc/lblcr 10 bits (1024 buckets).
//! * [`fls`] is the kernel's `fls()` (find last set bit, 1-based, `fls(0) == 0`).
//! * [`gcd`] is `lib/math/gcd.c` `gcd()` for the positive weights wrr and mh feed it.

/// The `addr_fold` every IPVS hash starts from (`ip_vs_sh_hashkey`,
/// `ip_vs_dh_hashkey`, `ip_vs_lblc_hashkey`, `ip_vs_lblcr_hashkey`,
/// `ip_vs_mh_hashkey`), in host order: an IPv4 address itself
/// (`ntohl(addr->ip)`); an IPv6 address folded to 32 bits by XOR of its
/// four words (`ntohl(ip6[0] ^ ip6[1] ^ ip6[2] ^ ip6[3])`, which is the XOR
/// of the words in host order).
#[inline]
pub fn addr_fold(addr: &std::net::IpAddr) -> u32 {
    match addr {
        std::net::IpAddr::V4(a) => u32::from(*a),
        std::net::IpAddr::V6(a) => {
            let o = a.octets();
            (0..4).fold(0, |acc, i| acc ^ u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]))
        }
    }
}

/// [`addr_fold`] of a real server's address as `ip_vs_mh_hashkey` does it,
/// by the *service's* family (`svc->af`) over the server's `union
/// nf_inet_addr`: for an IPv6 service an IPv4 server's address is its
/// first word, the rest zero (`ip_vs_addr_copy` into a zeroed dest), so it
/// folds to itself; for an IPv4 service an IPv6 server's address is read
/// as its first word only (`addr->ip`).
#[inline]
pub fn addr_fold_as(addr: &std::net::IpAddr, svc_v6: bool) -> u32 {
    match addr {
        std::net::IpAddr::V6(a) if !svc_v6 => {
            let o = a.octets();
            u32::from_be_bytes([o[0], o[1], o[2], o[3]])
        }
        _ => addr_fold(addr),
    }
}

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
    fn addr_fold_xors_the_four_words_of_an_ipv6_address() {
        use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
        assert_eq!(addr_fold(&IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))), 0x0A00_0001);
        // 2001:0db8:0000:0000:0000:0000:0000:0010 → 0x20010db8 ^ 0 ^ 0 ^ 0x00000010.
        let a: Ipv6Addr = "2001:db8::10".parse().unwrap();
        assert_eq!(addr_fold(&IpAddr::V6(a)), 0x2001_0da8);
        // 2001:db8:1:2:3:4:5:6 → 0x20010db8 ^ 0x00010002 ^ 0x00030004 ^ 0x00050006.
        let b: Ipv6Addr = "2001:db8:1:2:3:4:5:6".parse().unwrap();
        assert_eq!(addr_fold(&IpAddr::V6(b)), 0x2001_0db8 ^ 0x0001_0002 ^ 0x0003_0004 ^ 0x0005_0006);
        // An IPv4-mapped address does not fold to the IPv4 address.
        let m: Ipv6Addr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(addr_fold(&IpAddr::V6(m)), 0x0000_ffff ^ 0x0A00_0001);
    }

    #[test]
    fn mh_folds_a_server_by_its_service_family() {
        use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
        let v6: IpAddr = "2001:db8:1:2::3".parse::<Ipv6Addr>().unwrap().into();
        let v4: IpAddr = Ipv4Addr::new(192, 0, 2, 7).into();
        assert_eq!(addr_fold_as(&v6, true), 0x2001_0db8 ^ 0x0001_0002 ^ 0 ^ 3);
        assert_eq!(addr_fold_as(&v6, false), 0x2001_0db8);
        assert_eq!(addr_fold_as(&v4, true), 0xC000_0207);
        assert_eq!(addr_fold_as(&v4, false), 0xC000_0207);
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
