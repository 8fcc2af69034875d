//! The scenario's `[cgroup]` tables on the host: created under one scratch
//! parent per run (`schedlab-<supervisor pid>`), the threads moved in, the
//! counters read, everything removed — after a normal end, an error, Ctrl-C
//! or a killed worker (the supervisor removes them), and after a SIGKILLed
//! supervisor (the directories are listed in the saved state, so its
//! restorer removes them, or else the next run).
//!
//! Two hierarchies, one layout:
//!
//! * **cgroup v2** (users' machines): the scratch parent is created at the
//!   root of the v2 mount, the worker process moves into it, every scenario
//!   group below it is a *threaded* cgroup (threads of one process can only
//!   sit in different cgroups inside a threaded subtree), with `cpu.weight`,
//!   `cpu.max`, `cpu.idle`, `cpuset.cpus` written as the scenario says, and
//!   each thread writes its tid into its group's `cgroup.threads`. The root
//!   must already delegate the controllers (`cgroup.subtree_control`);
//!   the runner does not change machine-wide settings to get them.
//! * **cgroup v1** (this project's CI host): the same tree under the `cpu`
//!   and `cpuset` mounts, weight as `cpu.shares` (`sched_weight_from_cgroup()`),
//!   quota as `cpu.cfs_quota_us`/`cpu.cfs_period_us`; a thread writes its tid
//!   into `tasks`.
//!
//! A `partition` (cgroup v2 only: v1 has no per-group partition, only
//! the root cpuset's machine-wide `sched_load_balance`) is a remote
//! partition (Linux 6.7+): every group above it, the scratch parent
//! included, lends it its CPUs in `cpuset.cpus.exclusive`, and the group
//! writes `cpuset.cpus.partition`; the runner reads that back and stops
//! when the kernel marked it invalid.
//!
//! Only the controllers the scenario uses are involved: a file whose groups
//! only set `cpus` leaves the cpu controller alone, so its fair threads keep
//! the runner's own group (and autogroup) as the model assumes. When the cpu
//! controller is used, the scenario's fair threads without a `cgroup` run in
//! the scratch parent itself, next to the groups — one shape for the
//! model to follow on both hierarchies. RT threads stay out of v1 cpu
//! groups where the kernel has `CONFIG_RT_GROUP_SCHED` (a new group's
//! `cpu.rt_runtime_us` is 0 and the kernel refuses to attach an RT task);
//! an RT thread the scenario puts in such a group is refused up front.

use std::path::{Path, PathBuf};

use schedlab_scenario::cgroup::{effective_cpus, within};
use schedlab_scenario::{CgroupSpec, CpuSet, Op, Scenario};
use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use crate::tracefs::write_file;
use crate::RunnerError;

/// The scratch parent's name: `schedlab-<supervisor pid>`.
pub const SCRATCH_PREFIX: &str = "schedlab-";
/// Where cgroup filesystems are mounted; nothing outside is ever removed.
pub const CGROUP_MOUNT_ROOT: &str = "/sys/fs/cgroup";

/// Which cgroup hierarchy carries the controllers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Hierarchy {
    /// cgroup v2 mounted at `root`.
    V2 { root: PathBuf },
    /// cgroup v1 with the `cpu` and `cpuset` controllers at these mounts.
    V1 { cpu: Option<PathBuf>, cpuset: Option<PathBuf> },
}

/// One directory to create, and what to write in it (in order) once it exists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dir {
    pub path: PathBuf,
    pub writes: Vec<(String, String)>,
    /// Files that must read back exactly so after the writes: the kernel
    /// takes a `cpuset.cpus.partition` write it cannot honour and shows
    /// `root invalid (why)` instead.
    #[serde(default)]
    pub checks: Vec<(String, String)>,
}

/// Everything a run does with cgroups, decided before anything is changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    pub hierarchy: Hierarchy,
    /// Created in order (parents first), removed in reverse.
    pub dirs: Vec<Dir>,
    /// Files the worker writes its pid to before it creates a thread (v2:
    /// the scratch parent's `cgroup.procs`).
    pub process_files: Vec<PathBuf>,
    /// Per scenario thread: the files it writes its own tid to.
    pub thread_files: Vec<Vec<PathBuf>>,
    /// Per scenario cgroup: its directory under the cpu controller, for
    /// reading `cpu.stat` at the end.
    pub cpu_dirs: Vec<Option<PathBuf>>,
    /// Where a thread's `cgroup` move writes its tid: `[0]` for `"/"` (the
    /// run's own group), `[k + 1]` for scenario cgroup k — under the cpu
    /// controller only (a move between cpusets is refused by the scenario).
    pub move_files: Vec<Vec<PathBuf>>,
}

/// A group's CFS bandwidth counters (`cpu.stat`) at the end of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupStat {
    pub name: String,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_ns: u64,
    /// cgroup v2's `usage_usec` in ns: CPU time charged while in the group
    /// (absent on v1, whose cpu.stat has no usage).
    #[serde(default)]
    pub usage_ns: Option<u64>,
}

/// What the host offers, read once (separate from [`layout`] so the
/// layout is a pure function, tested for both hierarchies anywhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCgroups {
    pub hierarchy: Hierarchy,
    /// v2: the root's `cgroup.subtree_control`; v1: unused.
    pub delegated: Vec<String>,
    /// v1 cpuset root's `cpuset.cpus` and `cpuset.mems` (children start empty).
    pub cpuset_cpus: String,
    pub cpuset_mems: String,
    /// v1 `cpu.rt_runtime_us` exists (`CONFIG_RT_GROUP_SCHED`).
    pub rt_group_sched: bool,
}

fn refuse(msg: String) -> RunnerError {
    RunnerError::Cgroup(msg)
}

fn read_trim(p: &Path) -> String {
    std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default()
}

impl HostCgroups {
    /// Find the hierarchy from `/proc/self/mountinfo`: a v1 mount that
    /// carries `cpu` or `cpuset` wins (a controller lives in one hierarchy
    /// only), else the v2 mount.
    pub fn read() -> Result<HostCgroups, RunnerError> {
        let info = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| RunnerError::File {
            path: "/proc/self/mountinfo".into(),
            action: "read".into(),
            source: e,
        })?;
        let (mut cpu, mut cpuset, mut v2) = (None, None, None);
        for line in info.lines() {
            // `... mount_point ... - fstype source super_options`
            let Some((left, right)) = line.split_once(" - ") else { continue };
            let Some(point) = left.split(' ').nth(4) else { continue };
            let mut r = right.split(' ');
            let (fstype, opts) = (r.next().unwrap_or(""), r.nth(1).unwrap_or(""));
            let point = PathBuf::from(point.replace("\\040", " "));
            match fstype {
                "cgroup2" if v2.is_none() => v2 = Some(point),
                "cgroup" => {
                    let has = |c: &str| opts.split(',').any(|o| o == c);
                    if has("cpu") && cpu.is_none() {
                        cpu = Some(point.clone());
                    }
                    if has("cpuset") && cpuset.is_none() {
                        cpuset = Some(point);
                    }
                }
                _ => {}
            }
        }
        if cpu.is_some() || cpuset.is_some() {
            let rt_group_sched = cpu.as_ref().is_some_and(|c| c.join("cpu.rt_runtime_us").exists());
            let (cpuset_cpus, cpuset_mems) = match &cpuset {
                Some(c) => (read_trim(&c.join("cpuset.cpus")), read_trim(&c.join("cpuset.mems"))),
                None => Default::default(),
            };
            return Ok(HostCgroups {
                hierarchy: Hierarchy::V1 { cpu, cpuset },
                delegated: Vec::new(),
                cpuset_cpus,
                cpuset_mems,
                rt_group_sched,
            });
        }
        let Some(root) = v2 else {
            return Err(refuse("no cgroup hierarchy is mounted (neither cgroup2 nor a v1 cpu/cpuset mount)".into()));
        };
        let delegated = read_trim(&root.join("cgroup.subtree_control")).split_whitespace().map(String::from).collect();
        Ok(HostCgroups {
            hierarchy: Hierarchy::V2 { root },
            delegated,
            cpuset_cpus: String::new(),
            cpuset_mems: String::new(),
            rt_group_sched: false,
        })
    }
}

/// A thread may become real-time during the run (its policy or a
/// `setscheduler` op).
fn ever_rt(t: &schedlab_scenario::ThreadSpec) -> bool {
    t.policy.is_rt() || t.program.ops.iter().any(|op| matches!(op, Op::SetScheduler { policy, .. } if policy.is_rt()))
}

/// The files for a group's settings, in the host's hierarchy. `cpus` is
/// already on host CPUs (the plan's map).
fn cpu_writes(g: &CgroupSpec, v2: bool) -> Vec<(String, String)> {
    let mut w = Vec::new();
    if v2 {
        if let Some(weight) = g.weight {
            w.push(("cpu.weight".into(), weight.to_string()));
        }
        if let Some(m) = g.max {
            w.push(("cpu.max".into(), format!("{} {}", m.quota_ns / 1000, m.period_ns / 1000)));
        }
    } else {
        if g.weight.is_some() {
            w.push(("cpu.shares".into(), g.shares().to_string()));
        }
        if let Some(m) = g.max {
            // The period first: a quota is checked against the period in force.
            w.push(("cpu.cfs_period_us".into(), (m.period_ns / 1000).to_string()));
            w.push(("cpu.cfs_quota_us".into(), (m.quota_ns / 1000).to_string()));
        }
    }
    if g.idle {
        w.push(("cpu.idle".into(), "1".into()));
    }
    w
}

/// Decide the run's cgroups: `None` when the scenario has none.
pub fn layout(scenario: &Scenario, plan: &Plan, host: &HostCgroups, pid: i32) -> Result<Option<Layout>, RunnerError> {
    if scenario.cgroups.is_empty() {
        return Ok(None);
    }
    let cgroups = &scenario.cgroups;
    let uses_cpu = cgroups.iter().any(CgroupSpec::controls_cpu);
    let uses_cpuset = cgroups.iter().any(|g| g.cpus.is_some());
    // Scenario CPUs as the host's (`--remap`), as a cpulist to write.
    let on_host = |set: CpuSet| -> String {
        set.iter().map(|c| plan.cpu_map.get(&c).copied().unwrap_or(c)).collect::<CpuSet>().to_cpulist()
    };
    let scratch = format!("{SCRATCH_PREFIX}{pid}");
    let rel = |g: &CgroupSpec| -> PathBuf { g.components().fold(PathBuf::from(&scratch), |p, c| p.join(c)) };
    let n = scenario.threads.len();
    let mut dirs = Vec::new();
    let mut process_files = Vec::new();
    let mut thread_files = vec![Vec::new(); n];
    let mut cpu_dirs = vec![None; cgroups.len()];
    let mut move_files = vec![Vec::new(); cgroups.len() + 1];
    match &host.hierarchy {
        Hierarchy::V2 { root } => {
            if !scenario.sessions.is_empty() && host.delegated.iter().any(|d| d == "cpu") {
                // Every process of the run sits in the scratch domain, a cpu
                // cgroup here, and the kernel only gives tasks of the root
                // task group their autogroup.
                return Err(refuse(format!(
                    "the scenario has sessions and cgroups: on cgroup v2 the run's processes must share one \
                     domain ({}/{scratch}), which the cpu controller governs here, so no thread would get its \
                     session's autogroup; run the sessions without cgroups (on cgroup v1 the two combine)",
                    root.display()
                )));
            }
            let mut need: Vec<&str> = Vec::new();
            if uses_cpu {
                need.push("cpu");
            }
            if uses_cpuset {
                need.push("cpuset");
            }
            if let Some(missing) = need.iter().find(|c| !host.delegated.iter().any(|d| d == *c)) {
                return Err(refuse(format!(
                    "the scenario's cgroups need the `{missing}` controller, which {} does not delegate \
                     (its cgroup.subtree_control has `{}`); enable it (echo +{missing} > {}) or run on a host \
                     where it is",
                    root.display(),
                    host.delegated.join(" "),
                    root.join("cgroup.subtree_control").display()
                )));
            }
            let control = need.iter().map(|c| format!("+{c}")).collect::<Vec<_>>().join(" ");
            let top = root.join(&scratch);
            let mut top_writes = Vec::new();
            if !control.is_empty() {
                top_writes.push(("cgroup.subtree_control".into(), control.clone()));
            }
            // A partition below the scratch parent is a remote partition
            // (6.7+): every group above it, up to the root, lends it its
            // CPUs as `cpuset.cpus.exclusive`.
            let partition_cpus_at_or_below = |k: Option<usize>| -> CpuSet {
                cgroups
                    .iter()
                    .enumerate()
                    .filter(|(i, g)| g.partition.is_some() && k.is_none_or(|k| within(cgroups, *i, k)))
                    .fold(CpuSet::empty(), |acc, (_, g)| acc.or(&g.cpus.unwrap_or_default()))
            };
            let lent = partition_cpus_at_or_below(None);
            if !lent.is_empty() {
                top_writes.push(("cpuset.cpus.exclusive".into(), on_host(lent)));
            }
            dirs.push(Dir { path: top.clone(), writes: top_writes, checks: Vec::new() });
            process_files.push(top.join("cgroup.procs"));
            for (k, g) in cgroups.iter().enumerate() {
                let path = root.join(rel(g));
                let mut writes = vec![("cgroup.type".to_string(), "threaded".to_string())];
                let mut checks = Vec::new();
                writes.extend(cpu_writes(g, true));
                if let Some(c) = g.cpus {
                    writes.push(("cpuset.cpus".into(), on_host(c)));
                }
                let lent = partition_cpus_at_or_below(Some(k));
                if !lent.is_empty() {
                    writes.push(("cpuset.cpus.exclusive".into(), on_host(lent)));
                }
                if let Some(kind) = g.partition {
                    writes.push(("cpuset.cpus.partition".into(), kind.as_str().into()));
                    checks.push(("cpuset.cpus.partition".into(), kind.as_str().into()));
                }
                let has_children = cgroups.iter().any(|c| c.parent == Some(k));
                if has_children && !control.is_empty() {
                    writes.push(("cgroup.subtree_control".into(), control.clone()));
                }
                if uses_cpu {
                    cpu_dirs[k] = Some(path.clone());
                }
                dirs.push(Dir { path, writes, checks });
            }
            for (i, t) in scenario.threads.iter().enumerate() {
                if let Some(k) = t.cgroup {
                    thread_files[i].push(root.join(rel(&cgroups[k])).join("cgroup.threads"));
                }
            }
            move_files[0].push(top.join("cgroup.threads"));
            for (k, g) in cgroups.iter().enumerate() {
                move_files[k + 1].push(root.join(rel(g)).join("cgroup.threads"));
            }
        }
        Hierarchy::V1 { cpu, cpuset } => {
            if let Some(g) = cgroups.iter().find(|g| g.partition.is_some()) {
                return Err(refuse(format!(
                    "cgroup `{}` is a cpuset partition, which needs cgroup v2 (cpuset.cpus.partition); this host \
                     has the cpuset controller on cgroup v1, where a partition means turning off \
                     cpuset.sched_load_balance of the root cpuset, for every process on the machine; run it \
                     on a cgroup v2 host or in a guest (schedlab vm)",
                    g.name
                )));
            }
            let cpu_root = match (uses_cpu, cpu) {
                (true, None) => {
                    return Err(refuse(
                        "the scenario's cgroups need the cpu controller, which no cgroup v1 mount carries here".into(),
                    ))
                }
                (true, Some(c)) => Some(c),
                (false, _) => None,
            };
            let cpuset_root =
                match (uses_cpuset, cpuset) {
                    (true, None) => return Err(refuse(
                        "the scenario's cgroups set `cpus`, and no cgroup v1 mount carries the cpuset controller here"
                            .into(),
                    )),
                    (true, Some(c)) => Some(c),
                    (false, _) => None,
                };
            if let Some(root) = cpu_root.filter(|_| host.rt_group_sched) {
                // A forked RT thread would sit in a cpu group: its own, or its forker's.
                let forks_in_group = |t: usize| {
                    scenario.threads.iter().any(|f| {
                        (f.cgroup.is_some() || f.moves_cgroup())
                            && f.program
                                .ops
                                .iter()
                                .any(|op| matches!(op, Op::Fork { template } if *template as usize == t))
                    })
                };
                for (k, t) in scenario.templates.iter().enumerate() {
                    if ever_rt(t) && (t.cgroup.is_some() || t.moves_cgroup() || forks_in_group(k)) {
                        return Err(refuse(format!(
                            "forked thread `{}` is real-time and would run in a cgroup under {}, but this kernel \
                             has CONFIG_RT_GROUP_SCHED on cgroup v1: a new group's cpu.rt_runtime_us is 0, so the \
                             kernel refuses an RT task in it",
                            t.name,
                            root.display()
                        )));
                    }
                }
            }
            if let Some(root) = cpu_root {
                dirs.push(Dir { path: root.join(&scratch), writes: Vec::new(), checks: Vec::new() });
                move_files[0].push(root.join(&scratch).join("tasks"));
                for (k, g) in cgroups.iter().enumerate() {
                    let path = root.join(rel(g));
                    dirs.push(Dir { path: path.clone(), writes: cpu_writes(g, false), checks: Vec::new() });
                    move_files[k + 1].push(path.join("tasks"));
                    cpu_dirs[k] = Some(path);
                }
                for (i, t) in scenario.threads.iter().enumerate() {
                    let dir = match t.cgroup {
                        Some(k) => root.join(rel(&cgroups[k])),
                        None => root.join(&scratch),
                    };
                    if host.rt_group_sched && ever_rt(t) {
                        if t.moves_cgroup() {
                            return Err(refuse(format!(
                                "thread `{}` is real-time and moves between cgroups, but this kernel has \
                                 CONFIG_RT_GROUP_SCHED on cgroup v1: a new group's cpu.rt_runtime_us is 0, so \
                                 the kernel refuses an RT task in it",
                                t.name
                            )));
                        }
                        if let Some(k) = t.cgroup {
                            return Err(refuse(format!(
                                "thread `{}` is real-time and in cgroup `{}`, but this kernel has \
                                 CONFIG_RT_GROUP_SCHED on cgroup v1: a new group's cpu.rt_runtime_us is 0, so \
                                 the kernel refuses to run an RT task in it; put the RT thread outside the \
                                 cgroup (it stays in the runner's own group)",
                                t.name, cgroups[k].name
                            )));
                        }
                        continue;
                    }
                    thread_files[i].push(dir.join("tasks"));
                }
            }
            if let Some(root) = cpuset_root {
                let mems = ("cpuset.mems".to_string(), host.cpuset_mems.clone());
                let all = ("cpuset.cpus".to_string(), host.cpuset_cpus.clone());
                dirs.push(Dir {
                    path: root.join(&scratch),
                    writes: vec![all.clone(), mems.clone()],
                    checks: Vec::new(),
                });
                for (k, g) in cgroups.iter().enumerate() {
                    // A group without `cpus` takes the nearest one up (v1 children start empty).
                    let cpus = effective_cpus(cgroups, k).map(on_host).unwrap_or_else(|| host.cpuset_cpus.clone());
                    dirs.push(Dir {
                        path: root.join(rel(g)),
                        writes: vec![("cpuset.cpus".into(), cpus), mems.clone()],
                        checks: Vec::new(),
                    });
                }
                for (i, t) in scenario.threads.iter().enumerate() {
                    if let Some(k) = t.cgroup {
                        thread_files[i].push(root.join(rel(&cgroups[k])).join("tasks"));
                    }
                }
            }
        }
    }
    Ok(Some(Layout { hierarchy: host.hierarchy.clone(), dirs, process_files, thread_files, cpu_dirs, move_files }))
}

impl Layout {
    /// One line for the run's notes: where the groups live.
    pub fn describe(&self) -> String {
        let top: Vec<String> = self
            .dirs
            .iter()
            .filter(|d| d.path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(SCRATCH_PREFIX)))
            .map(|d| d.path.display().to_string())
            .collect();
        let which = match self.hierarchy {
            Hierarchy::V2 { .. } => "cgroup v2 (threaded groups)",
            Hierarchy::V1 { .. } => "cgroup v1",
        };
        format!(
            "the scenario's cgroups run on {which} under {}, removed after the run",
            if top.is_empty() { "no directory (nothing to control)".to_string() } else { top.join(" and ") }
        )
    }

    /// Every directory, parents first, as the saved state lists them.
    pub fn dir_paths(&self) -> Vec<String> {
        self.dirs.iter().map(|d| d.path.display().to_string()).collect()
    }

    /// Create the directories and write their settings. On an error the
    /// caller removes what exists ([`remove_dirs`]).
    pub fn create(&self) -> Result<(), RunnerError> {
        for d in &self.dirs {
            std::fs::create_dir(&d.path).map_err(|e| RunnerError::File {
                path: d.path.clone(),
                action: "create the cgroup".into(),
                source: e,
            })?;
            for (file, value) in &d.writes {
                let p = d.path.join(file);
                if file.starts_with("cpuset.cpus.") && !p.exists() {
                    return Err(refuse(format!(
                        "{} does not exist: cpuset partitions below another group (remote partitions, \
                         cpuset.cpus.exclusive) need Linux 6.7 or later",
                        p.display()
                    )));
                }
                write_file(&p, value)?;
            }
            for (file, want) in &d.checks {
                let p = d.path.join(file);
                let got = read_trim(&p);
                if got != *want {
                    return Err(refuse(format!(
                        "the kernel did not make {} a partition: {} reads `{got}`, not `{want}`",
                        d.path.display(),
                        p.display()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Each group's `cpu.stat` (v1 `throttled_time` is ns, v2
    /// `throttled_usec` µs); groups without a quota read zeros.
    pub fn stats(&self, scenario: &Scenario) -> Vec<CgroupStat> {
        scenario
            .cgroups
            .iter()
            .zip(&self.cpu_dirs)
            .filter_map(|(g, dir)| {
                let text = std::fs::read_to_string(dir.as_ref()?.join("cpu.stat")).ok()?;
                let mut s = CgroupStat { name: g.name.clone(), ..Default::default() };
                for line in text.lines() {
                    let mut kv = line.split_whitespace();
                    let (Some(k), Some(v)) = (kv.next(), kv.next().and_then(|v| v.parse::<u64>().ok())) else {
                        continue;
                    };
                    match k {
                        "nr_periods" => s.nr_periods = v,
                        "nr_throttled" => s.nr_throttled = v,
                        "throttled_time" => s.throttled_ns = v,
                        "throttled_usec" => s.throttled_ns = v * 1000,
                        "usage_usec" => s.usage_ns = Some(v * 1000),
                        _ => {}
                    }
                }
                Some(s)
            })
            .collect()
    }
}

/// Whether `p` is a directory this runner may remove: an absolute path
/// under [`CGROUP_MOUNT_ROOT`], plain components only, one of them a
/// `schedlab-<pid>` scratch parent.
pub(crate) fn removable(p: &Path) -> bool {
    use std::path::Component;
    let Ok(rest) = p.strip_prefix(CGROUP_MOUNT_ROOT) else { return false };
    let plain = rest.components().all(|c| matches!(c, Component::Normal(_)));
    let scratch = rest.components().any(|c| {
        c.as_os_str()
            .to_str()
            .and_then(|s| s.strip_prefix(SCRATCH_PREFIX))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    plain && scratch
}

/// Remove the directories (children first: the reverse of `dirs`), each
/// retried for up to a second while the kernel still counts exited threads
/// in it (EBUSY). One that is already gone is fine. Refuses, without
/// touching anything, a list naming any other directory (it may come from a
/// file in a shared directory).
pub fn remove_dirs(dirs: &[String]) -> Result<(), RunnerError> {
    if let Some(bad) = dirs.iter().find(|d| !removable(Path::new(d))) {
        return Err(RunnerError::RefusedCgroup { dir: bad.clone() });
    }
    let mut first_err = None;
    for d in dirs.iter().rev() {
        let deadline = crate::sys::now_ns() + 1_000_000_000;
        loop {
            match std::fs::remove_dir(d) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && crate::sys::now_ns() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    first_err.get_or_insert(RunnerError::File {
                        path: d.into(),
                        action: "remove the cgroup".into(),
                        source: e,
                    });
                    break;
                }
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// Move the calling thread (`tid`) or process into the cgroups `files` name.
pub fn attach(files: &[PathBuf], id: i32) -> Result<(), RunnerError> {
    for f in files {
        write_file(f, &id.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
