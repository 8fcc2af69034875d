//! `fair.c`'s Energy Aware Scheduling (6.12): the overutilized state
//! (`cpu_overutilized()`, `is_rd_overutilized()`, `set_rd_overutilized()`,
//! `check_update_overutilized_status()`), the utilisation the energy
//! estimate reads (`effective_cpu_util()`, schedutil's
//! `sugov_effective_cpu_perf()`), and the energy-aware wakeup
//! (`find_energy_efficient_cpu()` with `compute_energy()`,
//! `eenv_task_busy_time()`, `eenv_pd_busy_time()`, `eenv_pd_max_util()`).
//!
//! EAS is on (`sched_energy_enabled()`) when some root domain got
//! performance domains at boot ([`crate::topology::perf_domains`]); without
//! `[[perf_domain]]`s with an energy model nothing here changes a decision:
//! `is_rd_overutilized()` is then always true, as in the kernel.
//!
//! Simplified:
//! - `cpu_util_irq()` is 0 (Debian's 6.12 does not account IRQ time,
//!   [`crate::pelt::other`]), so `effective_cpu_util()` is the CFS, RT and
//!   DL utilisation summed, capped at the CPU's capacity, with its floor
//!   `max(cpu_bw_dl(), rq uclamp_min)` raised to the capacity while an RT
//!   task is runnable and uclamp is unused.
//! - The runqueue's clamps (`uclamp_rq_get()`) are computed when read as the
//!   largest clamps of the tasks queued on the CPU (the kernel's buckets keep
//!   the same maximum); with none queued (`uclamp_rq_is_idle()`) they are
//!   0 and 1024 (the kernel keeps the last task's `uclamp_max` there to
//!   hold blocked utilisation: a difference only with uclamp in use).
//! - `task_util_est()` is `task_util()` (no UTIL_EST).
//! - Frequency: `get_actual_cpu_capacity()` has no frequency or thermal
//!   cap (no `scaling_max_freq` limits or thermal pressure are modeled).
//!   The energy estimate never reads the current frequency: it predicts
//!   the OPP schedutil would pick from utilisation with the governor's own
//!   [`sugov_effective_cpu_perf`](crate::cpufreq_schedutil::sugov_effective_cpu_perf)
//!   (the 1.25 headroom), on frequency-invariant utilisation
//!   ([`crate::cpufreq`] scales PELT by `arch_scale_freq_capacity()`).
//! - The wakeup path's CPU time is not charged beyond what the model charges
//!   for `select_task_rq_fair()` itself.

use crate::core::Kernel;
use crate::cpufreq_schedutil::sugov_effective_cpu_perf;
use crate::energy_model::em_cpu_energy;
use crate::fair::capacity::UclampId;
use crate::pelt::cpu_util;
use crate::pelt::SCHED_CAPACITY_SCALE;
use crate::sched::{OnRq, TaskId};

/// `struct energy_env`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnergyEnv {
    /// The waking task's utilisation (`eenv_task_busy_time()`).
    pub task_busy_time: u64,
    /// The domain's utilisation without the task (`eenv_pd_busy_time()`).
    pub pd_busy_time: u64,
    /// The domain's CPUs' capacity (`get_actual_cpu_capacity()`).
    pub cpu_cap: u64,
    /// `cpu_cap` times the domain's CPUs.
    pub pd_cap: u64,
}

impl Kernel {
    /// `sched_energy_enabled()`: the `sched_energy_present` static key.
    pub fn sched_energy_enabled(&self) -> bool {
        self.sched_energy_present
    }

    /// `uclamp_rq_get(rq, id)` and `uclamp_rq_is_idle(rq)` (see the module
    /// doc): the largest clamp among the tasks queued on `cpu`.
    pub(crate) fn uclamp_rq(&self, cpu: usize, id: UclampId) -> (u64, bool) {
        let mut v: Option<u64> = None;
        for (i, t) in self.tasks.iter().enumerate() {
            if t.cpu == cpu && t.on_rq == OnRq::Queued {
                let c = self.uclamp_eff_value(i as TaskId, id);
                v = Some(v.map_or(c, |x| x.max(c)));
            }
        }
        match (v, id) {
            (Some(v), _) => (v, false),
            (None, UclampId::Min) => (0, true),
            (None, UclampId::Max) => (SCHED_CAPACITY_SCALE, true),
        }
    }

    /// `cpu_bw_dl()`: the CPU's active deadline bandwidth in capacity units.
    pub(crate) fn cpu_bw_dl(&self, cpu: usize) -> u64 {
        (self.rqs[cpu].dl.running_bw * SCHED_CAPACITY_SCALE) >> crate::deadline::BW_SHIFT
    }

    /// `effective_cpu_util(cpu, util_cfs, &min, &max)` (fair.c, 6.12), with
    /// the simplifications of the module doc: returns the utilisation and
    /// the `min`/`max` performance hints.
    pub(crate) fn effective_cpu_util(&self, cpu: usize, util_cfs: u64) -> (u64, u64, u64) {
        let scale = self.topo.cpus[cpu].capacity as u64;
        let mut min = self.cpu_bw_dl(cpu).max(if self.uclamp_used { self.uclamp_rq(cpu, UclampId::Min).0 } else { 0 });
        if !self.uclamp_used && self.rqs[cpu].rt.rt_nr_running > 0 {
            min = min.max(scale);
        }
        let max = scale.min(if self.uclamp_used { self.uclamp_rq(cpu, UclampId::Max).0 } else { SCHED_CAPACITY_SCALE });
        // RT and DL time is time lost to CFS in the same PELT windows, so
        // the signals add up; no IRQ scaling (the module doc).
        let util = util_cfs + self.cpu_util_rt(cpu) + self.cpu_util_dl(cpu);
        (util.min(scale), min, max)
    }

    /// `cpu_overutilized(cpu)` (fair.c, 6.12): with EAS on, the CPU's CFS
    /// utilisation does not fit its capacity (`util_fits_cpu()` with the
    /// runqueue's clamps, 20 % headroom).
    pub fn cpu_overutilized(&self, cpu: usize) -> bool {
        if !self.sched_energy_enabled() {
            return false;
        }
        let (min, max) = if self.uclamp_used {
            (self.uclamp_rq(cpu, UclampId::Min).0, self.uclamp_rq(cpu, UclampId::Max).0)
        } else {
            (0, SCHED_CAPACITY_SCALE)
        };
        self.util_fits_cpu(self.cpu_util_cfs(cpu), min, max, cpu) == 0
    }

    /// `is_rd_overutilized(rd)`: true whenever EAS is off.
    pub fn is_rd_overutilized(&self, rd: usize) -> bool {
        !self.sched_energy_enabled() || self.rds[rd].overutilized
    }

    /// `set_rd_overutilized(rd, flag)`: only with EAS on.
    pub(crate) fn set_rd_overutilized(&mut self, rd: usize, flag: bool) {
        if !self.sched_energy_enabled() {
            return;
        }
        self.rds[rd].overutilized = flag;
    }

    /// `check_update_overutilized_status(rq)`: set the root domain's flag
    /// when this CPU is overutilized (from `enqueue_task_fair()`, not for a
    /// new task's first enqueue, and `task_tick_fair()`). Only the load
    /// balancer clears it.
    pub(crate) fn check_update_overutilized_status(&mut self, cpu: usize) {
        let rd = self.rqs[cpu].rd;
        if !self.is_rd_overutilized(rd) && self.cpu_overutilized(cpu) {
            self.set_rd_overutilized(rd, true);
        }
    }

    /// `cpu_util(cpu, p, dst_cpu, boost)` for the waking task `p`.
    fn cpu_util_p(&self, cpu: usize, p: TaskId, dst_cpu: Option<usize>, boost: bool) -> u64 {
        let t = &self.tasks[p as usize];
        let cap = self.topo.cpus[cpu].capacity as u64;
        cpu_util(&self.rqs[cpu].cfs.avg, cpu, Some((&t.se.avg, t.cpu)), dst_cpu, boost, cap)
    }

    /// `eenv_task_busy_time()`: the task's utilisation (no IRQ scaling here).
    fn eenv_task_busy_time(&self, eenv: &mut EnergyEnv, p: TaskId, prev_cpu: usize) {
        let max_cap = self.topo.cpus[prev_cpu].capacity as u64;
        eenv.task_busy_time = self.task_util(p).min(max_cap);
    }

    /// `eenv_pd_busy_time()`: the domain's summed effective utilisation
    /// without the task, at most `pd_cap`.
    fn eenv_pd_busy_time(&self, eenv: &mut EnergyEnv, pd_cpus: &schedlab_topology::CpuSet, p: TaskId) {
        let mut busy_time = 0;
        for cpu in pd_cpus.iter() {
            let util = self.cpu_util_p(cpu, p, None, false);
            busy_time += self.effective_cpu_util(cpu, util).0;
        }
        eenv.pd_busy_time = eenv.pd_cap.min(busy_time);
    }

    /// `eenv_pd_max_util()`: the highest performance schedutil would ask for
    /// among the domain's CPUs with `p` on `dst_cpu` (`None`: nowhere in the
    /// domain), the task's clamps counted on its CPU when uclamp is used; at
    /// most `cpu_cap`.
    fn eenv_pd_max_util(
        &self,
        eenv: &EnergyEnv,
        pd_cpus: &schedlab_topology::CpuSet,
        p: TaskId,
        dst_cpu: Option<usize>,
    ) -> u64 {
        let mut max_util = 0;
        for cpu in pd_cpus.iter() {
            let util = self.cpu_util_p(cpu, p, dst_cpu, true);
            let (eff, mut min, mut max) = self.effective_cpu_util(cpu, util);
            if dst_cpu == Some(cpu) && self.uclamp_used {
                min = min.max(self.uclamp_eff_value(p, UclampId::Min));
                let p_max = self.uclamp_eff_value(p, UclampId::Max);
                max = if self.uclamp_rq(cpu, UclampId::Max).1 { p_max } else { max.max(p_max) };
            }
            max_util = max_util.max(sugov_effective_cpu_perf(eff, min, max));
        }
        max_util.min(eenv.cpu_cap)
    }

    /// `compute_energy()`: the energy of performance domain `pd` (index into
    /// the energy models) with `p` on `dst_cpu`, or without it (`None`).
    pub(crate) fn compute_energy(
        &self,
        eenv: &EnergyEnv,
        pd: usize,
        pd_cpus: &schedlab_topology::CpuSet,
        p: TaskId,
        dst_cpu: Option<usize>,
    ) -> u64 {
        let max_util = self.eenv_pd_max_util(eenv, pd_cpus, p, dst_cpu);
        let mut busy_time = eenv.pd_busy_time;
        if dst_cpu.is_some() {
            busy_time = eenv.pd_cap.min(busy_time + eenv.task_busy_time);
        }
        let em = self.em[pd].as_ref().expect("rd->pd lists only domains with an energy model");
        em_cpu_energy(em, max_util, busy_time, eenv.cpu_cap)
    }

    /// `find_energy_efficient_cpu(p, prev_cpu)` (fair.c, 6.12): `None` (the
    /// kernel's -1) when the root domain has no performance domains or no
    /// `sd_asym_cpucapacity` domain of this CPU spans `prev_cpu`; else
    /// `prev_cpu` unless another CPU saves energy. In each performance
    /// domain the candidates are `prev_cpu` and the CPU with the most spare
    /// capacity among those the task fits (`util_fits_cpu()`: 1 beats -1,
    /// the uclamp_min-only misfit); a candidate's cost is the domain's energy
    /// with the task there minus without it. The best other candidate wins
    /// over `prev_cpu` when it fits better, or both fit and it costs less,
    /// or neither fits the task's uclamp_min and it has more capacity.
    pub(crate) fn find_energy_efficient_cpu(&mut self, p: TaskId, prev_cpu: usize) -> Option<usize> {
        let this_cpu = self.exec_cpu;
        let rd = self.rqs[this_cpu].rd;
        if self.rds[rd].pd.is_empty() {
            return None;
        }
        let doms = &self.domains.cpus[this_cpu];
        let sd_span = doms
            .sd_asym_cpucapacity
            .and_then(|lo| doms.domains[lo..].iter().find(|sd| sd.span.contains(prev_cpu)).map(|sd| sd.span))?;
        let target = prev_cpu;
        self.sync_entity_load_avg(p);
        let p_util_min = if self.uclamp_used { self.uclamp_eff_value(p, UclampId::Min) } else { 0 };
        let p_util_max = if self.uclamp_used { self.uclamp_eff_value(p, UclampId::Max) } else { SCHED_CAPACITY_SCALE };
        if self.task_util(p) == 0 && p_util_min == 0 {
            return Some(target);
        }
        let mut eenv = EnergyEnv::default();
        self.eenv_task_busy_time(&mut eenv, p, prev_cpu);

        let (mut prev_delta, mut best_delta) = (u64::MAX, u64::MAX);
        let (mut prev_fits, mut best_fits) = (-1i32, -1i32);
        let (mut best_actual_cap, mut prev_actual_cap) = (0u64, 0u64);
        let mut best_energy_cpu = None;
        let cpus_mask = self.tasks[p as usize].cpus_mask;
        let pds = self.rds[rd].pd.clone();
        for pd in pds {
            let (mut util_min, mut util_max) = (p_util_min, p_util_max);
            let cpus = self.em[pd].as_ref().expect("listed domains have an EM").cpus;
            let Some(first) = cpus.first() else { continue };
            let cpu_actual_cap = self.cpu_capacities(first).actual;
            eenv.cpu_cap = cpu_actual_cap;
            eenv.pd_cap = 0;
            let (mut prev_spare_cap, mut max_spare_cap) = (-1i64, -1i64);
            let mut max_spare_cap_cpu = None;
            let mut max_fits = -1i32;
            for cpu in cpus.iter() {
                eenv.pd_cap += cpu_actual_cap;
                if !sd_span.contains(cpu) || !cpus_mask.contains(cpu) {
                    continue;
                }
                let util = self.cpu_util_p(cpu, p, Some(cpu), false);
                let mut cpu_cap = self.rqs[cpu].cpu_capacity;
                if self.uclamp_used && !self.uclamp_rq(cpu, UclampId::Min).1 {
                    util_min = self.uclamp_rq(cpu, UclampId::Min).0.max(p_util_min);
                    util_max = self.uclamp_rq(cpu, UclampId::Max).0.max(p_util_max);
                }
                let fits = self.util_fits_cpu(util, util_min, util_max, cpu);
                if fits == 0 {
                    continue;
                }
                cpu_cap = cpu_cap.saturating_sub(util);
                if cpu == prev_cpu {
                    prev_spare_cap = cpu_cap as i64;
                    prev_fits = fits;
                } else if fits > max_fits || (fits == max_fits && cpu_cap as i64 > max_spare_cap) {
                    max_spare_cap = cpu_cap as i64;
                    max_spare_cap_cpu = Some(cpu);
                    max_fits = fits;
                }
            }
            if max_spare_cap_cpu.is_none() && prev_spare_cap < 0 {
                continue;
            }
            self.eenv_pd_busy_time(&mut eenv, &cpus, p);
            let base_energy = self.compute_energy(&eenv, pd, &cpus, p, None);
            if prev_spare_cap > -1 {
                prev_delta = self.compute_energy(&eenv, pd, &cpus, p, Some(prev_cpu));
                if prev_delta < base_energy {
                    return Some(target);
                }
                prev_delta -= base_energy;
                prev_actual_cap = cpu_actual_cap;
                best_delta = best_delta.min(prev_delta);
            }
            if let Some(cand) = max_spare_cap_cpu.filter(|_| max_spare_cap > prev_spare_cap) {
                if max_fits < best_fits {
                    continue;
                }
                if max_fits < 0 && cpu_actual_cap <= best_actual_cap {
                    continue;
                }
                let mut cur_delta = self.compute_energy(&eenv, pd, &cpus, p, Some(cand));
                if cur_delta < base_energy {
                    return Some(target);
                }
                cur_delta -= base_energy;
                if max_fits > 0 && best_fits > 0 && cur_delta >= best_delta {
                    continue;
                }
                best_delta = cur_delta;
                best_energy_cpu = Some(cand);
                best_fits = max_fits;
                best_actual_cap = cpu_actual_cap;
            }
        }
        if best_fits > prev_fits
            || (best_fits > 0 && best_delta < prev_delta)
            || (best_fits < 0 && best_actual_cap > prev_actual_cap)
        {
            // best_fits > -1 or a larger best_actual_cap imply a candidate.
            if let Some(cpu) = best_energy_cpu {
                return Some(cpu);
            }
        }
        Some(target)
    }
}
