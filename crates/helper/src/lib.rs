//! External programs with a deadline, that die with schedlab.
//!
//! schedlab leans on other programs: `trace-cmd` and `perf` to read
//! trace.dat and perf.data, QEMU for `vm`, Slurm's commands for
//! `sweep --slurm`, `gzip` for `/proc/config.gz`, `cargo`, `strip`,
//! `apt-get` and `dpkg-deb` to build or fetch a guest, and `schedlab bench`
//! runs itself. A damaged input can make such a program spin forever (three
//! changed bytes of a trace.dat make `trace-cmd dump` loop at 100 % CPU),
//! and a program that outlives schedlab goes on where nobody sees it. So
//! every one is started by [`Helper::spawn`] (or [`output`], [`status`]):
//!
//! * with a **time limit**: [`Helper::wait`] and [`Helper::try_wait`] stop
//!   it (SIGKILL to its process group) once the limit has passed, and say so
//!   with [`HelperError::TimedOut`], which callers turn into a message naming
//!   their input and how to raise the limit;
//! * in a **process group of its own**, so that stopping it stops whatever
//!   it started, and once it has exited whatever it left running in its
//!   group is stopped too;
//! * with **`PR_SET_PDEATHSIG`** = SIGKILL, so it dies with schedlab however
//!   schedlab ends, SIGKILL included. The kernel sends it when the *thread*
//!   that started the helper exits: start helpers from a thread that
//!   outlives them (schedlab starts them from its main thread);
//! * dropped while it runs, it is stopped and reaped.
//!
//! Since a helper has a group of its own, Ctrl-C at a terminal reaches
//! schedlab only; the helper then dies with it (or is stopped by it).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The most [`output`] keeps of each of a helper's streams; more is an error
/// (read on to the end and dropped, so the helper is not blocked on a full
/// pipe meanwhile).
pub const MAX_OUTPUT_BYTES: usize = 256 << 20;

/// Why a helper did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("`{program}` was not found (is it installed and on PATH?)")]
    NotFound { program: String },
    #[error("cannot start `{program}`: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("`{program}` was still running after {}, its time limit, and was stopped", seconds(*limit))]
    TimedOut { program: String, limit: Duration },
    #[error("waiting for `{program}`: {source}")]
    Wait { program: String, source: std::io::Error },
    #[error("`{program}` printed more than {} MiB on its {stream} and was stopped", MAX_OUTPUT_BYTES >> 20)]
    TooMuchOutput { program: String, stream: &'static str },
}

impl HelperError {
    /// Whether the helper overran its time limit (callers add how to raise it).
    pub fn timed_out(&self) -> bool {
        matches!(self, HelperError::TimedOut { .. })
    }
}

/// `1.5 s`, `120 s`.
pub fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// A running external program (see the module docs).
pub struct Helper {
    child: Child,
    program: String,
    limit: Duration,
    started: Instant,
    reaped: bool,
}

impl Helper {
    /// Start `cmd` with at most `limit` to run, in a process group of its
    /// own, to be killed when the calling thread exits. A missing program
    /// is [`HelperError::NotFound`].
    pub fn spawn(cmd: &mut Command, limit: Duration) -> Result<Helper, HelperError> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        cmd.process_group(0);
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes async-signal-safe syscalls (prctl, getppid).
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // schedlab died before the prctl: nobody would stop this child.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("schedlab exited while starting it"));
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => HelperError::NotFound { program: program.clone() },
            _ => HelperError::Spawn { program: program.clone(), source },
        })?;
        Ok(Helper { child, program, limit, started: Instant::now(), reaped: false })
    }

    /// The program's name, as given to [`Helper::spawn`].
    pub fn program(&self) -> &str {
        &self.program
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its standard output, when piped (once).
    pub fn stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Its standard error, when piped (once).
    pub fn stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Its exit status if it has ended; stopped, and [`HelperError::TimedOut`],
    /// once its time limit has passed.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, HelperError> {
        if self.reaped {
            return self.child.try_wait().map_err(|source| self.wait_error(source));
        }
        if self.has_exited() {
            // Before reaping it, while its pid (the group's id) cannot be
            // reused: stop what it left running in its group (a daemon it
            // forked, which would also hold its pipes open).
            // SAFETY: kill(2) of the group the unreaped child leads.
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
            let status = self.child.wait().map_err(|source| self.wait_error(source))?;
            self.reaped = true;
            return Ok(Some(status));
        }
        if self.started.elapsed() >= self.limit {
            self.kill();
            return Err(HelperError::TimedOut { program: self.program.clone(), limit: self.limit });
        }
        Ok(None)
    }

    /// Wait for its end, at most until its time limit (then it is stopped).
    pub fn wait(&mut self) -> Result<ExitStatus, HelperError> {
        let mut nap = Duration::from_millis(1);
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            let left = self.limit.saturating_sub(self.started.elapsed());
            std::thread::sleep(nap.min(left).max(Duration::from_millis(1)));
            nap = (nap * 2).min(Duration::from_millis(50));
        }
    }

    /// Stop it and everything in its process group, and reap it.
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        // SAFETY: kill(2) of the group it leads: the pid cannot have been
        // reused while the child is not reaped.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        // In case it left its group (setsid) before the group kill.
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }

    /// Whether the child has exited, without reaping it (`WNOWAIT`).
    fn has_exited(&self) -> bool {
        // SAFETY: siginfo_t is plain data; waitid only writes it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: waitid on our own child with a valid siginfo_t.
        let r = unsafe { libc::waitid(libc::P_PID, self.child.id(), &mut info, flags) };
        // SAFETY: si_pid is valid to read after waitid (0 when nothing changed).
        r == 0 && unsafe { info.si_pid() } != 0
    }

    fn wait_error(&self, source: std::io::Error) -> HelperError {
        HelperError::Wait { program: self.program.clone(), source }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run `cmd` to its end within `limit`, standard input empty, and collect
/// its standard output and error (each at most [`MAX_OUTPUT_BYTES`]).
pub fn output(cmd: &mut Command, limit: Duration) -> Result<Output, HelperError> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut helper = Helper::spawn(cmd, limit)?;
    // Both streams are drained on threads, so that a helper filling one pipe
    // cannot block while the other is read.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let (mut kept, mut overflow) = (Vec::new(), false);
            let Some(mut pipe) = pipe else { return (kept, overflow) };
            let mut buf = [0u8; 65536];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) if kept.len() + n <= MAX_OUTPUT_BYTES => kept.extend_from_slice(&buf[..n]),
                    Ok(_) => overflow = true,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            (kept, overflow)
        })
    };
    let out = drain(helper.stdout().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(helper.stderr().map(|p| Box::new(p) as Box<dyn Read + Send>));
    // On a timeout the group is killed, its pipes close and the threads end.
    let status = helper.wait();
    let joined = |t: std::thread::JoinHandle<(Vec<u8>, bool)>| t.join().unwrap_or_default();
    let ((stdout, out_overflow), (stderr, err_overflow)) = (joined(out), joined(err));
    let status = status?;
    for (overflow, stream) in [(out_overflow, "standard output"), (err_overflow, "standard error")] {
        if overflow {
            return Err(HelperError::TooMuchOutput { program: helper.program.clone(), stream });
        }
    }
    Ok(Output { status, stdout, stderr })
}

/// Run `cmd` to its end within `limit` with the streams it was given
/// (inherited by default).
pub fn status(cmd: &mut Command, limit: Duration) -> Result<ExitStatus, HelperError> {
    Helper::spawn(cmd, limit)?.wait()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a process exists and is not a zombie.
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
    }

    fn wait_gone(pid: i32) -> bool {
        let t = Instant::now();
        while alive(pid) {
            if t.elapsed() > Duration::from_secs(5) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    #[test]
    fn a_helper_that_runs_too_long_is_stopped_with_what_it_started() {
        // Removed when `dir` drops, also when the test fails.
        let dir = tempfile::Builder::new().prefix("schedlab-helper-test-").tempdir().unwrap();
        let pidfile = dir.path().join("grandchild");
        // The helper starts a grandchild in its group, then both sleep.
        let script = format!("sleep 300 & echo $! > {}; sleep 300", pidfile.display());
        let start = Instant::now();
        let e = output(Command::new("sh").args(["-c", &script]), Duration::from_millis(300)).unwrap_err();
        assert!(e.timed_out(), "{e}");
        assert_eq!(e.to_string(), "`sh` was still running after 0.3 s, its time limit, and was stopped");
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        let grandchild: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        assert!(wait_gone(grandchild), "the helper's own child {grandchild} outlived it");
        dir.close().unwrap();
    }

    #[test]
    fn a_helper_that_ends_gives_its_output_and_leaves_nothing_in_its_group() {
        let out = output(
            Command::new("sh").args(["-c", "echo out; echo err >&2; sleep 300 & echo $!"]),
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("out"));
        assert_eq!(out.stderr, b"err\n");
        // The daemon it left held the pipe: output() returned, so it was stopped.
        let left: i32 = lines.next().unwrap().parse().unwrap();
        assert!(wait_gone(left), "{left} outlived the helper that started it");
        let failed = output(&mut Command::new("false"), Duration::from_secs(30)).unwrap();
        assert!(!failed.status.success());
    }

    #[test]
    fn a_missing_program_is_named() {
        let e = output(&mut Command::new("schedlab-no-such-program"), Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.to_string(), "`schedlab-no-such-program` was not found (is it installed and on PATH?)");
    }

    #[test]
    fn a_dropped_helper_is_stopped() {
        let mut cmd = Command::new("sleep");
        cmd.arg("300");
        let helper = Helper::spawn(&mut cmd, Duration::from_secs(600)).unwrap();
        let pid = helper.id() as i32;
        assert!(alive(pid));
        drop(helper);
        assert!(!alive(pid));
    }

    /// The helper dies with the thread that started it (its "parent" for
    /// PR_SET_PDEATHSIG), as it would with schedlab.
    #[test]
    fn a_helper_dies_with_its_starter() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut cmd = Command::new("sleep");
            cmd.arg("300");
            let helper = Helper::spawn(&mut cmd, Duration::from_secs(600)).unwrap();
            tx.send(helper.id() as i32).unwrap();
            // Leaked, not dropped: only the death signal can stop it now.
            std::mem::forget(helper);
        })
        .join()
        .unwrap();
        let pid = rx.recv().unwrap();
        assert!(wait_gone(pid), "{pid} outlived the thread that started it");
        // SAFETY: reaping our own (killed) child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    }
}
