//! The Perfetto writer's output, decoded with Perfetto's own schema.
//!
//! Writes a synthetic multi-CPU trace with every event kind, then runs
//! `scripts/perfetto-check.py`, which parses the file with the PyPI `perfetto`
//! wheel's `perfetto_trace_pb2` (the generated code of Perfetto's .proto files)
//! and prints counts per event kind and CPU, prev_state letters, the process
//! tree, and any unknown field. Those must equal what the trace holds.
//!
//! Python: `$SCHEDLAB_PYTHON`, else `target/pyenv/bin/python3` (created by
//! `scripts/install-python-test-deps.sh`), else `python3`. Set
//! `SCHEDLAB_PERFETTO_TEST=skip` to skip; otherwise a missing Python or
//! missing packages fail the test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use schedlab_trace::ftrace::event_name;
use schedlab_trace::*;
use serde_json::Value;

const INSTALL: &str = "scripts/install-python-test-deps.sh";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("SCHEDLAB_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let venv = workspace().join("target/pyenv/bin/python3");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// Deterministic pseudo-random numbers (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A small, self-consistent schedule on 4 CPUs: six workload threads in one
/// process plus a kthread wake, preempt, block, migrate and die, with
/// decision events and workload markers in between.
fn synthetic_trace() -> Trace {
    let mut table = TaskTable { objects: vec!["efd0".into(), "done flag".into()], ..Default::default() };
    table.tasks.insert(1000, TaskInfo { comm: "app".into(), tgid: 1000 });
    let names = ["wörker-0", "worker 1", "worker-2", "waker", "batch", "short-lived"];
    for (i, n) in names.iter().enumerate() {
        table.tasks.insert(1001 + i as Pid, TaskInfo { comm: (*n).into(), tgid: 1000 });
    }
    table.tasks.insert(40, TaskInfo { comm: "migration/0".into(), tgid: 40 });
    let prio = |pid: Pid| if pid == 1005 { 139 } else { 120 };
    let flags: [&[u8; 5]; 5] = [b"d..2.", b"dNh2.", b"d.s3.", b"...1.", b"dN.2."];

    let mut rng = Lcg(42);
    let mut events = Vec::new();
    let mut ts: Nanos = 5_000_000_000;
    let mut curr = [0 as Pid; 4];
    let mut rq: [Vec<Pid>; 4] = Default::default();
    let mut sleeping: Vec<(Pid, u32)> = Vec::new(); // (pid, last cpu)
    let mut push = |ts: &mut Nanos, rng: &mut Lcg, cpu: u32, ctx: Pid, kind: EventKind| {
        *ts += 1 + rng.next(40_000);
        let fl = flags[rng.next(5) as usize];
        events.push(Event { ts: *ts, cpu, ctx_pid: ctx, flags: *fl, kind });
    };
    // fork: every thread starts on its own CPU's runqueue
    for i in 0..names.len() as Pid {
        let (pid, cpu) = (1001 + i, (i % 4) as u32);
        push(&mut ts, &mut rng, 0, 1000, EventKind::SchedWakeupNew { pid, prio: prio(pid), target_cpu: cpu });
        rq[cpu as usize].push(pid);
    }
    for step in 0..3000u32 {
        let cpu = rng.next(4) as usize;
        let c = cpu as u32;
        let cur = curr[cpu];
        match rng.next(12) {
            // schedule: curr blocks, is preempted or keeps running; pick the runqueue head
            0..=3 => {
                let state = match (cur, rng.next(4)) {
                    (0, _) => PrevState::Running { preempt: false },
                    (_, 0) => PrevState::Running { preempt: true },
                    (_, 1) => PrevState::DiskSleep,
                    _ => PrevState::Sleeping,
                };
                if cur == 1006 && step > 2000 {
                    let next = rq[cpu].pop().unwrap_or(0);
                    let kind = EventKind::SchedSwitch {
                        prev_pid: cur,
                        prev_prio: prio(cur),
                        prev_state: PrevState::Dead,
                        next_pid: next,
                        next_prio: prio(next),
                    };
                    push(&mut ts, &mut rng, c, cur, kind);
                    curr[cpu] = next;
                    continue;
                }
                let next = if rq[cpu].is_empty() { 0 } else { rq[cpu].remove(0) };
                let keeps_running = matches!(state, PrevState::Running { .. }) && next == 0;
                if cur == next || keeps_running {
                    continue;
                }
                if cur != 0 {
                    let runtime = rng.next(3_000_000);
                    push(&mut ts, &mut rng, c, cur, EventKind::SchedStatRuntime { pid: cur, runtime });
                    match state {
                        PrevState::Running { .. } => rq[cpu].push(cur),
                        _ => {
                            let lag = rng.next(10_000) as i64 - 5_000;
                            push(
                                &mut ts,
                                &mut rng,
                                c,
                                cur,
                                EventKind::Delayed { pid: cur, what: DelayedWhat::Delayed, lag },
                            );
                            sleeping.push((cur, c));
                        }
                    }
                }
                let kind = EventKind::SchedSwitch {
                    prev_pid: cur,
                    prev_prio: prio(cur),
                    prev_state: state,
                    next_pid: next,
                    next_prio: prio(next),
                };
                push(&mut ts, &mut rng, c, cur, kind);
                curr[cpu] = next;
                if next != 0 {
                    let op = [UserOp::WaitDone { obj: 0 }, UserOp::PollDone { obj: 1 }][rng.next(2) as usize];
                    push(&mut ts, &mut rng, c, next, EventKind::User { pid: next, op });
                }
            }
            // curr wakes a sleeper onto some CPU
            4..=7 if !sleeping.is_empty() => {
                let (pid, last) = sleeping.remove(rng.next(sleeping.len() as u64) as usize);
                let target = rng.next(4) as u32;
                if cur != 0 {
                    push(&mut ts, &mut rng, c, cur, EventKind::User { pid: cur, op: UserOp::Signal { obj: 0 } });
                }
                push(&mut ts, &mut rng, c, cur, EventKind::SchedWaking { pid, prio: prio(pid), target_cpu: target });
                let path = [WakePath::Activate, WakePath::Wakelist, WakePath::Runnable { delayed: true }]
                    [rng.next(3) as usize];
                push(&mut ts, &mut rng, c, cur, EventKind::Ttwu { pid, path, cpu: target });
                if target != last {
                    let kind = EventKind::SchedMigrateTask { pid, prio: prio(pid), orig_cpu: last, dest_cpu: target };
                    push(&mut ts, &mut rng, c, cur, kind);
                }
                let t = target as usize;
                push(
                    &mut ts,
                    &mut rng,
                    target,
                    curr[t],
                    EventKind::SchedWakeup { pid, prio: prio(pid), target_cpu: target },
                );
                if curr[t] == 0 {
                    if rng.next(2) == 0 {
                        push(&mut ts, &mut rng, c, cur, EventKind::SchedWakeIdleWithoutIpi { cpu: target });
                    } else {
                        let state = 408_000 + 200_000 * rng.next(8) as u32;
                        push(&mut ts, &mut rng, c, cur, EventKind::CpuFrequency { state, cpu_id: target });
                    }
                    let reason = PreemptReason::Idle;
                    push(
                        &mut ts,
                        &mut rng,
                        target,
                        0,
                        EventKind::WakeupPreempt { wakee: pid, curr: 0, preempt: true, reason },
                    );
                } else {
                    let (preempt, reason) =
                        [(true, PreemptReason::Pick), (false, PreemptReason::NotPicked)][rng.next(2) as usize];
                    let kind = EventKind::WakeupPreempt { wakee: pid, curr: curr[t], preempt, reason };
                    push(&mut ts, &mut rng, target, curr[t], kind);
                    if preempt {
                        push(&mut ts, &mut rng, target, curr[t], EventKind::Resched { cpu: target, ipi: target != c });
                    }
                }
                rq[t].push(pid);
            }
            // the balancer moves a queued task (sometimes through the stopper)
            8 => {
                let dst = rng.next(4) as usize;
                if dst != cpu && !rq[cpu].is_empty() {
                    let pid = rq[cpu].remove(0);
                    let bk = [BalanceKind::Periodic, BalanceKind::Newidle, BalanceKind::Active][rng.next(3) as usize];
                    let ctx = if bk == BalanceKind::Active { 40 } else { curr[dst] };
                    if bk == BalanceKind::Active {
                        let kind = EventKind::ActiveBalanceQueued { src_cpu: c, dst_cpu: dst as u32 };
                        push(&mut ts, &mut rng, dst as u32, curr[dst], kind);
                    }
                    let (src_cpu, dst_cpu) = (c, dst as u32);
                    let kind =
                        EventKind::SchedMigrateTask { pid, prio: prio(pid), orig_cpu: src_cpu, dest_cpu: dst_cpu };
                    push(&mut ts, &mut rng, dst_cpu, ctx, kind);
                    push(
                        &mut ts,
                        &mut rng,
                        dst_cpu,
                        ctx,
                        EventKind::LbMigrate { pid, src_cpu, dst_cpu, kind: bk, delayed: false },
                    );
                    rq[dst].push(pid);
                }
            }
            9 if cur != 0 => {
                let op = [
                    UserOp::Post { obj: 1 },
                    UserOp::Lock { obj: 0 },
                    UserOp::Unlock { obj: 0 },
                    UserOp::LoopEnd { n: step },
                ][rng.next(4) as usize];
                push(&mut ts, &mut rng, c, cur, EventKind::User { pid: cur, op });
            }
            10 if cur != 0 => {
                push(
                    &mut ts,
                    &mut rng,
                    c,
                    cur,
                    EventKind::SchedPiSetprio { pid: cur, oldprio: prio(cur), newprio: -1 },
                );
                push(
                    &mut ts,
                    &mut rng,
                    c,
                    cur,
                    EventKind::SchedPiSetprio { pid: cur, oldprio: -1, newprio: prio(cur) },
                );
            }
            _ => {}
        }
    }
    Trace { table, nr_cpus: 4, events }
}

fn run_check(file: &Path) -> Value {
    let py = python();
    let script = workspace().join("scripts/perfetto-check.py");
    let hint = format!(
        "run {INSTALL} (it prints the venv's python; or export SCHEDLAB_PYTHON=$({INSTALL})), \
         or set SCHEDLAB_PERFETTO_TEST=skip to skip this test"
    );
    let out = Command::new(&py)
        .arg(&script)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}; {hint}", py.display(), script.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        panic!("{} lacks the Perfetto Python packages:\n{stderr}\n{hint}", py.display());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("perfetto-check.py ({}) printed no JSON ({e}):\n{stdout}\n{stderr}", out.status));
    assert!(out.status.success(), "perfetto-check.py found errors: {}\n{stderr}", json["errors"]);
    json
}

#[test]
fn perfetto_schema_decodes_every_event() {
    if std::env::var("SCHEDLAB_PERFETTO_TEST").as_deref() == Ok("skip") {
        eprintln!("perfetto_schema: SKIPPED (SCHEDLAB_PERFETTO_TEST=skip); the official-schema check did not run");
        return;
    }
    let trace = synthetic_trace();

    let mut events: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut states: BTreeMap<String, u64> = BTreeMap::new();
    for ev in &trace.events {
        *events.entry(event_name(&ev.kind).into()).or_default().entry(ev.cpu.to_string()).or_default() += 1;
        if let EventKind::SchedSwitch { prev_state, .. } = ev.kind {
            *states.entry(prev_state.as_str().into()).or_default() += 1;
        }
    }
    // the schedule exercises every kind and every prev_state
    assert_eq!(events.len(), 16, "{events:?}");
    assert_eq!(states.len(), 5, "{states:?}");
    let processes: BTreeMap<String, String> =
        [("40", "migration/0"), ("1000", "app")].iter().map(|(p, c)| (p.to_string(), c.to_string())).collect();
    let threads: BTreeMap<String, Value> =
        trace.table.tasks.iter().map(|(p, t)| (p.to_string(), serde_json::json!([t.tgid, t.comm]))).collect();

    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("perfetto_schema.pftrace");
    let mut bytes = Vec::new();
    write_perfetto(&trace, &mut bytes).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    let got = run_check(&file);

    assert_eq!(got["errors"], serde_json::json!([]));
    assert_eq!(got["sequence_ids"], serde_json::json!([2]));
    assert_eq!(got["total_events"], trace.events.len());
    assert_eq!(
        got["system_info"],
        serde_json::json!({"sysname": "Linux", "release": "6.12.0-schedlab", "machine": "x86_64", "num_cpus": 4})
    );
    let got_events: BTreeMap<String, BTreeMap<String, u64>> = serde_json::from_value(got["events"].clone()).unwrap();
    assert_eq!(got_events, events);
    let got_states: BTreeMap<String, u64> = serde_json::from_value(got["prev_state"].clone()).unwrap();
    assert_eq!(got_states, states);
    let got_processes: BTreeMap<String, String> = serde_json::from_value(got["processes"].clone()).unwrap();
    assert_eq!(got_processes, processes);
    let got_threads: BTreeMap<String, Value> = serde_json::from_value(got["threads"].clone()).unwrap();
    assert_eq!(got_threads, threads);
    eprintln!(
        "perfetto_schema: {} bytes, {} packets, {} events decoded by perfetto_trace_pb2: {}",
        bytes.len(),
        got["packets"],
        got["total_events"],
        got["events"]
    );
}
