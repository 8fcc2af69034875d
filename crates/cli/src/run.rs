//! `schedlab run`: simulate one scenario and report.

use clap::Args;
use schedlab_kernel::Profile;
use schedlab_scenario::{Scenario, Spanned};
use schedlab_sim::{simulate, SimOptions};
use schedlab_topology::{parse_duration, Topology};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::report::{
    fmt_secs, print_stalls_and_causes, print_table_and_measures, write_ftrace, write_perfetto, Report, ReportArgs,
};

#[derive(Args)]
pub struct RunArgs {
    /// Scenario file (TOML), e.g. scenarios/asym_min.toml.
    pub scenario: PathBuf,
    /// Seed for the run's timing jitter (overrides the file's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulated duration, e.g. 30s, 500ms (overrides the file's `duration`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<u64>,
    /// sched_features settings in debugfs syntax, comma-separated or repeated:
    /// `--features NO_DELAY_DEQUEUE,NO_RUN_TO_PARITY`.
    #[arg(long, value_name = "LIST")]
    pub features: Vec<String>,
    /// Topology preset name or TOML file (overrides the file's `topology`).
    #[arg(long)]
    pub topology: Option<String>,
    /// Kernel profile: 6.12, 6.12.0 or mainline (overrides the file's `kernel`).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Handoffs at or above this count as stalls (default: the file's `stall_threshold`, else 500us).
    #[arg(long, value_parser = parse_duration)]
    pub threshold: Option<u64>,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Write the run's events as ftrace text (the format of /sys/kernel/tracing/trace).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write the run's events as a Perfetto protobuf trace (open it at ui.perfetto.dev):
    /// sched events as Perfetto's own, schedlab's decision events and markers as instants.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Write SVG plots to DIR: handoff-cdf.svg (one curve per wakee thread group) and
    /// stall-1.svg … stall-N.svg (per-CPU occupancy around the first N of --stalls).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Print the metrics as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Check the kernel model's invariants after every step (default: only in debug builds).
    #[arg(long)]
    pub check_invariants: bool,
}

fn load_scenario(args: &RunArgs) -> Result<Scenario, String> {
    let path = &args.scenario;
    let mut scenario = match &args.topology {
        None => Scenario::load(path).map_err(|e| e.to_string())?,
        Some(reference) => {
            let topo = Topology::resolve(reference, Path::new(".")).map_err(|e| format!("--topology: {e}"))?;
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
            let base = path.parent().unwrap_or(Path::new("."));
            Scenario::from_toml_str_on(&path.display().to_string(), &text, base, topo).map_err(|e| e.to_string())?
        }
    };
    if let Some(k) = &args.kernel {
        if Profile::by_name(k).is_none() {
            return Err(format!(
                "--kernel {k}: unknown kernel profile (expected one of: {})",
                Profile::NAMES.join(", ")
            ));
        }
        scenario.kernel_profile = Spanned { value: k.clone(), line: 0, col: 0 };
    }
    if let Some(t) = args.threshold {
        scenario.stall_threshold_ns = t;
    }
    Ok(scenario)
}

pub fn run(args: RunArgs) -> Result<(), String> {
    let scenario = load_scenario(&args)?;
    let opts = SimOptions {
        seed: args.seed,
        duration_ns: args.duration,
        features: args.features.clone(),
        topology: None,
        check_invariants: if args.check_invariants { Some(true) } else { None },
    };
    let wall = Instant::now();
    let result = simulate(&scenario, &opts).map_err(|e| e.to_string())?;
    let wall = wall.elapsed();

    // The trace has no affinities: each scenario thread's comes from the
    // scenario (pids are handed out in thread order).
    let allowed: BTreeMap<i32, Vec<u32>> = scenario
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (schedlab_sim::FIRST_PID + i as i32, t.affinity.iter().map(|c| c as u32).collect()))
        .collect();
    let report = Report::of(
        &result.trace,
        Some(&scenario),
        scenario.stall_threshold_ns,
        Some(result.end_ns),
        allowed.clone(),
        args.report.grace,
    );
    debug_assert_eq!(report.attribution.stalls.len(), report.metrics.stalls.len());

    if let Some(path) = &args.trace {
        write_ftrace(&result.trace, path, "--trace")?;
    }
    if let Some(path) = &args.perfetto {
        write_perfetto(&result.trace, path)?;
    }
    let plots = match &args.plot {
        Some(dir) => schedlab_plot::write_run_plots(
            dir,
            &schedlab_plot::RunPlots {
                title: format!("{}: handoff latency per wakee thread group (seed {})", scenario.name, result.seed),
                trace: &result.trace,
                metrics: &report.metrics,
                stalls: &report.attribution.stalls,
                groups: scenario
                    .threads
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (schedlab_sim::FIRST_PID + i as i32, t.group.clone()))
                    .collect(),
                allowed: &allowed,
                max_stalls: args.report.stalls,
            },
        )?,
        None => Vec::new(),
    };

    if args.json {
        let doc = serde_json::json!({
            "scenario": scenario.name,
            "topology": result.topology.name,
            "kernel": result.profile.name,
            "features_changed": result.features.diff_from(&result.profile.defaults),
            "seed": result.seed,
            "simulated_ns": result.end_ns,
            "notes": result.notes,
            "metrics": report.metrics,
            "work_conservation": report.workcons,
            "attribution": report.attribution,
            "measures": report.measures,
        });
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        return Ok(());
    }

    let topo = &result.topology;
    let changed = result.features.diff_from(&result.profile.defaults);
    println!("scenario  {} ({})", scenario.name, scenario.path);
    if !scenario.description.is_empty() {
        println!("          {}", scenario.description);
    }
    println!(
        "machine   {}: {} CPUs, HZ={}, preempt={}, ITMT {}",
        topo.name,
        topo.nr_cpus(),
        topo.hz,
        topo.preempt.as_str(),
        if topo.itmt_enabled { "on" } else { "off" }
    );
    println!(
        "kernel    {} (base slice {} us), features: {}",
        result.profile.name,
        result.profile.base_slice_for(topo.nr_cpus()) / 1000,
        if changed.is_empty() { "defaults".to_string() } else { changed.join(" ") }
    );
    let secs = wall.as_secs_f64().max(1e-9);
    println!(
        "run       {} simulated, seed {}, {} events in {:.3} s wall ({:.0}x real time)",
        fmt_secs(result.end_ns),
        result.seed,
        result.trace.events.len(),
        secs,
        result.end_ns as f64 / 1e9 / secs
    );
    for note in &result.notes {
        println!("note      {note}");
    }
    println!();
    print_table_and_measures(&report);
    if let Some(sb) = &scenario.schbench {
        if let Some(report) = schedlab_analysis::schbench_report(&result.trace, result.end_ns) {
            println!();
            println!("schbench  {} (its own metrics, as it prints them)", sb.command_line());
            print!("{}", report.render());
        }
    }
    print_stalls_and_causes(&report, &result.trace.table, args.report.stalls);
    if let Some(path) = &args.trace {
        println!();
        println!("trace     {} ({} events, ftrace text)", path.display(), result.trace.events.len());
    }
    if let Some(path) = &args.perfetto {
        println!("perfetto  {} (open at https://ui.perfetto.dev)", path.display());
    }
    if let Some(dir) = &args.plot {
        let stall_plots = plots.len() - 1;
        println!("plots     {}: {} SVG files (handoff-cdf.svg, {stall_plots} stall plots)", dir.display(), plots.len());
    }
    Ok(())
}
