//! VRRP through the daemon (model backend, pcap wire, `--pace step`): the
//! director answers ARP for a VIP and load-balances it only while it owns
//! it (`lvsnic vip master|backup VIP...`, what keepalived's notify scripts
//! run); becoming master sends keepalived's default gratuitous ARPs (5 at
//! once, 5 more 5 s later). ARP frames are written out byte by byte from the
//! RFC 826 layout here, not with the model's builders.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::*;
use lvsnic_model::pcap;
use lvsnic_model::wire::{MacAddr, TCP_ACK, TCP_PSH, TCP_SYN};
use std::net::Ipv4Addr;
use std::path::Path;

const MS: u64 = 1_000_000;
const GATEWAY_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);

/// Ethernet header + RFC 826 packet for Ethernet/IPv4 (42 bytes).
fn arp(eth_dst: [u8; 6], eth_src: MacAddr, op: u16, sha: MacAddr, spa: Ipv4Addr, tha: [u8; 6], tpa: Ipv4Addr) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&eth_dst);
    f.extend_from_slice(&eth_src.0);
    f.extend_from_slice(&[0x08, 0x06]); // EtherType ARP
    f.extend_from_slice(&[0x00, 0x01]); // ar$hrd: Ethernet
    f.extend_from_slice(&[0x08, 0x00]); // ar$pro: IPv4
    f.extend_from_slice(&[6, 4]); // ar$hln, ar$pln
    f.extend_from_slice(&op.to_be_bytes()); // ar$op
    f.extend_from_slice(&sha.0);
    f.extend_from_slice(&spa.octets());
    f.extend_from_slice(&tha);
    f.extend_from_slice(&tpa.octets());
    assert_eq!(f.len(), 42);
    f
}

fn who_has_vip() -> Vec<u8> {
    arp([0xff; 6], GATEWAY_MAC, 1, GATEWAY_MAC, GATEWAY_IP, [0; 6], VIP)
}

fn vip_is_at_director() -> Vec<u8> {
    arp(GATEWAY_MAC.0, DIRECTOR_MAC, 2, DIRECTOR_MAC, VIP, GATEWAY_MAC.0, GATEWAY_IP)
}

/// Linux `arp_send` of a gratuitous ARP: broadcast request, sender = target = VIP, target MAC zero.
fn gratuitous() -> Vec<u8> {
    arp([0xff; 6], DIRECTOR_MAC, 1, DIRECTOR_MAC, VIP, [0; 6], VIP)
}

fn syn(n: u8) -> Vec<u8> {
    tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(Ipv4Addr::new(198, 51, 100, n), VIP), 1000 * n as u16, 80, TCP_SYN, 1, 0, b"")
}

fn read(path: &Path) -> Vec<Vec<u8>> {
    pcap::read_file(path).unwrap().into_iter().map(|r| r.data).collect()
}

#[test]
fn vip_answered_and_balanced_only_while_master_and_takeover_sends_gratuitous_arps() {
    let dir = tmpdir("vrrp");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let frames: Vec<(u64, Vec<u8>)> = vec![
        (T0, who_has_vip()),
        // -- vip backup
        (T0 + MS, who_has_vip()),
        (T0 + 2 * MS, syn(1)),
        // -- vip master
        (T0 + 3 * MS, who_has_vip()),
        (T0 + 4 * MS, syn(2)),
        (T0 + 6000 * MS, syn(3)),
    ];
    let (inp, out, host) = (dir.join("in.pcap"), dir.join("out.pcap"), dir.join("host.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{},{}", inp.display(), out.display(), host.display());
    let d =
        Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step"]);
    let step = |n: &str| d.stdout(&["wire", "--frames", n]);

    // No VRRP command yet: every VIP is ours.
    assert_eq!(d.stdout(&["vip"]), "10.0.0.100 master\n");
    step("1");
    d.stdout(&["vip", "backup", "10.0.0.100"]);
    assert_eq!(d.stdout(&["vip"]), "10.0.0.100 backup\n");
    step("2");
    d.stdout(&["vip", "master", "10.0.0.100"]);
    assert_eq!(d.stdout(&["vip"]), "10.0.0.100 master\n");
    step("3");
    d.stop();

    let garps = vec![gratuitous(); 5];
    let mut expected = vec![vip_is_at_director()];
    // Backup: neither the ARP request nor the SYN is answered.
    // Master again: the first burst at once, then ARP answered, SYN balanced.
    expected.extend(garps.clone());
    expected.push(vip_is_at_director());
    expected.push(expect::nat_request(&syn(2), rs(1), 80, rs_mac(1)));
    // 6 s later: the SYN, then the second burst (due 5 s after the takeover).
    expected.push(expect::nat_request(&syn(3), rs(1), 80, rs_mac(1)));
    expected.extend(garps);
    let got = read(&out);
    assert_eq!(got.len(), expected.len(), "{got:02x?}");
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "output frame {i}");
    }
    // What the backup did not answer went to the host stack unchanged.
    assert_eq!(read(&host), vec![who_has_vip(), syn(1)]);
}

#[test]
fn vip_command_errors() {
    let dir = tmpdir("vrrp-errors");
    let d = Daemon::start(&dir, &director_toml(), &[]);
    // A state needs VIPs; a VIP must be an IPv4 or IPv6 address.
    assert_eq!(d.run(&["vip", "master"]).code, 2);
    assert_eq!(d.run(&["vip", "master", "nope"]).code, 2);
    // Releasing an address that is not (yet) a service address is remembered.
    d.stdout(&["vip", "fault", "10.0.0.200"]);
    assert_eq!(d.stdout(&["vip"]), "10.0.0.200 backup\n");
    d.stop();
}

/// `--vips backup`: a (re)started director answers for no VIP until
/// `lvsnic vip master` names it, so it cannot take traffic from the
/// director that holds the VIP.
#[test]
fn vips_backup_owns_nothing_until_master() {
    let dir = tmpdir("vrrp-start-backup");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let frames: Vec<(u64, Vec<u8>)> = vec![(T0, who_has_vip()), (T0 + MS, syn(1)), (T0 + 2 * MS, who_has_vip()), (T0 + 3 * MS, syn(2))];
    let (inp, out, host) = (dir.join("in.pcap"), dir.join("out.pcap"), dir.join("host.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{},{}", inp.display(), out.display(), host.display());
    let d = Daemon::start(
        &dir,
        &director_toml(),
        &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step", "--vips", "backup"],
    );
    assert_eq!(d.stdout(&["vip"]), "10.0.0.100 backup\n");
    d.stdout(&["wire", "--frames", "2"]);
    d.stdout(&["vip", "master", "10.0.0.100"]);
    d.stdout(&["wire", "--frames", "2"]);
    d.stop();
    let mut expected = vec![gratuitous(); 5];
    expected.push(vip_is_at_director());
    expected.push(expect::nat_request(&syn(2), rs(1), 80, rs_mac(1)));
    assert_eq!(read(&out), expected);
    assert_eq!(read(&host), vec![who_has_vip(), syn(1)]);
}

/// `--vips host`: the VIPs are the director's own addresses (here none:
/// 10.0.0.100 is not an address of this machine), and `lvsnic vip` cannot
/// override that. The end-to-end test with keepalived moving the address
/// is `e2e_ha.rs` (root).
#[test]
fn vips_host_follows_the_stacks_addresses_only() {
    let dir = tmpdir("vrrp-host");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&inp, &[(T0, who_has_vip())]);
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d = Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step", "--vips", "host"]);
    assert_eq!(d.stdout(&["vip"]), "10.0.0.100 backup\n");
    let r = d.run(&["vip", "master", "10.0.0.100"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--vips host"), "{r:?}");
    assert_eq!(d.status()["vips"], "host");
    d.stdout(&["wire", "--frames", "1"]);
    d.stop();
    assert_eq!(read(&out), Vec::<Vec<u8>>::new(), "no ARP answer for a VIP that is not an address here");
}

/// Releasing a VIP takes its offloaded connections off the card: a packet
/// of an established (offloaded) NAT connection then goes to the host stack
/// like any packet to an address that is no longer the director's, while
/// the real server's replies are still rewritten (in software: IPVS's
/// output path needs no local VIP); taking the VIP back forwards again.
#[test]
fn released_vip_takes_its_offloaded_connections_off_the_card() {
    let dir = tmpdir("vrrp-offloaded");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let client = Ipv4Addr::new(198, 51, 100, 7);
    let c2v = |flags: u8, seq: u32, ack: u32, data: &[u8]| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client, VIP), 40000, 80, flags, seq, ack, data);
    let r2c = |flags: u8, seq: u32, ack: u32, data: &[u8]| tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), client), 80, 40000, flags, seq, ack, data);
    let frames: Vec<(u64, Vec<u8>)> = vec![
        (T0, c2v(TCP_SYN, 100, 0, b"")),
        (T0 + MS, r2c(TCP_SYN | TCP_ACK, 500, 101, b"")),
        (T0 + 2 * MS, c2v(TCP_ACK, 101, 501, b"")),
        // -- vip backup
        (T0 + 3 * MS, c2v(TCP_PSH | TCP_ACK, 101, 501, b"GET")),
        (T0 + 4 * MS, r2c(TCP_PSH | TCP_ACK, 501, 104, b"200")),
        // -- vip master
        (T0 + 5 * MS, c2v(TCP_PSH | TCP_ACK, 104, 504, b"bye")),
    ];
    let (inp, out, host) = (dir.join("in.pcap"), dir.join("out.pcap"), dir.join("host.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{},{}", inp.display(), out.display(), host.display());
    let d = Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step"]);
    d.stdout(&["wire", "--frames", "3"]);
    assert_eq!(d.status()["offload"]["connections"], 1, "the established connection is on the card");
    d.stdout(&["vip", "backup", "10.0.0.100"]);
    assert_eq!(d.status()["offload"]["connections"], 0, "released with its VIP");
    d.stdout(&["wire", "--frames", "2"]);
    d.stdout(&["vip", "master", "10.0.0.100"]);
    d.stdout(&["wire", "--frames", "1"]);
    d.stop();
    let f = |i: usize| frames[i].1.clone();
    let mut expected = vec![
        expect::nat_request(&f(0), rs(1), 80, rs_mac(1)),
        expect::nat_reply(&f(1), VIP, 80),
        expect::nat_request(&f(2), rs(1), 80, rs_mac(1)),
        expect::nat_reply(&f(4), VIP, 80),
    ];
    expected.extend(vec![gratuitous(); 5]);
    expected.push(expect::nat_request(&f(5), rs(1), 80, rs_mac(1)));
    let got = read(&out);
    assert_eq!(got.len(), expected.len(), "{got:02x?}");
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "output frame {i}");
    }
    assert_eq!(read(&host), vec![f(3)], "the client's packet while backup went to the host stack");
}

const VIP6: &str = "2001:db8::100";

fn vip6() -> std::net::Ipv6Addr {
    VIP6.parse().unwrap()
}

fn syn6(n: u8) -> Vec<u8> {
    let client: std::net::Ipv6Addr = format!("2001:db8:c::{n}").parse().unwrap();
    tcp6(GATEWAY_MAC, DIRECTOR_MAC, (client, vip6()), 1000 * n as u16, 80, TCP_SYN, 1, 0, b"")
}

/// keepalived's unsolicited Neighbour Advertisement for the IPv6 VIP,
/// written from the RFC 4861 §4.4 layout: to all nodes (33:33:00:00:00:01,
/// ff02::1) from the VIP, hop limit 255; type 136, code 0, checksum, flags
/// R and O (0xa0), target = VIP, option 2 (target link-layer address),
/// length 1, the director's MAC.
fn unsolicited_na() -> Vec<u8> {
    let all: std::net::Ipv6Addr = "ff02::1".parse().unwrap();
    let mut m = vec![136, 0, 0, 0, 0xa0, 0, 0, 0];
    m.extend_from_slice(&vip6().octets());
    m.extend_from_slice(&[2, 1]);
    m.extend_from_slice(&DIRECTOR_MAC.0);
    let mut sum: u32 = 0;
    let pseudo = [&vip6().octets()[..], &all.octets()[..], &(m.len() as u32).to_be_bytes()[..], &[0, 0, 0, 58][..], &m[..]].concat();
    for ch in pseudo.chunks(2) {
        sum += u32::from(u16::from_be_bytes([ch[0], *ch.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    m[2..4].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    let mut f = vec![0x33, 0x33, 0, 0, 0, 1];
    f.extend_from_slice(&DIRECTOR_MAC.0);
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(m.len() as u16).to_be_bytes());
    f.extend_from_slice(&[58, 255]);
    f.extend_from_slice(&vip6().octets());
    f.extend_from_slice(&all.octets());
    f.extend_from_slice(&m);
    assert_eq!(f.len(), 86);
    f
}

/// `ip_vs_dr_xmit` for IPv6: the real server's MAC, ours, hop limit − 1.
fn dr6(syn: &[u8]) -> Vec<u8> {
    let mut f = syn.to_vec();
    f[0..6].copy_from_slice(&rs_mac(1).0);
    f[6..12].copy_from_slice(&DIRECTOR_MAC.0);
    f[21] -= 1;
    f
}

/// issue 20: `--vips backup` with an IPv6 VIP: `lvsnic vip master` takes
/// it (keepalived's two bursts of unsolicited Neighbour Advertisements,
/// the DR service balanced), `vip backup` releases it (its SYN goes to the
/// host stack unchanged).
#[test]
fn ipv6_vip_balanced_only_while_master_and_takeover_sends_unsolicited_nas() {
    let dir = tmpdir("vrrp6");
    let rules = write(&dir, "rules", "-A -t [2001:db8::100]:80 -s rr\n-a -t [2001:db8::100]:80 -r [2001:db8:1::1]:80 -g -w 1\n");
    let toml = format!("{}\"2001:db8:1::1\" = \"{}\"\n", director_toml(), rs_mac(1));
    let frames: Vec<(u64, Vec<u8>)> = vec![
        (T0, syn6(1)),
        // -- vip master
        (T0 + MS, syn6(2)),
        (T0 + 6000 * MS, syn6(3)),
        // -- vip backup
        (T0 + 6001 * MS, syn6(4)),
    ];
    let (inp, out, host) = (dir.join("in.pcap"), dir.join("out.pcap"), dir.join("host.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{},{}", inp.display(), out.display(), host.display());
    let d = Daemon::start(&dir, &toml, &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step", "--vips", "backup"]);
    let step = |n: &str| d.stdout(&["wire", "--frames", n]);
    assert_eq!(d.stdout(&["vip"]), "2001:db8::100 backup\n");
    step("1");
    d.stdout(&["vip", "master", VIP6]);
    assert_eq!(d.stdout(&["vip"]), "2001:db8::100 master\n");
    step("2");
    d.stdout(&["vip", "backup", VIP6]);
    assert_eq!(d.stdout(&["vip"]), "2001:db8::100 backup\n");
    step("1");
    d.stop();
    let nas = vec![unsolicited_na(); 5];
    let mut expected = nas.clone();
    expected.push(dr6(&syn6(2)));
    expected.push(dr6(&syn6(3)));
    expected.extend(nas);
    let got = read(&out);
    assert_eq!(got.len(), expected.len(), "{got:02x?}");
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "output frame {i}");
    }
    assert_eq!(read(&host), vec![syn6(1), syn6(4)]);
}
