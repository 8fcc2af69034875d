//! The command line's definition, checked where a user meets it: the
//! examples that end each `--help` and the command lines in the docs parse,
//! the man pages, the shell completions, the names offered to completion.

use clap::{CommandFactory, Parser};
use schedlab::Cli;
use std::path::Path;

mod common;
use common::{ok, tmp_dir};

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
        assert!(found.iter().any(|w| w.get(1) == Some(&name)), "no example of `schedlab {name} --help` runs `{name}`");
        for words in found {
            let name = words[1].clone();
            if let Err(e) = Cli::try_parse_from(&words) {
                panic!("example `{}` does not parse: {e}", words.join(" "));
            }
            // A scenario or sweep argument names a bundled one (the
            // examples run from any directory) or a file they write.
            if matches!(name.as_str(), "run" | "real" | "compare" | "vm" | "diff" | "sweep") {
                let arg = words[2..].iter().find(|w| !w.starts_with('-')).expect("a scenario argument");
                let kind = if name == "sweep" { schedlab_bundle::Kind::Sweep } else { schedlab_bundle::Kind::Scenario };
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
                            "SCENARIO", "FILE", "TRACE", "DIR", "NAME", "LIST", "SETTING", "SWEEP", "PATH", "N", "D",
                            "COMMAND",
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

#[test]
fn man_pages_name_each_value_and_offer_no_version_flag_where_it_is_refused() {
    let dir = tmp_dir("man");
    ok(&["man", "--out", dir.path().to_str().unwrap()]);
    let analyze = std::fs::read_to_string(dir.path().join("schedlab-analyze.1")).unwrap();
    let synopsis = analyze.split(".SH SYNOPSIS\n").nth(1).unwrap().split("\n.SH").next().unwrap();
    assert!(synopsis.starts_with("\\fBschedlab analyze\\fR"), "{synopsis}");
    assert!(synopsis.contains("[\\fB\\-\\-scenario\\fR \\fIFILE\\fR]"), "{synopsis}");
    assert!(synopsis.contains("[\\fB\\-C\\fR|\\fB\\-\\-cpu\\fR \\fICPULIST\\fR]"), "{synopsis}");
    assert!(synopsis.contains("[\\fB\\-\\-json\\fR]"), "{synopsis}");
    assert!(synopsis.contains("\\fITRACE\\fR"), "{synopsis}");
    assert!(!analyze.contains("\\-\\-version"), "a subcommand's page lists --version");
    let top = std::fs::read_to_string(dir.path().join("schedlab.1")).unwrap();
    assert!(top.contains("\\-\\-version"), "the top page lost --version");
    assert!(top.contains("\\fICOMMAND\\fR"));
    // Every command has a page, and every page has one SYNOPSIS.
    for sub in Cli::command().get_subcommands() {
        let page = std::fs::read_to_string(dir.path().join(format!("schedlab-{}.1", sub.get_name()))).unwrap();
        assert_eq!(page.matches(".SH SYNOPSIS").count(), 1);
    }
    dir.close().unwrap();
}

/// What bash's completion offers for the words of a command line, the
/// last being completed.
fn complete(script: &str, words: &[&str]) -> Option<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("schedlab.bash");
    std::fs::write(&file, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let n = words.len();
    let prog = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _schedlab schedlab '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display(),
        quoted.join(" "),
        n - 1,
        words[n - 1],
        words[n - 2]
    );
    let out = std::process::Command::new("bash").args(["--norc", "-c", &prog]).output().ok()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect())
}

#[test]
fn bash_completes_the_item_after_the_last_comma() {
    let script = ok(&["completions", "bash"]);
    let Some(one) = complete(&script, &["schedlab", "run", "asym_min", "--features", "NO_RUN_TO"]) else {
        println!("skipped: no bash");
        return;
    };
    assert_eq!(one, ["NO_RUN_TO_PARITY"]);
    let list = complete(&script, &["schedlab", "run", "asym_min", "--features", "NO_DELAY_DEQUEUE,NO_RUN_TO"]);
    assert_eq!(list.unwrap(), ["NO_DELAY_DEQUEUE,NO_RUN_TO_PARITY"]);
    let third = complete(&script, &["schedlab", "run", "asym_min", "--features", "A,B,PLACE_L"]);
    assert_eq!(third.unwrap(), ["A,B,PLACE_LAG"]);
    // Right after a comma: every name, after the items typed.
    let all = complete(&script, &["schedlab", "hunt", "--features", "NO_DELAY_DEQUEUE,"]).unwrap();
    assert!(all.len() > 10 && all.iter().all(|c| c.starts_with("NO_DELAY_DEQUEUE,")), "{all:?}");
    // A one-value name argument is as before.
    let topo = complete(&script, &["schedlab", "run", "asym_min", "--topology", "ryzen-79"]).unwrap();
    assert!(topo.contains(&"ryzen-7950x".to_string()), "{topo:?}");
}

#[test]
fn bash_completion_is_clap_completes_script_but_for_the_list_cases() {
    let ours = ok(&["completions", "bash"]);
    let mut raw = Vec::new();
    clap_complete::generate(clap_complete::Shell::Bash, &mut Cli::command(), "schedlab", &mut raw);
    let raw = String::from_utf8(raw).unwrap();
    // Each list case's completion, put back as clap_complete wrote it.
    const ITEM: &str = r#"local item="${cur##*,}""#;
    let (ours_tail, raw_tail) = (r#" -P "${cur%"$item"}" -- "$item"))"#, r#" -- "${cur}"))"#);
    let undone: String = ours
        .split_inclusive('\n')
        .filter(|l| l.trim() != ITEM)
        .map(|l| if l.trim_end().ends_with(ours_tail) { l.replace(ours_tail, raw_tail) } else { l.to_string() })
        .collect();
    assert_eq!(undone, raw, "the bash script differs from clap_complete's beyond the list cases");
    // --features takes a list; --seed one value, and completes as clap_complete has it.
    let case = |flag: &str| ours.split(&format!(" {flag})\n")).nth(1).unwrap().split(";;").next().unwrap().to_string();
    let features = case("--features");
    let item = features.lines().position(|l| l.trim() == ITEM).expect(&features);
    let next = features.lines().nth(item + 1).unwrap().trim();
    assert!(next.starts_with("COMPREPLY=($(compgen -W \"") && next.ends_with(ours_tail), "{features}");
    assert!(!case("--seed").contains("item"), "{}", case("--seed"));
}

#[test]
fn names_are_offered_to_completion_but_anything_is_accepted() {
    let cmd = Cli::command();
    let offered = |sub: &str, arg: &str, name: &str| {
        let arg = cmd.find_subcommand(sub).unwrap().get_arguments().find(|a| a.get_id() == arg).unwrap();
        arg.get_possible_values().iter().any(|v| v.get_name() == name)
    };
    assert!(offered("run", "topology", "ryzen-7950x"));
    assert!(offered("run", "features", "NO_DELAY_DEQUEUE"));
    assert!(offered("run", "kernel", "6.12"));
    assert!(offered("run", "scenario", "asym_min"));
    assert!(offered("sweep", "sweep", "rt-pi-push"));
    assert!(offered("fidelity", "cases", "schbench"));
    let words = ["schedlab", "run", "no/such.toml", "--topology", "my/file.toml"];
    let matches = Cli::command().try_get_matches_from(words).unwrap();
    let run = matches.subcommand_matches("run").unwrap();
    assert_eq!(run.get_one::<String>("topology").unwrap(), "my/file.toml");
    assert_eq!(run.get_one::<std::path::PathBuf>("scenario").unwrap(), Path::new("no/such.toml"));
}

#[test]
fn the_grace_default_is_the_analysis_default() {
    let mut commands = 0;
    for sub in Cli::command().get_subcommands() {
        let Some(grace) = sub.get_arguments().find(|a| a.get_id() == "grace") else { continue };
        let default = grace.get_default_values();
        assert_eq!(default.len(), 1, "{}", sub.get_name());
        let ns = schedlab_topology::parse_duration(default[0].to_str().unwrap());
        assert_eq!(ns, Ok(schedlab_analysis::DEFAULT_GRACE_NS), "schedlab {} --grace", sub.get_name());
        commands += 1;
    }
    assert!(commands >= 3, "only {commands} commands take --grace");
}
