//! `MISC_CHECK` (keepalived's check/check_misc.c): `misc_path` is run (its
//! words: the program and its arguments, no shell); exit status 0 is up,
//! anything else down, and a program still running after `misc_timeout` is
//! killed and counts as down. With `misc_dynamic`, status 1 is down and
//! 2..=255 is up with weight status-2 (0 restores the configured weight).

use super::Outcome;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One `MISC_CHECK` of a server whose configured weight is `weight`.
pub fn check(argv: &[String], timeout: Duration, dynamic: bool, weight: u32) -> Outcome {
    let Some((prog, args)) = argv.split_first() else {
        return Outcome::down("misc_path is empty".into());
    };
    let mut child = match Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Outcome::down(format!("running {prog}: {e}")),
    };
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if t0.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::down(format!("{prog} timed out after {:?}", timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Outcome::down(format!("waiting for {prog}: {e}")),
        }
    };
    match status.code() {
        Some(0) => {
            let mut o = Outcome::up(format!("{prog} exited 0"));
            if dynamic {
                o.weight = Some(weight);
            }
            o
        }
        Some(c) if dynamic && c >= 2 => {
            let mut o = Outcome::up(format!("{prog} exited {c}: weight {}", c - 2));
            o.weight = Some(c as u32 - 2);
            o
        }
        Some(c) => Outcome::down(format!("{prog} exited {c}")),
        None => Outcome::down(format!("{prog} killed by a signal")),
    }
}
