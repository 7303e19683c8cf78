//! Bad input to every text and file parser gets an error, never a panic:
//! ipvsadm rule files and command lines built from plausible and broken
//! tokens, director configurations with lines changed, dropped or
//! truncated, and pcap files with bytes flipped or cut.

use lvsnic_model::config::DirectorConfig;
use lvsnic_model::pcap::{PcapReader, PcapWriter, Resolution};
use lvsnic_model::rules::ipvsadm::{parse_command, parse_rules};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "-A", "-E", "-D", "-C", "-R", "-S", "-a", "-e", "-d", "-L", "-l", "-Z", "--set", "-t", "-u", "-f", "-s", "-p", "-M", "-r",
    "-g", "-m", "-i", "-w", "-x", "-y", "-b", "-n", "-c", "--stats", "--rate", "--exact", "--timeout", "--pe", "--tun-type",
    "ipvsadm", "10.0.0.100:80", "10.0.0.100", "[::1]:80", "192.168.10.1:8080", "0.0.0.0:0", "255.255.255.255:65535",
    "10.0.0.1:99999", "1.2.3", ":80", "10.0.0.100:", "rr", "wrr", "lc", "wlc", "sh", "mh", "twos", "nosuch",
    "sh-fallback,sh-port", "mh-port,", ",", "0", "1", "65535", "65536", "-1", "4294967296", "360", "255.255.255.0",
    "/24", "#", "# comment", "", "\t", "x", "--", "-", "ipip", "gue", "sip", "999999999999999999999",
];

fn line() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(TOKENS), 0..10).prop_map(|t| t.join(" "))
}

const CONFIG: &str = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n\
[neighbors]\n\"192.168.10.1\" = \"02:00:00:00:10:01\"\n[timeouts]\ntcp = 900\ntcpfin = 120\nudp = 300\n\
[sysctl]\nexpire_nodest_conn = 0\nconn_reuse_mode = 1\npmtu_disc = 1\nsecure_tcp = 0\n";

const CONFIG_VALUES: &[&str] = &[
    "\"10.0.0.1\"", "\"10.0.0\"", "\"02:00:00:00:00:01\"", "\"02:00:00:00:00\"", "\"zz:00:00:00:00:01\"", "0", "67", "68",
    "65535", "65536", "-1", "1e9", "true", "\"\"", "[]", "{}", "18446744073709551616", "\"::1\"",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn rule_files_and_command_lines(lines in proptest::collection::vec(line(), 0..12)) {
        let _ = parse_rules(&lines.join("\n"));
        for l in &lines {
            let argv: Vec<&str> = l.split(' ').filter(|s| !s.is_empty()).collect();
            let _ = parse_command(&argv);
        }
    }

    #[test]
    fn director_configurations(
        edits in proptest::collection::vec((0usize..20, 0usize..3, proptest::sample::select(CONFIG_VALUES)), 0..6),
        cut in 0usize..400,
    ) {
        let mut lines: Vec<String> = CONFIG.lines().map(str::to_string).collect();
        for (i, how, v) in edits {
            let i = i % lines.len();
            match how {
                0 => {
                    // Replace the value of a `key = value` line.
                    if let Some((k, _)) = lines[i].split_once(" = ") {
                        lines[i] = format!("{k} = {v}");
                    }
                }
                1 => {
                    lines.remove(i);
                    if lines.is_empty() {
                        lines.push(String::new());
                    }
                }
                _ => lines.insert(i, lines[i].clone()),
            }
        }
        let text = lines.join("\n");
        let _ = DirectorConfig::parse(&text);
        let mut end = cut.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let _ = DirectorConfig::parse(&text[..end]);
    }

    #[test]
    fn pcap_files(flips in proptest::collection::vec((0usize..400, any::<u8>()), 0..8), cut in 0usize..400, nano in any::<bool>()) {
        let mut w = PcapWriter::new(Vec::new(), if nano { Resolution::Nano } else { Resolution::Micro }, 1, 65535).unwrap();
        for i in 0..4u8 {
            w.write_record(1_000_000_000 * u64::from(i), &vec![i; 60 + usize::from(i) * 10]).unwrap();
        }
        let mut bytes = w.into_inner();
        for (at, b) in flips {
            let n = bytes.len();
            bytes[at % n] ^= b;
        }
        bytes.truncate(cut.max(1).min(bytes.len()));
        if let Ok(r) = PcapReader::new(&bytes[..]) {
            // Every record is an Ok or an error; the iterator ends.
            let n = r.take(100).count();
            prop_assert!(n <= 100);
        }
    }
}
