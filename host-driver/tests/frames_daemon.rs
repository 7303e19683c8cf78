//! The daemon survives any frame (issue 19, item 1): a pcap wire carrying
//! an empty frame, a runt and frames of 16,385, 20,000 and 65,535 bytes
//! does not stop it (today: "frame 1: 0 frames transmitted and 0 received
//! by the host" and exit); `lvsnic status` counts each by reason.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::*;
use lvsnic_model::wire::TCP_SYN;

#[test]
fn frames_daemon_counts_odd_frames_and_keeps_running() {
    let dir = tmpdir("frames-odd");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n");
    let syn = |n: u16, len: usize| {
        let c: std::net::Ipv4Addr = "198.51.100.9".parse().unwrap();
        let mut f = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), n, 80, TCP_SYN, 1, 0, b"");
        f.resize(len.max(f.len()), 0);
        f
    };
    let frames: Vec<(u64, Vec<u8>)> = [Vec::new(), vec![2u8; 7], syn(1001, 16_385), syn(1002, 20_000), vec![0xff; 65_535], syn(1003, 0)]
        .into_iter()
        .enumerate()
        .map(|(i, f)| (T0 + i as u64 * 1000, f))
        .collect();
    let inp = dir.join("in.pcap");
    write_pcap(&inp, &frames);
    let w = format!("pcap:{},{}", inp.display(), dir.join("out.pcap").display());
    let d = Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap(), "--wire", &w]);
    let t0 = std::time::Instant::now();
    let st = loop {
        let st = d.status();
        if st["pcap_frames_left"] == 0 {
            break st;
        }
        assert!(t0.elapsed().as_secs() < 30, "capture not done: {st}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let drops = ["exception_loop", "dropped_on_receive"];
    let at = |k: &str| counter(&st, &[drops[0], drops[1], k]);
    assert_eq!((at("empty"), at("runt"), at("oversize"), at("ring")), (1, 1, 3, 0), "{st}");
    assert_eq!(counter(&st, &["exception_loop", "frames"]), 6);
    // The last SYN still went through: one connection.
    assert_eq!(counter(&st, &["director", "connections", "created"]), 1, "{st}");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

/// `--wire pcap:IN,OUT` with OUT the same file as IN (or as the rules, or
/// HOST the same as OUT) is refused before anything is opened for
/// writing: the input capture is left as it was (it used to be truncated
/// to an empty capture by the daemon's start).
#[test]
fn daemon_refuses_a_pcap_wire_output_that_is_an_input() {
    let dir = tmpdir("frames-overlap");
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n");
    let toml = write(&dir, "director.toml", &director_toml());
    let inp = dir.join("in.pcap");
    let c: std::net::Ipv4Addr = "198.51.100.9".parse().unwrap();
    write_pcap(&inp, &[(T0, tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1000, 80, TCP_SYN, 1, 0, b""))]);
    let before = std::fs::read(&inp).unwrap();
    let (i, r, o) = (inp.display().to_string(), rules.display().to_string(), dir.join("out.pcap").display().to_string());
    for (wire, names) in [
        (format!("pcap:{i},{i}"), ["--wire pcap OUT", "--wire pcap IN"]),
        (format!("pcap:{i},{r}"), ["--wire pcap OUT", "--rules"]),
        (format!("pcap:{i},{o},{o}"), ["--wire pcap OUT", "--wire pcap HOST"]),
    ] {
        let sock = dir.join("s.sock");
        let ran = lvsnic_at(
            &sock,
            &["daemon", "--backend", "model", "--director", toml.to_str().unwrap(), "--socket", sock.to_str().unwrap(), "--rules", &r, "--wire", &wire],
            None,
        );
        assert_eq!(ran.code, 1, "{wire}: {ran:?}");
        assert!(names.iter().all(|n| ran.stderr.contains(n)), "{wire}: {}", ran.stderr);
        assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
        assert_eq!(std::fs::read(&inp).unwrap(), before, "{wire}: the input capture changed");
        assert_eq!(std::fs::read_to_string(&rules).unwrap(), "-A -t 10.0.0.100:80 -s rr\n");
        assert!(!sock.exists());
    }
}
