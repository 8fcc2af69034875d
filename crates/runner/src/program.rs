//! One scenario thread's program on a real thread, op for op as the
//! simulator's workload interpreter runs it, writing the same
//! `trace_marker` lines at the same points: `signal` just before the
//! eventfd `write()`, `wait_done` just after `read()` returns, `post` just
//! before the flag is set, `poll_done` once the flag is consumed, `lock`
//! once the mutex is held, `unlock` just before it is released, `loop_end`
//! after each iteration.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use schedlab_scenario::{ObjId, ObjKind, ObjRef, Op, Repeat, Scenario, ThreadSpec};
use schedlab_trace::{ftrace::user_marker_text, TaskTable, UserOp};
use serde::{Deserialize, Serialize};

use crate::calibrate::{spin, Calibration};
use crate::sys::{now_ns, realtime_ns, sleep_until, EventFd, LockOutcome, PthreadMutex};

/// A workload object, shared by the threads.
pub enum Obj {
    Eventfd(EventFd),
    /// 0 = not posted; else the CLOCK_MONOTONIC ns of the post.
    Flag(AtomicU64),
    Mutex(PthreadMutex),
    /// schbench's `xlist`: eventfds to post, pushed by `list_add`, taken by `wake_list`.
    WakeList(SpinList),
    /// schbench's `per_cpu_locks`: one spin-trylock per possible CPU (1 = held).
    CpuLocks(Vec<AtomicBool>),
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
            TaskTable { tasks: Default::default(), objects: scenario.objects.iter().map(|o| o.name.clone()).collect() };
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
}

impl Shared {
    pub fn new(scenario: &Scenario, markers: Markers, calibration: Calibration) -> std::io::Result<Shared> {
        let objs = scenario
            .objects
            .iter()
            .map(|o| {
                Ok(match o.kind {
                    ObjKind::Eventfd => Obj::Eventfd(EventFd::new()?),
                    ObjKind::Flag => Obj::Flag(AtomicU64::new(0)),
                    ObjKind::Mutex { pi } => Obj::Mutex(PthreadMutex::new(pi)?),
                    ObjKind::WakeList => Obj::WakeList(SpinList::default()),
                    ObjKind::CpuLocks => Obj::CpuLocks((0..possible_cpus()).map(|_| AtomicBool::new(false)).collect()),
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Shared { objs, markers, calibration, stop: AtomicBool::new(false), stop_at: AtomicU64::new(u64::MAX) })
    }

    /// Whether the run is over for the threads (their deadline).
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || now_ns() >= self.stop_at.load(Ordering::Relaxed)
    }

    /// Wake every thread blocked on an eventfd so it sees `stop`.
    pub fn kick_eventfds(&self) {
        for o in &self.objs {
            if let Obj::Eventfd(e) = o {
                let _ = e.signal(1);
            }
        }
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
}

/// Run-length of one busy-loop chunk between deadline checks.
const CHUNK_NS: u64 = 20_000;

/// Execute `spec`'s program until it ends or the run stops.
pub fn run_program(sh: &Shared, spec: &ThreadSpec) -> Outcome {
    let mut held: Vec<ObjId> = Vec::new();
    let mut polled: Option<usize> = None;
    let mut timer_next: Option<u64> = None;
    let mut cpu_lock: Option<(ObjId, usize)> = None;
    let mut iterations = 0u64;
    let end = 'run: loop {
        for op in &spec.program.ops {
            if sh.should_stop() {
                break 'run End::Stopped;
            }
            let bound = polled;
            let resolve = |r: &ObjRef| -> Result<ObjId, End> {
                match r {
                    ObjRef::Fixed(id) => Ok(*id),
                    ObjRef::ByPolled(v) => bound.and_then(|k| v.get(k).copied()).ok_or_else(|| {
                        End::Failed(format!("{}: a `{{*}}` operand before any poll matched", spec.name))
                    }),
                }
            };
            match exec(sh, op, &resolve, &mut held, &mut polled, &mut timer_next, &mut cpu_lock) {
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
    for id in held.into_iter().rev() {
        if let Obj::Mutex(m) = &sh.objs[id as usize] {
            let _ = m.unlock();
        }
    }
    if let Some((id, cpu)) = cpu_lock {
        if let Obj::CpuLocks(l) = &sh.objs[id as usize] {
            l[cpu].store(false, Ordering::Release);
        }
    }
    Outcome { iterations, end }
}

fn exec(
    sh: &Shared,
    op: &Op,
    resolve: &dyn Fn(&ObjRef) -> Result<ObjId, End>,
    held: &mut Vec<ObjId>,
    polled: &mut Option<usize>,
    timer_next: &mut Option<u64>,
    cpu_lock: &mut Option<(ObjId, usize)>,
) -> Result<(), End> {
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
            let left = sh.stop_at.load(Ordering::Relaxed).saturating_sub(now_ns());
            match m.lock_until(realtime_ns().saturating_add(left).saturating_add(100_000_000)) {
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
        Op::ListAdd { list, efd } => {
            let (list, efd) = (resolve(list)?, resolve(efd)?);
            let Obj::WakeList(l) = &sh.objs[list as usize] else { unreachable!("validated kind") };
            l.with(|v| v.push(efd));
        }
        &Op::WakeList { ref list, cost_ns } => {
            // As the simulator: take the list (newest first), one `post`
            // marker for the batch, then per entry the futex cost and a post.
            let list = resolve(list)?;
            let Obj::WakeList(l) = &sh.objs[list as usize] else { unreachable!("validated kind") };
            let mut batch = l.with(std::mem::take);
            batch.reverse();
            sh.markers.op(list, POST);
            for efd in batch {
                spin(sh.calibration.loops_for(cost_ns));
                let Obj::Eventfd(e) = &sh.objs[efd as usize] else { unreachable!("validated kind") };
                sh.markers.op(efd, SIGNAL);
                e.signal(1).map_err(|e| failed("eventfd write", e))?;
            }
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
    }
    Ok(())
}
