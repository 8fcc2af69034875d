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

    // Affinity {1,2}: W's CPU may pull L itself, with or without the IPI chain.
    let pullable = probe(|t| t.replace("affinity = \"1,3\"", "affinity = \"1-2\""));
    for f in ["NO_RT_PUSH_IPI", "RT_PUSH_IPI"] {
        let (timely, median, migrated) = table_row(&pullable, &[f]);
        eprintln!("affinity {{1,2}}, {f:<15}     {timely}/8 timely, median {:.3} ms", median as f64 / MS as f64);
        assert!(timely == 8 && median < 10 * MS && migrated == 8);
    }
}

#[test]
fn with_kernel_background_no_rt_push_ipi_is_rescued_early_in_some_runs() {
    let s = probe(|t| t.replace("seed = 1", "seed = 1\nbackground = \"kernel\""));
    let mut early = vec![];
    let mut late = 0;
    for seed in 1..=16 {
        let opts = SimOptions { seed: Some(seed), features: vec!["NO_RT_PUSH_IPI".into()], ..Default::default() };
        let r = simulate(&s, &opts).unwrap_or_else(|e| panic!("{e}"));
        let (w, migrated) = l_wait(&r);
        if w < 1400 * MS {
            assert!(migrated, "an early rescue is a push of L to CPU 3");
            // The push ran on CPU 1 right after something other than X ran there.
            early.push(w / MS);
        } else {
            late += 1;
        }
    }
    eprintln!(
        "background=kernel, NO_RT_PUSH_IPI: {} of 16 rescued early (ms: {early:?}), {late} waited the dwell",
        early.len()
    );
    assert!(!early.is_empty() && late > 0, "a fraction, not all or none");
}
