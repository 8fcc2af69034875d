//! Energy Aware Scheduling through the whole simulator on the RK3399 preset
//! (4 Cortex-A53 of capacity 381 in one performance domain, 2 Cortex-A72 of
//! capacity 1024 in the other, the device tree's energy model, schedutil):
//! a small periodic task is placed on a little CPU by
//! `find_energy_efficient_cpu()`, where without EAS it stays on the big CPU
//! it started on; a CPU hog still ends up on a big CPU (it makes its CPU
//! overutilized and misfit, and misfit balancing moves it).

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_topology::Topology;
use schedlab_trace::{BalanceKind, EventKind};
use std::path::Path;

const MS: u64 = 1_000_000;

fn rk3399(eas: bool) -> Topology {
    let mut t = Topology::preset("rk3399").unwrap();
    t.sched_energy_aware = eas;
    t
}

fn run(text: &str, eas: bool) -> SimResult {
    let s = Scenario::from_toml_str("inline.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions { topology: Some(rk3399(eas)), no_noise: true, ..Default::default() };
    simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"))
}

fn pid_of(r: &SimResult, name: &str) -> i32 {
    r.threads.iter().find(|t| t.name == name).unwrap().pid
}

/// Each time `pid` is switched in: (time, CPU).
fn switch_ins(r: &SimResult, pid: i32) -> Vec<(u64, usize)> {
    let ins = r.trace.events.iter().filter_map(|e| match e.kind {
        EventKind::SchedSwitch { next_pid, .. } if next_pid == pid => Some((e.ts, e.cpu as usize)),
        _ => None,
    });
    ins.collect()
}

/// The balancer's moves of `pid`: (time, from, to, which balance).
fn balancer_moves(r: &SimResult, pid: i32) -> Vec<(u64, u32, u32, BalanceKind)> {
    let moves = r.trace.events.iter().filter_map(|e| match e.kind {
        EventKind::LbMigrate { pid: p, src_cpu, dst_cpu, kind, .. } if p == pid => Some((e.ts, src_cpu, dst_cpu, kind)),
        _ => None,
    });
    moves.collect()
}

const SMALL: &str = r#"
topology = "rk3399"
duration = "400ms"
[[thread]]
name = "small"
start_cpu = 4
program = [ { run = "1ms" }, { sleep = "15ms" } ]
"#;

#[test]
fn a_small_periodic_task_moves_to_a_little_cpu_with_eas_and_stays_big_without() {
    let r = run(SMALL, true);
    let ins = switch_ins(&r, pid_of(&r, "small"));
    let first_little = ins.iter().find(|&&(_, c)| c < 4).copied();
    println!("EAS on: first run on a little CPU {first_little:?}; runs {}", ins.len());
    let (at, cpu) = first_little.expect("never ran on a little CPU");
    // When: the task starts on the idle A72 with util_avg = half its spare
    // capacity (512) and decays while it sleeps (1 ms of work in 16 ms).
    // find_energy_efficient_cpu() skips the A53s while the util does not
    // fit them (util · 1280 < 381 · 1024: util < 305), so it stays on CPU 4
    // (prev_cpu, the only candidate) until the util has decayed below 305:
    // 512 · y^t with y^32 = 1/2 passes 305 after ~24 ms of decay, i.e. at
    // the wakeup at ~32 ms (the second one; the running millisecond adds a
    // little). From then on both domains have a candidate and the A53s'
    // cost is lower at every util this task has (e.g. util 200 asks for
    // 250: the A53s' 1008 MHz state costs 3182 per unit, the A72s' first
    // efficient state, 816 MHz, 5218), so each wakeup goes to the A53 with
    // the most spare capacity (all idle: CPU 0, the first).
    assert!((16 * MS..=64 * MS).contains(&at), "first little run at {} us", at / 1000);
    assert_eq!(cpu, 0);
    assert!(ins.iter().all(|&(t, c)| t <= at || c < 4), "back on a big CPU after {at}: {ins:?}");

    // Without EAS (sched_energy_aware = 0): select_idle_sibling() keeps the
    // task on its idle previous CPU, which it fits: it never leaves CPU 4.
    let r = run(SMALL, false);
    let ins = switch_ins(&r, pid_of(&r, "small"));
    assert!(ins.len() > 20 && ins.iter().all(|&(_, c)| c == 4), "{ins:?}");
}

const HOG: &str = r#"
topology = "rk3399"
duration = "200ms"
[[thread]]
name = "hog"
start_cpu = 0
program = [ { run = "10s" } ]
"#;

#[test]
fn a_hog_started_on_a_little_cpu_is_moved_to_a_big_one_with_and_without_eas() {
    for eas in [true, false] {
        let r = run(HOG, eas);
        let hog = pid_of(&r, "hog");
        let moves = balancer_moves(&r, hog);
        println!("EAS {eas}: {moves:?}");
        assert_eq!(moves.len(), 1, "{moves:?}");
        let (at, src, dst, kind) = moves[0];
        assert_eq!((src, kind), (0, BalanceKind::Active));
        assert!(dst >= 4, "moved to little CPU {dst}");
        assert!((18 * MS..=32 * MS).contains(&at), "moved at {} us", at / 1000);
    }
}
