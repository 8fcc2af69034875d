//! Utilisation clamps (uclamp) in scenario files (`uclamp_min`, `uclamp_max`)
//! and rt-app files (`util_min`, `util_max`): read as `sched_setattr()` takes
//! them, bad values refused where written.

use schedlab_scenario::UclampSpec;

mod common;
use common::{expect_err, parse};

/// A scenario with one thread `a` whose table body is `body`.
fn one(body: &str) -> String {
    format!("topology = \"smt-2x2\"\nduration = \"1s\"\n[[thread]]\nname = \"a\"\n{body}\nprogram = [{{ run = \"1ms\" }}]\n")
}

#[test]
fn uclamp_keys_give_the_clamps_sched_setattr_sets() {
    let s = parse(&one("uclamp_min = 512\nuclamp_max = 800")).unwrap();
    assert_eq!(s.threads[0].uclamp, Some(UclampSpec { min: Some(512), max: Some(800) }));
    let s = parse(&one("uclamp_max = 0")).unwrap();
    assert_eq!(s.threads[0].uclamp, Some(UclampSpec { min: None, max: Some(0) }));
    // RT threads may set them too, as sched_setattr() allows.
    let s = parse(&one("policy = \"SCHED_FIFO\"\npriority = 10\nuclamp_min = 1024")).unwrap();
    assert_eq!(s.threads[0].uclamp, Some(UclampSpec { min: Some(1024), max: None }));
    assert_eq!(parse(&one("")).unwrap().threads[0].uclamp, None);
}

#[test]
fn clamps_outside_0_1024_or_a_floor_above_the_ceiling_are_refused_where_written() {
    expect_err(&one("uclamp_min = 1025"), 5, "1025", "`uclamp_min` = 1025 is out of range: expected 0..1024");
    expect_err(&one("uclamp_max = -1"), 5, "-1", "`uclamp_max` = -1 is out of range");
    expect_err(&one("uclamp_min = 600\nuclamp_max = 500"), 5, "600", "expected uclamp_min <= uclamp_max");
    expect_err(&one("uclamp_min = \"big\""), 5, "\"big\"", "expected i64");
}

#[test]
fn rt_app_util_min_and_util_max_are_the_task_s_clamps() {
    let s = parse(
        r#"{ "tasks": { "t": { "util_min": 700, "util_max": 900, "run": 1000, "sleep": 1000 } },
             "global": { "duration": 1 } }"#,
    )
    .unwrap();
    assert_eq!(s.threads[0].uclamp, Some(UclampSpec { min: Some(700), max: Some(900) }));
    // -1, rt-app's default, leaves a clamp alone.
    let s = parse(r#"{ "tasks": { "t": { "util_min": -1, "run": 1000 } }, "global": { "duration": 1 } }"#).unwrap();
    assert_eq!(s.threads[0].uclamp, None);
    for (json, msg) in [
        (r#"{ "tasks": { "t": { "util_max": 2000, "run": 1000 } } }"#, "`util_max` = 2000 is out of range"),
        (r#"{ "tasks": { "t": { "util_min": -5, "run": 1000 } } }"#, "expected -1 (leave the clamp alone) or 0..1024"),
        (r#"{ "tasks": { "t": { "util_min": 900, "util_max": 100, "run": 1000 } } }"#, "util_min <= util_max"),
        (
            r#"{ "tasks": { "t": { "phases": { "p": { "util_min": 100, "run": 1000 } } } } }"#,
            "per-phase utilisation clamps are not supported yet",
        ),
    ] {
        let e = parse(json).unwrap_err();
        assert!(e.message.contains(msg), "{e}");
        assert_eq!((e.path.as_str(), e.line), ("t.toml", 1), "{e}");
    }
}
