//! Time the hypervisor took from the run's CPUs (steal, `/proc/stat`).
//!
//! On a guest with a paravirtual steal clock (`CONFIG_PARAVIRT_TIME_ACCOUNTING`)
//! the kernel's task clock (`rq_clock_task()`) leaves steal out, and it is
//! that clock which charges a deadline task's runtime, a CFS quota and PELT.
//! A task's wall-clock share of a window in which the host stole a third of
//! a CPU then reads half as high again as on a quiet machine: a 10 ms /
//! 100 ms reservation runs 15 % of the window. The GRUB test
//! (`tests/real_deadline.rs`) read such figures in the first full test run
//! of three sessions (the reclaiming task 99.1-100 %; the plain one 15-18 %
//! in the one that printed it), never when run again. Nothing read the
//! counters then, so steal is the likely cause, not a proven one. The
//! runner reads them on both sides of the window so the report can say.

use serde::{Deserialize, Serialize};

/// One CPU's steal over a run's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSteal {
    pub cpu: usize,
    /// Nanoseconds, counted in USER_HZ ticks (10 ms each at USER_HZ = 100).
    pub ns: u64,
}

/// Each CPU's cumulative steal in USER_HZ ticks, from `/proc/stat`'s
/// `cpuN` lines (the eighth counter: user nice system idle iowait irq
/// softirq steal). A line without the counter (kernels before 2.6.11) is
/// left out.
fn parse_proc_stat(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("cpu")?;
            let (num, fields) = rest.split_once(' ')?;
            let cpu = num.parse().ok()?;
            let steal = fields.split_whitespace().nth(7)?.parse().ok()?;
            Some((cpu, steal))
        })
        .collect()
}

/// The counters now; empty where `/proc/stat` cannot be read.
pub(crate) fn read() -> Vec<(usize, u64)> {
    std::fs::read_to_string("/proc/stat").map(|t| parse_proc_stat(&t)).unwrap_or_default()
}

/// USER_HZ, the unit of `/proc/stat` (100 where sysconf cannot say).
pub(crate) fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// The steal of `cpus` between two readings, in ns.
pub(crate) fn between(before: &[(usize, u64)], after: &[(usize, u64)], cpus: &[usize]) -> Vec<CpuSteal> {
    between_at(before, after, cpus, ticks_per_second())
}

fn between_at(before: &[(usize, u64)], after: &[(usize, u64)], cpus: &[usize], hz: u64) -> Vec<CpuSteal> {
    let at = |v: &[(usize, u64)], cpu: usize| v.iter().find(|(c, _)| *c == cpu).map(|&(_, s)| s);
    cpus.iter()
        .filter_map(|&cpu| {
            let ticks = at(after, cpu)?.checked_sub(at(before, cpu)?)?;
            Some(CpuSteal { cpu, ns: ticks.saturating_mul(1_000_000_000) / hz.max(1) })
        })
        .collect()
}

/// Above this share of the window on some CPU, past one tick of
/// rounding, the report says so.
const NOTE_ABOVE: f64 = 0.01;

/// A note for the report when some CPU lost more than [`NOTE_ABOVE`] of
/// `window_ns` to the hypervisor, past one tick of the counter's rounding
/// (as the noise probe counts it).
pub(crate) fn note(steal: &[CpuSteal], window_ns: u64) -> Option<String> {
    note_at(steal, window_ns, 1_000_000_000 / ticks_per_second())
}

fn note_at(steal: &[CpuSteal], window_ns: u64, tick_ns: u64) -> Option<String> {
    if window_ns == 0 {
        return None;
    }
    let share = |s: &CpuSteal| s.ns as f64 / window_ns as f64;
    let beyond = |s: &CpuSteal| s.ns.saturating_sub(tick_ns) as f64 / window_ns as f64;
    if !steal.iter().any(|s| beyond(s) > NOTE_ABOVE) {
        return None;
    }
    let each: Vec<String> = steal.iter().map(|s| format!("CPU {} {:.1} %", s.cpu, 100.0 * share(s))).collect();
    Some(format!(
        "the hypervisor took {} of the window (steal, /proc/stat): a kernel with \
         CONFIG_PARAVIRT_TIME_ACCOUNTING charges deadline runtime, CFS quotas and PELT in task time, without \
         steal, so wall-clock run shares read high and waits long by about as much; compare such a run with \
         care or run it again",
        each.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  8135564 12667 592778 5934940 31072 0 5260 104100 0 0\n\
                        cpu0 3822844 8818 300581 3212605 8596 0 875 52022 0 0\n\
                        cpu1 4312720 3849 292197 2722335 22476 0 4384 52078 0 0\n\
                        intr 12345 0 0\n\
                        cpu7 1 2 3 4\n";

    #[test]
    fn per_cpu_steal_is_the_eighth_counter_and_the_total_line_is_skipped() {
        assert_eq!(parse_proc_stat(STAT), vec![(0, 52022), (1, 52078)]);
    }

    #[test]
    fn steal_between_readings_counts_ticks_as_ns_for_the_cpus_asked() {
        let before = vec![(0, 100), (1, 200), (2, 5)];
        let after = vec![(0, 150), (1, 200), (2, 9)];
        let s = between_at(&before, &after, &[0, 1, 3], 100);
        assert_eq!(s, vec![CpuSteal { cpu: 0, ns: 500_000_000 }, CpuSteal { cpu: 1, ns: 0 }]);
        // A counter that went back (a CPU hot-plugged between readings) is left out.
        assert!(between_at(&after, &before, &[0], 100).is_empty());
    }

    #[test]
    fn the_note_names_each_cpu_only_when_one_lost_more_than_a_percent_past_a_tick() {
        let (window, tick) = (2_000_000_000, 10_000_000);
        let quiet = [CpuSteal { cpu: 0, ns: 10_000_000 }, CpuSteal { cpu: 1, ns: 30_000_000 }];
        assert_eq!(note_at(&quiet, window, tick), None, "1 % past the tick of rounding is not more than 1 %");
        let stolen = [CpuSteal { cpu: 0, ns: 10_000_000 }, CpuSteal { cpu: 1, ns: 700_000_000 }];
        let n = note_at(&stolen, window, tick).expect("35 % of CPU 1");
        assert!(n.contains("CPU 0 0.5 %, CPU 1 35.0 %"), "{n}");
        // A short window: one tick is 5 % of 200 ms, and rounding.
        let short = [CpuSteal { cpu: 0, ns: 10_000_000 }];
        assert_eq!(note_at(&short, 200_000_000, tick), None);
        assert!(note_at(&[CpuSteal { cpu: 0, ns: 20_000_000 }], 200_000_000, tick).is_some());
        assert_eq!(note_at(&stolen, 0, tick), None);
        assert_eq!(note_at(&[], window, tick), None);
    }
}
