//! `schedlab analyze TRACE`: the `schedlab run` report (or `perf sched`'s
//! views) for a trace captured elsewhere: tracefs text, `trace-cmd report`,
//! and trace.dat, perf.data or Perfetto converted to text first
//! (`schedlab_report::input`); streamed from a file (`TraceReport::stream`)
//! or read whole.
//! How the workload is chosen and what is reported:
//! `schedlab_report::TraceReport` and `schedlab_report::workload`.

use std::path::PathBuf;

use clap::Args;
use schedlab_analysis::perf_sched::{json_str, SchedLatency, SchedMap, Timehist, TimehistOptions};
use schedlab_report::{input, Streamed, TraceFilter, TraceOptions, TraceReport};
use schedlab_scenario::Scenario;

use crate::args::{JsonArg, MemoryArg, PerfettoArg, ReportArgs, ThresholdArg, View, ViewArg};
use crate::error::{CliError, Result};
use crate::output::{write_perfetto, write_tracedat};

#[derive(Args)]
#[command(after_help = crate::examples::ANALYZE)]
pub struct AnalyzeArgs {
    /// The trace: /sys/kernel/tracing/trace or trace_pipe text, `trace-cmd report` text
    /// (default or -R), a trace.dat (read through `trace-cmd report -R -t`), a perf.data
    /// (through `perf script`), `perf script` text or a Perfetto trace; the kind is
    /// detected from the file's first bytes (perf script text from its first event line). Switches the capture is missing are put back where each event's header
    /// proves them, and figures they make uncertain are left out (docs/real-traces.md). A
    /// file is read as a stream, in memory that does not grow with its length; a pipe or `-`
    /// (standard input), a trace out of time order (a Perfetto trace), `--perfetto` or
    /// `--convert` read it whole, within --max-memory. Devices, directories and sockets are refused.
    pub trace: PathBuf,
    /// Scenario the trace is a run of: its thread names pick the workload's tasks by comm,
    /// and their affinities, objects, stall threshold and [[measure]]s are used.
    #[arg(long, value_name = "FILE", value_parser = crate::names::scenario(), hide_possible_values = true)]
    pub scenario: Option<PathBuf>,
    /// Comm glob patterns (comma-separated, `*` and `?`) of the tasks whose `signal` starts a handoff.
    #[arg(long, value_name = "PATTERNS")]
    pub wakers: Option<String>,
    /// Comm glob patterns of the tasks whose `wait_done` ends a handoff (the wakees).
    #[arg(long, value_name = "PATTERNS")]
    pub wakees: Option<String>,
    /// Only the events on these CPUs (a cpulist: `1`, `0-3,8`), as `perf sched -C`.
    #[arg(short = 'C', long = "cpu", value_name = "CPULIST", value_parser = parse_cpus)]
    pub cpu: Option<schedlab_topology::CpuSet>,
    /// Only the rows of these processes' threads (comma-separated tgids), as `perf sched
    /// timehist -p`. Without PIDS (after the trace), --pids: `perf sched latency -p`.
    #[arg(short = 'p', long = "pid", value_name = "PIDS", value_delimiter = ',', num_args = 0..=1,
          value_parser = parse_pid)]
    pub pid: Option<Vec<i32>>,
    /// Only the rows of these threads (comma-separated tids), as perf's `-t`.
    #[arg(short = 't', long = "tid", value_name = "TIDS", value_delimiter = ',')]
    pub tid: Vec<i32>,
    /// Only the events from START to END, in the trace's seconds as it prints them
    /// (`49916.5,49916.8`; either side may be empty), as perf's `--time`.
    #[arg(long = "time", value_name = "START,END", value_parser = parse_time_range)]
    pub time: Option<(Option<u64>, Option<u64>)>,
    #[command(flatten)]
    pub view: ViewArg,
    /// `--view timehist`: also a line per wakeup, as `perf sched timehist -w`.
    #[arg(short = 'w', long)]
    pub wakeups: bool,
    /// `--view timehist`: also a line per migration, as `perf sched timehist -M`.
    #[arg(short = 'M', long)]
    pub migrations: bool,
    /// `--view timehist`: a column per CPU marking the line's (s a switch, i the idle
    /// task's, m a migration), as `perf sched timehist -V`.
    #[arg(short = 'V', long)]
    pub cpu_visual: bool,
    /// `--view timehist`: the task switched in, as `perf sched timehist -n`.
    #[arg(short = 'n', long)]
    pub next: bool,
    /// Not offered: perf's `timehist -s` (summary only); refused with the reason.
    #[arg(short = 's', long, hide = true)]
    pub summary: bool,
    /// Not offered: perf's `timehist -S` (lines and summary); refused with the reason.
    #[arg(short = 'S', long, hide = true)]
    pub with_summary: bool,
    /// Not offered: perf's `timehist -I` (idle-hist); refused with the reason.
    #[arg(short = 'I', long, hide = true)]
    pub idle_hist: bool,
    /// Not offered: perf's `timehist --state`; refused with the reason.
    #[arg(long, hide = true)]
    pub state: bool,
    #[command(flatten)]
    pub threshold: ThresholdArg,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub perfetto: PerfettoArg,
    /// Write the trace's events as a trace-cmd trace.dat (file format version 6, as
    /// `run --trace-dat` writes it), for `trace-cmd report` and KernelShark; `trace-cmd
    /// report -N` prints them as schedlab's ftrace text would. Only the events schedlab
    /// reads go in (other tracepoints are left out, the switches the repair put back are
    /// in), with one comm per task (its last). Reads the trace whole.
    #[arg(long, value_name = "FILE")]
    pub convert: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub memory: MemoryArg,
    /// Time limit of each helper a binary trace is read through (`trace-cmd`, `perf`),
    /// e.g. 1800s; past it the helper is stopped and the input refused. Default: 5 s for
    /// trace-cmd's header check, 120 s plus 1 s per MB of input for the conversion.
    #[arg(long, value_name = "DURATION", value_parser = parse_helper_timeout)]
    pub helper_timeout: Option<std::time::Duration>,
}

/// A pid of `-p PIDS`; a word that is not one is most likely the trace
/// after a bare `-p`.
fn parse_pid(s: &str) -> std::result::Result<i32, String> {
    s.trim().parse().map_err(|_| {
        format!(
            "`{s}` is not a pid: -p takes comma-separated pids (perf sched timehist -p); for one latency row \
             per thread (perf sched latency -p) put -p after the trace, or use --pids"
        )
    })
}

fn parse_helper_timeout(s: &str) -> std::result::Result<std::time::Duration, String> {
    match schedlab_topology::parse_duration(s).map_err(|e| e.to_string())? {
        0 => Err("must be longer than zero".into()),
        ns => Ok(std::time::Duration::from_nanos(ns)),
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
fn input_limit(budget: &schedlab_sim::MemoryBudget) -> u64 {
    budget.bytes / (SHORT_LINE_BYTES + schedlab_sim::TRACE_EVENT_BYTES) * SHORT_LINE_BYTES
}

fn too_large(shown: &str, budget: &schedlab_sim::MemoryBudget) -> CliError {
    CliError::InputTooLarge {
        path: shown.to_string(),
        limit: schedlab_sim::gib(input_limit(budget)),
        budget: format!("{} ({})", schedlab_sim::gib(budget.bytes), budget.origin),
        raise_with: budget.raise_with.clone(),
    }
}

/// The streamed analysis of `shown` passed the budget at `ev`.
fn over_budget(shown: &str, ev: &schedlab_trace::Event, resident: u64, budget: &schedlab_sim::MemoryBudget) -> String {
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
fn read_bounded(
    head: &[u8],
    input: impl std::io::Read,
    shown: &str,
    budget: &schedlab_sim::MemoryBudget,
) -> Result<Vec<u8>> {
    use std::io::Read;
    let limit = input_limit(budget);
    let read_err = |source| CliError::Read { path: shown.to_string(), source };
    let mut bytes = head.to_vec();
    let mut input = input.take(limit.saturating_add(1).saturating_sub(head.len() as u64));
    (&mut input).take(TEXT_CHECK_BYTES).read_to_end(&mut bytes).map_err(read_err)?;
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(CliError::NotTraceText { path: shown.to_string(), offset: offset as u64 }.into());
    }
    input.read_to_end(&mut bytes).map_err(read_err)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(shown, budget).into());
    }
    Ok(bytes)
}

/// What the trace argument names, checked before anything is read.
enum TraceInput {
    /// A regular file: sniffed, converted when binary, streamed.
    File,
    /// Standard input (`-`) or a named pipe: read whole, within the budget.
    Stream(Box<dyn std::io::Read>),
}

impl TraceInput {
    /// Refuses, without reading from it, what is neither a regular file nor
    /// a pipe: a device never ends (`/dev/zero`), a directory or a socket
    /// is no trace.
    fn open(path: &std::path::Path, shown: &str) -> Result<TraceInput> {
        use std::os::unix::fs::FileTypeExt;
        if path == std::path::Path::new("-") {
            return Ok(TraceInput::Stream(Box::new(std::io::stdin())));
        }
        let read_err = |source| CliError::Read { path: shown.to_string(), source };
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
        Err(CliError::NotAFile { path: shown.to_string(), kind }.into())
    }
}

/// A stream's first bytes: enough for [`input::sniff`].
fn stream_head(stream: &mut dyn std::io::Read, shown: &str) -> Result<Vec<u8>> {
    let mut head = vec![0u8; 16];
    let mut n = 0;
    while n < head.len() {
        match stream.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => return Err(CliError::Read { path: shown.to_string(), source }.into()),
        }
    }
    head.truncate(n);
    Ok(head)
}

/// A binary trace from a stream, copied to a temporary file for its
/// converter (within the same limit as text read whole).
fn spool(
    head: &[u8],
    stream: impl std::io::Read,
    shown: &str,
    budget: &schedlab_sim::MemoryBudget,
) -> Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let write_err = |source| CliError::Spool { path: shown.to_string(), source };
    let mut file = tempfile::Builder::new().prefix("schedlab-input-").tempfile().map_err(write_err)?;
    file.write_all(head).map_err(write_err)?;
    let limit = input_limit(budget);
    let copied = std::io::copy(&mut stream.take(limit.saturating_add(1)), file.as_file_mut()).map_err(write_err)?;
    if copied + head.len() as u64 > limit {
        return Err(too_large(shown, budget).into());
    }
    Ok(file)
}

fn parse_cpus(s: &str) -> std::result::Result<schedlab_topology::CpuSet, String> {
    schedlab_topology::parse_cpulist(s).map_err(|e| e.to_string())
}

/// `START,END` in seconds with up to 9 decimals, either side empty.
fn parse_time_range(s: &str) -> std::result::Result<(Option<u64>, Option<u64>), String> {
    let (a, b) = s.split_once(',').ok_or("expected START,END (seconds, either side may be empty)")?;
    let secs = |t: &str| -> std::result::Result<Option<u64>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
        let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || !(frac.is_empty() || digits(frac)) || frac.len() > 9 {
            return Err(format!("`{t}`: expected seconds like 49916.5 (at most 9 decimals)"));
        }
        let ns = format!("{frac:0<9}").parse::<u64>().expect("digits");
        let s = whole.parse::<u64>().ok().and_then(|w| w.checked_mul(1_000_000_000)).and_then(|w| w.checked_add(ns));
        s.map(Some).ok_or_else(|| format!("`{t}`: too large"))
    };
    let (start, end) = (secs(a)?, secs(b)?);
    if let (Some(x), Some(y)) = (start, end) {
        if x > y {
            return Err(format!("`{s}`: the start is after the end"));
        }
    }
    Ok((start, end))
}

pub fn analyze_trace(mut args: AnalyzeArgs) -> Result {
    // The options are checked before the trace is read.
    refuse_timehist_options(&args)?;
    // `-p` alone is `perf sched latency -p`: one row per thread.
    if args.pid.as_ref().is_some_and(|p| p.is_empty()) {
        if args.view.view != View::Latency {
            return Err(CliError::Usage(
                "-p without PIDS is `perf sched latency -p` (one row per thread, also --pids), an option of \
                 --view latency; to choose processes give their pids: -p 1234,5678"
                    .into(),
            )
            .into());
        }
        args.view.pids = true;
    }
    args.view.check_pids()?;
    if (args.wakeups || args.migrations || args.cpu_visual || args.next) && args.view.view != View::Timehist {
        return Err(CliError::Usage(
            "-w/--wakeups, -M/--migrations, -V/--cpu-visual and -n/--next are options of --view timehist".into(),
        )
        .into());
    }
    let view = args.view;
    let scenario = match &args.scenario {
        Some(p) => Some(Scenario::load(p)?),
        None => None,
    };
    let path = args.trace.display().to_string();
    let opts = TraceOptions {
        scenario: scenario.as_ref(),
        wakers: args.wakers.as_deref(),
        wakees: args.wakees.as_deref(),
        threshold_ns: args.threshold.threshold,
        grace_ns: args.report.grace,
        filter: TraceFilter {
            cpus: args.cpu,
            time: args.time.unwrap_or((None, None)),
            pids: args.pid.clone().unwrap_or_default(),
            tids: args.tid.clone(),
        },
        kept_stalls: schedlab_report::kept_stalls(args.report.stalls),
    };
    let perfetto = args.perfetto.perfetto.as_deref();
    let budget = args.memory.budget(1);
    // A stream's text is read whole now; a binary one is copied to a file.
    let (mut stream_text, mut spooled) = (None, None);
    if let TraceInput::Stream(mut stream) = TraceInput::open(&args.trace, &path)? {
        let head = stream_head(&mut stream, &path)?;
        match input::sniff(&head) {
            input::InputKind::Text => {
                let bytes = read_bounded(&head, stream, &path, &budget)?;
                let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
                // perf script's text from a pipe: rewritten as a perf.data's is.
                stream_text = Some(if input::is_perf_script(&text) {
                    input::perf_script_text(&String::from_utf8_lossy(&bytes)).into_bytes()
                } else {
                    bytes
                });
            }
            _ => spooled = Some(spool(&head, stream, &path, &budget)?),
        }
    }
    // The file a binary trace is read from, and whether the trace is a file.
    let file = spooled.as_ref().map_or(args.trace.clone(), |f| f.path().to_path_buf());
    let is_file = stream_text.is_none();
    // trace.dat and perf.data become text in a temporary file first.
    let converted = if is_file {
        let kind = input::sniff_file(&file, &path)?;
        input::convert(&file, &path, kind, input::HelperLimits { each: args.helper_timeout })?
    } else {
        None
    };
    if let Some(note) = converted.as_ref().and_then(|c| c.note.as_ref()) {
        stderr_line!("note: {note}");
    }
    let source = converted.as_ref().map_or(file, |c| c.text.path().to_path_buf());
    // Where a converted file's errors are: lines of the tool's text.
    let located = match &converted {
        Some(c) => format!("{path} (as `{}` text)", c.via),
        None => path.clone(),
    };
    // The `perf sched` views see every event (perf applies its filters its own way).
    let filter = opts.filter.clone();
    let shown = move |pid: i32, table: &schedlab_trace::TaskTable| filter.shows(pid, table);
    let stdout = || std::io::BufWriter::new(std::io::stdout());
    let mut perf = match view.view {
        View::Report => None,
        View::Latency => Some(PerfView::Latency(SchedLatency::new())),
        View::Map => Some(PerfView::Map(None)),
        View::Timehist => {
            let th_opts = TimehistOptions {
                wakeups: args.wakeups,
                migrations: args.migrations,
                cpus: opts.filter.cpus.as_ref().map(|c| c.iter().map(|c| c as u32).collect()),
                time: opts.filter.time,
                json: args.json.json,
                cpu_visual: args.cpu_visual,
                next: args.next,
            };
            Some(PerfView::Timehist(Timehist::with_options(stdout(), shown, th_opts).map_err(CliError::Stdout)?))
        }
    };
    let keeps = opts.filter.clone();
    let json = args.json.json;
    let mut tap_view = |ev: &schedlab_trace::Event, table: &schedlab_trace::TaskTable, nr_cpus: u32| {
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
                    m.get_or_insert_with(|| SchedMap::new(stdout(), nr_cpus, json)).observe(ev, table)
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
    let mut tap = |ev: &schedlab_trace::Event, table: &schedlab_trace::TaskTable, nr_cpus: u32| {
        seen += 1;
        if seen % schedlab_sim::RESIDENT_CHECK_STEPS == 1 {
            if let Some(resident) = schedlab_sim::resident_bytes().filter(|&r| r > budget.bytes) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    over_budget(&located, ev, resident, &budget),
                ));
            }
        }
        tap_view(ev, table, nr_cpus)
    };
    // A regular file is read as a stream (two or three passes, bounded
    // memory); a pipe, `--perfetto` or `--convert` (which need every event)
    // read it whole within the memory budget, as does a trace out of time order.
    let mut streamed = None;
    if is_file && perfetto.is_none() && args.convert.is_none() {
        let open = || std::fs::File::open(&source).map(|f| std::io::BufReader::with_capacity(1 << 20, f));
        match TraceReport::stream_tapped(&located, open, &opts, &mut tap)? {
            Streamed::Report(r) => streamed = Some(*r),
            Streamed::NotInTimeOrder { line } => stderr_line!(
                "note: {located}:{line}: events are not in time order from here (per-CPU buffers one after \
                 the other?): reading the whole trace to sort it, within the memory budget"
            ),
        }
    }
    let mut report = match streamed {
        Some(r) => r,
        None => {
            let bytes = match stream_text.take() {
                Some(bytes) => bytes,
                None => {
                    let f =
                        std::fs::File::open(&source).map_err(|source| CliError::Read { path: path.clone(), source })?;
                    read_bounded(&[], f, &path, &budget)?
                }
            };
            let (report, trace) = TraceReport::read(&located, &bytes, &opts)?;
            if let Some(p) = perfetto {
                write_perfetto(&trace, p)?;
            }
            if let Some(p) = &args.convert {
                write_tracedat(&trace, p)?;
            }
            for ev in &trace.events {
                tap_view(ev, &trace.table, trace.nr_cpus).map_err(CliError::Stdout)?;
            }
            report
        }
    };
    report.via = converted.as_ref().map(|c| (c.kind, c.via));
    report.path = path;
    let flushed = |out: std::io::Result<std::io::BufWriter<std::io::Stdout>>| match out
        .and_then(|mut o| std::io::Write::flush(&mut o))
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e).into()),
        _ => Ok(()),
    };
    match perf {
        None => {}
        Some(PerfView::Timehist(th)) => return flushed(th.finish()),
        Some(PerfView::Map(m)) => return m.map_or(Ok(()), |m| flushed(m.finish())),
        Some(PerfView::Latency(l)) => {
            let rows = l.rows_by(&report.table, |pid| report.filter.shows(pid, &report.table), view.latency_rows());
            if json {
                return crate::output::emit(&latency_json(&rows));
            }
            return crate::output::emit(&format!("{}{}", report.header_only(scenario.as_ref()), l.render(&rows)));
        }
    }
    if args.json.json {
        crate::output::emit(&format!("{}\n", report.to_json(scenario.as_ref())?))?;
    } else {
        crate::output::emit(&report.render(scenario.as_ref(), args.report.stalls, perfetto))?;
    }
    Ok(())
}

/// `--view latency --json`: the rows as an array.
pub fn latency_json(rows: &[schedlab_analysis::perf_sched::LatencyRow]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"task\":{},\"tid\":{},\"threads\":{},\"runtime_ns\":{},\"switches\":{},\"avg_delay_ns\":{},\
                             \"max_delay_ns\":{},\"max_delay_start_ns\":{},\"max_delay_end_ns\":{}}}",
                json_str(&r.comm),
                r.tid,
                r.threads,
                r.runtime_ns,
                r.switches,
                r.avg_delay_ns,
                r.max_delay_ns,
                r.max_delay_start_ns,
                r.max_delay_end_ns
            )
        })
        .collect();
    format!("[\n  {}\n]\n", items.join(",\n  "))
}

/// perf's timehist options schedlab does not offer, each refused with why.
fn refuse_timehist_options(args: &AnalyzeArgs) -> Result {
    let why = if args.summary || args.with_summary {
        "-s/--summary and -S/--with-summary (perf sched timehist's per-task summary) are not offered: perf's \
         summary has a parent column it takes from its own fork records and from /proc when recording, which \
         no trace schedlab reads holds, so its rows could not equal perf's; --view latency gives the per-task \
         delays and the report (no --view) the run times"
    } else if args.idle_hist {
        "-I/--idle-hist (perf sched timehist's idle-time lines) is not offered: it is built on the idle task's \
         switches, which the kernel of this project's host does not trace (docs/real-traces.md), so it could \
         not be checked against perf; the report (no --view) gives each CPU's idle time"
    } else if args.state {
        "--state is not offered: perf prints the kernel's state letter of each switched-out task (I, Z, T, ...), \
         and schedlab keeps only the states its analysis uses (R, R+, S, D, X), so its column could not equal \
         perf's"
    } else {
        return Ok(());
    };
    Err(CliError::Usage(why.into()).into())
}

/// A `perf sched` view being made while the trace is read.
enum PerfView<'a> {
    Latency(SchedLatency),
    Timehist(Timehist<'a, std::io::BufWriter<std::io::Stdout>>),
    /// Made at the first event, when the trace's CPU count is known.
    Map(Option<SchedMap<std::io::BufWriter<std::io::Stdout>>>),
}
