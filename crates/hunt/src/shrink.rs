//! Shrinking: make a failing case as small as it goes while it still
//! shows its class (and, in a differential hunt, still only on its side).
//!
//! Greedy: go through the candidates of [`candidates`] in order (one
//! thread fewer, one operation fewer, no start delay, halved lengths, one
//! CPU fewer in an affinity, a simpler policy, a shorter run), keep
//! each that still fails, and repeat until a pass keeps nothing or the
//! budget of simulations is spent. Sequential and seeded, so
//! the same case always shrinks to the same scenario.

use schedlab_analysis::describe_event;
use schedlab_topology::Topology;
use schedlab_trace::{EventKind, Pid};

use crate::check::{Class, Family, Finding};
use crate::grammar::{Case, GenOp, GenPolicy};
use crate::{case, run_case, run_case_checked, HuntOptions, Report, RunOutcome, Side};

/// Whether `c` still shows `class` on `side`.
fn fails(opts: &HuntOptions, c: &Case, topo: &Topology, class: Class, side: Side) -> bool {
    let invariants = class.family() == Family::Invariant;
    let has =
        |features: Option<&[String]>| run_case_checked(c, topo, features, opts, invariants).classes().contains(&class);
    match side {
        Side::Only => has(None),
        Side::MainOnly => has(None) && !has(opts.against.as_deref()),
        Side::AgainstOnly => has(opts.against.as_deref()) && !has(None),
    }
}

/// Smaller variants of `c`, most reducing first.
pub fn candidates(c: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    if c.threads.len() > 1 {
        for i in 0..c.threads.len() {
            let mut d = c.clone();
            d.threads.remove(i);
            drop_unused_mutexes(&mut d);
            out.push(d);
        }
    }
    for (ti, t) in c.threads.iter().enumerate() {
        if t.ops.len() <= 1 {
            continue;
        }
        for oi in 0..t.ops.len() {
            let mut ops = t.ops.clone();
            match &ops[oi] {
                // A lock goes with its unlock (a program may not end an
                // iteration holding a mutex, nor unlock one it does not hold).
                GenOp::Lock(m) | GenOp::Unlock(m) => {
                    let m = m.clone();
                    ops.retain(|o| !matches!(o, GenOp::Lock(x) | GenOp::Unlock(x) if *x == m));
                }
                _ => {
                    ops.remove(oi);
                }
            }
            if ops.is_empty() || ops == t.ops {
                continue;
            }
            let mut d = c.clone();
            d.threads[ti].ops = ops;
            drop_unused_mutexes(&mut d);
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    for (ti, t) in c.threads.iter().enumerate() {
        if t.delay_ns > 0 {
            let mut d = c.clone();
            d.threads[ti].delay_ns = 0;
            out.push(d);
        }
    }
    for (ti, t) in c.threads.iter().enumerate() {
        for (oi, op) in t.ops.iter().enumerate() {
            let halved = match op {
                GenOp::Run(ns) if *ns >= 2_000 => Some(GenOp::Run(ns / 2 / 1_000 * 1_000)),
                GenOp::Sleep(ns) if *ns >= 2_000 => Some(GenOp::Sleep(ns / 2 / 1_000 * 1_000)),
                GenOp::Poll { flag, after_ns } if *after_ns >= 2_000 => {
                    Some(GenOp::Poll { flag: flag.clone(), after_ns: after_ns / 2 / 1_000 * 1_000 })
                }
                _ => None,
            };
            if let Some(h) = halved {
                let mut d = c.clone();
                d.threads[ti].ops[oi] = h;
                out.push(d);
            }
        }
    }
    for (ti, t) in c.threads.iter().enumerate() {
        if t.affinity.len() > 1 {
            for cpu in t.affinity.iter() {
                let mut d = c.clone();
                d.threads[ti].affinity.remove(cpu);
                out.push(d);
            }
        }
    }
    for (ti, t) in c.threads.iter().enumerate() {
        let simpler = match t.policy {
            GenPolicy::Rr { prio } => Some(GenPolicy::Fifo { prio }),
            GenPolicy::Other { nice } if nice != 0 => Some(GenPolicy::Other { nice: 0 }),
            _ => None,
        };
        if let Some(p) = simpler {
            let mut d = c.clone();
            d.threads[ti].policy = p;
            out.push(d);
        }
    }
    // The run's length last: a shorter run leaves fewer chances for the
    // class to appear, and the cuts above hold better with them.
    if c.duration_ns >= 20_000_000 {
        let mut d = c.clone();
        d.duration_ns = c.duration_ns / 2 / 1_000_000 * 1_000_000;
        out.push(d);
    }
    out
}

pub(crate) fn drop_unused_mutexes(c: &mut Case) {
    let used = |m: &str| c.threads.iter().any(|t| t.ops.iter().any(|o| matches!(o, GenOp::Lock(x) if x == m)));
    let keep: Vec<(String, bool)> = c.mutexes.iter().filter(|(m, _)| used(m)).cloned().collect();
    c.mutexes = keep;
}

/// Shrink `c` while it fails; returns the smallest case and the
/// simulations spent. Passes over the candidate list: after a candidate is
/// kept, the list is drawn again for the smaller case and the pass goes on
/// from the same position (the candidates before it were just tried); a
/// pass that keeps nothing ends the shrink.
pub fn shrink(opts: &HuntOptions, c: &Case, topo: &Topology, class: Class, side: Side) -> (Case, usize) {
    let mut best = c.clone();
    let mut runs = 0;
    loop {
        let mut kept = false;
        let mut i = 0;
        let mut list = candidates(&best);
        while i < list.len() {
            if runs >= opts.shrink_budget {
                return (best, runs);
            }
            runs += 1;
            if fails(opts, &list[i], topo, class, side) {
                best = list.swap_remove(i);
                kept = true;
                list = candidates(&best);
            } else {
                i += 1;
            }
        }
        if !kept {
            return (best, runs);
        }
    }
}

/// Shrink case `index` for `class` and describe what its run shows.
pub fn report(opts: &HuntOptions, index: u64, class: Class, side: Side) -> Report {
    let (original, topo) = case(opts, index);
    let features = match side {
        Side::AgainstOnly => opts.against.as_deref(),
        _ => None,
    };
    // The run ends where the finding does: the same steps up to there, so
    // the same finding, in a shorter run for every shrinking step after.
    let mut start = original.clone();
    if let RunOutcome::Ran { findings, .. } = run_case(&original, topo, features, opts) {
        if let Some(f) = findings.iter().find(|f| f.class == class && f.pid != 0) {
            let cut = (f.end_ns / 1_000_000 + 2) * 1_000_000;
            if cut < start.duration_ns {
                let mut c = start.clone();
                c.duration_ns = cut;
                if fails(opts, &c, topo, class, side) {
                    start = c;
                }
            }
        }
    }
    let (shrunk, shrink_runs) = shrink(opts, &start, topo, class, side);
    // The final run checks the invariants the shrinking runs did not.
    let (finding, names, narrative) = match run_case(&shrunk, topo, features, opts) {
        RunOutcome::Ran { findings, trace, names } => {
            let f = findings
                .iter()
                .find(|f| f.class == class)
                .or_else(|| findings.iter().find(|f| f.class.family() == Family::Invariant))
                .cloned()
                .unwrap_or_else(|| unreachable!("the shrunk case showed {} while shrinking", class.name()));
            let lines = narrative(&trace, &f);
            (f, names, lines)
        }
        RunOutcome::Refused(e) => unreachable!("the shrunk case ran while shrinking: {e}"),
    };
    let name = |pid: Option<Pid>| {
        pid.map(|p| if p == 0 { "idle".into() } else { names.get(&p).cloned().unwrap_or(p.to_string()) })
    };
    let mut header = vec![
        format!("Found by `schedlab hunt` (hunt seed {}, case {index}): {}.", opts.seed, class.describe()),
        format!(
            "Shrunk from {} threads / {} operations to {} / {} in {shrink_runs} simulations.",
            original.threads.len(),
            original.size().1,
            shrunk.threads.len(),
            shrunk.size().1
        ),
    ];
    if let Some(against) = &opts.against {
        let list = |f: &[String]| if f.is_empty() { "the profile's defaults".to_string() } else { f.join(",") };
        header.push(match side {
            Side::MainOnly => format!("Not shown with features {}.", list(against)),
            Side::AgainstOnly => format!("Shown with features {}, not with these.", list(against)),
            Side::Only => unreachable!(),
        });
    }
    header.push(if finding.pid == 0 {
        format!("Reproduce: schedlab run FILE --check-invariants (it stops at {} s).", secs(finding.start_ns))
    } else {
        format!("Reproduce: schedlab run FILE; it begins at {} s.", secs(finding.start_ns))
    });
    let scenario = shrunk.to_toml(&format!("hunt-{}-{index}", class.name()), &header);
    Report {
        class,
        side,
        case_index: index,
        original_size: original.size(),
        shrunk_size: shrunk.size(),
        shrink_runs,
        thread: name(Some(finding.pid)).unwrap_or_default(),
        behind: name(finding.behind),
        other: name(finding.other_pid),
        finding,
        narrative,
        scenario,
    }
}

fn secs(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1_000)
}

/// Lines of a narrative before and after the finding's start.
const LINES_BEFORE: usize = 12;
const LINES_AFTER: usize = 16;

/// The events about the finding's task and CPUs around the start of its
/// interval (how it got there and what followed), described in kernel terms.
fn narrative(trace: &schedlab_trace::Trace, f: &Finding) -> Vec<String> {
    if f.pid == 0 {
        return vec![f.message.clone()];
    }
    let events = trace.in_time_order();
    let cpus = [Some(f.cpu), f.other_cpu];
    let about = |k: &EventKind| match *k {
        EventKind::SchedWaking { pid, .. }
        | EventKind::SchedWakeup { pid, .. }
        | EventKind::SchedWakeupNew { pid, .. }
        | EventKind::SchedMigrateTask { pid, .. }
        | EventKind::SchedPiSetprio { pid, .. }
        | EventKind::Ttwu { pid, .. }
        | EventKind::Delayed { pid, .. } => pid == f.pid,
        EventKind::WakeupPreempt { wakee, .. } => wakee == f.pid,
        _ => false,
    };
    let line = |e: &schedlab_trace::Event| format!("{} CPU {}: {}", secs(e.ts), e.cpu, describe_event(&trace.table, e));
    let relevant: Vec<&schedlab_trace::Event> = events
        .iter()
        .filter(|e| e.ts <= f.end_ns)
        .filter(|e| about(&e.kind) || (matches!(e.kind, EventKind::SchedSwitch { .. }) && cpus.contains(&Some(e.cpu))))
        .collect();
    let split = relevant.partition_point(|e| e.ts <= f.start_ns);
    let mut lines: Vec<String> = relevant[split.saturating_sub(LINES_BEFORE)..split].iter().map(|e| line(e)).collect();
    let after = &relevant[split..];
    if after.len() > LINES_AFTER {
        lines.extend(after[..LINES_AFTER - 1].iter().map(|e| line(e)));
        lines.push(format!("({} more events)", after.len() - LINES_AFTER));
        lines.push(line(after[after.len() - 1]));
    } else {
        lines.extend(after.iter().map(|e| line(e)));
    }
    lines.push(format!("{} the {:.3} ms counted as {} end", secs(f.end_ns), f.len_ns() as f64 / 1e6, f.class.name()));
    lines
}
