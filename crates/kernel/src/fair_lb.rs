//! `fair.c`'s load balancer: `sched_balance_rq()` (was `load_balance()`) and
//! everything under it — group statistics and classification, the busiest
//! group and runqueue, `calculate_imbalance()`, `detach_tasks()` with
//! `can_migrate_task()`/`task_hot()`, ITMT asym packing, and the decision to
//! queue an active balance on the stopper.
//!
//! Simplified: no NUMA balancing (fbq types, `migrate_degrades_locality`), no
//! misfit tracking on asymmetric-capacity machines (`rq->misfit_task_load` is
//! always 0), no capacity pressure (`check_cpu_capacity()` is false: capacity
//! is never reduced by RT/IRQ time), no core scheduling, one cfs_rq level.
//! `detach_tasks()` stops after one task for newidle balancing, as preemptible
//! kernels do.

use crate::core::Kernel;
use crate::fair_select::GroupType;
use crate::features::Feature;
use crate::sched::{qflags::*, OnRq, Policy, TaskId};
use crate::topology::sd_flags::*;
use schedlab_topology::CpuSet;
use schedlab_trace::{BalanceKind, EventKind};

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
}

pub const LBF_ALL_PINNED: u32 = 0x01;
pub const LBF_NEED_BREAK: u32 = 0x02;
pub const LBF_DST_PINNED: u32 = 0x04;
pub const LBF_SOME_PINNED: u32 = 0x08;
pub const LBF_ACTIVE_LB: u32 = 0x10;
/// Seed 000 patch (K Prateek Nayak): the first migration to an idle CPU.
pub const LBF_FIRST_MIGRATION: u32 = 0x80;

/// `sysctl_sched_migration_cost`.
pub const SYSCTL_SCHED_MIGRATION_COST: u64 = 500_000;
/// `SCHED_NR_MIGRATE_BREAK` / `sysctl_sched_nr_migrate`.
pub const SCHED_NR_MIGRATE_BREAK: u32 = 32;
/// `MAX_PINNED_INTERVAL`, ms.
pub const MAX_PINNED_INTERVAL: u64 = 512;

/// `struct lb_env`.
#[derive(Clone, Debug)]
pub struct LbEnv {
    /// The CPU whose domain tree `sd` indexes (the balancing CPU).
    pub sd_cpu: usize,
    pub sd: usize,
    pub src_cpu: usize,
    pub dst_cpu: usize,
    pub dst_grpmask: CpuSet,
    pub new_dst_cpu: usize,
    pub idle: CpuIdleType,
    pub imbalance: i64,
    pub cpus: CpuSet,
    pub flags: u32,
    pub loop_: u32,
    pub loop_break: u32,
    pub loop_max: u32,
    pub migration_type: MigrationType,
    pub dst_core_idle: bool,
    /// Which path is balancing (for decision events).
    pub kind: BalanceKind,
}

/// `struct sg_lb_stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgLbStats {
    pub avg_load: u64,
    pub group_load: u64,
    pub group_capacity: u64,
    pub group_util: u64,
    pub group_runnable: u64,
    pub sum_nr_running: u32,
    pub sum_h_nr_running: u32,
    pub idle_cpus: u32,
    pub group_weight: u32,
    pub group_type: GroupType,
    pub group_asym_packing: bool,
    pub group_smt_balance: bool,
    pub group_misfit_task_load: u64,
}

impl SgLbStats {
    fn new() -> Self {
        SgLbStats {
            avg_load: 0,
            group_load: 0,
            group_capacity: 0,
            group_util: 0,
            group_runnable: 0,
            sum_nr_running: 0,
            sum_h_nr_running: 0,
            idle_cpus: 0,
            group_weight: 0,
            group_type: GroupType::HasSpare,
            group_asym_packing: false,
            group_smt_balance: false,
            group_misfit_task_load: 0,
        }
    }
}

/// `struct sd_lb_stats`: groups are indices into the domain's `groups`.
#[derive(Clone, Debug)]
pub struct SdLbStats {
    pub busiest: Option<usize>,
    pub local: Option<usize>,
    pub total_load: u64,
    pub total_capacity: u64,
    pub avg_load: u64,
    pub prefer_sibling: bool,
    pub busiest_stat: SgLbStats,
    pub local_stat: SgLbStats,
}

impl Kernel {
    /// `arch_asym_cpu_priority()`.
    fn asym_prio(&self, cpu: usize) -> i32 {
        self.topo.cpus[cpu].asym_prio
    }

    /// `sched_asym_prefer(a, b)`.
    pub fn sched_asym_prefer(&self, a: usize, b: usize) -> bool {
        self.asym_prio(a) > self.asym_prio(b)
    }

    /// `is_core_idle()`: every other SMT sibling of `cpu` is idle.
    pub fn is_core_idle(&self, cpu: usize) -> bool {
        self.smt_masks[cpu].iter().all(|s| s == cpu || self.idle_cpu(s))
    }

    pub(crate) fn sd_flags_of(&self, sd_cpu: usize, sd: usize) -> u32 {
        self.domains.cpus[sd_cpu].domains[sd].flags
    }

    /// `sched_use_asym_prio()`: ITMT priorities apply at this level, and with
    /// SMT only when the whole core is idle (or between siblings).
    pub fn sched_use_asym_prio(&self, sd_flags: u32, cpu: usize) -> bool {
        if sd_flags & SD_ASYM_PACKING == 0 {
            return false;
        }
        if !self.smt_active {
            return true;
        }
        sd_flags & SD_SHARE_CPUCAPACITY != 0 || self.is_core_idle(cpu)
    }

    /// `sched_asym()`: should `dst` pull from `src` for asym packing?
    pub fn sched_asym(&self, sd_flags: u32, dst: usize, src: usize) -> bool {
        self.sched_use_asym_prio(sd_flags, dst) && self.sched_asym_prefer(dst, src)
    }

    /// The fair task count the balancer reads: `h_nr_queued` (delayed tasks
    /// included) in 6.12, `h_nr_runnable` (excluded) from 6.14 on
    /// ("sched/fair: Use the new cfs_rq.h_nr_runnable").
    pub(crate) fn lb_h_nr(&self, cpu: usize) -> u32 {
        let cfs = &self.rqs[cpu].cfs;
        if self.profile.lb_counts_runnable_only {
            cfs.h_nr_runnable
        } else {
            cfs.h_nr_queued
        }
    }

    /// `cpu_runnable()`.
    fn cpu_runnable(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cfs.avg.runnable_avg
    }

    /// `update_sg_lb_stats()`.
    fn update_sg_lb_stats(&self, env: &LbEnv, gi: usize, local_group: bool, overloaded: &mut bool) -> SgLbStats {
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        let group = &dom.groups[gi];
        let mut sgs = SgLbStats::new();
        for i in group.span.and(&env.cpus).iter() {
            let rq = &self.rqs[i];
            sgs.group_load += self.cpu_load(i);
            sgs.group_util += self.cpu_util_cfs(i);
            sgs.group_runnable += self.cpu_runnable(i);
            sgs.sum_h_nr_running += self.lb_h_nr(i);
            let nr_running = rq.nr_running;
            sgs.sum_nr_running += nr_running;
            if nr_running > 1 {
                *overloaded = true;
            }
            if nr_running == 0 && self.idle_cpu(i) {
                sgs.idle_cpus += 1;
                continue;
            }
            // Misfit and reduced-capacity tracking are not modeled (see module doc).
        }
        sgs.group_capacity = group.capacity;
        sgs.group_weight = group.weight;
        if !local_group && env.idle != CpuIdleType::NotIdle && sgs.sum_h_nr_running > 0 {
            // sched_group_asym(): an SMT group must have exactly one busy CPU.
            let smt_ok = group.flags & SD_SHARE_CPUCAPACITY == 0 || sgs.group_weight - sgs.idle_cpus == 1;
            if smt_ok && self.sched_asym(dom.flags, env.dst_cpu, group.asym_prefer_cpu) {
                sgs.group_asym_packing = true;
            }
        }
        if !local_group
            && env.idle != CpuIdleType::NotIdle
            && group.flags & SD_SHARE_CPUCAPACITY != 0
            && sgs.sum_h_nr_running > 1
        {
            sgs.group_smt_balance = true;
        }
        sgs.group_type = self.group_classify_lb(dom.imbalance_pct as u64, group.id, &sgs);
        if sgs.group_type == GroupType::Overloaded {
            sgs.avg_load = sgs.group_load * 1024 / sgs.group_capacity.max(1);
        }
        sgs
    }

    /// `group_classify()` with the balancer's inputs.
    fn group_classify_lb(&self, pct: u64, group_id: usize, sgs: &SgLbStats) -> GroupType {
        let basic = crate::fair_select::SgStats {
            avg_load: 0,
            group_load: sgs.group_load,
            group_util: sgs.group_util,
            group_runnable: sgs.group_runnable,
            sum_nr_running: sgs.sum_nr_running,
            sum_h_nr_running: sgs.sum_h_nr_running,
            idle_cpus: sgs.idle_cpus,
            group_weight: sgs.group_weight,
            group_capacity: sgs.group_capacity,
            group_type: GroupType::HasSpare,
            group_misfit_task_load: 0,
        };
        if crate::fair_select::group_is_overloaded(pct, &basic) {
            GroupType::Overloaded
        } else if self.sgc_imbalance.get(group_id).copied().unwrap_or(false) {
            GroupType::Imbalanced
        } else if sgs.group_asym_packing {
            GroupType::AsymPacking
        } else if sgs.group_smt_balance {
            GroupType::SmtBalance
        } else if sgs.group_misfit_task_load != 0 {
            GroupType::MisfitTask
        } else if !crate::fair_select::group_has_capacity(pct, &basic) {
            GroupType::FullyBusy
        } else {
            GroupType::HasSpare
        }
    }

    /// `update_sd_pick_busiest()`.
    fn update_sd_pick_busiest(&self, env: &LbEnv, sds: &SdLbStats, gi: usize, sgs: &SgLbStats) -> bool {
        let busiest = &sds.busiest_stat;
        if sgs.sum_h_nr_running == 0 {
            return false;
        }
        if sgs.group_type > busiest.group_type {
            return true;
        }
        if sgs.group_type < busiest.group_type {
            return false;
        }
        let groups = &self.domains.cpus[env.sd_cpu].domains[env.sd].groups;
        let sg = &groups[gi];
        let has_spare = |sgs: &SgLbStats, busiest: &SgLbStats| {
            !(sgs.idle_cpus > busiest.idle_cpus
                || (sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running))
        };
        match sgs.group_type {
            GroupType::Overloaded => sgs.avg_load > busiest.avg_load,
            GroupType::Imbalanced => false,
            GroupType::AsymPacking => match sds.busiest {
                Some(b) => self.sched_asym_prefer(groups[b].asym_prefer_cpu, sg.asym_prefer_cpu),
                None => true,
            },
            GroupType::MisfitTask => sgs.group_misfit_task_load > busiest.group_misfit_task_load,
            GroupType::SmtBalance if sgs.idle_cpus != 0 || busiest.idle_cpus != 0 => has_spare(sgs, busiest),
            GroupType::SmtBalance | GroupType::FullyBusy => {
                if sgs.avg_load < busiest.avg_load {
                    return false;
                }
                if sgs.avg_load == busiest.avg_load {
                    if let Some(b) = sds.busiest {
                        if groups[b].flags & SD_SHARE_CPUCAPACITY != 0 {
                            return false;
                        }
                    }
                }
                true
            }
            GroupType::HasSpare => {
                if let Some(b) = sds.busiest {
                    let smt_vs_nonsmt = (groups[b].flags & SD_SHARE_CPUCAPACITY) != (sg.flags & SD_SHARE_CPUCAPACITY);
                    if smt_vs_nonsmt {
                        return !(sg.flags & SD_SHARE_CPUCAPACITY != 0 && sgs.sum_h_nr_running <= 1);
                    }
                }
                has_spare(sgs, busiest)
            }
        }
    }

    /// `update_sd_lb_stats()`.
    fn update_sd_lb_stats(&mut self, env: &mut LbEnv) -> SdLbStats {
        env.dst_core_idle = !self.smt_active || self.is_core_idle(env.dst_cpu);
        let mut sds = SdLbStats {
            busiest: None,
            local: None,
            total_load: 0,
            total_capacity: 0,
            avg_load: 0,
            prefer_sibling: false,
            busiest_stat: SgLbStats { idle_cpus: u32::MAX, ..SgLbStats::new() },
            local_stat: SgLbStats::new(),
        };
        let mut overloaded = false;
        let mut sum_util = 0;
        let ngroups = self.domains.cpus[env.sd_cpu].domains[env.sd].groups.len();
        for gi in 0..ngroups {
            let span = self.domains.cpus[env.sd_cpu].domains[env.sd].groups[gi].span;
            let local_group = span.contains(env.dst_cpu);
            let sgs = self.update_sg_lb_stats(env, gi, local_group, &mut overloaded);
            if local_group {
                sds.local = Some(gi);
                sds.local_stat = sgs;
            } else if self.update_sd_pick_busiest(env, &sds, gi, &sgs) {
                sds.busiest = Some(gi);
                sds.busiest_stat = sgs;
            }
            sds.total_load += sgs.group_load;
            sds.total_capacity += sgs.group_capacity;
            sum_util += sgs.group_util;
        }
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        if let Some(b) = sds.busiest {
            sds.prefer_sibling = dom.groups[b].flags & SD_PREFER_SIBLING != 0;
        }
        let is_root = env.sd + 1 == self.domains.cpus[env.sd_cpu].domains.len();
        if is_root {
            self.rd_overloaded = overloaded;
        }
        // update_idle_cpu_scan(): only at the LLC-sized domain, not for newidle.
        let pct = dom.imbalance_pct as u64;
        if env.idle != CpuIdleType::NewlyIdle && dom.span_weight == self.domains.cpus[env.dst_cpu].sd_llc_size {
            self.update_idle_cpu_scan(env.dst_cpu, sum_util, pct);
        }
        sds
    }

    /// `sibling_imbalance()`.
    fn sibling_imbalance(&self, env: &LbEnv, sds: &SdLbStats) -> i64 {
        let (busiest, local) = (&sds.busiest_stat, &sds.local_stat);
        if env.idle == CpuIdleType::NotIdle || busiest.sum_nr_running == 0 {
            return 0;
        }
        let groups = &self.domains.cpus[env.sd_cpu].domains[env.sd].groups;
        let ncores_busiest = groups[sds.busiest.unwrap()].cores as i64;
        let ncores_local = groups[sds.local.unwrap()].cores as i64;
        if ncores_busiest == ncores_local {
            return (busiest.sum_nr_running as i64 - local.sum_nr_running as i64).max(0);
        }
        let mut imbalance =
            (ncores_local * busiest.sum_nr_running as i64 - ncores_busiest * local.sum_nr_running as i64).max(0);
        imbalance = (2 * imbalance + ncores_local + ncores_busiest) / (ncores_local + ncores_busiest);
        if imbalance <= 1 && local.sum_nr_running == 0 && busiest.sum_nr_running > 1 {
            imbalance = 2;
        }
        imbalance
    }

    /// `calculate_imbalance()`.
    fn calculate_imbalance(&self, env: &mut LbEnv, sds: &mut SdLbStats) {
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        let busiest = sds.busiest_stat;
        match busiest.group_type {
            GroupType::MisfitTask => {
                env.migration_type = MigrationType::Load;
                env.imbalance = busiest.group_misfit_task_load as i64;
                return;
            }
            GroupType::AsymPacking => {
                env.migration_type = MigrationType::Task;
                env.imbalance = busiest.sum_h_nr_running as i64;
                return;
            }
            GroupType::SmtBalance | GroupType::Imbalanced => {
                env.migration_type = MigrationType::Task;
                env.imbalance = 1;
                return;
            }
            _ => {}
        }
        let local = sds.local_stat;
        if local.group_type == GroupType::HasSpare {
            if busiest.group_type > GroupType::FullyBusy && dom.flags & SD_SHARE_LLC == 0 {
                env.migration_type = MigrationType::Util;
                env.imbalance = (local.group_capacity.max(local.group_util) - local.group_util) as i64;
                if env.idle != CpuIdleType::NotIdle && env.imbalance == 0 {
                    env.migration_type = MigrationType::Task;
                    env.imbalance = 1;
                }
                return;
            }
            env.migration_type = MigrationType::Task;
            if busiest.group_weight == 1 || sds.prefer_sibling {
                env.imbalance = self.sibling_imbalance(env, sds);
            } else {
                env.imbalance = (local.idle_cpus as i64 - busiest.idle_cpus as i64).max(0);
            }
            // NUMA adjust_numa_imbalance() not modeled (single-node presets).
            env.imbalance >>= 1;
            return;
        }
        if local.group_type < GroupType::Overloaded {
            sds.local_stat.avg_load = local.group_load * 1024 / local.group_capacity.max(1);
            if sds.local_stat.avg_load >= busiest.avg_load {
                env.imbalance = 0;
                return;
            }
            sds.avg_load = sds.total_load * 1024 / sds.total_capacity.max(1);
            if sds.local_stat.avg_load >= sds.avg_load {
                env.imbalance = 0;
                return;
            }
        }
        env.migration_type = MigrationType::Load;
        let a = (busiest.avg_load as i64 - sds.avg_load as i64) * busiest.group_capacity as i64;
        let b = (sds.avg_load as i64 - sds.local_stat.avg_load as i64) * sds.local_stat.group_capacity as i64;
        env.imbalance = a.min(b) / 1024;
    }

    /// `sched_balance_find_src_group()` (was `find_busiest_group()`).
    fn sched_balance_find_src_group(&mut self, env: &mut LbEnv) -> Option<usize> {
        let mut sds = self.update_sd_lb_stats(env);
        let Some(busiest_gi) = sds.busiest else {
            env.imbalance = 0;
            return None;
        };
        let busiest = sds.busiest_stat;
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        let pct = dom.imbalance_pct as u64;
        let forced =
            matches!(busiest.group_type, GroupType::MisfitTask | GroupType::AsymPacking | GroupType::Imbalanced);
        if !forced {
            let local = sds.local_stat;
            let balanced = 'b: {
                if local.group_type > busiest.group_type {
                    break 'b true;
                }
                if local.group_type == GroupType::Overloaded {
                    if local.avg_load >= busiest.avg_load {
                        break 'b true;
                    }
                    sds.avg_load = sds.total_load * 1024 / sds.total_capacity.max(1);
                    if local.avg_load >= sds.avg_load {
                        break 'b true;
                    }
                    if 100 * busiest.avg_load <= pct * local.avg_load {
                        break 'b true;
                    }
                }
                if sds.prefer_sibling
                    && local.group_type == GroupType::HasSpare
                    && self.sibling_imbalance(env, &sds) > 1
                {
                    break 'b false;
                }
                if busiest.group_type != GroupType::Overloaded {
                    if env.idle == CpuIdleType::NotIdle {
                        break 'b true;
                    }
                    let groups = &dom.groups;
                    let local_gi = sds.local.unwrap();
                    if busiest.group_type == GroupType::SmtBalance
                        && (groups[local_gi].flags & SD_SHARE_CPUCAPACITY)
                            != (groups[busiest_gi].flags & SD_SHARE_CPUCAPACITY)
                    {
                        break 'b false;
                    }
                    if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                        break 'b true;
                    }
                    if busiest.sum_h_nr_running == 1 {
                        break 'b true;
                    }
                }
                false
            };
            if balanced {
                env.imbalance = 0;
                return None;
            }
        }
        self.calculate_imbalance(env, &mut sds);
        (env.imbalance != 0).then_some(busiest_gi)
    }

    /// `sched_balance_find_src_rq()` (was `find_busiest_queue()`).
    fn sched_balance_find_src_rq(&self, env: &LbEnv, gi: usize) -> Option<usize> {
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        let span = dom.groups[gi].span;
        let (mut busiest, mut busiest_util, mut busiest_load, mut busiest_capacity, mut busiest_nr) =
            (None, 0u64, 0u64, 1u64, 0u32);
        for i in span.and(&env.cpus).iter() {
            let nr_running = self.lb_h_nr(i);
            if nr_running == 0 {
                continue;
            }
            let capacity = self.rqs[i].cpu_capacity;
            if self.sched_asym(dom.flags, i, env.dst_cpu) && nr_running == 1 {
                continue;
            }
            match env.migration_type {
                MigrationType::Load => {
                    let load = self.cpu_load(i);
                    if nr_running == 1 && load as i64 > env.imbalance {
                        continue;
                    }
                    if load * busiest_capacity > busiest_load * capacity {
                        busiest_load = load;
                        busiest_capacity = capacity;
                        busiest = Some(i);
                    }
                }
                MigrationType::Util => {
                    let util = self.cpu_util_cfs(i);
                    if nr_running <= 1 {
                        continue;
                    }
                    if busiest_util < util {
                        busiest_util = util;
                        busiest = Some(i);
                    }
                }
                MigrationType::Task => {
                    if busiest_nr < nr_running {
                        busiest_nr = nr_running;
                        busiest = Some(i);
                    }
                }
                MigrationType::Misfit => {}
            }
        }
        busiest
    }

    /// `task_hot()`: ran on its CPU less than `sysctl_sched_migration_cost` ago.
    fn task_hot(&self, p: TaskId, env: &LbEnv) -> bool {
        let task = &self.tasks[p as usize];
        if !task.policy.is_fair() || task.policy == Policy::Idle {
            return false;
        }
        if self.sd_flags_of(env.sd_cpu, env.sd) & SD_SHARE_CPUCAPACITY != 0 {
            return false;
        }
        if self.feat(Feature::CACHE_HOT_BUDDY)
            && self.rqs[env.dst_cpu].nr_running > 0
            && self.rqs[env.src_cpu].cfs.next == Some(p)
        {
            return true;
        }
        let delta = self.rqs[env.src_cpu].clock as i64 - task.se.exec_start as i64;
        delta < SYSCTL_SCHED_MIGRATION_COST as i64
    }

    /// `can_migrate_task()`, with the profile's delayed-task rule (≥6.14).
    fn can_migrate_task(&mut self, p: TaskId, env: &mut LbEnv) -> bool {
        let task = &self.tasks[p as usize];
        if self.profile.lb_skips_delayed
            && task.se.sched_delayed
            && env.migration_type != MigrationType::Load
            && env.flags & LBF_FIRST_MIGRATION == 0
        {
            return false;
        }
        if !task.cpus_mask.contains(env.dst_cpu) {
            env.flags |= LBF_SOME_PINNED;
            if env.idle == CpuIdleType::NewlyIdle || env.flags & (LBF_DST_PINNED | LBF_ACTIVE_LB) != 0 {
                return false;
            }
            let grp = env.dst_grpmask.and(&env.cpus);
            if let Some(cpu) = grp.iter().find(|&c| task.cpus_mask.contains(c)) {
                env.flags |= LBF_DST_PINNED;
                env.new_dst_cpu = cpu;
            }
            return false;
        }
        env.flags &= !LBF_ALL_PINNED;
        if task.on_cpu {
            return false;
        }
        if env.flags & LBF_ACTIVE_LB != 0 {
            return true;
        }
        let hot = self.task_hot(p, env);
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        !hot || self.sd_state[env.sd_cpu][env.sd].nr_balance_failed > dom.cache_nice_tries
    }

    /// `detach_task()`: off the source runqueue as a migration, onto dst's CPU.
    fn detach_task(&mut self, p: TaskId, env: &LbEnv) {
        let delayed = self.tasks[p as usize].se.sched_delayed;
        self.deactivate_task(env.src_cpu, p, DEQUEUE_NOCLOCK);
        self.set_task_cpu(p, env.dst_cpu);
        let pid = self.tasks[p as usize].pid;
        self.emit(
            env.src_cpu,
            EventKind::LbMigrate {
                pid,
                src_cpu: env.src_cpu as u32,
                dst_cpu: env.dst_cpu as u32,
                kind: env.kind,
                delayed,
            },
        );
    }

    /// `detach_tasks()`: walk the source's `cfs_tasks` from the least
    /// recently picked end, detaching what may move until the imbalance is met.
    fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
        let src = env.src_cpu;
        if self.rqs[src].nr_running <= 1 {
            env.flags &= !LBF_ALL_PINNED;
            return 0;
        }
        if env.imbalance <= 0 {
            return 0;
        }
        let mut detached = 0;
        let mut candidates = self.rqs[src].cfs.tasks.len();
        while candidates > 0 && !self.rqs[src].cfs.tasks.is_empty() {
            if env.idle != CpuIdleType::NotIdle && self.rqs[src].nr_running <= 1 {
                break;
            }
            env.loop_ += 1;
            if env.loop_ > env.loop_max {
                break;
            }
            if env.loop_ > env.loop_break {
                env.loop_break += SCHED_NR_MIGRATE_BREAK;
                env.flags |= LBF_NEED_BREAK;
                break;
            }
            candidates -= 1;
            let p = *self.rqs[src].cfs.tasks.last().unwrap();
            let ok = self.can_migrate_task(p, env) && {
                match env.migration_type {
                    MigrationType::Load => {
                        let load = self.task_h_load(p).max(1);
                        let failed = self.sd_state[env.sd_cpu][env.sd].nr_balance_failed;
                        let too_small = self.feat(Feature::LB_MIN) && load < 16 && failed == 0;
                        if too_small || (load >> failed.min(63)) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= load as i64;
                            true
                        }
                    }
                    MigrationType::Util => {
                        let util = self.task_util(p);
                        let failed = self.sd_state[env.sd_cpu][env.sd].nr_balance_failed;
                        if (util >> failed.min(63)) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= util as i64;
                            true
                        }
                    }
                    MigrationType::Task => {
                        env.imbalance -= 1;
                        true
                    }
                    MigrationType::Misfit => false,
                }
            };
            if !ok {
                // list_move(): rejected tasks rotate to the head.
                let tasks = &mut self.rqs[src].cfs.tasks;
                let p = tasks.pop().unwrap();
                tasks.insert(0, p);
                continue;
            }
            if env.flags & LBF_FIRST_MIGRATION != 0 {
                // Seed 000 patch: a delayed task headed for an idle CPU is
                // blocked here instead of moved.
                if self.tasks[p as usize].se.sched_delayed {
                    self.dequeue_task(src, p, DEQUEUE_SLEEP | DEQUEUE_DELAYED | DEQUEUE_NOCLOCK);
                    continue;
                }
                // Stop wakeups from also picking the idle destination.
                self.rqs[env.dst_cpu].ttwu_pending = true;
            }
            self.detach_task(p, env);
            if env.flags & LBF_FIRST_MIGRATION != 0 {
                env.flags &= !LBF_FIRST_MIGRATION;
                if self.feat(Feature::TTWU_QUEUE)
                    && self.tasks[p as usize].state == crate::sched::TaskState::Running
                    && env.dst_cpu != self.exec_cpu
                {
                    // Hand the task to the idle destination's wakelist.
                    self.lb_queue_wakelist(p, env.dst_cpu);
                    if env.idle == CpuIdleType::NewlyIdle || env.imbalance <= 0 {
                        break;
                    }
                    continue;
                }
            }
            // env->tasks, kept in a buffer the kernel reuses.
            self.lb_detached.push(p);
            detached += 1;
            // Preemptible kernels stop newidle balancing after one task.
            if env.idle == CpuIdleType::NewlyIdle {
                break;
            }
            if env.imbalance <= 0 {
                break;
            }
        }
        detached
    }

    /// `attach_task()`.
    pub(crate) fn attach_task(&mut self, cpu: usize, p: TaskId) {
        self.activate_task(cpu, p, ENQUEUE_NOCLOCK);
        self.wakeup_preempt(cpu, p, 0);
    }

    /// `attach_tasks()`.
    fn attach_tasks(&mut self, env: &mut LbEnv) {
        self.update_rq_clock(env.dst_cpu);
        let mut tasks = std::mem::take(&mut self.lb_detached);
        for &p in &tasks {
            self.attach_task(env.dst_cpu, p);
        }
        tasks.clear();
        self.lb_detached = tasks;
    }

    /// `detach_one_task()` for the stopper: the first task from the tail that
    /// may move (affinity and not running; hotness ignored).
    pub(crate) fn detach_one_task(&mut self, env: &mut LbEnv) -> Option<TaskId> {
        for i in (0..self.rqs[env.src_cpu].cfs.tasks.len()).rev() {
            let p = self.rqs[env.src_cpu].cfs.tasks[i];
            if !self.can_migrate_task(p, env) {
                continue;
            }
            self.detach_task(p, env);
            return Some(p);
        }
        None
    }

    /// `asym_active_balance()`.
    fn asym_active_balance(&self, env: &LbEnv) -> bool {
        let flags = self.sd_flags_of(env.sd_cpu, env.sd);
        env.idle != CpuIdleType::NotIdle
            && self.sched_use_asym_prio(flags, env.dst_cpu)
            && (self.sched_asym_prefer(env.dst_cpu, env.src_cpu) || !self.sched_use_asym_prio(flags, env.src_cpu))
    }

    /// `need_active_balance()`.
    fn need_active_balance(&self, env: &LbEnv) -> bool {
        if self.asym_active_balance(env) {
            return true;
        }
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        if env.migration_type == MigrationType::Task
            && self.sd_state[env.sd_cpu][env.sd].nr_balance_failed > dom.cache_nice_tries + 2
        {
            return true;
        }
        // Reduced-capacity and misfit cases need capacity pressure (not modeled).
        env.migration_type == MigrationType::Misfit
    }

    /// `should_we_balance()`: one CPU per group does the balancing.
    fn should_we_balance(&self, env: &LbEnv) -> bool {
        if !env.cpus.contains(env.dst_cpu) {
            return false;
        }
        if env.idle == CpuIdleType::NewlyIdle {
            let rq = &self.rqs[env.dst_cpu];
            return rq.nr_running == 0 && !rq.ttwu_pending;
        }
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        let sg = &dom.groups[0];
        let mut swb_cpus = sg.balance_mask;
        let mut idle_smt: Option<usize> = None;
        for cpu in sg.balance_mask.and(&env.cpus).iter() {
            if !swb_cpus.contains(cpu) || !self.idle_cpu(cpu) {
                continue;
            }
            if dom.flags & SD_SHARE_CPUCAPACITY == 0 && !self.is_core_idle(cpu) {
                if idle_smt.is_none() {
                    idle_smt = Some(cpu);
                }
                for s in self.smt_masks[cpu].iter() {
                    swb_cpus.remove(s);
                }
                continue;
            }
            return cpu == env.dst_cpu;
        }
        if let Some(c) = idle_smt {
            return c == env.dst_cpu;
        }
        sg.balance_cpu() == env.dst_cpu
    }

    /// `sched_balance_rq()` (was `load_balance()`): balance `sd` (domain
    /// `sd` of `this_cpu`) by pulling to `this_cpu`. Returns the number of
    /// tasks moved; clears `continue_balancing` when this CPU should not
    /// balance the level.
    pub(crate) fn sched_balance_rq(
        &mut self,
        this_cpu: usize,
        sd: usize,
        idle: CpuIdleType,
        kind: BalanceKind,
        continue_balancing: &mut bool,
    ) -> u32 {
        let dom = &self.domains.cpus[this_cpu].domains[sd];
        let has_parent = sd + 1 < self.domains.cpus[this_cpu].domains.len();
        let parent_group_id =
            if has_parent { Some(self.domains.cpus[this_cpu].domains[sd + 1].groups[0].id) } else { None };
        let mut env = LbEnv {
            sd_cpu: this_cpu,
            sd,
            src_cpu: this_cpu,
            dst_cpu: this_cpu,
            dst_grpmask: dom.groups[0].balance_mask,
            new_dst_cpu: this_cpu,
            idle,
            imbalance: 0,
            cpus: dom.span,
            flags: 0,
            loop_: 0,
            loop_break: SCHED_NR_MIGRATE_BREAK,
            loop_max: 0,
            migration_type: MigrationType::Load,
            dst_core_idle: false,
            kind,
        };
        let mut ld_moved;
        let mut active_balance = false;
        'redo: loop {
            if !self.should_we_balance(&env) {
                *continue_balancing = false;
                return self.lb_out_balanced(&mut env, parent_group_id);
            }
            let Some(group) = self.sched_balance_find_src_group(&mut env) else {
                return self.lb_out_balanced(&mut env, parent_group_id);
            };
            let Some(busiest) = self.sched_balance_find_src_rq(&env, group) else {
                return self.lb_out_balanced(&mut env, parent_group_id);
            };
            debug_assert_ne!(busiest, env.dst_cpu);
            env.src_cpu = busiest;
            ld_moved = 0;
            env.flags |= LBF_ALL_PINNED;
            if idle != CpuIdleType::NotIdle && self.feat(Feature::LB_FIRST_MIGRATION) {
                env.flags |= LBF_FIRST_MIGRATION;
            }
            if self.rqs[busiest].nr_running > 1 {
                env.loop_max = SCHED_NR_MIGRATE_BREAK.min(self.rqs[busiest].nr_running);
                loop {
                    self.update_rq_clock(busiest);
                    let cur = self.detach_tasks(&mut env);
                    if cur > 0 {
                        self.attach_tasks(&mut env);
                        ld_moved += cur;
                        if self.feat(Feature::LB_FIRST_MIGRATION) && self.rqs[env.dst_cpu].wake_list.is_empty() {
                            // The patch clears the flag it set once dst has tasks.
                            self.rqs[env.dst_cpu].ttwu_pending = false;
                        }
                    }
                    if env.flags & LBF_NEED_BREAK != 0 {
                        env.flags &= !LBF_NEED_BREAK;
                        continue;
                    }
                    if env.flags & LBF_DST_PINNED != 0 && env.imbalance > 0 {
                        env.cpus.remove(env.dst_cpu);
                        env.dst_cpu = env.new_dst_cpu;
                        env.flags &= !LBF_DST_PINNED;
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        if self.feat(Feature::LB_FIRST_MIGRATION) && self.idle_cpu(env.dst_cpu) {
                            env.flags |= LBF_FIRST_MIGRATION;
                        }
                        continue;
                    }
                    break;
                }
                if let Some(pid) = parent_group_id {
                    if env.flags & LBF_SOME_PINNED != 0 && env.imbalance > 0 {
                        self.set_sgc_imbalance(pid, true);
                    }
                }
                if env.flags & LBF_ALL_PINNED != 0 {
                    env.cpus.remove(busiest);
                    if !env.cpus.is_subset(&env.dst_grpmask) {
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue 'redo;
                    }
                    // out_all_pinned
                    self.sd_state[this_cpu][sd].nr_balance_failed = 0;
                    return self.lb_out_one_pinned(&env, this_cpu, sd);
                }
            }
            break;
        }
        let busiest = env.src_cpu;
        if ld_moved == 0 {
            if idle != CpuIdleType::NewlyIdle && env.migration_type != MigrationType::Misfit {
                self.sd_state[this_cpu][sd].nr_balance_failed += 1;
            }
            if self.need_active_balance(&env) {
                let curr_ok = self.rqs[busiest].curr.map(|c| self.tasks[c as usize].cpus_mask.contains(this_cpu));
                if curr_ok == Some(false) {
                    return self.lb_out_one_pinned(&env, this_cpu, sd);
                }
                env.flags &= !LBF_ALL_PINNED;
                if !self.rqs[busiest].active_balance {
                    self.rqs[busiest].active_balance = true;
                    self.rqs[busiest].push_cpu = this_cpu;
                    active_balance = true;
                }
                if active_balance {
                    self.stop_one_cpu_nowait(busiest, this_cpu);
                }
            }
        } else {
            self.sd_state[this_cpu][sd].nr_balance_failed = 0;
        }
        if !active_balance || self.need_active_balance(&env) {
            let min = self.domains.cpus[this_cpu].domains[sd].min_interval;
            self.sd_state[this_cpu][sd].balance_interval = min;
        }
        ld_moved
    }

    /// `out_balanced:` of `sched_balance_rq()`.
    fn lb_out_balanced(&mut self, env: &mut LbEnv, parent_group_id: Option<usize>) -> u32 {
        if let Some(pid) = parent_group_id {
            if env.flags & LBF_ALL_PINNED == 0 && self.sgc_imbalance.get(pid).copied().unwrap_or(false) {
                self.set_sgc_imbalance(pid, false);
            }
        }
        self.sd_state[env.sd_cpu][env.sd].nr_balance_failed = 0;
        self.lb_out_one_pinned(env, env.sd_cpu, env.sd)
    }

    /// `out_one_pinned:`: back off the balance interval (not for newidle).
    fn lb_out_one_pinned(&mut self, env: &LbEnv, cpu: usize, sd: usize) -> u32 {
        if env.idle == CpuIdleType::NewlyIdle || env.migration_type == MigrationType::Misfit {
            return 0;
        }
        let max = self.domains.cpus[cpu].domains[sd].max_interval;
        let st = &mut self.sd_state[cpu][sd];
        if (env.flags & LBF_ALL_PINNED != 0 && st.balance_interval < MAX_PINNED_INTERVAL) || st.balance_interval < max {
            st.balance_interval *= 2;
        }
        0
    }

    fn set_sgc_imbalance(&mut self, id: usize, v: bool) {
        if id >= self.sgc_imbalance.len() {
            self.sgc_imbalance.resize(id + 1, false);
        }
        self.sgc_imbalance[id] = v;
    }

    /// `stop_one_cpu_nowait(busiest, active_load_balance_cpu_stop)`: wake
    /// `migration/N` on `busiest`; it preempts whatever runs there.
    fn stop_one_cpu_nowait(&mut self, busiest: usize, dst: usize) {
        self.emit(busiest, EventKind::ActiveBalanceQueued { src_cpu: busiest as u32, dst_cpu: dst as u32 });
        let pid = crate::core::stopper_pid(busiest);
        self.emit(busiest, EventKind::SchedWaking { pid, prio: 0, target_cpu: busiest as u32 });
        self.emit(busiest, EventKind::SchedWakeup { pid, prio: 0, target_cpu: busiest as u32 });
        self.rqs[busiest].stop_work_pending = true;
        self.resched_curr(busiest);
    }

    /// `active_load_balance_cpu_stop()`, run by the stopper on `busiest_cpu`
    /// after it preempted the running task: push one task to `push_cpu`.
    pub(crate) fn active_load_balance_cpu_stop(&mut self, busiest_cpu: usize) {
        let target = self.rqs[busiest_cpu].push_cpu;
        // The kernel's `nr_running > 1` counts the running stopper itself.
        if self.rqs[busiest_cpu].active_balance && self.rqs[busiest_cpu].nr_running >= 1 && target != busiest_cpu {
            let sd = self.domains.cpus[target].domains.iter().position(|d| d.span.contains(busiest_cpu));
            if let Some(sd) = sd {
                let mut env = LbEnv {
                    sd_cpu: target,
                    sd,
                    src_cpu: busiest_cpu,
                    dst_cpu: target,
                    dst_grpmask: CpuSet::empty(),
                    new_dst_cpu: target,
                    idle: CpuIdleType::Idle,
                    imbalance: 0,
                    cpus: CpuSet::empty(),
                    flags: LBF_ACTIVE_LB,
                    loop_: 0,
                    loop_break: SCHED_NR_MIGRATE_BREAK,
                    loop_max: 0,
                    migration_type: MigrationType::Load,
                    dst_core_idle: false,
                    kind: BalanceKind::Active,
                };
                self.update_rq_clock(busiest_cpu);
                if let Some(p) = self.detach_one_task(&mut env) {
                    self.sd_state[target][sd].nr_balance_failed = 0;
                    self.rqs[busiest_cpu].active_balance = false;
                    self.update_rq_clock(target);
                    self.attach_task(target, p);
                    return;
                }
            }
        }
        self.rqs[busiest_cpu].active_balance = false;
    }

    /// The LB_FIRST_MIGRATION patch's hand-off: queue a detached task on the
    /// idle destination's wakelist so it enqueues it itself.
    fn lb_queue_wakelist(&mut self, p: TaskId, cpu: usize) {
        debug_assert_eq!(self.tasks[p as usize].on_rq, OnRq::Migrating);
        self.tasks[p as usize].on_rq = OnRq::Migrating;
        self.tasks[p as usize].lb_wakelist = true;
        let rq = &mut self.rqs[cpu];
        rq.ttwu_pending = true;
        let first = rq.wake_list.is_empty();
        rq.wake_list.push(p);
        if first {
            self.send_ipi(cpu, crate::core::IpiKind::CallFunction);
        }
    }
}
