//! The wakeup path through the whole simulator: wakelist latency, placement
//! of a wakee whose CPU is busy, and seed 000's reproducer with placement.

use schedlab_analysis::{analyze, AnalysisOptions};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_topology::Topology;
use schedlab_trace::{EventKind, WakePath};
use std::path::Path;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str("inline.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn sim(s: &Scenario, opts: SimOptions) -> SimResult {
    simulate(s, &opts).unwrap_or_else(|e| panic!("{e}"))
}

fn handoffs(r: &SimResult, comm: &str) -> Vec<u64> {
    let m = analyze(&r.trace, &AnalysisOptions { end_ts: Some(r.end_ns), ..Default::default() });
    m.tasks.iter().find(|t| t.comm == comm).unwrap().handoff_sketch.sorted_samples()
}

const PINGS: &str = r#"
topology = "smt-2x2"
duration = "200ms"
[[thread]]
name = "sleeper"
affinity = "2"
program = [ { wait = "kick" }, { run = "100us" } ]
[[thread]]
name = "kicker"
affinity = "0"
program = [ { run = "1ms" }, { signal = "kick" } ]
"#;

#[test]
fn waking_an_idle_cpu_costs_ipi_plus_idle_exit_plus_switch() {
    let s = scenario(PINGS);
    let r = sim(&s, SimOptions::default());
    let c = &r.topology.costs;
    let expect = c.ipi_ns + r.topology.idle.states[0].exit_latency_ns + c.context_switch_ns;
    let h = handoffs(&r, "sleeper");
    assert!(h.len() > 150, "{} handoffs", h.len());
    assert!(h.iter().all(|&x| x == expect), "expected every handoff to take {expect} ns: {:?}", &h[..5]);
    // Each wakeup went through CPU 2's wakelist.
    let wakelist = r
        .trace
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Ttwu { path: WakePath::Wakelist, cpu: 2, .. }))
        .count();
    assert!(wakelist >= h.len());

    // A polling idle loop needs no IPI: only the idle exit and the switch.
    let mut topo = Topology::preset("smt-2x2").unwrap();
    topo.idle.states[0].polling = true;
    let r = sim(&s, SimOptions { topology: Some(topo.clone()), ..Default::default() });
    let h = handoffs(&r, "sleeper");
    assert!(
        h.iter().all(|&x| x == topo.idle.states[0].exit_latency_ns + topo.costs.context_switch_ns),
        "{:?}",
        &h[..5]
    );
    assert!(r.trace.events.iter().any(|e| matches!(e.kind, EventKind::SchedWakeIdleWithoutIpi { cpu: 2 })));
}

#[test]
fn a_wakee_whose_cpu_is_busy_moves_and_the_trace_reads_like_the_kernels() {
    let s = scenario(
        r#"
topology = "smt-2x2"
duration = "50ms"
[[thread]]
name = "hog"
affinity = "1"
program = [ { run = "1s" } ]
[[thread]]
name = "wakee"
affinity = "0-3"
start_cpu = 1
program = [ { wait = "kick" }, { run = "100us" } ]
[[thread]]
name = "waker"
affinity = "0"
program = [ { run = "5ms" }, { signal = "kick" } ]
"#,
    );
    let r = sim(&s, SimOptions::default());
    let pid = |comm: &str| *r.trace.table.tasks.iter().find(|(_, t)| t.comm == comm).unwrap().0;
    let (wakee, waker) = (pid("wakee"), pid("waker"));
    let ev = &r.trace.events;
    let waking = ev.iter().position(|e| matches!(e.kind, EventKind::SchedWaking { pid, .. } if pid == wakee)).unwrap();
    let EventKind::SchedWaking { target_cpu, .. } = ev[waking].kind else { unreachable!() };
    assert_eq!(
        (ev[waking].cpu, ev[waking].ctx_pid, target_cpu),
        (0, waker, 1),
        "waking on the waker's CPU, old CPU as target"
    );
    let rest = &ev[waking..];
    let mig =
        rest.iter().position(|e| matches!(e.kind, EventKind::SchedMigrateTask { pid, .. } if pid == wakee)).unwrap();
    let EventKind::SchedMigrateTask { orig_cpu, dest_cpu, .. } = rest[mig].kind else { unreachable!() };
    assert_eq!(orig_cpu, 1);
    assert!(dest_cpu == 2 || dest_cpu == 3, "moved to the idle core, got {dest_cpu}");
    let wakeup =
        rest.iter().position(|e| matches!(e.kind, EventKind::SchedWakeup { pid, .. } if pid == wakee)).unwrap();
    let EventKind::SchedWakeup { target_cpu, .. } = rest[wakeup].kind else { unreachable!() };
    assert!(mig < wakeup);
    assert_eq!((rest[wakeup].cpu, target_cpu), (dest_cpu, dest_cpu), "sched_wakeup runs on the target (wakelist)");
    let switch = rest
        .iter()
        .position(|e| matches!(e.kind, EventKind::SchedSwitch { next_pid, .. } if next_pid == wakee))
        .unwrap();
    assert!(wakeup < switch);
    assert_eq!(rest[switch].cpu, dest_cpu);
    assert!(rest[switch].ts > rest[0].ts, "IPI and idle exit take time");
}

#[test]
fn asym_min_with_placement_hands_off_in_microseconds() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/asym_min.toml");
    let s = Scenario::load(&path).unwrap();
    let medians = |r: &SimResult| {
        ["worker-0", "worker-1"].map(|w| {
            let mut h = handoffs(r, w);
            h.sort();
            assert!(h.len() > 1900, "{w}: {} handoffs", h.len());
            h[h.len() / 2]
        })
    };
    let in_place = |r: &SimResult| {
        r.trace
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Ttwu { path: WakePath::Runnable { delayed: true }, .. }))
            .count()
    };
    // ITMT off: the workers settle on different CPUs and never share one.
    let mut topo = Topology::preset("ryzen-7950x").unwrap();
    topo.itmt_enabled = false;
    let r = sim(&s, SimOptions { duration_ns: Some(2_000_000_000), topology: Some(topo), ..Default::default() });
    for m in medians(&r) {
        assert!((2_000..10_000).contains(&m), "median handoff {m} ns");
    }
    assert_eq!(in_place(&r), 0, "no wakeup meets a delayed task");
    // ITMT on: still microseconds at the median, but asym packing stacks the
    // workers on the preferred CPUs now and then, and the trace shows the
    // in-place wakeups of delayed tasks.
    let r = sim(&s, SimOptions { duration_ns: Some(2_000_000_000), ..Default::default() });
    for m in medians(&r) {
        assert!((2_000..10_000).contains(&m), "median handoff {m} ns");
    }
    assert!(in_place(&r) > 0);
}

#[test]
fn stacked_asym_min_shows_a_delayed_in_place_wakeup_and_the_patches_place_it_instead() {
    // Both workers start on CPU 6: seed 000's stacked state. Without the load
    // balancer (step 3) nothing stacks them again once they spread, so this
    // checks the first episode.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/asym_min.toml");
    let text =
        std::fs::read_to_string(&path).unwrap().replace("affinity = \"4-7\"", "affinity = \"4-7\"\nstart_cpu = 6");
    let s = Scenario::from_toml_str(path.to_str().unwrap(), &text, path.parent().unwrap()).unwrap();
    let count = |features: &[&str]| {
        let opts = SimOptions {
            duration_ns: Some(100_000_000),
            features: features.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let r = sim(&s, opts);
        let n = |f: &dyn Fn(&EventKind) -> bool| r.trace.events.iter().filter(|e| f(&e.kind)).count();
        let in_place = n(&|k| matches!(k, EventKind::Ttwu { path: WakePath::Runnable { delayed: true }, .. }));
        let dequeued =
            n(&|k| matches!(k, EventKind::Delayed { what: schedlab_trace::DelayedWhat::DequeuedAtWakeup, .. }));
        let stalls =
            handoffs(&r, "worker-0").iter().chain(handoffs(&r, "worker-1").iter()).filter(|&&h| h >= 500_000).count();
        (in_place, dequeued, stalls)
    };
    let (in_place, dequeued, stalls) = count(&[]);
    assert!(in_place >= 1 && dequeued == 0, "stock: {in_place} in-place, {dequeued} dequeued");
    assert!(stalls >= 1, "the in-place wakeup waits behind the other worker's burst");
    for patch in ["TTWU_DEQUEUE", "TTWU_QUEUE_DELAYED", "DEQUEUE_DELAYED"] {
        let (in_place, dequeued, patched_stalls) = count(&[patch]);
        assert_eq!(in_place, 0, "{patch}");
        assert!(dequeued >= 1, "{patch}: the delayed wakee is dequeued and placed");
        assert!(patched_stalls < stalls, "{patch}: {patched_stalls} stalls vs {stalls}");
    }
}
