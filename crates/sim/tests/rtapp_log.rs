//! rt-app's log rows from a simulated run follow rt-app's own arithmetic.

use schedlab_scenario::Scenario;
use schedlab_sim::{render_rtapp_log, simulate, SimOptions};
use std::path::Path;

fn rows(json: &str) -> Vec<schedlab_sim::RtAppRow> {
    let s = Scenario::from_toml_str("t.json", json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(&s, &SimOptions { rtapp_log: true, ..Default::default() }).unwrap();
    r.rtapp_log[0].clone()
}

#[test]
fn a_periodic_pass_has_its_slack_its_wakeup_latency_and_its_configured_totals() {
    let rows = rows(
        r#"{ "tasks": { "p": { "loop": -1, "policy": "SCHED_FIFO",
             "run": 2000, "timer": { "ref": "unique", "period": 10000 } } },
           "global": { "duration": 1 }, "schedlab": { "topology": "qemu-4" } }"#,
    );
    assert!((98..=100).contains(&rows.len()), "{} rows in 1 s of 10 ms periods", rows.len());
    for (k, r) in rows.iter().enumerate() {
        assert_eq!((r.c_duration_ns, r.c_period_ns), (2_000_000, 10_000_000));
        if k > 0 {
            assert_eq!(r.end_ns - r.start_ns, 10_000_000, "row {k}: a pass lasts the period: {r:?}");
        }
        assert!(r.wu_lat_ns > 0 && r.wu_lat_ns < 100_000, "row {k}: a FIFO task has no timer slack: {r:?}");
        if k > 0 {
            // The pass starts when the previous timer woke it: slack is the
            // period less that latency and the run.
            let want = 10_000_000 - rows[k - 1].wu_lat_ns as i64 - r.run_ns as i64;
            assert!((r.slack_ns - want).abs() < 1_000, "row {k}: slack {} vs {want}", r.slack_ns);
        }
    }
    let text = render_rtapp_log(0, "SCHED_FIFO", 10, &rows);
    assert!(text.starts_with("# Policy : SCHED_FIFO priority : 10\n#idx     perf      run   period"), "{text}");
    assert_eq!(text.lines().nth(2).unwrap().split_whitespace().count(), 11);
}

#[test]
fn an_overrun_timer_reports_negative_slack_and_no_wakeup_latency() {
    let rows = rows(
        r#"{ "tasks": { "p": { "loop": 3, "policy": "SCHED_FIFO",
             "run": 3000, "timer": { "ref": "unique", "period": 1000 } } },
           "schedlab": { "topology": "qemu-4" } }"#,
    );
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(r.slack_ns <= -2_000_000 + 50_000, "3 ms of run against a 1 ms period: {r:?}");
        assert_eq!(r.wu_lat_ns, 0, "a timer that does not sleep resets wu_lat, as rt-app does");
    }
}
