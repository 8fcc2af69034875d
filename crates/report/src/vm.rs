//! `schedlab vm`'s text report: one run reported as `schedlab real`
//! reports it, or one line per run and the measures per feature set when
//! the session ran several. The VM crate's records are copied into plain
//! fields by the caller, so the report layer does not depend on it.

use std::fmt::Write as _;
use std::path::Path;

use schedlab_scenario::Scenario;
use schedlab_trace::TaskTable;

use crate::measures::{measure_infos, MeasureRun};
use crate::real::{render_scenario_line, GuestHeader};
use crate::render::render_measure_table;
use crate::run::{render_report, Report};
use crate::runs::{measure_runs, render_runs, render_trace_paths, setting_label, RunLine};

/// One run of a guest session, analysed.
pub struct GuestRun<'a> {
    /// Its feature set: an index into the session's sets (0 without sets).
    pub setting: usize,
    /// Events in the run's window, and events the ring buffer lost.
    pub events: usize,
    pub lost_events: u64,
    pub notes: &'a [String],
    /// The capture's task names.
    pub table: &'a TaskTable,
    pub report: &'a Report,
    /// The scenario's cgroups in this run (empty without cgroups).
    pub cgroups: Vec<crate::real::CgroupRow>,
}

impl<'a> GuestRun<'a> {
    /// The run as the runs table takes it.
    pub fn line(&self) -> RunLine<'a> {
        RunLine { events: self.events, lost_events: self.lost_events, report: self.report }
    }
}

/// Each run's line in the runs table.
pub(crate) fn lines<'a>(runs: &[GuestRun<'a>]) -> Vec<RunLine<'a>> {
    runs.iter().map(GuestRun::line).collect()
}

/// Each run's feature set as the tables name it.
pub(crate) fn labels(runs: &[GuestRun], sets: &[Vec<String>]) -> Vec<String> {
    runs.iter().map(|r| setting_label(&sets[r.setting])).collect()
}

/// `schedlab vm`'s whole text report.
pub struct VmText<'a> {
    pub scenario: &'a Scenario,
    pub header: GuestHeader<'a>,
    /// The `--setting` feature sets the runs alternate between (none: one set).
    pub sets: &'a [Vec<String>],
    /// Rounds of the sets (`--runs`).
    pub rounds: u32,
    pub runs: &'a [GuestRun<'a>],
    /// Narratives of the first N stalls (a single run's report).
    pub narratives: usize,
    /// The `--trace` base path, one file per run.
    pub trace_file: Option<&'a Path>,
}

impl VmText<'_> {
    pub fn render(&self) -> String {
        let (scenario, runs, sets) = (self.scenario, self.runs, self.sets);
        let mut out = render_scenario_line(scenario, true);
        out.push_str(&self.header.render());
        if !sets.is_empty() {
            let names: Vec<String> = sets.iter().map(|s| setting_label(s)).collect();
            let _ = writeln!(
                out,
                "settings  in turn, {} round{}: {} (each written to sched/features and read back before its run)",
                self.rounds,
                if self.rounds > 1 { "s" } else { "" },
                names.join(" | ")
            );
        }
        let mut notes: Vec<&String> = runs.iter().flat_map(|r| r.notes.iter()).collect();
        notes.sort();
        notes.dedup();
        for n in notes {
            let _ = writeln!(out, "note      {n}");
        }
        for (k, run) in runs.iter().enumerate() {
            for row in &run.cgroups {
                let which = if runs.len() > 1 { format!("run {}: ", k + 1) } else { String::new() };
                let _ = writeln!(out, "cgroup    {which}{}", row.line());
            }
        }
        out.push('\n');
        if runs.len() == 1 {
            let run = &runs[0];
            out.push_str(&render_report(run.report, run.table, self.narratives));
        } else {
            let labels = if sets.is_empty() { Vec::new() } else { labels(runs, sets) };
            out.push_str(&render_runs(scenario.stall_threshold_ns, &lines(runs), &labels));
            if !scenario.measures.is_empty() {
                let per_run = measure_runs(&runs.iter().map(|r| r.report).collect::<Vec<_>>());
                let rows: Vec<(String, Vec<&[MeasureRun]>)> = if sets.is_empty() {
                    vec![(format!("guest {}", self.header.kernel), per_run.iter().map(Vec::as_slice).collect())]
                } else {
                    sets.iter()
                        .enumerate()
                        .map(|(k, set)| {
                            let mine = runs.iter().zip(&per_run).filter(|(r, _)| r.setting == k);
                            (setting_label(set), mine.map(|(_, m)| m.as_slice()).collect())
                        })
                        .collect()
                };
                out.push('\n');
                out.push_str(&render_measure_table(&measure_infos(scenario), &rows));
            }
        }
        if let Some(t) = self.trace_file {
            out.push('\n');
            out.push_str(&render_trace_paths(t, runs.len(), "run"));
        }
        out
    }
}
