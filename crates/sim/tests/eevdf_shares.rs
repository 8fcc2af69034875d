//! Whole-simulator checks of fair sharing and determinism on bundled scenarios.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_trace::EventKind;
use std::path::Path;

fn run(name: &str, opts: SimOptions) -> SimResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name);
    let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn two_nice0_hogs_share_one_cpu_evenly_at_slice_granularity() {
    let r = run("two-hogs.toml", SimOptions::default());
    assert_eq!(r.end_ns, 10_000_000_000);
    let total: u64 = r.threads.iter().map(|t| t.runtime_ns).sum();
    for t in &r.threads {
        let share = t.runtime_ns as f64 / total as f64;
        assert!((share - 0.5).abs() < 0.01, "{} got {:.4}", t.name, share);
    }
    // Switches happen when a slice (2.1 ms on 4 CPUs) is used up, noticed at the next 1 ms tick.
    let switches = r.trace.events.iter().filter(|e| matches!(e.kind, EventKind::SchedSwitch { .. })).count() as u64;
    let mean_run = total / switches;
    let slice = r.profile.base_slice_for(4);
    assert!(mean_run >= slice && mean_run <= slice + 1_000_000, "mean run {mean_run} ns vs slice {slice} ns");
}

#[test]
fn nice0_vs_nice5_share_as_their_weights() {
    let r = run("nice-hogs.toml", SimOptions::default());
    let rt = |n: &str| r.threads.iter().find(|t| t.name == n).unwrap().runtime_ns as f64;
    let ratio = rt("nice0") / rt("nice5");
    let want = 1024.0 / 335.0;
    assert!((ratio / want - 1.0).abs() < 0.01, "ratio {ratio:.4}, want {want:.4}");
}

#[test]
fn no_delay_dequeue_never_delays() {
    let r = run("delayed-wakeup.toml", SimOptions { duration_ns: Some(200_000_000), ..Default::default() });
    let delayed = |r: &SimResult| r.trace.events.iter().filter(|e| matches!(e.kind, EventKind::Delayed { .. })).count();
    assert!(delayed(&r) > 0, "the scenario exercises DELAY_DEQUEUE");
    let r = run(
        "delayed-wakeup.toml",
        SimOptions { duration_ns: Some(200_000_000), features: vec!["NO_DELAY_DEQUEUE".into()], ..Default::default() },
    );
    assert_eq!(delayed(&r), 0);
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    let opts = |seed| SimOptions { seed: Some(seed), duration_ns: Some(300_000_000), ..Default::default() };
    let a = run("asym_min.toml", opts(1));
    let b = run("asym_min.toml", opts(1));
    let c = run("asym_min.toml", opts(2));
    assert_eq!(a.trace, b.trace);
    assert_ne!(a.trace, c.trace, "the 7950X preset has burst and IPI jitter, so the seed matters");
}
