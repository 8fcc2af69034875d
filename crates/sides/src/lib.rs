//! The sides a scenario runs on, behind one API.
//!
//! DESIGN.md's real run and simulated run are "two runs of one pipeline":
//! a scenario goes to a side, the side runs it and hands back its runs,
//! each analysed by the same [`schedlab_report::Report`] code, so that a
//! difference between two sides is one between the model and the kernel
//! (or the hardware), not between two measuring tools. Every [`Side`]
//! takes a loaded scenario and gives its analysed runs:
//!
//! * [`Model`]: the simulator, over consecutive seeds ([`SimSide`] per run);
//!   [`reported`] is `schedlab run`'s one run, streamed into its report and
//!   the caller's trace files and views.
//! * [`Host`]: this machine's kernel through the real runner ([`AnalysedRun`]).
//! * [`Guest`]: a kernel booted under QEMU, one boot and several runs
//!   ([`GuestSession`]).
//! * [`recorded`]: a trace recorded elsewhere (tracefs, trace-cmd, perf,
//!   Perfetto), read and analysed the same way (`schedlab analyze`).
//!
//! Around them: the rows and headers the report prints for a real run
//! ([`cgroups`], [`headers`]), and the pipelines that put sides next to
//! each other ([`compare`]). `schedlab real`, `vm`, `compare` and
//! `fidelity` go through here; the command line only parses and prints.
//! docs/sides.md shows how to add a fourth side.

pub mod cgroups;
pub mod compare;
mod error;
pub mod guest;
pub mod headers;
pub mod host;
pub mod model;
pub mod recorded;
pub mod reported;

use std::path::Path;

use schedlab_report::Report;
use schedlab_runner::RealRun;
use schedlab_scenario::Scenario;

pub use error::SideError;
pub use guest::{Guest, GuestSession};
pub use host::{analyze_real, Host};
pub use model::{analyze_kept, analyze_sim, sim_workload, simulate_analyzed, Model, SimSide};

/// A place a scenario runs: the model, this host's kernel, a guest's.
pub trait Side {
    /// What one call gives back: its runs, each with its analysis.
    type Runs;

    /// Run `scenario` on this side and analyse every run; `log` hears the
    /// side's progress lines (a guest's boot), if it has any.
    fn run(&self, scenario: &Scenario, log: &mut dyn FnMut(&str)) -> Result<Self::Runs, SideError>;
}

/// A run on a real kernel (the host's or a guest's) and its analysis.
pub struct AnalysedRun {
    pub run: RealRun,
    pub report: Report,
}

/// A scenario file (or a bundled scenario's name, or `-`), with the stall
/// threshold replaced when `threshold_ns` says so.
pub fn load_scenario(path: &Path, threshold_ns: Option<u64>) -> Result<Scenario, SideError> {
    let mut s = Scenario::load(path)?;
    if let Some(t) = threshold_ns {
        s.stall_threshold_ns = t;
    }
    Ok(s)
}

/// A scenario file on a machine and kernel of the caller's choosing
/// (`schedlab run --topology --kernel`): `topology`, a preset name or a
/// topology file, replaces the file's `topology`, and `kernel` its kernel
/// profile; the stall threshold as in [`load_scenario`].
pub fn load_scenario_on(
    path: &Path,
    topology: Option<&str>,
    kernel: Option<&str>,
    threshold_ns: Option<u64>,
) -> Result<Scenario, SideError> {
    let mut scenario = match topology {
        None => Scenario::load(path)?,
        Some(reference) => {
            let topo = schedlab_topology::Topology::resolve(reference, Path::new(".")).map_err(SideError::Topology)?;
            let text = schedlab_topology::diag::read_input(path, "scenario")?;
            let base = path.parent().unwrap_or(Path::new("."));
            Scenario::from_toml_str_on(&path.display().to_string(), &text, base, topo)?
        }
    };
    if let Some(k) = kernel {
        if schedlab_kernel::Profile::by_name(k).is_none() {
            return Err(SideError::UnknownProfile { name: k.to_string() });
        }
        scenario.kernel_profile = schedlab_scenario::Spanned { value: k.to_string(), line: 0, col: 0 };
    }
    if let Some(t) = threshold_ns {
        scenario.stall_threshold_ns = t;
    }
    Ok(scenario)
}
