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
use crate::event::{EventKind, Nanos, Trace, UserOp};

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
/// lies in a stretch where no CPU lost events.
///
/// Pairing follows the analysis's eventfd rule: a `signal` opens a handoff
/// on its object unless one is open (the counter absorbs it), `wait_done`
/// closes it. When a gap begins, the open handoffs (and the signals they
/// absorbed) are dropped; markers inside a gap are dropped; after a gap, a
/// `wait_done` on an object with no signal since the gap is dropped. Other
/// markers and events are kept.
pub fn drop_markers_across_gaps(trace: &mut Trace, gaps: &[Gap]) -> GapDrops {
    let mut drops = GapDrops::default();
    if gaps.is_empty() {
        return drops;
    }
    let mut windows: Vec<(Nanos, Nanos)> = gaps.iter().map(|g| (g.start, g.end)).collect();
    windows.sort_unstable();
    let mut order: Vec<usize> = (0..trace.events.len()).collect();
    order.sort_by_key(|&i| trace.events[i].ts);

    let mut drop = vec![false; trace.events.len()];
    // obj → indices of the open handoff's signal and the signals it absorbed.
    let mut open: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    // obj → time of its last kept signal.
    let mut last_signal: BTreeMap<u32, Nanos> = BTreeMap::new();
    let mut last_gap_end: Option<Nanos> = None;
    let mut next_window = 0;
    for i in order {
        let ev = trace.events[i];
        let EventKind::User { op, .. } = ev.kind else { continue };
        let (obj, is_signal) = match op {
            UserOp::Signal { obj } => (obj, true),
            UserOp::WaitDone { obj } => (obj, false),
            _ => continue,
        };
        // Gaps that began at or before this marker close every open handoff.
        while next_window < windows.len() && windows[next_window].0 <= ev.ts {
            for (_, idx) in std::mem::take(&mut open) {
                drops.signals += idx.len();
                for k in idx {
                    drop[k] = true;
                }
            }
            last_gap_end = last_gap_end.max(Some(windows[next_window].1));
            next_window += 1;
        }
        // Every gap begun so far started at or before `ev.ts`: inside one iff
        // before the latest end.
        if last_gap_end.is_some_and(|end| ev.ts <= end) {
            drop[i] = true;
            if is_signal {
                drops.signals += 1;
            } else {
                drops.waits += 1;
            }
            continue;
        }
        if is_signal {
            open.entry(obj).or_default().push(i);
            last_signal.insert(obj, ev.ts);
        } else if open.remove(&obj).is_none() {
            let signalled_since_gap = match (last_gap_end, last_signal.get(&obj)) {
                (None, _) => true,
                (Some(g), Some(&s)) => s > g,
                (Some(_), None) => false,
            };
            if !signalled_since_gap {
                drop[i] = true;
                drops.waits += 1;
            }
        }
    }
    let mut k = 0;
    trace.events.retain(|_| {
        k += 1;
        !drop[k - 1]
    });
    drops
}
