//! `schedlab bench`: how fast the simulator is (`schedlab_sweep::bench`).

use clap::Args;
use schedlab_sweep::bench::{bench as run_benchmarks, BenchOptions};
use schedlab_topology::parse_duration;
use std::path::PathBuf;

use crate::error::Result;

#[derive(Args)]
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
    /// Only the benchmarks whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}

pub fn bench(args: BenchArgs) -> Result {
    let opts = BenchOptions {
        reps: args.reps,
        root: args.root,
        schbench_duration: args.schbench_duration,
        jobs: args.jobs,
        only: args.only,
    };
    // Each row as it is measured; the first failed write ends the command.
    let mut failed = None;
    run_benchmarks(&opts, &mut |line| {
        if failed.is_none() {
            failed = crate::output::emit(&format!("{line}\n")).err();
        }
    })?;
    failed.map_or(Ok(()), Err)
}
