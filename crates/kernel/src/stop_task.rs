//! The stopper (`kernel/stop_machine.c`, the stop class of `stop_task.c`):
//! per-CPU `migration/N` work that preempts whatever runs, queued by active
//! balance and by the soft-lockup watchdog (`kernel/watchdog.c`).
//!
//! Follows 6.12.x. Simplified: the stopper is not a task; queued work sets
//! `stop_work_pending`, and the next `schedule()` on that CPU switches the
//! running task out to `migration/N`, runs the work, then picks again.

use schedlab_trace::EventKind;

use crate::core::{stopper_pid, Kernel, Outbox};

impl Kernel {
    /// `stop_one_cpu_nowait()`: wake `migration/N` on `cpu`; it preempts
    /// whatever runs there at once.
    pub(crate) fn stop_one_cpu_nowait(&mut self, cpu: usize) {
        let pid = stopper_pid(cpu);
        self.emit(cpu, EventKind::SchedWaking { pid, prio: 0, target_cpu: cpu as u32 });
        self.emit(cpu, EventKind::SchedWakeup { pid, prio: 0, target_cpu: cpu as u32 });
        self.rqs[cpu].stop_work_pending = true;
        self.resched_curr(cpu);
    }

    /// The soft-lockup watchdog's hrtimer on `cpu` (`watchdog_timer_fn()`):
    /// `stop_one_cpu_nowait(softlockup_fn)`, which only touches the
    /// watchdog's timestamp — what matters here is the stopper preempting
    /// the running task.
    pub fn watchdog_kick(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            k.stop_one_cpu_nowait(cpu);
        })
    }
}
