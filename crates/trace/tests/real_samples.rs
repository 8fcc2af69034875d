//! The reader on real captures from this machine (see `data/record.sh`): two
//! pinned threads ping-ponging over eventfds with `schedlab` markers, while a
//! compiler build ran on the same 2 CPUs. The same buffer is read as tracefs
//! text and as `trace-cmd report`; a third capture lost events.

use std::collections::BTreeMap;

use proptest::prelude::*;
use schedlab_trace::ftrace::{drop_markers_across_gaps, gaps, parse_ftrace_with, Gap, ParseOptions, TraceFormat};
use schedlab_trace::{EventKind, Nanos, Pid, PrevState, Trace, UserOp};

const TRACEFS: &str = include_str!("data/pingpong.trace");
const REPORT: &str = include_str!("data/pingpong.report");
const LOSSY: &str = include_str!("data/pingpong-lost.trace");

fn parse(name: &str, text: &str) -> schedlab_trace::ftrace::ParsedTrace {
    parse_ftrace_with(name, text, &ParseOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn pid_of(t: &Trace, comm: &str) -> Pid {
    let pids: Vec<Pid> = t.table.tasks.iter().filter(|(_, i)| i.comm == comm).map(|(p, _)| *p).collect();
    assert_eq!(pids.len(), 1, "{comm}: {pids:?}");
    pids[0]
}

/// Handoffs as analysis pairs them (a signal opens one per object unless one
/// is open, wait_done closes it): (obj, signal ts, wait ts, waker, wakee).
fn handoffs(t: &Trace) -> Vec<(u32, Nanos, Nanos, Pid, Pid)> {
    let mut open: BTreeMap<u32, (Nanos, Pid)> = BTreeMap::new();
    let mut out = Vec::new();
    let mut evs = t.events.clone();
    evs.sort_by_key(|e| e.ts);
    for e in evs {
        match e.kind {
            EventKind::User { pid, op: UserOp::Signal { obj } } => {
                open.entry(obj).or_insert((e.ts, pid));
            }
            EventKind::User { pid, op: UserOp::WaitDone { obj } } => {
                if let Some((s, waker)) = open.remove(&obj) {
                    out.push((obj, s, e.ts, waker, pid));
                }
            }
            _ => {}
        }
    }
    out
}

/// (cpu, op name, obj) of every marker.
fn markers(t: &Trace) -> Vec<(Pid, u32, &'static str, u32)> {
    t.events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::User { pid, op: UserOp::Signal { obj } } => Some((pid, e.cpu, "signal", obj)),
            EventKind::User { pid, op: UserOp::WaitDone { obj } } => Some((pid, e.cpu, "wait_done", obj)),
            _ => None,
        })
        .collect()
}

#[test]
fn tracefs_sample_has_every_handoff_comm_and_cpu() {
    let p = parse("pingpong.trace", TRACEFS);
    let (t, s) = (&p.trace, &p.stats);
    assert_eq!(s.format, TraceFormat::Tracefs);
    assert_eq!(t.nr_cpus, 2);
    assert_eq!(s.header_cpus, Some(2));
    assert_eq!(s.entries, Some((1469, 1469)));
    assert_eq!(s.overwritten(), 0);
    assert!(s.lost.is_empty());
    assert_eq!(t.table.objects, ["efd0", "efd1"]);
    // Real kernel events the reader does not model are counted, not errors.
    for e in ["sched_process_fork", "sched_process_exec", "sched_process_exit", "sched_process_free"] {
        assert!(s.skipped_by_event.get(e).copied().unwrap_or(0) > 0, "{e}: {:?}", s.skipped_by_event);
    }
    assert_eq!(s.events + s.skipped_lines, 1469);

    // The threads renamed themselves after starting as `python3`: the last name wins.
    let (ping, pong) = (pid_of(t, "ping"), pid_of(t, "pong"));
    assert_eq!(s.renamed[&ping], ["python3", "ping"]);
    assert_eq!(s.renamed[&pong], ["python3", "pong"]);

    // 100 rounds: ping signals efd0 on CPU 0, pong's wait returns on CPU 1, and back.
    let m = markers(t);
    assert_eq!(m.len(), 400);
    let count = |pid, cpu, op, obj| m.iter().filter(|x| **x == (pid, cpu, op, obj)).count();
    assert_eq!(count(ping, 0, "signal", 0), 100);
    assert_eq!(count(pong, 1, "wait_done", 0), 100);
    assert_eq!(count(pong, 1, "signal", 1), 100);
    assert_eq!(count(ping, 0, "wait_done", 1), 100);
    let h = handoffs(t);
    assert_eq!(h.len(), 200);
    assert!(h
        .iter()
        .all(|&(obj, _, _, waker, wakee)| (waker, wakee) == if obj == 0 { (ping, pong) } else { (pong, ping) }));
    // Other processes (the compiler build) are kept.
    assert!(t.table.tasks.values().any(|i| i.comm == "rustc"), "{:?}", t.table.tasks);
}

#[test]
fn trace_cmd_report_of_the_same_buffer_gives_the_same_events() {
    let a = parse("pingpong.trace", TRACEFS);
    let b = parse("pingpong.report", REPORT);
    assert_eq!(b.stats.format, TraceFormat::TraceCmdReport);
    assert_eq!(b.stats.buffers.len(), 1);
    assert!(b.stats.buffers[0].starts_with("schedlab-rec-"), "{:?}", b.stats.buffers);
    assert_eq!(b.trace.nr_cpus, 2);
    // trace-cmd's compact sched_switch prints a preempted task's state `R+`
    // as `R`: the one thing the report loses.
    let plain = |k: EventKind| match k {
        EventKind::SchedSwitch { prev_pid, prev_prio, prev_state: PrevState::Running { .. }, next_pid, next_prio } => {
            EventKind::SchedSwitch {
                prev_pid,
                prev_prio,
                prev_state: PrevState::Running { preempt: false },
                next_pid,
                next_prio,
            }
        }
        k => k,
    };
    let preempted = a
        .trace
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SchedSwitch { prev_state: PrevState::Running { preempt: true }, .. }))
        .count();
    assert_eq!(preempted, TRACEFS.matches("prev_state=R+ ").count());
    assert!(preempted > 0);
    let key = |t: &Trace| t.events.iter().map(|e| (e.ts, e.cpu, e.ctx_pid, plain(e.kind))).collect::<Vec<_>>();
    let (ka, kb) = (key(&a.trace), key(&b.trace));
    assert_eq!(ka.len(), kb.len());
    if let Some(i) = (0..ka.len()).find(|&i| ka[i] != kb[i]) {
        panic!("event {i} differs: {:?} vs {:?}", ka[i], kb[i]);
    }
    assert_eq!(a.trace.table, b.trace.table);
    assert_eq!(a.stats.skipped_by_event, b.stats.skipped_by_event);
}

#[test]
fn lossy_capture_records_where_events_were_lost() {
    let p = parse("pingpong-lost.trace", LOSSY);
    let s = &p.stats;
    assert_eq!(s.lost_lines, 6);
    assert_eq!(s.lost_events, 734);
    let first = &s.lost[0];
    assert_eq!((first.line, first.cpu, first.count), (144, 0, Some(74)));
    assert_eq!(first.after_ts, Some(5_341_728_639_000));
    assert_eq!(first.before_ts, Some(5_341_758_759_000));
    for l in &s.lost {
        assert!(l.after_ts.is_some() && l.after_ts < l.before_ts, "{l:?}");
    }
    let g = gaps(&p.trace, s);
    assert_eq!(g.len(), 6);
    assert_eq!((g[0].start, g[0].end), (5_341_728_639_000, 5_341_758_759_000));
}

fn straddles(h: &(u32, Nanos, Nanos, Pid, Pid), gaps: &[Gap]) -> bool {
    gaps.iter().any(|g| g.start <= h.2 && h.1 <= g.end)
}

#[test]
fn no_handoff_is_paired_across_a_gap() {
    let p = parse("pingpong-lost.trace", LOSSY);
    let g = gaps(&p.trace, &p.stats);
    let before = handoffs(&p.trace);
    assert!(before.iter().any(|h| straddles(h, &g)), "the sample needs the filter");
    let mut t = p.trace.clone();
    let drops = drop_markers_across_gaps(&mut t, &g);
    assert_eq!((drops.signals, drops.waits), (26, 27));
    assert_eq!(p.trace.events.len() - t.events.len(), 53);
    let after = handoffs(&t);
    assert_eq!(after.len(), 4);
    assert!(after.iter().all(|h| !straddles(h, &g)), "{after:?}");
}

#[test]
fn wrapped_buffer_start_is_a_gap() {
    // The tracefs sample as if the buffer had wrapped: CPU 1's first 300 lines
    // overwritten, so until CPU 1's first remaining event the trace misses it.
    let mut dropped = 0;
    let text: String = TRACEFS
        .lines()
        .map(|l| {
            if l.starts_with("# entries-in-buffer") {
                return l.replace("1469/1469", "1169/1469") + "\n";
            }
            if l.contains(" [001] ") && dropped < 300 {
                dropped += 1;
                return String::new();
            }
            format!("{l}\n")
        })
        .collect();
    let p = parse("wrapped.trace", &text);
    assert_eq!(p.stats.overwritten(), 300);
    let g = gaps(&p.trace, &p.stats);
    assert_eq!(g.len(), 1);
    assert_eq!((g[0].cpu, g[0].line), (None, 0));
    assert_eq!(g[0].start, p.stats.cpu_first_ts[&0]);
    assert_eq!(g[0].end, p.stats.cpu_first_ts[&1]);
    let mut t = p.trace.clone();
    let drops = drop_markers_across_gaps(&mut t, &g);
    assert!(drops.signals + drops.waits > 0);
    assert!(handoffs(&t).iter().all(|h| h.1 > g[0].end));
}

#[test]
fn trace_cmd_drop_lines_with_and_without_counts() {
    let text = "\
cpus=2
inst:           a-10    [000]  1.000000: tracing_mark_write: schedlab signal obj=e
inst: CPU:1 [EVENTS DROPPED]
inst:           b-11    [001]  1.000500: tracing_mark_write: schedlab wait_done obj=e
CPU:0 [7 EVENTS DROPPED]
                a-10    [000]  1.002000: tracing_mark_write: schedlab signal obj=e
";
    let p = parse("r", text);
    assert_eq!(p.stats.buffers, ["inst"]);
    assert_eq!(p.stats.lost_events, 7);
    let l: Vec<_> = p.stats.lost.iter().map(|l| (l.line, l.cpu, l.count, l.after_ts, l.before_ts)).collect();
    assert_eq!(l, [(3, 1, None, None, Some(1_000_500_000)), (5, 0, Some(7), Some(1_000_000_000), Some(1_002_000_000))]);
    // CPU 1 lost events before 1.0005 s: the handoff ending there is not counted.
    let mut t = p.trace.clone();
    let g = gaps(&t, &p.stats);
    drop_markers_across_gaps(&mut t, &g);
    assert!(handoffs(&t).is_empty());
    assert_eq!(handoffs(&p.trace).len(), 1);
}

#[test]
fn truncated_event_line_is_an_error_at_its_line() {
    let lines: Vec<&str> = TRACEFS.lines().collect();
    let n = lines.iter().position(|l| l.contains("sched_switch: prev_comm=ping")).unwrap();
    let cut = lines[n].find("prev_state=").unwrap();
    let text = format!("{}\n{}\n", lines[..n].join("\n"), &lines[n][..cut]);
    let e = parse_ftrace_with("cut.trace", &text, &ParseOptions::default()).unwrap_err();
    assert_eq!(e.line, n + 1);
    assert!(e.to_string().starts_with(&format!("cut.trace:{}:", n + 1)), "{e}");
    assert!(e.message.contains("sched_switch") && e.message.contains("prev_state"), "{e}");
}

/// A mangled copy of the first `keep` lines of a sample.
#[derive(Clone, Debug)]
enum Damage {
    Truncate(usize),
    Byte(usize, u8),
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    Insert(usize, String),
}

fn apply(text: &str, d: &Damage) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len();
    match d {
        Damage::Truncate(k) => {
            let mut k = k % (text.len() + 1);
            while !text.is_char_boundary(k) {
                k -= 1;
            }
            return text[..k].to_string();
        }
        Damage::Byte(k, b) => {
            let mut bytes = text.as_bytes().to_vec();
            let k = k % bytes.len();
            bytes[k] = *b;
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        Damage::DeleteLine(i) => {
            lines.remove(i % n);
        }
        Damage::DuplicateLine(i) => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Damage::SwapLines(i, j) => lines.swap(i % n, j % n),
        Damage::Insert(i, s) => lines.insert(i % n, s.clone()),
    }
    lines.join("\n") + "\n"
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<usize>().prop_map(Damage::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(k, b)| Damage::Byte(k, b)),
        any::<usize>().prop_map(Damage::DeleteLine),
        any::<usize>().prop_map(Damage::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Damage::SwapLines(i, j)),
        (any::<usize>(), "[ -~]{0,60}").prop_map(|(i, s)| Damage::Insert(i, s)),
        (any::<usize>(), "CPU:[0-9]{1,3} \\[(LOST )?[0-9]{0,4} ?EVENTS( DROPPED)?\\]")
            .prop_map(|(i, s)| Damage::Insert(i, s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Any truncation or corruption of a real capture gives a trace or an
    /// error naming a line of the input — never a panic — and whatever parses
    /// goes through the gap filter without pairing a handoff across a gap.
    #[test]
    fn damaged_captures_parse_or_fail_with_a_line(
        sample in 0..3usize,
        ds in proptest::collection::vec(damage(), 1..4),
    ) {
        let full = [TRACEFS, REPORT, LOSSY][sample];
        let head: String = full.lines().take(250).map(|l| format!("{l}\n")).collect();
        let text = ds.iter().fold(head, |t, d| apply(&t, d));
        match parse_ftrace_with("bad.trace", &text, &ParseOptions::default()) {
            Ok(p) => {
                let g = gaps(&p.trace, &p.stats);
                let mut t = p.trace.clone();
                drop_markers_across_gaps(&mut t, &g);
                for h in handoffs(&t) {
                    prop_assert!(!straddles(&h, &g), "{h:?} {g:?}");
                }
            }
            Err(e) => {
                prop_assert!(e.line >= 1 && e.line <= text.lines().count(), "{e}");
                prop_assert!(e.col >= 1, "{e}");
                prop_assert!(e.to_string().starts_with(&format!("bad.trace:{}:{}: ", e.line, e.col)), "{e}");
            }
        }
    }
}

/// Kernel events we do not model are skipped and counted; an unknown
/// `schedlab_*` event is ours and damaged, so it is an error at its line.
#[test]
fn unknown_kernel_events_are_skipped_but_unknown_schedlab_events_are_errors() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pingpong.trace");
    let text = std::fs::read_to_string(&path).unwrap();
    let n = text.lines().position(|l| l.contains(": sched_waking:")).unwrap();
    let edit = |from: &str, to: &str| {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[n] = lines[n].replacen(from, to, 1);
        lines.join("\n") + "\n"
    };
    let opts = ParseOptions::default();
    let parsed = parse_ftrace_with("x.trace", &edit("sched_waking:", "sched_frobnicate:"), &opts).unwrap();
    assert_eq!(parsed.stats.skipped_by_event.get("sched_frobnicate"), Some(&1));
    let e =
        parse_ftrace_with("x.trace", &edit("sched_waking:", "schedlab_frobnicate:"), &opts).unwrap_err().to_string();
    assert!(e.starts_with(&format!("x.trace:{}:", n + 1)) && e.contains("unknown schedlab event"), "{e}");
}

const MISSING: &str = include_str!("data/missing-switches.trace");

/// Switches into and out of the idle task, per CPU.
fn idle_switches(t: &Trace, cpu: u32) -> (usize, usize) {
    let sw = |f: &dyn Fn(Pid, Pid) -> bool| {
        t.events
            .iter()
            .filter(|e| {
                e.cpu == cpu
                    && matches!(e.kind, EventKind::SchedSwitch { prev_pid, next_pid, .. } if f(prev_pid, next_pid))
            })
            .count()
    };
    (sw(&|_, n| n == 0), sw(&|p, _| p == 0))
}

/// The sample recorded on this project's host (Linux 6.18, see
/// docs/real-traces.md): CPU 1 switches into idle but never out, and
/// tasks then run there with no switch into them. The repair puts back
/// one switch out of idle for each (within the one the window ends in),
/// and leaves a stream a second pass finds consistent.
#[test]
fn switches_out_of_idle_missing_on_one_cpu_are_put_back() {
    let mut t = parse("missing-switches.trace", MISSING).trace;
    let (into1, out1) = idle_switches(&t, 1);
    assert!(into1 > 50 && out1 == 0, "the sample shows the loss: {into1} in, {out1} out");
    let (into0, out0) = idle_switches(&t, 0);
    assert!(into0.abs_diff(out0) <= 1, "CPU 0 is whole: {into0} in, {out0} out");
    let stats = schedlab_trace::repair::repair_trace(&mut t);
    assert!(!stats.cpus.contains_key(&0), "nothing to repair on CPU 0: {stats:?}");
    let (into1, out1) = idle_switches(&t, 1);
    assert!(into1.abs_diff(out1) <= 1, "after: {into1} in, {out1} out");
    assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert_eq!(schedlab_trace::repair::repair_trace(&mut t).inserted(), 0);
}

#[test]
fn the_other_real_samples_need_no_repair() {
    for (name, text) in [("pingpong.trace", TRACEFS), ("pingpong.report", REPORT)] {
        let mut t = parse(name, text).trace;
        let stats = schedlab_trace::repair::repair_trace(&mut t);
        assert!(stats.is_clean(), "{name}: {stats:?}");
    }
}
