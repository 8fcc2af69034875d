//! Scenario cgroups in the model: a cpuset-only group is simulated (its
//! CPUs bound its threads, setaffinity included); a group that needs group
//! scheduling is refused with its file and line, not run as if flat.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use schedlab_trace::EventKind;
use std::path::Path;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str("cg.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_thread_restricted_by_a_cpuset_never_runs_outside_it() {
    // Six hogs on four CPUs: the balancer wants to spread the cpuset's
    // three over every CPU, the cpuset keeps them on CPUs 2-3, also after
    // one asks for CPUs 0-3 with setaffinity.
    let s = scenario(
        r#"
topology = "smt-2x2"
duration = "200ms"
[cgroup.pinned]
cpus = "2-3"
[[thread]]
name = "in"
instances = 3
cgroup = "pinned"
program = [{ setaffinity = "0-3" }, { run = "5ms" }, { sleep = "1ms" }]
[[thread]]
name = "free"
instances = 3
program = [{ run = "5ms" }, { sleep = "1ms" }]
"#,
    );
    let r = simulate(&s, &SimOptions::default()).unwrap();
    let pids: Vec<i32> =
        r.trace.table.tasks.iter().filter(|(_, t)| t.comm.starts_with("in-")).map(|(p, _)| *p).collect();
    assert_eq!(pids.len(), 3);
    let mut cpus_in = std::collections::BTreeSet::new();
    let mut cpus_free = std::collections::BTreeSet::new();
    for e in &r.trace.events {
        if let EventKind::SchedSwitch { next_pid, .. } = e.kind {
            if pids.contains(&next_pid) {
                cpus_in.insert(e.cpu);
            } else if r.trace.table.tasks.get(&next_pid).is_some_and(|t| t.comm.starts_with("free-")) {
                cpus_free.insert(e.cpu);
            }
        }
    }
    assert_eq!(cpus_in.into_iter().collect::<Vec<_>>(), [2, 3], "the cpuset's threads ran on exactly its CPUs");
    assert!(cpus_free.contains(&0) && cpus_free.contains(&1), "the others ran outside it: {cpus_free:?}");
}

#[test]
fn a_group_with_a_weight_or_quota_is_refused_naming_its_table() {
    for (knob, said) in [
        ("weight = 300", "weight = 300"),
        ("max = \"50ms\"", "CFS bandwidth"),
        ("idle = true", "idle"),
        ("", "default weight"),
    ] {
        let s = scenario(&format!(
            "topology = \"smt-2x2\"\nduration = \"10ms\"\n[cgroup.g]\n{knob}\n[[thread]]\nname = \"a\"\ncgroup = \"g\"\nprogram = [{{ run = \"1ms\" }}]\n"
        ));
        let Err(e) = simulate(&s, &SimOptions::default()) else { panic!("{knob}: simulated") };
        let e = e.to_string();
        assert!(e.starts_with("cg.toml:3:1: [cgroup.\"g\"] sets"), "{e}");
        assert!(e.contains(said) && e.contains("schedlab real") && e.contains("group scheduling"), "{e}");
    }
}

#[test]
fn sessions_simulate_only_with_autogroup_off() {
    let text = |autogroup: &str| {
        format!(
            "topology = \"smt-2x2\"\nduration = \"100ms\"\n{autogroup}\n[[thread]]\nname = \"work\"\naffinity = \"0\"\n\
             program = [{{ run = \"1ms\" }}]\n[[thread]]\nname = \"hog\"\nnice = 10\nsession = \"other\"\n\
             affinity = \"0\"\nprogram = [{{ run = \"1ms\" }}]\n"
        )
    };
    for on in ["", "autogroup = true"] {
        let Err(e) = simulate(&scenario(&text(on)), &SimOptions::default()) else { panic!("{on:?}: simulated") };
        let e = e.to_string();
        assert!(
            e.starts_with("cg.toml:8:1: thread `hog` runs in session `other`") && e.contains("autogroup = false"),
            "{e}"
        );
    }
    // Without autogroup a session changes nothing: nice weighting, 1024 : 110.
    let r = simulate(&scenario(&text("autogroup = false")), &SimOptions::default()).unwrap();
    let ran = |comm: &str| {
        let pid = r.trace.table.tasks.iter().find(|(_, t)| t.comm == comm).map(|(p, _)| *p).unwrap();
        r.trace
            .events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::SchedStatRuntime { pid: p, runtime } if p == pid => Some(runtime),
                _ => None,
            })
            .sum::<u64>() as f64
    };
    let share = ran("work") / (ran("work") + ran("hog"));
    assert!((share - 1024.0 / 1134.0).abs() < 0.02, "nice-0 share {share}");
}
