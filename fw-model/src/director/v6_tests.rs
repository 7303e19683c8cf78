//! IPv6 services and real servers in the director's rules: accepted,
//! listed (`ipvsadm -L -n`) and saved (`ipvsadm -S -n`) as ipvsadm prints
//! them; mixed address families refused as the kernel refuses them.
//! Expected text is written out by hand from ipvsadm's printf formats
//! (`print_service_entry`: `"%-4s %s"`, `"  -> %-28s %-7s %-6d %-10u %-10u"`,
//! `" persistent %u mask %i"` for an IPv6 prefix).

use super::Director;
use crate::config::DirectorConfig;
use crate::ipvs::RuleError;
use crate::rules::ipvsadm::{format_list, format_save, parse_rules, ListOptions};
use crate::rules::{DestRule, FwdMethod, Protocol, ServiceKey, TunnelCsum, TunnelType};
use crate::time::SEC;
use std::net::{IpAddr, Ipv6Addr};

const CFG: &str = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\n\
gateway_mac = \"02:00:00:00:00:fe\"\n[neighbors]\n\"192.168.10.1\" = \"02:00:00:00:10:01\"\n";
const T0: u64 = 1_700_000_000 * SEC;

const RULES: &str = "\
-A -t [2001:db8::10]:80 -s rr
-a -t [2001:db8::10]:80 -r [2001:db8:1::2]:80 -g -w 2
-a -t [2001:db8::10]:80 -r [2001:db8:1::1]:80 -m -w 1
-A -u [2001:db8::10]:53 -s sh -p 300 -M 64
-a -u [2001:db8::10]:53 -r [2001:db8:1::3]:53 -i -w 1
-A -t 10.0.0.100:80 -s wlc
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
";

fn director() -> Director {
    Director::new(DirectorConfig::parse(CFG).unwrap(), &parse_rules(RULES).unwrap(), T0).unwrap()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

#[test]
fn ipv6_services_and_servers_are_listed_as_ipvsadm_lists_them() {
    let d = director();
    let (header, services) = crate::stats::listings(&d);
    let got = format_list(&header, &services, &ListOptions { numeric: true, ..ListOptions::default() });
    // ipvs_cmp_services: AF_INET (2) before AF_INET6 (10), then TCP before
    // UDP; servers by address.
    let want = format!(
        "IP Virtual Server version 1.2.1 (size={})\n\
Prot LocalAddress:Port Scheduler Flags\n\
\x20 -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n\
TCP  10.0.0.100:80 wlc\n\
\x20 -> 192.168.10.1:80              Masq    1      0          0         \n\
TCP  [2001:db8::10]:80 rr\n\
\x20 -> [2001:db8:1::1]:80           Masq    1      0          0         \n\
\x20 -> [2001:db8:1::2]:80           Route   2      0          0         \n\
UDP  [2001:db8::10]:53 sh persistent 300 mask 64\n\
\x20 -> [2001:db8:1::3]:53           Tunnel  1      0          0         \n",
        header.conn_tab_size
    );
    assert_eq!(got, want);
}

#[test]
fn ipv6_rules_save_in_restore_format_and_restore_to_the_same_table() {
    let d = director();
    let saved = format_save(&d.services.to_rules());
    let want = "\
-A -t 10.0.0.100:80 -s wlc
-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
-A -t [2001:db8::10]:80 -s rr
-a -t [2001:db8::10]:80 -r [2001:db8:1::1]:80 -m -w 1
-a -t [2001:db8::10]:80 -r [2001:db8:1::2]:80 -g -w 2
-A -u [2001:db8::10]:53 -s sh -p 300 -M 64
-a -u [2001:db8::10]:53 -r [2001:db8:1::3]:53 -i -w 1 --tun-type ipip
";
    assert_eq!(saved, want);
    let again = Director::new(DirectorConfig::parse(CFG).unwrap(), &parse_rules(&saved).unwrap(), T0).unwrap();
    assert_eq!(format_save(&again.services.to_rules()), want);
}

#[test]
fn ipv6_services_are_found_by_address_and_are_vips() {
    let d = director();
    let vip: IpAddr = v6("2001:db8::10").into();
    let tcp = d.services.find_addr(6, vip, 80).expect("TCP service");
    let udp = d.services.find_addr(17, vip, 53).expect("UDP service");
    assert_ne!(tcp, udp);
    assert_eq!(d.services.find_addr(6, vip, 81), None);
    assert_eq!(d.services.find_addr(6, v6("2001:db8::11").into(), 80), None);
    assert!(d.services.is_vip6(&v6("2001:db8::10")));
    assert!(!d.services.is_vip6(&v6("2001:db8::11")));
    assert_eq!(d.services.service(udp).plen(), 64);
    assert_eq!(d.services.service(tcp).plen(), 128);
    // The IPv4 service is not found through an IPv4-mapped IPv6 address.
    assert_eq!(d.services.find_addr(6, v6("::ffff:10.0.0.100").into(), 80), None);
    assert!(d.services.find(6, 0x0A00_0064, 80).is_some());
}

#[test]
fn deleting_ipv6_servers_and_services() {
    let mut d = director();
    let key = ServiceKey::Addr { proto: Protocol::Tcp, addr: v6("2001:db8::10").into(), port: 80 };
    d.del_dest(&key, v6("2001:db8:1::2"), 80).unwrap();
    d.del_service(&key).unwrap();
    assert!(d.services.is_vip6(&v6("2001:db8::10")), "the UDP service still uses the VIP");
    assert_eq!(d.services.find_addr(6, v6("2001:db8::10").into(), 80), None);
    let udp = ServiceKey::Addr { proto: Protocol::Udp, addr: v6("2001:db8::10").into(), port: 53 };
    d.del_service(&udp).unwrap();
    assert!(!d.services.is_vip6(&v6("2001:db8::10")));
}

/// `ip_vs_genl_set_cmd`: a server of the other family is EINVAL unless it
/// is tunnelled; `ip_vs_new_dest`: an IPv6 server must be global unicast.
#[test]
fn mixed_family_servers_refused_as_the_kernel_does() {
    let mut d = director();
    let v4svc = ServiceKey::Addr { proto: Protocol::Tcp, addr: "10.0.0.100".parse().unwrap(), port: 80 };
    let v6svc = ServiceKey::Addr { proto: Protocol::Tcp, addr: v6("2001:db8::10").into(), port: 80 };
    let dest = |addr: IpAddr, fwd| DestRule { addr, port: 80, fwd, weight: 1, u_threshold: 0, l_threshold: 0 };
    for fwd in [FwdMethod::Masq, FwdMethod::Route] {
        assert_eq!(d.services.add_dest(&v4svc, &dest(v6("2001:db8:1::9").into(), fwd)), Err(RuleError::MixedFamily));
        assert_eq!(d.services.add_dest(&v6svc, &dest("192.168.10.9".parse().unwrap(), fwd)), Err(RuleError::MixedFamily));
    }
    assert_eq!(RuleError::MixedFamily.to_string(), "Invalid argument");
    let tun = FwdMethod::Tunnel { tun: TunnelType::Ipip, csum: TunnelCsum::NoCsum };
    assert!(d.services.add_dest(&v4svc, &dest(v6("2001:db8:1::9").into(), tun)).is_ok());
    assert!(d.services.add_dest(&v6svc, &dest("192.168.10.9".parse().unwrap(), tun)).is_ok());
    for bad in ["::", "ff02::1", "fe80::1", "febf::1"] {
        assert_eq!(d.services.add_dest(&v6svc, &dest(v6(bad).into(), tun)), Err(RuleError::BadDestAddress), "{bad}");
    }
    assert!(d.services.add_dest(&v6svc, &dest(v6("fec0::1").into(), FwdMethod::Route)).is_ok());
}
