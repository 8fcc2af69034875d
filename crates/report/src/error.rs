//! What can go wrong in the report layer.

/// A report that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The trace text could not be read (the reader's own message).
    #[error("{0}")]
    Trace(String),
    /// The trace has none of the events the analysis reads.
    #[error(
        "{path}: no scheduler events in {lines} lines (expected sched_switch/sched_wakeup lines from tracefs or trace-cmd report)"
    )]
    NoSchedEvents { path: String, lines: usize },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}
