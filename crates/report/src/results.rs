//! What a sweep measured, setting by setting and run by run: the results
//! every table, CSV row, A/B comparison and plot is made from. Kept apart
//! from the sweep runner so that reading a result (a plot, a merge) never
//! needs the simulator.

use std::collections::BTreeMap;

use schedlab_analysis::StallBreakdown;
use serde::{Deserialize, Serialize};

use crate::measures::{MeasureInfo, MeasureRun};

/// wakee comm → CPU → bursts started there.
pub type BurstStarts = BTreeMap<String, BTreeMap<u32, u64>>;

/// Everything a sweep measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    pub sweep: String,
    pub scenario: String,
    pub scenario_path: String,
    /// The scenario's machine (a setting may run on another: [`SettingResult::topology`]).
    pub topology: String,
    pub rounds: u32,
    /// Seed of the first round.
    pub seed: u64,
    /// Seed of every round: `seed + r`, or the file's `seeds` list.
    pub seeds: Vec<u64>,
    /// The duration override; `None`: the scenario's.
    pub duration_ns: Option<u64>,
    pub wakees: Vec<String>,
    pub stall_threshold_ns: u64,
    /// The scenario's `[[measure]]` latencies.
    #[serde(default)]
    pub measures: Vec<MeasureInfo>,
    pub settings: Vec<SettingResult>,
}

/// One setting over all its rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingResult {
    pub name: String,
    pub kernel: String,
    pub features_changed: Vec<String>,
    /// The machine it ran on, and whether ITMT was enabled there.
    pub topology: String,
    pub itmt: bool,
    /// Union of the wakees' affinities (cpulist).
    pub allowed_cpus: String,
    pub top_cpu: Option<u32>,
    pub breakdown: bool,
    /// What the simulator noted about how the runs were modeled (from run 1).
    pub notes: Vec<String>,
    /// Stalls and handoffs summed over runs; the median of all runs' handoffs.
    pub stalls: u64,
    pub handoffs: u64,
    pub median_handoff_ns: Option<u64>,
    pub runs: Vec<RunResult>,
    /// The published `average rps` of the runs this setting answers
    /// (`reported_rps` in the sweep file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reported_rps: Vec<f64>,
}

/// One simulation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// 1-based round.
    pub run: u32,
    pub seed: u64,
    pub simulated_ns: u64,
    /// Handoffs the wakees received, those at or above the threshold, and
    /// the median, 99th percentile and largest handoff latency.
    pub handoffs: u64,
    pub stalls: u64,
    pub median_handoff_ns: Option<u64>,
    pub p99_handoff_ns: Option<u64>,
    pub max_handoff_ns: Option<u64>,
    /// Breakdown settings only; per-stall details are dropped.
    pub breakdown: Option<StallBreakdown>,
    /// Breakdown settings only: wakee comm → CPU → bursts started there.
    pub burst_starts: Option<BurstStarts>,
    /// The wakees' handoff latencies, ascending (for the setting's median).
    #[serde(skip)]
    pub handoff_samples: Vec<u64>,
    /// The scenario's measures, in its order.
    #[serde(default)]
    pub measures: Vec<MeasureRun>,
    /// `[schbench]` scenarios: schbench's `average rps` (completed requests / runtime).
    #[serde(default)]
    pub schbench_rps: Option<f64>,
    /// `[schbench]` scenarios: the model's schedstats of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<crate::why::Why>,
}
