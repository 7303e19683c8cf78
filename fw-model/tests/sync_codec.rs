//! The IPVS sync message codec (`lvsnic_model::sync`): messages built by
//! hand from the kernel's struct layouts (ip_vs_sync.c: ip_vs_sync_mesg,
//! ip_vs_sync_v4, ip_vs_sync_v6, ip_vs_sync_mesg_v0, ip_vs_sync_conn_v0,
//! options) decode
//! to the right fields; the encoder writes those same bytes; every malformed
//! input is a named drop; the decoder never panics (proptest).

use lvsnic_model::sync::*;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A v4 entry, field by field in struct ip_vs_sync_v4 order, big-endian.
#[allow(clippy::too_many_arguments)]
fn v4_entry(size: u16, proto: u8, flags: u32, state: u16, ports: [u16; 3], fwmark: u32, timeout: u32, addrs: [[u8; 4]; 3]) -> Vec<u8> {
    let mut e = vec![0u8, proto];
    e.extend_from_slice(&size.to_be_bytes()); // ver_size: version 0, size
    e.extend_from_slice(&flags.to_be_bytes());
    e.extend_from_slice(&state.to_be_bytes());
    for p in ports {
        e.extend_from_slice(&p.to_be_bytes());
    }
    e.extend_from_slice(&fwmark.to_be_bytes());
    e.extend_from_slice(&timeout.to_be_bytes());
    for a in addrs {
        e.extend_from_slice(&a);
    }
    e
}

/// struct ip_vs_sync_mesg in front of `body`.
fn v1_message(syncid: u8, nr: u8, body: &[u8]) -> Vec<u8> {
    let size = (8 + body.len()) as u16;
    let mut m = vec![0, syncid];
    m.extend_from_slice(&size.to_be_bytes());
    m.extend_from_slice(&[nr, 1, 0, 0]);
    m.extend_from_slice(body);
    m
}

/// A v6 entry: struct ip_vs_sync_v6, the v4 layout up to `timeout`, then
/// three `struct in6_addr`.
#[allow(clippy::too_many_arguments)]
fn v6_entry(size: u16, proto: u8, flags: u32, state: u16, ports: [u16; 3], fwmark: u32, timeout: u32, addrs: [Ipv6Addr; 3]) -> Vec<u8> {
    let mut e = vec![1u8, proto]; // type: STYPE_F_INET6
    e.extend_from_slice(&size.to_be_bytes());
    e.extend_from_slice(&flags.to_be_bytes());
    e.extend_from_slice(&state.to_be_bytes());
    for p in ports {
        e.extend_from_slice(&p.to_be_bytes());
    }
    e.extend_from_slice(&fwmark.to_be_bytes());
    e.extend_from_slice(&timeout.to_be_bytes());
    for a in addrs {
        e.extend_from_slice(&a.octets());
    }
    e
}

fn ip4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn ip6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

const C: [u8; 4] = [198, 51, 100, 7];
const V: [u8; 4] = [10, 0, 0, 100];
const D: [u8; 4] = [192, 168, 10, 1];

fn established() -> Vec<u8> {
    // TCP MASQ (flags 0), state ESTABLISHED (1), 900 s
    v4_entry(36, 6, 0x0000_0000, 1, [40000, 80, 8080], 0, 900, [C, V, D])
}

#[test]
fn a_kernel_v1_message_decodes_field_by_field() {
    let m = v1_message(5, 1, &established());
    assert_eq!(m.len(), 44);
    let d = decode(&m, 5);
    assert_eq!((d.version, d.syncid, d.dropped, d.skipped.len()), (Some(Version::V1), 5, None, 0));
    assert_eq!(d.conns.len(), 1);
    let c = &d.conns[0];
    assert_eq!((c.protocol, c.state, c.cport, c.vport, c.dport, c.timeout), (6, 1, 40000, 80, 8080, 900));
    assert_eq!((c.caddr, c.vaddr, c.daddr), (ip4(C), ip4(V), ip4(D)));
    // The backup keeps the bits of IP_VS_CONN_F_BACKUP_MASK and adds SYNC.
    assert_eq!(c.flags, 0x0020);
    assert_eq!(c.seq, None);
}

#[test]
fn flags_outside_the_backup_mask_are_dropped_on_receive() {
    // HASHED 0x40, ONE_PACKET 0x2000, tunnel bits 0x10000 are not taken;
    // DROUTE 3, NOOUTPUT 0x80, INACTIVE 0x100, NO_CPORT 0x800, TEMPLATE 0x1000 are.
    let e = v4_entry(36, 6, 0x0001_3000 | 0x40 | 0x80 | 0x100 | 0x800 | 3, 0, [0, 80, 80], 0, 60, [C, V, D]);
    let d = decode(&v1_message(0, 1, &e), 0);
    assert_eq!(d.conns[0].flags, 0x1000 | 0x80 | 0x100 | 0x800 | 3 | 0x20);
}

#[test]
fn seq_pe_options_and_padding_between_entries() {
    // Entry 1: SEQ_DATA option (type 1, len 24) -> 36 + 26 = 62 bytes, padded to 64.
    let mut e1 = v4_entry(62, 6, 0x0400, 1, [1111, 80, 80], 0, 900, [C, V, D]);
    e1.extend_from_slice(&[1, 24]);
    for v in [1u32, 2, 3, 4, 5, 6] {
        e1.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(e1.len(), 62);
    // Entry 2: an optional unknown option (type 5 | IPVS_OPT_F_PARAM 0x40), 3 bytes.
    let mut e2 = v4_entry(36 + 5, 17, 0, 0, [2222, 53, 53], 0, 300, [C, V, D]);
    e2.extend_from_slice(&[5 | 0x40, 3, 9, 9, 9]);
    let mut body = e1.clone();
    body.extend_from_slice(&[0, 0]); // 32-bit alignment
    body.extend_from_slice(&e2);
    let d = decode(&v1_message(0, 2, &body), 0);
    assert_eq!(d.dropped, None);
    assert_eq!(d.conns.len(), 2);
    let s = d.conns[0].seq.unwrap();
    assert_eq!(
        (s.in_seq.init_seq, s.in_seq.delta, s.in_seq.previous_delta, s.out_seq.init_seq, s.out_seq.delta, s.out_seq.previous_delta),
        (1, 2, 3, 4, 5, 6)
    );
    assert_eq!((d.conns[1].protocol, d.conns[1].cport), (17, 2222));
}

#[test]
fn the_encoder_writes_the_kernels_bytes() {
    let c = SyncConn {
        protocol: 6,
        flags: 0x0000,
        state: 1,
        cport: 40000,
        vport: 80,
        dport: 8080,
        timeout: 900,
        caddr: ip4(C),
        vaddr: ip4(V),
        daddr: ip4(D),
        ..Default::default()
    };
    let msgs = encode_v1(5, 1472, &[c.clone()]);
    assert_eq!(msgs, vec![v1_message(5, 1, &established())]);
    // Two entries with a SEQ option: the second starts 32-bit aligned.
    let s = SyncConn { flags: 0x0400, seq: Some(SeqOptions::default()), ..c.clone() };
    let m = &encode_v1(0, 1472, &[s.clone(), c.clone()])[0];
    assert_eq!(m.len(), 8 + 62 + 2 + 36);
    assert_eq!(&m[8 + 62..8 + 64], &[0, 0]);
    assert_eq!(u16::from_be_bytes([m[2], m[3]]) as usize, m.len());
    assert_eq!(decode(m, 0).conns.len(), 2);
}

#[test]
fn messages_split_at_maxlen_and_at_255_entries() {
    let c = SyncConn { protocol: 17, caddr: ip4(C), vaddr: ip4(V), daddr: ip4(D), ..Default::default() };
    // 1472 bytes: (1472 - 8) / 36 = 40 entries per message.
    let msgs = encode_v1(0, 1472, &vec![c.clone(); 100]);
    assert_eq!(msgs.iter().map(|m| m[4]).collect::<Vec<_>>(), vec![40, 40, 20]);
    assert!(msgs.iter().all(|m| m.len() <= 1472));
    let big = encode_v1(0, 65507, &vec![c; 300]);
    assert_eq!(big.iter().map(|m| m[4]).collect::<Vec<_>>(), vec![255, 45]);
}

#[test]
fn a_kernel_v0_message_decodes() {
    // struct ip_vs_sync_mesg_v0 + struct ip_vs_sync_conn_v0 (+ options when IN_SEQ).
    let mut m = vec![2u8, 9, 0, 0];
    let entry = |flags: u16, cport: u16| {
        let mut e = vec![0u8, 6];
        for p in [cport, 80, 8080] {
            e.extend_from_slice(&p.to_be_bytes());
        }
        for a in [C, V, D] {
            e.extend_from_slice(&a);
        }
        e.extend_from_slice(&flags.to_be_bytes());
        e.extend_from_slice(&1u16.to_be_bytes());
        e
    };
    m.extend(entry(0x0040, 1000)); // HASHED is masked off
    m.extend(entry(0x0400, 2000));
    for v in 10u32..16 {
        m.extend_from_slice(&v.to_be_bytes());
    }
    let size = m.len() as u16;
    m[2..4].copy_from_slice(&size.to_be_bytes());
    assert_eq!(m.len(), 4 + 24 + 48);
    let d = decode(&m, 9);
    assert_eq!((d.version, d.dropped), (Some(Version::V0), None));
    assert_eq!(d.conns.len(), 2);
    assert_eq!((d.conns[0].flags, d.conns[0].cport, d.conns[0].timeout), (0x0020, 1000, 0));
    assert_eq!(d.conns[1].seq.unwrap().out_seq.previous_delta, 15);
    // The v0 encoder writes the same bytes.
    assert_eq!(encode_v0(9, &d.conns.iter().map(|c| SyncConn { flags: c.flags & !0x20, ..c.clone() }).collect::<Vec<_>>()), {
        let mut x = m.clone();
        x[4 + 20..4 + 22].copy_from_slice(&0u16.to_be_bytes());
        x
    });
}

/// An IPv6 connection with a SEQ option and an IPv6 persistence template,
/// as `ip_vs_sync_conn` lays them out for `cp->af == AF_INET6`.
fn v6_pair() -> (Vec<u8>, [Ipv6Addr; 3], [Ipv6Addr; 3]) {
    let conn = [ip6("2001:db8:cafe::7"), ip6("2001:db8::10"), ip6("2001:db8:1::1")];
    // Template of a `-M 64` service: client network, cport 0, dport 0 for
    // a port-0 template of another port (here the service port: 443).
    let tpl = [ip6("2001:db8:cafe::"), ip6("2001:db8::10"), ip6("2001:db8:1::1")];
    // TCP DR (3) ESTABLISHED, IN_SEQ: 72 + 26 = 98 bytes, padded to 100.
    let mut body = v6_entry(98, 6, 0x0400 | 3, 1, [40000, 443, 443], 0, 900, conn);
    body.extend_from_slice(&[1, 24]);
    for v in [11u32, 12, 13, 14, 15, 16] {
        body.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(body.len(), 98);
    body.extend_from_slice(&[0, 0]);
    // TEMPLATE (0x1000) | DROUTE, template state 0, 300 s.
    body.extend(v6_entry(72, 6, 0x1000 | 3, 0, [0, 443, 443], 0, 300, tpl));
    (v1_message(7, 2, &body), conn, tpl)
}

#[test]
fn a_kernel_v6_message_decodes_field_by_field() {
    let (m, conn, tpl) = v6_pair();
    assert_eq!(m.len(), 8 + 100 + 72);
    // The addresses sit at offsets 24, 40 and 56 of each entry.
    assert_eq!(&m[8 + 24..8 + 40], &conn[0].octets());
    assert_eq!(&m[8 + 100 + 56..8 + 100 + 72], &tpl[2].octets());
    let d = decode(&m, 7);
    assert_eq!((d.version, d.dropped, d.skipped.len(), d.conns.len()), (Some(Version::V1), None, 0, 2));
    let c = &d.conns[0];
    assert!(c.is_v6() && !c.is_template());
    assert_eq!((c.protocol, c.state, c.cport, c.vport, c.dport, c.timeout, c.flags), (6, 1, 40000, 443, 443, 900, 0x0400 | 3 | 0x20));
    assert_eq!((c.caddr, c.vaddr, c.daddr), (conn[0].into(), conn[1].into(), conn[2].into()));
    let s = c.seq.unwrap();
    assert_eq!((s.in_seq.init_seq, s.out_seq.previous_delta), (11, 16));
    let t = &d.conns[1];
    assert!(t.is_v6() && t.is_template());
    assert_eq!((t.caddr, t.cport, t.vport, t.dport, t.timeout, t.flags), (tpl[0].into(), 0, 443, 443, 300, 0x1000 | 3 | 0x20));
}

#[test]
fn the_encoder_writes_the_kernels_v6_bytes() {
    let (m, conn, tpl) = v6_pair();
    let c = SyncConn {
        protocol: 6,
        flags: 0x0400 | 3,
        state: 1,
        cport: 40000,
        vport: 443,
        dport: 443,
        timeout: 900,
        caddr: conn[0].into(),
        vaddr: conn[1].into(),
        daddr: conn[2].into(),
        seq: Some(SeqOptions {
            in_seq: Seq { init_seq: 11, delta: 12, previous_delta: 13 },
            out_seq: Seq { init_seq: 14, delta: 15, previous_delta: 16 },
        }),
        ..Default::default()
    };
    let t = SyncConn {
        protocol: 6,
        flags: 0x1000 | 3,
        state: 0,
        cport: 0,
        vport: 443,
        dport: 443,
        timeout: 300,
        caddr: tpl[0].into(),
        vaddr: tpl[1].into(),
        daddr: tpl[2].into(),
        ..Default::default()
    };
    assert_eq!((c.v1_len(), t.v1_len()), (98, 72));
    assert_eq!(encode_v1(7, 1472, &[c, t]), vec![m]);
}

#[test]
fn v4_and_v6_entries_share_a_message_and_split_at_maxlen() {
    let v4 = SyncConn { protocol: 17, caddr: ip4(C), vaddr: ip4(V), daddr: ip4(D), ..Default::default() };
    let v6 = SyncConn {
        protocol: 17,
        caddr: ip6("2001:db8::7").into(),
        vaddr: ip6("2001:db8::10").into(),
        daddr: ip6("2001:db8:1::3").into(),
        ..Default::default()
    };
    // (1472 - 8) / 72 = 20 IPv6 entries per message.
    let msgs = encode_v1(0, 1472, &vec![v6.clone(); 50]);
    assert_eq!(msgs.iter().map(|m| m[4]).collect::<Vec<_>>(), vec![20, 20, 10]);
    // Mixed: entry types in order, each at its offset.
    let m = &encode_v1(0, 1472, &[v4.clone(), v6.clone(), v4.clone()])[0];
    assert_eq!(m.len(), 8 + 36 + 72 + 36);
    assert_eq!((m[8], m[8 + 36], m[8 + 36 + 72]), (0, 1, 0));
    let d = decode(m, 0);
    assert_eq!(d.conns.iter().map(SyncConn::is_v6).collect::<Vec<_>>(), [false, true, false]);
    // Version 0 carries IPv4 only (`ip_vs_sync_conn_v0` returns for other families).
    let m0 = encode_v0(0, &[v4.clone(), v6, v4]);
    assert_eq!((m0[0], m0.len()), (2, 4 + 2 * 24));
}

#[test]
fn malformed_v6_entries_are_named_drops() {
    let six = [ip6("2001:db8::7"), ip6("2001:db8::10"), ip6("2001:db8:1::1")];
    // A v6 entry whose size covers a v4 entry only (36..71): -20, the rest
    // of the message is dropped; the v4 entry before it stands.
    for size in [36u16, 40, 71] {
        let mut e = v6_entry(size, 6, 0, 1, [1, 80, 80], 0, 9, six);
        e.truncate(size as usize);
        let mut body = established();
        body.extend_from_slice(&e);
        while body.len() % 4 != 0 {
            body.push(0);
        }
        let d = decode(&v1_message(0, 2, &body), 0);
        assert_eq!((d.conns.len(), d.dropped), (1, Some(DropReason::EntryTooShort)), "size {size}");
    }
    // Its size runs past the message (only 50 bytes of it are there).
    let mut e = v6_entry(72, 6, 0, 1, [1, 80, 80], 0, 9, six);
    e.truncate(50);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::EntryBeyondMessage));
    // Any type with the INET6 bit is IPv6 (`s->v6.type & STYPE_F_INET6`).
    let mut e = v6_entry(72, 6, 0, 1, [1, 80, 80], 0, 9, six);
    e[0] = 3;
    assert!(decode(&v1_message(0, 1, &e), 0).conns[0].is_v6());
    // Options after the 72 bytes are checked as after 36: cut, zero length, too long.
    let mut e = v6_entry(73, 6, 0, 1, [1, 80, 80], 0, 9, six);
    e.push(1);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::OptionTruncated));
    let mut e = v6_entry(76, 6, 0, 1, [1, 80, 80], 0, 9, six);
    e.extend_from_slice(&[1, 0, 0, 0]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::OptionBadLength));
    let mut e = v6_entry(78, 6, 0, 1, [1, 80, 80], 0, 9, six);
    e.extend_from_slice(&[1, 4, 0, 0, 0, 0]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::BadSeqOption));
    // An unknown mandatory option skips the entry alone.
    let mut e = v6_entry(75, 6, 0, 1, [1, 80, 80], 0, 9, six);
    e.extend_from_slice(&[5, 1, 0]);
    let d = decode(&v1_message(0, 1, &e), 0);
    assert_eq!((d.conns.len(), d.skipped.clone(), d.dropped), (0, vec![DropReason::UnknownMandatoryOption], None));
}

fn dropped(m: &[u8], syncid: u8) -> Option<DropReason> {
    decode(m, syncid).dropped
}

#[test]
fn malformed_messages_are_named_drops() {
    let good = v1_message(5, 1, &established());
    assert_eq!(dropped(&good[..3], 0), Some(DropReason::HeaderTooShort));
    assert_eq!(dropped(&good[..40], 0), Some(DropReason::BadSize));
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(dropped(&longer, 0), Some(DropReason::BadSize));
    assert_eq!(dropped(&good, 6), Some(DropReason::ForeignSyncId));
    assert_eq!(dropped(&good, 0), None, "syncid 0 takes every syncid");
    // nr_conns says 2, only one is there.
    assert_eq!(dropped(&v1_message(0, 2, &established()), 0), Some(DropReason::EntryTruncated));
    // Entry size beyond the message.
    let e = v4_entry(60, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::EntryBeyondMessage));
    // Entry version bits.
    let e = v4_entry(0x1000 | 36, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::EntryBadVersion));
    // Entry type 2 (neither v4 nor the INET6 bit).
    let mut e = established();
    e[0] = 2;
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::EntryBadType));
    // Entry size below the fixed part.
    let e = v4_entry(20, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::EntryTooShort));
    // An option header cut after its type byte.
    let mut e = v4_entry(37, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    e.push(1);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::OptionTruncated));
    // Zero-length option; option past the entry.
    for opt in [[1u8, 0, 0, 0], [1, 30, 0, 0]] {
        let mut e = v4_entry(40, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
        e.extend_from_slice(&opt);
        assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::OptionBadLength), "{opt:?}");
    }
    // SEQ option of the wrong length; twice.
    let mut e = v4_entry(42, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    e.extend_from_slice(&[1, 4, 0, 0, 0, 0]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::BadSeqOption));
    let mut e = v4_entry(36 + 52, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    for _ in 0..2 {
        e.extend_from_slice(&[1, 24]);
        e.extend_from_slice(&[0; 24]);
    }
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::BadSeqOption));
    // PE name longer than IP_VS_PENAME_MAXLEN (16); PE data twice.
    let mut e = v4_entry(36 + 19, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    e.extend_from_slice(&[3, 17]);
    e.extend_from_slice(&[b'x'; 17]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::BadPeName));
    let mut e = v4_entry(36 + 6, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    e.extend_from_slice(&[2, 1, 7, 2, 1, 7]);
    assert_eq!(dropped(&v1_message(0, 1, &e), 0), Some(DropReason::BadPeData));
    // v0: entry cut; options cut.
    let mut m = vec![1u8, 0, 0, 14];
    m.extend_from_slice(&[0; 10]);
    assert_eq!(dropped(&m, 0), Some(DropReason::V0EntryTruncated));
    let mut m = vec![1u8, 0, 0, 28];
    m.extend_from_slice(&[0; 24]);
    m[4 + 20..4 + 22].copy_from_slice(&0x0400u16.to_be_bytes());
    assert_eq!(dropped(&m, 0), Some(DropReason::V0EntryTruncated));
}

#[test]
fn entries_the_receiver_cannot_use_are_skipped_alone() {
    let mut body = Vec::new();
    let mut push = |e: Vec<u8>| {
        body.extend_from_slice(&e);
        while body.len() % 4 != 0 {
            body.push(0);
        }
    };
    // IPv6 entry (type bit 0), 72 bytes, TCP state 11: the same checks.
    let six = [ip6("2001:db8::7"), ip6("2001:db8::10"), ip6("2001:db8:1::1")];
    push(v6_entry(72, 6, 0, 11, [1, 80, 80], 0, 9, six));
    // Unknown mandatory option 5.
    let mut e = v4_entry(39, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    e.extend_from_slice(&[5, 1, 0]);
    push(e);
    // Protocol 47 (no IPVS handler); TCP state 11 (= IP_VS_TCP_S_LAST); UDP state 1.
    push(v4_entry(36, 47, 0, 0, [1, 80, 80], 0, 9, [C, V, D]));
    push(v4_entry(36, 6, 0, 11, [1, 80, 80], 0, 9, [C, V, D]));
    push(v4_entry(36, 17, 0, 1, [1, 53, 53], 0, 9, [C, V, D]));
    // PE data without a name.
    let mut e = v4_entry(39, 6, 0, 1, [1, 80, 80], 0, 9, [C, V, D]);
    e.extend_from_slice(&[2, 1, 7]);
    push(e);
    // A template in any state is taken (the kernel only logs a bad one).
    push(v4_entry(36, 6, 0x1000, 7, [0, 443, 443], 0, 120, [C, V, D]));
    push(established());
    let d = decode(&v1_message(0, 8, &body), 0);
    assert_eq!(d.dropped, None);
    assert_eq!(
        d.skipped,
        vec![
            DropReason::InvalidState,
            DropReason::UnknownMandatoryOption,
            DropReason::UnsupportedProtocol,
            DropReason::InvalidState,
            DropReason::InvalidState,
            DropReason::PeUnsupported
        ]
    );
    assert_eq!(d.conns.len(), 2);
    assert!(d.conns[0].is_template());
    assert_eq!(d.conns[1].cport, 40000);
}

#[test]
fn a_message_that_is_not_v1_is_read_as_v0() {
    // version 2 in the v1 position: the kernel takes the old format, where
    // byte 0 (0 here) is nr_conns: nothing to install, nothing dropped.
    let mut m = v1_message(0, 1, &established());
    m[5] = 2;
    let d = decode(&m, 0);
    assert_eq!((d.version, d.conns.len(), d.dropped), (Some(Version::V0), 0, None));
}

fn any_conn() -> impl Strategy<Value = SyncConn> {
    (
        (prop_oneof![Just(6u8), Just(17u8)], any::<Option<[u128; 3]>>()),
        any::<bool>(),
        any::<bool>(),
        0u16..11,
        any::<(u16, u16, u16)>(),
        any::<u32>(),
        any::<(u32, u32, u32)>(),
        any::<[u32; 6]>(),
    )
        .prop_map(|((proto, six), tpl, seq, state, (cport, vport, dport), timeout, (a, b, c), s)| {
            let state = if proto == 17 && !tpl { 0 } else { state };
            let mut flags = 0x0020 | if tpl { 0x1000 } else { 0 };
            let seq = seq.then(|| {
                flags |= 0x0400;
                SeqOptions {
                    in_seq: Seq { init_seq: s[0], delta: s[1], previous_delta: s[2] },
                    out_seq: Seq { init_seq: s[3], delta: s[4], previous_delta: s[5] },
                }
            });
            let mut conn = SyncConn {
                protocol: proto,
                flags,
                state,
                cport,
                vport,
                dport,
                timeout,
                caddr: IpAddr::V4(a.into()),
                vaddr: IpAddr::V4(b.into()),
                daddr: IpAddr::V4(c.into()),
                seq,
                ..Default::default()
            };
            if let Some([a, b, c]) = six {
                (conn.caddr, conn.vaddr, conn.daddr) = (IpAddr::V6(a.into()), IpAddr::V6(b.into()), IpAddr::V6(c.into()));
            }
            conn
        })
}

proptest! {
    #[test]
    fn round_trip(conns in proptest::collection::vec(any_conn(), 0..300), maxlen in 100usize..3000, syncid in any::<u8>()) {
        let msgs = encode_v1(syncid, maxlen, &conns);
        let mut back = Vec::new();
        for m in &msgs {
            prop_assert!(m.len() <= maxlen.max(8 + 72 + 26));
            let d = decode(m, syncid);
            prop_assert_eq!(d.dropped, None);
            prop_assert!(d.skipped.is_empty());
            back.extend(d.conns);
        }
        prop_assert_eq!(back, conns);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), syncid in any::<u8>()) {
        let d = decode(&bytes, syncid);
        prop_assert!(d.conns.len() <= 255);
    }

    #[test]
    fn corrupted_messages_never_panic(conns in proptest::collection::vec(any_conn(), 1..20), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let mut m = encode_v1(0, 1472, &conns).remove(0);
        for (at, v) in flips {
            let i = at % m.len();
            m[i] = v;
        }
        let n = m.len();
        let _ = decode(&m, 0);
        // Keep the size field consistent so the entry parser is reached.
        let cut = cut % (n + 1);
        let mut m2 = m[..cut].to_vec();
        if m2.len() >= 4 {
            let l = m2.len() as u16;
            m2[2..4].copy_from_slice(&l.to_be_bytes());
        }
        let _ = decode(&m2, 0);
    }
}
