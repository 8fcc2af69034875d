//! Latency samples in bounded memory: every sample while there are few,
//! then a log-linear histogram.
//!
//! A run of seed 004's workload writes ~3 M handoffs per simulated second;
//! keeping each as a `u64` grows without bound. A [`LatencySketch`] keeps
//! the samples themselves until its owner turns it to buckets
//! ([`LatencySketch::to_buckets`]; the analysis does so for all of a run's
//! sketches once they hold [`EXACT_SAMPLES_PER_RUN`] between them, so
//! every run the project bundles is summarised exactly as before); after
//! that it keeps a count per bucket, where a bucket spans at most 1/128 of
//! its lower edge (values below 128 ns have a bucket each).
//!
//! What stays exact however many samples: the count, the minimum and
//! maximum, the number at or above the threshold the sketch was made
//! with. What becomes approximate: a percentile is the lower edge of the
//! bucket holding the nearest-rank sample, so it is at most 1/128
//! (0.78 %) below the exact figure, never above it. Two sketches merge
//! into the sketch of all their samples (exactly so while the sum fits).

/// Samples a run's analysis keeps one by one, over all its sketches,
/// before it turns them all to buckets: 2^20 (4 MiB while every sample is
/// below 4.29 s and takes 4 bytes, 8 MiB at most). A run's memory must not
/// grow with its length (issue 40: 10x the duration within 1.5x the peak);
/// at 2^24 the eventfd ping-pong grew from 18 MB at 10 s to 60 MB at 100 s.
/// Seed 000's 30 s asym_min (~60 k handoffs) stays exact; seed 004's
/// schbench-spr turns to buckets after ~0.2 simulated seconds.
pub const EXACT_SAMPLES_PER_RUN: usize = 1 << 18;
/// Sub-buckets per power of two: 2^7, so a bucket is 1/128 of its lower edge.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

/// The largest relative error of a percentile once the sketch has turned
/// to buckets (the figure is never above the exact one).
pub const RELATIVE_ERROR: f64 = 1.0 / SUB as f64;

/// Latency samples (ns), exact while few, bucketed beyond.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencySketch {
    threshold_ns: u64,
    count: u64,
    at_or_above: u64,
    min: Option<u64>,
    max: Option<u64>,
    /// The samples, while exact (in arrival order until [`Self::sorted`]).
    exact: Option<Exact>,
    /// `exact` is in ascending order.
    ascending: bool,
    /// Bucket counts from bucket `first` on, once bucketed.
    buckets: Vec<u64>,
    first: u32,
}

/// The exact samples: 4 bytes each while every one fits in a `u32` of ns
/// (4.29 s; a wakeup latency nearly always does), 8 once one does not. A
/// run of asym_min-2cpu holds ~2 k samples per simulated second: halving
/// them keeps a 1 000 s run within 1.5x of a 10 s run's peak (issue 40).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Exact {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Exact {
    fn push(&mut self, v: u64) {
        match self {
            Exact::Narrow(list) => match u32::try_from(v) {
                Ok(x) => list.push(x),
                Err(_) => {
                    let mut wide: Vec<u64> = list.iter().map(|&x| u64::from(x)).collect();
                    wide.push(v);
                    *self = Exact::Wide(wide);
                }
            },
            Exact::Wide(list) => list.push(v),
        }
    }

    fn last(&self) -> Option<u64> {
        match self {
            Exact::Narrow(list) => list.last().map(|&x| u64::from(x)),
            Exact::Wide(list) => list.last().copied(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Exact::Narrow(list) => list.len(),
            Exact::Wide(list) => list.len(),
        }
    }

    fn get(&self, i: usize) -> u64 {
        match self {
            Exact::Narrow(list) => u64::from(list[i]),
            Exact::Wide(list) => list[i],
        }
    }

    fn sort_unstable(&mut self) {
        match self {
            Exact::Narrow(list) => list.sort_unstable(),
            Exact::Wide(list) => list.sort_unstable(),
        }
    }

    fn to_vec(&self) -> Vec<u64> {
        match self {
            Exact::Narrow(list) => list.iter().map(|&x| u64::from(x)).collect(),
            Exact::Wide(list) => list.clone(),
        }
    }

    fn extend(&mut self, other: &Exact) {
        match (&mut *self, other) {
            (Exact::Narrow(a), Exact::Narrow(b)) => a.extend_from_slice(b),
            (Exact::Wide(a), Exact::Wide(b)) => a.extend_from_slice(b),
            (_, b) => (0..b.len()).for_each(|i| self.push(b.get(i))),
        }
    }

    /// Nearest-rank percentile of the samples, which must be ascending.
    fn percentile_sorted(&self, per_mille: u32) -> Option<u64> {
        let n = self.len() as u64;
        if n == 0 {
            return None;
        }
        let rank = (u64::from(per_mille.min(1000)) * n).div_ceil(1000).clamp(1, n);
        Some(self.get((rank - 1) as usize))
    }
}

impl Default for Exact {
    fn default() -> Self {
        Exact::Narrow(Vec::new())
    }
}

fn bucket_of(v: u64) -> u32 {
    if v < SUB {
        return v as u32;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let mantissa = (v >> (e - SUB_BITS)) & (SUB - 1);
    ((e - SUB_BITS + 1) << SUB_BITS) | mantissa as u32
}

/// The smallest value in bucket `b`.
fn lower_edge(b: u32) -> u64 {
    let (hi, mantissa) = (b >> SUB_BITS, (b as u64) & (SUB - 1));
    if hi == 0 {
        return mantissa;
    }
    // Past the last bucket (the one of u64::MAX) the edge saturates.
    u64::try_from(((SUB | mantissa) as u128) << (hi - 1)).unwrap_or(u64::MAX)
}

impl LatencySketch {
    /// An empty sketch counting samples at or above `threshold_ns`.
    pub fn new(threshold_ns: u64) -> Self {
        LatencySketch {
            threshold_ns,
            count: 0,
            at_or_above: 0,
            min: None,
            max: None,
            exact: Some(Exact::default()),
            ascending: true,
            buckets: Vec::new(),
            first: 0,
        }
    }

    /// The sketch of `samples`.
    pub fn of(samples: &[u64], threshold_ns: u64) -> Self {
        let mut s = LatencySketch::new(threshold_ns);
        for &v in samples {
            s.push(v);
        }
        s
    }

    pub fn push(&mut self, v: u64) {
        self.count += 1;
        self.at_or_above += u64::from(v >= self.threshold_ns);
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
        match &mut self.exact {
            Some(list) => {
                self.ascending &= list.last().is_none_or(|l| l <= v);
                list.push(v);
            }
            None => self.bucket_add(v, 1),
        }
    }

    /// Keep counts per bucket from now on (the samples held so far go into
    /// their buckets and are freed).
    pub fn to_buckets(&mut self) {
        if let Some(list) = self.exact.take() {
            for i in 0..list.len() {
                self.bucket_add(list.get(i), 1);
            }
        }
    }

    /// The samples ascending: every sample while exact, else each bucket's
    /// lower edge once per sample in it (for consumers that need a list:
    /// as long as the samples, as exact as the percentiles).
    pub fn sorted_samples(&self) -> Vec<u64> {
        match &self.exact {
            Some(list) => {
                let mut v = list.to_vec();
                if !self.ascending {
                    v.sort_unstable();
                }
                v
            }
            None => {
                let mut v = Vec::with_capacity(self.count as usize);
                for (i, &n) in self.buckets.iter().enumerate() {
                    let edge = lower_edge(self.first + i as u32).max(self.min.unwrap_or(0));
                    v.extend(std::iter::repeat_n(edge, n as usize));
                }
                if let (Some(last), Some(max)) = (v.last_mut(), self.max) {
                    *last = max;
                }
                v
            }
        }
    }

    fn bucket_add(&mut self, v: u64, n: u64) {
        let b = bucket_of(v);
        if self.buckets.is_empty() {
            self.first = b;
        }
        if b < self.first {
            let grow = (self.first - b) as usize;
            self.buckets.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = b;
        }
        let i = (b - self.first) as usize;
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, 0);
        }
        self.buckets[i] += n;
    }

    /// Add every sample of `other` (made with the same threshold; a
    /// different one keeps this sketch's: its at-or-above count is then a
    /// sum of two thresholds' counts and is said to be so by the caller).
    pub fn merge(&mut self, other: &LatencySketch) {
        match (&mut self.exact, &other.exact) {
            (Some(a), Some(b)) => {
                a.extend(b);
                self.ascending = false;
                self.count += other.count;
                self.at_or_above += other.at_or_above;
            }
            _ => {
                let (count, above) = (self.count + other.count, self.at_or_above + other.at_or_above);
                if let Some(list) = self.exact.take() {
                    for i in 0..list.len() {
                        self.bucket_add(list.get(i), 1);
                    }
                }
                match &other.exact {
                    Some(list) => (0..list.len()).for_each(|i| self.bucket_add(list.get(i), 1)),
                    None => {
                        for (i, &n) in other.buckets.iter().enumerate() {
                            if n > 0 {
                                self.bucket_add(lower_edge(other.first + i as u32), n);
                            }
                        }
                    }
                }
                self.count = count;
                self.at_or_above = above;
            }
        }
        self.min = match (self.min, other.min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max(&self) -> Option<u64> {
        self.max
    }

    pub fn min(&self) -> Option<u64> {
        self.min
    }

    /// Samples at or above the threshold.
    pub fn at_or_above_threshold(&self) -> u64 {
        self.at_or_above
    }

    /// Whether every sample is still kept (figures are exact).
    pub fn is_exact(&self) -> bool {
        self.exact.is_some()
    }

    /// Hold the samples in ascending order (while exact), so percentiles
    /// need no copy.
    pub fn sorted(&mut self) {
        if let Some(list) = self.exact.as_mut() {
            if !self.ascending {
                list.sort_unstable();
                self.ascending = true;
            }
        }
    }

    /// The samples, while exact, in the order they are held (ascending
    /// after [`Self::sorted`]).
    pub fn samples(&self) -> Option<Vec<u64>> {
        self.exact.as_ref().map(Exact::to_vec)
    }

    /// Nearest-rank percentile (`per_mille` 0..=1000, as
    /// [`crate::percentile`]): exact while the samples are kept, else the
    /// lower edge of the bucket holding that rank (at most
    /// [`RELATIVE_ERROR`] below), clamped into [min, max].
    pub fn percentile(&self, per_mille: u32) -> Option<u64> {
        let n = self.count;
        if n == 0 {
            return None;
        }
        if let Some(list) = &self.exact {
            if self.ascending {
                return list.percentile_sorted(per_mille);
            }
            let mut v = list.clone();
            v.sort_unstable();
            return v.percentile_sorted(per_mille);
        }
        let rank = (u64::from(per_mille.min(1000)) * n).div_ceil(1000).clamp(1, n);
        if rank == n {
            return self.max;
        }
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let edge = lower_edge(self.first + i as u32);
                return Some(edge.clamp(self.min.unwrap_or(0), self.max.unwrap_or(u64::MAX)));
            }
        }
        self.max
    }
}

/// One sketch per task, all exact until they hold more than `cap` samples between
/// them, then all bucketed (a run's memory does not grow with its length
/// past that).
#[derive(Clone, Debug)]
pub(crate) struct SketchSet {
    threshold_ns: u64,
    pub sketches: rustc_hash::FxHashMap<i32, LatencySketch>,
    exact: usize,
    cap: usize,
}

impl SketchSet {
    pub fn new(threshold_ns: u64, cap: usize) -> Self {
        SketchSet { threshold_ns, sketches: Default::default(), exact: 0, cap }
    }

    pub fn push(&mut self, pid: i32, v: u64) {
        let bucketed = self.exact > self.cap;
        let threshold = self.threshold_ns;
        self.sketches
            .entry(pid)
            .or_insert_with(|| {
                let mut s = LatencySketch::new(threshold);
                if bucketed {
                    s.to_buckets();
                }
                s
            })
            .push(v);
        if !bucketed {
            self.exact += 1;
            if self.exact > self.cap {
                self.sketches.values_mut().for_each(LatencySketch::to_buckets);
            }
        }
    }

    /// `pid`'s sketch (an empty one if it has no samples), ascending while exact.
    pub fn take(&mut self, pid: i32) -> LatencySketch {
        let mut s = self.sketches.remove(&pid).unwrap_or_else(|| LatencySketch::new(self.threshold_ns));
        s.sorted();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::percentile;
    use proptest::prelude::*;

    #[test]
    fn buckets_tile_the_line_and_are_at_most_a_128th_of_their_edge_wide() {
        let mut values: Vec<u64> = (0..5_000u64)
            .chain((1..64).flat_map(|e| [(1u64 << e) - 1, 1u64 << e, (1u64 << e) + 1]))
            .chain([u64::MAX])
            .collect();
        values.sort_unstable();
        let mut prev = None;
        for v in values {
            let b = bucket_of(v);
            assert!(lower_edge(b) <= v, "{v}");
            assert!(lower_edge(b + 1) > v || b == bucket_of(u64::MAX), "{v}");
            if v >= SUB {
                let width = lower_edge(b + 1) - lower_edge(b);
                assert!(width as f64 <= lower_edge(b) as f64 * RELATIVE_ERROR, "{v}");
            }
            if let Some(p) = prev {
                assert!(b >= p);
            }
            prev = Some(b);
        }
    }

    #[test]
    fn few_samples_are_summarised_exactly() {
        let v: Vec<u64> = (0..1000).map(|i| (i * 7919) % 100_000).collect();
        let s = LatencySketch::of(&v, 50_000);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        for p in [0, 10, 500, 900, 990, 999, 1000] {
            assert_eq!(s.percentile(p), percentile(&sorted, p));
        }
        assert!(s.is_exact());
        assert_eq!(s.at_or_above_threshold(), sorted.iter().filter(|&&x| x >= 50_000).count() as u64);
    }

    proptest! {
        #[test]
        fn exact_samples_past_four_seconds_are_kept_whole(
            a in proptest::collection::vec(prop_oneof![0u64..5_000_000_000, Just(u64::from(u32::MAX)), Just(1u64 << 32)], 0..300),
            b in proptest::collection::vec(0u64..5_000_000_000, 0..300),
            p in 0u32..=1000,
        ) {
            // 4-byte samples widen to 8 at the first one past u32::MAX ns;
            // pushes, merges and percentiles agree with the plain list.
            let mut s = LatencySketch::of(&a, 1_000);
            s.merge(&LatencySketch::of(&b, 1_000));
            let mut all: Vec<u64> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(s.samples().unwrap(), all.clone());
            all.sort_unstable();
            prop_assert_eq!(s.percentile(p), percentile(&all, p));
            s.sorted();
            prop_assert_eq!(s.samples().unwrap(), all.clone());
            prop_assert_eq!(s.percentile(p), percentile(&all, p));
            prop_assert_eq!(s.sorted_samples(), all);
        }

        #[test]
        fn many_samples_stay_within_the_stated_error(
            v in proptest::collection::vec(1u64..50_000_000, 1..5000),
            p in 0u32..=1000,
        ) {
            let mut s = LatencySketch::of(&v, 500_000);
            s.to_buckets();
            prop_assert!(!s.is_exact());
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let exact = percentile(&sorted, p).unwrap();
            let got = s.percentile(p).unwrap();
            prop_assert!(got <= exact, "p{p}: {got} above {exact}");
            prop_assert!(got as f64 >= exact as f64 * (1.0 - RELATIVE_ERROR), "p{p}: {got} too far below {exact}");
            prop_assert_eq!(s.count(), v.len() as u64);
            prop_assert_eq!(s.max(), sorted.last().copied());
            prop_assert_eq!(s.at_or_above_threshold(), sorted.iter().filter(|&&x| x >= 500_000).count() as u64);
            let listed = s.sorted_samples();
            prop_assert_eq!(listed.len(), v.len());
            prop_assert_eq!(percentile(&listed, p), s.percentile(p).map(|x| if p == 1000 { sorted[sorted.len() - 1] } else { x }));
        }

        #[test]
        fn a_set_turns_every_sketch_to_buckets_past_its_cap(
            v in proptest::collection::vec((0i32..4, 1u64..1_000_000), 0..400),
        ) {
            let mut set = SketchSet::new(1000, 100);
            for &(pid, x) in &v {
                set.push(pid, x);
            }
            let past = v.len() > 100;
            for pid in 0..4 {
                let s = set.take(pid);
                let mine: Vec<u64> = v.iter().filter(|p| p.0 == pid).map(|p| p.1).collect();
                prop_assert_eq!(s.count(), mine.len() as u64);
                prop_assert!(s.is_exact() != past || mine.is_empty(), "pid {} past {}", pid, past);
            }
        }

        #[test]
        fn a_merge_is_the_sketch_of_both(
            a in proptest::collection::vec(1u64..10_000_000, 0..3000),
            b in proptest::collection::vec(1u64..10_000_000, 0..3000),
            bucket_a in proptest::bool::ANY,
            bucket_b in proptest::bool::ANY,
        ) {
            let sketch = |v: &[u64], bucketed: bool| {
                let mut s = LatencySketch::of(v, 1000);
                if bucketed {
                    s.to_buckets();
                }
                s
            };
            let mut m = sketch(&a, bucket_a);
            m.merge(&sketch(&b, bucket_b));
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            let whole = sketch(&all, bucket_a || bucket_b);
            prop_assert_eq!(m.count(), whole.count());
            prop_assert_eq!(m.at_or_above_threshold(), whole.at_or_above_threshold());
            prop_assert_eq!((m.min(), m.max()), (whole.min(), whole.max()));
            for p in [500, 900, 990] {
                prop_assert_eq!(m.percentile(p), whole.percentile(p), "p{}", p);
            }
        }
    }
}
