//! "Other" frames that are not part of a session: the dispatcher, the
//! multi-step units (ICMP echo, TCP to the director's own address, an IPv4
//! fragment pair) and the helpers that address them.

use lvsnic_model::wire::MacAddr;
use super::*;

impl Other {
    /// A TCP header of this unit's connection to `dst_port` (window 64240).
    pub(super) fn tcp(&self, dst_port: u16, flags: u8) -> TcpRepr {
        TcpRepr {
            src_port: self.port,
            dst_port,
            seq_number: self.seq,
            ack_number: if flags & TCP_ACK != 0 { self.ack } else { 0 },
            flags,
            window_len: 64240,
        }
    }
}

impl Sim<'_> {
    pub(super) fn random_neighbor(&mut self) -> Option<(Ipv4Addr, MacAddr)> {
        let n = self.cfg.neighbors.len();
        if n == 0 {
            return None;
        }
        let i = self.rng.below(n as u64) as usize;
        self.cfg.neighbors.iter().nth(i).map(|(a, m)| (*a, *m))
    }

    pub(super) fn random_mac(&mut self) -> MacAddr {
        let v = self.rng.next_u64().to_be_bytes();
        MacAddr([0x02, v[1], v[2], v[3], v[4], v[5]])
    }

    /// An address of the director's /24 that is nobody we know.
    pub(super) fn unrelated_ip(&mut self) -> Ipv4Addr {
        let o = self.cfg.ip.octets();
        for tries in 0.. {
            let a = if tries < 1000 {
                Ipv4Addr::new(o[0], o[1], o[2], between(&mut self.rng, 2, 250) as u8)
            } else {
                // A crowded /24: TEST-NET-1 then.
                Ipv4Addr::new(192, 0, 2, between(&mut self.rng, 2, 250) as u8)
            };
            if a != self.cfg.ip
                && a != self.gateway_ip
                && !self.cfg.neighbors.contains_key(&a)
                && !self.vips4.contains(&a)
            {
                return a;
            }
        }
        unreachable!("an unrelated address is always found")
    }

    pub(super) fn gw_l2(&self) -> L2 {
        L2 { src: self.cfg.gateway_mac.unwrap_or(MacAddr::ZERO), dst: self.cfg.mac, vlan: None }
    }

    /// The network layer of a frame of unit `o` to `dst`, from the unit's
    /// client's address of `dst`'s family.
    pub(super) fn other_l3(&self, o: &Other, dst: impl Into<IpAddr>, ttl: Option<u8>, df: bool) -> L3 {
        let c = &self.clients[o.client as usize];
        let dst = dst.into();
        let src = if dst.is_ipv6() { IpAddr::V6(c.addr6) } else { IpAddr::V4(c.addr) };
        L3 { src, dst, ttl: ttl.unwrap_or(c.ttl), ident: o.ident.wrapping_add(o.step as u16), df }
    }

    pub(super) fn other(&mut self, now: Time, idx: u32) {
        let o = &self.others[idx as usize];
        let cat = o.cat;
        let (step, steps) = (o.step, o.steps);
        let next_step_in = match cat {
            Category::IcmpEchoVip | Category::IcmpEchoDirector => self.icmp_echo(now, idx),
            Category::TcpToDirector => self.ssh_step(now, idx),
            Category::Fragment => {
                self.fragment(now, idx);
                None
            }
            c if c.is_malformed() => {
                self.malformed(now, idx);
                None
            }
            _ => {
                let f = self.single_other(idx);
                self.emit(now, f, cat, None);
                None
            }
        };
        if let Some(d) = next_step_in {
            if step + 1 < steps {
                self.others[idx as usize].step += 1;
                self.push(now + d, Ev::Other(idx));
            }
        }
    }

    pub(super) fn icmp_echo(&mut self, now: Time, idx: u32) -> Option<Time> {
        let cat = self.others[idx as usize].cat;
        let dst = if cat == Category::IcmpEchoVip { self.random_vip_of(idx) } else { self.cfg.ip };
        let o = &self.others[idx as usize];
        let l3 = self.other_l3(o, dst, None, true);
        let i = Icmpv4Repr::echo(ICMP_ECHO_REQUEST, o.port, o.step as u16 + 1);
        let f = fb::icmp(&self.gw_l2(), &l3, &i, &fb::ping_data(now), &[]);
        self.emit(now, f, cat, None);
        Some(SEC + self.rng.below(MSEC))
    }

    /// The IPv4 VIP an other unit talks to (stable across its steps).
    pub(super) fn random_vip_of(&mut self, idx: u32) -> Ipv4Addr {
        let k = self.others[idx as usize].seq as usize % self.vips4.len().max(1);
        self.vips4.get(k).copied().unwrap_or(self.cfg.ip)
    }

    pub(super) fn ssh_step(&mut self, now: Time, idx: u32) -> Option<Time> {
        let port = self.director_tcp_port.unwrap_or(22);
        let o = &self.others[idx as usize];
        let rtt = self.clients[o.client as usize].rtt;
        let l3 = self.other_l3(o, self.cfg.ip, None, true);
        let (flags, payload, opts): (u8, Vec<u8>, Vec<u8>) = match o.step {
            0 => (TCP_SYN, vec![], fb::client_syn_options(self.mss).to_vec()),
            1 => (TCP_ACK, vec![], vec![]),
            2 => (TCP_ACK | TCP_PSH, b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n".to_vec(), vec![]),
            3 => (TCP_ACK | TCP_PSH, fb::ssh_kexinit(&mut self.rng), vec![]),
            _ => (TCP_FIN | TCP_ACK, vec![], vec![]),
        };
        let t = o.tcp(port, flags);
        let f = fb::tcp(&self.gw_l2(), &l3, &t, &opts, &[], &payload);
        self.emit(now, f, Category::TcpToDirector, None);
        let o = &mut self.others[idx as usize];
        let used = payload.len() as u32 + (flags & (TCP_SYN | TCP_FIN) != 0) as u32;
        o.seq = o.seq.wrapping_add(used);
        // The director's sshd: SYN-ACK (1), banner (32), kex (~1000).
        o.ack = o.ack.wrapping_add(match o.step {
            0 => 1,
            1 => 32,
            3 => 1080,
            _ => 0,
        });
        Some(match o.step {
            0 => rtt,
            1 => 200 * US,
            2 => rtt,
            _ => rtt + 5 * MSEC,
        })
    }

    pub(super) fn fragment(&mut self, now: Time, idx: u32) {
        let udp_svc = self.svcs.iter().find_map(|s| match s.vip {
            IpAddr::V4(v) if s.proto == IPPROTO_UDP => Some((v, s.vport)),
            _ => None,
        });
        let (vip, vport) = match udp_svc {
            Some((v, p)) if p != 0 => (v, p),
            _ => (self.random_vip_of(idx), 53),
        };
        let o = &self.others[idx as usize];
        let l3 = self.other_l3(o, vip, None, false);
        let c_addr = self.clients[o.client as usize].addr;
        // Two fragments: the first as large as the MTU allows.
        let first = ((self.cfg.mtu as usize).min(1500) - 20) / 8 * 8;
        let len = between(&mut self.rng, first as u64 + 100, 2 * first as u64 - 16) as usize;
        let payload = fb::dns_query_padded(o.ident, "big.example.com", 255, len);
        let l2 = self.gw_l2();
        let full = lvsnic_model::wire::build::udp_frame(
            &lvsnic_model::wire::EthernetRepr { src: l2.src, dst: l2.dst, vlan_tci: None, ethertype: 0 },
            &lvsnic_model::wire::Ipv4Repr {
                src_addr: c_addr,
                dst_addr: vip,
                protocol: 0,
                payload_len: 0,
                ttl: l3.ttl,
                tos: 0,
                ident: l3.ident,
                dont_frag: false,
            },
            &lvsnic_model::wire::UdpRepr { src_port: o.port, dst_port: vport },
            &payload,
        );
        let [a, b] = fb::fragment_in_two(&full, 14, first);
        let (ts, _, _) = self.emit(now, a, Category::Fragment, None);
        self.emit(ts + 2 * US, b, Category::Fragment, None);
    }
}
