//! `fork`: a thread creating another mid-run.
//!
//! Modeled on 6.12's `kernel_clone()` path as the scheduler sees it:
//! `sched_fork()` copies the parent's policy, normal priority (a PI boost
//! is not inherited), custom slice and affinity and puts the child on the
//! parent's CPU; `wake_up_new_task()` then places it by fork balancing
//! (`select_task_rq()` with `WF_FORK`, `sched_balance_find_dst_cpu()`)
//! and enqueues it with `ENQUEUE_INITIAL`. The child starts in its
//! parent's task group; its first steps are its own table's cgroup (a
//! `sched_move_task()`), `sched_setaffinity()` and `sched_setscheduler()`,
//! as an rt-app thread sets its taskgroup and attributes at the top of its
//! thread function.
//! Simplified: the parent pays one syscall entry for `clone()`; the
//! kernel's copy of the task (stack, TLS) is not charged.

use super::ops::{Flow, NEXT, STOP};
use super::Thread;
use crate::engine::Engine;
use crate::SimError;
use schedlab_kernel::syscalls::SchedAttr;
use schedlab_scenario::{ThreadSpec, MAX_FORKED_THREADS, MAX_FORKS_PER_OP};
use schedlab_trace::TaskInfo;

/// A forked thread's own state.
#[derive(Clone, Debug)]
pub struct Forked {
    pub comm: String,
    /// The attribute calls still to make before the program's first op.
    setup: Setup,
}

impl Forked {
    /// Still making its attribute calls (its program has not begun).
    pub fn in_setup(&self) -> bool {
        self.setup != Setup::Done
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    Cgroup,
    Affinity,
    Scheduler,
    Done,
}

impl<'a> Engine<'a> {
    /// The spec a thread runs: its `[[thread]]` instance, or for a forked
    /// thread its template.
    pub(crate) fn spec_of(&self, th: usize) -> &'a ThreadSpec {
        self.spec_of_index(self.threads[th].spec)
    }

    /// Spec `i` of the scenario's threads followed by its templates.
    fn spec_of_index(&self, i: usize) -> &'a ThreadSpec {
        let scenario: &'a schedlab_scenario::Scenario = self.scenario;
        scenario.threads.get(i).unwrap_or_else(|| &scenario.templates[i - scenario.threads.len()])
    }

    /// A thread's comm.
    pub(crate) fn comm_of(&self, th: usize) -> &str {
        match &self.threads[th].forked {
            Some(f) => &f.comm,
            None => &self.spec_of(th).name,
        }
    }

    /// `fork`: `pthread_create()` of a thread of template `template`.
    pub(super) fn op_fork(&mut self, cpu: usize, th: usize, template: u32) -> Flow {
        if !self.pay(cpu, th, self.syscall_ns()) {
            return STOP;
        }
        let site = (th, self.threads[th].pc);
        self.threads[th].pc += 1;
        let done = self.forks.per_op.entry(site).or_insert(0);
        if *done >= MAX_FORKS_PER_OP || self.forks.total >= MAX_FORKED_THREADS {
            let what = if *done >= MAX_FORKS_PER_OP {
                format!("one `fork` op of a thread may create {MAX_FORKS_PER_OP} threads (rt-app's FORKS_LIMIT)")
            } else {
                format!("a run may fork {MAX_FORKED_THREADS} threads in all (each keeps its state to the end)")
            };
            self.error = Some(SimError::Workload(format!(
                "thread {} forked once too often at {} ns: {what}",
                self.comm_of(th),
                self.now
            )));
            return STOP;
        }
        *done += 1;
        self.forks.total += 1;
        let t = template as usize;
        let n = self.forks.per_template[t];
        self.forks.per_template[t] += 1;
        let comm = self.scenario.forked_comm(t, n);
        let pid = self.forks.next_pid;
        self.forks.next_pid += 1;

        let task = self.kernel.sched_fork(self.threads[th].task, pid, cpu);
        let slack = self.threads[th].timer_slack_ns;
        let spec = self.scenario.threads.len() + t;
        let mut child = Thread::new(task, spec, slack);
        child.started = true;
        child.started_at = self.now;
        child.forked = Some(Box::new(Forked { comm: comm.clone(), setup: Setup::Cgroup }));
        if self.forks.rtapp_log && !self.spec_of_index(spec).program.rows.is_empty() {
            child.rtapp_log = Some(Box::default());
        }
        let child_th = self.threads.len();
        self.threads.push(child);
        if self.task_thread.len() <= task as usize {
            self.task_thread.resize(task as usize + 1, usize::MAX);
        }
        self.task_thread[task as usize] = child_th;
        self.forks.new_tasks.push((pid, TaskInfo { comm, tgid: crate::FIRST_PID - 1 }));

        self.kernel.wake_up_new_task(task, self.now, cpu, &mut self.out);
        self.drain();
        self.preempt_point(cpu);
        NEXT
    }

    /// A forked thread's first steps, before its program: its own table's
    /// affinity and policy, each a syscall, each only when it differs from
    /// what it inherited. `None` once done (the program goes on).
    pub(super) fn fork_setup(&mut self, cpu: usize, th: usize) -> Option<Flow> {
        let step = self.threads[th].forked.as_ref().map(|f| f.setup)?;
        let spec = self.spec_of(th);
        let task = self.threads[th].task;
        let next = |e: &mut Self, s: Setup| {
            if let Some(f) = e.threads[th].forked.as_mut() {
                f.setup = s;
            }
        };
        match step {
            Setup::Done => None,
            Setup::Cgroup => {
                // It started in its forker's group; its own table's is joined first.
                let target = spec.cgroup.map(|k| self.groups.target(Some(k)));
                if let Some(tg) = target.filter(|&tg| self.kernel.task_group_of(task) != tg) {
                    if !self.pay(cpu, th, self.syscall_ns()) {
                        return Some(STOP);
                    }
                    self.kernel.sched_move_task(task, tg, self.now, cpu, &mut self.out);
                    self.drain();
                    next(self, Setup::Affinity);
                    self.preempt_point(cpu);
                    return Some(NEXT);
                }
                next(self, Setup::Affinity);
                Some(NEXT)
            }
            Setup::Affinity => {
                if self.kernel.task(task).cpus_mask != spec.affinity {
                    if !self.pay(cpu, th, self.syscall_ns()) {
                        return Some(STOP);
                    }
                    self.kernel.set_cpus_allowed_ptr(task, spec.affinity, self.now, cpu, &mut self.out);
                    self.drain();
                    next(self, Setup::Scheduler);
                    self.preempt_point(cpu);
                    return Some(NEXT);
                }
                next(self, Setup::Scheduler);
                Some(NEXT)
            }
            Setup::Scheduler => {
                let policy = crate::kernel_policy(spec.policy);
                let have = self.kernel.task(task);
                let same = have.policy == policy
                    && if policy.is_fair() {
                        have.static_prio - schedlab_kernel::sched::DEFAULT_PRIO == spec.nice
                    } else {
                        have.rt_priority == spec.rt_priority
                    };
                // Its own clamps, where they differ from the inherited ones
                // (the same sched_setattr() call as the policy).
                let uclamp = spec.uclamp.filter(|u| {
                    u.min.is_some_and(|m| Some(m) != have.uclamp_min) || u.max.is_some_and(|m| m != have.uclamp_max)
                });
                if !same || uclamp.is_some() {
                    if !self.pay(cpu, th, self.syscall_ns()) {
                        return Some(STOP);
                    }
                    if !same {
                        let attr = SchedAttr { policy, nice: spec.nice, rt_priority: spec.rt_priority };
                        self.kernel.sched_setscheduler(task, attr, self.now, cpu, &mut self.out);
                    }
                    if let Some(u) = uclamp {
                        self.kernel.sched_setattr_uclamp(task, u.min, u.max);
                    }
                    self.drain();
                    self.threads[th].timer_slack_ns = spec.timer_slack_ns;
                    next(self, Setup::Done);
                    self.preempt_point(cpu);
                    return Some(NEXT);
                }
                self.threads[th].timer_slack_ns = spec.timer_slack_ns;
                next(self, Setup::Done);
                Some(NEXT)
            }
        }
    }
}

/// The engine's fork bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Forks {
    /// Threads each (thread, op index) has forked.
    pub per_op: std::collections::HashMap<(usize, usize), u64>,
    pub total: u64,
    /// Threads forked of each template (their comms' numbers).
    pub per_template: Vec<u64>,
    pub next_pid: schedlab_trace::Pid,
    /// Keep rt-app log rows for forked threads too ([`crate::SimOptions::rtapp_log`]).
    pub rtapp_log: bool,
    /// Tasks created since the caller last took them, for the run's table.
    pub new_tasks: Vec<(schedlab_trace::Pid, TaskInfo)>,
}

impl Forks {
    pub fn new(templates: usize, first_pid: schedlab_trace::Pid, rtapp_log: bool) -> Self {
        Forks { per_template: vec![0; templates], next_pid: first_pid, rtapp_log, ..Default::default() }
    }
}
