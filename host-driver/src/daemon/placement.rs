//! `lvsnic daemon --loop-cpu CPU`: the forwarding loop alone on one CPU,
//! every other thread of the daemon on the rest.
//!
//! The loop shares nothing with the control plane but the CPUs: a listing
//! of two million connections is formatted by a client thread, a restore
//! parsed by another, the state file written by a third, and on a machine
//! with few cores those threads (and whatever else runs there) take the
//! loop's core while it has frames waiting. Dedicating a core to the data
//! path is what software directors do (DPVS's lcores, keepalived's
//! `vrrp_cpu_affinity`); this is the same choice for the exception loop.
//!
//! How: before the daemon starts any thread, the main thread is confined
//! to the other CPUs, so that every thread it starts (state writer, control
//! socket acceptor and clients, metrics server, health checkers, sync
//! daemons) inherits them; the main thread then confines itself to CPU
//! when it enters the loop. Threads the loop itself starts later (health
//! checkers after a reload, a sync daemon on `--start-daemon`) would
//! inherit the loop's CPU: once a second the loop moves every thread of
//! the process but itself back to the others ([`Placement::sweep`]).
//! The kernel's own work for the daemon (softirqs, TAP queues) is not
//! placed here: that is the IRQ affinity's business.

use crate::sys;
use std::time::{Duration, Instant};

/// How often the loop moves stray threads off its CPU.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The placement of the daemon's threads.
#[derive(Debug)]
pub struct Placement {
    /// The forwarding loop's CPU.
    pub loop_cpu: usize,
    /// Where every other thread runs.
    pub others: Vec<usize>,
    /// The loop's thread id, once it runs ([`Placement::enter_loop`]).
    loop_tid: Option<i32>,
    /// When the next sweep is due.
    due: Instant,
    /// Threads moved off the loop's CPU by sweeps.
    pub moved: u64,
}

impl Placement {
    /// The placement for `--loop-cpu loop_cpu` among the CPUs this process
    /// may use; `loop_cpu` must be one of them, and at least one other
    /// must remain for the rest of the daemon. Confines the calling thread
    /// (the main thread, before any other starts) to the others.
    pub fn start(loop_cpu: usize) -> Result<Placement, String> {
        let allowed = sys::cpu_affinity(0).map_err(|e| format!("--loop-cpu: reading this process's CPUs: {e}"))?;
        let others = Self::split(&allowed, loop_cpu)?;
        sys::set_cpu_affinity(0, &others).map_err(|e| format!("--loop-cpu {loop_cpu}: moving the daemon's threads to CPUs {}: {e}", list(&others)))?;
        Ok(Placement { loop_cpu, others, loop_tid: None, due: Instant::now(), moved: 0 })
    }

    /// The other CPUs when the loop takes `loop_cpu` of `allowed`.
    fn split(allowed: &[usize], loop_cpu: usize) -> Result<Vec<usize>, String> {
        if !allowed.contains(&loop_cpu) {
            return Err(format!("--loop-cpu {loop_cpu}: this process may run on CPUs {} only", list(allowed)));
        }
        let others: Vec<usize> = allowed.iter().copied().filter(|&c| c != loop_cpu).collect();
        if others.is_empty() {
            return Err(format!(
                "--loop-cpu {loop_cpu}: it is the only CPU this process may run on; the control plane needs another (or leave --loop-cpu out)"
            ));
        }
        Ok(others)
    }

    /// Confines the calling thread, the forwarding loop, to the loop's CPU.
    pub fn enter_loop(&mut self) -> Result<(), String> {
        sys::set_cpu_affinity(0, &[self.loop_cpu]).map_err(|e| format!("--loop-cpu {}: {e}", self.loop_cpu))?;
        self.loop_tid = Some(sys::gettid());
        Ok(())
    }

    /// At most once a second: every thread of the process but the loop
    /// that may run on the loop's CPU goes back to the others. A thread
    /// that has ended meanwhile is skipped.
    pub fn sweep(&mut self, now: Instant) {
        if now < self.due {
            return;
        }
        self.due = now + SWEEP_EVERY;
        let Ok(tids) = sys::thread_ids() else { return };
        for tid in tids.into_iter().filter(|&t| Some(t) != self.loop_tid) {
            if sys::cpu_affinity(tid).is_ok_and(|cpus| cpus.contains(&self.loop_cpu)) && sys::set_cpu_affinity(tid, &self.others).is_ok() {
                self.moved += 1;
            }
        }
    }
}

/// `0,2,3`.
fn list(cpus: &[usize]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_takes_one_cpu_and_the_rest_keep_the_others() {
        assert_eq!(Placement::split(&[0, 1, 2, 3], 2), Ok(vec![0, 1, 3]));
        assert_eq!(Placement::split(&[0, 1], 0), Ok(vec![1]));
        assert_eq!(Placement::split(&[0, 1], 5), Err("--loop-cpu 5: this process may run on CPUs 0,1 only".into()));
        assert!(Placement::split(&[3], 3).unwrap_err().contains("the only CPU"));
    }

    /// In a thread of its own (affinity is per thread): the thread that
    /// calls `start` lands on the others, the loop on its CPU, and a
    /// thread the loop starts is moved off it by the next sweep.
    #[test]
    fn threads_started_by_the_loop_are_moved_off_its_cpu() {
        let allowed = sys::cpu_affinity(0).unwrap();
        if allowed.len() < 2 {
            eprintln!("one CPU only: nothing to place");
            return;
        }
        let cpu = allowed[allowed.len() - 1];
        std::thread::spawn(move || {
            let mut p = Placement::start(cpu).unwrap();
            let others = p.others.clone();
            assert_eq!(sys::cpu_affinity(0).unwrap(), others);
            let before = std::thread::spawn(|| sys::cpu_affinity(0).unwrap()).join().unwrap();
            assert_eq!(before, others, "threads started before the loop inherit the others");
            p.enter_loop().unwrap();
            assert_eq!(sys::cpu_affinity(0).unwrap(), vec![cpu]);
            // A thread the loop starts inherits its CPU until a sweep.
            let (tx, rx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let t = std::thread::spawn(move || {
                tx.send(sys::gettid()).unwrap();
                done_rx.recv().unwrap();
                sys::cpu_affinity(0).unwrap()
            });
            let tid = rx.recv().unwrap();
            assert_eq!(sys::cpu_affinity(tid).unwrap(), vec![cpu]);
            p.sweep(Instant::now());
            assert!(p.moved >= 1);
            assert_eq!(sys::cpu_affinity(0).unwrap(), vec![cpu], "the loop stays");
            done_tx.send(()).unwrap();
            assert_eq!(t.join().unwrap(), others, "the loop's thread was moved to the others");
            // A second sweep within the second does nothing.
            let moved = p.moved;
            p.sweep(Instant::now());
            assert_eq!(p.moved, moved);
        })
        .join()
        .unwrap();
    }
}
