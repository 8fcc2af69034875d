//! Running the `schedlab` binary from the end-to-end tests, at the
//! repository root so the bundled scenarios resolve.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether the tests run as root (the real-kernel tests skip otherwise).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// Whether tracefs is mounted where the runner looks for it.
pub fn tracefs_mounted() -> bool {
    Path::new("/sys/kernel/tracing/trace").exists()
}

/// The tracefs files a real run writes, each with its content (empty when
/// unreadable): what the real-run tests compare before and after a run.
pub fn tracefs_state() -> std::collections::BTreeMap<String, String> {
    let root = Path::new("/sys/kernel/tracing");
    let mut files: Vec<String> = [
        "tracing_on",
        "trace_clock",
        "buffer_size_kb",
        "set_event",
        "current_tracer",
        "options/markers",
        "options/record-tgid",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for e in std::fs::read_dir(root.join("events/sched")).unwrap().flatten() {
        if e.path().is_dir() {
            files.push(format!("events/sched/{}/enable", e.file_name().to_string_lossy()));
        }
    }
    files
        .into_iter()
        .map(|f| {
            let v = std::fs::read_to_string(root.join(&f)).unwrap_or_default();
            (f, v)
        })
        .collect()
}

pub fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).output().unwrap()
}

/// A run that must succeed.
#[track_caller]
pub fn ok_output(args: &[&str]) -> Output {
    let out = schedlab(args);
    assert!(out.status.success(), "schedlab {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// stdout of a run that must succeed.
#[track_caller]
pub fn ok(args: &[&str]) -> String {
    String::from_utf8(ok_output(args).stdout).unwrap()
}

/// stderr of a run that must fail, and fail with an error rather than a panic.
#[track_caller]
pub fn err(args: &[&str]) -> String {
    let out = schedlab(args);
    assert!(!out.status.success(), "schedlab {args:?} should fail");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A fresh, empty directory `schedlab-{prefix}-XXXXXX` under the temp dir,
/// removed with what is in it when the returned guard drops, also when the
/// test fails: keep the guard alive for as long as the test uses the
/// directory (`let dir = tmp_dir(..)`, never `let _ = ..`).
pub fn tmp_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("schedlab-{prefix}-")).tempdir().unwrap()
}

/// The pid of `supervisor`'s restorer, the child a real run forks before it
/// changes anything (comm `schedlab-restore`, cut by the kernel to 15 bytes).
pub fn restorer_of(supervisor: i32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|p| {
        let pid: i32 = p.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(p.path().join("stat")).ok()?;
        let close = stat.rfind(')')?;
        let ppid: i32 = stat[close + 2..].split(' ').nth(1)?.parse().ok()?;
        (ppid == supervisor && stat.contains("(schedlab-restor)")).then_some(pid)
    })
}
