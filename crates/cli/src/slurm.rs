//! `schedlab sweep FILE --slurm`: the flags of a sweep on a Slurm cluster,
//! and its merged report printed as a local run prints it. Submitting,
//! waiting and resubmitting is `schedlab_sweep::cluster`'s.

use clap::Args;
use schedlab_slurm::SlurmOptions;
use schedlab_sweep::cluster::{self, ClusterOutcome, ClusterRun};
use schedlab_sweep::Sweep;

use crate::error::Result;
use crate::sweep::SweepArgs;

#[derive(Args)]
pub struct SlurmArgs {
    /// Run the sweep on a Slurm cluster: a job array with one task per shard (--shards), then
    /// a merge job once every task succeeded; wait for it and print its report. A shard that
    /// failed is named with its log, and running the same command again resubmits only the
    /// missing shards. This binary, FILE and --out must be on a file system the nodes share.
    #[arg(long)]
    pub slurm: bool,
    /// Array tasks (shards) for --slurm (default: one per job, at most 64).
    #[arg(long, value_name = "N", requires = "slurm", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub shards: Option<u32>,
    /// Slurm partition for --slurm (default: the cluster's).
    #[arg(long, value_name = "NAME", requires = "slurm")]
    pub partition: Option<String>,
    /// At most N array tasks at once (Slurm's --array=...%N).
    #[arg(long, value_name = "N", requires = "slurm", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_running: Option<u32>,
    /// Time limit of each task and of the merge job, in Slurm's syntax (MM, HH:MM:SS, D-HH).
    #[arg(long, value_name = "TIME", requires = "slurm", default_value = "1:00:00")]
    pub time_limit: String,
    /// CPUs per array task; each task runs that many simulations at once.
    #[arg(long, value_name = "N", requires = "slurm", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub cpus_per_task: u32,
    /// Submit, print the job ids and how to merge, and return without waiting.
    #[arg(long, requires = "slurm")]
    pub no_wait: bool,
}

/// The sweep's own arguments as the user gave them (the file, rounds,
/// duration), for the commands the jobs run in the same directory.
fn sweep_words(args: &SweepArgs) -> Vec<String> {
    let mut w = vec!["sweep".to_string(), args.sweep.display().to_string()];
    if let Some(r) = args.rounds {
        w.extend(["--rounds".into(), r.to_string()]);
    }
    if let Some(d) = args.duration.duration {
        w.extend(["--duration".into(), format!("{d}ns")]);
    }
    w
}

/// The output flags, passed on to the merge job (its stdout is the report).
fn output_words(args: &SweepArgs) -> Vec<String> {
    let mut w = Vec::new();
    if args.output.json.json {
        w.push("--json".into());
    }
    if let Some(c) = &args.output.csv {
        w.extend(["--csv".into(), c.display().to_string()]);
    }
    if let Some(ab) = &args.output.ab {
        w.extend(["--ab".into(), ab.clone()]);
    }
    w
}

pub fn sweep_on_slurm(sweep: &Sweep, args: &SweepArgs) -> Result {
    let s = &args.slurm;
    let run = ClusterRun {
        sweep_words: sweep_words(args),
        output_words: output_words(args),
        stem: args.sweep.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep").to_string(),
        out: args.out.clone(),
        shards: s.shards,
        options: SlurmOptions {
            partition: s.partition.clone(),
            max_running: s.max_running,
            time_limit: s.time_limit.clone(),
            cpus_per_task: s.cpus_per_task,
        },
        no_wait: s.no_wait,
    };
    match cluster::sweep_on_slurm(sweep, &run, &mut |line| stderr_line!("{line}"))? {
        ClusterOutcome::MergedHere(merged) => {
            crate::sweep::print(&merged.result, sweep.ab.as_ref(), &args.output, None)
        }
        ClusterOutcome::Submitted(text) => crate::output::emit(&text),
        ClusterOutcome::MergeJob { report, ended } => {
            // The merge job's end decides ours (error::exit_status).
            crate::output::emit(&report)?;
            Ok(ended?)
        }
    }
}
