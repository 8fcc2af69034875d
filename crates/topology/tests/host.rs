//! `schedlab topologies --host` on fake sysfs trees: what is read, what the
//! generated file says, that it loads and round-trips, and that bad or
//! missing files are errors naming the file.

use std::path::{Path, PathBuf};

use schedlab_topology::host::{
    exit_curve, host_toml, read_host, render, Measured, NoiseProbe, Percentiles, RenderOptions, TimerProbe, WakeProbe,
};
use schedlab_topology::{CoreType, CpufreqGovernor, Distance, Governor, NoiseKind, Topology};

const REL: &str = "6.99.0-test";

/// A fake root: /sys, /proc and /boot as the reader sees them.
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-host-{name}"));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let t = Tree { root };
        t.file("proc/sys/kernel/osrelease", REL);
        t.file("proc/cmdline", "console=ttyS0 quiet");
        t.file("proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse2\n");
        t.file(
            &format!("boot/config-{REL}"),
            "CONFIG_HZ_1000=y\nCONFIG_HZ=1000\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\n",
        );
        t
    }

    fn file(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{text}\n")).unwrap();
    }

    fn remove(&self, rel: &str) {
        std::fs::remove_file(self.root.join(rel)).unwrap();
    }

    fn cpus(&self, online: &str, possible: &str) {
        self.file("sys/devices/system/cpu/online", online);
        self.file("sys/devices/system/cpu/possible", possible);
    }

    /// One CPU: its core id, package, SMT siblings and LLC span (cpulists).
    fn cpu(&self, n: usize, core: usize, pkg: usize, siblings: &str, llc: &str) {
        let d = format!("sys/devices/system/cpu/cpu{n}");
        self.file(&format!("{d}/topology/core_id"), &core.to_string());
        self.file(&format!("{d}/topology/physical_package_id"), &pkg.to_string());
        self.file(&format!("{d}/topology/die_id"), "0");
        self.file(&format!("{d}/topology/thread_siblings_list"), siblings);
        for (idx, level, ty, span) in
            [(0, 1, "Data", siblings), (1, 1, "Instruction", siblings), (2, 3, "Unified", llc)]
        {
            self.file(&format!("{d}/cache/index{idx}/level"), &level.to_string());
            self.file(&format!("{d}/cache/index{idx}/type"), ty);
            self.file(&format!("{d}/cache/index{idx}/shared_cpu_list"), span);
        }
    }

    fn node(&self, n: usize, cpus: &str) {
        self.file(&format!("sys/devices/system/node/node{n}/cpulist"), cpus);
    }

    fn no_cpuidle_driver(&self) {
        self.file("sys/devices/system/cpu/cpuidle/current_driver", "none");
        self.file("sys/devices/system/cpu/cpuidle/current_governor", "menu");
    }

    /// State K of a CPU: (name, desc), (latency, residency) in us, disabled.
    fn state(&self, cpu: usize, k: usize, (name, desc): (&str, &str), (lat, res): (u64, u64), disable: bool) {
        let d = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}");
        self.file(&format!("{d}/name"), name);
        self.file(&format!("{d}/desc"), desc);
        self.file(&format!("{d}/latency"), &lat.to_string());
        self.file(&format!("{d}/residency"), &res.to_string());
        self.file(&format!("{d}/disable"), if disable { "1" } else { "0" });
    }
}

/// 1 package, 2 LLCs of 2 cores, SMT2 numbered N / N+4 (a small Zen).
fn smt_two_llcs(name: &str) -> Tree {
    let t = Tree::new(name);
    t.cpus("0-7", "0-7");
    for n in 0..8 {
        let core = n % 4;
        let llc = if core < 2 { "0-1,4-5" } else { "2-3,6-7" };
        t.cpu(n, core, 0, &format!("{},{}", core, core + 4), llc);
    }
    t.node(0, "0-7");
    t.no_cpuidle_driver();
    t
}

fn load(text: &str) -> Topology {
    Topology::from_toml_str("generated.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn an_smt_machine_with_two_llcs_becomes_a_layout_that_round_trips() {
    let t = smt_two_llcs("smt2llc");
    let host = read_host(&t.root).unwrap();
    assert_eq!(host.cpus.len(), 8);
    assert_eq!(host.hz.value, 1000);
    assert!(host.hz.source.contains(&format!("/boot/config-{REL}")), "{}", host.hz.source);
    assert_eq!(host.preempt.value.as_str(), "voluntary");
    assert!(host.preempt.source.contains("CONFIG_PREEMPT_VOLUNTARY=y"));
    let levels: Vec<Distance> = host.probe_pairs().iter().map(|p| p.0).collect();
    assert_eq!(levels, vec![Distance::Smt, Distance::Llc, Distance::Package]);
    let text = host_toml(&host, None, &RenderOptions::default()).unwrap();
    assert!(text.contains("[layout]") && !text.contains("[[cpus]]"), "{text}");
    assert!(text.contains("llcs_per_package = 2") && text.contains("threads_per_core = 2"), "{text}");
    let topo = load(&text);
    assert_eq!(topo.nr_cpus(), 8);
    assert_eq!(topo.smt_mask(0).to_cpulist(), "0,4");
    assert_eq!(topo.llc_mask(1).to_cpulist(), "0-1,4-5");
    assert_eq!(topo.llc_mask(6).to_cpulist(), "2-3,6-7");
    assert_eq!(topo.distance(0, 2), Distance::Package);
    // No cpuidle driver: governor none, one halt state.
    assert_eq!(topo.idle.governor, Governor::None);
    assert_eq!(topo.idle.states.len(), 1);
    assert_eq!(topo.idle.states[0].name, "HLT");
    assert!(!topo.idle.states[0].polling);
    assert_eq!((topo.hz, topo.preempt.as_str()), (1000, "voluntary"));
    // `fidelity` reads the machine back from the description.
    let read = schedlab_topology::host::read_on(&topo.description);
    assert_eq!(read, Some((host.cpu_model.as_str(), host.kernel.as_str())), "{}", topo.description);
    assert_eq!(schedlab_topology::host::read_on("AMD Ryzen 9 7950X (a preset)"), None);
}

#[test]
fn every_value_line_has_a_source_comment_above_it() {
    let t = smt_two_llcs("comments");
    let text = render(&read_host(&t.root).unwrap(), Some(&measured()), &RenderOptions::default());
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let l = l.trim();
        // A key = value line of the machine's description (not a table
        // header, comment, or array row); `name`/`description` are labels.
        if l.starts_with('#') || l.starts_with('[') || l.starts_with('{') || l == "]" || l.is_empty() {
            continue;
        }
        let key = l.split('=').next().unwrap().trim();
        if matches!(key, "name" | "description" | "id" | "core" | "llc" | "package" | "node" | "kind") {
            continue;
        }
        // A comment on the line, or above it in the same block (values
        // and table headers in between, no blank line).
        let mut has = l.contains(" # ");
        let mut j = i;
        while !has && j > 0 {
            j -= 1;
            let p = lines[j].trim();
            if p.is_empty() {
                break;
            }
            has = p.starts_with('#');
        }
        assert!(has, "line {} `{l}` has no source comment:\n{text}", i + 1);
    }
}

#[test]
fn an_irregular_machine_gets_cpus_entries_with_dense_ids() {
    let t = Tree::new("irregular");
    // CPU 3 offline; CPUs 4-5 are small cores (capacity 512), no SMT.
    t.cpus("0-2,4-5", "0-5");
    for n in [0, 1, 2, 4, 5] {
        t.cpu(n, n, 0, &n.to_string(), "0-2,4-5");
        t.file(&format!("sys/devices/system/cpu/cpu{n}/cpu_capacity"), if n >= 4 { "512" } else { "1024" });
    }
    t.file("sys/devices/system/cpu/cpu3/online", "0");
    t.node(0, "0-2,4-5");
    t.no_cpuidle_driver();
    let host = read_host(&t.root).unwrap();
    assert_eq!(host.offline, vec![3]);
    assert!(host.renumbered());
    let text = host_toml(&host, None, &RenderOptions::default()).unwrap();
    assert!(!text.contains("[layout]"), "{text}");
    assert_eq!(text.matches("\n[[cpus]]  # sysfs cpu").count(), 5);
    assert!(text.contains("[[cpus]]  # sysfs cpu4\nid = 3"), "{text}");
    assert!(text.contains("CPUs 3 are offline"), "{text}");
    let topo = load(&text);
    assert_eq!(topo.nr_cpus(), 5);
    let caps: Vec<u32> = topo.cpus.iter().map(|c| c.capacity).collect();
    assert_eq!(caps, vec![1024, 1024, 1024, 512, 512]);
}

#[test]
fn asymmetric_capacities_alone_also_refuse_a_layout() {
    let t = Tree::new("asym");
    t.cpus("0-3", "0-3");
    for n in 0..4 {
        t.cpu(n, n, 0, &n.to_string(), "0-3");
        // Scaled: the biggest CPU must end up at 1024.
        t.file(&format!("sys/devices/system/cpu/cpu{n}/cpu_capacity"), if n < 2 { "800" } else { "400" });
    }
    t.node(0, "0-3");
    t.no_cpuidle_driver();
    let topo = load(&host_toml(&read_host(&t.root).unwrap(), None, &RenderOptions::default()).unwrap());
    assert_eq!(topo.cpus.iter().map(|c| c.capacity).collect::<Vec<_>>(), vec![1024, 1024, 512, 512]);
}

/// A big.LITTLE phone or board: four small CPUs (capacity 381) and two big
/// ones, a cpufreq-dt policy each cluster.
fn big_little(name: &str) -> Tree {
    let t = Tree::new(name);
    t.cpus("0-5", "0-5");
    for n in 0..6 {
        t.cpu(n, n, 0, &n.to_string(), "0-5");
        t.file(&format!("sys/devices/system/cpu/cpu{n}/cpu_capacity"), if n < 4 { "381" } else { "1024" });
    }
    t.node(0, "0-5");
    t.no_cpuidle_driver();
    let policy = |n: usize, cpus: &str, freqs: &str, governor: &str, latency: &str| {
        let d = format!("sys/devices/system/cpu/cpufreq/policy{n}");
        t.file(&format!("{d}/related_cpus"), cpus);
        t.file(&format!("{d}/scaling_available_frequencies"), freqs);
        t.file(&format!("{d}/scaling_governor"), governor);
        t.file(&format!("{d}/scaling_driver"), "cpufreq-dt");
        t.file(&format!("{d}/cpuinfo_transition_latency"), latency);
    };
    // sysfs lists them as the driver's table gives them (here descending, with a trailing space).
    policy(0, "0 1 2 3", "1416000 1200000 1008000 816000 600000 408000 ", "schedutil", "40000");
    policy(4, "4 5", "408000 1800000 1608000", "ondemand", "4294967295");
    t
}

#[test]
fn cpufreq_policies_with_a_frequency_table_become_perf_domains() {
    let t = big_little("big-little");
    let host = read_host(&t.root).unwrap();
    assert_eq!(host.policies.len(), 2);
    assert_eq!(host.policies[0].freqs_khz, vec![408_000, 600_000, 816_000, 1_008_000, 1_200_000, 1_416_000]);
    assert_eq!(host.policies[1].transition_latency_ns, None, "CPUFREQ_ETERNAL means unknown");
    let text = host_toml(&host, None, &RenderOptions::default()).unwrap();
    assert!(text.contains("/sys/devices/system/cpu/cpufreq/policy0/{related_cpus,"), "{text}");
    assert!(text.contains("the host runs `ondemand`, which the model does not have"), "{text}");
    let topo = load(&text);
    let pds: Vec<(String, CpufreqGovernor, usize, u64, Option<u64>)> = topo
        .perf_domains
        .iter()
        .map(|p| {
            (p.cpus.to_cpulist(), p.governor, p.opps.len(), p.opps.last().unwrap().freq_khz, p.transition_latency_ns)
        })
        .collect();
    assert_eq!(
        pds,
        vec![
            ("0-3".to_string(), CpufreqGovernor::Schedutil, 6, 1_416_000, Some(40_000)),
            ("4-5".to_string(), CpufreqGovernor::Schedutil, 3, 1_800_000, None),
        ]
    );
    assert_eq!(topo.cpus.iter().map(|c| c.capacity).collect::<Vec<_>>(), vec![381, 381, 381, 381, 1024, 1024]);
}

#[test]
fn a_driver_without_a_frequency_table_gives_no_perf_domain_and_says_why() {
    let t = smt_two_llcs("pstate");
    for n in 0..8 {
        let d = format!("sys/devices/system/cpu/cpufreq/policy{n}");
        t.file(&format!("{d}/related_cpus"), &n.to_string());
        t.file(&format!("{d}/scaling_governor"), "powersave");
        t.file(&format!("{d}/scaling_driver"), "intel_pstate");
    }
    let host = read_host(&t.root).unwrap();
    assert!(host.policies.iter().all(|p| p.freqs_khz.is_empty()));
    let text = host_toml(&host, None, &RenderOptions::default()).unwrap();
    assert!(text.contains("driver intel_pstate lists no scaling_available_frequencies"), "{text}");
    assert!(load(&text).perf_domains.is_empty());
    // A table that is not one is an error naming the file.
    t.file("sys/devices/system/cpu/cpufreq/policy0/scaling_available_frequencies", "fast slow");
    let err = read_host(&t.root).unwrap_err().to_string();
    assert!(
        err.contains("policy0/scaling_available_frequencies") && err.contains("not a list of frequencies"),
        "{err}"
    );
}

#[test]
fn an_intel_hybrid_host_gets_hwp_highest_perf_and_core_types_instead_of_fixed_priorities() {
    // Two P-cores with SMT (CPUs 0-1, 2-3) and four E-cores (4-7), as a
    // small Alder Lake: the hybrid PMUs list the core types, CPPC the
    // highest performance (69 and 74 on the P-cores, 43 on the E-cores).
    let t = Tree::new("hybrid");
    t.cpus("0-7", "0-7");
    for n in 0..8 {
        let siblings = if n < 4 { format!("{}-{}", n & !1, (n & !1) + 1) } else { n.to_string() };
        t.cpu(n, n / 2, 0, &siblings, "0-7");
        let perf = match n {
            0 | 1 => 69,
            2 | 3 => 74,
            _ => 43,
        };
        t.file(&format!("sys/devices/system/cpu/cpu{n}/acpi_cppc/highest_perf"), &perf.to_string());
    }
    t.node(0, "0-7");
    t.no_cpuidle_driver();
    t.file("sys/devices/cpu_core/cpus", "0-3");
    t.file("sys/devices/cpu_atom/cpus", "4-7");
    let host = read_host(&t.root).unwrap();
    let text = host_toml(&host, None, &RenderOptions::default()).unwrap();
    assert!(!text.contains("asym_prio ="), "{text}");
    assert!(!text.contains("[asym_prio]"), "{text}");
    assert!(text.contains("[hwp_highest_perf]\n\"2-3\" = 74\n\"0-1\" = 69\n\"4-7\" = 43\n"), "{text}");
    let topo = load(&text);
    let got: Vec<(Option<CoreType>, Option<u32>)> =
        topo.cpus.iter().map(|c| (c.core_type, c.hwp_highest_perf)).collect();
    let want: Vec<(Option<CoreType>, Option<u32>)> = (0..8)
        .map(|n| match n {
            0 | 1 => (Some(CoreType::Core), Some(69)),
            2 | 3 => (Some(CoreType::Core), Some(74)),
            _ => (Some(CoreType::Atom), Some(43)),
        })
        .collect();
    assert_eq!(got, want);
    // Without the hybrid PMUs the same values are plain ITMT priorities.
    t.remove("sys/devices/cpu_atom/cpus");
    let text = host_toml(&read_host(&t.root).unwrap(), None, &RenderOptions::default()).unwrap();
    assert!(!text.contains("[core_type]") && text.contains("asym_prio"), "{text}");
}

#[test]
fn acpi_idle_states_keep_polling_for_poll_and_mwait_only() {
    let t = smt_two_llcs("acpi-idle");
    t.file("sys/devices/system/cpu/cpuidle/current_driver", "acpi_idle");
    for cpu in 0..8 {
        t.state(cpu, 0, ("POLL", "CPUIDLE CORE POLL IDLE"), (0, 0), false);
        t.state(cpu, 1, ("C1", "ACPI FFH MWAIT 0x0"), (1, 1), false);
        t.state(cpu, 2, ("C2", "ACPI IOPORT 0x414"), (400, 800), false);
        t.state(cpu, 3, ("C3", "ACPI IOPORT 0x415"), (900, 2000), true);
    }
    t.file("sys/module/haltpoll/parameters/guest_halt_poll_ns", "200000");
    let host = read_host(&t.root).unwrap();
    let polls: Vec<(String, bool)> = host.idle.states.iter().map(|s| (s.name.clone(), s.polling)).collect();
    assert_eq!(polls, vec![("POLL".into(), true), ("C1".into(), true), ("C2".into(), false)]);
    assert!(host.idle.notes.iter().any(|n| n.contains("C3 is disabled")), "{:?}", host.idle.notes);
    let text = host_toml(&host, None, &RenderOptions::default()).unwrap();
    assert!(!text.contains("[idle.haltpoll]"), "menu governor: no haltpoll table\n{text}");
    let topo = load(&text);
    assert_eq!(topo.idle.governor, Governor::Menu);
    assert_eq!(topo.idle.driver, "acpi_idle");
    let got: Vec<(u64, u64, bool)> =
        topo.idle.states.iter().map(|s| (s.exit_latency_ns, s.target_residency_ns, s.polling)).collect();
    assert_eq!(got, vec![(0, 0, true), (1_000, 1_000, true), (400_000, 800_000, false)]);
}

#[test]
fn the_haltpoll_driver_carries_its_parameters() {
    let t = smt_two_llcs("haltpoll");
    t.file("sys/devices/system/cpu/cpuidle/current_driver", "haltpoll");
    t.remove("sys/devices/system/cpu/cpuidle/current_governor");
    t.file("sys/devices/system/cpu/cpuidle/current_governor_ro", "haltpoll");
    for cpu in 0..8 {
        t.state(cpu, 0, ("POLL", "CPUIDLE CORE POLL IDLE"), (0, 0), false);
        t.state(cpu, 1, ("haltpoll idle", "default architecture idle"), (1, 1), false);
    }
    for (k, v) in [("ns", "150000"), ("grow", "2"), ("grow_start", "50000"), ("shrink", "2"), ("allow_shrink", "Y")] {
        t.file(&format!("sys/module/haltpoll/parameters/guest_halt_poll_{k}"), v);
    }
    let host = read_host(&t.root).unwrap();
    assert!(host.idle.governor.source.contains("current_governor_ro"));
    let topo = load(&host_toml(&host, None, &RenderOptions::default()).unwrap());
    assert_eq!(topo.idle.governor, Governor::Haltpoll);
    assert_eq!(topo.idle.haltpoll.guest_halt_poll_ns, 150_000);
    assert_eq!(topo.idle.states.iter().map(|s| s.polling).collect::<Vec<_>>(), vec![true, false]);
    assert!(topo.idle.states[1].exit_by_idle.is_empty(), "no probes, no curve");

    // With probe figures, the halt state (sysfs names it `haltpoll idle`,
    // a HLT underneath) carries the measured curves instead of the
    // driver's declared 1 us; the polling state carries none.
    let m = measured();
    let text = host_toml(&host, Some(&m), &RenderOptions::default()).unwrap();
    let topo = load(&text);
    let (poll, halt) = (&topo.idle.states[0], &topo.idle.states[1]);
    assert!(poll.exit_by_idle.is_empty() && poll.timer_exit_by_idle.is_empty());
    let want = exit_curve(&m.wake[0]).unwrap();
    assert_eq!(
        halt.exit_by_idle.iter().map(|p| p.p50_ns).collect::<Vec<_>>(),
        want.iter().map(|p| p.p50_ns).collect::<Vec<_>>()
    );
    assert_eq!(halt.exit_after(20_000_000).0, 54_000, "the curve, not the declared 1 us");
    assert_eq!(halt.timer_exit_by_idle.len(), 2);
    assert!(text.contains("the measured curve below replaces it"), "{text}");
}

#[test]
fn missing_and_contradictory_files_are_errors_naming_the_file() {
    let t = smt_two_llcs("missing-core");
    t.remove("sys/devices/system/cpu/cpu5/topology/physical_package_id");
    let e = read_host(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu5/topology/physical_package_id: cannot read"), "{e}");

    let t = smt_two_llcs("missing-online");
    t.remove("sys/devices/system/cpu/online");
    let e = read_host(&t.root).unwrap_err().to_string();
    assert!(e.contains("sys/devices/system/cpu/online: cannot read"), "{e}");

    let t = smt_two_llcs("beyond");
    t.file("sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "2,9");
    let e = read_host(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu2/topology/thread_siblings_list: names CPU 9"), "{e}");
    assert!(e.contains("possible (0-7)"), "{e}");

    let t = smt_two_llcs("extra-dir");
    t.cpu(8, 8, 0, "8", "8");
    let e = read_host(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu8: CPU 8 has a directory but"), "{e}");

    let t = smt_two_llcs("online-no-dir");
    t.cpus("0-8", "0-8");
    let e = read_host(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu8: missing, but") && e.contains("online lists CPU 8"), "{e}");

    let t = smt_two_llcs("bad-int");
    t.file("sys/devices/system/cpu/cpu1/topology/core_id", "one");
    let e = read_host(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu1/topology/core_id: expected an integer, found `one`"), "{e}");

    let t = smt_two_llcs("state-latency");
    t.file("sys/devices/system/cpu/cpuidle/current_driver", "intel_idle");
    t.state(0, 0, ("C1", "MWAIT 0x00"), (1, 1), false);
    t.remove("sys/devices/system/cpu/cpu0/cpuidle/state0/latency");
    let e = read_host(&t.root).unwrap_err().to_string();
    assert!(e.contains("cpu0/cpuidle/state0/latency: cannot read"), "{e}");
}

#[test]
fn the_preemption_model_prefers_the_command_line_over_the_config() {
    let t = smt_two_llcs("cmdline");
    t.file("proc/cmdline", "quiet preempt=full");
    let host = read_host(&t.root).unwrap();
    assert_eq!(host.preempt.value.as_str(), "full");
    assert!(host.preempt.source.contains("/proc/cmdline: preempt=full"));
    t.file("sys/kernel/debug/sched/preempt", "none voluntary full (lazy)");
    let host = read_host(&t.root).unwrap();
    assert_eq!(host.preempt.value.as_str(), "lazy");
}

fn pct(p50: u64, p99: u64, n: usize) -> Percentiles {
    Percentiles { n, p50, p99, max: p99 }
}

/// Probe results as a 3-level machine would give them.
fn measured() -> Measured {
    let wake = |level, waker, wakee, busy| WakeProbe {
        level,
        waker,
        wakee,
        by_idle: vec![
            (5_000, pct(5_400, 20_000, 300)),
            (200_000, pct(12_000, 40_000, 300)),
            (20_000_000, pct(57_000, 90_000, 20)),
        ],
        busy: Some(pct(busy, busy * 3, 300)),
        send_by_idle: vec![(5_000, pct(busy / 4, busy / 2, 300)), (20_000_000, pct(busy / 2, busy, 20))],
        send_busy: Some(pct(busy / 2, busy, 300)),
    };
    let mut gaps = vec![6_000u64; 500];
    gaps.push(3_000_000);
    Measured {
        wake: vec![
            wake(Distance::Smt, 4, 0, 3_000),
            wake(Distance::Llc, 1, 0, 4_000),
            wake(Distance::Package, 2, 0, 6_000),
        ],
        timer: Some(TimerProbe {
            cpu: 0,
            slack_ns: 1,
            by_idle: vec![(5_000, pct(6_000, 9_000, 300)), (1_000_000, pct(30_000, 70_000, 200))],
            busy: Some(pct(5_000, 8_000, 300)),
        }),
        switch: Some(pct(1_500, 2_000, 21)),
        noise: Some(NoiseProbe {
            duration_ns: 1_000_000_000,
            cpus: 8,
            threshold_ns: 2_000,
            gaps,
            preempted: 3,
            steal_ns: 2_000_000,
            steal_raw_ns: 12_000_000,
            interrupts: None,
        }),
        syscall: Some(pct(300, 400, 21)),
        futex_wait_eagain: Some(pct(400, 500, 21)),
        futex_wake_none: Some(pct(320, 400, 21)),
        window: Some(pct(100, 300, 6100)),
        line: Some(pct(60, 90, 21)),
        marker: Some(pct(500, 700, 21)),
        tracepoint: Some(pct(200, 300, 21)),
        events_per_handoff: Some(2.5),
        timer_wake_to_switch: Some(pct(1_200, 3_000, 200)),
        timer_idle_wake_to_switch: Some((0, pct(2_000, 5_000, 200))),
        notes: vec![],
        elapsed_ns: 9_000_000_000,
        rounds: 1,
    }
}

#[test]
fn probe_figures_land_in_the_file_and_load_back() {
    let t = smt_two_llcs("measured");
    let host = read_host(&t.root).unwrap();
    let m = measured();
    let text = host_toml(&host, Some(&m), &RenderOptions::default()).unwrap();
    let topo = load(&text);
    // The halt state's curve is the nearest level's, busy median subtracted.
    let want = exit_curve(&m.wake[0]).unwrap();
    let got = &topo.idle.states[0].exit_by_idle;
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.idle_ns, g.p50_ns, g.p99_ns), (w.idle_ns, w.p50_ns, w.p99_ns));
    }
    assert_eq!((got[0].p50_ns, got[2].p50_ns), (2_400, 54_000));
    // The timer curve: oversleep minus the busy oversleep median.
    let timer = &topo.idle.states[0].timer_exit_by_idle;
    let want: Vec<(u64, u64, u64)> = vec![(5_000, 1_000, 4_000), (1_000_000, 25_000, 65_000)];
    assert_eq!(timer.iter().map(|p| (p.idle_ns, p.p50_ns, p.p99_ns)).collect::<Vec<_>>(), want);
    assert!(text.contains("# [measured: probe timer on CPU 0"), "{text}");
    // The futex handoff (1.5 us) minus its two syscalls (2 x 300 ns) and
    // its wait's and wake's own steps: FUTEX_WAIT's -EAGAIN (400 ns) minus
    // the syscall is futex_wait, futex_wake the same; the window's median
    // end (100 ns) + syscall + futex_wake - futex_wait is schedule_entry.
    let k = &topo.costs.kernel;
    assert_eq!((k.futex_wait_ns, k.futex_wake_ns, k.schedule_entry_ns), (100, 100, 400));
    assert_eq!(topo.costs.context_switch_ns, 1_500 - 600 - 100 - 100 - 400);
    assert!(text.contains("# [measured: probe line: one-way latency"), "{text}");
    // The interrupt's tail: the captured wakeup-to-switch (1.2 us) minus
    // the wakeup's own tracepoint (200 ns).
    assert_eq!(topo.costs.timer_irq_exit_ns, 1_000);
    // From idle 0.8 us longer than from the busy CPU.
    assert_eq!((topo.costs.idle_exit_tail_ns, topo.costs.idle_exit_tail_p99_ns), (800, 3_800));
    assert!(text.contains("sched_wakeup to the sched_switch into the woken task (p50 1.2us"), "{text}");
    // The timer's delivery: the busy oversleep (5 us) minus that switch and the tail.
    assert_eq!(topo.costs.timer_irq_ns, 5_000 - 300 - 1_000);
    assert_eq!((topo.costs.syscall_ns, topo.costs.trace_marker_ns, topo.costs.tracepoint_ns), (300, 500, 200));
    assert!(text.contains("(2.50 events counted per handoff)"), "{text}");
    // ipi per level = busy median - the probe's whole handoff.
    assert_eq!(topo.level_costs(Distance::Smt).ipi_ns, 1_500);
    assert_eq!(topo.level_costs(Distance::Llc).ipi_ns, 2_500);
    assert_eq!(topo.level_costs(Distance::Package).ipi_ns, 4_500);
    assert_eq!(topo.costs.ipi_ns, 1_500, "the flat ipi is the nearest level's");
    // The sender's IPI onto the busy CPU: the nearest level's wake call (1.5 us) minus the plain
    // syscall (300 ns) and futex_wake (100 ns); onto the idle one, per idle length, the same subtraction.
    assert_eq!(topo.costs.kernel.ipi_send_ns, 1_100);
    let send: Vec<(u64, u64, u64)> =
        topo.costs.kernel.ipi_send_by_idle.iter().map(|p| (p.idle_ns, p.p50_ns, p.p99_ns)).collect();
    assert_eq!(send, vec![(5_000, 350, 1_100), (20_000_000, 1_100, 2_600)]);
    assert!(text.contains("ipi_send_by_idle = ["), "{text}");
    assert_eq!((topo.costs.kernel.enqueue_ns, topo.costs.kernel.wakelist_ns), (0, 0));
    assert!(text.contains("how long the waker's FUTEX_WAKE took"), "{text}");
    let kinds: Vec<NoiseKind> = topo.noise.iter().map(|n| n.kind).collect();
    assert_eq!(kinds, vec![NoiseKind::Irq, NoiseKind::Steal]);
    let irq = &topo.noise[0];
    assert!((irq.rate_hz - 62.5).abs() < 0.05, "500 gaps over 8 CPU-seconds: {}", irq.rate_hz);
    assert_eq!(irq.p50_ns, 6_000);
    assert_eq!((topo.noise[1].p50_ns, topo.noise[1].max_ns), (3_000_000, 3_000_000));
}

/// A round disturbed for 145 ms at one idle length (issue 41: such a round
/// wrote no file at all) is said to be disturbed, and the file still loads,
/// without that point and with a comment saying it was not measured.
#[test]
fn a_disturbed_probe_point_is_left_out_not_fatal() {
    let t = smt_two_llcs("disturbed");
    let host = read_host(&t.root).unwrap();
    let mut m = measured();
    assert!(m.disturbed().is_empty());
    m.wake[0].by_idle[1].1 = pct(12_000, 145_271_000, 300);
    let said = m.disturbed();
    assert_eq!(said, ["probe wake 4->0: p99 145.3ms after 200us idle"]);
    let text = host_toml(&host, Some(&m), &RenderOptions::default()).unwrap();
    let topo = load(&text);
    let idles: Vec<u64> = topo.idle.states[0].exit_by_idle.iter().map(|p| p.idle_ns).collect();
    assert_eq!(idles, [5_000, 20_000_000], "the disturbed point is dropped, the others kept");
    assert!(text.contains("the point at idle 200us not measured: p99 145.268ms"), "{text}");
}

/// Gaps the kernel's interrupt counters do not account for (a VM's host
/// running something else) become a busy-only source that wakes no idle
/// CPU; the counted interrupts beyond the tick stay an irq source.
#[test]
fn gaps_beyond_the_kernels_interrupt_count_are_outside_time_on_busy_cpus() {
    let t = smt_two_llcs("outside");
    let host = read_host(&t.root).unwrap();
    let mut m = measured();
    let noise = m.noise.as_mut().unwrap();
    // 2000 gaps per CPU-second (8 CPUs, 1 s) against HZ = 1000 and 1200
    // counted interrupts per CPU-second: 1000 tick, 200 irq, 800 outside.
    noise.gaps = vec![6_000u64; 16_000];
    noise.steal_ns = 0;
    noise.interrupts = Some(9_600);
    let text = host_toml(&host, Some(&m), &RenderOptions::default()).unwrap();
    let topo = load(&text);
    let got: Vec<(&str, NoiseKind, bool, i64)> =
        topo.noise.iter().map(|n| (n.name.as_str(), n.kind, n.busy_only, n.rate_hz.round() as i64)).collect();
    assert_eq!(
        got,
        vec![
            ("tick", NoiseKind::Irq, true, 1000),
            ("irq", NoiseKind::Irq, false, 200),
            ("outside", NoiseKind::Steal, true, 800)
        ],
        "{text}"
    );
    assert!(text.contains("/proc/interrupts counted 9600 on these CPUs"), "{text}");

    // Every gap beyond the tick counted: no outside source, and the file says so.
    m.noise.as_mut().unwrap().interrupts = Some(24_000);
    let text = host_toml(&host, Some(&m), &RenderOptions::default()).unwrap();
    assert_eq!(load(&text).noise.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), vec!["tick", "irq"]);
    assert!(text.contains("# [[noise]] outside: none"), "{text}");
}

#[test]
fn prefcore_rankings_become_asym_prio_and_itmt_follows_its_sysctl() {
    let t = smt_two_llcs("prefcore");
    t.file("proc/sys/kernel/sched_itmt_enabled", "1");
    for n in 0..8 {
        let rank = [236, 231, 201, 196][n % 4];
        t.file(&format!("sys/devices/system/cpu/cpu{n}/cpufreq/amd_pstate_prefcore_ranking"), &rank.to_string());
    }
    let host = read_host(&t.root).unwrap();
    assert!(host.itmt.value);
    let text = host_toml(&host, None, &RenderOptions::default()).unwrap();
    assert!(text.contains("\"0,4\" = 236"), "{text}");
    let topo = load(&text);
    assert!(topo.itmt_enabled);
    assert_eq!(topo.cpus.iter().map(|c| c.asym_prio).collect::<Vec<_>>(), vec![236, 231, 201, 196, 236, 231, 201, 196]);
}

/// The committed example of `--host` output still loads, and says what
/// this project's KVM guest is: no cpuidle driver, one measured halt state.
#[test]
fn the_committed_kvm_example_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/topologies/host-kvm-2.toml");
    let topo = Topology::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(topo.name, "host-kvm-2");
    assert_eq!(topo.nr_cpus(), 2);
    assert_eq!((topo.idle.governor, topo.idle.driver.as_str()), (Governor::None, "none"));
    let halt = &topo.idle.states[0];
    assert_eq!((halt.name.as_str(), halt.polling), ("HLT", false));
    assert_eq!(halt.exit_by_idle.len(), 9, "one point per probed idle length");
    assert!(halt.exit_by_idle.windows(2).all(|w| w[0].idle_ns < w[1].idle_ns));
    assert_eq!(halt.timer_exit_by_idle.len(), 9, "the timer probe: one point per idle length");
    assert!(topo.noise.iter().any(|n| n.kind == NoiseKind::Irq));
}

/// The committed file of the later CI machine (a PVM guest with the
/// haltpoll driver, polling off): the halt state carries the measured
/// curves, and most short gaps are time outside the guest's kernel.
#[test]
fn the_committed_pvm_example_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/topologies/host-pvm-2.toml");
    let topo = Topology::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(topo.name, "host-pvm-2");
    assert_eq!((topo.idle.governor, topo.idle.driver.as_str()), (Governor::Haltpoll, "haltpoll"));
    assert_eq!(topo.idle.haltpoll.guest_halt_poll_ns, 0);
    let (poll, halt) = (&topo.idle.states[0], &topo.idle.states[1]);
    assert!(poll.polling && poll.exit_by_idle.is_empty());
    assert_eq!((halt.name.as_str(), halt.polling), ("haltpoll idle", false));
    assert_eq!((halt.exit_by_idle.len(), halt.timer_exit_by_idle.len()), (14, 14));
    // The halt's step is sampled: the vCPU has not halted 5 us into its
    // idle, and has 15 us in (a 5-to-20 us straight line would halve it).
    let (early, late) = (halt.exit_after(5_000).0, halt.exit_after(15_000).0);
    assert!(late > early + 3_000 && halt.exit_after(12_000).0 * 10 > late * 8, "{early} {late}");
    assert!(halt.exit_after(1_000_000).0 > halt.exit_latency_ns, "the curve, not the driver's 1 us");
    let send = &topo.costs.kernel;
    assert_eq!(send.ipi_send_by_idle.len(), 14, "the sender's cost per idle length of the target");
    assert!(send.ipi_send_after(Some(20_000_000)) > send.ipi_send_after(Some(20_000)), "dearer after a long halt");
    let outside = topo.noise.iter().find(|n| n.name == "outside").expect("an outside source");
    assert!(outside.kind == NoiseKind::Steal && outside.busy_only);
}
