//! The `--json` documents: a `format` version beside the fields they always
//! had, and nothing else added.

use schedlab_report::{to_json, SweepJson, SweepResult, FORMAT_VERSION};

fn result() -> SweepResult {
    SweepResult {
        sweep: "s.toml".into(),
        scenario: "asym_min".into(),
        scenario_path: "asym_min.toml".into(),
        topology: "ryzen-7950x".into(),
        rounds: 1,
        seed: 1,
        seeds: vec![1],
        duration_ns: None,
        wakees: vec!["worker".into()],
        stall_threshold_ns: 500_000,
        measures: vec![],
        settings: vec![],
    }
}

#[test]
fn a_sweep_document_is_the_result_and_its_version() {
    let r = result();
    let doc: serde_json::Value =
        serde_json::from_str(&to_json(&SweepJson { format: FORMAT_VERSION, result: &r, ab: None }).unwrap()).unwrap();
    let mut map = doc.as_object().unwrap().clone();
    assert_eq!(map.remove("format"), Some(serde_json::json!(1)));
    // Without an A/B there is no "ab" key, as before the version existed.
    assert_eq!(serde_json::Value::Object(map), serde_json::to_value(&r).unwrap());
}
