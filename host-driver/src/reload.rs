//! `lvsnic reload` and SIGHUP: the rules a file asks for, applied to the
//! running director as the difference from what it runs, as keepalived's
//! reload does: services the file no longer has are deleted (`-D`), new
//! ones added (`-A` then their `-a`), changed ones edited (`-E`), and in a
//! service that stays, real servers deleted (`-d`), edited (`-e`) or added
//! (`-a`). A service or real server that is the same in both is not
//! touched, so its connections and their flows on the card stay.
//!
//! "The same" is decided on the `ipvsadm -S -n` lines both print
//! ([`format_save`]), so two ways of writing one rule never count as a
//! change. The commands go through [`Control::apply`], with the kernel's
//! checks; when one is refused, the ones already applied are undone (the
//! difference back to the rules before) and the reload fails: a reload
//! applies all of the file or nothing.
//!
//! DIRECTOR.toml is read again too: what can change at run time
//! (`[neighbors]`, `[timeouts]` changed in the file) is applied; a change of
//! anything that sizes or addresses the card (`[director]`, `[sysctl]`,
//! `[clock]`, `[limits]`) is refused with a message naming it, and nothing
//! is applied. Under the daemon (which learns neighbours) a static
//! neighbour may change or go: the card's action entries that used it are
//! rewritten in place, connections stay; a director without learning
//! (`cfg.resolve_neighbors` false) only takes new entries.

use crate::control::{command_line, Control};
use crate::device::Device;
use crate::invocation::Output;
use crate::limits::Limits;
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::rules::ipvsadm::{format_save, parse_rules_full, split_line, Command};
use lvsnic_model::rules::{DestRule, FwdMethod, RuleSet, ServiceRule};
use std::collections::BTreeMap;
use std::path::Path;

/// The `-A` line and the `-a` lines (by `-r` address, in the service's
/// order, with `-x`/`-y` thresholds, which `-S` does not print) of one
/// service.
fn save_lines(s: &ServiceRule) -> (String, Vec<(String, String)>) {
    let mut svc = s.clone();
    svc.dests.clear();
    let head = format_save(&RuleSet { services: vec![svc.clone()] }).lines().next().unwrap_or_default().to_string();
    let dests = s
        .dests
        .iter()
        .map(|d| {
            let mut one = svc.clone();
            one.dests = vec![d.clone()];
            let text = format_save(&RuleSet { services: vec![one] });
            let mut l = text.lines().nth(1).unwrap_or_default().to_string();
            if d.u_threshold != 0 {
                l.push_str(&format!(" -x {}", d.u_threshold));
            }
            if d.l_threshold != 0 {
                l.push_str(&format!(" -y {}", d.l_threshold));
            }
            let w = split_line(&l);
            let rs = w.iter().position(|x| *x == "-r").and_then(|i| w.get(i + 1)).copied().unwrap_or_default();
            (rs.to_string(), l)
        })
        .collect();
    (head, dests)
}

/// `rules` as `ipvsadm -R` text that loads them again exactly: services
/// and real servers in their order, thresholds included.
pub fn rules_text(rules: &RuleSet) -> String {
    let mut out = String::new();
    for s in &rules.services {
        let (h, d) = save_lines(s);
        out.push_str(&h);
        out.push('\n');
        for (_, l) in d {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

fn words(line: &str) -> Vec<String> {
    split_line(line).into_iter().map(str::to_string).collect()
}

/// The service part (`-t VIP:PORT`) of an `-A` or `-a` line.
fn service_words(line: &str) -> Vec<String> {
    words(line).into_iter().skip(1).take(2).collect()
}

/// `s` without its real servers (what `-A`/`-E` carries).
fn bare(s: &ServiceRule) -> ServiceRule {
    ServiceRule { dests: Vec::new(), ..s.clone() }
}

/// `d` as `-a`/`-e` gives it: a Local server (the kernel's choice for a
/// local address) is saved, and so asked for, as `-g`.
fn asked(d: &DestRule) -> DestRule {
    let mut d = d.clone();
    if d.fwd == FwdMethod::Local {
        d.fwd = FwdMethod::Route;
    }
    d
}

/// The ipvsadm commands that turn `from` into `to`: `-D` of the services
/// `to` has not, then per service of `to` in its order `-A` and its `-a`,
/// or `-E` if it changed, `-d` of the servers it lost, `-e` of the changed
/// ones and `-a` of the new ones.
pub fn diff(from: &RuleSet, to: &RuleSet) -> Vec<Command> {
    let old: BTreeMap<String, (&ServiceRule, String, Vec<(String, String)>)> = from
        .services
        .iter()
        .map(|s| {
            let (h, d) = save_lines(s);
            (service_words(&h).join(" "), (s, h, d))
        })
        .collect();
    let mut cmds = Vec::new();
    let new_keys: Vec<String> = to.services.iter().map(|s| service_words(&save_lines(s).0).join(" ")).collect();
    for (k, (s, _, _)) in &old {
        if !new_keys.contains(k) {
            cmds.push(Command::DeleteService(s.key));
        }
    }
    for s in &to.services {
        let (h, dests) = save_lines(s);
        let k = service_words(&h).join(" ");
        match old.get(&k) {
            None => {
                cmds.push(Command::AddService(bare(s)));
                cmds.extend(s.dests.iter().map(|d| Command::AddDest(s.key, asked(d))));
            }
            Some((os, oh, od)) => {
                if *oh != h {
                    cmds.push(Command::EditService(bare(s)));
                }
                for ((rs, _), d) in od.iter().zip(&os.dests) {
                    if !dests.iter().any(|(r, _)| r == rs) {
                        cmds.push(Command::DeleteDest(os.key, d.addr, d.port));
                    }
                }
                for ((rs, l), d) in dests.iter().zip(&s.dests) {
                    match od.iter().find(|(r, _)| r == rs) {
                        None => cmds.push(Command::AddDest(s.key, asked(d))),
                        Some((_, ol)) if ol != l => cmds.push(Command::EditDest(s.key, asked(d))),
                        Some(_) => {}
                    }
                }
            }
        }
    }
    cmds
}

/// Makes the director run `to`: the difference from its rules, applied in
/// order ([`Control::apply`]); on a refusal, what was applied is undone
/// and the error returned. `Ok` carries the commands applied.
pub fn converge<D: Device>(ctl: &mut Control<D>, to: &RuleSet) -> Result<Vec<Command>, String> {
    let before = ctl.director().services.to_rules();
    let cmds = diff(&before, to);
    for (i, c) in cmds.iter().enumerate() {
        if let Err(e) = ctl.apply(c.clone()) {
            let undo = diff(&ctl.director().services.to_rules(), &before);
            for u in undo {
                let _ = ctl.apply(u);
            }
            return Err(format!("`{}` refused: {} ({} change(s) undone, nothing applied)", command_line(c), e, i));
        }
    }
    Ok(cmds)
}

/// `text` (`ipvsadm -R` lines) with the real servers of each checked
/// service as its checkers' state at start has them
/// ([`VsState::desired`](crate::health::state::VsState::desired) of
/// [`VsState::initial`](crate::health::state::VsState::initial)): absent,
/// or at the weight they serve with.
pub fn with_holdings(text: &str, cfg: &crate::health::config::HealthConfig) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for vs in &cfg.services {
        let st = crate::health::state::VsState::initial(vs);
        let (reals, sorry) = st.desired();
        let dests: Vec<(&crate::health::config::DestHealth, Option<u32>)> =
            vs.reals.iter().map(|r| &r.dest).zip(reals).chain(vs.sorry.iter().map(|s| (s, sorry))).collect();
        let svc = vs.service.clone();
        lines.retain(|l| {
            let w = words(l);
            !(w.first().map(String::as_str) == Some("-a")
                && w.get(1..3) == Some(&svc[..])
                && dests.iter().any(|(d, _)| w.get(3..5) == d.dest.get(0..2)))
        });
        for (d, h) in dests {
            if let Some(wt) = h {
                lines.push(format!("-a {} {} -w {wt}", svc.join(" "), d.dest.join(" ")));
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The service part (`-t VIP:PORT`) of each service of `rules`.
pub fn service_ids(rules: &RuleSet) -> Vec<String> {
    rules.services.iter().map(|s| service_words(&save_lines(s).0).join(" ")).collect()
}

/// What DIRECTOR.toml may change at run time, from `loaded` (the file as
/// the daemon last read it) to `file` (as it is now); an error names the
/// first thing that may not.
fn director_changes(
    running: &DirectorConfig,
    loaded: &(DirectorConfig, Limits),
    file: &(DirectorConfig, Limits),
) -> Result<Vec<String>, String> {
    let (o, f) = (&loaded.0, &file.0);
    let fixed: [(&str, bool); 9] = [
        ("[director] ip", o.ip != f.ip),
        // The card's IP6 registers (IPv6 tunnel source) are written at start.
        ("[director] ip6", o.ip6 != f.ip6),
        ("[director] mac", o.mac != f.mac),
        ("[director] mtu", o.mtu != f.mtu),
        ("[director] gateway_mac", o.gateway_mac != f.gateway_mac),
        ("[director] gateway", o.gateway != f.gateway),
        ("[director] vlan", o.vlan != f.vlan),
        ("[sysctl]", o.sysctl != f.sysctl),
        ("[clock]", o.clock != f.clock),
    ];
    if let Some((what, _)) = fixed.iter().find(|(_, changed)| *changed) {
        return Err(format!("{what} cannot change while the daemon runs (restart it to apply)"));
    }
    if loaded.1 != file.1 {
        return Err("[limits] cannot change while the daemon runs (restart it to apply)".into());
    }
    let mut notes = Vec::new();
    for (ip, mac) in &running.neighbors {
        match f.neighbors.get(ip) {
            Some(m) if m == mac => {}
            // With learned neighbours (the daemon) a static entry can
            // change or go: the card's actions are rewritten in place, and
            // a removed entry's address is resolved like any other.
            Some(m) if running.resolve_neighbors => notes.push(format!("neighbor {ip} {m}")),
            None if running.resolve_neighbors => notes.push(format!("neighbor {ip} removed (learned from now on)")),
            Some(_) => return Err(format!("[neighbors] {ip}: a neighbor's MAC cannot change while the daemon runs (restart it to apply)")),
            None => return Err(format!("[neighbors] {ip}: a neighbor cannot be removed while the daemon runs (restart it to apply)")),
        }
    }
    for ip in f.neighbors.keys().filter(|ip| !running.neighbors.contains_key(ip)) {
        notes.push(format!("neighbor {ip} added"));
    }
    if o.timeouts != f.timeouts {
        let (t, fi, u) = f.timeouts.get();
        notes.push(format!("timeouts {t} {fi} {u}"));
    }
    Ok(notes)
}

/// `lvsnic reload`: DIRECTOR.toml at `director` (last read as `loaded`,
/// updated on success) and the rules `rules_text` (the rules file's text,
/// or what `lvsnic keepalived --load` sends), applied as differences.
/// The reply lists what changed; a refusal changes nothing and exits 1.
pub fn reload<D: Device>(
    ctl: &mut Control<D>,
    director: Option<&Path>,
    loaded: &mut Option<(DirectorConfig, Limits)>,
    rules_text: Option<(&str, &str)>,
) -> Output {
    let fail = |msg: String| Output { stdout: String::new(), stderr: format!("lvsnic reload: {msg}\n"), exit: 1 };
    // Everything is read and checked before anything changes.
    let file = match (director, loaded.as_ref()) {
        (Some(p), Some(_)) => match crate::limits::load_director(p) {
            Ok(f) => Some(f),
            Err(e) => return fail(e.to_string()),
        },
        _ => None,
    };
    let script = match rules_text {
        None => None,
        Some((name, text)) => match parse_rules_full(text) {
            Ok(s) => Some(s),
            Err(e) => return fail(format!("{name}: {e}")),
        },
    };
    let notes = match (&file, loaded.as_ref()) {
        (Some(f), Some(l)) => match director_changes(&ctl.director().cfg, l, f) {
            Ok(n) => n,
            Err(e) => return fail(format!("{}: {e}", director.map(|p| p.display().to_string()).unwrap_or_default())),
        },
        _ => Vec::new(),
    };
    let mut out = Output::default();
    let cfg = ctl.config_mut();
    let (prev_neighbors, prev_timeouts) = (cfg.neighbors.clone(), cfg.timeouts.get());
    if let Some(f) = &file {
        let mut statics = cfg.neighbors.clone();
        if cfg.resolve_neighbors {
            statics = f.0.neighbors.clone();
        } else {
            for (ip, mac) in &f.0.neighbors {
                statics.entry(*ip).or_insert(*mac);
            }
        }
        if loaded.as_ref().is_some_and(|l| l.0.timeouts != f.0.timeouts) {
            let (t, fi, u) = f.0.timeouts.get();
            cfg.timeouts.set(t, fi, u);
        }
        ctl.set_static_neighbors(statics);
    }
    if let Some(s) = &script {
        if let Some(t) = s.timeouts {
            ctl.set_timeouts(t.tcp, t.tcpfin, t.udp);
        }
        match converge(ctl, &s.rules) {
            Ok(cmds) => {
                for c in &cmds {
                    out.stdout.push_str(&format!("lvsnic {}\n", command_line(c)));
                }
            }
            Err(e) => {
                ctl.set_static_neighbors(prev_neighbors);
                let cfg = ctl.config_mut();
                cfg.timeouts.set(prev_timeouts.0, prev_timeouts.1, prev_timeouts.2);
                return fail(e);
            }
        }
    }
    if let Some(f) = file {
        *loaded = Some(f);
    }
    for n in notes {
        out.stdout.push_str(&format!("{n}\n"));
    }
    if out.stdout.is_empty() {
        out.stdout.push_str("no change\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lvsnic_model::rules::ipvsadm::parse_rules;

    fn rules(t: &str) -> RuleSet {
        parse_rules(t).unwrap()
    }

    fn lines(c: &[Command]) -> Vec<String> {
        c.iter().map(command_line).collect()
    }

    #[test]
    fn thresholds_are_compared_and_kept() {
        let a = rules("-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\n");
        let b = rules("-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1 -x 100 -y 50\n");
        assert_eq!(lines(&diff(&a, &b)), ["-e -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1 -x 100 -y 50"]);
        assert_eq!(parse_rules(&rules_text(&b)).unwrap(), b);
    }

    #[test]
    fn same_rules_no_commands() {
        let a = rules("-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\n");
        // Written another way: the same rules.
        let b = rules("--add-service --tcp-service 10.0.0.1:80 --scheduler rr\n-a -t 10.0.0.1:80 -r 10.0.1.1 -m\n");
        assert!(diff(&a, &b).is_empty(), "{:?}", diff(&a, &b));
    }

    #[test]
    fn services_and_servers_added_removed_edited() {
        let a = rules(
            "-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\n-a -t 10.0.0.1:80 -r 10.0.1.2:80 -m -w 1\n\
             -A -t 10.0.0.2:80 -s wlc\n-a -t 10.0.0.2:80 -r 10.0.1.1:80 -g -w 1\n\
             -A -u 10.0.0.3:53 -s rr\n-a -u 10.0.0.3:53 -r 10.0.1.1:53 -m -w 1\n",
        );
        let b = rules(
            "-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 3\n-a -t 10.0.0.1:80 -r 10.0.1.3:80 -m -w 1\n\
             -A -t 10.0.0.2:80 -s wlc -p 60\n-a -t 10.0.0.2:80 -r 10.0.1.1:80 -g -w 1\n\
             -A -t 10.0.0.4:443 -s sh\n-a -t 10.0.0.4:443 -r 10.0.1.4:443 -m -w 1\n",
        );
        assert_eq!(
            lines(&diff(&a, &b)),
            [
                "-D -u 10.0.0.3:53",
                "-d -t 10.0.0.1:80 -r 10.0.1.2:80",
                "-e -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 3",
                "-a -t 10.0.0.1:80 -r 10.0.1.3:80 -m -w 1",
                "-E -t 10.0.0.2:80 -s wlc -p 60",
                "-A -t 10.0.0.4:443 -s sh",
                "-a -t 10.0.0.4:443 -r 10.0.1.4:443 -m -w 1",
            ]
        );
        // And back.
        assert_eq!(
            lines(&diff(&b, &a)),
            [
                "-D -t 10.0.0.4:443",
                "-d -t 10.0.0.1:80 -r 10.0.1.3:80",
                "-e -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1",
                "-a -t 10.0.0.1:80 -r 10.0.1.2:80 -m -w 1",
                "-E -t 10.0.0.2:80 -s wlc",
                "-A -u 10.0.0.3:53 -s rr",
                "-a -u 10.0.0.3:53 -r 10.0.1.1:53 -m -w 1",
            ]
        );
    }

    #[test]
    fn static_neighbours_change_only_where_neighbours_are_learned() {
        let head = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n";
        let cfg = |nb: &str| DirectorConfig::parse(&format!("{head}[neighbors]\n{nb}")).unwrap();
        let a = cfg("\"192.168.10.1\" = \"02:00:00:00:10:01\"\n");
        let b = cfg("\"192.168.10.1\" = \"02:00:00:00:10:11\"\n");
        let none = cfg("");
        let lim = Limits::default();
        let (la, lb, ln) = ((a.clone(), lim), (b.clone(), lim), (none.clone(), lim));
        let e = director_changes(&a, &la, &lb).unwrap_err();
        assert!(e.contains("a neighbor's MAC cannot change"), "{e}");
        assert!(director_changes(&a, &la, &ln).unwrap_err().contains("cannot be removed"));
        let mut learning = a.clone();
        learning.resolve_neighbors = true;
        assert_eq!(director_changes(&learning, &la, &lb).unwrap(), vec!["neighbor 192.168.10.1 02:00:00:00:10:11".to_string()]);
        assert_eq!(
            director_changes(&learning, &la, &ln).unwrap(),
            vec!["neighbor 192.168.10.1 removed (learned from now on)".to_string()]
        );
    }
}
