//! `schedlab run --trace-dat`: the file opens in `trace-cmd report` and
//! shows the same events as `--trace`'s ftrace text, event by event.

mod common;

use common::{ok, tmp_dir};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One event line, cut into what both texts must agree on.
#[derive(Debug, PartialEq, Eq)]
struct Line {
    comm: String,
    pid: i32,
    cpu: u32,
    /// `secs.usecs`, as printed.
    ts: String,
    name: String,
    payload: String,
}

/// Parse `comm-pid [cpu] [flags] secs.usecs: name: payload`, the ftrace
/// text layout and `trace-cmd report`'s. The normalisation is only this
/// cutting: column padding goes (the comm's right alignment, report's
/// padding of the event name to a column before the payload), and the
/// latency flags, which report prints only with `-l`, are left aside here
/// (see `flags_of`).
fn parse_line(line: &str) -> Option<Line> {
    // The timestamp is the first token ending in `:` that is digits.digits.
    let (at, ts) = line.match_indices(": ").find_map(|(at, _)| {
        let tok = line[..at].rsplit(' ').next()?;
        let (s, us) = tok.split_once('.')?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        (digits(s) && digits(us)).then_some((at, tok))
    })?;
    let head = &line[..at - ts.len()];
    let open = head.rfind('[')?;
    let close = open + head[open..].find(']')?;
    let cpu = head[open + 1..close].parse().ok()?;
    let (comm, pid) = head[..open].trim().rsplit_once('-')?;
    let (name, payload) = line[at + 2..].split_once(':')?;
    Some(Line {
        comm: comm.to_string(),
        pid: pid.parse().ok()?,
        cpu,
        ts: ts.to_string(),
        name: name.to_string(),
        payload: payload.trim_start().to_string(),
    })
}

/// The event lines of `text` (header lines dropped: `#` lines of the
/// ftrace text, report's `cpus=N`), per CPU in the order they appear.
///
/// Per CPU because that is the one order both files keep: `trace-cmd
/// report` merges the CPUs' buffers by timestamp and breaks ties by CPU
/// number, while the text lists the events of one instant in the order
/// the run emitted them, CPUs interleaved.
fn per_cpu(text: &str, what: &str) -> BTreeMap<u32, Vec<Line>> {
    let mut cpus: BTreeMap<u32, Vec<Line>> = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.starts_with("cpus=") || line.trim().is_empty() {
            continue;
        }
        let l = parse_line(line).unwrap_or_else(|| panic!("{what}: not an event line: {line:?}"));
        cpus.entry(l.cpu).or_default().push(l);
    }
    cpus
}

/// The latency flags of each event with `trace-cmd report -l`, per CPU:
/// `comm-pid  CPUflags  secs.usecs: ...` (comm cut to 8 there, so only the
/// CPU and the five flags are taken).
fn flags_of(text: &str) -> BTreeMap<u32, Vec<String>> {
    let mut cpus: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with("cpus=") && !l.trim().is_empty()) {
        // The token before the timestamp is the CPU number and the flags.
        let before_ts = line.split(": ").next().unwrap();
        let mut toks = before_ts.split_whitespace().rev();
        let _ts = toks.next();
        let cpu_flags = toks.next().unwrap();
        let (cpu, flags) = cpu_flags.split_at(cpu_flags.len() - 5);
        cpus.entry(cpu.parse().unwrap()).or_default().push(flags.to_string());
    }
    cpus
}

fn report(dat: &Path, extra: &[&str]) -> Option<String> {
    let out = match Command::new("trace-cmd").arg("report").args(extra).arg(dat).output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: trace-cmd report could not run ({e}); install trace-cmd for this test");
            return None;
        }
    };
    assert!(out.status.success(), "trace-cmd report {extra:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap())
}

/// Run `scenario` with `--trace` and `--trace-dat` and compare the two
/// files event by event; returns how many events were compared.
fn compare(scenario: &str, duration: &str, extra: &[&str], dir: &Path) -> Option<usize> {
    let (txt, dat) = (dir.join("t.txt"), dir.join("t.dat"));
    let mut args = vec![
        "run",
        scenario,
        "--duration",
        duration,
        "--trace",
        txt.to_str().unwrap(),
        "--trace-dat",
        dat.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ok(&args);
    same_events(scenario, &txt, &dat)
}

/// `trace-cmd report` of `dat` against the ftrace text `txt`, event by
/// event; `None` when trace-cmd is absent.
fn same_events(what: &str, txt: &Path, dat: &Path) -> Option<usize> {
    // -N: no plugins, so sched_switch and sched_wakeup print their format's
    // text rather than the sched plugin's compact `comm:pid [prio]` form.
    // -t: nanoseconds, cut here to the microseconds the text has. The one
    // normalisation of a value: report rounds its default microseconds to
    // the nearest (…016789 ns prints as .017) where the kernel's trace
    // file, and so our text, truncates (.016).
    let reported = report(dat, &["-N", "-t"])?;
    let text = std::fs::read_to_string(txt).unwrap();
    let (ours, mut theirs) = (per_cpu(&text, "--trace"), per_cpu(&reported, "trace-cmd report"));
    for l in theirs.values_mut().flatten() {
        let (secs, ns) = l.ts.split_once('.').unwrap();
        assert_eq!(ns.len(), 9, "report -t prints nanoseconds: {l:?}");
        l.ts = format!("{secs}.{}", &ns[..6]);
    }
    let count = |m: &BTreeMap<u32, Vec<Line>>| m.values().map(Vec::len).sum::<usize>();
    assert_eq!(count(&ours), count(&theirs), "{what}: event count");
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "{what}: CPUs with events");
    for (cpu, evs) in &ours {
        for (i, (a, b)) in evs.iter().zip(&theirs[cpu]).enumerate() {
            assert_eq!(a, b, "{what}: CPU {cpu}, its event {i}");
        }
    }
    // The flags, with report's latency format.
    let flags = flags_of(&report(dat, &["-N", "-l"])?);
    for (cpu, evs) in per_cpu_flags(&text) {
        assert_eq!(evs, flags[&cpu], "{what}: CPU {cpu}'s latency flags");
    }
    Some(count(&ours))
}

/// The text's latency flags (the token before the timestamp), per CPU.
fn per_cpu_flags(text: &str) -> BTreeMap<u32, Vec<String>> {
    let mut cpus: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let l = parse_line(line).unwrap();
        let head = line.split(&format!(" {}: ", l.ts)).next().unwrap();
        cpus.entry(l.cpu).or_default().push(head.trim_end().rsplit(' ').next().unwrap().to_string());
    }
    cpus
}

#[test]
fn trace_cmd_report_shows_the_events_of_the_ftrace_text() {
    let dir = tmp_dir("tracedat-asym");
    if let Some(n) = compare("scenarios/asym_min-2cpu.toml", "200ms", &[], dir.path()) {
        assert!(n > 1000, "{n} events compared");
        eprintln!("asym_min-2cpu: {n} events agree");
    }
}

/// `schedlab analyze` reads the trace.dat back (through `trace-cmd report
/// -R -t`, where the decision events and markers print as `msg=TEXT`): the
/// same events, handoffs and stalls as from the text. Only the latency
/// figures may differ in their last digits: the file has nanoseconds, the
/// text microseconds.
#[test]
fn analyze_reads_the_trace_dat_back() {
    let dir = tmp_dir("tracedat-analyze");
    let (txt, dat) = (dir.path().join("t.txt"), dir.path().join("t.dat"));
    ok(&[
        "run",
        "scenarios/asym_min-2cpu.toml",
        "--duration",
        "200ms",
        "--trace",
        txt.to_str().unwrap(),
        "--trace-dat",
        dat.to_str().unwrap(),
    ]);
    if report(&dat, &["-N"]).is_none() {
        return;
    }
    let (from_text, from_dat) = (ok(&["analyze", txt.to_str().unwrap()]), ok(&["analyze", dat.to_str().unwrap()]));
    let events = |r: &str| r.lines().next().unwrap().split("): ").nth(1).unwrap().to_string();
    assert_eq!(events(&from_text), events(&from_dat), "{from_dat}");
    assert!(from_dat.lines().next().unwrap().contains("trace.dat"), "{from_dat}");
    let stalls = |r: &str| r.lines().find(|l| l.starts_with("stalls ")).unwrap().to_string();
    assert_eq!(stalls(&from_text), stalls(&from_dat));
}

/// `analyze TRACE --convert FILE`: a trace read from text becomes a
/// trace.dat that report prints as the text.
#[test]
fn analyze_converts_a_trace_to_trace_dat() {
    let dir = tmp_dir("tracedat-convert");
    let (txt, dat) = (dir.path().join("t.txt"), dir.path().join("c.dat"));
    ok(&[
        "run",
        "scenarios/rt-pi-push.toml",
        "--duration",
        "300ms",
        "--features",
        "RT_PUSH_IPI",
        "--trace",
        txt.to_str().unwrap(),
    ]);
    ok(&["analyze", txt.to_str().unwrap(), "--convert", dat.to_str().unwrap()]);
    if let Some(n) = same_events("analyze --convert", &txt, &dat) {
        eprintln!("analyze --convert: {n} events agree");
    }
}

/// RT tasks, PI boosts and RT pushes (RT_PUSH_IPI, so the boosted task
/// migrates): sched_pi_setprio, sched_migrate_task and the schedlab_rt_*
/// events.
#[test]
fn trace_cmd_report_agrees_on_rt_push_and_pi() {
    let dir = tmp_dir("tracedat-rt");
    if let Some(n) = compare("scenarios/rt-pi-push.toml", "400ms", &["--features", "RT_PUSH_IPI"], dir.path()) {
        let text = std::fs::read_to_string(dir.path().join("t.txt")).unwrap();
        for name in ["sched_pi_setprio:", "sched_migrate_task:", "schedlab_rt_push:", "schedlab_rt_push_ipi:"] {
            assert!(text.contains(name), "rt-pi-push no longer has {name}: choose another scenario");
        }

        eprintln!("rt-pi-push: {n} events agree");
    }
}

/// Threads forked mid-run (rt-app `fork`) are in the cmdlines and their
/// events name them, and exits (`prev_state=X`) print as the text does.
/// The parent's 200 ms sleeps leave the machine idle: consecutive events of
/// a CPU more than 2^27 ns apart, written with a time-extend record.
#[test]
fn trace_cmd_report_names_threads_forked_mid_run() {
    let dir = tmp_dir("tracedat-fork");
    let json = dir.path().join("fork.json");
    std::fs::write(
        &json,
        r#"{ "tasks": {
             "parent": { "loop": 3, "run": 2000, "fork": "child", "sleep": 200000 },
             "child": { "instance": 0, "loop": 2, "run": 1000, "sleep": 1000 } },
           "global": { "duration": 1 } }"#,
    )
    .unwrap();
    if let Some(n) = compare(json.to_str().unwrap(), "500ms", &[], dir.path()) {
        let text = std::fs::read_to_string(dir.path().join("t.txt")).unwrap();
        assert!(text.contains("sched_wakeup_new: comm=child"), "no forked child in the text");
        assert!(text.contains("prev_state=X"), "no exit in the text");
        let us = |ts: &str| -> u64 { ts.replace('.', "").parse().unwrap() };
        let longest_gap = per_cpu(&text, "--trace")
            .values()
            .flat_map(|evs| evs.windows(2).map(|w| us(&w[1].ts) - us(&w[0].ts)).collect::<Vec<_>>())
            .max()
            .unwrap();
        assert!(longest_gap * 1000 > 1 << 27, "no time extend needed: longest gap {longest_gap} us");
        eprintln!("fork: {n} events agree");
    }
}

/// A --trace-dat path that cannot be written fails at once, naming it.
#[test]
fn an_unwritable_trace_dat_is_an_error_naming_it() {
    let e = common::err(&[
        "run",
        "scenarios/asym_min-2cpu.toml",
        "--duration",
        "10ms",
        "--trace-dat",
        "/nonexistent/x.dat",
    ]);
    assert!(e.contains("--trace-dat /nonexistent/x.dat"), "{e}");
}

/// trace.dat is binary: `-` is refused rather than written to the terminal.
#[test]
fn trace_dat_to_stdout_is_refused() {
    let e = common::err(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "10ms", "--trace-dat", "-"]);
    assert!(e.contains("--trace-dat -"), "{e}");
}

/// FILE found unwritable only at the end (a directory): an error naming
/// it, not a panic, and no spool file left beside it.
#[test]
fn a_trace_dat_that_cannot_be_written_at_the_end_is_an_error() {
    let dir = tmp_dir("tracedat-isdir");
    let target = dir.path().join("sub");
    std::fs::create_dir(&target).unwrap();
    let e = common::err(&[
        "run",
        "scenarios/asym_min-2cpu.toml",
        "--duration",
        "10ms",
        "--trace-dat",
        target.to_str().unwrap(),
    ]);
    assert!(e.contains(&format!("--trace-dat {}", target.display())), "{e}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("sub")]);
}
