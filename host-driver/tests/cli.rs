//! `lvsnic replay` end to end: pcap in, pcaps and JSON out, through the
//! binary, against independently built expected frames.

use lvsnic_model::pcap::{self, PcapRecord, Resolution};
use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
use lvsnic_fixtures::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lvsnic-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn lvsnic(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_lvsnic")).args(args).output().expect("run lvsnic");
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const RULES: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n";

#[test]
fn replay_writes_transmitted_and_host_frames_and_stats() {
    let dir = tmpdir("ok");
    let rules = write(&dir, "rules", RULES);
    let dcfg = write(&dir, "director.toml", &director_toml());
    let c: std::net::Ipv4Addr = "198.51.100.1".parse().unwrap();
    let syn = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 1234, 80, TCP_SYN, 1, 0, b"");
    let reply = tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), c), 80, 1234, TCP_SYN | TCP_ACK, 9, 2, b"");
    let ssh = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, DIRECTOR_IP), 1235, 22, TCP_SYN, 1, 0, b"");
    let runt = vec![0u8; 9];
    let input = vec![(T0, syn.clone()), (T0 + 1000, reply.clone()), (T0 + 2000, ssh.clone()), (T0 + 3000, runt.clone())];
    let inp = dir.join("in.pcap");
    pcap::write_file(&inp, Resolution::Micro, input.iter().map(|(t, f)| PcapRecord { ts_ns: *t, orig_len: f.len() as u32, data: f.clone() }))
        .unwrap();
    let (out, host, stats) = (dir.join("out.pcap"), dir.join("host.pcap"), dir.join("stats.json"));
    let (ok, stdout, stderr) = lvsnic(&[
        "replay", "--rules", &rules, "--director", &dcfg, "--input", inp.to_str().unwrap(), "--output", out.to_str().unwrap(),
        "--host", host.to_str().unwrap(), "--stats", stats.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "one summary line: {stdout}");
    // The 9-byte runt never reaches the director: dropped on receive, as
    // Linux drops a frame shorter than an Ethernet header.
    assert!(
        stdout.contains("4 frames read: 0 rate limited, 1 dropped on receive (1 runt), 3 frames in, 2 transmitted, 1 to host, 0 dropped"),
        "{stdout}"
    );
    let tx = pcap::read_file(&out).unwrap();
    assert_eq!(tx.len(), 2);
    assert_eq!(tx[0].data, expect::nat_request(&syn, rs(1), 80, rs_mac(1)));
    assert_eq!(tx[0].ts_ns, T0);
    assert_eq!(tx[1].data, expect::nat_reply(&reply, VIP, 80));
    assert_eq!(tx[1].ts_ns, T0 + 1000);
    let h = pcap::read_file(&host).unwrap();
    assert_eq!(h.iter().map(|r| r.data.clone()).collect::<Vec<_>>(), vec![ssh]);
    let j = std::fs::read_to_string(&stats).unwrap();
    for needle in ["\"service\": \"TCP 10.0.0.100:80\"", "\"conns\": 1", "\"inpkts\": 1", "\"outpkts\": 1", "\"runt\": 1", "\"frames_read\": 4", "\"local\": 1"] {
        assert!(j.contains(needle), "stats lacks {needle}: {j}");
    }
}

#[test]
fn clear_one_line_errors() {
    let dir = tmpdir("err");
    let dcfg = write(&dir, "director.toml", &director_toml());
    let inp = dir.join("in.pcap");
    pcap::write_file(&inp, Resolution::Micro, std::iter::empty::<PcapRecord>()).unwrap();
    let out = dir.join("out.pcap");
    let run = |rules: &str, director: &str, input: &str| {
        lvsnic(&["replay", "--rules", rules, "--director", director, "--input", input, "--output", out.to_str().unwrap()])
    };
    // A real server with no neighbor entry.
    let r = write(&dir, "r1", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.99.1:80 -m\n");
    let (ok, _, e) = run(&r, &dcfg, inp.to_str().unwrap());
    assert!(!ok);
    assert_eq!(e.lines().count(), 1);
    assert!(e.contains("192.168.99.1") && e.contains("[neighbors]"), "{e}");
    // A bad rules line names the line.
    let r = write(&dir, "r2", "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 2147483648\n");
    let (ok, _, e) = run(&r, &dcfg, inp.to_str().unwrap());
    assert!(!ok);
    assert!(e.contains("line 2") && e.contains("illegal weight specified"), "{e}");
    // Not a pcap.
    let r = write(&dir, "r3", RULES);
    let junk = write(&dir, "junk.pcap", "this is not a capture");
    let (ok, _, e) = run(&r, &dcfg, &junk);
    assert!(!ok);
    assert!(e.starts_with("lvsnic: ") && e.contains("junk.pcap"), "{e}");
    // A director config with an unknown key.
    let bad = write(&dir, "bad.toml", &(director_toml() + "\n[sysctl]\nno_such_knob = 1\n"));
    let (ok, _, e) = run(&r, &bad, inp.to_str().unwrap());
    assert!(!ok);
    assert!(e.contains("no_such_knob"), "{e}");
}
