//! The examples that end each command's `--help`, kept as data in
//! crates/cli/examples.txt. Every line is parsed by tests/command_line.rs with the
//! command's own definition, and every scenario or sweep it names must
//! exist (on disk or bundled), so an example cannot outlive a renamed flag
//! or file.

/// The file: `[command]` lines, each followed by that command's examples.
const TEXT: &str = include_str!("../examples.txt");

/// The Examples section of `command`'s help, from examples.txt.
pub fn get(command: &str) -> String {
    let header = format!("[{command}]");
    let mut lines = TEXT.lines().skip_while(|l| *l != header).skip(1).take_while(|l| l.starts_with("  "));
    let section = lines.by_ref().collect::<Vec<_>>().join("\n");
    assert!(!section.is_empty(), "examples.txt has no examples for `{command}`");
    format!("Examples:\n{section}")
}
