//! The fair server (`kernel/sched/deadline.c`: `rq->fair_server`, a
//! deferred `dl_server`): fair tasks starved by RT tasks get 50 ms of every
//! 1 s period, once they have waited for the rest of it.
//!
//! Follows 6.12.x. Simplified: no deadline class beyond this server. The server arms when a
//! fair task is runnable while an RT task holds the CPU; if the fair tasks
//! are still starved `period − runtime` (950 ms) later, it runs them — above
//! RT — until its 50 ms are used or no fair task is left, then re-arms. Fair
//! time spent outside the server is not charged to it.

use crate::core::{Kernel, Outbox};
use crate::sched::class::SchedClass;

/// Default `fair_server` runtime and period (deadline.c `dl_server_start()`).
pub const FAIR_SERVER_RUNTIME: u64 = 50_000_000;
pub const FAIR_SERVER_PERIOD: u64 = 1_000_000_000;

/// Per-CPU state of the fair server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FairServer {
    /// Its deferral timer is pending (fair work waited behind RT).
    pub armed: bool,
    /// Serving fair tasks above RT now.
    pub running: bool,
    /// Budget left while running, ns.
    pub budget: u64,
    /// The runtime it may use per period (0 disables it, as writing 0 to
    /// `/sys/kernel/debug/sched/fair_server/cpuN/runtime` does).
    pub runtime: u64,
}

/// A timer the kernel model asks the simulator to fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerRequest {
    pub cpu: usize,
    pub at: u64,
}

impl Kernel {
    /// `dl_server_start()` of a deferred server: arm its timer for the
    /// zero-laxity point. Simplified: the model arms only when fair work
    /// waits behind an RT task (the kernel starts it with the first fair
    /// enqueue and lets the deferral absorb fair time that ran anyway).
    pub(crate) fn dl_server_start(&mut self, cpu: usize) {
        let fs = self.rqs[cpu].fair_server;
        if fs.runtime == 0 || fs.running || fs.armed {
            return;
        }
        let rt_curr = self.class_of_curr(cpu) == SchedClass::Rt;
        if rt_curr && self.rqs[cpu].cfs.h_nr_runnable > 0 {
            self.rqs[cpu].fair_server.armed = true;
            let at = self.now + FAIR_SERVER_PERIOD - fs.runtime;
            self.request_timer(TimerRequest { cpu, at });
        }
    }

    /// The fair server's deferral timer on `cpu` (`dl_server_timer()`):
    /// start serving if fair work still waits.
    pub fn dl_server_timer(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            // Each arming queues exactly one timer, and only this clears it.
            k.rqs[cpu].fair_server.armed = false;
            // (runtime may have been set to 0 since it armed)
            if k.rqs[cpu].cfs.h_nr_runnable > 0 && k.rqs[cpu].fair_server.runtime > 0 {
                let fs = &mut k.rqs[cpu].fair_server;
                fs.running = true;
                fs.budget = fs.runtime;
                k.resched_curr(cpu);
            }
        })
    }

    /// The server picks fair tasks above RT while it runs (it stops when
    /// its budget is used up: `dl_server_update()`).
    pub(crate) fn fair_server_serving(&self, cpu: usize) -> bool {
        self.rqs[cpu].fair_server.running && self.rqs[cpu].cfs.h_nr_runnable > 0
    }

    /// Charge fair runtime to a running server (`dl_server_update()`).
    pub(crate) fn dl_server_update(&mut self, cpu: usize, delta: u64) {
        let fs = &mut self.rqs[cpu].fair_server;
        if fs.running {
            fs.budget = fs.budget.saturating_sub(delta);
            if fs.budget == 0 {
                fs.running = false;
                self.resched_curr(cpu);
            }
        }
    }

    /// The server has nothing left to serve (`dl_server_stop()`).
    pub(crate) fn dl_server_stop(&mut self, cpu: usize) {
        if self.rqs[cpu].fair_server.running && self.rqs[cpu].cfs.h_nr_runnable == 0 {
            self.rqs[cpu].fair_server.running = false;
        }
    }

    /// Disable or re-enable the fair server on every CPU (runtime in ns).
    pub fn set_fair_server_runtime(&mut self, runtime: u64) {
        for rq in &mut self.rqs {
            rq.fair_server.runtime = runtime;
        }
    }
}
