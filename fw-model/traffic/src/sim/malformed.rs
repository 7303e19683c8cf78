//! Malformed frames: a well-formed segment to a VIP damaged one way per
//! category (see [`crate::Category`]).

use lvsnic_model::wire::MacAddr;
use super::*;

impl Sim<'_> {
    pub(super) fn malformed(&mut self, now: Time, idx: u32) {
        let o = &self.others[idx as usize];
        let cat = o.cat;
        let dst = if self.svcs.is_empty() { self.cfg.ip } else { self.svcs[o.seq as usize % self.svcs.len()].vip };
        let l3 = self.other_l3(o, dst, None, true);
        let t = o.tcp(80, TCP_SYN);
        let good = lvsnic_model::wire::build::tcp_frame(
            &lvsnic_model::wire::EthernetRepr { src: self.cfg.gateway_mac.unwrap_or(MacAddr::ZERO), dst: self.cfg.mac, vlan_tci: None, ethertype: 0 },
            &lvsnic_model::wire::Ipv4Repr {
                src_addr: l3.src,
                dst_addr: l3.dst,
                protocol: IPPROTO_TCP,
                payload_len: 0,
                ttl: l3.ttl,
                tos: 0,
                ident: l3.ident,
                dont_frag: true,
            },
            &t,
            b"",
        );
        let kind = match cat {
            Category::MalformedRunt => Malformed::Runt,
            Category::MalformedTruncatedIpv4 => Malformed::TruncatedIpv4Header,
            Category::MalformedBadVersion => Malformed::BadVersion,
            Category::MalformedBadIhl => Malformed::BadIhl,
            Category::MalformedBadChecksum => Malformed::BadHeaderChecksum,
            Category::MalformedTotalLength => Malformed::TotalLenTooLarge,
            _ => Malformed::TruncatedTcpHeader,
        };
        let f = fb::malform(good, 14, kind, &mut self.rng);
        self.emit(now, f, cat, None);
    }
}
