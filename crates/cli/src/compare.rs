//! `schedlab compare`: one scenario on the model and on a real kernel with
//! the same settings — this machine's kernel, or with `--vm` a kernel booted
//! under QEMU with the same `sched_features` set inside it — the figures
//! side by side, then each run's per-thread table and stall causes. The two
//! go through one analysis, so a difference is a difference between the
//! model and the kernel (or the hardware), not between two measuring tools.

use clap::Args;
use schedlab_analysis::{
    is_decision, render_cause_table, render_run_table, Attribution, Cause, LatencyStats, DEFAULT_GRACE_NS,
};
use schedlab_sim::{simulate, SimOptions, SimResult};
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::real::{analyze_run, print_real_header, real_run, RealSettings};
use crate::report::{write_ftrace, Report};
use crate::vm::{
    measure_runs, parse_settings, print_trace_paths, print_vm_header, render_runs, setting_label, vm_runs, VmSettings,
};
use schedlab_sweep::measures::MeasureRun;

/// The analysis's grace window: compare shows only the strict unclaimed-idle
/// figure, which no grace window changes, so it has no `--grace`.
const GRACE_NS: u64 = DEFAULT_GRACE_NS;

#[derive(Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub settings: RealSettings,
    /// Seed of the simulation (overrides the file's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the real run's captured tracefs text (with --vm and several runs,
    /// one file per run: FILE with .runN before the extension).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write the simulation's trace (ftrace text) too.
    #[arg(long, value_name = "FILE")]
    pub sim_trace: Option<PathBuf>,
    /// sched_features settings (debugfs syntax) for the model and, with --vm,
    /// written in the guest; this machine's own kernel is left as it is.
    #[arg(long, value_delimiter = ',')]
    pub features: Vec<String>,
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

fn us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), |v| format!("{}.{}", v / 1000, v / 100 % 10))
}

/// All samples of one kind merged over the workload's threads.
fn merged(r: &Report, pick: impl Fn(&schedlab_analysis::TaskMetrics) -> &Vec<u64>, threshold: u64) -> LatencyStats {
    let mut all: Vec<u64> = r.metrics.tasks.iter().flat_map(|t| pick(t).iter().copied()).collect();
    all.sort_unstable();
    LatencyStats::from_sorted(&all, threshold)
}

/// Rows of (figure, simulated, real), aligned.
fn side_by_side(rows: &[(String, String, String)]) -> String {
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(6);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max("simulated".len());
    let mut out = format!("{:<w0$}  {:>w1$}  {}\n", "", "simulated", "real");
    for (a, b, c) in rows {
        out.push_str(&format!("{a:<w0$}  {b:>w1$}  {c}\n"));
    }
    out
}

fn figures(sim: &Report, real: &Report, threshold: u64) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    let mut row = |name: &str, f: &dyn Fn(&Report) -> String| rows.push((name.to_string(), f(sim), f(real)));
    row("handoffs", &|r| r.handoffs().to_string());
    let ho = |r: &Report| merged(r, |t| &t.handoff_samples, threshold);
    row("handoff p50 (us)", &|r| us(ho(r).p50_ns));
    row("handoff p90 (us)", &|r| us(ho(r).p90_ns));
    row("handoff p99 (us)", &|r| us(ho(r).p99_ns));
    row("handoff max (us)", &|r| us(ho(r).max_ns));
    row(&format!("stalls (>= {} us)", threshold / 1000), &|r| {
        let n = r.metrics.stalls.len();
        let h = r.handoffs();
        format!("{n} ({:.3} %)", if h > 0 { 100.0 * n as f64 / h as f64 } else { 0.0 })
    });
    let wk = |r: &Report| merged(r, |t| &t.wakeup_samples, threshold);
    row("wakeup p50 (us)", &|r| us(wk(r).p50_ns));
    row("wakeup p99 (us)", &|r| us(wk(r).p99_ns));
    row("migrations", &|r| r.metrics.tasks.iter().map(|t| t.migrations).sum::<u64>().to_string());
    row("involuntary switches", &|r| r.metrics.tasks.iter().map(|t| t.involuntary_switches).sum::<u64>().to_string());
    row("unclaimed idle (strict)", &|r| format!("{:.2} %", r.workcons.unclaimed_pct));
    rows
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
) -> Result<Vec<SimResult>, String> {
    let first = args.seed.unwrap_or(scenario.seed);
    (0..n)
        .map(|i| {
            let opts = SimOptions {
                seed: Some(first + i),
                duration_ns: args.settings.duration,
                features: features.to_vec(),
                ..Default::default()
            };
            simulate(scenario, &opts).map_err(|e| e.to_string())
        })
        .collect()
}

/// One row per cause either side has, with its stall count on each side.
fn cause_rows(sim: &Attribution, real: &Attribution) -> Vec<(String, String, String)> {
    Cause::ALL
        .iter()
        .map(|&c| (c, sim.count(c), real.count(c)))
        .filter(|&(_, a, b)| a > 0 || b > 0)
        .map(|(c, a, b)| (c.label().to_string(), a.to_string(), b.to_string()))
        .collect()
}

pub fn compare(args: CompareArgs) -> Result<(), String> {
    if !args.settings_alt.is_empty() {
        if !args.vm {
            return Err("--setting alternates feature sets inside a VM guest: it needs --vm".into());
        }
        return compare_settings(&args);
    }
    // The real run first: it forks, so the process must still be single-threaded.
    let (scenario, real_runs, vm_result) = if args.vm {
        let (scenario, vm, runs) =
            vm_runs(&args.settings, &args.guest, &args.features, &[], args.trace.as_deref(), GRACE_NS)?;
        (scenario, runs, Some(vm))
    } else {
        let (scenario, run, report) = real_run(&args.settings, args.trace.clone(), &args.features, GRACE_NS)?;
        (scenario, vec![(run, report)], None)
    };
    let nruns = real_runs.len();
    let first_seed = args.seed.unwrap_or(scenario.seed);
    let mut sims = simulate_seeds(&scenario, &args, &args.features, nruns as u64)?;
    if let Some(path) = &args.sim_trace {
        write_ftrace(&sims[0].trace, path, "--sim-trace")?;
    }
    let (sim_pids, sim_allowed) = sim_workload(&scenario);
    let sim_reports: Vec<Report> = sims
        .iter()
        .map(|r| analyze_run(&scenario, &r.trace, r.end_ns, sim_allowed.clone(), &sim_pids, GRACE_NS))
        .collect();
    let sim = &sim_reports[0];
    let (run, real) = &real_runs[0];
    // Like with like: the real kernel's trace has only tracepoints and
    // markers, so attribute the simulated run from those alone too (the
    // first run's full trace is not needed after this).
    let mut tracepoints_only = std::mem::take(&mut sims[0].trace);
    tracepoints_only.events.retain(|e| !is_decision(&e.kind));
    let sim_result = &sims[0];
    let sim_tp = analyze_run(&scenario, &tracepoints_only, sim_result.end_ns, sim_allowed, &sim_pids, GRACE_NS);

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
        Some(vm) => print_vm_header(vm),
        None => print_real_header(run),
    }
    if nruns > 1 {
        println!();
        println!("guest runs");
        print!("{}", render_runs(&scenario, &real_runs, &[]));
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
        print!("{}", schedlab_sweep::render_measure_table(&schedlab_sweep::measures::measure_infos(&scenario), &rows));
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
    if let Some(path) = &args.trace {
        println!();
        if vm_result.is_some() {
            print_trace_paths(path, nruns, "guest run");
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
fn compare_settings(args: &CompareArgs) -> Result<(), String> {
    let alternate = parse_settings(&args.settings_alt);
    let (scenario, vm, real_runs) =
        vm_runs(&args.settings, &args.guest, &args.features, &alternate, args.trace.as_deref(), GRACE_NS)?;
    let first_seed = args.seed.unwrap_or(scenario.seed);
    let rounds = u64::from(args.guest.runs);
    let (sim_pids, sim_allowed) = sim_workload(&scenario);
    let mut per_set: Vec<Vec<Report>> = Vec::new();
    let mut profile = String::new();
    for set in &alternate {
        let features: Vec<String> = args.features.iter().chain(set).cloned().collect();
        let sims = simulate_seeds(&scenario, args, &features, rounds)?;
        profile = sims[0].profile.name.to_string();
        let analyse =
            |r: &SimResult| analyze_run(&scenario, &r.trace, r.end_ns, sim_allowed.clone(), &sim_pids, GRACE_NS);
        per_set.push(sims.iter().map(analyse).collect());
    }

    println!("scenario  {} ({})", scenario.name, scenario.path);
    println!(
        "model     {}: {} CPUs, kernel profile {profile}, seeds {first_seed}-{}",
        scenario.topology.name,
        scenario.topology.nr_cpus(),
        first_seed + rounds - 1
    );
    print_vm_header(&vm);
    let labels: Vec<String> = vm.runs.iter().map(|r| setting_label(&alternate[r.setting])).collect();
    println!();
    println!("guest runs");
    print!("{}", render_runs(&scenario, &real_runs, &labels));
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
        print!("{}", schedlab_sweep::render_measure_table(&schedlab_sweep::measures::measure_infos(&scenario), &rows));
    }
    for (k, set) in alternate.iter().enumerate() {
        let Some(i) = vm.runs.iter().position(|r| r.setting == k) else { continue };
        println!();
        println!("{}: seed {first_seed} beside the guest's run {}", setting_label(set), i + 1);
        print!("{}", side_by_side(&figures(&per_set[k][0], &real_runs[i].1, scenario.stall_threshold_ns)));
    }
    if let Some(path) = &args.trace {
        println!();
        print_trace_paths(path, real_runs.len(), "guest run");
    }
    Ok(())
}
