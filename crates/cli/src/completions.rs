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
