//! The checkers' threads: one per checker, each running its check, its
//! [`CheckerMachine`] and its timer, sending every result to the daemon
//! over a channel. The exception loop never waits for a check: it drains
//! the channel between frames ([`super::Health::poll`]).

use super::config::{CheckKind, CheckerConfig};
use super::state::CheckerMachine;
use super::{http, misc, ssl, tcp, Outcome};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One checker's result, as the daemon receives it.
#[derive(Debug)]
pub struct Event {
    /// Service, real server and checker indices.
    pub at: (usize, usize, usize),
    /// What the check found.
    pub outcome: Outcome,
    /// The checker went up (`true`) or down.
    pub changed: Option<bool>,
    /// Its state after the result.
    pub is_up: bool,
    /// Failures retried so far.
    pub retry_it: u32,
}

/// Tells every thread of one checker set to stop.
#[derive(Default)]
pub struct Stop {
    stopped: Mutex<bool>,
    cv: Condvar,
}

impl Stop {
    /// Stops the threads (each ends after its current check).
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Waits `d`; true when stopped meanwhile.
    fn wait(&self, d: Duration) -> bool {
        let g = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self.cv.wait_timeout_while(g, d, |s| !*s).unwrap_or_else(|e| e.into_inner());
        *g
    }
}

/// Runs one check.
pub fn run_once(kind: &CheckKind, weight: u32) -> Outcome {
    match kind {
        CheckKind::Tcp(t) => tcp::check(t),
        CheckKind::Http { target, urls, virtualhost } => http::check(target, urls, virtualhost.as_deref()),
        CheckKind::Ssl { target, urls, virtualhost, enable_sni, client_cert } => {
            ssl::check(target, urls, virtualhost.as_deref(), *enable_sni, client_cert.as_ref())
        }
        CheckKind::Misc { argv, timeout, dynamic, run_as, .. } => misc::check(argv, *timeout, *dynamic, weight, *run_as),
    }
}

/// Starts checker `at` of a real server whose configured weight is `weight`.
pub fn spawn(
    at: (usize, usize, usize),
    cfg: CheckerConfig,
    weight: u32,
    tx: Sender<Event>,
    stop: Arc<Stop>,
) -> std::io::Result<()> {
    std::thread::Builder::new().name(format!("lvsnic-check-{}-{}-{}", at.0, at.1, at.2)).spawn(move || {
        // Started by the loop on a reload: not at its priority.
        crate::bulk::leave_loop_priority();
        let mut m = CheckerMachine::new(cfg.alpha, cfg.retry, cfg.delay_loop, cfg.delay_before_retry);
        // keepalived's warmup: the first check after a random delay up to it.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        let mut wait = cfg.warmup.mul_f64(f64::from(nanos % 1000) / 1000.0);
        while !stop.wait(wait) {
            let outcome = run_once(&cfg.kind, weight);
            let (changed, next) = m.result(outcome.ok);
            let e = Event { at, outcome, changed, is_up: m.is_up, retry_it: m.retry_it };
            if tx.send(e).is_err() {
                return;
            }
            wait = next;
        }
    })?;
    Ok(())
}
