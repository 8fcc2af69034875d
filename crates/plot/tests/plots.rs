//! The plots as a viewer gets them: each SVG must parse as XML, and what it
//! draws must match the data: the CDF steps where the samples are, one lane
//! per CPU, bars where `sched_switch` says tasks ran.

use std::collections::BTreeMap;

use roxmltree::{Document, Node};
use schedlab_analysis::{analyze, attribute_stalls, AnalysisOptions, AttributionOptions};
use schedlab_plot::{handoff_cdf_svg, run_curves, stall_lanes, stall_occupancy_svg, stall_window, Curve};
use schedlab_trace::testing::{event, switch, table, trace as trace_of, EventExt};
use schedlab_trace::{BalanceKind, Event, EventKind, Nanos, Pid, PrevState, TaskInfo, Trace, UserOp};

fn attr<T: std::str::FromStr>(n: Node, name: &str) -> T {
    let v = n.attribute(name).unwrap_or_else(|| panic!("no {name} on {n:?}"));
    v.parse().unwrap_or_else(|_| panic!("{name}={v} on {n:?}"))
}

fn with_class<'a, 'i>(doc: &'a Document<'i>, class: &str) -> Vec<Node<'a, 'i>> {
    doc.descendants().filter(|n| n.attribute("class").is_some_and(|c| c.split(' ').any(|w| w == class))).collect()
}

fn points(n: Node) -> Vec<(f64, f64)> {
    n.attribute("points")
        .unwrap()
        .split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.02
}

#[test]
fn cdf_has_a_monotone_curve_per_setting_ending_at_one() {
    let curves = vec![
        // Half at 10 us, half at 100 us: two steps of one half.
        Curve { label: "defaults".into(), samples: [vec![10_000; 50], vec![100_000; 50]].concat() },
        Curve { label: "NO_DELAY_DEQUEUE".into(), samples: (0..1000).map(|i| 3_000 + i * 7).collect() },
        Curve { label: "a <b> & \"c\"".into(), samples: vec![0, 5_000, 2_000_000] },
        Curve { label: "empty".into(), samples: vec![] },
    ];
    let svg = handoff_cdf_svg("t", &curves, 500_000);
    let doc = Document::parse(&svg).expect("valid XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");

    let panels = with_class(&doc, "panel");
    assert_eq!(panels.len(), 2);
    for panel in panels {
        let (top, bottom, left, right): (f64, f64, f64, f64) =
            (attr(panel, "data-top"), attr(panel, "data-bottom"), attr(panel, "data-left"), attr(panel, "data-right"));
        let (lo, hi): (f64, f64) = (attr(panel, "data-lo-us"), attr(panel, "data-hi-us"));
        assert!(lo <= 0.1 + 1e-9 && hi >= 2000.0, "axis {lo}..{hi} covers the samples");
        let x_of = |us: f64| left + (right - left) * (us / lo).log10() / (hi / lo).log10();
        let tail = panel.attribute("class").unwrap().contains("tail");

        // One curve per non-empty setting, labelled by it.
        let polys: Vec<Node> = panel.descendants().filter(|n| n.has_tag_name("polyline")).collect();
        let labels: Vec<&str> = polys.iter().map(|p| p.attribute("data-label").unwrap()).collect();
        assert_eq!(labels, ["defaults", "NO_DELAY_DEQUEUE", "a <b> & \"c\""]);
        for p in &polys {
            let pts = points(*p);
            assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0), "x never decreases: {pts:?}");
            if tail {
                // Fraction > x: SVG y grows downwards, so y never decreases and ends at the bottom.
                assert!(pts.windows(2).all(|w| w[0].1 <= w[1].1), "{pts:?}");
                assert!(close(pts[0].1, top) && close(pts.last().unwrap().1, bottom), "{pts:?}");
            } else {
                assert!(pts.windows(2).all(|w| w[0].1 >= w[1].1), "{pts:?}");
                assert!(
                    close(pts[0].1, bottom) && close(pts.last().unwrap().1, top),
                    "starts at 0, ends at 1: {pts:?}"
                );
            }
            assert!(pts
                .iter()
                .all(|&(x, y)| x >= left - 0.01 && x <= right + 0.01 && y >= top - 0.01 && y <= bottom + 0.01));
        }
        if !tail {
            // The two half steps, exactly where the samples are.
            let mid = (top + bottom) / 2.0;
            let expect = [(x_of(10.0), bottom), (x_of(10.0), mid), (x_of(100.0), mid), (x_of(100.0), top)];
            let got = points(polys[0]);
            assert_eq!(got.len(), 4, "{got:?}");
            for (g, e) in got.iter().zip(expect) {
                assert!(close(g.0, (e.0 * 2.0).round() / 2.0) && close(g.1, e.1), "{got:?} vs {expect:?}");
            }
        }
        let threshold = with_class(&doc, "threshold").into_iter().find(|t| t.parent() == Some(panel)).unwrap();
        assert!(close(attr(threshold, "x1"), x_of(500.0)) && close(attr(threshold, "x2"), x_of(500.0)));
    }
    let legend: Vec<String> = with_class(&doc, "legend-entry").iter().map(|n| attr(*n, "data-label")).collect();
    assert_eq!(legend.len(), 4, "every setting is in the legend, with or without handoffs");
    assert!(svg.contains("no handoffs"));
}

const WAKER: Pid = 100;
const WAKEE: Pid = 101;
const CULPRIT: Pid = 102;
const OTHER: Pid = 103;
const US: Nanos = 1_000;

// Times in microseconds; every event outside any task (context pid 0).
fn ev(ts: Nanos, cpu: u32, kind: EventKind) -> Event {
    event(ts * US, cpu, 0, kind)
}

fn sw(ts: Nanos, cpu: u32, prev: Pid, prev_state: PrevState, next: Pid) -> Event {
    switch(ts * US, cpu, prev, prev_state, next).ctx(0)
}

fn user(ts: Nanos, cpu: u32, pid: Pid, op: UserOp) -> Event {
    ev(ts, cpu, EventKind::User { pid, op })
}

/// Four CPUs. The waker spins on CPU 0; the wakee blocks on CPU 1 at 100 us;
/// the balancer moves the culprit from CPU 2 onto CPU 1 at 150 us; the
/// waker signals at 200 us, the wakee is woken onto CPU 1 at 202 us and runs
/// only when the culprit blocks at 900 us; its wait returns at 905 us. CPU 3
/// runs an unrelated task and is not in the wakee's affinity.
fn stall_trace() -> Trace {
    let s = PrevState::Sleeping;
    let r = PrevState::Running { preempt: true };
    let events = vec![
        sw(10, 0, 0, s, WAKER),
        sw(10, 1, 0, s, WAKEE),
        sw(10, 2, 0, s, CULPRIT),
        sw(10, 3, 0, s, OTHER),
        user(20, 0, WAKER, UserOp::Signal { obj: 0 }),
        user(25, 1, WAKEE, UserOp::WaitDone { obj: 0 }),
        sw(100, 1, WAKEE, s, 0),
        sw(149, 2, CULPRIT, r, 0),
        ev(150, 2, EventKind::SchedMigrateTask { pid: CULPRIT, prio: 120, orig_cpu: 2, dest_cpu: 1 }),
        ev(
            150,
            2,
            EventKind::LbMigrate { pid: CULPRIT, src_cpu: 2, dst_cpu: 1, kind: BalanceKind::Active, delayed: false },
        ),
        sw(151, 1, 0, s, CULPRIT),
        user(200, 0, WAKER, UserOp::Signal { obj: 0 }),
        ev(201, 0, EventKind::SchedWaking { pid: WAKEE, prio: 120, target_cpu: 1 }),
        ev(202, 0, EventKind::SchedWakeup { pid: WAKEE, prio: 120, target_cpu: 1 }),
        sw(600, 3, OTHER, s, 0),
        sw(900, 1, CULPRIT, s, WAKEE),
        user(905, 1, WAKEE, UserOp::WaitDone { obj: 0 }),
        sw(2000, 1, WAKEE, s, 0),
    ];
    let tasks = [
        (WAKER, "waker", WAKER),
        (WAKEE, "worker-0", WAKEE),
        (CULPRIT, "worker-1", CULPRIT),
        (OTHER, "kworker/3:1", OTHER),
    ];
    trace_of(table(&tasks, &["efd0"]), 4, events)
}

#[test]
fn occupancy_has_a_lane_per_cpu_and_bars_where_sched_switch_put_tasks() {
    let trace = stall_trace();
    let allowed: BTreeMap<Pid, Vec<u32>> = [(WAKEE, vec![1, 2]), (CULPRIT, vec![1, 2]), (WAKER, vec![0])].into();
    let a = attribute_stalls(
        &trace,
        &AttributionOptions { stall_threshold_ns: 500 * US, end_ts: Some(2000 * US), allowed: allowed.clone() },
    );
    assert_eq!(a.stalls.len(), 1, "the hand-made trace has one stall");
    let story = &a.stalls[0];
    assert_eq!((story.start_ts, story.end_ts), (200 * US, 905 * US));

    let window = stall_window(story);
    let lanes = stall_lanes(&trace.events, trace.nr_cpus, story, &allowed, window);
    assert_eq!(lanes, [0, 1, 2], "the wakee's CPUs, plus the waker's; not CPU 3");
    let svg = stall_occupancy_svg(&trace, &trace.events, story, 1, 1, &lanes);
    let doc = Document::parse(&svg).expect("valid XML");

    let plot = with_class(&doc, "occupancy")[0];
    let (ws, we): (Nanos, Nanos) = (attr(plot, "data-window-start-ns"), attr(plot, "data-window-end-ns"));
    assert_eq!((ws, we), window);
    assert!(ws < 180 * US && we > 905 * US, "the window holds the signal and the wait's return: {ws}..{we}");
    let (left, right): (f64, f64) = (attr(plot, "data-left"), attr(plot, "data-right"));
    let x_of = |t: Nanos| left + (right - left) * (t - ws) as f64 / (we - ws) as f64;

    let lane_nodes = with_class(&doc, "lane");
    let cpus: Vec<u32> = lane_nodes.iter().map(|n| attr(*n, "data-cpu")).collect();
    assert_eq!(cpus, [0, 1, 2]);

    let mut bars: Vec<(u32, Pid, Nanos, Nanos)> = Vec::new();
    for lane in &lane_nodes {
        let cpu: u32 = attr(*lane, "data-cpu");
        for bar in lane.descendants().filter(|n| n.attribute("class") == Some("run")) {
            let (start, end): (Nanos, Nanos) = (attr(bar, "data-start-ns"), attr(bar, "data-end-ns"));
            let (x, w): (f64, f64) = (attr(bar, "x"), attr(bar, "width"));
            assert!(ws <= start && start < end && end <= we, "bar {start}..{end} inside {ws}..{we}");
            assert!(close(x, x_of(start)) && close(x + w, x_of(end)), "bar drawn at its times");
            bars.push((cpu, attr(bar, "data-pid"), start, end));
        }
    }
    let expect = vec![
        (0, WAKER, ws, we),
        (1, WAKEE, ws, 100 * US),
        (1, CULPRIT, 151 * US, 900 * US),
        (1, WAKEE, 900 * US, we),
        (2, CULPRIT, ws, 149 * US),
    ];
    assert_eq!(bars, expect);

    let marker = |class: &str| with_class(&doc, class)[0];
    assert_eq!(attr::<Nanos>(marker("signal"), "data-ns"), 200 * US);
    assert_eq!((attr::<Nanos>(marker("wakeup"), "data-ns"), attr::<u32>(marker("wakeup"), "data-cpu")), (202 * US, 1));
    assert_eq!(attr::<Nanos>(marker("switch-in"), "data-ns"), 900 * US);
    let migrate = marker("migrate");
    assert_eq!((attr::<u32>(migrate, "data-from"), attr::<u32>(migrate, "data-to")), (2, 1));
    assert!(svg.contains("(active balance)"), "the balancer path is named");
    let wait = marker("wait");
    assert_eq!((attr::<Nanos>(wait, "data-start-ns"), attr::<Nanos>(wait, "data-end-ns")), (202 * US, 900 * US));
    assert_eq!(wait.parent().map(|l| attr::<u32>(l, "data-cpu")), Some(1), "shaded on the CPU it waited on");
}

#[test]
fn run_curves_pool_the_threads_of_a_group() {
    let mut trace = stall_trace();
    // A second handoff to another worker, and the waker's own: 3 groups.
    trace.table.tasks.insert(104, TaskInfo { comm: "worker-2".into(), tgid: 104 });
    trace.table.objects.push("efd1".into());
    trace.events.extend([
        user(1000, 0, WAKER, UserOp::Signal { obj: 1 }),
        user(1010, 2, 104, UserOp::WaitDone { obj: 1 }),
        user(1100, 2, 104, UserOp::Signal { obj: 1 }),
        user(1130, 0, WAKER, UserOp::WaitDone { obj: 1 }),
    ]);
    let m = analyze(&trace, &AnalysisOptions { stall_threshold_ns: 500 * US, end_ts: Some(2000 * US) });
    let groups: BTreeMap<Pid, String> =
        [(WAKEE, "worker".to_string()), (104, "worker".to_string()), (WAKER, "waker".to_string())].into();
    let curves = run_curves(&m, &groups);
    let got: Vec<(&str, &[u64])> = curves.iter().map(|c| (c.label.as_str(), c.samples.as_slice())).collect();
    assert_eq!(got, [("waker", &[30 * US][..]), ("worker", &[5 * US, 10 * US, 705 * US][..])]);
}
