//! The deterministic simulator: a discrete-event engine that runs a scenario's
//! threads on a modeled machine under the kernel model.
//!
//! Same scenario, options and seed ⇒ bit-identical trace. The only randomness
//! is the run's seeded [`rng::Rng`] (burst and IPI jitter from the topology).
//!
//! Three parts: `engine`, the event loop and its event types; `hw`, the
//! hardware (per-CPU timing, idle exit, IPIs, the tick, switch costs, noise);
//! `workload`, the threads' objects and the interpreter of their ops.

pub mod engine;
mod groups;
mod hrtimer;
mod hw;
pub mod pipeline;
pub use pipeline::{simulate_pair, simulate_pipelined, PairObserver};
pub use workload::rtapp_log::{
    render_log as render_rtapp_log, write_logs as write_rtapp_logs, RtAppLogError, RtAppRow,
};
pub mod queue;
pub mod rng;
pub mod workload;

use engine::{Engine, Ev};
use schedlab_kernel::{Features, Kernel, KernelConfig, Outbox, Policy, Profile, TaskParams};
use schedlab_scenario::{Background, Op, Policy as SPolicy, Program, Repeat, Scenario, ThreadSpec};
use schedlab_topology::CpuSet;
use schedlab_topology::{InputError, PreemptModel, Topology};
use schedlab_trace::{TaskInfo, TaskTable, Trace};
use workload::Thread;

/// Run-time choices that override the scenario file.
/// Whether a run checks the model's invariants when its options do not
/// say: in debug builds, unless `SCHEDLAB_CHECK_INVARIANTS=0`;
/// `SCHEDLAB_CHECK_INVARIANTS=1` turns it on in a release build. The docs
/// test sets 0: it compares the examples' output, which the checks do not
/// change, and they would make its simulations minutes long.
pub fn invariants_by_default() -> bool {
    match std::env::var("SCHEDLAB_CHECK_INVARIANTS").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => cfg!(debug_assertions),
    }
}

#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    pub seed: Option<u64>,
    pub duration_ns: Option<u64>,
    /// Extra feature settings (debugfs syntax) applied after the scenario's.
    pub features: Vec<String>,
    /// Replace the scenario's topology.
    pub topology: Option<Topology>,
    /// Check the model's invariants as it runs (see `invariant_budget`; default: debug
    /// builds, or as `SCHEDLAB_CHECK_INVARIANTS` says: [`invariants_by_default`]).
    pub check_invariants: Option<bool>,
    /// With `check_invariants`: what each kernel entry touched (its
    /// runqueues and tasks) is checked after every entry; the full recount
    /// of every task and runqueue runs after every entry up to this model
    /// size (tasks + CPUs, forks included) and past it after every
    /// size/N-th (and at the end), so it costs about N tasks or CPUs per
    /// entry whatever the size. `None`: the full recount after every entry
    /// (tests: it also proves the scoped check never disagrees with it);
    /// the CLI and the hunt set [`INVARIANT_BUDGET`], the fuzzer its own.
    pub invariant_budget: Option<u64>,
    /// Leave out the topology's `[[noise]]` (interrupts, steal): a quiet machine.
    pub no_noise: bool,
    /// Model a run captured the way `schedlab real` captures one: each
    /// workload marker costs its thread `trace_marker_ns` and each captured
    /// tracepoint its CPU `tracepoint_ns` (the topology's `[costs]`). For
    /// comparing with a real run (`compare`, `fidelity`).
    pub traced: bool,
    /// Stop with [`SimError::MemoryBudget`] before the kept trace outgrows
    /// this; `None`: no limit (tests, streamed runs keep nothing).
    pub memory_budget: Option<MemoryBudget>,
    /// The livelock limit: engine steps per simulated microsecond, over any
    /// millisecond of simulated time; `None`: [`default_max_steps_per_us`].
    pub max_steps_per_us: Option<u64>,
    /// The most simulated CPU time a run may cover (CPUs × simulated
    /// seconds); `None`: [`DEFAULT_MAX_CPU_SECONDS`].
    pub max_cpu_seconds: Option<u64>,
    /// Keep rt-app's per-thread log rows ([`SimResult::rtapp_log`]) for the
    /// threads of an rt-app file (64 bytes a row, one row per phase pass).
    pub rtapp_log: bool,
}

/// The [`SimOptions::invariant_budget`] of `--check-invariants` and the
/// hunt: the full recount every (tasks + CPUs)-th entry, which costs about
/// one entry's own work per entry (a recount visits each task and runqueue
/// once); the scoped check of what each entry touched runs at every entry.
pub const INVARIANT_BUDGET: u64 = 1;

/// The default bound on CPUs × simulated seconds of one run: the seed 004
/// report's own 60 s schbench run on the 224-CPU Sapphire Rapids (13 440
/// CPU-seconds) fits, which took 53 min on this project's 2-vCPU host
/// (docs/status.md); a mistyped `duration = "1000000s"` does not.
pub const DEFAULT_MAX_CPU_SECONDS: u64 = 16_384;

/// The default livelock limit for a machine of `nr_cpus` CPUs: 500 engine
/// steps per simulated microsecond plus 20 per CPU. Measured (2026-12-01,
/// bisecting `--max-steps-per-us` on 20 ms runs): the busiest bundled
/// scenario, schbench-spr (224 CPUs), peaks at 27 steps per microsecond
/// over a millisecond, far below its 4980; a thread looping on
/// `run = "1ns"` takes about 1000 on its own.
pub fn default_max_steps_per_us(nr_cpus: usize) -> u64 {
    500 + 20 * nr_cpus as u64
}

/// What a kept trace event costs in memory by the end of a `run`: the
/// event itself and what the report's analysis builds from it. Measured
/// (2026-12-01, release build): the peak RSS of `schedlab run
/// scenarios/schbench-spr.toml` grew 62 bytes per event from 50 ms (3.1 M
/// events, 205 MB) to 200 ms (12.5 M, 785 MB); asym_min 20 s, 0.6 M
/// events, peaked at 45 MB (about 58 bytes per event over the binary's
/// own ~10 MB). Rounded up.
pub const TRACE_EVENT_BYTES: u64 = 64;

/// A limit on the memory a run's kept trace may take, and how it was set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    pub bytes: u64,
    /// For the error: "--max-memory 2.0 GiB", "the default, 80 % of the
    /// 3.1 GiB available at start".
    pub origin: String,
    /// How to raise it: "--max-memory SIZE".
    pub raise_with: String,
}

/// Share of `MemAvailable` the default budget takes: the rest is the
/// machine's own, so the run stops before it swaps.
const DEFAULT_BUDGET_PCT: u64 = 80;
/// The default when `/proc/meminfo` cannot be read.
const FALLBACK_BUDGET: u64 = 8 << 30;

impl MemoryBudget {
    /// The budget of one of `jobs` runs at once: `max_memory` bytes
    /// (`--max-memory`) shared among them, by default 80 % of the memory
    /// available now.
    pub fn for_jobs(max_memory: Option<u64>, jobs: usize) -> MemoryBudget {
        let jobs = jobs.max(1) as u64;
        let share = if jobs > 1 { format!(", shared by {jobs} jobs") } else { String::new() };
        let (total, origin) = match max_memory {
            Some(b) => (b, format!("--max-memory {}", gib(b))),
            None => match mem_available() {
                Some(a) => {
                    let b = a / 100 * DEFAULT_BUDGET_PCT;
                    (b, format!("the default: {DEFAULT_BUDGET_PCT} % of the {} available at start", gib(a)))
                }
                None => (FALLBACK_BUDGET, "the default (/proc/meminfo unreadable)".to_string()),
            },
        };
        MemoryBudget {
            bytes: total / jobs,
            origin: format!("{origin}{share}"),
            raise_with: "--max-memory SIZE, e.g. --max-memory 32GiB".into(),
        }
    }

    /// A size as `--max-memory` takes it, read by `bytesize` (`512MiB`,
    /// `8GiB`, `2G`, `1000000`): at least 1 MiB, less than any run needs.
    pub fn parse_size(s: &str) -> Result<u64, MemorySizeError> {
        let b: bytesize::ByteSize =
            s.trim().parse().map_err(|why| MemorySizeError::NotASize { text: s.to_string(), why })?;
        if b.as_u64() < 1 << 20 {
            return Err(MemorySizeError::TooSmall(s.to_string()));
        }
        Ok(b.as_u64())
    }
}

/// Why a text is not a memory budget's size.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemorySizeError {
    /// bytesize's own reason is text.
    #[error("`{text}` is not a size ({why}); expected e.g. 512MiB, 8GiB, 2G")]
    NotASize { text: String, why: String },
    #[error("`{0}` is under 1 MiB: too little for any run")]
    TooSmall(String),
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// Engine steps between two looks at a streamed run's resident memory
/// ([`resident_bytes`]): a read of `/proc/self/statm` per 65 k steps is
/// lost in the run's own work.
pub const RESIDENT_CHECK_STEPS: u64 = 1 << 16;

/// The process's resident memory, bytes (`None` where `/proc` is not).
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().strip_suffix("kB")?.trim();
    Some(kb.parse::<u64>().ok()? << 10)
}

/// Bytes for messages: GiB with one decimal, MiB below 1 GiB.
pub fn gib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

/// Why a simulation could not run or stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("{0}")]
    Input(#[from] InputError),
    #[error("{0}")]
    Options(String),
    #[error("simulation stopped: {0}")]
    Model(String),
    /// The workload cannot go on as written (a loop that takes no time, a
    /// `{*}` operand before any poll matched): the scenario's fault, not
    /// the model's.
    #[error("simulation stopped: {0}")]
    Workload(String),
    /// The kernel model's consistency check failed (debug builds, tests).
    #[error("simulation stopped: invariant violated at {at_ns} ns: {source}")]
    Invariant { at_ns: u64, source: schedlab_kernel::InvariantError },
    /// The kept trace would outgrow [`SimOptions::memory_budget`].
    #[error("{}", memory_message(.events, .at_ns, .duration_ns, .budget))]
    MemoryBudget { events: u64, at_ns: u64, duration_ns: Option<u64>, budget: MemoryBudget },
    /// A streamed run (which keeps no trace) took more resident memory than
    /// [`SimOptions::memory_budget`]: the model, the report's analysis and
    /// the trace writers together.
    #[error(
        "memory budget: at {:.3} s{} simulated the run held {} of memory (the model, its streamed \
         analysis and the trace writers), past {} ({}). A streamed run's memory does not grow with its \
         duration (a shorter run needs about as much, fewer threads or CPUs need less): raise the budget ({})",
        *.at_ns as f64 / 1e9,
        .duration_ns.map_or(String::new(), |d| format!(" of {:.3} s", d as f64 / 1e9)),
        gib(*.resident), gib(.budget.bytes), .budget.origin, .budget.raise_with
    )]
    Resident { resident: u64, at_ns: u64, duration_ns: Option<u64>, budget: MemoryBudget },
    /// The run would cover more CPUs × simulated seconds than the limit.
    #[error(
        "{cpus} CPUs x {:.3} s of simulated time is {} CPU-seconds, past the limit of {limit} ({why}): \
         shorten the run (--duration) or raise the limit (schedlab run --max-cpu-seconds N)",
        *.duration_ns as f64 / 1e9, (*.duration_ns as u128 * *.cpus as u128).div_ceil(1_000_000_000)
    )]
    TooLong { cpus: usize, duration_ns: u64, limit: u64, why: String },
    /// More engine steps in a millisecond of simulated time than the limit.
    #[error(
        "livelock: {steps} engine steps within 1 ms of simulated time from {:.6} s, past the limit of {limit} per \
         simulated us ({why}). A loop whose iterations take almost no simulated time (e.g. `run = \"1ns\"`, \
         a wakeup ping-pong with no work) makes the simulation crawl: give it work, or raise the limit \
         (--max-steps-per-us N)", *.at_ns as f64 / 1e9
    )]
    Livelock { steps: u64, at_ns: u64, limit: u64, why: String },
}

fn memory_message(events: &u64, at_ns: &u64, duration_ns: &Option<u64>, budget: &MemoryBudget) -> String {
    let used = events * TRACE_EVENT_BYTES;
    let of = duration_ns.map_or(String::new(), |d| format!(" of {:.3} s", d as f64 / 1e9));
    // What fits at this rate, rounded down to two significant digits.
    let fit_ns = (*at_ns as u128 * budget.bytes as u128 / used.max(1) as u128) as u64;
    let mag = 10u64.pow((fit_ns.max(1) as f64).log10().floor() as u32).max(10) / 10;
    let fit = (fit_ns / mag) * mag;
    format!(
        "memory budget: the run keeps its whole trace for the report, and at {:.3} s{of} simulated it held {:.1} M \
         events (about {} with their analysis, {TRACE_EVENT_BYTES} bytes per event), past {} ({}). Shorten the \
         run (--duration {} fits at this rate) or raise the budget ({})",
        *at_ns as f64 / 1e9,
        *events as f64 / 1e6,
        gib(used),
        gib(budget.bytes),
        budget.origin,
        if fit >= 1_000_000_000 {
            format!("{}s", fit / 1_000_000_000)
        } else {
            format!("{}ms", (fit / 1_000_000).max(1))
        },
        budget.raise_with
    )
}

/// Per-thread summary the simulator knows directly.
#[derive(Clone, Debug)]
pub struct ThreadOutcome {
    pub name: String,
    pub pid: i32,
    pub iterations: u64,
    pub finished: bool,
    /// `se.sum_exec_runtime` at the end of the run.
    pub runtime_ns: u64,
    /// Voluntary and involuntary context switches (`nvcsw`, `nivcsw`).
    pub nvcsw: u64,
    pub nivcsw: u64,
}

/// A task group of the run (a cpu-controller cgroup or an autogroup) at its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupOutcome {
    /// The `[cgroup.NAME]` path, or `autogroup:SESSION`.
    pub name: String,
    /// The scenario's threads that start in it or below.
    pub threads: usize,
    /// CPU time charged to threads while in it or below (`cpu.stat` `usage_usec`).
    pub runtime_ns: u64,
    /// `cpu.stat` for a group with `max`: periods, throttled periods, throttled ns.
    pub bandwidth: Option<(u64, u64, u64)>,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct SimResult {
    pub trace: Trace,
    /// Simulated time at which the run ended.
    pub end_ns: u64,
    pub seed: u64,
    pub profile: Profile,
    pub features: Features,
    pub topology: Topology,
    pub threads: Vec<ThreadOutcome>,
    /// The task groups, in the order the scenario defines them.
    pub groups: Vec<GroupOutcome>,
    /// Things the user should know about how the run was modeled.
    pub notes: Vec<String>,
    /// Number of events processed by the engine.
    pub steps: u64,
    /// Trace events the run emitted, kept or streamed.
    pub events: u64,
    /// Per thread, rt-app's log rows (empty unless [`SimOptions::rtapp_log`]
    /// and the thread came from an rt-app file).
    pub rtapp_log: Vec<Vec<RtAppRow>>,
    /// The model's schedstats: wakeups by path with what they cost their
    /// wakers, each CPU's busy and newidle time.
    pub kernel_stats: schedlab_kernel::KernelStats,
}

/// First pid handed to workload threads (the process itself is `FIRST_PID - 1`).
pub const FIRST_PID: i32 = 1001;

/// A run's workload: the scenario's threads and those its `fork`s created
/// (not the model's own kworkers), with the CPUs each may use. The
/// simulation runs on the scenario's CPUs; a real run's (with `--remap`)
/// are the host's, so each run has its own affinities.
pub fn sim_workload(
    scenario: &Scenario,
    result: &SimResult,
) -> (Vec<schedlab_trace::Pid>, std::collections::BTreeMap<schedlab_trace::Pid, Vec<u32>>) {
    let mut pids = Vec::new();
    let mut allowed = std::collections::BTreeMap::new();
    for t in &result.threads {
        if let Some(spec) = scenario.workload_spec(&t.name) {
            pids.push(t.pid);
            allowed.insert(t.pid, spec.affinity.to_u32_vec());
        }
    }
    (pids, allowed)
}

/// Resolve the kernel profile and features of a scenario plus overrides.
pub fn kernel_settings(scenario: &Scenario, extra: &[String]) -> Result<(Profile, Features), SimError> {
    let prof = &scenario.kernel_profile;
    let profile = Profile::by_name(&prof.value).ok_or_else(|| {
        scenario.error_at(
            prof,
            format!("unknown kernel profile `{}` (expected one of: {})", prof.value, Profile::NAMES.join(", ")),
        )
    })?;
    let mut features = profile.defaults;
    for f in &scenario.features {
        profile.check_setting(&f.value).map_err(|e| scenario.error_at(f, e))?;
        features.apply(&f.value).map_err(|e| scenario.error_at(f, e.to_string()))?;
    }
    for f in extra {
        for item in f.split([',', ' ']).filter(|s| !s.is_empty()) {
            profile.check_setting(item).map_err(|e| SimError::Options(format!("--features {item}: {e}")))?;
            features.apply(item).map_err(|e| SimError::Options(format!("--features {item}: {e}")))?;
        }
    }
    if !profile.custom_slices {
        if let Some(t) = scenario.threads.iter().find(|t| t.slice_ns.is_some()) {
            return Err(scenario.error_at(
                prof,
                format!(
                    "thread `{}` sets a custom slice, which kernel profile `{}` does not have (sched_attr.sched_runtime \
                     sets a fair task's slice since 6.12)",
                    t.name, profile.name
                ),
            )
            .into());
        }
    }
    Ok((profile, features))
}

/// Simulate `scenario` and return its trace and outcome.
pub fn simulate(scenario: &Scenario, opts: &SimOptions) -> Result<SimResult, SimError> {
    simulate_inner(scenario, opts, None, true)
}

/// Simulate `scenario`, handing every trace event to `sink` as it happens
/// instead of keeping it (`SimResult::trace.events` comes back empty): for
/// runs whose trace would not fit in memory (schbench: ~3 M requests per
/// simulated second). With `kernel_events` false the kernel model emits no
/// tracepoints at all (cheaper), and only the workload's markers reach `sink`.
pub fn simulate_streaming(
    scenario: &Scenario,
    opts: &SimOptions,
    sink: &mut dyn FnMut(&schedlab_trace::Event),
    kernel_events: bool,
) -> Result<SimResult, SimError> {
    struct Sink<'a>(&'a mut dyn FnMut(&schedlab_trace::Event));
    impl TraceObserver for Sink<'_> {
        fn event(&mut self, e: &schedlab_trace::Event) {
            (self.0)(e)
        }
    }
    simulate_inner(scenario, opts, Some(&mut Sink(sink)), kernel_events)
}

/// A consumer of a streamed run: the run's task table (every task and
/// object, as the trace will name them) before the first event, then each
/// event in order.
pub trait TraceObserver {
    fn start(&mut self, _table: &TaskTable) {}
    /// A task created mid-run (`fork`), before the first event naming it.
    fn task_new(&mut self, _pid: schedlab_trace::Pid, _info: &schedlab_trace::TaskInfo) {}
    fn event(&mut self, e: &schedlab_trace::Event);
}

/// [`simulate_streaming`] into an observer that also gets the task table
/// first (to match markers by thread name as the run goes).
pub fn simulate_observed(
    scenario: &Scenario,
    opts: &SimOptions,
    observer: &mut dyn TraceObserver,
    kernel_events: bool,
) -> Result<SimResult, SimError> {
    simulate_inner(scenario, opts, Some(observer), kernel_events)
}

fn simulate_inner(
    scenario: &Scenario,
    opts: &SimOptions,
    mut sink: Option<&mut dyn TraceObserver>,
    kernel_events: bool,
) -> Result<SimResult, SimError> {
    let mut topo = opts.topology.clone().unwrap_or_else(|| scenario.topology.clone());
    if opts.no_noise {
        topo.noise.clear();
    }
    let seed = opts.seed.unwrap_or(scenario.seed);
    let with_background;
    let scenario = if scenario.background == Background::Kernel {
        with_background = add_kernel_background(scenario, &topo, seed);
        &with_background
    } else {
        scenario
    };
    let (profile, features) = kernel_settings(scenario, &opts.features)?;
    let duration = opts.duration_ns.or(scenario.duration_ns);
    let (cpu_limit, cpu_why) = match opts.max_cpu_seconds {
        Some(n) => (n, "--max-cpu-seconds".to_string()),
        None => (DEFAULT_MAX_CPU_SECONDS, "the default".to_string()),
    };
    // A run with no duration (until every program ends) stops where the
    // bound is reached; one with a duration is refused before it starts.
    let cpu_limit_ns = (cpu_limit as u128 * 1_000_000_000 / topo.nr_cpus().max(1) as u128).min(u64::MAX as u128) as u64;
    if let Some(d) = duration.filter(|&d| d > cpu_limit_ns) {
        return Err(SimError::TooLong { cpus: topo.nr_cpus(), duration_ns: d, limit: cpu_limit, why: cpu_why });
    }
    let mut notes = scenario.notes.clone();

    let mut preempt = topo.preempt;
    if preempt == PreemptModel::Lazy && !profile.has_lazy_preempt {
        notes.push(format!(
            "topology {} asks for preempt=lazy, which kernel profile {} does not have (PREEMPT_LAZY is ≥6.13); running as preempt=voluntary",
            topo.name, profile.name
        ));
        preempt = PreemptModel::Voluntary;
    }

    {
        use schedlab_kernel::topology::intel_pstate::{hybrid_regime, HybridRegime};
        match hybrid_regime(&topo, &profile) {
            HybridRegime::AsymCapacity => notes.push(format!(
                "topology {} is a hybrid part without SMT: on kernel profile {} intel_pstate scales CPU capacities by HWP highest performance and clears ITMT (asymmetric capacity, no asym packing)",
                topo.name, profile.name
            )),
            HybridRegime::AsymPacking if topo.is_hybrid() => notes.push(format!(
                "topology {} is a hybrid part: on kernel profile {} every CPU keeps capacity 1024 and ITMT priorities (HWP highest performance) drive asym packing{}",
                topo.name,
                profile.name,
                if topo.has_smt() { " (SMT is on)" } else { " (before 6.12's hybrid capacity scaling)" }
            )),
            _ => {}
        }
    }
    let mut kernel = Kernel::new(KernelConfig {
        profile: profile.clone(),
        features,
        topology: topo.clone(),
        preempt,
        trace: kernel_events,
        seed,
        partitions: schedlab_scenario::cgroup::partitions(&scenario.cgroups)
            .map(|g| schedlab_kernel::Partition {
                cpus: g.cpus.expect("a partition has its cpus (checked at parse)"),
                isolated: g.partition == Some(schedlab_scenario::cgroup::PartitionKind::Isolated),
            })
            .collect(),
    });
    if let Some(us) = scenario.sched_rt_runtime_us {
        notes.push(format!(
            "sched_rt_runtime_us = {us} does not throttle RT tasks on kernel profile {} (no CONFIG_RT_GROUP_SCHED, as Debian builds it); the fair server is what lets fair tasks run under an RT hog",
            profile.name
        ));
    }
    if let Some(runtime) = scenario.fair_server_runtime_ns {
        kernel.set_fair_server_runtime(runtime);
    }

    let mut table = TaskTable::default();
    table.tasks.insert(FIRST_PID - 1, TaskInfo { comm: scenario.name.chars().take(15).collect(), tgid: FIRST_PID - 1 });
    table.objects = scenario.objects.iter().map(|o| o.name.clone()).collect();
    for cpu in 0..topo.nr_cpus() {
        let pid = schedlab_kernel::core::stopper_pid(cpu);
        table.tasks.insert(pid, TaskInfo { comm: format!("migration/{cpu}"), tgid: pid });
    }

    let mut threads = Vec::new();
    let mut task_thread = Vec::new();
    let mut starts = Vec::new();
    for (i, spec) in scenario.threads.iter().enumerate() {
        let policy = kernel_policy(spec.policy);
        if !spec.affinity.is_subset(&topo.all_cpus()) {
            return Err(InputError::new(
                scenario.path.clone(),
                spec.line,
                1,
                format!(
                    "thread {} has affinity {} but topology {} has only CPUs 0-{}",
                    spec.name,
                    spec.affinity,
                    topo.name,
                    topo.nr_cpus() - 1
                ),
            )
            .into());
        }
        let cpu = spec.start_cpu.filter(|c| spec.affinity.contains(*c)).or(spec.affinity.first()).unwrap_or(0);
        let dl = deadline_reservation(scenario, spec, &kernel, cpu)?;
        let pid = FIRST_PID + i as i32;
        let task = kernel.add_task(TaskParams {
            pid,
            policy,
            nice: spec.nice,
            rt_priority: spec.rt_priority,
            slice_ns: spec.slice_ns.map(|s| s.clamp(100_000, 100_000_000)),
            cpus_mask: spec.affinity,
            cpu,
            fixed_start: spec.start_cpu.is_some(),
            dl,
        });
        // The runner's sched_setattr() before the program: the clamps too.
        if let Some(u) = spec.uclamp {
            kernel.sched_setattr_uclamp(task, u.min, u.max);
        }
        table.tasks.insert(pid, TaskInfo { comm: spec.name.clone(), tgid: FIRST_PID - 1 });
        task_thread.push(i);
        let mut thread = Thread::new(task, i, spec.timer_slack_ns);
        if opts.rtapp_log && !spec.program.rows.is_empty() {
            thread.rtapp_log = Some(Box::default());
        }
        threads.push(thread);
        starts.push(spec.start_delay_ns);
    }
    // After the threads, so that thread i stays task i (a group's entities
    // take task slots, which no thread maps to).
    let tasks: Vec<_> = threads.iter().map(|t| t.task).collect();
    let mut out = Outbox::new();
    let (group_notes, group_map) = groups::create(scenario, &mut kernel, &tasks, &mut out);
    let initial_tg: Vec<usize> = tasks.iter().map(|&t| kernel.task_group_of(t)).collect();
    notes.extend(group_notes);

    let check = opts.check_invariants.unwrap_or_else(invariants_by_default);
    kernel.track_touched(check);
    let mut hw = hw::Hardware::new(&topo, seed);
    let noise_starts = hw.noise_starts();
    let noise_streams = noise_starts.len();
    let mut engine = Engine {
        scenario,
        kernel,
        out,
        groups: group_map,
        hw,
        threads,
        task_thread,
        objects: workload::initial_objects(scenario),
        queue: queue::EventQueue::with_keys(engine::noise_key(topo.nr_cpus(), noise_streams)),
        now: 0,
        trace: Vec::new(),
        check_invariants: check,
        invariant_budget: opts.invariant_budget.unwrap_or(u64::MAX).max(1),
        unchecked_entries: 0,
        traced: opts.traced,
        pending_ns: vec![0; topo.nr_cpus()],
        irq_exit_at: vec![0; topo.nr_cpus()],
        idle_exit_tail: vec![0; topo.nr_cpus()],
        hrtimers: hrtimer::HrtimerBases::new(topo.nr_cpus()),
        hrtimer_expired: Vec::new(),
        end: duration,
        error: None,
        forks: workload::Forks::new(
            scenario.templates.len(),
            FIRST_PID + scenario.threads.len() as i32,
            opts.rtapp_log,
        ),
    };
    for (i, delay) in starts.iter().enumerate() {
        engine.queue.push(*delay, Ev::Start(i));
    }
    // Every CPU starts in the idle loop.
    for cpu in 0..topo.nr_cpus() {
        engine.go_idle(cpu);
    }
    // The groups' setup armed their bandwidth timers.
    engine.drain();
    for (i, (_cpu, at)) in noise_starts.into_iter().enumerate() {
        engine.queue.push_keyed(engine::noise_key(topo.nr_cpus(), i), at, Ev::Noise(i));
    }
    if scenario.background == Background::Kernel {
        // The real runner starts each thread as SCHED_OTHER and switches it
        // to its policy on its CPU before t0: there the fair server runs.
        let mut visited = CpuSet::empty();
        for (th, spec) in engine.threads.iter().zip(&scenario.threads) {
            if spec.policy.is_rt_or_dl() {
                visited.insert(engine.kernel.task(th.task).cpu);
            }
        }
        for cpu in visited.iter() {
            engine.kernel.fair_task_passed_through(cpu, 0, &mut engine.out);
            engine.drain();
        }
        // Each CPU's watchdog hrtimer started at some point of boot.
        let mut phase_rng = rng::Rng::new(seed ^ 0x5741_5443_4844_4f47);
        for cpu in 0..topo.nr_cpus() {
            let phase = phase_rng.below_incl(engine::WATCHDOG_PERIOD_NS - 1);
            engine.queue.push(phase, Ev::Watchdog { cpu });
        }
    }
    if let Some(d) = duration {
        engine.queue.push(d, Ev::End);
    }
    if let Some(obs) = sink.as_mut() {
        obs.start(&table);
    }
    let mut steps = 0u64;
    let mut streamed = 0u64;
    let max_events = opts.memory_budget.as_ref().map_or(u64::MAX, |b| b.bytes / TRACE_EVENT_BYTES);
    let (limit, why) = match opts.max_steps_per_us {
        Some(n) => (n, "--max-steps-per-us".to_string()),
        None => (default_max_steps_per_us(topo.nr_cpus()), format!("the default for {} CPUs", topo.nr_cpus())),
    };
    // Steps since the window began; a window is 1 ms of simulated time, so
    // a loop that never advances the clock is caught too.
    let (mut window_start, mut window_steps) = (engine.now, 0u64);
    while engine.step() {
        if engine.now > cpu_limit_ns {
            return Err(SimError::TooLong {
                cpus: topo.nr_cpus(),
                duration_ns: engine.now,
                limit: cpu_limit,
                why: format!("{cpu_why}; the run has no duration and its programs had not ended"),
            });
        }
        steps += 1;
        window_steps += 1;
        // Forked tasks join the table before the first event naming them.
        for (pid, info) in engine.forks.new_tasks.drain(..) {
            if let Some(obs) = sink.as_mut() {
                obs.task_new(pid, &info);
            }
            table.tasks.insert(pid, info);
        }
        if engine.now >= window_start.saturating_add(1_000_000) {
            (window_start, window_steps) = (engine.now, 0);
        } else if window_steps > limit.saturating_mul(1000) {
            return Err(SimError::Livelock { steps: window_steps, at_ns: window_start, limit, why });
        }
        if let Some(obs) = sink.as_mut() {
            streamed += engine.trace.len() as u64;
            engine.stream_to(&mut |e| obs.event(e));
            // Nothing is kept, so the budget is the whole process's: looked
            // at on the first step (a budget below what the program itself
            // takes) and every RESIDENT_CHECK_STEPS after.
            if steps % RESIDENT_CHECK_STEPS == 1 {
                if let Some(budget) = opts.memory_budget.as_ref() {
                    if let Some(resident) = resident_bytes().filter(|&r| r > budget.bytes) {
                        return Err(SimError::Resident {
                            resident,
                            at_ns: engine.now,
                            duration_ns: duration,
                            budget: budget.clone(),
                        });
                    }
                }
            }
        } else if engine.trace.len() as u64 > max_events {
            return Err(SimError::MemoryBudget {
                events: engine.trace.len() as u64,
                at_ns: engine.now,
                duration_ns: duration,
                budget: opts.memory_budget.clone().expect("a limit below u64::MAX comes from a budget"),
            });
        }
    }
    if let Some(obs) = sink.as_mut() {
        streamed += engine.trace.len() as u64;
        engine.stream_to(&mut |e| obs.event(e));
    }
    engine.check_now();
    if let Some(e) = engine.error.take() {
        return Err(e);
    }
    let end_ns = engine.now;
    // The trace; what the kernel emitted after the last drain, and emits
    // below while settling the clocks, is left out.
    let events = std::mem::take(&mut engine.trace);
    let emitted = streamed + events.len() as u64;
    let mut scratch = Outbox::new();
    for cpu in 0..topo.nr_cpus() {
        if engine.kernel.curr(cpu).is_some() {
            engine.kernel.sync_curr(cpu, end_ns, &mut scratch);
        }
    }
    if duration.is_none() {
        let stuck: Vec<String> = (0..engine.threads.len())
            .filter(|&i| !engine.threads[i].finished)
            .map(|i| format!("{} ({:?})", engine.comm_of(i), engine.threads[i].blocked))
            .collect();
        if !stuck.is_empty() {
            notes.push(format!("run ended with threads that never finished: {}", stuck.join(", ")));
        }
    }
    let rtapp_log = engine.threads.iter_mut().map(|t| t.rtapp_log.take().map(|l| l.rows).unwrap_or_default()).collect();
    let outcomes = (0..engine.threads.len())
        .map(|i| (i, &engine.threads[i]))
        .map(|(i, t)| ThreadOutcome {
            name: engine.comm_of(i).to_string(),
            pid: engine.kernel.task(t.task).pid,
            iterations: t.iteration,
            finished: t.finished,
            runtime_ns: engine.kernel.task(t.task).se.sum_exec_runtime,
            nvcsw: engine.kernel.task(t.task).nvcsw,
            nivcsw: engine.kernel.task(t.task).nivcsw,
        })
        .collect();
    let groups = engine
        .groups
        .made
        .iter()
        .map(|(name, tg)| {
            // A group's threads are the scenario's that start in it or below
            // (as `real` counts them); its CPU time is what was charged while
            // any thread was in it.
            let members = initial_tg.iter().filter(|&&g| engine.kernel.task_group_within(g, *tg)).count();
            GroupOutcome {
                name: name.clone(),
                threads: members,
                runtime_ns: engine.kernel.task_group_usage(*tg),
                bandwidth: engine.kernel.cfs_bandwidth_stat(*tg),
            }
        })
        .collect();
    Ok(SimResult {
        trace: Trace { table, nr_cpus: topo.nr_cpus() as u32, events },
        end_ns,
        seed,
        profile,
        features,
        topology: topo.clone(),
        threads: outcomes,
        groups,
        notes,
        steps,
        events: emitted,
        rtapp_log,
        kernel_stats: engine.kernel.stats_at(end_ns),
    })
}

/// Per-CPU kernel work of a stock kernel (`background = "kernel"`): a
/// `kworker/N:1` (SCHED_OTHER, pinned) that runs briefly once a second, like
/// vmstat's per-CPU update, each with its own seeded phase. The watchdog
/// stopper is added by the engine.
/// A SCHED_DEADLINE thread's reservation, admitted as `sched_setattr()`
/// admits it before the thread first runs (its parameters, its affinity
/// against the root domain, the root domain's bandwidth with the threads
/// admitted before it), or the error the kernel would return, at the
/// thread's line. Also refuses what such a thread may not do in the model:
/// operations the kernel refuses a deadline task (`fork`: EAGAIN) or that
/// the model does not follow for one (affinity, policy, nice or cgroup
/// changes).
fn deadline_reservation(
    scenario: &Scenario,
    spec: &ThreadSpec,
    kernel: &Kernel,
    cpu: usize,
) -> Result<Option<schedlab_kernel::deadline::DlParams>, SimError> {
    let Some(d) = spec.dl else { return Ok(None) };
    let refuse = |what: String| -> SimError {
        InputError::new(scenario.path.clone(), spec.line, 1, format!("SCHED_DEADLINE thread {}: {what}", spec.name))
            .into()
    };
    for op in &spec.program.ops {
        let why = match op {
            Op::Fork { .. } => "it forks, which sched_fork() refuses a deadline task (EAGAIN)",
            Op::SetAffinity { .. } => "`setaffinity` on a deadline task is not modeled",
            Op::SetScheduler { .. } | Op::SetPriority { .. } => "changing its policy or nice is not modeled",
            Op::SetCgroup { .. } => "moving a deadline task between cgroups is not modeled",
            _ => continue,
        };
        return Err(refuse(why.to_string()));
    }
    let p = schedlab_kernel::deadline::DlParams {
        runtime: d.runtime_ns,
        deadline: d.deadline_ns,
        period: d.period_ns,
        reclaim: d.reclaim,
    };
    kernel.dl_admit(&p, &spec.affinity, cpu).map_err(|e| refuse(format!("sched_setattr() fails with {e}")))?;
    Ok(Some(p))
}

/// The kernel model's policy for a scenario's.
pub(crate) fn kernel_policy(p: SPolicy) -> Policy {
    match p {
        SPolicy::Other => Policy::Normal,
        SPolicy::Batch => Policy::Batch,
        SPolicy::Idle => Policy::Idle,
        SPolicy::Fifo => Policy::Fifo,
        SPolicy::Rr => Policy::Rr,
        SPolicy::Deadline => Policy::Deadline,
    }
}

fn add_kernel_background(scenario: &Scenario, topo: &Topology, seed: u64) -> Scenario {
    let mut s = scenario.clone();
    let mut rng = rng::Rng::new(seed ^ 0x6b77_6f72_6b65_7273);
    for cpu in 0..topo.nr_cpus() {
        let phase = rng.below_incl(999_999_999);
        s.threads.push(ThreadSpec {
            name: format!("kworker/{cpu}:1"),
            group: "kworker".to_string(),
            instance: cpu as u32,
            policy: SPolicy::Other,
            nice: 0,
            rt_priority: 0,
            slice_ns: None,
            timer_slack_ns: schedlab_scenario::DEFAULT_TIMER_SLACK_NS,
            dl: None,
            uclamp: None,
            affinity: CpuSet::single(cpu),
            start_cpu: Some(cpu),
            start_delay_ns: phase,
            cgroup: None,
            session: None,
            program: Program {
                ops: vec![Op::Run { ns: 20_000 }, Op::Sleep { ns: 1_000_000_000 }],
                repeat: Repeat::Forever,
                rows: Vec::new(),
            },
            line: 0,
        });
    }
    s
}
