//! The tracefs controller: find (or mount) tracefs, save the settings a run
//! changes, set them, read the `trace` file, put everything back.
//!
//! Every file the runner writes is first saved into a [`SavedState`], which
//! the supervisor also writes to disk ([`crate::state`]) before touching
//! anything, so the settings come back on every exit path: normal end, error,
//! Ctrl-C (the supervisor catches it), a SIGKILLed worker (the supervisor
//! restores) and a SIGKILLed supervisor (its restorer process restores;
//! failing that, the next run restores first).

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::RunnerError;

/// The tracepoints a real run enables (`events/sched/<name>/enable`): one
/// list with the model's notion of a captured event.
pub const SCHED_EVENTS: [&str; 6] = schedlab_trace::CAPTURED_TRACEPOINTS;

/// Optional: one event per `update_curr()`, i.e. per tick and switch.
pub const STAT_RUNTIME: &str = "sched_stat_runtime";

/// The standard mount point; `/sys/kernel/debug/tracing` is tried second.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Every root [`Tracefs::open`] may use, and so the only ones [`restore`]
/// writes under.
pub const TRACEFS_ROOTS: [&str; 2] = [TRACEFS, "/sys/kernel/debug/tracing"];

/// `/proc/sys/kernel/sched_rt_runtime_us`, saved and restored like a tracefs file
/// when a run is allowed to change RT throttling.
pub const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// `kernel.sched_autogroup_enabled`, saved and restored the same way when a
/// scenario sets `autogroup` (absent without `CONFIG_SCHED_AUTOGROUP`).
pub const AUTOGROUP: &str = "/proc/sys/kernel/sched_autogroup_enabled";

/// An error with the file it concerns.
fn ctx(path: &Path, what: &str, e: io::Error) -> RunnerError {
    RunnerError::File { path: path.to_path_buf(), action: what.to_string(), source: e }
}

/// A mounted tracefs.
#[derive(Clone, Debug)]
pub struct Tracefs {
    pub root: PathBuf,
    /// Whether this process mounted it (it is unmounted again on restore).
    pub mounted_by_us: bool,
}

impl Tracefs {
    /// Find tracefs; mount it at [`TRACEFS`] when it is not mounted anywhere
    /// (root only), noting that it did.
    pub fn open() -> Result<Tracefs, RunnerError> {
        for root in TRACEFS_ROOTS {
            if Path::new(root).join("trace").exists() {
                return Ok(Tracefs { root: root.into(), mounted_by_us: false });
            }
        }
        let target = std::ffi::CString::new(TRACEFS).expect("no NUL");
        let fstype = std::ffi::CString::new("tracefs").expect("no NUL");
        // SAFETY: all pointers are valid NUL-terminated strings; data may be null.
        let r = unsafe {
            libc::mount(fstype.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null::<libc::c_void>())
        };
        if r != 0 {
            return Err(RunnerError::Mount { source: io::Error::last_os_error() });
        }
        Ok(Tracefs { root: TRACEFS.into(), mounted_by_us: true })
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn read(&self, rel: &str) -> Result<String, RunnerError> {
        let p = self.path(rel);
        std::fs::read_to_string(&p).map_err(|e| ctx(&p, "read", e))
    }

    /// Write `value` the way `echo value > file` does (truncating open, one write).
    pub fn write(&self, rel: &str, value: &str) -> Result<(), RunnerError> {
        write_file(&self.path(rel), value)
    }

    /// The clock in use: the bracketed name of `trace_clock`.
    pub fn current_clock(&self) -> Result<String, RunnerError> {
        let s = self.read("trace_clock")?;
        selected_clock(&s)
            .ok_or_else(|| RunnerError::NoSelectedClock { path: self.path("trace_clock"), text: s.trim().to_string() })
    }

    /// Empty the ring buffer (`echo > trace`).
    pub fn clear(&self) -> Result<(), RunnerError> {
        let p = self.path("trace");
        OpenOptions::new().write(true).truncate(true).open(&p).map(drop).map_err(|e| ctx(&p, "clear", e))
    }

    /// The whole `trace` file (tracing should be off while it is read).
    pub fn read_trace(&self) -> Result<String, RunnerError> {
        let p = self.path("trace");
        let mut f = std::fs::File::open(&p).map_err(|e| ctx(&p, "open", e))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).map_err(|e| ctx(&p, "read", e))?;
        // Valid UTF-8 (the usual case) becomes the String without a copy:
        // a second copy of a capture would double its peak.
        Ok(String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// Events overwritten or dropped in the ring buffers during the capture
    /// (`overrun` + `dropped events` of `per_cpu/cpuN/stats`).
    pub fn lost_events(&self) -> u64 {
        let Ok(dir) = std::fs::read_dir(self.path("per_cpu")) else { return 0 };
        let mut lost = 0;
        for entry in dir.flatten() {
            let Ok(s) = std::fs::read_to_string(entry.path().join("stats")) else { continue };
            for line in s.lines() {
                if let Some(v) = line.strip_prefix("overrun:").or_else(|| line.strip_prefix("dropped events:")) {
                    lost += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        lost
    }
}

/// Write `value` to `p` the way `echo value > p` does (truncating open, one
/// `write_all`); errors name the file and hint at root when access is denied.
pub fn write_file(p: &Path, value: &str) -> Result<(), RunnerError> {
    let mut f = OpenOptions::new().write(true).truncate(true).open(p).map_err(|e| ctx(p, "open for writing", e))?;
    f.write_all(value.as_bytes()).map_err(|e| ctx(p, &format!("write `{}` to it", value.trim()), e))
}

/// `[local] global counter ... mono` → `local`.
pub fn selected_clock(s: &str) -> Option<String> {
    let open = s.find('[')?;
    let close = s[open..].find(']')? + open;
    Some(s[open + 1..close].to_string())
}

/// `buffer_size_kb` as a value to write back: `7 (expanded: 1408)` (a
/// buffer never used yet) becomes `1408`, the size the kernel would expand
/// it to; the unexpanded state itself cannot be restored once any event
/// has been enabled.
pub fn effective_buffer_kb(s: &str) -> String {
    let s = s.trim();
    match s.split_once("(expanded:") {
        Some((_, rest)) => rest.trim_end_matches(')').trim().to_string(),
        None => s.to_string(),
    }
}

/// One saved setting: a path (relative to the tracefs root, or absolute for
/// files outside it) and the value to write back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub file: String,
    pub value: String,
}

/// Everything a run changes, as it was before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedState {
    pub tracefs: String,
    pub mounted_by_us: bool,
    /// The supervisor that saved it.
    pub pid: i32,
    /// Restored in order; `tracing_on` comes last.
    pub files: Vec<Saved>,
    /// cgroup directories the run creates, parents first (removed in
    /// reverse; see [`crate::cgroup::remove_dirs`]).
    #[serde(default)]
    pub cgroups: Vec<String>,
}

/// What to set up for a capture.
#[derive(Clone, Debug)]
pub struct CaptureSettings {
    /// Per-CPU ring buffer size.
    pub buffer_kb: u64,
    pub stat_runtime: bool,
    /// Write this to `sched_rt_runtime_us` (saved and restored).
    pub rt_runtime_us: Option<i64>,
    /// Write this to `sched_autogroup_enabled` (saved and restored).
    pub autogroup: Option<bool>,
}

impl Tracefs {
    fn event_files(&self, s: &CaptureSettings) -> Vec<String> {
        let mut names: Vec<&str> = SCHED_EVENTS.to_vec();
        if s.stat_runtime {
            names.push(STAT_RUNTIME);
        }
        names.into_iter().map(|n| format!("events/sched/{n}/enable")).filter(|f| self.path(f).exists()).collect()
    }

    /// Read the current value of every file `configure` will write.
    pub fn save(&self, s: &CaptureSettings) -> Result<SavedState, RunnerError> {
        let mut files = Vec::new();
        let mut keep = |file: String, value: String| files.push(Saved { file, value });
        for f in self.event_files(s) {
            // `1*`/`0*`: soft (trigger) mode; the digit is what can be written back.
            let v = self.read(&f)?;
            keep(f, v.trim().trim_end_matches('*').to_string());
        }
        keep("options/markers".into(), self.read("options/markers")?.trim().to_string());
        keep("trace_clock".into(), self.current_clock()?);
        keep("buffer_size_kb".into(), effective_buffer_kb(&self.read("buffer_size_kb")?));
        if s.rt_runtime_us.is_some() {
            let v = std::fs::read_to_string(RT_RUNTIME).map_err(|e| ctx(Path::new(RT_RUNTIME), "read", e))?;
            keep(RT_RUNTIME.into(), v.trim().to_string());
        }
        if s.autogroup.is_some() {
            let v = std::fs::read_to_string(AUTOGROUP).map_err(|e| ctx(Path::new(AUTOGROUP), "read", e))?;
            keep(AUTOGROUP.into(), v.trim().to_string());
        }
        keep("tracing_on".into(), self.read("tracing_on")?.trim().to_string());
        Ok(SavedState {
            tracefs: self.root.display().to_string(),
            mounted_by_us: self.mounted_by_us,
            pid: std::process::id() as i32,
            cgroups: Vec::new(),
            files,
        })
    }

    /// Set up the capture: tracing off, mono clock, buffer size, events on,
    /// buffer emptied, tracing on. `save` must have run first.
    pub fn configure(&self, s: &CaptureSettings) -> Result<(), RunnerError> {
        self.write("tracing_on", "0")?;
        self.write("trace_clock", "mono")?;
        self.write("buffer_size_kb", &s.buffer_kb.to_string())?;
        self.write("options/markers", "1")?;
        for f in self.event_files(s) {
            self.write(&f, "1")?;
        }
        if let Some(v) = s.rt_runtime_us {
            write_file(Path::new(RT_RUNTIME), &v.to_string())?;
        }
        if let Some(on) = s.autogroup {
            write_file(Path::new(AUTOGROUP), if on { "1" } else { "0" })?;
        }
        self.clear()?;
        self.write("tracing_on", "1")
    }
}

/// Put back every saved value (all of them, even after a failure, reporting
/// the first error), then unmount tracefs if the run mounted it.
///
/// The state may come from a file in a shared directory, so nothing is
/// written unless its root is one of [`TRACEFS_ROOTS`] and every file is a
/// plain relative path under it or exactly [`RT_RUNTIME`] or [`AUTOGROUP`].
pub fn restore(state: &SavedState) -> Result<(), RunnerError> {
    restore_within(state, &TRACEFS_ROOTS)
}

/// [`restore`] with the tracefs roots it accepts given.
pub(crate) fn restore_within(state: &SavedState, roots: &[&str]) -> Result<(), RunnerError> {
    let paths = checked_paths(state, roots)?;
    let mut first_err = None;
    for (p, s) in paths.iter().zip(&state.files) {
        if let Err(e) = write_file(p, &s.value) {
            first_err.get_or_insert(e);
        }
    }
    if let Err(e) = crate::cgroup::remove_dirs(&state.cgroups) {
        first_err.get_or_insert(e);
    }
    if state.mounted_by_us {
        let target = std::ffi::CString::new(state.tracefs.as_str())?;
        // SAFETY: valid NUL-terminated path.
        if unsafe { libc::umount(target.as_ptr()) } != 0 {
            first_err.get_or_insert(RunnerError::Umount {
                target: state.tracefs.clone(),
                source: io::Error::last_os_error(),
            });
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// The file each saved value goes back to, or why the state is refused as a whole.
fn checked_paths(state: &SavedState, roots: &[&str]) -> Result<Vec<PathBuf>, RunnerError> {
    if !roots.contains(&state.tracefs.as_str()) {
        return Err(RunnerError::RefusedRoot { root: state.tracefs.clone(), roots: roots.join(", ") });
    }
    if let Some(bad) = state.cgroups.iter().find(|d| !crate::cgroup::removable(Path::new(d))) {
        return Err(RunnerError::RefusedCgroup { dir: bad.clone() });
    }
    let root = Path::new(&state.tracefs);
    state
        .files
        .iter()
        .map(|s| {
            let rel = Path::new(&s.file);
            if s.file == RT_RUNTIME || s.file == AUTOGROUP {
                Ok(PathBuf::from(&s.file))
            } else if !s.file.is_empty() && rel.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
                Ok(root.join(rel))
            } else {
                Err(RunnerError::RefusedFile { file: s.file.clone(), root: state.tracefs.clone() })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_buffer_values_are_read_as_writable_values() {
        assert_eq!(selected_clock("[local] global counter uptime perf mono\n").as_deref(), Some("local"));
        assert_eq!(selected_clock("local global [mono] boot\n").as_deref(), Some("mono"));
        assert_eq!(selected_clock("local"), None);
        assert_eq!(effective_buffer_kb("7 (expanded: 1408)\n"), "1408");
        assert_eq!(effective_buffer_kb("16384\n"), "16384");
    }

    #[test]
    fn restore_writes_every_file_in_order_even_after_a_failure() {
        // Removed when `tmp` drops, also when the test fails.
        let tmp = tempfile::Builder::new().prefix("schedlab-restore-test-").tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("options")).unwrap();
        std::fs::write(dir.join("trace_clock"), "mono").unwrap();
        std::fs::write(dir.join("tracing_on"), "1").unwrap();
        let state = SavedState {
            tracefs: dir.display().to_string(),
            mounted_by_us: false,
            pid: 1,
            cgroups: Vec::new(),
            files: vec![
                Saved { file: "trace_clock".into(), value: "local".into() },
                Saved { file: "no/such/dir/file".into(), value: "1".into() },
                Saved { file: "tracing_on".into(), value: "0".into() },
            ],
        };
        let err = restore_within(&state, &[&state.tracefs]).unwrap_err().to_string();
        assert!(err.contains("no/such/dir/file"), "{err}");
        assert_eq!(std::fs::read_to_string(dir.join("trace_clock")).unwrap(), "local");
        assert_eq!(std::fs::read_to_string(dir.join("tracing_on")).unwrap(), "0");
        tmp.close().unwrap();
    }

    #[test]
    fn restore_refuses_paths_outside_tracefs_and_rt_runtime() {
        // Removed when `tmp` drops, also when the test fails.
        let tmp = tempfile::Builder::new().prefix("schedlab-restore-refuse-").tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("tracefs")).unwrap();
        let root = dir.join("tracefs").display().to_string();
        let victim = dir.join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        std::fs::write(dir.join("tracefs/tracing_on"), "1").unwrap();
        let state = |root: &str, file: &str| SavedState {
            tracefs: root.to_string(),
            mounted_by_us: false,
            pid: 1,
            cgroups: Vec::new(),
            files: vec![
                Saved { file: "tracing_on".into(), value: "0".into() },
                Saved { file: file.to_string(), value: "planted".into() },
            ],
        };
        let outside = format!("{}/victim", dir.display());
        for bad in [outside.as_str(), "../victim", "events/../../victim", ""] {
            let err = restore_within(&state(&root, bad), &[&root]).unwrap_err().to_string();
            assert!(err.contains("refusing to restore") && err.contains(RT_RUNTIME), "{bad}: {err}");
        }
        // A root that is not tracefs is refused, whatever the files: here the victim's directory.
        let parent = dir.display().to_string();
        let err = restore(&state(&parent, "victim")).unwrap_err().to_string();
        assert!(err.contains("not a tracefs root") && err.contains(TRACEFS), "{err}");
        // Nothing was written, not even the good file before the bad one.
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(std::fs::read_to_string(dir.join("tracefs/tracing_on")).unwrap(), "1");
        // RT_RUNTIME and AUTOGROUP are the only absolute paths accepted.
        assert_eq!(checked_paths(&state(&root, RT_RUNTIME), &[&root]).unwrap()[1], Path::new(RT_RUNTIME));
        assert_eq!(checked_paths(&state(&root, AUTOGROUP), &[&root]).unwrap()[1], Path::new(AUTOGROUP));
        assert!(checked_paths(&state(&root, "/proc/sys/kernel/sched_autogroup_enabled2"), &[&root]).is_err());
        tmp.close().unwrap();
    }
}
