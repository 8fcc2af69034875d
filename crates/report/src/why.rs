//! Why a simulated run's throughput is what it is: the model's schedstats
//! (`schedlab_kernel::KernelStats`, handed over as [`SchedStats`]) as a
//! table — the wakeups by the path `try_to_wake_up()` took with what each
//! cost the waker, and per class of CPUs (schbench's message CPUs apart
//! from the rest) how busy they were and how much of them newidle
//! balancing took. Model runs only: a real kernel does not say which path
//! a wakeup took.

use schedlab_scenario::Scenario;
use schedlab_topology::CpuSet;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// A named set of CPUs whose figures are summed.
#[derive(Clone, Debug)]
pub struct CpuClass {
    pub name: String,
    pub cpus: CpuSet,
}

/// The classes a run's CPUs fall into: a `[schbench]` scenario's pinned
/// message CPUs, then every other CPU; else one class of all.
pub fn cpu_classes(scenario: &Scenario, nr_cpus: usize) -> Vec<CpuClass> {
    let all: CpuSet = (0..nr_cpus).collect();
    let pinned: CpuSet = scenario
        .schbench
        .as_ref()
        .map(|sb| sb.message_cpus.iter().flatten().copied().filter(|&c| c < nr_cpus).collect())
        .unwrap_or_default();
    if pinned.is_empty() {
        return vec![CpuClass { name: "all CPUs".into(), cpus: all }];
    }
    let rest: CpuSet = all.iter().filter(|c| !pinned.contains(*c)).collect();
    let mut out = vec![CpuClass { name: format!("message CPUs {}", pinned.to_cpulist()), cpus: pinned }];
    if !rest.is_empty() {
        out.push(CpuClass { name: format!("other CPUs {}", rest.to_cpulist()), cpus: rest });
    }
    out
}

/// The model's schedstats as plain figures (the report layer does not
/// know the kernel model's types).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchedStats {
    /// Per wakeup path, in the model's order: its name, count, and the CPU
    /// time charged to its wakers.
    pub paths: Vec<(&'static str, u64, u64)>,
    pub cpu_busy_ns: Vec<u64>,
    pub cpu_newidle_ns: Vec<u64>,
    pub newidle_balances: Vec<u64>,
    pub newidle_failed: Vec<u64>,
    pub rq_lock_wait_ns: u64,
}

/// One wakeup path's row. Integers only, so a sweep's shard files
/// round-trip it exactly; the percentages are computed from them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PathRow {
    pub path: String,
    pub wakeups: u64,
    /// CPU time charged to the wakers, all of this path's wakeups.
    pub waker_ns: u64,
}

/// One CPU class's row.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClassRow {
    pub class: String,
    pub cpus: usize,
    /// The class's CPU time: its CPUs times the run's length.
    pub span_ns: u64,
    /// Time a task was current, summed over the class.
    pub busy_ns: u64,
    /// CPU time charged to newidle balancing, summed over the class.
    pub newidle_ns: u64,
    pub newidle_balances: u64,
    pub newidle_failed: u64,
}

impl ClassRow {
    /// Busy, in percent of the class's CPU time.
    pub fn busy_pct(&self) -> f64 {
        self.busy_ns as f64 * 100.0 / self.span_ns.max(1) as f64
    }
    /// Newidle balancing, in percent of the class's CPU time.
    pub fn newidle_pct(&self) -> f64 {
        self.newidle_ns as f64 * 100.0 / self.span_ns.max(1) as f64
    }
}

/// The whole section, ready for text or JSON.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Why {
    pub paths: Vec<PathRow>,
    pub classes: Vec<ClassRow>,
    pub rq_lock_wait_ns: u64,
}

impl Why {
    pub fn new(stats: &SchedStats, classes: &[CpuClass], elapsed_ns: u64) -> Why {
        let paths = stats
            .paths
            .iter()
            .map(|&(path, wakeups, waker_ns)| PathRow { path: path.to_string(), wakeups, waker_ns })
            .collect();
        let classes = classes
            .iter()
            .map(|c| {
                let sum = |v: &[u64]| c.cpus.iter().filter_map(|cpu| v.get(cpu)).sum::<u64>();
                ClassRow {
                    class: c.name.clone(),
                    cpus: c.cpus.len(),
                    span_ns: elapsed_ns * c.cpus.len() as u64,
                    busy_ns: sum(&stats.cpu_busy_ns),
                    newidle_ns: sum(&stats.cpu_newidle_ns),
                    newidle_balances: sum(&stats.newidle_balances),
                    newidle_failed: sum(&stats.newidle_failed),
                }
            })
            .collect();
        Why { paths, classes, rq_lock_wait_ns: stats.rq_lock_wait_ns }
    }

    /// Every wakeup counted.
    pub fn wakeups(&self) -> u64 {
        self.paths.iter().map(|p| p.wakeups).sum()
    }

    /// `path`'s share of the wakeups, in percent (0 for a path not listed).
    pub fn share_pct(&self, path: &str) -> f64 {
        let n = self.paths.iter().find(|p| p.path == path).map_or(0, |p| p.wakeups);
        n as f64 * 100.0 / self.wakeups().max(1) as f64
    }

    /// The wakers' CPU time per wakeup, all paths.
    pub fn waker_ns_per_wakeup(&self) -> f64 {
        self.paths.iter().map(|p| p.waker_ns).sum::<u64>() as f64 / self.wakeups().max(1) as f64
    }

    /// The text section of `schedlab run`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "why       the model's schedstats: how each wakeup went, and where the CPUs' time went");
        let _ = writeln!(
            out,
            "{:<20} {:>10} {:>7} {:>14} {:>11}",
            "wakeup path", "wakeups", "share", "waker ns each", "waker ms"
        );
        for p in self.paths.iter().filter(|p| p.wakeups > 0) {
            let _ = writeln!(
                out,
                "{:<20} {:>10} {:>6.2}% {:>14.0} {:>11.3}",
                p.path,
                p.wakeups,
                self.share_pct(&p.path),
                p.waker_ns as f64 / p.wakeups as f64,
                p.waker_ns as f64 / 1e6
            );
        }
        let _ = writeln!(out, "{:<28} {:>6} {:>10} {:>10}", "CPUs", "busy", "newidle", "newidle balances (failed)");
        for c in &self.classes {
            let _ = writeln!(
                out,
                "{:<28} {:>5.1}% {:>9.2}% {:>10} ({})",
                c.class,
                c.busy_pct(),
                c.newidle_pct(),
                c.newidle_balances,
                c.newidle_failed
            );
        }
        if self.rq_lock_wait_ns > 0 {
            let _ = writeln!(out, "runqueue locks: {:.3} ms spun in all", self.rq_lock_wait_ns as f64 / 1e6);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_percentages_come_from_the_counts() {
        let s = SchedStats {
            paths: vec![("select+wakelist", 3, 300), ("runnable delayed", 0, 0), ("runnable in place", 1, 50)],
            cpu_busy_ns: vec![1_000, 1_000, 0, 0],
            cpu_newidle_ns: vec![0, 0, 100, 300],
            newidle_balances: vec![0; 4],
            newidle_failed: vec![0; 4],
            rq_lock_wait_ns: 0,
        };
        let classes = vec![
            CpuClass { name: "a".into(), cpus: [0, 1].into_iter().collect() },
            CpuClass { name: "b".into(), cpus: [2, 3].into_iter().collect() },
        ];
        let why = Why::new(&s, &classes, 1_000);
        assert_eq!(why.share_pct("select+wakelist"), 75.0);
        assert_eq!(why.share_pct("runnable in place"), 25.0);
        assert_eq!(why.waker_ns_per_wakeup(), 87.5);
        assert_eq!((why.classes[0].busy_pct(), why.classes[0].newidle_pct()), (100.0, 0.0));
        assert_eq!((why.classes[1].busy_pct(), why.classes[1].newidle_pct()), (0.0, 20.0));
        let text = why.render();
        assert!(text.contains("select+wakelist") && text.contains("runnable in place"), "{text}");
        assert!(!text.contains("runnable delayed"), "paths nobody took are left out: {text}");
    }
}
