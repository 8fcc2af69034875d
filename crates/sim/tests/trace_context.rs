//! Every event the model emits names, as its context, the task current on
//! its CPU, as a real tracer's header does: `schedlab_trace::repair`, which
//! puts back the switches a real capture is missing, finds nothing to put
//! back in a simulated trace of any bundled scenario.

use std::path::Path;

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use schedlab_trace::repair::repair_trace;

#[test]
fn simulated_traces_are_consistent_with_their_headers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        // 30 ms: past every scenario's start, balancing and first stopper
        // pushes. The invariants are other tests' job (checked at every
        // step, they make schbench-spr's 224 CPUs take many minutes here).
        let opts = SimOptions { duration_ns: Some(30_000_000), check_invariants: Some(false), ..Default::default() };
        let mut run = simulate(&s, &opts).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stats = repair_trace(&mut run.trace);
        assert!(stats.is_clean(), "{}: {stats:?}", path.display());
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} scenarios");
}
