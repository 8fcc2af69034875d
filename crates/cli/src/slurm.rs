//! `schedlab sweep FILE --slurm`: the sweep as a Slurm job array (one task
//! per shard) and a merge job after it, waited on with a progress bar, and
//! the merged report printed as a local run prints it. The scripts and
//! the queue are `schedlab_slurm`'s; which shards exist and are this
//! sweep's is `schedlab_sweep`'s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use schedlab_slurm::{queue_state, Plan, SlurmOptions};
use schedlab_sweep::{fingerprint, shard_done, Bar, ShardSpec, Sweep};

use crate::error::{CliError, Result};
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

/// `--shard I/N`, `auto` or `auto/N` (the index, and maybe the count, from
/// the environment of a Slurm array task or a Kubernetes Indexed Job).
pub fn shard_arg(text: &str) -> Result<ShardSpec> {
    let Some(rest) = text.strip_prefix("auto") else {
        return Ok(text.parse::<ShardSpec>().map_err(|e| CliError::ShardAuto(format!("--shard {e}")))?);
    };
    let count = match rest.strip_prefix('/') {
        None if rest.is_empty() => None,
        Some(n) => Some(
            n.parse::<u32>().map_err(|_| CliError::ShardAuto(format!("--shard `{text}`: expected auto or auto/N")))?,
        ),
        None => return Err(CliError::ShardAuto(format!("--shard `{text}`: expected auto or auto/N")).into()),
    };
    let (index, count) =
        schedlab_slurm::shard_from_env(count, &|k| std::env::var(k).ok()).map_err(CliError::ShardAuto)?;
    Ok(format!("{index}/{count}").parse::<ShardSpec>().map_err(|e| CliError::ShardAuto(format!("--shard {e}")))?)
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
    let cwd = std::env::current_dir().map_err(|e| CliError::SlurmSweep(format!("the current directory: {e}")))?;
    let exe = std::env::current_exe().map_err(|e| CliError::SlurmSweep(format!("this program's path: {e}")))?;
    let hash = fingerprint(sweep);
    let dir = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("schedlab-slurm-{hash}")));
    let dir = if dir.is_absolute() { dir } else { cwd.join(dir) };
    // Nothing is written before a controller answers.
    schedlab_slurm::reachable()?;
    let created = !dir.exists();
    std::fs::create_dir_all(&dir).map_err(|e| CliError::SlurmSweep(format!("cannot create {}: {e}", dir.display())))?;
    let jobs = sweep.jobs() as u32;
    let shards = s.shards.unwrap_or(jobs.min(64)).min(jobs).max(1);
    let exe_s = exe.display().to_string();
    let mut shard_argv = vec![exe_s.clone()];
    shard_argv.extend(sweep_words(args));
    shard_argv.extend(["--jobs".into(), s.cpus_per_task.to_string(), "--shard".into(), "{SHARD}".into()]);
    shard_argv.extend(["--out".into(), dir.display().to_string()]);
    let mut merge_argv = vec![exe_s];
    merge_argv.extend(sweep_words(args));
    merge_argv.extend(["--merge".into(), dir.display().to_string()]);
    merge_argv.extend(output_words(args));
    let name = format!("schedlab-{}", stem(&args.sweep));
    let plan = Plan {
        dir: dir.clone(),
        name,
        shards,
        shard_argv,
        merge_argv,
        workdir: cwd,
        options: SlurmOptions {
            partition: s.partition.clone(),
            max_running: s.max_running,
            time_limit: s.time_limit.clone(),
            cpus_per_task: s.cpus_per_task,
        },
    };
    // A rerun resubmits only what is missing (or is another sweep's).
    let missing = |sweep: &Sweep| -> Vec<u32> {
        (0..shards).filter(|&i| !shard_done(&dir, sweep, ShardSpec { index: i, count: shards })).collect()
    };
    let todo = missing(sweep);
    if todo.is_empty() {
        stderr_line!("all {shards} shards are in {} already: merging them here", dir.display());
        let merged = schedlab_sweep::merge_dir(&dir, Some(sweep))?;
        return crate::sweep::print(&merged.result, sweep.ab.as_ref(), &args.output, None);
    }
    let sub = match plan.submit(&todo) {
        Ok(sub) => sub,
        Err(e) => {
            // A folder this run made holds only the scripts: take it away
            // again, so a failed submission leaves nothing behind.
            if created {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(e.into());
        }
    };
    let what = if todo.len() as u32 == shards {
        format!("{shards} shards")
    } else {
        format!("the {} missing shards of {shards} ({})", todo.len(), list(&todo))
    };
    stderr_line!(
        "submitted {what} as job array {}, merge job {} after it (in {})",
        sub.array_job,
        sub.merge_job,
        dir.display()
    );
    if s.no_wait {
        crate::output::emit(&format!(
            "array job {}\nmerge job {}\nreport: {} once the merge job is done\nor merge here: schedlab {} --merge {}\n",
            sub.array_job,
            sub.merge_job,
            plan.report_path().display(),
            sweep_words(args)[1..].join(" "),
            dir.display()
        ))?;
        return Ok(());
    }
    let bar = Bar::new(shards as usize, "slurm");
    let poll = Duration::from_millis(
        std::env::var("SCHEDLAB_SLURM_POLL_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000),
    );
    loop {
        let done = shards as usize - missing(sweep).len();
        bar.set(done, &format!("array {} merge {}", sub.array_job, sub.merge_job));
        if let Ok(status) = std::fs::read_to_string(plan.report_status_path()) {
            bar.finish();
            return finish_merge(&plan, status.trim());
        }
        let q = queue_state(&sub)?;
        if q.merge_blocked() {
            bar.finish();
            let _ = schedlab_slurm::cancel(&sub.merge_job);
            let failed = missing(sweep);
            let logs: Vec<String> = failed.iter().map(|&i| plan.shard_log(i).display().to_string()).collect();
            return Err(CliError::SlurmSweep(format!(
                "shards {} of {shards} failed (array job {}; logs: {}); the merge job {} was cancelled. Run the same \
                 command again to resubmit only those shards",
                list(&failed),
                sub.array_job,
                logs.join(", "),
                sub.merge_job
            ))
            .into());
        }
        if q.merge.is_none() && q.array_tasks == 0 {
            // Gone from the queue: give the status file a moment (NFS), then say so.
            std::thread::sleep(poll);
            if let Ok(status) = std::fs::read_to_string(plan.report_status_path()) {
                bar.finish();
                return finish_merge(&plan, status.trim());
            }
            bar.finish();
            return Err(CliError::SlurmSweep(format!(
                "the merge job {} left the queue without a report (cancelled, or its node failed): see {}",
                sub.merge_job,
                dir.join("merge.log").display()
            ))
            .into());
        }
        std::thread::sleep(poll);
    }
}

/// Print the merge job's report; its exit status decides ours.
fn finish_merge(plan: &Plan, status: &str) -> Result {
    let report = std::fs::read_to_string(plan.report_path()).unwrap_or_default();
    let err = std::fs::read_to_string(plan.report_err_path()).unwrap_or_default();
    crate::output::emit(&report)?;
    match status {
        "0" => Ok(()),
        "1" if err.contains("A/B gate failed") => {
            Err(CliError::MergeJobGate(err.trim().trim_start_matches("schedlab: error: ").to_string()).into())
        }
        _ => Err(CliError::SlurmSweep(format!(
            "the merge job failed (exit status {status}): {}",
            err.trim().trim_start_matches("schedlab: error: ")
        ))
        .into()),
    }
}

fn stem(p: &Path) -> &str {
    p.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep")
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}
