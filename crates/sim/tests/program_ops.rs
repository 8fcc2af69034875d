//! The operations reproducers use beyond run/sleep/wait/signal (rt-app's
//! events): grid timers, wall-clock runs, condition variables, barriers,
//! and a thread changing its own affinity or policy mid-run.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_trace::{EventKind, UserOp};
use std::path::Path;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn sim(text: &str) -> SimResult {
    let s = Scenario::from_toml_str("ops.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    simulate(&s, &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn pid(r: &SimResult, name: &str) -> i32 {
    r.trace.table.tasks.iter().find(|(_, t)| t.comm == name).map(|(p, _)| *p).unwrap()
}

/// When `name` was woken (its `sched_waking` events).
fn wakings(r: &SimResult, name: &str) -> Vec<u64> {
    let p = pid(r, name);
    r.trace
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SchedWaking { pid, .. } if pid == p))
        .map(|e| e.ts)
        .collect()
}

/// When `name` wrote a marker matching `want`.
fn markers(r: &SimResult, name: &str, want: impl Fn(&UserOp) -> bool) -> Vec<u64> {
    let p = pid(r, name);
    r.trace
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::User { pid, op } if *pid == p && want(op)))
        .map(|e| e.ts)
        .collect()
}

/// When and on which CPU `name` was switched in.
fn switch_ins(r: &SimResult, name: &str) -> Vec<(u64, u32)> {
    let p = pid(r, name);
    r.trace
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SchedSwitch { next_pid, .. } if next_pid == p))
        .map(|e| (e.ts, e.cpu))
        .collect()
}

fn obj(r: &SimResult, name: &str) -> u32 {
    r.trace.table.objects.iter().position(|o| o == name).unwrap() as u32
}

/// A thread's own `timer` wakes on every boundary of its period, also where
/// the syscall has a cost (`[costs] syscall_ns`, as on measured hosts): the
/// boundary is chosen once as the op starts, not again when the op is
/// re-entered after the cost was paid (which skipped every other boundary).
#[test]
fn a_threads_own_timer_wakes_every_period_when_the_syscall_costs_time() {
    let topo = schedlab_topology::Topology::from_toml_str(
        "syscall.toml",
        "name = \"sys\"\nhz = 250\npreempt = \"full\"\n[layout]\ncores_per_llc = 2\n[costs]\nsyscall_ns = \"300ns\"\n",
    )
    .unwrap();
    let s = Scenario::from_toml_str(
        "timer.toml",
        r#"
        topology = "qemu-2"
        duration = "100ms"
        [[thread]]
        name = "periodic"
        policy = "fifo"
        affinity = "0"
        program = [ { timer = "10ms" }, { run = "6ms" } ]
        "#,
        Path::new("."),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions { topology: Some(topo), no_noise: true, ..Default::default() };
    let r = simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"));
    let w = wakings(&r, "periodic");
    assert_eq!(w.len(), 9, "wakeups at {w:?}");
    for (k, &t) in w.iter().enumerate() {
        let due = (k as u64 + 1) * 10 * MS;
        assert!(t >= due && t - due < 50 * US, "wakeup {k} at {t} ns, due at {due} ns");
    }
}

#[test]
fn a_grid_timer_wakes_on_its_grid_while_a_sleep_drifts_by_the_work_before_it() {
    // SCHED_FIFO has no timer slack: the hrtimer fires on the boundary.
    let r = sim(r#"
        topology = "qemu-4"
        duration = "50ms"
        [[thread]]
        name = "grid"
        policy = "fifo"
        affinity = "1"
        program = [ { run = "300us" }, { timer = "1ms", ref = "t" } ]
        [[thread]]
        name = "drift"
        policy = "fifo"
        affinity = "2"
        program = [ { run = "300us" }, { sleep = "1ms" } ]
    "#);
    // Each wakeup is its boundary plus the same hardware delay (the idle
    // CPU's exit): no error accumulates.
    let grid = wakings(&r, "grid");
    assert!(grid.len() >= 45, "{} wakeups", grid.len());
    let offset = grid[0] - MS;
    assert!(offset < 50 * US, "first wakeup {} ns after its boundary", offset);
    for (k, &w) in grid.iter().enumerate() {
        let due = (k as u64 + 1) * MS;
        assert!(
            w >= due && (w - due).abs_diff(offset) < 2 * US,
            "wakeup {k} at {w} ns, due at {due} ns: the grid drifted"
        );
    }
    let drift = wakings(&r, "drift");
    for pair in drift.windows(2) {
        assert!(pair[1] - pair[0] >= 1300 * US, "a sleep after the work spaces wakeups by work + sleep");
    }
}

#[test]
fn an_overrun_timer_restarts_its_grid_in_relative_mode_and_catches_up_in_absolute_mode() {
    let text = |mode: &str| {
        format!(
            r#"
            topology = "qemu-4"
            [[thread]]
            name = "t"
            policy = "fifo"
            loop = 1
            program = [ {{ run = "1500us" }}, {{ timer = "1ms", mode = "{mode}" }},
                        {{ run = "100us" }}, {{ timer = "1ms", mode = "{mode}" }},
                        {{ run = "100us" }}, {{ timer = "1ms", mode = "{mode}" }} ]
            "#
        )
    };
    // Wakeups (the creation is a wakeup_new): one per timer that slept.
    // The first boundary (1 ms) has passed when the 1.5 ms run ends, so it
    // does not sleep. Absolute: the grid stays, the next boundaries are 2
    // and 3 ms.
    let abs = wakings(&sim(&text("absolute")), "t");
    assert_eq!(abs.len(), 2, "{abs:?}");
    let delay = abs[0] - 2 * MS;
    assert!(delay < 50 * US && (abs[1] - 3 * MS).abs_diff(delay) < 2 * US, "absolute: {abs:?}");
    // Relative: the grid restarts when the overrun is seen (the end of the
    // 1.5 ms run, past 1.5 ms), so its boundaries are half a period later.
    let rel = wakings(&sim(&text("relative")), "t");
    assert_eq!(rel.len(), 2, "{rel:?}");
    assert!(rel[0] >= 2500 * US + delay, "relative: {rel:?}");
    assert!((rel[1] - rel[0]).abs_diff(MS) < 2 * US, "then one period apart: {rel:?}");
}

#[test]
fn run_wall_ends_on_the_clock_however_little_cpu_it_got() {
    let r = sim(r#"
        topology = "qemu-4"
        duration = "100ms"
        [[thread]]
        name = "hog"
        affinity = "0"
        program = [ { run = "100ms" } ]
        [[thread]]
        name = "wall"
        affinity = "0"
        loop = 1
        program = [ { run_wall = "20ms" }, { post = "wall_done" } ]
        [[thread]]
        name = "cpu"
        affinity = "0"
        loop = 1
        program = [ { run = "20ms" }, { post = "cpu_done" } ]
    "#);
    let began = switch_ins(&r, "wall")[0].0;
    let wall = markers(&r, "wall", |_| true)[0];
    // It ends the first time it runs 20 ms or more after it began: at most
    // the two others' slices (3 ms each on 4 CPUs, ticks at 4 ms) later.
    assert!((began + 20 * MS..began + 30 * MS).contains(&wall), "began {began}, ended {wall}");
    let ran = r.threads.iter().find(|t| t.name == "wall").unwrap().runtime_ns;
    assert!(ran < 12 * MS, "it shared the CPU three ways: {ran} ns of CPU for 20 ms of wall time");
    let cpu = markers(&r, "cpu", |_| true)[0];
    assert!(cpu > 35 * MS, "20 ms of CPU shared three, then two ways ends well past 35 ms, not at {cpu} ns");
}

#[test]
fn a_cond_signal_nobody_waits_for_is_lost_and_the_waiter_retakes_the_mutex() {
    let r = sim(r#"
        topology = "qemu-4"
        [[thread]]
        name = "waiter"
        delay = "100us"
        loop = 1
        program = [ { lock = "m" }, { cond_wait = "c", mutex = "m" }, { run = "50us" }, { unlock = "m" } ]
        [[thread]]
        name = "signaller"
        loop = 1
        program = [ { cond_signal = "c" }, { sleep = "1ms" }, { lock = "m" }, { cond_signal = "c" },
                    { run = "200us" }, { unlock = "m" } ]
    "#);
    let c = obj(&r, "c");
    let m = obj(&r, "m");
    let done = markers(&r, "waiter", |op| *op == UserOp::WaitDone { obj: c });
    assert_eq!(done.len(), 1);
    let unlocked = markers(&r, "signaller", |op| *op == UserOp::Unlock { obj: m })[0];
    assert!(done[0] >= unlocked, "the first signal (at 0) was lost; the second wakes the waiter, which then waits for the mutex until {unlocked}, not {}", done[0]);
    let locks = markers(&r, "waiter", |op| *op == UserOp::Lock { obj: m });
    assert_eq!(locks.len(), 2, "lock, then the re-lock at the end of cond_wait");
}

#[test]
fn a_barrier_releases_everyone_when_its_last_user_arrives() {
    let r = sim(r#"
        topology = "qemu-4"
        [[thread]]
        name = "fast"
        loop = 5
        program = [ { run = "100us" }, { barrier = "b" } ]
        [[thread]]
        name = "mid"
        loop = 5
        program = [ { run = "400us" }, { barrier = "b" } ]
        [[thread]]
        name = "slow"
        loop = 5
        program = [ { run = "1ms" }, { barrier = "b" } ]
    "#);
    let b = obj(&r, "b");
    let released = markers(&r, "slow", |op| *op == UserOp::Signal { obj: b });
    assert_eq!(released.len(), 5, "the slowest arrives last every round and releases it");
    for name in ["fast", "mid"] {
        let passed = markers(&r, name, |op| *op == UserOp::WaitDone { obj: b });
        assert_eq!(passed.len(), 5);
        for (k, (p, rel)) in passed.iter().zip(&released).enumerate() {
            assert!(p >= rel, "{name} passed round {k} at {p} before the release at {rel}");
        }
    }
}

#[test]
fn setaffinity_moves_the_running_thread_through_the_stopper_and_it_stays_inside_the_mask() {
    let r = sim(r#"
        topology = "qemu-4"
        [[thread]]
        name = "mover"
        affinity = "0-3"
        start_cpu = 0
        loop = 1
        program = [ { run = "1ms" }, { setaffinity = "3" }, { run = "2ms" } ]
    "#);
    let p = pid(&r, "mover");
    let moves: Vec<_> = r
        .trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } if pid == p => {
                Some((e.ctx_pid, orig_cpu, dest_cpu))
            }
            _ => None,
        })
        .collect();
    assert_eq!(moves.len(), 1, "{moves:?}");
    let (ctx, from, to) = moves[0];
    assert_eq!((from, to), (0, 3));
    assert_eq!(r.trace.table.tasks[&ctx].comm, "migration/0");
    let after: Vec<u32> =
        switch_ins(&r, "mover").into_iter().filter(|&(ts, _)| ts > MS + 10 * US).map(|(_, cpu)| cpu).collect();
    assert!(!after.is_empty() && after.iter().all(|&c| c == 3), "{after:?}");
}

#[test]
fn setscheduler_to_fifo_keeps_the_cpu_from_a_fair_hog_until_it_goes_back() {
    let r = sim(r#"
        topology = "qemu-4"
        duration = "40ms"
        [[thread]]
        name = "hog"
        affinity = "0"
        program = [ { run = "40ms" } ]
        [[thread]]
        name = "rt"
        affinity = "0"
        delay = "1ms"
        loop = 1
        program = [ { setscheduler = "fifo", priority = 10 }, { run = "10ms" },
                    { setscheduler = "other" }, { run = "10ms" }, { post = "done" } ]
    "#);
    // From the switch to FIFO until 10 ms later the hog never runs.
    let rt_on = switch_ins(&r, "rt")[0].0;
    let hog_runs: Vec<u64> = switch_ins(&r, "hog").into_iter().map(|(ts, _)| ts).collect();
    assert!(hog_runs.iter().all(|&t| t < rt_on || t >= rt_on + 10 * MS), "the hog ran while rt was FIFO: {hog_runs:?}");
    // Back in the fair class it shares: the hog runs before its second
    // 10 ms is done, which takes it past 20 ms of wall time.
    let done = markers(&r, "rt", |_| true)[0];
    assert!(hog_runs.iter().any(|&t| t > rt_on + 10 * MS && t < done), "{hog_runs:?}, done at {done}");
    assert!(done > rt_on + 20 * MS, "done at {done}, rt started at {rt_on}");
}

#[test]
fn setpriority_mid_run_changes_a_fair_threads_share_from_then_on() {
    let r = sim(r#"
        topology = "qemu-4"
        duration = "2s"
        [[thread]]
        name = "plain"
        affinity = "0"
        program = [ { run = "10ms" } ]
        [[thread]]
        name = "niced"
        affinity = "0"
        program = [ { setpriority = 5 }, { run = "10ms" } ]
    "#);
    let rt = |n: &str| r.threads.iter().find(|t| t.name == n).unwrap().runtime_ns as f64;
    let ratio = rt("plain") / rt("niced");
    assert!((ratio / (1024.0 / 335.0) - 1.0).abs() < 0.03, "share ratio {ratio:.3}, nice 0 : nice 5 is 3.06");
}
