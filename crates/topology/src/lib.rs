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

pub mod cpuset;
pub mod diag;

pub use cpuset::{parse_cpulist, CpuSet, MAX_CPUS};
pub use diag::InputError;

/// One logical CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuInfo {
    pub id: usize,
    /// Global physical-core index; SMT siblings share it.
    pub core: usize,
    /// Global LLC index (e.g. a Zen 4 CCD).
    pub llc: usize,
    pub package: usize,
    pub node: usize,
    /// `arch_scale_cpu_capacity()`: 1024 for the biggest CPU.
    pub capacity: u32,
    /// `arch_asym_cpu_priority()` (ITMT / prefcore ranking); higher is preferred.
    pub asym_prio: i32,
}

/// Kernel preemption model (`preempt=` with PREEMPT_DYNAMIC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptModel {
    None,
    Voluntary,
    Full,
    /// `preempt=lazy` (≥6.13): fair-class reschedules wait for the next tick or
    /// return to user; RT reschedules are immediate.
    Lazy,
}

/// What the hardware charges for scheduler work, in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    /// Reschedule / call-function IPI delivery to a busy CPU.
    pub ipi_ns: u64,
    /// Extra latency for an idle CPU to leave its idle state when woken.
    pub idle_exit_ns: u64,
    /// Direct cost of a context switch, charged to the CPU before `next` runs.
    pub context_switch_ns: u64,
    /// Extra CPU work a task pays on its first run after changing CPU.
    pub migration_cold_ns: u64,
    /// Speed of each sibling, in percent, while both SMT siblings run tasks.
    pub smt_speed_pct: u32,
}

/// Seeded timing noise; zero means exact.
#[derive(Clone, Debug, PartialEq)]
pub struct Jitter {
    /// Each `run` burst is scaled by a factor uniform in `1 ± burst_pct/100`.
    pub burst_pct: f64,
    /// Each IPI delivery gets an extra delay uniform in `[0, ipi_ns]`.
    pub ipi_ns: u64,
}

/// A whole machine plus the kernel-side constants that come with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub name: String,
    pub description: String,
    /// Indexed by CPU id; ids are `0..cpus.len()`.
    pub cpus: Vec<CpuInfo>,
    /// `sched_itmt_enabled`: asym packing on when priorities differ.
    pub itmt_enabled: bool,
    /// CONFIG_HZ.
    pub hz: u32,
    pub preempt: PreemptModel,
    pub costs: Costs,
    pub jitter: Jitter,
}

impl Topology {
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

    /// True when any core has more than one hardware thread.
    pub fn has_smt(&self) -> bool {
        self.cpus.iter().any(|c| self.smt_mask(c.id).len() > 1)
    }
}
