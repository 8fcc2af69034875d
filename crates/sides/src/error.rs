//! Why a side could not run or analyse a scenario.

use schedlab_runner::RunnerError;
use schedlab_sim::SimError;
use schedlab_topology::InputError;
use schedlab_vm::VmError;

/// A side's error. The libraries' errors pass through with their own text
/// (they already name the file, line or call); the rest name the option.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Vm(#[from] VmError),
    #[error(transparent)]
    Report(#[from] schedlab_report::ReportError),
    /// Writing a trace file (`--trace`, `--perfetto`, `--trace-dat`).
    #[error(transparent)]
    File(#[from] schedlab_trace::files::TraceFileError),
    /// Writing a listing (`--view timehist`) as the run goes.
    #[error("cannot write the report: {0}")]
    Output(std::io::Error),
    /// `--rtapp-log DIR` for a scenario that is not an rt-app file.
    #[error("--rtapp-log writes rt-app's log files, but {0} is a scenario file, not an rt-app JSON file")]
    RtappLogOfScenario(String),
    /// `--rtapp-log DIR`: a log file that could not be written.
    #[error("--rtapp-log {0}")]
    RtappLog(schedlab_sim::RtAppLogError),
    #[error(transparent)]
    Plot(#[from] schedlab_plot::PlotError),
    /// `--topology` naming no preset or file that loads.
    #[error("--topology: {0}")]
    Topology(InputError),
    #[error("--kernel {name}: unknown kernel profile (expected one of: {})", schedlab_kernel::Profile::NAMES.join(", "))]
    UnknownProfile { name: String },
    /// `--trace -` where stdout carries a report that cannot move.
    #[error("--trace -: only `schedlab run` writes its trace to standard output; give a file")]
    TraceToStdout,
    #[error("--loops-per-us {0}: expected a positive number of iterations per microsecond")]
    LoopsPerUs(f64),
    /// A real run's capture could take more memory than the budget.
    #[error(
        "the capture may take up to {need}: {cpus} CPUs x {buffer_kb} KB of ring buffer (the kernel's), \
         read back as text and parsed (about {factor:.1} times the ring's bytes), more than {budget}. \
         Lower --buffer-kb or shorten --duration (the default buffer is 2 MB per CPU per second of run), \
         or raise the limit with {raise_with}"
    )]
    CaptureTooLarge { cpus: u64, buffer_kb: u64, factor: f64, need: String, budget: String, raise_with: String },
    /// One run of a guest session whose capture cannot be read.
    #[error("run {run}: {source}")]
    Run { run: usize, source: RunnerError },
}
