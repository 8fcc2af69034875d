//! `kernel/locking/rtmutex.c`: priority-inheritance mutexes (what pthread
//! PRIO_INHERIT mutexes become through FUTEX_LOCK_PI) and the boost they
//! cause: `task_blocks_on_rt_mutex()` → `rt_mutex_adjust_prio_chain()` →
//! `rt_mutex_setprio()`, and the deboost on unlock.
//!
//! Follows 6.12.x. Simplified: ownership passes straight to the top waiter at unlock (the
//! kernel wakes it and lets it take the lock, which a higher-priority task
//! could steal in between); no deadlock detection (scenarios with lock-order
//! cycles are refused when parsed); waiters are ordered by priority, deadline
//! waiters among themselves by deadline (`rt_waiter_node_less()`), FIFO
//! among equals, and non-RT waiters all rank as DEFAULT_PRIO as in the kernel.
//! A deadline waiter boosts the owner into the deadline class with its own
//! reservation (deadline inheritance, `p->dl.pi_se`: see
//! [`Kernel::rt_mutex_setprio`]).

use crate::core::{Kernel, Outbox};
use crate::sched::{TaskId, DEFAULT_PRIO, MAX_RT_PRIO};

/// The kernel's `max_lock_depth` chain-walk limit.
pub const MAX_LOCK_DEPTH: u32 = 1024;

/// One rt_mutex.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RtMutex {
    pub owner: Option<TaskId>,
    /// Waiters, top waiter first.
    pub waiters: Vec<TaskId>,
}

impl Kernel {
    /// Who holds rt_mutex `lock` (`rt_mutex_owner()`).
    pub fn rt_mutex_owner(&self, lock: u32) -> Option<TaskId> {
        self.rt_mutexes.get(lock as usize).and_then(|m| m.owner)
    }

    /// The priority a waiter is ordered by (`rt_waiter_node_less()`): RT prio,
    /// or DEFAULT_PRIO for every fair task (nice does not inherit).
    fn waiter_prio(&self, t: TaskId) -> i32 {
        let prio = self.tasks[t as usize].prio;
        if prio < MAX_RT_PRIO {
            prio
        } else {
            DEFAULT_PRIO
        }
    }

    /// `rt_waiter_node_less(a, b)`: a better priority, or among deadline
    /// waiters an earlier deadline.
    fn waiter_less(&self, a: TaskId, b: TaskId) -> bool {
        let (pa, pb) = (self.waiter_prio(a), self.waiter_prio(b));
        if pa != pb {
            return pa < pb;
        }
        pa < crate::deadline::MAX_DL_PRIO
            && crate::deadline::dl_time_before(self.tasks[a as usize].dl.deadline, self.tasks[b as usize].dl.deadline)
    }

    /// `rt_mutex_enqueue()`: into the waiter tree by priority (deadline
    /// waiters by deadline), FIFO among equals.
    fn enqueue_waiter(&mut self, lock: u32, t: TaskId) {
        let pos = {
            let w = &self.rt_mutexes[lock as usize].waiters;
            w.iter().position(|&q| self.waiter_less(t, q)).unwrap_or(w.len())
        };
        self.rt_mutexes[lock as usize].waiters.insert(pos, t);
    }

    /// The best top waiter over all locks `owner` holds (`task_top_pi_waiter()`).
    fn top_pi_waiter(&self, owner: TaskId) -> Option<TaskId> {
        let tops = self.tasks[owner as usize].pi_locks_held.iter();
        tops.filter_map(|&l| self.rt_mutexes[l as usize].waiters.first().copied()).reduce(|best, w| {
            if self.waiter_less(w, best) {
                w
            } else {
                best
            }
        })
    }

    /// `rt_mutex_adjust_prio()`: owner's prio = min(normal, best waiter's).
    fn rt_mutex_adjust_prio(&mut self, owner: TaskId) {
        let pi = self.top_pi_waiter(owner);
        self.rt_mutex_setprio(owner, pi);
    }

    /// `rt_mutex_lock()` by `t` running on `cpu`. Returns true when acquired;
    /// otherwise `t` is queued as a waiter, the owner chain is boosted (in
    /// `t`'s context, before it sleeps) and the caller must block.
    pub fn rt_mutex_lock(&mut self, t: TaskId, lock: u32, now: u64, cpu: usize, out: &mut Outbox) -> bool {
        self.entry(now, cpu, out, |k| {
            let l = lock as usize;
            if k.rt_mutexes.len() <= l {
                k.rt_mutexes.resize(l + 1, RtMutex::default());
            }
            match k.rt_mutexes[l].owner {
                None => {
                    k.rt_mutexes[l].owner = Some(t);
                    k.tasks[t as usize].pi_locks_held.push(lock);
                    true
                }
                Some(o) if o == t => true,
                Some(_) => {
                    // task_blocks_on_rt_mutex()
                    k.enqueue_waiter(lock, t);
                    k.tasks[t as usize].pi_blocked_on = Some(lock);
                    k.rt_mutex_adjust_prio_chain(lock);
                    false
                }
            }
        })
    }

    /// `rt_mutex_adjust_prio_chain()`: boost the owner of `lock`; if that
    /// owner is itself blocked, requeue it in the next lock and continue.
    fn rt_mutex_adjust_prio_chain(&mut self, mut lock: u32) {
        for _ in 0..MAX_LOCK_DEPTH {
            let Some(owner) = self.rt_mutexes[lock as usize].owner else { return };
            let before = (self.tasks[owner as usize].prio, self.tasks[owner as usize].dl.pi_se);
            self.rt_mutex_adjust_prio(owner);
            if (self.tasks[owner as usize].prio, self.tasks[owner as usize].dl.pi_se) == before
                && before.0 >= crate::deadline::MAX_DL_PRIO
            {
                return;
            }
            let Some(next) = self.tasks[owner as usize].pi_blocked_on else { return };
            // The owner's new priority moves it within the next lock's waiters.
            self.rt_mutexes[next as usize].waiters.retain(|&w| w != owner);
            self.enqueue_waiter(next, owner);
            lock = next;
        }
    }

    /// `rt_mutex_unlock()` by `t`: deboost `t`, hand the lock to the top
    /// waiter (returned, to be woken by the caller) and boost it by the
    /// waiters that remain.
    pub fn rt_mutex_unlock(&mut self, t: TaskId, lock: u32, now: u64, cpu: usize, out: &mut Outbox) -> Option<TaskId> {
        self.entry(now, cpu, out, |k| {
            let l = lock as usize;
            debug_assert_eq!(k.rt_mutexes[l].owner, Some(t));
            k.tasks[t as usize].pi_locks_held.retain(|&x| x != lock);
            let next = if k.rt_mutexes[l].waiters.is_empty() { None } else { Some(k.rt_mutexes[l].waiters.remove(0)) };
            k.rt_mutexes[l].owner = next;
            // mark_wakeup_next_waiter(): deboost the unlocking task first.
            k.rt_mutex_adjust_prio(t);
            if let Some(n) = next {
                k.tasks[n as usize].pi_blocked_on = None;
                k.tasks[n as usize].pi_locks_held.push(lock);
                k.rt_mutex_adjust_prio(n);
            }
            next
        })
    }
}
