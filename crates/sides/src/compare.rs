//! A scenario on the model and on a real kernel with the same settings,
//! side by side: `schedlab compare`. The real side runs first (the host's
//! run forks, so the process must still be single-threaded), then the model
//! as many times as the real side ran; both go through one analysis.

use std::path::Path;

use schedlab_report::{CompareSettingsText, CompareText, RealSide, Report};
use schedlab_scenario::Scenario;
use schedlab_sim::{SimOptions, SimResult};
use schedlab_vm::VmResult;

use crate::headers::{guest_runs, real_header, run_lines, vm_header};
use crate::model::group_rows;
use crate::{AnalysedRun, Guest, GuestSession, Host, Model, Side, SideError, SimSide};

/// Both sides' grace window: compare shows only the strict unclaimed-idle
/// figure, which no grace window changes.
pub const GRACE_NS: u64 = schedlab_analysis::DEFAULT_GRACE_NS;

/// The model side of a comparison: `seeds` runs of `options`, traced as the
/// real side is (the runner's capture costs are modelled too); with
/// `keep_first`, the first run's trace is kept (to write it).
pub fn model_side(options: SimOptions, seeds: u64, keep_first: bool) -> Model {
    let options = SimOptions { traced: true, ..options };
    Model { options, seeds, grace_ns: GRACE_NS, tracepoints_first: false, keep_first }
}

/// The real side of a comparison.
pub enum Real {
    Host(Host),
    Guest(Guest),
}

/// Both sides' runs, ready to print.
pub struct Comparison {
    /// The guest's session record (`None`: the host ran it).
    vm: Option<VmResult>,
    /// The real side's runs: the host's one, or the guest's.
    runs: Vec<AnalysedRun>,
    /// The model's runs, one per real run, over consecutive seeds.
    sims: Vec<SimResult>,
    reports: Vec<Report>,
    /// The first model run attributed from its tracepoints alone.
    tracepoints: Report,
    first_seed: u64,
}

/// Run `scenario` on `real`, then on `model` once per real run (its
/// `seeds` are replaced); the model's first run is also analysed from its
/// tracepoints alone, like with like against the real capture.
pub fn compare(
    scenario: &Scenario,
    real: &Real,
    model: &Model,
    log: &mut dyn FnMut(&str),
) -> Result<Comparison, SideError> {
    let (vm, runs) = match real {
        Real::Host(h) => (None, vec![h.run(scenario, log)?]),
        Real::Guest(g) => {
            let GuestSession { vm, runs } = g.run(scenario, log)?;
            (Some(vm), runs)
        }
    };
    let model = Model { seeds: runs.len() as u64, tracepoints_first: true, ..model.clone() };
    let mut sims = model.run(scenario, log)?;
    let tracepoints = sims[0].tracepoints.take().expect("the first run was asked for its tracepoints' report");
    let (sims, reports) = sims.into_iter().map(|s: SimSide| (s.result, s.report)).unzip();
    Ok(Comparison { vm, runs, sims, reports, tracepoints, first_seed: model.first_seed(scenario) })
}

impl Comparison {
    /// The model's first run: its whole trace when the model kept it.
    pub fn first_sim(&self) -> &SimResult {
        &self.sims[0]
    }

    /// `schedlab compare`'s text: the figures side by side, then each
    /// run's per-thread table and stall causes.
    pub fn text(&self, scenario: &Scenario, trace_file: Option<&Path>, sim_trace_file: Option<&Path>) -> String {
        let sim = &self.sims[0];
        let real = match &self.vm {
            Some(vm) => RealSide::Guest(vm_header(vm)),
            None => RealSide::Host(real_header(scenario, &self.runs[0].run, &self.runs[0].report)),
        };
        CompareText {
            scenario,
            machine: &sim.topology,
            profile: sim.profile.name,
            seed: self.first_seed,
            notes: &sim.notes,
            groups: &group_rows(sim),
            real,
            sims: &self.reports,
            sim_tracepoints: &self.tracepoints,
            runs: &run_lines(&self.runs),
            trace_file,
            sim_trace_file,
        }
        .render()
    }
}

/// `compare --vm --setting A --setting B`: one boot alternating the sets;
/// the model runs each set over the same seeds (`model.seeds`, the guest's
/// rounds).
pub struct SettingsComparison {
    session: GuestSession,
    /// Per set, the model's reports.
    sims: Vec<Vec<Report>>,
    profile: String,
    first_seed: u64,
    rounds: u64,
}

/// Run `scenario` in `guest` alternating `sets` (already in its options),
/// then on `model` under each set.
pub fn compare_settings(
    scenario: &Scenario,
    guest: &Guest,
    model: &Model,
    sets: &[Vec<String>],
    log: &mut dyn FnMut(&str),
) -> Result<SettingsComparison, SideError> {
    let session = guest.run(scenario, log)?;
    let mut sims = Vec::new();
    let mut profile = String::new();
    for set in sets {
        let runs = model.with_features(set).run(scenario, log)?;
        profile = runs[0].result.profile.name.to_string();
        sims.push(runs.into_iter().map(|s| s.report).collect());
    }
    Ok(SettingsComparison { session, sims, profile, first_seed: model.first_seed(scenario), rounds: model.seeds })
}

impl SettingsComparison {
    /// A model row and a guest row per set, then each set's first run side by side.
    pub fn text(&self, scenario: &Scenario, sets: &[Vec<String>], trace_file: Option<&Path>) -> String {
        CompareSettingsText {
            scenario,
            profile: &self.profile,
            first_seed: self.first_seed,
            rounds: self.rounds,
            header: vm_header(&self.session.vm),
            sets,
            runs: &guest_runs(scenario, &self.session.vm, &self.session.runs),
            sims: &self.sims,
            trace_file,
        }
        .render()
    }
}
