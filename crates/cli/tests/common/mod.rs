//! Running the `schedlab` binary from the end-to-end tests, at the
//! repository root so the bundled scenarios resolve.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).output().unwrap()
}

/// stdout of a run that must succeed.
#[track_caller]
pub fn ok(args: &[&str]) -> String {
    let out = schedlab(args);
    assert!(out.status.success(), "schedlab {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
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
