//! SCHED_DEADLINE threads in scenario files and rt-app files: the
//! reservation read, and what the policy does not take refused where written.

use schedlab_scenario::{DlSpec, Policy};

mod common;
use common::{expect_err, parse};

const MS: u64 = 1_000_000;

/// A scenario with one thread `a` whose table body is `body`.
fn one(body: &str) -> String {
    format!("topology = \"smt-2x2\"\nduration = \"1s\"\n[[thread]]\nname = \"a\"\n{body}\nprogram = [{{ run = \"1ms\" }}]\n")
}

#[test]
fn a_deadline_thread_carries_its_reservation_and_no_timer_slack() {
    let s =
        parse(&one("policy = \"SCHED_DEADLINE\"\nruntime = \"2ms\"\ndeadline = \"5ms\"\nperiod = \"10ms\"")).unwrap();
    let t = &s.threads[0];
    assert_eq!(t.policy, Policy::Deadline);
    assert_eq!(t.dl, Some(DlSpec { runtime_ns: 2 * MS, deadline_ns: 5 * MS, period_ns: 10 * MS, reclaim: false }));
    assert_eq!((t.timer_slack_ns, t.nice, t.rt_priority), (0, 0, 0));
    // `period` may be left out: the kernel takes the deadline.
    let s = parse(&one("policy = \"deadline\"\nruntime = \"1ms\"\ndeadline = \"4ms\"")).unwrap();
    assert_eq!(s.threads[0].dl, Some(DlSpec { runtime_ns: MS, deadline_ns: 4 * MS, period_ns: 0, reclaim: false }));
    // Other policies have no reservation.
    assert_eq!(parse(&one("policy = \"SCHED_FIFO\"")).unwrap().threads[0].dl, None);
}

#[test]
fn what_sched_deadline_does_not_take_is_refused_where_written() {
    expect_err(
        &one("policy = \"SCHED_DEADLINE\"\ndeadline = \"5ms\""),
        5,
        "\"SCHED_DEADLINE\"",
        "needs `runtime` and `deadline`",
    );
    expect_err(
        &one("policy = \"SCHED_DEADLINE\"\nruntime = \"1ms\"\ndeadline = \"5ms\"\nnice = 3"),
        8,
        "3",
        "do not apply to SCHED_DEADLINE",
    );
    expect_err(
        &one("policy = \"SCHED_DEADLINE\"\nruntime = \"1ms\"\ndeadline = \"5ms\"\nslice = \"1ms\""),
        8,
        "\"1ms\"",
        "applies only to fair policies",
    );
    expect_err(
        &one("policy = \"SCHED_DEADLINE\"\nruntime = \"1ms\"\ndeadline = \"5ms\"\nstart_cpu = 1"),
        8,
        "1",
        "EPERM",
    );
    expect_err(&one("policy = \"SCHED_FIFO\"\nruntime = \"1ms\""), 6, "\"1ms\"", "SCHED_DEADLINE parameter");
    expect_err(&one("runtime = \"0ms\"\npolicy = \"SCHED_DEADLINE\"\ndeadline = \"5ms\""), 5, "\"0ms\"", "runtime");
    let op = "topology = \"smt-2x2\"\nduration = \"1s\"\n[[thread]]\nname = \"a\"\nprogram = [{ setscheduler = \
              \"SCHED_DEADLINE\" }]\n";
    expect_err(op, 5, "\"SCHED_DEADLINE\"", "`setscheduler` to SCHED_DEADLINE is not modeled");
}

#[test]
fn rt_app_deadline_keys_default_as_rt_app_fills_them_in() {
    let s = parse(
        r#"{ "tasks": { "d": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "run": 1000,
              "timer": { "ref": "unique", "period": 10000 } } }, "global": { "duration": 1 } }"#,
    )
    .unwrap();
    // dl-deadline defaults to the period.
    assert_eq!(
        s.threads[0].dl,
        Some(DlSpec { runtime_ns: 2 * MS, deadline_ns: 10 * MS, period_ns: 10 * MS, reclaim: false })
    );
    let s = parse(
        r#"{ "tasks": { "d": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "run": 1000 } },
             "global": { "duration": 1 } }"#,
    )
    .unwrap();
    // dl-period defaults to the runtime, and dl-deadline to the period.
    assert_eq!(
        s.threads[0].dl,
        Some(DlSpec { runtime_ns: 3 * MS, deadline_ns: 3 * MS, period_ns: 3 * MS, reclaim: false })
    );
    let e =
        parse(r#"{ "tasks": { "d": { "dl-runtime": 3000, "run": 1000 } }, "global": { "duration": 1 } }"#).unwrap_err();
    assert!(e.message.contains("apply to \"policy\": \"SCHED_DEADLINE\" only"), "{e}");
}

#[test]
fn reclaim_asks_sched_flag_reclaim_and_only_a_deadline_thread_may_ask() {
    let s = parse(&one("policy = \"SCHED_DEADLINE\"\nruntime = \"3ms\"\ndeadline = \"10ms\"\nreclaim = true")).unwrap();
    assert_eq!(s.threads[0].dl, Some(DlSpec { runtime_ns: 3 * MS, deadline_ns: 10 * MS, period_ns: 0, reclaim: true }));
    let s =
        parse(&one("policy = \"SCHED_DEADLINE\"\nruntime = \"3ms\"\ndeadline = \"10ms\"\nreclaim = false")).unwrap();
    assert!(!s.threads[0].dl.unwrap().reclaim);
    expect_err(&one("policy = \"SCHED_FIFO\"\nreclaim = true"), 6, "true", "`reclaim` is SCHED_FLAG_RECLAIM");
    expect_err(&one("reclaim = true"), 5, "true", "this thread's policy is SCHED_OTHER");
    expect_err(&one("policy = \"SCHED_DEADLINE\"\nruntime = \"3ms\"\ndeadline = \"10ms\"\nreclaim = 1"), 8, "1", "");
}
