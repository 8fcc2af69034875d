//! Invariant checks scoped to what the last kernel entries changed.
//!
//! [`Kernel::check_invariants`] recounts the whole model: O(tasks + CPUs) per
//! check, which after every entry makes a run with thousands of tasks or
//! hundreds of CPUs hundreds of times slower. The kernel instead notes which
//! runqueues and tasks its entries touch ([`Touched`]: the executing CPU, every
//! enqueue, dequeue, migration, switch and wakelist entry) and
//! [`Kernel::check_touched`] checks only those, against recounts taken from the
//! runqueue's own lists. A runqueue holding more than [`RQ_BUDGET`] entries is
//! checked every size/RQ_BUDGET-th time it is touched (a thousand RT tasks
//! queued on one CPU would otherwise cost a thousand per entry). A caller runs
//! the full recount now and then to catch what a path changed without noting
//! it; the test suite runs both after every entry, so a scoped check that
//! fails where the full one passes fails there.

use super::{CfsCounts, InvariantError, Places};
use crate::core::Kernel;
use crate::sched::{CfsRqId, TaskId};
use schedlab_topology::CpuSet;

/// The runqueues and tasks changed since the last [`Kernel::check_touched`].
/// Off (and free) unless [`Kernel::track_touched`] turned it on.
#[derive(Clone, Debug, Default)]
pub(crate) struct Touched {
    on: bool,
    cpus: CpuSet,
    /// Per CPU, the checks put off since its runqueue was last checked.
    deferred: Vec<u32>,
    /// May repeat a task; deduplicated when checked.
    tasks: Vec<TaskId>,
}

impl Touched {
    #[inline]
    pub(crate) fn cpu(&mut self, cpu: usize) {
        if self.on {
            self.cpus.insert(cpu);
        }
    }

    #[inline]
    pub(crate) fn task(&mut self, t: TaskId) {
        if self.on {
            self.tasks.push(t);
        }
    }
}

/// Queued, pushable and wakelist entries a runqueue may hold and still be
/// checked every time it is touched; past it, every size/RQ_BUDGET-th time.
pub const RQ_BUDGET: usize = 32;

/// Hierarchical counts of one cfs_rq, recounted downwards through its tree.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
struct Below {
    queued: u32,
    delayed: u32,
    idle: u32,
}

impl Kernel {
    /// Start (or stop) noting what each entry changes, for [`Kernel::check_touched`].
    pub fn track_touched(&mut self, on: bool) {
        self.touched = Touched { on, ..Touched::default() };
    }

    /// Check the runqueues and tasks touched since the last call, then forget
    /// them. Cost: the touched runqueues' queued entities and the touched
    /// tasks, not the whole model.
    pub fn check_touched(&mut self) -> Result<(), InvariantError> {
        let cpus = std::mem::take(&mut self.touched.cpus);
        let mut tasks = std::mem::take(&mut self.touched.tasks);
        tasks.sort_unstable();
        tasks.dedup();
        self.touched.deferred.resize(self.rqs.len(), 0);
        let mut result = Ok(());
        for cpu in cpus.iter() {
            let rq = &self.rqs[cpu];
            let size = rq.nr_running as usize + rq.rt.pushable.len() + rq.wake_list.len();
            let deferred = &mut self.touched.deferred[cpu];
            if (*deferred as usize + 1) * RQ_BUDGET < size {
                *deferred += 1;
                // Still owed a check: it stays touched.
                self.touched.cpus.insert(cpu);
                continue;
            }
            *deferred = 0;
            result = result.and_then(|()| self.check_cpu(cpu));
        }
        let result = result.and_then(|()| tasks.iter().try_for_each(|&t| self.check_one_task(t)));
        tasks.clear();
        // Keep the buffer: no allocation per entry in the steady state.
        self.touched.tasks = tasks;
        result
    }

    /// One runqueue: its curr, RT lists, wakelist, every cfs_rq of its CPU
    /// (root and groups) against recounts from their own trees, and
    /// `nr_running` against the sum.
    fn check_cpu(&self, cpu: usize) -> Result<(), InvariantError> {
        let rq = &self.rqs[cpu];
        let rd = &self.rds[rq.rd];
        if !rd.span.contains(cpu) || !rd.rto_mask.is_subset(&rd.span) {
            return Err(violation!("CPU {cpu} is in root domain {} whose span or rto_mask is wrong", rq.rd));
        }
        self.check_dl_bw_cpu(cpu)?;
        if let Some(t) = rq.curr {
            let task = &self.tasks[t as usize];
            if !task.on_cpu || task.cpu != cpu {
                return Err(violation!("CPU {cpu} runs task {t} but on_cpu={} task_cpu={}", task.on_cpu, task.cpu));
            }
        }
        let mut rt_listed = 0u32;
        // The lists the bitmap marks (a list it misses leaves the count short).
        let mut marked = rq.rt.bitmap;
        while marked != 0 {
            let prio = marked.trailing_zeros() as usize;
            marked &= marked - 1;
            let list = rq
                .rt
                .queue
                .get(prio)
                .filter(|l| !l.is_empty())
                .ok_or_else(|| violation!("CPU {cpu}: the RT bitmap marks prio {prio}, whose list is empty"))?;
            for &p in list {
                let task = &self.tasks[p as usize];
                if !task.on_rt_rq || task.cpu != cpu || task.prio as usize != prio {
                    return Err(violation!(
                        "CPU {cpu}: task {p} in the RT list of prio {prio} has on_rt_rq={} cpu={} prio={}",
                        task.on_rt_rq,
                        task.cpu,
                        task.prio
                    ));
                }
                rt_listed += 1;
            }
        }
        if rq.rt.rt_nr_running != rt_listed {
            return Err(violation!(
                "CPU {cpu}: rt_nr_running {} but {rt_listed} tasks in the RT lists",
                rq.rt.rt_nr_running
            ));
        }
        self.check_rq_lists(rq)?;
        let mut fair_tasks = 0usize;
        let mut root = Below::default();
        for q in self.cfs_rqs_on(cpu) {
            self.check_cfs_tree(q)?;
            let (mut nr, mut weight) = (0u32, 0u64);
            for e in self.queued_entities(q) {
                nr += 1;
                weight += self.tasks[e as usize].se.load.weight as u64;
                fair_tasks += self.entity_is_task(e) as usize;
            }
            let below = self.below(q, 0);
            if q == cpu {
                root = below;
            }
            let want = CfsCounts { nr, weight, h_queued: below.queued, h_delayed: below.delayed, h_idle: below.idle };
            self.check_cfs_counts(q, &want, "recount down its tree")?;
        }
        let dl_listed = rq.dl.queue.len() as u32;
        if rq.dl.dl_nr_running != dl_listed {
            return Err(violation!("CPU {cpu}: dl_nr_running {} but {dl_listed} in the dl tree", rq.dl.dl_nr_running));
        }
        for &(deadline, _, p) in &rq.dl.queue {
            let dl = &self.tasks[p as usize].dl;
            if !dl.on_dl_rq || dl.deadline != deadline || self.tasks[p as usize].cpu != cpu {
                return Err(violation!(
                    "CPU {cpu}: task {p} in the dl tree at deadline {deadline} has on_dl_rq={} deadline={} cpu={}",
                    dl.on_dl_rq,
                    dl.deadline,
                    self.tasks[p as usize].cpu
                ));
            }
        }
        if rq.nr_running != root.queued + rt_listed + dl_listed {
            return Err(violation!(
                "CPU {cpu}: rq.nr_running = {}, recount = {} fair + {rt_listed} RT + {dl_listed} deadline",
                rq.nr_running,
                root.queued
            ));
        }
        if rq.cfs.tasks.len() != fair_tasks {
            return Err(violation!("CPU {cpu}: cfs_tasks has {}, its cfs_rqs hold {fair_tasks}", rq.cfs.tasks.len()));
        }
        Ok(())
    }

    /// The root cfs_rq of `cpu` and every group's cfs_rq there.
    fn cfs_rqs_on(&self, cpu: usize) -> impl Iterator<Item = CfsRqId> + '_ {
        std::iter::once(cpu).chain(self.task_groups.iter().skip(1).map(move |tg| tg.cfs_rq[cpu]))
    }

    /// The entities queued on `q`: its tree and its curr when still queued.
    fn queued_entities(&self, q: CfsRqId) -> impl Iterator<Item = TaskId> + '_ {
        let curr = self.cfs(q).curr.filter(|&c| self.tasks[c as usize].se.on_rq);
        self.timeline(q).iter().chain(curr)
    }

    /// The tasks queued at or below `q`, as its `h_nr_*` counters count them:
    /// a throttled cfs_rq's tasks stay with it (unless task-based throttling
    /// leaves them queued) and an idle cfs_rq's tasks count as idle above it.
    fn below(&self, q: CfsRqId, depth: usize) -> Below {
        let mut sum = Below::default();
        // A cycle in the hierarchy is caught by the full check; do not recurse forever.
        if depth > self.task_groups.len() {
            return sum;
        }
        for e in self.queued_entities(q) {
            let entity = &self.tasks[e as usize];
            match entity.my_q {
                None => {
                    sum.queued += 1;
                    sum.delayed += entity.se.sched_delayed as u32;
                    sum.idle += (entity.policy == crate::sched::Policy::Idle) as u32;
                }
                Some(m) => {
                    let child = self.cfs(m);
                    if child.throttled && !self.profile.task_based_throttle {
                        continue;
                    }
                    let b = self.below(m, depth + 1);
                    sum.queued += b.queued;
                    sum.delayed += b.delayed;
                    sum.idle += if child.idle { b.queued } else { b.idle };
                }
            }
        }
        sum
    }

    /// One task against the runqueue of its CPU and its home cfs_rq.
    fn check_one_task(&self, t: TaskId) -> Result<(), InvariantError> {
        let task = &self.tasks[t as usize];
        if task.my_q.is_some() {
            return Ok(());
        }
        let rq = &self.rqs[task.cpu];
        let home = self.cfs_rq_of(t);
        let places = Places {
            running_on: (rq.curr == Some(t)).then_some(task.cpu),
            switching: rq.switching_out == Some(t),
            tree_of: self.timeline(home).contains(t).then_some(home),
            curr_of: (self.cfs(home).curr == Some(t)).then_some(home),
        };
        // Whether the prio list holds it is left to the full recount (O(list)
        // here); this runqueue's own check sees every listed task's fields.
        self.check_task(t, places, None)
    }
}
