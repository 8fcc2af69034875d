//! One run's report, simulated, real or read from a file: its analysis
//! and the sections every command prints from it — the per-thread table,
//! the measures, the longest stalls, work conservation, the cause table
//! and the stall narratives.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use schedlab_analysis::{
    analyze, attribute_stalls, measure, render_cause_table, render_measures, render_run_table, render_stall_narratives,
    render_work_conservation, work_conservation, AnalysisOptions, Attribution, AttributionCollector,
    AttributionOptions, MeasureCollector, MeasureResult, MetricsCollector, RunMetrics, SchbenchCollector,
    WorkConsCollector, WorkConsOptions, WorkConservation,
};
use schedlab_scenario::Scenario;
use schedlab_topology::{CpuSet, Topology, MAX_CPUS};
use schedlab_trace::{Pid, TaskTable, Trace};

use crate::measures::measure_specs;

/// [`Report::of`] as a run streams: every part computed online (see each
/// collector's bounds), plus schbench's own figures for a simulated run.
/// Feed the run's task table first, then its events in time order.
pub struct ReportCollector {
    metrics: MetricsCollector,
    workcons: Option<WorkConsCollector>,
    attribution: AttributionCollector,
    measures: Vec<MeasureCollector>,
    schbench: Option<SchbenchCollector>,
    rtapp: schedlab_analysis::RtAppCollector,
    deadline: Option<schedlab_analysis::DeadlineCollector>,
    table: TaskTable,
    workcons_opts: WorkConsOptions,
    /// Each CPU's task when the stream begins (0: idle).
    initial: Vec<Pid>,
}

impl ReportCollector {
    /// For a simulated run of `scenario` (every CPU starts idle) on
    /// `nr_cpus` CPUs, with the run's `table`.
    pub fn new(
        scenario: &Scenario,
        table: &TaskTable,
        nr_cpus: u32,
        allowed: BTreeMap<Pid, Vec<u32>>,
        grace_ns: u64,
    ) -> Self {
        let mut c = ReportCollector::for_trace(
            Some(scenario),
            scenario.stall_threshold_ns,
            table,
            vec![0; nr_cpus as usize],
            None,
            allowed,
            grace_ns,
        );
        c.schbench = scenario.schbench.as_ref().map(|_| SchbenchCollector::new(table, None)).filter(|c| c.applies());
        c
    }

    /// For a trace read as a stream: stalls at `threshold_ns`, the
    /// `scenario`'s measures if any, each CPU's `initial` task (one entry
    /// per CPU), events after `end_ns` ignored; what [`Report::of`] gives
    /// for the whole trace.
    pub fn for_trace(
        scenario: Option<&Scenario>,
        threshold_ns: u64,
        table: &TaskTable,
        initial: Vec<Pid>,
        end_ns: Option<u64>,
        allowed: BTreeMap<Pid, Vec<u32>>,
        grace_ns: u64,
    ) -> Self {
        let nr_cpus = initial.len() as u32;
        let specs = scenario.map(measure_specs).unwrap_or_default();
        ReportCollector {
            metrics: MetricsCollector::new(threshold_ns, end_ns),
            workcons: None,
            attribution: AttributionCollector::new(
                &AttributionOptions { stall_threshold_ns: threshold_ns, end_ts: end_ns, allowed: allowed.clone() },
                table,
                nr_cpus,
            ),
            measures: specs.iter().map(|m| MeasureCollector::new(table, m)).collect(),
            schbench: None,
            rtapp: Default::default(),
            deadline: scenario
                .map(|s| deadline_collector(s, table, nr_cpus, &allowed, grace_ns, end_ns))
                .filter(|d| d.applies()),
            table: table.clone(),
            workcons_opts: WorkConsOptions { allowed, grace_ns, end_ts: end_ns },
            initial,
        }
    }

    /// Keep the first `n` stalls and their stories instead of
    /// [`schedlab_analysis::KEPT_STALLS`] (every stall is counted, and in the
    /// cause table and the longest); see [`kept_stalls`].
    pub fn with_kept_stalls(mut self, n: usize) -> Self {
        self.metrics = self.metrics.with_kept_stalls(n);
        self.attribution = self.attribution.with_kept_stalls(n);
        self
    }

    /// A thread `scenario`'s run forked, before its first event: it may use
    /// its template's CPUs (it starts on its parent's mask for the few
    /// instructions before it sets them).
    pub fn task_forked(&mut self, scenario: &Scenario, pid: Pid, info: &schedlab_trace::TaskInfo) {
        let allowed = scenario.forked_spec(&info.comm).map(|t| t.affinity.to_u32_vec());
        self.task_new(pid, info, allowed);
    }

    /// A task created mid-run (a `fork`), before its first event: its
    /// comm, and the CPUs it may use (`None`: every CPU).
    pub fn task_new(&mut self, pid: Pid, info: &schedlab_trace::TaskInfo, allowed: Option<Vec<u32>>) {
        self.table.tasks.insert(pid, info.clone());
        if let Some(a) = &allowed {
            self.workcons_opts.allowed.insert(pid, a.clone());
        }
        if let Some(w) = self.workcons.as_mut() {
            w.task_new(pid, info, allowed.clone());
        }
        self.attribution.task_new(pid, info, allowed);
    }

    pub fn observe(&mut self, ev: &schedlab_trace::Event) {
        self.metrics.observe(ev, &self.table);
        let (opts, table, initial) = (&self.workcons_opts, &self.table, &self.initial);
        self.workcons.get_or_insert_with(|| WorkConsCollector::new(opts, table, ev.ts, initial.clone())).observe(ev);
        self.attribution.observe(ev);
        for m in &mut self.measures {
            m.observe(ev);
        }
        if let Some(s) = self.schbench.as_mut() {
            s.observe(ev);
        }
        self.rtapp.observe(ev);
        if let Some(d) = self.deadline.as_mut() {
            d.observe(ev);
        }
    }

    /// The report of the run that ended at `end_ns`, and schbench's figures.
    pub fn finish(self, end_ns: u64) -> (Report, Option<schedlab_analysis::SchbenchReport>) {
        let metrics = self.metrics.ending_at(end_ns).finish(&self.table);
        let workcons = self
            .workcons
            .unwrap_or_else(|| WorkConsCollector::new(&self.workcons_opts, &self.table, 0, self.initial.clone()))
            .finish(end_ns);
        let attribution = self.attribution.finish();
        let measures = self.measures.into_iter().map(|m| m.finish(end_ns)).collect();
        let schbench = self.schbench.map(|s| s.finish(end_ns));
        let rtapp = self.rtapp.finish(&self.table);
        let deadline = self.deadline.map(|d| d.finish(end_ns, &self.table)).unwrap_or_default();
        (Report { metrics, workcons, attribution, measures, rtapp, deadline }, schbench)
    }
}

/// The analysis of one run, simulated, real or read from a file.
pub struct Report {
    pub metrics: RunMetrics,
    pub workcons: WorkConservation,
    pub attribution: Attribution,
    pub measures: Vec<MeasureResult>,
    /// Per-phase figures from rt-app's own trace markers (empty unless the
    /// trace is of an rt-app run with `ftrace` on).
    pub rtapp: schedlab_analysis::RtAppReport,
    /// SCHED_DEADLINE tasks' jobs, misses and throttled time (empty
    /// without deadline tasks in the scenario).
    pub deadline: schedlab_analysis::DeadlineReport,
}

/// The deadline collector of `scenario`'s SCHED_DEADLINE threads, found in
/// `table` by name (a real run's tids are not the model's pids).
fn deadline_collector(
    scenario: &Scenario,
    table: &TaskTable,
    nr_cpus: u32,
    allowed: &BTreeMap<Pid, Vec<u32>>,
    grace_ns: u64,
    end_ns: Option<u64>,
) -> schedlab_analysis::DeadlineCollector {
    let mut res = BTreeMap::new();
    for spec in &scenario.threads {
        let Some(d) = spec.dl else { continue };
        let r = schedlab_analysis::DlReservation {
            runtime_ns: d.runtime_ns,
            deadline_ns: d.deadline_ns,
            period_ns: d.period_ns,
        };
        for (&pid, info) in &table.tasks {
            if info.comm == spec.name {
                let cpus = allowed.get(&pid).cloned().unwrap_or_else(|| spec.affinity.to_u32_vec());
                res.insert(pid, (r, cpus));
            }
        }
    }
    schedlab_analysis::DeadlineCollector::new(res, nr_cpus, grace_ns, end_ns)
}

/// The stalls a report keeps one by one when `narratives` are to be told:
/// [`schedlab_analysis::KEPT_STALLS`], or more to tell more.
pub fn kept_stalls(narratives: usize) -> usize {
    narratives.max(schedlab_analysis::KEPT_STALLS)
}

impl Report {
    /// Keep only the first `n` stalls and stories, as a streamed report
    /// does (the whole trace's keeps them all): every stall stays counted,
    /// in the cause table and among the longest.
    pub fn keep_stalls(&mut self, n: usize) {
        self.metrics.keep_stalls(n);
        self.attribution.keep_stalls(n);
    }

    /// Leave out the figures a repaired capture cannot support: the work
    /// conservation of CPUs whose occupant is too often unknown (see
    /// `WorkConservation::leave_out_uncertain`). Wakeup latencies ending at
    /// a repaired switch were never counted (`wakeup_latency_unknown`).
    pub fn leave_out_uncertain(&mut self, repairs: &schedlab_trace::RepairStats) {
        let uncertain = repairs.cpus.iter().map(|(&c, r)| (c, r.uncertain_ns)).collect();
        self.workcons.leave_out_uncertain(&uncertain);
    }

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
        let allowed_for_deadline = allowed.clone();
        let attribution =
            attribute_stalls(trace, &AttributionOptions { stall_threshold_ns: threshold_ns, end_ts: end_ns, allowed });
        let end = end_ns.unwrap_or(metrics.end_ts);
        let specs = scenario.map(measure_specs).unwrap_or_default();
        let measures = specs.iter().map(|m| measure(trace, m, end)).collect();
        let rtapp = schedlab_analysis::rtapp_phases(trace);
        let deadline = match scenario {
            Some(s) => {
                let nr_cpus = trace.events.iter().map(|e| e.cpu + 1).max().unwrap_or(0);
                let mut d = deadline_collector(s, &trace.table, nr_cpus, &allowed_for_deadline, grace_ns, end_ns);
                for ev in &trace.events {
                    d.observe(ev);
                }
                d.finish(end, &trace.table)
            }
            None => Default::default(),
        };
        Report { metrics, workcons, attribution, measures, rtapp, deadline }
    }

    /// [`Report::of`] a run of `scenario` up to `end_ns` at the scenario's
    /// threshold, with per-thread rows only for `workload` (a real trace
    /// names every task on the machine).
    pub fn of_workload(
        scenario: &Scenario,
        trace: &Trace,
        end_ns: u64,
        allowed: BTreeMap<Pid, Vec<u32>>,
        workload: &[Pid],
        grace_ns: u64,
    ) -> Report {
        let mut r = Report::of(trace, Some(scenario), scenario.stall_threshold_ns, Some(end_ns), allowed, grace_ns);
        r.retain_tasks(|pid| workload.contains(&pid));
        r
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
pub fn render_table_and_measures(r: &Report) -> String {
    let mut out = render_run_table(&r.metrics);
    if !r.measures.is_empty() {
        out.push('\n');
        out.push_str("measures  (from the scenario's [[measure]] tables)\n");
        out.push_str(&render_measures(&r.measures));
    }
    if !r.rtapp.is_empty() {
        out.push('\n');
        out.push_str("rt-app    per phase, from rt-app's own trace markers (rtapp_loop / rtapp_stats)\n");
        out.push_str(&schedlab_analysis::render_rtapp_phases(&r.rtapp));
    }
    if !r.deadline.is_empty() {
        out.push('\n');
        out.push_str(
            "deadline  SCHED_DEADLINE tasks: a job runs from a wakeup to the next block and misses when it ends past \
             wakeup + deadline;\n          throttled = runnable while a CPU it may use ran no deadline task (>= the \
             work-conservation grace)\n",
        );
        out.push_str(&schedlab_analysis::render_deadline(&r.deadline));
    }
    out
}

/// The longest stalls (when there were handoffs), work conservation, and
/// (if there were stalls) the cause table and the narratives of the first
/// `narratives` stalls.
pub fn render_stalls_and_causes(r: &Report, table: &TaskTable, narratives: usize) -> String {
    let mut out = String::new();
    let handoffs = r.handoffs();
    if handoffs > 0 {
        out.push_str(&render_stalls(&r.metrics, handoffs, table));
    }
    out.push_str(&render_workcons_and_causes(&r.workcons, &r.attribution, narratives));
    out
}

/// Every section of a run's report: [`render_table_and_measures`], then
/// [`render_stalls_and_causes`].
pub fn render_report(r: &Report, table: &TaskTable, narratives: usize) -> String {
    render_table_and_measures(r) + &render_stalls_and_causes(r, table, narratives)
}

/// "stalls N of M handoffs took >= T us", then the longest
/// ([`schedlab_analysis::LONGEST_STALLS`]), one line each.
fn render_stalls(metrics: &RunMetrics, handoffs: u64, table: &TaskTable) -> String {
    let mut out = String::from("\n");
    let _ = writeln!(
        out,
        "stalls    {} of {handoffs} handoffs took >= {} us ({:.3} %)",
        metrics.stall_count(),
        metrics.stall_threshold_ns / 1000,
        100.0 * metrics.stall_count() as f64 / handoffs as f64
    );
    for s in &metrics.longest_stalls {
        let _ = writeln!(
            out,
            "          {:>8} us  {} -> {} on {} at {}.{:06} s",
            s.latency_ns / 1000,
            table.comm(s.waker_pid),
            table.comm(s.wakee_pid),
            s.obj_name,
            s.start_ts / 1_000_000_000,
            s.start_ts % 1_000_000_000 / 1000
        );
    }
    out
}

/// Work conservation, then (if there were stalls) the cause table and the
/// narratives of the first `narratives` stalls.
fn render_workcons_and_causes(workcons: &WorkConservation, attribution: &Attribution, narratives: usize) -> String {
    let mut out = String::from("\n");
    let _ = writeln!(
        out,
        "work conservation: runnable tasks waiting while a CPU of their affinity is idle (strict, and >= {} us)",
        workcons.grace_ns / 1000
    );
    out.push_str(&render_work_conservation(workcons));
    let unexplained = if attribution.unexplained > 0 {
        format!(
            "{} more stalls not explained: each one's signal left the analysis's window of the last {} events \
             (a handoff open that long); they are counted above and left out here\n",
            attribution.unexplained,
            schedlab_analysis::MAX_WINDOW_EVENTS
        )
    } else {
        String::new()
    };
    if attribution.explained() == 0 {
        if !unexplained.is_empty() {
            out.push('\n');
            out.push_str(&unexplained);
        }
        return out;
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "stall causes: {} stalls, {}.{:03} ms of handoff time",
        attribution.explained(),
        attribution.total_ns / 1_000_000,
        attribution.total_ns / 1000 % 1000
    );
    out.push_str(&unexplained);
    out.push_str(&render_cause_table(attribution));
    if narratives > 0 {
        out.push('\n');
        out.push_str(&render_stall_narratives(attribution, narratives));
    }
    out
}

/// What a simulated run's report says about the run before its tables.
pub struct SimHeader<'a> {
    pub scenario: &'a Scenario,
    /// The machine it ran on, as the run resolved it.
    pub machine: &'a Topology,
    /// The kernel profile, its base slice on this machine, and the
    /// features that differ from its defaults.
    pub kernel: &'a str,
    pub base_slice_ns: u64,
    pub features_changed: &'a [String],
    pub simulated_ns: u64,
    pub seed: u64,
    pub events: usize,
    /// Wall seconds the simulation took.
    pub wall_s: f64,
    pub notes: &'a [String],
    /// The model's task groups, one `cgroup` line each.
    pub groups: &'a [crate::CgroupRow],
}

impl SimHeader<'_> {
    /// The scenario, machine, kernel and run lines, then the notes.
    pub fn render(&self) -> String {
        let (s, topo) = (self.scenario, self.machine);
        let mut out = String::new();
        let _ = writeln!(out, "scenario  {} ({})", s.name, s.path);
        if !s.description.is_empty() {
            let _ = writeln!(out, "          {}", s.description);
        }
        let _ = writeln!(
            out,
            "machine   {}: {} CPUs, HZ={}, preempt={}, ITMT {}",
            topo.name,
            topo.nr_cpus(),
            topo.hz,
            topo.preempt.as_str(),
            if topo.itmt_enabled { "on" } else { "off" }
        );
        let _ = writeln!(out, "hardware  {}", hardware_line(topo));
        let changed = self.features_changed;
        let _ = writeln!(
            out,
            "kernel    {} (base slice {} us), features: {}",
            self.kernel,
            self.base_slice_ns / 1000,
            if changed.is_empty() { "defaults".to_string() } else { changed.join(" ") }
        );
        let secs = self.wall_s.max(1e-9);
        let _ = writeln!(
            out,
            "run       {} simulated, seed {}, {} events in {:.3} s wall ({} real time)",
            fmt_secs(self.simulated_ns),
            self.seed,
            self.events,
            secs,
            speed(self.simulated_ns as f64 / 1e9 / secs)
        );
        for note in self.notes {
            let _ = writeln!(out, "note      {note}");
        }
        for row in self.groups {
            let _ = writeln!(out, "cgroup    {}", row.line());
        }
        out
    }
}

/// `schedlab run`'s whole text report: the header, the sections, the
/// scenario's schbench figures when it models schbench, and the files the
/// run wrote.
pub struct RunText<'a> {
    pub header: SimHeader<'a>,
    pub report: &'a Report,
    /// The run's task names.
    pub table: &'a TaskTable,
    /// schbench's own figures, for a `[schbench]` scenario.
    pub schbench: Option<schedlab_analysis::SchbenchReport>,
    /// The model's schedstats section, when shown (`--why`, and every
    /// `[schbench]` run).
    pub why: Option<&'a crate::why::Why>,
    /// Narratives of the first N stalls.
    pub narratives: usize,
    /// Where `--trace` and `--perfetto` wrote the trace.
    pub trace_file: Option<&'a Path>,
    pub perfetto_file: Option<&'a Path>,
    /// The `--plot` directory and how many SVG files went there.
    pub plots: Option<(&'a Path, usize)>,
}

impl RunText<'_> {
    pub fn render(&self) -> String {
        let mut out = self.header.render();
        out.push('\n');
        out.push_str(&render_table_and_measures(self.report));
        if let (Some(sb), Some(report)) = (&self.header.scenario.schbench, &self.schbench) {
            out.push('\n');
            let _ = writeln!(out, "schbench  {} (its own metrics, as it prints them)", sb.command_line());
            out.push_str(&report.render());
        }
        if let Some(why) = self.why {
            out.push('\n');
            out.push_str(&why.render());
        }
        out.push_str(&render_stalls_and_causes(self.report, self.table, self.narratives));
        if let Some(path) = self.trace_file {
            out.push('\n');
            let _ = writeln!(out, "trace     {} ({} events, ftrace text)", path.display(), self.header.events);
        }
        if let Some(path) = self.perfetto_file {
            let _ = writeln!(out, "perfetto  {} (open at https://ui.perfetto.dev)", path.display());
        }
        if let Some((dir, files)) = self.plots {
            let stall_plots = files - 1;
            let _ = writeln!(
                out,
                "plots     {}: {files} SVG files (handoff-cdf.svg, {stall_plots} stall plots)",
                dir.display()
            );
        }
        out
    }
}

/// The title of `schedlab run --plot`'s handoff CDF.
pub fn run_plot_title(scenario: &str, seed: u64) -> String {
    format!("{scenario}: handoff latency per wakee thread group (seed {seed})")
}

/// The machine's idle states and noise in one line: "idle menu over POLL,
/// C1, C2, C3 (acpi_idle); noise irq 100/s per CPU".
pub fn hardware_line(topo: &Topology) -> String {
    let states: Vec<&str> = topo.idle.states.iter().map(|s| s.name.as_str()).collect();
    let idle = match topo.idle.governor {
        schedlab_topology::Governor::None => format!("idle {} only (no cpuidle governor)", states.join(", ")),
        g => format!("idle {} over {} ({})", g.as_str(), states.join(", "), topo.idle.driver),
    };
    let noise = if topo.noise.is_empty() {
        "no noise".to_string()
    } else {
        let parts: Vec<String> = topo.noise.iter().map(|n| format!("{} {}/s", n.name, n.rate_hz)).collect();
        format!("noise {} per CPU", parts.join(", "))
    };
    format!("{idle}; {noise}")
}

/// One line per topology preset: size, HZ, preemption, ITMT, description
/// (`schedlab topologies`).
pub fn render_presets() -> String {
    let mut out = String::new();
    for n in Topology::preset_names() {
        let t = Topology::preset(n).expect("preset names resolve");
        let _ = writeln!(
            out,
            "{:<20} {:>4} CPUs  HZ={:<5} preempt={:<9} ITMT {}  {}",
            n,
            t.nr_cpus(),
            t.hz,
            t.preempt.as_str(),
            if t.itmt_enabled { "on " } else { "off" },
            t.description
        );
    }
    out
}

/// `ns` as seconds with milliseconds: `5.000 s`.
pub fn fmt_secs(ns: u64) -> String {
    format!("{}.{:03} s", ns / 1_000_000_000, ns % 1_000_000_000 / 1_000_000)
}

/// CPU ids as the kernel prints a cpulist (`0-3,8`), through
/// [`CpuSet::to_cpulist`]. A trace from a machine larger than the model's
/// [`MAX_CPUS`] can name CPUs a `CpuSet` cannot hold: those follow one by one.
pub fn cpulist(cpus: impl IntoIterator<Item = usize>) -> String {
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

/// Simulated over wall time: whole numbers from 10x, three significant
/// digits below (a 224-CPU run at 0.07x is not "0x").
fn speed(ratio: f64) -> String {
    if ratio >= 10.0 {
        format!("{ratio:.0}x")
    } else if ratio >= 1.0 {
        format!("{ratio:.2}x")
    } else {
        format!("{ratio:.3}x")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn unexplained_stalls_are_said_even_when_none_is_explained() {
        let workcons = work_conservation(&Trace::default(), &WorkConsOptions::default());
        let mut a = attribute_stalls(&Trace::default(), &AttributionOptions::default());
        let text = |a: &Attribution| render_workcons_and_causes(&workcons, a, 0);
        assert!(!text(&a).contains("not explained"));
        a.unexplained = 3;
        assert!(text(&a).contains("3 more stalls not explained: each one's signal left"), "{}", text(&a));
    }
}
