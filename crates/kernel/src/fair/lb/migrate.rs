//! `fair.c`'s task migration for the load balancer: `task_hot()`,
//! `can_migrate_task()`, `detach_task()`, `detach_tasks()`, `attach_task()`,
//! `attach_tasks()` and `detach_one_task()` (for the stopper), plus the
//! LB_FIRST_MIGRATION patch's wakelist hand-off.
//!
//! Simplified as the rest of [`crate::fair::lb`]: no NUMA locality
//! (`migrate_degrades_locality()`), `detach_tasks()` stops after one task for
//! newidle balancing as preemptible kernels do.

use super::{
    CpuIdleType, LbEnv, MigrationType, LBF_ACTIVE_LB, LBF_ALL_PINNED, LBF_DST_PINNED, LBF_FIRST_MIGRATION,
    LBF_NEED_BREAK, LBF_SOME_PINNED, SCHED_NR_MIGRATE_BREAK, SYSCTL_SCHED_MIGRATION_COST,
};
use crate::core::Kernel;
use crate::features::Feature;
use crate::sched::class::SchedClass;
use crate::sched::{qflags::*, OnRq, Policy, TaskId};
use crate::topology::sd_flags::*;
use schedlab_trace::EventKind;

impl Kernel {
    /// `task_hot()`: ran on its CPU less than `sysctl_sched_migration_cost` ago.
    fn task_hot(&self, p: TaskId, env: &LbEnv) -> bool {
        let task = &self.tasks[p as usize];
        if self.class_of(p) != SchedClass::Fair || task.policy == Policy::Idle {
            return false;
        }
        if self.sd_flags_of(env.sd_cpu, env.sd) & SD_SHARE_CPUCAPACITY != 0 {
            return false;
        }
        if self.feat(Feature::CACHE_HOT_BUDDY)
            && self.rqs[env.dst_cpu].nr_running > 0
            && self.cfs(self.cfs_rq_of(p)).next == Some(p)
        {
            return true;
        }
        let delta = self.rqs[env.src_cpu].clock as i64 - task.se.exec_start as i64;
        delta < SYSCTL_SCHED_MIGRATION_COST as i64
    }

    /// `can_migrate_task()`, with the profile's delayed-task rule (≥6.14).
    fn can_migrate_task(&mut self, p: TaskId, env: &mut LbEnv) -> bool {
        // throttled_lb_pair(): the task's group is throttled on either CPU;
        // 6.18 (task-based throttling) only refuses a throttled destination,
        // so a task still queued under a throttled group may leave for a CPU
        // where its group has runtime.
        let tg = self.tasks[p as usize].tg;
        if tg != 0 {
            let cfs_rq = &self.task_groups[tg].cfs_rq;
            let src_throttled = !self.profile.task_based_throttle && self.throttled_hierarchy(cfs_rq[env.src_cpu]);
            if src_throttled || self.throttled_hierarchy(cfs_rq[env.dst_cpu]) {
                return false;
            }
        }
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
    pub(super) fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
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
                    // Only a task that does not fit where it is, and then
                    // no more (migrate_misfit).
                    MigrationType::Misfit => {
                        if self.task_fits_cpu(p, env.src_cpu) {
                            false
                        } else {
                            env.imbalance = 0;
                            true
                        }
                    }
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
    pub(super) fn attach_tasks(&mut self, env: &mut LbEnv) {
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

    /// The LB_FIRST_MIGRATION patch's hand-off: queue a detached task on the
    /// idle destination's wakelist so it enqueues it itself.
    fn lb_queue_wakelist(&mut self, p: TaskId, cpu: usize) {
        debug_assert_eq!(self.tasks[p as usize].on_rq, OnRq::Migrating);
        self.tasks[p as usize].on_rq = OnRq::Migrating;
        self.tasks[p as usize].lb_wakelist = true;
        self.touched.cpu(cpu);
        self.touched.task(p);
        let rq = &mut self.rqs[cpu];
        rq.ttwu_pending = true;
        let first = rq.wake_list.is_empty();
        rq.wake_list.push(p);
        if first {
            self.send_ipi(cpu, crate::core::IpiKind::CallFunction);
        }
    }
}
