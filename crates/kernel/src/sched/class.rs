//! The class table (sched.h's `struct sched_class` and the
//! `DEFINE_SCHED_CLASS()` ordering).
use crate::core::Kernel;
use crate::sched::TaskId;

impl Kernel {
    pub(crate) fn task_is_rt(&self, t: TaskId) -> bool {
        self.tasks[t as usize].is_rt()
    }
}
