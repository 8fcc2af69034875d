//! The schedutil cpufreq governor (kernel/sched/cpufreq_schedutil.c, 6.12)
//! and its hook, `cpufreq_update_util()` (kernel/sched/sched.h): the
//! scheduler asks for a frequency whenever a CPU's utilisation may have
//! changed, and the governor, at most once per rate limit, picks the lowest
//! OPP that runs the policy's busiest CPU at 80 % of its capacity.
//!
//! Hook sites modeled, as in 6.12: `update_load_avg()` when the root
//! cfs_rq's averages decayed and when a task's load is attached to or
//! detached from it (`cfs_rq_util_change()`), the blocked-load update of an
//! idle CPU when it decayed (`sched_balance_update_blocked_averages()`),
//! and the RT class queueing or leaving a runqueue
//! (`enqueue_top_rt_rq()`/`dequeue_top_rt_rq()`).
//!
//! Simplified:
//! - Every policy takes the shared path (`sugov_update_shared()`); a
//!   one-CPU policy's `sugov_update_single_freq()` differs only by
//!   `sugov_hold_freq()` (a CPU that has not idled keeps its frequency),
//!   which the model leaves out.
//! - No iowait boost: the model has no in-iowait sleeps (a workload's
//!   `wait` blocks on an eventfd, which is not I/O), so
//!   `sugov_iowait_boost()` never starts one.
//! - `effective_cpu_util()` as EAS reads it ([`crate::fair::eas`]): no
//!   IRQ or steal time, the RT and DL PELT signals at 0 (the model keeps
//!   neither); a runnable RT task still asks for the maximum and the DL
//!   bandwidth is the floor, as in the kernel.
//! - The DL `running_bw` hooks (`__add_running_bw()`/`__sub_running_bw()`)
//!   are not hook sites here; the DL floor is read at the next CFS or RT
//!   update (`ignore_dl_rate_limit()` still lets it bypass the rate limit).

use schedlab_topology::CpufreqGovernor;

use crate::core::Kernel;
use crate::deadline::{TimerKind, TimerRequest};
use crate::pelt::cpu_util;

/// schedutil's `struct sugov_cpu`: what the governor last computed for a CPU
/// (no `last_update`: only the iowait boost, not modeled, reads it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SugovCpu {
    /// `sg_cpu->util`: the performance level the CPU asks for.
    pub util: u64,
    /// `sg_cpu->bw_min`: the floor from DL bandwidth (and clamps).
    pub bw_min: u64,
}

/// `map_util_perf(util)`: 25 % headroom, `util + util/4`.
pub fn map_util_perf(util: u64) -> u64 {
    util + (util >> 2)
}

/// `map_util_freq(util, freq, cap)`: the frequency that gives `util` of `cap`.
pub fn map_util_freq(util: u64, freq: u64, cap: u64) -> u64 {
    freq * util / cap
}

/// `sugov_effective_cpu_perf()` (6.12): the CPU's utilisation with the
/// DVFS headroom, capped at the `max` hint and floored at `min`.
pub fn sugov_effective_cpu_perf(actual: u64, min: u64, max: u64) -> u64 {
    let actual = map_util_perf(actual);
    let max = if actual < max { actual } else { max };
    min.max(max)
}

impl Kernel {
    /// `cpufreq_update_util(rq, flags)`: the scheduler's hook into the
    /// governor of `cpu`'s policy, at the runqueue's clock. Only schedutil
    /// listens; without cpufreq this returns at once.
    pub(crate) fn cpufreq_update_util(&mut self, cpu: usize) {
        let Some(pi) = self.cpufreq.policy_of.get(cpu).copied().flatten() else {
            return;
        };
        if self.cpufreq.policies[pi].governor != CpufreqGovernor::Schedutil {
            return;
        }
        let time = self.rqs[cpu].clock;
        self.sugov_update_shared(cpu, pi, time);
    }

    /// `sugov_update_shared()`: record the update, and when the rate limit
    /// allows, choose the policy's next frequency from its busiest CPU.
    fn sugov_update_shared(&mut self, cpu: usize, pi: usize, time: u64) {
        self.ignore_dl_rate_limit(cpu, pi);
        if !self.sugov_should_update_freq(pi, time) {
            return;
        }
        let next_f = self.sugov_next_freq_shared(cpu, pi);
        if self.sugov_update_next_freq(pi, time, next_f) {
            self.sugov_deferred_update(pi, cpu);
        }
    }

    /// `ignore_dl_rate_limit()`: a DL bandwidth above the floor last used
    /// bypasses the rate limit.
    fn ignore_dl_rate_limit(&mut self, cpu: usize, pi: usize) {
        if self.cpu_bw_dl(cpu) > self.cpufreq.sg_cpu[cpu].bw_min {
            self.cpufreq.policies[pi].limits_changed = true;
        }
    }

    /// `sugov_should_update_freq()`: limits changed, or the rate limit has
    /// passed since the last frequency change. (cpufreq-dt can change the
    /// frequency from any CPU, `dvfs_possible_from_any_cpu`, so remote
    /// updates are never refused.)
    fn sugov_should_update_freq(&mut self, pi: usize, time: u64) -> bool {
        let p = &mut self.cpufreq.policies[pi];
        if p.limits_changed {
            p.limits_changed = false;
            p.need_freq_update = true;
            return true;
        }
        time.saturating_sub(p.last_freq_update_time) >= p.freq_update_delay_ns
    }

    /// `sugov_next_freq_shared()`: the frequency for the largest
    /// performance request among the policy's CPUs.
    fn sugov_next_freq_shared(&mut self, cpu: usize, pi: usize) -> u64 {
        let cpus = self.cpufreq.policies[pi].cpus;
        let max_cap = self.topo.cpus[cpu].capacity as u64;
        let mut util = 0;
        for j in cpus.iter() {
            self.sugov_get_util(j);
            util = util.max(self.cpufreq.sg_cpu[j].util);
        }
        self.get_next_freq(pi, util, max_cap)
    }

    /// `sugov_get_util()` (no iowait boost): the CPU's CFS utilisation
    /// (`cpu_util_cfs_boost()`: the larger of util and runnable) made
    /// effective, with headroom.
    fn sugov_get_util(&mut self, cpu: usize) {
        let cap = self.topo.cpus[cpu].capacity as u64;
        let util = cpu_util(&self.rqs[cpu].cfs.avg, cpu, None, None, true, cap);
        let (util, min, max) = self.effective_cpu_util(cpu, util);
        let sg = &mut self.cpufreq.sg_cpu[cpu];
        sg.bw_min = min;
        sg.util = sugov_effective_cpu_perf(util, min, max);
    }

    /// `get_next_freq()`: `util` of `max` mapped onto the policy's maximum
    /// frequency (utilisation is frequency invariant, so the reference is
    /// `cpuinfo.max_freq`), resolved to a table frequency. An unchanged raw
    /// target keeps the last choice.
    pub(crate) fn get_next_freq(&mut self, pi: usize, util: u64, max: u64) -> u64 {
        let p = &mut self.cpufreq.policies[pi];
        let freq = map_util_freq(util, p.max_freq(), max);
        if freq == p.cached_raw_freq && !p.need_freq_update {
            return p.next_freq;
        }
        p.cached_raw_freq = freq;
        p.resolve_freq(freq)
    }

    /// `sugov_update_next_freq()`: record a new choice (or a forced one
    /// after a limits change); false when nothing changes.
    fn sugov_update_next_freq(&mut self, pi: usize, time: u64, next_freq: u64) -> bool {
        let p = &mut self.cpufreq.policies[pi];
        if p.need_freq_update {
            p.need_freq_update = false;
            // cpufreq-dt does not ask for CPUFREQ_NEED_UPDATE_LIMITS.
            if p.next_freq == next_freq {
                return false;
            }
        } else if p.next_freq == next_freq {
            return false;
        }
        p.next_freq = next_freq;
        p.last_freq_update_time = time;
        true
    }

    /// `sugov_deferred_update()`: hand the change to the kthread unless one
    /// is on its way; the frequency changes a transition latency from now
    /// ([`Kernel::cpufreq_transition_done`], see [`crate::cpufreq`]).
    fn sugov_deferred_update(&mut self, pi: usize, cpu: usize) {
        let p = &mut self.cpufreq.policies[pi];
        if p.work_in_progress {
            return;
        }
        p.work_in_progress = true;
        let at = self.now + p.transition_latency_ns;
        // irq_work and a kthread, not an hrtimer: nothing is charged for it.
        self.out.timers.push(TimerRequest { cpu, at, what: TimerKind::CpufreqWork(pi) });
    }
}
