//! rt-app's events and phases as scenario operations.
//!
//! An event key is recognised by its prefix, in the order rt-app's
//! `parse_task_event_data()` tests them. Each event becomes the operations
//! rt-app's `run_event()` performs:
//!
//! | rt-app            | scenario operations                                   |
//! |-------------------|-------------------------------------------------------|
//! | `run` N           | `run` N us (0: nothing)                               |
//! | `runtime` N       | `run_wall` N us                                       |
//! | `sleep` N         | `sleep` N us                                          |
//! | `timer`           | `timer` on the named grid, its `mode` (period 0: nothing) |
//! | `lock`/`unlock`   | `lock`/`unlock`                                       |
//! | `wait`            | `cond_wait` of `ref` with `mutex`                      |
//! | `signal`/`broad`  | `cond_signal`/`cond_broadcast`                         |
//! | `sync`            | `cond_signal` then `cond_wait`                         |
//! | `barrier`         | `barrier`                                             |
//! | `suspend` R       | `lock` R, `cond_wait` R, `unlock` R                    |
//! | `resume` R        | `lock` R, `cond_broadcast` R, `unlock` R               |
//! | `yield`           | `yield`                                               |
//!
//! rt-app keeps mutexes, conditions, barriers and timers in separate
//! namespaces; a name used for two kinds gets the kind as a suffix
//! (`Browser:mutex`, `Browser:cond`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use schedlab_topology::InputError;
use toml::{Spanned, Value};

use super::json::{Kind as J, Prop};
use super::{unknown_key, MAX_FLAT_OPS};
use crate::file::RawOp;
use crate::values::Ctx;

/// Event key prefixes, in the order rt-app tests them (master's list, a
/// superset of 1.0's).
const EVENTS: &[&str] = &[
    "run", "sleep", "memrun", "mem", "iorun", "lock", "unlock", "signal", "broad", "wait", "sync", "barrier", "timer",
    "resume", "suspend", "yield", "fork", "sem_post", "sem_wait",
];

/// The event a key names (`runtime2` → `run`, whose branch tells `runtime`).
fn event_of(key: &str) -> Option<&'static str> {
    EVENTS.iter().copied().find(|e| key.starts_with(e))
}

pub(crate) fn is_event(key: &str) -> bool {
    event_of(key).is_some()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ObjKind {
    Mutex,
    Cond,
    Barrier,
    Timer,
}

impl ObjKind {
    fn suffix(self) -> &'static str {
        match self {
            ObjKind::Mutex => "mutex",
            ObjKind::Cond => "cond",
            ObjKind::Barrier => "barrier",
            ObjKind::Timer => "timer",
        }
    }
}

/// An object as an event names it, and where.
#[derive(Clone, Debug)]
pub(crate) struct ObjName {
    name: String,
    kind: ObjKind,
    span: Range<usize>,
}

/// One scenario operation, before object names are final.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Run(Spanned<Value>),
    RunWall(Spanned<Value>),
    Sleep(Spanned<Value>),
    Timer {
        timer: ObjName,
        period: Spanned<Value>,
        absolute: bool,
    },
    Lock(ObjName),
    Unlock(ObjName),
    CondWait {
        cond: ObjName,
        mutex: ObjName,
    },
    CondSignal(ObjName),
    CondBroadcast(ObjName),
    Barrier(ObjName),
    Yield(Range<usize>),
    SetAffinity(Spanned<Value>),
    SetScheduler {
        policy: Spanned<String>,
        priority: Option<Spanned<i64>>,
    },
    /// The task to create a thread of.
    Fork(Spanned<String>),
    /// A phase's `taskgroup`: move to that cgroup path (`tg1/tg2`).
    Cgroup(Spanned<String>),
}

/// One phase (or a task without phases): its events and what it changes.
pub(crate) struct Phase {
    name: String,
    /// The key's position, where its per-phase changes are reported.
    at: usize,
    events: Vec<(Range<usize>, Op)>,
    /// `loop`: how many times its events repeat (-1: forever), and where.
    repeat: (i64, usize),
    /// Per-phase `cpus` (phases only).
    pub(crate) cpus: Option<Spanned<Value>>,
    /// Per-phase `policy` and `priority` (master; phases only).
    sched: Option<PhaseSched>,
    /// Per-phase `taskgroup` as a cgroup path (phases only; `""`: none, keep the current).
    pub(crate) taskgroup: Option<Spanned<String>>,
    /// Where its `taskgroup` key is.
    taskgroup_at: usize,
}

/// A phase's `policy` (absent: the one in force) and `priority`.
struct PhaseSched {
    policy: Option<Spanned<String>>,
    priority: Option<Spanned<i64>>,
}

impl Phase {
    /// Read `prop`'s events. For a phase (`in_phases`), also its `loop`,
    /// `cpus`, `policy` and `priority`; for a task without phases those are
    /// the task's, read by the caller (only `loop` is the phase's).
    pub(crate) fn read(ctx: Ctx, task: &str, prop: &Prop, in_phases: bool) -> Result<Phase, InputError> {
        let body = prop.value.as_object(ctx, &format!("phase `{}`", prop.key))?;
        let mut phase = Phase {
            name: prop.key.clone(),
            at: prop.key_at,
            events: Vec::new(),
            repeat: (1, prop.key_at),
            cpus: None,
            sched: None,
            taskgroup: None,
            taskgroup_at: prop.key_at,
        };
        let mut policy = None;
        let mut priority = None;
        let mut events_seen = 0;
        for p in &body.props {
            if let Some(event) = event_of(&p.key) {
                events_seen += 1;
                for op in event_ops(ctx, task, event, p)? {
                    phase.events.push((p.key_at..p.key_at + p.key.len() + 2, op));
                }
                continue;
            }
            match p.key.as_str() {
                "loop" => phase.repeat = (p.value.as_int(ctx, "loop")?, p.value.span().start),
                _ if !in_phases => {} // the task's own keys
                "cpus" => phase.cpus = Some(p.value.as_cpus(ctx)?),
                "policy" => policy = Some(p.value.as_spanned_string(ctx, "policy")?),
                "priority" => priority = Some(Spanned::new(p.value.span(), p.value.as_int(ctx, "priority")?)),
                "taskgroup" => {
                    phase.taskgroup = crate::rtapp::taskgroup(ctx, p, None)?;
                    phase.taskgroup_at = p.key_at;
                }
                "util_min" | "util_max" => {
                    return Err(ctx.at(
                        p.key_at,
                        format!(
                            "`{}` in phase `{}`: per-phase utilisation clamps are not supported yet; set it on the \
                             task, where it applies from the start",
                            p.key, prop.key
                        ),
                    ))
                }
                key => return Err(unknown_key(ctx, p, key, "phase")),
            }
        }
        if events_seen == 0 {
            let what = if in_phases { format!("phase `{}`", prop.key) } else { format!("task `{}`", prop.key) };
            return Err(ctx
                .at(prop.key_at, format!("{what} has no events: rt-app needs at least one (run, sleep, timer, ...)")));
        }
        if policy.is_some() || priority.is_some() {
            phase.sched = Some(PhaseSched { policy, priority });
        }
        Ok(phase)
    }
}

/// The microseconds of a `run`/`sleep`-like event as a duration value.
fn micros(ctx: Ctx, p: &Prop, event: &str) -> Result<(i64, Spanned<Value>), InputError> {
    let J::Int(us) = p.value.kind else {
        return Err(ctx.at(
            p.value.range.start,
            format!(
                "`{}`: a {event} event takes an integer number of microseconds, found {}",
                p.key,
                p.value.type_name()
            ),
        ));
    };
    if us < 0 {
        return Err(ctx.at(p.value.range.start, format!("`{}`: negative duration {us} us", p.key)));
    }
    Ok((us, Spanned::new(p.value.span(), Value::String(format!("{us}us")))))
}

fn obj(ctx: Ctx, p: &Prop, kind: ObjKind) -> Result<ObjName, InputError> {
    let s = p.value.as_spanned_string(ctx, &p.key)?;
    Ok(ObjName { span: s.span(), name: s.into_inner(), kind })
}

/// A string field of an event object (`ref`, `mutex`), with rt-app's default.
fn field(ctx: Ctx, p: &Prop, key: &str, kind: ObjKind, default: &str) -> Result<ObjName, InputError> {
    let o = p.value.as_object(ctx, &p.key)?;
    match o.get(key) {
        Some(f) => {
            let s = f.value.as_spanned_string(ctx, key)?;
            Ok(ObjName { span: s.span(), name: s.into_inner(), kind })
        }
        None => Ok(ObjName { name: default.to_string(), kind, span: p.key_at..p.key_at }),
    }
}

fn refuse(ctx: Ctx, p: &Prop, why: &str) -> InputError {
    ctx.at(p.key_at, format!("`{}`: {why}", p.key))
}

/// The operations of one event (empty for the no-ops rt-app allows).
fn event_ops(ctx: Ctx, task: &str, event: &str, p: &Prop) -> Result<Vec<Op>, InputError> {
    Ok(match event {
        "run" | "sleep" => {
            let (us, v) = micros(ctx, p, event)?;
            if event == "sleep" {
                vec![Op::Sleep(v)]
            } else if us == 0 {
                vec![]
            } else if p.key.starts_with("runtime") {
                vec![Op::RunWall(v)]
            } else {
                vec![Op::Run(v)]
            }
        }
        "memrun" | "mem" | "iorun" => {
            return Err(refuse(
                ctx,
                p,
                "memory and I/O load is not modeled (the model runs CPU bursts, sleeps and synchronisation)",
            ))
        }
        "lock" => vec![Op::Lock(obj(ctx, p, ObjKind::Mutex)?)],
        "unlock" => vec![Op::Unlock(obj(ctx, p, ObjKind::Mutex)?)],
        "signal" => vec![Op::CondSignal(obj(ctx, p, ObjKind::Cond)?)],
        "broad" => vec![Op::CondBroadcast(obj(ctx, p, ObjKind::Cond)?)],
        "wait" | "sync" => {
            let cond = field(ctx, p, "ref", ObjKind::Cond, "unknown")?;
            let mutex = field(ctx, p, "mutex", ObjKind::Mutex, "unknown")?;
            let wait = Op::CondWait { cond: cond.clone(), mutex };
            if event == "sync" {
                vec![Op::CondSignal(cond), wait]
            } else {
                vec![wait]
            }
        }
        "barrier" => vec![Op::Barrier(obj(ctx, p, ObjKind::Barrier)?)],
        "timer" => {
            let o = p.value.as_object(ctx, &p.key)?;
            let mut timer = field(ctx, p, "ref", ObjKind::Timer, "unknown")?;
            // rt-app: a ref starting with "unique" is a timer of each thread's own.
            if timer.name.starts_with("unique") {
                timer.name = format!("{task}/{}/{{i}}", timer.name);
            }
            let (us, period) = match o.get("period") {
                Some(f) => micros(ctx, f, "timer period")?,
                None => (0, Spanned::new(p.value.span(), Value::String("0us".into()))),
            };
            let absolute = match o.get("mode") {
                Some(m) => m.value.as_str(ctx, "mode")?.starts_with("absolute"),
                None => false,
            };
            for f in &o.props {
                if !matches!(f.key.as_str(), "ref" | "period" | "mode") {
                    return Err(ctx.at(f.key_at, format!("`{}` is not a timer key: expected ref, period, mode", f.key)));
                }
            }
            // A period of 0 never sleeps (template.json uses it to turn the timer off).
            if us == 0 {
                vec![]
            } else {
                vec![Op::Timer { timer, period, absolute }]
            }
        }
        "resume" | "suspend" => {
            // rt-app 1.0 waits on the condition the string names; master
            // uses the task's own name whatever the value.
            let (name, span) = match &p.value.kind {
                J::Str(s) => (s.clone(), p.value.range.start + 1..p.value.range.end.saturating_sub(1)),
                _ if event == "suspend" => (task.to_string(), p.key_at..p.key_at),
                _ => {
                    return Err(ctx.at(p.value.range.start, format!("`{}`: expected the name of what to resume", p.key)))
                }
            };
            let cond = ObjName { name: name.clone(), kind: ObjKind::Cond, span: span.clone() };
            let mutex = ObjName { name, kind: ObjKind::Mutex, span };
            let middle =
                if event == "suspend" { Op::CondWait { cond, mutex: mutex.clone() } } else { Op::CondBroadcast(cond) };
            vec![Op::Lock(mutex.clone()), middle, Op::Unlock(mutex)]
        }
        "yield" => vec![Op::Yield(p.key_at..p.key_at + p.key.len() + 2)],
        "fork" => match &p.value.kind {
            J::Str(s) => {
                vec![Op::Fork(Spanned::new(p.value.range.start + 1..p.value.range.end.saturating_sub(1), s.clone()))]
            }
            _ => return Err(ctx.at(p.value.range.start, format!("`{}`: expected the name of a task", p.key))),
        },
        "sem_post" | "sem_wait" => return Err(refuse(ctx, p, "semaphores are not modeled")),
        _ => unreachable!("every EVENTS entry has a branch"),
    })
}

/// Write a task's phases out as one program: each phase's events repeated
/// its `loop` times, preceded by the affinity and policy changes rt-app
/// makes at the phase's start. `repeats`: the task runs its phases more
/// than once, so the first phase also restores what the last one changed.
/// Returns the operations, where each pass over a phase's events begins
/// (rt-app's log rows; the phase's own changes come before it, as rt-app
/// makes them before it reads the clock), and whether the program itself
/// never ends (its only phase loops forever).
pub(crate) fn flatten(
    ctx: Ctx,
    task: &str,
    phases: &[Phase],
    repeats: bool,
    task_cpus: Option<&Spanned<Value>>,
    task_policy: Option<&Spanned<String>>,
    task_group: Option<&Spanned<String>>,
) -> Result<(Vec<Op>, Vec<usize>, bool), InputError> {
    // rt-app's set_thread_taskgroup() at each phase start: a phase with a
    // taskgroup moves the thread there unless it already is; one without
    // keeps the current. The group after phase i is the last one set.
    let group_after = |i: usize| phases[..=i].iter().rev().find_map(|p| p.taskgroup.as_ref()).or(task_group);
    let cpus_of = |p: &Phase| p.cpus.as_ref().or(task_cpus).map(|v| v.get_ref().clone());
    let mut ops = Vec::new();
    let mut rows = Vec::new();
    let mut forever = false;
    let mut policy = task_policy.map_or_else(|| Spanned::new(0..0, "SCHED_OTHER".to_string()), Clone::clone);
    for (i, phase) in phases.iter().enumerate() {
        let before = match i {
            0 if repeats => Some(phases.last().map(cpus_of)),
            0 => None,
            _ => Some(Some(cpus_of(&phases[i - 1]))),
        };
        let now = cpus_of(phase);
        if let Some(Some(before)) = before {
            if before != now {
                let v = now.unwrap_or_else(|| Value::String("all".into()));
                ops.push(Op::SetAffinity(Spanned::new(phase.at..phase.at, v)));
            }
        }
        if let Some(sched) = &phase.sched {
            if let Some(p) = &sched.policy {
                policy = p.clone();
            }
            ops.push(Op::SetScheduler { policy: policy.clone(), priority: sched.priority.clone() });
        }
        if let Some(tg) = &phase.taskgroup {
            let name = policy.get_ref().to_ascii_uppercase();
            if !matches!(name.trim_start_matches("SCHED_"), "OTHER" | "NORMAL") {
                return Err(ctx.at(
                    phase.taskgroup_at,
                    format!("`taskgroup` is for SCHED_OTHER tasks only (rt-app refuses it with {})", policy.get_ref()),
                ));
            }
            let mut before = vec![if i == 0 { task_group } else { group_after(i - 1) }];
            if i == 0 && repeats {
                before.push(group_after(phases.len() - 1));
            }
            if before.iter().any(|b| b.map(|b| b.get_ref()) != Some(tg.get_ref())) {
                ops.push(Op::Cgroup(tg.clone()));
            }
        }
        let (n, at) = phase.repeat;
        let times = match n {
            -1 if phases.len() == 1 => {
                forever = true;
                1
            }
            -1 => {
                return Err(ctx.at(
                    at,
                    format!(
                        "phase `{}` of task `{task}` loops forever (-1) but is not the task's only phase: a \
                         scenario program has one loop, so the phases before it could not run once and this one \
                         forever",
                        phase.name
                    ),
                ))
            }
            n if n <= 0 => return Err(ctx.at(at, format!("`loop` = {n}: expected a positive count or -1 (forever)"))),
            n => n as usize,
        };
        let total = ops.len().saturating_add(times.saturating_mul(phase.events.len()));
        if total > MAX_FLAT_OPS {
            return Err(ctx.at(
                at,
                format!(
                    "phase `{}` of task `{task}` loops {times} times over {} operations: {total} operations once \
                     its phases are written out, more than the {MAX_FLAT_OPS} a thread's program may hold",
                    phase.name,
                    phase.events.len()
                ),
            ));
        }
        for _ in 0..times {
            rows.push(ops.len());
            ops.extend(phase.events.iter().map(|(_, op)| op.clone()));
        }
    }
    Ok((ops, rows, forever))
}

/// The final object names: a name rt-app uses for two kinds of resource
/// gets the kind as a suffix. Timer modes are per timer, as in rt-app
/// (one event asking for `absolute` makes the timer absolute).
pub(crate) struct Names {
    shared: BTreeSet<String>,
    absolute: BTreeSet<String>,
    mutexes: BTreeSet<String>,
}

impl Names {
    pub(crate) fn resolve(programs: &[Vec<Op>]) -> Names {
        let mut kinds: BTreeMap<&str, BTreeSet<ObjKind>> = BTreeMap::new();
        let mut absolute = BTreeSet::new();
        for op in programs.iter().flatten() {
            for n in op.objects() {
                kinds.entry(n.name.as_str()).or_default().insert(n.kind);
            }
            if let Op::Timer { timer, absolute: true, .. } = op {
                absolute.insert(timer.name.clone());
            }
        }
        let shared: BTreeSet<String> = kinds.iter().filter(|(_, k)| k.len() > 1).map(|(n, _)| n.to_string()).collect();
        let mut names = Names { shared, absolute, mutexes: BTreeSet::new() };
        let mutexes = kinds
            .iter()
            .filter(|(_, k)| k.contains(&ObjKind::Mutex))
            .map(|(n, _)| names.final_name(&ObjName { name: n.to_string(), kind: ObjKind::Mutex, span: 0..0 }))
            .collect();
        names.mutexes = mutexes;
        names
    }

    fn final_name(&self, n: &ObjName) -> String {
        if self.shared.contains(&n.name) {
            format!("{}:{}", n.name, n.kind.suffix())
        } else {
            n.name.clone()
        }
    }

    fn spanned(&self, n: &ObjName) -> Spanned<String> {
        Spanned::new(n.span.clone(), self.final_name(n))
    }

    /// Every mutex's final name (for `pi_enabled`).
    pub(crate) fn mutexes(&self) -> impl Iterator<Item = String> + '_ {
        self.mutexes.iter().cloned()
    }

    /// The scenario operation table for `op`.
    pub(crate) fn raw_op(&self, op: &Op) -> Spanned<RawOp> {
        let mut r = RawOp::default();
        let span = match op {
            Op::Run(v) => {
                r.run = Some(v.clone());
                v.span()
            }
            Op::RunWall(v) => {
                r.run_wall = Some(v.clone());
                v.span()
            }
            Op::Sleep(v) => {
                r.sleep = Some(v.clone());
                v.span()
            }
            Op::Timer { timer, period, .. } => {
                let mode = if self.absolute.contains(&timer.name) { "absolute" } else { "relative" };
                r.timer = Some(period.clone());
                r.ref_ = Some(self.spanned(timer));
                r.mode = Some(Spanned::new(timer.span.clone(), mode.to_string()));
                period.span()
            }
            Op::Lock(m) => {
                r.lock = Some(self.spanned(m));
                m.span.clone()
            }
            Op::Unlock(m) => {
                r.unlock = Some(self.spanned(m));
                m.span.clone()
            }
            Op::CondWait { cond, mutex } => {
                r.cond_wait = Some(self.spanned(cond));
                r.mutex = Some(self.spanned(mutex));
                cond.span.clone()
            }
            Op::CondSignal(c) => {
                r.cond_signal = Some(self.spanned(c));
                c.span.clone()
            }
            Op::CondBroadcast(c) => {
                r.cond_broadcast = Some(self.spanned(c));
                c.span.clone()
            }
            Op::Barrier(b) => {
                r.barrier = Some(self.spanned(b));
                b.span.clone()
            }
            Op::Yield(span) => {
                r.yield_ = Some(Spanned::new(span.clone(), Value::Boolean(true)));
                span.clone()
            }
            Op::SetAffinity(v) => {
                r.setaffinity = Some(v.clone());
                v.span()
            }
            Op::SetScheduler { policy, priority } => {
                r.setscheduler = Some(policy.clone());
                r.priority = priority.clone();
                policy.span()
            }
            Op::Fork(task) => {
                r.fork = Some(task.clone());
                task.span()
            }
            Op::Cgroup(path) => {
                r.cgroup = Some(path.clone());
                path.span()
            }
        };
        Spanned::new(span, r)
    }
}

impl Op {
    fn objects(&self) -> Vec<&ObjName> {
        match self {
            Op::Timer { timer, .. } => vec![timer],
            Op::Lock(n) | Op::Unlock(n) | Op::CondSignal(n) | Op::CondBroadcast(n) | Op::Barrier(n) => vec![n],
            Op::CondWait { cond, mutex } => vec![cond, mutex],
            Op::Run(_)
            | Op::RunWall(_)
            | Op::Sleep(_)
            | Op::Yield(_)
            | Op::SetAffinity(_)
            | Op::SetScheduler { .. }
            | Op::Fork(_)
            | Op::Cgroup(_) => {
                vec![]
            }
        }
    }
}
