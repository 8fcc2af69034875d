use proptest::prelude::*;

use super::*;
use crate::testing::{event, switch, wakeup};

fn run(window: usize, events: &[Event]) -> (Vec<Event>, RepairStats) {
    let mut r = SwitchRepair::with_window(window);
    let mut out = Vec::new();
    for &e in events {
        r.push(e, &mut |e| out.push(e));
    }
    let stats = r.finish(&mut |e| out.push(e));
    (out, stats)
}

fn runtime(ts: Nanos, cpu: u32, pid: Pid) -> Event {
    event(ts, cpu, pid, EventKind::SchedStatRuntime { pid, runtime: 1 })
}

#[test]
fn a_consistent_stream_passes_unchanged() {
    let evs = vec![
        switch(10, 0, 0, PrevState::Running { preempt: false }, 5),
        wakeup(20, 0, 5, 6, 1),
        switch(25, 1, 0, PrevState::Running { preempt: false }, 6),
        runtime(30, 1, 6),
        switch(40, 0, 5, PrevState::Sleeping, 0),
    ];
    let (out, stats) = run(4, &evs);
    assert_eq!(out, evs);
    assert!(stats.is_clean(), "{stats:?}");
}

/// The host's case: CPU 1 switches into idle, a wakeup arrives in an
/// interrupt of the idle task, and the woken task's next event is its own
/// switch out, with no switch into it.
#[test]
fn a_missing_switch_out_of_idle_goes_after_the_last_idle_event() {
    let evs = vec![
        switch(100, 1, 7, PrevState::Sleeping, 0),
        wakeup(200, 1, 0, 8, 1),
        switch(900, 1, 8, PrevState::Sleeping, 0),
    ];
    let (out, stats) = run(16, &evs);
    assert_eq!(out.len(), 4);
    assert_eq!(out[1], evs[1]);
    let inserted = out[2];
    assert!(inserted.is_repaired());
    assert_eq!((inserted.ts, inserted.cpu, inserted.ctx_pid), (200, 1, 0));
    assert!(matches!(inserted.kind, EventKind::SchedSwitch { prev_pid: 0, next_pid: 8, .. }));
    let c = &stats.cpus[&1];
    assert_eq!((c.inserted, c.out_of_idle, c.uncertain_ns, c.max_uncertain_at), (1, 1, 700, 900));
    assert_eq!(stats.placed_late, 0);
}

/// A task's switch out is missing: its inserted switch leaves it sleeping
/// (whether it blocked or was preempted is unknown; sleeping claims no wait).
#[test]
fn a_missing_switch_out_of_a_task_leaves_it_sleeping() {
    let evs = vec![switch(0, 0, 0, PrevState::Running { preempt: false }, 69), runtime(50, 0, 30)];
    let (out, stats) = run(16, &evs);
    assert!(matches!(
        out[1].kind,
        EventKind::SchedSwitch { prev_pid: 69, prev_state: PrevState::Sleeping, next_pid: 30, .. }
    ));
    assert_eq!(out[1].ts, 0);
    assert_eq!(stats.cpus[&0].out_of_idle, 0);
}

#[test]
fn a_proof_older_than_the_window_puts_the_switch_before_the_oldest_held_event() {
    let evs = vec![
        switch(0, 1, 7, PrevState::Sleeping, 0),
        runtime(10, 0, 3),
        runtime(20, 0, 3),
        runtime(30, 0, 3),
        runtime(40, 1, 8),
    ];
    let (out, stats) = run(2, &evs);
    assert_eq!(stats.placed_late, 1);
    assert_eq!(stats.cpus[&1].uncertain_ns, 40, "counted from the proof, not the placement");
    let at = out.iter().position(Event::is_repaired).unwrap();
    assert_eq!(out[at].ts, 20, "before the oldest event still held");
    assert_eq!(out[at + 1], evs[2]);
    assert!(out.windows(2).all(|w| w[0].ts <= w[1].ts));
}

#[test]
fn a_switch_whose_prev_is_not_its_header_is_counted() {
    let mut bad = switch(10, 0, 4, PrevState::Sleeping, 0);
    bad.ctx_pid = 5;
    let (_, stats) = run(4, &[runtime(0, 0, 5), bad]);
    assert_eq!(stats.cpus[&0].prev_not_header, 1);
    assert_eq!(stats.cpus[&0].inserted, 0);
}

fn arb_stream() -> impl Strategy<Value = Vec<Event>> {
    // Events on 3 CPUs by 4 pids (0 = idle), some switches; times rise.
    prop::collection::vec((0u64..50, 0u32..3, 0i32..4, 0i32..4, any::<bool>()), 0..200).prop_map(|v| {
        let mut ts = 0;
        v.into_iter()
            .map(|(dt, cpu, ctx, next, is_switch)| {
                ts += dt;
                if is_switch {
                    switch(ts, cpu, ctx, PrevState::Sleeping, next)
                } else {
                    runtime(ts, cpu, ctx)
                }
            })
            .collect()
    })
}

proptest! {
    /// Whatever the stream: every event comes out once, in its order, the
    /// output is in time order, and a second pass finds nothing to repair.
    #[test]
    fn repaired_streams_are_ordered_complete_and_consistent(evs in arb_stream(), window in 1usize..8) {
        let (out, stats) = run(window, &evs);
        let kept: Vec<Event> = out.iter().filter(|e| !e.is_repaired()).copied().collect();
        prop_assert_eq!(&kept, &evs);
        prop_assert_eq!(out.len() - kept.len(), stats.inserted() as usize);
        prop_assert!(out.windows(2).all(|w| w[0].ts <= w[1].ts));
        let (_, again) = run(window, &out);
        prop_assert_eq!(again.inserted(), 0);
    }
}
