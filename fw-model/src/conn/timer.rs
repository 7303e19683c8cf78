//! Connection timers: a one-second timing wheel in front of two heaps.
//!
//! Semantically a min-queue of `(deadline, newest-armed-first, slot, gen)`
//! entries: [`TimerQueue::pop_due`] returns the smallest entry due at or
//! before `now`. Inserting is O(1) for deadlines within the wheel's span
//! (the common case: TCP/UDP timeouts), so creating a connection does not
//! pay a heap sift through a million entries; only the entries of the
//! current second are kept ordered (the `near` heap). Deadlines beyond the
//! span (long persistence timeouts) wait in the `far` heap and migrate into
//! the wheel as it turns.

use crate::time::{Time, SEC};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// (deadline, newest-armed-first, slot, generation)
pub type TimerEntry = (Time, Reverse<u32>, u32, u32);

/// Wheel size in one-second buckets (~68 minutes).
const SLOTS: u64 = 4096;

/// The timer queue.
#[derive(Debug)]
pub struct TimerQueue {
    near: BinaryHeap<Reverse<TimerEntry>>,
    wheel: Vec<Vec<TimerEntry>>,
    wheel_len: usize,
    far: BinaryHeap<Reverse<TimerEntry>>,
    /// First second whose bucket has not been moved into `near` yet.
    cursor: u64,
}

impl TimerQueue {
    /// An empty queue starting at time 0 (the cursor catches up on the
    /// first `pop_due`).
    pub fn new() -> Self {
        TimerQueue {
            near: BinaryHeap::new(),
            wheel: (0..SLOTS).map(|_| Vec::new()).collect(),
            wheel_len: 0,
            far: BinaryHeap::new(),
            cursor: 0,
        }
    }

    /// Number of queued entries (stale ones included).
    pub fn len(&self) -> usize {
        self.near.len() + self.wheel_len + self.far.len()
    }

    /// No entry queued (stale ones included).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the queue's buffers.
    pub fn memory_bytes(&self) -> usize {
        let e = std::mem::size_of::<TimerEntry>();
        (self.near.capacity() + self.far.capacity()) * e
            + self.wheel.iter().map(|b| b.capacity() * e).sum::<usize>()
            + self.wheel.capacity() * std::mem::size_of::<Vec<TimerEntry>>()
    }

    /// Queues an entry.
    #[inline]
    pub fn push(&mut self, e: TimerEntry) {
        let s = e.0 / SEC;
        if s < self.cursor {
            self.near.push(Reverse(e));
        } else if s < self.cursor + SLOTS {
            self.wheel[(s % SLOTS) as usize].push(e);
            self.wheel_len += 1;
        } else {
            self.far.push(Reverse(e));
        }
    }

    /// Moves far entries that now fall within the wheel's span.
    fn migrate_far(&mut self) {
        while let Some(&Reverse(e)) = self.far.peek() {
            if e.0 / SEC >= self.cursor + SLOTS {
                break;
            }
            self.far.pop();
            self.push(e);
        }
    }

    /// Turns the wheel up to and including second `upto`.
    fn advance_to(&mut self, upto: u64) {
        while self.cursor <= upto {
            if self.wheel_len == 0 {
                // Nothing in the wheel: jump, then let far entries in.
                let next_far = self.far.peek().map(|Reverse(e)| e.0 / SEC).unwrap_or(u64::MAX);
                let target = (upto + 1).min(next_far.saturating_sub(SLOTS - 1)).max(self.cursor + 1);
                self.cursor = target;
                self.migrate_far();
                continue;
            }
            let b = (self.cursor % SLOTS) as usize;
            let bucket = std::mem::take(&mut self.wheel[b]);
            self.wheel_len -= bucket.len();
            for e in &bucket {
                self.near.push(Reverse(*e));
            }
            // Keep the bucket's allocation for reuse.
            let mut bucket = bucket;
            bucket.clear();
            self.wheel[b] = bucket;
            self.cursor += 1;
            self.migrate_far();
        }
    }

    /// Pops the smallest entry with a deadline at or before `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Time) -> Option<TimerEntry> {
        let s = now / SEC;
        if self.cursor <= s {
            self.advance_to(s);
        }
        match self.near.peek() {
            Some(&Reverse(e)) if e.0 <= now => {
                self.near.pop();
                Some(e)
            }
            _ => None,
        }
    }
}

impl Default for TimerQueue {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The queue pops exactly what a plain min-heap would, on random
    /// pushes and pops spanning the wheel and beyond.
    #[test]
    fn behaves_like_a_min_heap() {
        let mut rng = SplitMix64::new(9);
        let mut q = TimerQueue::new();
        let mut h: BinaryHeap<Reverse<TimerEntry>> = BinaryHeap::new();
        let mut now: Time = 1_700_000_000 * SEC;
        let mut seq = 0u32;
        for step in 0..200_000u32 {
            match rng.below(10) {
                0..=5 => {
                    seq += 1;
                    let delta = match rng.below(4) {
                        0 => rng.below(SEC),
                        1 => rng.below(120 * SEC),
                        2 => rng.below(10_000 * SEC),
                        _ => 0,
                    };
                    let e = (now + delta, Reverse(seq), step, rng.below(3) as u32);
                    q.push(e);
                    h.push(Reverse(e));
                }
                6..=8 => {
                    now += match rng.below(3) {
                        0 => rng.below(1000),
                        1 => rng.below(3 * SEC),
                        _ => rng.below(7200 * SEC),
                    };
                }
                _ => {}
            }
            loop {
                let expect = match h.peek() {
                    Some(&Reverse(e)) if e.0 <= now => {
                        h.pop();
                        Some(e)
                    }
                    _ => None,
                };
                let got = q.pop_due(now);
                assert_eq!(got, expect, "step {step}");
                if got.is_none() {
                    break;
                }
            }
            assert_eq!(q.len(), h.len());
        }
    }
}
