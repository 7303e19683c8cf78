//! Frame construction for the traffic generator: thin layers over
//! [`lvsnic_model::wire::build`] for what the generator needs beyond it (TCP and IP
//! options, zero UDP checksums, fragments, IPv6, LLDP, DHCP, application
//! payloads) and the deliberately malformed frames. TCP and UDP frames are
//! IPv4 or IPv6 as their [`L3`] addresses are.

use lvsnic_model::rng::SplitMix64;
use lvsnic_model::wire::build::{self, pad_min};
use lvsnic_model::wire::icmpv6;
use lvsnic_model::wire::{
    checksum, ArpOperation, ArpRepr, EthernetRepr, Icmpv4Repr, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr,
    MacAddr, TcpPacket, TcpRepr, UdpPacket, UdpRepr, ETHERTYPE_IPV4, ETHERTYPE_IPV6, IPPROTO_TCP,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// EtherType of LLDP (IEEE 802.1AB).
const ETHERTYPE_LLDP: u16 = 0x88CC;

/// Link layer of a frame.
#[derive(Clone, Copy, Debug)]
pub(super) struct L2 {
    pub src: MacAddr,
    pub dst: MacAddr,
    pub vlan: Option<u16>,
}

impl L2 {
    fn repr(&self, ethertype: u16) -> EthernetRepr {
        EthernetRepr { src: self.src, dst: self.dst, vlan_tci: self.vlan, ethertype }
    }

    fn len(&self) -> usize {
        if self.vlan.is_some() {
            18
        } else {
            14
        }
    }
}

/// Network layer of an IPv4 or IPv6 frame (protocol and lengths follow
/// from the builder used). For IPv6, `ttl` is the Hop Limit and `ident` and
/// `df` are not used (the Flow Label is 0).
#[derive(Clone, Copy, Debug)]
pub(super) struct L3 {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ttl: u8,
    pub ident: u16,
    pub df: bool,
}

impl L3 {
    /// Both addresses IPv6.
    pub fn v6(&self) -> Option<(Ipv6Addr, Ipv6Addr)> {
        match (self.src, self.dst) {
            (IpAddr::V6(s), IpAddr::V6(d)) => Some((s, d)),
            _ => None,
        }
    }

    fn repr(&self) -> Ipv4Repr {
        let (IpAddr::V4(src_addr), IpAddr::V4(dst_addr)) = (self.src, self.dst) else {
            panic!("an IPv4 header for {} -> {}", self.src, self.dst);
        };
        Ipv4Repr {
            src_addr,
            dst_addr,
            protocol: 0,
            payload_len: 0,
            ttl: self.ttl,
            tos: 0,
            ident: self.ident,
            dont_frag: self.df,
        }
    }

    fn repr6(&self, (src_addr, dst_addr): (Ipv6Addr, Ipv6Addr)) -> Ipv6Repr {
        Ipv6Repr {
            src_addr,
            dst_addr,
            next_header: IpProtocol::from(0),
            payload_len: 0,
            hop_limit: self.ttl,
            traffic_class: 0,
            flow_label: 0,
        }
    }
}

/// TCP options of a client SYN (Windows/Linux without timestamps): MSS,
/// NOP, window scale 8, NOP, NOP, SACK permitted (12 bytes).
pub(super) fn client_syn_options(mss: u16) -> [u8; 12] {
    let m = mss.to_be_bytes();
    [2, 4, m[0], m[1], 1, 3, 3, 8, 1, 1, 4, 2]
}

/// TCP options of a server SYN-ACK: MSS, NOP, NOP, SACK permitted, NOP,
/// window scale 7 (12 bytes).
pub(super) fn server_synack_options(mss: u16) -> [u8; 12] {
    let m = mss.to_be_bytes();
    [2, 4, m[0], m[1], 1, 1, 4, 2, 1, 3, 3, 7]
}

/// IPv4 Timestamp option (RFC 791, type 68) with room for two timestamps,
/// none recorded yet (12 bytes).
pub(super) const IP_OPT_TIMESTAMP: [u8; 12] = [0x44, 12, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// IPv4 Record Route option (type 7, 9 slots, as `ping -R` sends it) plus
/// an End of Option List byte (40 bytes).
pub(super) fn ip_opt_record_route() -> [u8; 40] {
    let mut o = [0u8; 40];
    o[0] = 7;
    o[1] = 39;
    o[2] = 4;
    o
}

/// A TCP/IPv4 frame with optional TCP options and IPv4 options, all
/// checksums right, padded to the Ethernet minimum; a TCP/IPv6 frame (no
/// extension headers, `ip_opts` empty) when `l3`'s addresses are IPv6.
pub(super) fn tcp(l2: &L2, l3: &L3, t: &TcpRepr, tcp_opts: &[u8], ip_opts: &[u8], payload: &[u8]) -> Vec<u8> {
    if let Some(a) = l3.v6() {
        debug_assert!(ip_opts.is_empty(), "IPv4 options on an IPv6 packet");
        let mut body = Vec::with_capacity(tcp_opts.len() + payload.len());
        body.extend_from_slice(tcp_opts);
        body.extend_from_slice(payload);
        let mut f = build::tcp6_frame(&l2.repr(ETHERTYPE_IPV6), &l3.repr6(a), t, &body);
        if !tcp_opts.is_empty() {
            let mut p = TcpPacket::new_unchecked(&mut f[l2.len() + 40..]);
            p.set_header_len((20 + tcp_opts.len()) as u8);
            p.fill_checksum_v6(a.0, a.1);
        }
        pad_min(&mut f);
        return f;
    }
    let mut f = if tcp_opts.is_empty() {
        build::tcp_frame(&l2.repr(ETHERTYPE_IPV4), &l3.repr(), t, payload)
    } else {
        let mut body = Vec::with_capacity(tcp_opts.len() + payload.len());
        body.extend_from_slice(tcp_opts);
        body.extend_from_slice(payload);
        let mut f = build::tcp_frame(&l2.repr(ETHERTYPE_IPV4), &l3.repr(), t, &body);
        let ip = l3.repr();
        let mut p = TcpPacket::new_unchecked(&mut f[l2.len() + 20..]);
        p.set_header_len((20 + tcp_opts.len()) as u8);
        p.fill_checksum(ip.src_addr, ip.dst_addr);
        f
    };
    if !ip_opts.is_empty() {
        insert_ip_options(&mut f, l2.len(), ip_opts);
    }
    pad_min(&mut f);
    f
}

/// A UDP/IPv4 frame, padded; `zero_checksum` stores 0 ("no checksum",
/// RFC 768) instead of the computed checksum. A UDP/IPv6 frame when `l3`'s
/// addresses are IPv6 (where a zero checksum is not allowed, RFC 8200
/// section 8.1).
pub(super) fn udp(l2: &L2, l3: &L3, sport: u16, dport: u16, payload: &[u8], zero_checksum: bool) -> Vec<u8> {
    let u = UdpRepr { src_port: sport, dst_port: dport };
    let mut f = match l3.v6() {
        Some(a) => {
            debug_assert!(!zero_checksum, "a zero UDP checksum over IPv6");
            build::udp6_frame(&l2.repr(ETHERTYPE_IPV6), &l3.repr6(a), &u, payload)
        }
        None => build::udp_frame(&l2.repr(ETHERTYPE_IPV4), &l3.repr(), &u, payload),
    };
    if zero_checksum {
        UdpPacket::new_unchecked(&mut f[l2.len() + 20..]).set_checksum(0);
    }
    pad_min(&mut f);
    f
}

/// An ICMP/IPv4 frame, padded, with optional IPv4 options.
pub(super) fn icmp(l2: &L2, l3: &L3, i: &Icmpv4Repr, data: &[u8], ip_opts: &[u8]) -> Vec<u8> {
    let mut f = build::icmp_frame(&l2.repr(ETHERTYPE_IPV4), &l3.repr(), i, data);
    if !ip_opts.is_empty() {
        insert_ip_options(&mut f, l2.len(), ip_opts);
    }
    pad_min(&mut f);
    f
}

/// An ARP frame, padded.
pub(super) fn arp(l2: &L2, op: ArpOperation, sender: (MacAddr, Ipv4Addr), target: (MacAddr, Ipv4Addr)) -> Vec<u8> {
    let a =
        ArpRepr { operation: op, sender_mac: sender.0, sender_ip: sender.1, target_mac: target.0, target_ip: target.1 };
    let mut f = build::arp_frame(&l2.repr(0), &a);
    pad_min(&mut f);
    f
}

/// Inserts `opts` (a multiple of 4 bytes) after the 20-byte IPv4 header at
/// `l3`, fixing IHL, Total Length and the header checksum. The L4 checksum
/// does not cover IP options, so it stays right.
fn insert_ip_options(f: &mut Vec<u8>, l3: usize, opts: &[u8]) {
    debug_assert!(opts.len() & 3 == 0 && opts.len() <= 40);
    let at = l3 + 20;
    f.splice(at..at, opts.iter().copied());
    let mut p = Ipv4Packet::new_unchecked(&mut f[l3..]);
    let tot = p.total_len() + opts.len() as u16;
    p.set_header_len((20 + opts.len()) as u8);
    p.set_total_len(tot);
    p.fill_checksum();
}

/// Splits the unpadded IPv4 frame `f` (header at `l3`, no options) into two
/// fragments, the first carrying `first` bytes of payload (a multiple of 8).
pub(super) fn fragment_in_two(f: &[u8], l3: usize, first: usize) -> [Vec<u8>; 2] {
    debug_assert!(first & 7 == 0);
    let tot = u16::from_be_bytes([f[l3 + 2], f[l3 + 3]]) as usize;
    let payload = &f[l3 + 20..l3 + tot];
    let mk = |data: &[u8], offset: usize, more: bool| {
        let mut g = Vec::with_capacity(l3 + 20 + data.len());
        g.extend_from_slice(&f[..l3 + 20]);
        g.extend_from_slice(data);
        let mut p = Ipv4Packet::new_unchecked(&mut g[l3..]);
        p.set_total_len((20 + data.len()) as u16);
        p.set_dont_frag(false);
        p.set_more_frags(more);
        p.set_frag_offset_bytes(offset as u16);
        p.fill_checksum();
        pad_min(&mut g);
        g
    };
    [mk(&payload[..first], 0, true), mk(&payload[first..], first, false)]
}

/// The IP datagram of `frame` (after the Ethernet header at `l3`) as a
/// host `hops` routers further would receive it and quote it in an ICMP
/// error: TTL or hop limit lowered (IPv4: header checksum fixed), cut to
/// what an ICMPv4 (548 bytes) or ICMPv6 (1232) error holds.
pub(super) fn quote_received(frame: &[u8], l3: usize, hops: u8) -> Vec<u8> {
    if frame[l3] >> 4 == 6 {
        // IPv6: Payload Length, the hop limit (no header checksum); as much
        // as an ICMPv6 error can quote (`icmp6_send`: 1280 bytes in all).
        let tot = 40 + u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]) as usize;
        let end = (l3 + tot).min(frame.len());
        let mut q = frame[l3..end].to_vec();
        q[7] = q[7].saturating_sub(hops).max(1);
        q.truncate(icmpv6::ERROR_MAX_QUOTE);
        return q;
    }
    let tot = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]) as usize;
    let end = (l3 + tot).min(frame.len());
    let mut q = frame[l3..end].to_vec();
    let mut p = Ipv4Packet::new_unchecked(&mut q[..]);
    let ttl = p.ttl().saturating_sub(hops).max(1);
    p.set_ttl(ttl);
    p.fill_checksum();
    q.truncate(ICMP_QUOTE_MAX);
    q
}

/// The most of the offending datagram an ICMPv4 error quotes here: 576
/// bytes in all (RFC 1812 §4.3.2.3), less the IPv4 and ICMP headers.
const ICMP_QUOTE_MAX: usize = 576 - 28;

/// An ICMPv6 error (RFC 4443: type, code, the 32-bit `info` word) quoting
/// `quote`, from `l3`'s source to its destination with its hop limit,
/// over `l2` (VLAN tag included), padded.
pub(super) fn icmp6_error(l2: &L2, l3: &L3, typ: u8, code: u8, info: u32, quote: &[u8]) -> Vec<u8> {
    let a = l3.v6().expect("an ICMPv6 error between IPv6 addresses");
    let mut msg = Vec::with_capacity(icmpv6::HEADER_LEN + quote.len());
    msg.extend_from_slice(&[typ, code, 0, 0]);
    msg.extend_from_slice(&info.to_be_bytes());
    msg.extend_from_slice(quote);
    let mut f = build::icmpv6_frame(&l2.repr(ETHERTYPE_IPV6), &l3.repr6(a), &msg);
    pad_min(&mut f);
    f
}

// ---------------------------------------------------------------- payloads

/// Cyclic filler bytes for message bodies (printable, fixed for every run).
pub(super) struct Filler(Vec<u8>);

impl Filler {
    pub(super) const LEN: usize = 1 << 16;

    pub(super) fn new() -> Self {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<>/=\" \n";
        let mut r = SplitMix64::new(0x5EED_F111);
        Filler((0..Self::LEN).map(|_| ALPHABET[r.below(ALPHABET.len() as u64) as usize]).collect())
    }

    /// Appends `len` bytes starting at cyclic offset `off`.
    pub(super) fn extend(&self, out: &mut Vec<u8>, off: usize, len: usize) {
        let mut off = off % Self::LEN;
        let mut left = len;
        while left > 0 {
            let n = left.min(Self::LEN - off);
            out.extend_from_slice(&self.0[off..off + n]);
            left -= n;
            off = 0;
        }
    }
}

/// An application message: a text head followed by filler, `len` bytes in
/// all; `off` bytes of it are sent (and delivered) so far.
#[derive(Clone, Debug, Default)]
pub(super) struct Msg {
    pub head: Vec<u8>,
    pub len: u32,
    pub off: u32,
    /// The message ends with an empty line (`\r\n\r\n`), as an HTTP head does.
    pub blank_line_end: bool,
}

impl Msg {
    pub(super) fn left(&self) -> u32 {
        self.len - self.off
    }

    /// Bytes `off..off + n` of the message.
    pub(super) fn bytes(&self, filler: &Filler, off: u32, n: u32) -> Vec<u8> {
        let (off, n) = (off as usize, n as usize);
        let mut v = Vec::with_capacity(n);
        let h = self.head.len();
        if off < h {
            let e = h.min(off + n);
            v.extend_from_slice(&self.head[off..e]);
        }
        let done = v.len();
        if done < n {
            let body_off = off + done - h;
            filler.extend(&mut v, body_off, n - done);
        }
        if self.blank_line_end {
            let len = self.len as usize;
            for p in off.max(len - 4)..(off + n).min(len) {
                v[p - off] = b"\r\n\r\n"[p + 4 - len];
            }
        }
        v
    }
}

/// An HTTP/1.1 request of about `size` bytes (GET, or POST with a body when
/// `upload`).
pub(super) fn http_request(host: IpAddr, path_id: u64, size: u32, upload: bool) -> Msg {
    let host = match host {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    if upload {
        // Content-Length is printed with a fixed width, so the head's length
        // does not depend on it.
        let head = |body: usize| {
            format!(
                "POST /upload/{path_id:x} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: lvsnic-traffic/1\r\nContent-Type: application/octet-stream\r\nContent-Length: {body:>8}\r\n\r\n"
            )
            .into_bytes()
        };
        let hl = head(0).len();
        let body = (size as usize).saturating_sub(hl).max(1);
        return Msg { head: head(body), len: (hl + body) as u32, off: 0, blank_line_end: false };
    }
    let head = format!(
        "GET /item/{path_id:x} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: lvsnic-traffic/1\r\nAccept: */*\r\nCookie: s="
    )
    .into_bytes();
    let len = (size as usize).max(head.len() + 4);
    // The cookie runs into the filler; the blank line ends the message.
    Msg { head, len: len as u32, off: 0, blank_line_end: true }
}

/// An HTTP/1.1 response of `size` bytes.
pub(super) fn http_response(size: u32) -> Msg {
    let head = |body: usize| {
        format!("HTTP/1.1 200 OK\r\nServer: rs\r\nContent-Type: text/html\r\nContent-Length: {body:>8}\r\n\r\n")
            .into_bytes()
    };
    let hl = head(0).len();
    let body = (size as usize).saturating_sub(hl);
    Msg { head: head(body), len: (hl + body) as u32, off: 0, blank_line_end: false }
}

fn push_qname(v: &mut Vec<u8>, name: &str) {
    for label in name.split('.') {
        v.push(label.len() as u8);
        v.extend_from_slice(label.as_bytes());
    }
    v.push(0);
}

/// A DNS query (RFC 1035) for `name`, type A (1) or TXT (16).
pub(super) fn dns_query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut v = Vec::with_capacity(18 + name.len());
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    push_qname(&mut v, name);
    v.extend_from_slice(&qtype.to_be_bytes());
    v.extend_from_slice(&[0, 1]);
    v
}

/// A DNS query padded to `total` bytes with an EDNS(0) OPT record carrying
/// a Padding option (RFC 6891, RFC 7830); at least the unpadded size.
pub(super) fn dns_query_padded(id: u16, name: &str, qtype: u16, total: usize) -> Vec<u8> {
    let mut v = dns_query(id, name, qtype);
    v[10..12].copy_from_slice(&1u16.to_be_bytes()); // ARCOUNT
    let pad = total.saturating_sub(v.len() + 11 + 4);
    v.extend_from_slice(&[0, 0, 41, 0x10, 0x00, 0, 0, 0, 0]); // root, OPT, 4096-byte payload
    v.extend_from_slice(&((4 + pad) as u16).to_be_bytes());
    v.extend_from_slice(&[0, 12]);
    v.extend_from_slice(&(pad as u16).to_be_bytes());
    v.resize(v.len() + pad, 0);
    v
}

/// An SSH binary packet (RFC 4253 section 6) holding a KEXINIT (section
/// 7.1) with OpenSSH-like algorithm lists.
pub(super) fn ssh_kexinit(r: &mut SplitMix64) -> Vec<u8> {
    let mut payload = vec![20u8];
    payload.extend_from_slice(&r.next_u64().to_be_bytes());
    payload.extend_from_slice(&r.next_u64().to_be_bytes());
    let lists: [&str; 10] = [
        "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,diffie-hellman-group14-sha256,ext-info-c",
        "ssh-ed25519,ecdsa-sha2-nistp256,rsa-sha2-512,rsa-sha2-256",
        "chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr,aes128-gcm@openssh.com",
        "chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr,aes128-gcm@openssh.com",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
        "none,zlib@openssh.com",
        "none,zlib@openssh.com",
        "",
        "",
    ];
    for l in lists {
        payload.extend_from_slice(&(l.len() as u32).to_be_bytes());
        payload.extend_from_slice(l.as_bytes());
    }
    payload.extend_from_slice(&[0, 0, 0, 0, 0]);
    // 4 to 11 bytes of padding so that length fields and all are a multiple of 8.
    let mut pad = 8 - (5 + payload.len()) % 8;
    if pad < 4 {
        pad += 8;
    }
    let mut v = Vec::with_capacity(5 + payload.len() + pad);
    v.extend_from_slice(&((1 + payload.len() + pad) as u32).to_be_bytes());
    v.push(pad as u8);
    v.extend_from_slice(&payload);
    v.resize(v.len() + pad, 0);
    v
}

/// The answer to `query`: `a_records` A records, or one TXT record of
/// `txt_len` bytes when the query asked for TXT.
pub(super) fn dns_response(query: &[u8], a_records: u16, txt_len: usize, r: &mut SplitMix64) -> Vec<u8> {
    let mut v = query.to_vec();
    v[2] = 0x81;
    v[3] = 0x80;
    let qtype = u16::from_be_bytes([query[query.len() - 4], query[query.len() - 3]]);
    let ttl = (60 + r.below(3600) as u32).to_be_bytes();
    if qtype == 16 {
        v[6..8].copy_from_slice(&1u16.to_be_bytes());
        let chunks = txt_len.div_ceil(255).max(1);
        let rdlen = txt_len + chunks;
        v.extend_from_slice(&[0xc0, 0x0c, 0, 16, 0, 1]);
        v.extend_from_slice(&ttl);
        v.extend_from_slice(&(rdlen as u16).to_be_bytes());
        let mut left = txt_len;
        for _ in 0..chunks {
            let n = left.min(255);
            v.push(n as u8);
            v.extend((0..n).map(|i| b'a' + ((i * 7 + left) % 26) as u8));
            left -= n;
        }
    } else {
        v[6..8].copy_from_slice(&a_records.to_be_bytes());
        for _ in 0..a_records {
            v.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1]);
            v.extend_from_slice(&ttl);
            v.extend_from_slice(&[0, 4]);
            v.extend_from_slice(&(0xCB00_7100u32 | r.below(256) as u32).to_be_bytes());
        }
    }
    v
}

/// `ping`'s 56 data bytes: an 8-byte timestamp then 0x10, 0x11, ...
pub(super) fn ping_data(ts_ns: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(56);
    v.extend_from_slice(&(ts_ns / 1_000_000_000).to_le_bytes()[..4]);
    v.extend_from_slice(&((ts_ns / 1000 % 1_000_000) as u32).to_le_bytes());
    v.extend((0x10u8..0x40).take(48));
    v
}

// ----------------------------------------------------- non-IPv4 frames

/// An ICMPv6 Neighbor Solicitation (RFC 4861) for `target` (the low 24 bits
/// pick the solicited-node group) from `src_mac`, to the solicited-node
/// multicast MAC.
pub(super) fn ipv6_neighbor_solicitation(src_mac: MacAddr, target_low: u32, r: &mut SplitMix64) -> Vec<u8> {
    let mut src = [0u8; 16];
    src[0] = 0xfe;
    src[1] = 0x80;
    src[8..16].copy_from_slice(&r.next_u64().to_be_bytes());
    let mut target = [0u8; 16];
    target[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    target[13..16].copy_from_slice(&target_low.to_be_bytes()[1..]);
    let mut dst = [0u8; 16];
    dst[..2].copy_from_slice(&[0xff, 0x02]);
    dst[11] = 1;
    dst[12] = 0xff;
    dst[13..16].copy_from_slice(&target[13..16]);
    let dst_mac = MacAddr([0x33, 0x33, 0xff, target[13], target[14], target[15]]);
    // ICMPv6 type 135: reserved word, target, source link-layer address option.
    let mut icmp = vec![135, 0, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(&target);
    icmp.extend_from_slice(&[1, 1]);
    icmp.extend_from_slice(&src_mac.0);
    ipv6_frame(src_mac, dst_mac, src, dst, 58, 255, icmp)
}

/// An ICMPv6 echo request to `dst_mac` (e.g. the director's MAC).
pub(super) fn ipv6_echo(src_mac: MacAddr, dst_mac: MacAddr, r: &mut SplitMix64) -> Vec<u8> {
    let mut src = [0u8; 16];
    src[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    src[8..16].copy_from_slice(&r.next_u64().to_be_bytes());
    let mut dst = [0u8; 16];
    dst[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    dst[15] = 1;
    let mut icmp = vec![128, 0, 0, 0];
    icmp.extend_from_slice(&(r.below(65536) as u16).to_be_bytes());
    icmp.extend_from_slice(&[0, 1]);
    icmp.extend((0x10u8..0x40).take(48));
    ipv6_frame(src_mac, dst_mac, src, dst, 58, 64, icmp)
}

fn ipv6_frame(
    src_mac: MacAddr,
    dst_mac: MacAddr,
    src: [u8; 16],
    dst: [u8; 16],
    next: u8,
    hop: u8,
    mut l4: Vec<u8>,
) -> Vec<u8> {
    if next == 58 {
        // ICMPv6 checksum over the pseudo-header (RFC 8200 section 8.1).
        let mut ph = Vec::with_capacity(40);
        ph.extend_from_slice(&src);
        ph.extend_from_slice(&dst);
        ph.extend_from_slice(&(l4.len() as u32).to_be_bytes());
        ph.extend_from_slice(&[0, 0, 0, next]);
        let sum = checksum::ones_sum(&l4, checksum::ones_sum(&ph, 0));
        let c = !checksum::fold(sum);
        l4[2..4].copy_from_slice(&c.to_be_bytes());
    }
    let mut f = Vec::with_capacity(14 + 40 + l4.len());
    f.extend_from_slice(&dst_mac.0);
    f.extend_from_slice(&src_mac.0);
    f.extend_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    f.extend_from_slice(&[next, hop]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&l4);
    pad_min(&mut f);
    f
}

/// An LLDP frame (IEEE 802.1AB) from a switch port: chassis ID, port ID,
/// TTL and system name TLVs, to the nearest-bridge group address.
pub(super) fn lldp(switch_mac: MacAddr, port: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(80);
    f.extend_from_slice(&[0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e]);
    f.extend_from_slice(&switch_mac.0);
    f.extend_from_slice(&ETHERTYPE_LLDP.to_be_bytes());
    let tlv = |f: &mut Vec<u8>, t: u16, v: &[u8]| {
        f.extend_from_slice(&((t << 9) | v.len() as u16).to_be_bytes());
        f.extend_from_slice(v);
    };
    let mut chassis = vec![4u8];
    chassis.extend_from_slice(&switch_mac.0);
    tlv(&mut f, 1, &chassis);
    let mut pid = vec![5u8];
    pid.extend_from_slice(format!("Ethernet{port}").as_bytes());
    tlv(&mut f, 2, &pid);
    tlv(&mut f, 3, &120u16.to_be_bytes());
    tlv(&mut f, 5, b"tor-switch-1");
    tlv(&mut f, 0, &[]);
    pad_min(&mut f);
    f
}

/// A DHCPDISCOVER (RFC 2131) broadcast by a host with MAC `mac`.
pub(super) fn dhcp_discover(mac: MacAddr, xid: u32) -> Vec<u8> {
    let mut p = vec![0u8; 240];
    p[0] = 1; // BOOTREQUEST
    p[1] = 1; // Ethernet
    p[2] = 6;
    p[4..8].copy_from_slice(&xid.to_be_bytes());
    p[10] = 0x80; // broadcast flag
    p[28..34].copy_from_slice(&mac.0);
    p[236..240].copy_from_slice(&[99, 130, 83, 99]);
    p.extend_from_slice(&[53, 1, 1, 55, 4, 1, 3, 6, 15, 255]);
    let l2 = L2 { src: mac, dst: MacAddr::BROADCAST, vlan: None };
    let l3 = L3 { src: Ipv4Addr::UNSPECIFIED.into(), dst: Ipv4Addr::BROADCAST.into(), ttl: 64, ident: 0, df: false };
    udp(&l2, &l3, 68, 67, &p, false)
}

// ------------------------------------------------------------ malformed

/// The deliberately malformed frames.
#[derive(Clone, Copy, Debug)]
pub(super) enum Malformed {
    Runt,
    TruncatedIpv4Header,
    BadVersion,
    BadIhl,
    BadHeaderChecksum,
    TotalLenTooLarge,
    TruncatedTcpHeader,
}

/// Turns the valid, unpadded TCP/IPv4 frame `good` (IPv4 at `l3`, no
/// options) into a malformed one of the given kind.
pub(super) fn malform(mut good: Vec<u8>, l3: usize, kind: Malformed, r: &mut SplitMix64) -> Vec<u8> {
    let fix = |g: &mut Vec<u8>| {
        let mut p = Ipv4Packet::new_unchecked(&mut g[l3..]);
        p.fill_checksum();
    };
    match kind {
        Malformed::Runt => {
            good.truncate(6 + r.below(8) as usize);
        }
        Malformed::TruncatedIpv4Header => {
            good.truncate(l3 + 8 + r.below(12) as usize);
        }
        Malformed::BadVersion => {
            good[l3] = if r.chance(1, 2) { 0x65 } else { 0x05 | ((2 + r.below(2) as u8) << 4) };
            fix(&mut good);
            pad_min(&mut good);
        }
        Malformed::BadIhl => {
            good[l3] = 0x40 | r.below(5) as u8;
            pad_min(&mut good);
        }
        Malformed::BadHeaderChecksum => {
            good[l3 + 10] ^= 0x5a;
            good[l3 + 11] ^= 0x0f;
            pad_min(&mut good);
        }
        Malformed::TotalLenTooLarge => {
            let tot = u16::from_be_bytes([good[l3 + 2], good[l3 + 3]]);
            let bigger = tot + 100 + r.below(1000) as u16;
            good[l3 + 2..l3 + 4].copy_from_slice(&bigger.to_be_bytes());
            fix(&mut good);
        }
        Malformed::TruncatedTcpHeader => {
            debug_assert_eq!(good[l3 + 9], IPPROTO_TCP);
            let keep = 4 + r.below(16) as u16;
            good[l3 + 2..l3 + 4].copy_from_slice(&(20 + keep).to_be_bytes());
            good.truncate(l3 + 20 + keep as usize);
            fix(&mut good);
            pad_min(&mut good);
        }
    }
    good
}

/// The deliberately malformed IPv6 frames.
#[derive(Clone, Copy, Debug)]
pub(super) enum Malformed6 {
    /// Fewer than 40 bytes of IPv6 header.
    TruncatedHeader,
    /// Payload Length beyond the end of the frame.
    PayloadLenTooLarge,
    /// Payload Length shorter than the frame's TCP header.
    PayloadLenTooSmall,
    /// A Hop-by-Hop Options header whose length runs past the packet, so
    /// the next header of the chain (Destination Options) is not there.
    HopByHopOverrun,
    /// A Destination Options header whose Next Header is a protocol number
    /// no one has been assigned.
    UnknownNextHeader,
}

/// Turns the valid, unpadded TCP/IPv6 frame `good` (IPv6 at `l3`, no
/// extension headers) into a malformed one of the given kind.
pub(super) fn malform6(mut good: Vec<u8>, l3: usize, kind: Malformed6, r: &mut SplitMix64) -> Vec<u8> {
    let payload_len = Ipv6Packet::new_unchecked(&good[l3..]).payload_len();
    // Inserts the 8-byte extension header `ext` (its Next Header byte
    // first) right after the fixed header, whose Next Header becomes `first`.
    let insert = |g: &mut Vec<u8>, first: IpProtocol, ext: [u8; 8]| {
        let mut p = Ipv6Packet::new_unchecked(&mut g[l3..]);
        p.set_next_header(first);
        p.set_payload_len(payload_len + 8);
        let at = l3 + lvsnic_model::wire::ipv6::HEADER_LEN;
        g.splice(at..at, ext);
    };
    match kind {
        Malformed6::TruncatedHeader => {
            good.truncate(l3 + 8 + r.below(32) as usize);
        }
        Malformed6::PayloadLenTooLarge => {
            let bigger = payload_len + 100 + r.below(1000) as u16;
            Ipv6Packet::new_unchecked(&mut good[l3..]).set_payload_len(bigger);
        }
        Malformed6::PayloadLenTooSmall => {
            let shorter = 4 + r.below(16) as u16;
            Ipv6Packet::new_unchecked(&mut good[l3..]).set_payload_len(shorter);
            pad_min(&mut good);
        }
        Malformed6::HopByHopOverrun => {
            // Hdr Ext Len n: (n + 1) × 8 bytes, at least 24; PadN inside.
            // Next Header: Destination Options, which is not there.
            let n = 2 + r.below(200) as u8;
            insert(&mut good, IpProtocol::HopByHop, [u8::from(IpProtocol::Ipv6Opts), n, 1, 4, 0, 0, 0, 0]);
            pad_min(&mut good);
        }
        Malformed6::UnknownNextHeader => {
            // Unassigned protocol numbers (IANA): 146..=252.
            let unknown = 146 + r.below(107) as u8;
            insert(&mut good, IpProtocol::Ipv6Opts, [unknown, 0, 1, 4, 0, 0, 0, 0]);
            pad_min(&mut good);
        }
    }
    good
}
