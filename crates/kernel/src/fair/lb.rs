//! `fair.c`'s load balancer: `sched_balance_rq()` (was `load_balance()`) and
//! everything under it — group statistics and classification, the busiest
//! group and runqueue, `calculate_imbalance()`, `detach_tasks()` with
//! `can_migrate_task()`/`task_hot()`, ITMT asym packing, and the decision to
//! queue an active balance on the stopper.
//!
//! Laid out in pieces: this file holds `struct lb_env` and the `LBF_*` flags,
//! the ITMT helpers (`sched_asym_prefer()`, `sched_use_asym_prio()`,
//! `sched_asym()`, `is_core_idle()`), `should_we_balance()`,
//! `sched_balance_rq()` itself with its `out_balanced`/`out_one_pinned`
//! exits, and active balancing (`need_active_balance()`,
//! `stop_one_cpu_nowait()`, `active_load_balance_cpu_stop()`). Group and
//! domain statistics are in `stats` (`update_sg_lb_stats()`,
//! `update_sd_lb_stats()`), the busiest group and runqueue and
//! `calculate_imbalance()` in `imbalance`, and `can_migrate_task()`,
//! `detach_tasks()` and `attach_tasks()` in `migrate`.
//!
//! Follows 6.12.x; from 6.14 (mainline) the balancer counts only runnable
//! tasks and leaves delayed ones alone (see [`crate::profile::Profile`]).
//! Misfit balancing on asymmetric-capacity machines follows 6.12
//! (`rq->misfit_task_load` from [`crate::fair::capacity`], the
//! `group_misfit_task` class, `migrate_misfit`, the active balance it forces).
//! Capacity pressure (6.12): RT and DL time lower a CPU's `capacity_of()`
//! ([`crate::fair::capacity`]); `check_cpu_capacity()` then makes a lone
//! fair task there misfit, lets the busiest-runqueue search take it and
//! forces the active balance that moves it.
//! Simplified: no NUMA balancing (fbq types, `migrate_degrades_locality`),
//! no core scheduling, one cfs_rq level.
//! EAS (6.12): `update_sd_lb_stats()` sets the root domain's overutilized
//! flag from `cpu_overutilized()` (and clears it at the top domain), and
//! `sched_balance_find_src_group()` balances nothing but a misfit task while
//! EAS is on and the root domain is not overutilized ([`crate::fair::eas`]).
//! `detach_tasks()` stops after one task for newidle balancing, as preemptible
//! kernels do.

use crate::core::Kernel;
use crate::features::Feature;
use crate::sched::Rq;
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
    /// Whether `update_sd_lb_stats()` reads the domain's groups from
    /// [`GroupSums`] (not in the kernel).
    pub kept_sums: KeptSums,
    /// Which path is balancing (for decision events).
    pub kind: BalanceKind,
}

mod imbalance;
mod migrate;
mod stats;
mod sums;

pub use stats::{group_classify, group_has_capacity, group_is_overloaded, GroupType, SdLbStats, SgLbStats};
pub use sums::{GroupSums, KeptSums};

impl Rq {
    /// [`Kernel::lb_h_nr`] of this runqueue, for loops that hold it
    /// already; `runnable_only` is the kernel version's choice
    /// ([`crate::profile`]).
    pub fn lb_h_nr(&self, runnable_only: bool) -> u32 {
        if runnable_only {
            self.cfs.h_nr_runnable
        } else {
            self.cfs.h_nr_queued
        }
    }
}

impl Kernel {
    /// `sched_asym_prefer(a, b)` on this kernel's machine.
    pub fn sched_asym_prefer(&self, a: usize, b: usize) -> bool {
        crate::topology::sched_asym_prefer(&self.topo, a, b)
    }

    /// `is_core_idle()`: every other SMT sibling of `cpu` is idle.
    pub fn is_core_idle(&self, cpu: usize) -> bool {
        self.smt_masks[cpu].iter_in(self.smt_words[cpu]).all(|s| s == cpu || self.idle_cpu(s))
    }

    /// `sd->flags` of domain level `sd` of `sd_cpu`.
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
        self.rqs[cpu].lb_h_nr(self.profile.lb_counts_runnable_only)
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
        // A lone fair task on a CPU squeezed by RT/DL time goes to an idle
        // CPU with clearly more capacity left.
        if env.idle != CpuIdleType::NotIdle && self.lb_h_nr(env.src_cpu) == 1 {
            let pct = dom.imbalance_pct as u64;
            if self.cpu_capacity_reduced(env.src_cpu, env.sd_cpu, env.sd)
                && self.rqs[env.src_cpu].cpu_capacity * pct < self.rqs[env.dst_cpu].cpu_capacity * 100
            {
                return true;
            }
        }
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
        // (The balance mask lies within the group's span and its words.)
        for cpu in sg.balance_mask.iter_and_in(&env.cpus, sg.span_words) {
            if !swb_cpus.contains(cpu) || !self.idle_cpu(cpu) {
                continue;
            }
            if dom.flags & SD_SHARE_CPUCAPACITY == 0 && !self.is_core_idle(cpu) {
                if idle_smt.is_none() {
                    idle_smt = Some(cpu);
                }
                for s in self.smt_masks[cpu].iter_in(self.smt_words[cpu]) {
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
            kept_sums: KeptSums::Walk,
            kind,
        };
        let mut ld_moved;
        let mut active_balance = false;
        'redo: loop {
            if !self.should_we_balance(&env) {
                *continue_balancing = false;
                return self.lb_out_balanced(&mut env, parent_group_id);
            }
            // The statistics pass reads every CPU of the domain (the
            // redo after a pinned busiest reads them again).
            self.charge(
                self.topo.costs.kernel.balance_per_cpu_ns * self.domains.cpus[this_cpu].domains[sd].span_weight as u64,
            );
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
                        self.sgc[pid].imbalance = true;
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
                    // stop_one_cpu_nowait(busiest, active_load_balance_cpu_stop)
                    let (src_cpu, dst_cpu) = (busiest as u32, this_cpu as u32);
                    self.emit(busiest, EventKind::ActiveBalanceQueued { src_cpu, dst_cpu });
                    self.stop_one_cpu_nowait(busiest);
                }
            }
        } else {
            self.sd_state[this_cpu][sd].nr_balance_failed = 0;
        }
        if !active_balance || self.need_active_balance(&env) {
            let min = self.domains.cpus[this_cpu].domains[sd].min_interval;
            self.set_balance_interval(this_cpu, sd, min);
        }
        ld_moved
    }

    /// `out_balanced:` of `sched_balance_rq()`.
    fn lb_out_balanced(&mut self, env: &mut LbEnv, parent_group_id: Option<usize>) -> u32 {
        if let Some(pid) = parent_group_id {
            if env.flags & LBF_ALL_PINNED == 0 {
                self.sgc[pid].imbalance = false;
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
        let interval = self.sd_state[cpu][sd].balance_interval();
        if (env.flags & LBF_ALL_PINNED != 0 && interval < MAX_PINNED_INTERVAL) || interval < max {
            self.set_balance_interval(cpu, sd, interval * 2);
        }
        0
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
                    kept_sums: KeptSums::Walk,
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
}
