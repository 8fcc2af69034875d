//! The `schedlab` binary end to end: what a user types and sees.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = schedlab(args);
    assert!(out.status.success(), "schedlab {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn err(args: &[&str]) -> String {
    let out = schedlab(args);
    assert!(!out.status.success(), "schedlab {args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn run_prints_the_setting_and_a_row_per_thread() {
    let out = ok(&["run", "scenarios/two-hogs.toml", "--duration", "1s"]);
    assert!(out.contains("machine   smt-2x2: 4 CPUs, HZ=1000"), "{out}");
    assert!(out.contains("features: defaults"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("hog-")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    for r in rows {
        // Each hog ran half of the second.
        assert!(r.contains(" 500.000 "), "{r}");
    }
    let out =
        ok(&["run", "scenarios/two-hogs.toml", "--duration", "1s", "--features", "NO_RUN_TO_PARITY,NO_PLACE_LAG"]);
    assert!(out.contains("features: NO_PLACE_LAG NO_RUN_TO_PARITY"), "{out}");
}

#[test]
fn asym_min_counts_stalls_against_the_threshold() {
    let measure = |extra: &[&str]| -> (u64, u64) {
        let mut args = vec!["run", "scenarios/asym_min.toml", "--duration", "500ms"];
        args.extend_from_slice(extra);
        let out = ok(&args);
        let line = out.lines().find(|l| l.starts_with("stalls")).unwrap_or_else(|| panic!("{out}")).to_string();
        let words: Vec<&str> = line.split_whitespace().collect();
        (words[1].parse().unwrap(), words[3].parse().unwrap())
    };
    // The workers are placed on different idle CPUs: every handoff is an IPI,
    // an idle exit and a switch, a few microseconds.
    let (stalls, handoffs) = measure(&[]);
    assert!((950..=1000).contains(&handoffs), "{handoffs} handoffs (two workers, ~1 ms bursts, 0.5 s)");
    assert_eq!(stalls, 0);
    let (stalls, handoffs) = measure(&["--threshold", "2us"]);
    assert!(stalls * 10 > handoffs * 9, "{stalls} of {handoffs} handoffs take 2 us or more");
}

#[test]
fn same_seed_gives_a_byte_identical_trace_file() {
    let (a, b, c) = (tmp("a.trace"), tmp("b.trace"), tmp("c.trace"));
    for (p, seed) in [(&a, "1"), (&b, "1"), (&c, "2")] {
        ok(&["run", "scenarios/asym_min.toml", "--duration", "200ms", "--seed", seed, "--trace", p.to_str().unwrap()]);
    }
    let (a, b, c) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), std::fs::read(c).unwrap());
    assert!(a.len() > 10_000);
    assert!(a == b, "same seed, different bytes");
    assert!(a != c, "different seed, same bytes");
}

#[test]
fn the_trace_file_reads_back_into_the_same_metrics() {
    let path = tmp("rt.trace");
    let json =
        ok(&["run", "scenarios/asym_min.toml", "--duration", "300ms", "--json", "--trace", path.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let trace = schedlab_trace::ftrace::parse_ftrace(path.to_str().unwrap(), &text).unwrap();
    let end = doc["simulated_ns"].as_u64().unwrap();
    let m = schedlab_analysis::analyze(
        &trace,
        &schedlab_analysis::AnalysisOptions { end_ts: Some(end), ..Default::default() },
    );
    let direct = &doc["metrics"];
    assert_eq!(direct["stalls"].as_array().unwrap().len(), m.stalls.len());
    for (row, t) in direct["tasks"].as_array().unwrap().iter().zip(&m.tasks) {
        assert_eq!(row["comm"], t.comm.as_str());
        // ftrace text keeps microseconds, so times agree to within a microsecond per interval.
        let rt = row["runtime_ns"].as_u64().unwrap() as i64;
        assert!((rt - t.runtime_ns as i64).abs() < 1_000 * (1 + t.context_switches as i64), "{rt} vs {}", t.runtime_ns);
        assert_eq!(row["wakeups"].as_u64().unwrap(), t.wakeups);
    }
}

#[test]
fn bad_flags_and_files_get_clear_errors() {
    assert!(err(&["run", "scenarios/two-hogs.toml", "--features", "NO_SUCH_THING"])
        .contains("unknown sched feature `NO_SUCH_THING`"));
    assert!(err(&["run", "scenarios/two-hogs.toml", "--features", "UTIL_EST"]).contains("not modeled yet"));
    assert!(err(&["run", "scenarios/two-hogs.toml", "--duration", "ten"]).contains("--duration"));
    assert!(err(&["run", "scenarios/two-hogs.toml", "--kernel", "4.19"]).contains("unknown kernel profile"));
    assert!(err(&["run", "scenarios/two-hogs.toml", "--topology", "nosuch"]).contains("nosuch"));
    assert!(err(&["run", "scenarios/no-such-file.toml"]).contains("no-such-file.toml"));
    // An affinity the overriding topology cannot satisfy.
    let e = err(&["run", "scenarios/asym_min.toml", "--topology", "qemu-4"]);
    assert!(e.contains("asym_min.toml:") && e.contains("qemu-4"), "{e}");
}

#[test]
fn the_rt_probe_runs_and_shows_the_pi_boost() {
    let path = tmp("probe.trace");
    ok(&["run", "scenarios/rt-pi-push.toml", "--duration", "100ms", "--trace", path.to_str().unwrap()]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("sched_pi_setprio: comm=L pid=1002 oldprio=89 newprio=9"), "W's block boosts L to FIFO 90");
}

#[test]
fn features_and_topologies_list_what_exists() {
    let f = ok(&["features"]);
    assert!(f.lines().any(|l| l.starts_with("DELAY_DEQUEUE") && l.contains(" on ") && l.contains("yes")), "{f}");
    assert!(f.lines().any(|l| l.starts_with("RT_PUSH_IPI") && l.contains(" off ") && l.contains("yes")), "{f}");
    assert!(f.lines().any(|l| l.starts_with("UTIL_EST") && l.contains("not yet")), "{f}");
    let f = ok(&["features", "--kernel", "6.12.0"]);
    assert!(f.lines().any(|l| l.starts_with("RT_PUSH_IPI") && l.contains(" on ")), "{f}");
    let t = ok(&["topologies"]);
    for name in ["ryzen-7950x", "ryzen-5800x", "qemu-4", "sapphire-rapids-2s", "smt-2x2"] {
        assert!(t.contains(name), "{t}");
    }
    assert!(ok(&["topologies", "ryzen-7950x"]).contains("231"));
}

#[test]
fn sweep_prints_the_results_and_breakdown_tables() {
    let out = ok(&["sweep", "crates/cli/tests/data/mini-sweep.toml"]);
    assert!(out.contains("runs      2 interleaved rounds of 100 ms per setting, seeds 3-4"), "{out}");
    let head = out.lines().find(|l| l.starts_with("setting ")).unwrap_or_else(|| panic!("{out}"));
    assert!(head.contains("stalls per run") && head.contains("total") && head.ends_with("median handoff"), "{head}");
    for name in ["defaults ", "sched_itmt_enabled=0 "] {
        let row = out.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no row {name}: {out}"));
        // name, two runs, `S of H`, median `N.N us`
        let words: Vec<&str> = row[name.len()..].split_whitespace().collect();
        assert_eq!(words.len(), 7, "{row}");
        let runs: u64 = words[0].parse::<u64>().unwrap() + words[1].parse::<u64>().unwrap();
        assert_eq!(words[2].parse::<u64>().unwrap(), runs, "{row}");
        assert_eq!(words[3], "of");
        let handoffs: u64 = words[4].parse().unwrap();
        assert!((370..=400).contains(&handoffs), "two workers, 1 ms bursts, 2 runs of 0.1 s: {row}");
        assert_eq!(words[6], "us");
    }
    assert!(out.contains("defaults: stall breakdown per run"), "{out}");
    assert!(out.contains("  on CPU 6 behind the other worker"), "{out}");
    assert!(out.contains("defaults: bursts started per CPU"), "{out}");
    assert!(!out.contains("sched_itmt_enabled=0: stall breakdown"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("wall      4 simulations in "), "{out}");

    // --rounds, --duration and --jobs override the file; --json prints it all.
    let json = ok(&[
        "sweep",
        "crates/cli/tests/data/mini-sweep.toml",
        "--rounds",
        "1",
        "--duration",
        "50ms",
        "--jobs",
        "1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["rounds"], 1);
    assert_eq!(v["duration_ns"], 50_000_000);
    assert_eq!(v["settings"][0]["runs"].as_array().unwrap().len(), 1);
    assert_eq!(v["settings"][0]["runs"][0]["seed"], 3);
    assert_eq!(v["settings"][0]["runs"][0]["simulated_ns"], 50_000_000);
    assert!(v["settings"][0]["runs"][0]["breakdown"]["wakeups"].as_u64().unwrap() > 0);
    assert!(v["settings"][1]["runs"][0]["breakdown"].is_null());
    assert_eq!(v["settings"][1]["itmt"], false);
}

#[test]
fn sweep_errors_name_the_file_line_and_column() {
    let bad = tmp("bad-sweep.toml");
    let scenario = root().join("scenarios/asym_min.toml");
    std::fs::write(
        &bad,
        format!(
            "scenario = {:?}\n[[setting]]\nname = \"x\"\nfeatures = [\"NO_SUCH_FEATURE\"]\n",
            scenario.to_str().unwrap()
        ),
    )
    .unwrap();
    let e = err(&["sweep", bad.to_str().unwrap()]);
    assert!(e.contains(&format!("{}:4:13: `features`", bad.display())), "{e}");
    let e = err(&["sweep", "crates/cli/tests/data/mini-sweep.toml", "--rounds", "0"]);
    assert!(e.contains("--rounds"), "{e}");
}
