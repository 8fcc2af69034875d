//! The statistics behind A/B comparisons, written here so that their
//! output never changes with a dependency's version:
//!
//! * [`welch`]: Welch's unequal-variance t-test on two samples (per-round
//!   values), with the Welch–Satterthwaite degrees of freedom and the exact
//!   two-sided p-value of Student's t distribution,
//!   `p = I_{df/(df+t²)}(df/2, 1/2)`, from the regularized incomplete beta
//!   function ([`inc_beta`], Lentz's continued fraction; `ln Γ` by Lanczos).
//!   No normal approximation: with the 3–10 rounds sweeps use, it would
//!   make p several times too small.
//! * [`bootstrap_ci`]: a seeded percentile bootstrap confidence interval of
//!   `mean(b) − mean(a)`, each sample resampled with replacement on its own.
//!   The generator is SplitMix64 with Lemire's multiply-shift to pick an
//!   index, so a seed gives the same interval on every machine.

/// Arithmetic mean; `None` for no values.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample variance (divisor `n − 1`); `None` below two values.
pub fn variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    Some(xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// The result of Welch's t-test of `b` against `a`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// `(mean(b) − mean(a)) / sqrt(var(a)/na + var(b)/nb)`; ±∞ when both
    /// samples are constant and their means differ, 0 when they are equal.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (`na + nb − 2` when both
    /// variances are zero).
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test; `None` unless both samples have at least two values.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (variance(a)?, variance(b)?);
    let diff = mean(b)? - mean(a)?;
    let (sa, sb) = (va / na, vb / nb);
    let se2 = sa + sb;
    if se2 == 0.0 {
        let df = na + nb - 2.0;
        return Some(if diff == 0.0 {
            Welch { t: 0.0, df, p: 1.0 }
        } else {
            Welch { t: diff.signum() * f64::INFINITY, df, p: 0.0 }
        });
    }
    let t = diff / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    Some(Welch { t, df, p: t_two_sided_p(t, df) })
}

/// Two-sided p-value of Student's t distribution with `df` degrees of
/// freedom: `P(|T| >= |t|)`.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    inc_beta(df / (df + t * t), df / 2.0, 0.5).clamp(0.0, 1.0)
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, 9 terms; ~15 significant digits).
pub fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function `I_x(a, b)` for `a, b > 0`.
pub fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast below the mean of the
    // distribution; above it use I_x(a, b) = 1 − I_{1−x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(x, a, b) / a
    } else {
        1.0 - front * beta_cf(1.0 - x, b, a) / b
    }
}

/// The continued fraction of the incomplete beta function, evaluated by
/// the modified Lentz method.
fn beta_cf(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=500 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// SplitMix64 (Steele, Lea and Flood 2014): a small, fully specified
/// generator, so that a bootstrap seed means the same resamples everywhere.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in `0..n` (Lemire's multiply-shift; the bias is below 2⁻⁵⁰
    /// for the sample sizes here).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// A percentile bootstrap `level` confidence interval (e.g. 0.95) of
/// `mean(b) − mean(a)`: `resamples` times, draw `len(a)` values of `a` and
/// `len(b)` values of `b` with replacement and take the difference of
/// their means; the interval runs from the `(1−level)/2` to the
/// `(1+level)/2` quantile of those differences. `None` when a sample is
/// empty or `resamples` is 0.
pub fn bootstrap_ci(a: &[f64], b: &[f64], resamples: u32, seed: u64, level: f64) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let resample_mean = |xs: &[f64], rng: &mut SplitMix64| -> f64 {
        let mut sum = 0.0;
        for _ in 0..xs.len() {
            sum += xs[rng.below(xs.len())];
        }
        sum / xs.len() as f64
    };
    let mut diffs: Vec<f64> = (0..resamples)
        .map(|_| {
            let ma = resample_mean(a, &mut rng);
            let mb = resample_mean(b, &mut rng);
            mb - ma
        })
        .collect();
    diffs.sort_by(f64::total_cmp);
    let n = diffs.len();
    let tail = (1.0 - level) / 2.0;
    let lo = ((tail * n as f64).floor() as usize).min(n - 1);
    let hi = (((1.0 - tail) * n as f64).ceil() as usize).clamp(1, n) - 1;
    Some((diffs[lo], diffs[hi]))
}
