//! Errors for bad input files: always `file:line:col: what was expected`.

use std::fmt;

/// An error in a user-supplied file (scenario, topology, sweep, trace).
///
/// `line` and `col` are 1-based; 0 means "the whole file".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct InputError {
    pub path: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl InputError {
    pub fn new(path: impl Into<String>, line: usize, col: usize, message: impl Into<String>) -> Self {
        InputError { path: path.into(), line, col, message: message.into() }
    }

    /// Build from a byte offset into `text`.
    pub fn at_offset(path: impl Into<String>, text: &str, offset: usize, message: impl Into<String>) -> Self {
        let (line, col) = line_col(text, offset);
        InputError::new(path, line, col, message)
    }

    /// An error about the file as a whole (missing, unreadable).
    pub fn whole_file(path: impl Into<String>, message: impl Into<String>) -> Self {
        InputError::new(path, 0, 0, message)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.path, self.line, self.col, self.message)
        }
    }
}

/// The largest scenario, topology or sweep file read: the biggest real
/// one is a few kB; 64 MiB is ~1 M `[[thread]]` tables. More is refused
/// before it is read (a huge or endless input must not fill memory).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Read an input file as text: `-` is standard input; anything but a
/// regular file (a FIFO with no writer would block forever, a device never
/// ends, a directory) is refused with what it is; at most
/// [`MAX_INPUT_BYTES`]. `what` names the file's kind in errors ("scenario").
pub fn read_input(path: &std::path::Path, what: &str) -> Result<String, InputError> {
    use std::io::Read;
    let shown = path.display().to_string();
    let fail = |msg: String| InputError::whole_file(&shown, msg);
    let mut bytes = Vec::new();
    if path == std::path::Path::new("-") {
        std::io::stdin()
            .lock()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(format!("cannot read {what} from standard input: {e}")))?;
    } else {
        // Look before opening: opening a FIFO blocks until a writer comes.
        let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read {what}: {e}")))?;
        if !meta.is_file() {
            use std::os::unix::fs::FileTypeExt;
            let t = meta.file_type();
            let kind = if t.is_dir() {
                "a directory"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_char_device() || t.is_block_device() {
                "a device"
            } else if t.is_socket() {
                "a socket"
            } else {
                "something else"
            };
            return Err(fail(format!(
                "cannot read {what}: it is {kind}, not a regular file; give a file, or - for standard input"
            )));
        }
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    }
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(fail(format!(
            "more than {} MiB, the fixed limit for a {what} file (about a million threads' worth)",
            MAX_INPUT_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let (line, col) = line_col(&String::from_utf8_lossy(e.as_bytes()), e.utf8_error().valid_up_to());
        InputError::new(&shown, line, col, format!("{what} files are UTF-8 text; this byte is not"))
    })
}

/// 1-based line and column (in characters) of a byte offset. Scans the
/// text before it: for one error; a reader that locates many values uses
/// a [`LineIndex`].
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

/// Where each line of a text starts, so that locating a value costs a
/// binary search, not a scan from the top ([`line_col`] per value made
/// reading a scenario of 40 000 threads quadratic: 86 s).
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { starts }
    }

    /// [`line_col`] of `offset` in `text` (the text this index was built from).
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, text[start..offset].chars().count() + 1)
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_locates_as_the_scan_does() {
        let text = "a = 1\n\nbé = \"x\"\n  [[t]]\nlast";
        let idx = LineIndex::new(text);
        for off in 0..=text.len() + 3 {
            assert_eq!(idx.line_col(text, off), line_col(text, off), "offset {off}");
        }
    }
}
