//! The text tables on a fixed input (seed 000's numbers), character for
//! character, and the JSON form.

use std::collections::BTreeMap;

mod common;

use schedlab_analysis::StallBreakdown;
use schedlab_report::{render, render_summary, RunResult, SettingResult, SweepResult};

fn setting(name: &str, stalls: [u64; 5], handoffs: u64, median: u64) -> SettingResult {
    let run = |i: usize| RunResult {
        handoff_samples: vec![3_000],
        ..common::run(i as u32 + 1, stalls[i], handoffs / 5, 3_000, 9_000, 1_200_000)
    };
    // The total as the report gives it, not the runs' rounded sum.
    SettingResult { handoffs, ..common::setting(name, (0..5).map(run).collect(), median) }
}

fn breakdown(
    wakeups: u64,
    delayed: u64,
    stalls: u64,
    top: u64,
    after: u64,
    active: u64,
    wakeup: u64,
) -> StallBreakdown {
    StallBreakdown {
        threshold_ns: 500_000,
        top_cpu: Some(6),
        wakeups,
        delayed_wakeups_no_select: delayed,
        handoffs: wakeups,
        stalls,
        stalls_behind_other: top + 1,
        stalls_on_top_cpu_behind_other: top,
        stalls_after_delayed_wakeup: after,
        stalls_other_moved_by_active_balance: active,
        stalls_other_moved_by_active_balance_while_asleep: active / 2,
        other_arrivals: BTreeMap::from([("active".to_string(), active), ("wakeup".to_string(), wakeup)]),
        stalls_all_other_allowed_idle: stalls,
        details: vec![],
    }
}

fn seed_000() -> SweepResult {
    let mut defaults = setting("defaults", [212, 49, 48, 76, 214], 294_616, 3_000);
    defaults.breakdown = true;
    defaults.runs[0].breakdown = Some(breakdown(58_592, 340, 310, 288, 280, 30, 259));
    defaults.runs[1].breakdown = Some(breakdown(58_770, 174, 153, 137, 139, 12, 126));
    defaults.runs[0].burst_starts = Some(BTreeMap::from([
        ("worker-0".to_string(), BTreeMap::from([(4, 10), (6, 495), (7, 495)])),
        ("worker-1".to_string(), BTreeMap::from([(5, 1), (6, 3)])),
    ]));
    let mut itmt = setting("sched_itmt_enabled=0", [1, 0, 0, 0, 0], 295_349, 2_950);
    itmt.itmt = false;
    itmt.notes = vec!["only here".into()];
    SweepResult {
        sweep: "scenarios/sweeps/itmt-delay-dequeue.toml".into(),
        scenario: "asym_min".into(),
        scenario_path: "scenarios/asym_min.toml".into(),
        topology: "ryzen-7950x".into(),
        rounds: 5,
        seed: 1,
        seeds: vec![1, 2, 3, 4, 5],
        duration_ns: Some(30_000_000_000),
        wakees: vec!["worker".into()],
        stall_threshold_ns: 500_000,
        measures: vec![],
        settings: vec![
            defaults,
            itmt,
            setting("NO_DELAY_DEQUEUE", [21, 9, 11, 26, 14], 295_201, 3_000),
            setting("defaults, SMT siblings 20-23 also allowed", [16, 27, 15, 13, 2], 295_215, 3_049),
        ],
    }
}

#[test]
fn results_table_is_aligned_like_the_seed() {
    let expected = "\
setting                                     stalls per run                total   median handoff
defaults                                    212  49  48  76 214   599 of 294616           3.0 us
sched_itmt_enabled=0                          1   0   0   0   0     1 of 295349           2.9 us
NO_DELAY_DEQUEUE                             21   9  11  26  14    81 of 295201           3.0 us
defaults, SMT siblings 20-23 also allowed    16  27  15  13   2    73 of 295215           3.0 us
";
    assert_eq!(render_summary(&seed_000()), expected);
}

#[test]
fn narrow_run_columns_sit_under_the_header() {
    let mut r = seed_000();
    r.settings.truncate(1);
    for s in &mut r.settings {
        s.runs.truncate(2);
        s.stalls = 261;
    }
    let expected = "\
setting    stalls per run           total   median handoff
defaults   212  49          261 of 294616           3.0 us
";
    assert_eq!(render_summary(&r), expected);
}

#[test]
fn full_report() {
    let expected = "\
sweep     scenarios/sweeps/itmt-delay-dequeue.toml: asym_min on ryzen-7950x
runs      5 interleaved rounds of 30 s per setting, seeds 1-5
stalls    handoffs to worker of 500 us or more

setting                                     stalls per run                total   median handoff
defaults                                    212  49  48  76 214   599 of 294616           3.0 us
sched_itmt_enabled=0                          1   0   0   0   0     1 of 295349           2.9 us
NO_DELAY_DEQUEUE                             21   9  11  26  14    81 of 295201           3.0 us
defaults, SMT siblings 20-23 also allowed    16  27  15  13   2    73 of 295215           3.0 us

note      sched_itmt_enabled=0: only here

defaults: stall breakdown per run
                                                               run 1  run 2
worker wakeups                                                 58592  58770
  delayed, no select_task_rq_fair()                              340    174
worker handoffs                                                58592  58770
waits >= 500 us                                                  310    153
  behind the other worker                                        289    138
  on CPU 6 behind the other worker                               288    137
  after a delayed wakeup, no CPU selection                       280    139
  other worker moved there by active_load_balance_cpu_stop()      30     12
    of those, moved there while the wakee slept                   15      6
  other worker placed there at wakeup (select_task_rq())         259    126
  all other allowed CPUs (4-7) idle at the wakeup                310    153

defaults: bursts started per CPU, % of each thread's bursts
run  thread    CPU 4  CPU 5  CPU 6  CPU 7  bursts
  1  worker-0    1.0    0.0   49.5   49.5    1000
  1  worker-1    0.0   25.0   75.0    0.0       4
";
    assert_eq!(render(&seed_000()), expected);
    assert!(expected.lines().all(|l| l == l.trim_end() && l.is_ascii()));
}

#[test]
fn json_has_every_number_but_not_the_samples() {
    let v = serde_json::to_value(seed_000()).unwrap();
    let d = &v["settings"][0];
    assert_eq!(d["stalls"], 599);
    assert_eq!(d["handoffs"], 294_616);
    assert_eq!(d["median_handoff_ns"], 3_000);
    assert_eq!(d["runs"][0]["stalls"], 212);
    assert_eq!(d["runs"][0]["breakdown"]["stalls_other_moved_by_active_balance"], 30);
    assert_eq!(d["runs"][0]["breakdown"]["other_arrivals"]["wakeup"], 259);
    assert_eq!(d["runs"][0]["burst_starts"]["worker-0"]["6"], 495);
    assert!(d["runs"][2]["breakdown"].is_null());
    assert!(d["runs"][0].get("handoff_samples").is_none());
    assert_eq!(v["settings"][1]["itmt"], false);
}

#[test]
fn schbench_rps_stay_with_their_runs() {
    let mut r = seed_000();
    r.settings.truncate(1);
    // Runs 1, 4 and 5 have no rps: the others keep their own run numbers.
    for (x, rps) in r.settings[0].runs.iter_mut().zip([None, Some(1000.0), Some(3000.5), None, None]) {
        x.schbench_rps = rps;
    }
    let text = render(&r);
    let start = text.find("schbench average rps per run\n").unwrap_or_else(|| panic!("{text}"));
    let section: Vec<&str> = text[start..].lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(
        section,
        [
            "schbench average rps per run",
            "defaults  run 2: average rps: 1000.00",
            "defaults  run 3: average rps: 3000.50",
        ]
    );
    // The steps table has the mean of the runs that have one.
    let row =
        text.lines().find(|l| l.starts_with("defaults ") && l.contains("2000.2")).unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("100.01 %"), "spread (3000.5 - 1000) / 2000.25: {row}");
}

#[test]
fn a_sweep_whose_every_setting_names_a_machine_does_not_name_the_scenarios() {
    let mut r = seed_000();
    let header = |r: &SweepResult| render(r).lines().next().unwrap().to_string();
    assert!(header(&r).ends_with("asym_min on ryzen-7950x"), "{}", header(&r));
    // One setting elsewhere: the scenario's machine still runs the others.
    r.settings[0].topology = "rk3399".into();
    assert!(header(&r).ends_with("asym_min on ryzen-7950x"), "{}", header(&r));
    for s in &mut r.settings {
        s.topology = "rk3399".into();
    }
    assert_eq!(header(&r), "sweep     scenarios/sweeps/itmt-delay-dequeue.toml: asym_min on the machines below");
    assert!(render(&r).contains("machine   rk3399 for defaults; sched_itmt_enabled=0"), "{}", render(&r));
}
