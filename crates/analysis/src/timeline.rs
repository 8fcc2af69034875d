//! Per-CPU occupancy from `sched_switch`: which task was `rq->curr` on each
//! CPU at every moment of the window, as the trace shows it.
//!
//! A CPU is *idle* while its current task is the idle task (pid 0,
//! `swapper/N`), exactly as `sched_switch` reports it: a CPU that has been
//! sent a wakeup but has not yet switched away from its idle task (IPI in
//! flight, leaving a C-state) is still idle here.
//!
//! Before the first `sched_switch` on a CPU its current task is that switch's
//! `prev_pid`; a CPU without any switch runs the task in whose context its
//! first event was emitted (`ctx_pid`), and a CPU without any event at all is
//! idle for the whole window (the idle task emits no sched events).

use schedlab_trace::{Event, EventKind, Nanos, Pid};

/// One stretch of time during which `pid` was current on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub start: Nanos,
    pub end: Nanos,
    pub pid: Pid,
    /// Kernel prio as `sched_switch` prints it (0-99 RT/stop, 100-139 fair,
    /// 120 when the trace does not say).
    pub prio: i32,
}

/// Every CPU's segments, contiguous and covering `[start, end]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct CpuTimeline {
    pub cpus: Vec<Vec<Segment>>,
}

impl CpuTimeline {
    /// Build from time-ordered `events` for CPUs `0..nr_cpus` (more if an
    /// event names a higher CPU); events after `end` are ignored.
    pub fn build(events: &[Event], nr_cpus: u32, start: Nanos, end: Nanos) -> Self {
        let init = initial_occupants(events, nr_cpus, end);
        let mut cpus: Vec<Vec<Segment>> =
            init.iter().map(|&(pid, prio)| vec![Segment { start, end, pid, prio }]).collect();
        for ev in events.iter().take_while(|e| e.ts <= end) {
            if let EventKind::SchedSwitch { next_pid, next_prio, .. } = ev.kind {
                let segs = &mut cpus[ev.cpu as usize];
                let ts = ev.ts.max(start);
                let last = segs.last_mut().expect("every CPU has a segment");
                if last.start == ts {
                    // Zero-length occupant (several switches at one instant).
                    last.pid = next_pid;
                    last.prio = next_prio;
                } else {
                    last.end = ts;
                    segs.push(Segment { start: ts, end, pid: next_pid, prio: next_prio });
                }
            }
        }
        for segs in &mut cpus {
            // Merge neighbours with the same occupant (a zero-length visitor in between).
            segs.dedup_by(|b, a| {
                if a.pid == b.pid && a.end == b.start {
                    a.end = b.end;
                    true
                } else {
                    false
                }
            });
        }
        CpuTimeline { cpus }
    }

    /// Segments of `cpu` overlapping `[a, b)`, clipped to it. Empty for a CPU
    /// the trace does not know.
    pub fn overlapping(&self, cpu: u32, a: Nanos, b: Nanos) -> impl Iterator<Item = Segment> + '_ {
        let segs: &[Segment] = self.cpus.get(cpu as usize).map_or(&[], |v| v.as_slice());
        let first = segs.partition_point(|s| s.end <= a);
        segs[first..].iter().take_while(move |s| s.start < b).filter_map(move |s| {
            let (start, end) = (s.start.max(a), s.end.min(b));
            (start < end).then_some(Segment { start, end, ..*s })
        })
    }

    /// The task current on `cpu` at `t` (the later occupant at a switch
    /// instant); `None` for an unknown CPU.
    pub fn curr_at(&self, cpu: u32, t: Nanos) -> Option<Pid> {
        let segs = self.cpus.get(cpu as usize)?;
        let i = segs.partition_point(|s| s.end <= t).min(segs.len().checked_sub(1)?);
        Some(segs[i].pid)
    }

    /// Time `cpu` was idle within `[a, b)`.
    pub fn idle_ns(&self, cpu: u32, a: Nanos, b: Nanos) -> u64 {
        self.overlapping(cpu, a, b).filter(|s| s.pid == 0).map(|s| s.end - s.start).sum()
    }
}

/// Per-CPU kernel threads are bound to the CPU their comm names
/// (`migration/N`, `ksoftirqd/N`, `cpuhp/N`, `kworker/N:M`, ...): the CPU, or
/// `None` for any other comm (unbound kworkers are `kworker/uN:M`).
pub fn percpu_kthread_cpu(comm: &str) -> Option<u32> {
    const BOUND: [&str; 9] = [
        "migration/",
        "ksoftirqd/",
        "cpuhp/",
        "idle_inject/",
        "kworker/",
        "rcuc/",
        "watchdog/",
        "posixcputmr/",
        "irq_work/",
    ];
    let rest = BOUND.iter().find_map(|p| comm.strip_prefix(p))?;
    let digits: &str = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
    let tail = &rest[digits.len()..];
    if digits.is_empty() || !(tail.is_empty() || (comm.starts_with("kworker/") && tail.starts_with(':'))) {
        return None;
    }
    digits.parse().ok()
}

/// A cpulist the way the kernel prints one (`%*pbl`, /sys cpulist files):
/// `2,4-7`, and `0-1` for two neighbours — as `CpuSet::to_cpulist` does.
pub fn cpulist(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if j > i { format!("{}-{}", v[i], v[j]) } else { v[i].to_string() });
        i = j + 1;
    }
    parts.join(",")
}

/// Each CPU's occupant and its prio when the window opens, from
/// time-ordered events: its first switch's `prev_pid`, else the context of
/// its first event (prio unknown: 120), else idle; one entry per CPU up to
/// the highest any event names. Events after `end` are ignored.
pub(crate) fn initial_occupants(events: &[Event], nr_cpus: u32, end: Nanos) -> Vec<(Pid, i32)> {
    let max_cpu = events.iter().map(|e| e.cpu + 1).max().unwrap_or(0);
    let mut first = FirstOccupants::default();
    events.iter().take_while(|e| e.ts <= end).for_each(|e| first.observe(e));
    first.finish(nr_cpus.max(max_cpu))
}

/// Each CPU's occupant when a trace begins, learned one event at a time:
/// the `prev` of its first switch, else the context of its first event.
#[derive(Clone, Debug, Default)]
pub struct FirstOccupants {
    /// Per CPU: (pid, prio, whether a switch said so).
    slots: Vec<Option<(Pid, i32, bool)>>,
}

impl FirstOccupants {
    pub fn observe(&mut self, ev: &Event) {
        let cpu = ev.cpu as usize;
        if self.slots.len() <= cpu {
            self.slots.resize(cpu + 1, None);
        }
        let slot = &mut self.slots[cpu];
        match (ev.kind, *slot) {
            (EventKind::SchedSwitch { prev_pid, prev_prio, .. }, None | Some((_, _, false))) => {
                *slot = Some((prev_pid, prev_prio, true));
            }
            (_, None) => *slot = Some((ev.ctx_pid, 120, false)),
            _ => {}
        }
    }

    /// (pid, prio) for CPUs `0..nr_cpus` and any higher CPU an event named
    /// (0 and 120 for a CPU without events: idle).
    pub fn finish(mut self, nr_cpus: u32) -> Vec<(Pid, i32)> {
        let n = self.slots.len().max(nr_cpus as usize);
        self.slots.resize(n, None);
        self.slots.into_iter().map(|i| i.map_or((0, 120), |(p, prio, _)| (p, prio))).collect()
    }
}
