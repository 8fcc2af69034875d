//! Handoffs between workload threads, from `User` (trace_marker) events.

use rustc_hash::FxHashMap as HashMap;

use schedlab_trace::{Nanos, Pid, UserOp};
use serde::Serialize;

use crate::sketch::{SketchSet, EXACT_SAMPLES_PER_RUN};

/// A handoff at or above the stall threshold, kept for attribution.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stall {
    /// Object index (`TaskTable::objects`) and its name.
    pub obj: u32,
    pub obj_name: String,
    /// When the waker signalled (handoff start) and the wakee's wait returned.
    pub start_ts: Nanos,
    pub end_ts: Nanos,
    pub latency_ns: u64,
    pub waker_pid: Pid,
    pub wakee_pid: Pid,
}

/// One completed handoff: a signal on `obj` and the wait on it returning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handoff {
    pub start_ts: Nanos,
    pub latency_ns: u64,
    pub waker_pid: Pid,
    pub wakee_pid: Pid,
}

/// Stalls a report keeps one by one, in the order they ended, unless told
/// otherwise (`with_kept_stalls`; `--stalls N` asks for more): the text
/// report prints the first few stories, `--json` these. Every stall is
/// counted, and the cause table and the longest stalls
/// ([`LONGEST_STALLS`]) are over all of them; a run's memory then does not
/// grow with its stalls (asym_min-2cpu makes ~880 a simulated second).
pub const KEPT_STALLS: usize = 1000;

/// The longest stalls a report lists, whatever it keeps.
pub const LONGEST_STALLS: usize = 5;

/// Pairs signals with waits per object.
pub(crate) struct HandoffTracker {
    /// obj → (start, waker) of the handoff in flight.
    pending: HashMap<u32, (Nanos, Pid)>,
    /// wakee pid → latency samples, exact for half of [`EXACT_SAMPLES_PER_RUN`];
    /// `None`: the handoffs are only paired (the attribution's trackers).
    pub samples: Option<SketchSet>,
    /// The first `kept` stalls, in the order they ended.
    pub stalls: Vec<Stall>,
    kept: usize,
    /// Stalls after the first `kept`: counted, not kept.
    pub stalls_not_kept: u64,
    /// The [`LONGEST_STALLS`] longest, longest first (ties: the earlier signal,
    /// then the one that ended first).
    pub longest: Vec<Stall>,
    /// Waits that returned with no signal pending (counter set before the
    /// trace started, or a lost event).
    pub unmatched_waits: u64,
}

impl Default for HandoffTracker {
    /// A tracker that only pairs signals with waits: no samples, no stalls.
    fn default() -> Self {
        HandoffTracker {
            pending: HashMap::default(),
            samples: None,
            stalls: Vec::new(),
            kept: 0,
            stalls_not_kept: 0,
            longest: Vec::new(),
            unmatched_waits: 0,
        }
    }
}

impl HandoffTracker {
    /// A tracker that keeps the latency samples (counting those at or
    /// above `threshold_ns`) and the first [`KEPT_STALLS`] stalls.
    pub fn with_threshold(threshold_ns: u64) -> Self {
        HandoffTracker {
            samples: Some(SketchSet::new(threshold_ns, EXACT_SAMPLES_PER_RUN / 2)),
            kept: KEPT_STALLS,
            ..HandoffTracker::default()
        }
    }

    /// Keep the first `n` stalls instead of [`KEPT_STALLS`].
    pub fn keep_stalls(&mut self, n: usize) {
        self.kept = n;
    }

    fn record(&mut self, stall: Stall) {
        // After every stall of equal rank: a stable sort of them all.
        let key = |s: &Stall| (std::cmp::Reverse(s.latency_ns), s.start_ts);
        let at = self.longest.partition_point(|s| key(s) <= key(&stall));
        if at < LONGEST_STALLS {
            self.longest.insert(at, stall.clone());
            self.longest.truncate(LONGEST_STALLS);
        }
        if self.stalls.len() < self.kept {
            self.stalls.push(stall);
        } else {
            self.stalls_not_kept += 1;
        }
    }

    /// `Signal` starts a handoff on eventfd `obj` unless one is pending (the
    /// counter absorbs repeated signals: the wakee sees the first); `WaitDone`
    /// ends the pending one. Flags (`Post`/`PollDone`) are not handoffs: a
    /// poller spins on a CPU and is never woken, and seed 000 counts only the
    /// eventfd write → read return. Returns the handoff a `WaitDone` completed.
    pub fn event(
        &mut self,
        ts: Nanos,
        pid: Pid,
        op: UserOp,
        threshold: u64,
        obj_name: impl Fn(u32) -> String,
    ) -> Option<Handoff> {
        match op {
            UserOp::Signal { obj } => {
                self.pending.entry(obj).or_insert((ts, pid));
                None
            }
            UserOp::WaitDone { obj } => match self.pending.remove(&obj) {
                Some((start, waker)) => {
                    let lat = ts.saturating_sub(start);
                    if let Some(samples) = self.samples.as_mut() {
                        samples.push(pid, lat);
                    }
                    if lat >= threshold && self.samples.is_some() {
                        self.record(Stall {
                            obj,
                            obj_name: obj_name(obj),
                            start_ts: start,
                            end_ts: ts,
                            latency_ns: lat,
                            waker_pid: waker,
                            wakee_pid: pid,
                        });
                    }
                    Some(Handoff { start_ts: start, latency_ns: lat, waker_pid: waker, wakee_pid: pid })
                }
                None => {
                    self.unmatched_waits += 1;
                    None
                }
            },
            UserOp::Post { .. }
            | UserOp::PollDone { .. }
            | UserOp::Lock { .. }
            | UserOp::Unlock { .. }
            | UserOp::LoopEnd { .. }
            | UserOp::RtAppLoop { .. }
            | UserOp::RtAppStats { .. } => None,
        }
    }

    /// Handoffs signalled but not yet received when the trace ended.
    pub fn open_at_end(&self) -> u64 {
        self.pending.len() as u64
    }
}
