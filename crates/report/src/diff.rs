//! `schedlab diff`: one scenario and seed under two settings, and the first
//! scheduler step where the two runs part ways ([`DiffStream`]), their
//! drift and stall totals, and the scenario's measures in each, all
//! computed as the two runs stream by ([`DiffCollector`]).

use std::fmt::Write as _;

use schedlab_analysis::{
    drift_rows, render_divergence, render_drift, render_measures, DiffOptions, DiffStream, Divergence, DriftRow,
    MeasureCollector, MeasureResult, MeasureSpec, MetricsCollector, RunMetrics,
};
use schedlab_scenario::Scenario;
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};
use serde::Serialize;

use crate::measures::measure_specs;
use crate::run::fmt_secs;
use crate::{ReportError, FORMAT_VERSION};

/// One side's run as the diff reads it: its settings and how it ended (what
/// it emitted went through a [`DiffCollector`]).
pub struct DiffRun<'a> {
    /// The setting as typed.
    pub setting: &'a str,
    /// How it resolved: the kernel profile, ITMT, the features that differ
    /// from the profile's defaults.
    pub kernel: String,
    pub itmt: bool,
    /// `sysctl kernel.sched_energy_aware` of the run's machine.
    pub energy_aware: bool,
    pub features_changed: Vec<String>,
    pub end_ns: u64,
    pub notes: Vec<String>,
}

/// One side of the report.
#[derive(Clone, Debug, Serialize)]
pub struct DiffSide {
    pub setting: String,
    pub kernel: String,
    pub itmt: bool,
    /// Written only when off (the kernel's default is on), so reports of
    /// settings that never touch it read as before.
    #[serde(skip_serializing_if = "is_true")]
    pub energy_aware: bool,
    pub features_changed: Vec<String>,
    pub simulated_ns: u64,
    pub events: usize,
    pub notes: Vec<String>,
    /// Stalls and handoffs summed over the workload threads.
    pub stalls: u64,
    pub handoffs: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DiffMeasures {
    pub a: Vec<MeasureResult>,
    pub b: Vec<MeasureResult>,
}

/// What `schedlab diff` prints (and, with `--json`, serialises).
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    pub format: u32,
    pub scenario: String,
    pub seed: u64,
    pub stall_threshold_ns: u64,
    /// A and B resolve to the same kernel settings.
    pub same_setting: bool,
    pub a: DiffSide,
    pub b: DiffSide,
    pub divergence: Option<Divergence>,
    pub drift: Vec<DriftRow>,
    pub measures: DiffMeasures,
}

/// Stalls and handoffs summed over the workload threads.
fn stall_totals(m: &RunMetrics, keep: &dyn Fn(Pid) -> bool) -> (u64, u64) {
    m.tasks
        .iter()
        .filter(|t| keep(t.pid))
        .fold((0, 0), |(s, h), t| (s + t.handoff_latency.at_or_above_threshold, h + t.handoff_latency.count))
}

/// One run's figures, computed as its events arrive.
struct SideCollector {
    table: TaskTable,
    metrics: MetricsCollector,
    measures: Vec<MeasureCollector>,
}

/// Both runs of a diff, observed as they are simulated (run 0 is A, run 1
/// is B): the divergence ([`DiffStream`]), and each run's metrics and
/// measures, each in memory bounded by the report rather than the runs.
/// Read run [`DiffCollector::next_run`] next while both still send.
pub struct DiffCollector {
    threshold_ns: u64,
    specs: Vec<MeasureSpec>,
    stream: DiffStream,
    sides: [Option<SideCollector>; 2],
}

impl DiffCollector {
    pub fn new(scenario: &Scenario, opts: &DiffOptions) -> Self {
        DiffCollector {
            threshold_ns: scenario.stall_threshold_ns,
            specs: measure_specs(scenario),
            stream: DiffStream::new(*opts),
            sides: [None, None],
        }
    }

    /// Run `run`'s task table as its stream begins.
    pub fn start(&mut self, run: usize, table: &TaskTable) {
        self.stream.start(run, table);
        self.sides[run] = Some(SideCollector {
            table: table.clone(),
            metrics: MetricsCollector::new(self.threshold_ns, None),
            measures: self.specs.iter().map(|m| MeasureCollector::new(table, m)).collect(),
        });
    }

    /// A task run `run` created, before the events that name it.
    pub fn task_new(&mut self, run: usize, pid: Pid, info: &TaskInfo) {
        self.stream.task_new(run, pid, info);
        let side = self.sides[run].as_mut().expect("start() first");
        side.table.tasks.insert(pid, info.clone());
    }

    /// Run `run`'s next event.
    pub fn event(&mut self, run: usize, ev: &Event) {
        self.stream.event(run, ev);
        let side = self.sides[run].as_mut().expect("start() first");
        side.metrics.observe(ev, &side.table);
        side.measures.iter_mut().for_each(|m| m.observe(ev));
    }

    /// The run to read next: the one behind, so that the events waiting to
    /// be compared stay few.
    pub fn next_run(&self) -> usize {
        self.stream.behind()
    }

    /// The report once both runs have ended; `workload` says which pids are
    /// the scenario's own threads.
    pub fn finish(
        self,
        scenario: &Scenario,
        seed: u64,
        workload: &dyn Fn(Pid) -> bool,
        a: DiffRun,
        b: DiffRun,
    ) -> DiffReport {
        let events = self.stream.seen();
        let divergence = self.stream.finish();
        let [sa, sb] = self.sides.map(|s| s.expect("both runs started"));
        let figures = |s: SideCollector, end: u64| {
            let metrics = s.metrics.ending_at(end).finish(&s.table);
            let measures: Vec<MeasureResult> = s.measures.into_iter().map(|m| m.finish(end)).collect();
            (metrics, measures)
        };
        let (ma, measures_a) = figures(sa, a.end_ns);
        let (mb, measures_b) = figures(sb, b.end_ns);
        let drift = drift_rows(&ma, &mb, |t| workload(t.pid));
        let side = |r: DiffRun, m: &RunMetrics, events: usize| {
            let (stalls, handoffs) = stall_totals(m, workload);
            DiffSide {
                setting: r.setting.to_string(),
                kernel: r.kernel,
                itmt: r.itmt,
                energy_aware: r.energy_aware,
                features_changed: r.features_changed,
                simulated_ns: r.end_ns,
                events,
                notes: r.notes,
                stalls,
                handoffs,
            }
        };
        let (a, b) = (side(a, &ma, events[0]), side(b, &mb, events[1]));
        DiffReport {
            format: FORMAT_VERSION,
            scenario: scenario.name.clone(),
            seed,
            stall_threshold_ns: self.threshold_ns,
            same_setting: a.kernel == b.kernel
                && a.itmt == b.itmt
                && a.energy_aware == b.energy_aware
                && a.features_changed == b.features_changed,
            a,
            b,
            divergence,
            drift,
            measures: DiffMeasures { a: measures_a, b: measures_b },
        }
    }
}

impl DiffReport {
    /// The `--json` document.
    pub fn to_json(&self) -> Result<String, ReportError> {
        crate::to_json(self)
    }

    /// The text report; `scenario_path` as the user named the file.
    pub fn render(&self, scenario_path: &str) -> String {
        let (a, b) = (&self.a, &self.b);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "scenario  {} ({scenario_path}), seed {}, {} simulated",
            self.scenario,
            self.seed,
            fmt_secs(a.simulated_ns.max(b.simulated_ns))
        );
        let shown = |t: &str| if t.trim().is_empty() { "\"\"".to_string() } else { t.to_string() };
        let _ = writeln!(out, "A         {}: {}", shown(&a.setting), describe(a));
        let _ = writeln!(out, "B         {}: {}", shown(&b.setting), describe(b));
        for (label, side) in [("A", a), ("B", b)] {
            for note in &side.notes {
                let _ = writeln!(out, "note {label}    {note}");
            }
        }
        if self.same_setting {
            let _ = writeln!(
                out,
                "note      A and B resolve to the same kernel settings: the runs are identical by construction"
            );
        }
        out.push('\n');
        let Some(d) = &self.divergence else {
            let _ = writeln!(out,
                "no divergence: both runs emit the same {} events; the setting made no difference for seed {} and {} of simulated time",
                a.events,
                self.seed,
                fmt_secs(a.simulated_ns)
            );
            return out;
        };
        out.push_str(&render_divergence(d));
        out.push('\n');
        out.push_str("drift: the whole runs side by side (identical up to the divergence)\n");
        out.push_str(&render_drift(&self.drift, self.stall_threshold_ns));
        if !self.measures.a.is_empty() {
            out.push('\n');
            out.push_str("measures  (from the scenario's [[measure]] tables)\n");
            for (label, m) in [("A", &self.measures.a), ("B", &self.measures.b)] {
                for line in render_measures(m).lines() {
                    let _ = writeln!(out, "  {label}  {line}");
                }
            }
        }
        out.push('\n');
        if a.handoffs + b.handoffs > 0 {
            let pct = |s: u64, h: u64| if h == 0 { 0.0 } else { 100.0 * s as f64 / h as f64 };
            let _ = writeln!(
                out,
                "stalls    A: {} of {} handoffs ({:.3} %); B: {} of {} ({:.3} %)",
                a.stalls,
                a.handoffs,
                pct(a.stalls, a.handoffs),
                b.stalls,
                b.handoffs,
                pct(b.stalls, b.handoffs),
            );
        }
        let _ = writeln!(out, "events    A: {}, B: {}", d.a.total_events, d.b.total_events);
        out
    }
}

/// "kernel 6.12, ITMT on, features: defaults" (", EAS off" after the ITMT
/// part when `sched_energy_aware` is 0).
fn describe(s: &DiffSide) -> String {
    format!(
        "kernel {}, ITMT {}{}, features: {}",
        s.kernel,
        if s.itmt { "on" } else { "off" },
        if s.energy_aware { "" } else { ", EAS off" },
        if s.features_changed.is_empty() { "defaults".to_string() } else { s.features_changed.join(" ") }
    )
}

/// For `skip_serializing_if`.
fn is_true(b: &bool) -> bool {
    *b
}
