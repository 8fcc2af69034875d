//! schbench's own metrics, computed from the workload's trace markers the way
//! schbench computes them (schbench.c, main@24e32b8, read and restated here):
//!
//! * **wakeup latency**: a worker's `fwait()` returning minus its
//!   `wake_time`, which the message thread overwrote with the **one**
//!   timestamp it takes at the start of each list run (`xlist_wake_all()`),
//!   so a worker posted late in the list is charged for the message
//!   thread's serial wake loop. Markers: the message thread's `post` on its
//!   wake list (the timestamp), its `signal` of the worker's futex (the
//!   stamp), the worker's `wait_done` on it.
//! * **request latency**: from that `wait_done` (schbench's `work_start`,
//!   just before the usleep) to the end of the request (`loop_end`).
//! * **average rps**: completed requests (`loop_count`, the workers'
//!   `loop_end`s) / runtime.
//! * **RPS percentiles**: one sample per second of requests completed in
//!   that second, the first taken at the start (0, as schbench's first
//!   `0/0` sample is), then at 1 s, 2 s, … up to the end of the run.
//! * **percentiles**: fio's log-linear "plat" histogram (8 bits per power of
//!   two, the bucket's midpoint reported) over whole microseconds, samples of
//!   0 µs dropped (`if (delta > 0) add_lat()`), and the walk of
//!   `calc_percentiles()`: the first bucket where the running count reaches
//!   `p/100 × n`.
//!
//! Times are truncated to microseconds per timestamp before subtracting, as
//! two `gettimeofday()` calls are. Roles are found by the expansion's object
//! names (`schbench-list<m>`, `schbench-wf<m>.<i>`), so a trace captured from
//! a real run of the same scenario is measured identically.

use rustc_hash::FxHashMap as HashMap;

use schedlab_trace::{Event, EventKind, Nanos, Pid, TaskTable, Trace, UserOp};

/// `PLAT_BITS`: buckets per power of two = 2^8.
pub const PLAT_BITS: u32 = 8;
const PLAT_VAL: u32 = 1 << PLAT_BITS;
const PLAT_GROUP_NR: u32 = 19;
/// Number of buckets; values beyond the last group land in the last bucket.
pub const PLAT_NR: usize = (PLAT_GROUP_NR * PLAT_VAL) as usize;
/// The percentiles schbench computes (`plist`).
pub const PLIST: [f64; 5] = [20.0, 50.0, 90.0, 99.0, 99.9];

/// Bucket of a value: exact below 512, then 256 buckets per power of two.
pub fn plat_val_to_idx(val: u32) -> usize {
    let msb = if val == 0 { 0 } else { 31 - val.leading_zeros() };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value a bucket reports: its own value when exact, else the midpoint
/// of its range (truncated to an integer, as the C conversion does).
pub fn plat_idx_to_val(idx: usize) -> u32 {
    let idx = idx.min(PLAT_NR - 1) as u32;
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx % PLAT_VAL) as f64;
    (base as f64 + (k + 0.5) * (1u64 << error_bits) as f64) as u32
}

/// schbench's `struct stats`: a plat histogram with min and max.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatHistogram {
    pub plat: Vec<u32>,
    pub nr_samples: u64,
    /// As schbench keeps them: `min` 0 means "none yet".
    pub min: u32,
    pub max: u32,
}

impl Default for PlatHistogram {
    fn default() -> Self {
        PlatHistogram { plat: vec![0; PLAT_NR], nr_samples: 0, min: 0, max: 0 }
    }
}

impl PlatHistogram {
    /// `add_lat()`.
    pub fn add(&mut self, v: u32) {
        self.max = self.max.max(v);
        if self.min == 0 || v < self.min {
            self.min = v;
        }
        self.plat[plat_val_to_idx(v)] += 1;
        self.nr_samples += 1;
    }

    /// `calc_percentiles()` for `plist`: each percentile's reported value.
    /// Empty when there are no samples.
    pub fn percentiles(&self, plist: &[f64]) -> Vec<u32> {
        let mut out = Vec::with_capacity(plist.len());
        if self.nr_samples == 0 || plist.is_empty() {
            return out;
        }
        let nr = self.nr_samples as f64;
        let mut sum = 0u64;
        for (i, &count) in self.plat.iter().enumerate() {
            sum += count as u64;
            while out.len() < plist.len() && sum as f64 >= plist[out.len()] / 100.0 * nr {
                out.push(plat_idx_to_val(i));
            }
            if out.len() == plist.len() {
                break;
            }
        }
        out
    }

    /// One of schbench's blocks: the percentiles picked by `shown` (indices
    /// into [`PLIST`]), `star` marking the headline one.
    pub fn render(&self, label: &str, units: &str, runtime_s: u64, shown: &[usize], star: usize) -> String {
        let mut s = String::new();
        let vals = self.percentiles(&PLIST);
        if !vals.is_empty() {
            s.push_str(&format!(
                "{label} percentiles ({units}) runtime {runtime_s} (s) ({} total samples)\n",
                self.nr_samples
            ));
            for &i in shown {
                let mark = if i == star { "* " } else { "  " };
                s.push_str(&format!("\t{mark}{:2.1}th: {}\n", PLIST[i], vals[i]));
            }
        }
        s.push_str(&format!("\t  min={}, max={}\n", self.min, self.max));
        s
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Other,
    List,
    WorkerFutex,
}

/// Folds trace events, in time order, into schbench's figures; works on a
/// stream (`simulate_streaming`) as well as on a whole trace.
#[derive(Clone, Debug)]
pub struct SchbenchCollector {
    roles: Vec<Role>,
    /// The timestamp of each message thread's current list run.
    stamp: HashMap<Pid, Nanos>,
    /// Per worker-futex object: the `wake_time` the message thread stamped.
    wake_time: Vec<Option<Nanos>>,
    /// Per worker-futex object: posts by a message thread, and waits returned.
    posts: Vec<u64>,
    waits: Vec<u64>,
    /// Per worker pid: the current request's start (`work_start`).
    work_start: HashMap<Pid, Nanos>,
    /// Per worker pid: requests completed, and waits returned.
    requests: HashMap<Pid, u64>,
    woken: HashMap<Pid, u64>,
    /// Completed requests per whole second of the run.
    per_second: Vec<u64>,
    wakeup: PlatHistogram,
    request: PlatHistogram,
    list_runs: u64,
    end: Option<Nanos>,
}

impl SchbenchCollector {
    /// Roles from the object names of `table`; events after `end` are ignored.
    pub fn new(table: &TaskTable, end: Option<Nanos>) -> Self {
        let roles: Vec<Role> = table
            .objects
            .iter()
            .map(|n| {
                if n.starts_with("schbench-list") {
                    Role::List
                } else if n.starts_with("schbench-wf") {
                    Role::WorkerFutex
                } else {
                    Role::Other
                }
            })
            .collect();
        let n = roles.len();
        SchbenchCollector {
            roles,
            stamp: HashMap::default(),
            wake_time: vec![None; n],
            posts: vec![0; n],
            waits: vec![0; n],
            work_start: HashMap::default(),
            requests: HashMap::default(),
            woken: HashMap::default(),
            per_second: Vec::new(),
            wakeup: PlatHistogram::default(),
            request: PlatHistogram::default(),
            list_runs: 0,
            end,
        }
    }

    /// Whether the table has schbench's objects at all.
    pub fn applies(&self) -> bool {
        self.roles.contains(&Role::WorkerFutex)
    }

    fn role(&self, obj: u32) -> Role {
        self.roles.get(obj as usize).copied().unwrap_or(Role::Other)
    }

    pub fn observe(&mut self, ev: &Event) {
        let EventKind::User { pid, op } = ev.kind else { return };
        if self.end.is_some_and(|end| ev.ts > end) {
            return;
        }
        let ts = ev.ts;
        match op {
            UserOp::Post { obj } if self.role(obj) == Role::List => {
                self.stamp.insert(pid, ts);
                self.list_runs += 1;
            }
            UserOp::Signal { obj } if self.role(obj) == Role::WorkerFutex => {
                if let Some(&t) = self.stamp.get(&pid) {
                    self.wake_time[obj as usize] = Some(t);
                    self.posts[obj as usize] += 1;
                }
            }
            UserOp::WaitDone { obj } if self.role(obj) == Role::WorkerFutex => {
                self.waits[obj as usize] += 1;
                if let Some(t) = self.wake_time[obj as usize] {
                    let delta = usec(ts) - usec(t);
                    if delta > 0 {
                        self.wakeup.add(delta.min(u32::MAX as u64) as u32);
                    }
                }
                self.work_start.insert(pid, ts);
                *self.woken.entry(pid).or_default() += 1;
            }
            UserOp::LoopEnd { .. } => {
                let Some(&start) = self.work_start.get(&pid) else { return };
                *self.requests.entry(pid).or_default() += 1;
                let sec = (ts / 1_000_000_000) as usize;
                if self.per_second.len() <= sec {
                    self.per_second.resize(sec + 1, 0);
                }
                self.per_second[sec] += 1;
                let delta = usec(ts) - usec(start);
                if delta > 0 {
                    self.request.add(delta.min(u32::MAX as u64) as u32);
                }
            }
            _ => {}
        }
    }

    /// The figures for a run of `runtime_ns` (schbench's `-r`; here the
    /// simulated length of the run).
    pub fn finish(&self, runtime_ns: Nanos) -> SchbenchReport {
        let completed: u64 = self.requests.values().sum();
        // One RPS sample at 0 s, then one per whole second up to the end.
        let mut rps = PlatHistogram::default();
        rps.add(0);
        let whole_seconds = (runtime_ns / 1_000_000_000) as usize;
        for s in 0..whole_seconds {
            let n = self.per_second.get(s).copied().unwrap_or(0);
            rps.add(n.min(u32::MAX as u64) as u32);
        }
        let mut problems = Vec::new();
        for (obj, (&p, &w)) in self.posts.iter().zip(&self.waits).enumerate() {
            if self.roles[obj] == Role::WorkerFutex && !(w <= p && p <= w + 1) {
                problems.push(format!("worker futex #{obj}: {p} posts but {w} waits returned"));
            }
        }
        let mut workers: Vec<(&Pid, &u64)> = self.woken.iter().collect();
        workers.sort_unstable();
        for (pid, &w) in workers {
            let n = self.requests.get(pid).copied().unwrap_or(0);
            if !(n <= w && w <= n + 1) {
                problems.push(format!("worker {pid}: woken {w} times but completed {n} requests"));
            }
        }
        let workers = self.work_start.len();
        SchbenchReport {
            wakeup: self.wakeup.clone(),
            request: self.request.clone(),
            rps,
            completed,
            runtime_ns,
            average_rps: if runtime_ns == 0 { 0.0 } else { completed as f64 * 1e9 / runtime_ns as f64 },
            workers,
            posts: self.posts.iter().sum(),
            waits: self.waits.iter().sum(),
            list_runs: self.list_runs,
            per_worker: {
                let mut v: Vec<(Pid, u64)> = self.requests.iter().map(|(p, n)| (*p, *n)).collect();
                v.sort_unstable();
                v
            },
            problems,
        }
    }
}

fn usec(ns: Nanos) -> u64 {
    ns / 1_000
}

/// schbench's final report for one run.
#[derive(Clone, Debug)]
pub struct SchbenchReport {
    pub wakeup: PlatHistogram,
    pub request: PlatHistogram,
    pub rps: PlatHistogram,
    /// Requests completed (the sum of the workers' `loop_count`).
    pub completed: u64,
    pub runtime_ns: Nanos,
    /// `completed / runtime`.
    pub average_rps: f64,
    /// Workers seen completing a wait on their futex.
    pub workers: usize,
    /// Worker futex posts by message threads, and worker waits that returned.
    pub posts: u64,
    pub waits: u64,
    /// `xlist_wake_all()` runs.
    pub list_runs: u64,
    /// Requests completed per worker pid.
    pub per_worker: Vec<(Pid, u64)>,
    /// Broken schbench invariants (a worker run without a post, …); empty normally.
    pub problems: Vec<String>,
}

impl SchbenchReport {
    /// The final block schbench prints, in its own layout.
    pub fn render(&self) -> String {
        let secs = self.runtime_ns / 1_000_000_000;
        let mut s = String::new();
        // PLIST_FOR_LAT = 50, 90, 99, 99.9 with 99 starred; PLIST_FOR_RPS = 20, 50, 90 with 50 starred.
        s.push_str(&self.wakeup.render("Wakeup Latencies", "usec", secs, &[1, 2, 3, 4], 3));
        s.push_str(&self.request.render("Request Latencies", "usec", secs, &[1, 2, 3, 4], 3));
        s.push_str(&self.rps.render("RPS", "requests", secs, &[0, 1, 2], 1));
        s.push_str(&format!("average rps: {:.2}\n", self.average_rps));
        if self.runtime_ns < 2_000_000_000 {
            s.push_str("(runs shorter than 2 s have too few once-per-second RPS samples for percentiles)\n");
        }
        for p in &self.problems {
            s.push_str(&format!("schbench invariant broken: {p}\n"));
        }
        s
    }
}

/// schbench's figures for a whole trace (events in time order), or `None`
/// when the trace has no schbench objects.
pub fn schbench_report(trace: &Trace, end_ns: Nanos) -> Option<SchbenchReport> {
    let mut c = SchbenchCollector::new(&trace.table, Some(end_ns));
    if !c.applies() {
        return None;
    }
    for ev in trace.in_time_order().iter() {
        c.observe(ev);
    }
    Some(c.finish(end_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_512_then_log_linear() {
        for v in 0..512 {
            assert_eq!(plat_val_to_idx(v), v as usize);
            assert_eq!(plat_idx_to_val(v as usize), v);
        }
        // 512..1023 step 2: bucket 512 + (v >> 1) & 255 = 256 + v/2.
        assert_eq!(plat_val_to_idx(512), 512);
        assert_eq!(plat_val_to_idx(513), 512);
        assert_eq!(plat_val_to_idx(514), 513);
        assert_eq!(plat_idx_to_val(512), 513); // midpoint of [512, 514)
        assert_eq!(plat_val_to_idx(u32::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_walk_the_buckets_like_calc_percentiles() {
        let mut h = PlatHistogram::default();
        for v in 1..=100 {
            h.add(v);
        }
        // p20: first bucket where the count reaches 20 → 20; p99.9 needs 99.9 → 100.
        assert_eq!(h.percentiles(&PLIST), vec![20, 50, 90, 99, 100]);
        assert_eq!((h.min, h.max), (1, 100));
        let mut h = PlatHistogram::default();
        for v in [1000, 1001, 5000] {
            h.add(v);
        }
        // 1000 and 1001 share the bucket [1000, 1002) reported as 1001;
        // 5000 falls in [4992, 5008) reported as 5000.
        assert_eq!(h.percentiles(&[50.0, 90.0]), vec![1001, 5000]);
    }
}
