//! The machine this program runs on, read from sysfs and procfs, as a
//! topology file (`schedlab topologies --host`).
//!
//! [`read_host`] reads what the kernel exports: the CPU topology
//! ([`cpus`]), the cpuidle driver, governor and states and the kernel's HZ
//! and preemption model ([`kernel`]). What sysfs cannot say (how long a
//! wakeup really takes after an idle period, what a context switch costs,
//! how often something steals the CPU) is measured by the runner's probes
//! and handed in as [`Measured`]. [`render`] writes both as a topology TOML
//! in which every value says where it came from: `[sysfs PATH]`,
//! `[measured: probe ...]` or `[assumed: why]`.
//!
//! The root directory is a parameter so tests read a fake tree; for this
//! machine it is `/`. Nothing here writes to sysfs or mounts anything.

mod cpufreq;
mod cpus;
mod emit;
mod emit_costs;
mod kernel;
mod measured;
mod rounds;

use std::io;
use std::path::{Path, PathBuf};

pub use cpufreq::HostPolicy;
pub use cpus::HostCpu;
pub use emit::{read_on, render, RenderOptions};
pub use kernel::{Haltpoll, HostIdle, HostIdleState};
pub use measured::{
    exit_curve, futex_wait_from_probes, ipi_from_probes, schedule_entry_from_probes, split_noise, switch_net_of_futex,
    timer_exit_curve, CurvePoint, Measured, NoiseFigures, NoiseProbe, Percentiles, TimerProbe, WakeProbe, WindowProbe,
};
pub use rounds::{median_percentiles, merge_rounds};

use crate::{Distance, InputError, PreemptModel, Topology};

/// A value read from the host and where it came from, as the comment the
/// generated file puts next to it (`[sysfs /sys/...]`, `[assumed: ...]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: String,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: impl Into<String>) -> Self {
        Sourced { value, source: source.into() }
    }
}

/// A file under the host root that is missing, unreadable or says
/// something this module cannot use. The message always names the file.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}: {why}", path.display())]
    Bad { path: PathBuf, why: String },
    /// The rendered text does not load: a bug, said with the text.
    #[error("the generated topology does not load: {error}\n--- generated text ---\n{text}")]
    Generated { error: Box<InputError>, text: String },
}

/// Everything [`read_host`] found.
#[derive(Clone, Debug)]
pub struct HostMachine {
    /// The host root the paths below are relative to (`/` for this machine).
    pub root: PathBuf,
    /// Online CPUs in sysfs order; the model numbers them `0..len` (a CPU's
    /// index here is its model id, [`HostCpu::sysfs_id`] its kernel number).
    pub cpus: Vec<HostCpu>,
    /// Possible CPUs that are not online (left out of the model).
    pub offline: Vec<usize>,
    /// Where the capacities came from, when any CPU has one.
    pub capacity_source: Option<String>,
    /// Where the ITMT priorities came from, when any CPU has one.
    pub prio_source: Option<String>,
    /// Where the Intel hybrid core types came from, on such a part.
    pub core_type_source: Option<String>,
    pub itmt: Sourced<bool>,
    pub hz: Sourced<u32>,
    pub preempt: Sourced<PreemptModel>,
    pub idle: HostIdle,
    /// The cpufreq policies (`[[perf_domain]]`s where they have a table).
    pub policies: Vec<HostPolicy>,
    /// `uname -r` (/proc/sys/kernel/osrelease).
    pub kernel: String,
    /// `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// The `hypervisor` CPU flag: this is a guest.
    pub guest: bool,
    /// What the reader assumed or could not read, for the file's header.
    pub notes: Vec<String>,
}

/// Read the machine under `root` (`/` for this one).
pub fn read_host(root: &Path) -> Result<HostMachine, HostError> {
    let fs = Fs { root: root.to_path_buf() };
    let mut notes = Vec::new();
    let topo = cpus::read(&fs, &mut notes)?;
    let (cpu_model, guest) = kernel::cpuinfo(&fs);
    let kernel_release = fs.read_opt("proc/sys/kernel/osrelease")?.map(|s| s.trim().to_string()).unwrap_or_default();
    let config = kernel::KernelConfig::read(&fs, &kernel_release, &mut notes)?;
    let cmdline = fs.read_opt("proc/cmdline")?.unwrap_or_default();
    let hz = kernel::hz(&config, &mut notes);
    let preempt = kernel::preempt(&fs, &config, &cmdline, &mut notes)?;
    let itmt = kernel::itmt(&fs)?;
    let first = topo.cpus.first().map(|c| c.sysfs_id).unwrap_or(0);
    let others: Vec<usize> = topo.cpus.iter().skip(1).map(|c| c.sysfs_id).collect();
    let idle = kernel::idle(&fs, first, &others, &cmdline, &cpu_flags(&fs), &mut notes)?;
    let policies = cpufreq::read(&fs)?;
    Ok(HostMachine {
        root: root.to_path_buf(),
        cpus: topo.cpus,
        offline: topo.offline,
        capacity_source: topo.capacity_source,
        prio_source: topo.prio_source,
        core_type_source: topo.core_type_source,
        itmt,
        hz,
        preempt,
        idle,
        policies,
        kernel: kernel_release,
        cpu_model,
        guest,
        notes,
    })
}

fn cpu_flags(fs: &Fs) -> Vec<String> {
    let text = fs.read_opt("proc/cpuinfo").ok().flatten().unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("flags").and_then(|r| r.split_once(':')).map(|(_, v)| v))
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

impl HostMachine {
    /// Model CPU ids are dense: true when they differ from the kernel's
    /// (offline CPUs, holes in the numbering).
    pub fn renumbered(&self) -> bool {
        !self.offline.is_empty() || self.cpus.iter().enumerate().any(|(i, c)| c.sysfs_id != i)
    }

    /// How far apart two CPUs (model ids) are.
    pub fn level(&self, a: usize, b: usize) -> Distance {
        let (x, y) = (&self.cpus[a], &self.cpus[b]);
        if x.core == y.core {
            Distance::Smt
        } else if x.llc == y.llc {
            Distance::Llc
        } else if x.package == y.package {
            Distance::Package
        } else {
            Distance::Numa
        }
    }

    /// One pair of CPUs (kernel numbers: waker, wakee) for each distance
    /// level present, nearest level first. The wakee is the first online
    /// CPU wherever it has a partner at that level, so the probes keep to few CPUs.
    pub fn probe_pairs(&self) -> Vec<(Distance, usize, usize)> {
        let mut out: Vec<(Distance, usize, usize)> = Vec::new();
        for a in 0..self.cpus.len() {
            for b in 0..self.cpus.len() {
                if a == b {
                    continue;
                }
                let l = self.level(a, b);
                if !out.iter().any(|(k, _, _)| *k == l) {
                    out.push((l, self.cpus[b].sysfs_id, self.cpus[a].sysfs_id));
                }
            }
        }
        out.sort_by_key(|(l, _, _)| *l);
        out
    }

    /// Kernel CPU numbers of the online CPUs.
    pub fn sysfs_ids(&self) -> Vec<usize> {
        self.cpus.iter().map(|c| c.sysfs_id).collect()
    }
}

/// Render the host, then check that the text loads as a topology: a
/// machine the loader rejects is an error carrying the text, never a file.
pub fn host_toml(host: &HostMachine, measured: Option<&Measured>, opts: &RenderOptions) -> Result<String, HostError> {
    let text = render(host, measured, opts);
    match Topology::from_toml_str("<generated host topology>", &text) {
        Ok(_) => Ok(text),
        Err(e) => Err(HostError::Generated { error: Box::new(e), text }),
    }
}

/// `model name` of `root`'s /proc/cpuinfo (empty when unreadable), as
/// [`read_host`] reads it.
pub fn cpu_model(root: &Path) -> String {
    kernel::cpuinfo(&Fs { root: root.to_path_buf() }).0
}

/// Reads files relative to the host root, with errors that name them.
pub(crate) struct Fs {
    pub root: PathBuf,
}

impl Fs {
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The path as the generated file cites it: absolute on the host.
    pub fn cite(&self, rel: &str) -> String {
        format!("/{rel}")
    }

    /// A file that must exist.
    pub fn read(&self, rel: &str) -> Result<String, HostError> {
        let path = self.path(rel);
        std::fs::read_to_string(&path).map_err(|source| HostError::Read { path, source })
    }

    /// A file that may be missing (`None`); other errors still fail.
    pub fn read_opt(&self, rel: &str) -> Result<Option<String>, HostError> {
        let path = self.path(rel);
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound) => Ok(None),
            // ENODEV (19), ENOTDIR (20) or EINVAL (22): a sysfs attribute the
            // driver does not implement, or a file along the path: absent too.
            Err(e) if matches!(e.raw_os_error(), Some(19 | 20 | 22)) => Ok(None),
            Err(source) => Err(HostError::Read { path, source }),
        }
    }

    /// A source with a fallback after it: missing is `None` as with
    /// [`Fs::read_opt`], and so is unreadable (EPERM under lockdown, as
    /// debugfs is on some kernels; EACCES), with a note saying which file
    /// was skipped and why, so the next source is used instead of failing.
    pub fn read_or_skip(&self, rel: &str, notes: &mut Vec<String>) -> Result<Option<String>, HostError> {
        match self.read_opt(rel) {
            Err(HostError::Read { source, .. }) if unreadable(&source) => {
                notes.push(format!("{}: not readable ({source}); using the next source", self.cite(rel)));
                Ok(None)
            }
            other => other,
        }
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    pub fn bad(&self, rel: &str, why: impl Into<String>) -> HostError {
        HostError::Bad { path: self.path(rel), why: why.into() }
    }

    /// A required integer file.
    pub fn int(&self, rel: &str) -> Result<i64, HostError> {
        let text = self.read(rel)?;
        text.trim().parse().map_err(|_| self.bad(rel, format!("expected an integer, found `{}`", text.trim())))
    }

    /// An optional integer file.
    pub fn int_opt(&self, rel: &str) -> Result<Option<i64>, HostError> {
        match self.read_opt(rel)? {
            None => Ok(None),
            Some(text) => text
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.bad(rel, format!("expected an integer, found `{}`", text.trim()))),
        }
    }

    /// Names of the entries of a directory that start with `prefix` and end
    /// in a number, as (number, name), sorted by number. A missing
    /// directory is empty.
    pub fn numbered(&self, rel: &str, prefix: &str) -> Result<Vec<(usize, String)>, HostError> {
        let path = self.path(rel);
        let dir = match std::fs::read_dir(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(HostError::Read { path, source }),
        };
        let mut out = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|source| HostError::Read { path: path.clone(), source })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(n) = name.strip_prefix(prefix).and_then(|r| r.parse::<usize>().ok()) {
                out.push((n, name));
            }
        }
        out.sort();
        Ok(out)
    }
}

/// A read refused rather than failed: EPERM (lockdown refuses debugfs
/// reads even to root) or EACCES.
fn unreadable(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::PermissionDenied) || e.raw_os_error() == Some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_read_is_skipped_and_a_failed_one_is_not() {
        assert!(unreadable(&io::Error::from_raw_os_error(1)), "EPERM");
        assert!(unreadable(&io::Error::from_raw_os_error(13)), "EACCES");
        assert!(!unreadable(&io::Error::from_raw_os_error(5)), "EIO is a failure, not a refusal");
        assert!(!unreadable(&io::Error::from_raw_os_error(2)));
    }
}
