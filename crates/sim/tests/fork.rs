//! `fork`: a thread created mid-run goes through `sched_fork()` (the
//! parent's attributes, the parent's CPU) and `wake_up_new_task()` (fork
//! balancing), then sets its own table's affinity and policy.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, simulate_observed, SimError, SimOptions, SimResult, TraceObserver};
use schedlab_trace::{Event, EventKind, Pid, TaskInfo, TaskTable};
use std::path::Path;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str("fork.toml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn sim(text: &str) -> SimResult {
    simulate(&scenario(text), &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn pid(r: &SimResult, name: &str) -> Pid {
    r.trace.table.tasks.iter().find(|(_, t)| t.comm == name).map(|(p, _)| *p).unwrap_or_else(|| panic!("no {name}"))
}

/// `sched_wakeup_new` of `p`: (time, CPU it ran on, prio, target CPU).
fn wakeup_new(r: &SimResult, p: Pid) -> (u64, u32, i32, u32) {
    r.trace
        .events
        .iter()
        .find_map(|e| match e.kind {
            EventKind::SchedWakeupNew { pid, prio, target_cpu } if pid == p => Some((e.ts, e.cpu, prio, target_cpu)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("pid {p} was never woken new"))
}

fn migrations(r: &SimResult, p: Pid) -> Vec<(u32, u32)> {
    r.trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } if pid == p => Some((orig_cpu, dest_cpu)),
            _ => None,
        })
        .collect()
}

/// The prio `p` had each time it was switched out.
fn prios_out(r: &SimResult, p: Pid) -> Vec<i32> {
    r.trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::SchedSwitch { prev_pid, prev_prio, .. } if prev_pid == p => Some(prev_prio),
            _ => None,
        })
        .collect()
}

const PINNED: &str = r#"
topology = "smt-2x2"
duration = "30ms"
[[thread]]
name = "parent"
affinity = "0"
loop = 1
program = [{ run = "1ms" }, { fork = "child" }, { run = "5ms" }]
[[thread]]
name = "child"
instances = 0
affinity = "2-3"
policy = "fifo"
priority = 20
loop = 1
program = [{ run = "2ms" }]
"#;

#[test]
fn a_child_starts_with_its_parent_s_mask_and_policy_then_takes_its_own() {
    let r = sim(PINNED);
    let (parent, child) = (pid(&r, "parent"), pid(&r, "child-0"));
    let (at, on, prio, target) = wakeup_new(&r, child);
    // sched_fork(): the parent's CPU and its nice-0 priority; fork balancing
    // has only CPU 0 in the inherited mask.
    assert_eq!((on, prio, target), (0, 120, 0), "child woken new at {at}");
    // Then its own sched_setaffinity(): the stopper moves it into 2-3...
    let moves = migrations(&r, child);
    assert!(matches!(moves.as_slice(), [(0, 2 | 3)]), "child's migrations: {moves:?}");
    // ...and its own sched_setscheduler(): FIFO 20 is prio 79.
    assert_eq!(prios_out(&r, child).last(), Some(&79), "child ran as FIFO 20 in the end");
    assert!(r.threads.iter().any(|t| t.name == "child-0" && t.finished));
    assert_eq!(r.threads.iter().find(|t| t.name == "parent").unwrap().pid, parent);
}

#[test]
fn fork_balancing_places_an_unpinned_child_on_an_idle_core() {
    let text = PINNED.replace("affinity = \"0\"\n", "").replace("affinity = \"2-3\"\n", "");
    let r = sim(&text);
    let child = pid(&r, "child-0");
    let (_, on, _, target) = wakeup_new(&r, child);
    // smt-2x2: CPUs 0,1 and 2,3 are SMT siblings. The parent runs on CPU
    // `on`; sched_balance_find_dst_cpu() walks the SD_BALANCE_FORK domains
    // down to the idlest group, the other core.
    assert_ne!(target / 2, on / 2, "child placed on CPU {target}, its parent runs on CPU {on}");
    assert!(migrations(&r, child).is_empty(), "placed at wakeup_new, not moved");
}

#[test]
fn forked_threads_are_numbered_and_each_runs_its_program() {
    let text = r#"
topology = "smt-2x2"
[[thread]]
name = "parent"
loop = 5
program = [{ fork = "w" }, { sleep = "1ms" }]
[[thread]]
name = "w"
instances = 0
loop = 3
program = [{ run = "200us" }, { sleep = "100us" }]
"#;
    let r = sim(text);
    let names: Vec<&str> = r.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["parent", "w-0", "w-1", "w-2", "w-3", "w-4"]);
    assert!(r.threads.iter().all(|t| t.finished), "{:?}", r.threads);
    assert!(r.threads[1..].iter().all(|t| t.iterations == 3));
    let pids: Vec<Pid> = r.threads.iter().map(|t| t.pid).collect();
    assert_eq!(pids, [1001, 1002, 1003, 1004, 1005, 1006]);
    // The same seed gives the same trace.
    assert_eq!(sim(text).trace.events, r.trace.events);
}

#[test]
fn a_fork_op_stops_at_rt_app_s_limit() {
    let text = r#"
topology = "smt-2x2"
duration = "10s"
[[thread]]
name = "parent"
program = [{ fork = "w" }, { sleep = "100us" }]
[[thread]]
name = "w"
instances = 0
loop = 1
program = [{ run = "10us" }]
"#;
    match simulate(&scenario(text), &SimOptions::default()) {
        Err(SimError::Workload(m)) => assert!(m.contains("1024") && m.contains("FORKS_LIMIT"), "{m}"),
        other => panic!("expected the fork limit, got {:?}", other.map(|r| r.threads.len())),
    }
}

/// Checks that a streamed run names every task before an event does.
#[derive(Default)]
struct Known {
    table: TaskTable,
    new: Vec<Pid>,
    unknown: Vec<(u64, Pid)>,
}

impl TraceObserver for Known {
    fn start(&mut self, table: &TaskTable) {
        self.table = table.clone();
    }
    fn task_new(&mut self, pid: Pid, info: &TaskInfo) {
        self.new.push(pid);
        self.table.tasks.insert(pid, info.clone());
    }
    fn event(&mut self, e: &Event) {
        let pids = match e.kind {
            EventKind::SchedWakeupNew { pid, .. } | EventKind::SchedWaking { pid, .. } => vec![pid],
            EventKind::SchedSwitch { prev_pid, next_pid, .. } => vec![prev_pid, next_pid],
            _ => vec![],
        };
        for p in pids.into_iter().chain([e.ctx_pid]).filter(|&p| p != 0) {
            if !self.table.tasks.contains_key(&p) {
                self.unknown.push((e.ts, p));
            }
        }
    }
}

#[test]
fn a_streamed_run_hears_of_each_forked_task_before_its_first_event() {
    let mut k = Known::default();
    let r = simulate_observed(&scenario(PINNED), &SimOptions::default(), &mut k, true).unwrap();
    assert_eq!(k.new, [pid(&r, "child-0")]);
    assert!(k.unknown.is_empty(), "events naming unknown pids: {:?}", k.unknown);
    assert_eq!(k.table.comm(pid(&r, "child-0")), "child-0");
}
