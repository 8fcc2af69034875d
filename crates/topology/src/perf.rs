//! cpufreq policies and energy-model performance domains: the static half.
//!
//! On a device-tree machine each cpufreq policy (`cpufreq-dt`, one per
//! group of CPUs sharing a clock: `opp-shared`) is also one energy-model
//! performance domain (`dev_pm_opp_of_register_em()` registers the EM for
//! the policy's CPUs), so the file describes both with one
//! `[[perf_domain]]` entry: its CPUs, its OPP table (frequency and voltage
//! of each operating point, `operating-points-v2`), the CPUs'
//! `dynamic-power-coefficient` and `capacity-dmips-mhz`, the OPP table's
//! `clock-latency-ns` and the policy's governor.
//!
//! What uses it: the energy model (`schedlab_kernel::energy_model`) builds
//! its performance states from the OPPs; EAS (`sched_energy_enabled()`)
//! needs a domain on every CPU with schedutil as governor; the cpufreq
//! model (`schedlab_kernel::cpufreq`) runs each domain's policy with its
//! governor and transition latency.

use crate::CpuSet;

/// The cpufreq governor of a policy (`scaling_governor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpufreqGovernor {
    /// `kernel/sched/cpufreq_schedutil.c`: frequency from the scheduler's
    /// utilisation. The only governor EAS accepts (`sched_is_eas_possible()`).
    Schedutil,
    /// `cpufreq_performance.c`: the policy's maximum, always.
    Performance,
    /// `cpufreq_powersave.c`: the policy's minimum, always.
    Powersave,
}

impl CpufreqGovernor {
    /// The `scaling_governor` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CpufreqGovernor::Schedutil => "schedutil",
            CpufreqGovernor::Performance => "performance",
            CpufreqGovernor::Powersave => "powersave",
        }
    }
}

/// One operating performance point (an `opp-table-v2` entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opp {
    /// `opp-hz`, in kHz (cpufreq's and the energy model's unit).
    pub freq_khz: u64,
    /// `opp-microvolt` (the target voltage, the first of its cells), if the
    /// table gives voltages: the energy model needs them.
    pub microvolt: Option<u32>,
}

/// One cpufreq policy = one energy-model performance domain.
#[derive(Clone, Debug, PartialEq)]
pub struct PerfDomain {
    /// The policy's CPUs (`policy->related_cpus`, `em_span_cpus()`). All
    /// have the same capacity (one frequency, one micro-architecture).
    pub cpus: CpuSet,
    /// The policy's governor; `cpufreq_governor` in the file, else
    /// schedutil (Kconfig's `CPU_FREQ_DEFAULT_GOV` default on ARM and
    /// arm64, and on x86 with intel_pstate/amd_pstate).
    pub governor: CpufreqGovernor,
    /// The OPPs, ascending by frequency, frequencies distinct.
    pub opps: Vec<Opp>,
    /// DT `dynamic-power-coefficient`, in µW/MHz/V² (`drivers/opp/of.c`,
    /// `dev_pm_opp_calc_power()`); without it (or with 0) the device-tree
    /// path registers no energy model for the domain.
    pub dynamic_power_coefficient: Option<u32>,
    /// DT `capacity-dmips-mhz` of the domain's CPUs, when the capacities
    /// were derived from it (`topology_normalize_cpu_scale()`).
    pub capacity_dmips_mhz: Option<u32>,
    /// DT `clock-latency-ns` of the OPP table (`cpuinfo.transition_latency`,
    /// from which schedutil's rate limit is derived); `None` when not given
    /// (cpufreq-dt then reports `CPUFREQ_ETERNAL`).
    pub transition_latency_ns: Option<u64>,
}

impl PerfDomain {
    /// The highest OPP's frequency (`policy->cpuinfo.max_freq`).
    pub fn max_freq_khz(&self) -> u64 {
        self.opps.last().map(|o| o.freq_khz).unwrap_or(0)
    }
}
