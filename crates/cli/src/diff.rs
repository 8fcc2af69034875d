//! `schedlab diff`: one scenario and seed under two settings, and the first
//! scheduler step where the two runs part ways.
//!
//! The model is deterministic, so everything before that step is shared and
//! everything after it follows from it. The settings' syntax is
//! `schedlab_sweep::setting`; the comparison and its report are
//! `schedlab_report::DiffCollector`; this file resolves the two settings and
//! runs the two simulations side by side into it.

use clap::Args;
use schedlab_analysis::{DiffOptions, DEFAULT_DIFF_AFTER, DEFAULT_DIFF_CONTEXT};
use schedlab_report::{DiffCollector, DiffRun};
use schedlab_scenario::{Scenario, Spanned};
use schedlab_sim::{kernel_settings, SimError, SimOptions, SimResult};
use schedlab_sweep::{simulate_diff, SettingSpec};
use std::path::PathBuf;

use crate::args::{DurationArg, JsonArg, SeedArg};
use crate::error::{CliError, Result};
use crate::output::emit;

#[derive(Args)]
#[command(after_help = crate::examples::DIFF)]
pub struct DiffArgs {
    /// Scenario file (TOML) or rt-app JSON file, e.g. scenarios/asym_min.toml, or a bundled
    /// scenario's name.
    #[arg(value_parser = crate::names::scenario(), hide_possible_values = true)]
    pub scenario: PathBuf,
    /// Setting A: sched_features in debugfs syntax, comma-separated, plus optional
    /// `itmt=0|1` and `kernel=NAME` entries, e.g. `NO_DELAY_DEQUEUE,itmt=0`.
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

/// A setting applied: the scenario and options to simulate, and how it resolved.
struct Resolved {
    flag: &'static str,
    /// The setting as typed.
    text: String,
    scenario: Scenario,
    opts: SimOptions,
    kernel: String,
    itmt: bool,
    features_changed: Vec<String>,
}

fn resolve(flag: &'static str, base: &Scenario, s: &SettingSpec, args: &DiffArgs) -> Result<Resolved> {
    let mut scenario = base.clone();
    if let Some(k) = &s.kernel {
        scenario.kernel_profile = Spanned { value: k.clone(), line: 0, col: 0 };
    }
    let mut topology = scenario.topology.clone();
    if let Some(on) = s.itmt {
        topology.itmt_enabled = on;
    }
    let (profile, features) = kernel_settings(&scenario, &s.features).map_err(|e| {
        let e = e.to_string();
        // The simulator says "--features ITEM: why"; the why names the item.
        let why = e.strip_prefix("--features ").and_then(|rest| rest.split_once(": ")).map_or(e.as_str(), |(_, w)| w);
        CliError::Side { flag, text: s.text.clone(), why: why.to_string() }
    })?;
    Ok(Resolved {
        flag,
        text: s.text.clone(),
        kernel: profile.name.to_string(),
        itmt: topology.itmt_enabled,
        features_changed: features.diff_from(&profile.defaults),
        opts: SimOptions {
            seed: args.seed.seed,
            no_noise: args.seed.no_noise,
            traced: false,
            duration_ns: args.duration.duration,
            features: s.features.clone(),
            topology: Some(topology),
            check_invariants: None,
            invariant_budget: None,
            // Both runs stream into the comparison: no trace is kept.
            memory_budget: None,
            max_steps_per_us: None,
            max_cpu_seconds: None,
            rtapp_log: false,
        },
        scenario,
    })
}

fn side_error(r: &Resolved, e: SimError) -> CliError {
    CliError::Side { flag: r.flag, text: r.text.clone(), why: e.to_string() }
}

fn side<'a>(r: &'a Resolved, res: &SimResult) -> DiffRun<'a> {
    DiffRun {
        setting: &r.text,
        kernel: r.kernel.clone(),
        itmt: r.itmt,
        features_changed: r.features_changed.clone(),
        end_ns: res.end_ns,
        notes: res.notes.clone(),
    }
}

pub fn diff(args: DiffArgs) -> Result {
    let sa = SettingSpec::parse("--a", &args.a)?;
    let sb = SettingSpec::parse("--b", &args.b)?;
    let base = Scenario::load(&args.scenario)?;
    let ra = resolve("--a", &base, &sa, &args)?;
    let rb = resolve("--b", &base, &sb, &args)?;
    let opts = DiffOptions { context: args.context, after: args.after };
    // Both runs at once, compared as they stream: neither trace is kept.
    let mut collector = DiffCollector::new(&base, &opts);
    let [res_a, res_b] = simulate_diff((&ra.scenario, &ra.opts), (&rb.scenario, &rb.opts), &mut collector);
    let res_a = res_a.map_err(|e| side_error(&ra, e))?;
    let res_b = res_b.map_err(|e| side_error(&rb, e))?;
    // The scenario's own threads and those their forks created, in either run.
    let (pids_a, _) = schedlab_sides::sim_workload(&base, &res_a);
    let (pids_b, _) = schedlab_sides::sim_workload(&base, &res_b);
    let workload = move |pid: i32| pids_a.contains(&pid) || pids_b.contains(&pid);
    let report = collector.finish(&base, res_a.seed, &workload, side(&ra, &res_a), side(&rb, &res_b));
    if args.json.json {
        return emit(&(report.to_json()? + "\n"));
    }
    emit(&report.render(&args.scenario.display().to_string()))
}
