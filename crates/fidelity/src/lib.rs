//! The model against a real kernel.
//!
//! * The suite runs each case on two of [`schedlab_sides`]' sides, the
//!   model and this host's kernel, through one analysis ([`sides`] names
//!   the analyses as they were named here before).
//! * The fidelity suite (`schedlab fidelity`, docs/fidelity.md): a set of
//!   micro-workloads ([`cases::CASES`], bundled scenario files under
//!   `scenarios/fidelity/`), each run on this host's kernel by the real
//!   runner and on the model on a given topology, through one analysis;
//!   one [`FidelityRow`] per case and metric with the real and model
//!   figures (medians over rounds), their ratio, the metric's band
//!   ([`bands`]) and the verdict. Printing is the report layer's
//!   ([`schedlab_report::FidelityText`]).
//!
//! The real runs fork: [`run_suite`] must be called from a single-threaded
//! process (as `schedlab` is), and as root (tracefs, SCHED_FIFO).

pub mod bands;
pub mod cases;
pub mod load;
pub mod machine;
pub mod metrics;
pub mod sides;

use std::path::Path;

use schedlab_analysis::DEFAULT_GRACE_NS;
use schedlab_report::{FidelityLoad, FidelityRow, FidelityText, Figure};
use schedlab_runner::RealOptions;
use schedlab_scenario::Scenario;
use schedlab_sides::{sim_workload, AnalysedRun, Host, Model, Side as _, SideError, SimSide};
use schedlab_sim::SimOptions;
use schedlab_topology::{InputError, Topology};

pub use bands::{bands_help, Band};
pub use cases::{Case, CASES};
pub use metrics::{Metric, Side};
pub use schedlab_report::Verdict;

/// The machine the model runs by default: this project's CI/dev host as
/// `schedlab topologies --host` read and measured it (its idle states,
/// distances, costs and noise). On another machine, generate yours with
/// `--host --out FILE` and pass `--topology FILE`. Relative to the checkout.
pub const DEFAULT_TOPOLOGY: &str = "scenarios/topologies/host-pvm-2.toml";

/// The analysis's grace window (the suite reads no figure it changes).
const GRACE_NS: u64 = DEFAULT_GRACE_NS;

/// Why the suite could not run.
#[derive(Debug, thiserror::Error)]
pub enum FidelityError {
    #[error("{0}")]
    Input(#[from] InputError),
    #[error("{case}: real run: {source}")]
    Real { case: &'static str, source: Box<SideError> },
    #[error("{case}: model: {source}")]
    Model { case: &'static str, source: Box<SideError> },
    #[error("{0}")]
    Options(String),
    /// `--cases` naming no case or group.
    #[error("--cases: unknown case `{name}` ({hint}expected one of: {known})")]
    UnknownCase { name: String, hint: String, known: String },
    /// `--topology` naming no preset or file that loads; `hint` says where
    /// the default is.
    #[error("--topology: {error}{hint}")]
    Topology { error: InputError, hint: &'static str },
    /// `--probe`'s own output does not load.
    #[error("--topology: the probed topology does not load (a schedlab bug): {0}")]
    Probed(InputError),
    #[error(transparent)]
    Host(#[from] schedlab_topology::host::HostError),
    #[error("--probe-out {path}: {source}")]
    ProbeOut { path: String, source: std::io::Error },
}

/// The `name` of a topology `--probe` measured.
pub const PROBED_NAME: &str = "this-host";

/// Where the model's machine comes from.
pub enum SuiteMachine<'a> {
    /// A preset name or a topology file ([`DEFAULT_TOPOLOGY`] by default).
    Named(&'a str),
    /// This machine, probed now `rounds` times as `schedlab topologies
    /// --host` does (the file's header names `command`), and written to
    /// `out` when given.
    Probe { rounds: u32, out: Option<&'a Path>, command: &'a str },
}

/// The model's machine and where it came from (the report's `topology`
/// line); `log` hears a probe's progress.
pub fn suite_machine(machine: &SuiteMachine, log: &mut dyn FnMut(&str)) -> Result<(Topology, String), FidelityError> {
    match *machine {
        SuiteMachine::Probe { rounds, out, command } => {
            let text = schedlab_runner::probe::host_text(false, rounds as usize, Some(PROBED_NAME), command, log)?;
            if let Some(path) = out {
                std::fs::write(path, &text)
                    .map_err(|source| FidelityError::ProbeOut { path: path.display().to_string(), source })?;
                log(&format!("wrote {}", path.display()));
            }
            let source = out.map_or_else(
                || format!("probed just now, {rounds} round(s)"),
                |p| format!("probed just now, {rounds} round(s): {}", p.display()),
            );
            // The text is this build's own output: a failure to load it is a bug, said as such.
            let topo = Topology::from_toml_str(PROBED_NAME, &text).map_err(FidelityError::Probed)?;
            Ok((topo, source))
        }
        SuiteMachine::Named(name) => {
            let topo = Topology::resolve(name, Path::new(".")).map_err(|error| {
                // The default is a path in the schedlab checkout.
                let hint = if name == DEFAULT_TOPOLOGY {
                    " (run from the schedlab checkout, pass --topology, or --probe to measure this machine)"
                } else {
                    ""
                };
                FidelityError::Topology { error, hint }
            })?;
            Ok((topo, name.to_string()))
        }
    }
}

/// What to run.
pub struct SuiteOptions {
    /// The model's machine (the cases' own `topology` lines are replaced).
    pub topology: Topology,
    pub cases: Vec<&'static Case>,
    /// Every case's run length (real and model); `None`: each file's.
    pub duration_ns: Option<u64>,
    /// The first round's model seed; `None`: each file's.
    pub seed: Option<u64>,
    /// Real and model runs per case; the figures are medians over them.
    pub rounds: u32,
    /// Busy-loop iterations per µs for the real runs' `run` work; `None`:
    /// the first real run calibrates and the rest reuse its figure.
    pub loops_per_us: Option<f64>,
    /// Simulate the machine without its `[[noise]]`.
    pub no_noise: bool,
}

/// The suite's results.
pub struct Suite {
    pub rows: Vec<FidelityRow>,
    /// `uname -r` of the real side.
    pub kernel: String,
    /// The kernel profiles the models ran, each once.
    pub profiles: Vec<String>,
    /// The real runs' notes, each once, in the order they came.
    pub notes: Vec<String>,
    /// Per case: the rest of the machine's work during its real runs (means over rounds).
    pub loads: Vec<FidelityLoad>,
}

impl Suite {
    /// The suite's report: `opts` ran it on the model's machine, which came
    /// from `topology_source`; `bands` as [`bands_help`] states them.
    pub fn text<'a>(
        &'a self,
        opts: &'a SuiteOptions,
        topology_source: &'a str,
        bands: &'a str,
        wall_s: f64,
    ) -> FidelityText<'a> {
        FidelityText {
            kernel: &self.kernel,
            topology: &opts.topology.name,
            topology_source,
            profiles: &self.profiles,
            rounds: opts.rounds,
            seed: opts.seed,
            bands,
            rows: &self.rows,
            notes: &self.notes,
            loads: &self.loads,
            wall_s,
        }
    }
}

/// The real run's notes that the suite turns into n/a figures: the capture
/// is not a faithful record of the workload.
fn capture_problems(run: &schedlab_runner::RealRun) -> Vec<String> {
    let mut p = Vec::new();
    if run.lost_events > 0 {
        p.push(format!("the ring buffer lost {} events", run.lost_events));
    }
    for t in &run.threads {
        if !t.setup_notes.is_empty() {
            p.push(format!("{}: {}", t.name, t.setup_notes.join("; ")));
        }
        match &t.outcome {
            None => p.push(format!("{} had not returned at the end", t.name)),
            Some(o) => {
                if let schedlab_runner::program::End::Failed(why) = &o.end {
                    p.push(format!("{} failed: {why}", t.name));
                }
            }
        }
    }
    p
}

/// One line for a case's real runs whose captures missed switches: in how
/// many runs, how many per run, and per CPU the total and how many were
/// out of the idle task. `None` when every capture was whole.
fn repair_summary(case: &str, runs: &[schedlab_trace::RepairStats]) -> Option<String> {
    let counts: Vec<u64> = runs.iter().map(|r| r.inserted()).filter(|&n| n > 0).collect();
    let (min, max) = (counts.iter().min()?, counts.iter().max()?);
    let mut per_cpu: std::collections::BTreeMap<u32, (u64, u64)> = std::collections::BTreeMap::new();
    for (cpu, c) in runs.iter().flat_map(|r| r.cpus.iter()) {
        let e = per_cpu.entry(*cpu).or_default();
        e.0 += c.inserted;
        e.1 += c.out_of_idle;
    }
    let cpus: Vec<String> = per_cpu
        .iter()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(cpu, (n, idle))| format!("CPU {cpu} {n} ({idle} out of idle)"))
        .collect();
    let per_run = if min == max { format!("{min}") } else { format!("{min}-{max}") };
    Some(format!(
        "{case}: the capture missed sched_switch events in {} of {} real runs, {per_run} per run, put back where \
         the event headers prove who ran (docs/real-traces.md); in all: {}",
        counts.len(),
        runs.len(),
        cpus.join(", ")
    ))
}

/// A case's scenario on the suite's topology.
pub fn load_case(case: &Case, topology: &Topology) -> Result<Scenario, InputError> {
    Scenario::from_toml_str_on(case.path, case.text, Path::new("scenarios/fidelity"), topology.clone())
}

/// Run every case on both sides `rounds` times; `progress` is told what
/// starts (one line each).
pub fn run_suite(opts: &SuiteOptions, progress: &mut dyn FnMut(&str)) -> Result<Suite, FidelityError> {
    if opts.rounds == 0 {
        return Err(FidelityError::Options("--rounds must be at least 1".into()));
    }
    if opts.duration_ns == Some(0) {
        return Err(FidelityError::Options("--duration must be longer than zero".into()));
    }
    let mut loops_per_us = opts.loops_per_us;
    let mut suite =
        Suite { rows: Vec::new(), kernel: String::new(), profiles: Vec::new(), notes: Vec::new(), loads: Vec::new() };
    for case in &opts.cases {
        let scenario = load_case(case, &opts.topology)?;
        let duration = opts.duration_ns.or(scenario.duration_ns).unwrap_or(1_000_000_000);
        let secs = duration.div_ceil(1_000_000_000);
        let first_seed = opts.seed.unwrap_or(scenario.seed);
        let n = case.metrics.len();
        let mut real: Vec<Vec<Figure>> = vec![Vec::new(); n];
        let mut model: Vec<Vec<Figure>> = vec![Vec::new(); n];
        let mut loads: Vec<load::Load> = Vec::new();
        let mut speeds: Vec<f64> = Vec::new();
        let mut repairs: Vec<schedlab_trace::RepairStats> = Vec::new();
        for round in 0..opts.rounds {
            let of = if opts.rounds > 1 { format!(" round {}/{}", round + 1, opts.rounds) } else { String::new() };
            progress(&format!("fidelity: {}{of}: real, {} ms", case.name, duration / 1_000_000));
            let ropts = RealOptions {
                duration_ns: Some(duration),
                // A 1-CPU host still runs the 2-CPU cases (their CPUs share it; the plan notes it).
                remap: true,
                buffer_kb: Some((case.trace_kb_per_s * (secs + 1)).clamp(8192, 262_144)),
                loops_per_us,
                ..Default::default()
            };
            // The CPU's own speed just before the round: on a shared host it
            // moves between rounds with no steal or other work to show it.
            speeds.push(schedlab_runner::calibrate::calibrate(0).loops_per_us);
            let before = load::now();
            let host = Host { options: ropts, grace_ns: GRACE_NS, budget: None };
            let AnalysedRun { run, report } = host
                .run(&scenario, &mut |_| {})
                .map_err(|source| FidelityError::Real { case: case.name, source: Box::new(source) })?;
            if let Some(l) = before.zip(load::now()).and_then(|(a, b)| load::between(a, b)) {
                loads.push(l);
            }
            if loops_per_us.is_none() && run.calibration.loops_per_us > 0.0 {
                loops_per_us = Some(run.calibration.loops_per_us);
            }
            suite.kernel.clone_from(&run.kernel);
            // The repair's note differs in every run; the case gets one summary below.
            for note in run.notes.iter().filter(|n| !n.starts_with(schedlab_runner::MISSING_SWITCHES_NOTE)) {
                if !suite.notes.contains(note) {
                    suite.notes.push(note.clone());
                }
            }
            repairs.push(run.repairs.clone());
            let problems = capture_problems(&run);
            let tids = run.tids();
            let side = Side {
                scenario: &scenario,
                trace: &run.trace,
                report: &report,
                start_ns: run.start_ns,
                end_ns: run.end_ns,
                pids: &tids,
                resolution_ns: 1000,
                problems: &problems,
            };
            for (i, m) in case.metrics.iter().enumerate() {
                real[i].push(m.figure(&side));
            }
            drop(run);

            let seed = first_seed + u64::from(round);
            progress(&format!("fidelity: {}{of}: model, seed {seed}", case.name));
            // The real side was captured by the runner: the model pays the same capture costs.
            let sopts = SimOptions {
                seed: Some(seed),
                duration_ns: Some(duration),
                no_noise: opts.no_noise,
                traced: true,
                ..Default::default()
            };
            // One seed, its trace kept: the metrics read it.
            let sim_side =
                Model { options: sopts, seeds: 1, grace_ns: GRACE_NS, tracepoints_first: false, keep_first: true };
            let SimSide { result: sim, report, .. } = sim_side
                .run(&scenario, &mut |_| {})
                .map_err(|source| FidelityError::Model { case: case.name, source: Box::new(source) })?
                .remove(0);
            if !suite.profiles.iter().any(|p| p == sim.profile.name) {
                suite.profiles.push(sim.profile.name.to_string());
            }
            let (pids, _) = sim_workload(&scenario, &sim);
            let side = Side {
                scenario: &scenario,
                trace: &sim.trace,
                report: &report,
                start_ns: 0,
                end_ns: sim.end_ns,
                pids: &pids,
                resolution_ns: 1,
                problems: &[],
            };
            for (i, m) in case.metrics.iter().enumerate() {
                model[i].push(m.figure(&side));
            }
        }
        if let Some(note) = repair_summary(case.name, &repairs) {
            suite.notes.push(note);
        }
        if !loads.is_empty() {
            let mean = |f: fn(&load::Load) -> f64| loads.iter().map(f).sum::<f64>() / loads.len() as f64;
            suite.loads.push(FidelityLoad {
                case: case.name.to_string(),
                other_cpus: mean(|l| l.other_cpus),
                steal_pct: mean(|l| l.steal_pct),
                cpu_speed_min: speeds.iter().copied().reduce(f64::min),
                cpu_speed_max: speeds.iter().copied().reduce(f64::max),
            });
        }
        for (i, m) in case.metrics.iter().enumerate() {
            suite.rows.push(row(case.name, *m, std::mem::take(&mut real[i]), std::mem::take(&mut model[i])));
        }
    }
    Ok(suite)
}

/// One row from each side's per-round figures: medians, ratio, verdict.
pub fn row(case: &str, metric: Metric, real_rounds: Vec<Figure>, model_rounds: Vec<Figure>) -> FidelityRow {
    let real = bands::median_of_rounds(&real_rounds);
    let model = bands::median_of_rounds(&model_rounds);
    let band = metric.band();
    let (ratio, mut verdict) = band.judge(&real, &model);
    if let (Verdict::Fail, Ok(m)) = (&verdict, &model) {
        verdict = band.unsteady(&real_rounds, *m).unwrap_or(Verdict::Fail);
    }
    FidelityRow {
        case: case.to_string(),
        metric: metric.label(),
        unit: metric.unit().to_string(),
        real: real.ok(),
        model: model.ok(),
        ratio,
        band: band.describe(),
        verdict,
        real_rounds,
        model_rounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::Pct;

    #[test]
    fn missing_switches_are_summarised_per_case() {
        use schedlab_trace::repair::CpuRepairs;
        use schedlab_trace::RepairStats;
        let run = |n1: u64, idle1: u64, n0: u64| {
            let mut r = RepairStats::default();
            r.cpus.insert(1, CpuRepairs { inserted: n1, out_of_idle: idle1, ..Default::default() });
            r.cpus.insert(0, CpuRepairs { inserted: n0, ..Default::default() });
            r
        };
        let note = repair_summary("schbench", &[run(11_000, 10_990, 3), run(0, 0, 0), run(12_000, 12_000, 0)]).unwrap();
        assert!(
            note.starts_with(
                "schbench: the capture missed sched_switch events in 2 of 3 real runs, 11003-12000 per run"
            ),
            "{note}"
        );
        assert!(note.ends_with("in all: CPU 0 3 (0 out of idle), CPU 1 23000 (22990 out of idle)"), "{note}");
        assert_eq!(repair_summary("nice", &[run(0, 0, 0), run(0, 0, 0)]), None, "whole captures: no note");
    }

    #[test]
    fn a_row_takes_medians_judges_them_and_keeps_the_rounds() {
        let r = row(
            "schbench",
            Metric::SchbenchWakeup(Pct::P50),
            vec![Ok(4.0), Ok(6.0), Ok(5.0)],
            vec![Ok(21.0), Ok(20.0), Ok(22.0)],
        );
        assert_eq!((r.real, r.model), (Some(5.0), Some(21.0)));
        assert_eq!(r.ratio, Some(4.2));
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.metric, "wakeup p50 (us)");
        assert_eq!(r.band, "ratio 0.5-1.5");
        assert_eq!(r.real_rounds.len(), 3);

        let r = row("nice", Metric::Share("nice0"), vec![Ok(75.0)], vec![Ok(74.0)]);
        assert_eq!(r.verdict, Verdict::Pass);
        assert_eq!((r.unit.as_str(), r.band.as_str()), ("%", "±3 points"));

        let r =
            row("asym_min", Metric::StallFraction, vec![Ok(2.0), Err("lost 5 events".into())], vec![Ok(2.0), Ok(2.0)]);
        assert_eq!(r.real, None);
        assert_eq!(r.model, Some(2.0));
        assert_eq!(r.verdict, Verdict::NotApplicable("real: round 2: lost 5 events".into()));
    }

    #[test]
    fn a_rate_whose_real_rounds_spread_past_the_band_is_unsteady_not_failed() {
        // The host's pingpong-1cpu rounds (2026-12-01, five in a row):
        // 94k-163k loops/s. Model 144k: 1.24x the median, but in the band
        // against a real figure inside the rounds' range (137k-152k).
        let real = vec![Ok(116_518.0), Ok(162_820.0), Ok(119_944.0), Ok(106_316.0), Ok(93_899.0)];
        let r = row("pingpong-1cpu", Metric::LoopRate("ping"), real.clone(), vec![Ok(144_446.0)]);
        let Verdict::Unsteady(why) = &r.verdict else { panic!("{:?}", r.verdict) };
        assert!(why.contains("93899-162820") && why.contains("1.73x"), "{why}");
        // The same spread with the model out of the band of the whole
        // range (above 162.8k x 1.05) still fails.
        let r = row("pingpong-1cpu", Metric::LoopRate("ping"), real, vec![Ok(172_000.0)]);
        assert_eq!(r.verdict, Verdict::Fail);
        // Steady rounds (within 5 % of each other): a miss is a failure.
        let steady = vec![Ok(100_000.0), Ok(102_000.0), Ok(101_000.0)];
        let r = row("pingpong-1cpu", Metric::LoopRate("ping"), steady, vec![Ok(110_000.0)]);
        assert_eq!(r.verdict, Verdict::Fail);
    }

    #[test]
    fn the_default_topology_exists_and_every_case_loads_on_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let topo = Topology::load(&root.join(DEFAULT_TOPOLOGY)).unwrap();
        for c in CASES {
            let s = load_case(c, &topo).unwrap_or_else(|e| panic!("{}: {e}", c.path));
            assert_eq!(s.topology.name, topo.name);
        }
    }
}
