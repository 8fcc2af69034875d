//! `[[perf_domain]]`: cpufreq policies / energy-model performance domains,
//! and capacities derived from `capacity_dmips_mhz`.

use schedlab_topology::{CpufreqGovernor, InputError, Opp, Topology};

/// Two clusters without SMT; line numbers below refer to it.
const BASE: &str = "\
hz = 250
preempt = \"full\"

[layout]
llcs_per_package = 2
cores_per_llc = 2
";
// Lines 1..=6; appended text starts on line 7.

fn topo(text: &str) -> Topology {
    Topology::from_toml_str("pd.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> InputError {
    match Topology::from_toml_str("pd.toml", text) {
        Ok(t) => panic!("accepted:\n{text}\n=> {t:?}"),
        Err(e) => e,
    }
}

#[track_caller]
fn check(text: &str, line: usize, needle: &str) {
    let e = err(text);
    assert_eq!(e.line, line, "wrong line for: {e}");
    assert!(e.message.contains(needle), "message {:?} lacks {needle:?}", e.message);
}

const LITTLE: &str = "\
[[perf_domain]]
cpus = \"0-1\"
dynamic_power_coefficient = 100
capacity_dmips_mhz = 485
transition_latency = \"40us\"
opps = [ { freq = \"1416MHz\", microvolt = 1125000 }, { freq = \"408MHz\", microvolt = 825000 } ]
";
const BIG: &str = "\
[[perf_domain]]
cpus = \"2-3\"
governor = \"performance\"
dynamic_power_coefficient = 436
capacity_dmips_mhz = 1024
opps = [ { freq = \"408MHz\", microvolt = 825000 }, { freq = \"1.8GHz\", microvolt = 1200000 } ]
";

#[test]
fn without_domains_nothing_changes() {
    let t = topo(BASE);
    assert!(t.perf_domains.is_empty());
    assert!(t.cpus.iter().all(|c| c.capacity == 1024));
    assert!(t.perf_domain_of(0).is_none());
}

#[test]
fn domains_parse_sorted_with_derived_capacities() {
    let t = topo(&format!("{BASE}{LITTLE}{BIG}"));
    assert_eq!(t.perf_domains.len(), 2);
    let l = &t.perf_domains[0];
    assert_eq!(l.cpus.iter().collect::<Vec<_>>(), vec![0, 1]);
    // Sorted ascending whatever the file's order.
    assert_eq!(
        l.opps,
        vec![
            Opp { freq_khz: 408_000, microvolt: Some(825_000) },
            Opp { freq_khz: 1_416_000, microvolt: Some(1_125_000) }
        ]
    );
    assert_eq!(l.governor, CpufreqGovernor::Schedutil, "the default governor");
    assert_eq!(l.transition_latency_ns, Some(40_000));
    assert_eq!(l.dynamic_power_coefficient, Some(100));
    let b = &t.perf_domains[1];
    assert_eq!(b.governor, CpufreqGovernor::Performance);
    assert_eq!(b.transition_latency_ns, None);
    assert_eq!(b.max_freq_khz(), 1_800_000);
    // topology_normalize_cpu_scale(): 485 x 1416000 = 686760000 and
    // 1024 x 1800000 = 1843200000 (the largest); 686760000 x 1024 /
    // 1843200000 = 381.53 -> 381.
    assert_eq!(t.cpus.iter().map(|c| c.capacity).collect::<Vec<_>>(), vec![381, 381, 1024, 1024]);
    assert!(std::ptr::eq(t.perf_domain_of(3).unwrap(), b));
}

#[test]
fn machine_default_governor() {
    let t = topo(&format!("cpufreq_governor = \"powersave\"\n{BASE}{LITTLE}{BIG}"));
    assert_eq!(t.perf_domains[0].governor, CpufreqGovernor::Powersave);
    assert_eq!(t.perf_domains[1].governor, CpufreqGovernor::Performance, "the domain's own key wins");
}

#[test]
fn explicit_capacities_still_work_with_domains() {
    let little = LITTLE.replace("capacity_dmips_mhz = 485\n", "");
    let big = BIG.replace("capacity_dmips_mhz = 1024\n", "");
    let t = topo(&format!("{BASE}[capacity]\n\"0-1\" = 400\n{little}{big}"));
    assert_eq!(t.cpus.iter().map(|c| c.capacity).collect::<Vec<_>>(), vec![400, 400, 1024, 1024]);
}

#[test]
fn errors() {
    let both = format!("{BASE}{LITTLE}{BIG}");
    // Lines: LITTLE is 7..=12, BIG 13..=18.
    check(&both.replace("cpus = \"2-3\"", "cpus = \"1-3\""), 14, "CPU 1 is already in the [[perf_domain]] at line 7");
    check(&both.replace("cpus = \"2-3\"", "cpus = \"2-4\""), 14, "names CPU 4");
    check(&both.replace("cpus = \"2-3\"", "cpus = \"2-x\""), 14, "bad cpulist");
    check(&both.replace("governor = \"performance\"", "governor = \"ondemand\""), 15, "unknown variant `ondemand`");
    check(&both.replace("transition_latency", "clock_latency"), 11, "unknown key `clock_latency`");
    check(
        &both.replace("microvolt = 825000 }, { freq = \"1.8GHz\"", "volts = 1 }, { freq = \"1.8GHz\""),
        18,
        "unknown key `volts`",
    );
    check(&both.replace("1416MHz", "1416"), 12, "not a whole number of kHz");
    check(&both.replace("1.8GHz", "408MHz"), 18, "two OPPs at 408000 kHz");
    check(&both.replace("microvolt = 1125000", "microvolt = 1125"), 12, "microvolt = 1125 is out of range");
    check(&both.replace(", microvolt = 1125000", ""), 12, "no `microvolt` but others");
    check(
        &both.replace(
            "opps = [ { freq = \"1416MHz\", microvolt = 1125000 }, { freq = \"408MHz\", microvolt = 825000 } ]",
            "opps = []",
        ),
        12,
        "at least one",
    );
    check(
        &both.replace("dynamic_power_coefficient = 100", "dynamic_power_coefficient = 0"),
        9,
        "dynamic_power_coefficient = 0 is out of range",
    );
    check(
        &both.replace(", microvolt = 1125000", "").replace(", microvolt = 825000 } ]\n[[", " } ]\n[["),
        9,
        "needs a `microvolt` on every OPP",
    );
    check(
        &both.replace("capacity_dmips_mhz = 1024\n", ""),
        13,
        "CPU 2 has no capacity_dmips_mhz, but the [[perf_domain]] at line 7",
    );
    check(&format!("{BASE}{LITTLE}"), 7, "CPU 2 has no capacity_dmips_mhz");
    check(
        &format!("{BASE}[[cpus]]\nid = 0\ncapacity = 500\n{LITTLE}{BIG}"),
        9,
        "set here and derived from capacity_dmips_mhz",
    );
    // A domain across two capacities.
    let little = LITTLE.replace("capacity_dmips_mhz = 485\n", "");
    let big = BIG.replace("capacity_dmips_mhz = 1024\n", "");
    check(
        &format!("{BASE}[capacity]\n\"0\" = 400\n{little}{big}"),
        9,
        "CPU 0 (capacity 400) and CPU 1 (capacity 1024) are in one [[perf_domain]]",
    );
    check(&format!("cpufreq_governor = \"fast\"\n{BASE}"), 1, "unknown variant `fast`");
}

#[test]
fn debug_text_of_a_machine_without_domains_is_as_before() {
    // The sweep fingerprint hashes it: the new fields appear only when used.
    let t = topo(BASE);
    let text = format!("{t:?}");
    assert!(!text.contains("perf_domains") && !text.contains("sched_energy_aware"), "{text}");
    assert!(text.starts_with("Topology { name: \"pd\", description: \"\", cpus: [") && text.ends_with("noise: [] }"));
    let mut t = topo(&format!("{BASE}{LITTLE}{BIG}"));
    t.sched_energy_aware = false;
    let text = format!("{t:?}");
    assert!(text.contains("sched_energy_aware: false") && text.contains("perf_domains: [PerfDomain {"), "{text}");
}
