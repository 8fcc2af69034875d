//! The hunt's property checks on the seed scenarios whose stalls are
//! known: each must be classified as its report describes it.

use std::collections::BTreeMap;
use std::path::Path;

use schedlab_hunt::check::{check_trace, Class, Finding, Thresholds};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};

fn findings(file: &str, duration_ns: u64, features: &[&str]) -> Vec<Finding> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions {
        duration_ns: Some(duration_ns),
        features: features.iter().map(|f| f.to_string()).collect(),
        check_invariants: Some(true),
        ..Default::default()
    };
    let res = simulate(&s, &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
    let allowed: BTreeMap<i32, Vec<u32>> =
        res.threads.iter().map(|t| (t.pid, s.thread(&t.name).unwrap().affinity.to_u32_vec())).collect();
    check_trace(&res.trace.in_time_order(), res.topology.nr_cpus(), &allowed, res.end_ns, &Thresholds::default())
}

fn class(f: &[Finding], c: Class) -> Option<&Finding> {
    f.iter().find(|x| x.class == c)
}

/// Seed 003: L, boosted by W's lock to 90, waits on CPU 1 behind X (99)
/// while R (60) runs on CPU 3, which L may use, until X's 1.5 s ends.
#[test]
fn seed_003_is_a_boosted_rt_task_stranded() {
    let f = findings("rt-pi-push.toml", 1_700_000_000, &[]);
    let s = class(&f, Class::RtBoostedStranded).unwrap_or_else(|| panic!("{f:?}"));
    assert_eq!((s.cpu, s.other_cpu), (1, Some(3)), "{s:?}");
    assert!(s.len_ns() > 1_400_000_000 && s.len_ns() < 1_600_000_000, "{s:?}");
    // With the push on boost (the seed's patch) L moves to CPU 3 at once.
    let f = findings("rt-pi-push.toml", 1_700_000_000, &["RT_PUSH_ON_BOOST"]);
    assert!(class(&f, Class::RtBoostedStranded).is_none(), "{f:?}");
}

/// Seed 000: a worker woken in place while delayed waits behind the other
/// worker for up to its 1 ms burst while another CPU of 4-7 idles; not
/// with NO_DELAY_DEQUEUE.
#[test]
fn seed_000_is_delayed_in_place() {
    let f = findings("asym_min.toml", 10_000_000_000, &[]);
    let s = class(&f, Class::DelayedInPlace).unwrap_or_else(|| panic!("{f:?}"));
    assert!((4..=7).contains(&s.cpu) && s.other_cpu.is_some_and(|c| (4..=7).contains(&c) && c != s.cpu), "{s:?}");
    assert!(s.len_ns() >= 500_000 && s.len_ns() <= 1_100_000, "{s:?}");
    let f = findings("asym_min.toml", 10_000_000_000, &["NO_DELAY_DEQUEUE"]);
    assert!(class(&f, Class::DelayedInPlace).is_none(), "{f:?}");
}

#[test]
fn the_help_describes_every_family_and_class() {
    use schedlab_hunt::{Class, Family, CLASSES_HELP};
    for f in Family::ALL {
        assert!(CLASSES_HELP.contains(&format!("{} (", f.name())), "hunt --help leaves out the family {}", f.name());
    }
    // A model error is told as the invariant family's "model errors".
    for c in Class::ALL.into_iter().filter(|&c| c != Class::ModelError) {
        assert!(CLASSES_HELP.contains(c.name()), "hunt --help leaves out the class {}", c.name());
    }
}
