//! `kernel/sched/cpudeadline.c`: which CPUs a deadline task would run on
//! first, for its wakeup placement and push.
//!
//! Follows 6.12.x. Simplified: the answer is computed from the runqueues at
//! each query instead of cpudl's max-heap and `free_cpus` mask (the same
//! CPUs qualify); among CPUs whose earliest deadline is equally late, the
//! lowest-numbered one stands for the heap's top; no capacity fitness
//! (asymmetric CPUs).

use crate::core::Kernel;
use crate::sched::TaskId;
use schedlab_topology::CpuSet;

impl Kernel {
    /// `cpudl_find()`: the CPUs of `p`'s root domain and affinity with no
    /// deadline task queued (`free_cpus`); if there are none, the CPU whose
    /// earliest deadline is the latest (`cpudl_maximum()`), when `p`'s
    /// deadline is earlier than it. `None` when neither exists.
    pub(crate) fn cpudl_find(&self, p: TaskId) -> Option<CpuSet> {
        let task = &self.tasks[p as usize];
        let span = self.rds[self.rqs[task.cpu].rd].span;
        let allowed = span.and(&task.cpus_mask);
        let free: CpuSet = allowed.iter().filter(|&c| self.rqs[c].dl.dl_nr_running == 0).collect();
        if !free.is_empty() {
            return Some(free);
        }
        let mut latest: Option<(u64, usize)> = None;
        for c in span.iter() {
            if let Some(e) = self.rqs[c].dl.earliest() {
                if latest.is_none_or(|(d, _)| super::dl_time_before(d, e)) {
                    latest = Some((e, c));
                }
            }
        }
        let (d, cpu) = latest?;
        let earlier = super::dl_time_before(task.dl.deadline, d);
        (task.cpus_mask.contains(cpu) && earlier).then(|| std::iter::once(cpu).collect())
    }
}
