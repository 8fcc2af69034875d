//! `kernel/sched/cpupri.c`: which CPUs run at the lowest RT priority, for
//! the RT class's wakeup placement and push.
//!
//! Follows 6.12.x. Simplified: the levels are recomputed from the runqueues'
//! `highest_prio.curr` at each query rather than kept in cpupri's own
//! per-level masks (the answers are the same), and the DL level is never
//! used (no deadline tasks).

use crate::core::Kernel;
use crate::sched::{TaskId, MAX_RT_PRIO};
use schedlab_topology::CpuSet;

/// cpupri's `convert_prio()`: a runqueue's best RT prio → cpupri level
/// (0 for idle/fair CPUs, 1..99 rising with RT priority).
fn convert_prio(prio: i32) -> i32 {
    if prio >= MAX_RT_PRIO - 1 {
        0
    } else {
        MAX_RT_PRIO - 1 - prio
    }
}

impl Kernel {
    /// `cpupri` level of a CPU.
    fn cpupri(&self, cpu: usize) -> i32 {
        convert_prio(self.rqs[cpu].rt.highest_prio_curr)
    }

    /// `cpupri_find()`: the CPUs in `p`'s affinity at the lowest cpupri level
    /// strictly below `p`'s; `None` if there are none.
    pub(crate) fn cpupri_find(&self, p: TaskId) -> Option<CpuSet> {
        let task_pri = convert_prio(self.tasks[p as usize].prio);
        let mask = self.tasks[p as usize].cpus_mask;
        for idx in 0..task_pri {
            let at: CpuSet = mask.iter().filter(|&c| c < self.nr_cpus() && self.cpupri(c) == idx).collect();
            if !at.is_empty() {
                return Some(at);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpupri_levels() {
        assert_eq!(convert_prio(99), 0, "no RT task: same level as idle and fair CPUs");
        assert_eq!(convert_prio(0), 99, "FIFO 99");
        assert_eq!(convert_prio(89), 10, "FIFO 10");
        assert_eq!(convert_prio(9), 90, "FIFO 90");
    }
}
