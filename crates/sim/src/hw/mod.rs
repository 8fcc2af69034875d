//! The modeled hardware: how fast each CPU executes the thread it runs, what
//! a context switch, a migration, an IPI and leaving idle cost, when the
//! periodic tick fires, which idle state each idle CPU sits in (`idle`: the
//! cpuidle governors), and the run's seeded noise (`noise`: interrupts and
//! steal; burst and IPI jitter).
//!
//! Costs follow the distance between the CPUs involved (`Topology::distance`:
//! SMT sibling, shared LLC, same package, another node): an IPI's delivery
//! and a migrated task's cache refill. Leaving idle costs the exit latency of
//! the state the governor chose, drawn from the state's measured curve when
//! it has one (a vCPU's halt gets slower the longer it lasted).
//!
//! Simplifications: SMT siblings slow each other by a fixed percentage; the
//! kernel's own CPU time is free apart from the switch cost; interference is
//! time taken from a CPU, not events in the trace. The engine asks; this
//! module answers from the topology's numbers and keeps the per-CPU state.
//!
//! Work is counted in `ns · 1024 · 100` units so that progress per
//! nanosecond is exactly `speed × SMT speed% × frequency / max frequency`,
//! the speed being the CPU's
//! capacity or, on an Intel hybrid part, its HWP highest performance scaled
//! to 1024 (`Topology::cpu_speed()`: the hardware, whatever capacity the
//! kernel version believes).

mod idle;
mod noise;

pub(crate) use idle::IdleEntry;
pub(crate) use noise::Arrival;

use crate::rng::Rng;
use idle::CpuIdle;
use noise::Noise;
use schedlab_topology::{NoiseKind, Topology};

/// Exit-latency draws are cut at this multiple of the state's p99 (assumed:
/// the probes' maxima stay within it).
const EXIT_MAX_OVER_P99: u64 = 10;

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
    /// The cpuidle state while idle, and the governor's history.
    idle: CpuIdle,
    /// Interrupt or steal in progress until then: nothing else runs on the CPU.
    busy_until: u64,
    /// Expiry times of the hrtimers armed on this CPU (the sleeps it started),
    /// for the governor's "next timer"; pruned as time passes.
    timers: Vec<u64>,
}

/// The machine a run executes on.
pub(crate) struct Hardware<'a> {
    topo: &'a Topology,
    cpus: Vec<CpuHw>,
    /// SMT siblings of each CPU, itself excluded.
    siblings: Vec<Vec<usize>>,
    /// Each CPU's speed alone on its core (`Topology::cpu_speed()`): the
    /// capacity, or on a hybrid part its HWP highest performance scaled.
    speed: Vec<u64>,
    /// Burst, IPI and exit-latency jitter, drawn in event order.
    rng: Rng,
    /// Interference, one generator per (source, CPU), independent of the schedule.
    noise: Noise,
}

impl<'a> Hardware<'a> {
    pub fn new(topo: &'a Topology, seed: u64) -> Self {
        Hardware {
            topo,
            cpus: vec![Default::default(); topo.nr_cpus()],
            siblings: (0..topo.nr_cpus()).map(|c| topo.smt_mask(c).iter().filter(|&s| s != c).collect()).collect(),
            speed: (0..topo.nr_cpus()).map(|c| topo.cpu_speed(c) as u64).collect(),
            rng: Rng::new(seed),
            noise: Noise::new(topo, seed),
        }
    }

    /// The machine's cost table.
    pub fn costs(&self) -> &schedlab_topology::Costs {
        &self.topo.costs
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    pub fn siblings(&self, cpu: usize) -> &[usize] {
        &self.siblings[cpu]
    }

    /// Delay from the kernel's request on `from` to the handler on `to`. A
    /// target in a polling idle state needs no IPI, only to leave the state;
    /// a halted one needs the IPI first, then its exit; a busy one takes the
    /// interrupt. A target inside an interrupt or stolen by the host takes
    /// it when that ends.
    pub fn ipi_latency(&mut self, from: usize, to: usize, polled: bool, idle: bool, now: u64) -> u64 {
        let mut delay = 0;
        if !polled {
            delay += self.topo.level_costs(self.topo.distance(from, to)).ipi_ns;
            if self.topo.jitter.ipi_ns > 0 {
                delay += self.rng.below_incl(self.topo.jitter.ipi_ns);
            }
        }
        let busy_for = self.cpus[to].busy_until.saturating_sub(now);
        if busy_for > 0 {
            return delay.max(busy_for);
        }
        if idle {
            delay += self.exit_cost(to, now);
        }
        delay
    }

    /// What leaving its idle state costs `cpu` now: the state's exit
    /// latency, or a draw from its measured curve at the time spent in it.
    pub fn exit_cost(&mut self, cpu: usize, now: u64) -> u64 {
        self.draw_exit(cpu, now, schedlab_topology::IdleState::exit_after)
    }

    /// What leaving its idle state costs `cpu` when its own timer ends the
    /// idle: a draw from the state's timer curve (in a VM the host's hrtimer
    /// must fire and wake the vCPU first), the IPI curve when it has none.
    pub fn timer_exit_cost(&mut self, cpu: usize, now: u64) -> u64 {
        self.draw_exit(cpu, now, schedlab_topology::IdleState::timer_exit_after)
    }

    /// A timer's idle exit on `cpu` and the part of it held back until
    /// after the handler (`idle_exit_tail_ns` / `_p99_ns`, at most the
    /// exit). Both are drawn at one quantile — assumed: the held-back part
    /// is a part of the exit, so a long exit has a long tail (independent
    /// draws would cut the tail's p99 at the exit's typical value). Without
    /// a tail in the topology this is [`Self::timer_exit_cost`], the same
    /// draws.
    pub fn timer_exit_and_tail(&mut self, cpu: usize, now: u64) -> (u64, u64) {
        let (t50, t99) = (self.topo.costs.idle_exit_tail_ns, self.topo.costs.idle_exit_tail_p99_ns);
        if t50 == 0 {
            return (self.timer_exit_cost(cpu, now), 0);
        }
        let c = &self.cpus[cpu].idle;
        let (p50, p99) =
            schedlab_topology::IdleState::timer_exit_after(&self.topo.idle.states[c.state()], c.in_state_for(now));
        let u = self.rng.unit();
        let exit = crate::rng::lognormal_at(u, p50, p99, p99.saturating_mul(EXIT_MAX_OVER_P99));
        let tail = crate::rng::lognormal_at(u, t50, t99, t99.saturating_mul(EXIT_MAX_OVER_P99));
        (exit, tail.min(exit))
    }

    /// One exit draw from the (p50, p99) `curve` gives for the time `cpu`
    /// has spent in its state.
    fn draw_exit(&mut self, cpu: usize, now: u64, curve: fn(&schedlab_topology::IdleState, u64) -> (u64, u64)) -> u64 {
        let c = &self.cpus[cpu].idle;
        let (p50, p99) = curve(&self.topo.idle.states[c.state()], c.in_state_for(now));
        self.rng.lognormal_p50_p99(p50, p99, p99.saturating_mul(EXIT_MAX_OVER_P99))
    }

    /// An interrupt or steal holds `cpu` until this time (0 if none).
    pub fn busy_until(&self, cpu: usize) -> u64 {
        self.cpus[cpu].busy_until
    }

    /// An idle CPU woken by an interrupt spends `ns` more leaving its state.
    pub fn extend_busy(&mut self, cpu: usize, ns: u64) {
        self.cpus[cpu].busy_until += ns;
    }

    /// A CPU about to idle still runs kernel code for `ns` from `now` (the
    /// newidle balance that found nothing): it idles after that.
    pub fn hold_busy(&mut self, cpu: usize, now: u64, ns: u64) {
        let b = &mut self.cpus[cpu].busy_until;
        *b = (*b).max(now) + ns;
    }

    /// `cpu` goes idle at `now`: the governor picks a state. The engine sets
    /// the kernel's polling flag from it and arms its poll timeout.
    pub fn enter_idle(&mut self, cpu: usize, now: u64) -> IdleEntry {
        let tick = self.topo.tick_ns();
        let hw = &mut self.cpus[cpu];
        hw.timers.retain(|&t| t > now);
        let next_timer = hw.timers.iter().copied().min();
        let next_tick = (now / tick + 1) * tick;
        hw.idle.enter(&self.topo.idle, tick, now, next_timer, next_tick)
    }

    /// A polling state's time limit on `cpu`: the new state, or `None` when
    /// the timeout is stale (the CPU left idle or moved on).
    pub fn idle_timeout(&mut self, cpu: usize, gen: u64, now: u64) -> Option<IdleEntry> {
        let tick = self.topo.tick_ns();
        let hw = &mut self.cpus[cpu];
        if !hw.idle.is_idle() || hw.idle.gen != gen {
            return None;
        }
        hw.timers.retain(|&t| t > now);
        let next_timer = hw.timers.iter().copied().min();
        Some(hw.idle.poll_timeout(&self.topo.idle, tick, now, next_timer))
    }

    /// `cpu` leaves idle at `now` (it runs a task or handles an interrupt).
    pub fn leave_idle(&mut self, cpu: usize, now: u64) {
        self.cpus[cpu].idle.leave(&self.topo.idle, now);
    }

    pub fn is_idle(&self, cpu: usize) -> bool {
        self.cpus[cpu].idle.is_idle()
    }

    /// A sleep's hrtimer is armed on `cpu`, expiring at `at`.
    pub fn arm_timer(&mut self, cpu: usize, at: u64) {
        self.cpus[cpu].timers.push(at);
    }

    /// A sleep's hrtimer armed for `at` on `cpu` ran before `at` (another
    /// interrupt fell inside its range): it no longer bounds the idle time.
    pub fn disarm_timer(&mut self, cpu: usize, at: u64) {
        let timers = &mut self.cpus[cpu].timers;
        if let Some(i) = timers.iter().position(|&t| t == at) {
            timers.swap_remove(i);
        }
    }

    /// The first tick boundary after `now` (ticks fall on multiples of the period).
    pub fn tick_after(&self, now: u64) -> u64 {
        let tick = self.topo.tick_ns();
        (now / tick + 1) * tick
    }

    /// When the tick next fires on `cpu`, if it runs there (a busy CPU's).
    pub fn next_tick(&self, cpu: usize, now: u64) -> Option<u64> {
        self.cpus[cpu].tick_armed.then(|| self.tick_after(now))
    }

    /// The noise streams: (CPU, first arrival) for each, by index.
    pub fn noise_starts(&mut self) -> Vec<(usize, u64)> {
        (0..self.noise.streams.len()).map(|i| (self.noise.streams[i].cpu, self.noise.first(i))).collect()
    }

    /// The CPU noise stream `i` interferes with.
    pub fn noise_cpu(&self, i: usize) -> usize {
        self.noise.streams[i].cpu
    }

    /// Noise stream `i` arrives at `now` on its CPU: how long it holds the
    /// CPU, recorded as the CPU's interference window, and when it comes
    /// next. A busy-only source (the tick) on an idle CPU does nothing:
    /// the duration is 0.
    pub fn noise_arrives(&mut self, i: usize, now: u64, cpu_busy: bool) -> (usize, Arrival) {
        let mut a = self.noise.arrive(self.topo, i, now);
        let cpu = self.noise.streams[i].cpu;
        if self.topo.noise[self.noise.streams[i].source].busy_only && !cpu_busy {
            a.duration_ns = 0;
            return (cpu, a);
        }
        let hw = &mut self.cpus[cpu];
        hw.busy_until = hw.busy_until.max(now) + a.duration_ns;
        (cpu, a)
    }

    /// Whether an arrival of `kind` wakes an idle CPU (a steal does not:
    /// the halted vCPU does not notice the host running something else).
    pub fn noise_wakes_idle(kind: NoiseKind) -> bool {
        kind != NoiseKind::Steal
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

    /// What the incoming thread pays before it executes on `cpu`: the
    /// switch, plus a cache refill that grows with the distance from the
    /// CPU it last ran on.
    pub fn switch_in_cost(&self, last_cpu: Option<usize>, cpu: usize) -> u64 {
        let refill = match last_cpu {
            Some(last) => self.topo.level_costs(self.topo.distance(last, cpu)).migration_cold_ns,
            None => 0,
        };
        self.topo.costs.context_switch_ns + refill
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

    /// Recompute the speed of `cpu` from whether an SMT sibling is busy and
    /// its frequency (`freq_scale`: the current frequency in 1024ths of the
    /// maximum, `arch_scale_freq_capacity()`). [assumed] Work scales with
    /// the clock: a CPU-bound loop at half the frequency takes twice as
    /// long (memory stalls, which do not scale, are not modeled).
    pub fn update_rate(&mut self, cpu: usize, busy: impl Fn(usize) -> bool, freq_scale: u64) {
        let cap = self.speed[cpu];
        let sibling_busy = self.siblings[cpu].iter().any(|&s| busy(s));
        let pct = if sibling_busy { self.topo.costs.smt_speed_pct as u64 } else { 100 };
        self.cpus[cpu].rate = (cap * pct * freq_scale) >> 10;
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
