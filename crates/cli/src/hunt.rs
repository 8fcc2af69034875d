//! `schedlab hunt`: random scenarios searched for stalls the kernel should
//! not have, shrunk to scenario files (the search is `schedlab_hunt`'s).

use clap::Args;
use schedlab_hunt::{hunt as run_hunt, render, HuntOptions, HuntSpec, Thresholds};
use schedlab_topology::parse_duration;
use std::path::PathBuf;

use crate::args::JsonArg;
use crate::error::Result;

#[derive(Args)]
#[command(after_help = format!("{}\n\n{}", schedlab_hunt::CLASSES_HELP, crate::examples::get("hunt")))]
pub struct HuntArgs {
    /// Machines to generate for (comma-separated presets or topology files); case i runs on the
    /// (i mod N)-th.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "ryzen-7950x",
          value_parser = crate::names::topology(), hide_possible_values = true)]
    pub topology: Vec<String>,
    /// Kernel profile of every case.
    #[arg(long, default_value = "mainline", value_parser = crate::names::kernel_profile(), hide_possible_values = true)]
    pub kernel: String,
    /// sched_features settings of every case (debugfs syntax, comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::names::feature(), hide_possible_values = true)]
    pub features: Vec<String>,
    /// Differential hunt: run every case under these features too (empty: the profile's
    /// defaults) and report only classes one set shows and the other does not.
    #[arg(long, value_name = "LIST", num_args = 0..=1, default_missing_value = "")]
    pub against: Option<String>,
    /// What to look for (comma-separated): families (invariant, idle, rt, starvation, fairness) or
    /// single classes (e.g. delayed-in-place, rt-boosted-stranded). Invariant failures are
    /// reported whatever this says.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "invariant,idle,rt")]
    pub find: Vec<String>,
    /// The hunt's seed: the same seed draws the same cases and finds the same things.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Cases to draw at most.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub cases: u64,
    /// Simulated length of each case.
    #[arg(long, value_parser = parse_duration, default_value = "300ms")]
    pub duration: u64,
    /// Stop once this many classes are found (0: run every case).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub stop_after: usize,
    /// Idle class: how long a task must wait beside an idle allowed CPU.
    #[arg(long, value_parser = parse_duration, default_value = "500us")]
    pub idle: u64,
    /// RT class: how long an RT task must wait while a lower-priority task runs.
    #[arg(long, value_parser = parse_duration, default_value = "1ms")]
    pub rt: u64,
    /// Starvation class: how long a runnable task must go without running.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub starvation: u64,
    /// Fairness class: the widest spread of identical hogs' CPU time while they share one CPU,
    /// in percent of their share of it.
    #[arg(long, value_name = "PCT", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub fairness: u64,
    /// Most simulations spent shrinking each finding.
    #[arg(long, value_name = "N", default_value_t = 400)]
    pub shrink_budget: usize,
    /// Run only the cases i with i % N == I (shards of one hunt find the same things as the
    /// whole, case by case).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Simulations to run at once (default: one per CPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Write each finding's shrunk scenario as DIR/<class>-case<N>.toml.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArg,
}

pub fn hunt(args: HuntArgs) -> Result {
    let opts = HuntOptions::from_spec(&HuntSpec {
        topologies: &args.topology,
        kernel: &args.kernel,
        features: &args.features,
        against: args.against.as_deref(),
        find: &args.find,
        shard: args.shard.as_deref(),
        seed: args.seed,
        cases: args.cases,
        duration_ns: args.duration,
        thresholds: Thresholds {
            idle_ns: args.idle,
            rt_ns: args.rt,
            starvation_ns: args.starvation,
            fairness_pct: args.fairness,
        },
        stop_after: args.stop_after,
        shrink_budget: args.shrink_budget,
    })?;
    let pool = schedlab_sweep::thread_pool(args.jobs)?;
    let bar = schedlab_sweep::Bar::new(opts.cases as usize, "hunt");
    // In a log (stderr not a terminal, no bar): a line per tenth of the cases.
    let log = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let next_line = std::sync::atomic::AtomicU64::new(0);
    let progress = |done: u64, total: u64, found: usize| {
        bar.set(done as usize, &format!("{found} classes found"));
        if log && done >= next_line.load(std::sync::atomic::Ordering::Relaxed) {
            stderr_line!("hunt: {done} of {total} cases, {found} classes found");
            next_line.store(done + total.div_ceil(10), std::sync::atomic::Ordering::Relaxed);
        }
    };
    let report = pool.install(|| run_hunt(&opts, &progress))?;
    bar.finish();
    if let Some(dir) = &args.out {
        report.write_findings(dir, &mut |path| stderr_line!("wrote {}", path.display()))?;
    }
    let text = if args.json.json { render::render_json(&report) } else { render::render_text(&opts, &report) };
    crate::output::emit(&text)
}
