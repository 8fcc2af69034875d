//! CPU work as a calibrated busy loop, as rt-app's `run` does: a `run` op is
//! an amount of *work* (ns at this host's speed when calibrated), so a
//! preempted or slowed thread takes longer, like the simulator's work at
//! capacity 1024.

use serde::{Deserialize, Serialize};
use std::hint::black_box;

use crate::sys::thread_cpu_ns;

/// Rounds of calibration and the length of each.
const ROUNDS: usize = 5;
const ROUND_NS: u64 = 20_000_000;
/// Rounds that differ by more than this (max-min over median) mean the
/// CPU's speed is not stable (frequency scaling, a busy hypervisor).
pub const MAX_SPREAD_PCT: f64 = 5.0;

/// `iters` iterations of a dependent multiply-add the compiler cannot remove.
#[inline(never)]
pub fn spin(iters: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..iters {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

/// What calibration measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Busy-loop iterations per microsecond used for `run` (the median round).
    pub loops_per_us: f64,
    /// Every round's rate, in the order measured (empty when given by the user).
    pub rounds: Vec<f64>,
    /// (max - min) / median of the rounds, in percent.
    pub spread_pct: f64,
    /// The CPU it ran on.
    pub cpu: usize,
}

impl Calibration {
    /// A calibration given on the command line.
    pub fn given(loops_per_us: f64, cpu: usize) -> Calibration {
        Calibration { loops_per_us, rounds: Vec::new(), spread_pct: 0.0, cpu }
    }

    /// Iterations for `ns` of work.
    pub fn loops_for(&self, ns: u64) -> u64 {
        (ns as f64 * self.loops_per_us / 1000.0).round() as u64
    }

    pub fn unstable(&self) -> bool {
        self.spread_pct > MAX_SPREAD_PCT
    }

    /// One line for the report; a warning when the rounds disagree.
    pub fn describe(&self) -> String {
        if self.rounds.is_empty() {
            return format!("{:.1} loops/us (given with --loops-per-us)", self.loops_per_us);
        }
        let rounds: Vec<String> = self.rounds.iter().map(|r| format!("{r:.1}")).collect();
        format!(
            "{:.1} loops/us on CPU {} (median of {} rounds of {} ms of thread CPU time: {}; spread {:.1} %){}",
            self.loops_per_us,
            self.cpu,
            self.rounds.len(),
            ROUND_NS / 1_000_000,
            rounds.join(" "),
            self.spread_pct,
            if self.unstable() {
                format!(
                    "\nwarning   calibration rounds disagree by {:.1} % (> {MAX_SPREAD_PCT} %): this CPU's speed is not \
                     stable (cpufreq, turbo or a busy host), so `run` bursts will vary in length",
                    self.spread_pct
                )
            } else {
                String::new()
            }
        )
    }
}

/// Median and spread of `rounds` (non-empty).
pub fn summarize(rounds: Vec<f64>, cpu: usize) -> Calibration {
    let mut sorted = rounds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let spread_pct = (sorted[sorted.len() - 1] - sorted[0]) / median * 100.0;
    Calibration { loops_per_us: median, rounds, spread_pct, cpu }
}

/// Measure on the calling thread (the caller pins it to `cpu`). Rounds are
/// timed in the thread's CPU time, so a preemption by another task (a busy
/// host) does not pass for a slow CPU; what remains in the spread is the
/// CPU's own speed changing (frequency, SMT sibling, hypervisor steal).
pub fn calibrate(cpu: usize) -> Calibration {
    // Find an iteration count of about one round, then time ROUNDS of it.
    let mut iters = 100_000u64;
    loop {
        let t = thread_cpu_ns();
        spin(iters);
        let dt = thread_cpu_ns() - t;
        if dt >= ROUND_NS / 4 {
            iters = (iters as f64 * ROUND_NS as f64 / dt as f64) as u64;
            break;
        }
        iters *= 4;
    }
    let rounds = (0..ROUNDS)
        .map(|_| {
            let t = thread_cpu_ns();
            spin(iters);
            iters as f64 * 1000.0 / (thread_cpu_ns() - t).max(1) as f64
        })
        .collect();
    summarize(rounds, cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_over_five_percent_is_flagged() {
        let c = summarize(vec![1000.0, 1010.0, 990.0], 1);
        assert_eq!(c.loops_per_us, 1000.0);
        assert!((c.spread_pct - 2.0).abs() < 1e-9);
        assert!(!c.unstable() && !c.describe().contains("warning"));
        let c = summarize(vec![1000.0, 1100.0, 990.0], 1);
        assert!(c.unstable());
        assert!(c.describe().contains("disagree by 11.0 %"), "{}", c.describe());
        assert_eq!(c.loops_for(1_000_000), 1_000_000);
    }
}
