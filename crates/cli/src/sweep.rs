//! `schedlab sweep`: run a sweep file and print the seed-style tables.

use clap::Args;
use schedlab_sweep::{render, run_sweep, Progress, Sweep, MAX_ROUNDS};
use schedlab_topology::parse_duration;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct SweepArgs {
    /// Sweep file (TOML), e.g. scenarios/sweeps/itmt-delay-dequeue.toml.
    pub sweep: PathBuf,
    /// Rounds per setting (overrides the file's `rounds`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_ROUNDS as i64))]
    pub rounds: Option<u32>,
    /// Simulated duration of each run, e.g. 30s, 500ms (overrides the file's `duration`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<u64>,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Simulations to run at once (default: one per CPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
}

pub fn sweep(args: SweepArgs) -> Result<(), String> {
    let mut sweep = Sweep::load(&args.sweep).map_err(|e| e.to_string())?;
    if let Some(r) = args.rounds {
        sweep.rounds = r;
    }
    if let Some(d) = args.duration {
        if d == 0 {
            return Err("--duration must be longer than zero".into());
        }
        sweep.duration_ns = Some(d);
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(j) = args.jobs {
        pool = pool.num_threads(j as usize);
    }
    let pool = pool.build().map_err(|e| format!("cannot start worker threads: {e}"))?;
    let threads = pool.current_num_threads();

    let tty = std::io::stderr().is_terminal();
    let progress = |p: &Progress| {
        if tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[K[{}/{}] {} run {}: {} stalls of {} handoffs",
                p.done, p.total, p.setting, p.run, p.stalls, p.handoffs
            );
            let _ = err.flush();
        }
    };
    let wall = Instant::now();
    let result = pool.install(|| run_sweep(&sweep, &progress));
    if tty {
        eprint!("\r\x1b[K");
    }
    let result = result.map_err(|e| e.to_string())?;
    let wall = wall.elapsed().as_secs_f64();
    let timing = format!(
        "{} simulations in {wall:.2} s wall on {threads} thread{}",
        sweep.jobs(),
        if threads == 1 { "" } else { "s" }
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?);
        eprintln!("{timing}");
    } else {
        print!("{}", render(&result));
        println!();
        println!("wall      {timing}");
    }
    Ok(())
}
