//! How busy the rest of the machine was while a real case ran: a shared
//! host's other work competes with the workload for the CPUs and moves its
//! figures, so the suite says how much there was next to each verdict.
//!
//! From `/proc/stat` (all CPUs' time by kind) and `/proc/self/stat` (this
//! process's CPU time, its reaped children's included — the real runner's
//! worker is one), both in the same clock ticks (USER_HZ), read before and
//! after each real run: the other work is the CPUs' busy time minus ours,
//! divided by the run's elapsed time.

/// Counters at one moment, in USER_HZ ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq over all CPUs.
    pub busy: u64,
    /// Time a hypervisor ran something else on our vCPUs.
    pub steal: u64,
    /// Every kind, summed over all CPUs.
    pub total: u64,
    pub ncpus: u64,
    /// This process and its reaped children: utime + stime + cutime + cstime.
    pub own: u64,
}

/// What the machine did besides the suite between two readings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    /// CPUs' worth of other work (0 .. the number of CPUs).
    pub other_cpus: f64,
    /// Percent of the CPUs' time stolen by the hypervisor.
    pub steal_pct: f64,
}

/// Parse the aggregate `cpu` line of `/proc/stat` and `/proc/self/stat`.
pub fn parse(proc_stat: &str, self_stat: &str) -> Option<CpuTimes> {
    let mut lines = proc_stat.lines();
    let agg: Vec<u64> =
        lines.next()?.strip_prefix("cpu ")?.split_whitespace().map(|f| f.parse().ok()).collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice] (guest time is in user already).
    let f = |i: usize| agg.get(i).copied().unwrap_or(0);
    let ncpus = proc_stat.lines().filter(|l| l.starts_with("cpu") && !l.starts_with("cpu ")).count() as u64;
    let fields: Vec<&str> = self_stat.rsplit_once(')')?.1.split_whitespace().collect();
    // After the comm: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let own = (11..15).map(|i| fields.get(i)?.parse::<u64>().ok()).sum::<Option<u64>>()?;
    Some(CpuTimes {
        busy: f(0) + f(1) + f(2) + f(5) + f(6),
        steal: f(7),
        total: (0..8).map(f).sum(),
        ncpus: ncpus.max(1),
        own,
    })
}

/// The counters now (`None` where /proc cannot be read).
pub fn now() -> Option<CpuTimes> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?, &std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// The machine's other work between `a` and `b`.
pub fn between(a: CpuTimes, b: CpuTimes) -> Option<Load> {
    let total = b.total.checked_sub(a.total)?;
    if total == 0 {
        return None;
    }
    let elapsed = total as f64 / a.ncpus as f64;
    let busy = b.busy.saturating_sub(a.busy) as f64;
    let own = b.own.saturating_sub(a.own) as f64;
    Some(Load {
        other_cpus: ((busy - own) / elapsed).max(0.0),
        steal_pct: 100.0 * b.steal.saturating_sub(a.steal) as f64 / total as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELF: &str = "4711 (schedlab (x)) S 1 4711 4711 0 -1 4194560 100 0 0 0 30 20 40 10 20 0 1 0";

    #[test]
    fn the_counters_come_from_the_aggregate_line_and_our_own_four_times() {
        let stat =
            "cpu  100 5 50 1000 3 2 1 7 0 0\ncpu0 50 2 25 500 1 1 0 3 0 0\ncpu1 50 3 25 500 2 1 1 4 0 0\nintr 1\n";
        let t = parse(stat, SELF).unwrap();
        assert_eq!(t, CpuTimes { busy: 158, steal: 7, total: 1168, ncpus: 2, own: 100 });
        assert_eq!(parse("intr 1\n", SELF), None);
        assert_eq!(parse(stat, "garbage"), None);
    }

    #[test]
    fn other_work_is_the_busy_time_that_was_not_ours_per_elapsed_tick() {
        let a = CpuTimes { busy: 1000, steal: 10, total: 5000, ncpus: 2, own: 300 };
        // 200 ticks elapsed on 2 CPUs (400 CPU ticks): 300 busy, 150 of them ours, 20 stolen.
        let b = CpuTimes { busy: 1300, steal: 30, total: 5400, ncpus: 2, own: 450 };
        let l = between(a, b).unwrap();
        assert!((l.other_cpus - 0.75).abs() < 1e-9, "{l:?}");
        assert!((l.steal_pct - 5.0).abs() < 1e-9, "{l:?}");
        assert_eq!(between(b, b), None, "no time elapsed");
    }
}
