//! Object and thread names: the `{i}` and `{*}` placeholders an operation's
//! object name may hold, `poll` lists and patterns, the comms instances get
//! (the kernel's TASK_COMM_LEN), and which flag names a `{*}` can match.

use std::collections::{BTreeSet, HashMap};

use toml::{Spanned, Value};

use super::{Group, OpT, MAX_COMM};
use crate::values::{a_type, Ctx};
use schedlab_topology::InputError;

/// An object name as written in an operation: may contain `{i}` (instance
/// index) and at most one `{*}` (index bound by the last `poll`).
#[derive(Clone, Debug)]
pub(super) struct Name {
    pub(super) text: String,
    pub(super) at: usize,
}

pub(super) fn name(ctx: Ctx, s: &Spanned<String>) -> Result<Name, InputError> {
    check_name(s.get_ref()).map_err(|m| ctx.err(s, m.to_string()))?;
    Ok(Name { text: s.get_ref().clone(), at: s.span().start })
}

/// Why an object name was refused; the file position is the caller's.
#[derive(Debug, thiserror::Error)]
enum NameError {
    #[error("empty object name")]
    Empty,
    #[error("bad placeholder in `{0}`: expected `{{i}}` (instance index) or `{{*}}` (index bound by the last poll)")]
    BadPlaceholder(String),
    #[error("`{0}` has more than one `{{*}}`")]
    SeveralStars(String),
}

/// Object names: non-empty; braces only in `{i}` and one `{*}`.
fn check_name(text: &str) -> Result<(), NameError> {
    if text.is_empty() {
        return Err(NameError::Empty);
    }
    let mut rest = text;
    let mut stars = 0;
    while let Some(pos) = rest.find(['{', '}']) {
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{i}") {
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{*}") {
            stars += 1;
            rest = after;
        } else {
            return Err(NameError::BadPlaceholder(text.to_string()));
        }
    }
    if stars > 1 {
        return Err(NameError::SeveralStars(text.to_string()));
    }
    Ok(())
}

pub(super) fn poll_names(ctx: Ctx, v: &Spanned<Value>) -> Result<Vec<Name>, InputError> {
    let at = v.span().start;
    match v.get_ref() {
        Value::String(s) => {
            check_name(s).map_err(|m| ctx.err(v, m.to_string()))?;
            Ok(vec![Name { text: s.clone(), at }])
        }
        Value::Array(items) if !items.is_empty() => {
            let mut out: Vec<Name> = Vec::new();
            for item in items {
                let Value::String(s) = item else {
                    return Err(ctx.err(v, format!("`poll` list: expected flag names, found {}", a_type(item))));
                };
                check_name(s).map_err(|m| ctx.err(v, m.to_string()))?;
                if s.contains("{*}") {
                    return Err(ctx.err(
                        v,
                        format!("`poll` list: `{s}`: a list takes plain names; poll a family with one \"name{{*}}\" pattern"),
                    ));
                }
                if out.iter().any(|n| n.text == *s) {
                    return Err(ctx.err(v, format!("`poll` list names `{s}` twice")));
                }
                out.push(Name { text: s.clone(), at });
            }
            Ok(out)
        }
        Value::Array(_) => Err(ctx.err(v, "`poll` list is empty: expected at least one flag name")),
        other => Err(ctx.err(
            v,
            format!(
                "`poll`: expected a flag name, a \"name{{*}}\" pattern or a list of names, found {}",
                a_type(other)
            ),
        )),
    }
}

/// Check thread names and comms; return the comm of every instance, in order.
pub(super) fn thread_names(ctx: Ctx, groups: &[Group]) -> Result<Vec<String>, InputError> {
    let mut group_seen: HashMap<&str, usize> = HashMap::new();
    let mut comm_seen: HashMap<String, &str> = HashMap::new();
    let mut comms = Vec::new();
    for g in groups {
        if let Some(prev) = group_seen.insert(&g.name, g.name_at) {
            return Err(ctx.at(
                g.name_at,
                format!("duplicate thread name `{}` (first used at line {})", g.name, ctx.line_of(prev)),
            ));
        }
        let comm_of = |i: u32| if g.instances == 1 { g.name.clone() } else { format!("{}-{i}", g.name) };
        // A fork-only table (instances = 0) has no comm of its own; its
        // forked copies' are cut to fit, as the kernel cuts them.
        let longest = comm_of(g.instances.saturating_sub(1));
        if g.instances > 0 && longest.len() > MAX_COMM {
            let what = if g.instances == 1 {
                format!("thread name `{longest}`")
            } else {
                format!("thread name `{}` with {} instances gives comm `{longest}`, which", g.name, g.instances)
            };
            return Err(ctx.at(
                g.name_at,
                format!(
                    "{what} is {} bytes: the kernel's comm (TASK_COMM_LEN) holds at most {MAX_COMM}",
                    longest.len()
                ),
            ));
        }
        for i in 0..g.instances {
            let comm = comm_of(i);
            if let Some(other) = comm_seen.insert(comm.clone(), &g.name) {
                return Err(ctx.at(
                    g.name_at,
                    format!("thread `{}` gives comm `{comm}`, which thread `{other}` already has", g.name),
                ));
            }
            comms.push(comm);
        }
    }
    Ok(comms)
}

/// Every concrete flag name (`post`/`poll` without `{*}`, `{i}` expanded):
/// what a `{*}` poll pattern can match.
pub(super) fn flag_names(groups: &[Group]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for g in groups {
        for i in 0..g.instances {
            for (op, _) in &g.ops {
                let names: &[Name] = match op {
                    OpT::Post(n) => std::slice::from_ref(n),
                    OpT::Poll(ns, _) => ns,
                    _ => &[],
                };
                for n in names.iter().filter(|n| !n.text.contains("{*}")) {
                    out.insert(expand_i(&n.text, i));
                }
            }
        }
    }
    out
}

pub(super) fn expand_i(text: &str, i: u32) -> String {
    text.replace("{i}", &i.to_string())
}

/// Indices `n` (canonical decimal) such that `prefix n suffix` is a flag name.
pub(super) fn star_matches(prefix: &str, suffix: &str, flags: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = flags
        .iter()
        .filter_map(|f| {
            let mid = f.strip_prefix(prefix)?.strip_suffix(suffix)?;
            let canonical =
                !mid.is_empty() && mid.bytes().all(|b| b.is_ascii_digit()) && (mid == "0" || !mid.starts_with('0'));
            canonical.then(|| mid.to_string())
        })
        .collect();
    out.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_allow_only_i_and_one_star() {
        for ok in ["e", "efd{i}", "done{*}", "a{i}b{*}c", "x-1_y"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "{", "}", "a{j}", "{*}{*}", "a{ i}", "{I}"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn star_matches_canonical_numbers_in_numeric_order() {
        let flags: BTreeSet<String> =
            ["done10", "done2", "done0", "done01", "donex", "done", "xdone1", "done1a", "done1"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert_eq!(star_matches("done", "", &flags), ["0", "1", "2", "10"]);
        let flags: BTreeSet<String> = ["q3.ready", "q12.ready", "q.ready"].iter().map(|s| s.to_string()).collect();
        assert_eq!(star_matches("q", ".ready", &flags), ["3", "12"]);
    }
}
