//! CPU frequency: the cpufreq core's policies (drivers/cpufreq/cpufreq.c,
//! 6.12), the fixed governors (`cpufreq_performance.c`,
//! `cpufreq_powersave.c`) and the frequency-invariance factor the arm64
//! topology code derives from the policy's current frequency
//! (`topology_set_freq_scale()`, drivers/base/arch_topology.c).
//! schedutil, the governor the scheduler drives, is
//! [`crate::cpufreq_schedutil`].
//!
//! One policy per `[[perf_domain]]` of the topology. A machine without
//! domains has no policies: every CPU runs at its one frequency, its
//! `arch_scale_freq_capacity()` is 1024 and nothing here runs.
//!
//! The driver modeled is `cpufreq-dt` (device-tree machines): no fast
//! switch, so a new frequency goes through schedutil's kthread
//! (`sugov_deferred_update()` → `sugov_work()` → `__cpufreq_driver_target()`).
//! Simplified:
//! - The kthread is not a task here: a frequency the governor chooses takes
//!   effect `transition_latency` (the OPP table's `clock-latency-ns`) after
//!   the decision, and the CPU time of the kthread's switch and of the
//!   clock and regulator writes is not charged to anyone.
//! - Each policy starts at its highest OPP ([assumed]: the frequency the
//!   boot firmware leaves is not in the device tree); schedutil moves it at
//!   its first update.
//! - Frequency invariance comes from cpufreq (`arch_set_freq_scale()` at
//!   each transition), not from activity counters (AMU), which a machine
//!   with them would use instead.
//! - The policy's table is the topology's OPPs; frequencies its energy
//!   model marks inefficient are skipped when resolving a target, as
//!   `em_cpufreq_update_efficiencies()` installs them in 6.12.
//! - No policy limits (`scaling_min_freq`/`scaling_max_freq`, thermal
//!   caps): min and max are the OPP table's ends.

use schedlab_topology::{CpuSet, CpufreqGovernor, PerfDomain, Topology};

use schedlab_trace::EventKind;

use crate::core::{Kernel, Outbox};
use crate::energy_model::EmPerfDomain;
use crate::pelt::{SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT};

/// The runtime half of `struct cpufreq_policy` plus schedutil's
/// `struct sugov_policy` (one per policy).
#[derive(Clone, Debug)]
pub struct CpufreqPolicy {
    /// `policy->cpus`.
    pub cpus: CpuSet,
    pub governor: CpufreqGovernor,
    /// The OPP frequencies, ascending (`policy->freq_table`), kHz.
    pub freq_table: Vec<u64>,
    /// Per table entry, `CPUFREQ_INEFFICIENT_FREQ`: the policy's energy
    /// model found a faster state that costs no more energy per unit of
    /// work (`em_cpufreq_update_efficiencies()`); all false without an EM.
    pub inefficient: Vec<bool>,
    /// `policy->cur`: the frequency the CPUs run at, kHz.
    pub cur: u64,
    /// `cpuinfo.transition_latency`, ns (0 when the table gives none).
    pub transition_latency_ns: u64,
    /// `sg_policy->freq_update_delay_ns`: schedutil's `rate_limit_us`.
    pub freq_update_delay_ns: u64,
    /// `sg_policy->last_freq_update_time`.
    pub last_freq_update_time: u64,
    /// `sg_policy->next_freq`: the frequency last chosen.
    pub next_freq: u64,
    /// `sg_policy->cached_raw_freq`: the unresolved target last computed.
    pub cached_raw_freq: u64,
    /// `sg_policy->limits_changed` / `need_freq_update`.
    pub limits_changed: bool,
    pub need_freq_update: bool,
    /// `sg_policy->work_in_progress`: a transition is on its way.
    pub work_in_progress: bool,
}

impl CpufreqPolicy {
    fn new(d: &PerfDomain, em: Option<&EmPerfDomain>) -> Self {
        let freq_table: Vec<u64> = d.opps.iter().map(|o| o.freq_khz).collect();
        let inefficient = freq_table
            .iter()
            .map(|&f| em.is_some_and(|em| em.states.iter().any(|s| s.frequency == f && s.inefficient)))
            .collect();
        let max = *freq_table.last().expect("a perf domain has OPPs");
        let min = freq_table[0];
        let transition_latency_ns = d.transition_latency_ns.unwrap_or(0);
        let cur = match d.governor {
            CpufreqGovernor::Powersave => min,
            CpufreqGovernor::Performance | CpufreqGovernor::Schedutil => max,
        };
        CpufreqPolicy {
            cpus: d.cpus,
            governor: d.governor,
            cur,
            transition_latency_ns,
            freq_update_delay_ns: cpufreq_policy_transition_delay_us(transition_latency_ns) * 1000,
            last_freq_update_time: 0,
            next_freq: cur,
            cached_raw_freq: 0,
            // sugov_start() sets need_freq_update when the driver wants every
            // update (CPUFREQ_NEED_UPDATE_LIMITS), which cpufreq-dt does not.
            limits_changed: false,
            need_freq_update: false,
            work_in_progress: false,
            freq_table,
            inefficient,
        }
    }

    /// `policy->cpuinfo.max_freq`.
    pub fn max_freq(&self) -> u64 {
        *self.freq_table.last().expect("a policy has a frequency table")
    }

    /// `policy->cpuinfo.min_freq`.
    pub fn min_freq(&self) -> u64 {
        self.freq_table[0]
    }

    /// `cpufreq_driver_resolve_freq()` (6.12, CPUFREQ_RELATION_LE): clamp
    /// `target` to the policy's limits, then take the lowest efficient table
    /// frequency at or above it, else the highest efficient one below it
    /// (`cpufreq_table_find_index_al()` skipping the entries the energy
    /// model marked inefficient); with no efficient entry at all, the same
    /// search over every entry (`cpufreq_frequency_table_target()`'s retry).
    pub fn resolve_freq(&self, target: u64) -> u64 {
        let target = target.clamp(self.min_freq(), self.max_freq());
        let find = |skip_inefficient: bool| {
            let mut best = None;
            for (i, &f) in self.freq_table.iter().enumerate() {
                if skip_inefficient && self.inefficient[i] {
                    continue;
                }
                if f >= target {
                    return Some(f);
                }
                best = Some(f);
            }
            best
        };
        find(true).or_else(|| find(false)).expect("a policy has a frequency table")
    }
}

/// `cpufreq_policy_transition_delay_us()` (drivers/cpufreq/cpufreq.c, 6.12):
/// schedutil's default `rate_limit_us`, the transition latency plus half
/// again, or 1 ms when the driver reports none. (No `transition_delay_us`
/// override: cpufreq-dt sets none.)
pub fn cpufreq_policy_transition_delay_us(transition_latency_ns: u64) -> u64 {
    let latency = transition_latency_ns / 1000;
    if latency > 0 {
        latency + (latency >> 1)
    } else {
        1000
    }
}

/// The cpufreq state of the machine: its policies and each CPU's
/// frequency-invariance factor.
#[derive(Clone, Debug, Default)]
pub struct Cpufreq {
    pub policies: Vec<CpufreqPolicy>,
    /// Per CPU, the index of its policy.
    pub policy_of: Vec<Option<usize>>,
    /// `arch_freq_scale` per CPU: `cur · 1024 / max_freq` of its policy.
    pub freq_scale: Vec<u64>,
    /// Per CPU, schedutil's `struct sugov_cpu`.
    pub sg_cpu: Vec<crate::cpufreq_schedutil::SugovCpu>,
}

impl Cpufreq {
    /// The policies of `topo`'s performance domains, each at its starting
    /// frequency (see the module doc).
    /// `em[i]` is domain i's energy model, if it registered one.
    pub fn new(topo: &Topology, em: &[Option<EmPerfDomain>]) -> Self {
        let nr_cpus = topo.nr_cpus();
        let policies: Vec<CpufreqPolicy> = (topo.perf_domains.iter().enumerate())
            .map(|(i, d)| CpufreqPolicy::new(d, em.get(i).and_then(Option::as_ref)))
            .collect();
        let mut policy_of = vec![None; nr_cpus];
        let mut freq_scale = vec![SCHED_CAPACITY_SCALE; nr_cpus];
        for (i, p) in policies.iter().enumerate() {
            for cpu in p.cpus.iter() {
                policy_of[cpu] = Some(i);
                freq_scale[cpu] = topology_freq_scale(p.cur, p.max_freq());
            }
        }
        Cpufreq { policies, policy_of, freq_scale, sg_cpu: vec![Default::default(); nr_cpus] }
    }
}

/// `topology_set_freq_scale()`'s factor: `cur · 1024 / max`, truncated.
pub fn topology_freq_scale(cur: u64, max: u64) -> u64 {
    (cur << SCHED_CAPACITY_SHIFT) / max
}

impl Kernel {
    /// `arch_scale_freq_capacity(cpu)`: the CPU's current frequency as a
    /// fraction of its maximum, in 1024ths.
    pub fn arch_scale_freq_capacity(&self, cpu: usize) -> u64 {
        self.cpufreq.freq_scale[cpu]
    }

    /// `policy->cur` of `cpu`'s policy, kHz; `None` without cpufreq.
    pub fn cpufreq_cur(&self, cpu: usize) -> Option<u64> {
        self.cpufreq.policy_of[cpu].map(|p| self.cpufreq.policies[p].cur)
    }

    /// The policies (read-only).
    pub fn cpufreq_policies(&self) -> &[CpufreqPolicy] {
        &self.cpufreq.policies
    }

    /// `sugov_work()` → `__cpufreq_driver_target()` → the driver's
    /// `target_index()` has finished for `policy`: the CPUs run at the
    /// latest frequency schedutil chose (`sg_policy->next_freq`, read when
    /// the work runs), and `cpufreq_freq_transition_end()` →
    /// `arch_set_freq_scale()` moves their invariance factor. The PELT
    /// clocks are not brought up to date first: like the kernel, the next
    /// `update_rq_clock()` scales all the time since the last one by the
    /// new factor. The kthread ran on `cpu` (the CPU that queued the work),
    /// which emits one `cpu_frequency` event per CPU of the policy, as
    /// `cpufreq_freq_transition_end()` does. Returns the policy's CPUs,
    /// whose speed changed.
    pub fn cpufreq_transition_done(&mut self, policy: usize, cpu: usize, now: u64, out: &mut Outbox) -> CpuSet {
        self.entry(now, cpu, out, |k| {
            let p = &mut k.cpufreq.policies[policy];
            p.work_in_progress = false;
            p.cur = p.next_freq;
            let state = u32::try_from(p.cur).unwrap_or(u32::MAX);
            let scale = topology_freq_scale(p.cur, p.max_freq());
            let cpus = p.cpus;
            for c in cpus.iter() {
                k.cpufreq.freq_scale[c] = scale;
                k.emit(c, EventKind::CpuFrequency { state, cpu_id: c as u32 });
            }
            cpus
        })
    }

    /// The cpufreq invariants: each policy runs at (and has chosen) a
    /// frequency of its table, and each CPU's invariance factor is its
    /// policy's current frequency over its maximum (1024 without a policy).
    pub(crate) fn check_cpufreq(&self) -> Result<(), String> {
        for (i, p) in self.cpufreq.policies.iter().enumerate() {
            if !p.freq_table.contains(&p.cur) || !p.freq_table.contains(&p.next_freq) {
                return Err(format!("cpufreq policy {i}: cur {} / next {} kHz not in its table", p.cur, p.next_freq));
            }
        }
        for cpu in 0..self.rqs.len() {
            let want = match self.cpufreq.policy_of[cpu] {
                Some(i) => topology_freq_scale(self.cpufreq.policies[i].cur, self.cpufreq.policies[i].max_freq()),
                None => SCHED_CAPACITY_SCALE,
            };
            if self.cpufreq.freq_scale[cpu] != want {
                return Err(format!(
                    "CPU {cpu}: freq_scale {} but its policy says {want}",
                    self.cpufreq.freq_scale[cpu]
                ));
            }
        }
        Ok(())
    }
}
