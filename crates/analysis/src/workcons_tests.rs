//! Work conservation on hand-written traces with known idle windows.

use schedlab_trace::testing::{process_table, switch as sw, trace as trace_of};
use schedlab_trace::{Event, Nanos, Pid, PrevState, Trace};

use super::*;
use crate::render_work_conservation;

const A: Pid = 2;
const B: Pid = 3;
const HOG: Pid = 4;
const STOPPER6: Pid = 106;
const S: PrevState = PrevState::Sleeping;
const R: PrevState = PrevState::Running { preempt: false };
const RP: PrevState = PrevState::Running { preempt: true };

/// Pid 1 wakes from CPU 2.
fn wakeup(ts: Nanos, pid: Pid, cpu: u32) -> Event {
    schedlab_trace::testing::wakeup(ts, 2, 1, pid, cpu)
}

fn trace(events: Vec<Event>) -> Trace {
    let table = process_table(1, &[(A, "worker-0"), (B, "worker-1"), (HOG, "hog"), (STOPPER6, "migration/6")], &[]);
    trace_of(table, 8, events)
}

fn check(events: Vec<Event>, allowed: &[(Pid, &[u32])], grace_ns: u64, end: Nanos) -> WorkConservation {
    let opts = WorkConsOptions {
        allowed: allowed.iter().map(|&(p, c)| (p, c.to_vec())).collect(),
        grace_ns,
        end_ts: Some(end),
    };
    work_conservation(&trace(events), &opts)
}

/// A waits on CPU 6 behind B during [100, 1000).
fn a_waits_behind_b() -> Vec<Event> {
    vec![sw(0, 6, 0, S, B), wakeup(100, A, 6), sw(1_000, 6, B, S, A), sw(1_500, 6, A, S, 0)]
}

#[test]
fn no_idle_allowed_cpu_means_no_violation() {
    // Only CPU 6 allowed; CPUs 0-5 and 7 idle the whole time do not count.
    let w = check(a_waits_behind_b(), &[(A, &[6]), (B, &[6])], 100, 2_000);
    let a = w.task(A).unwrap();
    assert_eq!((a.waits, a.wait_ns), (1, 900));
    assert_eq!(a.strict, ViolationStats::default());
    assert_eq!(a.grace, ViolationStats::default());
    // CPUs 6 and 7 allowed, but a hog keeps CPU 7 busy throughout.
    let mut ev = a_waits_behind_b();
    ev.insert(0, sw(0, 7, 0, S, HOG));
    let w = check(ev, &[(A, &[6, 7]), (B, &[6, 7])], 100, 2_000);
    assert_eq!(w.task(A).unwrap().strict.count, 0);
    assert_eq!(w.unclaimed_ns, 0);
    assert_eq!(w.cpu(7).unwrap().idle_ns, 0);
    // CPU 6's own idle time after A left it is nobody's violation.
    assert_eq!(w.cpu(6).unwrap().idle_ns, 500);
    assert_eq!(w.cpu(6).unwrap().unclaimed.total_ns, 0);
}

/// CPU 7 runs a hog except for one idle window inside A's wait.
fn with_idle_window(from: Nanos, to: Nanos) -> Vec<Event> {
    let mut ev = a_waits_behind_b();
    ev.extend([sw(0, 7, 0, S, HOG), sw(from, 7, HOG, S, 0), sw(to, 7, 0, R, HOG)]);
    ev.sort_by_key(|e| e.ts);
    ev
}

#[test]
fn a_known_idle_window_is_exactly_the_violation() {
    let allowed: &[(Pid, &[u32])] = &[(A, &[6, 7]), (B, &[6, 7])];
    let w = check(with_idle_window(300, 350), allowed, 100, 2_000);
    let a = w.task(A).unwrap();
    assert_eq!(a.intervals, [(300, 350)]);
    assert_eq!(a.strict, ViolationStats { count: 1, total_ns: 50, max_ns: 50 });
    assert_eq!(a.grace, ViolationStats::default(), "50 ns is under the 100 ns grace window");
    let c7 = w.cpu(7).unwrap();
    assert_eq!((c7.idle_ns, c7.unclaimed.total_ns, c7.unclaimed.count), (50, 50, 1));
    assert_eq!(c7.unclaimed_pct, 100.0);
    assert_eq!((c7.unclaimed_grace.total_ns, c7.unclaimed_grace_pct), (0, 0.0));
    assert!(w.task(B).is_none(), "B never waited: no row");

    // A window longer than the grace window counts whole.
    let w = check(with_idle_window(300, 500), allowed, 100, 2_000);
    let a = w.task(A).unwrap();
    assert_eq!(a.strict, ViolationStats { count: 1, total_ns: 200, max_ns: 200 });
    assert_eq!(a.grace, a.strict);
    assert_eq!(w.cpu(7).unwrap().unclaimed_grace.total_ns, 200);
    // Idle over CPUs 6 and 7: 500 ns on CPU 6 (after A) + 200 on CPU 7.
    assert_eq!((w.idle_ns, w.unclaimed_ns, w.unclaimed_grace_ns), (700, 200, 200));
    assert!((w.unclaimed_pct - 100.0 * 200.0 / 700.0).abs() < 1e-9);
}

#[test]
fn two_idle_windows_are_two_violations_and_strict_is_a_superset_of_grace() {
    let mut ev = with_idle_window(200, 250);
    ev.extend([sw(600, 7, HOG, S, 0), sw(900, 7, 0, R, HOG)]);
    ev.sort_by_key(|e| e.ts);
    let w = check(ev, &[(A, &[6, 7])], 100, 2_000);
    let a = w.task(A).unwrap();
    assert_eq!(a.intervals, [(200, 250), (600, 900)]);
    assert_eq!(a.strict, ViolationStats { count: 2, total_ns: 350, max_ns: 300 });
    assert_eq!(a.grace, ViolationStats { count: 1, total_ns: 300, max_ns: 300 });
}

#[test]
fn a_wakeup_ipi_to_an_idle_cpu_is_a_short_violation() {
    // A is woken onto idle CPU 6, which switches to it 3 us later.
    let ev = vec![sw(0, 6, A, S, 0), wakeup(1_000, A, 6), sw(4_000, 6, 0, R, A)];
    let w = check(ev, &[(A, &[6])], 100_000, 10_000);
    let a = w.task(A).unwrap();
    assert_eq!(a.strict, ViolationStats { count: 1, total_ns: 3_000, max_ns: 3_000 });
    assert_eq!(a.grace.count, 0);
    // The same instant for both: no violation at all.
    let ev = vec![sw(0, 6, A, S, 0), wakeup(1_000, A, 6), sw(1_000, 6, 0, R, A)];
    assert_eq!(check(ev, &[(A, &[6])], 100_000, 10_000).task(A).unwrap().strict.count, 0);
}

#[test]
fn preempted_waits_count_and_overlapping_claims_are_not_double_counted() {
    // A and B both preempted off CPU 6 by the hog during [100, 700) while
    // CPU 5 sits idle: both violate, CPU 5's unclaimed time is 600 once.
    let ev = vec![
        sw(0, 6, 0, S, A),
        sw(50, 6, A, RP, B),
        sw(100, 6, B, RP, HOG),
        sw(700, 6, HOG, S, A),
        sw(800, 6, A, S, B),
    ];
    let w = check(ev, &[(A, &[5, 6]), (B, &[5, 6]), (HOG, &[6])], 100, 1_000);
    assert_eq!(w.task(A).unwrap().intervals, [(50, 700)]);
    assert_eq!(w.task(B).unwrap().intervals, [(100, 800)]);
    let c5 = w.cpu(5).unwrap();
    assert_eq!((c5.idle_ns, c5.unclaimed.total_ns, c5.unclaimed.count), (1_000, 750, 1));
    assert_eq!(w.cpu(6).unwrap().idle_ns, 0);
}

#[test]
fn unlisted_tasks_default_to_their_kthread_cpu_or_every_cpu() {
    assert_eq!(crate::percpu_kthread_cpu("migration/6"), Some(6));
    assert_eq!(crate::percpu_kthread_cpu("kworker/3:1H"), Some(3));
    assert_eq!(crate::percpu_kthread_cpu("kworker/u16:3"), None);
    assert_eq!(crate::percpu_kthread_cpu("migration/x"), None);
    assert_eq!(crate::percpu_kthread_cpu("worker-0"), None);
    // The stopper waits on busy CPU 6 while other CPUs idle: bound, no violation.
    let ev = vec![sw(0, 6, 0, S, A), wakeup(100, STOPPER6, 6), sw(900, 6, A, RP, STOPPER6)];
    let w = check(ev.clone(), &[], 100, 1_000);
    assert_eq!(w.task(STOPPER6).unwrap().allowed, [6]);
    assert_eq!(w.task(STOPPER6).unwrap().strict.count, 0);
    // Without any affinity, A (preempted at 900) may use every idle CPU.
    let a = w.task(A).unwrap();
    assert_eq!(a.allowed, (0..8).collect::<Vec<u32>>());
    assert_eq!(a.intervals, [(900, 1_000)]);
    assert_eq!(crate::workcons::covered_cpus(&w), "0-7");
}

#[test]
fn the_tables_are_aligned() {
    let w = check(with_idle_window(300, 500), &[(A, &[6, 7]), (B, &[6, 7])], 100, 2_000);
    let text = render_work_conservation(&w);
    assert!(text.lines().all(|l| l == l.trim_end()), "{text}");
    let row = text.lines().find(|l| l.starts_with("worker-0")).unwrap_or_else(|| panic!("{text}"));
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words, ["worker-0", "2", "6-7", "1", "0.000", "1", "0.000", "0.2", "1", "0.000", "0.2"], "{text}");
    assert!(
        text.contains(
            "unclaimed idle: 28.57 % strict, 28.57 % with a 100ns grace window, of the idle time of CPUs 6-7"
        ),
        "{text}"
    );
}

mod online_against_brute_force {
    //! The online per-CPU accounting (changes replayed a grace window
    //! late) against interval arithmetic on the same violations, one
    //! nanosecond at a time, on random traces of 2 CPUs and 3 tasks.
    use super::*;
    use proptest::prelude::*;

    /// (ts step, cpu, task, kind): 0 = wakeup, 1 = switch in from idle or
    /// from the CPU's current, 2 = switch out to idle (sleeping or
    /// preempted).
    fn events(steps: &[(u8, u8, u8, u8)]) -> (Vec<Event>, Nanos) {
        let mut curr = [0 as Pid; 2];
        let mut out = Vec::new();
        let mut ts = 0;
        for &(dt, cpu, task, kind) in steps {
            ts += u64::from(dt % 4) * 10;
            let (cpu, pid) = (u32::from(cpu % 2), [A, B, HOG][usize::from(task % 3)]);
            let c = cpu as usize;
            match kind % 3 {
                0 => out.push(wakeup(ts, pid, cpu)),
                1 if curr.iter().all(|&p| p != pid) => {
                    out.push(sw(ts, cpu, curr[c], if kind % 2 == 0 { S } else { R }, pid));
                    curr[c] = pid;
                }
                2 if curr[c] != 0 => {
                    out.push(sw(ts, cpu, curr[c], if kind % 4 == 2 { RP } else { S }, 0));
                    curr[c] = 0;
                }
                _ => {}
            }
        }
        (out, ts + 10)
    }

    proptest! {
        #[test]
        fn unclaimed_idle_is_idle_under_the_claimants_violations(
            steps in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()), 1..60),
            grace in prop_oneof![Just(0u64), Just(20), Just(50), Just(100)],
        ) {
            let (evs, end) = events(&steps);
            let allowed: &[(Pid, &[u32])] = &[(A, &[0, 1]), (B, &[0, 1]), (HOG, &[1])];
            let w = check(evs.clone(), allowed, grace, end);
            let start = evs.first().map_or(0, |e| e.ts);
            // Who is on each CPU after each instant, as the timeline has it.
            let tl = crate::timeline::CpuTimeline::build(&evs, 8, start, end);
            for c in &w.cpus {
                let claimed = |t: Nanos, min_len: u64| {
                    w.tasks.iter().filter(|r| r.allowed.contains(&c.cpu)).any(|r| {
                        r.intervals.iter().any(|&(a, b)| b - a >= min_len.max(1) && a <= t && t < b)
                    })
                };
                let idle_at = |t: Nanos| tl.curr_at(c.cpu, t) == Some(0);
                for (min_len, got) in [(0, c.unclaimed), (grace, c.unclaimed_grace)] {
                    let (mut total, mut count, mut run, mut max) = (0u64, 0u64, 0u64, 0u64);
                    for t in start..end {
                        if idle_at(t) && claimed(t, min_len) {
                            total += 1;
                            run += 1;
                            if run == 1 {
                                count += 1;
                            }
                            max = max.max(run);
                        } else {
                            run = 0;
                        }
                    }
                    prop_assert_eq!(
                        (got.total_ns, got.count, got.max_ns),
                        (total, count, max),
                        "cpu {} min_len {}: {:?}", c.cpu, min_len, evs
                    );
                }
                let idle: u64 = (start..end).filter(|&t| idle_at(t)).count() as u64;
                prop_assert_eq!(c.idle_ns, idle, "cpu {} idle", c.cpu);
            }
        }
    }
}

/// A waits on CPU 6 while CPU 7 idles; CPU 7's occupant is unknown for
/// 1.5 % of the window (above the limit), CPU 6's for 0.5 % (below).
#[test]
fn cpus_with_too_much_uncertain_time_are_left_out_of_the_sums() {
    let w0 = check(a_waits_behind_b(), &[(A, &[6, 7]), (B, &[6]), (HOG, &[6])], 100, 2_000);
    assert!(w0.unclaimed_ns > 0 && w0.cpu(7).unwrap().idle_ns > 0, "the scene has unclaimed idle on CPU 7");
    let mut w = w0.clone();
    w.leave_out_uncertain(&BTreeMap::from([(6, 10), (7, 30)]));
    let (c6, c7) = (w.cpu(6).unwrap(), w.cpu(7).unwrap());
    assert!(!c6.left_out && c7.left_out);
    assert_eq!((c6.uncertain_ns, c7.uncertain_ns), (10, 30));
    assert_eq!(w.idle_ns, c6.idle_ns, "the sums cover CPU 6 alone");
    assert_eq!(w.unclaimed_ns, c6.unclaimed.total_ns);
    assert!(w.task(A).unwrap().left_out, "A may run on CPU 7");
    assert_eq!(covered_cpus(&w), "6");
    let text = render_work_conservation(&w);
    assert!(text.contains("CPUs 7 left out"), "{text}");
    assert!(text.contains("(1 tasks left out"), "{text}");
    // Every CPU out: no unclaimed-idle figure at all.
    let mut w = w0;
    w.leave_out_uncertain(&BTreeMap::from([(6, 100), (7, 100)]));
    assert!(!w.has_figures());
    assert!(render_work_conservation(&w).contains("unclaimed idle: no figure"));
}

/// `settle` checks an instant's tasks in `BTreeSet::union`'s order (the
/// order decides what the CPUs hear when two tasks of one class open and
/// close a violation at one instant): the merge must give exactly it.
#[test]
fn merging_the_waiting_and_the_touched_gives_the_set_union_in_order() {
    use std::collections::BTreeSet;
    let cases: [(&[Pid], &[Pid]); 5] =
        [(&[], &[]), (&[1, 5, 9], &[]), (&[], &[2, 3]), (&[1, 4, 7, 10], &[2, 4, 8, 10, 12]), (&[3], &[1, 2, 3])];
    for (a, b) in cases {
        let mut out = Vec::new();
        merge_sorted(a.iter().copied(), b.iter().copied(), &mut out);
        let sa: BTreeSet<Pid> = a.iter().copied().collect();
        let sb: BTreeSet<Pid> = b.iter().copied().collect();
        let want: Vec<Pid> = sa.union(&sb).copied().collect();
        assert_eq!(out, want, "{a:?} + {b:?}");
    }
}
