//! `schedlab compare`: one scenario on the model and on a real kernel with
//! the same settings — this machine's kernel, or with `--vm` a kernel booted
//! under QEMU with the same `sched_features` set inside it — the figures
//! side by side, then each run's per-thread table and stall causes. The two
//! go through one analysis, so a difference is a difference between the
//! model and the kernel (or the hardware), not between two measuring tools.

use clap::Args;
use schedlab_analysis::{is_decision, render_cause_table, render_run_table, DEFAULT_GRACE_NS};
use schedlab_report::measures::{measure_infos, MeasureRun};
use schedlab_report::{
    cause_rows, figures, measure_runs, render_measure_table, render_runs, render_trace_paths, setting_label,
    side_by_side, Report,
};
use schedlab_sim::{simulate, SimOptions, SimResult};
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::args::{FeaturesArg, SeedArg, TraceArg};
use crate::error::{CliError, Result};
use crate::output::write_ftrace;
use crate::real::{real_header, real_run, RealSettings};
use crate::vm::{alternate_sets, run_lines, vm_header, vm_runs, VmSettings};

/// The analysis's grace window: compare shows only the strict unclaimed-idle
/// figure, which no grace window changes, so it has no `--grace`.
const GRACE_NS: u64 = DEFAULT_GRACE_NS;

#[derive(Args)]
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
}

/// The simulated workload's pids and the CPUs each may use. The simulation
/// runs on the scenario's CPUs; with --remap the real run's are the host's,
/// and each run gets its own affinities.
fn sim_workload(scenario: &schedlab_scenario::Scenario) -> (Vec<i32>, BTreeMap<i32, Vec<u32>>) {
    let pids: Vec<i32> = (0..scenario.threads.len()).map(|i| schedlab_sim::FIRST_PID + i as i32).collect();
    let allowed =
        scenario.threads.iter().zip(&pids).map(|(t, &p)| (p, t.affinity.iter().map(|c| c as u32).collect())).collect();
    (pids, allowed)
}

/// The scenario simulated over `n` consecutive seeds from --seed (or the file's).
fn simulate_seeds(
    scenario: &schedlab_scenario::Scenario,
    args: &CompareArgs,
    features: &[String],
    n: u64,
) -> Result<Vec<SimResult>> {
    let first = args.seed.seed.unwrap_or(scenario.seed);
    (0..n)
        .map(|i| {
            let opts = SimOptions {
                seed: Some(first + i),
                duration_ns: args.settings.duration.duration,
                features: features.to_vec(),
                ..Default::default()
            };
            Ok(simulate(scenario, &opts)?)
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
        let (scenario, run, report) =
            real_run(&args.settings, args.trace.trace.clone(), &args.features.features, GRACE_NS)?;
        (scenario, vec![(run, report)], None)
    };
    let nruns = real_runs.len();
    let first_seed = args.seed.seed.unwrap_or(scenario.seed);
    let mut sims = simulate_seeds(&scenario, &args, &args.features.features, nruns as u64)?;
    if let Some(path) = &args.sim_trace {
        write_ftrace(&sims[0].trace, path, "--sim-trace")?;
    }
    let (sim_pids, sim_allowed) = sim_workload(&scenario);
    let sim_reports: Vec<Report> = sims
        .iter()
        .map(|r| Report::of_workload(&scenario, &r.trace, r.end_ns, sim_allowed.clone(), &sim_pids, GRACE_NS))
        .collect();
    let sim = &sim_reports[0];
    let (run, real) = &real_runs[0];
    // Like with like: the real kernel's trace has only tracepoints and
    // markers, so attribute the simulated run from those alone too (the
    // first run's full trace is not needed after this).
    let mut tracepoints_only = std::mem::take(&mut sims[0].trace);
    tracepoints_only.events.retain(|e| !is_decision(&e.kind));
    let sim_result = &sims[0];
    let sim_tp = Report::of_workload(&scenario, &tracepoints_only, sim_result.end_ns, sim_allowed, &sim_pids, GRACE_NS);

    let topo = &sim_result.topology;
    println!("scenario  {} ({})", scenario.name, scenario.path);
    println!(
        "model     {}: {} CPUs, kernel profile {}, seed {}",
        topo.name,
        topo.nr_cpus(),
        sim_result.profile.name,
        sim_result.seed
    );
    for note in &sim_result.notes {
        println!("note      (model) {note}");
    }
    match &vm_result {
        Some(vm) => print!("{}", vm_header(vm)),
        None => print!("{}", real_header(run)),
    }
    if nruns > 1 {
        println!();
        println!("guest runs");
        print!("{}", render_runs(scenario.stall_threshold_ns, &run_lines(&real_runs), &[]));
    }
    if !scenario.measures.is_empty() {
        let sim_measures = measure_runs(&sims.iter().zip(&sim_reports).map(|(_, r)| r).collect::<Vec<_>>());
        let real_measures = measure_runs(&real_runs.iter().map(|(_, r)| r).collect::<Vec<_>>());
        let seeds = if nruns > 1 {
            format!("seeds {first_seed}-{}", first_seed + nruns as u64 - 1)
        } else {
            format!("seed {first_seed}")
        };
        let real_label = match &vm_result {
            Some(vm) => format!("guest {} ({nruns} run{})", vm.guest.kernel, if nruns > 1 { "s" } else { "" }),
            None => format!("host {}", run.kernel),
        };
        let rows = vec![
            (format!("model {} ({seeds})", sim_result.profile.name), sim_measures.iter().map(Vec::as_slice).collect()),
            (real_label, real_measures.iter().map(Vec::as_slice).collect()),
        ];
        println!();
        print!("{}", render_measure_table(&measure_infos(&scenario), &rows));
    }
    println!();
    if nruns > 1 {
        println!("figures of the first run (seed {first_seed}) and the guest's run 1");
    }
    print!("{}", side_by_side(&figures(sim, real, scenario.stall_threshold_ns)));

    let (sa, ra) = (&sim.attribution, &real.attribution);
    if !sa.causes.is_empty() || !ra.causes.is_empty() {
        println!();
        println!("stall causes (stalls per class)");
        print!("{}", side_by_side(&cause_rows(sa, ra)));

        println!();
        println!("stall causes from the sched tracepoints alone (the simulated trace without schedlab_* decisions)");
        print!("{}", side_by_side(&cause_rows(&sim_tp.attribution, ra)));
    }
    for (name, r) in [("simulated", sim), ("real", real)] {
        println!();
        println!("== {name} ==");
        print!("{}", render_run_table(&r.metrics));
        if !r.attribution.stalls.is_empty() {
            println!();
            print!("{}", render_cause_table(&r.attribution));
        }
    }
    if let Some(path) = &args.trace.trace {
        println!();
        if vm_result.is_some() {
            print!("{}", render_trace_paths(path, nruns, "guest run"));
        } else {
            println!("trace     {} (real run, tracefs text)", path.display());
        }
    }
    if let Some(path) = &args.sim_trace {
        println!("sim trace {} (simulation, ftrace text)", path.display());
    }
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
    let (sim_pids, sim_allowed) = sim_workload(&scenario);
    let mut per_set: Vec<Vec<Report>> = Vec::new();
    let mut profile = String::new();
    for set in &alternate {
        let features: Vec<String> = args.features.features.iter().chain(set).cloned().collect();
        let sims = simulate_seeds(&scenario, args, &features, rounds)?;
        profile = sims[0].profile.name.to_string();
        let analyse = |r: &SimResult| {
            Report::of_workload(&scenario, &r.trace, r.end_ns, sim_allowed.clone(), &sim_pids, GRACE_NS)
        };
        per_set.push(sims.iter().map(analyse).collect());
    }

    println!("scenario  {} ({})", scenario.name, scenario.path);
    println!(
        "model     {}: {} CPUs, kernel profile {profile}, seeds {first_seed}-{}",
        scenario.topology.name,
        scenario.topology.nr_cpus(),
        first_seed + rounds - 1
    );
    print!("{}", vm_header(&vm));
    let labels: Vec<String> = vm.runs.iter().map(|r| setting_label(&alternate[r.setting])).collect();
    println!();
    println!("guest runs");
    print!("{}", render_runs(scenario.stall_threshold_ns, &run_lines(&real_runs), &labels));
    if !scenario.measures.is_empty() {
        let real_measures = measure_runs(&real_runs.iter().map(|(_, r)| r).collect::<Vec<_>>());
        let sim_measures: Vec<Vec<Vec<MeasureRun>>> =
            per_set.iter().map(|reports| measure_runs(&reports.iter().collect::<Vec<_>>())).collect();
        let mut rows: Vec<(String, Vec<&[MeasureRun]>)> = Vec::new();
        for (k, set) in alternate.iter().enumerate() {
            let label = setting_label(set);
            rows.push((format!("model  {label}"), sim_measures[k].iter().map(Vec::as_slice).collect()));
            let mine = vm.runs.iter().zip(&real_measures).filter(|(r, _)| r.setting == k);
            rows.push((format!("guest  {label}"), mine.map(|(_, m)| m.as_slice()).collect()));
        }
        println!();
        print!("{}", render_measure_table(&measure_infos(&scenario), &rows));
    }
    for (k, set) in alternate.iter().enumerate() {
        let Some(i) = vm.runs.iter().position(|r| r.setting == k) else { continue };
        println!();
        println!("{}: seed {first_seed} beside the guest's run {}", setting_label(set), i + 1);
        print!("{}", side_by_side(&figures(&per_set[k][0], &real_runs[i].1, scenario.stall_threshold_ns)));
    }
    if let Some(path) = &args.trace.trace {
        println!();
        print!("{}", render_trace_paths(path, real_runs.len(), "guest run"));
    }
    Ok(())
}
