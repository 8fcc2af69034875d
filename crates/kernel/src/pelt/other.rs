//! The runqueue's non-fair PELT signals (pelt.c, 6.12): `avg_rt` and
//! `avg_dl`, binary "an RT (DL) task was running" signals that only carry a
//! utilisation, updated by `update_rt_rq_load_avg()` and
//! `update_dl_rq_load_avg()` from the class hooks (`put_prev_task_*()`,
//! `set_next_task_*()` of a first switch into the class, `task_tick_*()`,
//! `switched_to_*()` of the running task) and by `update_other_load_avgs()`
//! when the blocked averages are decayed; read as `cpu_util_rt()` and
//! `cpu_util_dl()` (sched.h) by capacity pressure, schedutil and EAS.
//!
//! Simplified: no `avg_irq` (Debian's 6.12 has neither
//! CONFIG_IRQ_TIME_ACCOUNTING nor CONFIG_PARAVIRT_TIME_ACCOUNTING, so it is
//! always 0 there) and no `avg_hw` (no thermal pressure is modeled).

use super::{update_load_avg, update_load_sum, SchedAvg};
use crate::core::Kernel;
use crate::sched::class::SchedClass;

/// `update_rt_rq_load_avg()` / `update_dl_rq_load_avg()` on a plain
/// signal: the span since its last update counted as running or not (load,
/// runnable and running all 1 or all 0); the average is recomputed when a
/// period boundary was crossed, which is what the function returns.
pub fn update_class_rq_load_avg(now: u64, sa: &mut SchedAvg, running: bool) -> bool {
    if update_load_sum(now, sa, running as u64, running as u64, running) {
        update_load_avg(sa, 1);
        return true;
    }
    false
}

impl Kernel {
    /// `update_rt_rq_load_avg(rq_clock_pelt(rq), rq, running)`.
    pub(crate) fn update_rt_rq_load_avg(&mut self, cpu: usize, running: bool) -> bool {
        let now = self.rq_clock_pelt(cpu);
        update_class_rq_load_avg(now, &mut self.rqs[cpu].avg_rt, running)
    }

    /// `update_dl_rq_load_avg(rq_clock_pelt(rq), rq, running)`.
    pub(crate) fn update_dl_rq_load_avg(&mut self, cpu: usize, running: bool) -> bool {
        let now = self.rq_clock_pelt(cpu);
        update_class_rq_load_avg(now, &mut self.rqs[cpu].avg_dl, running)
    }

    /// `update_other_load_avgs()`: both signals brought up to date, running
    /// for the class of the current task (a PI-boosted task counts as RT).
    pub(crate) fn update_other_load_avgs(&mut self, cpu: usize) -> bool {
        let class = self.class_of_curr(cpu);
        let rt = self.update_rt_rq_load_avg(cpu, class == SchedClass::Rt);
        let dl = self.update_dl_rq_load_avg(cpu, class == SchedClass::Dl);
        rt | dl
    }

    /// `others_have_blocked()`: a signal still to decay keeps the CPU's
    /// blocked load alive for the nohz idle balancer.
    pub(crate) fn others_have_blocked(&self, cpu: usize) -> bool {
        self.cpu_util_rt(cpu) != 0 || self.cpu_util_dl(cpu) != 0
    }

    /// `cpu_util_rt()`.
    pub fn cpu_util_rt(&self, cpu: usize) -> u64 {
        self.rqs[cpu].avg_rt.util_avg
    }

    /// `cpu_util_dl()`.
    pub fn cpu_util_dl(&self, cpu: usize) -> u64 {
        self.rqs[cpu].avg_dl.util_avg
    }
}
