//! `fair.c`'s asymmetric CPU capacity rules (6.12): `fits_capacity()`,
//! `capacity_greater()`, `util_fits_cpu()` with its uclamp cases,
//! `task_fits_cpu()`, `update_misfit_status()`, the task's
//! `max_allowed_capacity`, and the clamp reads of core.c they use
//! (`uclamp_eff_value()`, the `sched_uclamp_used` key).
//!
//! Simplified:
//! - No capacity pressure: `capacity_of()` is `arch_scale_cpu_capacity()`
//!   (no RT/IRQ time taken from it) and `get_actual_cpu_capacity()` is the
//!   same value (no thermal/hardware or cpufreq pressure).
//! - `task_util_est()` is `task_util()`: UTIL_EST is not modeled.
//! - uclamp (CONFIG_UCLAMP_TASK) per task only: the values a task asked for
//!   with `sched_setattr()` are its effective values (`uclamp_eff_value()`
//!   with no task-group clamps, CONFIG_UCLAMP_TASK_GROUP / `cpu.uclamp.*`,
//!   and the system defaults `sched_util_clamp_min/max` left at 1024; RT
//!   tasks' default floor `sched_util_clamp_min_rt_default` at its 1024).
//!   The per-runqueue aggregation (`uclamp_rq_inc()`/`uclamp_rq_dec()`,
//!   buckets) is not kept: EAS and schedutil compute the maximum over the
//!   queued tasks when they read it ([`crate::fair::eas`]).
//! - `p->max_allowed_capacity` is computed when read (the largest capacity
//!   among the task's allowed CPUs), where the kernel caches it at fork and
//!   affinity changes from `asym_cap_list`: the same value, since CPUs never
//!   go offline here.

use crate::core::Kernel;
use crate::pelt::SCHED_CAPACITY_SCALE;
use crate::sched::TaskId;

/// `fits_capacity(cap, max)`: `cap` fits in `max` with 20 % headroom
/// (`cap · 1280 < max · 1024`).
pub fn fits_capacity(cap: u64, max: u64) -> bool {
    cap * 1280 < max * 1024
}

/// `capacity_greater(cap1, cap2)`: `cap1` is more than ~5 % above `cap2`.
pub fn capacity_greater(cap1: u64, cap2: u64) -> bool {
    cap1 * 1024 > cap2 * 1078
}

/// `enum uclamp_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UclampId {
    Min,
    Max,
}

/// A CPU's capacities as `util_fits_cpu()` reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCapacities {
    /// `capacity_of(cpu)`.
    pub capacity: u64,
    /// `arch_scale_cpu_capacity(cpu)`.
    pub capacity_orig: u64,
    /// `get_actual_cpu_capacity(cpu)`.
    pub actual: u64,
}

/// `util_fits_cpu()` (fair.c, 6.12): does a task of utilisation `util` with
/// clamps `uclamp_min`..`uclamp_max` fit a CPU of `caps`? 1 fits; 0 does not;
/// -1 only the boost (`uclamp_min`) does not fit (the util does): such a CPU
/// is a fallback for `select_idle_capacity()`.
///
/// The util alone fits with the 20 % margin of [`fits_capacity`] against
/// `capacity_of()`. Without `uclamp_used` that is the answer. Otherwise a
/// `uclamp_max` at or below the CPU's original capacity makes any util fit
/// (a capped task is content on a small CPU) — except 1024 on a 1024 CPU,
/// which caps nothing; and a fitting task boosted above its util by a
/// `uclamp_min` (taken at most `uclamp_max`) beyond the CPU's actual
/// capacity gets -1.
pub fn util_fits_cpu(util: u64, uclamp_min: u64, uclamp_max: u64, caps: CpuCapacities, uclamp_used: bool) -> i32 {
    let mut fits = fits_capacity(util, caps.capacity);
    if !uclamp_used {
        return fits as i32;
    }
    let caps_nothing = caps.capacity_orig == SCHED_CAPACITY_SCALE && uclamp_max == SCHED_CAPACITY_SCALE;
    let uclamp_max_fits = !caps_nothing && uclamp_max <= caps.capacity_orig;
    fits = fits || uclamp_max_fits;
    let uclamp_min = uclamp_min.min(uclamp_max);
    if fits && util < uclamp_min && uclamp_min > caps.actual {
        return -1;
    }
    fits as i32
}

impl Kernel {
    /// `uclamp_eff_value()` (core.c, 6.12): the clamp in effect for `p`,
    /// here the one it asked for (see the module doc). A floor the user
    /// never set is the class default the kernel keeps in `uclamp_req`: 0,
    /// or for an RT policy `sched_util_clamp_min_rt_default` (1024; set at
    /// fork by `uclamp_post_fork()` and at each policy change by
    /// `__setscheduler_uclamp()`, so it follows the policy, not a PI boost).
    pub(crate) fn uclamp_eff_value(&self, p: TaskId, id: UclampId) -> u64 {
        let t = &self.tasks[p as usize];
        match (id, t.uclamp_min) {
            (UclampId::Min, Some(v)) => v as u64,
            (UclampId::Min, None) if matches!(t.policy, crate::sched::Policy::Fifo | crate::sched::Policy::Rr) => {
                SCHED_CAPACITY_SCALE
            }
            (UclampId::Min, None) => 0,
            (UclampId::Max, _) => t.uclamp_max as u64,
        }
    }

    /// The capacities of `cpu` for [`util_fits_cpu`].
    pub(crate) fn cpu_capacities(&self, cpu: usize) -> CpuCapacities {
        let orig = self.topo.cpus[cpu].capacity as u64;
        CpuCapacities { capacity: self.rqs[cpu].cpu_capacity, capacity_orig: orig, actual: orig }
    }

    /// [`util_fits_cpu`] on `cpu`.
    pub(crate) fn util_fits_cpu(&self, util: u64, uclamp_min: u64, uclamp_max: u64, cpu: usize) -> i32 {
        util_fits_cpu(util, uclamp_min, uclamp_max, self.cpu_capacities(cpu), self.uclamp_used)
    }

    /// `task_fits_cpu()` (fair.c, 6.12): `p` fits `cpu` fully, its
    /// utilisation and its clamps (`util_fits_cpu() > 0`).
    pub(crate) fn task_fits_cpu(&self, p: TaskId, cpu: usize) -> bool {
        let (min, max) = (self.uclamp_eff_value(p, UclampId::Min), self.uclamp_eff_value(p, UclampId::Max));
        self.util_fits_cpu(self.task_util(p), min, max, cpu) > 0
    }

    /// `p->max_allowed_capacity`: the largest `arch_scale_cpu_capacity()`
    /// among the CPUs `p` may run on (1024 on symmetric machines).
    pub(crate) fn max_allowed_capacity(&self, p: TaskId) -> u64 {
        if !self.asym_cpucap_active {
            return SCHED_CAPACITY_SCALE;
        }
        let mask = &self.tasks[p as usize].cpus_mask;
        mask.iter().map(|c| self.topo.cpus[c].capacity as u64).max().unwrap_or(SCHED_CAPACITY_SCALE)
    }

    /// `update_misfit_status()` (fair.c, 6.12), for the fair task `p` now
    /// current on `cpu` (`None`: the CPU is going idle). On an
    /// asymmetric-capacity machine, `rq->misfit_task_load` becomes the task's
    /// `task_h_load()` (at least 1) when it does not fit this CPU and may run
    /// on a bigger one; 0 when there is no task, it is pinned to one CPU, this
    /// CPU is already the biggest it may use, or it fits. Called from
    /// `set_next_task_fair()` on a pick, `task_tick_fair()` and
    /// `sched_balance_newidle()`, as in the kernel.
    pub(crate) fn update_misfit_status(&mut self, p: Option<TaskId>, cpu: usize) {
        if !self.asym_cpucap_active {
            return;
        }
        let misfit = match p {
            Some(p)
                if self.tasks[p as usize].cpus_mask.len() > 1
                    && self.topo.cpus[cpu].capacity as u64 != self.max_allowed_capacity(p)
                    && !self.task_fits_cpu(p, cpu) =>
            {
                self.task_h_load(p).max(1)
            }
            _ => 0,
        };
        self.rqs[cpu].misfit_task_load = misfit;
    }
}
