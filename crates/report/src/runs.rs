//! Several real runs of one scenario (`schedlab vm --runs N`, `compare
//! --vm`): one line per run, the measures of each, the names of their
//! trace files and feature sets.

use std::path::{Path, PathBuf};

use crate::measures::MeasureRun;
use crate::run::Report;

/// A real run as its line in the runs table needs it.
pub struct RunLine<'a> {
    /// Events in the run's window, and events the ring buffer lost.
    pub events: usize,
    pub lost_events: u64,
    pub report: &'a Report,
}

fn ms(ns: u64) -> String {
    format!("{}.{:03} ms", ns / 1_000_000, ns / 1000 % 1000)
}

/// One line per run: capture size, handoffs, stalls at `threshold_ns`,
/// each measure. `labels`: each run's setting, when there are several.
pub fn render_runs(threshold_ns: u64, runs: &[RunLine], labels: &[String]) -> String {
    let mut out = String::new();
    let width = labels.iter().map(String::len).max().unwrap_or(0);
    for (i, run) in runs.iter().enumerate() {
        let r = run.report;
        let mut cols = vec![format!("run {:>2}", i + 1)];
        if let Some(l) = labels.get(i) {
            cols.push(schedlab_analysis::pad_right(l, width));
        }
        cols.push(format!("{} events", run.events));
        if run.lost_events > 0 {
            cols.push(format!("{} lost", run.lost_events));
        }
        let handoffs = r.handoffs();
        if handoffs > 0 {
            let all = r.metrics.merged(|t| &t.handoff_sketch);
            let pct = |p: u32| all.percentile(p).map_or("-".into(), |v| format!("{}", v / 1000));
            cols.push(format!(
                "{} handoffs (p50 {} us, p99 {} us), {} stalls >= {} us ({:.1} %)",
                handoffs,
                pct(500),
                pct(990),
                r.metrics.stall_count(),
                threshold_ns / 1000,
                100.0 * r.metrics.stall_count() as f64 / handoffs as f64
            ));
        }
        for m in &r.measures {
            let vals: Vec<String> = m.intervals_ns.iter().map(|&v| ms(v)).collect();
            let open = m.unfinished_ns.map(|v| format!(" (open at end: {})", ms(v))).unwrap_or_default();
            let shown = if vals.is_empty() { "-".to_string() } else { vals.join(", ") };
            cols.push(format!("{}: {shown}{open}, moved {}", m.name, m.moved));
        }
        out.push_str(&cols.join("  "));
        out.push('\n');
    }
    out
}

/// The measures of each run as the sweep keeps them.
pub fn measure_runs(reports: &[&Report]) -> Vec<Vec<MeasureRun>> {
    reports.iter().map(|r| r.measures.iter().map(MeasureRun::from).collect()).collect()
}

/// How a feature set is named in tables.
pub fn setting_label(set: &[String]) -> String {
    if set.is_empty() {
        "(base)".into()
    } else {
        set.join(",")
    }
}

/// The trace file of run `i` (0-based) of `n`: `base` itself for one run,
/// else `base` with `.runN` before its extension.
pub fn trace_path(base: &Path, i: usize, n: usize) -> PathBuf {
    if n == 1 {
        return base.to_path_buf();
    }
    let stem = base.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.run{}.{}", i + 1, ext.to_string_lossy()),
        None => format!("{stem}.run{}", i + 1),
    };
    base.with_file_name(name)
}

/// One line per run's trace file written with `--trace base`: `what` and
/// the run's number name it.
pub fn render_trace_paths(base: &Path, n: usize, what: &str) -> String {
    (0..n)
        .map(|i| format!("trace     {} ({what} {}, tracefs text)\n", trace_path(base, i, n).display(), i + 1))
        .collect()
}

/// `NO_RT_PUSH_IPI (was RT_PUSH_IPI)` for each feature whose state differs
/// between two `sched_features` readings.
pub fn feature_changes(before: &str, after: &str) -> String {
    let was: Vec<&str> = before.split_whitespace().collect();
    let changed: Vec<String> = after
        .split_whitespace()
        .filter(|f| !was.contains(f))
        .map(|f| {
            let old = f.strip_prefix("NO_").map_or_else(|| format!("NO_{f}"), str::to_string);
            format!("{f} (was {old})")
        })
        .collect();
    if changed.is_empty() {
        "none".into()
    } else {
        changed.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_changes_name_old_and_new_state() {
        assert_eq!(feature_changes("A NO_B C", "A NO_B C"), "none");
        assert_eq!(
            feature_changes("RT_PUSH_IPI DELAY_DEQUEUE", "NO_RT_PUSH_IPI DELAY_DEQUEUE"),
            "NO_RT_PUSH_IPI (was RT_PUSH_IPI)"
        );
        assert_eq!(feature_changes("NO_HRTICK", "HRTICK"), "HRTICK (was NO_HRTICK)");
    }

    #[test]
    fn sets_are_labelled() {
        assert_eq!(setting_label(&[]), "(base)");
        assert_eq!(setting_label(&["A".to_string(), "NO_B".to_string()]), "A,NO_B");
    }

    #[test]
    fn trace_paths_per_run() {
        assert_eq!(trace_path(Path::new("/t/x.txt"), 0, 1), Path::new("/t/x.txt"));
        assert_eq!(trace_path(Path::new("/t/x.txt"), 2, 5), Path::new("/t/x.run3.txt"));
        assert_eq!(trace_path(Path::new("x"), 0, 2), Path::new("x.run1"));
    }
}
