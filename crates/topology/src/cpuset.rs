//! A fixed-size CPU bitmask, the model's `struct cpumask`.

use std::fmt;

/// Largest machine the model supports (a 2-socket Sapphire Rapids has 224 CPUs).
pub const MAX_CPUS: usize = 512;
const WORDS: usize = MAX_CPUS / 64;

/// A set of CPU ids, `Copy` and allocation-free so it can live in every task.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CpuSet {
    words: [u64; WORDS],
}

impl CpuSet {
    pub const fn empty() -> Self {
        CpuSet { words: [0; WORDS] }
    }

    /// CPUs `0..n`.
    pub fn first_n(n: usize) -> Self {
        let mut s = Self::empty();
        for cpu in 0..n.min(MAX_CPUS) {
            s.insert(cpu);
        }
        s
    }

    pub fn single(cpu: usize) -> Self {
        let mut s = Self::empty();
        s.insert(cpu);
        s
    }

    /// Panics if `cpu >= MAX_CPUS`: callers validate ids against the topology first.
    pub fn insert(&mut self, cpu: usize) {
        self.words[cpu / 64] |= 1 << (cpu % 64);
    }

    pub fn remove(&mut self, cpu: usize) {
        if cpu < MAX_CPUS {
            self.words[cpu / 64] &= !(1 << (cpu % 64));
        }
    }

    pub fn contains(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.words[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// Highest CPU id in the set.
    pub fn last(&self) -> Option<usize> {
        for (i, w) in self.words.iter().enumerate().rev() {
            if *w != 0 {
                return Some(i * 64 + 63 - w.leading_zeros() as usize);
            }
        }
        None
    }

    pub fn and(&self, other: &CpuSet) -> CpuSet {
        let mut out = *self;
        for (a, b) in out.words.iter_mut().zip(other.words.iter()) {
            *a &= *b;
        }
        out
    }

    pub fn or(&self, other: &CpuSet) -> CpuSet {
        let mut out = *self;
        for (a, b) in out.words.iter_mut().zip(other.words.iter()) {
            *a |= *b;
        }
        out
    }

    /// The CPUs of `self` not in `other` (`cpumask_andnot()`).
    pub fn and_not(&self, other: &CpuSet) -> CpuSet {
        let mut out = *self;
        for (a, b) in out.words.iter_mut().zip(other.words.iter()) {
            *a &= !*b;
        }
        out
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(other.words.iter()).all(|(a, b)| a & !b == 0)
    }

    /// [`CpuSet::is_subset`] reading only the words `lo..hi` given by
    /// `self.word_span()` (or a wider span).
    #[inline]
    pub fn is_subset_in(&self, other: &CpuSet, (lo, hi): (usize, usize)) -> bool {
        debug_assert!(self.words.iter().enumerate().all(|(i, &w)| w == 0 || (lo..hi).contains(&i)));
        (lo..hi).all(|i| self.words[i] & !other.words[i] == 0)
    }

    /// Removes the CPUs of `span` (within its words `lo..hi`,
    /// [`CpuSet::word_span`]) from this set and returns those it held.
    #[inline]
    pub fn take_in(&mut self, span: &CpuSet, (lo, hi): (usize, usize)) -> CpuSet {
        debug_assert!(span.words.iter().enumerate().all(|(i, &w)| w == 0 || (lo..hi).contains(&i)));
        let mut taken = CpuSet::empty();
        for i in lo..hi {
            taken.words[i] = self.words[i] & span.words[i];
            self.words[i] &= !span.words[i];
        }
        taken
    }

    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(other.words.iter()).any(|(a, b)| a & b != 0)
    }

    /// The words that hold this set's CPUs, `lo..hi` (an empty set: `0..0`),
    /// for [`CpuSet::iter_and_in`]: a set that is read often (a sched
    /// group's span) computes it once.
    pub fn word_span(&self) -> (usize, usize) {
        match (self.first(), self.last()) {
            (Some(a), Some(b)) => (a / 64, b / 64 + 1),
            _ => (0, 0),
        }
    }

    /// `self & other` in ascending order, reading only the words `lo..hi`
    /// given by `self.word_span()` (or a wider span): a group of two CPUs
    /// is one word, not the eight a 512-CPU mask has.
    pub fn iter_and_in<'a>(&'a self, other: &'a CpuSet, (lo, hi): (usize, usize)) -> impl Iterator<Item = usize> + 'a {
        debug_assert!(lo <= hi && hi <= WORDS, "word span {lo}..{hi}");
        debug_assert!(
            self.words.iter().enumerate().all(|(i, &w)| w == 0 || (lo..hi).contains(&i)),
            "a CPU of the set lies outside its word span {lo}..{hi}"
        );
        let w = if lo < hi { self.words[lo] & other.words[lo] } else { 0 };
        AndIter { a: &self.words, b: &other.words, i: lo, end: hi, w }
    }

    /// [`CpuSet::iter`] reading only the words `lo..hi` given by
    /// `self.word_span()` (or a wider span), as [`CpuSet::iter_and_in`]: a
    /// loop over a small set that is read often (an SMT mask, a group's
    /// balance mask) skips the empty words.
    #[inline]
    pub fn iter_in(&self, span: (usize, usize)) -> impl Iterator<Item = usize> + '_ {
        self.iter_and_in(self, span)
    }

    /// Ascending CPU ids.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        // A plain word cursor: the scheduler's hot loops iterate small sets,
        // where a `flat_map` over all eight words costs more than the bits.
        Iter { words: &self.words, i: 0, w: self.words[0] }
    }

    /// The first CPU of the set at or after `start` (`cpumask_next(start - 1)`).
    pub fn next_from(&self, start: usize) -> Option<usize> {
        let mut i = start / 64;
        if i >= WORDS {
            return None;
        }
        let mut w = self.words[i] & (!0u64 << (start % 64));
        loop {
            if w != 0 {
                return Some(i * 64 + w.trailing_zeros() as usize);
            }
            i += 1;
            if i >= WORDS {
                return None;
            }
            w = self.words[i];
        }
    }

    /// The CPUs as the analysis keys them (`u32`, ascending).
    pub fn to_u32_vec(&self) -> Vec<u32> {
        self.iter().map(|c| c as u32).collect()
    }

    /// The cpulist form the kernel prints (`0-3,8,10-11`).
    pub fn to_cpulist(&self) -> String {
        let mut out = String::new();
        let mut run: Option<(usize, usize)> = None;
        let flush = |out: &mut String, (a, b): (usize, usize)| {
            if !out.is_empty() {
                out.push(',');
            }
            if a == b {
                out.push_str(&a.to_string());
            } else {
                out.push_str(&format!("{a}-{b}"));
            }
        };
        for cpu in self.iter() {
            run = match run {
                Some((a, b)) if b + 1 == cpu => Some((a, cpu)),
                Some(r) => {
                    flush(&mut out, r);
                    Some((cpu, cpu))
                }
                None => Some((cpu, cpu)),
            };
        }
        if let Some(r) = run {
            flush(&mut out, r);
        }
        out
    }
}

/// [`CpuSet::iter`]'s iterator: the bits left in word `i`, then the next words.
struct Iter<'a> {
    words: &'a [u64; WORDS],
    i: usize,
    w: u64,
}

impl Iterator for Iter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if self.w != 0 {
                let bit = self.w.trailing_zeros() as usize;
                self.w &= self.w - 1;
                return Some(self.i * 64 + bit);
            }
            self.i += 1;
            if self.i >= WORDS {
                return None;
            }
            self.w = self.words[self.i];
        }
    }
}

/// [`CpuSet::iter_and_in`]'s iterator: the bits left of word `i` of
/// `a & b`, then the next words up to `end`. Kept apart from [`Iter`],
/// whose bound is the constant `WORDS`: one iterator generic over the word
/// source cost asym_min ~1 % more instructions (`scripts/count-instructions.sh`).
struct AndIter<'a> {
    a: &'a [u64; WORDS],
    b: &'a [u64; WORDS],
    i: usize,
    end: usize,
    w: u64,
}

impl Iterator for AndIter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if self.w != 0 {
                let bit = self.w.trailing_zeros() as usize;
                self.w &= self.w - 1;
                return Some(self.i * 64 + bit);
            }
            self.i += 1;
            if self.i >= self.end {
                return None;
            }
            self.w = self.a[self.i] & self.b[self.i];
        }
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_cpulist())
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_cpulist())
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = CpuSet::empty();
        for cpu in iter {
            s.insert(cpu);
        }
        s
    }
}

/// Why [`parse_cpulist`] rejected a text; `item` is the comma-separated
/// piece at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpulistError {
    #[error("empty cpulist (expected e.g. \"0-3,8\")")]
    Empty,
    #[error("bad stride `{stride}` in `{item}` (expected a positive integer)")]
    BadStride { stride: String, item: String },
    #[error("stride 0 in `{item}` (expected a positive integer)")]
    ZeroStride { item: String },
    #[error("bad CPU number `{cpu}` in cpulist item `{item}` (expected N or N-M)")]
    BadCpu { cpu: String, item: String },
    #[error("CPU {cpu} is beyond the model's limit of {MAX_CPUS} CPUs")]
    BeyondLimit { cpu: usize },
    #[error("range `{item}` runs backwards (expected low-high)")]
    Backwards { item: String },
}

/// Parse a cpulist as `taskset -c` and sysfs write it: `"4-7,20-23"`, `"0,2"`,
/// `"0-15:2"` (stride). Whitespace around items is allowed. The error says
/// what was expected, without position (callers add file/line/col).
pub fn parse_cpulist(text: &str) -> Result<CpuSet, CpulistError> {
    let mut set = CpuSet::empty();
    if text.trim().is_empty() {
        return Err(CpulistError::Empty);
    }
    for item in text.split(',') {
        let item = item.trim();
        let (range, stride) = match item.split_once(':') {
            Some((r, s)) => {
                let stride: usize = s
                    .trim()
                    .parse()
                    .map_err(|_| CpulistError::BadStride { stride: s.to_string(), item: item.to_string() })?;
                if stride == 0 {
                    return Err(CpulistError::ZeroStride { item: item.to_string() });
                }
                (r.trim(), stride)
            }
            None => (item, 1),
        };
        let parse_cpu = |s: &str| -> Result<usize, CpulistError> {
            let v: usize =
                s.trim().parse().map_err(|_| CpulistError::BadCpu { cpu: s.to_string(), item: item.to_string() })?;
            if v >= MAX_CPUS {
                return Err(CpulistError::BeyondLimit { cpu: v });
            }
            Ok(v)
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (parse_cpu(a)?, parse_cpu(b)?),
            None => {
                let v = parse_cpu(range)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(CpulistError::Backwards { item: item.to_string() });
        }
        let mut cpu = lo;
        while cpu <= hi {
            set.insert(cpu);
            cpu += stride;
        }
    }
    Ok(set)
}

/// `for_each_cpu_wrap()` (cpumask.h) as a cursor: the CPUs of a set in the
/// order `start..n`, then `0..start`. It reads the set afresh at each step,
/// so a loop may drop CPUs it has not reached yet (as `select_idle_core()`
/// does), and it jumps from member to member instead of testing every
/// position.
#[derive(Clone, Copy, Debug)]
pub struct CpuWrap {
    next: usize,
    start: usize,
    n: usize,
    wrapped: bool,
}

impl CpuWrap {
    /// Start at CPU `start`, taken modulo `n` (so `target + 1` may be `n`).
    pub fn new(start: usize, n: usize) -> Self {
        let start = if start >= n { start % n.max(1) } else { start };
        CpuWrap { next: start, start, n, wrapped: false }
    }

    /// The next CPU of `set` in wrap order, each position visited at most once.
    pub fn next_in(&mut self, set: &CpuSet) -> Option<usize> {
        if !self.wrapped {
            if let Some(c) = set.next_from(self.next).filter(|&c| c < self.n) {
                self.next = c + 1;
                return Some(c);
            }
            self.wrapped = true;
            self.next = 0;
        }
        let c = set.next_from(self.next).filter(|&c| c < self.start)?;
        self.next = c + 1;
        Some(c)
    }
}

impl CpuSet {
    /// `for_each_cpu_wrap()` over this set as it is now.
    pub fn iter_wrap(&self, start: usize) -> impl Iterator<Item = usize> + '_ {
        let mut cursor = CpuWrap::new(start, MAX_CPUS);
        std::iter::from_fn(move || cursor.next_in(self))
    }
}

#[cfg(test)]
mod tests {
    use super::CpuSet;

    /// `iter_and_in` over a set's word span, and `and().iter()`, yield the
    /// CPUs both sets contain, for sets within one word, across words, and
    /// empty.
    #[test]
    fn iter_and_in_matches_and_iter() {
        let sets = [
            CpuSet::empty(),
            CpuSet::from_iter([3, 4]),
            CpuSet::from_iter([63, 64]),
            CpuSet::from_iter([0, 100, 200, 511]),
            CpuSet::from_iter(0..224),
            CpuSet::from_iter((0..512).step_by(7)),
        ];
        for a in &sets {
            let span = a.word_span();
            for b in &sets {
                let want: Vec<usize> = (0..512).filter(|&c| a.contains(c) && b.contains(c)).collect();
                assert_eq!(a.and(b).iter().collect::<Vec<_>>(), want, "{a:?} & {b:?}");
                assert_eq!(a.iter_and_in(b, span).collect::<Vec<_>>(), want, "{a:?} & {b:?} over {span:?}");
            }
            assert_eq!(a.iter_in(span).collect::<Vec<_>>(), a.iter().collect::<Vec<_>>(), "{a:?} over {span:?}");
        }
        assert_eq!(CpuSet::from_iter([63, 64]).word_span(), (0, 2));
        assert_eq!(CpuSet::empty().word_span(), (0, 0));
    }

    /// The cursor visits what `for k in 1..=n { (start + k) % n }` with a
    /// live membership test visits, also when the loop drops CPUs ahead.
    #[test]
    fn wrap_cursor_matches_the_modulo_scan() {
        let n = 70;
        for start in 0..=n {
            let set: CpuSet = (0..n).filter(|c| c % 3 != 1).chain([n + 5]).collect();
            let (mut a, mut b) = (set, set);
            let mut modulo = Vec::new();
            for k in 0..n {
                let cpu = (start + k) % n;
                if a.contains(cpu) {
                    modulo.push(cpu);
                    a.remove((cpu + 7) % n);
                }
            }
            let mut cursor = Vec::new();
            let mut scan = CpuWrap::new(start, n);
            while let Some(cpu) = scan.next_in(&b) {
                cursor.push(cpu);
                b.remove((cpu + 7) % n);
            }
            assert_eq!(cursor, modulo, "start {start}");
        }
        let set: CpuSet = [1, 4, 9, 70].into_iter().collect();
        assert_eq!(set.iter_wrap(5).collect::<Vec<_>>(), [9, 70, 1, 4]);
        assert_eq!(set.iter_wrap(0).collect::<Vec<_>>(), [1, 4, 9, 70]);
    }

    use super::*;

    #[test]
    fn iter_and_next_from_walk_every_word() {
        let cpus = [0, 5, 63, 64, 200, 447, 448, 511];
        let s: CpuSet = cpus.iter().copied().collect();
        assert_eq!(s.iter().collect::<Vec<_>>(), cpus);
        assert_eq!(CpuSet::empty().iter().next(), None);
        for start in 0..MAX_CPUS + 2 {
            assert_eq!(s.next_from(start), cpus.iter().copied().find(|&c| c >= start), "from {start}");
        }
    }

    #[test]
    fn parses_taskset_syntax_and_prints_it_back() {
        let s = parse_cpulist("4-7,20-23").unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![4, 5, 6, 7, 20, 21, 22, 23]);
        assert_eq!(s.to_cpulist(), "4-7,20-23");
        assert_eq!(parse_cpulist("0-6:2").unwrap().to_cpulist(), "0,2,4,6");
        assert_eq!(parse_cpulist(" 3 , 1 ").unwrap().to_cpulist(), "1,3");
    }

    #[test]
    fn rejects_malformed_lists() {
        for bad in ["", "a", "3-1", "1-", "0-4:0", "1,,2", "600"] {
            assert!(parse_cpulist(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn set_algebra() {
        let a = parse_cpulist("0-3").unwrap();
        let b = parse_cpulist("2-5").unwrap();
        assert_eq!(a.and(&b).to_cpulist(), "2-3");
        assert_eq!(a.or(&b).to_cpulist(), "0-5");
        assert!(a.and(&b).is_subset(&a));
        assert_eq!(b.last(), Some(5));
        assert_eq!(a.len(), 4);
    }
}
