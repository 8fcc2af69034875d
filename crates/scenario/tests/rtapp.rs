//! rt-app JSON files read as rt-app reads them: event prefixes in rt-app's
//! order, duplicate keys kept in place, phases and their loops written out,
//! per-phase changes, its resource namespaces; and refused, located, where
//! the model cannot follow.

use schedlab_scenario::{ObjKind, ObjRef, Op, Policy, Repeat, TimerMode};

mod common;
use common::{expect_err, parse};

const US: u64 = 1_000;

fn ops_of<'a>(s: &'a schedlab_scenario::Scenario, thread: &str) -> &'a [Op] {
    &s.thread(thread).unwrap_or_else(|| panic!("no thread {thread}")).program.ops
}

#[test]
fn event_keys_match_by_prefix_in_rt_apps_order_and_duplicates_stay_in_place() {
    let s = parse(
        r#"{
        // a comment, as rt-app files have
        "tasks": { "t": { "loop": 2,
            "run": 100, "runtime1": 200, "sleep": 300, "run": 400, "sleep0": 0, "sleep": 50 } },
        "global": { "duration": 1 }
    }"#,
    )
    .unwrap();
    // json-c keeps one entry per key, where the key first appears, holding
    // its last value: `run` 400 first, `sleep` 50 third.
    let once = [Op::Run { ns: 400 * US }, Op::RunWall { ns: 200 * US }, Op::Sleep { ns: 50 * US }, Op::Sleep { ns: 0 }];
    // Without phases a task's `loop` is its one phase's count (written
    // out), and it then ends.
    assert_eq!(ops_of(&s, "t"), [once.clone(), once].concat());
    assert_eq!(s.thread("t").unwrap().program.repeat, Repeat::Times(1));
    assert_eq!(s.duration_ns, Some(1_000_000_000));
    // Each reduction is said, at the kept entry's line, with what is lost.
    let notes: Vec<&String> = s.notes.iter().filter(|n| n.contains("is written again")).collect();
    assert_eq!(notes.len(), 2, "{:?}", s.notes);
    assert!(notes[0].contains("`run` is written again at line 4") && notes[0].contains("(400), so 100 is never used"));
    assert!(notes[1].contains("`sleep` is written again at line 4") && notes[1].contains("(50), so 300"));
    assert!(notes[0].contains("`run0` and `run1`"), "{}", notes[0]);
}

#[test]
fn a_run_of_zero_is_left_out_and_a_replaced_task_is_one_thread() {
    let s = parse(
        r#"{ "tasks": { "t": { "loop": 1, "run": 0, "sleep": 10 }, "u": { "run": 5 },
                        "t": { "loop": 1, "run": 0,
                               "sleep": 20 } },
             "global": { "duration": 1 } }"#,
    )
    .unwrap();
    // rt-app does nothing for a run of 0; the second `t` replaces the first.
    assert_eq!(ops_of(&s, "t"), [Op::Sleep { ns: 20 * US }]);
    assert_eq!(s.threads.len(), 2);
    // The kept value spans lines, so it is named by its line; the dropped
    // one is short enough to quote.
    let note = s.notes.iter().find(|n| n.contains("`t` is written again at line 2")).expect("a note on `t`");
    assert!(
        note.contains("(the value at line 2), so { \"loop\": 1, \"run\": 0, \"sleep\": 10 } is never used"),
        "{note}"
    );
}

#[test]
fn phases_are_written_out_with_their_loops_and_per_phase_cpus_and_priority() {
    let s = parse(
        r#"{ "tasks": { "t": { "loop": 3, "cpus": [0, 1], "policy": "SCHED_FIFO", "priority": 20,
              "phases": {
                "a": { "loop": 2, "run": 10, "sleep": 20 },
                "b": { "cpus": [2], "priority": 30, "run": 30 } } } },
           "schedlab": { "topology": "qemu-4" } }"#,
    )
    .unwrap();
    let t = s.thread("t").unwrap();
    assert_eq!(t.program.repeat, Repeat::Times(3));
    assert_eq!(t.policy, Policy::Fifo);
    assert_eq!(t.rt_priority, 20);
    assert_eq!(t.affinity.iter().collect::<Vec<_>>(), [0, 1]);
    let cpus = |list: &[usize]| schedlab_scenario::CpuSet::from_iter(list.iter().copied());
    assert_eq!(
        t.program.ops,
        [
            // Phase a follows b when the task loops: b's CPUs are undone.
            Op::SetAffinity { cpus: cpus(&[0, 1]) },
            Op::Run { ns: 10 * US },
            Op::Sleep { ns: 20 * US },
            Op::Run { ns: 10 * US },
            Op::Sleep { ns: 20 * US },
            Op::SetAffinity { cpus: cpus(&[2]) },
            // A phase's priority alone keeps the policy in force.
            Op::SetScheduler { policy: Policy::Fifo, nice: 0, rt_priority: 30 },
            Op::Run { ns: 30 * US },
        ]
    );
}

#[test]
fn suspend_and_resume_share_a_condition_and_mutex_named_apart_from_a_lock_of_the_same_name() {
    let s = parse(
        r#"{ "tasks": {
            "a": { "loop": -1, "run": 100, "resume": "b", "suspend": "a", "lock": "b", "unlock": "b" },
            "b": { "loop": -1, "run": 100, "resume": "a", "suspend": "b" } },
           "global": { "duration": 1, "pi_enabled": true } }"#,
    )
    .unwrap();
    let id = |n: &str| s.object_id(n).unwrap_or_else(|| panic!("no object {n}: {:?}", s.objects));
    // "a" is only a condition+mutex pair of suspend/resume: both kinds, so suffixed.
    let (ca, ma, cb, mb) = (id("a:cond"), id("a:mutex"), id("b:cond"), id("b:mutex"));
    let f = ObjRef::Fixed;
    assert_eq!(
        ops_of(&s, "a"),
        [
            Op::Run { ns: 100 * US },
            Op::Lock { mutex: f(mb) },
            Op::CondBroadcast { cond: f(cb) },
            Op::Unlock { mutex: f(mb) },
            Op::Lock { mutex: f(ma) },
            Op::CondWait { cond: f(ca), mutex: f(ma) },
            Op::Unlock { mutex: f(ma) },
            // rt-app's `lock` "b" is the same (name, mutex) resource resume "b" locks.
            Op::Lock { mutex: f(mb) },
            Op::Unlock { mutex: f(mb) },
        ]
    );
    assert_eq!(s.objects[ma as usize].kind, ObjKind::Mutex { pi: true }, "pi_enabled makes every mutex PI");
    assert_eq!(s.objects[ca as usize].kind, ObjKind::Cond);
}

#[test]
fn timers_are_shared_by_name_per_thread_when_unique_and_absolute_if_any_use_says_so() {
    let s = parse(
        r#"{ "tasks": {
            "p": { "instance": 2, "loop": -1, "run": 100, "timer": { "ref": "unique", "period": 1000 } },
            "q": { "loop": -1, "run": 100, "timer": { "ref": "tick", "period": 2000 } },
            "r": { "loop": -1, "run": 100, "timer": { "ref": "tick", "period": 2000, "mode": "absolute" } } },
           "global": { "duration": 1 } }"#,
    )
    .unwrap();
    let grid = |thread: &str| match ops_of(&s, thread)[1] {
        Op::GridTimer { timer, period_ns, mode } => (s.objects[timer as usize].name.clone(), period_ns, mode),
        ref other => panic!("{other:?}"),
    };
    assert_eq!(grid("p-0"), ("p/unique/0".to_string(), 1_000 * US, TimerMode::Relative));
    assert_eq!(grid("p-1").0, "p/unique/1", "each instance has its own unique timer");
    assert_eq!(
        grid("q"),
        ("tick".to_string(), 2_000 * US, TimerMode::Absolute),
        "one absolute use makes the timer absolute"
    );
    assert_eq!(grid("r").0, "tick");
}

#[test]
fn wait_sync_and_barrier_become_cond_waits_and_a_counted_barrier() {
    let s = parse(
        r#"{ "tasks": {
            "w": { "loop": -1, "lock": "m", "wait": { "ref": "c", "mutex": "m" }, "unlock": "m", "barrier": "b" },
            "s": { "instance": 2, "loop": -1, "lock": "m", "sync": { "ref": "c", "mutex": "m" }, "unlock": "m",
                   "barrier": "b" } },
           "global": { "duration": 1 } }"#,
    )
    .unwrap();
    let (c, m, b) = (s.object_id("c").unwrap(), s.object_id("m").unwrap(), s.object_id("b").unwrap());
    let f = ObjRef::Fixed;
    assert_eq!(ops_of(&s, "s-1")[1..3], [Op::CondSignal { cond: f(c) }, Op::CondWait { cond: f(c), mutex: f(m) }]);
    assert_eq!(s.objects[b as usize].kind, ObjKind::Barrier { users: 3 }, "one user per thread that arrives");
}

#[test]
fn global_settings_and_the_schedlab_section() {
    let s = parse(
        r#"{ "tasks": { "t": { "loop": 5, "run": 100, "policy": "SCHED_OTHER", "priority": -5, "delay": 1000 } },
           "global": { "duration": 3, "calibration": "CPU0", "logdir": "./", "lock_pages": false, "ftrace": true },
           "schedlab": { "topology": "smt-2x2", "kernel": "6.12", "features": ["NO_DELAY_DEQUEUE"], "seed": 7 } }"#,
    )
    .unwrap();
    assert_eq!(s.topology_ref, "smt-2x2");
    assert_eq!(s.seed, 7);
    assert_eq!(s.features.len(), 1);
    let t = s.thread("t").unwrap();
    assert_eq!((t.nice, t.start_delay_ns), (-5, 1_000 * US), "priority is nice for fair policies; delay in us");
    assert!(s.notes.iter().any(|n| n.contains("calibration")), "{:?}", s.notes);
}

#[test]
fn a_file_without_duration_whose_tasks_loop_forever_runs_ten_seconds_and_says_so() {
    let s = parse(r#"{ "tasks": { "t": { "loop": -1, "run": 100, "sleep": 100 } } }"#).unwrap();
    assert_eq!(s.duration_ns, Some(10_000_000_000));
    assert!(s.notes.iter().any(|n| n.contains("stops after 10 s")), "{:?}", s.notes);
    let s = parse(r#"{ "tasks": { "t": { "loop": 3, "run": 100 } } }"#).unwrap();
    assert_eq!(s.duration_ns, None, "a task that ends needs no duration");
}

#[test]
fn what_the_model_cannot_follow_is_refused_where_it_is_written() {
    let one = |body: &str| format!("{{ \"tasks\": {{ \"t\": {{ {body} }} }},\n \"global\": {{ \"duration\": 1 }} }}");
    expect_err(&one("\"run\": 100,\n \"mem\": 1000"), 2, "\"mem\"", "memory and I/O load is not modeled");
    expect_err(&one("\"run\": 100,\n \"iorun\": 1000"), 2, "\"iorun\"", "not modeled");
    expect_err(&one("\"run\": 100,\n \"sem_wait\": \"x\""), 2, "\"sem_wait\"", "semaphores");
    expect_err(
        &one("\"run\": 100,\n \"dl-runtime\": 1000"),
        2,
        "\"dl-runtime\"",
        "apply to \"policy\": \"SCHED_DEADLINE\" only",
    );
    expect_err(
        "{ \"tasks\": { \"t\": { \"policy\": \"SCHED_FIFO\", \"phases\": { \"p\": { \"run\": 100,\n \"taskgroup\": \"/a\" } } } } }",
        2,
        "\"taskgroup\"",
        "SCHED_OTHER tasks only",
    );
    expect_err(
        &one("\"run\": 100, \"policy\": \"SCHED_FIFO\",\n \"taskgroup\": \"/a\""),
        2,
        "\"taskgroup\"",
        "SCHED_OTHER tasks only",
    );
    expect_err(&one("\"run\": 100,\n \"util_min\": 1025"), 2, "1025", "out of range");
    expect_err(&one("\"run\": 100,\n \"policy\": \"SCHED_DEADLINE\""), 2, "SCHED_DEADLINE", "");
    expect_err(&one("\"run\": 100,\n \"exec\": 5000"), 2, "\"exec\"", "pre-1.0 grammar");
    expect_err(&one("\"run\": 100,\n \"prority\": 5"), 2, "\"prority\"", "in case it is a typo");
    expect_err(&one("\"run\": \n \"100\""), 2, "\"100\"", "integer number of microseconds");
    expect_err(&one("\"sleep\": \n false"), 2, "false", "integer number of microseconds");
    expect_err(&one("\"run\": 100,\n \"lock_order\": [\"a\"]"), 2, "[", "expected a string");
    expect_err(
        &one("\"run\": 100, \"timer\": {\n \"ref\": \"t\", \"peroid\": 5 }"),
        2,
        "\"peroid\"",
        "not a timer key",
    );
    expect_err(&one("\"loop\": 1"), 1, "\"t\"", "has no events");
    expect_err("{ \"tasks\": { \"t\": { \"run\": 100 } },\n \"globl\": {} }", 2, "\"globl\"", "not an rt-app section");
    expect_err(
        "{ \"tasks\": { \"t\": { \"run\": 100 } },\n \"global\": { \"durtion\": 1 } }",
        2,
        "\"durtion\"",
        "not a key rt-app reads",
    );
    expect_err(
        "{ \"tasks\": { \"t\": { \"run\": 100 } },\n \"schedlab\": { \"topo\": 1 } }",
        2,
        "\"topo\"",
        "not a schedlab setting",
    );
    // An object left open is reported where it opens.
    expect_err("{ \"tasks\": { \"t\": {\n \"run\": 100, } ", 1, "{ \"t\"", "invalid JSON: Unterminated object");
    expect_err("{ \"tasks\": { \"t\": {\n \"run\" 100 } } }", 2, "100", "invalid JSON: Expected colon");
    expect_err("{ \"global\": {\n} }", 1, "{", "no `tasks` section");
    // The builder's own checks are located in the JSON text too.
    expect_err(&one("\"run\": 100,\n \"cpus\": [9]"), 2, "[9]", "");
}

#[test]
fn phase_loops_that_a_single_program_loop_cannot_hold_are_refused() {
    let text = "{ \"tasks\": { \"t\": { \"phases\": {\n \"a\": { \"run\": 10 },\n \"b\": { \"loop\": -1, \"run\": 10 } } } } }";
    expect_err(text, 3, "-1", "not the task's only phase");
    let text = "{ \"tasks\": { \"t\": { \"phases\": {\n \"a\": { \"loop\": 60000, \"run\": 10, \"sleep\": 10 } } } },\n \"global\": { \"duration\": 1 } }";
    expect_err(text, 2, "60000", "more than the 100000");
    // Loops times instances are bounded over the whole file.
    let text = "{ \"tasks\": {\n \"t\": { \"instance\": 100, \"phases\": { \"a\": { \"loop\": 10000, \"run\": 10, \"sleep\": 10 } } } },\n \"global\": { \"duration\": 1 } }";
    expect_err(text, 2, "\"t\"", "more than the 1000000 a scenario may hold");
    // The only phase looping forever: the program loops forever.
    let s = parse("{ \"tasks\": { \"t\": { \"loop\": 2, \"phases\": { \"a\": { \"loop\": -1, \"run\": 10 } } } }, \"global\": { \"duration\": 1 } }").unwrap();
    assert_eq!(s.thread("t").unwrap().program.repeat, Repeat::Forever);
}

#[test]
fn fork_creates_threads_of_a_task_that_instance_0_keeps_from_starting() {
    let s = parse(
        r#"{ "tasks": {
            "parent": { "loop": 3, "run": 2000, "fork": "child", "sleep": 5000 },
            "child": { "instance": 0, "loop": 2, "run": 1000, "sleep": 1000 } },
           "global": { "duration": 1 } }"#,
    )
    .unwrap();
    assert_eq!(s.threads.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["parent"]);
    assert_eq!(ops_of(&s, "parent")[1], Op::Fork { template: 0 });
    // Its loop of 2, written out as rt-app's tasks are.
    let runs = s.templates[0].program.ops.iter().filter(|o| **o == Op::Run { ns: 1_000 * US }).count();
    assert_eq!(runs, 2, "{:?}", s.templates[0].program);

    let one = |child: &str| {
        format!(
            "{{ \"tasks\": {{ \"p\": {{ \"run\": 100, \"fork\": \"c\" }},\n \"c\": {{ {child} }} }}, \"global\": {{ \"duration\": 1 }} }}"
        )
    };
    expect_err(
        &one("\"instance\": 0, \"run\": 100, \"timer\": { \"ref\": \"unique\", \"period\": 1000 }"),
        2,
        "unique\"",
        "rt-app's `unique`",
    );
    expect_err(&one("\"instance\": 0, \"barrier\": \"b\""), 2, "b\"", "rt-app refuses `barrier` with `fork`");
    expect_err(
        "{ \"tasks\": { \"p\": { \"run\": 100,\n \"fork\": \"nobody\" } }, \"global\": { \"duration\": 1 } }",
        2,
        "nobody\"",
        "no [[thread]] table has that name",
    );
}

#[test]
fn a_task_s_taskgroup_is_a_cgroup_with_every_level_of_its_path() {
    let s = parse(
        "{ \"tasks\": { \"a\": { \"taskgroup\": \"/tg1/tg2\", \"run\": 100 }, \"b\": { \"taskgroup\": \"/tg1\", \
         \"run\": 100 }, \"c\": { \"taskgroup\": \"\", \"run\": 100 } }, \"global\": { \"duration\": 1 } }",
    )
    .unwrap();
    let names: Vec<&str> = s.cgroups.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["tg1", "tg1/tg2"]);
    assert!(s.cgroups.iter().all(|c| c.weight.is_none() && c.controls_cpu()), "rt-app sets nothing: default weight");
    let of = |n: &str| s.thread(n).unwrap().cgroup.map(|k| s.cgroups[k].name.as_str());
    assert_eq!((of("a"), of("b"), of("c")), (Some("tg1/tg2"), Some("tg1"), None), "\"\" is no taskgroup");
}

#[test]
fn a_phase_s_taskgroup_moves_the_thread_at_the_phase_start_when_it_changes() {
    // p1 in /a, p2 keeps it (no taskgroup), p3 in /b; the task loops, so p1
    // moves back from /b each pass. The task itself starts in /a: the first
    // pass would not need p1's move, later ones do, so it stays.
    let s = parse(
        "{ \"tasks\": { \"t\": { \"taskgroup\": \"/a\", \"phases\": { \"p1\": { \"run\": 100, \"taskgroup\": \"/a\" }, \
         \"p2\": { \"run\": 100 }, \"p3\": { \"run\": 100, \"taskgroup\": \"/b\" } } } }, \"global\": { \"duration\": 1 } }",
    )
    .unwrap();
    let names: Vec<&str> = s.cgroups.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "a phase's group gets its table too");
    let t = s.thread("t").unwrap();
    let moves: Vec<Option<&str>> = t
        .program
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::SetCgroup { cgroup } => Some(cgroup.map(|k| s.cgroups[k].name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(moves, [Some("a"), Some("b")]);
    assert_eq!(t.cgroup.map(|k| s.cgroups[k].name.as_str()), Some("a"));
    // Run once, with the same group throughout: no move at all.
    let s = parse(
        "{ \"tasks\": { \"t\": { \"taskgroup\": \"/a\", \"loop\": 1, \"phases\": { \"p1\": { \"run\": 100, \"taskgroup\": \"/a\" } } } }, \
         \"global\": { \"duration\": 1 } }",
    )
    .unwrap();
    assert!(!s.thread("t").unwrap().moves_cgroup());
}
