//! Scenario files: the workload model shared by the simulator and the real runner.
//!
//! A scenario names a topology, a kernel profile and features, a duration and
//! seed, and threads. Each thread has a scheduling policy, nice or RT priority,
//! an optional custom slice, an affinity (taskset cpulist), a start CPU and a
//! program of operations (`run`, `sleep`, `wait`/`signal` on eventfds,
//! `post`/`poll` on shared flags, `lock`/`unlock` of mutexes), looping or not.
//!
//! Parsing validates everything it can without the kernel model; the feature
//! names and kernel profile are kept with their positions so the layer that
//! knows the feature table can report errors at the right line.

use schedlab_topology::{CpuSet, InputError, Topology};

/// A value with the 1-based line/column where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub line: usize,
    pub col: usize,
}

/// Scheduling policy (`sched_setattr` policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl Policy {
    pub fn is_rt(&self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
        }
    }
}

/// Index into [`Scenario::objects`].
pub type ObjId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjKind {
    /// Counter semantics: `signal` adds, `wait` blocks until non-zero then takes all.
    Eventfd,
    /// Shared-memory flag: `post` sets it with a timestamp, `poll` busy-waits for it.
    Flag,
    /// A pthread mutex (plain now; PI with `pi = true` once the RT class lands).
    Mutex { pi: bool },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSpec {
    pub name: String,
    pub kind: ObjKind,
}

/// An object named by an operation: fixed, or chosen by the flag the most
/// recent `poll` of this thread matched (the `{*}` template).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjRef {
    Fixed(ObjId),
    /// `by_polled[k]` is used when the last poll matched its k-th flag.
    ByPolled(Vec<ObjId>),
}

/// One operation of a thread's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// CPU work: `ns` of execution at capacity 1024 (rt-app `run`).
    Run { ns: u64 },
    /// Block for `ns` (`clock_nanosleep`, rt-app `sleep`).
    Sleep { ns: u64 },
    /// Block until the eventfd counter is non-zero, then reset it (`read()`).
    Wait { efd: ObjRef },
    /// Add `count` to the eventfd counter, waking its waiter (`write()`).
    Signal { efd: ObjRef, count: u64 },
    /// Set a flag with the current time as its payload.
    Post { flag: ObjRef },
    /// Busy-poll (stay running) until one of `flags` is set and at least
    /// `after_ns` have passed since it was posted; consume it. The matched
    /// index drives later `ObjRef::ByPolled` operands.
    Poll { flags: Vec<ObjId>, after_ns: u64 },
    Lock { mutex: ObjRef },
    Unlock { mutex: ObjRef },
    /// `sched_yield()`.
    Yield,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeat {
    Forever,
    Times(u64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub ops: Vec<Op>,
    pub repeat: Repeat,
}

/// One thread (an expanded instance of a `[[thread]]` table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSpec {
    /// comm, at most 15 bytes (`<name>` or `<name>-<i>` for instances).
    pub name: String,
    /// The `[[thread]]` table it came from and its instance index.
    pub group: String,
    pub instance: u32,
    pub policy: Policy,
    /// Nice value for OTHER/BATCH/IDLE (−20..19).
    pub nice: i32,
    /// RT priority for FIFO/RR (1..99).
    pub rt_priority: u32,
    /// Custom slice (`sched_attr.sched_runtime`), clamped like the kernel to 0.1–100 ms.
    pub slice_ns: Option<u64>,
    pub affinity: CpuSet,
    /// CPU the thread starts on; defaults to the first CPU of its affinity.
    pub start_cpu: Option<usize>,
    /// Delay before the thread is created.
    pub start_delay_ns: u64,
    pub program: Program,
    /// Where the `[[thread]]` table starts.
    pub line: usize,
}

/// A parsed, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: String,
    pub name: String,
    pub description: String,
    /// `None`: run until every thread has finished its program.
    pub duration_ns: Option<u64>,
    pub seed: u64,
    /// The topology reference as written (preset name or file path).
    pub topology_ref: String,
    pub topology: Topology,
    /// Kernel profile name (`"6.12"`, `"mainline"`), checked by the kernel layer.
    pub kernel_profile: Spanned<String>,
    /// Feature settings in debugfs syntax (`NO_DELAY_DEQUEUE`), checked by the kernel layer.
    pub features: Vec<Spanned<String>>,
    /// A handoff at or above this counts as a stall (default 500 µs, as in seed 000).
    pub stall_threshold_ns: u64,
    pub objects: Vec<ObjectSpec>,
    pub threads: Vec<ThreadSpec>,
}

impl Scenario {
    /// An error located at a spanned value of this scenario's file.
    pub fn error_at<T>(&self, at: &Spanned<T>, message: impl Into<String>) -> InputError {
        InputError::new(self.path.clone(), at.line, at.col, message)
    }
}
