//! `schedlab bench`: how fast the simulator is (`schedlab_sweep::bench`;
//! without `--only`, each block in a child process of its own,
//! `bench_isolated`).

use clap::Args;
use schedlab_sweep::bench::{bench as run_benchmarks, bench_isolated, bench_rows, BenchOptions};
use schedlab_topology::parse_duration;
use std::path::PathBuf;

use crate::error::Result;

#[derive(Args)]
#[command(after_help = crate::examples::get("bench"))]
pub struct BenchArgs {
    /// Repetitions of each benchmark (the median is printed).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Directory holding scenarios/ (default: the current directory).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Simulated duration of the schbench run (the target is 60 s).
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub schbench_duration: u64,
    /// Threads for the seed-000 sweep.
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub jobs: usize,
    /// Only the blocks whose name contains this: asym_min, rt-pi-push,
    /// schbench, diff, post-after-wait, cgroups, invariants, sweep (run in this
    /// process; without it each block runs in a process of its own).
    #[arg(long)]
    pub only: Option<String>,
    /// Print the rows only (what each block's child process does).
    #[arg(long, hide = true)]
    pub rows_only: bool,
    /// The reference loop's CPU ns per event, measured by the parent
    /// `schedlab bench` (what each block's child divides its rows by).
    #[arg(long, hide = true)]
    pub reference_ns: Option<f64>,
}

pub fn bench(args: BenchArgs) -> Result {
    let opts = BenchOptions {
        reps: args.reps,
        root: args.root.clone(),
        schbench_duration: args.schbench_duration,
        jobs: args.jobs,
        only: args.only.clone(),
        reference_ns: args.reference_ns,
        build: format!("schedlab {}", crate::VERSION),
    };
    // Each row as it is measured; the first failed write ends the command.
    let mut failed = None;
    let mut line = |line: String| {
        if failed.is_none() {
            failed = crate::output::emit(&format!("{line}\n")).err();
        }
    };
    if args.rows_only {
        bench_rows(&opts, &mut line)?;
    } else if args.only.is_some() {
        run_benchmarks(&opts, &mut line)?;
    } else {
        bench_isolated(&opts, &mut line)?;
    }
    failed.map_or(Ok(()), Err)
}
