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
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
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
    /// FILE with .runN before the extension).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_default_is_the_analysis_default() {
        assert_eq!(parse_duration(DEFAULT_GRACE), Ok(schedlab_analysis::DEFAULT_GRACE_NS));
    }
}
