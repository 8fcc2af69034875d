//! The supervisor: the calling process. It owns the tracefs settings — saves
//! them (in memory and on disk), sets them, forks the worker, waits for it
//! with a deadline, stops tracing, reads the buffer and restores every
//! setting whatever happened to the worker: normal exit, failure, Ctrl-C,
//! SIGKILL, or the watchdog's kill. A SIGKILL of the supervisor itself skips
//! its restore: then its restorer ([`crate::restorer`]), forked before
//! anything was changed, restores from the state file within a second; if
//! that was killed too, the state file stays and the next run restores it.

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

use schedlab_scenario::Scenario;

use crate::cgroup::{self, HostCgroups, Layout};
use crate::plan::{Plan, RealOptions};
use crate::restorer::{Restorer, READ_BACK_ALLOWANCE_NS};
use crate::state::{state_dir, RunLock};
use crate::sys::{self, now_ns, sched_getattr, sched_setattr, SchedAttr};
use crate::tracefs::{restore, CaptureSettings, SavedState, Tracefs};
use crate::worker::{worker_main, WorkerArgs, WorkerReport, SETUP_LIMIT_NS, STOP_GRACE_NS};
use crate::RunnerError;

/// The signal that interrupted the run (0: none).
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    INTERRUPTED.store(sig, Ordering::SeqCst);
}

const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Catches SIGINT/SIGTERM/SIGHUP while alive (without SA_RESTART, so the
/// supervisor's `poll` returns) and puts the old handlers back on drop.
struct SignalGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    fn install() -> SignalGuard {
        INTERRUPTED.store(0, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in CAUGHT {
            // SAFETY: the handler only stores to an atomic (async-signal-safe).
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        SignalGuard { old }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring a sigaction we read earlier.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

/// Restores the saved settings exactly once: explicitly (to report errors)
/// or on drop (early returns, panics).
struct RestoreGuard<'a> {
    saved: SavedState,
    lock: &'a RunLock,
    done: bool,
}

impl RestoreGuard<'_> {
    fn restore(&mut self) -> Result<(), RunnerError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let r = restore(&self.saved);
        if r.is_ok() {
            self.lock.clear_state();
        }
        r
    }
}

impl Drop for RestoreGuard<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            // Not eprintln!: a panic here (stderr unwritable) would abort mid-unwind.
            let _ = writeln!(
                std::io::stderr(),
                "schedlab real: error: restoring tracefs: {e} (the saved state stays for the next run)"
            );
        }
    }
}

/// What the supervisor got back.
pub struct Captured {
    pub text: String,
    pub report: WorkerReport,
    pub lost_events: u64,
    pub notes: Vec<String>,
    pub worker_pid: i32,
    pub cgroup_stats: Vec<crate::cgroup::CgroupStat>,
}

/// `Err("interrupted by SIGINT {when}")` once a caught signal has arrived.
fn check_interrupted(when: &'static str) -> Result<(), RunnerError> {
    match INTERRUPTED.load(Ordering::SeqCst) {
        0 => Ok(()),
        sig => Err(RunnerError::Interrupted { signal: signal_name(sig), when }),
    }
}

/// The supervisor's own scheduling while it waits for the worker: SCHED_FIFO
/// 99, so it can act on a timeout or Ctrl-C even under RT spinners. Only
/// raised when the original attributes could be read (to go back to them);
/// lowered explicitly, or on drop.
struct Raised {
    original: SchedAttr,
    lowered: bool,
}

/// What to write back to return to `got` (as `sched_getattr` read it). On
/// 6.12+ `sched_getattr` reports a fair task's slice in `sched_runtime`, and
/// `sched_setattr` with a non-zero `sched_runtime` sets a *custom* slice:
/// write 0 (the default slice) instead. Only SCHED_DEADLINE needs its runtime.
fn attr_to_restore(got: &SchedAttr) -> SchedAttr {
    let mut a = *got;
    if a.policy != libc::SCHED_DEADLINE as u32 {
        a.runtime = 0;
    }
    a
}

impl Raised {
    fn raise() -> Option<Raised> {
        let original = sched_getattr(0).ok()?;
        sched_setattr(0, &SchedAttr { policy: libc::SCHED_FIFO as u32, priority: 99, ..Default::default() }).ok()?;
        Some(Raised { original, lowered: false })
    }

    /// Back to the original attributes; failing that, to SCHED_OTHER with the
    /// original nice: the supervisor never stays real-time.
    fn lower(&mut self) -> Result<(), RunnerError> {
        if self.lowered {
            return Ok(());
        }
        self.lowered = true;
        let back = attr_to_restore(&self.original);
        let Err(e) = sched_setattr(0, &back) else { return Ok(()) };
        let other = SchedAttr { policy: libc::SCHED_OTHER as u32, nice: self.original.nice, ..Default::default() };
        match sched_setattr(0, &other) {
            Ok(()) => Err(RunnerError::SupervisorPolicy { policy: self.original.policy, source: e }),
            Err(e2) => Err(RunnerError::SupervisorStuck { first: e, second: e2 }),
        }
    }
}

impl Drop for Raised {
    fn drop(&mut self) {
        if let Err(e) = self.lower() {
            let _ = writeln!(std::io::stderr(), "schedlab real: error: {e}");
        }
    }
}

/// The `autogroup` write the run needs (`None`: leave it), with a note on
/// what the sessions mean here.
fn autogroup_setting(scenario: &Scenario, notes: &mut Vec<String>) -> Result<Option<bool>, RunnerError> {
    let now = std::fs::read_to_string(crate::tracefs::AUTOGROUP).ok().map(|s| s.trim() == "1");
    let wanted = scenario.autogroup.as_ref().map(|a| a.value);
    match (wanted, now) {
        (Some(true), None) => Err(RunnerError::Autogroup(format!(
            "{}:{}: `autogroup = true`, but this kernel has no SCHED_AUTOGROUP ({} is missing)",
            scenario.path,
            scenario.autogroup.as_ref().map_or(0, |a| a.line),
            crate::tracefs::AUTOGROUP
        ))),
        (Some(w), Some(n)) if w != n => {
            notes.push(format!(
                "kernel.sched_autogroup_enabled = {} for the run (the host has {}; put back after)",
                w as u8, n as u8
            ));
            Ok(Some(w))
        }
        (_, n) => {
            if !scenario.sessions.is_empty() {
                let what = match n {
                    Some(true) => "on: each session is an autogroup",
                    Some(false) => "off: the sessions share the root group",
                    None => "absent (no SCHED_AUTOGROUP): the sessions share the root group",
                };
                notes.push(format!("{} session process(es); autogroup is {what}", scenario.sessions.len()));
            }
            Ok(None)
        }
    }
}

/// Save, configure, fork the worker, wait, read the trace, restore.
pub fn supervise(scenario: &Scenario, plan: &Plan, opts: &RealOptions) -> Result<Captured, RunnerError> {
    match sys::thread_count() {
        Some(1) | None => {}
        Some(n) => return Err(RunnerError::Threaded { threads: n }),
    }
    let lock = RunLock::acquire(&state_dir())?;
    // Before anything is changed, so that whatever is changed is put back
    // even if this process is SIGKILLed. Declared before `guard`, so it is
    // dismissed (dropped) only after the guard has restored.
    let mut restorer =
        Restorer::start(&lock, worker_deadline(plan.duration_ns).saturating_add(READ_BACK_ALLOWANCE_NS))?;
    // From before the first change to after the last restore, SIGINT, SIGTERM
    // and SIGHUP only set INTERRUPTED: the run stops and restores instead of
    // dying with the settings changed. Declared before `guard`, so it is
    // dropped (the old handlers back) after the guard has restored.
    let signals = SignalGuard::install();
    let mut notes = Vec::new();
    notes.extend(lock.restore_leftover()?);
    let supervisor_pid = std::process::id() as i32;
    let layout = match scenario.cgroups.is_empty() {
        true => None,
        false => cgroup::layout(scenario, plan, &HostCgroups::read()?, supervisor_pid)?,
    };
    if let Some(l) = &layout {
        notes.push(l.describe());
    }
    let tracefs = Tracefs::open()?;
    if tracefs.mounted_by_us {
        notes.push(format!("mounted tracefs at {} for the run (unmounted after)", tracefs.root.display()));
    }
    let tracer = tracefs.read("current_tracer").unwrap_or_default();
    if !matches!(tracer.trim(), "nop" | "") {
        notes.push(format!(
            "current_tracer is `{}`, not nop: its lines are in the trace (skipped by the parser)",
            tracer.trim()
        ));
    }
    let settings = CaptureSettings {
        buffer_kb: plan.buffer_kb(opts),
        stat_runtime: opts.stat_runtime,
        rt_runtime_us: if opts.set_rt_runtime { scenario.sched_rt_runtime_us } else { None },
        autogroup: autogroup_setting(scenario, &mut notes)?,
    };
    let saved = check_interrupted("before the run started: nothing was changed")
        .and_then(|()| tracefs.save(&settings))
        .map(|mut saved| {
            saved.cgroups = layout.as_ref().map(Layout::dir_paths).unwrap_or_default();
            saved
        })
        .and_then(|saved| lock.write_state(&saved).map(|()| saved));
    let saved = match saved {
        Ok(s) => s,
        Err(e) => {
            // Nothing was changed yet, except perhaps the mount.
            if tracefs.mounted_by_us {
                let _ = restore(&SavedState {
                    tracefs: tracefs.root.display().to_string(),
                    mounted_by_us: true,
                    pid: 0,
                    cgroups: Vec::new(),
                    files: Vec::new(),
                });
            }
            return Err(e);
        }
    };
    let mut guard = RestoreGuard { saved, lock: &lock, done: false };
    tracefs.configure(&settings)?;
    let setup = check_interrupted("while setting up tracefs, before the worker started")
        .and_then(|()| layout.as_ref().map_or(Ok(()), Layout::create));
    if let Err(e) = setup {
        let cause = Box::new(e);
        return Err(match guard.restore() {
            Ok(()) => RunnerError::Restored { cause },
            Err(r) => RunnerError::NotRestored { cause, restore: Box::new(r) },
        });
    }

    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(RunnerError::Syscall { call: "pipe2", source: std::io::Error::last_os_error() });
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    let args = WorkerArgs {
        scenario,
        plan,
        opts,
        trace_marker: tracefs.path("trace_marker"),
        supervisor_pid,
        cgroups: layout.as_ref(),
    };
    // SAFETY: the process is single-threaded (checked above), so the child
    // may allocate and create threads.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(RunnerError::Syscall { call: "fork", source: std::io::Error::last_os_error() });
    }
    if child == 0 {
        // SAFETY: in the child: drop the parent's fds and handlers, then become the worker.
        unsafe {
            libc::close(read_fd);
            libc::close(lock.raw_fd());
            // Only the supervisor may hold the restorer's pipe open: its
            // end of file is the news that the supervisor died.
            libc::close(restorer.write_fd());
            for sig in CAUGHT {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        worker_main(args, write_fd);
    }
    // SAFETY: the write end belongs to the child now.
    unsafe { libc::close(write_fd) };
    // SAFETY: we own read_fd.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(read_fd) };

    // Raised after the fork, so the worker does not inherit it.
    let mut raised = Raised::raise();
    let (status, bytes, how) = wait_worker(child, &mut pipe, plan.duration_ns);
    let lowered = raised.as_mut().map_or(Ok(()), Raised::lower);

    let stop = tracefs.write("tracing_on", "0");
    // Read before the groups are removed with the rest of the settings.
    let cgroup_stats = layout.as_ref().map(|l| l.stats(scenario)).unwrap_or_default();
    // Interrupted: the trace is not wanted, restore at once.
    let wanted = INTERRUPTED.load(Ordering::SeqCst) == 0;
    let lost_events = if wanted { tracefs.lost_events() } else { 0 };
    let text = if wanted { tracefs.read_trace() } else { Ok(String::new()) };
    guard.restore()?;
    restorer.dismiss();
    let late = INTERRUPTED.load(Ordering::SeqCst);
    drop(signals);
    lowered?;
    if late != 0 && matches!(how, Ending::Exited) {
        return Err(RunnerError::InterruptedReading { signal: signal_name(late), worker: child });
    }
    stop?;
    let text = text?;
    let report_text = String::from_utf8_lossy(&bytes);
    let report: Option<WorkerReport> = report_text.lines().next().and_then(|l| serde_json::from_str(l).ok());
    let died = describe_status(status);
    match (how, died, report) {
        (Ending::Interrupted(sig), _, _) => {
            Err(RunnerError::WorkerInterrupted { signal: signal_name(sig), worker: child })
        }
        (Ending::Overran, _, _) => Err(RunnerError::WorkerOverran { worker: child }),
        (Ending::Exited, Some(how), _) => Err(RunnerError::WorkerDied { worker: child, how }),
        (Ending::Exited, None, None) => {
            Err(RunnerError::NoReport { worker: child, text: report_text.trim().to_string() })
        }
        (Ending::Exited, None, Some(report)) => match &report.error {
            Some(e) => Err(RunnerError::Worker(e.clone())),
            None => Ok(Captured { text, report, lost_events, notes, worker_pid: child, cgroup_stats }),
        },
    }
}

enum Ending {
    Exited,
    Interrupted(i32),
    Overran,
}

/// Blocks the caught signals in the calling thread while alive (the old
/// mask back on drop), so one arriving between a check of INTERRUPTED and
/// the wait that follows stays pending: `ppoll` with [`SignalsBlocked::waiting`]
/// unblocks them atomically for the wait and returns at once.
struct SignalsBlocked {
    old: libc::sigset_t,
    waiting: libc::sigset_t,
}

impl SignalsBlocked {
    fn new() -> SignalsBlocked {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset/pthread_sigmask.
        unsafe {
            let mut caught: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut caught);
            for sig in CAUGHT {
                libc::sigaddset(&mut caught, sig);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &caught, &mut old);
            let mut waiting = old;
            for sig in CAUGHT {
                libc::sigdelset(&mut waiting, sig);
            }
            SignalsBlocked { old, waiting }
        }
    }
}

impl Drop for SignalsBlocked {
    fn drop(&mut self) {
        // SAFETY: restoring the mask read in `new`; a signal that came meanwhile is delivered now.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// When the supervisor kills a worker that has not ended (`CLOCK_MONOTONIC`):
/// its setup, the run and the stop's grace, and 3 s more for the worker's
/// own watchdog to act first.
fn worker_deadline(duration_ns: u64) -> u64 {
    now_ns()
        .saturating_add(SETUP_LIMIT_NS)
        .saturating_add(duration_ns)
        .saturating_add(STOP_GRACE_NS)
        .saturating_add(3_000_000_000)
}

/// Wait for the worker's exit (a pidfd, so the supervisor does not wake
/// during the run), collecting its report; kill it on a signal or when it
/// overruns. Returns the wait status, the report bytes and how it ended.
fn wait_worker(child: i32, pipe: &mut std::fs::File, duration_ns: u64) -> (i32, Vec<u8>, Ending) {
    use std::os::fd::AsRawFd;
    // SAFETY: plain syscall.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child, 0) } as i32;
    let deadline = worker_deadline(duration_ns);
    let blocked = SignalsBlocked::new();
    let mut bytes = Vec::new();
    let mut pipe_open = true;
    let how = loop {
        let sig = INTERRUPTED.load(Ordering::SeqCst);
        let now = now_ns();
        if sig != 0 || now >= deadline {
            // SAFETY: plain syscall on our child.
            unsafe { libc::kill(child, libc::SIGKILL) };
            break if sig != 0 { Ending::Interrupted(sig) } else { Ending::Overran };
        }
        // Without a pidfd (kernels before 5.3), wake every 50 ms to check the child.
        let left = deadline - now;
        let t = if pidfd < 0 { left.min(50_000_000) } else { left };
        let ts = libc::timespec {
            tv_sec: (t / 1_000_000_000).min(i32::MAX as u64) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as libc::c_long,
        };
        let mut pfds = [
            libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: if pipe_open { pipe.as_raw_fd() } else { -1 }, events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: `pfds` is a valid array of 2 pollfds; `ts` and the mask outlive the call.
        unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &ts, &blocked.waiting) };
        if pfds[1].revents != 0 {
            let mut buf = [0u8; 65536];
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
            }
        }
        if pfds[0].revents != 0 || pidfd < 0 {
            let mut status = 0;
            // SAFETY: plain syscall on our child.
            let r = unsafe { libc::waitpid(child, &mut status, if pidfd < 0 { libc::WNOHANG } else { 0 }) };
            if r == child {
                let _ = pipe.read_to_end(&mut bytes);
                close_pidfd(pidfd);
                return (status, bytes, Ending::Exited);
            }
        }
    };
    let mut status = 0;
    // SAFETY: reaping our SIGKILLed child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    let _ = pipe.read_to_end(&mut bytes);
    close_pidfd(pidfd);
    (status, bytes, how)
}

fn close_pidfd(fd: i32) {
    if fd >= 0 {
        // SAFETY: we own the pidfd.
        unsafe { libc::close(fd) };
    }
}

/// `None` for a clean exit, else how the worker died.
fn describe_status(status: i32) -> Option<String> {
    if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => None,
            c => Some(format!("exited with status {c}")),
        }
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let hint = if sig == libc::SIGKILL { " (the watchdog, the OOM killer, or someone else)" } else { "" };
        Some(format!("was killed by {}{hint}", signal_name(sig)))
    } else {
        Some(format!("ended with wait status {status:#x}"))
    }
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        s => format!("signal {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_attributes_go_back_without_a_custom_slice() {
        // As 6.12+ reads a SCHED_OTHER task: its (default) slice in `runtime`.
        let other = SchedAttr { policy: libc::SCHED_OTHER as u32, nice: 5, runtime: 2_800_000, ..Default::default() };
        assert_eq!(attr_to_restore(&other), SchedAttr { runtime: 0, ..other });
        let rr = SchedAttr { policy: libc::SCHED_RR as u32, priority: 10, flags: 1, ..Default::default() };
        assert_eq!(attr_to_restore(&rr), rr);
        let dl = SchedAttr {
            policy: libc::SCHED_DEADLINE as u32,
            runtime: 1_000_000,
            deadline: 5_000_000,
            period: 10_000_000,
            ..Default::default()
        };
        assert_eq!(attr_to_restore(&dl), dl, "SCHED_DEADLINE needs its runtime");
    }

    #[test]
    fn a_signal_is_caught_only_while_the_guard_lives_and_is_reported() {
        let g = SignalGuard::install();
        assert!(check_interrupted("x").is_ok());
        // SAFETY: raising a caught signal at ourselves; the handler only stores.
        unsafe { libc::raise(libc::SIGHUP) };
        assert_eq!(
            check_interrupted("while testing").map_err(|e| e.to_string()),
            Err("interrupted by SIGHUP while testing".into())
        );
        drop(g);
        INTERRUPTED.store(0, Ordering::SeqCst);
    }
}
