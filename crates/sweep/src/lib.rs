//! Sweeps: one scenario under several settings, over interleaved seeded
//! rounds, summarised as the seed reports' tables.
//!
//! A sweep file names a scenario and a list of settings (feature toggles,
//! `sched_itmt_enabled`, per-thread-group affinity, kernel profile). Every
//! setting is simulated once per round; round `r` (0-based) of every setting
//! uses seed `seed + r`, so all settings of a round see the same seed and each
//! round a fresh one. For each run the sweep counts the wakees' handoffs and
//! stalls and their median handoff; for the settings listed in `breakdown` it
//! also classifies every stall ([`schedlab_analysis::stall_breakdown`]) and
//! counts burst starts per CPU. [`render`] prints LKML-pasteable tables shaped
//! like seed 000's "Results" and "Trace" tables; [`SweepResult`] serialises to
//! JSON.
//!
//! # File format (TOML)
//!
//! ```toml
//! scenario = "asym_min.toml"      # required; relative to the sweep file
//! rounds = 5                       # default 1, at most 1000
//! duration = "30s"                 # default: the scenario's
//! seed = 1                         # default: the scenario's; round r uses seed + r
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
//! kernel = "6.12"                  # override the scenario's kernel profile
//! features = ["NO_DELAY_DEQUEUE"]  # added after the scenario's (debugfs syntax)
//! affinity = { worker = "4-7,20-23" }   # per thread group: cpulist, CPU or [CPUs]
//! ```
//!
//! Unknown keys are errors, and every error names the file, line and column.
//!
//! Jobs run in parallel on the current rayon pool; each job analyses its trace
//! and drops it before returning, so at most one trace per worker thread is
//! alive. Results are in (setting, round) order whatever the pool size.

mod file;
mod render;
mod run;

use std::fmt;
use std::path::Path;

use schedlab_scenario::{CpuSet, InputError, Scenario};
use schedlab_topology::Topology;

pub use render::{render, render_breakdown, render_burst_starts, render_summary};
pub use run::{run_sweep, Progress, RunResult, SettingResult, SweepResult};

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
    pub rounds: u32,
    /// Simulated time per run; `None`: the scenario's.
    pub duration_ns: Option<u64>,
    /// Round `r` (0-based) runs with seed `seed + r`.
    pub seed: u64,
    /// Thread groups whose handoffs and stalls are counted.
    pub wakees: Vec<String>,
    pub stall_threshold_ns: u64,
    pub settings: Vec<Setting>,
}

/// One row of the results: the scenario with this setting's overrides.
#[derive(Clone, Debug)]
pub struct Setting {
    pub name: String,
    /// The scenario with `kernel` and `affinity` overrides applied.
    pub scenario: Scenario,
    /// The machine with the `itmt` override applied.
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
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::whole_file(&shown, format!("cannot read sweep file: {e}")))?;
        let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Self::from_toml_str(&shown, &text, base)
    }

    /// Number of simulations the sweep runs.
    pub fn jobs(&self) -> usize {
        self.settings.len() * self.rounds as usize
    }
}

/// A run that could not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepError {
    pub setting: String,
    /// 1-based, as printed.
    pub run: u32,
    pub seed: u64,
    pub message: String,
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "setting `{}`, run {} (seed {}): {}", self.setting, self.run, self.seed, self.message)
    }
}

impl std::error::Error for SweepError {}
