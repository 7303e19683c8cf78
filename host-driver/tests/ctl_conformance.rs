//! Control-plane conformance against the real ipvsadm 1.31 and keepalived
//! 2.2.7 on Linux 6.1, without a VM: `tests/fixtures/kernel/ctl/` holds a
//! generated command sequence and what the real ipvsadm printed and
//! returned for each command, recorded once in the VM
//! (`scripts/vm/ctl-record.sh`; README there). Here the same sequence runs,
//! in order, through `lvsnic` (invoked as `ipvsadm`) against a daemon on the
//! model backend, and stdout, stderr and exit status must be identical byte
//! for byte, except for the deliberate differences listed in [`EXPLAINED`]
//! (docs/conformance.md). Likewise `lvsnic keepalived FILE` must print what
//! the kernel's `ipvsadm -S -n` showed once the real keepalived had loaded
//! FILE.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::director_toml;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixdir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernel/ctl")
}

/// One command of the recorded transcript.
#[derive(Debug)]
struct Recorded {
    line: String,
    exit: i32,
    stdout: String,
    stderr: String,
}

/// Reads `transcript.txt` (format: scripts/vm/ctl.sh).
fn transcript(text: &[u8]) -> Vec<Recorded> {
    let mut pos = 0;
    let line = |pos: &mut usize| -> String {
        let end = text[*pos..]
            .iter()
            .position(|&b| b == b'\n')
            .expect("transcript: unterminated line")
            + *pos;
        let s = String::from_utf8(text[*pos..end].to_vec()).unwrap();
        *pos = end + 1;
        s
    };
    let block = |pos: &mut usize, head: &str, name: &str| -> String {
        let n: usize = head
            .strip_prefix(name)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("transcript: expected '{name} N', got {head:?}"));
        let s = String::from_utf8(text[*pos..*pos + n].to_vec()).unwrap();
        assert_eq!(
            text[*pos + n],
            b'\n',
            "transcript: no newline after a {name} block"
        );
        *pos += n + 1;
        s
    };
    let mut out = Vec::new();
    while pos < text.len() {
        let cmd = line(&mut pos);
        let cmd = cmd
            .strip_prefix("cmd ")
            .unwrap_or_else(|| panic!("transcript: expected 'cmd', got {cmd:?}"))
            .to_string();
        let exit = line(&mut pos);
        let exit = exit
            .strip_prefix("exit ")
            .and_then(|v| v.parse().ok())
            .expect("transcript: exit");
        let h = line(&mut pos);
        let stdout = block(&mut pos, &h, "stdout ");
        let h = line(&mut pos);
        let stderr = block(&mut pos, &h, "stderr ");
        out.push(Recorded {
            line: cmd,
            exit,
            stdout,
            stderr,
        });
    }
    out
}

/// How lvsnic deliberately answers a command differently.
#[derive(Clone, Copy, Debug)]
enum Deliberate {
    /// The same output but for its first line (the version line), same status.
    VersionLine,
    /// lvsnic refuses what the kernel accepts or refuses for another
    /// reason: status 255, one line on stderr naming the cause, no stdout.
    Refused(&'static str),
    /// lvsnic accepts what the kernel refuses; the rules are put back
    /// afterwards by the commands given.
    Accepted(&'static [&'static str]),
    /// The same lines in another order, same status and stderr.
    Order,
    /// Numeric where ipvsadm prints names: lvsnic's answer is its own
    /// answer to the same command with `-n`.
    Numeric,
}

/// Deliberate differences (docs/conformance.md): the command line, why, and
/// how lvsnic answers instead.
const EXPLAINED: &[(&str, &str, Deliberate)] = &[
    ("-v", VERSION, Deliberate::VersionLine),
    ("--version", VERSION, Deliberate::VersionLine),
    ("-h", VERSION, Deliberate::VersionLine),
    ("-A -t 10.1.0.14:80 -s twos", TWOS, Deliberate::Accepted(&["-D -t 10.1.0.14:80"])),
    ("-A -t 10.1.1.10:80 -s none", NONE, Deliberate::Refused("Scheduler or persistence engine not found")),
    ("-D -t 10.1.1.10:80", NONE, Deliberate::Refused("No such service")),
    ("-A -f 1 -s rr", FWMARK, Deliberate::Refused("fwmark services (-f) are not supported")),
    ("-D -f 1", FWMARK, Deliberate::Refused("No such service")),
    ("-a -t 10.1.3.1:80 -r 192.168.21.10:80 -i --tun-type gue --tun-port 6080", TUNNEL, Deliberate::Refused(TUN_MSG)),
    ("-a -t 10.1.3.1:80 -r 192.168.21.11:80 -i --tun-type gue --tun-port 6080 --tun-nocsum", TUNNEL, Deliberate::Refused(TUN_MSG)),
    ("-a -t 10.1.3.1:80 -r 192.168.21.12:80 -i --tun-type gre --tun-csum", TUNNEL, Deliberate::Refused(TUN_MSG)),
    ("-d -t 10.1.3.1:80 -r 192.168.21.10:80", TUNNEL, Deliberate::Refused("No such destination")),
    ("-d -t 10.1.3.1:80 -r 192.168.21.11:80", TUNNEL, Deliberate::Refused("No such destination")),
    ("-d -t 10.1.3.1:80 -r 192.168.21.12:80", TUNNEL, Deliberate::Refused("No such destination")),
    ("-A -u 10.1.3.2:5060 -s rr -p 60 --pe sip", PE, Deliberate::Refused(PE_MSG)),
    ("-A -u 10.1.3.3:5060 -s rr --pe sip", PE, Deliberate::Refused(PE_MSG)),
    ("-D -u 10.1.3.2:5060", PE, Deliberate::Refused("No such service")),
    ("-D -u 10.1.3.3:5060", PE, Deliberate::Refused("No such service")),
    ("-L -n --nosort", NOSORT, Deliberate::Order),
    ("-S", NAMES, Deliberate::Numeric),
];

const VERSION: &str =
    "lvsnic's version line names lvsnic and its version (the rest of -h is ipvsadm's)";
const TWOS: &str = "twos: lvsnic models mainline, Debian's 6.1 has no ip_vs_twos (divergence #7)";
const NONE: &str = "-s none (a service that schedules nothing) is refused by lvsnic";
const TUNNEL: &str = "GUE and GRE tunnels are refused: the card encapsulates IPIP only";
const TUN_MSG: &str = "only ipip tunnels are supported";
const PE: &str = "persistence engines (--pe sip) are refused: not modelled";
const PE_MSG: &str = "persistence engines (--pe) are not supported";
const NOSORT: &str = "--nosort lists in hash-table order; the kernel's service hash mixes in the address of its netns_ipvs (ip_vs_svc_hashkey), so no fixed order can match it";
const NAMES: &str = "lvsnic does no name lookups: without -n it prints numbers (ipvsadm prints /etc/services names)";
const FWMARK: &str = "fwmark services are refused: no packet marks reach the card";

/// Whether lvsnic's answer `r` to `k` is the deliberate difference `how`
/// (`numeric`: lvsnic's answer to the same command with `-n`).
fn deliberate(k: &Recorded, r: &Ran, how: Deliberate, numeric: &Ran) -> bool {
    let rest = |s: &str| s.split_once('\n').map(|x| x.1.to_string());
    match how {
        Deliberate::VersionLine => {
            r.code == k.exit
                && r.stderr == k.stderr
                && r.stdout != k.stdout
                && rest(&r.stdout) == rest(&k.stdout)
        }
        Deliberate::Refused(msg) => {
            r.code == 255
                && r.stdout.is_empty()
                && r.stderr.starts_with(msg)
                && r.stderr.lines().count() == 1
        }
        Deliberate::Accepted(_) => {
            k.exit != 0 && r.code == 0 && r.stdout.is_empty() && r.stderr.is_empty()
        }
        Deliberate::Order => {
            let sorted = |s: &str| {
                let mut v: Vec<&str> = s.lines().collect();
                v.sort_unstable();
                v.join("\n")
            };
            r.code == k.exit && r.stderr == k.stderr && sorted(&r.stdout) == sorted(&k.stdout)
        }
        Deliberate::Numeric => {
            r == numeric && r.code == k.exit && r.stdout.lines().count() == k.stdout.lines().count()
        }
    }
}

/// The test network's director, with a neighbour entry (lvsnic needs each
/// real server's MAC; the kernel needs none) for every real server address
/// of the sequence: 192.168.20.1-30, 192.168.21.1-30, 192.168.30.1-10.
fn director() -> String {
    let mut s = director_toml();
    for (net, n) in [(20, 30), (21, 30), (30, 10)] {
        for h in 1..=n {
            s.push_str(&format!(
                "\"192.168.{net}.{h}\" = \"02:00:00:{net:02x}:00:{h:02x}\"\n"
            ));
        }
    }
    s
}

fn split(line: &str) -> (Vec<&str>, Option<String>) {
    let mut words: Vec<&str> = line.split(' ').collect();
    let mut stdin = None;
    if let Some(last) = words.last().and_then(|w| w.strip_prefix('<')) {
        stdin = Some(std::fs::read_to_string(fixdir().join(last)).unwrap());
        words.pop();
    }
    (words, stdin)
}

#[test]
fn ipvsadm_sequence_matches_the_kernel() {
    let fix = fixdir();
    let recorded = transcript(&std::fs::read(fix.join("transcript.txt")).unwrap());
    // The transcript is of exactly the committed sequence.
    let seq = std::fs::read_to_string(fix.join("sequence.txt")).unwrap();
    let lines: Vec<&str> = seq
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        lines.len(),
        recorded.len(),
        "transcript.txt is not of sequence.txt: re-record (README)"
    );
    assert!(lines.len() > 150, "sequence too short");

    let dir = tmpdir("ctl-conformance");
    let d = Daemon::start(&dir, &director(), &[]);

    let mut same = 0;
    let mut explained = 0;
    let mut diffs = Vec::new();
    for (seq_line, k) in lines.iter().zip(&recorded) {
        assert_eq!(*seq_line, k.line, "transcript.txt is not of sequence.txt");
        let (words, stdin) = split(&k.line);
        let r = lvsnic_as("ipvsadm", &d.sock, &words, stdin.as_deref());
        let equal = r.code == k.exit && r.stdout == k.stdout && r.stderr == k.stderr;
        if let Some(&(_, why, how)) = EXPLAINED.iter().find(|e| e.0 == k.line) {
            assert!(!equal, "`{}` is listed as a deliberate difference ({why}) but lvsnic now agrees: remove it", k.line);
            let numeric = match how {
                Deliberate::Numeric => lvsnic_as("ipvsadm", &d.sock, &[&words[..], &["-n"]].concat(), None),
                _ => r.clone(),
            };
            assert!(
                deliberate(k, &r, how, &numeric),
                "`{}` ({why}): lvsnic answered otherwise than listed: {r:?}",
                k.line
            );
            explained += 1;
            let resync: &[&str] = if let Deliberate::Accepted(c) = how {
                c
            } else {
                &[]
            };
            for c in resync {
                let (w, _) = split(c);
                let rr = lvsnic_as("ipvsadm", &d.sock, &w, None);
                assert_eq!(rr.code, 0, "resync `{c}` after `{}`: {rr:?}", k.line);
            }
            continue;
        }
        if equal {
            same += 1;
        } else {
            diffs.push(format!(
                "`ipvsadm {}`\n  kernel: exit {} stdout {:?} stderr {:?}\n  lvsnic: exit {} stdout {:?} stderr {:?}",
                k.line, k.exit, k.stdout, k.stderr, r.code, r.stdout, r.stderr
            ));
        }
    }
    eprintln!(
        "ctl conformance: {} commands, {same} identical, {explained} explained, {} differing",
        recorded.len(),
        diffs.len()
    );
    assert!(
        diffs.is_empty(),
        "{} of {} commands differ from the kernel's ipvsadm:\n{}",
        diffs.len(),
        recorded.len(),
        diffs.join("\n")
    );
    assert_eq!(
        explained,
        EXPLAINED.len(),
        "an EXPLAINED entry matches no command of the sequence"
    );
}

#[test]
fn keepalived_conversion_matches_the_kernel() {
    let dir = fixdir().join("keepalived");
    let mut confs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    confs.sort();
    assert!(confs.len() >= 4, "keepalived fixtures missing");
    let mut diffs = Vec::new();
    for conf in &confs {
        let saved = std::fs::read_to_string(conf.with_extension("saved"))
            .unwrap_or_else(|e| panic!("{}: {e}", conf.with_extension("saved").display()));
        assert!(
            !saved.is_empty(),
            "{}: keepalived loaded nothing in the VM",
            conf.display()
        );
        let o = Command::new(LVSNIC)
            .arg("keepalived")
            .arg(conf)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}",
            conf.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let got = String::from_utf8(o.stdout).unwrap();
        if got != saved {
            diffs.push(format!(
                "{}:\n  kernel:\n{saved}  lvsnic:\n{got}",
                conf.display()
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "lvsnic keepalived differs from keepalived + ipvsadm -S -n:\n{}",
        diffs.join("\n")
    );
}
