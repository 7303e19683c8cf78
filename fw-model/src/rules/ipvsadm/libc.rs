//! The few C library conversions ipvsadm's behaviour depends on, re-done in
//! Rust so that what ipvsadm accepts and prints is reproduced exactly:
//! `strtol`/`atoi` (LP64, base 10), `inet_aton`, `inet_pton` (both families)
//! and `inet_ntop`/`inet_ntoa`, following glibc's semantics.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `isspace()` in the C locale.
fn c_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Result of `strtol(s, &end, 10)` on an LP64 system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StrtolResult {
    /// The value, saturated at `i64::MIN`/`i64::MAX` on overflow.
    pub value: i64,
    /// Bytes consumed (`end - s`); 0 when no digits were found.
    pub end: usize,
    /// `errno == ERANGE`.
    pub overflow: bool,
}

/// `strtol(s, &end, 10)`: leading white space, an optional sign, decimal digits.
pub(crate) fn strtol10(s: &str) -> StrtolResult {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && c_isspace(b[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let digits_start = i;
    // Accumulate the magnitude in u128 so that overflow is detected exactly.
    let mut mag: u128 = 0;
    let mut overflow = false;
    while i < b.len() && b[i].is_ascii_digit() {
        if !overflow {
            mag = mag * 10 + u128::from(b[i] - b'0');
            if mag > u128::from(u64::MAX) {
                overflow = true;
            }
        }
        i += 1;
    }
    if i == digits_start {
        return StrtolResult { value: 0, end: 0, overflow: false };
    }
    let value = if neg {
        if overflow || mag > (i64::MAX as u128) + 1 {
            overflow = true;
            i64::MIN
        } else {
            (mag as i128).wrapping_neg() as i64
        }
    } else if overflow || mag > i64::MAX as u128 {
        overflow = true;
        i64::MAX
    } else {
        mag as i64
    };
    StrtolResult { value, end: i, overflow }
}

/// ipvsadm's `string_to_number(s, min, max)`: the whole string must be a
/// base-10 `long` within `min..=max`.
pub(crate) fn string_to_number(s: &str, min: i64, max: i64) -> Option<i64> {
    let r = strtol10(s);
    if r.end == s.len() && r.end != 0 && !r.overflow && min <= r.value && r.value <= max {
        Some(r.value)
    } else {
        None
    }
}

/// glibc `atoi(s)`: `(int) strtol(s, NULL, 10)`.
pub(crate) fn atoi(s: &str) -> i32 {
    strtol10(s).value as i32
}

/// `strtoul(s, &end, 0)` as used inside glibc's `inet_aton`: `s` starts with
/// a digit. Returns (value, bytes consumed) or `None` when the value does not
/// fit an unsigned long (ERANGE).
fn strtoul0(s: &[u8]) -> Option<(u64, usize)> {
    let (base, start) = if s.len() >= 2 && s[0] == b'0' && (s[1] == b'x' || s[1] == b'X') {
        (16u32, 2usize)
    } else if s[0] == b'0' {
        (8, 0)
    } else {
        (10, 0)
    };
    let mut i = start;
    let mut v: u64 = 0;
    let mut overflow = false;
    while i < s.len() {
        let d = match (s[i] as char).to_digit(base) {
            Some(d) => d,
            None => break,
        };
        match v.checked_mul(u64::from(base)).and_then(|x| x.checked_add(u64::from(d))) {
            Some(n) => v = n,
            None => overflow = true,
        }
        i += 1;
    }
    if base == 16 && i == start {
        // "0x" without hex digits: the number is the "0", end points at 'x'.
        return Some((0, 1));
    }
    if overflow {
        None
    } else {
        Some((v, i))
    }
}

/// glibc `inet_aton()`: 1 to 4 parts in C notation (0x hex, 0 octal),
/// the last part filling the remaining bytes; trailing white space (and
/// whatever follows it) is accepted. Returns the address in host order.
pub(crate) fn inet_aton(s: &str) -> Option<u32> {
    let b = s.as_bytes();
    let mut parts: [u32; 3] = [0; 3];
    let mut nparts = 0usize;
    let mut i = 0usize;
    let val: u64;
    loop {
        if i >= b.len() || !b[i].is_ascii_digit() {
            return None;
        }
        let (v, used) = strtoul0(&b[i..])?;
        if v > 0xffff_ffff {
            return None;
        }
        i += used;
        if i < b.len() && b[i] == b'.' {
            if nparts > 2 || v > 0xff {
                return None;
            }
            parts[nparts] = v as u32;
            nparts += 1;
            i += 1;
        } else {
            val = v;
            break;
        }
    }
    if i < b.len() && !(b[i].is_ascii() && c_isspace(b[i])) {
        return None;
    }
    const MAX: [u64; 4] = [0xffff_ffff, 0x00ff_ffff, 0xffff, 0xff];
    if val > MAX[nparts] {
        return None;
    }
    let mut word: u32 = 0;
    for (k, p) in parts.iter().take(nparts).enumerate() {
        word |= p << (24 - 8 * k);
    }
    Some(word | val as u32)
}

/// glibc `inet_pton(AF_INET, ...)`: exactly four decimal octets, no leading zeros.
pub(crate) fn inet_pton4(s: &str) -> Option<Ipv4Addr> {
    let mut out = [0u8; 4];
    let mut octets = 0usize;
    let mut saw_digit = false;
    let mut cur: u32 = 0;
    for &ch in s.as_bytes() {
        if ch.is_ascii_digit() {
            if saw_digit && cur == 0 {
                return None;
            }
            cur = cur * 10 + u32::from(ch - b'0');
            if cur > 255 {
                return None;
            }
            if !saw_digit {
                octets += 1;
                if octets > 4 {
                    return None;
                }
                saw_digit = true;
            }
            out[octets - 1] = cur as u8;
        } else if ch == b'.' && saw_digit {
            if octets == 4 {
                return None;
            }
            cur = 0;
            saw_digit = false;
        } else {
            return None;
        }
    }
    if octets < 4 {
        return None;
    }
    Some(Ipv4Addr::from(out))
}

/// glibc `inet_pton(AF_INET6, ...)`.
pub(crate) fn inet_pton6(s: &str) -> Option<Ipv6Addr> {
    let src = s.as_bytes();
    let mut tmp = [0u8; 16];
    let mut tp = 0usize;
    let mut colonp: Option<usize> = None;
    let mut i = 0usize;
    if src.is_empty() {
        return None;
    }
    if src[0] == b':' {
        i = 1;
        if i == src.len() || src[i] != b':' {
            return None;
        }
    }
    let mut curtok = i;
    let mut xdigits = 0usize;
    let mut val: u32 = 0;
    while i < src.len() {
        let ch = src[i];
        i += 1;
        if let Some(d) = (ch as char).to_digit(16) {
            if xdigits == 4 {
                return None;
            }
            val = (val << 4) | d;
            if val > 0xffff {
                return None;
            }
            xdigits += 1;
            continue;
        }
        if ch == b':' {
            curtok = i;
            if xdigits == 0 {
                if colonp.is_some() {
                    return None;
                }
                colonp = Some(tp);
                continue;
            } else if i == src.len() {
                return None;
            }
            if tp + 2 > 16 {
                return None;
            }
            tmp[tp] = (val >> 8) as u8;
            tmp[tp + 1] = val as u8;
            tp += 2;
            xdigits = 0;
            val = 0;
            continue;
        }
        if ch == b'.' && tp + 4 <= 16 {
            // The rest of the string must be a dotted quad (inet_pton4 runs to the end).
            let tail = std::str::from_utf8(&src[curtok..]).ok()?;
            if let Some(v4) = inet_pton4(tail) {
                tmp[tp..tp + 4].copy_from_slice(&v4.octets());
                tp += 4;
                xdigits = 0;
                break;
            }
        }
        return None;
    }
    if xdigits > 0 {
        if tp + 2 > 16 {
            return None;
        }
        tmp[tp] = (val >> 8) as u8;
        tmp[tp + 1] = val as u8;
        tp += 2;
    }
    if let Some(c) = colonp {
        if tp == 16 {
            return None;
        }
        let n = tp - c;
        let moved: Vec<u8> = tmp[c..tp].to_vec();
        for b in &mut tmp[c..] {
            *b = 0;
        }
        tmp[16 - n..].copy_from_slice(&moved);
        tp = 16;
    }
    if tp != 16 {
        return None;
    }
    Some(Ipv6Addr::from(tmp))
}

/// glibc `inet_ntop(AF_INET6, ...)`: longest run (first on ties) of two or
/// more zero groups compressed, lower-case hex, `::a.b.c.d` for
/// IPv4-compatible and `::ffff:a.b.c.d` for IPv4-mapped addresses.
pub(crate) fn ntop6(a: &Ipv6Addr) -> String {
    let words = a.segments();
    let (mut best_base, mut best_len): (Option<usize>, usize) = (None, 0);
    let (mut cur_base, mut cur_len): (Option<usize>, usize) = (None, 0);
    for (i, w) in words.iter().enumerate() {
        if *w == 0 {
            if cur_base.is_none() {
                cur_base = Some(i);
                cur_len = 1;
            } else {
                cur_len += 1;
            }
        } else if let Some(cb) = cur_base {
            if best_base.is_none() || cur_len > best_len {
                best_base = Some(cb);
                best_len = cur_len;
            }
            cur_base = None;
        }
    }
    if let Some(cb) = cur_base {
        if best_base.is_none() || cur_len > best_len {
            best_base = Some(cb);
            best_len = cur_len;
        }
    }
    if best_base.is_some() && best_len < 2 {
        best_base = None;
    }
    let mut out = String::new();
    let o = a.octets();
    for (i, w) in words.iter().enumerate() {
        if let Some(bb) = best_base {
            if i >= bb && i < bb + best_len {
                if i == bb {
                    out.push(':');
                }
                continue;
            }
        }
        if i != 0 {
            out.push(':');
        }
        if i == 6 && best_base == Some(0) && (best_len == 6 || (best_len == 5 && words[5] == 0xffff)) {
            out.push_str(&format!("{}.{}.{}.{}", o[12], o[13], o[14], o[15]));
            break;
        }
        out.push_str(&format!("{w:x}"));
    }
    if let Some(bb) = best_base {
        if bb + best_len == 8 {
            out.push(':');
        }
    }
    out
}

/// `inet_ntop()` of either family.
pub(crate) fn ntop(a: &IpAddr) -> String {
    match a {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => ntop6(v6),
    }
}

/// ipvsadm's numeric `addrport_to_anyname()`: `a.b.c.d:port` or `[v6]:port`.
pub(crate) fn addr_port(a: &IpAddr, port: u16) -> String {
    match a {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{}]:{port}", ntop6(v6)),
    }
}

/// Cut a C string at its first NUL (what `strdup`/`strcmp` would see).
pub(crate) fn c_str(s: &str) -> &str {
    match s.find('\0') {
        Some(i) => &s[..i],
        None => s,
    }
}

/// `strncpy(dst, s, n)` into a buffer read back as a C string: at most `n`
/// bytes (cut back to a character boundary).
pub(crate) fn truncate_bytes(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut k = n;
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    &s[..k]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aton_forms() {
        assert_eq!(inet_aton("10.0.0.1"), Some(0x0a00_0001));
        assert_eq!(inet_aton("10.1"), Some(0x0a00_0001));
        assert_eq!(inet_aton("10"), Some(10));
        assert_eq!(inet_aton("0x0a.010.0.1"), Some(0x0a08_0001));
        assert_eq!(inet_aton("1.2.3.4 junk"), Some(0x0102_0304));
        assert_eq!(inet_aton("1.2.3.256"), None);
        assert_eq!(inet_aton("1.2.3.4.5"), None);
        assert_eq!(inet_aton("08.1.1.1"), None);
        assert_eq!(inet_aton("0x"), None);
        assert_eq!(inet_aton(""), None);
        assert_eq!(inet_aton("1..2"), None);
        assert_eq!(inet_aton("4294967295"), Some(u32::MAX));
        assert_eq!(inet_aton("4294967296"), None);
    }

    #[test]
    fn pton6_forms() {
        assert!(inet_pton6("::").is_some());
        assert!(inet_pton6("::1").is_some());
        assert!(inet_pton6("2001:db8::80").is_some());
        assert!(inet_pton6("::ffff:1.2.3.4").is_some());
        assert!(inet_pton6("1:2:3:4:5:6:7::").is_some());
        assert!(inet_pton6("1:2:3:4:5:6:7:8::").is_none());
        assert!(inet_pton6("::01.2.3.4").is_none());
        assert!(inet_pton6(":1::").is_none());
        assert!(inet_pton6("1::2::3").is_none());
        assert!(inet_pton6("12345::").is_none());
        assert!(inet_pton6("::1.2.3").is_none());
        assert!(inet_pton6("1.2.3.4").is_none());
        assert!(inet_pton6("1:").is_none());
    }

    #[test]
    fn ntop6_forms() {
        let p = |s: &str| ntop6(&s.parse().unwrap());
        assert_eq!(p("2001:db8::80"), "2001:db8::80");
        assert_eq!(p("::"), "::");
        assert_eq!(p("::1"), "::1");
        assert_eq!(p("::1.2.3.4"), "::1.2.3.4");
        assert_eq!(p("::ffff:1.2.3.4"), "::ffff:1.2.3.4");
        assert_eq!(p("1:0:2:0:0:3:0:0"), "1:0:2::3:0:0");
        assert_eq!(p("1:0:0:2:0:0:3:4"), "1::2:0:0:3:4");
        assert_eq!(p("1:0:2:3:4:5:6:7"), "1:0:2:3:4:5:6:7");
    }

    #[test]
    fn strtol_forms() {
        assert_eq!(string_to_number("+80", 0, 65535), Some(80));
        assert_eq!(string_to_number(" 80", 0, 65535), Some(80));
        assert_eq!(string_to_number("-0", 0, 65535), Some(0));
        assert_eq!(string_to_number("80 ", 0, 65535), None);
        assert_eq!(string_to_number("", 0, 65535), None);
        assert_eq!(string_to_number("-", 0, 65535), None);
        assert_eq!(string_to_number("99999999999999999999", 0, i64::MAX), None);
        assert_eq!(atoi("64abc"), 64);
        assert_eq!(atoi("4294967360"), 64);
    }
}

