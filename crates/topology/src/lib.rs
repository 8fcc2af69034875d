//! Machine descriptions for schedlab: the hardware model's static half.
//!
//! A [`Topology`] says which CPUs exist, how they group into SMT cores, LLCs,
//! packages and NUMA nodes, each CPU's capacity and ITMT (asym packing)
//! priority, the tick rate and preemption model of the kernel running on it,
//! and what things cost (IPI delivery, idle exit, context switch, cache-cold
//! migration, SMT slowdown) plus seeded timing jitter.
//!
//! Topologies come from TOML files (`topologies/*.toml`, also built in as
//! presets). Every bad input is reported as an [`InputError`] naming the file,
//! line and column.
//!
//! # File format
//!
//! ```toml
//! name = "ryzen-7950x"          # default: the file name
//! description = "AMD Ryzen 9 7950X, Fedora 7.1 kernel"
//! hz = 1000                     # CONFIG_HZ: 100, 250, 300 or 1000 (required)
//! preempt = "lazy"              # none | voluntary | full | lazy (required)
//! itmt_enabled = true           # sched_itmt_enabled (default false)
//! sched_energy_aware = true     # sysctl kernel.sched_energy_aware (default true)
//! cpufreq_governor = "schedutil"  # every [[perf_domain]]'s default governor:
//!                               # schedutil | performance | powersave (default schedutil)
//!
//! [layout]                      # generates the CPUs, numbered as Linux does
//! packages = 1                  # sockets (default 1)
//! nodes_per_package = 1         # NUMA nodes per socket, SNC/NPS (default 1)
//! llcs_per_package = 2          # L3 domains per socket, e.g. CCDs (default 1)
//! cores_per_llc = 8             # required
//! threads_per_core = 2          # SMT width (default 1)
//! smt_numbering = "sibling-offset"  # N and N+total_cores are siblings;
//!                                   # "adjacent": 2k and 2k+1 (default sibling-offset)
//!
//! [asym_prio]                   # cpulist = arch_asym_cpu_priority() (default 0)
//! "4,20" = 211                  # SMT siblings must get the same value
//! "0-3,16-19" = 236
//!
//! [capacity]                    # cpulist = arch_scale_cpu_capacity(), 1..=1024
//! "0-7,16-23" = 1024            # (default 1024; some CPU must be 1024)
//! "8-15,24-30" = 980
//!
//! # Instead of [asym_prio] (and, with [core_type], of [capacity]), Intel parts:
//! # [hwp_highest_perf]          # cpulist = HWP highest performance, 1..=255, what
//! # "0-15" = 69                 # intel_pstate hands sched_set_itmt_core_prio();
//! # "16-31" = 43                # the kernel profile computes asym_prio from it
//! # [core_type]                 # hybrid parts: cpulist = "core" (P) or "atom" (E);
//! # "0-15" = "core"             # the kernel profile picks ITMT or asymmetric
//! # "16-31" = "atom"            # capacity (docs/topology-file.md)
//!
//! [costs]                       # durations: integer ns or "500ns", "2us", "1.5ms", "1s"
//! ipi_ns = "2us"
//! idle_exit_ns = "1us"            # without [idle]: the one idle state's exit
//! context_switch_ns = "1.5us"
//! migration_cold_ns = "4us"
//! smt_speed_pct = 62            # 1..=100; defaults: see Costs::default()
//! idle_polling = false          # idle wakes by flag (true) or by IPI (false)
//!
//! [jitter]                      # seeded noise, default 0
//! burst_pct = 1.0               # 0 <= burst_pct < 100
//! ipi_ns = "1us"
//!
//! [[cpus]]                      # per-CPU overrides of [layout] ...
//! id = 31
//! capacity = 980
//! # ... or, without [layout], the whole machine: one entry per CPU with
//! # id, core, llc (required), package, node (default 0), capacity, asym_prio.
//!
//! [[perf_domain]]               # one cpufreq policy = one energy-model performance domain
//! cpus = "0-7,16-23"            # required; each CPU in at most one domain, one capacity
//! governor = "schedutil"        # this policy's governor (default: cpufreq_governor)
//! dynamic_power_coefficient = 100  # DT, µW/MHz/V²; absent = no energy model
//! transition_latency = "40us"   # DT clock-latency-ns of the OPP table (optional)
//! opps = [ { freq = "408MHz", microvolt = 825000 },   # freq: "...kHz|MHz|GHz" or
//!          { freq = "1.416GHz", microvolt = 1125000 } ] # integer Hz; any order
//! # capacity_dmips_mhz = 485    # DT capacity-dmips-mhz; if any domain has it, every CPU
//! #                             # must be in such a domain, none may have `capacity`, and
//! #                             # capacities come from topology_normalize_cpu_scale()
//! ```
//!
//! Unknown keys are errors. A CPU's capacity or priority may be set in one
//! place only (a `[[cpus]]` entry or one key of the table). Core, LLC,
//! package and node ids must be dense; SMT siblings must share LLC, package,
//! node and priority; an LLC must lie inside one package. The CPUs of a
//! performance domain must share one capacity; OPP frequencies are
//! distinct, and microvolts are given on all of a domain's OPPs or none
//! (required with `dynamic_power_coefficient`).

mod assemble;
pub mod cpuset;
pub mod diag;
pub mod duration;
mod file;
pub mod freq;
pub mod hardware;
pub mod host;
pub mod perf;
mod presets;

use std::path::{Path, PathBuf};

pub use cpuset::{parse_cpulist, CpuSet, CpuWrap, CpulistError, MAX_CPUS};
pub use diag::InputError;
pub use duration::{parse_duration, DurationError, DurationNs};
pub use freq::{parse_freq_khz, FreqError, FreqKhz};
pub use hardware::{Distance, Governor, Idle, IdleState, KernelCosts, LevelCosts, NoiseKind, NoiseSource};
pub use perf::{CpufreqGovernor, Opp, PerfDomain};

/// The CONFIG_HZ values the kernel's Kconfig offers (`HZ_100` ... `HZ_1000`).
pub const HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];

/// One logical CPU (a hardware thread, `/sys/devices/system/cpu/cpuN`).
///
/// The grouping indices are global and dense (`0..k` without gaps) so they
/// can index arrays; they are what the kernel's `topology_core_id()`,
/// `get_llc_id()`, `topology_physical_package_id()` and `cpu_to_node()`
/// distinguish, renumbered machine-wide.
#[derive(Clone, PartialEq)]
pub struct CpuInfo {
    /// Logical CPU number, as in `taskset -c` and `sched_switch` traces.
    pub id: usize,
    /// Global physical-core index; SMT siblings share it
    /// (`topology_sibling_cpumask()`, the SMT sched domain).
    pub core: usize,
    /// Global LLC index (e.g. a Zen 4 CCD): `cpu_coregroup_mask()`, the MC
    /// sched domain, `sd_llc`.
    pub llc: usize,
    /// Socket (`topology_physical_package_id()`): the PKG sched domain.
    pub package: usize,
    /// NUMA node (`cpu_to_node()`): the NUMA sched domains.
    pub node: usize,
    /// `arch_scale_cpu_capacity()`: 1024 (`SCHED_CAPACITY_SCALE`) for the
    /// biggest CPU, proportionally less for smaller ones.
    pub capacity: u32,
    /// `arch_asym_cpu_priority()` (ITMT / AMD prefcore ranking, set through
    /// `sched_set_itmt_core_prio()`); higher is preferred. SMT siblings
    /// always share one value (x86 since 6.5). On a topology with
    /// `hwp_highest_perf` it is the priority 6.5+ kernels give (the highest
    /// performance itself); the kernel profile recomputes it
    /// (`schedlab_kernel`'s `topology::itmt`).
    pub asym_prio: i32,
    /// Intel hybrid core type (`[core_type]`), `None` on other machines.
    pub core_type: Option<CoreType>,
    /// HWP highest performance (`[hwp_highest_perf]`): what intel_pstate
    /// passes to `sched_set_itmt_core_prio()` and, on hybrid parts where the
    /// kernel enables it, turns into the CPU capacity. `None` when not given.
    pub hwp_highest_perf: Option<u32>,
}

/// As derived, but the Intel fields only when given: a sweep's shard
/// fingerprint hashes the topology's `Debug` text, which thus stays what it
/// was for every topology without them.
impl std::fmt::Debug for CpuInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("CpuInfo");
        d.field("id", &self.id)
            .field("core", &self.core)
            .field("llc", &self.llc)
            .field("package", &self.package)
            .field("node", &self.node)
            .field("capacity", &self.capacity)
            .field("asym_prio", &self.asym_prio);
        if let Some(t) = &self.core_type {
            d.field("core_type", t);
        }
        if let Some(p) = &self.hwp_highest_perf {
            d.field("hwp_highest_perf", p);
        }
        d.finish()
    }
}

/// The core type an Intel hybrid CPU reports (CPUID leaf 0x1A EAX[31:24],
/// `get_this_hybrid_cpu_type()`): 0x40 for a performance core, 0x20 for an
/// efficiency core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CoreType {
    /// `INTEL_CPU_TYPE_CORE` (0x40): a P-core.
    Core,
    /// `INTEL_CPU_TYPE_ATOM` (0x20): an E-core.
    Atom,
}

impl CoreType {
    /// The file's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CoreType::Core => "core",
            CoreType::Atom => "atom",
        }
    }
}

/// Kernel preemption model (`preempt=` with PREEMPT_DYNAMIC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptModel {
    /// `preempt=none`: reschedule only at return to user or when the task
    /// blocks.
    None,
    /// `preempt=voluntary`: as none, plus `might_resched()` points in the
    /// kernel.
    Voluntary,
    /// `preempt=full`: any reschedule request takes effect at the next
    /// preemption point (IRQ exit, preempt_enable).
    Full,
    /// `preempt=lazy` (≥6.13): fair-class reschedules wait for the next tick or
    /// return to user; RT reschedules are immediate.
    Lazy,
}

impl PreemptModel {
    /// The `preempt=` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptModel::None => "none",
            PreemptModel::Voluntary => "voluntary",
            PreemptModel::Full => "full",
            PreemptModel::Lazy => "lazy",
        }
    }
}

impl std::fmt::Display for PreemptModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A preemption model name that is none of `CONFIG_PREEMPT_*`'s four.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown preemption model `{0}` (expected none, voluntary, full or lazy)")]
pub struct UnknownPreemptModel(pub String);

impl std::str::FromStr for PreemptModel {
    type Err = UnknownPreemptModel;
    fn from_str(s: &str) -> Result<Self, UnknownPreemptModel> {
        match s {
            "none" => Ok(PreemptModel::None),
            "voluntary" => Ok(PreemptModel::Voluntary),
            "full" => Ok(PreemptModel::Full),
            "lazy" => Ok(PreemptModel::Lazy),
            _ => Err(UnknownPreemptModel(s.to_string())),
        }
    }
}

/// What the hardware charges for scheduler work, in nanoseconds.
///
/// The kernel has no such constants; they are the hardware model's answer
/// to "how long does this take on this machine".
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    /// Reschedule / call-function IPI delivery to a busy CPU
    /// (`smp_send_reschedule()` to `scheduler_ipi()`).
    pub ipi_ns: u64,
    /// Direct cost of a context switch (`__schedule()` + `context_switch()`),
    /// charged to the CPU before `next` runs.
    pub context_switch_ns: u64,
    /// Extra CPU work a task pays on its first run after changing CPU
    /// (cache refill; what `task_hot()` / `sysctl_sched_migration_cost`
    /// try to avoid).
    pub migration_cold_ns: u64,
    /// Speed of each sibling, in percent, while both SMT siblings run tasks
    /// (why `SD_SHARE_CPUCAPACITY` / `has_idle_cores` prefer idle cores).
    pub smt_speed_pct: u32,
    /// Modeled CPU time of one newidle `sched_balance_rq()` per CPU of the
    /// domain balanced; the newidle gate compares it with `avg_idle`.
    pub newidle_balance_ns_per_cpu: u64,
    /// CPU time of a small syscall's entry and exit (an eventfd `read()` or
    /// `write()`, `nanosleep()`), charged to the thread making it; the
    /// kernel work inside (a wakeup) is not in it.
    pub syscall_ns: u64,
    /// CPU time of one `write()` to `trace_marker` while tracing records:
    /// what each of the real runner's markers costs its thread. Charged only
    /// when a run models a traced one (`SimOptions::traced`).
    pub trace_marker_ns: u64,
    /// CPU time of one enabled sched tracepoint (the event written into the
    /// ring buffer), charged to the CPU that emits it in traced runs.
    pub tracepoint_ns: u64,
    /// Delay from an hrtimer's expiry to its handler (`hrtimer_interrupt()`
    /// -> `hrtimer_wakeup()`) on a busy CPU: the local APIC timer's delivery
    /// and the interrupt entry. In a VM it holds the host's hrtimer firing and
    /// the interrupt's injection into the vCPU, several microseconds; on
    /// bare metal about a microsecond. Charged on every thread timer (sleep,
    /// `timer`) before the wakeup; an idle CPU's exit comes on top.
    pub timer_irq_ns: u64,
    /// CPU time of the timer interrupt after its callback woke a task and
    /// before the CPU can switch to it (`hrtimer_interrupt()` running on:
    /// reprogramming the next event, which in a VM is an exit to the host;
    /// the interrupt's return; `schedule()` up to its tracepoint). The
    /// woken task's `sched_wakeup` comes this long before its
    /// `sched_switch`; the interrupted task loses the time.
    pub timer_irq_exit_ns: u64,
    /// The part of an idle CPU's exit that comes after a timer's handler
    /// woke a task and before the switch: leaving the idle loop, restarting
    /// the tick it had stopped (`tick_nohz_idle_exit()`, in a VM another
    /// reprogramming of the timer through the host). Taken out of the
    /// drawn exit latency (at most all of it), not added: the measured
    /// exit curves already hold it, only where the trace shows it moves.
    pub idle_exit_tail_ns: u64,
    /// Its p99: each held-back part is drawn log-normal from the two (the
    /// median alone: always the median), at the quantile of the exit it is
    /// taken from (assumed: a long exit has a long tail).
    pub idle_exit_tail_p99_ns: u64,
    /// The scheduling paths' own CPU time (`[costs.kernel]`).
    pub kernel: KernelCosts,
    /// IPI delivery and cache-cold refill by distance (`Distance::LEVELS`
    /// order: smt, llc, package, numa); `[costs.<level>]` in the file, else
    /// the flat `ipi_ns` / `migration_cold_ns` at every level.
    pub levels: [LevelCosts; 4],
}

impl Default for Costs {
    /// Order-of-magnitude values for a bare-metal x86 machine: IPI 2 us,
    /// idle exit 1 us (C1), context switch 1.5 us, cache-cold migration
    /// 5 us, 60 % per SMT sibling (1.2x core throughput). The syscall,
    /// tracing and timer-interrupt costs are 0 (not modeled) unless a
    /// topology gives them: they were added with the host probes that
    /// measure them.
    fn default() -> Self {
        Costs {
            ipi_ns: 2_000,
            context_switch_ns: 1_500,
            migration_cold_ns: 5_000,
            smt_speed_pct: 60,
            newidle_balance_ns_per_cpu: 150,
            syscall_ns: 0,
            trace_marker_ns: 0,
            tracepoint_ns: 0,
            timer_irq_ns: 0,
            timer_irq_exit_ns: 0,
            idle_exit_tail_ns: 0,
            idle_exit_tail_p99_ns: 0,
            kernel: KernelCosts::default(),
            levels: [LevelCosts { ipi_ns: 2_000, migration_cold_ns: 5_000, remote_rq_ns: 0 }; 4],
        }
    }
}

/// Seeded timing noise; zero means exact.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Jitter {
    /// Each `run` burst is scaled by a factor uniform in `1 ± burst_pct/100`.
    /// `0 <= burst_pct < 100`.
    pub burst_pct: f64,
    /// Each IPI delivery gets an extra delay uniform in `[0, ipi_ns]`.
    pub ipi_ns: u64,
}

/// A whole machine plus the kernel-side constants that come with it.
#[derive(Clone, PartialEq)]
pub struct Topology {
    /// Short name (the preset name or the file's `name`).
    pub name: String,
    /// One line for reports: CPU model, kernel, where the numbers come from.
    pub description: String,
    /// Indexed by CPU id; ids are `0..cpus.len()`.
    pub cpus: Vec<CpuInfo>,
    /// `sched_itmt_enabled`: asym packing on when priorities differ.
    pub itmt_enabled: bool,
    /// `sysctl kernel.sched_energy_aware` (default 1): EAS may be used where
    /// it is possible (perf domains with an energy model, asymmetric
    /// capacities, schedutil, no SMT). A sweep setting's `energy_aware =`
    /// overrides it.
    pub sched_energy_aware: bool,
    /// CONFIG_HZ (one of [`HZ_CHOICES`]).
    pub hz: u32,
    /// The `preempt=` model in effect.
    pub preempt: PreemptModel,
    pub costs: Costs,
    pub jitter: Jitter,
    /// cpuidle: states and governor.
    pub idle: Idle,
    /// Seeded interference (`[[noise]]`); empty = none.
    pub noise: Vec<NoiseSource>,
    /// cpufreq policies = energy-model performance domains
    /// (`[[perf_domain]]`), in file order; empty = no cpufreq, no energy
    /// model (every CPU at one fixed frequency, EAS impossible).
    pub perf_domains: Vec<PerfDomain>,
}

/// As derived, except that `sched_energy_aware` (when on, the default)
/// and `perf_domains` (when empty) are left out: a sweep's shard
/// fingerprint hashes each machine's Debug text, and machines that use
/// neither keep the fingerprint they had before these fields existed.
impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Topology");
        d.field("name", &self.name)
            .field("description", &self.description)
            .field("cpus", &self.cpus)
            .field("itmt_enabled", &self.itmt_enabled);
        if !self.sched_energy_aware {
            d.field("sched_energy_aware", &self.sched_energy_aware);
        }
        d.field("hz", &self.hz)
            .field("preempt", &self.preempt)
            .field("costs", &self.costs)
            .field("jitter", &self.jitter)
            .field("idle", &self.idle)
            .field("noise", &self.noise);
        if !self.perf_domains.is_empty() {
            d.field("perf_domains", &self.perf_domains);
        }
        d.finish()
    }
}

impl Topology {
    /// Parse and validate a topology from TOML text. `path` is only used in
    /// error messages (and as the default `name`). Never panics.
    pub fn from_toml_str(path: &str, text: &str) -> Result<Topology, InputError> {
        let file = file::parse(path, text)?;
        assemble::build(path, text, file)
    }

    /// Read and parse a topology file.
    pub fn load(path: &Path) -> Result<Topology, InputError> {
        let shown = path.display().to_string();
        let text = crate::diag::read_input(path, "topology")?;
        Topology::from_toml_str(&shown, &text)
    }

    /// A built-in machine by name (see [`Topology::preset_names`]).
    pub fn preset(name: &str) -> Option<Topology> {
        presets::get(name)
    }

    /// The TOML source of a built-in machine, for `schedlab topology show`
    /// or as a starting point for a custom file.
    pub fn preset_text(name: &str) -> Option<&'static str> {
        presets::text(name)
    }

    /// Names of the built-in machines, the files in `topologies/`.
    pub fn preset_names() -> &'static [&'static str] {
        presets::NAMES
    }

    /// What a scenario's `topology = "..."` means: a preset name if it is
    /// one, else a file path relative to `base_dir` (the scenario's
    /// directory). The error for neither lists the presets; something that
    /// exists there but is no regular file (a FIFO, a directory) is refused
    /// as what it is ([`crate::diag::read_input`]).
    pub fn resolve(reference: &str, base_dir: &Path) -> Result<Topology, InputError> {
        if let Some(t) = Topology::preset(reference) {
            return Ok(t);
        }
        // `-` is standard input, as for every input file (the error below
        // for a FIFO says so).
        let path = if reference == "-" { PathBuf::from("-") } else { base_dir.join(reference) };
        if reference == "-" || std::fs::metadata(&path).is_ok() || schedlab_bundle::get(&path).is_some() {
            return Topology::load(&path);
        }
        Err(InputError::whole_file(
            path.display().to_string(),
            format!(
                "no topology preset or file named `{reference}`{} (expected a file path or one of the presets: {})",
                crate::diag::did_you_mean(reference, Topology::preset_names().iter().copied()),
                Topology::preset_names().join(", ")
            ),
        ))
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// `TICK_NSEC`.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.hz as u64
    }

    pub fn all_cpus(&self) -> CpuSet {
        CpuSet::first_n(self.cpus.len())
    }

    fn span_where(&self, pred: impl Fn(&CpuInfo) -> bool) -> CpuSet {
        self.cpus.iter().filter(|c| pred(c)).map(|c| c.id).collect()
    }

    /// `cpu_smt_mask()`: the CPU and its SMT siblings.
    pub fn smt_mask(&self, cpu: usize) -> CpuSet {
        let core = self.cpus[cpu].core;
        self.span_where(|c| c.core == core)
    }

    /// `cpu_coregroup_mask()`: CPUs sharing this CPU's last-level cache.
    pub fn llc_mask(&self, cpu: usize) -> CpuSet {
        let llc = self.cpus[cpu].llc;
        self.span_where(|c| c.llc == llc)
    }

    pub fn package_mask(&self, cpu: usize) -> CpuSet {
        let pkg = self.cpus[cpu].package;
        self.span_where(|c| c.package == pkg)
    }

    pub fn node_mask(&self, cpu: usize) -> CpuSet {
        let node = self.cpus[cpu].node;
        self.span_where(|c| c.node == node)
    }

    /// The closest level two CPUs share, for costs that grow with distance.
    pub fn distance(&self, a: usize, b: usize) -> Distance {
        let (x, y) = (&self.cpus[a], &self.cpus[b]);
        if a == b {
            Distance::Same
        } else if x.core == y.core {
            Distance::Smt
        } else if x.llc == y.llc {
            Distance::Llc
        } else if x.package == y.package && x.node == y.node {
            Distance::Package
        } else {
            Distance::Numa
        }
    }

    /// The costs of crossing `d` (nothing for the same CPU).
    pub fn level_costs(&self, d: Distance) -> LevelCosts {
        match d.level() {
            Some(i) => self.costs.levels[i],
            None => LevelCosts { ipi_ns: 0, migration_cold_ns: 0, remote_rq_ns: 0 },
        }
    }

    /// The performance domain (cpufreq policy) holding `cpu`, if any.
    pub fn perf_domain_of(&self, cpu: usize) -> Option<&PerfDomain> {
        self.perf_domains.iter().find(|d| d.cpus.contains(cpu))
    }

    /// True when any core has more than one hardware thread.
    pub fn has_smt(&self) -> bool {
        self.cpus.iter().any(|c| self.smt_mask(c.id).len() > 1)
    }

    /// intel_pstate's `hwp_is_hybrid`: the CPUs report hybrid core types
    /// (some P-core's HWP scaling differs from the PERF_CTL one,
    /// `intel_pstate_get_cpu_pstates()`), i.e. the file has `[core_type]`.
    pub fn is_hybrid(&self) -> bool {
        self.cpus.iter().any(|c| c.core_type.is_some())
    }

    /// How much work `cpu` does per unit of time while its SMT siblings are
    /// idle, 1024 for the fastest: the hardware's speed, which is not
    /// always what the kernel believes (`capacity`). On a hybrid part the
    /// CPU's HWP highest performance relative to the largest one (every
    /// CPU runs at its highest level: intel_pstate is not modeled as a
    /// cpufreq driver, so these parts have no `[[perf_domain]]`). [assumed]
    /// HWP performance levels of P- and E-cores are in one scale of
    /// performance, not frequency: that is what the hybrid scaling factor
    /// (intel_pstate's `HYBRID_SCALING_FACTOR*`, kHz per P-core level
    /// against 100 MHz per E-core level) encodes, and what
    /// `hybrid_set_cpu_capacity()` relies on. Elsewhere the capacity.
    pub fn cpu_speed(&self, cpu: usize) -> u32 {
        let c = &self.cpus[cpu];
        match (self.is_hybrid(), c.hwp_highest_perf) {
            (true, Some(perf)) => {
                let max = self.cpus.iter().filter_map(|c| c.hwp_highest_perf).max().unwrap_or(perf).max(1);
                ((perf as u64 * 1024) / max as u64) as u32
            }
            _ => c.capacity,
        }
    }
}
