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

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}
