//! topology.c's performance domains (6.12): `sched_is_eas_possible()` and
//! `build_perf_domains()`, which decide per root domain whether EAS runs
//! and with which energy models (`rd->pd`), and `sched_energy_set()`, the
//! `sched_energy_present` static key behind `sched_energy_enabled()`.
//!
//! Simplified:
//! - Built once at boot for each root domain (the kernel rebuilds them when
//!   the domains, a governor, the sysctl or the EM change).
//! - `arch_scale_freq_invariant()` is taken as true on a machine with
//!   cpufreq policies (`[[perf_domain]]`): arm64 gets frequency invariance
//!   from cpufreq (`cpufreq_supports_freq_invariance()`, the driver reporting
//!   each frequency change) or the AMU counters; the cpufreq model
//!   ([`crate::cpufreq`]) sets `arch_scale_freq_capacity()` at each
//!   transition.
//! - No complexity limit: 6.12 has none (`EM_MAX_COMPLEXITY` went with
//!   commit 5b77261c5510, "sched/topology: Remove the EM_MAX_COMPLEXITY
//!   limit", before 6.12; 6.12's topology.c has no trace of it).

use schedlab_topology::{CpuSet, CpufreqGovernor, Topology};

use super::SchedDomains;
use crate::energy_model::{dev_pm_opp_of_register_em, EmPerfDomain};
use crate::sched::RootDomain;

/// Why `sched_is_eas_possible()` said no (its `sched_debug()` messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EasImpossible {
    /// `sysctl_sched_energy_aware` is 0 (checked first by `build_perf_domains()`).
    SysctlOff,
    /// No CPU of the root domain has an `sd_asym_cpucapacity` domain.
    NoAsymCapacity,
    /// `sched_smt_active()`.
    Smt,
    /// `!arch_scale_freq_invariant()`: no cpufreq at all here.
    NotFreqInvariant,
    /// The CPU has no cpufreq policy.
    NoPolicy(usize),
    /// The CPU's policy's governor is not schedutil.
    NotSchedutil(usize),
    /// `pd_init()`: the CPU has no energy model (`em_cpu_get()` is NULL).
    NoEnergyModel(usize),
}

/// `sched_is_eas_possible(cpu_mask)` (topology.c, 6.12): asymmetric CPU
/// capacities somewhere in the span, no SMT, frequency invariance, and
/// schedutil governing every CPU's policy.
pub fn sched_is_eas_possible(topo: &Topology, domains: &SchedDomains, span: &CpuSet) -> Result<(), EasImpossible> {
    if !span.iter().any(|cpu| domains.cpus[cpu].sd_asym_cpucapacity.is_some()) {
        return Err(EasImpossible::NoAsymCapacity);
    }
    if topo.has_smt() {
        return Err(EasImpossible::Smt);
    }
    if topo.perf_domains.is_empty() {
        return Err(EasImpossible::NotFreqInvariant);
    }
    for cpu in span.iter() {
        match topo.perf_domain_of(cpu) {
            None => return Err(EasImpossible::NoPolicy(cpu)),
            Some(pd) if pd.governor != CpufreqGovernor::Schedutil => return Err(EasImpossible::NotSchedutil(cpu)),
            Some(_) => {}
        }
    }
    Ok(())
}

/// `build_perf_domains(cpu_map)` (topology.c, 6.12): the root domain's
/// `rd->pd` list as indices into `ems` (the energy models, one per
/// topology perf domain, `None` where registration failed), or why EAS is
/// off for it. The kernel walks the span's CPUs in order and pushes each
/// new domain at the head of the list, so the list ends up in reverse order
/// of first CPU (`find_energy_efficient_cpu()` visits it in that order).
pub fn build_perf_domains(
    topo: &Topology,
    domains: &SchedDomains,
    ems: &[Option<EmPerfDomain>],
    span: &CpuSet,
) -> Result<Vec<usize>, EasImpossible> {
    if !topo.sched_energy_aware {
        return Err(EasImpossible::SysctlOff);
    }
    sched_is_eas_possible(topo, domains, span)?;
    let mut pd: Vec<usize> = Vec::new();
    for cpu in span.iter() {
        if pd.iter().any(|&i| ems[i].as_ref().is_some_and(|em| em.cpus.contains(cpu))) {
            continue;
        }
        // pd_init(): em_cpu_get(cpu).
        let Some(i) = ems.iter().position(|em| em.as_ref().is_some_and(|em| em.cpus.contains(cpu))) else {
            return Err(EasImpossible::NoEnergyModel(cpu));
        };
        pd.insert(0, i);
    }
    Ok(pd)
}

/// At boot: register each policy's energy model (`cpufreq-dt` calling
/// `dev_pm_opp_of_register_em()` with the CPUs' capacity; `None` where it
/// fails), then `build_perf_domains()` for every root domain and
/// `sched_energy_set()`. Returns the models and the `sched_energy_present`
/// key.
pub(crate) fn attach_perf_domains(
    topo: &Topology,
    domains: &SchedDomains,
    rds: &mut [RootDomain],
) -> (Vec<Option<EmPerfDomain>>, bool) {
    let em: Vec<_> = topo
        .perf_domains
        .iter()
        .map(|pd| {
            let cap = pd.cpus.first().map_or(1024, |c| topo.cpus[c].capacity as u64);
            dev_pm_opp_of_register_em(pd, cap).ok()
        })
        .collect();
    for rd in rds.iter_mut() {
        rd.pd = build_perf_domains(topo, domains, &em, &rd.span).unwrap_or_default();
    }
    let present = rds.iter().any(|rd| !rd.pd.is_empty());
    (em, present)
}
