//! Sweeps: one scenario under several settings, over interleaved seeded
//! rounds, summarised as the seed reports' tables, compared A/B with
//! significance tests and gates, and runnable in shards.
//!
//! A sweep file names a scenario and a list of settings (feature toggles,
//! `sched_itmt_enabled`, the machine, per-thread-group affinity, nice and
//! custom slice, kernel profile), optionally crossed with `[[axis]]` values.
//! Every setting is simulated once per round; round `r` (0-based) of every
//! setting uses seed `seed + r` (or the `r`-th of `seeds`), so all settings
//! of a round see the same seed and each round a fresh one. For each run the
//! sweep counts the wakees' handoffs and stalls and their median, p99 and
//! largest handoff; for the settings listed in `breakdown` it also
//! classifies every stall ([`schedlab_analysis::stall_breakdown`]) and
//! counts burst starts per CPU. The report layer (`schedlab_report`,
//! re-exported here) makes the rest: [`render`] prints LKML-pasteable tables
//! shaped like seed 000's "Results" and "Trace" tables; [`SweepResult`]
//! serialises to JSON; [`render_csv`] gives one CSV row per run;
//! [`compare`] and [`render_ab`] give the A/B comparison ([`ab`]).
//!
//! # File format (TOML)
//!
//! ```toml
//! scenario = "asym_min.toml"      # required; relative to the sweep file
//! rounds = 5                       # default 1, at most 1000
//! duration = "30s"                 # default: the scenario's
//! seed = 1                         # default: the scenario's; round r uses seed + r
//! # seeds = [1, 7, 42]             # instead of seed and rounds: one round per seed
//! stall_threshold = "500us"        # default: the scenario's
//! wakees = ["worker"]              # thread groups whose handoffs and stalls count;
//!                                  # default: every group that waits on an eventfd
//! top_cpu = 6                      # the "top-ranked CPU" of the breakdown; default per
//!                                  # setting: the highest asym_prio CPU the wakees may use
//! breakdown = ["defaults"]         # settings that get the Trace-style tables
//!
//! [[setting]]
//! name = "defaults"                # required, unique
//! itmt = false                     # override the topology's itmt_enabled
//! energy_aware = false             # override the topology's sched_energy_aware (EAS)
//! kernel = "6.12"                  # override the scenario's kernel profile
//! topology = "qemu-4"              # another machine: a preset, or a file relative
//!                                  # to the sweep file; every thread's affinity must
//!                                  # fit it (override them here)
//! features = ["NO_DELAY_DEQUEUE"]  # added after the scenario's (debugfs syntax)
//! affinity = { worker = "4-7,20-23" }   # per thread group: cpulist, CPU or [CPUs]
//! nice = { worker = 5 }            # per thread group, -20..19
//! slice = { worker = "3ms" }       # per thread group: custom slice, 0.1ms..100ms
//! pi = { M = false }               # per mutex: PTHREAD_PRIO_INHERIT on/off
//! background = "kernel"            # override the scenario's `background`
//! fair_server_runtime = "0"        # override the fair server's runtime per 1 s
//!
//! [[axis]]                         # optional, any number: every setting is run with
//! name = "machine"                 # each value; the names join as "defaults / qemu-4"
//! values = [
//!     { name = "7950X" },          # a value takes the keys of [[setting]]
//!     { name = "qemu-4", topology = "qemu-4", affinity = { worker = "0-1", waker = 3 } },
//! ]
//!
//! [ab]                             # optional: compare two settings ([`ab`])
//! a = "defaults"                   # the baseline
//! b = "NO_DELAY_DEQUEUE"
//! alpha = 0.05                     # significance level of the gates (default 0.05)
//! bootstrap = 10000                # bootstrap resamples (default 10000)
//! seed = 1                         # bootstrap seed (default 1)
//! [ab.gates]                       # <metric>_abs / <metric>_rel, metric one of
//! stall_rate_rel = -0.5            # stall_rate, median_handoff, p99_handoff
//! p99_handoff_abs = "20us"
//! ```
//!
//! A setting and its axis values may not both set `itmt`, `energy_aware`, `kernel` or
//! `topology` (or `background`, `fair_server_runtime`), nor the same group
//! in `affinity`, `nice` or `slice` (or mutex in `pi`); their
//! `features` add up. Unknown keys are errors, and every error names the
//! file, line and column.
//!
//! On the command line (`schedlab diff --a/--b`, `schedlab vm --setting`)
//! a setting's `features`, `itmt`, `energy_aware` and `kernel` are written
//! as one string in the grammar of [`setting`]:
//! `NO_DELAY_DEQUEUE,itmt=0,energy_aware=1,kernel=6.12`.
//!
//! Jobs run in parallel on the current rayon pool; each job analyses its trace
//! and drops it before returning, so at most one trace per worker thread is
//! alive. Results are in (setting, round) order whatever the pool size. The
//! jobs can also be split over processes or machines and merged ([`shard`]).

pub mod bench;
pub mod cluster;
mod diff;
mod file;
mod progress;
mod run;
pub mod setting;
pub mod shard;
pub mod why;
mod wire;

use std::path::Path;

use schedlab_report::AbSpec;
use schedlab_scenario::{CpuSet, InputError, Scenario};
use schedlab_topology::Topology;

pub use diff::{run_diff, simulate_diff, DiffRuns, DiffSideError};
pub use file::{AXIS_JOIN, MAX_SETTINGS};
pub use progress::Bar;
pub use run::{assemble, job_order, run_jobs, run_sweep, skeleton, thread_pool, JobOutput, PoolError, Progress};
pub use setting::{feature_sets, SettingError, SettingSpec};
pub use shard::{
    fingerprint, merge_dir, run_shard, shard_done, Merged, ShardError, ShardFile, ShardSpec, ShardSpecError,
};

/// Most rounds a sweep may ask for.
pub const MAX_ROUNDS: u32 = 1000;

/// A parsed, checked sweep.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The sweep file, as named in errors and reports.
    pub path: String,
    /// The scenario file (as resolved) and its name.
    pub scenario_path: String,
    pub scenario_name: String,
    pub topology_name: String,
    /// Simulated time per run; `None`: the scenario's.
    pub duration_ns: Option<u64>,
    /// Round `r` (0-based) runs with `seeds[r]`; one round per seed, at
    /// least one ([`Sweep::seeds`], [`Sweep::set_rounds`]).
    seeds: Vec<u64>,
    /// The file listed `seeds = [..]`: `--rounds` may only shorten the
    /// list. Otherwise the seeds are consecutive (`seed + r`) and
    /// `--rounds` may also lengthen it.
    seeds_listed: bool,
    /// Thread groups whose handoffs and stalls are counted.
    pub wakees: Vec<String>,
    pub stall_threshold_ns: u64,
    pub settings: Vec<Setting>,
    /// The `[ab]` table.
    pub ab: Option<AbSpec>,
    /// Hash of the sweep file, the scenario file and every setting's machine
    /// (see [`shard::fingerprint`]).
    pub source_hash: u64,
    /// Each job's limit on its kept trace (jobs that stream keep none);
    /// not part of the fingerprint: it changes whether a run can finish,
    /// never its result.
    pub memory_budget: Option<schedlab_sim::MemoryBudget>,
}

/// One row of the results: the scenario with this setting's overrides.
#[derive(Clone, Debug)]
pub struct Setting {
    pub name: String,
    /// The scenario with the `kernel`, `topology`, `affinity`, `nice` and `slice` overrides applied.
    pub scenario: Scenario,
    /// The machine (the scenario's, or the setting's `topology`) with the `itmt` override applied.
    pub topology: Topology,
    /// Extra features (debugfs syntax), applied after the scenario's.
    pub features: Vec<String>,
    /// Kernel profile name and the features that differ from its defaults.
    pub kernel: String,
    pub features_changed: Vec<String>,
    /// Listed in `breakdown`: classify stalls and count burst starts.
    pub breakdown: bool,
    /// The "top-ranked CPU" of the breakdown.
    pub top_cpu: Option<u32>,
    /// Union of the wakees' affinities.
    pub allowed_cpus: CpuSet,
    /// `reported_rps`: the published runs this setting answers.
    pub reported_rps: Vec<f64>,
}

impl Sweep {
    /// Parse and check sweep text. `path` names the file in errors;
    /// `base_dir` is where `scenario` is resolved.
    pub fn from_toml_str(path: &str, text: &str, base_dir: &Path) -> Result<Sweep, InputError> {
        file::parse(path, text, base_dir)
    }

    /// Read, parse and check a sweep file.
    pub fn load(path: &Path) -> Result<Sweep, InputError> {
        let shown = path.display().to_string();
        let text = schedlab_topology::diag::read_input(path, "sweep")?;
        let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Self::from_toml_str(&shown, &text, base)
    }

    /// Number of simulations the sweep runs.
    pub fn jobs(&self) -> usize {
        self.settings.len() * self.seeds.len()
    }

    /// Rounds per setting: one per seed.
    pub fn rounds(&self) -> u32 {
        self.seeds.len() as u32
    }

    /// The seed of every round, in round order: `seed + r`, or the file's
    /// `seeds` list.
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// `--rounds`: with explicit `seeds`, at most as many as listed (the
    /// first `n` are used); otherwise `n` consecutive seeds from the first.
    pub fn set_rounds(&mut self, n: u32) -> Result<(), RoundsError> {
        if !(1..=MAX_ROUNDS).contains(&n) {
            return Err(RoundsError::Range(n));
        }
        if self.seeds_listed {
            if n as usize > self.seeds.len() {
                return Err(RoundsError::TooFewSeeds { rounds: n, path: self.path.clone(), seeds: self.seeds.len() });
            }
            self.seeds.truncate(n as usize);
        } else {
            self.seeds = consecutive_seeds(self.seeds[0], n);
        }
        Ok(())
    }
}

/// A `--rounds` the sweep cannot have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoundsError {
    #[error("--rounds {0}: expected 1..{MAX_ROUNDS}")]
    Range(u32),
    #[error("--rounds {rounds}: {path} lists only {seeds} seeds")]
    TooFewSeeds { rounds: u32, path: String, seeds: usize },
}

/// `n` seeds from `first` up: round `r` runs with `first + r`.
pub(crate) fn consecutive_seeds(first: u64, n: u32) -> Vec<u64> {
    (0..u64::from(n)).map(|r| first + r).collect()
}

/// A run that could not complete.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("setting `{setting}`, run {run} (seed {seed}): {message}")]
pub struct SweepError {
    pub setting: String,
    /// 1-based, as printed.
    pub run: u32,
    pub seed: u64,
    pub message: String,
}
