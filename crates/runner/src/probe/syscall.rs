//! What a workload op's own syscalls and the real runner's capture cost:
//! the median time of an eventfd `write()` with no waiter (a small
//! syscall's entry, work and exit), of a `write()` to `trace_marker` while
//! the capture records (each marker of a captured run), and of one sched
//! tracepoint. Batches of calls on one pinned thread.

use super::error::ProbeError;
use std::io::Write;

use schedlab_topology::host::Percentiles;

use crate::sys::{now_ns, set_affinity};

const BATCHES: usize = 21;
const CALLS: u64 = 500;

/// Per-call cost of `f`, median and p99 over batches.
fn per_call(mut f: impl FnMut() -> Result<(), ProbeError>) -> Result<Percentiles, ProbeError> {
    let mut per = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let t0 = now_ns();
        for _ in 0..CALLS {
            f()?;
        }
        per.push((now_ns() - t0) / CALLS);
    }
    Percentiles::of(&per).ok_or(ProbeError::Empty("no samples"))
}

/// The eventfd `write()` cost on `cpu`.
pub fn syscall_probe(cpu: usize) -> Result<Percentiles, ProbeError> {
    set_affinity(&[cpu]).map_err(|source| ProbeError::Pin { who: "", cpu, source })?;
    // SAFETY: plain syscalls on a descriptor this function owns.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(ProbeError::os("eventfd"));
    }
    let one = 1u64.to_ne_bytes();
    let result = per_call(|| {
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        let n = unsafe { libc::write(fd, one.as_ptr().cast(), 8) };
        if n == 8 {
            Ok(())
        } else {
            Err(ProbeError::os("eventfd write"))
        }
    });
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    result
}

/// What a capture like `schedlab real`'s costs: a `trace_marker` write, and
/// one sched tracepoint (the per-event difference of the same-CPU switch
/// probe with the real runner's six sched events enabled and without).
pub struct CaptureCosts {
    pub marker: Percentiles,
    /// Per event; `None` when the events were not counted.
    pub tracepoint: Option<Percentiles>,
    /// Events the traced switch probe wrote per handoff (counted, not assumed).
    pub events_per_handoff: f64,
    /// A timer wakeup onto the busy CPU: its `sched_wakeup` to the
    /// `sched_switch` into the sleeper, from the capture's own records;
    /// `None` (with the reason) when too few pairs were recorded.
    pub timer_wake_to_switch: Result<Percentiles, ProbeError>,
    /// The same for a timer ending the idle of a CPU (the switch out of the
    /// idle task), with the CPU it was recorded on: the first of the CPUs
    /// tried whose capture has those switches.
    pub timer_idle_wake_to_switch: Result<(usize, Percentiles), ProbeError>,
}

/// Measure [`CaptureCosts`] on `cpu` with the real runner's own protocol:
/// the run lock, a leftover restore, the settings saved to the state file
/// before any is changed, the runner's capture configuration, and every
/// setting put back (tracefs unmounted if this mounted it) — so a kill
/// midway is undone by the next `schedlab real` or probe, as for a run.
/// Needs root. Refused when tracing is in use by someone else (a tracer,
/// or events enabled): its trace would get the probe's events.
pub fn capture_cost_probe(
    cpu: usize,
    others: &[usize],
    budget: &super::ProbeBudget,
) -> Result<CaptureCosts, ProbeError> {
    use crate::state::{state_dir, RunLock};
    use crate::tracefs::{restore, CaptureSettings, Tracefs};
    let lock = RunLock::acquire(&state_dir())?;
    lock.restore_leftover()?;
    let tracefs = Tracefs::open().map_err(ProbeError::Tracefs)?;
    let settings = CaptureSettings { buffer_kb: 8192, stat_runtime: false, rt_runtime_us: None, autogroup: None };
    let saved = tracefs.save(&settings)?;
    let read = |f: &str| tracefs.read(f).map(|s| s.trim().to_string());
    if read("current_tracer")? != "nop" || !matches!(read("events/enable")?.as_str(), "0" | "") {
        if tracefs.mounted_by_us {
            let _ = restore(&saved);
        }
        return Err(ProbeError::TracingInUse);
    }
    let untraced = super::switch_probe(cpu, budget);
    lock.write_state(&saved)?;
    let measured = tracefs.configure(&settings).map_err(ProbeError::from).and_then(|()| {
        let traced = super::switch_probe(cpu, budget)?;
        let stats = read(&format!("per_cpu/cpu{cpu}/stats"))?;
        let count =
            |key: &str| stats.lines().find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok()).unwrap_or(0);
        let events = count("entries:") + count("overrun:");
        let marker = std::thread::scope(|s| s.spawn(|| marker_writes(&tracefs.root, cpu)).join())
            .map_err(|_| ProbeError::Panicked("marker probe"))??;
        let samples = budget.busy_samples;
        let tail = timer_wake_to_switch(&tracefs, cpu, false, |d| super::timer::traced_busy_timer(cpu, samples, d));
        // A short pilot finds a CPU whose capture has switches out of idle;
        // the measurement there takes IDLE_TAIL_SAMPLES_PER_BUSY times the
        // busy samples, because its p99 is what the model draws the tail
        // from (a p99 of 500 samples is their 5th largest; four runs of 500
        // gave 8 to 70 us).
        let mut idle_tail = Err(ProbeError::Empty("no CPU tried"));
        let mut missing = Vec::new();
        for &c in std::iter::once(&cpu).chain(others) {
            let pilot = MIN_TAIL_PAIRS * 2;
            let found = timer_wake_to_switch(&tracefs, c, true, |d| super::timer::traced_idle_timer(c, pilot, d))
                .and_then(|_| {
                    let n = samples * IDLE_TAIL_SAMPLES_PER_BUSY;
                    timer_wake_to_switch(&tracefs, c, true, |d| super::timer::traced_idle_timer(c, n, d))
                });
            match found {
                Ok(p) => {
                    idle_tail = Ok((c, p));
                    break;
                }
                Err(e) => missing.push((c, e)),
            }
        }
        if !missing.is_empty() && idle_tail.is_err() {
            idle_tail = Err(ProbeError::NoIdleTail { tried: missing });
        }
        tracefs.write("tracing_on", "1")?;
        Ok((traced, events, marker, tail, idle_tail))
    });
    let restored = restore(&saved);
    lock.clear_state();
    restored.map_err(ProbeError::Restore)?;
    let (traced, events, marker, timer_wake_to_switch, timer_idle_wake_to_switch) = measured?;
    let untraced = untraced?;
    let handoffs = (budget.switch_batches * budget.switch_round_trips * 2) as f64;
    let events_per_handoff = events as f64 / handoffs;
    let tracepoint = (events_per_handoff >= 1.0).then(|| {
        let per = |a: u64, b: u64| ((a.saturating_sub(b)) as f64 / events_per_handoff).round() as u64;
        Percentiles {
            n: traced.n,
            p50: per(traced.p50, untraced.p50),
            p99: per(traced.p99, untraced.p99),
            max: per(traced.max, untraced.max),
        }
    });
    Ok(CaptureCosts { marker, tracepoint, events_per_handoff, timer_wake_to_switch, timer_idle_wake_to_switch })
}

/// Fewest recorded wakeup-to-switch pairs for a median.
const MIN_TAIL_PAIRS: usize = 20;
/// The idle phase's samples per busy-phase sample (1 ms each: 2 s at the full budget).
const IDLE_TAIL_SAMPLES_PER_BUSY: usize = 4;

/// One of the timer probe's phases (`run`, given a deadline, returns the
/// sleeper's tid) while the capture records, then each of the sleeper's
/// `sched_wakeup` on `cpu` paired with the next `sched_switch` into it on
/// that CPU — from the idle task when `from_idle`, else from the spinner:
/// what the kernel does between the timer's callback waking the task and
/// the switch (the rest of the timer interrupt, its return, on an idle CPU
/// leaving the idle loop, `schedule()` up to the tracepoint). A wakeup whose
/// switch is not recorded is not paired: switches out of the idle task are
/// not recorded on every kernel (this project's 6.18 guest records none on
/// CPU 1), so a CPU without them gives too few pairs.
fn timer_wake_to_switch(
    tracefs: &crate::tracefs::Tracefs,
    cpu: usize,
    from_idle: bool,
    run: impl FnOnce(u64) -> Result<i32, ProbeError>,
) -> Result<Percentiles, ProbeError> {
    use schedlab_trace::{parse_ftrace, EventKind};
    tracefs.write("tracing_on", "0")?;
    tracefs.clear()?;
    tracefs.write("tracing_on", "1")?;
    let deadline = now_ns() + 10_000_000_000;
    let tid = run(deadline)?;
    tracefs.write("tracing_on", "0")?;
    let file = format!("per_cpu/cpu{cpu}/trace");
    let text = tracefs.read(&file)?;
    let trace = parse_ftrace(&file, &text)?;
    let mut woke_at = None;
    let mut gaps = Vec::new();
    for e in trace.in_time_order().iter().filter(|e| e.cpu as usize == cpu) {
        match e.kind {
            EventKind::SchedWakeup { pid, target_cpu, .. } if pid == tid && target_cpu as usize == cpu => {
                woke_at = Some(e.ts)
            }
            EventKind::SchedSwitch { prev_pid, next_pid, .. } if next_pid == tid => {
                if let Some(w) = woke_at.take() {
                    if (prev_pid == 0) == from_idle {
                        gaps.push(e.ts.saturating_sub(w));
                    }
                }
            }
            _ => {}
        }
    }
    if gaps.len() < MIN_TAIL_PAIRS {
        return Err(ProbeError::TooFewPairs { found: gaps.len(), cpu, need: MIN_TAIL_PAIRS });
    }
    Percentiles::of(&gaps).ok_or(ProbeError::Empty("no samples"))
}

/// `trace_marker` writes on `cpu` while the capture is configured.
fn marker_writes(dir: &std::path::Path, cpu: usize) -> Result<Percentiles, ProbeError> {
    set_affinity(&[cpu]).map_err(|source| ProbeError::Pin { who: "", cpu, source })?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("trace_marker"))
        .map_err(|source| ProbeError::Os { call: "trace_marker".into(), source })?;
    // About the length of the runner's markers ("schedlab signal obj=3").
    per_call(|| {
        f.write_all(b"schedlab probe obj=0")
            .map_err(|source| ProbeError::Os { call: "trace_marker write".into(), source })
    })
}

/// What the futex syscalls cost beyond nothing, per call on `cpu`: a
/// `FUTEX_WAIT` whose word no longer holds the expected value (it hashes,
/// locks the bucket, reads the word and returns `-EAGAIN`: the setup every
/// wait pays before it can sleep) and a `FUTEX_WAKE` with nobody queued
/// (it hashes and finds no waiter).
pub fn futex_probe(cpu: usize) -> Result<(Percentiles, Percentiles), ProbeError> {
    set_affinity(&[cpu]).map_err(|source| ProbeError::Pin { who: "", cpu, source })?;
    let word = std::sync::atomic::AtomicU32::new(1);
    let wait = per_call(|| match super::futex::wait(&word, 0, 1_000_000) {
        super::futex::Waited::Changed => Ok(()),
        other => Err(ProbeError::Futex(format!("{other:?}"))),
    })?;
    let wake = per_call(|| {
        super::futex::wake(&word, 1);
        Ok(())
    })?;
    Ok((wait, wake))
}
