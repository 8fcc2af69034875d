//! `schedlab hunt`: search for scheduler behaviour the kernel should not
//! have, VOPR-style. Random scenarios from a grammar ([`grammar`]) run in
//! the model with its invariants checked (what each kernel entry touched
//! after every entry, the whole model every (tasks + CPUs)-th); each run's
//! trace is checked for the properties in [`check`]; the first case of
//! each class found is shrunk ([`shrink`]) to a minimal scenario that
//! still shows it, and printed as a scenario file with the decisions
//! behind it.
//!
//! Deterministic: case `i` of hunt seed `s` is drawn from its own stream
//! (`s` and `i` through SplitMix64), whatever the number of threads, the
//! shard or the order the cases ran in; results are taken in case order.
//! With `against`, every case also runs under a second feature set, and
//! only classes that one set shows and the other does not are findings:
//! "NO_DELAY_DEQUEUE removes it".

pub mod check;
pub mod fairness;
pub mod grammar;
pub mod render;
pub mod shrink;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use rayon::prelude::*;
use schedlab_scenario::Scenario;
use schedlab_sim::rng::{splitmix64, Rng};
use schedlab_sim::{simulate, SimError, SimOptions};
use schedlab_topology::Topology;
use schedlab_trace::{Pid, Trace};
use serde::Serialize;

pub use check::{Class, Family, Finding, Thresholds, CLASSES_HELP};
pub use grammar::{Case, GenContext};
pub use schedlab_sweep::shard::ShardSpec;

/// What to hunt for and where.
#[derive(Clone, Debug)]
pub struct HuntOptions {
    /// The machines, as a scenario names them and loaded; case `i` runs on
    /// `topologies[i % len]`.
    pub topologies: Vec<(String, Topology)>,
    /// Where a topology file path is resolved (the current directory).
    pub base_dir: PathBuf,
    pub kernel: String,
    pub features: Vec<String>,
    /// The second feature set of a differential hunt.
    pub against: Option<Vec<String>>,
    pub seed: u64,
    /// Cases to draw (the hunt stops earlier once `stop_after` classes are found).
    pub cases: u64,
    pub duration_ns: u64,
    /// The classes looked for. Invariant failures and model errors are
    /// reported whatever this says: a run that broke the model shows nothing else.
    pub classes: BTreeSet<Class>,
    pub thresholds: Thresholds,
    /// Stop after this many distinct classes are found (0: run every case).
    pub stop_after: usize,
    pub shard: Option<ShardSpec>,
    /// Most simulations one shrink may spend.
    pub shrink_budget: usize,
}

/// Which side of a differential hunt showed a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// A one-sided hunt.
    Only,
    /// Under the main feature set, not under `against`.
    MainOnly,
    /// Under `against`, not under the main set.
    AgainstOnly,
}

/// One reported finding: the first case that showed its class, shrunk.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub class: Class,
    pub side: Side,
    pub case_index: u64,
    /// Threads and operations before and after shrinking.
    pub original_size: (usize, usize),
    pub shrunk_size: (usize, usize),
    pub shrink_runs: usize,
    /// The instance in the shrunk case's run.
    pub finding: Finding,
    /// Thread names of the finding's tasks.
    pub thread: String,
    pub behind: Option<String>,
    pub other: Option<String>,
    /// The decisions around it, one line each.
    pub narrative: Vec<String>,
    /// The shrunk scenario file.
    pub scenario: String,
}

/// A hunt's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct HuntReport {
    pub seed: u64,
    pub cases_run: u64,
    /// Cases the model refused (a generated file it could not run) with
    /// the first reason: should be 0, a generator bug otherwise.
    pub refused: u64,
    pub first_refusal: Option<String>,
    /// Cases in which each class appeared (on the main side; differential
    /// hunts also count the classes both sides showed in `both`).
    pub class_counts: BTreeMap<Class, u64>,
    pub both: BTreeMap<Class, u64>,
    pub reports: Vec<Report>,
}

#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    #[error("{0}")]
    Setup(String),
    #[error("--kernel {name}: unknown kernel profile (expected one of: {})", schedlab_kernel::Profile::NAMES.join(", "))]
    UnknownProfile { name: String },
    #[error("--topology: {0}")]
    Topology(schedlab_topology::InputError),
    #[error("--find {name}: unknown family or class (expected some of: {expected})")]
    UnknownTarget { name: String, expected: String },
    #[error("--duration must be longer than zero")]
    ZeroDuration,
    #[error("--shard {0}")]
    Shard(schedlab_sweep::shard::ShardSpecError),
    /// Writing a finding's scenario (`--out DIR`).
    #[error("--out {path}: {source}")]
    Out { path: String, source: std::io::Error },
}

/// A hunt as the command line names it: machines, classes and the shard by
/// name, feature lists as typed.
pub struct HuntSpec<'a> {
    pub topologies: &'a [String],
    pub kernel: &'a str,
    pub features: &'a [String],
    /// `--against`'s comma-separated list (empty: the profile's defaults).
    pub against: Option<&'a str>,
    /// Families or classes.
    pub find: &'a [String],
    /// `I/N`.
    pub shard: Option<&'a str>,
    pub seed: u64,
    pub cases: u64,
    pub duration_ns: u64,
    pub thresholds: Thresholds,
    pub stop_after: usize,
    pub shrink_budget: usize,
}

/// A feature list without blanks.
fn feature_list<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    items.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

impl HuntOptions {
    /// The options `spec` names, each name checked (topologies resolved
    /// from the current directory).
    pub fn from_spec(spec: &HuntSpec) -> Result<HuntOptions, HuntError> {
        if schedlab_kernel::Profile::by_name(spec.kernel).is_none() {
            return Err(HuntError::UnknownProfile { name: spec.kernel.to_string() });
        }
        let mut topologies = Vec::new();
        for t in spec.topologies {
            let topo = Topology::resolve(t, std::path::Path::new(".")).map_err(HuntError::Topology)?;
            topologies.push((t.clone(), topo));
        }
        let mut classes = BTreeSet::new();
        for f in spec.find {
            classes.extend(Class::parse_target(f.trim()).ok_or_else(|| {
                let mut names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
                names.extend(Class::ALL.iter().map(|c| c.name()));
                HuntError::UnknownTarget { name: f.clone(), expected: names.join(", ") }
            })?);
        }
        if spec.duration_ns == 0 {
            return Err(HuntError::ZeroDuration);
        }
        let shard = spec.shard.map(|s| s.parse::<ShardSpec>().map_err(HuntError::Shard)).transpose()?;
        Ok(HuntOptions {
            topologies,
            base_dir: PathBuf::from("."),
            kernel: spec.kernel.to_string(),
            features: feature_list(spec.features.iter().map(String::as_str)),
            against: spec.against.map(|a| feature_list(a.split(','))),
            seed: spec.seed,
            cases: spec.cases,
            duration_ns: spec.duration_ns,
            classes,
            thresholds: spec.thresholds,
            stop_after: spec.stop_after,
            shard,
            shrink_budget: spec.shrink_budget,
        })
    }
}

impl HuntReport {
    /// Write each finding's shrunk scenario as `dir/<class>-case<N>.toml`,
    /// telling `wrote` each path.
    pub fn write_findings(
        &self,
        dir: &std::path::Path,
        wrote: &mut dyn FnMut(&std::path::Path),
    ) -> Result<(), HuntError> {
        let out = |path: &std::path::Path, source| HuntError::Out { path: path.display().to_string(), source };
        std::fs::create_dir_all(dir).map_err(|e| out(dir, e))?;
        for r in &self.reports {
            let path = dir.join(format!("{}-case{}.toml", r.class.name(), r.case_index));
            std::fs::write(&path, &r.scenario).map_err(|e| out(&path, e))?;
            wrote(&path);
        }
        Ok(())
    }
}

/// Salt of the fair-case stream (any constant apart from the main one's).
const FAIR_STREAM: u64 = 0x5F3C_9A1E_D2B4_7086;

/// The case `index` of hunt `seed`.
pub fn case(opts: &HuntOptions, index: u64) -> (Case, &Topology) {
    let (name, topo) = &opts.topologies[(index % opts.topologies.len() as u64) as usize];
    let mut state = opts.seed ^ index.wrapping_mul(0xA076_1D64_78BD_642F);
    let ctx = GenContext {
        topology: name.clone(),
        nr_cpus: topo.nr_cpus(),
        kernel: opts.kernel.clone(),
        features: opts.features.clone(),
        duration_ns: opts.duration_ns,
    };
    // A hunt for fairness draws one case in eight as a peer group, from a
    // stream of its own: a hunt for the other classes sees the very cases
    // it saw before fairness existed.
    if opts.classes.contains(&Class::FairnessSpread) {
        let mut fair_state = state ^ FAIR_STREAM;
        let mut fair_rng = Rng::new(splitmix64(&mut fair_state));
        if fair_rng.unit_f64() < 1.0 / 8.0 {
            return (grammar::generate_fair(&mut fair_rng, &ctx), topo);
        }
    }
    let mut rng = Rng::new(splitmix64(&mut state));
    (grammar::generate(&mut rng, &ctx), topo)
}

/// What one simulation of a case gave.
pub enum RunOutcome {
    Ran { findings: Vec<Finding>, trace: Box<Trace>, names: BTreeMap<Pid, String> },
    Refused(String),
}

impl RunOutcome {
    pub fn classes(&self) -> BTreeSet<Class> {
        match self {
            RunOutcome::Ran { findings, .. } => findings.iter().map(|f| f.class).collect(),
            RunOutcome::Refused(_) => BTreeSet::new(),
        }
    }
}

/// Simulate `case` on `topo` (with `features` instead of its own when
/// given) and check it.
pub fn run_case(case: &Case, topo: &Topology, features: Option<&[String]>, opts: &HuntOptions) -> RunOutcome {
    run_case_checked(case, topo, features, opts, true)
}

/// [`run_case`], with the model's invariant check after every step or
/// without it (the shrinker's runs for a trace property: about 8 times
/// faster on the 7950X; the shrunk case's final run checks them).
pub(crate) fn run_case_checked(
    case: &Case,
    topo: &Topology,
    features: Option<&[String]>,
    opts: &HuntOptions,
    invariants: bool,
) -> RunOutcome {
    let mut case = case.clone();
    if let Some(f) = features {
        case.features = f.to_vec();
    }
    run_scenario(&case.to_toml("hunt", &[]), topo, &[], opts, invariants)
}

/// Simulate a scenario file's text on `topo`, with `extra` features after
/// its own, and check it as the hunt does (a shrunk scenario, re-run).
pub fn run_text(text: &str, topo: &Topology, extra: &[String], opts: &HuntOptions) -> RunOutcome {
    run_scenario(text, topo, extra, opts, true)
}

fn run_scenario(text: &str, topo: &Topology, extra: &[String], opts: &HuntOptions, invariants: bool) -> RunOutcome {
    let scenario = match Scenario::from_toml_str_on("hunt.toml", text, &opts.base_dir, topo.clone()) {
        Ok(s) => s,
        Err(e) => return RunOutcome::Refused(e.to_string()),
    };
    let sim = SimOptions {
        check_invariants: Some(invariants),
        invariant_budget: Some(schedlab_sim::INVARIANT_BUDGET),
        features: extra.to_vec(),
        ..Default::default()
    };
    let model_finding = |class, at_ns, message: String| Finding {
        class,
        pid: 0,
        start_ns: at_ns,
        end_ns: at_ns,
        cpu: 0,
        behind: None,
        other_cpu: None,
        other_pid: None,
        message,
    };
    let empty = || (Box::default(), BTreeMap::new());
    match simulate(&scenario, &sim) {
        Ok(res) => {
            let mut allowed = BTreeMap::new();
            let mut names = BTreeMap::new();
            for t in &res.threads {
                if let Some(spec) = scenario.thread(&t.name) {
                    allowed.insert(t.pid, spec.affinity.to_u32_vec());
                }
                names.insert(t.pid, t.name.clone());
            }
            let events = res.trace.in_time_order();
            let mut findings = check::check_trace(&events, topo.nr_cpus(), &allowed, res.end_ns, &opts.thresholds);
            if opts.classes.contains(&Class::FairnessSpread) {
                let pid_of = names.iter().map(|(p, n)| (n.clone(), *p)).collect();
                let groups = fairness::peer_groups(&scenario, &pid_of);
                findings.extend(fairness::check_fairness(
                    &events,
                    &groups,
                    res.end_ns,
                    opts.thresholds.fairness_pct,
                    &names,
                ));
            }
            drop(events);
            let findings = findings.into_iter().filter(|f| opts.classes.contains(&f.class)).collect();
            RunOutcome::Ran { findings, trace: Box::new(res.trace), names }
        }
        Err(SimError::Invariant { at_ns, source }) => {
            let (trace, names) = empty();
            RunOutcome::Ran { findings: vec![model_finding(Class::Invariant, at_ns, source.to_string())], trace, names }
        }
        Err(SimError::Model(m)) => {
            let (trace, names) = empty();
            RunOutcome::Ran { findings: vec![model_finding(Class::ModelError, 0, m)], trace, names }
        }
        Err(e) => RunOutcome::Refused(e.to_string()),
    }
}

/// The classes a case shows, by side.
fn differential(
    opts: &HuntOptions,
    case: &Case,
    topo: &Topology,
) -> (Result<BTreeSet<Class>, String>, BTreeSet<Class>) {
    let main = match run_case(case, topo, None, opts) {
        RunOutcome::Refused(e) => return (Err(e), BTreeSet::new()),
        ran => ran.classes(),
    };
    let other = match &opts.against {
        Some(f) => run_case(case, topo, Some(f), opts).classes(),
        None => BTreeSet::new(),
    };
    (Ok(main), other)
}

/// The classes that count as findings, with their side.
fn sides(opts: &HuntOptions, main: &BTreeSet<Class>, other: &BTreeSet<Class>) -> Vec<(Class, Side)> {
    if opts.against.is_none() {
        return main.iter().map(|&c| (c, Side::Only)).collect();
    }
    let mut v: Vec<(Class, Side)> = main.difference(other).map(|&c| (c, Side::MainOnly)).collect();
    v.extend(other.difference(main).map(|&c| (c, Side::AgainstOnly)));
    v
}

/// A case's index, the classes it showed (or why it did not run) and, in
/// a differential hunt, those under the second feature set.
type CaseClasses = (u64, Result<BTreeSet<Class>, String>, BTreeSet<Class>);

/// Cases per parallel batch: the hunt checks whether to stop between batches.
const BATCH: usize = 32;

/// Run the hunt. `progress(done, total, found)` is called after each batch.
pub fn hunt(opts: &HuntOptions, progress: &(dyn Fn(u64, u64, usize) + Sync)) -> Result<HuntReport, HuntError> {
    if opts.topologies.is_empty() {
        return Err(HuntError::Setup("no topology to hunt on".into()));
    }
    // A profile or feature the model does not know would fail every case:
    // say so once, as the kernel layer checks a scenario's.
    let profile = schedlab_kernel::Profile::by_name(&opts.kernel).ok_or_else(|| {
        HuntError::Setup(format!(
            "--kernel {}: unknown kernel profile (expected one of: {})",
            opts.kernel,
            schedlab_kernel::Profile::NAMES.join(", ")
        ))
    })?;
    for (flag, set) in
        std::iter::once(("--features", &opts.features)).chain(opts.against.iter().map(|a| ("--against", a)))
    {
        let mut features = profile.defaults;
        for item in set {
            profile.check_setting(item).map_err(|e| HuntError::Setup(format!("{flag} {item}: {e}")))?;
            features.apply(item).map_err(|e| HuntError::Setup(format!("{flag} {item}: {e}")))?;
        }
    }
    let indices: Vec<u64> =
        (0..opts.cases).filter(|i| opts.shard.is_none_or(|s| i % s.count as u64 == s.index as u64)).collect();
    let total = indices.len() as u64;
    let mut report = HuntReport {
        seed: opts.seed,
        cases_run: 0,
        refused: 0,
        first_refusal: None,
        class_counts: BTreeMap::new(),
        both: BTreeMap::new(),
        reports: Vec::new(),
    };
    let mut first: BTreeMap<(Class, Side), u64> = BTreeMap::new();
    for batch in indices.chunks(BATCH) {
        let results: Vec<CaseClasses> = batch
            .par_iter()
            .map(|&i| {
                let (c, topo) = case(opts, i);
                let (main, other) = differential(opts, &c, topo);
                (i, main, other)
            })
            .collect();
        for (i, main, other) in results {
            report.cases_run += 1;
            let main = match main {
                Ok(m) => m,
                Err(e) => {
                    report.refused += 1;
                    report.first_refusal.get_or_insert(format!("case {i}: {e}"));
                    continue;
                }
            };
            for &c in &main {
                *report.class_counts.entry(c).or_default() += 1;
            }
            if opts.against.is_some() {
                for &c in main.intersection(&other) {
                    *report.both.entry(c).or_default() += 1;
                }
            }
            for key in sides(opts, &main, &other) {
                first.entry(key).or_insert(i);
            }
        }
        progress(report.cases_run, total, first.len());
        if opts.stop_after > 0 && first.len() >= opts.stop_after {
            break;
        }
    }
    let found: Vec<((Class, Side), u64)> = first.into_iter().collect();
    report.reports = found.par_iter().map(|&((class, side), index)| shrink::report(opts, index, class, side)).collect();
    report.reports.sort_by_key(|r| (r.case_index, r.class));
    Ok(report)
}
