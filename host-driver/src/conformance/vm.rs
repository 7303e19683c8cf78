//! The kernel side of `lvsnic conformance`: the work directory the VM
//! reads (`director.env`, `rules.txt`, `in.pcap`, `changes.txt`), the VM run
//! (`scripts/vm/run.sh` booting `scripts/vm/director.sh`), and turning the
//! kernel's capture into capture time.

use crate::changes::Changes;
use super::ConformanceError;
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::rules::ipvsadm::Command;
use lvsnic_model::rules::{RuleSet, ServiceKey};
use lvsnic_model::time::KernelClock;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

/// The gateway's address inside the VM (DIRECTOR.toml only names its MAC):
/// link-local, so that it collides with no service, server or client.
pub const GATEWAY_IP: Ipv4Addr = Ipv4Addr::new(169, 254, 0, 254);

/// The gateway's IPv6 address inside the VM (same MAC as [`GATEWAY_IP`]):
/// a documentation address no scenario, server or client uses (the
/// director has no link-local address, see director.sh).
pub const GATEWAY_IP6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0xffff, 0, 0, 0, 0xfe);

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

/// Every IPv6 VIP of the rules and of services the changes add (the
/// director's own `[director] ip6` is not one of them).
pub fn local_addresses6(cfg: &DirectorConfig, rules: &RuleSet, changes: &Changes) -> Vec<Ipv6Addr> {
    let mut v: BTreeSet<Ipv6Addr> = BTreeSet::new();
    let mut vip = |k: &ServiceKey| {
        if let ServiceKey::Addr { addr: IpAddr::V6(a), .. } = k {
            v.insert(*a);
        }
    };
    rules.services.iter().for_each(|s| vip(&s.key));
    for c in &changes.list {
        if let Command::AddService(r) = &c.cmd {
            vip(&r.key);
        }
    }
    if let Some(me) = cfg.ip6 {
        v.remove(&me);
    }
    v.into_iter().collect()
}

/// `director.env` for `scripts/vm/director.sh`. `local6`: the IPv6 VIPs
/// ([`local_addresses6`]); with none and no `[director] ip6`, IPv6 stays
/// disabled in the VM (`DIR_IP6` empty).
pub fn director_env(cfg: &DirectorConfig, local: &[Ipv4Addr], local6: &[Ipv6Addr]) -> String {
    let (tcp, tcpfin, udp) = cfg.timeouts.get();
    let s = &cfg.sysctl;
    let b = |x: bool| x as u8;
    let mut e = String::new();
    let _ = writeln!(e, "DIR_IP={}\nDIR_MAC={}\nDIR_MTU={}", cfg.ip, cfg.mac, cfg.mtu);
    let _ = writeln!(e, "GW_IP={GATEWAY_IP}\nGW_MAC={}", cfg.gateway_mac.unwrap_or(lvsnic_model::wire::MacAddr::ZERO));
    let n: Vec<String> = cfg.neighbors.iter().map(|(ip, mac)| format!("{ip}={mac}")).collect();
    let _ = writeln!(e, "NEIGHBORS=\"{}\"", n.join(" "));
    let vips: Vec<String> = local.iter().filter(|a| **a != cfg.ip).map(|a| a.to_string()).collect();
    let _ = writeln!(e, "VIPS=\"{}\"", vips.join(" "));
    if cfg.ip6.is_some() || !local6.is_empty() {
        // IPv6 on wire0 (director.sh): the director's address (a
        // documentation address when DIRECTOR.toml names none), the IPv6
        // neighbours and VIPs, the gateway's IPv6 address.
        let me = cfg.ip6.unwrap_or(Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0xffff, 0, 0, 0, 1));
        let _ = writeln!(e, "DIR_IP6={me}\nGW_IP6={GATEWAY_IP6}");
        let n: Vec<String> = cfg.neighbors6.iter().map(|(ip, mac)| format!("{ip}={mac}")).collect();
        let _ = writeln!(e, "NEIGHBORS6=\"{}\"", n.join(" "));
        let v: Vec<String> = local6.iter().map(|a| a.to_string()).collect();
        let _ = writeln!(e, "VIPS6=\"{}\"", v.join(" "));
    } else {
        let _ = writeln!(e, "DIR_IP6=\nGW_IP6=\nNEIGHBORS6=\"\"\nVIPS6=\"\"");
    }
    let _ = writeln!(e, "TIMEOUTS=\"{tcp} {tcpfin} {udp}\"");
    let _ = writeln!(
        e,
        "VS_SYSCTLS=\"expire_nodest_conn={} expire_quiescent_template={} conn_reuse_mode={} pmtu_disc={} secure_tcp={} sloppy_tcp={} nat_icmp_send={}\"",
        b(s.expire_nodest_conn),
        b(s.expire_quiescent_template),
        s.conn_reuse_mode,
        b(s.pmtu_disc),
        // The model's `secure_tcp = 1` means the `tcp_states_dos` table is in
        // use; the kernel's 1 and 2 are "automatic" (on only while memory is
        // low, `update_defense_level` in ip_vs_ctl.c), 3 is "always".
        if s.secure_tcp { 3 } else { 0 },
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
pub fn run_vm(work: &Path, capture_ns: u64) -> Result<(), ConformanceError> {
    let scripts = scripts_dir();
    let run = scripts.join("run.sh");
    let inner = scripts.join("director.sh");
    if !run.is_file() || !inner.is_file() {
        return Err(ConformanceError::Vm(format!("VM scripts not found in {} (set LVSNIC_VM_SCRIPTS)", scripts.display())));
    }
    // The guest sees the host's files except /tmp (its own tmpfs), and a
    // source tree may be there: the VM runs a copy in the work directory.
    let copy = work.join("vm-scripts");
    std::fs::create_dir_all(&copy).map_err(|e| ConformanceError::Vm(format!("{}: {e}", copy.display())))?;
    for entry in std::fs::read_dir(&scripts).map_err(|e| ConformanceError::Vm(format!("{}: {e}", scripts.display())))? {
        let path = entry.map_err(|e| ConformanceError::Vm(format!("{}: {e}", scripts.display())))?.path();
        if path.is_file() {
            let to = copy.join(path.file_name().unwrap_or_default());
            std::fs::copy(&path, &to).map_err(|e| ConformanceError::Vm(format!("copying {} to {}: {e}", path.display(), to.display())))?;
        }
    }
    let inner = copy.join("director.sh");
    let status = std::process::Command::new(&run)
        .arg("--timeout")
        .arg(vm_timeout_secs(capture_ns).to_string())
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

/// Shorter than an Ethernet header: a packet socket refuses to send it
/// (EINVAL), no wire can carry it. Such input frames are not replayed (the
/// golden model hands them to its host as malformed, so nothing is lost
/// from the comparison).
pub const ETH_HLEN: usize = 14;

/// How long the VM may run (boot, set-up, replay at the capture's pace,
/// capture): `$LVSNIC_VM_TIMEOUT` seconds if set, else 600 s plus twice the
/// capture's duration (TCG falls behind the pace), at least 1200 s.
pub fn vm_timeout_secs(capture_ns: u64) -> u64 {
    if let Some(t) = std::env::var("LVSNIC_VM_TIMEOUT").ok().and_then(|v| v.trim().parse().ok()) {
        return t;
    }
    (600 + 2 * capture_ns.div_ceil(1_000_000_000)).max(1200)
}

/// The input frames the tester can send.
pub fn replayable(input: &[PcapRecord]) -> Vec<PcapRecord> {
    input.iter().filter(|r| r.data.len() >= ETH_HLEN).cloned().collect()
}

/// Checks that the tester replayed every (replayable) input frame, unchanged and in order.
pub fn check_sent(input: &[PcapRecord], sent: &[PcapRecord]) -> Result<(), ConformanceError> {
    if sent.len() != input.len() {
        return Err(ConformanceError::LostFrames(format!("tcpreplay sent {} of {} frames", sent.len(), input.len())));
    }
    if let Some(i) = input.iter().zip(sent).position(|(a, b)| a.data != b.data) {
        return Err(ConformanceError::LostFrames(format!("frame {i} left the tester changed or out of order")));
    }
    Ok(())
}

/// How far the replay fell behind the capture's pace at worst (ns): the
/// largest `(sent[i] - sent[0]) - (input[i] - input[0])`.
pub fn max_lag_ns(input: &[PcapRecord], sent: &[PcapRecord]) -> u64 {
    let (Some(i0), Some(s0)) = (input.first(), sent.first()) else { return 0 };
    input
        .iter()
        .zip(sent)
        .map(|(i, s)| (s.ts_ns.saturating_sub(s0.ts_ns)).saturating_sub(i.ts_ns.saturating_sub(i0.ts_ns)))
        .max()
        .unwrap_or(0)
}

/// The changes re-timed to when the VM ran them (`start_ns.txt`,
/// `changes.log`), as offsets from the first frame the tester sent; a change
/// the real ipvsadm refused is a kernel error.
pub fn applied_changes(work: &Path, changes: &Changes, sent: &[PcapRecord]) -> Result<Changes, ConformanceError> {
    if changes.list.is_empty() {
        return Ok(changes.clone());
    }
    let start: u64 = std::fs::read_to_string(work.join("start_ns.txt"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| ConformanceError::Vm(format!("{}: no start_ns.txt", work.display())))?;
    let log = std::fs::read_to_string(work.join("changes.log")).unwrap_or_default();
    // Result lines: "SECONDS NS ok|exit N ipvsadm ARGS" (ipvsadm's own output lines are in between).
    let results: Vec<(u64, String)> = log
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at: u64 = w.get(1)?.parse().ok()?;
            let rest = w.get(2..)?.join(" ");
            (rest.starts_with("ok ipvsadm") || rest.starts_with("exit ")).then_some((at, rest))
        })
        .collect();
    let first = sent.first().map_or(start, |r| r.ts_ns);
    let mut out = changes.clone();
    for (n, c) in out.list.iter_mut().enumerate() {
        let (at, r) = results
            .get(n)
            .ok_or_else(|| ConformanceError::Kernel(format!("the change of line {} did not run in the VM (changes.log)", c.line)))?;
        if !r.starts_with("ok ") {
            return Err(ConformanceError::Kernel(format!("the change of line {} failed: {r}", c.line)));
        }
        c.offset_ns = (start + at).saturating_sub(first);
    }
    Ok(out)
}

/// The VM kernel's jiffies as a [`KernelClock`] on the capture's (realtime)
/// clock, from `timer_list.txt` (`/proc/timer_list` read three times by
/// director.sh just before the replay), or `None` when the file is absent
/// (a work directory from an older lvsnic). `hz`: the kernel's `CONFIG_HZ`.
///
/// Per reading: `now at N nsecs` (monotonic), the `.offset` of the clock
/// base whose `.get_time` is `ktime_get_real` (realtime − monotonic) and
/// the first `jiffies:` line. Ticks fall on multiples of a jiffy in
/// monotonic time (`tick_init_jiffy_update` aligns `tick_next_period`;
/// the VM's `.expires_next` shows it), so `jiffies = ⌊mono / tick⌋ + C`;
/// a tick between the `now` and `jiffies:` lines makes a reading's `C` one
/// too large, so the smallest `C` of the readings is taken.
pub fn vm_clock(work: &Path, hz: u32) -> Result<Option<KernelClock>, ConformanceError> {
    let p = work.join("timer_list.txt");
    let Ok(text) = std::fs::read_to_string(&p) else { return Ok(None) };
    parse_timer_list(&text, hz).map(Some).ok_or_else(|| ConformanceError::Vm(format!("{}: no usable reading (now at / ktime_get_real offset / jiffies)", p.display())))
}

/// [`vm_clock`] on the text of `/proc/timer_list` (one or more readings).
pub fn parse_timer_list(text: &str, hz: u32) -> Option<KernelClock> {
    let tick = 1_000_000_000 / hz.max(1) as u64;
    let mut best: Option<(u64, u64, u64)> = None; // (C, now, offset)
    for reading in text.split("Timer List Version:").skip(1) {
        let mut now = None;
        let mut offset = None;
        let mut jiffies = None;
        let mut real_base = false;
        for line in reading.lines() {
            let l = line.trim();
            if let Some(v) = l.strip_prefix("now at ") {
                now = now.or_else(|| v.trim_end_matches(" nsecs").trim().parse::<u64>().ok());
            } else if let Some(v) = l.strip_prefix(".get_time:") {
                real_base = v.trim() == "ktime_get_real";
            } else if let Some(v) = l.strip_prefix(".offset:") {
                if real_base && offset.is_none() {
                    offset = v.trim().trim_end_matches(" nsecs").trim().parse::<u64>().ok();
                }
            } else if let Some(v) = l.strip_prefix("jiffies:") {
                jiffies = jiffies.or_else(|| v.trim().parse::<u64>().ok());
            }
        }
        let (Some(now), Some(offset), Some(j)) = (now, offset, jiffies) else { continue };
        let c = j.wrapping_sub(now / tick);
        if best.is_none_or(|(bc, _, _)| c < bc) {
            best = Some((c, now, offset));
        }
    }
    let (c, now, offset) = best?;
    let k = now / tick;
    Some(KernelClock { hz, anchor_ns: k * tick + offset, anchor_jiffies: k.wrapping_add(c) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Excerpts of three readings of the VM's /proc/timer_list (Debian
    /// 6.1.0-48, HZ 250) as director.sh records them; the second reading
    /// has its jiffies line one tick after its `now` line would say.
    #[test]
    fn jiffies_anchor_from_timer_list() {
        let reading = |now: u64, j: u64| {
            format!(
                "Timer List Version: v0.9\nHRTIMER_MAX_CLOCK_BASES: 8\nnow at {now} nsecs\n\ncpu: 0\n clock 0:\n  .index:      0\n  .get_time:   ktime_get\n  .offset:     0 nsecs\n clock 1:\n  .index:      1\n  .get_time:   ktime_get_real\n  .offset:     1796314730204243039 nsecs\nactive timers:\n  .expires_next   : 13728000000 nsecs\n  .last_tick      : 0 nsecs\njiffies: {j}\n\nTick Device: mode:     1\n"
            )
        };
        let text = reading(13_726_298_333, 4_294_895_638) + &reading(13_727_996_663, 4_294_895_639) + &reading(13_730_505_761, 4_294_895_639);
        let k = parse_timer_list(&text, 250).unwrap();
        // C = 4294895638 - 3431; anchored at the tick of mono 3431 * 4 ms.
        assert_eq!(k, KernelClock { hz: 250, anchor_ns: 3431 * 4_000_000 + 1_796_314_730_204_243_039, anchor_jiffies: 4_294_895_638 });
        assert_eq!(k.jiffies(13_730_505_761 + 1_796_314_730_204_243_039), 4_294_895_639);
        assert_eq!(parse_timer_list("Timer List Version: v0.9\nnow at 5 nsecs\n", 250), None);
    }

    fn rec(ts: u64, b: u8) -> PcapRecord {
        PcapRecord { ts_ns: ts, orig_len: 1, data: vec![b] }
    }

    #[test]
    fn vm_timeout_grows_with_the_capture() {
        if std::env::var_os("LVSNIC_VM_TIMEOUT").is_some() {
            return; // the user's setting wins; nothing to check here
        }
        assert_eq!(vm_timeout_secs(0), 1200);
        // The shipped example: 974 s of capture (its VM run took 1038-1086 s).
        assert_eq!(vm_timeout_secs(974_300_000_000), 600 + 2 * 975);
    }

    #[test]
    fn lag_and_lost_frames() {
        let input = [rec(1_000, 1), rec(5_000, 2), rec(6_000, 3)];
        let sent = [rec(900_000, 1), rec(904_100, 2), rec(905_050, 3)];
        assert_eq!(max_lag_ns(&input, &sent), 100);
        assert!(check_sent(&input, &sent).is_ok());
        assert_eq!(check_sent(&input, &sent[..1]).unwrap_err().to_string(), "replay lost frames: tcpreplay sent 1 of 3 frames");
        let swapped = [rec(900_000, 2), rec(904_100, 1), rec(905_050, 3)];
        assert_eq!(check_sent(&input, &swapped).unwrap_err().to_string(), "replay lost frames: frame 0 left the tester changed or out of order");
    }

    #[test]
    fn changes_retimed_to_the_vm() {
        let dir = std::env::temp_dir().join(format!("lvsnic-applied-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("start_ns.txt"), "1000000\n").unwrap();
        std::fs::write(dir.join("changes.log"), "1.5 1600000 ok ipvsadm -C\nNo such service\n2 2100000 exit 255 ipvsadm -D -t 10.0.0.1:80\n").unwrap();
        let ch = Changes::parse("1.5 -C\n2 -D -t 10.0.0.1:80\n", "C").unwrap();
        let sent = [rec(1_200_000, 1)];
        let e = applied_changes(&dir, &ch, &sent).unwrap_err().to_string();
        assert_eq!(e, "kernel: the change of line 2 failed: exit 255 ipvsadm -D -t 10.0.0.1:80");
        let one = Changes::parse("1.5 -C\n", "C").unwrap();
        let a = applied_changes(&dir, &one, &sent).unwrap();
        assert_eq!(a.list[0].offset_ns, 1_000_000 + 1_600_000 - 1_200_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn env_names_every_knob() {
        let cfg = DirectorConfig::parse(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n[neighbors]\n\"192.168.10.1\" = \"02:00:00:00:10:01\"\n[sysctl]\nconn_reuse_mode = 2\nsecure_tcp = 1\n",
        )
        .unwrap();
        let rules = lvsnic_model::rules::ipvsadm::parse_rules("-A -t 10.0.0.100:80 -s rr\n-A -u 10.0.0.1:53\n").unwrap();
        let ch = Changes::parse("1 -A -t 10.0.0.102:80\n", "C").unwrap();
        let local = local_addresses(&cfg, &rules, &ch);
        assert_eq!(local, ["10.0.0.1".parse::<Ipv4Addr>().unwrap(), "10.0.0.100".parse().unwrap(), "10.0.0.102".parse().unwrap()]);
        let e = director_env(&cfg, &local, &local_addresses6(&cfg, &rules, &ch));
        assert!(e.contains("VIPS=\"10.0.0.100 10.0.0.102\"\n"), "{e}");
        assert!(e.contains("DIR_IP6=\n"), "{e}");
        assert!(e.contains("NEIGHBORS=\"192.168.10.1=02:00:00:00:10:01\"\n"));
        assert!(e.contains("TIMEOUTS=\"900 120 300\"\n"));
        assert!(e.contains(" conn_reuse_mode=2 "));
        assert!(e.contains(" secure_tcp=3 "), "{e}");
        assert!(e.contains("DIR_MTU=1500\n"));
        assert_eq!(changes_txt(&ch), "1 -A -t 10.0.0.102:80\n");
    }

    #[test]
    fn env_carries_ipv6() {
        let cfg = DirectorConfig::parse(
            "[director]\nip = \"10.0.0.1\"\nip6 = \"2001:db8::1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n[neighbors]\n\"2001:db8:2:1::1\" = \"02:00:0a:02:01:01\"\n",
        )
        .unwrap();
        let rules = lvsnic_model::rules::ipvsadm::parse_rules("-A -t [2001:db8:1:1::1]:80 -s rr\n-A -u 10.1.1.1:53\n").unwrap();
        let ch = Changes::parse("1 -A -u [2001:db8:1:2::1]:53\n", "C").unwrap();
        let l6 = local_addresses6(&cfg, &rules, &ch);
        let e = director_env(&cfg, &local_addresses(&cfg, &rules, &ch), &l6);
        assert!(e.contains("DIR_IP6=2001:db8::1\nGW_IP6=2001:db8:ffff:ffff::fe\n"), "{e}");
        assert!(e.contains("NEIGHBORS6=\"2001:db8:2:1::1=02:00:0a:02:01:01\"\n"), "{e}");
        assert!(e.contains("VIPS6=\"2001:db8:1:1::1 2001:db8:1:2::1\"\n"), "{e}");
        assert!(e.contains("VIPS=\"10.1.1.1\"\n"), "{e}");
    }
}
