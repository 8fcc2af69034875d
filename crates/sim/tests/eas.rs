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

mod common;
use common::{balancer_moves, pid_of};
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

/// Each time `pid` is switched in: (time, CPU).
fn switch_ins(r: &SimResult, pid: i32) -> Vec<(u64, usize)> {
    let ins = r.trace.events.iter().filter_map(|e| match e.kind {
        EventKind::SchedSwitch { next_pid, .. } if next_pid == pid => Some((e.ts, e.cpu as usize)),
        _ => None,
    });
    ins.collect()
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
    // capacity (512), runs 1 ms (~523) and sleeps 15 ms.
    // find_energy_efficient_cpu() skips the A53s while the util does not
    // fit them (util · 1280 < 381 · 1024: util < 305), so it stays on CPU 4
    // (prev_cpu, the only candidate). At the first wakeup (16 ms) the util
    // is at least 523 · y^15 = 378 (y^32 = 1/2): it stays. Fully decayed,
    // the util at the second wakeup (32 ms) would be ~283, which fits; but
    // sync_entity_load_avg() decays the task only to CPU 4's last PELT
    // update, which lags while CPU 4 idles with its tick stopped (its
    // blocked averages wait for a nohz blocked-load update), so the move
    // comes at the second or the third wakeup (observed: the third, at
    // 52.1 ms: schedutil lowers the A72s to 816 MHz, where the 1 ms burst
    // takes 2.2 ms, so the wakeups come every ~17 ms). Once the util fits, both domains have a candidate and the
    // A53s' energy is lower at every util this task has (e.g. util 283
    // asks for 353: the A53s' 1416 MHz state costs 4703 per unit, the
    // A72s' first efficient state, 816 MHz, 5218), so each wakeup goes to
    // the A53 with the most spare capacity (all idle: CPU 0, the first).
    let wakeup = ins.iter().position(|&(t, _)| t == at).unwrap();
    assert!((2..=3).contains(&wakeup), "first little run at wakeup {wakeup}, {} us", at / 1000);
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

/// The hog's util starts at half the A53's spare capacity (190) and grows
/// in PELT time, which runs at 381/1024 of real time on an A53 at its top
/// frequency: 1024 - 834 · y^t passes 305 (the 80 % fit of 381) after
/// 6.9 ms of PELT time, 18.4 ms of real time there. schedutil slows it:
/// the new task's util asks for 1.25 × 190 / 381 of 1416 MHz, so the A53s
/// run at 1008 MHz for the first 8 ms and 1200 MHz for the next 8 (its
/// `cpu_frequency` events), PELT time runs slower still, and the crossing
/// comes a tick later (observed: the move at 24.4 ms). A tick then finds CPU 0 both
/// overutilized (with EAS on, rd->overutilized is set: the energy-aware
/// wakeup path and the balancer's EAS gate step aside) and running a misfit
/// task, kicks the idle balancer, and an A72's balance has the stopper push
/// the hog over (misfit is balanced whether or not the root domain is
/// overutilized): by 28 ms, the A72's PKG interval (2 jiffies) later.
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
        assert!((18 * MS..=28 * MS).contains(&at), "moved at {} us", at / 1000);
    }
}
