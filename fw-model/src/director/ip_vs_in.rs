//! `ip_vs_in` (ip_vs_core.c) for TCP/UDP to a local address: the
//! connection lookup and its reuse by a new SYN (`is_new_conn_expected`),
//! scheduling (`ip_vs_schedule`, `ip_vs_sched_persist`, with
//! `ip_vs_check_template` of ip_vs_conn.c), and `ip_vs_leave`.

use crate::wire::icmp::{ICMP_DEST_UNREACH, ICMP_UNREACH_PORT};
use crate::wire::{IPPROTO_TCP, IPPROTO_UDP, TCP_RST, TCP_SYN};
use super::{Action, Director, DropReason, HostReason, Pkt};
use crate::conn::tcp::{self, Direction};
use crate::conn::{flags as cf, Conn, ConnId, NIL};
use crate::ipvs::{DestId, ServiceId};
use crate::sched::SchedPacket;
use std::net::Ipv4Addr;

impl Director {

    /// `ip_vs_in` for TCP/UDP to a local address.
    pub(super) fn ip_vs_in(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let Some((_, sport, dport, tflags)) = p.l4 else {
            return self.host(HostReason::Malformed);
        };
        let cp = self.conns.in_get(p.proto, p.saddr, sport, p.daddr, dport);
        let cp = self.reuse_or_resched(cp, p.proto, tflags);
        let id = match cp {
            Some(id) => id,
            None => match self.try_to_schedule(frame, p, sport, dport, tflags) {
                Ok(id) => id,
                Err(a) => return a,
            },
        };
        if let Err(a) = self.request_found(id, p.len, tflags) {
            return a;
        }
        let a = self.xmit_request(frame, extra, p, id, false);
        self.conn_put(id);
        a
    }

    /// A request of connection `id` (either family), once `ip_vs_in` has
    /// found or scheduled it: the connection noted for the caller, its
    /// real server checked (unavailable: the packet is dropped, and with
    /// `expire_nodest_conn` the connection expired), the statistics and
    /// the state machine moved on. Then the request is transmitted.
    pub(super) fn request_found(&mut self, id: ConnId, len: u16, tflags: u8) -> Result<(), Action> {
        self.last_conn = Some(id);
        self.last_dir = Some(Direction::Input);
        let c = *self.conns.get(id);
        if c.dest != NIL && !self.services.dests[c.dest as usize].available {
            if self.cfg.sysctl.expire_nodest_conn {
                self.expire_now(id);
            }
            return Err(self.drop(DropReason::DestUnavailable));
        }
        self.in_stats(&c, len);
        self.set_state(id, Direction::Input, tflags);
        Ok(())
    }

    /// The connection a request found, or `None` when a SYN must
    /// reschedule it (`ip_vs_in`: `is_new_conn_expected` and the
    /// weight-0 server case; the old connection is expired now unless it
    /// controls others).
    pub(super) fn reuse_or_resched(&mut self, mut cp: Option<ConnId>, proto: u8, tflags: u8) -> Option<ConnId> {
        let is_syn = proto == IPPROTO_TCP && tflags & TCP_SYN != 0;
        let mode = self.cfg.sysctl.conn_reuse_mode;
        // Linux 6.1 (since "ipvs: allow expiration of connections with
        // conn_reuse_mode 0"): a SYN on a conn whose server has weight 0 is
        // rescheduled under expire_nodest_conn whatever conn_reuse_mode;
        // only the TIME_WAIT/CLOSE reuse needs conn_reuse_mode.
        if let (true, Some(id)) = (is_syn, cp) {
            let c = *self.conns.get(id);
            let mut resched = false;
            if self.cfg.sysctl.expire_nodest_conn && c.dest != NIL && self.services.dests[c.dest as usize].weight == 0 {
                resched = true;
            } else if mode != 0 && is_new_conn_expected(&c, mode) {
                // With conntrack off, `uses_ct` is false: always reschedule.
                resched = true;
            }
            if resched {
                if c.n_control == 0 {
                    self.expire_now(id);
                }
                cp = None;
            }
        }
        cp
    }

    /// `tcp_conn_schedule`/`udp_conn_schedule` → `ip_vs_schedule`.
    pub(super) fn try_to_schedule(&mut self, frame: &mut Vec<u8>, p: &Pkt, sport: u16, dport: u16, tflags: u8) -> Result<ConnId, Action> {
        if p.proto == IPPROTO_TCP && (tflags & TCP_RST != 0 || !(self.cfg.sysctl.sloppy_tcp || tflags & TCP_SYN != 0)) {
            return Err(self.host(HostReason::NotSyn));
        }
        let Some(svc) = self.services.find(p.proto, p.daddr, dport) else {
            return Err(self.host(HostReason::Local));
        };
        if sport == crate::ipvs::service::FTPDATA {
            return Err(self.host(HostReason::FtpData));
        }
        let pkt = SchedPacket {
            saddr: Ipv4Addr::from(p.saddr).into(),
            daddr: Ipv4Addr::from(p.daddr).into(),
            sport,
            dport,
            proto: p.proto,
        };
        let s = self.services.service(svc);
        let (persistent, svc_port, ops) = (s.persistent(), s.vport, s.rule.ops);
        let one_packet = if ops && p.proto == IPPROTO_UDP { cf::ONE_PACKET } else { 0 };
        if persistent {
            return match self.sched_persist(svc, &pkt, one_packet) {
                Some(id) => Ok(id),
                None => Err(self.leave(frame, p, svc, dport)),
            };
        }
        if dport != svc_port {
            return Err(self.leave(frame, p, svc, dport));
        }
        let now = self.now;
        let Some(dest) = self.services.schedule(svc, &pkt, now, &mut self.rng) else {
            return Err(self.leave(frame, p, svc, dport));
        };
        let d = self.services.dest(dest);
        let dp = if d.port != 0 { d.port } else { dport };
        let daddr = d.addr;
        let mut c = Conn::new(p.proto, p.saddr, sport, p.daddr, dport, d.addr4(), dp, one_packet);
        self.bind_dest(&mut c, dest);
        let id = self.insert_conn_to(c, daddr);
        self.conn_stats(dest, svc);
        Ok(id)
    }

    pub(crate) fn insert_conn(&mut self, c: Conn) -> ConnId {
        self.counters.conns_created += 1;
        self.conns.insert(c)
    }

    /// [`insert_conn`](Self::insert_conn) for an IPv4 connection to real
    /// server address `daddr`: an IPv6 one (a tunnel across families,
    /// `cp->daf == AF_INET6`) is kept beside the record.
    fn insert_conn_to(&mut self, c: Conn, daddr: std::net::IpAddr) -> ConnId {
        if daddr.is_ipv4() {
            return self.insert_conn(c);
        }
        let addrs = crate::conn::ConnAddrs {
            caddr: Ipv4Addr::from(c.caddr).into(),
            vaddr: Ipv4Addr::from(c.vaddr).into(),
            daddr,
        };
        self.insert_conn_addrs(c, addrs)
    }

    /// [`insert_conn`](Self::insert_conn) for an entry of any families
    /// ([`ConnTable::insert_addrs`](crate::conn::ConnTable::insert_addrs)).
    pub(crate) fn insert_conn_addrs(&mut self, c: Conn, addrs: crate::conn::ConnAddrs) -> ConnId {
        self.counters.conns_created += 1;
        self.conns.insert_addrs(c, addrs)
    }

    /// `ip_vs_sched_persist`.
    pub(super) fn sched_persist(&mut self, svc: ServiceId, pkt: &SchedPacket, one_packet: u16) -> Option<ConnId> {
        let s = self.services.service(svc);
        let snet = super::v4(pkt.saddr) & s.netmask();
        let svc_port = s.vport;
        let svc_timeout = s.timeout();
        let vport = if pkt.dport == svc_port && svc_port != crate::ipvs::service::FTPPORT { pkt.dport } else { 0 };
        let vaddr = super::v4(pkt.daddr);
        let proto = pkt.proto;
        let mut ct = self.conns.ct_in_get(proto, snet, 0, vaddr, vport);
        if let Some(t) = ct {
            if !self.check_template(t) {
                ct = None;
            }
        }
        let (ct, dest) = match ct {
            Some(t) => (t, DestId(self.conns.get(t).dest)),
            None => {
                let now = self.now;
                let dest = self.services.schedule(svc, pkt, now, &mut self.rng)?;
                let d = self.services.dest(dest);
                let tdport = if pkt.dport == svc_port && svc_port != crate::ipvs::service::FTPPORT { d.port } else { 0 };
                let daddr = d.addr;
                let mut t = Conn::new(proto, snet, 0, vaddr, vport, d.addr4(), tdport, cf::TEMPLATE);
                self.bind_dest(&mut t, dest);
                t.set_timeout(svc_timeout);
                let id = self.insert_conn_to(t, daddr);
                self.counters.templates_created += 1;
                (id, dest)
            }
        };
        let d = self.services.dest(dest);
        let mut dport = pkt.dport;
        if dport == svc_port && d.port != 0 {
            dport = d.port;
        }
        let daddr = d.addr;
        let mut c = Conn::new(proto, super::v4(pkt.saddr), pkt.sport, vaddr, pkt.dport, d.addr4(), dport, one_packet);
        self.bind_dest(&mut c, dest);
        let id = self.insert_conn_to(c, daddr);
        // ip_vs_control_add + ip_vs_conn_put(ct)
        self.conns.get_mut(id).control = ct.0;
        self.conns.get_mut(ct).n_control += 1;
        self.conn_put(ct);
        self.conn_stats(dest, svc);
        Some(id)
    }

    /// `ip_vs_check_template`: false (and the template invalidated) when its
    /// server is gone, deleted, or quiescent with `expire_quiescent_template`.
    pub(super) fn check_template(&mut self, t: ConnId) -> bool {
        let c = *self.conns.get(t);
        let bad = if c.dest == NIL {
            true
        } else {
            let d = &self.services.dests[c.dest as usize];
            !d.available || (self.cfg.sysctl.expire_quiescent_template && d.weight == 0)
        };
        if !bad {
            return true;
        }
        if c.vport != 0xffff {
            self.conns.rekey(t, |c| {
                c.dport = 0xffff;
                c.vport = 0xffff;
                c.cport = 0;
            });
        }
        false
    }

    /// `ip_vs_leave`: no server for a new connection.
    pub(super) fn leave(&mut self, frame: &mut Vec<u8>, p: &Pkt, svc: ServiceId, dport: u16) -> Action {
        let s = self.services.service(svc);
        if s.vport == crate::ipvs::service::FTPPORT && dport != crate::ipvs::service::FTPPORT {
            return self.host(HostReason::FtpData);
        }
        let src = p.daddr;
        self.icmp_send(frame, p, ICMP_DEST_UNREACH, ICMP_UNREACH_PORT, 0, src, DropReason::NoRealServer)
    }
}

/// `is_new_conn_expected`: a SYN may replace an uncontrolled TCP conn in
/// TIME_WAIT or CLOSE (or FIN_WAIT without output, with `conn_reuse_mode & 2`).
fn is_new_conn_expected(c: &Conn, mode: u8) -> bool {
    if c.control != NIL {
        return false;
    }
    if c.proto != IPPROTO_TCP {
        return false;
    }
    c.state == tcp::state::TIME_WAIT
        || c.state == tcp::state::CLOSE
        || (mode & 2 != 0 && c.state == tcp::state::FIN_WAIT && c.flags & cf::NOOUTPUT != 0)
}