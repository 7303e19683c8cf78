//! TCP sessions, step by step: handshake (with retransmission and refusal),
//! request and response flights with delayed ACKs, path MTU discovery off a
//! tunnel service, think times, idle gaps, FIN or RST from either side.

use super::*;

impl Sim<'_> {
    pub(super) fn new_exchange(&mut self, sid: u32) {
        let s = &mut self.sess[sid as usize];
        let r = &mut s.rng;
        let upload = s.first_exchange && s.info.upload;
        s.first_exchange = false;
        let req_size = if upload {
            between(r, 3000, 40_000)
        } else if r.chance(4, 5) {
            between(r, 120, 900)
        } else {
            between(r, 900, 3000)
        } as u32;
        let resp_size = match r.below(100) {
            0..=64 => between(r, 200, 1500),
            65..=91 => between(r, 1500, 16 * 1024),
            _ => between(r, 16 * 1024, 128 * 1024),
        } as u32;
        let path = r.next_u64() >> 40;
        s.req = fb::http_request(s.info.service.ip(), path, req_size, upload);
        s.resp = fb::http_response(resp_size);
    }

    /// The server's FIN-ACK; the client answers with `next` one RTT later.
    pub(super) fn server_fin(&mut self, now: Time, sid: u32, next: T) {
        let f = self.server_seg(sid, TCP_FIN | TCP_ACK, &[], &[]);
        let Some(ts) = self.emit_server(now, sid, f) else { return };
        let s = &mut self.sess[sid as usize];
        s.s_nxt = s.s_nxt.wrapping_add(1);
        let d = self.rtt(sid);
        self.push(ts + d, Ev::Tcp(sid, next));
    }

    /// The client's FIN-ACK; returns when it went out.
    fn client_fin(&mut self, now: Time, sid: u32) -> Option<Time> {
        let f = self.client_seg(sid, TCP_FIN | TCP_ACK, &[], &[], &[]);
        let ts = self.emit_client(now, sid, f, Category::TcpClient)?;
        let s = &mut self.sess[sid as usize];
        s.c_nxt = s.c_nxt.wrapping_add(1);
        s.s_rcv = s.c_nxt;
        Some(ts)
    }

    pub(super) fn tcp(&mut self, now: Time, sid: u32, step: T) {
        match step {
            T::Syn => self.tcp_syn(now, sid),
            T::SynAck => self.tcp_synack(now, sid),
            T::Ack => self.tcp_ack(now, sid),
            T::Send => self.tcp_send(now, sid),
            T::SrvAck => {
                let f = self.server_seg(sid, TCP_ACK, &[], &[]);
                self.emit_server(now, sid, f);
            }
            T::Respond => self.tcp_respond(now, sid),
            T::CliAcks => self.tcp_cli_acks(now, sid),
            T::Think => self.tcp_think(now, sid),
            T::CliFin => {
                let Some(ts) = self.client_fin(now, sid) else { return };
                if self.is_nat(sid) {
                    let d = self.lan(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::SrvFinAck));
                } else {
                    // The server's FIN-ACK goes straight to the client.
                    let s = &mut self.sess[sid as usize];
                    s.s_nxt = s.s_nxt.wrapping_add(1);
                    let d = self.rtt(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::CliLastAck));
                }
            }
            T::SrvFinAck => self.server_fin(now, sid, T::CliLastAck),
            T::CliLastAck => {
                let s = &mut self.sess[sid as usize];
                s.c_rcv = s.s_nxt;
                let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
                if let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) {
                    self.end(sid, ts, SessionEnd::ClientClose);
                }
            }
            T::SrvFin => self.server_fin(now, sid, T::CliAckFin),
            T::CliAckFin => {
                let s = &mut self.sess[sid as usize];
                s.c_rcv = s.s_nxt;
                if s.rng.chance(1, 2) {
                    // ACK the FIN now, close a little later.
                    let later = between(&mut s.rng, 100 * US, 5 * MSEC);
                    let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
                    if let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) {
                        self.push(ts + later, Ev::Tcp(sid, T::CliFinAfterAck));
                    }
                } else {
                    self.tcp(now, sid, T::CliFinAfterAck);
                }
            }
            T::CliFinAfterAck => {
                let Some(ts) = self.client_fin(now, sid) else { return };
                if self.is_nat(sid) {
                    let d = self.lan(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::SrvLastAck));
                } else {
                    self.end(sid, ts, SessionEnd::ServerClose);
                }
            }
            T::SrvLastAck => {
                let f = self.server_seg(sid, TCP_ACK, &[], &[]);
                if let Some(ts) = self.emit_server(now, sid, f) {
                    self.end(sid, ts, SessionEnd::ServerClose);
                }
            }
            T::CliRst => {
                let f = self.client_seg(sid, TCP_RST | TCP_ACK, &[], &[], &[]);
                if let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) {
                    self.end(sid, ts, SessionEnd::ClientReset);
                }
            }
            T::SrvRst => {
                let f = self.server_seg(sid, TCP_RST | TCP_ACK, &[], &[]);
                if let Some(ts) = self.emit_server(now, sid, f) {
                    self.end(sid, ts, SessionEnd::ServerReset);
                }
            }
        }
    }

    /// Emits a client segment of an established session; on anything but
    /// forwarding the session ends (the director's stack resets it, or it
    /// is refused). Returns the timestamp when forwarded.
    pub(super) fn emit_client(&mut self, now: Time, sid: u32, f: Vec<u8>, cat: Category) -> Option<Time> {
        let (ts, out, _) = self.emit(now, f, cat, Some(sid));
        match out {
            Outcome::Forwarded => Some(ts),
            Outcome::ToHost(_) if cat == Category::TcpIdleResume => {
                self.end(sid, ts, SessionEnd::IdleReset);
                None
            }
            Outcome::Dropped(_) => {
                self.end(sid, ts, SessionEnd::GaveUp);
                None
            }
            _ => {
                self.end(sid, ts, SessionEnd::Refused);
                None
            }
        }
    }

    /// Emits a real server's segment; if the director does not forward it
    /// the client never hears of it and the session is lost.
    pub(super) fn emit_server(&mut self, now: Time, sid: u32, f: Vec<u8>) -> Option<Time> {
        let cat = if self.sess[sid as usize].proto == IPPROTO_TCP { Category::TcpServer } else { Category::UdpServer };
        let (ts, out, _) = self.emit(now, f, cat, Some(sid));
        if out == Outcome::Forwarded {
            Some(ts)
        } else {
            self.end(sid, ts, SessionEnd::Lost);
            None
        }
    }

    pub(super) fn tcp_syn(&mut self, now: Time, sid: u32) {
        let s = &self.sess[sid as usize];
        let ip_opts: &[u8] = if s.info.ip_options { &fb::IP_OPT_TIMESTAMP } else { &[] };
        let opts = fb::client_syn_options(s.mss);
        let f = self.client_seg(sid, TCP_SYN, &opts, ip_opts, &[]);
        let (ts, out, _) = self.emit(now, f, Category::TcpClient, Some(sid));
        match out {
            Outcome::Forwarded => {
                self.learn_rs(sid);
                let nat = self.is_nat(sid);
                let s = &mut self.sess[sid as usize];
                s.c_nxt = s.c_nxt.wrapping_add(1);
                s.s_rcv = s.c_nxt;
                s.attempts = 0;
                if nat {
                    let d = self.lan(sid);
                    self.push(ts + d, Ev::Tcp(sid, T::SynAck));
                } else if s.info.kind == SessionKind::HalfOpen {
                    self.end(sid, ts, SessionEnd::HalfOpen);
                } else {
                    // The SYN-ACK went straight to the client.
                    s.s_nxt = s.s_isn.wrapping_add(1);
                    let d = self.rtt(sid) + self.lan(sid) / 2;
                    self.push(ts + d, Ev::Tcp(sid, T::Ack));
                }
            }
            Outcome::Dropped(_) => self.retry(ts, sid, Ev::Tcp(sid, T::Syn), 2, SEC),
            _ => self.end(sid, ts, SessionEnd::Refused),
        }
    }

    /// Retransmits `ev` after `rto << attempts`, at most `max` times.
    pub(super) fn retry(&mut self, ts: Time, sid: u32, ev: Ev, max: u8, rto: Time) {
        let s = &mut self.sess[sid as usize];
        if s.attempts >= max {
            self.end(sid, ts, SessionEnd::GaveUp);
            return;
        }
        let at = ts + (rto << s.attempts);
        s.attempts += 1;
        self.counts.retransmissions += 1;
        self.push(at, ev);
    }

    pub(super) fn tcp_synack(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        s.s_nxt = s.s_isn;
        let opts = fb::server_synack_options(self.family_mss(sid));
        let f = self.server_seg(sid, TCP_SYN | TCP_ACK, &opts, &[]);
        let Some(ts) = self.emit_server(now, sid, f) else { return };
        let s = &mut self.sess[sid as usize];
        s.s_nxt = s.s_isn.wrapping_add(1);
        if s.info.kind == SessionKind::HalfOpen {
            // Nobody answers: the server retransmits its SYN-ACK twice.
            if s.attempts < 2 {
                let at = ts + (SEC << s.attempts);
                s.attempts += 1;
                self.counts.retransmissions += 1;
                self.push(at, Ev::Tcp(sid, T::SynAck));
            } else {
                self.end(sid, ts, SessionEnd::HalfOpen);
            }
            return;
        }
        let d = self.rtt(sid);
        self.push(ts + d, Ev::Tcp(sid, T::Ack));
    }

    pub(super) fn tcp_ack(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        s.c_rcv = s.s_nxt;
        let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
        let Some(ts) = self.emit_client(now, sid, f, Category::TcpClient) else { return };
        self.counts.handshakes += 1;
        let s = &mut self.sess[sid as usize];
        let d = between(&mut s.rng, 30 * US, 300 * US);
        self.push(ts + d, Ev::Tcp(sid, T::Send));
    }

    /// Whether a client segment of `n` payload bytes will bounce off the
    /// tunnel MTU: IPv4, DF set, tunnel server, PMTU discovery on; IPv6
    /// (never fragmented on the way), tunnel server, the outer header (40
    /// bytes, 20 to an IPv4 server) taking it over the MTU.
    pub(super) fn bounces(&self, sid: u32, n: usize) -> bool {
        let s = &self.sess[sid as usize];
        let Some(rs) = s.rs.filter(|r| r.fwd == cf::TUNNEL) else { return false };
        if self.is_v6(sid) {
            let outer = if rs.addr.is_ipv6() { 40 } else { 20 };
            return 60 + n + outer > self.cfg.mtu as usize;
        }
        s.info.dont_frag && self.cfg.sysctl.pmtu_disc && 40 + n + 20 > self.cfg.mtu as usize
    }

    pub(super) fn tcp_send(&mut self, now: Time, sid: u32) {
        let mut t = now;
        let mut last = now;
        let mut sent = 0;
        loop {
            let s = &self.sess[sid as usize];
            if s.req.left() == 0 || sent == FLIGHT {
                break;
            }
            let n = s.req.left().min(s.mss as u32);
            let payload = s.req.bytes(&self.filler, s.req.off, n);
            let flags = TCP_ACK | if n == s.req.left() { TCP_PSH } else { 0 };
            let cat = if s.gap_pending {
                Category::TcpIdleResume
            } else if self.bounces(sid, n as usize) {
                Category::OversizeDfTunnel
            } else {
                Category::TcpClient
            };
            self.sess[sid as usize].gap_pending = false;
            let f = self.client_seg(sid, flags, &[], &[], &payload);
            let flen = f.len();
            let (ts, out, work) = self.emit(t, f, cat, Some(sid));
            match out {
                Outcome::Forwarded => {
                    let s = &mut self.sess[sid as usize];
                    s.c_nxt = s.c_nxt.wrapping_add(n);
                    s.s_rcv = s.c_nxt;
                    s.req.off += n;
                    s.attempts = 0;
                    sent += 1;
                    last = ts;
                    t = ts + ser(flen);
                }
                Outcome::IcmpError(DropReason::FragNeeded) => {
                    let mtu = icmp_next_hop_mtu(&work).unwrap_or(0);
                    let (overhead, min) = if self.is_v6(sid) { (60, 1220) } else { (40, 536) };
                    let s = &mut self.sess[sid as usize];
                    let new_mss = mtu.saturating_sub(overhead);
                    if new_mss < min || new_mss >= s.mss {
                        self.end(sid, ts, SessionEnd::GaveUp);
                        return;
                    }
                    s.mss = new_mss;
                    self.counts.pmtu_reductions += 1;
                    let d = self.rtt(sid) / 2 + between(&mut self.sess[sid as usize].rng, 20 * US, 200 * US);
                    self.push(ts + d, Ev::Tcp(sid, T::Send));
                    return;
                }
                Outcome::Dropped(_) => {
                    let rto = (2 * self.clients[self.sess[sid as usize].client as usize].rtt).max(200 * MSEC);
                    self.retry(ts, sid, Ev::Tcp(sid, T::Send), 3, rto);
                    return;
                }
                Outcome::ToHost(_) if cat == Category::TcpIdleResume => {
                    self.end(sid, ts, SessionEnd::IdleReset);
                    return;
                }
                _ => {
                    self.end(sid, ts, SessionEnd::Refused);
                    return;
                }
            }
        }
        let nat = self.is_nat(sid);
        if self.sess[sid as usize].req.left() > 0 {
            // Window full: the server acknowledges, the client goes on.
            let lan = self.lan(sid);
            if nat {
                self.push(last + lan, Ev::Tcp(sid, T::SrvAck));
            }
            let d = self.rtt(sid) + lan;
            self.push(last + d, Ev::Tcp(sid, T::Send));
        } else {
            let d = self.lan(sid) / 2 + self.server_think(sid);
            self.push(last + d, Ev::Tcp(sid, T::Respond));
        }
    }

    pub(super) fn tcp_respond(&mut self, now: Time, sid: u32) {
        let nat = self.is_nat(sid);
        let mut t = now;
        let mut last = now;
        self.sess[sid as usize].flight_ends.clear();
        for _ in 0..FLIGHT {
            let s = &self.sess[sid as usize];
            if s.resp.left() == 0 {
                break;
            }
            let n = s.resp.left().min(self.family_mss(sid) as u32);
            if nat {
                let payload = s.resp.bytes(&self.filler, s.resp.off, n);
                let flags = TCP_ACK | if n == s.resp.left() { TCP_PSH } else { 0 };
                let f = self.server_seg(sid, flags, &[], &payload);
                let flen = f.len();
                let Some(ts) = self.emit_server(t, sid, f) else { return };
                last = ts;
                t = ts + ser(flen);
            }
            let s = &mut self.sess[sid as usize];
            s.s_nxt = s.s_nxt.wrapping_add(n);
            s.resp.off += n;
            let e = s.s_nxt;
            s.flight_ends.push(e);
        }
        let d = self.rtt(sid);
        self.push(last + d, Ev::Tcp(sid, T::CliAcks));
    }

    pub(super) fn tcp_cli_acks(&mut self, now: Time, sid: u32) {
        let ends = std::mem::take(&mut self.sess[sid as usize].flight_ends);
        let mut t = now;
        let mut last = now;
        for (i, &e) in ends.iter().enumerate() {
            if i % 2 == 0 && i + 1 != ends.len() {
                continue;
            }
            self.sess[sid as usize].c_rcv = e;
            let f = self.client_seg(sid, TCP_ACK, &[], &[], &[]);
            let Some(ts) = self.emit_client(t, sid, f, Category::TcpClient) else { return };
            last = ts;
            t = ts + 2 * ser(1514);
        }
        if self.sess[sid as usize].resp.left() > 0 {
            let d = self.lan(sid) / 2;
            self.push(last + d, Ev::Tcp(sid, T::Respond));
        } else {
            self.push(last, Ev::Tcp(sid, T::Think));
        }
    }

    pub(super) fn tcp_think(&mut self, now: Time, sid: u32) {
        let s = &mut self.sess[sid as usize];
        s.exchanges = s.exchanges.saturating_sub(1);
        if s.exchanges > 0 {
            let idle = s.info.kind == SessionKind::Idle && !s.gap_done;
            self.new_exchange(sid);
            let d = if idle {
                self.sess[sid as usize].gap_pending = true;
                self.idle_gap(sid)
            } else {
                self.client_think(sid)
            };
            self.push(now + d, Ev::Tcp(sid, T::Send));
            return;
        }
        let nat = self.is_nat(sid);
        let close = self.sess[sid as usize].close;
        let soon = between(&mut self.sess[sid as usize].rng, 50 * US, 50 * MSEC);
        match close {
            Close::ClientFin => self.push(now + soon, Ev::Tcp(sid, T::CliFin)),
            Close::ClientRst => self.push(now + soon, Ev::Tcp(sid, T::CliRst)),
            Close::ServerFin if nat => {
                let d = self.lan(sid) / 2;
                self.push(now + d, Ev::Tcp(sid, T::SrvFin));
            }
            Close::ServerFin => {
                // The server's FIN went straight to the client.
                let s = &mut self.sess[sid as usize];
                s.s_nxt = s.s_nxt.wrapping_add(1);
                let d = self.rtt(sid) / 2;
                self.push(now + d, Ev::Tcp(sid, T::CliAckFin));
            }
            Close::ServerRst if nat => {
                let d = self.lan(sid) / 2 + soon;
                self.push(now + d, Ev::Tcp(sid, T::SrvRst));
            }
            Close::ServerRst => self.end(sid, now, SessionEnd::ServerReset),
        }
    }
}

/// The next-hop MTU of the ICMP "fragmentation needed" (or the MTU of
/// the ICMPv6 "packet too big") in `frame`.
fn icmp_next_hop_mtu(frame: &[u8]) -> Option<u16> {
    let info = parse_frame(frame);
    if let Some(v6) = info.ipv6 {
        let up = v6.upper?;
        let o = v6.l3_offset + up.offset;
        if up.protocol != IpProtocol::Icmpv6 || frame.get(o) != Some(&ICMPV6_PKT_TOOBIG) {
            return None;
        }
        let b = frame.get(o + 4..o + 8)?;
        return Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]).min(u16::MAX as u32) as u16);
    }
    let v4 = info.ipv4?;
    if v4.protocol != IpProtocol::Icmp {
        return None;
    }
    let o = v4.l4_offset();
    frame.get(o + 6..o + 8).map(|b| u16::from_be_bytes([b[0], b[1]]))
}
