//! Scheduling domains (`kernel/sched/topology.c`, plus the x86 topology table
//! of `arch/x86/kernel/smpboot.c` and the NUMA levels of `sched_init_numa()`).
//!
//! [`build_sched_domains`] turns a [`Topology`] into what the kernel hangs off
//! each runqueue after boot: a bottom-up chain of `struct sched_domain` per
//! CPU (degenerate levels already removed by `cpu_attach_domain()`), each with
//! its circular list of `struct sched_group`, and the per-CPU shortcuts that
//! `update_top_cache_domain()` caches (`sd_llc`, `sd_llc_size`, `sd_llc_id`,
//! `sd_share_id`, `sd_numa`, `sd_asym_packing`, `sd_asym_cpucapacity`).
//!
//! Version: Debian 6.12.117. In particular the PKG level uses
//! `x86_sched_itmt_flags()` unconditionally (the stable backport of
//! e1bc02646527); mainline 6.12.0 used `x86_die_flags()`, which adds
//! `SD_ASYM_PACKING` only on hybrid / heterogeneous parts. That older rule is
//! available through [`SchedTopologyOptions::pkg_uses_itmt_flags`].
//!
//! Simplifications (each repeated where it applies):
//! - The machine has no L2 information, so the CLS level (`cpu_clustergroup_mask()`,
//!   CPUs sharing an L2) is taken to be the physical core. It then always has
//!   the SMT level's span and is always removed as degenerate, and
//!   `sd_share_id` always equals `sd_llc_id`, as on a Zen 4 desktop.
//! - There is no SLIT. Node distances are synthesised by [`node_distance`]:
//!   10 to itself, 12 to another node of the same package (sub-NUMA
//!   clustering), 21 across packages. With one node per package that gives
//!   exactly one NUMA level spanning all nodes; with SNC/NPS on several sockets
//!   it gives two, as real firmware tables usually do.
//! - The whole machine is one root domain (no cpusets, no isolated CPUs, all
//!   CPUs online), so `cpu_map` is every CPU.
//! - Group capacity is what `update_group_capacity()` settles to without RT,
//!   IRQ or thermal pressure: the sum of `arch_scale_cpu_capacity()`.
//! - `topology_span_sane()` is not checked: every level's mask here is a
//!   partition of the CPUs (core, LLC, node and package ids), so it always holds.
//! - `set_domain_attribute()` (relax_domain_level) is a no-op with its default
//!   and is left out; `sd->shared` (`sched_domain_shared`) is runtime state
//!   and is left to the caller.

use schedlab_topology::{CpuSet, Topology};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The `SD_*` sched-domain flags, values as the 6.12 enum built from
/// `include/linux/sched/sd_flags.h` gives them (bit n for the n-th entry).
pub mod sd_flags {
    /// Balance when a CPU is about to go idle.
    pub const SD_BALANCE_NEWIDLE: u32 = 1 << 0;
    /// Balance (pick the idlest group) on exec.
    pub const SD_BALANCE_EXEC: u32 = 1 << 1;
    /// Balance on fork / clone.
    pub const SD_BALANCE_FORK: u32 = 1 << 2;
    /// Balance on wakeup (never set by `sd_init()`).
    pub const SD_BALANCE_WAKE: u32 = 1 << 3;
    /// Wakeups may pull a task to the waker's CPU (`wake_affine()`).
    pub const SD_WAKE_AFFINE: u32 = 1 << 4;
    /// The span holds CPUs of more than one capacity.
    pub const SD_ASYM_CPUCAPACITY: u32 = 1 << 5;
    /// The span holds every capacity value the machine has.
    pub const SD_ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
    /// Members share the core's execution resources (SMT).
    pub const SD_SHARE_CPUCAPACITY: u32 = 1 << 7;
    /// Members share an L2 / cluster tag.
    pub const SD_CLUSTER: u32 = 1 << 8;
    /// Members share the last-level cache.
    pub const SD_SHARE_LLC: u32 = 1 << 9;
    /// Only one CPU at a time balances this level (global `sched_balance_running`).
    pub const SD_SERIALIZE: u32 = 1 << 10;
    /// Pack work onto the CPUs with the highest `arch_asym_cpu_priority()` (ITMT).
    pub const SD_ASYM_PACKING: u32 = 1 << 11;
    /// Spread work to sibling groups before stacking it.
    pub const SD_PREFER_SIBLING: u32 = 1 << 12;
    /// Groups of this level may overlap (NUMA levels).
    pub const SD_OVERLAP: u32 = 1 << 13;
    /// A NUMA level.
    pub const SD_NUMA: u32 = 1 << 14;

    /// Flags whose presence at a level implies it at every level below
    /// (the `SDF_SHARED_CHILD` metaflag); used by `highest_flag_domain()`.
    pub const SD_SHARED_CHILD_MASK: u32 = SD_BALANCE_NEWIDLE
        | SD_BALANCE_EXEC
        | SD_BALANCE_FORK
        | SD_BALANCE_WAKE
        | SD_WAKE_AFFINE
        | SD_SHARE_CPUCAPACITY
        | SD_SHARE_LLC;
    /// Flags whose presence at a level implies it at every level above
    /// (`SDF_SHARED_PARENT`).
    pub const SD_SHARED_PARENT_MASK: u32 =
        SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL | SD_SERIALIZE | SD_OVERLAP | SD_NUMA;
    /// Flags that only mean something with at least two groups
    /// (`SDF_NEEDS_GROUPS`): every flag except `SD_WAKE_AFFINE`.
    /// The `SD_DEGENERATE_GROUPS_MASK` of topology.c.
    pub const SD_DEGENERATE_GROUPS_MASK: u32 = ((1 << 15) - 1) & !SD_WAKE_AFFINE;
    /// Flags a topology level's `sd_flags()` callback may return
    /// (`TOPOLOGY_SD_FLAGS`); `sd_init()` drops anything else.
    pub const TOPOLOGY_SD_FLAGS: u32 = SD_SHARE_CPUCAPACITY | SD_CLUSTER | SD_SHARE_LLC | SD_NUMA | SD_ASYM_PACKING;

    /// Every flag with its name, lowest bit first.
    pub const SD_FLAG_NAMES: [(u32, &str); 15] = [
        (SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"),
        (SD_BALANCE_EXEC, "SD_BALANCE_EXEC"),
        (SD_BALANCE_FORK, "SD_BALANCE_FORK"),
        (SD_BALANCE_WAKE, "SD_BALANCE_WAKE"),
        (SD_WAKE_AFFINE, "SD_WAKE_AFFINE"),
        (SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"),
        (SD_ASYM_CPUCAPACITY_FULL, "SD_ASYM_CPUCAPACITY_FULL"),
        (SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"),
        (SD_CLUSTER, "SD_CLUSTER"),
        (SD_SHARE_LLC, "SD_SHARE_LLC"),
        (SD_SERIALIZE, "SD_SERIALIZE"),
        (SD_ASYM_PACKING, "SD_ASYM_PACKING"),
        (SD_PREFER_SIBLING, "SD_PREFER_SIBLING"),
        (SD_OVERLAP, "SD_OVERLAP"),
        (SD_NUMA, "SD_NUMA"),
    ];

    /// Space-separated flag names, lowest bit first: the text of debugfs
    /// `sched/domains/cpuN/domainM/flags` (`sd_flags_show()`).
    pub fn flag_names(flags: u32) -> String {
        SD_FLAG_NAMES.iter().filter(|(bit, _)| flags & bit != 0).map(|(_, name)| *name).collect::<Vec<_>>().join(" ")
    }
}

use sd_flags::*;

/// `LOCAL_DISTANCE`: a node's SLIT distance to itself.
pub const LOCAL_DISTANCE: u32 = 10;
/// Synthetic distance between two nodes of one package (SNC / NPS), as
/// Intel SNC firmware reports it.
pub const SAME_PACKAGE_DISTANCE: u32 = 12;
/// Synthetic distance between nodes of different packages (`REMOTE_DISTANCE`
/// is 20; two-socket Xeon SLITs say 21).
pub const CROSS_PACKAGE_DISTANCE: u32 = 21;
/// `node_reclaim_distance` (`RECLAIM_DISTANCE` = 30; AMD Zen raises it to
/// 32). NUMA levels farther than this lose EXEC/FORK balancing and
/// WAKE_AFFINE in `sd_init()`. The synthetic distances never exceed it.
pub const NODE_RECLAIM_DISTANCE: u32 = 30;

/// Initial `newidle_call` / `newidle_success` / `newidle_ratio` of every
/// domain (`sd_init()`, the 6.12.y proportional-newidle backport): a 50 %
/// assumed success rate.
pub const NEWIDLE_CALL_INIT: u32 = 512;
pub const NEWIDLE_SUCCESS_INIT: u32 = 256;
pub const NEWIDLE_RATIO_INIT: u32 = 512;

/// Which topology level a domain was built from (the `name` of its
/// `struct sched_domain_topology_level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DomainLevel {
    /// SMT siblings (`cpu_smt_mask()`).
    Smt,
    /// CPUs sharing an L2 (`cpu_clustergroup_mask()`); here: the core.
    Cls,
    /// CPUs sharing the LLC (`cpu_coregroup_mask()`).
    Mc,
    /// `cpu_cpu_mask()`: the CPU's NUMA node (which is the package unless
    /// the package holds several nodes, when the level is skipped).
    Pkg,
    /// `sched_init_numa()`'s identity level: the CPU's own node.
    Node,
    /// NUMA level `n` (1-based `numa_level`): nodes within the n-th
    /// smallest distance.
    Numa(u8),
}

impl DomainLevel {
    /// The kernel's level name (`SD_INIT_NAME`).
    pub fn name(self) -> &'static str {
        match self {
            DomainLevel::Smt => "SMT",
            DomainLevel::Cls => "CLS",
            DomainLevel::Mc => "MC",
            DomainLevel::Pkg => "PKG",
            DomainLevel::Node => "NODE",
            DomainLevel::Numa(_) => "NUMA",
        }
    }
}

/// One row of the topology table: `struct sched_domain_topology_level`.
/// The mask function is implied by `level`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomainTopologyLevel {
    pub level: DomainLevel,
    /// What the level's `sd_flags()` callback returns (already evaluated,
    /// so it reflects `itmt_enabled`).
    pub sd_flags: u32,
    /// `SDTL_OVERLAP`: groups are built by `build_overlap_sched_groups()`
    /// and the domain gets `SD_OVERLAP`. Set on NUMA levels above NODE.
    pub overlap: bool,
    /// Index into the NUMA distance table (0 for NODE and non-NUMA levels).
    pub numa_level: usize,
}

/// Knobs for behaviour that differs between kernel versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedTopologyOptions {
    /// True (6.12.117, and mainline since e1bc02646527): the PKG level's flags
    /// are `x86_sched_itmt_flags()`, so with ITMT on, asym packing also works
    /// across LLCs. False (6.12.0): `x86_die_flags()`, which is 0 on a
    /// non-hybrid part such as the 7950X, so packing stays inside each LLC.
    pub pkg_uses_itmt_flags: bool,
}

impl Default for SchedTopologyOptions {
    /// Debian 6.12.117.
    fn default() -> Self {
        SchedTopologyOptions { pkg_uses_itmt_flags: true }
    }
}

/// A `struct sched_group` (with the parts of its `sched_group_capacity`
/// that are fixed at build time).
#[derive(Clone, Debug, PartialEq)]
pub struct SchedGroup {
    /// Identity of the kernel object: two groups with the same id are the
    /// same `struct sched_group`, shared between the CPUs of a domain span
    /// (groups of non-NUMA levels are shared; overlap groups are per CPU).
    pub id: usize,
    /// `sched_group_span()`.
    pub span: CpuSet,
    /// `group_balance_mask()`: CPUs that reach this group through their own
    /// child domain. Equals `span` except on overlapping NUMA levels.
    pub balance_mask: CpuSet,
    /// `group_weight`: CPUs in the span.
    pub weight: u32,
    /// `cores`: distinct SMT cores in the span.
    pub cores: u32,
    /// `sg->flags`: the flags of the child domain the group stands for (0
    /// when that child was removed as degenerate at the bottom). As in the
    /// kernel, a degenerate middle level hands its child's flags only to the
    /// first group of the level above; shared groups end up updated for
    /// every CPU, per-CPU overlap groups only in first position.
    pub flags: u32,
    /// `sgc->capacity` settled without pressure: sum of CPU capacities.
    pub capacity: u64,
    /// `sgc->min_capacity`.
    pub min_capacity: u64,
    /// `sgc->max_capacity`.
    pub max_capacity: u64,
    /// `asym_prefer_cpu`: the group's CPU with the highest
    /// `arch_asym_cpu_priority()`, the lowest id among equals (the first in
    /// ascending order that no later CPU strictly beats), as
    /// `init_sched_groups_capacity()` computes it. The kernel fills it in
    /// only for `SD_ASYM_PACKING` domains (elsewhere it stays 0 and is never
    /// read); the model fills it in everywhere. 6.12.117 never refreshes it
    /// when priorities change after the build.
    pub asym_prefer_cpu: usize,
}

impl SchedGroup {
    /// `group_balance_cpu()`: first CPU of the balance mask.
    pub fn balance_cpu(&self) -> usize {
        self.balance_mask.first().unwrap_or(0)
    }
}

/// A `struct sched_domain` as attached to one CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedDomain {
    pub level: DomainLevel,
    /// `sd->name`.
    pub name: &'static str,
    /// `sched_domain_span()`.
    pub span: CpuSet,
    /// `span_weight`.
    pub span_weight: u32,
    /// `sd->flags` after `sd_init()`, `build_sched_domains()` and the
    /// degenerate-parent merging of `cpu_attach_domain()`.
    pub flags: u32,
    /// `min_interval` in ms: the level mask's weight.
    pub min_interval: u64,
    /// `max_interval` in ms: twice that.
    pub max_interval: u64,
    /// `busy_factor`: 16.
    pub busy_factor: u32,
    /// `imbalance_pct`: 110 with `SD_SHARE_CPUCAPACITY`, else 117.
    pub imbalance_pct: u32,
    /// `cache_nice_tries`: 0 for SMT, 2 for NUMA, 1 otherwise.
    pub cache_nice_tries: u32,
    /// Initial `balance_interval` in ms (= `min_interval`); the balancer
    /// doubles it on failure at run time.
    pub balance_interval: u64,
    /// `imb_numa_nr`: tasks a NUMA-level imbalance may leave (set above the
    /// LLC; 0 at and below it).
    pub imb_numa_nr: u32,
    /// Initial newidle statistics ([`NEWIDLE_CALL_INIT`] etc.).
    pub newidle_call: u32,
    pub newidle_success: u32,
    pub newidle_ratio: u32,
    /// The circular group list, starting at `sd->groups`, the group holding
    /// this CPU, then following the `next` pointers.
    pub groups: Vec<SchedGroup>,
}

impl SchedDomain {
    /// `sd->flags & flag != 0`.
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// `sd->groups`: the local group (holds the CPU).
    pub fn local_group(&self) -> &SchedGroup {
        &self.groups[0]
    }
}

/// One CPU's domains (`rq->sd` and its parents) and the per-CPU shortcuts
/// of `update_top_cache_domain()`. Indices refer to `domains`.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuDomains {
    pub cpu: usize,
    /// Bottom-up; `domains[0]` is `rq->sd`, `domains[k + 1]` its parent.
    /// Empty on a one-CPU machine.
    pub domains: Vec<SchedDomain>,
    /// `sd_llc`: the highest domain with `SD_SHARE_LLC`.
    pub sd_llc: Option<usize>,
    /// `sd_llc_size`: its weight, 1 without one.
    pub sd_llc_size: u32,
    /// `sd_llc_id`: first CPU of its span, the CPU itself without one.
    pub sd_llc_id: usize,
    /// `sd_share_id`: first CPU of the lowest `SD_CLUSTER` domain, else
    /// `sd_llc_id` (always the latter here: CLS never survives).
    pub sd_share_id: usize,
    /// `sd_numa`: the lowest domain with `SD_NUMA`.
    pub sd_numa: Option<usize>,
    /// `sd_asym_packing`: the highest domain with `SD_ASYM_PACKING`.
    pub sd_asym_packing: Option<usize>,
    /// `sd_asym_cpucapacity`: the lowest domain with
    /// `SD_ASYM_CPUCAPACITY_FULL`.
    pub sd_asym_cpucapacity: Option<usize>,
}

/// The whole machine's domains: the result of `build_sched_domains()` and
/// `cpu_attach_domain()` for every CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedDomains {
    /// Indexed by CPU id.
    pub cpus: Vec<CpuDomains>,
    /// The topology table the domains were built from (x86 levels plus the
    /// NUMA levels), bottom-up.
    pub levels: Vec<SchedDomainTopologyLevel>,
    /// `sched_domains_numa_distance[]`: the distinct node distances, ascending.
    pub numa_distances: Vec<u32>,
    /// Static key `sched_asym_cpucapacity`: some built domain had
    /// `SD_ASYM_CPUCAPACITY`.
    pub sched_asym_cpucapacity: bool,
    /// Static key `sched_cluster_active`: some CPU kept an `SD_CLUSTER`
    /// domain.
    pub sched_cluster_active: bool,
}

impl SchedDomains {
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// `for_each_domain(cpu, sd)`: the CPU's domains, bottom-up.
    pub fn domains(&self, cpu: usize) -> &[SchedDomain] {
        &self.cpus[cpu].domains
    }

    /// `rcu_dereference(per_cpu(sd_llc, cpu))`.
    pub fn sd_llc(&self, cpu: usize) -> Option<&SchedDomain> {
        let c = &self.cpus[cpu];
        c.sd_llc.map(|i| &c.domains[i])
    }

    /// `per_cpu(sd_numa, cpu)`.
    pub fn sd_numa(&self, cpu: usize) -> Option<&SchedDomain> {
        let c = &self.cpus[cpu];
        c.sd_numa.map(|i| &c.domains[i])
    }

    /// `per_cpu(sd_asym_packing, cpu)`.
    pub fn sd_asym_packing(&self, cpu: usize) -> Option<&SchedDomain> {
        let c = &self.cpus[cpu];
        c.sd_asym_packing.map(|i| &c.domains[i])
    }

    /// `per_cpu(sd_asym_cpucapacity, cpu)`.
    pub fn sd_asym_cpucapacity(&self, cpu: usize) -> Option<&SchedDomain> {
        let c = &self.cpus[cpu];
        c.sd_asym_cpucapacity.map(|i| &c.domains[i])
    }

    /// `cpus_share_cache()` (core.c): same CPU, or equal `sd_llc_id`.
    pub fn cpus_share_cache(&self, a: usize, b: usize) -> bool {
        a == b || self.cpus[a].sd_llc_id == self.cpus[b].sd_llc_id
    }

    /// `cpus_share_resources()` (core.c): same CPU, or equal `sd_share_id`.
    pub fn cpus_share_resources(&self, a: usize, b: usize) -> bool {
        a == b || self.cpus[a].sd_share_id == self.cpus[b].sd_share_id
    }

    /// Span of `sd_llc`, or just the CPU when it has none (what
    /// `select_idle_cpu()` scans and `cpus_share_cache()` agrees with).
    pub fn llc_span(&self, cpu: usize) -> CpuSet {
        self.sd_llc(cpu).map(|sd| sd.span).unwrap_or_else(|| CpuSet::single(cpu))
    }

    /// `highest_flag_domain(cpu, flag)`: index of the highest domain with
    /// `flag`; for flags shared with children the walk stops at the first
    /// domain without it.
    pub fn highest_flag_domain(&self, cpu: usize, flag: u32) -> Option<usize> {
        highest_flag_domain(self.cpus[cpu].domains.iter().map(|sd| sd.flags), flag)
    }

    /// `lowest_flag_domain(cpu, flag)`: index of the lowest domain with `flag`.
    pub fn lowest_flag_domain(&self, cpu: usize, flag: u32) -> Option<usize> {
        lowest_flag_domain(self.cpus[cpu].domains.iter().map(|sd| sd.flags), flag)
    }

    /// A readable dump of one CPU's domains in the spirit of the kernel's
    /// `sched_verbose` boot output (`sched_domain_debug()`): one line per
    /// domain with span, level and flags, one per group list.
    pub fn sched_domain_debug(&self, cpu: usize) -> String {
        let mut out = String::new();
        let c = &self.cpus[cpu];
        if c.domains.is_empty() {
            let _ = writeln!(out, "CPU{cpu}: no sched domains (single CPU)");
            return out;
        }
        let _ = writeln!(out, "CPU{cpu} sched domains:");
        for (k, sd) in c.domains.iter().enumerate() {
            let _ = writeln!(
                out,
                " domain-{k}: level={} span={} weight={} interval={}..{}ms imbalance_pct={} flags={}",
                sd.name,
                sd.span,
                sd.span_weight,
                sd.min_interval,
                sd.max_interval,
                sd.imbalance_pct,
                flag_names(sd.flags)
            );
            let groups: Vec<String> = sd
                .groups
                .iter()
                .map(|g| format!("{{{} cap={} prefer={}}}", g.span, g.capacity, g.asym_prefer_cpu))
                .collect();
            let _ = writeln!(out, "  groups: {}", groups.join(" "));
        }
        let _ = writeln!(
            out,
            " sd_llc_size={} sd_llc_id={} sd_asym_packing={:?}",
            c.sd_llc_size, c.sd_llc_id, c.sd_asym_packing
        );
        out
    }
}

/// `highest_flag_domain()` over a bottom-up list of domain flags.
fn highest_flag_domain(flags: impl Iterator<Item = u32>, flag: u32) -> Option<usize> {
    let mut found = None;
    for (k, f) in flags.enumerate() {
        if f & flag != 0 {
            found = Some(k);
        } else if flag & SD_SHARED_CHILD_MASK != 0 {
            break;
        }
    }
    found
}

/// `lowest_flag_domain()` over a bottom-up list of domain flags.
fn lowest_flag_domain(mut flags: impl Iterator<Item = u32>, flag: u32) -> Option<usize> {
    flags.position(|f| f & flag != 0)
}

/// `sched_asym_prefer(a, b)` (sched.h): `arch_asym_cpu_priority(a)` strictly
/// above that of `b`. On x86 the priority is `sched_core_priority` from
/// `sched_set_itmt_core_prio()` (itmt.c), 0 unless a driver set it.
pub fn sched_asym_prefer(topo: &Topology, a: usize, b: usize) -> bool {
    topo.cpus[a].asym_prio > topo.cpus[b].asym_prio
}

/// `cpu_smt_flags()` (include/linux/sched/topology.h), which x86's
/// `x86_smt_flags()` returns unchanged. No `SD_ASYM_PACKING` at SMT level
/// since 6.5 (995998ebdebd); siblings share one ITMT priority instead.
pub fn cpu_smt_flags() -> u32 {
    SD_SHARE_CPUCAPACITY | SD_SHARE_LLC
}

/// `cpu_cluster_flags()`.
pub fn cpu_cluster_flags() -> u32 {
    SD_CLUSTER | SD_SHARE_LLC
}

/// `cpu_core_flags()`.
pub fn cpu_core_flags() -> u32 {
    SD_SHARE_LLC
}

/// `cpu_numa_flags()`.
pub fn cpu_numa_flags() -> u32 {
    SD_NUMA
}

/// `x86_sched_itmt_flags()` (smpboot.c): `SD_ASYM_PACKING` while
/// `sysctl_sched_itmt_enabled` is set.
pub fn x86_sched_itmt_flags(topo: &Topology) -> u32 {
    if topo.itmt_enabled {
        SD_ASYM_PACKING
    } else {
        0
    }
}

/// `x86_core_flags()`: the MC level's flags.
pub fn x86_core_flags(topo: &Topology) -> u32 {
    cpu_core_flags() | x86_sched_itmt_flags(topo)
}

/// `x86_cluster_flags()`: the CLS level's flags.
pub fn x86_cluster_flags(topo: &Topology) -> u32 {
    cpu_cluster_flags() | x86_sched_itmt_flags(topo)
}

/// `x86_has_numa_in_package` (set in `set_cpu_sibling_map()`): some package
/// holds CPUs of more than one node (SNC, NPS, Cluster-on-Die). The PKG level
/// is then left out and the NUMA levels take its place.
pub fn x86_has_numa_in_package(topo: &Topology) -> bool {
    let mut node_of_pkg: HashMap<usize, usize> = HashMap::new();
    topo.cpus.iter().any(|c| *node_of_pkg.entry(c.package).or_insert(c.node) != c.node)
}

/// Number of NUMA nodes (`nr_node_ids`; node ids are dense).
fn nr_nodes(topo: &Topology) -> usize {
    topo.cpus.iter().map(|c| c.node + 1).max().unwrap_or(1)
}

/// `cpumask_of_node(node)`.
fn cpumask_of_node(topo: &Topology, node: usize) -> CpuSet {
    topo.cpus.iter().filter(|c| c.node == node).map(|c| c.id).collect()
}

/// `node_distance(a, b)`, synthesised because the model has no SLIT:
/// [`LOCAL_DISTANCE`] for the same node, [`SAME_PACKAGE_DISTANCE`] for
/// nodes whose first CPUs share a package, else [`CROSS_PACKAGE_DISTANCE`].
/// Symmetric, and "same package" is an equivalence, so every NUMA level's
/// masks partition the machine.
pub fn node_distance(topo: &Topology, a: usize, b: usize) -> u32 {
    if a == b {
        return LOCAL_DISTANCE;
    }
    let pkg = |n: usize| topo.cpus.iter().find(|c| c.node == n).map(|c| c.package);
    if pkg(a) == pkg(b) {
        SAME_PACKAGE_DISTANCE
    } else {
        CROSS_PACKAGE_DISTANCE
    }
}

/// The NUMA half of the topology table: `sched_domains_numa_distance[]` and
/// `sched_domains_numa_masks[level][node]` (`sched_init_numa()`).
struct NumaTables {
    distances: Vec<u32>,
    masks: Vec<Vec<CpuSet>>,
}

/// `sched_init_numa()`: the distinct distances in the node table, one level
/// per distance, and per level and node the CPUs of all nodes at most that
/// far away.
fn sched_init_numa(topo: &Topology) -> NumaTables {
    let n = nr_nodes(topo);
    let mut distances: Vec<u32> =
        (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| node_distance(topo, i, j)).collect();
    distances.sort_unstable();
    distances.dedup();
    let node_masks: Vec<CpuSet> = (0..n).map(|k| cpumask_of_node(topo, k)).collect();
    let masks = distances
        .iter()
        .map(|&d| {
            (0..n)
                .map(|j| {
                    (0..n)
                        .filter(|&k| node_distance(topo, j, k) <= d)
                        .fold(CpuSet::empty(), |acc, k| acc.or(&node_masks[k]))
                })
                .collect()
        })
        .collect();
    NumaTables { distances, masks }
}

/// The topology table the kernel ends up with on x86: `build_sched_topology()`
/// (SMT, CLS, MC, and PKG unless [`x86_has_numa_in_package`]) followed by what
/// `sched_init_numa()` appends (NODE, then one overlapping NUMA level per
/// further distance). With one node there is just NODE, which the build
/// never reaches because PKG already spans everything.
pub fn x86_sched_topology(topo: &Topology, opts: &SchedTopologyOptions) -> Vec<SchedDomainTopologyLevel> {
    let numa = sched_init_numa(topo);
    x86_levels(topo, opts, &numa)
}

fn x86_levels(topo: &Topology, opts: &SchedTopologyOptions, numa: &NumaTables) -> Vec<SchedDomainTopologyLevel> {
    let tl = |level, sd_flags| SchedDomainTopologyLevel { level, sd_flags, overlap: false, numa_level: 0 };
    let mut levels = vec![
        tl(DomainLevel::Smt, cpu_smt_flags()),
        tl(DomainLevel::Cls, x86_cluster_flags(topo)),
        tl(DomainLevel::Mc, x86_core_flags(topo)),
    ];
    if !x86_has_numa_in_package(topo) {
        let pkg_flags = if opts.pkg_uses_itmt_flags { x86_sched_itmt_flags(topo) } else { 0 };
        levels.push(tl(DomainLevel::Pkg, pkg_flags));
    }
    levels.push(tl(DomainLevel::Node, 0));
    for j in 1..numa.distances.len() {
        levels.push(SchedDomainTopologyLevel {
            level: DomainLevel::Numa(j.min(u8::MAX as usize) as u8),
            sd_flags: cpu_numa_flags(),
            overlap: true,
            numa_level: j,
        });
    }
    levels
}

/// `tl->mask(cpu)`.
fn tl_mask(topo: &Topology, numa: &NumaTables, tl: &SchedDomainTopologyLevel, cpu: usize) -> CpuSet {
    match tl.level {
        // No L2 ids in the model: a cluster is the core.
        DomainLevel::Smt | DomainLevel::Cls => topo.smt_mask(cpu),
        DomainLevel::Mc => topo.llc_mask(cpu),
        // cpu_cpu_mask() is the node's mask on a NUMA kernel.
        DomainLevel::Pkg => topo.node_mask(cpu),
        DomainLevel::Node | DomainLevel::Numa(_) => numa.masks[tl.numa_level][topo.cpus[cpu].node],
    }
}

/// One CPU's domain at one level while the tree is being built: the
/// per-CPU `struct sched_domain` in `sd_data`. The child is the same CPU's
/// domain one level down (the chain is contiguous until attach time).
#[derive(Clone, Debug)]
struct BuildSd {
    span: CpuSet,
    flags: u32,
    min_interval: u64,
    max_interval: u64,
    imbalance_pct: u32,
    cache_nice_tries: u32,
    balance_interval: u64,
    span_weight: u32,
    imb_numa_nr: u32,
    /// `sd->groups`: arena index of the first group.
    groups: usize,
}

/// A `struct sched_group` in the build arena.
#[derive(Clone, Debug)]
struct BuildSg {
    span: CpuSet,
    balance_mask: CpuSet,
    flags: u32,
    next: usize,
    cores: u32,
    asym_prefer_cpu: usize,
}

/// `asym_cpu_capacity_scan()`: the distinct `arch_scale_cpu_capacity()`
/// values with their CPUs, largest first; empty when all CPUs are equal.
fn asym_cpu_capacity_scan(topo: &Topology) -> Vec<(u32, CpuSet)> {
    let mut list: Vec<(u32, CpuSet)> = Vec::new();
    for c in &topo.cpus {
        match list.iter_mut().find(|(cap, _)| *cap == c.capacity) {
            Some((_, set)) => set.insert(c.id),
            None => list.push((c.capacity, CpuSet::single(c.id))),
        }
    }
    list.sort_by_key(|e| std::cmp::Reverse(e.0));
    if list.len() == 1 {
        list.clear();
    }
    list
}

/// `asym_cpu_capacity_classify()`: `SD_ASYM_CPUCAPACITY` when the span holds
/// two or more capacity values, plus `_FULL` when no value of `cpu_map` is
/// missing from it.
fn asym_cpu_capacity_classify(span: &CpuSet, cpu_map: &CpuSet, caps: &[(u32, CpuSet)]) -> u32 {
    let count = caps.iter().filter(|(_, set)| set.intersects(span)).count();
    let miss = caps.iter().filter(|(_, set)| !set.intersects(span) && set.intersects(cpu_map)).count();
    if count < 2 {
        0
    } else if miss > 0 {
        SD_ASYM_CPUCAPACITY
    } else {
        SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL
    }
}

/// `sd_init()`: defaults for a new domain from its level and mask. Returns
/// the domain and whether the child must lose `SD_PREFER_SIBLING` (no
/// spreading across CPUs of different capacity).
fn sd_init(
    tl: &SchedDomainTopologyLevel,
    mask: CpuSet,
    cpu_map: &CpuSet,
    caps: &[(u32, CpuSet)],
    numa: &NumaTables,
) -> (BuildSd, bool) {
    let sd_weight = mask.len() as u64;
    let mut flags = SD_BALANCE_NEWIDLE
        | SD_BALANCE_EXEC
        | SD_BALANCE_FORK
        | SD_WAKE_AFFINE
        | SD_PREFER_SIBLING
        | (tl.sd_flags & TOPOLOGY_SD_FLAGS);
    let span = cpu_map.and(&mask);
    flags |= asym_cpu_capacity_classify(&span, cpu_map, caps);
    // (The kernel warns about asymmetric capacity inside an SMT core and
    // carries on; so does the model.)
    let clear_child_prefer_sibling = flags & SD_ASYM_CPUCAPACITY != 0;

    let mut imbalance_pct = 117;
    let cache_nice_tries;
    if flags & SD_SHARE_CPUCAPACITY != 0 {
        imbalance_pct = 110;
        cache_nice_tries = 0;
    } else if flags & SD_SHARE_LLC != 0 {
        cache_nice_tries = 1;
    } else if flags & SD_NUMA != 0 {
        cache_nice_tries = 2;
        flags &= !SD_PREFER_SIBLING;
        flags |= SD_SERIALIZE;
        if numa.distances[tl.numa_level] > NODE_RECLAIM_DISTANCE {
            flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
        }
    } else {
        cache_nice_tries = 1;
    }
    let sd = BuildSd {
        span,
        flags,
        min_interval: sd_weight,
        max_interval: 2 * sd_weight,
        imbalance_pct,
        cache_nice_tries,
        balance_interval: sd_weight,
        span_weight: 0,
        imb_numa_nr: 0,
        groups: usize::MAX,
    };
    (sd, clear_child_prefer_sibling)
}

/// `for_each_cpu_wrap(i, span, start)`: the span in ascending order starting
/// at `start`, wrapping around to the lower ids.
fn for_each_cpu_wrap(span: &CpuSet, start: usize) -> impl Iterator<Item = usize> + '_ {
    span.iter().filter(move |&i| i >= start).chain(span.iter().filter(move |&i| i < start))
}

/// The build state: `struct s_data` / `sd_data` for every level.
struct Builder {
    /// `*per_cpu_ptr(tl->data.sd, cpu)`: `sds[cpu][tl]`, `None` where the
    /// CPU's chain stopped earlier (the kernel leaves that storage zeroed).
    sds: Vec<Vec<Option<BuildSd>>>,
    groups: Vec<BuildSg>,
    /// Shared non-overlap groups: `per_cpu(sdd->sg, cpu)` keyed by level
    /// and the first CPU of the child span.
    shared: HashMap<(usize, usize), usize>,
}

impl Builder {
    fn sd(&self, cpu: usize, t: usize) -> Option<&BuildSd> {
        self.sds[cpu].get(t).and_then(|s| s.as_ref())
    }

    /// The child of `sds[cpu][t]` before any degeneration: the level below.
    fn child(&self, cpu: usize, t: usize) -> Option<&BuildSd> {
        if t == 0 {
            None
        } else {
            self.sd(cpu, t - 1)
        }
    }

    /// `get_group()`: the shared group for CPU `i` at level `t`, created on
    /// first visit from `i`'s child domain (or `i` alone at the bottom).
    fn get_group(&mut self, i: usize, t: usize) -> usize {
        // A CPU whose chain ended below `t` has a zeroed domain here, hence
        // no child: it then stands for itself.
        let child = if self.sd(i, t).is_some() { self.child(i, t).cloned() } else { None };
        let key = child.as_ref().and_then(|c| c.span.first()).unwrap_or(i);
        if let Some(&g) = self.shared.get(&(t, key)) {
            return g;
        }
        let (span, flags) = match child {
            Some(c) => (c.span, c.flags),
            None => (CpuSet::single(i), 0),
        };
        let g = self.groups.len();
        self.groups.push(BuildSg { span, balance_mask: span, flags, next: g, cores: 0, asym_prefer_cpu: 0 });
        self.shared.insert((t, key), g);
        g
    }

    /// Link `list` into a cycle (writing the `next` pointers, which for
    /// shared groups the last builder wins) and return its head.
    fn link(&mut self, list: &[usize]) -> usize {
        for (k, &g) in list.iter().enumerate() {
            self.groups[g].next = list[(k + 1) % list.len()];
        }
        list[0]
    }

    /// `build_sched_groups()`: walk the span from `cpu` (wrapping) and take
    /// each not yet covered CPU's group.
    fn build_sched_groups(&mut self, cpu: usize, t: usize) -> usize {
        let span = self.sds[cpu][t].as_ref().expect("domain exists").span;
        let mut covered = CpuSet::empty();
        let mut list = Vec::new();
        for i in for_each_cpu_wrap(&span, cpu) {
            if covered.contains(i) {
                continue;
            }
            let g = self.get_group(i, t);
            covered = covered.or(&self.groups[g].span);
            list.push(g);
        }
        self.link(&list)
    }

    /// `find_descended_sibling()`: go down from `sibling` (level `t`) until
    /// its child fits inside `span`, then skip levels equal to their child.
    fn find_descended_sibling(&self, span: &CpuSet, i: usize, mut t: usize) -> usize {
        while let Some(c) = self.child(i, t) {
            if c.span.is_subset(span) {
                break;
            }
            t -= 1;
        }
        while let (Some(c), Some(s)) = (self.child(i, t), self.sd(i, t)) {
            if c.span != s.span {
                break;
            }
            t -= 1;
        }
        t
    }

    /// `build_balance_mask()`: CPUs of the group whose own domain at level
    /// `t` has the group's span as its child.
    fn build_balance_mask(&self, t: usize, sg_span: &CpuSet) -> CpuSet {
        sg_span
            .iter()
            .filter(|&j| self.child(j, t).is_some_and(|c| c.span == *sg_span) && self.sd(j, t).is_some())
            .collect()
    }

    /// `build_overlap_sched_groups()`: per-CPU (unshared) groups for a NUMA
    /// level, each the child span of a not yet covered CPU's own domain.
    fn build_overlap_sched_groups(&mut self, cpu: usize, t: usize) -> usize {
        let span = self.sds[cpu][t].as_ref().expect("domain exists").span;
        let mut covered = CpuSet::empty();
        let mut list = Vec::new();
        for i in for_each_cpu_wrap(&span, cpu) {
            if covered.contains(i) {
                continue;
            }
            // Skip CPUs whose tree stopped below this level.
            if !self.sd(i, t).is_some_and(|s| s.span.contains(i)) {
                continue;
            }
            let mut st = t;
            if self.child(i, t).is_some_and(|c| !c.span.is_subset(&span)) {
                st = self.find_descended_sibling(&span, i, t);
            }
            // build_group_from_child_sched_domain()
            let (sg_span, flags) = match self.child(i, st) {
                Some(c) => (c.span, c.flags),
                None => (self.sd(i, st).expect("sibling exists").span, 0),
            };
            covered = covered.or(&sg_span);
            // init_overlap_sched_group()
            let balance_mask = self.build_balance_mask(st, &sg_span);
            let g = self.groups.len();
            self.groups.push(BuildSg { span: sg_span, balance_mask, flags, next: g, cores: 0, asym_prefer_cpu: 0 });
            list.push(g);
        }
        self.link(&list)
    }

    /// The group list of a domain, head first.
    fn group_list(&self, head: usize) -> Vec<usize> {
        let mut out = vec![head];
        let mut g = self.groups[head].next;
        while g != head && out.len() <= self.groups.len() {
            out.push(g);
            g = self.groups[g].next;
        }
        out
    }

    fn nr_groups_is_one(&self, head: usize) -> bool {
        self.groups[head].next == head
    }
}

/// `sd_degenerate()`: a one-CPU domain, or one whose flags all need two
/// groups while it has one (and it has no `SD_WAKE_AFFINE`).
fn sd_degenerate(b: &Builder, sd: &BuildSd) -> bool {
    if sd.span.len() == 1 {
        return true;
    }
    if sd.flags & SD_DEGENERATE_GROUPS_MASK != 0 && !b.nr_groups_is_one(sd.groups) {
        return false;
    }
    sd.flags & SD_WAKE_AFFINE == 0
}

/// `sd_parent_degenerate()`: the parent adds nothing to `sd`: it is
/// degenerate itself, or it has the same span and no flag `sd` lacks (flags
/// needing groups do not count when the parent has a single group).
fn sd_parent_degenerate(b: &Builder, sd: &BuildSd, parent: &BuildSd) -> bool {
    if sd_degenerate(b, parent) {
        return true;
    }
    if sd.span != parent.span {
        return false;
    }
    let mut pflags = parent.flags;
    if b.nr_groups_is_one(parent.groups) {
        pflags &= !SD_DEGENERATE_GROUPS_MASK;
    }
    pflags & !sd.flags == 0
}

/// `build_sched_domains()` for the whole machine with the 6.12.117 rules,
/// followed by `cpu_attach_domain()` for every CPU.
pub fn build_sched_domains(topo: &Topology) -> SchedDomains {
    build_sched_domains_with(topo, &SchedTopologyOptions::default())
}

/// [`build_sched_domains`] with explicit version knobs.
///
/// Steps, in the kernel's order: per CPU, `build_sched_domain()` for each
/// level until one spans the whole machine (`sd_init()`, the subset fix-up,
/// `SD_OVERLAP` for overlapping levels); then groups for every domain of
/// every CPU (ascending CPU ids, bottom-up); then `imb_numa_nr`; then
/// `init_sched_groups_capacity()`; then `cpu_attach_domain()` per CPU, which
/// removes degenerate levels and fills in the per-CPU shortcuts
/// (`update_top_cache_domain()`).
pub fn build_sched_domains_with(topo: &Topology, opts: &SchedTopologyOptions) -> SchedDomains {
    let nr = topo.nr_cpus();
    let cpu_map = topo.all_cpus();
    let numa = sched_init_numa(topo);
    let levels = x86_levels(topo, opts, &numa);
    let caps = asym_cpu_capacity_scan(topo);
    let mut b = Builder { sds: vec![vec![None; levels.len()]; nr], groups: Vec::new(), shared: HashMap::new() };

    // Set up the per-CPU domain chains.
    let mut has_asym = false;
    for cpu in 0..nr {
        for (t, tl) in levels.iter().enumerate() {
            let mask = tl_mask(topo, &numa, tl, cpu);
            let (mut sd, clear_child) = sd_init(tl, mask, &cpu_map, &caps, &numa);
            if t > 0 {
                let child = b.sds[cpu][t - 1].as_mut().expect("chain is contiguous");
                if clear_child {
                    child.flags &= !SD_PREFER_SIBLING;
                }
                // "arch topology broken": grow the parent to cover the child.
                if !child.span.is_subset(&sd.span) {
                    sd.span = sd.span.or(&child.span);
                }
            }
            has_asym |= sd.flags & SD_ASYM_CPUCAPACITY != 0;
            if tl.overlap {
                sd.flags |= SD_OVERLAP;
            }
            let whole = sd.span == cpu_map;
            b.sds[cpu][t] = Some(sd);
            if whole {
                break;
            }
        }
    }

    // Build the groups.
    for cpu in 0..nr {
        for t in 0..levels.len() {
            let Some(sd) = b.sds[cpu][t].as_mut() else { break };
            sd.span_weight = sd.span.len() as u32;
            let overlap = sd.flags & SD_OVERLAP != 0;
            let head = if overlap { b.build_overlap_sched_groups(cpu, t) } else { b.build_sched_groups(cpu, t) };
            b.sds[cpu][t].as_mut().expect("domain exists").groups = head;
        }
    }

    // imb_numa_nr: how far a NUMA-level imbalance may go before LLCs
    // stack up, set at the first level above the LLC and scaled above.
    for cpu in 0..nr {
        let mut imb = 0u32;
        let mut imb_span = 1u32;
        for t in 0..levels.len() {
            let Some(sd) = b.sd(cpu, t) else { break };
            let (flags, weight) = (sd.flags, sd.span_weight);
            let child = b.child(cpu, t).map(|c| (c.flags, c.span_weight));
            let value = match child {
                Some((cflags, cweight)) if flags & SD_SHARE_LLC == 0 && cflags & SD_SHARE_LLC != 0 => {
                    let nr_llcs = weight / cweight.max(1);
                    imb = if nr_llcs == 1 { weight >> 3 } else { nr_llcs }.max(1);
                    imb_span = (t + 1..levels.len())
                        .map_while(|u| b.sd(cpu, u))
                        .find(|p| p.flags & SD_NUMA != 0)
                        .map(|p| p.span_weight)
                        .unwrap_or(weight);
                    imb
                }
                _ => imb * (weight / imb_span.max(1)).max(1),
            };
            b.sds[cpu][t].as_mut().expect("domain exists").imb_numa_nr = value;
        }
    }

    // init_sched_groups_capacity(): weight, cores, asym_prefer_cpu. Shared
    // groups get the same values from every CPU, so once each suffices.
    for g in 0..b.groups.len() {
        let span = b.groups[g].span;
        let mut left = span;
        let mut cores = 0;
        while let Some(c) = left.first() {
            cores += 1;
            for s in topo.smt_mask(c).iter() {
                left.remove(s);
            }
        }
        let mut best: Option<usize> = None;
        for c in span.iter() {
            best = match best {
                Some(m) if !sched_asym_prefer(topo, c, m) => Some(m),
                _ => Some(c),
            };
        }
        b.groups[g].cores = cores;
        b.groups[g].asym_prefer_cpu = best.unwrap_or(0);
    }

    // cpu_attach_domain() for each CPU.
    let mut chains: Vec<Vec<usize>> = Vec::with_capacity(nr);
    for cpu in 0..nr {
        let mut chain: Vec<usize> = (0..levels.len()).take_while(|&t| b.sds[cpu][t].is_some()).collect();
        let mut k = 0;
        while k + 1 < chain.len() {
            let (t, p) = (chain[k], chain[k + 1]);
            let (sd, parent) = (b.sds[cpu][t].as_ref().unwrap(), b.sds[cpu][p].as_ref().unwrap());
            if sd_parent_degenerate(&b, sd, parent) {
                let parent_flags = parent.flags;
                let child_flags = sd.flags;
                chain.remove(k + 1);
                if let Some(&gp) = chain.get(k + 1) {
                    // The grandparent's first group now stands for `sd`.
                    let head = b.sds[cpu][gp].as_ref().unwrap().groups;
                    b.groups[head].flags = child_flags;
                }
                if parent_flags & SD_PREFER_SIBLING != 0 {
                    b.sds[cpu][t].as_mut().unwrap().flags |= SD_PREFER_SIBLING;
                }
            } else {
                k += 1;
            }
        }
        if let Some(&bottom) = chain.first() {
            if sd_degenerate(&b, b.sds[cpu][bottom].as_ref().unwrap()) {
                chain.remove(0);
                if let Some(&p) = chain.first() {
                    // The child is gone: its flags no longer describe the group.
                    let head = b.sds[cpu][p].as_ref().unwrap().groups;
                    b.groups[head].flags = 0;
                }
            }
        }
        chains.push(chain);
    }

    // Export, then update_top_cache_domain() per CPU.
    let mut cpus = Vec::with_capacity(nr);
    let mut sched_cluster_active = false;
    for (cpu, chain) in chains.iter().enumerate() {
        let domains: Vec<SchedDomain> = chain
            .iter()
            .map(|&t| {
                let sd = b.sds[cpu][t].as_ref().unwrap();
                SchedDomain {
                    level: levels[t].level,
                    name: levels[t].level.name(),
                    span: sd.span,
                    span_weight: sd.span_weight,
                    flags: sd.flags,
                    min_interval: sd.min_interval,
                    max_interval: sd.max_interval,
                    busy_factor: 16,
                    imbalance_pct: sd.imbalance_pct,
                    cache_nice_tries: sd.cache_nice_tries,
                    balance_interval: sd.balance_interval,
                    imb_numa_nr: sd.imb_numa_nr,
                    newidle_call: NEWIDLE_CALL_INIT,
                    newidle_success: NEWIDLE_SUCCESS_INIT,
                    newidle_ratio: NEWIDLE_RATIO_INIT,
                    groups: b.group_list(sd.groups).into_iter().map(|g| export_group(topo, &b.groups[g], g)).collect(),
                }
            })
            .collect();
        let c = update_top_cache_domain(cpu, domains);
        sched_cluster_active |= c.domains.iter().any(|sd| sd.has(SD_CLUSTER));
        cpus.push(c);
    }

    SchedDomains {
        cpus,
        levels,
        numa_distances: numa.distances,
        sched_asym_cpucapacity: has_asym,
        sched_cluster_active,
    }
}

fn export_group(topo: &Topology, sg: &BuildSg, id: usize) -> SchedGroup {
    let caps: Vec<u64> = sg.span.iter().map(|c| topo.cpus[c].capacity as u64).collect();
    SchedGroup {
        id,
        span: sg.span,
        balance_mask: sg.balance_mask,
        weight: sg.span.len() as u32,
        cores: sg.cores,
        flags: sg.flags,
        capacity: caps.iter().sum(),
        min_capacity: caps.iter().copied().min().unwrap_or(0),
        max_capacity: caps.iter().copied().max().unwrap_or(0),
        asym_prefer_cpu: sg.asym_prefer_cpu,
    }
}

/// `update_top_cache_domain()`: cache the interesting domains of one CPU.
fn update_top_cache_domain(cpu: usize, domains: Vec<SchedDomain>) -> CpuDomains {
    let flags = || domains.iter().map(|sd| sd.flags);
    let sd_llc = highest_flag_domain(flags(), SD_SHARE_LLC);
    let (sd_llc_id, sd_llc_size) = match sd_llc {
        Some(k) => (domains[k].span.first().unwrap_or(cpu), domains[k].span_weight),
        None => (cpu, 1),
    };
    let sd_share_id =
        lowest_flag_domain(flags(), SD_CLUSTER).and_then(|k| domains[k].span.first()).unwrap_or(sd_llc_id);
    CpuDomains {
        cpu,
        sd_llc,
        sd_llc_size,
        sd_llc_id,
        sd_share_id,
        sd_numa: lowest_flag_domain(flags(), SD_NUMA),
        sd_asym_packing: highest_flag_domain(flags(), SD_ASYM_PACKING),
        sd_asym_cpucapacity: lowest_flag_domain(flags(), SD_ASYM_CPUCAPACITY_FULL),
        domains,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_flag_domain_stops_at_a_gap_only_for_child_shared_flags() {
        // SHARE_LLC is shared with children: a gap ends the walk.
        let chain = [SD_SHARE_LLC, 0, SD_SHARE_LLC];
        assert_eq!(highest_flag_domain(chain.into_iter(), SD_SHARE_LLC), Some(0));
        // ASYM_PACKING is not: the walk goes on to the top.
        let chain = [SD_ASYM_PACKING, 0, SD_ASYM_PACKING];
        assert_eq!(highest_flag_domain(chain.into_iter(), SD_ASYM_PACKING), Some(2));
        assert_eq!(lowest_flag_domain([0, SD_NUMA, SD_NUMA].into_iter(), SD_NUMA), Some(1));
        assert_eq!(lowest_flag_domain([0, 0].into_iter(), SD_NUMA), None);
    }

    #[test]
    fn capacity_classification() {
        let caps = vec![(1024, CpuSet::single(0)), (512, CpuSet::single(1)), (256, CpuSet::single(2))];
        let all = CpuSet::first_n(3);
        assert_eq!(asym_cpu_capacity_classify(&CpuSet::single(0), &all, &caps), 0);
        assert_eq!(asym_cpu_capacity_classify(&CpuSet::first_n(2), &all, &caps), SD_ASYM_CPUCAPACITY);
        assert_eq!(asym_cpu_capacity_classify(&all, &all, &caps), SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL);
        assert_eq!(asym_cpu_capacity_classify(&all, &all, &[]), 0);
    }
}
