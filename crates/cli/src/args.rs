//! Flags several commands share, each defined once and flattened into the
//! commands that take it, so that a flag means the same everywhere.

use clap::Args;
use schedlab_topology::parse_duration;
use std::path::PathBuf;

/// `schedlab_analysis::DEFAULT_GRACE_NS` as `--grace` takes it.
pub const DEFAULT_GRACE: &str = "100us";

/// `--seed`.
#[derive(Args, Clone, Debug)]
pub struct SeedArg {
    /// Seed of the simulation's timing jitter and noise (overrides the file's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulate a quiet machine: leave out the topology's [[noise]]
    /// (interrupts, softirqs, steal), keeping its idle states and costs.
    #[arg(long)]
    pub no_noise: bool,
}

/// `--duration`.
#[derive(Args, Clone, Debug)]
pub struct DurationArg {
    /// How long to run, simulated or real, e.g. 30s, 500ms (overrides the file's `duration`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<u64>,
}

/// `--features`.
#[derive(Args, Clone, Debug)]
pub struct FeaturesArg {
    /// sched_features settings in debugfs syntax, comma-separated or repeated:
    /// `--features NO_DELAY_DEQUEUE,NO_RUN_TO_PARITY` (with --vm or in `schedlab vm`,
    /// written in the guest after the scenario's own).
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = crate::names::feature(), hide_possible_values = true)]
    pub features: Vec<String>,
}

/// `--threshold`.
#[derive(Args, Clone, Debug)]
pub struct ThresholdArg {
    /// Handoffs at or above this count as stalls (default: the scenario's `stall_threshold`, else 500us).
    #[arg(long, value_parser = parse_duration)]
    pub threshold: Option<u64>,
}

/// `--json`.
#[derive(Args, Clone, Debug)]
pub struct JsonArg {
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `--trace`.
#[derive(Args, Clone, Debug)]
pub struct TraceArg {
    /// Write the run's events as ftrace text (the format of /sys/kernel/tracing/trace;
    /// a real run's is the captured tracefs text; with several runs, one file per run:
    /// FILE with .runN before the extension). For `run`, `-` writes it to standard output
    /// and the report to stderr.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// `--perfetto`.
#[derive(Args, Clone, Debug)]
pub struct PerfettoArg {
    /// Write the events as a Perfetto protobuf trace (open it at ui.perfetto.dev):
    /// sched events as Perfetto's own, schedlab's decision events and markers as instants.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
}

/// The options of the stall and work-conservation sections.
#[derive(Args, Clone, Debug)]
pub struct ReportArgs {
    /// Print the narratives (decision chains) of the first N stalls; 0 prints none.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub stalls: usize,
    /// Work-conservation grace window: violations shorter than this are not
    /// counted in the concurrent figures (Ipanema's concurrent work conservation).
    #[arg(long, value_parser = parse_duration, default_value = DEFAULT_GRACE)]
    pub grace: u64,
}

/// `--max-memory`.
#[derive(Args, Clone, Debug)]
pub struct MemoryArg {
    /// Stop a run before its kept trace and analysis take more than SIZE of memory,
    /// e.g. 512MiB, 8GiB (default: 80 % of the memory available when schedlab
    /// starts). The error says how long a run fits. A sweep shares it among its jobs.
    #[arg(long = "max-memory", value_name = "SIZE", value_parser = schedlab_sim::MemoryBudget::parse_size)]
    pub max_memory: Option<u64>,
}

impl MemoryArg {
    /// The budget of one of `jobs` runs at once.
    pub fn budget(&self, jobs: usize) -> schedlab_sim::MemoryBudget {
        schedlab_sim::MemoryBudget::for_jobs(self.max_memory, jobs)
    }
}

/// What a run or a trace prints (`--view`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum View {
    /// The run report.
    Report,
    /// `perf sched latency`'s table: per comm, or per thread with --pids (perf's -p).
    Latency,
    /// `perf sched timehist`'s line per switch.
    Timehist,
    /// `perf sched map`'s line per switch: which task each CPU runs.
    Map,
}

#[derive(Args)]
pub struct ViewArg {
    /// What to print: the run report; `perf sched latency`'s table, per comm or per thread (run time
    /// from sched_stat_runtime, switches measured, average and longest wakeup-to-running
    /// delay with when it happened); `perf sched timehist`'s line per switch (wait,
    /// scheduling delay, run time); or `perf sched map`'s line per switch (analyze only).
    /// `analyze` computes them as perf 6.1 does, from the same events (docs/real-traces.md).
    #[arg(long, value_enum, default_value_t = View::Report)]
    pub view: View,
    /// `--view latency`: one row per thread, as `perf sched latency -p`, instead of one
    /// per comm (perf's default: the threads of one comm summed into `comm:(N)`).
    #[arg(long)]
    pub pids: bool,
}

impl ViewArg {
    /// `--pids` is the latency view's.
    pub fn check_pids(&self) -> Result<(), crate::error::CliError> {
        if self.pids && self.view != View::Latency {
            return Err(crate::error::CliError::Usage(
                "--pids (one row per thread, as `perf sched latency -p`) is an option of --view latency".into(),
            ));
        }
        Ok(())
    }

    /// How the latency view's rows go.
    pub fn latency_rows(&self) -> schedlab_analysis::perf_sched::LatencyRows {
        if self.pids {
            schedlab_analysis::perf_sched::LatencyRows::PerThread
        } else {
            schedlab_analysis::perf_sched::LatencyRows::ByComm
        }
    }

    /// `run`: the map is `analyze`'s.
    pub fn check(&self) -> Result<(), crate::error::CliError> {
        self.check_pids()?;
        if self.view == View::Map {
            return Err(crate::error::CliError::Usage(
                "--view map is `analyze`'s: write the run's trace with --trace FILE and run \
                 `schedlab analyze FILE --view map`"
                    .into(),
            ));
        }
        Ok(())
    }
}
