//! CFS bandwidth control (CONFIG_CFS_BANDWIDTH, `cpu.max`): a group's
//! runtime pool refilled every period by its quota (`struct
//! cfs_bandwidth`), handed out to its cfs_rqs in 5 ms slices
//! (`sched_cfs_bandwidth_slice()`), a cfs_rq that runs out throttled (its
//! group entity leaves the parent, its tasks stay queued below) and
//! unthrottled by the period timer's distribution. Follows fair.c of
//! 6.12.x: `account_cfs_rq_runtime()`, `__assign_cfs_rq_runtime()`,
//! `throttle_cfs_rq()`, `unthrottle_cfs_rq()`, `distribute_cfs_runtime()`,
//! `do_sched_cfs_period_timer()`, the slack timer
//! (`__return_cfs_rq_runtime()`, `do_sched_cfs_slack_timer()`),
//! `check_cfs_rq_runtime()`, `check_enqueue_throttle()` and
//! `tg_set_cfs_bandwidth()`.
//!
//! The mainline profile throttles tasks instead (6.18, Aaron Lu's series,
//! `Profile::task_based_throttle`): `throttle_cfs_rq()` only marks the
//! hierarchy, a task picked from it leaves on its way back to user space
//! (`throttle_cfs_rq_work()`: dequeued onto the cfs_rq's limbo list, still
//! runnable), and `tg_unthrottle_up()` enqueues each such task as a wakeup.
//! Simplified there: the model runs the work as the task is picked, so the
//! kernel's switch into it and straight back out is neither traced nor
//! charged; a task woken into a throttled hierarchy is queued and picked
//! like any other (6.18 does the same), and kernel threads are never in a
//! throttled group here.
//!
//! Simplified: no `cpu.max.burst`; the period timer's "period too short"
//! scaling is absent (it needs the handler to overrun three periods); a
//! distribution unthrottles every cfs_rq at the timer's instant, where the
//! kernel sends remote ones a CSD IPI (`__unthrottle_cfs_rq_async()`);
//! the PELT clock of a throttled hierarchy stops (`throttled_clock_pelt`)
//! as in the kernel.

use crate::core::Kernel;
use crate::deadline::{TimerKind, TimerRequest};
use crate::sched::{qflags::*, CfsRqId};
use crate::TaskId;

/// `sysctl_sched_cfs_bandwidth_slice`: 5 ms handed to a cfs_rq at a time.
pub const CFS_BANDWIDTH_SLICE: u64 = 5_000_000;
/// `min_cfs_rq_runtime`: what a cfs_rq keeps when it returns slack.
const MIN_CFS_RQ_RUNTIME: i64 = 1_000_000;
/// `min_bandwidth_expiration`.
const MIN_BANDWIDTH_EXPIRATION: u64 = 2_000_000;
/// `cfs_bandwidth_slack_period`.
const CFS_BANDWIDTH_SLACK_PERIOD: u64 = 5_000_000;

/// `struct cfs_bandwidth` of a group with a quota.
#[derive(Clone, Debug)]
pub struct CfsBandwidth {
    pub quota: u64,
    pub period: u64,
    /// The pool left this period.
    pub runtime: u64,
    pub period_active: bool,
    /// A period passed without any cfs_rq asking for runtime.
    pub idle: bool,
    /// The period timer's expiry (`hrtimer_get_expires()`).
    pub expires: u64,
    /// The CPU the (pinned) period timer runs on: the one that last started it.
    pub timer_cpu: usize,
    pub slack_started: bool,
    /// The slack timer's expiry while armed.
    pub slack_at: Option<u64>,
    /// `throttled_cfs_rq`, oldest first.
    pub throttled: Vec<CfsRqId>,
    /// `cpu.stat`: periods elapsed while active, periods with a throttled cfs_rq, total throttled ns.
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_time: u64,
}

/// `hrtimer_forward_now()`: move `expires` past `now` by whole periods;
/// returns the number of periods moved (0 when it was still ahead).
fn forward_now(expires: &mut u64, period: u64, now: u64) -> u64 {
    if now < *expires {
        return 0;
    }
    let overrun = (now - *expires) / period + 1;
    *expires += overrun * period;
    overrun
}

impl Kernel {
    fn bw(&self, tg: usize) -> &CfsBandwidth {
        self.task_groups[tg].bandwidth.as_ref().expect("a group with a quota")
    }

    fn bw_mut(&mut self, tg: usize) -> &mut CfsBandwidth {
        self.task_groups[tg].bandwidth.as_mut().expect("a group with a quota")
    }

    /// `tg_set_cfs_bandwidth()` at the group's creation (no task in it yet),
    /// written from `cpu` at `now`: a full pool, the period timer started at
    /// a random phase as `init_cfs_bandwidth()` sets it, every cfs_rq
    /// enabled with nothing assigned.
    pub fn set_cfs_bandwidth(
        &mut self,
        tg: usize,
        quota: u64,
        period: u64,
        now: u64,
        cpu: usize,
        out: &mut crate::Outbox,
    ) {
        self.entry(now, cpu, out, |k| k.tg_set_cfs_bandwidth(tg, quota, period));
    }

    fn tg_set_cfs_bandwidth(&mut self, tg: usize, quota: u64, period: u64) {
        let phase = self.next_random() % period;
        self.task_groups[tg].bandwidth = Some(CfsBandwidth {
            quota,
            period,
            runtime: 0,
            period_active: false,
            idle: false,
            expires: phase,
            timer_cpu: 0,
            slack_started: false,
            slack_at: None,
            throttled: Vec::new(),
            nr_periods: 0,
            nr_throttled: 0,
            throttled_time: 0,
        });
        self.refill_cfs_bandwidth_runtime(tg);
        self.start_cfs_bandwidth(tg);
        for i in 0..self.task_groups[tg].cfs_rq.len() {
            let q = self.task_groups[tg].cfs_rq[i];
            let cfs = self.cfs_mut(q);
            cfs.runtime_enabled = true;
            cfs.runtime_remaining = 0;
        }
    }

    /// `__refill_cfs_bandwidth_runtime()` (no burst: the pool tops out at the quota).
    fn refill_cfs_bandwidth_runtime(&mut self, tg: usize) {
        let b = self.bw_mut(tg);
        b.runtime = (b.runtime + b.quota).min(b.quota);
    }

    /// `start_cfs_bandwidth()`: arm the period timer on the executing CPU.
    fn start_cfs_bandwidth(&mut self, tg: usize) {
        let (now, cpu) = (self.now, self.exec_cpu);
        let b = self.bw_mut(tg);
        if b.period_active {
            return;
        }
        b.period_active = true;
        b.timer_cpu = cpu;
        forward_now(&mut b.expires, b.period, now);
        let at = b.expires;
        self.request_timer(TimerRequest { cpu, at, what: TimerKind::CfsPeriod(tg) });
    }

    /// `__assign_cfs_rq_runtime()`: top `q` up towards `target` from the pool.
    fn assign_cfs_rq_runtime(&mut self, q: CfsRqId, target: u64) -> bool {
        let tg = self.cfs(q).tg;
        let min_amount = (target as i64 - self.cfs(q).runtime_remaining).max(0) as u64;
        self.start_cfs_bandwidth(tg);
        let b = self.bw_mut(tg);
        let mut amount = 0;
        if b.runtime > 0 {
            amount = b.runtime.min(min_amount);
            b.runtime -= amount;
            b.idle = false;
        }
        let cfs = self.cfs_mut(q);
        cfs.runtime_remaining += amount as i64;
        cfs.runtime_remaining > 0
    }

    /// `account_cfs_rq_runtime()`: charge `delta` to `q`'s slice; an
    /// exhausted one asks the pool for another, and when there is none the
    /// running entity reschedules (to be throttled at `put_prev_entity()`).
    pub(crate) fn account_cfs_rq_runtime(&mut self, q: CfsRqId, delta: u64) {
        if !self.cfs(q).runtime_enabled {
            return;
        }
        self.cfs_mut(q).runtime_remaining -= delta as i64;
        if self.cfs(q).runtime_remaining > 0 || self.cfs(q).throttled {
            return;
        }
        if !self.assign_cfs_rq_runtime(q, CFS_BANDWIDTH_SLICE) && self.cfs(q).curr.is_some() {
            self.resched_curr(self.cfs(q).cpu);
        }
    }

    /// `cfs_rq_throttled()`.
    #[inline]
    pub(crate) fn cfs_rq_throttled(&self, q: CfsRqId) -> bool {
        self.cfs(q).throttled
    }

    /// `throttled_hierarchy()`: `q` or a cfs_rq above it is throttled.
    #[inline]
    pub(crate) fn throttled_hierarchy(&self, q: CfsRqId) -> bool {
        self.cfs(q).throttle_count > 0
    }

    /// `check_cfs_rq_runtime()`: throttle `q` if it ran out; true when it is throttled.
    pub(crate) fn check_cfs_rq_runtime(&mut self, q: CfsRqId) -> bool {
        let cfs = self.cfs(q);
        if !cfs.runtime_enabled || cfs.runtime_remaining > 0 {
            return false;
        }
        if cfs.throttled {
            return true;
        }
        self.throttle_cfs_rq(q)
    }

    /// `check_enqueue_throttle()`: the first entity queued on a cfs_rq with
    /// no runtime left throttles it at once.
    pub(crate) fn check_enqueue_throttle(&mut self, q: CfsRqId) {
        let cfs = self.cfs(q);
        if !cfs.runtime_enabled || cfs.curr.is_some() || cfs.throttled {
            return;
        }
        self.account_cfs_rq_runtime(q, 0);
        if self.cfs(q).runtime_remaining <= 0 {
            self.throttle_cfs_rq(q);
        }
    }

    /// `return_cfs_rq_runtime()`: an emptied cfs_rq gives back all but
    /// 1 ms, and the slack timer hands it to the throttled ones.
    pub(crate) fn return_cfs_rq_runtime(&mut self, q: CfsRqId) {
        let cfs = self.cfs(q);
        if !cfs.runtime_enabled || cfs.nr_running > 0 {
            return;
        }
        let slack = cfs.runtime_remaining - MIN_CFS_RQ_RUNTIME;
        if slack <= 0 {
            return;
        }
        let tg = cfs.tg;
        let b = self.bw_mut(tg);
        b.runtime += slack as u64;
        if b.runtime > CFS_BANDWIDTH_SLICE && !b.throttled.is_empty() {
            self.start_cfs_slack_bandwidth(tg);
        }
        self.cfs_mut(q).runtime_remaining -= slack;
    }

    /// `runtime_refresh_within()`: the period timer fires within `min_expire`.
    fn runtime_refresh_within(&self, tg: usize, min_expire: u64) -> bool {
        let b = self.bw(tg);
        b.expires.saturating_sub(self.now) < min_expire
    }

    /// `start_cfs_slack_bandwidth()`.
    fn start_cfs_slack_bandwidth(&mut self, tg: usize) {
        if self.runtime_refresh_within(tg, CFS_BANDWIDTH_SLACK_PERIOD + MIN_BANDWIDTH_EXPIRATION) {
            return;
        }
        let (now, cpu) = (self.now, self.exec_cpu);
        let b = self.bw_mut(tg);
        if b.slack_started {
            return;
        }
        b.slack_started = true;
        let at = now + CFS_BANDWIDTH_SLACK_PERIOD;
        b.slack_at = Some(at);
        self.request_timer(TimerRequest { cpu, at, what: TimerKind::CfsSlack(tg) });
    }

    /// The cfs_rqs of `tg` and of every group below it, on `cpu`
    /// (`walk_tg_tree_from()`).
    fn tg_subtree_on(&self, tg: usize, cpu: usize) -> Vec<CfsRqId> {
        let mut out = Vec::new();
        for (g, group) in self.task_groups.iter().enumerate() {
            let mut at = Some(g);
            while let Some(a) = at {
                if a == tg {
                    out.push(group.cfs_rq[cpu]);
                    break;
                }
                at = self.task_groups[a].parent;
            }
        }
        out
    }

    /// `throttle_cfs_rq()`: unless a last grab at the pool succeeds, take
    /// the group's entity off its parent (and each ancestor left empty),
    /// with the hierarchy's task counts; the tasks stay queued below.
    fn throttle_cfs_rq(&mut self, q: CfsRqId) -> bool {
        if self.assign_cfs_rq_runtime(q, 1) {
            return false;
        }
        let tg = self.cfs(q).tg;
        self.bw_mut(tg).throttled.push(q);
        let cpu = self.cfs(q).cpu;
        let pelt_now = self.rq_clock_pelt(cpu);
        if self.profile.task_based_throttle {
            // tg_throttle_down() of 6.18: the counts below go up; an empty
            // cfs_rq's PELT clock stops now, a busy one's when it empties.
            for c in self.tg_subtree_on(tg, cpu) {
                let cfs = self.cfs_mut(c);
                cfs.throttle_count += 1;
                if cfs.nr_running == 0 && !cfs.pelt_clock_throttled {
                    cfs.pelt_clock_throttled = true;
                    cfs.throttled_clock_pelt = pelt_now;
                }
            }
            self.cfs_mut(q).throttled = true;
            return true;
        }
        // tg_throttle_down(): the PELT clocks below stop.
        for c in self.tg_subtree_on(tg, cpu) {
            let cfs = self.cfs_mut(c);
            if cfs.throttle_count == 0 {
                cfs.throttled_clock_pelt = pelt_now;
            }
            cfs.throttle_count += 1;
        }
        let cfs = self.cfs(q);
        let mut delta = super::group::HCounts::of(cfs);
        let mut se = cfs.se;
        let mut dequeued_all = true;
        while let Some(s) = se {
            let pq = self.cfs_rq_of(s);
            if !self.tasks[s as usize].se.on_rq {
                dequeued_all = false;
                break;
            }
            let mut flags = DEQUEUE_SLEEP | DEQUEUE_SPECIAL;
            if self.tasks[s as usize].se.sched_delayed {
                flags |= DEQUEUE_DELAYED;
            }
            self.dequeue_entity(pq, s, flags);
            if self.se_is_idle(s) {
                delta.idle = self.cfs(q).h_nr_queued;
            }
            self.h_counts(pq, delta, false);
            se = self.cfs(pq).se;
            if self.cfs(pq).load_weight != 0 {
                break;
            }
        }
        if dequeued_all {
            while let Some(s) = se {
                let pq = self.cfs_rq_of(s);
                if !self.tasks[s as usize].se.on_rq {
                    dequeued_all = false;
                    break;
                }
                self.update_load_avg(pq, s, 0);
                self.se_update_runnable(s);
                if self.se_is_idle(s) {
                    delta.idle = self.cfs(q).h_nr_queued;
                }
                self.h_counts(pq, delta, false);
                se = self.cfs(pq).se;
            }
            if dequeued_all {
                self.touched.cpu(cpu);
                self.rqs[cpu].nr_running -= delta.queued;
            }
        }
        let now = self.rqs[cpu].clock;
        let cfs = self.cfs_mut(q);
        cfs.throttled = true;
        if cfs.nr_running > 0 {
            cfs.throttled_clock = Some(now);
        }
        true
    }

    /// `unthrottle_cfs_rq()`: put the group's entity (and each ancestor
    /// not queued) back with the counts; an idle CPU reschedules.
    fn unthrottle_cfs_rq(&mut self, q: CfsRqId) {
        let cpu = self.cfs(q).cpu;
        let tg = self.cfs(q).tg;
        self.cfs_mut(q).throttled = false;
        self.update_rq_clock(cpu);
        let now = self.rqs[cpu].clock;
        if let Some(t) = self.cfs_mut(q).throttled_clock.take() {
            self.bw_mut(tg).throttled_time += now - t;
        }
        self.bw_mut(tg).throttled.retain(|&x| x != q);
        // tg_unthrottle_up(): the PELT clocks below run again, less the throttled time.
        let pelt_now = self.rq_clock_pelt(cpu);
        if self.profile.task_based_throttle {
            return self.tg_unthrottle_up_tasks(tg, cpu, pelt_now);
        }
        for c in self.tg_subtree_on(tg, cpu) {
            let cfs = self.cfs_mut(c);
            cfs.throttle_count -= 1;
            if cfs.throttle_count == 0 {
                cfs.throttled_clock_pelt_time += pelt_now - cfs.throttled_clock_pelt;
            }
        }
        let was_empty = self.rqs[cpu].cfs.h_nr_queued == 0;
        let was_idle = self.rqs[cpu].nr_running == 0;
        if self.cfs(q).load_weight != 0 {
            self.unthrottle_enqueue(q, cpu);
            self.dl_server_start(cpu, was_empty, was_idle);
        }
        if self.rqs[cpu].curr.is_none() && self.rqs[cpu].cfs.nr_running > 0 {
            self.resched_curr(cpu);
        }
    }

    /// 6.18's `tg_unthrottle_up()` over `tg`'s subtree on `cpu`, children
    /// first: each cfs_rq no longer under any throttle restarts its PELT
    /// clock and enqueues its limbo tasks as wakeups; then an idle CPU with
    /// fair work reschedules (`unthrottle_cfs_rq()`).
    fn tg_unthrottle_up_tasks(&mut self, tg: usize, cpu: usize, pelt_now: u64) {
        let (was_empty, was_idle) = (self.rqs[cpu].cfs.h_nr_queued == 0, self.rqs[cpu].nr_running == 0);
        for c in self.tg_subtree_on(tg, cpu).into_iter().rev() {
            let cfs = self.cfs_mut(c);
            cfs.throttle_count -= 1;
            if cfs.throttle_count > 0 {
                continue;
            }
            if std::mem::take(&mut cfs.pelt_clock_throttled) {
                cfs.throttled_clock_pelt_time += pelt_now - cfs.throttled_clock_pelt;
            }
            for p in std::mem::take(&mut cfs.limbo) {
                self.tasks[p as usize].throttled = false;
                self.enqueue_task_fair(cpu, p, ENQUEUE_WAKEUP);
            }
        }
        if self.rqs[cpu].cfs.h_nr_queued > 0 {
            self.dl_server_start(cpu, was_empty, was_idle);
        }
        if self.rqs[cpu].curr.is_none() && self.rqs[cpu].cfs.nr_running > 0 {
            self.resched_curr(cpu);
        }
    }

    /// 6.18's `throttle_cfs_rq_work()`, run for a task picked from a
    /// throttled hierarchy (the model runs it at the pick; the kernel on the
    /// task's way back to user space): unless the throttle is gone, the task
    /// leaves the fair tree for its cfs_rq's limbo list, runnable but not
    /// counted, never delayed (`DEQUEUE_THROTTLE`); the first such task
    /// starts the throttled time of each throttled cfs_rq above it. False
    /// when the task stays (its hierarchy is no longer throttled).
    pub(crate) fn throttle_cfs_rq_work(&mut self, cpu: usize, p: TaskId) -> bool {
        let q = self.cfs_rq_of(p);
        if self.cfs(q).throttle_count == 0 {
            return false;
        }
        self.dequeue_task_fair(cpu, p, DEQUEUE_SLEEP | DEQUEUE_THROTTLE);
        self.cfs_mut(q).limbo.push(p);
        self.tasks[p as usize].throttled = true;
        let now = self.rqs[cpu].clock;
        let mut at = Some(q);
        while let Some(c) = at {
            let cfs = self.cfs_mut(c);
            if cfs.throttled && cfs.throttled_clock.is_none() {
                cfs.throttled_clock = Some(now);
            }
            at = cfs.parent;
        }
        true
    }

    /// 6.18's `dequeue_throttled_task()`: a task in limbo leaves the list
    /// (a class change or a move); it is on no fair tree to leave.
    pub(crate) fn dequeue_throttled_task(&mut self, p: TaskId) {
        let q = self.cfs_rq_of(p);
        self.cfs_mut(q).limbo.retain(|&t| t != p);
        self.tasks[p as usize].throttled = false;
    }

    /// The enqueue half of `unthrottle_cfs_rq()`.
    fn unthrottle_enqueue(&mut self, q: CfsRqId, cpu: usize) {
        let cfs = self.cfs(q);
        let mut delta = super::group::HCounts::of(cfs);
        let mut se = cfs.se;
        while let Some(s) = se {
            let pq = self.cfs_rq_of(s);
            if self.tasks[s as usize].se.sched_delayed {
                self.dequeue_entity(pq, s, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            } else if self.tasks[s as usize].se.on_rq {
                break;
            }
            self.enqueue_entity(pq, s, ENQUEUE_WAKEUP);
            if self.se_is_idle(s) {
                delta.idle = self.cfs(q).h_nr_queued;
            }
            self.h_counts(pq, delta, true);
            if self.cfs_rq_throttled(pq) {
                return;
            }
            se = self.cfs(pq).se;
        }
        while let Some(s) = se {
            let pq = self.cfs_rq_of(s);
            self.update_load_avg(pq, s, crate::pelt::UPDATE_TG);
            self.se_update_runnable(s);
            if self.se_is_idle(s) {
                delta.idle = self.cfs(q).h_nr_queued;
            }
            self.h_counts(pq, delta, true);
            if self.cfs_rq_throttled(pq) {
                return;
            }
            se = self.cfs(pq).se;
        }
        self.add_nr_running(cpu, delta.queued);
    }

    /// `distribute_cfs_runtime()`: hand the pool to the throttled cfs_rqs in
    /// the order they were throttled, unthrottling each that is then in
    /// credit. True while some stay throttled.
    fn distribute_cfs_runtime(&mut self, tg: usize) -> bool {
        let mut throttled = false;
        let mut remaining = 1;
        let mut ready = Vec::new();
        for q in self.bw(tg).throttled.clone() {
            if remaining == 0 {
                throttled = true;
                break;
            }
            if !self.cfs_rq_throttled(q) {
                continue;
            }
            let want = (1 - self.cfs(q).runtime_remaining) as u64;
            let b = self.bw_mut(tg);
            let runtime = want.min(b.runtime);
            b.runtime -= runtime;
            remaining = b.runtime;
            let cfs = self.cfs_mut(q);
            cfs.runtime_remaining += runtime as i64;
            if cfs.runtime_remaining > 0 {
                ready.push(q);
            } else {
                throttled = true;
            }
        }
        for q in ready {
            if self.cfs_rq_throttled(q) {
                self.unthrottle_cfs_rq(q);
            }
        }
        throttled
    }

    /// `do_sched_cfs_period_timer()`: count the periods, refill, and
    /// distribute while something is throttled. True when the timer should
    /// stop (a second period with no demand).
    fn do_sched_cfs_period_timer(&mut self, tg: usize, overrun: u64) -> bool {
        let mut throttled = !self.bw(tg).throttled.is_empty();
        self.bw_mut(tg).nr_periods += overrun;
        self.refill_cfs_bandwidth_runtime(tg);
        let b = self.bw_mut(tg);
        if b.idle && !throttled {
            return true;
        }
        if !throttled {
            b.idle = true;
            return false;
        }
        b.nr_throttled += overrun;
        while throttled && self.bw(tg).runtime > 0 {
            throttled = self.distribute_cfs_runtime(tg);
        }
        self.bw_mut(tg).idle = false;
        false
    }

    /// The period timer of group `tg` fires on `cpu` (`sched_cfs_period_timer()`).
    fn sched_cfs_period_timer(&mut self, tg: usize) {
        let now = self.now;
        let b = self.bw(tg);
        if !b.period_active || b.expires > now {
            return; // a stale expiry: the timer was stopped or re-armed since
        }
        let mut idle = false;
        loop {
            let b = self.bw_mut(tg);
            let overrun = forward_now(&mut b.expires, b.period, now);
            if overrun == 0 {
                break;
            }
            idle = self.do_sched_cfs_period_timer(tg, overrun);
        }
        let b = self.bw_mut(tg);
        if idle {
            b.period_active = false;
        } else {
            let (cpu, at) = (b.timer_cpu, b.expires);
            self.request_timer(TimerRequest { cpu, at, what: TimerKind::CfsPeriod(tg) });
        }
    }

    /// The slack timer of group `tg` fires (`do_sched_cfs_slack_timer()`).
    fn sched_cfs_slack_timer(&mut self, tg: usize) {
        let now = self.now;
        if self.bw(tg).slack_at.is_none_or(|at| at > now) {
            return;
        }
        let b = self.bw_mut(tg);
        b.slack_at = None;
        b.slack_started = false;
        if self.runtime_refresh_within(tg, MIN_BANDWIDTH_EXPIRATION) {
            return;
        }
        if self.bw(tg).runtime > CFS_BANDWIDTH_SLICE {
            self.distribute_cfs_runtime(tg);
        }
    }

    /// A CFS bandwidth timer (`what`) fires on `cpu` at `now`.
    pub fn cfs_bandwidth_timer(&mut self, what: TimerKind, cpu: usize, now: u64, out: &mut crate::Outbox) {
        self.entry(now, cpu, out, |k| match what {
            TimerKind::CfsPeriod(tg) => k.sched_cfs_period_timer(tg),
            TimerKind::CfsSlack(tg) => k.sched_cfs_slack_timer(tg),
            TimerKind::FairServer
            | TimerKind::DlTask(_)
            | TimerKind::DlInactive(_)
            | TimerKind::FairServerInactive
            | TimerKind::CpufreqWork(_) => {
                unreachable!("{what:?} has its own handler")
            }
        })
    }

    /// `cpu.stat` of group `tg`: (periods, throttled periods, throttled ns); `None` without a quota.
    pub fn cfs_bandwidth_stat(&self, tg: usize) -> Option<(u64, u64, u64)> {
        self.task_groups[tg].bandwidth.as_ref().map(|b| (b.nr_periods, b.nr_throttled, b.throttled_time))
    }
}

#[cfg(test)]
mod tests {
    use super::forward_now;

    #[test]
    fn forward_now_moves_past_now_by_whole_periods() {
        let mut at = 30;
        assert_eq!(forward_now(&mut at, 100, 10), 0, "still ahead: unchanged");
        assert_eq!(at, 30);
        assert_eq!(forward_now(&mut at, 100, 30), 1, "due now: one period on");
        assert_eq!(at, 130);
        assert_eq!(forward_now(&mut at, 100, 455), 4, "overrun by several periods");
        assert_eq!(at, 530);
    }
}
