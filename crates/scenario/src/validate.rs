//! Whole-scenario checks after objects are resolved: mutex discipline per
//! thread, lock-order cycles across threads, and — when the scenario has no
//! `duration` — that every program can finish.

use std::collections::{BTreeMap, BTreeSet};

use schedlab_topology::InputError;

use crate::values::Ctx;
use crate::{ObjId, ObjRef, Op, Repeat, Scenario};

/// Where one op of an expanded thread was written.
#[derive(Clone, Debug)]
pub(crate) struct OpSite {
    /// Byte offset of the operation's value.
    pub at: usize,
    /// The object name as written, `{i}` expanded (may still hold `{*}`).
    pub name: Option<String>,
    /// For `{*}` operands: index of the `poll` that binds them.
    pub binding: Option<usize>,
}

pub(crate) struct ThreadSites {
    pub ops: Vec<OpSite>,
    /// Offset of the `loop` value, if written.
    pub repeat_at: Option<usize>,
    /// Offset of the thread's `name` value.
    pub name_at: usize,
}

/// Most steps the lock-order cycle search may take (graphs here are tiny).
const CYCLE_SEARCH_BUDGET: usize = 200_000;
/// Most (held, taken) pairs recorded over all threads before giving up.
const MAX_LOCK_PAIRS: usize = 1_000_000;

pub(crate) fn check(ctx: Ctx, s: &Scenario, sites: &[ThreadSites]) -> Result<(), InputError> {
    let edges = mutex_discipline(ctx, s, sites)?;
    lock_order(ctx, s, &edges)?;
    if s.duration_ns.is_none() {
        can_finish(ctx, s, sites)?;
    }
    Ok(())
}

/// The objects an operand may name (one, or each a `{*}` may bind).
pub(crate) fn ids(r: &ObjRef) -> Vec<ObjId> {
    match r {
        ObjRef::Fixed(id) => vec![*id],
        ObjRef::ByPolled(v) => v.clone(),
    }
}

struct Held {
    ids: Vec<ObjId>,
    binding: Option<usize>,
    name: String,
    at: usize,
}

/// One thread taking `to` while holding `from`.
#[derive(Clone, Debug)]
struct Witness {
    thread: usize,
    held: String,
    held_at: usize,
    taken: String,
    at: usize,
}

type Edges = BTreeMap<(ObjId, ObjId), Vec<Witness>>;

/// Walk each thread's program once (one iteration), tracking held mutexes.
fn mutex_discipline(ctx: Ctx, s: &Scenario, sites: &[ThreadSites]) -> Result<Edges, InputError> {
    let mut edges = Edges::new();
    let mut pairs_seen = 0usize;
    for (t, (th, ts)) in s.threads.iter().zip(sites).enumerate() {
        let mut held: Vec<Held> = Vec::new();
        for (op, site) in th.program.ops.iter().zip(&ts.ops) {
            let name = site.name.clone().unwrap_or_default();
            match op {
                Op::Lock { mutex } => {
                    let want = ids(mutex);
                    for h in &held {
                        let same = h.binding == site.binding && h.ids == want;
                        let overlap = h.ids.iter().any(|x| want.contains(x));
                        if same || (overlap && h.binding.is_none() && site.binding.is_none()) {
                            return Err(ctx.at(
                                site.at,
                                format!(
                                    "thread `{}` locks `{name}` while already holding it (locked at line {}); \
                                     mutexes are not recursive, this would deadlock",
                                    th.name,
                                    ctx.line_of(h.at)
                                ),
                            ));
                        }
                        if overlap {
                            return Err(ctx.at(
                                site.at,
                                format!(
                                    "thread `{}` locks `{name}`, which may be `{}` that it already holds (locked at line {})",
                                    th.name,
                                    h.name,
                                    ctx.line_of(h.at)
                                ),
                            ));
                        }
                    }
                    for h in &held {
                        let pairs: Vec<(ObjId, ObjId)> = if h.binding.is_some() && h.binding == site.binding {
                            h.ids.iter().copied().zip(want.iter().copied()).collect()
                        } else {
                            h.ids.iter().flat_map(|a| want.iter().map(move |b| (*a, *b))).collect()
                        };
                        pairs_seen += pairs.len();
                        if pairs_seen > MAX_LOCK_PAIRS {
                            return Err(ctx.at(
                                site.at,
                                format!(
                                    "too much nested locking to check for lock-order cycles (more than {MAX_LOCK_PAIRS} \
                                     held/taken pairs): lock fewer `{{*}}` mutexes at once"
                                ),
                            ));
                        }
                        for pair in pairs {
                            let w = edges.entry(pair).or_default();
                            if !w.iter().any(|w| w.thread == t) {
                                w.push(Witness {
                                    thread: t,
                                    held: s.objects[pair.0 as usize].name.clone(),
                                    held_at: h.at,
                                    taken: s.objects[pair.1 as usize].name.clone(),
                                    at: site.at,
                                });
                            }
                        }
                    }
                    held.push(Held { ids: want, binding: site.binding, name, at: site.at });
                }
                Op::Unlock { mutex } => {
                    let want = ids(mutex);
                    match held.iter().position(|h| h.binding == site.binding && h.ids == want) {
                        Some(i) => {
                            held.remove(i);
                        }
                        None => {
                            return Err(ctx.at(
                                site.at,
                                format!(
                                    "thread `{}` unlocks `{name}`, which it does not hold at this point of its program",
                                    th.name
                                ),
                            ))
                        }
                    }
                }
                Op::CondWait { mutex, .. } => {
                    let want = ids(mutex);
                    if !held.iter().any(|h| h.binding == site.binding && h.ids == want) {
                        return Err(ctx.at(
                            site.at,
                            format!(
                                "thread `{}` waits on a condition with mutex `{name}`, which it does not hold at \
                                 this point of its program: put a `lock` of it before the `cond_wait` \
                                 (pthread_cond_wait needs it held)",
                                th.name
                            ),
                        ));
                    }
                }
                _ => {}
            }
        }
        if let Some(h) = held.first() {
            return Err(ctx.at(
                h.at,
                format!(
                    "thread `{}` ends an iteration of its program still holding `{}` (locked here): \
                     every `lock` needs an `unlock` later in the program",
                    th.name, h.name
                ),
            ));
        }
    }
    Ok(edges)
}

/// Find a cycle in the lock-order graph whose edges can be taken by distinct
/// threads (a single thread cannot deadlock with itself this way).
fn lock_order(ctx: Ctx, s: &Scenario, edges: &Edges) -> Result<(), InputError> {
    let mut adj: BTreeMap<ObjId, BTreeSet<ObjId>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        adj.entry(*a).or_default().insert(*b);
    }
    let mut budget = CYCLE_SEARCH_BUDGET;
    for &start in adj.keys() {
        let mut path = vec![start];
        if let Some(w) = cycle_from(start, &adj, edges, &mut path, &mut budget) {
            let at = w.iter().map(|w| w.at).max().unwrap_or(0);
            let parts: Vec<String> = w
                .iter()
                .map(|w| {
                    format!(
                        "thread `{}` locks `{}` (line {}) while holding `{}` (line {})",
                        s.threads[w.thread].name,
                        w.taken,
                        ctx.line_of(w.at),
                        w.held,
                        ctx.line_of(w.held_at)
                    )
                })
                .collect();
            return Err(ctx.at(at, format!("lock-order cycle: {}; these threads can deadlock", parts.join("; "))));
        }
        if budget == 0 {
            break;
        }
    }
    Ok(())
}

/// DFS for simple cycles through `start` visiting only larger node ids.
fn cycle_from(
    start: ObjId,
    adj: &BTreeMap<ObjId, BTreeSet<ObjId>>,
    edges: &Edges,
    path: &mut Vec<ObjId>,
    budget: &mut usize,
) -> Option<Vec<Witness>> {
    let last = *path.last().unwrap();
    for &next in adj.get(&last).into_iter().flatten() {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        if next == start {
            let cyc: Vec<&Vec<Witness>> = path
                .iter()
                .zip(path.iter().skip(1).chain(std::iter::once(&start)))
                .map(|(a, b)| &edges[&(*a, *b)])
                .collect();
            let mut chosen = Vec::new();
            if distinct_threads(&cyc, &mut chosen, budget) {
                return Some(chosen);
            }
        } else if next > start && !path.contains(&next) {
            path.push(next);
            if let Some(c) = cycle_from(start, adj, edges, path, budget) {
                return Some(c);
            }
            path.pop();
        }
    }
    None
}

/// Pick one witness per edge, all from different threads (backtracking).
fn distinct_threads(edges: &[&Vec<Witness>], chosen: &mut Vec<Witness>, budget: &mut usize) -> bool {
    let Some((first, rest)) = edges.split_first() else { return true };
    for w in first.iter() {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if chosen.iter().any(|c| c.thread == w.thread) {
            continue;
        }
        chosen.push(w.clone());
        if distinct_threads(rest, chosen, budget) {
            return true;
        }
        chosen.pop();
    }
    false
}

/// Without a duration, the run ends when every program has ended: each must
/// loop a finite number of times, and every wait/poll must have a producer.
fn can_finish(ctx: Ctx, s: &Scenario, sites: &[ThreadSites]) -> Result<(), InputError> {
    for (th, ts) in s.threads.iter().zip(sites) {
        if th.program.repeat == Repeat::Forever {
            let (at, how) = match ts.repeat_at {
                Some(at) => (at, ""),
                None => (ts.name_at, " (`loop` defaults to true)"),
            };
            return Err(ctx.at(
                at,
                format!(
                    "thread `{}` loops forever{how} but the scenario has no `duration`, so it could never finish: \
                     add e.g. {} or give `loop` a count",
                    th.name,
                    ctx.duration_hint()
                ),
            ));
        }
    }
    let mut signalled = BTreeSet::new();
    let mut posted = BTreeSet::new();
    for th in &s.threads {
        for op in &th.program.ops {
            match op {
                Op::Signal { efd, .. } => signalled.extend(ids(efd)),
                Op::FutexPost { futex } => signalled.extend(ids(futex)),
                Op::Post { flag } => posted.extend(ids(flag)),
                Op::CondSignal { cond } | Op::CondBroadcast { cond } => signalled.extend(ids(cond)),
                _ => {}
            }
        }
    }
    for (th, ts) in s.threads.iter().zip(sites) {
        for (op, site) in th.program.ops.iter().zip(&ts.ops) {
            match op {
                Op::Wait { efd: waited } | Op::FutexWait { futex: waited } | Op::CondWait { cond: waited, .. } => {
                    let (what, verb) = match op {
                        Op::Wait { .. } => ("eventfd", "signals"),
                        Op::FutexWait { .. } => ("futex", "posts (`fpost`)"),
                        _ => ("condition", "signals"),
                    };
                    if let Some(id) = ids(waited).into_iter().find(|id| !signalled.contains(id)) {
                        return Err(ctx.at(
                            site.at,
                            format!(
                                "thread `{}` waits on {what} `{}`, which no thread {verb}; \
                                 with no `duration` the scenario could never finish",
                                th.name, s.objects[id as usize].name
                            ),
                        ));
                    }
                }
                Op::Poll { flags, .. } if !flags.iter().any(|id| posted.contains(id)) => {
                    let names: Vec<&str> = flags.iter().map(|id| s.objects[*id as usize].name.as_str()).collect();
                    return Err(ctx.at(
                        site.at,
                        format!(
                            "thread `{}` polls flag `{}`, which no thread posts; \
                             with no `duration` the scenario could never finish",
                            th.name,
                            names.join("`, `")
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}
