//! The livelock limit: a loop that takes almost no simulated time stops
//! the run with an error that says which limit and how to raise it,
//! instead of crawling for hours (issue 21: a `run = "1ns"` loop). And the
//! memory budget's size, as `--max-memory` gives it.

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

/// CPUs x simulated time: a duration past the bound is refused before any
/// work, saying which limit and how to raise it.
#[test]
fn a_run_past_the_cpu_seconds_bound_is_refused_before_it_starts() {
    let opts = SimOptions { duration_ns: Some(1_000_000 * 1_000_000_000), ..Default::default() };
    match simulate(&nanosecond_loop(), &opts) {
        Err(e @ SimError::TooLong { .. }) => {
            // Refused up front: the figure is the requested duration, not
            // how far a run got.
            let SimError::TooLong { duration_ns, why, .. } = &e else { unreachable!() };
            assert_eq!((*duration_ns, why.as_str()), (1_000_000 * 1_000_000_000, "the default"));
            let text = e.to_string();
            assert!(text.contains("4 CPUs x 1000000.000 s") && text.contains("4000000 CPU-seconds"), "{text}");
            assert!(text.contains(&format!("limit of {}", schedlab_sim::DEFAULT_MAX_CPU_SECONDS)), "{text}");
            assert!(text.contains("--max-cpu-seconds"), "{text}");
        }
        other => panic!("expected TooLong, got {:?}", other.map(|r| r.end_ns)),
    }
}

/// A run with no duration (until the programs end) stops where the bound
/// is reached: a program of a billion 1 ms bursts would take 11 days of
/// simulated time.
#[test]
fn a_run_without_duration_stops_at_the_bound() {
    let toml = r#"
name = "long-program"
topology = "smt-2x2"
seed = 1
[[thread]]
name = "hog"
affinity = "0"
loop = 1000000000
program = [{ run = "1ms" }]
"#;
    let s = Scenario::from_toml_str("long.toml", toml, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions { max_cpu_seconds: Some(2), check_invariants: Some(false), ..Default::default() };
    match simulate(&s, &opts) {
        Err(SimError::TooLong { cpus, duration_ns, limit, why }) => {
            assert_eq!((cpus, limit), (4, 2));
            // 2 CPU-seconds on 4 CPUs: half a second of simulated time.
            assert!((500_000_000..501_000_000).contains(&duration_ns), "{duration_ns}");
            assert!(why.contains("no duration"), "{why}");
        }
        other => panic!("expected TooLong, got {:?}", other.map(|r| r.end_ns)),
    }
}

#[test]
fn a_memory_budget_is_a_size_of_at_least_a_mebibyte() {
    use schedlab_sim::{MemoryBudget, MemorySizeError};
    assert_eq!(MemoryBudget::parse_size("512MiB"), Ok(512 << 20));
    assert_eq!(MemoryBudget::parse_size(" 8GiB"), Ok(8 << 30));
    assert_eq!(MemoryBudget::parse_size("1048576"), Ok(1 << 20));
    assert_eq!(MemoryBudget::parse_size("1000KiB"), Err(MemorySizeError::TooSmall("1000KiB".into())));
    let e = MemoryBudget::parse_size("lots").unwrap_err();
    assert!(matches!(e, MemorySizeError::NotASize { .. }), "{e:?}");
    assert!(e.to_string().starts_with("`lots` is not a size ("), "{e}");
}
