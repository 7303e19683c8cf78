//! Health checks in the daemon, with keepalived's semantics: `TCP_CHECK`,
//! `HTTP_GET`, `SSL_GET` and `MISC_CHECK` of the real servers of the services
//! `lvsnic keepalived FILE --load` loaded.
//!
//! * [`config`]: what is checked and how often (from keepalived.conf,
//!   sent on the control socket).
//! * [`state`]: keepalived's checker, real server and quorum state
//!   machines, and the ipvsadm commands that follow from them.
//! * [`runner`]: one thread per checker; results reach the daemon over a
//!   channel, so checks never block the exception loop.
//! * [`tcp`], [`http`] (with [`md5`] for `digest`), [`ssl`] (`HTTP_GET`
//!   over TLS), [`misc`]: the checks.
//!
//! [`Health`] is what the daemon holds: it drains the results between
//! frames ([`Health::poll`]) and returns typed commands (`-a`, `-e -w`,
//! `-d`), which the daemon applies with
//! [`Control::apply`](crate::control::Control::apply), as `lvsnic -a/-e/-d`
//! are applied; [`Health::listing`] is `lvsnic checkers`, and
//! [`Health::counters`] goes into `lvsnic status`.

pub mod config;
pub mod http;
pub mod md5;
pub mod misc;
pub mod runner;
pub mod ssl;
pub mod state;
pub mod tcp;

use config::HealthConfig;
use lvsnic_model::rules::ipvsadm::Command;
use runner::{Event, Stop};
use serde::Serialize;
use state::{Holding, VsState};
use std::fmt::Write;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

/// What one check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// It passed.
    pub ok: bool,
    /// Why, one line.
    pub detail: String,
    /// `misc_dynamic`: the weight the server should have.
    pub weight: Option<u32>,
}

impl Outcome {
    /// A pass.
    pub fn up(detail: String) -> Self {
        Outcome { ok: true, detail, weight: None }
    }
    /// A failure.
    pub fn down(detail: String) -> Self {
        Outcome { ok: false, detail, weight: None }
    }
}

/// Counters of the health checkers (in `lvsnic status`, `health`).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct HealthCounters {
    /// Checkers running.
    pub checkers: u64,
    /// Checks run.
    pub checks: u64,
    /// Checks that failed.
    pub failures: u64,
    /// Checkers that went down.
    pub checker_down: u64,
    /// Checkers that came back up.
    pub checker_up: u64,
    /// Weights `misc_dynamic` changed.
    pub weight_changes: u64,
    /// Sorry servers put in (quorum lost).
    pub sorry_in: u64,
    /// Sorry servers taken out (quorum back).
    pub sorry_out: u64,
    /// Notify scripts started (`notify_up/down`, `quorum_up/down`).
    pub notifies: u64,
    /// ipvsadm commands the checkers ran.
    pub commands: u64,
    /// Scripts (`MISC_CHECK`, notify) not run: their user or path failed
    /// keepalived's checks ([`misc::vet`]).
    pub scripts_refused: u64,
    /// Of those, refused by the control plane.
    pub command_errors: u64,
}

/// One checker as listed.
#[derive(Clone, Debug)]
struct CheckerView {
    keyword: &'static str,
    what: String,
    origin: String,
    retry: u32,
    is_up: bool,
    retry_it: u32,
    checks: u64,
    failures: u64,
    last: String,
}

/// One checker's state now (the metrics' `lvsnic_health_checker_up`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckerState {
    /// The service as ipvsadm names it, e.g. `["-t", "10.0.0.1:80"]`.
    pub service: Vec<String>,
    /// The real server, `ADDR:PORT`.
    pub real_server: String,
    /// The checker's keyword (`TCP_CHECK`, `HTTP_GET`, ...).
    pub checker: &'static str,
    /// What it checks, as `lvsnic checkers` shows it.
    pub target: String,
    /// Whether it is up.
    pub up: bool,
    /// Checks it ran.
    pub checks: u64,
    /// Of those, failed.
    pub failures: u64,
}

/// The running checkers and the state they maintain.
pub struct Health {
    vss: Vec<VsState>,
    held: Vec<(Vec<Holding>, Holding)>,
    views: Vec<Vec<Vec<CheckerView>>>,
    rx: Receiver<Event>,
    stop: Arc<Stop>,
    /// The counters.
    pub counters: HealthCounters,
    /// The last command the control plane refused, and why.
    pub last_error: Option<String>,
    /// Who runs the notify scripts ([`misc::vet`]; None: not run).
    notify_as: Option<config::RunAs>,
    /// The scripts [`misc::vet`] refused or warned about, one line each.
    pub script_notes: Vec<String>,
}

impl Health {
    /// Starts the checkers of `cfg`; IPVS is assumed to hold the state at
    /// start ([`VsState::desired`] of [`VsState::initial`], what
    /// `lvsnic keepalived --load` loaded).
    pub fn start(mut cfg: HealthConfig) -> std::io::Result<Health> {
        // Who runs each script and from where, before any runs.
        let script_notes = misc::vet(&mut cfg);
        let (tx, rx) = channel();
        let stop = Arc::new(Stop::default());
        let mut h = Health {
            vss: Vec::new(),
            held: Vec::new(),
            views: Vec::new(),
            rx,
            stop: stop.clone(),
            counters: HealthCounters::default(),
            last_error: None,
            notify_as: cfg.notify_as,
            script_notes,
        };
        h.counters.scripts_refused = h.script_notes.iter().filter(|n| n.ends_with(": not run")).count() as u64;
        for (vi, vs) in cfg.services.iter().enumerate() {
            let st = VsState::initial(vs);
            if let Err(e) = &st.typed {
                // Checkers whose changes could not be applied are not started.
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("health check of {e}")));
            }
            h.held.push(st.desired());
            h.vss.push(st);
            let mut rviews = Vec::new();
            for (ri, rs) in vs.reals.iter().enumerate() {
                let mut cviews = Vec::new();
                for (ci, c) in rs.checkers.iter().enumerate() {
                    cviews.push(CheckerView {
                        keyword: c.kind.keyword(),
                        what: c.kind.what(),
                        origin: c.origin.clone(),
                        retry: c.retry,
                        is_up: !c.alpha,
                        retry_it: 0,
                        checks: 0,
                        failures: 0,
                        last: "not run yet".into(),
                    });
                    runner::spawn((vi, ri, ci), c.clone(), rs.dest.weight, tx.clone(), stop.clone())?;
                    h.counters.checkers += 1;
                }
                rviews.push(cviews);
            }
            h.views.push(rviews);
        }
        Ok(h)
    }

    /// Takes the results that arrived; returns the commands that bring
    /// IPVS to the new state.
    pub fn poll(&mut self) -> Vec<Command> {
        let mut touched = vec![false; self.vss.len()];
        while let Ok(e) = self.rx.try_recv() {
            let (vi, ri, ci) = e.at;
            let Some(v) = self.views.get_mut(vi).and_then(|r| r.get_mut(ri)).and_then(|c| c.get_mut(ci)) else {
                continue;
            };
            self.counters.checks += 1;
            self.counters.failures += u64::from(!e.outcome.ok);
            v.checks += 1;
            v.failures += u64::from(!e.outcome.ok);
            v.is_up = e.is_up;
            v.retry_it = e.retry_it;
            v.last = e.outcome.detail;
            let vs = &mut self.vss[vi];
            let (was_alive, was_quorum) = (vs.rs[ri].alive(), vs.quorum_up);
            if let Some(up) = e.changed {
                // keepalived logs every checker verdict that changes.
                let (lvl, ev) = if up { (log::Level::Info, "checker_up") } else { (log::Level::Warn, "checker_down") };
                crate::logging::event(
                    lvl,
                    ev,
                    &[
                        ("vs", &vs_label(&vs.cfg.service)),
                        ("rs", &vs.cfg.reals[ri].name),
                        ("check", v.keyword),
                        ("target", &v.what),
                        ("reason", &v.last),
                    ],
                );
                vs.checker_changed(ri, up);
                if up {
                    self.counters.checker_up += 1;
                } else {
                    self.counters.checker_down += 1;
                }
            }
            if let Some(w) = e.outcome.weight {
                if vs.set_weight(ri, w) {
                    self.counters.weight_changes += 1;
                }
            }
            touched[vi] = true;
            // keepalived's do_rs_notifies, then do_vs_notifies.
            let rs = &vs.cfg.reals[ri];
            if vs.rs[ri].alive() != was_alive {
                self.counters.notifies += misc::notify(if was_alive { &rs.notify_down } else { &rs.notify_up }, self.notify_as);
            }
            if vs.quorum_up != was_quorum {
                let (lvl, ev) = if vs.quorum_up { (log::Level::Info, "quorum_up") } else { (log::Level::Warn, "quorum_down") };
                crate::logging::event(
                    lvl,
                    ev,
                    &[
                        ("vs", &vs_label(&vs.cfg.service)),
                        ("live_weight", &vs.live_weight().to_string()),
                        ("quorum", &vs.cfg.quorum.to_string()),
                        ("hysteresis", &vs.cfg.hysteresis.to_string()),
                    ],
                );
                self.counters.notifies += misc::notify(if was_quorum { &vs.cfg.quorum_down } else { &vs.cfg.quorum_up }, self.notify_as);
            }
        }
        let mut cmds = Vec::new();
        for (vi, vs) in self.vss.iter().enumerate() {
            if !touched[vi] {
                continue;
            }
            let new = vs.desired();
            let old = &self.held[vi];
            let sorry = || vs.cfg.sorry.as_ref().and_then(|s| s.dest.get(1)).cloned().unwrap_or_default();
            match (old.1, new.1) {
                (None | Some(0), Some(w)) if w > 0 => {
                    self.counters.sorry_in += 1;
                    crate::logging::event(log::Level::Warn, "sorry_server_in", &[("vs", &vs_label(&vs.cfg.service)), ("rs", &sorry())]);
                }
                (Some(w), None | Some(0)) if w > 0 => {
                    self.counters.sorry_out += 1;
                    crate::logging::event(log::Level::Info, "sorry_server_out", &[("vs", &vs_label(&vs.cfg.service)), ("rs", &sorry())]);
                }
                _ => {}
            }
            cmds.extend(vs.changes(old, &new));
            self.held[vi] = new;
        }
        self.counters.commands += cmds.len() as u64;
        cmds
    }

    /// The control plane refused `cmd` with `why`.
    pub fn refused(&mut self, cmd: &Command, why: &str) {
        self.counters.command_errors += 1;
        self.last_error = Some(format!("lvsnic {}: {}", crate::control::command_line(cmd), why.trim()));
    }

    /// Every checker's state, in `lvsnic checkers` order.
    pub fn checkers_now(&self) -> Vec<CheckerState> {
        let mut out = Vec::new();
        for (vi, vs) in self.vss.iter().enumerate() {
            for (ri, rs) in vs.cfg.reals.iter().enumerate() {
                for v in self.views.get(vi).and_then(|r| r.get(ri)).into_iter().flatten() {
                    out.push(CheckerState {
                        service: vs.cfg.service.clone(),
                        real_server: rs.name.clone(),
                        checker: v.keyword,
                        target: v.what.clone(),
                        up: v.is_up,
                        checks: v.checks,
                        failures: v.failures,
                    });
                }
            }
        }
        out
    }

    /// Every service's quorum: the service as ipvsadm names it, and
    /// whether its quorum is up.
    pub fn quorums(&self) -> Vec<(Vec<String>, bool)> {
        self.vss.iter().map(|vs| (vs.cfg.service.clone(), vs.quorum_up)).collect()
    }

    /// `lvsnic checkers`: every service, real server and checker.
    pub fn listing(&self) -> String {
        let mut o = String::new();
        for (vi, vs) in self.vss.iter().enumerate() {
            let c = &vs.cfg;
            let _ = writeln!(
                o,
                "{} quorum {} hysteresis {} live weight {}: quorum {}",
                service_name(&c.service),
                c.quorum,
                c.hysteresis,
                vs.live_weight(),
                if vs.quorum_up { "up" } else { "down" }
            );
            for (ri, rs) in c.reals.iter().enumerate() {
                let st = &vs.rs[ri];
                let _ = writeln!(
                    o,
                    "  -> {} {} weight {}, ipvs {}",
                    rs.name,
                    if st.alive() { "alive" } else { "down" },
                    st.weight,
                    holding(self.held[vi].0[ri])
                );
                for v in &self.views[vi][ri] {
                    let _ = writeln!(
                        o,
                        "       {} {} {} retry {}/{} checks {} failed {} ({}): {}",
                        v.keyword,
                        v.what,
                        if v.is_up { "up" } else { "down" },
                        v.retry_it,
                        v.retry,
                        v.checks,
                        v.failures,
                        v.origin,
                        v.last
                    );
                }
            }
            if let Some(s) = &c.sorry {
                let name = s.dest.get(1).map(String::as_str).unwrap_or("?");
                let _ = writeln!(o, "  sorry server {name}: ipvs {}", holding(self.held[vi].1));
            }
        }
        if let Some(e) = &self.last_error {
            let _ = writeln!(o, "last refused command: {e}");
        }
        for n in &self.script_notes {
            let _ = writeln!(o, "script {n}");
        }
        o
    }

    /// The configuration running and each checker's verdict now
    /// (`[service][real server][checker]`), for a reload to keep.
    pub fn checker_states(&self) -> (HealthConfig, Vec<Vec<Vec<bool>>>) {
        let cfg = HealthConfig { services: self.vss.iter().map(|v| v.cfg.clone()).collect(), ..Default::default() };
        let up = self.views.iter().map(|r| r.iter().map(|c| c.iter().map(|v| v.is_up).collect()).collect()).collect();
        (cfg, up)
    }

    /// The counters as JSON.
    pub fn counters(&self) -> serde_json::Value {
        serde_json::to_value(self.counters).unwrap_or_default()
    }
}

impl Drop for Health {
    fn drop(&mut self) {
        self.stop.stop();
    }
}

fn holding(h: Holding) -> String {
    match h {
        None => "absent".into(),
        Some(w) => format!("weight {w}"),
    }
}

/// `TCP  10.0.0.1:80` from `-t 10.0.0.1:80`.
/// A service in the event log: `TCP/10.0.0.100:80`.
fn vs_label(svc: &[String]) -> String {
    service_name(svc).split_whitespace().collect::<Vec<_>>().join("/")
}

fn service_name(svc: &[String]) -> String {
    let proto = match svc.first().map(String::as_str) {
        Some("-t") => "TCP",
        Some("-u") => "UDP",
        Some("--sctp-service") => "SCTP",
        Some("-f") => "FWM",
        _ => "?",
    };
    format!("{proto}  {}", svc.get(1).map(String::as_str).unwrap_or("?"))
}
