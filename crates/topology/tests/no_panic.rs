//! `Topology::from_toml_str` never panics, whatever the text: random
//! strings, mutated presets, and well-formed files with wild numbers.

use proptest::prelude::*;
use schedlab_topology::{parse_duration, Topology};

fn presets() -> Vec<&'static str> {
    Topology::preset_names().iter().map(|n| Topology::preset_text(n).unwrap()).collect()
}

/// Fragments that keep mutated text close to valid TOML so the mutations
/// reach the validator, not just the parser.
const SNIPPETS: &[&str] = &[
    "0",
    "1",
    "-1",
    "1024",
    "1025",
    "511",
    "512",
    "9223372036854775807",
    "-9223372036854775808",
    "1e9",
    "\"0-3\"",
    "\"0-511\"",
    "\"600\"",
    "\"3-1\"",
    "\"0-7:0\"",
    "\"\"",
    "\"2us\"",
    "\"-1ms\"",
    "\"99999999999s\"",
    "nan",
    "inf",
    "-inf",
    "true",
    "[]",
    "{}",
    "[[cpus]]\nid = 0\n",
    "[layout]\n",
    "[asym_prio]\n",
    "[capacity]\n",
    "\n",
    "=",
    "\"",
    "#",
    "µ",
    ".",
    "[",
    "]",
    "core = 3\n",
    "llc = 9\n",
    "threads_per_core = 64\n",
    "packages = 100000\n",
    "smt_numbering = \"adjacent\"\n",
    "\"0\" = 1\n",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, snippet: usize },
    Replace { at: usize, len: usize, snippet: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), any::<usize>()).prop_map(|(at, snippet)| Mutation::Insert { at, snippet }),
        (any::<usize>(), 0usize..8, any::<usize>()).prop_map(|(at, len, snippet)| Mutation::Replace {
            at,
            len,
            snippet
        }),
    ]
}

fn boundary(s: &str, mut i: usize) -> usize {
    i %= s.len() + 1;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, muts: &[Mutation]) -> String {
    let mut s = text.to_string();
    for m in muts {
        match *m {
            Mutation::Delete { at, len } => {
                let a = boundary(&s, at);
                let b = boundary(&s, a + len.min(s.len() - a));
                s.replace_range(a..b, "");
            }
            Mutation::Insert { at, snippet } => {
                let a = boundary(&s, at);
                s.insert_str(a, SNIPPETS[snippet % SNIPPETS.len()]);
            }
            Mutation::Replace { at, len, snippet } => {
                let a = boundary(&s, at);
                let b = boundary(&s, a + len.min(s.len() - a));
                s.replace_range(a..b, SNIPPETS[snippet % SNIPPETS.len()]);
            }
        }
    }
    s
}

fn num() -> impl Strategy<Value = i64> {
    prop_oneof![30 => 1i64..4, 2 => 0i64..5, 1 => -3i64..600, 1 => any::<i64>()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn random_text(text in "\\PC{0,300}") {
        let _ = Topology::from_toml_str("fuzz.toml", &text);
    }

    #[test]
    fn random_toml_like_text(text in "([a-z_\\[\\]\"=0-9 .,:\\-]{0,20}\n){0,15}") {
        let _ = Topology::from_toml_str("fuzz.toml", &text);
    }

    #[test]
    fn mutated_presets(which in 0usize..4, muts in prop::collection::vec(mutation(), 1..6)) {
        let text = apply(presets()[which], &muts);
        let _ = Topology::from_toml_str("fuzz.toml", &text);
    }

    #[test]
    fn wild_numbers(
        packages in num(), nodes in num(), llcs in num(), cores in num(), threads in num(),
        adjacent in any::<bool>(),
        lo in prop_oneof![0usize..8, 0usize..600], hi in prop_oneof![0usize..8, 0usize..600], prio in num(), cap in num(),
        id in num(), core in num(), llc in num(), node in num(),
        burst in prop_oneof![0.0f64..5.0, any::<f64>()], ipi in prop_oneof![0i64..10_000, num()],
    ) {
        let numbering = if adjacent { "adjacent" } else { "sibling-offset" };
        let text = format!(
            "hz = 1000\npreempt = \"full\"\n[layout]\npackages = {packages}\nnodes_per_package = {nodes}\n\
             llcs_per_package = {llcs}\ncores_per_llc = {cores}\nthreads_per_core = {threads}\n\
             smt_numbering = \"{numbering}\"\n[asym_prio]\n\"{lo}-{hi}\" = {prio}\n[capacity]\n\"{hi}\" = {cap}\n\
             [[cpus]]\nid = {id}\ncore = {core}\nllc = {llc}\nnode = {node}\n[jitter]\nburst_pct = {burst:?}\nipi_ns = {ipi}\n"
        );
        let _ = Topology::from_toml_str("fuzz.toml", &text);
        // Also without the [layout]: an explicit list.
        let explicit = text.replace("[layout]", "[ignored]").replace("[ignored]\n", "");
        let _ = Topology::from_toml_str("fuzz.toml", &explicit);
    }

    #[test]
    fn durations(text in "\\PC{0,12}|[-0-9._]{0,30} ?(ns|us|µs|ms|s|)") {
        let _ = parse_duration(&text);
    }
}

/// The mutation machinery really produces errors, not just valid files
/// (otherwise the properties above would prove little).
#[test]
fn mutations_reach_the_validator() {
    let text = apply(presets()[0], &[Mutation::Replace { at: 0, len: 0, snippet: 0 }]);
    assert!(Topology::from_toml_str("m.toml", &text).is_err());
    let bad = presets()[0].replace("cores_per_llc = 8", "cores_per_llc = 100000");
    assert!(Topology::from_toml_str("m.toml", &bad).unwrap_err().message.contains("out of range"));
}
