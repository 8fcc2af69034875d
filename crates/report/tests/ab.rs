//! A/B comparisons and gates on fixed per-round values, and `--ab A,B`.

mod common;

use schedlab_report::ab::{check_gate, Gate, Metric, MetricComparison};
use schedlab_report::stats::welch;
use schedlab_report::{compare, parse_ab_pair, render_ab, AbSpec, SettingResult, SweepResult};

/// One run: stalls, handoffs, median and p99 handoff (ns).
type Run = (u64, u64, u64, u64);

fn setting(name: &str, runs: &[Run]) -> SettingResult {
    let runs =
        runs.iter().enumerate().map(|(i, &(s, h, median, p99))| common::run(i as u32 + 1, s, h, median, p99, p99 * 10));
    common::setting(name, runs.collect(), 5_000)
}

/// Seed 000's defaults and NO_DELAY_DEQUEUE rows, ~59000 handoffs per run.
fn seed_000() -> SweepResult {
    common::result(vec![
        setting(
            "defaults",
            &[(483, 58_000, 5_000, 790_000), (701, 59_000, 5_010, 800_000), (674, 59_000, 5_020, 810_000)],
        ),
        setting(
            "NO_DELAY_DEQUEUE",
            &[(21, 59_000, 5_000, 5_400), (12, 59_000, 5_010, 5_500), (18, 59_000, 5_000, 5_600)],
        ),
        setting("a, with a comma", &[(1, 1000, 5_000, 6_000), (2, 1000, 5_000, 6_000), (3, 1000, 5_000, 6_000)]),
    ])
}

#[test]
fn metrics_are_welch_on_per_round_values() {
    let r = seed_000();
    let rep = compare(&r, &AbSpec::new("defaults", "NO_DELAY_DEQUEUE")).unwrap();
    assert_eq!(rep.pass, None, "no gates, no verdict");
    let stall = &rep.metrics[0];
    assert_eq!(stall.metric, Metric::StallRate);
    let a = [100.0 * 483.0 / 58_000.0, 100.0 * 701.0 / 59_000.0, 100.0 * 674.0 / 59_000.0];
    let b = [100.0 * 21.0 / 59_000.0, 100.0 * 12.0 / 59_000.0, 100.0 * 18.0 / 59_000.0];
    let w = welch(&a, &b).unwrap();
    assert_eq!((stall.n_a, stall.n_b), (3, 3));
    assert_eq!((stall.t, stall.df, stall.p), (Some(w.t), Some(w.df), Some(w.p)));
    let (ma, mb) = (a.iter().sum::<f64>() / 3.0, b.iter().sum::<f64>() / 3.0);
    assert!((stall.mean_a.unwrap() - ma).abs() < 1e-12 && (stall.mean_b.unwrap() - mb).abs() < 1e-12);
    assert!((stall.rel.unwrap() - (mb - ma) / ma).abs() < 1e-12);
    let (lo, hi) = stall.ci.unwrap();
    assert!(lo <= mb - ma && mb - ma <= hi);
    let p99 = &rep.metrics[2];
    assert_eq!((p99.metric, p99.mean_a, p99.mean_b), (Metric::P99Handoff, Some(800_000.0), Some(5_500.0)));
    assert!(compare(&r, &AbSpec::new("defaults", "nope")).unwrap_err().to_string().contains("no setting named `nope`"));
}

fn comparison(metric: Metric, mean_a: f64, diff: f64, p: Option<f64>) -> MetricComparison {
    MetricComparison {
        metric,
        n_a: 5,
        n_b: 5,
        mean_a: Some(mean_a),
        mean_b: Some(mean_a + diff),
        sd_a: None,
        sd_b: None,
        diff: Some(diff),
        rel: (mean_a != 0.0).then(|| diff / mean_a),
        ci: None,
        t: None,
        df: None,
        p,
    }
}

#[test]
fn requirement_gates() {
    let g = Gate { metric: Metric::StallRate, abs: None, rel: Some(-0.5) };
    assert!(g.is_requirement());
    // -97 %, significant: PASS.
    assert!(check_gate(&g, &comparison(Metric::StallRate, 1.0, -0.97, Some(0.001)), 0.05).pass);
    // -97 % but p = 0.08: not shown, FAIL.
    let r = check_gate(&g, &comparison(Metric::StallRate, 1.0, -0.97, Some(0.08)), 0.05);
    assert!(!r.pass);
    assert!(
        r.reason.contains("requires change <= -50.0 % with p < 0.05; measured -97.0 % (-0.9700 pp), p 0.0800"),
        "{}",
        r.reason
    );
    // Significant but only -30 %: FAIL.
    assert!(!check_gate(&g, &comparison(Metric::StallRate, 1.0, -0.3, Some(0.001)), 0.05).pass);
    // Both thresholds: each must hold.
    let both = Gate { metric: Metric::P99Handoff, abs: Some(-10_000.0), rel: Some(-0.1) };
    assert!(check_gate(&both, &comparison(Metric::P99Handoff, 100_000.0, -20_000.0, Some(0.01)), 0.05).pass);
    assert!(!check_gate(&both, &comparison(Metric::P99Handoff, 100_000.0, -9_000.0, Some(0.01)), 0.05).pass);
    // A zero baseline cannot be cut by a relative amount.
    assert!(!check_gate(&g, &comparison(Metric::StallRate, 0.0, 0.0, Some(1.0)), 0.05).pass);
    // One round: not testable, FAIL.
    let mut one = comparison(Metric::StallRate, 1.0, -0.97, None);
    one.n_a = 1;
    let r = check_gate(&g, &one, 0.05);
    assert!(!r.pass && r.reason.contains("cannot test with 1 and 5 rounds"), "{}", r.reason);
}

#[test]
fn budget_gates_are_ktstr_dual_gates() {
    let g = Gate { metric: Metric::P99Handoff, abs: Some(2_000.0), rel: Some(0.10) };
    assert!(!g.is_requirement());
    let m = |diff: f64, p: f64| comparison(Metric::P99Handoff, 10_000.0, diff, Some(p));
    // +50 % and +5 us, significant: over both thresholds, FAIL.
    let r = check_gate(&g, &m(5_000.0, 0.001), 0.05);
    assert!(!r.pass);
    assert!(r.reason.contains("budget, fails if B - A > +2.000 us and change > +10.0 %"), "{}", r.reason);
    // The same change, not significant: PASS.
    assert!(check_gate(&g, &m(5_000.0, 0.2), 0.05).pass);
    // Significant, +15 % but only +1.5 us: under the absolute threshold, PASS.
    assert!(check_gate(&g, &m(1_500.0, 0.001), 0.05).pass);
    // Better: PASS.
    assert!(check_gate(&g, &m(-5_000.0, 0.001), 0.05).pass);
    // Budget 0: any significant increase fails.
    let zero = Gate { metric: Metric::StallRate, abs: None, rel: Some(0.0) };
    assert!(!check_gate(&zero, &comparison(Metric::StallRate, 0.0, 0.5, Some(0.01)), 0.05).pass);
    assert!(check_gate(&zero, &comparison(Metric::StallRate, 0.0, 0.5, Some(0.2)), 0.05).pass);
}

#[test]
fn report_text_with_gates() {
    let mut spec = AbSpec::new("defaults", "NO_DELAY_DEQUEUE");
    spec.gates = vec![
        Gate { metric: Metric::StallRate, abs: None, rel: Some(-0.5) },
        Gate { metric: Metric::MedianHandoff, abs: Some(-1_000.0), rel: None },
    ];
    let rep = compare(&seed_000(), &spec).unwrap();
    assert_eq!(rep.pass, Some(false));
    let text = render_ab(&rep);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "A/B       B = NO_DELAY_DEQUEUE vs A = defaults, 3 rounds each");
    assert_eq!(
        lines[2],
        "metric               mean A     mean B         B - A    change          95 % CI of B - A         p"
    );
    assert_eq!(
        lines[3],
        "stall rate         1.0544 %   0.0288 %    -1.0256 pp   -97.3 %     [-1.1576, -0.8056] pp    0.0115"
    );
    assert_eq!(
        lines[5],
        "p99 handoff      800.000 us   5.500 us   -794.500 us   -99.3 %   [-804.467, -784.500] us   <0.0001"
    );
    assert!(
        lines[6].starts_with("gate      PASS  stall rate: requires change <= -50.0 % with p < 0.05; measured -97.3 %"),
        "{text}"
    );
    assert!(
        lines[7].starts_with("gate      FAIL  median handoff: requires B - A <= -1.000 us with p < 0.05"),
        "{text}"
    );
    assert_eq!(lines[8], "A/B       FAIL: 1 of 2 gates failed (median_handoff)");
    assert_eq!(lines.len(), 9);
    assert!(lines.iter().all(|l| l.is_ascii() && *l == l.trim_end()));
    spec.gates.pop();
    let rep = compare(&seed_000(), &spec).unwrap();
    assert!(render_ab(&rep).ends_with("A/B       PASS: 1 of 1 gates\n"));
}

#[test]
fn ab_pairs_from_the_command_line() {
    let names = ["defaults", "NO_DELAY_DEQUEUE", "a, with a comma", "a"];
    assert_eq!(
        parse_ab_pair("defaults,NO_DELAY_DEQUEUE", &names).unwrap(),
        ("defaults".into(), "NO_DELAY_DEQUEUE".into())
    );
    assert_eq!(
        parse_ab_pair("a, with a comma,defaults", &names).unwrap(),
        ("a, with a comma".into(), "defaults".into())
    );
    let e = parse_ab_pair("defaults,NO_SUCH", &names).unwrap_err().to_string();
    assert!(e.contains("no setting named `NO_SUCH`") && e.contains("`NO_DELAY_DEQUEUE`"), "{e}");
    assert!(parse_ab_pair("defaults", &names).unwrap_err().to_string().contains("expected two settings as A,B"));
    assert!(parse_ab_pair("defaults,defaults", &names).unwrap_err().to_string().contains("the same setting"));
    // "a" + " with a comma,defaults"? no; "a, with a comma" + "defaults"? yes, and
    // "a, with a comma,a" splits two ways only if both halves are names.
    let amb = ["x", "x,x", "y"];
    assert!(parse_ab_pair("x,x,x", &amb).unwrap_err().to_string().contains("ambiguous"));
}
