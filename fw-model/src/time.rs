//! Time in the model: nanoseconds taken from packet timestamps.
//!
//! The kernel counts in jiffies; the model counts in nanoseconds, so a
//! timeout of `t` seconds is `t * SEC`. A timer armed at `now` with timeout
//! `t` fires at the first packet whose timestamp is `>= now + t`.

/// A point in time, in nanoseconds (pcap timestamps converted).
pub type Time = u64;

/// One second in [`Time`] units.
pub const SEC: Time = 1_000_000_000;

/// One millisecond in [`Time`] units.
pub const MSEC: Time = 1_000_000;

/// Seconds to [`Time`], saturating.
pub const fn secs(s: u64) -> Time {
    s.saturating_mul(SEC)
}

/// The kernel's clock as IPVS sees it: `jiffies` at `HZ` ticks a second,
/// and the timer wheel that fires `mod_timer` timers (kernel/time/timer.c
/// v6.1). With it the model's connection timers fire when the kernel's do:
/// rounded up to their wheel level's granularity (`calc_wheel_index`,
/// `calc_index`), `ip_vs_conn_expire_now` at the next jiffy, the ICMP rate
/// limiter counting jiffies. Without it ([`DirectorConfig::clock`] `None`,
/// the default) timers fire at their exact nanosecond deadline.
///
/// Rounding depends on absolute jiffies, so the clock is anchored: at
/// model time `anchor_ns` (on a tick: jiffies had just become
/// `anchor_jiffies`) jiffies were `anchor_jiffies`. `lvsnic conformance`
/// reads the anchor off the VM's `/proc/timer_list`.
///
/// [`DirectorConfig::clock`]: crate::config::DirectorConfig::clock
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelClock {
    /// `CONFIG_HZ` (Debian: 250).
    pub hz: u32,
    /// A model time at which jiffies ticked to `anchor_jiffies`, ns.
    pub anchor_ns: Time,
    /// The jiffies value at `anchor_ns`.
    pub anchor_jiffies: u64,
}

/// `LVL_CLK_SHIFT`: each wheel level is 8 times coarser than the one below.
const LVL_CLK_SHIFT: u32 = 3;
/// `LVL_DEPTH` for HZ > 100.
const LVL_DEPTH: u32 = 9;

/// `LVL_START(n)`: the first delta (jiffies) that goes to level `n`.
const fn lvl_start(n: u32) -> u64 {
    63u64 << ((n - 1) * LVL_CLK_SHIFT)
}

/// Where the wheel put a timer: when it fires and at which level (the
/// kernel runs an expiring jiffy's buckets from the highest level down).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WheelSlot {
    /// The jiffy the timer's bucket is processed at (`bucket_expiry`).
    pub jiffy: u64,
    /// The wheel level (0..=8).
    pub level: u32,
}

impl KernelClock {
    /// HZ = 250 with jiffies 0 at time 0.
    pub const fn hz250() -> Self {
        KernelClock { hz: 250, anchor_ns: 0, anchor_jiffies: 0 }
    }

    /// One jiffy in ns (`TICK_NSEC`).
    pub fn tick_ns(&self) -> u64 {
        SEC / self.hz.max(1) as u64
    }

    /// `jiffies` at model time `t`.
    pub fn jiffies(&self, t: Time) -> u64 {
        let tick = self.tick_ns();
        if t >= self.anchor_ns {
            self.anchor_jiffies.wrapping_add((t - self.anchor_ns) / tick)
        } else {
            self.anchor_jiffies.wrapping_sub((self.anchor_ns - t).div_ceil(tick))
        }
    }

    /// The model time at which jiffies ticks to `j`.
    pub fn time_of(&self, j: u64) -> Time {
        let tick = self.tick_ns();
        let d = j.wrapping_sub(self.anchor_jiffies) as i64;
        if d >= 0 {
            self.anchor_ns.saturating_add((d as u64).saturating_mul(tick))
        } else {
            self.anchor_ns.saturating_sub(d.unsigned_abs().saturating_mul(tick))
        }
    }

    /// A duration in jiffies, as IPVS stores timeouts (`N * HZ`, whole
    /// jiffies; a fraction of a jiffy rounds up as `msecs_to_jiffies` does).
    pub fn to_jiffies(&self, d: Time) -> u64 {
        (d as u128 * self.hz as u128).div_ceil(SEC as u128) as u64
    }

    /// `calc_wheel_index(expires, clk)`: the bucket a timer with expiry
    /// `expires` (jiffies) lands in when the wheel's clock is `clk`.
    pub fn wheel_slot(expires: u64, clk: u64) -> WheelSlot {
        let delta = expires.wrapping_sub(clk);
        if (delta as i64) < 0 {
            return WheelSlot { jiffy: clk, level: 0 };
        }
        let cutoff = lvl_start(LVL_DEPTH);
        let (expires, delta) = if delta >= cutoff {
            // WHEEL_TIMEOUT_MAX
            let max = cutoff - (1u64 << ((LVL_DEPTH - 1) * LVL_CLK_SHIFT));
            (clk.wrapping_add(max), max)
        } else {
            (expires, delta)
        };
        let level = (1..LVL_DEPTH).find(|&n| delta < lvl_start(n)).map_or(LVL_DEPTH - 1, |n| n - 1);
        let shift = level * LVL_CLK_SHIFT;
        // calc_index: round up with the level's granularity.
        WheelSlot { jiffy: ((expires >> shift) + 1) << shift, level }
    }

    /// `mod_timer(timer, jiffies + timeout)` called at model time `now`:
    /// where the timer goes. `in_timer`: called from a timer callback, when
    /// the wheel's clock is one ahead of jiffies (`__run_timers`).
    pub fn arm(&self, now: Time, timeout: Time, in_timer: bool) -> WheelSlot {
        let j = self.jiffies(now);
        let clk = if in_timer { j.wrapping_add(1) } else { j };
        Self::wheel_slot(j.wrapping_add(self.to_jiffies(timeout)), clk)
    }

    /// The model time a timer in `slot` runs at, with the kernel's order
    /// among timers of the same jiffy folded in: the highest level's
    /// bucket first (`__run_timers` expires the collected levels from the
    /// top down), so a slot's time is its jiffy's plus `8 - level` ns.
    pub fn fire_time(&self, slot: WheelSlot) -> Time {
        self.time_of(slot.jiffy) + (LVL_DEPTH - 1 - slot.level.min(LVL_DEPTH - 1)) as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Facts of kernel/time/timer.c at HZ = 250: level starts 63, 504,
    /// 4032, 32256 jiffies; granularities 1, 8, 64, 512, 4096 jiffies.
    #[test]
    fn wheel_levels_and_rounding() {
        let c = KernelClock::hz250();
        assert_eq!(c.tick_ns(), 4_000_000);
        // Level 0: the next jiffy after expires, even for delta 0 (expire_now).
        assert_eq!(KernelClock::wheel_slot(1000, 1000), WheelSlot { jiffy: 1001, level: 0 });
        assert_eq!(KernelClock::wheel_slot(1062, 1000), WheelSlot { jiffy: 1063, level: 0 });
        // delta 63 -> level 1, rounded up to a multiple of 8 above expires.
        assert_eq!(KernelClock::wheel_slot(1063, 1000), WheelSlot { jiffy: 1064, level: 1 });
        assert_eq!(KernelClock::wheel_slot(1064, 1000), WheelSlot { jiffy: 1072, level: 1 });
        // 10 s = 2500 jiffies: level 2, 64-jiffy (256 ms) buckets.
        assert_eq!(KernelClock::wheel_slot(2500 + 100, 100), WheelSlot { jiffy: 2624, level: 2 });
        // 60 s = 15000: level 3, 512 jiffies (2.048 s).
        assert_eq!(KernelClock::wheel_slot(15000, 0), WheelSlot { jiffy: 15360, level: 3 });
        // 300 s = 75000: level 4, 4096 jiffies (16.384 s).
        assert_eq!(KernelClock::wheel_slot(75000, 0), WheelSlot { jiffy: 77824, level: 4 });
        // 900 s = 225000: still level 4 (below 258048).
        assert_eq!(KernelClock::wheel_slot(225000, 0), WheelSlot { jiffy: 225280, level: 4 });
        assert_eq!(KernelClock::wheel_slot(258048, 0).level, 5);
        // The bucket depends on absolute jiffies, not only on the delta.
        assert_eq!(KernelClock::wheel_slot(15000 + 400, 400), WheelSlot { jiffy: 15872, level: 3 });
    }

    #[test]
    fn jiffies_follow_the_anchor() {
        let c = KernelClock { hz: 250, anchor_ns: 1_000_000_000_123, anchor_jiffies: 4_294_937_296 };
        assert_eq!(c.jiffies(c.anchor_ns), 4_294_937_296);
        assert_eq!(c.jiffies(c.anchor_ns + 3_999_999), 4_294_937_296);
        assert_eq!(c.jiffies(c.anchor_ns + 4_000_000), 4_294_937_297);
        assert_eq!(c.jiffies(c.anchor_ns - 1), 4_294_937_295);
        assert_eq!(c.time_of(4_294_937_297), c.anchor_ns + 4_000_000);
        assert_eq!(c.time_of(4_294_937_295), c.anchor_ns - 4_000_000);
        assert_eq!(c.to_jiffies(secs(900)), 225_000);
        assert_eq!(c.to_jiffies(MSEC), 1);
        // A 60 s timer armed 1 ms after the anchor: expires at jiffy +15000,
        // fires on the next multiple of 512 jiffies above it.
        let s = c.arm(c.anchor_ns + MSEC, secs(60), false);
        assert_eq!(s.level, 3);
        assert_eq!(s.jiffy % 512, 0);
        assert!(s.jiffy > 4_294_937_296 + 15000 && s.jiffy <= 4_294_937_296 + 15000 + 512);
        assert_eq!(c.fire_time(s), c.time_of(s.jiffy) + 5);
    }
}
