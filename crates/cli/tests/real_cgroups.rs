//! `schedlab real` with `[cgroup]` tables and `session`s on this machine's
//! kernel (root; cgroup v1 cpu and cpuset here, v2 on most users' machines):
//! the kernel's group shares, CFS bandwidth, cpusets and autogroups as the
//! scenario asks, and every group, session process and changed
//! `sched_autogroup_enabled` gone afterwards — also after the supervisor is
//! SIGKILLed (its restorer cleans up, or if that was killed too, the next
//! run). Skipped with a message without root
//! or cgroups.
//!
//! One test function: the cases share the machine (tracefs is global, and
//! hogs pinned to CPU 0 would disturb each other).

mod common;
use common::root;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::geteuid() == 0 }
}

fn command(state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_schedlab"));
    c.args(args).env("SCHEDLAB_STATE_DIR", state).current_dir(root());
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every `schedlab-<pid>` cgroup under the mounts, v1 and v2.
fn scratch_cgroups() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for mount in ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/unified"] {
        let Ok(dir) = std::fs::read_dir(mount) else { continue };
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().starts_with("schedlab-") {
                out.push(e.path());
            }
        }
    }
    out
}

/// A 2-CPU scenario file: `cgroups` text, then `threads` text.
fn scenario(dir: &Path, name: &str, cgroups: &str, threads: &str) -> String {
    let topo = root().join("scenarios/topologies/kvm-2.toml");
    let body = format!("topology = \"{}\"\nduration = \"2s\"\n{cgroups}\n{threads}\n", topo.display());
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

/// `n` CPU hogs named `name`, in `cgroup`, pinned to CPU 0.
fn hogs(name: &str, n: usize, cgroup: &str) -> String {
    format!(
        "[[thread]]\nname = \"{name}\"\ninstances = {n}\ncgroup = \"{cgroup}\"\naffinity = \"0\"\nprogram = [{{ run = \"10ms\" }}]\n"
    )
}

fn real_json(state: &Path, file: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["real", file, "--json"];
    args.extend_from_slice(extra);
    let out: Output = command(state, &args).output().unwrap();
    assert!(out.status.success(), "schedlab real {file} failed: {}", text(&out.stderr));
    assert!(scratch_cgroups().is_empty(), "cgroups left behind: {:?}", scratch_cgroups());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    println!("{file}: {}", doc["cgroups"]);
    doc
}

/// The model's share of the CPU time for threads whose comm starts with
/// `prefix` (`schedlab run --json` of the same file).
fn model_share(state: &Path, file: &str, prefix: &str, extra: &[&str]) -> f64 {
    let doc = model_json(state, file, extra);
    let tasks = doc["metrics"]["tasks"].as_array().unwrap();
    let ns = |keep: &dyn Fn(&str) -> bool| -> f64 {
        tasks
            .iter()
            .filter(|t| t["comm"].as_str().is_some_and(|c| c.starts_with("cg-") && keep(c)))
            .map(|t| t["runtime_ns"].as_u64().unwrap() as f64)
            .sum()
    };
    ns(&|c| c.starts_with(prefix)) / ns(&|_| true)
}

/// The model's `cgroups` rows (`schedlab run --json`), as [`rows`] reads `real`'s.
fn model_rows(state: &Path, file: &str, extra: &[&str]) -> Vec<(String, f64, f64, u64, u64)> {
    rows(&model_json(state, file, extra))
}

/// A thread's CPU time in a `real --json` (the kernel's per-thread clock).
fn real_cpu(doc: &serde_json::Value, name: &str) -> f64 {
    let threads = doc["threads"].as_array().unwrap();
    let t = threads.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no {name} in {threads:?}"));
    t["outcome"]["cpu_ns"].as_u64().unwrap() as f64
}

/// `schedlab run --json` of `file`.
fn model_json(state: &Path, file: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", file, "--json"];
    args.extend_from_slice(extra);
    let out: Output = command(state, &args).output().unwrap();
    assert!(out.status.success(), "schedlab run {file} failed: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A thread's CPU time in the model's report.
fn model_cpu(doc: &serde_json::Value, name: &str) -> f64 {
    let tasks = doc["metrics"]["tasks"].as_array().unwrap();
    tasks.iter().find(|t| t["comm"] == name).unwrap_or_else(|| panic!("no {name} in the model"))["runtime_ns"]
        .as_u64()
        .unwrap() as f64
}

/// Model and real shares agree within `band`.
fn agree(what: &str, model: f64, real: f64, band: f64) {
    println!("{what}: model {model:.4}, real {real:.4}");
    assert!((model - real).abs() <= band, "{what}: model {model:.4} vs real {real:.4} (band ±{band})");
}

/// The `cgroups` rows of a `real --json`, by name: (CPUs used, share of
/// the workload — both from the kernel's per-thread CPU time — periods,
/// throttled).
fn rows(doc: &serde_json::Value) -> Vec<(String, f64, f64, u64, u64)> {
    doc["cgroups"]
        .as_array()
        .unwrap_or_else(|| panic!("no cgroups in {doc}"))
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["cpus_used"].as_f64().unwrap(),
                r["share_of_workload"].as_f64().unwrap(),
                r["nr_periods"].as_u64().unwrap(),
                r["nr_throttled"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn real_runs_threads_in_the_scenario_s_cgroups_and_removes_them() {
    if !is_root() {
        println!("skipped: `schedlab real` with cgroups needs root");
        return;
    }
    let cpu_v1 = Path::new("/sys/fs/cgroup/cpu/cpu.shares").exists();
    let v2_cpu = std::fs::read_to_string("/sys/fs/cgroup/cgroup.subtree_control").is_ok_and(|s| s.contains("cpu"));
    if !cpu_v1 && !v2_cpu {
        println!("skipped: neither a cgroup v1 cpu mount nor a v2 root that delegates cpu");
        return;
    }
    // Removed when `tmp` drops, also when the test fails.
    let tmp = common::tmp_dir("real-cgroups");
    let dir = tmp.path().to_path_buf();
    let state = dir.join("state");
    assert!(scratch_cgroups().is_empty(), "a scratch cgroup exists before the test: {:?}", scratch_cgroups());

    // Two equal-weight groups on one CPU, 1 hog against 4: the kernel shares
    // between the groups' entities, not the threads.
    let f = scenario(
        &dir,
        "equal",
        "[cgroup.one]\n[cgroup.four]\n",
        &(hogs("cg-one", 1, "one") + &hogs("cg-four", 4, "four")),
    );
    let doc = real_json(&state, &f, &[]);
    let r = rows(&doc);
    let share = |name: &str| r.iter().find(|x| x.0 == name).unwrap().2;
    assert!((share("one") - 0.5).abs() < 0.05, "1 hog vs 4 in equal groups: {r:?}");
    agree("equal groups, 1 vs 4 hogs", model_share(&state, &f, "cg-one", &[]), share("one"), 0.02);
    assert!(doc["notes"].to_string().contains("the scenario's cgroups run on cgroup"), "{}", doc["notes"]);

    // Weights 100:300 give 25/75.
    let f = scenario(
        &dir,
        "weights",
        "[cgroup.light]\nweight = 100\n[cgroup.heavy]\nweight = 300\n",
        &(hogs("cg-light", 2, "light") + &hogs("cg-heavy", 2, "heavy")),
    );
    let r = rows(&real_json(&state, &f, &[]));
    let share = |name: &str| r.iter().find(|x| x.0 == name).unwrap().2;
    assert!((share("light") - 0.25).abs() < 0.04, "weights 100:300: {r:?}");
    agree("weights 100:300", model_share(&state, &f, "cg-light", &[]), share("light"), 0.02);

    // cpu.idle: the idle group's entity weighs 3 (WEIGHT_IDLEPRIO) against
    // the other group's 1024, so it gets about 0.3 % of the CPU.
    let f = scenario(
        &dir,
        "idle",
        "[cgroup.bg]\nidle = true\n[cgroup.fg]\n",
        &(hogs("cg-bg", 1, "bg") + &hogs("cg-fg", 1, "fg")),
    );
    let r = rows(&real_json(&state, &f, &[]));
    let share = |name: &str| r.iter().find(|x| x.0 == name).unwrap().2;
    assert!(share("bg") < 0.01, "an idle group against a normal one: {r:?}");
    agree("cpu.idle group", model_share(&state, &f, "cg-bg", &[]), share("bg"), 0.01);

    // A 50 % quota: half of one CPU, throttled in (nearly) every period.
    // The window is not aligned to the periods (the timer starts with the
    // threads' setup), so it may hold up to one quota more or less than
    // half its length: over 5 s that is 1 %. A cfs_rq also takes its
    // runtime from the group's pool a slice at a time
    // (sched_cfs_bandwidth_slice_us, 5 ms by default) and may run out the
    // slice it holds as the window closes: 0.1 % more (measured once here,
    // 2026-12-06: 0.5101 CPUs).
    let f = scenario(
        &dir,
        "quota",
        "[cgroup.capped]\nmax = \"50ms\"\nperiod = \"100ms\"\n",
        &hogs("cg-capped", 2, "capped"),
    );
    let r = rows(&real_json(&state, &f, &["--duration", "5s"]));
    let (_, cpus, _, periods, throttled) = r[0].clone();
    assert!((cpus - 0.5).abs() <= 0.011, "a 50 % quota used {cpus:.4} CPUs: {r:?}");
    // The periods also count the setup before the window and the stop after it.
    assert!((50..=54).contains(&periods) && throttled + 2 >= periods, "5 s at 100 ms periods: {r:?}");
    // The model: the same half CPU (its window starts with a full pool, so
    // up to one quota more), throttled in every one of its 50 periods.
    let m = model_rows(&state, &f, &["--duration", "5s"]);
    agree("50 % quota, CPUs used", m[0].1, cpus, 0.011);
    assert!(m[0].3 == 50 && m[0].4 >= 49, "model: 5 s at 100 ms periods: {m:?}");

    // Group PELT: `cg-early` ran 100 ms on CPU 0 and sleeps; its blocked
    // load stays in g's tg->load_avg, so g's entity on CPU 1 weighs less
    // than the root hog there until it decays. Model and kernel both give g
    // about 44-45 % over the next 300 ms (shares from queued weight alone
    // would say 50 %).
    let f = scenario(
        &dir,
        "blocked",
        "[cgroup.g]\n",
        "[[thread]]\nname = \"cg-early\"\ncgroup = \"g\"\naffinity = \"0\"\nloop = false\nprogram = [{ run = \"100ms\" }, { sleep = \"10s\" }]\n\
         [[thread]]\nname = \"cg-g1\"\ncgroup = \"g\"\naffinity = \"1\"\ndelay = \"100ms\"\nprogram = [{ run = \"10ms\" }]\n\
         [[thread]]\nname = \"cg-root\"\naffinity = \"1\"\ndelay = \"100ms\"\nprogram = [{ run = \"10ms\" }]\n",
    );
    let doc = real_json(&state, &f, &["--duration", "400ms"]);
    let real = real_cpu(&doc, "cg-g1") / (real_cpu(&doc, "cg-g1") + real_cpu(&doc, "cg-root"));
    let m = model_json(&state, &f, &["--duration", "400ms"]);
    let model = model_cpu(&m, "cg-g1") / (model_cpu(&m, "cg-g1") + model_cpu(&m, "cg-root"));
    assert!(real < 0.48, "the kernel's share for g right after cg-early slept: {real:.4}");
    // The host gave 0.428-0.449 over six runs (one under CI load), the model 0.453; queued
    // weight alone (no group PELT) would say 0.5.
    agree("a group's blocked load on the other CPU", model, real, 0.035);

    // A thread moving a -> b -> the run's group on CPU 1 against a hog in
    // a (100) and one in b (300): the hogs' shares in model and kernel
    // within 1.5 points, the mover's lower on the host (it sleeps in its writes).
    let f = scenario(
        &dir,
        "moves",
        "[cgroup.a]\n[cgroup.b]\nweight = 300\n",
        "[[thread]]\nname = \"cg-mover\"\ncgroup = \"a\"\naffinity = \"1\"\nloop = false\n\
         program = [{ run = \"100ms\" }, { cgroup = \"b\" }, { run = \"100ms\" }, { cgroup = \"/\" }, { run = \"10s\" }]\n\
         [[thread]]\nname = \"cg-ahog\"\ncgroup = \"a\"\naffinity = \"1\"\nprogram = [{ run = \"10ms\" }]\n\
         [[thread]]\nname = \"cg-bhog\"\ncgroup = \"b\"\naffinity = \"1\"\nprogram = [{ run = \"10ms\" }]\n",
    );
    let doc = real_json(&state, &f, &[]);
    let model_doc = model_json(&state, &f, &[]);
    // Shares of the three threads' CPU time: what the scheduler decides,
    // whatever else the host ran (a loaded CI machine steals from all).
    let names = ["cg-mover", "cg-ahog", "cg-bhog"];
    let (mt, rt): (f64, f64) = names
        .iter()
        .map(|n| (model_cpu(&model_doc, n), real_cpu(&doc, n)))
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    for name in names {
        let (m, r) = (model_cpu(&model_doc, name) / mt, real_cpu(&doc, name) / rt);
        if name == "cg-mover" {
            println!("moves, {name}: model {m:.4}, real {r:.4} of the three's CPU time");
            // Its writes block it in the kernel (cgroup_threadgroup_rwsem; 4-20 ms
            // here), which the model does not charge: it can only come out lower.
            assert!(r <= m + 0.005 && r >= m - 0.02, "moves, the mover's share: model {m:.4} vs real {r:.4}");
        } else {
            agree(&format!("moves, {name}"), m, r, 0.015);
        }
    }

    // Forks: `cg-boss` in a forks `cg-kid` (no cgroup: it stays in its
    // forker's a) and `cg-bkid` (its table says b, which it joins first),
    // next to a hog in b, on CPU 1: a 25 %, b 75 % split between two.
    let f = scenario(
        &dir,
        "forks",
        "[cgroup.a]\n[cgroup.b]\nweight = 300\n",
        "[[thread]]\nname = \"cg-boss\"\ncgroup = \"a\"\naffinity = \"1\"\nloop = false\n\
         program = [{ fork = \"cg-kid\" }, { fork = \"cg-bkid\" }, { sleep = \"10s\" }]\n\
         [[thread]]\nname = \"cg-kid\"\ninstances = 0\naffinity = \"1\"\nprogram = [{ run = \"10ms\" }]\n\
         [[thread]]\nname = \"cg-bkid\"\ninstances = 0\ncgroup = \"b\"\naffinity = \"1\"\nprogram = [{ run = \"10ms\" }]\n\
         [[thread]]\nname = \"cg-bhog\"\ncgroup = \"b\"\naffinity = \"1\"\nprogram = [{ run = \"10ms\" }]\n",
    );
    let doc = real_json(&state, &f, &[]);
    let model_doc = model_json(&state, &f, &[]);
    let names = ["cg-kid-0", "cg-bkid-0", "cg-bhog"];
    let (mt, rt): (f64, f64) = names
        .iter()
        .map(|n| (model_cpu(&model_doc, n), real_cpu(&doc, n)))
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    for name in names {
        agree(&format!("forks, {name}"), model_cpu(&model_doc, name) / mt, real_cpu(&doc, name) / rt, 0.015);
    }

    // A cpuset holds its thread on CPU 1, setaffinity to both CPUs included.
    let trace = dir.join("cpuset.trace");
    let f = scenario(
        &dir,
        "cpuset",
        "[cgroup.pin]\ncpus = \"1\"\n",
        "[[thread]]\nname = \"cg-pinned\"\ncgroup = \"pin\"\nprogram = [{ setaffinity = \"0-1\" }, { run = \"3ms\" }, { sleep = \"1ms\" }]\n\
         [[thread]]\nname = \"cg-free\"\ninstances = 2\nprogram = [{ run = \"3ms\" }, { sleep = \"1ms\" }]\n",
    );
    let doc = real_json(&state, &f, &["--trace", trace.to_str().unwrap()]);
    let tid = doc["threads"].as_array().unwrap().iter().find(|t| t["name"] == "cg-pinned").unwrap()["tid"]
        .as_i64()
        .unwrap() as i32;
    let parsed = schedlab_trace::parse_ftrace("cpuset.trace", &std::fs::read_to_string(&trace).unwrap()).unwrap();
    let start = doc["window_ns"][0].as_u64().unwrap() / 1000 * 1000;
    let cpus: std::collections::BTreeSet<u32> = parsed
        .events
        .iter()
        .filter(|e| e.ts >= start)
        .filter_map(|e| match e.kind {
            schedlab_trace::EventKind::SchedSwitch { next_pid, .. } if next_pid == tid => Some(e.cpu),
            _ => None,
        })
        .collect();
    assert_eq!(cpus.into_iter().collect::<Vec<_>>(), [1], "the cpuset's thread ran only on CPU 1");

    // Sessions: a nice-0 hog against a nice-10 hog started in another
    // session. With autogroup each session is a group of nice 0's weight,
    // so they split the CPU about evenly; without, nice weighting gives the
    // nice-0 hog 1024 / (1024 + 110) = 90.3 %. Shares from the kernel's
    // per-thread CPU time; the host's setting is put back after each. The
    // even split is a few points off half right after the session starts
    // (51-53 % here): the session leader's blocked load sits in the other
    // autogroup's tg->load_avg until it decays (the case above shows the
    // mechanism), hence the wide band. The model (no session leader) says half:
    // within 6 points of a start right after the session's creation, within
    // 2.5 once the leader's blocked load has decayed (the hogs start 1.5 s
    // late). Not tighter: anything of the runner's own session (the test
    // harness, cargo) that runs on the other CPU meanwhile adds to that
    // autogroup's load over all CPUs, which calc_group_shares() divides its
    // weight by; in one full `cargo test --workspace` the share read 48.3 %
    // (50.0 % in 9 runs on their own).
    let autogroup_before = std::fs::read_to_string(AUTOGROUP).ok();
    if autogroup_before.is_some() {
        for (on, delay, lo, hi, band) in
            [(true, "0", 0.42, 0.58, 0.06), (true, "1500ms", 0.475, 0.525, 0.025), (false, "0", 0.883, 0.923, 0.02)]
        {
            let f = scenario(
                &dir,
                &format!("autogroup-{on}-{delay}"),
                &format!("autogroup = {on}"),
                &format!(
                    "[[thread]]\nname = \"cg-work\"\naffinity = \"0\"\ndelay = \"{delay}\"\nprogram = [{{ run = \"10ms\" }}]\n\
                     [[thread]]\nname = \"cg-nice10\"\nnice = 10\nsession = \"other\"\naffinity = \"0\"\ndelay = \"{delay}\"\nprogram = [{{ run = \"10ms\" }}]\n"
                ),
            );
            let duration = ["--duration", if delay == "0" { "2s" } else { "3500ms" }];
            let share = first_thread_share(&real_json(&state, &f, &duration));
            println!("autogroup = {on}, delay {delay}: the nice-0 hog's share {share:.4}");
            assert!((lo..=hi).contains(&share), "autogroup = {on}: nice-0 share {share:.4}, expected {lo}..{hi}");
            let model = model_share(&state, &f, "cg-work", &duration);
            agree(&format!("autogroup = {on}, delay {delay}"), model, share, band);
            assert_eq!(
                std::fs::read_to_string(AUTOGROUP).ok(),
                autogroup_before,
                "sched_autogroup_enabled not restored"
            );
            assert!(session_processes().is_empty(), "session processes left: {:?}", session_processes());
        }
        // The other session's autogroup at nice 10 weighs 110 against the
        // runner's 1024: group-level nice weighting, with both hogs at nice 0.
        let f = scenario(
            &dir,
            "autogroup-nice",
            "autogroup = true\n[session.other]\nnice = 10",
            "[[thread]]\nname = \"cg-work\"\naffinity = \"0\"\nprogram = [{ run = \"10ms\" }]\n\
             [[thread]]\nname = \"cg-other\"\nsession = \"other\"\naffinity = \"0\"\nprogram = [{ run = \"10ms\" }]\n",
        );
        let share = first_thread_share(&real_json(&state, &f, &[]));
        println!("autogroup nice 10: the other session's hog's share {:.4}", 1.0 - share);
        assert!((0.85..=0.95).contains(&share), "a nice-10 autogroup: nice-0 share {share:.4}");
        agree("autogroup nice 10", model_share(&state, &f, "cg-work", &[]), share, 0.03);
    } else {
        println!("skipped the session cases: no {AUTOGROUP} (no SCHED_AUTOGROUP)");
    }

    // SIGKILL of the supervisor and of its restorer (which would otherwise
    // restore at once: tests/real_sigkill.rs): the groups and the autogroup
    // setting stay until the next run, which restores them first and says so.
    let killed_head = if autogroup_before.is_some() { "autogroup = false\n[cgroup.g]\n" } else { "[cgroup.g]\n" };
    // On v1 a session process too (v2 refuses sessions with cpu groups): it
    // must die with the worker.
    let session = if cpu_v1 {
        "[[thread]]\nname = \"cg-killed-s\"\nsession = \"s\"\nprogram = [{ sleep = \"1ms\" }]\n"
    } else {
        ""
    };
    let f = scenario(&dir, "killed", killed_head, &(hogs("cg-killed", 1, "g") + session));
    let mut child = command(&state, &["real", &f, "--duration", "60s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let supervisor = child.id();
    let t = Instant::now();
    while !scratch_cgroups().iter().any(|p| p.join("g/tasks").exists() || p.join("g/cgroup.threads").exists())
        || !has_tasks()
        || (cpu_v1 && session_processes().is_empty())
    {
        assert!(t.elapsed() < Duration::from_secs(30), "the run never populated its cgroup");
        std::thread::sleep(Duration::from_millis(50));
    }
    let restorer = common::restorer_of(supervisor as i32).expect("the supervisor forked a restorer");
    assert!(Command::new("kill").args(["-KILL", &restorer.to_string()]).status().unwrap().success());
    child.kill().unwrap();
    child.wait().unwrap();
    let t = Instant::now();
    while has_tasks() || !session_processes().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(10), "the worker or a session process outlived the supervisor");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!scratch_cgroups().is_empty(), "nothing left to clean up: the case tests nothing");
    if autogroup_before.is_some() {
        assert_eq!(
            std::fs::read_to_string(AUTOGROUP).unwrap().trim(),
            "0",
            "the killed run's setting is still in force"
        );
    }
    let f = scenario(&dir, "after", "[cgroup.g]\n", &hogs("cg-after", 1, "g"));
    let out = command(&state, &["real", &f, "--duration", "200ms"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("interrupted run (pid {supervisor})")) && stdout.contains("removed its cgroups"),
        "{stdout}"
    );
    assert!(scratch_cgroups().is_empty(), "cgroups left behind: {:?}", scratch_cgroups());
    assert_eq!(std::fs::read_to_string(AUTOGROUP).ok(), autogroup_before, "sched_autogroup_enabled not restored");
}

const AUTOGROUP: &str = "/proc/sys/kernel/sched_autogroup_enabled";

/// The first of two threads' share of their CPU time, as the kernel
/// accounted it (each thread's `CLOCK_THREAD_CPUTIME_ID` in `--json`).
fn first_thread_share(doc: &serde_json::Value) -> f64 {
    let cpu: Vec<f64> =
        doc["threads"].as_array().unwrap().iter().map(|t| t["outcome"]["cpu_ns"].as_u64().unwrap() as f64).collect();
    cpu[0] / (cpu[0] + cpu[1])
}

/// Pids of processes named `schedlab-sess` (a run's session processes).
fn session_processes() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "schedlab-sess"))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Some scratch cgroup still holds a task.
fn has_tasks() -> bool {
    scratch_cgroups().iter().any(|p| {
        ["g/tasks", "g/cgroup.threads"]
            .iter()
            .any(|f| std::fs::read_to_string(p.join(f)).is_ok_and(|s| !s.trim().is_empty()))
    })
}
