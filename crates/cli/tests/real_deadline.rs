//! SCHED_DEADLINE threads on this machine's kernel (root): the real runner
//! gives a thread its reservation with `sched_setattr()`, the kernel's CBS
//! holds an overrunning task to it (throttled every period), the kernel's
//! admission refuses what the model refuses (EBUSY), and with
//! SCHED_FLAG_RECLAIM GRUB lets a task use the CPU's free bandwidth as the
//! model does. Skipped with a message without root.

mod common;
use common::root;

use std::process::Command;
use std::sync::Mutex;

/// One real run at a time: they share tracefs and the root domain's
/// deadline bandwidth.
static REAL: Mutex<()> = Mutex::new(());

fn is_root() -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::geteuid() == 0 }
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_kernel_holds_a_deadline_task_to_its_reservation_and_refuses_one_that_does_not_fit() {
    if !is_root() {
        eprintln!("skipped: needs root (sched_setattr SCHED_DEADLINE, tracefs)");
        return;
    }
    let _one = REAL.lock().unwrap_or_else(|e| e.into_inner());
    // dl-cbs-overrun: 2 ms every 10 ms asked for 5 ms per job, beside a hog.
    let d = json_of(&["real", "dl-cbs-overrun", "--duration", "2s", "--json"]);
    let cbs = &d["deadline"]["tasks"][0];
    assert_eq!(cbs["comm"], "cbs", "{d}");
    let window = d["window_ns"][1].as_f64().unwrap() - d["window_ns"][0].as_f64().unwrap();
    let share = cbs["run_ns"].as_f64().unwrap() / window;
    // The reservation, 20 %: an overrun the tick notices late is paid back
    // from the next period's runtime, so only the window's edges move it.
    assert!((0.15..=0.30).contains(&share), "cbs ran {share:.3} of the window");
    // Two throttles per 5 ms job (the model counts 96 in 2 s); at least
    // 40 on a shared machine, whose other load stretches the jobs.
    assert!(cbs["throttles"].as_u64().unwrap() >= 40, "throttled {} times in 2 s", cbs["throttles"]);
    assert!(cbs["misses"].as_u64().unwrap() >= 20, "{cbs}");

    // Two reservations of 0.95 CPU on a machine whose limit, with the fair
    // servers' 0.05 per CPU, leaves 0.95 x nr_cpus - 0.05 x nr_cpus: the
    // second no longer fits on 2 CPUs. The model refuses the file; the
    // kernel refuses the thread (EBUSY), which then runs as SCHED_OTHER.
    let nr_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if nr_cpus != 2 {
        eprintln!("admission half skipped: written for 2 CPUs, this machine has {nr_cpus}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("busy.toml");
    let thread = |name: &str| {
        format!(
            "[[thread]]\nname = \"{name}\"\npolicy = \"SCHED_DEADLINE\"\nruntime = \"9500us\"\ndeadline = \"10ms\"\n\
             program = [{{ run = \"1ms\" }}, {{ timer = \"10ms\" }}]\n"
        )
    };
    let topo = root().join("scenarios/topologies/kvm-2.toml");
    std::fs::write(
        &file,
        format!("topology = \"{}\"\nduration = \"300ms\"\n{}{}", topo.display(), thread("d0"), thread("d1")),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let sim = Command::new(env!("CARGO_BIN_EXE_schedlab")).args(["run", path]).output().unwrap();
    assert!(!sim.status.success() && String::from_utf8_lossy(&sim.stderr).contains("EBUSY"));
    let d = json_of(&["real", path, "--json"]);
    // The two threads ask at once: whichever asks first is admitted (the
    // runner does not order them; CI saw d1 first), the other refused.
    let notes = |i: usize| d["threads"][i]["setup_notes"].to_string();
    let (admitted, refused) = if notes(0) == "[]" { (0, 1) } else { (1, 0) };
    assert_eq!(notes(admitted), "[]", "one is admitted: {} / {}", notes(0), notes(1));
    assert!(notes(refused).contains("os error 16"), "the other is refused: {}", notes(refused));
}

#[test]
fn a_reclaiming_task_gets_max_bw_of_a_cpu_on_the_kernel_as_in_the_model() {
    if !is_root() {
        eprintln!("skipped: needs root (sched_setattr SCHED_DEADLINE with SCHED_FLAG_RECLAIM, tracefs)");
        return;
    }
    let _one = REAL.lock().unwrap_or_else(|e| e.into_inner());
    // dl-grub-reclaim: 30 ms / 100 ms with SCHED_FLAG_RECLAIM and 10 ms /
    // 100 ms without, both asking for the whole CPU. The model's shares are
    // GRUB's arithmetic: 0.3 / (0.3 x 269/256) of each period, 95.2 %, and
    // the plain reservation's 10 %.
    let share = |d: &serde_json::Value, comm: &str, window: f64| {
        let tasks = d["deadline"]["tasks"].as_array().unwrap();
        let t = tasks.iter().find(|t| t["comm"] == comm).unwrap_or_else(|| panic!("no {comm}: {d}"));
        t["run_ns"].as_f64().unwrap() / window
    };
    let model = json_of(&["run", "dl-grub-reclaim", "--json"]);
    let simulated = model["simulated_ns"].as_f64().unwrap();
    let (model_grub, model_cbs) = (share(&model, "grub", simulated), share(&model, "cbs", simulated));
    assert!((0.945..=0.96).contains(&model_grub), "model: grub ran {model_grub:.4}");
    assert!((0.098..=0.105).contains(&model_cbs), "model: cbs ran {model_cbs:.4}");
    // The kernel's GRUB gives the reclaiming task the same 95 %, not its
    // 30 %; the plain one keeps to its 10 %. Other load on the machine is
    // fair and cannot take a deadline task's time; the hypervisor can: the
    // kernel charges a deadline task's runtime in task time, without steal,
    // so a run with a CPU stolen from reads high: in three sessions' first
    // full test run this host read grub 99.1-100 % (and, where printed, cbs
    // 15-18 %), never when rerun, before the runner read steal. Such a run
    // is not compared; up to three runs are taken.
    // A runner that lost SCHED_FLAG_RECLAIM (30 %) or a model that lost
    // GRUB fails every run the hypervisor left alone.
    let mut runs = Vec::new();
    let mut steady = 0;
    for _ in 0..3 {
        let host = json_of(&["real", "dl-grub-reclaim", "--duration", "2s", "--json"]);
        let window = host["window_ns"][1].as_f64().unwrap() - host["window_ns"][0].as_f64().unwrap();
        let (host_grub, host_cbs) = (share(&host, "grub", window), share(&host, "cbs", window));
        let stolen =
            host["steal"].as_array().unwrap().iter().map(|s| s["ns"].as_f64().unwrap() / window).fold(0.0, f64::max);
        runs.push(format!("grub {host_grub:.4} cbs {host_cbs:.4} steal {:.1} %", 100.0 * stolen));
        if stolen > 0.02 {
            std::thread::sleep(std::time::Duration::from_secs(1));
            continue;
        }
        steady += 1;
        if (host_grub - model_grub).abs() < 0.03 && (host_cbs - model_cbs).abs() < 0.02 {
            return;
        }
    }
    if steady == 0 {
        eprintln!("skipped the host side: the hypervisor took over 2 % of a CPU in every run [{}]", runs.join("; "));
        return;
    }
    panic!("host runs [{}], model grub {model_grub:.4} cbs {model_cbs:.4}", runs.join("; "));
}
