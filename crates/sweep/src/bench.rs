//! `schedlab bench`: how fast the simulator is — pure measurement, no
//! assertions. Each benchmark runs `reps` times and the median is printed,
//! with the fastest and slowest run as the machine's noise.
//!
//! * `asym_min` (seed 000, 30 s on the 7950X model) and `rt-pi-push` (seed
//!   003's probe): full simulations that keep the trace, as `schedlab
//!   sweep` does. "events" are trace events (tracepoints, decision events
//!   and workload markers); "steps" are engine events.
//! * "run+report" rows: `schedlab run`'s own path, the simulation streaming
//!   into the report's collectors on a second thread (process CPU time).
//! * `schbench-spr` (seed 004): streamed, with the kernel's tracepoints off
//!   and only the workload's markers folded into schbench's metrics (its
//!   trace would not fit in memory: ~60 M events per simulated second).
//! * `cgroups`: 64 threads in each of 16 and 64 cgroups on 224 CPUs, 2 ms
//!   kept: the model's memory as the entities and runqueues grow.
//! * `diff`: schbench-spr 100 ms under two settings, `schedlab diff`'s
//!   path (both simulations streamed into its collector; process CPU time).
//! * the seed-000 sweep (`itmt-delay-dequeue.toml`, 4 settings × 5 rounds ×
//!   30 s) on a pool of `jobs` threads (`schedlab bench`'s default: 2).
//!
//! Time is reported as wall time (median, fastest, slowest) and as the
//! benchmark thread's CPU time (`/proc/thread-self/schedstat`; the sweep,
//! diff and run+report rows: the process's user + system time), and the
//! rates are per CPU second, so
//! the figures mean something on a shared, loaded machine.
//!
//! The table's first line names the binary (`schedlab --version`: commit
//! and build profile), the CPUs it may use and the load average as it
//! starts. The first row is a reference: a bare discrete-event loop of the same
//! shape as the simulator's (a binary heap of timers, a tiny state update
//! and a 32-byte record kept per event, [`reference_loop`]). Every row
//! prints its CPU nanoseconds per trace event and their ratio to the
//! reference's, measured in the same run, so that a figure taken on a
//! shared, noisy machine can be judged against what the hardware allows.
//!
//! Peak RSS is the process's high-water mark (`VmHWM`, what getrusage's
//! `ru_maxrss` reports), reset before each benchmark through
//! `/proc/self/clear_refs` (after `malloc_trim`) so each row shows its own
//! peak. Memory an earlier row left resident would still count (the
//! threads of the pipelined rows leave ~28 MiB that trimming does not
//! return: the cgroups rows read 21 / 36 MiB alone and 49 / 65 MiB after
//! the others), so `schedlab bench` runs each of [`BLOCKS`] in a process of
//! its own unless `--only` picks rows to run in one.

use schedlab_analysis::SchbenchCollector;
use schedlab_report::ReportCollector;
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, simulate_pipelined, simulate_streaming, SimOptions, TraceObserver};
use schedlab_topology::InputError;
use schedlab_trace::{Pid, TaskTable};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::{assemble, run_jobs, skeleton, Sweep, SweepError};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Repetitions of each benchmark (the median is printed).
    pub reps: u32,
    /// Directory holding scenarios/.
    pub root: PathBuf,
    /// Simulated duration of the schbench run.
    pub schbench_duration: u64,
    /// Threads for the seed-000 sweep.
    pub jobs: usize,
    /// Only the benchmarks whose name contains this.
    pub only: Option<String>,
    /// The reference loop's CPU ns per event, measured earlier in the same
    /// `schedlab bench` (by the parent of the block's process); `None`:
    /// measure it here.
    pub reference_ns: Option<f64>,
    /// The binary measured, as `schedlab --version` names it (version,
    /// commit, build profile): the table's first line.
    pub build: String,
}

/// A benchmark that could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A bundled scenario or sweep file (or a generated one) did not load.
    #[error("{0}")]
    Input(#[from] InputError),
    #[error("{0}")]
    Sim(#[from] schedlab_sim::SimError),
    #[error("{0}")]
    Sweep(#[from] SweepError),
    #[error("cannot start the sweep's worker threads: {0}")]
    Pool(#[from] rayon::ThreadPoolBuildError),
    #[error("the topology preset `{0}` is missing from this build")]
    NoPreset(&'static str),
    #[error(
        "--only {only:?} names no benchmark block; the blocks are {} (a part of a name picks every block containing it)",
        BLOCKS.join(", ")
    )]
    NoBlock { only: String },
    #[error("bench: cannot find this program: {0}")]
    Exe(std::io::Error),
    #[error("bench: the `{block}` benchmarks: {source}")]
    Child { block: &'static str, source: schedlab_helper::HelperError },
    #[error("bench: reading the `{block}` benchmarks: {source}")]
    Read { block: &'static str, source: std::io::Error },
    #[error("bench: the `{block}` benchmarks failed ({status}); their error is above")]
    Failed { block: &'static str, status: std::process::ExitStatus },
}

type Result<T> = std::result::Result<T, BenchError>;

/// One repetition's figures.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    wall_s: f64,
    /// CPU time the benchmark consumed (the machine may be shared: this is
    /// the figure to compare with the targets).
    cpu_s: f64,
    simulated_s: f64,
    events: u64,
    steps: u64,
    peak_rss_kib: u64,
    rps: f64,
}

/// Events of one pass of the reference loop (64 MiB of records).
pub const REFERENCE_EVENTS: u64 = 1 << 21;

/// Timers pending in the reference loop's heap (the simulator has a few
/// per CPU: asym_min's 32 CPUs keep ~50-100 pending).
const REFERENCE_TIMERS: usize = 64;

/// What the reference loop keeps per event: 32 bytes.
#[derive(Clone, Copy, Debug)]
struct Record {
    ts: u64,
    timer: u32,
    kind: u32,
    state: u64,
    draw: u64,
}

/// The reference: a bare discrete-event loop of the simulator's shape. Each
/// event pops the earliest of [`REFERENCE_TIMERS`] timers from a binary
/// heap, updates a word of state, appends a 32-byte record to a vector
/// that keeps them all (as a kept trace does) and re-arms the timer a
/// pseudo-random delay later. Returns a checksum so nothing is optimised
/// away.
pub fn reference_loop(events: u64) -> u64 {
    let mut heap = BinaryHeap::with_capacity(REFERENCE_TIMERS);
    for i in 0..REFERENCE_TIMERS {
        heap.push(Reverse((i as u64 * 1_000, i as u32)));
    }
    let mut state = [0u64; REFERENCE_TIMERS];
    let mut records: Vec<Record> = Vec::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..events {
        let Some(Reverse((ts, timer))) = heap.pop() else { break };
        // xorshift64: the "model's" decision for this event.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let s = &mut state[timer as usize];
        *s = s.wrapping_add(ts) ^ x;
        records.push(Record { ts, timer, kind: (x & 7) as u32, state: *s, draw: x });
        heap.push(Reverse((ts + 1 + x % 100_000, timer)));
    }
    let records = std::hint::black_box(records);
    records.iter().fold(0u64, |a, r| a.wrapping_add(r.state ^ r.ts ^ r.draw ^ u64::from(r.kind ^ r.timer)))
}

/// One repetition of the reference loop (repeated until it has taken 50 ms
/// of CPU, as [`full`] does).
fn reference() -> Sample {
    reset_peak_rss();
    let (t, c) = (Instant::now(), thread_cpu_s());
    let mut runs = 0u32;
    while runs == 0 || (thread_cpu_s() - c < 0.05 && runs < 1_000) {
        std::hint::black_box(reference_loop(REFERENCE_EVENTS));
        runs += 1;
    }
    let n = f64::from(runs);
    Sample {
        wall_s: t.elapsed().as_secs_f64() / n,
        cpu_s: (thread_cpu_s() - c) / n,
        events: REFERENCE_EVENTS,
        steps: REFERENCE_EVENTS,
        peak_rss_kib: peak_rss_kib(),
        ..Default::default()
    }
}

/// The reference loop measured `reps` times: its row, and its median CPU
/// ns per event (what the other rows' ratios divide by).
pub fn reference_row(reps: u32) -> (String, f64) {
    let samples: Vec<Sample> = (0..reps.max(1)).map(|_| reference()).collect();
    let ns = median(samples.iter().map(ns_per_event).collect());
    (row(REFERENCE_ROW, &samples, ns), ns)
}

/// The reference row's name.
pub const REFERENCE_ROW: &str = "reference loop (heap)";

fn ns_per_event(s: &Sample) -> f64 {
    if s.events == 0 {
        0.0
    } else {
        s.cpu_s * 1e9 / s.events as f64
    }
}

/// The benchmark blocks, in the order they run; `--only` picks by substring.
pub const BLOCKS: [&str; 8] =
    ["asym_min", "rt-pi-push", "schbench", "diff", "post-after-wait", "cgroups", "invariants", "sweep"];

/// The table's header line.
pub fn header() -> String {
    format!(
        "{:<26} {:>8} {:>8} {:>8} {:>8} {:>10} {:>12} {:>10} {:>8} {:>7} {:>9}",
        "benchmark",
        "wall ms",
        "min",
        "max",
        "cpu ms",
        "sim/cpu",
        "events/cpu-s",
        "steps/cpu-s",
        "ns/event",
        "x ref",
        "peak MiB"
    )
}

/// The table's first line: what was measured and on what, so that a
/// pasted table says it — the binary (`args.build`), the CPUs this
/// process may use and the load average as the benchmarks start (the
/// targets assume a quiet machine).
pub fn preamble(args: &BenchOptions) -> String {
    let cpus = match std::thread::available_parallelism().map(usize::from) {
        Ok(1) => "1 CPU".to_string(),
        Ok(n) => format!("{n} CPUs"),
        Err(_) => "an unknown number of CPUs".to_string(),
    };
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| {
            let f: Vec<&str> = l.split_whitespace().take(3).collect();
            (f.len() == 3).then(|| format!(", load average {} {} {}", f[0], f[1], f[2]))
        })
        .unwrap_or_default();
    format!("{} on {cpus}{load}", args.build)
}

/// The line naming the targets the rows are measured against.
pub fn targets() -> String {
    "targets (issue 39, quiet machine, --reps 3): asym_min run+report >= 350x real time (sim/cpu); \
     schbench-spr 1 s >= 0.5x; asym_min >= 12 M trace events per CPU-second; seed-000 sweep <= 1.0 s wall \
     with 2 threads; a 60 s schbench-spr run in <= 1 GiB"
        .to_string()
}

/// Run the benchmarks `args` selects, handing `line` the table one line
/// at a time (the preamble, a header, the reference row, a row per benchmark as it
/// finishes, the targets).
pub fn bench(args: &BenchOptions, line: &mut dyn FnMut(String)) -> Result<()> {
    line(preamble(args));
    line(header());
    let (reference, ns) = reference_row(args.reps);
    line(reference);
    bench_rows(&BenchOptions { reference_ns: Some(ns), ..args.clone() }, line)?;
    line(String::new());
    line(targets());
    Ok(())
}

/// [`bench`] with every block of [`BLOCKS`] in a child process of its
/// own (`schedlab bench --rows-only --only BLOCK`), so that a row's peak
/// memory is its own: the pipelined rows leave memory resident that the
/// allocator does not return, which every later row in the same process
/// would count. The reference row is measured here, and each child divides
/// its rows by it.
pub fn bench_isolated(args: &BenchOptions, line: &mut dyn FnMut(String)) -> Result<()> {
    line(preamble(args));
    line(header());
    let (reference, ns) = reference_row(args.reps);
    line(reference);
    for block in BLOCKS {
        block_in_child(args, block, ns, line)?;
    }
    line(String::new());
    line(targets());
    Ok(())
}

/// How long one block's child may run, per repetition: the slowest block
/// (the seed-000 sweep) takes well under a minute a repetition here.
const BLOCK_LIMIT_PER_REP: std::time::Duration = std::time::Duration::from_secs(20 * 60);

/// Run `block` in a child `schedlab bench`, passing its rows on as they come.
fn block_in_child(
    args: &BenchOptions,
    block: &'static str,
    reference_ns: f64,
    line: &mut dyn FnMut(String),
) -> Result<()> {
    use std::io::BufRead;
    use std::sync::mpsc::RecvTimeoutError;
    let exe = std::env::current_exe().map_err(BenchError::Exe)?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["bench", "--rows-only", "--only", block, "--reps", &args.reps.to_string()])
        .arg("--root")
        .arg(&args.root)
        .args(["--schbench-duration", &format!("{}ns", args.schbench_duration), "--jobs", &args.jobs.to_string()])
        .args(["--reference-ns", &reference_ns.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped());
    let failed = |source| BenchError::Child { block, source };
    let mut child = schedlab_helper::Helper::spawn(&mut cmd, BLOCK_LIMIT_PER_REP * args.reps).map_err(failed)?;
    // Lines come through a thread, so that the time limit holds while the
    // child prints nothing.
    let out = child.stdout().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines() {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(l) => line(l.map_err(|source| BenchError::Read { block, source })?),
            // Past its limit the child is stopped, which closes its pipe.
            Err(RecvTimeoutError::Timeout) => {
                child.try_wait().map_err(failed)?;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = child.wait().map_err(failed)?;
    if !status.success() {
        return Err(BenchError::Failed { block, status });
    }
    Ok(())
}

/// The rows alone, for the blocks `args.only` selects.
pub fn bench_rows(args: &BenchOptions, line: &mut dyn FnMut(String)) -> Result<()> {
    let scenario = |name: &str| Scenario::load(&args.root.join("scenarios").join(name));
    if let Some(o) = args.only.as_deref().filter(|o| !BLOCKS.iter().any(|b| b.contains(o))) {
        return Err(BenchError::NoBlock { only: o.to_string() });
    }
    let ref_ns = match args.reference_ns {
        Some(ns) => ns,
        None => reference_row(args.reps).1,
    };
    let row = |name: &str, samples: &[Sample]| row(name, samples, ref_ns);
    let wanted = |name: &str| args.only.as_deref().is_none_or(|o| name.contains(o));
    if wanted("asym_min") {
        let s = scenario("asym_min.toml")?;
        let opts =
            SimOptions { duration_ns: Some(30_000_000_000), check_invariants: Some(false), ..Default::default() };
        line(row("asym_min 30s (7950X)", &repeat(args.reps, || full(&s, &opts))?));
        line(row("asym_min 30s run+report", &repeat(args.reps, || run_and_report(&s, &opts))?));
    }
    if wanted("rt-pi-push") {
        let s = scenario("rt-pi-push.toml")?;
        let opts = SimOptions { check_invariants: Some(false), ..Default::default() };
        line(row("rt-pi-push (qemu-4)", &repeat(args.reps, || full(&s, &opts))?));
    }
    if wanted("schbench") {
        let s = scenario("schbench-spr.toml")?;
        let opts = SimOptions {
            duration_ns: Some(args.schbench_duration),
            check_invariants: Some(false),
            ..Default::default()
        };
        let samples = repeat(args.reps, || streamed_schbench(&s, &opts))?;
        let label = format!("schbench-spr {}s (SPR)", args.schbench_duration as f64 / 1e9);
        line(row(&label, &samples));
        let mut rps: Vec<f64> = samples.iter().map(|x| x.rps).collect();
        rps.sort_by(f64::total_cmp);
        line(format!("{:<26} average rps {:.2} (median run)", "", rps[rps.len() / 2]));
        // `schedlab run`'s path, its report computed as the run streams.
        let short = SimOptions { duration_ns: Some(100_000_000), ..opts.clone() };
        line(row("schbench-spr 0.1s run+report", &repeat(args.reps, || run_and_report(&s, &short))?));
    }
    if wanted("diff") {
        // `schedlab diff`'s path: both runs at once, compared as they
        // stream. Memory: what the comparison keeps, not the runs' traces
        // (the two traces of 100 ms took 966 MB when they were kept).
        let s = scenario("schbench-spr.toml")?;
        let a = SimOptions { duration_ns: Some(100_000_000), check_invariants: Some(false), ..Default::default() };
        let b = SimOptions { features: vec!["TTWU_QUEUE_DELAYED".into()], ..a.clone() };
        line(row("schbench-spr 0.1s diff", &repeat(args.reps, || diff_pair(&s, &a, &b))?));
    }
    if wanted("post-after-wait") {
        // Issue 21's quadratic analysis: a wait -> post / signal -> poll
        // loop's report took ~4x per doubling of the duration. Linear is a
        // CPU-time ratio of 4 between the 4 s and the 1 s run.
        let s = Scenario::from_toml_str_on(
            "post-after-wait.toml",
            POST_AFTER_WAIT,
            &args.root,
            schedlab_topology::Topology::preset("qemu-4").ok_or(BenchError::NoPreset("qemu-4"))?,
        )?;
        let ratio = run_report_ratio(args, &s, "post-after-wait", [1, 4], ref_ns, line)?;
        line(format!(
            "{:<26} 4 s / 1 s CPU time {ratio:.2} (linear: 4; the quadratic report of issue 21 gave ~16)",
            ""
        ));
        // Issue 40's: two workers post right after their wait returns, a
        // waker polls for both (2.0 s for 16 s against 0.24 s for 4 s, 8.5x).
        let s = Scenario::from_toml_str("xposts.toml", XPOSTS, &args.root)?;
        let ratio = run_report_ratio(args, &s, "xposts", [4, 16], ref_ns, line)?;
        line(format!("{:<26} 16 s / 4 s CPU time {ratio:.2} (linear: 4; target: <= 5)", ""));
    }
    if wanted("cgroups") {
        // The model's size: 64 threads in each of 16 and 64 cgroups on 224
        // CPUs (a group has a cfs_rq per CPU). Timeline nodes are one per
        // entity; with a per-runqueue arena, `schedlab run --duration 2ms`
        // of the 64-group file peaked at 1034 MB (84 MB with the shared one).
        let mut peak = Vec::new();
        for groups in [16usize, 64] {
            let s = Scenario::from_toml_str("cgroups.toml", &many_groups(groups, 64), &args.root)?;
            let opts = SimOptions { duration_ns: Some(2_000_000), check_invariants: Some(false), ..Default::default() };
            let samples = repeat(args.reps, || full(&s, &opts))?;
            line(row(&format!("cgroups {groups}x64 2ms (SPR)"), &samples));
            let mut p: Vec<u64> = samples.iter().map(|x| x.peak_rss_kib).collect();
            p.sort_unstable();
            peak.push(p[p.len() / 2] as f64);
        }
        line(format!(
            "{:<26} 64 / 16 groups peak RSS {:.2} (4x the threads and groups: at most ~4 while memory is per entity)",
            "",
            peak[1] / peak[0].max(1.0)
        ));
    }
    if wanted("invariants") {
        // `--check-invariants` (issue 40: at most ~3x a run without): the
        // scoped check after every entry plus the full recount every
        // (tasks + CPUs)-th. The fork chain grows to ~2 000 RT tasks queued
        // on two CPUs (a full recount after every entry took 167 s for its
        // 0.56 s); asym_min and schbench-spr are the seeds' own scenarios.
        let fork_chain = Scenario::from_toml_str("fork-chain.toml", FORK_CHAIN, &args.root)?;
        let cases = [
            ("fork chain 5ms", fork_chain, 5_000_000),
            ("asym_min 3s", scenario("asym_min.toml")?, 3_000_000_000),
            ("schbench-spr 20ms", scenario("schbench-spr.toml")?, 20_000_000),
        ];
        for (label, s, ns) in cases {
            let off = SimOptions { duration_ns: Some(ns), check_invariants: Some(false), ..Default::default() };
            let on = SimOptions {
                check_invariants: Some(true),
                invariant_budget: Some(schedlab_sim::INVARIANT_BUDGET),
                ..off.clone()
            };
            let plain = repeat(args.reps, || full(&s, &off))?;
            let checked = repeat(args.reps, || full(&s, &on))?;
            line(row(label, &plain));
            line(row(&format!("{label} checked"), &checked));
            line(format!(
                "{:<26} checked / plain CPU time {:.2} (target: <= 3)",
                "",
                median(checked.iter().map(|x| x.cpu_s).collect())
                    / median(plain.iter().map(|x| x.cpu_s).collect()).max(1e-9)
            ));
        }
    }
    if wanted("sweep") {
        let path = args.root.join("scenarios/sweeps/itmt-delay-dequeue.toml");
        let samples = repeat(args.reps, || sweep(&path, args.jobs))?;
        line(row(&format!("seed-000 sweep ({} threads)", args.jobs), &samples));
    }
    Ok(())
}

/// Issue 40's post-after-wait workload: each worker posts, waits for its
/// eventfd and posts again; the waker polls for any post and signals all.
const XPOSTS: &str = "name = \"xposts\"\ntopology = \"smt-2x2\"\nduration = \"2s\"\n\
    [[thread]]\nname = \"worker\"\ninstances = 2\naffinity = \"0-1\"\n\
    program = [{ run = \"1ms\" }, { post = \"done{i}\" }, { wait = \"efd{i}\" }, { post = \"done{i}\" }]\n\
    [[thread]]\nname = \"waker\"\naffinity = \"2\"\n\
    program = [{ poll = \"done{*}\", after = \"10us\" }, { signal = \"efd{*}\" }]\n";

/// Issue 40's fork chain: every child forks another and sleeps, so
/// thousands of RT tasks are queued within 5 ms.
const FORK_CHAIN: &str = "topology = \"smt-2x2\"\nduration = \"5ms\"\n\
    [[thread]]\nname = \"parent\"\naffinity = \"0\"\n\
    program = [{ run = \"100us\" }, { fork = \"child\" }, { sleep = \"200us\" }]\n\
    [[thread]]\nname = \"child\"\ninstances = 0\naffinity = \"2-3\"\npolicy = \"fifo\"\nloop = 2\n\
    program = [{ fork = \"child\" }, { sleep = \"20us\" }]\n";

/// `schedlab run`'s path at two durations (seconds), a row each: the
/// ratio of their median CPU times.
fn run_report_ratio(
    args: &BenchOptions,
    s: &Scenario,
    label: &str,
    secs: [u64; 2],
    ref_ns: f64,
    line: &mut dyn FnMut(String),
) -> Result<f64> {
    let mut cpu = Vec::new();
    for secs in secs {
        let opts =
            SimOptions { duration_ns: Some(secs * 1_000_000_000), check_invariants: Some(false), ..Default::default() };
        let samples = repeat(args.reps, || run_and_report(s, &opts))?;
        line(row(&format!("{label} {secs}s run+report"), &samples, ref_ns));
        cpu.push(median(samples.iter().map(|x| x.cpu_s).collect()));
    }
    Ok(cpu[1] / cpu[0].max(1e-9))
}

/// Issue 21's post-after-wait loop: the waiter posts right after each
/// wakeup, the waker polls for it and signals again.
const POST_AFTER_WAIT: &str = "name = \"post-after-wait\"\ntopology = \"qemu-4\"\nduration = \"1s\"\n\
    [[thread]]\nname = \"waiter\"\nprogram = [{ wait = \"go\" }, { post = \"done\" }]\n\
    [[thread]]\nname = \"waker\"\nprogram = [{ run = \"20us\" }, { signal = \"go\" }, { poll = \"done\" }]\n";

/// `groups` cgroups of `threads` threads each, every thread running 50 us
/// and sleeping 100 us, on sapphire-rapids-2s.
fn many_groups(groups: usize, threads: usize) -> String {
    let mut text = String::from("name = \"cgroups\"\ntopology = \"sapphire-rapids-2s\"\nduration = \"2ms\"\n");
    for g in 0..groups {
        text += &format!("[cgroup.g{g}]\nweight = 100\n");
    }
    for g in 0..groups {
        text += &format!(
            "[[thread]]\nname = \"t{g}\"\ninstances = {threads}\ncgroup = \"g{g}\"\nloop = true\n\
             program = [{{ run = \"50us\" }}, {{ sleep = \"100us\" }}]\n"
        );
    }
    text
}

/// `schedlab run`'s path (without `--plot`): the simulation on this thread
/// streaming into the report's collectors (metrics, work conservation, stall
/// attribution, measures, schbench's figures) on a second one, as the
/// command does on a machine with two CPUs. CPU time is the process's.
fn run_and_report(s: &Scenario, opts: &SimOptions) -> Result<Sample> {
    struct Collect<'a> {
        scenario: &'a Scenario,
        allowed: BTreeMap<Pid, Vec<u32>>,
        collector: Option<ReportCollector>,
        events: u64,
    }
    impl TraceObserver for Collect<'_> {
        fn start(&mut self, table: &TaskTable) {
            let nr_cpus = self.scenario.topology.nr_cpus() as u32;
            let grace = schedlab_analysis::DEFAULT_GRACE_NS;
            self.collector = Some(ReportCollector::new(self.scenario, table, nr_cpus, self.allowed.clone(), grace));
        }
        fn task_new(&mut self, pid: Pid, info: &schedlab_trace::TaskInfo) {
            if let Some(c) = self.collector.as_mut() {
                c.task_forked(self.scenario, pid, info);
            }
        }
        fn event(&mut self, e: &schedlab_trace::Event) {
            self.events += 1;
            if let Some(c) = self.collector.as_mut() {
                c.observe(e);
            }
        }
    }
    reset_peak_rss();
    let (t, c) = (Instant::now(), process_cpu_s());
    let allowed = s
        .threads
        .iter()
        .enumerate()
        .map(|(i, th)| (schedlab_sim::FIRST_PID + i as i32, th.affinity.to_u32_vec()))
        .collect();
    let mut obs = Collect { scenario: s, allowed, collector: None, events: 0 };
    let r = simulate_pipelined(s, opts, &mut obs, true)?;
    let report = obs.collector.take().map(|c| c.finish(r.end_ns));
    std::hint::black_box(&report);
    Ok(Sample {
        wall_s: t.elapsed().as_secs_f64(),
        cpu_s: process_cpu_s() - c,
        simulated_s: r.end_ns as f64 / 1e9,
        events: obs.events,
        steps: r.steps,
        peak_rss_kib: peak_rss_kib(),
        rps: 0.0,
    })
}

fn repeat(reps: u32, mut one: impl FnMut() -> Result<Sample>) -> Result<Vec<Sample>> {
    (0..reps).map(|_| one()).collect()
}

/// A whole simulation that keeps its trace; a run shorter than 50 ms of CPU
/// is repeated until it is not (the timers' resolution) and averaged.
fn full(s: &Scenario, opts: &SimOptions) -> Result<Sample> {
    reset_peak_rss();
    let (t, c) = (Instant::now(), thread_cpu_s());
    let mut runs = 0u32;
    let (events, steps, end_ns) = loop {
        let r = simulate(s, opts)?;
        runs += 1;
        if thread_cpu_s() - c >= 0.05 || runs >= 10_000 {
            break (r.trace.events.len() as u64, r.steps, r.end_ns);
        }
    };
    let n = f64::from(runs);
    Ok(Sample {
        wall_s: t.elapsed().as_secs_f64() / n,
        cpu_s: (thread_cpu_s() - c) / n,
        simulated_s: end_ns as f64 / 1e9,
        events,
        steps,
        peak_rss_kib: peak_rss_kib(),
        rps: 0.0,
    })
}

/// schbench streamed into its collector, kernel tracepoints off.
fn streamed_schbench(s: &Scenario, opts: &SimOptions) -> Result<Sample> {
    reset_peak_rss();
    let (t, c) = (Instant::now(), thread_cpu_s());
    let table =
        schedlab_trace::TaskTable { objects: s.objects.iter().map(|o| o.name.clone()).collect(), ..Default::default() };
    let mut collector = SchbenchCollector::new(&table, None);
    let mut events = 0u64;
    let r = simulate_streaming(
        s,
        opts,
        &mut |e| {
            events += 1;
            collector.observe(e);
        },
        false,
    )?;
    let report = collector.finish(r.end_ns);
    Ok(Sample {
        wall_s: t.elapsed().as_secs_f64(),
        cpu_s: thread_cpu_s() - c,
        simulated_s: r.end_ns as f64 / 1e9,
        events,
        steps: r.steps,
        peak_rss_kib: peak_rss_kib(),
        rps: report.average_rps,
    })
}

/// Two settings of `s` simulated side by side into `schedlab diff`'s
/// collector; CPU time is the process's (three threads).
fn diff_pair(s: &Scenario, a: &SimOptions, b: &SimOptions) -> Result<Sample> {
    reset_peak_rss();
    let (t, c) = (Instant::now(), process_cpu_s());
    let mut collector = schedlab_report::DiffCollector::new(s, &schedlab_analysis::DiffOptions::default());
    let [ra, rb] = crate::simulate_diff((s, a), (s, b), &mut collector);
    let (ra, rb) = (ra?, rb?);
    let run = |r: &schedlab_sim::SimResult, setting: &'static str| schedlab_report::DiffRun {
        setting,
        kernel: String::new(),
        itmt: false,
        energy_aware: true,
        features_changed: Vec::new(),
        end_ns: r.end_ns,
        notes: Vec::new(),
    };
    let report = collector.finish(s, ra.seed, &|_| true, run(&ra, "a"), run(&rb, "b"));
    Ok(Sample {
        wall_s: t.elapsed().as_secs_f64(),
        cpu_s: process_cpu_s() - c,
        simulated_s: (ra.end_ns + rb.end_ns) as f64 / 1e9,
        events: (report.a.events + report.b.events) as u64,
        steps: ra.steps + rb.steps,
        peak_rss_kib: peak_rss_kib(),
        rps: 0.0,
    })
}

/// `run_sweep()`, its jobs' trace events counted on the way.
fn sweep(path: &Path, jobs: usize) -> Result<Sample> {
    let sweep = Sweep::load(path)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    reset_peak_rss();
    let (t, c) = (Instant::now(), process_cpu_s());
    let outputs = pool.install(|| run_jobs(&sweep, &|_| true, &|_| {}))?;
    let events = outputs.iter().map(|o| o.events).sum();
    let result = assemble(&skeleton(&sweep), outputs);
    let (wall_s, cpu_s) = (t.elapsed().as_secs_f64(), process_cpu_s() - c);
    let simulated_ns: u64 = result.settings.iter().flat_map(|s| s.runs.iter()).map(|r| r.simulated_ns).sum();
    Ok(Sample {
        wall_s,
        cpu_s,
        simulated_s: simulated_ns as f64 / 1e9,
        events,
        peak_rss_kib: peak_rss_kib(),
        ..Default::default()
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One benchmark's line of the table; `ref_ns` is the reference loop's
/// CPU ns per event, which the row's own is divided by.
fn row(name: &str, samples: &[Sample], ref_ns: f64) -> String {
    let walls: Vec<f64> = samples.iter().map(|s| s.wall_s * 1e3).collect();
    let wall = median(walls.clone());
    let min = walls.iter().copied().fold(f64::INFINITY, f64::min);
    let max = walls.iter().copied().fold(0.0, f64::max);
    let cpu = median(samples.iter().map(|s| s.cpu_s * 1e3).collect());
    let ratio = median(samples.iter().map(|s| s.simulated_s / s.cpu_s.max(1e-9)).collect());
    let per_cpu_s = |f: fn(&Sample) -> u64| median(samples.iter().map(|s| f(s) as f64 / s.cpu_s.max(1e-9)).collect());
    let events = per_cpu_s(|s| s.events);
    let steps = per_cpu_s(|s| s.steps);
    let rss = samples.iter().map(|s| s.peak_rss_kib).max().unwrap_or(0) as f64 / 1024.0;
    let ns = median(samples.iter().map(ns_per_event).collect());
    let fmt_rate = |r: f64| if r == 0.0 { "-".to_string() } else { format!("{:.2} M", r / 1e6) };
    let fmt_ratio = |r: f64| {
        if r == 0.0 {
            "-".to_string()
        } else if r >= 10.0 {
            format!("{r:.0}x")
        } else {
            format!("{r:.3}x")
        }
    };
    let (ns_col, vs_ref) = if ns == 0.0 || ref_ns <= 0.0 {
        ("-".to_string(), "-".to_string())
    } else {
        (format!("{ns:.1}"), format!("{:.1}x", ns / ref_ns))
    };
    format!(
        "{name:<26} {wall:>8.1} {min:>8.1} {max:>8.1} {cpu:>8.1} {:>10} {:>12} {:>10} {ns_col:>8} {vs_ref:>7} {rss:>9.1}",
        fmt_ratio(ratio),
        fmt_rate(events),
        fmt_rate(steps)
    )
}

/// CPU time of the calling thread (`/proc/thread-self/schedstat`, ns on CPU).
fn thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// CPU time of the whole process, user + system, every thread's
/// (`getrusage(RUSAGE_SELF)`, microseconds).
fn process_cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// Reset the process's peak RSS (Linux ≥ 4.0: writing 5 to clear_refs) to
/// what it holds now, after handing the allocator's free memory back: the
/// threads of a pipelined row leave arenas of freed memory resident, which
/// would otherwise count in every later row's peak.
fn reset_peak_rss() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak RSS in KiB (`VmHWM`; 0 where /proc is not available).
fn peak_rss_kib() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return 0 };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
