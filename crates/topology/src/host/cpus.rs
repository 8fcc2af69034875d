//! The CPU topology under /sys/devices/system/cpu and /sys/devices/system/node.
//!
//! Each online CPU's SMT siblings come from `topology/thread_siblings_list`,
//! its package from `topology/physical_package_id`, its LLC from the
//! highest-level data or unified cache in `cache/index*/` (the CPUs in its
//! `shared_cpu_list`), its NUMA node from the `nodeN/cpulist` that names it.
//! Groups are renumbered densely in CPU order, as the model wants them.

use std::collections::BTreeMap;

use super::{Fs, HostError};
use crate::{parse_cpulist, CpuSet, MAX_CPUS};

const CPU: &str = "sys/devices/system/cpu";
const NODE: &str = "sys/devices/system/node";

/// One online CPU as the model will see it.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCpu {
    /// The kernel's number (`cpuN`).
    pub sysfs_id: usize,
    /// Dense group indices, in order of first appearance.
    pub core: usize,
    pub llc: usize,
    pub package: usize,
    pub node: usize,
    /// `cpuN/cpu_capacity` (arch_scale_cpu_capacity), where the kernel has it.
    pub capacity: Option<u32>,
    /// The ITMT / prefcore priority source's value, where there is one.
    pub prio: Option<i64>,
    /// Intel hybrid core type, `"core"` (P) or `"atom"` (E), from the
    /// hybrid PMUs' `cpus` lists; `None` on other machines.
    pub core_type: Option<&'static str>,
}

pub(crate) struct CpuTopology {
    pub cpus: Vec<HostCpu>,
    pub offline: Vec<usize>,
    pub capacity_source: Option<String>,
    pub prio_source: Option<String>,
    pub core_type_source: Option<String>,
}

/// The hybrid PMUs Intel hybrid parts register (since 5.13), one per core
/// type, each listing its CPUs.
const HYBRID_PMUS: [(&str, &str); 2] = [("sys/devices/cpu_core/cpus", "core"), ("sys/devices/cpu_atom/cpus", "atom")];

/// Each online CPU's Intel hybrid core type, when the machine has the
/// hybrid PMUs; with its source.
fn core_types(
    fs: &Fs,
    possible: &CpuSet,
    online: &CpuSet,
) -> Result<(BTreeMap<usize, &'static str>, Option<String>), HostError> {
    if !HYBRID_PMUS.iter().all(|(rel, _)| fs.exists(rel)) {
        return Ok((BTreeMap::new(), None));
    }
    let mut map = BTreeMap::new();
    for (rel, ty) in HYBRID_PMUS {
        for cpu in cpulist(fs, rel, possible, online)?.iter() {
            if map.insert(cpu, ty).is_some() {
                return Err(fs.bad(rel, format!("CPU {cpu} is also in the other hybrid PMU's list")));
            }
        }
    }
    Ok((map, Some(HYBRID_PMUS.iter().map(|(rel, _)| format!("/{rel}")).collect::<Vec<_>>().join(", "))))
}

/// A cpulist file, checked against the CPUs the kernel can have: a CPU
/// beyond `possible` is an error naming the file; offline ones are dropped.
fn cpulist(fs: &Fs, rel: &str, possible: &CpuSet, online: &CpuSet) -> Result<CpuSet, HostError> {
    let text = fs.read(rel)?;
    let set = parse_cpulist(text.trim()).map_err(|e| fs.bad(rel, format!("bad cpulist `{}`: {e}", text.trim())))?;
    if let Some(beyond) = set.iter().find(|c| !possible.contains(*c)) {
        return Err(
            fs.bad(rel, format!("names CPU {beyond}, which /{CPU}/possible ({}) does not have", possible.to_cpulist()))
        );
    }
    Ok(set.and(online))
}

pub(crate) fn read(fs: &Fs, notes: &mut Vec<String>) -> Result<CpuTopology, HostError> {
    let online_rel = format!("{CPU}/online");
    let online_text = fs.read(&online_rel)?;
    let online = parse_cpulist(online_text.trim())
        .map_err(|e| fs.bad(&online_rel, format!("bad cpulist `{}`: {e}", online_text.trim())))?;
    // `possible` bounds every cpulist; without it, `present`, else `online`.
    let mut possible = online;
    for name in ["possible", "present"] {
        let rel = format!("{CPU}/{name}");
        if let Some(t) = fs.read_opt(&rel)? {
            possible = parse_cpulist(t.trim()).map_err(|e| fs.bad(&rel, format!("bad cpulist `{}`: {e}", t.trim())))?;
            break;
        }
    }
    if !online.is_subset(&possible) {
        return Err(fs.bad(&online_rel, format!("lists CPUs beyond /{CPU}/possible ({})", possible.to_cpulist())));
    }
    // A cpuN directory the kernel does not count as possible: sysfs
    // contradicts itself, and guessing which side is right would be wrong.
    for (n, name) in fs.numbered(CPU, "cpu")? {
        if n >= MAX_CPUS || !possible.contains(n) {
            return Err(fs.bad(
                &format!("{CPU}/{name}"),
                format!("CPU {n} has a directory but /{CPU}/possible is {}", possible.to_cpulist()),
            ));
        }
    }
    let offline: Vec<usize> = possible.iter().filter(|c| !online.contains(*c)).collect();
    if !offline.is_empty() {
        notes.push(format!(
            "CPUs {} are offline (/{CPU}/online is {}): left out, and the model numbers the online CPUs densely",
            CpuSet::from_iter(offline.iter().copied()).to_cpulist(),
            online.to_cpulist()
        ));
    }

    let nodes = node_map(fs, &possible, &online, notes)?;
    let mut core_of = Dense::default();
    let mut llc_of = Dense::default();
    let mut pkg_of = Dense::default();
    let mut node_of = Dense::default();
    let mut cpus = Vec::new();
    let mut llc_assumed = false;
    for cpu in online.iter() {
        let dir = format!("{CPU}/cpu{cpu}");
        if !fs.exists(&dir) {
            return Err(fs.bad(&dir, format!("missing, but /{CPU}/online lists CPU {cpu}")));
        }
        let siblings = cpulist(fs, &format!("{dir}/topology/thread_siblings_list"), &possible, &online)?;
        let package = fs.int(&format!("{dir}/topology/physical_package_id"))?;
        // die_id exists since 5.x; it is informative (the LLC is what the
        // model's MC domain follows), so a missing one is no error.
        let _die = fs.int_opt(&format!("{dir}/topology/die_id"))?;
        let _core_id = fs.int(&format!("{dir}/topology/core_id"))?;
        let llc_span = match llc(fs, &dir, &possible, &online)? {
            Some(s) => s,
            None => {
                llc_assumed = true;
                CpuSet::empty()
            }
        };
        let node = nodes.get(&cpu).copied().unwrap_or(0);
        let capacity = fs.int_opt(&format!("{dir}/cpu_capacity"))?;
        let capacity = match capacity {
            Some(c) if !(1..=1024).contains(&c) => {
                return Err(fs.bad(&format!("{dir}/cpu_capacity"), format!("capacity {c} is outside 1..=1024")))
            }
            c => c.map(|c| c as u32),
        };
        cpus.push((cpu, siblings, package, llc_span, node, capacity));
    }
    if llc_assumed {
        notes.push(format!(
            "no cache/index*/ under /{CPU}/cpuN: the LLC is assumed to be the package (one LLC per socket)"
        ));
    }
    let (prio, prio_source) = priorities(fs, &online)?;
    let (types, core_type_source) = core_types(fs, &possible, &online)?;
    let mut out = Vec::new();
    for (cpu, siblings, package, llc_span, node, capacity) in cpus {
        let core_key = siblings.first().unwrap_or(cpu);
        let llc_key = if llc_span.is_empty() { (1, package as usize) } else { (0, llc_span.first().unwrap_or(cpu)) };
        out.push(HostCpu {
            sysfs_id: cpu,
            core: core_of.get(core_key),
            llc: llc_of.get(llc_key),
            package: pkg_of.get(package),
            node: node_of.get(node),
            capacity,
            prio: prio.get(&cpu).copied(),
            core_type: types.get(&cpu).copied(),
        });
    }
    let capacity_source = out.iter().any(|c| c.capacity.is_some()).then(|| format!("/{CPU}/cpuN/cpu_capacity"));
    Ok(CpuTopology { cpus: out, offline, capacity_source, prio_source, core_type_source })
}

/// The LLC of one CPU: the highest cache level that holds data.
fn llc(fs: &Fs, dir: &str, possible: &CpuSet, online: &CpuSet) -> Result<Option<CpuSet>, HostError> {
    let cache = format!("{dir}/cache");
    let mut best: Option<(i64, CpuSet)> = None;
    for (_, name) in fs.numbered(&cache, "index")? {
        let idx = format!("{cache}/{name}");
        let ty = fs.read(&format!("{idx}/type"))?;
        if ty.trim() == "Instruction" {
            continue;
        }
        let level = fs.int(&format!("{idx}/level"))?;
        if best.as_ref().is_none_or(|(l, _)| level > *l) {
            best = Some((level, cpulist(fs, &format!("{idx}/shared_cpu_list"), possible, online)?));
        }
    }
    Ok(best.map(|(_, s)| s))
}

/// CPU → NUMA node from nodeN/cpulist; no node directory means one node.
fn node_map(
    fs: &Fs,
    possible: &CpuSet,
    online: &CpuSet,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<usize, usize>, HostError> {
    let mut map = BTreeMap::new();
    let nodes = fs.numbered(NODE, "node")?;
    if nodes.is_empty() {
        notes.push(format!("no /{NODE}/nodeN: one NUMA node assumed (a kernel without CONFIG_NUMA)"));
    }
    for (n, name) in nodes {
        let rel = format!("{NODE}/{name}/cpulist");
        for cpu in cpulist(fs, &rel, possible, online)?.iter() {
            if let Some(prev) = map.insert(cpu, n) {
                return Err(fs.bad(&rel, format!("CPU {cpu} is also in node {prev}")));
            }
        }
    }
    Ok(map)
}

/// ITMT priorities: amd-pstate's prefcore ranking, else ACPI CPPC's
/// highest_perf (what intel/amd pass to sched_set_itmt_core_prio()).
fn priorities(fs: &Fs, online: &CpuSet) -> Result<(BTreeMap<usize, i64>, Option<String>), HostError> {
    for (file, shown) in [
        ("cpufreq/amd_pstate_prefcore_ranking", "cpuN/cpufreq/amd_pstate_prefcore_ranking"),
        ("acpi_cppc/highest_perf", "cpuN/acpi_cppc/highest_perf"),
    ] {
        let mut map = BTreeMap::new();
        for cpu in online.iter() {
            if let Some(v) = fs.int_opt(&format!("{CPU}/cpu{cpu}/{file}"))? {
                map.insert(cpu, v);
            }
        }
        if !map.is_empty() {
            return Ok((map, Some(format!("/{CPU}/{shown}"))));
        }
    }
    Ok((BTreeMap::new(), None))
}

/// Dense renumbering in order of first appearance.
struct Dense<K: Ord> {
    map: BTreeMap<K, usize>,
}

impl<K: Ord> Default for Dense<K> {
    fn default() -> Self {
        Dense { map: BTreeMap::new() }
    }
}

impl<K: Ord> Dense<K> {
    fn get(&mut self, key: K) -> usize {
        let next = self.map.len();
        *self.map.entry(key).or_insert(next)
    }
}
