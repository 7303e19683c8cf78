//! The kernel's sync rules on the golden model: which packets of which
//! connections make the master send them (ip_vs_sync_conn /
//! ip_vs_sync_conn_needed with the default sysctls and others), and how a
//! backup installs what it receives (ip_vs_proc_conn): real server lookup,
//! activity flags and counters, replacement, templates, timeouts, and the
//! backup then forwarding the connection's packets to the synced server.

use lvsnic_fixtures::*;
use lvsnic_model::conn::{flags as cf, ConnId, NIL};
use lvsnic_model::director::Director;
use lvsnic_model::rules::ipvsadm::format_connections;
use lvsnic_model::stats::connection_listings;
use lvsnic_model::sync::backup::{proc_conn, receive, BackupCounters, Installed};
use lvsnic_model::sync::master::{SyncMaster, SyncSysctl};
use lvsnic_model::sync::{decode, encode_v1, SyncConn};
use lvsnic_model::time::{Time, SEC};
use lvsnic_model::wire::{TCP_ACK, TCP_FIN, TCP_SYN};
use std::net::Ipv4Addr;

const MS: Time = 1_000_000;

fn client(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(198, 51, 100, n)
}

fn pkt(vip: Ipv4Addr, vport: u16, n: u8, flags: u8) -> Vec<u8> {
    tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(n), vip), 40000 + n as u16, vport, flags, 1, 1, b"")
}

/// Feeds `frame` at `t` and gives the master the in-direction event.
fn step(d: &mut Director, m: &mut SyncMaster, t: Time, frame: &[u8]) {
    feed(d, t, frame);
    let id = d.last_conn.expect("a connection");
    m.in_packet(t, &d.conns, id);
}

/// The entries the master has written so far, in order (cport, template?, state).
fn sent(m: &mut SyncMaster, d: &Director, now: Time) -> Vec<(u16, bool, u16)> {
    let mut msgs = m.poll(now, &d.conns);
    msgs.extend(m.flush_current());
    msgs.iter().flat_map(|b| decode(b, 0).conns).map(|c| (c.cport, c.is_template(), c.state)).collect()
}

const ES: u16 = 1;
const FW: u16 = 4;
const CW: u16 = 7;

#[test]
fn default_rules_send_on_the_third_packet_every_fifty_and_on_state_changes() {
    let mut d = director(MIXED_RULES, "");
    let mut m = SyncMaster::new(SyncSysctl::default(), 0, 1472);
    let vip = VIP;
    step(&mut d, &mut m, T0, &pkt(vip, 80, 1, TCP_SYN)); // SYN_RECV: not a synced state
    step(&mut d, &mut m, T0 + MS, &pkt(vip, 80, 1, TCP_ACK)); // ESTABLISHED, pkts 2
    assert_eq!(sent(&mut m, &d, T0 + MS), vec![]);
    step(&mut d, &mut m, T0 + 2 * MS, &pkt(vip, 80, 1, TCP_ACK)); // pkts 3 = sync_threshold
    assert_eq!(sent(&mut m, &d, T0 + 2 * MS), vec![(40001, false, ES)]);
    for i in 4..=52 {
        step(&mut d, &mut m, T0 + i * MS, &pkt(vip, 80, 1, TCP_ACK));
    }
    assert_eq!(sent(&mut m, &d, T0 + 52 * MS), vec![]);
    step(&mut d, &mut m, T0 + 53 * MS, &pkt(vip, 80, 1, TCP_ACK)); // 53 % 50 == 3
    assert_eq!(sent(&mut m, &d, T0 + 53 * MS), vec![(40001, false, ES)]);
    // The client's FIN: CLOSE_WAIT (tcp_states, input direction), a synced
    // state change: sent at once.
    step(&mut d, &mut m, T0 + 54 * MS, &pkt(vip, 80, 1, TCP_FIN | TCP_ACK));
    assert_eq!(sent(&mut m, &d, T0 + 54 * MS), vec![(40001, false, CW)]);
    step(&mut d, &mut m, T0 + 55 * MS, &pkt(vip, 80, 1, TCP_ACK)); // same state, pkts 55
    assert_eq!(sent(&mut m, &d, T0 + 55 * MS), vec![]);
}

#[test]
fn templates_are_synced_through_the_control_pointer_after_the_connection() {
    let mut d = director(MIXED_RULES, "");
    let mut m = SyncMaster::new(SyncSysctl::default(), 0, 1472);
    // 10.0.0.100:443 is persistent (-p 120): the SYN creates a template.
    step(&mut d, &mut m, T0, &pkt(VIP, 443, 2, TCP_SYN));
    // The connection is in SYN_RECV (not synced) but its template is
    // evaluated with its own in_pkts (1): templates pass the period check.
    assert_eq!(sent(&mut m, &d, T0), vec![(0, true, 0)]);
    step(&mut d, &mut m, T0 + MS, &pkt(VIP, 443, 2, TCP_ACK));
    assert_eq!(sent(&mut m, &d, T0 + MS), vec![(0, true, 0)]);
    step(&mut d, &mut m, T0 + 2 * MS, &pkt(VIP, 443, 2, TCP_ACK));
    assert_eq!(sent(&mut m, &d, T0 + 2 * MS), vec![(40002, false, ES), (0, true, 0)]);
}

#[test]
fn persist_mode_syncs_only_templates_and_threshold_mode_syncs_once() {
    let mut d = director(MIXED_RULES, "");
    let cfg = SyncSysctl { sync_persist_mode: true, ..Default::default() };
    let mut m = SyncMaster::new(cfg, 0, 1472);
    for (i, f) in [TCP_SYN, TCP_ACK, TCP_ACK].into_iter().enumerate() {
        step(&mut d, &mut m, T0 + i as Time * MS, &pkt(VIP, 443, 3, f));
    }
    assert_eq!(sent(&mut m, &d, T0 + 3 * MS), vec![(0, true, 0); 3]);

    // sync_period 0: only when in_pkts equals sync_threshold (3), once.
    let mut d = director(MIXED_RULES, "");
    let cfg = SyncSysctl { sync_period: 0, ..Default::default() };
    let mut m = SyncMaster::new(cfg, 0, 1472);
    step(&mut d, &mut m, T0, &pkt(VIP, 80, 4, TCP_SYN));
    for i in 1..200 {
        step(&mut d, &mut m, T0 + i * MS, &pkt(VIP, 80, 4, TCP_ACK));
    }
    assert_eq!(sent(&mut m, &d, T0 + 200 * MS), vec![(40004, false, ES)]);
}

#[test]
fn refresh_period_limits_resends_by_time() {
    let mut d = director(MIXED_RULES, "");
    let cfg = SyncSysctl { sync_period: 0, sync_refresh_period_ms: 10_000, ..Default::default() };
    let mut m = SyncMaster::new(cfg, 0, 1472);
    step(&mut d, &mut m, T0, &pkt(VIP, 80, 5, TCP_SYN));
    step(&mut d, &mut m, T0 + MS, &pkt(VIP, 80, 5, TCP_ACK));
    // ESTABLISHED: the first sync happens (no earlier one).
    assert_eq!(sent(&mut m, &d, T0 + MS), vec![(40005, false, ES)]);
    step(&mut d, &mut m, T0 + 5 * SEC, &pkt(VIP, 80, 5, TCP_ACK));
    assert_eq!(sent(&mut m, &d, T0 + 5 * SEC), vec![], "5 s < refresh period");
    step(&mut d, &mut m, T0 + 12 * SEC, &pkt(VIP, 80, 5, TCP_ACK));
    assert_eq!(sent(&mut m, &d, T0 + 12 * SEC), vec![(40005, false, ES)]);
}

#[test]
fn the_master_fills_messages_up_to_maxlen_and_flushes_after_two_seconds() {
    let mut d = director(MIXED_RULES, "");
    let cfg = SyncSysctl { sync_threshold: 1, ..Default::default() };
    let mut m = SyncMaster::new(cfg, 7, 1472);
    // 45 UDP flows, one packet each: pkts 1 = threshold → each synced.
    let vip = Ipv4Addr::new(10, 0, 0, 101);
    for n in 1..=45u8 {
        let f = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(n), vip), 5000, 53, b"q", false);
        step(&mut d, &mut m, T0, &f);
    }
    // 40 entries of 36 bytes fill 1472: the first message is queued.
    let first = m.poll(T0, &d.conns);
    assert_eq!(first.len(), 1);
    assert_eq!((first[0][1], first[0][4], first[0].len()), (7, 40, 8 + 40 * 36));
    assert_eq!(m.poll(T0 + 1999 * MS, &d.conns).len(), 0);
    let rest = m.poll(T0 + 2000 * MS, &d.conns);
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0][4], 5);
}

fn entry(cport: u16, vport: u16, daddr: Ipv4Addr, dport: u16, state: u16, flags: u32, timeout: u32) -> SyncConn {
    SyncConn {
        protocol: 6,
        flags: flags | cf::SYNC as u32,
        state,
        cport,
        vport,
        dport,
        timeout,
        caddr: client(9).into(),
        vaddr: VIP.into(),
        daddr: daddr.into(),
        ..Default::default()
    }
}

#[test]
fn the_backup_creates_updates_and_replaces_connections() {
    let mut d = director(MIXED_RULES, "");
    // ESTABLISHED NAT connection to rs 2 (flags as a kernel master sends
    // them: MASQ, active).
    let e = entry(40009, 80, rs(2), 8080, ES, 0, 900);
    let Installed::Created(id) = proc_conn(&mut d, &e) else { panic!() };
    let c = *d.conns.get(id);
    assert_eq!((c.state, c.timeout_ms, c.flags & cf::FWD_MASK, c.flags & cf::INACTIVE), (1, 900_000, cf::MASQ, 0));
    assert_ne!(c.dest, NIL);
    let dest = d.services.dest(lvsnic_model::ipvs::DestId(c.dest));
    assert_eq!((dest.addr, dest.activeconns, dest.inactconns), (std::net::IpAddr::V4(rs(2)), 1, 0));
    // The listing shows it as the kernel's would.
    let text = format_connections(&connection_listings(&d), false);
    assert!(text.contains("TCP 15:00  ESTABLISHED 198.51.100.9:40009 10.0.0.100:80      192.168.10.2:8080\n"), "{text}");

    // Update: FIN_WAIT, inactive, 120 s: counters move, same entry.
    let e2 = entry(40009, 80, rs(2), 8080, FW, cf::INACTIVE as u32, 120);
    assert_eq!(proc_conn(&mut d, &e2), Installed::Updated(id));
    let dest = d.services.dest(lvsnic_model::ipvs::DestId(c.dest));
    assert_eq!((dest.activeconns, dest.inactconns), (0, 1));
    assert_eq!((d.conns.get(id).state, d.conns.get(id).timeout_ms), (4, 120_000));

    // An inactive entry naming another server is the old one's expiry: ignored.
    let e3 = entry(40009, 80, rs(1), 8080, FW, cf::INACTIVE as u32, 120);
    assert_eq!(proc_conn(&mut d, &e3), Installed::Ignored);
    // An active one replaces it.
    let e4 = entry(40009, 80, rs(1), 8080, ES, 0, 900);
    let Installed::Created(id2) = proc_conn(&mut d, &e4) else { panic!() };
    assert_ne!(id2, id);
    assert_eq!(d.conns.in_get(6, u32::from(client(9)), 40009, u32::from(VIP), 80), Some(id2));
}

#[test]
fn templates_unknown_services_and_v0_timeouts() {
    let mut d = director(MIXED_RULES, "");
    // Template of the persistent DR service (cport 0, vport 443).
    let t = entry(0, 443, rs(4), 443, 0, cf::TEMPLATE as u32, 120);
    let Installed::Created(tid) = proc_conn(&mut d, &t) else { panic!() };
    let tc = *d.conns.get(tid);
    assert!(tc.is_template());
    assert_eq!(tc.flags & cf::FWD_MASK, cf::DROUTE, "forwarding method from the real server");
    assert_eq!(d.services.dest(lvsnic_model::ipvs::DestId(tc.dest)).persistconns, 1);
    assert_eq!(proc_conn(&mut d, &t), Installed::Updated(tid));

    // No such service here: created unbound.
    let mut e = entry(1, 8443, rs(1), 8443, ES, 0, 0);
    e.vaddr = Ipv4Addr::new(10, 9, 9, 9).into();
    let Installed::Created(id) = proc_conn(&mut d, &e) else { panic!() };
    assert_eq!(d.conns.get(id).dest, NIL);
    // timeout 0 (a v0 message): the protocol's timeout for the state (ES 900 s).
    assert_eq!(d.conns.get(id).timeout_ms, 900_000);
    let mut t0 = t.clone();
    t0.timeout = 0;
    t0.cport = 0;
    t0.caddr = client(10).into();
    let Installed::Created(id) = proc_conn(&mut d, &t0) else { panic!() };
    assert_eq!(d.conns.get(id).timeout_ms, 180_000, "templates: 3 minutes");
}

#[test]
fn after_failover_the_backup_forwards_synced_connections_to_their_server() {
    // Master: the connection goes to whatever wlc picks.
    let mut master = director(MIXED_RULES, "");
    let mut m = SyncMaster::new(SyncSysctl::default(), 0, 1472);
    for (i, f) in [TCP_SYN, TCP_ACK, TCP_ACK].into_iter().enumerate() {
        step(&mut master, &mut m, T0 + i as Time * MS, &pkt(VIP, 80, 11, f));
    }
    let mcid = master.last_conn.unwrap();
    let server = Ipv4Addr::from(master.conns.get(mcid).daddr);
    let msgs: Vec<Vec<u8>> = m.flush_current().into_iter().collect();
    // Backup: its own scheduler would pick rs 1 (weight 3) for a new client
    // first; make the master's choice the other one to see the difference.
    let mut backup = director(MIXED_RULES, "");
    let mut counters = BackupCounters::default();
    let ids: Vec<ConnId> = msgs.iter().flat_map(|b| receive(&mut backup, b, 0, &mut counters)).collect();
    assert_eq!((counters.created, ids.len()), (1, 1));
    let out = one_tx(feed(&mut backup, T0 + 10 * MS, &pkt(VIP, 80, 11, TCP_ACK)));
    let dst = Ipv4Addr::new(out[30], out[31], out[32], out[33]);
    assert_eq!(dst, server);
    assert_eq!(backup.last_conn, Some(ids[0]), "the synced connection, not a new one");
}

#[test]
fn foreign_syncid_and_garbage_are_counted_not_installed() {
    let mut d = director(MIXED_RULES, "");
    let mut c = BackupCounters::default();
    let msg = encode_v1(3, 1472, &[entry(1, 80, rs(1), 8080, ES, 0, 900)]).remove(0);
    assert!(receive(&mut d, &msg, 4, &mut c).is_empty());
    assert!(receive(&mut d, &msg[..5], 3, &mut c).is_empty());
    assert!(receive(&mut d, b"\x00", 3, &mut c).is_empty());
    assert_eq!(d.conns.len(), 0);
    assert_eq!(c.dropped.get("foreign_syncid"), Some(&1));
    assert_eq!(c.dropped.get("bad_size"), Some(&1));
    assert_eq!(c.dropped.get("header_too_short"), Some(&1));
    assert_eq!(receive(&mut d, &msg, 3, &mut c).len(), 1);
    assert_eq!((c.messages, c.created, c.dropped_total()), (4, 1, 3));
}

/// The UDP payloads of a capture (Ethernet, IPv4 without options).
fn udp_payloads(path: &std::path::Path) -> Vec<Vec<u8>> {
    lvsnic_model::pcap::read_file(path).unwrap().into_iter().map(|r| r.data[14 + 20 + 8..].to_vec()).collect()
}

#[test]
fn a_kernel_masters_message_installs_and_lists_as_on_the_kernel() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernel-sync");
    let msgs = udp_payloads(&dir.join("kernel-sync.pcap"));
    assert_eq!(msgs.len(), 1);
    let m = decode(&msgs[0], 7);
    assert_eq!((m.version, m.dropped, m.skipped.len(), m.conns.len()), (Some(lvsnic_model::sync::Version::V1), None, 0, 2));
    for (c, port) in m.conns.iter().zip([41000u16, 41001]) {
        assert_eq!((c.protocol, c.state, c.cport, c.vport, c.dport, c.timeout), (6, ES, port, 80, 80, 900));
        assert_eq!((c.caddr, c.vaddr, c.daddr), (Ipv4Addr::LOCALHOST.into(), VIP.into(), Ipv4Addr::LOCALHOST.into()));
    }
    // lvsnic's encoder writes the kernel's bytes for the same connections.
    let sent: Vec<SyncConn> = m.conns.iter().map(|c| SyncConn { flags: c.flags & !(cf::SYNC as u32), ..c.clone() }).collect();
    assert_eq!(encode_v1(7, 1472, &sent), msgs);

    // Installed on an lvsnic backup (no such service here: unbound), its
    // listing has the kernel's lines (the expiry aside: the kernel listed
    // them 5 s later).
    let mut d = director("", "");
    let mut counters = BackupCounters::default();
    assert_eq!(receive(&mut d, &msgs[0], 7, &mut counters).len(), 2);
    let ours = format_connections(&connection_listings(&d), false);
    let kernel = std::fs::read_to_string(dir.join("kernel-conns.txt")).unwrap();
    let rows = |t: &str| {
        let mut v: Vec<String> = t.lines().skip(2).map(|l| format!("{}{}", &l[..4], &l[9..])).collect();
        v.sort();
        v
    };
    assert_eq!(ours.lines().take(2).collect::<Vec<_>>(), kernel.lines().take(2).collect::<Vec<_>>());
    assert_eq!(rows(&ours), rows(&kernel));
    assert!(ours.lines().skip(2).all(|l| &l[4..9] == "15:00"), "{ours}");
}

#[test]
fn lvsnics_message_means_to_an_lvsnic_backup_what_it_meant_to_the_kernel_backup() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernel-sync");
    let msgs = udp_payloads(&dir.join("lvsnic-sync.pcap"));
    assert_eq!(msgs.len(), 1);
    let mut d = director(MIXED_RULES, "");
    let mut counters = BackupCounters::default();
    assert_eq!(receive(&mut d, &msgs[0], 7, &mut counters).len(), 3);
    assert_eq!(counters.unbound, 0);
    let ours = format_connections(&connection_listings(&d), false);
    let kernel = std::fs::read_to_string(dir.join("kernel-backup-conns.txt")).unwrap();
    let rows = |t: &str| {
        let mut v: Vec<String> = t.lines().skip(2).map(|l| format!("{}{}", &l[..4], &l[9..])).collect();
        v.sort();
        v
    };
    assert_eq!(rows(&ours), rows(&kernel));
    assert_eq!(rows(&kernel).len(), 3);
}


fn a6(s: &str) -> std::net::Ipv6Addr {
    s.parse().unwrap()
}

fn client6(n: u8) -> std::net::Ipv6Addr {
    a6(&format!("2001:db8:cafe:{n}::7"))
}

fn pkt6(vip: &str, vport: u16, n: u8, flags: u8) -> Vec<u8> {
    tcp6(GATEWAY_MAC, DIRECTOR_MAC, (client6(n), a6(vip)), 40000 + n as u16, vport, flags, 1, 1, b"")
}

/// Master and backup directors over IPV6_RULES: a connection of client `n` to
/// `vip:vport` made on the master (SYN, ACK, ACK: ESTABLISHED, synced on
/// the third packet), its template with it when the service is
/// persistent; the backup receives the messages. Returns both directors,
/// the master's connection and the backup's counters.
fn synced6(vip: &str, vport: u16, n: u8) -> (Director, Director, ConnId, BackupCounters, Vec<Vec<u8>>) {
    let mut master = director(IPV6_RULES, "");
    let mut m = SyncMaster::new(SyncSysctl::default(), 0, 1472);
    for (i, f) in [TCP_SYN, TCP_ACK, TCP_ACK].into_iter().enumerate() {
        step(&mut master, &mut m, T0 + i as Time * MS, &pkt6(vip, vport, n, f));
    }
    let mcid = master.last_conn.unwrap();
    let msgs: Vec<Vec<u8>> = m.flush_current().into_iter().collect();
    let mut backup = director(IPV6_RULES, "");
    let mut counters = BackupCounters::default();
    for b in &msgs {
        receive(&mut backup, b, 0, &mut counters);
    }
    (master, backup, mcid, counters, msgs)
}

#[test]
fn an_ipv6_connection_synced_to_a_backup_keeps_its_real_server() {
    // Two clients: the master's rr gives them servers 1 and 2; the backup,
    // whose rr starts again, would give the second one server 1.
    let mut master = director(IPV6_RULES, "");
    let mut m = SyncMaster::new(SyncSysctl::default(), 0, 1472);
    for n in [1u8, 2] {
        for (i, f) in [TCP_SYN, TCP_ACK, TCP_ACK].into_iter().enumerate() {
            step(&mut master, &mut m, T0 + (10 * n as Time + i as Time) * MS, &pkt6("2001:db8::10", 80, n, f));
        }
    }
    let msgs: Vec<Vec<u8>> = m.flush_current().into_iter().collect();
    // On the wire: IPv6 entries (type 1, 72 bytes each).
    assert_eq!(msgs.len(), 1);
    assert_eq!((msgs[0][4], msgs[0].len()), (2, 8 + 2 * 72));
    assert_eq!((msgs[0][8], msgs[0][8 + 72]), (1, 1));
    let servers: Vec<std::net::IpAddr> = [1u8, 2]
        .iter()
        .map(|&n| {
            let id = master.conns.in_get6(6, &client6(n), 40000 + n as u16, &a6("2001:db8::10"), 80).unwrap();
            master.conns.addrs(id).daddr
        })
        .collect();
    assert_ne!(servers[0], servers[1]);
    let mut backup = director(IPV6_RULES, "");
    let mut counters = BackupCounters::default();
    let ids: Vec<ConnId> = msgs.iter().flat_map(|b| receive(&mut backup, b, 0, &mut counters)).collect();
    assert_eq!((counters.created, counters.unbound, counters.dropped_total(), ids.len()), (2, 0, 0, 2));
    for (k, n) in [2u8, 1].into_iter().enumerate() {
        let out = one_tx(feed(&mut backup, T0 + (100 + k as Time) * MS, &pkt6("2001:db8::10", 80, n, TCP_ACK)));
        assert_eq!(ipv6_dst(&out).map(std::net::IpAddr::V6), Some(servers[n as usize - 1]), "client {n}");
        // NAT to the server's port.
        assert_eq!(u16::from_be_bytes([out[14 + 40 + 2], out[14 + 40 + 3]]), 8080);
        assert!(ids.contains(&backup.last_conn.unwrap()), "the synced connection, not a new one");
    }
    // Established on the master, so active on the backup's servers.
    let act: Vec<i32> = backup.services.dests.iter().take(2).map(|d| d.activeconns).collect();
    assert_eq!(act, [1, 1]);
    let listing = format_connections(&connection_listings(&backup), false);
    assert!(listing.contains("ESTABLISHED [2001:db8:cafe:2::7]:40002 [2001:db8::10]:80"), "{listing}");
}

#[test]
fn an_ipv6_persistence_template_is_synced_with_its_connection() {
    let (master, mut backup, mcid, counters, msgs) = synced6("2001:db8::20", 443, 3);
    let server = master.conns.addrs(mcid).daddr;
    // The template on every packet (templates are rate limited only by
    // the refresh period), the connection on the third (ESTABLISHED,
    // `sync_threshold`) before its template (`cp->control`).
    let entries = decode(&msgs[0], 0).conns;
    let kinds: Vec<(bool, bool)> = entries.iter().map(|c| (c.is_v6(), c.is_template())).collect();
    assert_eq!(kinds, [(true, true), (true, true), (true, false), (true, true)]);
    let t = &entries[3];
    assert_eq!((t.caddr, t.cport, t.vport, t.daddr, t.timeout), (a6("2001:db8:cafe:3::").into(), 0, 443, server, 300));
    assert_eq!((counters.created, counters.updated, counters.unbound), (2, 2, 0));
    let tid = backup.conns.ct_in_get6(6, &a6("2001:db8:cafe:3::"), 0, &a6("2001:db8::20"), 443).unwrap();
    assert_eq!(backup.conns.addrs(tid).daddr, server);
    assert_eq!(backup.services.dests[backup.conns.get(tid).dest as usize].persistconns, 1);
    // A new connection from another host of the same /64 follows the
    // template to the same server on the backup.
    let other = tcp6(
        GATEWAY_MAC,
        DIRECTOR_MAC,
        (a6("2001:db8:cafe:3::99"), a6("2001:db8::20")),
        5555,
        443,
        TCP_SYN,
        1,
        0,
        b"",
    );
    for _ in 0..2 {
        // (whichever server rr would pick next)
        let out = one_tx(feed(&mut backup, T0 + 50 * MS, &other));
        assert_eq!(ipv6_dst(&out).map(std::net::IpAddr::V6), Some(server));
    }
}

#[test]
fn ipv6_updates_and_replacements_follow_ip_vs_proc_conn() {
    let (_, mut backup, _, _, msgs) = synced6("2001:db8::10", 80, 4);
    let mut e = decode(&msgs[0], 0).conns.remove(0);
    let id = backup.conns.in_get6(6, &client6(4), 40004, &a6("2001:db8::10"), 80).unwrap();
    // The same entry again, inactive now: an update of the same connection.
    e.flags |= cf::INACTIVE as u32;
    assert_eq!(proc_conn(&mut backup, &e), Installed::Updated(id));
    assert_ne!(backup.conns.get(id).flags & cf::INACTIVE, 0);
    // An inactive entry naming the other server: the expiry of a
    // connection already replaced here, ignored.
    let other = if e.daddr == std::net::IpAddr::V6(a6("2001:db8:1::1")) { "2001:db8:1::2" } else { "2001:db8:1::1" };
    let mut r = e.clone();
    r.daddr = a6(other).into();
    assert_eq!(proc_conn(&mut backup, &r), Installed::Ignored);
    // Active: the old one expires now and a new one goes to the other server.
    r.flags &= !(cf::INACTIVE as u32);
    let Installed::Created(nid) = proc_conn(&mut backup, &r) else { panic!("replaced") };
    assert_eq!(backup.conns.addrs(nid).daddr, std::net::IpAddr::V6(a6(other)));
    // A server the backup does not have: installed unbound.
    let mut u = e.clone();
    (u.caddr, u.daddr) = (client6(5).into(), a6("2001:db8:1::77").into());
    let Installed::Created(uid) = proc_conn(&mut backup, &u) else { panic!() };
    assert_eq!(backup.conns.get(uid).dest, NIL);
}
