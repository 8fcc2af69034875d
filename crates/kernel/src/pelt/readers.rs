//! `fair.c`'s readers of the PELT signals: `cfs_rq_load_avg()`,
//! `cfs_rq_runnable_avg()`, `cpu_load()`, `cpu_load_without()`,
//! `task_util()`, `task_runnable()`, `cpu_util()`, `cpu_util_cfs()`,
//! `cpu_util_cfs_boost()` and `cpu_util_without()`.
//!
//! Simplified as described in [`crate::pelt`]: no UTIL_EST terms, no groups
//! (`task_h_load()` is the task's `load_avg`).

use super::{sub_positive, SchedAvg};

/// `cfs_rq_load_avg()`.
pub fn cfs_rq_load_avg(cfs: &SchedAvg) -> u64 {
    cfs.load_avg
}

/// `cfs_rq_runnable_avg()`.
pub fn cfs_rq_runnable_avg(cfs: &SchedAvg) -> u64 {
    cfs.runnable_avg
}

/// `cpu_load(rq)`: the root cfs_rq's `load_avg`.
pub fn cpu_load(root_cfs: &SchedAvg) -> u64 {
    cfs_rq_load_avg(root_cfs)
}

/// `cpu_load_without(rq, p)`: the CPU's load minus the task's
/// (`task_h_load()` = its `load_avg` without groups) when the task counts on
/// this CPU. Pass `p = Some(avg)` only if `task_cpu(p)` is this CPU; a task
/// not attached (`last_update_time == 0`) counts nothing. 32-bit like the
/// kernel's local.
pub fn cpu_load_without(root_cfs: &SchedAvg, p: Option<&SchedAvg>) -> u64 {
    match p {
        Some(p) if p.last_update_time != 0 => {
            let load = root_cfs.load_avg as u32;
            (load - load.min(p.load_avg as u32)) as u64
        }
        _ => cpu_load(root_cfs),
    }
}

/// `task_util(p)`.
pub fn task_util(se: &SchedAvg) -> u64 {
    se.util_avg
}

/// `task_runnable(p)`.
pub fn task_runnable(se: &SchedAvg) -> u64 {
    se.runnable_avg
}

/// `cpu_util(cpu, p, dst_cpu, boost)` without UTIL_EST: the root cfs_rq's
/// util, plus the task's if it moves here from elsewhere (`task_cpu != cpu`,
/// `dst_cpu == cpu`), minus it (clamped) if it leaves (`task_cpu == cpu`,
/// `dst_cpu != cpu`, `None` being the kernel's −1); with `boost`, the max of
/// that and the same computation on runnable. Capped at `cpu_capacity`.
///
/// `p` is the task's average and `task_cpu(p)`.
pub fn cpu_util(
    root_cfs: &SchedAvg,
    cpu: usize,
    p: Option<(&SchedAvg, usize)>,
    dst_cpu: Option<usize>,
    boost: bool,
    cpu_capacity: u64,
) -> u64 {
    let add_task = matches!(p, Some((_, tcpu)) if tcpu != cpu && dst_cpu == Some(cpu));
    let sub_task = matches!(p, Some((_, tcpu)) if tcpu == cpu && dst_cpu != Some(cpu));
    let mut util = root_cfs.util_avg;

    if let Some((se, _)) = p {
        if add_task {
            util = util.wrapping_add(task_util(se));
        } else if sub_task {
            sub_positive(&mut util, task_util(se));
        }
    }

    if boost {
        let mut runnable = root_cfs.runnable_avg;
        if let Some((se, _)) = p {
            if add_task {
                runnable = runnable.wrapping_add(se.runnable_avg);
            } else if sub_task {
                sub_positive(&mut runnable, se.runnable_avg);
            }
        }
        util = util.max(runnable);
    }

    util.min(cpu_capacity)
}

/// `cpu_util_cfs(cpu)`: the root cfs_rq's util, capped at the capacity.
pub fn cpu_util_cfs(root_cfs: &SchedAvg, cpu_capacity: u64) -> u64 {
    cpu_util(root_cfs, 0, None, None, false, cpu_capacity)
}

/// `cpu_util_cfs_boost(cpu)`: max(util, runnable), capped at the capacity.
pub fn cpu_util_cfs_boost(root_cfs: &SchedAvg, cpu_capacity: u64) -> u64 {
    cpu_util(root_cfs, 0, None, None, true, cpu_capacity)
}

/// `cpu_util_without(cpu, p)`: the CPU's util without the task's contribution,
/// which only counts if the task's CPU is this one and it is attached.
pub fn cpu_util_without(root_cfs: &SchedAvg, cpu: usize, p: (&SchedAvg, usize), cpu_capacity: u64) -> u64 {
    let p = if p.1 != cpu || p.0.last_update_time == 0 { None } else { Some(p) };
    cpu_util(root_cfs, cpu, p, None, false, cpu_capacity)
}
