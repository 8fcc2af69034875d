//! `schedlab bench`: how fast the simulator is (`schedlab_sweep::bench`).
//!
//! Without `--only`, each block of benchmarks runs in a child process of
//! its own (`schedlab bench --rows-only --only BLOCK`), so that a row's peak
//! memory is its own: the pipelined rows leave memory resident that the
//! allocator does not return, which every later row in the same process
//! would count.

use clap::Args;
use schedlab_sweep::bench::{
    bench as run_benchmarks, bench_rows, header, reference_row, targets, BenchOptions, BLOCKS,
};
use schedlab_topology::parse_duration;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use schedlab_helper::{Helper, HelperError};

use crate::error::Result;

/// A block of `schedlab bench` that could not run in its own process.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("bench: cannot find this program: {0}")]
    Exe(std::io::Error),
    #[error("bench: the `{block}` benchmarks: {source}")]
    Child { block: &'static str, source: HelperError },
    #[error("bench: reading the `{block}` benchmarks: {source}")]
    Read { block: &'static str, source: std::io::Error },
    #[error("bench: the `{block}` benchmarks failed ({status}); their error is above")]
    Failed { block: &'static str, status: std::process::ExitStatus },
}

#[derive(Args)]
#[command(after_help = crate::examples::BENCH)]
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
        line(header());
        // The reference goes first, measured here; each block's process
        // divides its rows by it.
        let (reference, ns) = reference_row(args.reps);
        line(reference);
        for block in BLOCKS {
            block_in_child(&args, block, ns, &mut line)?;
        }
        line(String::new());
        line(targets());
    }
    failed.map_or(Ok(()), Err)
}

/// How long one block's child may run, per repetition: the slowest block
/// (the seed-000 sweep) takes well under a minute a repetition here.
const BLOCK_LIMIT_PER_REP: Duration = Duration::from_secs(20 * 60);

/// Run `block` in a child `schedlab bench`, passing its rows on as they come.
fn block_in_child(args: &BenchArgs, block: &'static str, reference_ns: f64, line: &mut dyn FnMut(String)) -> Result {
    let exe = std::env::current_exe().map_err(BenchError::Exe)?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "--rows-only", "--only", block, "--reps", &args.reps.to_string()])
        .arg("--root")
        .arg(&args.root)
        .args(["--schbench-duration", &format!("{}ns", args.schbench_duration), "--jobs", &args.jobs.to_string()])
        .args(["--reference-ns", &reference_ns.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let failed = |source: HelperError| BenchError::Child { block, source };
    let mut child = Helper::spawn(&mut cmd, BLOCK_LIMIT_PER_REP * args.reps).map_err(failed)?;
    // Lines come through a thread, so that the time limit holds while the
    // child prints nothing.
    let out = child.stdout().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => line(l.map_err(|source| BenchError::Read { block, source })?),
            // Past its limit the child is stopped, which closes its pipe.
            Err(RecvTimeoutError::Timeout) => {
                child.try_wait().map_err(failed)?;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = child.wait().map_err(failed)?;
    if !status.success() {
        return Err(BenchError::Failed { block, status }.into());
    }
    Ok(())
}
