//! The hardware model through the whole simulator: what an idle CPU's state
//! makes a wakeup cost (haltpoll's adaptive poll window, menu's choice of
//! C-state, a measured exit curve), IPIs by distance, and seeded noise.

use schedlab_analysis::{analyze, AnalysisOptions};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_trace::{EventKind, UserOp};
use std::path::Path;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str("inline.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn sim(s: &Scenario, seed: u64) -> SimResult {
    simulate(s, &SimOptions { seed: Some(seed), check_invariants: Some(true), ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn handoffs(r: &SimResult, comm: &str) -> Vec<u64> {
    let m = analyze(&r.trace, &AnalysisOptions { end_ts: Some(r.end_ns), ..Default::default() });
    m.tasks.iter().find(|t| t.comm == comm).unwrap().handoff_sketch.sorted_samples()
}

fn without_ipi(r: &SimResult, cpu: u32) -> usize {
    r.trace
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SchedWakeIdleWithoutIpi { cpu: c } if c == cpu))
        .count()
}

/// A machine file next to nothing: written to a temp dir with the scenario.
/// The scenario reads the file while it is parsed, so the directory (one per
/// call, removed when `dir` drops, a panic included) need not outlive this.
fn with_topology(topology: &str, body: &str) -> Scenario {
    let dir = tempfile::Builder::new().prefix("schedlab-hw-").tempdir().unwrap();
    std::fs::write(dir.path().join("m.toml"), topology).unwrap();
    let text = format!("topology = \"m.toml\"\n{body}");
    Scenario::from_toml_str("inline.toml", &text, dir.path()).unwrap_or_else(|e| panic!("{e}"))
}

const MACHINE: &str = "hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 2\n[costs]\nipi_ns = \"5us\"\ncontext_switch_ns = \"2us\"\nmigration_cold_ns = 0\n";

/// A kicker on CPU 0 wakes a sleeper on CPU 1 after `gap` of CPU 1 idling.
fn kick_after(gap: &str) -> String {
    format!(
        r#"duration = "300ms"
[[thread]]
name = "sleeper"
affinity = "1"
program = [ {{ wait = "kick" }}, {{ run = "20us" }}, {{ signal = "back" }} ]
[[thread]]
name = "kicker"
affinity = "0"
program = [ {{ run = "{gap}" }}, {{ signal = "kick" }}, {{ wait = "back" }} ]
"#
    )
}

const HALTPOLL: &str = "[idle]\ngovernor = \"haltpoll\"\n[[idle.states]]\nname = \"poll\"\nexit_latency = 0\npolling = true\n[[idle.states]]\nname = \"halt\"\nexit_latency = \"10us\"\n";

#[test]
fn haltpoll_guest_wakes_short_idles_by_flag_and_long_ones_by_ipi() {
    // 30 us idles fit the poll window once it has grown: no IPI, no exit.
    let short = with_topology(&format!("{MACHINE}{HALTPOLL}"), &kick_after("30us"));
    let r = sim(&short, 1);
    let h = handoffs(&r, "sleeper");
    let polled = without_ipi(&r, 1);
    assert!(h.len() > 1000 && polled >= h.len() - 2, "{polled} of {} wakeups without an IPI", h.len());
    let slow: Vec<_> = h.iter().enumerate().filter(|(_, &x)| x != 2_000).collect();
    assert!(slow.len() <= 2, "polled: only the switch, but {slow:?}");

    // 1 ms idles outlast the 200 us maximum: the window shrinks to 0 and a
    // wakeup takes the IPI and the halt's exit — except the few that come
    // just after some other interrupt (the idle balancer's kick) woke the CPU
    // and it went back to polling.
    let long = with_topology(&format!("{MACHINE}{HALTPOLL}"), &kick_after("1ms"));
    let r = sim(&long, 1);
    let h = handoffs(&r, "sleeper");
    let slow = h.iter().filter(|&&x| x == 5_000 + 10_000 + 2_000).count();
    assert!(slow * 100 >= h.len() * 95, "{slow} of {} wakeups paid IPI + exit", h.len());
    assert!(without_ipi(&r, 1) * 100 <= h.len() * 5);
}

#[test]
fn a_measured_exit_curve_makes_long_idles_dearer() {
    let curve = "[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency_by_idle = [ { idle = \"0us\", p50 = \"4us\" }, { idle = \"200us\", p50 = \"4us\" }, { idle = \"1ms\", p50 = \"20us\" } ]\n";
    let median = |gap: &str| {
        let r = sim(&with_topology(&format!("{MACHINE}{curve}"), &kick_after(gap)), 3);
        let mut h = handoffs(&r, "sleeper");
        h.sort_unstable();
        h[h.len() / 2]
    };
    assert_eq!(median("50us"), 5_000 + 4_000 + 2_000);
    // 2 ms idle: past the last point, 20 us.
    assert_eq!(median("2ms"), 5_000 + 20_000 + 2_000);
}

#[test]
fn a_timer_wakeup_pays_the_timer_curve_and_an_eventfd_wakeup_the_ipi_curve() {
    // A vCPU's halt: after 200 us or more of idle, an IPI's exit costs 15 us
    // but the CPU's own timer 25 us (the host's hrtimer wakes the vCPU).
    let halt = "[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency_by_idle = [ { idle = \"0us\", p50 = \"1us\" }, { idle = \"200us\", p50 = \"15us\" } ]\ntimer_exit_latency_by_idle = [ { idle = \"0us\", p50 = \"1us\" }, { idle = \"200us\", p50 = \"25us\" } ]\n";
    let machine = format!("{MACHINE}{halt}");
    // The eventfd wakeup after 1 ms of idle: IPI + the IPI curve's exit + switch.
    let mut h = handoffs(&sim(&with_topology(&machine, &kick_after("1ms")), 3), "sleeper");
    h.sort_unstable();
    assert_eq!(h[h.len() / 2], 5_000 + 15_000 + 2_000);
    // The timer wakeup after 1 ms of idle: SCHED_FIFO sleeps have no slack, so
    // each period is the sleep, the timer curve's exit, the switch and the run.
    let body = "duration = \"100ms\"\n[[thread]]\nname = \"s\"\npolicy = \"SCHED_FIFO\"\naffinity = \"1\"\nprogram = [ { sleep = \"1ms\" }, { run = \"10us\" } ]\n";
    let r = sim(&with_topology(&machine, body), 3);
    let ts: Vec<u64> =
        r.trace.events.iter().filter(|e| matches!(e.kind, EventKind::SchedWaking { .. })).map(|e| e.ts).collect();
    let mut periods: Vec<u64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(periods.len() > 50);
    periods.sort_unstable();
    assert_eq!(periods[periods.len() / 2], 1_000_000 + 25_000 + 2_000 + 10_000);
}

#[test]
fn menu_picks_a_shallow_state_for_short_idles_and_a_deep_one_for_long() {
    let acpi = "[idle]\ngovernor = \"menu\"\n[[idle.states]]\nname = \"POLL\"\nexit_latency = 0\npolling = true\n[[idle.states]]\nname = \"C1\"\nexit_latency = \"1us\"\ntarget_residency = \"2us\"\npolling = true\n[[idle.states]]\nname = \"C3\"\nexit_latency = \"100us\"\ntarget_residency = \"200us\"\n";
    let median = |gap: &str| {
        let r = sim(&with_topology(&format!("{MACHINE}{acpi}"), &kick_after(gap)), 5);
        let mut h = handoffs(&r, "sleeper");
        h.sort_unstable();
        (h[h.len() / 2], without_ipi(&r, 1) * 2 > h.len())
    };
    // 20 us idles: menu learns them, C1 (MWAIT: polled, 1 us exit).
    assert_eq!(median("20us"), (1_000 + 2_000, true));
    // 3 ms idles: C3, an IPI and its 100 us exit.
    assert_eq!(median("3ms"), (5_000 + 100_000 + 2_000, false));
}

#[test]
fn ipis_cost_more_across_packages() {
    let machine = "hz = 1000\npreempt = \"full\"\n[layout]\npackages = 2\ncores_per_llc = 1\n[costs]\ncontext_switch_ns = \"2us\"\nidle_exit_ns = 0\n[costs.numa]\nipi = \"9us\"\nmigration_cold = 0\n";
    let body = kick_after("100us").replace("affinity = \"1\"", "affinity = \"1\"\n");
    let r = sim(&with_topology(machine, &body), 1);
    let h = handoffs(&r, "sleeper");
    assert!(h.iter().all(|&x| x == 9_000 + 2_000), "CPU 0 to CPU 1 crosses packages: {:?}", &h[..4]);
}

#[test]
fn noise_is_seeded_delays_work_and_leaves_quiet_cpus_alone() {
    let noisy =
        "[[noise]]\nkind = \"irq\"\ncpus = \"1\"\nrate_hz = 2000\nduration_p50 = \"5us\"\nduration_p99 = \"50us\"\n";
    let s = with_topology(&format!("{MACHINE}{noisy}"), &kick_after("100us"));
    let (a, b, c) = (sim(&s, 7), sim(&s, 7), sim(&s, 8));
    assert_eq!(a.trace.events, b.trace.events, "same seed, same trace, noise included");
    assert_ne!(a.trace.events, c.trace.events);
    let quiet = sim(&with_topology(MACHINE, &kick_after("100us")), 7);
    let mut hq = handoffs(&quiet, "sleeper");
    let mut hn = handoffs(&a, "sleeper");
    hq.sort_unstable();
    hn.sort_unstable();
    // Without noise every handoff is identical; with it the tail grows by
    // interrupts that land on the wakee's CPU at the wrong moment.
    assert_eq!(hq.first(), hq.last());
    let p99 = hn[hn.len() * 99 / 100];
    assert!(
        p99 > hq[0] + 2_000 && *hn.last().unwrap() > hq[0] + 20_000,
        "p99 {p99}, max {:?} vs quiet {}",
        hn.last(),
        hq[0]
    );
    // The kicker's CPU has no noise: its 100 us bursts take 100 us.
    let m = analyze(&a.trace, &AnalysisOptions { end_ts: Some(a.end_ns), ..Default::default() });
    let k = m.tasks.iter().find(|t| t.comm == "kicker").unwrap();
    let mq = analyze(&quiet.trace, &AnalysisOptions { end_ts: Some(quiet.end_ns), ..Default::default() });
    let kq = mq.tasks.iter().find(|t| t.comm == "kicker").unwrap();
    assert!(k.runtime_ns >= kq.runtime_ns * 95 / 100);
    // --no-noise: the noisy machine simulated quiet is the quiet machine.
    let opts = SimOptions { seed: Some(7), no_noise: true, ..Default::default() };
    let hushed = simulate(&s, &opts).unwrap();
    assert_eq!(handoffs(&hushed, "sleeper"), handoffs(&quiet, "sleeper"));
}

#[test]
fn a_fair_sleep_ends_at_its_timer_slack_and_an_rt_sleep_on_time() {
    let body = |policy: &str| {
        format!("topology = \"smt-2x2\"\nduration = \"100ms\"\n[[thread]]\nname = \"s\"\npolicy = \"{policy}\"\naffinity = \"1\"\nprogram = [ {{ sleep = \"1ms\" }}, {{ run = \"10us\" }} ]\n")
    };
    let wakes = |policy: &str| {
        let r = sim(&scenario(&body(policy)), 1);
        let ts: Vec<u64> =
            r.trace.events.iter().filter(|e| matches!(e.kind, EventKind::SchedWaking { .. })).map(|e| e.ts).collect();
        ts.windows(2).map(|w| w[1] - w[0]).collect::<Vec<u64>>()
    };
    // smt-2x2 has no [idle]: one state, with the preset's flat exit latency.
    let t = schedlab_topology::Topology::preset("smt-2x2").unwrap();
    let (exit, cs) = (t.idle.states[0].exit_latency_ns, t.costs.context_switch_ns);
    let other = wakes("SCHED_OTHER");
    assert!(other.len() > 50 && other.iter().all(|&d| d == 1_050_000 + 10_000 + exit + cs), "{:?}", &other[..3]);
    let fifo = wakes("SCHED_FIFO");
    assert!(fifo.iter().all(|&d| d == 1_000_000 + 10_000 + exit + cs), "{:?}", &fifo[..3]);
}

#[test]
fn a_timer_pays_its_interrupt_delivery_on_a_busy_cpu_and_the_idle_exit_on_top() {
    let machine = "hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 2\n[costs]\ncontext_switch_ns = \"2us\"\ntimer_irq_ns = \"7us\"\n[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency = \"3us\"\n";
    let body = |hog: bool| {
        let mut b = String::from("duration = \"50ms\"\n[[thread]]\nname = \"c\"\npolicy = \"SCHED_FIFO\"\naffinity = \"1\"\nprogram = [ { sleep = \"1ms\" }, { run = \"10us\" } ]\n");
        if hog {
            b.push_str("[[thread]]\nname = \"hog\"\naffinity = \"1\"\nprogram = [ { run = \"1s\" } ]\n");
        }
        b
    };
    let periods = |hog: bool| {
        let r = sim(&with_topology(machine, &body(hog)), 1);
        let ts: Vec<u64> = r
            .trace
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SchedWaking { pid, .. } if r.trace.table.tasks.get(&pid).is_some_and(|t| t.comm == "c")))
            .map(|e| e.ts)
            .collect();
        ts.windows(2).map(|w| w[1] - w[0]).collect::<Vec<u64>>()
    };
    // Each period: the 1 ms sleep, the timer's delivery (7 us), the switch
    // in (2 us) and the 10 us of work; the idle CPU adds HLT's 3 us exit.
    let busy = periods(true);
    assert!(busy.len() > 40 && busy.iter().all(|&d| d == 1_000_000 + 7_000 + 2_000 + 10_000), "{:?}", &busy[..3]);
    let idle = periods(false);
    assert!(
        idle.len() > 40 && idle.iter().all(|&d| d == 1_000_000 + 7_000 + 3_000 + 2_000 + 10_000),
        "{:?}",
        &idle[..3]
    );
}

#[test]
fn a_timer_interrupts_tail_separates_the_wakeup_from_the_switch_and_costs_the_interrupted_task() {
    let machine = |tail: &str| {
        let (tail, idle_tail) = tail.split_once('+').unwrap_or((tail, "0us"));
        format!("hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 2\n[costs]\ncontext_switch_ns = \"2us\"\ntimer_irq_ns = \"7us\"\ntimer_irq_exit_ns = \"{tail}\"\nidle_exit_tail_ns = \"{idle_tail}\"\n[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency = \"3us\"\n")
    };
    let body = |hog: bool| {
        let mut b = String::from("duration = \"50ms\"\n[[thread]]\nname = \"c\"\npolicy = \"SCHED_FIFO\"\naffinity = \"1\"\nprogram = [ { sleep = \"1ms\" }, { run = \"10us\" } ]\n");
        if hog {
            b.push_str("[[thread]]\nname = \"hog\"\naffinity = \"1\"\nprogram = [ { run = \"10us\" } ]\n");
        }
        b
    };
    // (sched_wakeup -> switch into c) gaps, the periods between c's wakeups,
    // and the hog's run time.
    let run = |tail: &str, hog: bool| {
        let r = sim(&with_topology(&machine(tail), &body(hog)), 1);
        let pid_of = |name: &str| r.trace.table.tasks.iter().find(|(_, t)| t.comm == name).map(|(p, _)| *p);
        let c = pid_of("c").unwrap();
        let (mut woke, mut gaps, mut wakes) = (None, Vec::new(), Vec::new());
        for e in &r.trace.events {
            match e.kind {
                EventKind::SchedWakeup { pid, .. } if pid == c => {
                    woke = Some(e.ts);
                    wakes.push(e.ts);
                }
                EventKind::SchedSwitch { next_pid, .. } if next_pid == c => {
                    if let Some(w) = woke.take() {
                        gaps.push(e.ts - w);
                    }
                }
                _ => {}
            }
        }
        let periods: Vec<u64> = wakes.windows(2).map(|w| w[1] - w[0]).collect();
        let hog_loops = pid_of("hog").map(|h| {
            r.trace
                .events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::User { pid, op: UserOp::LoopEnd { .. } } if pid == h))
                .count() as u64
        });
        (gaps, periods, hog_loops)
    };
    for hog in [false, true] {
        let (gaps, periods, _) = run("5us", hog);
        assert!(gaps.len() > 40 && gaps.iter().all(|&g| g == 5_000), "hog {hog}: {:?}", &gaps[..3]);
        // The tail comes on top of delivery, exit and switch.
        let exit = if hog { 0 } else { 3_000 };
        let want = 1_000_000 + 7_000 + exit + 5_000 + 2_000 + 10_000;
        assert!(periods.iter().all(|&d| d == want), "hog {hog}: {:?}", &periods[..3]);
        let (gaps0, _, _) = run("0us", hog);
        assert!(gaps0.iter().all(|&g| g == 0), "no tail: the switch follows the wakeup at once");
    }
    // An idle exit's held-back end (2 of HLT's 3 us) moves from before the
    // wakeup to after it; the period stays; a tail longer than the exit
    // takes all of it and no more.
    let (gaps, periods, _) = run("5us+2us", false);
    assert!(gaps.iter().all(|&g| g == 7_000), "{:?}", &gaps[..3]);
    assert!(periods.iter().all(|&d| d == 1_000_000 + 7_000 + 3_000 + 5_000 + 2_000 + 10_000), "{:?}", &periods[..3]);
    let (gaps, periods, _) = run("5us+9us", false);
    assert!(gaps.iter().all(|&g| g == 8_000), "{:?}", &gaps[..3]);
    assert!(periods.iter().all(|&d| d == 1_000_000 + 7_000 + 3_000 + 5_000 + 2_000 + 10_000), "{:?}", &periods[..3]);
    let (gaps, _, _) = run("5us+2us", true);
    assert!(gaps.iter().all(|&g| g == 5_000), "a busy CPU has no idle exit to hold back");
    // The interrupted hog loses the tail on every timer: 5 us of its
    // 10 us loops each time; within two loops (the run's last, partial
    // loop, and the loop c's fewer, longer periods give back).
    let (_, periods, with_tail) = run("5us", true);
    let (_, _, without) = run("0us", true);
    let lost = without.unwrap() - with_tail.unwrap();
    let timers = periods.len() as u64;
    assert!(lost + 2 >= timers / 2 && lost <= timers / 2 + 2, "the hog lost {lost} loops over {timers} timers");
}

#[test]
fn an_absolute_timer_keeps_the_grid_and_skips_missed_boundaries() {
    let body = |run: &str| {
        format!("topology = \"smt-2x2\"\nduration = \"50ms\"\n[[thread]]\nname = \"c\"\npolicy = \"SCHED_FIFO\"\naffinity = \"1\"\nprogram = [ {{ timer = \"1ms\" }}, {{ run = \"{run}\" }} ]\n")
    };
    let wakes = |run: &str| {
        let r = sim(&scenario(&body(run)), 1);
        r.trace
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SchedWaking { .. }))
            .map(|e| e.ts)
            .collect::<Vec<u64>>()
    };
    // Boundaries 1 ms apart from the first `timer`: every wakeup is on the
    // grid, whatever the 300 us of work in between (a relative sleep would
    // drift by the work and the wakeup latency every period).
    let w = wakes("300us");
    assert!(w.len() >= 45);
    for (k, &t) in w.iter().enumerate() {
        assert_eq!(t - w[0], k as u64 * 1_000_000, "wakeup {k}");
    }
    // 1.5 ms of work per period: the boundary after each run has passed, so
    // the next one is taken (2 ms apart), not a burst of catch-up wakeups.
    let w = wakes("1.5ms");
    assert!(w.windows(2).all(|p| p[1] - p[0] == 2_000_000), "{:?}", &w[..4]);
}

#[test]
fn syscalls_markers_and_tracepoints_cost_their_threads_cpu_time() {
    // One CPU, two threads handing a token back and forth through eventfds.
    let machine = |costs: &str| {
        format!("hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 1\n[costs]\ncontext_switch_ns = \"1us\"\nidle_exit_ns = 0\n{costs}")
    };
    let body = r#"duration = "20ms"
[[thread]]
name = "ping"
program = [ { signal = "a" }, { wait = "b" } ]
[[thread]]
name = "pong"
program = [ { wait = "a" }, { signal = "b" } ]
"#;
    // ns per round trip, and captured tracepoints per round trip.
    let loops = |costs: &str, traced: bool| {
        let s = with_topology(&machine(costs), body);
        let opts = SimOptions { seed: Some(1), traced, check_invariants: Some(true), ..Default::default() };
        let r = simulate(&s, &opts).unwrap();
        let trips = r
            .trace
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::User { op: schedlab_trace::UserOp::LoopEnd { .. }, .. }))
            .count() as f64
            / 2.0;
        let tps = r.trace.events.iter().filter(|e| e.kind.is_captured_tracepoint()).count() as f64;
        (r.end_ns as f64 / trips, tps / trips)
    };
    let costs = "syscall_ns = \"200ns\"\ntrace_marker_ns = \"300ns\"\ntracepoint_ns = \"100ns\"\n";
    let (free, _) = loops("", false);
    let (sys, _) = loops(costs, false);
    let (traced, tps) = loops(costs, true);
    // Per round trip: two switches (2 us); four syscalls (two writes, two
    // reads: 0.8 us); traced, six markers (two signals, two wait_dones, two
    // loop ends: 1.8 us) and 100 ns per captured tracepoint the trace holds.
    assert!((free - 2_000.0).abs() < 50.0, "free: {free} ns per round trip");
    assert!((sys - 2_800.0).abs() < 50.0, "syscalls: {sys}");
    assert!(tps >= 3.0, "a waking and a switch per handoff at least: {tps}");
    let expect = 2_800.0 + 1_800.0 + 100.0 * tps;
    assert!((traced - expect).abs() < 60.0, "traced: {traced}, expected {expect}");
}

#[test]
fn a_busy_only_source_leaves_idle_cpus_alone() {
    // A 1 kHz "tick" of 20 us on CPU 1, busy-only: the sleeper's CPU idles
    // between kicks, so its wakeups never meet it, while its 20 us of work
    // after each wakeup sometimes does.
    let tick = "[[noise]]\nname = \"tick\"\nkind = \"irq\"\ncpus = \"1\"\nrate_hz = 1000\nduration_p50 = \"20us\"\nbusy_only = true\n";
    let always = tick.replace("busy_only = true\n", "");
    let quiet = handoffs(&sim(&with_topology(MACHINE, &kick_after("100us")), 2), "sleeper");
    let busy_only = handoffs(&sim(&with_topology(&format!("{MACHINE}{tick}"), &kick_after("100us")), 2), "sleeper");
    let both = handoffs(&sim(&with_topology(&format!("{MACHINE}{always}"), &kick_after("100us")), 2), "sleeper");
    let odd: Vec<_> = busy_only.iter().filter(|h| **h != quiet[0]).collect();
    // (One may meet a tick that began while the CPU was still busy.)
    assert!(odd.len() * 100 <= busy_only.len(), "the idle CPU's wakeups are untouched: {odd:?} vs {}", quiet[0]);
    assert!(both.iter().any(|h| *h > quiet[0] + 10_000), "without busy_only an interrupt lands on the idle CPU");
}

#[test]
fn the_kernels_own_paths_take_cpu_time_from_the_threads() {
    // Ping-pong on one CPU, which never idles: its time is the switches
    // (2 us each) plus, with [costs.kernel], 1 us per enqueue (each
    // wakeup) and per dequeue (each block: NO_DELAY_DEQUEUE leaves no task
    // delayed to be woken in place). The costs change the pattern (who
    // preempts whom), so both runs are checked against their own counts.
    let body = "duration = \"20ms\"\nfeatures = [\"NO_DELAY_DEQUEUE\"]\n[[thread]]\nname = \"ping\"\naffinity = \"1\"\nprogram = [ { signal = \"a\" }, { wait = \"b\" } ]\n[[thread]]\nname = \"pong\"\naffinity = \"1\"\nprogram = [ { wait = \"a\" }, { signal = \"b\" } ]\n";
    let check = |kernel: &str, path_ns: u64| {
        let r = sim(&with_topology(&format!("{MACHINE}{kernel}"), body), 1);
        let on1: Vec<&schedlab_trace::Event> = r.trace.events.iter().filter(|e| e.cpu == 1).collect();
        let switches: Vec<u64> =
            on1.iter().filter(|e| matches!(e.kind, EventKind::SchedSwitch { .. })).map(|e| e.ts).collect();
        // From the 10th switch to the last, count what the CPU did.
        let (from, to) = (switches[10], switches[switches.len() - 1]);
        let inside = |e: &&&schedlab_trace::Event| e.ts > from && e.ts <= to;
        let n_switch = on1.iter().filter(inside).filter(|e| matches!(e.kind, EventKind::SchedSwitch { .. })).count();
        let n_wake = on1.iter().filter(inside).filter(|e| matches!(e.kind, EventKind::SchedWakeup { .. })).count();
        let n_block = on1
            .iter()
            .filter(inside)
            .filter(|e| {
                matches!(e.kind, EventKind::SchedSwitch { prev_state: schedlab_trace::PrevState::Sleeping, .. })
            })
            .count();
        let predicted = n_switch as u64 * 2_000 + (n_wake + n_block) as u64 * path_ns;
        let took = to - from;
        assert!(
            took.abs_diff(predicted) <= took / 100,
            "{kernel}: took {took} ns, predicted {predicted} ({n_switch} switches, {n_wake} wakeups, {n_block} blocks)"
        );
        n_switch
    };
    let free = check("", 0);
    let costly = check("[costs.kernel]\nenqueue = \"1us\"\ndequeue = \"1us\"\n", 1_000);
    assert!(costly < free, "the paths' time leaves fewer switches in the window: {costly} vs {free}");
}

#[test]
fn a_wakers_ipi_send_delays_its_own_next_op() {
    // The kicker on CPU 0 signals the sleeper, halted on CPU 1 (an IPI),
    // then waits. The kernel returns from the signal only after sending
    // the IPI, so the kicker blocks that much later: the gap from each
    // sched_waking of the sleeper to the kicker's next switch out of CPU 0
    // grows by ipi_send.
    let halt = "[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency = \"1us\"\n";
    let gaps = |kernel: &str| -> Vec<u64> {
        let r = sim(&with_topology(&format!("{MACHINE}{halt}{kernel}"), &kick_after("50us")), 1);
        let sleeper = r.threads.iter().find(|t| t.name == "sleeper").unwrap().pid;
        let mut out = Vec::new();
        let mut waking = None;
        for e in r.trace.in_time_order().iter() {
            match e.kind {
                EventKind::SchedWaking { pid, .. } if pid == sleeper && e.cpu == 0 => waking = Some(e.ts),
                EventKind::SchedSwitch { prev_state: schedlab_trace::PrevState::Sleeping, .. } if e.cpu == 0 => {
                    if let Some(w) = waking.take() {
                        out.push(e.ts - w);
                    }
                }
                _ => {}
            }
        }
        out
    };
    let (free, costly) = (gaps(""), gaps("[costs.kernel]\nipi_send = \"10us\"\n"));
    assert!(free.len() > 50 && costly.len() > 50, "{} and {} handoffs", free.len(), costly.len());
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (f, c) = (median(free), median(costly));
    assert_eq!(c - f, 10_000, "the block comes 10 us later: {f} ns without the cost, {c} ns with it");
}

#[test]
fn an_ipi_to_a_halted_cpu_costs_its_sender_by_how_long_the_cpu_idled() {
    // `ipi_send_by_idle`: 2 us onto a CPU that just went idle, 22 us after
    // 1 ms, linear between; the flat 50 us is for busy targets only. Each
    // gap from the sleeper's sched_waking to the kicker's switch out of
    // CPU 0 is the signal's fixed path (what it is without any cost) plus
    // the curve at how long CPU 1 had idled, read from the trace.
    let halt = "[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency = \"1us\"\n";
    let curve = "[costs.kernel]\nipi_send = \"50us\"\nipi_send_by_idle = [ { idle = \"0us\", p50 = \"2us\", p99 = \"4us\" }, { idle = \"1ms\", p50 = \"22us\" } ]\n";
    // (CPU 1's idle at the waking, waking to the kicker's block) per handoff.
    let gaps = |kernel: &str, gap: &str| -> Vec<(u64, u64)> {
        let r = sim(&with_topology(&format!("{MACHINE}{halt}{kernel}"), &kick_after(gap)), 1);
        let sleeper = r.threads.iter().find(|t| t.name == "sleeper").unwrap().pid;
        let (mut out, mut waking, mut idle_from) = (Vec::new(), None, None);
        for e in r.trace.in_time_order().iter() {
            match e.kind {
                EventKind::SchedSwitch { next_pid: 0, .. } if e.cpu == 1 => idle_from = Some(e.ts),
                EventKind::SchedWaking { pid, .. } if pid == sleeper && e.cpu == 0 => {
                    waking = idle_from.map(|i| (e.ts, e.ts - i));
                }
                EventKind::SchedSwitch { prev_state: schedlab_trace::PrevState::Sleeping, .. } if e.cpu == 0 => {
                    if let Some((w, idle)) = waking.take() {
                        out.push((idle, e.ts - w));
                    }
                }
                _ => {}
            }
        }
        out
    };
    let base = gaps("", "50us");
    assert!(base.len() > 50 && base.iter().all(|g| g.1 == base[0].1), "a fixed path without costs: {base:?}");
    let fixed = base[0].1;
    for gap in ["50us", "500us"] {
        let h = gaps(curve, gap);
        assert!(h.len() > 50, "{gap}: {} handoffs", h.len());
        for &(idle, took) in &h {
            let want = 2_000 + 20_000 * idle.min(1_000_000) / 1_000_000;
            assert!(
                (took - fixed).abs_diff(want) <= 10,
                "{gap}: after {idle} ns idle the send took {} ns, the curve says {want}",
                took - fixed
            );
        }
    }
    let extra = |gap| gaps(curve, gap)[10].1 - fixed;
    let (short, long) = (extra("50us"), extra("500us"));
    assert!(short < long && long < 50_000, "50 us idles {short} ns, 500 us idles {long} ns, both below the busy 50 us");
}

#[test]
fn a_remote_wakeup_lands_after_its_selection_time() {
    // The sleeper may run on CPUs 1-3, so each kick runs
    // select_task_rq_fair() on CPU 0. With `select` = 3 us the sleeper is
    // queued on its CPU (the Ttwu event) 3 us after sched_waking, and its
    // handoff grows by as much; without it, at once.
    let machine = MACHINE.replace("cores_per_llc = 2", "cores_per_llc = 4");
    let body = kick_after("100us").replace("affinity = \"1\"", "affinity = \"1-3\"");
    let gaps = |kernel: &str| -> (Vec<u64>, Vec<u64>) {
        let r = sim(&with_topology(&format!("{machine}{kernel}"), &body), 1);
        let sleeper = r.threads.iter().find(|t| t.name == "sleeper").unwrap().pid;
        let mut waking = None;
        let mut gaps = Vec::new();
        for e in r.trace.in_time_order().iter() {
            match e.kind {
                EventKind::SchedWaking { pid, .. } if pid == sleeper => waking = Some(e.ts),
                EventKind::Ttwu { pid, .. } if pid == sleeper => gaps.extend(waking.take().map(|w| e.ts - w)),
                _ => {}
            }
        }
        (gaps, handoffs(&r, "sleeper"))
    };
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (free, free_handoffs) = gaps("");
    let (slow, slow_handoffs) = gaps("[costs.kernel]\nselect = \"3us\"\n");
    assert!(free.len() > 100 && slow.len() > 100, "{} and {} wakeups", free.len(), slow.len());
    assert!(free.iter().all(|g| *g == 0), "queued at once without a selection cost: {:?}", &free[..5]);
    assert!(slow.iter().all(|g| *g == 3_000), "queued 3 us later: {:?}", &slow[..5]);
    let (f, s) = (median(free_handoffs), median(slow_handoffs));
    assert_eq!(s - f, 3_000, "the handoff grows by the selection: {f} ns without, {s} ns with");
}

#[test]
fn an_ipis_receipt_delays_the_task_it_wakes_but_a_polled_flag_costs_nothing() {
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let handoff = |idle: &str, kernel: &str, gap: &str| {
        let r = sim(&with_topology(&format!("{MACHINE}{idle}{kernel}"), &kick_after(gap)), 1);
        let h = handoffs(&r, "sleeper");
        assert!(h.len() > 50, "{} handoffs", h.len());
        (median(h), without_ipi(&r, 1))
    };
    let receive = "[costs.kernel]\nipi_receive = \"10us\"\n";
    // A halted CPU 1 takes the IPI: the sleeper's first op waits for it.
    let halt = "[idle]\ngovernor = \"none\"\n[[idle.states]]\nname = \"HLT\"\nexit_latency = \"1us\"\n";
    let ((free, _), (costly, _)) = (handoff(halt, "", "50us"), handoff(halt, receive, "50us"));
    assert_eq!(costly - free, 10_000, "the handoff is the receipt longer: {free} ns, then {costly} ns");
    // haltpoll's poll window sees short idles' flags, with no interrupt.
    let ((free, flags), (costly, _)) = (handoff(HALTPOLL, "", "20us"), handoff(HALTPOLL, receive, "20us"));
    assert!(flags > 50, "woken by flag: {flags}");
    assert_eq!(costly, free, "a polled wakeup takes no IPI");
}
