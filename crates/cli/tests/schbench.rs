//! schbench's own invariants in a simulated run, checked from the trace
//! independently of the analysis module, and the analysis checked against
//! that independent reading.

use std::collections::HashMap;
use std::path::Path;

use schedlab_analysis::{schbench_report, PlatHistogram, SchbenchCollector};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, simulate_streaming, SimOptions};
use schedlab_trace::{EventKind, UserOp};

const SMALL: &str = r#"
topology = "smt-2x2"
seed = 3
[schbench]
message_threads = 2
workers = 5
runtime = "40ms"
operations = 1
op_time = "20us"
no_lock = true
message_cpus = "auto"
"#;

fn small() -> Scenario {
    Scenario::from_toml_str("small.toml", SMALL, Path::new(".")).unwrap()
}

#[test]
fn every_posted_worker_runs_once_per_post_and_rps_is_requests_over_runtime() {
    let s = small();
    let r = simulate(&s, &SimOptions::default()).unwrap();
    let t = &r.trace;
    let name = |obj: u32| t.table.objects[obj as usize].as_str();
    let sb = s.schbench.as_ref().unwrap();
    let msg_pids: Vec<i32> = (0..2).map(|m| r.threads[sb.first_thread + m].pid).collect();

    // Per worker futex, the message threads' posts and the worker's wakeups
    // must alternate post, wakeup, post, wakeup, ... (a binary semaphore
    // posted only for a listed worker).
    let mut pending: HashMap<u32, bool> = HashMap::new();
    let (mut posts, mut wakeups) = (0u64, 0u64);
    // Per worker pid: wakeups and completed requests (loop_end).
    let mut woken: HashMap<i32, u64> = HashMap::new();
    let mut done: HashMap<i32, u64> = HashMap::new();
    // The independent wakeup latencies: shared list-run stamp → wait_done, in µs.
    let mut stamp: HashMap<i32, u64> = HashMap::new();
    let mut wake_time: HashMap<u32, u64> = HashMap::new();
    let mut wakeup_hist = PlatHistogram::default();
    for e in &t.events {
        let EventKind::User { pid, op } = e.kind else { continue };
        match op {
            UserOp::Post { obj } if name(obj).starts_with("schbench-list") => {
                assert!(msg_pids.contains(&pid));
                stamp.insert(pid, e.ts);
            }
            UserOp::Signal { obj } if name(obj).starts_with("schbench-wf") => {
                assert!(msg_pids.contains(&pid), "only message threads post workers");
                let was = pending.insert(obj, true).unwrap_or(false);
                assert!(!was, "{} posted twice without running in between", name(obj));
                wake_time.insert(obj, stamp[&pid]);
                posts += 1;
            }
            UserOp::WaitDone { obj } if name(obj).starts_with("schbench-wf") => {
                assert_eq!(pending.insert(obj, false), Some(true), "{} ran without a post", name(obj));
                wakeups += 1;
                *woken.entry(pid).or_default() += 1;
                let d = e.ts / 1000 - wake_time[&obj] / 1000;
                if d > 0 {
                    wakeup_hist.add(d as u32);
                }
            }
            UserOp::LoopEnd { .. } if !msg_pids.contains(&pid) => *done.entry(pid).or_default() += 1,
            _ => {}
        }
    }
    assert_eq!(woken.len(), 10, "all 10 workers ran");
    assert!(posts > 1000 && posts - wakeups <= 10, "{posts} posts, {wakeups} wakeups");
    for (pid, w) in &woken {
        let n = done.get(pid).copied().unwrap_or(0);
        assert!(n <= *w && *w <= n + 1, "worker {pid}: {w} wakeups, {n} requests");
    }

    let report = schbench_report(t, r.end_ns).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let completed: u64 = done.values().sum();
    assert_eq!(report.completed, completed);
    assert_eq!(report.average_rps, completed as f64 / 0.040, "rps = completed requests / runtime");
    // The analysis reads the shared timestamp as this test does.
    assert_eq!(report.wakeup, wakeup_hist);
    // Each request is at least the usleep's soft end (100 us; its hrtimer
    // ranges over the next 50 us of slack) and the 20 us of math.
    assert!(report.request.min >= 120, "{}", report.request.min);
}

#[test]
fn streaming_without_kernel_tracepoints_changes_nothing_in_the_run() {
    let s = small();
    let opts = SimOptions { duration_ns: Some(20_000_000), ..Default::default() };
    let full = simulate(&s, &opts).unwrap();
    let whole = schbench_report(&full.trace, full.end_ns).unwrap();
    let table =
        schedlab_trace::TaskTable { objects: s.objects.iter().map(|o| o.name.clone()).collect(), ..Default::default() };
    let mut c = SchbenchCollector::new(&table, None);
    let streamed = simulate_streaming(&s, &opts, &mut |e| c.observe(e), false).unwrap();
    assert!(streamed.trace.events.is_empty());
    let report = c.finish(streamed.end_ns);
    assert_eq!((report.completed, &report.wakeup, &report.request), (whole.completed, &whole.wakeup, &whole.request));
    let runtimes = |r: &schedlab_sim::SimResult| r.threads.iter().map(|t| t.runtime_ns).collect::<Vec<_>>();
    assert_eq!(runtimes(&full), runtimes(&streamed));
}

#[test]
fn rps_percentiles_take_one_sample_per_second_starting_with_schbench_s_zero() {
    use schedlab_trace::{Event, TaskTable};
    let table = TaskTable { objects: vec!["schbench-list0".into(), "schbench-wf0.0".into()], ..Default::default() };
    let mut c = SchbenchCollector::new(&table, None);
    let ev = |ts: u64, pid: i32, op: UserOp| Event {
        ts,
        cpu: 0,
        ctx_pid: pid,
        flags: *b"...1.",
        kind: EventKind::User { pid, op },
    };
    // Worker 2 completes 3 requests in second 0 and 1 in second 1.
    let mut t = 1_000;
    for _ in 0..4 {
        c.observe(&ev(t, 1, UserOp::Post { obj: 0 }));
        c.observe(&ev(t + 1_000, 1, UserOp::Signal { obj: 1 }));
        c.observe(&ev(t + 5_000, 2, UserOp::WaitDone { obj: 1 }));
        c.observe(&ev(t + 160_000, 2, UserOp::LoopEnd { n: 0 }));
        t += if t < 400_000_000 { 300_000_000 } else { 700_000_000 };
    }
    let r = c.finish(2_000_000_000);
    assert_eq!(r.completed, 4);
    assert_eq!(r.average_rps, 2.0);
    // Samples 0 (at the start), 3 and 1: p20 → 0, p50 → 1, p90 → 3.
    assert_eq!(r.rps.nr_samples, 3);
    assert_eq!(r.rps.percentiles(&[20.0, 50.0, 90.0]), vec![0, 1, 3]);
    // Wakeup: 5 us each (stamp at t, wait_done at t + 5 us); request 155 us.
    assert_eq!((r.wakeup.min, r.wakeup.max, r.request.min), (5, 5, 155));
}
