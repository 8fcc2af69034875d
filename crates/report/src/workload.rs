//! Who the workload is in a trace captured elsewhere.
//!
//! A real capture holds the whole machine, so the report first decides
//! which tasks are the workload: with a scenario, the tasks whose comm is
//! one of its thread names (and their affinities come from it); without,
//! the `--wakees`/`--wakers` comm patterns, or else every task that wrote a
//! `schedlab` marker. Handoffs count only from a waker's `signal` to a
//! wakee's `wait_done`. Every other task stays in the trace — its CPU time
//! is what work conservation is about — but gets no row in the tables.

use std::collections::{BTreeMap, BTreeSet};

use schedlab_scenario::Scenario;
use schedlab_trace::{Event, EventKind, Pid, TaskTable, Trace, UserOp};

/// `a*b?` matching on a whole comm.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    match (pat.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob_match(&pat[1..], s) || (!s.is_empty() && glob_match(pat, &s[1..])),
        (Some(b'?'), Some(_)) => glob_match(&pat[1..], &s[1..]),
        (Some(p), Some(c)) if p == c => glob_match(&pat[1..], &s[1..]),
        _ => false,
    }
}

/// Comma-separated comm patterns; `None` matches everything.
pub struct Patterns(Option<Vec<String>>);

impl Patterns {
    pub fn new(arg: Option<&str>) -> Self {
        Patterns(arg.map(|a| a.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()))
    }

    pub fn matches(&self, comm: &str) -> bool {
        self.0.as_ref().is_none_or(|ps| ps.iter().any(|p| glob_match(p.as_bytes(), comm.as_bytes())))
    }
}

/// Who the workload is.
pub struct Workload {
    /// pid → (counted as waker, counted as wakee).
    pub roles: BTreeMap<Pid, (bool, bool)>,
    /// pid → affinity, from the scenario.
    pub allowed: BTreeMap<Pid, Vec<u32>>,
    /// Scenario thread names with no task in the trace.
    pub missing: Vec<String>,
    /// Signals from non-wakers and waits of non-wakees taken out.
    pub ignored_markers: usize,
}

/// The pids a trace's events name (its tasks, the idle task left out) and
/// the pids that wrote a `schedlab` marker: what [`Workload::choose`] needs,
/// gathered one event at a time (with how many events name each, so an
/// event taken out later can be forgotten).
#[derive(Default)]
pub struct TracePids {
    named: BTreeMap<Pid, u64>,
    marker_writers: BTreeMap<Pid, u64>,
}

impl TracePids {
    pub fn observe(&mut self, e: &Event) {
        self.count(e, true);
    }

    /// Take back an [`observe`](Self::observe)d event.
    pub fn forget(&mut self, e: &Event) {
        self.count(e, false);
    }

    fn count(&mut self, e: &Event, add: bool) {
        let bump = |map: &mut BTreeMap<Pid, u64>, p: Pid| {
            if p == 0 {
                return;
            }
            if add {
                *map.entry(p).or_default() += 1;
            } else if let Some(n) = map.get_mut(&p) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&p);
                }
            }
        };
        bump(&mut self.named, e.ctx_pid);
        match e.kind {
            EventKind::SchedSwitch { prev_pid, next_pid, .. } => {
                bump(&mut self.named, prev_pid);
                bump(&mut self.named, next_pid);
            }
            EventKind::SchedWaking { pid, .. }
            | EventKind::SchedWakeup { pid, .. }
            | EventKind::SchedWakeupNew { pid, .. }
            | EventKind::SchedMigrateTask { pid, .. } => bump(&mut self.named, pid),
            EventKind::User { pid, .. } => {
                bump(&mut self.named, pid);
                bump(&mut self.marker_writers, pid);
            }
            _ => {}
        }
    }
}

impl Workload {
    /// Pick the workload's tasks among `pids` (their comms from `table`).
    /// `wakers` and `wakees` are comma-separated comm globs.
    pub fn choose(
        pids: &TracePids,
        table: &TaskTable,
        scenario: Option<&Scenario>,
        wakers_arg: Option<&str>,
        wakees_arg: Option<&str>,
    ) -> Workload {
        let (wakers, wakees) = (Patterns::new(wakers_arg), Patterns::new(wakees_arg));
        let in_events: BTreeSet<Pid> = pids.named.keys().copied().collect();
        let mut w =
            Workload { roles: BTreeMap::new(), allowed: BTreeMap::new(), missing: Vec::new(), ignored_markers: 0 };
        let comm = |pid: Pid| table.comm(pid).to_string();
        if let Some(s) = scenario {
            for t in &s.threads {
                let pids: Vec<Pid> = in_events.iter().copied().filter(|&p| comm(p) == t.name).collect();
                if pids.is_empty() {
                    w.missing.push(t.name.clone());
                }
                for p in pids {
                    w.roles.insert(p, (wakers.matches(&t.name), wakees.matches(&t.name)));
                    w.allowed.insert(p, t.affinity.to_u32_vec());
                }
            }
            // Threads a `fork` created: named after their table.
            for &p in &in_events {
                if w.roles.contains_key(&p) {
                    continue;
                }
                if let Some(t) = s.forked_spec(&comm(p)) {
                    w.roles.insert(p, (wakers.matches(&t.name), wakees.matches(&t.name)));
                    w.allowed.insert(p, t.affinity.to_u32_vec());
                }
            }
        } else if wakers_arg.is_some() || wakees_arg.is_some() {
            for &p in &in_events {
                let c = comm(p);
                let role = (wakers_arg.is_some() && wakers.matches(&c), wakees_arg.is_some() && wakees.matches(&c));
                if role.0 || role.1 {
                    w.roles.insert(p, role);
                }
            }
        } else {
            let writers: BTreeSet<Pid> = pids.marker_writers.keys().copied().collect();
            let pids = if writers.is_empty() { &in_events } else { &writers };
            w.roles = pids.iter().map(|&p| (p, (true, true))).collect();
        }
        w
    }

    /// Whether the analysis keeps `e`: every event but the `signal` markers
    /// of non-wakers and the `wait_done` markers of non-wakees.
    pub fn keeps(&self, e: &Event) -> bool {
        match e.kind {
            EventKind::User { pid, op: UserOp::Signal { .. } } => self.roles.get(&pid).is_some_and(|r| r.0),
            EventKind::User { pid, op: UserOp::WaitDone { .. } } => self.roles.get(&pid).is_some_and(|r| r.1),
            _ => true,
        }
    }
}

/// Pick the workload's tasks and take out the markers that are not its
/// handoffs. `wakers` and `wakees` are comma-separated comm globs.
pub fn select_workload(
    trace: &mut Trace,
    scenario: Option<&Scenario>,
    wakers_arg: Option<&str>,
    wakees_arg: Option<&str>,
) -> Workload {
    let mut pids = TracePids::default();
    trace.events.iter().for_each(|e| pids.observe(e));
    let mut w = Workload::choose(&pids, &trace.table, scenario, wakers_arg, wakees_arg);
    let before = trace.events.len();
    trace.events.retain(|e| w.keeps(e));
    w.ignored_markers = before - trace.events.len();
    w
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_whole_comms() {
        assert!(glob_match(b"worker-*", b"worker-0"));
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"p?ng", b"pong"));
        assert!(!glob_match(b"p?ng", b"ping-1"));
        assert!(!glob_match(b"worker", b"worker-0"));
        assert!(glob_match(b"*-1", b"worker-1"));
    }
}
