//! Scenarios that once broke the kernel model's invariants, run with the
//! check after every step.

use std::path::Path;

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};

fn check(name: &str, toml: &str, duration_ns: u64) {
    let s = Scenario::from_toml_str(name, toml, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions { duration_ns: Some(duration_ns), check_invariants: Some(true), ..Default::default() };
    if let Err(e) = simulate(&s, &opts) {
        panic!("{name}: {e}");
    }
}

/// Issue 21's find (a fuzzed schbench on the 7950X): a worker preempted on
/// CPU 23 was still switching out when the next task was preempted by the
/// migration stopper, and the pick after the stopper chose the first worker
/// again. The switch from the stopper did not complete the pending one, so
/// the worker ran with its old switch still open. Every switch now
/// completes the previous one, as finish_task_switch() does in the kernel.
#[test]
fn a_switch_after_the_stopper_completes_the_pending_switch() {
    let toml = r#"
name = "schbench-7950x-no-lock"
topology = "ryzen-7950x"
kernel = "6.12"
seed = 1

[schbench]
message_threads = 4
workers = 40
runtime = "20ms"
operations = 0
no_lock = true
"#;
    check("schbench-7950x.toml", toml, 3_500_000);
}
