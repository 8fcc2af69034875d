//! cpuidle: which idle state each CPU sits in, chosen by the topology's
//! governor, and what leaving it costs.
//!
//! Modeled on drivers/cpuidle of Linux 6.12:
//! * `haltpoll_select()` / `haltpoll_reflect()` / `adjust_poll_limit()`
//!   (governors/haltpoll.c): after a halt the CPU polls, for a per-CPU
//!   window that starts at 0, grows (×grow, at least grow_start, at most
//!   guest_halt_poll_ns) when a halt ended within the maximum window and
//!   shrinks (÷shrink) when it outlasted it; a poll that times out halts.
//! * `menu_select()` and `get_typical_interval()` (governors/menu.c): the
//!   deepest state whose target residency fits the predicted idle, the
//!   prediction being the mean of the last 8 idle intervals when they form a
//!   pattern (outliers above dropped, down to 6 of them) capped by the next
//!   timer on the CPU; a polling state 0 when the next timer is closer than
//!   state 1's residency; a shallow state instead of polling when it fits
//!   (the RESIDENCY_THRESHOLD rule); and with the tick still running, a
//!   state no deeper than the time to the next tick allows.
//! * `poll_idle()` (poll_state.c): a polling state gives up after the
//!   smallest target residency of the deeper states (at most a tick), and
//!   the governor chooses again.
//!
//!   The prediction from the next timer is scaled by the per-bucket
//!   correction factor `menu_update()` learns (how much of the time to the
//!   next timer the CPU actually stayed idle, a decaying average per
//!   `which_bucket()` of that time): a CPU that wakeups keep ending early
//!   stops choosing states deeper than its real idle periods.
//!
//! Simplified: `teo` is modeled by menu's prediction; the tick counts as
//! running at the first selection of an idle period and stopped after a
//! poll times out, and menu_update()'s "woken by a tick that was not
//! stopped" case is not modeled; no PM QoS latency limit.

use schedlab_topology::{Governor, Idle};

/// `INTERVALS` of menu.c: the idle history it looks for a pattern in.
const INTERVALS: usize = 8;
/// menu.c's correction-factor buckets, fixed point and decay.
const BUCKETS: usize = 6;
const RESOLUTION: u64 = 1024;
const DECAY: u64 = 8;
/// menu.c's `MAX_INTERESTING`: an idle this long counts as a perfect prediction.
const MAX_INTERESTING_NS: u64 = 50_000_000;
/// gov.h's `RESIDENCY_THRESHOLD_NS`: below it, a shallow state beats polling.
const RESIDENCY_THRESHOLD_NS: u64 = 15_000;
/// cpuidle.c's `CPUIDLE_POLL_MIN`: deeper states with a shorter residency
/// do not bound the poll loop.
const CPUIDLE_POLL_MIN_NS: u64 = 10_000;

/// The poll loop itself (`CPUIDLE_FLAG_POLLING`): polling and free to leave.
/// An MWAIT state also keeps the polling flag but has an exit latency.
fn is_poll_loop(s: &schedlab_topology::IdleState) -> bool {
    s.polling && s.exit_latency_ns == 0
}

/// A CPU's idle state, as the hardware model tracks it.
#[derive(Clone, Debug)]
pub(crate) struct CpuIdle {
    /// Idle since (the idle task was switched in); `None` while busy.
    since: Option<u64>,
    /// Index of the state the CPU is in, and when it entered it.
    state: usize,
    state_since: u64,
    /// menu: the last idle intervals, in µs (`menu_device.intervals`).
    intervals: [u32; INTERVALS],
    interval_ptr: usize,
    /// menu: `correction_factor[]`, and the selection's `next_timer_ns` and
    /// `bucket` its update reads.
    correction: [u64; BUCKETS],
    next_timer_ns: u64,
    bucket: usize,
    /// haltpoll: `cpuidle_device.poll_limit_ns`, `last_state_idx`, `poll_time_limit`.
    poll_limit_ns: u64,
    last_state: usize,
    poll_timed_out: bool,
    /// Bumped at every transition so a stale poll timeout is ignored.
    pub gen: u64,
}

impl Default for CpuIdle {
    /// `menu_enable_device()`: every correction factor starts at 1.
    fn default() -> Self {
        CpuIdle {
            since: None,
            state: 0,
            state_since: 0,
            intervals: [0; INTERVALS],
            interval_ptr: 0,
            correction: [RESOLUTION * DECAY; BUCKETS],
            next_timer_ns: u64::MAX,
            bucket: BUCKETS - 1,
            poll_limit_ns: 0,
            last_state: 0,
            poll_timed_out: false,
            gen: 0,
        }
    }
}

/// menu.c's `which_bucket()`: decades of the time to the next timer, from 10 us.
fn which_bucket(ns: u64) -> usize {
    match ns {
        0..10_000 => 0,
        10_000..100_000 => 1,
        100_000..1_000_000 => 2,
        1_000_000..10_000_000 => 3,
        10_000_000..100_000_000 => 4,
        _ => 5,
    }
}

/// What entering (or moving within) idle leaves the CPU in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdleEntry {
    /// The state keeps `TIF_POLLING_NRFLAG`: wakeups need no IPI.
    pub polling: bool,
    /// A polling state's time limit: at this time the governor chooses again.
    pub timeout_at: Option<u64>,
    pub gen: u64,
}

impl CpuIdle {
    pub fn is_idle(&self) -> bool {
        self.since.is_some()
    }

    pub fn state(&self) -> usize {
        self.state
    }

    /// How long the CPU has been in its current state.
    pub fn in_state_for(&self, now: u64) -> u64 {
        now.saturating_sub(self.state_since)
    }

    /// `cpuidle_idle_call()` at the start of an idle period: the governor
    /// picks a state. `next_timer` is the CPU's nearest timer, `next_tick`
    /// when its tick would fire.
    pub fn enter(&mut self, idle: &Idle, tick_ns: u64, now: u64, next_timer: Option<u64>, next_tick: u64) -> IdleEntry {
        self.since = Some(now);
        let to_timer = next_timer.map(|t| t.saturating_sub(now)).unwrap_or(u64::MAX);
        let to_tick = next_tick.saturating_sub(now);
        let state = match idle.governor {
            Governor::None => 0,
            Governor::Haltpoll => self.haltpoll_select(),
            Governor::Menu | Governor::Teo => self.menu_select(idle, tick_ns, to_timer, to_tick, false),
        };
        self.set_state(idle, tick_ns, state, now)
    }

    /// A polling state reached its time limit (`poll_idle()` returned with
    /// `poll_time_limit` set): the idle loop asks the governor again.
    pub fn poll_timeout(&mut self, idle: &Idle, tick_ns: u64, now: u64, next_timer: Option<u64>) -> IdleEntry {
        self.poll_timed_out = true;
        self.reflect(idle, now);
        let state = match idle.governor {
            Governor::None => 0,
            Governor::Haltpoll => self.haltpoll_select(),
            Governor::Menu | Governor::Teo => {
                // menu_update() after a timed-out poll measures "until the next timer".
                let to_timer = next_timer.map(|t| t.saturating_sub(now)).unwrap_or(u64::MAX);
                self.menu_update(self.next_timer_ns);
                self.menu_select(idle, tick_ns, to_timer, u64::MAX, true)
            }
        };
        // Never poll again after a poll timed out: pick the shallowest halt.
        let state = if is_poll_loop(&idle.states[state]) { (state + 1).min(idle.states.len() - 1) } else { state };
        self.set_state(idle, tick_ns, state, now)
    }

    /// The CPU leaves idle at `now` (a wakeup, an interrupt): the governor
    /// reflects on the state it was in.
    pub fn leave(&mut self, idle: &Idle, now: u64) {
        if self.since.take().is_none() {
            return;
        }
        self.poll_timed_out = false;
        self.reflect(idle, now);
        if matches!(idle.governor, Governor::Menu | Governor::Teo) {
            let exit = idle.states[self.state].exit_latency_ns;
            let measured = now.saturating_sub(self.state_since);
            // menu_update(): deduct the exit latency from what was measured.
            self.menu_update(if measured > 2 * exit { measured - exit } else { measured / 2 });
        }
        self.gen += 1;
    }

    fn set_state(&mut self, idle: &Idle, tick_ns: u64, state: usize, now: u64) -> IdleEntry {
        self.state = state;
        self.state_since = now;
        self.gen += 1;
        let s = &idle.states[state];
        let timeout_at =
            if is_poll_loop(s) && idle.states.len() > 1 { Some(now + self.poll_limit(idle, tick_ns)) } else { None };
        IdleEntry { polling: s.polling, timeout_at, gen: self.gen }
    }

    /// `cpuidle_poll_time()`: haltpoll's adaptive window, else the target
    /// residency of the first state after 0 that has at least
    /// CPUIDLE_POLL_MIN, capped at (and by default) `TICK_NSEC / 16`.
    fn poll_limit(&self, idle: &Idle, tick_ns: u64) -> u64 {
        if idle.governor == Governor::Haltpoll {
            return self.poll_limit_ns;
        }
        let max = tick_ns / 16;
        idle.states
            .iter()
            .skip(1)
            .map(|s| s.target_residency_ns)
            .find(|&r| r >= CPUIDLE_POLL_MIN_NS)
            .unwrap_or(max)
            .min(max)
    }

    /// The governor's `reflect` callback for the state just left.
    fn reflect(&mut self, idle: &Idle, now: u64) {
        if idle.governor == Governor::Haltpoll {
            self.last_state = self.state;
            if self.state != 0 {
                let block_ns = now.saturating_sub(self.state_since);
                self.adjust_poll_limit(idle, block_ns);
            }
        }
    }

    /// `haltpoll_select()`.
    fn haltpoll_select(&self) -> usize {
        if self.poll_limit_ns == 0 {
            return 1;
        }
        if self.last_state == 0 && self.poll_timed_out {
            return 1;
        }
        0
    }

    /// `adjust_poll_limit()`.
    fn adjust_poll_limit(&mut self, idle: &Idle, block_ns: u64) {
        let p = &idle.haltpoll;
        if block_ns > self.poll_limit_ns && block_ns <= p.guest_halt_poll_ns {
            let grown = (self.poll_limit_ns * p.grow as u64).max(p.grow_start_ns);
            self.poll_limit_ns = grown.min(p.guest_halt_poll_ns);
        } else if block_ns > p.guest_halt_poll_ns && p.allow_shrink {
            self.poll_limit_ns = if p.shrink == 0 { 0 } else { self.poll_limit_ns / p.shrink as u64 };
        }
    }

    /// `menu_update()` with the idle length it measured: the selection's
    /// bucket learns the ratio of that length to the time the next timer was
    /// away, and the interval history gets it.
    fn menu_update(&mut self, measured_ns: u64) {
        let measured = measured_ns.min(self.next_timer_ns);
        let f = &mut self.correction[self.bucket];
        let mut new = *f - *f / DECAY;
        if self.next_timer_ns > 0 && measured < MAX_INTERESTING_NS {
            new += (RESOLUTION as u128 * measured as u128 / self.next_timer_ns as u128) as u64;
        } else {
            new += RESOLUTION;
        }
        *f = new;
        self.record_interval(measured);
    }

    fn record_interval(&mut self, ns: u64) {
        self.intervals[self.interval_ptr] = (ns / 1_000).min(u32::MAX as u64) as u32;
        self.interval_ptr = (self.interval_ptr + 1) % INTERVALS;
    }

    /// `get_typical_interval()`, in ns; `u64::MAX` when there is no pattern.
    ///
    /// The kernel's loop drops the largest interval(s) and recomputes the
    /// mean and variance of the rest until they describe a pattern. The
    /// same integers come from the intervals sorted once: each round keeps
    /// a prefix, whose sum and sum of squares are prefix sums, and the
    /// variance's numerator Σ(v − avg)² is Σv² − 2·avg·Σv + n·avg² exactly
    /// (this runs at every idle entry; issue 39). The loop as the kernel
    /// writes it is kept for the tests ([`Self::typical_interval_loop`]).
    fn typical_interval(&self) -> u64 {
        let mut sorted = self.intervals;
        sorted.sort_unstable();
        let (mut sums, mut squares) = ([0u64; INTERVALS + 1], [0u128; INTERVALS + 1]);
        for (i, &v) in sorted.iter().enumerate() {
            sums[i + 1] = sums[i] + u64::from(v);
            squares[i + 1] = squares[i] + u128::from(v).pow(2);
        }
        let mut kept = INTERVALS;
        while kept > 0 {
            let max = sorted[kept - 1];
            if max == 0 {
                return u64::MAX;
            }
            let (n, sum) = (kept as u64, sums[kept]);
            let avg = sum / n;
            // Exact in u64 while every square fits eight times over (the
            // common case, microseconds below 2^30): the numerator is below
            // 2^63 then, so wrapping through the terms lands on it; u128
            // division is a library call.
            let variance = if max < 1 << 30 {
                let deviation = (squares[kept] as u64)
                    .wrapping_add(n.wrapping_mul(avg * avg))
                    .wrapping_sub(2u64.wrapping_mul(avg).wrapping_mul(sum));
                u128::from(deviation / n)
            } else {
                let (n, avg, sum) = (u128::from(n), u128::from(avg), u128::from(sum));
                (squares[kept] + n * avg * avg - 2 * avg * sum) / n
            };
            if let Some(verdict) = typical_round(n, avg, variance) {
                return verdict;
            }
            // Every copy of the largest goes (the kernel's `thresh = max - 1`).
            while kept > 0 && sorted[kept - 1] == max {
                kept -= 1;
            }
        }
        u64::MAX
    }

    /// `get_typical_interval()` as the kernel's loop computes it (u128
    /// throughout): the reference [`Self::typical_interval`] is tested
    /// against.
    #[cfg(test)]
    fn typical_interval_loop(&self) -> u64 {
        let mut thresh = u32::MAX;
        loop {
            let kept = self.intervals.iter().copied().filter(|&v| v <= thresh);
            let (mut sum, mut n, mut max) = (0u64, 0u64, 0u32);
            for v in kept {
                sum += v as u64;
                n += 1;
                max = max.max(v);
            }
            if max == 0 {
                return u64::MAX;
            }
            let avg = sum / n;
            let kept = self.intervals.iter().copied().filter(|&v| v <= thresh);
            let variance = kept.map(|v| u128::from(u64::from(v).abs_diff(avg)).pow(2)).sum::<u128>() / n as u128;
            if let Some(verdict) = typical_round(n, avg, variance) {
                return verdict;
            }
            thresh = max - 1;
        }
    }

    /// `menu_select()`.
    fn menu_select(&mut self, idle: &Idle, tick_ns: u64, to_timer: u64, to_tick: u64, tick_stopped: bool) -> usize {
        let states = &idle.states;
        let mut predicted = self.typical_interval();
        let next_timer = if predicted > RESIDENCY_THRESHOLD_NS || tick_stopped {
            self.bucket = which_bucket(to_timer);
            // The time to the next timer scaled by what this bucket learnt,
            // rounded to the microsecond.
            let scale = (RESOLUTION * DECAY * 1_000) as u128;
            let timer_us = (scale / 2 + to_timer as u128 * self.correction[self.bucket] as u128) / scale;
            predicted = predicted.min(u64::try_from(timer_us * 1_000).unwrap_or(u64::MAX));
            if tick_stopped && predicted < tick_ns {
                predicted = to_timer;
            }
            to_timer
        } else {
            self.bucket = which_bucket(u64::MAX);
            u64::MAX
        };
        self.next_timer_ns = next_timer;
        if states.len() <= 1 || next_timer < states[1].target_residency_ns {
            return 0;
        }
        let mut idx = 0;
        for (i, s) in states.iter().enumerate() {
            if s.target_residency_ns <= predicted {
                idx = i;
                continue;
            }
            if is_poll_loop(&states[idx])
                && s.target_residency_ns < RESIDENCY_THRESHOLD_NS
                && s.target_residency_ns <= next_timer
                && s.exit_latency_ns <= predicted
            {
                return i;
            }
            break;
        }
        let keeps_tick = (is_poll_loop(&states[idx]) || predicted < tick_ns) && !tick_stopped;
        if keeps_tick && idx > 0 && states[idx].target_residency_ns > to_tick {
            while idx > 0 {
                idx -= 1;
                if states[idx].target_residency_ns <= to_tick {
                    break;
                }
            }
        }
        idx
    }
}

/// One round's verdict in `get_typical_interval()` on the `n` intervals
/// kept, their mean `avg` (us) and variance: the mean in ns when they form
/// a pattern, `u64::MAX` (none) when too few are left to drop more, else
/// `None`: drop the largest and try again.
fn typical_round(n: u64, avg: u64, variance: u128) -> Option<u64> {
    let avg_sq = avg as u128 * avg as u128;
    let pattern = (avg_sq > variance * 36 && n * 4 >= INTERVALS as u64 * 3) || variance <= 400;
    if variance <= u64::MAX as u128 / 36 && pattern {
        return Some(avg * 1_000);
    }
    if n * 4 <= INTERVALS as u64 * 3 {
        return Some(u64::MAX);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_topology::hardware::{HaltpollParams, IdleState};

    fn state(name: &str, exit: u64, residency: u64, polling: bool) -> IdleState {
        IdleState {
            name: name.into(),
            exit_latency_ns: exit,
            target_residency_ns: residency,
            polling,
            exit_by_idle: Vec::new(),
            timer_exit_by_idle: Vec::new(),
        }
    }

    fn haltpoll() -> Idle {
        Idle {
            driver: "haltpoll".into(),
            governor: Governor::Haltpoll,
            states: vec![state("poll", 0, 0, true), state("halt", 1_000, 0, false)],
            haltpoll: HaltpollParams::default(),
        }
    }

    /// acpi_idle on a Zen-class desktop: POLL, MWAIT C1, IO-port C2.
    fn acpi() -> Idle {
        Idle {
            driver: "acpi_idle".into(),
            governor: Governor::Menu,
            states: vec![
                state("POLL", 0, 0, true),
                state("C1", 1_000, 2_000, true),
                state("C2", 18_000, 36_000, false),
            ],
            haltpoll: HaltpollParams::default(),
        }
    }

    const TICK: u64 = 1_000_000;

    /// One idle period of `len` ns from `t`, woken at its end (following
    /// poll timeouts as the engine would): the states it passed through.
    fn idle_for(c: &mut CpuIdle, idle: &Idle, t: u64, len: u64) -> Vec<usize> {
        let mut e = c.enter(idle, TICK, t, None, t + TICK / 2);
        let mut seen = vec![c.state()];
        while let Some(at) = e.timeout_at.filter(|&at| at < t + len) {
            e = c.poll_timeout(idle, TICK, at, None);
            seen.push(c.state());
        }
        c.leave(idle, t + len);
        seen
    }

    #[test]
    fn the_sorted_prefixes_give_the_kernel_loops_result() {
        let mut rng = crate::rng::Rng::new(5);
        for round in 0..50_000u64 {
            let mut d = CpuIdle::default();
            // Small, mixed and huge intervals (the u64 path's edge is 2^30
            // us), and few distinct values, so that ties and zeros occur.
            let scale = [3u64, 10, 1_000, 1 << 29, 1 << 30, 1 << 31, u32::MAX as u64][(round % 7) as usize];
            // Clusters near a base (a pattern, also where squares pass
            // 2^64), with an outlier now and then; or a few spread values
            // repeated (ties in the rounds that drop the largest).
            let base = [1u64 << 20, (1 << 30) - 500, (1 << 31) - 1_000, u32::MAX as u64 - 1_000][(round % 4) as usize];
            for v in d.intervals.iter_mut() {
                *v = match (round / 7) % 3 {
                    0 => rng.below_incl(scale),
                    1 if rng.below_incl(7) == 0 => rng.below_incl(u32::MAX as u64),
                    1 => base + rng.below_incl(1_000).min(u32::MAX as u64 - base),
                    _ => rng.below_incl(3) * (scale / 4 + 1),
                } as u32;
            }
            assert_eq!(d.typical_interval(), d.typical_interval_loop(), "{:?}", d.intervals);
        }
        let spread = [0, 0, 0, 0, u32::MAX, u32::MAX, u32::MAX, u32::MAX]; // Σ(v - avg)² ≈ 2^65
        for intervals in [[0; INTERVALS], [u32::MAX; INTERVALS], [7; INTERVALS], [0, 0, 0, 0, 0, 0, 0, 9], spread] {
            let d = CpuIdle { intervals, ..CpuIdle::default() };
            assert_eq!(d.typical_interval(), d.typical_interval_loop(), "{intervals:?}");
        }
    }

    #[test]
    fn haltpoll_window_grows_from_zero_and_polls_short_idles() {
        let idle = haltpoll();
        let mut c = CpuIdle::default();
        // poll_limit starts at 0: the first idle halts; a 30 us halt grows the window to grow_start.
        assert_eq!(idle_for(&mut c, &idle, 0, 30_000), [1]);
        assert_eq!(c.poll_limit_ns, 50_000);
        // Now a 30 us idle is caught by the poll: no halt, no window change.
        assert_eq!(idle_for(&mut c, &idle, 100_000, 30_000), [0]);
        assert_eq!(c.poll_limit_ns, 50_000);
        // A 120 us idle: polls 50 us, times out, halts 70 us (longer than the
        // window, within 200 us): the window doubles.
        assert_eq!(idle_for(&mut c, &idle, 200_000, 120_000), [0, 1]);
        assert_eq!(c.poll_limit_ns, 100_000);
        // A halt shorter than the window does not grow it (block_ns counts the halt only).
        idle_for(&mut c, &idle, 400_000, 180_000);
        assert_eq!(c.poll_limit_ns, 100_000);
        // Polls 100 us, halts 150 us: grows to the 200 us cap; then a long idle (halt > 200 us) halves it.
        idle_for(&mut c, &idle, 600_000, 250_000);
        assert_eq!(c.poll_limit_ns, 200_000);
        idle_for(&mut c, &idle, 1_000_000, 200_000);
        assert_eq!(c.poll_limit_ns, 200_000, "capped at guest_halt_poll_ns");
        assert_eq!(idle_for(&mut c, &idle, 2_000_000, 5_000_000), [0, 1]);
        assert_eq!(c.poll_limit_ns, 100_000, "halt of 4.8 ms > 200 us: shrink by 2");
    }

    #[test]
    fn menu_follows_a_repeating_idle_length() {
        let idle = acpi();
        let mut c = CpuIdle::default();
        // No history: no pattern, so the deepest state that the tick allows.
        let first = idle_for(&mut c, &idle, 0, 10_000);
        assert_eq!(first[0], 2, "no history and the tick 500 us away: C2");
        // A steady 10 us idle: menu learns it; C1 (residency 2 us) fits, C2 (36 us) does not.
        let mut t = 100_000;
        for _ in 0..8 {
            idle_for(&mut c, &idle, t, 10_000);
            t += 100_000;
        }
        assert_eq!(c.typical_interval(), 9_000, "10 us idles minus C1's 1 us exit latency");
        assert_eq!(idle_for(&mut c, &idle, t, 10_000)[0], 1);
        // A steady 500 us idle: C2.
        for _ in 0..8 {
            t += 1_000_000;
            idle_for(&mut c, &idle, t, 500_000);
        }
        assert_eq!(idle_for(&mut c, &idle, t + 1_000_000, 500_000)[0], 2);
    }

    #[test]
    fn menu_learns_that_wakeups_end_idles_long_before_the_next_timer() {
        // Idles of 20, 300, 60 and 500 us in turn, each ended by a wakeup while the
        // CPU's next timer is 5 ms away: no repeating pattern, so only the
        // timer predicts. At first it predicts the whole 5 ms: C3.
        let mut idle = acpi();
        idle.states.push(state("C3", 350_000, 1_000_000, false));
        let mut c = CpuIdle::default();
        let mut lens = [20_000u64, 300_000, 60_000, 500_000].into_iter().cycle();
        let mut pick = |c: &mut CpuIdle, t: u64| {
            let e = c.enter(&idle, TICK, t, Some(t + 5_000_000), t + 5_000_000);
            assert!(e.timeout_at.is_none(), "not polling");
            let chosen = c.state();
            c.leave(&idle, t + lens.next().unwrap());
            chosen
        };
        assert_eq!(pick(&mut c, 0), 3, "factor 1: the timer's 5 ms");
        let mut last = Vec::new();
        for k in 1..=60u64 {
            last.push(pick(&mut c, k * 10_000_000));
        }
        assert_eq!(c.typical_interval(), u64::MAX, "no pattern, even without the longest");
        // The 1-10 ms bucket's factor settles near the mean idle over the
        // 5 ms, so the prediction near that mean (~200 us): C2, not C3.
        let f = c.correction[which_bucket(5_000_000)];
        assert!((200..600).contains(&f), "factor {f} of {}", RESOLUTION * DECAY);
        assert!(last[50..].iter().all(|&s| s == 2), "{last:?}");
        // Another bucket has learnt nothing.
        assert_eq!(c.correction[which_bucket(50_000)], RESOLUTION * DECAY);
    }

    #[test]
    fn menu_polls_when_the_next_timer_is_closer_than_c1_residency() {
        let idle = acpi();
        let mut c = CpuIdle::default();
        let e = c.enter(&idle, TICK, 0, Some(1_500), TICK / 2);
        assert_eq!((c.state(), e.polling), (0, true));
        // POLL's limit: C1's 2 us is under CPUIDLE_POLL_MIN, so C2's 36 us (under TICK/16).
        assert_eq!(e.timeout_at, Some(36_000));
        let e = c.poll_timeout(&idle, TICK, 36_000, None);
        assert!(c.state() > 0, "a timed-out poll halts");
        assert_eq!(e.timeout_at, None);
    }

    #[test]
    fn no_governor_always_uses_its_one_state() {
        let idle = Idle {
            driver: "none".into(),
            governor: Governor::None,
            states: vec![state("HLT", 5_000, 0, false)],
            haltpoll: HaltpollParams::default(),
        };
        let mut c = CpuIdle::default();
        for k in 0..4 {
            assert_eq!(idle_for(&mut c, &idle, k * 1_000_000, 10_000 * (k + 1)), [0]);
        }
        let e = c.enter(&idle, TICK, 9_000_000, None, 9_500_000);
        assert_eq!((e.polling, e.timeout_at), (false, None));
    }
}
