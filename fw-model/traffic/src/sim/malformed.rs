//! Malformed frames: a well-formed segment to a VIP damaged one way per
//! category (see [`crate::Category`]).

use lvsnic_model::wire::MacAddr;
use super::*;

impl Sim<'_> {
    pub(super) fn malformed(&mut self, now: Time, idx: u32) {
        if self.others[idx as usize].cat.is_ipv6() {
            return self.malformed6(now, idx);
        }
        let o = &self.others[idx as usize];
        let cat = o.cat;
        let dst = if self.vips4.is_empty() { self.cfg.ip } else { self.vips4[o.seq as usize % self.vips4.len()] };
        let l3 = self.other_l3(o, dst, None, true);
        let (IpAddr::V4(src_addr), IpAddr::V4(dst_addr)) = (l3.src, l3.dst) else { unreachable!("IPv4 addresses") };
        let t = o.tcp(80, TCP_SYN);
        let good = lvsnic_model::wire::build::tcp_frame(
            &lvsnic_model::wire::EthernetRepr { src: self.cfg.gateway_mac.unwrap_or(MacAddr::ZERO), dst: self.cfg.mac, vlan_tci: None, ethertype: 0 },
            &lvsnic_model::wire::Ipv4Repr {
                src_addr,
                dst_addr,
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

    /// An IPv6 malformed frame: a TCP SYN to an IPv6 VIP damaged one way
    /// per category.
    fn malformed6(&mut self, now: Time, idx: u32) {
        let o = &self.others[idx as usize];
        let cat = o.cat;
        let dst = self.vips6[o.seq as usize % self.vips6.len()];
        let l3 = self.other_l3(o, dst, None, true);
        let t = o.tcp(80, TCP_SYN);
        let good = fb::tcp(&self.gw_l2(), &l3, &t, &[], &[], &[]);
        let kind = match cat {
            Category::MalformedTruncatedIpv6 => Malformed6::TruncatedHeader,
            Category::MalformedIpv6PayloadLength => Malformed6::PayloadLenTooLarge,
            Category::MalformedIpv6ShortPayload => Malformed6::PayloadLenTooSmall,
            Category::MalformedIpv6HopByHop => Malformed6::HopByHopOverrun,
            Category::MalformedIpv6UnknownNext => Malformed6::UnknownNextHeader,
            _ => unreachable!("not an IPv6 malformed category: {cat:?}"),
        };
        let f = fb::malform6(good, 14, kind, &mut self.rng);
        self.emit(now, f, cat, None);
    }
}
