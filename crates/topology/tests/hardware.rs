//! `[idle]`, `[costs.<level>]` and `[[noise]]`: what a file says is what the
//! topology holds, and each bad value is refused at its position.

use schedlab_topology::{Distance, Governor, InputError, NoiseKind, Topology};

/// 2 packages x 2 LLCs x 2 cores x 2 threads (sibling-offset numbering).
const BASE: &str = "\
hz = 1000
preempt = \"full\"
[layout]
packages = 2
llcs_per_package = 2
cores_per_llc = 2
threads_per_core = 2
";

fn load(extra: &str) -> Topology {
    let text = format!("{BASE}{extra}");
    Topology::from_toml_str("t.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn err(extra: &str) -> InputError {
    let text = format!("{BASE}{extra}");
    match Topology::from_toml_str("t.toml", &text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn distances_follow_the_shared_levels() {
    let t = load("");
    // 8 cores: CPU n and n+8 are siblings; LLCs hold 2 cores; packages 2 LLCs.
    assert_eq!(t.distance(3, 3), Distance::Same);
    assert_eq!(t.distance(0, 8), Distance::Smt);
    assert_eq!(t.distance(0, 1), Distance::Llc);
    assert_eq!(t.distance(0, 2), Distance::Package);
    assert_eq!(t.distance(0, 4), Distance::Numa);
    assert_eq!(t.distance(9, 12), Distance::Numa);
}

#[test]
fn level_costs_override_the_flat_ones_per_level() {
    let t = load(
        "[costs]\nipi_ns = \"3us\"\nmigration_cold_ns = \"4us\"\n[costs.smt]\nipi = \"1us\"\nmigration_cold = \"0us\"\n[costs.numa]\nipi = \"9us\"\n",
    );
    let c = |d| t.level_costs(d);
    assert_eq!((c(Distance::Smt).ipi_ns, c(Distance::Smt).migration_cold_ns), (1_000, 0));
    assert_eq!((c(Distance::Llc).ipi_ns, c(Distance::Llc).migration_cold_ns), (3_000, 4_000), "flat");
    assert_eq!((c(Distance::Numa).ipi_ns, c(Distance::Numa).migration_cold_ns), (9_000, 4_000));
    assert_eq!(c(Distance::Same).ipi_ns, 0);
}

#[test]
fn without_idle_the_flat_costs_make_one_state() {
    let t = load("[costs]\nidle_exit_ns = \"7us\"\nidle_polling = true\n");
    assert_eq!(t.idle.governor, Governor::None);
    assert_eq!(t.idle.states.len(), 1);
    assert_eq!((t.idle.states[0].exit_latency_ns, t.idle.states[0].polling), (7_000, true));
}

#[test]
fn idle_states_and_measured_exit_curve() {
    let t = load(
        r#"
[idle]
driver = "acpi_idle"
governor = "menu"
[[idle.states]]
name = "POLL"
exit_latency = "0us"
polling = true
[[idle.states]]
name = "C1"
exit_latency = "1us"
target_residency = "2us"
polling = true
[[idle.states]]
name = "C2"
exit_latency = "18us"
target_residency = "36us"
exit_latency_by_idle = [ { idle = "0us", p50 = "10us", p99 = "20us" }, { idle = "100us", p50 = "30us", p99 = "60us" } ]
"#,
    );
    assert_eq!(t.idle.driver, "acpi_idle");
    assert_eq!(t.idle.governor, Governor::Menu);
    let names: Vec<&str> = t.idle.states.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["POLL", "C1", "C2"]);
    assert_eq!(t.idle.states[1].exit_after(1_000_000), (1_000, 1_000), "no curve: the flat latency");
    let c2 = &t.idle.states[2];
    assert_eq!(c2.exit_after(0), (10_000, 20_000));
    assert_eq!(c2.exit_after(50_000), (20_000, 40_000), "halfway between the points");
    assert_eq!(c2.exit_after(5_000_000), (30_000, 60_000), "the last point holds beyond");
}

#[test]
fn timer_exit_curve_is_separate_and_falls_back_to_the_ipi_curve() {
    let halt = |extra: &str| {
        let t = load(&format!(
            "[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency_by_idle = [ {{ idle = \"5us\", p50 = \"1us\", p99 = \"2us\" }}, {{ idle = \"1ms\", p50 = \"15us\", p99 = \"20us\" }} ]\n{extra}"
        ));
        t.idle.states[0].clone()
    };
    let s = halt("timer_exit_latency_by_idle = [ { idle = \"5us\", p50 = \"10us\", p99 = \"30us\" }, { idle = \"1ms\", p50 = \"25us\", p99 = \"40us\" } ]\n");
    assert_eq!(s.timer_exit_by_idle.len(), 2);
    assert_eq!(s.exit_after(1_000_000), (15_000, 20_000), "the IPI curve is untouched");
    assert_eq!(s.timer_exit_after(1_000_000), (25_000, 40_000));
    assert_eq!(s.timer_exit_after(0), (10_000, 30_000), "the first point holds before it");
    let s = halt("");
    assert!(s.timer_exit_by_idle.is_empty());
    assert_eq!(s.timer_exit_after(1_000_000), s.exit_after(1_000_000), "no timer curve: the IPI curve");
    // Without any curve both give the flat exit_latency.
    let t = load("[idle]\n[[idle.states]]\nexit_latency = \"3us\"\n");
    assert_eq!(t.idle.states[0].timer_exit_after(1_000_000), (3_000, 3_000));
}

#[test]
fn haltpoll_parameters_and_shape() {
    let t = load(
        "[idle]\ngovernor = \"haltpoll\"\n[[idle.states]]\nname = \"poll\"\nexit_latency = 0\npolling = true\n[[idle.states]]\nname = \"halt\"\nexit_latency = \"2us\"\n[idle.haltpoll]\nguest_halt_poll_ns = \"400us\"\ngrow = 4\n",
    );
    assert_eq!(t.idle.haltpoll.guest_halt_poll_ns, 400_000);
    assert_eq!((t.idle.haltpoll.grow, t.idle.haltpoll.grow_start_ns, t.idle.haltpoll.shrink), (4, 50_000, 2));
    let e = err("[idle]\ngovernor = \"haltpoll\"\n[[idle.states]]\nname = \"halt\"\nexit_latency = \"2us\"\n");
    assert!(e.message.contains("a polling state and a halt"), "{e}");
}

#[test]
fn bad_idle_input_is_located() {
    let e = err("[idle]\ngovernor = \"ladder\"\n[[idle.states]]\nexit_latency = 0\n");
    assert_eq!((e.line, e.message.contains("unknown cpuidle governor `ladder`")), (9, true), "{e}");
    let e = err("[idle]\ngovernor = \"menu\"\n");
    assert!(e.message.contains("no [[idle.states]]"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nname = \"C1\"\n");
    assert!(e.message.contains("idle state `C1` has no exit_latency"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nname = \"C2\"\nexit_latency = 0\ntarget_residency = \"9us\"\n[[idle.states]]\nname = \"C1\"\nexit_latency = 0\ntarget_residency = \"2us\"\n");
    assert!(e.message.contains("shallowest first"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = \"2s\"\n");
    assert!(e.message.contains("implausibly large"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = 0\nexit_latency_by_idle = [ { idle = \"5us\", p50 = \"3us\", p99 = \"2us\" } ]\n");
    assert!(e.message.contains("p99 is below p50"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = 0\nexit_latency_by_idle = [ { idle = \"5us\", p50 = \"3us\" }, { idle = \"5us\", p50 = \"4us\" } ]\n");
    assert!(e.message.contains("sorted by `idle`"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = 0\ntimer_exit_latency_by_idle = [ { idle = \"5us\", p50 = \"3us\", p99 = \"2us\" } ]\n");
    assert_eq!((e.line, e.message.contains("timer_exit_latency_by_idle: p99 is below p50")), (11, true), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = 0\ntimer_exit_latency_by_idle = [ { idle = \"1ms\", p50 = \"3us\" }, { idle = \"5us\", p50 = \"4us\" } ]\n");
    assert!(e.message.contains("timer_exit_latency_by_idle points must be sorted by `idle`"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = 0\ntimer_exit_latency_by_idle = [ { idle = \"5us\", p50 = \"3s\" } ]\n");
    assert!(e.message.contains("p50 = 3000000000 ns is implausibly large"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = 0\ntimer_exit_latency_by_idle = [ { idle = \"5us\", p90 = \"3us\" } ]\n");
    assert!(e.message.contains("unknown key `p90`"), "{e}");
    let e = err("[idle]\n[[idle.states]]\nexit_latency = 0\nresidency = 0\n");
    assert!(e.message.contains("unknown key"), "{e}");
}

#[test]
fn noise_sources() {
    let t = load(
        "[[noise]]\nname = \"tick-irq\"\nkind = \"irq\"\ncpus = \"0-3\"\nrate_hz = 250\nduration_p50 = \"2us\"\nduration_p99 = \"20us\"\n[[noise]]\nkind = \"steal\"\nrate_hz = 1.5\nduration_p50 = \"300us\"\nduration_max = \"5ms\"\n",
    );
    assert_eq!(t.noise.len(), 2);
    let (a, b) = (&t.noise[0], &t.noise[1]);
    assert_eq!((a.name.as_str(), a.kind, a.cpus.len(), a.rate_hz), ("tick-irq", NoiseKind::Irq, 4, 250.0));
    assert_eq!((a.p50_ns, a.p99_ns, a.max_ns), (2_000, 20_000, 2_000_000), "max defaults to 100 x p99");
    assert_eq!((b.name.as_str(), b.kind, b.cpus.len()), ("noise1", NoiseKind::Steal, 16));
    assert_eq!((b.p50_ns, b.p99_ns, b.max_ns), (300_000, 300_000, 5_000_000));
}

#[test]
fn bad_noise_is_located() {
    let cases = [
        ("kind = \"kthread\"\nrate_hz = 1\nduration_p50 = \"1us\"\n", "kernel threads are tasks"),
        ("rate_hz = 1\nduration_p50 = \"1us\"\n", "has no kind"),
        ("kind = \"irq\"\nduration_p50 = \"1us\"\n", "has no rate_hz"),
        ("kind = \"irq\"\nrate_hz = -3\nduration_p50 = \"1us\"\n", "rate_hz = -3 is out of range"),
        ("kind = \"irq\"\nrate_hz = 1\n", "has no duration_p50"),
        ("kind = \"irq\"\nrate_hz = 1\nduration_p50 = \"5us\"\nduration_p99 = \"1us\"\n", "below duration_p50"),
        ("kind = \"irq\"\nrate_hz = 1\ncpus = \"0-16\"\nduration_p50 = \"1us\"\n", "names CPU 16"),
        ("kind = \"irq\"\nrate_hz = 100000\nduration_p50 = \"10us\"\n", "would take 100 % of each CPU"),
    ];
    for (body, needle) in cases {
        let e = err(&format!("[[noise]]\n{body}"));
        assert!(e.message.contains(needle), "{body}: {e}");
        assert!(e.line >= 8, "{body}: located in the [[noise]] entry: {e}");
    }
}

#[test]
fn flat_idle_keys_and_idle_states_are_not_both_given() {
    let e = err("[costs]\nidle_exit_ns = \"2us\"\n[idle]\n[[idle.states]]\nexit_latency = \"1us\"\n");
    assert_eq!(e.line, 9, "at idle_exit_ns: {e}");
    assert!(e.message.contains("with [idle], give each state's exit_latency and polling instead"), "{e}");
    let e = err("[costs]\nidle_polling = true\n[idle]\n[[idle.states]]\nexit_latency = \"1us\"\n");
    assert!(e.message.contains("idle_polling"), "{e}");
}

#[test]
fn ipi_send_curve_serves_idle_targets_and_the_flat_figure_busy_ones() {
    let t = load("[costs.kernel]\nipi_send = \"9us\"\nipi_send_by_idle = [ { idle = \"5us\", p50 = \"1us\", p99 = \"3us\" }, { idle = \"1ms\", p50 = \"11us\" } ]\n");
    let k = &t.costs.kernel;
    assert_eq!(k.ipi_send_by_idle.len(), 2);
    assert_eq!(k.ipi_send_by_idle[1].p99_ns, 11_000, "p99 defaults to p50");
    assert_eq!(k.ipi_send_after(None), 9_000, "a busy target: the flat figure");
    assert_eq!(k.ipi_send_after(Some(0)), 1_000, "the first point holds before it");
    assert_eq!(k.ipi_send_after(Some(502_500)), 6_000, "halfway between the points");
    assert_eq!(k.ipi_send_after(Some(20_000_000)), 11_000, "the last point holds beyond");
    let flat = load("[costs.kernel]\nipi_send = \"9us\"\n");
    assert_eq!(flat.costs.kernel.ipi_send_after(Some(1_000)), 9_000, "no curve: the flat figure for idle targets too");
    let e = err(
        "[costs.kernel]\nipi_send_by_idle = [ { idle = \"1ms\", p50 = \"3us\" }, { idle = \"5us\", p50 = \"4us\" } ]\n",
    );
    assert_eq!((e.line, e.message.contains("ipi_send_by_idle points must be sorted by `idle`")), (9, true), "{e}");
    let e = err("[costs.kernel]\nipi_send_by_idle = [ { idle = \"5us\", p50 = \"3us\", p99 = \"2us\" } ]\n");
    assert!(e.message.contains("ipi_send_by_idle: p99 is below p50"), "{e}");
    let e = err("[costs.kernel]\nipi_send_by_idle = [ { idle = \"5us\", p05 = \"3us\" } ]\n");
    assert!(e.message.contains("p05"), "{e}");
}
