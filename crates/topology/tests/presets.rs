//! The built-in machines load and have the documented shape.

use std::path::Path;

use schedlab_topology::{parse_cpulist, CpuSet, PreemptModel, Topology};

fn set(list: &str) -> CpuSet {
    parse_cpulist(list).unwrap()
}

fn preset(name: &str) -> Topology {
    Topology::preset(name).unwrap_or_else(|| panic!("no preset {name}"))
}

#[test]
fn every_preset_loads_under_its_own_name() {
    assert_eq!(Topology::preset_names().len(), 12);
    for name in Topology::preset_names() {
        let t = preset(name);
        assert_eq!(&t.name, name);
        assert!(!t.description.is_empty(), "{name} has no description");
        for (i, c) in t.cpus.iter().enumerate() {
            assert_eq!(c.id, i);
        }
    }
    assert!(Topology::preset("ryzen-7950").is_none());
}

#[test]
fn every_file_in_topologies_is_a_preset() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topologies");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            files += 1;
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            assert!(Topology::preset_names().contains(&stem.as_str()), "{stem} is not built in");
            // The file on disk and the built-in copy agree.
            assert_eq!(Topology::load(&path).unwrap(), preset(&stem));
        }
    }
    assert_eq!(files, Topology::preset_names().len());
}

#[test]
fn intel_hybrid_shapes() {
    // 13900K: P-core k is CPUs 2k, 2k+1; E-cores 16-31; one LLC; the file's
    // asym_prio is the HWP highest performance (the 6.5+ rule), capacity
    // 1024 (the kernel profile decides whether to scale it).
    let t = preset("intel-13900k");
    assert_eq!(t.nr_cpus(), 32);
    assert!(t.has_smt() && t.is_hybrid());
    assert_eq!(t.smt_mask(4), set("4-5"));
    assert_eq!(t.smt_mask(16), set("16"));
    assert_eq!(t.llc_mask(0), t.all_cpus());
    let prio: Vec<i32> = t.cpus.iter().map(|c| c.asym_prio).collect();
    assert_eq!(&prio[..16], &[69, 69, 69, 69, 74, 74, 74, 74, 69, 69, 69, 69, 69, 69, 69, 69]);
    assert!(prio[16..].iter().all(|&p| p == 43));
    assert!(t.cpus.iter().all(|c| c.capacity == 1024));
    assert_eq!((t.cpu_speed(4), t.cpu_speed(0), t.cpu_speed(16)), (1024, 69 * 1024 / 74, 43 * 1024 / 74));
    // The derivation in the file: ceil(F / 78741 kHz) and rounddown to 100 MHz.
    assert_eq!((5_400_000u64.div_ceil(78_741), 5_800_000u64.div_ceil(78_741)), (69, 74));
    assert_eq!((69 * 78_741 / 100_000 * 100_000, 74 * 78_741 / 100_000 * 100_000), (5_400_000, 5_800_000));

    // 285K: no SMT, 8 P + 16 E.
    let t = preset("intel-285k");
    assert_eq!(t.nr_cpus(), 24);
    assert!(!t.has_smt() && t.is_hybrid());
    assert_eq!(t.llc_mask(0), t.all_cpus());
    let perf: Vec<u32> = t.cpus.iter().map(|c| c.hwp_highest_perf.unwrap()).collect();
    assert_eq!(&perf[..8], &[69, 69, 72, 72, 69, 69, 69, 69]);
    assert!(perf[8..].iter().all(|&p| p == 46));
    assert_eq!((5_500_000u64.div_ceil(80_000), 5_700_000u64.div_ceil(80_000)), (69, 72));
    assert_eq!((t.cpu_speed(2), t.cpu_speed(0), t.cpu_speed(8)), (1024, 981, 654));
}

#[test]
fn juno_r2_shape() {
    // Two A72s (CPUs 1-2) in one cluster, four A53s (0, 3-5) in the other,
    // each cluster its own LLC; capacities as topology_normalize_cpu_scale()
    // derives them from the dts's capacity-dmips-mhz and the maxima.
    let t = preset("juno-r2");
    assert_eq!(t.nr_cpus(), 6);
    assert!(!t.has_smt());
    assert_eq!(t.llc_mask(1), set("1-2"));
    assert_eq!(t.llc_mask(0), set("0,3-5"));
    assert_eq!(t.package_mask(0), t.all_cpus());
    let caps: Vec<u32> = t.cpus.iter().map(|c| c.capacity).collect();
    assert_eq!(caps, [383, 1024, 1024, 383, 383, 383]);
    assert_eq!(485 * 950 * 1024 / (1024 * 1200), 383);
    assert_eq!((t.hz, t.preempt, t.itmt_enabled), (250, PreemptModel::Full, false));
}

#[test]
fn rk3399_shape() {
    // Four A53s (CPUs 0-3) and two A72s (4-5), each cluster its own LLC and
    // cpufreq policy; capacities derived from capacity-dmips-mhz (485, 1024)
    // and the policies' maxima (1416 and 1800 MHz).
    let t = preset("rk3399");
    assert_eq!(t.nr_cpus(), 6);
    assert!(!t.has_smt());
    assert_eq!(t.llc_mask(0), set("0-3"));
    assert_eq!(t.llc_mask(5), set("4-5"));
    let caps: Vec<u32> = t.cpus.iter().map(|c| c.capacity).collect();
    assert_eq!(caps, [381, 381, 381, 381, 1024, 1024]);
    assert_eq!(485 * 1_416_000u64 * 1024 / (1024 * 1_800_000), 381);
    assert_eq!(t.perf_domains.len(), 2);
    let (l, b) = (&t.perf_domains[0], &t.perf_domains[1]);
    assert_eq!((l.cpus, b.cpus), (set("0-3"), set("4-5")));
    assert_eq!((l.opps.len(), b.opps.len()), (6, 8));
    assert_eq!((l.max_freq_khz(), b.max_freq_khz()), (1_416_000, 1_800_000));
    assert_eq!((l.dynamic_power_coefficient, b.dynamic_power_coefficient), (Some(100), Some(436)));
    assert_eq!(b.opps[3].microvolt, Some(875_000));
    assert!(t.perf_domains.iter().all(
        |d| d.governor == schedlab_topology::CpufreqGovernor::Schedutil && d.transition_latency_ns == Some(40_000)
    ));
    assert_eq!(t.idle.states[1].exit_latency_ns, 370_000);
}

#[test]
fn ryzen_7950x_shape() {
    let t = preset("ryzen-7950x");
    assert_eq!(t.nr_cpus(), 32);
    assert_eq!(t.smt_mask(6), set("6,22"));
    assert_eq!(t.smt_mask(16), set("0,16"));
    assert_eq!(t.llc_mask(4), set("0-7,16-23"));
    assert_eq!(t.llc_mask(31), set("8-15,24-31"));
    assert_eq!(t.package_mask(9), t.all_cpus());
    assert_eq!(t.node_mask(9), t.all_cpus());
    assert!(t.has_smt());
    assert_eq!((t.hz, t.preempt, t.itmt_enabled), (1000, PreemptModel::Lazy, true));
    assert_eq!(t.tick_ns(), 1_000_000);
    assert!(t.cpus.iter().all(|c| c.capacity == 1024));

    // Measured (seed report 000): CPUs 4-7 rank 211, 216, 231, 221.
    let prio = |cpu: usize| t.cpus[cpu].asym_prio;
    assert_eq!((4..8).map(prio).collect::<Vec<_>>(), vec![211, 216, 231, 221]);
    assert_eq!(prio(6), 231);
    assert!((4..8).filter(|&c| c != 6).all(|c| prio(c) < prio(6)));
    // Siblings share the value.
    for cpu in 0..16 {
        assert_eq!(prio(cpu), prio(cpu + 16), "cpu {cpu}");
    }
    // The 166 + 5k lattice: the better CCD {236,236,231,...,206}, the other 201..166.
    let mut ccd0: Vec<i32> = (0..8).map(prio).collect();
    let mut ccd1: Vec<i32> = (8..16).map(prio).collect();
    ccd0.sort_unstable();
    ccd1.sort_unstable();
    assert_eq!(ccd0, vec![206, 211, 216, 221, 226, 231, 236, 236]);
    assert_eq!(ccd1, (0..8).map(|k| 166 + 5 * k).collect::<Vec<_>>());
    assert!(t.costs.smt_speed_pct > 50 && t.costs.smt_speed_pct < 100);
    assert!(t.jitter.burst_pct > 0.0);
}

#[test]
fn sapphire_rapids_shape() {
    let t = preset("sapphire-rapids-2s");
    assert_eq!(t.nr_cpus(), 224);
    assert_eq!(t.llc_mask(0).len(), 112);
    assert_eq!(t.llc_mask(0), set("0-55,112-167"));
    assert_eq!(t.llc_mask(56), set("56-111,168-223"));
    assert_eq!(t.smt_mask(5), set("5,117"));
    assert_eq!(t.node_mask(200), set("56-111,168-223"));
    assert_eq!(t.package_mask(0), t.node_mask(0));
    assert_eq!(t.cpus.iter().map(|c| c.node).max(), Some(1));
    assert_eq!(t.cpus.iter().map(|c| c.core).max(), Some(111));
    assert!(!t.itmt_enabled);
    assert_eq!(t.preempt, PreemptModel::Voluntary);
}

#[test]
fn qemu_4_shape() {
    let t = preset("qemu-4");
    assert_eq!(t.nr_cpus(), 4);
    assert!(!t.has_smt());
    assert_eq!(t.hz, 250);
    assert_eq!(t.tick_ns(), 4_000_000);
    assert_eq!(t.preempt, PreemptModel::Voluntary);
    assert!(!t.itmt_enabled);
    assert!(t.cpus.iter().all(|c| c.asym_prio == t.cpus[0].asym_prio));
    assert_eq!(t.llc_mask(3), set("0-3"));
    // A TCG guest: IPIs cost tens of microseconds.
    assert!(t.costs.ipi_ns >= 10_000);
}

#[test]
fn smt_2x2_shape() {
    let t = preset("smt-2x2");
    assert_eq!(t.nr_cpus(), 4);
    assert_eq!(t.smt_mask(0), set("0-1"));
    assert_eq!(t.smt_mask(3), set("2-3"));
    assert_eq!(t.llc_mask(0), set("0-3"));
    assert_eq!(t.preempt, PreemptModel::Full);
    assert!(!t.itmt_enabled);
    assert_ne!(t.cpus[0].asym_prio, t.cpus[2].asym_prio);
    assert_eq!(t.cpus[0].asym_prio, t.cpus[1].asym_prio);
    assert_eq!((t.jitter.burst_pct, t.jitter.ipi_ns), (0.0, 0));
}

#[test]
fn resolve_finds_presets_then_files() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new().prefix("schedlab-topo-test-").tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("mine.toml"), "hz = 300\npreempt = \"none\"\n[layout]\ncores_per_llc = 3\n").unwrap();

    assert_eq!(Topology::resolve("qemu-4", dir).unwrap().nr_cpus(), 4);
    let mine = Topology::resolve("mine.toml", dir).unwrap();
    assert_eq!((mine.name.as_str(), mine.nr_cpus(), mine.hz), ("mine", 3, 300));

    let e = Topology::resolve("ryzen-9999", dir).unwrap_err();
    assert_eq!(e.line, 0);
    assert!(e.message.contains("no topology preset or file named `ryzen-9999`"), "{e}");
    for name in Topology::preset_names() {
        assert!(e.message.contains(name), "{e}");
    }
    let e = Topology::load(&dir.join("absent.toml")).unwrap_err();
    assert!(
        e.to_string().ends_with("absent.toml: cannot read topology: No such file or directory (os error 2)"),
        "{e}"
    );
    tmp.close().unwrap();
}

#[test]
fn layout_numbering_and_nodes() {
    let snc4 = "hz = 1000\npreempt = \"full\"\n[layout]\npackages = 2\nnodes_per_package = 4\n\
                llcs_per_package = 4\ncores_per_llc = 14\nthreads_per_core = 2\n";
    let t = Topology::from_toml_str("snc4.toml", snc4).unwrap();
    assert_eq!(t.nr_cpus(), 224);
    assert_eq!(t.node_mask(0), set("0-13,112-125"));
    assert_eq!(t.llc_mask(0), t.node_mask(0));
    assert_eq!(t.package_mask(0), set("0-55,112-167"));
    assert_eq!(t.cpus[223].node, 7);

    let adjacent = "hz = 1000\npreempt = \"full\"\n[layout]\nllcs_per_package = 2\ncores_per_llc = 2\n\
                    threads_per_core = 2\nsmt_numbering = \"adjacent\"\n";
    let t = Topology::from_toml_str("adj.toml", adjacent).unwrap();
    assert_eq!(t.smt_mask(5), set("4-5"));
    assert_eq!(t.llc_mask(5), set("4-7"));

    // Four NPS-style nodes of two LLCs each on one socket.
    let nps =
        "hz = 1000\npreempt = \"full\"\n[layout]\nnodes_per_package = 2\nllcs_per_package = 4\ncores_per_llc = 2\n";
    let t = Topology::from_toml_str("nps.toml", nps).unwrap();
    assert_eq!(t.node_mask(0), set("0-3"));
    assert_eq!(t.llc_mask(0), set("0-1"));
}

#[test]
fn explicit_cpu_list_and_overrides() {
    // A tiny hybrid part: one SMT P core (CPUs 0,1) and two E cores.
    let text = r#"
hz = 1000
preempt = "full"
itmt_enabled = true

[[cpus]]
id = 0
core = 0
llc = 0
[[cpus]]
id = 1
core = 0
llc = 0
[[cpus]]
id = 2
core = 1
llc = 0
capacity = 600
[[cpus]]
id = 3
core = 2
llc = 0
capacity = 600

[asym_prio]
"0-1" = 77
"2-3" = 44
"#;
    let t = Topology::from_toml_str("hybrid.toml", text).unwrap();
    assert_eq!(t.name, "hybrid");
    assert_eq!(t.smt_mask(1), set("0-1"));
    assert_eq!(t.cpus.iter().map(|c| c.capacity).collect::<Vec<_>>(), vec![1024, 1024, 600, 600]);
    assert_eq!(t.cpus[3].asym_prio, 44);
    assert_eq!(t.costs, schedlab_topology::Costs::default());

    // With [layout], [[cpus]] overrides one generated CPU.
    let text =
        "hz = 250\npreempt = \"lazy\"\n[layout]\ncores_per_llc = 4\n[[cpus]]\nid = 3\ncapacity = 512\nasym_prio = 9\n";
    let t = Topology::from_toml_str("o.toml", text).unwrap();
    assert_eq!((t.cpus[3].capacity, t.cpus[3].asym_prio), (512, 9));
    assert_eq!((t.cpus[2].capacity, t.cpus[2].asym_prio), (1024, 0));
}

#[test]
fn durations_in_costs() {
    let text = "hz = 100\npreempt = \"full\"\n[layout]\ncores_per_llc = 1\n[costs]\nipi_ns = 2500\n\
                idle_exit_ns = \"1.5us\"\ncontext_switch_ns = \"0.002ms\"\nmigration_cold_ns = \"3 µs\"\n\
                [jitter]\nburst_pct = 2\nipi_ns = \"1us\"\n";
    let t = Topology::from_toml_str("d.toml", text).unwrap();
    assert_eq!(t.costs.ipi_ns, 2500);
    assert_eq!(t.idle.states[0].exit_latency_ns, 1500, "without [idle], the one state's exit");
    assert_eq!(t.costs.context_switch_ns, 2000);
    assert_eq!(t.costs.migration_cold_ns, 3000);
    assert_eq!(t.costs.smt_speed_pct, schedlab_topology::Costs::default().smt_speed_pct);
    assert_eq!((t.jitter.burst_pct, t.jitter.ipi_ns), (2.0, 1000));
    assert_eq!(t.tick_ns(), 10_000_000);
}

#[test]
fn crate_doc_example_parses() {
    let src = include_str!("../src/lib.rs");
    let start = src.find("//! ```toml\n").unwrap() + "//! ```toml\n".len();
    let end = start + src[start..].find("//! ```\n").unwrap();
    let text: String = src[start..end]
        .lines()
        .map(|l| l.strip_prefix("//!").unwrap().trim_start_matches(' '))
        .collect::<Vec<_>>()
        .join("\n");
    let t = Topology::from_toml_str("doc.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(t.nr_cpus(), 32);
    assert_eq!((t.cpus[31].capacity, t.cpus[15].capacity, t.cpus[0].capacity), (980, 980, 1024));
    assert_eq!(t.cpus[20].asym_prio, 211);
    assert_eq!(t.perf_domains.len(), 1);
    assert_eq!(t.perf_domains[0].opps.len(), 2);
}

#[test]
fn turin_has_sixteen_ccds_of_sixteen_cpus_on_one_node() {
    let t = preset("epyc-turin-1s");
    assert_eq!(t.nr_cpus(), 256);
    assert_eq!(t.llc_mask(0), set("0-7,128-135"), "CPU 128 is CPU 0's SMT sibling");
    assert_eq!(t.llc_mask(8), set("8-15,136-143"));
    assert_eq!(t.node_mask(0), t.all_cpus());
    assert!(t.costs.kernel.balance_per_cpu_ns > 0);
}

/// A CPU without the Intel fields prints as before they existed (sweep
/// shard fingerprints hash this text).
#[test]
fn cpu_debug_text_unchanged_without_intel_fields() {
    let t = preset("ryzen-7950x");
    assert_eq!(
        format!("{:?}", t.cpus[6]),
        "CpuInfo { id: 6, core: 6, llc: 0, package: 0, node: 0, capacity: 1024, asym_prio: 231 }"
    );
    let h = preset("intel-285k");
    assert!(format!("{:?}", h.cpus[2]).ends_with("asym_prio: 72, core_type: Core, hwp_highest_perf: 72 }"));
}
