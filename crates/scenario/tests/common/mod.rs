//! Parsing scenario text as `t.toml` and checking where and why it is refused.

use std::path::Path;

use schedlab_scenario::{InputError, Scenario};

pub fn parse(text: &str) -> Result<Scenario, InputError> {
    Scenario::from_toml_str("t.toml", text, Path::new("."))
}

/// `text` is refused with an error on `line`, at the column where `needle`
/// starts on that line (counted in characters), that prints as
/// `t.toml:line:col: ...` and whose message contains `msg`.
#[track_caller]
pub fn expect_err(text: &str, line: usize, needle: &str, msg: &str) {
    let e = match parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    };
    let src = text.lines().nth(line - 1).unwrap_or_else(|| panic!("no line {line}"));
    let col = src.find(needle).unwrap_or_else(|| panic!("`{needle}` not on line {line}: {src}"));
    let col = src[..col].chars().count() + 1;
    assert_eq!((e.path.as_str(), e.line, e.col), ("t.toml", line, col), "wrong position for: {e}");
    assert!(e.message.contains(msg), "message `{}` lacks `{msg}`", e.message);
    assert!(e.to_string().starts_with(&format!("t.toml:{line}:{col}: ")), "{e}");
}
