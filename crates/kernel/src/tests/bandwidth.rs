//! CFS bandwidth's two throttling models on one CPU: 6.12 takes the
//! throttled group's entity off its parent with the tasks still queued
//! below; 6.18's task-based model (the mainline profile) leaves the group
//! queued and moves each task it picks to the cfs_rq's limbo list, and
//! unthrottling enqueues them one by one. The rest of the mainline
//! profile is the same in both runs here.

use super::common::*;
use crate::{Profile, TaskId, TimerKind};
use schedlab_topology::Topology;

const MS: u64 = 1_000_000;

struct Setup {
    k: TestKernel,
    tg: usize,
    group: [TaskId; 2],
    other: TaskId,
    /// The first tick at which the group was throttled.
    throttled_at: u64,
}

/// Two hogs in a group with 5 ms of quota per 100 ms and one hog outside
/// it, all on CPU 0 of qemu-4, ticking every ms until the group is
/// throttled. `task_based` picks the throttling model.
fn throttled(task_based: bool) -> Setup {
    let mut profile = Profile::by_name("mainline").unwrap();
    profile.task_based_throttle = task_based;
    let mut k = kernel_of(Topology::preset("qemu-4").unwrap(), profile, &[], 1);
    let tg = k.create_task_group("capped", 0, 1024, false);
    k.set_cfs_bandwidth(tg, 5 * MS, 100 * MS, 0, 0);
    let group = [fair_task(&mut k, 1, "0", 0), fair_task(&mut k, 2, "0", 0)];
    let other = fair_task(&mut k, 3, "0", 0);
    for &t in &group {
        k.sched_move_task(t, tg, 0, 0);
    }
    for t in [group[0], group[1], other] {
        start_fair(&mut k, t, 0);
    }
    let q = k.task_groups[tg].cfs_rq[0];
    for ms in 1..=40 {
        let now = ms * MS;
        k.sched_tick(0, now);
        if k.need_resched(0, true) {
            k.schedule(0, now, true);
        }
        k.check_invariants().unwrap_or_else(|e| panic!("{ms} ms: {e}"));
        if k.cfs(q).throttled {
            return Setup { k, tg, group, other, throttled_at: now };
        }
    }
    panic!("the group was never throttled");
}

#[test]
fn a_6_12_throttle_hides_the_group_with_its_tasks_queued_below() {
    let Setup { k, tg, group, other, .. } = throttled(false);
    let q = k.task_groups[tg].cfs_rq[0];
    for &t in &group {
        assert!(k.tasks[t as usize].se.on_rq && !k.tasks[t as usize].throttled, "queued below the throttled group");
    }
    assert!(k.cfs(q).limbo.is_empty());
    assert!(!k.tasks[k.cfs(q).se.unwrap() as usize].se.on_rq, "the group's entity left the root");
    assert_eq!((k.rqs[0].nr_running, k.curr(0)), (1, Some(other)));
}

#[test]
fn a_task_based_throttle_sends_each_picked_task_to_limbo_and_unthrottling_wakes_them() {
    let Setup { mut k, tg, group, other, throttled_at } = throttled(true);
    let q = k.task_groups[tg].cfs_rq[0];
    // The pick that found the group throttled moved its tasks to limbo one
    // by one: runnable (on_rq), off the tree, not counted.
    for &t in &group {
        let task = &k.tasks[t as usize];
        assert!(task.throttled && !task.se.on_rq && task.on_rq == crate::sched::OnRq::Queued, "task {t}");
    }
    let mut limbo = k.cfs(q).limbo.clone();
    limbo.sort();
    assert_eq!(limbo, group.to_vec());
    assert!(!k.tasks[k.cfs(q).se.unwrap() as usize].se.on_rq, "emptied, the group's entity left too");
    assert_eq!((k.rqs[0].nr_running, k.curr(0)), (1, Some(other)));
    // cpu.stat's throttled time runs from the first task throttled.
    assert_eq!(k.cfs(q).throttled_clock, Some(k.rqs[0].clock));

    // The period timer refills the pool: both come back as wakeups.
    let refill = throttled_at + 100 * MS;
    k.cfs_bandwidth_timer(TimerKind::CfsPeriod(tg), 0, refill);
    k.check_invariants().unwrap();
    for &t in &group {
        assert!(k.tasks[t as usize].se.on_rq && !k.tasks[t as usize].throttled, "task {t} queued again");
    }
    assert!(k.cfs(q).limbo.is_empty() && !k.cfs(q).throttled);
    assert_eq!(k.rqs[0].nr_running, 3);
    let (_, nr_throttled, throttled_ns) = k.cfs_bandwidth_stat(tg).unwrap();
    assert!(nr_throttled >= 1 && throttled_ns > 90 * MS, "{nr_throttled} {throttled_ns}");
}

#[test]
fn a_task_woken_into_a_throttled_group_is_counted_until_it_is_picked() {
    // The same two models, with one group task asleep when the group is
    // throttled and woken afterwards.
    for task_based in [false, true] {
        let Setup { mut k, tg, throttled_at, .. } = throttled(task_based);
        let q = k.task_groups[tg].cfs_rq[0];
        let sleeper = fair_task(&mut k, 4, "0", 0);
        k.sched_move_task(sleeper, tg, throttled_at, 0);
        let now = throttled_at + MS / 2;
        k.wake_up_new_task(sleeper, now, 0);
        k.check_invariants().unwrap_or_else(|e| panic!("task_based {task_based}: {e}"));
        if task_based {
            // Queued with its group's entity back at the root: counted.
            assert!(k.tasks[sleeper as usize].se.on_rq && !k.tasks[sleeper as usize].throttled);
            assert_eq!(k.rqs[0].nr_running, 2);
            // The first pick of the group sends it to limbo.
            let mut t = now;
            while !k.tasks[sleeper as usize].throttled {
                t += MS;
                assert!(t < now + 50 * MS, "never picked");
                k.sched_tick(0, t);
                k.schedule(0, t, true);
                k.check_invariants().unwrap();
            }
            assert_eq!(k.rqs[0].nr_running, 1);
            assert_eq!(k.cfs(q).limbo.len(), 3);
        } else {
            // Queued below the throttled cfs_rq: nothing above sees it.
            assert!(k.tasks[sleeper as usize].se.on_rq && k.cfs(q).nr_running == 3);
            assert_eq!(k.rqs[0].nr_running, 1);
        }
    }
}
