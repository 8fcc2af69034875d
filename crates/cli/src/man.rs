//! `schedlab man`: the top page and one per command, from the clap
//! definitions, with a SYNOPSIS a reader can type.
//!
//! clap_mangen's own SYNOPSIS lists each option without its value
//! (`[--scenario]`) under the page's name (`schedlab-analyze`); ours writes
//! the command as it is typed (`schedlab analyze`) and each value's name
//! (`[--scenario FILE]`). Subcommand pages carry the version in their
//! title but no `-V`, which subcommands refuse.

use crate::error::{CliError, Result};
use clap::{Arg, ArgAction, Command};
use std::path::Path;

pub fn write_man_pages(top: Command, dir: &Path) -> Result {
    std::fs::create_dir_all(dir).map_err(|e| CliError::Write {
        flag: "man",
        path: dir.display().to_string(),
        why: e.to_string(),
    })?;
    let top = top.disable_help_subcommand(true);
    let version = top.get_version().unwrap_or("").to_string();
    for sub in top.get_subcommands() {
        let page = format!("schedlab-{}", sub.get_name());
        let invoked = format!("schedlab {}", sub.get_name());
        let cmd = sub.clone().name(page.clone()).version(version.clone()).disable_version_flag(true);
        write_page(dir, &page, &invoked, cmd)?;
    }
    write_page(dir, "schedlab", "schedlab", top)?;
    stderr_line!("wrote {}/schedlab.1 and a page per command", dir.display());
    Ok(())
}

fn write_page(dir: &Path, page: &str, invoked: &str, cmd: Command) -> Result {
    let mut cmd = cmd;
    cmd.build();
    let synopsis = synopsis(invoked, &cmd);
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out).map_err(CliError::Stdout)?;
    let text = replace_synopsis(&String::from_utf8_lossy(&out), &synopsis);
    crate::output::write_file(&dir.join(format!("{page}.1")), &text, "man")
}

/// The page with its SYNOPSIS section's body replaced by `body`.
fn replace_synopsis(page: &str, body: &str) -> String {
    const HEAD: &str = ".SH SYNOPSIS\n";
    let Some(start) = page.find(HEAD).map(|i| i + HEAD.len()) else { return page.to_string() };
    let end = page[start..].find("\n.SH ").map_or(page.len(), |i| start + i + 1);
    format!("{}{body}{}", &page[..start], &page[end..])
}

/// Text for roff: a backslash and a hyphen escaped.
fn esc(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

fn bold(s: &str) -> String {
    format!("\\fB{}\\fR", esc(s))
}

fn italic(s: &str) -> String {
    format!("\\fI{}\\fR", esc(s))
}

/// `[--scenario FILE]`, `[-C|--cpu CPULIST]`, `[--json]`, `SCENARIO`.
fn usage_of(arg: &Arg) -> Option<String> {
    let values = arg.get_num_args().expect("a built command");
    let value_name = || {
        arg.get_value_names()
            .map(|v| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase())
    };
    let flag = match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("{}|{}", bold(&format!("-{s}")), bold(&format!("--{l}"))),
        (Some(s), None) => bold(&format!("-{s}")),
        (None, Some(l)) => bold(&format!("--{l}")),
        (None, None) => {
            let v = italic(&value_name());
            return Some(if arg.is_required_set() { v } else { format!("[{v}]") });
        }
    };
    let mut text = flag;
    if values.takes_values() && !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count)
    {
        let v = italic(&value_name());
        if values.min_values() == 0 {
            text.push_str(&format!(" [{v}]"));
        } else {
            text.push(' ');
            text.push_str(&v);
        }
    }
    Some(if arg.is_required_set() { text } else { format!("[{text}]") })
}

/// The SYNOPSIS body: the command as typed, its options, its positionals, and
/// `COMMAND` when it has subcommands.
fn synopsis(invoked: &str, cmd: &Command) -> String {
    let mut parts = vec![bold(invoked)];
    let visible = |a: &&Arg| !a.is_hide_set();
    parts.extend(cmd.get_arguments().filter(visible).filter(|a| !a.is_positional()).filter_map(usage_of));
    parts.extend(cmd.get_positionals().filter(visible).filter_map(usage_of));
    if cmd.has_subcommands() {
        parts.push(italic("COMMAND"));
    }
    format!("{}\n", parts.join(" "))
}
