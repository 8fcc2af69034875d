//! Stall attribution: for every stall (a handoff at or above the threshold,
//! paired as [`crate::analyze`] pairs them), the chain of scheduler decisions
//! that produced it, and one cause.
//!
//! The handoff window (the waker's signal → the wakee's wait returning) is
//! split, from the trace alone, into what the wakee was doing (rtla
//! timerlat's auto-analysis does the same for a timer latency):
//!
//! * [`Part::Wakeup`]: still asleep — `try_to_wake_up()` had not enqueued it
//!   yet (`sched_waking` → `sched_wakeup`; with a wakelist wakeup
//!   this is the IPI to the target CPU);
//! * [`Part::IdleExit`]: queued (`sched_wakeup` done) on a CPU whose current
//!   task is still the idle task: the resched IPI and the exit from idle;
//! * [`Part::Behind`]: queued on a CPU where another task ran — one component
//!   per task; the largest names the *culprit*;
//! * [`Part::Running`]: on a CPU (returning from the wait).
//!
//! The cause is decided from the decision events of the waiting episode that
//! holds the culprit's time: how it began (`schedlab_ttwu` path, or a
//! preemption), whether `select_task_rq()`'s CPU was busy at the decision
//! (`sched_switch` timeline) and how the culprit reached that CPU
//! (`sched_migrate_task` + `schedlab_lb_migrate`). See [`Cause`]. On a real
//! trace without decision events, wakeups count as `select_task_rq()`
//! placements.

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

use schedlab_trace::{BalanceKind, DelayedWhat, Event, EventKind, Nanos, Pid, PrevState, Trace, UserOp, WakePath};

use crate::causes::*;
use crate::handoff::HandoffTracker;
use crate::narrative::{self, Step};
use crate::timeline::CpuTimeline;
use crate::workcons::allowed_cpus;

/// What to attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributionOptions {
    /// A handoff at least this long is a stall.
    pub stall_threshold_ns: u64,
    /// End of the observation window; default the last event.
    pub end_ts: Option<Nanos>,
    /// pid → CPUs it may run on, for "allowed CPUs idle during the wait"
    /// (unlisted tasks: as in [`crate::WorkConsOptions::allowed`]).
    pub allowed: BTreeMap<Pid, Vec<u32>>,
}

impl Default for AttributionOptions {
    fn default() -> Self {
        AttributionOptions {
            stall_threshold_ns: crate::DEFAULT_STALL_THRESHOLD_NS,
            end_ts: None,
            allowed: BTreeMap::new(),
        }
    }
}

/// Indexes over the time-ordered events.
pub(crate) struct Ctx<'a> {
    pub events: &'a [Event],
    pub trace: &'a Trace,
    pub timeline: CpuTimeline,
    /// pid → indices of the events about it, but its workload markers.
    pub by_task: HashMap<Pid, Vec<usize>>,
    /// pid → indices of its workload markers (apart: a task that never
    /// switches marks every loop, and a replay starts at its last switch).
    pub markers_by_task: HashMap<Pid, Vec<usize>>,
    /// pid → indices of its `sched_migrate_task` events.
    pub migrations: HashMap<Pid, Vec<usize>>,
    /// Indices of `schedlab_active_balance` events.
    pub active_queued: Vec<usize>,
    pub nr_cpus: u32,
}

impl Ctx<'_> {
    pub fn comm(&self, pid: Pid) -> String {
        if pid == 0 {
            "idle".to_string()
        } else {
            self.trace.table.comm(pid).to_string()
        }
    }

    /// The balancer that made the `sched_migrate_task` at `idx`, from the
    /// `schedlab_lb_migrate` that follows it.
    fn balancer_of(&self, pid: Pid, idx: usize) -> Option<BalanceKind> {
        let list = self.by_task.get(&pid)?;
        let pos = list.binary_search(&idx).ok()?;
        list[pos + 1..].iter().take_while(|&&j| self.events[j].ts == self.events[idx].ts).find_map(|&j| {
            match self.events[j].kind {
                EventKind::LbMigrate { kind, .. } => Some(kind),
                _ => None,
            }
        })
    }

    /// `pid`'s last arrival on `cpu` at or before `t`.
    fn arrival(&self, pid: Pid, cpu: u32, t: Nanos) -> Option<CpuArrival> {
        let list = self.migrations.get(&pid)?;
        let &idx = list[..list.partition_point(|&i| self.events[i].ts <= t)].last()?;
        let ev = &self.events[idx];
        let EventKind::SchedMigrateTask { orig_cpu, dest_cpu, .. } = ev.kind else { return None };
        if dest_cpu != cpu {
            return None;
        }
        let kind = self.balancer_of(pid, idx);
        let active_queued_ts = (kind == Some(BalanceKind::Active))
            .then(|| {
                self.active_queued[..self.active_queued.partition_point(|&i| i < idx)].iter().rev().find_map(|&i| {
                    matches!(self.events[i].kind,
                        EventKind::ActiveBalanceQueued { src_cpu, dst_cpu } if src_cpu == orig_cpu && dst_cpu == dest_cpu)
                    .then_some(self.events[i].ts)
                })
            })
            .flatten();
        Some(CpuArrival { ts: ev.ts, src_cpu: orig_cpu, dst_cpu: dest_cpu, balancer: kind, active_queued_ts })
    }
}

/// Moves older than this before the signal are left out of a story's steps.
const STEP_LOOKBACK_NS: Nanos = 10_000_000;

/// How a waiting episode began.
#[derive(Clone, Debug)]
enum Origin {
    Wakeup(Option<WakeDecision>),
    Preempted { by: Pid },
}

/// One runnable stretch of the wakee (wakeup or preemption → switch-in).
#[derive(Clone, Debug)]
struct Episode {
    origin: Origin,
    start_ts: Nanos,
    start_cpu: u32,
    /// (pid, cpu) → (ns, prio) spent behind that task there.
    behind: BTreeMap<(Pid, u32), (u64, i32)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WState {
    Unknown,
    Sleeping,
    Waiting { cpu: u32 },
    Running,
}

/// Pending parts of a `try_to_wake_up()` not yet enqueued.
#[derive(Default)]
struct Pending {
    ttwu: Option<(Nanos, Pid, u32, Option<WakePath>)>,
    lag: Option<i64>,
    preempt: Option<PreemptCheck>,
}

/// How many events after a wakee's wakeup or move, at its instant, a story
/// looks for the `resched_curr()` that followed it (`Builder::resched_step`).
pub(crate) const RESCHED_REACH: usize = 16;

/// Explain every stall of `trace` (see the module doc).
pub fn attribute_stalls(trace: &Trace, opts: &AttributionOptions) -> Attribution {
    let events = trace.in_time_order();
    let start = events.first().map_or(0, |e| e.ts);
    let end = opts.end_ts.unwrap_or_else(|| events.last().map_or(0, |e| e.ts)).max(start);
    let n = events.partition_point(|e| e.ts <= end);
    let events = &events[..n];
    let mut ctx = Ctx {
        events,
        trace,
        timeline: CpuTimeline::build(events, trace.nr_cpus, start, end),
        by_task: HashMap::default(),
        markers_by_task: HashMap::default(),
        migrations: HashMap::default(),
        active_queued: Vec::new(),
        nr_cpus: 0,
    };
    ctx.nr_cpus = ctx.timeline.cpus.len() as u32;

    let mut tracker = HandoffTracker::default();
    let mut signal_idx: HashMap<u32, usize> = HashMap::default();
    let mut found = Vec::new();
    for (i, ev) in events.iter().enumerate() {
        let index = if matches!(ev.kind, EventKind::User { .. }) { &mut ctx.markers_by_task } else { &mut ctx.by_task };
        let mut about = |pid: Pid| {
            if pid != 0 {
                index.entry(pid).or_default().push(i);
            }
        };
        for pid in crate::stall_window::about(ev) {
            about(pid);
        }
        match ev.kind {
            EventKind::SchedMigrateTask { pid, .. } => {
                ctx.migrations.entry(pid).or_default().push(i);
            }
            EventKind::ActiveBalanceQueued { .. } => ctx.active_queued.push(i),
            EventKind::User { pid, op } => {
                match op {
                    UserOp::Signal { obj } => {
                        signal_idx.entry(obj).or_insert(i);
                    }
                    UserOp::WaitDone { obj } => {
                        let s = signal_idx.remove(&obj);
                        let obj_name =
                            |o: u32| trace.table.objects.get(o as usize).cloned().unwrap_or_else(|| format!("obj{o}"));
                        if let (Some(h), Some(s)) =
                            (tracker.event(ev.ts, pid, op, opts.stall_threshold_ns, obj_name), s)
                        {
                            if h.latency_ns >= opts.stall_threshold_ns {
                                found.push((s, i, obj));
                            }
                        }
                        continue;
                    }
                    _ => {}
                }
                tracker.event(ev.ts, pid, op, opts.stall_threshold_ns, |_| String::new());
            }
            _ => {}
        }
    }

    let mut tally = Tally::new(opts.stall_threshold_ns, usize::MAX);
    for (s, d, obj) in found {
        tally.add(story(&ctx, opts, s, d, obj));
    }
    tally.finish()
}

/// The cause table as stories are told: every story counts, the first
/// `kept` are kept.
pub(crate) struct Tally {
    threshold_ns: u64,
    total_ns: u64,
    rows: BTreeMap<(Cause, Option<Pid>), CauseRow>,
    stalls: Vec<StallStory>,
    kept: usize,
    not_kept: u64,
}

impl Tally {
    pub fn new(threshold_ns: u64, kept: usize) -> Self {
        Tally { threshold_ns, total_ns: 0, rows: BTreeMap::new(), stalls: Vec::new(), kept, not_kept: 0 }
    }

    pub fn keep(&mut self, n: usize) {
        self.kept = n;
    }

    pub fn add(&mut self, s: StallStory) {
        self.total_ns += s.latency_ns;
        let row = self.rows.entry((s.cause, s.culprit_pid)).or_insert_with(|| CauseRow {
            cause: s.cause,
            label: s.cause.label().to_string(),
            culprit_pid: s.culprit_pid,
            culprit: s.culprit.clone(),
            stalls: 0,
            total_ns: 0,
            share_pct: 0.0,
        });
        row.stalls += 1;
        row.total_ns += s.latency_ns;
        if self.stalls.len() < self.kept {
            self.stalls.push(s);
        } else {
            self.not_kept += 1;
        }
    }

    /// The cause table, largest total first.
    pub fn finish(self) -> Attribution {
        let total_ns = self.total_ns;
        let mut causes: Vec<CauseRow> = self.rows.into_values().collect();
        for r in &mut causes {
            r.share_pct = if total_ns == 0 { 0.0 } else { 100.0 * r.total_ns as f64 / total_ns as f64 };
        }
        causes.sort_by(|a, b| {
            b.total_ns.cmp(&a.total_ns).then(a.cause.cmp(&b.cause)).then(a.culprit_pid.cmp(&b.culprit_pid))
        });
        Attribution {
            threshold_ns: self.threshold_ns,
            total_ns,
            causes,
            stalls: self.stalls,
            stalls_not_kept: self.not_kept,
            unexplained: 0,
        }
    }
}

/// Explain the handoff signalled at event `s` and received at event `d`.
fn story(ctx: &Ctx, opts: &AttributionOptions, s: usize, d: usize, obj: u32) -> StallStory {
    let ev = ctx.events;
    let (t0, t1) = (ev[s].ts, ev[d].ts);
    let waker = ev[s].ctx_pid;
    let waker = match ev[s].kind {
        EventKind::User { pid, .. } => pid,
        _ => waker,
    };
    let w = match ev[d].kind {
        EventKind::User { pid, .. } => pid,
        _ => ev[d].ctx_pid,
    };
    let empty = Vec::new();
    let list = ctx.by_task.get(&w).unwrap_or(&empty);
    let pos_s = list.partition_point(|&i| i < s);
    let pos_d = list.partition_point(|&i| i <= d);
    // Replay from the last switch before the signal (and events at its instant).
    let mut from = list[..pos_s]
        .iter()
        .rposition(|&i| matches!(ev[i].kind, EventKind::SchedSwitch { prev_pid, next_pid, .. } if prev_pid == w || next_pid == w))
        .unwrap_or(pos_s);
    while from > 0 && from < list.len() && ev[list[from - 1]].ts == ev[list[from]].ts {
        from -= 1;
    }

    // The wakee's markers from the same point, merged in by index: those
    // before the signal change nothing (the replay accounts time from the
    // signal on, and only a wait returning at its end is a step), so they
    // are skipped without a look.
    let markers = ctx.markers_by_task.get(&w).unwrap_or(&empty);
    let start = list.get(from).copied().unwrap_or(s);
    let m_from = markers.partition_point(|&i| i < start || ev[i].ts < t0);
    let m_to = markers.partition_point(|&i| i <= d);
    let (mut sched, mut marks) = (list[from..pos_d].iter().peekable(), markers[m_from..m_to].iter().peekable());

    let mut b = Builder::new(ctx, w, t0, t1);
    loop {
        let i = match (sched.peek(), marks.peek()) {
            (Some(&&a), Some(&&m)) if a < m => sched.next(),
            (Some(_), None) => sched.next(),
            (_, Some(_)) => marks.next(),
            (None, None) => break,
        };
        let &i = i.expect("peeked");
        b.advance(ev[i].ts);
        b.apply(i);
    }
    b.advance(t1);
    b.finish(opts, d, waker, obj)
}

/// Replays the wakee's events and accounts the window's time.
struct Builder<'c, 'a> {
    ctx: &'c Ctx<'a>,
    w: Pid,
    /// The wakee's comm, looked up once.
    wc: std::rc::Rc<str>,
    w_prio: i32,
    t0: Nanos,
    t1: Nanos,
    now: Nanos,
    state: WState,
    pending: Pending,
    episodes: Vec<Episode>,
    wakeup_ns: u64,
    idle_exit_ns: u64,
    running_ns: u64,
    /// (start, end, cpu) the wakee was queued there.
    waits: Vec<(Nanos, Nanos, u32)>,
    /// (start, end, cpu, pid) who was current on the wakee's CPU meanwhile.
    runs: Vec<(Nanos, Nanos, u32, Pid)>,
    steps: Vec<Step>,
    blocked: Option<(Nanos, u32, Option<i64>)>,
    delayed_lag: Option<(Nanos, i64)>,
    /// The wakee's moves while queued: (ts, from, to, balancer).
    moves: Vec<(Nanos, u32, u32, Option<BalanceKind>)>,
}

impl<'c, 'a> Builder<'c, 'a> {
    fn new(ctx: &'c Ctx<'a>, w: Pid, t0: Nanos, t1: Nanos) -> Self {
        Builder {
            ctx,
            w,
            wc: ctx.comm(w).into(),
            w_prio: 120,
            t0,
            t1,
            now: t0,
            state: WState::Unknown,
            pending: Pending::default(),
            episodes: Vec::new(),
            wakeup_ns: 0,
            idle_exit_ns: 0,
            running_ns: 0,
            waits: Vec::new(),
            runs: Vec::new(),
            steps: Vec::new(),
            blocked: None,
            delayed_lag: None,
            moves: Vec::new(),
        }
    }

    fn step(&mut self, ts: Nanos, cpu: u32, text: String) {
        self.steps.push(Step { ts, cpu, text });
    }

    /// Account `[now, t)` (clipped to the window) to the current state.
    fn advance(&mut self, t: Nanos) {
        let (a, b) = (self.now.max(self.t0), t.min(self.t1));
        self.now = self.now.max(t);
        if a >= b {
            return;
        }
        match self.state {
            WState::Unknown | WState::Sleeping => self.wakeup_ns += b - a,
            WState::Running => self.running_ns += b - a,
            WState::Waiting { cpu } => {
                self.waits.push((a, b, cpu));
                let ep = self.episodes.last_mut().expect("waiting has an episode");
                for seg in self.ctx.timeline.overlapping(cpu, a, b) {
                    let len = seg.end - seg.start;
                    if seg.pid == 0 || seg.pid == self.w {
                        self.idle_exit_ns += len;
                    } else {
                        let e = ep.behind.entry((seg.pid, cpu)).or_insert((0, seg.prio));
                        e.0 += len;
                    }
                    match self.runs.last_mut() {
                        Some(r) if r.1 == seg.start && r.2 == cpu && r.3 == seg.pid => r.1 = seg.end,
                        _ => self.runs.push((seg.start, seg.end, cpu, seg.pid)),
                    }
                }
            }
        }
    }

    fn begin_wait(&mut self, ts: Nanos, cpu: u32, origin: Origin) {
        self.state = WState::Waiting { cpu };
        self.episodes.push(Episode { origin, start_ts: ts, start_cpu: cpu, behind: BTreeMap::new() });
    }

    /// Steps for `pid`'s move `a`, unless older than [`STEP_LOOKBACK_NS`]
    /// before the signal (the one-line chain still names it).
    fn arrival_steps(&mut self, pid: Pid, a: &CpuArrival) {
        if a.ts + STEP_LOOKBACK_NS < self.t0 {
            return;
        }
        if let Some(q) = a.active_queued_ts {
            let text =
                format!("need_active_balance: stopper queued on CPU {} to push toward CPU {}", a.src_cpu, a.dst_cpu);
            self.step(q, a.src_cpu, text);
        }
        let text = narrative::move_text(&self.ctx.comm(pid), a.src_cpu, a.dst_cpu, a.balancer);
        self.step(a.ts, a.src_cpu, text);
    }

    /// `schedlab_resched` events for `cpu` at the instant of event `i`,
    /// among the [`RESCHED_REACH`] events after it.
    fn resched_step(&mut self, i: usize, cpu: u32) {
        let ev = self.ctx.events;
        let same_instant = ev[i + 1..].iter().take_while(|e| e.ts == ev[i].ts);
        let hit = same_instant.take(RESCHED_REACH).find_map(|e| match e.kind {
            EventKind::Resched { cpu: c, ipi } if c == cpu => Some((e.cpu, ipi)),
            _ => None,
        });
        if let Some((from, ipi)) = hit {
            let how = if ipi { "with an IPI" } else { "without IPI (local or polling idle)" };
            self.step(ev[i].ts, from, format!("resched_curr(CPU {cpu}) {how}"));
        }
    }

    fn apply(&mut self, i: usize) {
        let ctx = self.ctx;
        let e = &ctx.events[i];
        let (w, ts) = (self.w, e.ts);
        let wc = self.wc.clone();
        match e.kind {
            EventKind::Ttwu { path, cpu, .. } => {
                self.pending = Pending { ttwu: Some((ts, e.ctx_pid, e.cpu, Some(path))), ..Pending::default() };
                let how = narrative::ttwu_path_text(path, cpu);
                self.step(ts, e.cpu, format!("{} woke {wc}: {how}", ctx.comm(e.ctx_pid)));
            }
            EventKind::Delayed { what, lag, .. } => match what {
                DelayedWhat::Delayed => self.delayed_lag = Some((ts, lag)),
                DelayedWhat::Requeued => {
                    self.pending.lag = Some(lag);
                    self.step(
                        ts,
                        e.cpu,
                        format!("requeue_delayed_entity: {wc} back in play (lag {})", narrative::us_signed(lag)),
                    );
                }
                DelayedWhat::DequeuedAtPick => {
                    self.step(ts, e.cpu, format!("pick_next_entity picked delayed {wc}: dequeue completed"))
                }
                DelayedWhat::DequeuedAtWakeup => {
                    self.step(ts, e.cpu, format!("the wakeup completed {wc}'s delayed dequeue: placed anew"))
                }
            },
            EventKind::WakeupPreempt { curr, preempt, reason, .. } => {
                let pc = PreemptCheck { curr_pid: curr, curr: ctx.comm(curr), preempt, reason };
                self.step(ts, e.cpu, narrative::preempt_text(&pc));
                self.pending.preempt = Some(pc);
            }
            EventKind::SchedWakeup { target_cpu, prio, .. } | EventKind::SchedWakeupNew { target_cpu, prio, .. } => {
                self.w_prio = prio;
                let fresh = matches!(self.state, WState::Unknown | WState::Sleeping);
                // Preempted while going to sleep (R+), then woken by
                // ttwu_runnable(): the wait goes on, now as this wakeup's.
                let in_place = matches!(self.state, WState::Waiting { .. })
                    && matches!(self.pending.ttwu, Some((.., Some(WakePath::Runnable { .. }))));
                if fresh || in_place {
                    let p = std::mem::take(&mut self.pending);
                    let (dts, waker, waker_cpu, path) = p.ttwu.unwrap_or((ts, e.ctx_pid, e.cpu, None));
                    let curr = ctx.timeline.curr_at(target_cpu, dts).unwrap_or(0);
                    let decision = WakeDecision {
                        ts: dts,
                        waker_pid: waker,
                        waker_cpu,
                        path,
                        cpu: target_cpu,
                        requeued_lag_ns: p.lag,
                        preempt: p.preempt,
                        curr_at_decision: if curr == w { 0 } else { curr },
                    };
                    self.step(ts, e.cpu, format!("sched_wakeup: {wc} enqueued on CPU {target_cpu}"));
                    self.resched_step(i, target_cpu);
                    if fresh {
                        self.begin_wait(ts, target_cpu, Origin::Wakeup(Some(decision)));
                    } else if let Some(ep) = self.episodes.last_mut() {
                        ep.origin = Origin::Wakeup(Some(decision));
                    }
                }
            }
            EventKind::SchedMigrateTask { orig_cpu, dest_cpu, .. } => {
                if let WState::Waiting { .. } = self.state {
                    let kind = ctx.balancer_of(w, i);
                    self.moves.push((ts, orig_cpu, dest_cpu, kind));
                    self.state = WState::Waiting { cpu: dest_cpu };
                    self.step(ts, e.cpu, narrative::move_text(&wc, orig_cpu, dest_cpu, kind));
                    self.resched_step(i, dest_cpu);
                }
            }
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, prev_prio, next_prio } => {
                if prev_pid == w {
                    self.w_prio = prev_prio;
                    match prev_state {
                        PrevState::Running { .. } => {
                            self.step(
                                ts,
                                e.cpu,
                                format!(
                                    "{wc} preempted by {} (prev_state={})",
                                    ctx.comm(next_pid),
                                    prev_state.as_str()
                                ),
                            );
                            self.begin_wait(ts, e.cpu, Origin::Preempted { by: next_pid });
                        }
                        _ => {
                            self.state = WState::Sleeping;
                            let lag = self.delayed_lag.take().filter(|&(t, _)| t == ts).map(|(_, l)| l);
                            self.blocked = Some((ts, e.cpu, lag));
                            self.step(ts, e.cpu, narrative::block_text(&wc, lag));
                        }
                    }
                }
                if next_pid == w {
                    self.w_prio = next_prio;
                    let waited = self.episodes.last().map(|ep| ts.saturating_sub(ep.start_ts));
                    if matches!(self.state, WState::Waiting { .. }) {
                        let after = waited
                            .map_or(String::new(), |d| format!(", {} after it became runnable", narrative::us(d)));
                        self.step(ts, e.cpu, format!("{wc} switched in{after}"));
                    }
                    self.state = WState::Running;
                }
            }
            EventKind::User { op: UserOp::WaitDone { .. }, .. } if ts == self.t1 => {
                self.step(ts, e.cpu, format!("{wc}'s wait returned: handoff {}", narrative::us(self.t1 - self.t0)));
            }
            _ => {}
        }
    }

    fn finish(mut self, opts: &AttributionOptions, d: usize, waker: Pid, obj: u32) -> StallStory {
        let ctx = self.ctx;
        let w = self.w;
        // The culprit: the task the wakee spent most time behind.
        let mut best: Option<(usize, Pid, u32, u64, i32)> = None;
        for (k, ep) in self.episodes.iter().enumerate() {
            for (&(pid, cpu), &(ns, prio)) in &ep.behind {
                if best.is_none_or(|b| ns > b.3) {
                    best = Some((k, pid, cpu, ns, prio));
                }
            }
        }
        let mut behind: BTreeMap<Pid, u64> = BTreeMap::new();
        for ep in &self.episodes {
            for (&(pid, _), &(ns, _)) in &ep.behind {
                *behind.entry(pid).or_default() += ns;
            }
        }
        let ipi_idle = self.wakeup_ns + self.idle_exit_ns;
        let culprit_ns = best.map_or(0, |b| behind[&b.1]);
        let (cause, culprit, cause_ns) = match best {
            Some((k, pid, cpu, _, prio)) if culprit_ns >= ipi_idle && culprit_ns >= self.running_ns => {
                let ep = &self.episodes[k];
                let cause = if prio < 100 && self.w_prio >= 100 {
                    Cause::HigherClass
                } else {
                    match &ep.origin {
                        Origin::Preempted { .. } => Cause::Preempted,
                        Origin::Wakeup(dec) => {
                            let path = dec.as_ref().map(|d| d.path);
                            match path {
                                Some(Some(WakePath::Runnable { delayed: true })) => Cause::DelayedInPlace,
                                Some(Some(WakePath::Runnable { delayed: false })) => Cause::RunnableInPlace,
                                _ if cpu != ep.start_cpu => Cause::MovedOntoBusyCpu,
                                _ => {
                                    let curr = dec.as_ref().map_or(0, |d| d.curr_at_decision);
                                    // A wakeup whose path the trace does not say.
                                    if curr != 0 && path == Some(None) {
                                        Cause::WokenOntoBusyCpu
                                    } else if curr != 0 {
                                        Cause::BusyCpuSelected
                                    } else {
                                        let first_run = self
                                            .runs
                                            .iter()
                                            .find(|r| r.3 == pid && r.2 == cpu)
                                            .map_or(ep.start_ts, |r| r.0);
                                        match ctx.arrival(pid, cpu, first_run) {
                                            Some(a) if a.balancer.is_some() => Cause::StackedByBalancer,
                                            _ => Cause::StackedByWakeup,
                                        }
                                    }
                                }
                            }
                        }
                    }
                };
                (cause, Some((pid, cpu, k)), culprit_ns)
            }
            _ if ipi_idle > 0 && ipi_idle >= self.running_ns => (Cause::IpiIdleExit, None, ipi_idle),
            _ => (Cause::NoRunqueueWait, None, self.running_ns),
        };

        // How the culprit reached the CPU, and how the wakee reached the CPU it blocked on.
        let culprit_arrival = culprit.and_then(|(pid, cpu, k)| {
            let first_run =
                self.runs.iter().find(|r| r.3 == pid && r.2 == cpu).map_or(self.episodes[k].start_ts, |r| r.0);
            ctx.arrival(pid, cpu, first_run)
        });
        let wakee_arrival = self.blocked.and_then(|(ts, cpu, _)| ctx.arrival(w, cpu, ts));
        if let (Some(a), Some((pid, ..))) = (&culprit_arrival, culprit) {
            self.arrival_steps(pid, a);
        }
        if let Some(a) = &wakee_arrival {
            self.arrival_steps(w, a);
        }
        // Who ran on the wakee's CPU while it waited.
        for &(a, b, cpu, pid) in &self.runs.clone() {
            let text = if pid == 0 || pid == w {
                format!("CPU {cpu} still idle for {} (IPI delivery / idle exit)", narrative::us(b - a))
            } else {
                format!("{} ran {} on CPU {cpu} while {} waited", ctx.comm(pid), narrative::us(b - a), ctx.comm(w))
            };
            self.step(a, cpu, text);
        }
        self.steps.sort_by_key(|st| st.ts);

        // Allowed CPUs idle while the wakee waited on another CPU.
        let allowed = allowed_cpus(&opts.allowed, w, &ctx.comm(w), ctx.nr_cpus);
        let wait_ns: u64 = self.waits.iter().map(|(a, b, _)| b - a).sum();
        let idle_allowed: Vec<CpuIdle> = allowed
            .iter()
            .map(|&c| CpuIdle {
                cpu: c,
                idle_ns: self.waits.iter().filter(|x| x.2 != c).map(|&(a, b, _)| ctx.timeline.idle_ns(c, a, b)).sum(),
            })
            .filter(|c| c.idle_ns > 0)
            .collect();

        let mut components = Vec::new();
        let mut push = |part, pid: Option<Pid>, ns: u64| {
            if ns > 0 {
                components.push(Component { part, pid, comm: pid.map(|p| ctx.comm(p)), ns });
            }
        };
        push(Part::Wakeup, None, self.wakeup_ns);
        push(Part::IdleExit, None, self.idle_exit_ns);
        let mut behind: Vec<(Pid, u64)> = behind.into_iter().collect();
        behind.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (pid, ns) in behind {
            push(Part::Behind, Some(pid), ns);
        }
        push(Part::Running, None, self.running_ns);

        let wakeup =
            culprit.map(|(_, _, k)| k).or(if self.episodes.is_empty() { None } else { Some(0) }).and_then(|k| {
                match &self.episodes[k].origin {
                    Origin::Wakeup(d) => d.clone(),
                    Origin::Preempted { .. } => None,
                }
            });
        let culprit_pid = culprit.map(|c| c.0);
        let culprit_name = culprit_pid.map(|p| ctx.comm(p));
        let mut story = StallStory {
            wakee_pid: w,
            wakee: ctx.comm(w),
            waker_pid: waker,
            waker: ctx.comm(waker),
            obj_name: ctx.trace.table.objects.get(obj as usize).cloned().unwrap_or_else(|| format!("obj{obj}")),
            start_ts: self.t0,
            end_ts: ctx.events[d].ts,
            latency_ns: self.t1 - self.t0,
            cause,
            cause_text: cause.describe(culprit_name.as_deref()),
            culprit_pid,
            culprit: culprit_name,
            cause_ns,
            culprit_cpu: culprit.map(|c| c.1),
            culprit_arrival,
            wakeup,
            blocked_ts: self.blocked.map(|b| b.0),
            blocked_cpu: self.blocked.map(|b| b.1),
            blocked_delayed_lag_ns: self.blocked.and_then(|b| b.2),
            wakee_arrival,
            wait_ns,
            components,
            idle_allowed,
            steps: self.steps,
            summary: String::new(),
        };
        let preempted = culprit.and_then(|(_, cpu, k)| match self.episodes[k].origin {
            Origin::Preempted { by } => Some((self.episodes[k].start_ts, cpu, by)),
            Origin::Wakeup(_) => None,
        });
        story.summary = narrative::summary(&story, &self.moves, preempted, ctx);
        story
    }
}

#[cfg(test)]
#[path = "attribution_tests.rs"]
mod tests;
