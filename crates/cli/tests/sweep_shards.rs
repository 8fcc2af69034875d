//! `schedlab sweep` end to end beyond the tables: shards merge into the
//! byte-identical report, CSV and JSON agree, A/B gates decide the exit
//! status, and bad shard or A/B input is refused with a clear message.

use std::path::Path;

mod common;
use common::{err, ok_output, schedlab, tmp_dir};

const AB: &str = "crates/cli/tests/data/ab-sweep.toml";
const MINI: &str = "crates/cli/tests/data/mini-sweep.toml";

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn shards_merge_into_the_unsharded_report() {
    let dir = tmp_dir("sweep-cli-merge");
    let shards = dir.path().join("shards");
    let (whole_csv, merged_csv) = (dir.path().join("whole.csv"), dir.path().join("merged.csv"));

    let whole = schedlab(&["sweep", AB, "--no-timing", "--csv", s(&whole_csv)]);
    let report = text(&whole.stdout);
    assert!(report.starts_with("sweep     crates/cli/tests/data/ab-sweep.toml: asym_min on ryzen-7950x\n"), "{report}");
    assert!(!report.contains("\nwall "), "--no-timing: {report}");
    // The verdict line and the exit status agree.
    let pass = report.contains("\nA/B       PASS: 2 of 2 gates\n");
    assert!(pass || report.contains("\nA/B       FAIL: "), "{report}");
    assert_eq!(whole.status.success(), pass, "{}", text(&whole.stderr));

    for i in ["0/2", "1/2"] {
        let out = ok_output(&["sweep", AB, "--shard", i, "--out", s(&shards)]);
        assert!(out.stdout.is_empty());
        let file = format!("shard-{}-of-2.json", &i[..1]);
        assert!(text(&out.stderr).contains(&format!("{file} (6 of 12; 6 simulations in ")), "{}", text(&out.stderr));
        assert!(shards.join(file).is_file());
    }
    let merged = schedlab(&["sweep-merge", s(&shards), "--csv", s(&merged_csv)]);
    assert_eq!(text(&merged.stdout), report, "merged shards print the unsharded report byte for byte");
    assert_eq!(merged.status.success(), whole.status.success());
    assert_eq!(std::fs::read(&merged_csv).unwrap(), std::fs::read(&whole_csv).unwrap());
    let again = schedlab(&["sweep", AB, "--merge", s(&shards)]);
    assert_eq!(text(&again.stdout), report, "sweep FILE --merge DIR is the same");

    // The CSV: the fixed header, then one row per (setting, round) holding the JSON's numbers.
    let csv = std::fs::read_to_string(&whole_csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "setting,round,seed,topology,kernel,simulated_ns,handoffs,stalls,stall_rate,median_handoff_ns,p99_handoff_ns,max_handoff_ns"
    );
    assert_eq!(rows.len(), 1 + 12);
    let json = schedlab(&["sweep-merge", s(&shards), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let run = &v["settings"][1]["runs"][2];
    let (h, st) = (run["handoffs"].as_u64().unwrap(), run["stalls"].as_u64().unwrap());
    let expected = format!(
        "NO_DELAY_DEQUEUE,3,3,ryzen-7950x,mainline,2000000000,{h},{st},{},{},{},{}",
        st as f64 / h as f64,
        run["median_handoff_ns"],
        run["p99_handoff_ns"],
        run["max_handoff_ns"]
    );
    assert_eq!(rows[1 + 6 + 2], expected);
    assert_eq!(v["ab"]["spec"]["b"], "NO_DELAY_DEQUEUE");
    assert_eq!(v["ab"]["pass"], pass);
    assert_eq!(v["ab"]["metrics"][0]["metric"], "stall_rate");
    assert!(v["ab"]["metrics"][0]["p"].as_f64().unwrap() > 0.0);
    assert_eq!(v["seeds"], serde_json::json!([1, 2, 3, 4, 5, 6]));

    // `--csv -` prints only the CSV.
    let out = schedlab(&["sweep-merge", s(&shards), "--csv", "-"]);
    assert_eq!(text(&out.stdout), csv);

    // B and A swapped: "cuts the stall rate by half" is false, the gate
    // fails and so does the command, after printing everything.
    let out = schedlab(&["sweep-merge", s(&shards), "--ab", "NO_DELAY_DEQUEUE,defaults"]);
    assert!(!out.status.success());
    let report = text(&out.stdout);
    assert!(report.contains("A/B       B = defaults vs A = NO_DELAY_DEQUEUE, 6 rounds each"), "{report}");
    assert!(
        report.contains("\ngate      FAIL  stall rate: requires change <= -50.0 % with p < 0.05; measured +"),
        "{report}"
    );
    assert!(report.contains("\nA/B       FAIL: "), "{report}");
    assert!(text(&out.stderr).contains("schedlab: error: A/B gate failed (defaults vs NO_DELAY_DEQUEUE): stall_rate"));
}

#[test]
fn bad_shard_and_ab_input_is_refused() {
    let tmp = tmp_dir("sweep-cli-bad");
    let dir = tmp.path();
    for (spec, msg) in [
        ("2/2", "shard index 2 is not below the count 2"),
        ("x", "`x`: expected I/N"),
        ("1/0", "the shard count must be 1.."),
    ] {
        let e = err(&["sweep", MINI, "--shard", spec, "--out", s(dir)]);
        assert!(e.contains("--shard") && e.contains(msg), "{spec}: {e}");
    }
    let e = err(&["sweep", MINI, "--shard", "0/2"]);
    assert!(e.contains("--out"), "{e}");
    let e = err(&["sweep", MINI, "--shard", "0/2", "--out", s(dir), "--json"]);
    assert!(e.contains("cannot be used with"), "{e}");

    // --ab is checked before anything runs.
    let e = err(&["sweep", MINI, "--ab", "defaults,NO_SUCH"]);
    assert!(e.contains("--ab defaults,NO_SUCH: expected two settings as A,B; no setting named `NO_SUCH`"), "{e}");
    assert!(e.contains("`sched_itmt_enabled=0`"), "{e}");

    // Shard 1 of the same file run with other options is another sweep.
    ok_output(&["sweep", MINI, "--shard", "0/2", "--out", s(dir)]);
    let e = err(&["sweep-merge", s(dir)]);
    assert!(e.contains("missing shard-1-of-2.json"), "{e}");
    ok_output(&["sweep", MINI, "--shard", "1/2", "--out", s(dir), "--duration", "50ms"]);
    let e = err(&["sweep-merge", s(dir)]);
    assert!(e.contains("shard-1-of-2.json comes from a different sweep or different options"), "{e}");
    let e = err(&["sweep", MINI, "--merge", s(dir), "--duration", "50ms"]);
    assert!(e.contains("shard-0-of-2.json comes from a different sweep or different options"), "{e}");
    let e = err(&["sweep", AB, "--merge", s(dir)]);
    assert!(e.contains("shard-0-of-2.json comes from a different sweep"), "{e}");
    let e = err(&["sweep-merge", s(&dir.join("nothing-here"))]);
    assert!(e.contains("cannot list"), "{e}");
}
