//! SCHED_DEADLINE threads end to end: admission as sched_setattr() does it
//! (the error at the thread's line), a reservation that holds an overrunning
//! task to its bandwidth, and EDF across CPUs.

use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, SimOptions};
use std::path::Path;

fn scenario(threads: &str, extra: &str) -> Scenario {
    let text = format!("name = \"dl\"\ntopology = \"qemu-4\"\nduration = \"1s\"\n{extra}\n{threads}");
    Scenario::from_toml_str("dl.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn dl_thread(name: &str, runtime: &str, period: &str, program: &str) -> String {
    format!(
        "[[thread]]\nname = \"{name}\"\npolicy = \"SCHED_DEADLINE\"\nruntime = \"{runtime}\"\ndeadline = \
         \"{period}\"\nperiod = \"{period}\"\nprogram = [{program}]\n"
    )
}

#[test]
fn admission_refuses_the_thread_that_does_not_fit_with_the_kernels_errno_at_its_line() {
    // 0.95 x 4 CPUs, less the four fair servers' 0.05 each: 3.6.
    let mut threads: String = (0..4).map(|i| dl_thread(&format!("d{i}"), "9ms", "10ms", "{ run = \"1ms\" }")).collect();
    simulate(&scenario(&threads, ""), &SimOptions::default()).expect("3.6 CPUs fit");
    threads.push_str(&dl_thread("d4", "1ms", "10ms", "{ run = \"1ms\" }"));
    let err = simulate(&scenario(&threads, ""), &SimOptions::default()).unwrap_err().to_string();
    // The fifth table starts on line 4 + 4 x 7 + 1.
    assert!(err.starts_with("dl.toml:33:"), "{err}");
    assert!(err.contains("SCHED_DEADLINE thread d4") && err.contains("EBUSY"), "{err}");
    // Without fair servers (the debugfs knob at 0) it fits.
    simulate(&scenario(&threads, "fair_server_runtime = \"0\""), &SimOptions::default()).expect("no servers");
    // A deadline task narrowed below the root domain: EPERM.
    let pinned = dl_thread("p", "1ms", "10ms", "{ run = \"1ms\" }") + "affinity = \"0-1\"\n";
    let err = simulate(&scenario(&pinned, ""), &SimOptions::default()).unwrap_err().to_string();
    assert!(err.contains("EPERM"), "{err}");
    // Parameters the kernel refuses: EINVAL (period below 100 us).
    let tiny = dl_thread("t", "10us", "50us", "{ run = \"1ms\" }");
    let err = simulate(&scenario(&tiny, ""), &SimOptions::default()).unwrap_err().to_string();
    assert!(err.contains("EINVAL"), "{err}");
    // fork is refused to a deadline task (EAGAIN in sched_fork()).
    let forks = dl_thread("f", "1ms", "10ms", "{ fork = \"c\" }")
        + "[[thread]]\nname = \"c\"\ninstances = 0\nprogram = [{ run = \"1ms\" }]\n";
    let err = simulate(&scenario(&forks, ""), &SimOptions::default()).unwrap_err().to_string();
    assert!(err.contains("EAGAIN"), "{err}");
}

#[test]
fn an_overrunning_task_gets_its_reservation_and_no_more_beside_hogs() {
    // 2 ms every 10 ms, asking for all of it: 20 % of the run, the rest
    // throttled, while four hogs keep every CPU busy.
    let threads = "[[thread]]\nname = \"hog\"\ninstances = 4\nprogram = [{ run = \"10s\" }]\n".to_string()
        + &dl_thread("cbs", "2ms", "10ms", "{ run = \"10s\" }");
    let r = simulate(&scenario(&threads, ""), &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let cbs = r.threads.iter().find(|t| t.name == "cbs").unwrap();
    let share = cbs.runtime_ns as f64 / 1e9;
    // The tick (HZ of qemu-4) notices the overrun: at most one tick more per period.
    assert!((0.195..=0.30).contains(&share), "cbs ran {share:.3} of the run");
    let hogs: u64 = r.threads.iter().filter(|t| t.name.starts_with("hog")).map(|t| t.runtime_ns).sum();
    assert!(hogs as f64 / 1e9 > 3.6, "the hogs ran {:.3} CPU-s", hogs as f64 / 1e9);
}

#[test]
fn a_reclaiming_task_runs_max_bw_of_a_cpu_and_its_twin_its_reservation() {
    // dl-grub-reclaim's pair, both asking for all the CPU: with
    // SCHED_FLAG_RECLAIM 30 ms per 100 ms lasts 95.2 ms of running (GRUB
    // charges 0.3 / 0.95 per ns), without it 10 ms is 10 ms.
    let threads = dl_thread("grub", "30ms", "100ms", "{ run = \"10s\" }")
        + "reclaim = true\n"
        + &dl_thread("cbs", "10ms", "100ms", "{ run = \"10s\" }");
    let text = format!("name = \"dl\"\ntopology = \"qemu-2\"\nduration = \"2s\"\n{threads}");
    let s = Scenario::from_toml_str("dl.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(&s, &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let share = |name: &str| r.threads.iter().find(|t| t.name == name).unwrap().runtime_ns as f64 / 2e9;
    assert!((0.945..=0.96).contains(&share("grub")), "grub ran {:.4} of the run", share("grub"));
    assert!((0.098..=0.105).contains(&share("cbs")), "cbs ran {:.4} of the run", share("cbs"));
    // Without the flag the same reservation is held to its 30 %.
    let plain = text.replace("reclaim = true\n", "");
    let s = Scenario::from_toml_str("dl.toml", &plain, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(&s, &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let grub = r.threads.iter().find(|t| t.name == "grub").unwrap().runtime_ns as f64 / 2e9;
    assert!((0.295..=0.31).contains(&grub), "without reclaiming grub ran {grub:.4}");
}

#[test]
fn periodic_deadline_tasks_get_their_work_done_each_period_beside_hogs_on_every_cpu() {
    // Three periodic deadline tasks (3 ms every 10 ms within 4 ms
    // reservations) and four hogs on four CPUs: each task's work fits its
    // reservation, so it runs 30 % of the time whatever the hogs do.
    let threads = dl_thread("a", "4ms", "10ms", "{ run = \"3ms\" }, { timer = \"10ms\" }")
        + &dl_thread("b", "4ms", "10ms", "{ run = \"3ms\" }, { timer = \"10ms\" }")
        + &dl_thread("c", "4ms", "10ms", "{ run = \"3ms\" }, { timer = \"10ms\" }")
        + "[[thread]]\nname = \"hog\"\ninstances = 4\nprogram = [{ run = \"10s\" }]\n";
    let r = simulate(&scenario(&threads, ""), &SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    for name in ["a", "b", "c"] {
        let t = r.threads.iter().find(|t| t.name == name).unwrap();
        let share = t.runtime_ns as f64 / 1e9;
        assert!((0.28..=0.31).contains(&share), "{name} ran {share:.3} of the run (3 ms per 10 ms)");
    }
}

/// xorshift64*: a fixed generator, so the cases are the same on every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Deadline tasks mixed with fair and FIFO ones, PI mutexes held by any of
/// them, timers, sleeps and yields, on several machines and kernels: the
/// model's invariants (checked at every step in a debug build) hold, and
/// every deadline task runs.
#[test]
fn random_mixes_with_deadline_tasks_keep_the_invariants() {
    random_mixes(false);
}

/// The same mixes with every other deadline task reclaiming (GRUB): the
/// bandwidth sums (running_bw, this_bw, extra_bw) match their recounts
/// through blocks, 0-lag timers, wakeup migrations, pushes, PI boosts and
/// exits.
#[test]
fn random_mixes_with_reclaiming_deadline_tasks_keep_the_invariants() {
    random_mixes(true);
}

fn random_mixes(reclaim: bool) {
    for case in 0..24u64 {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15 ^ (case + 1));
        let (topo, ncpu) = [("qemu-4", 4.0), ("qemu-2", 2.0), ("smt-2x2", 4.0)][g.below(3) as usize];
        let kernel = ["6.12", "6.9", "mainline"][g.below(3) as usize];
        let mut threads = String::new();
        let mut used = 0.0;
        let mut uses_lock = false;
        for i in 0..1 + g.below(4) {
            let period = [2.0, 5.0, 10.0, 20.0][g.below(4) as usize];
            let runtime = (period * (5 + g.below(50)) as f64 / 100.0 * 10.0).round() / 10.0;
            if used + runtime / period > 0.85 * ncpu {
                break;
            }
            used += runtime / period;
            let deadline = if g.below(2) == 0 { period } else { runtime.max(period * 0.6) };
            let work = runtime * (3 + g.below(15)) as f64 / 10.0;
            let mut ops = vec![format!("{{ run = \"{work:.2}ms\" }}")];
            if g.below(3) == 0 {
                uses_lock = true;
                ops = vec![
                    "{ lock = \"M\" }".into(),
                    format!("{{ run = \"{:.2}ms\" }}", work / 2.0),
                    "{ unlock = \"M\" }".into(),
                ];
            }
            ops.push(
                ["{ timer = \"PERIODms\" }", "{ sleep = \"1ms\" }", "{ yield = true }"][g.below(3) as usize]
                    .replace("PERIOD", &period.to_string()),
            );
            threads += &format!(
                "[[thread]]\nname = \"d{i}\"\npolicy = \"SCHED_DEADLINE\"\nruntime = \"{runtime}ms\"\ndeadline = \
                 \"{deadline}ms\"\nperiod = \"{period}ms\"\ndelay = \"{}ms\"\nprogram = [{}]\n",
                g.below(4),
                ops.join(", ")
            );
            if reclaim && i % 2 == 0 {
                threads += "reclaim = true\n";
            }
        }
        for i in 0..g.below(4) {
            let policy = if g.below(2) == 0 { "policy = \"SCHED_FIFO\"\npriority = 50\n" } else { "" };
            let lock = g.below(2) == 0;
            uses_lock |= lock;
            let body =
                if lock { "{ lock = \"M\" }, { run = \"2ms\" }, { unlock = \"M\" }" } else { "{ run = \"3ms\" }" };
            threads += &format!("[[thread]]\nname = \"t{i}\"\n{policy}program = [{body}, {{ sleep = \"2ms\" }}]\n");
        }
        let mutex = if uses_lock { "[mutex.M]\npi = true\n" } else { "" };
        let text = format!(
            "name = \"mix\"\ntopology = \"{topo}\"\nkernel = \"{kernel}\"\nduration = \"300ms\"\n{mutex}{threads}"
        );
        let s = Scenario::from_toml_str("mix.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let r = simulate(&s, &SimOptions::default()).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        for t in r.threads.iter().filter(|t| t.name.starts_with('d')) {
            assert!(t.runtime_ns > 0, "case {case}: {} never ran\n{text}", t.name);
        }
    }
}
