//! cpufreq: schedutil's frequency for a utilisation (`sugov_effective_cpu_perf()`,
//! `get_next_freq()`, `cpufreq_driver_resolve_freq()`, 6.12), its rate
//! limit (`cpufreq_policy_transition_delay_us()`), the governors' starting
//! frequencies and frequency-invariant PELT (`update_rq_clock_pelt()`).

use super::common::kernel_with;
use crate::cpufreq::{cpufreq_policy_transition_delay_us, topology_freq_scale};
use crate::cpufreq_schedutil::{map_util_perf, sugov_effective_cpu_perf};
use crate::pelt::clock::update_rq_clock_pelt;
use schedlab_topology::Topology;

const MS: u64 = 1_000_000;

/// RK3399's two clusters as its 6.12 device tree gives them (rk3399.dtsi
/// cluster0/cluster1 opp tables, capacity-dmips-mhz 485/1024): the A53s
/// get capacity 485 × 1416 MHz × 1024 / (1024 × 1800 MHz) = 381.
fn rk3399_like(governor: &str) -> Topology {
    let text = format!(
        r#"hz = 250
preempt = "full"
cpufreq_governor = "{governor}"
[[cpus]]
id = 0
core = 0
llc = 0
[[cpus]]
id = 1
core = 1
llc = 0
[[cpus]]
id = 2
core = 2
llc = 1
[[perf_domain]]
cpus = "0-1"
capacity_dmips_mhz = 485
transition_latency = "40us"
opps = [ {{ freq = "408MHz" }}, {{ freq = "600MHz" }}, {{ freq = "816MHz" }}, {{ freq = "1008MHz" }},
         {{ freq = "1200MHz" }}, {{ freq = "1416MHz" }} ]
[[perf_domain]]
cpus = "2"
capacity_dmips_mhz = 1024
transition_latency = "40us"
opps = [ {{ freq = "408MHz" }}, {{ freq = "600MHz" }}, {{ freq = "816MHz" }}, {{ freq = "1008MHz" }},
         {{ freq = "1200MHz" }}, {{ freq = "1416MHz" }}, {{ freq = "1608MHz" }}, {{ freq = "1800MHz" }} ]
"#
    );
    Topology::from_toml_str("rk3399-like.toml", &text).unwrap()
}

/// schedutil's choice for a CPU asking for `util` on policy `pi`.
fn freq_for(k: &mut crate::core::Kernel, pi: usize, util: u64, cap: u64) -> u64 {
    let perf = sugov_effective_cpu_perf(util, 0, cap);
    k.get_next_freq(pi, perf, cap)
}

#[test]
fn schedutil_picks_the_lowest_opp_that_runs_the_utilisation_at_80_percent() {
    let mut t = kernel_with(rk3399_like("schedutil"), "6.12", &[], 1);
    let k = &mut t.kernel;
    assert_eq!(k.topo.cpus[0].capacity, 381);
    assert_eq!(k.topo.cpus[2].capacity, 1024);
    // Big cluster (policy 1, capacity 1024, max 1800 MHz):
    // util 400 → 400 + 100 = 500 → 1800000 × 500 / 1024 = 878906 kHz → 1008 MHz.
    assert_eq!(freq_for(k, 1, 400, 1024), 1_008_000);
    // util 700 → 875 → 1538085 kHz → 1608 MHz.
    assert_eq!(freq_for(k, 1, 700, 1024), 1_608_000);
    // util 819 (80 %) → 1023 → 1798242 kHz → 1800 MHz; util 100 → 125 →
    // 219726 kHz, below the table: its lowest, 408 MHz.
    assert_eq!(freq_for(k, 1, 819, 1024), 1_800_000);
    assert_eq!(freq_for(k, 1, 100, 1024), 408_000);
    // Little cluster (capacity 381, max 1416 MHz): util 200 → 250 →
    // 1416000 × 250 / 381 = 929133 kHz → 1008 MHz.
    assert_eq!(freq_for(k, 0, 200, 381), 1_008_000);
    // A utilisation at the capacity asks for more than the maximum: the maximum.
    assert_eq!(freq_for(k, 0, 381, 381), 1_416_000);
    // The headroom is a quarter, truncated.
    assert_eq!(map_util_perf(3), 3);
    assert_eq!(map_util_perf(4), 5);
}

#[test]
fn the_performance_hints_bound_schedutils_request() {
    // uclamp_max-like cap below the utilisation wins over the headroom ...
    assert_eq!(sugov_effective_cpu_perf(800, 0, 512), 512);
    // ... a DL or uclamp_min floor above it wins over everything.
    assert_eq!(sugov_effective_cpu_perf(100, 700, 1024), 700);
    assert_eq!(sugov_effective_cpu_perf(100, 0, 1024), 125);
}

#[test]
fn the_rate_limit_is_the_transition_latency_and_a_half() {
    // rk3399's clock-latency-ns 40000 → 40 us + 20 us.
    assert_eq!(cpufreq_policy_transition_delay_us(40_000), 60);
    // A driver that reports no latency gets 1 ms.
    assert_eq!(cpufreq_policy_transition_delay_us(0), 1000);
    let t = kernel_with(rk3399_like("schedutil"), "6.12", &[], 1);
    assert_eq!(t.kernel.cpufreq_policies()[1].freq_update_delay_ns, 60_000);
}

#[test]
fn each_governor_starts_where_it_stays_or_at_the_maximum() {
    for (gov, little, big) in
        [("performance", 1_416_000, 1_800_000), ("powersave", 408_000, 408_000), ("schedutil", 1_416_000, 1_800_000)]
    {
        let t = kernel_with(rk3399_like(gov), "6.12", &[], 1);
        assert_eq!(t.kernel.cpufreq_cur(0), Some(little), "{gov}");
        assert_eq!(t.kernel.cpufreq_cur(2), Some(big), "{gov}");
    }
    let t = kernel_with(rk3399_like("powersave"), "6.12", &[], 1);
    // 408000 × 1024 / 1800000 = 232.1 → 232 on the big CPU;
    // 408000 × 1024 / 1416000 = 295.05 → 295 on the little ones.
    assert_eq!(t.kernel.arch_scale_freq_capacity(2), 232);
    assert_eq!(t.kernel.arch_scale_freq_capacity(0), 295);
    assert_eq!(topology_freq_scale(1_800_000, 1_800_000), 1024);
}

#[test]
fn pelt_time_runs_at_capacity_times_frequency() {
    // 2 ms of running on a capacity-1024 CPU at half its maximum frequency
    // accrue 1 ms of PELT time; at a quarter on a 512 CPU, a quarter of that.
    let mut c = 10 * MS;
    update_rq_clock_pelt(&mut c, 12 * MS, 2 * MS, false, 1024, 512);
    assert_eq!(c, 11 * MS);
    let mut c = 10 * MS;
    update_rq_clock_pelt(&mut c, 14 * MS, 4 * MS, false, 512, 256);
    assert_eq!(c, 10 * MS + MS / 2);
}

#[test]
fn a_machine_without_perf_domains_has_no_cpufreq() {
    let t = kernel_with(super::capacity::asym_topology(&[512, 1024]), "6.12", &[], 1);
    assert!(t.kernel.cpufreq_policies().is_empty());
    assert_eq!(t.kernel.cpufreq_cur(0), None);
    assert_eq!(t.kernel.arch_scale_freq_capacity(1), 1024);
}

#[test]
fn schedutil_skips_the_frequencies_the_energy_model_finds_inefficient() {
    let t = kernel_with(Topology::preset("rk3399").unwrap(), "6.12", &[], 1);
    let [little, big] = t.kernel.cpufreq_policies() else { panic!("rk3399 has two policies") };
    // The DT runs the A72s' 408, 600 and 816 MHz at the same 825 mV, so a
    // unit of work costs the same energy at each (power grows with f·V²,
    // work with f) and em_compute_costs() marks the two below 816 MHz
    // inefficient; likewise the A53s' 408 MHz beside 600 MHz at 825 mV.
    let marked = |p: &crate::cpufreq::CpufreqPolicy| {
        p.freq_table.iter().zip(&p.inefficient).filter(|(_, &i)| i).map(|(&f, _)| f).collect::<Vec<_>>()
    };
    assert_eq!(marked(big), [408_000, 600_000]);
    assert_eq!(marked(little), [408_000]);
    // A target below them resolves to the lowest efficient frequency above.
    assert_eq!(big.resolve_freq(300_000), 816_000);
    assert_eq!(big.resolve_freq(700_000), 816_000);
    assert_eq!(big.resolve_freq(900_000), 1_008_000);
    assert_eq!(little.resolve_freq(100_000), 600_000);
    // The machine without an energy model keeps every frequency.
    let t = kernel_with(rk3399_like("schedutil"), "6.12", &[], 1);
    assert_eq!(t.kernel.cpufreq_policies()[1].resolve_freq(300_000), 408_000);
}

#[test]
fn an_rt_task_without_its_own_floor_asks_for_the_maximum_once_clamps_are_in_use() {
    use super::common::{start_fair, task_with};
    use crate::fair::capacity::UclampId;
    use crate::sched::Policy;
    let mut t = kernel_with(rk3399_like("schedutil"), "6.12", &[], 1);
    let rt = task_with(&mut t, 1, Policy::Fifo, 10, "2", 2);
    let capped = task_with(&mut t, 2, Policy::Fifo, 10, "2", 2);
    let fair = task_with(&mut t, 3, Policy::Normal, 0, "1", 1);
    // Some task sets a clamp: the sched_uclamp_used key turns on, and with
    // it the clamps replace "an RT task is runnable" in effective_cpu_util().
    t.kernel.sched_setattr_uclamp(capped, Some(0), None);
    let k = &t.kernel;
    // RT's default floor is sched_util_clamp_min_rt_default = 1024; a floor
    // the user set (here 0) is kept; a fair task's default is 0.
    assert_eq!(k.uclamp_eff_value(rt, UclampId::Min), 1024);
    assert_eq!(k.uclamp_eff_value(capped, UclampId::Min), 0);
    assert_eq!(k.uclamp_eff_value(fair, UclampId::Min), 0);
    start_fair(&mut t, rt, 0);
    // Queued on the big CPU: its floor is the runqueue's, so schedutil's
    // minimum there is the CPU's whole capacity.
    let (_, min, _) = t.kernel.effective_cpu_util(2, 0);
    assert_eq!(min, 1024);
}
