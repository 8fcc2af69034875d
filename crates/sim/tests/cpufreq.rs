//! cpufreq through the whole simulator: a policy's frequency sets how fast
//! its CPUs work, and schedutil moves it with frequency-invariant
//! utilisation (kernel/sched/cpufreq_schedutil.c, 6.12).

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_topology::Topology;
use schedlab_trace::EventKind;
use std::path::Path;

const MS: u64 = 1_000_000;

/// One little CPU (0) and one big CPU (1), each its own policy, with
/// RK3399's big-cluster OPP table on the big one (408-1800 MHz,
/// clock-latency 40 us) and HZ=250.
fn machine(governor: &str) -> Topology {
    let text = format!(
        r#"hz = 250
preempt = "full"
cpufreq_governor = "{governor}"
[[cpus]]
id = 0
core = 0
llc = 0
capacity = 512
[[cpus]]
id = 1
core = 1
llc = 0
capacity = 1024
[[perf_domain]]
cpus = "0"
opps = [ {{ freq = "408MHz" }}, {{ freq = "816MHz" }} ]
[[perf_domain]]
cpus = "1"
transition_latency = "40us"
opps = [ {{ freq = "408MHz" }}, {{ freq = "600MHz" }}, {{ freq = "816MHz" }}, {{ freq = "1008MHz" }},
         {{ freq = "1200MHz" }}, {{ freq = "1416MHz" }}, {{ freq = "1608MHz" }}, {{ freq = "1800MHz" }} ]
"#
    );
    Topology::from_toml_str("little-big.toml", &text).unwrap()
}

fn run(governor: &str, scenario: &str) -> SimResult {
    let s = Scenario::from_toml_str("inline.toml", scenario, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions { topology: Some(machine(governor)), no_noise: true, ..Default::default() };
    simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// The big CPU's frequency changes: (time, kHz).
fn big_cpu_frequencies(r: &SimResult) -> Vec<(u64, u32)> {
    let f = r.trace.events.iter().filter_map(|e| match e.kind {
        EventKind::CpuFrequency { state, cpu_id: 1 } => Some((e.ts, state)),
        _ => None,
    });
    f.collect()
}

const ONE_BURST: &str = r#"
topology = "qemu-2"   # replaced by the test's machine
[[thread]]
name = "burst"
affinity = "1"
loop = false
program = [ { run = "10ms" } ]
"#;

#[test]
fn a_cpu_at_a_lower_frequency_takes_longer_for_the_same_work() {
    let fast = run("performance", ONE_BURST);
    let slow = run("powersave", ONE_BURST);
    let (fast, slow) = (fast.threads[0].runtime_ns, slow.threads[0].runtime_ns);
    // performance: 10 ms at 1800 MHz. powersave: 408 MHz, whose factor is
    // 408000 × 1024 / 1800000 = 232 (truncated): 10 ms × 1024 / 232 = 44.14 ms.
    assert!((10 * MS..10 * MS + MS / 10).contains(&fast), "{fast}");
    let expect = 10 * MS * 1024 / 232;
    assert!(slow.abs_diff(expect) < MS / 10, "{slow} vs {expect}");
}

/// A light periodic task on the big CPU, and from 300 ms a hog there too.
const LIGHT_THEN_HOG: &str = r#"
topology = "qemu-2"   # replaced by the test's machine
duration = "500ms"
[[thread]]
name = "light"
affinity = "1"
program = [ { run = "1ms" }, { sleep = "19ms" } ]
[[thread]]
name = "hog"
affinity = "1"
delay = "300ms"
program = [ { run = "10s" } ]
"#;

#[test]
fn schedutil_runs_a_light_task_at_the_lowest_opp_and_a_hog_at_the_highest() {
    let r = run("schedutil", LIGHT_THEN_HOG);
    let freqs = big_cpu_frequencies(&r);
    let at = |t: u64| freqs.iter().take_while(|(ts, _)| *ts <= t).last().map(|&(_, f)| f).unwrap_or(1_800_000);
    // The policy starts at its maximum; the light task's utilisation (1 ms
    // of full-speed work every 20 ms: a PELT peak near 1024 × (1 − y) /
    // (1 − y^20) ≈ 62, y^32 = 1/2) asks for 62 × 1.25 / 1024 of 1800 MHz,
    // below the table: 408 MHz. Its 1 ms of work then takes 4.4 ms, but
    // the utilisation is frequency invariant, so it does not grow with it
    // and the frequency stays. (Without invariance the peak would be ~266,
    // asking for ~585 MHz, and the policy would swing 408 <-> 600 MHz.)
    let settled: Vec<_> = freqs.iter().filter(|(t, _)| (100 * MS..300 * MS).contains(t)).collect();
    assert!(settled.is_empty(), "the light task's frequency moved: {settled:?}");
    assert_eq!(at(300 * MS), 408_000, "{freqs:?}");
    // The hog's utilisation climbs, and the frequency with it, to the maximum.
    let reached = freqs.iter().find(|&&(t, f)| t > 300 * MS && f == 1_800_000).map(|&(t, _)| t);
    let reached = reached.unwrap_or_else(|| panic!("never back at 1800 MHz: {freqs:?}"));
    assert!(reached < 400 * MS, "{freqs:?}");
    assert_eq!(at(500 * MS), 1_800_000);
    // Every change is to a table frequency, and no two are closer than the
    // rate limit (1.5 × 40 us) plus the transition (40 us).
    for w in freqs.windows(2) {
        assert!(w[1].0 - w[0].0 >= 60_000, "{w:?}");
    }
    let light = r.threads.iter().find(|t| t.name == "light").unwrap();
    assert!(light.iterations >= 10);
}

#[test]
fn fixed_governors_never_change_the_frequency() {
    for gov in ["performance", "powersave"] {
        let r = run(gov, LIGHT_THEN_HOG);
        assert!(big_cpu_frequencies(&r).is_empty(), "{gov}");
    }
}
