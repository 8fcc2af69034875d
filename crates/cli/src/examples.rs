//! The examples that end each command's `--help`. Every line is parsed by
//! the test below with the command's own definition, and every scenario or
//! sweep it names must exist (on disk or bundled), so an example cannot
//! outlive a renamed flag or file.

pub const RUN: &str = "Examples:
  schedlab run asym_min                                  # seed 000's stall, as bundled
  schedlab run asym_min --features NO_DELAY_DEQUEUE --seed 3
  schedlab run schbench-spr --duration 200ms --view latency
  schedlab run rt-pi-push --trace rt.txt --perfetto rt.pftrace --plot plots";

pub const SWEEP: &str = "Examples:
  schedlab sweep itmt-delay-dequeue                      # seed 000's table
  schedlab sweep rt-pi-push --rounds 3 --json > rt-pi-push.json
  schedlab sweep schbench-seed004 --ab base,TTWU_QUEUE_DELAYED --csv rows.csv
  schedlab sweep itmt-delay-dequeue --shard 0/2 --out shards   # then sweep-merge shards";

pub const SWEEP_MERGE: &str = "Examples:
  schedlab sweep itmt-delay-dequeue --shard 0/2 --out shards
  schedlab sweep itmt-delay-dequeue --shard 1/2 --out shards
  schedlab sweep-merge shards --csv rows.csv";

pub const DIFF: &str = "Examples:
  schedlab diff asym_min --b NO_DELAY_DEQUEUE            # where the scenario's own run and B part
  schedlab diff rt-pi-push --a RT_PUSH_IPI --b NO_RT_PUSH_IPI --seed 7
  schedlab diff asym_min --a itmt=1 --b itmt=0 --after 40";

pub const ANALYZE: &str = "Examples:
  schedlab analyze trace.txt --scenario asym_min-2cpu    # tracefs text, threads named by the scenario
  schedlab analyze trace.dat --wakers 'kworker*' --time 5.0,6.0
  schedlab analyze perf.data --view timehist -C 1
  trace-cmd report trace.dat | schedlab analyze - --view latency";

pub const REAL: &str = "Examples:
  sudo schedlab real asym_min-2cpu                       # seed 000's scenario on this kernel
  sudo schedlab real asym_min-2cpu --duration 3s --trace real.txt
  sudo schedlab real cyclictest --stat-runtime --json > real.json";

pub const COMPARE: &str = "Examples:
  sudo schedlab compare asym_min-2cpu                    # model and this kernel side by side
  sudo schedlab compare fidelity/pingpong-2cpu --duration 2s --sim-trace sim.txt --trace real.txt
  schedlab compare asym_min-4cpu --vm --features NO_DELAY_DEQUEUE   # the real side in a 6.12 guest";

pub const FIDELITY: &str = "Examples:
  sudo schedlab fidelity                                 # every case against this host's file
  sudo schedlab fidelity --cases schbench-family --rounds 5
  sudo schedlab fidelity --probe 3 --probe-out host.toml --cases asym_min,pingpong";

pub const VM: &str = "Examples:
  schedlab vm asym_min-4cpu                              # Debian's 6.12 in QEMU
  schedlab vm asym_min-4cpu --setting DELAY_DEQUEUE --setting NO_DELAY_DEQUEUE --runs 4
  schedlab vm asym_min-4cpu --kernel linux/arch/x86/boot/bzImage --cpus 4 --trace guest.txt";

pub const BENCH: &str = "Examples:
  schedlab bench                                         # every block, median of 3
  schedlab bench --only sweep --reps 5
  schedlab bench --only schbench --schbench-duration 10s";

pub const FEATURES: &str = "Examples:
  schedlab features                                      # the 6.12 profile's defaults
  schedlab features --kernel 6.15";

pub const TOPOLOGIES: &str = "Examples:
  schedlab topologies                                    # the presets
  schedlab topologies sapphire-rapids-2s > spr.toml      # one to copy and edit
  sudo schedlab topologies --host --rounds 3 --out host.toml";

pub const COMPLETIONS: &str = "Examples:
  schedlab completions bash > ~/.local/share/bash-completion/completions/schedlab
  schedlab completions zsh > ~/.zfunc/_schedlab
  schedlab completions fish > ~/.config/fish/completions/schedlab.fish";

pub const MAN: &str = "Examples:
  schedlab man --out man                                 # then: man -l man/schedlab-run.1
  schedlab man --out /usr/local/share/man/man1";

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
