//! A sleep's hrtimer is a range [requested, requested + timer slack], and one
//! hrtimer interrupt ends every sleep on its CPU whose range it falls into
//! (`__hrtimer_run_queues()`, kernel/time/hrtimer.c): two sleepers on one
//! CPU whose ranges overlap wake together, an RT sleeper has no range, and
//! the tick of a busy CPU ends a sleep inside its range.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_trace::{EventKind, Pid};

const MACHINE: &str = "hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 2\n";

fn with_machine(body: &str) -> Scenario {
    // One directory per call (the tests run in parallel threads), removed
    // when `dir` drops, a panic included: the scenario reads the machine
    // file while it is parsed.
    let dir = tempfile::Builder::new().prefix("schedlab-hrtimer-").tempdir().unwrap();
    std::fs::write(dir.path().join("m.toml"), MACHINE).unwrap();
    let text = format!("topology = \"m.toml\"\n{body}");
    Scenario::from_toml_str("inline.toml", &text, dir.path()).unwrap_or_else(|e| panic!("{e}"))
}

fn sim(s: &Scenario) -> SimResult {
    simulate(s, &SimOptions { seed: Some(1), check_invariants: Some(true), ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn pid(r: &SimResult, name: &str) -> Pid {
    r.threads.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no thread {name}")).pid
}

/// When each of `pid`'s wakeups began (`sched_waking`), in ns.
fn wakings(r: &SimResult, pid: Pid) -> Vec<u64> {
    r.trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::SchedWaking { pid: p, .. } if p == pid => Some(e.ts),
            _ => None,
        })
        .collect()
}

/// Two threads on CPU 1 sleeping 100 us in a loop, the second starting
/// 20 us after the first, with the given policy and (when the policy has
/// one) timer slack.
fn two_sleepers(policy: &str, slack: Option<&str>) -> Scenario {
    let slack = slack.map(|s| format!("timer_slack = \"{s}\"\n")).unwrap_or_default();
    with_machine(&format!(
        r#"duration = "50ms"
[[thread]]
name = "a"
affinity = "1"
policy = "{policy}"
{slack}loop = true
program = [ {{ sleep = "100us" }}, {{ run = "2us" }} ]
[[thread]]
name = "b"
affinity = "1"
policy = "{policy}"
{slack}delay = "20us"
loop = true
program = [ {{ sleep = "100us" }}, {{ run = "2us" }} ]
"#
    ))
}

/// How many of `b`'s wakeups began at the same instant as one of `a`'s.
fn shared_interrupts(r: &SimResult) -> (usize, usize) {
    let a = wakings(r, pid(r, "a"));
    let b = wakings(r, pid(r, "b"));
    let shared = b.iter().filter(|t| a.binary_search(t).is_ok()).count();
    (shared, b.len())
}

#[test]
fn overlapping_ranges_on_one_cpu_end_in_one_interrupt() {
    // a: [100, 150] us, b: [120, 170] us: a's hard expiry at 150 falls in
    // b's range, so b wakes in a's interrupt, and the two stay in step.
    let r = sim(&two_sleepers("SCHED_OTHER", Some("50us")));
    let (shared, all) = shared_interrupts(&r);
    assert!(all > 200, "{all} wakeups of b");
    assert!(shared * 10 >= all * 9, "only {shared} of b's {all} wakeups came in a's interrupt");
}

#[test]
fn ranges_that_do_not_overlap_end_in_interrupts_of_their_own() {
    // 10 us of slack: a's hard expiry at 110 us comes before b's range
    // opens at 120, so each sleep ends at its own hard expiry.
    let r = sim(&two_sleepers("SCHED_OTHER", Some("10us")));
    let (shared, all) = shared_interrupts(&r);
    assert!(all > 200, "{all} wakeups of b");
    assert!(shared * 10 < all, "{shared} of b's {all} wakeups came in a's interrupt");
}

#[test]
fn an_rt_sleeper_has_no_range() {
    // __setscheduler_params(): an RT task's timer_slack_ns is 0 (a scenario
    // may not give it one), so each sleep ends exactly when requested.
    let r = sim(&two_sleepers("SCHED_FIFO", None));
    let (shared, all) = shared_interrupts(&r);
    assert!(all > 200, "{all} wakeups of b");
    assert!(shared * 10 < all, "{shared} of b's {all} wakeups came in a's interrupt");
}

#[test]
fn the_tick_of_a_busy_cpu_ends_a_sleep_inside_its_range() {
    // The sleeper arms [950, 1050] us on CPU 1 at about 0; the hog keeps
    // CPU 1 busy, so its tick runs, and the tick at 1 ms ends the sleep.
    let r = sim(&with_machine(
        r#"duration = "3ms"
[[thread]]
name = "sleeper"
affinity = "1"
timer_slack = "100us"
program = [ { sleep = "950us" }, { run = "1ms" } ]
[[thread]]
name = "hog"
affinity = "1"
delay = "10us"
program = [ { run = "10ms" } ]
"#,
    ));
    let w = wakings(&r, pid(&r, "sleeper"));
    assert!(!w.is_empty(), "the sleeper never woke");
    assert!((1_000_000..1_001_000).contains(&w[0]), "woke at {} ns, not in the tick's interrupt at 1 ms", w[0]);
}
