//! The fairness-spread property: identical CPU hogs sharing one runqueue
//! getting CPU time that spreads beyond a band.
//!
//! What the kernel promises is EEVDF's: entities of equal weight that stay
//! runnable on one runqueue receive equal service, each within about a
//! slice plus a tick of its share (the lag bound). It promises nothing
//! across CPUs. The balancer evens out load at its own pace and by its
//! averages: six hogs confined to CPUs 0-2 of qemu-4, placed 3 : 2 : 1,
//! stay so for 240 ms in the model, because CPU 3 idles but may not take
//! them, pulling the domain's average load down to 1.5 tasks, so that
//! `calculate_imbalance()` asks CPU 2 for half a task's load and
//! `detach_tasks()` will not move a whole task for that until
//! `nr_balance_failed` has halved the task's load in its test (fair.c,
//! 6.12), one busy balance interval (64 ms and more) per try. Eight hogs
//! on smt-2x2 spread 463-565 ms of CPU over a second the same way. Both
//! are the kernel's rules. So the property is judged per runqueue:
//!
//! * *peers*: threads with the same program made of `run` (and `yield`)
//!   ops only, looped, the same fair policy and nice, the same start delay
//!   and the same affinity (the kernel cannot tell them apart); no other
//!   workload thread may use their CPUs and the scenario has no background
//!   kernel work, so what shares a runqueue with them is only each other;
//! * a *segment*: a stretch of at least [`MIN_SEGMENT_NS`] during which
//!   the same two or more peers are queued on one CPU (hogs never sleep, so
//!   only a migration changes it);
//! * the property fails when, in a segment, the most and the least served
//!   peer differ by more than the band (in percent of the share, segment /
//!   peers) and by more than [`FLOOR_NS`], two turns of the lag bound.

use std::collections::BTreeMap;

use schedlab_scenario::{Op, Policy, Repeat, Scenario, ThreadSpec};
use schedlab_trace::{Event, EventKind, Nanos, Pid};

use crate::check::{Class, Finding};

/// A group of threads the kernel cannot tell apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerGroup {
    pub pids: Vec<Pid>,
}

fn is_hog(t: &ThreadSpec) -> bool {
    matches!(t.policy, Policy::Other | Policy::Batch)
        && t.program.repeat == Repeat::Forever
        && t.slice_ns.is_none()
        && !t.program.ops.is_empty()
        && t.program.ops.iter().all(|op| matches!(op, Op::Run { .. } | Op::Yield))
        && t.program.ops.iter().any(|op| matches!(op, Op::Run { .. }))
}

fn alike(a: &ThreadSpec, b: &ThreadSpec) -> bool {
    a.policy == b.policy
        && a.nice == b.nice
        && a.affinity == b.affinity
        && a.start_delay_ns == b.start_delay_ns
        && a.program == b.program
}

/// The scenario's groups whose fairness is determined (the module's
/// rules); `pid_of` maps a thread's name to its pid in the run.
pub fn peer_groups(scenario: &Scenario, pid_of: &BTreeMap<String, Pid>) -> Vec<PeerGroup> {
    if scenario.background != schedlab_scenario::Background::Quiet {
        return Vec::new();
    }
    let threads = &scenario.threads;
    let mut seen = vec![false; threads.len()];
    let mut out = Vec::new();
    for i in 0..threads.len() {
        if seen[i] || !is_hog(&threads[i]) {
            continue;
        }
        let members: Vec<usize> = (i..threads.len()).filter(|&j| !seen[j] && alike(&threads[i], &threads[j])).collect();
        for &j in &members {
            seen[j] = true;
        }
        if members.len() < 2 {
            continue;
        }
        let exclusive = threads
            .iter()
            .enumerate()
            .filter(|(k, _)| !members.contains(k))
            .all(|(_, t)| t.affinity.iter().all(|c| !threads[i].affinity.contains(c)));
        if !exclusive {
            continue;
        }
        let Some(pids) = members.iter().map(|&j| pid_of.get(&threads[j].name).copied()).collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        out.push(PeerGroup { pids });
    }
    out
}

/// Shortest segment judged: several balance intervals and tens of turns.
pub const MIN_SEGMENT_NS: u64 = 100_000_000;
/// The smallest spread that fails: two turns of a slice plus a tick at
/// HZ 250 (EEVDF's lag bound, twice).
pub const FLOOR_NS: u64 = 10_000_000;

/// Per peer: where it is queued and how much it has run.
#[derive(Clone, Copy, Default)]
struct Peer {
    cpu: Option<u32>,
    ran_ns: u64,
    /// Running since (on its CPU), if it is.
    since: Option<Nanos>,
}

impl Peer {
    fn ran_by(&self, ts: Nanos) -> u64 {
        self.ran_ns + self.since.map_or(0, |s| ts.saturating_sub(s))
    }
}

/// An open segment of one CPU: since when, and each member's service then.
struct Open {
    since: Nanos,
    at_start: BTreeMap<Pid, u64>,
}

/// A closed segment: two or more peers queued on `cpu` from `start_ns` to
/// `end_ns`, at least [`MIN_SEGMENT_NS`], and what each ran in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub cpu: u32,
    pub start_ns: Nanos,
    pub end_ns: Nanos,
    pub served: Vec<(Pid, u64)>,
}

impl Segment {
    /// Each peer's fair share of the segment.
    pub fn share_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns) / self.served.len().max(1) as u64
    }

    /// (least served, most served); ties go to the lower pid, so the
    /// same trace names the same peers. (0, 0) twice for no peers.
    pub fn extremes(&self) -> ((Pid, u64), (Pid, u64)) {
        let least = self.served.iter().min_by_key(|(p, t)| (*t, *p)).copied().unwrap_or_default();
        let most = self.served.iter().max_by_key(|(p, t)| (*t, std::cmp::Reverse(*p))).copied().unwrap_or_default();
        (least, most)
    }

    /// The spread, most minus least served, in percent of the share.
    pub fn spread_pct(&self) -> u64 {
        let ((_, lo), (_, hi)) = self.extremes();
        (hi - lo) * 100 / self.share_ns().max(1)
    }
}

/// The judged segments of `groups` over `events` (time order) up to `end_ns`.
pub fn segments(events: &[Event], groups: &[PeerGroup], end_ns: Nanos) -> Vec<Segment> {
    let mut peers: BTreeMap<Pid, Peer> =
        groups.iter().flat_map(|g| g.pids.iter().map(|&p| (p, Peer::default()))).collect();
    let mut out = Vec::new();
    if peers.is_empty() {
        return out;
    }
    let mut open: BTreeMap<u32, Open> = BTreeMap::new();
    let close = |cpu: u32, seg: &Open, ts: Nanos, peers: &BTreeMap<Pid, Peer>, out: &mut Vec<Segment>| {
        if ts.saturating_sub(seg.since) >= MIN_SEGMENT_NS && seg.at_start.len() >= 2 {
            let served = seg.at_start.iter().map(|(p, at)| (*p, peers[p].ran_by(ts).saturating_sub(*at))).collect();
            out.push(Segment { cpu, start_ns: seg.since, end_ns: ts, served });
        }
    };
    // Close `cpu`'s segment at `ts` and open the next with whoever is queued there.
    let reopen =
        |cpu: u32, ts: Nanos, peers: &BTreeMap<Pid, Peer>, open: &mut BTreeMap<u32, Open>, out: &mut Vec<Segment>| {
            if let Some(seg) = open.remove(&cpu) {
                close(cpu, &seg, ts, peers, out);
            }
            let at_start = peers.iter().filter(|(_, q)| q.cpu == Some(cpu)).map(|(p, q)| (*p, q.ran_by(ts))).collect();
            open.insert(cpu, Open { since: ts, at_start });
        };
    for e in events.iter().take_while(|e| e.ts <= end_ns) {
        let moved = match e.kind {
            EventKind::SchedSwitch { prev_pid, next_pid, .. } => {
                if let Some(q) = peers.get_mut(&prev_pid) {
                    q.ran_ns = q.ran_by(e.ts);
                    q.since = None;
                }
                match peers.get_mut(&next_pid) {
                    Some(q) => {
                        q.since = Some(e.ts);
                        // A peer seen running where it was not known to be queued.
                        (q.cpu != Some(e.cpu)).then(|| (q.cpu.replace(e.cpu), e.cpu))
                    }
                    None => None,
                }
            }
            EventKind::SchedWakeupNew { pid, target_cpu, .. } | EventKind::SchedWakeup { pid, target_cpu, .. } => {
                peers.get_mut(&pid).and_then(|q| {
                    let old = q.cpu.replace(target_cpu);
                    (old != Some(target_cpu)).then_some((old, target_cpu))
                })
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } => peers.get_mut(&pid).map(|q| {
                q.ran_ns = q.ran_by(e.ts);
                q.since = q.since.map(|_| e.ts);
                q.cpu = Some(dest_cpu);
                (Some(orig_cpu), dest_cpu)
            }),
            _ => None,
        };
        if let Some((from, to)) = moved {
            for c in from.into_iter().chain([to]) {
                reopen(c, e.ts, &peers, &mut open, &mut out);
            }
        }
    }
    for (cpu, seg) in &open {
        close(*cpu, seg, end_ns, &peers, &mut out);
    }
    out
}

/// Check the groups over `events` (time order) up to `end_ns`: the worst
/// segment whose spread exceeds `band_pct` percent of the share and
/// [`FLOOR_NS`], as a finding.
pub fn check_fairness(
    events: &[Event],
    groups: &[PeerGroup],
    end_ns: Nanos,
    band_pct: u64,
    names: &BTreeMap<Pid, String>,
) -> Option<Finding> {
    let failing = segments(events, groups, end_ns).into_iter().filter(|s| {
        let ((_, lo), (_, hi)) = s.extremes();
        hi - lo > FLOOR_NS && s.spread_pct() > band_pct
    });
    // The worst; the first of equals (segments come in time order).
    let worst = failing.fold(None::<Segment>, |w, s| match w {
        Some(w) if w.spread_pct() >= s.spread_pct() => Some(w),
        _ => Some(s),
    })?;
    let ((least, lo), (most, hi)) = worst.extremes();
    let name = |p: Pid| names.get(&p).cloned().unwrap_or_else(|| p.to_string());
    let ms = |ns: u64| format!("{:.1} ms", ns as f64 / 1e6);
    Some(Finding {
        class: Class::FairnessSpread,
        pid: least,
        start_ns: worst.start_ns,
        end_ns: worst.end_ns,
        cpu: worst.cpu,
        behind: Some(most),
        other_cpu: None,
        other_pid: None,
        message: format!(
            "{} ran {} and {} {} while {} identical hogs shared CPU {} for {} (a share of {} each): a spread of {} % \
             of the share, over the band of {band_pct} %",
            name(least),
            ms(lo),
            name(most),
            ms(hi),
            worst.served.len(),
            worst.cpu,
            ms(worst.end_ns - worst.start_ns),
            ms(worst.share_ns()),
            worst.spread_pct()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_trace::PrevState;

    fn ev(ts: Nanos, cpu: u32, kind: EventKind) -> Event {
        Event { ts, cpu, ctx_pid: 0, flags: *b"d..2.", kind }
    }

    fn switch(ts: Nanos, cpu: u32, prev: Pid, next: Pid) -> Event {
        let prev_state = PrevState::Running { preempt: true };
        ev(
            ts,
            cpu,
            EventKind::SchedSwitch { prev_pid: prev, prev_prio: 120, prev_state, next_pid: next, next_prio: 120 },
        )
    }

    fn start(ts: Nanos, cpu: u32, pid: Pid) -> Event {
        ev(ts, cpu, EventKind::SchedWakeupNew { pid, prio: 120, target_cpu: cpu })
    }

    /// Hogs 1 and 2 started on CPU 0, sharing it in turns of `a` and `b` ns until `end`.
    fn turns(a: u64, b: u64, end: u64) -> Vec<Event> {
        let mut v = vec![start(0, 0, 1), start(0, 0, 2), switch(0, 0, 0, 1)];
        let mut t = 0;
        while t < end {
            v.push(switch(t + a, 0, 1, 2));
            v.push(switch(t + a + b, 0, 2, 1));
            t += a + b;
        }
        v
    }

    fn group() -> Vec<PeerGroup> {
        vec![PeerGroup { pids: vec![1, 2] }]
    }

    fn names() -> BTreeMap<Pid, String> {
        BTreeMap::from([(1, "h0".to_string()), (2, "h1".to_string())])
    }

    #[test]
    fn equal_turns_pass_and_a_two_to_one_split_fails() {
        assert_eq!(
            check_fairness(&turns(3_000_000, 3_000_000, 300_000_000), &group(), 300_000_000, 20, &names()),
            None
        );
        let f = check_fairness(&turns(4_000_000, 2_000_000, 300_000_000), &group(), 300_000_000, 20, &names()).unwrap();
        assert_eq!((f.class, f.pid, f.behind, f.cpu), (Class::FairnessSpread, 2, Some(1), 0));
        assert_eq!((f.start_ns, f.end_ns), (0, 300_000_000));
        assert!(
            f.message.starts_with("h1 ran 100.0 ms and h0 200.0 ms while 2 identical hogs shared CPU 0 for 300.0 ms"),
            "{}",
            f.message
        );
        assert!(f.message.contains("a spread of 66 %"), "{}", f.message);
        // A wider band lets it pass; so does a segment too short to judge.
        assert_eq!(
            check_fairness(&turns(4_000_000, 2_000_000, 300_000_000), &group(), 300_000_000, 70, &names()),
            None
        );
        assert_eq!(check_fairness(&turns(4_000_000, 2_000_000, 90_000_000), &group(), 90_000_000, 20, &names()), None);
    }

    #[test]
    fn a_migration_ends_the_segment_and_time_apart_is_not_compared() {
        // 2:1 turns on CPU 0 for 50 ms, then hog 2 moves to CPU 1 and each
        // runs alone: no segment of two peers lasts 100 ms, nothing fails.
        let mut v = turns(4_000_000, 2_000_000, 48_000_000);
        v.retain(|e| e.ts <= 48_000_000);
        v.push(ev(48_000_000, 0, EventKind::SchedMigrateTask { pid: 2, prio: 120, orig_cpu: 0, dest_cpu: 1 }));
        v.push(switch(48_000_000, 1, 0, 2));
        assert_eq!(check_fairness(&v, &group(), 400_000_000, 20, &names()), None);
    }
}
