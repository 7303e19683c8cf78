//! The kernel side of `lvsnic conformance`: the work directory the VM
//! reads (`director.env`, `rules.txt`, `in.pcap`, `changes.txt`), the VM run
//! (`scripts/vm/run.sh` booting `scripts/vm/director.sh`), and turning the
//! kernel's capture into capture time.

use super::changes::Changes;
use super::ConformanceError;
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::rules::ipvsadm::Command;
use lvsnic_model::rules::{RuleSet, ServiceKey};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The gateway's address inside the VM (DIRECTOR.toml only names its MAC):
/// link-local, so that it collides with no service, server or client.
pub const GATEWAY_IP: Ipv4Addr = Ipv4Addr::new(169, 254, 0, 254);

/// Where the VM scripts are: `$LVSNIC_VM_SCRIPTS`, else `scripts/vm` of the
/// source tree this binary was built from.
pub fn scripts_dir() -> PathBuf {
    match std::env::var_os("LVSNIC_VM_SCRIPTS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/vm"),
    }
}

/// Every IPv4 address the director must own: its own and each VIP of the
/// rules and of services the changes add.
pub fn local_addresses(cfg: &DirectorConfig, rules: &RuleSet, changes: &Changes) -> Vec<Ipv4Addr> {
    let mut v: BTreeSet<Ipv4Addr> = BTreeSet::new();
    let mut vip = |k: &ServiceKey| {
        if let Some((_, a, _)) = k.as_ipv4() {
            v.insert(a);
        }
    };
    rules.services.iter().for_each(|s| vip(&s.key));
    for c in &changes.list {
        if let Command::AddService(r) = &c.cmd {
            vip(&r.key);
        }
    }
    v.remove(&cfg.ip);
    std::iter::once(cfg.ip).chain(v).collect()
}

/// `director.env` for `scripts/vm/director.sh`.
pub fn director_env(cfg: &DirectorConfig, local: &[Ipv4Addr]) -> String {
    let (tcp, tcpfin, udp) = cfg.timeouts.get();
    let s = &cfg.sysctl;
    let b = |x: bool| x as u8;
    let mut e = String::new();
    let _ = writeln!(e, "DIR_IP={}\nDIR_MAC={}\nDIR_MTU={}", cfg.ip, cfg.mac, cfg.mtu);
    let _ = writeln!(e, "GW_IP={GATEWAY_IP}\nGW_MAC={}", cfg.gateway_mac);
    let n: Vec<String> = cfg.neighbors.iter().map(|(ip, mac)| format!("{ip}={mac}")).collect();
    let _ = writeln!(e, "NEIGHBORS=\"{}\"", n.join(" "));
    let vips: Vec<String> = local.iter().filter(|a| **a != cfg.ip).map(|a| a.to_string()).collect();
    let _ = writeln!(e, "VIPS=\"{}\"", vips.join(" "));
    let _ = writeln!(e, "TIMEOUTS=\"{tcp} {tcpfin} {udp}\"");
    let _ = writeln!(
        e,
        "VS_SYSCTLS=\"expire_nodest_conn={} expire_quiescent_template={} conn_reuse_mode={} pmtu_disc={} secure_tcp={} sloppy_tcp={} nat_icmp_send={}\"",
        b(s.expire_nodest_conn),
        b(s.expire_quiescent_template),
        s.conn_reuse_mode,
        b(s.pmtu_disc),
        b(s.secure_tcp),
        b(s.sloppy_tcp),
        b(s.nat_icmp_send)
    );
    let _ = writeln!(e, "ICMP_RATELIMIT={}\nICMP_RATEMASK={}\nCONN_TAB_BITS={}", s.icmp_ratelimit_ms, s.icmp_ratemask, s.conn_tab_bits);
    e
}

/// `changes.txt` for the VM: `SECONDS ipvsadm-args`, one per change.
pub fn changes_txt(changes: &Changes) -> String {
    changes.list.iter().map(|c| format!("{} {}\n", c.secs, c.args.join(" "))).collect()
}

/// Boots the VM on `work` (inputs already written) and returns when the
/// in-VM director finished; its one-line failure otherwise.
pub fn run_vm(work: &Path) -> Result<(), ConformanceError> {
    let scripts = scripts_dir();
    let run = scripts.join("run.sh");
    let inner = scripts.join("director.sh");
    if !run.is_file() || !inner.is_file() {
        return Err(ConformanceError::Vm(format!("VM scripts not found in {} (set LVSNIC_VM_SCRIPTS)", scripts.display())));
    }
    let status = std::process::Command::new(&run)
        .arg(work)
        .arg(&inner)
        .arg(work)
        .status()
        .map_err(|e| ConformanceError::Vm(format!("{}: {e}", run.display())))?;
    match check_status(work) {
        Err(e @ ConformanceError::Kernel(_)) => return Err(e),
        Ok(()) if status.success() => return Ok(()),
        _ => {}
    }
    // run.sh printed its own one-line reason ("lvsnic: the VM did not boot ...").
    Err(ConformanceError::Vm(format!("the VM run failed (exit {}; see {})", status.code().unwrap_or(-1), work.join("log.txt").display())))
}

/// What the in-VM director left in `work/status`: `ok`, or its one-line failure.
pub fn check_status(work: &Path) -> Result<(), ConformanceError> {
    let st = std::fs::read_to_string(work.join("status")).unwrap_or_default();
    let st = st.trim();
    if let Some(e) = st.strip_prefix("error: ") {
        return Err(ConformanceError::Kernel(e.to_string()));
    }
    if st != "ok" {
        return Err(ConformanceError::Vm(format!("no kernel result in {} (the VM did not finish the scenario)", work.display())));
    }
    Ok(())
}

/// Checks that the tester replayed every input frame, unchanged and in order.
pub fn check_sent(input: &[PcapRecord], sent: &[PcapRecord]) -> Result<(), ConformanceError> {
    if sent.len() != input.len() {
        return Err(ConformanceError::LostFrames(format!("tcpreplay sent {} of {} frames", sent.len(), input.len())));
    }
    if let Some(i) = input.iter().zip(sent).position(|(a, b)| a.data != b.data) {
        return Err(ConformanceError::LostFrames(format!("frame {i} left the tester changed or out of order")));
    }
    Ok(())
}

/// Re-stamps the kernel's output in capture time: a frame captured `d` ns
/// after the tester sent input frame `i` gets `input[i].ts + d`.
pub fn to_capture_time(out: &[PcapRecord], input: &[PcapRecord], sent: &[PcapRecord]) -> Vec<PcapRecord> {
    out.iter()
        .map(|r| {
            let i = sent.partition_point(|s| s.ts_ns <= r.ts_ns);
            let ts = match i.checked_sub(1) {
                Some(j) => input[j].ts_ns + (r.ts_ns - sent[j].ts_ns),
                None => input.first().map(|f| f.ts_ns).unwrap_or(0).saturating_sub(sent.first().map_or(0, |s| s.ts_ns.saturating_sub(r.ts_ns))),
            };
            PcapRecord { ts_ns: ts, orig_len: r.orig_len, data: r.data.clone() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: u64, b: u8) -> PcapRecord {
        PcapRecord { ts_ns: ts, orig_len: 1, data: vec![b] }
    }

    #[test]
    fn capture_time_follows_the_sent_frame_before() {
        let input = [rec(1_000, 1), rec(5_000, 2)];
        let sent = [rec(900_000, 1), rec(904_100, 2)];
        let out = [rec(899_990, 9), rec(900_050, 9), rec(904_200, 9)];
        let t: Vec<u64> = to_capture_time(&out, &input, &sent).iter().map(|r| r.ts_ns).collect();
        assert_eq!(t, [990, 1_050, 5_100]);
        assert!(check_sent(&input, &sent).is_ok());
        assert_eq!(check_sent(&input, &sent[..1]).unwrap_err().to_string(), "replay lost frames: tcpreplay sent 1 of 2 frames");
    }

    #[test]
    fn env_names_every_knob() {
        let cfg = DirectorConfig::parse(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n[neighbors]\n\"192.168.10.1\" = \"02:00:00:00:10:01\"\n[sysctl]\nconn_reuse_mode = 2\n",
        )
        .unwrap();
        let rules = lvsnic_model::rules::ipvsadm::parse_rules("-A -t 10.0.0.100:80 -s rr\n-A -u 10.0.0.1:53\n").unwrap();
        let ch = Changes::parse("1 -A -t 10.0.0.102:80\n", "C").unwrap();
        let local = local_addresses(&cfg, &rules, &ch);
        assert_eq!(local, ["10.0.0.1".parse::<Ipv4Addr>().unwrap(), "10.0.0.100".parse().unwrap(), "10.0.0.102".parse().unwrap()]);
        let e = director_env(&cfg, &local);
        assert!(e.contains("VIPS=\"10.0.0.100 10.0.0.102\"\n"), "{e}");
        assert!(e.contains("NEIGHBORS=\"192.168.10.1=02:00:00:00:10:01\"\n"));
        assert!(e.contains("TIMEOUTS=\"900 120 300\"\n"));
        assert!(e.contains(" conn_reuse_mode=2 "));
        assert!(e.contains("DIR_MTU=1500\n"));
        assert_eq!(changes_txt(&ch), "1 -A -t 10.0.0.102:80\n");
    }
}
