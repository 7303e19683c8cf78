//! IPv4 options as Linux processes them on a received packet
//! (`__ip_options_compile` in net/ipv4/ip_options.c, called from
//! `ip_rcv_options` after the input route lookup) and on the way out of
//! `ip_forward` (`ip_forward_options`).
//!
//! On receive the kernel validates every option and fills in the ones that
//! ask each hop for data:
//!
//! * Record Route (type 7): while the pointer is within the option, the
//!   receiving address (`spec_dst_fill`: the destination address for a
//!   packet to a local address) is written at the pointer, pointer + 4;
//! * Timestamp (type 68), while the pointer is within the option: flag 0
//!   writes the time (pointer + 4); flag 1 the receiving address and the
//!   time (pointer + 8); flag 3 the time after a prespecified address that
//!   is not an ordinary unicast address of another host (`inet_addr_type`
//!   != `RTN_UNICAST`: one of ours, 0/8, broadcast, multicast), pointer + 8,
//!   and otherwise nothing; other flags nothing. A full option (pointer past
//!   the end) instead counts the hop in its overflow nibble (flag 3
//!   excepted); an overflow already at 15 is an error;
//! * after End of Option List every byte is set to 0.
//!
//! The time is `inet_current_timestamp`: milliseconds since midnight UTC,
//! in network byte order. The header checksum is **not** updated here (the
//! kernel recomputes it later, on every path that transmits the packet).
//!
//! A malformed option makes the kernel drop the packet with an ICMP
//! parameter problem pointing at the bad byte ([`OptionsError::pointer`]).

use std::net::Ipv4Addr;

/// End of Option List.
pub const IPOPT_END: u8 = 0;
/// No Operation.
pub const IPOPT_NOOP: u8 = 1;
/// Record Route.
pub const IPOPT_RR: u8 = 7;
/// Internet Timestamp.
pub const IPOPT_TIMESTAMP: u8 = 68;
/// Loose Source and Record Route.
pub const IPOPT_LSRR: u8 = 131;
/// Strict Source and Record Route.
pub const IPOPT_SSRR: u8 = 137;
/// Router Alert.
pub const IPOPT_RA: u8 = 148;
/// CIPSO (commercial IP security option): refused, the director has no
/// NetLabel DOI (`cipso_v4_validate`).
pub const IPOPT_CIPSO: u8 = 134;

/// Timestamp flag: timestamps only.
pub const IPOPT_TS_TSONLY: u8 = 0;
/// Timestamp flag: address and timestamp.
pub const IPOPT_TS_TSANDADDR: u8 = 1;
/// Timestamp flag: prespecified addresses.
pub const IPOPT_TS_PRESPEC: u8 = 3;

/// What `ip_options_compile` found, as `struct ip_options` keeps it
/// (offsets are from the start of the options, not of the IP header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompiledOptions {
    /// Offset of the Record Route option.
    pub rr: Option<usize>,
    /// A Record Route slot was taken on receive (`rr_needaddr`).
    pub rr_needaddr: bool,
    /// Offset of the Timestamp option.
    pub ts: Option<usize>,
    /// An address was written into the Timestamp option (`ts_needaddr`).
    pub ts_needaddr: bool,
    /// A time was written into the Timestamp option (`ts_needtime`).
    pub ts_needtime: bool,
    /// A source route option is present (`srr`): the stack drops the
    /// packet unless `accept_source_route` is on (it is off by default).
    pub srr: bool,
    /// A Router Alert option is present.
    pub router_alert: bool,
    /// Bytes were changed (`is_changed`).
    pub changed: bool,
}

/// An option the kernel refuses: it sends ICMP parameter problem with
/// `pointer` (offset of the bad byte from the start of the IP header) and
/// drops the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad IPv4 option at header byte {pointer}")]
pub struct OptionsError {
    /// The parameter problem pointer.
    pub pointer: u8,
}

/// What the receiving host supplies to [`compile_rcv`].
pub trait OptionsHost {
    /// The address written into Record Route and Timestamp flag 1
    /// (`spec_dst_fill` → `fib_compute_spec_dst`).
    fn spec_dst(&self) -> Ipv4Addr;
    /// `inet_current_timestamp()`, host byte order.
    fn timestamp(&self) -> u32;
    /// `inet_addr_type(addr) != RTN_UNICAST`: a timestamp is due at a
    /// prespecified address.
    fn stamps_prespecified(&self, addr: Ipv4Addr) -> bool;
}

/// `inet_current_timestamp` for a time in nanoseconds since the Unix epoch:
/// milliseconds since midnight UTC.
pub fn ms_since_midnight(ns: u64) -> u32 {
    ((ns / 1_000_000) % 86_400_000) as u32
}

/// `inet_addr_type(addr) != RTN_UNICAST` for a host whose local addresses
/// are `is_local` (plus 127/8): 0/8 and 255.255.255.255 (broadcast),
/// 224/4 (multicast), and local addresses.
pub fn not_unicast(addr: Ipv4Addr, is_local: impl Fn(Ipv4Addr) -> bool) -> bool {
    let o = addr.octets();
    o[0] == 0 || addr.is_broadcast() || addr.is_multicast() || o[0] == 127 || is_local(addr)
}

fn err(pointer: usize) -> OptionsError {
    // Options end at header byte 60: the offset fits a byte.
    OptionsError { pointer: (pointer + super::ipv4::HEADER_LEN) as u8 }
}

/// The checks Record Route and Timestamp (option `o` at offset `i`) share:
/// not `seen` before, at least `min_len` bytes, the pointer past them.
/// Returns the pointer.
fn slot_pointer(o: &[u8], i: usize, seen: bool, min_len: usize) -> Result<usize, OptionsError> {
    if seen {
        return Err(err(i));
    }
    if o.len() < min_len {
        return Err(err(i + 1));
    }
    let ptr = o[2] as usize;
    if ptr <= min_len {
        return Err(err(i + 2));
    }
    Ok(ptr)
}

/// `__ip_options_compile` on a received packet: validates `opts` (the
/// bytes after the 20-byte header) and fills them in place as described in
/// the module documentation. On error `opts` may be partly changed (as the
/// kernel leaves it).
pub fn compile_rcv(opts: &mut [u8], host: &impl OptionsHost) -> Result<CompiledOptions, OptionsError> {
    let mut c = CompiledOptions::default();
    let mut i = 0;
    while i < opts.len() {
        let t = opts[i];
        if t == IPOPT_END {
            for b in &mut opts[i + 1..] {
                if *b != IPOPT_END {
                    *b = IPOPT_END;
                    c.changed = true;
                }
            }
            break;
        }
        if t == IPOPT_NOOP {
            i += 1;
            continue;
        }
        let left = opts.len() - i;
        if left < 2 {
            return Err(err(i));
        }
        let optlen = opts[i + 1] as usize;
        if optlen < 2 || optlen > left {
            return Err(err(i));
        }
        let o = &mut opts[i..i + optlen];
        match t {
            IPOPT_SSRR | IPOPT_LSRR => {
                if optlen < 3 {
                    return Err(err(i + 1));
                }
                if o[2] < 4 {
                    return Err(err(i + 2));
                }
                if c.srr {
                    return Err(err(i));
                }
                c.srr = true;
            }
            IPOPT_RR => {
                let ptr = slot_pointer(o, i, c.rr.is_some(), 3)?;
                if ptr <= optlen {
                    if ptr + 3 > optlen {
                        return Err(err(i + 2));
                    }
                    o[ptr - 1..ptr + 3].copy_from_slice(&host.spec_dst().octets());
                    c.changed = true;
                    o[2] += 4;
                    c.rr_needaddr = true;
                }
                c.rr = Some(i);
            }
            IPOPT_TIMESTAMP => {
                let ptr = slot_pointer(o, i, c.ts.is_some(), 4)?;
                let flag = o[3] & 0x0f;
                if ptr <= optlen {
                    if ptr + 3 > optlen {
                        return Err(err(i + 2));
                    }
                    let time_at = match flag {
                        IPOPT_TS_TSONLY => {
                            o[2] += 4;
                            c.ts_needtime = true;
                            Some(ptr - 1)
                        }
                        IPOPT_TS_TSANDADDR | IPOPT_TS_PRESPEC => {
                            if ptr + 7 > optlen {
                                return Err(err(i + 2));
                            }
                            if flag == IPOPT_TS_TSANDADDR {
                                o[ptr - 1..ptr + 3].copy_from_slice(&host.spec_dst().octets());
                                c.ts_needaddr = true;
                            } else {
                                let a = Ipv4Addr::new(o[ptr - 1], o[ptr], o[ptr + 1], o[ptr + 2]);
                                if !host.stamps_prespecified(a) {
                                    c.ts = Some(i);
                                    i += optlen;
                                    continue;
                                }
                            }
                            o[2] += 8;
                            c.ts_needtime = true;
                            Some(ptr + 3)
                        }
                        _ => None,
                    };
                    if let Some(at) = time_at {
                        o[at..at + 4].copy_from_slice(&host.timestamp().to_be_bytes());
                        c.changed = true;
                    }
                } else if flag != IPOPT_TS_PRESPEC {
                    let overflow = o[3] >> 4;
                    if overflow == 15 {
                        return Err(err(i + 3));
                    }
                    o[3] = flag | ((overflow + 1) << 4);
                    c.changed = true;
                }
                c.ts = Some(i);
            }
            IPOPT_RA => {
                if optlen < 4 {
                    return Err(err(i + 1));
                }
                c.router_alert = o[2] == 0 && o[3] == 0;
            }
            IPOPT_CIPSO => {
                // cipso_v4_validate: no NetLabel DOI is configured on the
                // director, so the lookup of the DOI (bytes 2-5) fails.
                return Err(err(if optlen < 8 { i + 1 } else { i + 2 }));
            }
            _ => {}
        }
        i += optlen;
    }
    Ok(c)
}

/// `ip_forward_options` for a packet compiled by [`compile_rcv`] that the
/// stack forwards: a Record Route slot taken on receive gets the outgoing
/// interface's address `src` (`ip_rt_get_source`). Returns whether bytes
/// changed (the caller then recomputes the header checksum). Source
/// routes never get here (the director does not accept them).
pub fn forward_options(opts: &mut [u8], c: &CompiledOptions, src: Ipv4Addr) -> bool {
    let Some(rr) = c.rr.filter(|_| c.rr_needaddr) else {
        return false;
    };
    let ptr = opts[rr + 2] as usize;
    opts[rr + ptr - 5..rr + ptr - 1].copy_from_slice(&src.octets());
    true
}

/// The options of an ICMP error about a packet whose options were
/// compiled into `c` (`opts`: its option bytes as filled on receive), as
/// `icmp_send` builds them: `__ip_options_echo` copies Record Route then
/// Timestamp (nothing else: source routes never get here), each advanced
/// by the slot this hop takes if the received packet took one and there is
/// room, padded with End of Option List to a multiple of 4; then
/// `ip_options_build` writes the error's source address `src` and the time
/// into those slots. `None` when the kernel gives up on the error
/// (`-EINVAL`: a slot was taken on receive and no room is left for the
/// next).
pub fn echo_options(opts: &[u8], c: &CompiledOptions, src: Ipv4Addr, host: &impl OptionsHost) -> Option<Vec<u8>> {
    let mut d = Vec::with_capacity(opts.len());
    if let Some(rr) = c.rr {
        let (optlen, soffset) = (opts[rr + 1] as usize, opts[rr + 2] as usize);
        let at = d.len();
        d.extend_from_slice(&opts[rr..rr + optlen]);
        if c.rr_needaddr && soffset <= optlen {
            if soffset + 3 > optlen {
                return None;
            }
            d[at + 2] = (soffset + 4) as u8;
            // ip_options_build: the error's own source at the new slot.
            d[at + soffset - 1..at + soffset + 3].copy_from_slice(&src.octets());
        }
    }
    if let Some(ts) = c.ts {
        let (optlen, mut soffset) = (opts[ts + 1] as usize, opts[ts + 2] as usize);
        let at = d.len();
        d.extend_from_slice(&opts[ts..ts + optlen]);
        if soffset <= optlen {
            let mut addr_at = None;
            let mut time_at = None;
            if c.ts_needaddr {
                if soffset + 3 > optlen {
                    return None;
                }
                addr_at = Some(soffset - 1);
                soffset += 4;
            }
            if c.ts_needtime {
                if soffset + 3 > optlen {
                    return None;
                }
                if d[at + 3] & 0x0f != IPOPT_TS_PRESPEC {
                    time_at = Some(soffset - 1);
                    soffset += 4;
                } else if soffset + 7 <= optlen {
                    let a = &d[at + soffset - 1..at + soffset + 3];
                    if host.stamps_prespecified(Ipv4Addr::new(a[0], a[1], a[2], a[3])) {
                        time_at = Some(soffset + 3);
                        soffset += 8;
                    }
                }
            }
            d[at + 2] = soffset as u8;
            if let Some(i) = addr_at {
                d[at + i..at + i + 4].copy_from_slice(&src.octets());
            }
            if let Some(i) = time_at {
                d[at + i..at + i + 4].copy_from_slice(&host.timestamp().to_be_bytes());
            }
        }
    }
    while d.len() % 4 != 0 {
        d.push(IPOPT_END);
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Host;
    const VIP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 100);
    const T: u32 = 0x01f1_2d66;

    impl OptionsHost for Host {
        fn spec_dst(&self) -> Ipv4Addr {
            VIP
        }
        fn timestamp(&self) -> u32 {
            T
        }
        fn stamps_prespecified(&self, a: Ipv4Addr) -> bool {
            not_unicast(a, |a| a == VIP)
        }
    }

    fn run(mut o: Vec<u8>) -> (Vec<u8>, Result<CompiledOptions, OptionsError>) {
        let r = compile_rcv(&mut o, &Host);
        (o, r)
    }

    #[test]
    fn midnight() {
        // 2023-11-14 22:13:20 UTC = 1_700_000_000 s.
        assert_eq!(ms_since_midnight(1_700_000_000_123_456_789), (22 * 3600 + 13 * 60 + 20) * 1000 + 123);
    }

    #[test]
    fn timestamp_flags() {
        let (o, r) = run(vec![68, 12, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(o, [68, 12, 9, 0, 1, 0xf1, 0x2d, 0x66, 0, 0, 0, 0]);
        assert_eq!(r.unwrap().ts, Some(0));
        let (o, _) = run(vec![68, 20, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(o[..16], [68, 20, 13, 1, 10, 0, 0, 100, 1, 0xf1, 0x2d, 0x66, 0, 0, 0, 0]);
        // Prespecified: ours gets the time, another host's is skipped.
        let (o, _) = run(vec![68, 12, 5, 3, 10, 0, 0, 100, 0, 0, 0, 0]);
        assert_eq!(o, [68, 12, 13, 3, 10, 0, 0, 100, 1, 0xf1, 0x2d, 0x66]);
        let (o, _) = run(vec![68, 12, 5, 3, 192, 0, 2, 77, 0, 0, 0, 0]);
        assert_eq!(o, [68, 12, 5, 3, 192, 0, 2, 77, 0, 0, 0, 0]);
        // Unknown flag: nothing.
        let (o, r) = run(vec![68, 12, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!((o[2], r.unwrap().changed), (5, false));
    }

    #[test]
    fn full_timestamp_counts_overflow() {
        let (o, _) = run(vec![68, 12, 13, 0x20, 1, 1, 1, 1, 2, 2, 2, 2]);
        assert_eq!(o[..4], [68, 12, 13, 0x30]);
        let (_, r) = run(vec![1, 68, 12, 13, 0xf0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0]);
        assert_eq!(r, Err(OptionsError { pointer: 20 + 1 + 3 }));
        // Flag 3 full: no overflow counted.
        let (o, r) = run(vec![68, 12, 13, 0x03, 1, 1, 1, 1, 2, 2, 2, 2]);
        assert_eq!((o[3], r.unwrap().changed), (0x03, false));
    }

    #[test]
    fn record_route_and_forwarding() {
        let (mut o, r) = run(vec![7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(o, [7, 11, 8, 10, 0, 0, 100, 0, 0, 0, 0, 0]);
        let c = r.unwrap();
        assert!(forward_options(&mut o, &c, Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(o[3..7], [10, 0, 0, 1]);
        // Full: untouched, no address needed.
        let (o, r) = run(vec![7, 11, 12, 1, 1, 1, 1, 2, 2, 2, 2, 0]);
        assert_eq!((o[2], r.unwrap().rr_needaddr), (12, false));
    }

    #[test]
    fn errors_point_at_the_bad_byte() {
        assert_eq!(run(vec![7, 2, 68, 8, 5, 0, 0, 0, 0, 0, 0, 0]).1, Err(OptionsError { pointer: 21 }));
        assert_eq!(run(vec![68, 12, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]).1, Err(OptionsError { pointer: 22 }));
        assert_eq!(run(vec![68, 12, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0]).1, Err(OptionsError { pointer: 22 }));
        assert_eq!(run(vec![1, 1, 1, 7]).1, Err(OptionsError { pointer: 23 }));
        assert_eq!(run(vec![68, 40, 5, 0]).1, Err(OptionsError { pointer: 20 }));
        // Two Record Routes.
        assert_eq!(run(vec![7, 3, 4, 7, 3, 4, 0, 0]).1, Err(OptionsError { pointer: 23 }));
    }

    /// Receive, then echo into an ICMP error from the VIP: the bytes the
    /// kernel sent in the VM (time exceeded about TTL-1 SYNs), with this
    /// host's time.
    fn echo(rcv: Vec<u8>) -> Option<Vec<u8>> {
        let mut o = rcv;
        let c = compile_rcv(&mut o, &Host).unwrap();
        echo_options(&o, &c, VIP, &Host)
    }

    #[test]
    fn icmp_errors_echo_record_route_and_timestamp() {
        let t = T.to_be_bytes();
        let mut want = vec![68, 12, 13, 0];
        want.extend(t);
        want.extend(t);
        assert_eq!(echo(vec![68, 12, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap(), want);
        assert_eq!(echo(vec![7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap(), [7, 11, 12, 10, 0, 0, 100, 10, 0, 0, 100, 0]);
        let mut want = vec![68, 20, 21, 1, 10, 0, 0, 100];
        want.extend(t);
        want.extend([10, 0, 0, 100]);
        want.extend(t);
        assert_eq!(echo(vec![68, 20, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap(), want);
        // Full on receive: copied as it is; a last slot taken on receive:
        // copied, no room for the error's own.
        assert_eq!(echo(vec![7, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap(), [7, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(echo(vec![7, 7, 4, 0, 0, 0, 0, 0]).unwrap(), [7, 7, 8, 10, 0, 0, 100, 0]);
        let mut want = vec![68, 8, 9, 0];
        want.extend(t);
        assert_eq!(echo(vec![68, 8, 5, 0, 0, 0, 0, 0]).unwrap(), want);
        // Record Route first, then Timestamp, NOPs dropped, END padding.
        let mut rcv = vec![7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 1, 68, 16, 5, 0];
        rcv.extend([0; 12]);
        let mut want = vec![7, 11, 12, 10, 0, 0, 100, 10, 0, 0, 100, 68, 16, 13, 0];
        want.extend(t);
        want.extend(t);
        want.extend([0, 0, 0, 0, 0]);
        assert_eq!(echo(rcv).unwrap(), want);
        // Flag 1 with only the pair taken on receive left: no room, no error sent.
        let mut o = vec![68, 12, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        let c = compile_rcv(&mut o, &Host).unwrap();
        assert_eq!(o[2], 13);
        assert!(echo_options(&o, &c, VIP, &Host).is_some());
        let c2 = CompiledOptions { ts_needaddr: true, ..c };
        let mut o2 = o.clone();
        o2[2] = 11;
        assert_eq!(echo_options(&o2, &c2, VIP, &Host), None);
    }

    #[test]
    fn any_bytes_compile_without_panic() {
        // Random option areas, biased towards the option types handled.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let types = [0u8, 1, 7, 68, 131, 137, 148, 134, 130, 255];
        for _ in 0..50_000 {
            let len = (next() % 11) as usize * 4;
            let mut o: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let mut i = 0;
            while i < len {
                o[i] = types[(next() % types.len() as u64) as usize];
                if i + 1 < len {
                    o[i + 1] = (next() % 14) as u8;
                }
                if i + 2 < len {
                    o[i + 2] = (next() % 16) as u8;
                }
                i += 2 + (next() % 12) as usize;
            }
            let before = o.clone();
            match compile_rcv(&mut o, &Host) {
                Ok(c) => {
                    let mut f = o.clone();
                    forward_options(&mut f, &c, VIP);
                    assert_eq!(o.len(), before.len());
                    if let Some(e) = echo_options(&o, &c, VIP, &Host) {
                        assert!(e.len() <= o.len() + 3 && e.len() % 4 == 0);
                    }
                }
                Err(e) => assert!((20..20 + len.max(1) as u8).contains(&e.pointer), "{e} for {before:?}"),
            }
        }
    }

    #[test]
    fn end_of_list_zeroes_the_rest() {
        let (o, r) = run(vec![1, 0, 7, 7]);
        assert_eq!(o, [1, 0, 0, 0]);
        assert!(r.unwrap().changed);
        let (_, r) = run(vec![131, 7, 4, 1, 2, 3, 4, 0]);
        assert!(r.unwrap().srr);
    }
}
