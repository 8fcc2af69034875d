//! The event vocabulary shared by the simulator, the real runner and analysis.
//!
//! Events are the kernel's own sched tracepoints (same fields, same meaning,
//! see `include/trace/events/sched.h`) plus decision events that the kernel
//! does not trace but that explain behaviour (`schedlab_*`). Analysis consumes
//! only this vocabulary, so simulated and real runs go through one pipeline.
//!
//! Events are small `Copy` values that name tasks by pid; comms live once in
//! the [`TaskTable`]. The ftrace text writer renders exactly the layout of
//! `/sys/kernel/tracing/trace`; the Perfetto writer gives the same events to
//! the Perfetto UI as a native protobuf trace; the trace.dat writer gives them
//! to `trace-cmd report` and KernelShark.

pub mod event;
pub mod files;
pub mod ftrace;
pub mod perfetto;
pub mod repair;
pub mod tracedat;
pub mod window;

#[cfg(any(test, feature = "test-builders"))]
pub mod testing;

pub use event::*;
pub use ftrace::{parse_ftrace, write_ftrace, TraceParseError};
pub use perfetto::{write_perfetto, PerfettoWriter};
pub use repair::{RepairStats, SwitchRepair};
pub use tracedat::{write_tracedat, TraceDatWriter};
pub use window::{TimeWindow, TimeWindowError};
