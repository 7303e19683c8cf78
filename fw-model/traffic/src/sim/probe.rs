//! Single-frame "other" units: ARP, IPv6, foreign EtherTypes and MACs,
//! broadcast, IP options, and probes of a VIP port (SYN to a closed port,
//! stray ACK, TTL 1, oversized DF to a tunnel service, hop limit 1 to an
//! IPv6 service).

use lvsnic_model::wire::MacAddr;
use super::*;

impl Sim<'_> {
    pub(super) fn single_other(&mut self, idx: u32) -> Vec<u8> {
        let cat = self.others[idx as usize].cat;
        let gw = (self.cfg.gateway_mac.unwrap_or(MacAddr::ZERO), self.gateway_ip);
        match cat {
            Category::ArpVip => {
                let vip = self.random_vip_of(idx);
                let l2 = L2 { src: gw.0, dst: MacAddr::BROADCAST, vlan: None };
                fb::arp(&l2, ArpOperation::Request, gw, (MacAddr::ZERO, vip))
            }
            Category::ArpDirector => {
                let sender = self.random_neighbor().map(|(a, m)| (m, a)).unwrap_or(gw);
                // A broadcast request, or a unicast refresh of a stale entry.
                let dst = if self.rng.chance(1, 2) { MacAddr::BROADCAST } else { self.cfg.mac };
                let l2 = L2 { src: sender.0, dst, vlan: None };
                fb::arp(&l2, ArpOperation::Request, sender, (MacAddr::ZERO, self.cfg.ip))
            }
            Category::ArpOther => {
                let l2b = |src| L2 { src, dst: MacAddr::BROADCAST, vlan: None };
                match self.random_neighbor() {
                    Some((a, m)) if self.rng.chance(1, 2) => {
                        // Gratuitous ARP from a real server.
                        fb::arp(&l2b(m), ArpOperation::Reply, (m, a), (MacAddr::BROADCAST, a))
                    }
                    _ => {
                        let target = self.unrelated_ip();
                        fb::arp(&l2b(gw.0), ArpOperation::Request, gw, (MacAddr::ZERO, target))
                    }
                }
            }
            Category::SynNoService
            | Category::StrayAck
            | Category::Ttl1
            | Category::OversizeDfTunnel
            | Category::HopLimit1 => self.probe(idx, cat),
            Category::Ipv6 => {
                let src = if self.rng.chance(1, 2) { self.cfg.gateway_mac.unwrap_or(MacAddr::ZERO) } else { self.random_mac() };
                if self.rng.chance(1, 2) {
                    let low = self.rng.next_u64() as u32;
                    fb::ipv6_neighbor_solicitation(src, low, &mut self.rng)
                } else {
                    fb::ipv6_echo(src, self.cfg.mac, &mut self.rng)
                }
            }
            Category::OtherEthertype => {
                let mac = self.random_mac();
                let port = between(&mut self.rng, 1, 48) as u16;
                fb::lldp(mac, port)
            }
            Category::OtherMac => {
                let mut dst = self.random_mac();
                if dst == self.cfg.mac {
                    dst.0[5] ^= 1;
                }
                let host = self.unrelated_ip();
                let o = &self.others[idx as usize];
                let l3 = self.other_l3(o, host, None, true);
                let t = TcpRepr {
                    src_port: o.port,
                    dst_port: 443,
                    seq_number: o.seq,
                    ack_number: o.ack,
                    flags: TCP_ACK | TCP_PSH,
                    window_len: 1026,
                };
                let mut payload = vec![0x17, 0x03, 0x03, 0x00, 0x40];
                self.filler.extend(&mut payload, o.ack as usize, 64);
                fb::tcp(&L2 { src: self.cfg.gateway_mac.unwrap_or(MacAddr::ZERO), dst, vlan: None }, &l3, &t, &[], &[], &payload)
            }
            Category::Broadcast => {
                let mac = self.random_mac();
                let xid = self.rng.next_u64() as u32;
                fb::dhcp_discover(mac, xid)
            }
            Category::IpOptions => {
                let vip = self.random_vip_of(idx);
                let o = &self.others[idx as usize];
                let l3 = self.other_l3(o, vip, None, false);
                let i = Icmpv4Repr::echo(ICMP_ECHO_REQUEST, o.port, 1);
                fb::icmp(&self.gw_l2(), &l3, &i, &fb::ping_data(o.seq as u64 * 1000), &fb::ip_opt_record_route())
            }
            _ => unreachable!("not a single-frame other category: {cat:?}"),
        }
    }

    /// Frames to a VIP service port from a fresh client port: a SYN to a
    /// closed port, a stray ACK, a TTL-1 probe, an oversized DF packet to a
    /// tunnel service (all IPv4), a hop-limit-1 probe of an IPv6 service.
    pub(super) fn probe(&mut self, idx: u32, cat: Category) -> Vec<u8> {
        let v6 = cat == Category::HopLimit1;
        let pick_svc = |sim: &mut Sim, f: &dyn Fn(&Svc) -> bool| -> Option<usize> {
            let c: Vec<usize> =
                (0..sim.svcs.len()).filter(|&i| sim.svcs[i].vip.is_ipv6() == v6 && f(&sim.svcs[i])).collect();
            (!c.is_empty()).then(|| c[sim.rng.below(c.len() as u64) as usize])
        };
        let svc = match cat {
            Category::StrayAck => pick_svc(self, &|s| s.proto == IPPROTO_TCP && s.vport != 0),
            Category::OversizeDfTunnel => pick_svc(self, &|s| s.tunnel_only),
            _ => pick_svc(self, &|_| true),
        };
        let (proto, vip, vport) = match (cat, svc) {
            (Category::SynNoService, _) => {
                let (v, p) = self.closed_port.expect("deck has SynNoService only with a closed port");
                (IPPROTO_TCP, IpAddr::V4(v), p)
            }
            (_, Some(i)) => {
                let s = &self.svcs[i];
                (s.proto, s.vip, if s.vport != 0 { s.vport } else { 80 })
            }
            (_, None) => unreachable!("deck has {cat:?} only with a matching service"),
        };
        let o = &self.others[idx as usize];
        let ttl = matches!(cat, Category::Ttl1 | Category::HopLimit1).then_some(1);
        let df = cat != Category::Ttl1 || self.rng.chance(1, 2);
        let l2 = self.gw_l2();
        let l3 = self.other_l3(o, vip, ttl, df);
        let big = cat == Category::OversizeDfTunnel;
        if proto == IPPROTO_UDP {
            let payload = if big {
                fb::dns_query_padded(o.ident, "probe.example.com", 1, self.cfg.mtu as usize - 28)
            } else {
                fb::dns_query(o.ident, "probe.example.com", 1)
            };
            return fb::udp(&l2, &l3, o.port, vport, &payload, false);
        }
        let opts = fb::client_syn_options(if v6 { self.mss6 } else { self.mss });
        let (flags, opts, payload): (u8, &[u8], Vec<u8>) = match cat {
            Category::StrayAck => (TCP_ACK, &[], vec![]),
            Category::OversizeDfTunnel => {
                // A TCP Fast Open SYN carrying a full packet of data.
                let mut p = Vec::new();
                self.filler.extend(&mut p, o.seq as usize, self.cfg.mtu as usize - 40 - opts.len());
                (TCP_SYN, &opts, p)
            }
            _ => (TCP_SYN, &opts, vec![]),
        };
        let t = o.tcp(vport, flags);
        fb::tcp(&l2, &l3, &t, opts, &[], &payload)
    }
}
