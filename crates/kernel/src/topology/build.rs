//! Building the sched domains (`kernel/sched/topology.c`):
//! [`build_sched_domains`] with `build_sched_domain()`, `sd_init()`,
//! `asym_cpu_capacity_scan()` / `asym_cpu_capacity_classify()`,
//! `build_sched_groups()` / `build_overlap_sched_groups()` (with
//! `find_descended_sibling()` and `build_balance_mask()`),
//! `init_sched_groups_capacity()`, `sd_degenerate()` /
//! `sd_parent_degenerate()`, and `cpu_attach_domain()` with
//! `update_top_cache_domain()`.
//!
//! Simplified as the rest of [`crate::topology`]: the spans are fixed at
//! boot (cpuset partitions of the scenario, no hotplug, no rebuilds), group
//! capacity fixed at build time, no `set_domain_attribute()`;
//! `sd->shared` is left to the caller.

use super::levels::{sched_init_numa, tl_mask, x86_levels, NumaTables};
use super::sd_flags::*;
use super::{
    highest_flag_domain, lowest_flag_domain, sched_asym_prefer, CpuDomains, SchedDomain, SchedDomainTopologyLevel,
    SchedDomains, SchedGroup, SchedTopologyOptions, NEWIDLE_CALL_INIT, NEWIDLE_RATIO_INIT, NEWIDLE_SUCCESS_INIT,
    NODE_RECLAIM_DISTANCE,
};
use schedlab_topology::{CpuSet, Topology};
use std::collections::HashMap;

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
        for i in span.iter_wrap(cpu) {
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
        for i in span.iter_wrap(cpu) {
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
pub fn build_sched_domains_with(topo: &Topology, opts: &SchedTopologyOptions) -> SchedDomains {
    build_sched_domains_partitioned(topo, opts, &[topo.all_cpus()])
}

/// `partition_sched_domains()` with the spans cpuset hands it (`doms`,
/// disjoint): each CPU's domains are built within its own span's CPUs
/// (`build_sched_domains(doms[i])`), a CPU of no span gets none (it is
/// attached to the NULL domain: an isolated partition).
///
/// Steps, in the kernel's order: per CPU, `build_sched_domain()` for each
/// level until one spans the whole machine (`sd_init()`, the subset fix-up,
/// `SD_OVERLAP` for overlapping levels); then groups for every domain of
/// every CPU (ascending CPU ids, bottom-up); then `imb_numa_nr`; then
/// `init_sched_groups_capacity()`; then `cpu_attach_domain()` per CPU, which
/// removes degenerate levels and fills in the per-CPU shortcuts
/// (`update_top_cache_domain()`).
pub fn build_sched_domains_partitioned(topo: &Topology, opts: &SchedTopologyOptions, doms: &[CpuSet]) -> SchedDomains {
    let nr = topo.nr_cpus();
    let numa = sched_init_numa(topo);
    let levels = x86_levels(topo, opts, &numa);
    let caps = asym_cpu_capacity_scan(topo);
    let mut b = Builder { sds: vec![vec![None; levels.len()]; nr], groups: Vec::new(), shared: HashMap::new() };

    // Set up the per-CPU domain chains.
    let mut has_asym = false;
    for cpu in 0..nr {
        let Some(cpu_map) = doms.iter().find(|d| d.contains(cpu)).copied() else { continue };
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
        span_words: sg.span.word_span(),
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
    fn capacity_classification() {
        let caps = vec![(1024, CpuSet::single(0)), (512, CpuSet::single(1)), (256, CpuSet::single(2))];
        let all = CpuSet::first_n(3);
        assert_eq!(asym_cpu_capacity_classify(&CpuSet::single(0), &all, &caps), 0);
        assert_eq!(asym_cpu_capacity_classify(&CpuSet::first_n(2), &all, &caps), SD_ASYM_CPUCAPACITY);
        assert_eq!(asym_cpu_capacity_classify(&all, &all, &caps), SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL);
        assert_eq!(asym_cpu_capacity_classify(&all, &all, &[]), 0);
    }
}
