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
//! Laid out in pieces: this file holds the data structures (`struct
//! sched_domain`, `struct sched_group`, the per-CPU shortcuts) with their
//! readers (`highest_flag_domain()`, `lowest_flag_domain()`,
//! `cpus_share_cache()`, `sched_domain_debug()`, ...); [`sd_flags`] the `SD_*`
//! flags (sd_flags.h); `levels` the topology table (x86
//! `build_sched_topology()`, `sched_init_numa()`, the `sd_flags()` callbacks,
//! [`node_distance`]); `build` the construction itself
//! ([`build_sched_domains`], `sd_init()`, group building, degeneration,
//! `cpu_attach_domain()`).
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
//! - All CPUs are online and the spans are fixed at boot: the whole machine,
//!   or the cpuset partitions a scenario declares
//!   ([`build_sched_domains_partitioned`]); nothing is rebuilt mid-run.
//! - A group's capacity here is its boot value, the sum of
//!   `arch_scale_cpu_capacity()`; the balancer lowers it at run time
//!   ([`crate::fair::capacity`]).
//! - `topology_span_sane()` is not checked: every level's mask here is a
//!   partition of the CPUs (core, LLC, node and package ids), so it always holds.
//! - `set_domain_attribute()` (relax_domain_level) is a no-op with its default
//!   and is left out; `sd->shared` (`sched_domain_shared`) is runtime state
//!   and is left to the caller.

use schedlab_topology::{CpuSet, Topology};
use std::fmt::Write as _;

/// The `SD_*` sched-domain flags, values as the 6.12 enum built from
/// `include/linux/sched/sd_flags.h` gives them (bit n for the n-th entry).
pub mod sd_flags;

mod build;
pub mod intel_pstate;
pub mod itmt;
mod levels;
pub mod perf_domains;

pub use build::{build_sched_domains, build_sched_domains_partitioned, build_sched_domains_with};
pub use levels::{
    cpu_cluster_flags, cpu_core_flags, cpu_numa_flags, cpu_smt_flags, node_distance, x86_cluster_flags, x86_core_flags,
    x86_has_numa_in_package, x86_sched_itmt_flags, x86_sched_topology,
};

use sd_flags::*;

/// One cpuset partition root (`cpuset.cpus.partition` = `root` or
/// `isolated`): its CPUs leave the root domain of the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub cpus: CpuSet,
    /// `isolated`: no sched domains, so no load balancing (`on_null_domain()`).
    pub isolated: bool,
}

/// The spans `partition_sched_domains()` is handed for `partitions`
/// (`generate_sched_domains()` of cpuset.c, 6.12): the CPUs no partition
/// took, when any are left, then each `root` partition's; `isolated` ones
/// get none, so their CPUs attach to no domain.
pub fn sched_domain_spans(topo: &Topology, partitions: &[Partition]) -> Vec<CpuSet> {
    let mut rest = topo.all_cpus();
    for p in partitions {
        rest = rest.and_not(&p.cpus);
    }
    let mut doms = Vec::with_capacity(partitions.len() + 1);
    if !rest.is_empty() {
        doms.push(rest);
    }
    doms.extend(partitions.iter().filter(|p| !p.isolated).map(|p| p.cpus));
    doms
}

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
    /// `span.word_span()`: the balancer's per-group loops read only these
    /// words of the masks ([`CpuSet::iter_and_in`]).
    pub span_words: (usize, usize),
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
    /// `sgc->capacity` as `init_sched_groups_capacity()` sets it at build:
    /// the sum of the CPUs' capacities (the run-time value, lowered by RT
    /// and DL time, is in the kernel's `sgc` table).
    pub capacity: u64,
    /// `sgc->min_capacity` at build.
    pub min_capacity: u64,
    /// `sgc->max_capacity` at build.
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
}
