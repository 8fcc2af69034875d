//! The sleeps' hrtimers as each CPU's hrtimer base holds them: a range
//! [soft, hard] per timer, and the rule by which one interrupt expires
//! several (kernel/time/hrtimer.c, 6.12).
//!
//! `hrtimer_nanosleep()` arms the sleeper's timer with
//! `hrtimer_set_expires_range_ns()`: soft expiry at the requested time, hard
//! expiry `timer_slack_ns` later (0 for RT and deadline tasks, which
//! `__setscheduler_params()` gives no slack). The clock event is programmed
//! for the earliest hard expiry. When any hrtimer interrupt runs on the CPU,
//! `__hrtimer_run_queues()` walks the base's timers in hard-expiry order and
//! runs each one whose soft expiry has passed, stopping at the first whose
//! soft expiry has not: so the interrupt of one sleeper, or of the tick,
//! also ends every sleep whose range it falls into and that no
//! not-yet-expired timer precedes.
//!
//! Simplified, and said so: of the CPU's other hrtimers only the tick can
//! end the walk early (it sits in the same `CLOCK_MONOTONIC` hard base);
//! the fair server's, deadline, bandwidth and watchdog timers are rare
//! beside the sleeps and the tick and are left out of the order. A sleep
//! stays on the base of the CPU that armed it, as in the kernel (no
//! migration of armed timers).

/// One armed sleep: whose, which of its sleeps (`gen`), and its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SleepTimer {
    pub soft: u64,
    pub hard: u64,
    pub thread: usize,
    pub gen: u64,
}

/// The armed sleeps of every CPU, each CPU's in hard-expiry order and, for
/// equal hard expiries, in arming order (the timerqueue puts a timer after
/// the ones already queued with the same expiry).
#[derive(Clone, Debug, Default)]
pub(crate) struct HrtimerBases {
    cpus: Vec<Vec<SleepTimer>>,
}

impl HrtimerBases {
    pub fn new(nr_cpus: usize) -> Self {
        HrtimerBases { cpus: vec![Vec::new(); nr_cpus] }
    }

    /// `hrtimer_start_range_ns()` of a sleep on `cpu`.
    pub fn start(&mut self, cpu: usize, timer: SleepTimer) {
        debug_assert!(timer.soft <= timer.hard);
        let base = &mut self.cpus[cpu];
        let at = base.partition_point(|t| t.hard <= timer.hard);
        base.insert(at, timer);
    }

    /// `__hrtimer_run_queues()` on `cpu` at `now` for the sleeps: moves into
    /// `expired`, in hard-expiry order, every sleep the walk runs: those
    /// whose soft expiry is at or before `now`, up to the first one (by hard
    /// expiry) that is not soft-expired or that comes after `next_other`, the
    /// hard expiry of a CPU timer outside this list (the tick) that is
    /// still in the future. `live` says whether an entry still stands (a
    /// sleep that ended or was re-armed is dropped without running).
    pub fn run_queues(
        &mut self,
        cpu: usize,
        now: u64,
        next_other: Option<u64>,
        live: impl Fn(&SleepTimer) -> bool,
        expired: &mut Vec<SleepTimer>,
    ) {
        let base = &mut self.cpus[cpu];
        let stop = next_other.filter(|&t| t > now);
        // Entries before the walk's end leave the base: the ones it runs
        // and the dead ones it passes (dead ones further on wait their turn).
        let mut passed = 0;
        for t in base.iter() {
            if live(t) {
                if t.soft > now || stop.is_some_and(|s| t.hard > s) {
                    break;
                }
                expired.push(*t);
            }
            passed += 1;
        }
        base.drain(..passed);
    }

    /// Armed sleeps on `cpu` (live or not yet pruned).
    #[cfg(test)]
    pub fn len(&self, cpu: usize) -> usize {
        self.cpus[cpu].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(thread: usize, soft: u64, hard: u64) -> SleepTimer {
        SleepTimer { soft, hard, thread, gen: 1 }
    }

    fn run(b: &mut HrtimerBases, now: u64, next_other: Option<u64>) -> Vec<usize> {
        let mut out = Vec::new();
        b.run_queues(0, now, next_other, |_| true, &mut out);
        out.iter().map(|t| t.thread).collect()
    }

    #[test]
    fn one_interrupt_runs_every_soft_expired_sleep_in_hard_order() {
        let mut b = HrtimerBases::new(1);
        // Three sleeps of 100 us with 50 us of slack, armed 0, 20 and 70 us in.
        b.start(0, t(1, 100, 150));
        b.start(0, t(2, 120, 170));
        b.start(0, t(3, 170, 220));
        // The first hard expiry: the second's range has begun, the third's not.
        assert_eq!(run(&mut b, 150, None), vec![1, 2]);
        assert_eq!(b.len(0), 1);
        assert_eq!(run(&mut b, 220, None), vec![3]);
    }

    #[test]
    fn the_walk_stops_at_the_first_sleep_not_yet_soft_expired() {
        let mut b = HrtimerBases::new(1);
        // A short-slack sleep sorts first by hard expiry and is not due:
        // the one behind it stays armed though its range has begun.
        b.start(0, t(1, 100, 100));
        b.start(0, t(2, 140, 141));
        b.start(0, t(3, 90, 300));
        assert_eq!(run(&mut b, 100, None), vec![1]);
        assert_eq!(b.len(0), 2);
        assert_eq!(run(&mut b, 141, None), vec![2, 3]);
    }

    #[test]
    fn a_pending_tick_before_a_sleeps_hard_expiry_ends_the_walk() {
        let mut b = HrtimerBases::new(1);
        b.start(0, t(1, 100, 150));
        b.start(0, t(2, 110, 400));
        // The tick at 200 sits between them in the hard order.
        assert_eq!(run(&mut b, 150, Some(200)), vec![1]);
        // At the tick itself, the second sleep's range has begun: it runs.
        assert_eq!(run(&mut b, 200, Some(200)), vec![2]);
    }

    #[test]
    fn ended_sleeps_are_dropped_without_running() {
        let mut b = HrtimerBases::new(1);
        b.start(0, t(1, 100, 150));
        b.start(0, SleepTimer { gen: 2, ..t(2, 100, 150) });
        let mut out = Vec::new();
        b.run_queues(0, 150, None, |t| t.gen == 1, &mut out);
        assert_eq!(out.iter().map(|t| t.thread).collect::<Vec<_>>(), vec![1]);
        assert_eq!(b.len(0), 0);
    }
}
