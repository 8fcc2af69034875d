//! What the runner's probes measured on the host, and the arithmetic that
//! turns those samples into topology values. Pure: the probes live in
//! `schedlab-runner` (they run threads); this is what can be tested with
//! synthetic samples.

use crate::Distance;

/// Order statistics of a set of samples (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Percentiles {
    pub n: usize,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl Percentiles {
    /// Nearest-rank percentiles; `None` for no samples.
    pub fn of(samples: &[u64]) -> Option<Percentiles> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_unstable();
        let rank = |p: f64| s[((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        Some(Percentiles { n: s.len(), p50: rank(0.50), p99: rank(0.99), max: s[s.len() - 1] })
    }
}

/// Wakeups from one CPU to another at one distance level.
#[derive(Clone, Debug, PartialEq)]
pub struct WakeProbe {
    pub level: Distance,
    /// Kernel CPU numbers.
    pub waker: usize,
    pub wakee: usize,
    /// (idle length the waker waited before waking, wakeup latency) per idle length.
    pub by_idle: Vec<(u64, Percentiles)>,
    /// Wakeup latency while the wakee's CPU runs a nice-19 spinner: the
    /// wakeup preempts (IPI + switch), no idle exit. `None` if it failed.
    pub busy: Option<Percentiles>,
    /// How long the waker's FUTEX_WAKE call took per idle length of the
    /// wakee's CPU (the same idle lengths as `by_idle`): the wakeup's work
    /// on the waker, the IPI's sending included. A guest's host keeps a
    /// vCPU that halted briefly cheap to wake, so the sending depends on it.
    pub send_by_idle: Vec<(u64, Percentiles)>,
    /// The same onto the busy CPU (a direct activation and a resched IPI).
    pub send_busy: Option<Percentiles>,
}

/// Oversleeps of an absolute CLOCK_MONOTONIC sleep on one CPU: the CPU's
/// own timer ends each idle, no other CPU is involved.
#[derive(Clone, Debug, PartialEq)]
pub struct TimerProbe {
    /// Kernel CPU number.
    pub cpu: usize,
    /// Timer slack the sleeper ran with, ns.
    pub slack_ns: u64,
    /// (idle length = sleep length, oversleep) per idle length.
    pub by_idle: Vec<(u64, Percentiles)>,
    /// Oversleep while a nice-19 spinner keeps the CPU busy: the timer
    /// interrupt preempts it, no idle exit. `None` if it failed.
    pub busy: Option<Percentiles>,
}

/// The per-CPU spinners' view of interference.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseProbe {
    /// How long each spinner ran, ns.
    pub duration_ns: u64,
    /// How many CPUs had a spinner.
    pub cpus: usize,
    /// The gap threshold, ns: clock reads further apart than this count.
    pub threshold_ns: u64,
    /// Every gap seen, ns, except those with an involuntary context switch
    /// inside (another task ran: that is load, not noise).
    pub gaps: Vec<u64>,
    /// Gaps left out because another task ran in them.
    pub preempted: usize,
    /// /proc/stat steal over the probe, summed over the spinners' CPUs, ns,
    /// less one USER_HZ tick (10 ms) per CPU whose counter rose: that much
    /// may be the counter's rounding.
    pub steal_ns: u64,
    /// The same without the rounding taken off.
    pub steal_raw_ns: u64,
    /// Interrupts the kernel counted on the spinners' CPUs over the probe
    /// (every row of /proc/interrupts, the local timer included), or `None`
    /// when the file could not be read. Gaps beyond this count are not the
    /// kernel's own interrupts: in a VM, the host running something else
    /// on the vCPU's physical CPU.
    pub interrupts: Option<u64>,
}

impl NoiseProbe {
    /// CPU-seconds the spinners ran: what every rate is per.
    pub fn cpu_secs(&self) -> f64 {
        self.duration_ns as f64 * self.cpus.max(1) as f64 / 1e9
    }
}

/// The blocking-window probe (`schedlab_runner` probe `window`): per delay
/// of the waker's `FUTEX_WAKE` after the waiter's stamp before its
/// `FUTEX_WAIT`, how many of the samples returned without sleeping.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowProbe {
    pub waker: usize,
    pub waiter: usize,
    /// (delay ns, samples that did not sleep, samples), by delay.
    pub points: Vec<(u64, usize, usize)>,
}

impl WindowProbe {
    /// The window's end read as a distribution over the delays: its
    /// quantile `q` is the first delay at which at most a share `1 - q` of
    /// the waits returned without sleeping, linear between the delays
    /// around it. `None` when the share never falls that low.
    pub fn end_quantile(&self, q: f64) -> Option<u64> {
        let share = |&(_, awake, n): &(u64, usize, usize)| awake as f64 / n.max(1) as f64;
        let target = 1.0 - q;
        let mut prev: Option<(u64, f64)> = None;
        for p in &self.points {
            let (d, f) = (p.0, share(p));
            if f <= target {
                return Some(match prev {
                    Some((d0, f0)) if f0 > f => (d0 as f64 + (d - d0) as f64 * (f0 - target) / (f0 - f)).round() as u64,
                    _ => d,
                });
            }
            prev = Some((d, f));
        }
        None
    }

    /// The end's median, p99 and largest (the first delay with no awake
    /// sample), as [`Percentiles`].
    pub fn end(&self) -> Option<Percentiles> {
        Some(Percentiles {
            n: self.points.iter().map(|p| p.2).sum(),
            p50: self.end_quantile(0.5)?,
            p99: self.end_quantile(0.99)?,
            max: self.end_quantile(1.0)?,
        })
    }
}

/// Everything the probes measured; any part may be missing (skipped or failed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// Nearest level first.
    pub wake: Vec<WakeProbe>,
    /// The timer wakeup probe on one CPU.
    pub timer: Option<TimerProbe>,
    /// Per-switch cost: same-CPU ping-pong round trip / 2.
    pub switch: Option<Percentiles>,
    pub noise: Option<NoiseProbe>,
    /// An eventfd `write()` with no waiter, per call.
    pub syscall: Option<Percentiles>,
    /// A `FUTEX_WAIT` that returns `-EAGAIN` (the word changed), per call.
    pub futex_wait_eagain: Option<Percentiles>,
    /// A `FUTEX_WAKE` with nobody queued, per call.
    pub futex_wake_none: Option<Percentiles>,
    /// The blocking window's end (see [`WindowProbe::end`]).
    pub window: Option<Percentiles>,
    /// One-way cache-line latency between the nearest pair of CPUs probed.
    pub line: Option<Percentiles>,
    /// A `write()` to `trace_marker` while tracing records, per call.
    pub marker: Option<Percentiles>,
    /// One captured sched tracepoint: the switch probe with the capture's
    /// events on minus without, per event.
    pub tracepoint: Option<Percentiles>,
    /// Events the traced switch probe wrote per handoff.
    pub events_per_handoff: Option<f64>,
    /// A timer wakeup onto a busy CPU, as the capture records it: its
    /// `sched_wakeup` to the `sched_switch` into the woken task.
    pub timer_wake_to_switch: Option<Percentiles>,
    /// The same for a timer ending an idle CPU's idle (1 ms sleeps), with the CPU it was recorded on.
    pub timer_idle_wake_to_switch: Option<(usize, Percentiles)>,
    /// What was skipped or failed, and why.
    pub notes: Vec<String>,
    /// Wall time of the whole probe run, ns.
    pub elapsed_ns: u64,
    /// Probe rounds merged into this (`host::merge_rounds`); 0 or 1: one run.
    pub rounds: usize,
}

impl Measured {
    /// The figures a disturbed round gives: a wakeup or send percentile
    /// beyond the longest latency a topology file accepts (100 ms), which
    /// no idle exit takes; it is another task or the hypervisor holding the
    /// CPU. Each as "probe wake 0->1: p99 145.3ms after 50us idle".
    pub fn disturbed(&self) -> Vec<String> {
        let limit = crate::assemble::hardware::MAX_IDLE_NS;
        let mut out = Vec::new();
        let mut check = |what: String, by_idle: &[(u64, Percentiles)]| {
            for (idle, p) in by_idle {
                if p.p99 > limit {
                    out.push(format!("{what}: p99 {:.1}ms after {}us idle", p.p99 as f64 / 1e6, idle / 1000));
                }
            }
        };
        for w in &self.wake {
            check(format!("probe wake {}->{}", w.waker, w.wakee), &w.by_idle);
            check(format!("probe wake {}->{} (the waker's send)", w.waker, w.wakee), &w.send_by_idle);
        }
        if let Some(t) = &self.timer {
            check(format!("probe timer on CPU {}", t.cpu), &t.by_idle);
        }
        out
    }
}

/// One point of an `exit_latency_by_idle` curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurvePoint {
    pub idle_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
}

/// The idle-exit part of a wakeup: the wakeup latency after each idle
/// length minus the median latency of the same wakeup onto a busy CPU (what
/// the wakeup costs without an idle exit), floored at 0. The p99 is the idle
/// p99 minus the same busy median, so the tail stays in the exit cost.
pub fn exit_curve(wake: &WakeProbe) -> Option<Vec<CurvePoint>> {
    minus_baseline(&wake.by_idle, wake.busy?.p50)
}

/// The idle-exit part of a timer wakeup, the same way: the oversleep after
/// each idle length minus the median oversleep on a busy CPU (timer
/// interrupt, hrtimer expiry and a switch, but no idle exit), floored at 0.
pub fn timer_exit_curve(timer: &TimerProbe) -> Option<Vec<CurvePoint>> {
    minus_baseline(&timer.by_idle, timer.busy?.p50)
}

fn minus_baseline(by_idle: &[(u64, Percentiles)], baseline: u64) -> Option<Vec<CurvePoint>> {
    let mut pts: Vec<CurvePoint> = by_idle
        .iter()
        .map(|(idle, p)| CurvePoint {
            idle_ns: *idle,
            p50_ns: p.p50.saturating_sub(baseline),
            p99_ns: p.p99.saturating_sub(baseline).max(p.p50.saturating_sub(baseline)),
        })
        .collect();
    pts.sort_by_key(|p| p.idle_ns);
    (!pts.is_empty()).then_some(pts)
}

/// The blocking handoff's steps the probes measure, as `[costs.kernel]`
/// takes them: `futex_wait` (measured), `futex_wake` (derived: the same
/// bucket lock and list operation, on the waker) and `schedule_entry`
/// (from the window probe). `None` without the futex or window probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FutexCosts {
    pub futex_wait_ns: u64,
    pub futex_wake_ns: u64,
    pub schedule_entry_ns: u64,
}

impl Measured {
    pub fn futex_costs(&self) -> Option<FutexCosts> {
        let syscall = self.syscall.as_ref();
        let futex_wait_ns = futex_wait_from_probes(self.futex_wait_eagain.as_ref()?, syscall);
        let futex_wake_ns = futex_wait_ns;
        let schedule_entry_ns =
            schedule_entry_from_probes(self.window?.p50, syscall.map_or(0, |s| s.p50), futex_wait_ns, futex_wake_ns);
        Some(FutexCosts { futex_wait_ns, futex_wake_ns, schedule_entry_ns })
    }
}

/// `[costs.kernel] futex_wait`: the `FUTEX_WAIT` that returns `-EAGAIN`
/// minus `syscall_ns` (a small syscall's entry, work and exit), floored at
/// 0: hashing, the bucket lock and the read of the word, the setup every
/// wait pays before it can be found.
pub fn futex_wait_from_probes(eagain: &Percentiles, syscall: Option<&Percentiles>) -> u64 {
    eagain.p50.saturating_sub(syscall.map_or(0, |s| s.p50))
}

/// `[costs.kernel] schedule_entry`, from the window probe: in the model a
/// waker's wake reaches the waiter `syscall_ns + futex_wake` after its
/// call, and the waiter is findable from `futex_wait` after its stamp until
/// `schedule_entry` later; a wake returns without sleeping when the first
/// comes before the end of the second. So the window's median end (delay
/// of the call after the stamp) is `futex_wait + schedule_entry -
/// syscall_ns - futex_wake`, and `schedule_entry` is that rearranged,
/// floored at 0. What the model does not split (the waiter's syscall
/// entry, the waker's path up to `ttwu_runnable()`'s lock) is inside it.
pub fn schedule_entry_from_probes(window_end_p50: u64, syscall_ns: u64, futex_wait_ns: u64, futex_wake_ns: u64) -> u64 {
    (window_end_p50 + syscall_ns + futex_wake_ns).saturating_sub(futex_wait_ns)
}

/// IPI delivery at one level: the busy-CPU wakeup's median minus the
/// context switch it includes, floored at 0.
pub fn ipi_from_probes(wake: &WakeProbe, switch: Option<&Percentiles>) -> Option<u64> {
    let busy = wake.busy?;
    Some(busy.p50.saturating_sub(switch.map_or(0, |s| s.p50)))
}

/// `[costs.kernel] ipi_send`, the IPI's sending onto a busy CPU (a direct
/// activation and a resched IPI; the selection is skipped, the wakee is
/// pinned): the busy FUTEX_WAKE's median minus the plain syscall it also
/// is, floored at 0. The whole rest is taken as the IPI's sending: on bare
/// metal the activation is a few cache lines, in a VM the IPI is an exit.
pub fn ipi_send_busy_from_probes(wake: &WakeProbe, syscall: Option<&Percentiles>, futex_wake_ns: u64) -> Option<u64> {
    Some(wake.send_busy?.p50.saturating_sub(syscall.map_or(0, |s| s.p50) + futex_wake_ns))
}

/// `[costs.kernel] ipi_send_by_idle`, the IPI's sending per idle length
/// of the target (a wakelist add and its IPI): each FUTEX_WAKE's median
/// and p99 minus the syscall's median, floored at 0. The idle length is
/// the probe's: from the wakee's last step in user space to the waker's
/// call, the same clock `exit_curve`'s points use.
pub fn ipi_send_curve(wake: &WakeProbe, syscall: Option<&Percentiles>, futex_wake_ns: u64) -> Option<Vec<CurvePoint>> {
    minus_baseline(&wake.send_by_idle, syscall.map_or(0, |s| s.p50) + futex_wake_ns)
}

/// The model's own context switch: the probe's same-CPU futex handoff
/// (round trip / 2) holds two syscalls — the waker's FUTEX_WAKE and the
/// wakee's return from FUTEX_WAIT — that the model charges as `syscall_ns`
/// on their ops, so they are taken out once here.
pub fn switch_from_probes(switch: &Percentiles, syscall: Option<&Percentiles>) -> u64 {
    switch.p50.saturating_sub(2 * syscall.map_or(0, |s| s.p50))
}

/// The switch net of what a blocking handoff's other steps cost in the
/// model when they are measured too: the wait's setup and window and the
/// wake's bucket work (`[costs.kernel] futex_wait`, `schedule_entry`,
/// `futex_wake`), each of which the probe's half round trip also holds.
pub fn switch_net_of_futex(switch_ns: u64, futex_wait_ns: u64, schedule_entry_ns: u64, futex_wake_ns: u64) -> u64 {
    switch_ns.saturating_sub(futex_wait_ns + schedule_entry_ns + futex_wake_ns)
}

/// The timer interrupt's delivery: the busy-CPU oversleep's median minus
/// the context switch the model charges for it (`context_switch_ns`, the
/// switch probe net of its syscalls), floored at 0. The sleeper's own
/// syscall entry is before the absolute expiry, so it is not in the
/// oversleep.
pub fn timer_irq_from_probes(timer: &TimerProbe, context_switch_ns: u64, irq_exit_ns: u64) -> Option<u64> {
    Some(timer.busy?.p50.saturating_sub(context_switch_ns + irq_exit_ns))
}

/// The idle exit's part after a timer's handler (`idle_exit_tail_ns`):
/// how much longer the captured wakeup-to-switch is from idle than on a
/// busy CPU: (idle p50, idle p99) minus the busy median, floored at 0, the
/// p99 at least the p50 (the tail stays in it, as in the exit curves).
pub fn idle_exit_tail_from_probes(idle: &Percentiles, busy: &Percentiles) -> (u64, u64) {
    let p50 = idle.p50.saturating_sub(busy.p50);
    (p50, idle.p99.saturating_sub(busy.p50).max(p50))
}

/// What the timer interrupt does after its callback woke the task, before
/// the CPU switches (`timer_irq_exit_ns`): the captured `sched_wakeup` to
/// `sched_switch` median, less one tracepoint's cost (the wakeup's own
/// record is written after its timestamp is taken; the switch's stamp
/// comes before its record), floored at 0. Without a tracepoint figure
/// nothing is taken off.
pub fn timer_irq_exit_from_probes(wake_to_switch: &Percentiles, tracepoint: Option<&Percentiles>) -> u64 {
    wake_to_switch.p50.saturating_sub(tracepoint.map_or(0, |t| t.p50))
}

/// A `[[noise]]` entry's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseFigures {
    /// Mean arrivals per second per CPU.
    pub rate_hz: f64,
    pub dist: Percentiles,
}

/// Split the spinners' gaps into steal and the rest. /proc/stat only gives
/// the total stolen time, so the longest gaps whose sum first reaches that
/// total are taken as the host's preemptions (a vCPU descheduled for
/// milliseconds), the others as the guest's own interrupts. Returns
/// (irq, steal); either may be `None` when it has no gap.
pub fn split_noise(probe: &NoiseProbe) -> (Option<NoiseFigures>, Option<NoiseFigures>) {
    let mut gaps = probe.gaps.clone();
    gaps.sort_unstable_by(|a, b| b.cmp(a));
    let mut stolen = 0u64;
    let mut cut = 0;
    if probe.steal_ns > 0 {
        while cut < gaps.len() && stolen < probe.steal_ns {
            stolen += gaps[cut];
            cut += 1;
        }
    }
    let cpu_secs = probe.cpu_secs();
    let figures = |g: &[u64]| {
        Percentiles::of(g)
            .map(|dist| NoiseFigures { rate_hz: if cpu_secs > 0.0 { g.len() as f64 / cpu_secs } else { 0.0 }, dist })
    };
    let steal = if probe.steal_ns > 0 { figures(&gaps[..cut]) } else { None };
    (figures(&gaps[cut..]), steal)
}

/// The rates (per CPU-second) the short gaps split into, all sharing one
/// duration distribution: no single gap can be told apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IrqShares {
    /// The tick: HZ per second on a busy CPU, stopped by NOHZ on an idle one.
    pub tick_hz: f64,
    /// The kernel's own other interrupts (its /proc/interrupts counts beyond
    /// the tick); they reach idle CPUs too.
    pub other_hz: f64,
    /// Gaps beyond every interrupt the kernel counted: time the CPU spent
    /// outside this kernel (in a VM, the host running something else on the
    /// vCPU's physical CPU, too short for /proc/stat's steal). A halted vCPU
    /// is not woken by it; `None` when the interrupt counts were not read.
    pub outside_hz: Option<f64>,
}

/// Split `irq` (the gaps not taken as steal, at `irq.rate_hz`) by the
/// kernel's own interrupt count over the probe.
pub fn irq_shares(irq: &NoiseFigures, probe: &NoiseProbe, hz: u32) -> IrqShares {
    let tick_hz = (hz as f64).min(irq.rate_hz);
    let rest = irq.rate_hz - tick_hz;
    let cpu_secs = probe.cpu_secs();
    match probe.interrupts {
        Some(n) if cpu_secs > 0.0 => {
            let counted_beyond_tick = (n as f64 / cpu_secs - hz as f64).max(0.0);
            let other_hz = counted_beyond_tick.min(rest);
            IrqShares { tick_hz, other_hz, outside_hz: Some(rest - other_hz) }
        }
        _ => IrqShares { tick_hz, other_hz: rest, outside_hz: None },
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_windows_end_is_read_where_the_share_that_did_not_sleep_crosses() {
        let w = WindowProbe {
            waker: 0,
            waiter: 1,
            points: vec![(0, 95, 100), (100, 90, 100), (200, 70, 100), (300, 30, 100), (400, 0, 100), (500, 0, 100)],
        };
        // 50 % between 200 (70 awake) and 300 (30 awake): 250.
        assert_eq!(w.end_quantile(0.5), Some(250));
        assert_eq!(w.end_quantile(0.99), Some(397));
        assert_eq!(w.end(), Some(Percentiles { n: 600, p50: 250, p99: 397, max: 400 }));
        // A share that never falls that low has no quantile.
        let w = WindowProbe { points: vec![(0, 90, 100), (100, 60, 100)], ..w };
        assert_eq!(w.end_quantile(0.5), None);
        assert_eq!(w.end(), None);
    }

    use super::*;

    fn p(p50: u64, p99: u64) -> Percentiles {
        Percentiles { n: 100, p50, p99, max: p99 }
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let s: Vec<u64> = (1..=100).rev().collect();
        let q = Percentiles::of(&s).unwrap();
        assert_eq!((q.n, q.p50, q.p99, q.max), (100, 50, 99, 100));
        let one = Percentiles::of(&[7]).unwrap();
        assert_eq!((one.p50, one.p99, one.max), (7, 7, 7));
        assert!(Percentiles::of(&[]).is_none());
    }

    #[test]
    fn exit_curve_subtracts_the_busy_median_and_floors_at_zero() {
        let w = WakeProbe {
            level: Distance::Llc,
            waker: 0,
            wakee: 1,
            by_idle: vec![(200_000, p(12_000, 30_000)), (5_000, p(3_000, 9_000)), (20_000_000, p(57_000, 90_000))],
            busy: Some(p(4_000, 8_000)),
            send_by_idle: Vec::new(),
            send_busy: None,
        };
        let c = exit_curve(&w).unwrap();
        assert_eq!(c.iter().map(|p| p.idle_ns).collect::<Vec<_>>(), vec![5_000, 200_000, 20_000_000]);
        // 3us - 4us floors at 0; its p99 keeps the tail: 9 - 4 = 5us.
        assert_eq!((c[0].p50_ns, c[0].p99_ns), (0, 5_000));
        assert_eq!((c[1].p50_ns, c[1].p99_ns), (8_000, 26_000));
        assert_eq!((c[2].p50_ns, c[2].p99_ns), (53_000, 86_000));
        let no_busy = WakeProbe { busy: None, ..w };
        assert!(exit_curve(&no_busy).is_none());
    }

    #[test]
    fn timer_curve_subtracts_the_busy_oversleep_median() {
        let t = TimerProbe {
            cpu: 1,
            slack_ns: 1,
            by_idle: vec![(1_000_000, p(27_000, 60_000)), (5_000, p(2_000, 9_000)), (20_000, p(6_000, 6_000))],
            busy: Some(p(5_000, 12_000)),
        };
        let c = timer_exit_curve(&t).unwrap();
        assert_eq!(c.iter().map(|p| p.idle_ns).collect::<Vec<_>>(), vec![5_000, 20_000, 1_000_000]);
        // 2us below the busy 5us: floored; the tail 9 - 5 = 4us stays.
        assert_eq!((c[0].p50_ns, c[0].p99_ns), (0, 4_000));
        assert_eq!((c[1].p50_ns, c[1].p99_ns), (1_000, 1_000));
        assert_eq!((c[2].p50_ns, c[2].p99_ns), (22_000, 55_000));
        assert!(timer_exit_curve(&TimerProbe { busy: None, ..t.clone() }).is_none());
        assert!(timer_exit_curve(&TimerProbe { by_idle: vec![], ..t }).is_none(), "no idle samples: no curve");
    }

    #[test]
    fn ipi_is_busy_wakeup_minus_switch() {
        let w = WakeProbe {
            level: Distance::Smt,
            waker: 0,
            wakee: 1,
            by_idle: vec![],
            busy: Some(p(6_000, 9_000)),
            send_by_idle: vec![(5_000, p(1_000, 2_000)), (1_000_000, p(17_000, 30_000))],
            send_busy: Some(p(9_000, 12_000)),
        };
        assert_eq!(ipi_from_probes(&w, Some(&p(2_500, 3_000))), Some(3_500));
        assert_eq!(ipi_from_probes(&w, Some(&p(7_000, 8_000))), Some(0));
        assert_eq!(ipi_from_probes(&w, None), Some(6_000));
        // The waker's wake call minus the plain syscall, floored at 0; no figure without the call's.
        assert_eq!(ipi_send_busy_from_probes(&w, Some(&p(400, 500)), 0), Some(8_600));
        assert_eq!(ipi_send_busy_from_probes(&w, Some(&p(400, 500)), 100), Some(8_500), "net of the bucket work");
        assert_eq!(ipi_send_busy_from_probes(&w, Some(&p(20_000, 30_000)), 0), Some(0));
        assert_eq!(ipi_send_busy_from_probes(&WakeProbe { send_busy: None, ..w.clone() }, None, 0), None);
        let c = ipi_send_curve(&w, Some(&p(400, 500)), 0).unwrap();
        let pts: Vec<(u64, u64, u64)> = c.iter().map(|q| (q.idle_ns, q.p50_ns, q.p99_ns)).collect();
        assert_eq!(pts, vec![(5_000, 600, 1_600), (1_000_000, 16_600, 29_600)]);
        assert!(ipi_send_curve(&WakeProbe { send_by_idle: vec![], ..w }, None, 0).is_none(), "no samples: no curve");
    }

    #[test]
    fn the_longest_gaps_cover_the_steal() {
        let mut gaps = vec![3_000u64; 400]; // 400 short gaps over 2 CPU-seconds
        gaps.extend([4_000_000, 2_500_000, 1_000_000]);
        let probe = NoiseProbe {
            duration_ns: 1_000_000_000,
            cpus: 2,
            threshold_ns: 2_000,
            gaps,
            preempted: 0,
            steal_ns: 6_000_000,
            steal_raw_ns: 16_000_000,
            interrupts: None,
        };
        let (irq, steal) = split_noise(&probe);
        let (irq, steal) = (irq.unwrap(), steal.unwrap());
        // 4 + 2.5 ms reach 6 ms: two steal gaps, the 1 ms one stays irq.
        assert_eq!(steal.dist.n, 2);
        assert_eq!((steal.dist.p50, steal.dist.max), (2_500_000, 4_000_000));
        assert!((steal.rate_hz - 1.0).abs() < 1e-9);
        assert_eq!(irq.dist.n, 401);
        assert_eq!((irq.dist.p50, irq.dist.max), (3_000, 1_000_000));
        assert!((irq.rate_hz - 200.5).abs() < 1e-9);
        // 250 ticks and 50 other interrupts per CPU-second counted by the
        // kernel: of the 200.5 gaps/s, 200.5 are the tick's share, none left.
        let counted = NoiseProbe { interrupts: Some(600), ..probe.clone() };
        let shares = irq_shares(&irq, &counted, 250);
        assert_eq!((shares.tick_hz, shares.other_hz, shares.outside_hz), (200.5, 0.0, Some(0.0)));
        // HZ 100: 100.5/s beyond the tick, 200/s counted beyond it: all the kernel's.
        let shares = irq_shares(&irq, &counted, 100);
        assert_eq!((shares.tick_hz, shares.other_hz, shares.outside_hz), (100.0, 100.5, Some(0.0)));
        // Only the tick counted: the rest was spent outside the kernel.
        let tick_only = NoiseProbe { interrupts: Some(200), ..probe.clone() };
        let shares = irq_shares(&irq, &tick_only, 100);
        assert_eq!((shares.tick_hz, shares.other_hz, shares.outside_hz), (100.0, 0.0, Some(100.5)));
        let unknown = irq_shares(&irq, &probe, 100);
        assert_eq!((unknown.other_hz, unknown.outside_hz), (100.5, None));
        let no_steal = NoiseProbe { steal_ns: 0, ..probe };
        let (irq, steal) = split_noise(&no_steal);
        assert!(steal.is_none());
        assert_eq!(irq.unwrap().dist.n, 403);
    }
}
