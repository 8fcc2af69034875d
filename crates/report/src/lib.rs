//! The report layer: everything made from an analysis once it is done —
//! one run's report and its printed sections, the choice of a workload in a
//! trace captured elsewhere, and a sweep's results with their statistics,
//! A/B comparisons, tables, CSV and JSON. Each command's whole text report
//! is assembled here (`RunText`, `RealText`, `VmText`, `CompareText`,
//! `render_sweep_text`, `FidelityText`, ...) from plain fields the CLI fills in, so that
//! the CLI only prints what it is handed.
//!
//! It depends on the analysis and the trace vocabulary (and on the
//! scenario, whose `[[measure]]`s and thread names it reads), never on the
//! simulator or the kernel model: a plot, a merge of shard files or the
//! report of a real kernel's trace needs none of them.

pub mod ab;
mod export;
pub mod measures;
mod render;
mod results;
pub mod stats;

pub use ab::{compare, parse_ab_pair, render_ab, resolve_spec, AbError, AbReport, AbSpec, GateFailed, SweepReport};
pub use export::{render_csv, CSV_COLUMNS};
pub use render::{
    render, render_breakdown, render_burst_starts, render_measure_table, render_measures, render_summary,
    render_sweep_text, sweep_timing,
};
pub use results::{BurstStarts, RunResult, SettingResult, SweepResult};

mod analyze;
mod compare;
mod diff;
mod error;
mod fidelity;
pub mod input;
mod json;
mod real;
mod run;
mod runs;
pub mod throughput;
mod vm;
pub mod why;
pub mod workload;

pub use analyze::{Streamed, TraceFilter, TraceOptions, TraceReport, MAX_LINE_BYTES};
pub use compare::{cause_rows, figures, side_by_side, CompareSettingsText, CompareText, RealSide};
pub use diff::{DiffCollector, DiffMeasures, DiffReport, DiffRun, DiffSide};
pub use error::ReportError;
pub use fidelity::{
    fidelity_failures, fidelity_summary, fidelity_value, render_fidelity_table, FidelityJson, FidelityLoad,
    FidelityRow, FidelityRowJson, FidelityText, Figure, NoFigure, RoundJson, Verdict,
};
pub use json::{AnalysisJson, RealJson, RunJson, SweepJson, VmJson, VmRunJson, FORMAT_VERSION};
pub use real::{render_scenario_line, CgroupRow, GuestHeader, RealHeader, RealText};
pub use run::{
    cpulist, fmt_secs, kept_stalls, render_presets, render_report, render_stalls_and_causes, render_table_and_measures,
    run_plot_title, Report, ReportCollector, RunText, SimHeader,
};
pub use runs::{feature_changes, measure_runs, render_runs, render_trace_paths, setting_label, trace_path, RunLine};
pub use vm::{GuestRun, VmText};

/// `doc` as pretty-printed JSON, as every `--json` prints it.
pub fn to_json(doc: &impl serde::Serialize) -> Result<String, ReportError> {
    Ok(serde_json::to_string_pretty(doc)?)
}
