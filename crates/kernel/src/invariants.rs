//! Consistency checks over the whole model, run after every simulated step in
//! debug builds and in tests: a task is on at most one CPU, a queued task is on
//! exactly one runqueue, and every counter and weighted sum matches a recount.

use crate::core::Kernel;
use crate::fair::timeline::TimelineError;
use crate::sched::class::SchedClass;
use crate::sched::{CfsRqId, OnRq, TaskId};

/// The first inconsistency [`Kernel::check_invariants`] found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvariantError {
    /// A CPU's fair timeline is malformed.
    #[error("CPU {cpu} timeline: {source}")]
    Timeline { cpu: usize, source: TimelineError },
    /// A counter, sum or cross-reference disagrees with its recount.
    #[error("{0}")]
    Violation(String),
}

macro_rules! violation {
    ($($fmt:tt)*) => {
        InvariantError::Violation(format!($($fmt)*))
    };
}

mod dl_bw;
mod local;

/// What a cfs_rq's counters should say: its queued entities and their
/// weight, and the tasks queued at or below it.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
pub(crate) struct CfsCounts {
    nr: u32,
    weight: u64,
    h_queued: u32,
    h_delayed: u32,
    h_idle: u32,
}

/// Where the runqueues hold one task, as [`Kernel::check_task`] compares it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Places {
    /// The CPU whose curr it is.
    running_on: Option<usize>,
    /// A CPU is switching away from it.
    switching: bool,
    /// The cfs_rq whose tree holds it.
    tree_of: Option<usize>,
    /// The cfs_rq whose curr it is.
    curr_of: Option<usize>,
}
pub(crate) use local::Touched;

impl Kernel {
    /// EAS state (fair/eas.rs, topology/perf_domains.rs): the static key is
    /// on exactly when some root domain has performance domains; each
    /// listed domain has an energy model and shares CPUs with the root
    /// domain (a cpuset partition may cut a cluster: the kernel lists the
    /// whole domain, `find_energy_efficient_cpu()` skips the CPUs outside),
    /// each CPU of the root domain in exactly one of them; no root domain
    /// is overutilized with EAS off (the flag is only kept with EAS on).
    fn check_energy_state(&self) -> Result<(), InvariantError> {
        let any = self.rds.iter().any(|rd| !rd.pd.is_empty());
        if any != self.sched_energy_present {
            return Err(violation!(
                "sched_energy_present is {} but a root domain with perf domains: {any}",
                self.sched_energy_present
            ));
        }
        for (i, rd) in self.rds.iter().enumerate() {
            if rd.pd.is_empty() {
                if rd.overutilized && !self.sched_energy_present {
                    return Err(violation!("root domain {i} is overutilized with EAS off"));
                }
                continue;
            }
            let mut covered = schedlab_topology::CpuSet::empty();
            for &pd in &rd.pd {
                let Some(em) = self.em.get(pd).and_then(|e| e.as_ref()) else {
                    return Err(violation!("root domain {i} lists perf domain {pd}, which has no energy model"));
                };
                if em.cpus.and(&rd.span).is_empty() || !covered.and(&em.cpus).is_empty() {
                    return Err(violation!(
                        "root domain {i} ({}) lists perf domain {pd} ({}) outside it or twice",
                        rd.span.to_cpulist(),
                        em.cpus.to_cpulist()
                    ));
                }
                covered = covered.or(&em.cpus);
            }
            if !rd.span.is_subset(&covered) {
                return Err(violation!(
                    "root domain {i} ({}) has perf domains covering only {}",
                    rd.span.to_cpulist(),
                    covered.to_cpulist()
                ));
            }
        }
        Ok(())
    }

    /// Capacity pressure (fair/capacity.rs, pelt/other.rs): the RT and DL
    /// signals are utilisations (at most 1024); a CPU's `capacity_of()` is
    /// between 1 and its original capacity; every group's run-time
    /// capacities are ordered (min <= max <= sum).
    fn check_capacity_pressure(&self) -> Result<(), InvariantError> {
        for rq in &self.rqs {
            let orig = self.topo.cpus[rq.cpu].capacity as u64;
            if rq.avg_rt.util_avg > 1024 || rq.avg_dl.util_avg > 1024 || rq.cpu_capacity == 0 || rq.cpu_capacity > orig
            {
                return Err(violation!(
                    "CPU {}: util_rt {} util_dl {} capacity_of {} (original {orig})",
                    rq.cpu,
                    rq.avg_rt.util_avg,
                    rq.avg_dl.util_avg,
                    rq.cpu_capacity
                ));
            }
        }
        for (id, s) in self.sgc.iter().enumerate() {
            if s.min_capacity > s.max_capacity || s.max_capacity > s.capacity {
                return Err(violation!(
                    "sched group {id}: capacity {} min {} max {}",
                    s.capacity,
                    s.min_capacity,
                    s.max_capacity
                ));
            }
        }
        Ok(())
    }
}
pub use local::RQ_BUDGET;

impl Kernel {
    /// Recount everything; `Err` describes the first violation found.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        self.check_cpufreq().map_err(InvariantError::Violation)?;
        self.check_energy_state()?;
        self.check_capacity_pressure()?;
        let mut running_on: Vec<Option<usize>> = vec![None; self.tasks.len()];
        for rq in &self.rqs {
            // A root domain spans its CPUs and holds only their overload state.
            let rd = &self.rds[rq.rd];
            if !rd.span.contains(rq.cpu) || !rd.rto_mask.is_subset(&rd.span) {
                return Err(violation!(
                    "CPU {} is in root domain {} spanning {}, whose rto_mask is {}",
                    rq.cpu,
                    rq.rd,
                    rd.span.to_cpulist(),
                    rd.rto_mask.to_cpulist()
                ));
            }
            if let Some(t) = rq.curr {
                if let Some(other) = running_on[t as usize] {
                    return Err(violation!("task {t} is curr on CPU {other} and CPU {}", rq.cpu));
                }
                running_on[t as usize] = Some(rq.cpu);
                let task = &self.tasks[t as usize];
                if !task.on_cpu || task.cpu != rq.cpu {
                    return Err(violation!(
                        "CPU {} runs task {t} but on_cpu={} task_cpu={}",
                        rq.cpu,
                        task.on_cpu,
                        task.cpu
                    ));
                }
            }
        }
        let nr_cfs = self.rqs.len() + self.group_cfs.len();
        // Who is where, gathered once: every check below is then O(tasks + CPUs +
        // queued), not tasks x runqueues (a 224-CPU machine with thousands of
        // threads checks after every entry in tests).
        let mut switching_out = vec![false; self.tasks.len()];
        // Each RT task's place in the prio lists, from one pass over them:
        // asking each list whether it holds a task is O(list) per task.
        let mut rt_listed_at: Vec<Option<(usize, usize)>> = vec![None; self.tasks.len()];
        for rq in &self.rqs {
            if let Some(t) = rq.switching_out {
                switching_out[t as usize] = true;
            }
            for (prio, list) in rq.rt.queue.iter().enumerate() {
                for &t in list {
                    let slot = rt_listed_at
                        .get_mut(t as usize)
                        .ok_or_else(|| violation!("CPU {}'s RT list {prio} holds unknown task {t}", rq.cpu))?;
                    if let Some((cpu, p)) = slot.replace((rq.cpu, prio)) {
                        return Err(violation!(
                            "task {t} is in the RT lists of CPU {cpu} prio {p} and CPU {} prio {prio}",
                            rq.cpu
                        ));
                    }
                }
            }
        }
        let mut tree_of: Vec<Option<usize>> = vec![None; self.tasks.len()];
        let mut curr_of: Vec<Option<usize>> = vec![None; self.tasks.len()];
        for q in 0..nr_cfs {
            let cfs = self.cfs(q);
            // Bounded: a corrupt list must not hang the check (check_queued reports it).
            for t in self.timeline(q).iter().take(cfs.timeline.len() + 1) {
                let slot = tree_of
                    .get_mut(t as usize)
                    .ok_or_else(|| violation!("cfs_rq {q}'s tree holds unknown entity {t}"))?;
                if let Some(other) = slot.replace(q) {
                    return Err(violation!("entity {t} is in the trees of cfs_rq {other} and cfs_rq {q}"));
                }
            }
            if let Some(c) = cfs.curr {
                if let Some(other) = curr_of[c as usize].replace(q) {
                    return Err(violation!("entity {c} is curr of cfs_rq {other} and cfs_rq {q}"));
                }
            }
        }
        for (i, task) in self.tasks.iter().enumerate() {
            if task.my_q.is_some() {
                continue;
            }
            let listed = rt_listed_at[i] == Some((task.cpu, task.prio as usize));
            let places = Places {
                running_on: running_on[i],
                switching: switching_out[i],
                tree_of: tree_of[i],
                curr_of: curr_of[i],
            };
            self.check_task(i as TaskId, places, Some(listed))?;
        }
        // Per-CPU recounts from one pass over the tasks.
        let mut rt_queued_on = vec![0u32; self.rqs.len()];
        let mut dl_queued_on = vec![0u32; self.rqs.len()];
        let mut fair_on = vec![0usize; self.rqs.len()];
        let mut unthrottled_on = vec![0usize; self.rqs.len()];
        for (i, p) in self.tasks.iter().enumerate() {
            if p.on_rt_rq {
                rt_queued_on[p.cpu] += 1;
            }
            if p.dl.on_dl_rq {
                dl_queued_on[p.cpu] += 1;
                let dl_task = p.policy == crate::sched::Policy::Deadline || p.dl.pi_se.is_some();
                if !dl_task || p.on_rq != crate::sched::OnRq::Queued {
                    return Err(violation!(
                        "task {i} is on CPU {}'s dl_rq but is not a queued deadline (or boosted) task",
                        p.cpu
                    ));
                }
            }
            if p.my_q.is_none() && p.se.on_rq {
                fair_on[p.cpu] += 1;
                if self.profile.task_based_throttle || !self.throttled_hierarchy(self.cfs_rq_of(i as TaskId)) {
                    unthrottled_on[p.cpu] += 1;
                }
            }
        }
        self.check_cfs_rqs()?;
        self.check_dl_bw()?;
        for rq in &self.rqs {
            let cfs = &rq.cfs;
            let rt_queued = rt_queued_on[rq.cpu];
            if rq.rt.rt_nr_running != rt_queued {
                return Err(violation!(
                    "CPU {}: rt_nr_running {} but {rt_queued} RT tasks queued",
                    rq.cpu,
                    rq.rt.rt_nr_running
                ));
            }
            let listed: usize = rq.rt.queue.iter().map(|q| q.len()).sum();
            if listed as u32 != rt_queued {
                return Err(violation!("CPU {}: {listed} tasks in the RT lists, {rt_queued} queued", rq.cpu));
            }
            self.check_rq_lists(rq)?;
            let dl_queued = dl_queued_on[rq.cpu];
            if rq.dl.dl_nr_running != dl_queued || rq.dl.queue.len() as u32 != dl_queued {
                return Err(violation!(
                    "CPU {}: dl_nr_running {}, {} in the dl tree, {dl_queued} tasks on its dl_rq",
                    rq.cpu,
                    rq.dl.dl_nr_running,
                    rq.dl.queue.len()
                ));
            }
            let (fair_tasks, unthrottled) = (fair_on[rq.cpu], unthrottled_on[rq.cpu]);
            if rq.nr_running != unthrottled as u32 + rt_queued + dl_queued {
                return Err(violation!(
                    "CPU {}: rq.nr_running = {}, recount = {unthrottled} fair (not throttled) + {rt_queued} RT + \
                     {dl_queued} deadline",
                    rq.cpu,
                    rq.nr_running
                ));
            }
            if cfs.tasks.len() != fair_tasks {
                return Err(violation!("CPU {}: cfs_tasks has {}, recount = {fair_tasks}", rq.cpu, cfs.tasks.len()));
            }
        }
        Ok(())
    }

    /// A runqueue's RT pushable list, overload flags and wakelist against
    /// the tasks they name.
    pub(crate) fn check_rq_lists(&self, rq: &crate::sched::Rq) -> Result<(), InvariantError> {
        for &p in &rq.rt.pushable {
            let task = &self.tasks[p as usize];
            if !task.on_rt_rq || task.cpu != rq.cpu || rq.curr == Some(p) || task.nr_cpus_allowed() < 2 {
                return Err(violation!(
                    "CPU {}: task {p} is pushable but not a queued, waiting, movable RT task here",
                    rq.cpu
                ));
            }
        }
        if rq.rt.overloaded == rq.rt.pushable.is_empty()
            || rq.rt.overloaded != self.rds[rq.rd].rto_mask.contains(rq.cpu)
        {
            return Err(violation!(
                "CPU {}: overloaded={} with {} pushable",
                rq.cpu,
                rq.rt.overloaded,
                rq.rt.pushable.len()
            ));
        }
        if rq.ttwu_pending == rq.wake_list.is_empty() {
            return Err(violation!(
                "CPU {}: ttwu_pending={} with {} queued wakeups",
                rq.cpu,
                rq.ttwu_pending,
                rq.wake_list.len()
            ));
        }
        for &t in &rq.wake_list {
            let task = &self.tasks[t as usize];
            if task.lb_wakelist {
                if task.on_rq != OnRq::Migrating {
                    return Err(violation!(
                        "load-balancer hand-off {t} on CPU {}'s wakelist is {:?}",
                        rq.cpu,
                        task.on_rq
                    ));
                }
                continue;
            }
            if task.state != crate::sched::TaskState::Waking {
                return Err(violation!("task {t} on CPU {}'s wakelist in state {:?}", rq.cpu, task.state));
            }
            if task.on_rq == OnRq::Queued && !task.se.sched_delayed {
                return Err(violation!("task {t} on CPU {}'s wakelist is queued and not delayed", rq.cpu));
            }
        }
        Ok(())
    }

    /// One cfs_rq's counters against `want`, recounted `how`.
    pub(crate) fn check_cfs_counts(&self, q: CfsRqId, want: &CfsCounts, how: &str) -> Result<(), InvariantError> {
        let cfs = self.cfs(q);
        let checks = [
            ("nr_running", cfs.nr_running as u64, want.nr as u64),
            ("load_weight", cfs.load_weight, want.weight),
            ("h_nr_queued", cfs.h_nr_queued as u64, want.h_queued as u64),
            ("h_nr_delayed", cfs.h_nr_delayed as u64, want.h_delayed as u64),
            ("h_nr_runnable", cfs.h_nr_runnable as u64, (want.h_queued - want.h_delayed) as u64),
            ("idle_h_nr_running", cfs.idle_h_nr_running as u64, want.h_idle as u64),
        ];
        for (name, have, want) in checks {
            if have != want {
                return Err(violation!("cfs_rq {q} (CPU {}): {name} = {have}, {how} = {want}", cfs.cpu));
            }
        }
        Ok(())
    }

    /// One cfs_rq's tree: well formed, its entities queued here and unchanged
    /// since they went in, its vruntime sums recounted, its curr consistent.
    pub(crate) fn check_cfs_tree(&self, q: CfsRqId) -> Result<(), InvariantError> {
        let cfs = self.cfs(q);
        self.timeline(q).check_queued().map_err(|source| InvariantError::Timeline { cpu: cfs.cpu, source })?;
        let (mut sum, mut load) = (0i64, 0u64);
        for t in self.timeline(q).iter() {
            let se = &self.tasks[t as usize].se;
            if self.cfs_rq_of(t) != q || !se.on_rq {
                return Err(violation!("cfs_rq {q}: entity {t} in its tree belongs elsewhere or is not queued"));
            }
            sum += (se.vruntime - cfs.zero_vruntime) * se.load.weight as i64;
            load += se.load.weight as u64;
            let (d, v, s) = self.timeline(q).entity(t).unwrap();
            if (d, v, s) != (se.deadline, se.vruntime, se.slice) {
                return Err(violation!("cfs_rq {q} (CPU {}): entity {t} changed while in the tree", cfs.cpu));
            }
        }
        if sum != cfs.avg_vruntime || load != cfs.avg_load {
            return Err(violation!(
                "cfs_rq {q} (CPU {}): avg_vruntime {} / avg_load {} but recount {sum} / {load}",
                cfs.cpu,
                cfs.avg_vruntime,
                cfs.avg_load
            ));
        }
        match cfs.curr {
            Some(c) if self.entity_is_task(c) && self.rqs[cfs.cpu].curr != Some(c) => {
                return Err(violation!(
                    "cfs_rq {q}: curr {c} is not CPU {}'s curr {:?}",
                    cfs.cpu,
                    self.rqs[cfs.cpu].curr
                ));
            }
            Some(c) if self.cfs_rq_of(c) != q => {
                return Err(violation!("cfs_rq {q}: curr {c} belongs to cfs_rq {}", self.cfs_rq_of(c)));
            }
            _ => {}
        }
        Ok(())
    }

    /// One task's own state against where the runqueues hold it; `rt_listed`:
    /// whether its CPU's RT list of its prio holds it, when known.
    pub(crate) fn check_task(&self, t: TaskId, places: Places, rt_listed: Option<bool>) -> Result<(), InvariantError> {
        let Places { running_on, switching, tree_of, curr_of } = places;
        let task = &self.tasks[t as usize];
        if task.on_cpu && running_on.is_none() && !switching {
            return Err(violation!("task {t} has on_cpu set but no CPU runs it or is switching away from it"));
        }
        if switching && (!task.on_cpu || running_on.is_some()) {
            return Err(violation!("task {t} is switching out but on_cpu={} running_on={:?}", task.on_cpu, running_on));
        }
        let queued = task.on_rq == OnRq::Queued;
        if self.class_of(t) == SchedClass::Rt {
            if queued != task.on_rt_rq || task.se.on_rq {
                return Err(violation!(
                    "RT task {t}: on_rq={:?} on_rt_rq={} se.on_rq={}",
                    task.on_rq,
                    task.on_rt_rq,
                    task.se.on_rq
                ));
            }
            if rt_listed.is_some_and(|in_queue| in_queue != queued) {
                return Err(violation!("RT task {t} queued={queued} but in its prio list: {}", !queued));
            }
            return Ok(());
        }
        if self.class_of(t) == SchedClass::Dl {
            // A throttled deadline task stays on_rq but leaves its dl_rq.
            let dl = &task.dl;
            if task.on_rt_rq || task.se.on_rq || (dl.on_dl_rq && !queued) || (queued && !dl.on_dl_rq && !dl.throttled) {
                return Err(violation!(
                    "deadline task {t}: on_rq={:?} on_dl_rq={} throttled={} on_rt_rq={} se.on_rq={}",
                    task.on_rq,
                    dl.on_dl_rq,
                    dl.throttled,
                    task.on_rt_rq,
                    task.se.on_rq
                ));
            }
            return Ok(());
        }
        if task.on_rt_rq || task.dl.on_dl_rq {
            return Err(violation!("fair task {t} is on an rt_rq or a dl_rq"));
        }
        // Task-based throttling: runnable, off every tree, on its cfs_rq's limbo list.
        let in_limbo = self.cfs(self.cfs_rq_of(t)).limbo.contains(&t);
        if task.throttled != in_limbo || (task.throttled && (!queued || task.se.on_rq)) {
            return Err(violation!(
                "task {t}: throttled={} but in its cfs_rq's limbo list: {in_limbo} (on_rq={:?}, se.on_rq={})",
                task.throttled,
                task.on_rq,
                task.se.on_rq
            ));
        }
        let queued = queued && !task.throttled;
        if queued != task.se.on_rq {
            return Err(violation!("task {t}: p->on_rq={:?} but se.on_rq={}", task.on_rq, task.se.on_rq));
        }
        if task.se.sched_delayed && !task.se.on_rq {
            return Err(violation!("task {t} is sched_delayed but not queued"));
        }
        // Queued on exactly one cfs_rq: its group's on its CPU, in the tree or as curr.
        let home = self.cfs_rq_of(t);
        if let Some(q) = tree_of {
            if q != home || !queued {
                return Err(violation!(
                    "task {t} is in cfs_rq {q}'s tree (CPU {}; task_cpu {}, home {home}, queued {queued})",
                    self.cfs(q).cpu,
                    task.cpu
                ));
            }
        }
        // The home tree's own slot for the task agrees with its list.
        if self.timeline(home).contains(t) != (tree_of == Some(home)) {
            return Err(violation!(
                "task {t}: cfs_rq {home}'s tree marks it queued but does not list it, or the reverse"
            ));
        }
        let in_tree = tree_of == Some(home);
        let is_cfs_curr = curr_of == Some(home);
        if queued && !(in_tree ^ is_cfs_curr) {
            return Err(violation!("queued task {t} on cfs_rq {home}: in_tree={in_tree} cfs_curr={is_cfs_curr}"));
        }
        if let Some(q) = curr_of.filter(|&q| q != home) {
            return Err(violation!("task {t} is curr of cfs_rq {q} (CPU {}) but its home is {home}", self.cfs(q).cpu));
        }
        Ok(())
    }

    /// Every cfs_rq, root or group: its queued entities, weights, sums and
    /// tree against a recount, the hierarchical task counts against a walk
    /// up from every queued task, a group's throttle state against its parent's.
    fn check_cfs_rqs(&self) -> Result<(), InvariantError> {
        let nr_cfs = self.rqs.len() + self.group_cfs.len();
        let mut counts = vec![CfsCounts::default(); nr_cfs];
        for (i, e) in self.tasks.iter().enumerate() {
            if !e.se.on_rq {
                continue;
            }
            let id = i as TaskId;
            let q = self.cfs_rq_of(id);
            counts[q].nr += 1;
            counts[q].weight += e.se.load.weight as u64;
            if e.my_q.is_some() {
                continue;
            }
            let mut idle = e.policy == crate::sched::Policy::Idle;
            let mut up = Some(id);
            while let Some(s) = up {
                let q = self.cfs_rq_of(s);
                let c = &mut counts[q];
                c.h_queued += 1;
                c.h_delayed += e.se.sched_delayed as u32;
                c.h_idle += idle as u32;
                idle |= self.cfs(q).idle;
                // A throttled cfs_rq keeps its tasks' counts; nothing above has
                // them (6.12). Task-based throttling leaves it queued: they count.
                let hidden = self.cfs(q).throttled && !self.profile.task_based_throttle;
                up = if hidden { None } else { self.cfs(q).se };
            }
        }
        for (q, want) in counts.iter().enumerate() {
            self.check_cfs_tree(q)?;
            self.check_cfs_counts(q, want, "recount")?;
        }
        for (g, tg) in self.task_groups.iter().enumerate().skip(1) {
            let contrib: i64 = tg.cfs_rq.iter().map(|&q| self.cfs(q).tg_load_avg_contrib as i64).sum();
            if contrib != tg.load_avg {
                return Err(violation!(
                    "task group {g} ({}): load_avg {} but its cfs_rqs contribute {contrib}",
                    tg.name,
                    tg.load_avg
                ));
            }
            for &q in &tg.cfs_rq {
                let cfs = self.cfs(q);
                // throttle_count: this cfs_rq's throttle plus its parent's count.
                let above = cfs.parent.map_or(0, |p| self.cfs(p).throttle_count);
                if cfs.throttle_count != above + cfs.throttled as u32 {
                    return Err(violation!(
                        "cfs_rq {q} of group {g}: throttle_count {} but throttled={} under {above}",
                        cfs.throttle_count,
                        cfs.throttled
                    ));
                }
                let listed = tg.bandwidth.as_ref().is_some_and(|b| b.throttled.contains(&q));
                if cfs.throttled != listed {
                    return Err(violation!("cfs_rq {q} of group {g}: throttled={} but listed={listed}", cfs.throttled));
                }
                if cfs.throttled && !self.profile.task_based_throttle && self.tasks[cfs.se.unwrap() as usize].se.on_rq {
                    return Err(violation!("cfs_rq {q} of group {g} is throttled but its entity is queued"));
                }
            }
        }
        Ok(())
    }
}
