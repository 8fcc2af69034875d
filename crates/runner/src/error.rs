//! Why a real run could not start, was stopped, or could not put the host
//! back as it was.
//!
//! Every message names what it concerns (the file, the syscall, the worker's
//! pid) because the user has to act on it at a root shell: fix a permission,
//! restore a setting by hand, kill a stray run.

use std::io;
use std::path::PathBuf;

use schedlab_trace::TraceParseError;

use crate::plan::seconds;
use crate::tracefs::{AUTOGROUP, RT_RUNTIME, TRACEFS};

/// A failed real run, with what it concerns.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// A file under tracefs (or `sched_rt_runtime_us`) could not be used;
    /// access denied hints at root.
    #[error("{}: cannot {action}: {source}{}", path.display(), root_hint(source))]
    File { path: PathBuf, action: String, source: io::Error },
    #[error("tracefs is not mounted and mounting it at {TRACEFS} failed: {source}{}",
        if source.raw_os_error() == Some(libc::EPERM) { " (run as root)" } else { "" })]
    Mount { source: io::Error },
    #[error("{}: no [selected] clock in `{text}`", path.display())]
    NoSelectedClock { path: PathBuf, text: String },
    #[error("umount {target}: {source}")]
    Umount { target: String, source: io::Error },
    /// A saved tracefs root with a NUL byte cannot be passed to `umount`.
    #[error("{0}")]
    NulInPath(#[from] std::ffi::NulError),
    /// A saved state whose tracefs root is none of [`crate::tracefs::TRACEFS_ROOTS`].
    #[error("refusing to restore under `{root}`: not a tracefs root this program uses ({roots})")]
    RefusedRoot { root: String, roots: String },
    /// A saved file outside the tracefs root (and not [`RT_RUNTIME`] or [`AUTOGROUP`]).
    #[error("refusing to restore `{file}`: only files under {root}, {RT_RUNTIME} and {AUTOGROUP} are restored")]
    RefusedFile { file: String, root: String },

    /// The lock or state file in the state directory.
    #[error("{}: cannot {action}: {source}", path.display())]
    StateFile { path: PathBuf, action: String, source: io::Error },
    #[error("{0}")]
    StateEncode(serde_json::Error),
    #[error(
        "another `schedlab real` is running (pid {holder}; lock {}): the trace buffer is machine-wide, so runs cannot overlap",
        lock.display()
    )]
    Locked { holder: String, lock: PathBuf },
    #[error(
        "{}:{}:{}: not a saved tracefs state ({source}); inspect it, restore by hand and delete it",
        path.display(), source.line(), source.column()
    )]
    BadSavedState { path: PathBuf, source: serde_json::Error },
    /// Restoring a state an interrupted run left; a refusal asks for a human.
    #[error("restoring the settings saved in {}: {source}{}", path.display(),
        if source.is_refusal() { "; inspect it, restore by hand and delete it" } else { "" })]
    RestoreLeftover { path: PathBuf, source: Box<RunnerError> },

    #[error("this process may not run on any CPU (empty affinity)")]
    NoCpus,
    #[error(
        "{scenario}: the threads are pinned to CPUs {pinned} but this process may only use CPUs {allowed} ({missing} missing); \
         pass --remap to map the scenario's CPUs onto these, or use a scenario written for a {nr_allowed}-CPU machine"
    )]
    CpusMissing { scenario: String, pinned: String, allowed: String, missing: String, nr_allowed: usize },
    /// `what` names where the duration came from (`--duration`, the file).
    #[error("{what} {} ({duration_ns} ns) is longer than a real run may last (at most {})",
        seconds(*duration_ns), seconds(*max_ns))]
    TooLong { what: String, duration_ns: u64, max_ns: u64 },

    #[error("a real run forks its worker, so it must start from a single-threaded process ({threads} threads)")]
    Threaded { threads: usize },
    /// A thread sets uclamp but the host kernel refuses clamps.
    #[error(
        "{scenario}:{line}: thread `{thread}` sets utilisation clamps (uclamp_min/uclamp_max, rt-app util_min/util_max), \
         but this kernel ({release}) refuses them: sched_setattr() with SCHED_FLAG_UTIL_CLAMP_* failed: {source}{}; \
         run it on a kernel with CONFIG_UCLAMP_TASK=y, or drop the clamps",
        if source.raw_os_error() == Some(libc::EOPNOTSUPP) { " (the kernel was built without CONFIG_UCLAMP_TASK)" } else { "" }
    )]
    NoUclamp { scenario: String, line: usize, thread: String, release: String, source: io::Error },
    #[error("{call}: {source}")]
    Syscall { call: &'static str, source: io::Error },
    #[error("interrupted by {signal} {when}")]
    Interrupted { signal: String, when: &'static str },
    #[error("{cause}; the tracefs settings were restored")]
    Restored { cause: Box<RunnerError> },
    #[error("{cause}; restoring tracefs failed: {restore} (the saved state stays for the next run)")]
    NotRestored { cause: Box<RunnerError>, restore: Box<RunnerError> },
    #[error("the supervisor could not return to its scheduling policy {policy} ({source}); it runs as SCHED_OTHER")]
    SupervisorPolicy { policy: u32, source: io::Error },
    #[error("the supervisor could not leave SCHED_FIFO 99: {first}; {second}")]
    SupervisorStuck { first: io::Error, second: io::Error },

    #[error(
        "interrupted by {signal} after the worker (pid {worker}) ended, while reading the trace; tracefs settings restored"
    )]
    InterruptedReading { signal: String, worker: i32 },
    #[error("interrupted by {signal}: the worker (pid {worker}) was stopped and the tracefs settings restored")]
    WorkerInterrupted { signal: String, worker: i32 },
    #[error("the worker (pid {worker}) overran its deadline and was killed; tracefs settings restored")]
    WorkerOverran { worker: i32 },
    /// `how` is the wait status in words (`exited with status 1`).
    #[error("the worker (pid {worker}) {how} before reporting; tracefs settings restored")]
    WorkerDied { worker: i32, how: String },
    #[error("the worker (pid {worker}) ended without a readable report (`{text}`); tracefs settings restored")]
    NoReport { worker: i32, text: String },
    /// A saved state naming a directory that is not a run's scratch cgroup.
    #[error("refusing to remove `{dir}`: only schedlab-<pid> cgroups under /sys/fs/cgroup are removed")]
    RefusedCgroup { dir: String },
    /// The scenario asks for autogroup on a kernel without it.
    #[error("{0}")]
    Autogroup(String),
    /// The scenario's cgroups cannot be set up on this host as asked.
    #[error("{0}")]
    Cgroup(String),
    /// The error the worker process reported; it crossed the pipe as text.
    #[error("{0}")]
    Worker(String),

    #[error("--trace {}: {source}", path.display())]
    TraceOut { path: PathBuf, source: io::Error },
    /// `kept` is whether the text was also written to a file (`--trace`).
    #[error("reading the captured trace: {source}{}", if *kept { "" } else { " (pass --trace FILE to keep the text)" })]
    CapturedTrace { source: TraceParseError, kept: bool },
}

impl RunnerError {
    /// A saved state refused as unsafe to write back, as opposed to a write
    /// that failed.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            RunnerError::RefusedRoot { .. } | RunnerError::RefusedFile { .. } | RunnerError::RefusedCgroup { .. }
        )
    }
}

fn root_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => " (run as root)",
        _ => "",
    }
}
