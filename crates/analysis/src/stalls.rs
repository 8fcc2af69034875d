//! Seed 000's "Trace" breakdown of stalls, from trace events only.
//!
//! For a set of wakee pids (the workers), every handoff (a `Signal` on an
//! eventfd → the wakee's `WaitDone` on it, paired as [`crate::analyze`] pairs
//! them) at or above a threshold is classified by what the events around it
//! show:
//!
//! * the CPU the wakee was woken on: its `sched_wakeup` (`target_cpu`, or the
//!   `Ttwu` decision's CPU) after it blocked and before its wait returned;
//! * whether that wakeup was a delayed in-place requeue: `Ttwu` with
//!   `WakePath::Runnable { delayed: true }` (`ttwu_runnable()` found
//!   `se.sched_delayed` set and called no `select_task_rq()`);
//! * whether another wakee was running on that CPU at the wakeup or was
//!   switched in there before the wakee itself ran (`sched_switch`): the wakee
//!   waited behind it;
//! * how that other wakee arrived on the CPU: its last `sched_migrate_task`
//!   onto it, and the balancer path (`schedlab_lb_migrate`'s `kind`) when the
//!   load balancer made the move — `Active` is `active_load_balance_cpu_stop()`;
//! * whether that CPU is the top-ranked one (a CPU the caller names, e.g. the
//!   highest ITMT priority of the workers' affinity), and how many of the
//!   other allowed CPUs were idle at the wakeup.
//!
//! [`burst_starts_per_cpu`] gives the per-CPU burst counts of the seed
//! thread's follow-up ("each starts about half of its bursts on CPU 6 and 7").

use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, BTreeSet};

use schedlab_trace::{BalanceKind, EventKind, Nanos, Pid, PrevState, Trace, UserOp, WakePath};
use serde::{Deserialize, Serialize};

use crate::handoff::HandoffTracker;

/// What to classify.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StallOptions {
    /// The wakees (workers) whose handoffs and wakeups are counted; the
    /// "other thread" a stall waits behind is one of them too.
    pub wakees: Vec<Pid>,
    /// A handoff at least this long is a stall.
    pub threshold_ns: u64,
    /// The top-ranked CPU for [`StallBreakdown::stalls_on_top_cpu_behind_other`].
    pub top_cpu: Option<u32>,
    /// CPUs the wakees may run on, for
    /// [`StallBreakdown::stalls_all_other_allowed_idle`]; empty: not counted.
    pub allowed_cpus: Vec<u32>,
    /// End of the observation window; default the last event. Later events are ignored.
    pub end_ts: Option<Nanos>,
}

/// How a task last arrived on a CPU, as the trace shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Moved there by the load balancer on this path (`schedlab_lb_migrate`).
    Periodic,
    Newidle,
    NohzIdle,
    /// `active_load_balance_cpu_stop()` pushed it there.
    Active,
    /// A `sched_migrate_task` onto the CPU with no balancer decision: wakeup
    /// placement (`select_task_rq()`).
    Wakeup,
    /// No migration onto the CPU in the trace: it started there.
    NotSeen,
}

impl Arrival {
    /// Short name used in tables and JSON keys.
    pub fn as_str(&self) -> &'static str {
        match self {
            Arrival::Periodic => "periodic",
            Arrival::Newidle => "newidle",
            Arrival::NohzIdle => "nohz_idle",
            Arrival::Active => "active",
            Arrival::Wakeup => "wakeup",
            Arrival::NotSeen => "not_seen",
        }
    }
}

impl From<BalanceKind> for Arrival {
    fn from(k: BalanceKind) -> Self {
        match k {
            BalanceKind::Periodic => Arrival::Periodic,
            BalanceKind::Newidle => Arrival::Newidle,
            BalanceKind::NohzIdle => Arrival::NohzIdle,
            BalanceKind::Active => Arrival::Active,
        }
    }
}

/// One stall and what the events around it show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassifiedStall {
    pub wakee_pid: Pid,
    /// The waker's signal and the wakee's wait returning.
    pub start_ts: Nanos,
    pub end_ts: Nanos,
    pub latency_ns: u64,
    /// The CPU the wakee was woken on; `None` when no wakeup happened between
    /// the signal and the wait returning (it had not blocked yet).
    pub wake_cpu: Option<u32>,
    /// `ttwu_runnable()` requeued it in place (`sched_delayed`, no CPU selection).
    pub delayed_wakeup: bool,
    /// Another wakee that ran on `wake_cpu` while this one waited there.
    pub other_pid: Option<Pid>,
    /// How `other_pid` last arrived on `wake_cpu`.
    pub other_arrival: Option<Arrival>,
    /// When it arrived there.
    pub other_arrived_ts: Option<Nanos>,
    /// When the wakee last blocked (switched out sleeping) before this stall.
    pub wakee_blocked_ts: Option<Nanos>,
    /// `wake_cpu` is the caller's top-ranked CPU.
    pub on_top_cpu: bool,
    /// Allowed CPUs other than `wake_cpu` that were idle at the wakeup (`None`
    /// without a wakeup or without allowed CPUs).
    pub idle_allowed_at_wakeup: Option<u32>,
}

/// Seed 000's "Trace" table for one run. Read back (sweep results, shard
/// files) without its `details`, which sweeps drop.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallBreakdown {
    pub threshold_ns: u64,
    pub top_cpu: Option<u32>,
    /// `sched_wakeup` events of the wakees ("worker wakeups"; one per
    /// completed `try_to_wake_up()`, not counting `sched_wakeup_new`).
    pub wakeups: u64,
    /// `Ttwu { path: Runnable { delayed: true } }` of the wakees: "delayed, no
    /// select_task_rq_fair()".
    pub delayed_wakeups_no_select: u64,
    /// Handoffs the wakees received (signal → wait returning).
    pub handoffs: u64,
    /// Of those, at or above the threshold: "waits >= 0.5 ms".
    pub stalls: u64,
    /// Stalls where another wakee ran on the wake CPU before the wakee did.
    pub stalls_behind_other: u64,
    /// Of those, on the top-ranked CPU: "on CPU 6 behind the other thread".
    pub stalls_on_top_cpu_behind_other: u64,
    /// Stalls whose wakeup was a delayed in-place requeue: "after a delayed
    /// wakeup, no CPU selection".
    pub stalls_after_delayed_wakeup: u64,
    /// Stalls behind another wakee that `active_load_balance_cpu_stop()` had
    /// moved onto the CPU: "other thread moved to CPU 6 by
    /// active_load_balance_cpu_stop()".
    pub stalls_other_moved_by_active_balance: u64,
    /// Of those, the move happened while the wakee slept (between its block
    /// and its wait returning): the active-balance-vs-wakeup race itself,
    /// rather than a stacking left over from an earlier cycle.
    pub stalls_other_moved_by_active_balance_while_asleep: u64,
    /// Stalls behind another wakee, by how it last arrived on the CPU
    /// ([`Arrival::as_str`] → count).
    pub other_arrivals: BTreeMap<String, u64>,
    /// Stalls where every allowed CPU but the wake CPU was idle at the wakeup
    /// ("3 of the 4 allowed CPUs were idle"); 0 without allowed CPUs.
    pub stalls_all_other_allowed_idle: u64,
    /// Every stall, in the order their waits returned.
    #[serde(skip_deserializing)]
    pub details: Vec<ClassifiedStall>,
}

/// The wakee's current wait: opened by its first wakeup after it blocked.
#[derive(Clone, Copy, Debug)]
struct Woken {
    ts: Nanos,
    cpu: u32,
    delayed: bool,
    other: Option<(Pid, Arrival, Nanos)>,
    /// Switched in since (on any CPU): stop watching `cpu`.
    ran: bool,
    idle_allowed: Option<u32>,
}

/// Scan state shared by every wakee.
struct Scan<'a> {
    wakees: &'a BTreeSet<Pid>,
    /// Allowed CPUs, sorted and deduplicated.
    allowed: &'a [u32],
    /// Task running on each CPU (0 = idle or not yet seen).
    curr: Vec<Pid>,
    /// pid → (CPU, how, when) of its last arrival.
    arrivals: HashMap<Pid, (u32, Arrival, Nanos)>,
    /// pid → when it last switched out sleeping.
    blocked: HashMap<Pid, Nanos>,
    waits: BTreeMap<Pid, Option<Woken>>,
}

impl Scan<'_> {
    fn curr_on(&self, cpu: u32) -> Pid {
        self.curr.get(cpu as usize).copied().unwrap_or(0)
    }

    fn arrival(&self, pid: Pid, cpu: u32) -> (Arrival, Nanos) {
        match self.arrivals.get(&pid) {
            Some(&(c, how, ts)) if c == cpu => (how, ts),
            _ => (Arrival::NotSeen, 0),
        }
    }

    /// Another wakee running on `cpu` now, with how and when it got there.
    fn other_on(&self, pid: Pid, cpu: u32) -> Option<(Pid, Arrival, Nanos)> {
        let c = self.curr_on(cpu);
        (c != pid && self.wakees.contains(&c)).then(|| {
            let (how, ts) = self.arrival(c, cpu);
            (c, how, ts)
        })
    }

    /// A `Ttwu` or `sched_wakeup` of wakee `pid` on `cpu`.
    fn woken(&mut self, ts: Nanos, pid: Pid, cpu: u32, delayed: bool, authoritative_cpu: bool) {
        let other = self.other_on(pid, cpu);
        let idle_allowed = (!self.allowed.is_empty())
            .then(|| self.allowed.iter().filter(|&&c| c != cpu && self.curr_on(c) == 0).count() as u32);
        let slot = self.waits.entry(pid).or_default();
        match slot {
            None => *slot = Some(Woken { ts, cpu, delayed, other, ran: false, idle_allowed }),
            Some(w) if !w.ran => {
                w.delayed |= delayed;
                if authoritative_cpu && w.cpu != cpu {
                    w.cpu = cpu;
                    w.other = other;
                    w.idle_allowed = idle_allowed;
                }
                w.other = w.other.or(other);
            }
            Some(_) => {}
        }
    }

    /// `next` switched in on `cpu`.
    fn switched_in(&mut self, cpu: u32, next: Pid) {
        let (how, ts) = self.arrival(next, cpu);
        let next_is_wakee = self.wakees.contains(&next);
        for (&pid, slot) in self.waits.iter_mut() {
            let Some(w) = slot else { continue };
            if pid == next {
                w.ran = true;
            } else if next_is_wakee && !w.ran && w.cpu == cpu && w.other.is_none() {
                w.other = Some((next, how, ts));
            }
        }
    }
}

/// Classify the stalls of `opts.wakees` in `trace` (see the module doc).
pub fn stall_breakdown(trace: &Trace, opts: &StallOptions) -> StallBreakdown {
    let events = trace.in_time_order();
    let end = opts.end_ts.unwrap_or_else(|| events.last().map_or(0, |e| e.ts));
    let wakees: BTreeSet<Pid> = opts.wakees.iter().copied().filter(|&p| p != 0).collect();
    let allowed: Vec<u32> = opts.allowed_cpus.iter().copied().collect::<BTreeSet<u32>>().into_iter().collect();
    let mut scan = Scan {
        wakees: &wakees,
        allowed: &allowed,
        curr: vec![0; trace.nr_cpus as usize],
        arrivals: HashMap::default(),
        blocked: HashMap::default(),
        waits: wakees.iter().map(|&p| (p, None)).collect(),
    };
    let mut handoffs = HandoffTracker::default();
    let mut out =
        StallBreakdown { threshold_ns: opts.threshold_ns, top_cpu: opts.top_cpu, ..StallBreakdown::default() };

    for ev in events.iter().take_while(|e| e.ts <= end) {
        match ev.kind {
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                let cpu = ev.cpu as usize;
                if scan.curr.len() <= cpu {
                    scan.curr.resize(cpu + 1, 0);
                }
                scan.curr[cpu] = next_pid;
                if matches!(prev_state, PrevState::Sleeping | PrevState::DiskSleep) {
                    if let Some(slot) = scan.waits.get_mut(&prev_pid) {
                        *slot = None;
                        scan.blocked.insert(prev_pid, ev.ts);
                    }
                }
                scan.switched_in(ev.cpu, next_pid);
            }
            EventKind::Ttwu { pid, path, cpu } if wakees.contains(&pid) => {
                let delayed = path == WakePath::Runnable { delayed: true };
                out.delayed_wakeups_no_select += u64::from(delayed);
                scan.woken(ev.ts, pid, cpu, delayed, false);
            }
            EventKind::SchedWakeup { pid, target_cpu, .. } if wakees.contains(&pid) => {
                out.wakeups += 1;
                scan.woken(ev.ts, pid, target_cpu, false, true);
            }
            EventKind::SchedMigrateTask { pid, dest_cpu, .. } => {
                scan.arrivals.insert(pid, (dest_cpu, Arrival::Wakeup, ev.ts));
            }
            EventKind::LbMigrate { pid, dst_cpu, kind, .. } => {
                scan.arrivals.insert(pid, (dst_cpu, kind.into(), ev.ts));
            }
            EventKind::User { pid, op } => {
                let done = handoffs.event(ev.ts, pid, op, opts.threshold_ns, |_| String::new());
                if !matches!(op, UserOp::WaitDone { .. }) || !wakees.contains(&pid) {
                    continue;
                }
                let woken = scan.waits.get_mut(&pid).and_then(Option::take);
                let Some(h) = done else { continue };
                out.handoffs += 1;
                if h.latency_ns < opts.threshold_ns {
                    continue;
                }
                let woken = woken.filter(|w| w.ts >= h.start_ts);
                let wake_cpu = woken.map(|w| w.cpu);
                let other = woken.and_then(|w| w.other);
                out.details.push(ClassifiedStall {
                    wakee_pid: pid,
                    start_ts: h.start_ts,
                    end_ts: ev.ts,
                    latency_ns: h.latency_ns,
                    wake_cpu,
                    delayed_wakeup: woken.is_some_and(|w| w.delayed),
                    other_pid: other.map(|o| o.0),
                    other_arrival: other.map(|o| o.1),
                    other_arrived_ts: other.map(|o| o.2),
                    wakee_blocked_ts: scan.blocked.get(&pid).copied(),
                    on_top_cpu: wake_cpu.is_some() && wake_cpu == opts.top_cpu,
                    idle_allowed_at_wakeup: woken.and_then(|w| w.idle_allowed),
                });
            }
            _ => {}
        }
    }

    for s in &out.details {
        out.stalls += 1;
        out.stalls_after_delayed_wakeup += u64::from(s.delayed_wakeup);
        if let Some(how) = s.other_arrival {
            out.stalls_behind_other += 1;
            out.stalls_on_top_cpu_behind_other += u64::from(s.on_top_cpu);
            out.stalls_other_moved_by_active_balance += u64::from(how == Arrival::Active);
            let while_asleep = matches!((s.other_arrived_ts, s.wakee_blocked_ts), (Some(a), Some(b)) if a >= b);
            out.stalls_other_moved_by_active_balance_while_asleep += u64::from(how == Arrival::Active && while_asleep);
            *out.other_arrivals.entry(how.as_str().to_string()).or_default() += 1;
        }
        if let (Some(idle), Some(cpu)) = (s.idle_allowed_at_wakeup, s.wake_cpu) {
            let need = allowed.len() as u32 - u32::from(allowed.binary_search(&cpu).is_ok());
            out.stalls_all_other_allowed_idle += u64::from(idle == need);
        }
    }
    out
}

/// Bursts each of `pids` started per CPU: a worker's burst starts when its
/// eventfd read returns (`WaitDone`), on the CPU of that event. Every pid
/// asked for gets an entry, empty if it never returned from a wait.
pub fn burst_starts_per_cpu(trace: &Trace, pids: &[Pid]) -> BTreeMap<Pid, BTreeMap<u32, u64>> {
    let mut out: BTreeMap<Pid, BTreeMap<u32, u64>> = pids.iter().map(|&p| (p, BTreeMap::new())).collect();
    for ev in &trace.events {
        if let EventKind::User { pid, op: UserOp::WaitDone { .. } } = ev.kind {
            if let Some(per_cpu) = out.get_mut(&pid) {
                *per_cpu.entry(ev.cpu).or_default() += 1;
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "stalls_tests.rs"]
mod tests;
