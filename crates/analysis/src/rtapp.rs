//! Per-phase figures of an rt-app run, from rt-app's own trace markers
//! (`ftrace: true`): each pass over a phase is a `rtapp_loop` start/end
//! pair (1.0: `[N] begins loop ...` / `[N] end loop ...`), and rt-app
//! master follows each end with `rtapp_stats` (the pass's log row:
//! wakeup latency and slack).
//!
//! A pass is counted only when its start and end markers are both in the
//! trace, from the same thread, for the same phase; an end without its
//! start (the capture began mid-pass, or the start marker was lost) is
//! counted as unpaired, and a stats marker belongs to the pass that just
//! ended (none ended: unpaired too). Figures the markers cannot support are
//! left out: without `rtapp_stats` (rt-app 1.0) there is no wakeup latency
//! or slack.

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

use schedlab_trace::{Event, EventKind, Nanos, Pid, TaskTable, Trace, UserOp};

use crate::LatencySketch;

/// Samples a sketch keeps exactly before it turns to buckets (bounded
/// memory on long captures; the percentiles are then at most
/// [`crate::RELATIVE_ERROR`] low).
const EXACT_PER_SKETCH: u64 = 1 << 20;

/// One phase of one rt-app thread.
#[derive(Clone, Debug)]
pub struct RtAppPhase {
    pub pid: Pid,
    pub comm: String,
    pub phase: u32,
    /// Passes with both markers.
    pub passes: u64,
    /// Pass wall times, ns (start marker to end marker).
    pub period: LatencySketch,
    /// From `rtapp_stats` (master only), us as rt-app writes them.
    pub wu_lat_us: LatencySketch,
    /// `slack` clamped at 0, us, for its percentiles.
    pub slack_us: LatencySketch,
    pub slack_min_us: Option<i64>,
    /// Passes whose slack was negative (the timer's boundary had passed).
    pub late: u64,
}

/// What the markers said overall.
#[derive(Clone, Debug, Default)]
pub struct RtAppReport {
    pub phases: Vec<RtAppPhase>,
    /// End markers without their start, and stats without a pass.
    pub unpaired: u64,
}

impl RtAppReport {
    pub fn is_empty(&self) -> bool {
        self.phases.is_empty() && self.unpaired == 0
    }
}

/// Reads the markers in time order, one event at a time.
#[derive(Clone, Debug, Default)]
pub struct RtAppCollector {
    /// Per thread: the phase whose pass is open, and since when.
    open: HashMap<Pid, (u32, Nanos)>,
    /// Per thread: the phase whose pass just ended (the stats' owner).
    ended: HashMap<Pid, u32>,
    phases: BTreeMap<(Pid, u32), Acc>,
    unpaired: u64,
}

#[derive(Clone, Debug)]
struct Acc {
    passes: u64,
    period: LatencySketch,
    wu_lat_us: LatencySketch,
    slack_us: LatencySketch,
    slack_min_us: Option<i64>,
    late: u64,
}

impl Acc {
    fn new() -> Self {
        Acc {
            passes: 0,
            period: LatencySketch::new(u64::MAX),
            wu_lat_us: LatencySketch::new(u64::MAX),
            slack_us: LatencySketch::new(u64::MAX),
            slack_min_us: None,
            late: 0,
        }
    }
}

fn push(s: &mut LatencySketch, v: u64) {
    s.push(v);
    if s.count() == EXACT_PER_SKETCH {
        s.to_buckets();
    }
}

impl RtAppCollector {
    pub fn observe(&mut self, ev: &Event) {
        let EventKind::User { pid, op } = ev.kind else { return };
        match op {
            UserOp::RtAppLoop { start: true, phase, .. } => {
                if self.open.insert(pid, (phase, ev.ts)).is_some() {
                    // A start after a start: the earlier pass's end was lost.
                    self.unpaired += 1;
                }
                self.ended.remove(&pid);
            }
            UserOp::RtAppLoop { start: false, phase, .. } => match self.open.remove(&pid) {
                Some((p, t0)) if p == phase && ev.ts >= t0 => {
                    let acc = self.phases.entry((pid, phase)).or_insert_with(Acc::new);
                    acc.passes += 1;
                    push(&mut acc.period, ev.ts - t0);
                    self.ended.insert(pid, phase);
                }
                _ => {
                    self.unpaired += 1;
                    self.ended.remove(&pid);
                }
            },
            UserOp::RtAppStats { wu_lat, slack, .. } => match self.ended.remove(&pid) {
                Some(phase) => {
                    let acc = self.phases.entry((pid, phase)).or_insert_with(Acc::new);
                    push(&mut acc.wu_lat_us, wu_lat.max(0) as u64);
                    push(&mut acc.slack_us, slack.max(0) as u64);
                    let slack = i64::from(slack);
                    acc.slack_min_us = Some(acc.slack_min_us.map_or(slack, |m| m.min(slack)));
                    acc.late += u64::from(slack < 0);
                }
                None => self.unpaired += 1,
            },
            _ => {}
        }
    }

    pub fn finish(self, table: &TaskTable) -> RtAppReport {
        let phases = self
            .phases
            .into_iter()
            .map(|((pid, phase), a)| RtAppPhase {
                pid,
                comm: table.comm(pid).to_string(),
                phase,
                passes: a.passes,
                period: a.period,
                wu_lat_us: a.wu_lat_us,
                slack_us: a.slack_us,
                slack_min_us: a.slack_min_us,
                late: a.late,
            })
            .collect();
        RtAppReport { phases, unpaired: self.unpaired }
    }
}

/// [`RtAppCollector`] over a whole trace.
pub fn rtapp_phases(trace: &Trace) -> RtAppReport {
    let mut c = RtAppCollector::default();
    for ev in trace.in_time_order().iter() {
        c.observe(ev);
    }
    c.finish(&trace.table)
}

/// The per-phase table; `-` where the markers hold no figure.
pub fn render_rtapp_phases(r: &RtAppReport) -> String {
    use crate::table::col;
    use std::fmt::Write;
    let cols = vec![
        col("", "thread", true),
        col("", "pid", false),
        col("", "phase", false),
        col("", "passes", false),
        col("pass wall time (us)", "p50", false),
        col("pass wall time (us)", "p99", false),
        col("pass wall time (us)", "max", false),
        col("wu_lat (us)", "p50", false),
        col("wu_lat (us)", "p99", false),
        col("wu_lat (us)", "max", false),
        col("slack (us)", "p50", false),
        col("slack (us)", "min", false),
        col("slack (us)", "late", false),
    ];
    let us = |ns: Option<u64>| ns.map_or("-".into(), |v| format!("{:.1}", v as f64 / 1000.0));
    let raw = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
    let rows: Vec<Vec<String>> = r
        .phases
        .iter()
        .map(|p| {
            let has_stats = p.wu_lat_us.count() > 0;
            vec![
                p.comm.clone(),
                p.pid.to_string(),
                p.phase.to_string(),
                p.passes.to_string(),
                us(p.period.percentile(500)),
                us(p.period.percentile(990)),
                us(p.period.max()),
                raw(p.wu_lat_us.percentile(500)),
                raw(p.wu_lat_us.percentile(990)),
                raw(p.wu_lat_us.max()),
                raw(p.slack_us.percentile(500)),
                p.slack_min_us.map_or("-".into(), |v| v.to_string()),
                if has_stats { p.late.to_string() } else { "-".into() },
            ]
        })
        .collect();
    let mut out = crate::table::layout(&cols, &rows);
    if r.unpaired > 0 {
        let _ = writeln!(
            out,
            "({} rt-app markers without their pair: a pass whose start or end is not in the capture is left out)",
            r.unpaired
        );
    }
    if r.phases.iter().any(|p| p.passes > 0 && p.wu_lat_us.count() == 0) {
        out.push_str(
            "(no rtapp_stats markers: rt-app 1.0 writes only the pass markers, so no wakeup latency or slack)\n",
        );
    }
    out
}
