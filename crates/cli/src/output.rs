//! Files and streams the commands write: the report itself, messages, and
//! the files of `--csv` and `--out` (trace files are written by
//! `schedlab_trace::files`).

use std::io::Write as _;
use std::path::Path;

pub use schedlab_trace::files::is_stdout;

use crate::error::{CliError, Result};

/// Write `text` to standard error, ignoring failure: see `stderr_line!`.
pub fn to_stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Write `text` to `path` (`--csv FILE`).
pub fn write_file(path: &Path, text: &str, flag: &'static str) -> Result {
    std::fs::write(path, text)
        .map_err(|e| CliError::Write { flag, path: path.display().to_string(), why: e.to_string() }.into())
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
