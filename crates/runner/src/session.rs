//! Sessions: the scenario's threads with a `session` key run in processes
//! of their own, one per session, forked by the worker and made session
//! leaders with `setsid()` — with `kernel.sched_autogroup_enabled` on, the
//! kernel gives each one an autogroup (`sched_autogroup_create_attach()`),
//! exactly as a program started from another terminal gets one.
//!
//! The worker and its session processes keep the run's one timeline over
//! two pipes per child: the child creates its threads (they move into their
//! cgroups and set their affinity and policy as the worker's do) and writes
//! `R` once they wait at its barrier; the worker, when every process is
//! ready, writes the start marker and sends each child the stop time; the
//! child releases its threads, stops them at that time as the worker stops
//! its own, and writes its threads' reports as one JSON line. A child dies
//! with the worker (`PR_SET_PDEATHSIG`) and at the run's deadline on its
//! own (`alarm()`: no thread of its own to starve), so none outlives a run.
//! Scenario validation keeps every object to one session: memory is not
//! shared between the processes.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::FromRawFd;
use std::sync::{mpsc, Arc};

use crate::program::{Outcome, Shared};
use crate::sys::now_ns;
use crate::worker::{Crew, SetupError, ThreadReport, WorkerArgs};

/// The worker's handle on one session process.
pub(crate) struct SessionChild {
    pid: i32,
    name: String,
    to: std::fs::File,
    from: BufReader<std::fs::File>,
    deadline: u64,
}

fn pipe() -> Result<(i32, i32), SetupError> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SetupError::Os { call: "pipe2".into(), source: std::io::Error::last_os_error() });
    }
    Ok((fds[0], fds[1]))
}

/// Wait until `fd` is readable or `deadline` (CLOCK_MONOTONIC ns) passes.
fn readable_by(fd: i32, deadline: u64) -> bool {
    loop {
        let now = now_ns();
        if now >= deadline {
            return false;
        }
        let ms = ((deadline - now) / 1_000_000).clamp(1, i32::MAX as u64) as i32;
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r > 0 {
            return true;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

/// Fork the process of session `k`. `deadline` bounds the whole run.
pub(crate) fn start(
    args: &WorkerArgs<'_>,
    shared: &Arc<Shared>,
    k: usize,
    deadline: u64,
) -> Result<SessionChild, SetupError> {
    let name = args.scenario.sessions[k].name.clone();
    let (go_r, go_w) = pipe()?;
    let (back_r, back_w) = pipe()?;
    // SAFETY: plain syscall.
    let worker = unsafe { libc::getpid() };
    // SAFETY: glibc makes malloc usable in the child of a threaded parent;
    // the child only creates threads and runs the same code the worker does.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(SetupError::Os {
            call: format!("fork for session `{name}`"),
            source: std::io::Error::last_os_error(),
        });
    }
    if pid == 0 {
        // SAFETY: the ends that belong to the worker.
        unsafe {
            libc::close(go_w);
            libc::close(back_r);
        }
        child_main(args, shared, k, deadline, worker, go_r, back_w);
    }
    // SAFETY: the ends that belong to the child.
    unsafe {
        libc::close(go_r);
        libc::close(back_w);
    }
    // SAFETY: we own these fds now.
    let (to, from) = unsafe { (std::fs::File::from_raw_fd(go_w), std::fs::File::from_raw_fd(back_r)) };
    Ok(SessionChild { pid, name, to, from: BufReader::new(from), deadline })
}

impl SessionChild {
    fn line(&mut self, by: u64) -> Result<String, SetupError> {
        use std::os::fd::AsRawFd;
        if self.from.buffer().is_empty() && !readable_by(self.from.get_ref().as_raw_fd(), by) {
            return Err(SetupError::NoAnswer { name: self.name.clone(), pid: self.pid });
        }
        let mut s = String::new();
        match self.from.read_line(&mut s) {
            Ok(0) | Err(_) => Err(SetupError::EndedEarly { name: self.name.clone(), pid: self.pid }),
            Ok(_) => Ok(s),
        }
    }

    /// Wait for the child's threads to be set up.
    pub fn ready(&mut self) -> Result<(), SetupError> {
        let by = now_ns().saturating_add(crate::worker::SETUP_LIMIT_NS).min(self.deadline);
        let l = self.line(by)?;
        match l.trim_end().strip_prefix('E') {
            Some(e) => Err(SetupError::Session { name: self.name.clone(), why: e.trim().to_string() }),
            None if l.trim_end() == "R" => Ok(()),
            None => Err(SetupError::Unexpected { name: self.name.clone(), line: l.trim().to_string() }),
        }
    }

    /// Start the child's threads, to stop at `stop_at`.
    pub fn go(&mut self, stop_at: u64) {
        let _ = self.to.write_all(&stop_at.to_le_bytes());
    }

    /// The child's thread reports (scenario index, report); the child is reaped.
    pub fn report(mut self, by: u64) -> Result<Vec<(usize, ThreadReport)>, SetupError> {
        let got = self.line(by.min(self.deadline)).and_then(|l| {
            serde_json::from_str::<Vec<(usize, ThreadReport)>>(&l)
                .map_err(|source| SetupError::Report { name: self.name.clone(), source })
        });
        let mut status = 0;
        // SAFETY: our child; killed first unless it already reported (then it exits at once).
        unsafe {
            if got.is_err() {
                libc::kill(self.pid, libc::SIGKILL);
            }
            libc::waitpid(self.pid, &mut status, 0);
        }
        got
    }
}

/// The session process: never returns.
fn child_main(
    args: &WorkerArgs<'_>,
    shared: &Arc<Shared>,
    k: usize,
    deadline: u64,
    worker: i32,
    go_fd: i32,
    back_fd: i32,
) -> ! {
    // SAFETY: plain syscalls on this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        if libc::getppid() != worker {
            libc::_exit(3);
        }
        // The run's deadline, a second late: SIGALRM's default action ends the process.
        let secs = deadline.saturating_sub(now_ns()) / 1_000_000_000 + 1;
        libc::alarm(secs.min(u32::MAX as u64) as u32);
    }
    // SAFETY: we own both fds.
    let (mut go, mut back) = unsafe { (std::fs::File::from_raw_fd(go_fd), std::fs::File::from_raw_fd(back_fd)) };
    // SAFETY: plain syscall.
    if unsafe { libc::setsid() } < 0 {
        let _ = writeln!(back, "E setsid() failed: {}", std::io::Error::last_os_error());
        // SAFETY: ending the child.
        unsafe { libc::_exit(1) };
    }
    crate::sys::set_comm("schedlab-sess");
    let nice = args.scenario.sessions[k].nice;
    if nice != 0 {
        // The new session's autogroup, made by setsid(): its weight is nice's.
        if let Err(e) = std::fs::write("/proc/self/autogroup", nice.to_string()) {
            let _ = writeln!(back, "E cannot set the autogroup's nice to {nice} (/proc/self/autogroup): {e}");
            // SAFETY: ending the child.
            unsafe { libc::_exit(1) };
        }
    }
    let members: Vec<usize> =
        (0..args.scenario.threads.len()).filter(|&i| args.scenario.threads[i].session == Some(k)).collect();
    let (done_tx, done_rx) = mpsc::channel::<(usize, Outcome)>();
    let crew = match Crew::spawn(args, shared, &members, done_tx).and_then(|c| c.ready().map(|()| c)) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(back, "E {e}");
            // SAFETY: ending the child; its threads go with it.
            unsafe { libc::_exit(1) };
        }
    };
    let _ = writeln!(back, "R");
    let mut b = [0u8; 8];
    if go.read_exact(&mut b).is_err() {
        // The worker gave up on the run.
        // SAFETY: ending the child.
        unsafe { libc::_exit(0) };
    }
    let stop_at = u64::from_le_bytes(b);
    shared.stop_at.store(stop_at, std::sync::atomic::Ordering::SeqCst);
    crew.go.wait();
    let (outcomes, _) = crew.finish(shared, done_rx, stop_at, false);
    let setups = crew.setups.lock().unwrap().clone();
    let rows: Vec<(usize, ThreadReport)> = members
        .iter()
        .map(|&i| {
            let (tid, setup_notes) = setups[i].clone();
            let t = ThreadReport {
                name: args.scenario.threads[i].name.clone(),
                tid,
                setup_notes,
                outcome: outcomes[i].clone(),
                forked_from: None,
            };
            (i, t)
        })
        .collect();
    let _ = writeln!(back, "{}", serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into()));
    // SAFETY: end the child without the parent's destructors.
    unsafe { libc::_exit(0) }
}
