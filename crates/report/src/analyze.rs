//! The report of a trace captured elsewhere (tracefs `trace`/`trace_pipe`
//! text or `trace-cmd report`): what was read, what was lost, who the
//! workload is ([`crate::workload`]), then the run report.
//!
//! Lost-event gaps are reported with their lines, and handoffs that could
//! straddle one are not counted (see `schedlab_trace::ftrace::gaps`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use schedlab_analysis::FirstOccupants;
use schedlab_analysis::{Attribution, MeasureResult, RunMetrics, WorkConservation, DEFAULT_STALL_THRESHOLD_NS};
use schedlab_scenario::Scenario;
use schedlab_trace::ftrace::{
    drop_markers_across_gaps, gaps, gaps_between, parse_ftrace_with, FtraceReader, Gap, GapDrops, GapPairing,
    ParseOptions, ParseStats, TraceParseError,
};
use schedlab_trace::repair::{repair_trace, RepairStats, SwitchRepair};
use schedlab_trace::{Event, Nanos, Pid, TaskTable, Trace};
use serde::Serialize;
use std::io::{BufRead, Read as _};

use crate::run::{cpulist, render_stalls_and_causes, render_table_and_measures, Report, ReportCollector};
use crate::workload::{select_workload, TracePids, Workload};
use crate::ReportError;

/// How to read a foreign trace.
pub struct TraceOptions<'a> {
    /// The scenario the trace is a run of: thread names, affinities,
    /// objects, stall threshold and `[[measure]]`s.
    pub scenario: Option<&'a Scenario>,
    /// Comm globs of the wakers and the wakees (comma-separated).
    pub wakers: Option<&'a str>,
    pub wakees: Option<&'a str>,
    /// Stall threshold; `None`: the scenario's, else the analysis default.
    pub threshold_ns: Option<u64>,
    pub grace_ns: u64,
    /// perf's filters (`-C`, `-p`, `-t`, `--time`).
    pub filter: TraceFilter,
    /// The stalls and stories kept one by one ([`crate::kept_stalls`]).
    pub kept_stalls: usize,
}

/// What part of a trace to report, as perf's options spell it. The CPU and
/// time filters drop events after the switch repair has seen them all (a
/// CPU's state needs its whole history); the pid and tid filters choose the
/// rows reported (a task's wakeups and switches are events of other tasks
/// too, so its events cannot be picked out alone).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceFilter {
    /// `-C`: only events on these CPUs.
    pub cpus: Option<schedlab_topology::CpuSet>,
    /// `--time start,end` (either may be open), in the trace's clock.
    pub time: schedlab_trace::TimeWindow,
    /// `-p`: only the rows of these processes' threads (tgids).
    pub pids: Vec<Pid>,
    /// `-t`: only the rows of these threads.
    pub tids: Vec<Pid>,
}

impl TraceFilter {
    /// Whether the analysis sees `ev`.
    pub fn keeps(&self, ev: &Event) -> bool {
        self.cpus.as_ref().is_none_or(|c| c.contains(ev.cpu as usize)) && self.time.contains(ev.ts)
    }

    /// Whether the row of `pid` is reported (`table` gives its process).
    pub fn shows(&self, pid: Pid, table: &TaskTable) -> bool {
        (self.pids.is_empty() && self.tids.is_empty())
            || self.tids.contains(&pid)
            || self.pids.contains(&table.tgid(pid))
    }

    pub fn is_empty(&self) -> bool {
        *self == TraceFilter::default()
    }

    /// The filter as the report prints it (`-C 1 --time 5.0,6.0`).
    pub fn describe(&self) -> String {
        let list = |v: &[Pid]| v.iter().map(Pid::to_string).collect::<Vec<_>>().join(",");
        let mut parts = Vec::new();
        if let Some(c) = &self.cpus {
            parts.push(format!("-C {}", c.to_cpulist()));
        }
        if !self.pids.is_empty() {
            parts.push(format!("-p {}", list(&self.pids)));
        }
        if !self.tids.is_empty() {
            parts.push(format!("-t {}", list(&self.tids)));
        }
        if !self.time.is_open() {
            let end = |t: Option<Nanos>| t.map_or(String::new(), secs);
            parts.push(format!("--time {},{}", end(self.time.start), end(self.time.end)));
        }
        parts.join(" ")
    }
}

/// A foreign trace, read and analysed.
pub struct TraceReport {
    /// The trace file as named in the report.
    pub path: String,
    pub table: TaskTable,
    pub nr_cpus: u32,
    /// The CPUs that have events.
    pub cpus_seen: BTreeSet<u32>,
    pub stats: ParseStats,
    pub gaps: Vec<Gap>,
    pub drops: GapDrops,
    /// The switches the capture is missing, put back (`schedlab_trace::repair`).
    pub repairs: RepairStats,
    /// The binary file's kind and the command that turned it into the text
    /// read (`crate::input`), e.g. `("trace.dat", "trace-cmd report -R -t")`.
    pub via: Option<(&'static str, &'static str)>,
    /// The filter the report was made with.
    pub filter: TraceFilter,
    pub workload: Workload,
    pub report: Report,
}

/// The longest line [`TraceReport::stream`] reads: tracefs lines are a few
/// hundred bytes, so a longer one means the file is not trace text (a
/// binary file, a file with no newlines) and must not be held whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What [`TraceReport::stream`] made of a file.
pub enum Streamed {
    Report(Box<TraceReport>),
    /// The events are not in time order from this line on (per-CPU buffers
    /// one after the other): the stream cannot be analysed as it comes, the
    /// whole trace must be read and sorted ([`TraceReport::read`]).
    NotInTimeOrder {
        line: usize,
    },
}

impl TraceReport {
    /// Parse `bytes` (the file `path`), drop the markers around lost-event
    /// gaps, pick the workload and analyse; the parsed trace is returned too
    /// (for `--perfetto`).
    pub fn read(path: &str, bytes: &[u8], opts: &TraceOptions) -> Result<(TraceReport, Trace), ReportError> {
        let text = String::from_utf8_lossy(bytes);
        let parsed =
            parse_ftrace_with(path, &text, &parse_options(opts)).map_err(|e| ReportError::Trace(e.to_string()))?;
        let (mut trace, stats) = (parsed.trace, parsed.stats);
        if trace.events.is_empty() {
            return Err(ReportError::NoSchedEvents { path: path.to_string(), lines: stats.lines });
        }
        let gaps = gaps(&trace, &stats);
        let drops = drop_markers_across_gaps(&mut trace, &gaps);
        // After the gap markers are out, as the stream repairs what it keeps.
        let repairs = repair_trace(&mut trace);
        // The CPUs of the input, as the stream counts them before filtering.
        let cpus_seen = trace.events.iter().map(|e| e.cpu).collect();
        let span = trace.events.iter().map(|e| e.ts).min().zip(trace.events.iter().map(|e| e.ts).max());
        trace.events.retain(|e| opts.filter.keeps(e));
        if trace.events.is_empty() {
            return Err(no_events_in_filter(path, &opts.filter, span));
        }
        let mut workload = select_workload(&mut trace, opts.scenario, opts.wakers, opts.wakees);
        workload.roles.retain(|&pid, _| opts.filter.shows(pid, &trace.table));
        let mut report =
            Report::of(&trace, opts.scenario, threshold(opts), None, workload.allowed.clone(), opts.grace_ns);
        report.leave_out_uncertain(&repairs);
        report.keep_stalls(opts.kept_stalls);
        let r = TraceReport {
            path: path.to_string(),
            table: trace.table.clone(),
            nr_cpus: trace.nr_cpus,
            cpus_seen,
            stats,
            gaps,
            drops,
            repairs,
            via: None,
            filter: opts.filter.clone(),
            workload,
            report,
        };
        Ok((r, trace))
    }

    /// [`TraceReport::read`] in a stream, in memory that does not grow with
    /// the file (only with its tasks, CPUs, lost-event markers and the
    /// online analysis's bounds): `open` gives the file from its start, and
    /// is called two or three times.
    ///
    /// 1. The first pass learns what choosing the workload needs: the task
    ///    table, the pids, each CPU's first occupant, the time span and the
    ///    lost-event gaps. It stops if the events are not in time order.
    /// 2. Only when there are gaps, a second pass decides which markers
    ///    could pair across one (at most the open handoffs are held).
    /// 3. The last pass feeds the events the analysis keeps to a
    ///    [`ReportCollector`].
    pub fn stream<R: BufRead>(
        path: &str,
        open: impl FnMut() -> std::io::Result<R>,
        opts: &TraceOptions,
    ) -> Result<Streamed, ReportError> {
        Self::stream_tapped(path, open, opts, &mut |_, _, _| Ok(()))
    }

    /// [`TraceReport::stream`], handing every event of the last pass to
    /// `tap` as well, with the task table and the trace's CPU count (for the
    /// `perf sched` views): the events the switch repair put back included
    /// (flagged), and before the filter, which perf's views apply their own
    /// way.
    /// An error from `tap` stops the read; one of kind `OutOfMemory` is the
    /// error as it says it (the caller's memory budget), any other is
    /// writing the listing.
    pub fn stream_tapped<R: BufRead>(
        path: &str,
        mut open: impl FnMut() -> std::io::Result<R>,
        opts: &TraceOptions,
        tap: &mut dyn FnMut(&Event, &TaskTable, u32) -> std::io::Result<()>,
    ) -> Result<Streamed, ReportError> {
        let popts = parse_options(opts);
        let io_err = |e: std::io::Error| ReportError::Trace(format!("{path}: {e}"));
        // Pass 1.
        let mut reader = FtraceReader::new(path, &popts);
        let (mut pids, mut first_occupants) = (TracePids::default(), FirstOccupants::default());
        let (mut span, mut events, mut cpus_seen) = (None::<(Nanos, Nanos)>, 0usize, BTreeSet::new());
        let mut out_of_order = None;
        // What the analysis will see: the repaired events the filter keeps.
        let mut last_kept = None;
        let mut observe = |ev: Event| {
            if opts.filter.keeps(&ev) {
                last_kept = Some(ev.ts);
                pids.observe(&ev);
                first_occupants.observe(&ev);
            }
        };
        let mut repair = SwitchRepair::new();
        for_each_line(path, open().map_err(io_err)?, |line| {
            let Some(ev) = reader.line(line)? else { return Ok(true) };
            if span.is_some_and(|(_, last)| ev.ts < last) {
                out_of_order = Some(reader.stats().lines);
                return Ok(false);
            }
            span = Some((span.map_or(ev.ts, |s| s.0), ev.ts));
            events += 1;
            cpus_seen.insert(ev.cpu);
            repair.push(ev, &mut observe);
            Ok(true)
        })?;
        if let Some(line) = out_of_order {
            return Ok(Streamed::NotInTimeOrder { line });
        }
        repair.finish(&mut observe);
        let (table, nr_cpus, stats) = reader.finish(events);
        let Some((first, last)) = span else {
            return Err(ReportError::NoSchedEvents { path: path.to_string(), lines: stats.lines });
        };
        let gaps = gaps_between(Some(first), Some(last), &stats);
        // Pass 2: the markers the gaps take out, by line (with their event,
        // to take them out of the pids too: the whole-trace reader picks
        // the workload after dropping them).
        let mut dropped: BTreeMap<usize, Event> = BTreeMap::new();
        let mut drops = GapDrops::default();
        if !gaps.is_empty() {
            let mut reader = FtraceReader::new(path, &popts);
            let mut pairing = GapPairing::new(&gaps);
            for_each_line(path, open().map_err(io_err)?, |line| {
                if let Some(ev) = reader.line(line)? {
                    let at = reader.stats().lines;
                    pairing.marker((at, ev), &ev, |(l, e)| {
                        dropped.insert(l, e);
                    });
                }
                Ok(true)
            })?;
            drops = pairing.drops;
            for e in dropped.values() {
                pids.forget(e);
            }
        }
        let Some(last) = last_kept else { return Err(no_events_in_filter(path, &opts.filter, Some((first, last)))) };
        let mut workload = Workload::choose(&pids, &table, opts.scenario, opts.wakers, opts.wakees);
        workload.roles.retain(|&pid, _| opts.filter.shows(pid, &table));
        // Pass 3.
        let initial = first_occupants.finish(nr_cpus).into_iter().map(|(p, _)| p).collect();
        let mut collector = ReportCollector::for_trace(
            opts.scenario,
            threshold(opts),
            &table,
            initial,
            Some(last),
            workload.allowed.clone(),
            opts.grace_ns,
        )
        .with_kept_stalls(opts.kept_stalls);
        let mut reader = FtraceReader::new(path, &popts);
        let mut ignored = 0;
        let mut repair = SwitchRepair::new();
        let mut tap_error = None;
        // Set once the tap fails: the read stops there.
        let stop = std::cell::Cell::new(false);
        let mut analyse = |ev: Event| {
            if tap_error.is_none() {
                tap_error = tap(&ev, &table, nr_cpus).err();
                stop.set(tap_error.is_some());
            }
            if !opts.filter.keeps(&ev) {
                return;
            }
            if workload.keeps(&ev) {
                collector.observe(&ev);
            } else {
                ignored += 1;
            }
        };
        for_each_line(path, open().map_err(io_err)?, |line| {
            if let Some(ev) = reader.line(line)? {
                if !dropped.contains_key(&reader.stats().lines) {
                    repair.push(ev, &mut analyse);
                }
            }
            Ok(!stop.get())
        })?;
        let repairs = repair.finish(&mut analyse);
        if let Some(e) = tap_error {
            // The tap's own verdict (the memory budget), or the listing it writes.
            return Err(ReportError::Trace(if e.kind() == std::io::ErrorKind::OutOfMemory {
                e.to_string()
            } else {
                format!("writing the listing: {e}")
            }));
        }
        workload.ignored_markers = ignored;
        let (mut report, _) = collector.finish(last);
        report.leave_out_uncertain(&repairs);
        Ok(Streamed::Report(Box::new(TraceReport {
            path: path.to_string(),
            table,
            nr_cpus,
            cpus_seen,
            stats,
            gaps,
            drops,
            repairs,
            via: None,
            filter: opts.filter.clone(),
            workload,
            report,
        })))
    }

    /// The `--json` document (every task's metrics, not only the workload's).
    pub fn to_json(&self, scenario: Option<&Scenario>) -> Result<String, ReportError> {
        let (stats, workload) = (&self.stats, &self.workload);
        let doc = AnalyzeJson {
            format: crate::FORMAT_VERSION,
            trace: &self.path,
            trace_format: self.via.map_or(stats.format.as_str(), |(kind, _)| kind),
            scenario: scenario.map(|s| s.name.as_str()),
            input: InputJson {
                lines: stats.lines,
                events: stats.events,
                nr_cpus: self.nr_cpus,
                skipped_by_event: &stats.skipped_by_event,
                lost: self
                    .gaps
                    .iter()
                    .map(|g| GapJson { line: g.line, cpu: g.cpu, lost: g.lost, start_ns: g.start, end_ns: g.end })
                    .collect(),
                signals_dropped_at_gaps: self.drops.signals,
                waits_dropped_at_gaps: self.drops.waits,
                markers_not_workload: workload.ignored_markers,
                renamed: &stats.renamed,
                repaired_switches: self
                    .repairs
                    .cpus
                    .iter()
                    .map(|(&cpu, c)| RepairJson {
                        cpu,
                        inserted: c.inserted,
                        out_of_idle: c.out_of_idle,
                        uncertain_ns: c.uncertain_ns,
                        max_uncertain_ns: c.max_uncertain_ns,
                        prev_not_header: c.prev_not_header,
                    })
                    .collect(),
            },
            workload: workload
                .roles
                .iter()
                .map(|(&pid, r)| WorkloadJson {
                    pid,
                    comm: self.table.comm(pid),
                    waker: r.0,
                    wakee: r.1,
                    allowed: workload.allowed.get(&pid),
                })
                .collect(),
            metrics: &self.report.metrics,
            work_conservation: &self.report.workcons,
            attribution: &self.report.attribution,
            measures: &self.report.measures,
            rtapp: (!self.report.rtapp.is_empty()).then(|| crate::json::RtAppJson::from(&self.report.rtapp)),
        };
        crate::to_json(&doc)
    }

    /// The text report: what was read and lost, the scenario's notes, the
    /// workload, then the run report of the workload's tasks alone.
    /// `perfetto`: where the trace was also written.
    pub fn render(mut self, scenario: Option<&Scenario>, narratives: usize, perfetto: Option<&Path>) -> String {
        let mut out = self.render_header(scenario);
        out.push('\n');
        // Only the workload's rows; handoffs are its markers' alone (the others'
        // were taken out by select_workload), so the stall figures are the same.
        let roles = &self.workload.roles;
        self.report.retain_tasks(|pid| roles.contains_key(&pid));
        out.push_str(&render_table_and_measures(&self.report));
        if self.report.handoffs() == 0 {
            out.push('\n');
            out.push_str("stalls    no handoffs (no `schedlab signal`/`wait_done` marker pairs from the workload)\n");
        }
        out.push_str(&render_stalls_and_causes(&self.report, &self.table, narratives));
        if let Some(p) = perfetto {
            out.push('\n');
            let _ = writeln!(out, "perfetto  {} (open at https://ui.perfetto.dev)", p.display());
        }
        out
    }

    /// What was read, lost, repaired and filtered (the report's first lines),
    /// for the `perf sched` views.
    pub fn header_only(&self, scenario: Option<&Scenario>) -> String {
        let mut out = self.render_header(scenario);
        out.push('\n');
        out
    }

    fn render_header(&self, scenario: Option<&Scenario>) -> String {
        let (stats, workload, path) = (&self.stats, &self.workload, &self.path);
        let (start, end) = (self.report.metrics.start_ts, self.report.metrics.end_ts);
        let mut out = String::new();
        let cpus_seen = &self.cpus_seen;
        let format = match self.via {
            Some((kind, via)) => format!("{kind}, read as `{via}` text"),
            None => stats.format.as_str().to_string(),
        };
        let _ = writeln!(
            out,
            "trace     {path} ({format}, {} lines): {} events on CPUs {}, {} to {} s ({} s)",
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
            let _ =
                writeln!(out, "skipped   {} lines of events not analysed: {}", stats.skipped_lines, list.join(", "));
        }
        if !self.gaps.is_empty() {
            let lost: u64 = self.gaps.iter().filter_map(|g| g.lost).sum();
            let _ = writeln!(
                out,
                "lost      {lost} events in {} gaps; handoffs that could straddle a gap are not counted:",
                self.gaps.len()
            );
            for g in &self.gaps {
                let _ = writeln!(out, "          {}", gap_text(g));
            }
            let _ = writeln!(
                out,
                "          {} signal and {} wait_done markers dropped at gaps; CPU times near a gap may be off",
                self.drops.signals, self.drops.waits
            );
        }
        if !self.filter.is_empty() {
            let _ = writeln!(out, "filter    {} (rows and figures of the events it keeps)", self.filter.describe());
        }
        out.push_str(&render_repairs(&self.repairs, &self.report));
        if !stats.renamed.is_empty() {
            let list: Vec<String> =
                stats.renamed.iter().take(5).map(|(p, n)| format!("{p} {}", n.join(" -> "))).collect();
            let more = stats.renamed.len().saturating_sub(5);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            let _ = writeln!(
                out,
                "comms     {} pids renamed, the last name is used: {}{more}",
                stats.renamed.len(),
                list.join(", ")
            );
        }
        if let Some(s) = scenario {
            let _ = writeln!(out, "scenario  {} ({})", s.name, s.path);
            for name in &workload.missing {
                let _ = writeln!(out, "note      scenario thread `{name}` has no task in the trace");
            }
            let topo = s.topology.nr_cpus() as u32;
            if self.nr_cpus > topo {
                let _ = writeln!(
                    out,
                    "note      the trace has {} CPUs, the scenario's machine {} has {topo}: CPUs {topo}-{} are kept as they are",
                    self.nr_cpus,
                    s.topology.name,
                    self.nr_cpus - 1
                );
            }
            let absent: BTreeSet<u32> =
                workload.allowed.values().flatten().copied().filter(|&c| c >= self.nr_cpus).collect();
            if !absent.is_empty() {
                let _ = writeln!(
                    out,
                    "note      affinities name CPUs {} that this trace does not have",
                    cpulist(absent.into_iter().map(|c| c as usize))
                );
            }
        }
        let others: Vec<_> =
            self.report.metrics.tasks.iter().filter(|t| !workload.roles.contains_key(&t.pid)).collect();
        let other_ms = others.iter().map(|t| t.runtime_ns).sum::<u64>() / 1_000_000;
        let _ = writeln!(
            out,
            "workload  {} tasks; {} other tasks ran {other_ms} ms (kept for work conservation, not listed){}",
            workload.roles.len(),
            others.len(),
            if workload.ignored_markers > 0 {
                format!("; {} markers of other tasks ignored", workload.ignored_markers)
            } else {
                String::new()
            }
        );
        out
    }
}

/// The error for a filter that leaves no event, with the trace's time range
/// (first and last event, in the trace's own seconds), so a `--time`
/// outside it can be put right.
fn no_events_in_filter(path: &str, filter: &TraceFilter, span: Option<(Nanos, Nanos)>) -> ReportError {
    let range = span.map_or(String::new(), |(first, last)| {
        format!(
            " (the trace's events run from {}.{:06} to {}.{:06} s)",
            first / 1_000_000_000,
            first % 1_000_000_000 / 1_000,
            last / 1_000_000_000,
            last % 1_000_000_000 / 1_000
        )
    });
    ReportError::Trace(format!("{path}: no events left after the filter `{}`{range}", filter.describe()))
}

/// What the trace's switch repair found and what it means for the figures
/// (empty for a consistent trace).
fn render_repairs(repairs: &RepairStats, report: &Report) -> String {
    let mut out = String::new();
    if repairs.inserted() > 0 {
        let cpus = repairs.per_cpu();
        let _ = writeln!(
            out,
            "switches  {} missing from the trace (an event's header names a task no switch put there), put back \
             after the last event proving the task before: {}",
            repairs.inserted(),
            cpus.join("; ")
        );
        let unknown: u64 = report.metrics.tasks.iter().map(|t| t.wakeup_latency_unknown).sum();
        if unknown > 0 {
            let _ = writeln!(
                out,
                "          {unknown} wakeup latencies ending at a put-back switch are unknown and not counted"
            );
        }
    }
    let bad: u64 = repairs.cpus.values().map(|c| c.prev_not_header).sum();
    if bad > 0 {
        let _ = writeln!(out, "switches  {bad} sched_switch events name a prev task other than their header's");
    }
    out
}

fn parse_options(opts: &TraceOptions) -> ParseOptions {
    ParseOptions {
        objects: opts.scenario.map_or_else(Vec::new, |s| s.objects.iter().map(|o| o.name.clone()).collect()),
    }
}

/// The stall threshold: the option's, else the scenario's, else the analysis default.
fn threshold(opts: &TraceOptions) -> u64 {
    opts.threshold_ns.or(opts.scenario.map(|s| s.stall_threshold_ns)).unwrap_or(DEFAULT_STALL_THRESHOLD_NS)
}

/// Call `f` with each line of `input` (without its line ending, invalid
/// UTF-8 replaced as the whole-file reader does) until it returns false.
/// A line longer than [`MAX_LINE_BYTES`] is an error.
fn for_each_line(
    path: &str,
    mut input: impl BufRead,
    mut f: impl FnMut(&str) -> Result<bool, TraceParseError>,
) -> Result<(), ReportError> {
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = (&mut input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| ReportError::Trace(format!("{path}: {e}")))?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if buf.len() > MAX_LINE_BYTES {
            return Err(ReportError::Trace(format!(
                "{path}:{line_no}: a line longer than {MAX_LINE_BYTES} bytes: not trace text"
            )));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let line = String::from_utf8_lossy(&buf);
        if !f(&line).map_err(|e| ReportError::Trace(e.to_string()))? {
            return Ok(());
        }
    }
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

/// `schedlab analyze --json`. `format` is the version every document
/// carries; the trace's layout, which had that key before outputs carried
/// a version, is `trace_format`.
#[derive(Serialize)]
struct AnalyzeJson<'a> {
    format: u32,
    trace: &'a str,
    trace_format: &'a str,
    scenario: Option<&'a str>,
    input: InputJson<'a>,
    workload: Vec<WorkloadJson<'a>>,
    metrics: &'a RunMetrics,
    work_conservation: &'a WorkConservation,
    attribution: &'a Attribution,
    measures: &'a [MeasureResult],
    #[serde(skip_serializing_if = "Option::is_none")]
    rtapp: Option<crate::json::RtAppJson>,
}

#[derive(Serialize)]
struct InputJson<'a> {
    lines: usize,
    events: usize,
    nr_cpus: u32,
    skipped_by_event: &'a BTreeMap<String, usize>,
    lost: Vec<GapJson>,
    signals_dropped_at_gaps: usize,
    waits_dropped_at_gaps: usize,
    markers_not_workload: usize,
    renamed: &'a BTreeMap<Pid, Vec<String>>,
    /// Switches missing from the trace and put back, by CPU.
    repaired_switches: Vec<RepairJson>,
}

#[derive(Serialize)]
struct RepairJson {
    cpu: u32,
    inserted: u64,
    out_of_idle: u64,
    uncertain_ns: u64,
    max_uncertain_ns: u64,
    prev_not_header: u64,
}

#[derive(Serialize)]
struct GapJson {
    line: usize,
    cpu: Option<u32>,
    lost: Option<u64>,
    start_ns: Nanos,
    end_ns: Nanos,
}

#[derive(Serialize)]
struct WorkloadJson<'a> {
    pid: Pid,
    comm: &'a str,
    waker: bool,
    wakee: bool,
    allowed: Option<&'a Vec<u32>>,
}
