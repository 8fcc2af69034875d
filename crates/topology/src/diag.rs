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
/// For a scenario or sweep argument that is neither a file nor a bundled
/// name: where the bundled ones are listed, and the closest of them.
fn bundled_hint(path: &std::path::Path, what: &str) -> String {
    let kind = match what {
        "scenario" => schedlab_bundle::Kind::Scenario,
        "sweep" => schedlab_bundle::Kind::Sweep,
        _ => return String::new(),
    };
    let Some(arg) = path.to_str().filter(|a| !a.starts_with('/') && !a.starts_with('.')) else {
        return String::new();
    };
    let all = schedlab_bundle::list();
    let names = all.iter().filter(|e| e.kind == kind).map(|e| e.name.as_str());
    let near = closest(arg.strip_suffix(".toml").unwrap_or(arg), names)
        .map_or(String::new(), |n| format!("; did you mean the bundled `{n}`?"));
    format!(" (nor is it a bundled {what}: `schedlab scenarios` lists them{near})")
}

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
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            // Not on disk: a repository path the binary carries
            // (`scenarios/...`, or a bundled file's relative reference).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match schedlab_bundle::get(path) {
                Some(text) => return Ok(text.to_string()),
                None => return Err(fail(format!("cannot read {what}: {e}{}", bundled_hint(path, what)))),
            },
            Err(e) => return Err(fail(format!("cannot read {what}: {e}"))),
        };
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

/// The candidate closest to `word`, when it is close enough to be what was
/// meant: at most one edit (insertion, deletion, substitution, or two
/// neighbours swapped) per three characters, at least one; letter case is
/// ignored (`no_delay_dequeue` is `NO_DELAY_DEQUEUE`). Ties go to the first.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    let most = (word.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(&word, &c.to_lowercase());
        if d <= most && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// ` (did you mean `X`?)` for [`closest`]'s candidate, or nothing.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates).map_or(String::new(), |c| format!(" (did you mean `{c}`?)"))
}

/// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`:
/// the optimal string alignment distance, over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows: the one before the previous (for swaps), the previous, this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut prev, row);
    }
    prev[b.len()]
}

/// A TOML file's parse error as an [`InputError`] at its position, with
/// what serde's words leave out: the known name closest to an unknown key
/// or value (`unknown field `duraton`, expected one of ... (did you mean
/// `duration`?)`), and, for a `[NAME]` table where an array of tables
/// belongs, how to write it.
pub fn toml_error(path: &str, text: &str, e: &toml::de::Error) -> InputError {
    let at = e.span().map(|s| s.start);
    let message = toml_message(e.message().trim(), at.map(|o| &text[o.min(text.len())..]));
    match at {
        Some(offset) => InputError::at_offset(path, text, offset, message),
        None => InputError::whole_file(path, message),
    }
}

/// [`toml_error`]'s message for serde's `msg`, `from` being the text at the
/// error's position.
fn toml_message(msg: &str, from: Option<&str>) -> String {
    for what in ["unknown field `", "unknown variant `"] {
        let Some(rest) = msg.strip_prefix(what) else { continue };
        let Some((word, expected)) = rest.split_once('`') else { continue };
        let known = expected.split('`').skip(1).step_by(2);
        return format!("{msg}{}", did_you_mean(word, known));
    }
    if msg.starts_with("invalid type: map, expected a sequence") {
        // `[thread]` where the key takes `[[thread]]`: serde sees a table
        // where it wants an array.
        let header = from.and_then(|t| t.strip_prefix('[')).filter(|t| !t.starts_with('['));
        if let Some(name) = header.and_then(|t| t.split_once(']')).map(|(n, _)| n.trim()) {
            return format!(
                "`[{name}]` is one table, but `{name}` is a list: write [[{name}]] (an array of tables), one per entry"
            );
        }
    }
    msg.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_the_name_meant_and_a_stranger_finds_none() {
        let keys = ["name", "duration", "seed", "topology", "thread"];
        assert_eq!(closest("duraton", keys), Some("duration"));
        assert_eq!(closest("toplogy", keys), Some("topology"));
        assert_eq!(closest("treahd", keys), Some("thread"), "a swap is one edit");
        assert_eq!(closest("Seed", keys), Some("seed"));
        assert_eq!(closest("colour", keys), None);
        assert_eq!(closest("x", ["y"]), Some("y"), "one edit is always allowed");
        assert_eq!(closest("NO_DELAY_DEQUEU", ["DELAY_DEQUEUE", "NO_DELAY_DEQUEUE"]), Some("NO_DELAY_DEQUEUE"));
        assert_eq!(did_you_mean("sede", keys), " (did you mean `seed`?)");
        assert_eq!(did_you_mean("zzz", keys), "");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("ab", "ba"), 1);
    }

    #[test]
    fn serde_messages_get_their_hints() {
        assert_eq!(
            toml_message("unknown field `duraton`, expected one of `name`, `duration`", None),
            "unknown field `duraton`, expected one of `name`, `duration` (did you mean `duration`?)"
        );
        assert_eq!(
            toml_message("unknown variant `fifoo`, expected `fifo` or `rr`", None),
            "unknown variant `fifoo`, expected `fifo` or `rr` (did you mean `fifo`?)"
        );
        assert_eq!(toml_message("unknown field `zzz`, expected `name`", None), "unknown field `zzz`, expected `name`");
        assert_eq!(
            toml_message("invalid type: map, expected a sequence", Some("[thread]\nname = \"a\"")),
            "`[thread]` is one table, but `thread` is a list: write [[thread]] (an array of tables), one per entry"
        );
        // Not at a table header: serde's words stand.
        assert_eq!(
            toml_message("invalid type: map, expected a sequence", Some("{ a = 1 }")),
            "invalid type: map, expected a sequence"
        );
    }

    #[test]
    fn the_index_locates_as_the_scan_does() {
        let text = "a = 1\n\nbé = \"x\"\n  [[t]]\nlast";
        let idx = LineIndex::new(text);
        for off in 0..=text.len() + 3 {
            assert_eq!(idx.line_col(text, off), line_col(text, off), "offset {off}");
        }
    }
}
