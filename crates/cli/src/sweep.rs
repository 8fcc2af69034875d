//! `schedlab sweep` and `schedlab sweep-merge`: run a sweep file (whole, or
//! one shard of it), or join shards, and print the seed-style tables, the
//! A/B comparison, JSON or CSV.

use clap::Args;
use schedlab_report::{parse_ab_pair, render_csv, sweep_timing, AbSpec, SweepReport, SweepResult};
use schedlab_sweep::{merge_dir, run_shard, run_sweep, Bar, ShardSpec, Sweep, MAX_ROUNDS};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::args::{DurationArg, JsonArg, MemoryArg};
use crate::error::{CliError, Result};
use crate::output::write_file;

/// How to print a result: shared by `sweep` and `sweep-merge`.
#[derive(Args)]
pub struct OutputArgs {
    #[command(flatten)]
    pub json: JsonArg,
    /// Write one CSV row per (setting, round) to FILE; `-` prints the CSV instead of the tables.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Compare setting B against setting A: means, change, bootstrap 95 % CI, Welch's t-test
    /// (overrides the pair of the file's [ab] table; its gates still apply, and a failed
    /// gate makes the exit status 1).
    #[arg(long, value_name = "A,B")]
    pub ab: Option<String>,
}

#[derive(Args)]
#[command(after_help = crate::examples::get("sweep"))]
pub struct SweepArgs {
    /// Sweep file (TOML), e.g. scenarios/sweeps/itmt-delay-dequeue.toml, or a bundled sweep's
    /// name (`schedlab scenarios` lists them).
    #[arg(value_parser = crate::names::sweep(), hide_possible_values = true)]
    pub sweep: PathBuf,
    /// Rounds per setting (overrides the file's `rounds`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_ROUNDS as i64))]
    pub rounds: Option<u32>,
    #[command(flatten)]
    pub duration: DurationArg,
    /// Simulations to run at once (default: one per CPU; with --slurm, --cpus-per-task says it).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024), conflicts_with = "slurm")]
    pub jobs: Option<u32>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Run only shard I of N (the jobs j with j % N == I, jobs numbered round by round) and
    /// write DIR/shard-I-of-N.json for `schedlab sweep-merge DIR`. `auto` takes I and N from
    /// a Slurm job array (SLURM_ARRAY_TASK_ID of a whole 0..N-1 array); `auto/N` takes I from
    /// SLURM_ARRAY_TASK_ID or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "I/N|auto[/N]", requires = "out", conflicts_with_all = ["merge", "json", "csv", "ab", "slurm"])]
    pub shard: Option<String>,
    /// Where --shard writes its file; with --slurm, the cluster's working directory (shards,
    /// logs, scripts, the report; default ./schedlab-slurm-HASH). It must be on a file
    /// system every node sees.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub slurm: crate::slurm::SlurmArgs,
    /// Do not run: merge the shard files in DIR, which must come from this file and options.
    #[arg(long, value_name = "DIR")]
    pub merge: Option<PathBuf>,
    /// Write DIR/handoff-cdf.svg: the handoff latency CDF, one curve per setting (all rounds pooled).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["merge", "shard", "slurm"])]
    pub plot: Option<PathBuf>,
    /// Leave out the closing wall-time line, so that outputs compare byte for byte.
    #[arg(long)]
    pub no_timing: bool,
    #[command(flatten)]
    pub memory: MemoryArg,
}

#[derive(Args)]
#[command(after_help = crate::examples::get("sweep-merge"))]
pub struct MergeArgs {
    /// Directory of shard-I-of-N.json files written by `schedlab sweep FILE --shard I/N --out DIR`.
    pub dir: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn sweep(args: SweepArgs) -> Result {
    let mut sweep = Sweep::load(&args.sweep)?;
    if let Some(r) = args.rounds {
        sweep.set_rounds(r)?;
    }
    if let Some(d) = args.duration.duration {
        if d == 0 {
            return Err(CliError::ZeroDuration.into());
        }
        sweep.duration_ns = Some(d);
    }
    if let Some(arg) = &args.output.ab {
        // Before running anything.
        let names: Vec<&str> = sweep.settings.iter().map(|s| s.name.as_str()).collect();
        parse_ab_pair(arg, &names)?;
    }
    if let Some(dir) = &args.merge {
        let merged = merge_dir(dir, Some(&sweep))?;
        return print(&merged.result, sweep.ab.as_ref(), &args.output, None);
    }
    let pool = schedlab_sweep::thread_pool(args.jobs)?;
    let threads = pool.current_num_threads();
    sweep.memory_budget = Some(args.memory.budget(threads));
    let wall = Instant::now();
    let timing = |n: usize| sweep_timing(n, wall.elapsed().as_secs_f64(), threads);

    if args.out.is_some() && args.shard.is_none() && !args.slurm.slurm {
        return Err(CliError::Usage("--out goes with --shard or --slurm".into()).into());
    }
    if args.slurm.slurm {
        return crate::slurm::sweep_on_slurm(&sweep, &args);
    }
    if let (Some(text), Some(dir)) = (&args.shard, &args.out) {
        let spec = ShardSpec::from_arg(text, &|k| std::env::var(k).ok())?;
        let total = (0..sweep.jobs()).filter(|&j| spec.owns(j)).count();
        let bar = Bar::new(total, &format!("shard {spec}"));
        let file = pool.install(|| run_shard(&sweep, spec, &|p| bar.update(p)));
        bar.finish();
        let file = file?;
        let path = file.write(dir)?;
        stderr_line!("wrote {} ({} of {}; {})", path.display(), file.len(), sweep.jobs(), timing(file.len()));
        return Ok(());
    }

    let bar = Bar::new(sweep.jobs(), "");
    let result = pool.install(|| run_sweep(&sweep, &|p| bar.update(p)));
    bar.finish();
    let result = result?;
    if let Some(dir) = &args.plot {
        for path in schedlab_plot::write_sweep_plots(dir, &result)? {
            stderr_line!("wrote {}", path.display());
        }
    }
    let timing = (!args.no_timing).then(|| timing(sweep.jobs()));
    print(&result, sweep.ab.as_ref(), &args.output, timing)
}

pub fn sweep_merge(args: MergeArgs) -> Result {
    let merged = merge_dir(&args.dir, None)?;
    print(&merged.result, merged.ab.as_ref(), &args.output, None)
}

/// Print `result` as `out` asks; `timing` closes the text report. A failed
/// A/B gate is an error (exit status 1) after everything is printed.
pub(crate) fn print(
    result: &SweepResult,
    file_ab: Option<&AbSpec>,
    out: &OutputArgs,
    timing: Option<String>,
) -> Result {
    let report = SweepReport::new(result, file_ab, out.ab.as_deref())?;
    let csv_stdout = out.csv.as_deref() == Some(Path::new("-"));
    if csv_stdout && out.json.json {
        return Err(CliError::CsvAndJson.into());
    }
    if let Some(path) = out.csv.as_deref().filter(|_| !csv_stdout) {
        write_file(path, &render_csv(result), "--csv")?;
    }
    if csv_stdout {
        crate::output::emit(&render_csv(result))?;
    } else if out.json.json {
        crate::output::emit(&format!("{}\n", report.json()?))?;
        if let Some(t) = &timing {
            stderr_line!("{t}");
        }
    } else {
        crate::output::emit(&report.text(timing.as_deref()))?;
    }
    Ok(report.gates()?)
}
