//! Frames as named header fields, for naming what differs between the
//! kernel's frame and lvsnic's (`eth.dst`, `ip.ttl`, `tcp.csum`,
//! `inner.ip.src` for the header inside an IPIP tunnel,
//! `icmp.quoted.ip.dst` for the header an ICMP error quotes...).
//!
//! A plain byte-offset decoder, independent of the model's wire views:
//! it never fails; bytes it cannot place become a `*.truncated` or
//! `*.payload` field.

use std::net::Ipv4Addr;

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
        match self.data[o + 9] {
            4 => {
                let inner = format!("{p}inner.");
                if l4 + 20 <= dgram_end {
                    self.ipv4(&inner, l4, dgram_end);
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
                        return dgram_end;
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
                        return dgram_end;
                    }
                    off += 2;
                }
                self.rest(format!("{t}payload"), l4 + 8, dgram_end);
            }
            1 => {
                let t = format!("{p}icmp.");
                let mut off = l4;
                for (n, l) in [("type", 1), ("code", 1), ("csum", 2), ("rest", 4)] {
                    if off + l > dgram_end || !self.take(&t, n, off, l) {
                        self.rest(format!("{t}truncated"), off, dgram_end);
                        return dgram_end;
                    }
                    off += l;
                }
                let is_error = matches!(self.data[l4], 3 | 4 | 5 | 11 | 12);
                if is_error && l4 + 8 + 20 <= dgram_end {
                    self.ipv4(&format!("{t}quoted."), l4 + 8, dgram_end);
                } else {
                    self.rest(format!("{t}data"), l4 + 8, dgram_end);
                }
            }
            _ => self.rest(format!("{p}ip.payload"), l4, dgram_end),
        }
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
        let (s, d) = (get(&format!("{p}ip.src")).unwrap_or_default(), get(&format!("{p}ip.dst")).unwrap_or_default());
        if let Some(flags) = raw(&format!("{p}tcp.flags")) {
            let fl = flags.first().copied().unwrap_or(0);
            let names: String = [(0x02, 'S'), (0x10, '.'), (0x01, 'F'), (0x04, 'R'), (0x08, 'P')]
                .iter()
                .filter(|(b, _)| fl & b != 0)
                .map(|(_, c)| *c)
                .collect();
            return format!(
                "TCP {s}:{} > {d}:{} [{names}]",
                get(&format!("{p}tcp.sport")).unwrap_or_default(),
                get(&format!("{p}tcp.dport")).unwrap_or_default()
            );
        }
        if get(&format!("{p}udp.sport")).is_some() {
            return format!(
                "UDP {s}:{} > {d}:{}",
                get(&format!("{p}udp.sport")).unwrap_or_default(),
                get(&format!("{p}udp.dport")).unwrap_or_default()
            );
        }
        if let Some(t) = get(&format!("{p}icmp.type")) {
            return format!("ICMP {s} > {d} type {t} code {}", get(&format!("{p}icmp.code")).unwrap_or_default());
        }
        if get(&format!("{p}inner.ip.src")).is_some() {
            return format!("IPIP {s} > {d} ({})", l4(get, raw, &format!("{p}inner.")));
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
mod tests {
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
}
