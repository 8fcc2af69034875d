//! rt-app's tutorial examples (Debian's package, unpacked into target/rt-app
//! by scripts/install-rtapp-deps.sh) run on this machine's kernel with
//! `schedlab real`, as they run in the model (crates/sim/tests/rtapp_examples.rs).
//! Needs root (tracefs); skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// The report's per-thread rows: name → run ms.
fn run_ms(report: &str) -> Vec<(String, f64)> {
    report
        .lines()
        .skip_while(|l| !(l.starts_with("thread ") && l.contains("run ms")))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next()?.to_string();
            let ms = f.nth(1)?.parse().ok()?;
            Some((name, ms))
        })
        .collect()
}

#[test]
fn rt_app_tutorial_examples_run_on_the_host_kernel() {
    if !is_root() {
        println!("skipped: `schedlab real` needs root (tracefs, SCHED_FIFO)");
        return;
    }
    let dir = root().join("target/rt-app/usr/share/doc/rt-app/examples/tutorial");
    if !dir.is_dir() {
        println!("skipped: Debian's rt-app examples are not in target/rt-app (run scripts/install-rtapp-deps.sh)");
        return;
    }
    let state = std::env::temp_dir().join(format!("schedlab-rtapp-test-{}", std::process::id()));
    // Example 6 asks for memory and I/O load, which the model refuses
    // (crates/sim/tests/rtapp_examples.rs checks the refusal).
    for (n, tasks) in [
        (1, &["thread0"][..]),
        (2, &["thread0"]),
        (3, &["thread0-0", "thread0-11"]),
        (4, &["thread0", "thread1"]),
        (5, &["thread0", "thread1"]),
        (7, &["task0", "task1"]),
        (8, &["thread0"]),
    ] {
        let file = dir.join(format!("example{n}.json"));
        // --remap: example 8 moves its thread over CPUs 0-2 of a 4-CPU machine.
        let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(["real", "--remap", "--duration", "1s", file.to_str().unwrap()])
            .env("SCHEDLAB_STATE_DIR", &state)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "example{n}: {stderr}\n{report}");
        assert!(!report.contains(" failed: "), "example{n}: a thread failed:\n{report}");
        let rows = run_ms(&report);
        for t in tasks {
            let ms = rows.iter().find(|(name, _)| name == t).map(|(_, ms)| *ms);
            assert!(ms.is_some_and(|ms| ms > 0.0), "example{n}: thread {t} did not run:\n{report}");
        }
    }
    std::fs::remove_dir_all(&state).ok();
}
