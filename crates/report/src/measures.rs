//! A scenario's `[[measure]]` latencies in a sweep: measured in every run,
//! tabulated per setting as the seed reports do ("timely 0/8, median
//! 1476 ms").

use schedlab_analysis::{measure, percentile, MarkerSpec, MeasureResult, MeasureSpec};
use schedlab_scenario::{Marker, Scenario};
use schedlab_trace::Trace;
use serde::{Deserialize, Serialize};

/// What a measure is, for the report's heading.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasureInfo {
    pub name: String,
    pub from: String,
    pub to: String,
    pub within_ns: Option<u64>,
}

/// One measure in one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasureRun {
    pub name: String,
    /// Completed intervals in the order they started.
    pub intervals_ns: Vec<u64>,
    /// An interval still open when the run ended: its length so far.
    pub unfinished_ns: Option<u64>,
    /// Completed intervals in which the `to` thread was migrated.
    #[serde(default)]
    pub moved: usize,
}

/// The analysis's view of a scenario's measures (names, not ids, so a real
/// run's trace is matched the same way).
pub fn measure_specs(s: &Scenario) -> Vec<MeasureSpec> {
    let marker = |m: &Marker| MarkerSpec {
        comms: m.threads.clone(),
        op: m.op.as_str().to_string(),
        object: m.object.map(|id| s.objects[id as usize].name.clone()),
    };
    s.measures
        .iter()
        .map(|m| MeasureSpec { name: m.name.clone(), from: marker(&m.from), to: marker(&m.to), within_ns: m.within_ns })
        .collect()
}

pub fn measure_infos(s: &Scenario) -> Vec<MeasureInfo> {
    s.measures
        .iter()
        .map(|m| MeasureInfo {
            name: m.name.clone(),
            from: m.from.text.clone(),
            to: m.to.text.clone(),
            within_ns: m.within_ns,
        })
        .collect()
}

impl From<&MeasureResult> for MeasureRun {
    fn from(r: &MeasureResult) -> MeasureRun {
        MeasureRun {
            name: r.name.clone(),
            intervals_ns: r.intervals_ns.clone(),
            unfinished_ns: r.unfinished_ns,
            moved: r.moved,
        }
    }
}

pub fn measure_run(trace: &Trace, specs: &[MeasureSpec], end_ns: u64) -> Vec<MeasureRun> {
    specs.iter().map(|spec| MeasureRun::from(&measure(trace, spec, end_ns))).collect()
}

/// One setting's figures for one measure over all its runs.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasureRow {
    /// Intervals started, completed ones under `within` (all completed
    /// without one), and those still open at the end of a run.
    pub started: usize,
    pub timely: usize,
    pub open: usize,
    /// Completed intervals in which the `to` thread was migrated.
    pub moved: usize,
    pub completed: usize,
    /// Over completed intervals.
    pub median_ns: Option<u64>,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

pub fn measure_row<'a>(runs: impl Iterator<Item = &'a MeasureRun>, within_ns: Option<u64>) -> MeasureRow {
    let mut all = Vec::new();
    let (mut open, mut moved) = (0, 0);
    for r in runs {
        all.extend_from_slice(&r.intervals_ns);
        open += r.unfinished_ns.is_some() as usize;
        moved += r.moved;
    }
    all.sort_unstable();
    let timely = within_ns.map_or(all.len(), |w| all.partition_point(|&x| x < w));
    MeasureRow {
        started: all.len() + open,
        timely,
        open,
        moved,
        completed: all.len(),
        median_ns: percentile(&all, 500),
        min_ns: all.first().copied(),
        max_ns: all.last().copied(),
    }
}
