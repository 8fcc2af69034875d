//! The fuzzing harness: one function per input kind, each taking any bytes.
//! An input the tool refuses is fine (that is what a located error is
//! for); a panic, an abort, a hang or a model invariant failure is a bug,
//! and the fuzzer keeps the input that caused it.
//!
//! AFL++ drives these through `fuzz/` (its own workspace, built with
//! `cargo afl`: `scripts/fuzz.sh`); `tests/corpus.rs` replays every kept
//! input (`fuzz/corpus/<target>/`, `fuzz/crashes/<target>/`) in the normal
//! test suite, so a fixed crash stays fixed.

use std::path::{Path, PathBuf};

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimError, SimOptions};
use schedlab_topology::Topology;

/// A harness: any bytes in, a panic only on a bug.
pub type Harness = fn(&[u8]);

/// The harnesses, by the name of their corpus directory.
pub const TARGETS: &[(&str, Harness)] = &[
    ("scenario", scenario),
    ("topology", topology),
    ("sweep", sweep),
    ("ftrace", ftrace),
    ("perfetto", perfetto),
    ("perf-script", perf_script),
];

/// Where a scenario's relative paths (a topology file, a sweep's
/// scenario) resolve: the repository's `scenarios/`, as for the bundled
/// files the corpus starts from.
fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// Simulated time of a fuzzed scenario's run: enough for every thread to
/// start and the first wakeups, balancing and ticks, short enough that an
/// execution stays in the milliseconds.
const SIM_NS: u64 = 2_000_000;

/// Threads plus CPUs up to which a fuzzed scenario runs the whole
/// [`SIM_NS`] with the invariants checked after every kernel entry. A check
/// recounts every task and runqueue, and the entries per millisecond grow
/// with the threads too, so checking each costs about (threads + CPUs)^2
/// per simulated millisecond: 224 CPUs with 576 threads took 3.4 s for
/// 2 ms (2026-12-04, before the stride), past AFL's 2 s hang limit, and
/// 16 k threads over a minute just to start.
const FULL_SIM_SIZE: u64 = 192;

/// The model size (tasks + CPUs) up to which every kernel entry is
/// checked; past it a check comes every size/CHECKED_SIZE-th entry, so a
/// check costs about CHECKED_SIZE per entry however many threads the
/// scenario starts or forks (a fork chain growing to 16 k RT threads in
/// 2 ms took 55 s with every entry checked, 3.3 s at 192, 1.2 s at 48 and 0.8 s at 24 in the AFL build, 2026-12-04).
const CHECKED_SIZE: u64 = 24;

/// How long a fuzzed scenario of `size` threads plus CPUs is simulated:
/// [`SIM_NS`], cut to SIM_NS x FULL_SIM_SIZE/size beyond that size. With
/// the invariants checked every size/[`CHECKED_SIZE`]-th entry past that
/// (`invariant_budget`, which follows forks as they come), a large input
/// costs about what a small one does and still starts every thread under
/// the checks.
pub fn fuzz_sim_ns(size: u64) -> u64 {
    if size <= FULL_SIM_SIZE {
        return SIM_NS;
    }
    (SIM_NS as u128 * FULL_SIM_SIZE as u128 / size as u128).max(1) as u64
}

/// A scenario file; when it parses, 2 ms of it (less for a large one,
/// [`fuzz_sim_ns`]) run with the invariants checked after every kernel
/// entry (past [`CHECKED_SIZE`] tasks and CPUs, every size/CHECKED_SIZE-th
/// and at the end).
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = scenarios_dir();
    let Ok(s) = Scenario::from_toml_str("fuzz.toml", text, &dir) else { return };
    let sim_ns = fuzz_sim_ns((s.threads.len() + s.topology.nr_cpus()) as u64);
    let opts = SimOptions {
        duration_ns: Some(s.duration_ns.map_or(sim_ns, |d| d.min(sim_ns))),
        invariant_budget: Some(CHECKED_SIZE),
        check_invariants: Some(true),
        ..Default::default()
    };
    if let Err(e @ (SimError::Invariant { .. } | SimError::Model(_))) = simulate(&s, &opts) {
        panic!("the model failed: {e}\n{text}");
    }
}

/// A topology file.
pub fn topology(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(t) = Topology::from_toml_str("fuzz.toml", text) {
        // What every consumer asks of a topology.
        for cpu in 0..t.nr_cpus() {
            let _ = (t.llc_mask(cpu), t.smt_mask(cpu), t.node_mask(cpu), t.distance(0, cpu));
        }
    }
}

/// A sweep file (its scenario resolved in the repository's `scenarios/sweeps`).
pub fn sweep(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(s) = schedlab_sweep::Sweep::from_toml_str("fuzz.toml", text, &scenarios_dir().join("sweeps")) {
        let _ = (s.jobs(), s.rounds(), s.seeds().len());
    }
}

/// tracefs text (`trace`, `trace-cmd report`), then the switch repair and
/// the time-ordering every analysis starts with.
pub fn ftrace(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(mut t) = schedlab_trace::parse_ftrace("fuzz.trace", &text) {
        let _ = t.in_time_order().len();
        let _ = schedlab_trace::repair::repair_trace(&mut t);
    }
}

/// A Perfetto protobuf trace, converted to ftrace text as `analyze` does.
pub fn perfetto(data: &[u8]) {
    let mut out = Vec::new();
    let _ = schedlab_trace::perfetto::perfetto_to_text(data, &mut out);
}

/// What `analyze` does natively with a file before and after an outside
/// converter: the magic-number sniff of its first bytes, the same bytes
/// read as a perf.data header (its data section against the length) and
/// as `trace-cmd dump --flyrecord` text (a trace.dat's per-CPU extents),
/// and `perf script` output rewritten line by line into trace-cmd's layout
/// and parsed. (trace.dat is decoded by `trace-cmd report`, whose text is
/// the `ftrace` target's; perf.data by `perf script`, whose text is this
/// one's.)
pub fn perf_script(data: &[u8]) {
    let _ = schedlab_report::input::sniff(&data[..data.len().min(16)]);
    let _ = schedlab_report::input::perf_data_section(data, data.len() as u64);
    let text = String::from_utf8_lossy(data);
    let _ = schedlab_report::input::flyrecord_cpus(&text);
    let _ = schedlab_report::input::is_perf_script(&text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        out.push_str(&schedlab_report::input::perf_line(line).unwrap_or_else(|| line.to_string()));
    }
    let _ = schedlab_trace::parse_ftrace("fuzz.perf.txt", &out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_scenarios_run_shorter_in_proportion_to_their_size() {
        assert_eq!(fuzz_sim_ns(2), SIM_NS);
        assert_eq!(fuzz_sim_ns(FULL_SIM_SIZE), SIM_NS);
        assert_eq!(fuzz_sim_ns(2 * FULL_SIM_SIZE), SIM_NS / 2);
        let sizes = [193, 500, 1_000, 16_384 + 224, u64::MAX];
        assert!(sizes.windows(2).all(|w| fuzz_sim_ns(w[0]) >= fuzz_sim_ns(w[1])));
        assert_eq!(fuzz_sim_ns(u64::MAX), 1, "never zero, which would mean no end");
    }
}
