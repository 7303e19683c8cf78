//! Many scenarios in one replay: `lvsnic conformance --scenarios FILE`.
//!
//! A conformance matrix replays many scenarios at once (one rules file with
//! many services, their captures merged by timestamp) and still reports one
//! line per scenario. FILE names each scenario and the addresses it owns
//! (its VIPs and real servers), one scenario a line:
//!
//! ```text
//! # NAME ADDRESS...
//! rr-nat-tcp 10.1.1.1 10.2.1.1 10.2.1.2 10.2.1.3
//! ```
//!
//! A frame belongs to the scenario owning one of the addresses (IPv4 or
//! IPv6) it carries: the IP source or destination, those of a tunnel's
//! inner header (IPIP, ip6ip6, either family in the other) and of the
//! header an ICMP or ICMPv6 error quotes, an ARP sender or target, a
//! neighbour solicitation's or advertisement's target. Clients and
//! the director's own address belong to no scenario, so frames carrying
//! only those (an echo request to the director, an ARP request for it) are
//! counted under `(shared)`. Each scenario's frames (input, kernel output,
//! lvsnic output and host frames) are compared on their own with the same
//! rules as the whole ([`super::compare::Compare`]); scenarios are
//! independent by construction (no address in two of them), so a frame of
//! one can never match, explain or pair with a frame of another.

use super::compare::{Compare, Summary};
use super::fields::decode;
use lvsnic_model::pcap::PcapRecord;
use serde::Serialize;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// The name of the bucket of frames no scenario owns.
pub const SHARED: &str = "(shared)";

/// The scenarios of a merged replay and the addresses each owns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scenarios {
    /// The scenario names, in the file's order.
    pub names: Vec<String>,
    owner: HashMap<IpAddr, usize>,
}

/// One scenario's comparison.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScenarioSummary {
    /// The scenario's name (or [`SHARED`]).
    pub name: String,
    /// Its frames: identical, explained, unexplained, one side only.
    pub summary: Summary,
}

impl Scenarios {
    /// Parses FILE's text; `what` names it in errors.
    pub fn parse(text: &str, what: &str) -> Result<Scenarios, String> {
        let mut s = Scenarios::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut w = line.split_whitespace();
            let name = w.next().unwrap_or_default().to_string();
            if name == SHARED || s.names.contains(&name) {
                return Err(format!("{what}: line {}: scenario name `{name}' used twice or reserved", n + 1));
            }
            let idx = s.names.len();
            let mut any = false;
            for a in w {
                let ip: IpAddr = a.parse().map_err(|_| format!("{what}: line {}: `{a}' is not an IPv4 or IPv6 address", n + 1))?;
                if let Some(&o) = s.owner.get(&ip) {
                    if o != idx {
                        return Err(format!("{what}: line {}: {ip} already belongs to scenario {}", n + 1, s.names[o]));
                    }
                }
                s.owner.insert(ip, idx);
                any = true;
            }
            if !any {
                return Err(format!("{what}: line {}: scenario {name} owns no address", n + 1));
            }
            s.names.push(name);
        }
        if s.names.is_empty() {
            return Err(format!("{what}: no scenarios"));
        }
        Ok(s)
    }

    /// Reads and parses `--scenarios FILE` (one line per scenario: its
    /// name and the IPv4 and IPv6 addresses it owns).
    pub fn load(path: &Path) -> Result<Scenarios, String> {
        let t = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Scenarios::parse(&t, &path.display().to_string())
    }

    /// The scenario owning the frame (index into `names`), `None` for shared.
    pub fn owner(&self, frame: &[u8]) -> Option<usize> {
        decode(frame)
            .iter()
            .filter_map(|f| {
                let n = f.name.as_str();
                match f.bytes.len() {
                    4 if n.ends_with("ip.src") || n.ends_with("ip.dst") || n.ends_with("arp.spa") || n.ends_with("arp.tpa") => {
                        Some(IpAddr::V4(Ipv4Addr::new(f.bytes[0], f.bytes[1], f.bytes[2], f.bytes[3])))
                    }
                    16 if n.ends_with("ip6.src") || n.ends_with("ip6.dst") || n.ends_with("icmp6.target") => {
                        let mut a = [0u8; 16];
                        a.copy_from_slice(&f.bytes);
                        Some(IpAddr::V6(Ipv6Addr::from(a)))
                    }
                    _ => None,
                }
            })
            .find_map(|a| self.owner.get(&a).copied())
    }

    /// `recs` split by owner: one list per scenario, then the shared one.
    pub fn split(&self, recs: &[PcapRecord]) -> Vec<Vec<PcapRecord>> {
        let mut out = vec![Vec::new(); self.names.len() + 1];
        for r in recs {
            let i = self.owner(&r.data).unwrap_or(self.names.len());
            out[i].push(r.clone());
        }
        out
    }

    /// Compares each scenario (and the shared frames) on its own.
    /// `input` is the replayable input, `sent` the same frames as they
    /// reached the kernel.
    pub fn compare(&self, c: &Compare, input: &[PcapRecord], sent: &[PcapRecord]) -> Vec<ScenarioSummary> {
        let (k, l, h) = (self.split(c.kernel), self.split(c.lvsnic), self.split(c.host));
        let (i, s) = (self.split(input), self.split(sent));
        (0..=self.names.len())
            .filter(|&n| n < self.names.len() || !(i[n].is_empty() && k[n].is_empty() && l[n].is_empty()))
            .map(|n| {
                let sum = Compare { kernel: &k[n], lvsnic: &l[n], host: &h[n], local: c.local, window_ns: c.window_ns }.run();
                let sum = Summary {
                    input_frames: i[n].len(),
                    replay_lag_ms: super::vm::max_lag_ns(&i[n], &s[n]) as f64 / 1e6,
                    ..sum
                };
                ScenarioSummary { name: self.names.get(n).cloned().unwrap_or_else(|| SHARED.to_string()), summary: sum }
            })
            .collect()
    }
}

/// One line per scenario: name, frame counts, and for a scenario with
/// unexplained differences its categories (as in [`Summary::text`]).
pub fn text(list: &[ScenarioSummary]) -> String {
    let w = list.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for s in list {
        let m = &s.summary;
        out += &format!(
            "{:<w$} in {:>5}  kernel {:>5}  lvsnic {:>5} (+{} host)  identical {:>5} ({} random, {} clock)  explained {:>4}  unexplained {} ({} differing, {} only-kernel, {} only-lvsnic){}\n",
            s.name,
            m.input_frames,
            m.kernel_frames,
            m.lvsnic_frames,
            m.host_frames,
            m.identical,
            m.random_fields_ignored,
            m.clock_fields_ignored,
            m.explained,
            m.unexplained(),
            m.differing,
            m.only_kernel,
            m.only_lvsnic,
            if m.unexplained() > 0 { "  <-- UNEXPLAINED" } else { "" }
        );
        if m.unexplained() > 0 {
            for line in m.text().lines().skip(1) {
                out += &format!("    {line}\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
        f.extend([0x45, 0, 0, 28, 0, 1, 0x40, 0, 63, 17, 0, 0]);
        f.extend(src);
        f.extend(dst);
        f.extend([0x30, 0x39, 0, 53, 0, 8, 0, 0]);
        f
    }

    fn rec(ts: u64, data: Vec<u8>) -> PcapRecord {
        PcapRecord { ts_ns: ts, orig_len: data.len() as u32, data }
    }

    #[test]
    fn parse_errors_are_one_line() {
        assert_eq!(Scenarios::parse("", "S").unwrap_err(), "S: no scenarios");
        assert_eq!(Scenarios::parse("a 10.0.0.1\nb 10.0.0.1\n", "S").unwrap_err(), "S: line 2: 10.0.0.1 already belongs to scenario a");
        assert_eq!(Scenarios::parse("a 10.0.0.x\n", "S").unwrap_err(), "S: line 1: `10.0.0.x' is not an IPv4 or IPv6 address");
        assert_eq!(Scenarios::parse("a\n", "S").unwrap_err(), "S: line 1: scenario a owns no address");
        assert!(Scenarios::parse("a 1.1.1.1\na 2.2.2.2\n", "S").unwrap_err().contains("used twice"));
        let s = Scenarios::parse("# c\n\na 10.1.1.1 10.2.1.1\nb 10.1.2.1\n", "S").unwrap();
        assert_eq!(s.names, ["a", "b"]);
    }

    #[test]
    fn frames_go_to_the_scenario_owning_an_address() {
        let s = Scenarios::parse("a 10.1.1.1 10.2.1.1\nb 10.1.2.1\n", "S").unwrap();
        let client = [198, 18, 0, 5];
        assert_eq!(s.owner(&udp(client, [10, 1, 1, 1])), Some(0));
        assert_eq!(s.owner(&udp([10, 2, 1, 1], client)), Some(0));
        assert_eq!(s.owner(&udp(client, [10, 1, 2, 1])), Some(1));
        assert_eq!(s.owner(&udp(client, [10, 0, 0, 1])), None);
        // An IPIP frame to b's VIP, and an ICMP error quoting a's server.
        let mut ipip = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 48, 0, 0, 0, 0, 64, 4, 0, 0, 10, 0, 0, 1, 192, 168, 9, 9];
        ipip.extend(&udp(client, [10, 1, 2, 1])[14..]);
        assert_eq!(s.owner(&ipip), Some(1));
        let mut icmp = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 56, 0, 0, 0, 0, 64, 1, 0, 0, 198, 18, 0, 5, 10, 0, 0, 1];
        icmp.extend([3, 3, 0, 0, 0, 0, 0, 0]);
        icmp.extend(&udp([10, 2, 1, 1], client)[14..]);
        assert_eq!(s.owner(&icmp), Some(0));
        // IPv6: a VIP, a real server inside an ip6ip6 tunnel.
        let s6 = Scenarios::parse("a 10.1.1.1\nv6 2001:db8:1:7::1 2001:db8:2:7::1\n", "S").unwrap();
        let u = crate::conformance::fields::tests::udp6();
        assert_eq!(s6.owner(&u), Some(1));
        let mut t = u[..14].to_vec();
        t.extend([0x60, 0, 0, 0, 0, 52, 41, 64]);
        t.extend("2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        t.extend("2001:db8:9::1".parse::<Ipv6Addr>().unwrap().octets());
        t.extend(&u[14..]);
        assert_eq!(s6.owner(&t), Some(1));
        assert_eq!(s6.owner(&udp(client, [10, 1, 1, 1])), Some(0));
        // Comparing per scenario: a's frame identical, b's missing on lvsnic's side.
        let k = [rec(1, udp(client, [10, 2, 1, 1])), rec(2, udp(client, [10, 1, 2, 1]))];
        let l = [rec(1, udp(client, [10, 2, 1, 1]))];
        let input = [rec(1, udp(client, [10, 1, 1, 1])), rec(2, udp(client, [10, 1, 2, 1])), rec(3, udp(client, [10, 0, 0, 1]))];
        let c = Compare { kernel: &k, lvsnic: &l, host: &[], local: &[], window_ns: 10 };
        let r = s.compare(&c, &input, &input);
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].name.as_str(), r[0].summary.input_frames, r[0].summary.identical, r[0].summary.unexplained()), ("a", 1, 1, 0));
        assert_eq!((r[1].name.as_str(), r[1].summary.only_kernel), ("b", 1));
        assert_eq!((r[2].name.as_str(), r[2].summary.input_frames, r[2].summary.kernel_frames), (SHARED, 1, 0));
        let t = text(&r);
        assert!(t.lines().nth(1).unwrap().ends_with("<-- UNEXPLAINED"), "{t}");
        assert!(t.contains("only-kernel (1): UDP"), "{t}");
    }
}
