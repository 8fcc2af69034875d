//! The figures the suite compares, each taken the same way from a real and
//! a simulated run (both are a trace plus its analysis), with the least
//! data each needs before it is a figure at all.

use schedlab_analysis::{percentile, SchbenchCollector};
use schedlab_report::{Figure, NoFigure, Report};
use schedlab_scenario::Scenario;
use schedlab_trace::{EventKind, Pid, Trace, UserOp};

use crate::bands::Band;

/// Fewest samples for a median: with fewer, one sample more or less moves
/// it by a whole step of the distribution.
pub const MIN_SAMPLES_P50: u64 = 20;
/// Fewest samples for a p99: at least 2 samples at or above it, so a
/// single outlier is not the tail.
pub const MIN_SAMPLES_P99: u64 = 200;
/// Fewest events (requests, loop iterations) for a rate.
pub const MIN_EVENTS_RATE: u64 = 20;
/// Fewest handoffs for a stall fraction: one stall in fewer is over 1 %,
/// the band's floor, on its own.
pub const MIN_HANDOFFS_STALLS: u64 = 100;
/// Fewest percent of a side's wakeups of the workload that must be followed
/// by a traced switch-in for a wakeup latency: the samples are those
/// wakeups, so a capture that misses switch-ins (this host's 6.18 at times drops
/// most idle-to-task `sched_switch` events after a timer wakeup) keeps only
/// the wakeups onto a busy CPU and would report their latency as the whole.
pub const MIN_WAKEUP_COVERAGE_PCT: f64 = 90.0;
/// Fewest percent of the window the hogs of a share must have run: less
/// means something else took their CPU and the share is not theirs alone.
pub const MIN_SHARE_BUSY_PCT: f64 = 50.0;

/// A percentile the suite reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pct {
    P50,
    P99,
}

impl Pct {
    fn per_mille(self) -> u32 {
        match self {
            Pct::P50 => 500,
            Pct::P99 => 990,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Pct::P50 => "p50",
            Pct::P99 => "p99",
        }
    }
    fn min_samples(self) -> u64 {
        match self {
            Pct::P50 => MIN_SAMPLES_P50,
            Pct::P99 => MIN_SAMPLES_P99,
        }
    }
    fn band(self) -> Band {
        match self {
            Pct::P50 => Band::LatencyP50,
            Pct::P99 => Band::LatencyP99,
        }
    }
}

/// One figure of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// schbench's own wakeup latency percentile (whole µs, its histogram).
    SchbenchWakeup(Pct),
    /// schbench's `average rps`: requests completed per second of the run.
    SchbenchRps,
    /// The analysis's wakeup latency (`sched_wakeup` → switch-in) over the
    /// workload's threads.
    Wakeup(Pct),
    /// The analysis's handoff latency (a `signal` marker → the woken
    /// thread's `wait_done`) over the workload's threads.
    Handoff(Pct),
    /// cyclictest's latency: how much longer than its `sleep` each
    /// iteration of this thread took, from one `loop_end` marker to the
    /// next (its program is one `sleep`), so the timer, the wakeup, the
    /// switch and getting back to user space — from markers alone.
    TimerToRun(Pct, &'static str),
    /// Stalls (handoffs at or above the scenario's threshold) per handoff, in %.
    StallFraction,
    /// Iterations of this thread's program per second (its `loop_end` markers).
    LoopRate(&'static str),
    /// This thread's share of the workload threads' CPU time, in %.
    Share(&'static str),
    /// Of this thread's wakeups, the percentage placed on the CPU its waker
    /// ran on: each `sched_wakeup`'s `target_cpu` against the CPU of the
    /// `sched_waking` before it (traced in the waker's context). A rule of
    /// the wakeup path, read from the two events alone.
    WakerCpu(&'static str),
    /// Of this thread's loops (`loop_end` markers) in the second half of
    /// the window, the percentage that ended on this CPU: where the
    /// balancer left the thread once it has settled. A rule, read from the
    /// markers alone.
    LoopsOnCpu(&'static str, u32),
    /// Of the workload threads' wakeups, the percentage whose task was
    /// still the current task of a CPU at its `sched_waking`: woken inside
    /// its blocking window, before `__schedule()` dequeued it
    /// (`ttwu_runnable()`; it returns without sleeping). From the switches
    /// and wakings alone.
    WokenRunning,
}

/// One side of a comparison as the metrics read it.
pub struct Side<'a> {
    pub scenario: &'a Scenario,
    pub trace: &'a Trace,
    pub report: &'a Report,
    /// The run's window (the trace's clock).
    pub start_ns: u64,
    pub end_ns: u64,
    /// The workload threads' pids, in scenario order.
    pub pids: &'a [Pid],
    /// The step of the trace's timestamps: 1 µs for tracefs text, 1 ns for
    /// the model.
    pub resolution_ns: u64,
    /// Why this capture cannot support any figure (lost events, a thread
    /// that failed or could not get its policy); empty when it is sound.
    pub problems: &'a [String],
}

impl Metric {
    /// The row's metric column, unit included.
    pub fn label(self) -> String {
        match self {
            Metric::SchbenchWakeup(p) => format!("wakeup {} (us)", p.name()),
            Metric::SchbenchRps => "requests/s".into(),
            Metric::Wakeup(p) => format!("wakeup {} (us)", p.name()),
            Metric::Handoff(p) => format!("handoff {} (us)", p.name()),
            Metric::TimerToRun(p, _) => format!("timer-to-run {} (us)", p.name()),
            Metric::StallFraction => "stall fraction (%)".into(),
            Metric::LoopRate(t) => format!("{t} loops/s"),
            Metric::Share(t) => format!("{t} share (%)"),
            Metric::WakerCpu(t) => format!("{t} on waker's CPU (%)"),
            Metric::LoopsOnCpu(t, cpu) => format!("{t} loops on CPU {cpu}, 2nd half (%)"),
            Metric::WokenRunning => "woken still running (%)".into(),
        }
    }

    /// The unit the value is in (decides how it is printed).
    pub fn unit(self) -> &'static str {
        match self {
            Metric::SchbenchWakeup(_) | Metric::Wakeup(_) | Metric::Handoff(_) | Metric::TimerToRun(..) => "us",
            Metric::SchbenchRps | Metric::LoopRate(_) => "/s",
            Metric::StallFraction
            | Metric::Share(_)
            | Metric::WakerCpu(_)
            | Metric::LoopsOnCpu(..)
            | Metric::WokenRunning => "%",
        }
    }

    pub fn band(self) -> Band {
        match self {
            Metric::SchbenchWakeup(p) | Metric::Wakeup(p) | Metric::Handoff(p) | Metric::TimerToRun(p, _) => p.band(),
            Metric::SchbenchRps | Metric::LoopRate(_) => Band::Rate,
            Metric::StallFraction => Band::StallFraction,
            Metric::Share(_) | Metric::WokenRunning => Band::Share,
            Metric::WakerCpu(_) | Metric::LoopsOnCpu(..) => Band::Placement,
        }
    }

    /// The figure on one side, or why the side cannot give it.
    pub fn figure(self, side: &Side) -> Figure {
        if !side.problems.is_empty() {
            return Err(NoFigure::from(side.problems.join("; ")));
        }
        let secs = side.end_ns.saturating_sub(side.start_ns) as f64 / 1e9;
        if secs <= 0.0 {
            return Err(NoFigure::from("empty window"));
        }
        match self {
            Metric::SchbenchWakeup(p) => {
                let sb = schbench(side)?;
                let n = sb.wakeup.nr_samples;
                if n < p.min_samples() {
                    return Err(NoFigure::from(too_few(n, "wakeups", p)));
                }
                let v = sb.wakeup.percentiles(&[p.per_mille() as f64 / 10.0])[0] as f64;
                // schbench's histogram is in whole microseconds on both sides.
                resolved(self.band(), v, 1.0, p)
            }
            Metric::SchbenchRps => {
                let sb = schbench(side)?;
                if sb.completed < MIN_EVENTS_RATE {
                    return Err(NoFigure::from(format!(
                        "{} requests completed (a rate needs {MIN_EVENTS_RATE})",
                        sb.completed
                    )));
                }
                Ok(sb.completed as f64 / secs)
            }
            Metric::Wakeup(p) => {
                let tasks = &side.report.metrics.tasks;
                let wakeups: u64 = tasks.iter().map(|t| t.wakeups).sum();
                let seen = tasks.iter().map(|t| t.wakeup_sketch.count()).sum::<u64>();
                if wakeups > 0 && (100 * seen) as f64 / (wakeups as f64) < MIN_WAKEUP_COVERAGE_PCT {
                    return Err(NoFigure::from(format!(
                        "{seen} of {wakeups} wakeups have a traced switch-in (the capture misses switches; \
                         needs {MIN_WAKEUP_COVERAGE_PCT} %)"
                    )));
                }
                latency(side, p, "wakeups", |t| &t.wakeup_sketch, self.band())
            }
            Metric::TimerToRun(p, thread) => {
                let pid = pid_of(side, thread)?;
                let idx = side.scenario.threads.iter().position(|t| t.name == thread).unwrap_or(0);
                let sleep = match side.scenario.threads[idx].program.ops.as_slice() {
                    [schedlab_scenario::Op::Sleep { ns }] => *ns,
                    _ => return Err(NoFigure::from(format!("{thread}'s program is not a single `sleep`"))),
                };
                let ends: Vec<u64> = side
                    .trace
                    .in_time_order()
                    .iter()
                    .filter(|e| e.ts >= side.start_ns && e.ts <= side.end_ns)
                    .filter(|e| matches!(e.kind, EventKind::User { pid: q, op: UserOp::LoopEnd { .. } } if q == pid))
                    .map(|e| e.ts)
                    .collect();
                let mut late: Vec<u64> = ends.windows(2).map(|w| (w[1] - w[0]).saturating_sub(sleep)).collect();
                late.sort_unstable();
                let n = late.len() as u64;
                if n < p.min_samples() {
                    return Err(NoFigure::from(too_few(n, "periods", p)));
                }
                let ns = percentile(&late, p.per_mille()).unwrap_or(0);
                resolved(self.band(), ns as f64 / 1000.0, side.resolution_ns as f64 / 1000.0, p)
            }
            Metric::Handoff(p) => latency(side, p, "handoffs", |t| &t.handoff_sketch, self.band()),
            Metric::StallFraction => {
                let h = side.report.handoffs();
                if h < MIN_HANDOFFS_STALLS {
                    return Err(NoFigure::from(format!("{h} handoffs (a stall fraction needs {MIN_HANDOFFS_STALLS})")));
                }
                Ok(100.0 * side.report.metrics.stall_count() as f64 / h as f64)
            }
            Metric::LoopRate(thread) => {
                let pid = pid_of(side, thread)?;
                let n = side
                    .trace
                    .events
                    .iter()
                    .filter(|e| e.ts >= side.start_ns && e.ts <= side.end_ns)
                    .filter(|e| matches!(e.kind, EventKind::User { pid: p, op: UserOp::LoopEnd { .. } } if p == pid))
                    .count() as u64;
                if n < MIN_EVENTS_RATE {
                    return Err(NoFigure::from(format!("{thread} ended {n} loops (a rate needs {MIN_EVENTS_RATE})")));
                }
                Ok(n as f64 / secs)
            }
            Metric::Share(thread) => {
                let pid = pid_of(side, thread)?;
                let tasks = &side.report.metrics.tasks;
                let total: u64 = tasks.iter().map(|t| t.runtime_ns).sum();
                let busy = 100.0 * total as f64 / (secs * 1e9);
                if busy < MIN_SHARE_BUSY_PCT {
                    return Err(NoFigure::from(format!(
                        "the workload ran {busy:.0} % of the window (a share needs {MIN_SHARE_BUSY_PCT} %)"
                    )));
                }
                let mine = side.report.metrics.task(pid).map_or(0, |t| t.runtime_ns);
                Ok(100.0 * mine as f64 / total as f64)
            }
            Metric::WakerCpu(thread) => {
                let pid = pid_of(side, thread)?;
                let (mut waking_cpu, mut placed, mut on_waker) = (None, 0u64, 0u64);
                for e in side.trace.in_time_order().iter().filter(|e| e.ts >= side.start_ns && e.ts <= side.end_ns) {
                    match e.kind {
                        EventKind::SchedWaking { pid: p, .. } if p == pid => waking_cpu = Some(e.cpu),
                        EventKind::SchedWakeup { pid: p, target_cpu, .. } if p == pid => {
                            if let Some(cpu) = waking_cpu.take() {
                                placed += 1;
                                on_waker += u64::from(cpu == target_cpu);
                            }
                        }
                        _ => {}
                    }
                }
                if placed < MIN_EVENTS_RATE {
                    return Err(NoFigure::from(format!(
                        "{placed} wakeups of {thread} with their sched_waking (a placement needs {MIN_EVENTS_RATE})"
                    )));
                }
                Ok(100.0 * on_waker as f64 / placed as f64)
            }
            Metric::LoopsOnCpu(thread, cpu) => {
                let pid = pid_of(side, thread)?;
                let half = side.start_ns + (side.end_ns - side.start_ns) / 2;
                let (mut loops, mut on_cpu) = (0u64, 0u64);
                for e in side.trace.events.iter().filter(|e| e.ts >= half && e.ts <= side.end_ns) {
                    if matches!(e.kind, EventKind::User { pid: p, op: UserOp::LoopEnd { .. } } if p == pid) {
                        loops += 1;
                        on_cpu += u64::from(e.cpu == cpu);
                    }
                }
                if loops < MIN_EVENTS_RATE {
                    return Err(NoFigure::from(format!(
                        "{thread} ended {loops} loops in the second half (a share needs {MIN_EVENTS_RATE})"
                    )));
                }
                Ok(100.0 * on_cpu as f64 / loops as f64)
            }
            Metric::WokenRunning => {
                let (woken, running) = woken_running(side);
                if woken < MIN_EVENTS_RATE {
                    return Err(NoFigure::from(format!(
                        "{woken} wakeups of the workload (a share needs {MIN_EVENTS_RATE})"
                    )));
                }
                Ok(100.0 * running as f64 / woken as f64)
            }
        }
    }
}

/// The workload's `sched_waking`s in the window, and how many found their
/// task current on some CPU (the last `sched_switch` there switched it in).
fn woken_running(side: &Side) -> (u64, u64) {
    let mut current: std::collections::HashMap<u32, Pid> = std::collections::HashMap::new();
    let (mut woken, mut running) = (0u64, 0u64);
    for e in side.trace.in_time_order().iter().filter(|e| e.ts <= side.end_ns) {
        match e.kind {
            EventKind::SchedSwitch { next_pid, .. } => {
                current.insert(e.cpu, next_pid);
            }
            EventKind::SchedWaking { pid, .. } if e.ts >= side.start_ns && side.pids.contains(&pid) => {
                woken += 1;
                running += u64::from(current.values().any(|&p| p == pid));
            }
            _ => {}
        }
    }
    (woken, running)
}

fn too_few(n: u64, what: &str, p: Pct) -> String {
    format!("{n} {what} (a {} needs {})", p.name(), p.min_samples())
}

/// `v` µs, unless a step of `resolution_us` is too coarse for the band. A
/// nanosecond step (the model's) is exact for every band: even a 0 is a
/// figure there (its ratio fails a latency band, as it should).
fn resolved(band: Band, v: f64, resolution_us: f64, p: Pct) -> Figure {
    if resolution_us <= 0.001 {
        return Ok(v);
    }
    match band.min_resolved(resolution_us) {
        Some(min) if v < min => Err(NoFigure::from(format!(
            "{} {v:.1} us is below {min:.1} us, where the trace's {resolution_us} us steps alone could cross the band",
            p.name()
        ))),
        _ => Ok(v),
    }
}

fn latency(
    side: &Side,
    p: Pct,
    what: &str,
    samples: impl Fn(&schedlab_analysis::TaskMetrics) -> &schedlab_analysis::LatencySketch,
    band: Band,
) -> Figure {
    let all = side.report.metrics.merged(samples);
    let n = all.count();
    if n < p.min_samples() {
        return Err(NoFigure::from(too_few(n, what, p)));
    }
    let ns = all.percentile(p.per_mille()).unwrap_or(0);
    resolved(band, ns as f64 / 1000.0, side.resolution_ns as f64 / 1000.0, p)
}

fn pid_of(side: &Side, thread: &str) -> Result<Pid, NoFigure> {
    side.scenario
        .threads
        .iter()
        .position(|t| t.name == thread)
        .and_then(|i| side.pids.get(i).copied())
        .ok_or_else(|| NoFigure(format!("the scenario has no thread `{thread}`")))
}

/// schbench's figures over the run's window; a broken invariant (a worker
/// run without a post) means the markers are not schbench's and no figure
/// is taken from them.
fn schbench(side: &Side) -> Result<schedlab_analysis::SchbenchReport, NoFigure> {
    let mut c = SchbenchCollector::new(&side.trace.table, Some(side.end_ns));
    if !c.applies() {
        return Err(NoFigure::from("the run has no schbench markers"));
    }
    for ev in side.trace.in_time_order().iter().filter(|e| e.ts >= side.start_ns) {
        c.observe(ev);
    }
    let r = c.finish(side.end_ns - side.start_ns);
    if !r.problems.is_empty() {
        return Err(NoFigure::from(format!("schbench invariant broken: {}", r.problems.join("; "))));
    }
    Ok(r)
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
