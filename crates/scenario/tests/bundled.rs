//! Every file in `scenarios/` parses, and the key facts of each hold.

use std::path::{Path, PathBuf};

use schedlab_scenario::{ObjKind, ObjRef, Op, Policy, Repeat, Scenario};
use schedlab_topology::parse_cpulist;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn load(name: &str) -> Scenario {
    let path = scenarios_dir().join(name);
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_bundled_scenario_parses() {
    let mut n = 0;
    for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!s.threads.is_empty(), "{}", path.display());
            assert!(!s.description.is_empty(), "{} has no description", path.display());
            assert_eq!(s.name, path.file_stem().unwrap().to_str().unwrap());
            n += 1;
        }
    }
    assert!(n >= 6, "only {n} scenarios found");
}

#[test]
fn asym_min_is_seed_000s_reproducer() {
    let s = load("asym_min.toml");
    assert_eq!(s.topology_ref, "ryzen-7950x");
    assert_eq!(s.topology.nr_cpus(), 32);
    assert_eq!(s.duration_ns, Some(30_000_000_000));
    assert_eq!(s.stall_threshold_ns, 500_000);
    assert_eq!(s.threads.len(), 3);
    let names: Vec<&str> = s.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["worker-0", "worker-1", "waker"]);

    let workers = parse_cpulist("4-7").unwrap();
    for (i, w) in s.threads[..2].iter().enumerate() {
        assert_eq!(w.group, "worker");
        assert_eq!(w.instance, i as u32);
        assert_eq!(w.policy, Policy::Other);
        assert_eq!(w.nice, 0);
        assert_eq!(w.affinity, workers);
        assert_eq!(w.program.repeat, Repeat::Forever);
        let done = s.object_id(&format!("done{i}")).unwrap();
        let efd = s.object_id(&format!("efd{i}")).unwrap();
        assert_eq!(
            w.program.ops,
            vec![
                Op::Run { ns: 1_000_000 },
                Op::Post { flag: ObjRef::Fixed(done) },
                Op::Wait { efd: ObjRef::Fixed(efd) }
            ]
        );
        assert_eq!(s.objects[done as usize].kind, ObjKind::Flag);
        assert_eq!(s.objects[efd as usize].kind, ObjKind::Eventfd);
    }

    let waker = s.thread("waker").unwrap();
    assert_eq!(waker.affinity, parse_cpulist("2").unwrap());
    let id = |n: &str| s.object_id(n).unwrap();
    assert_eq!(
        waker.program.ops,
        vec![
            Op::Poll { flags: vec![id("done0"), id("done1")], after_ns: 10_000 },
            Op::Signal { efd: ObjRef::ByPolled(vec![id("efd0"), id("efd1")]), count: 1 },
        ]
    );
    assert_eq!(s.kernel_profile.value, "mainline");
    assert!(s.features.is_empty());
}

#[test]
fn two_hogs_share_one_cpu() {
    let s = load("two-hogs.toml");
    assert_eq!(s.topology.nr_cpus(), 4);
    assert_eq!(s.duration_ns, Some(10_000_000_000));
    assert_eq!(s.threads.len(), 2);
    for t in &s.threads {
        assert_eq!(t.affinity.to_cpulist(), "0");
        assert_eq!(t.nice, 0);
        assert!(matches!(t.program.ops[..], [Op::Run { .. }]));
        assert_eq!(t.program.repeat, Repeat::Forever);
    }
}

#[test]
fn nice_hogs_are_nice_0_and_5() {
    let s = load("nice-hogs.toml");
    let nices: Vec<i32> = s.threads.iter().map(|t| t.nice).collect();
    assert_eq!(nices, [0, 5]);
    assert!(s.threads.iter().all(|t| t.affinity.to_cpulist() == "0"));
}

#[test]
fn sleeper_runs_1ms_sleeps_10ms() {
    let s = load("sleeper.toml");
    let sl = s.thread("sleeper").unwrap();
    assert_eq!(sl.program.ops, vec![Op::Run { ns: 1_000_000 }, Op::Sleep { ns: 10_000_000 }]);
    assert_eq!(sl.affinity, s.thread("hog").unwrap().affinity);
}

#[test]
fn delayed_wakeup_has_a_cross_core_waker() {
    let s = load("delayed-wakeup.toml");
    let b = s.thread("blocker").unwrap();
    let w = s.thread("waker").unwrap();
    assert_eq!(b.affinity.to_cpulist(), "0");
    assert_eq!(s.thread("hog").unwrap().affinity.to_cpulist(), "0");
    assert!(!w.affinity.intersects(&s.topology.smt_mask(0)), "waker must be on another core");
    let wake = s.object_id("wake").unwrap();
    assert_eq!(w.program.ops[1], Op::Signal { efd: ObjRef::Fixed(wake), count: 1 });
}

#[test]
fn short_slice_task_asks_for_half_a_millisecond() {
    let s = load("short-slice.toml");
    assert_eq!(s.thread("short").unwrap().slice_ns, Some(500_000));
    assert_eq!(s.thread("hog").unwrap().slice_ns, None);
}

/// The format example in the crate docs is a valid scenario.
#[test]
fn crate_doc_example_parses() {
    let src = include_str!("../src/lib.rs");
    let doc: Vec<&str> =
        src.lines().filter_map(|l| l.strip_prefix("//!")).map(|l| l.strip_prefix(' ').unwrap_or(l)).collect();
    let start = doc.iter().position(|l| *l == "```toml").unwrap() + 1;
    let len = doc[start..].iter().position(|l| *l == "```").unwrap();
    let text = doc[start..start + len].join("\n");
    let s = Scenario::from_toml_str("doc.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(s.threads.len(), 3);
    assert_eq!(s.objects[s.object_id("m").unwrap() as usize].kind, ObjKind::Mutex { pi: true });
}

/// `[[measure]]`: markers resolve to comms and objects; mistakes name the line.
#[test]
fn measures_resolve_threads_and_objects_and_refuse_unknown_ones() {
    let base = r#"
name = "m"
topology = "qemu-4"
duration = "1s"
[[thread]]
name = "w"
instances = 2
program = [{ wait = "e{i}" }]
[[thread]]
name = "k"
program = [{ signal = "e0" }, { signal = "e1" }, { sleep = "1ms" }]
"#;
    let with = |m: &str| Scenario::from_toml_str("m.toml", &format!("{base}[[measure]]\n{m}\n"), Path::new("."));
    let s = with("name = \"h\"\nfrom = \"k signal e1\"\nto = \"w wait_done *\"\nwithin = \"1ms\"").unwrap();
    let m = &s.measures[0];
    assert_eq!(m.from.threads, vec!["k"]);
    assert_eq!(m.to.threads, vec!["w-0", "w-1"], "a [[thread]] name means every instance");
    assert_eq!(m.from.object, s.object_id("e1"));
    assert_eq!((m.to.object, m.within_ns, m.line), (None, Some(1_000_000), 12), "the [[measure]] line");
    for (bad, want) in [
        ("name = \"h\"\nfrom = \"x signal e1\"\nto = \"w wait_done e1\"", "no thread `x`"),
        ("name = \"h\"\nfrom = \"k shout e1\"\nto = \"w wait_done e1\"", "unknown operation `shout`"),
        ("name = \"h\"\nfrom = \"k signal nope\"\nto = \"w wait_done e1\"", "no eventfd, flag or mutex named `nope`"),
        ("name = \"h\"\nfrom = \"k signal\"\nto = \"w wait_done e1\"", "needs an object"),
        ("name = \"h\"\nfrom = \"k loop_end e1\"\nto = \"w wait_done e1\"", "loop_end takes no object"),
        ("name = \"h\"\nfrom = \"k\"\nto = \"w wait_done e1\"", "expected \"THREAD OP OBJECT\""),
        ("name = \"h\"\nfrom = \"k signal e1\"\nto = \"w wait_done e1\"\nwithin = \"0\"", "within"),
        ("name = \"h\"\nfrom = \"k signal e1\"\nto = \"w wait_done e1\"\nspeed = 1", "unknown field `speed`"),
    ] {
        let err = with(bad).unwrap_err().to_string();
        let line: usize = err.split(':').nth(1).unwrap().parse().unwrap();
        assert!(line >= 13 && err.contains(want), "{bad}\n=> {err}");
    }
}

/// The cgroup examples (not simulated: the model refuses cpu groups) parse
/// as their comments say.
#[test]
fn cgroup_examples_parse() {
    let dir = scenarios_dir().join("cgroups");
    let groups = Scenario::load(&dir.join("groups-1-vs-4.toml")).unwrap_or_else(|e| panic!("{e}"));
    let weights: Vec<Option<u32>> = groups.cgroups.iter().map(|c| c.weight).collect();
    assert_eq!(weights, [Some(300), Some(100)], "four, one");
    let ag = Scenario::load(&dir.join("autogroup.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ag.autogroup.as_ref().map(|a| a.value), Some(true));
    assert_eq!(ag.thread("ag-hog").unwrap().session, Some(0));
}
