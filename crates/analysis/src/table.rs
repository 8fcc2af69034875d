//! The per-thread text table.

use crate::{LatencyStats, RunMetrics};

/// `ns` as milliseconds with 3 decimals (truncated, like the kernel's µs),
/// without a unit: `86.198`. The one millisecond format of this crate's text.
pub fn ms(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000, ns / 1_000 % 1_000)
}

/// `ns` as microseconds with 1 decimal (truncated), without a unit: `990.0`.
/// The one microsecond format of this crate's text.
pub(crate) fn us(ns: u64) -> String {
    format!("{}.{}", ns / 1_000, ns / 100 % 10)
}

/// A threshold for a column head: `500us`, `1ms`, `1500ns`.
pub(crate) fn threshold_label(ns: u64) -> String {
    if ns >= 1_000_000 && ns / 1_000_000 * 1_000_000 == ns {
        format!("{}ms", ns / 1_000_000)
    } else if ns / 1_000 * 1_000 == ns {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// p50, p90, p99 and max; bucketed percentiles carry a `~` (the maximum
/// stays exact).
fn pcts(s: &LatencyStats) -> [String; 4] {
    let f = |v: Option<u64>| v.map_or_else(|| "-".to_string(), us);
    let p = |v: Option<u64>| if s.approximate && v.is_some() { format!("~{}", f(v)) } else { f(v) };
    [p(s.p50_ns), p(s.p90_ns), p(s.p99_ns), f(s.max_ns)]
}

/// A column: optional group label spanning equal neighbours, head, alignment.
pub(crate) struct Col {
    pub group: String,
    pub head: String,
    pub left: bool,
}

pub(crate) fn col(group: &str, head: &str, left: bool) -> Col {
    Col { group: group.to_string(), head: head.to_string(), left }
}

/// One row per task (sorted by pid, as in [`RunMetrics::tasks`]), columns:
/// thread (comm), pid, runtime and wait (ms), wakeups, wakeup latency
/// p50/p90/p99/max (µs), handoffs received, handoff latency p50/p90/p99/max
/// (µs), and stalls (handoffs ≥ the threshold). Percentiles are nearest-rank;
/// values are truncated, not rounded. A task without samples shows `-`.
/// Columns are separated by two spaces; text is left-aligned, numbers
/// right-aligned; lines have no trailing spaces.
pub fn render_run_table(m: &RunMetrics) -> String {
    let cols = vec![
        col("", "thread", true),
        col("", "pid", false),
        col("", "run ms", false),
        col("", "wait ms", false),
        col("", "wakeups", false),
        col("wakeup latency (us)", "p50", false),
        col("wakeup latency (us)", "p90", false),
        col("wakeup latency (us)", "p99", false),
        col("wakeup latency (us)", "max", false),
        col("", "handoffs", false),
        col("handoff latency (us)", "p50", false),
        col("handoff latency (us)", "p90", false),
        col("handoff latency (us)", "p99", false),
        col("handoff latency (us)", "max", false),
        col("", &format!("stalls>={}", threshold_label(m.stall_threshold_ns)), false),
    ];
    let rows: Vec<Vec<String>> = m
        .tasks
        .iter()
        .map(|t| {
            let mut r = vec![t.comm.clone(), t.pid.to_string(), ms(t.runtime_ns), ms(t.wait_ns), t.wakeups.to_string()];
            r.extend(pcts(&t.wakeup_latency));
            r.push(t.handoff_latency.count.to_string());
            r.extend(pcts(&t.handoff_latency));
            r.push(if t.handoff_latency.count == 0 {
                "-".to_string()
            } else {
                t.handoff_latency.at_or_above_threshold.to_string()
            });
            r
        })
        .collect();
    let mut out = layout(&cols, &rows);
    if m.tasks.iter().any(|t| t.wakeup_latency.approximate || t.handoff_latency.approximate) {
        out.push_str(&format!(
            "~ percentiles from buckets (the run had more than {} latency samples): at most {:.2} % below the exact figure\n",
            crate::EXACT_SAMPLES_PER_RUN,
            100.0 * crate::RELATIVE_ERROR
        ));
    }
    out
}

const GAP: usize = 2;

/// `s` right-aligned in `w` characters. By hand, not `format!("{s:>w$}")`:
/// std's formatting panics on a width past 65535 (a setting named with
/// 70 000 characters made its column that wide).
pub fn pad_left(s: &str, w: usize) -> String {
    let mut out: String = std::iter::repeat_n(' ', w.saturating_sub(width(s))).collect();
    out.push_str(s);
    out
}

/// `s` left-aligned in `w` characters (see [`pad_left`]).
pub fn pad_right(s: &str, w: usize) -> String {
    let mut out = s.to_string();
    out.extend(std::iter::repeat_n(' ', w.saturating_sub(width(s))));
    out
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Aligned text: two spaces between columns, left- or right-aligned cells,
/// group labels centred over their columns, no trailing spaces.
pub(crate) fn layout(cols: &[Col], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| rows.iter().map(|r| width(&r[i])).fold(width(&c.head), usize::max))
        .collect();
    // Group spans: runs of equal non-empty group names; widen the last column
    // of a span if its label does not fit.
    let mut spans = Vec::new();
    let mut i = 0;
    while i < cols.len() {
        let mut j = i + 1;
        while j < cols.len() && cols[j].group == cols[i].group {
            j += 1;
        }
        if !cols[i].group.is_empty() {
            let span: usize = w[i..j].iter().sum::<usize>() + GAP * (j - i - 1);
            let need = width(&cols[i].group);
            if need > span {
                w[j - 1] += need - span;
            }
            spans.push((i, j));
        }
        i = j;
    }
    let offset = |c: usize| w[..c].iter().sum::<usize>() + GAP * c;

    let mut out = String::new();
    if !spans.is_empty() {
        let mut line = String::new();
        for &(a, b) in &spans {
            let start = offset(a);
            let span = offset(b) - GAP - start;
            let label = cols[a].group.as_str();
            let pad = (span - width(label)) / 2;
            line.extend(std::iter::repeat_n(' ', start + pad - width(&line)));
            line.push_str(label);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let mut emit = |cells: &mut dyn Iterator<Item = &str>| {
        let mut line = String::new();
        for (c, cell) in cells.enumerate() {
            if c > 0 {
                line.push_str(&" ".repeat(GAP));
            }
            let fill = " ".repeat(w[c] - width(cell));
            if cols[c].left {
                line.push_str(cell);
                line.push_str(&fill);
            } else {
                line.push_str(&fill);
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    emit(&mut cols.iter().map(|c| c.head.as_str()));
    for r in rows {
        emit(&mut r.iter().map(String::as_str));
    }
    out
}
