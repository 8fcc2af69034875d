//! Run a scenario on the host kernel and capture what its scheduler did, as
//! a [`Trace`] the analysis reads exactly as it reads a simulated one.
//!
//! [`run_real`] plans the run ([`Plan`]: host CPUs, `--remap`, duration, what
//! the host cannot honour), then the calling process becomes the
//! *supervisor* and forks a *worker*:
//!
//! * the **supervisor** takes a lock (one real run at a time: the ring
//!   buffer is machine-wide), forks a *restorer* ([`restorer`]: a process
//!   that puts everything back within a second if the supervisor is
//!   SIGKILLed), restores tracefs settings an earlier run left behind (its
//!   supervisor and restorer were both killed), saves the settings it will change
//!   to `/run/schedlab/tracefs-saved.json`, enables `sched_switch`,
//!   `sched_waking`, `sched_wakeup`, `sched_wakeup_new`,
//!   `sched_migrate_task`, `sched_pi_setprio` (and `sched_stat_runtime` on
//!   request) with `trace_clock=mono` and a sized buffer, and waits for the
//!   worker with a deadline; then it stops tracing, reads `trace`, and
//!   restores every setting — after a normal end, an error, Ctrl-C, or a
//!   SIGKILLed worker;
//! * the **worker** (`PR_SET_PDEATHSIG`: it dies with the supervisor) runs a
//!   SCHED_FIFO 99 watchdog pinned away from the scenario's RT threads,
//!   calibrates the busy loop, creates one thread per scenario thread (comm,
//!   affinity or start CPU, policy, nice, RT priority, custom slice via
//!   `sched_setattr`), holds them at a barrier, writes a start marker and
//!   lets them go; each runs its program ([`program`]) and writes the same
//!   `trace_marker` lines at the same points as the simulator emits its
//!   `User` events (`schedlab signal obj=efd0` just before the eventfd
//!   `write()`, `schedlab wait_done obj=efd0` just after `read()` returns,
//!   ...). At the duration every thread stops; blocked ones are woken.
//!
//! The captured text is parsed by the project's ftrace reader with the
//! scenario's object names, so marker objects get the simulator's indices,
//! and cut to the run's window (start marker to stop). Events of other
//! processes are kept: a kworker or another process that delayed a wakee is
//! part of the story the attribution tells; callers restrict per-thread
//! tables to [`RealRun::tids`].
//!
//! Limits: timestamps in `trace` are microseconds; the host's
//! `sched_features` are whatever they are (a scenario's `features` are
//! reported, not applied); `sched_rt_runtime_us` is only changed with
//! [`RealOptions::set_rt_runtime`]. An unexpanded ring buffer
//! (`buffer_size_kb` reading `7 (expanded: 1408)`) is restored to its
//! expanded size, the one state that cannot be put back byte for byte.

pub mod calibrate;
pub mod cgroup;
mod error;
mod fork;
pub mod plan;
pub mod probe;
pub mod program;
pub mod restorer;
mod session;
pub mod state;
pub mod steal;
mod supervisor;
pub mod sys;
pub mod tracefs;
pub mod worker;

use std::collections::BTreeMap;

use schedlab_scenario::Scenario;
use schedlab_trace::ftrace::{parse_ftrace_with, ParseOptions};
use schedlab_trace::{Pid, TaskInfo, Trace};
use serde::{Deserialize, Serialize};

pub use calibrate::Calibration;
pub use error::RunnerError;
pub use plan::{Plan, RealOptions, ThreadPlan};
pub use worker::{ThreadReport, WorkerReport};

/// How the note on a capture's missing switches begins (a report that
/// summarises several runs replaces it).
pub const MISSING_SWITCHES_NOTE: &str = "the capture is missing";

/// A finished real run.
#[derive(Clone, Debug)]
pub struct RealRun {
    /// The captured events from the start marker to the end of the run, with
    /// the workload threads' comms and every other task the trace named.
    pub trace: Trace,
    /// The window, CLOCK_MONOTONIC ns (the trace's clock).
    pub start_ns: u64,
    pub end_ns: u64,
    pub calibration: Calibration,
    /// Per scenario thread, in order: its tid, what could not be applied, how it ended.
    pub threads: Vec<ThreadReport>,
    pub plan: Plan,
    /// tid → host CPUs it may use, for work conservation and attribution.
    pub allowed: BTreeMap<Pid, Vec<u32>>,
    /// Everything the user should know: plan notes, degraded settings, lost events.
    pub notes: Vec<String>,
    /// Events in the whole capture, before cutting to the window.
    pub events_captured: usize,
    /// Ring-buffer overruns and drops reported by tracefs.
    pub lost_events: u64,
    /// Switches the capture is missing, put back (`schedlab_trace::repair`),
    /// counted over the window.
    pub repairs: schedlab_trace::RepairStats,
    /// `uname -r`.
    pub kernel: String,
    pub worker_pid: i32,
    /// Each scenario cgroup's `cpu.stat` counters at the end of the run.
    pub cgroup_stats: Vec<cgroup::CgroupStat>,
    /// Each host CPU's steal over the window ([`steal`]).
    pub steal: Vec<steal::CpuSteal>,
}

impl RealRun {
    /// The workload threads' tids, in scenario order (a thread whose
    /// session process never reported has none, and is left out).
    pub fn tids(&self) -> Vec<Pid> {
        self.threads.iter().map(|t| t.tid).filter(|&t| t > 0).collect()
    }
}

/// What a capture produced before it is parsed: everything [`assemble`]
/// needs to build a [`RealRun`], so a capture taken in one place (a VM
/// guest) can be analysed in another (the host that booted it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RawCapture {
    pub plan: Plan,
    /// `uname -r` where the capture ran.
    pub kernel: String,
    /// The tracefs text (skipped in serialization: it travels as its own frames).
    #[serde(skip)]
    pub text: String,
    pub report: WorkerReport,
    pub lost_events: u64,
    pub notes: Vec<String>,
    pub worker_pid: i32,
    #[serde(default)]
    pub cgroup_stats: Vec<cgroup::CgroupStat>,
}

/// Ring-buffer bytes per captured sched event, measured on this host
/// (2026-12-05, Linux 6.18: a tracefs instance with the switch, wakeup and
/// migration events over 300 1-ms sleeps held 3427 events in 181 088 bytes
/// of `per_cpu/cpuN/stats`, 52.8 each).
pub const RING_BYTES_PER_EVENT: u64 = 53;
/// The same events read back as `trace` text: 474 358 bytes, 138 each
/// (same measurement; a real run of asym_min-2cpu gave 112 with its markers).
pub const TEXT_BYTES_PER_EVENT: u64 = 138;
/// A parsed event with its share of the analysis (the simulator's
/// measured `TRACE_EVENT_BYTES`).
pub const PARSED_BYTES_PER_EVENT: u64 = 64;

/// The most memory a capture can take: every CPU's ring buffer full (the
/// kernel's memory), then all of it read back as text and parsed (ours).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureSize {
    /// CPUs the kernel gives a ring buffer (every online one).
    pub cpus: u64,
    pub buffer_kb: u64,
    pub bytes: u64,
}

/// [`CaptureSize`] of running `scenario` with `opts` on this host.
pub fn capture_size(scenario: &Scenario, opts: &RealOptions) -> Result<CaptureSize, RunnerError> {
    let host_cpus = sys::allowed_cpus().map_err(|e| RunnerError::Syscall { call: "sched_getaffinity", source: e })?;
    let plan = Plan::new(scenario, opts, &host_cpus)?;
    // SAFETY: sysconf reads a system constant.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let cpus = u64::try_from(online).unwrap_or(0).max(host_cpus.len() as u64);
    let buffer_kb = plan.buffer_kb(opts);
    Ok(CaptureSize { cpus, buffer_kb, bytes: capture_bytes(cpus, buffer_kb) })
}

/// What reading a full ring back costs on top of the ring, per ring byte:
/// its events as text, then parsed (about 3.8).
pub fn read_back_factor() -> f64 {
    (TEXT_BYTES_PER_EVENT + PARSED_BYTES_PER_EVENT) as f64 / RING_BYTES_PER_EVENT as f64
}

/// The memory of `cpus` full ring buffers of `buffer_kb` each, read and parsed.
pub fn capture_bytes(cpus: u64, buffer_kb: u64) -> u64 {
    let ring = cpus.saturating_mul(buffer_kb).saturating_mul(1024);
    let events = ring / RING_BYTES_PER_EVENT;
    ring.saturating_add(events.saturating_mul(TEXT_BYTES_PER_EVENT + PARSED_BYTES_PER_EVENT))
}

/// Run `scenario` on this host and capture it, without parsing the trace.
/// The calling process must be single-threaded (it forks the worker); it
/// must be root (tracefs, SCHED_FIFO).
pub fn capture_real(scenario: &Scenario, opts: &RealOptions) -> Result<RawCapture, RunnerError> {
    let host_cpus = sys::allowed_cpus().map_err(|e| RunnerError::Syscall { call: "sched_getaffinity", source: e })?;
    let plan = Plan::new(scenario, opts, &host_cpus)?;
    check_uclamp(scenario)?;
    let cap = supervisor::supervise(scenario, &plan, opts)?;
    Ok(RawCapture {
        plan,
        kernel: sys::kernel_release(),
        text: cap.text,
        report: cap.report,
        lost_events: cap.lost_events,
        notes: cap.notes,
        worker_pid: cap.worker_pid,
        cgroup_stats: cap.cgroup_stats,
    })
}

/// Refuse, before anything changes, a scenario whose threads set utilisation
/// clamps on a kernel that does not take them (no CONFIG_UCLAMP_TASK):
/// the run would otherwise go on without the clamps it asks for.
fn check_uclamp(scenario: &Scenario) -> Result<(), RunnerError> {
    let Some(t) = scenario.threads.iter().find(|t| t.uclamp.is_some()) else { return Ok(()) };
    sys::uclamp_supported().map_err(|source| RunnerError::NoUclamp {
        scenario: scenario.path.clone(),
        line: t.line,
        thread: t.name.clone(),
        release: sys::kernel_release(),
        source,
    })
}

/// Run `scenario` on this host. The calling process must be single-threaded
/// (it forks the worker); it must be root (tracefs, SCHED_FIFO).
pub fn run_real(scenario: &Scenario, opts: &RealOptions) -> Result<RealRun, RunnerError> {
    assemble(scenario, opts, capture_real(scenario, opts)?)
}

/// Parse a capture with the scenario's object names, cut it to the run's
/// window and collect the notes; writes the text to `opts.trace_out` first.
pub fn assemble(scenario: &Scenario, opts: &RealOptions, cap: RawCapture) -> Result<RealRun, RunnerError> {
    let plan = cap.plan;
    if let Some(path) = &opts.trace_out {
        std::fs::write(path, &cap.text).map_err(|e| RunnerError::TraceOut { path: path.clone(), source: e })?;
    }
    let shown = opts.trace_out.as_ref().map_or_else(|| "<tracefs trace>".to_string(), |p| p.display().to_string());
    let objects = scenario.objects.iter().map(|o| o.name.clone()).collect();
    let parsed = parse_ftrace_with(&shown, &cap.text, &ParseOptions { objects })
        .map_err(|e| RunnerError::CapturedTrace { source: e, kept: opts.trace_out.is_some() })?;
    // The text is parsed: free it before the repair works on the events.
    drop(cap.text);
    let report = cap.report;
    let mut trace = parsed.trace;
    let events_captured = trace.events.len();
    // `trace` prints microseconds: widen the window to whole microseconds.
    let (start_ns, end_ns) = (report.t0_ns / 1000 * 1000, report.t_end_ns);
    trace.events.retain(|e| e.ts >= start_ns && e.ts <= end_ns);
    let repairs = schedlab_trace::repair::repair_trace(&mut trace);
    // tid 0: a thread of a session process that never reported (its note says why).
    for t in report.threads.iter().filter(|t| t.tid > 0) {
        trace.table.tasks.insert(t.tid, TaskInfo { comm: t.name.clone(), tgid: cap.worker_pid });
    }
    let allowed = report
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let tp = match t.forked_from {
                Some(k) => plan.templates.get(k),
                None => plan.threads.get(i),
            };
            (t.tid, tp.map(|p| p.cpus.iter().map(|&c| c as u32).collect()).unwrap_or_default())
        })
        .filter(|(tid, cpus): &(Pid, Vec<u32>)| *tid > 0 && !cpus.is_empty())
        .collect();

    let mut notes = plan.notes.clone();
    notes.extend(cap.notes);
    notes.extend(report.threads.iter().flat_map(|t| t.setup_notes.iter().cloned()));
    notes.extend(report.notes.iter().cloned());
    if cap.lost_events > 0 || parsed.stats.lost_events > 0 {
        notes.push(format!(
            "the ring buffer lost {} events ({} reported in the text): raise --buffer-kb (now {} KB per CPU)",
            cap.lost_events.max(parsed.stats.lost_events),
            parsed.stats.lost_events,
            plan.buffer_kb(opts)
        ));
    }
    if repairs.inserted() > 0 {
        let per_cpu = repairs.per_cpu();
        notes.push(format!(
            "{MISSING_SWITCHES_NOTE} {} sched_switch events (a header named a task no switch put there; put back, \
             see docs/real-traces.md): {}",
            repairs.inserted(),
            per_cpu.join("; ")
        ));
    }
    if report.marker_write_failures > 0 {
        notes.push(format!("{} trace_marker writes failed", report.marker_write_failures));
    }
    notes.extend(steal::note(&report.steal, report.t_end_ns.saturating_sub(report.t0_ns)));
    Ok(RealRun {
        trace,
        start_ns,
        end_ns,
        calibration: report.calibration.unwrap_or_else(|| Calibration::given(0.0, 0)),
        threads: report.threads,
        plan,
        allowed,
        notes,
        events_captured,
        lost_events: cap.lost_events,
        repairs,
        kernel: cap.kernel,
        worker_pid: cap.worker_pid,
        cgroup_stats: cap.cgroup_stats,
        steal: report.steal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_capture_costs_its_ring_then_its_text_and_parse() {
        // 2 CPUs x 8 MB: the ring itself, then each of its ~53-byte events
        // as a 138-byte line and a 64-byte parsed event: 4.8 times the ring
        // in all, as the docs say (the error's read_back_factor, 3.8, is
        // the text and parse).
        let ring = 2 * 8192 * 1024;
        let ratio = capture_bytes(2, 8192) as f64 / ring as f64;
        assert!((4.7..4.9).contains(&ratio), "{ratio}");
        assert!((ratio - 1.0 - read_back_factor()).abs() < 0.01, "the ring, then the factor on top");
        assert_eq!(capture_bytes(4, 8192), 2 * capture_bytes(2, 8192), "per CPU");
        assert_eq!(capture_bytes(u64::MAX, u64::MAX), u64::MAX, "saturates instead of wrapping");
    }

    #[test]
    fn a_run_the_hypervisor_stole_from_says_so_in_its_notes_and_keeps_the_counts() {
        let text = "topology = \"qemu-2\"\nduration = \"2s\"\n[[thread]]\nname = \"a\"\n\
                    program = [{ run = \"1ms\" }]\n";
        let s = Scenario::from_toml_str("s.toml", text, std::path::Path::new(".")).unwrap();
        let capture = |steal: Vec<steal::CpuSteal>| RawCapture {
            plan: Plan {
                host_cpus: vec![0, 1],
                cpu_map: Default::default(),
                threads: Vec::new(),
                templates: Vec::new(),
                duration_ns: 2_000_000_000,
                notes: Vec::new(),
            },
            kernel: "6.18".into(),
            text: String::new(),
            report: WorkerReport {
                calibration: None,
                threads: Vec::new(),
                t0_ns: 1_000_000_000,
                t_end_ns: 3_000_000_000,
                marker_write_failures: 0,
                notes: Vec::new(),
                steal,
                error: None,
            },
            lost_events: 0,
            notes: Vec::new(),
            worker_pid: 1,
            cgroup_stats: Vec::new(),
        };
        let stolen = vec![steal::CpuSteal { cpu: 0, ns: 0 }, steal::CpuSteal { cpu: 1, ns: 700_000_000 }];
        let run = assemble(&s, &RealOptions::default(), capture(stolen.clone())).unwrap();
        assert_eq!(run.steal, stolen);
        assert!(run.notes.iter().any(|n| n.contains("CPU 1 35.0 %")), "{:?}", run.notes);
        let quiet = vec![steal::CpuSteal { cpu: 0, ns: 10_000_000 }, steal::CpuSteal { cpu: 1, ns: 0 }];
        let run = assemble(&s, &RealOptions::default(), capture(quiet)).unwrap();
        assert!(!run.notes.iter().any(|n| n.contains("hypervisor")), "{:?}", run.notes);
    }

    #[test]
    fn a_scenario_with_clamps_runs_only_where_the_kernel_takes_them() {
        let text = "topology = \"qemu-2\"\nduration = \"1s\"\n[[thread]]\nname = \"a\"\nuclamp_min = 300\n\
                    program = [{ run = \"1ms\" }]\n";
        let s = Scenario::from_toml_str("u.toml", text, std::path::Path::new(".")).unwrap();
        // Re-setting this thread's own clamps changes nothing; the kernel
        // either takes them or, without CONFIG_UCLAMP_TASK, refuses the flags
        // with EOPNOTSUPP (never EINVAL: the attr and flags are well formed).
        match check_uclamp(&s) {
            Ok(()) => {}
            Err(e @ RunnerError::NoUclamp { .. }) => {
                let RunnerError::NoUclamp { source, .. } = &e else { unreachable!() };
                assert_eq!(source.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
                let msg = e.to_string();
                assert!(msg.starts_with("u.toml:3: thread `a` sets utilisation clamps"), "{msg}");
                assert!(msg.contains("without CONFIG_UCLAMP_TASK"), "{msg}");
            }
            Err(e) => panic!("{e}"),
        }
        // Without clamps nothing is asked of the kernel.
        let plain =
            Scenario::from_toml_str("p.toml", &text.replace("uclamp_min = 300\n", ""), std::path::Path::new("."));
        check_uclamp(&plain.unwrap()).unwrap();
    }
}
