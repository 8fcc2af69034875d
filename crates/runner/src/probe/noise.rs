//! Interference as a spinning thread sees it (like osnoise): one thread per
//! CPU reads CLOCK_MONOTONIC in a tight loop; two reads further apart than
//! a threshold mean something else ran (an interrupt, a softirq, the host
//! preempting the vCPU). A gap during which this thread was involuntarily
//! switched out means another task ran: that is load, which the model
//! simulates as tasks, so such gaps are counted apart. Steal comes from
//! /proc/stat's per-CPU steal column over the same time, less one
//! tick per CPU of rounding.

use super::error::ProbeError;
use schedlab_topology::host::NoiseProbe;

use crate::sys::{now_ns, set_affinity, set_comm};

/// Shortest gap that counts: a clock read takes ~20-50 ns, a cache miss
/// storm far less than 2 us.
pub const GAP_THRESHOLD_NS: u64 = 2_000;
/// Gaps kept per CPU at most (memory bound for a very noisy machine).
const MAX_GAPS: usize = 200_000;

fn involuntary_switches() -> i64 {
    // SAFETY: `ru` is a valid out-pointer; RUSAGE_THREAD reports the caller.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_nivcsw
    }
}

/// (gaps, gaps with another task inside) of one spinner.
fn spin(cpu: usize, duration_ns: u64) -> Result<(Vec<u64>, usize), ProbeError> {
    set_affinity(&[cpu]).map_err(|source| ProbeError::Pin { who: "", cpu, source })?;
    set_comm("schedlab-noise");
    let mut gaps = Vec::new();
    let mut preempted = 0;
    let mut ivcsw = involuntary_switches();
    let end = now_ns() + duration_ns;
    let mut last = now_ns();
    while last < end {
        let t = now_ns();
        if t - last >= GAP_THRESHOLD_NS {
            let now_ivcsw = involuntary_switches();
            if now_ivcsw != ivcsw {
                preempted += 1;
                ivcsw = now_ivcsw;
            } else if gaps.len() < MAX_GAPS {
                gaps.push(t - last);
            }
            // The getrusage call is not part of the next gap.
            last = now_ns();
        } else {
            last = t;
        }
    }
    Ok((gaps, preempted))
}

/// Per-CPU steal ticks (USER_HZ) from /proc/stat, in `cpus` order.
fn steal_ticks(cpus: &[usize]) -> Option<Vec<u64>> {
    let all = crate::steal::read();
    cpus.iter().map(|c| all.iter().find(|(cpu, _)| cpu == c).map(|&(_, ticks)| ticks)).collect()
}

/// The interrupts counted on each of `cpus` in /proc/interrupts text,
/// summed over its rows. The header names the CPU columns (`CPU0 CPU1`,
/// only online CPUs); a row carries one count per column after its label,
/// then the chip and name. Rows with fewer counts (`ERR:`, `MIS:` hold one
/// machine-wide number) are skipped.
pub fn interrupt_counts(text: &str, cpus: &[usize]) -> Option<Vec<u64>> {
    let mut lines = text.lines();
    let columns: Vec<usize> = lines
        .next()?
        .split_whitespace()
        .map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect::<Option<_>>()?;
    let at: Vec<usize> = cpus.iter().map(|c| columns.iter().position(|k| k == c)).collect::<Option<_>>()?;
    let mut out = vec![0u64; cpus.len()];
    for line in lines {
        let counts: Vec<u64> =
            line.split_whitespace().skip(1).take(columns.len()).map_while(|v| v.parse().ok()).collect();
        if counts.len() == columns.len() {
            for (o, &i) in out.iter_mut().zip(&at) {
                *o += counts[i];
            }
        }
    }
    Some(out)
}

fn read_interrupts(cpus: &[usize]) -> Option<Vec<u64>> {
    interrupt_counts(&std::fs::read_to_string("/proc/interrupts").ok()?, cpus)
}

/// (steal beyond the counter's resolution, raw steal), ns, summed over CPUs.
/// /proc/stat counts in USER_HZ ticks (10 ms): a CPU whose counter rose by
/// one tick may have lost anything from a few microseconds to two ticks, so
/// one tick per CPU is taken as rounding and only the rest as steal.
pub fn steal_beyond_resolution(before: &[u64], after: &[u64], tick_ns: u64) -> (u64, u64) {
    let deltas = before.iter().zip(after).map(|(b, a)| a.saturating_sub(*b));
    let (mut sure, mut raw) = (0, 0);
    for d in deltas {
        sure += d.saturating_sub(1) * tick_ns;
        raw += d * tick_ns;
    }
    (sure, raw)
}

/// Run one spinner per CPU in `cpus` for `duration_ns`.
pub fn noise_probe(cpus: &[usize], duration_ns: u64) -> Result<NoiseProbe, ProbeError> {
    let before = steal_ticks(cpus);
    let irqs_before = read_interrupts(cpus);
    let results: Vec<Result<(Vec<u64>, usize), ProbeError>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus.iter().map(|&c| s.spawn(move || spin(c, duration_ns))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or(Err(ProbeError::Panicked("a spinner")))).collect()
    });
    let after = steal_ticks(cpus);
    let interrupts = match (irqs_before, read_interrupts(cpus)) {
        (Some(b), Some(a)) => Some(b.iter().zip(&a).map(|(b, a)| a.saturating_sub(*b)).sum()),
        _ => None,
    };
    let user_hz = crate::steal::ticks_per_second();
    let (steal_ns, steal_raw_ns) = match (before, after) {
        (Some(b), Some(a)) => steal_beyond_resolution(&b, &a, 1_000_000_000 / user_hz),
        _ => (0, 0),
    };
    let mut gaps = Vec::new();
    let mut preempted = 0;
    for r in results {
        let (g, p) = r?;
        gaps.extend(g);
        preempted += p;
    }
    Ok(NoiseProbe {
        // Each spinner ran for duration_ns; `elapsed` adds thread start-up.
        duration_ns,
        cpus: cpus.len(),
        threshold_ns: GAP_THRESHOLD_NS,
        gaps,
        preempted,
        steal_ns,
        steal_raw_ns,
        interrupts,
    })
}

#[cfg(test)]
mod tests {
    use super::{interrupt_counts, steal_beyond_resolution};

    #[test]
    fn interrupt_rows_are_summed_per_cpu_column() {
        let text = "           CPU0       CPU1       CPU3\n\
          0:         37          0          2   IO-APIC   2-edge      timer\n\
         36:          0         15          1  PCI-MSIX-0000:00:02.0 1-edge virtio1-req\n\
        LOC:       1000       2000       3000   Local timer interrupts\n\
        ERR:          5\n";
        assert_eq!(interrupt_counts(text, &[0, 1]), Some(vec![1037, 2015]));
        assert_eq!(interrupt_counts(text, &[3]), Some(vec![3003]), "columns are CPU numbers, not positions");
        assert_eq!(interrupt_counts(text, &[2]), None, "an offline CPU has no column");
        assert_eq!(interrupt_counts("garbage\n", &[0]), None);
    }

    #[test]
    fn one_tick_per_cpu_is_rounding_not_steal() {
        let tick = 10_000_000;
        assert_eq!(steal_beyond_resolution(&[5, 7], &[6, 7], tick), (0, tick));
        assert_eq!(steal_beyond_resolution(&[5, 7], &[9, 8], tick), (3 * tick, 5 * tick));
        assert_eq!(steal_beyond_resolution(&[9], &[3], tick), (0, 0), "a counter never runs backwards");
    }
}
