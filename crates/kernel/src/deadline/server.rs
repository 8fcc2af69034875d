//! The fair server (`kernel/sched/deadline.c`: `rq->fair_server`, a
//! deferred `dl_server`): fair tasks starved by RT tasks get 50 ms of every
//! 1 s period, once they have waited for the rest of it.
//!
//! Follows Debian's 6.12.117, whose deadline.c carries the 2025-26 stable
//! fixes (the "stuck dl_server" fix, the revised-wakeup case): the server
//! starts when the first fair task is queued on an empty fair runqueue
//! (`enqueue_task_fair()`), and stays active while the CPU idles or runs
//! RT; it stops only when it is picked with no fair task to run. Its states
//! are deadline.c's own diagram:
//! * B, zero-laxity wait: throttled and `defer_armed`, the timer at
//!   `deadline - runtime`. Fair tasks running in the background (and idle
//!   time, `dl_server_update_idle_time()`) consume the runtime; once it is
//!   used up the period starts over, pushing the timer 950 ms on.
//! * D, running: the timer fired with runtime left, so fair tasks were
//!   starved; the server is queued as a deadline entity and runs fair tasks
//!   above RT until its runtime is used (then E) or no fair task is left
//!   (then A).
//! * E, replenish wait: throttled until the next period, then D again; fair
//!   time in the background that uses up the runtime returns it to B.
//! * A, inactive.
//!
//! Simplified: CBS arithmetic in whole nanoseconds
//! without DL_SCALE's 1 us granularity; the revised-wakeup rule
//! (`update_dl_revised_wakeup()`) for a server restarted within a period it
//! was running in scales the runtime to the time left; hrtimers fire at
//! their expiry (the timer interrupt's delivery is the hardware model's).
//! The 6.9 profile has no fair server. Its instants are the model's time
//! (`Kernel::now`), not the runqueue clock (which runs `RQ_CLOCK_BASE`
//! ahead), because its timer is the simulator's.

use crate::core::{Kernel, Outbox};

/// Default `fair_server` runtime and period (deadline.c `dl_server_start()`).
pub const FAIR_SERVER_RUNTIME: u64 = 50_000_000;
pub const FAIR_SERVER_PERIOD: u64 = 1_000_000_000;
/// `dl_server_min_res`: a zero-laxity timer is pushed on only by more.
const DL_SERVER_MIN_RES: u64 = 1_000_000;

/// Per-CPU state of the fair server (`struct sched_dl_entity` fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FairServer {
    /// `dl_runtime`: the runtime it may use per period (0 disables it, as
    /// writing 0 to `/sys/kernel/debug/sched/fair_server/cpuN/runtime` does).
    pub dl_runtime: u64,
    /// `dl_server`: set up by its first start (`setup_new_dl_entity()`).
    pub initialized: bool,
    /// `dl_server_active`.
    pub active: bool,
    /// `dl_throttled`: waiting for its timer (zero-laxity or replenish).
    pub throttled: bool,
    /// `dl_defer_armed`: the timer is the zero-laxity one.
    pub defer_armed: bool,
    /// `dl_defer_running`: the server is handling a starvation.
    pub defer_running: bool,
    /// Runtime left in this period, ns (negative once overrun).
    pub runtime: i64,
    /// Absolute deadline of the current period.
    pub deadline: u64,
    /// Expiry of the pending `dl_timer`; `None` when it is not queued.
    pub timer_at: Option<u64>,
    /// `dl_non_contending`: stopped before its 0-lag time, its bandwidth
    /// still active until the inactive timer (GRUB's `running_bw`).
    pub non_contending: bool,
    /// Expiry of the pending inactive timer.
    pub inactive_timer_at: Option<u64>,
    /// The idle task's `se.exec_start`: idle time since then counts against
    /// the runtime (`dl_server_update_idle_time()`); `None` while busy.
    pub idle_since: Option<u64>,
}

impl FairServer {
    pub fn new(dl_runtime: u64) -> Self {
        FairServer { dl_runtime, ..Default::default() }
    }

    /// Queued as a deadline entity: it runs fair tasks above RT (state D).
    pub fn queued(&self) -> bool {
        self.active && !self.throttled
    }

    /// `dl_entity_overflow()`: would the runtime left, used by the
    /// deadline, exceed the reserved bandwidth?
    fn overflow(&self, now: u64) -> bool {
        let left = FAIR_SERVER_PERIOD as u128 * self.runtime.max(0) as u128;
        let right = self.deadline.saturating_sub(now) as u128 * self.dl_runtime as u128;
        right < left
    }

    /// `replenish_dl_new_period()`.
    fn new_period(&mut self, now: u64) {
        self.deadline = now + FAIR_SERVER_PERIOD;
        self.runtime = self.dl_runtime as i64;
        if !self.defer_running {
            self.throttled = true;
            self.defer_armed = true;
        }
    }

    /// `start_dl_timer()`: the zero-laxity instant when armed, else the
    /// next period. False (nothing queued) when that is already past.
    fn timer_expiry(&self, now: u64) -> Option<u64> {
        let at =
            if self.defer_armed { self.deadline.saturating_sub(self.runtime.max(0) as u64) } else { self.deadline };
        (at >= now).then_some(at)
    }
}

impl Kernel {
    fn start_dl_timer(&mut self, cpu: usize) -> bool {
        let now = self.now;
        match self.rqs[cpu].fair_server.timer_expiry(now) {
            // hrtimer_is_queued(): already pending for that instant.
            Some(at) if self.rqs[cpu].fair_server.timer_at == Some(at) => true,
            Some(at) => {
                self.rqs[cpu].fair_server.timer_at = Some(at);
                self.request_timer(TimerRequest { cpu, at, what: TimerKind::FairServer });
                true
            }
            None => false,
        }
    }

    /// `enqueue_dl_entity()` of the server: `wakeup` is ENQUEUE_WAKEUP
    /// (`update_dl_entity()`), else ENQUEUE_REPLENISH. A throttled server
    /// whose timer could be started stays off the runqueue.
    fn enqueue_fair_server(&mut self, cpu: usize, wakeup: bool) {
        let now = self.now;
        let fs = &mut self.rqs[cpu].fair_server;
        if wakeup {
            // update_dl_entity()
            if fs.deadline < now || fs.overflow(now) {
                if fs.defer_running && fs.deadline >= now {
                    // update_dl_revised_wakeup(): keep the deadline, scale the runtime.
                    let laxity = fs.deadline - now;
                    fs.runtime = (fs.dl_runtime as u128 * laxity as u128 / FAIR_SERVER_PERIOD as u128) as i64;
                } else {
                    fs.defer_running = false;
                    fs.new_period(now);
                }
            } else if !fs.defer_running {
                fs.defer_armed = true;
                fs.throttled = true;
            }
        } else {
            // replenish_dl_entity()
            if fs.defer_armed && fs.overflow(now) {
                fs.deadline = now + FAIR_SERVER_PERIOD;
                fs.runtime = fs.dl_runtime as i64;
            }
            while fs.runtime <= 0 {
                fs.deadline += FAIR_SERVER_PERIOD;
                fs.runtime += fs.dl_runtime as i64;
            }
            if fs.deadline < now {
                fs.new_period(now);
            }
            fs.throttled = false;
            if fs.defer_armed {
                fs.defer_armed = false;
            } else if !fs.defer_running && now < fs.deadline.saturating_sub(fs.runtime as u64) {
                fs.defer_armed = true;
                fs.throttled = true;
                if !self.start_dl_timer(cpu) {
                    let fs = &mut self.rqs[cpu].fair_server;
                    fs.timer_at = None;
                    fs.defer_armed = false;
                    fs.throttled = false;
                }
            }
        }
        if self.rqs[cpu].fair_server.throttled && self.start_dl_timer(cpu) {
            return;
        }
        let fs = &mut self.rqs[cpu].fair_server;
        if fs.throttled {
            fs.timer_at = None;
            fs.defer_armed = false;
            fs.throttled = false;
        }
        // __enqueue_dl_entity(): queued above RT, and above a deadline task
        // whose deadline is later.
        let deadline = self.rqs[cpu].fair_server.deadline;
        if self.dl_preempts_curr(cpu, deadline) {
            self.resched_curr(cpu);
        }
    }

    /// `dl_server_start()`, from `enqueue_task_fair()` when the fair
    /// runqueue was empty (`was_empty`). On a CPU that had nothing queued
    /// (`was_idle`: `rq->nr_running` before the enqueue) the idle time since
    /// the last accounting counts against the runtime first.
    pub(crate) fn dl_server_start(&mut self, cpu: usize, was_empty: bool, was_idle: bool) {
        if !was_empty || self.rqs[cpu].cfs.h_nr_queued == 0 {
            return;
        }
        self.dl_server_activate(cpu, was_idle);
    }

    /// `dl_server_start()` past its test for a fair task: set the server up
    /// on its first start, then queue it (deferred) unless it is active.
    fn dl_server_activate(&mut self, cpu: usize, was_idle: bool) {
        if was_idle {
            self.dl_server_update_idle_time(cpu);
        }
        let now = self.now;
        let fs = &mut self.rqs[cpu].fair_server;
        if !fs.initialized {
            // The first start sets the server up: a first period from now.
            fs.initialized = true;
            fs.new_period(now);
        }
        if fs.dl_runtime == 0 || fs.active {
            return;
        }
        fs.active = true;
        // enqueue_dl_entity(ENQUEUE_WAKEUP) → task_contending().
        self.fair_server_contending(cpu);
        self.enqueue_fair_server(cpu, true);
        // dl_server_start() reschedules whether or not the server is queued,
        // unless a deadline task with an earlier deadline runs.
        let deadline = self.rqs[cpu].fair_server.deadline;
        if self.dl_preempts_curr(cpu, deadline) {
            self.resched_curr(cpu);
        }
    }

    /// A fair task passed through `cpu` and left the fair class before
    /// `now` without running there: its enqueue started the fair server
    /// (`dl_server_start()` from `enqueue_task_fair()`), and leaving the
    /// class does not stop it (6.12: only a pick with nothing to serve
    /// does). This is what the real runner's setup leaves behind: each
    /// thread starts as SCHED_OTHER, moves to its CPU and switches to its
    /// policy before the run's t0 (`schedlab_runner::worker`). A profile
    /// without a fair server has nothing to start.
    pub fn fair_task_passed_through(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            let was_idle = k.rqs[cpu].nr_running == 0;
            k.dl_server_activate(cpu, was_idle);
        });
    }

    /// 6.12.0-6.16's `dl_server_stop()` from `dequeue_entities()` when the
    /// CPU's last fair task leaves (the profile's `dl_server_stop_on_empty`,
    /// unless `DL_SERVER_LAZY_STOP`): the server goes inactive and its timer
    /// is cancelled, so the next fair enqueue starts and arms it again.
    pub(crate) fn dl_server_stop_on_empty(&mut self, cpu: usize) {
        if self.profile.dl_server_stop_on_empty
            && !self.feat(crate::features::Feature::DL_SERVER_LAZY_STOP)
            && self.rqs[cpu].fair_server.active
        {
            self.dl_server_stop(cpu);
        }
    }

    /// `dl_server_stop()`: picked with nothing to serve (state D → A).
    fn dl_server_stop(&mut self, cpu: usize) {
        if self.rqs[cpu].fair_server.dl_runtime == 0 {
            return;
        }
        // dequeue_dl_entity(DEQUEUE_SLEEP) → task_non_contending().
        self.fair_server_non_contending(cpu);
        let fs = &mut self.rqs[cpu].fair_server;
        fs.timer_at = None;
        fs.defer_armed = false;
        fs.throttled = false;
        fs.active = false;
    }

    /// The idle task is switched in (`set_next_task_idle()`: its exec_start).
    pub(crate) fn fair_server_idle_enter(&mut self, cpu: usize) {
        self.rqs[cpu].fair_server.idle_since = Some(self.now);
    }

    /// The idle task is switched out (`put_prev_task_idle()`).
    pub(crate) fn fair_server_idle_exit(&mut self, cpu: usize) {
        self.dl_server_update_idle_time(cpu);
        self.rqs[cpu].fair_server.idle_since = None;
    }

    /// `dl_server_update_idle_time()`: idle time counts as runtime the
    /// deferred server did not need.
    fn dl_server_update_idle_time(&mut self, cpu: usize) {
        let now = self.now;
        let fs = &mut self.rqs[cpu].fair_server;
        let Some(since) = fs.idle_since else { return };
        if fs.runtime < 0 {
            return;
        }
        fs.runtime -= now.saturating_sub(since) as i64;
        if fs.runtime < 0 {
            fs.defer_running = false;
            fs.runtime = 0;
        }
        fs.idle_since = Some(now);
    }

    /// `dl_server_update()` → `update_curr_dl_se()`: fair runtime, inside
    /// the server or in the background, is charged to an active server.
    pub(crate) fn dl_server_update(&mut self, cpu: usize, delta: u64) {
        let now = self.now;
        let fs = &mut self.rqs[cpu].fair_server;
        if !fs.active || fs.dl_runtime == 0 || delta == 0 {
            return;
        }
        fs.runtime -= delta as i64;
        if fs.runtime > 0 {
            return;
        }
        if fs.throttled {
            // Used up in the background: not needed this period (B/E → B).
            fs.defer_running = false;
            fs.timer_at = None;
            fs.new_period(now);
            self.start_dl_timer(cpu);
            return;
        }
        // Running out of runtime while serving (D → E).
        fs.throttled = true;
        if !self.start_dl_timer(cpu) {
            self.enqueue_fair_server(cpu, false);
        }
        self.resched_curr(cpu);
    }

    /// The server's `dl_timer` on `cpu` (`dl_server_timer()`): at the
    /// zero-laxity instant, start serving unless the runtime was consumed in
    /// the background meanwhile (then push the timer on); at a replenish
    /// instant, serve again.
    pub fn dl_server_timer(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            // An event for a timer since cancelled or re-armed later is stale
            // (the interrupt may be taken after the expiry).
            if k.rqs[cpu].fair_server.timer_at.is_none_or(|at| at > now) {
                return;
            }
            k.rqs[cpu].fair_server.timer_at = None;
            k.update_rq_clock(cpu);
            let fs = k.rqs[cpu].fair_server;
            if !fs.throttled || fs.dl_runtime == 0 {
                return;
            }
            if fs.defer_armed {
                let zero_laxity = fs.deadline.saturating_sub(fs.runtime.max(0) as u64);
                if now + DL_SERVER_MIN_RES < zero_laxity {
                    k.rqs[cpu].fair_server.timer_at = Some(zero_laxity);
                    k.request_timer(TimerRequest { cpu, at: zero_laxity, what: TimerKind::FairServer });
                    return;
                }
                k.rqs[cpu].fair_server.defer_running = true;
            }
            k.enqueue_fair_server(cpu, false);
        })
    }

    /// The deadline class's pick with only the server in it (`__pick_task_dl()`):
    /// true when it serves a fair task now; a queued server with no fair
    /// task to run is stopped.
    pub(crate) fn fair_server_pick(&mut self, cpu: usize) -> bool {
        if !self.rqs[cpu].fair_server.queued() {
            return false;
        }
        if self.rqs[cpu].cfs.h_nr_runnable > 0 {
            return true;
        }
        self.dl_server_stop(cpu);
        false
    }

    /// Disable or re-enable the fair server on every CPU (runtime in ns),
    /// as the debugfs write does: a running server is stopped first.
    pub fn set_fair_server_runtime(&mut self, runtime: u64) {
        for cpu in 0..self.rqs.len() {
            if self.rqs[cpu].fair_server.active {
                self.dl_server_stop(cpu);
            }
            self.fair_server_change_bw(cpu, runtime);
        }
    }
}

/// A timer the kernel model asks the simulator to fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerRequest {
    pub cpu: usize,
    pub at: u64,
    pub what: TimerKind,
}

/// Whose hrtimer a [`TimerRequest`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// The CPU's fair server (`dl_server_timer()`): [`Kernel::dl_server_timer`].
    FairServer,
    /// Task group N's CFS bandwidth period timer: [`Kernel::cfs_bandwidth_timer`].
    CfsPeriod(usize),
    /// Task group N's CFS bandwidth slack timer: [`Kernel::cfs_bandwidth_timer`].
    CfsSlack(usize),
    /// A deadline task's replenishment timer (`p->dl.dl_timer`): [`Kernel::dl_timer`].
    DlTask(crate::sched::TaskId),
    /// A deadline task's inactive timer (`p->dl.inactive_timer`, its 0-lag
    /// time): [`Kernel::dl_inactive_timer`].
    DlInactive(crate::sched::TaskId),
    /// The CPU's fair server's inactive timer: [`Kernel::dl_inactive_timer`].
    FairServerInactive,
    /// schedutil's kthread for cpufreq policy N has set the frequency it
    /// was asked for: [`Kernel::cpufreq_transition_done`].
    CpufreqWork(usize),
}
