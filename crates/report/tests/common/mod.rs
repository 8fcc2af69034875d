//! Sweep results built by hand for the report layer's tests: one run and
//! one setting row with the fields every test leaves at a fixed value.

#![allow(dead_code)] // each test binary uses its own subset

use schedlab_report::{RunResult, SettingResult, SweepResult};

/// Run `n` (seed `n`) of 30 s with these handoff figures.
pub fn run(n: u32, stalls: u64, handoffs: u64, median: u64, p99: u64, max: u64) -> RunResult {
    RunResult {
        run: n,
        seed: u64::from(n),
        simulated_ns: 30_000_000_000,
        handoffs,
        stalls,
        median_handoff_ns: Some(median),
        p99_handoff_ns: Some(p99),
        max_handoff_ns: Some(max),
        breakdown: None,
        burst_starts: None,
        handoff_samples: vec![],
        measures: vec![],
        schbench_rps: None,
        why: None,
    }
}

/// A setting of seed 000's machine (the 7950X, CPUs 4-7) whose totals are
/// its runs' sums, with this median handoff.
pub fn setting(name: &str, runs: Vec<RunResult>, median: u64) -> SettingResult {
    SettingResult {
        name: name.into(),
        kernel: "mainline".into(),
        features_changed: vec![],
        topology: "ryzen-7950x".into(),
        itmt: true,
        allowed_cpus: "4-7".into(),
        top_cpu: Some(6),
        breakdown: false,
        notes: vec![],
        stalls: runs.iter().map(|r| r.stalls).sum(),
        handoffs: runs.iter().map(|r| r.handoffs).sum(),
        median_handoff_ns: Some(median),
        runs,
        reported_rps: vec![],
    }
}

/// A sweep of asym_min over these settings, one seed per run.
pub fn result(settings: Vec<SettingResult>) -> SweepResult {
    SweepResult {
        sweep: "s.toml".into(),
        scenario: "asym_min".into(),
        scenario_path: "asym_min.toml".into(),
        topology: "ryzen-7950x".into(),
        rounds: settings[0].runs.len() as u32,
        seed: 1,
        seeds: (1..=settings[0].runs.len() as u64).collect(),
        duration_ns: None,
        wakees: vec!["worker".into()],
        stall_threshold_ns: 500_000,
        measures: vec![],
        settings,
    }
}
