//! The worker process: the scenario's threads, their start and stop, the
//! watchdog. It runs in the child the supervisor forks, never returns, and
//! sends a [`WorkerReport`] to the supervisor through a pipe.
//!
//! Order: die with the supervisor (`PR_SET_PDEATHSIG`), arm the watchdog,
//! calibrate, create every thread (comm, affinity or start CPU, policy,
//! nice, slice) and hold them at a barrier, write the start marker, open the
//! barrier; at the duration set `stop`, write the stop marker and keep
//! kicking the eventfds until every thread has returned.

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::Duration;

use schedlab_scenario::{Policy, Scenario, ThreadSpec};
use serde::{Deserialize, Serialize};

use crate::calibrate::{calibrate, Calibration};
use crate::plan::{Plan, RealOptions, ThreadPlan};
use crate::program::{run_program, End, Markers, Outcome, Shared};
use crate::sys::{
    self, now_ns, sched_setattr, set_affinity, set_comm, sleep_until, SchedAttr, SCHED_FLAG_RECLAIM,
    SCHED_FLAG_UTIL_CLAMP_MAX, SCHED_FLAG_UTIL_CLAMP_MIN,
};

/// Time allowed for calibration and thread creation before the watchdog fires.
pub const SETUP_LIMIT_NS: u64 = 10_000_000_000;
/// Time allowed after the duration for every thread to return.
pub const STOP_GRACE_NS: u64 = 2_000_000_000;

/// One thread's setup and result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadReport {
    pub name: String,
    pub tid: i32,
    /// What could not be applied (a degraded run), e.g. SCHED_FIFO without privileges.
    pub setup_notes: Vec<String>,
    /// `None` when the thread had not returned by the end of the grace time.
    pub outcome: Option<Outcome>,
    /// For a thread a `fork` created: its template (`Scenario::templates`).
    #[serde(default)]
    pub forked_from: Option<usize>,
}

/// What the worker tells the supervisor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    pub calibration: Option<Calibration>,
    pub threads: Vec<ThreadReport>,
    /// CLOCK_MONOTONIC ns of the start (the barrier opening) and the end of the window.
    pub t0_ns: u64,
    pub t_end_ns: u64,
    pub marker_write_failures: u64,
    pub notes: Vec<String>,
    /// Each planned host CPU's steal over the window (empty where
    /// `/proc/stat` could not be read, or from a runner before it was kept).
    #[serde(default)]
    pub steal: Vec<crate::steal::CpuSteal>,
    /// Why the run could not happen.
    pub error: Option<String>,
}

/// A thread's tid and what could not be applied to it.
type Setup = (i32, Vec<String>);

/// Everything the child needs; the supervisor builds it before forking.
pub struct WorkerArgs<'a> {
    pub scenario: &'a Scenario,
    pub plan: &'a Plan,
    pub opts: &'a RealOptions,
    pub trace_marker: std::path::PathBuf,
    pub supervisor_pid: i32,
    /// The scenario's cgroups, created by the supervisor: the worker and
    /// each thread move themselves in.
    pub cgroups: Option<&'a crate::cgroup::Layout>,
}

pub(crate) fn policy_number(p: Policy) -> u32 {
    (match p {
        Policy::Other => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
        Policy::Idle => libc::SCHED_IDLE,
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::Rr => libc::SCHED_RR,
        Policy::Deadline => libc::SCHED_DEADLINE,
    }) as u32
}

/// Apply the spec's policy, nice/priority and slice to the calling thread;
/// what fails is returned as notes and the thread runs with what it got.
pub(crate) fn apply_sched(spec: &ThreadSpec) -> Vec<String> {
    let mut notes = Vec::new();
    if !spec.policy.is_rt_or_dl() {
        // Set explicitly rather than inherited, so the model's slack is the
        // thread's whatever the runner's own was. prctl() takes 0 as "back to
        // the default", so a requested 0 becomes the closest it allows: 1 ns.
        let slack = spec.timer_slack_ns.max(1);
        // SAFETY: a plain prctl on the calling thread.
        if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack as libc::c_ulong, 0, 0, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            notes.push(format!(
                "{}: prctl(PR_SET_TIMERSLACK, {slack}) failed: {e}; its sleeps use the inherited slack",
                spec.name
            ));
        }
    }
    let default = spec.policy == Policy::Other && spec.nice == 0 && spec.slice_ns.is_none() && spec.uclamp.is_none();
    if default {
        return notes;
    }
    let mut attr = SchedAttr { policy: policy_number(spec.policy), ..Default::default() };
    let what = if let Some(dl) = spec.dl {
        (attr.runtime, attr.deadline, attr.period) = (dl.runtime_ns, dl.deadline_ns, dl.period_ns);
        if dl.reclaim {
            attr.flags |= SCHED_FLAG_RECLAIM;
        }
        format!(
            "SCHED_DEADLINE runtime {} us, deadline {} us, period {} us{}",
            dl.runtime_ns / 1000,
            dl.deadline_ns / 1000,
            dl.period_ns / 1000,
            if dl.reclaim { ", SCHED_FLAG_RECLAIM" } else { "" }
        )
    } else if spec.policy.is_rt() {
        attr.priority = spec.rt_priority;
        format!("{} priority {}", spec.policy.name(), spec.rt_priority)
    } else {
        attr.nice = spec.nice;
        attr.runtime = spec.slice_ns.unwrap_or(0);
        let slice = spec.slice_ns.map(|s| format!(", slice {} us", s / 1000)).unwrap_or_default();
        format!("{} nice {}{slice}", spec.policy.name(), spec.nice)
    };
    // The clamps go with the policy, in the same call (as rt-app sets them
    // with its own sched_setattr()); the supervisor checked the kernel takes them.
    let mut what = what;
    if let Some(u) = spec.uclamp {
        if let Some(min) = u.min {
            (attr.util_min, attr.flags) = (min, attr.flags | SCHED_FLAG_UTIL_CLAMP_MIN);
            what.push_str(&format!(", uclamp_min {min}"));
        }
        if let Some(max) = u.max {
            (attr.util_max, attr.flags) = (max, attr.flags | SCHED_FLAG_UTIL_CLAMP_MAX);
            what.push_str(&format!(", uclamp_max {max}"));
        }
    }
    if let Err(e) = sched_setattr(0, &attr) {
        let fallback = if attr.runtime != 0 {
            // Kernels before 6.12 refuse a fair sched_runtime: keep the rest.
            attr.runtime = 0;
            sched_setattr(0, &attr).ok().map(|()| "without the custom slice")
        } else {
            None
        };
        notes.push(format!(
            "{}: sched_setattr({what}) failed: {e}{}; it runs {}",
            spec.name,
            if e.raw_os_error() == Some(libc::EPERM) { " (needs root or CAP_SYS_NICE)" } else { "" },
            fallback.unwrap_or("as SCHED_OTHER nice 0")
        ));
    }
    notes
}

/// A high-priority thread that SIGKILLs the worker if it is still alive at
/// `deadline` (CLOCK_MONOTONIC) — a runaway RT spinner cannot starve it.
fn spawn_watchdog(cpu: usize, deadline: u64, notes: &mut Vec<String>) -> Arc<AtomicBool> {
    let disarmed = Arc::new(AtomicBool::new(false));
    let d = disarmed.clone();
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("schedlab-wdog".into()).stack_size(64 << 10).spawn(move || {
        set_comm("schedlab-wdog");
        let mut problems = Vec::new();
        if let Err(e) = set_affinity(&[cpu]) {
            problems.push(format!("watchdog: cannot pin to CPU {cpu}: {e}"));
        }
        let attr = SchedAttr { policy: libc::SCHED_FIFO as u32, priority: 99, ..Default::default() };
        if let Err(e) = sched_setattr(0, &attr) {
            problems.push(format!("watchdog: cannot use SCHED_FIFO 99 ({e}); it runs as SCHED_OTHER"));
        }
        let _ = tx.send(problems);
        while now_ns() < deadline {
            sleep_until(deadline);
        }
        if !d.load(Ordering::SeqCst) {
            // Not eprintln!: its panic on an unwritable stderr would skip the kill.
            let _ = writeln!(std::io::stderr(), "schedlab real: watchdog: the worker overran its deadline; killing it");
            // SAFETY: plain syscalls.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
    });
    match spawned {
        Ok(_) => notes.extend(rx.recv().unwrap_or_default()),
        Err(e) => notes.push(format!("watchdog thread could not start: {e}")),
    }
    disarmed
}

/// The child's whole life. Never returns.
pub fn worker_main(args: WorkerArgs<'_>, report_fd: i32) -> ! {
    // SAFETY: plain prctl/getppid calls.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        if libc::getppid() != args.supervisor_pid {
            libc::_exit(3); // the supervisor died before the prctl
        }
    }
    set_comm("schedlab-worker");
    let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&args))).unwrap_or_else(|p| {
        let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        failed_report(format!("the worker panicked: {}", msg.unwrap_or_default()))
    });
    // SAFETY: we own report_fd (the pipe's write end in this process).
    let mut out = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(report_fd) };
    let text = serde_json::to_string(&report).unwrap_or_else(|e| format!("{{\"error\":\"report: {e}\"}}"));
    let _ = writeln!(out, "{text}");
    drop(out);
    // SAFETY: end the child without running the parent's atexit handlers or destructors.
    unsafe { libc::_exit(0) }
}

/// Why the worker could not set its run up: it goes back to the supervisor
/// as the report's error text, which names the thread or session.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{call}: {source}")]
    Os { call: String, source: std::io::Error },
    #[error("cannot create thread {name}: {source}")]
    Thread { name: String, source: std::io::Error },
    /// A thread that could not join its cgroup (the thread's own words).
    #[error("{0}")]
    Cgroup(String),
    #[error("session `{name}` (pid {pid}) did not answer in time")]
    NoAnswer { name: String, pid: i32 },
    #[error("session `{name}` (pid {pid}) ended early")]
    EndedEarly { name: String, pid: i32 },
    /// A session process's own error line.
    #[error("session `{name}`: {why}")]
    Session { name: String, why: String },
    #[error("session `{name}`: unexpected `{line}`")]
    Unexpected { name: String, line: String },
    #[error("session `{name}`: unreadable report: {source}")]
    Report { name: String, source: serde_json::Error },
}

fn failed_report(error: String) -> WorkerReport {
    WorkerReport {
        calibration: None,
        threads: Vec::new(),
        t0_ns: 0,
        t_end_ns: 0,
        marker_write_failures: 0,
        notes: Vec::new(),
        steal: Vec::new(),
        error: Some(error),
    }
}

fn run(args: &WorkerArgs<'_>) -> WorkerReport {
    let (scenario, plan, opts) = (args.scenario, args.plan, args.opts);
    let mut notes = Vec::new();
    if let Some(l) = args.cgroups {
        // SAFETY: plain syscall.
        if let Err(e) = crate::cgroup::attach(&l.process_files, unsafe { libc::getpid() }) {
            return failed_report(format!("cannot move the worker into the run's cgroup: {e}"));
        }
    }
    // `Plan::new` caps the duration; saturate anyway rather than wrap.
    let deadline =
        now_ns().saturating_add(SETUP_LIMIT_NS).saturating_add(plan.duration_ns).saturating_add(STOP_GRACE_NS);
    // The CPUs this process may use now: a cpuset partition of the
    // scenario takes its CPUs from the run's own group.
    let usable = crate::sys::allowed_cpus().unwrap_or_else(|_| plan.host_cpus.clone());
    let disarmed = spawn_watchdog(plan.watchdog_cpu_within(scenario, &usable), deadline, &mut notes);

    let marker = match OpenOptions::new().write(true).open(&args.trace_marker) {
        Ok(f) => f,
        Err(e) => return failed_report(format!("{}: cannot open for writing: {e}", args.trace_marker.display())),
    };
    // Calibrate on the first CPU a `run` thread may use, when this process may.
    let cal_cpu = plan
        .threads
        .first()
        .and_then(|t| t.start_cpu.or(t.cpus.first().copied()))
        .filter(|c| usable.contains(c))
        .or(usable.first().copied())
        .unwrap_or(0);
    let calibration = match opts.loops_per_us {
        Some(l) => Calibration::given(l, cal_cpu),
        None => {
            if let Err(e) = set_affinity(&[cal_cpu]) {
                return failed_report(format!("cannot pin the calibration to CPU {cal_cpu}: {e}"));
            }
            let c = calibrate(cal_cpu);
            let _ = set_affinity(&plan.host_cpus);
            c
        }
    };
    let shared = match Shared::new(scenario, plan, Markers::new(marker, scenario), calibration.clone()) {
        Ok(mut s) => {
            s.cgroup_moves = args.cgroups.map(|l| l.move_files.clone()).unwrap_or_default();
            Arc::new(s)
        }
        Err(e) => return failed_report(format!("cannot create the scenario's objects: {e}")),
    };

    // Threads of other sessions run in processes of their own, forked now
    // (before this process has more threads than the watchdog).
    let mut children = Vec::new();
    for k in 0..scenario.sessions.len() {
        match crate::session::start(args, &shared, k, deadline) {
            Ok(c) => children.push(c),
            Err(e) => return failed_report(e.to_string()),
        }
    }
    let n = scenario.threads.len();
    let own: Vec<usize> = (0..n).filter(|&i| scenario.threads[i].session.is_none()).collect();
    let (done_tx, done_rx) = mpsc::channel::<(usize, Outcome)>();
    shared.forks.link(&shared, done_tx.clone());
    let crew = match Crew::spawn(args, &shared, &own, done_tx) {
        Ok(c) => c,
        Err(e) => return failed_report(e.to_string()),
    };
    if let Err(e) = crew.ready() {
        return failed_report(e.to_string());
    }
    for c in &mut children {
        if let Err(e) = c.ready() {
            return failed_report(e.to_string());
        }
    }

    let steal_before = crate::steal::read();
    let t0 = now_ns();
    let stop_at = t0.saturating_add(plan.duration_ns);
    shared.stop_at.store(stop_at, Ordering::SeqCst);
    shared.markers.write(&format!("schedlab_real start scenario={} t0={t0}", scenario.name));
    for c in &mut children {
        c.go(stop_at);
    }
    crew.go.wait();
    // The main thread only wakes to stop the run; let it preempt the workload then.
    let _ = sched_setattr(0, &SchedAttr { policy: libc::SCHED_FIFO as u32, priority: 98, ..Default::default() });

    let (mut outcomes, t_end) = crew.finish(&shared, done_rx, stop_at, true);
    let steal = crate::steal::between(&steal_before, &crate::steal::read(), &plan.host_cpus);
    let mut tids: Vec<(i32, Vec<String>)> = crew.setups.lock().unwrap().clone();
    for c in children {
        match c.report(stop_at.saturating_add(STOP_GRACE_NS)) {
            Ok(rows) => {
                for (i, t) in rows {
                    if let Some(slot) = tids.get_mut(i) {
                        *slot = (t.tid, t.setup_notes);
                        outcomes[i] = t.outcome;
                    }
                }
            }
            Err(e) => notes.push(e.to_string()),
        }
    }
    disarmed.store(true, Ordering::SeqCst);
    let threads = scenario
        .threads
        .iter()
        .zip(tids)
        .zip(outcomes)
        .map(|((spec, (tid, setup_notes)), outcome)| ThreadReport {
            name: spec.name.clone(),
            tid,
            setup_notes,
            outcome,
            forked_from: None,
        })
        .chain(shared.forks.reports())
        .collect::<Vec<_>>();
    for t in &threads {
        match &t.outcome {
            None => {
                notes.push(format!("{} did not return within {} ms of the stop", t.name, STOP_GRACE_NS / 2_000_000))
            }
            Some(Outcome { end: End::Failed(e), .. }) => notes.push(format!("{} failed: {e}", t.name)),
            _ => {}
        }
    }
    WorkerReport {
        calibration: Some(calibration),
        threads,
        t0_ns: t0,
        t_end_ns: t_end,
        marker_write_failures: shared.markers.failed.load(Ordering::Relaxed),
        notes,
        steal,
        error: None,
    }
}

/// One process's share of the scenario's threads: created, held at a
/// barrier, run, collected. The worker has one for the threads of the
/// runner's session, each session process one for its own.
pub(crate) struct Crew {
    /// Released by the process's main thread at the start.
    pub go: Arc<Barrier>,
    ready: Arc<Barrier>,
    /// By scenario thread index: tid and what could not be applied.
    pub setups: Arc<Mutex<Vec<Setup>>>,
    /// A thread that could not join its cgroup: the run would not test what the file asks.
    unattached: Arc<Mutex<Option<String>>>,
    /// The scenario thread indices this crew runs.
    pub members: Vec<usize>,
}

impl Crew {
    /// Create the threads `members` (scenario indices), each moving into its
    /// cgroups, setting its affinity and policy, then waiting at `ready`.
    pub fn spawn(
        args: &WorkerArgs<'_>,
        shared: &Arc<Shared>,
        members: &[usize],
        done_tx: mpsc::Sender<(usize, Outcome)>,
    ) -> Result<Crew, SetupError> {
        let (scenario, plan) = (args.scenario, args.plan);
        let crew = Crew {
            go: Arc::new(Barrier::new(members.len() + 1)),
            ready: Arc::new(Barrier::new(members.len() + 1)),
            setups: Arc::new(Mutex::new(vec![(0, Vec::new()); scenario.threads.len()])),
            unattached: Arc::new(Mutex::new(None)),
            members: members.to_vec(),
        };
        for &i in members {
            let (spec, tp): (ThreadSpec, ThreadPlan) = (scenario.threads[i].clone(), plan.threads[i].clone());
            let (shared, ready, go, setups, done_tx) =
                (shared.clone(), crew.ready.clone(), crew.go.clone(), crew.setups.clone(), done_tx.clone());
            let cgroup_files = args.cgroups.map(|l| l.thread_files[i].clone()).unwrap_or_default();
            let unattached = crew.unattached.clone();
            let delay = spec.start_delay_ns;
            let spawned = std::thread::Builder::new().name(spec.name.clone()).stack_size(256 << 10).spawn(move || {
                set_comm(&spec.name);
                // Into the cgroups first: joining a cpuset resets the affinity.
                if let Err(e) = crate::cgroup::attach(&cgroup_files, sys::gettid()) {
                    unattached.lock().unwrap().get_or_insert(format!("{}: cannot join its cgroup: {e}", spec.name));
                }
                let mut setup = Vec::new();
                // A deadline task may not be narrowed below its root domain
                // (sched_setattr() returns EPERM): it keeps all its CPUs.
                let first = match tp.start_cpu {
                    Some(c) if spec.dl.is_none() => vec![c],
                    _ => tp.cpus.clone(),
                };
                if let Err(e) = set_affinity(&first) {
                    setup.push(format!("{}: sched_setaffinity({:?}) failed: {e}", spec.name, first));
                }
                setup.extend(apply_sched(&spec));
                setups.lock().unwrap()[i] = (sys::gettid(), setup);
                ready.wait();
                go.wait();
                if tp.start_cpu.is_some() && tp.cpus.len() > 1 {
                    let _ = set_affinity(&tp.cpus);
                }
                if delay > 0 {
                    sleep_until(now_ns().saturating_add(delay).min(shared.stop_at.load(Ordering::Relaxed)));
                }
                let outcome = run_program(&shared, &spec);
                let _ = done_tx.send((i, outcome));
            });
            if let Err(e) = spawned {
                // The process exits when the report is sent; the threads spawned so far die with it.
                return Err(SetupError::Thread { name: scenario.threads[i].name.clone(), source: e });
            }
        }
        Ok(crew)
    }

    /// Wait until every member is set up; an error if one could not join its cgroup.
    pub fn ready(&self) -> Result<(), SetupError> {
        self.ready.wait();
        match self.unattached.lock().unwrap().take() {
            // The threads wait at `go` and die with the process.
            Some(e) => Err(SetupError::Cgroup(e)),
            None => Ok(()),
        }
    }

    /// After `go`: wait for the members until `stop_at`, then stop them,
    /// kicking blocked ones, for up to half the grace time. The worker's own
    /// crew (`worker`) also waits for the threads they forked and writes the
    /// stop marker. Returns the outcomes by scenario index and the end of
    /// the window.
    pub fn finish(
        &self,
        shared: &Shared,
        done_rx: mpsc::Receiver<(usize, Outcome)>,
        stop_at: u64,
        worker: bool,
    ) -> (Vec<Option<Outcome>>, u64) {
        let n = self.setups.lock().unwrap().len();
        let mut outcomes: Vec<Option<Outcome>> = vec![None; n];
        let mut left = self.members.len();
        let live = || if worker { shared.forks.live() } else { 0 };
        let mut take = |r: Result<(usize, Outcome), mpsc::RecvTimeoutError>, left: &mut usize| match r {
            Ok((i, o)) if i < n => {
                outcomes[i] = Some(o);
                *left -= 1;
                true
            }
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => true,
            Err(mpsc::RecvTimeoutError::Disconnected) => false,
        };
        // Forked threads report with an index past the others' (their own
        // outcome is in the fork table).
        while left > 0 || live() > 0 {
            let now = now_ns();
            if now >= stop_at || !take(done_rx.recv_timeout(Duration::from_nanos(stop_at - now)), &mut left) {
                break;
            }
        }
        let t_end = now_ns().min(stop_at);
        if worker {
            shared.markers.write(&format!("schedlab_real stop t_end={t_end}"));
        }
        shared.stop.store(true, Ordering::SeqCst);
        let give_up = stop_at.max(t_end).saturating_add(STOP_GRACE_NS / 2);
        while (left > 0 || live() > 0) && now_ns() < give_up {
            shared.kick_waiters();
            if !take(done_rx.recv_timeout(Duration::from_millis(1)), &mut left) {
                break;
            }
        }
        (outcomes, t_end)
    }
}
