//! `[[measure]]` in sweeps: seed 003's probe table from the bundled sweep,
//! the settings that only RT scenarios need (`pi`, `background`), and the
//! measures surviving a shard round trip.

use std::path::{Path, PathBuf};

use schedlab_report::measures::measure_row;
use schedlab_report::{render, SweepResult};
use schedlab_sweep::{merge_dir, run_shard, run_sweep, ShardSpec, Sweep};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// (timely, started, moved, median ns) of `setting`'s first measure.
fn row(r: &SweepResult, setting: &str) -> (usize, usize, usize, u64) {
    let s = r.settings.iter().find(|s| s.name == setting).unwrap_or_else(|| panic!("no setting {setting}"));
    let m = measure_row(s.runs.iter().map(|x| &x.measures[0]), r.measures[0].within_ns);
    (m.timely, m.started, m.moved, m.median_ns.unwrap())
}

const MS: u64 = 1_000_000;

#[test]
fn seed_003_probe_table() {
    let mut sweep = Sweep::load(&scenarios().join("sweeps/rt-pi-push.toml")).unwrap_or_else(|e| panic!("{e}"));
    sweep.set_rounds(4).unwrap();
    let r = run_sweep(&sweep, &|_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.measures[0].name, "L resume");

    let (timely, n, moved, median) = row(&r, "NO_RT_PUSH_IPI");
    assert!(timely == 0 && n == 4 && moved == 0 && median > 1400 * MS);
    for s in ["RT_PUSH_IPI", "NO_RT_PUSH_IPI + RT_PUSH_ON_BOOST (patch)", "background=kernel, RT_PUSH_IPI"] {
        let (timely, n, moved, median) = row(&r, s);
        assert!(timely == 4 && n == 4 && moved == 4 && median < 10 * MS, "{s}");
    }
    // pi = { M = false }: no boost, nothing moves L whichever the feature.
    for s in ["PRIO_NONE, NO_RT_PUSH_IPI", "PRIO_NONE, RT_PUSH_IPI"] {
        let (timely, _, moved, median) = row(&r, s);
        assert!(timely == 0 && moved == 0 && median > 1400 * MS, "{s}");
    }
    // affinity { L = "1-2" }: L already sits on CPU 2 (pushed there when X came); W's block lets it run.
    for s in ["affinity {1,2}, NO_RT_PUSH_IPI", "affinity {1,2}, RT_PUSH_IPI"] {
        let (timely, _, _, median) = row(&r, s);
        assert!(timely == 4 && median < 10 * MS, "{s}");
    }
    // background = "kernel": some runs are rescued before the dwell ends, each by a migration.
    let k = r.settings.iter().find(|s| s.name == "background=kernel, NO_RT_PUSH_IPI").unwrap();
    let early: Vec<bool> = k.runs.iter().map(|x| x.measures[0].intervals_ns[0] < 1400 * MS).collect();
    let moved: Vec<bool> = k.runs.iter().map(|x| x.measures[0].moved == 1).collect();
    assert_eq!(early, moved, "an early rescue is a push");
    assert!(early.iter().any(|&e| e), "{early:?}");

    let text = render(&r);
    assert!(text.contains("L resume: from \"W post t_w\" to \"L poll_done t_w\", timely = under 100 ms"), "{text}");
    assert!(!text.contains("stalls per run"), "no wakees, no stall table:\n{text}");
}

#[test]
fn measures_survive_shards() {
    let mut sweep = Sweep::load(&scenarios().join("sweeps/rt-pi-push.toml")).unwrap_or_else(|e| panic!("{e}"));
    sweep.set_rounds(2).unwrap();
    let whole = run_sweep(&sweep, &|_| {}).unwrap();
    // Removed when `dir` drops, also when the test fails.
    let dir = tempfile::Builder::new().prefix("schedlab-measure-shards-").tempdir().unwrap();
    for i in 0..3 {
        let spec = ShardSpec { index: i, count: 3 };
        let shard = run_shard(&sweep, spec, &|_| {}).unwrap();
        std::fs::write(dir.path().join(format!("shard-{i}-of-3.json")), serde_json::to_string(&shard).unwrap())
            .unwrap();
    }
    let merged = merge_dir(dir.path(), Some(&sweep)).unwrap_or_else(|e| panic!("{e}"));
    drop(dir);
    assert_eq!(render(&merged.result), render(&whole));
}

#[test]
fn rt_settings_are_checked() {
    let head = "scenario = \"rt-pi-push.toml\"\n[[setting]]\nname = \"x\"\n";
    for (extra, want) in [
        ("pi = { Q = false }", "no mutex named `Q`"),
        ("background = \"noisy\"", "expected \"quiet\" or \"kernel\""),
        ("fair_server_runtime = \"2s\"", "1 s period"),
    ] {
        let e = Sweep::from_toml_str("s.toml", &format!("{head}{extra}\n"), &scenarios()).map(|_| ()).unwrap_err();
        assert!(e.line == 4 && e.message.contains(want), "{extra}: {e}");
    }
}
