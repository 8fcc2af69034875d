//! `fair.c`'s choice of what to balance: `sched_balance_find_src_group()`
//! (was `find_busiest_group()`) with `calculate_imbalance()` and
//! `sibling_imbalance()`, and `sched_balance_find_src_rq()` (was
//! `find_busiest_queue()`).
//!
//! Simplified as the rest of [`crate::fair::lb`]: no NUMA imbalance
//! adjustment. A misfit group is balanced as 6.12 does: one task
//! (`migrate_misfit`) on `SD_ASYM_CPUCAPACITY` domains, the squeezed CPU's
//! load (`migrate_load`) elsewhere.

use super::{CpuIdleType, GroupType, LbEnv, MigrationType, SdLbStats};
use crate::core::Kernel;
use crate::fair::capacity::capacity_greater;
use crate::topology::sd_flags::*;

impl Kernel {
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
            GroupType::MisfitTask if dom.flags & SD_ASYM_CPUCAPACITY != 0 => {
                // One misfit task to move (migrate_misfit).
                env.migration_type = MigrationType::Misfit;
                env.imbalance = 1;
                return;
            }
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
    pub(super) fn sched_balance_find_src_group(&mut self, env: &mut LbEnv) -> Option<usize> {
        let mut sds = self.update_sd_lb_stats(env);
        let Some(busiest_gi) = sds.busiest else {
            env.imbalance = 0;
            return None;
        };
        let busiest = sds.busiest_stat;
        // EAS: while the root domain is not overutilized, wakeup placement
        // by energy stands and only a misfit task is balanced.
        let rd = self.rqs[env.dst_cpu].rd;
        if busiest.group_type != GroupType::MisfitTask && !self.is_rd_overutilized(rd) && !self.rds[rd].pd.is_empty() {
            env.imbalance = 0;
            return None;
        }
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
    pub(super) fn sched_balance_find_src_rq(&self, env: &LbEnv, gi: usize) -> Option<usize> {
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
            // A lone task on a CPU not clearly smaller than the destination stays.
            if dom.flags & SD_ASYM_CPUCAPACITY != 0
                && !capacity_greater(self.rqs[env.dst_cpu].cpu_capacity, capacity)
                && nr_running == 1
            {
                continue;
            }
            if self.sched_asym(dom.flags, i, env.dst_cpu) && nr_running == 1 {
                continue;
            }
            match env.migration_type {
                MigrationType::Load => {
                    let load = self.cpu_load(i);
                    // A lone task too big for the imbalance stays, unless
                    // RT/DL time squeezes its CPU.
                    if nr_running == 1
                        && load as i64 > env.imbalance
                        && !self.cpu_capacity_reduced(i, env.sd_cpu, env.sd)
                    {
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
                MigrationType::Misfit => {
                    // The runqueue with the biggest misfit task.
                    if self.rqs[i].misfit_task_load > busiest_load {
                        busiest_load = self.rqs[i].misfit_task_load;
                        busiest = Some(i);
                    }
                }
            }
        }
        busiest
    }
}
