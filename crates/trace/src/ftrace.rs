//! ftrace text: the `/sys/kernel/tracing/trace` file format, written and read.
//!
//! [`write_ftrace`] renders a [`Trace`](crate::Trace) byte for byte the way the
//! kernel prints its `trace` file with default options (`nop` tracer, `irq-info`
//! on, `record-tgid` off), so `trace-cmd`, KernelShark, Perfetto and scripts
//! written for real traces accept it. [`parse_ftrace`] reads that format back,
//! as well as real tracefs captures and `trace-cmd report` output.
//!
//! ```
//! use schedlab_trace::{ftrace, Event, EventKind, PrevState, TaskInfo, Trace};
//! let mut trace = Trace { nr_cpus: 8, ..Default::default() };
//! trace.table.tasks.insert(1234, TaskInfo { comm: "worker".into(), tgid: 1234 });
//! trace.events.push(Event {
//!     ts: 812_004_113_999,
//!     cpu: 5,
//!     ctx_pid: 1234,
//!     flags: *b"d..2.",
//!     kind: EventKind::SchedSwitch {
//!         prev_pid: 1234, prev_prio: 120, prev_state: PrevState::Sleeping, next_pid: 0, next_prio: 120,
//!     },
//! });
//! let mut text = Vec::new();
//! ftrace::write_ftrace(&trace, &mut text).unwrap();
//! let text = String::from_utf8(text).unwrap();
//! assert!(text.ends_with("          worker-1234    [005] d..2.   812.004113: sched_switch: prev_comm=worker \
//!     prev_pid=1234 prev_prio=120 prev_state=S ==> next_comm=swapper/5 next_pid=0 next_prio=120\n"));
//! let back = ftrace::parse_ftrace("run.trace", &text).unwrap();
//! assert_eq!(back.events[0].kind, trace.events[0].kind);
//! assert_eq!(back.events[0].ts, 812_004_113_000); // the text has microseconds
//! ```
//!
//! # Line layout (kernel `trace_print_context()`)
//!
//! ```text
//!           worker-1234    [005] d..2.   812.004113: sched_switch: prev_comm=worker ...
//! ^^^^^^^^^^^^^^^^ ^^^^^^^ ^^^^^ ^^^^^ ^^^^^^^^^^^^   ^^^^^^^^^^^^  ^^^^^^^^^^^^^^^^^^
//! comm  (%16s)    -pid(%-7d) cpu flags  %5lu.%06lu    event name    payload
//! ```
//!
//! The prefix comm is `<idle>` for pid 0 and `<...>` for a pid without a known
//! comm; inside payloads the idle task is `swapper/N` (N = the event's CPU).
//! Timestamps are truncated to microseconds like the kernel's ns clocks
//! (pass [`WriteOptions::ns_timestamps`] for `trace-cmd report -t` style
//! nanoseconds, which round-trip exactly).
//!
//! # Kernel tracepoints (6.12 `include/trace/events/sched.h`)
//!
//! ```text
//! sched_waking: comm=%s pid=%d prio=%d target_cpu=%03d      (also sched_wakeup, sched_wakeup_new)
//! sched_switch: prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d
//! sched_migrate_task: comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d
//! sched_stat_runtime: comm=%s pid=%d runtime=%Lu [ns]
//! sched_pi_setprio: comm=%s pid=%d oldprio=%d newprio=%d
//! sched_wake_idle_without_ipi: cpu=%d
//! ```
//!
//! # schedlab decision events (pseudo-tracepoints, same key=value style)
//!
//! ```text
//! schedlab_ttwu: comm=%s pid=%d path=runnable|runnable_delayed|activate|wakelist cpu=%d
//! schedlab_delayed: comm=%s pid=%d what=delayed|dequeued_at_pick|requeued lag=%lld
//! schedlab_resched: cpu=%d ipi=0|1
//! schedlab_wakeup_preempt: comm=%s pid=%d curr_comm=%s curr_pid=%d preempt=0|1 reason=%s
//! ```
//!
//! `comm`/`pid` name the task the decision is about (the wakee for
//! `schedlab_wakeup_preempt`, whose `curr_*` is the task running on the CPU);
//! `reason` is [`PreemptReason::as_str`](crate::PreemptReason::as_str).
//!
//! # Workload operations (what a `trace_marker` write looks like)
//!
//! ```text
//! tracing_mark_write: schedlab signal obj=<name>        (also wait_done, post, poll_done, lock, unlock)
//! tracing_mark_write: schedlab loop_end n=<n>
//! ```
//!
//! The marker is written by the task doing the operation, so the prefix pid is
//! the operation's pid; when an event says otherwise a trailing `pid=<pid>` is
//! added. Object names must not contain whitespace. The reader maps names to
//! object indices in order of first appearance, after the names given in
//! [`ParseOptions::objects`].
//!
//! # Reading
//!
//! The prefix is parsed from the right of the comm (comms may contain `-`,
//! spaces and `[`), with an optional `(tgid)` column and optional 4- or 5-char
//! flags (`trace-cmd report` omits them). Payload keys are anchored in order, so
//! unknown keys (older/newer kernels) are skipped; comms containing ` pid=`-like
//! text are the one ambiguity, as with the kernel's own format. `trace-cmd`'s
//! compact `sched_switch`/`sched_wakeup` plugin output (`bash:8691 [120] S ==>
//! swapper/1:0 [120]`) is read too. `#` lines, blank lines, `cpus=N`,
//! `version = N` and `CPU N is empty` are skipped; `CPU:N [LOST M EVENTS]`
//! lines are counted; lines with a valid prefix but an event this crate does
//! not know are counted and skipped. Anything else is an error naming the
//! line and column, as is a CPU number or count beyond [`MAX_CPUS`].

mod gaps;
mod parse;
mod payload;
mod rtapp_marker;
mod write;

#[cfg(test)]
mod tests;

use std::fmt;

pub use gaps::{drop_markers_across_gaps, gaps, gaps_between, Gap, GapDrops, GapPairing};
pub use parse::{
    parse_ftrace, parse_ftrace_with, FtraceReader, LostEvents, ParseOptions, ParseStats, ParsedTrace, TraceFormat,
};
pub use payload::{event_name, user_marker_text, user_op_name};
pub(crate) use payload::{payload_comm, write_payload};
pub use write::{format_line, header, write_ftrace, write_ftrace_with, FtraceWriter, WriteOptions};

/// The most CPUs the reader accepts: a `[CPU]` column must be below this and
/// a `#P:N` / `cpus=N` header at most this. It is the largest `NR_CPUS` an
/// x86 kernel builds with (`CONFIG_MAXSMP`), so real captures fit, while a
/// damaged number (`[4000000000]`) is refused instead of making analysis
/// allocate per-CPU tables for billions of CPUs. (The simulator's own limit
/// is the topology crate's smaller `MAX_CPUS`; this reader also takes traces
/// of real machines.)
pub const MAX_CPUS: u32 = 8192;

/// The comment line that tells the reader each line's `comm-pid` is the
/// task's comm as of that line (text rewritten from `perf script`, whose
/// comm column is perf's name of the thread at each sample), not a name
/// looked up when the buffer was read (tracefs's `saved_cmdlines`, stale
/// for a task that exec'd). The reader then takes the comms over time from
/// those columns rather than from the events' fields.
pub const PREFIX_COMMS_ARE_CURRENT: &str = "# schedlab: each line's comm is the task's comm at that moment (perf)";

/// A syntax error in trace text: `file:line:col: message`.
///
/// `line` and `col` are 1-based (`col` counts characters); 0 means the whole
/// file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceParseError {
    pub path: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for TraceParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.path, self.line, self.col, self.message)
        }
    }
}

impl std::error::Error for TraceParseError {}
