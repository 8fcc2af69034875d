//! Sched-domain construction (`schedlab_kernel::topology`, the model of
//! kernel/sched/topology.c) on the preset machines and on random layouts.

use proptest::prelude::*;
use schedlab_kernel::topology::sd_flags::*;
use schedlab_kernel::topology::*;
use schedlab_topology::{parse_cpulist, CpuSet, Topology};

fn preset(name: &str) -> Topology {
    Topology::preset(name).unwrap_or_else(|| panic!("no preset {name}"))
}

fn set(list: &str) -> CpuSet {
    parse_cpulist(list).unwrap()
}

fn levels(d: &SchedDomains, cpu: usize) -> Vec<DomainLevel> {
    d.domains(cpu).iter().map(|sd| sd.level).collect()
}

fn topo_from(toml: &str) -> Topology {
    Topology::from_toml_str("test.toml", toml).unwrap_or_else(|e| panic!("{e:?}\n{toml}"))
}

#[test]
fn flag_values_match_6_12_sd_flags_h() {
    let expected = [
        (SD_BALANCE_NEWIDLE, 0x0001),
        (SD_BALANCE_EXEC, 0x0002),
        (SD_BALANCE_FORK, 0x0004),
        (SD_BALANCE_WAKE, 0x0008),
        (SD_WAKE_AFFINE, 0x0010),
        (SD_ASYM_CPUCAPACITY, 0x0020),
        (SD_ASYM_CPUCAPACITY_FULL, 0x0040),
        (SD_SHARE_CPUCAPACITY, 0x0080),
        (SD_CLUSTER, 0x0100),
        (SD_SHARE_LLC, 0x0200),
        (SD_SERIALIZE, 0x0400),
        (SD_ASYM_PACKING, 0x0800),
        (SD_PREFER_SIBLING, 0x1000),
        (SD_OVERLAP, 0x2000),
        (SD_NUMA, 0x4000),
    ];
    for (k, (flag, value)) in expected.iter().enumerate() {
        assert_eq!(flag, value, "flag #{k}");
        assert_eq!(SD_FLAG_NAMES[k].0, *flag);
    }
    assert_eq!(SD_DEGENERATE_GROUPS_MASK, 0x7fef);
    assert_eq!(SD_SHARED_CHILD_MASK, 0x029f);
    assert_eq!(flag_names(SD_SHARE_LLC | SD_ASYM_PACKING), "SD_SHARE_LLC SD_ASYM_PACKING");
    assert_eq!(cpu_smt_flags(), SD_SHARE_CPUCAPACITY | SD_SHARE_LLC, "no ASYM_PACKING at SMT since 6.5");
}

#[test]
fn ryzen_7950x_cpu6_domains() {
    let topo = preset("ryzen-7950x");
    let d = build_sched_domains(&topo);
    assert_eq!(levels(&d, 6), vec![DomainLevel::Smt, DomainLevel::Mc, DomainLevel::Pkg], "CLS degenerates into SMT");
    let sds = d.domains(6);
    assert_eq!(sds[0].span, set("6,22"));
    assert_eq!(sds[1].span, set("0-7,16-23"));
    assert_eq!(sds[2].span, set("0-31"));
    assert!(sds[1].has(SD_ASYM_PACKING) && sds[1].has(SD_SHARE_LLC));
    assert!(!sds[0].has(SD_ASYM_PACKING), "SMT has no asym packing since 6.5");
    assert!(sds[2].has(SD_ASYM_PACKING), "6.12.117: PKG uses x86_sched_itmt_flags()");
    assert!(!sds[2].has(SD_SHARE_LLC));

    let c = &d.cpus[6];
    assert_eq!(c.sd_llc, Some(1));
    assert_eq!(c.sd_llc_size, 16);
    assert_eq!(c.sd_llc_id, 0);
    assert_eq!(c.sd_share_id, 0);
    assert_eq!(c.sd_asym_packing, Some(2));
    assert_eq!(c.sd_numa, None);
    assert_eq!(c.sd_asym_cpucapacity, None);
    assert_eq!(d.llc_span(6), set("0-7,16-23"));

    // MC groups: the 8 SMT pairs of CCD0 in build_sched_groups() order,
    // starting at CPU 6 and wrapping.
    let mc: Vec<String> = sds[1].groups.iter().map(|g| g.span.to_cpulist()).collect();
    assert_eq!(mc, ["6,22", "7,23", "0,16", "1,17", "2,18", "3,19", "4,20", "5,21"]);
    assert_eq!(sds[1].groups[0].asym_prefer_cpu, 6);
    assert_eq!(sds[1].groups[0].weight, 2);
    assert_eq!(sds[1].groups[0].cores, 1);
    assert_eq!(sds[1].groups[0].capacity, 2048);
    // PKG groups: the two CCDs; CCD0's best CPUs are 0, 1, 16, 17 (236):
    // the lowest id wins the tie.
    let pkg: Vec<(String, usize)> = sds[2].groups.iter().map(|g| (g.span.to_cpulist(), g.asym_prefer_cpu)).collect();
    assert_eq!(pkg, [("0-7,16-23".to_string(), 0), ("8-15,24-31".to_string(), 8)]);
    assert_eq!(sds[2].groups[0].cores, 8);
    // SMT groups: single CPUs, this one first.
    let smt: Vec<String> = sds[0].groups.iter().map(|g| g.span.to_cpulist()).collect();
    assert_eq!(smt, ["6", "22"]);
    let sds22 = d.domains(22);
    assert_eq!(sds22[0].groups[0].span, set("22"));
    assert_eq!(sds22[1].groups[0].span, set("6,22"));
}

#[test]
fn ryzen_7950x_sd_init_values() {
    let d = build_sched_domains(&preset("ryzen-7950x"));
    let sds = d.domains(6);
    let vals: Vec<(u64, u64, u32, u32, u32, u64)> = sds
        .iter()
        .map(|sd| {
            (
                sd.min_interval,
                sd.max_interval,
                sd.busy_factor,
                sd.imbalance_pct,
                sd.cache_nice_tries,
                sd.balance_interval,
            )
        })
        .collect();
    assert_eq!(vals, [(2, 4, 16, 110, 0, 2), (16, 32, 16, 117, 1, 16), (32, 64, 16, 117, 1, 32)]);
    let base = SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING;
    assert_eq!(sds[0].flags, base | SD_SHARE_CPUCAPACITY | SD_SHARE_LLC);
    assert_eq!(sds[1].flags, base | SD_SHARE_LLC | SD_ASYM_PACKING);
    assert_eq!(sds[2].flags, base | SD_ASYM_PACKING);
    // imb_numa_nr: set on the first level above the LLC (2 LLCs -> 2).
    assert_eq!(sds.iter().map(|sd| sd.imb_numa_nr).collect::<Vec<_>>(), [0, 0, 2]);
    assert_eq!((sds[1].newidle_call, sds[1].newidle_success, sds[1].newidle_ratio), (512, 256, 512));
    // Group flags are the child domain's flags: MC groups stand for SMT
    // cores (after CLS was removed), the SMT level's groups for nothing.
    for g in &sds[1].groups {
        assert_eq!(g.flags, sds[0].flags, "group {}", g.span);
    }
    assert!(sds[0].groups.iter().all(|g| g.flags == 0));
    assert!(sds[2].groups.iter().all(|g| g.flags == sds[1].flags));
}

#[test]
fn ryzen_7950x_without_itmt_has_no_asym_packing() {
    let mut topo = preset("ryzen-7950x");
    topo.itmt_enabled = false;
    let d = build_sched_domains(&topo);
    for c in &d.cpus {
        assert_eq!(c.sd_asym_packing, None, "cpu {}", c.cpu);
        for sd in &c.domains {
            assert!(!sd.has(SD_ASYM_PACKING), "cpu {} {}", c.cpu, sd.name);
        }
    }
    assert_eq!(levels(&d, 0), vec![DomainLevel::Smt, DomainLevel::Mc, DomainLevel::Pkg]);
}

#[test]
fn ryzen_7950x_on_6_12_0_packs_only_within_the_ccd() {
    let topo = preset("ryzen-7950x");
    let d = build_sched_domains_with(&topo, &SchedTopologyOptions { pkg_uses_itmt_flags: false });
    let sds = d.domains(6);
    assert!(sds[1].has(SD_ASYM_PACKING));
    assert!(!sds[2].has(SD_ASYM_PACKING));
    assert_eq!(d.cpus[6].sd_asym_packing, Some(1));
    assert_eq!(d.sd_asym_packing(6).unwrap().span, set("0-7,16-23"));
}

#[test]
fn qemu_4_is_one_mc_domain() {
    let d = build_sched_domains(&preset("qemu-4"));
    for cpu in 0..4 {
        let sds = d.domains(cpu);
        assert_eq!(levels(&d, cpu), vec![DomainLevel::Mc], "SMT and CLS are single CPUs; PKG is never built");
        assert_eq!(sds[0].span, set("0-3"));
        assert_eq!(
            (sds[0].min_interval, sds[0].max_interval, sds[0].imbalance_pct, sds[0].cache_nice_tries),
            (4, 8, 117, 1)
        );
        let groups: Vec<usize> = sds[0].groups.iter().map(|g| g.span.first().unwrap()).collect();
        let expect: Vec<usize> = (0..4).map(|k| (cpu + k) % 4).collect();
        assert_eq!(groups, expect);
        assert!(sds[0].groups.iter().all(|g| g.weight == 1 && g.flags == 0));
        assert_eq!(d.cpus[cpu].sd_llc_size, 4);
        assert_eq!(d.cpus[cpu].sd_llc_id, 0);
    }
    assert!(d.cpus_share_cache(0, 3));
}

#[test]
fn smt_2x2_has_smt_and_mc_only() {
    let mut topo = preset("smt-2x2");
    let d = build_sched_domains(&topo);
    assert_eq!(levels(&d, 1), vec![DomainLevel::Smt, DomainLevel::Mc]);
    assert_eq!(d.domains(1)[0].span, set("0-1"), "adjacent numbering");
    assert_eq!(d.domains(1)[1].span, set("0-3"));
    let mc: Vec<String> = d.domains(3)[1].groups.iter().map(|g| g.span.to_cpulist()).collect();
    assert_eq!(mc, ["2-3", "0-1"]);
    assert_eq!(d.cpus[3].sd_asym_packing, None);

    topo.itmt_enabled = true;
    let d = build_sched_domains(&topo);
    let mc = &d.domains(3)[1];
    assert!(mc.has(SD_ASYM_PACKING));
    assert_eq!(d.cpus[3].sd_asym_packing, Some(1));
    let prefer: Vec<usize> = mc.groups.iter().map(|g| g.asym_prefer_cpu).collect();
    assert_eq!(prefer, [2, 0]);
    assert!(sched_asym_prefer(&topo, 0, 2));
    assert!(!sched_asym_prefer(&topo, 2, 0));
    assert!(!sched_asym_prefer(&topo, 0, 1), "equal priority is not preferred");
}

#[test]
fn sapphire_rapids_2s_numa() {
    let topo = preset("sapphire-rapids-2s");
    assert!(!x86_has_numa_in_package(&topo));
    let d = build_sched_domains(&topo);
    assert_eq!(d.numa_distances, [10, 21]);
    assert_eq!(
        levels(&d, 5),
        vec![DomainLevel::Smt, DomainLevel::Mc, DomainLevel::Numa(1)],
        "PKG and NODE have MC's span and degenerate"
    );
    let sds = d.domains(5);
    assert_eq!(sds[0].span, set("5,117"));
    assert_eq!(sds[1].span, set("0-55,112-167"));
    assert_eq!(sds[1].span_weight, 112);
    assert_eq!(sds[2].span_weight, 224);
    let numa = &sds[2];
    assert!(numa.has(SD_NUMA) && numa.has(SD_SERIALIZE) && numa.has(SD_OVERLAP));
    assert!(!numa.has(SD_PREFER_SIBLING) && !numa.has(SD_SHARE_LLC));
    assert!(numa.has(SD_WAKE_AFFINE) && numa.has(SD_BALANCE_FORK), "distance 21 is within node_reclaim_distance");
    assert_eq!((numa.min_interval, numa.max_interval, numa.imbalance_pct, numa.cache_nice_tries), (224, 448, 117, 2));
    assert_eq!(numa.imb_numa_nr, 14, "one LLC per node: 112 >> 3");
    let groups: Vec<String> = numa.groups.iter().map(|g| g.span.to_cpulist()).collect();
    assert_eq!(groups, ["0-55,112-167", "56-111,168-223"]);
    let other: Vec<String> = d.domains(60)[2].groups.iter().map(|g| g.span.to_cpulist()).collect();
    assert_eq!(other, ["56-111,168-223", "0-55,112-167"]);
    // Overlap groups are per CPU: only the first inherited MC's flags.
    assert_eq!(numa.groups[0].flags, sds[1].flags);
    assert!(!numa.groups[1].has_llc_flag());

    let c = &d.cpus[5];
    assert_eq!((c.sd_llc, c.sd_llc_size, c.sd_llc_id, c.sd_numa), (Some(1), 112, 0, Some(2)));
    assert_eq!(d.cpus[200].sd_llc_id, 56);
    assert!(d.cpus_share_cache(0, 112));
    assert!(!d.cpus_share_cache(0, 56));
    assert!(!d.cpus_share_resources(0, 56));
    assert_eq!(d.sd_numa(5).unwrap().span_weight, 224);
}

trait HasLlc {
    fn has_llc_flag(&self) -> bool;
}
impl HasLlc for SchedGroup {
    fn has_llc_flag(&self) -> bool {
        self.flags & SD_SHARE_LLC != 0
    }
}

#[test]
fn sub_numa_clustering_skips_pkg_and_adds_two_numa_levels() {
    let topo = topo_from(
        "hz = 1000\npreempt = \"full\"\n[layout]\npackages = 2\nnodes_per_package = 2\nllcs_per_package = 2\ncores_per_llc = 2\nthreads_per_core = 2\n",
    );
    assert!(x86_has_numa_in_package(&topo));
    let table: Vec<DomainLevel> =
        x86_sched_topology(&topo, &SchedTopologyOptions::default()).iter().map(|tl| tl.level).collect();
    assert_eq!(
        table,
        [
            DomainLevel::Smt,
            DomainLevel::Cls,
            DomainLevel::Mc,
            DomainLevel::Node,
            DomainLevel::Numa(1),
            DomainLevel::Numa(2)
        ]
    );
    let d = build_sched_domains(&topo);
    assert_eq!(d.numa_distances, [10, 12, 21]);
    // 16 CPUs; cores 0..8, sibling of N is N+8; LLC = node = 2 cores.
    assert_eq!(levels(&d, 0), vec![DomainLevel::Smt, DomainLevel::Mc, DomainLevel::Numa(1), DomainLevel::Numa(2)]);
    let spans: Vec<String> = d.domains(0).iter().map(|sd| sd.span.to_cpulist()).collect();
    assert_eq!(spans, ["0,8", "0-1,8-9", "0-3,8-11", "0-15"]);
    assert_eq!(d.cpus[0].sd_numa, Some(2), "lowest NUMA level");
    let top: Vec<String> = d.domains(0)[3].groups.iter().map(|g| g.span.to_cpulist()).collect();
    assert_eq!(top, ["0-3,8-11", "4-7,12-15"]);
}

#[test]
fn juno_r2_has_a_cluster_mc_and_an_asymmetric_pkg_over_both() {
    let d = build_sched_domains(&preset("juno-r2"));
    for cpu in 0..6 {
        assert_eq!(levels(&d, cpu), vec![DomainLevel::Mc, DomainLevel::Pkg]);
        let sds = d.domains(cpu);
        assert!(!sds[0].has(SD_ASYM_CPUCAPACITY), "a cluster is symmetric");
        assert!(sds[1].has(SD_ASYM_CPUCAPACITY) && sds[1].has(SD_ASYM_CPUCAPACITY_FULL));
        assert_eq!(d.cpus[cpu].sd_asym_cpucapacity, Some(1));
    }
    assert_eq!(d.domains(1)[0].span, set("1-2"));
    assert_eq!(d.domains(0)[0].span, set("0,3-5"));
    let mut caps: Vec<(u64, u64, u64)> =
        d.domains(0)[1].groups.iter().map(|g| (g.capacity, g.min_capacity, g.max_capacity)).collect();
    caps.sort();
    assert_eq!(caps, [(1532, 383, 383), (2048, 1024, 1024)]);
}

#[test]
fn asymmetric_capacity_sets_asym_flags_and_clears_child_prefer_sibling() {
    // Two LLCs of different capacity, no SMT: PKG sees both values.
    let topo = topo_from(
        "hz = 1000\npreempt = \"full\"\n[layout]\nllcs_per_package = 2\ncores_per_llc = 2\n[capacity]\n\"0-1\" = 1024\n\"2-3\" = 512\n",
    );
    let d = build_sched_domains(&topo);
    assert_eq!(levels(&d, 0), vec![DomainLevel::Mc, DomainLevel::Pkg]);
    let sds = d.domains(0);
    assert!(sds[1].has(SD_ASYM_CPUCAPACITY) && sds[1].has(SD_ASYM_CPUCAPACITY_FULL));
    assert!(!sds[0].has(SD_ASYM_CPUCAPACITY));
    assert!(!sds[0].has(SD_PREFER_SIBLING), "no spreading below an asymmetric level");
    assert!(sds[1].has(SD_PREFER_SIBLING));
    assert_eq!(d.cpus[0].sd_asym_cpucapacity, Some(1));
    assert!(d.sched_asym_cpucapacity);
    let caps: Vec<(u64, u64, u64)> =
        sds[1].groups.iter().map(|g| (g.capacity, g.min_capacity, g.max_capacity)).collect();
    assert_eq!(caps, [(2048, 1024, 1024), (1024, 512, 512)]);

    // Three capacity values, one LLC holding two of them: ASYM without FULL.
    let topo = topo_from(
        "hz = 1000\npreempt = \"full\"\n[layout]\nllcs_per_package = 2\ncores_per_llc = 2\n[capacity]\n\"0\" = 1024\n\"1\" = 768\n\"2-3\" = 512\n",
    );
    let d = build_sched_domains(&topo);
    let sds = d.domains(0);
    assert_eq!(sds[0].flags & (SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL), SD_ASYM_CPUCAPACITY);
    assert!(sds[1].has(SD_ASYM_CPUCAPACITY_FULL));
    assert_eq!(d.cpus[0].sd_asym_cpucapacity, Some(1));
    assert_eq!(d.cpus[2].sd_asym_cpucapacity, Some(1));
}

#[test]
fn single_cpu_machine_has_no_domains() {
    let topo = topo_from("hz = 250\npreempt = \"none\"\n[layout]\ncores_per_llc = 1\n");
    let d = build_sched_domains(&topo);
    let c = &d.cpus[0];
    assert!(c.domains.is_empty());
    assert_eq!((c.sd_llc, c.sd_llc_size, c.sd_llc_id, c.sd_asym_packing), (None, 1, 0, None));
    assert_eq!(d.llc_span(0), set("0"));
    assert!(d.cpus_share_cache(0, 0));
}

#[test]
fn flag_domain_walks() {
    let d = build_sched_domains(&preset("ryzen-7950x"));
    assert_eq!(d.highest_flag_domain(3, SD_SHARE_LLC), Some(1));
    assert_eq!(d.lowest_flag_domain(3, SD_SHARE_LLC), Some(0));
    assert_eq!(d.highest_flag_domain(3, SD_SHARE_CPUCAPACITY), Some(0));
    assert_eq!(d.lowest_flag_domain(3, SD_ASYM_PACKING), Some(1));
    assert_eq!(d.highest_flag_domain(3, SD_NUMA), None);
    assert!(d.cpus_share_cache(3, 19) && !d.cpus_share_cache(3, 8));
    assert!(d.sched_domain_debug(6).contains("level=MC span=0-7,16-23"));
}

// ---------------------------------------------------------------------
// Random layouts.

#[derive(Debug, Clone)]
struct Layout {
    packages: usize,
    nodes_per_package: usize,
    llcs: usize,
    cores: usize,
    threads: usize,
    adjacent: bool,
    itmt: bool,
    /// Per global core: priority and whether it is a "small" core.
    prio: Vec<i32>,
    small: Vec<bool>,
}

fn layout() -> impl Strategy<Value = Layout> {
    (1usize..=2, 1usize..=2, 1usize..=4, 1usize..=2, any::<bool>(), any::<bool>(), any::<bool>()).prop_flat_map(
        |(packages, llcs, cores, threads, adjacent, itmt, snc)| {
            let total_cores = packages * llcs * cores;
            (
                proptest::collection::vec(0i32..4, total_cores),
                proptest::collection::vec(proptest::bool::weighted(0.3), total_cores),
            )
                .prop_map(move |(prio, small)| Layout {
                    packages,
                    nodes_per_package: if snc { llcs } else { 1 },
                    llcs,
                    cores,
                    threads,
                    adjacent,
                    itmt,
                    prio,
                    small,
                })
        },
    )
}

fn core_cpus(l: &Layout, core: usize) -> Vec<usize> {
    let total_cores = l.packages * l.llcs * l.cores;
    (0..l.threads).map(|t| if l.adjacent { core * l.threads + t } else { t * total_cores + core }).collect()
}

fn build_topo(l: &Layout) -> Topology {
    let mut s = format!(
        "hz = 1000\npreempt = \"full\"\nitmt_enabled = {}\n[layout]\npackages = {}\nnodes_per_package = {}\nllcs_per_package = {}\ncores_per_llc = {}\nthreads_per_core = {}\nsmt_numbering = \"{}\"\n",
        l.itmt,
        l.packages,
        l.nodes_per_package,
        l.llcs,
        l.cores,
        l.threads,
        if l.adjacent { "adjacent" } else { "sibling-offset" }
    );
    let key = |core: usize| core_cpus(l, core).iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    s.push_str("[asym_prio]\n");
    for (core, p) in l.prio.iter().enumerate() {
        s.push_str(&format!("\"{}\" = {}\n", key(core), p));
    }
    s.push_str("[capacity]\n");
    for (core, small) in l.small.iter().enumerate() {
        // Core 0 always has the full capacity.
        let cap = if *small && core > 0 { 640 } else { 1024 };
        s.push_str(&format!("\"{}\" = {}\n", key(core), cap));
    }
    topo_from(&s)
}

fn capacities(topo: &Topology, span: &CpuSet) -> Vec<u32> {
    let mut v: Vec<u32> = span.iter().map(|c| topo.cpus[c].capacity).collect();
    v.sort_unstable();
    v.dedup();
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn domains_are_well_formed(l in layout()) {
        let topo = build_topo(&l);
        let d = build_sched_domains(&topo);
        let n = topo.nr_cpus();
        let all = topo.all_cpus();
        let all_caps = capacities(&topo, &all);
        prop_assert_eq!(d.nr_cpus(), n);
        for cpu in 0..n {
            let c = &d.cpus[cpu];
            let sds = &c.domains;
            prop_assert_eq!(sds.is_empty(), n == 1);
            if let Some(top) = sds.last() {
                prop_assert_eq!(top.span, all, "cpu {}: top domain spans the machine", cpu);
            }
            for (k, sd) in sds.iter().enumerate() {
                prop_assert!(sd.span.contains(cpu));
                prop_assert_eq!(sd.span_weight as usize, sd.span.len());
                prop_assert_eq!(sd.min_interval, sd.span_weight as u64);
                prop_assert_eq!(sd.max_interval, 2 * sd.span_weight as u64);
                let child_span = if k == 0 { CpuSet::single(cpu) } else { sds[k - 1].span };
                if k > 0 {
                    prop_assert!(child_span.is_subset(&sd.span) && child_span != sd.span,
                        "cpu {} {}: span {} does not strictly contain child {}", cpu, sd.name, sd.span, child_span);
                }
                // Groups partition the span; the first is this CPU's child.
                let mut covered = CpuSet::empty();
                for g in &sd.groups {
                    prop_assert!(!g.span.is_empty() && g.span.is_subset(&sd.span));
                    prop_assert!(!g.span.intersects(&covered), "cpu {} {}: groups overlap", cpu, sd.name);
                    covered = covered.or(&g.span);
                    prop_assert_eq!(g.weight as usize, g.span.len());
                    let sum: u64 = g.span.iter().map(|c| topo.cpus[c].capacity as u64).sum();
                    prop_assert_eq!(g.capacity, sum);
                    let cores: std::collections::BTreeSet<usize> = g.span.iter().map(|c| topo.cpus[c].core).collect();
                    prop_assert_eq!(g.cores as usize, cores.len());
                    // asym_prefer_cpu: top priority, lowest id among equals.
                    let p = g.asym_prefer_cpu;
                    prop_assert!(g.span.contains(p));
                    for o in g.span.iter() {
                        prop_assert!(!sched_asym_prefer(&topo, o, p));
                        if o < p {
                            prop_assert!(sched_asym_prefer(&topo, p, o));
                        }
                    }
                    // Each group is some member's child domain (or a CPU).
                    let first = g.span.first().unwrap();
                    let expect = if k == 0 { CpuSet::single(first) } else { d.domains(first)[k - 1].span };
                    prop_assert_eq!(g.span, expect);
                    if !sd.has(SD_OVERLAP) {
                        let want = if k == 0 { 0 } else { d.domains(first)[k - 1].flags };
                        prop_assert_eq!(g.flags, want, "cpu {} {} group {}", cpu, sd.name, g.span);
                    }
                }
                prop_assert_eq!(covered, sd.span);
                prop_assert!(sd.groups.len() >= 2, "a surviving domain has at least two groups");
                prop_assert!(sd.groups[0].span.contains(cpu));
                prop_assert_eq!(sd.groups[0].span, child_span);
                // Flags follow the level.
                let smt = sd.level == DomainLevel::Smt;
                prop_assert_eq!(sd.has(SD_SHARE_CPUCAPACITY), smt);
                prop_assert_eq!(sd.imbalance_pct, if smt { 110 } else { 117 });
                let numa = matches!(sd.level, DomainLevel::Numa(_));
                prop_assert_eq!(sd.has(SD_NUMA), numa);
                prop_assert_eq!(sd.has(SD_SERIALIZE), numa);
                prop_assert_eq!(sd.cache_nice_tries, if smt { 0 } else if numa { 2 } else { 1 });
                prop_assert_eq!(sd.has(SD_SHARE_LLC), sd.span.is_subset(&topo.llc_mask(cpu)));
                prop_assert_eq!(sd.has(SD_ASYM_PACKING), l.itmt && !smt && !numa);
                let caps = capacities(&topo, &sd.span);
                prop_assert_eq!(sd.has(SD_ASYM_CPUCAPACITY), caps.len() >= 2);
                prop_assert_eq!(sd.has(SD_ASYM_CPUCAPACITY_FULL), caps.len() >= 2 && caps == all_caps);
            }
            // update_top_cache_domain()
            let llc = topo.llc_mask(cpu);
            prop_assert_eq!(d.llc_span(cpu), llc);
            prop_assert_eq!(c.sd_llc_size as usize, llc.len());
            prop_assert_eq!(c.sd_llc_id, llc.first().unwrap());
            prop_assert_eq!(c.sd_share_id, c.sd_llc_id);
            prop_assert_eq!(c.sd_asym_packing.is_some(), l.itmt && sds.iter().any(|sd| sd.has(SD_ASYM_PACKING)));
            if let Some(k) = c.sd_asym_packing {
                prop_assert!(sds[k + 1..].iter().all(|sd| !sd.has(SD_ASYM_PACKING)));
            }
            if let Some(k) = c.sd_numa {
                prop_assert!(sds[k].has(SD_NUMA) && sds[..k].iter().all(|sd| !sd.has(SD_NUMA)));
            } else {
                prop_assert!(l.packages == 1 && l.nodes_per_package == 1);
            }
            for other in 0..n {
                prop_assert_eq!(d.cpus_share_cache(cpu, other), topo.cpus[cpu].llc == topo.cpus[other].llc);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Hand-written `[[cpus]]` machines keep what the topology crate
    /// validates (SMT siblings share LLC, package, node and priority; an LLC
    /// lies in one package) but may still put an LLC across nodes or a node
    /// across packages: the build must finish, with the kernel's fix-ups
    /// keeping every parent a superset of its child.
    #[test]
    fn arbitrary_cpu_assignments_do_not_panic(
        core_of_cpu in proptest::collection::vec(0usize..4, 1..10),
        llc_of_core in proptest::collection::vec(0usize..3, 4),
        pkg_of_llc in proptest::collection::vec(0usize..2, 3),
        node_of_core in proptest::collection::vec(0usize..3, 4),
        prio_of_core in proptest::collection::vec(0i32..3, 4),
        small_core in proptest::collection::vec(any::<bool>(), 4),
        itmt in any::<bool>(),
    ) {
        let mut topo = preset("qemu-4");
        topo.itmt_enabled = itmt;
        topo.cpus = core_of_cpu
            .iter()
            .enumerate()
            .map(|(id, &core)| schedlab_topology::CpuInfo {
                id,
                core,
                llc: llc_of_core[core],
                package: pkg_of_llc[llc_of_core[core]],
                node: node_of_core[core],
                capacity: if small_core[core] && core > 0 { 512 } else { 1024 },
                asym_prio: prio_of_core[core],
                core_type: None,
                hwp_highest_perf: None,
            })
            .collect();
        let d = build_sched_domains(&topo);
        for cpu in 0..topo.nr_cpus() {
            let sds = d.domains(cpu);
            for (k, sd) in sds.iter().enumerate() {
                prop_assert!(sd.span.contains(cpu));
                prop_assert!(!sd.groups.is_empty());
                prop_assert!(sd.groups[0].span.contains(cpu) || sd.has(SD_OVERLAP));
                if k > 0 {
                    prop_assert!(sds[k - 1].span.is_subset(&sd.span));
                }
            }
            prop_assert!(d.cpus_share_cache(cpu, cpu));
            let _ = d.sched_domain_debug(cpu);
        }
    }
}

/// cpuset partitions (`partition_sched_domains()`): each CPU's domains stay
/// within its span, CPUs of no span (an isolated partition) get none, and
/// the spans cpuset hands over are the rest plus each `root` partition.
#[test]
fn partitioned_domains_stay_within_their_span() {
    use schedlab_kernel::{sched_domain_spans, Partition};
    let topo = preset("ryzen-7950x");
    // CCD 1's cores 8-15 with their siblings 24-31 as a root partition, and
    // core 7 (7 and 23) isolated.
    let ccd1 = set("8-15,24-31");
    let parts = [Partition { cpus: ccd1, isolated: false }, Partition { cpus: set("7,23"), isolated: true }];
    let doms = sched_domain_spans(&topo, &parts);
    assert_eq!(doms, vec![set("0-6,16-22"), ccd1]);
    let d = build_sched_domains_partitioned(&topo, &SchedTopologyOptions::default(), &doms);
    // The partition is one LLC: SMT and MC, no PKG level above it.
    assert_eq!(levels(&d, 9), vec![DomainLevel::Smt, DomainLevel::Mc]);
    assert_eq!(d.domains(9).last().unwrap().span, ccd1);
    // The rest keeps CCD 0 without core 7: its top domain is that span.
    assert_eq!(d.domains(0).last().unwrap().span, set("0-6,16-22"));
    assert!(d.domains(7).is_empty() && d.domains(23).is_empty(), "isolated: no domain");
    for cpu in 0..topo.nr_cpus() {
        for sd in d.domains(cpu) {
            assert!(doms.iter().any(|s| sd.span.is_subset(s) && s.contains(cpu)), "CPU {cpu}: {:?}", sd.span);
            for g in &sd.groups {
                assert!(g.span.is_subset(&sd.span));
            }
        }
    }
    // No partitions: one span, the same domains as the plain build.
    assert_eq!(sched_domain_spans(&topo, &[]), vec![topo.all_cpus()]);
    let whole = build_sched_domains_partitioned(&topo, &SchedTopologyOptions::default(), &[topo.all_cpus()]);
    let plain = build_sched_domains(&topo);
    for cpu in 0..topo.nr_cpus() {
        assert_eq!(
            whole.domains(cpu).iter().map(|s| s.span).collect::<Vec<_>>(),
            plain.domains(cpu).iter().map(|s| s.span).collect::<Vec<_>>()
        );
    }
}

/// The Intel hybrid presets as intel_pstate leaves them for the scheduler
/// per kernel version: the 285K (no SMT) gets asymmetric capacities and no
/// asym packing from 6.12 on, asym packing before; the 13900K (SMT) asym
/// packing on every version, capacity 1024.
#[test]
fn intel_hybrid_domains_follow_the_profile_regime() {
    use schedlab_kernel::profile::Profile;
    use schedlab_kernel::topology::intel_pstate::intel_pstate_init;
    let mc = |d: &SchedDomains, cpu: usize| d.domains(cpu).iter().find(|sd| sd.level == DomainLevel::Mc).cloned();
    for (name, capacity) in [("6.9", false), ("6.12", true), ("6.15", true), ("mainline", true)] {
        let p = Profile::by_name(name).unwrap();
        let t = intel_pstate_init(preset("intel-285k"), &p);
        let d = build_sched_domains(&t);
        let sd = mc(&d, 0).expect("an MC level");
        assert_eq!(sd.span, t.all_cpus());
        assert_eq!(sd.has(SD_ASYM_CPUCAPACITY), capacity, "285k {name}");
        assert_eq!(sd.has(SD_ASYM_PACKING), !capacity, "285k {name}");
        assert_eq!(d.cpus[0].sd_asym_cpucapacity.is_some(), capacity, "285k {name}");

        let t = intel_pstate_init(preset("intel-13900k"), &p);
        let d = build_sched_domains(&t);
        let sd = mc(&d, 0).expect("an MC level");
        assert!(!sd.has(SD_ASYM_CPUCAPACITY) && sd.has(SD_ASYM_PACKING), "13900k {name}");
        assert!(t.cpus.iter().all(|c| c.capacity == 1024));
    }
}
