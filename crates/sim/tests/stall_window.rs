//! Stall attribution from bounded windows equals the whole trace's, on
//! the bundled scenarios that stall.

use schedlab_analysis::{attribute_stalls, AttributionCollector, AttributionOptions};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use std::path::Path;

fn check(file: &str, duration_ns: u64, seed: u64) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let r =
        simulate(&s, &SimOptions { seed: Some(seed), duration_ns: Some(duration_ns), ..Default::default() }).unwrap();
    let allowed = s
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (schedlab_sim::FIRST_PID + i as i32, t.affinity.to_u32_vec()))
        .collect();
    let opts = AttributionOptions { stall_threshold_ns: s.stall_threshold_ns, end_ts: Some(r.end_ns), allowed };
    let whole = attribute_stalls(&r.trace, &opts);
    // The default lookback, and none: then every story leans on what the
    // records kept from before the signal.
    for lookback_ns in [schedlab_analysis::LOOKBACK_NS, 0] {
        // Every story, as the whole trace tells them (a report keeps the
        // first KEPT_STALLS; here all are compared).
        let mut c = AttributionCollector::new(&opts, &r.trace.table, r.trace.nr_cpus)
            .with_lookback(lookback_ns)
            .with_kept_stalls(usize::MAX);
        for e in &r.trace.events {
            c.observe(e);
        }
        assert_eq!(c.lost, 0, "{file}");
        let windowed = c.finish();
        assert_eq!(windowed.stalls.len(), whole.stalls.len(), "{file}");
        for (a, b) in whole.stalls.iter().zip(&windowed.stalls) {
            assert_eq!(a, b, "{file}, lookback {lookback_ns} ns: stall at {}", a.start_ts);
        }
        assert_eq!(whole, windowed, "{file}, lookback {lookback_ns} ns");
    }
    whole.stalls.len()
}

#[test]
fn windows_tell_the_same_stories_as_the_whole_trace() {
    let mut stalls = 0;
    stalls += check("asym_min.toml", 3_000_000_000, 1);
    let batched = check("asym_min-2cpu.toml", 2_000_000_000, 2);
    // Stories told in many batches and a partial one at the end.
    assert!(batched > 2 * schedlab_analysis::STALL_BATCH && !batched.is_multiple_of(schedlab_analysis::STALL_BATCH));
    stalls += batched;
    stalls += check("delayed-wakeup.toml", 1_000_000_000, 1);
    stalls += check("rt-pi-push.toml", 1_700_000_000, 1);
    // 256 CPUs: stories whose wakeup at the run's first instant is read
    // from the records, `resched_curr()` (an event about no task) with it.
    stalls += check("schbench-turin-newidle.toml", 6_000_000, 1);
    assert!(stalls > 20, "the scenarios stall: {stalls}");
}
