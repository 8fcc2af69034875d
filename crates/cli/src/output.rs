//! Files and streams the commands write: traces and the report itself.

use schedlab_trace::ftrace::{FtraceWriter, WriteOptions};
use schedlab_trace::{Event, PerfettoWriter, TaskTable, Trace, TraceDatWriter};
use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

use crate::error::{CliError, Result};

/// Write `text` to standard error, ignoring failure: see `stderr_line!`.
pub fn to_stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

fn create(path: &Path, flag: &'static str) -> Result<std::io::BufWriter<std::fs::File>> {
    let file = std::fs::File::create(path).map_err(|e| write_error(path, flag, e))?;
    Ok(std::io::BufWriter::new(file))
}

/// The writers' errors as their text, whatever their type.
fn write_error(path: &Path, flag: &'static str, why: impl std::fmt::Display) -> CliError {
    CliError::Write { flag, path: path.display().to_string(), why: why.to_string() }
}

/// Write `trace` to `path` as ftrace text (`-`: standard output); errors name `flag`.
pub fn write_ftrace(trace: &Trace, path: &Path, flag: &'static str) -> Result {
    if is_stdout(path) {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        return schedlab_trace::ftrace::write_ftrace(trace, &mut out)
            .and_then(|()| out.flush())
            .map_err(|e| write_error(path, flag, e).into());
    }
    let mut out = create(path, flag)?;
    schedlab_trace::ftrace::write_ftrace(trace, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| write_error(path, flag, e).into())
}

/// Write `trace` to `path` as a Perfetto protobuf trace (`--perfetto`).
pub fn write_perfetto(trace: &Trace, path: &Path) -> Result {
    let mut out = create(path, "--perfetto")?;
    schedlab_trace::write_perfetto(trace, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| write_error(path, "--perfetto", e).into())
}

/// Write `trace` to `path` as trace-cmd's trace.dat (`--trace-dat`).
pub fn write_tracedat(trace: &Trace, path: &Path) -> Result {
    let mut out = create(path, "--trace-dat")?;
    schedlab_trace::write_tracedat(trace, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| write_error(path, "--trace-dat", e).into())
}

/// `--trace-dat FILE` written as a run goes: each CPU's full ring-buffer
/// pages wait in a temporary spool file beside FILE (created at once, so a
/// bad directory fails before the run), and FILE is written at the end:
/// a run that fails or is interrupted leaves no FILE.
pub struct TraceDatStream {
    path: PathBuf,
    state: StreamState<TraceDatWriter, NamedTempFile>,
}

impl TraceDatStream {
    pub fn create(path: &Path) -> Result<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let spool = tempfile::Builder::new()
            .prefix(".schedlab-tracedat-")
            .tempfile_in(&dir)
            .map_err(|e| write_error(path, "--trace-dat", e))?;
        Ok(TraceDatStream { path: path.to_path_buf(), state: StreamState::Opened(spool) })
    }

    pub fn start(&mut self, table: &TaskTable, nr_cpus: u32) {
        // The spool's name goes now; its file stays open until the writer ends.
        self.state.start(|spool| Ok(TraceDatWriter::new(table.clone(), nr_cpus, spool.into_file())));
    }

    pub fn event(&mut self, ev: &Event) {
        self.state.event(ev);
    }

    pub fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) {
        self.state.task_new(pid, info);
    }

    /// Write FILE: the header, then each CPU's pages.
    pub fn finish(self) -> Result {
        let path = &self.path;
        let done = match self.state {
            StreamState::Writing(w) => std::fs::File::create(path).and_then(|file| {
                let mut out = std::io::BufWriter::new(file);
                w.finish(&mut out)?;
                out.flush()
            }),
            StreamState::Failed(e) => Err(e),
            StreamState::Opened(_) | StreamState::Taken => Err(std::io::Error::other("the run produced no task table")),
        };
        done.map_err(|e| write_error(path, "--trace-dat", e).into())
    }
}

/// `--trace FILE` written as a run goes. The header counts the events, so
/// the lines go to a temporary file beside FILE and FILE gets the header
/// and then the lines at the end: the file is byte for byte what
/// [`write_ftrace`] writes from a kept trace. A run that fails or is
/// interrupted leaves no FILE (the temporary file goes when dropped).
pub struct FtraceStream {
    path: PathBuf,
    state: StreamState<FtraceWriter<std::io::BufWriter<NamedTempFile>>, NamedTempFile>,
}

/// `--perfetto FILE` written as a run goes ([`PerfettoWriter`]), the same
/// bytes as [`write_perfetto`] from a kept trace.
pub struct PerfettoStream {
    path: PathBuf,
    state: StreamState<PerfettoWriter<std::io::BufWriter<std::fs::File>>, std::fs::File>,
}

/// A stream file: opened before the run (so a bad path fails at once),
/// writing once the task table is known, or failed (the first error is
/// kept and reported at the end; later events are not written).
enum StreamState<W, F> {
    Opened(F),
    Writing(W),
    Failed(std::io::Error),
    Taken,
}

impl<W, F> StreamState<W, F> {
    fn write(&mut self, f: impl FnOnce(&mut W) -> std::io::Result<()>) {
        if let StreamState::Writing(w) = self {
            if let Err(e) = f(w) {
                *self = StreamState::Failed(e);
            }
        }
    }

    fn start(&mut self, f: impl FnOnce(F) -> std::io::Result<W>) {
        if let StreamState::Opened(file) = std::mem::replace(self, StreamState::Taken) {
            *self = match f(file) {
                Ok(w) => StreamState::Writing(w),
                Err(e) => StreamState::Failed(e),
            };
        }
    }
}

/// What a run streams into each of its trace writers.
trait Streamed {
    fn event(&mut self, ev: &Event) -> std::io::Result<()>;
    fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) -> std::io::Result<()>;
}

impl<B: std::io::Write> Streamed for FtraceWriter<B> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        FtraceWriter::event(self, ev)
    }
    fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) -> std::io::Result<()> {
        FtraceWriter::task_new(self, pid, info);
        Ok(())
    }
}

impl Streamed for TraceDatWriter {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        TraceDatWriter::event(self, ev)
    }
    fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) -> std::io::Result<()> {
        TraceDatWriter::task_new(self, pid, info);
        Ok(())
    }
}

impl<B: std::io::Write> Streamed for PerfettoWriter<B> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        PerfettoWriter::event(self, ev)
    }
    fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) -> std::io::Result<()> {
        PerfettoWriter::task_new(self, pid, info)
    }
}

impl<W: Streamed, F> StreamState<W, F> {
    fn event(&mut self, ev: &Event) {
        self.write(|w| w.event(ev));
    }

    fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) {
        self.write(|w| w.task_new(pid, info));
    }
}

/// `--trace -`: the trace goes to standard output (and the report to stderr).
pub fn is_stdout(path: &Path) -> bool {
    path == Path::new("-")
}

impl FtraceStream {
    /// FILE, or standard output for `-` (the lines wait in the temp dir).
    pub fn create(path: &Path) -> Result<Self> {
        let dir = match path.parent() {
            _ if is_stdout(path) => std::env::temp_dir(),
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".schedlab-trace-")
            .tempfile_in(&dir)
            .map_err(|e| write_error(path, "--trace", e))?;
        Ok(FtraceStream { path: path.to_path_buf(), state: StreamState::Opened(tmp) })
    }

    pub fn start(&mut self, table: &TaskTable, nr_cpus: u32) {
        let opts = WriteOptions::default();
        self.state.start(|f| Ok(FtraceWriter::new(std::io::BufWriter::new(f), table.clone(), nr_cpus, opts)));
    }

    pub fn event(&mut self, ev: &Event) {
        self.state.event(ev);
    }

    pub fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) {
        self.state.task_new(pid, info);
    }

    /// Write FILE: the header, then the lines.
    pub fn finish(self) -> Result {
        let path = &self.path;
        let writer = match self.state {
            StreamState::Writing(w) => w,
            StreamState::Failed(e) => return Err(write_error(path, "--trace", e).into()),
            StreamState::Opened(_) | StreamState::Taken => {
                return Err(write_error(path, "--trace", "the run produced no task table").into())
            }
        };
        let (body, header) = writer.finish();
        let copy = || -> std::io::Result<()> {
            let mut tmp = body.into_inner().map_err(|e| e.into_error())?;
            tmp.as_file_mut().seek(SeekFrom::Start(0))?;
            let mut out: Box<dyn std::io::Write> = if is_stdout(path) {
                Box::new(std::io::stdout().lock())
            } else {
                Box::new(std::io::BufWriter::new(std::fs::File::create(path)?))
            };
            out.write_all(header.as_bytes())?;
            std::io::copy(tmp.as_file_mut(), &mut out)?;
            out.flush()
        };
        copy().map_err(|e| write_error(path, "--trace", e).into())
    }
}

impl PerfettoStream {
    pub fn create(path: &Path) -> Result<Self> {
        let file = std::fs::File::create(path).map_err(|e| write_error(path, "--perfetto", e))?;
        Ok(PerfettoStream { path: path.to_path_buf(), state: StreamState::Opened(file) })
    }

    pub fn start(&mut self, table: &TaskTable, nr_cpus: u32) {
        self.state.start(|f| PerfettoWriter::new(std::io::BufWriter::new(f), table.clone(), nr_cpus));
    }

    pub fn event(&mut self, ev: &Event) {
        self.state.event(ev);
    }

    pub fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) {
        self.state.task_new(pid, info);
    }

    pub fn finish(self) -> Result {
        let path = &self.path;
        let done = match self.state {
            StreamState::Writing(w) => w.finish().and_then(|mut out| out.flush()),
            StreamState::Failed(e) => Err(e),
            StreamState::Opened(_) | StreamState::Taken => Err(std::io::Error::other("the run produced no task table")),
        };
        done.map_err(|e| write_error(path, "--perfetto", e).into())
    }
}

/// Write `text` to `path` (`--csv FILE`).
pub fn write_file(path: &Path, text: &str, flag: &'static str) -> Result {
    std::fs::write(path, text).map_err(|e| write_error(path, flag, e).into())
}

/// Write the report to stdout; a closed pipe (`| head`) is not an error.
/// main.rs restores SIGPIPE's default action, which ends the process at such
/// a write, but a parent can hand SIGPIPE down blocked (the signal mask
/// survives exec): then the write returns EPIPE and lands here.
pub fn emit(out: &str) -> Result {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e).into()),
        _ => Ok(()),
    }
}
