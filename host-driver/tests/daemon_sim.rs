//! The whole director on the `sim` backend: `lvsnic daemon --backend sim`
//! (exception loop, DMA ring model, verilated RTL forwarding established
//! flows) over a pcap wire carrying generated traffic, with `ipvsadm`-syntax
//! rule changes sent through the CLI in the middle of the capture. Its
//! transmitted frames and final listings must equal the golden model's fed
//! the same frames with the same changes at the same points.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_model::director::{Action, Director};
use lvsnic_model::pcap;
use lvsnic_model::rules::ipvsadm::{format_list, parse_command, parse_rules, Command, ListOptions};
use lvsnic_fixtures::*;

const RULES: &str = "\
-A -t 10.0.0.100:80 -s wlc
-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 3
-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m -w 1
-A -t 10.0.0.100:443 -s sh -p 120
-a -t 10.0.0.100:443 -r 192.168.10.3:443 -g -w 1
-a -t 10.0.0.100:443 -r 192.168.10.4:443 -i -w 2
-A -u 10.0.0.101:53 -s rr
-a -u 10.0.0.101:53 -r 192.168.10.5:53 -m -w 1
-a -u 10.0.0.101:53 -r 192.168.10.6:53 -g -w 1
";

/// `(frame index, ipvsadm arguments)`, applied before that frame.
fn changes(n: usize) -> Vec<(usize, &'static str)> {
    vec![
        (n / 5, "-a -t 10.0.0.100:80 -r 192.168.10.7:8080 -m -w 2"),
        (n * 2 / 5, "-e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 0"),
        (n / 2, "-d -u 10.0.0.101:53 -r 192.168.10.6:53"),
        (n * 3 / 5, "-D -t 10.0.0.100:443"),
        (n * 7 / 10, "-A -t 10.0.0.100:443 -s rr"),
        (n * 7 / 10, "-a -t 10.0.0.100:443 -r 192.168.10.3:443 -g -w 1"),
        (n * 4 / 5, "-e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 4"),
    ]
}

fn golden_apply(d: &mut Director, args: &str) {
    let argv: Vec<&str> = args.split_whitespace().collect();
    let r = match parse_command(&argv).unwrap() {
        Command::AddService(s) => d.add_service(&s).map(|_| ()),
        Command::DeleteService(k) => d.del_service(&k),
        Command::AddDest(k, r) => d.add_dest(&k, &r).map(|_| ()),
        Command::EditDest(k, r) => d.edit_dest(&k, &r),
        Command::DeleteDest(k, std::net::IpAddr::V4(a), p) => d.del_dest(&k, a, p),
        c => panic!("unexpected {c:?}"),
    };
    r.unwrap_or_else(|e| panic!("{args}: {e}"));
}

fn sim_daemon_with_rule_changes_equals_golden(width: &str) {
    assert_eq!(lvsnic_sim::RTL_ORIGIN, "hw/rtl", "the sim crate was not built from hw/rtl (stand-in core?)");
    let dir = tmpdir(&format!("simload{width}"));
    let rules = write(&dir, "rules", RULES);
    let dcfg = write(&dir, "d.toml", &director_toml());
    let inp = dir.join("in.pcap");
    let (r, c, i) = (rules.to_str().unwrap(), dcfg.to_str().unwrap(), inp.to_str().unwrap());
    let o = std::process::Command::new(LVSNIC)
        .args(["traffic", "--rules", r, "--director", c, "--output", i, "--seed", "5", "--connections", "250"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = pcap::read_file(&inp).unwrap();
    let n = recs.len();
    let changes = changes(n);

    // Golden model, the same commands before the same frames.
    let mut g = Director::new(config(""), &parse_rules(RULES).unwrap(), recs[0].ts_ns).unwrap();
    let mut want = Vec::new();
    let mut k = 0;
    for (idx, rec) in recs.iter().enumerate() {
        while k < changes.len() && changes[k].0 == idx {
            golden_apply(&mut g, changes[k].1);
            k += 1;
        }
        let mut f = rec.data.clone();
        let mut extra = Vec::new();
        if let Action::Transmit = g.process(rec.ts_ns, &mut f, &mut extra) {
            want.push(f);
            want.extend(extra);
        }
    }

    // The daemon: run up to each change point, send the command, go on.
    let out = dir.join("out.pcap");
    let w = format!("pcap:{i},{}", out.display());
    let d = Daemon::start(&dir, &director_toml(), &["--backend", "sim", "--width", width, "--rules", r, "--wire", &w, "--pace", "step"]);
    let sock = d.sock.to_str().unwrap().to_string();
    let mut at = 0;
    for (idx, args) in &changes {
        if *idx > at {
            let r = d.run(&["wire", "--socket", &sock, "--frames", &(idx - at).to_string()]);
            assert_eq!(r.code, 0, "{r:?}");
            at = *idx;
        }
        let argv: Vec<&str> = args.split_whitespace().collect();
        d.ok(&argv);
    }
    let r = d.run(&["wire", "--socket", &sock]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(d.status()["pcap_frames_left"], 0);

    let got: Vec<Vec<u8>> = pcap::read_file(&out).unwrap().into_iter().map(|r| r.data).collect();
    assert!(want.len() > n / 2, "{} of {n} transmitted", want.len());
    assert_eq!(got.len(), want.len(), "transmitted frame count");
    for (j, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_eq!(a, b, "transmitted frame {j} differs from the golden model");
    }
    let (head, services) = lvsnic_model::stats::listings(&g);
    let stats = format_list(&head, &services, &ListOptions { numeric: true, stats: true, ..ListOptions::default() });
    assert_eq!(d.run(&["-L", "-n", "--stats"]).stdout, stats);
    let plain = format_list(&head, &services, &ListOptions { numeric: true, ..ListOptions::default() });
    assert_eq!(d.run(&["-L", "-n"]).stdout, plain);
    // Not vacuous: the verilated core forwarded much of the traffic itself.
    let st = d.status();
    let hw = st["exception_loop"]["in_hardware"].as_u64().unwrap();
    assert!(hw as usize > n / 4, "only {hw} of {n} frames forwarded by the RTL: {st}");
    eprintln!("sim{width}: {n} frames, {} transmitted, {hw} by the RTL, {} rule changes", want.len(), changes.len());
}

#[test]
fn sim_daemon_with_rule_changes_under_load_equals_golden_64() {
    sim_daemon_with_rule_changes_equals_golden("64");
}

#[test]
fn sim_daemon_with_rule_changes_under_load_equals_golden_512() {
    sim_daemon_with_rule_changes_equals_golden("512");
}
