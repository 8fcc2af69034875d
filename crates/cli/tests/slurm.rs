//! `schedlab sweep --slurm` on a real single-node Slurm cluster
//! (scripts/slurm-cluster.sh in a temporary directory; the daemons are
//! stopped at the end, also when an assertion fails). Skips with a message
//! without root or without Debian's slurmctld, slurmd and munge
//! (scripts/install-slurm-deps.sh, which `.ci/run` calls).

mod common;
use common::root;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Cluster {
    dir: PathBuf,
    conf: String,
}

impl Cluster {
    fn start(dir: &Path) -> Result<Cluster, String> {
        let out = Command::new(root().join("scripts/slurm-cluster.sh"))
            .args(["start", dir.to_str().unwrap()])
            .output()
            .map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        match stdout.lines().find_map(|l| l.strip_prefix("SLURM_CONF=")) {
            Some(conf) if out.status.success() => Ok(Cluster { dir: dir.to_path_buf(), conf: conf.to_string() }),
            _ => Err(format!("{}{}", stdout, String::from_utf8_lossy(&out.stderr))),
        }
    }

    /// `schedlab ARGS` with this cluster's SLURM_CONF, from the repository root.
    fn schedlab(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(args)
            .current_dir(root())
            .env("SLURM_CONF", &self.conf)
            .env("SCHEDLAB_SLURM_POLL_MS", "300")
            .output()
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ =
            Command::new(root().join("scripts/slurm-cluster.sh")).args(["stop", self.dir.to_str().unwrap()]).status();
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_sweep_through_slurm_prints_the_local_report_and_reruns_only_failed_shards() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (slurmd runs the jobs)");
        return;
    }
    let dir = common::tmp_dir("slurm");
    let cluster = match Cluster::start(&dir.path().join("cluster")) {
        Ok(c) => c,
        Err(why) => {
            eprintln!("skipped: no Slurm cluster could be started here:\n{why}");
            return;
        }
    };
    let sweep = ["sweep", "scenarios/sweeps/itmt-delay-dequeue.toml", "--rounds", "2", "--duration", "300ms"];
    let local = cluster.schedlab(&[&sweep[..], &["--no-timing"]].concat());
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    let slurm_args = [&sweep[..], &["--slurm", "--shards", "3", "--out", out_s]].concat();
    let slurm = cluster.schedlab(&slurm_args);
    let err = text(&slurm.stderr);
    assert!(err.contains("submitted 3 shards as job array"), "{err}");
    assert_eq!(text(&slurm.stdout), text(&local.stdout), "the cluster's report is the local one\n{err}");
    // The file's A/B gate decides both exit statuses alike.
    assert_eq!(slurm.status.code(), local.status.code(), "{err}");
    for i in 0..3 {
        assert!(out.join(format!("shard-{i}-of-3.json")).is_file());
    }

    // A shard that cannot be written (its file name taken by a directory)
    // fails its array task: reported by index with its log, the merge job
    // cancelled; the rerun resubmits that shard alone.
    std::fs::remove_file(out.join("shard-1-of-3.json")).unwrap();
    std::fs::create_dir(out.join("shard-1-of-3.json")).unwrap();
    let failed = cluster.schedlab(&slurm_args);
    let err = text(&failed.stderr);
    assert_eq!(failed.status.code(), Some(2), "{err}");
    assert!(err.contains("submitted the 1 missing shards of 3 (1)"), "{err}");
    assert!(err.contains("shards 1 of 3 failed") && err.contains("shard-1.log"), "{err}");
    assert!(err.contains("Run the same command again to resubmit only those shards"), "{err}");
    std::fs::remove_dir(out.join("shard-1-of-3.json")).unwrap();
    let rerun = cluster.schedlab(&slurm_args);
    let err = text(&rerun.stderr);
    assert!(err.contains("submitted the 1 missing shards of 3 (1)"), "{err}");
    assert_eq!(text(&rerun.stdout), text(&local.stdout), "{err}");

    // Nothing left to run: merged here, without the cluster.
    let again = cluster.schedlab(&slurm_args);
    assert!(text(&again.stderr).contains("all 3 shards are in"), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), text(&local.stdout));

    // --no-wait returns at once with the ids and the merge command.
    let nowait = cluster
        .schedlab(&[&sweep[..], &["--slurm", "--shards", "2", "--out", &format!("{out_s}-2"), "--no-wait"]].concat());
    let s = text(&nowait.stdout);
    assert!(
        nowait.status.success() && s.contains("array job ") && s.contains("merge job "),
        "{s}{}",
        text(&nowait.stderr)
    );
    assert!(s.contains(&format!("--merge {out_s}-2")), "{s}");
    drop(cluster);
    drop(dir);
}

#[test]
fn options_slurm_cannot_honour_are_refused() {
    for extra in [&["--jobs", "2"][..], &["--plot", "/tmp/p"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(["sweep", "scenarios/sweeps/itmt-delay-dequeue.toml", "--slurm"])
            .args(extra)
            .current_dir(root())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(text(&out.stderr).contains("cannot be used with"), "{extra:?}: {}", text(&out.stderr));
    }
}

#[test]
fn shard_auto_reads_the_array_task_or_says_what_is_missing() {
    let dir = common::tmp_dir("shard-auto");
    let out = dir.path().to_str().unwrap();
    let run = |env: &[(&str, &str)], shard: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_schedlab"));
        c.args(["sweep", "scenarios/sweeps/itmt-delay-dequeue.toml", "--rounds", "1", "--duration", "50ms"]);
        c.args(["--shard", shard, "--out", out]).current_dir(root());
        for v in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_COUNT",
            "SLURM_ARRAY_TASK_MIN",
            "SLURM_ARRAY_TASK_MAX",
            "JOB_COMPLETION_INDEX",
        ] {
            c.env_remove(v);
        }
        c.envs(env.iter().copied()).output().unwrap()
    };
    let o = run(
        &[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "1"),
        ],
        "auto",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(dir.path().join("shard-1-of-2.json").is_file());
    let o = run(&[("JOB_COMPLETION_INDEX", "0")], "auto/2");
    assert!(o.status.success() && dir.path().join("shard-0-of-2.json").is_file(), "{}", text(&o.stderr));
    let o = run(&[], "auto");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("neither SLURM_ARRAY_TASK_ID"), "{}", text(&o.stderr));
    let o = run(&[], "auto/x");
    assert!(text(&o.stderr).contains("expected auto or auto/N"), "{}", text(&o.stderr));
}

/// Without a cluster, `--slurm` says how to point at one or start one, and
/// leaves no `schedlab-slurm-*` folder behind: Slurm not installed, no
/// controller answering, and a submission that fails after the check.
#[test]
fn without_a_cluster_the_sweep_says_how_to_get_one_and_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::tmp_dir("slurm-none");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = |name: &str, body: &str| {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let sweep = root().join("scenarios/sweeps/itmt-delay-dequeue.toml");
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(["sweep", sweep.to_str().unwrap(), "--slurm"])
            .env("PATH", &bin)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let left = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("schedlab-slurm-"))
            .collect::<Vec<_>>()
    };

    let out = run();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("Slurm's `sinfo -h -o %P` is not on PATH") && err.contains("install-slurm-deps.sh"), "{err}");
    assert!(left().is_empty(), "{:?}", left());

    fake("sinfo", "echo 'sinfo: error: Could not establish a configuration source' >&2; exit 1");
    let out = run();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no Slurm cluster answers") && err.contains("Could not establish a configuration source"),
        "{err}"
    );
    assert!(err.contains("SLURM_CONF=") && err.contains("scripts/slurm-cluster.sh start DIR"), "{err}");
    assert!(left().is_empty(), "{:?}", left());

    fake("sinfo", "echo debug");
    fake("sbatch", "echo 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2; exit 1");
    let out = run();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("Invalid partition name specified"), "{err}");
    assert!(left().is_empty(), "the scripts' folder was left behind: {:?}", left());
}
