//! `schedlab completions SHELL`: clap_complete's static script, with one
//! change for bash: an argument that takes a comma-separated list of names
//! (`--features NO_DELAY_DEQUEUE,NO_RUN_TO_PARITY`, `--topology A,B`)
//! completes the item after the last comma, keeping the items before it.
//! clap_complete's script matches the whole word against the names, so
//! `--features A,B<TAB>` would offer nothing.
//!
//! zsh and fish scripts are clap_complete's as they are (no zsh or fish on
//! the machines this was made on to check a change against).

use std::collections::BTreeSet;

/// The script for `shell`.
pub fn script(shell: clap_complete::Shell, cmd: &mut clap::Command) -> String {
    // Into memory first: clap_complete panics when its writer fails.
    let mut out = Vec::new();
    clap_complete::generate(shell, cmd, "schedlab", &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    match shell {
        clap_complete::Shell::Bash => bash_list_items(&text, &list_flags(cmd)),
        _ => text,
    }
}

/// The `--long` names of the arguments, in any command, that take a
/// comma-separated list and offer names to complete.
fn list_flags(cmd: &clap::Command) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for arg in cmd.get_arguments() {
        if arg.get_value_delimiter() == Some(',') && !arg.get_possible_values().is_empty() {
            if let Some(long) = arg.get_long() {
                flags.insert(format!("--{long}"));
            }
        }
    }
    for sub in cmd.get_subcommands() {
        flags.extend(list_flags(sub));
    }
    flags
}

/// In each `--flag)` case of a list flag, complete the word's last item:
/// the candidates get the items before it (up to its comma) as a prefix.
/// The same flag name taking one value elsewhere completes as before (no
/// comma: no prefix).
fn bash_list_items(script: &str, flags: &BTreeSet<String>) -> String {
    let mut out = String::with_capacity(script.len() + 4096);
    let mut in_list_case = false;
    for line in script.split_inclusive('\n') {
        let t = line.trim();
        // A case label: `--features)`.
        if let Some(label) = t.strip_suffix(')').filter(|l| l.starts_with('-') && !l.contains(' ')) {
            in_list_case = flags.contains(label);
        }
        if in_list_case && t.starts_with("COMPREPLY=($(compgen -W ") && t.ends_with(r#" -- "${cur}"))"#) {
            let indent = &line[..line.len() - line.trim_start().len()];
            let body = t.strip_suffix(r#" -- "${cur}"))"#).unwrap();
            out.push_str(&format!("{indent}local item=\"${{cur##*,}}\"\n"));
            out.push_str(&format!("{indent}{body} -P \"${{cur%\"$item\"}}\" -- \"$item\"))\n"));
            continue;
        }
        if t == ";;" {
            in_list_case = false;
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
    #[allow(clippy::print_stdout)] // the skip says why, as the integration tests' do
    fn bash_completes_the_item_after_the_last_comma() {
        let script = script(clap_complete::Shell::Bash, &mut crate::Cli::command());
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
    fn only_the_list_cases_change() {
        let flags = list_flags(&crate::Cli::command());
        assert!(flags.contains("--features"), "{flags:?}");
        let script = "            --features)\n                COMPREPLY=($(compgen -W \"A B\" -- \"${cur}\"))\n                return 0\n                ;;\n            --seed)\n                COMPREPLY=($(compgen -f \"${cur}\"))\n                ;;\n";
        let out = bash_list_items(script, &flags);
        assert!(out.contains("                local item=\"${cur##*,}\"\n                COMPREPLY=($(compgen -W \"A B\" -P \"${cur%\"$item\"}\" -- \"$item\"))\n"), "{out}");
        assert!(
            out.ends_with(
                "            --seed)\n                COMPREPLY=($(compgen -f \"${cur}\"))\n                ;;\n"
            ),
            "{out}"
        );
    }
}
