//! The TOML topology file schema, as serde sees it.
//!
//! These structs mirror the file one-to-one and keep every value's byte span
//! (`toml::Spanned`) so that [`crate::assemble`] can point at the exact
//! line and column of a value that parses but makes no sense. Unknown keys
//! are rejected (`deny_unknown_fields`). Integers are read as `i64` and
//! range-checked later, so a wrong value gets a message that says which
//! values are allowed rather than serde's "expected u32".
//!
//! The format itself is documented in the crate docs (`lib.rs`).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::duration::DurationNs;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TopologyFile {
    /// Defaults to the file name without `.toml`.
    pub name: Option<String>,
    pub description: Option<String>,
    /// CONFIG_HZ: 100, 250, 300 or 1000.
    pub hz: Option<Spanned<i64>>,
    /// `preempt=`: none, voluntary, full, lazy.
    pub preempt: Option<Spanned<PreemptName>>,
    /// `sched_itmt_enabled`; default false.
    pub itmt_enabled: Option<bool>,
    pub layout: Option<Spanned<LayoutFile>>,
    pub cpus: Option<Vec<Spanned<CpuFile>>>,
    /// cpulist → `arch_asym_cpu_priority()`.
    pub asym_prio: Option<Spanned<BTreeMap<Spanned<String>, Spanned<i64>>>>,
    /// cpulist → `arch_scale_cpu_capacity()`.
    pub capacity: Option<Spanned<BTreeMap<Spanned<String>, Spanned<i64>>>>,
    /// cpulist → Intel hybrid core type (`"core"` / `"atom"`, CPUID leaf 0x1A).
    pub core_type: Option<Spanned<BTreeMap<Spanned<String>, Spanned<String>>>>,
    /// cpulist → HWP highest performance (`MSR_HWP_CAPABILITIES` bits 7:0,
    /// the CPPC highest_perf intel_pstate reads).
    pub hwp_highest_perf: Option<Spanned<BTreeMap<Spanned<String>, Spanned<i64>>>>,
    pub costs: Option<CostsFile>,
    pub jitter: Option<JitterFile>,
    pub idle: Option<Spanned<IdleFile>>,
    pub noise: Option<Vec<Spanned<NoiseFile>>>,
    /// `sysctl kernel.sched_energy_aware`; default true (the kernel's 1).
    pub sched_energy_aware: Option<bool>,
    /// Default governor of every `[[perf_domain]]`.
    pub cpufreq_governor: Option<Spanned<GovernorName>>,
    pub perf_domain: Option<Vec<Spanned<PerfDomainFile>>>,
}

/// `[idle]`: cpuidle driver, governor and states.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdleFile {
    pub driver: Option<String>,
    pub governor: Option<Spanned<String>>,
    pub states: Option<Vec<Spanned<IdleStateFile>>>,
    pub haltpoll: Option<Spanned<HaltpollFile>>,
}

/// One `[[idle.states]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdleStateFile {
    pub name: Option<String>,
    pub exit_latency: Option<Spanned<DurationNs>>,
    pub target_residency: Option<Spanned<DurationNs>>,
    pub polling: Option<bool>,
    pub exit_latency_by_idle: Option<Vec<Spanned<ExitPointFile>>>,
    pub timer_exit_latency_by_idle: Option<Vec<Spanned<ExitPointFile>>>,
}

/// `{ idle = "...", p50 = "...", p99 = "..." }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExitPointFile {
    pub idle: Spanned<DurationNs>,
    pub p50: Spanned<DurationNs>,
    pub p99: Option<Spanned<DurationNs>>,
}

/// `[idle.haltpoll]`: the haltpoll module's parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HaltpollFile {
    pub guest_halt_poll_ns: Option<Spanned<DurationNs>>,
    pub grow: Option<Spanned<i64>>,
    pub grow_start: Option<Spanned<DurationNs>>,
    pub shrink: Option<Spanned<i64>>,
    pub allow_shrink: Option<bool>,
}

/// `[costs.smt]`, `[costs.llc]`, `[costs.package]`, `[costs.numa]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LevelFile {
    pub ipi: Option<Spanned<DurationNs>>,
    pub migration_cold: Option<Spanned<DurationNs>>,
    pub remote_rq: Option<Spanned<DurationNs>>,
}

/// `[costs.kernel]`: the scheduling paths' CPU time; `remote_rq` is the
/// default of every level's.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KernelCostsFile {
    pub enqueue: Option<Spanned<DurationNs>>,
    pub dequeue: Option<Spanned<DurationNs>>,
    pub select: Option<Spanned<DurationNs>>,
    pub select_per_cpu: Option<Spanned<DurationNs>>,
    pub wakelist: Option<Spanned<DurationNs>>,
    pub ipi_send: Option<Spanned<DurationNs>>,
    pub ipi_send_by_idle: Option<Vec<Spanned<ExitPointFile>>>,
    pub remote_rq: Option<Spanned<DurationNs>>,
    pub balance_per_cpu: Option<Spanned<DurationNs>>,
    pub ipi_receive: Option<Spanned<DurationNs>>,
    pub hrtimer: Option<Spanned<DurationNs>>,
    pub futex_wait: Option<Spanned<DurationNs>>,
    pub futex_wake: Option<Spanned<DurationNs>>,
    pub schedule_entry: Option<Spanned<DurationNs>>,
}

/// One `[[noise]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoiseFile {
    pub name: Option<String>,
    pub kind: Option<Spanned<String>>,
    pub cpus: Option<Spanned<String>>,
    pub rate_hz: Option<Spanned<f64>>,
    pub duration_p50: Option<Spanned<DurationNs>>,
    pub duration_p99: Option<Spanned<DurationNs>>,
    pub duration_max: Option<Spanned<DurationNs>>,
    pub busy_only: Option<bool>,
}

/// `preempt = "..."`: the kernel's `preempt=` boot parameter values.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PreemptName {
    None,
    Voluntary,
    Full,
    Lazy,
}

/// `[layout]`: a regular machine described by counts, like `lscpu`'s
/// summary. Generates one [`crate::CpuInfo`] per hardware thread.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LayoutFile {
    /// Sockets; default 1.
    pub packages: Option<Spanned<i64>>,
    /// NUMA nodes per socket (SNC / NPS modes); default 1. Must divide
    /// `llcs_per_package`: a node holds whole LLCs.
    pub nodes_per_package: Option<Spanned<i64>>,
    /// Last-level caches per socket (Zen CCDs; 1 on a monolithic-L3 Intel
    /// part without SNC); default 1.
    pub llcs_per_package: Option<Spanned<i64>>,
    /// Physical cores sharing one LLC. Required.
    pub cores_per_llc: Option<Spanned<i64>>,
    /// Hardware threads per core (SMT width); default 1.
    pub threads_per_core: Option<Spanned<i64>>,
    /// How Linux numbers SMT siblings; default sibling-offset.
    pub smt_numbering: Option<SmtNumbering>,
}

/// CPU numbering of SMT siblings as the firmware (MADT order) gives it.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SmtNumbering {
    /// First threads of all cores are CPUs `0..cores`, second threads
    /// `cores..2*cores`, ...: CPU N and N + total_cores are siblings
    /// (Ryzen, most Xeon servers).
    SiblingOffset,
    /// Threads of one core are consecutive: 2k and 2k+1 are siblings
    /// (many Intel client parts, e.g. Alder Lake P cores).
    Adjacent,
}

/// One `[[cpus]]` entry. With `[layout]` it overrides fields of the
/// generated CPU `id`; without it, the entries are the whole machine and
/// `core` and `llc` are required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CpuFile {
    pub id: Spanned<i64>,
    pub core: Option<Spanned<i64>>,
    pub llc: Option<Spanned<i64>>,
    pub package: Option<Spanned<i64>>,
    pub node: Option<Spanned<i64>>,
    pub capacity: Option<Spanned<i64>>,
    pub asym_prio: Option<Spanned<i64>>,
}

/// `[costs]`; every key is optional and falls back to [`crate::Costs::default`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CostsFile {
    pub ipi_ns: Option<Spanned<DurationNs>>,
    pub idle_exit_ns: Option<Spanned<DurationNs>>,
    pub context_switch_ns: Option<Spanned<DurationNs>>,
    pub migration_cold_ns: Option<Spanned<DurationNs>>,
    pub smt_speed_pct: Option<Spanned<i64>>,
    pub idle_polling: Option<bool>,
    pub newidle_balance_ns_per_cpu: Option<Spanned<DurationNs>>,
    pub syscall_ns: Option<Spanned<DurationNs>>,
    pub trace_marker_ns: Option<Spanned<DurationNs>>,
    pub tracepoint_ns: Option<Spanned<DurationNs>>,
    pub timer_irq_ns: Option<Spanned<DurationNs>>,
    pub timer_irq_exit_ns: Option<Spanned<DurationNs>>,
    pub idle_exit_tail_ns: Option<Spanned<DurationNs>>,
    pub idle_exit_tail_p99_ns: Option<Spanned<DurationNs>>,
    pub kernel: Option<KernelCostsFile>,
    pub smt: Option<LevelFile>,
    pub llc: Option<LevelFile>,
    pub package: Option<LevelFile>,
    pub numa: Option<LevelFile>,
}

/// `[jitter]`; both keys default to 0 (exact timing).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JitterFile {
    pub burst_pct: Option<Spanned<f64>>,
    pub ipi_ns: Option<Spanned<DurationNs>>,
}

/// Parse the text into the schema, mapping toml/serde errors to positions.
pub(crate) fn parse(path: &str, text: &str) -> Result<TopologyFile, crate::InputError> {
    toml::from_str::<TopologyFile>(text).map_err(|e| {
        let mut err = crate::diag::toml_error(path, text, &e);
        err.message = polish(&err.message);
        err
    })
}

/// Reword serde's generic messages where they would confuse a kernel
/// developer reading a topology file.
fn polish(msg: &str) -> String {
    let msg = msg.trim_end();
    if let Some(rest) = msg.strip_prefix("unexpected keys in table: ") {
        // toml lists the allowed keys after ", available keys: ".
        if let Some((bad, allowed)) = rest.split_once(", available keys: ") {
            return format!("unknown key `{bad}` (expected one of: {allowed})");
        }
    }
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        return format!("unknown key {rest}");
    }
    if let Some(rest) = msg.strip_prefix("missing field ") {
        return format!("missing key {rest}");
    }
    msg.replace("expected i64", "expected an integer").replace("expected f64", "expected a number")
}

/// One `[[perf_domain]]` entry: a cpufreq policy / energy-model
/// performance domain.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PerfDomainFile {
    pub cpus: Spanned<String>,
    pub governor: Option<Spanned<GovernorName>>,
    pub dynamic_power_coefficient: Option<Spanned<i64>>,
    pub capacity_dmips_mhz: Option<Spanned<i64>>,
    pub transition_latency: Option<Spanned<DurationNs>>,
    pub opps: Spanned<Vec<Spanned<OppFile>>>,
}

/// `{ freq = "408MHz", microvolt = 825000 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OppFile {
    pub freq: Spanned<crate::freq::FreqKhz>,
    pub microvolt: Option<Spanned<i64>>,
}

/// `governor = "..."`: the cpufreq governors the model knows.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum GovernorName {
    Schedutil,
    Performance,
    Powersave,
}
