//! The model beside a real kernel (`schedlab compare`): the figures of two
//! runs side by side, and their stall causes. Both runs went through one
//! analysis, so a difference is a difference between the model and the
//! kernel (or the hardware), not between two measuring tools.

use std::fmt::Write as _;
use std::path::Path;

use schedlab_analysis::{
    render_cause_table, render_run_table, Attribution, Cause, LatencySketch, LatencyStats, TaskMetrics,
};
use schedlab_scenario::Scenario;
use schedlab_topology::Topology;

use crate::measures::{measure_infos, MeasureRun};
use crate::real::{render_scenario_line, GuestHeader, RealHeader};
use crate::render::render_measure_table;
use crate::run::Report;
use crate::runs::{measure_runs, render_runs, render_trace_paths, setting_label, RunLine};
use crate::vm::{labels, lines, GuestRun};

fn us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), |v| format!("{}.{}", v / 1000, v / 100 % 10))
}

/// All samples of one kind merged over the workload's threads.
fn merged(r: &Report, pick: impl Fn(&TaskMetrics) -> &LatencySketch, threshold: u64) -> LatencyStats {
    let mut all = LatencySketch::new(threshold);
    for t in &r.metrics.tasks {
        all.merge(pick(t));
    }
    all.sorted();
    LatencyStats::from_sketch(&all)
}

/// Rows of (figure, simulated, real), aligned under a header.
pub fn side_by_side(rows: &[(String, String, String)]) -> String {
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(6);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max("simulated".len());
    use schedlab_analysis::{pad_left, pad_right};
    let mut out = format!("{}  {}  {}\n", pad_right("", w0), pad_left("simulated", w1), "real");
    for (a, b, c) in rows {
        out.push_str(&format!("{}  {}  {c}\n", pad_right(a, w0), pad_left(b, w1)));
    }
    out
}

/// The figures compared: handoff and wakeup percentiles, stalls at
/// `threshold`, migrations, involuntary switches, unclaimed idle.
pub fn figures(sim: &Report, real: &Report, threshold: u64) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    let mut row = |name: &str, f: &dyn Fn(&Report) -> String| rows.push((name.to_string(), f(sim), f(real)));
    row("handoffs", &|r| r.handoffs().to_string());
    let ho = |r: &Report| merged(r, |t| &t.handoff_sketch, threshold);
    row("handoff p50 (us)", &|r| us(ho(r).p50_ns));
    row("handoff p90 (us)", &|r| us(ho(r).p90_ns));
    row("handoff p99 (us)", &|r| us(ho(r).p99_ns));
    row("handoff max (us)", &|r| us(ho(r).max_ns));
    row(&format!("stalls (>= {} us)", threshold / 1000), &|r| {
        let n = r.metrics.stall_count();
        let h = r.handoffs();
        format!("{n} ({:.3} %)", if h > 0 { 100.0 * n as f64 / h as f64 } else { 0.0 })
    });
    let wk = |r: &Report| merged(r, |t| &t.wakeup_sketch, threshold);
    row("wakeup p50 (us)", &|r| us(wk(r).p50_ns));
    row("wakeup p99 (us)", &|r| us(wk(r).p99_ns));
    row("migrations", &|r| r.metrics.tasks.iter().map(|t| t.migrations).sum::<u64>().to_string());
    row("involuntary switches", &|r| r.metrics.tasks.iter().map(|t| t.involuntary_switches).sum::<u64>().to_string());
    row("unclaimed idle (strict)", &|r| {
        let w = &r.workcons;
        match (w.has_figures(), w.cpus.iter().any(|c| c.left_out)) {
            (false, _) => "- (no CPU's occupant established)".to_string(),
            // The share alone misleads when the CPUs are hardly ever idle:
            // say of how much idle time.
            (true, false) => format!("{:.2} % of {} ms", w.unclaimed_pct, schedlab_analysis::ms_text(w.idle_ns)),
            (true, true) => format!(
                "{:.2} % of {} ms (CPUs {})",
                w.unclaimed_pct,
                schedlab_analysis::ms_text(w.idle_ns),
                schedlab_analysis::covered_cpus(w)
            ),
        }
    });
    rows
}

/// One figure of a deadline task, as printed.
type DeadlineFigure = dyn Fn(&schedlab_analysis::DeadlineTask) -> String;

/// SCHED_DEADLINE tasks side by side: per task (matched by name), its jobs,
/// misses, throttles and throttled ms in each run of each side, in run
/// order. Empty without deadline tasks.
pub fn deadline_rows(sims: &[&Report], reals: &[&Report]) -> Vec<(String, String, String)> {
    let Some(first) = sims.first().or(reals.first()) else { return Vec::new() };
    let mut rows = Vec::new();
    for task in &first.deadline.tasks {
        let per_run = |reports: &[&Report], f: &DeadlineFigure| {
            let v: Vec<String> = reports
                .iter()
                .map(|r| r.deadline.tasks.iter().find(|t| t.comm == task.comm).map_or("-".to_string(), f))
                .collect();
            v.join(" ")
        };
        let figures: [(&str, &DeadlineFigure); 5] = [
            ("jobs", &|t| t.jobs.to_string()),
            ("missed", &|t| t.misses.to_string()),
            ("max late ms", &|t| format!("{:.1}", t.max_lateness_ns as f64 / 1e6)),
            ("throttles", &|t| t.throttles.to_string()),
            ("throttled ms", &|t| format!("{:.1}", t.throttled_ns as f64 / 1e6)),
        ];
        for (name, f) in figures {
            rows.push((format!("{} {name}", task.comm), per_run(sims, f), per_run(reals, f)));
        }
    }
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

/// The real side of a comparison: this host's kernel, or a QEMU guest's.
pub enum RealSide<'a> {
    Host(RealHeader<'a>),
    Guest(GuestHeader<'a>),
}

/// `schedlab compare`'s whole text report (one feature set).
pub struct CompareText<'a> {
    pub scenario: &'a Scenario,
    /// The model's machine, kernel profile and notes, and the seed of its
    /// first run.
    pub machine: &'a Topology,
    pub profile: &'a str,
    pub seed: u64,
    pub notes: &'a [String],
    /// The model's task groups (its first run), printed as the real side's cgroup lines are.
    pub groups: &'a [crate::CgroupRow],
    pub real: RealSide<'a>,
    /// The model's report of each seed (as many as real runs), and the
    /// first one's from its sched tracepoints alone.
    pub sims: &'a [Report],
    pub sim_tracepoints: &'a Report,
    /// The real runs: one on the host, `--runs` in a guest.
    pub runs: &'a [RunLine<'a>],
    /// Where `--trace` and `--sim-trace` wrote the traces.
    pub trace_file: Option<&'a Path>,
    pub sim_trace_file: Option<&'a Path>,
}

impl CompareText<'_> {
    pub fn render(&self) -> String {
        let (scenario, seed) = (self.scenario, self.seed);
        let (sim, real) = (&self.sims[0], self.runs[0].report);
        let nruns = self.runs.len();
        let threshold = scenario.stall_threshold_ns;
        let mut out = render_scenario_line(scenario, false);
        let _ = writeln!(
            out,
            "model     {}: {} CPUs, kernel profile {}, seed {seed}",
            self.machine.name,
            self.machine.nr_cpus(),
            self.profile
        );
        for note in self.notes {
            let _ = writeln!(out, "note      (model) {note}");
        }
        for row in self.groups {
            let _ = writeln!(out, "cgroup    (model) {}", row.line());
        }
        match &self.real {
            RealSide::Guest(header) => out.push_str(&header.render()),
            RealSide::Host(header) => out.push_str(&header.render()),
        }
        if nruns > 1 {
            out.push_str("\nguest runs\n");
            out.push_str(&render_runs(threshold, self.runs, &[]));
        }
        if !scenario.measures.is_empty() {
            let sim_measures = measure_runs(&self.sims.iter().collect::<Vec<_>>());
            let real_measures = measure_runs(&self.runs.iter().map(|r| r.report).collect::<Vec<_>>());
            let seeds =
                if nruns > 1 { format!("seeds {seed}-{}", seed + nruns as u64 - 1) } else { format!("seed {seed}") };
            let real_label = match &self.real {
                RealSide::Guest(header) => {
                    format!("guest {} ({nruns} run{})", header.kernel, if nruns > 1 { "s" } else { "" })
                }
                RealSide::Host(header) => format!("host {}", header.kernel),
            };
            let rows = vec![
                (format!("model {} ({seeds})", self.profile), sim_measures.iter().map(Vec::as_slice).collect()),
                (real_label, real_measures.iter().map(Vec::as_slice).collect()),
            ];
            out.push('\n');
            out.push_str(&render_measure_table(&measure_infos(scenario), &rows));
        }
        out.push('\n');
        if nruns > 1 {
            let _ = writeln!(out, "figures of the first run (seed {seed}) and the guest's run 1");
        }
        out.push_str(&side_by_side(&figures(sim, real, threshold)));
        let dl = deadline_rows(
            &self.sims.iter().collect::<Vec<_>>(),
            &self.runs.iter().map(|r| r.report).collect::<Vec<_>>(),
        );
        if !dl.is_empty() {
            out.push_str("
SCHED_DEADLINE tasks, every run of each side (jobs from wakeup to block; throttled = runnable while a CPU ran no deadline task)\n");
            out.push_str(&side_by_side(&dl));
        }

        let (sa, ra) = (&sim.attribution, &real.attribution);
        if !sa.causes.is_empty() || !ra.causes.is_empty() {
            out.push_str("\nstall causes (stalls per class)\n");
            out.push_str(&side_by_side(&cause_rows(sa, ra)));
            out.push_str(
                "\nstall causes from the sched tracepoints alone (the simulated trace without schedlab_* decisions)\n",
            );
            out.push_str(&side_by_side(&cause_rows(&self.sim_tracepoints.attribution, ra)));
        }
        for (name, r) in [("simulated", sim), ("real", real)] {
            let _ = writeln!(out, "\n== {name} ==");
            out.push_str(&render_run_table(&r.metrics));
            if !r.attribution.stalls.is_empty() {
                out.push('\n');
                out.push_str(&render_cause_table(&r.attribution));
            }
        }
        if let Some(path) = self.trace_file {
            out.push('\n');
            match self.real {
                RealSide::Guest(_) => out.push_str(&render_trace_paths(path, nruns, "guest run")),
                RealSide::Host(_) => {
                    let _ = writeln!(out, "trace     {} (real run, tracefs text)", path.display());
                }
            }
        }
        if let Some(path) = self.sim_trace_file {
            let _ = writeln!(out, "sim trace {} (simulation, ftrace text)", path.display());
        }
        out
    }
}

/// `schedlab compare --vm --setting A --setting B`'s whole text report: a
/// model row and a guest row per set, then each set's first run side by
/// side.
pub struct CompareSettingsText<'a> {
    pub scenario: &'a Scenario,
    /// The model's kernel profile, first seed and seeds per set.
    pub profile: &'a str,
    pub first_seed: u64,
    pub rounds: u64,
    pub header: GuestHeader<'a>,
    /// The feature sets, the guest's runs (alternating between them), and
    /// per set the model's report of each seed.
    pub sets: &'a [Vec<String>],
    pub runs: &'a [GuestRun<'a>],
    pub sims: &'a [Vec<Report>],
    /// The `--trace` base path, one file per guest run.
    pub trace_file: Option<&'a Path>,
}

impl CompareSettingsText<'_> {
    pub fn render(&self) -> String {
        let (scenario, first_seed, runs, sets) = (self.scenario, self.first_seed, self.runs, self.sets);
        let mut out = render_scenario_line(scenario, false);
        let _ = writeln!(
            out,
            "model     {}: {} CPUs, kernel profile {}, seeds {first_seed}-{}",
            scenario.topology.name,
            scenario.topology.nr_cpus(),
            self.profile,
            first_seed + self.rounds - 1
        );
        out.push_str(&self.header.render());
        out.push_str("\nguest runs\n");
        out.push_str(&render_runs(scenario.stall_threshold_ns, &lines(runs), &labels(runs, sets)));
        if !scenario.measures.is_empty() {
            let real_measures = measure_runs(&runs.iter().map(|r| r.report).collect::<Vec<_>>());
            let sim_measures: Vec<Vec<Vec<MeasureRun>>> =
                self.sims.iter().map(|reports| measure_runs(&reports.iter().collect::<Vec<_>>())).collect();
            let mut rows: Vec<(String, Vec<&[MeasureRun]>)> = Vec::new();
            for (k, set) in sets.iter().enumerate() {
                let label = setting_label(set);
                rows.push((format!("model  {label}"), sim_measures[k].iter().map(Vec::as_slice).collect()));
                let mine = runs.iter().zip(&real_measures).filter(|(r, _)| r.setting == k);
                rows.push((format!("guest  {label}"), mine.map(|(_, m)| m.as_slice()).collect()));
            }
            out.push('\n');
            out.push_str(&render_measure_table(&measure_infos(scenario), &rows));
        }
        for (k, set) in sets.iter().enumerate() {
            let Some(i) = runs.iter().position(|r| r.setting == k) else { continue };
            let _ = writeln!(out, "\n{}: seed {first_seed} beside the guest's run {}", setting_label(set), i + 1);
            let figures = figures(&self.sims[k][0], runs[i].report, scenario.stall_threshold_ns);
            out.push_str(&side_by_side(&figures));
        }
        if let Some(path) = self.trace_file {
            out.push('\n');
            out.push_str(&render_trace_paths(path, runs.len(), "guest run"));
        }
        out
    }
}
