//! Running a sweep: (setting × round) jobs on the rayon pool, each one
//! simulation analysed inside the job, then put in (setting, round) order.
//!
//! The jobs have a fixed order, round-major and interleaved: job
//! `j = round × settings + setting`, so round 1 of every setting comes
//! before round 2 of any. [`run_jobs`] runs any subset of them (a shard);
//! [`assemble`] turns a complete set of [`JobOutput`]s into the
//! [`SweepResult`], whichever process or machine ran each job.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use schedlab_analysis::{
    burst_starts_per_cpu, percentile, stall_breakdown, HandoffCollector, MeasureCollector, MeasureSpec, StallBreakdown,
    StallOptions,
};
use schedlab_sim::{simulate, simulate_observed, SimOptions, TraceObserver};
use schedlab_trace::{Event, TaskTable};
use serde::{Deserialize, Serialize};

use schedlab_report::measures::{measure_infos, measure_run, measure_specs, MeasureRun};
use schedlab_report::{BurstStarts, RunResult, SettingResult, SweepResult};

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

/// What one job measured, before it is put in its place: the unit that
/// shard files carry, serialised as is (the samples delta-encoded).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobOutput {
    /// Index in the job order.
    pub job: usize,
    pub setting: usize,
    /// 0-based.
    pub round: u32,
    pub seed: u64,
    pub simulated_ns: u64,
    /// The wakees' handoff latencies, ascending; in shard files as the
    /// first value and then the gaps between neighbours.
    #[serde(rename = "samples_delta", with = "crate::wire::delta")]
    pub samples: Vec<u64>,
    pub stalls: u64,
    #[serde(default)]
    pub breakdown: Option<StallBreakdown>,
    #[serde(default)]
    pub burst_starts: Option<BurstStarts>,
    /// The simulator's notes.
    pub notes: Vec<String>,
    #[serde(default)]
    pub measures: Vec<MeasureRun>,
    /// `[schbench]` scenarios: schbench's `average rps`.
    #[serde(default)]
    pub schbench_rps: Option<f64>,
    /// `[schbench]` scenarios: the model's schedstats.
    #[serde(default)]
    pub why: Option<schedlab_report::why::Why>,
    /// Trace events the run emitted (for `schedlab bench`; not in shard files).
    #[serde(skip)]
    pub events: u64,
}

impl JobOutput {
    /// The run's row: counts and percentiles of the samples.
    fn into_run(self) -> (RunResult, Vec<String>) {
        let s = self.samples;
        let run = RunResult {
            run: self.round + 1,
            seed: self.seed,
            simulated_ns: self.simulated_ns,
            handoffs: s.len() as u64,
            stalls: self.stalls,
            median_handoff_ns: percentile(&s, 500),
            p99_handoff_ns: percentile(&s, 990),
            max_handoff_ns: s.last().copied(),
            breakdown: self.breakdown,
            burst_starts: self.burst_starts,
            handoff_samples: s,
            measures: self.measures,
            schbench_rps: self.schbench_rps,
            why: self.why,
        };
        (run, self.notes)
    }
}

/// Every job as (setting, 0-based round), in job order: round-major,
/// interleaved, `j = round × settings + setting`.
pub fn job_order(sweep: &Sweep) -> Vec<(usize, u32)> {
    (0..sweep.rounds()).flat_map(|r| (0..sweep.settings.len()).map(move |s| (s, r))).collect()
}

/// Run the jobs whose index `select` accepts on the current rayon pool,
/// calling `progress` as each finishes (its `total` is the number
/// selected). The outputs come back in job order. On failure, the error
/// of the first failed job in (setting, round) order.
pub fn run_jobs(
    sweep: &Sweep,
    select: &(dyn Fn(usize) -> bool + Sync),
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Vec<JobOutput>, SweepError> {
    let jobs: Vec<(usize, (usize, u32))> =
        job_order(sweep).into_iter().enumerate().filter(|(j, _)| select(*j)).collect();
    let done = AtomicUsize::new(0);
    let total = jobs.len();
    let results: Vec<((usize, u32), Result<JobOutput, SweepError>)> = jobs
        .par_iter()
        .map(|&(j, (s, r))| {
            let res = run_job(sweep, &sweep.settings[s], j, s, r);
            if let Ok(out) = &res {
                let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(&Progress {
                    done,
                    total,
                    setting: &sweep.settings[s].name,
                    run: r + 1,
                    stalls: out.stalls,
                    handoffs: out.samples.len() as u64,
                });
            }
            ((s, r), res)
        })
        .collect();
    let first_err = results.iter().filter(|(_, r)| r.is_err()).min_by_key(|(key, _)| *key);
    if let Some((_, Err(e))) = first_err {
        return Err(e.clone());
    }
    Ok(results.into_iter().map(|(_, r)| r.expect("errors returned above")).collect())
}

/// The result with every setting's description and no runs: what
/// [`assemble`] fills in.
pub fn skeleton(sweep: &Sweep) -> SweepResult {
    SweepResult {
        sweep: sweep.path.clone(),
        scenario: sweep.scenario_name.clone(),
        scenario_path: sweep.scenario_path.clone(),
        topology: sweep.topology_name.clone(),
        rounds: sweep.rounds(),
        seed: sweep.seeds()[0],
        seeds: sweep.seeds().to_vec(),
        duration_ns: sweep.duration_ns,
        wakees: sweep.wakees.clone(),
        stall_threshold_ns: sweep.stall_threshold_ns,
        measures: sweep.settings.first().map(|s| measure_infos(&s.scenario)).unwrap_or_default(),
        settings: sweep
            .settings
            .iter()
            .map(|setting| SettingResult {
                name: setting.name.clone(),
                kernel: setting.kernel.clone(),
                features_changed: setting.features_changed.clone(),
                topology: setting.topology.name.clone(),
                itmt: setting.topology.itmt_enabled,
                allowed_cpus: setting.allowed_cpus.to_cpulist(),
                top_cpu: setting.top_cpu,
                breakdown: setting.breakdown,
                notes: Vec::new(),
                stalls: 0,
                handoffs: 0,
                median_handoff_ns: None,
                runs: Vec::new(),
                reported_rps: setting.reported_rps.clone(),
            })
            .collect(),
    }
}

/// Put a complete set of job outputs (any order) into `skeleton`: runs in
/// round order, totals, the median of all of a setting's handoffs, and the
/// notes of its first round.
pub fn assemble(skeleton: &SweepResult, mut jobs: Vec<JobOutput>) -> SweepResult {
    jobs.sort_by_key(|j| (j.setting, j.round));
    let mut r = skeleton.clone();
    for job in jobs {
        let set = &mut r.settings[job.setting];
        let (run, notes) = job.into_run();
        if set.runs.is_empty() {
            set.notes = notes;
        }
        set.runs.push(run);
    }
    for set in &mut r.settings {
        let mut all: Vec<u64> = set.runs.iter().flat_map(|x| x.handoff_samples.iter().copied()).collect();
        all.sort_unstable();
        set.stalls = set.runs.iter().map(|x| x.stalls).sum();
        set.handoffs = set.runs.iter().map(|x| x.handoffs).sum();
        set.median_handoff_ns = percentile(&all, 500);
    }
    r
}

/// Run every (setting, round) job of `sweep` on the current rayon pool
/// (`ThreadPool::install` to choose its size), calling `progress` as each
/// job finishes. The result does not depend on the pool size or job order.
pub fn run_sweep(sweep: &Sweep, progress: &(dyn Fn(&Progress) + Sync)) -> Result<SweepResult, SweepError> {
    let jobs = run_jobs(sweep, &|_| true, progress)?;
    Ok(assemble(&skeleton(sweep), jobs))
}

/// One simulation of `setting` in round `round` (0-based), analysed and
/// reduced to its samples and counts; the trace is dropped before returning.
fn run_job(sweep: &Sweep, setting: &Setting, job: usize, index: usize, round: u32) -> Result<JobOutput, SweepError> {
    if setting.scenario.schbench.is_some() {
        return run_schbench_job(sweep, setting, job, index, round);
    }
    let seed = sweep.seeds()[round as usize];
    let opts = SimOptions {
        seed: Some(seed),
        duration_ns: sweep.duration_ns,
        features: setting.features.clone(),
        topology: Some(setting.topology.clone()),
        check_invariants: None,
        invariant_budget: None,
        no_noise: false,
        memory_budget: sweep.memory_budget.clone(),
        max_steps_per_us: None,
        max_cpu_seconds: None,
        rtapp_log: false,
        traced: false,
    };
    let threshold = sweep.stall_threshold_ns;
    let specs = measure_specs(&setting.scenario);
    let fail = |e: schedlab_sim::SimError| SweepError {
        setting: setting.name.clone(),
        run: round + 1,
        seed,
        message: e.to_string(),
    };
    // Without a breakdown the run streams into the analysis (bounded
    // memory at any duration); the breakdown's scan needs the whole trace.
    // The table reads the wakees' handoff latencies alone.
    let mut handoffs = HandoffCollector::new(threshold);
    let (result, measures, trace) = if setting.breakdown {
        let mut result = simulate(&setting.scenario, &opts).map_err(fail)?;
        // The run's window, as the whole-trace analysis reads it.
        for e in result.trace.events.iter().filter(|e| e.ts <= result.end_ns) {
            handoffs.observe(e);
        }
        let measures = measure_run(&result.trace, &specs, result.end_ns);
        let trace = std::mem::take(&mut result.trace);
        (result, measures, Some(trace))
    } else {
        let mut obs = JobObserver { specs: &specs, handoffs: &mut handoffs, measures: Vec::new() };
        // The table reads the wakees' handoffs, which the workload's markers
        // alone give; a measure also counts the migrations of its waiters
        // (`sched_migrate_task`). Without measures the kernel's tracepoints
        // are not emitted at all: the model decides the same either way,
        // and the run skips the kernel's three fifths of its events (issue 39).
        let kernel_events = !specs.is_empty();
        let result =
            simulate_observed(&setting.scenario, &SimOptions { memory_budget: None, ..opts }, &mut obs, kernel_events)
                .map_err(fail)?;
        let measures = obs.measures.into_iter().map(|m| MeasureRun::from(&m.finish(result.end_ns))).collect();
        (result, measures, None)
    };
    // Simulated threads come out in scenario order.
    let wakees: Vec<(i32, String)> = result
        .threads
        .iter()
        .zip(&setting.scenario.threads)
        .filter(|(_, spec)| sweep.wakees.contains(&spec.group))
        .map(|(t, _)| (t.pid, t.name.clone()))
        .collect();
    let mut samples: Vec<u64> = wakees.iter().flat_map(|(pid, _)| handoffs.take(*pid).sorted_samples()).collect();
    samples.sort_unstable();
    let stalls = samples.len() as u64 - samples.partition_point(|&s| s < threshold) as u64;

    let (breakdown, burst_starts) = match &trace {
        Some(trace) => {
            let pids: Vec<i32> = wakees.iter().map(|w| w.0).collect();
            let mut b = stall_breakdown(
                trace,
                &StallOptions {
                    wakees: pids.clone(),
                    threshold_ns: threshold,
                    top_cpu: setting.top_cpu,
                    allowed_cpus: setting.allowed_cpus.iter().map(|c| c as u32).collect(),
                    end_ts: Some(result.end_ns),
                },
            );
            b.details.clear();
            let starts = burst_starts_per_cpu(trace, &pids);
            let by_comm = wakees.iter().map(|(pid, comm)| (comm.clone(), starts.get(pid).cloned().unwrap_or_default()));
            (Some(b), Some(by_comm.collect()))
        }
        None => (None, None),
    };
    Ok(JobOutput {
        job,
        setting: index,
        round,
        seed,
        simulated_ns: result.end_ns,
        samples,
        stalls,
        breakdown,
        burst_starts,
        notes: result.notes,
        measures,
        schbench_rps: None,
        why: None,
        events: result.events,
    })
}

/// A streamed job's analysis: the wakees' handoffs and the scenario's
/// measures (built once the run's task table is known).
struct JobObserver<'a> {
    specs: &'a [MeasureSpec],
    handoffs: &'a mut HandoffCollector,
    measures: Vec<MeasureCollector>,
}

impl TraceObserver for JobObserver<'_> {
    fn start(&mut self, table: &TaskTable) {
        self.measures = self.specs.iter().map(|s| MeasureCollector::new(table, s)).collect();
    }

    fn event(&mut self, e: &Event) {
        self.handoffs.observe(e);
        for m in &mut self.measures {
            m.observe(e);
        }
    }
}

/// A `[schbench]` scenario: its trace would not fit in memory (~60 M events
/// per simulated second on the SPR model), so the run is streamed into
/// schbench's collector with the kernel's tracepoints off. It reports
/// `average rps`; handoffs, stalls and measures are not collected.
fn run_schbench_job(
    sweep: &Sweep,
    setting: &Setting,
    job: usize,
    index: usize,
    round: u32,
) -> Result<JobOutput, SweepError> {
    let seed = sweep.seeds()[round as usize];
    let opts = SimOptions {
        seed: Some(seed),
        duration_ns: sweep.duration_ns,
        features: setting.features.clone(),
        topology: Some(setting.topology.clone()),
        check_invariants: None,
        invariant_budget: None,
        no_noise: false,
        traced: false,
        memory_budget: None,
        max_steps_per_us: None,
        max_cpu_seconds: None,
        rtapp_log: false,
    };
    let scenario = &setting.scenario;
    let table = schedlab_trace::TaskTable {
        objects: scenario.objects.iter().map(|o| o.name.clone()).collect(),
        ..Default::default()
    };
    let mut collector = schedlab_analysis::SchbenchCollector::new(&table, None);
    let result = schedlab_sim::simulate_streaming(scenario, &opts, &mut |e| collector.observe(e), false)
        .map_err(|e| SweepError { setting: setting.name.clone(), run: round + 1, seed, message: e.to_string() })?;
    let report = collector.finish(result.end_ns);
    Ok(JobOutput {
        job,
        setting: index,
        round,
        seed,
        simulated_ns: result.end_ns,
        samples: Vec::new(),
        stalls: 0,
        breakdown: None,
        burst_starts: None,
        notes: result.notes,
        measures: Vec::new(),
        schbench_rps: Some(report.average_rps),
        why: Some(crate::why::why(&result.kernel_stats, scenario, result.end_ns)),
        events: result.events,
    })
}

/// The threads a sweep's or a hunt's simulations run on: `jobs` of them,
/// by default one per CPU.
pub fn thread_pool(jobs: Option<u32>) -> Result<rayon::ThreadPool, PoolError> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(j) = jobs {
        pool = pool.num_threads(j as usize);
    }
    Ok(pool.build()?)
}

/// Why the simulations' threads could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot start worker threads: {0}")]
pub struct PoolError(#[from] rayon::ThreadPoolBuildError);
