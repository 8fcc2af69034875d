//! The reader: tracefs `trace` text and `trace-cmd report` text into a [`Trace`].

use std::collections::BTreeMap;

use super::payload::{parse_payload, Objects, PErr};
use super::TraceParseError;
use crate::event::{Event, Nanos, Pid, TaskInfo, TaskTable, Trace};

/// Reader settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Object names known in advance (from the scenario): `obj=<name>` in a
    /// marker maps to its index here; names not listed get the next indices
    /// in order of first appearance.
    pub objects: Vec<String>,
}

/// What the reader saw besides events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseStats {
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

/// [`parse_ftrace`] with options, also returning the [`ParseStats`].
///
/// The task table gets every pid named with a comm: payload comms win over the
/// prefix comm (which tracefs fills in at read time from `saved_cmdlines` and
/// may be stale), and within each the last one seen wins. `<...>` and the idle
/// task are never recorded. `tgid` comes from the `(TGID)` column when present,
/// otherwise it is the pid itself.
pub fn parse_ftrace_with(path: &str, text: &str, opts: &ParseOptions) -> Result<ParsedTrace, TraceParseError> {
    let mut stats = ParseStats::default();
    let mut events = Vec::new();
    let mut objects = Objects::new(&opts.objects);
    let mut payload_comms: BTreeMap<Pid, String> = BTreeMap::new();
    let mut prefix_comms: BTreeMap<Pid, String> = BTreeMap::new();
    let mut tgids: BTreeMap<Pid, Pid> = BTreeMap::new();
    let mut header_cpus: Option<u32> = None;
    let mut max_cpu: Option<u32> = None;

    for (i, raw) in text.lines().enumerate() {
        stats.lines += 1;
        let line = raw.trim_end();
        let t = line.trim_start();
        let err = |off: usize, msg: String| TraceParseError {
            path: path.to_string(),
            line: i + 1,
            col: line[..off.min(line.len())].chars().count() + 1,
            message: msg,
        };
        if t.is_empty() || t.starts_with('#') {
            if let Some(p) = t.find("#P:") {
                let d: String = t[p + 3..].chars().take_while(char::is_ascii_digit).collect();
                header_cpus = d.parse().ok().or(header_cpus);
            }
            stats.comment_lines += 1;
            continue;
        }
        if let Some(lost) = lost_line(t) {
            stats.lost_lines += 1;
            stats.lost_events += lost;
            continue;
        }
        if let Some(n) = t.strip_prefix("cpus=") {
            header_cpus = n.trim().parse().ok().or(header_cpus);
            stats.comment_lines += 1;
            continue;
        }
        if t.starts_with("version = ") || (t.starts_with("CPU ") && t.ends_with(" is empty")) {
            stats.comment_lines += 1;
            continue;
        }
        let pre = parse_prefix(line).map_err(|e| err(e.off, e.msg))?;
        if pre.pid != 0 && pre.comm != "<...>" && pre.comm != "<idle>" {
            prefix_comms.insert(pre.pid, pre.comm.to_string());
        }
        if let Some(tgid) = pre.tgid {
            if pre.pid != 0 {
                tgids.insert(pre.pid, tgid);
            }
        }
        let Some(ev) = pre.event else {
            stats.skipped_lines += 1;
            *stats.skipped_by_event.entry(String::new()).or_default() += 1;
            continue;
        };
        let decoded = parse_payload(ev.name, ev.payload, pre.pid, &mut objects)
            .map_err(|e| err(ev.payload_off + e.off, format!("{}: {}", ev.name, e.msg)))?;
        let Some(d) = decoded else {
            stats.skipped_lines += 1;
            *stats.skipped_by_event.entry(ev.name.to_string()).or_default() += 1;
            continue;
        };
        for (pid, comm) in d.comms {
            payload_comms.insert(pid, comm.to_string());
        }
        max_cpu = max_cpu.max(Some(pre.cpu));
        events.push(Event { ts: pre.ts, cpu: pre.cpu, ctx_pid: pre.pid, flags: pre.flags, kind: d.kind });
    }

    let mut table = TaskTable { tasks: BTreeMap::new(), objects: objects.names };
    for (pid, comm) in prefix_comms.into_iter().chain(payload_comms) {
        let tgid = tgids.get(&pid).copied().unwrap_or(pid);
        table.tasks.insert(pid, TaskInfo { comm, tgid });
    }
    stats.events = events.len();
    let nr_cpus = header_cpus.unwrap_or_else(|| max_cpu.map_or(0, |c| c + 1));
    Ok(ParsedTrace { trace: Trace { table, nr_cpus, events }, stats })
}

/// `CPU:N [LOST M EVENTS]` (tracefs) or `CPU:N [M EVENTS DROPPED]` (trace-cmd): M.
fn lost_line(t: &str) -> Option<u64> {
    let rest = t.strip_prefix("CPU:")?;
    let open = rest.find('[')?;
    if !rest[..open].trim().bytes().all(|b| b.is_ascii_digit()) || !t.ends_with(']') || !rest.contains("EVENTS") {
        return None;
    }
    let inner = rest[open + 1..].trim_start_matches("LOST").trim_start();
    let digits: String = inner.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

struct Prefix<'a> {
    comm: &'a str,
    pid: Pid,
    tgid: Option<Pid>,
    cpu: u32,
    flags: [u8; 5],
    ts: Nanos,
    event: Option<EventText<'a>>,
}

struct EventText<'a> {
    name: &'a str,
    payload: &'a str,
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
        let Ok(cpu) = line[after..after + digits].parse() else { continue };
        let left = match parse_left(&line[..i]) {
            Ok(l) => l,
            Err(e) => {
                left_err.get_or_insert(e);
                continue;
            }
        };
        match parse_right(line, after + digits + 1) {
            Ok((flags, ts, event)) => {
                let (comm, pid, tgid) = left;
                return Ok(Prefix { comm, pid, tgid, cpu, flags, ts, event });
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
fn parse_right(line: &str, off: usize) -> Result<([u8; 5], Nanos, Option<EventText<'_>>), PErr> {
    let mut p = skip_ws(line, off);
    let mut flags = *b".....";
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
        flags[..b.len()].copy_from_slice(b);
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
        Some(EventText { name: &line[q..q + name_len], payload: &line[payload_off..], payload_off })
    } else {
        None
    };
    Ok((flags, ts, event))
}
