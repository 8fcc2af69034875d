//! Timer wakeups on one CPU: how late an absolute CLOCK_MONOTONIC sleep
//! ends after the CPU idled for the sleep's length, and the same while a
//! nice-19 spinner keeps the CPU busy (the timer interrupt then preempts
//! the spinner: no idle exit).
//!
//! The wake probe measures an IPI ending the idle; this one the CPU's own
//! timer. On bare metal they end the same idle state; in a VM the guest's
//! timer is an hrtimer in the host that must fire and wake the vCPU thread,
//! a different path with its own cost.
//!
//! The sleeper (pinned, SCHED_OTHER, timer slack 1 ns so that the kernel
//! does not defer the expiry on purpose) sleeps with `clock_nanosleep`
//! TIMER_ABSTIME until the idle length after it last woke and records its
//! oversleep: the CLOCK_MONOTONIC stamp on waking minus the requested time.

use super::error::ProbeError;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use schedlab_topology::host::{Percentiles, TimerProbe};

use super::wake::{spinner, WARMUP};
use super::ProbeBudget;
use crate::sys::{now_ns, set_affinity, set_comm, sleep_until};

/// The sleep in the busy phase: its length does not matter, the CPU is busy.
const BUSY_SLEEP_NS: u64 = 50_000;
/// The slack the sleeper asks for (prctl takes 0 as "the default", 50 us).
const SLACK_NS: u64 = 1;

/// One block plan entry: the sleep length, and whether the round is kept.
type Round = (u64, bool);

/// After `settle_ns`, sleep to `last wake + length` for each round; the
/// oversleeps of kept rounds per distinct length, in `lengths` order.
fn sleeper(
    cpu: usize,
    settle_ns: u64,
    lengths: &[u64],
    order: &[Round],
    deadline: u64,
) -> Result<Vec<Vec<u64>>, ProbeError> {
    set_affinity(&[cpu]).map_err(|source| ProbeError::Pin { who: "the sleeper ", cpu, source })?;
    set_comm("schedlab-timer");
    // SAFETY: a plain prctl on the calling thread.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, SLACK_NS as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(ProbeError::os(format!("prctl(PR_SET_TIMERSLACK, {SLACK_NS})")));
    }
    sleep_until(now_ns() + settle_ns);
    let mut samples = vec![Vec::new(); lengths.len()];
    let mut woke = now_ns();
    for &(len, keep) in order {
        let target = woke + len;
        if target > deadline {
            return Err(ProbeError::Timeout("the timer probe ran past its deadline"));
        }
        sleep_until(target);
        woke = now_ns();
        if keep {
            let i = lengths.iter().position(|&l| l == len).expect("planned lengths come from `lengths`");
            samples[i].push(woke.saturating_sub(target));
        }
    }
    Ok(samples)
}

/// `rounds` of one sleep length after the warm-up: a plan for [`sleeper`].
fn plan(len: u64, rounds: usize) -> Vec<Round> {
    let mut order = vec![(len, false); WARMUP];
    order.extend(std::iter::repeat_n((len, true), rounds));
    order
}

/// The busy phase: a nice-19 spinner holds `cpu`; the sleeper's timer
/// interrupts it and the wakeup preempts it. The sleeper's tid and its
/// oversleeps.
fn busy_phase(cpu: usize, order: &[Round], deadline: u64) -> Result<(i32, Vec<u64>), ProbeError> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let spin = s.spawn(|| spinner(&stop, cpu, deadline));
        // The first 5 ms let the spinner get onto the CPU.
        let sleep = s.spawn(|| {
            let tid = crate::sys::gettid();
            sleeper(cpu, 5_000_000, &[BUSY_SLEEP_NS], order, deadline).map(|mut v| (tid, v.remove(0)))
        });
        let slept = sleep.join().map_err(|_| ProbeError::Panicked("the sleeper")).and_then(|r| r);
        stop.store(true, SeqCst);
        spin.join().map_err(|_| ProbeError::Panicked("the spinner")).and_then(|r| r)?;
        slept
    })
}

/// The sleeper alone on `cpu` (the CPU idles between its timers): its tid
/// and oversleeps per length.
fn idle_phase(cpu: usize, lengths: &[u64], order: &[Round], deadline: u64) -> Result<(i32, Vec<Vec<u64>>), ProbeError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let tid = crate::sys::gettid();
            sleeper(cpu, 0, lengths, order, deadline).map(|v| (tid, v))
        })
        .join()
        .map_err(|_| ProbeError::Panicked("the sleeper"))?
    })
}

/// The busy phase once more, for the capture probe while the runner's
/// capture records, `samples` times. Returns the sleeper's tid: the caller
/// reads its `sched_wakeup` and `sched_switch` pairs from the CPU's buffer.
pub fn traced_busy_timer(cpu: usize, samples: usize, deadline: u64) -> Result<i32, ProbeError> {
    busy_phase(cpu, &plan(BUSY_SLEEP_NS, samples), deadline).map(|(tid, _)| tid)
}

/// The sleep of the traced idle phase: long enough for the idle loop to
/// stop the tick (HZ 250-1000), as cyclictest's 1 ms period does.
pub const TRACED_IDLE_SLEEP_NS: u64 = 1_000_000;

/// The same for an idle `cpu`: the sleeper alone sleeps
/// [`TRACED_IDLE_SLEEP_NS`] `samples` times. Returns its tid.
pub fn traced_idle_timer(cpu: usize, samples: usize, deadline: u64) -> Result<i32, ProbeError> {
    let len = TRACED_IDLE_SLEEP_NS;
    idle_phase(cpu, &[len], &plan(len, samples), deadline).map(|(tid, _)| tid)
}

/// Timer wakeups on `cpu` (a kernel CPU number, where nothing else of ours
/// runs) after each idle length of `budget`, then on the busy `cpu`.
pub fn timer_probe(cpu: usize, budget: &ProbeBudget) -> Result<TimerProbe, ProbeError> {
    let lengths = &budget.idle_lengths_ns;
    // Blocks of one length after warm-up rounds, spread over `passes`
    // sweeps, as the wake probe does and for the same reasons (the host
    // adapts to how long the vCPU halted recently; a burst of other load
    // should spoil a part of each length, not all of one).
    let passes = budget.passes.max(1);
    let mut order: Vec<Round> = Vec::new();
    for pass in 0..passes {
        for &l in lengths {
            let c = budget.samples_for(l);
            let share = c / passes + usize::from(pass < c % passes);
            if share > 0 {
                order.extend(std::iter::repeat_n((l, false), WARMUP));
                order.extend(std::iter::repeat_n((l, true), share));
            }
        }
    }
    let busy_order = plan(BUSY_SLEEP_NS, budget.busy_samples);
    let planned: u64 = order.iter().chain(&busy_order).map(|&(l, _)| l + 20_000).sum();
    let deadline = now_ns() + 2 * planned + 1_000_000_000;
    let (_, idle) = idle_phase(cpu, lengths, &order, deadline)?;
    let (_, busy) = busy_phase(cpu, &busy_order, deadline)?;

    let by_idle = lengths.iter().zip(&idle).filter_map(|(&l, v)| Percentiles::of(v).map(|p| (l, p))).collect();
    Ok(TimerProbe { cpu, slack_ns: SLACK_NS, by_idle, busy: Percentiles::of(&busy) })
}
