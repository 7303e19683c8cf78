//! ICMP errors about connections: `ip_vs_in_icmp` (client side, including
//! errors about the IPIP packets the director sent) and `ip_vs_out_icmp`
//! (real server side, NAT), both in ip_vs_core.c.

use crate::wire::icmp::{ICMP_DEST_UNREACH, ICMP_SOURCE_QUENCH, ICMP_TIME_EXCEEDED, ICMP_UNREACH_FRAG_NEEDED};
use crate::wire::{self, IPPROTO_IPIP, IPPROTO_TCP, IPPROTO_UDP};
use super::{Action, Director, DropReason, HostReason, Pkt};
use crate::conn::flags as cf;
use crate::xmit;
use std::net::Ipv4Addr;

impl Director {

    /// The embedded (quoted) packet of an ICMP error at `frame[p.l3..]`:
    /// offset of its IP header, its protocol, and its ports if present.
    pub(super) fn icmp_inner(frame: &[u8], p: &Pkt) -> Option<(usize, u8, u32, u32, Option<(u16, u16)>, u16)> {
        let ic = p.l3 + p.ihl;
        let end = (p.l3 + p.len as usize).min(frame.len());
        let cl3 = ic + 8;
        if cl3 + 20 > end || frame[cl3] >> 4 != 4 {
            return None;
        }
        let chl = xmit::ihl(frame, cl3);
        if chl < 20 || cl3 + chl > end {
            return None;
        }
        let cproto = frame[cl3 + 9];
        let frag = u16::from_be_bytes([frame[cl3 + 6], frame[cl3 + 7]]);
        let saddr = u32::from_be_bytes(frame[cl3 + 12..cl3 + 16].try_into().ok()?);
        let daddr = u32::from_be_bytes(frame[cl3 + 16..cl3 + 20].try_into().ok()?);
        let ports = if cl3 + chl + 4 <= end && frag & xmit::IP_OFFSET == 0 {
            Some((
                u16::from_be_bytes([frame[cl3 + chl], frame[cl3 + chl + 1]]),
                u16::from_be_bytes([frame[cl3 + chl + 2], frame[cl3 + chl + 3]]),
            ))
        } else {
            None
        };
        Some((cl3, cproto, saddr, daddr, ports, frag))
    }

    pub(super) fn icmp_checksum_ok(frame: &[u8], p: &Pkt) -> bool {
        let ic = p.l3 + p.ihl;
        let end = (p.l3 + p.len as usize).min(frame.len());
        ic <= end && wire::checksum::checksum(&frame[ic..end]) == 0
    }

    /// `ip_vs_in_icmp`: an ICMP error to a local address about one of our
    /// connections (client → VIP direction), or about our IPIP packets.
    pub(super) fn ip_vs_in_icmp(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let ic = p.l3 + p.ihl;
        if ic + 8 > (p.l3 + p.len as usize).min(frame.len()) {
            return self.host(HostReason::Local);
        }
        let typ = frame[ic];
        if typ != ICMP_DEST_UNREACH && typ != ICMP_SOURCE_QUENCH && typ != ICMP_TIME_EXCEEDED {
            return self.host(HostReason::Local);
        }
        let Some((cl3, cproto, csaddr, cdaddr, cports, cfrag)) = Self::icmp_inner(frame, p) else {
            return self.host(HostReason::Local);
        };
        // IPIP: the error is about a tunnel packet we sent.
        if cproto == IPPROTO_IPIP {
            if cfrag & xmit::IP_OFFSET != 0 {
                return self.host(HostReason::Local);
            }
            let inner_p = Pkt { l3: cl3, ihl: xmit::ihl(frame, cl3), ..*p };
            let Some((il3, iproto, isaddr, idaddr, iports, ifrag)) = Self::icmp_inner_at(frame, &inner_p) else {
                return self.host(HostReason::Local);
            };
            if iproto != IPPROTO_TCP && iproto != IPPROTO_UDP {
                return self.host(HostReason::Local);
            }
            let Some((isport, idport)) = iports else { return self.host(HostReason::Local) };
            let Some(id) = self.conns.in_get(iproto, isaddr, isport, idaddr, idport) else {
                return self.host(HostReason::Local);
            };
            if !Self::icmp_checksum_ok(frame, p) {
                return self.drop(DropReason::BadIcmpChecksum);
            }
            let code = frame[ic + 1];
            let mut info = u32::from_be_bytes(frame[ic + 4..ic + 8].try_into().unwrap_or([0; 4]));
            if typ == ICMP_DEST_UNREACH && code == ICMP_UNREACH_FRAG_NEEDED {
                let reported = u16::from_be_bytes([frame[ic + 6], frame[ic + 7]]) as u32;
                if ifrag & xmit::IP_DF == 0 {
                    return self.drop(DropReason::TunnelIcmp);
                }
                // Route MTU after ipv4_update_pmtu (min PMTU 552), minus the tunnel header.
                let mut mtu = (self.cfg.mtu as u32).min(reported.max(552));
                if mtu > 68 + 20 {
                    mtu -= 20;
                }
                info = mtu;
            }
            // icmp_send about the inner packet, to the client, from the VIP.
            let end = (p.l3 + p.len as usize).min(frame.len());
            let inner_len = (end - il3) as u64;
            let c = *self.conns.get(id);
            self.out_stats(&c, inner_len);
            let ip = Pkt {
                l3: il3,
                ihl: xmit::ihl(frame, il3),
                len: u16::from_be_bytes([frame[il3 + 2], frame[il3 + 3]]),
                saddr: isaddr,
                daddr: idaddr,
                proto: iproto,
                ttl: frame[il3 + 8],
                df: ifrag & xmit::IP_DF != 0,
                l4: None,
            };
            // Quote only what the error quoted.
            let mut inner: Vec<u8> = frame[..p.l3].to_vec();
            inner.extend_from_slice(&frame[il3..end]);
            let ip = Pkt { l3: p.l3, ..ip };
            let a = self.icmp_send(&mut inner, &ip, typ, code, info, idaddr, DropReason::TunnelIcmp);
            if a == Action::Transmit {
                *frame = inner;
            }
            return a;
        }
        if cproto != IPPROTO_TCP && cproto != IPPROTO_UDP {
            return self.host(HostReason::Local);
        }
        let Some((csport, cdport)) = cports else { return self.host(HostReason::Local) };
        // The quoted packet went VIP → client: look the conn up reversed.
        let Some(id) = self.conns.in_get(cproto, cdaddr, cdport, csaddr, csport) else {
            return self.host(HostReason::Local);
        };
        if !Self::icmp_checksum_ok(frame, p) {
            return self.drop(DropReason::BadIcmpChecksum);
        }
        self.last_conn = Some(id);
        let c = *self.conns.get(id);
        self.in_stats(&c, p.len);
        self.xmit_request(frame, extra, p, id, true)
    }

    pub(super) fn icmp_inner_at(frame: &[u8], p: &Pkt) -> Option<(usize, u8, u32, u32, Option<(u16, u16)>, u16)> {
        // `p.l3` is the tunnel header quoted in an ICMP error; the client's
        // packet follows it directly.
        let il3 = p.l3 + p.ihl;
        let end = frame.len();
        if il3 + 20 > end || frame[il3] >> 4 != 4 {
            return None;
        }
        let hl = xmit::ihl(frame, il3);
        if hl < 20 || il3 + hl > end {
            return None;
        }
        let proto = frame[il3 + 9];
        let frag = u16::from_be_bytes([frame[il3 + 6], frame[il3 + 7]]);
        let saddr = u32::from_be_bytes(frame[il3 + 12..il3 + 16].try_into().ok()?);
        let daddr = u32::from_be_bytes(frame[il3 + 16..il3 + 20].try_into().ok()?);
        let ports = if il3 + hl + 4 <= end && frag & xmit::IP_OFFSET == 0 {
            Some((
                u16::from_be_bytes([frame[il3 + hl], frame[il3 + hl + 1]]),
                u16::from_be_bytes([frame[il3 + hl + 2], frame[il3 + hl + 3]]),
            ))
        } else {
            None
        };
        Some((il3, proto, saddr, daddr, ports, frag))
    }

    /// `ip_forward` + `ip_vs_out_icmp`: an ICMP error from a real server
    /// about a NAT connection, on its way to the client.
    pub(super) fn ip_vs_out_icmp(&mut self, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>, p: &Pkt) -> Action {
        let ic = p.l3 + p.ihl;
        if ic + 8 > (p.l3 + p.len as usize).min(frame.len()) {
            return self.host(HostReason::Forward);
        }
        let typ = frame[ic];
        if typ != ICMP_DEST_UNREACH && typ != ICMP_SOURCE_QUENCH && typ != ICMP_TIME_EXCEEDED {
            return self.host(HostReason::Forward);
        }
        let Some((_, cproto, csaddr, cdaddr, cports, _)) = Self::icmp_inner(frame, p) else {
            return self.host(HostReason::Forward);
        };
        if cproto != IPPROTO_TCP && cproto != IPPROTO_UDP {
            return self.host(HostReason::Forward);
        }
        let Some((csport, cdport)) = cports else { return self.host(HostReason::Forward) };
        // The quoted packet went client → real server: reversed out lookup.
        let Some(id) = self.conns.out_get(cproto, cdaddr, cdport, csaddr, csport) else {
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
        if !Self::icmp_checksum_ok(frame, p) {
            return self.drop(DropReason::BadIcmpChecksum);
        }
        self.last_conn = Some(id);
        xmit::trim_to_ip(frame, p.l3);
        xmit::ip_decrease_ttl(frame, p.l3);
        xmit::nat_icmp(frame, p.l3, true, Ipv4Addr::from(c.vaddr), c.vport);
        self.out_stats(&c, p.len as u64);
        let mac = self.cfg.next_hop_mac(Ipv4Addr::from(c.caddr));
        xmit::set_macs(frame, mac, self.cfg.mac);
        self.finish_tx(frame, p.l3, extra)
    }
}
