//! The topology table: the rows of `struct sched_domain_topology_level[]`
//! that x86's `build_sched_topology()` (arch/x86/kernel/smpboot.c) sets up,
//! the NUMA levels `sched_init_numa()` appends, and the per-level
//! `sd_flags()` callbacks (`cpu_smt_flags()`, `cpu_core_flags()`,
//! `x86_sched_itmt_flags()`, ...), with the synthetic [`node_distance`].
//!
//! Simplified as the rest of [`crate::topology`]: no L2 information (CLS is the
//! core), no SLIT (distances synthesised), no `topology_span_sane()` check.

use super::sd_flags::*;
use super::{
    DomainLevel, SchedDomainTopologyLevel, SchedTopologyOptions, CROSS_PACKAGE_DISTANCE, LOCAL_DISTANCE,
    SAME_PACKAGE_DISTANCE,
};
use schedlab_topology::{CpuSet, Topology};
use std::collections::HashMap;

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
pub(super) struct NumaTables {
    pub(super) distances: Vec<u32>,
    pub(super) masks: Vec<Vec<CpuSet>>,
}

/// `sched_init_numa()`: the distinct distances in the node table, one level
/// per distance, and per level and node the CPUs of all nodes at most that
/// far away.
pub(super) fn sched_init_numa(topo: &Topology) -> NumaTables {
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

pub(super) fn x86_levels(
    topo: &Topology,
    opts: &SchedTopologyOptions,
    numa: &NumaTables,
) -> Vec<SchedDomainTopologyLevel> {
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
pub(super) fn tl_mask(topo: &Topology, numa: &NumaTables, tl: &SchedDomainTopologyLevel, cpu: usize) -> CpuSet {
    match tl.level {
        // No L2 ids in the model: a cluster is the core.
        DomainLevel::Smt | DomainLevel::Cls => topo.smt_mask(cpu),
        DomainLevel::Mc => topo.llc_mask(cpu),
        // cpu_cpu_mask() is the node's mask on a NUMA kernel.
        DomainLevel::Pkg => topo.node_mask(cpu),
        DomainLevel::Node | DomainLevel::Numa(_) => numa.masks[tl.numa_level][topo.cpus[cpu].node],
    }
}
