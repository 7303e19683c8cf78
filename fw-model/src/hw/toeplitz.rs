//! The Toeplitz hash (Microsoft RSS), as the flow table's bucket index
//! (docs/hardware.md §4).

/// The RSS default key (way 0).
pub const KEY0: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
    0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// Way 1: the default key rotated left by 16 bytes.
pub const KEY1: [u8; 40] = {
    let mut k = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        k[i] = KEY0[(i + 16) % 40];
        i += 1;
    }
    k
};

/// Toeplitz hash of `input` with `key` (input ≤ 36 bytes): for every input
/// bit set, MSB first, XOR in the 32 key bits starting at that bit.
pub fn toeplitz(key: &[u8; 40], input: &[u8]) -> u32 {
    let mut result = 0u32;
    // Sliding 64-bit window over the key: the top 32 bits are the key bits
    // starting at the current input bit.
    let mut window = u64::from_be_bytes([key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7]]);
    let mut next = 8;
    for (i, &b) in input.iter().enumerate() {
        for bit in 0..8 {
            if b & (0x80 >> bit) != 0 {
                result ^= (window >> 32) as u32;
            }
            window <<= 1;
        }
        // Refill the low byte that has been shifted out of view.
        let _ = i;
        if next < 40 {
            window |= key[next] as u64;
            next += 1;
        }
    }
    result
}

/// Per-byte lookup tables for a fixed key and a 12-byte input: entry
/// `[i][b]` is the hash contribution of byte value `b` at input position
/// `i`, so a hash is 12 lookups XORed together (the same function as
/// [`toeplitz`], tested against it).
#[derive(Clone)]
pub struct ToeplitzTable {
    t: Box<[[u32; 256]; 12]>,
}

impl ToeplitzTable {
    /// Builds the tables for the 40-byte Toeplitz key `key`.
    pub fn new(key: &[u8; 40]) -> Self {
        let mut t = Box::new([[0u32; 256]; 12]);
        for (i, row) in t.iter_mut().enumerate() {
            for (b, v) in row.iter_mut().enumerate() {
                let mut inp = [0u8; 12];
                inp[i] = b as u8;
                *v = toeplitz(key, &inp);
            }
        }
        ToeplitzTable { t }
    }

    /// The Toeplitz hash of `input` (addresses and ports, network order)
    /// under this table's key.
    #[inline]
    pub fn hash(&self, input: &[u8; 12]) -> u32 {
        let mut h = 0;
        for (i, &b) in input.iter().enumerate() {
            h ^= self.t[i][b as usize];
        }
        h
    }
}

/// The tables of the two ways' keys, built once.
pub fn tables() -> &'static (ToeplitzTable, ToeplitzTable) {
    static T: std::sync::OnceLock<(ToeplitzTable, ToeplitzTable)> = std::sync::OnceLock::new();
    T.get_or_init(|| (ToeplitzTable::new(&KEY0), ToeplitzTable::new(&KEY1)))
}

/// The 12-byte hash input of docs/hardware.md §4.
pub fn hash_input(saddr: u32, daddr: u32, sport: u16, dport: u16) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[0..4].copy_from_slice(&saddr.to_be_bytes());
    b[4..8].copy_from_slice(&daddr.to_be_bytes());
    b[8..10].copy_from_slice(&sport.to_be_bytes());
    b[10..12].copy_from_slice(&dport.to_be_bytes());
    b
}

/// The 36-byte hash input of an IPv6 key (docs/hardware.md §4): the RSS
/// IPv6 input without extension headers.
pub fn hash_input6(saddr: &[u8; 16], daddr: &[u8; 16], sport: u16, dport: u16) -> [u8; 36] {
    let mut b = [0u8; 36];
    b[0..16].copy_from_slice(saddr);
    b[16..32].copy_from_slice(daddr);
    b[32..34].copy_from_slice(&sport.to_be_bytes());
    b[34..36].copy_from_slice(&dport.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn rss6(src: &str, sp: u16, dst: &str, dp: u16) -> (u32, u32) {
        let s = src.parse::<Ipv6Addr>().unwrap().octets();
        let d = dst.parse::<Ipv6Addr>().unwrap().octets();
        let full = hash_input6(&s, &d, sp, dp);
        (toeplitz(&KEY0, &full[..32]), toeplitz(&KEY0, &full))
    }

    /// The same suite's IPv6 rows (source, destination; IPv6 only, with
    /// TCP ports): the input order of [`hash_input6`].
    #[test]
    fn published_rss_vectors_ipv6() {
        assert_eq!(rss6("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766), (0x2cc18cd5, 0x40207d3d));
        assert_eq!(rss6("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739), (0x0f0c461c, 0xdde51bbf));
        assert_eq!(rss6("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024), (0x4b61e985, 0x02d1feef));
    }

    fn rss(src: &str, sp: u16, dst: &str, dp: u16) -> (u32, u32) {
        let s = u32::from(src.parse::<Ipv4Addr>().unwrap());
        let d = u32::from(dst.parse::<Ipv4Addr>().unwrap());
        let full = hash_input(s, d, sp, dp);
        (toeplitz(&KEY0, &full[..8]), toeplitz(&KEY0, &full))
    }

    /// Microsoft's RSS verification suite ("Verifying the RSS Hash
    /// Calculation"), IPv4 rows: (IPv4 only, IPv4 with TCP ports).
    #[test]
    fn published_rss_vectors() {
        assert_eq!(rss("66.9.149.187", 2794, "161.142.100.80", 1766), (0x323e8fc2, 0x51ccc178));
        assert_eq!(rss("199.92.111.2", 14230, "65.69.140.83", 4739), (0xd718262a, 0xc626b0ea));
        assert_eq!(rss("24.19.198.95", 12898, "12.22.207.184", 38024), (0xd2d0a5de, 0x5c2b394a));
        assert_eq!(rss("38.27.205.30", 48228, "209.142.163.6", 2217), (0x82989176, 0xafc7327f));
        assert_eq!(rss("153.39.163.191", 44251, "202.188.127.2", 1303), (0x5d1809c5, 0x10e828a2));
    }

    #[test]
    fn table_equals_bitwise() {
        let mut r = crate::rng::SplitMix64::new(4);
        let (t0, t1) = tables();
        for _ in 0..2000 {
            let mut inp = [0u8; 12];
            for b in inp.iter_mut() {
                *b = r.next_u64() as u8;
            }
            assert_eq!(t0.hash(&inp), toeplitz(&KEY0, &inp));
            assert_eq!(t1.hash(&inp), toeplitz(&KEY1, &inp));
        }
    }

    #[test]
    fn key1_is_key0_rotated() {
        assert_eq!(KEY1[0..4], [0xd0, 0xca, 0x2b, 0xcb]);
        assert_eq!(KEY1[24..28], [0x6d, 0x5a, 0x56, 0xda]);
    }
}
