//! Exact percentiles and summaries of latency samples.

use serde::Serialize;

/// Nearest-rank percentile of an ascending slice, `per_mille` in 0..=1000
/// (500 = p50, 990 = p99, 999 = p99.9).
///
/// Nearest rank: the smallest sample such that at least `per_mille`/1000 of
/// all samples are ≤ it, i.e. `sorted[ceil(p * n) - 1]` (rank clamped to 1..=n,
/// so p0 is the minimum and p100 the maximum). It is always one of the
/// samples, never an interpolation. `None` for no samples.
pub fn percentile(sorted: &[u64], per_mille: u32) -> Option<u64> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    let rank = (u64::from(per_mille.min(1000)) * n).div_ceil(1000).clamp(1, n);
    Some(sorted[(rank - 1) as usize])
}

/// Summary of one set of latency samples (ns).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Number of samples.
    pub count: u64,
    /// Nearest-rank percentiles (see [`percentile`]); `None` without samples.
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// Samples ≥ the run's stall threshold.
    pub at_or_above_threshold: u64,
    /// `at_or_above_threshold / count`; 0 without samples.
    pub fraction_at_or_above_threshold: f64,
    /// The percentiles come from buckets (a long run): each at most
    /// [`crate::RELATIVE_ERROR`] below the exact one. Counts and the
    /// maximum stay exact. Serialised only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
}

impl LatencyStats {
    /// Summarise ascending `sorted` samples against `threshold_ns`.
    pub fn from_sorted(sorted: &[u64], threshold_ns: u64) -> Self {
        debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "samples must be sorted");
        let count = sorted.len() as u64;
        let below = sorted.partition_point(|&s| s < threshold_ns) as u64;
        let over = count - below;
        LatencyStats {
            count,
            p50_ns: percentile(sorted, 500),
            p90_ns: percentile(sorted, 900),
            p99_ns: percentile(sorted, 990),
            max_ns: sorted.last().copied(),
            at_or_above_threshold: over,
            fraction_at_or_above_threshold: if count == 0 { 0.0 } else { over as f64 / count as f64 },
            approximate: false,
        }
    }

    /// Summarise a sketch made with the run's threshold.
    pub fn from_sketch(s: &crate::LatencySketch) -> Self {
        let count = s.count();
        let over = s.at_or_above_threshold();
        LatencyStats {
            count,
            p50_ns: s.percentile(500),
            p90_ns: s.percentile(900),
            p99_ns: s.percentile(990),
            max_ns: s.max(),
            at_or_above_threshold: over,
            fraction_at_or_above_threshold: if count == 0 { 0.0 } else { over as f64 / count as f64 },
            approximate: !s.is_exact(),
        }
    }
}
