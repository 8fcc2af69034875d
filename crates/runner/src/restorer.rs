//! The restorer: a process that outlives a SIGKILLed supervisor and puts
//! the host back within a second, instead of leaving it changed until the
//! next run.
//!
//! The supervisor forks it right after taking the run lock, before it
//! changes anything. The restorer then:
//!
//! * shares the run lock: a forked descriptor is the same open file, and a
//!   `flock` belongs to the open file, so no other run can start (and
//!   configure tracefs) until the restorer has restored and exited;
//! * has a session of its own (`setsid`), so a signal to the supervisor's
//!   process group (`kill -9 -PGID`, a harness stopping a job) does not take
//!   it down too;
//! * blocks in `poll` on a pipe whose only write end the supervisor holds
//!   (the worker closes its inherited copy), and ends in one of three ways:
//!   1. a [`DONE`] byte: the supervisor restored everything itself (or
//!      failed to and left the saved state for the next run, as it says):
//!      the restorer exits without acting;
//!   2. end of file without it: the supervisor died (SIGKILL, the OOM
//!      killer, an abort). The worker dies with it (`PR_SET_PDEATHSIG`), so
//!      no RT thread is left; the restorer runs [`RunLock::restore_leftover`]
//!      — the very restore the next run would do, from the state file the
//!      supervisor wrote before its first change — and records what it
//!      restored: a line in `<state dir>/restorer.log` (see [`RESTORER_LOG`]),
//!      in the kernel log (`/dev/kmsg`, so `dmesg` and the journal show it)
//!      and on the supervisor's stderr;
//!   3. its deadline, the run's own worst case plus [`READ_BACK_ALLOWANCE_NS`]:
//!      the supervisor is alive but stuck (stopped, say). Restoring under a
//!      live supervisor could undo its next write, so the restorer records
//!      that the saved state stays for the supervisor or the next run, and
//!      exits. It never lingers past that deadline.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::state::RunLock;
use crate::sys::{now_ns, realtime_ns};
use crate::RunnerError;

/// The byte that tells the restorer the supervisor is done.
const DONE: u8 = b'D';

/// The file in the state directory where each restore by a restorer is
/// recorded, one line each (appended; it only grows when a supervisor dies).
pub const RESTORER_LOG: &str = "restorer.log";

/// How long after the worker's deadline the supervisor may still take to
/// read the ring buffer back and restore: a full buffer of a big machine is
/// gigabytes of text, read at a few hundred MB/s.
pub const READ_BACK_ALLOWANCE_NS: u64 = 600_000_000_000;

/// How long the supervisor waits for a dismissed restorer to exit (it does
/// at once) before it kills it: it holds the run lock.
const DISMISS_WAIT_NS: u64 = 2_000_000_000;

/// The supervisor's end of a running restorer.
pub(crate) struct Restorer {
    pid: i32,
    /// The pipe's write end; `None` once dismissed.
    done: Option<std::fs::File>,
}

/// How the restorer's wait ended.
#[derive(Debug, PartialEq, Eq)]
enum Ending {
    Done,
    SupervisorDied,
    Deadline,
}

impl Restorer {
    /// Fork the restorer; it gives up waiting at `deadline_ns`
    /// (`CLOCK_MONOTONIC`). The calling process must be single-threaded and
    /// hold `lock`.
    pub(crate) fn start(lock: &RunLock, deadline_ns: u64) -> Result<Restorer, RunnerError> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for two fds.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(RunnerError::Syscall { call: "pipe2", source: std::io::Error::last_os_error() });
        }
        let (read_fd, write_fd) = (fds[0], fds[1]);
        let supervisor = std::process::id() as i32;
        // SAFETY: the caller is single-threaded, so the child may allocate.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: closing the pipe we just made.
            unsafe {
                libc::close(read_fd);
                libc::close(write_fd);
            }
            return Err(RunnerError::Syscall { call: "fork (the restorer)", source: e });
        }
        if pid == 0 {
            // SAFETY: in the child: the write end is the supervisor's alone.
            unsafe { libc::close(write_fd) };
            restorer_main(lock, read_fd, supervisor, deadline_ns);
        }
        // SAFETY: the read end is the child's now; we own the write end.
        unsafe { libc::close(read_fd) };
        Ok(Restorer { pid, done: Some(unsafe { std::fs::File::from_raw_fd(write_fd) }) })
    }

    /// The write end, for a child forked later to close (it must not keep
    /// the pipe open past the supervisor's death).
    pub(crate) fn write_fd(&self) -> RawFd {
        self.done.as_ref().map_or(-1, |f| f.as_raw_fd())
    }

    /// The supervisor has put everything back (or left the state for the
    /// next run, and said so): tell the restorer and reap it, so the run
    /// lock is free when the supervisor returns.
    pub(crate) fn dismiss(&mut self) {
        let Some(mut f) = self.done.take() else { return };
        // An error means the restorer is gone already (someone killed it).
        let _ = f.write_all(&[DONE]);
        drop(f);
        let deadline = now_ns().saturating_add(DISMISS_WAIT_NS);
        loop {
            let mut status = 0;
            // SAFETY: reaping our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r != 0 {
                return; // reaped, or not ours to reap (ECHILD)
            }
            if now_ns() >= deadline {
                // SAFETY: killing and reaping our own child.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, &mut status, 0);
                }
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

impl Drop for Restorer {
    fn drop(&mut self) {
        self.dismiss();
    }
}

/// The restorer's whole life. Never returns.
fn restorer_main(lock: &RunLock, read_fd: RawFd, supervisor: i32, deadline_ns: u64) -> ! {
    // SAFETY: plain syscall; failure (already a group leader) changes nothing we rely on.
    unsafe { libc::setsid() };
    crate::sys::set_comm("schedlab-restore");
    keep_only_fds(&[read_fd, lock.raw_fd()]);
    // SAFETY: the read end is ours.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(read_fd) };
    let line = match wait_for_supervisor(&mut pipe, deadline_ns) {
        Ending::Done => exit_now(),
        Ending::SupervisorDied => match lock.restore_leftover() {
            // It died before saving anything, or after it had restored.
            Ok(None) => exit_now(),
            Ok(Some(what)) => format!("the supervisor (pid {supervisor}) died without restoring; {what}"),
            Err(e) => format!(
                "the supervisor (pid {supervisor}) died without restoring, and restoring failed: {e} \
                 (the saved state stays for the next run)"
            ),
        },
        Ending::Deadline => format!(
            "the supervisor (pid {supervisor}) is still running past its deadline; its saved settings stay \
             in {} for it or the next run",
            lock.dir.display()
        ),
    };
    record(&lock.dir, &line);
    exit_now()
}

/// End the restorer without running the parent's destructors or atexit
/// handlers (it is a fork of the supervisor).
fn exit_now() -> ! {
    // SAFETY: _exit never returns and touches no shared state.
    unsafe { libc::_exit(0) }
}

/// Block until the supervisor says it is done, dies (end of file), or the
/// deadline passes.
fn wait_for_supervisor(pipe: &mut std::fs::File, deadline_ns: u64) -> Ending {
    loop {
        let now = now_ns();
        if now >= deadline_ns {
            return Ending::Deadline;
        }
        let timeout_ms = ((deadline_ns - now) / 1_000_000).clamp(1, i32::MAX as u64) as i32;
        let mut pfd = libc::pollfd { fd: pipe.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if r <= 0 {
            continue; // a timeout (the deadline check ends it) or EINTR
        }
        let mut byte = [0u8; 1];
        return match pipe.read(&mut byte) {
            Ok(1) if byte[0] == DONE => Ending::Done,
            Ok(_) => Ending::SupervisorDied,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => Ending::SupervisorDied,
        };
    }
}

/// Standard input and output on /dev/null, standard error kept (the user
/// sees what was restored), every other descriptor but `keep` closed: the
/// restorer must not hold the supervisor's files, pipes or sockets open
/// after the supervisor is gone.
fn keep_only_fds(keep: &[RawFd]) {
    if let Ok(null) = OpenOptions::new().read(true).write(true).open("/dev/null") {
        // SAFETY: dup2 onto the standard descriptors.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
    // Listed first, closed after: the listing holds a descriptor of its own.
    let open: Vec<RawFd> = match std::fs::read_dir("/proc/self/fd") {
        Ok(dir) => dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect(),
        Err(_) => (3..1024).collect(),
    };
    for fd in open.into_iter().filter(|fd| *fd > 2 && !keep.contains(fd)) {
        // SAFETY: closing a descriptor this process does not use any more.
        unsafe { libc::close(fd) };
    }
}

/// Say what the restorer did: a line in [`RESTORER_LOG`], in the kernel log
/// and on standard error, each best effort (the restore itself is done).
fn record(dir: &Path, line: &str) {
    let pid = std::process::id();
    let secs = realtime_ns() as f64 / 1e9;
    let log = dir.join(RESTORER_LOG);
    // Root writes here, and the fallback dir is under /tmp: never through a planted symlink.
    if let Ok(mut f) = OpenOptions::new().append(true).create(true).custom_flags(libc::O_NOFOLLOW).open(&log) {
        let _ = writeln!(f, "{secs:.3} schedlab-restore[{pid}]: {line}");
    }
    // `<5>`: notice. The kernel cuts a record at about 1 kB.
    if let Ok(mut k) = OpenOptions::new().write(true).open("/dev/kmsg") {
        let _ = k.write_all(format!("<5>schedlab-restore[{pid}]: {line}\n").as_bytes());
    }
    let _ = writeln!(std::io::stderr(), "schedlab real: restorer: {line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> (std::fs::File, std::fs::File) {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for two fds, which we then own.
        unsafe {
            assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
            (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1]))
        }
    }

    #[test]
    fn the_wait_ends_on_done_on_a_closed_pipe_and_at_the_deadline() {
        let (mut r, mut w) = pipe();
        w.write_all(&[DONE]).unwrap();
        assert_eq!(wait_for_supervisor(&mut r, now_ns() + 5_000_000_000), Ending::Done);

        let (mut r, w) = pipe();
        drop(w);
        assert_eq!(wait_for_supervisor(&mut r, now_ns() + 5_000_000_000), Ending::SupervisorDied);

        // Anything but DONE is not a clean end.
        let (mut r, mut w) = pipe();
        w.write_all(b"x").unwrap();
        assert_eq!(wait_for_supervisor(&mut r, now_ns() + 5_000_000_000), Ending::SupervisorDied);

        let (mut r, _w) = pipe();
        let start = now_ns();
        assert_eq!(wait_for_supervisor(&mut r, start + 50_000_000), Ending::Deadline);
        assert!(now_ns() - start < 2_000_000_000);
    }
}
