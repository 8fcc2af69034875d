//! The guest side: schedlab running as the guest kernel's `/init`. It
//! mounts the pseudo filesystems, applies the job's `sched_features` and
//! knobs through debugfs and procfs and reads each back, runs the scenario
//! with the real runner as many times as asked, sends everything to the
//! host over the virtio-serial port and powers the machine off. A guest
//! has nothing to restore: it is thrown away.

use std::ffi::CString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schedlab_runner::tracefs::{write_file, RT_RUNTIME};
use schedlab_runner::{capture_real, RunnerError};
use schedlab_scenario::Scenario;

use crate::wire::{encode, GuestInfo, Kind, CHUNK, MAGIC};
use crate::{Job, RunHeader, VmError, JOB_PATH, PORT_NAME};

pub(crate) const FEATURES: &str = "/sys/kernel/debug/sched/features";

/// The host's end of the results channel.
struct Channel {
    port: std::fs::File,
}

impl Channel {
    fn open() -> Result<Channel, VmError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(dev) = find_port() {
                let mut port = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&dev)
                    .map_err(|e| VmError::OpenPort { dev: dev.clone(), source: e })?;
                port.write_all(MAGIC).map_err(|e| VmError::WritePort { dev, source: e })?;
                return Ok(Channel { port });
            }
            if Instant::now() > deadline {
                return Err(VmError::NoPort);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn send(&mut self, kind: Kind, payload: &[u8]) -> Result<(), VmError> {
        let mut frame = Vec::with_capacity(payload.len() + 5);
        encode(&mut frame, kind, payload);
        self.port.write_all(&frame).map_err(VmError::Send)
    }

    /// A progress line: on the console and to the host.
    fn log(&mut self, line: &str) {
        eprintln!("schedlab-guest: {line}");
        let _ = self.send(Kind::Log, line.as_bytes());
    }
}

fn find_port() -> Option<PathBuf> {
    let ports = std::fs::read_dir("/sys/class/virtio-ports").ok()?;
    ports.flatten().find_map(|e| {
        let name = std::fs::read_to_string(e.path().join("name")).ok()?;
        let dev = Path::new("/dev").join(e.file_name());
        (name.trim() == PORT_NAME && dev.exists()).then_some(dev)
    })
}

fn mount(fstype: &str, target: &str) -> Result<(), VmError> {
    let _ = std::fs::create_dir_all(target);
    let (src, fs, tgt) = (CString::new(fstype).unwrap(), CString::new(fstype).unwrap(), CString::new(target).unwrap());
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe { libc::mount(src.as_ptr(), tgt.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EBUSY) {
            return Err(VmError::Mount { fstype: fstype.to_string(), target: target.to_string(), source: e });
        }
    }
    Ok(())
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|e| format!("<{e}>"))
}

/// Apply one `sched_features` setting and check it reads back.
fn apply_feature(setting: &str) -> Result<String, VmError> {
    write_file(Path::new(FEATURES), setting).map_err(|e| match &e {
        // debugfs answers EINVAL for a name the kernel does not have.
        RunnerError::File { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => {
            VmError::NoFeatureWrite { source: Box::new(e), name: setting.trim_start_matches("NO_").to_string() }
        }
        _ => VmError::from(e),
    })?;
    let now = read_trim(FEATURES);
    if !now.split_whitespace().any(|f| f == setting) {
        return Err(VmError::FeatureReadBack { setting: setting.to_string(), now });
    }
    Ok(format!("sched_features {setting} (read back)"))
}

/// `DELAY_DEQUEUE` for both `DELAY_DEQUEUE` and `NO_DELAY_DEQUEUE`.
fn feature_name(setting: &str) -> &str {
    setting.strip_prefix("NO_").unwrap_or(setting)
}

/// The writes that put the features into setting `set` of `all`: each
/// feature `set` names as it says, each feature only the other sets name
/// back to its state in `base` (the features before any set).
pub(crate) fn setting_writes(set: &[String], all: &[Vec<String>], base: &str) -> Result<Vec<String>, VmError> {
    let mut names: Vec<&str> = all.iter().flatten().map(|f| feature_name(f)).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            if let Some(f) = set.iter().rev().find(|f| feature_name(f) == name) {
                return Ok(f.clone());
            }
            base.split_whitespace()
                .find(|t| feature_name(t) == name)
                .map(str::to_string)
                .ok_or_else(|| VmError::NoFeature(name.to_string()))
        })
        .collect()
}

fn apply_setting(set: &[String], all: &[Vec<String>], base: &str) -> Result<(), VmError> {
    for w in setting_writes(set, all, base)? {
        apply_feature(&w)?;
    }
    Ok(())
}

fn apply_settings(job: &Job, nr_cpus: usize) -> Result<Vec<String>, VmError> {
    let mut applied = Vec::new();
    for f in &job.features {
        applied.push(apply_feature(f)?);
    }
    if let Some(ns) = job.fair_server_runtime_ns {
        let mut seen = Vec::new();
        for cpu in 0..nr_cpus {
            let path = format!("/sys/kernel/debug/sched/fair_server/cpu{cpu}/runtime");
            write_file(Path::new(&path), &ns.to_string())?;
            seen.push(read_trim(&path));
        }
        seen.dedup();
        applied.push(format!("fair_server/cpu*/runtime = {ns} ns on {nr_cpus} CPUs (read back: {})", seen.join(",")));
    }
    if let Some(us) = job.rt_runtime_us {
        write_file(Path::new(RT_RUNTIME), &us.to_string())?;
        applied.push(format!("sched_rt_runtime_us = {us} (read back: {})", read_trim(RT_RUNTIME)));
    }
    Ok(applied)
}

fn guest_main(chan: &mut Channel, uptime_at_init_s: f64) -> Result<(), VmError> {
    let job: Job = serde_json::from_str(&std::fs::read_to_string(JOB_PATH).map_err(VmError::JobRead)?)
        .map_err(VmError::JobParse)?;
    let scenario = Scenario::load(Path::new(&job.scenario_path))?;
    let nr_cpus = schedlab_runner::sys::allowed_cpus().map(|c| c.len()).unwrap_or(0);
    let features_before = read_trim(FEATURES);
    let applied = apply_settings(&job, nr_cpus)?;
    let info = GuestInfo {
        kernel: schedlab_runner::sys::kernel_release(),
        nr_cpus,
        cmdline: read_trim("/proc/cmdline"),
        uptime_at_init_s,
        features_before,
        features_after: read_trim(FEATURES),
        applied,
    };
    let base = info.features_after.clone();
    chan.send(Kind::Hello, serde_json::to_string(&info).map_err(VmError::Encode)?.as_bytes())?;
    let nsettings = job.settings.len().max(1);
    let total = job.runs as usize * nsettings;
    for round in 0..job.runs as usize {
        for setting in 0..nsettings {
            if let Some(set) = job.settings.get(setting) {
                apply_setting(set, &job.settings, &base)?;
            }
            let n = round * nsettings + setting + 1;
            chan.log(&format!("run {n}/{total} of {} (setting {})", scenario.name, setting + 1));
            let capture = capture_real(&scenario, &job.opts)?;
            let head = RunHeader { setting, features: read_trim(FEATURES), capture };
            chan.send(Kind::RunMeta, serde_json::to_string(&head).map_err(VmError::Encode)?.as_bytes())?;
            for chunk in head.capture.text.as_bytes().chunks(CHUNK) {
                chan.send(Kind::TraceChunk, chunk)?;
            }
            chan.send(Kind::RunEnd, &[])?;
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    chan.send(Kind::Bye, read_trim("/proc/uptime").as_bytes())
}

fn power_off() -> ! {
    // SAFETY: plain syscalls; as PID 1 we are allowed to power off.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    // reboot() does not return on success; if it failed, exiting PID 1
    // panics the kernel, which `panic=-1` and QEMU's -no-reboot end too.
    std::process::exit(1)
}

/// Entry point when schedlab is the guest's PID 1. Never returns.
pub fn main() -> ! {
    std::panic::set_hook(Box::new(|p| eprintln!("schedlab-guest: panic: {p}")));
    let mounted = [
        ("proc", "/proc"),
        ("sysfs", "/sys"),
        ("devtmpfs", "/dev"),
        ("debugfs", "/sys/kernel/debug"),
        ("tracefs", "/sys/kernel/tracing"),
        ("cgroup2", "/sys/fs/cgroup"),
    ]
    .iter()
    .try_for_each(|(fs, at)| mount(fs, at));
    // The guest is the run's alone: hand the cpu and cpuset controllers to
    // the root's children, as systemd does on a host, so a scenario's
    // cgroups get them (a kernel without them keeps what it has).
    let _ = std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+cpu +cpuset");
    // Read as soon as /proc is there: how long the kernel took to reach init.
    let uptime = read_trim("/proc/uptime").split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let _ = std::fs::create_dir_all("/run");
    let _ = std::fs::create_dir_all("/tmp");
    match Channel::open() {
        Ok(mut chan) => {
            let result = mounted.and_then(|()| guest_main(&mut chan, uptime));
            if let Err(e) = result {
                eprintln!("schedlab-guest: error: {e}");
                let _ = chan.send(Kind::Error, e.to_string().as_bytes());
            }
        }
        Err(e) => eprintln!("schedlab-guest: error: {e}"),
    }
    power_off()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_setting_restores_what_only_the_others_change() {
        let all = vec![v(&["NO_RT_PUSH_IPI"]), v(&["RT_PUSH_IPI", "NO_DELAY_DEQUEUE"])];
        let base = "DELAY_DEQUEUE NO_RT_PUSH_IPI WAKEUP_PREEMPTION";
        assert_eq!(setting_writes(&all[0], &all, base).unwrap(), ["DELAY_DEQUEUE", "NO_RT_PUSH_IPI"]);
        assert_eq!(setting_writes(&all[1], &all, base).unwrap(), ["NO_DELAY_DEQUEUE", "RT_PUSH_IPI"]);
        // A set may be empty: everything back to the base.
        let all = vec![vec![], v(&["NO_DELAY_DEQUEUE"])];
        assert_eq!(setting_writes(&all[0], &all, base).unwrap(), ["DELAY_DEQUEUE"]);
        let err = setting_writes(&all[0], &[v(&["NO_FOO"])], base).unwrap_err().to_string();
        assert!(err.contains("no sched_feature `FOO`"), "{err}");
    }
}
