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

/// A fixture scenario under `tests/fixtures`, with `features` and `seed`.
fn check_fixture(file: &str, features: &[&str], seed: u64, duration_ns: u64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(file);
    let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions {
        duration_ns: Some(duration_ns),
        check_invariants: Some(true),
        features: features.iter().map(|f| f.to_string()).collect(),
        seed: Some(seed),
        ..Default::default()
    };
    if let Err(e) = simulate(&s, &opts) {
        panic!("{file} seed {seed}: {e}");
    }
}

/// Issue 40's find: with TTWU_QUEUE_DELAYED, a worker delayed as it
/// blocked was handed to its own CPU's wakelist while that CPU was still
/// switching away from it, and `ttwu_delayed()` selected another CPU and
/// forwarded it there before the switch completed: it ran on two CPUs at
/// once ("task 32 is switching out but on_cpu=true"; on 40 CPUs, without
/// the check, a panic in the group pick). The kernel takes the wakelist's
/// IPI only once the switch is done; `ttwu_delayed()` now completes it
/// first, as `sched_ttwu_pending()` does for every other entry. Without
/// the fix every seed below fails within 45 ms.
#[test]
fn a_delayed_wakelist_entry_completes_its_tasks_switch_first() {
    for seed in [5, 8] {
        check_fixture("issue40-schbench-8cpu.toml", &["TTWU_QUEUE_DELAYED"], seed, 45_000_000);
    }
    for seed in [1, 4, 8] {
        check_fixture("issue40-schbench-40cpu.toml", &["TTWU_QUEUE_DELAYED"], seed, 15_000_000);
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

/// `schedlab hunt`'s first find (hunt seed 1, case 27 on qemu-4 with
/// NO_RT_PUSH_IPI, shrunk): t5 wakes on CPU 0 and preempts t0 (FIFO 4),
/// and the push callback queued by that switch moved t0 to CPU 1 while the
/// model still had t0 switching out of CPU 0, so t0 ran on CPU 1 with its
/// old switch open. The kernel clears `prev->on_cpu` in
/// `finish_task_switch()` before it runs the balance callbacks, and a
/// remote puller cannot take the runqueue lock before then: a push or pull
/// now completes the switch of the task it moves first.
#[test]
fn an_rt_push_of_the_task_switching_out_completes_its_switch() {
    let toml = r#"
name = "hunt-invariant-27"
topology = "qemu-4"
kernel = "6.12"
features = ["NO_RT_PUSH_IPI"]
duration = "18000us"
seed = 7921712820547201877

[mutex.m0]
pi = true

[[thread]]  # locker
name = "t0"
policy = "SCHED_FIFO"
priority = 4
affinity = "0-1"
loop = false
program = [{ lock = "m0" }, { unlock = "m0" }]

[[thread]]  # waker
name = "t3"
policy = "SCHED_OTHER"
nice = 0
affinity = "1"
loop = true
program = [{ signal = "wake_t4" }, { run = "10us" }]  # the run: the found loop took no time

[[thread]]  # locker
name = "t5"
policy = "SCHED_FIFO"
priority = 17
affinity = "0"
loop = true
program = [{ sleep = "1us" }]
"#;
    check("hunt-invariant-27.toml", toml, 18_000_000);
}
