//! The run's only source of randomness: xoshiro256++ seeded through
//! SplitMix64, with our own sampling code, so a seed reproduces a run bit for
//! bit whatever crate versions are in use.

/// SplitMix64, used to expand a seed into generator state and derive streams.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256++ (Blackman & Vigna).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let s = [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)];
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `[0, n]` (inclusive), by rejection so there is no bias.
    pub fn below_incl(&mut self, n: u64) -> u64 {
        if n == u64::MAX {
            return self.next_u64();
        }
        let range = n + 1;
        let zone = u64::MAX - (u64::MAX % range) - 1;
        loop {
            let x = self.next_u64();
            if x <= zone {
                return x % range;
            }
        }
    }

    /// Uniform float in `[0, 1)` from the top 53 bits.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Natural logarithm from +, ×, ÷ only, so that every platform and libm
/// gives the same bits (`f64::ln` calls the system's libm): `x = m·2^e`
/// from the float's bits, then `ln m = 2·atanh((m−1)/(m+1))` by its series.
/// Relative error below 1e-15 for normal positive `x`; `-inf` for 0.
pub fn ln(x: f64) -> f64 {
    ln_series(x, true)
}

/// [`ln`], its series stopped once the sum is fixed or run to all 30 terms.
fn ln_series(x: f64, stop_early: bool) -> f64 {
    if x <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if e == -1023 {
        // Subnormal: scale into the normal range first.
        return ln_series(x * (1u64 << 52) as f64, stop_early) - 52.0 * std::f64::consts::LN_2;
    }
    // Centre m on 1 (m in [0.707, 1.414)) so the series converges fast.
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let z = (m - 1.0) / (m + 1.0);
    let z2 = z * z;
    let (mut term, mut sum) = (z, 0.0);
    for k in 0..30 {
        let t = term / (2 * k + 1) as f64;
        if stop_early && fixed_under(sum, t) {
            break;
        }
        sum += t;
        term *= z2;
    }
    2.0 * sum + e as f64 * std::f64::consts::LN_2
}

/// Whether adding `t`, or any later term of a series no larger than it in
/// magnitude (of either sign), leaves `sum` as it is: rounding is monotone,
/// so once `sum ± t` both round back to `sum` the rest of the series cannot
/// move it. Stopping there gives the same bits as running the fixed count
/// of terms (the series were a third of a noisy run's time; most need a
/// dozen terms of the 30).
fn fixed_under(sum: f64, t: f64) -> bool {
    sum + t == sum && sum - t == sum
}

/// `e^x` from +, ×, ÷ only (see [`ln`]): `x = k·ln 2 + r`, a Taylor series
/// for `e^r` with |r| ≤ ln2/2, scaled by 2^k through the exponent bits.
pub fn exp(x: f64) -> f64 {
    exp_series(x, true)
}

/// [`exp`], its series stopped once the sum is fixed or run to all 24 terms.
fn exp_series(x: f64, stop_early: bool) -> f64 {
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -708.0 {
        return 0.0;
    }
    // ln 2 split in two (Cody & Waite, fdlibm's constants): k·LN2_HI is exact.
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let k = (x / std::f64::consts::LN_2 + if x >= 0.0 { 0.5 } else { -0.5 }) as i64;
    let r = (x - k as f64 * LN2_HI) - k as f64 * LN2_LO;
    let (mut term, mut sum) = (1.0, 1.0);
    for n in 1..25 {
        term *= r / n as f64;
        if stop_early && fixed_under(sum, term) {
            break;
        }
        sum += term;
    }
    sum * f64::from_bits(((k + 1023) as u64) << 52)
}

/// The standard normal quantile (Acklam's rational approximation, relative
/// error 1.15e-9), from [`ln`] and the correctly rounded `sqrt`.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * ln(p)).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * ln(1.0 - p)).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// z of the 99th percentile of the standard normal.
const Z99: f64 = 2.326_347_874_040_841;

impl Rng {
    /// An exponential variate with mean `mean` (Poisson inter-arrival times).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * ln(1.0 - self.unit_f64())
    }

    /// A log-normal variate through a median and a 99th percentile (equal:
    /// exactly the median), cut at `max`.
    pub fn lognormal_p50_p99(&mut self, p50: u64, p99: u64, max: u64) -> u64 {
        self.lognormal(&LogNormal::new(p50, p99, max))
    }

    /// A variate of `d` (none drawn when it is exactly its median).
    pub fn lognormal(&mut self, d: &LogNormal) -> u64 {
        if d.sigma.is_none() {
            return d.p50.min(d.max);
        }
        d.at(self.unit_f64())
    }

    /// A uniform variate in [0, 1), for draws that share one quantile
    /// ([`lognormal_at`]).
    pub fn unit(&mut self) -> f64 {
        self.unit_f64()
    }
}

/// The log-normal of [`Rng::lognormal_p50_p99`] at quantile `u`: two
/// quantities drawn at the same `u` rise and fall together.
pub fn lognormal_at(u: f64, p50: u64, p99: u64, max: u64) -> u64 {
    LogNormal::new(p50, p99, max).at(u)
}

/// A log-normal through a median and a 99th percentile, cut at `max`, its
/// spread computed once: a noise source draws one per arrival, and the
/// spread's logarithm (with the mean gap's division, kept beside it) was
/// ~120 of an arrival's ~660 instructions (issue 39).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogNormal {
    p50: u64,
    max: u64,
    /// `None`: exactly the median (a 99th percentile at or below it).
    sigma: Option<f64>,
}

impl LogNormal {
    pub fn new(p50: u64, p99: u64, max: u64) -> Self {
        let sigma = (p99 > p50 && p50 != 0).then(|| ln(p99 as f64 / p50 as f64) / Z99);
        LogNormal { p50, max, sigma }
    }

    /// The variate at quantile `u`.
    pub fn at(&self, u: f64) -> u64 {
        let Some(sigma) = self.sigma else { return self.p50.min(self.max) };
        let x = self.p50 as f64 * exp(sigma * normal_quantile(u));
        if x >= self.max as f64 {
            self.max
        } else {
            x.round() as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_a_series_early_gives_the_same_bits_as_every_term() {
        let mut rng = Rng::new(11);
        let mut xs: Vec<f64> = (0..200_000).map(|_| rng.unit_f64()).collect();
        xs.extend((0..2_000).map(|i| 1.0 + i as f64 * 1e-12));
        xs.extend([1.0, 2.0, 0.5, std::f64::consts::SQRT_2, 1e-300, 1e300, f64::MIN_POSITIVE]);
        for &x in xs.iter().filter(|&&x| x > 0.0) {
            assert_eq!(ln(x).to_bits(), ln_series(x, false).to_bits(), "ln({x:e})");
            for y in [x, -x, 40.0 * x - 20.0, 1e-9 * x, std::f64::consts::LN_2 / 2.0 * x] {
                assert_eq!(exp(y).to_bits(), exp_series(y, false).to_bits(), "exp({y:e})");
            }
        }
    }

    #[test]
    fn draws_at_one_quantile_rise_together_and_match_the_rngs_own() {
        let us: Vec<f64> = (1..100).map(|k| k as f64 / 100.0).collect();
        let a: Vec<u64> = us.iter().map(|&u| lognormal_at(u, 4_600, 55_000, 550_000)).collect();
        let b: Vec<u64> = us.iter().map(|&u| lognormal_at(u, 2_000, 33_000, 330_000)).collect();
        assert!(a.windows(2).all(|w| w[0] <= w[1]) && b.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!((a[49], b[49]), (4_600, 2_000), "the median at u = 0.5");
        assert!(a.iter().zip(&b).all(|(x, y)| y <= x), "this pair's tail never passes its exit");
        let (mut r1, mut r2) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(r1.lognormal_p50_p99(2_000, 20_000, 100_000), lognormal_at(r2.unit(), 2_000, 20_000, 100_000));
        }
    }

    #[test]
    fn own_ln_exp_and_quantile_match_the_library_closely() {
        for &x in &[1e-300, 1e-10, 0.001, 0.5, 0.7, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300] {
            let (a, b) = (ln(x), x.ln());
            assert!((a - b).abs() <= 1e-14 * b.abs().max(1.0), "ln({x}) = {a}, libm {b}");
        }
        for &x in &[-700.0, -20.0, -1.0, -1e-9, 0.0, 0.3, 1.0, 5.5, 100.0, 700.0] {
            let (a, b) = (exp(x), x.exp());
            assert!((a - b).abs() <= 1e-14 * b, "exp({x}) = {a}, libm {b}");
        }
        assert!(normal_quantile(0.5).abs() < 1e-12);
        assert!((normal_quantile(0.99) - Z99).abs() < 1e-8);
        assert!((normal_quantile(0.001) + 3.090_232_306).abs() < 1e-7);
    }

    #[test]
    fn lognormal_hits_its_quantiles_and_cap() {
        let mut r = Rng::new(3);
        let mut v: Vec<u64> = (0..20_000).map(|_| r.lognormal_p50_p99(2_000, 20_000, 100_000)).collect();
        v.sort_unstable();
        let (p50, p99) = (v[10_000], v[19_800]);
        assert!((1_900..=2_100).contains(&p50), "p50 {p50}");
        assert!((17_000..=23_000).contains(&p99), "p99 {p99}");
        assert!(*v.last().unwrap() <= 100_000);
        assert_eq!(r.lognormal_p50_p99(5, 5, 100), 5);
        let mean = (0..20_000).map(|_| r.exponential(1_000.0)).sum::<f64>() / 20_000.0;
        assert!((950.0..1_050.0).contains(&mean), "mean {mean}");
    }

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let a: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::new(8);
            (0..8).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn stream_is_pinned() {
        // Pins the generator: a change here silently changes every seeded run.
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0x53175d61490b23df);
    }

    #[test]
    fn below_incl_stays_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let x = r.below_incl(4);
            assert!(x <= 4);
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
