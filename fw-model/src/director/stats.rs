//! Per-packet IPVS statistics (`ip_vs_in_stats`, `ip_vs_out_stats`,
//! `ip_vs_conn_stats` in ip_vs_core.c) and the counters credited for
//! packets the hardware forwarded.

use super::Director;
use crate::conn::{Conn, NIL};
use crate::ipvs::{DestId, ServiceId, Stats};

impl Director {

    pub(super) fn in_stats(&mut self, c: &Conn, len: u16) {
        if c.dest == NIL {
            return;
        }
        let d = &mut self.services.dests[c.dest as usize];
        if !d.available {
            return;
        }
        d.stats.inpkts += 1;
        d.stats.inbytes += len as u64;
        let s = &mut self.services.services[d.svc.0 as usize].stats;
        s.inpkts += 1;
        s.inbytes += len as u64;
        self.total.inpkts += 1;
        self.total.inbytes += len as u64;
    }

    pub(super) fn out_stats(&mut self, c: &Conn, len: u64) {
        if c.dest == NIL {
            return;
        }
        let d = &mut self.services.dests[c.dest as usize];
        if !d.available {
            return;
        }
        d.stats.outpkts += 1;
        d.stats.outbytes += len;
        let s = &mut self.services.services[d.svc.0 as usize].stats;
        s.outpkts += 1;
        s.outbytes += len;
        self.total.outpkts += 1;
        self.total.outbytes += len;
    }

    /// Adds packets the hardware forwarded for real server `dest` to the
    /// IPVS statistics (`reply`: real server → client).
    pub fn credit_offloaded(&mut self, dest: DestId, reply: bool, pkts: u64, bytes: u64) {
        let d = &mut self.services.dests[dest.index()];
        let svc = d.svc;
        let add = |s: &mut Stats| {
            if reply {
                s.outpkts += pkts;
                s.outbytes += bytes;
            } else {
                s.inpkts += pkts;
                s.inbytes += bytes;
            }
        };
        add(&mut d.stats);
        add(&mut self.services.services[svc.0 as usize].stats);
        add(&mut self.total);
    }

    /// Adds frames the hardware forwarded to the frame counters.
    pub fn credit_forwarded_frames(&mut self, n: u64) {
        self.counters.frames_in += n;
        self.counters.frames_tx += n;
    }

    pub(super) fn conn_stats(&mut self, dest: DestId, svc: ServiceId) {
        self.services.dests[dest.index()].stats.conns += 1;
        self.services.services[svc.0 as usize].stats.conns += 1;
        self.total.conns += 1;
    }
}
