//! schbench's per-CPU lock (no `-L`): a worker preempted while it holds its
//! CPU's lock makes the next worker on that CPU spin instead of working.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use schedlab_trace::{EventKind, UserOp};
use std::path::Path;

/// Three workers sharing CPU 1, each request 10 ms of work: longer than a
/// slice, so the tick preempts a worker in the middle of it.
fn requests(no_lock: bool) -> usize {
    let text = format!(
        "topology = \"smt-2x2\"\nduration = \"300ms\"\n[schbench]\nmessage_threads = 1\nworkers = 3\nmessage_cpus = \"0\"\nworker_cpus = \"1\"\noperations = 1\nop_time = \"10ms\"\nno_lock = {no_lock}\n"
    );
    let s = Scenario::from_toml_str("lock.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(&s, &SimOptions { seed: Some(1), check_invariants: Some(true), ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    r.trace
        .events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::User { pid, op: UserOp::LoopEnd { .. } }
                if r.trace.table.tasks.get(&pid).is_some_and(|t| t.comm.starts_with("sb-w")))
        })
        .count()
}

#[test]
fn a_preempted_lock_holder_makes_its_cpus_next_worker_spin() {
    let (free, locked) = (requests(true), requests(false));
    // Unlocked, CPU 1 does 10 ms requests back to back: ~29 in 300 ms.
    assert!(free >= 25, "{free}");
    // Locked, a worker that preempts the holder spins out its whole slice.
    assert!(locked * 2 < free, "locked {locked}, free {free}");
    assert!(locked > 0, "the holder still finishes");
}
