//! The Energy Model (`kernel/power/energy_model.c` and
//! `include/linux/energy_model.h`, 6.12) as the device-tree path builds it
//! for CPUs, and the energy estimate EAS reads from it.
//!
//! Built from the topology's `[[perf_domain]]` entries the way `cpufreq-dt`
//! registers it: `dev_pm_opp_of_register_em()` (drivers/opp/of.c) with
//! `dev_pm_opp_calc_power()` as the power callback, then
//! `em_dev_register_perf_domain()` → `em_create_perf_table()` (one
//! performance state per OPP, ascending), `em_init_performance()`,
//! `em_compute_costs()` and `em_cpufreq_update_efficiencies()`.
//!
//! Why here and not in the topology crate: the topology holds what the
//! firmware says (OPPs, voltages, the power coefficient); the EM is a kernel
//! object derived from it with the kernel's integer arithmetic and checks,
//! whose registration can fail (then the domain has no EM and EAS stays
//! off), and which the scheduler reads. So the builder and the energy
//! function both live in the kernel model.
//!
//! Simplified: the EM is built once at boot, with the CPUs' final
//! capacities (the kernel registers it with the capacity known at that
//! time and corrects `performance` later in `em_check_capacity_update()`;
//! the result is the same); no runtime EM updates
//! (`em_dev_update_perf_domain()`), no `opp-microwatt` tables, no
//! artificial EMs (`get_cost` callbacks), no thermal capping (the
//! `allowed_cpu_cap` of [`em_cpu_energy`] is the CPU's capacity).
//!
//! Units: power in µW (`EM_PERF_DOMAIN_MICROWATTS`, the DT path), frequency
//! in kHz, performance in capacity units (1024 = the biggest CPU at its
//! highest OPP).

use schedlab_topology::{CpuSet, Opp, PerfDomain};

/// `EM_MAX_POWER`: 64 W in µW; a state's power must be in `1..=EM_MAX_POWER`.
pub const EM_MAX_POWER: u64 = 64_000_000;

/// `struct em_perf_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmPerfState {
    /// CPU capacity at this frequency: `capacity · frequency / fmax`.
    pub performance: u64,
    /// kHz.
    pub frequency: u64,
    /// µW.
    pub power: u64,
    /// `10 · power / performance` (= `10 · power · fmax / (frequency ·
    /// capacity)`): energy per unit of utilisation at this state.
    pub cost: u64,
    /// `EM_PERF_STATE_INEFFICIENT`: a faster state costs no more.
    pub inefficient: bool,
}

/// `struct em_perf_domain` of a CPU device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmPerfDomain {
    /// `em_span_cpus()`: the cpufreq policy's CPUs.
    pub cpus: CpuSet,
    /// The table, ascending by frequency.
    pub states: Vec<EmPerfState>,
    /// `EM_PERF_DOMAIN_SKIP_INEFFICIENCIES`: set by
    /// `em_cpufreq_update_efficiencies()` when some state is inefficient
    /// (cpufreq-dt's policies have a frequency table, so cpufreq accepts the
    /// flags).
    pub skip_inefficiencies: bool,
}

/// Why a domain gets no energy model (the kernel logs it at debug level and
/// goes on without; EAS then stays off for the root domain).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmError {
    #[error("no dynamic-power-coefficient: dev_pm_opp_of_register_em() registers no EM")]
    NoCoefficient,
    #[error("OPP at {0} kHz has no voltage: dev_pm_opp_calc_power() fails")]
    NoVoltage(u64),
    #[error("power {power} uW at {freq_khz} kHz is outside 1..={EM_MAX_POWER} (em_create_perf_table())")]
    InvalidPower { freq_khz: u64, power: u64 },
    #[error("performance 0 at {0} kHz: the cost would divide by zero")]
    ZeroPerformance(u64),
}

/// `dev_pm_opp_calc_power()` (drivers/opp/of.c, 6.12): P = C·V²·f with C the
/// DT `dynamic-power-coefficient` in µW/MHz/V², V in whole mV (the OPP's
/// microvolts / 1000, truncated) and f in whole MHz (Hz / 10⁶, truncated):
/// `C · mV · mV · MHz / 10⁶` µW, integer arithmetic.
pub fn dev_pm_opp_calc_power(coefficient: u32, opp: &Opp) -> Result<u64, EmError> {
    let mv = opp.microvolt.ok_or(EmError::NoVoltage(opp.freq_khz))? as u64 / 1000;
    if mv == 0 {
        return Err(EmError::NoVoltage(opp.freq_khz));
    }
    let mhz = opp.freq_khz * 1000 / 1_000_000;
    Ok(coefficient as u64 * mv * mv * mhz / 1_000_000)
}

/// `dev_pm_opp_of_register_em()` → `em_dev_register_perf_domain()` for one
/// cpufreq policy whose CPUs have capacity `cpu_capacity`
/// (`arch_scale_cpu_capacity()` of its first CPU).
pub fn dev_pm_opp_of_register_em(pd: &PerfDomain, cpu_capacity: u64) -> Result<EmPerfDomain, EmError> {
    let coefficient = pd.dynamic_power_coefficient.ok_or(EmError::NoCoefficient)?;
    let mut states = Vec::with_capacity(pd.opps.len());
    // em_create_perf_table(): one state per OPP, ascending (the topology
    // keeps them sorted and distinct, which the kernel checks here).
    for opp in &pd.opps {
        let power = dev_pm_opp_calc_power(coefficient, opp)?;
        if power == 0 || power > EM_MAX_POWER {
            return Err(EmError::InvalidPower { freq_khz: opp.freq_khz, power });
        }
        states.push(EmPerfState { performance: 0, frequency: opp.freq_khz, power, cost: 0, inefficient: false });
    }
    em_init_performance(&mut states, cpu_capacity);
    em_compute_costs(&mut states)?;
    // em_cpufreq_update_efficiencies().
    let skip_inefficiencies = states.iter().any(|s| s.inefficient);
    Ok(EmPerfDomain { cpus: pd.cpus, states, skip_inefficiencies })
}

/// `em_init_performance()`: each state's capacity, linear in frequency:
/// `capacity · frequency / fmax` (integer division).
pub fn em_init_performance(states: &mut [EmPerfState], cpu_capacity: u64) {
    let fmax = states.last().map(|s| s.frequency).unwrap_or(1).max(1);
    for s in states.iter_mut() {
        s.performance = cpu_capacity * s.frequency / fmax;
    }
}

/// `em_compute_costs()` (energy_model.c, 6.12), for a CPU device without a
/// `get_cost` callback: from the highest state down, `cost = 10 · power /
/// performance`; a state whose cost is at or above the cheapest cost of the
/// faster states seen so far is inefficient (running faster costs no more
/// energy per unit of work).
pub fn em_compute_costs(states: &mut [EmPerfState]) -> Result<(), EmError> {
    let mut prev_cost = u64::MAX;
    for s in states.iter_mut().rev() {
        if s.performance == 0 {
            return Err(EmError::ZeroPerformance(s.frequency));
        }
        s.cost = s.power * 10 / s.performance;
        if s.cost >= prev_cost {
            s.inefficient = true;
        } else {
            prev_cost = s.cost;
        }
    }
    Ok(())
}

/// `em_pd_get_efficient_state()` (energy_model.h, 6.12): the index of the
/// lowest state whose performance reaches `max_util`, skipping inefficient
/// states when the domain says so; the highest state if none reaches it.
pub fn em_pd_get_efficient_state(states: &[EmPerfState], max_util: u64, skip_inefficiencies: bool) -> usize {
    for (i, s) in states.iter().enumerate() {
        if s.performance >= max_util {
            if skip_inefficiencies && s.inefficient {
                continue;
            }
            return i;
        }
    }
    states.len() - 1
}

/// `em_cpu_energy()` (energy_model.h, 6.12): the energy the domain's CPUs
/// use over a scheduling period, in the EM's arbitrary unit (10 × µW ×
/// utilisation / capacity): the state schedutil would pick for the busiest
/// CPU (`max_util`, capped at `allowed_cpu_cap`), its `cost` times the
/// domain's summed utilisation `sum_util`. 0 when nothing runs. Idle power
/// is not in the EM, so not in the estimate.
pub fn em_cpu_energy(pd: &EmPerfDomain, max_util: u64, sum_util: u64, allowed_cpu_cap: u64) -> u64 {
    if sum_util == 0 {
        return 0;
    }
    let max_util = max_util.min(allowed_cpu_cap);
    let i = em_pd_get_efficient_state(&pd.states, max_util, pd.skip_inefficiencies);
    pd.states[i].cost * sum_util
}
