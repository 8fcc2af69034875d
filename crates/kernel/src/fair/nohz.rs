//! `fair.c`'s balancing triggers: the tick's `sched_balance_trigger()` and
//! SCHED_SOFTIRQ (`sched_balance_softirq()` → `sched_balance_domains()`),
//! NOHZ idle balancing (`nohz_balancer_kick()`, `kick_ilb()`,
//! `_nohz_idle_balance()`), newidle balancing (`sched_balance_newidle()`
//! with NI_RANDOM), and blocked-load updates.
//!
//! Follows 6.12.x (Debian's backport of proportional newidle balancing,
//! NI_RANDOM; 6.12.0 lacks it). Simplified: a CPU's tick stops as soon as it goes idle (the cpuidle
//! governor never keeps it), housekeeping masks are all CPUs, no SD_SERIALIZE
//! contention between CPUs (the simulator is single-threaded), and the cost of
//! a newidle balance is modeled from the topology (`newidle_balance_ns_per_cpu`
//! per CPU of the domain) rather than measured.

use crate::core::{IpiKind, Kernel, Outbox};
use crate::fair::lb::CpuIdleType;
use crate::features::Feature;
use crate::topology::sd_flags::*;
use schedlab_topology::CpuSet;
use schedlab_trace::BalanceKind;

pub const NOHZ_BALANCE_KICK: u32 = 0x1;
pub const NOHZ_STATS_KICK: u32 = 0x2;
pub const NOHZ_NEWILB_KICK: u32 = 0x4;
pub const NOHZ_NEXT_KICK: u32 = 0x8;
pub const NOHZ_KICK_MASK: u32 = NOHZ_BALANCE_KICK | NOHZ_STATS_KICK | NOHZ_NEXT_KICK;

/// Mutable per-CPU, per-level state of a `struct sched_domain` (each CPU has
/// its own copy of its domains in the kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdState {
    /// ms; set through [`Kernel::set_balance_interval`], which keeps
    /// `interval_jiffies` with it.
    balance_interval: u64,
    /// What `get_sd_balance_interval()` makes of `balance_interval`, idle
    /// and busy (jiffies, clamped): it is read for every domain of every
    /// CPU a balance pass visits and changes only when the interval does.
    interval_jiffies: [u64; 2],
    /// jiffies.
    pub last_balance: u64,
    pub nr_balance_failed: u32,
    /// ns.
    pub max_newidle_lb_cost: u64,
    /// jiffies.
    pub last_decay_max_lb_cost: u64,
    pub newidle_call: u32,
    pub newidle_success: u32,
    pub newidle_ratio: u32,
}

impl SdState {
    /// A domain's state as `sd_init()` leaves it, but for the balance
    /// interval, which [`Kernel::set_balance_interval`] sets.
    pub fn new(newidle_call: u32, newidle_success: u32, newidle_ratio: u32) -> Self {
        SdState { newidle_call, newidle_success, newidle_ratio, ..SdState::default() }
    }

    /// `sd->balance_interval`, ms.
    pub fn balance_interval(&self) -> u64 {
        self.balance_interval
    }

    /// `update_newidle_cost(sd, 0)`, as `sched_balance_domains()` calls it:
    /// no cost to record, so only the once-a-second decay of
    /// `max_newidle_lb_cost` by 253/256 (at `now`, jiffies). True when it
    /// decayed.
    fn decay_max_newidle_lb_cost(&mut self, now: u64, hz: u64) -> bool {
        if now > self.last_decay_max_lb_cost + hz {
            self.max_newidle_lb_cost = self.max_newidle_lb_cost * 253 / 256;
            self.last_decay_max_lb_cost = now;
            return true;
        }
        false
    }
}

/// The global `nohz` state.
#[derive(Clone, Debug, Default)]
pub struct Nohz {
    pub idle_cpus_mask: CpuSet,
    pub nr_cpus: u32,
    pub has_blocked: bool,
    pub needs_update: bool,
    /// jiffies.
    pub next_balance: u64,
    /// jiffies.
    pub next_blocked: u64,
}

impl Kernel {
    /// `jiffies`.
    pub fn jiffies(&self) -> u64 {
        debug_assert_eq!(self.jiffies, self.now / self.tick_ns);
        self.jiffies
    }

    /// `HZ`.
    pub(crate) fn hz(&self) -> u64 {
        self.hz
    }

    /// `msecs_to_jiffies()`.
    pub(crate) fn msecs_to_jiffies(&self, ms: u64) -> u64 {
        (ms * self.hz()).div_ceil(1000)
    }

    /// `max_load_balance_interval`: HZ·nr_cpus/10 jiffies.
    fn max_load_balance_interval(&self) -> u64 {
        self.max_lb_interval
    }

    /// `add_nr_running()`: a second task on a runqueue marks the root domain overloaded.
    pub(crate) fn add_nr_running(&mut self, cpu: usize, n: u32) {
        let prev = self.rqs[cpu].nr_running;
        self.touched.cpu(cpu);
        self.rqs[cpu].nr_running += n;
        if prev < 2 && self.rqs[cpu].nr_running >= 2 {
            let rd = self.rqs[cpu].rd;
            self.rds[rd].overloaded = true;
        }
    }

    /// `get_sd_balance_interval()`, in jiffies: kept by
    /// [`Kernel::set_balance_interval`] (this runs for every domain a
    /// balance pass visits, twice when it balances; issue 39).
    pub(crate) fn get_sd_balance_interval(&self, cpu: usize, sd: usize, busy: bool) -> u64 {
        let st = &self.sd_state[cpu][sd];
        debug_assert_eq!(st.interval_jiffies, self.sd_balance_interval_jiffies(cpu, sd, st.balance_interval));
        st.interval_jiffies[busy as usize]
    }

    /// Sets `sd->balance_interval` of `cpu`'s domain `sd` to `ms`.
    pub(crate) fn set_balance_interval(&mut self, cpu: usize, sd: usize, ms: u64) {
        let jiffies = self.sd_balance_interval_jiffies(cpu, sd, ms);
        let st = &mut self.sd_state[cpu][sd];
        st.balance_interval = ms;
        st.interval_jiffies = jiffies;
    }

    /// `get_sd_balance_interval()` of an interval of `ms`: idle, then busy
    /// (stretched by the domain's `busy_factor`, less a jiffy).
    fn sd_balance_interval_jiffies(&self, cpu: usize, sd: usize, ms: u64) -> [u64; 2] {
        let busy_factor = self.domains.cpus[cpu].domains[sd].busy_factor as u64;
        let idle = self.msecs_to_jiffies(ms);
        let busy = self.msecs_to_jiffies(ms * busy_factor).saturating_sub(1);
        let max = self.max_load_balance_interval();
        [idle.clamp(1, max), busy.clamp(1, max)]
    }

    /// `update_newidle_stats()`.
    fn update_newidle_stats(&mut self, cpu: usize, sd: usize, success: u32) {
        let st = &mut self.sd_state[cpu][sd];
        st.newidle_call += 1;
        st.newidle_success += success;
        if st.newidle_call >= 1024 {
            st.newidle_ratio = st.newidle_success;
            st.newidle_call /= 2;
            st.newidle_success /= 2;
        }
    }

    /// `update_newidle_cost()`: track the most expensive newidle balance,
    /// decaying it by 253/256 once a second. True when it decayed.
    fn update_newidle_cost(&mut self, cpu: usize, sd: usize, cost: u64, success: u32) -> bool {
        if cost > 0 {
            self.update_newidle_stats(cpu, sd, success);
        }
        let now = self.jiffies();
        let hz = self.hz();
        let st = &mut self.sd_state[cpu][sd];
        if cost > st.max_newidle_lb_cost {
            // With NEWIDLE_COST_BUMP the bumps stop at the sysctl, plus a
            // little (155213a2aed4's cap).
            st.max_newidle_lb_cost = if self.features.is_set(Feature::NEWIDLE_COST_BUMP) {
                cost.min(crate::fair::lb::SYSCTL_SCHED_MIGRATION_COST + 200)
            } else {
                cost
            };
            st.last_decay_max_lb_cost = now;
            return false;
        }
        st.decay_max_newidle_lb_cost(now, hz)
    }

    /// `sched_balance_domains()`: walk `cpu`'s domains bottom-up and balance
    /// those whose interval has expired.
    pub(crate) fn sched_balance_domains(&mut self, cpu: usize, mut idle: CpuIdleType, kind: BalanceKind) {
        let mut continue_balancing = true;
        let mut busy = idle != CpuIdleType::Idle && !self.sched_idle_cpu(cpu);
        let now = self.jiffies();
        let mut next_balance = now + 60 * self.hz();
        let mut update_next_balance = false;
        let mut need_decay = false;
        let mut max_cost = 0;
        let hz = self.hz();
        // The state is read through one borrow per step (the jiffies do
        // not move during the pass): the walk visits ~1 M domains in a
        // seed-000 sweep round (issue 39).
        for sd in 0..self.domains.cpus[cpu].domains.len() {
            let st = &mut self.sd_state[cpu][sd];
            need_decay = st.decay_max_newidle_lb_cost(now, hz);
            max_cost += st.max_newidle_lb_cost;
            if !continue_balancing {
                if need_decay {
                    continue;
                }
                break;
            }
            let mut interval = st.interval_jiffies[busy as usize];
            let mut last_balance = st.last_balance;
            if now >= last_balance + interval {
                if self.sched_balance_rq(cpu, sd, idle, kind, &mut continue_balancing) > 0 {
                    idle = if self.idle_cpu(cpu) { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
                    busy = idle == CpuIdleType::NotIdle && !self.sched_idle_cpu(cpu);
                }
                last_balance = now;
                self.sd_state[cpu][sd].last_balance = now;
                interval = self.get_sd_balance_interval(cpu, sd, busy);
            }
            let due = last_balance + interval;
            if next_balance > due {
                next_balance = due;
                update_next_balance = true;
            }
        }
        if need_decay {
            self.rqs[cpu].max_idle_balance_cost = crate::fair::lb::SYSCTL_SCHED_MIGRATION_COST.max(max_cost);
        }
        if update_next_balance {
            self.rqs[cpu].next_balance = next_balance;
        }
    }

    /// `sched_balance_trigger()`: raise SCHED_SOFTIRQ when balancing is due
    /// (returned), and always consider kicking the idle load balancer; a
    /// CPU of no domain (`on_null_domain()`: alone in its partition, or
    /// isolated) does neither.
    pub(crate) fn sched_balance_trigger(&mut self, cpu: usize) -> bool {
        if self.on_null_domain(cpu) {
            return false;
        }
        let due = self.jiffies() >= self.rqs[cpu].next_balance;
        self.nohz_balancer_kick(cpu);
        due
    }

    /// `on_null_domain()`: the CPU has no sched domain to balance in.
    pub(crate) fn on_null_domain(&self, cpu: usize) -> bool {
        self.domains.cpus[cpu].domains.is_empty()
    }

    /// `sched_balance_softirq()`: the kicked ILB balances for the idle CPUs;
    /// otherwise this CPU balances its own domains.
    pub(crate) fn sched_balance_softirq(&mut self, cpu: usize) {
        let idle = if self.rqs[cpu].idle_balance { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
        if self.nohz_idle_balance(cpu, idle) {
            return;
        }
        self.update_blocked_averages(cpu);
        let kind = if idle == CpuIdleType::Idle { BalanceKind::NohzIdle } else { BalanceKind::Periodic };
        self.sched_balance_domains(cpu, idle, kind);
    }

    /// `nohz_balance_enter_idle()`: a CPU whose tick stops joins the nohz mask.
    pub(crate) fn nohz_balance_enter_idle(&mut self, cpu: usize) {
        self.rqs[cpu].has_blocked_load = true;
        if !self.rqs[cpu].nohz_tick_stopped {
            if self.on_null_domain(cpu) {
                return;
            }
            self.rqs[cpu].nohz_tick_stopped = true;
            self.nohz.idle_cpus_mask.insert(cpu);
            self.nohz.nr_cpus += 1;
            self.set_cpu_sd_state_idle(cpu);
            self.nohz.needs_update = true;
        }
        self.nohz.has_blocked = true;
    }

    /// `nohz_balance_exit_idle()`: on the first tick after the CPU got busy.
    fn nohz_balance_exit_idle(&mut self, cpu: usize) {
        if !self.rqs[cpu].nohz_tick_stopped {
            return;
        }
        self.rqs[cpu].nohz_tick_stopped = false;
        self.nohz.idle_cpus_mask.remove(cpu);
        self.nohz.nr_cpus -= 1;
        self.set_cpu_sd_state_busy(cpu);
    }

    /// `set_cpu_sd_state_idle()`: the LLC counts this CPU out of `nr_busy_cpus`.
    fn set_cpu_sd_state_idle(&mut self, cpu: usize) {
        if self.domains.cpus[cpu].sd_llc.is_none() || self.rqs[cpu].llc_nohz_idle {
            return;
        }
        self.rqs[cpu].llc_nohz_idle = true;
        let i = self.domains.cpus[cpu].sd_llc_id;
        self.llc_shared[i].nr_busy_cpus -= 1;
    }

    /// `set_cpu_sd_state_busy()`: the LLC counts this CPU in `nr_busy_cpus` again.
    fn set_cpu_sd_state_busy(&mut self, cpu: usize) {
        if self.domains.cpus[cpu].sd_llc.is_none() || !self.rqs[cpu].llc_nohz_idle {
            return;
        }
        self.rqs[cpu].llc_nohz_idle = false;
        let i = self.domains.cpus[cpu].sd_llc_id;
        self.llc_shared[i].nr_busy_cpus += 1;
    }

    /// `nohz_balancer_kick()`, on every tick of a busy CPU: kick the idle
    /// load balancer when idle CPUs could take work from here.
    fn nohz_balancer_kick(&mut self, cpu: usize) {
        if self.rqs[cpu].idle_balance {
            return;
        }
        let now = self.jiffies();
        self.nohz_balance_exit_idle(cpu);
        if self.nohz.nr_cpus == 0 {
            return;
        }
        let mut flags = 0;
        if self.nohz.has_blocked && now > self.nohz.next_blocked {
            flags = NOHZ_STATS_KICK;
        }
        'out: {
            if now < self.nohz.next_balance {
                break 'out;
            }
            if self.rqs[cpu].nr_running >= 2 {
                flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                break 'out;
            }
            // A fair task on a CPU squeezed by RT/DL time (judged at `rq->sd`):
            // an idle CPU may have more to offer it.
            if !self.domains.cpus[cpu].domains.is_empty()
                && self.lb_h_nr(cpu) >= 1
                && self.cpu_capacity_reduced(cpu, cpu, 0)
            {
                flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                break 'out;
            }
            if let Some(sd) = self.domains.cpus[cpu].sd_asym_packing {
                let dom = &self.domains.cpus[cpu].domains[sd];
                let (span, dflags) = (dom.span, dom.flags);
                if span.and(&self.nohz.idle_cpus_mask).iter().any(|i| self.sched_asym(dflags, i, cpu)) {
                    flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                    break 'out;
                }
            }
            // Asymmetric capacity: kick only for a misfit task a bigger CPU
            // could take (`check_misfit_status()`); the LLC test is skipped.
            if self.domains.cpus[cpu].sd_asym_cpucapacity.is_some() {
                if self.rqs[cpu].misfit_task_load != 0 {
                    flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                }
                break 'out;
            }
            if self.domains.cpus[cpu].sd_llc.is_some() {
                let i = self.domains.cpus[cpu].sd_llc_id;
                if self.llc_shared[i].nr_busy_cpus > 1 {
                    flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                }
            }
        }
        if self.nohz.needs_update {
            flags |= NOHZ_NEXT_KICK;
        }
        if flags != 0 {
            self.kick_ilb(flags);
        }
    }

    /// `find_new_ilb()`: the first idle CPU of the nohz mask other than us.
    fn find_new_ilb(&self) -> Option<usize> {
        let this = self.exec_cpu;
        self.nohz.idle_cpus_mask.iter().find(|&c| c != this && self.idle_cpu(c))
    }

    /// `kick_ilb()`: send the nohz CSD IPI to the idle load balancer.
    fn kick_ilb(&mut self, flags: u32) {
        if flags & NOHZ_BALANCE_KICK != 0 {
            self.nohz.next_balance = self.jiffies() + 1;
        }
        let Some(ilb) = self.find_new_ilb() else { return };
        if self.rqs[ilb].nohz_flags & flags == flags {
            return;
        }
        let old = self.rqs[ilb].nohz_flags;
        self.rqs[ilb].nohz_flags |= flags;
        if old & NOHZ_KICK_MASK != 0 {
            return;
        }
        self.send_ipi(ilb, IpiKind::NohzKick);
    }

    /// Run `cpu`'s periodic balance as an idle CPU, from the context of
    /// `exec_cpu` (what the idle load balancer does for it). For tests and
    /// tools that want one balancing pass on a crafted state.
    pub fn run_idle_balance(&mut self, cpu: usize, now: u64, exec_cpu: usize, out: &mut Outbox) {
        self.entry(now, exec_cpu, out, |k| {
            k.update_rq_clock(cpu);
            k.sched_balance_domains(cpu, CpuIdleType::Idle, BalanceKind::NohzIdle);
        })
    }

    /// `nohz_csd_func()` + the SCHED_SOFTIRQ it raises: the kicked CPU runs
    /// the idle balance on behalf of the tickless idle CPUs.
    pub fn nohz_csd_func(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            let flags = std::mem::take(&mut k.rqs[cpu].nohz_flags) & NOHZ_KICK_MASK;
            k.rqs[cpu].nohz_idle_balance = flags;
            k.rqs[cpu].idle_balance = k.idle_cpu(cpu);
            k.sched_balance_softirq(cpu);
        })
    }

    /// `nohz_idle_balance()`.
    fn nohz_idle_balance(&mut self, cpu: usize, idle: CpuIdleType) -> bool {
        let flags = std::mem::take(&mut self.rqs[cpu].nohz_idle_balance);
        if flags == 0 {
            return false;
        }
        if idle != CpuIdleType::Idle {
            return false;
        }
        self._nohz_idle_balance(cpu, flags);
        true
    }

    /// `update_nohz_stats()`.
    fn update_nohz_stats(&mut self, cpu: usize) -> bool {
        if !self.rqs[cpu].has_blocked_load || !self.nohz.idle_cpus_mask.contains(cpu) {
            return false;
        }
        self.update_blocked_averages(cpu);
        self.rqs[cpu].has_blocked_load
    }

    /// `_nohz_idle_balance()`: for each idle CPU (wrapping from this one),
    /// refresh blocked load and balance its domains if due.
    fn _nohz_idle_balance(&mut self, this_cpu: usize, flags: u32) {
        let now = self.jiffies();
        let mut next_balance = now + 60 * self.hz();
        let mut has_blocked_load = false;
        let mut update_next_balance = false;
        if flags & NOHZ_STATS_KICK != 0 {
            self.nohz.has_blocked = false;
        }
        if flags & NOHZ_NEXT_KICK != 0 {
            self.nohz.needs_update = false;
        }
        let mut aborted = false;
        let mut scan = schedlab_topology::CpuWrap::new(this_cpu + 1, self.nr_cpus());
        while let Some(balance_cpu) = scan.next_in(&self.nohz.idle_cpus_mask) {
            if !self.idle_cpu(balance_cpu) {
                continue;
            }
            if !self.idle_cpu(this_cpu) && self.need_resched(this_cpu, false) {
                if flags & NOHZ_STATS_KICK != 0 {
                    has_blocked_load = true;
                }
                if flags & NOHZ_NEXT_KICK != 0 {
                    self.nohz.needs_update = true;
                }
                aborted = true;
                break;
            }
            if flags & NOHZ_STATS_KICK != 0 {
                has_blocked_load |= self.update_nohz_stats(balance_cpu);
            }
            if self.jiffies() >= self.rqs[balance_cpu].next_balance {
                self.update_rq_clock(balance_cpu);
                if flags & NOHZ_BALANCE_KICK != 0 {
                    self.sched_balance_domains(balance_cpu, CpuIdleType::Idle, BalanceKind::NohzIdle);
                }
            }
            if next_balance > self.rqs[balance_cpu].next_balance {
                next_balance = self.rqs[balance_cpu].next_balance;
                update_next_balance = true;
            }
        }
        if !aborted {
            if update_next_balance {
                self.nohz.next_balance = next_balance;
            }
            if flags & NOHZ_STATS_KICK != 0 {
                self.nohz.next_blocked = now + self.msecs_to_jiffies(crate::pelt::LOAD_AVG_PERIOD);
            }
        }
        if has_blocked_load {
            self.nohz.has_blocked = true;
        }
    }

    /// Modeled cost of one newidle `sched_balance_rq()` on domain `sd`:
    /// the CPU time it is charged (`[costs.kernel] balance_per_cpu`) when
    /// that is set, as the kernel measures its balance's own time, else
    /// `[costs] newidle_balance_ns_per_cpu` (a figure the gate alone uses).
    fn newidle_cost(&self, cpu: usize, sd: usize) -> u64 {
        let charged = self.topo.costs.kernel.balance_per_cpu_ns;
        let per_cpu = if charged > 0 { charged } else { self.topo.costs.newidle_balance_ns_per_cpu };
        per_cpu * self.domains.cpus[cpu].domains[sd].span_weight as u64
    }

    /// `sched_balance_newidle()`: a CPU about to go idle tries to pull work,
    /// domain by domain, while its expected idle time covers the cost.
    /// Returns >0 when a task was pulled (or appeared).
    pub(crate) fn sched_balance_newidle(&mut self, cpu: usize) -> i32 {
        let mut next_balance = self.jiffies() + self.hz();
        let mut continue_balancing = true;
        let mut pulled_task = 0;
        self.update_misfit_status(None, cpu);
        if self.rqs[cpu].ttwu_pending {
            return 0;
        }
        self.rqs[cpu].idle_stamp = Some(self.rqs[cpu].clock);
        let ndom = self.domains.cpus[cpu].domains.len();
        if ndom == 0 {
            return 0;
        }
        let out = |k: &mut Kernel, next_balance: u64, pulled: i32| {
            if k.rqs[cpu].next_balance > next_balance {
                k.rqs[cpu].next_balance = next_balance;
            }
            if pulled > 0 {
                k.rqs[cpu].idle_stamp = None;
            } else {
                k.nohz_newidle_balance(cpu);
            }
            pulled
        };
        // NEWIDLE_MIGRATION_COST: the first term of this gate before
        // c5b0a7eefc70 removed it (v5.16).
        let short_idle = self.feat(Feature::NEWIDLE_MIGRATION_COST)
            && self.rqs[cpu].avg_idle < crate::fair::lb::SYSCTL_SCHED_MIGRATION_COST;
        if short_idle
            || !self.rds[self.rqs[cpu].rd].overloaded
            || self.rqs[cpu].avg_idle < self.sd_state[cpu][0].max_newidle_lb_cost
        {
            let due = self.sd_state[cpu][0].last_balance + self.get_sd_balance_interval(cpu, 0, false);
            next_balance = next_balance.min(due);
            return out(self, next_balance, 0);
        }
        self.update_blocked_averages(cpu);
        let charged_before = self.charged_ns;
        let mut balanced = false;
        let mut curr_cost = 0;
        for sd in 0..ndom {
            let due = self.sd_state[cpu][sd].last_balance + self.get_sd_balance_interval(cpu, sd, false);
            next_balance = next_balance.min(due);
            if self.rqs[cpu].avg_idle < curr_cost + self.sd_state[cpu][sd].max_newidle_lb_cost {
                break;
            }
            if self.domains.cpus[cpu].domains[sd].flags & SD_BALANCE_NEWIDLE != 0 {
                let mut weight = 1;
                if self.feat(Feature::NI_RANDOM) {
                    let d1k = (self.next_random() % 1024) as u32;
                    weight = 1 + self.sd_state[cpu][sd].newidle_ratio;
                    if d1k > weight {
                        self.update_newidle_stats(cpu, sd, 0);
                        continue;
                    }
                    weight = (1024 + weight / 2) / weight;
                }
                balanced = true;
                pulled_task = self.sched_balance_rq(
                    cpu,
                    sd,
                    CpuIdleType::NewlyIdle,
                    BalanceKind::Newidle,
                    &mut continue_balancing,
                ) as i32;
                let domain_cost = self.newidle_cost(cpu, sd);
                curr_cost += domain_cost;
                // NEWIDLE_COST_BUMP (155213a2aed4): a balance that pulled
                // nothing is remembered as half again the dearest so far.
                let fed = if self.feat(Feature::NEWIDLE_COST_BUMP) && pulled_task == 0 {
                    3 * self.sd_state[cpu][sd].max_newidle_lb_cost / 2
                } else {
                    domain_cost
                };
                self.update_newidle_cost(cpu, sd, fed, weight * (pulled_task > 0) as u32);
            }
            if pulled_task > 0 || !continue_balancing {
                break;
            }
        }
        if curr_cost > self.rqs[cpu].max_idle_balance_cost {
            self.rqs[cpu].max_idle_balance_cost = curr_cost;
        }
        let charged = self.charged_ns - charged_before;
        self.stats.cpu_newidle_ns[cpu] += charged;
        if charged > 0 {
            // The balance's time passes before the CPU can idle (or run what it found).
            self.rqs[cpu].newidle_until = self.busy_until[cpu].max(self.now);
        }
        if balanced {
            self.stats.newidle_balances[cpu] += 1;
            self.stats.newidle_failed[cpu] += u64::from(pulled_task == 0);
        }
        if self.rqs[cpu].cfs.h_nr_queued > 0 && pulled_task == 0 {
            pulled_task = 1;
        }
        out(self, next_balance, pulled_task)
    }

    /// `nohz_newidle_balance()`: flag a blocked-load update for the idle loop.
    fn nohz_newidle_balance(&mut self, cpu: usize) {
        if self.rqs[cpu].avg_idle < crate::fair::lb::SYSCTL_SCHED_MIGRATION_COST {
            return;
        }
        if !self.nohz.has_blocked || self.jiffies() < self.nohz.next_blocked {
            return;
        }
        self.rqs[cpu].nohz_flags |= NOHZ_NEWILB_KICK;
    }

    /// `update_avg(&rq->avg_idle, delta)` at wakeup of an idle CPU (`ttwu_do_activate()`).
    pub(crate) fn update_avg_idle(&mut self, cpu: usize) {
        if let Some(stamp) = self.rqs[cpu].idle_stamp.take() {
            let delta = self.rqs[cpu].clock.saturating_sub(stamp);
            let max = 2 * self.rqs[cpu].max_idle_balance_cost;
            let rq = &mut self.rqs[cpu];
            let avg = rq.avg_idle as i64 + (delta as i64 - rq.avg_idle as i64) / 8;
            rq.avg_idle = (avg.max(0) as u64).min(max);
        }
    }

    /// The kernel model's own PRNG (`sched_rng()` for NI_RANDOM), seeded per run.
    pub(crate) fn next_random(&mut self) -> u64 {
        // xorshift64*: small, and the stream is pinned by the seed.
        let mut x = self.rng_state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng_state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
