//! `schedlab run`: simulate one scenario and report.

use clap::Args;
use schedlab_analysis::{
    analyze, attribute_stalls, measure, render_measures, render_run_table, work_conservation, AnalysisOptions,
    AttributionOptions, WorkConsOptions,
};
use schedlab_kernel::Profile;
use schedlab_scenario::{Scenario, Spanned};
use schedlab_sim::{simulate, SimOptions};
use schedlab_topology::{parse_duration, Topology};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    /// Print the narratives (decision chains) of the first N stalls; 0 prints none.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub stalls: usize,
    /// Work-conservation grace window: violations shorter than this are not
    /// counted in the concurrent figures (Ipanema's concurrent work conservation).
    #[arg(long, value_parser = parse_duration, default_value = "100us")]
    pub grace: u64,
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

fn fmt_secs(ns: u64) -> String {
    format!("{}.{:03} s", ns / 1_000_000_000, ns % 1_000_000_000 / 1_000_000)
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

    let metrics = analyze(
        &result.trace,
        &AnalysisOptions { stall_threshold_ns: scenario.stall_threshold_ns, end_ts: Some(result.end_ns) },
    );

    // The trace has no affinities: each scenario thread's comes from the
    // scenario (pids are handed out in thread order).
    let allowed: BTreeMap<i32, Vec<u32>> = scenario
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (schedlab_sim::FIRST_PID + i as i32, t.affinity.iter().map(|c| c as u32).collect()))
        .collect();
    let workcons = work_conservation(
        &result.trace,
        &WorkConsOptions { allowed: allowed.clone(), grace_ns: args.grace, end_ts: Some(result.end_ns) },
    );
    let attribution = attribute_stalls(
        &result.trace,
        &AttributionOptions {
            stall_threshold_ns: scenario.stall_threshold_ns,
            end_ts: Some(result.end_ns),
            allowed: allowed.clone(),
        },
    );
    debug_assert_eq!(attribution.stalls.len(), metrics.stalls.len());

    if let Some(path) = &args.trace {
        let file = std::fs::File::create(path).map_err(|e| format!("--trace {}: {e}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        schedlab_trace::ftrace::write_ftrace(&result.trace, &mut out)
            .map_err(|e| format!("--trace {}: {e}", path.display()))?;
    }

    if let Some(path) = &args.perfetto {
        let file = std::fs::File::create(path).map_err(|e| format!("--perfetto {}: {e}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        schedlab_trace::write_perfetto(&result.trace, &mut out)
            .and_then(|()| std::io::Write::flush(&mut out))
            .map_err(|e| format!("--perfetto {}: {e}", path.display()))?;
    }
    let plots = match &args.plot {
        Some(dir) => schedlab_plot::write_run_plots(
            dir,
            &schedlab_plot::RunPlots {
                title: format!("{}: handoff latency per wakee thread group (seed {})", scenario.name, result.seed),
                trace: &result.trace,
                metrics: &metrics,
                stalls: &attribution.stalls,
                groups: scenario
                    .threads
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (schedlab_sim::FIRST_PID + i as i32, t.group.clone()))
                    .collect(),
                allowed: &allowed,
                max_stalls: args.stalls,
            },
        )?,
        None => Vec::new(),
    };
    let specs = schedlab_sweep::measures::measure_specs(&scenario);
    let measures: Vec<_> = specs.iter().map(|m| measure(&result.trace, m, result.end_ns)).collect();

    if args.json {
        let doc = serde_json::json!({
            "scenario": scenario.name,
            "topology": result.topology.name,
            "kernel": result.profile.name,
            "features_changed": result.features.diff_from(&result.profile.defaults),
            "seed": result.seed,
            "simulated_ns": result.end_ns,
            "notes": result.notes,
            "metrics": metrics,
            "work_conservation": workcons,
            "attribution": attribution,
            "measures": measures,
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
    print!("{}", render_run_table(&metrics));
    if !measures.is_empty() {
        println!();
        println!("measures  (from the scenario's [[measure]] tables)");
        print!("{}", render_measures(&measures));
    }
    if let Some(sb) = &scenario.schbench {
        if let Some(report) = schedlab_analysis::schbench_report(&result.trace, result.end_ns) {
            println!();
            println!("schbench  {} (its own metrics, as it prints them)", sb.command_line());
            print!("{}", report.render());
        }
    }
    let handoffs: u64 = metrics.tasks.iter().map(|t| t.handoff_latency.count).sum();
    if handoffs > 0 {
        crate::report::print_stalls(&metrics, handoffs, scenario.stall_threshold_ns, &result.trace.table);
    }
    crate::report::print_workcons_and_causes(&workcons, &attribution, args.grace, args.stalls);
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
