//! The memory budget: a run or an input that would outgrow it stops early
//! with an error that says which limit, how far the run got, what fits and
//! how to raise it; runs within it are untouched.

mod common;
use common::{err, ok};

#[test]
fn a_run_past_the_budget_stops_early_and_says_what_fits() {
    // `--trace` keeps the whole trace: an hour of asym_min-2cpu is ~110 M
    // events; 1 MiB holds 16 k of them (debug builds check the model's
    // invariants every step: the run has to stop early to be quick).
    let out = std::env::temp_dir().join(format!("schedlab-mem-{}.txt", std::process::id()));
    let out = out.to_str().unwrap();
    let e =
        err(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "3600s", "--max-memory", "1MiB", "--trace", out]);
    assert!(e.contains("memory budget") && e.contains("past 1 MiB (--max-memory 1 MiB)"), "{e}");
    assert!(e.contains("of 3600.000 s simulated"), "{e}");
    let at: f64 = e
        .split(" at ")
        .nth(1)
        .and_then(|r| r.split(" s of").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{e}"));
    let fits = e.split("--duration ").nth(1).and_then(|r| r.split(" fits").next()).unwrap_or_else(|| panic!("{e}"));
    let fits_s = match fits.strip_suffix("ms") {
        Some(ms) => ms.parse::<f64>().unwrap() / 1e3,
        None => fits.strip_suffix('s').and_then(|s| s.parse::<f64>().ok()).unwrap_or_else(|| panic!("{e}")),
    };
    assert!(at > 0.0 && at < 3600.0, "it stopped early: at {at} s\n{e}");
    assert!(
        fits_s <= at && fits_s >= at * 0.5,
        "what fits is the budget's share of the run so far: {fits_s} s of {at} s\n{e}"
    );
    assert!(e.contains("raise the budget (--max-memory SIZE"), "{e}");
}

#[test]
fn a_run_without_trace_files_streams_and_is_not_held_to_the_trace_budget() {
    let s = ok(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "10s", "--max-memory", "1MiB"]);
    assert!(s.contains("10.000 s simulated") && s.contains("worker"), "{s}");
}

#[test]
fn a_kept_trace_within_the_budget_is_the_same_run_and_the_streamed_one_too() {
    // `--trace` keeps the trace, so the budget applies; 200 ms of
    // asym_min-2cpu is ~6 k events, far inside 16 MiB.
    let dir = std::env::temp_dir();
    let file = |n: &str| dir.join(format!("schedlab-mem-{n}-{}.txt", std::process::id())).display().to_string();
    let (a, b) = (file("a"), file("b"));
    let base = ["run", "scenarios/asym_min-2cpu.toml", "--duration", "200ms"];
    let free = ok(&[&base[..], &["--trace", &a]].concat());
    let tight = ok(&[&base[..], &["--trace", &b, "--max-memory", "16MiB"]].concat());
    let streamed = ok(&base);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "the same trace");
    // Only the wall-time line and the trace file's own line may differ.
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("run ") && !l.starts_with("trace ") && !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&free), strip(&tight));
    assert_eq!(strip(&free), strip(&streamed), "the streamed report is the kept trace's");
    let _ = (std::fs::remove_file(&a), std::fs::remove_file(&b));
}

#[test]
fn a_sweep_shares_the_budget_among_its_jobs() {
    let e = err(&[
        "sweep",
        "scenarios/sweeps/itmt-delay-dequeue.toml",
        // The `defaults` row keeps its trace for the stall breakdown; the
        // other rows stream and are not limited.
        "--rounds",
        "1",
        "--duration",
        "5s",
        "--jobs",
        "2",
        "--max-memory",
        "2MiB",
    ]);
    assert!(e.contains("past 1 MiB (--max-memory 2 MiB, shared by 2 jobs)"), "{e}");
}

#[test]
fn an_endless_or_huge_input_is_refused_before_it_is_read_whole() {
    let e = err(&["analyze", "/dev/zero", "--max-memory", "8MiB"]);
    assert!(e.starts_with("schedlab: error: /dev/zero: more than 4 MiB of input"), "{e}");
    assert!(e.contains("memory budget of 8 MiB (--max-memory 8 MiB)"), "{e}");
}

#[test]
fn a_size_below_a_mebibyte_or_not_a_size_is_a_usage_error() {
    let e = err(&["run", "scenarios/asym_min.toml", "--max-memory", "1k"]);
    assert!(e.contains("`1k` is under 1 MiB"), "{e}");
    let e = err(&["run", "scenarios/asym_min.toml", "--max-memory", "lots"]);
    assert!(e.contains("`lots` is not a size") && e.contains("expected e.g. 512MiB"), "{e}");
}
