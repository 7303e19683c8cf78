//! Rule changes in the middle of traffic, on every backend: the hardware
//! model and the verilated RTL (with the host slow path and, for the RTL,
//! the DMA ring model) must transmit frame for frame what the golden model
//! alone transmits when the same `ipvsadm` commands arrive at the same
//! points of a generated capture, hand the same frames to the host, and end
//! with the same statistics and listings. Established connections keep
//! their real server through `-e` and `-a`; `-d` and `-D` take the deleted
//! servers' flows out of the data plane.

use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::rules::ipvsadm::{format_list, parse_command, parse_rules, Command, ListOptions};
use lvsnic_model::time::SEC;
use lvsnic_traffic::{generate, TrafficSpec};
use lvsnic_tests::*;

const RULES: &str = MIXED_RULES;

/// `(fraction of the capture, ipvsadm arguments)`: each command is applied
/// just before the first frame past that point.
const CHANGES: &[(f64, &str)] = &[
    // A new real server takes part of the new connections; old ones stay.
    (0.15, "-a -t 10.0.0.100:80 -r 192.168.10.5:8080 -m -w 2"),
    // Quiescent: no new connections, established ones keep flowing in hardware.
    (0.25, "-e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 0"),
    // Forwarding method change applies to new connections only.
    (0.35, "-e -t 10.0.0.100:443 -r 192.168.10.4:443 -i -w 2"),
    // Deleted: its flows leave the hardware, its packets are dropped.
    (0.45, "-d -u 10.0.0.101:53 -r 192.168.10.6:53"),
    // A whole service goes (its VIP stays for the others).
    (0.55, "-D -t 10.0.0.102:80"),
    // And comes back with one server.
    (0.65, "-A -t 10.0.0.102:80 -s rr"),
    (0.66, "-a -t 10.0.0.102:80 -r 192.168.10.8:80 -i -w 1"),
    // A deleted server comes back (from the trash while it still has connections).
    (0.75, "-a -u 10.0.0.101:53 -r 192.168.10.6:53 -g -w 1"),
    (0.85, "-e -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 5"),
];

fn apply(d: &mut Dut, args: &str) {
    let argv: Vec<&str> = args.split_whitespace().collect();
    let r = match parse_command(&argv).expect("test command") {
        Command::AddService(s) => d.add_service(&s),
        Command::DeleteService(k) => d.del_service(&k),
        Command::AddDest(k, r) => d.add_dest(&k, &r),
        Command::EditDest(k, r) => d.edit_dest(&k, &r),
        Command::DeleteDest(k, a, p) => match a {
            std::net::IpAddr::V4(a) => d.del_dest(&k, a, p),
            std::net::IpAddr::V6(_) => unreachable!("IPv4 test rules"),
        },
        c => panic!("unexpected test command {c:?}"),
    };
    r.unwrap_or_else(|e| panic!("{}: {args}: {e}", d.name));
}

/// `-L -n --rate`.
fn rate_listing(d: &Dut) -> String {
    let (head, services) = lvsnic_model::stats::listings(d);
    format_list(&head, &services, &ListOptions { numeric: true, rate: true, ..ListOptions::default() })
}

/// Every frame's output on backend `b`, the host-stack frames, the final
/// statistics JSON and `-L -n --stats` listing with `-L -n --rate` listings
/// taken during the traffic appended, and frames forwarded in hardware.
fn run(b: usize, recs: &[PcapRecord]) -> (Vec<Out>, String, String, u64) {
    let mut d = dut(b, RULES, "");
    let mut outs = Vec::with_capacity(recs.len());
    let mut next = 0;
    let mut rates = String::new();
    for (i, r) in recs.iter().enumerate() {
        while next < CHANGES.len() && i as f64 >= CHANGES[next].0 * recs.len() as f64 {
            apply(&mut d, CHANGES[next].1);
            next += 1;
        }
        outs.push(d.feed(r.ts_ns, &r.data));
        if i == recs.len() / 5 || i == recs.len() / 2 || i == recs.len() * 4 / 5 {
            rates += &rate_listing(&d);
        }
    }
    let end = recs.last().unwrap().ts_ns + 1000 * SEC;
    d.advance(end);
    d.settle();
    let hw = d.in_hardware();
    let report = lvsnic_model::stats::Report::of(&d).to_json();
    let (head, services) = lvsnic_model::stats::listings(&d);
    let opts = ListOptions { numeric: true, stats: true, ..ListOptions::default() };
    let listing = format_list(&head, &services, &opts) + &rates;
    (outs, report, listing, hw)
}

#[test]
fn rule_changes_under_load_equal_the_golden_model_on_every_backend() {
    let rules = parse_rules(RULES).unwrap();
    let spec = TrafficSpec { seed: 44, connections: 900, clients: 120, duration: 90 * SEC, ..TrafficSpec::default() };
    let recs = generate(&spec, &config(""), &rules).expect("traffic");
    let (gold, gold_report, gold_listing, _) = run(0, &recs);
    let tx = gold.iter().filter(|o| matches!(o, Out::Tx(_))).count();
    assert!(tx > recs.len() / 2, "{tx} of {} transmitted", recs.len());
    // The changes took effect: the added server got connections, the
    // service that was deleted and re-added has only its new server.
    let added = gold_listing.lines().find(|l| l.contains("192.168.10.5:8080")).expect("added server listed");
    let conns: u64 = added.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(conns > 0, "{added}");
    let final_stats = gold_listing.split("CPS").next().unwrap();
    assert!(!final_stats.contains("192.168.10.7:80"), "{gold_listing}");
    // The rate listings taken during the traffic are not all zero.
    let rate_rows = gold_listing.lines().skip_while(|l| !l.contains("CPS")).filter(|l| l.starts_with("TCP") || l.starts_with("UDP"));
    let busy = rate_rows.filter(|l| l.split_whitespace().skip(2).any(|v| v != "0")).count();
    assert!(busy >= 3, "{gold_listing}");
    for b in 1..BACKENDS {
        let (outs, report, listing, hw) = run(b, &recs);
        let name = dut(b, RULES, "").name;
        for (i, (g, o)) in gold.iter().zip(&outs).enumerate() {
            assert_eq!(g, o, "{name}: frame {i} (t={}) differs from the golden model", recs[i].ts_ns);
        }
        assert_eq!(gold_report, report, "{name}: statistics");
        assert_eq!(gold_listing, listing, "{name}: -L -n --stats and --rate");
        // Not vacuous: a large share of the traffic never left the data plane.
        assert!(hw as usize > recs.len() / 4, "{name}: only {hw} of {} frames forwarded in hardware", recs.len());
        eprintln!("{name}: {} frames, {tx} transmitted, {hw} in hardware, {} rule changes", recs.len(), CHANGES.len());
    }
}
