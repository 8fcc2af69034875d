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
    /// A helper that reads a binary trace (`via`: `trace-cmd dump
    /// --flyrecord`, the header check; `trace-cmd report -R -t` or `perf
    /// script`, the events) did not finish.
    #[error("{path}: a {kind} that `{via}` could not read: {source}{}", spin_hint(source))]
    Helper { path: String, kind: &'static str, via: &'static str, source: schedlab_helper::HelperError },
}

/// What a helper's timeout means and how to raise the limit.
fn spin_hint(e: &schedlab_helper::HelperError) -> &'static str {
    if e.timed_out() {
        " (a damaged file makes it spin: check the file; if it is sound but large, raise the limit with \
         --helper-timeout DURATION)"
    } else {
        ""
    }
}
