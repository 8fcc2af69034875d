//! Per-CPU occupancy around one stall: who ran on which CPU, from a little
//! before the waker's signal until after the wakee ran, read from
//! `sched_switch` alone (as `perf sched timehist` would), with the stall's
//! events marked on top.
//!
//! What is drawn:
//! * one lane per CPU ([`stall_lanes`]: the wakee's allowed CPUs plus any
//!   CPU the waker, wakee or culprit touched in the window), a bar per
//!   running interval coloured by task (idle blank), the comm on bars wide
//!   enough to hold it;
//! * markers: the signal (a dashed line at t = 0, a triangle on the
//!   waker's CPU), the wakee's `sched_wakeup` (circle on the target CPU),
//!   every `sched_migrate_task` of the wakee or the culprit (an arrow from
//!   the old lane to the new), the wakee's switch-in (diamond) and its wait
//!   returning (bar end tick);
//! * the wakee's runqueue wait (wakeup → switch-in) shaded on the lane(s)
//!   where it was queued;
//! * a time axis in µs relative to the signal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use schedlab_analysis::StallStory;
use schedlab_trace::{Event, EventKind, Nanos, Pid, Trace, UserOp};

use crate::svg::{escape, num, Doc, CHAR_W, PALETTE};

const LEFT: f64 = 80.0;
const PLOT_W: f64 = 900.0;
const LANE_H: f64 = 26.0;
const BAR_TOP: f64 = 3.0;
const BAR_H: f64 = 16.0;
const WAIT_TOP: f64 = 20.0;
const WAIT_H: f64 = 5.0;

const WAKEE_COLOR: &str = "#4e79a7";
const CULPRIT_COLOR: &str = "#e15759";
const WAKER_COLOR: &str = "#59a14f";
const WAIT_FILL: &str = "#ffd92f";
const WAIT_BAND: &str = "#f2b701";

/// The time span an occupancy plot shows for `story`: from a little before
/// the signal (or before the wakee blocked or the culprit arrived, when that
/// happened within one stall length of it) to a little after the wait
/// returned. The margin is a tenth of the stall, at least 20 µs.
pub fn stall_window(story: &StallStory) -> (Nanos, Nanos) {
    let margin = (story.latency_ns / 10).max(20_000);
    let reach = story.start_ts.saturating_sub(story.latency_ns);
    let earliest = [story.blocked_ts, story.culprit_arrival.as_ref().map(|a| a.ts)]
        .into_iter()
        .flatten()
        .filter(|&t| t >= reach)
        .fold(story.start_ts, Nanos::min);
    (earliest.saturating_sub(margin), story.end_ts + margin)
}

/// The CPUs to give a lane: the wakee's allowed CPUs (`allowed`; every CPU
/// of the machine, `nr_cpus`, when it is not listed), plus every CPU on which the waker,
/// the wakee or the culprit ran, was woken or migrated to or from inside
/// `window` (`events` in time order). Ascending.
pub fn stall_lanes(
    events: &[Event],
    nr_cpus: u32,
    story: &StallStory,
    allowed: &BTreeMap<Pid, Vec<u32>>,
    window: (Nanos, Nanos),
) -> Vec<u32> {
    let mut cpus: BTreeSet<u32> = match allowed.get(&story.wakee_pid) {
        Some(list) if !list.is_empty() => list.iter().copied().collect(),
        _ => (0..nr_cpus.max(1)).collect(),
    };
    let who = [Some(story.wakee_pid), Some(story.waker_pid), story.culprit_pid];
    let involved = |pid: Pid| who.contains(&Some(pid));
    let first = events.partition_point(|e| e.ts < window.0);
    for ev in events[first..].iter().take_while(|e| e.ts <= window.1) {
        match ev.kind {
            EventKind::SchedSwitch { prev_pid, next_pid, .. } if involved(prev_pid) || involved(next_pid) => {
                cpus.insert(ev.cpu);
            }
            EventKind::SchedWakeup { pid, target_cpu, .. } if involved(pid) => {
                cpus.insert(target_cpu);
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } if involved(pid) => {
                cpus.insert(orig_cpu);
                cpus.insert(dest_cpu);
            }
            EventKind::User { pid, .. } if involved(pid) => {
                cpus.insert(ev.cpu);
            }
            _ => {}
        }
    }
    cpus.into_iter().collect()
}

/// One running interval on a CPU, clipped to the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    pub cpu: u32,
    pub pid: Pid,
    pub start: Nanos,
    pub end: Nanos,
}

/// The running intervals of non-idle tasks on `cpus` within `window`, from
/// `sched_switch` (`events` in time order). Who ran at the window's start is
/// the `next_pid` of the CPU's last switch before it, or, failing that, the
/// `prev_pid` of its first switch inside it; a CPU with no switch at all
/// stays blank.
pub fn running_bars(events: &[Event], cpus: &[u32], window: (Nanos, Nanos)) -> Vec<Bar> {
    let (ws, we) = window;
    let first_in = events.partition_point(|e| e.ts < ws);
    let mut bars = Vec::new();
    for &cpu in cpus {
        let switch = |e: &Event| match e.kind {
            EventKind::SchedSwitch { prev_pid, next_pid, .. } if e.cpu == cpu => Some((prev_pid, next_pid)),
            _ => None,
        };
        let mut curr: Option<Pid> = events[..first_in].iter().rev().find_map(|e| switch(e).map(|(_, next)| next));
        let mut since = ws;
        for e in events[first_in..].iter().take_while(|e| e.ts <= we) {
            if let Some((prev, next)) = switch(e) {
                let running = curr.unwrap_or(prev);
                if running != 0 && e.ts > since {
                    bars.push(Bar { cpu, pid: running, start: since, end: e.ts });
                }
                curr = Some(next);
                since = e.ts;
            }
        }
        if let Some(pid) = curr.filter(|&p| p != 0) {
            if we > since {
                bars.push(Bar { cpu, pid, start: since, end: we });
            }
        }
    }
    bars
}

/// The stall's events found in the trace.
#[derive(Default)]
struct Moments {
    /// The signal's CPU.
    signal_cpu: Option<u32>,
    /// `sched_wakeup` of the wakee: time and target CPU.
    wakeup: Option<(Nanos, u32)>,
    /// The wakee's switch-in after the wakeup: time and CPU.
    switch_in: Option<(Nanos, u32)>,
    /// (ts, pid, from, to, balancer) of the wakee's and culprit's
    /// migrations; the balancer path from the `schedlab_lb_migrate` that
    /// follows, `None` for a wakeup's `select_task_rq()` (or a real trace).
    migrations: Vec<(Nanos, Pid, u32, u32, Option<&'static str>)>,
    /// Where the wakee was queued while it waited: (cpu, from, to).
    waits: Vec<(u32, Nanos, Nanos)>,
}

fn find_moments(events: &[Event], story: &StallStory, window: (Nanos, Nanos)) -> Moments {
    let mut m = Moments::default();
    let wakee = story.wakee_pid;
    let mut queued: Option<(u32, Nanos)> = None;
    let in_window = events.partition_point(|e| e.ts < window.0);
    for e in events[in_window..].iter().take_while(|e| e.ts <= window.1) {
        match e.kind {
            EventKind::User { pid, op: UserOp::Signal { .. } } if pid == story.waker_pid && e.ts == story.start_ts => {
                m.signal_cpu.get_or_insert(e.cpu);
            }
            EventKind::SchedWakeup { pid, target_cpu, .. }
                if pid == wakee && e.ts >= story.start_ts && m.wakeup.is_none() =>
            {
                m.wakeup = Some((e.ts, target_cpu));
                queued = Some((target_cpu, e.ts));
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. }
                if pid == wakee || Some(pid) == story.culprit_pid =>
            {
                m.migrations.push((e.ts, pid, orig_cpu, dest_cpu, None));
                if pid == wakee {
                    if let Some((cpu, since)) = queued.take() {
                        m.waits.push((cpu, since, e.ts));
                        queued = Some((dest_cpu, e.ts));
                    }
                }
            }
            EventKind::LbMigrate { pid, src_cpu, dst_cpu, kind, .. } => {
                if let Some(last) = m.migrations.last_mut().filter(|l| (l.1, l.2, l.3) == (pid, src_cpu, dst_cpu)) {
                    last.4 = Some(kind.as_str());
                }
            }
            EventKind::SchedSwitch { next_pid, .. }
                if next_pid == wakee && m.wakeup.is_some() && m.switch_in.is_none() =>
            {
                m.switch_in = Some((e.ts, e.cpu));
                if let Some((cpu, since)) = queued.take() {
                    m.waits.push((cpu, since, e.ts));
                }
            }
            _ => {}
        }
    }
    if let Some((cpu, since)) = queued {
        m.waits.push((cpu, since, window.1));
    }
    m
}

/// Colours by task: the wakee, culprit and waker fixed, the others from the
/// palette in order of first appearance.
fn task_colors(story: &StallStory, bars: &[Bar]) -> BTreeMap<Pid, &'static str> {
    let mut colors = BTreeMap::new();
    colors.insert(story.wakee_pid, WAKEE_COLOR);
    colors.insert(story.waker_pid, WAKER_COLOR);
    if let Some(c) = story.culprit_pid {
        colors.entry(c).or_insert(CULPRIT_COLOR);
    }
    let mut free = PALETTE.iter().copied().filter(|c| ![WAKEE_COLOR, CULPRIT_COLOR, WAKER_COLOR].contains(c));
    for b in bars {
        colors.entry(b.pid).or_insert_with(|| free.next().unwrap_or("#bab0ac"));
    }
    colors
}

/// A tick step of 1, 2 or 5 × 10^k µs giving at most about ten ticks.
fn tick_step_ns(span_ns: u64) -> u64 {
    let mut step = 1_000u64;
    loop {
        for m in [1, 2, 5] {
            if span_ns / (step * m) <= 10 {
                return step * m;
            }
        }
        step *= 10;
    }
}

/// `text` broken into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The occupancy plot of `story` (stall `index` of `total`, 1-based) as an
/// SVG document, one lane per CPU of `lanes`; `events` in time order.
pub fn stall_occupancy_svg(
    trace: &Trace,
    events: &[Event],
    story: &StallStory,
    index: usize,
    total: usize,
    lanes: &[u32],
) -> String {
    let window = stall_window(story);
    let (ws, we) = window;
    let span = (we - ws).max(1) as f64;
    let px = |t: Nanos| LEFT + PLOT_W * (t.clamp(ws, we) - ws) as f64 / span;
    let bars = running_bars(events, lanes, window);
    let moments = find_moments(events, story, window);
    let colors = task_colors(story, &bars);
    let comm = |pid: Pid| trace.table.comm(pid).to_string();

    let share = if story.latency_ns == 0 { 0.0 } else { 100.0 * story.cause_ns as f64 / story.latency_ns as f64 };
    let mut header = vec![format!("{} ({:.1} % of the handoff)", story.cause_text, share)];
    header.extend(wrap(&story.summary, ((PLOT_W + LEFT) / CHAR_W) as usize));
    let plot_top = 30.0 + 15.0 * header.len() as f64 + 28.0;
    let lane_y = |i: usize| plot_top + LANE_H * i as f64;
    let plot_bottom = lane_y(lanes.len());
    let legend_top = plot_bottom + 44.0;
    let height = legend_top + 40.0;
    let mut doc = Doc::new(LEFT + PLOT_W + 30.0, height);

    doc.text(
        LEFT,
        22.0,
        "start",
        r#"class="title""#,
        &format!(
            "stall {index} of {total}: {} waited {} µs for {} from {} (signal at {}.{:06} s)",
            story.wakee,
            num(story.latency_ns as f64 / 1000.0),
            story.obj_name,
            story.waker,
            story.start_ts / 1_000_000_000,
            story.start_ts % 1_000_000_000 / 1000
        ),
    );
    for (i, line) in header.iter().enumerate() {
        doc.text(LEFT, 40.0 + 15.0 * i as f64, "start", r#"class="note""#, line);
    }

    doc.raw(&format!(
        r#"<g class="occupancy" data-window-start-ns="{ws}" data-window-end-ns="{we}" data-signal-ns="{}" data-left="{}" data-right="{}">"#,
        story.start_ts,
        num(LEFT),
        num(LEFT + PLOT_W)
    ));
    // Time axis: gridlines and labels in µs relative to the signal.
    let step = tick_step_ns(we - ws);
    let first_tick = -(((story.start_ts - ws) / step) as i64);
    let last_tick = ((we - story.start_ts) / step) as i64;
    for k in first_tick..=last_tick {
        let t = (story.start_ts as i64 + k * step as i64) as Nanos;
        let x = px(t);
        doc.line(x, plot_top, x, plot_bottom, r#"class="grid""#);
        doc.text(x, plot_bottom + 15.0, "middle", "", &num(k as f64 * step as f64 / 1000.0));
    }
    doc.text(LEFT + PLOT_W / 2.0, plot_bottom + 32.0, "middle", "", "time since the signal (µs)");

    let lane_of = |cpu: u32| lanes.iter().position(|&c| c == cpu);
    for (i, &cpu) in lanes.iter().enumerate() {
        let y = lane_y(i);
        doc.raw(&format!(r#"<g class="lane" data-cpu="{cpu}">"#));
        if i % 2 == 1 {
            doc.rect(LEFT, y, PLOT_W, LANE_H, r##"fill="#fafafa""##);
        }
        doc.text(LEFT - 8.0, y + BAR_TOP + BAR_H - 4.0, "end", "", &format!("CPU {cpu}"));
        for &(_, from, to) in moments.waits.iter().filter(|w| w.0 == cpu) {
            doc.rect(px(from), y, px(to) - px(from), LANE_H, &format!(r#"fill="{WAIT_FILL}" fill-opacity="0.3""#));
        }
        for b in bars.iter().filter(|b| b.cpu == cpu) {
            let (x0, x1) = (px(b.start), px(b.end));
            let name = comm(b.pid);
            let mut attrs = String::new();
            let _ = write!(
                attrs,
                r#"class="run" data-pid="{}" data-comm="{}" data-start-ns="{}" data-end-ns="{}" fill="{}" fill-opacity="0.85""#,
                b.pid,
                escape(&name),
                b.start,
                b.end,
                colors.get(&b.pid).copied().unwrap_or("#bab0ac")
            );
            doc.raw(&format!(
                r#"<rect x="{}" y="{}" width="{}" height="{}" {attrs}><title>{} (pid {}) on CPU {cpu}: {} to {} µs</title></rect>"#,
                num(x0),
                num(y + BAR_TOP),
                num((x1 - x0).max(0.5)),
                num(BAR_H),
                escape(&name),
                b.pid,
                num((b.start as f64 - story.start_ts as f64) / 1000.0),
                num((b.end as f64 - story.start_ts as f64) / 1000.0)
            ));
            if x1 - x0 >= name.chars().count() as f64 * CHAR_W + 12.0 {
                // Centred, away from the markers at the ends of runs.
                doc.text((x0 + x1) / 2.0, y + BAR_TOP + BAR_H - 4.0, "middle", r#"fill="white""#, &name);
            }
        }
        for &(_, from, to) in moments.waits.iter().filter(|w| w.0 == cpu) {
            doc.rect(
                px(from),
                y + WAIT_TOP,
                px(to) - px(from),
                WAIT_H,
                &format!(
                    r#"class="wait" data-start-ns="{from}" data-end-ns="{to}" fill="{WAIT_BAND}" stroke="{WAKEE_COLOR}" stroke-width="0.8""#
                ),
            );
        }
        doc.raw("</g>");
    }
    doc.rect(LEFT, plot_top, PLOT_W, plot_bottom - plot_top, r#"class="axis" fill="none""#);

    // Markers, on top of the bars.
    let mid = |cpu: u32| lane_of(cpu).map(|i| lane_y(i) + BAR_TOP + BAR_H / 2.0);
    let sx = px(story.start_ts);
    doc.raw(&format!(r#"<g class="marker signal" data-ns="{}">"#, story.start_ts));
    doc.line(sx, plot_top - 6.0, sx, plot_bottom, r#"stroke="black" stroke-width="1.2" stroke-dasharray="4,3""#);
    doc.text(sx, plot_top - 9.0, "middle", "", "signal");
    if let Some(y) = moments.signal_cpu.and_then(mid) {
        doc.raw(&triangle(sx, y, WAKER_COLOR));
    }
    doc.raw("</g>");
    if let Some((t, cpu)) = moments.wakeup {
        if let Some(y) = mid(cpu) {
            doc.raw(&format!(
                r#"<g class="marker wakeup" data-ns="{t}" data-cpu="{cpu}"><circle cx="{}" cy="{}" r="4.5" fill="white" stroke="black" stroke-width="1.5"/><title>sched_wakeup {} target_cpu={cpu}</title></g>"#,
                num(px(t)),
                num(y),
                escape(&story.wakee)
            ));
        }
    }
    for &(t, pid, from, to, balancer) in &moments.migrations {
        if let (Some(y0), Some(y1)) = (mid(from), mid(to)) {
            let x = px(t);
            let color = colors.get(&pid).copied().unwrap_or("black");
            let dir = if y1 > y0 { -1.0 } else { 1.0 };
            doc.raw(&format!(
                r#"<g class="marker migrate" data-ns="{t}" data-pid="{pid}" data-from="{from}" data-to="{to}"><line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="{color}" stroke-width="2"/><path d="M{x},{} l-4,{} l8,0 z" fill="{color}"/><title>sched_migrate_task {} orig_cpu={from} dest_cpu={to}{}</title></g>"#,
                num(y0),
                num(y1),
                num(y1),
                num(7.0 * dir),
                escape(&comm(pid)),
                balancer.map_or(String::new(), |b| format!(" ({b} balance)")),
                x = num(x),
            ));
            if let Some(b) = balancer {
                doc.text(x + 4.0, (y0 + y1) / 2.0 + 4.0, "start", r#"font-size="9""#, b);
            }
        }
    }
    if let Some((t, cpu)) = moments.switch_in {
        if let Some(y) = mid(cpu) {
            let (x, y) = (px(t), y);
            doc.raw(&format!(
                r#"<g class="marker switch-in" data-ns="{t}" data-cpu="{cpu}"><path d="M{},{} l5,-6 l5,6 l-5,6 z" fill="white" stroke="black" stroke-width="1.5"/><title>sched_switch next={} on CPU {cpu}</title></g>"#,
                num(x - 5.0),
                num(y),
                escape(&story.wakee)
            ));
        }
    }
    let ex = px(story.end_ts);
    doc.raw(&format!(
        r#"<g class="marker wait-return" data-ns="{}"><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="black" stroke-width="1" stroke-dasharray="1,2"/></g>"#,
        story.end_ts,
        num(ex),
        num(plot_top - 6.0),
        num(ex),
        num(plot_bottom)
    ));
    doc.text(ex, plot_top - 9.0, "middle", "", "wait returns");
    doc.raw("</g>");

    legend(&mut doc, story, &bars, &colors, &comm, legend_top);
    doc.finish()
}

fn triangle(x: f64, y: f64, color: &str) -> String {
    format!(
        r#"<path d="M{},{} l12,0 l-6,9 z" fill="{color}" stroke="black" stroke-width="1"/>"#,
        num(x - 6.0),
        num(y - 8.0)
    )
}

/// Tasks (with their role) and marker shapes.
fn legend(
    doc: &mut Doc,
    story: &StallStory,
    bars: &[Bar],
    colors: &BTreeMap<Pid, &str>,
    comm: &dyn Fn(Pid) -> String,
    top: f64,
) {
    let mut shown: Vec<Pid> = Vec::new();
    for pid in [Some(story.wakee_pid), story.culprit_pid, Some(story.waker_pid)].into_iter().flatten() {
        if !shown.contains(&pid) {
            shown.push(pid);
        }
    }
    for b in bars {
        if !shown.contains(&b.pid) {
            shown.push(b.pid);
        }
    }
    let mut x = LEFT;
    for pid in shown {
        let role = if pid == story.wakee_pid {
            " (wakee)"
        } else if Some(pid) == story.culprit_pid {
            " (culprit)"
        } else if pid == story.waker_pid {
            " (waker)"
        } else {
            ""
        };
        let label = format!("{}{role}", comm(pid));
        doc.rect(x, top - 10.0, 12.0, 12.0, &format!(r#"fill="{}""#, colors.get(&pid).copied().unwrap_or("#bab0ac")));
        doc.text(x + 16.0, top, "start", "", &label);
        x += 16.0 + label.chars().count() as f64 * CHAR_W + 18.0;
    }
    let y = top + 20.0;
    doc.raw(&triangle(LEFT + 6.0, y - 1.0, WAKER_COLOR));
    doc.text(LEFT + 16.0, y, "start", "", "signal");
    doc.raw(&format!(
        r#"<circle cx="{}" cy="{}" r="4.5" fill="white" stroke="black" stroke-width="1.5"/>"#,
        num(LEFT + 76.0),
        num(y - 4.0)
    ));
    doc.text(LEFT + 86.0, y, "start", "", "sched_wakeup");
    doc.raw(&format!(
        r#"<path d="M{},{} l5,-6 l5,6 l-5,6 z" fill="white" stroke="black" stroke-width="1.5"/>"#,
        num(LEFT + 180.0),
        num(y - 4.0)
    ));
    doc.text(LEFT + 195.0, y, "start", "", "switch-in");
    doc.line(LEFT + 265.0, y - 10.0, LEFT + 265.0, y + 2.0, r#"stroke="black" stroke-width="2""#);
    doc.text(LEFT + 273.0, y, "start", "", "sched_migrate_task");
    doc.rect(
        LEFT + 400.0,
        y - 10.0,
        24.0,
        12.0,
        &format!(r#"fill="{WAIT_BAND}" stroke="{WAKEE_COLOR}" stroke-width="0.8""#),
    );
    doc.text(LEFT + 430.0, y, "start", "", "wakee runnable, waiting (sched_wakeup → switch-in)");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick_step_ns(1_100_000), 200_000);
        assert_eq!(tick_step_ns(9_000), 1_000);
        assert_eq!(tick_step_ns(40_000), 5_000);
    }

    #[test]
    fn wrap_breaks_at_spaces() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
    }
}
