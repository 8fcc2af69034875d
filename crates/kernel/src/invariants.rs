//! Consistency checks over the whole model, run after every simulated step in
//! debug builds and in tests: a task is on at most one CPU, a queued task is on
//! exactly one runqueue, and every counter and weighted sum matches a recount.

use crate::core::Kernel;
use crate::fair::timeline::TimelineError;
use crate::sched::class::SchedClass;
use crate::sched::{OnRq, TaskId};

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

impl Kernel {
    /// Recount everything; `Err` describes the first violation found.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let mut running_on: Vec<Option<usize>> = vec![None; self.tasks.len()];
        for rq in &self.rqs {
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
        for (i, task) in self.tasks.iter().enumerate() {
            let t = i as TaskId;
            let switching = self.rqs.iter().any(|rq| rq.switching_out == Some(t));
            if task.on_cpu && running_on[i].is_none() && !switching {
                return Err(violation!("task {t} has on_cpu set but no CPU runs it or is switching away from it"));
            }
            if switching && (!task.on_cpu || running_on[i].is_some()) {
                return Err(violation!(
                    "task {t} is switching out but on_cpu={} running_on={:?}",
                    task.on_cpu,
                    running_on[i]
                ));
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
                let in_queue = self.rqs[task.cpu].rt.queue[task.prio as usize].contains(&t);
                if in_queue != queued {
                    return Err(violation!("RT task {t} queued={queued} but in its prio list: {in_queue}"));
                }
                continue;
            }
            if task.on_rt_rq {
                return Err(violation!("fair task {t} is on an rt_rq"));
            }
            if queued != task.se.on_rq {
                return Err(violation!("task {t}: p->on_rq={:?} but se.on_rq={}", task.on_rq, task.se.on_rq));
            }
            if task.se.sched_delayed && !task.se.on_rq {
                return Err(violation!("task {t} is sched_delayed but not queued"));
            }
            // Queued on exactly one runqueue: its own, in the tree or as curr.
            for rq in &self.rqs {
                let in_tree = rq.cfs.timeline.contains(t);
                let is_cfs_curr = rq.cfs.curr == Some(t);
                let here = rq.cpu == task.cpu;
                if in_tree && (!here || !queued) {
                    return Err(violation!(
                        "task {t} is in CPU {}'s tree (task_cpu {}, queued {queued})",
                        rq.cpu,
                        task.cpu
                    ));
                }
                if here && queued && !(in_tree ^ is_cfs_curr) {
                    return Err(violation!(
                        "queued task {t} on CPU {}: in_tree={in_tree} cfs_curr={is_cfs_curr}",
                        rq.cpu
                    ));
                }
                if !here && is_cfs_curr {
                    return Err(violation!("task {t} is cfs curr of CPU {} but task_cpu is {}", rq.cpu, task.cpu));
                }
            }
        }
        for rq in &self.rqs {
            let cfs = &rq.cfs;
            cfs.timeline.check().map_err(|source| InvariantError::Timeline { cpu: rq.cpu, source })?;
            let rt_queued = self.tasks.iter().filter(|p| p.on_rt_rq && p.cpu == rq.cpu).count() as u32;
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
            for &p in &rq.rt.pushable {
                let task = &self.tasks[p as usize];
                if !task.on_rt_rq || task.cpu != rq.cpu || rq.curr == Some(p) || task.nr_cpus_allowed() < 2 {
                    return Err(violation!(
                        "CPU {}: task {p} is pushable but not a queued, waiting, movable RT task here",
                        rq.cpu
                    ));
                }
            }
            if rq.rt.overloaded == rq.rt.pushable.is_empty() || rq.rt.overloaded != self.rto_mask.contains(rq.cpu) {
                return Err(violation!(
                    "CPU {}: overloaded={} with {} pushable",
                    rq.cpu,
                    rq.rt.overloaded,
                    rq.rt.pushable.len()
                ));
            }
            let queued: Vec<&crate::sched::Task> =
                self.tasks.iter().filter(|p| p.se.on_rq && p.cpu == rq.cpu).collect();
            let n = queued.len() as u32;
            let delayed = queued.iter().filter(|p| p.se.sched_delayed).count() as u32;
            let weight: u64 = queued.iter().map(|p| p.se.load.weight as u64).sum();
            let checks = [
                ("cfs.nr_running", cfs.nr_running, n),
                ("cfs.h_nr_queued", cfs.h_nr_queued, n),
                ("rq.nr_running", rq.nr_running, n + rt_queued),
                ("cfs.h_nr_delayed", cfs.h_nr_delayed, delayed),
                ("cfs.h_nr_runnable", cfs.h_nr_runnable, n - delayed),
                ("cfs.tasks.len", cfs.tasks.len() as u32, n),
            ];
            for (name, have, want) in checks {
                if have != want {
                    return Err(violation!("CPU {}: {name} = {have}, recount = {want}", rq.cpu));
                }
            }
            if cfs.load_weight != weight {
                return Err(violation!("CPU {}: cfs load {} != Σ weights {weight}", rq.cpu, cfs.load_weight));
            }
            let (mut sum, mut load) = (0i64, 0u64);
            for t in cfs.timeline.iter() {
                let se = &self.tasks[t as usize].se;
                sum += (se.vruntime - cfs.zero_vruntime) * se.load.weight as i64;
                load += se.load.weight as u64;
                let (d, v, s) = cfs.timeline.entity(t).unwrap();
                if (d, v, s) != (se.deadline, se.vruntime, se.slice) {
                    return Err(violation!("CPU {}: task {t} changed while in the tree", rq.cpu));
                }
            }
            if sum != cfs.avg_vruntime || load != cfs.avg_load {
                return Err(violation!(
                    "CPU {}: avg_vruntime {} / avg_load {} but recount {sum} / {load}",
                    rq.cpu,
                    cfs.avg_vruntime,
                    cfs.avg_load
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
            if let Some(c) = cfs.curr {
                if rq.curr != Some(c) {
                    return Err(violation!("CPU {}: cfs curr {c} is not rq curr {:?}", rq.cpu, rq.curr));
                }
            }
        }
        Ok(())
    }
}
