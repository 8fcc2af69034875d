//! `schedlab diff`'s two runs: both settings simulated at once, streamed
//! into one [`DiffCollector`] (the command and `bench` share this), and
//! the comparison of one scenario under two settings ([`run_diff`]).

use schedlab_analysis::DiffOptions;
use schedlab_report::{DiffCollector, DiffReport, DiffRun};
use schedlab_scenario::{Scenario, Spanned};
use schedlab_sim::{kernel_settings, sim_workload, simulate_pair, PairObserver, SimError, SimOptions, SimResult};
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

use crate::SettingSpec;

/// The pair's messages into the collector, reading the run behind first.
struct Feed<'a>(&'a mut DiffCollector);

impl PairObserver for Feed<'_> {
    fn start(&mut self, run: usize, table: &TaskTable) {
        self.0.start(run, table);
    }
    fn task_new(&mut self, run: usize, pid: Pid, info: &TaskInfo) {
        self.0.task_new(run, pid, info);
    }
    fn event(&mut self, run: usize, e: &Event) {
        self.0.event(run, e);
    }
    fn next_run(&self) -> usize {
        self.0.next_run()
    }
}

/// Simulate `a` and `b` (each a scenario and its options) at once into
/// `collector`; the two results, in that order.
pub fn simulate_diff(
    a: (&Scenario, &SimOptions),
    b: (&Scenario, &SimOptions),
    collector: &mut DiffCollector,
) -> [Result<SimResult, SimError>; 2] {
    simulate_pair([a, b], &mut Feed(collector), true)
}

/// A `diff` side whose setting the model rejects, or whose run failed:
/// the flag, the setting as typed, and why.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {text}: {why}")]
pub struct DiffSideError {
    pub flag: &'static str,
    pub text: String,
    pub why: String,
}

/// What both runs of a diff share besides the scenario.
#[derive(Clone, Debug, Default)]
pub struct DiffRuns {
    /// `None`: the scenario's seed.
    pub seed: Option<u64>,
    pub no_noise: bool,
    /// `None`: the scenario's duration.
    pub duration_ns: Option<u64>,
}

/// A setting applied: the scenario and options to simulate, and how it resolved.
struct Resolved {
    flag: &'static str,
    /// The setting as typed.
    text: String,
    scenario: Scenario,
    opts: SimOptions,
    kernel: String,
    itmt: bool,
    energy_aware: bool,
    features_changed: Vec<String>,
}

fn resolve(flag: &'static str, base: &Scenario, s: &SettingSpec, runs: &DiffRuns) -> Result<Resolved, DiffSideError> {
    let mut scenario = base.clone();
    if let Some(k) = &s.kernel {
        scenario.kernel_profile = Spanned { value: k.clone(), line: 0, col: 0 };
    }
    let mut topology = scenario.topology.clone();
    if let Some(on) = s.itmt {
        topology.itmt_enabled = on;
    }
    if let Some(on) = s.energy_aware {
        topology.sched_energy_aware = on;
    }
    let (profile, features) = kernel_settings(&scenario, &s.features).map_err(|e| {
        let e = e.to_string();
        // The simulator says "--features ITEM: why"; the why names the item.
        let why = e.strip_prefix("--features ").and_then(|rest| rest.split_once(": ")).map_or(e.as_str(), |(_, w)| w);
        DiffSideError { flag, text: s.text.clone(), why: why.to_string() }
    })?;
    Ok(Resolved {
        flag,
        text: s.text.clone(),
        kernel: profile.name.to_string(),
        itmt: topology.itmt_enabled,
        energy_aware: topology.sched_energy_aware,
        features_changed: features.diff_from(&profile.defaults),
        opts: SimOptions {
            seed: runs.seed,
            no_noise: runs.no_noise,
            traced: false,
            duration_ns: runs.duration_ns,
            features: s.features.clone(),
            topology: Some(topology),
            check_invariants: None,
            invariant_budget: None,
            // Both runs stream into the comparison: no trace is kept.
            memory_budget: None,
            max_steps_per_us: None,
            max_cpu_seconds: None,
            rtapp_log: false,
        },
        scenario,
    })
}

fn side_error(r: &Resolved, e: SimError) -> DiffSideError {
    DiffSideError { flag: r.flag, text: r.text.clone(), why: e.to_string() }
}

fn side<'a>(r: &'a Resolved, res: &SimResult) -> DiffRun<'a> {
    DiffRun {
        setting: &r.text,
        kernel: r.kernel.clone(),
        itmt: r.itmt,
        energy_aware: r.energy_aware,
        features_changed: r.features_changed.clone(),
        end_ns: res.end_ns,
        notes: res.notes.clone(),
    }
}

/// `base` under settings `a` (`--a`) and `b` (`--b`), both runs at once,
/// compared as they stream (neither trace is kept): the first step where
/// they part ways and how far they drift.
pub fn run_diff(
    base: &Scenario,
    a: &SettingSpec,
    b: &SettingSpec,
    runs: &DiffRuns,
    opts: &DiffOptions,
) -> Result<DiffReport, DiffSideError> {
    let ra = resolve("--a", base, a, runs)?;
    let rb = resolve("--b", base, b, runs)?;
    let mut collector = DiffCollector::new(base, opts);
    let [res_a, res_b] = simulate_diff((&ra.scenario, &ra.opts), (&rb.scenario, &rb.opts), &mut collector);
    let res_a = res_a.map_err(|e| side_error(&ra, e))?;
    let res_b = res_b.map_err(|e| side_error(&rb, e))?;
    // The scenario's own threads and those their forks created, in either run.
    let (pids_a, _) = sim_workload(base, &res_a);
    let (pids_b, _) = sim_workload(base, &res_b);
    let workload = move |pid: i32| pids_a.contains(&pid) || pids_b.contains(&pid);
    Ok(collector.finish(base, res_a.seed, &workload, side(&ra, &res_a), side(&rb, &res_b)))
}
