//! A trace recorded elsewhere, as a side: tracefs text, `trace-cmd report`
//! text, and trace.dat, perf.data or Perfetto converted to text first
//! (`schedlab_report::input`), streamed from a file
//! (`TraceReport::stream_tapped`) or read whole, into the `schedlab run`
//! report or one of `perf sched`'s views (`schedlab analyze`).
//! How the workload is chosen and what is reported:
//! `schedlab_report::TraceReport` and `schedlab_report::workload`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use schedlab_analysis::perf_sched::{
    latency_json, LatencyRow, LatencyRows, SchedLatency, SchedMap, Timehist, TimehistOptions,
};
use schedlab_report::{input, ReportError, Streamed, TraceOptions, TraceReport};
use schedlab_scenario::Scenario;
use schedlab_sim::MemoryBudget;
use schedlab_trace::files::TraceFileError;
use schedlab_trace::{Event, TaskTable};

/// Why a recorded trace could not be read or analysed.
#[derive(Debug, thiserror::Error)]
pub enum RecordedError {
    #[error("{path}: cannot read: {source}")]
    Read { path: String, source: std::io::Error },
    /// A trace argument that is neither a regular file nor a pipe.
    #[error("{path}: it is {kind}, not a regular file; give a file, a pipe, or - for standard input")]
    NotAFile { path: String, kind: &'static str },
    /// Text read whole with a NUL byte early on: no trace text has one.
    #[error(
        "{path}: byte {offset} is NUL: not trace text (schedlab reads tracefs text, trace-cmd report text, \
         trace.dat, perf.data and Perfetto traces)"
    )]
    NotTraceText { path: String, offset: u64 },
    /// A binary trace from a pipe is copied to a file for its converter.
    #[error("{path}: cannot copy it to a temporary file for its converter: {source}")]
    Spool { path: String, source: std::io::Error },
    /// An input the memory budget cannot analyse whole.
    #[error(
        "{path}: more than {limit} of input, which the analysis (the text and one event per line) cannot hold within \
         the memory budget of {budget}; raise the budget ({raise_with}) or analyse a shorter capture"
    )]
    InputTooLarge { path: String, limit: String, budget: String, raise_with: String },
    #[error(transparent)]
    Report(#[from] ReportError),
    /// Writing `--perfetto` or `--convert`.
    #[error(transparent)]
    File(#[from] TraceFileError),
    /// Writing a `perf sched` view's lines.
    #[error("cannot write the report: {0}")]
    Output(std::io::Error),
}

/// What is made of the trace while it is read.
#[derive(Clone, Debug)]
pub enum View {
    /// The `schedlab run` report.
    Report,
    /// `perf sched latency`'s table, its rows per comm or per thread.
    Latency(LatencyRows),
    /// `perf sched timehist`'s line per switch (the CPUs and time of
    /// `TimehistOptions` are taken from the trace's filter).
    Timehist(TimehistOptions),
    /// `perf sched map`'s line per switch, or a JSON object a line.
    Map { json: bool },
}

/// A recorded trace and what to make of it.
pub struct Recorded<'a> {
    /// The trace: a file, a named pipe, or `-` (standard input).
    pub path: PathBuf,
    pub options: TraceOptions<'a>,
    pub view: View,
    /// Also write the events as a Perfetto trace (reads the trace whole).
    pub perfetto: Option<&'a Path>,
    /// Also write the events as a trace.dat (reads the trace whole).
    pub convert: Option<&'a Path>,
    pub budget: MemoryBudget,
    /// The time limit of each helper a binary trace is read through.
    pub helper_timeout: Option<Duration>,
}

/// What the analysis gives back.
pub enum Analysed {
    /// The report.
    Report(Box<TraceReport>),
    /// `perf sched latency`'s rows, beside the report (for its header).
    Latency { report: Box<TraceReport>, latency: SchedLatency, rows: Vec<LatencyRow> },
    /// A listing (timehist, map), already written to the caller's output.
    Listed,
}

impl Analysed {
    /// What `schedlab analyze` prints (`None`: the listing is written
    /// already): the report, or perf's latency table under the report's
    /// header; with `json`, either as JSON.
    pub fn text(
        self,
        scenario: Option<&Scenario>,
        json: bool,
        narratives: usize,
        perfetto: Option<&Path>,
    ) -> Result<Option<String>, RecordedError> {
        Ok(Some(match self {
            Analysed::Listed => return Ok(None),
            Analysed::Latency { rows, .. } if json => latency_json(&rows),
            Analysed::Latency { report, latency, rows } => {
                format!("{}{}", report.header_only(scenario), latency.render(&rows))
            }
            Analysed::Report(report) if json => format!("{}\n", report.to_json(scenario)?),
            Analysed::Report(report) => report.render(scenario, narratives, perfetto),
        }))
    }
}

/// The shortest common event line of a tracefs capture, bytes: a
/// `sched_wakeup` with a short comm is about 90 (a capture of this
/// project's host averaged 150 over all lines). The analysis holds the
/// text and one event per line, so its memory is at most
/// `1 + TRACE_EVENT_BYTES / SHORT_LINE_BYTES` times the input.
const SHORT_LINE_BYTES: u64 = 90;

/// The most input the analysis can hold whole within `budget`: the text
/// and one event per line.
fn input_limit(budget: &MemoryBudget) -> u64 {
    budget.bytes / (SHORT_LINE_BYTES + schedlab_sim::TRACE_EVENT_BYTES) * SHORT_LINE_BYTES
}

fn too_large(shown: &str, budget: &MemoryBudget) -> RecordedError {
    RecordedError::InputTooLarge {
        path: shown.to_string(),
        limit: schedlab_sim::gib(input_limit(budget)),
        budget: format!("{} ({})", schedlab_sim::gib(budget.bytes), budget.origin),
        raise_with: budget.raise_with.clone(),
    }
}

/// The streamed analysis of `shown` passed the budget at `ev`.
fn over_budget(shown: &str, ev: &Event, resident: u64, budget: &MemoryBudget) -> String {
    format!(
        "memory budget: {shown}: at {}.{:06} s of the trace the analysis held {} of memory, past {} ({}). \
         A streamed analysis's memory does not grow with the trace's length: raise the budget ({})",
        ev.ts / 1_000_000_000,
        ev.ts % 1_000_000_000 / 1000,
        schedlab_sim::gib(resident),
        schedlab_sim::gib(budget.bytes),
        budget.origin,
        budget.raise_with
    )
}

/// How much of a stream is looked at for NUL bytes before the rest is
/// read: trace text has none, so `/dev/zero` or a binary file of another
/// kind through a pipe is refused at once, not after the budget's worth.
const TEXT_CHECK_BYTES: u64 = 64 << 10;

/// Read all of `input` (`head` already read from it), refusing more than
/// the budget lets the analysis hold (a huge capture, a pipe that never
/// ends) before it is read in full, and a NUL byte in its first
/// [`TEXT_CHECK_BYTES`] at once.
fn read_bounded(head: &[u8], input: impl Read, shown: &str, budget: &MemoryBudget) -> Result<Vec<u8>, RecordedError> {
    let limit = input_limit(budget);
    let read_err = |source| RecordedError::Read { path: shown.to_string(), source };
    let mut bytes = head.to_vec();
    let mut input = input.take(limit.saturating_add(1).saturating_sub(head.len() as u64));
    (&mut input).take(TEXT_CHECK_BYTES).read_to_end(&mut bytes).map_err(read_err)?;
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(RecordedError::NotTraceText { path: shown.to_string(), offset: offset as u64 });
    }
    input.read_to_end(&mut bytes).map_err(read_err)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(shown, budget));
    }
    Ok(bytes)
}

/// What the trace argument names, checked before anything is read.
enum TraceInput {
    /// A regular file: sniffed, converted when binary, streamed.
    File,
    /// Standard input (`-`) or a named pipe: read whole, within the budget.
    Stream(Box<dyn Read>),
}

impl TraceInput {
    /// Refuses, without reading from it, what is neither a regular file nor
    /// a pipe: a device never ends (`/dev/zero`), a directory or a socket
    /// is no trace.
    fn open(path: &Path, shown: &str) -> Result<TraceInput, RecordedError> {
        use std::os::unix::fs::FileTypeExt;
        if path == Path::new("-") {
            return Ok(TraceInput::Stream(Box::new(std::io::stdin())));
        }
        let read_err = |source| RecordedError::Read { path: shown.to_string(), source };
        let t = std::fs::metadata(path).map_err(read_err)?.file_type();
        if t.is_file() {
            return Ok(TraceInput::File);
        }
        if t.is_fifo() {
            return Ok(TraceInput::Stream(Box::new(std::fs::File::open(path).map_err(read_err)?)));
        }
        let kind = if t.is_dir() {
            "a directory"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        Err(RecordedError::NotAFile { path: shown.to_string(), kind })
    }
}

/// A stream's first bytes: enough for [`input::sniff`].
fn stream_head(stream: &mut dyn Read, shown: &str) -> Result<Vec<u8>, RecordedError> {
    let mut head = vec![0u8; 16];
    let mut n = 0;
    while n < head.len() {
        match stream.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => return Err(RecordedError::Read { path: shown.to_string(), source }),
        }
    }
    head.truncate(n);
    Ok(head)
}

/// A binary trace from a stream, copied to a temporary file for its
/// converter (within the same limit as text read whole).
fn spool(
    head: &[u8],
    stream: impl Read,
    shown: &str,
    budget: &MemoryBudget,
) -> Result<tempfile::NamedTempFile, RecordedError> {
    let write_err = |source| RecordedError::Spool { path: shown.to_string(), source };
    let mut file = tempfile::Builder::new().prefix("schedlab-input-").tempfile().map_err(write_err)?;
    file.write_all(head).map_err(write_err)?;
    let limit = input_limit(budget);
    let copied = std::io::copy(&mut stream.take(limit.saturating_add(1)), file.as_file_mut()).map_err(write_err)?;
    if copied + head.len() as u64 > limit {
        return Err(too_large(shown, budget));
    }
    Ok(file)
}

/// A `perf sched` view being made while the trace is read.
enum PerfView<'a, W: Write> {
    Latency(SchedLatency),
    Timehist(Timehist<'a, W>),
    /// Made at the first event, when the trace's CPU count is known.
    Map(Option<SchedMap<W>>),
}

/// A listing's output flushed; a closed pipe (`| head`) is not an error.
fn flushed<W: Write>(out: std::io::Result<W>) -> Result<(), RecordedError> {
    match out.and_then(|mut o| o.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(RecordedError::Output(e)),
        _ => Ok(()),
    }
}

/// Read and analyse `rec`; a listing view writes its lines to the writers
/// `out` makes as it reads, and `note` hears what the reader has to say
/// about the input (a conversion's caveat, events out of time order).
pub fn analyze_recorded<W: Write>(
    rec: &Recorded,
    out: &dyn Fn() -> W,
    note: &mut dyn FnMut(&str),
) -> Result<Analysed, RecordedError> {
    let opts = &rec.options;
    let path = rec.path.display().to_string();
    let budget = &rec.budget;
    // A stream's text is read whole now; a binary one is copied to a file.
    let (mut stream_text, mut spooled) = (None, None);
    if let TraceInput::Stream(mut stream) = TraceInput::open(&rec.path, &path)? {
        let head = stream_head(&mut stream, &path)?;
        match input::sniff(&head) {
            input::InputKind::Text => {
                let bytes = read_bounded(&head, stream, &path, budget)?;
                let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
                // perf script's text from a pipe: rewritten as a perf.data's is.
                stream_text = Some(if input::is_perf_script(&text) {
                    input::perf_script_text(&String::from_utf8_lossy(&bytes)).into_bytes()
                } else {
                    bytes
                });
            }
            _ => spooled = Some(spool(&head, stream, &path, budget)?),
        }
    }
    // The file a binary trace is read from, and whether the trace is a file.
    let file = spooled.as_ref().map_or(rec.path.clone(), |f| f.path().to_path_buf());
    let is_file = stream_text.is_none();
    // trace.dat and perf.data become text in a temporary file first.
    let converted = if is_file {
        let kind = input::sniff_file(&file, &path)?;
        input::convert(&file, &path, kind, input::HelperLimits { each: rec.helper_timeout })?
    } else {
        None
    };
    if let Some(n) = converted.as_ref().and_then(|c| c.note.as_ref()) {
        note(n);
    }
    let source = converted.as_ref().map_or(file, |c| c.text.path().to_path_buf());
    // Where a converted file's errors are: lines of the tool's text.
    let located = match &converted {
        Some(c) => format!("{path} (as `{}` text)", c.via),
        None => path.clone(),
    };
    // The `perf sched` views see every event (perf applies its filters its own way).
    let filter = opts.filter.clone();
    let shown = move |pid: i32, table: &TaskTable| filter.shows(pid, table);
    let mut perf = match &rec.view {
        View::Report => None,
        View::Latency(_) => Some(PerfView::Latency(SchedLatency::new())),
        View::Map { .. } => Some(PerfView::Map(None)),
        View::Timehist(th) => {
            let th_opts = TimehistOptions {
                cpus: opts.filter.cpus.as_ref().map(|c| c.iter().map(|c| c as u32).collect()),
                time: opts.filter.time,
                ..th.clone()
            };
            Some(PerfView::Timehist(Timehist::with_options(out(), shown, th_opts).map_err(RecordedError::Output)?))
        }
    };
    let keeps = opts.filter.clone();
    let json = matches!(rec.view, View::Map { json: true });
    let mut tap_view = |ev: &Event, table: &TaskTable, nr_cpus: u32| {
        let r = match perf.as_mut() {
            None => Ok(()),
            Some(PerfView::Latency(l)) => {
                if keeps.keeps(ev) {
                    l.observe(ev);
                }
                Ok(())
            }
            Some(PerfView::Timehist(th)) => {
                th.set_cpus(nr_cpus);
                th.observe(ev, table)
            }
            Some(PerfView::Map(m)) => {
                if keeps.keeps(ev) {
                    m.get_or_insert_with(|| SchedMap::new(out(), nr_cpus, json)).observe(ev, table)
                } else {
                    Ok(())
                }
            }
        };
        match r {
            // A closed pipe (`| head`) ends the listing, not the run.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r,
        }
    };
    // The streamed read holds no trace: the budget bounds the process's
    // resident memory, looked at every RESIDENT_CHECK_STEPS events.
    let mut seen = 0u64;
    let mut tap = |ev: &Event, table: &TaskTable, nr_cpus: u32| {
        seen += 1;
        if seen % schedlab_sim::RESIDENT_CHECK_STEPS == 1 {
            if let Some(resident) = schedlab_sim::resident_bytes().filter(|&r| r > budget.bytes) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    over_budget(&located, ev, resident, budget),
                ));
            }
        }
        tap_view(ev, table, nr_cpus)
    };
    // A regular file is read as a stream (two or three passes, bounded
    // memory); a pipe, `--perfetto` or `--convert` (which need every event)
    // read it whole within the memory budget, as does a trace out of time order.
    let mut streamed = None;
    if is_file && rec.perfetto.is_none() && rec.convert.is_none() {
        let open = || std::fs::File::open(&source).map(|f| std::io::BufReader::with_capacity(1 << 20, f));
        match TraceReport::stream_tapped(&located, open, opts, &mut tap)? {
            Streamed::Report(r) => streamed = Some(*r),
            Streamed::NotInTimeOrder { line } => note(&format!(
                "{located}:{line}: events are not in time order from here (per-CPU buffers one after \
                 the other?): reading the whole trace to sort it, within the memory budget"
            )),
        }
    }
    let mut report = match streamed {
        Some(r) => r,
        None => {
            let bytes = match stream_text.take() {
                Some(bytes) => bytes,
                None => {
                    let f = std::fs::File::open(&source)
                        .map_err(|source| RecordedError::Read { path: path.clone(), source })?;
                    read_bounded(&[], f, &path, budget)?
                }
            };
            let (report, trace) = TraceReport::read(&located, &bytes, opts)?;
            if let Some(p) = rec.perfetto {
                schedlab_trace::files::write_perfetto(&trace, p)?;
            }
            if let Some(p) = rec.convert {
                schedlab_trace::files::write_tracedat(&trace, p)?;
            }
            for ev in &trace.events {
                tap_view(ev, &trace.table, trace.nr_cpus).map_err(RecordedError::Output)?;
            }
            report
        }
    };
    report.via = converted.as_ref().map(|c| (c.kind, c.via));
    report.path = path;
    match (perf, &rec.view) {
        (Some(PerfView::Timehist(th)), _) => flushed(th.finish()).map(|()| Analysed::Listed),
        (Some(PerfView::Map(m)), _) => m.map_or(Ok(()), |m| flushed(m.finish())).map(|()| Analysed::Listed),
        (Some(PerfView::Latency(latency)), View::Latency(by)) => {
            let rows = latency.rows_by(&report.table, |pid| report.filter.shows(pid, &report.table), *by);
            Ok(Analysed::Latency { report: Box::new(report), latency, rows })
        }
        _ => Ok(Analysed::Report(Box::new(report))),
    }
}
