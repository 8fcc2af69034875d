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

/// Pairs signals with waits per object.
pub(crate) struct HandoffTracker {
    /// obj → (start, waker) of the handoff in flight.
    pending: HashMap<u32, (Nanos, Pid)>,
    /// wakee pid → latency samples, exact for half of [`EXACT_SAMPLES_PER_RUN`].
    pub samples: SketchSet,
    pub stalls: Vec<Stall>,
    /// Waits that returned with no signal pending (counter set before the
    /// trace started, or a lost event).
    pub unmatched_waits: u64,
}

impl Default for HandoffTracker {
    fn default() -> Self {
        // The threshold only counts samples at or above it; the caller's
        // is set with `with_threshold`.
        HandoffTracker::with_threshold(0)
    }
}

impl HandoffTracker {
    pub fn with_threshold(threshold_ns: u64) -> Self {
        HandoffTracker {
            pending: HashMap::default(),
            samples: SketchSet::new(threshold_ns, EXACT_SAMPLES_PER_RUN / 2),
            stalls: Vec::new(),
            unmatched_waits: 0,
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
                    self.samples.push(pid, lat);
                    if lat >= threshold {
                        self.stalls.push(Stall {
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
