//! The fairness-spread property end to end: which threads are peers, and
//! the model's own fairness on the grammar's peer-group cases.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schedlab_hunt::fairness::{peer_groups, segments, FLOOR_NS};
use schedlab_hunt::{case, run_case, Class, HuntOptions, RunOutcome, Thresholds};
use schedlab_scenario::Scenario;
use schedlab_topology::Topology;
use schedlab_trace::Pid;

fn opts(topologies: &[&str]) -> HuntOptions {
    HuntOptions {
        topologies: topologies.iter().map(|t| (t.to_string(), Topology::preset(t).unwrap())).collect(),
        base_dir: PathBuf::from("."),
        kernel: "mainline".into(),
        features: Vec::new(),
        against: None,
        seed: 1,
        cases: 400,
        duration_ns: 300_000_000,
        classes: [Class::FairnessSpread].into_iter().collect(),
        thresholds: Thresholds::default(),
        stop_after: 0,
        shard: None,
        shrink_budget: 0,
    }
}

fn groups_of(text: &str, topo: &Topology) -> Vec<Vec<String>> {
    let s = Scenario::from_toml_str_on("f.toml", text, std::path::Path::new("."), topo.clone()).unwrap();
    let pid_of: BTreeMap<String, Pid> =
        s.threads.iter().enumerate().map(|(i, t)| (t.name.clone(), i as Pid + 1)).collect();
    let name: BTreeMap<Pid, String> = pid_of.iter().map(|(n, p)| (*p, n.clone())).collect();
    peer_groups(&s, &pid_of).into_iter().map(|g| g.pids.iter().map(|p| name[p].clone()).collect()).collect()
}

const HEAD: &str = "name = \"f\"\ntopology = \"qemu-4\"\nduration = \"300ms\"\n";

fn hog(name: &str, nice: i32, affinity: &str) -> String {
    format!(
        "\n[[thread]]\nname = \"{name}\"\nnice = {nice}\naffinity = \"{affinity}\"\nprogram = [{{ run = \"4ms\" }}]\n"
    )
}

#[test]
fn peers_are_identical_hogs_with_their_cpus_to_themselves() {
    let topo = Topology::preset("qemu-4").unwrap();
    let text = format!("{HEAD}{}{}{}", hog("a", 0, "0-1"), hog("b", 0, "0-1"), hog("c", 5, "0-1"));
    // The nice-5 hog is not their peer, and it shares their CPUs: no group.
    assert!(groups_of(&text, &topo).is_empty());
    let text = format!("{HEAD}{}{}{}", hog("a", 0, "0-1"), hog("b", 0, "0-1"), hog("c", 5, "2-3"));
    assert_eq!(groups_of(&text, &topo), vec![vec!["a".to_string(), "b".to_string()]]);
    // A sleeper is not a hog; one on their CPUs spoils the group.
    let sleeper = "\n[[thread]]\nname = \"s\"\naffinity = \"1\"\nprogram = [{ run = \"1ms\" }, { sleep = \"1ms\" }]\n";
    let text = format!("{HEAD}{}{}{sleeper}", hog("a", 0, "0-1"), hog("b", 0, "0-1"));
    assert!(groups_of(&text, &topo).is_empty());
    // Background kernel work takes their time unevenly: not judged.
    let text = format!("{HEAD}background = \"kernel\"\n{}{}", hog("a", 0, "0-1"), hog("b", 0, "0-1"));
    assert!(groups_of(&text, &topo).is_empty());
}

/// The grammar's peer-group cases on three machines: the property has
/// segments to judge, and the model's EEVDF shares each runqueue within
/// the band (what the kernel promises), so a fairness hunt finds nothing.
#[test]
fn the_model_shares_a_runqueue_evenly_in_every_peer_group_case() {
    let o = opts(&["qemu-4", "smt-2x2", "ryzen-7950x"]);
    let (mut fair_cases, mut judged, mut worst) = (0, 0, (0u64, 0u64));
    for i in 0..o.cases {
        let (c, topo) = case(&o, i);
        if !c.threads.iter().any(|t| t.shape == "peer") {
            continue;
        }
        fair_cases += 1;
        let groups = groups_of(&c.to_toml("f", &[]), topo);
        assert_eq!(groups.len(), 1, "case {i}: one peer group\n{}", c.to_toml("f", &[]));
        let RunOutcome::Ran { findings, trace, names } = run_case(&c, topo, None, &o) else {
            panic!("case {i} refused")
        };
        assert!(findings.is_empty(), "case {i}: {findings:?}");
        let pid_of: BTreeMap<String, Pid> = names.iter().map(|(p, n)| (n.clone(), *p)).collect();
        let s = Scenario::from_toml_str_on("f.toml", &c.to_toml("f", &[]), &o.base_dir, topo.clone()).unwrap();
        for seg in segments(&trace.in_time_order(), &peer_groups(&s, &pid_of), o.duration_ns) {
            judged += 1;
            let ((_, lo), (_, hi)) = seg.extremes();
            worst = worst.max((seg.spread_pct(), hi - lo));
        }
    }
    println!(
        "{fair_cases} peer-group cases, {judged} segments judged, worst spread {} % ({} us)",
        worst.0,
        worst.1 / 1000
    );
    assert!(fair_cases >= 30, "one case in eight is a peer group: {fair_cases} of {}", o.cases);
    assert!(judged >= 20, "only {judged} segments of two or more peers on one CPU for 100 ms");
    assert!(worst.0 <= 20 || worst.1 <= FLOOR_NS, "worst spread {} % ({} ns)", worst.0, worst.1);
}
