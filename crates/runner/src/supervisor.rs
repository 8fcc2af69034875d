//! The supervisor: the calling process. It owns the tracefs settings — saves
//! them (in memory and on disk), sets them, forks the worker, waits for it
//! with a deadline, stops tracing, reads the buffer and restores every
//! setting whatever happened to the worker: normal exit, failure, Ctrl-C,
//! SIGKILL, or the watchdog's kill. Only a SIGKILL of the supervisor itself
//! skips the restore; then the state file stays and the next run restores it.

use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

use schedlab_scenario::Scenario;

use crate::plan::{Plan, RealOptions};
use crate::state::{state_dir, RunLock};
use crate::sys::{self, now_ns, sched_getattr, sched_setattr, SchedAttr};
use crate::tracefs::{restore, CaptureSettings, SavedState, Tracefs};
use crate::worker::{worker_main, WorkerArgs, WorkerReport, SETUP_LIMIT_NS, STOP_GRACE_NS};

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
    fn restore(&mut self) -> Result<(), String> {
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
            eprintln!("schedlab real: error: restoring tracefs: {e} (the saved state stays for the next run)");
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
}

/// Save, configure, fork the worker, wait, read the trace, restore.
pub fn supervise(scenario: &Scenario, plan: &Plan, opts: &RealOptions) -> Result<Captured, String> {
    match sys::thread_count() {
        Some(1) | None => {}
        Some(n) => {
            return Err(format!(
                "a real run forks its worker, so it must start from a single-threaded process ({n} threads)"
            ))
        }
    }
    let lock = RunLock::acquire(&state_dir())?;
    let mut notes = Vec::new();
    notes.extend(lock.restore_leftover()?);
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
    };
    let saved = tracefs.save(&settings).and_then(|saved| lock.write_state(&saved).map(|()| saved));
    let saved = match saved {
        Ok(s) => s,
        Err(e) => {
            // Nothing was changed yet, except perhaps the mount.
            if tracefs.mounted_by_us {
                let _ = restore(&SavedState {
                    tracefs: tracefs.root.display().to_string(),
                    mounted_by_us: true,
                    pid: 0,
                    files: Vec::new(),
                });
            }
            return Err(e);
        }
    };
    let mut guard = RestoreGuard { saved, lock: &lock, done: false };
    tracefs.configure(&settings)?;

    let signals = SignalGuard::install();
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe2: {}", std::io::Error::last_os_error()));
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    let supervisor_pid = std::process::id() as i32;
    let args = WorkerArgs { scenario, plan, opts, trace_marker: tracefs.path("trace_marker"), supervisor_pid };
    // SAFETY: the process is single-threaded (checked above), so the child
    // may allocate and create threads.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if child == 0 {
        // SAFETY: in the child: drop the parent's fds and handlers, then become the worker.
        unsafe {
            libc::close(read_fd);
            libc::close(lock.raw_fd());
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

    // Be able to act (timeout, Ctrl-C) even under RT spinners; back to normal after.
    let own_attr = sched_getattr(0).ok();
    let _ = sched_setattr(0, &SchedAttr { policy: libc::SCHED_FIFO as u32, priority: 99, ..Default::default() });
    let waited = wait_worker(child, &mut pipe, plan.duration_ns);
    if let Some(a) = own_attr {
        let _ = sched_setattr(0, &a);
    }
    drop(signals);

    let stop = tracefs.write("tracing_on", "0");
    let lost_events = tracefs.lost_events();
    let text = tracefs.read_trace();
    guard.restore()?;
    stop?;
    let text = text?;
    let (status, bytes, how) = waited?;
    let report_text = String::from_utf8_lossy(&bytes);
    let report: Option<WorkerReport> = report_text.lines().next().and_then(|l| serde_json::from_str(l).ok());
    let died = describe_status(status);
    match (how, died, report) {
        (Ending::Interrupted(sig), _, _) => Err(format!(
            "interrupted by {}: the worker (pid {child}) was stopped and the tracefs settings restored",
            signal_name(sig)
        )),
        (Ending::Overran, _, _) => {
            Err(format!("the worker (pid {child}) overran its deadline and was killed; tracefs settings restored"))
        }
        (Ending::Exited, Some(d), _) => {
            Err(format!("the worker (pid {child}) {d} before reporting; tracefs settings restored"))
        }
        (Ending::Exited, None, None) => Err(format!(
            "the worker (pid {child}) ended without a readable report (`{}`); tracefs settings restored",
            report_text.trim()
        )),
        (Ending::Exited, None, Some(report)) => match &report.error {
            Some(e) => Err(e.clone()),
            None => Ok(Captured { text, report, lost_events, notes, worker_pid: child }),
        },
    }
}

enum Ending {
    Exited,
    Interrupted(i32),
    Overran,
}

/// Wait for the worker's exit (a pidfd, so the supervisor does not wake
/// during the run), collecting its report; kill it on a signal or when it
/// overruns. Returns the wait status, the report bytes and how it ended.
fn wait_worker(child: i32, pipe: &mut std::fs::File, duration_ns: u64) -> Result<(i32, Vec<u8>, Ending), String> {
    use std::os::fd::AsRawFd;
    // SAFETY: plain syscall.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child, 0) } as i32;
    let deadline = now_ns() + SETUP_LIMIT_NS + duration_ns + STOP_GRACE_NS + 3_000_000_000;
    let mut bytes = Vec::new();
    let mut pipe_open = true;
    let mut how = Ending::Exited;
    loop {
        let sig = INTERRUPTED.load(Ordering::SeqCst);
        if sig != 0 || now_ns() >= deadline {
            how = if sig != 0 { Ending::Interrupted(sig) } else { Ending::Overran };
            // SAFETY: plain syscall on our child.
            unsafe { libc::kill(child, libc::SIGKILL) };
            break;
        }
        let timeout_ms = ((deadline - now_ns()) / 1_000_000).min(i32::MAX as u64) as i32;
        let mut pfds = [
            libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: if pipe_open { pipe.as_raw_fd() } else { -1 }, events: libc::POLLIN, revents: 0 },
        ];
        // Without a pidfd (kernels before 5.3), wake every 50 ms to check the child.
        let t = if pidfd < 0 { timeout_ms.min(50) } else { timeout_ms.max(1) };
        // SAFETY: `pfds` is a valid array of 2 pollfds.
        unsafe { libc::poll(pfds.as_mut_ptr(), 2, t) };
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
                return Ok((status, bytes, how));
            }
        }
    }
    let mut status = 0;
    // SAFETY: reaping our SIGKILLed child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    let _ = pipe.read_to_end(&mut bytes);
    close_pidfd(pidfd);
    Ok((status, bytes, how))
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
