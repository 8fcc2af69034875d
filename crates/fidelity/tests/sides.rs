//! A simulated side analysed as it streams gives the reports the kept trace
//! gives: the workload's and the tracepoints-only one `compare` prints.

use schedlab_fidelity::sides::{analyze_kept, simulate_analyzed};
use schedlab_report::{to_json, AnalysisJson, Report};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use std::path::Path;

fn json(r: &Report) -> String {
    to_json(&AnalysisJson::from(r)).unwrap()
}

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

const FORK: &str = r#"
topology = "smt-2x2"
duration = "40ms"
[[thread]]
name = "parent"
affinity = "0"
program = [{ run = "1ms" }, { fork = "kid" }, { signal = "e" }, { sleep = "3ms" }]
[[thread]]
name = "kid"
instances = 0
affinity = "1-3"
loop = 2
program = [{ wait = "e" }, { run = "300us" }]
"#;

#[test]
fn a_streamed_side_reports_what_the_kept_trace_does() {
    let mut cases: Vec<(String, Scenario, u64)> = [
        ("scenarios/asym_min-2cpu.toml", 300_000_000),
        ("scenarios/rt-pi-push.toml", 100_000_000),
        ("scenarios/fidelity/pingpong-2cpu.toml", 50_000_000),
    ]
    .iter()
    .map(|(p, d)| (p.to_string(), Scenario::load(&root().join(p)).unwrap_or_else(|e| panic!("{e}")), *d))
    .collect();
    cases.push(("fork".into(), Scenario::from_toml_str("fork.toml", FORK, Path::new(".")).unwrap(), 40_000_000));
    for (name, scenario, duration) in &cases {
        let opts = SimOptions { traced: true, duration_ns: Some(*duration), ..Default::default() };
        let streamed = simulate_analyzed(scenario, &opts, 100_000, true).unwrap();
        let kept = analyze_kept(scenario, simulate(scenario, &opts).unwrap(), 100_000, true);
        assert!(streamed.result.trace.events.is_empty(), "{name}: the streamed run kept its trace");
        assert!(!streamed.report.metrics.tasks.is_empty(), "{name}: no rows");
        assert_eq!(json(&streamed.report), json(&kept.report), "{name}: the workload's report");
        assert_eq!(
            json(streamed.tracepoints.as_ref().unwrap()),
            json(kept.tracepoints.as_ref().unwrap()),
            "{name}: the tracepoints-only report"
        );
    }
}
