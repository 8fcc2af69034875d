//! A sweep file's `[ab]` table: its checks, each error at its line. The
//! comparison itself is tested in crates/report/tests/ab.rs.

use std::path::Path;

use schedlab_report::ab::{Gate, Metric};
use schedlab_sweep::Sweep;

fn scenarios() -> &'static Path {
    Box::leak(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").into_boxed_path())
}

#[track_caller]
fn bad(ab: &str, line: usize, msg: &str) {
    let text =
        format!("scenario = \"asym_min.toml\"\n[[setting]]\nname = \"x\"\n[[setting]]\nname = \"y\"\n[ab]\n{ab}\n");
    let e = Sweep::from_toml_str("s.toml", &text, scenarios()).expect_err(&text);
    assert_eq!(e.line, line, "{e}");
    assert!(e.message.contains(msg), "{e}");
}

#[test]
fn ab_tables_in_sweep_files() {
    let text = "scenario = \"asym_min.toml\"\n[[setting]]\nname = \"x\"\n[[setting]]\nname = \"y\"\n[ab]\na = \"x\"\nb = \"y\"\nalpha = 0.01\nbootstrap = 500\nseed = 9\n[ab.gates]\np99_handoff_abs = \"-20us\"\np99_handoff_rel = -0.1\nstall_rate_abs = 0.05\nmedian_handoff_abs = 300\n";
    let s = Sweep::from_toml_str("s.toml", text, scenarios()).unwrap();
    let ab = s.ab.unwrap();
    assert_eq!((ab.a.as_str(), ab.b.as_str(), ab.alpha, ab.bootstrap, ab.seed), ("x", "y", 0.01, 500, 9));
    assert_eq!(
        ab.gates,
        [
            Gate { metric: Metric::StallRate, abs: Some(0.05), rel: None },
            Gate { metric: Metric::MedianHandoff, abs: Some(300.0), rel: None },
            Gate { metric: Metric::P99Handoff, abs: Some(-20_000.0), rel: Some(-0.1) },
        ]
    );

    bad("a = \"x\"\nb = \"z\"", 8, "`ab`: no setting named `z`");
    bad("a = \"x\"\nb = \"x\"", 8, "the same setting");
    bad("a = \"x\"", 6, "missing field `b`");
    bad("a = \"x\"\nb = \"y\"\nalpha = 1.5", 9, "expected a level between 0 and 1");
    bad("a = \"x\"\nb = \"y\"\nbootstrap = 0", 9, "`bootstrap` = 0");
    bad("a = \"x\"\nb = \"y\"\n[ab.gates]\nstall_rate = 0.5", 10, "unknown gate `stall_rate`");
    bad("a = \"x\"\nb = \"y\"\n[ab.gates]\np50_rel = 0.5", 10, "unknown gate `p50_rel`");
    bad("a = \"x\"\nb = \"y\"\n[ab.gates]\nstall_rate_rel = -2", 10, "at least -1");
    bad("a = \"x\"\nb = \"y\"\n[ab.gates]\nstall_rate_rel = \"-50%\"", 10, "expected a fraction");
    bad("a = \"x\"\nb = \"y\"\n[ab.gates]\np99_handoff_abs = \"20 parsecs\"", 10, "`p99_handoff_abs`");
    bad(
        "a = \"x\"\nb = \"y\"\n[ab.gates]\nmedian_handoff_abs = \"1us\"\nmedian_handoff_rel = -0.1",
        11,
        "must both be negative",
    );
}
