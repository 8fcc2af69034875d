//! A thread changing its own scheduling attributes mid-program:
//! `sched_setaffinity()` and `sched_setscheduler()` / `setpriority()`.

use super::ops::{Flow, NEXT, STOP};
use crate::engine::Engine;
use schedlab_kernel::syscalls::SchedAttr;
use schedlab_scenario::{CpuSet, Policy, DEFAULT_TIMER_SLACK_NS};

impl<'a> Engine<'a> {
    /// `setaffinity`: the syscall's entry, then `set_cpus_allowed_ptr()`;
    /// a thread now outside its mask is preempted by the migration stopper
    /// at the return to user space, which moves it.
    pub(super) fn op_set_affinity(&mut self, cpu: usize, th: usize, cpus: CpuSet) -> Flow {
        if !self.pay(cpu, th, self.syscall_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        let task = self.threads[th].task;
        self.kernel.set_cpus_allowed_ptr(task, cpus, self.now, cpu, &mut self.out);
        self.drain();
        self.preempt_point(cpu);
        NEXT
    }

    /// `setpriority`: `setpriority()` on itself → `set_user_nice()`.
    pub(super) fn op_set_priority(&mut self, cpu: usize, th: usize, nice: i32) -> Flow {
        if !self.pay(cpu, th, self.syscall_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        let task = self.threads[th].task;
        self.kernel.set_user_nice(task, nice, self.now, cpu, &mut self.out);
        self.drain();
        self.preempt_point(cpu);
        NEXT
    }

    /// `cgroup`: the thread writes its tid into another cgroup
    /// (`sched_move_task()`). Simplified: the write costs a syscall; the
    /// kernel's `cgroup_attach_task()` also takes `cgroup_threadgroup_rwsem`
    /// for writing, which can wait for an RCU grace period.
    pub(super) fn op_set_cgroup(&mut self, cpu: usize, th: usize, cgroup: Option<usize>) -> Flow {
        if !self.pay(cpu, th, self.syscall_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        let task = self.threads[th].task;
        let tg = self.groups.target(cgroup);
        self.kernel.sched_move_task(task, tg, self.now, cpu, &mut self.out);
        self.drain();
        self.preempt_point(cpu);
        NEXT
    }

    /// `setscheduler`: `sched_setscheduler()` on itself. The timer slack
    /// follows the policy as `__setscheduler_params()` sets it (6.12): RT
    /// gets none; a fair task whose slack is 0 gets the default back.
    pub(super) fn op_set_scheduler(
        &mut self,
        cpu: usize,
        th: usize,
        policy: Policy,
        nice: i32,
        rt_priority: u32,
    ) -> Flow {
        if !self.pay(cpu, th, self.syscall_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        let task = self.threads[th].task;
        let attr = SchedAttr { policy: crate::kernel_policy(policy), nice, rt_priority };
        self.kernel.sched_setscheduler(task, attr, self.now, cpu, &mut self.out);
        self.drain();
        let thread = &mut self.threads[th];
        if policy.is_rt() {
            thread.timer_slack_ns = 0;
        } else if thread.timer_slack_ns == 0 {
            thread.timer_slack_ns = DEFAULT_TIMER_SLACK_NS;
        }
        self.preempt_point(cpu);
        NEXT
    }
}
