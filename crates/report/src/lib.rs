//! The report layer: everything made from an analysis once it is done —
//! one run's report and its printed sections, the choice of a workload in a
//! trace captured elsewhere, and a sweep's results with their statistics,
//! A/B comparisons, tables, CSV and JSON.
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

pub use ab::{compare, parse_ab_pair, render_ab, AbReport, AbSpec};
pub use export::{render_csv, CSV_COLUMNS};
pub use render::{
    render, render_breakdown, render_burst_starts, render_measure_table, render_measures, render_summary,
};
pub use results::{BurstStarts, RunResult, SettingResult, SweepResult};
