//! UDP sessions: DNS-like queries and answers, retransmission of unanswered
//! queries, the client's ICMP port unreachable quoting the server's reply,
//! a NAT real server's ICMP port unreachable quoting the client's query.

use super::*;

impl Sim<'_> {
    pub(super) fn udp(&mut self, now: Time, sid: u32, step: U) {
        match step {
            U::Query => self.udp_query(now, sid),
            U::Reply => self.udp_reply(now, sid),
            U::IcmpErr => {
                let s = &self.sess[sid as usize];
                let quote = s.quote.clone();
                let l2 = self.client_l2(sid);
                let mut l3 = self.client_l3(sid, false);
                l3.dst = self.sess[sid as usize].info.service.ip();
                let f = if l3.v6().is_some() {
                    fb::icmp6_error(&l2, &l3, icmpv6::ICMPV6_DEST_UNREACH, icmpv6::ICMPV6_PORT_UNREACH, 0, &quote)
                } else {
                    let i = Icmpv4Repr { msg_type: ICMP_DEST_UNREACH, msg_code: ICMP_UNREACH_PORT, rest_of_header: 0 };
                    fb::icmp(&l2, &l3, &i, &quote, &[])
                };
                let (ts, _, _) = self.emit(now, f, Category::ClientIcmpError, Some(sid));
                self.end(sid, ts, SessionEnd::Completed);
            }
            U::Next => {
                let s = &mut self.sess[sid as usize];
                s.exchanges = s.exchanges.saturating_sub(1);
                if s.exchanges == 0 {
                    self.end(sid, now, SessionEnd::Completed);
                    return;
                }
                let d = if s.info.kind == SessionKind::Idle && !s.gap_done {
                    self.idle_gap(sid)
                } else {
                    between(&mut s.rng, 10 * MSEC, 2 * SEC)
                };
                self.push(now + d, Ev::Udp(sid, U::Query));
            }
        }
    }

    pub(super) fn udp_query(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        if s.attempts == 0 {
            let id = s.rng.next_u64() as u16;
            let name = format!("h{}.svc{}.example.com", s.rng.below(1000), s.svc);
            let qtype = if s.rng.chance(1, 10) { 16 } else { 1 };
            s.query = fb::dns_query(id, &name, qtype);
        }
        let (cport, vport, zero) = (s.cport, s.vport, s.info.zero_checksum);
        let query = s.query.clone();
        let l2 = self.client_l2(sid);
        let df = self.sess[sid as usize].info.dont_frag;
        let l3 = self.client_l3(sid, df);
        let f = fb::udp(&l2, &l3, cport, vport, &query, zero);
        let (ts, out, work) = self.emit(now, f, Category::UdpClient, Some(sid));
        match out {
            Outcome::Forwarded => {
                self.learn_rs(sid);
                self.sess[sid as usize].attempts = 0;
                if self.sess[sid as usize].info.server_icmp_error {
                    if self.is_nat(sid) {
                        // The query as the real server got it, for its error.
                        let l3 = parse_frame(&work).l2_len;
                        self.sess[sid as usize].quote = fb::quote_received(&work, l3, 0);
                    } else {
                        // DR, TUN: the server's error goes straight to the
                        // client; this session is a normal one.
                        self.sess[sid as usize].info.server_icmp_error = false;
                    }
                }
                let last = self.sess[sid as usize].exchanges == 1;
                let icmp_err = last && self.sess[sid as usize].info.client_icmp_error;
                if self.is_nat(sid) {
                    let d = self.lan(sid) + self.server_think(sid);
                    self.push(ts + d, Ev::Udp(sid, U::Reply));
                } else {
                    if icmp_err {
                        // The reply (from the VIP, straight from the server)
                        // as the client got it.
                        let resp = self.dns_answer(sid);
                        let s = &self.sess[sid as usize];
                        let c = &self.clients[s.client as usize];
                        let l2 = L2 { src: MacAddr::ZERO, dst: MacAddr::ZERO, vlan: None };
                        let (src, dst) = (s.info.service.ip(), s.info.client.ip());
                        let l3 = L3 { src, dst, ttl: 64, ident: s.s_id, df: false };
                        let f = fb::udp(&l2, &l3, s.vport, s.cport, &resp, false);
                        let hops = c.hops;
                        self.sess[sid as usize].quote = fb::quote_received(&f, 14, hops);
                    }
                    let d = self.rtt(sid) + self.server_think(sid);
                    self.push(ts + d, Ev::Udp(sid, if icmp_err { U::IcmpErr } else { U::Next }));
                }
            }
            Outcome::Dropped(_) => self.retry(ts, sid, Ev::Udp(sid, U::Query), 2, SEC),
            _ => self.end(sid, ts, SessionEnd::Refused),
        }
    }

    pub(super) fn dns_answer(&mut self, sid: u32) -> Vec<u8> {
        let s = &mut self.sess[sid as usize];
        let a = between(&mut s.rng, 1, 8) as u16;
        let txt = between(&mut s.rng, 100, 1100) as usize;
        fb::dns_response(&s.query, a, txt, &mut s.rng)
    }

    pub(super) fn udp_reply(&mut self, now: Time, sid: u32) {
        if self.sess[sid as usize].info.server_icmp_error {
            self.server_icmp_error(now, sid);
            return;
        }
        let resp = self.dns_answer(sid);
        let (l2, l3) = self.server_l2l3(sid);
        let s = &self.sess[sid as usize];
        let rs = s.rs.expect("server chosen");
        let f = fb::udp(&l2, &l3, rs.port, s.cport, &resp, false);
        let (ts, out, work) = self.emit(now, f, Category::UdpServer, Some(sid));
        if out != Outcome::Forwarded {
            self.end(sid, ts, SessionEnd::Lost);
            return;
        }
        let s = &self.sess[sid as usize];
        let icmp_err = s.exchanges == 1 && s.info.client_icmp_error;
        if icmp_err {
            let hops = self.clients[s.client as usize].hops;
            let l3 = parse_frame(&work).l2_len;
            self.sess[sid as usize].quote = fb::quote_received(&work, l3, hops.saturating_sub(1));
        }
        let d = self.rtt(sid) / 2 + between(&mut self.sess[sid as usize].rng, 10 * US, 500 * US);
        self.push(ts + d, Ev::Udp(sid, if icmp_err { U::IcmpErr } else { U::Next }));
    }

    /// Nothing listens on the NAT real server's port: it answers the query
    /// with an ICMP (IPv6: ICMPv6) port unreachable quoting it, which the
    /// director relays to the client (`ip_vs_out_icmp`, `_v6`), whose
    /// resolver then gives up.
    fn server_icmp_error(&mut self, now: Time, sid: u32) {
        let (l2, mut l3) = self.server_l2l3(sid);
        l3.df = false;
        let quote = std::mem::take(&mut self.sess[sid as usize].quote);
        let f = if l3.v6().is_some() {
            fb::icmp6_error(&l2, &l3, icmpv6::ICMPV6_DEST_UNREACH, icmpv6::ICMPV6_PORT_UNREACH, 0, &quote)
        } else {
            let i = Icmpv4Repr { msg_type: ICMP_DEST_UNREACH, msg_code: ICMP_UNREACH_PORT, rest_of_header: 0 };
            fb::icmp(&l2, &l3, &i, &quote, &[])
        };
        let (ts, _, _) = self.emit(now, f, Category::ServerIcmpError, Some(sid));
        self.sess[sid as usize].info.client_icmp_error = false;
        self.end(sid, ts, SessionEnd::Refused);
    }
}
