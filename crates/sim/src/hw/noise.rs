//! Seeded interference: each `[[noise]]` source is a Poisson process on
//! each of its CPUs, with log-normal durations through the file's median
//! and 99th percentile.
//!
//! Every (source, CPU) pair draws from its own generator, derived from the
//! run's seed and the pair alone, so the interference a CPU sees depends on
//! time only — not on what the scheduler did. Two settings compared on one
//! seed meet the same interrupts at the same instants.
//!
//! What an arrival does is the engine's business (`Engine::noise`): the
//! CPU's current work stops for the duration, and interrupts or wakeups for
//! it wait until the handler (or, for steal, the host) is done. The kernel
//! model does not see interrupt time: without IRQ_TIME_ACCOUNTING the
//! running task is charged for it, as here.

use crate::rng::{splitmix64, LogNormal, Rng};
use schedlab_topology::{NoiseKind, Topology};

/// One (source, CPU) arrival process.
#[derive(Clone, Debug)]
pub(crate) struct NoiseStream {
    pub cpu: usize,
    pub source: usize,
    rng: Rng,
}

/// Every noise stream of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Noise {
    pub streams: Vec<NoiseStream>,
    /// By source: its durations and the mean gap between its arrivals,
    /// computed once rather than at each arrival (issue 39).
    durations: Vec<LogNormal>,
    mean_gap_ns: Vec<f64>,
}

/// An arrival: how long it holds the CPU, and when the next one comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arrival {
    pub duration_ns: u64,
    pub kind: NoiseKind,
    pub next_at: u64,
}

impl Noise {
    pub fn new(topo: &Topology, seed: u64) -> Self {
        let mut streams = Vec::new();
        for (source, s) in topo.noise.iter().enumerate() {
            for cpu in s.cpus.iter() {
                // A stream's own seed: the run's, mixed with its identity.
                let mut state = seed ^ 0x6e6f_6973_6500_0000 ^ ((source as u64) << 32) ^ cpu as u64;
                let stream_seed = splitmix64(&mut state);
                streams.push(NoiseStream { cpu, source, rng: Rng::new(stream_seed) });
            }
        }
        let durations = topo.noise.iter().map(|s| LogNormal::new(s.p50_ns, s.p99_ns, s.max_ns)).collect();
        let mean_gap_ns = topo.noise.iter().map(|s| 1e9 / s.rate_hz).collect();
        Noise { streams, durations, mean_gap_ns }
    }

    /// The first arrival of stream `i`, from time 0.
    pub fn first(&mut self, i: usize) -> u64 {
        self.gap(i)
    }

    /// Stream `i` arrives at `now`: the interference and the next arrival.
    pub fn arrive(&mut self, topo: &Topology, i: usize, now: u64) -> Arrival {
        let source = self.streams[i].source;
        let duration_ns = self.streams[i].rng.lognormal(&self.durations[source]).max(1);
        // The next arrival counts from the end of this one: a CPU cannot be
        // interrupted by the same source while it is still handling it.
        let next_at = now + duration_ns + self.gap(i);
        Arrival { duration_ns, kind: topo.noise[source].kind, next_at }
    }

    fn gap(&mut self, i: usize) -> u64 {
        let mean_ns = self.mean_gap_ns[self.streams[i].source];
        (self.streams[i].rng.exponential(mean_ns).min(1e15) as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(noise: &str) -> Topology {
        let text = format!("hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 2\n{noise}");
        Topology::from_toml_str("t.toml", &text).unwrap()
    }

    fn arrivals(t: &Topology, seed: u64, until: u64) -> Vec<(usize, u64, u64)> {
        let mut n = Noise::new(t, seed);
        let mut out = Vec::new();
        for i in 0..n.streams.len() {
            let mut at = n.first(i);
            while at < until {
                let a = n.arrive(t, i, at);
                out.push((n.streams[i].cpu, at, a.duration_ns));
                at = a.next_at;
            }
        }
        out
    }

    #[test]
    fn rate_and_durations_follow_the_source_and_the_seed() {
        let t = topo("[[noise]]\nkind = \"irq\"\nrate_hz = 1000\nduration_p50 = \"2us\"\nduration_p99 = \"20us\"\n");
        let a = arrivals(&t, 1, 10_000_000_000);
        for cpu in 0..2 {
            let n = a.iter().filter(|x| x.0 == cpu).count();
            assert!((9_500..=10_500).contains(&n), "CPU {cpu}: {n} arrivals in 10 s at 1 kHz");
        }
        let mut d: Vec<u64> = a.iter().map(|x| x.2).collect();
        d.sort_unstable();
        let p50 = d[d.len() / 2];
        assert!((1_800..=2_200).contains(&p50), "median {p50}");
        assert_eq!(arrivals(&t, 1, 1_000_000_000), arrivals(&t, 1, 1_000_000_000), "same seed, same noise");
        assert_ne!(arrivals(&t, 1, 1_000_000_000), arrivals(&t, 2, 1_000_000_000));
        // The two CPUs' streams are independent, not copies.
        let first: Vec<u64> = (0..2).map(|c| a.iter().find(|x| x.0 == c).unwrap().1).collect();
        assert_ne!(first[0], first[1]);
    }

    #[test]
    fn a_source_limited_to_some_cpus_leaves_the_others_alone() {
        let t = topo("[[noise]]\nkind = \"steal\"\ncpus = \"1\"\nrate_hz = 50\nduration_p50 = \"100us\"\n");
        let a = arrivals(&t, 9, 2_000_000_000);
        assert!(!a.is_empty() && a.iter().all(|x| x.0 == 1 && x.2 == 100_000));
    }
}
