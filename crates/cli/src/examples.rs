//! The examples that end each command's `--help`, kept as data in
//! crates/cli/examples.txt. Every line is parsed by the test below with the
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

#[cfg(test)]
mod tests {
    use crate::Cli;
    use clap::{CommandFactory, Parser};
    use std::path::Path;

    /// The `schedlab ...` commands of a help's Examples section, as words:
    /// `sudo` and comments dropped, a redirection or pipe ends the command.
    fn examples(help: &str) -> Vec<Vec<String>> {
        let Some((_, section)) = help.split_once("Examples:\n") else { return Vec::new() };
        section
            .lines()
            .take_while(|l| l.starts_with("  "))
            .filter_map(|line| {
                let line = line.split(" # ").next().unwrap_or(line);
                let start = line.find("schedlab ")?;
                let words = shell_words(&line[start..]);
                Some(words.into_iter().take_while(|w| !matches!(w.as_str(), ">" | "|" | "&&" | ";")).collect())
            })
            .collect()
    }

    /// Split on blanks, honouring single and double quotes.
    fn shell_words(s: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut cur = String::new();
        let mut quote: Option<char> = None;
        for c in s.chars() {
            match c {
                '\'' | '"' if quote.is_none() => quote = Some(c),
                c if quote == Some(c) => quote = None,
                ' ' if quote.is_none() => {
                    if !cur.is_empty() {
                        words.push(std::mem::take(&mut cur));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            words.push(cur);
        }
        words
    }

    #[test]
    fn every_command_ends_its_help_with_examples_that_parse_and_name_real_files() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut top = Cli::command();
        let names: Vec<String> = top.get_subcommands().map(|s| s.get_name().to_string()).collect();
        for name in names {
            let sub = top.find_subcommand_mut(&name).unwrap();
            let help = sub.render_long_help().to_string();
            let found = examples(&help);
            assert!(
                (2..=4).contains(&found.len()),
                "`schedlab {name} --help` has {} examples, expected 2-4:\n{help}",
                found.len()
            );
            assert!(
                found.iter().any(|w| w.get(1) == Some(&name)),
                "no example of `schedlab {name} --help` runs `{name}`"
            );
            for words in found {
                let name = words[1].clone();
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("example `{}` does not parse: {e}", words.join(" "));
                }
                // A scenario or sweep argument names a bundled one (the
                // examples run from any directory) or a file they write.
                if matches!(name.as_str(), "run" | "real" | "compare" | "vm" | "diff" | "sweep") {
                    let arg = words[2..].iter().find(|w| !w.starts_with('-')).expect("a scenario argument");
                    let kind =
                        if name == "sweep" { schedlab_bundle::Kind::Sweep } else { schedlab_bundle::Kind::Scenario };
                    let path = schedlab_bundle::find(Path::new(arg), kind);
                    assert!(
                        path.as_deref().and_then(schedlab_bundle::get).is_some(),
                        "example `{}`: `{arg}` is no bundled name",
                        words.join(" ")
                    );
                    assert!(root.join(path.unwrap()).exists());
                }
            }
        }
    }

    /// The `schedlab` command lines in the code blocks of README.md and
    /// docs/, synopses (`[--flag X]`, `SCENARIO`) left out, with the page
    /// and line they come from.
    fn command_lines_in_docs(root: &Path) -> Vec<(String, Vec<String>)> {
        let mut pages = vec![root.join("README.md")];
        let mut docs: Vec<_> = std::fs::read_dir(root.join("docs")).unwrap().map(|e| e.unwrap().path()).collect();
        docs.sort();
        pages.extend(docs.into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")));
        let mut found = Vec::new();
        for page in pages {
            let text = std::fs::read_to_string(&page).unwrap();
            let mut in_block = false;
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("```") {
                    in_block = !in_block;
                    continue;
                }
                let line = line.trim_start().trim_start_matches("$ ").trim_start_matches("sudo ");
                if !in_block || !line.starts_with("schedlab ") {
                    continue;
                }
                let line = line.split(" # ").next().unwrap_or(line);
                // `a; b` and `a && b` are two commands.
                for command in line.split("; ").flat_map(|c| c.split(" && ")) {
                    let command = command.trim().trim_start_matches("sudo ");
                    if !command.starts_with("schedlab ") {
                        continue;
                    }
                    let words: Vec<String> = shell_words(command)
                        .into_iter()
                        .take_while(|w| !matches!(w.as_str(), ">" | "|" | "2>&1" | "\\"))
                        .collect();
                    let placeholder = |w: &String| {
                        w.starts_with('[')
                            || w.contains('|')
                            || [
                                "SCENARIO", "FILE", "TRACE", "DIR", "NAME", "LIST", "SETTING", "SWEEP", "PATH", "N",
                                "D", "COMMAND",
                            ]
                            .contains(&w.as_str())
                    };
                    if words.iter().any(placeholder) {
                        continue;
                    }
                    let name = page.strip_prefix(root).unwrap().display().to_string();
                    found.push((format!("{name}:{}", n + 1), words));
                }
            }
        }
        found
    }

    #[test]
    fn every_command_line_in_the_docs_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let lines = command_lines_in_docs(&root);
        assert!(lines.len() > 40, "only {} command lines found in the docs", lines.len());
        let mut bad = Vec::new();
        for (at, words) in &lines {
            if let Err(e) = Cli::try_parse_from(words) {
                // `--help` and `--version` end the parse to print themselves.
                use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                if matches!(e.kind(), DisplayHelp | DisplayVersion) {
                    continue;
                }
                let e = e.to_string();
                bad.push(format!("{at}: `{}`: {}", words.join(" "), e.lines().next().unwrap_or("")));
            }
        }
        assert!(
            bad.is_empty(),
            "{} of {} command lines in the docs do not parse:\n{}",
            bad.len(),
            lines.len(),
            bad.join("\n")
        );
    }

    #[test]
    fn a_renamed_flag_would_fail_the_example_test() {
        let words = examples("Examples:\n  schedlab run asym_min --no-such-flag\n");
        assert_eq!(words.len(), 1);
        assert!(Cli::try_parse_from(&words[0]).is_err());
    }
}
