//! `lvsnic replay` applies `--set tcp tcpfin udp` lines of RULES, as
//! `ipvsadm -R` does (each line is one ipvsadm call; `--set` reaches
//! `ip_vs_set_timeout`), after DIRECTOR.toml's `[timeouts]`.
//!
//! A NAT connection is established (SYN, ACK), then idles 7 s. With
//! `--set 5 0 0` in RULES its ESTABLISHED timeout is 5 s, so the next ACK
//! matches no connection and, not being a SYN, goes to the host; with
//! DIRECTOR.toml's 900 s it is forwarded.

use lvsnic::replay::{replay, Backend, ReplayArgs};
use lvsnic_model::pcap;

fn csum(data: &[u8], mut sum: u32) -> u16 {
    for c in data.chunks(2) {
        sum += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Client 198.18.0.9:40000 -> 10.0.0.100:80, from the gateway's MAC.
fn segment(flags: u8, seq: u32, ack: u32) -> Vec<u8> {
    let (src, dst) = ([198, 18, 0, 9], [10, 0, 0, 100]);
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0xfe, 8, 0];
    let mut ip = vec![0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0];
    ip.extend(src);
    ip.extend(dst);
    let c = csum(&ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut tcp = vec![0x9c, 0x40, 0, 80];
    tcp.extend(seq.to_be_bytes());
    tcp.extend(ack.to_be_bytes());
    tcp.extend([0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    let mut pseudo: Vec<u8> = src.iter().chain(dst.iter()).copied().collect();
    pseudo.extend([0, 6, 0, 20]);
    pseudo.extend(&tcp);
    let c = csum(&pseudo, 0);
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    f.extend(ip);
    f.extend(tcp);
    f
}

fn transmitted(rules: &str) -> usize {
    let dir = std::env::temp_dir().join(format!("lvsnic-rules-set-{}-{}", std::process::id(), rules.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let t0 = 1_700_000_000_000_000_000u64;
    let frames = [(t0, segment(0x02, 1, 0)), (t0 + 100_000_000, segment(0x10, 2, 1)), (t0 + 7_100_000_000, segment(0x10, 2, 1))];
    let input = dir.join("in.pcap");
    let recs = frames.iter().map(|(t, f)| pcap::PcapRecord { ts_ns: *t, orig_len: f.len() as u32, data: f.clone() });
    pcap::write_file(&input, pcap::Resolution::Nano, recs).unwrap();
    std::fs::write(dir.join("rules.txt"), rules).unwrap();
    let output = dir.join("out.pcap");
    let args = ReplayArgs {
        rules: dir.join("rules.txt"),
        director: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/director.toml"),
        input,
        output: output.clone(),
        host: None,
        stats: None,
        backend: Backend::Golden,
        list: false,
        width: 64,
        changes: None,
    };
    replay(&args).unwrap();
    let n = pcap::read_file(&output).unwrap().len();
    std::fs::remove_dir_all(&dir).unwrap();
    n
}

#[test]
fn set_lines_in_rules_change_the_timeouts() {
    let rules = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m\n";
    assert_eq!(transmitted(rules), 3, "900 s from DIRECTOR.toml: the late ACK is forwarded");
    assert_eq!(transmitted(&format!("--set 5 0 0\n{rules}")), 2, "5 s from --set: the connection expired");
}
