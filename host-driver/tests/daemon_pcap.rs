//! The daemon over a pcap wire: rule changes issued with `lvsnic -a/-e/-d`
//! in the middle of a capture (`--pace step`), compared with frames built
//! independently (`lvsnic_fixtures::expect`); listings after traffic byte for
//! byte; the new-connection rate limit under a SYN flood; a whole capture
//! through the daemon equals `lvsnic replay`; a gateway known only by its
//! address (`[director] gateway`) learned from its ARP answer, the NAT
//! reply held until then and sent byte-exact.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_model::pcap;
use lvsnic_model::wire::{TCP_ACK, TCP_PSH, TCP_SYN};
use lvsnic_fixtures::*;
use std::net::Ipv4Addr;

const MS: u64 = 1_000_000;



/// Real server `r` back to client `n` (NAT reply).
fn to_client(r: u8, n: u8, flags: u8) -> Vec<u8> {
    tcp(rs_mac(r), DIRECTOR_MAC, Ip::new(rs(r), client(n)), 80, 1000 * n as u16, flags, 7, 2, b"")
}

fn ip_len(f: &[u8]) -> u64 {
    u16::from_be_bytes([f[16], f[17]]) as u64
}

/// `"%-33s"` then five `"%9llu"`.
fn stats_line(name: &str, v: [u64; 5]) -> String {
    let mut s = format!("{name:<33}");
    for x in v {
        s.push_str(&format!("{x:>9}"));
    }
    s + "\n"
}


#[test]
fn rule_changes_mid_capture_keep_established_connections_and_deleted_servers_leave_the_hardware() {
    let dir = tmpdir("midcapture");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let data = |n: u8, seq: u32| from_client(n, TCP_ACK | TCP_PSH, seq, b"GET / HTTP/1.1\r\n\r\n");
    let frames: Vec<(u64, Vec<u8>)> = vec![
        (T0, from_client(1, TCP_SYN, 100, b"")),
        (T0 + MS, to_client(1, 1, TCP_SYN | TCP_ACK)),
        (T0 + 2 * MS, from_client(1, TCP_ACK, 101, b"")),
        (T0 + 3 * MS, data(1, 101)),
        // -- -a rs2, -e rs1 -w 0
        (T0 + 4 * MS, from_client(2, TCP_SYN, 200, b"")),
        (T0 + 5 * MS, data(1, 119)),
        (T0 + 6 * MS, to_client(2, 2, TCP_SYN | TCP_ACK)),
        (T0 + 7 * MS, from_client(2, TCP_ACK, 201, b"")),
        // -- -d rs1
        (T0 + 8 * MS, data(1, 137)),
        (T0 + 9 * MS, data(2, 201)),
        (T0 + 10 * MS, from_client(3, TCP_SYN, 300, b"")),
    ];
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d =
        Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step"]);
    let f = |i: usize| frames[i].1.clone();

    assert_eq!(wire(&d, &["--frames", "4"]), "4 frames run, 7 left\n");
    d.ok(&["-a", "-t", "10.0.0.100:80", "-r", "192.168.10.2:80", "-m", "-w", "1"]);
    d.ok(&["-e", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80", "-m", "-w", "0"]);
    assert_eq!(wire(&d, &["--until-ns", &(T0 + 7 * MS).to_string()]), "4 frames run, 3 left\n");
    let st = d.status();
    assert_eq!(st["offload"]["connections"], 2, "{st}");
    // Deleting rs1 removes its flows from the data plane.
    d.ok(&["-d", "-t", "10.0.0.100:80", "-r", "192.168.10.1:80"]);
    assert_eq!(d.status()["offload"]["connections"], 1);
    assert_eq!(wire(&d, &[]), "3 frames run, 0 left\n");

    let expected = vec![
        expect::nat_request(&f(0), rs(1), 80, rs_mac(1)),
        expect::nat_reply(&f(1), VIP, 80),
        expect::nat_request(&f(2), rs(1), 80, rs_mac(1)),
        expect::nat_request(&f(3), rs(1), 80, rs_mac(1)),
        // New connection: rs1 is quiescent, rs2 takes it.
        expect::nat_request(&f(4), rs(2), 80, rs_mac(2)),
        // Established connection stays on rs1.
        expect::nat_request(&f(5), rs(1), 80, rs_mac(1)),
        expect::nat_reply(&f(6), VIP, 80),
        expect::nat_request(&f(7), rs(2), 80, rs_mac(2)),
        // rs1 deleted: its connection's packet is dropped (not forwarded by the hardware).
        expect::nat_request(&f(9), rs(2), 80, rs_mac(2)),
        expect::nat_request(&f(10), rs(2), 80, rs_mac(2)),
    ];
    let got: Vec<Vec<u8>> = pcap::read_file(&out).unwrap().into_iter().map(|r| r.data).collect();
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "frame {i}");
    }

    // Listings after the traffic.
    let head = "IP Virtual Server version 1.2.1 (size=4096)\n";
    assert_eq!(
        d.run(&["-L", "-n"]).stdout,
        format!(
            "{head}Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\nTCP  10.0.0.100:80 rr\n  -> {:<28} {:<7} {:<6} {:<10} {:<10}\n",
            "192.168.10.2:80", "Masq", 1, 2, 0
        )
    );
    // Client packets counted: 1's SYN, ACK, two data (the third was dropped), 2's SYN, ACK, data, 3's SYN.
    let inb: u64 = [0, 2, 3, 4, 5, 7, 9, 10].iter().map(|&i| ip_len(&frames[i].1)).sum();
    let outb = ip_len(&frames[1].1) + ip_len(&frames[6].1);
    let rs2_in: u64 = [4, 7, 9, 10].iter().map(|&i| ip_len(&frames[i].1)).sum();
    let stats = format!(
        "{head}{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n  -> RemoteAddress:Port\n{}{}",
        "Prot LocalAddress:Port",
        "Conns",
        "InPkts",
        "OutPkts",
        "InBytes",
        "OutBytes",
        stats_line("TCP  10.0.0.100:80", [3, 8, 2, inb, outb]),
        stats_line("  -> 192.168.10.2:80", [2, 4, 1, rs2_in, ip_len(&frames[6].1)]),
    );
    assert_eq!(d.run(&["-L", "-n", "--stats"]).stdout, stats);
    // The connection table: model time is the last frame's (T0 + 10 ms);
    // ESTABLISHED lasts 900 s, SYN_RECV 60 s.
    let row = |exp: &str, state: &str, c: u8, r: u8| {
        let (src, dst) = (format!("{}:{}", client(c), 1000 * c as u16), format!("{}:80", rs(r)));
        format!("{:<3} {:<6} {:<11} {:<18} {:<18} {}\n", "TCP", exp, state, src, "10.0.0.100:80", dst)
    };
    assert_eq!(
        d.run(&["-L", "-n", "-c"]).stdout,
        format!(
            "IPVS connection entries\npro expire state       source             virtual            destination\n{}{}{}",
            row("14:59", "ESTABLISHED", 1, 1),
            row("14:59", "ESTABLISHED", 2, 2),
            row("01:00", "SYN_RECV", 3, 2)
        )
    );
    // -Z zeroes the counters.
    d.ok(&["-Z"]);
    assert_eq!(
        d.run(&["-L", "-n", "--stats", "--exact"]).stdout,
        format!(
            "{head}{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n  -> RemoteAddress:Port\n{}{}",
            "Prot LocalAddress:Port",
            "Conns",
            "InPkts",
            "OutPkts",
            "InBytes",
            "OutBytes",
            stats_line("TCP  10.0.0.100:80", [0; 5]),
            stats_line("  -> 192.168.10.2:80", [0; 5])
        )
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

#[test]
fn syn_flood_is_limited_per_service_and_established_traffic_flows() {
    let dir = tmpdir("synflood");
    let rules = write(
        &dir,
        "rules",
        "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-A -t 10.0.0.101:80 -s rr\n-a -t 10.0.0.101:80 -r 192.168.10.2:80 -m -w 1\n",
    );
    let cfg = director_toml() + "\n[limits]\nnew_conn_per_sec = 2\nburst = 2\n";
    let vip2 = Ipv4Addr::new(10, 0, 0, 101);
    let mut frames: Vec<(u64, Vec<u8>)> = vec![
        (T0, from_client(1, TCP_SYN, 100, b"")),
        (T0 + MS, to_client(1, 1, TCP_SYN | TCP_ACK)),
        (T0 + 2 * MS, from_client(1, TCP_ACK, 101, b"")),
    ];
    let mut est = Vec::new();
    for i in 0..20u32 {
        let t = T0 + 3 * MS + i as u64 * 1000;
        let flood = tcp(
            GATEWAY_MAC,
            DIRECTOR_MAC,
            Ip::new(Ipv4Addr::new(203, 0, 113, i as u8 + 1), VIP),
            40000,
            80,
            TCP_SYN,
            i,
            0,
            b"",
        );
        frames.push((t, flood));
        let e = from_client(1, TCP_ACK | TCP_PSH, 101 + 10 * i, b"0123456789");
        est.push(frames.len());
        frames.push((t + 500, e));
    }
    // Another service is not affected.
    let other = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(9), vip2), 9000, 80, TCP_SYN, 1, 0, b"");
    frames.push((T0 + 4 * MS, other.clone()));
    // A second later the bucket has refilled.
    let late = from_client(5, TCP_SYN, 500, b"");
    frames.push((T0 + 1_010 * MS, late.clone()));
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d = Daemon::start(&dir, &cfg, &["--rules", rules.to_str().unwrap(), "--wire", &w, "--pace", "step"]);
    wire(&d, &[]);
    let got: Vec<Vec<u8>> = pcap::read_file(&out).unwrap().into_iter().map(|r| r.data).collect();
    let mut expected = vec![
        expect::nat_request(&frames[0].1, rs(1), 80, rs_mac(1)),
        expect::nat_reply(&frames[1].1, VIP, 80),
        expect::nat_request(&frames[2].1, rs(1), 80, rs_mac(1)),
        // The first flood SYN takes the bucket's second token.
        expect::nat_request(&frames[3].1, rs(1), 80, rs_mac(1)),
    ];
    for &i in &est {
        expected.push(expect::nat_request(&frames[i].1, rs(1), 80, rs_mac(1)));
    }
    // Order in the capture: flood SYN 0, est 0, est 1.., the other service, the late SYN.
    let mut order: Vec<Vec<u8>> = expected.clone();
    order.push(expect::nat_request(&other, rs(2), 80, rs_mac(2)));
    order.push(expect::nat_request(&late, rs(1), 80, rs_mac(1)));
    assert_eq!(got.len(), order.len(), "19 flood SYNs dropped, everything else transmitted");
    for (i, (g, e)) in got.iter().zip(&order).enumerate() {
        assert_eq!(g, e, "frame {i}");
    }
    let st = d.status();
    assert_eq!(st["limits"]["limited"], 19, "{st}");
    assert_eq!(st["exception_loop"]["rate_limited"], 19);
    assert_eq!(st["limits"]["services"]["TCP 10.0.0.100:80"]["limited"], 19);
    assert_eq!(st["limits"]["services"]["TCP 10.0.0.100:80"]["admitted"], 3);
    assert_eq!(st["limits"]["services"]["TCP 10.0.0.101:80"]["limited"], 0);
    // The limited SYNs never reached the golden model: 4 connections.
    assert_eq!(st["director"]["connections"]["created"], 4);
}

#[test]
fn a_capture_through_the_daemon_equals_replay() {
    let dir = tmpdir("asap");
    let rules = write(
        &dir,
        "rules",
        "-A -t 10.0.0.100:80 -s wlc\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n-a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 2\n-A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.3:53 -g -w 1\n",
    );
    let dcfg = write(&dir, "d.toml", &director_toml());
    let inp = dir.join("in.pcap");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(LVSNIC).args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (r, c, i) = (rules.to_str().unwrap(), dcfg.to_str().unwrap(), inp.to_str().unwrap());
    run(&["traffic", "--rules", r, "--director", c, "--output", i, "--seed", "7", "--connections", "60"]);
    let rep = dir.join("replay.pcap");
    let summary =
        run(&["replay", "--rules", r, "--director", c, "--input", i, "--output", rep.to_str().unwrap(), "--list"]);
    let out = dir.join("out.pcap");
    let w = format!("pcap:{i},{}", out.display());
    let d = Daemon::start(&dir, &director_toml(), &["--rules", r, "--wire", &w]);
    let t0 = std::time::Instant::now();
    while d.status()["pcap_frames_left"] != 0 {
        assert!(t0.elapsed().as_secs() < 60);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let a: Vec<Vec<u8>> = pcap::read_file(&rep).unwrap().into_iter().map(|r| r.data).collect();
    let b: Vec<Vec<u8>> = pcap::read_file(&out).unwrap().into_iter().map(|r| r.data).collect();
    assert!(a.len() > 100);
    assert_eq!(a, b);
    // The replay's `-L -n --stats` + `-L -n` + `-L -n --rate` listing is
    // the daemon's (rates as the last estimation tick in the capture left them).
    let rates = d.run(&["-L", "-n", "--rate"]).stdout;
    let listing = d.run(&["-L", "-n", "--stats"]).stdout + &d.run(&["-L", "-n"]).stdout + &rates;
    assert!(summary.ends_with(&format!("\n{listing}\n")), "{summary}\n---\n{listing}");
}

#[test]
fn a_nat_reply_waits_on_the_wire_for_the_gateways_arp_answer_and_goes_byte_exact() {
    // `[director] gateway` without `gateway_mac`: the daemon ARPs for it
    // from the start, holds the SYN-ACK towards the client until the
    // gateway answers, then sends it exactly as a static gateway_mac would.
    let dir = tmpdir("gateway-learned");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let gw = Ipv4Addr::new(10, 0, 0, 254);
    let cfg = director_toml().replace("gateway_mac = \"02:00:00:00:00:fe\"", "gateway = \"10.0.0.254\"");
    assert!(cfg.contains("gateway = "));
    let mut answer = DIRECTOR_MAC.0.to_vec();
    answer.extend_from_slice(&GATEWAY_MAC.0);
    answer.extend_from_slice(&[8, 6, 0, 1, 8, 0, 6, 4, 0, 2]);
    answer.extend_from_slice(&GATEWAY_MAC.0);
    answer.extend_from_slice(&gw.octets());
    answer.extend_from_slice(&DIRECTOR_MAC.0);
    answer.extend_from_slice(&DIRECTOR_IP.octets());
    answer.resize(60, 0);
    let frames: Vec<(u64, Vec<u8>)> = vec![
        (T0, from_client(1, TCP_SYN, 100, b"")),
        (T0 + MS, to_client(1, 1, TCP_SYN | TCP_ACK)),
        (T0 + 2 * MS, answer),
        (T0 + 3 * MS, from_client(1, TCP_ACK, 101, b"")),
        (T0 + 4 * MS, to_client(1, 1, TCP_ACK)),
    ];
    let (inp, out) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{}", inp.display(), out.display());
    let d = Daemon::start(&dir, &cfg, &["--rules", rules.to_str().unwrap(), "--wire", &w]);
    let t0 = std::time::Instant::now();
    while d.status()["pcap_frames_left"] != 0 {
        assert!(t0.elapsed().as_secs() < 60);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let st = d.status();
    let got: Vec<Vec<u8>> = pcap::read_file(&out).unwrap().into_iter().map(|r| r.data).collect();
    let (arps, rest): (Vec<Vec<u8>>, Vec<Vec<u8>>) = got.into_iter().partition(|f| f[12..14] == [8, 6]);
    let f = |i: usize| frames[i].1.clone();
    let expected = vec![
        expect::nat_request(&f(0), rs(1), 80, rs_mac(1)),
        expect::nat_reply(&f(1), VIP, 80),
        expect::nat_request(&f(3), rs(1), 80, rs_mac(1)),
        expect::nat_reply(&f(4), VIP, 80),
    ];
    assert_eq!(rest.len(), expected.len(), "{st}");
    for (i, (g, e)) in rest.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "frame {i}");
    }
    // The gateway was asked for (a pcap wire may not carry the requests out).
    let request = lvsnic::neighbors::arp_request(DIRECTOR_MAC, DIRECTOR_IP, gw, None);
    assert!(arps.iter().all(|a| *a == request), "{arps:?}");
    let nb = &st["neighbors"];
    assert!(nb["arp_requests"].as_u64().unwrap() >= 1, "{nb}");
    let e = &nb["entries"]["10.0.0.254"];
    assert_eq!((e["gateway"].clone(), e["mac"].clone(), e["source"].clone()), (true.into(), GATEWAY_MAC.to_string().into(), "arp".into()), "{nb}");
    assert_eq!((nb["held"].clone(), nb["released"].clone(), nb["unresolved_drops"].clone()), (1.into(), 1.into(), 0.into()), "{nb}");
    assert_eq!(st["offload"]["connections"], 1, "offloaded once the gateway was known: {st}");
}
