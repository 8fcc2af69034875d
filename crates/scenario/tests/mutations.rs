//! `from_toml_str` never panics: random byte edits, token insertions and
//! truncations of the bundled scenarios must give `Ok` or `Err`.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use schedlab_scenario::Scenario;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn bundled() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(scenarios_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    out
}

/// Tokens that reach deep into the checks when spliced in.
const TOKENS: &[&str] = &[
    "{*}",
    "{i}",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "=",
    ",",
    "\n",
    "#",
    "-1",
    "0",
    "99999999999999999999",
    "1e400",
    "\"0-511\"",
    "\"0-600\"",
    "\"-5ms\"",
    "\"0.00001ns\"",
    "\"1e30s\"",
    "lock = \"m\"",
    "unlock = \"m\"",
    "{ lock = \"m{*}\" }, ",
    "{ poll = \"done{*}\" }, ",
    "{ wait = \"x\" }, ",
    "{ post = \"x\" }, ",
    "\n[[thread]]\nname = \"z\"\nprogram = [{ lock = \"m\" }]\n",
    "\n[mutex.m]\npi = true\n",
    "instances = 1024\n",
    "policy = \"SCHED_FIFO\"\n",
    "priority = 0\n",
    "slice = \"0.1ms\"\n",
    "loop = 0\n",
    "start_cpu = 31\n",
    "é",
    "\u{0}",
    "'''",
    "\"\"\"",
];

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, u8),
    Replace(usize, u8),
    Token(usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1usize..8).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Insert(p, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Replace(p, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Edit::Token(p, t)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut b = text.as_bytes().to_vec();
    for e in edits {
        let at = |p: usize, len: usize| if len == 0 { 0 } else { p % (len + 1) };
        match *e {
            Edit::Delete(p, n) => {
                let s = at(p, b.len());
                let end = (s + n).min(b.len());
                b.drain(s..end);
            }
            Edit::Insert(p, byte) => {
                let s = at(p, b.len());
                b.insert(s, byte);
            }
            Edit::Replace(p, byte) => {
                if !b.is_empty() {
                    let s = p % b.len();
                    b[s] = byte;
                }
            }
            Edit::Token(p, t) => {
                let s = at(p, b.len());
                b.splice(s..s, TOKENS[t].bytes());
            }
            Edit::Truncate(p) => {
                let s = at(p, b.len());
                b.truncate(s);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Values that a `key = value` line may be given.
const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "19",
    "20",
    "-21",
    "99",
    "100",
    "1024",
    "1025",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "true",
    "false",
    "\"\"",
    "\"x\"",
    "\"0\"",
    "\"2\"",
    "\"4-7\"",
    "\"0-3\"",
    "\"40\"",
    "\"0-511\"",
    "[0, 1]",
    "[]",
    "[\"a\", \"b\"]",
    "\"1ms\"",
    "\"0us\"",
    "\"-1ms\"",
    "\"50us\"",
    "\"100ms\"",
    "\"1e9s\"",
    "\"18446744073709551615\"",
    "\"99999999999h\"",
    "\"SCHED_FIFO\"",
    "\"SCHED_DEADLINE\"",
    "\"idle\"",
    "\"done{*}\"",
    "\"efd{*}\"",
    "\"m{i}\"",
    "\"{*}{*}\"",
    "\"{\"",
    "\"ryzen-7950x\"",
    "\"qemu-4\"",
    "\"sapphire-rapids-2s\"",
    "\"../topologies/smt-2x2.toml\"",
    "\"/\"",
    "\"..\"",
    "{ a = 1 }",
    "[{ lock = \"m\" }, { lock = \"n\" }, { unlock = \"n\" }, { unlock = \"m\" }]",
    "[{ lock = \"n\" }, { lock = \"m\" }, { unlock = \"m\" }, { unlock = \"n\" }]",
    "[{ poll = \"done{*}\" }, { lock = \"m{*}\" }, { poll = \"done{*}\" }, { lock = \"m{*}\" }]",
    "[{ unlock = \"m\" }]",
    "[{ wait = \"efd0\" }]",
    "[{ post = \"efd0\" }]",
    "[{ yield = \"x\" }]",
];

#[derive(Clone, Debug)]
enum LineEdit {
    Delete(usize),
    Duplicate(usize, usize),
    SetValue(usize, usize),
}

fn line_edit() -> impl Strategy<Value = LineEdit> {
    prop_oneof![
        any::<usize>().prop_map(LineEdit::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| LineEdit::Duplicate(a, b)),
        (any::<usize>(), 0..VALUES.len()).prop_map(|(a, v)| LineEdit::SetValue(a, v)),
        (any::<usize>(), 0..VALUES.len()).prop_map(|(a, v)| LineEdit::SetValue(a, v)),
    ]
}

fn apply_lines(text: &str, edits: &[LineEdit]) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for e in edits {
        if lines.is_empty() {
            break;
        }
        let n = lines.len();
        match *e {
            LineEdit::Delete(i) => {
                lines.remove(i % n);
            }
            LineEdit::Duplicate(i, j) => {
                let l = lines[i % n].clone();
                lines.insert(j % (n + 1), l);
            }
            LineEdit::SetValue(i, v) => {
                // prefer lines with an assignment
                let i = (0..n).map(|k| (i + k) % n).find(|k| lines[*k].contains(" = ")).unwrap_or(i % n);
                if let Some((key, _)) = lines[i].split_once(" = ") {
                    lines[i] = format!("{key} = {}", VALUES[v]);
                }
            }
        }
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_scenarios_never_panic(which in any::<usize>(), edits in prop::collection::vec(edit(), 1..6)) {
        let files = bundled();
        let (path, text) = &files[which % files.len()];
        let mutated = apply(text, &edits);
        match Scenario::from_toml_str(path, &mutated, &scenarios_dir()) {
            Ok(s) => prop_assert!(!s.threads.is_empty()),
            Err(e) => {
                // positions stay inside the text
                let lines = mutated.split('\n').count();
                prop_assert!(e.line <= lines, "{e} beyond {lines} lines");
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    #[test]
    fn line_edited_scenarios_never_panic(which in any::<usize>(), edits in prop::collection::vec(line_edit(), 1..5)) {
        let files = bundled();
        let (path, text) = &files[which % files.len()];
        let mutated = apply_lines(text, &edits);
        if let Err(e) = Scenario::from_toml_str(path, &mutated, &scenarios_dir()) {
            let lines = mutated.split('\n').count();
            prop_assert!(e.line <= lines, "{e} beyond {lines} lines");
            prop_assert!(!e.message.is_empty());
        }
    }
}
