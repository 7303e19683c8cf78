//! Errors a person can act on (issue 19, item 7), through the binary: a
//! bad DIRECTOR.toml names line and column, paths are printed once, NUL
//! bytes in rules and control arguments are refused, an oversized `-R`
//! is refused by the client, a binary keepalived include is one short
//! error.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::director_toml;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::Command;

fn run(args: &[&str]) -> Ran {
    let o = Command::new(LVSNIC).args(args).output().unwrap();
    Ran {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

const RULES: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m\n";

#[test]
fn a_bad_director_toml_names_line_and_column_and_its_path_once() {
    let dir = tmpdir("err-toml");
    let rules = write(&dir, "rules", RULES);
    let input = dir.join("in.pcap");
    write_pcap(&input, &[]);
    let bad = write(&dir, "bad.toml", "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = 02:00\n");
    let b = bad.to_str().unwrap();
    let out = dir.join("out.pcap");
    let replay = |director: &str, input: &str| {
        run(&["replay", "--rules", rules.to_str().unwrap(), "--director", director, "--input", input, "--output", out.to_str().unwrap()])
    };
    let want = format!(
        "lvsnic: {b}: line 4, column 15: gateway_mac: expected a MAC address in quotes, e.g. \"02:00:00:00:00:01\" \
         (without quotes TOML reads it as a time)\n"
    );
    let r = replay(b, input.to_str().unwrap());
    assert_eq!((r.code, r.stderr.as_str()), (1, want.as_str()));
    let r = run(&["daemon", "--backend", "model", "--director", b, "--socket", dir.join("s.sock").to_str().unwrap()]);
    assert_eq!((r.code, r.stderr.as_str()), (1, want.as_str()));
    // A broadcast director MAC: refused with key and line.
    let bcast = write(&dir, "bcast.toml", &director_toml().replace("02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff"));
    let r = replay(bcast.to_str().unwrap(), input.to_str().unwrap());
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains(": [director] mac: ff:ff:ff:ff:ff:ff is the broadcast address"), "{}", r.stderr);
    assert!(r.stderr.contains("bcast.toml: line "), "{}", r.stderr);
    // A capture that is missing or not a capture: its path once.
    let good = write(&dir, "director.toml", &director_toml());
    let missing = dir.join("missing.pcap");
    let r = replay(good.to_str().unwrap(), missing.to_str().unwrap());
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.matches("missing.pcap").count(), 1, "{}", r.stderr);
    assert!(r.stderr.starts_with(&format!("lvsnic: {}: I/O error at byte 0: ", missing.display())), "{}", r.stderr);
    let junk = write(&dir, "junk.pcap", "not a capture at all");
    let wire = format!("pcap:{},{}", junk.display(), dir.join("o.pcap").display());
    let r = run(&[
        "daemon",
        "--backend",
        "model",
        "--director",
        good.to_str().unwrap(),
        "--rules",
        rules.to_str().unwrap(),
        "--socket",
        dir.join("s.sock").to_str().unwrap(),
        "--wire",
        &wire,
    ]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, format!("lvsnic: {}: not a pcap file: bad magic 0x20746f6e at byte 0 (expected a1b2c3d4 or a1b23c4d in either byte order)\n", junk.display()));
}

#[test]
fn a_nul_byte_in_a_rules_file_is_refused_with_its_line() {
    let dir = tmpdir("err-nul-rules");
    let good = write(&dir, "director.toml", &director_toml());
    let rules = write(&dir, "rules", "-A -t 10.0.0.100:80 -s rr\n-A -t 10.0.0.101:80\0 -s sh\n");
    let r = run(&["daemon", "--backend", "model", "--director", good.to_str().unwrap(), "--rules", rules.to_str().unwrap(), "--socket", dir.join("s.sock").to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "lvsnic: {}: line 2: \"-A -t 10.0.0.101:80\\u{{0}} -s sh\": a NUL byte at column 20 (ipvsadm would silently cut the line there); remove it\n",
            rules.display()
        )
    );
}

/// One raw request on the control socket, its reply as JSON.
fn raw(sock: &std::path::Path, req: &str) -> serde_json::Value {
    let mut s = UnixStream::connect(sock).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(b"\n").unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn nul_bytes_in_control_arguments_and_oversized_requests_are_refused() {
    let dir = tmpdir("err-ctl");
    let d = Daemon::start(&dir, &director_toml(), &[]);
    // A NUL in an argument: ipvsadm's C string would make it 10.0.0.1:80.
    let r = raw(&d.sock, r#"{"op":"ipvsadm","argv":["-A","-t","10.0.0.1:80\u0000:99","-s","rr"]}"#);
    assert_eq!(r["exit"], 2);
    assert_eq!(
        r["stderr"],
        "lvsnic: argument 3 \"10.0.0.1:80\\0:99\" has a NUL byte at column 12 (ipvsadm would silently cut it there); nothing was changed\n"
    );
    // ... and in a `-R` line.
    let r = lvsnic_at(&d.sock, &["-R"], Some("-A -t 10.0.0.2:80 -s rr\n-A -t 10.0.0.3:80\0 -s rr\n"));
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        format!("{LVSNIC}: -R input line 2 has a NUL byte at column 18 (ipvsadm would silently cut it there); nothing was changed\n")
    );
    assert_eq!(d.stdout(&["-S", "-n"]), "");
    // A 66 MiB `-R`: refused before sending, with its size and the limit.
    let big = "-A -t 10.0.0.1:80 -s rr\n".repeat((66 << 20) / 24 + 1);
    assert!(big.len() > 64 << 20);
    let r = lvsnic_at(&d.sock, &["-R"], Some(&big));
    assert_eq!(r.code, 2);
    let size = big.len() + r#"{"op":"ipvsadm","prog":"","argv":["-R"],"stdin":""}"#.len() + LVSNIC.len() + 1
        + big.matches('\n').count();
    assert_eq!(r.stderr, format!("{LVSNIC}: request too large ({size} bytes, limit {})\n", 64u64 << 20));
    // The daemon still answers, unchanged.
    assert_eq!(d.stdout(&["-S", "-n"]), "");
    d.stop();
}

#[test]
fn a_binary_keepalived_include_is_one_short_error() {
    let dir = tmpdir("err-ka");
    std::fs::write(dir.join("zeros.conf"), vec![0u8; 4 << 20]).unwrap();
    let conf = write(
        &dir,
        "keepalived.conf",
        &format!(
            "include zeros.conf\nvirtual_server 10.0.0.1 80 {{\n  lb_kind NAT\n  {} 1\n  real_server 10.1.0.1 80 {{\n  }}\n}}\n",
            "k\u{1}".repeat(5000)
        ),
    );
    let r = run(&["keepalived", conf.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    let zeros = dir.join("zeros.conf");
    let first = r.stderr.lines().find(|l| l.contains("zeros.conf")).unwrap();
    assert_eq!(
        first,
        format!(
            "{}:1: error: line longer than 65536 bytes, starting '{}…': not a keepalived configuration (the rest of the file is not read)",
            zeros.display(),
            "\\0".repeat(60)
        )
    );
    // An unknown keyword of 10,000 bytes is quoted as its first 60
    // characters (escaped) and its length.
    assert!(
        r.stderr.contains(&format!(
            "{}:4: warning: unknown keyword '{}… (10000 bytes)' in virtual_server 10.0.0.1 80",
            conf.display(),
            "k\\u{1}".repeat(30)
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.lines().all(|l| l.len() < 400), "{}", r.stderr);
    // The top-level file: its path once, no line 0.
    let nope = dir.join("nope.conf");
    let r = run(&["keepalived", nope.to_str().unwrap()]);
    assert!(r.stderr.starts_with(&format!("{}: error: cannot read: No such file", nope.display())), "{}", r.stderr);
}

/// First contact (issue 21, item 4): `lvsnic --help` shows the subcommands
/// beside ipvsadm's options (and exactly ipvsadm's usage when invoked as
/// `ipvsadm`); the daemon never picks a backend by itself; a TAP name that
/// does not exist is an error unless `--create-taps`; a subcommand's
/// `--socket` says what it is.
#[test]
fn help_lists_subcommands_no_silent_backend_no_silent_tap() {
    let r = run(&["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("--add-service     -A        add virtual service with options"), "{}", r.stdout);
    let subs = r.stdout.split_once("\nSubcommands (lvsnic SUBCOMMAND --help; man lvsnic-SUBCOMMAND):\n").map(|x| x.1).unwrap_or_else(|| panic!("{}", r.stdout));
    for name in ["daemon", "replay", "keepalived", "status", "drain", "reload", "vip", "checkers"] {
        assert!(subs.lines().any(|l| l.trim_start().starts_with(&format!("{name} "))), "{name} missing:\n{subs}");
    }
    assert!(!subs.contains("manpages"), "the packaging subcommand is hidden:\n{subs}");
    let ipvsadm = harness::lvsnic_as("ipvsadm", std::path::Path::new("/nonexistent.sock"), &["-h"], None);
    assert_eq!(ipvsadm.code, 0);
    assert!(!ipvsadm.stdout.contains("Subcommands"), "{}", ipvsadm.stdout);
    // Before the subcommands: ipvsadm's usage, line for line after the version line.
    let usage_part = r.stdout.split_once("\nSubcommands").unwrap().0.replace(LVSNIC, "ipvsadm");
    assert_eq!(usage_part.trim_end().split_once('\n').unwrap().1, ipvsadm.stdout.trim_end().split_once('\n').unwrap().1);

    let dir = tmpdir("first-contact");
    let toml = write(&dir, "director.toml", &director_toml());
    let sock = dir.join("s.sock");
    // No --backend: refused by name, nothing started.
    let r = run(&["daemon", "--director", toml.to_str().unwrap(), "--socket", sock.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--backend <BACKEND>"), "{}", r.stderr);
    assert!(!sock.exists());
    // A TAP that is not there is named, with what to do.
    let name = format!("lvno{}", std::process::id() % 100_000);
    let r = run(&["daemon", "--backend", "model", "--director", toml.to_str().unwrap(), "--socket", sock.to_str().unwrap(), "--wire", &format!("tap:{name}")]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.stderr,
        format!("lvsnic: TAP device {name}: no such network device (create it first: `ip tuntap add mode tap name {name}`; or let the daemon create it: --create-taps)\n")
    );
    let r = run(&["daemon", "--backend", "model", "--director", toml.to_str().unwrap(), "--socket", sock.to_str().unwrap(), "--host-tap", &name]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.starts_with(&format!("lvsnic: TAP device {name}: no such network device")), "{}", r.stderr);
    assert!(!std::path::Path::new("/sys/class/net").join(&name).exists());
    // --socket has help text everywhere.
    for sub in ["status", "reload", "drain", "checkers", "vip", "wire", "keepalived", "daemon"] {
        let r = run(&[sub, "--help"]);
        // The option's line and the next (clap puts long help there).
        let line = r.stdout.lines().skip_while(|l| !l.trim_start().starts_with("--socket")).take(2).collect::<Vec<_>>().join(" ");
        assert!(line.to_lowercase().contains("control socket"), "{sub}: {line:?}\n{}", r.stdout);
    }
}

#[test]
fn a_director_toml_without_a_usable_gateway_is_one_line_naming_the_keys() {
    let dir = tmpdir("err-gateway");
    let rules = write(&dir, "rules", RULES);
    let input = dir.join("in.pcap");
    write_pcap(&input, &[]);
    let out = dir.join("out.pcap");
    let sock = dir.join("s.sock");
    let replay = |director: &std::path::Path| {
        run(&["replay", "--rules", rules.to_str().unwrap(), "--director", director.to_str().unwrap(), "--input", input.to_str().unwrap(), "--output", out.to_str().unwrap()])
    };
    let daemon = |director: &std::path::Path| {
        run(&["daemon", "--backend", "model", "--director", director.to_str().unwrap(), "--socket", sock.to_str().unwrap()])
    };
    // Neither key: refused at load, everywhere.
    let neither = write(&dir, "neither.toml", &director_toml().replace("gateway_mac = \"02:00:00:00:00:fe\"\n", ""));
    let want = format!("lvsnic: {}: {}\n", neither.display(), lvsnic_model::config::MISSING_GATEWAY);
    assert_eq!((replay(&neither).code, replay(&neither).stderr), (1, want.clone()));
    assert_eq!((daemon(&neither).code, daemon(&neither).stderr), (1, want));
    // Only its address: replay learns nothing and says so.
    let addr = write(&dir, "addr.toml", &director_toml().replace("gateway_mac = \"02:00:00:00:00:fe\"", "gateway = \"10.0.0.254\""));
    let r = replay(&addr);
    assert_eq!((r.code, r.stderr), (1, format!("lvsnic: {}\n", lvsnic_model::config::NO_STATIC_GATEWAY)));
    // "fib" without the director's own stack to ask.
    let fib = write(&dir, "fib.toml", &director_toml().replace("gateway_mac = \"02:00:00:00:00:fe\"", "gateway = \"fib\""));
    let r = daemon(&fib);
    assert_eq!((r.code, r.stderr), (1, format!("lvsnic: {}: {}\n", fib.display(), lvsnic_model::config::FIB_NEEDS_HOST_TAP)));
}
