//! The memory budget: a run or an input that would outgrow it stops early
//! with an error that says which limit, how far the run got, what fits and
//! how to raise it; runs within it are untouched.

mod common;
use common::{err, ok};

#[test]
fn a_run_past_the_budget_stops_early_and_says_what_fits() {
    // `--plot` keeps the whole trace: an hour of asym_min-2cpu is ~110 M
    // events; 1 MiB holds 16 k of them (debug builds check the model's
    // invariants every step: the run has to stop early to be quick).
    let dir = common::tmp_dir("mem-plot");
    let out = dir.path().to_str().unwrap();
    let e = err(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "3600s", "--max-memory", "1MiB", "--plot", out]);
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
fn a_streamed_run_is_held_to_the_budget_as_its_resident_memory() {
    // Without trace files to keep, the budget bounds what the process
    // holds (issue 40): a budget below what the program itself takes is
    // refused on the first step, naming the limit and how to raise it ...
    let e = err(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "10s", "--max-memory", "1MiB"]);
    assert!(e.contains("memory budget: at ") && e.contains("of 10.000 s simulated"), "{e}");
    assert!(e.contains("past 1 MiB (--max-memory 1 MiB)"), "{e}");
    assert!(e.contains("raise the budget (--max-memory SIZE"), "{e}");
    // ... and one it fits in is the same run.
    let s = ok(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "10s", "--max-memory", "64MiB"]);
    assert!(s.contains("10.000 s simulated") && s.contains("worker"), "{s}");
}

/// Runs schedlab with `args`, which must succeed: its peak resident
/// memory (the child's `ru_maxrss`), in bytes, and its standard output.
// The child is reaped by wait4 (for its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn peak_rss(args: &[&str]) -> (u64, String) {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .current_dir(common::root())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: waits for our own child, which std has not reaped (its handle
    // was consumed for stdout only); `usage` is a valid rusage.
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{args:?} failed: {status}");
    (usage.ru_maxrss as u64 * 1024, out)
}

#[test]
fn run_memory_does_not_grow_with_the_duration() {
    // asym_min-2cpu stalls ~880 times a simulated second: keeping every
    // stall and its story took 230 MB at 100 s and 2.2 GB at 1 000 s
    // (issue 40). The report keeps the first KEPT_STALLS and counts the rest.
    let (short, a) = peak_rss(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "3s", "--json"]);
    let (long, b) = peak_rss(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "30s", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert!(doc["metrics"]["stalls_not_kept"].as_u64().unwrap() > 10_000, "{}", &b[..b.len().min(2000)]);
    assert!(a.len() > 1000);
    eprintln!("peak RSS: {} kiB (3 s), {} kiB (30 s)", short >> 10, long >> 10);
    assert!(long * 2 < short * 3, "peak RSS grew from {} to {} kiB for 10x the duration", short >> 10, long >> 10);
}

/// The bundled scenarios `schedlab scenarios` lists.
fn bundled_scenarios() -> Vec<String> {
    ok(&["scenarios"])
        .lines()
        .skip_while(|l| !l.starts_with("scenarios"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The seed 004 machines (100+ CPUs): minutes at these durations, so in
/// [`the_seed_004_machines_keep_their_peak_memory_over_ten_times_the_duration`].
const LARGE_MACHINES: [&str; 3] = ["schbench-skl", "schbench-spr", "schbench-turin-newidle"];

/// Peak RSS of `run NAME` at `short` and at ten times it, in kiB, and
/// whether the longer one stayed within 1.5x.
///
/// A child's `ru_maxrss` starts from this test process's own peak: std
/// spawns with vfork, and exec records the shared address space's high
/// water mark as the child's (`setmax_mm_hiwater_rss()`). So a run whose
/// peak stays under that floor reports the floor, which grows as other
/// tests here read big outputs (2026-12-07: cyclictest's 100 s run read
/// 24212 kiB, the floor, against 11076 kiB at 10 s). The floor is measured
/// with a trivial child just before and after the long run; a long run at
/// or under it is within bounds whatever the short one read.
fn peak_over_ten_times(name: &str, short_ms: u64) -> (u64, u64, bool) {
    let run = |ms: u64| peak_rss(&["run", name, "--duration", &format!("{ms}ms")]).0 >> 10;
    let a = run(short_ms);
    let floor = || peak_rss(&["--version"]).0 >> 10;
    let before = floor();
    let b = run(10 * short_ms);
    (a, b, b <= before.max(floor()) || b * 2 < a * 3)
}

#[test]
fn every_bundled_scenario_keeps_its_peak_memory_over_ten_times_the_duration() {
    // Issue 40: what a run keeps is what its report prints (the first
    // KEPT_STALLS stories, counts, latency sketches that turn to buckets
    // past EXACT_SAMPLES_PER_RUN, a stall window of bounded length), so 10x
    // the duration stays within 1.5x the peak. Each pair starts past the
    // warm-up of its stall window (asym_min's grows for its first seconds).
    // Measured 2026-12-06 (release, this 2-vCPU host): 1.00-1.47x at these durations.
    let scenarios = bundled_scenarios();
    assert!(scenarios.len() >= 20 && scenarios.iter().any(|s| s == "asym_min"), "{scenarios:?}");
    let todo = std::sync::Mutex::new(scenarios.iter().filter(|s| !LARGE_MACHINES.contains(&s.as_str())));
    let grew = std::sync::Mutex::new(Vec::new());
    // Two at a time (CI has two CPUs; each child's peak is its own rusage).
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let Some(name) = todo.lock().unwrap().next() else { break };
                // High event rates (eventfd ping-pong, schbench on 2 CPUs): shorter.
                let short_ms = match name.as_str() {
                    "fidelity/pingpong-1cpu" => 1_000,
                    n if n.starts_with("fidelity/pingpong") || n.starts_with("fidelity/schbench") => 3_000,
                    _ => 10_000,
                };
                let (a, b, within) = peak_over_ten_times(name, short_ms);
                eprintln!("{name}: {a} kiB at {short_ms} ms, {b} kiB at ten times that");
                if !within {
                    grew.lock().unwrap().push(format!("{name}: {a} -> {b} kiB"));
                }
            });
        }
    });
    let grew = grew.into_inner().unwrap();
    assert!(grew.is_empty(), "peak RSS grew by 1.5x or more for 10x the duration: {grew:?}");
}

#[test]
#[ignore = "about a minute and a half in release: cargo test --release -p schedlab --test memory -- --ignored"]
fn the_seed_004_machines_keep_their_peak_memory_over_ten_times_the_duration() {
    // Measured 2026-12-06 (release): schbench-spr 80 -> 95 MB, turin-newidle
    // 120 -> 153 MB, skl 76 -> 101 MB from 200 ms to 2 s.
    for name in LARGE_MACHINES {
        let (a, b, within) = peak_over_ten_times(name, 200);
        eprintln!("{name}: {a} kiB at 200 ms, {b} kiB at 2 s");
        assert!(within, "{name}: peak RSS {a} -> {b} kiB for 10x the duration");
    }
}

#[test]
fn a_kept_trace_within_the_budget_is_the_same_run_and_the_streamed_one_too() {
    // `--plot` keeps the trace, so the budget applies; 200 ms of
    // asym_min-2cpu is ~6 k events, far inside 16 MiB. Without `--plot`
    // the trace files are written as the run streams: the same bytes.
    let dir = common::tmp_dir("mem-kept");
    let file = |n: &str| dir.path().join(n).display().to_string();
    let base = ["run", "scenarios/asym_min-2cpu.toml", "--duration", "200ms"];
    let files = |tag: &str| {
        let t = file(&format!("{tag}.txt"));
        let p = file(&format!("{tag}.pftrace"));
        vec!["--trace".to_string(), t, "--perfetto".to_string(), p]
    };
    let args = |extra: Vec<String>| -> Vec<String> { base.iter().map(|s| s.to_string()).chain(extra).collect() };
    let run = |a: Vec<String>| ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let free = run(args([files("free"), vec!["--plot".into(), file("plots-free")]].concat()));
    let tight = run(args(
        [files("tight"), vec!["--plot".into(), file("plots-tight"), "--max-memory".into(), "16MiB".into()]].concat(),
    ));
    // Streamed on two threads where the machine has two CPUs, and on one.
    let streamed = run(args(files("streamed")));
    let one_thread = run(args([files("one"), vec!["--one-thread".into()]].concat()));
    for ext in ["txt", "pftrace"] {
        let read = |tag: &str| std::fs::read(file(&format!("{tag}.{ext}"))).unwrap();
        assert_eq!(read("free"), read("tight"), "the same {ext} within the budget");
        assert_eq!(read("free"), read("streamed"), "the streamed {ext} is the kept trace's");
        assert_eq!(read("free"), read("one"), "the one-thread {ext} is the kept trace's");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".schedlab-trace-"))
        .collect();
    assert!(leftovers.is_empty(), "the streamed --trace left its temporary file: {leftovers:?}");
    // Only the wall-time line and the files' own lines may differ.
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !["run ", "trace ", "perfetto ", "plots "].iter().any(|p| l.starts_with(p)) && !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&free), strip(&tight));
    assert_eq!(strip(&free), strip(&streamed), "the streamed report is the kept trace's");
    assert_eq!(strip(&free), strip(&one_thread));
}

#[test]
fn a_streamed_trace_file_in_a_missing_directory_fails_before_the_run() {
    let e = err(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "3600s", "--trace", "/nonexistent-dir/t.txt"]);
    assert!(e.contains("--trace /nonexistent-dir/t.txt:"), "{e}");
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
    // A device is refused before it is read at all (issue 40), and so is
    // a pipe of NUL bytes (tests/analyze.rs); an endless pipe of text is
    // refused once it passes what the budget can hold.
    let e = err(&["analyze", "/dev/zero", "--max-memory", "8MiB"]);
    assert!(e.contains("/dev/zero: it is a device, not a regular file"), "{e}");
    let mut yes = std::process::Command::new("yes");
    yes.arg("          <idle>-0     [001] d..2.   100.000000: sched_switch: not a real line");
    let mut text =
        schedlab_helper::Helper::spawn(yes.stdout(std::process::Stdio::piped()), std::time::Duration::from_secs(120))
            .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["analyze", "-", "--max-memory", "8MiB"])
        .current_dir(common::root())
        .stdin(text.stdout().unwrap())
        .output()
        .unwrap();
    drop(text);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.starts_with("schedlab: error: -: more than 4 MiB of input"), "{e}");
    assert!(e.contains("memory budget of 8 MiB (--max-memory 8 MiB)"), "{e}");
}

#[test]
fn a_size_below_a_mebibyte_or_not_a_size_is_a_usage_error() {
    let e = err(&["run", "scenarios/asym_min.toml", "--max-memory", "1k"]);
    assert!(e.contains("`1k` is under 1 MiB"), "{e}");
    let e = err(&["run", "scenarios/asym_min.toml", "--max-memory", "lots"]);
    assert!(e.contains("`lots` is not a size") && e.contains("expected e.g. 512MiB"), "{e}");
}

/// A tracefs capture of a ping-pong pair with its markers, `cycles` round
/// trips (12 lines, ~1.4 kB each), written in a stream.
fn write_pingpong_trace(path: &std::path::Path, cycles: u64) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "# tracer: nop\n#\n#                                _-----=> irqs-off/BH-disabled").unwrap();
    let mut us = 1_000_000u64;
    let mut line = |out: &mut std::io::BufWriter<std::fs::File>, who: &str, cpu: u32, body: String| {
        us += 3;
        writeln!(out, "{who:>22} [{cpu:03}] d..2. {:>5}.{:06}: {body}", us / 1_000_000, us % 1_000_000).unwrap();
    };
    for _ in 0..cycles {
        for (a, b, ca, cb) in [(("ping", 100), ("pong", 101), 0u32, 1u32), (("pong", 101), ("ping", 100), 1, 0)] {
            let (an, ap) = a;
            let (bn, bp) = b;
            let (actx, bctx) = (format!("{an}-{ap}"), format!("{bn}-{bp}"));
            line(&mut out, &actx, ca, format!("tracing_mark_write: schedlab signal obj={bn}"));
            line(&mut out, &actx, ca, format!("sched_waking: comm={bn} pid={bp} prio=120 target_cpu={cb:03}"));
            line(&mut out, &actx, ca, format!("sched_wakeup: comm={bn} pid={bp} prio=120 target_cpu={cb:03}"));
            line(&mut out, "<idle>-0", cb, format!(
                "sched_switch: prev_comm=swapper/{cb} prev_pid=0 prev_prio=120 prev_state=R ==> next_comm={bn} next_pid={bp} next_prio=120"
            ));
            line(&mut out, &bctx, cb, format!("tracing_mark_write: schedlab wait_done obj={bn}"));
            line(&mut out, &actx, ca, format!(
                "sched_switch: prev_comm={an} prev_pid={ap} prev_prio=120 prev_state=S ==> next_comm=swapper/{ca} next_pid=0 next_prio=120"
            ));
        }
    }
    out.flush().unwrap();
}

/// `schedlab analyze FILE --json` must succeed; its peak resident memory
/// (the child's `ru_maxrss`), in bytes, and its handoff count.
fn analyze_peak_rss(file: &std::path::Path, extra: &[&str]) -> (u64, u64) {
    let args: Vec<&str> =
        ["analyze", file.to_str().unwrap(), "--json"].into_iter().chain(extra.iter().copied()).collect();
    let (rss, json) = peak_rss(&args);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let handoffs = doc["metrics"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["handoff_latency"]["count"].as_u64().unwrap())
        .sum();
    (rss, handoffs)
}

#[test]
fn analyze_memory_does_not_grow_with_the_trace_file() {
    // Holding the text and its events, 8x the cycles would add ~60 MB.
    let dir = common::tmp_dir("analyze-mem");
    let (small, large) = (dir.path().join("small.trace"), dir.path().join("large.trace"));
    write_pingpong_trace(&small, 3_000);
    write_pingpong_trace(&large, 24_000);
    let (rss_small, n_small) = analyze_peak_rss(&small, &[]);
    let (rss_large, n_large) = analyze_peak_rss(&large, &[]);
    assert_eq!((n_small, n_large), (6_000, 48_000), "every round trip is two handoffs");
    let grown = rss_large.saturating_sub(rss_small);
    eprintln!("peak RSS: {} kiB (small), {} kiB (8x)", rss_small >> 10, rss_large >> 10);
    assert!(
        grown < 12 << 20,
        "peak RSS grew {} MiB from {} to {} MiB of trace",
        grown >> 20,
        std::fs::metadata(&small).unwrap().len() >> 20,
        std::fs::metadata(&large).unwrap().len() >> 20
    );
    // `--perfetto` needs every event, so it reads the file whole: the
    // same figures, from the other reader, at a growing cost.
    let pf = dir.path().join("large.perfetto");
    let (rss_whole, n_whole) = analyze_peak_rss(&large, &["--perfetto", pf.to_str().unwrap()]);
    assert_eq!(n_whole, n_large);
    eprintln!("peak RSS reading it whole: {} kiB", rss_whole >> 10);
    assert!(
        rss_whole > rss_large + (grown.max(1 << 20)) * 2,
        "the whole-file reader should hold the trace: {rss_whole} vs {rss_large}"
    );
}

#[test]
fn a_streamed_analysis_is_held_to_the_budget_as_its_resident_memory() {
    let dir = common::tmp_dir("analyze-budget");
    let file = dir.path().join("t.trace");
    write_pingpong_trace(&file, 3_000);
    let f = file.to_str().unwrap();
    let e = err(&["analyze", f, "--max-memory", "1MiB"]);
    assert!(e.contains(&format!("memory budget: {f}: at 1.000")), "{e}");
    assert!(e.contains("past 1 MiB (--max-memory 1 MiB)") && e.contains("raise the budget (--max-memory SIZE"), "{e}");
    let s = ok(&["analyze", f, "--max-memory", "64MiB"]);
    assert!(s.contains("ping"), "{s}");
}

/// The issue-16 target: `analyze` of a >= 2 GB trace peaks under 1 GiB.
/// Writes 2.1 GB to the temp dir and reads it three times (minutes):
/// `cargo test --release -p schedlab --test memory -- --ignored --nocapture`.
#[test]
#[ignore]
fn analyze_of_a_2gb_trace_peaks_under_1gib() {
    let dir = common::tmp_dir("analyze-2g");
    let file = dir.path().join("big.trace");
    write_pingpong_trace(&file, 1_500_000);
    let bytes = std::fs::metadata(&file).unwrap().len();
    assert!(bytes >= 2_000_000_000, "{bytes} bytes");
    let t = std::time::Instant::now();
    let (rss, handoffs) = analyze_peak_rss(&file, &[]);
    println!(
        "analyze of {:.2} GB: {handoffs} handoffs, peak RSS {} MiB, {:.1} s",
        bytes as f64 / 1e9,
        rss >> 20,
        t.elapsed().as_secs_f64()
    );
    assert_eq!(handoffs, 3_000_000);
    assert!(rss < 1 << 30, "peak RSS {} MiB", rss >> 20);
}
