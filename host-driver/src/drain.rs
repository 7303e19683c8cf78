//! `lvsnic drain -t VIP:PORT -r RIP:PORT [--timeout 60]`: takes a real
//! server out without cutting its clients, over the daemon's ordinary
//! requests: its weight goes to 0 (`-e`, keeping its forwarding method and
//! thresholds, read from `-S -n`), so no new connection is scheduled to
//! it; its connections are counted (`-L -n -c`) every half second until
//! none is left or the timeout passes; then it is removed (`-d`). Each
//! step is printed; a refused step ends the drain with status 1, a daemon
//! that cannot be reached with status 2.

use crate::daemon::proto::{self, Request};
use std::path::Path;
use std::time::{Duration, Instant};

fn ipvsadm(sock: &Path, argv: &[&str]) -> Result<crate::invocation::Output, String> {
    let req = Request::Ipvsadm { prog: None, argv: argv.iter().map(|s| s.to_string()).collect(), stdin: None };
    proto::call(sock, &req).map_err(|e| proto::reach_text(sock, &e))
}

/// The connections (not persistence templates) to `rip` of service `vip`
/// in an `ipvsadm -L -n -c` listing.
pub fn count_conns(listing: &str, proto: &str, vip: &str, rip: &str) -> usize {
    listing
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() >= 6 && w[0].eq_ignore_ascii_case(proto) && w[2] != "NONE" && w[4] == vip && w[5] == rip
        })
        .count()
}

/// Runs the drain; returns the exit status.
pub fn run(sock: &Path, svc: (&str, String), rip: &str, timeout_s: u64) -> u8 {
    let (flag, vip) = (svc.0, svc.1.as_str());
    let fail = |m: String, code: u8| {
        eprintln!("lvsnic drain: {m}");
        code
    };
    let save = match ipvsadm(sock, &["-S", "-n"]) {
        Ok(o) if o.exit == 0 => o.stdout,
        Ok(o) => return fail(o.stderr.trim().to_string(), 1),
        Err(e) => return fail(e, 2),
    };
    let line = save.lines().find(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() >= 5 && w[0] == "-a" && w[1] == flag && w[2] == vip && w[3] == "-r" && w[4] == rip
    });
    let Some(line) = line else {
        return fail(format!("no real server {rip} in service {flag} {vip}"), 1);
    };
    let mut argv: Vec<&str> = line.split_whitespace().collect();
    argv[0] = "-e";
    if let Some(i) = argv.iter().position(|w| *w == "-w") {
        argv[i + 1] = "0";
    } else {
        argv.extend(["-w", "0"]);
    }
    match ipvsadm(sock, &argv) {
        Ok(o) if o.exit == 0 => println!("{rip}: weight 0 (no new connections)"),
        Ok(o) => return fail(format!("{}: {}", argv.join(" "), o.stderr.trim()), 1),
        Err(e) => return fail(e, 2),
    }
    let proto = if flag == "-u" { "UDP" } else { "TCP" };
    let t0 = Instant::now();
    let left = loop {
        let n = match ipvsadm(sock, &["-L", "-n", "-c"]) {
            Ok(o) if o.exit == 0 => count_conns(&o.stdout, proto, vip, rip),
            Ok(o) => return fail(o.stderr.trim().to_string(), 1),
            Err(e) => return fail(e, 2),
        };
        if n == 0 || t0.elapsed() >= Duration::from_secs(timeout_s) {
            break n;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let waited = t0.elapsed().as_secs_f64();
    if left == 0 {
        println!("{rip}: no connections left after {waited:.1} s");
    } else {
        println!("{rip}: {left} connection(s) still open after the {timeout_s} s timeout");
    }
    match ipvsadm(sock, &["-d", flag, vip, "-r", rip]) {
        Ok(o) if o.exit == 0 => {
            println!("{rip}: removed from {flag} {vip}");
            0
        }
        Ok(o) => fail(format!("-d {flag} {vip} -r {rip}: {}", o.stderr.trim()), 1),
        Err(e) => fail(e, 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_the_servers_connections() {
        let l = "IPVS connection entries\npro expire state       source             virtual            destination\n\
                 TCP 14:59  ESTABLISHED 192.168.0.1:4000   10.0.0.1:80        10.0.1.1:80\n\
                 TCP 14:59  ESTABLISHED 192.168.0.2:4000   10.0.0.1:80        10.0.1.2:80\n\
                 TCP 05:59  NONE        192.168.0.1:0      10.0.0.1:80        10.0.1.1:80\n\
                 UDP 04:59  UDP         192.168.0.1:53     10.0.0.1:80        10.0.1.1:80\n";
        assert_eq!(count_conns(l, "TCP", "10.0.0.1:80", "10.0.1.1:80"), 1);
        assert_eq!(count_conns(l, "TCP", "10.0.0.1:80", "10.0.1.3:80"), 0);
    }
}
