//! The statistics against values computed by hand (closed forms) or with
//! 30-digit arithmetic (mpmath's `betainc`), and the bootstrap on a
//! synthetic example whose true difference is known.

use schedlab_report::stats::{bootstrap_ci, inc_beta, ln_gamma, mean, t_two_sided_p, variance, welch, SplitMix64};

#[track_caller]
fn close(got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
}

#[test]
fn mean_variance_gamma_beta() {
    assert_eq!(mean(&[]), None);
    assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
    assert_eq!(variance(&[4.0]), None);
    assert_eq!(variance(&[1.0, 2.0, 3.0, 4.0, 5.0]), Some(2.5));
    close(ln_gamma(5.0), 24f64.ln(), 1e-13);
    close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-13);
    close(ln_gamma(0.1), 2.252_712_651_734_206, 1e-12);
    // I_x(a, a) is symmetric about 1/2; I_x(1, 1) = x; I_x(a, 1) = x^a.
    close(inc_beta(0.5, 3.7, 3.7), 0.5, 1e-14);
    close(inc_beta(0.3, 1.0, 1.0), 0.3, 1e-14);
    close(inc_beta(0.6, 2.5, 1.0), 0.6f64.powf(2.5), 1e-14);
    assert_eq!((inc_beta(0.0, 2.0, 3.0), inc_beta(1.0, 2.0, 3.0)), (0.0, 1.0));
}

#[test]
fn student_t_p_values() {
    // df = 1 (Cauchy): p = 1 − (2/π)·atan|t|; df = 2: p = 1 − |t|/sqrt(t² + 2).
    close(t_two_sided_p(1.0, 1.0), 0.5, 1e-13);
    close(t_two_sided_p(2.0, 1.0), 1.0 - 2.0 / std::f64::consts::PI * 2f64.atan(), 1e-13);
    close(t_two_sided_p(-3.0, 2.0), 1.0 - 3.0 / 11f64.sqrt(), 1e-13);
    // mpmath: betainc(df/2, 1/2, 0, df/(df+t²), regularized=True).
    close(t_two_sided_p(2.0, 5.0), 0.101_939_478_829_858_36, 1e-12);
    close(t_two_sided_p(1.5, 30.0), 0.144_065_929_128_646, 1e-12);
    close(t_two_sided_p(10.0, 3.0), 0.002_128_399_058_414_15, 1e-13);
    assert_eq!(t_two_sided_p(0.0, 4.0), 1.0);
    assert_eq!(t_two_sided_p(f64::INFINITY, 4.0), 0.0);
}

#[test]
fn welch_on_known_vectors() {
    // By hand: means 1 and 5, variances 2 and 2, se = sqrt(2/2 + 2/2) = √2,
    // t = 4/√2 = 2√2, df = (1 + 1)² / (1/1 + 1/1) = 2, p = 1 − t/sqrt(t² + 2).
    let w = welch(&[0.0, 2.0], &[4.0, 6.0]).unwrap();
    close(w.t, 2.0 * 2f64.sqrt(), 1e-14);
    close(w.df, 2.0, 1e-14);
    close(w.p, 1.0 - 8f64.sqrt() / 10f64.sqrt(), 1e-13);
    close(w.p, 0.105_572_809_000_084_12, 1e-13);

    // By hand: means 3 and 5, variances 2.5 and 2.5, se = 1, t = 2,
    // df = (0.5 + 0.5)² / (0.25/4 + 0.25/4) = 8.
    let w = welch(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.0, 4.0, 5.0, 6.0, 7.0]).unwrap();
    assert_eq!((w.t, w.df), (2.0, 8.0));
    close(w.p, 0.080_516_237_957_262_67, 1e-12);

    // Unequal sizes and variances (mpmath).
    let w = welch(&[10.0, 12.0, 14.0, 16.0], &[20.0, 30.0, 25.0, 35.0, 40.0]).unwrap();
    close(w.t, 4.516_635_916_254_486, 1e-12);
    close(w.df, 5.018_813_314_037_627, 1e-12);
    close(w.p, 0.006_245_378_753_789_334, 1e-12);

    // Seed 000's defaults vs NO_DELAY_DEQUEUE stalls per run (mpmath).
    let w = welch(&[483.0, 701.0, 674.0, 784.0, 689.0], &[21.0, 12.0, 18.0, 22.0, 18.0]).unwrap();
    close(w.t, -13.052_795_861_338_477, 1e-10);
    close(w.df, 4.009_879_978_755_832, 1e-10);
    close(w.p, 0.000_195_916_924_862_318_1, 1e-12);

    // Swapping the samples flips t only.
    let back = welch(&[20.0, 30.0, 25.0, 35.0, 40.0], &[10.0, 12.0, 14.0, 16.0]).unwrap();
    close(back.t, -4.516_635_916_254_486, 1e-12);
    close(back.p, 0.006_245_378_753_789_334, 1e-12);

    // Degenerate samples.
    assert_eq!(welch(&[1.0], &[2.0, 3.0]), None, "one round cannot be tested");
    let same = welch(&[0.0, 0.0, 0.0], &[0.0, 0.0]).unwrap();
    assert_eq!((same.t, same.p), (0.0, 1.0));
    let apart = welch(&[1.0, 1.0], &[0.0, 0.0, 0.0]).unwrap();
    assert_eq!((apart.t, apart.df, apart.p), (f64::NEG_INFINITY, 3.0, 0.0));
}

#[test]
fn splitmix64_is_the_published_generator() {
    // The reference implementation's first outputs from state 0.
    let mut g = SplitMix64::new(0);
    assert_eq!(g.next_u64(), 0xe220_a839_7b1d_cdaf);
    assert_eq!(g.next_u64(), 0x6e78_9e6a_a1b9_65f4);
}

#[test]
fn below_draws_every_index_about_equally_often() {
    let mut g = SplitMix64::new(7);
    let mut counts = [0u32; 5];
    for _ in 0..50_000 {
        counts[g.below(5)] += 1;
    }
    // 10000 each; the standard deviation is about 89.
    assert!(counts.iter().all(|&c| c.abs_diff(10_000) < 500), "{counts:?}");
}

/// Deterministic draws uniform in [-1, 1).
fn noise(seed: u64, n: usize) -> Vec<f64> {
    let mut g = SplitMix64::new(seed);
    (0..n).map(|_| (g.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0).collect()
}

#[test]
fn bootstrap_ci_contains_the_true_difference() {
    // A = 10 + U(-1, 1), B = 13 + U(-1, 1): the true difference of means is 3.
    let a: Vec<f64> = noise(1, 40).iter().map(|u| 10.0 + u).collect();
    let b: Vec<f64> = noise(2, 40).iter().map(|u| 13.0 + u).collect();
    let (lo, hi) = bootstrap_ci(&a, &b, 10_000, 42, 0.95).unwrap();
    assert!(lo < 3.0 && 3.0 < hi, "[{lo}, {hi}]");
    // The standard error of the difference is sqrt(2 · (1/3) / 40) ≈ 0.13:
    // the 95 % interval is about ±0.25 wide, certainly not ±1.
    assert!(hi - lo > 0.3 && hi - lo < 0.8, "[{lo}, {hi}]");
    let d = mean(&b).unwrap() - mean(&a).unwrap();
    assert!(lo < d && d < hi);
    // The same seed gives the same interval; another seed, nearly the same.
    assert_eq!(bootstrap_ci(&a, &b, 10_000, 42, 0.95), Some((lo, hi)));
    let (lo2, hi2) = bootstrap_ci(&a, &b, 10_000, 43, 0.95).unwrap();
    assert!((lo2 - lo).abs() < 0.05 && (hi2 - hi).abs() < 0.05);
    assert!(lo2 != lo || hi2 != hi);

    // No difference: the interval straddles 0.
    let c: Vec<f64> = noise(3, 40).iter().map(|u| 10.0 + u).collect();
    let (lo, hi) = bootstrap_ci(&a, &c, 10_000, 42, 0.95).unwrap();
    assert!(lo < 0.0 && 0.0 < hi, "[{lo}, {hi}]");

    // Constant samples: every resample has the same difference.
    assert_eq!(bootstrap_ci(&[2.0, 2.0], &[5.0, 5.0, 5.0], 100, 1, 0.95), Some((3.0, 3.0)));
    assert_eq!(bootstrap_ci(&[], &[1.0], 100, 1, 0.95), None);
}
