//! The command line's own errors. Every command returns [`Result`], whose
//! boxed error takes a library's error as it is (typed or a message) and
//! prints its text unchanged after `schedlab: error: `.

use schedlab_kernel::Profile;
use schedlab_topology::Topology;

pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("--kernel {name}: unknown kernel profile (expected one of: {})", Profile::NAMES.join(", "))]
    UnknownProfile { name: String },
    #[error("unknown preset `{name}` (expected one of: {})", Topology::preset_names().join(", "))]
    UnknownPreset { name: String },
    /// Writing `--trace`, `--sim-trace`, `--perfetto` or `--csv`.
    #[error("{flag} {path}: {why}")]
    Write { flag: &'static str, path: String, why: String },
    #[error("cannot write the report: {0}")]
    Stdout(std::io::Error),
    #[error("--duration must be longer than zero")]
    ZeroDuration,
    #[error("--csv - and --json both print to stdout: choose one")]
    CsvAndJson,
    #[error("--setting alternates feature sets inside a VM guest: it needs --vm")]
    SettingNeedsVm,
    #[error("--loops-per-us {0}: expected a positive number of iterations per microsecond")]
    LoopsPerUs(f64),
    /// `fidelity --check` with rows outside their bands (or without a verdict).
    #[error("fidelity check failed: {n} of {of} rows did not pass: {rows}")]
    FidelityCheck { n: usize, of: usize, rows: String },
    #[error("{0}")]
    Slurm(#[from] schedlab_slurm::SlurmError),
    /// Options that do not go together (beyond what clap checks).
    #[error("{0}")]
    Usage(String),
}

impl CliError {
    /// The exit status: 1 when a check the user asked for failed (an A/B
    /// gate, also a Slurm merge job's, `fidelity --check`), 2 for every
    /// error (as for a usage error).
    pub fn exit_status(e: &(dyn std::error::Error + 'static)) -> u8 {
        let gate = e.is::<schedlab_report::GateFailed>()
            || matches!(e.downcast_ref(), Some(schedlab_sweep::cluster::MergeJobFailed::Gate(_)));
        match e.downcast_ref::<CliError>() {
            Some(CliError::FidelityCheck { .. }) => 1,
            _ if gate => 1,
            _ => 2,
        }
    }
}
