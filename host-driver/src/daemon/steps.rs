//! What one turn of the forwarding loop spends its time on, step by step:
//! for each step the longest time it took once and how often it took more
//! than a millisecond. A frame that arrives while a step runs waits for it,
//! so these are the forwarding delays the daemon itself causes (the rest is
//! the CPU: other threads and processes). `lvsnic status` shows them
//! (`loop_steps`), so that an operator sees which work stalls forwarding.

use std::time::Instant;

/// The steps of one loop turn ([`super::Daemon::forward`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Neighbour table updates, frames held for a MAC released.
    Neighbors,
    /// `--vips host`: the host's address changes followed.
    HostAddrs,
    /// Control requests, a slice at a time.
    Control,
    /// Frames of the wire (and the host tap) handled.
    Wire,
    /// Health checkers' results applied.
    Health,
    /// The card's receive ring polled.
    Device,
    /// Connection sync sent and received.
    Sync,
    /// Timers: connection expiry, estimators (every 100 ms).
    Timers,
    /// The state directory: snapshots copied, files handed to the writer.
    State,
    /// Flows of deleted real servers leaving the card.
    Diverted,
}

impl Step {
    const ALL: [Step; 10] = [
        Step::Neighbors,
        Step::HostAddrs,
        Step::Control,
        Step::Wire,
        Step::Health,
        Step::Device,
        Step::Sync,
        Step::Timers,
        Step::State,
        Step::Diverted,
    ];

    /// The name in `status`.
    pub fn name(self) -> &'static str {
        match self {
            Step::Neighbors => "neighbors",
            Step::HostAddrs => "host_addrs",
            Step::Control => "control",
            Step::Wire => "wire",
            Step::Health => "health",
            Step::Device => "device",
            Step::Sync => "sync",
            Step::Timers => "timers",
            Step::State => "state",
            Step::Diverted => "diverted",
        }
    }
}

/// One step's record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StepTimes {
    /// The longest single run of the step (µs).
    pub longest_us: u64,
    /// Runs that took more than a millisecond.
    pub over_1ms: u64,
}

/// The loop's steps, timed.
#[derive(Debug, Default)]
pub struct LoopSteps {
    times: [StepTimes; Step::ALL.len()],
}

impl LoopSteps {
    /// Step `s` ran from `since` until now.
    pub fn done(&mut self, s: Step, since: Instant) -> u64 {
        let us = since.elapsed().as_micros() as u64;
        self.record(s, us);
        us
    }

    fn record(&mut self, s: Step, us: u64) {
        let t = &mut self.times[s as usize];
        t.longest_us = t.longest_us.max(us);
        t.over_1ms += u64::from(us > 1000);
    }

    /// Every step by name, in loop order.
    pub fn report(&self) -> std::collections::BTreeMap<&'static str, StepTimes> {
        Step::ALL.iter().map(|&s| (s.name(), self.times[s as usize])).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_keeps_its_longest_run_and_counts_the_long_ones() {
        let mut l = LoopSteps::default();
        l.record(Step::Control, 400);
        l.record(Step::Control, 2500);
        l.record(Step::Control, 1200);
        l.record(Step::Control, 1000);
        l.record(Step::State, 7);
        let r = l.report();
        assert_eq!(r["control"], StepTimes { longest_us: 2500, over_1ms: 2 });
        assert_eq!(r["state"], StepTimes { longest_us: 7, over_1ms: 0 });
        assert_eq!(r["wire"], StepTimes::default());
        assert_eq!(r.len(), 10, "every step is named once");
    }
}
