//! keepalived's state machines (check/check_api.c, check_*.c epilogues,
//! ipwrapper.c), without I/O:
//!
//! * [`CheckerMachine`]: one checker's up/down state and retry counter.
//!   A failure while up (or before the first result) is retried `retry`
//!   times, `delay_before_retry` apart; the next failure takes the checker
//!   down. A success takes it up at once. Between results: `delay_loop`.
//! * [`VsState`]: the real servers of one service. A server is alive when
//!   all its checkers are up; its live weight is its configured weight, or
//!   what `misc_dynamic` set. The quorum is gained when the live weight sum
//!   reaches `quorum + hysteresis`, lost when it falls below
//!   `quorum - hysteresis` (or to 0). While the quorum is down and there is
//!   a `sorry_server`, the sorry server is the pool: alive servers are
//!   taken out (weight 0 under `inhibit_on_failure`) and come back with
//!   the quorum. A server that is not alive is removed, or kept at weight
//!   0 under `inhibit_on_failure`.
//!
//! [`VsState::desired`] is what IPVS should hold; [`VsState::changes`] the
//! typed commands (`-a`, `-e`, `-d`) from one holding to the next, which
//! the daemon applies with [`Control::apply`](crate::control::Control::apply).

use super::config::VsHealth;
use lvsnic_model::rules::ipvsadm::{parse_command, Command};
use lvsnic_model::rules::{DestRule, ServiceKey};
use std::time::Duration;

/// IPVS's largest weight.
const IPVS_WEIGHT_MAX: u32 = 65535;

/// One checker's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckerMachine {
    /// The checker's verdict.
    pub is_up: bool,
    /// A result has been seen.
    pub has_run: bool,
    /// Failures retried so far.
    pub retry_it: u32,
    retry: u32,
    delay_loop: Duration,
    delay_before_retry: Duration,
}

impl CheckerMachine {
    /// A checker that starts up (down with `alpha`).
    pub fn new(alpha: bool, retry: u32, delay_loop: Duration, delay_before_retry: Duration) -> Self {
        CheckerMachine { is_up: !alpha, has_run: false, retry_it: 0, retry, delay_loop, delay_before_retry }
    }

    /// One result: the new state when it changed, and when to check next.
    pub fn result(&mut self, ok: bool) -> (Option<bool>, Duration) {
        if ok {
            self.retry_it = 0;
            self.has_run = true;
            let changed = !self.is_up;
            self.is_up = true;
            return (changed.then_some(true), self.delay_loop);
        }
        if !self.is_up && self.has_run {
            return (None, self.delay_loop);
        }
        self.has_run = true;
        if self.retry_it < self.retry {
            self.retry_it += 1;
            return (None, self.delay_before_retry);
        }
        self.retry_it = 0;
        let changed = self.is_up;
        self.is_up = false;
        (changed.then_some(false), self.delay_loop)
    }
}

/// A real server's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RsState {
    /// Checkers currently down.
    pub failed: usize,
    /// The weight it serves with (configured, or `misc_dynamic`'s).
    pub weight: u32,
}

impl RsState {
    /// All checkers up.
    pub fn alive(&self) -> bool {
        self.failed == 0
    }
}

/// What IPVS holds for one destination: absent, or present with a weight.
pub type Holding = Option<u32>;

/// One service's state.
#[derive(Clone, Debug)]
pub struct VsState {
    /// The configuration.
    pub cfg: VsHealth,
    /// Per real server, in configuration order.
    pub rs: Vec<RsState>,
    /// Whether the quorum is up.
    pub quorum_up: bool,
    /// The service and its real servers (the sorry server last) as typed
    /// rules, read once from `cfg`'s ipvsadm words; why not, if they do
    /// not read ([`Health::start`](super::Health::start) refuses that).
    pub typed: Result<(ServiceKey, Vec<DestRule>), String>,
}

/// The service key and real server rules of `cfg` (real servers in order,
/// then the sorry server), from its `-t VIP:PORT` and `-r ...` words.
fn typed(cfg: &VsHealth) -> Result<(ServiceKey, Vec<DestRule>), String> {
    let mut key = None;
    let mut dests = Vec::new();
    for d in cfg.reals.iter().map(|r| &r.dest).chain(cfg.sorry.iter()) {
        let mut words = vec!["-a"];
        words.extend(cfg.service.iter().map(String::as_str));
        words.extend(d.dest.iter().map(String::as_str));
        match parse_command(&words) {
            Ok(Command::AddDest(k, rule)) => {
                key = Some(k);
                dests.push(rule);
            }
            Ok(_) => return Err(format!("`{}` is not a real server", words.join(" "))),
            Err(e) => return Err(format!("`{}`: {e}", words.join(" "))),
        }
    }
    match key {
        Some(k) => Ok((k, dests)),
        // No server to check: the service alone must read.
        None => {
            let mut words = vec!["-D"];
            words.extend(cfg.service.iter().map(String::as_str));
            match parse_command(&words) {
                Ok(Command::DeleteService(k)) => Ok((k, dests)),
                Ok(_) => Err(format!("`{}` is not a service", cfg.service.join(" "))),
                Err(e) => Err(format!("`{}`: {e}", cfg.service.join(" "))),
            }
        }
    }
}

impl VsState {
    /// The state at start: servers with `alpha` checkers down, the quorum
    /// as the live weight gives it (keepalived's `set_quorum_states`).
    pub fn initial(cfg: &VsHealth) -> Self {
        let rs: Vec<RsState> = cfg
            .reals
            .iter()
            .map(|r| RsState { failed: r.checkers.iter().filter(|c| c.alpha).count(), weight: r.dest.weight })
            .collect();
        let mut v = VsState { cfg: cfg.clone(), rs, quorum_up: false, typed: typed(cfg) };
        // A total weight of 0 keeps the quorum down whatever `quorum` says
        // (keepalived 2.2.7, seen in the VM).
        let total: u64 = cfg.reals.iter().map(|r| r.dest.weight.min(IPVS_WEIGHT_MAX) as u64).sum();
        v.quorum_up = total > 0 && v.live_weight() >= cfg.quorum + cfg.hysteresis;
        v
    }

    /// Sum of the alive servers' weights.
    pub fn live_weight(&self) -> u64 {
        self.rs.iter().filter(|r| r.alive()).map(|r| r.weight.min(IPVS_WEIGHT_MAX) as u64).sum()
    }

    /// keepalived's `update_quorum_state`; returns whether it changed.
    pub fn update_quorum(&mut self) -> bool {
        let sum = self.live_weight();
        let (q, h) = (self.cfg.quorum, self.cfg.hysteresis);
        if !self.quorum_up && sum >= q + h {
            self.quorum_up = true;
            return true;
        }
        if self.quorum_up && (sum == 0 || sum < q.saturating_sub(h)) {
            self.quorum_up = false;
            return true;
        }
        false
    }

    /// The sorry server is the pool.
    pub fn sorry_active(&self) -> bool {
        self.cfg.sorry.is_some() && !self.quorum_up
    }

    /// What IPVS should hold: per real server, then the sorry server.
    pub fn desired(&self) -> (Vec<Holding>, Holding) {
        let sorry = self.sorry_active();
        let rs = self
            .cfg
            .reals
            .iter()
            .zip(&self.rs)
            .map(|(c, s)| {
                if s.alive() && !sorry {
                    Some(s.weight.min(IPVS_WEIGHT_MAX))
                } else if c.dest.inhibit {
                    Some(0)
                } else {
                    None
                }
            })
            .collect();
        let ss = match &self.cfg.sorry {
            Some(s) if sorry => Some(s.weight),
            Some(s) if s.inhibit => Some(0),
            _ => None,
        };
        (rs, ss)
    }

    /// A checker of real server `i` went up (`true`) or down.
    pub fn checker_changed(&mut self, i: usize, up: bool) {
        let r = &mut self.rs[i];
        if up {
            r.failed = r.failed.saturating_sub(1);
        } else {
            r.failed += 1;
        }
        self.update_quorum();
    }

    /// `misc_dynamic` set real server `i`'s weight.
    pub fn set_weight(&mut self, i: usize, w: u32) -> bool {
        if self.rs[i].weight == w {
            return false;
        }
        self.rs[i].weight = w;
        self.update_quorum();
        true
    }

    /// The commands that take IPVS from `from` to `to` (servers removed
    /// first, then the rest); none if `cfg` did not read ([`Self::typed`]).
    pub fn changes(&self, from: &(Vec<Holding>, Holding), to: &(Vec<Holding>, Holding)) -> Vec<Command> {
        let Ok((key, dests)) = &self.typed else { return Vec::new() };
        let mut dels = Vec::new();
        let mut rest = Vec::new();
        let pairs = from.0.iter().zip(&to.0).chain(self.cfg.sorry.iter().map(|_| (&from.1, &to.1)));
        for (d, (a, b)) in dests.iter().zip(pairs) {
            let at = |w: u32| DestRule { weight: w, ..d.clone() };
            match (a, b) {
                (Some(_), None) => dels.push(Command::DeleteDest(*key, d.addr, d.port)),
                (None, Some(w)) => rest.push(Command::AddDest(*key, at(*w))),
                (Some(x), Some(w)) if x != w => rest.push(Command::EditDest(*key, at(*w))),
                _ => {}
            }
        }
        dels.extend(rest);
        dels
    }
}

/// A reload's checkers keep the state of the running ones: in `new`, a
/// real server of a service `old` also has (same `-r` arguments) whose
/// checkers are configured the same (their place in the file aside)
/// starts with each checker as it is now (`up[service][server][checker]`
/// of `old`): a server found dead stays out, one found alive stays in,
/// as keepalived's reload keeps a checker's state. Returns how many
/// servers kept theirs.
pub fn carry_over(new: &mut super::config::HealthConfig, old: &super::config::HealthConfig, up: &[Vec<Vec<bool>>]) -> usize {
    let same = |a: &super::config::CheckerConfig, b: &super::config::CheckerConfig| {
        let (mut a, mut b) = (a.clone(), b.clone());
        a.alpha = false;
        b.alpha = false;
        a.origin.clear();
        b.origin.clear();
        a == b
    };
    let mut kept = 0;
    for vs in &mut new.services {
        let Some(oi) = old.services.iter().position(|o| o.service == vs.service) else { continue };
        for rs in &mut vs.reals {
            let Some(ri) = old.services[oi].reals.iter().position(|o| o.dest.dest == rs.dest.dest) else { continue };
            let ors = &old.services[oi].reals[ri];
            let Some(states) = up.get(oi).and_then(|s| s.get(ri)) else { continue };
            if ors.checkers.len() != rs.checkers.len()
                || states.len() != rs.checkers.len()
                || !ors.checkers.iter().zip(&rs.checkers).all(|(a, b)| same(a, b))
            {
                continue;
            }
            for (c, &is_up) in rs.checkers.iter_mut().zip(states) {
                c.alpha = !is_up;
            }
            kept += 1;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::super::config::{CheckKind, CheckerConfig, DestHealth, RsHealth, Target};
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn retries_then_down_then_up() {
        let mut c = CheckerMachine::new(false, 2, ms(1000), ms(100));
        assert_eq!(c.result(true), (None, ms(1000)));
        assert_eq!(c.result(false), (None, ms(100)));
        assert_eq!(c.result(false), (None, ms(100)));
        assert_eq!(c.result(false), (Some(false), ms(1000)));
        // Down: failures change nothing, are not retried.
        assert_eq!(c.result(false), (None, ms(1000)));
        assert_eq!(c.result(true), (Some(true), ms(1000)));
        // A success resets the retry count.
        assert_eq!(c.result(false), (None, ms(100)));
        assert_eq!(c.result(true), (None, ms(1000)));
        assert_eq!(c.retry_it, 0);
    }

    #[test]
    fn alpha_starts_down() {
        let mut c = CheckerMachine::new(true, 1, ms(1000), ms(100));
        assert!(!c.is_up);
        // Before the first result failures are retried, then stay down silently.
        assert_eq!(c.result(false), (None, ms(100)));
        assert_eq!(c.result(false), (None, ms(1000)));
        assert_eq!(c.result(true), (Some(true), ms(1000)));
    }

    fn dest(a: &str, w: u32, inhibit: bool) -> DestHealth {
        DestHealth { dest: vec!["-r".into(), a.into(), "-m".into()], weight: w, inhibit }
    }

    fn rs(a: &str, w: u32, inhibit: bool, alpha: bool) -> RsHealth {
        let c = CheckerConfig {
            kind: CheckKind::Tcp(Target { addr: "127.0.0.1:1".parse().unwrap(), timeout: ms(100), bind: None, bind_if: None }),
            delay_loop: ms(1000),
            retry: 0,
            delay_before_retry: ms(100),
            alpha,
            warmup: Duration::ZERO,
            origin: String::new(),
        };
        RsHealth { dest: dest(a, w, inhibit), name: a.into(), checkers: vec![c], notify_up: None, notify_down: None }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn carry_over_keeps_the_state_of_unchanged_servers_only() {
        let vs = |reals: Vec<RsHealth>| VsHealth {
            service: s(&["-t", "10.0.0.1:80"]),
            quorum: 1,
            hysteresis: 0,
            sorry: None,
            reals,
            quorum_up: None,
            quorum_down: None,
        };
        let old = super::super::config::HealthConfig {
            services: vec![vs(vec![rs("10.1.0.1:80", 1, false, false), rs("10.1.0.2:80", 1, false, false), rs("10.1.0.3:80", 1, false, false)])],
            ..Default::default()
        };
        // rs1 found dead, rs2 and rs3 alive.
        let up = vec![vec![vec![false], vec![true], vec![true]]];
        let mut changed = rs("10.1.0.3:80", 1, false, false);
        changed.checkers[0].retry = 5;
        let mut alpha2 = rs("10.1.0.2:80", 1, false, true);
        alpha2.checkers[0].origin = "other.conf:9".into();
        let mut new = super::super::config::HealthConfig {
            services: vec![vs(vec![rs("10.1.0.1:80", 1, false, false), alpha2, changed, rs("10.1.0.4:80", 1, false, false)])],
            ..Default::default()
        };
        assert_eq!(carry_over(&mut new, &old, &up), 2);
        let alpha: Vec<bool> = new.services[0].reals.iter().map(|r| r.checkers[0].alpha).collect();
        // rs1 stays down, rs2 stays up (its `alpha` no longer matters),
        // rs3's checker changed and rs4 is new: as configured.
        assert_eq!(alpha, [true, false, false, false]);
        let st = VsState::initial(&new.services[0]);
        assert_eq!(st.desired().0, [None, Some(1), Some(1), Some(1)]);
    }

    /// A checker that finds a server down makes typed commands that the
    /// control plane applies: `-d` of a server, `-e -w 0` of an inhibited
    /// one; the same `-d` once more is refused, typed.
    #[test]
    fn typed_changes_reach_the_control_plane() {
        use crate::control::{Control, KernelError};
        use crate::device::model::{ModelDevice, MODEL_PARAMS};
        use crate::device::rings::RingConfig;
        use crate::slowpath::SlowPath;
        use lvsnic_fixtures::{director, MIXED_RULES};
        let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
        let sp = SlowPath::new(director(MIXED_RULES, ""), dev, MODEL_PARAMS).unwrap();
        let mut ctl = Control::new(sp, MODEL_PARAMS.vip_count, Default::default());
        let cfg = VsHealth {
            service: s(&["-t", "10.0.0.100:80"]),
            quorum: 1,
            hysteresis: 0,
            sorry: None,
            reals: vec![rs("192.168.10.1:8080", 3, false, false), rs("192.168.10.2:8080", 1, true, false)],
            quorum_up: None,
            quorum_down: None,
        };
        let mut v = VsState::initial(&cfg);
        let weights = |ctl: &Control<ModelDevice>| -> Vec<(String, u32)> {
            let r = ctl.director().services.to_rules();
            let svc = r.services.iter().find(|x| x.key.to_string() == "-t 10.0.0.100:80").unwrap();
            svc.dests.iter().map(|d| (format!("{}:{}", d.addr, d.port), d.weight)).collect()
        };
        assert_eq!(weights(&ctl), [("192.168.10.1:8080".to_string(), 3), ("192.168.10.2:8080".to_string(), 1)]);
        let d0 = v.desired();
        v.checker_changed(0, false);
        v.checker_changed(1, false);
        let cmds = v.changes(&d0, &v.desired());
        let key = lvsnic_model::rules::ServiceKey::Addr {
            proto: lvsnic_model::rules::Protocol::Tcp,
            addr: "10.0.0.100".parse().unwrap(),
            port: 80,
        };
        assert_eq!(cmds[0], Command::DeleteDest(key, "192.168.10.1".parse().unwrap(), 8080));
        assert!(matches!(&cmds[1], Command::EditDest(k, d) if *k == key && d.weight == 0 && d.port == 8080), "{cmds:?}");
        for c in &cmds {
            ctl.apply(c.clone()).unwrap();
        }
        assert_eq!(weights(&ctl), [("192.168.10.2:8080".to_string(), 0)]);
        let e = ctl.apply(cmds[0].clone()).unwrap_err();
        assert!(matches!(e, KernelError::Refused(lvsnic_model::rules::ipvsadm::ApplyError::NoSuchDest)), "{e:?}");
    }

    #[test]
    fn a_server_that_does_not_read_is_refused_at_start() {
        let mut bad = rs("192.168.10.1:8080", 1, false, false);
        bad.dest.dest = s(&["-r", "nosuchhost:80", "-m"]);
        let cfg = VsHealth {
            service: s(&["-t", "10.0.0.100:80"]),
            quorum: 1,
            hysteresis: 0,
            sorry: None,
            reals: vec![bad],
            quorum_up: None,
            quorum_down: None,
        };
        let v = VsState::initial(&cfg);
        let e = v.typed.as_ref().unwrap_err();
        assert!(e.starts_with("`-a -t 10.0.0.100:80 -r nosuchhost:80 -m`: "), "{e}");
        assert!(v.changes(&(vec![Some(1)], None), &(vec![None], None)).is_empty());
        let h = super::super::Health::start(super::super::config::HealthConfig { services: vec![cfg], ..Default::default() });
        let e = h.err().expect("refused").to_string();
        assert!(e.starts_with("health check of `-a -t 10.0.0.100:80"), "{e}");
    }

    #[test]
    fn sorry_server_and_hysteresis() {
        let cfg = VsHealth {
            service: s(&["-t", "10.0.0.1:80"]),
            quorum: 3,
            hysteresis: 1,
            sorry: Some(dest("10.9.9.9:80", 1, false)),
            reals: vec![rs("10.1.0.1:80", 2, false, false), rs("10.1.0.2:80", 2, true, true)],
            quorum_up: None,
            quorum_down: None,
        };
        let mut v = VsState::initial(&cfg);
        // Live weight 2 < 3 + 1: quorum down, the sorry server serves, the
        // alive server is out, the inhibited one at weight 0.
        assert!(!v.quorum_up);
        let d0 = v.desired();
        assert_eq!(d0, (vec![None, Some(0)], Some(1)));
        v.checker_changed(1, true);
        assert!(v.quorum_up);
        let d1 = v.desired();
        assert_eq!(d1, (vec![Some(2), Some(2)], None));
        let lines: Vec<String> = v.changes(&d0, &d1).iter().map(crate::control::command_line).collect();
        assert_eq!(
            lines,
            vec![
                "-d -t 10.0.0.1:80 -r 10.9.9.9:80",
                "-a -t 10.0.0.1:80 -r 10.1.0.1:80 -m -w 2",
                "-e -t 10.0.0.1:80 -r 10.1.0.2:80 -m -w 2",
            ]
        );
        // 2 >= 3 - 1: hysteresis keeps the quorum.
        v.checker_changed(0, false);
        assert!(v.quorum_up);
        assert_eq!(v.desired(), (vec![None, Some(2)], None));
        // Weight 1 < 2: lost.
        assert!(v.set_weight(1, 1));
        assert!(!v.quorum_up);
        assert_eq!(v.desired(), (vec![None, Some(0)], Some(1)));
    }
}
