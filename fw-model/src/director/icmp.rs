//! ICMP errors about connections: `ip_vs_in_icmp` (client side, including
//! errors about the IPIP packets the director sent) and `ip_vs_out_icmp`
//! (real server side, NAT), both in ip_vs_core.c.

use super::{Action, Director, DropReason, HostReason, Pkt};
use crate::conn::flags as cf;
use crate::conn::ConnId;
use crate::wire::icmp::{
    self, ICMP_DEST_UNREACH, ICMP_SOURCE_QUENCH, ICMP_TIME_EXCEEDED, ICMP_UNREACH_FRAG_NEEDED,
};
use crate::wire::{transport_ports, Icmpv4Packet, Ipv4Packet, IPPROTO_IPIP, IPPROTO_TCP, IPPROTO_UDP};
use crate::xmit;
use std::net::Ipv4Addr;

/// An IPv4 datagram quoted in an ICMP error (or following a quoted tunnel
/// header): where it is and what `ip_vs_in_icmp`/`ip_vs_out_icmp` look at.
#[derive(Clone, Copy, Debug)]
struct Quoted {
    l3: usize,
    hl: usize,
    total_len: u16,
    proto: u8,
    ttl: u8,
    saddr: u32,
    daddr: u32,
    df: bool,
    /// Fragment offset 0: the transport header may be quoted.
    first: bool,
    /// Source and destination ports, when the first four bytes of the
    /// TCP/UDP header are quoted (never for a later fragment).
    ports: Option<(u16, u16)>,
}

/// The datagram whose IPv4 header starts at `frame[l3..end]`: `None` unless
/// its whole header is there ([`Ipv4Packet::new_checked_header`]).
fn quoted_at(frame: &[u8], l3: usize, end: usize) -> Option<Quoted> {
    let ip = Ipv4Packet::new_checked_header(frame.get(l3..end)?).ok()?;
    let hl = ip.header_len();
    let mut q = Quoted {
        l3,
        hl,
        total_len: ip.total_len(),
        proto: ip.protocol(),
        ttl: ip.ttl(),
        saddr: u32::from(ip.src_addr()),
        daddr: u32::from(ip.dst_addr()),
        df: ip.dont_frag(),
        first: ip.frag_offset_units() == 0,
        ports: None,
    };
    if q.first {
        q.ports = transport_ports(&ip.into_inner()[hl..]);
    }
    Some(q)
}

/// The ICMP message of the packet `p`, if its 8-byte header is within the
/// IP total length and the frame.
fn icmp_of<'a>(frame: &'a [u8], p: &Pkt) -> Option<Icmpv4Packet<&'a [u8]>> {
    let ic = p.l3 + p.ihl;
    let end = (p.l3 + p.len as usize).min(frame.len());
    (ic + icmp::HEADER_LEN <= end).then(|| Icmpv4Packet::new_unchecked(&frame[ic..end]))
}

/// The datagram quoted by the ICMP message of `p`, if the message is an
/// error IPVS relates to a connection (destination unreachable, source
/// quench, time exceeded).
fn quoted_by(frame: &[u8], p: &Pkt) -> Option<Quoted> {
    let typ = icmp_of(frame, p)?.msg_type();
    if typ != ICMP_DEST_UNREACH && typ != ICMP_SOURCE_QUENCH && typ != ICMP_TIME_EXCEEDED {
        return None;
    }
    let end = (p.l3 + p.len as usize).min(frame.len());
    quoted_at(frame, p.l3 + p.ihl + icmp::HEADER_LEN, end)
}

fn icmp_checksum_ok(frame: &[u8], p: &Pkt) -> bool {
    icmp_of(frame, p).is_some_and(|m| m.verify_checksum())
}

impl Director {
    /// `ip_vs_in_icmp`: an ICMP error to a local address about one of our
    /// connections (client → VIP direction), or about our IPIP packets.
    pub(super) fn ip_vs_in_icmp(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let Some(q) = quoted_by(frame, p) else {
            return self.host(HostReason::Local);
        };
        if q.proto == IPPROTO_IPIP {
            return self.in_icmp_tunnel(frame, p, &q);
        }
        if q.proto != IPPROTO_TCP && q.proto != IPPROTO_UDP {
            return self.host(HostReason::Local);
        }
        let Some((csport, cdport)) = q.ports else { return self.host(HostReason::Local) };
        // The quoted packet went VIP → client: look the conn up reversed.
        let Some(id) = self.conns.in_get(q.proto, q.daddr, cdport, q.saddr, csport) else {
            return self.host(HostReason::Local);
        };
        if !icmp_checksum_ok(frame, p) {
            return self.drop(DropReason::BadIcmpChecksum);
        }
        self.last_conn = Some(id);
        let c = *self.conns.get(id);
        self.in_stats(&c, p.len);
        self.xmit_request(frame, extra, p, id, true)
    }

    /// `ip_vs_in_icmp` for an error about an IPIP packet the director sent
    /// (`tunnel` is the quoted outer header): `icmp_send` about the client's
    /// packet inside it, to the client, from the VIP.
    fn in_icmp_tunnel(&mut self, frame: &mut Vec<u8>, p: &Pkt, tunnel: &Quoted) -> Action {
        if !tunnel.first {
            return self.host(HostReason::Local);
        }
        // The client's packet follows the tunnel header directly.
        let Some(q) = quoted_at(frame, tunnel.l3 + tunnel.hl, frame.len()) else {
            return self.host(HostReason::Local);
        };
        if q.proto != IPPROTO_TCP && q.proto != IPPROTO_UDP {
            return self.host(HostReason::Local);
        }
        let Some((isport, idport)) = q.ports else { return self.host(HostReason::Local) };
        let Some(id) = self.conns.in_get(q.proto, q.saddr, isport, q.daddr, idport) else {
            return self.host(HostReason::Local);
        };
        let Some(m) = icmp_of(frame, p).filter(|m| m.verify_checksum()) else {
            return self.drop(DropReason::BadIcmpChecksum);
        };
        let (typ, code) = (m.msg_type(), m.msg_code());
        let mut info = m.rest_of_header();
        if typ == ICMP_DEST_UNREACH && code == ICMP_UNREACH_FRAG_NEEDED {
            if !q.df {
                return self.drop(DropReason::TunnelIcmp);
            }
            info = self.tunnel_pmtu(m.next_hop_mtu());
        }
        let end = (p.l3 + p.len as usize).min(frame.len());
        self.tunnel_icmp_send(frame, p.l3, end, &q, id, typ, code, info)
    }

    /// The route MTU after `ipv4_update_pmtu` learnt `reported` (at least
    /// 552), minus the tunnel header.
    fn tunnel_pmtu(&self, reported: u16) -> u32 {
        let mut mtu = (self.cfg.mtu as u32).min(u32::from(reported).max(552));
        if mtu > 68 + 20 {
            mtu -= 20;
        }
        mtu
    }

    /// `icmp_send` about the client's packet `q` quoted up to `end`, to the
    /// client, from the VIP: the error replaces `frame` if it is sent.
    #[allow(clippy::too_many_arguments)]
    fn tunnel_icmp_send(
        &mut self,
        frame: &mut Vec<u8>,
        l3: usize,
        end: usize,
        q: &Quoted,
        id: ConnId,
        typ: u8,
        code: u8,
        info: u32,
    ) -> Action {
        let c = *self.conns.get(id);
        self.out_stats(&c, (end - q.l3) as u64);
        let ip = Pkt {
            l3,
            ihl: q.hl,
            len: q.total_len,
            saddr: q.saddr,
            daddr: q.daddr,
            proto: q.proto,
            ttl: q.ttl,
            df: q.df,
            l4: None,
        };
        // Quote only what the error quoted.
        let mut inner: Vec<u8> = frame[..l3].to_vec();
        inner.extend_from_slice(&frame[q.l3..end]);
        // The options of the error received are not the quoted packet's:
        // none are echoed (not observed in Linux).
        let opts = self.ip_opts.take();
        let a = self.icmp_send(&mut inner, &ip, typ, code, info, q.daddr, DropReason::TunnelIcmp);
        self.ip_opts = opts;
        if a == Action::Transmit {
            *frame = inner;
        }
        a
    }

    /// `ip_forward` + `ip_vs_out_icmp`: an ICMP error from a real server
    /// about a NAT connection, on its way to the client.
    pub(super) fn ip_vs_out_icmp(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let Some(q) = quoted_by(frame, p) else {
            return self.host(HostReason::Forward);
        };
        if q.proto != IPPROTO_TCP && q.proto != IPPROTO_UDP {
            return self.host(HostReason::Forward);
        }
        let Some((csport, cdport)) = q.ports else { return self.host(HostReason::Forward) };
        // The quoted packet went client → real server: reversed out lookup.
        let Some(id) = self.conns.out_get(q.proto, q.daddr, cdport, q.saddr, csport) else {
            return self.host(HostReason::Forward);
        };
        let c = *self.conns.get(id);
        if c.fwd() != cf::MASQ {
            return self.host(HostReason::Forward);
        }
        // ip_forward first: an ICMP error whose TTL runs out is dropped
        // silently (no error about an error).
        if p.ttl <= 1 {
            return self.drop(DropReason::TtlExceeded);
        }
        if !icmp_checksum_ok(frame, p) {
            return self.drop(DropReason::BadIcmpChecksum);
        }
        self.last_conn = Some(id);
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        xmit::nat_icmp(frame, p.l3, true, Ipv4Addr::from(c.vaddr), c.vport);
        self.out_stats(&c, p.len as u64);
        self.forward_options(frame, p.l3);
        let mac = self.tx_next_hop_mac(Ipv4Addr::from(c.caddr));
        xmit::set_macs(frame, mac, self.cfg.mac);
        self.finish_tx(frame, p.l3, extra)
    }
}
