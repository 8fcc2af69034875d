//! Seed 003's probe (scenarios/rt-pi-push.toml) over seeds and settings:
//! how long L, boosted by W, waits behind X's dwell before it runs again.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions, SimResult};
use schedlab_trace::{EventKind, UserOp};
use std::path::Path;

fn probe(edit: impl Fn(String) -> String) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/rt-pi-push.toml");
    let text = edit(std::fs::read_to_string(&path).unwrap());
    Scenario::from_toml_str(path.to_str().unwrap(), &text, path.parent().unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

/// (L_wait ns from W's t_w post to L's poll returning, L migrated?)
fn l_wait(r: &SimResult) -> (u64, bool) {
    let pid = |c: &str| *r.trace.table.tasks.iter().find(|(_, t)| t.comm == c).unwrap().0;
    let (l, w) = (pid("L"), pid("W"));
    let t_w = r.trace.events.iter().find_map(|e| match e.kind {
        EventKind::User { pid, op: UserOp::Post { .. } } if pid == w => Some(e.ts),
        _ => None,
    });
    let ran = r.trace.events.iter().find_map(|e| match e.kind {
        EventKind::User { pid, op: UserOp::PollDone { .. } } if pid == l => Some(e.ts),
        _ => None,
    });
    let migrated = r.trace.events.iter().any(|e| matches!(e.kind, EventKind::SchedMigrateTask { pid, .. } if pid == l));
    (ran.unwrap() - t_w.unwrap(), migrated)
}

/// Run 8 seeds; return (timely count, median wait ns, migrated count).
fn table_row(s: &Scenario, features: &[&str]) -> (usize, u64, usize) {
    let mut waits = vec![];
    let mut migrated = 0;
    for seed in 1..=8 {
        let opts = SimOptions {
            seed: Some(seed),
            features: features.iter().map(|f| f.to_string()).collect(),
            ..Default::default()
        };
        let r = simulate(s, &opts).unwrap_or_else(|e| panic!("{e}"));
        let (w, m) = l_wait(&r);
        waits.push(w);
        migrated += m as usize;
    }
    let timely = waits.iter().filter(|&&w| w < 100_000_000).count();
    waits.sort();
    (timely, waits[waits.len() / 2], migrated)
}

const MS: u64 = 1_000_000;

#[test]
fn seed_003_table() {
    let s = probe(|t| t);
    let (timely, median, _) = table_row(&s, &["NO_RT_PUSH_IPI"]);
    eprintln!("NO_RT_PUSH_IPI                     {timely}/8 timely, median {} ms", median / MS);
    assert!(timely <= 1 && median >= 1400 * MS);
    let (timely, median, migrated) = table_row(&s, &["RT_PUSH_IPI"]);
    eprintln!("RT_PUSH_IPI                        {timely}/8 timely, median {:.3} ms", median as f64 / MS as f64);
    assert!(timely == 8 && median < 10 * MS && migrated == 8);
    let (timely, median, migrated) = table_row(&s, &["NO_RT_PUSH_IPI", "RT_PUSH_ON_BOOST"]);
    eprintln!("NO_RT_PUSH_IPI + RT_PUSH_ON_BOOST  {timely}/8 timely, median {:.3} ms", median as f64 / MS as f64);
    assert!(timely == 8 && median < 10 * MS && migrated == 8);

    // PTHREAD_PRIO_NONE: no boost, so nothing may move L; it waits the dwell either way.
    let control = probe(|t| t.replace("pi = true", "pi = false"));
    for f in ["NO_RT_PUSH_IPI", "RT_PUSH_IPI"] {
        let (timely, median, migrated) = table_row(&control, &[f]);
        eprintln!("PRIO_NONE control, {f:<15} {timely}/8 timely, median {} ms, {migrated} migrated", median / MS);
        assert!(timely == 0 && migrated == 0 && median >= 1400 * MS);
    }

    // Affinity {1,2}: CPU 2 is allowed and idle when X arrives, so X's CPU pushes L there
    // at once; W's block later just lets L run. Timely with or without the IPI chain.
    let allowed_on_2 = probe(|t| t.replace("affinity = \"1,3\"", "affinity = \"1-2\""));
    for f in ["NO_RT_PUSH_IPI", "RT_PUSH_IPI"] {
        let (timely, median, migrated) = table_row(&allowed_on_2, &[f]);
        eprintln!("affinity {{1,2}}, {f:<15}     {timely}/8 timely, median {:.3} ms", median as f64 / MS as f64);
        assert!(timely == 8 && median < 10 * MS && migrated == 8);
    }
}

/// With the kernel's background the runner's setup starts each RT
/// thread's CPU's fair server at t = 0 (the thread was SCHED_OTHER there
/// first), so CPU 1's server reaches zero laxity 950 ms later (1 s period,
/// 50 ms runtime) and serves the kworker queued behind X; X coming back
/// pushes L (the guest's runs cluster at 922-943 ms after W's post).
#[test]
fn with_kernel_background_no_rt_push_ipi_is_rescued_at_the_servers_zero_laxity() {
    let s = probe(|t| t.replace("seed = 1", "seed = 1\nbackground = \"kernel\""));
    let mut at_zero_laxity = 0;
    let mut waits = vec![];
    for seed in 1..=16 {
        let opts = SimOptions { seed: Some(seed), features: vec!["NO_RT_PUSH_IPI".into()], ..Default::default() };
        let r = simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"));
        let (w, migrated) = l_wait(&r);
        waits.push(w / MS);
        assert!(w < 1400 * MS && migrated, "seed {seed}: L waited {} ms, the dwell: no rescue", w / MS);
        // The push ran on CPU 1 as X came back from a kworker or the
        // watchdog's stopper: set_next_task_rt() queued it.
        let l = *r.trace.table.tasks.iter().find(|(_, t)| t.comm == "L").unwrap().0;
        let i = r
            .trace
            .events
            .iter()
            .position(|e| matches!(e.kind, EventKind::RtPush { pid, src_cpu: 1, dst_cpu: Some(3), .. } if pid == l))
            .expect("the rescue is an RT push");
        let last_switch = r.trace.events[..i]
            .iter()
            .rev()
            .find(|e| e.cpu == 1 && matches!(e.kind, EventKind::SchedSwitch { .. }))
            .unwrap();
        let EventKind::SchedSwitch { prev_pid, next_pid, .. } = last_switch.kind else { unreachable!() };
        let (prev, next) = (r.trace.table.comm(prev_pid), r.trace.table.comm(next_pid));
        assert!(next == "X" && (prev == "kworker/1:1" || prev == "migration/1"), "{prev} -> {next}");
        if r.trace.events[i].ts.abs_diff(950 * MS) < MS {
            at_zero_laxity += 1;
        }
    }
    eprintln!("background=kernel, NO_RT_PUSH_IPI: L waited (ms) {waits:?}");
    assert!(at_zero_laxity >= 12, "{at_zero_laxity} of 16 pushes at 950 ms: {waits:?}");
}

/// The decision events around W blocking (t = 25 ms), in kernel terms.
#[test]
fn seed_003_trace_shows_the_mechanism() {
    use schedlab_trace::RtBalanceResult::*;
    let s = probe(|t| t);
    let run = |features: &[&str]| {
        let opts = SimOptions { features: features.iter().map(|f| f.to_string()).collect(), ..Default::default() };
        simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"))
    };
    let pid = |r: &SimResult, c: &str| *r.trace.table.tasks.iter().find(|(_, t)| t.comm == c).unwrap().0;
    // The boost, as prio_changed_rt() saw it on L's runqueue (CPU 1, L queued).
    let boost = |r: &SimResult| {
        let l = pid(r, "L");
        r.trace
            .events
            .iter()
            .find_map(|e| match e.kind {
                EventKind::RtPrioChanged { pid, oldprio: 89, newprio: 9, running, push, .. } if pid == l => {
                    Some((e.ts, running, push))
                }
                _ => None,
            })
            .expect("L is boosted to W's priority")
    };
    let push_of_l = |r: &SimResult, after: u64| {
        let l = pid(r, "L");
        r.trace.events.iter().find_map(|e| match e.kind {
            EventKind::RtPush { pid, src_cpu: 1, dst_cpu: Some(3), result: Moved } if pid == l && e.ts >= after => {
                Some((e.ts, e.cpu))
            }
            _ => None,
        })
    };

    // Stock 6.12: no push at the boost; CPU 2's direct pull passes L over (affinity); nothing moves L.
    let r = run(&["NO_RT_PUSH_IPI"]);
    let (t_boost, running, push) = boost(&r);
    assert!(!running && !push);
    let l = pid(&r, "L");
    assert!(r.trace.events.iter().any(|e| e.cpu == 2
        && e.ts >= t_boost
        && e.ts < t_boost + MS
        && matches!(e.kind, EventKind::RtPull { src_cpu: 1, pid, result: NotAllowedHere } if pid == l)));
    assert_eq!(push_of_l(&r, t_boost), None);

    // RT_PUSH_IPI: CPU 2 sends the push irq_work to CPU 1, which pushes L to CPU 3.
    let r = run(&["RT_PUSH_IPI"]);
    let (t_boost, _, push) = boost(&r);
    assert!(!push);
    let ipi =
        r.trace.events.iter().find(|e| {
            e.cpu == 2 && e.ts >= t_boost && matches!(e.kind, EventKind::RtPushIpi { dst_cpu: 1, first: true })
        });
    let (t_push, on_cpu) = push_of_l(&r, t_boost).expect("CPU 1 pushes L");
    assert!(ipi.is_some_and(|i| i.ts <= t_push) && on_cpu == 1, "pushed by CPU 1 after the IPI");

    // The patch: prio_changed_rt() queues the push, run as soon as the boost's rq lock drops.
    let r = run(&["NO_RT_PUSH_IPI", "RT_PUSH_ON_BOOST"]);
    let (t_boost, running, push) = boost(&r);
    assert!(!running && push);
    let (t_push, _) = push_of_l(&r, t_boost).expect("the queued push moves L");
    assert!(t_push - t_boost < 100_000, "push {} ns after the boost", t_push - t_boost);
}

/// Seed 003 with W as a SCHED_DEADLINE task (scenarios/rt-pi-push-dl.toml):
/// L inherits the deadline class with W's reservation, the deadline class's
/// own push moves it to CPU 3 (free of deadline tasks) and it runs at
/// once, whether or not the RT push IPI chain is on; PRIO_NONE keeps L
/// behind X for the dwell.
#[test]
fn seed_003_with_a_deadline_waiter() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/rt-pi-push-dl.toml");
    let load = |edit: &dyn Fn(String) -> String| {
        let text = edit(std::fs::read_to_string(&path).unwrap());
        Scenario::from_toml_str(path.to_str().unwrap(), &text, path.parent().unwrap()).unwrap_or_else(|e| panic!("{e}"))
    };
    let s = load(&|t| t);
    for f in ["NO_RT_PUSH_IPI", "RT_PUSH_IPI"] {
        let (timely, median, migrated) = table_row(&s, &[f]);
        eprintln!(
            "deadline W, {f:<15} {timely}/8 timely, median {:.3} ms, {migrated} migrated",
            median as f64 / MS as f64
        );
        assert!(timely == 8 && median < MS && migrated == 8, "{f}");
    }
    let r = simulate(&s, &SimOptions::default()).unwrap();
    let l = *r.trace.table.tasks.iter().find(|(_, t)| t.comm == "L").unwrap().0;
    assert!(r
        .trace
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::SchedPiSetprio { pid, newprio: -1, .. } if pid == l)));
    let control = load(&|t| t.replace("pi = true", "pi = false"));
    let (timely, _, migrated) = table_row(&control, &["NO_RT_PUSH_IPI"]);
    assert!(timely == 0 && migrated == 0, "PRIO_NONE: L waits behind X");
}
