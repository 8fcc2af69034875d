//! A small sweep gives identical results on any rayon pool size, in
//! (setting, round) order, with round r of every setting on seed `seed + r`.

use std::path::Path;
use std::sync::Mutex;

use schedlab_analysis::{analyze, AnalysisOptions};
use schedlab_report::SweepResult;
use schedlab_sim::{simulate, SimOptions};
use schedlab_sweep::{run_sweep, Progress, Sweep};

const SWEEP: &str = r#"
scenario = "asym_min.toml"
rounds = 2
duration = "200ms"
seed = 7
breakdown = ["defaults"]

[[setting]]
name = "defaults"

[[setting]]
name = "NO_DELAY_DEQUEUE"
features = ["NO_DELAY_DEQUEUE"]
"#;

fn sweep() -> Sweep {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    Sweep::from_toml_str("tiny.toml", SWEEP, &dir).unwrap()
}

fn run_on(threads: usize, sweep: &Sweep) -> (SweepResult, Vec<(String, u32)>) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let seen = Mutex::new(Vec::new());
    let progress = |p: &Progress| {
        assert_eq!(p.total, 4);
        seen.lock().unwrap().push((p.setting.to_string(), p.run));
    };
    let r = pool.install(|| run_sweep(sweep, &progress)).unwrap();
    (r, seen.into_inner().unwrap())
}

#[test]
fn same_results_on_one_and_two_threads() {
    let s = sweep();
    let (one, seen) = run_on(1, &s);
    let (two, _) = run_on(2, &s);
    assert_eq!(one, two);
    // One worker thread runs the jobs interleaved: round 1 of each setting first.
    let order: Vec<(&str, u32)> = seen.iter().map(|(n, r)| (n.as_str(), *r)).collect();
    assert_eq!(order, [("defaults", 1), ("NO_DELAY_DEQUEUE", 1), ("defaults", 2), ("NO_DELAY_DEQUEUE", 2)]);

    assert_eq!(one.settings.len(), 2);
    for set in &one.settings {
        let runs: Vec<(u32, u64)> = set.runs.iter().map(|r| (r.run, r.seed)).collect();
        assert_eq!(runs, [(1, 7), (2, 8)], "{}", set.name);
        assert_eq!(set.stalls, set.runs.iter().map(|r| r.stalls).sum::<u64>());
        assert_eq!(set.handoffs, set.runs.iter().map(|r| r.handoffs).sum::<u64>());
        for r in &set.runs {
            assert_eq!(r.simulated_ns, 200_000_000);
            // Two workers with ~1 ms bursts for 0.2 s.
            assert!((300..=400).contains(&r.handoffs), "{} run {}: {} handoffs", set.name, r.run, r.handoffs);
            assert_eq!(r.handoff_samples.len() as u64, r.handoffs);
            assert!(r.median_handoff_ns.is_some());
            assert_eq!(r.breakdown.is_some(), set.breakdown);
            assert_eq!(r.burst_starts.is_some(), set.breakdown);
        }
    }
    assert_eq!(one.settings[1].features_changed, ["NO_DELAY_DEQUEUE"]);
    let d = &one.settings[0];
    for r in &d.runs {
        let b = r.breakdown.as_ref().unwrap();
        assert_eq!((b.handoffs, b.stalls), (r.handoffs, r.stalls), "breakdown and summary agree");
        assert!(b.details.is_empty(), "per-stall details are not kept");
        let starts = r.burst_starts.as_ref().unwrap();
        assert_eq!(starts.keys().collect::<Vec<_>>(), ["worker-0", "worker-1"]);
        let bursts: u64 = starts.values().flat_map(|m| m.values()).sum();
        assert_eq!(bursts, r.handoffs, "each handoff starts a burst");
        assert!(starts.values().flat_map(|m| m.keys()).all(|c| (4..=7).contains(c)));
    }
}

#[test]
fn a_run_is_the_plain_simulation_with_its_seed() {
    let s = sweep();
    let (r, _) = run_on(2, &s);
    let setting = &s.settings[1];
    let sim = simulate(
        &setting.scenario,
        &SimOptions {
            seed: Some(8),
            duration_ns: Some(200_000_000),
            features: vec!["NO_DELAY_DEQUEUE".into()],
            ..SimOptions::default()
        },
    )
    .unwrap();
    let m = analyze(&sim.trace, &AnalysisOptions { stall_threshold_ns: 500_000, end_ts: Some(sim.end_ns) });
    let mut samples: Vec<u64> = m
        .tasks
        .iter()
        .filter(|t| t.comm.starts_with("worker-"))
        .flat_map(|t| t.handoff_sketch.sorted_samples())
        .collect();
    samples.sort_unstable();
    assert_eq!(r.settings[1].runs[1].handoff_samples, samples);
}
