//! `analyze --view latency|timehist|map` against `perf sched` itself on a
//! capture recorded here (root and perf needed; skipped with a message
//! elsewhere). Compared row by row:
//!
//! * latency, per comm (perf's default) and per thread (`-p`): every row,
//!   its name and every number, and the row order, exactly;
//! * timehist: every line (time, CPU, name as of that line, tid/pid and the
//!   three figures) exactly, except where perf lost the task's tid
//!   (`:-1[-1/pid]`, a task that had exited when perf looked it up: perf
//!   has no comm and no last switch-out for it, schedlab names it from the
//!   switch, so that line's wait may differ; time and CPU still match);
//! * timehist with `-V`, `-n`, `-w -M` and all four: every line, the header
//!   included, with the same two exceptions;
//! * map: every line exactly, the `XY => comm:tid` notes included (with the
//!   comm at that switch, and again after an exec, as perf draws them).
//!
//! One more exception in every view: a thread perf never learned the comm of
//! (no event in its own context, not in `/proc` when perf started) reads
//! `:TID` in perf; schedlab names it from the events' fields.

mod common;

use std::path::Path;
use std::process::Command;

fn perf(args: &[&str], data: &Path) -> String {
    let out = Command::new("perf").args(args).arg("-i").arg(data).output().unwrap();
    assert!(out.status.success(), "perf {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn schedlab(view: &[&str], data: &Path) -> String {
    let mut args = vec!["analyze", data.to_str().unwrap(), "--view"];
    args.extend(view);
    common::ok(&args)
}

/// `comm[tid]`/`comm[tid/pid]` → (tid, pid).
fn ids(name: &str) -> Option<(String, String)> {
    let inner = name.trim_end().strip_suffix(']')?.rsplit_once('[')?.1;
    Some(match inner.split_once('/') {
        Some((t, p)) => (t.to_string(), p.to_string()),
        None => (inner.to_string(), inner.to_string()),
    })
}

/// Whether perf's line names a thread by `:TID` (a comm perf never
/// learned), as a task (`:95[95]`) or as the one woken or moved (`: :95`).
fn perf_unnamed(line: &str) -> bool {
    line.split(' ').any(|w| {
        w.strip_prefix(':').is_some_and(|d| {
            let d = d.split('[').next().unwrap();
            !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
        })
    })
}

#[test]
fn the_perf_sched_views_match_perf_on_a_host_capture() {
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: recording with perf needs root");
        return;
    }
    if !Command::new("perf").arg("version").output().is_ok_and(|o| o.status.success()) {
        println!("skipped: perf is not installed (scripts/install-trace-deps.sh)");
        return;
    }
    let dir = common::tmp_dir("perf-parity");
    let data = dir.path().join("perf.data");
    // Busy loops that preempt each other on the host's CPUs, a pipeline
    // that wakes its stages, short sleeps; `timeout` bounds perf.
    let work = "timeout 0.3 yes >/dev/null & timeout 0.3 yes >/dev/null & timeout 0.3 yes >/dev/null & \
                seq 1 200000 | cat | cat >/dev/null; for i in $(seq 20); do sleep 0.001; done; wait";
    let status = Command::new("timeout")
        .args(["120", "perf", "record", "-q", "-e", "sched:*", "-a", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", work])
        .status()
        .unwrap();
    if !status.success() {
        println!("skipped: perf record failed here ({status})");
        return;
    }

    // latency: per thread (-p), then per comm (perf's default).
    let row = |l: &str| -> Option<(String, String)> {
        let (name, rest) = l.split_once('|')?;
        rest.contains("avg:").then(|| (name.trim().to_string(), rest.to_string()))
    };
    // `:TID:TID`: a thread perf never learned the comm of.
    let unnamed_tid = |name: &str| -> Option<String> {
        let (comm, tid) = name.rsplit_once(':')?;
        (comm == format!(":{tid}")).then(|| tid.to_string())
    };
    let theirs: Vec<_> = perf(&["sched", "latency", "-p"], &data).lines().filter_map(row).collect();
    let ours: Vec<_> = schedlab(&["latency", "-p"], &data).lines().filter_map(row).collect();
    assert_eq!(theirs.len(), ours.len(), "perf sched latency -p: rows");
    let (mut equal, mut unnamed_comms) = (0, std::collections::BTreeSet::new());
    for (a, b) in theirs.iter().zip(&ours) {
        if a == b {
            equal += 1;
            continue;
        }
        let tid = unnamed_tid(&a.0).unwrap_or_else(|| panic!("perf: {a:?}\nschedlab: {b:?}"));
        let (comm, b_tid) = b.0.rsplit_once(':').unwrap();
        assert!(b_tid == tid && a.1 == b.1, "perf: {a:?}\nschedlab: {b:?}");
        unnamed_comms.insert(comm.to_string());
    }
    println!(
        "perf sched latency -p: {} rows, {equal} identical, {} with a thread perf could not name",
        theirs.len(),
        theirs.len() - equal
    );
    // Per comm: the threads perf could not name make rows of their own in
    // perf's table and join their comm's in schedlab's; those rows left out.
    let theirs: Vec<_> = perf(&["sched", "latency"], &data).lines().filter_map(row).collect();
    let ours: Vec<_> = schedlab(&["latency"], &data).lines().filter_map(row).collect();
    let kept_theirs: Vec<_> = theirs.iter().filter(|r| unnamed_tid(&r.0).is_none()).collect();
    let kept_ours: Vec<_> = ours.iter().filter(|r| !unnamed_comms.contains(r.0.rsplit_once(':').unwrap().0)).collect();
    assert_eq!(kept_theirs, kept_ours, "perf sched latency (per comm)");
    println!(
        "perf sched latency: {} rows, {} identical, {} with a thread perf could not name",
        theirs.len(),
        kept_theirs.len(),
        theirs.len() - kept_theirs.len()
    );

    // timehist
    let line = |l: &str| -> Option<(String, String, (String, String), String)> {
        let (head, rest) = l.split_at_checked(22)?;
        let cols: Vec<&str> = rest.split_whitespace().collect();
        (cols.len() >= 4 && head.contains(" [")).then(|| {
            let name = rest[..rest.find(cols[cols.len() - 3]).unwrap()].trim().to_string();
            (head.to_string(), name.clone(), ids(&name).unwrap_or_default(), cols[cols.len() - 3..].join(" "))
        })
    };
    let theirs: Vec<_> = perf(&["sched", "timehist"], &data).lines().filter_map(line).collect();
    let ours: Vec<_> = schedlab(&["timehist"], &data).lines().filter_map(line).collect();
    assert_eq!(theirs.len(), ours.len(), "one line per switch in both");
    let (mut equal, mut lost_tid, mut unnamed) = (0, 0, 0);
    for (a, b) in theirs.iter().zip(&ours) {
        if a.1.starts_with(":-1[") {
            // perf lost the thread (it had exited by the time perf looked it
            // up): it prints tid -1 and no comm, and so cannot tell its wait.
            lost_tid += 1;
            assert_eq!(a.0, b.0, "time and CPU");
            continue;
        }
        assert_eq!((&a.0, &a.2, &a.3), (&b.0, &b.2, &b.3), "perf: {a:?}\nschedlab: {b:?}");
        if a.1 != b.1 {
            assert!(a.1.starts_with(&format!(":{}[", a.2 .0)), "names: perf: {a:?}\nschedlab: {b:?}");
            unnamed += 1;
            continue;
        }
        equal += 1;
    }
    println!(
        "timehist: {} lines, {equal} identical in time/CPU/name/tid/pid/wait/delay/run, {lost_tid} where perf lost \
         the tid, {unnamed} of a thread perf could not name",
        theirs.len()
    );

    // timehist's options, line for line (the header included).
    for opts in [&["-V"][..], &["-n"], &["-w", "-M"], &["-V", "-n", "-w", "-M"]] {
        let theirs = perf(&[&["sched", "timehist"][..], opts].concat(), &data);
        let ours = schedlab(&[&["timehist"][..], opts].concat(), &data);
        let ours: Vec<&str> = ours.lines().filter(|l| !l.starts_with("note:")).collect();
        let theirs: Vec<&str> = theirs.lines().collect();
        assert_eq!(theirs.len(), ours.len(), "timehist {opts:?}");
        let (mut identical, mut lost_tid, mut unnamed) = (0, 0, 0);
        for (a, b) in theirs.iter().zip(&ours) {
            if a == b {
                identical += 1;
            } else if a.contains(" :-1[-1") {
                assert_eq!(a.get(..22), b.get(..22), "time and CPU: perf: {a}\nschedlab: {b}");
                lost_tid += 1;
            } else {
                assert!(perf_unnamed(a), "timehist {opts:?}: perf: {a}\nschedlab: {b}");
                unnamed += 1;
            }
        }
        println!(
            "timehist {opts:?}: {} lines, {identical} identical, {lost_tid} where perf lost the tid, {unnamed} naming \
             a thread perf could not name",
            theirs.len()
        );
    }

    // map
    let theirs: Vec<String> =
        perf(&["sched", "map"], &data).lines().filter(|l| l.contains(" secs")).map(String::from).collect();
    let ours: Vec<String> =
        schedlab(&["map"], &data).lines().filter(|l| l.contains(" secs")).map(String::from).collect();
    assert_eq!(theirs.len(), ours.len());
    let (mut identical, mut unnamed) = (0, 0);
    for (a, b) in theirs.iter().zip(&ours) {
        if a == b {
            identical += 1;
            continue;
        }
        // Only `XY => :TID:TID`, a thread perf could not name.
        let split = |l: &str| {
            let (cols, note) = l.split_once(" secs").unwrap();
            (cols.to_string(), note.rsplit_once(':').map(|(c, tid)| (c.to_string(), tid.to_string())))
        };
        let ((ca, na), (cb, nb)) = (split(a), split(b));
        let (Some((comm, tid)), Some((_, tid_b))) = (na, nb) else { panic!("perf: {a}\nschedlab: {b}") };
        assert!(ca == cb && tid == tid_b && comm.ends_with(&format!(" => :{tid}")), "perf: {a}\nschedlab: {b}");
        unnamed += 1;
    }
    println!("map: {} lines, {identical} identical, {unnamed} naming a thread perf could not name", theirs.len());

    // The same capture as `perf script` text, from a file and from a pipe:
    // the views and the report are the perf.data's (the fields schedlab
    // asks perf for, so the same nanoseconds).
    let text = perf(&["script", "-F", "comm,pid,tid,cpu,time,event,trace", "--ns"], &data);
    let script = dir.path().join("perf-script.txt");
    std::fs::write(&script, &text).unwrap();
    // All but the first line, which names the file and its kind.
    let body = |r: &str| r.lines().skip(1).collect::<Vec<_>>().join("\n");
    for view in ["timehist", "latency", "map"] {
        let (text, binary) = (schedlab(&[view], &script), schedlab(&[view], &data));
        assert_eq!(body(&text), body(&binary), "--view {view} of perf script text");
    }
    let from_data = common::ok(&["analyze", data.to_str().unwrap()]);
    let from_file = common::ok(&["analyze", script.to_str().unwrap()]);
    assert!(from_file.starts_with(&format!("trace     {} (perf script output", script.display())), "{from_file}");
    assert_eq!(body(&from_file), body(&from_data));
    let piped = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["analyze", "-"])
        .stdin(std::fs::File::open(&script).unwrap())
        .output()
        .unwrap();
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    assert_eq!(body(&String::from_utf8(piped.stdout).unwrap()), body(&from_data), "perf script text on stdin");
    println!("perf script text: the views and the report equal the perf.data's");
}
