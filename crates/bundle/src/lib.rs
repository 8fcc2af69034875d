//! The repository's `scenarios/` carried inside the binary.
//!
//! Every file keeps its repository path (`scenarios/asym_min.toml`), so a
//! bundled scenario's relative references (`../topologies/kvm-2.toml`, a
//! sweep's `../asym_min.toml`) resolve inside the bundle as they do in a
//! checkout. A file on disk always wins: in a checkout, or with a file of
//! the same path in the current directory, nothing changes. Outside one,
//! [`get`] answers for a path that does not exist, and [`find`] turns a
//! bare name (`asym_min`, `rt-pi-push`) into its bundled path.

use std::path::{Component, Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/files.rs"));

/// What a name stands for: scenarios and sweeps share names
/// (`rt-pi-push` is both), so the caller says which it wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Scenario,
    Sweep,
}

/// `path` without `.` and with each `..` taking the component before it,
/// as a relative repository path; `None` for an absolute path or one that
/// climbs above its start.
fn normalize(path: &Path) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(s) => parts.push(s.to_str()?),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// The bundled text of the repository file `path` (relative, as a checkout
/// would have it: `scenarios/fidelity/../topologies/kvm-2.toml` is
/// `scenarios/topologies/kvm-2.toml`).
pub fn get(path: &Path) -> Option<&'static str> {
    let key = normalize(path)?;
    FILES.iter().find(|(p, _)| *p == key).map(|(_, text)| *text)
}

/// The bundled path a command-line argument stands for, when it is not a
/// file on disk: the argument itself if it is a bundled path, else a bare
/// name looked up where that kind lives (`asym_min` is
/// `scenarios/asym_min.toml`, then `scenarios/cgroups/`, then
/// `scenarios/fidelity/`; a sweep `scenarios/sweeps/`). `None` when the
/// argument is on disk or names nothing bundled.
pub fn find(arg: &Path, kind: Kind) -> Option<PathBuf> {
    if arg.as_os_str() == "-" || std::fs::symlink_metadata(arg).is_ok() {
        return None;
    }
    if get(arg).is_some() {
        return Some(arg.to_path_buf());
    }
    let name = arg.to_str()?.strip_suffix(".toml").unwrap_or(arg.to_str()?);
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        // `fidelity/asym_min`, `cgroups/autogroup`: as `schedlab scenarios` names them.
        let root = if kind == Kind::Sweep { "scenarios/sweeps" } else { "scenarios" };
        let path = format!("{root}/{name}.toml");
        return (get(Path::new(&path)).is_some() && !path.starts_with("scenarios/topologies/")).then(|| path.into());
    }
    let dirs: &[&str] = match kind {
        Kind::Scenario => &["scenarios", "scenarios/cgroups", "scenarios/fidelity"],
        Kind::Sweep => &["scenarios/sweeps"],
    };
    dirs.iter().map(|d| format!("{d}/{name}.toml")).find(|p| get(Path::new(p)).is_some()).map(PathBuf::from)
}

/// One bundled file: its path, short name, kind and one line saying what
/// it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: &'static str,
    /// What [`find`] takes: the path under `scenarios/` (or
    /// `scenarios/sweeps/`) without `.toml`: `asym_min`, `fidelity/asym_min`.
    pub name: String,
    pub kind: Kind,
    pub description: String,
}

/// Every bundled scenario and sweep, in path order (topology files, which
/// scenarios reference by path, are left out).
pub fn list() -> Vec<Entry> {
    FILES
        .iter()
        .filter_map(|(path, text)| {
            let kind = if path.starts_with("scenarios/sweeps/") {
                Kind::Sweep
            } else if path.starts_with("scenarios/topologies/") {
                return None;
            } else {
                Kind::Scenario
            };
            let root = if kind == Kind::Sweep { "scenarios/sweeps/" } else { "scenarios/" };
            let name = path.strip_prefix(root)?.strip_suffix(".toml")?.to_string();
            Some(Entry { path, name, kind, description: description(text) })
        })
        .collect()
}

/// The bundled scenario or sweep `name` (`schedlab scenarios --show`): a
/// scenario first, never a topology file.
pub fn show(name: &str) -> Option<&'static str> {
    let name = Path::new(name);
    let path = find(name, Kind::Scenario).or_else(|| find(name, Kind::Sweep));
    path.filter(|p| !p.starts_with("scenarios/topologies")).as_deref().and_then(get)
}

/// The list `schedlab scenarios` prints: the scenarios, then the sweeps,
/// each name with its description.
pub fn catalogue() -> String {
    let all = list();
    let width = all.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (kind, title) in [(Kind::Scenario, "scenarios"), (Kind::Sweep, "sweeps")] {
        out.push_str(&format!("{title} (schedlab {} NAME):\n", if kind == Kind::Sweep { "sweep" } else { "run" }));
        for e in all.iter().filter(|e| e.kind == kind) {
            out.push_str(&format!("  {:width$}  {}\n", e.name, e.description));
        }
        out.push('\n');
    }
    out.push_str("A file of the same path on disk wins over the bundled one; --show NAME prints one to copy.\n");
    out
}

/// The top-level `description = "..."` line's text; for a file without one
/// (sweep files have no such key), the first sentence of its header
/// comment, without the `name: ` it starts with. Read by line, not by a
/// TOML parser: a description is one basic string on one line in every
/// bundled file.
fn description(text: &str) -> String {
    for line in text.lines() {
        if line.starts_with('[') {
            break;
        }
        if let Some(rest) = line.strip_prefix("description") {
            let value = rest.trim_start().strip_prefix('=').map(str::trim).unwrap_or("");
            let inner = value.strip_prefix('"').and_then(|v| v.rsplit_once('"')).map_or("", |(s, _)| s);
            return inner.replace("\\\"", "\"");
        }
    }
    let header: Vec<&str> =
        text.lines().map_while(|l| l.strip_prefix('#')).map(str::trim).take_while(|l| !l.is_empty()).collect();
    let joined = header.join(" ");
    let body = match joined.split_once(": ") {
        Some((name, rest)) if !name.contains(' ') => rest,
        _ => joined.as_str(),
    };
    let sentence = body.split_once(". ").map_or(body, |(first, _)| first);
    let sentence = sentence.trim_end_matches(['.', ':']);
    if sentence.chars().count() > 120 {
        format!("{}...", sentence.chars().take(117).collect::<String>())
    } else {
        sentence.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_references_resolve_inside_the_bundle() {
        assert!(get(Path::new("scenarios/asym_min.toml")).is_some());
        assert!(get(Path::new("./scenarios/fidelity/../topologies/kvm-2.toml")).is_some());
        assert_eq!(get(Path::new("scenarios/sweeps/../asym_min.toml")), get(Path::new("scenarios/asym_min.toml")));
        assert!(get(Path::new("/scenarios/asym_min.toml")).is_none(), "absolute paths are the disk's");
        assert!(get(Path::new("../scenarios/asym_min.toml")).is_none());
        assert!(get(Path::new("scenarios/no-such.toml")).is_none());
    }

    #[test]
    fn names_find_their_kind() {
        // Run from a directory without a scenarios/ folder, so nothing is on disk.
        let here = std::env::current_dir().unwrap();
        assert!(!here.join("rt-pi-push").exists());
        assert_eq!(find(Path::new("rt-pi-push"), Kind::Scenario), Some(PathBuf::from("scenarios/rt-pi-push.toml")));
        assert_eq!(find(Path::new("rt-pi-push"), Kind::Sweep), Some(PathBuf::from("scenarios/sweeps/rt-pi-push.toml")));
        assert_eq!(
            find(Path::new("groups-1-vs-4"), Kind::Scenario),
            Some(PathBuf::from("scenarios/cgroups/groups-1-vs-4.toml"))
        );
        assert_eq!(find(Path::new("asym_min.toml"), Kind::Scenario), Some(PathBuf::from("scenarios/asym_min.toml")));
        assert_eq!(find(Path::new("no-such-thing"), Kind::Scenario), None);
        assert_eq!(find(Path::new("asym_min"), Kind::Sweep), None);
        assert_eq!(
            find(Path::new("fidelity/asym_min"), Kind::Scenario),
            Some(PathBuf::from("scenarios/fidelity/asym_min.toml"))
        );
        assert_eq!(find(Path::new("topologies/kvm-2"), Kind::Scenario), None, "a topology is no scenario");
    }

    #[test]
    fn every_bundled_scenario_and_sweep_says_what_it_is() {
        let all = list();
        assert!(all.len() >= 20, "{}", all.len());
        for e in &all {
            assert!(!e.description.is_empty(), "{}: no one-line `description = \"...\"`", e.path);
        }
        assert!(all.iter().any(|e| e.name == "itmt-delay-dequeue" && e.kind == Kind::Sweep));
        // Every listed name finds its own file, and no two share a name within a kind.
        for e in &all {
            assert_eq!(find(Path::new(&e.name), e.kind).as_deref(), Some(Path::new(e.path)), "{}", e.name);
            assert_eq!(all.iter().filter(|o| o.name == e.name && o.kind == e.kind).count(), 1, "{}", e.name);
        }
    }
}
