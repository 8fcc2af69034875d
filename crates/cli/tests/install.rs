//! What installing the tool gives: man pages `man -l` renders, a bash
//! completion that completes commands and flags, `--version` naming the
//! commit and the build, and exit statuses that tell a failed check from an error.

mod common;
use common::{ok, root, schedlab, tmp_dir};

use std::process::{Command, Stdio};

#[test]
fn version_names_the_commit() {
    let v = ok(&["--version"]);
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(root()).output();
    // "+dirty" when the binary's sources differ from HEAD (the paths
    // build.rs watches): a clean clone (CI) builds without it.
    let dirty = Command::new("git")
        .args(["--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--"])
        .args(env!("SCHEDLAB_BUILT_FROM").split(' '))
        .current_dir(root())
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    let want = match head {
        Ok(o) if o.status.success() => {
            format!("{}{}", String::from_utf8_lossy(&o.stdout).trim(), if dirty { "+dirty" } else { "" })
        }
        _ => "unknown".to_string(),
    };
    // The build is the profile whose directory holds the binary.
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_schedlab"));
    let profile = exe.parent().and_then(|d| d.file_name()).expect("target/<profile>/schedlab").to_string_lossy();
    assert_eq!(v.trim(), format!("schedlab {} (commit {want}, {profile} build)", env!("CARGO_PKG_VERSION")));
}

#[test]
fn man_pages_render_with_man() {
    let dir = tmp_dir("man");
    let out = schedlab(&["man", "--out", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = dir.path().join("schedlab-sweep.1");
    assert!(dir.path().join("schedlab.1").is_file() && page.is_file());
    let Ok(man) =
        Command::new("man").arg("-l").arg(&page).env("MANWIDTH", "100").env("MAN_KEEP_FORMATTING", "0").output()
    else {
        eprintln!("skipped the rendering: no `man` here");
        return;
    };
    // Bold and underline come as overstrikes (`N\x08N`): keep the last of each.
    let mut text = String::new();
    for c in String::from_utf8_lossy(&man.stdout).chars() {
        if c == '\x08' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    // Hyphens at line ends are U+2010; words are rejoined across lines.
    let text = text.replace("\u{2010}\n", "").replace('\u{2010}', "-").split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(man.status.success(), "{}", String::from_utf8_lossy(&man.stderr));
    assert!(text.contains("NAME") && text.contains("schedlab-sweep"), "{text}");
    assert!(text.contains("--slurm") && text.contains("Run the sweep on a Slurm cluster"), "{text}");
}

/// What bash completes after `schedlab WORDS` (the cursor on the last word).
fn complete(words: &[&str]) -> Vec<String> {
    let script = ok(&["completions", "bash"]);
    let dir = tmp_dir("complete");
    let file = dir.path().join("schedlab.bash");
    std::fs::write(&file, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = format!(
        "source {}; COMP_WORDS=(schedlab {}); COMP_CWORD={}; COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
         _schedlab schedlab '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display(),
        quoted.join(" "),
        words.len(),
        words.last().unwrap(),
        if words.len() > 1 { words[words.len() - 2] } else { "schedlab" },
    );
    let out = Command::new("bash").args(["-c", &line]).output().unwrap();
    drop(dir);
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_commands_and_flags() {
    let commands = complete(&["sw"]);
    assert!(commands.contains(&"sweep".to_string()) && commands.contains(&"sweep-merge".to_string()), "{commands:?}");
    assert!(!commands.contains(&"run".to_string()), "{commands:?}");
    let flags = complete(&["sweep", "--sl"]);
    assert_eq!(flags, ["--slurm"], "{flags:?}");
    let flags = complete(&["run", "--one"]);
    assert_eq!(flags, ["--one-thread"]);
}

#[test]
fn a_failed_gate_exits_1_and_an_error_2() {
    // The seed-000 sweep's gate on stall_rate fails at these settings (its
    // report says which), an unreadable file is an error.
    let gate = schedlab(&["sweep", "scenarios/sweeps/itmt-delay-dequeue.toml", "--rounds", "2", "--duration", "300ms"]);
    let err = String::from_utf8_lossy(&gate.stderr);
    assert!(err.contains("A/B gate failed"), "{err}");
    assert_eq!(gate.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gate.stdout).contains("A/B       FAIL"));
    let error = schedlab(&["sweep", "no/such/file.toml"]);
    assert_eq!(error.status.code(), Some(2));
    let usage = schedlab(&["sweep", "--no-such-flag"]);
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn trace_dash_writes_the_trace_to_stdout_and_the_report_to_stderr() {
    let out = schedlab(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "100ms", "--trace", "-"]);
    assert!(out.status.success());
    let (trace, report) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(trace.starts_with("# tracer: nop\n") && trace.contains(": sched_switch: "), "{trace:.300}");
    assert!(!trace.contains("scenario  asym_min-2cpu"));
    assert!(report.contains("scenario  asym_min-2cpu") && report.contains("worker"), "{report}");
    let dir = tmp_dir("trace-dash");
    let file = dir.path().join("t.txt");
    ok(&["run", "scenarios/asym_min-2cpu.toml", "--duration", "100ms", "--trace", file.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), trace, "the same trace as to a file");
    let refused = schedlab(&["real", "scenarios/asym_min-2cpu.toml", "--trace", "-"]);
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("only `schedlab run` writes its trace to standard output")
    );
}

/// Issue 21: stdout on a full device made most commands panic in print!.
/// Every report now goes through one writer that returns the error.
#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    for args in [
        &["run", "scenarios/asym_min-2cpu.toml", "--duration", "50ms"][..],
        &["run", "scenarios/asym_min-2cpu.toml", "--duration", "50ms", "--json"],
        &["features"],
        &["topologies"],
        &["completions", "bash"],
        &["--help"],
        &["sweep", "scenarios/sweeps/itmt-delay-dequeue.toml", "--rounds", "1", "--duration", "20ms"],
        &["analyze", "crates/trace/tests/data/pingpong.trace"],
    ] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out =
            Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(root()).stdout(full).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("cannot write the report: No space left on device"), "{args:?}: {err}");
    }
}

/// Issue 40: stderr on a full device made every error a panic (exit 101) in
/// eprintln!. Messages now go through a writer that drops what cannot be
/// written; the exit status still tells the error (2) from success (0), and
/// a report sent to stderr (`--trace -`) that cannot be written is an error.
#[test]
fn a_full_stderr_still_exits_2_on_an_error_not_101() {
    if !std::path::Path::new("/dev/full").exists() {
        println!("skipped: no /dev/full");
        return;
    }
    let cases: [(&[&str], i32); 6] = [
        (&["run", "no-such-scenario.toml"], 2),
        (&["run", "scenarios/asym_min-2cpu.toml", "--features", "NO_SUCH_FEATURE"], 2),
        (&["run", "--no-such-flag"], 2),
        (&["analyze", "no-such-trace.txt"], 2),
        (&["run", "scenarios/asym_min-2cpu.toml", "--duration", "20ms", "--trace", "-"], 2),
        (&["run", "scenarios/asym_min-2cpu.toml", "--duration", "20ms"], 0),
    ];
    for (args, code) in cases {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(args)
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(full)
            .status()
            .unwrap();
        assert_eq!(out.code(), Some(code), "{args:?}");
    }
}

/// The binary carries the bundled scenarios: outside the checkout (an empty
/// directory as the working directory) they run by name and by their
/// repository path, a sweep's and a fidelity scenario's relative references
/// resolve inside the bundle, and a file on disk of the same path wins.
#[test]
fn outside_the_checkout_bundled_scenarios_run_by_name() {
    let dir = tmp_dir("outside");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).current_dir(dir.path()).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["run", "asym_min", "--duration", "200ms"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("scenario  asym_min (scenarios/asym_min.toml)"), "{out}");
    // A fidelity scenario names its topology as ../topologies/kvm-2.toml.
    let (code, out, err) = run(&["run", "scenarios/fidelity/pingpong-2cpu.toml", "--duration", "50ms"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("machine   kvm-2: 2 CPUs"), "{out}");
    // A sweep names its scenario as ../rt-pi-push.toml.
    let (code, out, err) = run(&["sweep", "rt-pi-push", "--rounds", "1", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\"scenario\""), "{out}");
    let (_, list, _) = run(&["scenarios"]);
    assert!(list.contains("  fidelity/asym_min ") && list.contains("  itmt-delay-dequeue "), "{list}");
    let (code, _, err) = run(&["run", "asym_mn"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("did you mean the bundled `asym_min`?"), "{err}");
    // A file of the bundled path on disk is the one read.
    std::fs::create_dir_all(dir.path().join("scenarios")).unwrap();
    let mine = run(&["scenarios", "--show", "two-hogs"]).1.replace("two nice-0 hogs", "my own two hogs");
    std::fs::write(dir.path().join("scenarios/two-hogs.toml"), mine).unwrap();
    let (code, out, err) = run(&["run", "two-hogs", "--duration", "50ms"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("my own two hogs"), "{out}");
}
