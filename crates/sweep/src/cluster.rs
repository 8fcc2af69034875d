//! A sweep on a Slurm cluster: a job array with one task per shard and a
//! merge job after it, waited on with a progress bar. A rerun of the same
//! sweep submits only the shards that are missing. The scripts and the
//! queue are `schedlab_slurm`'s; which shards exist and are this sweep's
//! is [`crate::shard`]'s.

use std::path::PathBuf;
use std::time::Duration;

use schedlab_slurm::{queue_state, Plan, SlurmError, SlurmOptions};

use crate::shard::{fingerprint, merge_dir, shard_done, Merged, ShardError, ShardSpec};
use crate::{Bar, Sweep};

/// How to run a sweep on the cluster.
pub struct ClusterRun {
    /// The command's own words (`sweep FILE --rounds N ...`) for the jobs,
    /// which run in the same directory.
    pub sweep_words: Vec<String>,
    /// The output flags, passed on to the merge job (its stdout is the report).
    pub output_words: Vec<String>,
    /// The name of the jobs: `schedlab-STEM`.
    pub stem: String,
    /// The working directory (shards, logs, scripts, the report); `None`:
    /// ./schedlab-slurm-HASH.
    pub out: Option<PathBuf>,
    /// Array tasks (default: one per job, at most 64).
    pub shards: Option<u32>,
    pub options: SlurmOptions,
    /// Submit and return without waiting.
    pub no_wait: bool,
}

/// How a cluster sweep ended.
pub enum ClusterOutcome {
    /// Every shard was in the directory already: merged here.
    MergedHere(Box<Merged>),
    /// `--no-wait`: what was submitted and how to merge, to print.
    Submitted(String),
    /// The merge job ran: its report (to print first), and how it ended.
    MergeJob { report: String, ended: Result<(), MergeJobFailed> },
}

/// How the merge job, a `schedlab sweep-merge`, failed: from its exit status
/// and standard error (its `schedlab: error: ` prefix left out).
#[derive(Debug, thiserror::Error)]
pub enum MergeJobFailed {
    /// Exit status 1, an A/B gate failed: the report is whole.
    #[error("{0}")]
    Gate(String),
    #[error("the merge job failed (exit status {status}): {error}")]
    Failed { status: String, error: String },
}

impl MergeJobFailed {
    /// The merge job's end from its exit status and standard error.
    fn from_status(status: &str, stderr: &str) -> Result<(), MergeJobFailed> {
        let error = stderr.trim().trim_start_matches("schedlab: error: ").to_string();
        match status {
            "0" => Ok(()),
            "1" if stderr.contains("A/B gate failed") => Err(MergeJobFailed::Gate(error)),
            _ => Err(MergeJobFailed::Failed { status: status.to_string(), error }),
        }
    }
}

/// Why a cluster sweep did not end with a report.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Slurm(#[from] SlurmError),
    #[error(transparent)]
    Shard(#[from] ShardError),
    #[error("the current directory: {0}")]
    Cwd(std::io::Error),
    #[error("this program's path: {0}")]
    Exe(std::io::Error),
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir { dir: PathBuf, source: std::io::Error },
    #[error(
        "shards {} of {shards} failed (array job {array_job}; logs: {}); the merge job {merge_job} was cancelled. Run \
         the same command again to resubmit only those shards",
        list(failed),
        logs.join(", ")
    )]
    ShardsFailed { failed: Vec<u32>, shards: u32, array_job: String, logs: Vec<String>, merge_job: String },
    #[error(
        "the merge job {merge_job} left the queue without a report (cancelled, or its node failed): see {}",
        log.display()
    )]
    MergeLost { merge_job: String, log: PathBuf },
}

/// Run `sweep` on the cluster as `run` says; `log` hears what was submitted.
pub fn sweep_on_slurm(
    sweep: &Sweep,
    run: &ClusterRun,
    log: &mut dyn FnMut(&str),
) -> Result<ClusterOutcome, ClusterError> {
    let cwd = std::env::current_dir().map_err(ClusterError::Cwd)?;
    let exe = std::env::current_exe().map_err(ClusterError::Exe)?;
    let hash = fingerprint(sweep);
    let dir = run.out.clone().unwrap_or_else(|| PathBuf::from(format!("schedlab-slurm-{hash}")));
    let dir = if dir.is_absolute() { dir } else { cwd.join(dir) };
    // Nothing is written before a controller answers.
    schedlab_slurm::reachable()?;
    let created = !dir.exists();
    std::fs::create_dir_all(&dir).map_err(|source| ClusterError::CreateDir { dir: dir.clone(), source })?;
    let jobs = sweep.jobs() as u32;
    let shards = run.shards.unwrap_or(jobs.min(64)).min(jobs).max(1);
    let exe_s = exe.display().to_string();
    let mut shard_argv = vec![exe_s.clone()];
    shard_argv.extend(run.sweep_words.iter().cloned());
    shard_argv.extend(["--jobs".into(), run.options.cpus_per_task.to_string(), "--shard".into(), "{SHARD}".into()]);
    shard_argv.extend(["--out".into(), dir.display().to_string()]);
    let mut merge_argv = vec![exe_s];
    merge_argv.extend(run.sweep_words.iter().cloned());
    merge_argv.extend(["--merge".into(), dir.display().to_string()]);
    merge_argv.extend(run.output_words.iter().cloned());
    let plan = Plan {
        dir: dir.clone(),
        name: format!("schedlab-{}", run.stem),
        shards,
        shard_argv,
        merge_argv,
        workdir: cwd,
        options: run.options.clone(),
    };
    // A rerun resubmits only what is missing (or is another sweep's).
    let missing = |sweep: &Sweep| -> Vec<u32> {
        (0..shards).filter(|&i| !shard_done(&dir, sweep, ShardSpec { index: i, count: shards })).collect()
    };
    let todo = missing(sweep);
    if todo.is_empty() {
        log(&format!("all {shards} shards are in {} already: merging them here", dir.display()));
        return Ok(ClusterOutcome::MergedHere(Box::new(merge_dir(&dir, Some(sweep))?)));
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
    log(&format!(
        "submitted {what} as job array {}, merge job {} after it (in {})",
        sub.array_job,
        sub.merge_job,
        dir.display()
    ));
    if run.no_wait {
        return Ok(ClusterOutcome::Submitted(format!(
            "array job {}\nmerge job {}\nreport: {} once the merge job is done\nor merge here: schedlab {} --merge {}\n",
            sub.array_job,
            sub.merge_job,
            plan.report_path().display(),
            run.sweep_words[1..].join(" "),
            dir.display()
        )));
    }
    let bar = Bar::new(shards as usize, "slurm");
    let poll = Duration::from_millis(
        std::env::var("SCHEDLAB_SLURM_POLL_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000),
    );
    let merged = |status: &str| ClusterOutcome::MergeJob {
        report: std::fs::read_to_string(plan.report_path()).unwrap_or_default(),
        ended: MergeJobFailed::from_status(
            status.trim(),
            &std::fs::read_to_string(plan.report_err_path()).unwrap_or_default(),
        ),
    };
    loop {
        let done = shards as usize - missing(sweep).len();
        bar.set(done, &format!("array {} merge {}", sub.array_job, sub.merge_job));
        if let Ok(status) = std::fs::read_to_string(plan.report_status_path()) {
            bar.finish();
            return Ok(merged(&status));
        }
        let q = queue_state(&sub)?;
        if q.merge_blocked() {
            bar.finish();
            let _ = schedlab_slurm::cancel(&sub.merge_job);
            let failed = missing(sweep);
            let logs = failed.iter().map(|&i| plan.shard_log(i).display().to_string()).collect();
            return Err(ClusterError::ShardsFailed {
                failed,
                shards,
                array_job: sub.array_job.clone(),
                logs,
                merge_job: sub.merge_job.clone(),
            });
        }
        if q.merge.is_none() && q.array_tasks == 0 {
            // Gone from the queue: give the status file a moment (NFS), then say so.
            std::thread::sleep(poll);
            if let Ok(status) = std::fs::read_to_string(plan.report_status_path()) {
                bar.finish();
                return Ok(merged(&status));
            }
            bar.finish();
            return Err(ClusterError::MergeLost { merge_job: sub.merge_job.clone(), log: dir.join("merge.log") });
        }
        std::thread::sleep(poll);
    }
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::MergeJobFailed;

    #[test]
    fn the_merge_jobs_exit_status_says_how_it_ended() {
        assert!(MergeJobFailed::from_status("0", "").is_ok());
        let gate = MergeJobFailed::from_status("1", "schedlab: error: A/B gate failed (b vs a): mean +9 %\n");
        assert!(
            matches!(&gate, Err(MergeJobFailed::Gate(e)) if e == "A/B gate failed (b vs a): mean +9 %"),
            "{gate:?}"
        );
        let failed = MergeJobFailed::from_status("2", "schedlab: error: shard-1-of-2.json: missing\n").unwrap_err();
        assert_eq!(failed.to_string(), "the merge job failed (exit status 2): shard-1-of-2.json: missing");
        // Status 1 without a gate's message is a failure like any other.
        assert!(matches!(MergeJobFailed::from_status("1", "other"), Err(MergeJobFailed::Failed { .. })));
    }
}
