//! One scenario thread's program on a real thread, op for op as the
//! simulator's workload interpreter runs it, writing the same
//! `trace_marker` lines at the same points: `signal` just before the
//! eventfd `write()`, `wait_done` just after `read()` returns, `post` just
//! before the flag is set, `poll_done` once the flag is consumed, `lock`
//! once the mutex is held, `unlock` just before it is released, `loop_end`
//! after each iteration. A `cond_wait` writes `unlock` before the wait and
//! `lock`, `wait_done` after it; a cond signal and a barrier's releasing
//! arrival write `signal` before the call, a released arrival `wait_done`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use schedlab_scenario::{grid_timer_step, ObjId, ObjKind, ObjRef, Op, Repeat, Scenario, ThreadSpec};
use schedlab_trace::{ftrace::user_marker_text, TaskTable, UserOp};
use serde::{Deserialize, Serialize};

use crate::calibrate::{spin, Calibration};
use crate::sys::{
    now_ns, realtime_ns, sched_setattr, set_affinity, sleep_until, EventFd, Futex, LockOutcome, PthreadCond,
    PthreadMutex, SchedAttr, WaitOutcome,
};

/// A workload object, shared by the threads.
pub enum Obj {
    Eventfd(EventFd),
    Futex(Futex),
    /// 0 = not posted; else the CLOCK_MONOTONIC ns of the post.
    Flag(AtomicU64),
    Mutex(PthreadMutex),
    /// schbench's `xlist`: futexes to post, pushed by `list_add`, taken by `wake_list`.
    WakeList(SpinList),
    /// schbench's `per_cpu_locks`: one spin-trylock per possible CPU (1 = held).
    CpuLocks(Vec<AtomicBool>),
    Cond(PthreadCond),
    /// rt-app's barrier: a mutex, a condition and the count of arrivals
    /// still awaited before the next one releases everyone (held under the mutex).
    Barrier {
        mutex: PthreadMutex,
        cond: PthreadCond,
        waiting: AtomicU64,
    },
    /// A timer grid's previous boundary (`None` before its first use).
    Timer(std::sync::Mutex<Option<u64>>),
}

/// A vector behind a spinlock: held for a push or a swap, so contention
/// never sleeps (schbench's list is a lock-free CAS stack; neither makes a
/// syscall or a scheduler event).
#[derive(Default)]
pub struct SpinList {
    locked: AtomicBool,
    items: std::cell::UnsafeCell<Vec<ObjId>>,
}

// SAFETY: `items` is only touched while `locked` is held.
unsafe impl Sync for SpinList {}

impl SpinList {
    fn with<R>(&self, f: impl FnOnce(&mut Vec<ObjId>) -> R) -> R {
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            std::hint::spin_loop();
        }
        // SAFETY: we hold the lock.
        let r = f(unsafe { &mut *self.items.get() });
        self.locked.store(false, Ordering::Release);
        r
    }
}

/// The `trace_marker` file and the marker texts, built once so the hot path
/// only calls `write()`.
pub struct Markers {
    file: File,
    /// Per object: signal, wait_done, post, poll_done, lock, unlock.
    texts: Vec<[String; 6]>,
    table: TaskTable,
    pub failed: AtomicU64,
}

impl Markers {
    pub fn new(file: File, scenario: &Scenario) -> Markers {
        let table =
            TaskTable { objects: scenario.objects.iter().map(|o| o.name.clone()).collect(), ..Default::default() };
        let texts = (0..scenario.objects.len() as u32)
            .map(|obj| {
                [
                    UserOp::Signal { obj },
                    UserOp::WaitDone { obj },
                    UserOp::Post { obj },
                    UserOp::PollDone { obj },
                    UserOp::Lock { obj },
                    UserOp::Unlock { obj },
                ]
                .map(|op| user_marker_text(&table, &op))
            })
            .collect();
        Markers { file, texts, table, failed: AtomicU64::new(0) }
    }

    /// One `write()` to trace_marker (atomic: one event per call).
    pub fn write(&self, text: &str) {
        // SAFETY: writes `text`'s bytes from a valid buffer to our open fd.
        let r = unsafe { libc::write(self.file.as_raw_fd(), text.as_ptr() as *const libc::c_void, text.len()) };
        if r < 0 {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn op(&self, obj: ObjId, which: usize) {
        self.write(&self.texts[obj as usize][which]);
    }

    fn loop_end(&self, n: u64) {
        self.write(&user_marker_text(&self.table, &UserOp::LoopEnd { n: n as u32 }));
    }
}

const SIGNAL: usize = 0;
const WAIT_DONE: usize = 1;
const POST: usize = 2;
const POLL_DONE: usize = 3;
const LOCK: usize = 4;
const UNLOCK: usize = 5;

/// Everything the workload threads share.
pub struct Shared {
    pub objs: Vec<Obj>,
    pub markers: Markers,
    pub calibration: Calibration,
    /// Set by the worker's main thread at the end of the run.
    pub stop: AtomicBool,
    /// CLOCK_MONOTONIC ns at which every thread stops (u64::MAX until the start).
    pub stop_at: AtomicU64,
    /// Where a `setaffinity` goes: the plan's scenario → host CPU map, and
    /// the host CPUs for a mask of every scenario CPU.
    cpu_map: std::collections::BTreeMap<usize, usize>,
    host_cpus: Vec<usize>,
    topology_cpus: schedlab_scenario::CpuSet,
    /// The templates `fork` creates threads of, and those threads.
    pub forks: crate::fork::ForkHub,
    /// Where a `cgroup` move writes the thread's tid
    /// ([`crate::cgroup::Layout::move_files`]; empty without cgroups).
    pub cgroup_moves: Vec<Vec<std::path::PathBuf>>,
}

impl Shared {
    pub fn new(
        scenario: &Scenario,
        plan: &crate::plan::Plan,
        markers: Markers,
        calibration: Calibration,
    ) -> std::io::Result<Shared> {
        let objs = scenario
            .objects
            .iter()
            .map(|o| {
                Ok(match o.kind {
                    ObjKind::Eventfd => Obj::Eventfd(EventFd::new()?),
                    ObjKind::Futex => Obj::Futex(Futex::default()),
                    ObjKind::Flag => Obj::Flag(AtomicU64::new(0)),
                    ObjKind::Mutex { pi } => Obj::Mutex(PthreadMutex::new(pi)?),
                    ObjKind::WakeList => Obj::WakeList(SpinList::default()),
                    ObjKind::CpuLocks => Obj::CpuLocks((0..possible_cpus()).map(|_| AtomicBool::new(false)).collect()),
                    ObjKind::Cond => Obj::Cond(PthreadCond::new()?),
                    ObjKind::Barrier { users } => Obj::Barrier {
                        mutex: PthreadMutex::new(false)?,
                        cond: PthreadCond::new()?,
                        waiting: AtomicU64::new(u64::from(users.saturating_sub(1))),
                    },
                    ObjKind::Timer => Obj::Timer(std::sync::Mutex::new(None)),
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Shared {
            objs,
            markers,
            calibration,
            stop: AtomicBool::new(false),
            stop_at: AtomicU64::new(u64::MAX),
            cpu_map: plan.cpu_map.clone(),
            host_cpus: plan.host_cpus.clone(),
            topology_cpus: scenario.topology.all_cpus(),
            forks: crate::fork::ForkHub::new(scenario, plan),
            cgroup_moves: Vec::new(),
        })
    }

    /// Whether the run is over for the threads (their deadline).
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || now_ns() >= self.stop_at.load(Ordering::Relaxed)
    }

    /// Wake every thread blocked on an eventfd, a condition or a barrier so
    /// it sees `stop` (a wait also gives up at its deadline on its own).
    pub fn kick_waiters(&self) {
        for o in &self.objs {
            match o {
                Obj::Eventfd(e) => {
                    let _ = e.signal(1);
                }
                Obj::Futex(f) => f.wake_all(),
                Obj::Cond(c) | Obj::Barrier { cond: c, .. } => {
                    let _ = c.broadcast();
                }
                _ => {}
            }
        }
    }

    /// The host CPUs of a scenario mask, as the plan maps them.
    fn host_mask(&self, cpus: &schedlab_scenario::CpuSet) -> Vec<usize> {
        if *cpus == self.topology_cpus {
            return self.host_cpus.clone();
        }
        let mut out: Vec<usize> = cpus.iter().map(|c| self.cpu_map.get(&c).copied().unwrap_or(c)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// CLOCK_REALTIME deadline for a lock: the stop time plus a grace.
    fn lock_deadline(&self) -> u64 {
        let left = self.stop_at.load(Ordering::Relaxed).saturating_sub(now_ns());
        realtime_ns().saturating_add(left).saturating_add(WAIT_GRACE_NS)
    }

    /// CLOCK_MONOTONIC deadline for a condition wait.
    fn wait_deadline(&self) -> u64 {
        self.stop_at.load(Ordering::Relaxed).saturating_add(WAIT_GRACE_NS)
    }
}

/// CPU ids `sched_getcpu()` can return: every configured CPU.
fn possible_cpus() -> usize {
    // SAFETY: plain libc query.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    usize::try_from(n).unwrap_or(1).max(1)
}

fn current_cpu() -> usize {
    // SAFETY: plain libc call (vDSO / rseq).
    usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0)
}

/// How a thread's program ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum End {
    /// Its `loop` count ran out.
    Finished,
    /// The run's duration was over.
    Stopped,
    /// Something failed (an eventfd read, a mutex): the message says what.
    Failed(String),
}

/// What one thread did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub iterations: u64,
    pub end: End,
    /// The thread's CPU time over its program (`CLOCK_THREAD_CPUTIME_ID`:
    /// the kernel's `sum_exec_runtime`, the time CFS bandwidth charges,
    /// without the steal and IRQ time a trace's switch-to-switch runtime
    /// includes where the kernel accounts them apart).
    #[serde(default)]
    pub cpu_ns: u64,
}

/// Run-length of one busy-loop chunk between deadline checks.
const CHUNK_NS: u64 = 20_000;
/// How long past the stop time a blocked lock or wait gives up on its own.
const WAIT_GRACE_NS: u64 = 100_000_000;

/// A thread's own state while its program runs.
struct Local {
    /// Mutexes held, in locking order (released if the run stops midway).
    held: Vec<ObjId>,
    polled: Option<usize>,
    timer_next: Option<u64>,
    cpu_lock: Option<(ObjId, usize)>,
    /// When the program began (a timer grid's origin).
    started_at: u64,
    forks: crate::fork::LocalForks,
}

/// Execute `spec`'s program until it ends or the run stops.
pub fn run_program(sh: &Shared, spec: &ThreadSpec) -> Outcome {
    let cpu_at_start = crate::sys::thread_cpu_ns();
    let mut local = Local {
        held: Vec::new(),
        polled: None,
        timer_next: None,
        cpu_lock: None,
        started_at: now_ns(),
        forks: Default::default(),
    };
    let mut iterations = 0u64;
    let end = 'run: loop {
        for op in &spec.program.ops {
            if sh.should_stop() {
                break 'run End::Stopped;
            }
            let bound = local.polled;
            let resolve = |r: &ObjRef| -> Result<ObjId, End> {
                match r {
                    ObjRef::Fixed(id) => Ok(*id),
                    ObjRef::ByPolled(v) => bound.and_then(|k| v.get(k).copied()).ok_or_else(|| {
                        End::Failed(format!("{}: a `{{*}}` operand before any poll matched", spec.name))
                    }),
                }
            };
            match exec(sh, op, &resolve, &mut local) {
                Ok(()) => {}
                Err(e) => break 'run e,
            }
        }
        sh.markers.loop_end(iterations);
        iterations += 1;
        if let Repeat::Times(k) = spec.program.repeat {
            if iterations >= k {
                break End::Finished;
            }
        }
    };
    // A thread stopped mid-iteration must not leave others blocked on its mutexes.
    for id in local.held.into_iter().rev() {
        if let Obj::Mutex(m) = &sh.objs[id as usize] {
            let _ = m.unlock();
        }
    }
    if let Some((id, cpu)) = local.cpu_lock {
        if let Obj::CpuLocks(l) = &sh.objs[id as usize] {
            l[cpu].store(false, Ordering::Release);
        }
    }
    Outcome { iterations, end, cpu_ns: crate::sys::thread_cpu_ns().saturating_sub(cpu_at_start) }
}

/// An `fpost` as the simulator makes it: the `signal` marker, then the post.
fn fpost(sh: &Shared, id: ObjId) -> Result<(), End> {
    let Obj::Futex(f) = &sh.objs[id as usize] else { unreachable!("validated kind") };
    sh.markers.op(id, SIGNAL);
    f.post().map_err(|e| End::Failed(format!("futex wake: {e}")))
}

fn exec(sh: &Shared, op: &Op, resolve: &dyn Fn(&ObjRef) -> Result<ObjId, End>, local: &mut Local) -> Result<(), End> {
    let Local { held, polled, timer_next, cpu_lock, started_at, forks } = local;
    let failed = |what: &str, e: std::io::Error| End::Failed(format!("{what}: {e}"));
    match op {
        &Op::Run { ns } => {
            let mut left = sh.calibration.loops_for(ns);
            let chunk = sh.calibration.loops_for(CHUNK_NS).max(1);
            while left > 0 {
                let n = left.min(chunk);
                spin(n);
                left -= n;
                if left > 0 && sh.should_stop() {
                    return Err(End::Stopped);
                }
            }
        }
        &Op::Sleep { ns } => sleep_until(now_ns().saturating_add(ns).min(sh.stop_at.load(Ordering::Relaxed))),
        &Op::Timer { period_ns } => {
            let next = schedlab_scenario::next_timer_boundary(*timer_next, now_ns(), period_ns);
            *timer_next = Some(next);
            sleep_until(next.min(sh.stop_at.load(Ordering::Relaxed)));
        }
        Op::Wait { efd } => {
            let id = resolve(efd)?;
            let Obj::Eventfd(e) = &sh.objs[id as usize] else { unreachable!("validated kind") };
            e.wait().map_err(|e| failed("eventfd read", e))?;
            if sh.stop.load(Ordering::Relaxed) {
                return Err(End::Stopped);
            }
            sh.markers.op(id, WAIT_DONE);
        }
        &Op::Signal { ref efd, count } => {
            let id = resolve(efd)?;
            let Obj::Eventfd(e) = &sh.objs[id as usize] else { unreachable!("validated kind") };
            sh.markers.op(id, SIGNAL);
            e.signal(count).map_err(|e| failed("eventfd write", e))?;
        }
        Op::Post { flag } => {
            let id = resolve(flag)?;
            let Obj::Flag(f) = &sh.objs[id as usize] else { unreachable!("validated kind") };
            sh.markers.op(id, POST);
            f.store(now_ns().max(1), Ordering::Release);
        }
        &Op::Poll { ref flags, after_ns } => loop {
            // The earliest-posted flag, as the simulator picks it.
            let best = flags
                .iter()
                .enumerate()
                .filter_map(|(k, &f)| match &sh.objs[f as usize] {
                    Obj::Flag(a) => Some((a.load(Ordering::Acquire), k, f)).filter(|p| p.0 != 0),
                    _ => None,
                })
                .min();
            if let Some((t, k, f)) = best {
                if now_ns() >= t.saturating_add(after_ns) {
                    let Obj::Flag(a) = &sh.objs[f as usize] else { unreachable!() };
                    if a.compare_exchange(t, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                        *polled = Some(k);
                        sh.markers.op(f, POLL_DONE);
                        break;
                    }
                }
            }
            if sh.should_stop() {
                return Err(End::Stopped);
            }
            std::hint::spin_loop();
        },
        Op::Lock { mutex } => {
            let id = resolve(mutex)?;
            let Obj::Mutex(m) = &sh.objs[id as usize] else { unreachable!("validated kind") };
            // pthread_mutex_timedlock only knows CLOCK_REALTIME: convert the stop time.
            match m.lock_until(sh.lock_deadline()) {
                Ok(LockOutcome::Locked) => {
                    held.push(id);
                    sh.markers.op(id, LOCK);
                }
                Ok(LockOutcome::TimedOut) => return Err(End::Stopped),
                Err(e) => return Err(failed("pthread_mutex_timedlock", e)),
            }
        }
        Op::Unlock { mutex } => {
            let id = resolve(mutex)?;
            let Obj::Mutex(m) = &sh.objs[id as usize] else { unreachable!("validated kind") };
            sh.markers.op(id, UNLOCK);
            held.retain(|&h| h != id);
            m.unlock().map_err(|e| failed("pthread_mutex_unlock", e))?;
        }
        Op::ListAdd { list, futex } => {
            let (list, futex) = (resolve(list)?, resolve(futex)?);
            let Obj::WakeList(l) = &sh.objs[list as usize] else { unreachable!("validated kind") };
            l.with(|v| v.push(futex));
        }
        Op::WakeList { list } => {
            // As the simulator: take the list (newest first), one `post`
            // marker for the batch, then an fpost of each entry.
            let list = resolve(list)?;
            let Obj::WakeList(l) = &sh.objs[list as usize] else { unreachable!("validated kind") };
            let mut batch = l.with(std::mem::take);
            batch.reverse();
            sh.markers.op(list, POST);
            for futex in batch {
                fpost(sh, futex)?;
            }
        }
        Op::FutexPost { futex } => fpost(sh, resolve(futex)?)?,
        Op::FutexWait { futex } => {
            let id = resolve(futex)?;
            let Obj::Futex(f) = &sh.objs[id as usize] else { unreachable!("validated kind") };
            f.wait(|| sh.stop.load(Ordering::Relaxed)).map_err(|e| failed("futex wait", e))?;
            if sh.stop.load(Ordering::Relaxed) {
                return Err(End::Stopped);
            }
            sh.markers.op(id, WAIT_DONE);
        }
        Op::FutexReset { futex } => {
            let Obj::Futex(f) = &sh.objs[resolve(futex)? as usize] else { unreachable!("validated kind") };
            f.reset();
        }
        Op::Yield => {
            // SAFETY: plain syscall.
            unsafe { libc::sched_yield() };
        }
        &Op::LockCpu { locks } => {
            let Obj::CpuLocks(l) = &sh.objs[locks as usize] else { unreachable!("validated kind") };
            // schbench's lock_this_cpu(): spin on this CPU's lock, then make
            // sure the thread did not migrate while it spun.
            loop {
                let cpu = current_cpu().min(l.len() - 1);
                while l[cpu].compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
                    if sh.should_stop() {
                        return Err(End::Stopped);
                    }
                    std::hint::spin_loop();
                }
                if current_cpu() == cpu {
                    *cpu_lock = Some((locks, cpu));
                    break;
                }
                l[cpu].store(false, Ordering::Release);
            }
        }
        &Op::UnlockCpu { locks } => {
            if let (Some((id, cpu)), Obj::CpuLocks(l)) = (cpu_lock.take(), &sh.objs[locks as usize]) {
                debug_assert_eq!(id, locks);
                l[cpu].store(false, Ordering::Release);
            }
        }
        &Op::RunWall { ns } => {
            let end = now_ns().saturating_add(ns);
            let chunk = sh.calibration.loops_for(CHUNK_NS.min(ns)).max(1);
            while now_ns() < end {
                spin(chunk);
                if sh.should_stop() {
                    return Err(End::Stopped);
                }
            }
        }
        &Op::GridTimer { timer, period_ns, mode } => {
            let Obj::Timer(grid) = &sh.objs[timer as usize] else { unreachable!("validated kind") };
            let sleep = {
                let mut prev = grid.lock().unwrap_or_else(|p| p.into_inner());
                let (sleep, next_prev) = grid_timer_step(prev.unwrap_or(*started_at), now_ns(), period_ns, mode);
                *prev = Some(next_prev);
                sleep
            };
            if let Some(at) = sleep {
                sleep_until(at.min(sh.stop_at.load(Ordering::Relaxed)));
            }
        }
        Op::CondWait { cond, mutex } => {
            let (c, m) = (resolve(cond)?, resolve(mutex)?);
            let (Obj::Cond(cv), Obj::Mutex(mx)) = (&sh.objs[c as usize], &sh.objs[m as usize]) else {
                unreachable!("validated kind")
            };
            if !held.contains(&m) {
                return Err(End::Failed(format!(
                    "cond_wait without holding mutex {}",
                    sh.markers.table.objects[m as usize]
                )));
            }
            sh.markers.op(m, UNLOCK);
            let r = cv.wait_until(mx, sh.wait_deadline()).map_err(|e| failed("pthread_cond_timedwait", e))?;
            if r == WaitOutcome::TimedOut || sh.stop.load(Ordering::Relaxed) {
                return Err(End::Stopped);
            }
            sh.markers.op(m, LOCK);
            sh.markers.op(c, WAIT_DONE);
        }
        Op::CondSignal { cond } | Op::CondBroadcast { cond } => {
            let c = resolve(cond)?;
            let Obj::Cond(cv) = &sh.objs[c as usize] else { unreachable!("validated kind") };
            sh.markers.op(c, SIGNAL);
            if matches!(op, Op::CondBroadcast { .. }) {
                cv.broadcast().map_err(|e| failed("pthread_cond_broadcast", e))?;
            } else {
                cv.signal().map_err(|e| failed("pthread_cond_signal", e))?;
            }
        }
        &Op::Barrier { barrier } => {
            let Obj::Barrier { mutex, cond, waiting } = &sh.objs[barrier as usize] else {
                unreachable!("validated kind")
            };
            // rt-app's barrier event, under its mutex.
            match mutex.lock_until(sh.lock_deadline()).map_err(|e| failed("pthread_mutex_timedlock", e))? {
                LockOutcome::Locked => {}
                LockOutcome::TimedOut => return Err(End::Stopped),
            }
            let result = if waiting.load(Ordering::Relaxed) == 0 {
                sh.markers.op(barrier, SIGNAL);
                cond.broadcast().map_err(|e| failed("pthread_cond_broadcast", e))
            } else {
                waiting.fetch_sub(1, Ordering::Relaxed);
                let r = cond.wait_until(mutex, sh.wait_deadline());
                waiting.fetch_add(1, Ordering::Relaxed);
                match r {
                    Ok(WaitOutcome::Woken) if !sh.stop.load(Ordering::Relaxed) => {
                        sh.markers.op(barrier, WAIT_DONE);
                        Ok(())
                    }
                    Ok(_) => Err(End::Stopped),
                    Err(e) => Err(failed("pthread_cond_timedwait", e)),
                }
            };
            let _ = mutex.unlock();
            result?;
        }
        Op::SetAffinity { cpus } => {
            let cpus = sh.host_mask(cpus);
            set_affinity(&cpus).map_err(|e| failed(&format!("sched_setaffinity({cpus:?})"), e))?;
        }
        &Op::SetScheduler { policy, nice, rt_priority } => {
            let attr = SchedAttr {
                policy: crate::worker::policy_number(policy),
                nice: if policy.is_rt() { 0 } else { nice },
                priority: if policy.is_rt() { rt_priority } else { 0 },
                ..Default::default()
            };
            sched_setattr(0, &attr).map_err(|e| failed(&format!("sched_setattr({})", policy.name()), e))?;
        }
        &Op::SetPriority { nice } => {
            // PRIO_PROCESS with a thread id: Linux applies it to that thread.
            // SAFETY: plain syscalls on the calling thread.
            let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, crate::sys::gettid() as libc::id_t, nice) };
            if r != 0 {
                return Err(failed(&format!("setpriority({nice})"), std::io::Error::last_os_error()));
            }
        }
        &Op::SetCgroup { cgroup } => {
            let files = sh.cgroup_moves.get(cgroup.map_or(0, |k| k + 1)).map(Vec::as_slice).unwrap_or_default();
            crate::cgroup::attach(files, crate::sys::gettid())
                .map_err(|e| failed("a write to cgroup.threads/tasks", std::io::Error::other(e.to_string())))?;
        }
        &Op::Fork { template } => crate::fork::fork(sh, template as usize, op as *const Op as usize, forks)?,
    }
    Ok(())
}
