//! Condition variables and rt-app's barrier, as glibc's `pthread_cond_*`
//! and rt-app's `rtapp_barrier` event use them.
//!
//! Simplified: the futex's own queue is not modeled. A signal wakes the
//! longest waiter (glibc's condvar groups are close to FIFO), a waiter woken
//! by it takes the mutex again, blocking behind its owner if it has to; a
//! barrier's internal mutex costs nothing and never contends (rt-app holds
//! it only around a counter update and the cond call).

use super::ops::{Flow, NEXT, STOP};
use super::{Blocked, ObjState};
use crate::engine::Engine;
use crate::SimError;
use schedlab_scenario::{ObjId, ObjRef};
use schedlab_trace::UserOp;

impl<'a> Engine<'a> {
    /// `cond_wait`: `pthread_cond_wait(cond, mutex)`. The first half
    /// releases the mutex (an `unlock` marker, a hand-over to its first
    /// waiter) and blocks on the condition; once signalled, the second half
    /// takes the mutex back and writes `lock` and `wait_done`.
    pub(super) fn op_cond_wait(
        &mut self,
        cpu: usize,
        th: usize,
        cond: &ObjRef,
        mutex: &ObjRef,
        polled: Option<usize>,
    ) -> Flow {
        let c = self.operand(th, cond, polled)?;
        let m = self.operand(th, mutex, polled)?;
        if !self.threads[th].signalled {
            if !self.pay(cpu, th, self.marker_ns() + self.syscall_ns()) {
                return STOP;
            }
            if !self.holds_mutex(th, m) {
                let name = self.comm_of(th);
                self.error = Some(SimError::Workload(format!(
                    "thread {name} called cond_wait without holding its mutex (pthread_cond_wait's precondition)"
                )));
                return STOP;
            }
            self.release_mutex(cpu, th, m);
            let ObjState::Cond { waiters } = &mut self.objects[c as usize] else { unreachable!() };
            waiters.push(th);
            self.block(cpu, th, Blocked::Cond(c));
            return NEXT;
        }
        if !self.acquire_mutex(cpu, th, m) {
            return NEXT;
        }
        self.threads[th].signalled = false;
        self.threads[th].pc += 1;
        self.user_event(cpu, th, UserOp::Lock { obj: m });
        self.user_event(cpu, th, UserOp::WaitDone { obj: c });
        NEXT
    }

    /// `cond_signal` / `cond_broadcast`: the `signal` marker, the futex
    /// wake of the longest waiter (or of all), then the return to user
    /// space preempts. A signal nobody waits for is lost.
    pub(super) fn op_cond_signal(
        &mut self,
        cpu: usize,
        th: usize,
        cond: &ObjRef,
        polled: Option<usize>,
        broadcast: bool,
    ) -> Flow {
        let c = self.operand(th, cond, polled)?;
        if !self.pay(cpu, th, self.marker_ns() + self.syscall_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        self.user_event(cpu, th, UserOp::Signal { obj: c });
        let ObjState::Cond { waiters } = &mut self.objects[c as usize] else { unreachable!() };
        let woken: Vec<usize> = if broadcast {
            std::mem::take(waiters)
        } else if waiters.is_empty() {
            Vec::new()
        } else {
            vec![waiters.remove(0)]
        };
        self.release(cpu, &woken);
        self.preempt_point(cpu);
        NEXT
    }

    /// `barrier`: rt-app's barrier event. An arrival that finds every other
    /// user waiting (`waiting` at zero) writes `signal` and broadcasts;
    /// any other arrival counts itself off and waits. A released waiter
    /// counts itself back in when it runs again (so an arrival before it has
    /// run sees the barrier one short, as in rt-app) and writes `wait_done`.
    pub(super) fn op_barrier(&mut self, cpu: usize, th: usize, barrier: ObjId) -> Flow {
        if self.threads[th].signalled {
            self.threads[th].signalled = false;
            if let ObjState::Barrier { waiting, .. } = &mut self.objects[barrier as usize] {
                *waiting += 1;
            }
            self.threads[th].pc += 1;
            self.user_event(cpu, th, UserOp::WaitDone { obj: barrier });
            return NEXT;
        }
        if !self.pay(cpu, th, self.marker_ns() + self.syscall_ns()) {
            return STOP;
        }
        let ObjState::Barrier { waiting, waiters } = &mut self.objects[barrier as usize] else { unreachable!() };
        if *waiting > 0 {
            *waiting -= 1;
            waiters.push(th);
            self.block(cpu, th, Blocked::Barrier(barrier));
            return NEXT;
        }
        let woken = std::mem::take(waiters);
        self.threads[th].pc += 1;
        self.user_event(cpu, th, UserOp::Signal { obj: barrier });
        self.release(cpu, &woken);
        self.preempt_point(cpu);
        NEXT
    }

    /// Wake `woken` (in order) into the second half of their cond or barrier op.
    fn release(&mut self, cpu: usize, woken: &[usize]) {
        for &w in woken {
            self.threads[w].signalled = true;
            self.wake(w, cpu);
        }
    }

    fn holds_mutex(&self, th: usize, id: ObjId) -> bool {
        match &self.objects[id as usize] {
            ObjState::Mutex { pi: true, .. } => self.kernel.rt_mutex_owner(id) == Some(self.threads[th].task),
            ObjState::Mutex { owner, .. } => *owner == Some(th),
            _ => false,
        }
    }
}
