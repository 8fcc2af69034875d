//! Trace files written to a path: whole from a kept trace, or as a run
//! goes (`--trace`, `--perfetto`, `--trace-dat` of a streamed run), the
//! same bytes either way. A streamed file is opened before the run, so a
//! bad path fails at once, and a run that fails or is interrupted leaves
//! no file behind.

use crate::ftrace::{FtraceWriter, WriteOptions};
use crate::{Event, PerfettoWriter, TaskTable, Trace, TraceDatWriter};
use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// A trace file that could not be written: the flag that asked for it,
/// its path, and the I/O error.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {}: {source}", path.display())]
pub struct TraceFileError {
    pub flag: &'static str,
    pub path: PathBuf,
    pub source: std::io::Error,
}

fn create(path: &Path, flag: &'static str) -> Result<std::io::BufWriter<std::fs::File>, TraceFileError> {
    let file = std::fs::File::create(path).map_err(|e| write_error(path, flag, e))?;
    Ok(std::io::BufWriter::new(file))
}

/// A write of `path` (named by `flag`) that failed with `source`.
fn write_error(path: &Path, flag: &'static str, source: impl Into<std::io::Error>) -> TraceFileError {
    TraceFileError { flag, path: path.to_path_buf(), source: source.into() }
}

/// Write `trace` to `path` as ftrace text (`-`: standard output); errors name `flag`.
pub fn write_ftrace(trace: &Trace, path: &Path, flag: &'static str) -> Result<(), TraceFileError> {
    if is_stdout(path) {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        return crate::ftrace::write_ftrace(trace, &mut out)
            .and_then(|()| out.flush())
            .map_err(|e| write_error(path, flag, e));
    }
    let mut out = create(path, flag)?;
    crate::ftrace::write_ftrace(trace, &mut out).and_then(|()| out.flush()).map_err(|e| write_error(path, flag, e))
}

/// Write `trace` to `path` as a Perfetto protobuf trace (`--perfetto`).
pub fn write_perfetto(trace: &Trace, path: &Path) -> Result<(), TraceFileError> {
    let mut out = create(path, "--perfetto")?;
    crate::write_perfetto(trace, &mut out).and_then(|()| out.flush()).map_err(|e| write_error(path, "--perfetto", e))
}

/// Write `trace` to `path` as trace-cmd's trace.dat (`--trace-dat`).
pub fn write_tracedat(trace: &Trace, path: &Path) -> Result<(), TraceFileError> {
    let mut out = create(path, "--trace-dat")?;
    crate::write_tracedat(trace, &mut out).and_then(|()| out.flush()).map_err(|e| write_error(path, "--trace-dat", e))
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
    pub fn create(path: &Path) -> Result<Self, TraceFileError> {
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

    pub fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) {
        self.state.task_new(pid, info);
    }

    /// Write FILE: the header, then each CPU's pages.
    pub fn finish(self) -> Result<(), TraceFileError> {
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
        done.map_err(|e| write_error(path, "--trace-dat", e))
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
    fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) -> std::io::Result<()>;
}

impl<B: std::io::Write> Streamed for FtraceWriter<B> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        FtraceWriter::event(self, ev)
    }
    fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) -> std::io::Result<()> {
        FtraceWriter::task_new(self, pid, info);
        Ok(())
    }
}

impl Streamed for TraceDatWriter {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        TraceDatWriter::event(self, ev)
    }
    fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) -> std::io::Result<()> {
        TraceDatWriter::task_new(self, pid, info);
        Ok(())
    }
}

impl<B: std::io::Write> Streamed for PerfettoWriter<B> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        PerfettoWriter::event(self, ev)
    }
    fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) -> std::io::Result<()> {
        PerfettoWriter::task_new(self, pid, info)
    }
}

impl<W: Streamed, F> StreamState<W, F> {
    fn event(&mut self, ev: &Event) {
        self.write(|w| w.event(ev));
    }

    fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) {
        self.write(|w| w.task_new(pid, info));
    }
}

/// `--trace -`: the trace goes to standard output (and the report to stderr).
pub fn is_stdout(path: &Path) -> bool {
    path == Path::new("-")
}

impl FtraceStream {
    /// FILE, or standard output for `-` (the lines wait in the temp dir).
    pub fn create(path: &Path) -> Result<Self, TraceFileError> {
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

    pub fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) {
        self.state.task_new(pid, info);
    }

    /// Write FILE: the header, then the lines.
    pub fn finish(self) -> Result<(), TraceFileError> {
        let path = &self.path;
        let writer = match self.state {
            StreamState::Writing(w) => w,
            StreamState::Failed(e) => return Err(write_error(path, "--trace", e)),
            StreamState::Opened(_) | StreamState::Taken => {
                return Err(write_error(path, "--trace", std::io::Error::other("the run produced no task table")))
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
        copy().map_err(|e| write_error(path, "--trace", e))
    }
}

impl PerfettoStream {
    pub fn create(path: &Path) -> Result<Self, TraceFileError> {
        let file = std::fs::File::create(path).map_err(|e| write_error(path, "--perfetto", e))?;
        Ok(PerfettoStream { path: path.to_path_buf(), state: StreamState::Opened(file) })
    }

    pub fn start(&mut self, table: &TaskTable, nr_cpus: u32) {
        self.state.start(|f| PerfettoWriter::new(std::io::BufWriter::new(f), table.clone(), nr_cpus));
    }

    pub fn event(&mut self, ev: &Event) {
        self.state.event(ev);
    }

    pub fn task_new(&mut self, pid: crate::Pid, info: &crate::TaskInfo) {
        self.state.task_new(pid, info);
    }

    pub fn finish(self) -> Result<(), TraceFileError> {
        let path = &self.path;
        let done = match self.state {
            StreamState::Writing(w) => w.finish().and_then(|mut out| out.flush()),
            StreamState::Failed(e) => Err(e),
            StreamState::Opened(_) | StreamState::Taken => Err(std::io::Error::other("the run produced no task table")),
        };
        done.map_err(|e| write_error(path, "--perfetto", e))
    }
}
