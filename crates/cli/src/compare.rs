//! `schedlab compare`: one scenario on the model and on a real kernel with
//! the same settings — this machine's kernel, or with `--vm` a kernel booted
//! under QEMU with the same `sched_features` set inside it — the figures
//! side by side, then each run's per-thread table and stall causes. The two
//! go through one analysis, so a difference is a difference between the
//! model and the kernel (or the hardware), not between two measuring tools.

use clap::Args;
use schedlab_analysis::DEFAULT_GRACE_NS;
use schedlab_fidelity::sides::{analyze_kept, simulate_analyzed, SimSide};
use schedlab_report::{CompareSettingsText, CompareText, RealSide, Report};
use schedlab_sim::{simulate, SimOptions};
use std::path::PathBuf;

use crate::args::{FeaturesArg, MemoryArg, SeedArg, TraceArg};
use crate::error::{CliError, Result};
use crate::output::write_ftrace;
use crate::real::{real_header, real_run, RealSettings};
use crate::vm::{alternate_sets, guest_runs, run_lines, vm_header, vm_runs, VmSettings};

/// The analysis's grace window: compare shows only the strict unclaimed-idle
/// figure, which no grace window changes, so it has no `--grace`.
const GRACE_NS: u64 = DEFAULT_GRACE_NS;

#[derive(Args)]
#[command(after_help = crate::examples::COMPARE)]
pub struct CompareArgs {
    #[command(flatten)]
    pub settings: RealSettings,
    #[command(flatten)]
    pub seed: SeedArg,
    #[command(flatten)]
    pub trace: TraceArg,
    /// Write the simulation's trace (ftrace text) too.
    #[arg(long, value_name = "FILE")]
    pub sim_trace: Option<PathBuf>,
    #[command(flatten)]
    pub features: FeaturesArg,
    /// Run the real side in a QEMU guest (`schedlab vm`) instead of on this
    /// machine; with --runs N the model runs N seeds from --seed.
    #[arg(long)]
    pub vm: bool,
    /// With --vm: alternate feature sets in one boot (repeatable, as `schedlab
    /// vm --setting`); the model runs each set over the same seeds, and the
    /// table has a model row and a guest row per set.
    #[arg(long = "setting", value_name = "FEATURES")]
    pub settings_alt: Vec<String>,
    #[command(flatten, next_help_heading = "The guest (with --vm)")]
    pub guest: VmSettings,
    #[command(flatten)]
    pub memory: MemoryArg,
}

/// The scenario simulated over `n` consecutive seeds from --seed (or the
/// file's), each analysed as it streams; the first also from its
/// tracepoints alone when `tracepoints` asks, and kept whole (within
/// --max-memory) only when `keep_first` (--sim-trace) needs its trace.
fn simulate_seeds(
    scenario: &schedlab_scenario::Scenario,
    args: &CompareArgs,
    features: &[String],
    n: u64,
    tracepoints: bool,
    keep_first: bool,
) -> Result<Vec<SimSide>> {
    let first = args.seed.seed.unwrap_or(scenario.seed);
    (0..n)
        .map(|i| {
            let opts = SimOptions {
                no_noise: args.seed.no_noise,
                // The real side is traced by the runner: model its capture costs too.
                traced: true,
                seed: Some(first + i),
                duration_ns: args.settings.duration.duration,
                features: features.to_vec(),
                memory_budget: Some(args.memory.budget(1)),
                ..Default::default()
            };
            let tp = tracepoints && i == 0;
            Ok(if keep_first && i == 0 {
                analyze_kept(scenario, simulate(scenario, &opts)?, GRACE_NS, tp)
            } else {
                simulate_analyzed(scenario, &opts, GRACE_NS, tp)?
            })
        })
        .collect()
}

pub fn compare(args: CompareArgs) -> Result {
    if !args.settings_alt.is_empty() {
        if !args.vm {
            return Err(CliError::SettingNeedsVm.into());
        }
        return compare_settings(&args);
    }
    // The real run first: it forks, so the process must still be single-threaded.
    let (scenario, real_runs, vm_result) = if args.vm {
        let (scenario, vm, runs) =
            vm_runs(&args.settings, &args.guest, &args.features.features, &[], args.trace.trace.as_deref(), GRACE_NS)?;
        (scenario, runs, Some(vm))
    } else {
        let (scenario, run, report) = real_run(
            &args.settings,
            args.trace.trace.clone(),
            &args.features.features,
            GRACE_NS,
            &args.memory.budget(1),
        )?;
        (scenario, vec![(run, report)], None)
    };
    let nruns = real_runs.len();
    let first_seed = args.seed.seed.unwrap_or(scenario.seed);
    // Like with like: the real kernel's trace has only tracepoints and
    // markers, so the first simulated run is also attributed from those alone.
    let mut sims =
        simulate_seeds(&scenario, &args, &args.features.features, nruns as u64, true, args.sim_trace.is_some())?;
    if let Some(path) = &args.sim_trace {
        write_ftrace(&sims[0].result.trace, path, "--sim-trace")?;
    }
    let sim_tp = sims[0].tracepoints.take().expect("the first run was asked for its tracepoints' report");
    let (results, sim_reports): (Vec<schedlab_sim::SimResult>, Vec<Report>) =
        sims.into_iter().map(|s| (s.result, s.report)).unzip();
    let sim_result = &results[0];

    let text = CompareText {
        scenario: &scenario,
        machine: &sim_result.topology,
        profile: sim_result.profile.name,
        seed: first_seed,
        notes: &sim_result.notes,
        groups: &crate::run::group_rows(sim_result),
        real: match &vm_result {
            Some(vm) => RealSide::Guest(vm_header(vm)),
            None => RealSide::Host(real_header(&scenario, &real_runs[0].0, &real_runs[0].1)),
        },
        sims: &sim_reports,
        sim_tracepoints: &sim_tp,
        runs: &run_lines(&real_runs),
        trace_file: args.trace.trace.as_deref(),
        sim_trace_file: args.sim_trace.as_deref(),
    };
    crate::output::emit(&text.render())?;
    Ok(())
}

/// `compare --vm --setting A --setting B`: one boot alternating the sets;
/// the model runs each set over the same seeds; a model row and a guest row
/// per set, then each set's first run side by side.
fn compare_settings(args: &CompareArgs) -> Result {
    let alternate = alternate_sets(&args.settings_alt)?;
    let (scenario, vm, real_runs) = vm_runs(
        &args.settings,
        &args.guest,
        &args.features.features,
        &alternate,
        args.trace.trace.as_deref(),
        GRACE_NS,
    )?;
    let first_seed = args.seed.seed.unwrap_or(scenario.seed);
    let rounds = u64::from(args.guest.runs);
    let mut per_set: Vec<Vec<Report>> = Vec::new();
    let mut profile = String::new();
    for set in &alternate {
        let features: Vec<String> = args.features.features.iter().chain(set).cloned().collect();
        let sims = simulate_seeds(&scenario, args, &features, rounds, false, false)?;
        profile = sims[0].result.profile.name.to_string();
        per_set.push(sims.into_iter().map(|s| s.report).collect());
    }

    let text = CompareSettingsText {
        scenario: &scenario,
        profile: &profile,
        first_seed,
        rounds,
        header: vm_header(&vm),
        sets: &alternate,
        runs: &guest_runs(&scenario, &vm, &real_runs),
        sims: &per_set,
        trace_file: args.trace.trace.as_deref(),
    };
    crate::output::emit(&text.render())?;
    Ok(())
}
