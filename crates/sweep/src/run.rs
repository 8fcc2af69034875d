//! Running a sweep: (setting × round) jobs on the rayon pool, each one
//! simulation analysed inside the job, merged in (setting, round) order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use schedlab_analysis::{
    analyze, burst_starts_per_cpu, percentile, stall_breakdown, AnalysisOptions, StallBreakdown, StallOptions,
};
use schedlab_sim::{simulate, SimOptions};
use serde::Serialize;

use crate::{Setting, Sweep, SweepError};

/// One finished job, reported as it completes (from a pool thread).
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    /// Jobs finished so far, this one included, and in all.
    pub done: usize,
    pub total: usize,
    pub setting: &'a str,
    /// 1-based.
    pub run: u32,
    pub stalls: u64,
    pub handoffs: u64,
}

/// Everything a sweep measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepResult {
    pub sweep: String,
    pub scenario: String,
    pub scenario_path: String,
    pub topology: String,
    pub rounds: u32,
    /// Seed of the first round; round r (0-based) used `seed + r`.
    pub seed: u64,
    /// The duration override; `None`: the scenario's.
    pub duration_ns: Option<u64>,
    pub wakees: Vec<String>,
    pub stall_threshold_ns: u64,
    pub settings: Vec<SettingResult>,
}

/// One setting over all its rounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SettingResult {
    pub name: String,
    pub kernel: String,
    pub features_changed: Vec<String>,
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
}

/// One simulation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    /// 1-based round.
    pub run: u32,
    pub seed: u64,
    pub simulated_ns: u64,
    /// Handoffs the wakees received, those at or above the threshold, and the median.
    pub handoffs: u64,
    pub stalls: u64,
    pub median_handoff_ns: Option<u64>,
    /// Breakdown settings only; per-stall details are dropped.
    pub breakdown: Option<StallBreakdown>,
    /// Breakdown settings only: wakee comm → CPU → bursts started there.
    pub burst_starts: Option<BTreeMap<String, BTreeMap<u32, u64>>>,
    /// The wakees' handoff latencies, ascending (for the setting's median).
    #[serde(skip)]
    pub handoff_samples: Vec<u64>,
}

/// Run every (setting, round) job of `sweep` on the current rayon pool
/// (`ThreadPool::install` to choose its size), calling `progress` as each
/// job finishes. The result does not depend on the pool size or job order.
pub fn run_sweep(sweep: &Sweep, progress: &(dyn Fn(&Progress) + Sync)) -> Result<SweepResult, SweepError> {
    // Interleaved: round 1 of every setting, then round 2, ...
    let jobs: Vec<(usize, u32)> =
        (0..sweep.rounds).flat_map(|r| (0..sweep.settings.len()).map(move |s| (s, r))).collect();
    let done = AtomicUsize::new(0);
    let total = jobs.len();
    type Job = Result<(RunResult, Vec<String>), SweepError>;
    let results: Vec<((usize, u32), Job)> = jobs
        .par_iter()
        .map(|&(s, r)| {
            let res = run_job(sweep, &sweep.settings[s], r);
            if let Ok((run, _)) = &res {
                let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(&Progress {
                    done,
                    total,
                    setting: &sweep.settings[s].name,
                    run: run.run,
                    stalls: run.stalls,
                    handoffs: run.handoffs,
                });
            }
            ((s, r), res)
        })
        .collect();
    let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); sweep.settings.len()];
    let mut sorted = results;
    sorted.sort_by_key(|&(key, _)| key);
    let mut notes: Vec<Vec<String>> = vec![Vec::new(); sweep.settings.len()];
    for ((s, _), res) in sorted {
        let (run, n) = res?;
        if runs[s].is_empty() {
            notes[s] = n;
        }
        runs[s].push(run);
    }
    let settings = sweep
        .settings
        .iter()
        .zip(runs)
        .zip(notes)
        .map(|((setting, runs), notes)| {
            let mut all: Vec<u64> = runs.iter().flat_map(|r| r.handoff_samples.iter().copied()).collect();
            all.sort_unstable();
            SettingResult {
                name: setting.name.clone(),
                kernel: setting.kernel.clone(),
                features_changed: setting.features_changed.clone(),
                itmt: setting.topology.itmt_enabled,
                allowed_cpus: setting.allowed_cpus.to_cpulist(),
                top_cpu: setting.top_cpu,
                breakdown: setting.breakdown,
                notes,
                stalls: runs.iter().map(|r| r.stalls).sum(),
                handoffs: runs.iter().map(|r| r.handoffs).sum(),
                median_handoff_ns: percentile(&all, 500),
                runs,
            }
        })
        .collect();
    Ok(SweepResult {
        sweep: sweep.path.clone(),
        scenario: sweep.scenario_name.clone(),
        scenario_path: sweep.scenario_path.clone(),
        topology: sweep.topology_name.clone(),
        rounds: sweep.rounds,
        seed: sweep.seed,
        duration_ns: sweep.duration_ns,
        wakees: sweep.wakees.clone(),
        stall_threshold_ns: sweep.stall_threshold_ns,
        settings,
    })
}

/// One simulation of `setting` in round `round` (0-based), analysed and
/// reduced to its counts; the trace is dropped before returning. Also
/// returns the simulator's notes.
fn run_job(sweep: &Sweep, setting: &Setting, round: u32) -> Result<(RunResult, Vec<String>), SweepError> {
    let seed = sweep.seed + u64::from(round);
    let opts = SimOptions {
        seed: Some(seed),
        duration_ns: sweep.duration_ns,
        features: setting.features.clone(),
        topology: Some(setting.topology.clone()),
        check_invariants: None,
    };
    let result = simulate(&setting.scenario, &opts).map_err(|e| SweepError {
        setting: setting.name.clone(),
        run: round + 1,
        seed,
        message: e.to_string(),
    })?;
    // Simulated threads come out in scenario order.
    let wakees: Vec<(i32, String)> = result
        .threads
        .iter()
        .zip(&setting.scenario.threads)
        .filter(|(_, spec)| sweep.wakees.contains(&spec.group))
        .map(|(t, _)| (t.pid, t.name.clone()))
        .collect();
    let threshold = sweep.stall_threshold_ns;
    let metrics =
        analyze(&result.trace, &AnalysisOptions { stall_threshold_ns: threshold, end_ts: Some(result.end_ns) });
    let mut samples: Vec<u64> = wakees
        .iter()
        .filter_map(|(pid, _)| metrics.task(*pid))
        .flat_map(|t| t.handoff_samples.iter().copied())
        .collect();
    samples.sort_unstable();
    let stalls = samples.len() as u64 - samples.partition_point(|&s| s < threshold) as u64;

    let (breakdown, burst_starts) = if setting.breakdown {
        let pids: Vec<i32> = wakees.iter().map(|w| w.0).collect();
        let mut b = stall_breakdown(
            &result.trace,
            &StallOptions {
                wakees: pids.clone(),
                threshold_ns: threshold,
                top_cpu: setting.top_cpu,
                allowed_cpus: setting.allowed_cpus.iter().map(|c| c as u32).collect(),
                end_ts: Some(result.end_ns),
            },
        );
        b.details.clear();
        let starts = burst_starts_per_cpu(&result.trace, &pids);
        let by_comm = wakees.iter().map(|(pid, comm)| (comm.clone(), starts.get(pid).cloned().unwrap_or_default()));
        (Some(b), Some(by_comm.collect()))
    } else {
        (None, None)
    };
    let run = RunResult {
        run: round + 1,
        seed,
        simulated_ns: result.end_ns,
        handoffs: samples.len() as u64,
        stalls,
        median_handoff_ns: percentile(&samples, 500),
        breakdown,
        burst_starts,
        handoff_samples: samples,
    };
    Ok((run, result.notes))
}
