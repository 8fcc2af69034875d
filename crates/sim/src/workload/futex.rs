//! schbench's futexes: `fpost()` and `fwait()` over the model's
//! `FUTEX_WAKE` and `FUTEX_WAIT` (kernel/futex/waitwake.c, 6.12).
//!
//! The word is 0 (blocked) or 1 (posted). User space changes it with
//! compare-and-swaps and enters the kernel only when it has to:
//!
//! * `fpost`: 0 → 1, then `FUTEX_WAKE` of one waiter. The waker pays the
//!   syscall (`[costs] syscall_ns`); `futex_wake()` returns at once when no
//!   waiter is queued on the bucket (`futex_hb_waiters_pending()`), else it
//!   takes the bucket lock and unqueues the oldest waiter
//!   (`[costs.kernel] futex_wake`) before `try_to_wake_up()`, whose path
//!   (`ttwu_runnable()`, the wakelist, the IPI) the kernel model charges.
//! * `fwait`: 1 → 0 and return, else `FUTEX_WAIT`: `futex_wait_setup()`
//!   hashes, locks the bucket and reads the word (`[costs.kernel]
//!   futex_wait`); if a post came meanwhile it returns `-EAGAIN`, else
//!   `futex_wait_queue()` sets TASK_INTERRUPTIBLE and queues the waiter
//!   before the unlock, and `schedule()` follows ([`Engine::block`]: a wake
//!   inside its window finds the waiter still on its runqueue). Back from
//!   the syscall, the compare-and-swap again.
//!
//! No wakeup is lost: the waker's compare-and-swap comes before it looks
//! for waiters, and the waiter's check of the word and its queueing happen
//! at one instant, so a waiter either sees the post or is seen. Simplified:
//! the compare-and-swaps cost nothing; `FUTEX_WAKE` wakes the oldest waiter
//! (the kernel's priority list orders equal priorities by arrival); the
//! syscall's entry and exit are paid as one (`syscall_ns`) before the wake
//! and, for a wait, after it returns.

use super::ops::{Flow, NEXT, STOP};
use super::{Blocked, ObjState, PostStep, WaitStep};
use crate::engine::Engine;
use schedlab_scenario::{ObjId, ObjRef};
use schedlab_trace::UserOp;

impl<'a> Engine<'a> {
    /// `fwait`: take a post, or `FUTEX_WAIT` for one (see the module docs).
    pub(super) fn op_fwait(&mut self, cpu: usize, th: usize, futex: &ObjRef, polled: Option<usize>) -> Flow {
        let id = self.operand(th, futex, polled)?;
        loop {
            match self.threads[th].wait {
                WaitStep::Start => {
                    let ObjState::Futex { posted, .. } = &mut self.objects[id as usize] else { unreachable!() };
                    self.threads[th].wait = if std::mem::take(posted) { WaitStep::Done } else { WaitStep::Setup };
                }
                WaitStep::Setup => {
                    if !self.pay(cpu, th, self.futex_wait_ns()) {
                        return STOP;
                    }
                    let ObjState::Futex { posted, waiters } = &mut self.objects[id as usize] else { unreachable!() };
                    // Under the bucket lock: a post meanwhile is -EAGAIN.
                    self.threads[th].wait = WaitStep::Returning;
                    if !*posted {
                        waiters.push(th);
                        self.block(cpu, th, Blocked::Futex(id));
                        return NEXT;
                    }
                }
                // Woken (or back from -EAGAIN): the syscall returns.
                WaitStep::Queued | WaitStep::Returning => {
                    if !self.pay(cpu, th, self.syscall_ns()) {
                        return STOP;
                    }
                    self.threads[th].wait = WaitStep::Start;
                }
                WaitStep::Done => {
                    if !self.pay(cpu, th, self.marker_ns()) {
                        return STOP;
                    }
                    self.threads[th].wait = WaitStep::Start;
                    self.threads[th].pc += 1;
                    self.user_event(cpu, th, UserOp::WaitDone { obj: id });
                    return NEXT;
                }
            }
        }
    }

    /// `fpost`, then the return to user space (a preemption point).
    pub(super) fn op_fpost(&mut self, cpu: usize, th: usize, futex: &ObjRef, polled: Option<usize>) -> Flow {
        let id = self.operand(th, futex, polled)?;
        if !self.fpost(cpu, th, id) {
            return STOP;
        }
        self.threads[th].pc += 1;
        self.preempt_point(cpu);
        NEXT
    }

    /// A plain store of 0: a post nobody took is dropped.
    pub(super) fn op_freset(&mut self, th: usize, futex: &ObjRef, polled: Option<usize>) -> Flow {
        let id = self.operand(th, futex, polled)?;
        if let ObjState::Futex { posted, .. } = &mut self.objects[id as usize] {
            *posted = false;
        }
        self.threads[th].pc += 1;
        NEXT
    }

    /// One `fpost()` of `id` by thread `th`: the `signal` marker, the
    /// compare-and-swap, and when it succeeded the `FUTEX_WAKE` (see the
    /// module docs). True once done; false while the thread pays for it
    /// (call again when it next runs).
    pub(super) fn fpost(&mut self, cpu: usize, th: usize, id: ObjId) -> bool {
        loop {
            match self.threads[th].post {
                PostStep::Start => {
                    if !self.pay(cpu, th, self.marker_ns()) {
                        return false;
                    }
                    self.user_event(cpu, th, UserOp::Signal { obj: id });
                    let ObjState::Futex { posted, .. } = &mut self.objects[id as usize] else { unreachable!() };
                    if std::mem::replace(posted, true) {
                        // Posted already: the compare-and-swap fails, no syscall.
                        return true;
                    }
                    self.threads[th].post = PostStep::Syscall;
                }
                PostStep::Syscall => {
                    if !self.pay(cpu, th, self.syscall_ns()) {
                        return false;
                    }
                    let ObjState::Futex { waiters, .. } = &self.objects[id as usize] else { unreachable!() };
                    if waiters.is_empty() {
                        self.threads[th].post = PostStep::Start;
                        return true;
                    }
                    self.threads[th].post = PostStep::Wake;
                }
                PostStep::Wake => {
                    if !self.pay(cpu, th, self.hw.costs().kernel.futex_wake_ns) {
                        return false;
                    }
                    self.threads[th].post = PostStep::Start;
                    let ObjState::Futex { waiters, .. } = &mut self.objects[id as usize] else { unreachable!() };
                    if !waiters.is_empty() {
                        let w = waiters.remove(0);
                        self.wake(w, cpu);
                    }
                    return true;
                }
            }
        }
    }
}
