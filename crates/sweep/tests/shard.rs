//! Shards: the jobs split into disjoint, complete sets; shard files merge
//! into exactly the unsharded result; and whatever does not belong
//! together is refused.

use std::path::Path;

use schedlab_report::render;
use schedlab_sweep::{fingerprint, job_order, merge_dir, run_shard, run_sweep, ShardSpec, Sweep};

const SWEEP: &str = r#"
scenario = "asym_min.toml"
seeds = [7, 3, 11]
duration = "100ms"
breakdown = ["defaults"]

[[setting]]
name = "defaults"

[[setting]]
name = "NO_DELAY_DEQUEUE"
features = ["NO_DELAY_DEQUEUE"]

[ab]
a = "defaults"
b = "NO_DELAY_DEQUEUE"
"#;

fn sweep(text: &str) -> Sweep {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    Sweep::from_toml_str("tiny.toml", text, &dir).unwrap()
}

/// A fresh, empty directory, removed when the guard drops (also when the
/// test fails).
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("schedlab-shard-{name}-")).tempdir().unwrap()
}

#[test]
fn shard_specs() {
    assert_eq!("1/4".parse::<ShardSpec>().unwrap(), ShardSpec { index: 1, count: 4 });
    assert_eq!("0/1".parse::<ShardSpec>().unwrap().file_name(), "shard-0-of-1.json");
    for (bad, msg) in [
        ("2/2", "shard index 2 is not below the count 2"),
        ("1/0", "count must be 1.."),
        ("1", "expected I/N"),
        ("a/b", "expected I/N"),
        ("-1/2", "expected I/N"),
        ("1/2/3", "expected I/N"),
    ] {
        let e = bad.parse::<ShardSpec>().unwrap_err().to_string();
        assert!(e.contains(msg), "{bad}: {e}");
    }
}

#[test]
fn jobs_are_round_major_and_shards_partition_them() {
    let s = sweep(SWEEP);
    assert_eq!(job_order(&s), [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
    assert_eq!(s.seeds(), [7, 3, 11]);
    for n in 1..=7u32 {
        let mut seen = vec![0; s.jobs()];
        for i in 0..n {
            let spec = ShardSpec { index: i, count: n };
            for (j, count) in seen.iter_mut().enumerate() {
                if spec.owns(j) {
                    *count += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{n} shards: {seen:?}");
    }
}

#[test]
fn merged_shards_are_the_unsharded_result() {
    let s = sweep(SWEEP);
    let whole = run_sweep(&s, &|_| {}).unwrap();
    assert_eq!(whole.seeds, [7, 3, 11]);
    assert_eq!(whole.settings[0].runs.iter().map(|r| r.seed).collect::<Vec<_>>(), [7, 3, 11]);
    for n in [2u32, 4, 7] {
        let dir = tmp(&format!("ok{n}"));
        for i in 0..n {
            let f = run_shard(&s, ShardSpec { index: i, count: n }, &|_| {}).unwrap();
            assert_eq!(f.len(), (0..6).filter(|j| j % n as usize == i as usize).count());
            f.write(dir.path()).unwrap();
        }
        let merged = merge_dir(dir.path(), Some(&s)).unwrap();
        assert_eq!(merged.result, whole, "{n} shards");
        assert_eq!(merged.shards, n);
        // Without the sweep file the shards describe it themselves.
        let alone = merge_dir(dir.path(), None).unwrap();
        assert_eq!(alone.result, whole);
        assert_eq!(alone.ab, s.ab);
    }
}

/// A small `[schbench]` scenario (schbench-spr.toml's 224 CPUs and 516
/// threads take minutes per run in a debug build, with the invariants
/// checked at every step).
const SCHBENCH_SCENARIO: &str = r#"
name = "schbench-small"
topology = "smt-2x2"
seed = 3

[schbench]
message_threads = 2
workers = 5
runtime = "40ms"
operations = 1
op_time = "20us"
no_lock = true
message_cpus = "auto"
"#;

/// A `[schbench]` sweep: its runs carry schbench's `average rps` and
/// nothing else, which must survive the shard files too.
const SCHBENCH_SWEEP: &str = r#"
scenario = "schbench-small.toml"
seeds = [1, 2]
duration = "20ms"

[[setting]]
name = "baseline"

[[setting]]
name = "NO_DELAY_DEQUEUE"
features = ["NO_DELAY_DEQUEUE"]
"#;

#[test]
fn merged_schbench_shards_keep_the_rps() {
    let dir = tmp("schbench");
    std::fs::write(dir.path().join("schbench-small.toml"), SCHBENCH_SCENARIO).unwrap();
    let s = Sweep::from_toml_str("schbench.toml", SCHBENCH_SWEEP, dir.path()).unwrap();
    let whole = run_sweep(&s, &|_| {}).unwrap();
    let rps = |r: &schedlab_report::SweepResult| -> Vec<Option<f64>> {
        r.settings.iter().flat_map(|s| s.runs.iter().map(|x| x.schbench_rps)).collect()
    };
    assert!(rps(&whole).iter().all(|v| v.is_some_and(|v| v > 0.0)), "{:?}", rps(&whole));
    let out = dir.path().join("out");
    for i in 0..2 {
        run_shard(&s, ShardSpec { index: i, count: 2 }, &|_| {}).unwrap().write(&out).unwrap();
    }
    let merged = merge_dir(&out, Some(&s)).unwrap();
    assert_eq!(rps(&merged.result), rps(&whole));
    assert_eq!(merged.result, whole);
    assert_eq!(render(&merged.result), render(&whole));
}

#[test]
fn mismatched_shards_are_refused() {
    let s = sweep(SWEEP);
    let dir = tmp("bad");
    run_shard(&s, ShardSpec { index: 0, count: 2 }, &|_| {}).unwrap().write(dir.path()).unwrap();
    let e = merge_dir(dir.path(), Some(&s)).unwrap_err().to_string();
    assert!(e.ends_with("missing shard-1-of-2.json"), "{e}");

    // Shard 1 of another sweep: the same settings for a different duration.
    let other = sweep(&SWEEP.replace("100ms", "50ms"));
    assert_ne!(fingerprint(&s), fingerprint(&other));
    run_shard(&other, ShardSpec { index: 1, count: 2 }, &|_| {}).unwrap().write(dir.path()).unwrap();
    let e = merge_dir(dir.path(), None).unwrap_err().to_string();
    assert!(e.starts_with("shard-1-of-2.json comes from a different sweep or different options"), "{e}");
    assert!(e.contains("shard-0-of-2.json has"), "{e}");
    let e = merge_dir(dir.path(), Some(&other)).unwrap_err().to_string();
    assert!(e.starts_with("shard-0-of-2.json comes from a different sweep"), "{e}");
    assert!(e.contains("this sweep file and these options have"), "{e}");

    // Options count: --rounds 2 is another sweep too.
    let mut fewer = sweep(SWEEP);
    fewer.set_rounds(2).unwrap();
    assert_ne!(fingerprint(&s), fingerprint(&fewer));
    assert!(fewer.set_rounds(4).unwrap_err().to_string().contains("lists only 2 seeds"));

    // Two different splits, junk, and an empty directory.
    std::fs::remove_file(dir.path().join("shard-1-of-2.json")).unwrap();
    run_shard(&s, ShardSpec { index: 0, count: 3 }, &|_| {}).unwrap().write(dir.path()).unwrap();
    assert!(merge_dir(dir.path(), None)
        .unwrap_err()
        .to_string()
        .contains("shard files of different splits (of-2, of-3)"));
    std::fs::remove_file(dir.path().join("shard-0-of-3.json")).unwrap();
    std::fs::write(dir.path().join("shard-1-of-2.json"), "{\"format\": \"something-else/9\"}").unwrap();
    assert!(merge_dir(dir.path(), None).unwrap_err().to_string().contains("shard format `something-else/9`"));
    std::fs::write(dir.path().join("shard-1-of-2.json"), "not json").unwrap();
    assert!(merge_dir(dir.path(), None).unwrap_err().to_string().contains("not a schedlab sweep shard"));
    let empty = tmp("empty");
    assert!(merge_dir(empty.path(), None).unwrap_err().to_string().contains("no shard files"));
}
