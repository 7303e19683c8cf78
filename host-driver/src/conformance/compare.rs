//! Comparing what the kernel director transmitted with what lvsnic
//! transmitted for the same input.
//!
//! * Frames are matched by content within a time window ([`Compare::window_ns`])
//!   of capture time; a match whose position in the two outputs differs is
//!   also counted as an order-only difference.
//! * Only what the kernel draws at random is ignored, and only in these
//!   frames: the IP ID (and so the IP header checksum) of an IPIP outer
//!   header without DF (`ip_select_ident` in `ipvs_tunnel_xmit`: the inner
//!   header had no DF, or `pmtu_disc` is 0), and of an ICMP error sent from one of the
//!   director's own addresses (`icmp_send`); the identification of an IPv6
//!   fragment (`ip6_fragment`'s `ipv6_select_ident`), and the flow label
//!   of an ICMPv6 error from the director.
//! * Only what the kernel reads from its own clock is ignored besides: the
//!   4-byte time a hop writes into an IPv4 Timestamp option (the one just
//!   before the option's pointer, `inet_current_timestamp` in
//!   `ip_options_compile`; the VM's clock is not the capture's), in the
//!   outer header (an ICMP error's own header: the last two, the time of
//!   receipt it echoes and its own), an IPIP inner header or the header an
//!   ICMP error quotes, with the checksums that cover them (IP header, ICMP)
//!   when they are correct in the frame itself.
//! * A frame only the kernel sent is explained when it answers or routes a
//!   frame lvsnic hands to its host stack (HOST.pcap): an ARP reply, a
//!   packet back to the sender (TCP RST, echo reply, ICMP error), or the
//!   same IP packet routed on.
//! * What is left is paired by flow (same client endpoint) into differing
//!   frames, with the differing fields named; the rest is only-kernel or
//!   only-lvsnic.

use super::fields::{decode, describe, differing, Field};
use lvsnic_model::pcap::PcapRecord;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Examples kept per category.
pub const EXAMPLES: usize = 3;

/// What is compared, and the facts the comparison needs.
pub struct Compare<'a> {
    /// Frames the kernel transmitted, stamped in capture time.
    pub kernel: &'a [PcapRecord],
    /// Frames lvsnic transmitted (OUT.pcap).
    pub lvsnic: &'a [PcapRecord],
    /// Frames lvsnic handed to its host stack (HOST.pcap).
    pub host: &'a [PcapRecord],
    /// The director's own addresses (its addresses and every VIP, IPv4 and IPv6).
    pub local: &'a [IpAddr],
    /// How far apart in capture time two frames may be and still match.
    pub window_ns: u64,
}

/// One field of an example.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FieldDiff {
    /// The field's name (`ip.dst`, `tcp.csum`, `inner.ip.src`...).
    pub name: String,
    /// Its value in the kernel's frame, as a person reads it.
    pub kernel: String,
    /// Its value in lvsnic's frame, as a person reads it.
    pub lvsnic: String,
}

/// One example frame (or pair) of a category.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Example {
    /// Capture time in seconds after the first input frame.
    pub time: f64,
    /// 0-based index in the kernel's output, if it sent it.
    pub kernel_index: Option<usize>,
    /// 0-based index in lvsnic's OUT.pcap, if it sent it.
    pub lvsnic_index: Option<usize>,
    /// The kernel's frame in one line (`TCP 10.0.0.9:1234 > ...`), if it
    /// sent one.
    pub kernel: Option<String>,
    /// lvsnic's frame in one line, if it sent one.
    pub lvsnic: Option<String>,
    /// The fields that differ (`differing` only; empty otherwise).
    pub fields: Vec<FieldDiff>,
}

/// Frames that differ in the same way.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Category {
    /// `differing`, `only-kernel`, `only-lvsnic`, `order-only` or `explained`.
    pub kind: String,
    /// The differing field names (`differing`), the frame kind (one side
    /// only) or the explanation (`explained`).
    pub what: String,
    /// Frames (or pairs) in this category.
    pub count: usize,
    /// The first [`EXAMPLES`] of them.
    pub examples: Vec<Example>,
}

/// The comparison's result.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Input frames, and how many of them no wire can carry (shorter than
    /// an Ethernet header; not replayed into the kernel).
    pub input_frames: usize,
    /// Input frames shorter than an Ethernet header, not replayed into the
    /// kernel.
    pub not_replayed: usize,
    /// How far the replay in the VM fell behind the capture's pace at worst (ms).
    pub replay_lag_ms: f64,
    /// Frames the kernel director transmitted.
    pub kernel_frames: usize,
    /// Frames lvsnic transmitted (OUT.pcap).
    pub lvsnic_frames: usize,
    /// Frames lvsnic handed to its host stack (HOST.pcap).
    pub host_frames: usize,
    /// Byte-identical frames.
    pub identical: usize,
    /// Identical once the kernel's random fields are ignored (counted in `identical` too).
    pub random_fields_ignored: usize,
    /// Identical once the times the kernel wrote into IPv4 Timestamp
    /// options are ignored (counted in `identical` too).
    pub clock_fields_ignored: usize,
    /// Matched frames that came out in a different order.
    pub order_only: usize,
    /// Pairs of frames that differ.
    pub differing: usize,
    /// Frames only the kernel sent, unexplained.
    pub only_kernel: usize,
    /// Frames only lvsnic sent, unexplained.
    pub only_lvsnic: usize,
    /// Frames only one side sent, with an explanation.
    pub explained: usize,
    /// The differences and explained frames, grouped by how they differ.
    pub categories: Vec<Category>,
    /// Per scenario (`--scenarios FILE`), each compared on its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<super::split::ScenarioSummary>,
}

impl Summary {
    /// Differences that nothing explains (the exit status is non-zero when > 0).
    pub fn unexplained(&self) -> usize {
        self.differing + self.only_kernel + self.only_lvsnic
    }

    /// Unexplained differences in the whole or in any scenario.
    pub fn any_unexplained(&self) -> bool {
        self.unexplained() > 0 || self.scenarios.iter().any(|s| s.summary.unexplained() > 0)
    }

    /// The text report: one summary line, then per category the first examples.
    pub fn text(&self) -> String {
        let mut s = format!(
            "conformance: {} input frames ({} not replayable, replay up to {:.0} ms behind), kernel sent {}, lvsnic {} (+{} to host): {} identical ({} with random fields ignored, {} with clock fields ignored), {} differing, {} only-kernel, {} only-lvsnic, {} explained, {} order-only\n",
            self.input_frames,
            self.not_replayed,
            self.replay_lag_ms,
            self.kernel_frames,
            self.lvsnic_frames,
            self.host_frames,
            self.identical,
            self.random_fields_ignored,
            self.clock_fields_ignored,
            self.differing,
            self.only_kernel,
            self.only_lvsnic,
            self.explained,
            self.order_only
        );
        for c in &self.categories {
            s += &format!("  {} ({}): {}\n", c.kind, c.count, c.what);
            for e in &c.examples {
                let idx = |i: Option<usize>| i.map(|i| format!("#{i}")).unwrap_or_else(|| "-".into());
                s += &format!("    t={:.6} kernel {} lvsnic {}\n", e.time, idx(e.kernel_index), idx(e.lvsnic_index));
                if let Some(k) = &e.kernel {
                    s += &format!("      kernel: {k}\n");
                }
                if let Some(l) = &e.lvsnic {
                    s += &format!("      lvsnic: {l}\n");
                }
                for f in &e.fields {
                    s += &format!("      {}: kernel {} lvsnic {}\n", f.name, f.kernel, f.lvsnic);
                }
            }
        }
        if !self.scenarios.is_empty() {
            s += &format!("per scenario ({}):\n", self.scenarios.len());
            s += &super::split::text(&self.scenarios);
        }
        s
    }
}

fn ipv4_at(f: &[u8]) -> Option<usize> {
    if f.len() >= 34 && f[12..14] == [8, 0] {
        Some(14)
    } else if f.len() >= 38 && f[12..14] == [0x81, 0] && f[16..18] == [8, 0] {
        Some(18)
    } else {
        None
    }
}

fn addr(f: &[u8], off: usize) -> Ipv4Addr {
    Ipv4Addr::new(f[off], f[off + 1], f[off + 2], f[off + 3])
}

/// Where the IPv6 header starts (untagged or one 802.1Q tag).
fn ipv6_at(f: &[u8]) -> Option<usize> {
    if f.len() >= 54 && f[12..14] == [0x86, 0xdd] {
        Some(14)
    } else if f.len() >= 58 && f[12..14] == [0x81, 0] && f[16..18] == [0x86, 0xdd] {
        Some(18)
    } else {
        None
    }
}

fn addr6(f: &[u8], off: usize) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&f[off..off + 16]);
    Ipv6Addr::from(a)
}

/// Source, destination, protocol (IPv6: the first next header), the IP ID
/// (IPv6: none) and where the upper layer starts, of an IPv4 or IPv6 frame.
fn ip_of(f: &[u8]) -> Option<(IpAddr, IpAddr, u8, [u8; 2], usize)> {
    if let Some(o) = ipv6_at(f) {
        return Some((IpAddr::V6(addr6(f, o + 8)), IpAddr::V6(addr6(f, o + 24)), f[o + 6], [0, 0], o + 40));
    }
    let o = ipv4_at(f)?;
    Some((IpAddr::V4(addr(f, o + 12)), IpAddr::V4(addr(f, o + 16)), f[o + 9], [f[o + 4], f[o + 5]], o + (f[o] & 0x0f) as usize * 4))
}

/// The frame with the fields the kernel draws at random zeroed, or `None`
/// when it has none.
pub fn mask_random(f: &[u8], local: &[IpAddr]) -> Option<Vec<u8>> {
    if let Some(o) = ipv6_at(f) {
        // An ICMPv6 error from the director itself: its flow label is
        // `ip6_make_flowlabel`'s hash of the flow keyed with a secret drawn
        // at boot (`auto_flowlabels` 1, the default); the model sends 0.
        // Not covered by the ICMPv6 checksum.
        let error = f[o + 6] == 58 && f.len() > o + 40 && f[o + 40] < 128;
        // A fragment the director cut (`ip6_fragment`: an IPv4 packet
        // tunnelled in IPv6, or any IPv6 datagram `nf_defrag_ipv6`
        // reassembled, whatever its source, sent on in fragments again):
        // its identification is `ipv6_select_ident`'s keyed hash. Only the
        // Fragment header right after the fixed header is masked.
        let fragment = f[o + 6] == 44 && f.len() >= o + 48;
        if !(fragment || error && local.contains(&IpAddr::V6(addr6(f, o + 8)))) {
            return None;
        }
        let mut m = f.to_vec();
        if error {
            m[o + 1] &= 0xf0;
            m[o + 2..o + 4].fill(0);
        } else {
            m[o + 44..o + 48].fill(0);
        }
        return Some(m);
    }
    let o = ipv4_at(f)?;
    let ihl = (f[o] & 0x0f) as usize * 4;
    let random = match f[o + 9] {
        // IPIP: the outer ID is random unless the outer header has DF
        // (`ip_select_ident`: ID 0 only with DF). The outer DF is the inner
        // one with pmtu_disc 1, never set with pmtu_disc 0. A fragment of
        // one was too big for the MTU without DF: random too.
        // The same for an IPv6 packet in IPv4 (protocol 41: an IPv6
        // service tunnelled to an IPv4 real server), whose outer header
        // never has DF (`ip_vs_prepare_tunneled_skb` gets df 0).
        4 | 41 => {
            let frag = u16::from_be_bytes([f[o + 6], f[o + 7]]) & 0x3fff != 0;
            frag || f[o + 6] & 0x40 == 0
        }
        // An ICMP error from the director itself.
        1 => f.len() > o + ihl && matches!(f[o + ihl], 3 | 4 | 5 | 11 | 12) && local.contains(&IpAddr::V4(addr(f, o + 12))),
        _ => false,
    };
    random.then(|| {
        let mut m = f.to_vec();
        m[o + 4..o + 6].fill(0);
        m[o + 10..o + 12].fill(0);
        m
    })
}

/// Offsets in `f` of the last `n` times written into the Timestamp option
/// of the IPv4 header at `o` (flags 0, 1 and 3: the 4 bytes before the
/// pointer, then one slot further back), if it has one with a time written.
fn timestamp_slots(f: &[u8], o: usize, n: usize) -> Vec<usize> {
    let Some(&b) = f.get(o) else { return vec![] };
    let ihl = (b & 0x0f) as usize * 4;
    let Some(opts) = f.get(o + 20..o + ihl) else { return vec![] };
    let mut i = 0;
    while i + 1 < opts.len() {
        match opts[i] {
            0 => break,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let len = opts[i + 1] as usize;
        if len < 2 || i + len > opts.len() {
            break;
        }
        if opts[i] == 68 && len >= 4 {
            let (ptr, flag) = (opts[i + 2] as usize, opts[i + 3] & 0x0f);
            if !matches!(flag, 0 | 1 | 3) || ptr > len + 1 {
                break;
            }
            let (first, step) = if flag == 0 { (9, 4) } else { (13, 8) };
            return (0..n).map(|k| ptr as isize - (k * step) as isize).take_while(|&p| p >= first).map(|p| o + 20 + i + p as usize - 5).collect();
        }
        i += len;
    }
    vec![]
}

/// The frame with the times the kernel wrote into IPv4 Timestamp options
/// zeroed (see the module documentation), or `None` when it has none.
pub fn mask_clock(f: &[u8]) -> Option<Vec<u8>> {
    use lvsnic_model::wire::checksum::verify;
    if let Some(o6) = ipv6_at(f) {
        // An IPv4 packet in IPv6 (an IPv4 service tunnelled to an IPv6
        // real server): the times in its header, its checksum if right.
        let h = o6 + 40;
        if f[o6 + 6] != 4 || f.len() < h + 20 {
            return None;
        }
        let slots = timestamp_slots(f, h, 1);
        if slots.is_empty() {
            return None;
        }
        let mut m = f.to_vec();
        let hl = (f[h] & 0x0f) as usize * 4;
        if f.len() >= h + hl && verify(&f[h..h + hl], 0) {
            m[h + 10..h + 12].fill(0);
        }
        for s in slots {
            m[s..s + 4].fill(0);
        }
        return Some(m);
    }
    let o = ipv4_at(f)?;
    let ihl = (f[o] & 0x0f) as usize * 4;
    let l4 = o + ihl;
    let icmp_error = f[o + 9] == 1 && f.len() >= l4 + 8 + 20 && matches!(f[l4], 3 | 4 | 5 | 11 | 12);
    let mut m = f.to_vec();
    let mut any = false;
    // An IP header's own times, and its checksum if that is right.
    let mut header = |m: &mut Vec<u8>, h: usize, n: usize| {
        let slots = timestamp_slots(f, h, n);
        if !slots.is_empty() {
            let hl = (f[h] & 0x0f) as usize * 4;
            if verify(&f[h..h + hl], 0) {
                m[h + 10..h + 12].fill(0);
            }
            for s in slots {
                m[s..s + 4].fill(0);
            }
            any = true;
        }
    };
    // An ICMP error echoes the time the packet was received and adds the
    // time it was sent (`__ip_options_echo`, `ip_options_build`).
    header(&mut m, o, if icmp_error { 2 } else { 1 });
    if f[o + 9] == 4 && f.len() >= l4 + 20 {
        header(&mut m, l4, 1);
    }
    if icmp_error {
        // The quoted header is as the kernel received it: its checksum
        // predates the time; the ICMP checksum covers the time.
        if let Some(&s) = timestamp_slots(f, l4 + 8, 1).first() {
            let tot = (u16::from_be_bytes([f[o + 2], f[o + 3]]) as usize).min(f.len());
            if tot > ihl && verify(&f[l4..o + tot], 0) {
                m[l4 + 2..l4 + 4].fill(0);
            }
            m[s..s + 4].fill(0);
            any = true;
        }
    }
    any.then_some(m)
}

/// Why a frame only the kernel sent is explained by one lvsnic hands to its
/// host stack, if it is.
fn host_explains(k: &[u8], h: &[u8]) -> Option<&'static str> {
    // ARP reply to an ARP request.
    let arp = |f: &[u8]| (f.len() >= 42 && f[12..14] == [8, 6]).then_some(14);
    if let (Some(a), Some(b)) = (arp(k), arp(h)) {
        let (kop, hop) = (&k[a + 6..a + 8], &h[b + 6..b + 8]);
        if kop == [0, 2] && hop == [0, 1] && k[a + 14..a + 18] == h[b + 24..b + 28] && k[a + 24..a + 28] == h[b + 14..b + 18] {
            return Some("the host stack answers an ARP request");
        }
        return None;
    }
    let ((ks, kd, kp, kid, kl4), (hs, hd, hp, hid, hl4)) = (ip_of(k)?, ip_of(h)?);
    // A neighbour advertisement answering a solicitation for its target.
    if kp == 58 && hp == 58 && k.get(kl4) == Some(&136) && h.get(hl4) == Some(&135) && k.len() >= kl4 + 24 && h.len() >= hl4 + 24 {
        return (k[kl4 + 8..kl4 + 24] == h[hl4 + 8..hl4 + 24]).then_some("the host stack answers a neighbour solicitation");
    }
    // The same packet routed on: same addresses, protocol, ID and transport bytes.
    if ks == hs && kd == hd && kp == hp && kid == hid && k.get(kl4..) .zip(h.get(hl4..)).is_some_and(|(x, y)| {
        let n = x.len().min(y.len()).min(64);
        x[..n] == y[..n]
    }) {
        return Some("the host stack routes a frame that matches no service or connection");
    }
    // An answer to the sender.
    if ks == hd && kd == hs {
        if kp == 6 && hp == 6 && k.len() >= kl4 + 4 && h.len() >= hl4 + 4 {
            if k[kl4..kl4 + 2] == h[hl4 + 2..hl4 + 4] && k[kl4 + 2..kl4 + 4] == h[hl4..hl4 + 2] {
                return Some("the host stack answers a TCP segment (RST)");
            }
            return None;
        }
        if kp == 1 {
            return Some("the host stack answers with ICMP (echo reply or error)");
        }
        if kp == 58 {
            return Some("the host stack answers with ICMPv6 (echo reply or error)");
        }
        if kp == hp {
            return Some("the host stack answers the sender");
        }
    }
    None
}

/// The innermost transport endpoints (src, dst), for pairing frames of one flow.
fn endpoints(f: &[Field]) -> Option<(String, String)> {
    let inner = f.iter().any(|x| x.name == "inner.ip.src" || x.name == "inner.ip6.src");
    let p = if inner { "inner." } else { "" };
    let get = |n: &str| f.iter().find(|x| x.name == format!("{p}{n}")).map(|x| x.bytes.clone());
    let (s, d) = (get("ip.src").or_else(|| get("ip6.src"))?, get("ip.dst").or_else(|| get("ip6.dst"))?);
    let (sp, dp) = match (get("tcp.sport"), get("tcp.dport"), get("udp.sport"), get("udp.dport")) {
        (Some(a), Some(b), _, _) => (a, b),
        (_, _, Some(a), Some(b)) => (a, b),
        _ => (vec![], vec![]),
    };
    Some((format!("{s:?}{sp:?}"), format!("{d:?}{dp:?}")))
}

impl Compare<'_> {
    /// Compares the two outputs as the module describes: matches frames by
    /// content within `window_ns`, ignores the kernel's random and clock
    /// fields, explains kernel-only frames that answer host frames, pairs
    /// the rest by flow, and groups the differences into categories.
    pub fn run(&self) -> Summary {
        let t0 = self.kernel.first().map(|r| r.ts_ns).into_iter().chain(self.lvsnic.first().map(|r| r.ts_ns)).min().unwrap_or(0);
        let t0 = t0.min(self.host.first().map(|r| r.ts_ns).unwrap_or(t0));
        let secs = |ts: u64| ts.saturating_sub(t0) as f64 / 1e9;
        let near = |a: u64, b: u64| a.abs_diff(b) <= self.window_ns;
        let mut k_match: Vec<Option<usize>> = vec![None; self.kernel.len()];
        let mut l_used = vec![false; self.lvsnic.len()];
        let mut s = Summary { kernel_frames: self.kernel.len(), lvsnic_frames: self.lvsnic.len(), host_frames: self.host.len(), ..Default::default() };

        // 1. Byte-identical, then identical with random fields masked, then
        //    with clock fields (and random fields) masked.
        for pass in 0..3 {
            let key = |f: &[u8]| match pass {
                0 => Some(f.to_vec()),
                1 => mask_random(f, self.local),
                _ => mask_clock(f).map(|m| mask_random(&m, self.local).unwrap_or(m)),
            };
            let mut by_key: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
            for (i, r) in self.lvsnic.iter().enumerate() {
                if !l_used[i] {
                    if let Some(k) = key(&r.data) {
                        by_key.entry(k).or_default().push(i);
                    }
                }
            }
            for (ki, r) in self.kernel.iter().enumerate() {
                if k_match[ki].is_some() {
                    continue;
                }
                let Some(k) = key(&r.data) else { continue };
                let Some(cands) = by_key.get(&k) else { continue };
                if let Some(&li) = cands.iter().find(|&&li| !l_used[li] && near(self.lvsnic[li].ts_ns, r.ts_ns)) {
                    l_used[li] = true;
                    k_match[ki] = Some(li);
                    s.identical += 1;
                    s.random_fields_ignored += usize::from(pass == 1 || pass == 2 && mask_random(&r.data, self.local).is_some());
                    s.clock_fields_ignored += usize::from(pass == 2);
                }
            }
        }
        // Order: a matched frame that lvsnic sent before one the kernel sent earlier.
        let mut order = Category { kind: "order-only".into(), what: "matched frames sent in another order".into(), count: 0, examples: vec![] };
        let mut max_l: Option<usize> = None;
        for (ki, m) in k_match.iter().enumerate() {
            if let Some(li) = *m {
                if max_l.is_some_and(|x| li < x) {
                    order.count += 1;
                    if order.examples.len() < EXAMPLES {
                        order.examples.push(Example {
                            time: secs(self.kernel[ki].ts_ns),
                            kernel_index: Some(ki),
                            lvsnic_index: Some(li),
                            kernel: Some(describe(&self.kernel[ki].data)),
                            lvsnic: None,
                            fields: vec![],
                        });
                    }
                }
                max_l = Some(max_l.map_or(li, |x| x.max(li)));
            }
        }
        s.order_only = order.count;

        // 2. Kernel-only frames the host stack explains.
        let mut cats: BTreeMap<(String, String), Category> = BTreeMap::new();
        let mut add = |kind: &str, what: String, ex: Example| {
            let c = cats.entry((kind.to_string(), what.clone())).or_insert_with(|| Category { kind: kind.into(), what, count: 0, examples: vec![] });
            c.count += 1;
            if c.examples.len() < EXAMPLES {
                c.examples.push(ex);
            }
        };
        let mut k_left: Vec<usize> = Vec::new();
        for (ki, r) in self.kernel.iter().enumerate() {
            if k_match[ki].is_some() {
                continue;
            }
            let why = self
                .host
                .iter()
                .filter(|h| h.ts_ns <= r.ts_ns + self.window_ns && h.ts_ns + 10 * self.window_ns >= r.ts_ns)
                .find_map(|h| host_explains(&r.data, &h.data));
            match why {
                Some(w) => {
                    s.explained += 1;
                    let ex = Example { time: secs(r.ts_ns), kernel_index: Some(ki), lvsnic_index: None, kernel: Some(describe(&r.data)), lvsnic: None, fields: vec![] };
                    add("explained", w.to_string(), ex);
                }
                None => k_left.push(ki),
            }
        }

        // 3. Pair what is left by flow into differing frames.
        let l_left: Vec<usize> = (0..self.lvsnic.len()).filter(|&i| !l_used[i]).collect();
        let l_fields: HashMap<usize, Vec<Field>> = l_left.iter().map(|&i| (i, decode(&self.lvsnic[i].data))).collect();
        let mut l_paired = vec![false; self.lvsnic.len()];
        for &ki in &k_left {
            let r = &self.kernel[ki];
            let kf = decode(&r.data);
            let Some((ksrc, kdst)) = endpoints(&kf) else {
                add("only-kernel", describe_kind(&r.data), one_side(secs(r.ts_ns), Some(ki), None, &r.data));
                continue;
            };
            let best = l_left
                .iter()
                .filter(|&&li| !l_paired[li] && near(self.lvsnic[li].ts_ns, r.ts_ns))
                .filter_map(|&li| {
                    let lf = &l_fields[&li];
                    let (ls, ld) = endpoints(lf)?;
                    (ls == ksrc || ld == kdst).then(|| {
                        let d = differing(&kf, lf).len();
                        (d, self.lvsnic[li].ts_ns.abs_diff(r.ts_ns), li)
                    })
                })
                .min();
            match best {
                Some((_, _, li)) => {
                    l_paired[li] = true;
                    s.differing += 1;
                    let lf = &l_fields[&li];
                    let names = differing(&kf, lf);
                    let show = |f: &[Field], n: &str| f.iter().find(|x| x.name == n).map(|x| x.show()).unwrap_or_else(|| "(absent)".into());
                    let fields = names.iter().map(|n| FieldDiff { name: n.clone(), kernel: show(&kf, n), lvsnic: show(lf, n) }).collect();
                    let ex = Example {
                        time: secs(r.ts_ns),
                        kernel_index: Some(ki),
                        lvsnic_index: Some(li),
                        kernel: Some(describe(&r.data)),
                        lvsnic: Some(describe(&self.lvsnic[li].data)),
                        fields,
                    };
                    add("differing", names.join(" "), ex);
                }
                None => add("only-kernel", describe_kind(&r.data), one_side(secs(r.ts_ns), Some(ki), None, &r.data)),
            }
        }
        for &li in &l_left {
            if !l_paired[li] {
                let r = &self.lvsnic[li];
                add("only-lvsnic", describe_kind(&r.data), one_side(secs(r.ts_ns), None, Some(li), &r.data));
            }
        }
        let mut cats: Vec<Category> = cats.into_values().collect();
        s.only_kernel = cats.iter().filter(|c| c.kind == "only-kernel").map(|c| c.count).sum();
        s.only_lvsnic = cats.iter().filter(|c| c.kind == "only-lvsnic").map(|c| c.count).sum();
        // Unexplained first, the biggest first.
        let rank = |k: &str| match k {
            "differing" => 0,
            "only-kernel" => 1,
            "only-lvsnic" => 2,
            "explained" => 4,
            _ => 3,
        };
        cats.sort_by(|a, b| rank(&a.kind).cmp(&rank(&b.kind)).then(b.count.cmp(&a.count)).then(a.what.cmp(&b.what)));
        if order.count > 0 {
            let at = cats.iter().position(|c| rank(&c.kind) > 3).unwrap_or(cats.len());
            cats.insert(at, order);
        }
        s.categories = cats;
        s
    }
}

fn one_side(time: f64, kernel_index: Option<usize>, lvsnic_index: Option<usize>, data: &[u8]) -> Example {
    let d = Some(describe(data));
    let (kernel, lvsnic) = if kernel_index.is_some() { (d, None) } else { (None, d) };
    Example { time, kernel_index, lvsnic_index, kernel, lvsnic, fields: vec![] }
}

/// The kind of frame, for grouping one-side frames: the description with
/// addresses and ports left out (`TCP [S]`, `IPIP (TCP [.])`, `ARP reply`).
fn describe_kind(data: &[u8]) -> String {
    let d = describe(data);
    d.split(' ')
        .filter(|w| {
            // IPv4 and bracketed IPv6 endpoints, bare IPv6 addresses (which
            // may start with a letter: fe80::1).
            let endpoint6 = w.starts_with('[') && w.contains(':');
            !w.chars().next().is_some_and(|c| c.is_ascii_digit()) && !endpoint6 && *w != ">" && w.parse::<IpAddr>().is_err()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: u64, data: Vec<u8>) -> PcapRecord {
        PcapRecord { ts_ns: ts, orig_len: data.len() as u32, data }
    }

    /// TCP segment from `src:sp` to `dst:dp`, dst MAC last byte `mac`.
    fn tcp(src: [u8; 4], sp: u16, dst: [u8; 4], dp: u16, flags: u8, mac: u8) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, mac, 2, 0, 0, 0, 0, 1, 8, 0];
        f.extend([0x45, 0, 0, 40, 0, 1, 0x40, 0, 63, 6, 0, 0]);
        f.extend(src);
        f.extend(dst);
        f.extend(sp.to_be_bytes());
        f.extend(dp.to_be_bytes());
        f.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x72, 0x10, 0, 0, 0, 0]);
        f
    }

    const C: [u8; 4] = [172, 16, 0, 9];
    const VIP: [u8; 4] = [10, 0, 0, 100];

    #[test]
    fn identical_differing_and_one_side() {
        let a = tcp(C, 1000, [192, 168, 10, 1], 8080, 0x02, 0x11);
        let b = tcp(C, 1001, [192, 168, 10, 1], 8080, 0x02, 0x11);
        let b_other_rs = tcp(C, 1001, [192, 168, 10, 2], 8080, 0x02, 0x12);
        let extra = tcp([1, 1, 1, 1], 5, [2, 2, 2, 2], 6, 0x10, 0x13);
        let kernel = [rec(1_000, b.clone()), rec(2_000, a.clone())];
        let lvsnic = [rec(1_000, a), rec(1_500, b_other_rs), rec(3_000, extra)];
        let local = [IpAddr::V4(Ipv4Addr::new(10, 0, 0, 100))];
        let s = Compare { kernel: &kernel, lvsnic: &lvsnic, host: &[], local: &local, window_ns: 1_000_000 }.run();
        assert_eq!((s.identical, s.differing, s.only_kernel, s.only_lvsnic, s.explained), (1, 1, 0, 1, 0));
        assert_eq!(s.unexplained(), 2);
        let d = &s.categories[0];
        assert_eq!((d.kind.as_str(), d.what.as_str()), ("differing", "eth.dst ip.dst"));
        assert_eq!(d.examples[0].fields[1], FieldDiff { name: "ip.dst".into(), kernel: "192.168.10.1".into(), lvsnic: "192.168.10.2".into() });
        assert_eq!((s.categories[1].kind.as_str(), s.categories[1].what.as_str()), ("only-lvsnic", "TCP [.]"));
        // Outside the window nothing matches.
        let s = Compare { kernel: &kernel[1..], lvsnic: &lvsnic[..1], host: &[], local: &local, window_ns: 10 }.run();
        assert_eq!(s.identical, 0);
    }

    #[test]
    fn order_only_is_counted_not_failed() {
        let a = tcp(C, 1, VIP, 80, 0x02, 1);
        let b = tcp(C, 2, VIP, 80, 0x02, 1);
        let kernel = [rec(10, b.clone()), rec(10, a.clone())];
        let lvsnic = [rec(10, a), rec(10, b)];
        let s = Compare { kernel: &kernel, lvsnic: &lvsnic, host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.order_only, s.unexplained()), (2, 1, 0));
    }

    #[test]
    fn host_stack_answers_are_explained() {
        // lvsnic hands a stray ACK to its host; the kernel answers with a RST.
        let ack = tcp(C, 4000, VIP, 22, 0x10, 1);
        let rst = tcp(VIP, 22, C, 4000, 0x04, 0xfe);
        let kernel = [rec(100, rst)];
        let host = [rec(90, ack)];
        let s = Compare { kernel: &kernel, lvsnic: &[], host: &host, local: &[], window_ns: 50 }.run();
        assert_eq!((s.explained, s.only_kernel, s.unexplained()), (1, 0, 0));
        assert_eq!(s.categories[0].what, "the host stack answers a TCP segment (RST)");
        // Without the host frame it is only-kernel.
        let s = Compare { kernel: &kernel, lvsnic: &[], host: &[], local: &[], window_ns: 50 }.run();
        assert_eq!((s.only_kernel, s.categories[0].what.as_str()), (1, "TCP [R]"));
    }

    /// Ethernet + IPv6 with `next` and `l4` after the 40-byte header.
    fn ip6(src: &str, dst: &str, flow: u32, next: u8, l4: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 0xfe, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        f.extend((0x6000_0000u32 | flow).to_be_bytes());
        f.extend((l4.len() as u16).to_be_bytes());
        f.extend([next, 64]);
        f.extend(src.parse::<Ipv6Addr>().unwrap().octets());
        f.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
        f.extend(l4);
        f
    }

    #[test]
    fn ipv6_error_flow_label_random_only_from_the_director() {
        let vip: IpAddr = "2001:db8:1:5::1".parse().unwrap();
        let quoted = ip6("2001:db8:c::9", "2001:db8:1:5::1", 0, 17, &[0x0f, 0xa0, 0, 53, 0, 8, 0, 0]);
        let mut te = vec![3, 0, 0x55, 0x66, 0, 0, 0, 0];
        te.extend(&quoted[14..]);
        let k = ip6("2001:db8:1:5::1", "2001:db8:c::9", 0x8_1234, 58, &te);
        let l = ip6("2001:db8:1:5::1", "2001:db8:c::9", 0, 58, &te);
        let s = Compare { kernel: &[rec(1, k.clone())], lvsnic: &[rec(1, l.clone())], host: &[], local: &[vip], window_ns: 5 }.run();
        assert_eq!((s.identical, s.random_fields_ignored, s.unexplained()), (1, 1, 0), "{}", s.text());
        // Not from one of the director's addresses (a real server's error, relayed): compared.
        let s = Compare { kernel: &[rec(1, k)], lvsnic: &[rec(1, l)], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.differing), (0, 1));
        assert_eq!(s.categories[0].what, "ip6.vtcfl");
    }

    #[test]
    fn ipv6_host_stack_answers_are_explained() {
        let target: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
        ns.extend(target.octets());
        let mut na = vec![136, 0, 0, 0, 0x60, 0, 0, 0];
        na.extend(target.octets());
        let host = [rec(10, ip6("fe80::5", "ff02::1:ff00:1", 0, 58, &ns)), rec(20, ip6("2001:db8::9:9", "2001:db8::1", 0, 58, &[128, 0, 0, 0, 0, 1, 0, 1]))];
        let kernel = [rec(12, ip6("2001:db8::1", "fe80::5", 0, 58, &na)), rec(22, ip6("2001:db8::1", "2001:db8::9:9", 0x1_2345, 58, &[129, 0, 0, 0, 0, 1, 0, 1]))];
        let s = Compare { kernel: &kernel, lvsnic: &[], host: &host, local: &[], window_ns: 50 }.run();
        assert_eq!((s.explained, s.unexplained()), (2, 0), "{}", s.text());
        // Without the host frames: grouped by kind, addresses left out.
        let s = Compare { kernel: &kernel, lvsnic: &[], host: &[], local: &[], window_ns: 50 }.run();
        let kinds: Vec<&str> = s.categories.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(kinds, ["ICMPv6 type code", "ICMPv6 type code target"], "{}", s.text());
        let u = crate::conformance::fields::tests::udp6();
        assert_eq!(describe_kind(&u), "UDP");
    }

    /// A NAT SYN as the kernel sent it (recorded in the VM): Timestamp
    /// option flag 1, VIP 10.0.0.100 and time 0x027a092b written, pointer 13.
    fn kernel_ts_syn() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0x10, 2, 2, 0, 0, 0, 0, 1, 8, 0];
        f.extend([0x4a, 0, 0, 0x3c, 0x9c, 0x41, 0x40, 0, 0x3f, 6, 0xa2, 0x95, 198, 18, 0, 10, 192, 168, 10, 2]);
        f.extend([0x44, 0x14, 0x0d, 0x01, 10, 0, 0, 100, 0x02, 0x7a, 0x09, 0x2b, 0, 0, 0, 0, 0, 0, 0, 0]);
        f.extend([0x9c, 0x41, 0x1f, 0x90, 0, 0, 3, 0xe8, 0, 0, 0, 0, 0x50, 0x02, 0xfa, 0xf0, 0x64, 0x71, 0, 0]);
        f
    }

    /// `f` with the time at its Timestamp slot set to `t` and a correct
    /// IP header checksum.
    fn with_time(f: &[u8], t: u32) -> Vec<u8> {
        let mut g = f.to_vec();
        g[42..46].copy_from_slice(&t.to_be_bytes());
        g[24..26].fill(0);
        let c = lvsnic_model::wire::checksum::checksum(&g[14..54]);
        g[24..26].copy_from_slice(&c.to_be_bytes());
        g
    }

    #[test]
    fn kernel_clock_ignored_in_an_ipv4_header_inside_ipv6() {
        let k4 = kernel_ts_syn();
        let l4 = with_time(&k4, 0x027a_0900);
        let wrap = |f: &[u8]| ip6("2001:db8::1", "2001:db8:2:9::1", 0, 4, &f[14..]);
        let s = Compare { kernel: &[rec(1, wrap(&k4))], lvsnic: &[rec(1, wrap(&l4))], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.clock_fields_ignored, s.unexplained()), (1, 1, 0), "{}", s.text());
    }

    #[test]
    fn kernel_clock_ignored_only_in_timestamp_times() {
        let k = kernel_ts_syn();
        assert!(lvsnic_model::wire::checksum::verify(&k[14..54], 0), "fixture frame checksum");
        // Another time (and so another header checksum): identical, counted.
        let l = with_time(&k, 0x027a_0900);
        let s = Compare { kernel: &[rec(1, k.clone())], lvsnic: &[rec(1, l.clone())], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.clock_fields_ignored, s.random_fields_ignored, s.unexplained()), (1, 1, 0, 0), "{}", s.text());
        // The address written with the time is not a clock field.
        let mut a = l.clone();
        a[41] = 1;
        let a = with_time(&a, 0x027a_0900);
        let s = Compare { kernel: &[rec(1, k.clone())], lvsnic: &[rec(1, a)], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.differing), (0, 1));
        assert_eq!(s.categories[0].what, "ip.csum ip.options");
        // A header checksum that does not match its own header is not ignored.
        let mut bad = l.clone();
        bad[25] ^= 1;
        let s = Compare { kernel: &[rec(1, k.clone())], lvsnic: &[rec(1, bad)], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.differing), (0, 1));
        // No time written (the pointer at the first slot): nothing ignored.
        let mut unfilled = k.clone();
        unfilled[36] = 5;
        assert_eq!(mask_clock(&unfilled), None);
        assert!(mask_clock(&k).is_some());
    }

    #[test]
    fn random_ids_ignored_only_where_random() {
        // IPIP outer header, inner without DF: the outer ID may differ.
        let inner = tcp(C, 1, VIP, 80, 0x02, 0);
        let mut outer = inner[..14].to_vec();
        outer.extend([0x45, 0, 0, 60, 0x11, 0x11, 0, 0, 64, 4, 0xaa, 0xaa, 10, 0, 0, 1, 192, 168, 20, 1]);
        let mut inner_ip = inner[14..].to_vec();
        inner_ip[6] = 0; // no DF
        outer.extend(&inner_ip);
        let mut other = outer.clone();
        other[18..20].copy_from_slice(&[0x22, 0x22]);
        other[24..26].copy_from_slice(&[0xbb, 0xbb]);
        let s = Compare { kernel: &[rec(1, outer.clone())], lvsnic: &[rec(1, other.clone())], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.random_fields_ignored), (1, 1));
        // DF inside but not outside (pmtu_disc 0): still random.
        let (mut o2, mut x2) = (outer, other);
        o2[34 + 6] = 0x40;
        x2[34 + 6] = 0x40;
        let s = Compare { kernel: &[rec(1, o2.clone())], lvsnic: &[rec(1, x2.clone())], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.random_fields_ignored), (1, 1));
        // With DF outside (pmtu_disc 1 copies the inner DF), the ID is not random: a difference.
        o2[14 + 6] = 0x40;
        x2[14 + 6] = 0x40;
        let s = Compare { kernel: &[rec(1, o2)], lvsnic: &[rec(1, x2)], host: &[], local: &[], window_ns: 5 }.run();
        assert_eq!((s.identical, s.differing), (0, 1));
        assert_eq!(s.categories[0].what, "ip.id ip.csum");
    }
}
