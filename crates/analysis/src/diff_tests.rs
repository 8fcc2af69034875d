//! First divergence and CPU-state reconstruction on hand-written traces.

use schedlab_trace::testing::{event as ev, process_table, switch as sw, trace as trace_of};
use schedlab_trace::{DelayedWhat, Event, EventKind, Nanos, Pid, PrevState, Trace, WakePath};

use super::*;
use crate::{analyze, AnalysisOptions};

const W0: Pid = 1001;
const W1: Pid = 1002;
const WAKER: Pid = 1003;
const HOG: Pid = 1004;
const S: PrevState = PrevState::Sleeping;
const RP: PrevState = PrevState::Running { preempt: true };

/// The waker wakes from CPU 2.
fn wakeup(ts: Nanos, pid: Pid, cpu: u32) -> Event {
    schedlab_trace::testing::wakeup(ts, 2, WAKER, pid, cpu)
}

fn ttwu(ts: Nanos, pid: Pid, path: WakePath, cpu: u32) -> Event {
    ev(ts, 2, WAKER, EventKind::Ttwu { pid, path, cpu })
}

fn trace(events: Vec<Event>) -> Trace {
    let table = process_table(1000, &[(W0, "worker-0"), (W1, "worker-1"), (WAKER, "waker"), (HOG, "hog")], &[]);
    trace_of(table, 8, events)
}

/// Both workers on CPU 6 (worker-0 running, worker-1 woken behind it), the
/// waker on CPU 2, CPU 7 idle since it switched away from hog.
fn common_prefix() -> Vec<Event> {
    vec![sw(1_000, 2, 0, S, WAKER), sw(2_000, 6, 0, S, W0), sw(3_000, 7, HOG, S, 0), wakeup(4_000, W1, 6)]
}

/// worker-1 blocks at 10 us: A delays its dequeue, so the waker's next
/// wakeup requeues it in place on CPU 6; B dequeues it, so the wakeup picks
/// idle CPU 7.
fn delay_vs_no_delay() -> (Trace, Trace) {
    let mut a = common_prefix();
    a.extend([
        sw(5_000, 6, W0, S, W1),
        ev(10_000, 6, W1, EventKind::Delayed { pid: W1, what: DelayedWhat::Delayed, lag: -93_391 }),
        sw(10_000, 6, W1, S, 0),
        ttwu(20_000, W1, WakePath::Runnable { delayed: true }, 6),
    ]);
    let mut b = common_prefix();
    b.extend([sw(5_000, 6, W0, S, W1), sw(10_000, 6, W1, S, 0), ttwu(20_000, W1, WakePath::Wakelist, 7)]);
    (trace(a), trace(b))
}

#[test]
fn divergence_is_the_first_differing_step() {
    let (a, b) = delay_vs_no_delay();
    let d = diff_traces(&a, &b, &DiffOptions { context: 3, after: 2 }).expect("the runs differ");
    assert_eq!((d.index, d.ts), (5, 10_000));
    assert_eq!(d.before.iter().map(|l| l.index).collect::<Vec<_>>(), vec![2, 3, 4]);
    let (ea, eb) = (d.a.event.as_ref().unwrap(), d.b.event.as_ref().unwrap());
    assert!(ea.decision && ea.line.contains("schedlab_delayed: comm=worker-1 pid=1002 what=delayed"), "{ea:?}");
    assert!(!eb.decision && eb.line.contains("sched_switch: prev_comm=worker-1"), "{eb:?}");
    assert_eq!(d.a.after.len(), 2);
    let ma = d.a.meaning.as_deref().unwrap();
    assert!(ma.starts_with("dequeue_entity() left worker-1 queued as sched_delayed on CPU 6"), "{ma}");
    assert!(ma.contains("lag -93.3 us"), "{ma}");
    assert_eq!(d.b.meaning.as_deref(), Some("__schedule() on CPU 6: worker-1 blocks, the CPU goes idle"));
}

#[test]
fn next_wakeup_decisions_of_the_tasks_involved_are_paired() {
    let (a, b) = delay_vs_no_delay();
    let d = diff_traces(&a, &b, &DiffOptions::default()).unwrap();
    let wake = d.next_decisions.iter().find(|n| n.pid == W1 && n.family == "wakeup").expect("wakeup pair");
    assert_eq!(
        wake.a.as_ref().unwrap().1,
        "ttwu_runnable() requeued worker-1 in place (sched_delayed) on CPU 6, no select_task_rq()"
    );
    assert_eq!(
        wake.b.as_ref().unwrap().1,
        "select_task_rq() chose CPU 7 for worker-1, queued on its wakelist (ttwu_queue_wakelist)"
    );
    let delay = d.next_decisions.iter().find(|n| n.family == "delay").expect("delay pair");
    assert!(delay.a.is_some() && delay.b.is_none());
    // CPU 7, named only by B's wakeup decision, is among the CPUs shown; CPU 2,
    // where the waker ran, is not.
    assert_eq!(d.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), vec![6, 7]);
    let text = render_divergence(&d);
    assert!(text.contains("first divergence at 0.000010 s: event #5"), "{text}");
    assert!(text.contains("  B 0.000020: select_task_rq() chose CPU 7 for worker-1"), "{text}");
    assert!(text.contains("  B none in the rest of the run"), "{text}");
}

#[test]
fn identical_traces_do_not_diverge() {
    let (a, _) = delay_vs_no_delay();
    assert!(diff_traces(&a, &a.clone(), &DiffOptions::default()).is_none());
    // The latency flags are not a scheduler step.
    let mut b = a.clone();
    b.events[3].flags = *b"dN.2.";
    assert!(diff_traces(&a, &b, &DiffOptions::default()).is_none());
    assert!(diff_traces(&trace(vec![]), &trace(vec![]), &DiffOptions::default()).is_none());
}

#[test]
fn a_trace_that_ends_early_diverges_where_it_ends() {
    let (a, _) = delay_vs_no_delay();
    let mut short = a.clone();
    short.events.truncate(6);
    let d = diff_traces(&short, &a, &DiffOptions::default()).unwrap();
    assert_eq!(d.index, 6);
    assert!(d.a.event.is_none() && d.a.after.is_empty() && d.a.meaning.is_none());
    assert_eq!(d.b.event.as_ref().map(|e| e.index), Some(6));
    assert!(render_divergence(&d).contains("A: the trace ends here (6 events)"));
}

#[test]
fn divergence_in_one_field_of_a_payload_is_found() {
    let (a, _) = delay_vs_no_delay();
    let mut b = a.clone();
    let index = |b: &Trace| diff_traces(&a, b, &DiffOptions::default()).map(|d| d.index);
    b.events[7] = ttwu(20_000, W1, WakePath::Runnable { delayed: false }, 6);
    assert_eq!(index(&b), Some(7));
    b.events[7] = a.events[7];
    b.events[7].cpu = 3;
    assert_eq!(index(&b), Some(7));
}

#[test]
fn cpu_state_shows_running_waiting_and_idle() {
    let t = trace(common_prefix());
    let s = cpu_states(&t.table, &t.events, &[2, 6, 7, 5], 10_000);
    // CPU 2: the waker since its switch-in at 1 us.
    assert_eq!((s[0].curr.pid, s[0].curr.since, s[0].curr.for_ns), (WAKER, 1_000, 9_000));
    assert!(!s[0].is_idle() && s[0].waiting.is_empty() && !s[0].since_trace_start);
    // CPU 6: worker-0 runs, worker-1 woken onto it waits.
    assert_eq!(s[1].curr.pid, W0);
    assert_eq!(
        s[1].waiting,
        vec![TaskOnCpu { pid: W1, comm: "worker-1".into(), since: 4_000, for_ns: 6_000, why: "woken" }]
    );
    // CPU 7 idle since 3 us.
    assert!(s[2].is_idle());
    assert_eq!(s[2].curr.for_ns, 7_000);
    // CPU 5: no event at all: idle since the trace began.
    assert!(s[3].is_idle() && s[3].since_trace_start);
    assert_eq!(s[3].curr.since, 1_000);
    assert_eq!(
        render_cpu_state(&s[1]),
        "CPU 6   running worker-0 (1001) for 8.0 us; waiting: worker-1 (1002) woken for 6.0 us"
    );
    assert_eq!(render_cpu_state(&s[2]), "CPU 7   idle for 7.0 us; waiting: none");
}

#[test]
fn cpu_state_follows_preemption_migration_and_delayed_tasks() {
    let mut events = common_prefix();
    events.extend([
        // worker-0 is preempted by worker-1 and waits on CPU 6.
        sw(5_000, 6, W0, RP, W1),
        // hog is woken onto CPU 6, then moved to CPU 7 still waiting.
        wakeup(6_000, HOG, 6),
        ev(7_000, 7, 0, EventKind::SchedMigrateTask { pid: HOG, prio: 120, orig_cpu: 6, dest_cpu: 7 }),
        // worker-1 blocks while ineligible: delayed on CPU 6; worker-0 runs.
        ev(8_000, 6, W1, EventKind::Delayed { pid: W1, what: DelayedWhat::Delayed, lag: -1_000 }),
        sw(8_000, 6, W1, S, W0),
    ]);
    let t = trace(events.clone());
    let s = cpu_states(&t.table, &t.events, &[6, 7], 9_000);
    assert_eq!(s[0].curr.pid, W0);
    assert!(s[0].waiting.is_empty(), "{:?}", s[0].waiting);
    assert_eq!(s[0].delayed.iter().map(|d| (d.pid, d.since, d.why)).collect::<Vec<_>>(), vec![(W1, 8_000, "delayed")]);
    assert!(s[1].is_idle());
    assert_eq!(s[1].waiting.iter().map(|w| (w.pid, w.since)).collect::<Vec<_>>(), vec![(HOG, 6_000)]);
    assert!(render_cpu_state(&s[0])
        .ends_with("; sched_delayed (blocked, still queued): worker-1 (1002) delayed for 1.0 us"));

    // Before worker-1 blocks, worker-0 waits preempted on CPU 6.
    let s = cpu_states(&t.table, &t.events[..5], &[6], 5_500);
    assert_eq!(s[0].curr.pid, W1);
    assert_eq!(s[0].waiting.iter().map(|w| (w.pid, w.why)).collect::<Vec<_>>(), vec![(W0, "preempted")]);

    // A delayed task that is requeued and picked is no longer delayed.
    events.push(ev(9_000, 2, WAKER, EventKind::Delayed { pid: W1, what: DelayedWhat::Requeued, lag: -1_000 }));
    events.push(wakeup(9_000, W1, 6));
    let t = trace(events);
    let s = cpu_states(&t.table, &t.events, &[6], 9_500);
    assert!(s[0].delayed.is_empty());
    assert_eq!(s[0].waiting.iter().map(|w| w.pid).collect::<Vec<_>>(), vec![W1]);
}

#[test]
fn drift_rows_put_both_runs_side_by_side() {
    let (a, b) = delay_vs_no_delay();
    let opts = AnalysisOptions { end_ts: Some(30_000), ..Default::default() };
    let (ma, mb) = (analyze(&a, &opts), analyze(&b, &opts));
    let rows = drift_rows(&ma, &mb, |t| t.pid != WAKER);
    assert_eq!(rows.iter().map(|r| r.pid).collect::<Vec<_>>(), vec![W0, W1, HOG]);
    let w1 = &rows[1];
    assert_eq!(w1.comm, "worker-1");
    assert_eq!(w1.runtime_ns, [5_000, 5_000]);
    let text = render_drift(&rows, 500_000);
    assert!(text.lines().nth(1).unwrap().starts_with("thread     pid      A      B      A      B"), "{text}");
    assert!(text.contains("\nworker-1  1002  0.005  0.005  0.001  0.001     0     0"), "{text}");
    assert!(text.contains("stalls>=500us"), "{text}");
}

/// Feed `a` and `b` to a stream in the order `order` gives (side, index).
fn streamed(a: &Trace, b: &Trace, order: &[(usize, usize)], opts: DiffOptions) -> (Option<Divergence>, usize) {
    let mut s = crate::DiffStream::new(opts);
    s.start(0, &a.table);
    s.start(1, &b.table);
    let mut most_waiting = 0;
    for &(side, i) in order {
        let ev = if side == 0 { &a.events[i] } else { &b.events[i] };
        s.event(side, ev);
        most_waiting = most_waiting.max(s.waiting());
    }
    (s.finish(), most_waiting)
}

#[test]
fn a_stream_finds_the_same_divergence_whatever_order_the_sides_arrive_in() {
    // A one event longer at the end too, so a side ends early in some orders.
    let (mut a, b) = delay_vs_no_delay();
    a.events.push(sw(30_000, 6, 0, S, W1));
    let opts = DiffOptions { context: 2, after: 3 };
    let whole = diff_traces(&a, &b, &opts).expect("the runs differ");
    let (na, nb) = (a.events.len(), b.events.len());
    let a_then_b: Vec<_> = (0..na).map(|i| (0, i)).chain((0..nb).map(|i| (1, i))).collect();
    let b_then_a: Vec<_> = (0..nb).map(|i| (1, i)).chain((0..na).map(|i| (0, i))).collect();
    let mut behind = Vec::new();
    let mut s = crate::DiffStream::new(opts);
    let (mut ia, mut ib) = (0, 0);
    while ia < na || ib < nb {
        let side = if ia == na {
            1
        } else if ib == nb {
            0
        } else {
            s.behind()
        };
        let i = if side == 0 { &mut ia } else { &mut ib };
        behind.push((side, *i));
        s.event(side, if side == 0 { &a.events[*i] } else { &b.events[*i] });
        *i += 1;
    }
    for (name, order) in [("A then B", a_then_b), ("B then A", b_then_a), ("behind first", behind)] {
        let (d, most_waiting) = streamed(&a, &b, &order, opts);
        assert_eq!(d.as_ref(), Some(&whole), "{name}");
        if name == "behind first" {
            assert!(most_waiting <= 1, "reading the side behind keeps one event waiting, not {most_waiting}");
        }
    }
    assert_eq!(whole.a.total_events, na);
    assert_eq!((whole.a.after.len(), whole.b.after.len()), (3, 2), "from the divergent event on, at most 3");
}
