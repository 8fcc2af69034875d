//! The `[schbench]` generator: what its table expands into, and bad keys
//! refused with file:line:col.

use std::path::Path;

use schedlab_scenario::{ObjKind, ObjRef, Op, Scenario};

mod common;
use common::{expect_err, parse};

/// A scenario on `sapphire-rapids-2s` whose `[schbench]` table is `body`.
fn table(body: &str) -> String {
    format!("topology = \"sapphire-rapids-2s\"\n[schbench]\n{body}\n")
}

#[test]
fn seed_004_command_line_expands_into_4_pinned_message_threads_and_512_free_workers() {
    let s = Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/schbench-spr.toml")).unwrap();
    let sb = s.schbench.as_ref().unwrap();
    assert_eq!((sb.message_threads, sb.workers_per_message_thread, sb.total_workers()), (4, 128, 512));
    assert_eq!(s.threads.len(), 4 + 512);
    assert_eq!(s.duration_ns, Some(60_000_000_000), "-r 60 is the run's duration");
    for m in 0..4 {
        let t = &s.threads[sb.first_thread + m];
        assert_eq!(t.affinity.iter().collect::<Vec<_>>(), vec![m], "-M auto pins message thread {m} to CPU {m}");
        // run_msg_thread(): td->futex = FUTEX_BLOCKED, xlist_wake_all(), fwait().
        let [Op::FutexReset { futex: reset }, Op::WakeList { .. }, Op::FutexWait { futex: waited }] =
            &t.program.ops[..]
        else {
            panic!("{:?}", t.program.ops)
        };
        assert_eq!(reset, waited, "the message thread resets and waits on its own futex");
    }
    // main@24e32b8's auto pinning leaves the workers every CPU.
    let w = &s.threads[sb.worker_thread(3, 127)];
    assert_eq!(w.name, "sb-w3-127");
    assert_eq!(w.affinity.len(), 224);
    // list_add, fpost of the message thread's futex, fwait on its own,
    // usleep(100) by a thread with 50 us of timer slack; -n 0: no math.
    let ops = &w.program.ops;
    let [Op::ListAdd { list, futex: own }, Op::FutexPost { futex: msg }, Op::FutexWait { futex: waited }, Op::Sleep { ns: 100_000 }] =
        &ops[..]
    else {
        panic!("{ops:?}")
    };
    assert_eq!(w.timer_slack_ns, 50_000);
    assert_eq!(own, waited);
    let name = |r: &ObjRef| match r {
        ObjRef::Fixed(id) => s.objects[*id as usize].name.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (name(list), name(own), name(msg)),
        ("schbench-list3".into(), "schbench-wf3.127".into(), "schbench-mf3".into())
    );
    assert_eq!(s.objects[s.object_id("schbench-list3").unwrap() as usize].kind, ObjKind::WakeList);
    assert_eq!(s.objects[s.object_id("schbench-wf3.127").unwrap() as usize].kind, ObjKind::Futex);
}

#[test]
fn fixed_auto_pinning_keeps_workers_off_the_message_cpus_and_math_is_cpu_time() {
    let s = parse(&table("message_threads = 2\nworkers = 3\nno_lock = true\nmessage_cpus = \"auto\"\nauto_pin = \"fixed\"\noperations = 2\ncache_footprint = 256")).unwrap();
    let sb = s.schbench.unwrap();
    assert!(!sb.worker_cpus.contains(0) && !sb.worker_cpus.contains(1) && sb.worker_cpus.contains(2));
    // side = sqrt(256·1024/3/8) = 104; 104³ multiply-adds at 3 ns.
    assert_eq!(sb.op_ns, 104 * 104 * 104 * 3);
    let w = &s.threads[sb.worker_thread(1, 2)];
    assert_eq!(w.program.ops.last(), Some(&Op::Run { ns: 2 * sb.op_ns }));
    // An explicit -M list pins round-robin.
    let s = parse(&table("message_threads = 3\nworkers = 1\nno_lock = true\nmessage_cpus = \"8,9\"")).unwrap();
    assert_eq!(s.schbench.unwrap().message_cpus, vec![Some(8), Some(9), Some(8)]);
}

#[test]
fn without_no_lock_each_request_holds_its_cpus_lock_around_the_work() {
    // schbench's default (no -L): do_work() takes the per-CPU lock even with -n 0.
    for (body, run) in [("workers = 2", true), ("workers = 2\noperations = 0", false)] {
        let s = parse(&table(body)).unwrap();
        let locks = s.object_id("schbench-cpulocks").expect("the lock array");
        assert_eq!(s.objects[locks as usize].kind, ObjKind::CpuLocks);
        let sb = s.schbench.as_ref().unwrap();
        let ops = &s.threads[sb.worker_thread(0, 1)].program.ops;
        let at = ops.iter().position(|o| *o == Op::LockCpu { locks }).expect("lock_cpu");
        let tail: Vec<&Op> = ops[at..].iter().collect();
        if run {
            assert_eq!(tail, [&Op::LockCpu { locks }, &Op::Run { ns: 5 * sb.op_ns }, &Op::UnlockCpu { locks }]);
        } else {
            assert_eq!(tail, [&Op::LockCpu { locks }, &Op::UnlockCpu { locks }]);
        }
    }
    // -L: neither the array nor the ops.
    let s = parse(&table("workers = 2\nno_lock = true")).unwrap();
    assert!(s.object_id("schbench-cpulocks").is_none());
    assert!(s.threads.iter().all(|t| t
        .program
        .ops
        .iter()
        .all(|o| !matches!(o, Op::LockCpu { .. } | Op::UnlockCpu { .. }))));
}

#[test]
fn bad_keys_are_refused_at_their_line() {
    expect_err(&table("no_lock = true\nmesage_threads = 4"), 4, "mesage_threads", "unknown field");
    expect_err(&table("no_lock = true\nworkers = 0"), 4, "0", "`workers` = 0 is out of range");
    expect_err(&table("no_lock = true\nruntime = 60"), 4, "60", "schbench's -r is seconds");
    expect_err(&table("no_lock = true\nsleep = \"100 parsecs\""), 4, "\"100", "`sleep`");
    expect_err(&table("no_lock = true\nmessage_cpus = \"0-999\""), 4, "\"0-999\"", "message_cpus");
    expect_err(&table("no_lock = true\nworker_cpus = \"x\""), 4, "\"x\"", "worker_cpus");
    expect_err(&table("no_lock = true\nauto_pin = \"maybe\""), 4, "\"maybe\"", "unknown auto_pin");
    expect_err(&table("no_lock = true\nrequests_per_sec = 1000"), 4, "1000", "not modelled yet");
    expect_err(&table("no_lock = true\nmessage_threads = \"four\""), 4, "\"four\"", "expected i64");
    // Each count is in range, their product is not: time and memory grow with threads.
    let e = parse(&table("no_lock = true\nmessage_threads = 64\nworkers = 4096")).unwrap_err();
    assert!(e.message.contains("64 x (4096 + 1) = 262208 threads"), "{e}");
    assert!(e.message.contains("more than the 16384"), "{e}");
    let beside = "topology = \"sapphire-rapids-2s\"\n[[thread]]\nname = \"t\"\ninstances = 1000\nprogram = [{ run = \"1ms\" }]\n\
                  [schbench]\nno_lock = true\nmessage_threads = 16\nworkers = 1000\n";
    let e = parse(beside).unwrap_err();
    assert!(e.message.contains("beside 1000 from [[thread]] tables"), "{e}");
    assert!(parse(&table("no_lock = true\nmessage_threads = 16\nworkers = 1000")).is_ok());
    // Values whose sums would overflow (found by the mutation proptest).
    expect_err(&table("no_lock = true\nsleep = \"9223372036854775807ns\""), 4, "\"9223372036854775807ns\"", "too long");
    // schbench's -s counts microseconds: a bare number is refused (issue 40).
    expect_err(&table("no_lock = true\nsleep = 100"), 4, "100", "such as \"100us\"");
    expect_err(&table("no_lock = true\ntimer_slack = \"11s\""), 4, "\"11s\"", "too long");
    expect_err(&table("no_lock = true\noperations = 1000000\nop_time = \"1ms\""), 4, "1000000", "10s of work");
}

#[test]
fn schbench_threads_may_not_take_a_thread_name_already_used() {
    let text = "topology = \"smt-2x2\"\n[[thread]]\nname = \"sb-msg-0\"\nprogram = [{ run = \"1ms\" }]\n[schbench]\nno_lock = true\nworkers = 1\n";
    let e = parse(text).unwrap_err();
    assert_eq!(e.line, 5, "{e}");
    assert!(e.message.contains("sb-msg-0"), "{e}");
}

#[test]
fn sleep_zero_means_no_usleep_at_all() {
    // schbench calls usleep() only for -s > 0: no timer slack either.
    let s = parse(&table("no_lock = true\nworkers = 1\noperations = 0\nsleep = \"0us\"")).unwrap();
    let sb = s.schbench.as_ref().unwrap();
    let ops = &s.threads[sb.worker_thread(0, 0)].program.ops;
    assert!(!ops.iter().any(|o| matches!(o, Op::Sleep { .. })), "{ops:?}");
}
