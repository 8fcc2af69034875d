//! Building crafted kernel states for the rule tests: a kernel with some
//! feature settings, and tasks placed on a chosen CPU.

#![allow(dead_code)] // each test file uses its own subset

use schedlab_kernel::{Kernel, KernelConfig, Policy, Profile, TaskId, TaskParams};
use schedlab_topology::{parse_cpulist, PreemptModel, Topology};

/// A kernel of `profile` on `topology` with `settings` (debugfs syntax)
/// applied over the profile's defaults; full preemption, tracing on.
pub fn kernel_with(topology: Topology, profile: &str, settings: &[&str], seed: u64) -> Kernel {
    let profile = Profile::by_name(profile).unwrap();
    let mut features = profile.defaults;
    for s in settings {
        features.apply(s).unwrap();
    }
    Kernel::new(KernelConfig { profile, features, topology, preempt: PreemptModel::Full, trace: true, seed })
}

/// A task of `policy` allowed on `mask`, starting on `cpu`.
pub fn task_with(k: &mut Kernel, pid: i32, policy: Policy, rt_priority: u32, mask: &str, cpu: usize) -> TaskId {
    k.add_task(TaskParams {
        pid,
        policy,
        nice: 0,
        rt_priority,
        slice_ns: None,
        cpus_mask: parse_cpulist(mask).unwrap(),
        cpu,
        fixed_start: true,
    })
}

/// A nice-0 SCHED_OTHER task allowed on `mask`, starting on `cpu`.
pub fn fair_task(k: &mut Kernel, pid: i32, mask: &str, cpu: usize) -> TaskId {
    task_with(k, pid, Policy::Normal, 0, mask, cpu)
}

/// Wake a new task on its CPU and let that CPU reschedule; drop the IPIs it asked for.
pub fn start_fair(k: &mut Kernel, t: TaskId, now: u64) {
    let cpu = k.tasks[t as usize].cpu;
    k.wake_up_new_task(t, now, cpu);
    if k.need_resched(cpu, true) {
        k.schedule(cpu, now, true);
    }
    k.ipis.clear();
    k.check_invariants().unwrap();
}
