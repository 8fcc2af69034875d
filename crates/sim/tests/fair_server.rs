//! The fair server (`fair_server_runtime`): a CPU-bound SCHED_FIFO task may
//! not starve a fair task on the same CPU beyond the server's budget, and
//! runtime 0 (the debugfs knob many RT users set) really turns it off.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use schedlab_trace::EventKind;
use std::path::Path;

fn scenario(fair_server: &str) -> Scenario {
    let text = format!(
        r#"
name = "fair-server"
topology = "qemu-4"
duration = "2s"
{fair_server}

[[thread]]
name = "hog"
policy = "SCHED_FIFO"
priority = 50
affinity = "0"
program = [{{ run = "10s" }}]

[[thread]]
name = "fair"
affinity = "0"
delay = "1ms"
program = [{{ run = "10s" }}]
"#
    );
    Scenario::from_toml_str("fair-server.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn fair_runtime_ms(fair_server: &str) -> f64 {
    let r = simulate(&scenario(fair_server), &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let ms = r.threads.iter().find(|t| t.name == "fair").unwrap().runtime_ns as f64 / 1e6;
    eprintln!("{fair_server:?}: fair ran {ms:.3} ms");
    ms
}

#[test]
fn default_fair_server_gives_a_starved_fair_task_its_budget_each_period() {
    // 50 ms per 1 s period over 2 s: about 100 ms, never much more.
    let ms = fair_runtime_ms("");
    assert!((80.0..=110.0).contains(&ms), "fair task ran {ms:.1} ms");
}

#[test]
fn fair_server_runtime_scales_the_budget_and_zero_disables_it() {
    let ms = fair_runtime_ms("fair_server_runtime = \"200ms\"");
    assert!((350.0..=410.0).contains(&ms), "fair task ran {ms:.1} ms");
    assert_eq!(fair_runtime_ms("fair_server_runtime = \"0\""), 0.0);
}

#[test]
fn fair_server_runtime_beyond_its_period_is_refused() {
    let text = "name = \"x\"\ntopology = \"qemu-4\"\nfair_server_runtime = \"2s\"\n[[thread]]\nname = \"a\"\nprogram = [{ run = \"1ms\" }]\n";
    let err = Scenario::from_toml_str("x.toml", text, Path::new(".")).unwrap_err().to_string();
    assert!(err.contains("x.toml:3") && err.contains("fair_server_runtime"), "{err}");
}

#[test]
fn sched_rt_runtime_us_is_checked_as_the_kernel_checks_the_write() {
    let file = |keys: &str| {
        format!("name = \"x\"\ntopology = \"qemu-4\"\nduration = \"1s\"\n{keys}\n[[thread]]\nname = \"a\"\nprogram = [{{ run = \"1ms\" }}]\n")
    };
    let parse = |keys: &str| Scenario::from_toml_str("x.toml", &file(keys), Path::new("."));
    // Below the fair servers' 5 %: EBUSY, like sched_dl_global_validate().
    let err = parse("sched_rt_runtime_us = 40000").unwrap_err().to_string();
    assert!(err.contains("x.toml:4") && err.contains("EBUSY"), "{err}");
    // ... which is fine once the fair servers are off.
    if let Err(e) = parse("fair_server_runtime = \"0\"\nsched_rt_runtime_us = 40000") {
        panic!("{e}");
    }
    let err = parse("sched_rt_runtime_us = -2").unwrap_err().to_string();
    assert!(err.contains("x.toml:4") && err.contains("-1"), "{err}");
    let err = parse("sched_rt_runtime_us = 1000001").unwrap_err().to_string();
    assert!(err.contains("1000000"), "{err}");
    // Accepted, and without RT_GROUP_SCHED it changes nothing but a note: the fair task still gets its budget.
    let s = parse("sched_rt_runtime_us = -1").unwrap();
    assert_eq!(s.sched_rt_runtime_us, Some(-1));
    let ms = fair_runtime_ms("sched_rt_runtime_us = -1");
    assert!((80.0..=110.0).contains(&ms), "fair task ran {ms:.1} ms");
    let r = simulate(&scenario("sched_rt_runtime_us = 950000"), &SimOptions::default()).unwrap();
    assert!(r.notes.iter().any(|n| n.contains("sched_rt_runtime_us = 950000 does not throttle")), "{:?}", r.notes);
}

/// The scenario crate checks `sched_rt_runtime_us` against the fair
/// servers' default bandwidth without depending on the kernel model.
#[test]
fn the_scenario_checks_against_the_kernel_default_fair_server_runtime() {
    assert_eq!(schedlab_scenario::DEFAULT_FAIR_SERVER_RUNTIME_NS, schedlab_kernel::deadline::FAIR_SERVER_RUNTIME);
    assert_eq!(schedlab_scenario::FAIR_SERVER_PERIOD_NS, schedlab_kernel::deadline::FAIR_SERVER_PERIOD);
}

#[test]
fn kernel_6_9_has_no_fair_server_and_refuses_what_6_12_added() {
    // The RT hog starves the fair task for good on 6.9: no fair server.
    let text = "topology = \"smt-2x2\"\nkernel = \"6.9\"\nduration = \"1200ms\"\n[[thread]]\nname = \"hog\"\npolicy = \"SCHED_FIFO\"\npriority = 50\naffinity = \"1\"\nprogram = [ { run = \"2s\" } ]\n[[thread]]\nname = \"fair\"\naffinity = \"1\"\ndelay = \"1ms\"\nprogram = [ { run = \"1ms\" } ]\n";
    let ran = |kernel: &str| {
        let s = Scenario::from_toml_str("fs.toml", &text.replace("6.9", kernel), Path::new(".")).unwrap();
        let r =
            simulate(&s, &SimOptions { seed: Some(1), check_invariants: Some(true), ..Default::default() }).unwrap();
        r.trace.events.iter().any(|e| {
            matches!(e.kind, EventKind::SchedSwitch { next_pid, .. }
                if r.trace.table.tasks.get(&next_pid).is_some_and(|t| t.comm == "fair"))
        })
    };
    assert!(!ran("6.9"), "6.9 has no fair server to rescue it");
    assert!(ran("6.12"), "6.12's fair server runs it after ~950 ms");
    let bad = text.replace("duration", "features = [\"NO_DELAY_DEQUEUE\"]\nduration");
    let s = Scenario::from_toml_str("fs.toml", &bad, Path::new(".")).unwrap();
    let e = simulate(&s, &SimOptions::default()).unwrap_err().to_string();
    assert!(e.contains("fs.toml:3:") && e.contains("DELAY_DEQUEUE does not exist in kernel profile `6.9`"), "{e}");
}

#[test]
fn the_server_keeps_its_period_while_the_fair_task_sleeps_and_idle_time_counts() {
    // 6.12.117's server starts with the first fair enqueue (t = 0: deadline
    // 1000 ms, runtime 50 ms) and stays active while the fair task sleeps.
    // The task runs 10 ms, sleeps 100 ms; the CPU idles 10 ms until an RT
    // hog starts at 20 ms (idle time counts against the runtime); the task
    // wakes at 110 ms behind the hog. Runtime left 50 - 10 - 10 = 30 ms, so
    // the zero-laxity instant is 1000 - 30 = 970 ms, not 110 + 950.
    let text = "topology = \"qemu-4\"\nduration = \"1200ms\"\n[[thread]]\nname = \"hog\"\npolicy = \"SCHED_FIFO\"\npriority = 50\naffinity = \"0\"\ndelay = \"20ms\"\nprogram = [ { run = \"5s\" } ]\n[[thread]]\nname = \"fair\"\naffinity = \"0\"\nprogram = [ { run = \"10ms\" }, { sleep = \"100ms\" }, { run = \"200ms\" } ]\n";
    let s = Scenario::from_toml_str("fs.toml", text, Path::new(".")).unwrap();
    let r = simulate(&s, &SimOptions { seed: Some(1), check_invariants: Some(true), ..Default::default() }).unwrap();
    let fair_in: Vec<u64> = r
        .trace
        .events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::SchedSwitch { next_pid, .. }
                if r.trace.table.tasks.get(&next_pid).is_some_and(|t| t.comm == "fair"))
        })
        .map(|e| e.ts)
        .collect();
    let rescued = fair_in.iter().copied().find(|&t| t > 110_000_000).expect("rescued");
    assert!(rescued.abs_diff(970_000_000) < 200_000, "first run after the wakeup at {rescued} ns: {fair_in:?}");
}
