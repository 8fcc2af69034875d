//! Why a host probe gave no figure. The probes' errors become notes in the
//! measured topology (`schedlab topologies --host`), so each says which
//! step failed and with what.

use crate::RunnerError;

/// A probe that could not measure.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A probe thread could not be pinned to its CPU (`who` names it,
    /// with a trailing space, or is empty).
    #[error("pinning {who}to CPU {cpu}: {source}")]
    Pin { who: &'static str, cpu: usize, source: std::io::Error },
    /// A system call (or a tracefs file) that failed.
    #[error("{call}: {source}")]
    Os { call: String, source: std::io::Error },
    /// A probe thread that panicked.
    #[error("{0} panicked")]
    Panicked(&'static str),
    /// A partner that did not answer, or a probe past its deadline.
    #[error("{0}")]
    Timeout(&'static str),
    /// A probe that finished with nothing to measure.
    #[error("{0}")]
    Empty(&'static str),
    /// Tracing was in use by someone else: the capture probe leaves it be.
    #[error("tracing is in use (a tracer or events enabled): not touched")]
    TracingInUse,
    #[error("tracefs: {0}")]
    Tracefs(RunnerError),
    #[error("restoring tracefs: {0}")]
    Restore(RunnerError),
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error(transparent)]
    Parse(#[from] schedlab_trace::TraceParseError),
    /// A capture with too few wakeup-to-switch pairs for a median.
    #[error("{found} wakeup-to-switch pairs of the timer sleeper recorded on CPU {cpu} (a median needs {need})")]
    TooFewPairs { found: usize, cpu: usize, need: usize },
    /// No CPU's capture had the switches out of idle the tail needs.
    #[error("{}", tried.iter().map(|(cpu, e)| format!("CPU {cpu}: {e}")).collect::<Vec<_>>().join("; "))]
    NoIdleTail { tried: Vec<(usize, ProbeError)> },
    /// A futex call that returned what the probe did not expect.
    #[error("FUTEX_WAIT on a changed word returned {0}, not EAGAIN")]
    Futex(String),
}

impl ProbeError {
    /// Whether the message holds `text`: the probes' errors were their
    /// messages once, and callers still look for a phrase in them.
    pub fn contains(&self, text: &str) -> bool {
        self.to_string().contains(text)
    }

    /// The last OS error of `call`.
    pub(crate) fn os(call: impl Into<String>) -> ProbeError {
        ProbeError::Os { call: call.into(), source: std::io::Error::last_os_error() }
    }
}
