//! What every report shares (`run`, `analyze`, `real`, `vm`, `compare`): the
//! analysis of one trace, the `--stalls`/`--grace` options, and the sections
//! printed from it — the per-thread table, the measures, the longest stalls,
//! work conservation, the cause table and the stall narratives.

use clap::Args;
use schedlab_analysis::{
    analyze, attribute_stalls, measure, render_cause_table, render_measures, render_run_table, render_stall_narratives,
    render_work_conservation, work_conservation, AnalysisOptions, Attribution, AttributionOptions, MeasureResult,
    RunMetrics, WorkConsOptions, WorkConservation,
};
use schedlab_scenario::Scenario;
use schedlab_topology::{parse_duration, CpuSet, MAX_CPUS};
use schedlab_trace::{Pid, TaskTable, Trace};
use std::collections::BTreeMap;
use std::path::Path;

/// `schedlab_analysis::DEFAULT_GRACE_NS` as `--grace` takes it.
const DEFAULT_GRACE: &str = "100us";

/// The options of the stall and work-conservation sections.
#[derive(Args, Clone)]
pub struct ReportArgs {
    /// Print the narratives (decision chains) of the first N stalls; 0 prints none.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub stalls: usize,
    /// Work-conservation grace window: violations shorter than this are not
    /// counted in the concurrent figures (Ipanema's concurrent work conservation).
    #[arg(long, value_parser = parse_duration, default_value = DEFAULT_GRACE)]
    pub grace: u64,
}

/// The analysis of one run, simulated, real or read from a file.
pub(crate) struct Report {
    pub metrics: RunMetrics,
    pub workcons: WorkConservation,
    pub attribution: Attribution,
    pub measures: Vec<MeasureResult>,
}

impl Report {
    /// Analyse `trace` up to `end_ns` (`None`: its last event): metrics with
    /// stalls at `threshold_ns`, work conservation with `allowed` and `grace_ns`,
    /// the stalls' causes, and the `scenario`'s `[[measure]]`s.
    pub fn of(
        trace: &Trace,
        scenario: Option<&Scenario>,
        threshold_ns: u64,
        end_ns: Option<u64>,
        allowed: BTreeMap<Pid, Vec<u32>>,
        grace_ns: u64,
    ) -> Report {
        let metrics = analyze(trace, &AnalysisOptions { stall_threshold_ns: threshold_ns, end_ts: end_ns });
        let workcons =
            work_conservation(trace, &WorkConsOptions { allowed: allowed.clone(), grace_ns, end_ts: end_ns });
        let attribution =
            attribute_stalls(trace, &AttributionOptions { stall_threshold_ns: threshold_ns, end_ts: end_ns, allowed });
        let end = end_ns.unwrap_or(metrics.end_ts);
        let specs = scenario.map(schedlab_sweep::measures::measure_specs).unwrap_or_default();
        let measures = specs.iter().map(|m| measure(trace, m, end)).collect();
        Report { metrics, workcons, attribution, measures }
    }

    /// Keep only the rows of the tasks `keep` accepts in the per-thread
    /// tables (a real trace names every task on the machine).
    pub fn retain_tasks(&mut self, keep: impl Fn(Pid) -> bool) {
        self.metrics.retain_tasks(|t| keep(t.pid));
        self.workcons.tasks.retain(|t| keep(t.pid));
    }

    /// Handoffs of the tasks in the tables.
    pub fn handoffs(&self) -> u64 {
        self.metrics.tasks.iter().map(|t| t.handoff_latency.count).sum()
    }
}

/// The per-thread table, then the scenario's measures if it has any.
pub(crate) fn print_table_and_measures(r: &Report) {
    print!("{}", render_run_table(&r.metrics));
    if !r.measures.is_empty() {
        println!();
        println!("measures  (from the scenario's [[measure]] tables)");
        print!("{}", render_measures(&r.measures));
    }
}

/// The longest stalls (when there were handoffs), work conservation, and
/// (if there were stalls) the cause table and the narratives of the first
/// `narratives` stalls.
pub(crate) fn print_stalls_and_causes(r: &Report, table: &TaskTable, narratives: usize) {
    let handoffs = r.handoffs();
    if handoffs > 0 {
        print_stalls(&r.metrics, handoffs, table);
    }
    print_workcons_and_causes(&r.workcons, &r.attribution, narratives);
}

/// Every section of a run's report: [`print_table_and_measures`], then
/// [`print_stalls_and_causes`].
pub(crate) fn print_report(r: &Report, table: &TaskTable, narratives: usize) {
    print_table_and_measures(r);
    print_stalls_and_causes(r, table, narratives);
}

/// "stalls N of M handoffs took >= T us", then the five longest, one line each.
fn print_stalls(metrics: &RunMetrics, handoffs: u64, table: &TaskTable) {
    println!();
    println!(
        "stalls    {} of {handoffs} handoffs took >= {} us ({:.3} %)",
        metrics.stalls.len(),
        metrics.stall_threshold_ns / 1000,
        100.0 * metrics.stalls.len() as f64 / handoffs as f64
    );
    let mut worst: Vec<_> = metrics.stalls.iter().collect();
    worst.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.start_ts.cmp(&b.start_ts)));
    for s in worst.iter().take(5) {
        println!(
            "          {:>8} us  {} -> {} on {} at {}.{:06} s",
            s.latency_ns / 1000,
            table.comm(s.waker_pid),
            table.comm(s.wakee_pid),
            s.obj_name,
            s.start_ts / 1_000_000_000,
            s.start_ts % 1_000_000_000 / 1000
        );
    }
}

/// Work conservation, then (if there were stalls) the cause table and the
/// narratives of the first `narratives` stalls.
fn print_workcons_and_causes(workcons: &WorkConservation, attribution: &Attribution, narratives: usize) {
    println!();
    println!(
        "work conservation: runnable tasks waiting while a CPU of their affinity is idle (strict, and >= {} us)",
        workcons.grace_ns / 1000
    );
    print!("{}", render_work_conservation(workcons));
    if attribution.stalls.is_empty() {
        return;
    }
    println!();
    println!(
        "stall causes: {} stalls, {}.{:03} ms of handoff time",
        attribution.stalls.len(),
        attribution.total_ns / 1_000_000,
        attribution.total_ns / 1000 % 1000
    );
    print!("{}", render_cause_table(attribution));
    if narratives > 0 {
        println!();
        print!("{}", render_stall_narratives(attribution, narratives));
    }
}

/// `ns` as seconds with milliseconds: `5.000 s`.
pub(crate) fn fmt_secs(ns: u64) -> String {
    format!("{}.{:03} s", ns / 1_000_000_000, ns % 1_000_000_000 / 1_000_000)
}

/// CPU ids as the kernel prints a cpulist (`0-3,8`), through
/// [`CpuSet::to_cpulist`]. A trace from a machine larger than the model's
/// [`MAX_CPUS`] can name CPUs a `CpuSet` cannot hold: those follow one by one.
pub(crate) fn cpulist(cpus: impl IntoIterator<Item = usize>) -> String {
    let (inside, mut beyond): (Vec<usize>, Vec<usize>) = cpus.into_iter().partition(|&c| c < MAX_CPUS);
    let mut out = inside.into_iter().collect::<CpuSet>().to_cpulist();
    beyond.sort_unstable();
    beyond.dedup();
    for c in beyond {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&c.to_string());
    }
    out
}

/// Write `trace` to `path` as ftrace text; errors name `flag`.
pub(crate) fn write_ftrace(trace: &Trace, path: &Path, flag: &str) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    schedlab_trace::ftrace::write_ftrace(trace, &mut out)
        .and_then(|()| std::io::Write::flush(&mut out))
        .map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// Write `trace` to `path` as a Perfetto protobuf trace (`--perfetto`).
pub(crate) fn write_perfetto(trace: &Trace, path: &Path) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("--perfetto {}: {e}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    schedlab_trace::write_perfetto(trace, &mut out)
        .and_then(|()| std::io::Write::flush(&mut out))
        .map_err(|e| format!("--perfetto {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_default_is_the_analysis_default() {
        assert_eq!(parse_duration(DEFAULT_GRACE), Ok(schedlab_analysis::DEFAULT_GRACE_NS));
    }

    #[test]
    fn cpulists_join_runs_of_two_or_more() {
        assert_eq!(cpulist([1, 0]), "0-1");
        assert_eq!(cpulist([0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(cpulist([]), "");
        assert_eq!(cpulist([3, 600, 511, 600, 512]), "3,511,512,600");
    }

    #[test]
    fn seconds_have_milliseconds() {
        assert_eq!(fmt_secs(5_000_000_000), "5.000 s");
        assert_eq!(fmt_secs(1_234_567_890), "1.234 s");
    }
}
