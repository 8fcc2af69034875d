//! Bad input: every error names file, line and column and says what was
//! expected. Each test pins the exact position and a message substring.

use schedlab_topology::{InputError, Topology};

/// A valid 2-core × 2-thread machine; line numbers below refer to it.
const BASE: &str = "\
hz = 1000
preempt = \"full\"

[layout]
cores_per_llc = 2
threads_per_core = 2
smt_numbering = \"adjacent\"
";
// Lines:            1..=7; text appended after BASE starts on line 8.

fn err(text: &str) -> InputError {
    match Topology::from_toml_str("bad.toml", text) {
        Ok(t) => panic!("accepted:\n{text}\n=> {t:?}"),
        Err(e) => e,
    }
}

#[track_caller]
fn check(text: &str, line: usize, col: usize, needle: &str) {
    let e = err(text);
    assert_eq!(e.path, "bad.toml");
    assert_eq!((e.line, e.col), (line, col), "wrong position for: {e}");
    assert!(e.message.contains(needle), "message {:?} lacks {needle:?}", e.message);
}

#[test]
fn base_is_valid() {
    let t = Topology::from_toml_str("bad.toml", BASE).unwrap();
    assert_eq!(t.nr_cpus(), 4);
}

#[test]
fn display_is_file_line_col_message() {
    let e = err(&BASE.replace("hz = 1000", "hz = 123"));
    assert_eq!(e.to_string(), "bad.toml:1:6: hz = 123 is not a CONFIG_HZ choice (expected 100, 250, 300 or 1000)");
}

#[test]
fn unknown_top_level_key() {
    check(&BASE.replace("preempt", "turbo = true\npreempt"), 2, 1, "unknown key `turbo`, expected one of `name`");
}

#[test]
fn unknown_key_in_layout_and_costs() {
    check(&format!("{BASE}sockets = 2\n"), 8, 1, "unknown key `sockets`, expected one of `packages`");
    check(&format!("{BASE}[costs]\nipi = \"2us\"\n"), 9, 1, "unknown key `ipi`");
    check(&format!("{BASE}[[cpus]]\nid = 0\nfreq = 3\n"), 10, 1, "unknown key `freq`");
    // Issue 40: the known key most likely meant.
    check(
        &format!("{BASE}[costs]\nipi_ns = \"2us\"\ncontext_swich_ns = 3\n"),
        10,
        1,
        "(did you mean `context_switch_ns`?)",
    );
}

#[test]
fn wrong_types() {
    check(&BASE.replace("hz = 1000", "hz = \"fast\""), 1, 6, "invalid type: string \"fast\", expected an integer");
    check(&BASE.replace("cores_per_llc = 2", "cores_per_llc = [2]"), 5, 17, "expected an integer");
    check(
        &BASE.replace("preempt = \"full\"", "preempt = \"rt\""),
        2,
        11,
        "expected one of `none`, `voluntary`, `full`, `lazy`",
    );
    check(&BASE.replace("\"adjacent\"", "\"zigzag\""), 7, 17, "expected `sibling-offset` or `adjacent`");
    check(&format!("itmt_enabled = \"yes\"\n{BASE}"), 1, 16, "expected a boolean");
}

#[test]
fn toml_syntax_error() {
    check(&format!("{BASE}[costs\n"), 8, 7, "");
}

#[test]
fn bad_hz() {
    check(&BASE.replace("hz = 1000", "hz = 123"), 1, 6, "not a CONFIG_HZ choice (expected 100, 250, 300 or 1000)");
    check(&BASE.replace("hz = 1000", "hz = -1"), 1, 6, "not a CONFIG_HZ choice");
    check(&BASE.replace("hz = 1000\n", ""), 1, 1, "missing key `hz`");
    check(&BASE.replace("preempt = \"full\"\n", ""), 1, 1, "missing key `preempt`");
}

#[test]
fn bad_capacity() {
    check(&format!("{BASE}[capacity]\n\"0-3\" = 0\n"), 9, 9, "capacity 0 is out of range (expected 1..=1024");
    check(&format!("{BASE}[capacity]\n\"0\" = 2048\n"), 9, 7, "capacity 2048 is out of range");
    check(&format!("{BASE}[capacity]\n\"0-3\" = 800\n"), 9, 1, "no CPU has capacity 1024");
    check(&format!("{BASE}[[cpus]]\nid = 2\ncapacity = -4\n"), 10, 12, "capacity -4 is out of range");
}

#[test]
fn sibling_prio_mismatch() {
    // CPUs 2 and 3 are siblings ("adjacent" numbering); line 10 is the culprit.
    check(
        &format!("{BASE}[asym_prio]\n\"0-2\" = 20\n\"3\" = 10\n"),
        10,
        1,
        "SMT siblings CPU 2 and CPU 3 have different asym_prio (20 and 10)",
    );
    // A [[cpus]] override breaking a sibling pair of a generated layout.
    check(&format!("{BASE}[[cpus]]\nid = 1\nasym_prio = 5\n"), 10, 13, "same ITMT priority since 6.5");
}

#[test]
fn cpulist_beyond_the_machine() {
    check(
        &format!("{BASE}[asym_prio]\n\"0-1\" = 2\n\"2-4\" = 1\n"),
        10,
        1,
        "cpulist `2-4` in [asym_prio] names CPU 4, but this machine has CPUs 0-3",
    );
    check(&format!("{BASE}[capacity]\n\"0-999\" = 1024\n"), 9, 1, "beyond the model's limit of 512 CPUs");
    check(
        &format!("{BASE}[asym_prio]\n\"3-1\" = 2\n"),
        9,
        1,
        "bad cpulist `3-1` in [asym_prio]: range `3-1` runs backwards",
    );
    check(
        &format!("{BASE}[asym_prio]\n\"0-3\" = 2\n\"1\" = 2\n"),
        10,
        1,
        "CPU 1 is given asym_prio by both `0-3` and `1`",
    );
}

#[test]
fn bad_durations() {
    check(&format!("{BASE}[costs]\nipi_ns = \"-2us\"\n"), 9, 10, "negative duration `-2us`");
    check(&format!("{BASE}[costs]\nipi_ns = -2000\n"), 9, 10, "negative duration -2000");
    check(&format!("{BASE}[costs]\nidle_exit_ns = \"2 weeks\"\n"), 9, 16, "unknown unit `weeks`");
    check(&format!("{BASE}[costs]\nidle_exit_ns = \"fast\"\n"), 9, 16, "expected a duration such as");
    check(&format!("{BASE}[jitter]\nipi_ns = 1.5\n"), 9, 10, "bare number 1.5 is not a duration");
    check(&format!("{BASE}[costs]\nmigration_cold_ns = \"1.5ns\"\n"), 9, 21, "not a whole number of nanoseconds");
    check(&format!("{BASE}[costs]\nipi_ns = \"2s\"\n"), 9, 10, "implausibly large");
}

#[test]
fn bad_cost_and_jitter_ranges() {
    check(
        &format!("{BASE}[costs]\nsmt_speed_pct = 0\n"),
        9,
        17,
        "smt_speed_pct = 0 is out of range (expected 1..=100)",
    );
    check(&format!("{BASE}[jitter]\nburst_pct = -1.0\n"), 9, 13, "burst_pct = -1 is out of range");
    check(&format!("{BASE}[jitter]\nburst_pct = inf\n"), 9, 13, "burst_pct = inf is out of range");
}

#[test]
fn bad_layout() {
    check(&BASE.replace("cores_per_llc = 2\n", ""), 4, 1, "[layout] has no `cores_per_llc`");
    check(
        &BASE.replace("cores_per_llc = 2", "cores_per_llc = 0"),
        5,
        17,
        "cores_per_llc = 0 is out of range (expected 1..=512)",
    );
    check(&BASE.replace("cores_per_llc = 2", "cores_per_llc = 300"), 4, 1, "more than 512 CPUs");
    check(
        &BASE.replace("cores_per_llc = 2", "cores_per_llc = 2\nllcs_per_package = 2\nnodes_per_package = 3"),
        7,
        21,
        "nodes_per_package = 3 does not divide llcs_per_package = 2",
    );
    check("hz = 1000\npreempt = \"none\"\n", 1, 1, "no CPUs: expected a [layout] table or [[cpus]] entries");
}

#[test]
fn bad_cpu_entries() {
    check(&format!("{BASE}[[cpus]]\nid = 4\n"), 9, 6, "CPU 4 does not exist: [layout] gives CPUs 0-3");
    check(
        &format!("{BASE}[[cpus]]\nid = 1\n[[cpus]]\nid = 1\n"),
        11,
        6,
        "CPU 1 has a second [[cpus]] entry (the first is at line 9",
    );
    check(
        &format!("{BASE}[[cpus]]\nid = 1\nllc = 1\n"),
        8,
        1,
        "CPU 0 and CPU 1 are SMT siblings (core 0) but are in LLC 0 and LLC 1",
    );
    check(&format!("{BASE}[[cpus]]\nid = 1\ncore = 7\n"), 8, 1, "core ids must be numbered 0..k without gaps");
    check(&format!("{BASE}[[cpus]]\nid = 1\nasym_prio = 3000000000\n"), 10, 13, "does not fit the kernel's int");

    let explicit =
        "hz = 1000\npreempt = \"none\"\n[[cpus]]\nid = 0\ncore = 0\nllc = 0\n[[cpus]]\nid = 2\ncore = 1\nllc = 0\n";
    check(explicit, 7, 1, "there is no [[cpus]] entry for CPU 1");
    check("hz = 1000\npreempt = \"none\"\n[[cpus]]\nid = 0\nllc = 0\n", 3, 1, "CPU 0 has no `core`");
    check("hz = 1000\npreempt = \"none\"\n[[cpus]]\nid = 600\ncore = 0\nllc = 0\n", 4, 6, "CPU id 600 is out of range");
    check(
        "hz = 1000\npreempt = \"none\"\n[[cpus]]\nid = 0\ncore = 0\nllc = 0\n[[cpus]]\nid = 1\ncore = 1\nllc = 0\npackage = 1\n",
        7,
        1,
        "share LLC 0 but are in package 0 and package 1",
    );
    check(
        &format!("{BASE}[[cpus]]\nid = 1\nasym_prio = 1\n[asym_prio]\n\"1\" = 1\n"),
        12,
        1,
        "CPU 1 already has its asym_prio set in its [[cpus]] entry at line 10",
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    check(&format!("description = \"µµµ\"\n{BASE}").replace("hz = 1000", "hz = 7"), 2, 6, "CONFIG_HZ");
    check(&format!("name = \"µ\" ; x = 1\n{BASE}"), 1, 12, "");
}

/// `[hwp_highest_perf]` and `[core_type]`: every CPU once, siblings alike,
/// no hand-set priorities or capacities beside them.
#[test]
fn hybrid_tables() {
    let ok = format!("{BASE}[hwp_highest_perf]\n\"0-1\" = 70\n\"2-3\" = 40\n");
    assert_eq!(Topology::from_toml_str("bad.toml", &ok).unwrap().cpus[2].asym_prio, 40);
    // Lines 8 and on.
    check(&format!("{BASE}[hwp_highest_perf]\n\"0-2\" = 70\n"), 8, 1, "[hwp_highest_perf] gives no value for CPU 3");
    check(
        &format!("{BASE}[hwp_highest_perf]\n\"0-3\" = 256\n"),
        9,
        9,
        "hwp_highest_perf 256 is out of range (expected 1..=255",
    );
    check(
        &format!("{BASE}[hwp_highest_perf]\n\"0-1\" = 70\n\"1-3\" = 40\n"),
        10,
        1,
        "CPU 1 is given a value by both `0-1` and `1-3` in [hwp_highest_perf]",
    );
    check(
        &format!("{BASE}[hwp_highest_perf]\n\"0,2\" = 70\n\"1,3\" = 40\n"),
        10,
        1,
        "SMT siblings CPU 0 and CPU 1 have different hwp_highest_perf (70 and 40)",
    );
    check(&format!("{BASE}[hwp_highest_perf]\n\"0-4\" = 70\n"), 9, 1, "names CPU 4, but this machine has CPUs 0-3");
    check(
        &format!("{BASE}[asym_prio]\n\"0-3\" = 5\n[hwp_highest_perf]\n\"0-3\" = 70\n"),
        9,
        1,
        "asym_prio is given while [hwp_highest_perf] is present",
    );
    check(&format!("{BASE}[core_type]\n\"0-3\" = \"core\"\n"), 8, 1, "[core_type] needs [hwp_highest_perf]");
    let perf = "[hwp_highest_perf]\n\"0-1\" = 70\n\"2-3\" = 40\n";
    check(
        &format!("{BASE}{perf}[core_type]\n\"0-1\" = \"big\"\n\"2-3\" = \"atom\"\n"),
        12,
        9,
        "core type `big` is not one",
    );
    check(&format!("{BASE}{perf}[core_type]\n\"0-3\" = \"core\"\n"), 11, 1, "[core_type] has no `atom` CPU");
    check(
        &format!("{BASE}{perf}[core_type]\n\"0,2\" = \"core\"\n\"1,3\" = \"atom\"\n"),
        9,
        1,
        "SMT siblings CPU 0 and CPU 1 have different core types",
    );
    check(
        &format!("{BASE}[capacity]\n\"0-1\" = 1024\n\"2-3\" = 600\n{perf}[core_type]\n\"0-1\" = \"core\"\n\"2-3\" = \"atom\"\n"),
        9,
        1,
        "capacity is given on a hybrid part ([core_type])",
    );
}
