use super::*;
use proptest::prelude::*;

const US: u64 = 1024; // one PELT time unit in ns
const PERIOD_NS: u64 = 1024 * US;
const MS: u64 = 1_000_000;

/// y^n as 2^32 fixed point, computed independently with f64.
fn y_pow_fixed(n: u32) -> f64 {
    (u32::MAX as f64) * 0.5f64.powf(n as f64 / 32.0)
}

#[test]
fn table_matches_y_pow_n() {
    for n in 0..32u32 {
        let want = y_pow_fixed(n).floor();
        let got = RUNNABLE_AVG_YN_INV[n as usize] as f64;
        assert!((got - want).abs() <= 1.0, "n={n}: table {got} vs 2^32·y^n {want}");
        let exact = 4294967296.0 * 0.5f64.powf(n as f64 / 32.0);
        assert!((got - exact).abs() < 2.0, "n={n}");
    }
    // y^16 = 1/sqrt(2)
    assert_eq!(RUNNABLE_AVG_YN_INV[16] as f64, ((u32::MAX as f64) / 2f64.sqrt()).floor());
}

#[test]
fn load_avg_max_is_the_integer_fixed_point() {
    // Independent: iterate s = ⌊s·y⌋ + 1024 with y from f64, in u128.
    let y1 = y_pow_fixed(1).floor() as u128;
    let mut s: u128 = 0;
    loop {
        let next = ((s * y1) >> 32) + 1024;
        if next == s {
            break;
        }
        s = next;
    }
    assert_eq!(s as u64, LOAD_AVG_MAX);
    // And it sits just below the real series sum 1024/(1-y).
    let real = 1024.0 / (1.0 - 0.5f64.powf(1.0 / 32.0));
    assert!(real - (LOAD_AVG_MAX as f64) < 64.0 && real > LOAD_AVG_MAX as f64);
    assert_eq!(PELT_MIN_DIVIDER, 46718);
}

#[test]
fn decay_load_halves_every_period() {
    // 47742 >> 1 = 23871, then · (2^32−1) >> 32 loses one.
    assert_eq!(decay_load(LOAD_AVG_MAX, 32), 23870);
    assert!((decay_load(LOAD_AVG_MAX, 32) as i64 - (LOAD_AVG_MAX / 2) as i64).abs() <= 1);
    assert_eq!(decay_load(LOAD_AVG_MAX * 1024, 64), (LOAD_AVG_MAX * 1024 / 4) - 1);
    // 0 periods: the 0xffffffff entry, so x − 1 for 0 < x < 2^32 (kernel behaviour).
    assert_eq!(decay_load(1024, 0), 1023);
    assert_eq!(decay_load(0, 0), 0);
    assert_eq!(decay_load(1 << 40, 0), (1 << 40) - (1 << 8));
    // Past 63 half-lives everything is gone, even u64::MAX.
    assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 63 + 1), 0);
    assert_eq!(decay_load(u64::MAX, u64::MAX), 0);
    assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 64), 0);
    assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 64 + 31), 0);
    // At 63 half-lives u64::MAX >> 63 = 1, then ·y^0 → 0.
    assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 63), 0);
    // At 62: 3, times y^0 → 2.
    assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 62), 2);
    // One period: ⌊1024·y⌋ with the independent y.
    assert_eq!(decay_load(1024, 1), ((1024u128 * y_pow_fixed(1).floor() as u128) >> 32) as u64);
    assert_eq!(decay_load(1024, 1), 1002);
}

#[test]
fn segments_of_whole_periods() {
    // One full period from a period boundary: d1 = 1024 decayed once, c2 = 0.
    assert_eq!(accumulate_pelt_segments(1, 1024, 0), 1002);
    // Many periods approach LOAD_AVG_MAX.
    let c = accumulate_pelt_segments(2000, 1024, 0);
    assert!(c as u64 <= LOAD_AVG_MAX && c as u64 >= LOAD_AVG_MAX - 1024 - 2, "{c}");
}

#[test]
fn small_deltas_accumulate_without_decay() {
    let mut sa = SchedAvg::default();
    // 500 ns is below one unit: nothing happens.
    assert!(!update_entity_avg(500, &mut sa, 1024, true, true, true));
    assert_eq!(sa, SchedAvg::default());
    // 100 units inside the first period: sums grow linearly, avg untouched.
    assert!(!update_entity_avg(100 * US + 500, &mut sa, 1024, true, true, true));
    assert_eq!(sa.last_update_time, 100 * US);
    assert_eq!(sa.period_contrib, 100);
    assert_eq!(sa.load_sum, 100);
    assert_eq!(sa.runnable_sum, 100 << 10);
    assert_eq!(sa.util_sum, 100 << 10);
    assert_eq!(sa.util_avg, 0);
    // Time going backwards only resets the stamp.
    let before = sa;
    assert!(!update_entity_avg(50 * US, &mut sa, 1024, true, true, true));
    assert_eq!(sa, SchedAvg { last_update_time: 50 * US, ..before });
}

#[test]
fn load_zero_clears_runnable_and_running() {
    let mut a = SchedAvg::default();
    update_load_sum(10 * PERIOD_NS, &mut a, 0, 5, true);
    assert_eq!((a.load_sum, a.runnable_sum, a.util_sum), (0, 0, 0));
}

/// Running one full period from a fresh average, then idle for 32 periods.
#[test]
fn one_period_then_half_life_by_hand() {
    let y1 = y_pow_fixed(1).floor() as u128; // 0xfa83b2da
    let w = 1024u64;
    let mut sa = SchedAvg::default();
    assert!(update_entity_avg(PERIOD_NS, &mut sa, w, true, true, true));

    // delta = 1024 units, period_contrib 0 → periods = 1, d1 = 1024, d3 = 0.
    let c1 = ((1024u128 * y1) >> 32) as u64; // 1002
    let c2 = LOAD_AVG_MAX - ((LOAD_AVG_MAX as u128 * y1) >> 32) as u64 - 1024; // 0
    let contrib = c1 + c2;
    assert_eq!((c1, c2), (1002, 0));
    assert_eq!(sa.period_contrib, 0);
    assert_eq!(sa.load_sum, contrib);
    assert_eq!(sa.runnable_sum, contrib * 1024);
    assert_eq!(sa.util_sum as u64, contrib * 1024);
    let divider = 47742 - 1024;
    assert_eq!(sa.load_avg, w * contrib / divider); // 21
    assert_eq!(sa.util_avg, contrib * 1024 / divider); // 21
    assert_eq!(sa.runnable_avg, contrib * 1024 / divider);
    assert_eq!(sa.util_avg, 21);

    // 32 idle periods: sums halve (>>1, then ·(2^32−1)>>32 loses one).
    assert!(update_entity_avg(33 * PERIOD_NS, &mut sa, w, false, false, false));
    let util_sum = ((((contrib * 1024) >> 1) as u128 * 0xffff_ffffu128) >> 32) as u64; // 513023
    let load_sum = ((((contrib) >> 1) as u128 * 0xffff_ffffu128) >> 32) as u64; // 500
    assert_eq!(util_sum, 513023);
    assert_eq!(sa.util_sum as u64, util_sum);
    assert_eq!(sa.load_sum, load_sum);
    assert_eq!(sa.util_avg, util_sum / divider); // 10 = ⌊21/2⌋
    assert_eq!(sa.util_avg, 10);
    assert_eq!(sa.load_avg, w * load_sum / divider);
    assert_eq!(sa.load_avg, 10);
    assert_eq!(sa.last_update_time, 33 * PERIOD_NS);
}

#[test]
fn saturated_signal_halves_in_32_idle_periods() {
    let mut sa = SchedAvg::default();
    let mut now = 0;
    for _ in 0..1000 {
        now += PERIOD_NS;
        update_entity_avg(now, &mut sa, 1024, true, true, true);
    }
    let full = sa.util_avg;
    now += 32 * PERIOD_NS;
    update_entity_avg(now, &mut sa, 1024, false, false, false);
    assert!((sa.util_avg as i64 - full as i64 / 2).abs() <= 1, "{} vs {}", sa.util_avg, full);
}

#[test]
fn always_running_converges() {
    for &w in &[1024u64, 88761, 15, 3] {
        let mut se = SchedAvg::default();
        let mut cfs = SchedAvg::default();
        let mut now = 0;
        let mut min_util_after_1s = u64::MAX;
        for i in 1..=2000u64 {
            now += PERIOD_NS;
            update_entity_avg(now, &mut se, w, true, true, true);
            update_cfs_rq_avg(now, &mut cfs, w, 1, true);
            assert!(se.util_sum as u64 <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
            assert!(se.runnable_sum <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
            assert!(se.load_sum <= LOAD_AVG_MAX);
            assert!(cfs.load_sum <= LOAD_AVG_MAX * w);
            assert!(se.util_avg <= SCHED_CAPACITY_SCALE && se.load_avg <= w);
            assert!(cfs.util_sum as u64 <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
            if now >= 1_000_000_000 {
                min_util_after_1s = min_util_after_1s.min(se.util_avg);
                assert!(se.load_avg >= w * 1002 / 1024, "i={i} w={w} load_avg={}", se.load_avg);
                // The cfs_rq decays w·sum in one piece, so it loses less to
                // rounding than the entity and can sit a hair above w.
                assert!(cfs.load_avg >= w * 1002 / 1024 && cfs.load_avg <= w + w / 512, "w={w} {}", cfs.load_avg);
                assert_eq!(cfs.util_avg, se.util_avg);
                assert!(se.runnable_avg >= 1002);
            }
        }
        assert!((1002..=1024).contains(&min_util_after_1s), "{min_util_after_1s}");
    }
}

#[test]
fn always_running_odd_steps_stays_high() {
    // Updates at 1 ms (not period-aligned) steps: the position-aware
    // divider keeps util in [1002, 1024].
    let mut se = SchedAvg::default();
    let mut now = 0;
    for _ in 0..3000 {
        now += 1_000_000 + 317;
        update_entity_avg(now, &mut se, 1024, true, true, true);
        if now > 1_000_000_000 {
            assert!((1002..=1024).contains(&se.util_avg), "{}", se.util_avg);
        }
    }
}

#[test]
fn half_duty_cycle_converges_to_half() {
    let mut se = SchedAvg::default();
    let mut now = 0;
    let mut samples = Vec::new();
    for cycle in 0..2000 {
        // 1 ms running, updated at tick granularity like the kernel would.
        now += MS;
        update_entity_avg(now, &mut se, 1024, true, true, true);
        let on_end = se.util_avg;
        now += MS;
        update_entity_avg(now, &mut se, 1024, false, false, false);
        let off_end = se.util_avg;
        if cycle > 1000 {
            samples.push(on_end);
            samples.push(off_end);
        }
    }
    for &u in &samples {
        assert!((512 - 30..=512 + 30).contains(&u), "util {u}");
    }
    let mean = samples.iter().sum::<u64>() as f64 / samples.len() as f64;
    assert!((mean - 512.0).abs() < 512.0 * 0.03, "mean {mean}");
    // Load tracks on_rq the same way.
    assert!((se.load_avg as i64 - 512).abs() < 40);
}

/// A delayed entity (on_rq but not runnable) keeps load but loses runnable.
#[test]
fn delayed_entity_keeps_load_not_runnable() {
    let mut se = SchedAvg::default();
    let mut now = 0;
    for _ in 0..500 {
        now += PERIOD_NS;
        update_load_avg_se(now, &mut se, SeLoad { weight: 1024, on_rq: true, runnable: false, running: false });
    }
    assert!(se.load_avg >= 1002);
    assert_eq!((se.runnable_avg, se.util_avg), (0, 0));
}

fn busy_cfs(periods: u64, load_weight: u64, nr: u64) -> SchedAvg {
    let mut cfs = SchedAvg::default();
    for i in 1..=periods {
        update_cfs_rq_avg(i * PERIOD_NS + 333 * US, &mut cfs, load_weight, nr, nr > 0);
    }
    cfs
}

#[test]
fn attach_then_detach_restores_cfs() {
    let cfs0 = busy_cfs(200, 2048, 2);
    let mut cfs = cfs0;
    let mut se = SchedAvg::default();
    init_entity_runnable_average(&mut se, 1024);
    post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
    attach_entity_load_avg(&mut cfs, &mut se, 1024);
    assert_eq!(se.last_update_time, cfs0.last_update_time);
    assert_eq!(se.period_contrib, cfs0.period_contrib);
    let divider = PELT_MIN_DIVIDER + cfs0.period_contrib as u64;
    assert_eq!(se.util_sum as u64, se.util_avg * divider);
    assert_eq!(se.load_sum, 1024 * divider / 1024);
    assert_eq!(cfs.load_avg, cfs0.load_avg + 1024);
    assert_eq!(cfs.util_avg, cfs0.util_avg + se.util_avg);
    assert_eq!(cfs.runnable_avg, cfs0.runnable_avg + se.runnable_avg);
    detach_entity_load_avg(&mut cfs, &se, 1024);
    assert_eq!(cfs, cfs0);
}

#[test]
fn attach_load_sum_is_at_least_one() {
    let mut cfs = SchedAvg::default();
    let mut se = SchedAvg { load_avg: 0, ..SchedAvg::default() };
    attach_entity_load_avg(&mut cfs, &mut se, 1024);
    assert_eq!(se.load_sum, 1);
    assert_eq!(cfs.load_sum, 1024);
}

#[test]
fn detach_clamps_at_zero() {
    let mut cfs = SchedAvg {
        load_avg: 10,
        load_sum: 10 * PELT_MIN_DIVIDER,
        util_avg: 5,
        util_sum: 5 * 46718,
        ..Default::default()
    };
    let se = SchedAvg {
        load_avg: 100,
        load_sum: 1000,
        util_avg: 50,
        util_sum: 50 * 46718,
        runnable_avg: 7,
        runnable_sum: 7,
        ..Default::default()
    };
    detach_entity_load_avg(&mut cfs, &se, 1024);
    assert_eq!((cfs.load_avg, cfs.load_sum, cfs.util_avg, cfs.util_sum), (0, 0, 0, 0));
    assert_eq!((cfs.runnable_avg, cfs.runnable_sum), (0, 0));
}

#[test]
fn remove_is_applied_at_next_update_and_clamps() {
    let cfs0 = busy_cfs(300, 1024, 1);
    let mut cfs = cfs0;
    let mut removed = CfsRqRemoved::default();
    let se = SchedAvg { load_avg: 300, util_avg: 200, runnable_avg: 250, ..Default::default() };
    removed.add(&se);
    assert_eq!(removed, CfsRqRemoved { nr: 1, load_avg: 300, util_avg: 200, runnable_avg: 250 });
    assert_eq!(cfs, cfs0, "nothing happens until the next update");

    // Next update within the same unit: only the removal happens.
    let idle = CfsRqLoad { load_weight: 0, h_nr_runnable: 0, curr: false };
    assert!(update_cfs_rq_load_avg(cfs0.last_update_time, &mut cfs, &mut removed, idle));
    assert_eq!(removed, CfsRqRemoved::default());
    let divider = PELT_MIN_DIVIDER + cfs0.period_contrib as u64;
    assert_eq!(cfs.load_avg, cfs0.load_avg - 300);
    assert_eq!(cfs.util_avg, cfs0.util_avg - 200);
    assert_eq!(cfs.runnable_avg, cfs0.runnable_avg - 250);
    assert_eq!(cfs.load_sum, (cfs0.load_sum - 300 * divider).max(cfs.load_avg * PELT_MIN_DIVIDER));
    assert_eq!(cfs.util_sum as u64, (cfs0.util_sum as u64 - 200 * divider).max(cfs.util_avg * PELT_MIN_DIVIDER));
    assert_eq!(cfs.runnable_sum, (cfs0.runnable_sum - 250 * divider).max(cfs.runnable_avg * PELT_MIN_DIVIDER));

    // Removing more than is there clamps at 0.
    let big = SchedAvg { load_avg: 1 << 20, util_avg: 1 << 20, runnable_avg: 1 << 20, ..Default::default() };
    removed.add(&big);
    removed.add(&big);
    assert_eq!(removed.nr, 2);
    update_cfs_rq_load_avg(cfs.last_update_time, &mut cfs, &mut removed, idle);
    assert_eq!(
        cfs,
        SchedAvg { last_update_time: cfs.last_update_time, period_contrib: cfs.period_contrib, ..Default::default() }
    );
}

#[test]
fn lower_bound_uses_32_bit_max_like_the_kernel() {
    // load_sum above 2^32 is truncated by max_t(u32, …) before comparing.
    let mut cfs = SchedAvg { load_avg: 1, load_sum: (1 << 32) + 5 * PELT_MIN_DIVIDER, ..Default::default() };
    remove_entity_load_avg(&mut cfs, 0, 0, 0);
    assert_eq!(cfs.load_sum, 5 * PELT_MIN_DIVIDER);
    let mut cfs = SchedAvg { load_avg: 1, load_sum: (1 << 32) + 10, ..Default::default() };
    remove_entity_load_avg(&mut cfs, 0, 0, 0);
    assert_eq!(cfs.load_sum, PELT_MIN_DIVIDER);
}

#[test]
fn post_init_gives_half_spare_capacity() {
    let mut cfs = SchedAvg::default();
    let mut want = 512;
    let mut total = 0;
    // The series 512, 256, 128, … of successive nice-0 tasks on a cfs_rq
    // whose util is the sum of theirs and whose load is large.
    for _ in 0..8 {
        let mut se = SchedAvg::default();
        init_entity_runnable_average(&mut se, 1024);
        assert_eq!(se, SchedAvg { load_avg: 1024, ..Default::default() });
        post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
        assert_eq!(se.util_avg, want);
        assert_eq!(se.runnable_avg, want);
        total += want;
        cfs.util_avg = total;
        cfs.load_avg += 1024; // each new task brings its full weight
        want = (1024 - total) / 2;
    }

    // Extrapolated from the cfs_rq when below the cap: util·w/(load+1).
    let cfs = SchedAvg { util_avg: 300, load_avg: 2047, ..Default::default() };
    let mut se = SchedAvg::default();
    post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
    assert_eq!(se.util_avg, 300 * 1024 / 2048);
    // The divisor is load_avg + 1: 100·100/(99+1).
    let mut se = SchedAvg::default();
    post_init_entity_util_avg(&mut se, &SchedAvg { util_avg: 100, load_avg: 99, ..Default::default() }, 100, 1024);
    assert_eq!(se.util_avg, 100);
    // A light task gets proportionally less.
    let mut se = SchedAvg::default();
    post_init_entity_util_avg(&mut se, &cfs, 15, 1024);
    assert_eq!(se.util_avg, 300 * 15 / 2048);
    // A heavy one is capped at (1024 − 300) / 2.
    let mut se = SchedAvg::default();
    post_init_entity_util_avg(&mut se, &cfs, 88761, 1024);
    assert_eq!(se.util_avg, 362);

    // No spare capacity (util at or over capacity): stays 0.
    for u in [1023u64, 1024, 1500] {
        let cfs = SchedAvg { util_avg: u, load_avg: 1024, ..Default::default() };
        let mut se = SchedAvg::default();
        post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
        assert_eq!((se.util_avg, se.runnable_avg), (0, 0));
    }
    // Smaller CPU capacity.
    let mut se = SchedAvg::default();
    post_init_entity_util_avg(&mut se, &SchedAvg::default(), 1024, 446);
    assert_eq!(se.util_avg, 223);

    // Not fair: only the clock.
    let mut se = SchedAvg { load_avg: 1024, ..Default::default() };
    post_init_entity_util_avg_not_fair(&mut se, 12345);
    assert_eq!(se, SchedAvg { load_avg: 1024, last_update_time: 12345, ..Default::default() });
}

#[test]
fn fair_update_load_avg_attaches_and_detaches() {
    let mut cfs = SchedAvg::default();
    let mut removed = CfsRqRemoved::default();
    let mut se = SchedAvg::default();
    init_entity_runnable_average(&mut se, 1024);
    post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);

    // Enqueue at 5 ms on an empty cfs_rq: attach.
    let empty = CfsRqLoad { load_weight: 0, h_nr_runnable: 0, curr: false };
    let se_off = SeLoad { weight: 1024, on_rq: false, runnable: false, running: false };
    let now = 5 * MS;
    assert!(fair_update_load_avg(now, &mut cfs, &mut removed, empty, &mut se, se_off, UPDATE_TG | DO_ATTACH));
    assert_eq!(se.last_update_time, cfs.last_update_time);
    assert_eq!(cfs.load_avg, 1024);
    assert_eq!(cfs.util_avg, 512);

    // Run 100 ms with ticks.
    let busy = CfsRqLoad { load_weight: 1024, h_nr_runnable: 1, curr: true };
    let se_run = SeLoad { weight: 1024, on_rq: true, runnable: true, running: true };
    let mut t = now;
    for _ in 0..100 {
        t += MS;
        fair_update_load_avg(t, &mut cfs, &mut removed, busy, &mut se, se_run, UPDATE_TG);
        assert_eq!(se.last_update_time, cfs.last_update_time);
        assert_eq!(se.period_contrib, cfs.period_contrib);
    }
    assert!(se.util_avg > 900);
    // A single task's signals equal its cfs_rq's, up to the attach rounding.
    assert!((cfs.util_avg as i64 - se.util_avg as i64).abs() <= 2);

    // Migrating dequeue: detach leaves nothing behind.
    t += MS;
    fair_update_load_avg(t, &mut cfs, &mut removed, busy, &mut se, se_run, UPDATE_TG | DO_DETACH);
    assert!(cfs.load_avg <= 2 && cfs.util_avg <= 2, "{cfs:?}");
}

#[test]
fn skip_age_load_leaves_the_entity() {
    let mut cfs = busy_cfs(10, 1024, 1);
    let mut removed = CfsRqRemoved::default();
    let mut se = SchedAvg { last_update_time: PERIOD_NS, load_avg: 1024, ..Default::default() };
    let before = se;
    let st = SeLoad { weight: 1024, on_rq: true, runnable: true, running: true };
    let cfs_st = CfsRqLoad { load_weight: 1024, h_nr_runnable: 1, curr: true };
    fair_update_load_avg(50 * PERIOD_NS, &mut cfs, &mut removed, cfs_st, &mut se, st, SKIP_AGE_LOAD);
    assert_eq!(se, before);
    assert_eq!(cfs.last_update_time, 50 * PERIOD_NS);
    fair_update_load_avg(60 * PERIOD_NS, &mut cfs, &mut removed, cfs_st, &mut se, st, 0);
    assert_eq!(se.last_update_time, 60 * PERIOD_NS);
    assert!(se.util_avg > 0);
}

#[test]
fn cfs_runnable_counts_tasks_util_counts_curr() {
    // Three runnable tasks, one running: runnable_avg ≈ 3·1024, util ≈ 1024.
    let cfs = busy_cfs(1000, 3 * 1024, 3);
    assert!((3 * 1002..=3 * 1024 + 6).contains(&cfs.runnable_avg), "{}", cfs.runnable_avg);
    assert!((1002..=1024).contains(&cfs.util_avg), "{}", cfs.util_avg);
    assert!((3 * 1002..=3 * 1024 + 6).contains(&cfs.load_avg), "{}", cfs.load_avg);
}

#[test]
fn reweight_recomputes_load_avg() {
    let mut cfs = busy_cfs(200, 1024, 1);
    let mut se = SchedAvg::default();
    let mut now = 0;
    for _ in 0..200 {
        now += PERIOD_NS;
        update_entity_avg(now, &mut se, 1024, true, true, true);
    }
    let cfs_before = cfs;
    let old = se.load_avg;
    reweight_entity_load_avg(&mut cfs, &mut se, 1024, 2048);
    assert_eq!(se.load_avg, 2048 * se.load_sum / get_pelt_divider(&se));
    assert!((se.load_avg as i64 - 2 * old as i64).abs() <= 1);
    assert_eq!(cfs.load_avg, cfs_before.load_avg - old + se.load_avg);
}

#[test]
fn readers() {
    let cfs = SchedAvg { load_avg: 3000, util_avg: 700, runnable_avg: 900, last_update_time: 1, ..Default::default() };
    let p = SchedAvg { load_avg: 1000, util_avg: 400, runnable_avg: 450, last_update_time: 1, ..Default::default() };
    assert_eq!(cpu_load(&cfs), 3000);
    assert_eq!(cpu_load_without(&cfs, Some(&p)), 2000);
    assert_eq!(cpu_load_without(&cfs, Some(&SchedAvg { last_update_time: 0, ..p })), 3000);
    assert_eq!(cpu_load_without(&cfs, None), 3000);
    assert_eq!(cpu_util_cfs(&cfs, 1024), 700);
    assert_eq!(cpu_util_cfs(&cfs, 512), 512);
    assert_eq!(cpu_util_cfs_boost(&cfs, 1024), 900);
    // p leaves cpu 0: subtract; p comes to cpu 1 from cpu 0: add.
    assert_eq!(cpu_util(&cfs, 0, Some((&p, 0)), None, false, 1024), 300);
    assert_eq!(cpu_util(&cfs, 1, Some((&p, 0)), Some(1), false, 1024), 1024);
    assert_eq!(cpu_util(&cfs, 1, Some((&p, 0)), Some(1), false, 2048), 1100);
    assert_eq!(cpu_util(&cfs, 0, Some((&p, 0)), None, true, 1024), 450);
    // p stays on its own cpu: unchanged.
    assert_eq!(cpu_util(&cfs, 0, Some((&p, 0)), Some(0), false, 1024), 700);
    assert_eq!(cpu_util_without(&cfs, 0, (&p, 0), 1024), 300);
    assert_eq!(cpu_util_without(&cfs, 1, (&p, 0), 1024), 700);
    let big = SchedAvg { util_avg: 5000, ..p };
    assert_eq!(cpu_util_without(&cfs, 0, (&big, 0), 1024), 0);
    assert_eq!((task_util(&p), task_runnable(&p)), (400, 450));
}

proptest! {
    /// Arbitrary on/running/idle histories: sums and averages stay within
    /// their maxima, and the entity and its (single-task) cfs_rq agree.
    #[test]
    fn bounded_under_random_histories(steps in prop::collection::vec((1u64..5_000_000, 0u8..3), 1..300), w in 1u64..100_000) {
        let mut se = SchedAvg::default();
        let mut cfs = SchedAvg::default();
        let mut now = 0u64;
        for (dt, state) in steps {
            now += dt;
            let (on_rq, running) = match state { 0 => (false, false), 1 => (true, false), _ => (true, true) };
            update_entity_avg(now, &mut se, w, on_rq, on_rq, running);
            update_cfs_rq_avg(now, &mut cfs, if on_rq { w } else { 0 }, on_rq as u64, running);
            prop_assert!(se.load_sum <= LOAD_AVG_MAX);
            prop_assert!(se.util_sum as u64 <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
            prop_assert!(se.runnable_sum <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
            prop_assert!(se.util_avg <= SCHED_CAPACITY_SCALE);
            prop_assert!(se.runnable_avg <= SCHED_CAPACITY_SCALE);
            prop_assert!(se.load_avg <= w);
            prop_assert!(se.util_avg <= se.runnable_avg && se.util_sum as u64 <= se.runnable_sum);
            prop_assert!(se.period_contrib < 1024);
            prop_assert_eq!(se.last_update_time, cfs.last_update_time);
            prop_assert_eq!(se.util_sum, cfs.util_sum);
            prop_assert_eq!(se.runnable_sum, cfs.runnable_sum);
            // The load sums differ by rounding only (w·⌊s·y⌋ vs ⌊w·s·y⌋).
            prop_assert!(cfs.load_sum <= LOAD_AVG_MAX * w && se.load_sum * w <= cfs.load_sum);
            prop_assert!(cfs.load_avg.abs_diff(se.load_avg) <= 1 + w / 512);
            prop_assert!(now - se.last_update_time < 1024);
        }
    }

    /// Attach then detach of any entity restores a cfs_rq built by real updates.
    #[test]
    fn attach_detach_roundtrip(
        steps in prop::collection::vec((1u64..3_000_000, 0u64..5), 1..100),
        se_load in 0u64..100_000, se_util in 0u64..1025, se_run in 0u64..1025,
        w in 1u64..100_000,
    ) {
        let mut cfs = SchedAvg::default();
        let mut now = 0;
        for (dt, nr) in steps {
            now += dt;
            update_cfs_rq_avg(now, &mut cfs, nr * 1024, nr, nr > 0);
        }
        let cfs0 = cfs;
        let mut se = SchedAvg { load_avg: se_load, util_avg: se_util, runnable_avg: se_run, ..Default::default() };
        attach_entity_load_avg(&mut cfs, &mut se, w);
        detach_entity_load_avg(&mut cfs, &se, w);
        prop_assert_eq!(cfs, cfs0);
    }

    /// Removal never goes below zero and keeps sums ≥ avg · PELT_MIN_DIVIDER.
    #[test]
    fn removal_keeps_lower_bounds(
        n in 1u64..400, nr in 0u64..4,
        rl in 0u64..10_000, ru in 0u64..3000, rr in 0u64..3000,
    ) {
        let mut cfs = busy_cfs(n, nr * 1024, nr);
        let before = cfs;
        remove_entity_load_avg(&mut cfs, rl, ru, rr);
        prop_assert_eq!(cfs.load_avg, before.load_avg.saturating_sub(rl));
        prop_assert_eq!(cfs.util_avg, before.util_avg.saturating_sub(ru));
        prop_assert_eq!(cfs.runnable_avg, before.runnable_avg.saturating_sub(rr));
        prop_assert!(cfs.load_sum >= cfs.load_avg * PELT_MIN_DIVIDER);
        prop_assert!(cfs.util_sum as u64 >= cfs.util_avg * PELT_MIN_DIVIDER);
        prop_assert!(cfs.runnable_sum >= cfs.runnable_avg * PELT_MIN_DIVIDER);
        prop_assert!(cfs.load_sum <= before.load_sum && cfs.util_sum <= before.util_sum);
    }
}
