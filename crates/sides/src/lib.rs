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

/// `--trace -`: standard output, which only `schedlab run` writes a trace to.
pub(crate) fn is_stdout(path: &Path) -> bool {
    path == Path::new("-")
}
