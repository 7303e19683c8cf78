//! Neighbours as the wire shows them, against the static `[neighbors]`
//! entries: every ARP frame the director receives (from its wire, or handed
//! up by the card) whose sender is a configured neighbour is compared with
//! the configured MAC. A real server whose MAC changed (a VM migrated, a
//! NIC swapped) is black-holed by a stale entry while its health checker,
//! which goes through the host's own ARP, says it is up; this makes it
//! visible: each mismatching frame is counted (`neighbors.mismatches` in
//! `lvsnic status`), and the event log has one `neighbor_mismatch`
//! warning when a neighbour is first seen with another MAC (and again if
//! that MAC changes), and one `neighbor_match` when it answers with the
//! configured MAC again. Static entries still win: nothing is rewritten.

use lvsnic_model::wire::arp::ArpPacket;
use lvsnic_model::wire::MacAddr;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;

/// The watch over ARP senders.
#[derive(Debug, Default)]
pub struct NeighborWatch {
    /// ARP frames whose sender contradicted its `[neighbors]` entry.
    pub mismatches: u64,
    /// Neighbours last seen with another MAC than configured, and that MAC.
    seen: HashMap<Ipv4Addr, MacAddr>,
}

/// `neighbors` in `lvsnic status`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NeighborStatus {
    /// ARP frames whose sender contradicted its `[neighbors]` entry.
    pub mismatches: u64,
    /// Neighbours whose last ARP frame had another MAC: `IP` → `MAC seen`.
    pub mismatched: BTreeMap<String, String>,
}

/// The sender of an Ethernet ARP frame (untagged), if `frame` is one.
fn arp_sender(frame: &[u8]) -> Option<(Ipv4Addr, MacAddr, u16)> {
    if frame.len() < 14 || frame[12..14] != [0x08, 0x06] {
        return None;
    }
    let a = ArpPacket::new_checked(&frame[14..]).ok()?;
    Some((a.sender_protocol_addr(), a.sender_hardware_addr(), a.operation()))
}

impl NeighborWatch {
    /// Looks at one received frame.
    pub fn observe(&mut self, neighbors: &BTreeMap<Ipv4Addr, MacAddr>, frame: &[u8]) {
        let Some((ip, mac, op)) = arp_sender(frame) else { return };
        let Some(&configured) = neighbors.get(&ip) else { return };
        let (ip_s, op_s) = (ip.to_string(), if op == 2 { "reply" } else { "request" });
        if mac == configured {
            if self.seen.remove(&ip).is_some() {
                crate::logging::event(log::Level::Info, "neighbor_match", &[("ip", &ip_s), ("mac", &mac.to_string()), ("arp", op_s)]);
            }
            return;
        }
        self.mismatches += 1;
        if self.seen.insert(ip, mac) != Some(mac) {
            crate::logging::event(
                log::Level::Warn,
                "neighbor_mismatch",
                &[("ip", &ip_s), ("configured", &configured.to_string()), ("seen", &mac.to_string()), ("arp", op_s)],
            );
        }
    }

    /// For `lvsnic status`.
    pub fn status(&self) -> NeighborStatus {
        NeighborStatus {
            mismatches: self.mismatches,
            mismatched: self.seen.iter().map(|(ip, mac)| (ip.to_string(), mac.to_string())).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arp(op: u16, sha: [u8; 6], spa: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&sha);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4]);
        f.extend_from_slice(&op.to_be_bytes());
        f.extend_from_slice(&sha);
        f.extend_from_slice(&spa);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&[10, 0, 0, 1]);
        f
    }

    #[test]
    fn mismatches_are_counted_and_remembered_until_the_configured_mac_answers() {
        let good = [2, 0, 0, 0, 0x10, 1];
        let moved = [2, 0, 0, 0, 0x99, 1];
        let nb = BTreeMap::from([(Ipv4Addr::new(192, 168, 10, 1), MacAddr(good))]);
        let mut w = NeighborWatch::default();
        w.observe(&nb, &arp(2, good, [192, 168, 10, 1]));
        w.observe(&nb, &arp(1, moved, [192, 168, 10, 9])); // not a configured neighbour
        w.observe(&nb, &arp(1, moved, [192, 168, 10, 1])[..20]); // truncated: not ARP enough
        assert_eq!(w.mismatches, 0);
        w.observe(&nb, &arp(2, moved, [192, 168, 10, 1]));
        w.observe(&nb, &arp(1, moved, [192, 168, 10, 1]));
        assert_eq!(w.mismatches, 2);
        assert_eq!(w.status().mismatched, BTreeMap::from([("192.168.10.1".to_string(), "02:00:00:00:99:01".to_string())]));
        w.observe(&nb, &arp(2, good, [192, 168, 10, 1]));
        assert_eq!(w.mismatches, 2);
        assert!(w.status().mismatched.is_empty());
    }
}
