//! The statistics half of `fair.c`'s load balancer: `update_sg_lb_stats()`,
//! `group_classify()` with `group_has_capacity()` / `group_is_overloaded()`,
//! `update_sd_pick_busiest()` and `update_sd_lb_stats()`, with `enum
//! group_type`, `struct sg_lb_stats` (shared with the wakeup path's
//! `update_sg_wakeup_stats()`) / `struct sd_lb_stats` and `cpu_runnable()`.
//!
//! The local group's capacities are refreshed as the kernel does
//! (`update_group_capacity()`, [`crate::fair::capacity`]), so a group's
//! capacity is what RT/DL time left of it, and a lone fair task on a
//! squeezed CPU counts as misfit (`sched_reduced_capacity()`).
//!
//! Simplified as the rest of [`crate::fair::lb`]: no NUMA (fbq) statistics.
//! Not in the kernel: on domains of more than 64 CPUs the per-CPU sums of a
//! group are read from [`super::GroupSums`], kept between balances, instead
//! of walking its CPUs (the same figures; debug builds check each read).

use super::sums::reads_kept_sums;
use super::{CpuIdleType, KeptSums, LbEnv};
use crate::core::Kernel;
use crate::fair::capacity::{capacity_greater, check_cpu_capacity};
use crate::sched::Rq;
use crate::topology::sd_flags::*;
use crate::topology::{SchedDomain, SchedGroup};

/// `enum group_type` (fair.c), in the kernel's order: later is busier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    #[default]
    HasSpare,
    FullyBusy,
    MisfitTask,
    SmtBalance,
    AsymPacking,
    Imbalanced,
    Overloaded,
}

/// `struct sg_lb_stats`: one group's statistics, filled by the balancer
/// (`update_sg_lb_stats()`) and by the wakeup path's
/// `update_sg_wakeup_stats()`, which leaves the asym-packing and
/// SMT-balance flags clear, as the kernel's does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// The zeroed statistics both paths start from (`memset(sgs, 0, ...)`).
    pub fn new() -> Self {
        Self::default()
    }
}

/// `sched_reduced_capacity()`: the runqueue has one fair task (`h_nr`, as
/// the balancer counts them, [`Kernel::lb_h_nr`]) and RT/DL time took more
/// than the domain's margin of its CPU (a CPU with more tasks is
/// overloaded already). Of a runqueue at hand, as the kernel's takes it.
fn sched_reduced_capacity(rq: &Rq, h_nr: u32, capacity_orig: u64, imbalance_pct: u64) -> bool {
    h_nr == 1 && check_cpu_capacity(rq.cpu_capacity, capacity_orig, imbalance_pct)
}

/// `group_has_capacity()`.
pub fn group_has_capacity(imbalance_pct: u64, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    if sgs.group_capacity * imbalance_pct < sgs.group_runnable * 100 {
        return false;
    }
    sgs.group_capacity * 100 > sgs.group_util * imbalance_pct
}

/// `group_is_overloaded()`.
pub fn group_is_overloaded(imbalance_pct: u64, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    if sgs.group_capacity * 100 < sgs.group_util * imbalance_pct {
        return true;
    }
    sgs.group_capacity * imbalance_pct < sgs.group_runnable * 100
}

/// `group_classify()`; `imbalanced` is the group's `sgc->imbalance`.
pub fn group_classify(imbalance_pct: u64, imbalanced: bool, sgs: &SgLbStats) -> GroupType {
    if group_is_overloaded(imbalance_pct, sgs) {
        GroupType::Overloaded
    } else if imbalanced {
        GroupType::Imbalanced
    } else if sgs.group_asym_packing {
        GroupType::AsymPacking
    } else if sgs.group_smt_balance {
        GroupType::SmtBalance
    } else if sgs.group_misfit_task_load != 0 {
        GroupType::MisfitTask
    } else if !group_has_capacity(imbalance_pct, sgs) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
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
    /// `update_sg_lb_stats()`. The per-CPU sums come from
    /// [`GroupSums`](super::GroupSums) where they can (see there), else
    /// from the walk over the group's CPUs the kernel does.
    fn update_sg_lb_stats(
        &self,
        env: &LbEnv,
        gi: usize,
        local_group: bool,
        overloaded: &mut bool,
        overutilized: &mut bool,
    ) -> SgLbStats {
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        let group = &dom.groups[gi];
        let mut sgs = match self.sg_cpu_sums_kept(env, (dom, group), local_group, overloaded) {
            Some(sgs) => {
                #[cfg(debug_assertions)]
                {
                    let (mut walk_overloaded, mut walk_overutilized) = (*overloaded, *overutilized);
                    let walked = self.sg_cpu_sums_walk(
                        env,
                        (dom, group),
                        local_group,
                        &mut walk_overloaded,
                        &mut walk_overutilized,
                    );
                    assert_eq!(
                        (sgs, *overloaded, *overutilized),
                        (walked, walk_overloaded, walk_overutilized),
                        "the kept sums of group {gi} of CPU {}'s domain {} differ from the walk over its CPUs",
                        env.sd_cpu,
                        env.sd
                    );
                }
                sgs
            }
            None => self.sg_cpu_sums_walk(env, (dom, group), local_group, overloaded, overutilized),
        };
        sgs.group_capacity = self.sgc[group.id].capacity;
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
        let imbalanced = self.sgc[group.id].imbalance;
        sgs.group_type = group_classify(dom.imbalance_pct as u64, imbalanced, &sgs);
        if sgs.group_type == GroupType::Overloaded {
            sgs.avg_load = sgs.group_load * 1024 / sgs.group_capacity.max(1);
        }
        sgs
    }

    /// `update_sd_pick_busiest()`.
    fn update_sd_pick_busiest(&self, env: &LbEnv, sds: &SdLbStats, gi: usize, sgs: &SgLbStats) -> bool {
        let busiest = &sds.busiest_stat;
        if sgs.sum_h_nr_running == 0 {
            return false;
        }
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        if dom.flags & SD_ASYM_CPUCAPACITY != 0 {
            let sg = &self.sgc[dom.groups[gi].id];
            let dst_cap = self.rqs[env.dst_cpu].cpu_capacity;
            // A misfit task only moves to a clearly bigger CPU, on an idle
            // core, from a domain whose local group has spare capacity.
            if sgs.group_type == GroupType::MisfitTask
                && (!env.dst_core_idle
                    || !capacity_greater(dst_cap, sg.max_capacity)
                    || sds.local_stat.group_type != GroupType::HasSpare)
            {
                return false;
            }
            // Nothing is pulled from a group of bigger CPUs running at most a task each.
            if sgs.group_type <= GroupType::FullyBusy && capacity_greater(sg.min_capacity, dst_cap) {
                return false;
            }
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

    /// `update_sg_lb_stats()`'s loop over the group's CPUs: the sums, the
    /// idle CPUs, the biggest misfit load, and the root domain's overload
    /// and overutilized flags raised.
    fn sg_cpu_sums_walk(
        &self,
        env: &LbEnv,
        (dom, group): (&SchedDomain, &SchedGroup),
        local_group: bool,
        overloaded: &mut bool,
        overutilized: &mut bool,
    ) -> SgLbStats {
        let mut sgs = SgLbStats::new();
        // What does not change from one CPU to the next is read once: this
        // loop runs for every CPU a balance reads (up to 112 per newidle
        // balance of a 224-CPU machine; issue 39).
        let eas = self.sched_energy_present;
        let (now, runnable_only) = (self.now, self.profile.lb_counts_runnable_only);
        let asym_cpucapacity = dom.flags & SD_ASYM_CPUCAPACITY != 0;
        let reduced_capacity_matters = !asym_cpucapacity && env.idle != CpuIdleType::NotIdle;
        let imbalance_pct = dom.imbalance_pct as u64;
        for i in group.span.iter_and_in(&env.cpus, group.span_words) {
            let rq = &self.rqs[i];
            let capacity_orig = self.topo.cpus[i].capacity as u64;
            sgs.group_load += rq.cpu_load();
            sgs.group_util += rq.cpu_util_cfs(capacity_orig);
            sgs.group_runnable += rq.cpu_runnable();
            let h_nr = rq.lb_h_nr(runnable_only);
            sgs.sum_h_nr_running += h_nr;
            let nr_running = rq.nr_running;
            sgs.sum_nr_running += nr_running;
            if nr_running > 1 {
                *overloaded = true;
            }
            // (Read only with EAS on: `cpu_overutilized()` is false without.)
            if eas && self.cpu_overutilized(i) {
                *overutilized = true;
            }
            if nr_running == 0 && rq.is_idle_at(now) {
                sgs.idle_cpus += 1;
                continue;
            }
            if local_group {
                continue;
            }
            if asym_cpucapacity {
                // The biggest misfit task of the group.
                if sgs.group_misfit_task_load < rq.misfit_task_load {
                    sgs.group_misfit_task_load = rq.misfit_task_load;
                    *overloaded = true;
                }
            } else if reduced_capacity_matters && sched_reduced_capacity(rq, h_nr, capacity_orig, imbalance_pct) {
                // A lone fair task on a CPU that RT/DL time squeezes.
                sgs.group_misfit_task_load = sgs.group_misfit_task_load.max(rq.cpu_load());
            }
        }
        sgs
    }

    /// [`Kernel::sg_cpu_sums_walk`] from the kept sums, where the walk
    /// would only add up: not when [`Kernel::recount_group_sums`] left the
    /// domain to the walk (`env.kept_sums`: small domains, EAS), not for a
    /// group partly outside `env->cpus`, and not for a remote group with a
    /// misfit or squeezed CPU the walk would weigh (None). The sums are
    /// those of the domain's last recount.
    fn sg_cpu_sums_kept(
        &self,
        env: &LbEnv,
        (dom, group): (&SchedDomain, &SchedGroup),
        local_group: bool,
        overloaded: &mut bool,
    ) -> Option<SgLbStats> {
        match env.kept_sums {
            KeptSums::Walk => return None,
            KeptSums::Counted if !group.span.is_subset_in(&env.cpus, group.span_words) => return None,
            _ => {}
        }
        let sums = self.group_sums.of(group.id);
        if !local_group {
            let asym_cpucapacity = dom.flags & SD_ASYM_CPUCAPACITY != 0;
            let weighed = if asym_cpucapacity {
                sums.misfit_cpus
            } else if env.idle != CpuIdleType::NotIdle {
                sums.reduced_cpus
            } else {
                0
            };
            if weighed != 0 {
                return None;
            }
        }
        if sums.overloaded_cpus != 0 {
            *overloaded = true;
        }
        let held_busy = if sums.held_cpus == 0 {
            0
        } else {
            let now = self.now;
            self.group_sums.held_in(&group.span, group.span_words).filter(|&i| now < self.rqs[i].newidle_until).count()
        };
        Some(SgLbStats {
            group_load: sums.load,
            group_util: sums.util,
            group_runnable: sums.runnable,
            sum_h_nr_running: sums.h_nr,
            sum_nr_running: sums.nr_running,
            idle_cpus: sums.idle_unless_held - held_busy as u32,
            ..SgLbStats::new()
        })
    }

    /// Recounts, for [`Kernel::sg_cpu_sums_kept`], the CPUs of the groups
    /// `env` balances whose runqueue was written since their last count,
    /// and notes whether the groups lie wholly in `env.cpus`. Not for a
    /// domain too small to pay ([`reads_kept_sums`]), nor with EAS (whose walk
    /// tests each CPU for overutilization): those are walked.
    fn recount_group_sums(&mut self, env: &mut LbEnv) {
        env.kept_sums = KeptSums::Walk;
        if self.sched_energy_present
            || !self.rqs.noting()
            || !reads_kept_sums(self.domains.cpus[env.sd_cpu].domains[env.sd].span_weight)
        {
            return;
        }
        let (now, runnable_only) = (self.now, self.profile.lb_counts_runnable_only);
        let &(span, words) = self.group_sums.read_span(env.sd_cpu, env.sd);
        env.kept_sums = if span.is_subset_in(&env.cpus, words) { KeptSums::AllInCpus } else { KeptSums::Counted };
        let written = self.rqs.take_written(&span, words);
        for cpu in written.iter_in(words) {
            let capacity_orig = self.topo.cpus[cpu].capacity as u64;
            self.group_sums.recount(cpu, &self.rqs[cpu], capacity_orig, runnable_only, now);
        }
    }

    /// `update_sd_lb_stats()`.
    pub(super) fn update_sd_lb_stats(&mut self, env: &mut LbEnv) -> SdLbStats {
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
        self.recount_group_sums(env);
        if self.update_sd_lb_stats_nothing_to_pull(env, &mut sds) {
            return sds;
        }
        // Read only by `update_sd_pick_busiest()`, so set past the shortcut
        // that never calls it (idle states do not change during the pass):
        // 3 balances in 4 of the seed-000 sweep take the shortcut (issue 39).
        env.dst_core_idle = self.dst_core_idle(env.dst_cpu);
        let (mut overloaded, mut overutilized) = (false, false);
        let mut sum_util = 0;
        let ngroups = self.domains.cpus[env.sd_cpu].domains[env.sd].groups.len();
        for gi in 0..ngroups {
            let group = &self.domains.cpus[env.sd_cpu].domains[env.sd].groups[gi];
            let local_group = group.span.contains(env.dst_cpu);
            if local_group {
                let id = group.id;
                self.update_local_group_capacity(env, id);
            }
            let sgs = self.update_sg_lb_stats(env, gi, local_group, &mut overloaded, &mut overutilized);
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
        let rd = self.rqs[env.dst_cpu].rd;
        if self.is_top_domain(env) {
            self.rds[rd].overloaded = overloaded;
            // The top domain sees every CPU: the flag is set or cleared;
            // lower ones can only set it (EAS only, fair/eas.rs).
            // (set_rd_overutilized(), written out: `dom` borrows the domains.)
            if self.sched_energy_present {
                self.rds[rd].overutilized = overutilized;
            }
        } else if overutilized && self.sched_energy_present {
            self.rds[rd].overutilized = true;
        }
        // update_idle_cpu_scan(): only at the LLC-sized domain, not for newidle.
        let pct = dom.imbalance_pct as u64;
        if env.idle != CpuIdleType::NewlyIdle && dom.span_weight == self.domains.cpus[env.dst_cpu].sd_llc_size {
            self.update_idle_cpu_scan(env.dst_cpu, sum_util, pct);
        }
        sds
    }

    /// `env->dst_core_idle` as `update_sd_lb_stats()` sets it.
    fn dst_core_idle(&self, dst_cpu: usize) -> bool {
        !self.smt_active || self.is_core_idle(dst_cpu)
    }

    /// `update_sd_lb_stats()` reaching the local group: its capacities are
    /// refreshed, by a newidle balance only once `sgc->next_update` has
    /// passed.
    fn update_local_group_capacity(&mut self, env: &LbEnv, group_id: usize) {
        if env.idle != CpuIdleType::NewlyIdle || self.jiffies() >= self.sgc[group_id].next_update {
            self.update_group_capacity(env.sd_cpu, env.sd, env.dst_cpu);
        }
    }

    /// `!env->sd->parent`: the balance is at the CPU's top domain, where
    /// the root domain's flags are set and cleared.
    fn is_top_domain(&self, env: &LbEnv) -> bool {
        env.sd + 1 == self.domains.cpus[env.sd_cpu].domains.len()
    }

    /// `update_sd_lb_stats()` when no group but the local one has a fair
    /// task: `update_sd_pick_busiest()` turns every group down on its
    /// first test, so the balance ends at `out_balanced` whatever the
    /// statistics say. Then only their side effects are kept — the local
    /// group's capacity update and, at the top domain, the root domain's
    /// overload flag — and the per-CPU sums are not computed (a NOHZ pass
    /// balances every idle core's SMT level this way every few jiffies).
    /// Declines (returns false) where the sums are read anyway: with EAS
    /// (the overutilized flag), at the LLC level outside newidle
    /// (`update_idle_cpu_scan()`), and where a misfit task would set the
    /// overload flag. Returns true when `sds` is final.
    fn update_sd_lb_stats_nothing_to_pull(&mut self, env: &LbEnv, sds: &mut SdLbStats) -> bool {
        if self.sched_energy_present {
            return false;
        }
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        if env.idle != CpuIdleType::NewlyIdle && dom.span_weight == self.domains.cpus[env.dst_cpu].sd_llc_size {
            return false;
        }
        let asym_cap = dom.flags & SD_ASYM_CPUCAPACITY != 0;
        // First the test that usually fails (a busy CPU outside the local
        // group), so that declining costs a few reads.
        let mut local = None;
        for (gi, group) in dom.groups.iter().enumerate() {
            if group.span.contains(env.dst_cpu) {
                if local.is_some() {
                    // Overlapping (NUMA) groups: leave them to the full pass.
                    return false;
                }
                local = Some((gi, group.id));
                continue;
            }
            // The kept sums where the group is wholly in the balance's CPUs
            // (recounted by the caller), else the walk.
            let kept = match env.kept_sums {
                KeptSums::Walk => false,
                KeptSums::Counted => group.span.is_subset_in(&env.cpus, group.span_words),
                KeptSums::AllInCpus => true,
            };
            let busy = if kept {
                let sums = self.group_sums.of(group.id);
                sums.h_nr > 0 || (asym_cap && sums.misfit_cpus != 0)
            } else {
                group
                    .span
                    .iter_and_in(&env.cpus, group.span_words)
                    .any(|i| self.lb_h_nr(i) > 0 || (asym_cap && self.rqs[i].misfit_task_load != 0))
            };
            if busy {
                return false;
            }
        }
        let is_root = self.is_top_domain(env);
        // The overload flag counts every group, the local one included.
        let overloaded = is_root
            && dom.groups.iter().any(|g| {
                let kept = match env.kept_sums {
                    KeptSums::Walk => false,
                    KeptSums::Counted => g.span.is_subset_in(&env.cpus, g.span_words),
                    KeptSums::AllInCpus => true,
                };
                if kept {
                    self.group_sums.of(g.id).overloaded_cpus != 0
                } else {
                    g.span.iter_and_in(&env.cpus, g.span_words).any(|i| self.rqs[i].nr_running > 1)
                }
            });
        #[cfg(debug_assertions)]
        self.debug_check_nothing_to_pull(env, sds, overloaded);
        if let Some((gi, id)) = local {
            sds.local = Some(gi);
            self.update_local_group_capacity(env, id);
        }
        if is_root {
            let rd = self.rqs[env.dst_cpu].rd;
            self.rds[rd].overloaded = overloaded;
        }
        true
    }

    /// Debug builds (the test suite): the shortcut above agrees with the
    /// full statistics — no group is picked as the busiest, and the
    /// overload flag is the one the full pass computes.
    #[cfg(debug_assertions)]
    fn debug_check_nothing_to_pull(&self, env: &LbEnv, sds: &SdLbStats, overloaded: bool) {
        let env = &LbEnv { dst_core_idle: self.dst_core_idle(env.dst_cpu), ..env.clone() };
        let (mut full_overloaded, mut overutilized) = (false, false);
        let dom = &self.domains.cpus[env.sd_cpu].domains[env.sd];
        for gi in 0..dom.groups.len() {
            let local_group = dom.groups[gi].span.contains(env.dst_cpu);
            let sgs = self.update_sg_lb_stats(env, gi, local_group, &mut full_overloaded, &mut overutilized);
            assert!(
                local_group || !self.update_sd_pick_busiest(env, sds, gi, &sgs),
                "the no-busiest shortcut skipped group {gi} of CPU {}'s domain {}, which the full pass picks",
                env.sd_cpu,
                env.sd
            );
        }
        assert!(
            !self.is_top_domain(env) || overloaded == full_overloaded,
            "the no-busiest shortcut's overload flag differs from the full pass's"
        );
    }
}
