//! Command assembly: the command entry ipvsadm fills while scanning
//! (`struct ipvs_command_entry`) and the [`Command`] made of it at the end
//! of `process_options()`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::check::*;
use super::options::Scan;
use super::{fail, Command, CommandError, DaemonState, SyncDaemon, SVC_F_ONEPACKET, SVC_F_PERSISTENT, SVC_F_SCHED_MASK};
use crate::rules::{
    AddressFamily, DestRule, FwdMethod, Netmask, Protocol, SchedFlags, ServiceKey, ServiceRule, TunnelCsum, TunnelType,
};

pub(super) const AF_UNSPEC: u16 = 0;
pub(super) const AF_INET: u16 = 2;
pub(super) const AF_INET6: u16 = 10;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Fwd {
    Masq,
    Tunnel,
    Route,
}

pub(super) struct Entry {
    pub(super) cmd: Option<Cmd>,
    // service
    pub(super) svc_af: u16,
    pub(super) protocol: Option<Protocol>,
    pub(super) svc_addr: Option<IpAddr>,
    pub(super) svc_port: u16,
    pub(super) fwmark: u32,
    pub(super) sched: String,
    pub(super) flags: u32,
    pub(super) timeout: u32,
    /// Host-order IPv4 mask, or IPv6 prefix length when the service is IPv6.
    pub(super) netmask: u32,
    pub(super) pe: String,
    // destination
    pub(super) dest_addr: Option<IpAddr>,
    pub(super) dest_port: u16,
    pub(super) fwd: Fwd,
    pub(super) weight: u32,
    pub(super) u_threshold: u32,
    pub(super) l_threshold: u32,
    pub(super) tun_type: usize,
    pub(super) tun_port: u16,
    pub(super) tun_flags: u16,
    // --set
    pub(super) timeouts: (u32, u32, u32),
    // daemon
    pub(super) daemon_state: DaemonState,
    pub(super) mcast_ifn: String,
    pub(super) syncid: u8,
    pub(super) sync_maxlen: Option<u16>,
    pub(super) mcast_group: Option<IpAddr>,
    pub(super) mcast_port: Option<u16>,
    pub(super) mcast_ttl: Option<u8>,
}

impl Entry {
    pub(super) fn new() -> Self {
        Entry {
            cmd: None,
            svc_af: AF_UNSPEC,
            protocol: None,
            svc_addr: None,
            svc_port: 0,
            fwmark: 0,
            sched: String::new(),
            flags: 0,
            timeout: 0,
            netmask: 0xffff_ffff,
            pe: String::new(),
            dest_addr: None,
            dest_port: 0,
            fwd: Fwd::Route,
            weight: 1,
            u_threshold: 0,
            l_threshold: 0,
            tun_type: 0,
            tun_port: 0,
            tun_flags: 0,
            timeouts: (0, 0, 0),
            daemon_state: DaemonState::Master,
            mcast_ifn: String::new(),
            syncid: 0,
            sync_maxlen: None,
            mcast_group: None,
            mcast_port: None,
            mcast_ttl: None,
        }
    }

    pub(super) fn service_key(&self) -> ServiceKey {
        if self.fwmark != 0 {
            let af = if self.svc_af == AF_INET6 { AddressFamily::Inet6 } else { AddressFamily::Inet };
            ServiceKey::Fwmark { mark: self.fwmark, af }
        } else {
            let addr = self.svc_addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            ServiceKey::Addr { proto: self.protocol.unwrap_or(Protocol::Tcp), addr, port: self.svc_port }
        }
    }

    pub(super) fn service_rule(&self) -> ServiceRule {
        let key = self.service_key();
        let netmask = if self.svc_af == AF_INET6 {
            Netmask::V6(u8::try_from(self.netmask).unwrap_or(128))
        } else {
            Netmask::V4(self.netmask)
        };
        ServiceRule {
            key,
            scheduler: self.sched.clone(),
            flags: SchedFlags(self.flags & SVC_F_SCHED_MASK),
            persistent: if self.flags & SVC_F_PERSISTENT != 0 { Some(self.timeout) } else { None },
            netmask,
            pe: if self.pe.is_empty() { None } else { Some(self.pe.clone()) },
            ops: self.flags & SVC_F_ONEPACKET != 0,
            dests: Vec::new(),
        }
    }

    pub(super) fn dest_rule(&self) -> DestRule {
        let fwd = match self.fwd {
            Fwd::Masq => FwdMethod::Masq,
            Fwd::Route => FwdMethod::Route,
            Fwd::Tunnel => {
                let tun = match self.tun_type {
                    1 => TunnelType::Gue { port: self.tun_port },
                    2 => TunnelType::Gre,
                    _ => TunnelType::Ipip,
                };
                let csum = match self.tun_flags {
                    1 => TunnelCsum::Csum,
                    2 => TunnelCsum::RemCsum,
                    _ => TunnelCsum::NoCsum,
                };
                FwdMethod::Tunnel { tun, csum }
            }
        };
        DestRule {
            addr: self.dest_addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            port: self.dest_port,
            fwd,
            weight: self.weight,
            u_threshold: self.u_threshold,
            l_threshold: self.l_threshold,
        }
    }

    pub(super) fn dest_af(&self) -> u16 {
        match self.dest_addr {
            Some(IpAddr::V4(_)) => AF_INET,
            Some(IpAddr::V6(_)) => AF_INET6,
            None => AF_UNSPEC,
        }
    }
}

/// The command the scan describes (the `switch (ce.cmd)` of `process_options()`).
pub(super) fn command(cmd: Cmd, s: Scan) -> Result<Command, CommandError> {
    let Scan { ce, options, mut list, .. } = s;
    Ok(match cmd {
        Cmd::List => {
            let has = |o: u32| options & (1u64 << o) != 0;
            if ((has(O_CONNECTION) || has(O_TIMEOUT) || has(O_DAEMON))
                && (has(O_STATS) || has(O_RATE) || has(O_THRESHOLDS)))
                || ((has(O_TIMEOUT) || has(O_DAEMON)) && has(O_PERSISTENTCONN))
            {
                return Err(fail("options conflicts in the list command"));
            }
            if has(O_SERVICE) {
                list.service = Some(ce.service_key());
            }
            Command::List(list)
        }
        Cmd::Restore => Command::Restore,
        Cmd::Save => Command::Save { numeric: list.numeric },
        Cmd::Flush => Command::Clear,
        Cmd::Add => Command::AddService(ce.service_rule()),
        Cmd::Edit => Command::EditService(ce.service_rule()),
        Cmd::Del => Command::DeleteService(ce.service_key()),
        Cmd::Zero => {
            let all = options & (1u64 << O_SERVICE) == 0
                || (ce.fwmark == 0 && ce.svc_port == 0 && match ce.svc_addr {
                    None => true,
                    Some(a) => a.is_unspecified(),
                });
            Command::Zero(if all { None } else { Some(ce.service_key()) })
        }
        Cmd::AddDest => Command::AddDest(ce.service_key(), ce.dest_rule()),
        Cmd::EditDest => Command::EditDest(ce.service_key(), ce.dest_rule()),
        Cmd::DelDest => Command::DeleteDest(
            ce.service_key(),
            ce.dest_addr.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            ce.dest_port,
        ),
        Cmd::Timeout => {
            let (tcp, tcpfin, udp) = ce.timeouts;
            Command::SetTimeouts { tcp, tcpfin, udp }
        }
        Cmd::StartDaemon | Cmd::StopDaemon => {
            let d = SyncDaemon {
                state: ce.daemon_state,
                mcast_ifn: ce.mcast_ifn.clone(),
                syncid: ce.syncid,
                sync_maxlen: ce.sync_maxlen,
                mcast_group: ce.mcast_group,
                mcast_port: ce.mcast_port,
                mcast_ttl: ce.mcast_ttl,
            };
            if cmd == Cmd::StartDaemon {
                Command::StartDaemon(d)
            } else {
                Command::StopDaemon(d)
            }
        }
    })
}
