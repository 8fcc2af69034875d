//! Where a captured trace is incomplete, and keeping handoffs from being
//! invented across those stretches.
//!
//! A real capture misses events when a CPU's ring buffer overflows: tracefs
//! prints `CPU:N [LOST M EVENTS]` (trace-cmd `[M EVENTS DROPPED]`) before the
//! CPU's next event, and a `trace` file read after the buffer wrapped says
//! `entries-in-buffer/entries-written: B/W` with W > B, each CPU's data then
//! starting at a different time. A handoff is a `schedlab signal` marker
//! paired with the next `schedlab wait_done` on the same object; if either
//! end fell into a gap, pairing the markers that remain would report a
//! handoff that never happened (typically a "stall" one period long). So the
//! markers whose pairing could straddle a gap are taken out before analysis,
//! and counted.

use std::collections::BTreeMap;

use super::parse::ParseStats;
use crate::event::{Event, EventKind, Nanos, Trace, UserOp};

/// A stretch of time during which the trace misses some CPU's events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// The CPU whose events are missing; `None` for the start of a wrapped
    /// buffer (any CPU).
    pub cpu: Option<u32>,
    /// The line of the lost-events marker (0: the header's entry counts).
    pub line: usize,
    /// Events lost, when known.
    pub lost: Option<u64>,
    /// The stretch `[start, end]`: the CPU's last event before the loss to its
    /// first event after it (the trace's first or last event when there is
    /// none on that side).
    pub start: Nanos,
    pub end: Nanos,
}

/// The gaps of a parsed trace: one per lost-events marker, plus one at the
/// start when the header says events were overwritten (from the trace's
/// first event to the latest first event of any CPU, before which some CPU's
/// data is missing).
pub fn gaps(trace: &Trace, stats: &ParseStats) -> Vec<Gap> {
    let first = trace.events.iter().map(|e| e.ts).min();
    let last = trace.events.iter().map(|e| e.ts).max();
    gaps_between(first, last, stats)
}

/// [`gaps`] of a trace read as a stream, whose events' earliest and latest
/// timestamps are `first` and `last`.
pub fn gaps_between(first: Option<Nanos>, last: Option<Nanos>, stats: &ParseStats) -> Vec<Gap> {
    let (Some(first), Some(last)) = (first.min(stats.cpu_first_ts.values().min().copied()), last) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if stats.overwritten() > 0 {
        let end = stats.cpu_first_ts.values().max().copied().unwrap_or(first);
        out.push(Gap { cpu: None, line: 0, lost: Some(stats.overwritten()), start: first, end });
    }
    for l in &stats.lost {
        let start = l.after_ts.unwrap_or(first);
        let end = l.before_ts.unwrap_or(last).max(start);
        out.push(Gap { cpu: Some(l.cpu), line: l.line, lost: l.count, start, end });
    }
    out
}

/// What [`drop_markers_across_gaps`] took out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GapDrops {
    /// `signal` markers removed: inside a gap, or still waiting for their
    /// `wait_done` when a gap began.
    pub signals: usize,
    /// `wait_done` markers removed: inside a gap, or after one before any new
    /// `signal` on their object (their signal may have been lost).
    pub waits: usize,
}

/// Remove the `signal`/`wait_done` markers of `trace` whose pairing could
/// straddle one of `gaps`, so that every handoff analysis pairs afterwards
/// lies in a stretch where no CPU lost events ([`GapPairing`]'s rule, over
/// the markers in time order).
pub fn drop_markers_across_gaps(trace: &mut Trace, gaps: &[Gap]) -> GapDrops {
    if gaps.is_empty() {
        return GapDrops::default();
    }
    let mut order: Vec<usize> = (0..trace.events.len()).collect();
    order.sort_by_key(|&i| trace.events[i].ts);
    let mut pairing = GapPairing::new(gaps);
    let mut drop = vec![false; trace.events.len()];
    for i in order {
        pairing.marker(i, &trace.events[i], |k| drop[k] = true);
    }
    let mut k = 0;
    trace.events.retain(|_| {
        k += 1;
        !drop[k - 1]
    });
    pairing.drops
}

/// Which markers [`drop_markers_across_gaps`] takes out, decided one marker
/// at a time so a trace can be read as a stream: its state is the open
/// handoffs and each object's last signal, never the whole trace.
///
/// Pairing follows the analysis's eventfd rule: a `signal` opens a handoff
/// on its object unless one is open (the counter absorbs it), `wait_done`
/// closes it. When a gap begins, the open handoffs (and the signals they
/// absorbed) are dropped; markers inside a gap are dropped; after a gap, a
/// `wait_done` on an object with no signal since the gap is dropped. Other
/// markers and events are kept.
pub struct GapPairing<Id = u64> {
    windows: Vec<(Nanos, Nanos)>,
    next_window: usize,
    /// obj → ids of the open handoff's signal and the signals it absorbed.
    open: BTreeMap<u32, Vec<Id>>,
    /// obj → time of its last kept signal.
    last_signal: BTreeMap<u32, Nanos>,
    last_gap_end: Option<Nanos>,
    /// What was taken out so far.
    pub drops: GapDrops,
}

impl<Id: Copy> GapPairing<Id> {
    pub fn new(gaps: &[Gap]) -> Self {
        let mut windows: Vec<(Nanos, Nanos)> = gaps.iter().map(|g| (g.start, g.end)).collect();
        windows.sort_unstable();
        GapPairing {
            windows,
            next_window: 0,
            open: BTreeMap::new(),
            last_signal: BTreeMap::new(),
            last_gap_end: None,
            drops: GapDrops::default(),
        }
    }

    /// The next event in time order, named `id` by the caller; `drop` is
    /// called with the id of every marker taken out (this one, or earlier
    /// signals a gap leaves unpaired). Events other than `signal` and
    /// `wait_done` are ignored.
    pub fn marker(&mut self, id: Id, ev: &Event, mut drop: impl FnMut(Id)) {
        let EventKind::User { op, .. } = ev.kind else { return };
        let (obj, is_signal) = match op {
            UserOp::Signal { obj } => (obj, true),
            UserOp::WaitDone { obj } => (obj, false),
            _ => return,
        };
        // Gaps that began at or before this marker close every open handoff.
        while self.next_window < self.windows.len() && self.windows[self.next_window].0 <= ev.ts {
            for (_, ids) in std::mem::take(&mut self.open) {
                self.drops.signals += ids.len();
                ids.into_iter().for_each(&mut drop);
            }
            self.last_gap_end = self.last_gap_end.max(Some(self.windows[self.next_window].1));
            self.next_window += 1;
        }
        // Every gap begun so far started at or before `ev.ts`: inside one iff
        // before the latest end.
        if self.last_gap_end.is_some_and(|end| ev.ts <= end) {
            drop(id);
            if is_signal {
                self.drops.signals += 1;
            } else {
                self.drops.waits += 1;
            }
            return;
        }
        if is_signal {
            self.open.entry(obj).or_default().push(id);
            self.last_signal.insert(obj, ev.ts);
        } else if self.open.remove(&obj).is_none() {
            let signalled_since_gap = match (self.last_gap_end, self.last_signal.get(&obj)) {
                (None, _) => true,
                (Some(g), Some(&s)) => s > g,
                (Some(_), None) => false,
            };
            if !signalled_since_gap {
                drop(id);
                self.drops.waits += 1;
            }
        }
    }
}
