//! `schedlab hunt` through the binary: a find written as a scenario file
//! that `schedlab run` reproduces, and located errors for bad options.

mod common;

use common::{err, ok, tmp_dir};

#[test]
fn a_find_is_written_as_a_scenario_that_run_reproduces() {
    let dir = tmp_dir("hunt-out");
    let out = dir.path().to_str().unwrap();
    // Seed 003's class: case 2330 of hunt seed 1 alone (crates/hunt/tests/hunt.rs).
    let json = ok(&[
        "hunt",
        "--topology",
        "qemu-4",
        "--kernel",
        "6.12",
        "--features",
        "NO_RT_PUSH_IPI",
        "--against",
        "RT_PUSH_IPI",
        "--find",
        "rt",
        "--shard",
        "2330/1000000",
        "--cases",
        "2331",
        "--out",
        out,
        "--json",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let reports = doc["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 1, "{json}");
    let r = &reports[0];
    assert_eq!(
        (r["class"].as_str(), r["side"].as_str(), r["case_index"].as_u64()),
        (Some("rt-boosted-stranded"), Some("main-only"), Some(2330))
    );
    let file = dir.path().join("rt-boosted-stranded-case2330.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text, r["scenario"].as_str().unwrap());
    // The file runs as it is, and its report shows the stranded holder
    // waiting for about as long as the finding says.
    let report = ok(&["run", file.to_str().unwrap(), "--json"]);
    let run: serde_json::Value = serde_json::from_str(&report).unwrap();
    let thread = r["thread"].as_str().unwrap();
    let task = run["metrics"]["tasks"].as_array().unwrap().iter().find(|t| t["comm"] == thread).unwrap();
    let len = r["finding"]["end_ns"].as_u64().unwrap() - r["finding"]["start_ns"].as_u64().unwrap();
    assert!(task["wait_ns"].as_u64().unwrap() >= len, "{task} waited less than the {len} ns found");
}

#[test]
fn bad_hunt_options_are_refused_with_what_was_expected() {
    let e = err(&["hunt", "--find", "stalls"]);
    assert!(e.contains("--find stalls: unknown family or class") && e.contains("delayed-in-place"), "{e}");
    let e = err(&["hunt", "--topology", "qemu-4", "--features", "NO_SUCH_FEATURE", "--cases", "1"]);
    assert!(e.contains("--features") && e.contains("NO_SUCH_FEATURE"), "{e}");
    let e = err(&["hunt", "--topology", "qemu-4", "--against", "NO_SUCH_FEATURE", "--cases", "1"]);
    assert!(e.contains("--against") && e.contains("NO_SUCH_FEATURE"), "{e}");
    let e = err(&["hunt", "--shard", "3/2"]);
    assert!(e.contains("--shard") && e.contains("not below the count"), "{e}");
    let e = err(&["hunt", "--topology", "no-such-machine"]);
    assert!(e.contains("no-such-machine") && e.contains("qemu-4"), "{e}");
    let e = err(&["hunt", "--kernel", "5.4"]);
    assert!(e.contains("--kernel 5.4: unknown kernel profile"), "{e}");
    let e = err(&["hunt", "--find", "fairness", "--fairness", "0"]);
    assert!(e.contains("--fairness") && e.contains("0"), "{e}");
}
