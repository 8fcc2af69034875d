//! The on-disk copy of the tracefs settings a run changed, and the lock that
//! keeps two real runs from sharing the machine-global ring buffer.
//!
//! The directory is `$SCHEDLAB_STATE_DIR`, else `/run/schedlab` (a tmpfs:
//! a reboot forgets the state along with the settings), else
//! `/tmp/schedlab`. `tracefs-saved.json` exists exactly while a run's
//! settings are in force. When a supervisor dies without restoring (it was
//! SIGKILLed), its restorer ([`crate::restorer`]) restores from it within a
//! second and appends what it did to `restorer.log`; if a run still finds
//! one and holds the lock (the restorer was killed too), it restores it
//! first — the same [`RunLock::restore_leftover`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::tracefs::{restore_within, SavedState, TRACEFS_ROOTS};
use crate::RunnerError;

pub const STATE_FILE: &str = "tracefs-saved.json";
const LOCK_FILE: &str = "lock";

/// Where the saved state and the lock live.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SCHEDLAB_STATE_DIR") {
        return PathBuf::from(d);
    }
    if Path::new("/run").is_dir() && std::fs::create_dir_all("/run/schedlab").is_ok() {
        return PathBuf::from("/run/schedlab");
    }
    std::env::temp_dir().join("schedlab")
}

fn state_file(path: &Path, action: &str, e: std::io::Error) -> RunnerError {
    RunnerError::StateFile { path: path.to_path_buf(), action: action.to_string(), source: e }
}

/// The run lock (`flock` on `<dir>/lock`), held for the supervisor's life.
pub struct RunLock {
    file: File,
    pub dir: PathBuf,
}

impl RunLock {
    /// Take the lock or say who has it.
    pub fn acquire(dir: &Path) -> Result<RunLock, RunnerError> {
        std::fs::create_dir_all(dir).map_err(|e| state_file(dir, "create", e))?;
        let p = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            // Root writes here, and the fallback dir is under /tmp: never through a planted symlink.
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
            .map_err(|e| state_file(&p, "open", e))?;
        // SAFETY: plain syscall on an fd we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = std::fs::read_to_string(&p).unwrap_or_default();
            return Err(RunnerError::Locked { holder: holder.trim().to_string(), lock: p });
        }
        file.set_len(0).ok();
        let _ = write!(file, "{}", std::process::id());
        Ok(RunLock { file, dir: dir.to_path_buf() })
    }

    pub fn raw_fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    fn state_path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// Write the saved settings durably (temp file, fsync, rename) before any
    /// of them is changed.
    pub fn write_state(&self, s: &SavedState) -> Result<(), RunnerError> {
        let p = self.state_path();
        let tmp = self.dir.join(format!("{STATE_FILE}.tmp"));
        let text = serde_json::to_string_pretty(s).map_err(RunnerError::StateEncode)?;
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(|e| state_file(&tmp, "create", e))?;
        f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| state_file(&tmp, "write", e))?;
        std::fs::rename(&tmp, &p).map_err(|e| state_file(&tmp, &format!("rename to {}", p.display()), e))
    }

    /// The settings have been put back: forget them.
    pub fn clear_state(&self) {
        let _ = std::fs::remove_file(self.state_path());
    }

    /// If a previous run left its saved settings, restore them and say what
    /// was done (`None`: nothing was left).
    pub fn restore_leftover(&self) -> Result<Option<String>, RunnerError> {
        self.restore_leftover_within(&TRACEFS_ROOTS)
    }

    /// [`RunLock::restore_leftover`] with the tracefs roots it accepts given.
    pub(crate) fn restore_leftover_within(&self, roots: &[&str]) -> Result<Option<String>, RunnerError> {
        let p = self.state_path();
        let text = match std::fs::read_to_string(&p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_file(&p, "read", e)),
        };
        let state: SavedState =
            serde_json::from_str(&text).map_err(|e| RunnerError::BadSavedState { path: p.clone(), source: e })?;
        restore_within(&state, roots)
            .map_err(|e| RunnerError::RestoreLeftover { path: p.clone(), source: Box::new(e) })?;
        self.clear_state();
        let mut files: Vec<String> = state.files.iter().map(|s| format!("{}={}", s.file, s.value)).collect();
        if !state.cgroups.is_empty() {
            files.push(format!("and removed its cgroups {}", state.cgroups.join(" ")));
        }
        Ok(Some(format!(
            "restored the tracefs settings that an interrupted run (pid {}) left in {}: {}",
            state.pid,
            p.display(),
            files.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::Saved;

    #[test]
    fn a_leftover_state_is_restored_once_and_a_second_lock_is_refused() {
        // Removed when `tmp` drops, also when the test fails.
        let tmp = tempfile::Builder::new().prefix("schedlab-state-test-").tempdir().unwrap();
        let dir = tmp.path();
        let fake_tracefs = dir.join("tracefs");
        std::fs::create_dir_all(&fake_tracefs).unwrap();
        std::fs::write(fake_tracefs.join("tracing_on"), "1").unwrap();
        let lock = RunLock::acquire(dir).unwrap();
        let state = SavedState {
            tracefs: fake_tracefs.display().to_string(),
            mounted_by_us: false,
            pid: 42,
            cgroups: Vec::new(),
            files: vec![Saved { file: "tracing_on".into(), value: "0".into() }],
        };
        lock.write_state(&state).unwrap();
        let roots = [state.tracefs.as_str()];
        // The real roots only: a state naming another directory is refused and kept.
        let err = lock.restore_leftover().unwrap_err().to_string();
        assert!(err.contains("not a tracefs root"), "{err}");
        assert_eq!(std::fs::read_to_string(fake_tracefs.join("tracing_on")).unwrap(), "1");
        let msg = lock.restore_leftover_within(&roots).unwrap().unwrap();
        assert!(msg.contains("pid 42") && msg.contains("tracing_on=0"), "{msg}");
        assert_eq!(std::fs::read_to_string(fake_tracefs.join("tracing_on")).unwrap(), "0");
        assert_eq!(lock.restore_leftover_within(&roots).unwrap(), None);

        std::fs::write(dir.join(STATE_FILE), "{ not json").unwrap();
        let err = lock.restore_leftover().unwrap_err().to_string();
        assert!(err.contains(STATE_FILE) && err.contains(":1:"), "{err}");
        let busy = RunLock::acquire(dir).err().unwrap().to_string();
        assert!(busy.contains(&format!("pid {}", std::process::id())), "{busy}");
        drop(lock);
        tmp.close().unwrap();
    }

    #[test]
    fn a_planted_symlink_is_not_followed() {
        // Removed when `tmp` drops, also when the test fails.
        let tmp = tempfile::Builder::new().prefix("schedlab-state-symlink-").tempdir().unwrap();
        let dir = tmp.path();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(LOCK_FILE)).unwrap();
        let e = RunLock::acquire(dir).err().expect("a symlinked lock file is refused").to_string();
        assert!(e.contains("cannot open"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        tmp.close().unwrap();
    }
}
