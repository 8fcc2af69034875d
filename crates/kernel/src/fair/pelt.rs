//! `fair.c`'s PELT glue: `update_load_avg()` at the points the kernel calls
//! it, attach/detach/remove on migration, `post_init_entity_util_avg()`, and
//! the load/utilisation readers the wakeup path and the balancer use
//! (`cpu_load()`, `cpu_util_cfs()`, `task_h_load()`, the `*_without()` forms).
//!
//! With task groups, every cfs_rq keeps its own averages and every group
//! entity its own: a task attaches to its group's cfs_rq, the change
//! propagates up through the group entities (`add_tg_cfs_propagate()`,
//! `propagate_entity_load_avg()`, `update_tg_cfs_util/runnable/load()`), each
//! group cfs_rq's load feeds its group's `tg->load_avg`
//! (`update_tg_load_avg()`, which `calc_group_shares()` reads), and the
//! balancer weighs a task by its share of the root's load (`task_h_load()`,
//! cached per jiffy as the kernel does).
//!
//! Follows 6.12.x. Simplified: no UTIL_EST; the PELT clock is
//! capacity-invariant but not frequency-invariant (see [`crate::pelt::clock`]),
//! stopped while a cfs_rq is throttled. Without any task group,
//! `task_h_load()` is the task's own load average (the !FAIR_GROUP_SCHED
//! form; the kernel with groups configured divides by the root's load + 1
//! as of the jiffy, a difference under 0.1 % of a task's load that the model
//! leaves out so runs without groups stay as they were).

use crate::core::Kernel;
use crate::pelt;
use crate::sched::{CfsRqId, OnRq, Rq, TaskId};

/// Offset of the PELT clock from the rq clock. `last_update_time == 0`
/// means "not attached", so the PELT clock must never read 0 (a kernel's
/// clock never does after boot); shifting it keeps every difference intact.
pub(crate) const PELT_CLOCK_BASE: u64 = 1 << 30;

/// `update_load_avg()` flags, defined once with the PELT sums.
pub(crate) use crate::pelt::{DO_ATTACH, DO_DETACH, SKIP_AGE_LOAD, UPDATE_TG};

impl Kernel {
    /// `rq_clock_pelt()`: the capacity-scaled PELT clock less the lost idle
    /// time ([`pelt::clock`]), offset by [`PELT_CLOCK_BASE`].
    pub(crate) fn rq_clock_pelt(&self, cpu: usize) -> u64 {
        let rq = &self.rqs[cpu];
        pelt::clock::rq_clock_pelt(rq.clock_pelt, rq.lost_idle_time) + PELT_CLOCK_BASE
    }

    /// `update_rq_clock_pelt()` at the end of `update_rq_clock()`: `delta`
    /// ns passed on `cpu`'s clock. The CPU counts as idle while the idle
    /// task is current (the stopper is not idle).
    pub(crate) fn update_rq_clock_pelt(&mut self, cpu: usize, delta: u64) {
        let cap = self.topo.cpus[cpu].capacity as u64;
        let freq = self.cpufreq.freq_scale[cpu];
        let rq = &mut self.rqs[cpu];
        let idle = rq.curr.is_none() && !rq.stopper_running;
        pelt::clock::update_rq_clock_pelt(&mut rq.clock_pelt, rq.clock, delta, idle, cap, freq);
    }

    /// `update_idle_rq_clock_pelt()`, from `set_next_task_idle()`: the CPU
    /// is about to run its idle task.
    pub(crate) fn update_idle_rq_clock_pelt(&mut self, cpu: usize) {
        let rq = &mut self.rqs[cpu];
        let util_sum = rq.cfs.avg.util_sum;
        pelt::clock::update_idle_rq_clock_pelt(&mut rq.clock_pelt, &mut rq.lost_idle_time, rq.clock, util_sum);
    }

    /// `cfs_rq_clock_pelt()`: the rq's PELT clock less the time the cfs_rq
    /// spent throttled, standing still while it is.
    pub(crate) fn cfs_rq_clock_pelt(&self, q: CfsRqId) -> u64 {
        let cfs = self.cfs(q);
        // 6.18 stops it only while a throttled cfs_rq is empty (`pelt_clock_throttled`).
        let stopped = if self.profile.task_based_throttle { cfs.pelt_clock_throttled } else { cfs.throttle_count > 0 };
        if stopped {
            cfs.throttled_clock_pelt - cfs.throttled_clock_pelt_time
        } else {
            self.rq_clock_pelt(cfs.cpu) - cfs.throttled_clock_pelt_time
        }
    }

    /// `add_tg_cfs_propagate()`: a load change for `q`'s group entity to pick up.
    fn add_tg_cfs_propagate(&mut self, q: CfsRqId, runnable_sum: i64) {
        let cfs = self.cfs_mut(q);
        cfs.propagate = true;
        cfs.prop_runnable_sum += runnable_sum;
    }

    /// `update_cfs_rq_load_avg()` of cfs_rq `q` at its PELT clock, applying
    /// `cfs_rq->removed` first (and passing the removal up). True when the
    /// averages decayed.
    pub(crate) fn update_cfs_rq_load_avg(&mut self, q: CfsRqId) -> bool {
        let now = self.cfs_rq_clock_pelt(q);
        let cfs = self.cfs_mut(q);
        let removed = std::mem::take(&mut cfs.removed);
        let mut decayed = false;
        if removed.nr > 0 {
            let divider = pelt::get_pelt_divider(&cfs.avg);
            pelt::remove_entity_load_avg(&mut cfs.avg, removed.load_avg, removed.util_avg, removed.runnable_avg);
            decayed = true;
            let prop = -((removed.runnable_avg.wrapping_mul(divider)) as i64) >> pelt::SCHED_CAPACITY_SHIFT;
            self.add_tg_cfs_propagate(q, prop);
        }
        let cfs = self.cfs_mut(q);
        let running = cfs.curr.is_some();
        decayed |= pelt::update_cfs_rq_avg(now, &mut cfs.avg, cfs.load_weight, cfs.h_nr_runnable as u64, running);
        decayed
    }

    /// `update_load_avg()` for entity `e` on cfs_rq `q`: age the entity (a
    /// group entity is runnable as many times as its cfs_rq has runnable
    /// tasks), age the cfs_rq, fold in what the entity's own cfs_rq passed
    /// up, then attach or detach, and refresh the group's load.
    pub(crate) fn update_load_avg(&mut self, q: CfsRqId, e: TaskId, flags: u32) {
        let now = self.cfs_rq_clock_pelt(q);
        let is_curr = self.cfs(q).curr == Some(e);
        let task = &mut self.tasks[e as usize];
        let se = &mut task.se;
        if se.avg.last_update_time != 0 && flags & SKIP_AGE_LOAD == 0 {
            let runnable = match task.my_q {
                None => (se.on_rq && !se.sched_delayed) as u64,
                Some(_) => se.runnable_weight as u64,
            };
            pelt::update_entity_avg_runnable(now, &mut se.avg, se.load.weight as u64, se.on_rq, runnable, is_curr);
        }
        let mut decayed = self.update_cfs_rq_load_avg(q);
        decayed |= self.propagate_entity_load_avg(e);
        let attach = self.tasks[e as usize].se.avg.last_update_time == 0 && flags & DO_ATTACH != 0;
        if attach || flags & DO_DETACH != 0 {
            let (cfs, task) = self.cfs_and_entity(q, e);
            let se = &mut task.se;
            let w = se.load.weight as u64;
            let prop = if attach {
                pelt::attach_entity_load_avg(&mut cfs.avg, &mut se.avg, w);
                se.avg.load_sum as i64
            } else {
                pelt::detach_entity_load_avg(&mut cfs.avg, &se.avg, w);
                -(se.avg.load_sum as i64)
            };
            self.add_tg_cfs_propagate(q, prop);
            self.update_tg_load_avg(q);
        } else if decayed && flags & UPDATE_TG != 0 {
            self.update_tg_load_avg(q);
        }
        // cfs_rq_util_change(): attach_entity_load_avg(),
        // detach_entity_load_avg() and a decay of the root cfs_rq kick cpufreq.
        if (attach || flags & DO_DETACH != 0 || decayed) && self.is_root_cfs_rq(q) {
            self.cpufreq_update_util(self.cfs(q).cpu);
        }
    }

    /// The CPU's top-level cfs_rq (`&rq->cfs == cfs_rq`).
    fn is_root_cfs_rq(&self, q: CfsRqId) -> bool {
        q < self.rqs.len()
    }

    /// `se_update_runnable()`: a group entity's runnable count follows its cfs_rq.
    pub(crate) fn se_update_runnable(&mut self, e: TaskId) {
        if let Some(gq) = self.tasks[e as usize].my_q {
            self.tasks[e as usize].se.runnable_weight = self.cfs(gq).h_nr_runnable;
        }
    }

    /// `update_tg_load_avg()`: publish a group cfs_rq's load in `tg->load_avg`
    /// when it moved by more than 1/64, at most once per ms.
    pub(crate) fn update_tg_load_avg(&mut self, q: CfsRqId) {
        let now = self.now;
        let cfs = self.cfs(q);
        if cfs.tg == 0 || cfs.last_update_tg_load_avg.is_some_and(|t| now - t < 1_000_000) {
            return;
        }
        let delta = cfs.avg.load_avg as i64 - cfs.tg_load_avg_contrib as i64;
        if delta.unsigned_abs() > cfs.tg_load_avg_contrib / 64 {
            let tg = cfs.tg;
            self.task_groups[tg].load_avg += delta;
            let cfs = self.cfs_mut(q);
            cfs.tg_load_avg_contrib = cfs.avg.load_avg;
            cfs.last_update_tg_load_avg = Some(now);
        }
    }

    /// `propagate_entity_load_avg()`: fold what group entity `e`'s cfs_rq
    /// passed up into `e` and its parent cfs_rq, and pass it further up.
    fn propagate_entity_load_avg(&mut self, e: TaskId) -> bool {
        let Some(gq) = self.tasks[e as usize].my_q else { return false };
        if !self.cfs(gq).propagate {
            return false;
        }
        self.cfs_mut(gq).propagate = false;
        let q = self.cfs_rq_of(e);
        let prop = self.cfs(gq).prop_runnable_sum;
        self.add_tg_cfs_propagate(q, prop);
        self.update_tg_cfs_util(q, e, gq);
        self.update_tg_cfs_runnable(q, e, gq);
        self.update_tg_cfs_load(q, e, gq);
        true
    }

    /// `update_tg_cfs_util()`: the group entity's util is its cfs_rq's.
    fn update_tg_cfs_util(&mut self, q: CfsRqId, e: TaskId, gq: CfsRqId) {
        let g_util = self.cfs(gq).avg.util_avg;
        let (cfs, task) = self.cfs_and_entity(q, e);
        let se = &mut task.se.avg;
        let delta_avg = g_util as i64 - se.util_avg as i64;
        if delta_avg == 0 {
            return;
        }
        let divider = pelt::get_pelt_divider(&cfs.avg);
        se.util_avg = g_util;
        let new_sum = se.util_avg.wrapping_mul(divider) as u32;
        let delta_sum = new_sum as i64 - se.util_sum as i64;
        se.util_sum = new_sum;
        add_positive(&mut cfs.avg.util_avg, delta_avg);
        cfs.avg.util_sum = add_positive_u32(cfs.avg.util_sum, delta_sum);
        cfs.avg.util_sum =
            pelt::max_u32(cfs.avg.util_sum as u64, cfs.avg.util_avg.wrapping_mul(pelt::PELT_MIN_DIVIDER));
    }

    /// `update_tg_cfs_runnable()`: the group entity's runnable is its cfs_rq's.
    fn update_tg_cfs_runnable(&mut self, q: CfsRqId, e: TaskId, gq: CfsRqId) {
        let g_runnable = self.cfs(gq).avg.runnable_avg;
        let (cfs, task) = self.cfs_and_entity(q, e);
        let se = &mut task.se.avg;
        let delta_avg = g_runnable as i64 - se.runnable_avg as i64;
        if delta_avg == 0 {
            return;
        }
        let divider = pelt::get_pelt_divider(&cfs.avg);
        se.runnable_avg = g_runnable;
        let new_sum = se.runnable_avg.wrapping_mul(divider);
        let delta_sum = new_sum as i64 - se.runnable_sum as i64;
        se.runnable_sum = new_sum;
        add_positive(&mut cfs.avg.runnable_avg, delta_avg);
        add_positive(&mut cfs.avg.runnable_sum, delta_sum);
        cfs.avg.runnable_sum =
            pelt::max_u32(cfs.avg.runnable_sum, cfs.avg.runnable_avg.wrapping_mul(pelt::PELT_MIN_DIVIDER)) as u64;
    }

    /// `update_tg_cfs_load()`: the group entity's load sum takes the
    /// propagated runnable time (an addition bounded by the divider; a
    /// removal estimated from the cfs_rq's load per unit weight), at least
    /// its running time, times its weight.
    fn update_tg_cfs_load(&mut self, q: CfsRqId, e: TaskId, gq: CfsRqId) {
        let g = self.cfs(gq);
        let mut runnable_sum = g.prop_runnable_sum;
        if runnable_sum == 0 {
            return;
        }
        let (g_load_sum, g_weight) = (g.avg.load_sum, g.load_weight);
        self.cfs_mut(gq).prop_runnable_sum = 0;
        let (cfs, task) = self.cfs_and_entity(q, e);
        let weight = task.se.load.weight as u64;
        let se = &mut task.se.avg;
        let divider = pelt::get_pelt_divider(&cfs.avg);
        if runnable_sum >= 0 {
            runnable_sum += se.load_sum as i64;
            runnable_sum = runnable_sum.min(divider as i64);
        } else {
            let load_sum = g_load_sum.checked_div(g_weight).unwrap_or(0);
            runnable_sum = se.load_sum.min(load_sum) as i64;
        }
        let running_sum = (se.util_sum >> pelt::SCHED_CAPACITY_SHIFT) as i64;
        runnable_sum = runnable_sum.max(running_sum);
        let load_sum = weight.wrapping_mul(runnable_sum as u64);
        let load_avg = load_sum / divider;
        let delta_avg = load_avg as i64 - se.load_avg as i64;
        if delta_avg == 0 {
            return;
        }
        let delta_sum = load_sum as i64 - weight.wrapping_mul(se.load_sum) as i64;
        se.load_sum = runnable_sum as u64;
        se.load_avg = load_avg;
        add_positive(&mut cfs.avg.load_avg, delta_avg);
        add_positive(&mut cfs.avg.load_sum, delta_sum);
        cfs.avg.load_sum =
            pelt::max_u32(cfs.avg.load_sum, cfs.avg.load_avg.wrapping_mul(pelt::PELT_MIN_DIVIDER)) as u64;
    }

    /// `detach_entity_cfs_rq()`: take a task's load off its cfs_rq and pass
    /// the change up.
    pub(crate) fn detach_entity_cfs_rq(&mut self, t: TaskId) {
        let q = self.cfs_rq_of(t);
        self.update_load_avg(q, t, 0);
        let (cfs, task) = self.cfs_and_entity(q, t);
        pelt::detach_entity_load_avg(&mut cfs.avg, &task.se.avg, task.se.load.weight as u64);
        let prop = -(task.se.avg.load_sum as i64);
        if self.is_root_cfs_rq(q) {
            self.cpufreq_update_util(self.cfs(q).cpu);
        }
        self.add_tg_cfs_propagate(q, prop);
        self.update_tg_load_avg(q);
        self.propagate_entity_cfs_rq(t);
    }

    /// `attach_entity_cfs_rq()`: put a task's load on its (new) cfs_rq
    /// (ATTACH_AGE_LOAD, the default: age it first) and pass the change up.
    pub(crate) fn attach_entity_cfs_rq(&mut self, t: TaskId) {
        let q = self.cfs_rq_of(t);
        self.update_load_avg(q, t, 0);
        let (cfs, task) = self.cfs_and_entity(q, t);
        pelt::attach_entity_load_avg(&mut cfs.avg, &mut task.se.avg, task.se.load.weight as u64);
        let prop = task.se.avg.load_sum as i64;
        if self.is_root_cfs_rq(q) {
            self.cpufreq_update_util(self.cfs(q).cpu);
        }
        self.add_tg_cfs_propagate(q, prop);
        self.update_tg_load_avg(q);
        self.propagate_entity_cfs_rq(t);
    }

    /// `propagate_entity_cfs_rq()`: update the ancestors' load up to a
    /// throttled cfs_rq (6.12); 6.18, whose throttled cfs_rqs stay queued,
    /// goes all the way up.
    fn propagate_entity_cfs_rq(&mut self, t: TaskId) {
        let q = self.cfs_rq_of(t);
        let stops_at = |k: &Kernel, q: CfsRqId| k.cfs_rq_throttled(q) && !k.profile.task_based_throttle;
        if stops_at(self, q) {
            return;
        }
        let mut se = self.cfs(q).se;
        while let Some(s) = se {
            let pq = self.cfs_rq_of(s);
            self.update_load_avg(pq, s, UPDATE_TG);
            if stops_at(self, pq) {
                break;
            }
            se = self.cfs(pq).se;
        }
    }

    /// `sync_entity_load_avg()`: age a sleeping task's averages to its old
    /// cfs_rq's last update.
    pub(crate) fn sync_entity_load_avg(&mut self, t: TaskId) {
        let last = self.cfs(self.cfs_rq_of(t)).avg.last_update_time;
        let se = &mut self.tasks[t as usize].se;
        if se.avg.last_update_time != 0 {
            pelt::update_entity_avg(last, &mut se.avg, se.load.weight as u64, false, false, false);
        }
    }

    /// `remove_entity_load_avg()`: leave the task's contribution for its old
    /// cfs_rq to subtract at its next update.
    fn remove_entity_load_avg(&mut self, t: TaskId) {
        self.sync_entity_load_avg(t);
        let q = self.cfs_rq_of(t);
        let avg = self.tasks[t as usize].se.avg;
        let r = &mut self.cfs_mut(q).removed;
        r.nr += 1;
        r.load_avg += avg.load_avg;
        r.util_avg += avg.util_avg;
        r.runnable_avg += avg.runnable_avg;
    }

    /// `sched_balance_update_blocked_averages()`: `__update_blocked_others()`
    /// (the RT and DL signals, first, since schedutil reads them), then
    /// `__update_blocked_fair()`: decay every cfs_rq of an idle CPU, children
    /// before parents, folding each group's change into its entity, the
    /// root last.
    pub(crate) fn update_blocked_averages(&mut self, cpu: usize) {
        self.update_rq_clock(cpu);
        let mut decayed = self.update_other_load_avgs(cpu);
        if self.has_task_groups() {
            let mut leaves: Vec<(u32, CfsRqId)> = (1..self.task_groups.len())
                .map(|g| self.task_groups[g].cfs_rq[cpu])
                .map(|q| (self.se_depth(self.cfs(q).se.expect("a group cfs_rq has an entity")), q))
                .collect();
            leaves.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (_, q) in leaves {
                if self.update_cfs_rq_load_avg(q) {
                    decayed = true;
                    self.update_tg_load_avg(q);
                }
                let se = self.cfs(q).se.expect("a group cfs_rq has an entity");
                let a = self.tasks[se as usize].se.avg;
                if a.load_avg != 0 || a.util_avg != 0 || self.cfs(q).propagate {
                    self.update_load_avg(self.cfs_rq_of(se), se, UPDATE_TG);
                }
            }
        }
        decayed |= self.update_cfs_rq_load_avg(cpu);
        if decayed {
            self.cpufreq_update_util(cpu);
        }
        let has_blocked = |a: &crate::pelt::SchedAvg| a.load_avg != 0 || a.util_avg != 0 || a.runnable_avg != 0;
        let mut blocked = self.others_have_blocked(cpu) || has_blocked(&self.rqs[cpu].cfs.avg);
        for g in 1..self.task_groups.len() {
            blocked |= has_blocked(&self.cfs(self.task_groups[g].cfs_rq[cpu]).avg);
        }
        self.rqs[cpu].has_blocked_load = blocked;
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
    /// spare capacity its cfs_rq leaves on the CPU it is placed on.
    pub(crate) fn post_init_entity_util_avg(&mut self, t: TaskId) {
        let cpu = self.tasks[t as usize].cpu;
        let cap = self.topo.cpus[cpu].capacity as u64;
        let cfs_avg = self.cfs(self.cfs_rq_of(t)).avg;
        let se = &mut self.tasks[t as usize].se;
        pelt::post_init_entity_util_avg(&mut se.avg, &cfs_avg, se.load.weight as u64, cap);
    }

    /// `cpu_load()`: the root cfs_rq's load average ([`Rq::cpu_load`]).
    pub fn cpu_load(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cpu_load()
    }

    /// `cpu_util_cfs()`: utilisation, capped at the CPU's original capacity
    /// (`arch_scale_cpu_capacity()`).
    pub fn cpu_util_cfs(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cpu_util_cfs(self.topo.cpus[cpu].capacity as u64)
    }

    /// `task_util()`.
    pub fn task_util(&self, t: TaskId) -> u64 {
        self.tasks[t as usize].se.avg.util_avg
    }

    /// `task_h_load()`: the task's load as a share of what its cfs_rq
    /// carries at the root (its own load without task groups, see the module doc).
    pub fn task_h_load(&self, t: TaskId) -> u64 {
        let load = self.tasks[t as usize].se.avg.load_avg;
        if !self.has_task_groups() {
            return load;
        }
        let q = self.cfs_rq_of(t);
        self.update_cfs_rq_h_load(q);
        let cfs = self.cfs(q);
        load * cfs.h_load.get() / (cfs.avg.load_avg + 1)
    }

    /// `update_cfs_rq_h_load()`: walk up to the first cfs_rq already
    /// computed this jiffy (or the root, whose h_load is its load), then down
    /// again giving each cfs_rq its parent's h_load times its entity's share.
    fn update_cfs_rq_h_load(&self, q: CfsRqId) {
        let now = self.jiffies;
        if self.cfs(q).last_h_load_update.get() == Some(now) {
            return;
        }
        self.cfs(q).h_load_next.set(None);
        let (mut top, mut se) = (q, self.cfs(q).se);
        while let Some(s) = se {
            top = self.cfs_rq_of(s);
            self.cfs(top).h_load_next.set(Some(s));
            if self.cfs(top).last_h_load_update.get() == Some(now) {
                break;
            }
            se = self.cfs(top).se;
        }
        if se.is_none() {
            let root = self.cfs(top);
            root.h_load.set(root.avg.load_avg);
            root.last_h_load_update.set(Some(now));
        }
        let mut at = top;
        while let Some(s) = self.cfs(at).h_load_next.get() {
            let parent = self.cfs(at);
            let load = parent.h_load.get() * self.tasks[s as usize].se.avg.load_avg / (parent.avg.load_avg + 1);
            at = self.tasks[s as usize].my_q.expect("h_load_next is a group entity");
            self.cfs(at).h_load.set(load);
            self.cfs(at).last_h_load_update.set(Some(now));
        }
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
        load.saturating_sub(self.task_h_load(t))
    }

    /// `cpu_util_without()`.
    pub fn cpu_util_without(&self, cpu: usize, t: TaskId) -> u64 {
        let util = self.rqs[cpu].cfs.avg.util_avg;
        let util = if self.counted_on(cpu, t) { util.saturating_sub(self.task_util(t)) } else { util };
        util.min(self.topo.cpus[cpu].capacity as u64)
    }

    /// `cpu_runnable_without()`.
    pub fn cpu_runnable_without(&self, cpu: usize, t: TaskId) -> u64 {
        let runnable = self.rqs[cpu].cpu_runnable();
        if !self.counted_on(cpu, t) {
            return runnable;
        }
        runnable.saturating_sub(self.tasks[t as usize].se.avg.runnable_avg)
    }
}

/// `add_positive()` on a 64-bit field: add a signed delta, clamping at 0.
fn add_positive(v: &mut u64, delta: i64) {
    let r = *v as i64 + delta;
    *v = if delta < 0 && r < 0 { 0 } else { r as u64 };
}

/// `add_positive()` on a 32-bit field.
fn add_positive_u32(v: u32, delta: i64) -> u32 {
    let r = v as i64 + delta;
    if delta < 0 && r < 0 {
        0
    } else {
        r as u32
    }
}

impl Rq {
    /// `cpu_load(rq)`: the root cfs_rq's load average. The kernel's takes
    /// the runqueue, as here: a loop over CPUs that reads several of
    /// their figures looks each runqueue up once.
    pub fn cpu_load(&self) -> u64 {
        self.cfs.avg.load_avg
    }

    /// `cpu_runnable(rq)`: the root cfs_rq's runnable average.
    pub fn cpu_runnable(&self) -> u64 {
        self.cfs.avg.runnable_avg
    }

    /// [`Kernel::cpu_util_cfs`] of this runqueue, whose CPU's original
    /// capacity is `capacity_orig`.
    pub fn cpu_util_cfs(&self, capacity_orig: u64) -> u64 {
        self.cfs.avg.util_avg.min(capacity_orig)
    }
}
