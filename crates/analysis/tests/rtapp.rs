//! rt-app's pass and stats markers become per-phase figures; what the
//! markers cannot support is left out.

use schedlab_analysis::{render_rtapp_phases, rtapp_phases};
use schedlab_trace::testing::{marker, table};
use schedlab_trace::{Trace, UserOp};

const US: u64 = 1_000;

fn pass(start: bool, phase: u32) -> UserOp {
    UserOp::RtAppLoop { start, thread_loop: 0, phase, phase_loop: 0 }
}

fn stats(wu_lat: i32, slack: i32) -> UserOp {
    UserOp::RtAppStats { period: 10_000, run: 2_000, wu_lat, slack, c_period: 10_000, c_run: 2_000 }
}

#[test]
fn passes_pair_by_thread_and_phase_and_stats_belong_to_the_pass_that_ended() {
    let mut events = Vec::new();
    // Thread 10: phase 0 twice (10 ms passes), then phase 1 once, late.
    for k in 0..2u64 {
        events.push(marker(k * 10_000 * US, 0, 10, pass(true, 0)));
        events.push(marker(k * 10_000 * US + 10_000 * US, 0, 10, pass(false, 0)));
        events.push(marker(k * 10_000 * US + 10_000 * US, 0, 10, stats(100 + k as i32 * 50, 7_000)));
    }
    events.push(marker(20_000 * US, 0, 10, pass(true, 1)));
    events.push(marker(23_000 * US, 0, 10, pass(false, 1)));
    events.push(marker(23_000 * US, 0, 10, stats(0, -500)));
    // Thread 11: an end whose start is not in the capture, then a stats marker with no pass.
    events.push(marker(1_000 * US, 1, 11, pass(false, 0)));
    events.push(marker(1_000 * US, 1, 11, stats(10, 10)));
    let trace = Trace { table: table(&[(10, "periodic", 10), (11, "other", 11)], &[]), nr_cpus: 2, events };
    let r = rtapp_phases(&trace);
    assert_eq!(r.unpaired, 2);
    assert_eq!(r.phases.len(), 2, "{:?}", r.phases);
    let p0 = &r.phases[0];
    assert_eq!((p0.pid, p0.phase, p0.passes), (10, 0, 2));
    assert_eq!(p0.period.percentile(500), Some(10_000 * US));
    assert_eq!((p0.wu_lat_us.percentile(500), p0.wu_lat_us.max()), (Some(100), Some(150)));
    assert_eq!((p0.slack_min_us, p0.late), (Some(7_000), 0));
    let p1 = &r.phases[1];
    assert_eq!((p1.phase, p1.passes, p1.slack_min_us, p1.late), (1, 1, Some(-500), 1));
    let text = render_rtapp_phases(&r);
    assert!(text.contains("periodic") && text.contains("10000.0"), "{text}");
    assert!(text.contains("2 rt-app markers without their pair"), "{text}");
}

#[test]
fn rt_app_1_0_markers_give_pass_times_but_no_latency_or_slack() {
    let events = vec![marker(0, 0, 10, pass(true, 0)), marker(5_000 * US, 0, 10, pass(false, 0))];
    let trace = Trace { table: table(&[(10, "t", 10)], &[]), nr_cpus: 1, events };
    let r = rtapp_phases(&trace);
    assert_eq!(r.phases[0].passes, 1);
    assert_eq!(r.phases[0].wu_lat_us.count(), 0);
    let text = render_rtapp_phases(&r);
    assert!(text.contains("no rtapp_stats markers"), "{text}");
    let row = text.lines().find(|l| l.split_whitespace().next() == Some("t")).unwrap();
    assert_eq!(row.split_whitespace().filter(|c| *c == "-").count(), 6, "wu_lat and slack left out: {row}");
}
