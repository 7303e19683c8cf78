//! VIP ownership (`--vips`, `lvsnic vip`): which VIPs (IPv4 and IPv6)
//! this director answers for, gratuitous ARPs (unsolicited Neighbour
//! Advertisements for IPv6) on taking one over, and following the stack's
//! own addresses (`--vips host`).

use super::{bad, io_err, proto, sys, Daemon, DaemonError, VipMode};
use crate::device::Device;
use crate::invocation::Output;
use lvsnic_model::time::Time;
use proto::Reply;
use std::net::IpAddr;

/// keepalived's `vrrp_garp_master_repeat` default: gratuitous ARPs (for an
/// IPv6 VIP unsolicited Neighbour Advertisements) per VIP in each burst
/// after becoming master.
pub const GARP_MASTER_REPEAT: usize = 5;
/// keepalived's `vrrp_garp_master_delay` default: the second burst follows
/// the first (sent at once) after this long.
pub const GARP_MASTER_DELAY_NS: Time = 5_000_000_000;

/// The VIPs to list or follow: those of live services and those named
/// before (`lvsnic vip`), sorted, each once.
/// IPv4 ones first.
pub(super) fn known_vips(d: &lvsnic_model::director::Director) -> Vec<IpAddr> {
    let mut all: Vec<IpAddr> = d.services.live_services().map(|s| s.vaddr).collect();
    all.extend(d.vip_states().map(|(a, _)| a));
    all.sort_unstable();
    all.dedup();
    all
}

impl<D: Device> Daemon<D> {
    /// `lvsnic vip [STATE VIP...]`: VRRP ownership of VIPs. Becoming
    /// master queues two bursts of gratuitous ARPs (unsolicited Neighbour
    /// Advertisements for an IPv6 VIP) per VIP (now and
    /// [`GARP_MASTER_DELAY_NS`] later), as keepalived's defaults do.
    pub(super) fn vip(&mut self, state: Option<proto::VrrpState>, vips: &[IpAddr]) -> Reply {
        let Some(state) = state else {
            let d = self.ctl.director();
            let stdout = known_vips(d)
                .iter()
                .map(|&a| format!("{a} {}\n", if d.vip_owned(a) { "master" } else { "backup" }))
                .collect();
            return Output { stdout, ..Default::default() };
        };
        if vips.is_empty() {
            return bad("vip: no VIP given".into());
        }
        if self.vips == VipMode::Host {
            return bad("vip: the VIPs follow the director's own addresses (--vips host); keepalived's virtual_ipaddress moves them".into());
        }
        let master = state == proto::VrrpState::Master;
        let now = self.ctl.director().now();
        for &v in vips {
            if self.ctl.director().vip_owned(v) != master {
                let ev = if master { "vip_master" } else { "vip_backup" };
                crate::logging::event(log::Level::Info, ev, &[("vip", &v.to_string()), ("source", "lvsnic vip")]);
            }
            self.ctl.set_vip_owned(v, master);
            if master {
                let mac = self.ctl.director().cfg.mac;
                let f = match v {
                    IpAddr::V4(a) => lvsnic_model::xmit::gratuitous_arp(mac, a),
                    IpAddr::V6(a) => lvsnic_model::xmit::unsolicited_na(mac, a, self.na_router()),
                };
                for due in [now, now + GARP_MASTER_DELAY_NS] {
                    self.garps.extend(std::iter::repeat_n((due, f.clone()), GARP_MASTER_REPEAT));
                }
            }
        }
        if !master {
            self.garps.retain(|(_, f)| !vips.iter().any(|&v| announces(f, v)));
        }
        Output::default()
    }

    /// The Router flag of our unsolicited Neighbour Advertisements, as
    /// keepalived sets it (`get_ipv6_forwarding` of its interface): the
    /// `forwarding` sysctl of the host TAP, the director's own stack
    /// (keepalived's `interface`); without a host TAP, set (a director
    /// forwards).
    fn na_router(&self) -> bool {
        match &self.host_tap {
            Some(t) => ipv6_forwarding(t.name(), |p| std::fs::read_to_string(p)),
            None => true,
        }
    }

    /// `--vips host`: reads the stack's addresses again and follows them:
    /// its IPv4 addresses and the IPv6 ones it accepts packets for
    /// ([`crate::rtnl::ipv6_addresses`]: not while tentative).
    pub(super) fn refresh_host_addrs(&mut self) -> Result<(), DaemonError> {
        let v4 = sys::ipv4_addresses().map_err(io_err("reading the host's addresses"))?;
        let v6 = crate::rtnl::ipv6_addresses().map_err(io_err("reading the host's IPv6 addresses (rtnetlink)"))?;
        self.host_addrs = v4.into_iter().map(IpAddr::V4).chain(v6.into_iter().map(IpAddr::V6)).collect();
        self.follow_host_addrs();
        Ok(())
    }

    /// `--vips host`: every VIP (of a service, or named before) is ours
    /// exactly while it is one of the stack's addresses.
    pub(super) fn follow_host_addrs(&mut self) {
        for v in known_vips(self.ctl.director()) {
            let ours = self.host_addrs.contains(&v);
            if self.ctl.director().vip_owned(v) != ours {
                let ev = if ours { "vip_master" } else { "vip_backup" };
                crate::logging::event(log::Level::Info, ev, &[("vip", &v.to_string()), ("source", "host address")]);
                self.ctl.set_vip_owned(v, ours);
            }
        }
    }

    /// The queued gratuitous ARPs due by the director's current time, and
    /// the frames the neighbour resolvers have to send.
    pub(super) fn due_garps(&mut self) -> Vec<Vec<u8>> {
        let now = self.ctl.director().now();
        let (due, later) = std::mem::take(&mut self.garps).into_iter().partition(|(t, _)| *t <= now);
        self.garps = later;
        let mut out: Vec<Vec<u8>> = due.into_iter().map(|(_, f): (Time, Vec<u8>)| f).collect();
        // The neighbour resolvers' ARP requests and released frames.
        out.append(&mut self.neigh.out);
        out
    }
}

/// `/proc/sys/net/ipv6/conf/IFNAME/forwarding` through `read`: set when
/// it reads a non-zero number; unreadable (no IPv6 on the interface) or
/// not a number: clear.
fn ipv6_forwarding(ifname: &str, read: impl Fn(&str) -> std::io::Result<String>) -> bool {
    read(&format!("/proc/sys/net/ipv6/conf/{ifname}/forwarding")).ok().and_then(|v| v.trim().parse::<i64>().ok()).is_some_and(|v| v != 0)
}

/// Whether the queued announcement `f` (a gratuitous ARP or an unsolicited
/// Neighbour Advertisement, untagged) is about `vip`.
fn announces(f: &[u8], vip: IpAddr) -> bool {
    match vip {
        IpAddr::V4(a) => f.get(38..42) == Some(&a.octets()[..]),
        IpAddr::V6(a) => f.get(62..78) == Some(&a.octets()[..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vips_are_service_and_named_vips_once_in_order() {
        let cfg = lvsnic_model::config::DirectorConfig::parse(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n",
        )
        .unwrap();
        let rules = lvsnic_model::rules::ipvsadm::parse_rules_full(
            "-A -t 10.0.0.9:80 -s rr\n-A -t 10.0.0.2:443 -s rr\n-A -u 10.0.0.9:53 -s rr\n",
        )
        .unwrap()
        .rules;
        let mut d = lvsnic_model::director::Director::new(cfg, &rules, 0).unwrap();
        d.set_vip_owned("10.0.0.5".parse::<std::net::Ipv4Addr>().unwrap(), false);
        d.set_vip_owned("10.0.0.2".parse::<std::net::Ipv4Addr>().unwrap(), true);
        let got: Vec<String> = known_vips(&d).iter().map(|a| a.to_string()).collect();
        assert_eq!(got, ["10.0.0.2", "10.0.0.5", "10.0.0.9"]);
    }

    #[test]
    fn ipv6_vips_are_known_after_the_ipv4_ones_and_announcements_match_their_vip() {
        let cfg = lvsnic_model::config::DirectorConfig::parse(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n",
        )
        .unwrap();
        let rules = lvsnic_model::rules::ipvsadm::parse_rules_full("-A -t [2001:db8::10]:80 -s rr\n-A -t 10.0.0.9:80 -s rr\n")
            .unwrap()
            .rules;
        let mut d = lvsnic_model::director::Director::new(cfg, &rules, 0).unwrap();
        d.set_vip_owned("2001:db8::5".parse::<std::net::Ipv6Addr>().unwrap(), false);
        let got: Vec<String> = known_vips(&d).iter().map(|a| a.to_string()).collect();
        assert_eq!(got, ["10.0.0.9", "2001:db8::5", "2001:db8::10"]);
        let mac = d.cfg.mac;
        let (v4, v6, other6) = ("10.0.0.9".parse().unwrap(), "2001:db8::10".parse().unwrap(), "2001:db8::11".parse().unwrap());
        let garp = lvsnic_model::xmit::gratuitous_arp(mac, "10.0.0.9".parse().unwrap());
        let na = lvsnic_model::xmit::unsolicited_na(mac, "2001:db8::10".parse().unwrap(), true);
        assert!(announces(&garp, v4) && !announces(&garp, v6));
        assert!(announces(&na, v6) && !announces(&na, other6) && !announces(&na, v4));
    }

    #[test]
    fn the_na_router_flag_follows_the_interfaces_forwarding_sysctl() {
        let sysctl = |want: &'static str, v: Option<&'static str>| {
            move |p: &str| {
                assert_eq!(p, want);
                v.map(String::from).ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
            }
        };
        let path = "/proc/sys/net/ipv6/conf/hA/forwarding";
        assert!(ipv6_forwarding("hA", sysctl(path, Some("1\n"))));
        assert!(!ipv6_forwarding("hA", sysctl(path, Some("0\n"))));
        assert!(!ipv6_forwarding("hA", sysctl(path, None)));
        assert!(!ipv6_forwarding("hA", sysctl(path, Some("yes\n"))));
    }
}
