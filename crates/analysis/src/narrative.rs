//! Text for stall stories: the steps' phrases, the one-line chain, and the
//! renderers of the cause table, the narratives and the work-conservation
//! tables. Output is plain ASCII (`->`, `us`) so it pastes into a mail.

use std::collections::BTreeMap;

use schedlab_trace::{BalanceKind, Nanos, Pid, PreemptReason, WakePath};
use serde::Serialize;

use crate::attribution::Ctx;
use crate::causes::{Attribution, PreemptCheck, StallStory};
use crate::table::{self, col, layout, threshold_label};
use crate::timeline::cpulist;
use crate::workcons::WorkConservation;

/// One decision or occurrence in a stall's chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    pub ts: Nanos,
    /// The CPU it happened on (the event's CPU).
    pub cpu: u32,
    pub text: String,
}

/// `ns` as `990.0 us` (truncated to 0.1 us).
pub fn us(ns: u64) -> String {
    format!("{} us", table::us(ns))
}

/// A duration for prose: `990.0 us` below 10 ms, `86.198 ms` above.
pub fn dur(ns: u64) -> String {
    if ns < 10_000_000 {
        us(ns)
    } else {
        format!("{} ms", table::ms(ns))
    }
}

/// A signed `ns` as `-93.3 us`.
pub fn us_signed(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    format!("{sign}{}", us(ns.unsigned_abs()))
}

pub(crate) fn ttwu_path_text(path: WakePath, cpu: u32) -> String {
    match path {
        WakePath::Runnable { delayed: true } => {
            format!("ttwu_runnable found it sched_delayed: requeued in place on CPU {cpu}, no select_task_rq")
        }
        WakePath::Runnable { delayed: false } => format!("ttwu_runnable: still queued on CPU {cpu}"),
        WakePath::Activate => format!("select_task_rq chose CPU {cpu} (ttwu_do_activate)"),
        WakePath::Wakelist => format!("select_task_rq chose CPU {cpu}, queued on its wakelist (ttwu_queue_wakelist)"),
    }
}

pub(crate) fn preempt_text(p: &PreemptCheck) -> String {
    if p.reason == PreemptReason::Idle {
        "wakeup_preempt: CPU idle, the wakee runs next".to_string()
    } else if p.preempt {
        format!("wakeup_preempt: preempting {} ({})", p.curr, p.reason.as_str())
    } else {
        format!("wakeup_preempt: not preempting {} ({})", p.curr, p.reason.as_str())
    }
}

/// The kernel function behind a balancer path.
pub(crate) fn balancer_fn(kind: BalanceKind) -> &'static str {
    match kind {
        BalanceKind::Periodic => "periodic sched_balance_rq",
        BalanceKind::Newidle => "sched_balance_newidle",
        BalanceKind::NohzIdle => "nohz_idle_balance",
        BalanceKind::Active => "active_load_balance_cpu_stop",
    }
}

pub(crate) fn move_text(comm: &str, from: u32, to: u32, kind: Option<BalanceKind>) -> String {
    match kind {
        Some(k) => format!("{} moved {comm} from CPU {from} to CPU {to}", balancer_fn(k)),
        None => format!("{comm} moved from CPU {from} to CPU {to} at its wakeup (select_task_rq)"),
    }
}

pub(crate) fn block_text(comm: &str, lag: Option<i64>) -> String {
    match lag {
        Some(l) => format!("{comm} blocked while ineligible: dequeue_entity left it delayed (lag {})", us_signed(l)),
        None => format!("{comm} blocked (dequeued)"),
    }
}

/// "CPUs 4,5,7 idle for 98 % of the wait" (CPUs grouped by percentage).
pub(crate) fn idle_phrase(s: &StallStory) -> String {
    if s.wait_ns == 0 || s.idle_allowed.is_empty() {
        return "no other allowed CPU idle during the wait".to_string();
    }
    let mut groups: BTreeMap<std::cmp::Reverse<u64>, Vec<u32>> = BTreeMap::new();
    for c in &s.idle_allowed {
        let pct = (c.idle_ns * 100 + s.wait_ns / 2) / s.wait_ns;
        groups.entry(std::cmp::Reverse(pct)).or_default().push(c.cpu);
    }
    let parts: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(i, (pct, cpus))| {
            let who = if cpus.len() == 1 { format!("CPU {}", cpus[0]) } else { format!("CPUs {}", cpulist(cpus)) };
            if i == 0 {
                format!("{who} idle for {} % of the wait", pct.0)
            } else {
                format!("{who} for {} %", pct.0)
            }
        })
        .collect();
    parts.join(", ")
}

/// "moved there 190.0 us earlier by active_load_balance_cpu_stop from CPU 7",
/// relative to `from`.
fn arrival_phrase(a: &crate::causes::CpuArrival, from: Nanos, later: &str) -> String {
    let when =
        if a.ts <= from { format!("{} earlier", dur(from - a.ts)) } else { format!("{} {later}", dur(a.ts - from)) };
    match a.balancer {
        Some(k) => format!("moved there {when} by {} from CPU {}", balancer_fn(k), a.src_cpu),
        None => format!("placed there {when} by its wakeup, from CPU {}", a.src_cpu),
    }
}

/// The chain in one line, like the seed report's "Sequence".
pub(crate) fn summary(
    s: &StallStory,
    moves: &[(Nanos, u32, u32, Option<BalanceKind>)],
    preempted: Option<(Nanos, u32, Pid)>,
    ctx: &Ctx,
) -> String {
    let mut parts = Vec::new();
    let w = &s.wakee;
    if let Some((_, cpu, by)) = preempted {
        parts.push(format!("{w} preempted on CPU {cpu} by {}", ctx.comm(by)));
    } else if let (Some(cpu), Some(bts)) = (s.blocked_cpu, s.blocked_ts) {
        let there =
            s.wakee_arrival.as_ref().map_or(String::new(), |a| format!(" ({})", arrival_phrase(a, bts, "later")));
        parts.push(match s.blocked_delayed_lag_ns {
            Some(l) => {
                format!("{w} blocked on CPU {cpu}{there} while ineligible -> left delayed (lag {})", us_signed(l))
            }
            None => format!("{w} blocked on CPU {cpu}{there}"),
        });
    }
    if let Some(d) = &s.wakeup {
        let waker = ctx.comm(d.waker_pid);
        let busy = |d: &crate::causes::WakeDecision| {
            if d.curr_at_decision == 0 {
                " (idle at the decision)".to_string()
            } else {
                format!(" (running {} at the decision)", ctx.comm(d.curr_at_decision))
            }
        };
        let how = match d.path {
            Some(WakePath::Runnable { delayed: true }) => {
                format!("ttwu_runnable (delayed, no select_task_rq) on CPU {}", d.cpu)
            }
            Some(WakePath::Runnable { delayed: false }) => format!("ttwu_runnable (still queued on CPU {})", d.cpu),
            Some(WakePath::Activate) => format!("select_task_rq -> CPU {}{}", d.cpu, busy(d)),
            Some(WakePath::Wakelist) => format!("select_task_rq -> CPU {}'s wakelist{}", d.cpu, busy(d)),
            None => format!("sched_wakeup on CPU {}{}", d.cpu, busy(d)),
        };
        if d.path.is_none() {
            parts.push(format!("{waker} woke it: {how}"));
        } else {
            parts.push(format!("{waker} on CPU {} woke it via {how}", d.waker_cpu));
        }
        if let Some(p) = d.preempt.as_ref().filter(|p| p.reason != PreemptReason::Idle) {
            parts.push(preempt_text(p));
        }
    }
    if let (Some(c), Some(cpu)) = (&s.culprit, s.culprit_cpu) {
        let ns = s.components.iter().find(|x| x.pid == s.culprit_pid).map_or(0, |x| x.ns);
        let from = s.wakeup.as_ref().map_or(s.start_ts, |d| d.ts);
        let arrival = match &s.culprit_arrival {
            Some(a) => format!(" ({})", arrival_phrase(a, from, "after the wakeup")),
            None => " (no migration onto it in the trace)".to_string(),
        };
        parts.push(format!("{c} ran {} on CPU {cpu}{arrival}", us(ns)));
    }
    let from = s.wakeup.as_ref().map_or(s.start_ts, |d| d.ts);
    for &(ts, a, b, kind) in moves {
        let who = kind.map_or("select_task_rq", balancer_fn);
        parts.push(format!("{who} moved {w} from CPU {a} to CPU {b} after {}", us(ts.saturating_sub(from))));
    }
    parts.push(idle_phrase(s));
    let late = if s.wait_ns > 0 { s.wait_ns } else { s.latency_ns };
    parts.push(format!("{w} ran {} late", us(late)));
    parts.join("; ")
}

/// Wrap `text` at `width` columns, continuation lines indented by `indent`.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    // Keep units with their numbers: `763.4 us`, `100 %`.
    let mut words: Vec<String> = Vec::new();
    for w in text.split(' ') {
        match words.last_mut() {
            Some(last) if matches!(w.trim_end_matches([',', ';', ')']), "us" | "ms" | "%") => {
                last.push(' ');
                last.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    for word in &words {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width.saturating_sub(indent) {
            out.push_str(&line);
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

/// The cause table: cause, stalls, total and share of the stall time, culprit.
pub fn render_cause_table(a: &Attribution) -> String {
    let cols = vec![
        col("", "cause", true),
        col("", "stalls", false),
        col("", "total us", false),
        col("", "share", false),
        col("", "culprit", true),
    ];
    let rows: Vec<Vec<String>> = a
        .causes
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.stalls.to_string(),
                table::us(r.total_ns),
                format!("{:.1} %", r.share_pct),
                match (&r.culprit, r.culprit_pid) {
                    (Some(c), Some(p)) => format!("{c} ({p})"),
                    _ => "-".to_string(),
                },
            ]
        })
        .collect();
    layout(&cols, &rows)
}

/// The narratives of the first `n` stalls.
pub fn render_stall_narratives(a: &Attribution, n: usize) -> String {
    let mut out = String::new();
    for (i, s) in a.stalls.iter().take(n).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "stall {} of {}: {} waited {} for {} from {} (signal at {}.{:06} s)\n",
            i + 1,
            a.explained(),
            s.wakee,
            us(s.latency_ns),
            s.obj_name,
            s.waker,
            s.start_ts / 1_000_000_000,
            s.start_ts % 1_000_000_000 / 1000
        ));
        let share = if s.latency_ns == 0 { 0.0 } else { 100.0 * s.cause_ns as f64 / s.latency_ns as f64 };
        out.push_str(&format!("  cause     {} ({}, {share:.1} % of the handoff)\n", s.cause_text, us(s.cause_ns)));
        let parts: Vec<String> = s
            .components
            .iter()
            .map(|c| {
                let what = match (c.part, &c.comm) {
                    (crate::causes::Part::Wakeup, _) => "waking".to_string(),
                    (crate::causes::Part::IdleExit, _) => "idle exit".to_string(),
                    (crate::causes::Part::Behind, Some(comm)) => format!("behind {comm}"),
                    (crate::causes::Part::Behind, None) => "behind ?".to_string(),
                    (crate::causes::Part::Running, _) => "running".to_string(),
                };
                format!("{what} {}", us(c.ns))
            })
            .collect();
        out.push_str(&format!("  time      {}\n", wrap(&parts.join(", "), 100, 12)));
        out.push_str(&format!("  chain     {}\n", wrap(&s.summary, 100, 12)));
        let cols = vec![col("", "      time", false), col("", "cpu", false), col("", "event", true)];
        let rows: Vec<Vec<String>> = s
            .steps
            .iter()
            .map(|st| {
                let rel = st.ts as i64 - s.start_ts as i64;
                let sign = if rel < 0 { "-" } else { "+" };
                vec![format!("{sign}{}", us(rel.unsigned_abs())), st.cpu.to_string(), st.text.clone()]
            })
            .collect();
        for line in layout(&cols, &rows).lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Per-task and per-CPU work-conservation tables and the unclaimed-idle line.
pub fn render_work_conservation(w: &WorkConservation) -> String {
    let g = format!(">= {} (concurrent)", threshold_label(w.grace_ns));
    let cols = vec![
        col("", "thread", true),
        col("", "pid", false),
        col("", "allowed", true),
        col("", "waits", false),
        col("", "wait ms", false),
        col("strict", "count", false),
        col("strict", "ms", false),
        col("strict", "max us", false),
        col(&g, "count", false),
        col(&g, "ms", false),
        col(&g, "max us", false),
    ];
    let rows: Vec<Vec<String>> = w
        .tasks
        .iter()
        .filter(|t| !t.left_out)
        .map(|t| {
            vec![
                t.comm.clone(),
                t.pid.to_string(),
                cpulist(&t.allowed),
                t.waits.to_string(),
                table::ms(t.wait_ns),
                t.strict.count.to_string(),
                table::ms(t.strict.total_ns),
                table::us(t.strict.max_ns),
                t.grace.count.to_string(),
                table::ms(t.grace.total_ns),
                table::us(t.grace.max_ns),
            ]
        })
        .collect();
    let mut out = layout(&cols, &rows);
    let tasks_out = w.tasks.iter().filter(|t| t.left_out).count();
    if tasks_out > 0 {
        out.push_str(&format!(
            "({tasks_out} tasks left out: they may run on a CPU whose occupant the trace does not establish)\n"
        ));
    }
    out.push('\n');
    let g2 = format!("unclaimed, >= {}", threshold_label(w.grace_ns));
    let uncertain = w.cpus.iter().any(|c| c.uncertain_ns > 0);
    let mut cols = vec![
        col("", "cpu", false),
        col("", "idle ms", false),
        col("unclaimed, strict", "ms", false),
        col("unclaimed, strict", "count", false),
        col("unclaimed, strict", "%", false),
        col(&g2, "ms", false),
        col(&g2, "count", false),
        col(&g2, "%", false),
    ];
    if uncertain {
        cols.push(col("", "uncertain ms", false));
    }
    let rows: Vec<Vec<String>> = w
        .cpus
        .iter()
        .map(|c| {
            if c.left_out {
                let mut row = vec![c.cpu.to_string()];
                row.extend(std::iter::repeat_n("-".to_string(), 7));
                row.push(table::ms(c.uncertain_ns));
                return row;
            }
            let mut row = vec![
                c.cpu.to_string(),
                table::ms(c.idle_ns),
                table::ms(c.unclaimed.total_ns),
                c.unclaimed.count.to_string(),
                format!("{:.2}", c.unclaimed_pct),
                table::ms(c.unclaimed_grace.total_ns),
                c.unclaimed_grace.count.to_string(),
                format!("{:.2}", c.unclaimed_grace_pct),
            ];
            if uncertain {
                row.push(table::ms(c.uncertain_ns));
            }
            row
        })
        .collect();
    out.push_str(&layout(&cols, &rows));
    let left_out: Vec<u32> = w.cpus.iter().filter(|c| c.left_out).map(|c| c.cpu).collect();
    if !left_out.is_empty() {
        out.push_str(&format!(
            "CPUs {} left out: who ran is unknown for more than {} % of the window (switches missing from the \
             trace; `uncertain ms`)\n",
            cpulist(&left_out),
            crate::workcons::UNCERTAIN_LIMIT_PCT
        ));
    }
    if !w.has_figures() {
        out.push_str("unclaimed idle: no figure, no CPU's occupant is established\n");
        return out;
    }
    out.push_str(&format!(
        "unclaimed idle: {:.2} % strict, {:.2} % with a {} grace window, of the idle time of CPUs {}\n",
        w.unclaimed_pct,
        w.unclaimed_grace_pct,
        threshold_label(w.grace_ns),
        crate::workcons::covered_cpus(w)
    ));
    out
}
