//! Bulk work at idle priority, never starved: the threads that format
//! replies for control clients (a listing of two million connections is
//! seconds of CPU) and the state writer's (the running configuration of
//! 10,000 services, a snapshot of 2M connections) run in `SCHED_IDLE`, so that the forwarding loop (and
//! anything else of normal priority) that wakes up takes the CPU from them
//! at once instead of waiting for the end of their time slice. On two
//! cores this took the ARP probe's p99 during a `-L -n -c` of 2M
//! connections from 5.4 ms to 1.0 ms (docs/performance.md, "Control plane
//! beside forwarding").
//!
//! `SCHED_IDLE` alone would let a host busy with normal work starve a
//! listing forever. The acceptor's thread (normal priority, awake every
//! 100 ms) [`watch`]es them: a bulk thread that spent more than
//! [`STARVED`] of the last [`WINDOW`] runnable but waiting for a CPU (the
//! kernel's `run_delay`; time asleep, e.g. waiting for the loop's reply,
//! does not count) is put back to normal priority for the rest of its
//! work, and counted (`status` → `control.bulk_promoted`).
//!
//! The other side of the same choice: the forwarding loop runs above
//! normal priority ([`raise_loop`], `lvsnic daemon --loop-nice`, -10 by
//! default), as the kernel's IPVS forwards in softirq context above every
//! process. Bulk work can then not take the loop's CPU even when it is
//! promoted, nor can the `lvsnic` or `ipvsadm` process reading a 150 MB
//! listing, or anything else of normal priority on the host: during a
//! `-L -n -c` of 2M connections the probe's p99 went from 1.9-2.9 ms to
//! 0.3 ms (docs/performance.md). Threads the loop starts later (health
//! checkers after a reload, sync daemons) go back to the daemon's own
//! priority first ([`leave_loop_priority`]).

use crate::sys;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a bulk thread is watched before its waiting is judged.
pub const WINDOW: Duration = Duration::from_secs(1);
/// The share of [`WINDOW`] a bulk thread may wait for a CPU.
pub const STARVED: f64 = 0.5;

/// A bulk thread: its id, when its window began and its waiting time then.
struct Entry {
    tid: i32,
    since: Instant,
    waited_ns: u64,
}

static THREADS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static PROMOTED: AtomicU64 = AtomicU64::new(0);

/// The nice value of the daemon's threads other than the loop (the
/// process's when the loop was raised; `i32::MIN`: never raised).
static BASE_NICE: AtomicI32 = AtomicI32::new(i32::MIN);

/// The nice value `--loop-nice` gives the forwarding loop by default.
pub const LOOP_NICE: i32 = -10;

/// Gives the calling thread, the forwarding loop, nice value `nice`.
/// Returns the value in effect, and why it is not `nice` when it could
/// not be set (a daemon without `CAP_SYS_NICE` stays where it was).
pub fn raise_loop(nice: i32) -> (i32, Option<String>) {
    let base = sys::nice(0).unwrap_or(0);
    BASE_NICE.store(base, Ordering::Relaxed);
    if nice == base {
        return (base, None);
    }
    match sys::set_nice(0, nice) {
        Ok(()) => (nice, None),
        Err(e) => (base, Some(format!("--loop-nice {nice}: {e}; the forwarding loop stays at nice {base}"))),
    }
}

/// For a thread the loop starts (it inherits the loop's priority): back
/// to the priority of the daemon's other threads. Nothing when the loop
/// was never raised.
pub fn leave_loop_priority() {
    let base = BASE_NICE.load(Ordering::Relaxed);
    if base != i32::MIN {
        let _ = sys::set_nice(0, base);
    }
}

/// Bulk threads put back to normal priority since the start.
pub fn promoted() -> u64 {
    PROMOTED.load(Ordering::Relaxed)
}

/// While it lives, the calling thread runs at idle priority and is watched.
pub struct Bulk {
    tid: i32,
}

/// The calling thread becomes bulk work (if the kernel allows
/// `SCHED_IDLE`; otherwise it stays as it was, unwatched).
pub fn enter() -> Option<Bulk> {
    let tid = sys::gettid();
    let (_, waited_ns) = sys::thread_sched_ns(tid).ok()?;
    sys::set_sched_idle(0, true).ok()?;
    THREADS.lock().unwrap_or_else(|e| e.into_inner()).push(Entry { tid, since: Instant::now(), waited_ns });
    Some(Bulk { tid })
}

impl Drop for Bulk {
    fn drop(&mut self) {
        THREADS.lock().unwrap_or_else(|e| e.into_inner()).retain(|e| e.tid != self.tid);
        let _ = sys::set_sched_idle(0, false);
    }
}

/// Whether a thread that waited `waited` for a CPU during `window` was starved.
fn starved(waited: Duration, window: Duration) -> bool {
    waited.as_secs_f64() > STARVED * window.as_secs_f64()
}

/// Every bulk thread whose window has passed: one that was starved in it
/// goes back to normal priority (and is no longer watched); the others
/// start a new window.
pub fn watch(now: Instant) {
    let mut threads = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    threads.retain_mut(|e| {
        let window = now.saturating_duration_since(e.since);
        if window < WINDOW {
            return true;
        }
        let Ok((_, waited_ns)) = sys::thread_sched_ns(e.tid) else { return false };
        if starved(Duration::from_nanos(waited_ns.saturating_sub(e.waited_ns)), window) {
            if sys::set_sched_idle(e.tid, false).is_ok() {
                PROMOTED.fetch_add(1, Ordering::Relaxed);
            }
            return false;
        }
        e.since = now;
        e.waited_ns = waited_ns;
        true
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// The loop's thread alone is raised: a thread it starts inherits its
    /// priority until it leaves it, and the threads that were there before
    /// keep theirs. Without `CAP_SYS_NICE` the loop stays, with a reason.
    #[test]
    fn the_loop_alone_is_raised_and_its_threads_leave_its_priority() {
        let before = sys::nice(0).unwrap();
        let (loop_nice, child_nice, left, other) = std::thread::spawn(move || {
            let raised = raise_loop(before - 3);
            let child = std::thread::spawn(|| {
                let inherited = sys::nice(0).unwrap();
                leave_loop_priority();
                (inherited, sys::nice(0).unwrap())
            })
            .join()
            .unwrap();
            (raised, child.0, child.1, sys::nice(0).unwrap())
        })
        .join()
        .unwrap();
        match loop_nice {
            (n, None) => {
                assert_eq!((n, child_nice, other), (before - 3, before - 3, before - 3), "the loop raised, its child inherited");
                assert_eq!(left, before, "the child went back to the daemon's priority");
            }
            (n, Some(why)) => {
                assert_eq!(n, before);
                assert!(why.starts_with(&format!("--loop-nice {}: ", before - 3)) && why.ends_with(&format!("stays at nice {before}")), "{why}");
            }
        }
        assert_eq!(sys::nice(0).unwrap(), before, "the test's own thread is untouched");
    }

    #[test]
    fn starved_means_waiting_for_a_cpu_more_than_half_the_window() {
        let w = Duration::from_secs(1);
        assert!(!starved(Duration::from_millis(500), w));
        assert!(starved(Duration::from_millis(501), w));
        assert!(!starved(Duration::ZERO, Duration::from_secs(3)));
    }

    /// Two threads on one CPU: a bulk one and one of normal priority that
    /// never sleeps. The bulk one barely runs; once its window has passed
    /// the watch puts it back to normal priority, and then it runs. A bulk
    /// thread that sleeps (waits for a reply) is not starved: it stays.
    #[test]
    fn a_starved_bulk_thread_is_promoted_a_sleeping_one_is_not() {
        let cpu = sys::cpu_affinity(0).unwrap()[0];
        let stop = Arc::new(AtomicBool::new(false));
        let spin = |stop: Arc<AtomicBool>| {
            let mut x = 0u64;
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        };
        let (s1, s2) = (stop.clone(), stop.clone());
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let hog = std::thread::spawn(move || {
            sys::set_cpu_affinity(0, &[cpu]).unwrap();
            spin(s1)
        });
        let tx = tid_tx.clone();
        let bulk = std::thread::spawn(move || {
            sys::set_cpu_affinity(0, &[cpu]).unwrap();
            let b = enter();
            tx.send((sys::gettid(), b.is_some())).unwrap();
            spin(s2);
            let idle = sys::sched_idle(0).unwrap();
            drop(b);
            idle
        });
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (sleeper_tx, sleeper_rx) = std::sync::mpsc::channel();
        drop(tid_tx);
        let sleeper = std::thread::spawn(move || {
            let _b = enter();
            sleeper_tx.send(sys::gettid()).unwrap();
            done_rx.recv().unwrap();
            sys::sched_idle(0).unwrap()
        });
        let (starving, entered) = tid_rx.recv().unwrap();
        let sleeping = sleeper_rx.recv().unwrap();
        assert!(entered, "SCHED_IDLE is open to any thread");
        let watched = || -> Vec<i32> { THREADS.lock().unwrap().iter().map(|e| e.tid).collect() };
        let before = promoted();
        watch(Instant::now());
        assert!(watched().contains(&starving), "nothing judged before its window");
        // Other tests' accept loops may watch too (the list is the
        // process's): watch until the starved thread is judged, at most
        // 10 windows (a loaded machine can leave it a share early on).
        let t0 = Instant::now();
        std::thread::sleep(WINDOW);
        while watched().contains(&starving) && t0.elapsed() < WINDOW * 10 {
            watch(Instant::now());
            std::thread::sleep(Duration::from_millis(100));
        }
        let watched = watched();
        stop.store(true, Ordering::Relaxed);
        done_tx.send(()).unwrap();
        let (was_idle, sleeper_idle) = (bulk.join().unwrap(), sleeper.join().unwrap());
        hog.join().unwrap();
        assert!(promoted() > before && !watched.contains(&starving) && !was_idle, "the starved thread was promoted: {watched:?}");
        assert!(sleeper_idle && watched.contains(&sleeping), "the sleeping thread stayed at idle priority, watched: {watched:?}");
    }
}
