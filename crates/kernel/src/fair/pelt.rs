//! `fair.c`'s PELT glue: `update_load_avg()` at the points the kernel calls
//! it, attach/detach/remove on migration, `post_init_entity_util_avg()`, and
//! the load/utilisation readers the wakeup path and the balancer use
//! (`cpu_load()`, `cpu_util_cfs()`, `task_h_load()`, the `*_without()` forms).
//!
//! Follows 6.12.x. Simplified: flat, with task groups too (tasks' averages
//! attach to the root cfs_rq; no group propagation, and `task_h_load()` is the
//! task's own load, see [`crate::fair::group`]); no UTIL_EST; the PELT clock is the rq clock (capacity and
//! frequency invariance factors of 1, see [`crate::pelt`]).

use crate::core::Kernel;
use crate::pelt;
use crate::sched::{OnRq, TaskId};

/// Offset of the PELT clock from the rq clock. `last_update_time == 0`
/// means "not attached", so the PELT clock must never read 0 (a kernel's
/// clock never does after boot); shifting it keeps every difference intact.
pub(crate) const PELT_CLOCK_BASE: u64 = 1 << 30;

/// `update_load_avg()` flags, defined once with the PELT sums.
pub(crate) use crate::pelt::{DO_ATTACH, DO_DETACH, SKIP_AGE_LOAD, UPDATE_TG};

impl Kernel {
    /// `cfs_rq_clock_pelt()`: the rq clock (no capacity or frequency scaling).
    fn clock_pelt(&self, cpu: usize) -> u64 {
        self.rqs[cpu].clock + PELT_CLOCK_BASE
    }

    /// `update_cfs_rq_load_avg()` of `cpu`'s root cfs_rq at the PELT clock,
    /// applying `cfs_rq->removed` first. True when the averages decayed.
    pub(crate) fn update_cfs_rq_load_avg(&mut self, cpu: usize) -> bool {
        let now = self.clock_pelt(cpu);
        let cfs = &mut self.rqs[cpu].cfs;
        let removed = std::mem::take(&mut cfs.removed);
        let mut decayed = false;
        if removed.nr > 0 {
            pelt::remove_entity_load_avg(&mut cfs.avg, removed.load_avg, removed.util_avg, removed.runnable_avg);
            decayed = true;
        }
        let running = cfs.curr.is_some();
        // Flat PELT (see `fair::group`): the runnable weight is the tasks'.
        decayed |= pelt::update_cfs_rq_avg(now, &mut cfs.avg, cfs.h_task_weight, cfs.h_nr_runnable as u64, running);
        decayed
    }

    /// `update_load_avg()` for task `t` on `cpu`'s cfs_rq.
    pub(crate) fn update_load_avg(&mut self, cpu: usize, t: TaskId, flags: u32) {
        let now = self.clock_pelt(cpu);
        let is_curr = self.cfs(self.cfs_rq_of(t)).curr == Some(t);
        let se = &mut self.tasks[t as usize].se;
        if se.avg.last_update_time != 0 && flags & SKIP_AGE_LOAD == 0 {
            let runnable = se.on_rq && !se.sched_delayed;
            pelt::update_entity_avg(now, &mut se.avg, se.load.weight as u64, se.on_rq, runnable, is_curr);
        }
        self.update_cfs_rq_load_avg(cpu);
        let se = &mut self.tasks[t as usize].se;
        if se.avg.last_update_time == 0 && flags & DO_ATTACH != 0 {
            pelt::attach_entity_load_avg(&mut self.rqs[cpu].cfs.avg, &mut se.avg, se.load.weight as u64);
        } else if flags & DO_DETACH != 0 {
            pelt::detach_entity_load_avg(&mut self.rqs[cpu].cfs.avg, &se.avg, se.load.weight as u64);
        }
    }

    /// `sync_entity_load_avg()`: age a sleeping task's averages to its old
    /// runqueue's last update.
    fn sync_entity_load_avg(&mut self, t: TaskId) {
        let cpu = self.tasks[t as usize].cpu;
        let last = self.rqs[cpu].cfs.avg.last_update_time;
        let se = &mut self.tasks[t as usize].se;
        if se.avg.last_update_time != 0 {
            pelt::update_entity_avg(last, &mut se.avg, se.load.weight as u64, false, false, false);
        }
    }

    /// `remove_entity_load_avg()`: leave the task's contribution for the old
    /// runqueue to subtract at its next update.
    fn remove_entity_load_avg(&mut self, t: TaskId) {
        self.sync_entity_load_avg(t);
        let cpu = self.tasks[t as usize].cpu;
        let avg = self.tasks[t as usize].se.avg;
        let r = &mut self.rqs[cpu].cfs.removed;
        r.nr += 1;
        r.load_avg += avg.load_avg;
        r.util_avg += avg.util_avg;
        r.runnable_avg += avg.runnable_avg;
    }

    /// `migrate_task_rq_fair()`: a task changing CPU outside the balancer
    /// leaves its load behind and re-attaches on the new runqueue.
    pub(crate) fn migrate_task_rq_fair(&mut self, t: TaskId, _new_cpu: usize) {
        if self.tasks[t as usize].on_rq != OnRq::Migrating {
            self.remove_entity_load_avg(t);
        }
        self.tasks[t as usize].se.avg.last_update_time = 0;
    }

    /// `post_init_entity_util_avg()`: a new task starts with a share of the
    /// spare capacity of the CPU it is placed on.
    pub(crate) fn post_init_entity_util_avg(&mut self, t: TaskId) {
        let cpu = self.tasks[t as usize].cpu;
        let cap = self.rqs[cpu].cpu_capacity;
        let cfs_avg = self.rqs[cpu].cfs.avg;
        let se = &mut self.tasks[t as usize].se;
        pelt::post_init_entity_util_avg(&mut se.avg, &cfs_avg, se.load.weight as u64, cap);
    }

    /// `cpu_load()`: the root cfs_rq's load average.
    pub fn cpu_load(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cfs.avg.load_avg
    }

    /// `cpu_util_cfs()`: utilisation, capped at the CPU's capacity.
    pub fn cpu_util_cfs(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cfs.avg.util_avg.min(self.rqs[cpu].cpu_capacity)
    }

    /// `task_util()`.
    pub fn task_util(&self, t: TaskId) -> u64 {
        self.tasks[t as usize].se.avg.util_avg
    }

    /// `task_h_load()`: with the model's flat PELT, the task's own load average.
    pub fn task_h_load(&self, t: TaskId) -> u64 {
        self.tasks[t as usize].se.avg.load_avg
    }

    /// Whether `t`'s averages are counted in `cpu`'s (`task_cpu(p) == cpu` and attached).
    fn counted_on(&self, cpu: usize, t: TaskId) -> bool {
        self.tasks[t as usize].cpu == cpu && self.tasks[t as usize].se.avg.last_update_time != 0
    }

    /// `cpu_load_without()`.
    pub fn cpu_load_without(&self, cpu: usize, t: TaskId) -> u64 {
        let load = self.cpu_load(cpu);
        if !self.counted_on(cpu, t) {
            return load;
        }
        load.saturating_sub(self.tasks[t as usize].se.avg.load_avg)
    }

    /// `cpu_util_without()`.
    pub fn cpu_util_without(&self, cpu: usize, t: TaskId) -> u64 {
        let util = self.rqs[cpu].cfs.avg.util_avg;
        let util = if self.counted_on(cpu, t) { util.saturating_sub(self.task_util(t)) } else { util };
        util.min(self.rqs[cpu].cpu_capacity)
    }

    /// `cpu_runnable_without()`.
    pub fn cpu_runnable_without(&self, cpu: usize, t: TaskId) -> u64 {
        let runnable = self.rqs[cpu].cfs.avg.runnable_avg;
        if !self.counted_on(cpu, t) {
            return runnable;
        }
        runnable.saturating_sub(self.tasks[t as usize].se.avg.runnable_avg)
    }
}
