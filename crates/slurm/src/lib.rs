//! Sweeps on a Slurm cluster.
//!
//! A sharded sweep (`schedlab sweep FILE --shard I/N --out DIR`, merged by
//! `--merge DIR`) maps onto Slurm as one job array, one array task per
//! shard, and one merge job that depends on the whole array (`afterok`).
//! This crate writes those two scripts, submits them with `sbatch`, reads
//! the queue with `squeue` while they run, and says which shards are
//! missing when the array did not succeed. It knows nothing of sweeps: the
//! caller gives the commands to run and checks the shard files.
//!
//! Only `sbatch`, `squeue` and `scancel` are used, so it works without
//! Slurm's accounting database (`sacct`): a finished job is one that left
//! the queue, and the merge job records its own exit status in a file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How the jobs are submitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmOptions {
    /// `--partition`; `None`: the cluster's default.
    pub partition: Option<String>,
    /// At most this many array tasks at once (`--array=...%N`).
    pub max_running: Option<u32>,
    /// Each job's `--time` (Slurm's syntax: `MM`, `HH:MM:SS`, `D-HH`).
    pub time_limit: String,
    /// `--cpus-per-task` of each array task (the shard runs this many
    /// simulations at once).
    pub cpus_per_task: u32,
}

/// A Slurm command that failed.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error("cannot run `{command}`: {source} (is Slurm installed, and SLURM_CONF set if needed?)")]
    Spawn { command: String, source: schedlab_helper::HelperError },
    /// The command started but did not finish in time (a controller that does not answer).
    #[error("`{command}`: {source} (is slurmctld answering?)")]
    Stuck { command: String, source: schedlab_helper::HelperError },
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed { command: String, status: String, stderr: String },
    #[error("`{command}` printed `{output}`, expected a job id")]
    NoJobId { command: String, output: String },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    /// Slurm is installed but no controller answers (no slurm.conf found,
    /// or slurmctld down): said before anything is written or submitted.
    #[error(
        "no Slurm cluster answers: `{command}` said: {stderr}\n  point at one with SLURM_CONF=/path/to/slurm.conf \
         (your cluster's), or start a one-node test cluster on this machine: scripts/slurm-cluster.sh start DIR \
         prints the SLURM_CONF to export (root; scripts/install-slurm-deps.sh installs slurmctld, slurmd and munge)"
    )]
    NoCluster { command: String, stderr: String },
    #[error(
        "Slurm's `{command}` is not on PATH ({source})\n  install Slurm's client commands (Debian: \
         scripts/install-slurm-deps.sh) or run on a login node of your cluster"
    )]
    NotInstalled { command: String, source: schedlab_helper::HelperError },
}

/// Check that a Slurm controller answers (`sinfo`, one request), before a
/// sweep writes its scripts or submits anything.
pub fn reachable() -> Result<(), SlurmError> {
    match run("sinfo", &["-h", "-o", "%P"]) {
        Ok(_) => Ok(()),
        Err(SlurmError::Spawn { command, source }) => Err(SlurmError::NotInstalled { command, source }),
        Err(SlurmError::Failed { command, stderr, .. }) => Err(SlurmError::NoCluster { command, stderr }),
        Err(e) => Err(e),
    }
}

/// The shard index and count from the environment, for `--shard auto`:
/// a Slurm array task (`SLURM_ARRAY_TASK_ID`, and the count from
/// `SLURM_ARRAY_TASK_COUNT` when the array is the whole `0..N-1`) or a
/// Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`). `count` (from
/// `--shard auto/N`) is required where the environment cannot tell it (a
/// Kubernetes job, an array resubmitted for a few shards).
pub fn shard_from_env(count: Option<u32>, env: &dyn Fn(&str) -> Option<String>) -> Result<(u32, u32), ShardEnvError> {
    let num = |name: &'static str| -> Result<Option<u32>, ShardEnvError> {
        match env(name) {
            None => Ok(None),
            Some(value) => value.trim().parse().map(Some).map_err(|_| ShardEnvError::NotANumber { name, value }),
        }
    };
    let (index, source) = match (num("SLURM_ARRAY_TASK_ID")?, num("JOB_COMPLETION_INDEX")?) {
        (Some(i), _) => (i, "SLURM_ARRAY_TASK_ID"),
        (None, Some(i)) => (i, "JOB_COMPLETION_INDEX"),
        (None, None) => return Err(ShardEnvError::NoIndex),
    };
    let count = match count {
        Some(n) => n,
        None if source == "SLURM_ARRAY_TASK_ID" => {
            let (n, min, max) =
                (num("SLURM_ARRAY_TASK_COUNT")?, num("SLURM_ARRAY_TASK_MIN")?, num("SLURM_ARRAY_TASK_MAX")?);
            match (n, min, max) {
                (Some(n), Some(0), Some(max)) if max + 1 == n => n,
                _ => return Err(ShardEnvError::NotWholeArray { n, min, max }),
            }
        }
        None => return Err(ShardEnvError::IndexOnly { var: source }),
    };
    if count == 0 || index >= count {
        return Err(ShardEnvError::NotBelow { var: source, index, count });
    }
    Ok((index, count))
}

/// Why `--shard auto` could not take its shard from the environment.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardEnvError {
    #[error("{name}=`{value}` is not a number")]
    NotANumber { name: &'static str, value: String },
    #[error(
        "--shard auto: neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX \
         (a Kubernetes Indexed Job) is set; give the shard as I/N"
    )]
    NoIndex,
    #[error(
        "--shard auto: this array is not the whole 0..N-1 (SLURM_ARRAY_TASK_COUNT {n:?}, MIN {min:?}, \
         MAX {max:?}), so the shard count is unknown; use --shard auto/N"
    )]
    NotWholeArray { n: Option<u32>, min: Option<u32>, max: Option<u32> },
    #[error("--shard auto: {var} gives the index only; use --shard auto/N")]
    IndexOnly { var: &'static str },
    #[error("--shard auto: {var}={index} is not below the shard count {count}")]
    NotBelow { var: &'static str, index: u32, count: u32 },
}

/// A sweep laid out for Slurm in `dir`: what each array task and the merge
/// job run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Absolute; holds the scripts, the shard files, logs and the report.
    pub dir: PathBuf,
    /// Job name (`schedlab-<sweep>`).
    pub name: String,
    pub shards: u32,
    /// The shard command with `{SHARD}` where `auto/N` goes (argv, each
    /// word quoted into the script).
    pub shard_argv: Vec<String>,
    /// The merge command; its stdout becomes the report.
    pub merge_argv: Vec<String>,
    /// Where the jobs run (`--chdir`): the submitter's directory, so the
    /// commands name files as the user did.
    pub workdir: PathBuf,
    pub options: SlurmOptions,
}

/// The array job as submitted, and its merge job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    pub array_job: String,
    pub merge_job: String,
    /// The shard indices submitted (all, or the ones a rerun resubmits).
    pub indices: Vec<u32>,
}

/// What the queue says about a submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueState {
    /// Array tasks still queued or running.
    pub array_tasks: usize,
    /// The merge job's state (`PENDING`, `RUNNING`, ...), `None` once it left the queue.
    pub merge: Option<String>,
    /// Why the merge job pends (`Dependency`, `DependencyNeverSatisfied`, ...).
    pub merge_reason: Option<String>,
}

impl QueueState {
    /// The array is done but a task of it failed: the merge job can never run.
    pub fn merge_blocked(&self) -> bool {
        self.array_tasks == 0 && self.merge_reason.as_deref() == Some("DependencyNeverSatisfied")
    }
}

/// `'word'` for a shell script.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `--array` of these indices: `0-7`, or `1,4,6` for a rerun, then `%N`.
pub fn array_spec(indices: &[u32], max_running: Option<u32>) -> String {
    let contiguous = indices.windows(2).all(|w| w[1] == w[0] + 1);
    let mut s = match (indices.first(), indices.last()) {
        (Some(a), Some(b)) if contiguous && a != b => format!("{a}-{b}"),
        _ => indices.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
    };
    if let Some(n) = max_running {
        let _ = write!(s, "%{n}");
    }
    s
}

impl Plan {
    /// The array task's log for shard `i`.
    pub fn shard_log(&self, i: u32) -> PathBuf {
        self.dir.join(format!("shard-{i}.log"))
    }

    /// The merge job's stdout (the report), stderr and exit status.
    pub fn report_path(&self) -> PathBuf {
        self.dir.join("report.out")
    }
    pub fn report_err_path(&self) -> PathBuf {
        self.dir.join("report.err")
    }
    pub fn report_status_path(&self) -> PathBuf {
        self.dir.join("report.status")
    }

    fn header(&self, job: &str) -> String {
        let o = &self.options;
        let mut s = String::from("#!/bin/bash\n");
        let _ = writeln!(s, "#SBATCH --job-name={}-{job}", self.name);
        let _ = writeln!(s, "#SBATCH --time={}", o.time_limit);
        let _ = writeln!(s, "#SBATCH --chdir={}", self.workdir.display());
        if let Some(p) = &o.partition {
            let _ = writeln!(s, "#SBATCH --partition={p}");
        }
        s
    }

    /// The job-array script: each task runs its shard.
    pub fn array_script(&self) -> String {
        let mut s = self.header("shards");
        let _ = writeln!(s, "#SBATCH --cpus-per-task={}", self.options.cpus_per_task);
        let _ = writeln!(s, "#SBATCH --output={}/shard-%a.log", self.dir.display());
        let _ = writeln!(
            s,
            "# One task per shard; submitted with --array=0-{} (a rerun: the missing ones).",
            self.shards - 1
        );
        let words: Vec<String> = self
            .shard_argv
            .iter()
            .map(|w| if w == "{SHARD}" { format!("auto/{}", self.shards) } else { w.clone() })
            .map(|w| quote(&w))
            .collect();
        let _ = writeln!(s, "exec {}", words.join(" "));
        s
    }

    /// The merge script: the report to `report.out`, its exit status to
    /// `report.status` (written last, so its presence means done).
    pub fn merge_script(&self) -> String {
        let mut s = self.header("merge");
        let _ = writeln!(s, "#SBATCH --cpus-per-task=1");
        let _ = writeln!(s, "#SBATCH --output={}/merge.log", self.dir.display());
        let words: Vec<String> = self.merge_argv.iter().map(|w| quote(w)).collect();
        let (out, err, st) = (self.report_path(), self.report_err_path(), self.report_status_path());
        let _ = writeln!(
            s,
            "{} > {} 2> {}",
            words.join(" "),
            quote(&out.display().to_string()),
            quote(&err.display().to_string())
        );
        let _ = writeln!(s, "echo $? > {}.tmp && mv {0}.tmp {0}", quote(&st.display().to_string()));
        s
    }

    /// Write both scripts and submit them: the array for `indices`, the
    /// merge after it. Earlier report files are removed first.
    pub fn submit(&self, indices: &[u32]) -> Result<Submission, SlurmError> {
        for p in [self.report_path(), self.report_err_path(), self.report_status_path()] {
            let _ = std::fs::remove_file(p);
        }
        let array = write(&self.dir.join("shards.sbatch"), &self.array_script())?;
        let merge = write(&self.dir.join("merge.sbatch"), &self.merge_script())?;
        let spec = array_spec(indices, self.options.max_running);
        let array_job = sbatch(&[&format!("--array={spec}"), &array.display().to_string()])?;
        let merge_job = sbatch(&[&format!("--dependency=afterok:{array_job}"), &merge.display().to_string()])?;
        Ok(Submission { array_job, merge_job, indices: indices.to_vec() })
    }
}

fn write(path: &Path, text: &str) -> Result<PathBuf, SlurmError> {
    std::fs::write(path, text).map_err(|source| SlurmError::Write { path: path.display().to_string(), source })?;
    Ok(path.to_path_buf())
}

/// How long one Slurm command (`sbatch`, `squeue`, `scancel`) may take: each
/// is one request to the controller, which answers in well under a second
/// (Slurm's own MessageTimeout is 10 s), so this only stops a hung one.
pub const COMMAND_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

fn run(program: &str, args: &[&str]) -> Result<String, SlurmError> {
    use schedlab_helper::HelperError;
    let command = format!("{program} {}", args.join(" "));
    let out =
        schedlab_helper::output(Command::new(program).args(args), COMMAND_LIMIT).map_err(|source| match source {
            HelperError::NotFound { .. } | HelperError::Spawn { .. } => {
                SlurmError::Spawn { command: command.clone(), source }
            }
            source => SlurmError::Stuck { command: command.clone(), source },
        })?;
    if !out.status.success() {
        return Err(SlurmError::Failed {
            command,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `sbatch --parsable ARGS`: the job id.
fn sbatch(args: &[&str]) -> Result<String, SlurmError> {
    let mut all = vec!["--parsable"];
    all.extend_from_slice(args);
    let out = run("sbatch", &all)?;
    // `ID` or `ID;CLUSTER`.
    let id = out.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SlurmError::NoJobId {
            command: format!("sbatch {}", all.join(" ")),
            output: out.trim().to_string(),
        });
    }
    Ok(id)
}

/// The queue's view of `sub`.
pub fn queue_state(sub: &Submission) -> Result<QueueState, SlurmError> {
    let jobs = format!("{},{}", sub.array_job, sub.merge_job);
    let out = run("squeue", &["-h", "-j", &jobs, "-o", "%i|%T|%r"])?;
    parse_queue(&out, sub)
}

fn parse_queue(out: &str, sub: &Submission) -> Result<QueueState, SlurmError> {
    let mut state = QueueState { array_tasks: 0, merge: None, merge_reason: None };
    for line in out.lines() {
        let mut f = line.split('|');
        let (Some(id), Some(st), reason) = (f.next(), f.next(), f.next()) else { continue };
        if id == sub.merge_job {
            state.merge = Some(st.to_string());
            state.merge_reason = reason.map(str::to_string);
        } else if let Some(tasks) = id.strip_prefix(&format!("{}_", sub.array_job)) {
            // `ID_3` is one task; `ID_[4-7%2]` the ones not started yet.
            state.array_tasks += match tasks.strip_prefix('[') {
                Some(range) => count_range(range.trim_end_matches(']')),
                None => 1,
            };
        } else if id == sub.array_job {
            state.array_tasks += 1;
        }
    }
    Ok(state)
}

/// Tasks in a pending range such as `4-7,9%2`.
fn count_range(r: &str) -> usize {
    let r = r.split('%').next().unwrap_or("");
    r.split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 1,
            },
            None => 1,
        })
        .sum()
}

/// `scancel ID`.
pub fn cancel(job: &str) -> Result<(), SlurmError> {
    run("scancel", &[job]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_shard_comes_from_a_whole_array_or_needs_its_count() {
        let whole = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
        ];
        assert_eq!(shard_from_env(None, &env(&whole)), Ok((3, 8)));
        // A rerun of shards 3 and 5 of 8: the array says 2 tasks.
        let rerun = [
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
            ("SLURM_ARRAY_TASK_MIN", "3"),
            ("SLURM_ARRAY_TASK_MAX", "5"),
        ];
        assert!(shard_from_env(None, &env(&rerun)).unwrap_err().to_string().contains("use --shard auto/N"));
        assert_eq!(shard_from_env(Some(8), &env(&rerun)), Ok((5, 8)));
        let k8s = [("JOB_COMPLETION_INDEX", "2")];
        assert!(shard_from_env(None, &env(&k8s))
            .unwrap_err()
            .to_string()
            .contains("JOB_COMPLETION_INDEX gives the index only"));
        assert_eq!(shard_from_env(Some(4), &env(&k8s)), Ok((2, 4)));
        assert!(shard_from_env(Some(2), &env(&k8s)).unwrap_err().to_string().contains("not below the shard count 2"));
        assert!(shard_from_env(None, &env(&[])).unwrap_err().to_string().contains("neither SLURM_ARRAY_TASK_ID"));
        assert!(shard_from_env(None, &env(&[("JOB_COMPLETION_INDEX", "x")]))
            .unwrap_err()
            .to_string()
            .contains("not a number"));
    }

    #[test]
    fn arrays_are_ranges_or_lists_with_a_throttle() {
        assert_eq!(array_spec(&[0, 1, 2, 3], None), "0-3");
        assert_eq!(array_spec(&[1, 4, 6], Some(2)), "1,4,6%2");
        assert_eq!(array_spec(&[5], None), "5");
    }

    #[test]
    fn the_queue_counts_running_and_pending_tasks_and_the_merge_reason() {
        let sub = Submission { array_job: "41".into(), merge_job: "42".into(), indices: vec![] };
        let q = parse_queue("41_0|RUNNING|None\n41_[2-5,7%2]|PENDING|JobArrayTaskLimit\n42|PENDING|Dependency\n", &sub)
            .unwrap();
        assert_eq!((q.array_tasks, q.merge.as_deref(), q.merge_blocked()), (6, Some("PENDING"), false));
        let q = parse_queue("42|PENDING|DependencyNeverSatisfied\n", &sub).unwrap();
        assert!(q.merge_blocked());
        let q = parse_queue("", &sub).unwrap();
        assert_eq!((q.array_tasks, q.merge), (0, None));
    }

    #[test]
    fn scripts_quote_their_words_and_name_their_logs() {
        let plan = Plan {
            dir: "/scratch/s".into(),
            name: "schedlab-x".into(),
            shards: 4,
            shard_argv: vec![
                "/bin/schedlab".into(),
                "sweep".into(),
                "/a b/it's.toml".into(),
                "--shard".into(),
                "{SHARD}".into(),
            ],
            merge_argv: vec!["/bin/schedlab".into(), "sweep".into(), "--merge".into(), "/scratch/s".into()],
            workdir: "/home/me".into(),
            options: SlurmOptions {
                partition: Some("batch".into()),
                max_running: None,
                time_limit: "10:00".into(),
                cpus_per_task: 2,
            },
        };
        let a = plan.array_script();
        assert!(
            a.contains("#SBATCH --chdir=/home/me\n#SBATCH --partition=batch\n#")
                && a.contains("--cpus-per-task=2")
                && a.contains("--output=/scratch/s/shard-%a.log"),
            "{a}"
        );
        assert!(a.ends_with("exec '/bin/schedlab' 'sweep' '/a b/it'\\''s.toml' '--shard' 'auto/4'\n"), "{a}");
        let m = plan.merge_script();
        assert!(m.contains("'--merge' '/scratch/s' > '/scratch/s/report.out' 2> '/scratch/s/report.err'\n"), "{m}");
        assert!(m.ends_with("echo $? > '/scratch/s/report.status'.tmp && mv '/scratch/s/report.status'.tmp '/scratch/s/report.status'\n"), "{m}");
    }
}
