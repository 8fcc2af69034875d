//! The livelock limit: a loop that takes almost no simulated time stops
//! the run with an error that says which limit and how to raise it,
//! instead of crawling for hours (issue 21: a `run = "1ns"` loop).

use std::path::Path;

use schedlab_scenario::Scenario;
use schedlab_sim::{default_max_steps_per_us, simulate, SimError, SimOptions};

fn nanosecond_loop() -> Scenario {
    let toml = r#"
name = "ns-loop"
topology = "smt-2x2"
duration = "10s"
seed = 1
[[thread]]
name = "hog"
affinity = "0"
loop = true
program = [{ run = "1ns" }]
"#;
    Scenario::from_toml_str("ns-loop.toml", toml, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_nanosecond_loop_is_stopped_as_a_livelock() {
    let opts = SimOptions { check_invariants: Some(false), ..Default::default() };
    match simulate(&nanosecond_loop(), &opts) {
        Err(e @ SimError::Livelock { .. }) => {
            let SimError::Livelock { limit, at_ns, .. } = &e else { unreachable!() };
            assert_eq!(*limit, default_max_steps_per_us(4));
            assert!(*at_ns < 2_000_000, "caught in its first milliseconds, not at {at_ns} ns");
            let text = e.to_string();
            assert!(text.contains("(the default for 4 CPUs)") && text.contains("--max-steps-per-us N"), "{text}");
        }
        other => panic!("expected a livelock, got {:?}", other.map(|r| r.end_ns)),
    }
}

#[test]
fn a_raised_limit_lets_it_run() {
    let opts = SimOptions {
        duration_ns: Some(200_000),
        max_steps_per_us: Some(100_000),
        check_invariants: Some(false),
        ..Default::default()
    };
    let r = simulate(&nanosecond_loop(), &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.end_ns, 200_000);
}
