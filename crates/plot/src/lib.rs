//! SVG plots of a run or a sweep, for `--plot DIR`:
//!
//! * `handoff-cdf.svg`: the handoff latency CDF, one curve per sweep setting
//!   (all rounds pooled) or per wakee thread group of a run, log-scale µs,
//!   the stall threshold marked, next to the tail (fraction above x, log
//!   scale) where settings that differ only in their stalls come apart;
//! * `stall-K.svg` (runs only): per-CPU occupancy around the K-th stall, the
//!   `perf sched timehist`-style picture of the decision chain the stall
//!   narrative tells: who ran where from `sched_switch`, the signal, the
//!   wakeup, the migrations, the wakee's switch-in and its wait.
//!
//! The SVGs are self-contained (no scripts, no external fonts or images)
//! and carry `class`/`data-*` attributes naming what each curve, lane, bar
//! and marker stands for, with times in ns, for tests and for scripting.
//!
//! ```
//! use schedlab_plot::{handoff_cdf_svg, Curve};
//! let svg = handoff_cdf_svg("demo", &[Curve { label: "a".into(), samples: vec![4_000, 5_000, 900_000] }], 500_000);
//! assert!(svg.starts_with("<svg"));
//! ```

mod cdf;
mod occupancy;
mod svg;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schedlab_analysis::{RunMetrics, StallStory};
use schedlab_report::SweepResult;
use schedlab_trace::{Pid, Trace};

pub use cdf::{handoff_cdf_svg, Curve};
pub use occupancy::{running_bars, stall_lanes, stall_occupancy_svg, stall_window, Bar};

/// One curve per setting: the handoffs of all its rounds, pooled. A result
/// read back from JSON or shard files has no samples (they are not
/// serialised), so its curves are empty.
pub fn sweep_curves(result: &SweepResult) -> Vec<Curve> {
    result
        .settings
        .iter()
        .map(|s| {
            let mut samples: Vec<u64> = s.runs.iter().flat_map(|r| r.handoff_samples.iter().copied()).collect();
            samples.sort_unstable();
            Curve { label: s.name.clone(), samples }
        })
        .collect()
}

/// One curve per thread group (`group` of each pid; a pid not listed is its
/// own group, named by its comm) that received handoffs, in pid order of
/// each group's first thread.
pub fn run_curves(metrics: &RunMetrics, group: &BTreeMap<Pid, String>) -> Vec<Curve> {
    let mut curves: Vec<Curve> = Vec::new();
    // A long run's bucketed samples plot at their buckets' lower edges
    // (within 0.8 % of each sample).
    for t in metrics.tasks.iter().filter(|t| t.handoff_sketch.count() > 0) {
        let label = group.get(&t.pid).cloned().unwrap_or_else(|| t.comm.clone());
        let samples = t.handoff_sketch.sorted_samples();
        match curves.iter_mut().find(|c| c.label == label) {
            Some(c) => c.samples.extend_from_slice(&samples),
            None => curves.push(Curve { label, samples }),
        }
    }
    for c in &mut curves {
        c.samples.sort_unstable();
    }
    curves
}

/// A plot that could not be written: the file or directory, and why.
#[derive(Debug, thiserror::Error)]
#[error("--plot {}: {source}", path.display())]
pub struct PlotError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

fn write(dir: &Path, name: &str, svg: &str) -> Result<PathBuf, PlotError> {
    let path = dir.join(name);
    match std::fs::write(&path, svg) {
        Ok(()) => Ok(path),
        Err(source) => Err(PlotError { path, source }),
    }
}

fn create_dir(dir: &Path) -> Result<(), PlotError> {
    std::fs::create_dir_all(dir).map_err(|source| PlotError { path: dir.to_path_buf(), source })
}

/// Write `DIR/handoff-cdf.svg` for a sweep; returns the path.
pub fn write_sweep_plots(dir: &Path, result: &SweepResult) -> Result<Vec<PathBuf>, PlotError> {
    create_dir(dir)?;
    let runs = if result.rounds == 1 { "1 round".to_string() } else { format!("{} rounds", result.rounds) };
    let title =
        format!("{}: handoff latency per setting ({runs} pooled, wakees {})", result.sweep, result.wakees.join(", "));
    let svg = handoff_cdf_svg(&title, &sweep_curves(result), result.stall_threshold_ns);
    Ok(vec![write(dir, "handoff-cdf.svg", &svg)?])
}

/// What a run's plots are made of.
pub struct RunPlots<'a> {
    /// Names the CDF.
    pub title: String,
    pub trace: &'a Trace,
    pub metrics: &'a RunMetrics,
    /// The attributed stalls, in the order of the narratives.
    pub stalls: &'a [StallStory],
    /// pid → thread group (the scenario's `[[thread]]` name).
    pub groups: BTreeMap<Pid, String>,
    /// pid → allowed CPUs: the wakee's give the occupancy lanes.
    pub allowed: &'a BTreeMap<Pid, Vec<u32>>,
    /// Plot the first this many stalls.
    pub max_stalls: usize,
}

/// Write `DIR/handoff-cdf.svg` and `DIR/stall-1.svg` … for the first
/// `max_stalls` stalls; returns the paths written.
pub fn write_run_plots(dir: &Path, p: &RunPlots) -> Result<Vec<PathBuf>, PlotError> {
    create_dir(dir)?;
    let curves = run_curves(p.metrics, &p.groups);
    let mut paths =
        vec![write(dir, "handoff-cdf.svg", &handoff_cdf_svg(&p.title, &curves, p.metrics.stall_threshold_ns))?];
    let events = p.trace.in_time_order();
    for (i, story) in p.stalls.iter().take(p.max_stalls).enumerate() {
        let lanes = stall_lanes(&events, p.trace.nr_cpus, story, p.allowed, stall_window(story));
        let svg = stall_occupancy_svg(p.trace, &events, story, i + 1, p.stalls.len(), &lanes);
        paths.push(write(dir, &format!("stall-{}.svg", i + 1), &svg)?);
    }
    Ok(paths)
}
