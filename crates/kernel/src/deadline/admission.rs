//! `sched_setattr()`'s checks for SCHED_DEADLINE (deadline.c and
//! syscalls.c, 6.12.x): the parameters (`__checkparam_dl()`, EINVAL), the
//! affinity (`__sched_setscheduler()`'s root-domain rule, EPERM) and the
//! root domain's bandwidth (`sched_dl_overflow()` → `__dl_overflow()`,
//! EBUSY).
//!
//! The limit is `sched_rt_runtime_us / sched_rt_period_us` (950000 /
//! 1000000 by default) of each CPU's capacity. In 6.12 each CPU's fair
//! server holds its own reservation (50 ms per 1 s) in the same root
//! domain total, added at its first start (`dl_server_apply_params()`);
//! the model counts it for every CPU whose server is enabled. Simplified:
//! no SCHED_FLAG_SUGOV, no cpuset partitions beyond the model's root
//! domains, no hotplug.

use super::{to_ratio, DlParams, DL_SCALE};
use crate::core::Kernel;
use schedlab_topology::CpuSet;

/// `sysctl_sched_dl_period_min` / `_max` (us), the kernel's defaults.
pub const DL_PERIOD_MIN_NS: u64 = 100 * 1_000;
pub const DL_PERIOD_MAX_NS: u64 = (1 << 22) * 1_000;
/// `sysctl_sched_rt_runtime` / `sysctl_sched_rt_period` (us), the defaults.
pub const RT_RUNTIME_US: u64 = 950_000;
pub const RT_PERIOD_US: u64 = 1_000_000;
/// `SCHED_CAPACITY_SHIFT`.
const CAPACITY_SHIFT: u32 = 10;

/// Why `sched_setattr()` refuses a deadline reservation, with the errno
/// the kernel returns.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DlAdmissionError {
    #[error(
        "EINVAL: SCHED_DEADLINE needs runtime >= 1024 ns and runtime <= deadline <= period, with the period in \
         100 us..4.19 s (sysctl_sched_dl_period_min/max); got runtime {runtime} ns, deadline {deadline} ns, period \
         {period} ns"
    )]
    Invalid { runtime: u64, deadline: u64, period: u64 },
    #[error(
        "EPERM: a SCHED_DEADLINE task must be allowed on every CPU of its root domain ({span}); its affinity is \
         {allowed}"
    )]
    Affinity { span: String, allowed: String },
    #[error(
        "EBUSY: the root domain's deadline bandwidth is used up: {used:.3} of {limit:.3} CPUs are reserved \
         (fair servers and earlier deadline tasks), and this task asks {asked:.3} more (limit = \
         sched_rt_runtime_us/sched_rt_period_us = 0.95 per CPU)"
    )]
    Busy { used: f64, limit: f64, asked: f64 },
}

/// `struct dl_bw` of a root domain: the per-CPU limit and what is reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlBandwidth {
    /// `dl_b->bw`: to_ratio(rt period, rt runtime).
    pub bw: u64,
    /// `dl_b->total_bw`.
    pub total_bw: u64,
}

/// `__checkparam_dl()`.
pub fn checkparam_dl(p: &DlParams) -> Result<(), DlAdmissionError> {
    let invalid = || DlAdmissionError::Invalid { runtime: p.runtime, deadline: p.deadline, period: p.period };
    if p.deadline == 0 || p.runtime < (1 << DL_SCALE) {
        return Err(invalid());
    }
    if p.deadline & (1 << 63) != 0 || p.period & (1 << 63) != 0 {
        return Err(invalid());
    }
    let period = if p.period == 0 { p.deadline } else { p.period };
    if period < p.deadline || p.deadline < p.runtime {
        return Err(invalid());
    }
    if !(DL_PERIOD_MIN_NS..=DL_PERIOD_MAX_NS).contains(&period) {
        return Err(invalid());
    }
    Ok(())
}

impl Kernel {
    /// The deadline bandwidth of the root domain of `cpu` now.
    pub fn dl_bandwidth(&self, cpu: usize) -> DlBandwidth {
        let span = self.rds[self.rqs[cpu].rd].span;
        let servers: u64 = span
            .iter()
            .filter(|&c| self.profile.fair_server && self.rqs[c].fair_server.dl_runtime > 0)
            .map(|c| to_ratio(super::FAIR_SERVER_PERIOD, self.rqs[c].fair_server.dl_runtime))
            .sum();
        let tasks: u64 = self
            .tasks
            .iter()
            .filter(|t| t.policy == crate::sched::Policy::Deadline && span.contains(t.cpu))
            .map(|t| t.dl.dl_bw)
            .sum();
        DlBandwidth { bw: to_ratio(RT_PERIOD_US, RT_RUNTIME_US), total_bw: servers + tasks }
    }

    /// `sched_setattr()`'s admission of reservation `p` for a task that
    /// will run with affinity `allowed` from `cpu` (not yet a deadline
    /// task): the parameter, affinity and bandwidth checks, in the
    /// kernel's order.
    pub fn dl_admit(&self, p: &DlParams, allowed: &CpuSet, cpu: usize) -> Result<(), DlAdmissionError> {
        checkparam_dl(p)?;
        let span = self.rds[self.rqs[cpu].rd].span;
        if !span.is_subset(allowed) {
            return Err(DlAdmissionError::Affinity { span: span.to_cpulist(), allowed: allowed.to_cpulist() });
        }
        let b = self.dl_bandwidth(cpu);
        let cap: u64 = span.iter().map(|c| self.topo.cpus[c].capacity as u64).sum();
        let period = if p.period == 0 { p.deadline } else { p.period };
        let new_bw = to_ratio(period, p.runtime);
        // __dl_overflow(): cap_scale(bw, capacity) < total + new.
        let limit = (b.bw as u128 * cap as u128) >> CAPACITY_SHIFT;
        if limit < b.total_bw as u128 + new_bw as u128 {
            let unit = super::BW_UNIT as f64;
            return Err(DlAdmissionError::Busy {
                used: b.total_bw as f64 / unit,
                limit: limit as f64 / unit,
                asked: new_bw as f64 / unit,
            });
        }
        Ok(())
    }
}
