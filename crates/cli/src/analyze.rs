//! `schedlab analyze TRACE`: the `schedlab run` report for a trace captured
//! elsewhere (tracefs `trace`/`trace_pipe` text or `trace-cmd report`).
//!
//! A real capture holds the whole machine, so the command first decides who
//! the workload is: with `--scenario`, the tasks whose comm is one of the
//! scenario's thread names (and their affinities come from it); without, the
//! `--wakees`/`--wakers` comm patterns, or else every task that wrote a
//! `schedlab` marker. Handoffs count only from a waker's `signal` to a
//! wakee's `wait_done`. Every other task stays in the trace — its CPU time is
//! what work conservation is about — but gets no row in the tables.
//! Lost-event gaps are reported with their lines, and handoffs that could
//! straddle one are not counted (see `schedlab_trace::ftrace::gaps`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::Args;
use schedlab_analysis::DEFAULT_STALL_THRESHOLD_NS;
use schedlab_scenario::Scenario;
use schedlab_topology::parse_duration;
use schedlab_trace::ftrace::{drop_markers_across_gaps, gaps, parse_ftrace_with, Gap, GapDrops, ParseOptions};
use schedlab_trace::{EventKind, Nanos, Pid, Trace, UserOp};

use crate::report::{cpulist, print_stalls_and_causes, print_table_and_measures, write_perfetto, Report, ReportArgs};

#[derive(Args)]
pub struct AnalyzeArgs {
    /// Trace text: /sys/kernel/tracing/trace, trace_pipe output or `trace-cmd report` output
    /// (the format is detected).
    pub trace: PathBuf,
    /// Scenario the trace is a run of: its thread names pick the workload's tasks by comm,
    /// and their affinities, objects, stall threshold and [[measure]]s are used.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Comm glob patterns (comma-separated, `*` and `?`) of the tasks whose `signal` starts a handoff.
    #[arg(long, value_name = "PATTERNS")]
    pub wakers: Option<String>,
    /// Comm glob patterns of the tasks whose `wait_done` ends a handoff (the wakees).
    #[arg(long, value_name = "PATTERNS")]
    pub wakees: Option<String>,
    /// Handoffs at or above this count as stalls (default: the scenario's, else 500us).
    #[arg(long, value_parser = parse_duration)]
    pub threshold: Option<u64>,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Also write the trace as a Perfetto protobuf trace (open it at ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Print the metrics as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `a*b?` matching on a whole comm.
fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    match (pat.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob_match(&pat[1..], s) || (!s.is_empty() && glob_match(pat, &s[1..])),
        (Some(b'?'), Some(_)) => glob_match(&pat[1..], &s[1..]),
        (Some(p), Some(c)) if p == c => glob_match(&pat[1..], &s[1..]),
        _ => false,
    }
}

/// Comma-separated comm patterns; `None` matches everything.
struct Patterns(Option<Vec<String>>);

impl Patterns {
    fn new(arg: &Option<String>) -> Self {
        Patterns(arg.as_ref().map(|a| a.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()))
    }

    fn matches(&self, comm: &str) -> bool {
        self.0.as_ref().is_none_or(|ps| ps.iter().any(|p| glob_match(p.as_bytes(), comm.as_bytes())))
    }
}

/// Who the workload is.
struct Workload {
    /// pid → (counted as waker, counted as wakee).
    roles: BTreeMap<Pid, (bool, bool)>,
    /// pid → affinity, from the scenario.
    allowed: BTreeMap<Pid, Vec<u32>>,
    /// Scenario thread names with no task in the trace.
    missing: Vec<String>,
    /// Signals from non-wakers and waits of non-wakees taken out.
    ignored_markers: usize,
}

fn marker_writers(trace: &Trace) -> BTreeSet<Pid> {
    trace
        .events
        .iter()
        .filter_map(|e| if let EventKind::User { pid, .. } = e.kind { Some(pid) } else { None })
        .collect()
}

/// Pick the workload's tasks and take out the markers that are not its handoffs.
fn select_workload(trace: &mut Trace, scenario: Option<&Scenario>, args: &AnalyzeArgs) -> Workload {
    let (wakers, wakees) = (Patterns::new(&args.wakers), Patterns::new(&args.wakees));
    let in_events: BTreeSet<Pid> = trace
        .events
        .iter()
        .flat_map(|e| {
            let mut v = vec![e.ctx_pid];
            match e.kind {
                EventKind::SchedSwitch { prev_pid, next_pid, .. } => v.extend([prev_pid, next_pid]),
                EventKind::SchedWaking { pid, .. }
                | EventKind::SchedWakeup { pid, .. }
                | EventKind::SchedWakeupNew { pid, .. }
                | EventKind::SchedMigrateTask { pid, .. }
                | EventKind::User { pid, .. } => v.push(pid),
                _ => {}
            }
            v
        })
        .filter(|&p| p != 0)
        .collect();
    let mut w = Workload { roles: BTreeMap::new(), allowed: BTreeMap::new(), missing: Vec::new(), ignored_markers: 0 };
    let comm = |pid: Pid| trace.table.comm(pid).to_string();
    if let Some(s) = scenario {
        for t in &s.threads {
            let pids: Vec<Pid> = in_events.iter().copied().filter(|&p| comm(p) == t.name).collect();
            if pids.is_empty() {
                w.missing.push(t.name.clone());
            }
            for p in pids {
                w.roles.insert(p, (wakers.matches(&t.name), wakees.matches(&t.name)));
                w.allowed.insert(p, t.affinity.iter().map(|c| c as u32).collect());
            }
        }
    } else if args.wakers.is_some() || args.wakees.is_some() {
        for &p in &in_events {
            let c = comm(p);
            let role = (args.wakers.is_some() && wakers.matches(&c), args.wakees.is_some() && wakees.matches(&c));
            if role.0 || role.1 {
                w.roles.insert(p, role);
            }
        }
    } else {
        let writers = marker_writers(trace);
        let pids = if writers.is_empty() { &in_events } else { &writers };
        w.roles = pids.iter().map(|&p| (p, (true, true))).collect();
    }
    let before = trace.events.len();
    let roles = &w.roles;
    trace.events.retain(|e| match e.kind {
        EventKind::User { pid, op: UserOp::Signal { .. } } => roles.get(&pid).is_some_and(|r| r.0),
        EventKind::User { pid, op: UserOp::WaitDone { .. } } => roles.get(&pid).is_some_and(|r| r.1),
        _ => true,
    });
    w.ignored_markers = before - trace.events.len();
    w
}

fn secs(ns: Nanos) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

fn gap_text(g: &Gap) -> String {
    let lost = g.lost.map_or_else(|| "events".to_string(), |n| format!("{n} events"));
    match g.cpu {
        Some(cpu) => format!("line {}: CPU {cpu} lost {lost} between {} and {} s", g.line, secs(g.start), secs(g.end)),
        None => format!(
            "header: {lost} overwritten before the trace starts; CPUs' data begins between {} and {} s",
            secs(g.start),
            secs(g.end)
        ),
    }
}

pub fn analyze_trace(args: AnalyzeArgs) -> Result<(), String> {
    let scenario = match &args.scenario {
        Some(p) => Some(Scenario::load(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let path = args.trace.display().to_string();
    let bytes = std::fs::read(&args.trace).map_err(|e| format!("{path}: cannot read: {e}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let objects = scenario.as_ref().map_or_else(Vec::new, |s| s.objects.iter().map(|o| o.name.clone()).collect());
    let parsed = parse_ftrace_with(&path, &text, &ParseOptions { objects }).map_err(|e| e.to_string())?;
    let (mut trace, stats) = (parsed.trace, parsed.stats);
    if trace.events.is_empty() {
        return Err(format!(
            "{path}: no scheduler events in {} lines (expected sched_switch/sched_wakeup lines from tracefs or trace-cmd report)",
            stats.lines
        ));
    }
    let gaps = gaps(&trace, &stats);
    let drops: GapDrops = drop_markers_across_gaps(&mut trace, &gaps);
    let workload = select_workload(&mut trace, scenario.as_ref(), &args);

    let threshold =
        args.threshold.or(scenario.as_ref().map(|s| s.stall_threshold_ns)).unwrap_or(DEFAULT_STALL_THRESHOLD_NS);
    let mut report =
        Report::of(&trace, scenario.as_ref(), threshold, None, workload.allowed.clone(), args.report.grace);
    let (start, end) = (report.metrics.start_ts, report.metrics.end_ts);

    if let Some(p) = &args.perfetto {
        write_perfetto(&trace, p)?;
    }

    if args.json {
        let doc = serde_json::json!({
            "trace": path,
            "format": stats.format.as_str(),
            "scenario": scenario.as_ref().map(|s| s.name.clone()),
            "input": {
                "lines": stats.lines,
                "events": stats.events,
                "nr_cpus": trace.nr_cpus,
                "skipped_by_event": stats.skipped_by_event,
                "lost": gaps.iter().map(|g| serde_json::json!({
                    "line": g.line, "cpu": g.cpu, "lost": g.lost, "start_ns": g.start, "end_ns": g.end,
                })).collect::<Vec<_>>(),
                "signals_dropped_at_gaps": drops.signals,
                "waits_dropped_at_gaps": drops.waits,
                "markers_not_workload": workload.ignored_markers,
                "renamed": stats.renamed.iter().map(|(p, n)| (p.to_string(), n.clone())).collect::<BTreeMap<_, _>>(),
            },
            "workload": workload.roles.iter().map(|(p, r)| serde_json::json!({
                "pid": p, "comm": trace.table.comm(*p), "waker": r.0, "wakee": r.1,
                "allowed": workload.allowed.get(p),
            })).collect::<Vec<_>>(),
            "metrics": report.metrics,
            "work_conservation": report.workcons,
            "attribution": report.attribution,
            "measures": report.measures,
        });
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        return Ok(());
    }

    let cpus_seen: BTreeSet<u32> = trace.events.iter().map(|e| e.cpu).collect();
    println!(
        "trace     {path} ({}, {} lines): {} events on CPUs {}, {} to {} s ({} s)",
        stats.format.as_str(),
        stats.lines,
        stats.events,
        cpulist(cpus_seen.iter().map(|&c| c as usize)),
        secs(start),
        secs(end),
        secs(end - start)
    );
    if stats.skipped_lines > 0 {
        let mut by: Vec<_> = stats.skipped_by_event.iter().collect();
        by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let list: Vec<String> =
            by.iter().map(|(n, c)| format!("{} {c}", if n.is_empty() { "(no event name)" } else { n })).collect();
        println!("skipped   {} lines of events not analysed: {}", stats.skipped_lines, list.join(", "));
    }
    if !gaps.is_empty() {
        let lost: u64 = gaps.iter().filter_map(|g| g.lost).sum();
        println!("lost      {lost} events in {} gaps; handoffs that could straddle a gap are not counted:", gaps.len());
        for g in &gaps {
            println!("          {}", gap_text(g));
        }
        println!(
            "          {} signal and {} wait_done markers dropped at gaps; CPU times near a gap may be off",
            drops.signals, drops.waits
        );
    }
    if !stats.renamed.is_empty() {
        let list: Vec<String> = stats.renamed.iter().take(5).map(|(p, n)| format!("{p} {}", n.join(" -> "))).collect();
        let more = stats.renamed.len().saturating_sub(5);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        println!("comms     {} pids renamed, the last name is used: {}{more}", stats.renamed.len(), list.join(", "));
    }
    if let Some(s) = &scenario {
        println!("scenario  {} ({})", s.name, s.path);
        for name in &workload.missing {
            println!("note      scenario thread `{name}` has no task in the trace");
        }
        let topo = s.topology.nr_cpus() as u32;
        if trace.nr_cpus > topo {
            println!(
                "note      the trace has {} CPUs, the scenario's machine {} has {topo}: CPUs {topo}-{} are kept as they are",
                trace.nr_cpus,
                s.topology.name,
                trace.nr_cpus - 1
            );
        }
        let absent: BTreeSet<u32> =
            workload.allowed.values().flatten().copied().filter(|&c| c >= trace.nr_cpus).collect();
        if !absent.is_empty() {
            println!(
                "note      affinities name CPUs {} that this trace does not have",
                cpulist(absent.into_iter().map(|c| c as usize))
            );
        }
    }
    let others: Vec<_> = report.metrics.tasks.iter().filter(|t| !workload.roles.contains_key(&t.pid)).collect();
    let other_ms = others.iter().map(|t| t.runtime_ns).sum::<u64>() / 1_000_000;
    println!(
        "workload  {} tasks; {} other tasks ran {other_ms} ms (kept for work conservation, not listed){}",
        workload.roles.len(),
        others.len(),
        if workload.ignored_markers > 0 {
            format!("; {} markers of other tasks ignored", workload.ignored_markers)
        } else {
            String::new()
        }
    );
    println!();
    // Only the workload's rows; handoffs are its markers' alone (the others'
    // were taken out by select_workload), so the stall figures are the same.
    report.retain_tasks(|pid| workload.roles.contains_key(&pid));
    print_table_and_measures(&report);
    if report.handoffs() == 0 {
        println!();
        println!("stalls    no handoffs (no `schedlab signal`/`wait_done` marker pairs from the workload)");
    }
    print_stalls_and_causes(&report, &trace.table, args.report.stalls);
    if let Some(p) = &args.perfetto {
        println!();
        println!("perfetto  {} (open at https://ui.perfetto.dev)", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_whole_comms() {
        assert!(glob_match(b"worker-*", b"worker-0"));
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"p?ng", b"pong"));
        assert!(!glob_match(b"p?ng", b"ping-1"));
        assert!(!glob_match(b"worker", b"worker-0"));
        assert!(glob_match(b"*-1", b"worker-1"));
    }
}
