//! `fair.c`'s asymmetric CPU capacity rules (6.12): `fits_capacity()`,
//! `capacity_greater()`, `util_fits_cpu()` with its uclamp cases,
//! `task_fits_cpu()`, `update_misfit_status()`, the task's
//! `max_allowed_capacity`, and the clamp reads of core.c they use
//! (`uclamp_eff_value()`, the `sched_uclamp_used` key).
//!
//! Capacity pressure (6.12): `scale_rt_capacity()`, `update_cpu_capacity()`,
//! `update_group_capacity()` (the balancer refreshes its local group's
//! `sched_group_capacity`, so `capacity_of()` is what RT and DL time left at
//! the CPU's last balance), `check_cpu_capacity()`, and the boot-time
//! `init_sched_groups_capacity()`.
//!
//! Simplified:
//! - Capacity pressure counts RT and DL time only. IRQ time
//!   (`cpu_util_irq()`) is 0 as in Debian's 6.12 config (neither
//!   CONFIG_IRQ_TIME_ACCOUNTING nor CONFIG_PARAVIRT_TIME_ACCOUNTING: the
//!   kernel does not see the model's interrupts and steal either), and
//!   `get_actual_cpu_capacity()` is `arch_scale_cpu_capacity()` (no
//!   thermal/hardware pressure, no cpufreq policy limits).
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
use crate::sched::{SchedGroupCapacity, TaskId};
use crate::topology::{sd_flags::SD_OVERLAP, SchedDomains};

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

/// `init_sched_groups_capacity()` (topology.c, 6.12) at boot: every group
/// starts with its CPUs' full capacities. Its `next_update` is 0: the
/// machine has been up for longer than any balance interval when a
/// scenario starts, so the first balance refreshes.
pub fn init_sched_groups_capacity(domains: &SchedDomains) -> Vec<SchedGroupCapacity> {
    let groups = || domains.cpus.iter().flat_map(|c| c.domains.iter()).flat_map(|d| d.groups.iter());
    let mut sgc =
        vec![
            SchedGroupCapacity { capacity: 0, min_capacity: 0, max_capacity: 0, next_update: 0, imbalance: false };
            groups().map(|g| g.id + 1).max().unwrap_or(0)
        ];
    for g in groups() {
        let s = &mut sgc[g.id];
        (s.capacity, s.min_capacity, s.max_capacity) = (g.capacity, g.min_capacity, g.max_capacity);
    }
    sgc
}

/// `scale_rt_capacity()` (fair.c, 6.12) on plain values: what `max` (the
/// CPU's `get_actual_cpu_capacity()`) leaves to fair tasks after the RT
/// and DL utilisation `used`, at least 1. (The IRQ scaling
/// `scale_irq_capacity()` is the identity here: see the module doc.)
pub fn scale_rt_capacity(max: u64, used: u64) -> u64 {
    if used >= max {
        return 1;
    }
    max - used
}

/// `check_cpu_capacity()` (fair.c, 6.12): side activity took more than
/// the domain's `imbalance_pct` margin from the CPU
/// (`capacity · pct < orig · 100`).
pub fn check_cpu_capacity(capacity: u64, capacity_orig: u64, imbalance_pct: u64) -> bool {
    capacity * imbalance_pct < capacity_orig * 100
}

impl Kernel {
    /// `update_cpu_capacity()` (fair.c, 6.12): `cpu`'s `capacity_of()` and
    /// its bottom group's `sched_group_capacity` become what RT and DL
    /// time leave of it.
    fn update_cpu_capacity(&mut self, sd_cpu: usize, sd: usize, cpu: usize) {
        let max = self.topo.cpus[cpu].capacity as u64;
        let capacity = scale_rt_capacity(max, self.cpu_util_rt(cpu) + self.cpu_util_dl(cpu));
        self.rqs[cpu].cpu_capacity = capacity;
        let id = self.domains.cpus[sd_cpu].domains[sd].groups[0].id;
        let s = &mut self.sgc[id];
        (s.capacity, s.min_capacity, s.max_capacity) = (capacity, capacity, capacity);
    }

    /// `update_group_capacity()` (fair.c, 6.12) for domain `sd` of `sd_cpu`,
    /// balancing for `cpu`: the local group's capacities, from the CPU at
    /// the bottom level, else from the child domain's groups (or, under
    /// an overlapping child, from the group's CPUs). Not again for a
    /// newidle balance until one balance interval has passed.
    pub(crate) fn update_group_capacity(&mut self, sd_cpu: usize, sd: usize, cpu: usize) {
        // The interval in jiffies, clamped: the idle one the domain keeps.
        let interval = self.get_sd_balance_interval(sd_cpu, sd, false);
        let local = self.domains.cpus[sd_cpu].domains[sd].groups[0].id;
        self.sgc[local].next_update = self.jiffies() + interval;
        if sd == 0 {
            self.update_cpu_capacity(sd_cpu, sd, cpu);
            return;
        }
        let child = &self.domains.cpus[sd_cpu].domains[sd - 1];
        let (mut capacity, mut min_capacity, mut max_capacity) = (0, u64::MAX, 0);
        if child.flags & SD_OVERLAP != 0 {
            for c in self.domains.cpus[sd_cpu].domains[sd].groups[0].span.iter() {
                let cap = self.rqs[c].cpu_capacity;
                capacity += cap;
                min_capacity = min_capacity.min(cap);
                max_capacity = max_capacity.max(cap);
            }
        } else {
            for g in &child.groups {
                let s = &self.sgc[g.id];
                capacity += s.capacity;
                min_capacity = min_capacity.min(s.min_capacity);
                max_capacity = max_capacity.max(s.max_capacity);
            }
        }
        let s = &mut self.sgc[local];
        (s.capacity, s.min_capacity, s.max_capacity) = (capacity, min_capacity, max_capacity);
    }

    /// [`check_cpu_capacity`] for `cpu` in domain `sd` of `sd_cpu`.
    pub(crate) fn cpu_capacity_reduced(&self, cpu: usize, sd_cpu: usize, sd: usize) -> bool {
        let pct = self.domains.cpus[sd_cpu].domains[sd].imbalance_pct as u64;
        check_cpu_capacity(self.rqs[cpu].cpu_capacity, self.topo.cpus[cpu].capacity as u64, pct)
    }

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
