//! Files and streams the commands write: traces and the report itself.

use schedlab_trace::Trace;
use std::io::Write as _;
use std::path::Path;

use crate::error::{CliError, Result};

fn create(path: &Path, flag: &'static str) -> Result<std::io::BufWriter<std::fs::File>> {
    let file = std::fs::File::create(path).map_err(|e| write_error(path, flag, e))?;
    Ok(std::io::BufWriter::new(file))
}

/// The writers' errors as their text, whatever their type.
fn write_error(path: &Path, flag: &'static str, why: impl std::fmt::Display) -> CliError {
    CliError::Write { flag, path: path.display().to_string(), why: why.to_string() }
}

/// Write `trace` to `path` as ftrace text; errors name `flag`.
pub fn write_ftrace(trace: &Trace, path: &Path, flag: &'static str) -> Result {
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

/// Write `text` to `path` (`--csv FILE`).
pub fn write_file(path: &Path, text: &str, flag: &'static str) -> Result {
    std::fs::write(path, text).map_err(|e| write_error(path, flag, e).into())
}

/// Write the report to stdout; a closed pipe (`| head`) is not an error.
/// main.rs restores SIGPIPE's default action, which ends the process at such
/// a write, but a parent can hand SIGPIPE down blocked (the signal mask
/// survives exec): then the write returns EPIPE and lands here.
pub fn emit(out: &str) -> Result {
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e).into()),
        _ => Ok(()),
    }
}
