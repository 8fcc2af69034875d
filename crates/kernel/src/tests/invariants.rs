//! The scoped invariant check ([`Kernel::check_touched`]): it finds what an
//! entry broke on the runqueues and tasks the entry touched, and only those.

use super::common::{fair_task, kernel_with, start_fair, task_with, TestKernel};
use crate::invariants::RQ_BUDGET;
use crate::{Policy, TaskId};
use schedlab_topology::Topology;

/// Two fair tasks on CPU 0 of a 4-CPU machine, one running, one waiting;
/// what the setup touched is already checked.
fn two_on_cpu0() -> (TestKernel, TaskId, TaskId) {
    let mut k = kernel_with(Topology::preset("smt-2x2").unwrap(), "6.12", &[], 1);
    k.track_touched(true);
    let a = fair_task(&mut k, 1, "0", 0);
    let b = fair_task(&mut k, 2, "0", 0);
    start_fair(&mut k, a, 0);
    start_fair(&mut k, b, 0);
    k.check_touched().unwrap();
    (k, a, b)
}

#[test]
fn a_corrupted_runqueue_is_caught_at_the_next_entry_that_touches_it() {
    let (k, a, b) = two_on_cpu0();
    let waiting = if k.rqs[0].curr == Some(a) { b } else { a };
    type Corrupt = fn(&mut TestKernel, TaskId);
    let corruptions: [(&str, Corrupt); 5] = [
        ("nr_running", |k, _| k.rqs[0].nr_running += 1),
        ("avg_vruntime", |k, _| k.rqs[0].cfs.avg_load += 1),
        ("h_nr_queued", |k, _| k.rqs[0].cfs.h_nr_queued += 1),
        ("cfs_tasks", |k, w| k.rqs[0].cfs.tasks.retain(|&t| t != w)),
        ("se.on_rq", |k, w| k.tasks[w as usize].se.on_rq = false),
    ];
    for (what, corrupt) in corruptions {
        let mut broken = k.clone();
        corrupt(&mut broken, waiting);
        // Nothing touched since the last check: the scoped check looks at nothing.
        broken.check_touched().unwrap();
        // A tick on CPU 0 touches its runqueue and curr; a wakeup attempt the waiting task.
        broken.sched_tick(0, 100_000);
        broken.try_to_wake_up(waiting, 100_000, 0, 0);
        let err = broken.check_touched().expect_err(what).to_string();
        assert!(err.contains(what) || what == "se.on_rq", "{what}: {err}");
        assert!(broken.check_invariants().is_err(), "the full recount agrees: {what}");
    }
}

#[test]
fn a_runqueue_the_entry_did_not_touch_is_left_to_the_full_recount() {
    let (mut k, _, _) = two_on_cpu0();
    k.rqs[3].nr_running += 1;
    k.sched_tick(0, 100_000);
    k.check_touched().unwrap();
    let err = k.check_invariants().unwrap_err().to_string();
    assert!(err.contains("CPU 3"), "{err}");
}

#[test]
fn a_long_runqueue_is_checked_within_its_budget_of_touches() {
    let mut k = kernel_with(Topology::preset("smt-2x2").unwrap(), "6.12", &[], 1);
    k.track_touched(true);
    // Four times the budget of RT tasks queued on CPU 2, allowed on 2-3 (pushable).
    let n = 4 * RQ_BUDGET;
    for i in 0..n {
        let t = task_with(&mut k, 10 + i as i32, Policy::Fifo, 10, "2-3", 2);
        k.wake_up_new_task(t, 0, 2);
    }
    k.schedule(2, 0, true);
    k.check_touched().unwrap();
    k.check_invariants().unwrap();
    // What the check costs on this runqueue: its queued and pushable entries.
    let size = k.rqs[2].nr_running as usize + k.rqs[2].rt.pushable.len();
    k.rqs[2].rt.rt_nr_running += 1;
    let mut caught_after = None;
    for touch in 1..=n {
        k.sched_tick(2, touch as u64 * 1_000_000);
        if k.check_touched().is_err() {
            caught_after = Some(touch);
            break;
        }
    }
    let touches = caught_after.expect("a long runqueue is still checked");
    assert!(touches > 1, "a runqueue of {n} is not checked at every touch");
    assert!(touches <= size / RQ_BUDGET + 1, "caught after {touches} touches of a runqueue of {size}");
}
