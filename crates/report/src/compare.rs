//! The model beside a real kernel (`schedlab compare`): the figures of two
//! runs side by side, and their stall causes. Both runs went through one
//! analysis, so a difference is a difference between the model and the
//! kernel (or the hardware), not between two measuring tools.

use schedlab_analysis::{Attribution, Cause, LatencyStats, TaskMetrics};

use crate::run::Report;

fn us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), |v| format!("{}.{}", v / 1000, v / 100 % 10))
}

/// All samples of one kind merged over the workload's threads.
fn merged(r: &Report, pick: impl Fn(&TaskMetrics) -> &Vec<u64>, threshold: u64) -> LatencyStats {
    let mut all: Vec<u64> = r.metrics.tasks.iter().flat_map(|t| pick(t).iter().copied()).collect();
    all.sort_unstable();
    LatencyStats::from_sorted(&all, threshold)
}

/// Rows of (figure, simulated, real), aligned under a header.
pub fn side_by_side(rows: &[(String, String, String)]) -> String {
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(6);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max("simulated".len());
    let mut out = format!("{:<w0$}  {:>w1$}  {}\n", "", "simulated", "real");
    for (a, b, c) in rows {
        out.push_str(&format!("{a:<w0$}  {b:>w1$}  {c}\n"));
    }
    out
}

/// The figures compared: handoff and wakeup percentiles, stalls at
/// `threshold`, migrations, involuntary switches, unclaimed idle.
pub fn figures(sim: &Report, real: &Report, threshold: u64) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    let mut row = |name: &str, f: &dyn Fn(&Report) -> String| rows.push((name.to_string(), f(sim), f(real)));
    row("handoffs", &|r| r.handoffs().to_string());
    let ho = |r: &Report| merged(r, |t| &t.handoff_samples, threshold);
    row("handoff p50 (us)", &|r| us(ho(r).p50_ns));
    row("handoff p90 (us)", &|r| us(ho(r).p90_ns));
    row("handoff p99 (us)", &|r| us(ho(r).p99_ns));
    row("handoff max (us)", &|r| us(ho(r).max_ns));
    row(&format!("stalls (>= {} us)", threshold / 1000), &|r| {
        let n = r.metrics.stalls.len();
        let h = r.handoffs();
        format!("{n} ({:.3} %)", if h > 0 { 100.0 * n as f64 / h as f64 } else { 0.0 })
    });
    let wk = |r: &Report| merged(r, |t| &t.wakeup_samples, threshold);
    row("wakeup p50 (us)", &|r| us(wk(r).p50_ns));
    row("wakeup p99 (us)", &|r| us(wk(r).p99_ns));
    row("migrations", &|r| r.metrics.tasks.iter().map(|t| t.migrations).sum::<u64>().to_string());
    row("involuntary switches", &|r| r.metrics.tasks.iter().map(|t| t.involuntary_switches).sum::<u64>().to_string());
    row("unclaimed idle (strict)", &|r| format!("{:.2} %", r.workcons.unclaimed_pct));
    rows
}

/// One row per cause either side has, with its stall count on each side.
pub fn cause_rows(sim: &Attribution, real: &Attribution) -> Vec<(String, String, String)> {
    Cause::ALL
        .iter()
        .map(|&c| (c, sim.count(c), real.count(c)))
        .filter(|&(_, a, b)| a > 0 || b > 0)
        .map(|(c, a, b)| (c.label().to_string(), a.to_string(), b.to_string()))
        .collect()
}
