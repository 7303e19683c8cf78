//! `ip_vs_out` (ip_vs_core.c) behind `ip_forward`: NAT replies from real
//! servers, and `ip_vs_has_real_service` (ip_vs_ctl.c) for the
//! `nat_icmp_send` answer to a reply without a connection.

use crate::wire::icmp::{ICMP_DEST_UNREACH, ICMP_TIME_EXCEEDED, ICMP_UNREACH_FRAG_NEEDED, ICMP_UNREACH_PORT};
use crate::wire::{IPPROTO_TCP, TCP_RST};
use super::{Action, Director, DropReason, HostReason, Pkt};
use crate::conn::flags as cf;
use crate::conn::tcp::Direction;
use crate::rules::FwdMethod;
use crate::xmit;
use std::net::Ipv4Addr;

impl Director {

    /// `ip_forward` + `ip_vs_out` for TCP/UDP not addressed to us: NAT
    /// replies from real servers.
    pub(super) fn ip_vs_out(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let Some((_, sport, dport, tflags)) = p.l4 else {
            return self.host(HostReason::Forward);
        };
        let Some(id) = self.conns.out_get(p.proto, p.saddr, sport, p.daddr, dport) else {
            if self.cfg.sysctl.nat_icmp_send && self.has_real_service(p.proto, p.saddr, sport) && !(p.proto == IPPROTO_TCP && tflags & TCP_RST != 0) {
                let src = u32::from(self.cfg.ip);
                // ip_forward ran before the FORWARD hook: its TTL and MTU
                // checks first, and the port unreachable quotes the packet
                // with its TTL already decreased (seen in Linux 6.1).
                if p.ttl <= 1 {
                    return self.icmp_send(frame, p, ICMP_TIME_EXCEEDED, 0, 0, src, DropReason::TtlExceeded);
                }
                if p.df && self.mtu_size(p) > self.cfg.mtu as u32 {
                    let mtu = self.cfg.mtu as u32;
                    return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_UNREACH_FRAG_NEEDED, mtu, src, DropReason::FragNeeded);
                }
                xmit::trim_to_ip(frame, p.l3);
                xmit::ip_decrease_ttl(frame, p.l3);
                return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_UNREACH_PORT, 0, src, DropReason::NatIcmpSend);
            }
            return self.host(HostReason::Forward);
        };
        let c = *self.conns.get(id);
        if c.fwd() != cf::MASQ {
            return self.host(HostReason::Forward);
        }
        self.last_conn = Some(id);
        self.last_dir = Some(crate::conn::tcp::Direction::Output);
        // ip_forward: TTL, MTU, decrement.
        if p.ttl <= 1 {
            let src = u32::from(self.cfg.ip);
            return self.icmp_send(frame, p, ICMP_TIME_EXCEEDED, 0, 0, src, DropReason::TtlExceeded);
        }
        if p.df && self.mtu_size(p) > self.cfg.mtu as u32 {
            let src = u32::from(self.cfg.ip);
            let mtu = self.cfg.mtu as u32;
            return self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_UNREACH_FRAG_NEEDED, mtu, src, DropReason::FragNeeded);
        }
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        // handle_response
        xmit::nat_rewrite(frame, p.l3, false, Ipv4Addr::from(c.vaddr), c.vport);
        self.out_stats(&c, p.len as u64);
        self.set_state(id, Direction::Output, tflags);
        self.conn_put(id);
        self.forward_options(frame, p.l3);
        let mac = self.tx_next_hop_mac(Ipv4Addr::from(c.caddr));
        xmit::set_macs(frame, mac, self.cfg.mac);
        self.finish_tx(frame, p.l3, extra)
    }

    /// `ip_vs_has_real_service`: a NAT real server with this address/port.
    pub(super) fn has_real_service(&self, proto: u8, addr: u32, port: u16) -> bool {
        self.services.live_services().any(|s| {
            s.proto.number() == proto
                && s.order.iter().any(|&d| {
                    let d = &self.services.dests[d.index()];
                    d.addr4() == addr && d.addr.is_ipv4() && d.port == port && d.fwd == FwdMethod::Masq
                })
        })
    }
}
