//! Several rounds of the probes as one measurement
//! (`schedlab topologies --host --rounds N`).
//!
//! A VM's host moves its guests' costs between phases of a few seconds: on
//! this project's 2-vCPU guest two probe runs a minute apart gave context
//! switches of 0.7 and 1.3 us and idle exits after 1 ms of 19 and 38 us. One
//! run describes one phase. Each figure of the merged result is the median
//! of the rounds' figures (per percentile, per idle length), so a phase
//! seen in one round of three does not set it. The noise probe's gaps are
//! pooled instead: its rates are counts over time, and pooling the rounds'
//! gaps over their summed time is their mean.

use super::measured::{Measured, NoiseProbe, Percentiles, TimerProbe, WakeProbe};

/// The median of `v` (the lower middle for an even count); `None` if empty.
fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[(v.len() - 1) / 2])
}

/// Per-field medians of the rounds that have a figure; the sample count
/// is their sum. `None` when no round has one.
pub fn median_percentiles(rounds: &[Option<Percentiles>]) -> Option<Percentiles> {
    let got: Vec<Percentiles> = rounds.iter().flatten().copied().collect();
    Some(Percentiles {
        n: got.iter().map(|p| p.n).sum(),
        p50: median(got.iter().map(|p| p.p50).collect())?,
        p99: median(got.iter().map(|p| p.p99).collect())?,
        max: median(got.iter().map(|p| p.max).collect())?,
    })
}

/// Curves per idle length: the lengths the first round has, each the
/// median over the rounds that measured it.
fn median_curve(rounds: &[&[(u64, Percentiles)]]) -> Vec<(u64, Percentiles)> {
    let Some(first) = rounds.first() else { return Vec::new() };
    first
        .iter()
        .filter_map(|(idle, _)| {
            let at: Vec<Option<Percentiles>> =
                rounds.iter().map(|r| r.iter().find(|(i, _)| i == idle).map(|(_, p)| *p)).collect();
            median_percentiles(&at).map(|p| (*idle, p))
        })
        .collect()
}

fn merge_wake(rounds: &[&WakeProbe]) -> WakeProbe {
    let first = rounds[0];
    WakeProbe {
        level: first.level,
        waker: first.waker,
        wakee: first.wakee,
        by_idle: median_curve(&rounds.iter().map(|w| w.by_idle.as_slice()).collect::<Vec<_>>()),
        busy: median_percentiles(&rounds.iter().map(|w| w.busy).collect::<Vec<_>>()),
        send_by_idle: median_curve(&rounds.iter().map(|w| w.send_by_idle.as_slice()).collect::<Vec<_>>()),
        send_busy: median_percentiles(&rounds.iter().map(|w| w.send_busy).collect::<Vec<_>>()),
    }
}

fn merge_timer(rounds: &[&TimerProbe]) -> TimerProbe {
    let first = rounds[0];
    TimerProbe {
        cpu: first.cpu,
        slack_ns: first.slack_ns,
        by_idle: median_curve(&rounds.iter().map(|t| t.by_idle.as_slice()).collect::<Vec<_>>()),
        busy: median_percentiles(&rounds.iter().map(|t| t.busy).collect::<Vec<_>>()),
    }
}

/// The noise rounds pooled: gaps together, time and counts summed (the
/// interrupt count only when every round read it).
fn merge_noise(rounds: &[&NoiseProbe]) -> NoiseProbe {
    let first = rounds[0];
    NoiseProbe {
        duration_ns: rounds.iter().map(|n| n.duration_ns).sum(),
        cpus: first.cpus,
        threshold_ns: first.threshold_ns,
        gaps: rounds.iter().flat_map(|n| n.gaps.iter().copied()).collect(),
        preempted: rounds.iter().map(|n| n.preempted).sum(),
        steal_ns: rounds.iter().map(|n| n.steal_ns).sum(),
        steal_raw_ns: rounds.iter().map(|n| n.steal_raw_ns).sum(),
        interrupts: rounds.iter().map(|n| n.interrupts).sum(),
    }
}

/// Several probe rounds as one [`Measured`]: medians per figure, noise
/// pooled, notes of every round (once each), the rounds' wall time summed.
/// A probe that failed in some rounds is merged from the others.
pub fn merge_rounds(rounds: &[Measured]) -> Measured {
    if rounds.len() == 1 {
        return rounds[0].clone();
    }
    let mut out = Measured::default();
    // Wake probes: by (waker, wakee), in the first round's order.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for p in rounds.iter().flat_map(|m| m.wake.iter().map(|w| (w.waker, w.wakee))) {
        if !pairs.contains(&p) {
            pairs.push(p);
        }
    }
    for (waker, wakee) in pairs {
        let of: Vec<&WakeProbe> =
            rounds.iter().filter_map(|m| m.wake.iter().find(|w| (w.waker, w.wakee) == (waker, wakee))).collect();
        out.wake.push(merge_wake(&of));
    }
    let timers: Vec<&TimerProbe> = rounds.iter().filter_map(|m| m.timer.as_ref()).collect();
    out.timer = (!timers.is_empty()).then(|| merge_timer(&timers));
    let each = |f: fn(&Measured) -> Option<Percentiles>| median_percentiles(&rounds.iter().map(f).collect::<Vec<_>>());
    out.switch = each(|m| m.switch);
    out.syscall = each(|m| m.syscall);
    out.futex_wait_eagain = each(|m| m.futex_wait_eagain);
    out.futex_wake_none = each(|m| m.futex_wake_none);
    out.window = each(|m| m.window);
    out.line = each(|m| m.line);
    out.marker = each(|m| m.marker);
    out.tracepoint = each(|m| m.tracepoint);
    out.timer_wake_to_switch = each(|m| m.timer_wake_to_switch);
    // The idle figure keeps the CPU of the first round that has one; rounds
    // recorded on another CPU are left out of its median.
    let idle_cpu = rounds.iter().find_map(|m| m.timer_idle_wake_to_switch.map(|(c, _)| c));
    out.timer_idle_wake_to_switch = idle_cpu.and_then(|cpu| {
        let at: Vec<Option<Percentiles>> =
            rounds.iter().map(|m| m.timer_idle_wake_to_switch.filter(|(c, _)| *c == cpu).map(|(_, p)| p)).collect();
        median_percentiles(&at).map(|p| (cpu, p))
    });
    let mut per_handoff: Vec<f64> = rounds.iter().filter_map(|m| m.events_per_handoff).collect();
    per_handoff.sort_by(f64::total_cmp);
    out.events_per_handoff = (!per_handoff.is_empty()).then(|| per_handoff[(per_handoff.len() - 1) / 2]);
    let noise: Vec<&NoiseProbe> = rounds.iter().filter_map(|m| m.noise.as_ref()).collect();
    out.noise = (!noise.is_empty()).then(|| merge_noise(&noise));
    for (k, m) in rounds.iter().enumerate() {
        for note in &m.notes {
            if !out.notes.iter().any(|n| n.ends_with(note.as_str())) {
                out.notes.push(format!("round {}: {note}", k + 1));
            }
        }
    }
    out.elapsed_ns = rounds.iter().map(|m| m.elapsed_ns).sum();
    out.rounds = rounds.len();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Distance;

    fn p(n: usize, p50: u64, p99: u64) -> Percentiles {
        Percentiles { n, p50, p99, max: p99 + 1 }
    }

    fn round(switch_p50: u64, exit_1ms: u64, gaps: usize, interrupts: Option<u64>) -> Measured {
        Measured {
            wake: vec![WakeProbe {
                level: Distance::Llc,
                waker: 1,
                wakee: 0,
                by_idle: vec![(5_000, p(100, 2_000, 9_000)), (1_000_000, p(50, exit_1ms, exit_1ms * 3))],
                busy: Some(p(100, 7_000, 20_000)),
                send_by_idle: vec![(5_000, p(100, switch_p50 * 5, switch_p50 * 10))],
                send_busy: None,
            }],
            switch: Some(p(21, switch_p50, switch_p50 * 2)),
            noise: Some(NoiseProbe {
                duration_ns: 1_000_000_000,
                cpus: 2,
                threshold_ns: 2_000,
                gaps: vec![10_000; gaps],
                preempted: 1,
                steal_ns: 0,
                steal_raw_ns: 0,
                interrupts,
            }),
            notes: vec!["the same note".into()],
            elapsed_ns: 8_000_000_000,
            ..Measured::default()
        }
    }

    #[test]
    fn each_figure_is_the_median_of_the_rounds_and_noise_is_pooled() {
        let rounds = vec![
            round(700, 19_000, 2_000, Some(500)),
            round(1_300, 38_000, 3_000, Some(520)),
            round(800, 30_000, 2_500, Some(510)),
        ];
        let m = merge_rounds(&rounds);
        assert_eq!(m.rounds, 3);
        // One slow phase in three does not set the figure.
        assert_eq!(m.switch.map(|s| (s.n, s.p50, s.p99)), Some((63, 800, 1_600)));
        let w = &m.wake[0];
        assert_eq!(
            w.by_idle.iter().map(|(i, q)| (*i, q.p50)).collect::<Vec<_>>(),
            vec![(5_000, 2_000), (1_000_000, 30_000)]
        );
        assert_eq!(w.by_idle[1].1.p99, 90_000);
        assert_eq!(w.busy.map(|b| b.n), Some(300));
        assert_eq!(w.send_by_idle.iter().map(|(i, q)| (*i, q.p50)).collect::<Vec<_>>(), vec![(5_000, 4_000)]);
        let n = m.noise.as_ref().unwrap();
        assert_eq!((n.duration_ns, n.gaps.len(), n.preempted, n.interrupts), (3_000_000_000, 7_500, 3, Some(1_530)));
        assert_eq!(m.notes, vec!["round 1: the same note".to_string()], "a note repeated by every round is kept once");
        assert_eq!(m.elapsed_ns, 24_000_000_000);
    }

    #[test]
    fn a_round_without_a_figure_leaves_it_to_the_others() {
        let mut second = round(1_000, 20_000, 10, None);
        second.switch = None;
        second.notes = vec!["context switch probe: timed out".into()];
        let m = merge_rounds(&[round(600, 10_000, 10, Some(7)), second, round(800, 30_000, 10, Some(9))]);
        assert_eq!(m.switch.map(|s| (s.n, s.p50)), Some((42, 600)), "the lower middle of two");
        assert_eq!(m.noise.unwrap().interrupts, None, "a count is only a count when every round read it");
        assert!(m.notes.contains(&"round 2: context switch probe: timed out".to_string()), "{:?}", m.notes);
    }

    #[test]
    fn one_round_is_itself() {
        let r = round(700, 19_000, 5, Some(3));
        assert_eq!(merge_rounds(std::slice::from_ref(&r)), r);
    }
}
