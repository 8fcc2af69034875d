//! Not in the kernel: the per-CPU sums of `update_sg_lb_stats()` kept per
//! group span between balances.
//!
//! The kernel walks every CPU of every group at each balance; so did the
//! model, and on a 224-CPU machine a newidle balance read ~100 runqueues
//! (a quarter of a schbench-spr run, issue 39). The sums a walk adds up —
//! load, utilisation, runnable, the two task counts, the idle CPUs, the
//! CPUs with more than one task — are here kept per distinct group span
//! and moved by each CPU's change since it was last counted: a balance
//! first recounts the CPUs of its domain whose runqueue was written
//! ([`crate::sched::Runqueues`] notes every mutable borrow), then reads a
//! group's sums in a few steps instead of walking its CPUs. Integer sums
//! moved by differences are the walk's sums exactly.
//!
//! What a walk decides per CPU beyond summing is left to the walk: a group
//! with a misfit task or a CPU squeezed by RT/DL time (counted here, so the
//! balancer knows to walk), a group not wholly in the balance's CPUs
//! (`env->cpus` after pinned tasks), and EAS's per-CPU overutilized test.
//! `idle_cpu()` is the one figure that changes without a write: a CPU's
//! newidle balance keeps it busy until `Rq::newidle_until` passes, so such
//! CPUs are noted and tested against the clock at each read. Debug builds
//! (the test suite) compare every read with the walk.

use schedlab_topology::CpuSet;

use crate::sched::Rq;
use crate::topology::SchedDomains;

/// Domains of at most this many CPUs are walked, not read from the sums:
/// on a 32-CPU Ryzen a balance recounted ~2 CPUs at ~108 instructions
/// each, more than a walk that stops at the first busy CPU (asym_min:
/// 2 235 M instructions with the walk everywhere, 2 346 M with the sums
/// everywhere; issue 39). Past it (a 224-CPU machine's 112-CPU LLC) a
/// balance reads ~100 CPUs, few of them changed since the last read.
pub(crate) const KEPT_SUMS_MIN_CPUS: u32 = 64;

/// Whether a balance of a domain spanning `span_weight` CPUs reads the
/// sums ([`KEPT_SUMS_MIN_CPUS`]). Debug builds (the test suite) read them
/// on every domain, each read checked against the walk.
pub(crate) fn reads_kept_sums(span_weight: u32) -> bool {
    cfg!(debug_assertions) || span_weight > KEPT_SUMS_MIN_CPUS
}

/// How a balance reads a domain's group sums ([`crate::fair::lb::LbEnv`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptSums {
    /// Not recounted for this balance: its groups are walked.
    Walk,
    /// Recounted; a group partly outside `env->cpus` is walked.
    Counted,
    /// Recounted, and every group lies in `env->cpus`.
    AllInCpus,
}

/// One CPU's part in the sums of every group span holding it, as last counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CpuFigures {
    load: u64,
    util: u64,
    runnable: u64,
    h_nr: u32,
    nr_running: u32,
    /// `idle_cpu()` but for a newidle balance that may still hold the CPU.
    idle_unless_held: bool,
    /// ... and one did when the CPU was counted (`Rq::newidle_until` later).
    held: bool,
    misfit: bool,
    /// One fair task on a CPU whose capacity RT/DL time reduced: what
    /// `sched_reduced_capacity()` tests with a domain's margin.
    reduced: bool,
}

impl CpuFigures {
    fn of(rq: &Rq, capacity_orig: u64, runnable_only: bool, now: u64) -> Self {
        let h_nr = rq.lb_h_nr(runnable_only);
        let idle_unless_held = rq.is_idle_at(u64::MAX);
        CpuFigures {
            load: rq.cpu_load(),
            util: rq.cpu_util_cfs(capacity_orig),
            runnable: rq.cpu_runnable(),
            h_nr,
            nr_running: rq.nr_running,
            idle_unless_held,
            held: idle_unless_held && now < rq.newidle_until,
            misfit: rq.misfit_task_load != 0,
            reduced: h_nr == 1 && rq.cpu_capacity < capacity_orig,
        }
    }
}

/// The sums over one group span's CPUs, as `update_sg_lb_stats()` adds
/// them up (wrapping: a difference may wrap, the sum does not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SpanSums {
    pub load: u64,
    pub util: u64,
    pub runnable: u64,
    pub h_nr: u32,
    pub nr_running: u32,
    /// CPUs with `nr_running > 1`.
    pub overloaded_cpus: u32,
    /// CPUs `idle_cpu()` unless a newidle balance still holds them.
    pub idle_unless_held: u32,
    /// Those of them a newidle balance held when they were counted.
    pub held_cpus: u32,
    /// CPUs with a misfit task.
    pub misfit_cpus: u32,
    /// CPUs with one fair task and a capacity below their original one.
    pub reduced_cpus: u32,
}

impl SpanSums {
    /// Adds `f` (`sign` 1) or takes it away (`sign` `u64::MAX`, i.e. -1).
    fn add(&mut self, f: &CpuFigures, sign: u64) {
        self.add_sums(&SpanSums::of_one(f), sign);
    }

    /// The sums of a span holding one CPU whose figures are `f`.
    fn of_one(f: &CpuFigures) -> SpanSums {
        SpanSums {
            load: f.load,
            util: f.util,
            runnable: f.runnable,
            h_nr: f.h_nr,
            nr_running: f.nr_running,
            overloaded_cpus: u32::from(f.nr_running > 1),
            idle_unless_held: u32::from(f.idle_unless_held),
            held_cpus: u32::from(f.held),
            misfit_cpus: u32::from(f.misfit),
            reduced_cpus: u32::from(f.reduced),
        }
    }

    /// `self += sign * d`, field by field, wrapping.
    #[inline]
    fn add_sums(&mut self, d: &SpanSums, sign: u64) {
        let sign32 = sign as u32;
        self.load = self.load.wrapping_add(d.load.wrapping_mul(sign));
        self.util = self.util.wrapping_add(d.util.wrapping_mul(sign));
        self.runnable = self.runnable.wrapping_add(d.runnable.wrapping_mul(sign));
        self.h_nr = self.h_nr.wrapping_add(d.h_nr.wrapping_mul(sign32));
        self.nr_running = self.nr_running.wrapping_add(d.nr_running.wrapping_mul(sign32));
        self.overloaded_cpus = self.overloaded_cpus.wrapping_add(d.overloaded_cpus.wrapping_mul(sign32));
        self.idle_unless_held = self.idle_unless_held.wrapping_add(d.idle_unless_held.wrapping_mul(sign32));
        self.held_cpus = self.held_cpus.wrapping_add(d.held_cpus.wrapping_mul(sign32));
        self.misfit_cpus = self.misfit_cpus.wrapping_add(d.misfit_cpus.wrapping_mul(sign32));
        self.reduced_cpus = self.reduced_cpus.wrapping_add(d.reduced_cpus.wrapping_mul(sign32));
    }
}

/// The sums (`SpanSums`) of every distinct group span of the machine's domains.
#[derive(Clone, Debug)]
pub struct GroupSums {
    /// By group id (`SchedGroup::id`): its span's index in `spans`.
    span_of_group: Vec<u32>,
    spans: Vec<SpanSums>,
    /// By CPU: the indices of the spans that hold it.
    spans_of_cpu: Vec<Vec<u32>>,
    figures: Vec<CpuFigures>,
    /// The CPUs counted in `held_cpus`.
    held: CpuSet,
    /// By CPU and domain level: the union of the domain's group spans and
    /// its words, recounted before a balance of the domain reads them (not
    /// the domain's span: an overlap group built from a sibling's domain
    /// on an asymmetric NUMA machine may reach past it).
    read_spans: Vec<Vec<(CpuSet, (usize, usize))>>,
}

impl GroupSums {
    /// Zero sums for the groups of `domains`: every CPU starts noted as
    /// written ([`crate::sched::Runqueues::new`]), so its first count
    /// fills them in.
    pub fn new(domains: &SchedDomains) -> Self {
        let nr_cpus = domains.cpus.len();
        let groups = || domains.cpus.iter().flat_map(|c| c.domains.iter()).flat_map(|d| d.groups.iter());
        let nr_groups = groups().map(|g| g.id + 1).max().unwrap_or(0);
        let mut index: std::collections::HashMap<CpuSet, u32> = Default::default();
        let mut span_of_group = vec![u32::MAX; nr_groups];
        let mut spans_of_cpu: Vec<Vec<u32>> = vec![Vec::new(); nr_cpus];
        for cpu_domains in &domains.cpus {
            for dom in &cpu_domains.domains {
                debug_assert!(dom.imbalance_pct >= 100, "reduced_cpus bounds sched_reduced_capacity() only then");
                for group in &dom.groups {
                    // A group shared by the CPUs of its domain is seen once
                    // per CPU: hash its span once (224 CPUs: ~50 k visits).
                    if span_of_group[group.id] != u32::MAX {
                        continue;
                    }
                    let next = index.len() as u32;
                    let i = *index.entry(group.span).or_insert_with(|| {
                        for cpu in group.span.iter() {
                            spans_of_cpu[cpu].push(next);
                        }
                        next
                    });
                    span_of_group[group.id] = i;
                }
            }
        }
        let read_spans = domains
            .cpus
            .iter()
            .map(|c| {
                c.domains
                    .iter()
                    .map(|d| {
                        let union = d.groups.iter().fold(CpuSet::empty(), |u, g| u.or(&g.span));
                        (union, union.word_span())
                    })
                    .collect()
            })
            .collect();
        GroupSums {
            read_spans,
            span_of_group,
            spans: vec![SpanSums::default(); index.len()],
            spans_of_cpu,
            figures: vec![CpuFigures::default(); nr_cpus],
            held: CpuSet::empty(),
        }
    }

    /// Whether a balance on `domains` ever reads the sums: some domain is
    /// big enough (`reads_kept_sums()`), and no EAS.
    pub fn read_on(domains: &SchedDomains, sched_energy_present: bool) -> bool {
        !sched_energy_present
            && domains.cpus.iter().flat_map(|c| c.domains.iter()).any(|d| reads_kept_sums(d.span_weight))
    }

    /// Counts `cpu` again from its runqueue at `now`.
    pub(crate) fn recount(&mut self, cpu: usize, rq: &Rq, capacity_orig: u64, runnable_only: bool, now: u64) {
        let new = CpuFigures::of(rq, capacity_orig, runnable_only, now);
        if new.held {
            self.held.insert(cpu);
        } else {
            self.held.remove(cpu);
        }
        let old = std::mem::replace(&mut self.figures[cpu], new);
        if old != new {
            // The difference once, then added to each span holding the CPU.
            let mut delta = SpanSums::of_one(&new);
            delta.add(&old, u64::MAX);
            for &s in &self.spans_of_cpu[cpu] {
                self.spans[s as usize].add_sums(&delta, 1);
            }
        }
    }

    /// The CPUs the groups of `cpu`'s domain at `level` span, and their words.
    #[inline]
    pub(crate) fn read_span(&self, cpu: usize, level: usize) -> &(CpuSet, (usize, usize)) {
        &self.read_spans[cpu][level]
    }

    /// The sums of group `group_id`'s span as last counted.
    #[inline]
    pub(crate) fn of(&self, group_id: usize) -> &SpanSums {
        &self.spans[self.span_of_group[group_id] as usize]
    }

    /// The CPUs of `span` (words `words`) that a newidle balance held when
    /// they were counted: `idle_cpu()` of each must be asked of the clock.
    #[inline]
    pub(crate) fn held_in<'a>(&'a self, span: &'a CpuSet, words: (usize, usize)) -> impl Iterator<Item = usize> + 'a {
        span.iter_and_in(&self.held, words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::Runqueues;
    use crate::topology::build_sched_domains;
    use proptest::prelude::*;
    use schedlab_topology::Topology;

    #[test]
    fn runqueues_note_every_mutable_borrow_and_only_those() {
        let mut rqs = Runqueues::new((0..4).map(Rq::new).collect(), true);
        let all = CpuSet::first_n(4);
        assert_eq!(rqs.take_written(&all, all.word_span()), all, "nothing is counted at first");
        assert!(rqs.take_written(&all, all.word_span()).is_empty());
        assert_eq!(rqs[2].nr_running, 0, "a read");
        rqs[1].nr_running = 3;
        let _ = &mut rqs[3];
        let low: CpuSet = [0, 1].into_iter().collect();
        assert_eq!(rqs.take_written(&low, low.word_span()), CpuSet::single(1));
        assert_eq!(rqs.take_written(&all, all.word_span()), CpuSet::single(3), "a borrow that changed nothing counts");
    }

    /// One runqueue change: (CPU, which figure, value).
    fn change() -> impl Strategy<Value = (usize, u8, u64)> {
        (0usize..32, 0u8..9, 0u64..2048)
    }

    fn apply(rq: &mut Rq, what: u8, v: u64, now: u64) {
        match what {
            0 => rq.cfs.avg.load_avg = v,
            1 => rq.cfs.avg.util_avg = v,
            2 => rq.cfs.avg.runnable_avg = v,
            3 => rq.cfs.h_nr_queued = (v % 4) as u32,
            4 => rq.nr_running = (v % 4) as u32,
            5 => rq.curr = v.is_multiple_of(2).then_some(v as u32),
            6 => rq.newidle_until = now + v % 3 * 1000,
            7 => rq.misfit_task_load = v % 2 * v,
            _ => rq.cpu_capacity = v.max(1),
        }
    }

    proptest! {
        /// After any changes and recounts of the changed CPUs, every group
        /// span's sums are what adding up its CPUs gives, and its idle CPUs
        /// as a balance reads them (those counted, less the held ones a
        /// newidle balance still holds) are those `idle_cpu()` finds now,
        /// also when a held CPU's balance ended with no write since.
        #[test]
        fn span_sums_are_the_sums_over_their_cpus(rounds in prop::collection::vec(prop::collection::vec(change(), 0..12), 1..8)) {
            let topo = Topology::preset("ryzen-7950x").unwrap();
            let domains = build_sched_domains(&topo);
            let mut sums = GroupSums::new(&domains);
            let n = topo.nr_cpus();
            let mut rqs = Runqueues::new((0..n).map(Rq::new).collect(), true);
            let all = CpuSet::first_n(n);
            for (round, changes) in rounds.iter().enumerate() {
                let now = round as u64 * 1000;
                for &(cpu, what, v) in changes {
                    apply(&mut rqs[cpu % n], what, v, now);
                }
                for cpu in rqs.take_written(&all, all.word_span()).iter() {
                    sums.recount(cpu, &rqs[cpu], topo.cpus[cpu].capacity as u64, false, now);
                }
                for dom in domains.cpus.iter().flat_map(|c| c.domains.iter()) {
                    for group in &dom.groups {
                        let kept = sums.of(group.id);
                        let held: Vec<usize> = sums.held_in(&group.span, group.span_words).collect();
                        prop_assert_eq!(kept.held_cpus as usize, held.len());
                        let mut walked = SpanSums::default();
                        for cpu in group.span.iter() {
                            walked.add(&CpuFigures::of(&rqs[cpu], topo.cpus[cpu].capacity as u64, false, now), 1);
                        }
                        // (`held` as counted: a CPU leaves it only when recounted.)
                        walked.held_cpus = kept.held_cpus;
                        prop_assert_eq!(kept, &walked, "group {} ({})", group.id, group.span);
                        let still_held = held.iter().filter(|&&c| now < rqs[c].newidle_until).count() as u32;
                        let idle_now = group.span.iter().filter(|&c| rqs[c].is_idle_at(now)).count() as u32;
                        prop_assert_eq!(kept.idle_unless_held - still_held, idle_now, "group {}", group.id);
                    }
                }
            }
        }
    }
}
