//! The modeled hardware: how fast each CPU executes the thread it runs, what
//! a context switch, a migration, an IPI and leaving idle cost, when the
//! periodic tick fires, and the run's seeded noise on bursts and IPIs.
//!
//! Simplifications: one idle state per machine (a fixed exit latency, no
//! cpuidle governor); every IPI costs the same whatever the distance between
//! sender and target; a migration's cache refill is one flat charge; SMT
//! siblings slow each other by a fixed percentage; the kernel's own CPU time
//! is free apart from the switch cost. The engine asks; this module answers
//! from the topology's numbers and keeps the per-CPU timing state, so the
//! richer models (cpuidle states, distance-dependent costs) grow here.
//!
//! Work is counted in `ns · 1024 · 100` units so that progress per
//! nanosecond is exactly `capacity × speed%`.

use crate::rng::Rng;
use schedlab_topology::Topology;

/// Work units per nanosecond at capacity 1024 and full speed.
pub const UNITS_PER_NS: u64 = 1024 * 100;

/// Per-CPU timing state.
#[derive(Clone, Debug, Default)]
pub(crate) struct CpuHw {
    /// Bumped whenever the pending `CpuWork` event becomes stale. The queue
    /// replaces or cancels stale per-CPU events itself; debug builds assert
    /// that no stale one pops (the generations of `Tick` and `SwitchDone` too).
    gen: u64,
    tick_gen: u64,
    tick_armed: bool,
    /// Bumped per switch so a stale `SwitchDone` cannot finish a later one.
    switch_gen: u64,
    /// The current thread executes user code from this time (after the switch cost).
    exec_from: u64,
    /// Work units per ns for the current thread, as of `exec_from`.
    rate: u64,
}

/// The machine a run executes on.
pub(crate) struct Hardware<'a> {
    topo: &'a Topology,
    cpus: Vec<CpuHw>,
    /// SMT siblings of each CPU, itself excluded.
    siblings: Vec<Vec<usize>>,
    /// The run's only randomness: burst and IPI jitter, drawn in event order.
    rng: Rng,
}

impl<'a> Hardware<'a> {
    pub fn new(topo: &'a Topology, seed: u64) -> Self {
        Hardware {
            topo,
            cpus: vec![Default::default(); topo.nr_cpus()],
            siblings: (0..topo.nr_cpus()).map(|c| topo.smt_mask(c).iter().filter(|&s| s != c).collect()).collect(),
            rng: Rng::new(seed),
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    pub fn siblings(&self, cpu: usize) -> &[usize] {
        &self.siblings[cpu]
    }

    /// Delay from the kernel's request to the target's handler. A polling
    /// idle CPU only needs to leave its idle state; a halted one needs the
    /// IPI first; a busy one takes the interrupt.
    pub fn ipi_latency(&mut self, polled: bool, idle: bool) -> u64 {
        let costs = &self.topo.costs;
        let mut delay = if polled { 0 } else { costs.ipi_ns };
        if idle {
            delay += costs.idle_exit_ns;
        }
        if !polled && self.topo.jitter.ipi_ns > 0 {
            delay += self.rng.below_incl(self.topo.jitter.ipi_ns);
        }
        delay
    }

    /// Exit latency of the idle state, paid by a timer that fires on an idle CPU.
    pub fn idle_exit_ns(&self) -> u64 {
        self.topo.costs.idle_exit_ns
    }

    /// The work of a `run` burst of `ns`, scaled by the burst jitter.
    pub fn burst_work(&mut self, ns: u64) -> u64 {
        let jitter = self.topo.jitter.burst_pct;
        let mut work = ns as u128 * UNITS_PER_NS as u128;
        if jitter > 0.0 {
            let f = 1.0 + jitter / 100.0 * (2.0 * self.rng.unit_f64() - 1.0);
            work = (work as f64 * f) as u128;
        }
        work.min(u64::MAX as u128) as u64
    }

    /// The direct cost of a context switch, charged to the CPU.
    pub fn context_switch_ns(&self) -> u64 {
        self.topo.costs.context_switch_ns
    }

    /// What the incoming thread pays before it executes: the switch, plus a
    /// cache refill when it last ran on another CPU.
    pub fn switch_in_cost(&self, migrated: bool) -> u64 {
        let mut cost = self.topo.costs.context_switch_ns;
        if migrated {
            cost += self.topo.costs.migration_cold_ns;
        }
        cost
    }

    /// The current thread of `cpu` executes user code from `at`.
    pub fn set_exec_from(&mut self, cpu: usize, at: u64) {
        self.cpus[cpu].exec_from = at;
    }

    pub fn exec_from(&self, cpu: usize) -> u64 {
        self.cpus[cpu].exec_from
    }

    /// Work units per ns of the current thread of `cpu`.
    pub fn rate(&self, cpu: usize) -> u64 {
        self.cpus[cpu].rate
    }

    /// Recompute the speed of `cpu` from whether an SMT sibling is busy.
    pub fn update_rate(&mut self, cpu: usize, busy: impl Fn(usize) -> bool) {
        let cap = self.topo.cpus[cpu].capacity as u64;
        let sibling_busy = self.siblings[cpu].iter().any(|&s| busy(s));
        self.cpus[cpu].rate = cap * if sibling_busy { self.topo.costs.smt_speed_pct as u64 } else { 100 };
    }

    /// The work `cpu` has done since it was last asked, up to `now`.
    pub fn advance(&mut self, cpu: usize, now: u64) -> u64 {
        let hw = &mut self.cpus[cpu];
        if now > hw.exec_from {
            let done = (now - hw.exec_from).saturating_mul(hw.rate);
            hw.exec_from = now;
            done
        } else {
            0
        }
    }

    /// A new op boundary is planned on `cpu`: the generation that marks it.
    pub fn next_work_gen(&mut self, cpu: usize) -> u64 {
        self.cpus[cpu].gen += 1;
        self.cpus[cpu].gen
    }

    pub fn work_gen(&self, cpu: usize) -> u64 {
        self.cpus[cpu].gen
    }

    /// Start the periodic tick of a CPU that became busy: when it fires and
    /// its generation, or `None` when it already runs.
    pub fn arm_tick(&mut self, cpu: usize, now: u64) -> Option<(u64, u64)> {
        let hw = &mut self.cpus[cpu];
        if hw.tick_armed {
            return None;
        }
        hw.tick_armed = true;
        hw.tick_gen += 1;
        let tick = self.topo.tick_ns();
        Some(((now / tick + 1) * tick, hw.tick_gen))
    }

    /// Stop the tick of a CPU that went idle (NOHZ idle); true if it ran.
    pub fn disarm_tick(&mut self, cpu: usize) -> bool {
        let hw = &mut self.cpus[cpu];
        if !hw.tick_armed {
            return false;
        }
        hw.tick_armed = false;
        hw.tick_gen += 1;
        true
    }

    /// The tick of generation `gen` fires: false when it was stale.
    pub fn tick_fired(&mut self, cpu: usize, gen: u64) -> bool {
        let hw = &mut self.cpus[cpu];
        debug_assert_eq!(gen, hw.tick_gen, "the queue replaced or cancelled this stale Tick");
        if gen != hw.tick_gen {
            return false;
        }
        hw.tick_armed = false;
        true
    }

    /// A context switch away from a task starts: the generation of its end.
    pub fn start_switch(&mut self, cpu: usize) -> u64 {
        self.cpus[cpu].switch_gen += 1;
        self.cpus[cpu].switch_gen
    }

    /// The switch of generation `gen` completes: false when it was stale.
    pub fn switch_done(&self, cpu: usize, gen: u64) -> bool {
        let current = self.cpus[cpu].switch_gen;
        debug_assert_eq!(gen, current, "the queue replaced or cancelled this stale SwitchDone");
        gen == current
    }
}
