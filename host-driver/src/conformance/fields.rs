//! Frames as named header fields, for naming what differs between the
//! kernel's frame and lvsnic's (`eth.dst`, `ip.ttl`, `tcp.csum`,
//! `inner.ip.src` for the header inside an IPIP tunnel,
//! `icmp.quoted.ip.dst` for the header an ICMP error quotes...).
//!
//! A plain byte-offset decoder, independent of the model's wire views:
//! it never fails; bytes it cannot place become a `*.truncated` or
//! `*.payload` field.

use std::net::{Ipv4Addr, Ipv6Addr};

/// One decoded field: its name and its raw bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Dotted field name, prefixed for nested headers (`ip.ttl`,
    /// `inner.ip.src`, `icmp.quoted.ip.dst`).
    pub name: String,
    /// The field's bytes as they are in the frame (network order).
    pub bytes: Vec<u8>,
}

impl Field {
    /// The value as a person reads it (addresses dotted, numbers decimal,
    /// longer fields hex).
    pub fn show(&self) -> String {
        let b = &self.bytes;
        let n = self.name.as_str();
        if b.len() == 4 && (n.ends_with(".src") || n.ends_with(".dst") || n.ends_with("pa")) {
            return Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string();
        }
        if b.len() == 16 && (n.ends_with(".src") || n.ends_with(".dst") || n.ends_with(".target")) {
            let mut a = [0u8; 16];
            a.copy_from_slice(b);
            return Ipv6Addr::from(a).to_string();
        }
        if b.len() == 6 && (n.ends_with(".dst") || n.ends_with(".src") || n.ends_with("ha")) {
            return b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":");
        }
        match b.len() {
            1 => format!("{}", b[0]),
            2 if n.ends_with("csum") || n.ends_with("type") || n.ends_with("frag") => format!("0x{:04x}", u16::from_be_bytes([b[0], b[1]])),
            2 => format!("{}", u16::from_be_bytes([b[0], b[1]])),
            4 if !n.ends_with("rest") => format!("{}", u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            0 => "(none)".into(),
            l if l <= 16 => hex(b),
            l => format!("{}… ({l} bytes)", hex(&b[..16])),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

struct Dec<'a> {
    out: Vec<Field>,
    data: &'a [u8],
}

impl<'a> Dec<'a> {
    /// Takes `len` bytes at `off` as field `name`; false (and a
    /// `truncated` field with what is left) when the frame is shorter.
    fn take(&mut self, prefix: &str, name: &str, off: usize, len: usize) -> bool {
        if off + len <= self.data.len() {
            self.out.push(Field { name: format!("{prefix}{name}"), bytes: self.data[off..off + len].to_vec() });
            true
        } else {
            if off < self.data.len() {
                self.out.push(Field { name: format!("{prefix}truncated"), bytes: self.data[off..].to_vec() });
            }
            false
        }
    }

    fn rest(&mut self, name: String, off: usize, end: usize) {
        let end = end.min(self.data.len());
        if off < end {
            self.out.push(Field { name, bytes: self.data[off..end].to_vec() });
        }
    }

    fn be16(&self, off: usize) -> usize {
        ((self.data[off] as usize) << 8) | self.data[off + 1] as usize
    }

    /// An IPv4 header at `o` and what it carries, up to `end`; returns
    /// where the datagram ends.
    fn ipv4(&mut self, p: &str, o: usize, end: usize) -> usize {
        let names = [("version_ihl", 1), ("tos", 1), ("len", 2), ("id", 2), ("frag", 2), ("ttl", 1), ("proto", 1), ("csum", 2), ("src", 4), ("dst", 4)];
        let mut off = o;
        for (n, l) in names {
            if !self.take(&format!("{p}ip."), n, off, l) {
                return self.data.len();
            }
            off += l;
        }
        let ihl = ((self.data[o] & 0x0f) as usize * 4).max(20);
        self.rest(format!("{p}ip.options"), o + 20, (o + ihl).min(end));
        let total = self.be16(o + 2);
        let dgram_end = if total >= ihl && o + total <= end { o + total } else { end };
        let l4 = o + ihl;
        let frag = self.be16(o + 6) & 0x1fff != 0;
        if frag {
            self.rest(format!("{p}ip.payload"), l4, dgram_end);
            return dgram_end;
        }
        self.upper(p, self.data[o + 9], l4, dgram_end);
        dgram_end
    }

    /// What an IPv4 or IPv6 header at some offset carries: protocol
    /// `proto` at `l4`, up to `dgram_end`.
    fn upper(&mut self, p: &str, proto: u8, l4: usize, dgram_end: usize) {
        match proto {
            4 => {
                let inner = format!("{p}inner.");
                if l4 + 20 <= dgram_end {
                    self.ipv4(&inner, l4, dgram_end);
                } else {
                    self.rest(format!("{inner}truncated"), l4, dgram_end);
                }
            }
            41 => {
                let inner = format!("{p}inner.");
                if l4 + 40 <= dgram_end {
                    self.ipv6(&inner, l4, dgram_end);
                } else {
                    self.rest(format!("{inner}truncated"), l4, dgram_end);
                }
            }
            6 => {
                let t = format!("{p}tcp.");
                let names = [("sport", 2), ("dport", 2), ("seq", 4), ("ack", 4), ("off", 1), ("flags", 1), ("win", 2), ("csum", 2), ("urg", 2)];
                let mut off = l4;
                for (n, l) in names {
                    if off + l > dgram_end || !self.take(&t, n, off, l) {
                        self.rest(format!("{t}truncated"), off, dgram_end);
                        return;
                    }
                    off += l;
                }
                let doff = (self.data[l4 + 12] >> 4) as usize * 4;
                let opt_end = (l4 + doff.max(20)).min(dgram_end);
                self.rest(format!("{t}options"), l4 + 20, opt_end);
                self.rest(format!("{t}payload"), opt_end, dgram_end);
            }
            17 => {
                let t = format!("{p}udp.");
                let mut off = l4;
                for n in ["sport", "dport", "len", "csum"] {
                    if off + 2 > dgram_end || !self.take(&t, n, off, 2) {
                        self.rest(format!("{t}truncated"), off, dgram_end);
                        return;
                    }
                    off += 2;
                }
                self.rest(format!("{t}payload"), l4 + 8, dgram_end);
            }
            1 | 58 => {
                let t = if proto == 1 { format!("{p}icmp.") } else { format!("{p}icmp6.") };
                let mut off = l4;
                for (n, l) in [("type", 1), ("code", 1), ("csum", 2), ("rest", 4)] {
                    if off + l > dgram_end || !self.take(&t, n, off, l) {
                        self.rest(format!("{t}truncated"), off, dgram_end);
                        return;
                    }
                    off += l;
                }
                let ty = self.data[l4];
                if proto == 1 && matches!(ty, 3 | 4 | 5 | 11 | 12) && l4 + 8 + 20 <= dgram_end {
                    self.ipv4(&format!("{t}quoted."), l4 + 8, dgram_end);
                } else if proto == 58 && ty < 128 && l4 + 8 + 40 <= dgram_end {
                    self.ipv6(&format!("{t}quoted."), l4 + 8, dgram_end);
                } else if proto == 58 && (135..=137).contains(&ty) && l4 + 8 + 16 <= dgram_end {
                    // Neighbour solicitation / advertisement, redirect: the target.
                    self.take(&t, "target", l4 + 8, 16);
                    self.rest(format!("{t}data"), l4 + 24, dgram_end);
                } else {
                    self.rest(format!("{t}data"), l4 + 8, dgram_end);
                }
            }
            _ => self.rest(format!("{p}ip.payload"), l4, dgram_end),
        }
    }

    /// An IPv6 header at `o`, its extension headers and what it carries,
    /// up to `end`; returns where the datagram ends.
    fn ipv6(&mut self, p: &str, o: usize, end: usize) -> usize {
        let mut off = o;
        for (n, l) in [("vtcfl", 4), ("plen", 2), ("nxt", 1), ("hlim", 1), ("src", 16), ("dst", 16)] {
            if !self.take(&format!("{p}ip6."), n, off, l) {
                return self.data.len();
            }
            off += l;
        }
        let plen = self.be16(o + 4);
        let dgram_end = if o + 40 + plen <= end { o + 40 + plen } else { end };
        let mut nxt = self.data[o + 6];
        let mut at = o + 40;
        // Hop-by-hop, routing, fragment, destination options: raw.
        while matches!(nxt, 0 | 43 | 44 | 60) {
            if at + 8 > dgram_end {
                self.rest(format!("{p}ip6.ext.truncated"), at, dgram_end);
                return dgram_end;
            }
            let len = if nxt == 44 { 8 } else { (self.data[at + 1] as usize + 1) * 8 };
            let later_fragment = nxt == 44 && self.be16(at + 2) & 0xfff8 != 0;
            let name = if nxt == 44 { "frag" } else { "ext" };
            self.rest(format!("{p}ip6.{name}"), at, (at + len).min(dgram_end));
            nxt = self.data[at];
            at += len;
            if later_fragment {
                self.rest(format!("{p}ip.payload"), at, dgram_end);
                return dgram_end;
            }
        }
        self.upper(p, nxt, at.min(dgram_end), dgram_end);
        dgram_end
    }
}

/// The frame's fields in wire order.
pub fn decode(frame: &[u8]) -> Vec<Field> {
    let mut d = Dec { out: Vec::new(), data: frame };
    if !d.take("eth.", "dst", 0, 6) || !d.take("eth.", "src", 6, 6) || !d.take("eth.", "type", 12, 2) {
        return d.out;
    }
    let mut l3 = 14;
    let mut et = d.be16(12);
    if et == 0x8100 {
        if !d.take("vlan.", "tci", 14, 2) || !d.take("vlan.", "type", 16, 2) {
            return d.out;
        }
        et = d.be16(16);
        l3 = 18;
    }
    let end = match et {
        0x0800 if frame.len() >= l3 + 20 => d.ipv4("", l3, frame.len()),
        0x86dd if frame.len() >= l3 + 40 => d.ipv6("", l3, frame.len()),
        0x0806 => {
            let mut off = l3;
            for (n, l) in [("hdr", 6), ("op", 2), ("sha", 6), ("spa", 4), ("tha", 6), ("tpa", 4)] {
                if !d.take("arp.", n, off, l) {
                    return d.out;
                }
                off += l;
            }
            off
        }
        _ => {
            d.rest("eth.payload".into(), l3, frame.len());
            frame.len()
        }
    };
    d.rest("eth.padding".into(), end, frame.len());
    d.out
}

/// Names of the fields whose values differ (or exist on one side only),
/// in the order of `a` then the extra ones of `b`.
pub fn differing(a: &[Field], b: &[Field]) -> Vec<String> {
    let mut names = Vec::new();
    for f in a {
        match b.iter().find(|g| g.name == f.name) {
            Some(g) if g.bytes == f.bytes => {}
            _ => names.push(f.name.clone()),
        }
    }
    for g in b {
        if !a.iter().any(|f| f.name == g.name) {
            names.push(g.name.clone());
        }
    }
    names
}

/// A one-line description of a frame: `TCP 10.0.0.9:1234 > 10.0.0.100:80 [S]`,
/// `IPIP 10.0.0.1 > 192.168.20.1 (TCP ... )`, `ARP reply 10.0.0.100 is-at ...`.
pub fn describe(frame: &[u8]) -> String {
    let f = decode(frame);
    let get = |n: &str| f.iter().find(|x| x.name == n).map(|x| x.show());
    let raw = |n: &str| f.iter().find(|x| x.name == n).map(|x| x.bytes.clone());
    let vlan = get("vlan.tci").map(|t| format!("802.1Q vid {} ", t.parse::<u16>().unwrap_or(0) & 0x0fff)).unwrap_or_default();
    if let Some(op) = raw("arp.op") {
        let what = if op == [0, 1] { "request" } else if op == [0, 2] { "reply" } else { "op?" };
        return format!("{vlan}ARP {what} {} > {}", get("arp.spa").unwrap_or_default(), get("arp.tpa").unwrap_or_default());
    }
    fn l4(get: &dyn Fn(&str) -> Option<String>, raw: &dyn Fn(&str) -> Option<Vec<u8>>, p: &str) -> String {
        let v6 = get(&format!("{p}ip6.src")).is_some();
        let ip = if v6 { "ip6" } else { "ip" };
        let (s, d) = (get(&format!("{p}{ip}.src")).unwrap_or_default(), get(&format!("{p}{ip}.dst")).unwrap_or_default());
        // IPv6 addresses with ports in brackets, as ipvsadm writes them.
        let hp = |a: &str, port: String| if v6 { format!("[{a}]:{port}") } else { format!("{a}:{port}") };
        if let Some(flags) = raw(&format!("{p}tcp.flags")) {
            let fl = flags.first().copied().unwrap_or(0);
            let names: String = [(0x02, 'S'), (0x10, '.'), (0x01, 'F'), (0x04, 'R'), (0x08, 'P')]
                .iter()
                .filter(|(b, _)| fl & b != 0)
                .map(|(_, c)| *c)
                .collect();
            return format!(
                "TCP {} > {} [{names}]",
                hp(&s, get(&format!("{p}tcp.sport")).unwrap_or_default()),
                hp(&d, get(&format!("{p}tcp.dport")).unwrap_or_default())
            );
        }
        if get(&format!("{p}udp.sport")).is_some() {
            return format!(
                "UDP {} > {}",
                hp(&s, get(&format!("{p}udp.sport")).unwrap_or_default()),
                hp(&d, get(&format!("{p}udp.dport")).unwrap_or_default())
            );
        }
        if let Some(t) = get(&format!("{p}icmp.type")) {
            return format!("ICMP {s} > {d} type {t} code {}", get(&format!("{p}icmp.code")).unwrap_or_default());
        }
        if let Some(t) = get(&format!("{p}icmp6.type")) {
            let target = get(&format!("{p}icmp6.target")).map(|a| format!(" target {a}")).unwrap_or_default();
            return format!("ICMPv6 {s} > {d} type {t} code {}{target}", get(&format!("{p}icmp6.code")).unwrap_or_default());
        }
        if get(&format!("{p}inner.ip.src")).is_some() || get(&format!("{p}inner.ip6.src")).is_some() {
            let what = match (v6, get(&format!("{p}inner.ip6.src")).is_some()) {
                (false, false) => "IPIP",
                (true, true) => "IP6IP6",
                (true, false) => "IPIP6",
                (false, true) => "IP6IP",
            };
            return format!("{what} {s} > {d} ({})", l4(get, raw, &format!("{p}inner.")));
        }
        if v6 {
            let frag = if get(&format!("{p}ip.payload")).is_some() { " fragment/other" } else { "" };
            return format!("IPv6 {s} > {d} next {}{frag}", get(&format!("{p}ip6.nxt")).unwrap_or_default());
        }
        if get(&format!("{p}ip.src")).is_some() {
            let frag = if get(&format!("{p}ip.payload")).is_some() { " fragment/other" } else { "" };
            return format!("IP {s} > {d} proto {}{frag}", get(&format!("{p}ip.proto")).unwrap_or_default());
        }
        format!("ethertype {}", get("eth.type").unwrap_or_default())
    }
    format!("{vlan}{}", l4(&get, &raw, ""))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Ethernet + IPv4/TCP SYN, 10.0.0.9:1234 > 10.0.0.100:80, TTL 64.
    pub(crate) fn syn() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0xfe, 8, 0];
        f.extend([0x45, 0, 0, 40, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 9, 10, 0, 0, 100]);
        f.extend([0x04, 0xd2, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x72, 0x10, 0, 0, 0, 0]);
        f
    }

    #[test]
    fn tcp_fields_and_difference() {
        let a = syn();
        let mut b = syn();
        b[22] = 63; // ttl
        b[5] = 2; // eth.dst
        let (fa, fb) = (decode(&a), decode(&b));
        assert_eq!(fa.iter().map(|f| f.name.as_str()).collect::<Vec<_>>()[..6], ["eth.dst", "eth.src", "eth.type", "ip.version_ihl", "ip.tos", "ip.len"]);
        assert_eq!(differing(&fa, &fb), ["eth.dst", "ip.ttl"]);
        assert_eq!(describe(&a), "TCP 10.0.0.9:1234 > 10.0.0.100:80 [S]");
        let ttl = fb.iter().find(|f| f.name == "ip.ttl").unwrap();
        assert_eq!(ttl.show(), "63");
        assert_eq!(fb[0].show(), "02:00:00:00:00:02");
    }

    #[test]
    fn ipip_and_truncated() {
        let s = syn();
        let mut f = s[..14].to_vec();
        f.extend([0x45, 0, 0, 60, 0, 0, 0, 0, 64, 4, 0, 0, 10, 0, 0, 1, 192, 168, 20, 1]);
        f.extend(&s[14..]);
        let d = decode(&f);
        assert!(d.iter().any(|x| x.name == "inner.tcp.dport"));
        assert_eq!(describe(&f), "IPIP 10.0.0.1 > 192.168.20.1 (TCP 10.0.0.9:1234 > 10.0.0.100:80 [S])");
        // Cut in the middle of the TCP header: no panic, the rest is named.
        let cut = decode(&s[..40]);
        assert_eq!(cut.last().unwrap().name, "tcp.truncated");
        assert_eq!(decode(&[1, 2, 3]), [Field { name: "eth.truncated".into(), bytes: vec![1, 2, 3] }]);
    }

    /// Ethernet + IPv6/UDP [2001:db8:c::5]:4000 > [2001:db8:1:7::1]:53.
    pub(crate) fn udp6() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0xfe, 0x86, 0xdd];
        f.extend([0x60, 0, 0, 0, 0, 12, 17, 64]);
        f.extend("2001:db8:c::5".parse::<Ipv6Addr>().unwrap().octets());
        f.extend("2001:db8:1:7::1".parse::<Ipv6Addr>().unwrap().octets());
        f.extend([0x0f, 0xa0, 0, 53, 0, 12, 0xab, 0xcd, 1, 2, 3, 4]);
        f
    }

    #[test]
    fn ipv6_ip6ip6_and_icmpv6() {
        let u = udp6();
        let d = decode(&u);
        assert!(d.iter().any(|x| x.name == "ip6.hlim" && x.show() == "64"));
        assert_eq!(describe(&u), "UDP [2001:db8:c::5]:4000 > [2001:db8:1:7::1]:53");
        // ip6ip6 from the director to a real server.
        let mut t = u[..14].to_vec();
        t.extend([0x60, 0, 0, 0, 0, 52, 41, 64]);
        t.extend("2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        t.extend("2001:db8:2:7::1".parse::<Ipv6Addr>().unwrap().octets());
        t.extend(&u[14..]);
        assert!(decode(&t).iter().any(|x| x.name == "inner.udp.dport"));
        assert_eq!(describe(&t), "IP6IP6 2001:db8::1 > 2001:db8:2:7::1 (UDP [2001:db8:c::5]:4000 > [2001:db8:1:7::1]:53)");
        // Time exceeded from the VIP, quoting the datagram.
        let mut e = u[..14].to_vec();
        e.extend([0x60, 0, 0, 0, 0, 60, 58, 64]);
        e.extend("2001:db8:1:7::1".parse::<Ipv6Addr>().unwrap().octets());
        e.extend("2001:db8:c::5".parse::<Ipv6Addr>().unwrap().octets());
        e.extend([3, 0, 0x12, 0x34, 0, 0, 0, 0]);
        e.extend(&u[14..]);
        let f = decode(&e);
        assert!(f.iter().any(|x| x.name == "icmp6.quoted.ip6.dst" && x.show() == "2001:db8:1:7::1"));
        assert!(f.iter().any(|x| x.name == "icmp6.quoted.udp.sport"));
        assert_eq!(describe(&e), "ICMPv6 2001:db8:1:7::1 > 2001:db8:c::5 type 3 code 0");
    }
}
