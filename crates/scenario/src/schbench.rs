//! schbench as a built-in workload: a `[schbench]` table, parameterised like
//! schbench's command line, expands into message threads and workers.
//!
//! ```toml
//! [schbench]
//! message_threads = 4     # -m (default 1)
//! workers = 128           # -t, per message thread (default ceil(CPUs / m))
//! runtime = "60s"         # -r (default 30s); the run's duration unless `duration` is set
//! sleep = "100us"         # -s, the usleep() per request (default 100us)
//! timer_slack = "50us"    # the sleeping thread's timerslack (SCHED_OTHER default 50us)
//! operations = 0          # -n, matrix multiplies per request (default 5)
//! cache_footprint = 256   # -F, KiB of the three matrices (default 256)
//! op_time = "3.4ms"       # CPU time of one multiply (default: derived from -F, see below)
//! no_lock = true          # -L: no per-CPU lock around the work (default false: locked, as schbench)
//! message_cpus = "auto"   # -M: "auto" or a cpulist
//! worker_cpus = "4-223"   # -W: "auto" or a cpulist
//! auto_pin = "main"       # what `auto` does: "main" (main@24e32b8) or "fixed" (0f4f67b)
//! requests_per_sec = 0    # -R; only 0 (saturation mode) is modelled
//! ```
//!
//! What it becomes (schbench's saturation mode, `-R 0`):
//! * message thread `m` (`sb-msg-<m>`) loops `run_msg_thread()`: a plain
//!   store of 0 to its futex `schbench-mf<m>` ([`Op::FutexReset`]:
//!   `td->futex = FUTEX_BLOCKED`), `xlist_wake_all()` ([`Op::WakeList`] on
//!   the list `schbench-list<m>`: one shared timestamp, then an `fpost` of
//!   every listed worker's futex, newest first), then `fwait()` on its own
//!   futex ([`Op::FutexWait`]);
//! * worker `i` of message thread `m` (`sb-w<m>-<i>`) loops
//!   `msg_and_wait()` then one request: [`Op::ListAdd`] of its futex
//!   `schbench-wf<m>.<i>` to the list, `fpost()` of the message thread's
//!   futex ([`Op::FutexPost`]: a syscall only when the message thread's
//!   word was 0), `fwait()` on its own ([`Op::FutexWait`]), then the
//!   request — [`Op::Sleep`] of `sleep` by a thread whose timer slack is
//!   `timer_slack` and, with `operations > 0`, [`Op::Run`] of
//!   `operations × op_time`; without `no_lock` the run sits between
//!   [`Op::LockCpu`] and [`Op::UnlockCpu`] of the per-CPU lock array
//!   `schbench-cpulocks` (schbench's `do_work()`: a worker spins on the lock
//!   of its CPU, so one preempted while holding it makes the next worker on
//!   that CPU spin). The end of a program iteration (`loop_end`) is
//!   `loop_count++`.
//!
//! The futexes are schbench's own binary semaphores ([`ObjKind::Futex`]):
//! `fpost` is a compare-and-swap from 0 to 1 and a `FUTEX_WAKE` only when
//! it succeeded, `fwait` a compare-and-swap from 1 to 0 and a `FUTEX_WAIT`
//! only when it failed. So a message thread that finds a post waiting never
//! sleeps, and the `FUTEX_WAKE` of a worker that has not reached its
//! `FUTEX_WAIT` yet wakes nobody. What each syscall costs, and what the
//! wakeup path it takes costs the waker, come from the topology's
//! `[costs]` and `[costs.kernel]` (the model's `futex_wait()` /
//! `futex_wake()` and `try_to_wake_up()`), not from this table.
//!
//! A worker's own `td->futex = FUTEX_BLOCKED` before its list add is left
//! out: its last `fwait` left the word at 0 and only its message thread,
//! after taking it off the list, posts it.
//!
//! The usleep's hrtimer ranges over [`sleep`, `sleep + timer_slack`]: it
//! ends at the hard end unless another hrtimer interrupt on its CPU (another
//! worker's, the tick) falls inside the range first (the simulator's
//! `hrtimer` module). Simplified, and said so: the list's
//! compare-and-swaps cost no CPU time; `op_time` defaults to 3 ns per
//! multiply-add of the `side³` naive multiply (`side = sqrt(F·1024/3/8)`),
//! which matches the README's calibration example (`-F 256 -n 5`: ~16.9 ms
//! per request) — calibrate it for another machine.

use schedlab_topology::{parse_cpulist, CpuSet, InputError, Topology};
use serde::Deserialize;
use toml::{Spanned, Value};

use crate::values::{self, Ctx, Zero};
use crate::{ObjId, ObjKind, ObjRef, Op, Policy, Program, Repeat, ThreadSpec};

/// The `[schbench]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSchbench {
    pub message_threads: Option<Spanned<i64>>,
    pub workers: Option<Spanned<i64>>,
    pub runtime: Option<Spanned<Value>>,
    pub sleep: Option<Spanned<Value>>,
    pub timer_slack: Option<Spanned<Value>>,
    pub operations: Option<Spanned<i64>>,
    pub cache_footprint: Option<Spanned<i64>>,
    pub op_time: Option<Spanned<Value>>,
    pub no_lock: Option<Spanned<bool>>,
    pub message_cpus: Option<Spanned<String>>,
    pub worker_cpus: Option<Spanned<String>>,
    pub auto_pin: Option<Spanned<String>>,
    pub requests_per_sec: Option<Spanned<i64>>,
    pub wake_cost: Option<Spanned<Value>>,
}

/// Most message threads / workers per message thread a table may ask for.
pub const MAX_MESSAGE_THREADS: i64 = 64;
pub const MAX_WORKERS: i64 = 4096;
/// Nanoseconds per multiply-add of `do_some_math()` (see the module docs).
pub const NS_PER_MULTIPLY_ADD: f64 = 3.0;
/// The longest `sleep` or `timer_slack` accepted.
const MAX_NAP_NS: u64 = 10_000_000_000;
/// The most CPU work one request may carry.
const MAX_REQUEST_NS: u64 = 10_000_000_000;

/// An expanded `[schbench]` table: its parameters and where its threads
/// are in `Scenario::threads` (the analysis finds them by comm prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schbench {
    pub message_threads: u32,
    pub workers_per_message_thread: u32,
    /// `-r`: what `average rps` divides by.
    pub runtime_ns: u64,
    pub sleep_ns: u64,
    pub operations: u32,
    pub op_ns: u64,
    /// CPU each message thread is pinned to (`-M`), if pinned.
    pub message_cpus: Vec<Option<usize>>,
    /// Every worker's affinity.
    pub worker_cpus: CpuSet,
    /// Index in `Scenario::threads` of the first message thread; the `m`
    /// message threads follow, then `m × workers` workers, message thread
    /// by message thread.
    pub first_thread: usize,
}

impl Schbench {
    pub fn total_workers(&self) -> usize {
        self.message_threads as usize * self.workers_per_message_thread as usize
    }
    /// Index in `Scenario::threads` of worker `i` of message thread `m`.
    pub fn worker_thread(&self, m: usize, i: usize) -> usize {
        self.first_thread + self.message_threads as usize + m * self.workers_per_message_thread as usize + i
    }
    /// The command line this table stands for.
    pub fn command_line(&self) -> String {
        let mut s = format!(
            "schbench -m {} -t {} -r {} -s {} -n {}",
            self.message_threads,
            self.workers_per_message_thread,
            fmt_secs(self.runtime_ns),
            self.sleep_ns / 1000,
            self.operations
        );
        // Always -L: the per-CPU lock is refused at parse time.
        s.push_str(" -L");
        s
    }
}

fn fmt_secs(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000_000) {
        (ns / 1_000_000_000).to_string()
    } else {
        format!("{:.3}", ns as f64 / 1e9)
    }
}

/// Object names the expansion uses (the analysis finds them by prefix).
pub const LIST_PREFIX: &str = "schbench-list";
/// The per-CPU lock array of schbench without `-L`.
pub const CPU_LOCKS: &str = "schbench-cpulocks";
pub const MSG_FUTEX_PREFIX: &str = "schbench-mf";
pub const WORKER_FUTEX_PREFIX: &str = "schbench-wf";

/// Expand the table into threads. `intern(name, kind)` creates or finds an object.
pub(crate) fn expand(
    ctx: Ctx,
    t: &Spanned<RawSchbench>,
    topo: &Topology,
    first_thread: usize,
    intern: &mut dyn FnMut(&str, ObjKind) -> Result<ObjId, InputError>,
) -> Result<(Schbench, Vec<ThreadSpec>), InputError> {
    let raw = t.get_ref();
    let line = ctx.line_of(t.span().start);
    let nr_cpus = topo.nr_cpus() as i64;
    let m = match &raw.message_threads {
        Some(v) => values::int_in(ctx, v, "message_threads", 1, MAX_MESSAGE_THREADS, "schbench -m")?,
        None => 1,
    };
    let workers = match &raw.workers {
        Some(v) => values::int_in(ctx, v, "workers", 1, MAX_WORKERS, "schbench -t, per message thread")?,
        None => (nr_cpus + m - 1) / m,
    };
    let own = (m * (workers + 1)) as usize;
    if first_thread + own > crate::MAX_THREADS {
        return Err(ctx.err(
            t,
            format!(
                "[schbench] starts {m} x ({workers} + 1) = {own} threads{}, more than the {} a scenario may start \
                 (a limit of schedlab's, see MAX_THREADS): lower `workers` or `message_threads`",
                if first_thread > 0 { format!(" beside {first_thread} from [[thread]] tables") } else { String::new() },
                crate::MAX_THREADS
            ),
        ));
    }
    let runtime_ns = match &raw.runtime {
        // A bare number is refused there, as schbench's -r counts seconds.
        Some(v) => values::duration(ctx, v, "runtime", Zero::Refused)?,
        None => 30_000_000_000,
    };
    let sleep_ns = match &raw.sleep {
        Some(v) => values::duration(ctx, v, "sleep", Zero::Allowed)?,
        None => 100_000,
    };
    let timer_slack_ns = match &raw.timer_slack {
        Some(v) => values::duration(ctx, v, "timer_slack", Zero::Allowed)?,
        None => 50_000,
    };
    let operations = match &raw.operations {
        Some(v) => values::int_in(ctx, v, "operations", 0, 1_000_000, "schbench -n")?,
        None => 5,
    };
    let footprint_kb = match &raw.cache_footprint {
        Some(v) => values::int_in(ctx, v, "cache_footprint", 1, 1 << 30, "schbench -F, KiB")?,
        None => 256,
    };
    let op_ns = match &raw.op_time {
        Some(v) => values::duration(ctx, v, "op_time", Zero::Refused)?,
        None => {
            let side = ((footprint_kb * 1024 / 3 / 8) as f64).sqrt().floor();
            (side * side * side * NS_PER_MULTIPLY_ADD).round().max(1.0) as u64
        }
    };
    // Bounds that keep the sums below in range; schbench's own values are
    // microseconds to milliseconds.
    for (v, ns, key) in [(&raw.sleep, sleep_ns, "sleep"), (&raw.timer_slack, timer_slack_ns, "timer_slack")] {
        if let (Some(v), true) = (v, ns > MAX_NAP_NS) {
            return Err(ctx.err(v, format!("`{key}` is too long: expected at most 10s")));
        }
    }
    let request_ns = (operations as u64).checked_mul(op_ns).filter(|&ns| ns <= MAX_REQUEST_NS);
    let Some(request_ns) = request_ns else {
        let at = raw.operations.as_ref().map(|v| v.span().start).unwrap_or(t.span().start);
        return Err(ctx.at(
            at,
            "`operations` x `op_time` (or the time `cache_footprint` implies) exceeds 10s of work per request",
        ));
    };
    let no_lock = raw.no_lock.as_ref().is_some_and(|v| *v.get_ref());
    if let Some(v) = &raw.requests_per_sec {
        values::int_in(ctx, v, "requests_per_sec", 0, i64::from(u32::MAX), "schbench -R")?;
        if *v.get_ref() != 0 {
            return Err(ctx.err(
                v,
                "`requests_per_sec` (schbench -R) is not modelled yet: only saturation mode (0, the default) is",
            ));
        }
    }
    if let Some(v) = &raw.wake_cost {
        return Err(ctx.err(
            v,
            "`wake_cost` is gone: a futex wake no longer costs a flat time. The waker pays the path it takes \
             (the FUTEX_WAKE syscall, then try_to_wake_up()'s selection, the wakelist or the remote runqueue \
             lock, the IPI), with the costs of the topology's [costs] and [costs.kernel]: remove the key \
             (docs/topology-file.md lists the costs)",
        ));
    }
    let fixed_auto = match &raw.auto_pin {
        None => false,
        Some(v) => match v.get_ref().as_str() {
            "main" => false,
            "fixed" => true,
            other => {
                return Err(ctx.err(
                    v,
                    format!(
                        "unknown auto_pin `{other}`: expected \"main\" (workers keep every CPU, as schbench \
                         main@24e32b8 does) or \"fixed\" (workers avoid the message CPUs, commit 0f4f67b)"
                    ),
                ))
            }
        },
    };
    let all = topo.all_cpus();
    let list = |v: &Spanned<String>, key: &str| -> Result<CpuSet, InputError> {
        let set = parse_cpulist(v.get_ref())
            .map_err(|e| ctx.err(v, format!("`{key}`: {e} (expected \"auto\" or a cpulist like \"0-3\")")))?;
        if set.is_empty() || !set.is_subset(&all) {
            return Err(ctx.err(
                v,
                format!(
                    "`{key}` = \"{}\" is not a non-empty subset of topology `{}`'s CPUs {}",
                    v.get_ref(),
                    topo.name,
                    all.to_cpulist()
                ),
            ));
        }
        Ok(set)
    };
    let is_auto = |v: &Option<Spanned<String>>| v.as_ref().is_some_and(|s| s.get_ref() == "auto");
    let auto = is_auto(&raw.message_cpus) || is_auto(&raw.worker_cpus);
    if auto && m > nr_cpus {
        let v = raw.message_cpus.as_ref().or(raw.worker_cpus.as_ref()).unwrap();
        return Err(ctx.err(v, format!("`auto` pinning puts message thread i on CPU i, but {m} > {nr_cpus} CPUs")));
    }
    // thread_auto_pin(): message CPUs 0..m-1; workers all CPUs, or (fixed) the rest.
    let auto_msg: CpuSet = (0..m as usize).collect();
    let auto_workers: CpuSet = if fixed_auto { all.iter().filter(|c| !auto_msg.contains(*c)).collect() } else { all };
    let mut msg_set = match &raw.message_cpus {
        Some(v) if v.get_ref() == "auto" => Some(auto_msg),
        Some(v) => Some(list(v, "message_cpus")?),
        None => None,
    };
    let mut worker_cpus = match &raw.worker_cpus {
        Some(v) if v.get_ref() == "auto" => auto_workers,
        Some(v) => list(v, "worker_cpus")?,
        None => all,
    };
    if auto {
        msg_set = Some(auto_msg);
        worker_cpus = auto_workers;
    }
    if worker_cpus.is_empty() {
        return Err(ctx.at(t.span().start, "`auto_pin = \"fixed\"` leaves the workers no CPU"));
    }
    // pin_message_cpu(): message thread i on the (i mod n)-th CPU of the list.
    let message_cpus: Vec<Option<usize>> =
        (0..m as usize).map(|i| msg_set.map(|s| s.iter().nth(i % s.iter().count()).expect("non-empty"))).collect();

    let cpu_locks = if no_lock { None } else { Some(intern(CPU_LOCKS, ObjKind::CpuLocks)?) };
    let mut threads = Vec::new();
    let mut lists = Vec::new();
    let mut msg_futex = Vec::new();
    for (k, cpu) in message_cpus.iter().enumerate() {
        let list = intern(&format!("{LIST_PREFIX}{k}"), ObjKind::WakeList)?;
        let futex = intern(&format!("{MSG_FUTEX_PREFIX}{k}"), ObjKind::Futex)?;
        lists.push(list);
        msg_futex.push(futex);
        let ops = vec![
            Op::FutexReset { futex: ObjRef::Fixed(futex) },
            Op::WakeList { list: ObjRef::Fixed(list) },
            Op::FutexWait { futex: ObjRef::Fixed(futex) },
        ];
        threads.push(thread(
            format!("sb-msg-{k}"),
            "schbench-msg",
            k as u32,
            cpu.map_or(all, CpuSet::single),
            ops,
            timer_slack_ns,
            line,
        ));
    }
    for k in 0..m as usize {
        for i in 0..workers as usize {
            let own = intern(&format!("{WORKER_FUTEX_PREFIX}{k}.{i}"), ObjKind::Futex)?;
            let mut ops = vec![
                Op::ListAdd { list: ObjRef::Fixed(lists[k]), futex: ObjRef::Fixed(own) },
                Op::FutexPost { futex: ObjRef::Fixed(msg_futex[k]) },
                Op::FutexWait { futex: ObjRef::Fixed(own) },
            ];
            // schbench calls usleep() only for -s > 0: `-s 0` does not sleep
            // at all (no timer slack either).
            if sleep_ns > 0 {
                ops.push(Op::Sleep { ns: sleep_ns });
            }
            // do_work(): the per-CPU lock (without -L) around the multiplies,
            // taken even when there are none (-n 0).
            if let Some(locks) = cpu_locks {
                ops.push(Op::LockCpu { locks });
            }
            if request_ns > 0 {
                ops.push(Op::Run { ns: request_ns });
            }
            if let Some(locks) = cpu_locks {
                ops.push(Op::UnlockCpu { locks });
            }
            let n = (k * workers as usize + i) as u32;
            threads.push(thread(format!("sb-w{k}-{i}"), "schbench-worker", n, worker_cpus, ops, timer_slack_ns, line));
        }
    }
    let spec = Schbench {
        message_threads: m as u32,
        workers_per_message_thread: workers as u32,
        runtime_ns,
        sleep_ns,
        operations: operations as u32,
        op_ns,
        message_cpus,
        worker_cpus,
        first_thread,
    };
    Ok((spec, threads))
}

fn thread(
    name: String,
    group: &str,
    instance: u32,
    affinity: CpuSet,
    ops: Vec<Op>,
    timer_slack_ns: u64,
    line: usize,
) -> ThreadSpec {
    ThreadSpec {
        name,
        group: group.to_string(),
        instance,
        policy: Policy::Other,
        nice: 0,
        rt_priority: 0,
        slice_ns: None,
        timer_slack_ns,
        dl: None,
        uclamp: None,
        affinity,
        start_cpu: None,
        start_delay_ns: 0,
        cgroup: None,
        session: None,
        program: Program { ops, repeat: Repeat::Forever, rows: Vec::new() },
        line,
    }
}
