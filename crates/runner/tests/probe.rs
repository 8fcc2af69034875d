//! The host probes, run for real on this machine with a small budget (a few
//! hundred milliseconds): the figures are sane and nothing is left behind.

use schedlab_runner::probe::{run_probes, switch_probe, ProbeBudget};
use schedlab_runner::sys;
use schedlab_topology::host::read_host;
use std::path::Path;
use std::sync::Mutex;

/// The two tests run one at a time: the other test's probe thread (named
/// `schedlab-...`, like the quick probes') would otherwise be counted as
/// one the quick probes left running (.ci/run failed so on 2026-12-07:
/// 2 threads against 1).
static ONE: Mutex<()> = Mutex::new(());

#[test]
fn quick_probes_on_this_host_give_sane_ordered_figures_and_clean_up() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let host = read_host(Path::new("/")).expect("this host's sysfs reads");
    let usable = sys::allowed_cpus().unwrap().into_iter().filter(|c| host.sysfs_ids().contains(c)).count();
    if usable < 2 {
        eprintln!("skipped: only {usable} usable CPU here; the wakeup probes need two");
        return;
    }
    let threads_before = this_tests_threads();
    let attr_before = sys::sched_getattr(0).unwrap();
    // SAFETY: plain prctl reads of this thread's timer slack.
    let slack = || unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    let slack_before = slack();
    let mut lines = Vec::new();
    let m = run_probes(&host, &ProbeBudget::quick(), &mut |l| lines.push(l.to_string()));
    assert!(m.elapsed_ns < 5_000_000_000, "quick probes took {} ms", m.elapsed_ns / 1_000_000);
    assert!(lines.len() >= 3, "progress lines: {lines:?}");
    assert!(!m.wake.is_empty(), "no wakeup probe ran: {:?}", m.notes);
    for w in &m.wake {
        let idles: Vec<u64> = w.by_idle.iter().map(|(i, _)| *i).collect();
        assert!(idles.windows(2).all(|p| p[0] < p[1]), "idle lengths not ordered: {idles:?}");
        assert!(w.by_idle.len() >= 3, "{:?}", w.by_idle);
        for (idle, p) in &w.by_idle {
            assert!(p.n > 0 && p.p50 > 0, "{idle}: {p:?}");
            assert!(p.p50 <= p.p99 && p.p99 <= p.max, "{idle}: {p:?}");
            // A wakeup is microseconds, not a scheduling period.
            assert!(p.p50 < 5_000_000, "{idle}: p50 {} ns", p.p50);
        }
        let busy = w.busy.expect("busy-CPU wakeups measured");
        assert!(busy.p50 > 0 && busy.p50 <= busy.p99 && busy.p50 < 5_000_000, "{busy:?}");
    }
    let t = m.timer.as_ref().unwrap_or_else(|| panic!("timer probe did not run: {:?}", m.notes));
    let lengths: Vec<u64> = t.by_idle.iter().map(|(i, _)| *i).collect();
    assert_eq!(lengths, ProbeBudget::quick().idle_lengths_ns, "every idle length sampled");
    for (idle, p) in &t.by_idle {
        // The stamp comes after the expiry; more than 5 ms late is a broken sleep, not a wakeup cost.
        assert!(p.n > 0 && p.p50 > 0 && p.p50 <= p.p99 && p.p50 < 5_000_000, "{idle}: {p:?}");
    }
    let busy = t.busy.expect("busy-CPU timer wakeups measured");
    assert!(busy.n == ProbeBudget::quick().busy_samples && busy.p50 > 0 && busy.p50 < 5_000_000, "{busy:?}");
    assert_eq!(slack(), slack_before, "the caller's timer slack is untouched (prctl is per thread)");
    let s = m.switch.expect("context switch measured");
    assert!(s.p50 > 100 && s.p50 < 1_000_000 && s.p50 <= s.p99, "{s:?}");
    let n = m.noise.expect("noise measured");
    assert_eq!(n.cpus, usable);
    assert!(n.gaps.iter().all(|&g| g >= n.threshold_ns));
    // Every probe thread was joined, and the caller's policy is untouched.
    assert_eq!(this_tests_threads(), threads_before, "probe threads left running");
    let attr_after = sys::sched_getattr(0).unwrap();
    assert_eq!((attr_after.policy, attr_after.nice), (attr_before.policy, attr_before.nice));
    assert_eq!(attr_after.policy, libc::SCHED_OTHER as u32);
}

/// Threads of this process that this test or its probes started: a probe
/// thread names itself `schedlab-*`, or keeps its creator's comm until it
/// does. The harness runs the file's other test at the same time under
/// another name, so a plain thread count sees its threads come and go (that
/// failed CI once).
fn this_tests_threads() -> usize {
    let comm = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let mine = comm(Path::new("/proc/thread-self/comm"));
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task lists this process's threads");
    tasks.flatten().map(|t| comm(&t.path().join("comm"))).filter(|c| *c == mine || c.starts_with("schedlab-")).count()
}

#[test]
fn a_switch_probe_on_a_cpu_this_process_may_not_use_fails_cleanly() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let allowed = sys::allowed_cpus().unwrap();
    let Some(bad) = (0..1024).find(|c| !allowed.contains(c)) else { return };
    let e = switch_probe(bad, &ProbeBudget::quick()).unwrap_err();
    assert!(e.contains(&format!("pinning to CPU {bad}")), "{e}");
}
