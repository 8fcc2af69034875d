//! Run a scenario on a real kernel booted under QEMU, with `sched_features`
//! and scheduler knobs set inside the guest — for a kernel the host cannot
//! boot (Debian's 6.12, or the user's patched bzImage).
//!
//! [`run_vm`] resolves the kernel ([`kernel`]), finds or builds a static
//! schedlab ([`guest_bin`]), packs it as `/init` with the scenario and a
//! [`Job`] into an initramfs ([`initramfs`]), boots QEMU ([`qemu`]: KVM
//! where a hardware hypervisor backs it, else TCG) and reads the results
//! from a virtio-serial port as frames ([`wire`]). In the guest, schedlab is
//! PID 1 ([`guest::main`]): it applies the settings, reads them back, runs
//! the real runner `runs` times and powers off. Every phase has a deadline;
//! a guest that panics or hangs is killed and reported with its console's
//! last lines.

mod error;
pub mod guest;
pub mod guest_bin;
pub mod initramfs;
pub mod kernel;
pub mod qemu;
pub mod wire;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schedlab_runner::{RawCapture, RealOptions};
use schedlab_scenario::Scenario;
use serde::{Deserialize, Serialize};

pub use error::VmError;
pub use qemu::{Accel, AccelChoice, UnknownAccel};
pub use wire::GuestInfo;

/// Where the job sits in the initramfs.
pub const JOB_PATH: &str = "/schedlab/job.json";
/// The virtio-serial port's name (`/sys/class/virtio-ports/*/name`).
pub const PORT_NAME: &str = "schedlab";

/// What the guest's init does.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// The scenario's path inside the guest (the host's absolute path).
    pub scenario_path: String,
    /// `sched_features` writes, in order.
    pub features: Vec<String>,
    /// Written to every CPU's `fair_server/cpuN/runtime`.
    pub fair_server_runtime_ns: Option<u64>,
    /// Written to `/proc/sys/kernel/sched_rt_runtime_us`.
    pub rt_runtime_us: Option<i64>,
    pub runs: u32,
    /// Feature sets run in turn in each round (`--setting`); empty: one
    /// round of the base settings alone.
    #[serde(default)]
    pub settings: Vec<Vec<String>>,
    pub opts: RealOptions,
}

/// One run's header on the channel: which setting it ran under and what
/// the features read back before it started.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunHeader {
    pub setting: usize,
    pub features: String,
    pub capture: RawCapture,
}

/// A run as the host received it.
#[derive(Clone, Debug)]
pub struct VmRun {
    /// Index into [`VmOptions::settings`] (0 when there are none).
    pub setting: usize,
    /// debugfs `sched/features` as read back before the run.
    pub features: String,
    pub capture: RawCapture,
    /// Wall seconds from the previous run's end (or the guest's hello).
    pub wall_s: f64,
}

/// `schedlab vm`'s choices.
#[derive(Clone, Debug)]
pub struct VmOptions {
    /// `debian-6.12` or the path of a bzImage.
    pub kernel: String,
    pub cpus: usize,
    pub memory_mb: u64,
    pub accel: Accel,
    /// Deterministic-ish virtual time (`-icount`): tighter timing, ~2x slower.
    pub icount: bool,
    /// Silence the background that reschedules CPUs by itself: `nowatchdog`
    /// and fair-server runtime 0 (unless the scenario sets one).
    pub quiet_kernel: bool,
    /// Extra kernel command-line words.
    pub append: Vec<String>,
    /// `sched_features` settings after the scenario's.
    pub features: Vec<String>,
    /// Rounds of the scenario in one boot (each round runs every setting).
    pub runs: u32,
    /// Feature sets to alternate between, one run of each per round, on top
    /// of the scenario's and `features`; a feature one set names and another
    /// does not is put back to its state before the sets for the other.
    pub settings: Vec<Vec<String>>,
    pub guest_bin: Option<PathBuf>,
    /// Limit for reaching `/init` and applying the settings.
    pub boot_timeout: Duration,
    /// The real runner's options inside the guest.
    pub real: RealOptions,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            kernel: kernel::DEBIAN_612.into(),
            cpus: 4,
            memory_mb: 2048,
            accel: Accel::Auto,
            icount: false,
            quiet_kernel: false,
            append: Vec::new(),
            features: Vec::new(),
            runs: 1,
            settings: Vec::new(),
            guest_bin: None,
            boot_timeout: Duration::from_secs(180),
            real: RealOptions::default(),
        }
    }
}

/// A finished VM session.
#[derive(Clone, Debug)]
pub struct VmResult {
    pub guest: GuestInfo,
    /// Every run in the order it ran (each capture with its tracefs text).
    pub runs: Vec<VmRun>,
    pub kernel_label: String,
    pub accel: AccelChoice,
    pub icount: bool,
    pub qemu_command: String,
    pub kernel_cmdline: String,
    pub cpus: usize,
    pub memory_mb: u64,
    /// Wall seconds from starting QEMU to the guest's settings applied.
    pub boot_s: f64,
    /// Wall seconds from starting QEMU to its exit.
    pub total_s: f64,
    /// What the user should know (quiet-kernel choices, ...).
    pub notes: Vec<String>,
}

fn canonical(p: &Path) -> Result<PathBuf, VmError> {
    p.canonicalize().map_err(|e| VmError::Io { path: p.to_path_buf(), source: e })
}

/// The scenario file and, when its topology is a file, that file too, each
/// at its absolute host path so the guest loads them exactly as the host did.
fn scenario_files(scenario: &Scenario) -> Result<Vec<(String, Vec<u8>)>, VmError> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| VmError::Read { path: p.to_path_buf(), source: e });
    let path = canonical(Path::new(&scenario.path))?;
    let mut files = vec![(path.display().to_string(), read(&path)?)];
    if schedlab_scenario::Topology::preset(&scenario.topology_ref).is_none() {
        let dir = path.parent().unwrap_or(Path::new("/"));
        let topo = canonical(&dir.join(&scenario.topology_ref))?;
        files.push((topo.display().to_string(), read(&topo)?));
    }
    Ok(files)
}

/// A run's header from the guest, its setting checked against the
/// `nsettings` the host asked for (a corrupt frame or another guest binary
/// could name any).
fn run_header(payload: &[u8], nsettings: usize) -> Result<RunHeader, VmError> {
    let head: RunHeader = serde_json::from_slice(payload).map_err(VmError::RunFrame)?;
    if head.setting >= nsettings {
        return Err(VmError::SettingIndex { index: head.setting, nsettings });
    }
    Ok(head)
}

/// How long one run may take in the guest before it counts as hung.
fn run_limit(plan_ns: u64, icount: bool, kvm: bool) -> Duration {
    let slowdown = if kvm {
        1.5
    } else if icount {
        4.0
    } else {
        2.5
    };
    Duration::from_secs_f64(plan_ns as f64 / 1e9 * slowdown + 120.0)
}

/// Boot `opts.kernel` in QEMU and run `scenario` in it `opts.runs` times.
/// `log` receives progress lines (download, build, boot, each run).
pub fn run_vm(scenario: &Scenario, opts: &VmOptions, log: &mut dyn FnMut(&str)) -> Result<VmResult, VmError> {
    if opts.cpus == 0 || opts.cpus > 64 {
        return Err(VmError::Cpus(opts.cpus));
    }
    if opts.runs == 0 {
        return Err(VmError::NoRuns);
    }
    if let Some(f) = opts.settings.iter().flatten().find(|f| f.is_empty() || f.contains(char::is_whitespace)) {
        return Err(VmError::BadSetting(f.clone()));
    }
    // The runner's options in the guest: its init applies the kernel
    // settings, and there is no host file to write the trace to.
    let mut real = opts.real.clone();
    real.kernel_settings_applied = true;
    real.set_rt_runtime = false;
    real.trace_out = None;
    // The guest's CPUs are 0..cpus: refuse a scenario that cannot run there
    // before spending a boot on it (and take the run's length from the plan).
    let guest_cpus: Vec<usize> = (0..opts.cpus).collect();
    let plan = schedlab_runner::Plan::new(scenario, &real, &guest_cpus)
        .map_err(|e| VmError::Plan { source: Box::new(e), cpus: opts.cpus })?;
    let qemu_bin = qemu::qemu_binary()?;
    let kernel = kernel::resolve(&opts.kernel, log)?;
    let guest_bin = guest_bin::guest_binary(opts.guest_bin.as_deref(), log)?;
    let accel = qemu::choose_accel(opts.accel);
    if accel.kvm && opts.icount {
        return Err(VmError::IcountNeedsTcg);
    }

    let work = std::env::temp_dir().join(format!(
        "schedlab-vm-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
    ));
    std::fs::create_dir_all(&work).map_err(|e| VmError::Io { path: work.clone(), source: e })?;
    let mut crashed_boots = Vec::new();
    let result = loop {
        let attempt = boot_and_run(
            scenario,
            opts,
            real.clone(),
            plan.duration_ns,
            &qemu_bin,
            kernel.clone(),
            &guest_bin,
            accel.clone(),
            &work,
            log,
        );
        match attempt {
            Err(VmError::GuestStopped { done: 0, booted, oops: Some(oops), .. })
                if !accel.kvm && crashed_boots.len() < MAX_CRASHED_BOOTS =>
            {
                let when = if booted { "before its first run finished" } else { "while booting" };
                log(&format!("the guest kernel crashed {when} ({oops}); booting it again"));
                crashed_boots.push((oops, booted));
            }
            other => break other,
        }
    };
    let _ = std::fs::remove_dir_all(&work);
    result.map(|mut r| {
        for (i, (oops, booted)) in crashed_boots.iter().enumerate() {
            let when = if *booted {
                "after the guest applied its settings (a sched_features write flips static keys, which \
                 patches kernel text) and before its first run finished"
            } else {
                "before the guest's init ran"
            };
            r.notes.push(format!(
                "boot {} crashed {when} ({oops}) and was retried: multi-threaded TCG can run code the \
                 kernel is live-patching (int3-based text_poke) on another vCPU; no run of the workload \
                 had completed",
                i + 1
            ));
        }
        r
    })
}

/// Boots that may crash inside the kernel before any run has completed,
/// under TCG, before the error is reported. Measured on this machine: 1
/// boot in 8 of Debian's 6.12 with `-accel tcg,thread=multi` oopses on an
/// int3 in `sched_clock_cpu` ~2.7 s into boot, when a static key is flipped
/// while another vCPU runs the patched code; a CI run (2026-12-01) saw the
/// same after the guest wrote `sched_features` (RIP in `__schedule` at a
/// patched call). A kernel that crashes every boot is still reported after
/// three tries; a crash after a completed run is reported at once.
const MAX_CRASHED_BOOTS: usize = 2;

#[allow(clippy::too_many_arguments)]
fn boot_and_run(
    scenario: &Scenario,
    opts: &VmOptions,
    real: RealOptions,
    plan_ns: u64,
    qemu_bin: &Path,
    kernel: kernel::Kernel,
    guest_bin: &Path,
    accel: AccelChoice,
    work: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<VmResult, VmError> {
    let mut notes = Vec::new();
    let fair_server_runtime_ns = match (scenario.fair_server_runtime_ns, opts.quiet_kernel) {
        (Some(ns), true) => {
            notes.push(format!("--quiet-kernel: the scenario's fair_server_runtime ({ns} ns) is kept"));
            Some(ns)
        }
        (Some(ns), false) => Some(ns),
        (None, true) => Some(0),
        (None, false) => None,
    };
    let features: Vec<String> =
        scenario.features.iter().map(|f| f.value.clone()).chain(opts.features.iter().cloned()).collect();
    let job = Job {
        scenario_path: canonical(Path::new(&scenario.path))?.display().to_string(),
        features,
        fair_server_runtime_ns,
        rt_runtime_us: scenario.sched_rt_runtime_us,
        runs: opts.runs,
        settings: opts.settings.clone(),
        opts: real,
    };

    let mut cpio = initramfs::Cpio::new();
    for d in ["dev", "proc", "sys", "run", "tmp", "schedlab"] {
        cpio.dir(d);
    }
    cpio.char_dev("dev/console", 5, 1);
    let stripped = work.join("schedlab");
    guest_bin::stripped_copy(guest_bin, &stripped)?;
    let init = std::fs::read(&stripped).map_err(|e| VmError::Read { path: stripped.clone(), source: e })?;
    cpio.file("init", 0o755, &init);
    cpio.file(JOB_PATH, 0o644, serde_json::to_string_pretty(&job).map_err(VmError::Encode)?.as_bytes());
    for (path, bytes) in scenario_files(scenario)? {
        cpio.file(&path, 0o644, &bytes);
    }
    let initramfs = work.join("initramfs.cpio");
    std::fs::write(&initramfs, cpio.finish()).map_err(|e| VmError::Io { path: initramfs.clone(), source: e })?;

    let mut words = vec!["console=ttyS0".to_string(), "panic=-1".into(), "quiet".into(), "rdinit=/init".into()];
    if opts.quiet_kernel {
        words.push("nowatchdog".into());
    }
    words.extend(opts.append.iter().cloned());
    let spec = qemu::MachineSpec {
        kernel: kernel.image.clone(),
        initramfs,
        cmdline: words.join(" "),
        cpus: opts.cpus,
        memory_mb: opts.memory_mb,
        kvm: accel.kvm,
        icount: opts.icount,
        console: work.join("console.log"),
        data: work.join("data.bin"),
    };
    let args = qemu::qemu_args(&spec);
    let qemu_command = qemu::shown(qemu_bin, &args);
    log(&format!("booting {} on {} vCPUs ({})", kernel.label, opts.cpus, accel.why));

    let per_run = run_limit(plan_ns, opts.icount, accel.kvm);
    let start = Instant::now();
    // The phases' deadlines (boot, each run, powering off) stop a stuck
    // guest first; this bounds QEMU as a whole, whatever the guest says.
    let boot_runs_and_power_off = opts.boot_timeout
        + per_run.saturating_mul(opts.runs.saturating_mul(opts.settings.len().max(1) as u32))
        + Duration::from_secs(120);
    remove_stale(&[&spec.console, &spec.data])?;
    let mut child = qemu::spawn(qemu_bin, &args, &work.join("qemu.stderr"), boot_runs_and_power_off)?;
    let mut tail = qemu::ConsoleTail::default();
    let mut guest: Option<GuestInfo> = None;
    let mut boot_s = 0.0;
    let mut runs: Vec<VmRun> = Vec::new();
    let mut current: Option<(RunHeader, Vec<u8>)> = None;
    let mut run_started = Instant::now();
    let mut guest_error: Option<String> = None;
    let mut bye = false;
    let nsettings = opts.settings.len().max(1);
    let nruns = opts.runs * nsettings as u32;
    let mut on_frame = |f: wire::Frame| -> Result<qemu::Wait, VmError> {
        use wire::Kind;
        Ok(match f.kind {
            Kind::Hello => {
                let info: GuestInfo = serde_json::from_slice(&f.payload).map_err(VmError::HelloFrame)?;
                boot_s = start.elapsed().as_secs_f64();
                log(&format!(
                    "guest up in {boot_s:.1} s (kernel {}, {} CPUs, init at uptime {:.1} s)",
                    info.kernel, info.nr_cpus, info.uptime_at_init_s
                ));
                for a in &info.applied {
                    log(&format!("guest applied {a}"));
                }
                guest = Some(info);
                run_started = Instant::now();
                qemu::Wait::Deadline(per_run, format!("during run 1 of {nruns}"))
            }
            Kind::Log => {
                log(&format!("guest: {}", String::from_utf8_lossy(&f.payload)));
                qemu::Wait::Continue
            }
            Kind::RunMeta => {
                current = Some((run_header(&f.payload, nsettings)?, Vec::new()));
                qemu::Wait::Continue
            }
            Kind::TraceChunk => {
                let (_, text) = current.as_mut().ok_or(VmError::TraceOutsideRun)?;
                text.extend_from_slice(&f.payload);
                qemu::Wait::Continue
            }
            Kind::RunEnd => {
                let (head, text) = current.take().ok_or(VmError::EndWithoutRun)?;
                let mut capture = head.capture;
                capture.text = String::from_utf8(text).map_err(VmError::TraceNotUtf8)?;
                let wall_s = run_started.elapsed().as_secs_f64();
                runs.push(VmRun { setting: head.setting, features: head.features, capture, wall_s });
                run_started = Instant::now();
                let next = runs.len() as u32 + 1;
                qemu::Wait::Deadline(per_run, format!("during run {next} of {nruns}"))
            }
            Kind::Error => {
                guest_error = Some(String::from_utf8_lossy(&f.payload).into_owned());
                qemu::Wait::Deadline(Duration::from_secs(30), "powering off after an error".into())
            }
            Kind::Bye => {
                bye = true;
                qemu::Wait::Deadline(Duration::from_secs(30), "powering off".into())
            }
        })
    };
    let status = qemu::monitor(
        &mut child,
        &spec.data,
        &spec.console,
        (opts.boot_timeout, "while booting (no word from its init)".into()),
        &mut tail,
        &mut on_frame,
    )?;
    let total_s = start.elapsed().as_secs_f64();
    let qemu_stderr = std::fs::read_to_string(work.join("qemu.stderr")).unwrap_or_default();
    if let Some(message) = guest_error {
        return Err(VmError::Guest { kernel: kernel.label, message });
    }
    if !bye {
        return Err(VmError::GuestStopped {
            done: runs.len(),
            total: nruns,
            status,
            console: tail.render(),
            qemu_stderr: qemu_stderr.trim().to_string(),
            booted: guest.is_some(),
            oops: tail.oops().map(str::to_string),
        });
    }
    let guest = guest.ok_or(VmError::NoGuestInfo)?;
    Ok(VmResult {
        guest,
        runs,
        kernel_label: kernel.label,
        accel,
        icount: opts.icount,
        qemu_command,
        kernel_cmdline: spec.cmdline,
        cpus: opts.cpus,
        memory_mb: opts.memory_mb,
        boot_s,
        total_s,
        notes,
    })
}

/// Removes what a crashed boot left in `paths` (a missing file is fine):
/// a retried boot's data file would otherwise be read before QEMU truncates
/// it, its hello frame first ("guest up in 0.0 s") and then bytes at the
/// wrong offsets ("unknown frame kind 41", a CI run on 2026-12-07), and its
/// console log would show the old boot's oops.
fn remove_stale(paths: &[&Path]) -> Result<(), VmError> {
    for path in paths {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(VmError::Io { path: path.to_path_buf(), source: e })
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retried_boot_starts_without_the_crashed_boots_files() {
        let dir = tempfile::tempdir().unwrap();
        let (data, console, missing) =
            (dir.path().join("data.bin"), dir.path().join("console.log"), dir.path().join("none"));
        std::fs::write(&data, b"hello frame of the crashed boot").unwrap();
        std::fs::write(&console, b"Oops: int3").unwrap();
        remove_stale(&[&data, &console, &missing]).unwrap();
        assert!(!data.exists() && !console.exists(), "the old boot's files are gone");
        let err = remove_stale(&[dir.path()]).unwrap_err();
        assert!(matches!(err, VmError::Io { .. }), "a path that cannot be removed is an error: {err}");
    }

    #[test]
    fn a_run_header_naming_a_setting_that_was_not_sent_is_an_error() {
        let capture = RawCapture {
            plan: schedlab_runner::Plan {
                host_cpus: vec![0],
                cpu_map: Default::default(),
                threads: Vec::new(),
                templates: Vec::new(),
                duration_ns: 1,
                notes: Vec::new(),
            },
            kernel: "6.12".into(),
            text: String::new(),
            report: schedlab_runner::WorkerReport {
                calibration: None,
                threads: Vec::new(),
                t0_ns: 0,
                t_end_ns: 0,
                marker_write_failures: 0,
                notes: Vec::new(),
                steal: Vec::new(),
                error: None,
            },
            lost_events: 0,
            notes: Vec::new(),
            worker_pid: 1,
            cgroup_stats: Vec::new(),
        };
        let frame = |setting| {
            serde_json::to_vec(&RunHeader { setting, features: String::new(), capture: capture.clone() }).unwrap()
        };
        assert_eq!(run_header(&frame(1), 2).unwrap().setting, 1);
        assert_eq!(run_header(&frame(0), 1).unwrap().setting, 0);
        let err = run_header(&frame(1), 1).unwrap_err().to_string();
        assert!(err.contains("setting index 1 but there are 1"), "{err}");
        let err = run_header(&frame(usize::MAX), 3).unwrap_err().to_string();
        assert!(err.contains(&usize::MAX.to_string()), "{err}");
        assert!(run_header(b"{", 1).unwrap_err().to_string().contains("run frame"));
    }

    #[test]
    fn run_limits_grow_with_the_slowdown() {
        let d = 1_700_000_000;
        assert!(run_limit(d, false, true) < run_limit(d, false, false));
        assert!(run_limit(d, false, false) < run_limit(d, true, false));
        assert!(run_limit(d, true, false) >= Duration::from_secs(120));
    }
}
