//! `schedlab diff` end to end on the seed scenarios: where two settings part
//! ways, read off the two runs' traces (`schedlab run ... --trace`).

mod common;
use common::{err, ok};

/// The lines of `text` after the line starting with `head`, up to the next blank line.
fn section<'a>(text: &'a str, head: &str) -> Vec<&'a str> {
    text.lines().skip_while(|l| !l.starts_with(head)).skip(1).take_while(|l| !l.is_empty()).collect()
}

const ASYM: [&str; 8] =
    ["diff", "scenarios/asym_min.toml", "--a", "DELAY_DEQUEUE", "--b", "NO_DELAY_DEQUEUE", "--duration", "600ms"];

/// The `s` in "first divergence at 0.167347 s: event #4905 (...)": (ts in ns, index).
fn divergence(out: &str) -> (u64, u64) {
    let line = out.lines().find(|l| l.starts_with("first divergence at ")).unwrap_or_else(|| panic!("{out}"));
    let secs = line["first divergence at ".len()..].split(' ').next().unwrap();
    let (whole, frac) = secs.split_once('.').unwrap();
    let ts = whole.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap() * 1_000;
    let index = line.split("event #").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    (ts, index)
}

/// `key=value` from a trace line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in {line}"))
}

#[test]
fn asym_min_diverges_where_delay_dequeue_keeps_a_worker_queued() {
    let out = ok(&ASYM);
    // A worker ends a burst on CPU 6 while the other was just woken behind
    // it, and blocks ineligible: A leaves it sched_delayed, B dequeues it.
    // Both then switch to the other worker.
    let (ts, _) = divergence(&out);
    let a = section(&out, "A from the divergence on");
    assert!(
        a[0].starts_with(">>") && a[0].contains("schedlab_delayed: comm=worker-") && a[0].contains("what=delayed"),
        "{out}"
    );
    let (w, pid) = (field(a[0], "comm="), field(a[0], "pid="));
    let other = if w == "worker-0" { "worker-1" } else { "worker-0" };
    let b = section(&out, "B from the divergence on");
    assert!(
        b[0].contains(&format!(
            "sched_switch: prev_comm={w} prev_pid={pid} prev_prio=120 prev_state=S ==> next_comm={other}"
        )),
        "{out}"
    );
    let what = section(&out, "what differs");
    assert!(
        what[0].starts_with(&format!("  A (decision): dequeue_entity() left {w} queued as sched_delayed on CPU 6")),
        "{out}"
    );
    assert_eq!(what[1], format!("  B (event): __schedule() on CPU 6: {w} blocks, {other} runs"));
    // 10 us later the waker wakes it: in place behind the other on CPU 6 (A)
    // or through select_task_rq() onto an idle CPU (B): the seed's stall.
    let next = section(&out, "next differing decisions");
    let at =
        next.iter().position(|l| *l == format!("  {w} ({pid}) wakeup:")).expect("the blocked worker's wakeup pair");
    let wake = format!("{}.{:06}", (ts + 10_000) / 1_000_000_000, (ts + 10_000) % 1_000_000_000 / 1_000);
    assert_eq!(
        next[at + 1],
        format!("    A {wake}: ttwu_runnable() requeued {w} in place (sched_delayed) on CPU 6, no select_task_rq()")
    );
    assert!(next[at + 2].starts_with(&format!("    B {wake}: select_task_rq() chose CPU ")), "{out}");
    assert!(next[at + 2].ends_with(&format!("for {w}, queued on its wakelist (ttwu_queue_wakelist)")), "{out}");
    let cpus = section(&out, "CPUs involved");
    let cpu6 = cpus.iter().find(|l| l.starts_with("  CPU 6 ")).unwrap_or_else(|| panic!("{out}"));
    assert!(cpu6.contains(&format!("running {w} ({pid})")) && cpu6.contains(&format!("waiting: {other}")), "{out}");
    assert!(cpus.iter().any(|l| l.contains("idle for")), "an allowed CPU sat idle: {out}");
    // The drift table has a row per workload thread.
    let drift = section(&out, "drift:");
    assert_eq!(drift.len(), 5, "{out}");
    assert!(drift[2].starts_with("worker-0  1001"), "{out}");
    assert!(out.contains("stalls    A: "), "{out}");
}

#[test]
fn asym_min_does_not_diverge_in_its_first_150ms() {
    let mut args = ASYM.to_vec();
    args[7] = "150ms";
    let out = ok(&args);
    let line = out
        .lines()
        .find(|l| l.starts_with("no divergence: both runs emit the same "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.ends_with("events; the setting made no difference for seed 1 and 0.150 s of simulated time"),
        "{line}"
    );
    // The same settings twice are reported as such.
    let out = ok(&["diff", "scenarios/asym_min.toml", "--a", "", "--b", "defaults", "--duration", "50ms"]);
    assert!(out.contains("A and B resolve to the same kernel settings"), "{out}");
    assert!(out.contains("no divergence"), "{out}");
}

#[test]
fn rt_pi_push_diverges_at_w_blocking_pull_vs_push_ipi() {
    let out = ok(&[
        "diff",
        "scenarios/rt-pi-push.toml",
        "--a",
        "NO_RT_PUSH_IPI",
        "--b",
        "RT_PUSH_IPI",
        "--duration",
        "100ms",
        "--context",
        "2",
    ]);
    // W posts t_w at 25.010 ms and blocks on M, boosting L; going idle, CPU 2
    // pulls directly (A) or asks CPU 1 to push by IPI (B).
    assert!(out.contains("first divergence at 0.025010 s"), "{out}");
    let before = section(&out, "last 2 common events");
    assert_eq!(before.len(), 2);
    assert!(before[1].contains("schedlab_rt_prio_changed: comm=L pid=1002 oldprio=89 newprio=9"), "{out}");
    assert!(
        section(&out, "A from")[0].contains("W-1004    [002] d..2.     0.025010: schedlab_rt_pull: src_cpu=1 comm=L")
    );
    assert!(section(&out, "B from")[0].contains("0.025010: schedlab_rt_push_ipi: dst_cpu=1 first=1"), "{out}");
    let what = section(&out, "what differs");
    assert!(
        what[0].starts_with("  A (decision): pull_rt_task() on CPU 2 passed over L on CPU 1: not allowed"),
        "{out}"
    );
    assert!(what[1].starts_with("  B (decision): tell_cpu_to_push(): CPU 2 asks CPU 1 to push by IPI"), "{out}");
    assert!(out.contains("    B 0.025040: push_rt_task() for CPU 1 pushed L to CPU 3"), "{out}");
    // L has waited on CPU 1 behind X since X took the CPU at 5 ms.
    let cpus = section(&out, "CPUs involved");
    assert_eq!(
        cpus,
        vec![
            "  CPU 1   running X (1003) for 20.010 ms; waiting: L (1002) preempted for 20.010 ms",
            "  CPU 2   running W (1004) for 10.0 us; waiting: none",
            "  CPU 3   running R (1001) for 25.010 ms; waiting: none",
        ]
    );
    // The scenario's measure: L resumes at once only with the push IPI.
    let measures = section(&out, "measures");
    assert!(measures[0].contains("A  L resume") && measures[0].contains("within 100.000 ms: 0/1"), "{out}");
    assert!(measures[1].contains("B  L resume") && measures[1].contains("within 100.000 ms: 1/1"), "{out}");
}

#[test]
fn json_carries_the_divergence_and_the_drift() {
    let (ts, index) = divergence(&ok(&ASYM));
    let mut args = ASYM.to_vec();
    args.push("--json");
    let doc: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    let d = &doc["divergence"];
    assert_eq!(d["index"], index, "the text's event #");
    assert_eq!(d["ts"].as_u64().unwrap() / 1_000, ts / 1_000, "the text's time, to the microsecond");
    assert!(d["a"]["event"]["line"].as_str().unwrap().contains("schedlab_delayed"), "{d}");
    assert_eq!(d["a"]["event"]["decision"], true);
    let cpus: Vec<u64> = d["cpus"].as_array().unwrap().iter().map(|c| c["cpu"].as_u64().unwrap()).collect();
    assert!(cpus.contains(&6) && cpus.iter().all(|c| (4..=7).contains(c)), "{cpus:?}");
    assert_eq!(doc["a"]["features_changed"], serde_json::json!([]));
    assert_eq!(doc["b"]["features_changed"], serde_json::json!(["NO_DELAY_DEQUEUE"]));
    assert_eq!(doc["drift"].as_array().unwrap().len(), 3);
}

#[test]
fn bad_settings_are_errors_naming_the_flag() {
    let e = err(&["diff", "scenarios/asym_min.toml", "--a", "NO_DELAY_DEQUEUE,FOO"]);
    assert!(e.contains("--a NO_DELAY_DEQUEUE,FOO: unknown sched feature `FOO`"), "{e}");
    let e = err(&["diff", "scenarios/asym_min.toml", "--b", "itmt=yes"]);
    assert!(e.contains("--b itmt=yes: `itmt=yes`: expected itmt=0 or itmt=1"), "{e}");
    let e = err(&["diff", "scenarios/asym_min.toml", "--b", "kernel=4.19"]);
    assert!(e.contains("unknown kernel profile `4.19`"), "{e}");
    let e = err(&["diff", "scenarios/no-such.toml"]);
    assert!(e.contains("no-such.toml"), "{e}");
    let e = err(&["diff", "scenarios/asym_min.toml", "--duration", "soon"]);
    assert!(e.contains("--duration"), "{e}");
}

#[test]
fn itmt_off_removes_the_asym_packing_pull_to_cpu_6() {
    let out = ok(&["diff", "scenarios/asym_min.toml", "--b", "itmt=0", "--duration", "50ms"]);
    assert!(out.contains("B         itmt=0: kernel mainline, ITMT off, features: defaults"), "{out}");
    // With ITMT the idle load balancer (on CPU 0) asks the stopper on CPU 4
    // to push worker-0 to CPU 6, the highest-priority core; without it
    // nothing happens then.
    let (ts, _) = divergence(&out);
    let at = format!("{}.{:06}", ts / 1_000_000_000, ts % 1_000_000_000 / 1_000);
    let what = section(&out, "what differs");
    assert_eq!(
        what[0],
        "  A (decision): need_active_balance(): the stopper on CPU 4 is queued to push a task to CPU 6"
    );
    assert!(what[1].starts_with(&format!("  B: nothing at {at}; next, at ")), "{out}");
    let a = section(&out, "A from the divergence on");
    assert!(
        a.iter().any(|l| l.contains("schedlab_lb_migrate: comm=worker-0 pid=1001 src_cpu=4 dst_cpu=6 kind=active")),
        "the stopper moves worker-0 to CPU 6: {out}"
    );
}

/// Threads a `fork` created are rows of the drift table like the rest.
#[test]
fn forked_threads_are_in_the_drift_table() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("fork.toml");
    std::fs::write(
        &sc,
        "topology = \"smt-2x2\"\n[[thread]]\nname = \"parent\"\nloop = 2\n\
         program = [{ run = \"1ms\" }, { fork = \"kid\" }, { sleep = \"2ms\" }]\n\
         [[thread]]\nname = \"kid\"\ninstances = 0\nloop = 2\nprogram = [{ run = \"500us\" }, { sleep = \"300us\" }]\n",
    )
    .unwrap();
    let out = ok(&["diff", sc.to_str().unwrap(), "--a", "", "--b", "NO_DELAY_DEQUEUE", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let comms: Vec<&str> = doc["drift"].as_array().unwrap().iter().map(|r| r["comm"].as_str().unwrap()).collect();
    assert_eq!(comms, ["parent", "kid-0", "kid-1"], "{out}");
}
