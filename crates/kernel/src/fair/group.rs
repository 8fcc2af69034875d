//! Task groups (CONFIG_FAIR_GROUP_SCHED): `struct task_group`, its cfs_rq and
//! sched_entity on every CPU (`alloc_fair_sched_group()`,
//! `init_tg_cfs_entry()`), the hierarchy walks' helpers (`cfs_rq_of()`,
//! `parent_entity()`, `find_matching_se()`, `se_is_idle()`, the buddies up
//! the levels, the hierarchical counts), group shares
//! (`calc_group_shares()`, `update_cfs_group()`, `reweight_entity()`,
//! `reweight_eevdf()`) and moving a task between groups
//! (`sched_move_task()`). Follows fair.c and core.c of 6.12.x; the walks
//! themselves (`for_each_sched_entity`) are in the class's paths in
//! [`crate::fair`].
//!
//! A group's entity on a CPU lives in the task arena like a task (its
//! [`crate::sched::Task::my_q`] is set), so the EEVDF code, the timeline and
//! the buddies address every entity by the same id.
//!
//! The group load averages these read (`tg->load_avg`, each cfs_rq's and
//! group entity's PELT signals, their propagation) are in [`super::pelt`].
//!
//! Simplified:
//! * **Unscaled weights.** The kernel computes shares in `scale_load()` units
//!   (2^10 finer); here a share rounds down to a whole weight unit (< 0.3 % of
//!   a group's weight at the default 1024, none at all when one CPU holds the
//!   whole group).
//!
//! CFS bandwidth (`cpu.max`) is in [`super::bandwidth`].

use crate::core::Kernel;
use crate::sched::{CfsRq, CfsRqId, LoadWeight, OnRq, Policy, Task, TaskId, TaskState, NICE_0_WEIGHT};
use crate::sched::{SchedEntity, WEIGHT_IDLEPRIO};
use schedlab_topology::CpuSet;

/// What a task (or a throttled group's tasks) add to or take from the
/// hierarchical counts of every cfs_rq above (`h_nr_queued`,
/// `h_nr_delayed`, `idle_h_nr_running`, and `h_nr_runnable` as their
/// difference) in `enqueue_task_fair()`/`dequeue_entities()` and the
/// bandwidth paths.
#[derive(Clone, Copy)]
pub(crate) struct HCounts {
    pub queued: u32,
    pub delayed: u32,
    pub idle: u32,
}

impl HCounts {
    /// Everything queued at or below `cfs` (what a throttle takes from the levels above).
    pub(crate) fn of(cfs: &CfsRq) -> Self {
        HCounts { queued: cfs.h_nr_queued, delayed: cfs.h_nr_delayed, idle: cfs.idle_h_nr_running }
    }
}

/// `MIN_SHARES`: the least weight a group's entity gets on a CPU.
pub const MIN_SHARES: u32 = 2;
/// `MAX_SHARES` (`1 << 18`): the largest `cpu.shares`.
pub const MAX_SHARES: u32 = 1 << 18;

/// `struct task_group`, the fair half.
#[derive(Clone, Debug)]
pub struct TaskGroup {
    /// The group's path, for errors and reports.
    pub name: String,
    /// `tg->parent`; `None` for the root.
    pub parent: Option<usize>,
    /// `tg->shares` (unscaled): cpu.weight converted, or WEIGHT_IDLEPRIO for an idle group.
    pub shares: u32,
    /// `tg->cfs_rq[cpu]`.
    pub cfs_rq: Vec<CfsRqId>,
    /// `tg->load_avg`: Σ over CPUs of the cfs_rqs' `tg_load_avg_contrib`.
    pub load_avg: i64,
    /// `tg->cfs_bandwidth` when the group has a quota (`cpu.max`).
    pub bandwidth: Option<super::bandwidth::CfsBandwidth>,
    /// CPU time charged to tasks while in this group or below (cgroup v2's
    /// `cpu.stat` `usage_usec`, `cgroup_account_cputime()`), in ns.
    pub usage_ns: u64,
}

impl TaskGroup {
    /// `root_task_group`: its cfs_rq on each CPU is that CPU's `rq->cfs`.
    pub fn root(nr_cpus: usize) -> Self {
        TaskGroup {
            name: "/".into(),
            parent: None,
            shares: NICE_0_WEIGHT,
            cfs_rq: (0..nr_cpus).collect(),
            load_avg: 0,
            bandwidth: None,
            usage_ns: 0,
        }
    }
}

impl Kernel {
    /// The cfs_rq `q` (a CPU's root or a group's).
    #[inline]
    pub fn cfs(&self, q: CfsRqId) -> &CfsRq {
        match q.checked_sub(self.rqs.len()) {
            None => &self.rqs[q].cfs,
            Some(g) => &self.group_cfs[g],
        }
    }

    /// Cfs_rq `q`'s timeline with the entities' nodes, to read.
    #[inline]
    pub fn timeline(&self, q: CfsRqId) -> crate::fair::timeline::TimelineRef<'_> {
        self.run_nodes.view(&self.cfs(q).timeline)
    }

    /// Cfs_rq `q`'s timeline with the entities' nodes, to change.
    #[inline]
    pub(crate) fn timeline_mut(&mut self, q: CfsRqId) -> crate::fair::timeline::TimelineMut<'_> {
        let t = match q.checked_sub(self.rqs.len()) {
            None => &mut self.rqs[q].cfs.timeline,
            Some(g) => &mut self.group_cfs[g].timeline,
        };
        self.run_nodes.view_mut(t)
    }

    /// Cfs_rq `q` and entity `e` at once (disjoint parts of the kernel).
    pub(crate) fn cfs_and_entity(&mut self, q: CfsRqId, e: TaskId) -> (&mut CfsRq, &mut Task) {
        let task = &mut self.tasks[e as usize];
        let cfs = match q.checked_sub(self.rqs.len()) {
            None => &mut self.rqs[q].cfs,
            Some(g) => &mut self.group_cfs[g],
        };
        (cfs, task)
    }

    #[inline]
    pub(crate) fn cfs_mut(&mut self, q: CfsRqId) -> &mut CfsRq {
        match q.checked_sub(self.rqs.len()) {
            None => &mut self.rqs[q].cfs,
            Some(g) => &mut self.group_cfs[g],
        }
    }

    /// Whether any group other than the root exists (the walks are one step without).
    #[inline]
    pub fn has_task_groups(&self) -> bool {
        !self.group_cfs.is_empty()
    }

    /// `cfs_rq_of(se)`: a task's group's cfs_rq on the task's CPU, or the
    /// cfs_rq a group entity is queued on.
    #[inline]
    pub(crate) fn cfs_rq_of(&self, e: TaskId) -> CfsRqId {
        let t = &self.tasks[e as usize];
        match t.my_q {
            Some(q) => self.cfs(q).parent.expect("a group entity has a parent cfs_rq"),
            None if t.tg == 0 => t.cpu,
            None => self.task_groups[t.tg].cfs_rq[t.cpu],
        }
    }

    /// `parent_entity(se)`.
    #[inline]
    pub(crate) fn parent_entity(&self, e: TaskId) -> Option<TaskId> {
        self.cfs(self.cfs_rq_of(e)).se
    }

    /// `entity_is_task(se)`.
    #[inline]
    pub(crate) fn entity_is_task(&self, e: TaskId) -> bool {
        self.tasks[e as usize].my_q.is_none()
    }

    /// `se->depth`: 0 for an entity on a root cfs_rq.
    pub(crate) fn se_depth(&self, e: TaskId) -> u32 {
        let mut depth = 0;
        let mut se = e;
        while let Some(p) = self.parent_entity(se) {
            depth += 1;
            se = p;
        }
        depth
    }

    /// `se_is_idle()`: a SCHED_IDLE task, or the entity of an idle group.
    pub(crate) fn se_is_idle(&self, e: TaskId) -> bool {
        match self.tasks[e as usize].my_q {
            None => self.tasks[e as usize].policy == Policy::Idle,
            Some(q) => self.cfs(q).idle,
        }
    }

    /// `find_matching_se()`: walk both entities up to the level where they
    /// are siblings on one cfs_rq.
    pub(crate) fn find_matching_se(&self, mut se: TaskId, mut pse: TaskId) -> (TaskId, TaskId) {
        let (mut sd, mut pd) = (self.se_depth(se), self.se_depth(pse));
        while sd > pd {
            sd -= 1;
            se = self.parent_entity(se).expect("depth");
        }
        while pd > sd {
            pd -= 1;
            pse = self.parent_entity(pse).expect("depth");
        }
        while self.cfs_rq_of(se) != self.cfs_rq_of(pse) {
            se = self.parent_entity(se).expect("a common root");
            pse = self.parent_entity(pse).expect("a common root");
        }
        (se, pse)
    }

    /// `clear_buddies()` → `__clear_buddies_next()`: the next buddy is the
    /// only one left (6.12 dropped `last` and `skip`); it is cleared up the
    /// hierarchy as far as each level points at the entity's ancestor.
    pub(super) fn clear_buddies(&mut self, q: CfsRqId, e: TaskId) {
        if self.cfs(q).next != Some(e) {
            return;
        }
        let mut se = Some(e);
        while let Some(s) = se {
            let sq = self.cfs_rq_of(s);
            if self.cfs(sq).next != Some(s) {
                break;
            }
            self.cfs_mut(sq).next = None;
            se = self.cfs(sq).se;
        }
    }

    /// `set_next_buddy()`: point every level at the wakee's ancestor, unless
    /// an idle entity (SCHED_IDLE task or idle group) is on the way.
    pub(super) fn set_next_buddy(&mut self, e: TaskId) {
        let mut se = Some(e);
        while let Some(s) = se {
            if !self.tasks[s as usize].se.on_rq || self.se_is_idle(s) {
                return;
            }
            let sq = self.cfs_rq_of(s);
            self.cfs_mut(sq).next = Some(s);
            se = self.cfs(sq).se;
        }
    }

    /// `for_each_sched_entity(se)` applying `f` to `cfs_rq_of(se)`, up to
    /// and including a throttled one.
    pub(super) fn for_each_cfs_rq_up(&mut self, e: TaskId, mut f: impl FnMut(&mut crate::sched::CfsRq)) {
        let mut se = Some(e);
        while let Some(s) = se {
            let q = self.cfs_rq_of(s);
            f(self.cfs_mut(q));
            // Counts stop at a throttled cfs_rq, off its parent (6.12); a
            // task-based throttle leaves it queued, so they go on up.
            if self.cfs_rq_throttled(q) && !self.profile.task_based_throttle {
                break;
            }
            se = self.cfs(q).se;
        }
    }

    /// Add or take hierarchical counts at `q`.
    pub(crate) fn h_counts(&mut self, q: CfsRqId, c: HCounts, add: bool) {
        let cfs = self.cfs_mut(q);
        let apply = |v: &mut u32, n: u32| {
            if add {
                *v += n
            } else {
                *v -= n
            }
        };
        // h_nr_runnable = h_nr_queued - h_nr_delayed at every level (the invariants check it).
        apply(&mut cfs.h_nr_runnable, c.queued - c.delayed);
        apply(&mut cfs.h_nr_queued, c.queued);
        apply(&mut cfs.idle_h_nr_running, c.idle);
        apply(&mut cfs.h_nr_delayed, c.delayed);
    }

    /// A group entity's slice follows the smallest slice queued below it
    /// (`se->slice = slice` in the walks); a queued entity's copy in the
    /// tree is updated with it (`min_vruntime_cb_propagate()`).
    pub(super) fn set_group_slice(&mut self, q: CfsRqId, e: TaskId, slice: u64) {
        self.tasks[e as usize].se.slice = slice;
        if self.cfs(q).curr != Some(e) && self.timeline(q).contains(e) {
            self.timeline_mut(q).set_slice(e, slice);
        }
    }

    /// `sched_create_group()` + `sched_online_group()` with `cpu.weight` (as
    /// shares) and `cpu.idle` set before any task joins: a cfs_rq and an
    /// entity of weight NICE_0_LOAD per CPU (`init_tg_cfs_entry()`), each
    /// entity queued, when it is, on the parent group's cfs_rq of its CPU.
    /// An idle group's shares are WEIGHT_IDLEPRIO (`sched_group_set_idle()`).
    /// Returns the group's index for [`Kernel::set_task_group`].
    pub fn create_task_group(&mut self, name: &str, parent: usize, shares: u32, idle: bool) -> usize {
        let tg = self.task_groups.len();
        let nr_cpus = self.rqs.len();
        let mut cfs_rq = Vec::with_capacity(nr_cpus);
        for cpu in 0..nr_cpus {
            let q = nr_cpus + self.group_cfs.len();
            let se = self.tasks.len() as TaskId;
            let parent_q = self.task_groups[parent].cfs_rq[cpu];
            self.tasks.push(group_entity(cpu, q, parent, self.base_slice));
            self.group_cfs.push(CfsRq { tg, se: Some(se), parent: Some(parent_q), idle, ..CfsRq::new(cpu, q as u32) });
            cfs_rq.push(q);
        }
        let shares = if idle { WEIGHT_IDLEPRIO } else { shares.clamp(MIN_SHARES, MAX_SHARES) };
        self.task_groups.push(TaskGroup {
            name: name.to_string(),
            parent: Some(parent),
            shares,
            cfs_rq,
            load_avg: 0,
            bandwidth: None,
            usage_ns: 0,
        });
        tg
    }

    /// Put a task that has not been woken yet into group `tg` (what the
    /// cgroup's `cgroup.procs`/`cgroup.threads` write does before the thread
    /// runs; a forked task inherits its parent's group in `sched_fork()`).
    pub fn set_task_group(&mut self, t: TaskId, tg: usize) {
        debug_assert!(tg < self.task_groups.len());
        debug_assert!(self.tasks[t as usize].on_rq == OnRq::No, "moving a queued task needs sched_move_task()");
        self.tasks[t as usize].tg = tg;
    }

    /// `sched_move_task()` (core.c, 6.12): a task written into another
    /// cgroup's `cgroup.threads` by itself on `exec_cpu` at `now` — dequeued
    /// with DEQUEUE_SAVE|DEQUEUE_MOVE and put back if it runs, its group
    /// changed (`task_change_group_fair()`: its load detached from the old
    /// cfs_rq and attached to the new one, each change propagated up), then
    /// enqueued on the new group's cfs_rq and, if running, set as next with
    /// a reschedule. A task not woken yet only records the group.
    pub fn sched_move_task(&mut self, t: TaskId, tg: usize, now: u64, exec_cpu: usize, out: &mut crate::Outbox) {
        self.entry(now, exec_cpu, out, |k| k.move_task_group(t, tg));
    }

    fn move_task_group(&mut self, t: TaskId, tg: usize) {
        use crate::sched::qflags::*;
        if self.tasks[t as usize].tg == tg {
            return;
        }
        let cpu = self.tasks[t as usize].cpu;
        self.update_rq_clock(cpu);
        let class = self.class_of(t);
        let running = self.rqs[cpu].curr == Some(t);
        let queued = self.tasks[t as usize].on_rq == OnRq::Queued;
        if queued {
            self.dequeue_task(cpu, t, DEQUEUE_SAVE | DEQUEUE_MOVE | DEQUEUE_NOCLOCK);
        }
        if running {
            self.put_prev_task(cpu, t);
        }
        let fair = class == crate::sched::class::SchedClass::Fair;
        if fair && self.tasks[t as usize].state != TaskState::New {
            self.detach_entity_cfs_rq(t);
            self.tasks[t as usize].tg = tg;
            self.tasks[t as usize].se.avg.last_update_time = 0;
            self.attach_entity_cfs_rq(t);
        } else {
            self.tasks[t as usize].tg = tg;
        }
        if queued {
            self.tasks[t as usize].on_rq = OnRq::Queued;
            self.enqueue_task(cpu, t, ENQUEUE_RESTORE | ENQUEUE_MOVE | ENQUEUE_NOCLOCK);
        }
        if running {
            class.set_next_task_running(self, cpu, t);
            self.resched_curr(cpu);
        }
    }

    /// The task group of task `t`.
    pub fn task_group_of(&self, t: TaskId) -> usize {
        self.tasks[t as usize].tg
    }

    /// `cgroup_account_cputime()`: charge `delta` of task `t`'s CPU time to
    /// its group and every group above.
    pub(crate) fn account_group_cputime(&mut self, t: TaskId, delta: u64) {
        let mut at = Some(self.tasks[t as usize].tg).filter(|&g| g != 0);
        while let Some(g) = at {
            self.task_groups[g].usage_ns += delta;
            at = self.task_groups[g].parent.filter(|&p| p != 0);
        }
    }

    /// CPU time charged in group `tg` and below ([`TaskGroup::usage_ns`]).
    pub fn task_group_usage(&self, tg: usize) -> u64 {
        self.task_groups[tg].usage_ns
    }

    /// Group `tg` is `ancestor` or lies below it.
    pub fn task_group_within(&self, tg: usize, ancestor: usize) -> bool {
        let mut at = Some(tg);
        while let Some(g) = at {
            if g == ancestor {
                return true;
            }
            at = self.task_groups[g].parent;
        }
        false
    }

    /// `calc_group_shares()`: the group's shares in proportion to this CPU's
    /// part of its load — the larger of the cfs_rq's queued weight and its
    /// load average, against the group's load average over all CPUs with
    /// this cfs_rq's part brought up to date — clamped to
    /// `[MIN_SHARES, tg->shares]`.
    pub(crate) fn calc_group_shares(&self, gq: CfsRqId) -> u32 {
        let cfs = self.cfs(gq);
        let tg = &self.task_groups[cfs.tg];
        let tg_shares = tg.shares as i64;
        let load = cfs.load_weight.max(cfs.avg.load_avg) as i64;
        let tg_weight = tg.load_avg - cfs.tg_load_avg_contrib as i64 + load;
        let mut shares = tg_shares * load;
        if tg_weight != 0 {
            shares /= tg_weight;
        }
        shares.clamp(MIN_SHARES as i64, tg_shares) as u32
    }

    /// `update_cfs_group()`: re-weight a group's entity to its current share.
    /// An emptied group keeps its weight (which matters for DELAY_DEQUEUE).
    pub(crate) fn update_cfs_group(&mut self, e: TaskId) {
        let Some(gq) = self.tasks[e as usize].my_q else { return };
        if self.cfs(gq).load_weight == 0 || self.throttled_hierarchy(gq) {
            return;
        }
        let shares = self.calc_group_shares(gq);
        if self.tasks[e as usize].se.load.weight != shares {
            let q = self.cfs_rq_of(e);
            self.reweight_entity(q, e, shares);
        }
    }

    /// `reweight_entity()`: a queued entity keeps its lag and its virtual
    /// deadline's distance from V in real time (`reweight_eevdf()`); one off
    /// the queue scales its saved lag; its load average is re-scaled to the
    /// new weight and the cfs_rq's with it.
    pub(crate) fn reweight_entity(&mut self, q: CfsRqId, e: TaskId, weight: u32) {
        let curr = self.cfs(q).curr == Some(e);
        let on_rq = self.tasks[e as usize].se.on_rq;
        let old = self.tasks[e as usize].se.load.weight;
        let mut avruntime = 0;
        if on_rq {
            self.update_curr(q);
            avruntime = self.avg_vruntime(q);
            if !curr {
                self.__dequeue_entity(q, e);
            }
            self.cfs_mut(q).load_weight -= old as u64;
        }
        let (cfs, task) = self.cfs_and_entity(q, e);
        crate::pelt::dequeue_load_avg(&mut cfs.avg, &task.se.avg, old as u64);
        if on_rq {
            self.reweight_eevdf(q, e, avruntime, weight);
        } else {
            let se = &mut self.tasks[e as usize].se;
            se.vlag = se.vlag * old as i64 / weight as i64;
        }
        self.tasks[e as usize].se.load = LoadWeight::new(weight);
        let (cfs, task) = self.cfs_and_entity(q, e);
        let avg = &mut task.se.avg;
        avg.load_avg = weight as u64 * avg.load_sum / crate::pelt::get_pelt_divider(avg);
        crate::pelt::enqueue_load_avg(&mut cfs.avg, &task.se.avg, weight as u64);
        if on_rq {
            self.cfs_mut(q).load_weight += weight as u64;
            if !curr {
                self.__enqueue_entity(q, e);
            }
        }
    }

    /// `reweight_eevdf()`: v' = V − lag·w/w', d' = V + (d − V)·w/w'.
    fn reweight_eevdf(&mut self, q: CfsRqId, e: TaskId, avruntime: i64, weight: u32) {
        let old = self.tasks[e as usize].se.load.weight as i64;
        if avruntime != self.tasks[e as usize].se.vruntime {
            let vlag = self.entity_lag(q, avruntime, e);
            self.tasks[e as usize].se.vruntime = avruntime - vlag * old / weight as i64;
        }
        let se = &mut self.tasks[e as usize].se;
        let vslice = (se.deadline - avruntime) * old / weight as i64;
        se.deadline = avruntime + vslice;
    }
}

/// A group's sched_entity on `cpu` as `init_tg_cfs_entry()` leaves it:
/// weight NICE_0_LOAD, not queued, standing for cfs_rq `my_q`.
fn group_entity(cpu: usize, my_q: CfsRqId, parent_tg: usize, slice: u64) -> Task {
    Task {
        pid: 0,
        policy: Policy::Normal,
        static_prio: crate::sched::DEFAULT_PRIO,
        normal_prio: crate::sched::DEFAULT_PRIO,
        prio: crate::sched::DEFAULT_PRIO,
        state: TaskState::Running,
        on_rq: OnRq::No,
        on_cpu: false,
        cpu,
        cpus_mask: CpuSet::single(cpu),
        wake_cpu: cpu,
        recent_used_cpu: cpu,
        wakee: Default::default(),
        sched_remote_wakeup: false,
        sched_remote_delayed: false,
        throttled: false,
        dl: Default::default(),
        se: SchedEntity::new(NICE_0_WEIGHT, slice, false),
        nvcsw: 0,
        nivcsw: 0,
        fixed_start: true,
        lb_wakelist: false,
        wake_kind: None,
        rt_priority: 0,
        uclamp_min: None,
        uclamp_max: crate::pelt::SCHED_CAPACITY_SCALE as u32,
        rt_time_slice: 0,
        on_rt_rq: false,
        pi_blocked_on: None,
        pi_locks_held: Vec::new(),
        tg: parent_tg,
        my_q: Some(my_q),
    }
}
