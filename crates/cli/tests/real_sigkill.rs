//! SIGKILL of `schedlab real`'s supervisor leaves the host as it was: its
//! restorer puts tracefs, `sched_rt_runtime_us` and the scenario's cgroups
//! back within a second, without another run (issue 40).
//!
//! Needs root and tracefs (CI runs as root on a 2-vCPU VM); skipped with a
//! message otherwise. Unlike the other real-run tests it uses the machine's
//! own state directory, so its run lock is the one every `schedlab real`,
//! `compare` and `fidelity` on this machine takes: when another developer's
//! run holds it, a case waits (up to [`LOCK_WAIT`]) and retries instead of
//! failing or disturbing that run. It also holds the lock itself while it
//! reads the settings before and after, so no other run changes them
//! between.

mod common;
use common::{is_root, root, tracefs_mounted};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use schedlab_runner::restorer::RESTORER_LOG;
use schedlab_runner::state::{state_dir, RunLock, STATE_FILE};
use schedlab_runner::RunnerError;

const TRACEFS: &str = "/sys/kernel/tracing";
const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
/// How long a case waits for other runs to let go of the lock.
const LOCK_WAIT: Duration = Duration::from_secs(300);
/// From the supervisor's SIGKILL to every setting back (the issue asks for
/// a second; the slack is for a loaded CI machine, the time is printed).
const RESTORED_WITHIN: Duration = Duration::from_secs(2);

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Everything a real run may change: the tracefs files it writes (or that
/// tracefs is not mounted), the RT and autogroup knobs, and any scratch
/// cgroup (`schedlab-PID`) under the cgroup mounts.
fn snapshot() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if tracefs_mounted() {
        m.extend(common::tracefs_state());
    } else {
        m.insert("tracefs".into(), "not mounted".into());
    }
    m.insert(RT_RUNTIME.into(), read(RT_RUNTIME));
    m.insert("autogroup".into(), read("/proc/sys/kernel/sched_autogroup_enabled"));
    for mount in std::fs::read_dir("/sys/fs/cgroup").into_iter().flatten().flatten() {
        for d in std::fs::read_dir(mount.path()).into_iter().flatten().flatten() {
            if d.file_name().to_string_lossy().starts_with("schedlab-") {
                m.insert(d.path().display().to_string(), "exists".into());
            }
        }
    }
    m
}

/// The run lock, waited for while other runs hold it.
fn wait_for_lock(until: Instant) -> RunLock {
    let mut said = false;
    loop {
        match RunLock::acquire(&state_dir()) {
            Ok(lock) => return lock,
            Err(RunnerError::Locked { holder, .. }) => {
                assert!(Instant::now() < until, "another run (pid {holder}) held the run lock for {LOCK_WAIT:?}");
                if !said {
                    println!("waiting for another run (pid {holder}) to end");
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("the run lock: {e}"),
        }
    }
}

/// The parent and comm of a process (`None` once it is gone or reaped).
fn stat_of(pid: i32) -> Option<(i32, String)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (s.find('(')?, s.rfind(')')?);
    let mut rest = s[close + 2..].split(' ');
    let state = rest.next()?;
    if state == "Z" {
        return None;
    }
    Some((rest.next()?.parse().ok()?, s[open + 1..close].to_string()))
}

/// The child of `parent` whose comm is `comm` (cut to 15 bytes by the kernel).
fn child_named(parent: i32, comm: &str) -> Option<i32> {
    let comm = &comm[..comm.len().min(15)];
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|p| {
        let pid: i32 = p.file_name().to_str()?.parse().ok()?;
        let (ppid, c) = stat_of(pid)?;
        (ppid == parent && c == comm).then_some(pid)
    })
}

fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One real run killed mid-way.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    /// What must read so while the run is in force (a file, its trimmed value).
    in_force: Option<(&'static str, &'static str)>,
    /// A directory the run creates, `{pid}` the supervisor's (the case is
    /// killed once it exists).
    creates: Option<&'static str>,
}

/// Start the case's run; `None` if another run took the lock first.
fn start(case: &Case, dir: &Path) -> Option<(Child, i32, Option<i32>)> {
    let log = |n: &str| std::fs::File::create(dir.join(format!("{}.{n}", case.name))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(case.args)
        .env_remove("SCHEDLAB_STATE_DIR")
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(log("stdout"))
        .stderr(log("stderr"))
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let saved = state_dir().join(STATE_FILE);
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let err = read(dir.join(format!("{}.stderr", case.name)));
            assert!(err.contains("another `schedlab real` is running"), "{}: ended early ({status}): {err}", case.name);
            return None;
        }
        let mine = read(&saved).contains(&format!("\"pid\": {pid},"));
        let worker = child_named(pid, "schedlab-worker");
        let forced = case.in_force.is_none_or(|(f, v)| read(f).trim() == v);
        let created = case.creates.is_none_or(|d| Path::new(&d.replace("{pid}", &pid.to_string())).is_dir());
        if let (true, Some(w), true, true, true) =
            (mine, worker, read(Path::new(TRACEFS).join("tracing_on")).trim() == "1", forced, created)
        {
            // Looked for only here: whether there is one is for the checks
            // after the kill to find out.
            let r = child_named(pid, "schedlab-restore");
            // Into the run proper (after the worker's calibration).
            std::thread::sleep(Duration::from_millis(500));
            assert!(child.try_wait().unwrap().is_none(), "{}: the run ended before it was killed", case.name);
            return Some((child, w, r));
        }
        if t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("{}: the run did not get going in 30 s", case.name);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sigkill_mid_run_restores_everything(case: &Case, dir: &Path) {
    let until = Instant::now() + LOCK_WAIT;
    let (before, (mut child, worker, restorer)) = loop {
        let lock = wait_for_lock(until);
        // What a run killed earlier (by someone else) left, the run would
        // put back first: the settings before are the ones after that.
        if let Some(what) = lock.restore_leftover().unwrap() {
            println!("{what}");
        }
        let before = snapshot();
        drop(lock);
        if let Some(run) = start(case, dir) {
            break (before, run);
        }
    };
    let pid = child.id() as i32;
    let during = snapshot();
    child.kill().unwrap(); // SIGKILL
    let killed = Instant::now();
    child.wait().unwrap();
    assert_ne!(during, before, "{}: nothing to restore: the run's settings should be in force", case.name);
    // The restorer holds the run lock until it has restored: the lock free
    // is the restore done. Held while the settings are read, so that no
    // other run changes them meanwhile.
    let lock = loop {
        match RunLock::acquire(&state_dir()) {
            Ok(lock) => break lock,
            Err(RunnerError::Locked { holder, .. }) if holder != pid.to_string() => {
                println!("{}: another run (pid {holder}) started right after the restore; trying again", case.name);
                return sigkill_mid_run_restores_everything(case, dir);
            }
            Err(e) => {
                assert!(
                    killed.elapsed() < RESTORED_WITHIN,
                    "{}: not restored {RESTORED_WITHIN:?} after: {e}",
                    case.name
                );
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    };
    let restored_in = killed.elapsed();
    let after = snapshot();
    drop(lock);
    println!("{}: restored {:.0} ms after the supervisor's SIGKILL", case.name, restored_in.as_secs_f64() * 1e3);
    assert_eq!(after, before, "{}: settings not restored after the supervisor's SIGKILL", case.name);
    assert!(restored_in < RESTORED_WITHIN, "{}: restored only after {restored_in:?}", case.name);
    assert!(!state_dir().join(STATE_FILE).exists(), "{}: the saved state outlived its restore", case.name);
    let log = read(state_dir().join(RESTORER_LOG));
    assert!(log.contains(&format!("the supervisor (pid {pid}) died without restoring; restored")), "{log}");
    let stderr = read(dir.join(format!("{}.stderr", case.name)));
    assert!(stderr.contains(&format!("restorer: the supervisor (pid {pid}) died")), "{stderr}");
    // Nothing lingers: the worker (and its RT threads) died with the
    // supervisor, the restorer once it had restored.
    wait_until("the worker to die", RESTORED_WITHIN, || stat_of(worker).is_none());
    let restorer = restorer.expect("the supervisor forked a restorer");
    wait_until("the restorer to exit", RESTORED_WITHIN, || stat_of(restorer).is_none());
}

/// Puts back what the test itself changed, also when a case fails.
struct MachineGuard {
    mounted_here: bool,
    clock: String,
    buffer_kb: String,
}

impl Drop for MachineGuard {
    fn drop(&mut self) {
        let _lock = wait_for_lock(Instant::now() + LOCK_WAIT);
        if self.mounted_here {
            // Retried: a file a dying run held open keeps it busy a moment.
            let t = Instant::now();
            while tracefs_mounted() && t.elapsed() < Duration::from_secs(5) {
                if !Command::new("umount").arg(TRACEFS).status().is_ok_and(|s| s.success()) {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        } else {
            let _ = std::fs::write(Path::new(TRACEFS).join("trace_clock"), &self.clock);
            let _ = std::fs::write(Path::new(TRACEFS).join("buffer_size_kb"), &self.buffer_kb);
        }
    }
}

#[test]
fn sigkill_of_the_supervisor_leaves_nothing_changed() {
    if !is_root() {
        println!("skipped: `schedlab real` needs root (tracefs, SCHED_FIFO)");
        return;
    }
    if !Path::new(TRACEFS).is_dir() {
        println!("skipped: no {TRACEFS} (a kernel without tracefs)");
        return;
    }
    // Removed when `tmp` drops, also when the test fails.
    let tmp = common::tmp_dir("real-sigkill");
    let dir = tmp.path().to_path_buf();
    let asym = Case {
        name: "asym_min-2cpu",
        args: &["real", "scenarios/asym_min-2cpu.toml", "--duration", "5s", "--remap"],
        in_force: None,
        creates: None,
    };
    // Not mounted (this host between runs): the restorer unmounts it too.
    if !tracefs_mounted() {
        sigkill_mid_run_restores_everything(&asym, &dir);
    }

    // Mounted, with unusual values, so that a restore to defaults is caught.
    let guard = {
        let _lock = wait_for_lock(Instant::now() + LOCK_WAIT);
        let mounted_here = !tracefs_mounted();
        if mounted_here {
            let ok =
                Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).status().is_ok_and(|s| s.success());
            assert!(ok, "mounting tracefs at {TRACEFS}");
        }
        let clock = read(Path::new(TRACEFS).join("trace_clock"));
        let clock = clock.split('[').nth(1).and_then(|s| s.split(']').next()).unwrap_or("local").to_string();
        let kb = read(Path::new(TRACEFS).join("buffer_size_kb"));
        let kb = kb.trim();
        let buffer_kb = kb.split_once("(expanded:").map_or(kb, |(_, e)| e.trim_end_matches(')').trim()).to_string();
        let guard = MachineGuard { mounted_here, clock, buffer_kb };
        std::fs::write(Path::new(TRACEFS).join("trace_clock"), "global").unwrap();
        std::fs::write(Path::new(TRACEFS).join("buffer_size_kb"), "1411").unwrap();
        guard
    };
    sigkill_mid_run_restores_everything(&asym, &dir);

    let cpu_v1 = Path::new("/sys/fs/cgroup/cpu/cpu.shares").exists();
    let v2_cpu = read("/sys/fs/cgroup/cgroup.subtree_control").contains("cpu");
    if cpu_v1 || v2_cpu {
        let scratch =
            if cpu_v1 { "/sys/fs/cgroup/cpu/schedlab-{pid}/four" } else { "/sys/fs/cgroup/schedlab-{pid}/four" };
        let groups = Case {
            name: "groups-1-vs-4",
            args: &["real", "scenarios/cgroups/groups-1-vs-4.toml", "--duration", "5s", "--remap"],
            in_force: None,
            creates: Some(scratch),
        };
        sigkill_mid_run_restores_everything(&groups, &dir);
    } else {
        println!("skipped the cgroup case: neither a cgroup v1 cpu mount nor a v2 root that delegates cpu");
    }

    // rt-pi-push sets sched_rt_runtime_us = -1 (RT throttling off
    // machine-wide), applied with --set-rt-runtime.
    if read(RT_RUNTIME).trim() != "-1" {
        let rt = Case {
            name: "rt-pi-push",
            args: &["real", "scenarios/rt-pi-push.toml", "--duration", "5s", "--remap", "--set-rt-runtime"],
            in_force: Some((RT_RUNTIME, "-1")),
            creates: None,
        };
        sigkill_mid_run_restores_everything(&rt, &dir);
    } else {
        println!("skipped the RT case: sched_rt_runtime_us is already -1 here");
    }
    drop(guard);
}
