//! The `schedlab` binary end to end: what a user types and sees.

use std::process::Command;

mod common;
use common::{err, ok, root, tmp_dir};

/// A fresh directory for one test's files, removed when the guard drops
/// (also when the test fails).
fn tmp() -> tempfile::TempDir {
    tmp_dir("cli")
}

#[test]
fn run_prints_the_setting_and_a_row_per_thread() {
    let out = ok(&["run", "scenarios/two-hogs.toml", "--duration", "1s"]);
    assert!(out.contains("machine   smt-2x2: 4 CPUs, HZ=1000"), "{out}");
    assert!(out.contains("features: defaults"), "{out}");
    // The per-thread table (the work-conservation table below repeats the names).
    let rows: Vec<&str> =
        out.lines().take_while(|l| !l.starts_with("work conservation")).filter(|l| l.starts_with("hog-")).collect();
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
    let dir = tmp();
    let (a, b, c) = (dir.path().join("a.trace"), dir.path().join("b.trace"), dir.path().join("c.trace"));
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
    let dir = tmp();
    let path = dir.path().join("rt.trace");
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
    // Issue 40: a likely typo gets the name meant.
    let e = err(&["run", "scenarios/two-hogs.toml", "--features", "NO_DELAY_DEQUEU"]);
    assert!(e.contains("did you mean `NO_DELAY_DEQUEUE`?"), "{e}");
    let e = err(&["run", "scenarios/two-hogs.toml", "--topology", "ryzen-7950"]);
    assert!(e.contains("did you mean `ryzen-7950x`?"), "{e}");
    assert!(err(&["run", "scenarios/no-such-file.toml"]).contains("no-such-file.toml"));
    // An affinity the overriding topology cannot satisfy.
    let e = err(&["run", "scenarios/asym_min.toml", "--topology", "qemu-4"]);
    assert!(e.contains("asym_min.toml:") && e.contains("qemu-4"), "{e}");
}

#[test]
fn the_rt_probe_runs_and_shows_the_pi_boost() {
    let dir = tmp();
    let path = dir.path().join("probe.trace");
    ok(&["run", "scenarios/rt-pi-push.toml", "--duration", "100ms", "--trace", path.to_str().unwrap()]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("sched_pi_setprio: comm=L pid=1002 oldprio=89 newprio=9"), "W's block boosts L to FIFO 90");
}

#[test]
fn run_reports_the_scenarios_measures_in_text_and_json() {
    let text = ok(&["run", "scenarios/rt-pi-push.toml", "--features", "RT_PUSH_IPI"]);
    assert!(text.contains("measures  (from the scenario's [[measure]] tables)"), "{text}");
    let line = text.lines().find(|l| l.starts_with("L resume")).unwrap();
    assert!(line.contains("within 100.000 ms: 1/1") && line.contains("moved 1/1"), "{line}");

    let json = ok(&["run", "scenarios/rt-pi-push.toml", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let m = &doc["measures"][0];
    assert_eq!(m["name"], "L resume");
    let wait = m["intervals_ns"][0].as_u64().unwrap();
    assert!(wait > 1_400_000_000, "6.12 defaults: L waits the dwell, {wait} ns");
    assert_eq!((m["timely"].as_u64(), m["moved"].as_u64()), (Some(0), Some(0)));
}

#[test]
fn perfetto_file_holds_the_runs_events() {
    let dir = tmp();
    let path = dir.path().join("probe.pftrace");
    let out =
        ok(&["run", "scenarios/rt-pi-push.toml", "--features", "RT_PUSH_IPI", "--perfetto", path.to_str().unwrap()]);
    assert!(out.contains(&format!("perfetto  {}", path.display())));
    let bytes = std::fs::read(&path).unwrap();
    // A Trace message: repeated field 1 (TracePacket), length-delimited.
    assert_eq!(bytes[0], 0x0a);
    let has = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(has("schedlab_rt_push: comm=L") && has("schedlab_rt_push_ipi: dst_cpu=1"), "decision events as instants");
    assert!(has("6.12.0-schedlab"), "the system info packet that tells Perfetto how to read prev_state");
    let e = err(&["run", "scenarios/rt-pi-push.toml", "--perfetto", "/nonexistent-dir/x.pftrace"]);
    assert!(e.contains("--perfetto /nonexistent-dir/x.pftrace"), "{e}");
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
        // Fewer than 2 x 2 x 100 by the first wakeups' deep C-state exits
        // (menu has no idle history yet) and the stalls.
        assert!((340..=400).contains(&handoffs), "two workers, 1 ms bursts, 2 runs of 0.1 s: {row}");
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
    let dir = tmp();
    let bad = dir.path().join("bad-sweep.toml");
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

/// The JSON cause table of a short asym_min run, recounted from the written
/// trace file by a rule of its own: a stall (signal -> wait_done >= 500 us)
/// whose wakee's last `schedlab_ttwu` was `runnable_delayed` is "delayed in
/// place" behind whoever was running on that CPU at the ttwu; one placed on
/// an idle CPU where a task that the balancer had moved there
/// (`schedlab_lb_migrate`) was switched in first is "stacked by balancer"
/// behind that task; anything else is "other".
#[test]
fn cause_table_matches_a_recount_from_the_trace_file() {
    use schedlab_trace::{EventKind, UserOp, WakePath};
    use std::collections::{BTreeMap, HashMap};

    let mut seen_stacked = 0;
    let dir = tmp();
    for seed in ["1", "8"] {
        let path = dir.path().join(format!("causes-{seed}.trace"));
        let json = ok(&[
            "run",
            "scenarios/asym_min.toml",
            "--duration",
            "2s",
            "--seed",
            seed,
            "--json",
            "--trace",
            path.to_str().unwrap(),
        ]);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let mut from_json: BTreeMap<(String, String), u64> = BTreeMap::new();
        for row in doc["attribution"]["causes"].as_array().unwrap() {
            let cause = row["cause"].as_str().unwrap();
            let key = match cause {
                "delayed_in_place" | "stacked_by_balancer" => {
                    (cause.to_string(), row["culprit"].as_str().unwrap_or("-").to_string())
                }
                _ => ("other".to_string(), "-".to_string()),
            };
            *from_json.entry(key).or_default() += row["stalls"].as_u64().unwrap();
        }

        let text = std::fs::read_to_string(&path).unwrap();
        let trace = schedlab_trace::ftrace::parse_ftrace(path.to_str().unwrap(), &text).unwrap();
        let mut curr: Vec<i32> = vec![0; trace.nr_cpus as usize];
        let mut signalled: HashMap<u32, u64> = HashMap::new();
        // wakee -> (ttwu ts, delayed, cpu, running there at the ttwu, first other task switched in there)
        let mut woken: HashMap<i32, (u64, bool, u32, i32, Option<i32>)> = HashMap::new();
        let mut balanced_to: HashMap<i32, u32> = HashMap::new();
        let mut recount: BTreeMap<(String, String), u64> = BTreeMap::new();
        for ev in &trace.events {
            match ev.kind {
                EventKind::SchedSwitch { next_pid, .. } => {
                    curr[ev.cpu as usize] = next_pid;
                    for (&pid, w) in woken.iter_mut() {
                        if w.2 == ev.cpu && w.4.is_none() && next_pid != 0 && next_pid != pid {
                            w.4 = Some(next_pid);
                        }
                    }
                    if let Some(w) = woken.get_mut(&next_pid) {
                        w.4.get_or_insert(next_pid);
                    }
                }
                EventKind::Ttwu { pid, path, cpu } => {
                    let delayed = path == WakePath::Runnable { delayed: true };
                    woken.insert(pid, (ev.ts, delayed, cpu, curr[cpu as usize], None));
                }
                EventKind::LbMigrate { pid, dst_cpu, .. } => {
                    balanced_to.insert(pid, dst_cpu);
                }
                EventKind::User { pid, op: UserOp::Signal { obj } } => {
                    let _ = pid;
                    signalled.entry(obj).or_insert(ev.ts);
                }
                EventKind::User { pid, op: UserOp::WaitDone { obj } } => {
                    let Some(start) = signalled.remove(&obj) else { continue };
                    if ev.ts - start < 500_000 {
                        continue;
                    }
                    let comm = |p: i32| trace.table.comm(p).to_string();
                    let key = match woken.get(&pid) {
                        Some(&(ts, true, _, running, _)) if ts >= start => ("delayed_in_place".into(), comm(running)),
                        Some(&(ts, false, cpu, 0, Some(first)))
                            if ts >= start && first != pid && balanced_to.get(&first) == Some(&cpu) =>
                        {
                            ("stacked_by_balancer".into(), comm(first))
                        }
                        _ => ("other".to_string(), "-".to_string()),
                    };
                    *recount.entry(key).or_default() += 1;
                }
                _ => {}
            }
        }
        assert_eq!(from_json, recount, "seed {seed}");
        let stalls = doc["metrics"]["stalls"].as_array().unwrap().len() as u64;
        assert_eq!(recount.values().sum::<u64>(), stalls, "seed {seed}");
        assert!(recount.keys().any(|k| k.0 == "delayed_in_place"), "seed {seed}: {recount:?}");
        seen_stacked += recount.keys().filter(|k| k.0 == "stacked_by_balancer").count();
        let wc = &doc["work_conservation"];
        assert!(wc["unclaimed_pct"].as_f64().unwrap() > 0.0);
        assert_eq!(wc["grace_ns"], 100_000);
    }
    assert!(seen_stacked > 0, "seed 8 has the wakeup vs. active-balance race");
}

#[test]
fn run_prints_work_conservation_causes_and_narratives() {
    // Seed 3 has three stalls in 2 s; --stalls 2 narrates the first two.
    let out = ok(&["run", "scenarios/asym_min.toml", "--duration", "2s", "--seed", "3", "--stalls", "2"]);
    let at = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("no {needle:?} in {out}"));
    let n: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("stalls    ")?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(n >= 3, "{out}");
    assert!(at(&format!("stalls    {n} of")) < at("work conservation:"));
    assert!(at("work conservation:") < at("unclaimed idle:"));
    assert!(at("unclaimed idle:") < at(&format!("stall causes: {n} stalls")));
    assert!(at(&format!("stall causes: {n} stalls")) < at(&format!("stall 1 of {n}: ")));
    assert!(out.contains(&format!("stall 2 of {n}: ")) && !out.contains(&format!("stall 3 of {n}: ")), "{out}");
    let row =
        out.lines().find(|l| l.starts_with("worker-0 ") && l.contains(" 4-7 ")).unwrap_or_else(|| panic!("{out}"));
    assert!(row.split_whitespace().count() == 11, "{row}");
    assert!(out.contains("woken in place while delayed behind worker-"), "{out}");
    assert!(out.lines().all(|l| l == l.trim_end()), "trailing spaces");
    let none =
        ok(&["run", "scenarios/asym_min.toml", "--duration", "2s", "--seed", "3", "--stalls", "0", "--grace", "1ms"]);
    assert!(none.contains(&format!("stall causes: {n} stalls")) && !none.contains("stall 1 of"), "{none}");
    assert!(none.contains("with a 1ms grace window"), "{none}");
}

/// `schedlab run ... | head`: a closed stdout ends the process quietly (as
/// SIGPIPE does for other tools), never with a panic message.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        // ~75 KB of narratives: more than a pipe holds, so writes hit the closed pipe.
        .args(["run", "scenarios/asym_min.toml", "--duration", "10s", "--seed", "10", "--stalls", "200"])
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then the pipe closes
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn topologies_host_reads_this_machine_into_a_file_that_loads() {
    let dir = tmp();
    let out = dir.path().join("host.toml");
    let stdout = ok(&["topologies", "--host", "--no-probe", "--out", out.to_str().unwrap()]);
    assert!(stdout.is_empty(), "--out writes the file, not stdout: {stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("--no-probe") && text.contains("[idle]"), "{text}");
    let topo = schedlab_topology::Topology::load(&out).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let n: usize = online
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum();
    assert_eq!(topo.nr_cpus(), n, "CPUs in the file vs /sys/devices/system/cpu/online ({})", online.trim());
    let help = ok(&["topologies", "--help"]);
    for what in ["thread_siblings_list", "cpuidle", "exit_latency_by_idle", "context_switch_ns", "[[noise]]", "no root"]
    {
        assert!(help.contains(what), "--help does not mention {what}:\n{help}");
    }
    let e = err(&["topologies", "--no-probe"]);
    assert!(e.contains("--host"), "{e}");
}

/// The 7950X preset has [[noise]] and menu-chosen idle states: one seed
/// still gives one trace, byte for byte, and another seed a different one.
#[test]
fn noise_and_idle_states_are_deterministic_per_seed() {
    let dir = tmp();
    let trace = |seed: &str, name: &str| {
        let path = dir.path().join(name);
        ok(&[
            "run",
            "scenarios/asym_min.toml",
            "--duration",
            "300ms",
            "--seed",
            seed,
            "--trace",
            path.to_str().unwrap(),
        ]);
        std::fs::read(&path).unwrap()
    };
    let (a, b, c) = (trace("5", "det-a.trace"), trace("5", "det-b.trace"), trace("6", "det-c.trace"));
    assert!(a == b, "same seed, same trace");
    assert!(a != c, "another seed, another trace");
    let text = String::from_utf8_lossy(&a);
    assert!(text.contains("sched_wake_idle_without_ipi"), "C1's MWAIT polling wakes workers without an IPI");
}

/// Issue 21: a 70 000-character setting name panicked the table writer
/// (std's formatting refuses widths past 65535); columns are padded by hand.
#[test]
fn a_setting_name_wider_than_formatting_allows_is_just_a_wide_column() {
    let dir = common::tmp_dir("long-name");
    let name = "x".repeat(70_000);
    let file = dir.path().join("s.toml");
    let text = format!(
        "scenario = \"{}\"\nrounds = 1\nduration = \"10ms\"\n[[setting]]\nname = \"{name}\"\n[[setting]]\nname = \"b\"\n",
        common::root().join("scenarios/asym_min-2cpu.toml").display()
    );
    std::fs::write(&file, text).unwrap();
    let out = common::schedlab(&["sweep", file.to_str().unwrap(), "--no-timing"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!stderr.contains("panicked"), "{stderr}");
    let row_b = stdout.lines().find(|l| l.starts_with("b ")).unwrap_or_else(|| panic!("no row b:\n{stdout:.2000}"));
    let row_x = stdout.lines().find(|l| l.starts_with(&name)).expect("the long row");
    // Row b is padded to the long name's column: its figures start past it.
    let figures_at = row_b[1..].find(|c: char| c != ' ').map(|i| i + 1).unwrap_or(0);
    assert!(figures_at >= name.len(), "b's figures at column {figures_at}");
    assert!(row_x.len() > name.len());
}

/// Issue 21: a FIFO with no writer blocked `run` forever (opening it waits
/// for a writer) and `-` was a file name. Inputs are checked before they
/// are opened, and `-` is standard input.
#[test]
fn inputs_that_are_not_files_are_refused_and_dash_is_stdin() {
    let dir = tmp_dir("fifo");
    let fifo = dir.path().join("s.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    if made {
        for cmd in ["run", "sweep"] {
            let e = err(&[cmd, fifo.to_str().unwrap()]);
            assert!(e.contains("it is a FIFO, not a regular file; give a file, or - for standard input"), "{e}");
        }
        // Issue 40: `--topology FIFO` said there was no such file.
        let e = err(&["run", "scenarios/two-hogs.toml", "--topology", fifo.to_str().unwrap()]);
        assert!(e.contains("cannot read topology: it is a FIFO, not a regular file"), "{e}");
        let e = err(&["run", "scenarios/two-hogs.toml", "--topology", "scenarios"]);
        assert!(e.contains("cannot read topology: it is a directory, not a regular file"), "{e}");
        // As the message says, `-` is standard input.
        let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(["run", "scenarios/two-hogs.toml", "--topology", "-", "--duration", "10ms"])
            .current_dir(root())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let topo = std::fs::read(root().join("topologies/smt-2x2.toml")).unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), &topo).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("machine   smt-2x2"));
    }
    let e = err(&["run", "/dev/zero"]);
    assert!(e.contains("/dev/zero: cannot read scenario: it is a device"), "{e}");
    let e = err(&["run", "scenarios"]);
    assert!(e.contains("it is a directory"), "{e}");
    let text = std::fs::read_to_string(root().join("scenarios/two-hogs.toml")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["run", "-", "--duration", "100ms"])
        .current_dir(root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && s.contains("scenario  two-hogs (-)") && s.contains("hog-1"), "{s}");
}

#[test]
fn out_without_shard_or_slurm_is_refused_not_ignored() {
    let e = err(&["sweep", "scenarios/sweeps/itmt-delay-dequeue.toml", "--out", "/tmp/never-written"]);
    assert!(e.contains("--out goes with --shard or --slurm"), "{e}");
    assert!(!std::path::Path::new("/tmp/never-written").exists());
}

#[test]
fn bench_rows_of_one_block_come_without_the_table_around_them() {
    // What each block's child process prints: rt-pi-push's row alone.
    let out = ok(&["bench", "--rows-only", "--only", "rt-pi-push", "--reps", "1"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].starts_with("rt-pi-push (qemu-4)"), "{out}");
    // With --only in this process: what was measured (the binary as
    // --version names it, and the machine), the header, the reference
    // loop, the row, the targets.
    let out = ok(&["bench", "--only", "rt-pi-push", "--reps", "1"]);
    let version = ok(&["--version"]);
    let (preamble, table) = out.split_once('\n').unwrap();
    assert!(preamble.starts_with(&format!("{} on ", version.trim())) && preamble.contains(" CPU"), "{out}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("benchmark") && lines[2].starts_with("rt-pi-push"), "{out}");
    assert!(lines.last().unwrap().starts_with("targets (issue 39"), "{out}");
    // Every row has its ns per event and their ratio to the reference's,
    // measured in the same run: the columns named in the header.
    // Columns are right-aligned: a cell ends where its heading does.
    let end_of = |name: &str| lines[0].find(name).unwrap_or_else(|| panic!("no {name} column: {out}")) + name.len();
    let cell = |line: &str, end: usize| line[..end].split_whitespace().last().unwrap_or_default().to_string();
    let (ns_end, ref_end) = (end_of("ns/event"), end_of("x ref"));
    assert!(lines[1].starts_with(schedlab_sweep::bench::REFERENCE_ROW), "{out}");
    assert_eq!(cell(lines[1], ref_end), "1.0x", "the reference is its own unit: {out}");
    let ref_ns: f64 = cell(lines[1], ns_end).parse().unwrap_or_else(|_| panic!("reference ns/event: {out}"));
    let ns: f64 = cell(lines[2], ns_end).parse().unwrap_or_else(|_| panic!("rt-pi-push ns/event: {out}"));
    let ratio: f64 =
        cell(lines[2], ref_end).trim_end_matches('x').parse().unwrap_or_else(|_| panic!("rt-pi-push x ref: {out}"));
    assert!(ref_ns > 0.0 && ns > 0.0, "{out}");
    // Printed to 0.1 ns and 0.1x: the ratio is the quotient of the two.
    assert!((ratio - ns / ref_ns).abs() <= 0.05 + 0.1 / ref_ns * ratio, "{ratio} vs {ns} / {ref_ns}: {out}");
    // A row's name is not a block's: an empty table would look like a result.
    let e = err(&["bench", "--only", "schbench-spr 1s", "--reps", "1"]);
    assert!(e.contains("names no benchmark block") && e.contains("asym_min, rt-pi-push, schbench"), "{e}");
    let help = ok(&["bench", "--help"]);
    for block in schedlab_sweep::bench::BLOCKS {
        assert!(help.contains(block), "--help names the block {block}");
    }
}

#[test]
fn a_real_capture_that_could_outgrow_the_memory_budget_is_refused_before_it_runs() {
    // 1 GB of ring buffer per CPU cannot be read back within 1 GiB: the
    // error comes before any thread or tracefs setting (no root needed).
    for cmd in ["real", "compare"] {
        let e = err(&[
            cmd,
            "scenarios/asym_min-2cpu.toml",
            "--duration",
            "1s",
            "--buffer-kb",
            "1000000",
            "--max-memory",
            "1GiB",
        ]);
        assert!(e.contains("the capture may take up to") && e.contains("x 1000000 KB of ring buffer"), "{cmd}: {e}");
        assert!(e.contains("Lower --buffer-kb or shorten --duration") && e.contains("--max-memory"), "{cmd}: {e}");
    }
}
