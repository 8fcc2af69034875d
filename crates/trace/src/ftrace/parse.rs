//! The reader: tracefs `trace` text and `trace-cmd report` text into a [`Trace`].
//!
//! Real captures are untidy, and the reader keeps going where a kernel
//! developer would: lost-event markers are recorded with the stretch of time
//! they leave uncovered ([`LostEvents`]), events this crate does not model
//! are counted and skipped, `<...>` comms are ignored and a pid whose comm
//! changed keeps the last one. Only a line that is not a trace line at all, or
//! a known event whose payload does not parse, is an error (with its line and
//! column); so is a CPU number or header CPU count beyond [`MAX_CPUS`].

use std::collections::BTreeMap;

use super::payload::{parse_payload, Objects, PErr};
use super::{TraceParseError, MAX_CPUS, PREFIX_COMMS_ARE_CURRENT};
use crate::event::{Event, Nanos, Pid, TaskInfo, TaskTable, Trace};

/// Reader settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Object names known in advance (from the scenario): `obj=<name>` in a
    /// marker maps to its index here; names not listed get the next indices
    /// in order of first appearance.
    pub objects: Vec<String>,
}

/// Which text layout the reader recognised. Every line is read by the same
/// rules whatever the layout; this only says what the input looked like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceFormat {
    /// `/sys/kernel/tracing/trace` or `trace_pipe`: latency flags after `[CPU]`.
    #[default]
    Tracefs,
    /// `trace-cmd report`: `cpus=N` / `version = N` header lines, no flags
    /// column, each line prefixed with the buffer name for an instance.
    TraceCmdReport,
}

impl TraceFormat {
    pub fn as_str(&self) -> &'static str {
        match self {
            TraceFormat::Tracefs => "tracefs text",
            TraceFormat::TraceCmdReport => "trace-cmd report",
        }
    }
}

/// A `CPU:N [LOST M EVENTS]` line: CPU N's ring buffer dropped M events
/// between the CPU's last line before the marker and its first line after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostEvents {
    /// 1-based line number of the marker.
    pub line: usize,
    pub cpu: u32,
    /// M; `None` for trace-cmd's `[EVENTS DROPPED]` without a count.
    pub count: Option<u64>,
    /// Timestamp of CPU N's last line before the marker (`None`: the loss is
    /// at the start of the CPU's data, as when `trace_pipe` is read after the
    /// buffer wrapped).
    pub after_ts: Option<Nanos>,
    /// Timestamp of CPU N's first line after the marker (`None`: none follows).
    pub before_ts: Option<Nanos>,
}

/// What the reader saw besides events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseStats {
    /// The layout recognised.
    pub format: TraceFormat,
    /// Lines in the input.
    pub lines: usize,
    /// Events produced.
    pub events: usize,
    /// `#` header/comment lines, blank lines and `trace-cmd` banner lines.
    pub comment_lines: usize,
    /// Event lines skipped because the event is not modelled (other
    /// tracepoints, function tracer lines, non-schedlab markers).
    pub skipped_lines: usize,
    /// The skipped lines by event name (function-tracer style lines without
    /// an `event:` are counted under `""`).
    pub skipped_by_event: BTreeMap<String, usize>,
    /// `CPU:N [LOST M EVENTS]` lines (`[M EVENTS DROPPED]` from trace-cmd).
    pub lost_lines: usize,
    /// Sum of M over those lines.
    pub lost_events: u64,
    /// Each of those lines, with the stretch of time it leaves uncovered.
    pub lost: Vec<LostEvents>,
    /// tracefs header `# entries-in-buffer/entries-written: B/W`: (B, W).
    /// W > B means the oldest W − B events were overwritten (the buffer
    /// wrapped), so each CPU's data starts at a different time.
    pub entries: Option<(u64, u64)>,
    /// `#P:N` or `cpus=N` from the header, when present.
    pub header_cpus: Option<u32>,
    /// Timestamp of each CPU's first line (any event, modelled or not).
    pub cpu_first_ts: BTreeMap<u32, Nanos>,
    /// Buffer (instance) names that prefixed `trace-cmd report` lines.
    pub buffers: Vec<String>,
    /// Pids whose payload comm changed during the trace (`prctl(PR_SET_NAME)`,
    /// exec), with every name in order; the task table keeps the last.
    pub renamed: BTreeMap<Pid, Vec<String>>,
}

impl ParseStats {
    /// Events the header says were overwritten before the first one shown.
    pub fn overwritten(&self) -> u64 {
        self.entries.map_or(0, |(b, w)| w.saturating_sub(b))
    }
}

/// A trace plus what the reader counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedTrace {
    pub trace: Trace,
    pub stats: ParseStats,
}

/// Read ftrace text (`/sys/kernel/tracing/trace`, `trace_pipe`, `trace-cmd
/// report`). `path` is only used in error messages.
pub fn parse_ftrace(path: &str, text: &str) -> Result<Trace, TraceParseError> {
    parse_ftrace_with(path, text, &ParseOptions::default()).map(|p| p.trace)
}

/// [`parse_ftrace`] with options, also returning the [`ParseStats`]: every
/// line through one [`FtraceReader`].
pub fn parse_ftrace_with(path: &str, text: &str, opts: &ParseOptions) -> Result<ParsedTrace, TraceParseError> {
    let mut reader = FtraceReader::new(path, opts);
    let mut events = Vec::new();
    for line in text.lines() {
        if let Some(ev) = reader.line(line)? {
            events.push(ev);
        }
    }
    let (table, nr_cpus, stats) = reader.finish(events.len());
    Ok(ParsedTrace { trace: Trace { table, nr_cpus, events }, stats })
}

/// The reader one line at a time, so a file of any length can be read in a
/// stream: the state it keeps is per pid, per CPU and per lost-events
/// marker, never per event.
///
/// The task table gets every pid named with a comm: payload comms win over the
/// prefix comm (which tracefs fills in at read time from `saved_cmdlines` and
/// may be stale), and within each the last one seen wins. `<...>` and the idle
/// task are never recorded. `tgid` comes from the `(TGID)` column when present,
/// otherwise it is the pid itself. `nr_cpus` is the header's CPU count, raised
/// to cover every CPU an event line names.
pub struct FtraceReader {
    path: String,
    stats: ParseStats,
    objects: Objects,
    payload_comms: BTreeMap<Pid, String>,
    prefix_comms: BTreeMap<Pid, String>,
    tgids: BTreeMap<Pid, Pid>,
    max_cpu: Option<u32>,
    /// Per CPU: the last line's timestamp, and lost markers awaiting its next line.
    last_ts: BTreeMap<u32, Nanos>,
    awaiting: BTreeMap<u32, Vec<usize>>,
    with_flags: usize,
    without_flags: usize,
    trace_cmd_header: bool,
    /// The text said its `comm-pid` columns are current
    /// ([`PREFIX_COMMS_ARE_CURRENT`]).
    prefix_current: bool,
    /// Each pid's comms over time as its events' fields give them (a
    /// fork's `child_comm` first), and as the lines' `comm-pid` columns
    /// give them (kept when those are current).
    payload_history: BTreeMap<Pid, Vec<(Nanos, String)>>,
    prefix_history: BTreeMap<Pid, Vec<(Nanos, String)>>,
}

/// Add `comm` from `ts` to a pid's comms over time when it differs from the
/// last. (An exec to the same name is not seen: `sched_process_exec` comes
/// at the end of an exec, which may be after a switch, while the comm was
/// set at its start.)
fn note_comm(history: &mut Vec<(Nanos, String)>, ts: Nanos, comm: &str) {
    if history.last().is_none_or(|(_, c)| c != comm) {
        history.push((ts, comm.to_string()));
    }
}

impl FtraceReader {
    /// A reader of the file `path` (only used in error messages).
    pub fn new(path: &str, opts: &ParseOptions) -> Self {
        FtraceReader {
            path: path.to_string(),
            stats: ParseStats::default(),
            objects: Objects::new(&opts.objects),
            payload_comms: BTreeMap::new(),
            prefix_comms: BTreeMap::new(),
            tgids: BTreeMap::new(),
            max_cpu: None,
            last_ts: BTreeMap::new(),
            awaiting: BTreeMap::new(),
            with_flags: 0,
            without_flags: 0,
            trace_cmd_header: false,
            prefix_current: false,
            payload_history: BTreeMap::new(),
            prefix_history: BTreeMap::new(),
        }
    }

    /// What the reader has counted so far.
    pub fn stats(&self) -> &ParseStats {
        &self.stats
    }

    /// Read the next line (without its newline): the event it holds, if it
    /// is one this crate models.
    pub fn line(&mut self, raw: &str) -> Result<Option<Event>, TraceParseError> {
        let stats = &mut self.stats;
        stats.lines += 1;
        let line_no = stats.lines;
        let full = raw.trim_end();
        let (buffer, line) = split_buffer_name(full);
        let base = full.len() - line.len();
        let t = line.trim_start();
        let path = &self.path;
        let err = |off: usize, msg: String| {
            let off = (base + off).min(full.len());
            TraceParseError {
                path: path.clone(),
                line: line_no,
                col: full.get(..off).unwrap_or(full).chars().count() + 1,
                message: msg,
            }
        };
        // Offset of `t` in `line`, for errors about header lines.
        let t_off = line.len() - t.len();
        if t.is_empty() || t.starts_with('#') {
            if t == PREFIX_COMMS_ARE_CURRENT {
                self.prefix_current = true;
            }
            header_comment(t, stats).map_err(|e| err(t_off + e.off, e.msg))?;
            stats.comment_lines += 1;
            return Ok(None);
        }
        if let Some((cpu, count)) = lost_line(t) {
            stats.lost_lines += 1;
            stats.lost_events += count.unwrap_or(0);
            self.awaiting.entry(cpu).or_default().push(stats.lost.len());
            let after_ts = self.last_ts.get(&cpu).copied();
            stats.lost.push(LostEvents { line: line_no, cpu, count, after_ts, before_ts: None });
            return Ok(None);
        }
        if let Some(n) = t.strip_prefix("cpus=") {
            let digits = n.trim();
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                let off = t_off + "cpus=".len() + (n.len() - n.trim_start().len());
                stats.header_cpus = Some(cpu_count(digits, off).map_err(|e| err(e.off, e.msg))?);
            }
            stats.comment_lines += 1;
            self.trace_cmd_header = true;
            return Ok(None);
        }
        if t.starts_with("version = ") || (t.starts_with("CPU ") && t.ends_with(" is empty")) {
            stats.comment_lines += 1;
            self.trace_cmd_header = true;
            return Ok(None);
        }
        let pre = parse_prefix(line).map_err(|e| err(e.off, e.msg))?;
        if let Some(b) = buffer {
            if !stats.buffers.iter().any(|x| x == b) {
                stats.buffers.push(b.to_string());
            }
        }
        if pre.has_flags {
            self.with_flags += 1;
        } else {
            self.without_flags += 1;
        }
        stats.cpu_first_ts.entry(pre.cpu).or_insert(pre.ts);
        self.last_ts.insert(pre.cpu, pre.ts);
        for k in self.awaiting.remove(&pre.cpu).unwrap_or_default() {
            stats.lost[k].before_ts = Some(pre.ts);
        }
        self.max_cpu = self.max_cpu.max(Some(pre.cpu));
        if pre.pid != 0
            && pre.comm != "<...>"
            && pre.comm != "<idle>"
            && self.prefix_comms.get(&pre.pid).map(String::as_str) != Some(pre.comm)
        {
            self.prefix_comms.insert(pre.pid, pre.comm.to_string());
        }
        if let Some(tgid) = pre.tgid {
            if pre.pid != 0 {
                self.tgids.insert(pre.pid, tgid);
            }
        }
        let Some(ev) = pre.event else {
            stats.skipped_lines += 1;
            *stats.skipped_by_event.entry(String::new()).or_default() += 1;
            return Ok(None);
        };
        // Comms over time.
        if self.prefix_current && pre.pid != 0 && pre.comm != "<...>" {
            note_comm(self.prefix_history.entry(pre.pid).or_default(), pre.ts, pre.comm);
        }
        if ev.name == "sched_process_fork" {
            // The child starts with the comm its parent had: a name before
            // any event of its own.
            if let Some((comm, pid)) = fork_child(ev.payload) {
                for h in [&mut self.payload_history, &mut self.prefix_history] {
                    note_comm(h.entry(pid).or_default(), pre.ts, comm);
                }
            }
        }
        let decoded = parse_payload(ev.name, ev.payload, pre.pid, &mut self.objects)
            .map_err(|e| err(ev.payload_off + e.off, format!("{}: {}", ev.name, e.msg)))?;
        let Some(d) = decoded else {
            // Our own events are a closed set: an unknown one is damage or a
            // trace from another schedlab version, not a kernel we don't model.
            if ev.name.starts_with("schedlab_") {
                return Err(err(
                    ev.name_off,
                    format!(
                        "unknown schedlab event `{}` (a damaged trace, or one written by another version)",
                        ev.name
                    ),
                ));
            }
            stats.skipped_lines += 1;
            match stats.skipped_by_event.get_mut(ev.name) {
                Some(n) => *n += 1,
                None => {
                    stats.skipped_by_event.insert(ev.name.to_string(), 1);
                }
            }
            return Ok(None);
        };
        for (pid, comm) in d.comms {
            if pid != 0 {
                note_comm(self.payload_history.entry(pid).or_default(), pre.ts, comm);
            }
            match self.payload_comms.get_mut(&pid) {
                Some(old) if old != comm => {
                    stats.renamed.entry(pid).or_insert_with(|| vec![old.clone()]).push(comm.to_string());
                    *old = comm.to_string();
                }
                Some(_) => {}
                None => {
                    self.payload_comms.insert(pid, comm.to_string());
                }
            }
        }
        Ok(Some(Event { ts: pre.ts, cpu: pre.cpu, ctx_pid: pre.pid, flags: pre.flags, kind: d.kind }))
    }

    /// The task table, the CPU count and the counts, after the last line;
    /// `events`: how many events the caller kept.
    pub fn finish(self, events: usize) -> (TaskTable, u32, ParseStats) {
        let mut stats = self.stats;
        let mut table = TaskTable { objects: self.objects.names, ..TaskTable::default() };
        for (pid, comm) in self.prefix_comms.into_iter().chain(self.payload_comms) {
            let tgid = self.tgids.get(&pid).copied().unwrap_or(pid);
            table.tasks.insert(pid, TaskInfo { comm, tgid });
        }
        // Comms over time: from the `comm-pid` columns when they are
        // current (a pid they never name: from the fields), else from the
        // fields, which the kernel fills in at each event.
        // With current columns, the last one is the task's comm too (perf's
        // name for it, which for a kthread is `/proc`'s longer one).
        let prefix_history = if self.prefix_current { self.prefix_history } else { BTreeMap::new() };
        for (pid, history) in &prefix_history {
            if let (Some(info), Some((_, last))) = (table.tasks.get_mut(pid), history.last()) {
                info.comm.clone_from(last);
            }
        }
        let mut histories = prefix_history;
        for (pid, payload) in self.payload_history {
            match histories.get(&pid) {
                None => {
                    histories.insert(pid, payload);
                }
                Some(h) if table.tasks.contains_key(&pid) && !same_names(h, &payload) => {
                    table.field_comms.insert(pid, payload);
                }
                Some(_) => {}
            }
        }
        histories.retain(|pid, h| h.len() > 1 && table.tasks.contains_key(pid));
        table.comm_history = histories;
        stats.events = events;
        if self.trace_cmd_header || !stats.buffers.is_empty() || self.without_flags > self.with_flags {
            stats.format = TraceFormat::TraceCmdReport;
        }
        // A header smaller than the CPUs actually seen (a hand-edited or merged
        // file) must not make analysis index past its per-CPU tables.
        let seen = self.max_cpu.map_or(0, |c| c.saturating_add(1));
        let nr_cpus = stats.header_cpus.unwrap_or(0).max(seen);
        (table, nr_cpus, stats)
    }
}

/// Whether two comm histories name the same comms in the same order.
fn same_names(a: &[(Nanos, String)], b: &[(Nanos, String)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.1 == y.1)
}

/// `sched_process_fork`'s child: `child_comm` (which may hold spaces) and
/// `child_pid`.
fn fork_child(payload: &str) -> Option<(&str, Pid)> {
    let (_, rest) = payload.split_once("child_comm=")?;
    let (comm, pid) = rest.rsplit_once(" child_pid=")?;
    Some((comm, pid.trim().parse().ok().filter(|&p| p > 0)?))
}

/// A header's CPU count (`#P:N`, `cpus=N`; `digits` non-empty, all ASCII
/// digits, at offset `off`), refused beyond [`MAX_CPUS`].
fn cpu_count(digits: &str, off: usize) -> Result<u32, PErr> {
    match digits.parse::<u32>() {
        Ok(n) if n <= MAX_CPUS => Ok(n),
        _ => Err(PErr { off, msg: format!("expected a CPU count of at most {MAX_CPUS}, found `{digits}`") }),
    }
}

/// `#P:N` and `entries-in-buffer/entries-written: B/W` from a `#` header line;
/// an error (offset into `t`) for a CPU count beyond [`MAX_CPUS`].
fn header_comment(t: &str, stats: &mut ParseStats) -> Result<(), PErr> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let number = |s: &str| -> Option<u64> { s[..digits(s)].parse().ok() };
    if let Some(p) = t.find("#P:") {
        let n = &t[p + 3..][..digits(&t[p + 3..])];
        if !n.is_empty() {
            stats.header_cpus = Some(cpu_count(n, p + 3)?);
        }
    }
    const ENTRIES: &str = "entries-in-buffer/entries-written:";
    if let Some(p) = t.find(ENTRIES) {
        if let Some((b, w)) = t[p + ENTRIES.len()..].trim_start().split_once('/') {
            if let (Some(b), Some(w)) = (number(b), number(w)) {
                stats.entries = Some((b, w));
            }
        }
    }
    Ok(())
}

/// `trace-cmd report` prefixes each line of an instance's buffer with
/// `NAME: ` at column 0, whereas an event line's comm is right-aligned in 16
/// columns (comms have at most 15 characters) so it never starts there.
/// Returns the name, if any, and the rest of the line.
fn split_buffer_name(line: &str) -> (Option<&str>, &str) {
    if line.is_empty() || line.starts_with(char::is_whitespace) {
        return (None, line);
    }
    let tok_end = line.find(char::is_whitespace).unwrap_or(line.len());
    let Some(name) = line[..tok_end].strip_suffix(':') else { return (None, line) };
    if name.is_empty() || name.starts_with("CPU") || tok_end == line.len() {
        return (None, line);
    }
    let rest = &line[tok_end..];
    // Only when the rest is itself a line this reader understands.
    if lost_line(rest.trim_start()).is_some() || parse_prefix(rest).is_ok() {
        (Some(name), rest)
    } else {
        (None, line)
    }
}

/// `CPU:N [LOST M EVENTS]` (tracefs), `CPU:N [M EVENTS DROPPED]` or
/// `CPU:N [EVENTS DROPPED]` (trace-cmd, count unknown): N and M.
fn lost_line(t: &str) -> Option<(u32, Option<u64>)> {
    let rest = t.strip_prefix("CPU:")?;
    let open = rest.find('[')?;
    let cpu = rest[..open].trim();
    if cpu.is_empty() || !cpu.bytes().all(|b| b.is_ascii_digit()) || !rest.ends_with(']') {
        return None;
    }
    let cpu = cpu.parse().ok()?;
    let inner = rest[open + 1..rest.len() - 1].trim();
    if inner == "EVENTS DROPPED" {
        return Some((cpu, None));
    }
    let inner = inner.strip_prefix("LOST").map_or(inner, str::trim_start);
    let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
    let tail = inner[digits..].trim();
    if digits == 0 || !(tail == "EVENTS" || tail == "EVENTS DROPPED") {
        return None;
    }
    Some((cpu, Some(inner[..digits].parse().ok()?)))
}

struct Prefix<'a> {
    comm: &'a str,
    pid: Pid,
    tgid: Option<Pid>,
    cpu: u32,
    flags: [u8; 5],
    /// Whether the line had a latency-flags column (tracefs has; `trace-cmd report` by default not).
    has_flags: bool,
    ts: Nanos,
    event: Option<EventText<'a>>,
}

struct EventText<'a> {
    name: &'a str,
    payload: &'a str,
    name_off: usize,
    payload_off: usize,
}

const LINE_SHAPE: &str = "expected an event line `COMM-PID [CPU] FLAGS SECS.USECS: EVENT: ...`";

/// Find ` [CPU] ` candidates left to right; the first whose left side is
/// `COMM-PID [(TGID)]` and whose right side is `[FLAGS] TIMESTAMP:` wins.
fn parse_prefix(line: &str) -> Result<Prefix<'_>, PErr> {
    let mut left_err = None;
    let mut right_err = None;
    for (i, _) in line.match_indices(" [") {
        let after = i + 2;
        let digits = line[after..].bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || !line[after + digits..].starts_with(']') {
            continue;
        }
        // Too large (or beyond u32): refused once the rest shows this is the
        // `[CPU]` column, not `[` inside a comm.
        let cpu = line[after..after + digits].parse::<u32>().ok().filter(|&c| c < MAX_CPUS);
        let left = match parse_left(&line[..i]) {
            Ok(l) => l,
            Err(e) => {
                left_err.get_or_insert(e);
                continue;
            }
        };
        match parse_right(line, after + digits + 1) {
            Ok((flags, ts, event)) => {
                let Some(cpu) = cpu else {
                    return Err(PErr {
                        off: after,
                        msg: format!(
                            "expected a CPU number below {MAX_CPUS}, found `{}`",
                            &line[after..after + digits]
                        ),
                    });
                };
                let (comm, pid, tgid) = left;
                let has_flags = flags.is_some();
                let flags = flags.unwrap_or(*b".....");
                return Ok(Prefix { comm, pid, tgid, cpu, flags, has_flags, ts, event });
            }
            Err(e) => {
                right_err.get_or_insert(e);
            }
        }
    }
    Err(right_err.or(left_err).unwrap_or_else(|| PErr { off: 0, msg: LINE_SHAPE.into() }))
}

/// `   comm-pid   ` with an optional `(  tgid)` / `(-------)` column.
fn parse_left(s: &str) -> Result<(&str, Pid, Option<Pid>), PErr> {
    let mut t = s.trim_end();
    let mut tgid = None;
    if t.ends_with(')') {
        if let Some(open) = t.rfind('(') {
            let inner = t[open + 1..t.len() - 1].trim();
            if !inner.is_empty() && inner.bytes().all(|b| b == b'-') {
                t = t[..open].trim_end();
            } else if let Ok(n) = inner.parse::<Pid>() {
                tgid = Some(n);
                t = t[..open].trim_end();
            }
        }
    }
    let bad = || PErr { off: 0, msg: format!("{LINE_SHAPE} (no `COMM-PID` before `[CPU]`)") };
    let dash = t.rfind('-').ok_or_else(bad)?;
    let pid_txt = &t[dash + 1..];
    if pid_txt.is_empty() || !pid_txt.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let pid = pid_txt.parse().map_err(|_| PErr { off: dash + 1, msg: "pid out of range".into() })?;
    Ok((t[..dash].trim_start(), pid, tgid))
}

fn skip_ws(line: &str, mut p: usize) -> usize {
    while line[p..].starts_with([' ', '\t']) {
        p += 1;
    }
    p
}

fn tok_at(line: &str, p: usize) -> &str {
    line[p..].split([' ', '\t']).next().unwrap_or("")
}

/// `secs.frac` with 1–9 fraction digits, in ns.
fn timestamp(t: &str) -> Option<Nanos> {
    let (s, f) = t.split_once('.')?;
    if s.is_empty() || f.is_empty() || f.len() > 9 {
        return None;
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = s.parse().ok()?;
    let frac: u64 = f.parse().ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(frac * 10u64.pow(9 - f.len() as u32))
}

/// After `[CPU]`: optional flags, `TIMESTAMP:`, then `name: payload`.
/// The latency flags (absent in `trace-cmd report`), timestamp and event of a line.
type RightSide<'a> = (Option<[u8; 5]>, Nanos, Option<EventText<'a>>);

fn parse_right(line: &str, off: usize) -> Result<RightSide<'_>, PErr> {
    let mut p = skip_ws(line, off);
    let mut flags = None;
    let first = tok_at(line, p);
    let is_ts = |t: &str| t.strip_suffix(':').is_some_and(|x| timestamp(x).is_some());
    if !is_ts(first) {
        let b = first.as_bytes();
        if !(b.len() == 4 || b.len() == 5) || !b.iter().all(u8::is_ascii_graphic) {
            return Err(PErr {
                off: p,
                msg: "expected latency flags like `d..2.` or a timestamp `SECS.USECS:`".into(),
            });
        }
        let mut f = *b".....";
        f[..b.len()].copy_from_slice(b);
        flags = Some(f);
        p = skip_ws(line, p + first.len());
    }
    let tst = tok_at(line, p);
    let Some(ts) = tst.strip_suffix(':').and_then(timestamp) else {
        return Err(PErr { off: p, msg: "expected a timestamp `SECS.USECS:`".into() });
    };
    let q = skip_ws(line, p + tst.len());
    let name_len = line[q..].bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let event = if name_len > 0 && line[q + name_len..].starts_with(':') {
        let payload_off = q + name_len + 1;
        Some(EventText { name: &line[q..q + name_len], payload: &line[payload_off..], name_off: q, payload_off })
    } else {
        None
    };
    Ok((flags, ts, event))
}
