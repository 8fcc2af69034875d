//! Event names and payload text: one place that knows each event's format,
//! both directions.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

use crate::event::{
    BalanceKind, DelayedWhat, Event, EventKind, Pid, PreemptReason, PrevState, RtBalanceResult, TaskTable, UserOp,
    WakePath,
};

/// Event name as printed after the timestamp (`sched_switch`, `schedlab_ttwu`,
/// `tracing_mark_write` for workload operations).
pub fn event_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::SchedWaking { .. } => "sched_waking",
        EventKind::SchedWakeup { .. } => "sched_wakeup",
        EventKind::SchedWakeupNew { .. } => "sched_wakeup_new",
        EventKind::SchedSwitch { .. } => "sched_switch",
        EventKind::SchedMigrateTask { .. } => "sched_migrate_task",
        EventKind::SchedStatRuntime { .. } => "sched_stat_runtime",
        EventKind::SchedPiSetprio { .. } => "sched_pi_setprio",
        EventKind::SchedWakeIdleWithoutIpi { .. } => "sched_wake_idle_without_ipi",
        EventKind::CpuFrequency { .. } => "cpu_frequency",
        EventKind::Ttwu { .. } => "schedlab_ttwu",
        EventKind::Delayed { .. } => "schedlab_delayed",
        EventKind::Resched { .. } => "schedlab_resched",
        EventKind::WakeupPreempt { .. } => "schedlab_wakeup_preempt",
        EventKind::User { .. } => "tracing_mark_write",
        EventKind::LbMigrate { .. } => "schedlab_lb_migrate",
        EventKind::ActiveBalanceQueued { .. } => "schedlab_active_balance",
        EventKind::RtPush { .. } => "schedlab_rt_push",
        EventKind::RtPull { .. } => "schedlab_rt_pull",
        EventKind::RtPushIpi { .. } => "schedlab_rt_push_ipi",
        EventKind::RtPrioChanged { .. } => "schedlab_rt_prio_changed",
    }
}

/// The comm a payload prints for `pid`: `swapper/N` for the idle task of the
/// event's CPU, `<...>` when unknown.
pub(crate) fn payload_comm(table: &TaskTable, pid: Pid, cpu: u32) -> Cow<'_, str> {
    if pid == 0 {
        Cow::Owned(format!("swapper/{cpu}"))
    } else {
        Cow::Borrowed(table.comm(pid))
    }
}

fn wake_path_str(p: WakePath) -> &'static str {
    match p {
        WakePath::Runnable { delayed: false } => "runnable",
        WakePath::Runnable { delayed: true } => "runnable_delayed",
        WakePath::Activate => "activate",
        WakePath::Wakelist => "wakelist",
    }
}

fn delayed_what_str(w: DelayedWhat) -> &'static str {
    match w {
        DelayedWhat::Delayed => "delayed",
        DelayedWhat::DequeuedAtPick => "dequeued_at_pick",
        DelayedWhat::Requeued => "requeued",
        DelayedWhat::DequeuedAtWakeup => "dequeued_at_wakeup",
    }
}

/// The name a workload marker gives its operation (`post`, `poll_done`, ...).
pub fn user_op_name(op: &UserOp) -> &'static str {
    match op {
        UserOp::Signal { .. } => "signal",
        UserOp::WaitDone { .. } => "wait_done",
        UserOp::Post { .. } => "post",
        UserOp::PollDone { .. } => "poll_done",
        UserOp::Lock { .. } => "lock",
        UserOp::Unlock { .. } => "unlock",
        UserOp::LoopEnd { .. } => "loop_end",
        UserOp::RtAppLoop { .. } => "rtapp_loop",
        UserOp::RtAppStats { .. } => "rtapp_stats",
    }
}

fn object_name(table: &TaskTable, obj: u32) -> Cow<'_, str> {
    match table.objects.get(obj as usize) {
        Some(n) if !n.is_empty() => {
            if n.chars().any(char::is_whitespace) {
                Cow::Owned(n.chars().map(|c| if c.is_whitespace() { '_' } else { c }).collect())
            } else {
                Cow::Borrowed(n.as_str())
            }
        }
        _ => Cow::Owned(format!("obj{obj}")),
    }
}

/// The text a workload thread writes to `trace_marker` for `op`
/// (`schedlab signal obj=ping`, `schedlab loop_end n=3`).
pub fn user_marker_text(table: &TaskTable, op: &UserOp) -> String {
    let name = user_op_name(op);
    match op {
        UserOp::Signal { obj }
        | UserOp::WaitDone { obj }
        | UserOp::Post { obj }
        | UserOp::PollDone { obj }
        | UserOp::Lock { obj }
        | UserOp::Unlock { obj } => format!("schedlab {name} obj={}", object_name(table, *obj)),
        UserOp::LoopEnd { n } => format!("schedlab {name} n={n}"),
        // rt-app's own text (master's format, whichever version wrote it).
        UserOp::RtAppLoop { start, thread_loop, phase, phase_loop } => format!(
            "rtapp_loop: event={} thread_loop={thread_loop} phase={phase} phase_loop={phase_loop}",
            if *start { "start" } else { "end" }
        ),
        UserOp::RtAppStats { period, run, wu_lat, slack, c_period, c_run } => format!(
            "rtapp_stats: period={period} run={run} wu_lat={wu_lat} slack={slack} c_period={c_period} c_run={c_run}"
        ),
    }
}

/// Append the payload of `ev` (the text after `name: `) to `s`.
pub(crate) fn write_payload(s: &mut String, table: &TaskTable, ev: &Event) {
    let c = |pid: Pid| payload_comm(table, pid, ev.cpu);
    // Writing to a String cannot fail.
    let _ = match ev.kind {
        EventKind::SchedWaking { pid, prio, target_cpu }
        | EventKind::SchedWakeup { pid, prio, target_cpu }
        | EventKind::SchedWakeupNew { pid, prio, target_cpu } => {
            write!(s, "comm={} pid={pid} prio={prio} target_cpu={target_cpu:03}", c(pid))
        }
        EventKind::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio } => write!(
            s,
            "prev_comm={} prev_pid={prev_pid} prev_prio={prev_prio} prev_state={} ==> next_comm={} next_pid={next_pid} next_prio={next_prio}",
            c(prev_pid),
            prev_state.as_str(),
            c(next_pid)
        ),
        EventKind::SchedMigrateTask { pid, prio, orig_cpu, dest_cpu } => {
            write!(s, "comm={} pid={pid} prio={prio} orig_cpu={orig_cpu} dest_cpu={dest_cpu}", c(pid))
        }
        EventKind::SchedStatRuntime { pid, runtime } => {
            write!(s, "comm={} pid={pid} runtime={runtime} [ns]", c(pid))
        }
        EventKind::SchedPiSetprio { pid, oldprio, newprio } => {
            write!(s, "comm={} pid={pid} oldprio={oldprio} newprio={newprio}", c(pid))
        }
        EventKind::SchedWakeIdleWithoutIpi { cpu } => write!(s, "cpu={cpu}"),
        EventKind::CpuFrequency { state, cpu_id } => write!(s, "state={state} cpu_id={cpu_id}"),
        EventKind::Ttwu { pid, path, cpu } => {
            write!(s, "comm={} pid={pid} path={} cpu={cpu}", c(pid), wake_path_str(path))
        }
        EventKind::Delayed { pid, what, lag } => {
            write!(s, "comm={} pid={pid} what={} lag={lag}", c(pid), delayed_what_str(what))
        }
        EventKind::Resched { cpu, ipi } => write!(s, "cpu={cpu} ipi={}", ipi as u8),
        EventKind::LbMigrate { pid, src_cpu, dst_cpu, kind, delayed } => write!(
            s,
            "comm={} pid={pid} src_cpu={src_cpu} dst_cpu={dst_cpu} kind={} delayed={}",
            c(pid),
            kind.as_str(),
            delayed as u8
        ),
        EventKind::ActiveBalanceQueued { src_cpu, dst_cpu } => write!(s, "src_cpu={src_cpu} dst_cpu={dst_cpu}"),
        EventKind::RtPush { pid, src_cpu, dst_cpu, result } => write!(
            s,
            "comm={} pid={pid} src_cpu={src_cpu} dst_cpu={} result={}",
            c(pid),
            dst_cpu.map_or(-1, i64::from),
            result.as_str()
        ),
        EventKind::RtPull { src_cpu, pid, result } => write!(
            s,
            "src_cpu={src_cpu} comm={} pid={pid} result={}",
            if pid == 0 { Cow::Borrowed("-") } else { c(pid) },
            result.as_str()
        ),
        EventKind::RtPushIpi { dst_cpu, first } => write!(s, "dst_cpu={dst_cpu} first={}", first as u8),
        EventKind::RtPrioChanged { pid, oldprio, newprio, running, resched, push, pull } => write!(
            s,
            "comm={} pid={pid} oldprio={oldprio} newprio={newprio} running={} resched={} push_queued={} pull_queued={}",
            c(pid),
            running as u8,
            resched as u8,
            push as u8,
            pull as u8
        ),
        EventKind::WakeupPreempt { wakee, curr, preempt, reason } => write!(
            s,
            "comm={} pid={wakee} curr_comm={} curr_pid={curr} preempt={} reason={}",
            c(wakee),
            c(curr),
            preempt as u8,
            reason.as_str()
        ),
        EventKind::User { pid, op } => {
            s.push_str(&user_marker_text(table, &op));
            if pid != ev.ctx_pid {
                let _ = write!(s, " pid={pid}");
            }
            Ok(())
        }
    };
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

/// A payload error: byte offset into the payload and what was expected.
#[derive(Debug)]
pub(super) struct PErr {
    pub off: usize,
    pub msg: String,
}

pub(super) fn perr(off: usize, msg: impl Into<String>) -> PErr {
    PErr { off, msg: msg.into() }
}

/// Object names ↔ indices while reading.
#[derive(Default)]
pub(super) struct Objects {
    pub names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Objects {
    pub fn new(seed: &[String]) -> Self {
        let mut o = Objects::default();
        for n in seed {
            o.intern(n);
        }
        o
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

/// What a recognised payload yields: the event and the (pid, comm) pairs it named.
pub(super) struct Decoded<'a> {
    pub kind: EventKind,
    pub comms: Vec<(Pid, &'a str)>,
}

#[derive(Clone, Copy, PartialEq)]
enum Ty {
    /// Free text (a comm): runs up to the next key whose value is an integer.
    Str,
    /// One whitespace-delimited token; anything after it up to the next key is ignored.
    Tok,
}

fn is_int(tok: &str) -> bool {
    let t = tok.strip_prefix('-').unwrap_or(tok);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

fn token(s: &str) -> &str {
    s.split(|c: char| c.is_whitespace()).next().unwrap_or("")
}

/// Offset of the space of the first ` key=` that starts at or after `from`.
fn find_key(p: &str, from: usize, key: &str) -> Option<usize> {
    let mut f = from;
    while let Some(rel) = p[f..].find(key) {
        let at = f + rel;
        if at > from && p.as_bytes()[at - 1] == b' ' && p[at + key.len()..].starts_with('=') {
            return Some(at - 1);
        }
        f = at + 1;
    }
    None
}

/// Values of `keys` in order, as (value, byte offset in `p`).
fn fields<'a>(p: &'a str, keys: &[(&str, Ty)]) -> Result<Vec<(&'a str, usize)>, PErr> {
    let mut out = Vec::with_capacity(keys.len());
    let lead = p.len() - p.trim_start().len();
    let first = keys[0].0;
    if !(p[lead..].starts_with(first) && p[lead + first.len()..].starts_with('=')) {
        return Err(perr(lead, format!("expected `{first}=`")));
    }
    let mut vstart = lead + first.len() + 1;
    for (i, &(key, ty)) in keys.iter().enumerate() {
        let Some(&(nkey, _)) = keys.get(i + 1) else {
            out.push((token(&p[vstart..]), vstart));
            break;
        };
        let plen = nkey.len() + 2; // ` key=`
        let mut from = match ty {
            Ty::Str => vstart,
            Ty::Tok => vstart + token(&p[vstart..]).len(),
        };
        // For free text, prefer the first ` next=` followed by an integer; if
        // none is, take the first so the bad value is what gets reported.
        let mut first_at = None;
        let at = loop {
            match find_key(p, from, nkey) {
                None => match first_at {
                    Some(at) => break at,
                    None => return Err(perr(p.len(), format!("expected `{nkey}=` after `{key}=`"))),
                },
                Some(at) => {
                    first_at.get_or_insert(at);
                    if ty == Ty::Tok || is_int(token(&p[at + plen..])) {
                        break at;
                    }
                    from = at + 1;
                }
            }
        };
        let value = match ty {
            Ty::Str => &p[vstart..at],
            Ty::Tok => token(&p[vstart..]),
        };
        out.push((value, vstart));
        vstart = at + plen;
    }
    Ok(out)
}

pub(super) fn num<T: std::str::FromStr>(v: (&str, usize), key: &str) -> Result<T, PErr> {
    v.0.parse().map_err(|_| perr(v.1, format!("expected an integer for `{key}`, found `{}`", v.0)))
}

fn flag01(v: (&str, usize), key: &str) -> Result<bool, PErr> {
    match v.0 {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(perr(v.1, format!("expected 0 or 1 for `{key}`, found `{}`", v.0))),
    }
}

fn rt_result(v: (&str, usize)) -> Result<RtBalanceResult, PErr> {
    RtBalanceResult::ALL.iter().copied().find(|r| r.as_str() == v.0).ok_or_else(|| {
        let names: Vec<&str> = RtBalanceResult::ALL.iter().map(|r| r.as_str()).collect();
        perr(v.1, format!("expected one of {} for `result`, found `{}`", names.join(", "), v.0))
    })
}

/// `prev_state` as the kernel prints it (`R`, `R+`, `S`, `D`, `I`, `D|K`, ...)
/// or as the raw number (`trace-cmd report -R`, `perf script` without the
/// event's print format). States the vocabulary lacks map to the nearest
/// one: `T t P I W K N` → sleeping, `Z` → dead.
///
/// The number is `__trace_sched_switch_state()`'s (include/trace/events/
/// sched.h, since 4.14): one `TASK_REPORT` bit — 0x1 S, 0x2 D, 0x4 T,
/// 0x8 t, 0x10 X, 0x20 Z, 0x40 P — or 0x80 for I (`TASK_REPORT_IDLE`),
/// or `TASK_REPORT_MAX` (0x100) for a preempted task still runnable, 0 for
/// R. Other bits are refused rather than guessed at.
fn prev_state(v: (&str, usize)) -> Result<PrevState, PErr> {
    let s = v.0;
    if is_int(s) {
        let n: i64 = s.parse().map_err(|_| perr(v.1, "prev_state out of range"))?;
        return match n {
            0 => Ok(PrevState::Running { preempt: false }),
            0x100 => Ok(PrevState::Running { preempt: true }),
            n if !(1..0x100).contains(&n) => {
                Err(perr(v.1, format!("prev_state {n}: expected 0, 256 (R+) or a state bit below 256 (TASK_REPORT)")))
            }
            n if n & 0x1 != 0 => Ok(PrevState::Sleeping),
            n if n & 0x2 != 0 => Ok(PrevState::DiskSleep),
            n if n & (0x10 | 0x20) != 0 => Ok(PrevState::Dead),
            _ => Ok(PrevState::Sleeping),
        };
    }
    let preempt = s.ends_with('+');
    match s.trim_end_matches('+').split('|').next().unwrap_or("") {
        "R" => Ok(PrevState::Running { preempt }),
        "S" | "T" | "t" | "P" | "I" | "W" | "K" | "N" => Ok(PrevState::Sleeping),
        "D" => Ok(PrevState::DiskSleep),
        "X" | "Z" => Ok(PrevState::Dead),
        _ => Err(perr(v.1, format!("expected a task state (R, R+, S, D, X, ...), found `{s}`"))),
    }
}

fn comm_of<'a>(comms: &mut Vec<(Pid, &'a str)>, pid: Pid, comm: &'a str) {
    if pid != 0 && comm != "<...>" {
        comms.push((pid, comm));
    }
}

/// Decode the payload of event `name`. `Ok(None)`: not an event this crate
/// models (skipped by the reader). `ctx_pid` is the prefix pid.
///
/// In a schedlab trace.dat (`run --trace-dat`) the decision events and the
/// markers hold their text in one string field `msg`, which `trace-cmd
/// report -R` prints as `msg=TEXT`: the text is read after it.
pub(super) fn parse_payload<'a>(
    name: &str,
    p: &'a str,
    ctx_pid: Pid,
    objects: &mut Objects,
) -> Result<Option<Decoded<'a>>, PErr> {
    let ours = name.starts_with("schedlab_") || name == "tracing_mark_write";
    let t = p.trim_start();
    match t.strip_prefix("msg=") {
        Some(text) if ours => {
            let skip = p.len() - text.len();
            parse_payload_text(name, text, ctx_pid, objects).map_err(|e| perr(e.off + skip, e.msg))
        }
        _ => parse_payload_text(name, p, ctx_pid, objects),
    }
}

fn parse_payload_text<'a>(
    name: &str,
    p: &'a str,
    ctx_pid: Pid,
    objects: &mut Objects,
) -> Result<Option<Decoded<'a>>, PErr> {
    use Ty::{Str, Tok};
    let mut comms = Vec::new();
    let kind = match name {
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let (pid, prio, target_cpu) = if p.trim_start().starts_with("comm=") {
                let f = fields(p, &[("comm", Str), ("pid", Tok), ("prio", Tok), ("target_cpu", Tok)])?;
                let pid = num(f[1], "pid")?;
                comm_of(&mut comms, pid, f[0].0);
                (pid, num(f[2], "prio")?, num(f[3], "target_cpu")?)
            } else {
                let (comm, pid, prio, rest) = compact_task(p, 0)?;
                comm_of(&mut comms, pid, comm);
                let cpu = p[rest..]
                    .split_whitespace()
                    .find_map(|t| t.strip_prefix("CPU:"))
                    .ok_or_else(|| perr(p.len(), "expected `CPU:NNN`"))?;
                let cpu = cpu.parse().map_err(|_| perr(rest, format!("bad CPU number `{cpu}`")))?;
                (pid, prio, cpu)
            };
            match name {
                "sched_waking" => EventKind::SchedWaking { pid, prio, target_cpu },
                "sched_wakeup" => EventKind::SchedWakeup { pid, prio, target_cpu },
                _ => EventKind::SchedWakeupNew { pid, prio, target_cpu },
            }
        }
        "sched_switch" => {
            if p.trim_start().starts_with("prev_comm=") {
                let f = fields(
                    p,
                    &[
                        ("prev_comm", Str),
                        ("prev_pid", Tok),
                        ("prev_prio", Tok),
                        ("prev_state", Tok),
                        ("next_comm", Str),
                        ("next_pid", Tok),
                        ("next_prio", Tok),
                    ],
                )?;
                let prev_pid = num(f[1], "prev_pid")?;
                let next_pid = num(f[5], "next_pid")?;
                comm_of(&mut comms, prev_pid, f[0].0);
                comm_of(&mut comms, next_pid, f[4].0);
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_prio: num(f[2], "prev_prio")?,
                    prev_state: prev_state(f[3])?,
                    next_pid,
                    next_prio: num(f[6], "next_prio")?,
                }
            } else {
                // trace-cmd plugin: `prev:pid [prio] S ==> next:pid [prio]`
                let arrow = p
                    .find(" ==> ")
                    .ok_or_else(|| perr(0, "expected `prev_comm=` or `COMM:PID [PRIO] STATE ==> COMM:PID [PRIO]`"))?;
                let (pc, prev_pid, prev_prio, after) = compact_task(&p[..arrow], 0)?;
                let st = p[after..arrow].trim();
                let st_off = after + (p[after..arrow].len() - p[after..arrow].trim_start().len());
                let prev_state = prev_state((st, st_off))?;
                let (nc, next_pid, next_prio, _) = compact_task(p, arrow + 5)?;
                comm_of(&mut comms, prev_pid, pc);
                comm_of(&mut comms, next_pid, nc);
                EventKind::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio }
            }
        }
        "sched_migrate_task" => {
            let f = fields(p, &[("comm", Str), ("pid", Tok), ("prio", Tok), ("orig_cpu", Tok), ("dest_cpu", Tok)])?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            EventKind::SchedMigrateTask {
                pid,
                prio: num(f[2], "prio")?,
                orig_cpu: num(f[3], "orig_cpu")?,
                dest_cpu: num(f[4], "dest_cpu")?,
            }
        }
        "sched_stat_runtime" => {
            let f = fields(p, &[("comm", Str), ("pid", Tok), ("runtime", Tok)])?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            EventKind::SchedStatRuntime { pid, runtime: num(f[2], "runtime")? }
        }
        "sched_pi_setprio" => {
            let f = fields(p, &[("comm", Str), ("pid", Tok), ("oldprio", Tok), ("newprio", Tok)])?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            EventKind::SchedPiSetprio { pid, oldprio: num(f[2], "oldprio")?, newprio: num(f[3], "newprio")? }
        }
        "sched_wake_idle_without_ipi" => {
            let f = fields(p, &[("cpu", Tok)])?;
            EventKind::SchedWakeIdleWithoutIpi { cpu: num(f[0], "cpu")? }
        }
        "cpu_frequency" => {
            let f = fields(p, &[("state", Tok), ("cpu_id", Tok)])?;
            EventKind::CpuFrequency { state: num(f[0], "state")?, cpu_id: num(f[1], "cpu_id")? }
        }
        "schedlab_ttwu" => {
            let f = fields(p, &[("comm", Str), ("pid", Tok), ("path", Tok), ("cpu", Tok)])?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            let path = match f[2].0 {
                "runnable" => WakePath::Runnable { delayed: false },
                "runnable_delayed" => WakePath::Runnable { delayed: true },
                "activate" => WakePath::Activate,
                "wakelist" => WakePath::Wakelist,
                other => {
                    return Err(perr(
                        f[2].1,
                        format!("expected runnable, runnable_delayed, activate or wakelist, found `{other}`"),
                    ))
                }
            };
            EventKind::Ttwu { pid, path, cpu: num(f[3], "cpu")? }
        }
        "schedlab_delayed" => {
            let f = fields(p, &[("comm", Str), ("pid", Tok), ("what", Tok), ("lag", Tok)])?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            let what = match f[2].0 {
                "delayed" => DelayedWhat::Delayed,
                "dequeued_at_pick" => DelayedWhat::DequeuedAtPick,
                "requeued" => DelayedWhat::Requeued,
                "dequeued_at_wakeup" => DelayedWhat::DequeuedAtWakeup,
                other => {
                    return Err(perr(
                        f[2].1,
                        format!("expected delayed, dequeued_at_pick, requeued or dequeued_at_wakeup, found `{other}`"),
                    ))
                }
            };
            EventKind::Delayed { pid, what, lag: num(f[3], "lag")? }
        }
        "schedlab_lb_migrate" => {
            let f = fields(
                p,
                &[("comm", Str), ("pid", Tok), ("src_cpu", Tok), ("dst_cpu", Tok), ("kind", Tok), ("delayed", Tok)],
            )?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            let kind = match BalanceKind::ALL.iter().find(|k| k.as_str() == f[4].0) {
                Some(k) => *k,
                None => {
                    return Err(perr(
                        f[4].1,
                        format!("expected periodic, newidle, nohz_idle or active, found `{}`", f[4].0),
                    ))
                }
            };
            EventKind::LbMigrate {
                pid,
                src_cpu: num(f[2], "src_cpu")?,
                dst_cpu: num(f[3], "dst_cpu")?,
                kind,
                delayed: flag01(f[5], "delayed")?,
            }
        }
        "schedlab_active_balance" => {
            let f = fields(p, &[("src_cpu", Tok), ("dst_cpu", Tok)])?;
            EventKind::ActiveBalanceQueued { src_cpu: num(f[0], "src_cpu")?, dst_cpu: num(f[1], "dst_cpu")? }
        }
        "schedlab_rt_push" => {
            let f = fields(p, &[("comm", Str), ("pid", Tok), ("src_cpu", Tok), ("dst_cpu", Tok), ("result", Tok)])?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            let dst_cpu = if f[3].0 == "-1" { None } else { Some(num(f[3], "dst_cpu")?) };
            EventKind::RtPush { pid, src_cpu: num(f[2], "src_cpu")?, dst_cpu, result: rt_result(f[4])? }
        }
        "schedlab_rt_pull" => {
            let f = fields(p, &[("src_cpu", Tok), ("comm", Str), ("pid", Tok), ("result", Tok)])?;
            let pid = num(f[2], "pid")?;
            if pid != 0 {
                comm_of(&mut comms, pid, f[1].0);
            }
            EventKind::RtPull { src_cpu: num(f[0], "src_cpu")?, pid, result: rt_result(f[3])? }
        }
        "schedlab_rt_push_ipi" => {
            let f = fields(p, &[("dst_cpu", Tok), ("first", Tok)])?;
            EventKind::RtPushIpi { dst_cpu: num(f[0], "dst_cpu")?, first: flag01(f[1], "first")? }
        }
        "schedlab_rt_prio_changed" => {
            let f = fields(
                p,
                &[
                    ("comm", Str),
                    ("pid", Tok),
                    ("oldprio", Tok),
                    ("newprio", Tok),
                    ("running", Tok),
                    ("resched", Tok),
                    ("push_queued", Tok),
                    ("pull_queued", Tok),
                ],
            )?;
            let pid = num(f[1], "pid")?;
            comm_of(&mut comms, pid, f[0].0);
            EventKind::RtPrioChanged {
                pid,
                oldprio: num(f[2], "oldprio")?,
                newprio: num(f[3], "newprio")?,
                running: flag01(f[4], "running")?,
                resched: flag01(f[5], "resched")?,
                push: flag01(f[6], "push_queued")?,
                pull: flag01(f[7], "pull_queued")?,
            }
        }
        "schedlab_resched" => {
            let f = fields(p, &[("cpu", Tok), ("ipi", Tok)])?;
            EventKind::Resched { cpu: num(f[0], "cpu")?, ipi: flag01(f[1], "ipi")? }
        }
        "schedlab_wakeup_preempt" => {
            let f = fields(
                p,
                &[
                    ("comm", Str),
                    ("pid", Tok),
                    ("curr_comm", Str),
                    ("curr_pid", Tok),
                    ("preempt", Tok),
                    ("reason", Tok),
                ],
            )?;
            let wakee = num(f[1], "pid")?;
            let curr = num(f[3], "curr_pid")?;
            comm_of(&mut comms, wakee, f[0].0);
            comm_of(&mut comms, curr, f[2].0);
            let reason = PreemptReason::ALL
                .iter()
                .copied()
                .find(|r| r.as_str() == f[5].0)
                .ok_or_else(|| perr(f[5].1, format!("unknown preemption reason `{}`", f[5].0)))?;
            EventKind::WakeupPreempt { wakee, curr, preempt: flag01(f[4], "preempt")?, reason }
        }
        "tracing_mark_write" => return parse_marker(p, 0, ctx_pid, objects),
        // trace-cmd shows marker writes as `print: tracing_mark_write: text`.
        "print" => {
            let t = p.trim_start();
            let off = p.len() - t.len();
            return match t.strip_prefix("tracing_mark_write:") {
                Some(rest) => parse_marker(rest, off + "tracing_mark_write:".len(), ctx_pid, objects),
                None => Ok(None),
            };
        }
        _ => return Ok(None),
    };
    Ok(Some(Decoded { kind, comms }))
}

/// `COMM:PID [PRIO]` starting at or after `from` (trace-cmd's compact form).
/// Returns comm, pid, prio and the offset just past `]`.
fn compact_task(p: &str, from: usize) -> Result<(&str, Pid, i32, usize), PErr> {
    let start = from + (p[from..].len() - p[from..].trim_start().len());
    for (rel, _) in p[start..].match_indices(':') {
        let colon = start + rel;
        let after = &p[colon + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || !after[digits..].starts_with(" [") {
            continue;
        }
        let inner = &after[digits + 2..];
        let Some(close) = inner.find(']') else { continue };
        if !is_int(&inner[..close]) {
            continue;
        }
        let pid = after[..digits].parse().map_err(|_| perr(colon + 1, "pid out of range"))?;
        let prio = inner[..close].parse().map_err(|_| perr(colon + digits + 3, "prio out of range"))?;
        return Ok((&p[start..colon], pid, prio, colon + 1 + digits + 2 + close + 1));
    }
    Err(perr(start, "expected `comm=` or `COMM:PID [PRIO]`"))
}

/// Whitespace-separated tokens of `s` with their offsets (plus `base`).
pub(super) fn tokens(s: &str, base: usize) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if let Some(st) = start.take() {
                out.push((&s[st..i], base + st));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(st) = start {
        out.push((&s[st..], base + st));
    }
    out
}

/// `schedlab <op> obj=<name>|n=<n> [pid=<pid>]`; other marker text is not ours.
fn parse_marker<'a>(
    text: &'a str,
    base: usize,
    ctx_pid: Pid,
    objects: &mut Objects,
) -> Result<Option<Decoded<'a>>, PErr> {
    let lead = text.len() - text.trim_start().len();
    if let Some(op) = super::rtapp_marker::parse_rtapp_marker(&text[lead..], base + lead)? {
        return Ok(Some(Decoded { kind: EventKind::User { pid: ctx_pid, op }, comms: Vec::new() }));
    }
    let Some(rest) = text[lead..].strip_prefix("schedlab ") else { return Ok(None) };
    let toks = tokens(rest, base + lead + "schedlab ".len());
    let Some(&(opname, _)) = toks.first() else { return Ok(None) };
    let key = match opname {
        "loop_end" => "n",
        "signal" | "wait_done" | "post" | "poll_done" | "lock" | "unlock" => "obj",
        _ => return Ok(None),
    };
    let mut value = None;
    let mut pid = ctx_pid;
    for &(t, off) in &toks[1..] {
        if let Some(v) = t.strip_prefix("pid=") {
            pid = num((v, off + 4), "pid")?;
        } else if let Some(v) = t.strip_prefix(key).and_then(|r| r.strip_prefix('=')) {
            value.get_or_insert((v, off + key.len() + 1));
        }
    }
    let Some(v) = value else {
        return Err(perr(base + text.trim_end().len(), format!("expected `{key}=` after `schedlab {opname}`")));
    };
    let op = if key == "n" {
        UserOp::LoopEnd { n: num(v, "n")? }
    } else {
        if v.0.is_empty() {
            return Err(perr(v.1, "expected an object name after `obj=`"));
        }
        let obj = objects.intern(v.0);
        match opname {
            "signal" => UserOp::Signal { obj },
            "wait_done" => UserOp::WaitDone { obj },
            "post" => UserOp::Post { obj },
            "poll_done" => UserOp::PollDone { obj },
            "lock" => UserOp::Lock { obj },
            _ => UserOp::Unlock { obj },
        }
    };
    Ok(Some(Decoded { kind: EventKind::User { pid, op }, comms: Vec::new() }))
}
