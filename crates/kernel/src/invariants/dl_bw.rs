//! GRUB's bandwidth sums (`deadline::grub`) against recounts: each CPU's
//! `this_bw` is its fair server's and its deadline tasks' bandwidth,
//! `running_bw` the active part of it, never more than `this_bw`, and
//! `extra_bw` is `max_bw` less its root domain's reservations per CPU.

use super::InvariantError;
use crate::core::Kernel;
use crate::deadline::MAX_BW;
use crate::sched::{OnRq, TaskId, TaskState};

impl Kernel {
    /// A deadline task's bandwidth is assigned to its CPU's `this_bw` from
    /// its first enqueue on, except while a wakeup that migrated it sits on
    /// the target's wakelist (`migrate_task_rq_dl()` took it from the old
    /// CPU; the enqueue there adds it).
    fn dl_bw_assigned(&self, t: TaskId) -> bool {
        let p = &self.tasks[t as usize];
        let in_flight = p.state == TaskState::Waking
            && p.on_rq == OnRq::No
            && p.sched_remote_wakeup
            && self.rqs[p.cpu].wake_list.contains(&t);
        p.state != TaskState::New && !in_flight
    }

    /// Recount `this_bw`, `running_bw` and `extra_bw` of every CPU.
    pub(crate) fn check_dl_bw(&self) -> Result<(), InvariantError> {
        let n = self.rqs.len();
        let mut this = vec![0u64; n];
        let mut running = vec![0u64; n];
        let mut reserved = vec![0u64; self.rds.len()];
        for cpu in 0..n {
            let bw = self.fair_server_bw(cpu);
            this[cpu] += bw;
            let fs = &self.rqs[cpu].fair_server;
            if fs.active || fs.non_contending {
                running[cpu] += bw;
            }
            let rd = self.rqs[cpu].rd;
            reserved[rd] += bw / self.rds[rd].span.len().max(1) as u64;
        }
        for (i, p) in self.tasks.iter().enumerate() {
            let bw = p.dl.dl_bw;
            if bw == 0 {
                continue;
            }
            let rd = self.rqs[p.cpu].rd;
            reserved[rd] += bw / self.rds[rd].span.len().max(1) as u64;
            if !self.dl_bw_assigned(i as TaskId) {
                if p.dl.non_contending {
                    return Err(violation!("deadline task {i} is non-contending with no CPU's bandwidth"));
                }
                continue;
            }
            this[p.cpu] += bw;
            if p.on_rq == OnRq::Queued || p.dl.non_contending {
                running[p.cpu] += bw;
            }
        }
        for (cpu, rq) in self.rqs.iter().enumerate() {
            let extra = MAX_BW.wrapping_sub(reserved[rq.rd]);
            let dl = &rq.dl;
            if (dl.this_bw, dl.running_bw, dl.extra_bw) != (this[cpu], running[cpu], extra) {
                return Err(violation!(
                    "CPU {cpu}: this_bw {} running_bw {} extra_bw {}, recount {} {} {}",
                    dl.this_bw,
                    dl.running_bw,
                    dl.extra_bw,
                    this[cpu],
                    running[cpu],
                    extra
                ));
            }
        }
        Ok(())
    }

    /// The cheap part, for a touched CPU: the active bandwidth is part of
    /// the assigned one.
    pub(crate) fn check_dl_bw_cpu(&self, cpu: usize) -> Result<(), InvariantError> {
        let dl = &self.rqs[cpu].dl;
        if dl.running_bw > dl.this_bw {
            return Err(violation!("CPU {cpu}: running_bw {} > this_bw {}", dl.running_bw, dl.this_bw));
        }
        Ok(())
    }
}
