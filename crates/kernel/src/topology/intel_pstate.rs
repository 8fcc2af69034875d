//! What `drivers/cpufreq/intel_pstate.c` sets up for the scheduler at boot
//! from the per-CPU HWP highest performance (`[hwp_highest_perf]` in the
//! topology): ITMT priorities, and on hybrid parts (`[core_type]`) the
//! choice between asym packing and asymmetric CPU capacity, as the kernel
//! profile's version makes it.
//!
//! * `intel_pstate_set_itmt_prio()`: each CPU's CPPC highest performance
//!   (the HWP value when CPPC reports 0xff) goes to
//!   `sched_set_itmt_core_prio()` ([`super::itmt`]); ITMT support is
//!   switched on (`sched_set_itmt_support()`, which sets
//!   `sysctl_sched_itmt_enabled`) once two CPUs' values differ. The
//!   topology's `itmt_enabled` stands for the sysctl as left by the admin
//!   (or a sweep's `itmt`).
//! * `hybrid_init_cpu_capacity_scaling()` (6.12+, [`HybridCapacity`]): on a
//!   hybrid part without SMT, every CPU's capacity becomes
//!   `arch_set_cpu_capacity(perf, max perf)`, i.e. `(perf << 10) / max`,
//!   `perf` being the HWP highest performance (`hybrid_get_capacity_perf()`
//!   with turbo on), and `sched_clear_itmt_support()` turns asym packing
//!   off: the sched domains get `SD_ASYM_CPUCAPACITY` instead, with misfit
//!   balancing and capacity-aware wakeups.
//!
//! Simplified / not modeled: the CPPC-vs-HWP choice (the file gives one
//! value per CPU, taken to be both); `no_turbo` (capacities from the
//! guaranteed performance); CPUs going online later
//! (`hybrid_update_capacity()`); `nosmt` on an SMT part (6.12.0's
//! `sched_smt_active()` would then allow capacity scaling, Debian 6.12.117's
//! and later kernels' `cpu_smt_possible()` only with `nosmt=force`); the
//! frequency-invariance ratio `arch_set_cpu_capacity()` also sets
//! (intel_pstate is not modeled as a cpufreq driver); 6.16's energy model for hybrid parts (7b010f9b9061),
//! which EAS uses only under the schedutil governor, i.e. intel_pstate in
//! passive mode, not its default active mode (docs/topology-file.md).

use super::itmt::sched_set_itmt_core_prio;
use crate::pelt::SCHED_CAPACITY_SHIFT;
use crate::profile::{HybridCapacity, Profile};
use schedlab_topology::Topology;

/// How the scheduler treats a machine's CPU differences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HybridRegime {
    /// No `[hwp_highest_perf]`: the topology's own priorities and capacities.
    Plain,
    /// ITMT priorities from HWP highest performance, capacity 1024
    /// everywhere: asym packing (while `sched_itmt_enabled`).
    AsymPacking,
    /// A hybrid part under 6.12+ without SMT: capacities from HWP highest
    /// performance, ITMT cleared.
    AsymCapacity,
}

/// Which regime `profile` runs `topo` in (the condition of
/// `hybrid_init_cpu_capacity_scaling()`: `hwp_is_hybrid`, no SMT, and a
/// kernel that has the code).
pub fn hybrid_regime(topo: &Topology, profile: &Profile) -> HybridRegime {
    if topo.cpus.iter().all(|c| c.hwp_highest_perf.is_none()) {
        return HybridRegime::Plain;
    }
    match profile.hybrid_capacity {
        HybridCapacity::WithoutSmt if topo.is_hybrid() && !topo.has_smt() => HybridRegime::AsymCapacity,
        _ => HybridRegime::AsymPacking,
    }
}

/// `arch_set_cpu_capacity()` (arch/x86/kernel/cpu/aperfmperf.c): the
/// capacity of a CPU whose performance is `cap` when the fastest's is
/// `max_cap`, `(cap << SCHED_CAPACITY_SHIFT) / max_cap` in integers.
pub fn arch_set_cpu_capacity(cap: u32, max_cap: u32) -> u32 {
    ((u64::from(cap) << SCHED_CAPACITY_SHIFT) / u64::from(max_cap.max(1))) as u32
}

/// `hybrid_update_cpu_capacity_scaling()` at boot: the CPU of largest
/// highest performance is `hybrid_max_perf_cpu`, every CPU's capacity is
/// scaled to it (`hybrid_set_cpu_capacity()`).
pub fn hybrid_cpu_capacities(topo: &Topology) -> Vec<u32> {
    let max = topo.cpus.iter().filter_map(|c| c.hwp_highest_perf).max().unwrap_or(1);
    topo.cpus.iter().map(|c| arch_set_cpu_capacity(c.hwp_highest_perf.unwrap_or(max), max)).collect()
}

/// The topology as the scheduler sees it once intel_pstate has registered
/// (`intel_pstate_register_driver()`: each policy's
/// `intel_pstate_init_acpi_perf_limits()` -> `intel_pstate_set_itmt_prio()`,
/// then `hybrid_init_cpu_capacity_scaling()`). A topology without
/// `[hwp_highest_perf]` comes back unchanged.
pub fn intel_pstate_init(mut topo: Topology, profile: &Profile) -> Topology {
    let regime = hybrid_regime(&topo, profile);
    if regime == HybridRegime::Plain {
        return topo;
    }
    let mut prios = vec![0; topo.nr_cpus()];
    for cpu in 0..topo.nr_cpus() {
        let perf = topo.cpus[cpu].hwp_highest_perf.unwrap_or(0) as i32;
        sched_set_itmt_core_prio(profile.itmt_smt_prio, &topo, perf, cpu, &mut prios);
    }
    let perfs = || topo.cpus.iter().filter_map(|c| c.hwp_highest_perf);
    let itmt_capable = perfs().max() > perfs().min();
    let capacities = (regime == HybridRegime::AsymCapacity).then(|| hybrid_cpu_capacities(&topo));
    for (cpu, c) in topo.cpus.iter_mut().enumerate() {
        c.asym_prio = prios[cpu];
        if let Some(caps) = &capacities {
            c.capacity = caps[cpu];
        }
    }
    topo.itmt_enabled = topo.itmt_enabled && itmt_capable && regime == HybridRegime::AsymPacking;
    topo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two P-cores and two E-cores; `smt` gives the P-cores two threads.
    fn part(smt: bool) -> Topology {
        let text = if smt {
            "hz = 1000\npreempt = \"full\"\nitmt_enabled = true\n\
             [[cpus]]\nid = 0\ncore = 0\nllc = 0\n[[cpus]]\nid = 1\ncore = 0\nllc = 0\n\
             [[cpus]]\nid = 2\ncore = 1\nllc = 0\n[[cpus]]\nid = 3\ncore = 1\nllc = 0\n\
             [[cpus]]\nid = 4\ncore = 2\nllc = 0\n[[cpus]]\nid = 5\ncore = 3\nllc = 0\n\
             [hwp_highest_perf]\n\"0-1\" = 72\n\"2-3\" = 69\n\"4-5\" = 46\n\
             [core_type]\n\"0-3\" = \"core\"\n\"4-5\" = \"atom\"\n"
        } else {
            "hz = 1000\npreempt = \"full\"\nitmt_enabled = true\n[layout]\ncores_per_llc = 4\n\
             [hwp_highest_perf]\n\"0\" = 72\n\"1\" = 69\n\"2-3\" = 46\n\
             [core_type]\n\"0-1\" = \"core\"\n\"2-3\" = \"atom\"\n"
        };
        Topology::from_toml_str("p.toml", text).unwrap()
    }

    fn profile(name: &str) -> Profile {
        Profile::by_name(name).unwrap()
    }

    /// By hand: (72 << 10) / 72 = 1024, (69 << 10) / 72 = 70656 / 72 =
    /// 981.33 -> 981, (46 << 10) / 72 = 47104 / 72 = 654.2 -> 654.
    #[test]
    fn capacity_formula() {
        assert_eq!(arch_set_cpu_capacity(72, 72), 1024);
        assert_eq!(arch_set_cpu_capacity(69, 72), 981);
        assert_eq!(arch_set_cpu_capacity(46, 72), 654);
        assert_eq!(hybrid_cpu_capacities(&part(false)), vec![1024, 981, 654, 654]);
    }

    /// 6.12+ without SMT: capacities, ITMT cleared; with SMT, or before
    /// 6.12: ITMT priorities, capacity 1024 everywhere.
    #[test]
    fn regime_by_smt_and_version() {
        let t = intel_pstate_init(part(false), &profile("6.12"));
        assert_eq!(hybrid_regime(&part(false), &profile("6.12")), HybridRegime::AsymCapacity);
        assert_eq!(t.cpus.iter().map(|c| c.capacity).collect::<Vec<_>>(), vec![1024, 981, 654, 654]);
        assert!(!t.itmt_enabled);
        assert_eq!(hybrid_regime(&part(false), &profile("mainline")), HybridRegime::AsymCapacity);

        let t = intel_pstate_init(part(false), &profile("6.9"));
        assert_eq!(hybrid_regime(&part(false), &profile("6.9")), HybridRegime::AsymPacking);
        assert!(t.cpus.iter().all(|c| c.capacity == 1024));
        assert!(t.itmt_enabled);
        assert_eq!(t.cpus.iter().map(|c| c.asym_prio).collect::<Vec<_>>(), vec![72, 69, 46, 46]);

        for p in ["6.12", "mainline", "6.9"] {
            let t = intel_pstate_init(part(true), &profile(p));
            assert_eq!(hybrid_regime(&part(true), &profile(p)), HybridRegime::AsymPacking, "{p}");
            assert!(t.cpus.iter().all(|c| c.capacity == 1024), "{p}");
            assert!(t.itmt_enabled, "{p}");
            assert_eq!(t.cpus.iter().map(|c| c.asym_prio).collect::<Vec<_>>(), vec![72, 72, 69, 69, 46, 46], "{p}");
        }
    }

    /// The sysctl stays off when the admin (or a sweep) turned it off, and
    /// ITMT is never supported while all CPUs report one value.
    #[test]
    fn itmt_needs_the_sysctl_and_differing_priorities() {
        let mut off = part(true);
        off.itmt_enabled = false;
        assert!(!intel_pstate_init(off, &profile("6.12")).itmt_enabled);
        let mut flat = part(true);
        for c in &mut flat.cpus {
            c.hwp_highest_perf = Some(50);
        }
        assert!(!intel_pstate_init(flat, &profile("6.12")).itmt_enabled);
    }

    /// A topology without HWP values is untouched, whatever the profile.
    #[test]
    fn plain_topologies_unchanged() {
        let t = schedlab_topology::Topology::preset("ryzen-7950x").unwrap();
        for p in Profile::NAMES {
            assert_eq!(intel_pstate_init(t.clone(), &profile(p)), t);
        }
    }
}
