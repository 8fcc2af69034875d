//! A blocking wait's kernel steps (`futex_wait()`'s setup, then
//! `schedule()`'s way to the dequeue) and what a waker finds in each: a
//! post before the value check returns at once (`-EAGAIN`), a wake inside
//! the window takes `ttwu_runnable()` and the waiter never sleeps, a wake
//! after it selects a CPU for a sleeping task.

use schedlab_kernel::WakeKind;
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_topology::Topology;
use schedlab_trace::{EventKind, PrevState, UserOp, WakePath};
use std::path::Path;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str("inline.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// smt-2x2 with a polling idle loop (no IPI, no idle exit: only the steps
/// under test take time), `futex_wait` and `schedule_entry` as given, and a
/// 1 us syscall.
fn topo(futex_wait_ns: u64, schedule_entry_ns: u64) -> Topology {
    let mut t = Topology::preset("smt-2x2").unwrap();
    for s in &mut t.idle.states {
        s.polling = true;
        s.exit_latency_ns = 0;
    }
    t.costs.syscall_ns = 1_000;
    t.costs.kernel.futex_wait_ns = futex_wait_ns;
    t.costs.kernel.schedule_entry_ns = schedule_entry_ns;
    for l in &mut t.costs.levels {
        l.remote_rq_ns = 300;
    }
    t.costs.kernel.wakelist_ns = 100;
    t
}

/// A waiter on CPU 2 that `fwait`s once, and a poster on CPU 0 that posts
/// after `delay` of work.
fn pair(delay: &str) -> Scenario {
    scenario(&format!(
        r#"
topology = "smt-2x2"
duration = "2ms"
[[thread]]
name = "waiter"
affinity = "2"
loop = false
program = [ {{ fwait = "f" }}, {{ run = "100us" }} ]
[[thread]]
name = "poster"
affinity = "0"
loop = false
program = [ {{ run = "{delay}" }}, {{ fpost = "f" }}, {{ run = "500us" }} ]
"#
    ))
}

fn run(s: &Scenario, t: Topology) -> SimResult {
    simulate(s, &SimOptions { topology: Some(t), check_invariants: Some(true), ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn pid(r: &SimResult, comm: &str) -> schedlab_trace::Pid {
    r.trace.table.tasks.iter().find(|(_, i)| i.comm == comm).map(|(p, _)| *p).unwrap()
}

/// The waiter's wakeup paths, and whether it ever switched out asleep.
fn waiter_story(r: &SimResult) -> (Vec<WakePath>, bool, bool) {
    let w = pid(r, "waiter");
    let paths = r
        .trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Ttwu { pid, path, .. } if pid == w => Some(path),
            _ => None,
        })
        .collect();
    let slept = r.trace.events.iter().any(
        |e| matches!(e.kind, EventKind::SchedSwitch { prev_pid, prev_state: PrevState::Sleeping, .. } if prev_pid == w),
    );
    let done = r
        .trace
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::User { pid, op: UserOp::WaitDone { .. } } if pid == w));
    (paths, slept, done)
}

#[test]
fn a_wake_inside_the_window_finds_the_waiter_queued_and_it_never_sleeps() {
    // The waiter is findable from 1 us (its setup) until 21 us (the window);
    // the post's wake comes at 5 us of work + 1 us of syscall.
    let r = run(&pair("5us"), topo(1_000, 20_000));
    let (paths, slept, done) = waiter_story(&r);
    assert_eq!(paths, vec![WakePath::Runnable { delayed: false }], "ttwu_runnable() of a task still queued");
    assert!(!slept, "a waiter set TASK_RUNNING again in its window is not dequeued");
    assert!(done);
    // The model's schedstats count it, with the remote runqueue lock its waker paid.
    let s = &r.kernel_stats;
    assert_eq!((s.path(WakeKind::Runnable).count, s.path(WakeKind::Runnable).waker_ns), (1, 300));
    assert_eq!(s.total_wakeups(), 1);
}

#[test]
fn a_wake_after_the_window_selects_a_cpu_for_a_sleeping_task() {
    // Same poster, but the window closes at 2 us: the waiter is asleep by 6 us.
    let r = run(&pair("5us"), topo(1_000, 1_000));
    let (paths, slept, done) = waiter_story(&r);
    assert_eq!(paths, vec![WakePath::Wakelist], "an idle target's wakeup goes through its wakelist");
    assert!(slept);
    assert!(done);
    let s = &r.kernel_stats;
    assert_eq!((s.path(WakeKind::SelectWakelist).count, s.path(WakeKind::SelectWakelist).waker_ns), (1, 100));
}

#[test]
fn a_post_before_the_value_check_returns_without_sleeping_or_a_wakeup() {
    // The waiter checks the word at 10 us; the post comes at 2 us + 1 us:
    // FUTEX_WAIT returns -EAGAIN, and the FUTEX_WAKE found nobody queued.
    let r = run(&pair("2us"), topo(10_000, 20_000));
    let w = pid(&r, "waiter");
    let (paths, slept, done) = waiter_story(&r);
    assert!(paths.is_empty(), "{paths:?}");
    assert!(!slept && done);
    assert!(!r.trace.events.iter().any(|e| matches!(e.kind, EventKind::SchedWaking { pid, .. } if pid == w)));
}

#[test]
fn an_fpost_that_finds_the_word_posted_makes_no_syscall() {
    // Two posts back to back, then a flag: with a 1 us syscall the second
    // post's failed compare-and-swap costs nothing. (The reader polls on
    // another core, so the poster runs at full speed.)
    let s = scenario(
        r#"
topology = "smt-2x2"
duration = "1ms"
[[thread]]
name = "poster"
affinity = "0"
loop = false
program = [ { fpost = "f" }, { fpost = "f" }, { post = "done" } ]
[[thread]]
name = "reader"
affinity = "2"
loop = false
program = [ { poll = "done" }, { fwait = "f" } ]
"#,
    );
    let r = run(&s, topo(0, 0));
    let at = |op: fn(&UserOp) -> bool| {
        r.trace.events.iter().find(|e| matches!(&e.kind, EventKind::User { op: o, .. } if op(o))).map(|e| e.ts).unwrap()
    };
    let first = at(|o| matches!(o, UserOp::Signal { .. }));
    let flag = at(|o| matches!(o, UserOp::Post { .. }));
    assert_eq!(flag - first, 1_000, "one FUTEX_WAKE syscall for two posts");
}
