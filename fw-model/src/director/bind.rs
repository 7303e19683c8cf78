//! A connection's real server: `ip_vs_bind_dest` and `ip_vs_unbind_dest`
//! (ip_vs_conn.c), with the server's connection counters and overload flag.

use super::Director;
use crate::conn::{flags as cf, Conn, NIL};
use crate::ipvs::DestId;
use crate::rules::FwdMethod;

impl Director {

    /// `ip_vs_bind_dest`: inherit the forwarding flags, count the conn.
    /// A connection created by sync (`IP_VS_CONN_F_SYNC`) keeps its
    /// activity flag and takes the server's forwarding method.
    pub(crate) fn bind_dest(&mut self, c: &mut Conn, dest: DestId) {
        let d = &self.services.dests[dest.index()];
        let mut fl = fwd_flags(d.fwd) | cf::INACTIVE;
        if d.addr == self.cfg.ip || self.cfg.ip6.is_some_and(|a| d.addr == a) {
            fl = (fl & !cf::FWD_MASK) | cf::LOCALNODE;
        }
        if fl & cf::FWD_MASK != cf::MASQ {
            fl |= cf::NOOUTPUT;
        }
        if c.flags & cf::SYNC != 0 {
            if c.flags & cf::TEMPLATE == 0 {
                fl &= !cf::INACTIVE;
            }
            c.flags &= !(cf::FWD_MASK | cf::NOOUTPUT);
        }
        c.flags |= fl;
        c.dest = dest.0;
        self.services.refs[dest.index()] += 1;
        let d = &mut self.services.dests[dest.index()];
        if c.flags & cf::TEMPLATE == 0 {
            if c.flags & cf::INACTIVE == 0 {
                d.activeconns += 1;
            } else {
                d.inactconns += 1;
            }
        } else {
            d.persistconns += 1;
        }
        if d.u_threshold != 0 && (d.activeconns + d.inactconns) as i64 >= d.u_threshold as i64 {
            d.overloaded = true;
        }
    }

    /// `ip_vs_unbind_dest`.
    pub(super) fn unbind_dest(&mut self, c: &Conn) {
        if c.dest == NIL {
            return;
        }
        let i = c.dest as usize;
        self.services.refs[i] = self.services.refs[i].saturating_sub(1);
        let d = &mut self.services.dests[i];
        if c.flags & cf::TEMPLATE == 0 {
            if c.flags & cf::INACTIVE != 0 {
                d.inactconns -= 1;
            } else {
                d.activeconns -= 1;
            }
        } else {
            d.persistconns -= 1;
        }
        let total = d.activeconns as i64 + d.inactconns as i64;
        if d.l_threshold != 0 {
            if total < d.l_threshold as i64 {
                d.overloaded = false;
            }
        } else if d.u_threshold != 0 {
            if total * 4 < d.u_threshold as i64 * 3 {
                d.overloaded = false;
            }
        } else {
            d.overloaded = false;
        }
    }
}

/// The connection flags of a forwarding method (`IP_VS_CONN_F_*`).
fn fwd_flags(fwd: FwdMethod) -> u16 {
    match fwd {
        FwdMethod::Masq => cf::MASQ,
        FwdMethod::Local => cf::LOCALNODE,
        FwdMethod::Tunnel { .. } => cf::TUNNEL,
        FwdMethod::Route => cf::DROUTE,
    }
}
