//! Sweep files: the bundled one and a full good file parse into the settings
//! they describe; every bad input is refused at its file:line:col.

use std::path::{Path, PathBuf};

use schedlab_sweep::Sweep;
use schedlab_topology::{parse_cpulist, InputError};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn parse(text: &str) -> Result<Sweep, InputError> {
    Sweep::from_toml_str("s.toml", text, &scenarios())
}

/// `body` after a minimal valid head.
fn with(body: &str) -> String {
    format!("scenario = \"asym_min.toml\"\n{body}\n")
}

/// The error is on `line`, at the column where `needle` starts on that
/// line, prints as `s.toml:line:col: ...` and its message contains `msg`.
#[track_caller]
fn expect_err(text: &str, line: usize, needle: &str, msg: &str) {
    let e = match parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    };
    let src = text.lines().nth(line - 1).unwrap_or_else(|| panic!("no line {line}"));
    let col = src.find(needle).unwrap_or_else(|| panic!("`{needle}` not on line {line}: {src}")) + 1;
    assert_eq!((e.path.as_str(), e.line, e.col), ("s.toml", line, col), "wrong position for: {e}");
    assert!(e.message.contains(msg), "message `{}` lacks `{msg}`", e.message);
    assert!(e.to_string().starts_with(&format!("s.toml:{line}:{col}: ")), "{e}");
}

#[test]
fn bundled_sweep_is_the_seed_table() {
    let s = Sweep::load(&scenarios().join("sweeps/itmt-delay-dequeue.toml")).unwrap();
    assert_eq!((s.rounds(), s.duration_ns, s.seeds()[0], s.stall_threshold_ns), (5, Some(30_000_000_000), 1, 500_000));
    assert_eq!(s.wakees, ["worker"]);
    assert_eq!(s.scenario_name, "asym_min");
    let names: Vec<&str> = s.settings.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        ["defaults", "sched_itmt_enabled=0", "NO_DELAY_DEQUEUE", "defaults, SMT siblings 20-23 also allowed"]
    );
    let [d, itmt, ndd, smt] = &s.settings[..] else { panic!() };
    assert!(d.breakdown && !itmt.breakdown && !ndd.breakdown && !smt.breakdown);
    assert!(d.topology.itmt_enabled && !itmt.topology.itmt_enabled && ndd.topology.itmt_enabled);
    assert_eq!(ndd.features, ["NO_DELAY_DEQUEUE"]);
    assert_eq!(ndd.features_changed, ["NO_DELAY_DEQUEUE"]);
    assert!(d.features.is_empty() && d.features_changed.is_empty());
    assert_eq!(d.kernel, "mainline");
    // CPU 6 ranks highest of 4-7; with the SMT siblings, 6 and 22 tie and the
    // lower id wins.
    assert_eq!((d.top_cpu, smt.top_cpu), (Some(6), Some(6)));
    assert_eq!(d.allowed_cpus, parse_cpulist("4-7").unwrap());
    assert_eq!(smt.allowed_cpus, parse_cpulist("4-7,20-23").unwrap());
    let worker =
        |x: &schedlab_sweep::Setting| x.scenario.threads.iter().find(|t| t.group == "worker").unwrap().affinity;
    assert_eq!(worker(smt), parse_cpulist("4-7,20-23").unwrap());
    assert_eq!(worker(d), parse_cpulist("4-7").unwrap());
    let waker = smt.scenario.threads.iter().find(|t| t.group == "waker").unwrap();
    assert_eq!(waker.affinity, parse_cpulist("2").unwrap(), "only the named group changes");
    assert_eq!(s.jobs(), 20);
}

#[test]
fn every_key() {
    let s = parse(
        r#"
scenario = "asym_min.toml"
rounds = 3
duration = 200000000
seed = 7
stall_threshold = "1ms"
wakees = ["worker", "waker"]
top_cpu = 5
breakdown = ["b"]

[[setting]]
name = "a"
kernel = "6.12"
features = ["NO_RUN_TO_PARITY", "NO_DELAY_DEQUEUE"]

[[setting]]
name = "b"
itmt = false
affinity = { worker = [4, 5], waker = 3 }
"#,
    )
    .unwrap();
    assert_eq!((s.rounds(), s.duration_ns, s.seeds()[0], s.stall_threshold_ns), (3, Some(200_000_000), 7, 1_000_000));
    assert_eq!(s.wakees, ["worker", "waker"]);
    let (a, b) = (&s.settings[0], &s.settings[1]);
    assert_eq!(a.kernel, "6.12");
    assert_eq!(a.scenario.kernel_profile.value, "6.12");
    assert_eq!(a.features_changed, ["NO_RUN_TO_PARITY", "NO_DELAY_DEQUEUE"]);
    assert_eq!((a.top_cpu, b.top_cpu), (Some(5), Some(5)), "an explicit top_cpu applies to every setting");
    assert!(!a.breakdown && b.breakdown);
    assert_eq!(b.allowed_cpus, parse_cpulist("3-5").unwrap());
}

#[test]
fn defaults_come_from_the_scenario() {
    let s = parse(&with("[[setting]]\nname = \"x\"")).unwrap();
    assert_eq!((s.rounds(), s.duration_ns, s.seeds()[0], s.stall_threshold_ns), (1, None, 1, 500_000));
    assert_eq!(s.wakees, ["worker"], "the groups that wait on an eventfd");
    assert_eq!(s.settings[0].top_cpu, Some(6));
}

#[test]
fn syntax_and_unknown_keys() {
    let e = parse("scenario = \"asym_min.toml\nrounds = 2\n").unwrap_err();
    assert_eq!((e.line, e.col), (1, 26), "an unterminated string is reported where the line ends: {e}");
    expect_err(&with("rounds = = 2"), 2, "= 2", "");
    expect_err(&with("round = 2\n[[setting]]\nname = \"x\""), 2, "round", "unknown field `round`");
    expect_err(&with("[[setting]]\nname = \"x\"\nfeature = []"), 4, "feature", "unknown field `feature`");
    expect_err(&with("rounds = \"2\"\n[[setting]]\nname = \"x\""), 2, "\"2\"", "invalid type");
    expect_err("rounds = 2\n[[setting]]\nname = \"x\"\n", 1, "rounds", "missing field `scenario`");
}

#[test]
fn scenario_must_exist() {
    expect_err("scenario = \"nope.toml\"\n[[setting]]\nname = \"x\"\n", 1, "\"nope", "no file");
}

#[test]
fn bad_top_level_values() {
    let tail = "\n[[setting]]\nname = \"x\"";
    expect_err(&with(&format!("rounds = 0{tail}")), 2, "0", "`rounds` = 0: expected 1..1000");
    expect_err(&with(&format!("rounds = 1001{tail}")), 2, "1001", "expected 1..1000");
    expect_err(&with(&format!("duration = \"3 parsecs\"{tail}")), 2, "\"3", "`duration`");
    expect_err(&with(&format!("duration = 1.5{tail}")), 2, "1.5", "expected a duration");
    expect_err(&with(&format!("duration = \"0s\"{tail}")), 2, "\"0s\"", "longer than zero");
    expect_err(&with(&format!("seed = -1{tail}")), 2, "-1", "non-negative");
    expect_err(&with(&format!("stall_threshold = true{tail}")), 2, "true", "`stall_threshold`");
    expect_err(&with(&format!("wakees = []{tail}")), 2, "[]", "`wakees` is empty");
    expect_err(&with(&format!("wakees = [\"worker\", \"nobody\"]{tail}")), 2, "\"nobody\"", "no thread group `nobody`");
    expect_err(&with(&format!("top_cpu = 32{tail}")), 2, "32", "has CPUs 0-31");
    expect_err(&with(&format!("breakdown = [\"x\", \"y\"]{tail}")), 2, "\"y\"", "no setting named `y`");
}

#[test]
fn settings_are_required_and_unique() {
    expect_err(&with(""), 1, "scenario", "no settings");
    expect_err(&with("setting = []"), 2, "[]", "no settings");
    expect_err(&with("[[setting]]\nname = \"x\"\n[[setting]]\nname = \"x\""), 5, "\"x\"", "defined twice");
    expect_err(&with("[[setting]]\nname = \" \""), 3, "\" \"", "`name` is empty");
    expect_err(&with("[[setting]]\nitmt = false"), 2, "[[setting]]", "missing field `name`");
}

#[test]
fn bad_setting_values() {
    let s = |body: &str| with(&format!("[[setting]]\nname = \"x\"\n{body}"));
    expect_err(&s("features = [\"NO_RUN_TO_PARITY\", \"NO_SUCH_THING\"]"), 4, "\"NO_SUCH", "`features`");
    expect_err(&s("kernel = \"2.6\""), 4, "\"2.6\"", "unknown kernel profile `2.6`");
    expect_err(&s("itmt = 0"), 4, "0", "invalid type");
    expect_err(&s("affinity = { nobody = \"1\" }"), 4, "nobody", "no thread group `nobody`");
    expect_err(&s("affinity = { worker = \"4-40\" }"), 4, "\"4-40\"", "topology `ryzen-7950x` has CPUs 0-31");
    expect_err(&s("affinity = { worker = \"7-4\" }"), 4, "\"7-4\"", "`affinity`");
    expect_err(&s("affinity = { worker = [] }"), 4, "[]", "an empty list");
    expect_err(&s("affinity = { worker = [4, \"5\"] }"), 4, "[4", "expected CPU numbers");
    expect_err(&s("affinity = { worker = -1 }"), 4, "-1", "not a CPU number");
    expect_err(&s("affinity = \"4-7\""), 4, "\"4-7\"", "invalid type");
}

#[test]
fn fair_server_runtime_may_be_zero() {
    let s = |v: &str| with(&format!("[[setting]]\nname = \"x\"\nfair_server_runtime = {v}"));
    for (v, ns) in [("\"0\"", 0), ("0", 0), ("\"0ms\"", 0), ("\"50ms\"", 50_000_000), ("\"1s\"", 1_000_000_000)] {
        let sweep = parse(&s(v)).unwrap_or_else(|e| panic!("fair_server_runtime = {v}: {e}"));
        assert_eq!(sweep.settings[0].scenario.fair_server_runtime_ns, Some(ns), "fair_server_runtime = {v}");
    }
    expect_err(&s("\"2s\""), 4, "\"2s\"", "must fit its 1 s period");
    expect_err(&s("1000000001"), 4, "1000000001", "must fit its 1 s period");
    expect_err(&s("-1"), 4, "-1", "negative");
    expect_err(&s("\"soon\""), 4, "\"soon\"", "`fair_server_runtime`");
    expect_err(&s("true"), 4, "true", "expected a duration");
}

#[test]
fn fair_server_runtime_fits_the_scenarios_rt_runtime() {
    // As the scenario file refuses it: sched_rt_runtime_us below the fair
    // servers' runtime is a write the kernel refuses with EBUSY.
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new().prefix("schedlab-sweep-parse-").tempdir().unwrap();
    let dir = tmp.path();
    let scenario = std::fs::read_to_string(scenarios().join("rt-pi-push.toml")).unwrap();
    let scenario = scenario.replace("sched_rt_runtime_us = -1 ", "sched_rt_runtime_us = 100000 ");
    assert!(scenario.contains("sched_rt_runtime_us = 100000"));
    std::fs::write(dir.join("rt.toml"), scenario).unwrap();
    let text = |v: &str| format!("scenario = \"rt.toml\"\n[[setting]]\nname = \"x\"\nfair_server_runtime = {v}\n");
    let parse_in = |t: &str| Sweep::from_toml_str("s.toml", t, dir);
    for (v, ns) in [("\"0\"", 0), ("\"100ms\"", 100_000_000)] {
        let sweep = parse_in(&text(v)).unwrap_or_else(|e| panic!("fair_server_runtime = {v}: {e}"));
        assert_eq!(sweep.settings[0].scenario.fair_server_runtime_ns, Some(ns));
    }
    let e = parse_in(&text("\"101ms\"")).map(|_| ()).unwrap_err();
    assert_eq!((e.line, e.col), (4, 23), "{e}");
    assert!(e.message.contains("above the scenario's sched_rt_runtime_us = 100000"), "{e}");
}

#[test]
fn kernel_background_needs_a_duration() {
    // Its kworkers and watchdog never finish: a scenario that ends by itself
    // would run forever under this setting unless the sweep bounds it.
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new().prefix("schedlab-sweep-bg-").tempdir().unwrap();
    let dir = tmp.path();
    let scenario = "name = \"once\"\ntopology = \"smt-2x2\"\n[[thread]]\nname = \"a\"\nloop = false\nprogram = [{ run = \"1ms\" }]\n";
    std::fs::write(dir.join("once.toml"), scenario).unwrap();
    let text =
        |head: &str| format!("scenario = \"once.toml\"\n{head}[[setting]]\nname = \"x\"\nbackground = \"kernel\"\n");
    let parse_in = |t: &str| Sweep::from_toml_str("s.toml", t, dir);
    let e = parse_in(&text("")).map(|_| ()).unwrap_err();
    assert_eq!((e.line, e.col), (4, 14), "{e}");
    assert!(e.message.contains("never finishes"), "{e}");
    assert!(parse_in(&text("duration = \"10ms\"\n")).is_ok());
}

#[test]
fn energy_aware_overrides_the_topologys_sysctl() {
    let text = with(
        "[[setting]]\nname = \"on\"\n[[setting]]\nname = \"off\"\nenergy_aware = false\n\
         [[setting]]\nname = \"off-by-set\"\nset = \"energy_aware=0\"",
    );
    let sweep = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let on: Vec<bool> = sweep.settings.iter().map(|s| s.topology.sched_energy_aware).collect();
    assert_eq!(on, [true, false, false]);
    let s = |body: &str| with(&format!("[[setting]]\nname = \"x\"\n{body}"));
    expect_err(&s("energy_aware = 1"), 4, "1", "invalid type");
    expect_err(
        &s("set = \"energy_aware=0\"\nenergy_aware = true"),
        4,
        "\"energy_aware=0\"",
        "`energy_aware` is given both",
    );
}
