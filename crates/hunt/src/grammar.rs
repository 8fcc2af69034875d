//! The hunt's scenario grammar: a small workload built from the shapes the
//! seed reports' reproducers are made of, written out as an ordinary
//! scenario file so that whatever the hunt finds runs again with
//! `schedlab run`.
//!
//! A case is 2-6 threads. Each thread is one of eight shapes:
//!
//! * `worker`: run a burst, publish that it ended, block until woken
//!   (seed 000's worker: `run`, `post`, `wait`);
//! * `waker`: wait for a worker's burst to end (busy-polling its flag, as
//!   seed 000's waker does) or sleep, then wake that worker (`signal`);
//! * `hog`: run forever, sometimes yielding;
//! * `sleeper`: run a little, sleep a little;
//! * `locker`: take a mutex (PI or not), run inside it, release it, sleep
//!   (seed 003's lock holder and waiter);
//! * `pinger`: a pair that wake each other through two eventfds;
//! * `holder` and `waiter`: a PI chain, seed 003's L and W. The holder
//!   takes the mutex and spins until the waiter, which comes later, has
//!   posted that it wants it; then the waiter blocks on it and boosts the
//!   holder (`rt_mutex_setprio()`).
//!
//! In two cases of three, 85 % of threads are SCHED_OTHER (nice 0,
//! sometimes another nice) and the rest SCHED_FIFO or SCHED_RR with a
//! random priority; the third case is an RT case: 85 % RT, mostly lockers
//! (critical sections up to 20 ms) and hogs, the cast of seed 003's
//! priority-inheritance stranding. Affinities are
//! drawn around one small "hot" range of CPUs so that threads share CPUs
//! often, while some may use every CPU. Lengths are log-uniform in whole
//! microseconds: bursts and sleeps 10 us-5 ms, hogs' runs 1-20 ms, RT
//! cases' critical sections 10 us-20 ms, start delays 10 us-20 ms.
//! A hunt for fairness also draws peer-group cases ([`generate_fair`]):
//! identical hogs, and sleepers kept off their CPUs.
//! Everything comes from the case's own [`Rng`] stream, so a
//! hunt seed and a case index give the same case on every machine.

use std::fmt::Write as _;

use schedlab_sim::rng::Rng;
use schedlab_topology::CpuSet;

/// Scheduling policy of a generated thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenPolicy {
    Other { nice: i32 },
    Fifo { prio: u32 },
    Rr { prio: u32 },
}

/// One operation, with the object names it uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenOp {
    Run(u64),
    Sleep(u64),
    Wait(String),
    Signal(String),
    Post(String),
    Poll { flag: String, after_ns: u64 },
    Lock(String),
    Unlock(String),
    Yield,
}

/// One generated thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenThread {
    pub name: String,
    /// The shape it was drawn as (a comment in the scenario file).
    pub shape: &'static str,
    pub policy: GenPolicy,
    pub affinity: CpuSet,
    pub delay_ns: u64,
    pub looped: bool,
    pub ops: Vec<GenOp>,
}

/// A generated scenario: what [`Case::to_toml`] writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The topology as the file names it (a preset or a path).
    pub topology: String,
    pub kernel: String,
    pub features: Vec<String>,
    pub duration_ns: u64,
    /// The simulation's seed (noise and jitter).
    pub seed: u64,
    /// Mutexes by name, with whether each is PI.
    pub mutexes: Vec<(String, bool)>,
    pub threads: Vec<GenThread>,
}

/// What the generator needs to know about the run it draws for.
#[derive(Clone, Debug)]
pub struct GenContext {
    pub topology: String,
    pub nr_cpus: usize,
    pub kernel: String,
    pub features: Vec<String>,
    pub duration_ns: u64,
}

const US: u64 = 1_000;

/// Log-uniform whole microseconds in `[lo_us, hi_us]`.
fn log_us(rng: &mut Rng, lo_us: u64, hi_us: u64) -> u64 {
    let (lo, hi) = ((lo_us as f64).ln(), (hi_us as f64).ln());
    let us = (lo + rng.unit_f64() * (hi - lo)).exp().round() as u64;
    us.clamp(lo_us, hi_us) * US
}

fn chance(rng: &mut Rng, p: f64) -> bool {
    rng.unit_f64() < p
}

fn pick(rng: &mut Rng, n: usize) -> usize {
    rng.below_incl(n as u64 - 1) as usize
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Worker,
    Waker,
    Hog,
    Sleeper,
    Locker,
    Pinger,
    /// Holds a mutex until its waiter has asked for it (seed 003's L:
    /// lock, spin on a flag the waiter posts, unlock).
    Holder,
    /// Posts the holder's flag and takes the mutex (seed 003's W).
    Waiter,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Worker => "worker",
            Shape::Waker => "waker",
            Shape::Hog => "hog",
            Shape::Sleeper => "sleeper",
            Shape::Locker => "locker",
            Shape::Pinger => "pinger",
            Shape::Holder => "holder",
            Shape::Waiter => "waiter",
        }
    }
}

/// Draw one case.
pub fn generate(rng: &mut Rng, ctx: &GenContext) -> Case {
    let n = 2 + pick(rng, 5);
    // One case in three is an RT case: mostly RT threads, mostly lockers
    // and hogs (seed 003's lock holder, its waiter, the task that preempts
    // the holder and the one beside it), with long critical sections.
    let rt_case = chance(rng, 1.0 / 3.0);
    // Shapes: a waker needs a worker to wake, a pinger a partner; draw the
    // rest freely and fix those up after.
    let weights = if rt_case {
        [
            (Shape::Worker, 2),
            (Shape::Waker, 1),
            (Shape::Hog, 3),
            (Shape::Sleeper, 1),
            (Shape::Locker, 4),
            (Shape::Pinger, 0),
        ]
    } else {
        [
            (Shape::Worker, 5),
            (Shape::Waker, 3),
            (Shape::Hog, 2),
            (Shape::Sleeper, 2),
            (Shape::Locker, 2),
            (Shape::Pinger, 1),
        ]
    };
    let total: u64 = weights.iter().map(|w| w.1).sum();
    let mut shapes: Vec<Shape> = (0..n)
        .map(|_| {
            let mut x = rng.below_incl(total - 1);
            for (s, w) in weights {
                if x < w {
                    return s;
                }
                x -= w;
            }
            Shape::Hog
        })
        .collect();
    // Half the RT cases of four threads or more are built around a PI
    // chain: a holder, its waiter, and hogs to preempt the holder and to
    // sit beside it.
    if rt_case && n >= 4 && chance(rng, 0.7) {
        shapes[0] = Shape::Holder;
        shapes[1] = Shape::Waiter;
        for s in shapes.iter_mut().skip(2) {
            if chance(rng, 0.7) {
                *s = Shape::Hog;
            }
        }
    }
    if shapes.contains(&Shape::Waker) && !shapes.contains(&Shape::Worker) {
        let i = shapes.iter().position(|s| *s == Shape::Waker).unwrap();
        shapes[i] = Shape::Worker;
    }
    if shapes.iter().filter(|s| **s == Shape::Pinger).count() == 1 {
        let i = shapes.iter().position(|s| *s == Shape::Pinger).unwrap();
        shapes[i] = Shape::Sleeper;
    }
    let workers: Vec<usize> = (0..n).filter(|&i| shapes[i] == Shape::Worker).collect();
    let pingers: Vec<usize> = (0..n).filter(|&i| shapes[i] == Shape::Pinger).collect();

    // The hot range: where most threads' affinities lie.
    let hot_len = 1 + pick(rng, ctx.nr_cpus.min(4));
    let hot_start = pick(rng, ctx.nr_cpus - hot_len + 1);
    let mutexes: Vec<(String, bool)> = if shapes.contains(&Shape::Holder) {
        vec![("m0".to_string(), chance(rng, 0.8))]
    } else if shapes.contains(&Shape::Locker) {
        let count = if chance(rng, 0.7) { 1 } else { 2 };
        (0..count).map(|i| (format!("m{i}"), chance(rng, 0.7))).collect()
    } else {
        Vec::new()
    };
    let burst = |rng: &mut Rng| log_us(rng, 10, 5_000);

    let mut threads = Vec::with_capacity(n);
    for (i, &shape) in shapes.iter().enumerate() {
        let chain = matches!(shape, Shape::Holder | Shape::Waiter);
        let policy = if !chain && chance(rng, if rt_case { 0.15 } else { 0.85 }) {
            GenPolicy::Other { nice: if chance(rng, 0.8) { 0 } else { rng.below_incl(25) as i32 - 10 } }
        } else {
            let prio = 1 + rng.below_incl(98) as u32;
            if chance(rng, 0.7) {
                GenPolicy::Fifo { prio }
            } else {
                GenPolicy::Rr { prio }
            }
        };
        let affinity = {
            let roll = rng.unit_f64();
            let mut set = CpuSet::default();
            let len_max = ctx.nr_cpus.min(4);
            if shape == Shape::Holder && len_max >= 2 {
                // A holder that could move: 2-4 CPUs around the hot range.
                let len = 2 + pick(rng, len_max - 1);
                let lo = (hot_start + pick(rng, hot_len)).saturating_sub(pick(rng, len)).min(ctx.nr_cpus - len);
                for c in lo..lo + len {
                    set.insert(c);
                }
            } else if shape == Shape::Hog && rt_case && chance(rng, 0.5) {
                // A pinned RT hog, on a CPU of the hot range.
                set.insert(hot_start + pick(rng, hot_len));
            } else if roll < 0.2 {
                set = CpuSet::first_n(ctx.nr_cpus);
            } else if roll < 0.4 {
                set.insert(hot_start + pick(rng, hot_len));
            } else {
                // A range of 1-4 CPUs overlapping the hot range.
                let len = 1 + pick(rng, ctx.nr_cpus.min(4));
                let lo = (hot_start + pick(rng, hot_len)).saturating_sub(pick(rng, len));
                for c in lo..(lo + len).min(ctx.nr_cpus) {
                    set.insert(c);
                }
            }
            set
        };
        let me = format!("t{i}");
        let ops = match shape {
            Shape::Worker => {
                let mut ops = vec![GenOp::Run(burst(rng))];
                ops.push(GenOp::Post(format!("done_{me}")));
                ops.push(GenOp::Wait(format!("wake_{me}")));
                ops
            }
            Shape::Waker => {
                let target = workers[pick(rng, workers.len())];
                let t = format!("t{target}");
                let mut ops = Vec::new();
                if chance(rng, 0.6) {
                    ops.push(GenOp::Poll { flag: format!("done_{t}"), after_ns: log_us(rng, 1, 200) });
                } else {
                    ops.push(GenOp::Sleep(burst(rng)));
                }
                ops.push(GenOp::Signal(format!("wake_{t}")));
                // Sometimes a second worker, woken by the same loop.
                if workers.len() > 1 && chance(rng, 0.5) {
                    let other = workers[pick(rng, workers.len())];
                    if other != target {
                        let o = format!("t{other}");
                        ops.push(GenOp::Poll { flag: format!("done_{o}"), after_ns: log_us(rng, 1, 200) });
                        ops.push(GenOp::Signal(format!("wake_{o}")));
                    }
                }
                ops
            }
            Shape::Hog => {
                let mut ops = vec![GenOp::Run(log_us(rng, 1_000, 20_000))];
                if chance(rng, 0.3) {
                    ops.push(GenOp::Yield);
                }
                ops
            }
            Shape::Sleeper => vec![GenOp::Run(burst(rng)), GenOp::Sleep(burst(rng))],
            Shape::Locker => {
                let m = mutexes[pick(rng, mutexes.len())].0.clone();
                let inside = if rt_case { log_us(rng, 10, 20_000) } else { burst(rng) };
                vec![GenOp::Lock(m.clone()), GenOp::Run(inside), GenOp::Unlock(m), GenOp::Sleep(burst(rng))]
            }
            Shape::Holder => {
                vec![
                    GenOp::Lock("m0".into()),
                    GenOp::Poll { flag: "asked".into(), after_ns: 0 },
                    GenOp::Unlock("m0".into()),
                    GenOp::Run(burst(rng)),
                    GenOp::Sleep(burst(rng)),
                ]
            }
            Shape::Waiter => vec![
                GenOp::Post("asked".into()),
                GenOp::Lock("m0".into()),
                GenOp::Unlock("m0".into()),
                GenOp::Sleep(log_us(rng, 1_000, 20_000)),
            ],
            Shape::Pinger => {
                // Pinger k pairs with pinger k^1 (the last one of an odd
                // count with the one before it).
                let k = pingers.iter().position(|&p| p == i).unwrap();
                let partner = if k ^ 1 < pingers.len() { pingers[k ^ 1] } else { pingers[k - 1] };
                let run = GenOp::Run(burst(rng));
                let signal = GenOp::Signal(format!("ping_t{partner}"));
                let wait = GenOp::Wait(format!("ping_{me}"));
                if k % 2 == 0 {
                    vec![run, signal, wait]
                } else {
                    vec![wait, run, signal]
                }
            }
        };
        // The waiter comes after the holder has its mutex; in RT cases a hog
        // often comes late, to preempt whoever holds a CPU by then.
        let late = match shape {
            Shape::Waiter => 1.0,
            Shape::Holder => 0.0,
            Shape::Hog if rt_case => 0.6,
            _ => 0.3,
        };
        let delay_ns = if chance(rng, late) { log_us(rng, 10, 20_000) } else { 0 };
        let looped = shape != Shape::Locker || chance(rng, 0.8);
        threads.push(GenThread { name: me, shape: shape.name(), policy, affinity, delay_ns, looped, ops });
    }
    // A PI chain's waiter outranks its holder: otherwise nothing is boosted.
    if let (Some(h), Some(w)) =
        (threads.iter().position(|t| t.shape == "holder"), threads.iter().position(|t| t.shape == "waiter"))
    {
        let prio = |p: GenPolicy| match p {
            GenPolicy::Fifo { prio } | GenPolicy::Rr { prio } => prio,
            GenPolicy::Other { .. } => 0,
        };
        if prio(threads[w].policy) < prio(threads[h].policy) {
            let (a, b) = (threads[h].policy, threads[w].policy);
            threads[h].policy = b;
            threads[w].policy = a;
        }
    }
    let mut case = Case {
        topology: ctx.topology.clone(),
        kernel: ctx.kernel.clone(),
        features: ctx.features.clone(),
        duration_ns: ctx.duration_ns,
        seed: rng.next_u64() >> 1,
        mutexes,
        threads,
    };
    crate::shrink::drop_unused_mutexes(&mut case);
    case
}

/// Draw a peer-group case, the fairness property's (`crate::fairness`):
/// 2-6 identical SCHED_OTHER hogs on a range of 1-4 CPUs, so that some
/// share a runqueue, and on the other CPUs, if any, up to two sleepers
/// that may not use the hogs' (they give the balancer other work without
/// sharing a runqueue with a peer).
pub fn generate_fair(rng: &mut Rng, ctx: &GenContext) -> Case {
    let m = 1 + pick(rng, ctx.nr_cpus.min(4));
    let n = 2 + pick(rng, 5);
    let lo = pick(rng, ctx.nr_cpus - m + 1);
    let mut affinity = CpuSet::default();
    for c in lo..lo + m {
        affinity.insert(c);
    }
    let nice = if chance(rng, 0.8) { 0 } else { rng.below_incl(25) as i32 - 10 };
    let mut ops = vec![GenOp::Run(log_us(rng, 1_000, 20_000))];
    if chance(rng, 0.3) {
        ops.push(GenOp::Yield);
    }
    let delay_ns = if chance(rng, 0.3) { log_us(rng, 10, 20_000) } else { 0 };
    let mut threads: Vec<GenThread> = (0..n)
        .map(|i| GenThread {
            name: format!("t{i}"),
            shape: "peer",
            policy: GenPolicy::Other { nice },
            affinity,
            delay_ns,
            looped: true,
            ops: ops.clone(),
        })
        .collect();
    let rest: Vec<usize> = (0..ctx.nr_cpus).filter(|c| !(lo..lo + m).contains(c)).collect();
    if !rest.is_empty() {
        // A case stays within 6 threads.
        for k in 0..pick(rng, 3).min(6 - n) {
            let mut set = CpuSet::default();
            for &c in rest.iter().skip(pick(rng, rest.len())).take(1 + pick(rng, 2)) {
                set.insert(c);
            }
            threads.push(GenThread {
                name: format!("t{}", n + k),
                shape: "sleeper",
                policy: GenPolicy::Other { nice: 0 },
                affinity: set,
                delay_ns: 0,
                looped: true,
                ops: vec![GenOp::Run(log_us(rng, 10, 5_000)), GenOp::Sleep(log_us(rng, 10, 5_000))],
            });
        }
    }
    Case {
        topology: ctx.topology.clone(),
        kernel: ctx.kernel.clone(),
        features: ctx.features.clone(),
        duration_ns: ctx.duration_ns,
        seed: rng.next_u64() >> 1,
        mutexes: Vec::new(),
        threads,
    }
}

/// A duration as the scenario file writes it: whole microseconds where it
/// is one, else nanoseconds.
pub fn duration_text(ns: u64) -> String {
    if ns.is_multiple_of(US) {
        format!("{}us", ns / US)
    } else {
        format!("{ns}ns")
    }
}

impl Case {
    /// Threads and operations, for "shrunk from ... to ..." lines.
    pub fn size(&self) -> (usize, usize) {
        (self.threads.len(), self.threads.iter().map(|t| t.ops.len()).sum())
    }

    /// The scenario file, with `header` as its leading comment lines.
    pub fn to_toml(&self, name: &str, header: &[String]) -> String {
        let mut s = String::new();
        for line in header {
            let _ = writeln!(s, "# {line}");
        }
        let _ = writeln!(s, "name = {}", quote(name));
        let _ = writeln!(s, "topology = {}", quote(&self.topology));
        let _ = writeln!(s, "kernel = {}", quote(&self.kernel));
        let features: Vec<String> = self.features.iter().map(|f| quote(f)).collect();
        let _ = writeln!(s, "features = [{}]", features.join(", "));
        let _ = writeln!(s, "duration = \"{}\"", duration_text(self.duration_ns));
        let _ = writeln!(s, "seed = {}", self.seed);
        for (m, pi) in &self.mutexes {
            let _ = writeln!(s, "\n[mutex.{m}]\npi = {pi}");
        }
        for t in &self.threads {
            let _ = writeln!(s, "\n[[thread]]  # {}", t.shape);
            let _ = writeln!(s, "name = {}", quote(&t.name));
            match t.policy {
                GenPolicy::Other { nice } => {
                    let _ = writeln!(s, "policy = \"SCHED_OTHER\"\nnice = {nice}");
                }
                GenPolicy::Fifo { prio } => {
                    let _ = writeln!(s, "policy = \"SCHED_FIFO\"\npriority = {prio}");
                }
                GenPolicy::Rr { prio } => {
                    let _ = writeln!(s, "policy = \"SCHED_RR\"\npriority = {prio}");
                }
            }
            let _ = writeln!(s, "affinity = {}", quote(&t.affinity.to_cpulist()));
            if t.delay_ns > 0 {
                let _ = writeln!(s, "delay = \"{}\"", duration_text(t.delay_ns));
            }
            let _ = writeln!(s, "loop = {}", t.looped);
            let ops: Vec<String> = t.ops.iter().map(op_text).collect();
            let _ = writeln!(s, "program = [{}]", ops.join(", "));
        }
        s
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn op_text(op: &GenOp) -> String {
    match op {
        GenOp::Run(ns) => format!("{{ run = \"{}\" }}", duration_text(*ns)),
        GenOp::Sleep(ns) => format!("{{ sleep = \"{}\" }}", duration_text(*ns)),
        GenOp::Wait(o) => format!("{{ wait = {} }}", quote(o)),
        GenOp::Signal(o) => format!("{{ signal = {} }}", quote(o)),
        GenOp::Post(o) => format!("{{ post = {} }}", quote(o)),
        GenOp::Poll { flag, after_ns } => {
            format!("{{ poll = {}, after = \"{}\" }}", quote(flag), duration_text(*after_ns))
        }
        GenOp::Lock(m) => format!("{{ lock = {} }}", quote(m)),
        GenOp::Unlock(m) => format!("{{ unlock = {} }}", quote(m)),
        GenOp::Yield => "{ yield = true }".to_string(),
    }
}
