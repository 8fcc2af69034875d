//! Building crafted kernel states for the rule tests: a kernel with some
//! feature settings, and tasks placed on a chosen CPU; [`TestKernel`] keeps
//! the outbox of every entry point a test calls.

#![allow(dead_code)] // each test file uses its own subset

use crate::{
    IpiKind, IpiRequest, Kernel, KernelConfig, Outbox, Policy, Profile, Switch, TaskId, TaskParams, TimerRequest,
};
use schedlab_topology::{parse_cpulist, CpuSet, PreemptModel, Topology};
use schedlab_trace::Event;

/// A kernel that keeps what its entry points ask of the hardware, so a test
/// can read the events and IPIs of the calls it made (and clear them).
#[derive(Clone, Debug)]
pub struct TestKernel {
    pub kernel: Kernel,
    pub events: Vec<Event>,
    pub ipis: Vec<IpiRequest>,
    pub timers: Vec<TimerRequest>,
    /// Kernel CPU time charged, per CPU that ran the path.
    pub cpu_ns: Vec<(u32, u64)>,
    /// Remote wakeups whose selection took time, not yet queued (kept
    /// only while `hold_wakes` is set; otherwise completed at once).
    pub deferred: Vec<crate::WakeRequest>,
    pub hold_wakes: bool,
}

impl std::ops::Deref for TestKernel {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        &self.kernel
    }
}

impl std::ops::DerefMut for TestKernel {
    fn deref_mut(&mut self) -> &mut Kernel {
        &mut self.kernel
    }
}

impl TestKernel {
    pub fn new(cfg: KernelConfig) -> Self {
        TestKernel {
            kernel: Kernel::new(cfg),
            events: Vec::new(),
            ipis: Vec::new(),
            timers: Vec::new(),
            cpu_ns: Vec::new(),
            deferred: Vec::new(),
            hold_wakes: false,
        }
    }

    /// Run one entry point, appending its requests to ours.
    fn call<R>(&mut self, f: impl FnOnce(&mut Kernel, &mut Outbox) -> R) -> R {
        let mut out = self.take_outbox();
        let r = f(&mut self.kernel, &mut out);
        let wakes = std::mem::take(&mut out.wakes);
        self.keep_outbox(out);
        if self.hold_wakes {
            self.deferred.extend(wakes);
        } else {
            // Without a clock, a wakeup whose selection took time completes
            // at once (the tests that look at the window hold them).
            let now = self.kernel.now();
            for w in wakes {
                self.finish_wake(w, now);
            }
        }
        r
    }

    /// Complete one held wakeup ([`Self::hold_wakes`]) at `now`.
    pub fn finish_wake(&mut self, w: crate::WakeRequest, now: u64) {
        let mut out = self.take_outbox();
        self.kernel.ttwu_queue_selected(w, now, &mut out);
        assert!(out.wakes.is_empty(), "queueing a selected wakeup selects nothing");
        self.keep_outbox(out);
    }

    /// An outbox holding what the calls so far asked for.
    fn take_outbox(&mut self) -> Outbox {
        Outbox {
            events: std::mem::take(&mut self.events),
            ipis: std::mem::take(&mut self.ipis),
            timers: std::mem::take(&mut self.timers),
            cpu_ns: std::mem::take(&mut self.cpu_ns),
            wakes: Vec::new(),
        }
    }

    /// Keep an outbox's requests (its `wakes` are the caller's).
    fn keep_outbox(&mut self, out: Outbox) {
        (self.events, self.ipis, self.timers, self.cpu_ns) = (out.events, out.ipis, out.timers, out.cpu_ns);
    }

    pub fn schedule(&mut self, cpu: usize, now: u64, preempt: bool) -> Switch {
        self.call(|k, o| k.schedule(cpu, now, preempt, o))
    }

    pub fn sched_tick(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.sched_tick(cpu, now, o))
    }

    pub fn try_to_wake_up(&mut self, t: TaskId, now: u64, exec_cpu: usize, wake_flags: u32) -> bool {
        self.call(|k, o| k.try_to_wake_up(t, now, exec_cpu, wake_flags, o))
    }

    pub fn wake_up_new_task(&mut self, t: TaskId, now: u64, exec_cpu: usize) {
        self.call(|k, o| k.wake_up_new_task(t, now, exec_cpu, o))
    }

    pub fn sched_ttwu_pending(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.sched_ttwu_pending(cpu, now, o))
    }

    pub fn set_cpus_allowed_ptr(&mut self, t: TaskId, mask: CpuSet, now: u64, exec_cpu: usize) {
        self.call(|k, o| k.set_cpus_allowed_ptr(t, mask, now, exec_cpu, o))
    }

    pub fn sched_setscheduler(
        &mut self,
        t: TaskId,
        attr: crate::syscalls::SchedAttr,
        now: u64,
        exec_cpu: usize,
    ) -> bool {
        self.call(|k, o| k.sched_setscheduler(t, attr, now, exec_cpu, o))
    }

    pub fn set_user_nice(&mut self, t: TaskId, nice: i32, now: u64, exec_cpu: usize) -> bool {
        self.call(|k, o| k.set_user_nice(t, nice, now, exec_cpu, o))
    }

    pub fn sched_yield(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.sched_yield(cpu, now, o))
    }

    pub fn sync_curr(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.sync_curr(cpu, now, o))
    }

    pub fn watchdog_kick(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.watchdog_kick(cpu, now, o))
    }

    pub fn rto_push_irq_work_func(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.rto_push_irq_work_func(cpu, now, o))
    }

    pub fn run_idle_balance(&mut self, cpu: usize, now: u64, exec_cpu: usize) {
        self.call(|k, o| k.run_idle_balance(cpu, now, exec_cpu, o))
    }

    pub fn nohz_csd_func(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.nohz_csd_func(cpu, now, o))
    }

    pub fn rt_mutex_lock(&mut self, t: TaskId, lock: u32, now: u64, cpu: usize) -> bool {
        self.call(|k, o| k.rt_mutex_lock(t, lock, now, cpu, o))
    }

    pub fn rt_mutex_unlock(&mut self, t: TaskId, lock: u32, now: u64, cpu: usize) -> Option<TaskId> {
        self.call(|k, o| k.rt_mutex_unlock(t, lock, now, cpu, o))
    }

    pub fn set_cfs_bandwidth(&mut self, tg: usize, quota: u64, period: u64, now: u64, cpu: usize) {
        self.call(|k, o| k.set_cfs_bandwidth(tg, quota, period, now, cpu, o))
    }

    pub fn cfs_bandwidth_timer(&mut self, what: crate::TimerKind, cpu: usize, now: u64) {
        self.call(|k, o| k.cfs_bandwidth_timer(what, cpu, now, o))
    }

    pub fn sched_move_task(&mut self, t: TaskId, tg: usize, now: u64, exec_cpu: usize) {
        self.call(|k, o| k.sched_move_task(t, tg, now, exec_cpu, o))
    }

    pub fn dl_server_timer(&mut self, cpu: usize, now: u64) {
        self.call(|k, o| k.dl_server_timer(cpu, now, o))
    }

    pub fn dl_timer(&mut self, t: TaskId, cpu: usize, now: u64) {
        self.call(|k, o| k.dl_timer(t, cpu, now, o))
    }

    pub fn dl_inactive_timer(&mut self, what: crate::TimerKind, cpu: usize, now: u64) {
        self.call(|k, o| k.dl_inactive_timer(what, cpu, now, o))
    }
}

/// Deliver the requested interrupts at `now` (as the simulator would,
/// minus latency) and let every CPU that must reschedule do so, until
/// nothing more is asked.
pub fn settle(k: &mut TestKernel, now: u64) {
    for _ in 0..20 {
        let ipis: Vec<_> = k.ipis.drain(..).collect();
        for ipi in ipis {
            match ipi.kind {
                IpiKind::CallFunction => k.sched_ttwu_pending(ipi.cpu, now),
                IpiKind::RtPushWork => k.rto_push_irq_work_func(ipi.cpu, now),
                IpiKind::NohzKick => k.nohz_csd_func(ipi.cpu, now),
                IpiKind::Resched => {}
            }
        }
        let mut any = false;
        for cpu in 0..k.rqs.len() {
            if k.need_resched(cpu, true) {
                k.schedule(cpu, now, true);
                k.finish_task_switch(cpu);
                any = true;
            }
        }
        if !any && k.ipis.is_empty() {
            break;
        }
    }
    k.check_invariants().unwrap();
}

/// A kernel of `profile` on `topology` with `settings` (debugfs syntax)
/// applied over the profile's defaults; full preemption, tracing on.
pub fn kernel_with(topology: Topology, profile: &str, settings: &[&str], seed: u64) -> TestKernel {
    kernel_of(topology, Profile::by_name(profile).unwrap(), settings, seed)
}

/// [`kernel_with`] for a profile value (one a test has changed).
pub fn kernel_of(topology: Topology, profile: Profile, settings: &[&str], seed: u64) -> TestKernel {
    let mut features = profile.defaults;
    for s in settings {
        features.apply(s).unwrap();
    }
    TestKernel::new(KernelConfig {
        profile,
        features,
        topology,
        preempt: PreemptModel::Full,
        trace: true,
        seed,
        partitions: Vec::new(),
    })
}

/// A task of `policy` allowed on `mask`, starting on `cpu`.
pub fn task_with(k: &mut TestKernel, pid: i32, policy: Policy, rt_priority: u32, mask: &str, cpu: usize) -> TaskId {
    k.add_task(TaskParams {
        pid,
        policy,
        nice: 0,
        rt_priority,
        slice_ns: None,
        cpus_mask: parse_cpulist(mask).unwrap(),
        cpu,
        fixed_start: true,
        dl: None,
    })
}

/// A SCHED_DEADLINE task with reservation `dl` allowed on `mask`, starting on `cpu`.
pub fn dl_task(k: &mut TestKernel, pid: i32, dl: crate::deadline::DlParams, mask: &str, cpu: usize) -> TaskId {
    k.add_task(TaskParams {
        pid,
        policy: Policy::Deadline,
        nice: 0,
        rt_priority: 0,
        slice_ns: None,
        cpus_mask: parse_cpulist(mask).unwrap(),
        cpu,
        fixed_start: true,
        dl: Some(dl),
    })
}

/// A nice-0 SCHED_OTHER task allowed on `mask`, starting on `cpu`.
pub fn fair_task(k: &mut TestKernel, pid: i32, mask: &str, cpu: usize) -> TaskId {
    task_with(k, pid, Policy::Normal, 0, mask, cpu)
}

/// Wake a new task on its CPU and let that CPU reschedule; drop the IPIs it asked for.
pub fn start_fair(k: &mut TestKernel, t: TaskId, now: u64) {
    let cpu = k.tasks[t as usize].cpu;
    k.wake_up_new_task(t, now, cpu);
    if k.need_resched(cpu, true) {
        k.schedule(cpu, now, true);
    }
    k.ipis.clear();
    k.check_invariants().unwrap();
}

/// Task 1 (allowed on CPUs 0-3) blocks while ineligible on CPU 0 next to a
/// pinned hog (task 2), so it stays queued as sched_delayed. Returns the
/// task and a time 10 us after the block; what the setup emitted is cleared.
pub fn delayed_on_cpu0(k: &mut TestKernel) -> (TaskId, u64) {
    let a = fair_task(k, 1, "0-3", 0);
    let b = fair_task(k, 2, "0", 0);
    start_fair(k, a, 0);
    start_fair(k, b, 0);
    let now = 500_000;
    k.sync_curr(0, now);
    assert_eq!(k.curr(0), Some(a));
    k.set_current_state(0, crate::TaskState::Interruptible);
    k.schedule(0, now, false);
    assert!(k.tasks[a as usize].se.sched_delayed);
    k.check_invariants().unwrap();
    k.events.clear();
    k.ipis.clear();
    k.cpu_ns.clear();
    (a, now + 10_000)
}
