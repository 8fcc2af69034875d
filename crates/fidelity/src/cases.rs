//! The suite's cases: each a bundled scenario file under
//! `scenarios/fidelity/` (runnable alone with `schedlab compare` too) and
//! the figures read from it.

use crate::metrics::{Metric, Pct};

/// One case of the suite.
#[derive(Debug)]
pub struct Case {
    /// The row's case column and a `--cases` name.
    pub name: &'static str,
    /// A `--cases` name that selects several cases at once (the pingpong
    /// variants), or the case's own name.
    pub group: &'static str,
    /// The file, as shown in errors and in the docs.
    pub path: &'static str,
    /// Its text, built into the binary so the suite runs the files it was built with.
    pub text: &'static str,
    pub metrics: &'static [Metric],
    /// tracefs ring-buffer size per CPU to ask for, KB per second of run
    /// (plus one second), at most 256 MB: the runner's default 2 MB/s is
    /// far too little for the no-work ping-pongs. Measured on this
    /// project's 2-vCPU guest (6.18, 2026-12-01): a record takes about 51
    /// bytes (a 32 MB buffer held 654k); pingpong-1cpu writes 1.58 M
    /// events/s on its one CPU (80 MB/s), pingpong-2cpu 0.70 M/s over two.
    /// The ping-pongs ask 96 MB/s (1.2x), enough for runs up to 3 s; a
    /// longer one that overflows is reported n/a (lost events).
    pub trace_kb_per_s: u64,
}

/// Seed 004's family on 2 CPUs: schbench's figures and the wakeups that
/// found their task still running.
const FAMILY: &[Metric] = &[Metric::SchbenchWakeup(Pct::P50), Metric::SchbenchRps, Metric::WokenRunning];
/// A `-n 0` schbench on 2 CPUs wrote ~200 k sched events per second here
/// (2026-12-06: 309 k captured and 296 k lost in 3 s with 8 MB per CPU), ~10
/// MB/s at ~51 bytes each: 16 MB/s per CPU leaves room.
const FAMILY_TRACE_KB_PER_S: u64 = 16_384;

pub const CASES: &[Case] = &[
    Case {
        name: "schbench",
        group: "schbench",
        path: "scenarios/fidelity/schbench.toml",
        text: include_str!("../../../scenarios/fidelity/schbench.toml"),
        metrics: &[Metric::SchbenchWakeup(Pct::P50), Metric::SchbenchWakeup(Pct::P99), Metric::SchbenchRps],
        trace_kb_per_s: 8192,
    },
    Case {
        name: "schbench-m1-t2",
        group: "schbench-family",
        path: "scenarios/fidelity/schbench-m1-t2.toml",
        text: include_str!("../../../scenarios/fidelity/schbench-m1-t2.toml"),
        metrics: FAMILY,
        trace_kb_per_s: FAMILY_TRACE_KB_PER_S,
    },
    Case {
        name: "schbench-m1-t4",
        group: "schbench-family",
        path: "scenarios/fidelity/schbench-m1-t4.toml",
        text: include_str!("../../../scenarios/fidelity/schbench-m1-t4.toml"),
        metrics: FAMILY,
        trace_kb_per_s: FAMILY_TRACE_KB_PER_S,
    },
    Case {
        name: "schbench-m2-t2",
        group: "schbench-family",
        path: "scenarios/fidelity/schbench-m2-t2.toml",
        text: include_str!("../../../scenarios/fidelity/schbench-m2-t2.toml"),
        metrics: FAMILY,
        trace_kb_per_s: FAMILY_TRACE_KB_PER_S,
    },
    Case {
        name: "cyclictest",
        group: "cyclictest",
        path: "scenarios/fidelity/cyclictest.toml",
        text: include_str!("../../../scenarios/fidelity/cyclictest.toml"),
        metrics: &[
            Metric::TimerToRun(Pct::P50, "cyclic"),
            Metric::TimerToRun(Pct::P99, "cyclic"),
            Metric::Wakeup(Pct::P50),
            Metric::Wakeup(Pct::P99),
        ],
        trace_kb_per_s: 2048,
    },
    Case {
        name: "asym_min",
        group: "asym_min",
        path: "scenarios/fidelity/asym_min.toml",
        text: include_str!("../../../scenarios/fidelity/asym_min.toml"),
        metrics: &[Metric::Handoff(Pct::P50), Metric::StallFraction],
        trace_kb_per_s: 2048,
    },
    Case {
        name: "pingpong-2cpu",
        group: "pingpong",
        path: "scenarios/fidelity/pingpong-2cpu.toml",
        text: include_str!("../../../scenarios/fidelity/pingpong-2cpu.toml"),
        metrics: &[Metric::LoopRate("ping"), Metric::Handoff(Pct::P50)],
        trace_kb_per_s: 98304,
    },
    Case {
        name: "pingpong-1cpu",
        group: "pingpong",
        path: "scenarios/fidelity/pingpong-1cpu.toml",
        text: include_str!("../../../scenarios/fidelity/pingpong-1cpu.toml"),
        metrics: &[Metric::LoopRate("ping"), Metric::Handoff(Pct::P50)],
        trace_kb_per_s: 98304,
    },
    Case {
        name: "nice",
        group: "nice",
        path: "scenarios/fidelity/nice.toml",
        text: include_str!("../../../scenarios/fidelity/nice.toml"),
        metrics: &[Metric::Share("nice0")],
        trace_kb_per_s: 2048,
    },
    Case {
        name: "placement",
        group: "placement",
        path: "scenarios/fidelity/placement.toml",
        text: include_str!("../../../scenarios/fidelity/placement.toml"),
        metrics: &[Metric::WakerCpu("sleeper")],
        trace_kb_per_s: 2048,
    },
    Case {
        name: "rt-squeeze",
        group: "rt-squeeze",
        path: "scenarios/fidelity/rt-squeeze.toml",
        text: include_str!("../../../scenarios/fidelity/rt-squeeze.toml"),
        metrics: &[Metric::LoopsOnCpu("fair", 0)],
        trace_kb_per_s: 2048,
    },
];

/// Every name `--cases` takes: each group, then each case not named like its group.
pub fn case_names() -> Vec<&'static str> {
    let mut known: Vec<&str> = Vec::new();
    for k in CASES.iter().flat_map(|c| [c.group, c.name]) {
        if !known.contains(&k) {
            known.push(k);
        }
    }
    known
}

/// The cases `names` select (each a case or a group name), in suite order;
/// `None` or an empty list selects all.
pub fn select(names: &[String]) -> Result<Vec<&'static Case>, crate::FidelityError> {
    if names.is_empty() {
        return Ok(CASES.iter().collect());
    }
    for n in names {
        if !CASES.iter().any(|c| c.name == n || c.group == n) {
            let known = case_names();
            let hint = schedlab_topology::diag::closest(n, known.iter().copied())
                .map_or(String::new(), |c| format!("did you mean `{c}`? "));
            return Err(crate::FidelityError::UnknownCase { name: n.clone(), hint, known: known.join(", ") });
        }
    }
    Ok(CASES.iter().filter(|c| names.iter().any(|n| c.name == n || c.group == n)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_scenario::Scenario;
    use std::path::Path;

    #[test]
    fn every_bundled_case_parses_with_its_own_topology_and_names_its_threads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for c in CASES {
            let path = root.join(c.path);
            let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e}", c.path));
            assert!(s.duration_ns.is_some(), "{}: the suite needs a default duration", c.path);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), c.text);
            assert!(c.text.starts_with("# fidelity/"), "{}: needs its header comment", c.path);
            for m in c.metrics {
                if let Metric::LoopRate(t)
                | Metric::Share(t)
                | Metric::WakerCpu(t)
                | Metric::TimerToRun(_, t)
                | Metric::LoopsOnCpu(t, _) = m
                {
                    assert!(s.thread(t).is_some(), "{}: no thread {t}", c.path);
                }
            }
        }
    }

    #[test]
    fn cases_are_selected_by_name_or_group_in_suite_order() {
        let names = |v: &[&str]| {
            select(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map(|cs| cs.iter().map(|c| c.name).collect::<Vec<_>>())
        };
        assert_eq!(names(&[]).unwrap().len(), CASES.len());
        assert_eq!(names(&["nice", "pingpong"]).unwrap(), ["pingpong-2cpu", "pingpong-1cpu", "nice"]);
        assert_eq!(names(&["pingpong-1cpu"]).unwrap(), ["pingpong-1cpu"]);
        let err = names(&["pingpang"]).unwrap_err().to_string();
        assert!(err.contains("`pingpang`") && err.contains("pingpong-2cpu") && err.contains("cyclictest"), "{err}");
    }
}
