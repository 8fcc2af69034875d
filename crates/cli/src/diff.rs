//! `schedlab diff`: one scenario and seed under two settings, and the first
//! scheduler step where the two runs part ways.
//!
//! The model is deterministic, so everything before that step is shared and
//! everything after it follows from it. The settings' syntax is
//! `schedlab_sweep::setting`; the comparison and its report are
//! `schedlab_report::DiffCollector`; resolving the two settings and running
//! the two simulations side by side into it is `schedlab_sweep::run_diff`.

use clap::Args;
use schedlab_analysis::{DiffOptions, DEFAULT_DIFF_AFTER, DEFAULT_DIFF_CONTEXT};
use schedlab_scenario::Scenario;
use schedlab_sweep::{run_diff, DiffRuns, SettingSpec};
use std::path::PathBuf;

use crate::args::{DurationArg, JsonArg, SeedArg};
use crate::error::Result;
use crate::output::emit;

#[derive(Args)]
#[command(after_help = crate::examples::get("diff"))]
pub struct DiffArgs {
    /// Scenario file (TOML) or rt-app JSON file, e.g. scenarios/asym_min.toml, or a bundled
    /// scenario's name.
    #[arg(value_parser = crate::names::scenario(), hide_possible_values = true)]
    pub scenario: PathBuf,
    /// Setting A: sched_features in debugfs syntax, comma-separated, plus optional
    /// `itmt=0|1`, `energy_aware=0|1` and `kernel=NAME` entries, e.g. `NO_DELAY_DEQUEUE,itmt=0`.
    /// Empty (the default): the scenario's own settings.
    #[arg(long = "a", value_name = "SETTING", default_value = "")]
    pub a: String,
    /// Setting B, in the syntax of --a.
    #[arg(long = "b", value_name = "SETTING", default_value = "")]
    pub b: String,
    #[command(flatten)]
    pub seed: SeedArg,
    #[command(flatten)]
    pub duration: DurationArg,
    /// Common events to print before the divergence.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DIFF_CONTEXT)]
    pub context: usize,
    /// Events of each run to print from the divergence on.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DIFF_AFTER)]
    pub after: usize,
    #[command(flatten)]
    pub json: JsonArg,
}

pub fn diff(args: DiffArgs) -> Result {
    let sa = SettingSpec::parse("--a", &args.a)?;
    let sb = SettingSpec::parse("--b", &args.b)?;
    let base = Scenario::load(&args.scenario)?;
    let runs = DiffRuns { seed: args.seed.seed, no_noise: args.seed.no_noise, duration_ns: args.duration.duration };
    let opts = DiffOptions { context: args.context, after: args.after };
    let report = run_diff(&base, &sa, &sb, &runs, &opts)?;
    if args.json.json {
        return emit(&(report.to_json()? + "\n"));
    }
    emit(&report.render(&args.scenario.display().to_string()))
}
