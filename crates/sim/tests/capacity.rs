//! Asymmetric CPU capacity through the whole simulator: misfit balancing
//! moves a task too big for a little CPU to a big one, uclamp_min lifts a
//! small task to a big CPU and uclamp_max keeps a hog on a little one, and
//! rt-app's util_min/util_max run; a fair task leaves a CPU that RT time
//! squeezes (capacity pressure).

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_topology::Topology;
use schedlab_trace::{BalanceKind, EventKind};

mod common;
use common::{balancer_moves, pid_of};
use std::path::Path;

const MS: u64 = 1_000_000;

/// Two little CPUs (capacity 512) and two big ones (1024) sharing one LLC,
/// HZ=1000, no noise.
fn big_little() -> Topology {
    let text = "name = \"bl-2+2\"\nhz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 4\n[capacity]\n\"0-1\" = \
                512\n\"2-3\" = 1024\n";
    Topology::from_toml_str("bl.toml", text).unwrap()
}

fn run(text: &str) -> SimResult {
    let s = Scenario::from_toml_str("inline.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions { topology: Some(big_little()), no_noise: true, ..Default::default() };
    simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Time `pid` ran on each CPU, from the switches.
fn runtime_per_cpu(r: &SimResult, pid: i32) -> Vec<u64> {
    let mut per_cpu = vec![0u64; r.topology.nr_cpus()];
    let mut since = vec![None; r.topology.nr_cpus()];
    for e in &r.trace.events {
        if let EventKind::SchedSwitch { prev_pid, next_pid, .. } = e.kind {
            let c = e.cpu as usize;
            if prev_pid == pid {
                if let Some(t) = since[c].take() {
                    per_cpu[c] += e.ts - t;
                }
            }
            if next_pid == pid {
                since[c] = Some(e.ts);
            }
        }
    }
    for (c, t) in since.iter().enumerate() {
        if let Some(t) = t {
            per_cpu[c] += r.end_ns - t;
        }
    }
    per_cpu
}

const HOG: &str = r#"
topology = "smt-2x2"
duration = "200ms"
[[thread]]
name = "hog"
start_cpu = 0
program = [ { run = "10s" } ]
"#;

#[test]
fn a_task_too_big_for_a_little_cpu_is_pulled_to_a_big_one_by_misfit_balancing() {
    let r = run(HOG);
    let hog = pid_of(&r, "hog");
    let moves = balancer_moves(&r, hog);
    // One move: the stopper on the little CPU pushes the running task to a
    // big CPU (migrate_misfit forces an active balance), and it stays there.
    assert_eq!(moves.len(), 1, "{moves:?}");
    let (at, src, dst, kind) = moves[0];
    println!("moved from CPU {src} to CPU {dst} at {} us", at / 1000);
    assert_eq!((src, kind), (0, BalanceKind::Active));
    assert!(dst >= 2, "moved to little CPU {dst}");
    // When: its util starts at half the little CPU's spare capacity (256)
    // and grows in PELT time, which runs at half speed on a 512 CPU:
    // 1024 - 768·y^t passes 80 % of 512 (409.6) at t = 10.3 ms of PELT time,
    // ~20.6 ms of real time. The next tick sets rq->misfit_task_load and
    // kicks the idle balancer (nohz_balancer_kick's misfit test); the big
    // CPU's MC balance is due within its 4 ms interval (sd_weight 4 at
    // HZ=1000), and the stopper pushes at once. Not before: a lone task on
    // a little CPU that fits is left where it is.
    assert!((20 * MS..=27 * MS).contains(&at), "moved at {} us", at / 1000);
    let per_cpu = runtime_per_cpu(&r, hog);
    assert!(per_cpu[dst as usize] > 170 * MS, "{per_cpu:?}");
}

#[test]
fn on_juno_r2_a_hog_started_on_an_a53_moves_to_an_a72_within_the_pkg_balance_interval() {
    let s = Scenario::from_toml_str("inline.toml", &HOG.replace("smt-2x2", "juno-r2"), Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(&s, &SimOptions { no_noise: true, ..Default::default() }).unwrap_or_else(|e| panic!("{e}"));
    let hog = pid_of(&r, "hog");
    let moves = balancer_moves(&r, hog);
    assert_eq!(moves.len(), 1, "{moves:?}");
    let (at, src, dst, kind) = moves[0];
    println!("juno-r2: moved from CPU {src} to CPU {dst} at {} us", at / 1000);
    assert_eq!((src, kind), (0, BalanceKind::Active));
    assert!(dst == 1 || dst == 2, "moved to A53 CPU {dst}");
    // util starts at 383/2 = 191 and passes 80 % of 383 (306.4) after 6.9 ms
    // of PELT time, 18.4 ms of real time at capacity 383; the 4 ms tick
    // (HZ=250) sees it at 20 ms and kicks the idle balancer; the A72's PKG
    // balance (6 ms interval: 2 jiffies) is due by 28 ms.
    assert!((18 * MS..=28 * MS).contains(&at), "moved at {} us", at / 1000);
}

#[test]
fn a_hog_capped_by_uclamp_max_at_the_little_capacity_stays_on_its_little_cpu() {
    let r = run(&HOG.replace("start_cpu = 0", "start_cpu = 0\nuclamp_max = 512"));
    let hog = pid_of(&r, "hog");
    let per_cpu = runtime_per_cpu(&r, hog);
    assert!(per_cpu[0] > 195 * MS, "{per_cpu:?}");
}

const TICKER: &str = r#"
topology = "smt-2x2"
duration = "300ms"
[[thread]]
name = "small"
start_cpu = 0
program = [ { run = "1ms" }, { sleep = "9ms" } ]
"#;

#[test]
fn uclamp_min_lifts_a_small_task_to_a_big_cpu() {
    // Without a clamp the small task (util ~50) fits its little CPU, which
    // is idle at each wakeup: select_idle_sibling() keeps it there.
    let r = run(TICKER);
    let per_cpu = runtime_per_cpu(&r, pid_of(&r, "small"));
    let (little, big) = (per_cpu[0] + per_cpu[1], per_cpu[2] + per_cpu[3]);
    assert!(big == 0 && little > 25 * MS, "{per_cpu:?}");
    // Boosted to 700, above the little capacity: the util fits, the boost
    // does not (util_fits_cpu() = -1), so asym_fits_cpu() fails for the
    // idle little CPUs and select_idle_capacity() takes the first idle big one.
    let r = run(&TICKER.replace("start_cpu = 0", "start_cpu = 0\nuclamp_min = 700"));
    let per_cpu = runtime_per_cpu(&r, pid_of(&r, "small"));
    let (little, big) = (per_cpu[0] + per_cpu[1], per_cpu[2] + per_cpu[3]);
    // Only the first burst, before its first wakeup, runs where it started:
    // 1 ms of work at capacity 1024 takes 2 ms on a 512 CPU.
    assert!(little <= 2 * MS + MS / 10 && big > 25 * MS, "{per_cpu:?}");
}

#[test]
fn rt_app_util_min_and_util_max_run() {
    let json = r#"{
  "tasks": {
    "boosted": { "util_min": 1024, "util_max": 1024, "cpus": [0, 1, 2, 3], "run": 1000, "sleep": 9000 },
    "capped": { "util_max": 100, "util_min": -1, "run": 1000, "sleep": 9000 }
  },
  "global": { "duration": 1, "calibration": "CPU0" }
}"#;
    let s = Scenario::from_toml_str("uclamp.json", json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let opts =
        SimOptions { topology: Some(big_little()), no_noise: true, duration_ns: Some(300 * MS), ..Default::default() };
    let r = simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"));
    let boosted = runtime_per_cpu(&r, pid_of(&r, "boosted"));
    assert!(boosted[2] + boosted[3] > 25 * MS, "{boosted:?}");
    let capped = runtime_per_cpu(&r, pid_of(&r, "capped"));
    assert!(capped.iter().sum::<u64>() > 25 * MS, "{capped:?}");
}

/// An RT thread on CPU 0 runs `rt_run` of every 10 ms (from 10 ms on); a
/// fair thread created on CPU 0 at 16.5 ms runs 3 ms of each 10 ms from
/// 26.5 ms, in the gaps the RT thread leaves, so it always runs alone and
/// wakes up on an idle CPU 0. Four symmetric CPUs, HZ=1000, no noise.
fn squeezed(rt_run: &str) -> SimResult {
    let topo = Topology::from_toml_str(
        "sym4.toml",
        "name = \"sym-4\"\nhz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 4\n",
    )
    .unwrap();
    let text = format!(
        r#"
topology = "qemu-4"
duration = "300ms"
[[thread]]
name = "rt"
policy = "SCHED_FIFO"
priority = 50
affinity = "0"
program = [ {{ timer = "10ms" }}, {{ run = "{rt_run}" }} ]
[[thread]]
name = "fair"
start_cpu = 0
delay = "16.5ms"
program = [ {{ timer = "10ms" }}, {{ run = "3ms" }} ]
"#
    );
    let s = Scenario::from_toml_str("inline.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let opts = SimOptions { topology: Some(topo), no_noise: true, ..Default::default() };
    simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_fair_task_leaves_a_cpu_whose_capacity_rt_time_took_by_active_balance() {
    let r = squeezed("6ms");
    let fair = pid_of(&r, "fair");
    let moves = balancer_moves(&r, fair);
    // 60 % RT: util_rt rises towards ~614, capacity_of(0) to ~410, under
    // 875 (1024 / 1.17). CPU 0's first busy balance (64 ms interval less a
    // jiffy) refreshes it; the next tick that finds the fair task running
    // alone kicks an idle CPU, whose balance finds a reduced-capacity
    // misfit and has the stopper push the running task away. It then stays:
    // it wakes up on its now idle CPU.
    assert_eq!(moves.len(), 1, "{moves:?}");
    let (at, src, dst, kind) = moves[0];
    println!("moved from CPU {src} to CPU {dst} at {} us", at / 1000);
    assert_eq!((src, kind), (0, BalanceKind::Active));
    assert!((63 * MS..=100 * MS).contains(&at), "at {} us", at / 1000);
    let per_cpu = runtime_per_cpu(&r, fair);
    assert!(per_cpu[dst as usize] > 50 * MS, "{per_cpu:?}");
}

#[test]
fn a_little_rt_time_leaves_the_fair_task_where_it_is() {
    // 10 % RT: util_rt ~ 100, capacity_of(0) ~ 920, within the margin.
    let r = squeezed("1ms");
    let fair = pid_of(&r, "fair");
    assert_eq!(balancer_moves(&r, fair), vec![]);
    let per_cpu = runtime_per_cpu(&r, fair);
    assert!(per_cpu[0] > 50 * MS && per_cpu[1..].iter().all(|&t| t == 0), "{per_cpu:?}");
}
