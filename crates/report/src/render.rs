//! Plain-text tables shaped like seed 000's, ready to paste into an LKML
//! reply: settings as rows and runs as columns, numbers right-aligned, no
//! trailing spaces, ASCII only.

use std::collections::BTreeSet;

use schedlab_analysis::{Arrival, StallBreakdown};

use crate::ab::{render_ab, AbReport};
use crate::measures::{measure_row, MeasureInfo, MeasureRun};
use crate::results::BurstStarts;
use crate::{SettingResult, SweepResult};

/// Space between column groups.
const GAP: &str = "   ";

/// `ns` as a short duration: `30 s`, `200 ms`, `500 us`, `1500 ns`.
fn dur(ns: u64) -> String {
    if ns >= 1_000_000_000 && ns / 1_000_000_000 * 1_000_000_000 == ns {
        format!("{} s", ns / 1_000_000_000)
    } else if ns >= 1_000_000 && ns / 1_000_000 * 1_000_000 == ns {
        format!("{} ms", ns / 1_000_000)
    } else if ns / 1_000 * 1_000 == ns {
        format!("{} us", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}

/// `ns` in microseconds with one decimal, truncated: `3.0 us`.
fn us(ns: u64) -> String {
    format!("{}.{} us", ns / 1_000, ns / 100 % 10)
}

use schedlab_analysis::{pad_left, pad_right};

pub(crate) fn push_line(out: &mut String, line: &str) {
    out.push_str(line.trim_end());
    out.push('\n');
}

/// What to call one wakee in row labels: the group name if there is one.
fn noun(r: &SweepResult) -> &str {
    match r.wakees.as_slice() {
        [one] => one,
        _ => "wakee",
    }
}

/// The "Results" table: one row per setting with its stalls per run, the
/// total stalls of all handoffs, and the median handoff of all runs.
///
/// ```text
/// setting                 stalls per run         total   median handoff
/// defaults                212  49  48  76 214   599 of 294616           3.0 us
/// sched_itmt_enabled=0      1   0   0   0   0     1 of 295349           3.0 us
/// ```
pub fn render_summary(r: &SweepResult) -> String {
    let names: Vec<&str> = r.settings.iter().map(|s| s.name.as_str()).collect();
    let name_w = names.iter().map(|n| n.len()).chain([7]).max().unwrap_or(7);
    let nruns = r.settings.iter().map(|s| s.runs.len()).max().unwrap_or(0);
    let run_w = r.settings.iter().flat_map(|s| s.runs.iter().map(|x| x.stalls.to_string().len())).max().unwrap_or(1);
    let runs_span = nruns * run_w + nruns.saturating_sub(1);
    let runs_head = "stalls per run";
    let runs_w = runs_span.max(runs_head.len());
    let stall_w = r.settings.iter().map(|s| s.stalls.to_string().len()).max().unwrap_or(1);
    let hand_w = r.settings.iter().map(|s| s.handoffs.to_string().len()).max().unwrap_or(1);
    let total_w = (stall_w + 4 + hand_w).max(5);
    let med_head = "median handoff";
    let meds: Vec<String> = r.settings.iter().map(|s| s.median_handoff_ns.map_or("-".into(), us)).collect();
    let med_w = meds.iter().map(|m| m.len()).chain([med_head.len()]).max().unwrap_or(0);

    let mut out = String::new();
    push_line(
        &mut out,
        &[
            pad_right("setting", name_w),
            pad_right(runs_head, runs_w),
            pad_left("total", total_w),
            pad_left(med_head, med_w),
        ]
        .join(GAP),
    );
    for (s, med) in r.settings.iter().zip(&meds) {
        let runs: Vec<String> = s.runs.iter().map(|x| pad_left(&x.stalls.to_string(), run_w)).collect();
        let total =
            format!("{} of {}", pad_left(&s.stalls.to_string(), stall_w), pad_left(&s.handoffs.to_string(), hand_w));
        push_line(
            &mut out,
            &[
                pad_right(&s.name, name_w),
                pad_right(&runs.join(" "), runs_w),
                pad_left(&total, total_w),
                pad_left(med, med_w),
            ]
            .join(GAP),
        );
    }
    out
}

/// Label for stalls behind another wakee that arrived on the CPU this way.
fn arrival_label(how: &str, n: &str) -> String {
    let by = match how {
        "active" => "moved there by active_load_balance_cpu_stop()",
        "periodic" => "moved there by the periodic sched_balance_rq()",
        "newidle" => "moved there by sched_balance_newidle()",
        "nohz_idle" => "moved there by nohz_idle_balance()",
        "wakeup" => "placed there at wakeup (select_task_rq())",
        "not_seen" => "there since it started",
        other => other,
    };
    format!("  other {n} {by}")
}

/// Seed 000's "Trace" table for a breakdown setting: rows are the stall
/// classes, columns the runs. Settings without a breakdown give "".
pub fn render_breakdown(r: &SweepResult, s: &SettingResult) -> String {
    let bs: Vec<&StallBreakdown> = s.runs.iter().filter_map(|x| x.breakdown.as_ref()).collect();
    if bs.is_empty() {
        return String::new();
    }
    let n = noun(r);
    type Get = Box<dyn Fn(&StallBreakdown) -> u64>;
    let mut rows: Vec<(String, Get)> = vec![
        (format!("{n} wakeups"), Box::new(|b| b.wakeups)),
        ("  delayed, no select_task_rq_fair()".into(), Box::new(|b| b.delayed_wakeups_no_select)),
        (format!("{n} handoffs"), Box::new(|b| b.handoffs)),
        (format!("waits >= {}", dur(r.stall_threshold_ns)), Box::new(|b| b.stalls)),
        (format!("  behind the other {n}"), Box::new(|b| b.stalls_behind_other)),
    ];
    if let Some(top) = s.top_cpu {
        rows.push((format!("  on CPU {top} behind the other {n}"), Box::new(|b| b.stalls_on_top_cpu_behind_other)));
    }
    rows.push(("  after a delayed wakeup, no CPU selection".into(), Box::new(|b| b.stalls_after_delayed_wakeup)));
    let mut kinds: BTreeSet<&str> = bs.iter().flat_map(|b| b.other_arrivals.keys().map(String::as_str)).collect();
    kinds.insert(Arrival::Active.as_str());
    let order =
        [Arrival::Active, Arrival::Periodic, Arrival::Newidle, Arrival::NohzIdle, Arrival::Wakeup, Arrival::NotSeen];
    for how in order.iter().map(Arrival::as_str).filter(|k| kinds.contains(k)) {
        let key = how.to_string();
        rows.push((arrival_label(how, n), Box::new(move |b| b.other_arrivals.get(&key).copied().unwrap_or(0))));
        if how == Arrival::Active.as_str() {
            rows.push((
                "    of those, moved there while the wakee slept".into(),
                Box::new(|b| b.stalls_other_moved_by_active_balance_while_asleep),
            ));
        }
    }
    rows.push((
        format!("  all other allowed CPUs ({}) idle at the wakeup", s.allowed_cpus),
        Box::new(|b| b.stalls_all_other_allowed_idle),
    ));

    let label_w = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let cells: Vec<Vec<String>> = rows.iter().map(|(_, get)| bs.iter().map(|b| get(b).to_string()).collect()).collect();
    let heads: Vec<String> =
        s.runs.iter().filter(|x| x.breakdown.is_some()).map(|x| format!("run {}", x.run)).collect();
    let col_w = cells.iter().flatten().chain(&heads).map(String::len).max().unwrap_or(0);

    let mut out = String::new();
    push_line(&mut out, &format!("{}: stall breakdown per run", s.name));
    let head: Vec<String> = heads.iter().map(|h| pad_left(h, col_w)).collect();
    push_line(&mut out, &format!("{}{GAP}{}", pad_right("", label_w), head.join("  ")));
    for ((label, _), row) in rows.iter().zip(&cells) {
        let row: Vec<String> = row.iter().map(|c| pad_left(c, col_w)).collect();
        push_line(&mut out, &format!("{}{GAP}{}", pad_right(label, label_w), row.join("  ")));
    }
    out
}

/// Per-CPU burst starts of a breakdown setting: one row per run and wakee,
/// one column per CPU (the wakees' allowed CPUs and any other seen), each the
/// share of that wakee's bursts in that run started there, in percent.
pub fn render_burst_starts(s: &SettingResult) -> String {
    let runs: Vec<(u32, &BurstStarts)> =
        s.runs.iter().filter_map(|x| x.burst_starts.as_ref().map(|b| (x.run, b))).collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut cpus: BTreeSet<u32> = schedlab_topology::parse_cpulist(&s.allowed_cpus)
        .map(|set| set.iter().map(|c| c as u32).collect())
        .unwrap_or_default();
    cpus.extend(runs.iter().flat_map(|(_, m)| m.values().flat_map(|per| per.keys().copied())));
    let mut head = vec!["run".to_string(), "thread".to_string()];
    head.extend(cpus.iter().map(|c| format!("CPU {c}")));
    head.push("bursts".into());
    let mut rows = Vec::new();
    for (run, m) in &runs {
        for (comm, per) in m.iter() {
            let total: u64 = per.values().sum();
            let mut row = vec![run.to_string(), comm.clone()];
            for c in &cpus {
                let k = per.get(c).copied().unwrap_or(0);
                row.push(if total == 0 { "-".into() } else { format!("{:.1}", k as f64 * 100.0 / total as f64) });
            }
            row.push(total.to_string());
            rows.push(row);
        }
    }
    let w: Vec<usize> =
        (0..head.len()).map(|i| rows.iter().map(|r| r[i].len()).fold(head[i].len(), usize::max)).collect();
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 1 { pad_right(c, w[i]) } else { pad_left(c, w[i]) })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = String::new();
    push_line(&mut out, &format!("{}: bursts started per CPU, % of each thread's bursts", s.name));
    push_line(&mut out, &line(&head));
    for r in &rows {
        push_line(&mut out, &line(r));
    }
    out
}

/// `ns` in milliseconds with three decimals: `1476.012 ms`.
fn ms(ns: u64) -> String {
    format!("{}.{:03} ms", ns / 1_000_000, ns / 1_000 % 1_000)
}

/// One table per `[[measure]]`: a row per setting with how many intervals
/// ended within the measure's bound, in how many the waiting thread was
/// migrated, and their median, like seed 003's.
///
/// ```text
/// L resume: from "W post t_w" to "L poll_done t_w", timely = under 100 ms
/// setting           timely   moved        median           min           max
/// NO_RT_PUSH_IPI       0/8     0/8   1470.781 ms   1455.887 ms   1502.030 ms
/// RT_PUSH_IPI          8/8     8/8      0.089 ms      0.083 ms      0.111 ms
/// ```
pub fn render_measures(r: &SweepResult) -> String {
    let rows: Vec<(String, Vec<&[MeasureRun]>)> =
        r.settings.iter().map(|s| (s.name.clone(), s.runs.iter().map(|x| x.measures.as_slice()).collect())).collect();
    render_measure_table(&r.measures, &rows)
}

/// [`render_measures`] for any rows: a name and, per run, that run's
/// measures in the order of `infos` (a VM's runs of a scenario, say).
pub fn render_measure_table(infos: &[MeasureInfo], rows_in: &[(String, Vec<&[MeasureRun]>)]) -> String {
    let mut out = String::new();
    for (i, info) in infos.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let bound =
            info.within_ns.map_or_else(|| "every completed interval".to_string(), |w| format!("under {}", dur(w)));
        push_line(&mut out, &format!("{}: from \"{}\" to \"{}\", timely = {bound}", info.name, info.from, info.to));
        let rows: Vec<(String, String, String, [String; 3], usize)> = rows_in
            .iter()
            .map(|(name, runs)| {
                let row = measure_row(runs.iter().filter_map(|x| x.get(i)), info.within_ns);
                let f = |v: Option<u64>| v.map_or("-".to_string(), ms);
                (
                    name.clone(),
                    format!("{}/{}", row.timely, row.started),
                    format!("{}/{}", row.moved, row.completed),
                    [f(row.median_ns), f(row.min_ns), f(row.max_ns)],
                    row.open,
                )
            })
            .collect();
        let name_w = rows.iter().map(|r| r.0.len()).chain([7]).max().unwrap_or(7);
        let timely_w = rows.iter().map(|r| r.1.len()).chain(["timely".len()]).max().unwrap_or(6);
        let moved_w = rows.iter().map(|r| r.2.len()).chain(["moved".len()]).max().unwrap_or(5);
        let num_w = rows.iter().flat_map(|r| r.3.iter().map(String::len)).chain([6]).max().unwrap_or(6);
        let any_open = rows.iter().any(|r| r.4 > 0);
        let mut head = vec![
            pad_right("setting", name_w),
            pad_left("timely", timely_w),
            pad_left("moved", moved_w),
            pad_left("median", num_w),
            pad_left("min", num_w),
            pad_left("max", num_w),
        ];
        if any_open {
            head.push("open at end".into());
        }
        push_line(&mut out, &head.join(GAP));
        for (name, timely, moved, nums, open) in &rows {
            let mut cols = vec![pad_right(name, name_w), pad_left(timely, timely_w), pad_left(moved, moved_w)];
            cols.extend(nums.iter().map(|n| pad_left(n, num_w)));
            if any_open {
                cols.push(pad_left(&open.to_string(), "open at end".len()));
            }
            push_line(&mut out, &cols.join(GAP));
        }
    }
    out
}

/// `schedlab sweep`'s text report: [`render`], the A/B comparison when
/// there is one, and the closing `timing` line (see [`sweep_timing`]).
pub fn render_sweep_text(r: &SweepResult, ab: Option<&AbReport>, timing: Option<&str>) -> String {
    let mut out = render(r);
    if let Some(ab) = ab {
        out.push('\n');
        out.push_str(&render_ab(ab));
    }
    if let Some(t) = timing {
        out.push('\n');
        out.push_str(&format!("wall      {t}\n"));
    }
    out
}

/// How long `sims` simulations took on `threads` threads, as the sweep's
/// closing line and its progress notices say it.
pub fn sweep_timing(sims: usize, wall_s: f64, threads: usize) -> String {
    format!(
        "{sims} simulation{} in {wall_s:.2} s wall on {threads} thread{}",
        if sims == 1 { "" } else { "s" },
        if threads == 1 { "" } else { "s" }
    )
}

/// The whole report: what was run, the results table, the notes, and the
/// breakdown and burst-start tables of every breakdown setting.
pub fn render(r: &SweepResult) -> String {
    let mut out = String::new();
    let simulated = r.duration_ns.or_else(|| r.settings.first().and_then(|s| s.runs.first()).map(|x| x.simulated_ns));
    let consecutive = r.seeds.iter().enumerate().all(|(i, &s)| s == r.seed + i as u64);
    let seeds = match r.seeds.as_slice() {
        [] | [_] => format!("seed {}", r.seed),
        [first, .., last] if consecutive => format!("seeds {first}-{last}"),
        list => format!("seeds {}", list.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    // When every setting names its own machine, the scenario's runs nowhere.
    let base_runs = r.settings.is_empty() || r.settings.iter().any(|s| s.topology == r.topology);
    let on = if base_runs { format!("on {}", r.topology) } else { "on the machines below".to_string() };
    push_line(&mut out, &format!("sweep     {}: {} {on}", r.sweep, r.scenario));
    push_line(
        &mut out,
        &format!(
            "runs      {} interleaved round{} of {} per setting, {seeds}",
            r.rounds,
            if r.rounds == 1 { "" } else { "s" },
            simulated.map_or_else(|| "the scenario's length".into(), dur),
        ),
    );
    if !r.wakees.is_empty() {
        push_line(
            &mut out,
            &format!("stalls    handoffs to {} of {} or more", r.wakees.join(", "), dur(r.stall_threshold_ns)),
        );
    }
    // Settings on another machine than the scenario's, by machine.
    let mut machines: Vec<(&str, Vec<&str>)> = Vec::new();
    for s in r.settings.iter().filter(|s| s.topology != r.topology) {
        match machines.iter_mut().find(|(t, _)| *t == s.topology) {
            Some((_, names)) => names.push(&s.name),
            None => machines.push((&s.topology, vec![&s.name])),
        }
    }
    for (t, names) in &machines {
        push_line(&mut out, &format!("machine   {t} for {}", names.join("; ")));
    }
    out.push('\n');
    if !r.measures.is_empty() {
        out.push_str(&render_measures(r));
    }
    // Without wakees there are no handoffs: the stall table would be all zeros.
    if !r.wakees.is_empty() {
        if !r.measures.is_empty() {
            out.push('\n');
        }
        out.push_str(&render_summary(r));
    }
    let mut notes: Vec<String> = Vec::new();
    for s in &r.settings {
        for n in &s.notes {
            let everywhere = r.settings.iter().all(|o| o.notes.contains(n));
            let line = if everywhere { n.clone() } else { format!("{}: {n}", s.name) };
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        for n in &notes {
            push_line(&mut out, &format!("note      {n}"));
        }
    }
    out.push_str(&crate::throughput::render_schbench_rps(r));
    for s in r.settings.iter().filter(|s| s.breakdown) {
        out.push('\n');
        out.push_str(&render_breakdown(r, s));
        out.push('\n');
        out.push_str(&render_burst_starts(s));
    }
    out
}
