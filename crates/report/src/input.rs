//! Which kind of trace a file is, by its first bytes, and the binary ones
//! turned into text the ftrace reader reads.
//!
//! * tracefs `trace`/`trace_pipe` text and `trace-cmd report` text
//!   (default or `-R`) are read as they are.
//! * `trace.dat` (magic `\x17\x08\x44tracing`) is read through
//!   `trace-cmd report -R -t`. Its format has had several versions (6, and
//!   7 with compressed per-CPU data and sections). The event layouts are
//!   described by format files inside it. trace-cmd reads all of that
//!   through libtraceevent, and a second reader here would lag behind it.
//!   `-R` prints the raw fields, which the reader parses the same way for
//!   every version; `-t` prints nanoseconds.
//! * `perf.data` (magic `PERFILE2`) is read through `perf script` with the
//!   sample's comm, tid, CPU, time and the tracepoint's fields, for the same
//!   reason. Each line is rewritten into `trace-cmd report`'s layout
//!   (`comm-tid`, the event name without its `sched:` subsystem).
//!
//! Both tools run as helpers ([`schedlab_helper`]): with a time limit
//! ([`HelperLimits`]: by default [`HEADER_CHECK_LIMIT`] for the header check,
//! and [`CONVERT_BASE_LIMIT`] plus [`CONVERT_LIMIT_PER_MB`] per MB of input
//! for the conversion; `schedlab analyze --helper-timeout` sets both), in a
//! process group of their own, killed if schedlab dies. A damaged trace.dat
//! can make `trace-cmd` spin forever (three changed bytes of its compressed
//! headers do it to `trace-cmd dump`); it is stopped at its limit and the
//! error names the file and the step, headers or events.
//!
//! Neither tool reports a truncated file reliably: `trace-cmd report`
//! prints nothing and exits 0 for a trace.dat cut short, and `perf script`
//! may stop early. So before converting, each file's own header is checked
//! against its length: trace.dat's per-CPU data (offset and size, from
//! `trace-cmd dump --flyrecord`), and perf.data's data section (from its
//! fixed header). The converted text is written to a temporary file and
//! then read like any capture, in bounded memory.
//!
//! * A Perfetto protobuf trace (a `TracePacket` first: 0x0a, a length,
//!   protobuf bytes) is translated by `schedlab_trace::perfetto::perfetto_to_text`
//!   (typed sched events and traced's `compact_sched`), natively: there is
//!   no Perfetto command to lean on that every machine has.
//!
//! Other files with a known magic number (compressed files, ELF, ...) are
//! refused, and the error names the format.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use schedlab_helper::{Helper, HelperError};
use schedlab_trace::ftrace::PREFIX_COMMS_ARE_CURRENT;

use crate::ReportError;

/// How long `trace-cmd dump --flyrecord` may take to list a trace.dat's
/// per-CPU data: it reads the headers only (22 ms for a 1 MB file on this
/// project's host, whatever the file's length).
pub const HEADER_CHECK_LIMIT: Duration = Duration::from_secs(5);
/// How long a conversion (`trace-cmd report`, `perf script`) may take: this,
/// plus [`CONVERT_LIMIT_PER_MB`] for each MB of the input.
pub const CONVERT_BASE_LIMIT: Duration = Duration::from_secs(120);
/// A 2 GB trace.dat may convert for 120 s + 2000 s: 10 to 100 times what
/// its events take to print.
pub const CONVERT_LIMIT_PER_MB: Duration = Duration::from_secs(1);

/// The time limits of the helper programs a binary trace is read through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HelperLimits {
    /// One limit for every helper (`--helper-timeout`); `None`: the defaults.
    pub each: Option<Duration>,
}

impl HelperLimits {
    fn header_check(&self) -> Duration {
        self.each.unwrap_or(HEADER_CHECK_LIMIT)
    }

    /// The conversion's limit for an input of `bytes`.
    pub fn conversion(&self, bytes: u64) -> Duration {
        self.each.unwrap_or(CONVERT_BASE_LIMIT + CONVERT_LIMIT_PER_MB * (bytes / 1_000_000).min(u32::MAX as u64) as u32)
    }
}

/// `path`'s helper `via` (for the step: `trace-cmd dump --flyrecord`) did
/// not finish; a missing tool gets the installer's name.
fn helper_error(shown: &str, kind: &'static str, via: &'static str, source: HelperError) -> ReportError {
    match source {
        HelperError::NotFound { program } => {
            ReportError::Trace(format!("{shown}: a {kind}; {}", install_hint(&program)))
        }
        source => ReportError::Helper { path: shown.to_string(), kind, via, source },
    }
}

/// What a trace file is, by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// Text, read as it is.
    Text,
    /// trace-cmd's `trace.dat`.
    TraceDat,
    /// perf's `perf.data`.
    PerfData,
    /// `perf script` text (`comm pid [cpu] secs: sched:name: fields`).
    PerfScript,
    /// A Perfetto protobuf trace.
    Perfetto,
    /// A format schedlab does not read (its name).
    Unsupported(&'static str),
}

const TRACE_DAT_MAGIC: &[u8] = b"\x17\x08\x44tracing";
const PERF_DATA_MAGIC: &[u8] = b"PERFILE2";

/// Known magic numbers of files that are not traces schedlab reads.
const OTHER_MAGICS: &[(&[u8], &str)] = &[
    (b"\x1f\x8b", "a gzip-compressed file (decompress it first: `zcat FILE > trace.txt`)"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file (decompress it first: `zstdcat FILE > trace.txt`)"),
    (b"\xfd7zXZ\x00", "an xz-compressed file (decompress it first: `xzcat FILE > trace.txt`)"),
    (b"BZh", "a bzip2-compressed file (decompress it first: `bzcat FILE > trace.txt`)"),
    (b"PK\x03\x04", "a zip archive (extract the trace from it first)"),
    (b"\x7fELF", "an ELF binary, not a trace"),
    (b"PERFILE", "a perf.data file of an older format than PERFILE2"),
    (b"SQLite format 3\x00", "an SQLite database (trace_processor output?), not a trace"),
];

/// The kind of a file whose first bytes are `head` (at least 16 when the
/// file has them).
pub fn sniff(head: &[u8]) -> InputKind {
    if head.starts_with(TRACE_DAT_MAGIC) {
        return InputKind::TraceDat;
    }
    if head.starts_with(PERF_DATA_MAGIC) {
        return InputKind::PerfData;
    }
    if let Some((_, name)) = OTHER_MAGICS.iter().find(|(m, _)| head.starts_with(m)) {
        return InputKind::Unsupported(name);
    }
    // A Perfetto trace is a sequence of `TracePacket`s (field 1,
    // length-delimited: 0x0a, a varint length), then usually field 8 or 10
    // of the packet. Text may start with a newline too, but not followed by
    // a length and a protobuf tag.
    if head.len() >= 3 && head[0] == 0x0a && head[1] != b'\n' && head.iter().take(16).any(|&b| b < 0x09) {
        return InputKind::Perfetto;
    }
    InputKind::Text
}

/// The kind of the file at `path`.
pub fn sniff_file(path: &Path, shown: &str) -> Result<InputKind, ReportError> {
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path).map_err(|e| ReportError::Trace(format!("{shown}: {e}")))?;
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReportError::Trace(format!("{shown}: {e}"))),
        }
    }
    let kind = sniff(&head[..n]);
    if kind != InputKind::Text {
        return Ok(kind);
    }
    // Text: tracefs or trace-cmd's, or perf script's, told by the first event line.
    let mut start = Vec::with_capacity(PERF_SCRIPT_SNIFF_BYTES);
    let reopened = std::fs::File::open(path).map_err(|e| ReportError::Trace(format!("{shown}: {e}")))?;
    reopened
        .take(PERF_SCRIPT_SNIFF_BYTES as u64)
        .read_to_end(&mut start)
        .map_err(|e| ReportError::Trace(format!("{shown}: {e}")))?;
    Ok(if is_perf_script(&String::from_utf8_lossy(&start)) { InputKind::PerfScript } else { InputKind::Text })
}

/// `perf script` text rewritten line by line into trace-cmd report's
/// layout ([`perf_line`]; other lines as they are).
pub fn perf_script_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    out.push_str(PREFIX_COMMS_ARE_CURRENT);
    out.push('\n');
    for line in text.split_inclusive('\n') {
        match perf_line(line) {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
    }
    out
}

/// How much of a text file is read to tell `perf script` text from ftrace text.
const PERF_SCRIPT_SNIFF_BYTES: usize = 4096;

/// Whether `text` (a file's start) is `perf script` output: its first line
/// that is not blank or a `#` comment has a numeric pid after the comm,
/// separated by spaces (ftrace text joins them: `comm-pid`), and an event
/// named with its subsystem (`sched:sched_switch:`).
pub fn is_perf_script(text: &str) -> bool {
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')) else {
        return false;
    };
    let Some((left, rest)) = line.split_once(" [") else { return false };
    let Some(ids) = left.split_whitespace().last().filter(|_| left.trim().contains(char::is_whitespace)) else {
        return false;
    };
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let ids_ok = match ids.split_once('/') {
        Some((p, t)) => numeric(p) && (numeric(t) || t == "-1"),
        None => numeric(ids),
    };
    // After `[cpu] secs.ns:` comes `subsystem:name:`.
    let event = rest.split_once(": ").map(|(_, e)| e.trim_start()).and_then(|e| e.split_whitespace().next());
    ids_ok && event.is_some_and(|e| e.trim_end_matches(':').contains(':'))
}

/// A binary trace turned into text: the file to read and how it was made.
pub struct Converted {
    pub text: tempfile::NamedTempFile,
    /// The file's kind (`trace.dat`) and the command, for the report
    /// (`trace-cmd report -R -t`).
    pub kind: &'static str,
    pub via: &'static str,
    /// What the conversion left out, for a note.
    pub note: Option<String>,
}

/// Convert a binary trace (`kind` from [`sniff`]) to text; `Ok(None)` for
/// text. Unsupported kinds are an error naming the format.
pub fn convert(
    path: &Path,
    shown: &str,
    kind: InputKind,
    limits: HelperLimits,
) -> Result<Option<Converted>, ReportError> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    match kind {
        InputKind::Text => Ok(None),
        InputKind::Unsupported(name) => Err(ReportError::Trace(format!(
            "{shown}: {name}; schedlab reads tracefs text, trace-cmd report text, trace.dat and perf.data"
        ))),
        InputKind::TraceDat => {
            check_trace_dat(path, shown, limits.header_check())?;
            let args = ["report", "-R", "-t", "-i"];
            let rewrite = |line: &str, out: &mut dyn Write| out.write_all(line.as_bytes());
            let limit = (STALL_LIMIT, limits.conversion(size));
            run_converter(shown, "trace-cmd", &args, path, ("trace.dat", "trace-cmd report -R -t"), rewrite, limit)
                .map(Some)
        }
        InputKind::Perfetto => {
            let io = |e: std::io::Error| ReportError::Trace(format!("{shown}: {e}"));
            let input = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
            let text = converted_file().map_err(io)?;
            let mut out = BufWriter::new(text.as_file());
            let stats = schedlab_trace::perfetto::perfetto_to_text(input, &mut out)
                .map_err(|e| ReportError::Trace(format!("{shown}: a Perfetto trace, malformed at {e}")))?;
            out.flush().map_err(io)?;
            drop(out);
            let unplaced = stats.skipped.get(&0).copied().unwrap_or(0);
            let other: u64 = stats.skipped.iter().filter(|(&k, _)| k != 0).map(|(_, n)| n).sum();
            let mut parts = Vec::new();
            if unplaced > 0 {
                parts.push(format!(
                    "{unplaced} compact_sched events before their CPU's first switch (no known current task) skipped"
                ));
            }
            if other > 0 {
                parts.push(format!("{other} ftrace events of kinds schedlab does not read skipped"));
            }
            let note = (!parts.is_empty()).then(|| format!("{shown}: {}", parts.join("; ")));
            Ok(Some(Converted { text, kind: "Perfetto trace", via: "schedlab's Perfetto reader", note }))
        }
        InputKind::PerfScript => {
            // Already perf's text: each line rewritten as for perf.data, no helper.
            let io = |e: std::io::Error| ReportError::Trace(format!("{shown}: {e}"));
            let input = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
            let text = converted_file().map_err(io)?;
            let mut out = BufWriter::new(text.as_file());
            writeln!(out, "{PREFIX_COMMS_ARE_CURRENT}").map_err(io)?;
            for line in input.lines() {
                let line = line.map_err(io)?;
                match perf_line(&line) {
                    Some(l) => out.write_all(l.as_bytes()).map_err(io)?,
                    None => out.write_all(line.as_bytes()).map_err(io)?,
                }
                out.write_all(b"\n").map_err(io)?;
            }
            out.flush().map_err(io)?;
            drop(out);
            Ok(Some(Converted { text, kind: "perf script output", via: "perf script", note: None }))
        }
        InputKind::PerfData => {
            check_perf_data(path, shown)?;
            let args = ["script", "-F", "comm,pid,tid,cpu,time,event,trace", "--ns", "-i"];
            let mut first = true;
            let rewrite = |line: &str, out: &mut dyn Write| {
                if std::mem::take(&mut first) {
                    writeln!(out, "{PREFIX_COMMS_ARE_CURRENT}")?;
                }
                match perf_line(line) {
                    Some(l) => out.write_all(l.as_bytes()),
                    None => out.write_all(line.as_bytes()),
                }
            };
            let limit = (STALL_LIMIT, limits.conversion(size));
            run_converter(shown, "perf", &args, path, ("perf.data", "perf script"), rewrite, limit).map(Some)
        }
    }
}

/// The temporary file a binary trace's text goes to (removed when dropped).
fn converted_file() -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix("schedlab-converted-").suffix(".txt").tempfile()
}

/// How long a converter may print nothing before it is stopped.
const STALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// The installer that provides `tool`, for the error when it is missing.
fn install_hint(tool: &str) -> String {
    format!("`{tool}` is needed to read it and was not found (scripts/install-trace-deps.sh installs it)")
}

/// Run `tool args.. path` as a helper, pass each stdout line through
/// `rewrite` into a temporary file; a tool silent for `stall_limit`, or
/// still running at `time_limit`, is stopped. A failure carries the tool's
/// last stderr lines.
fn run_converter(
    shown: &str,
    tool: &str,
    args: &[&str],
    path: &Path,
    (kind, via): (&'static str, &'static str),
    mut rewrite: impl FnMut(&str, &mut dyn Write) -> std::io::Result<()>,
    (stall_limit, time_limit): (Duration, Duration),
) -> Result<Converted, ReportError> {
    let io = |e: std::io::Error| ReportError::Trace(format!("{shown}: converting with {via}: {e}"));
    let mut command = Command::new(tool);
    command.args(args).arg(path).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Helper::spawn(&mut command, time_limit).map_err(|e| helper_error(shown, kind, via, e))?;
    // Drain stderr on its own thread so a chatty tool cannot block on a full pipe.
    let stderr = child.stderr().expect("piped");
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(stderr).take(1 << 20).read_to_string(&mut s);
        s
    });
    let text = converted_file().map_err(io)?;
    let mut out = BufWriter::new(text.as_file());
    let mut lines = BufReader::new(child.stdout().expect("piped"));
    // A watchdog: a tool that prints nothing for `stall_limit` (a damaged
    // file it loops on) or runs past its time limit (one it loops on while
    // printing) is killed, so the conversion cannot hang. The helper was
    // started on this thread, whose exit its death signal follows; the
    // watchdog only waits for it.
    let progress = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = progress.clone();
    let watchdog = std::thread::spawn(move || -> Result<(std::process::ExitStatus, bool), HelperError> {
        let (mut last, mut since) = (0, std::time::Instant::now());
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok((status, false));
            }
            let now = seen.load(std::sync::atomic::Ordering::Relaxed);
            if now != last {
                (last, since) = (now, std::time::Instant::now());
            } else if since.elapsed() > stall_limit {
                child.kill();
                return Ok((child.wait()?, true));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if lines.read_until(b'\n', &mut raw).map_err(io)? == 0 {
            break;
        }
        progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        rewrite(&String::from_utf8_lossy(&raw), &mut out).map_err(io)?;
    }
    out.flush().map_err(io)?;
    drop(out);
    let (status, stalled) = watchdog
        .join()
        .map_err(|_| io(std::io::Error::other("watchdog thread panicked")))?
        .map_err(|e| helper_error(shown, kind, via, e))?;
    if stalled {
        return Err(ReportError::Trace(format!(
            "{shown}: `{via}` printed nothing for {} s and was stopped (a damaged file?)",
            stall_limit.as_secs()
        )));
    }
    let stderr = errs.join().unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().filter(|l| !l.contains("not valid for")).collect();
        let tail = tail[tail.len().saturating_sub(3)..].join("; ");
        return Err(ReportError::Trace(format!("{shown}: `{via}` failed ({status}): {tail}")));
    }
    if progress.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        // trace-cmd prints `cpus=N` first for any trace.dat it can read: a
        // file whose header passed the checks but whose data gives not even
        // that is damaged (seen with bytes overwritten mid-file).
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        return Err(ReportError::Trace(format!(
            "{shown}: `{via}` printed nothing from this {size}-byte {kind} (exit 0): its data is damaged, \
             or it holds no events"
        )));
    }
    Ok(Converted { text, kind, via, note: None })
}

/// `   comm  pid/tid [cpu] secs.ns:   sched:name: fields` (perf script) as
/// `comm-tid (pid) [cpu] secs.ns: name: fields` (trace-cmd report with its
/// tgid column, which the `perf sched` views need for `comm[tid/pid]`);
/// `comm  tid` without the pid gives no tgid column. `None` for a line of
/// another shape (left as it is, for the reader to judge).
pub fn perf_line(line: &str) -> Option<String> {
    let open = line.find(" [")?;
    let (left, rest) = line.split_at(open);
    let (comm, ids) = left.trim().rsplit_once(' ')?;
    let (pid, tid) = match ids.split_once('/') {
        Some((p, t)) => (Some(p).filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())), t),
        None => (None, ids),
    };
    // The event name follows the timestamp's colon: drop its subsystem.
    let ts_end = rest.find(": ")?;
    let (head, tail) = rest.split_at(ts_end + 2);
    let tail = tail.trim_start();
    let (name, fields) = tail.split_once(": ").unwrap_or((tail.trim_end_matches(['\n', ':']), ""));
    let name = name.rsplit_once(':').map_or(name, |(_, n)| n);
    let fields = fields.trim_end_matches('\n');
    // perf prints tid -1 (comm `:-1`) for a task it saw exit before the
    // sample; a switch's own fields name the task it ran in.
    let (comm, tid) = match tid {
        "-1" if name == "sched_switch" => (comm_field(fields, "prev_comm=", " prev_pid=")?, field(fields, "prev_pid")?),
        // Run time is charged to the task that ran.
        "-1" if name == "sched_stat_runtime" => (comm_field(fields, "comm=", " pid=")?, field(fields, "pid")?),
        // Another event of a thread perf lost: its process is the best context
        // known, with no name (perf's `:-1` is not the process's comm).
        "-1" if pid.is_some() => ("<...>", pid?),
        _ => (comm.trim(), tid),
    };
    if tid.is_empty() || !tid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nl = if line.ends_with('\n') { "\n" } else { "" };
    let tgid = pid.map_or(String::new(), |p| format!(" ({p})"));
    Some(format!("{comm}-{tid}{tgid}{head}{name}: {fields}{nl}"))
}

/// A comm field, which may hold spaces: from `key` up to `next`.
fn comm_field<'a>(fields: &'a str, key: &str, next: &str) -> Option<&'a str> {
    let rest = fields.strip_prefix(key).or_else(|| fields.split_once(&format!(" {key}")).map(|(_, r)| r))?;
    Some(rest.split_once(next)?.0)
}

/// The value of `key=` in a tracepoint's printed fields.
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields.split(' ').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// A trace.dat's per-CPU data must lie inside the file: `trace-cmd
/// report` reads a cut-short file as if it had no events.
fn check_trace_dat(path: &Path, shown: &str, limit: Duration) -> Result<(), ReportError> {
    let len = std::fs::metadata(path).map_err(|e| ReportError::Trace(format!("{shown}: {e}")))?.len();
    let mut dump = Command::new("trace-cmd");
    dump.args(["dump", "--flyrecord", "-i"]).arg(path);
    let out = schedlab_helper::output(&mut dump, limit)
        .map_err(|e| helper_error(shown, "trace.dat", "trace-cmd dump --flyrecord", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let cpus = flyrecord_cpus(&text);
    if cpus.is_empty() {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why.lines().last().unwrap_or("no per-CPU data listed").trim().to_string();
        return Err(ReportError::Trace(format!(
            "{shown}: a trace.dat whose per-CPU data trace-cmd cannot find ({why}): truncated or damaged"
        )));
    }
    for (cpu, offset, size) in cpus {
        if offset.saturating_add(size) > len {
            return Err(ReportError::Trace(format!(
                "{shown}: a truncated trace.dat: CPU {cpu}'s data is bytes {offset}..{} but the file has {len} bytes",
                offset + size
            )));
        }
    }
    Ok(())
}

/// `   <cpu> <offset>\t<size>\t[id, data offset and size]` lines of
/// `trace-cmd dump --flyrecord` for a version 7 file, `\t<offset> <size>\t[offset,
/// size of cpu <cpu>]` for version 6 (what `trace-cmd record --file-version 6`
/// and `schedlab run --trace-dat` write).
pub fn flyrecord_cpus(text: &str) -> Vec<(u32, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            if l.contains("[id, data offset and size]") {
                Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?, it.next()?.parse().ok()?))
            } else {
                let cpu = l.split_once("[offset, size of cpu ")?.1.strip_suffix(']')?;
                Some((cpu.trim().parse().ok()?, it.next()?.parse().ok()?, it.next()?.parse().ok()?))
            }
        })
        .collect()
}

/// A perf.data's data section (its fixed header's `data` offset and size,
/// bytes 40..56) must be written and inside the file: a `perf record`
/// that was killed leaves it zero, a cut-short file ends inside it.
fn check_perf_data(path: &Path, shown: &str) -> Result<(), ReportError> {
    let err = |m: String| ReportError::Trace(format!("{shown}: {m}"));
    let mut f = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let len = f.metadata().map_err(|e| err(e.to_string()))?.len();
    let mut h = [0u8; 56];
    f.read_exact(&mut h).map_err(|_| err(format!("a truncated perf.data: {len} bytes, shorter than its header")))?;
    perf_data_section(&h, len).map_err(err)
}

/// [`check_perf_data`]'s test of a header's first bytes against the file's
/// length `len`, without the file.
pub fn perf_data_section(header: &[u8], len: u64) -> Result<(), String> {
    let u64_at = |i: usize| header.get(i..i + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    let (Some(offset), Some(size)) = (u64_at(40), u64_at(48)) else {
        return Err(format!("a truncated perf.data: {len} bytes, shorter than its header"));
    };
    if size == 0 {
        return Err("a perf.data with an empty data section (`perf record` did not finish writing it?)".to_string());
    }
    if offset.saturating_add(size) > len {
        return Err(format!(
            "a truncated perf.data: its data section is bytes {offset}..{} but the file has {len} bytes",
            offset.saturating_add(size)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_section_test_takes_any_bytes() {
        let mut h = b"PERFILE2".to_vec();
        h.resize(56, 0);
        h[40..48].copy_from_slice(&1000u64.to_le_bytes());
        h[48..56].copy_from_slice(&500u64.to_le_bytes());
        assert_eq!(perf_data_section(&h, 1500), Ok(()));
        let e = perf_data_section(&h, 1499).unwrap_err();
        assert!(e.contains("bytes 1000..1500 but the file has 1499 bytes"), "{e}");
        // A fuzzer's slice may be shorter than the 56 bytes a file read guarantees.
        assert!(perf_data_section(&h[..50], 50).unwrap_err().contains("shorter than its header"));
        // Offsets near u64::MAX do not wrap around into the file.
        h[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        h[48..56].copy_from_slice(&2u64.to_le_bytes());
        assert!(perf_data_section(&h, 1500).is_err());
    }

    #[test]
    fn magic_numbers_name_the_format() {
        assert_eq!(sniff(b"\x17\x08\x44tracing6\0"), InputKind::TraceDat);
        assert_eq!(sniff(b"PERFILE2\x68\0\0\0"), InputKind::PerfData);
        assert_eq!(sniff(b"# tracer: nop\n#\n"), InputKind::Text);
        assert_eq!(sniff(b"\n\n# tracer: nop"), InputKind::Text);
        assert_eq!(sniff(b"cpus=2\n"), InputKind::Text);
        assert!(matches!(sniff(b"\x1f\x8b\x08\0"), InputKind::Unsupported(n) if n.contains("gzip")));
        assert_eq!(sniff(b"\x0a\x87\x01\x52\x04\x08\x01"), InputKind::Perfetto);
    }

    #[test]
    fn perf_script_text_is_told_from_ftrace_text_by_its_first_event_line() {
        let perf = [
            "            perf 14349 [000] 30171.485988: sched:sched_wakeup: comm=migration/0 pid=18 prio=0 target_cpu=000",
            "     migration/0    18 [000] 30171.486000: sched:sched_switch: prev_comm=x prev_pid=18",
            "  kworker/u8:1 x  2041/2041  [001] 30171.486000123:   sched:sched_waking: comm=a pid=1",
            "# a comment\n\n    swapper     0/0     [001] 1.000000: sched:sched_switch: prev_comm=swapper/1",
        ];
        for text in perf {
            assert!(is_perf_script(text), "{text}");
        }
        let not_perf = [
            "          <idle>-0     [000] d..2.   100.000000: sched_switch: prev_comm=swapper/0 prev_pid=0",
            "# tracer: nop\n#\n     kworker/1:1-42    [001] .....  1.0: sched_waking: comm=a pid=1",
            "  bash-1234  (1234) [000]  1.000000: sched_switch: prev_comm=bash",
            "cpus=2\n          <idle>-0     [000]     0.000000: sched_wakeup_new: comm=waker pid=1003",
            "",
            "hello world [0] 1.0: not an event",
        ];
        for text in not_perf {
            assert!(!is_perf_script(text), "{text}");
        }
        // Rewritten into trace-cmd report's layout, other lines kept.
        let text = "# captured\n            perf 14349 [000] 30171.485988: sched:sched_wakeup: comm=a pid=18 prio=0 target_cpu=000\n";
        assert_eq!(
            perf_script_text(text),
            PREFIX_COMMS_ARE_CURRENT.to_string()
                + "\n# captured\nperf-14349 [000] 30171.485988: sched_wakeup: comm=a pid=18 prio=0 target_cpu=000\n"
        );
    }

    #[test]
    fn a_perf_script_file_is_sniffed_past_its_first_bytes() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "            perf 14349 [000] 30171.485988: sched:sched_wakeup: comm=a pid=18").unwrap();
        assert_eq!(sniff_file(f.path(), "p.txt").unwrap(), InputKind::PerfScript);
        let mut g = tempfile::NamedTempFile::new().unwrap();
        writeln!(g, "          <idle>-0     [000]     0.000000: sched_wakeup_new: comm=waker pid=1003").unwrap();
        assert_eq!(sniff_file(g.path(), "t.txt").unwrap(), InputKind::Text);
    }

    #[test]
    fn perf_script_lines_take_trace_cmd_reports_layout() {
        let l =
            "            perf 14163 [000] 49916.595886325:       sched:sched_switch: prev_comm=perf prev_pid=14163 \
                 prev_prio=120 prev_state=D ==> next_comm=migration/0 next_pid=18 next_prio=0\n";
        assert_eq!(
            perf_line(l).unwrap(),
            "perf-14163 [000] 49916.595886325: sched_switch: prev_comm=perf prev_pid=14163 prev_prio=120 \
             prev_state=D ==> next_comm=migration/0 next_pid=18 next_prio=0\n"
        );
        // A comm with a space and a dash keeps both.
        let l = "  Web Content-x 4242 [001] 1.000000001: sched:sched_waking: comm=a pid=1 prio=120 target_cpu=001";
        assert_eq!(
            perf_line(l).unwrap(),
            "Web Content-x-4242 [001] 1.000000001: sched_waking: comm=a pid=1 prio=120 target_cpu=001"
        );
        assert_eq!(perf_line("no cpu column here"), None);
        // An exited task's last switch: perf has lost its tid.
        let l =
            "             :-1    -1 [000] 49916.670408642:       sched:sched_switch: prev_comm=sleep prev_pid=14281 \
                 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120";
        assert!(perf_line(l).unwrap().starts_with("sleep-14281 [000] 49916.670408642: sched_switch: prev_comm=sleep"));
        let l =
            "             :-1    -1 [000] 1.000000000:       sched:sched_waking: comm=a pid=1 prio=120 target_cpu=000";
        assert_eq!(perf_line(l), None, "no context to give it");
        let l = "             :-1 10481/-1    [000] 1.000000000:       sched:sched_waking: comm=a pid=1 prio=120 target_cpu=000";
        assert!(
            perf_line(l).unwrap().starts_with("<...>-10481 (10481) [000]"),
            "the process as context, not named `:-1`"
        );
        let l = "             :-1 10481/-1    [000] 13109.793397337:               sched:sched_stat_runtime: comm=lto cgu.13 \
                 pid=11150 runtime=17693 [ns]";
        assert!(perf_line(l)
            .unwrap()
            .starts_with("lto cgu.13-11150 (10481) [000] 13109.793397337: sched_stat_runtime:"));
        // With perf script's pid field: the process goes to the tgid column.
        let l =
            "     coordinator 10481/10498 [000] 2.000000001: sched:sched_waking: comm=a pid=1 prio=120 target_cpu=000";
        assert_eq!(
            perf_line(l).unwrap(),
            "coordinator-10498 (10481) [000] 2.000000001: sched_waking: comm=a pid=1 prio=120 target_cpu=000"
        );
    }

    /// A tool that stops printing is stopped, not waited for.
    #[test]
    fn a_stalled_converter_is_stopped() {
        let start = std::time::Instant::now();
        let args = ["-c", "echo one; sleep 30", "sh"];
        let limit = (std::time::Duration::from_secs(1), std::time::Duration::from_secs(60));
        let e = run_converter("x.dat", "sh", &args, Path::new("x"), ("trace.dat", "test"), |_, _| Ok(()), limit)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("printed nothing for 1 s and was stopped"), "{e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        // A tool that finishes is not.
        let args = ["-c", "echo one; echo two", "sh"];
        let mut n = 0;
        let ok = run_converter(
            "x.dat",
            "sh",
            &args,
            Path::new("x"),
            ("trace.dat", "test"),
            |_, _| {
                n += 1;
                Ok(())
            },
            limit,
        );
        assert!(ok.is_ok() && n == 2);
        // One that succeeds without a line (trace-cmd on a trace.dat damaged
        // mid-file) is a damaged file, not an empty trace.
        let args = ["-c", "exit 0", "sh"];
        let e = run_converter("x.dat", "sh", &args, Path::new("x"), ("trace.dat", "test"), |_, _| Ok(()), limit)
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("x.dat: `test` printed nothing from this") && e.contains("damaged"), "{e}");
    }

    /// One that keeps printing (a loop over damaged data) is stopped at its time limit.
    #[test]
    fn a_converter_past_its_time_limit_is_stopped() {
        let start = std::time::Instant::now();
        let args = ["-c", "while :; do echo line; done", "sh"];
        let limits = (Duration::from_secs(60), Duration::from_secs(1));
        let e = run_converter("x.dat", "sh", &args, Path::new("x"), ("trace.dat", "test"), |_, _| Ok(()), limits)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("x.dat: a trace.dat that `test` could not read: `sh` was still running after 1 s"),
            "{e}"
        );
        assert!(e.contains("--helper-timeout"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn the_conversion_limit_grows_with_the_input() {
        let default = HelperLimits::default();
        assert_eq!(default.conversion(0), CONVERT_BASE_LIMIT);
        assert_eq!(default.conversion(2_000_000_000), CONVERT_BASE_LIMIT + Duration::from_secs(2000));
        assert_eq!(default.header_check(), HEADER_CHECK_LIMIT);
        let given = HelperLimits { each: Some(Duration::from_secs(7)) };
        assert_eq!(
            (given.conversion(u64::MAX), given.header_check()),
            (Duration::from_secs(7), Duration::from_secs(7))
        );
    }

    #[test]
    fn flyrecord_listing_is_read() {
        let text = "2 [CPUs]:\n   0 1155072\t28672\t[id, data offset and size]\n   1 1187840\t25625\t[id, data offset and size]\n";
        assert_eq!(flyrecord_cpus(text), vec![(0, 1155072, 28672), (1, 1187840, 25625)]);
    }

    #[test]
    fn a_version_6_flyrecord_listing_is_read() {
        let text = "\t[Flyrecord tracing data]\n\t      12288      98304\t[offset, size of cpu 0]\n\
                    \t     110592      73728\t[offset, size of cpu 1]\n";
        assert_eq!(flyrecord_cpus(text), vec![(0, 12288, 98304), (1, 110592, 73728)]);
    }

    #[test]
    fn a_perf_data_header_is_checked_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("perf.data");
        let mut h = Vec::from(*b"PERFILE2");
        h.extend([0u8; 32]);
        h.extend(100u64.to_le_bytes());
        h.extend(0u64.to_le_bytes());
        std::fs::write(&p, &h).unwrap();
        let e = check_perf_data(&p, "perf.data").unwrap_err().to_string();
        assert!(e.contains("empty data section"), "{e}");
        h[48..56].copy_from_slice(&1000u64.to_le_bytes());
        std::fs::write(&p, &h).unwrap();
        let e = check_perf_data(&p, "perf.data").unwrap_err().to_string();
        assert!(e.contains("truncated perf.data: its data section is bytes 100..1100 but the file has 56"), "{e}");
        std::fs::write(&p, &h[..20]).unwrap();
        let e = check_perf_data(&p, "perf.data").unwrap_err().to_string();
        assert!(e.contains("shorter than its header"), "{e}");
    }
}
