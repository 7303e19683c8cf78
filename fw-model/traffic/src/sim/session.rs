//! Both ends of a session: the client's and the real server's headers and
//! segments, round trips and think times, the start and end of a session
//! and of an exchange.

use lvsnic_model::wire::MacAddr;
use super::*;

impl Sim<'_> {
    pub(super) fn client_l2(&self, sid: u32) -> L2 {
        let s = &self.sess[sid as usize];
        let vlan = s.info.vlan.then(|| self.clients[s.client as usize].vlan);
        L2 { src: self.cfg.gateway_mac.unwrap_or(MacAddr::ZERO), dst: self.cfg.mac, vlan }
    }

    pub(super) fn client_l3(&mut self, sid: u32, df: bool) -> L3 {
        let s = &mut self.sess[sid as usize];
        let c = &self.clients[s.client as usize];
        s.c_id = s.c_id.wrapping_add(1);
        L3 { src: s.info.client.ip(), dst: s.info.service.ip(), ttl: c.ttl, ident: s.c_id, df }
    }

    pub(super) fn server_l2l3(&mut self, sid: u32) -> (L2, L3) {
        let s = &mut self.sess[sid as usize];
        let rs = s.rs.expect("server frames only after the director chose a server");
        s.s_id = s.s_id.wrapping_add(1);
        let l2 = L2 { src: rs.mac, dst: self.cfg.mac, vlan: None };
        let l3 = L3 { src: rs.addr, dst: s.info.client.ip(), ttl: 64, ident: s.s_id, df: true };
        (l2, l3)
    }

    /// A client TCP segment with the session's current numbers.
    pub(super) fn client_seg(&mut self, sid: u32, flags: u8, opts: &[u8], ip_opts: &[u8], payload: &[u8]) -> Vec<u8> {
        let l2 = self.client_l2(sid);
        let df = self.sess[sid as usize].info.dont_frag;
        let l3 = self.client_l3(sid, df);
        let s = &self.sess[sid as usize];
        let t = TcpRepr {
            src_port: s.cport,
            dst_port: s.vport,
            seq_number: s.c_nxt,
            ack_number: if flags & TCP_ACK != 0 { s.c_rcv } else { 0 },
            flags,
            window_len: if flags & TCP_SYN != 0 { 64240 } else { self.clients[s.client as usize].window },
        };
        fb::tcp(&l2, &l3, &t, opts, ip_opts, payload)
    }

    /// A real server TCP segment with the session's current numbers.
    pub(super) fn server_seg(&mut self, sid: u32, flags: u8, opts: &[u8], payload: &[u8]) -> Vec<u8> {
        let (l2, l3) = self.server_l2l3(sid);
        let s = &self.sess[sid as usize];
        let rs = s.rs.expect("server chosen");
        let t = TcpRepr {
            src_port: rs.port,
            dst_port: s.cport,
            seq_number: s.s_nxt,
            ack_number: s.s_rcv,
            flags,
            window_len: if flags & TCP_SYN != 0 { 65160 } else { SERVER_WINDOW },
        };
        fb::tcp(&l2, &l3, &t, opts, &[], payload)
    }

    pub(super) fn learn_rs(&mut self, sid: u32) {
        let Some(id) = self.d.last_conn else { return };
        let c = *self.d.conns.get(id);
        let addr = self.d.conns.addrs(id).daddr;
        let rs = Rs { addr, port: c.dport, mac: self.next_hop_mac(addr), fwd: c.fwd() };
        let s = &mut self.sess[sid as usize];
        s.rs = Some(rs);
        s.info.real_server = Some(sock(addr, c.dport));
        s.info.forwarding = Some(fwd_method(rs.fwd));
    }

    pub(super) fn is_nat(&self, sid: u32) -> bool {
        self.sess[sid as usize].rs.is_some_and(|r| r.fwd == cf::MASQ)
    }

    pub(super) fn rtt(&mut self, sid: u32) -> Time {
        let s = &mut self.sess[sid as usize];
        let base = self.clients[s.client as usize].rtt;
        base + s.rng.below(base / 10 + 1)
    }

    pub(super) fn lan(&mut self, sid: u32) -> Time {
        between(&mut self.sess[sid as usize].rng, 60 * US, 400 * US)
    }

    pub(super) fn server_think(&mut self, sid: u32) -> Time {
        let r = &mut self.sess[sid as usize].rng;
        if r.chance(4, 5) {
            between(r, 100 * US, 2 * MSEC)
        } else {
            between(r, 2 * MSEC, 20 * MSEC)
        }
    }

    pub(super) fn client_think(&mut self, sid: u32) -> Time {
        between(&mut self.sess[sid as usize].rng, 20 * MSEC, 3 * SEC)
    }

    pub(super) fn idle_gap(&mut self, sid: u32) -> Time {
        let s = &mut self.sess[sid as usize];
        self.counts.idle_gaps += 1;
        s.gap_done = true;
        match self.spec.idle_gap {
            Some(g) => g,
            None => {
                let timeout = if s.proto == IPPROTO_TCP {
                    self.cfg.timeouts.tcp.0[tcp_state::ESTABLISHED as usize]
                } else {
                    self.cfg.timeouts.udp
                };
                timeout + between(&mut s.rng, 5 * SEC, 30 * SEC)
            }
        }
    }

    pub(super) fn end(&mut self, sid: u32, ts: Time, how: SessionEnd) {
        let s = &mut self.sess[sid as usize];
        s.info.end = how;
        let (cport, follower) = (s.cport, s.follower);
        if let Some(f) = follower {
            let delay = between(&mut s.rng, 61 * SEC, 90 * SEC);
            let fs = &mut self.sess[f as usize];
            fs.cport = cport;
            fs.info.start = ts + delay;
            self.counts.port_reuses += 1;
            self.push(ts + delay, Ev::Start(f));
        }
    }

    pub(super) fn start(&mut self, now: Time, sid: u32) {
        let client = self.sess[sid as usize].client;
        if self.sess[sid as usize].cport == 0 {
            let p = self.alloc_port(client);
            self.sess[sid as usize].cport = p;
        }
        let s = &mut self.sess[sid as usize];
        s.info.client.set_port(s.cport);
        s.info.start = now;
        self.counts.connections += 1;
        self.counts.ipv6_sessions += s.info.service.is_ipv6() as u64;
        if s.proto == IPPROTO_TCP {
            self.counts.tcp_sessions += 1;
            self.new_exchange(sid);
            self.tcp(now, sid, T::Syn);
        } else {
            self.counts.udp_sessions += 1;
            self.udp(now, sid, U::Query);
        }
    }
}
