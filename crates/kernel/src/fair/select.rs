//! `fair.c`'s wakeup placement: `select_task_rq_fair()` with
//! `record_wakee()`/`wake_wide()`, `wake_affine()`, `select_idle_sibling()`
//! and its helpers, fork balancing (`sched_balance_find_dst_cpu()`), and the
//! idle-core / SIS_UTIL bookkeeping they read.
//!
//! EAS's `find_energy_efficient_cpu()` is in [`crate::fair::eas`].
//!
//! Simplified: no core scheduling cookies,
//! no cluster (`SD_CLUSTER`) pass in `select_idle_cpu()` since the model's
//! topologies have no L2 clusters, no NUMA balancing preferences.
//! Besides the balancer's update, SIS_UTIL's scan budget is also recomputed
//! from the tick once per LLC balance interval (`tick_update_idle_cpu_scan()`).
//!
//! Follows 6.12.x; [`crate::profile::Profile`] holds the rules of other versions.

use crate::core::Kernel;
use crate::fair::capacity::UclampId;
use crate::fair::lb::{group_classify, GroupType, SgLbStats};
use crate::features::Feature;
use crate::sched::{wflags::*, TaskId, WakeeStats};
use crate::topology::sd_flags::*;
use schedlab_topology::{CpuSet, CpuWrap};

/// Where `select_idle_sibling()` found its CPU (for tests and decision events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SisRule {
    Target,
    Prev,
    PerCpuKthread,
    RecentUsed,
    AsymCapacity,
    IdleSmt,
    IdleCore,
    IdleCpu,
    Fallback,
}

impl Kernel {
    /// The `WakeeStats` of whatever runs on the executing CPU (`current`).
    fn current_wakee(&mut self) -> &mut WakeeStats {
        let cpu = self.exec_cpu;
        match self.rqs[cpu].curr {
            Some(c) => &mut self.tasks[c as usize].wakee,
            None => &mut self.rqs[cpu].idle_wakee,
        }
    }

    /// `record_wakee()`: count how often `current` switches between wakees,
    /// halving the count once a second.
    fn record_wakee(&mut self, p: TaskId) {
        let now = self.now;
        let w = self.current_wakee();
        if now > w.flip_decay_ts + 1_000_000_000 {
            w.flips >>= 1;
            w.flip_decay_ts = now;
        }
        if w.last_wakee != Some(p) {
            w.last_wakee = Some(p);
            w.flips += 1;
        }
    }

    /// `wake_wide()`: a 1:N waker pattern wider than the LLC stops wake-affine.
    fn wake_wide(&mut self, p: TaskId) -> bool {
        let mut master = self.current_wakee().flips;
        let mut slave = self.tasks[p as usize].wakee.flips;
        let factor = self.domains.cpus[self.exec_cpu].sd_llc_size;
        if master < slave {
            std::mem::swap(&mut master, &mut slave);
        }
        !(slave < factor || master < slave * factor)
    }

    /// `cfs_h_nr_delayed()`.
    fn cfs_h_nr_delayed(&self, cpu: usize) -> u32 {
        self.rqs[cpu].cfs.h_nr_queued - self.rqs[cpu].cfs.h_nr_runnable
    }

    /// `wake_affine_idle()`: `None` is "no opinion" (`nr_cpumask_bits`).
    fn wake_affine_idle(&self, this_cpu: usize, prev_cpu: usize, sync: bool) -> Option<usize> {
        if self.available_idle_cpu(this_cpu) && self.domains.cpus_share_cache(this_cpu, prev_cpu) {
            return Some(if self.available_idle_cpu(prev_cpu) { prev_cpu } else { this_cpu });
        }
        if sync && self.rqs[this_cpu].nr_running - self.cfs_h_nr_delayed(this_cpu) == 1 {
            return Some(this_cpu);
        }
        if self.available_idle_cpu(prev_cpu) {
            return Some(prev_cpu);
        }
        None
    }

    /// `wake_affine_weight()`: pull to the waker's CPU when its load, with the
    /// wakee added, stays below prev's without it (biased by WA_BIAS).
    fn wake_affine_weight(
        &self,
        imbalance_pct: u64,
        p: TaskId,
        this_cpu: usize,
        prev_cpu: usize,
        sync: bool,
    ) -> Option<usize> {
        let mut this_eff_load = self.cpu_load(this_cpu) as i128;
        if sync {
            if let Some(c) = self.rqs[this_cpu].curr {
                let current_load = self.task_h_load(c) as i128;
                if current_load > this_eff_load {
                    return Some(this_cpu);
                }
                this_eff_load -= current_load;
            }
        }
        let task_load = self.task_h_load(p) as i128;
        this_eff_load += task_load;
        if self.feat(Feature::WA_BIAS) {
            this_eff_load *= 100;
        }
        this_eff_load *= self.rqs[prev_cpu].cpu_capacity as i128;
        let mut prev_eff_load = self.cpu_load(prev_cpu) as i128 - task_load;
        if self.feat(Feature::WA_BIAS) {
            prev_eff_load *= 100 + (imbalance_pct as i128 - 100) / 2;
        }
        prev_eff_load *= self.rqs[this_cpu].cpu_capacity as i128;
        if sync {
            prev_eff_load += 1;
        }
        (this_eff_load < prev_eff_load).then_some(this_cpu)
    }

    /// `wake_affine()`: the waker's CPU if chosen, else prev.
    fn wake_affine(&self, sd_imbalance_pct: u64, p: TaskId, this_cpu: usize, prev_cpu: usize, sync: bool) -> usize {
        let mut target = None;
        if self.feat(Feature::WA_IDLE) {
            target = self.wake_affine_idle(this_cpu, prev_cpu, sync);
        }
        if self.feat(Feature::WA_WEIGHT) && target.is_none() {
            target = self.wake_affine_weight(sd_imbalance_pct, p, this_cpu, prev_cpu, sync);
        }
        if target != Some(this_cpu) {
            prev_cpu
        } else {
            this_cpu
        }
    }

    /// `select_task_rq_fair()`.
    pub(crate) fn select_task_rq_fair(&mut self, p: TaskId, prev_cpu: usize, wake_flags: u32) -> usize {
        let sync = wake_flags & WF_SYNC != 0;
        let mut cpu = self.exec_cpu;
        let mut new_cpu = prev_cpu;
        let mut want_affine = false;
        let sd_flag = wake_flags & 0xF;
        if wake_flags & WF_DELAYED != 0 {
            // RFC TTWU_QUEUE_DELAYED: prev_cpu is the waker's CPU and we run on
            // the task's CPU; swap so wake_affine sees them the right way round.
            std::mem::swap(&mut cpu, &mut new_cpu);
        }
        if wake_flags & WF_TTWU != 0 {
            self.record_wakee(p);
            if wake_flags & WF_CURRENT_CPU != 0 && self.tasks[p as usize].cpus_mask.contains(cpu) {
                return cpu;
            }
            // EAS (fair/eas.rs): while the root domain is not overutilized,
            // the energy-aware choice stands.
            if !self.is_rd_overutilized(self.rqs[self.exec_cpu].rd) {
                if let Some(target) = self.find_energy_efficient_cpu(p, prev_cpu) {
                    return target;
                }
                new_cpu = prev_cpu;
            }
            want_affine = !self.wake_wide(p) && self.tasks[p as usize].cpus_mask.contains(cpu);
        }
        let mut sd: Option<usize> = None;
        let ndom = self.domains.cpus[cpu].domains.len();
        for i in 0..ndom {
            let dom = &self.domains.cpus[cpu].domains[i];
            if want_affine && dom.flags & SD_WAKE_AFFINE != 0 && dom.span.contains(prev_cpu) {
                if cpu != prev_cpu {
                    let pct = dom.imbalance_pct as u64;
                    new_cpu = self.wake_affine(pct, p, cpu, prev_cpu, sync);
                }
                sd = None;
                break;
            }
            if dom.flags & sd_flag != 0 {
                sd = Some(i);
            } else if !want_affine {
                break;
            }
        }
        if let Some(sd) = sd {
            new_cpu = self.sched_balance_find_dst_cpu(sd, p, cpu, prev_cpu, sd_flag);
        } else if wake_flags & WF_TTWU != 0 {
            new_cpu = self.select_idle_sibling(p, prev_cpu, new_cpu).0;
        }
        new_cpu
    }

    /// `__select_idle_cpu()`'s test: `available_idle_cpu() || sched_idle_cpu()`.
    fn idle_or_sched_idle(&self, cpu: usize) -> bool {
        self.available_idle_cpu(cpu) || self.sched_idle_cpu(cpu)
    }

    /// `asym_fits_cpu()` (fair.c, 6.12): on asymmetric-capacity machines the
    /// task must fully fit `cpu`, its utilisation and its clamps
    /// (`util_fits_cpu() > 0`); elsewhere any CPU fits.
    fn asym_fits_cpu(&self, util: u64, util_min: u64, util_max: u64, cpu: usize) -> bool {
        if self.sched_asym_cpucap_active() {
            return self.util_fits_cpu(util, util_min, util_max, cpu) > 0;
        }
        true
    }

    /// `sched_asym_cpucap_active()`.
    fn sched_asym_cpucap_active(&self) -> bool {
        debug_assert_eq!(self.asym_cpucap_active, self.domains.cpus.iter().any(|c| c.sd_asym_cpucapacity.is_some()));
        self.asym_cpucap_active
    }

    /// `select_idle_sibling()`: find an idle CPU sharing the target's cache,
    /// in the kernel's order. Returns the CPU and which rule chose it.
    ///
    /// On asymmetric-capacity machines (6.12) the task's averages are synced
    /// first and each early exit also needs [`Kernel::asym_fits_cpu`]; the
    /// scan is then `select_idle_capacity()` over `sd_asym_cpucapacity`.
    pub fn select_idle_sibling(&mut self, p: TaskId, prev: usize, target: usize) -> (usize, SisRule) {
        let (mut util, mut util_min, mut util_max) = (0, 0, 0);
        if self.sched_asym_cpucap_active() {
            self.sync_entity_load_avg(p);
            util = self.task_util(p);
            util_min = self.uclamp_eff_value(p, UclampId::Min);
            util_max = self.uclamp_eff_value(p, UclampId::Max);
        }
        let fits = |k: &Kernel, cpu: usize| k.asym_fits_cpu(util, util_min, util_max, cpu);
        if self.idle_or_sched_idle(target) && fits(self, target) {
            return (target, SisRule::Target);
        }
        if prev != target
            && self.domains.cpus_share_cache(prev, target)
            && self.idle_or_sched_idle(prev)
            && fits(self, prev)
        {
            return (prev, SisRule::Prev);
        }
        // The per-CPU kthread case needs a kthread waker: workload threads never are.
        let recent = self.tasks[p as usize].recent_used_cpu;
        self.tasks[p as usize].recent_used_cpu = prev;
        if recent != prev
            && recent != target
            && self.domains.cpus_share_cache(recent, target)
            && self.idle_or_sched_idle(recent)
            && self.tasks[p as usize].cpus_mask.contains(recent)
            && fits(self, recent)
        {
            return (recent, SisRule::RecentUsed);
        }
        if self.sched_asym_cpucap_active() {
            if let Some(i) = self.domains.cpus[target].sd_asym_cpucapacity {
                let span = self.domains.cpus[target].domains[i].span;
                let c = self.select_idle_capacity(p, span, target);
                return (c.unwrap_or(target), SisRule::AsymCapacity);
            }
        }
        let Some(llc) = self.domains.cpus[target].sd_llc else { return (target, SisRule::Fallback) };
        let llc_span = self.domains.cpus[target].domains[llc].span;
        let mut has_idle_core = false;
        if self.smt_active {
            has_idle_core = self.test_idle_cores(target);
            if !has_idle_core && self.domains.cpus_share_cache(prev, target) {
                if let Some(i) = self.select_idle_smt(p, llc_span, prev) {
                    return (i, SisRule::IdleSmt);
                }
            }
        }
        if let Some(i) = self.select_idle_cpu(p, llc_span, has_idle_core, target) {
            return (i, if has_idle_core { SisRule::IdleCore } else { SisRule::IdleCpu });
        }
        (target, SisRule::Fallback)
    }

    /// Index of `cpu`'s `sd_llc_shared` (its LLC's `sd_llc_id`).
    fn llc_shared_idx(&self, cpu: usize) -> usize {
        self.domains.cpus[cpu].sd_llc_id
    }

    /// `test_idle_cores()`.
    fn test_idle_cores(&self, cpu: usize) -> bool {
        self.llc_shared[self.llc_shared_idx(cpu)].has_idle_cores
    }

    /// `set_idle_cores()`.
    fn set_idle_cores(&mut self, cpu: usize, val: bool) {
        let i = self.llc_shared_idx(cpu);
        self.llc_shared[i].has_idle_cores = val;
    }

    /// `__update_idle_core()`: a CPU going idle whose SMT siblings are all
    /// idle marks its LLC as having an idle core.
    pub(crate) fn __update_idle_core(&mut self, core: usize) {
        if !self.smt_active || self.test_idle_cores(core) {
            return;
        }
        let siblings_idle =
            self.smt_masks[core].iter_in(self.smt_words[core]).all(|c| c == core || self.available_idle_cpu(c));
        if siblings_idle {
            self.set_idle_cores(core, true);
        }
    }

    /// `select_idle_smt()`: an idle SMT sibling of `target` inside the LLC.
    fn select_idle_smt(&self, p: TaskId, llc_span: CpuSet, target: usize) -> Option<usize> {
        let mut siblings =
            self.smt_masks[target].iter_and_in(&self.tasks[p as usize].cpus_mask, self.smt_words[target]);
        siblings.find(|&c| c != target && llc_span.contains(c) && self.idle_or_sched_idle(c))
    }

    /// `select_idle_core()`: the whole core idle → the core; remembers the
    /// first idle thread seen in `idle_cpu`, and drops the core from `cpus`.
    fn select_idle_core(&self, core: usize, cpus: &mut CpuSet, idle_cpu: &mut Option<usize>) -> Option<usize> {
        let mut idle = true;
        for cpu in self.smt_masks[core].iter_in(self.smt_words[core]) {
            if !self.available_idle_cpu(cpu) {
                idle = false;
                if idle_cpu.is_none() {
                    if self.sched_idle_cpu(cpu) && cpus.contains(cpu) {
                        *idle_cpu = Some(cpu);
                        break;
                    }
                    continue;
                }
                break;
            }
            if idle_cpu.is_none() && cpus.contains(cpu) {
                *idle_cpu = Some(cpu);
            }
        }
        if idle {
            return Some(core);
        }
        for c in self.smt_masks[core].iter_in(self.smt_words[core]) {
            cpus.remove(c);
        }
        None
    }

    /// `select_idle_cpu()`: scan the LLC from `target + 1`, wrapping; whole
    /// idle cores first when there are any, else single idle CPUs within the
    /// SIS_UTIL budget.
    fn select_idle_cpu(&mut self, p: TaskId, llc_span: CpuSet, has_idle_core: bool, target: usize) -> Option<usize> {
        let mut cpus = llc_span.and(&self.tasks[p as usize].cpus_mask);
        let mut nr = i64::MAX;
        let mut idle_cpu: Option<usize> = None;
        if self.feat(Feature::SIS_UTIL) {
            nr = self.llc_shared[self.llc_shared_idx(target)].nr_idle_scan as i64 + 1;
            if nr == 1 {
                return None;
            }
        }
        let mut scan = CpuWrap::new(target + 1, self.nr_cpus());
        while let Some(cpu) = scan.next_in(&cpus) {
            if has_idle_core {
                if let Some(i) = self.select_idle_core(cpu, &mut cpus, &mut idle_cpu) {
                    return Some(i);
                }
            } else {
                nr -= 1;
                if nr <= 0 {
                    return None;
                }
                if self.idle_or_sched_idle(cpu) {
                    idle_cpu = Some(cpu);
                    break;
                }
            }
        }
        if has_idle_core {
            self.set_idle_cores(target, false);
        }
        idle_cpu
    }

    /// `select_idle_capacity()` (fair.c, 6.12): scanning the
    /// `sd_asym_cpucapacity` span from `target` (wrapping), the first idle
    /// CPU the task fully fits (utilisation and clamps); failing that, the
    /// idle CPU that fits best — one where only the `uclamp_min` boost does
    /// not fit (-1) before one where the util does not (0) — and, among
    /// equals, the one with the most capacity (`get_actual_cpu_capacity()`
    /// for the -1 kind, `capacity_of()` otherwise: the same here).
    fn select_idle_capacity(&self, p: TaskId, span: CpuSet, target: usize) -> Option<usize> {
        let cpus = span.and(&self.tasks[p as usize].cpus_mask);
        let util = self.task_util(p);
        let util_min = self.uclamp_eff_value(p, UclampId::Min);
        let util_max = self.uclamp_eff_value(p, UclampId::Max);
        let (mut best_cap, mut best_fits, mut best_cpu) = (0, 0, None);
        let mut scan = CpuWrap::new(target, self.nr_cpus());
        while let Some(cpu) = scan.next_in(&cpus) {
            if !self.idle_or_sched_idle(cpu) {
                continue;
            }
            let fits = self.util_fits_cpu(util, util_min, util_max, cpu);
            if fits > 0 {
                return Some(cpu);
            }
            let caps = self.cpu_capacities(cpu);
            let cap = if fits < 0 { caps.actual } else { caps.capacity };
            if fits < best_fits || (fits == best_fits && cap > best_cap) {
                (best_cap, best_fits, best_cpu) = (cap, fits, Some(cpu));
            }
        }
        best_cpu
    }

    /// SIS_UTIL's `update_idle_cpu_scan()`: the fuller the LLC, the fewer
    /// CPUs `select_idle_cpu()` may probe.
    pub(crate) fn update_idle_cpu_scan(&mut self, cpu: usize, sum_util: u64, imbalance_pct: u64) {
        if !self.feat(Feature::SIS_UTIL) {
            return;
        }
        let llc_weight = self.domains.cpus[cpu].sd_llc_size as u64;
        let x = sum_util / llc_weight;
        let tmp = (x * x * imbalance_pct * imbalance_pct / (10000 * 1024)).min(1024);
        let y = (1024 - tmp) * llc_weight / 1024;
        let i = self.llc_shared_idx(cpu);
        self.llc_shared[i].nr_idle_scan = y as u32;
    }

    /// Not in the kernel: on a tick, refresh the LLC's SIS_UTIL budget once
    /// per LLC balance interval. It predates the model's load balancer (which
    /// now also calls `update_idle_cpu_scan()` from `update_sd_lb_stats()`)
    /// and is kept because removing it changes results.
    pub(crate) fn tick_update_idle_cpu_scan(&mut self, cpu: usize) {
        let Some(llc) = self.domains.cpus[cpu].sd_llc else { return };
        let dom = &self.domains.cpus[cpu].domains[llc];
        let interval = dom.min_interval * 1_000_000;
        let (span, pct) = (dom.span, dom.imbalance_pct as u64);
        let i = self.llc_shared_idx(cpu);
        if self.now < self.llc_shared[i].last_scan_update + interval {
            return;
        }
        self.llc_shared[i].last_scan_update = self.now;
        let sum_util: u64 = span.iter().map(|c| self.cpu_util_cfs(c)).sum();
        self.update_idle_cpu_scan(cpu, sum_util, pct);
    }

    /// `idle_cpu_without()`: idle if `p` were not running there.
    fn idle_cpu_without(&self, cpu: usize, p: TaskId) -> bool {
        let rq = &self.rqs[cpu];
        if rq.curr.is_some() && rq.curr != Some(p) {
            return false;
        }
        !rq.ttwu_pending
    }

    /// `update_sg_wakeup_stats()`.
    fn update_sg_wakeup_stats(
        &self,
        imbalance_pct: u64,
        asym_cap: bool,
        span: CpuSet,
        weight: u32,
        capacity: u64,
        p: TaskId,
    ) -> SgLbStats {
        let mut sgs = SgLbStats::new();
        if asym_cap {
            sgs.group_misfit_task_load = 1;
        }
        for i in span.and(&self.tasks[p as usize].cpus_mask).iter() {
            sgs.group_load += self.cpu_load_without(i, p);
            sgs.group_util += self.cpu_util_without(i, p);
            sgs.group_runnable += self.cpu_runnable_without(i, p);
            let local = (self.rqs[i].curr == Some(p)) as u32;
            sgs.sum_h_nr_running += self.lb_h_nr(i) - local;
            let nr_running = self.rqs[i].nr_running - local;
            sgs.sum_nr_running += nr_running;
            if nr_running == 0 && self.idle_cpu_without(i, p) {
                sgs.idle_cpus += 1;
            }
            if asym_cap && sgs.group_misfit_task_load != 0 && self.task_fits_cpu(p, i) {
                sgs.group_misfit_task_load = 0;
            }
        }
        sgs.group_capacity = capacity;
        sgs.group_weight = weight;
        // The wakeup statistics do not read `sgc->imbalance` (the balancer's).
        sgs.group_type = group_classify(imbalance_pct, false, &sgs);
        if matches!(sgs.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            sgs.avg_load = sgs.group_load * 1024 / sgs.group_capacity.max(1);
        }
        sgs
    }

    /// `sched_balance_find_dst_group()` (was `find_idlest_group()`): the
    /// group of `sd` to place a new task in, or `None` to stay local.
    fn sched_balance_find_dst_group(&self, cpu: usize, sd: usize, p: TaskId, this_cpu: usize) -> Option<usize> {
        let dom = &self.domains.cpus[cpu].domains[sd];
        let pct = dom.imbalance_pct as u64;
        let asym_cap = dom.flags & SD_ASYM_CPUCAPACITY != 0;
        let mask = self.tasks[p as usize].cpus_mask;
        let (mut idlest, mut idlest_sgs) =
            (None, SgLbStats { avg_load: u32::MAX as u64, group_type: GroupType::Overloaded, ..SgLbStats::new() });
        let mut local: Option<(usize, SgLbStats)> = None;
        for (gi, g) in dom.groups.iter().enumerate() {
            if !g.span.intersects(&mask) {
                continue;
            }
            let sgs = self.update_sg_wakeup_stats(pct, asym_cap, g.span, g.weight, self.sgc[g.id].capacity, p);
            if g.span.contains(this_cpu) {
                local = Some((gi, sgs));
            } else if update_pick_idlest(
                &idlest_sgs,
                idlest.map(|i: usize| self.sgc[dom.groups[i].id].max_capacity),
                &sgs,
                self.sgc[g.id].max_capacity,
            ) {
                idlest = Some(gi);
                idlest_sgs = sgs;
            }
        }
        let idlest = idlest?;
        let Some((_, local_sgs)) = local else { return Some(idlest) };
        if local_sgs.group_type < idlest_sgs.group_type {
            return None;
        }
        if local_sgs.group_type > idlest_sgs.group_type {
            return Some(idlest);
        }
        match local_sgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = 1024 * (pct - 100) / 100;
                if dom.flags & SD_NUMA != 0 && idlest_sgs.avg_load + imbalance >= local_sgs.avg_load {
                    return None;
                }
                if idlest_sgs.avg_load >= local_sgs.avg_load + imbalance {
                    return None;
                }
                if 100 * local_sgs.avg_load <= pct * idlest_sgs.avg_load {
                    return None;
                }
            }
            GroupType::Imbalanced | GroupType::AsymPacking | GroupType::SmtBalance => return None,
            GroupType::MisfitTask => return None,
            GroupType::HasSpare => {
                if local_sgs.idle_cpus >= idlest_sgs.idle_cpus {
                    return None;
                }
            }
        }
        Some(idlest)
    }

    /// `sched_balance_find_dst_group_cpu()` (was `find_idlest_group_cpu()`):
    /// the most recently idled CPU (all idle states cost the same here), else
    /// the least loaded.
    fn sched_balance_find_dst_group_cpu(&self, span: CpuSet, p: TaskId, this_cpu: usize) -> usize {
        if span.len() == 1 {
            return span.first().unwrap();
        }
        let mut min_load = u64::MAX;
        let mut least_loaded = this_cpu;
        let mut shallowest: Option<usize> = None;
        let mut latest_idle: u64 = 0;
        for i in span.and(&self.tasks[p as usize].cpus_mask).iter() {
            if self.sched_idle_cpu(i) {
                return i;
            }
            if self.available_idle_cpu(i) {
                let stamp = self.rqs[i].idle_stamp.unwrap_or(0);
                if shallowest.is_none() || stamp > latest_idle {
                    latest_idle = stamp;
                    shallowest = Some(i);
                }
            } else if shallowest.is_none() {
                let load = self.cpu_load(i);
                if load < min_load {
                    min_load = load;
                    least_loaded = i;
                }
            }
        }
        shallowest.unwrap_or(least_loaded)
    }

    /// `sched_balance_find_dst_cpu()` (was `find_idlest_cpu()`): fork/exec
    /// placement walking down from the highest domain with the balance flag.
    fn sched_balance_find_dst_cpu(&self, sd_idx: usize, p: TaskId, cpu: usize, prev_cpu: usize, sd_flag: u32) -> usize {
        let mask = self.tasks[p as usize].cpus_mask;
        let mut cpu = cpu;
        if !self.domains.cpus[cpu].domains[sd_idx].span.intersects(&mask) {
            return prev_cpu;
        }
        let mut new_cpu = cpu;
        let mut sd = Some(sd_idx);
        while let Some(i) = sd {
            let dom = &self.domains.cpus[cpu].domains[i];
            let child = i.checked_sub(1);
            if dom.flags & sd_flag == 0 {
                sd = child;
                continue;
            }
            let Some(g) = self.sched_balance_find_dst_group(cpu, i, p, cpu) else {
                sd = child;
                continue;
            };
            let span = dom.groups[g].span;
            new_cpu = self.sched_balance_find_dst_group_cpu(span, p, cpu);
            if new_cpu == cpu {
                sd = child;
                continue;
            }
            let weight = dom.span_weight;
            cpu = new_cpu;
            sd = None;
            for (j, tmp) in self.domains.cpus[cpu].domains.iter().enumerate() {
                if weight <= tmp.span_weight {
                    break;
                }
                if tmp.flags & sd_flag != 0 {
                    sd = Some(j);
                }
            }
        }
        new_cpu
    }
}

/// `update_pick_idlest()`: is `sgs` (of a group whose largest CPU capacity is
/// `max_capacity`) a better (idler) group than the best so far, `idlest`
/// (of `idlest_max_capacity`, `None` before the first)?
fn update_pick_idlest(
    idlest: &SgLbStats,
    idlest_max_capacity: Option<u64>,
    sgs: &SgLbStats,
    max_capacity: u64,
) -> bool {
    if sgs.group_type < idlest.group_type {
        return true;
    }
    if sgs.group_type > idlest.group_type {
        return false;
    }
    match sgs.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => idlest.avg_load > sgs.avg_load,
        GroupType::Imbalanced | GroupType::AsymPacking | GroupType::SmtBalance => false,
        // A misfit task goes to the group with the biggest CPU.
        GroupType::MisfitTask => idlest_max_capacity.is_none_or(|m| m < max_capacity),
        GroupType::HasSpare => {
            if idlest.idle_cpus > sgs.idle_cpus {
                return false;
            }
            !(idlest.idle_cpus == sgs.idle_cpus && idlest.group_util <= sgs.group_util)
        }
    }
}
