//! `[cgroup.NAME]` tables: the control groups a scenario's threads run in.
//!
//! A name is a path below the run's own parent group: `batch`, or
//! `"web/api"` for a child of `web` (which needs its own table). Values are
//! cgroup v2's, checked as the kernel checks the writes:
//!
//! * `weight` — `cpu.weight`, 1..10000 (`CGROUP_WEIGHT_MIN..MAX`), default
//!   100; on cgroup v1 it becomes `cpu.shares` = weight · 1024 / 100
//!   (`sched_weight_from_cgroup()`).
//! * `max`, `period` — `cpu.max`: quota and period. `tg_set_cfs_bandwidth()`
//!   refuses a quota or period below 1 ms and a period above 1 s; the
//!   default period is 100 ms (`default_cfs_period()`). A quota above the
//!   period is allowed (a group of several CPUs).
//! * `cpus` — `cpuset.cpus`, which must lie within the parent's (v1
//!   refuses anything else; v2 would silently intersect). A thread's
//!   affinity, and every `setaffinity` it does, is intersected with it, as
//!   `sched_setaffinity()` intersects with `cpuset_cpus_allowed()`.
//! * `idle = true` — `cpu.idle` (SCHED_IDLE semantics for the group's
//!   entity); the kernel refuses a weight on an idle group, so does this.
//! * `partition` — `cpuset.cpus.partition`: `"member"` (the default),
//!   `"root"` (the group's `cpus` become a root domain of their own, with
//!   their own sched domains) or `"isolated"` (the same without sched
//!   domains: no load balancing). The partition's CPUs leave every group
//!   outside it, the run's own included, as cpuset's `update_parent_effective_cpumask()`
//!   takes them from the parent. Checked as cpuset's `validate_partition()`
//!   and `update_prstate()` of 6.12 check the write (`cpus` set, CPUs no
//!   other partition has, at least one CPU left to the rest); a partition
//!   inside a partition, and a group outside one whose `cpus` reach into
//!   it, are refused (the first is not followed by schedlab, the second
//!   would leave the kernel to shrink the group's CPUs silently).
//!
//! A table that sets only `cpus` is a cpuset and nothing else; any other
//! table, an empty one included, is a group of the cpu controller (its
//! threads share one scheduling entity per CPU).
//!
//! A table no thread runs in (itself or below it) is refused as a likely
//! typo. Forked threads (tables only `fork` starts) cannot name a cgroup
//! yet: in the kernel they start in their forker's and the runner would
//! have to move them.

use std::collections::BTreeMap;

use schedlab_topology::{CpuSet, InputError, Topology, MAX_CPUS};
use toml::Spanned;

use crate::file::RawCgroup;
use crate::values::{self, Ctx, Zero};

/// `CGROUP_WEIGHT_DFL`.
pub const CGROUP_WEIGHT_DEFAULT: u32 = 100;
const CGROUP_WEIGHT_MIN: i64 = 1;
const CGROUP_WEIGHT_MAX: i64 = 10_000;
/// `default_cfs_period()`.
pub const DEFAULT_CFS_PERIOD_NS: u64 = 100_000_000;
/// `min_cfs_quota_period` and `max_cfs_quota_period`.
const MIN_CFS_QUOTA_PERIOD_NS: u64 = 1_000_000;
const MAX_CFS_QUOTA_PERIOD_NS: u64 = 1_000_000_000;
/// Most `[cgroup]` tables one file may have: each is a directory per
/// controller on the host.
pub const MAX_CGROUPS: usize = 256;
/// Longest path component the runner creates (well under NAME_MAX, so the
/// `schedlab-<pid>` parent and the component fit every filesystem).
const MAX_NAME: usize = 64;

/// `cpu.max`: `quota_ns` of CPU time per `period_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuMax {
    pub quota_ns: u64,
    pub period_ns: u64,
}

/// One `[cgroup.NAME]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupSpec {
    /// The path below the run's parent group (`web/api`).
    pub name: String,
    /// Index of the parent in [`crate::Scenario::cgroups`] (always earlier).
    pub parent: Option<usize>,
    /// `cpu.weight`; `None` leaves the default (100).
    pub weight: Option<u32>,
    pub max: Option<CpuMax>,
    /// `cpuset.cpus` as written (within the parent's effective CPUs).
    pub cpus: Option<CpuSet>,
    pub idle: bool,
    /// `cpuset.cpus.partition` when not `member`.
    pub partition: Option<PartitionKind>,
    /// Where its table starts.
    pub line: usize,
}

/// `cpuset.cpus.partition` of a partition root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionKind {
    /// `root`: a root domain with its own sched domains.
    Root,
    /// `isolated`: a root domain without sched domains (no load balancing).
    Isolated,
}

impl PartitionKind {
    /// What `cpuset.cpus.partition` is written.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionKind::Root => "root",
            PartitionKind::Isolated => "isolated",
        }
    }
}

impl CgroupSpec {
    /// It is a group of the cpu controller: it sets a weight, a quota or
    /// idle, or nothing at all (a group of the default weight, whose
    /// threads share one entity). A table that only sets `cpus` is the
    /// cpuset controller's alone.
    pub fn controls_cpu(&self) -> bool {
        self.weight.is_some() || self.max.is_some() || self.idle || self.cpus.is_none()
    }

    /// cgroup v1's `cpu.shares` for its weight: `weight · 1024 / 100`
    /// rounded to the closest (`sched_weight_from_cgroup()`).
    pub fn shares(&self) -> u64 {
        let w = u64::from(self.weight.unwrap_or(CGROUP_WEIGHT_DEFAULT));
        (w * 1024 + u64::from(CGROUP_WEIGHT_DEFAULT) / 2) / u64::from(CGROUP_WEIGHT_DEFAULT)
    }

    /// The path components, for the directories a runner creates.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.name.split('/')
    }
}

/// The CPUs a thread of cgroup `i` may use: the nearest cpuset on its path
/// up (each lies within its parent's), `None` when no group on it has one.
pub fn effective_cpus(cgroups: &[CgroupSpec], i: usize) -> Option<CpuSet> {
    let mut at = Some(i);
    while let Some(k) = at {
        if let Some(c) = cgroups[k].cpus {
            return Some(c);
        }
        at = cgroups[k].parent;
    }
    None
}

/// Is group `i` at or below group `ancestor`?
pub fn within(cgroups: &[CgroupSpec], i: usize, ancestor: usize) -> bool {
    let mut at = Some(i);
    while let Some(k) = at {
        if k == ancestor {
            return true;
        }
        at = cgroups[k].parent;
    }
    false
}

/// The CPUs a thread in group `at` (`None`: the run's own group) may use:
/// its nearest cpuset (or `all`), minus the CPUs of every partition it is
/// not inside; `None` when neither applies (every CPU).
pub fn cpus_of(cgroups: &[CgroupSpec], at: Option<usize>, all: &CpuSet) -> Option<CpuSet> {
    let mut cpus = at.and_then(|i| effective_cpus(cgroups, i));
    for (k, g) in cgroups.iter().enumerate() {
        if g.partition.is_none() || at.is_some_and(|i| within(cgroups, i, k)) {
            continue;
        }
        let taken = g.cpus.unwrap_or_default();
        cpus = Some(cpus.unwrap_or(*all).and_not(&taken));
    }
    cpus
}

/// The partition roots, in table order.
pub fn partitions(cgroups: &[CgroupSpec]) -> impl Iterator<Item = &CgroupSpec> {
    cgroups.iter().filter(|g| g.partition.is_some())
}

/// A name the kernel already uses inside every cgroup directory (v1 or
/// v2): `tasks`, `cgroup.procs`, `cpu.weight`, ... — a `mkdir` of it fails.
fn is_control_file(part: &str) -> bool {
    const CONTROLLERS: &[&str] = &[
        "cgroup",
        "cpu",
        "cpuset",
        "cpuacct",
        "memory",
        "io",
        "pids",
        "hugetlb",
        "rdma",
        "misc",
        "blkio",
        "devices",
        "freezer",
        "net_cls",
        "net_prio",
        "perf_event",
        "irq",
    ];
    matches!(part, "tasks" | "notify_on_release" | "release_agent")
        || part.split_once('.').is_some_and(|(prefix, _)| CONTROLLERS.contains(&prefix))
}

fn check_name(ctx: Ctx, key: &Spanned<String>) -> Result<(), InputError> {
    let name = key.get_ref();
    let bad = |why: &str| Err(ctx.err(key, format!("[cgroup.\"{name}\"]: {why}")));
    if name.is_empty() {
        return bad("the name is empty");
    }
    for part in name.split('/') {
        if part.is_empty() {
            return bad("a path component is empty (expected names like \"web\" or \"web/api\")");
        }
        if part == "." || part == ".." {
            return bad("`.` and `..` are not cgroup names");
        }
        if part.len() > MAX_NAME {
            return bad(&format!("`{part}` is longer than {MAX_NAME} bytes"));
        }
        if let Some(c) = part.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
            return bad(&format!(
                "{c:?} is not allowed (expected letters, digits, `-`, `_`, `.` and `/` between levels)"
            ));
        }
        if is_control_file(part) {
            return bad(&format!("`{part}` is the name of a cgroup control file, so no group can be made with it"));
        }
    }
    Ok(())
}

/// Parse the `[cgroup.NAME]` tables (a BTreeMap: a parent sorts before its
/// children, so every parent index is smaller).
pub(crate) fn cgroups(
    ctx: Ctx,
    raw: &BTreeMap<Spanned<String>, Spanned<RawCgroup>>,
    topo: &Topology,
) -> Result<Vec<CgroupSpec>, InputError> {
    let mut out: Vec<CgroupSpec> = Vec::new();
    for (key, table) in raw {
        let name = key.get_ref();
        if out.len() == MAX_CGROUPS {
            return Err(ctx.err(key, format!("more than {MAX_CGROUPS} [cgroup] tables (a limit of schedlab's)")));
        }
        check_name(ctx, key)?;
        let parent = match name.rsplit_once('/') {
            None => None,
            Some((up, _)) => match out.iter().position(|c| c.name == up) {
                Some(p) => Some(p),
                None => {
                    return Err(ctx.err(
                        key,
                        format!("[cgroup.\"{name}\"]: its parent `{up}` has no table: add [cgroup.\"{up}\"]"),
                    ))
                }
            },
        };
        let t = table.get_ref();
        let weight = match &t.weight {
            Some(w) => Some(values::int_in(
                ctx,
                w,
                "weight",
                CGROUP_WEIGHT_MIN,
                CGROUP_WEIGHT_MAX,
                "cpu.weight; 100 is the default",
            )? as u32),
            None => None,
        };
        let idle = t.idle.as_ref().is_some_and(|i| *i.get_ref());
        if let (true, Some(w)) = (idle, &t.weight) {
            return Err(ctx.err(
                w,
                format!("[cgroup.\"{name}\"]: an idle group has no weight (the kernel refuses cpu.weight while cpu.idle is 1)"),
            ));
        }
        let period_ns = match &t.period {
            Some(p) if t.max.is_none() => {
                return Err(ctx.err(p, format!("[cgroup.\"{name}\"]: `period` without `max` limits nothing")))
            }
            Some(p) => {
                let ns = values::duration(ctx, p, "period", Zero::Refused)?;
                if !(MIN_CFS_QUOTA_PERIOD_NS..=MAX_CFS_QUOTA_PERIOD_NS).contains(&ns) {
                    return Err(ctx.err(
                        p,
                        "`period` is out of range: expected 1ms..1s (the kernel refuses other cpu.max periods)",
                    ));
                }
                ns
            }
            None => DEFAULT_CFS_PERIOD_NS,
        };
        let max = match &t.max {
            Some(m) => {
                let quota_ns = values::duration(ctx, m, "max", Zero::Refused)?;
                if quota_ns < MIN_CFS_QUOTA_PERIOD_NS {
                    return Err(ctx.err(m, "`max` is below 1ms: the kernel refuses a smaller cpu.max quota"));
                }
                Some(CpuMax { quota_ns, period_ns })
            }
            None => None,
        };
        let cpus = match &t.cpus {
            Some(c) => {
                let set = values::cpus_named(ctx, c, topo, "cpus")?;
                if let Some(up) = parent.and_then(|p| effective_cpus(&out, p)) {
                    if !set.is_subset(&up) {
                        return Err(ctx.err(
                            c,
                            format!(
                                "[cgroup.\"{name}\"]: `cpus` = {} is not within its parent's {} \
                                 (a cpuset lies within its parent's)",
                                set.to_cpulist(),
                                up.to_cpulist()
                            ),
                        ));
                    }
                }
                Some(set)
            }
            None => None,
        };
        let partition = match &t.partition {
            Some(p) => partition_kind(ctx, p, name, cpus.as_ref(), parent, &out)?,
            None => None,
        };
        out.push(CgroupSpec {
            name: name.clone(),
            parent,
            weight,
            max,
            cpus,
            idle,
            partition,
            line: ctx.line_of(table.span().start),
        });
    }
    check_partitions(ctx, raw, &out, topo)?;
    Ok(out)
}

/// `partition = "..."` of group `name`, checked against its own table
/// and its ancestors (`validate_partition()`).
fn partition_kind(
    ctx: Ctx,
    p: &Spanned<String>,
    name: &str,
    cpus: Option<&CpuSet>,
    parent: Option<usize>,
    earlier: &[CgroupSpec],
) -> Result<Option<PartitionKind>, InputError> {
    let kind = match p.get_ref().as_str() {
        "member" => return Ok(None),
        "root" => PartitionKind::Root,
        "isolated" => PartitionKind::Isolated,
        other => {
            return Err(ctx.err(
                p,
                format!(
                    "[cgroup.\"{name}\"]: `partition` = \"{other}\": expected \"member\", \"root\" or \"isolated\""
                ),
            ))
        }
    };
    if cpus.is_none() {
        return Err(ctx.err(
            p,
            format!("[cgroup.\"{name}\"]: a partition needs its `cpus` (cpuset.cpus): the CPUs it takes for itself"),
        ));
    }
    let mut up = parent;
    while let Some(k) = up {
        if earlier[k].partition.is_some() {
            return Err(ctx.err(
                p,
                format!(
                    "[cgroup.\"{name}\"]: a partition inside partition `{}` is not supported by schedlab \
                     (make both partitions of the run's own group)",
                    earlier[k].name
                ),
            ));
        }
        up = earlier[k].parent;
    }
    Ok(Some(kind))
}

/// The partitions together: disjoint (a partition's CPUs are exclusive),
/// leaving the rest of the machine a CPU (the top partition always has
/// tasks, and cpuset refuses to take its last CPU), and no group outside
/// a partition asking for its CPUs.
fn check_partitions(
    ctx: Ctx,
    raw: &BTreeMap<Spanned<String>, Spanned<RawCgroup>>,
    groups: &[CgroupSpec],
    topo: &Topology,
) -> Result<(), InputError> {
    let key_of = |i: usize| raw.keys().nth(i).expect("one table per group");
    let mut taken = CpuSet::empty();
    for (i, g) in groups.iter().enumerate() {
        let Some(cpus) = g.cpus.filter(|_| g.partition.is_some()) else { continue };
        if cpus.intersects(&taken) {
            return Err(ctx.err(
                key_of(i),
                format!(
                    "[cgroup.\"{}\"]: partition CPUs {} overlap another partition's {}: a partition's CPUs are its own",
                    g.name,
                    cpus.to_cpulist(),
                    cpus.and(&taken).to_cpulist()
                ),
            ));
        }
        taken = taken.or(&cpus);
    }
    if taken.is_empty() {
        return Ok(());
    }
    if topo.all_cpus().and_not(&taken).is_empty() {
        let last = groups.iter().rposition(|g| g.partition.is_some()).expect("a partition");
        return Err(ctx.err(
            key_of(last),
            format!(
                "[cgroup.\"{}\"]: the partitions take every CPU ({}): the rest of the machine needs one \
                 (the kernel refuses a partition that would empty its parent)",
                groups[last].name,
                taken.to_cpulist()
            ),
        ));
    }
    for (i, g) in groups.iter().enumerate() {
        let Some(cpus) = g.cpus else { continue };
        for (k, p) in groups.iter().enumerate() {
            if p.partition.is_none() || within(groups, i, k) || within(groups, k, i) {
                continue;
            }
            let theirs = p.cpus.unwrap_or_default();
            if cpus.intersects(&theirs) {
                return Err(ctx.err(
                    key_of(i),
                    format!(
                        "[cgroup.\"{}\"]: `cpus` = {} reaches into partition `{}` (CPUs {}), which takes them \
                         from every group outside it; leave them out",
                        g.name,
                        cpus.to_cpulist(),
                        p.name,
                        theirs.to_cpulist()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A thread's `cgroup = "NAME"`: the index of its table.
pub(crate) fn resolve(ctx: Ctx, cgroups: &[CgroupSpec], at: &Spanned<String>) -> Result<usize, InputError> {
    let name = at.get_ref().trim_matches('/');
    cgroups.iter().position(|c| c.name == name).ok_or_else(|| {
        let known: Vec<&str> = cgroups.iter().map(|c| c.name.as_str()).collect();
        let hint = if known.is_empty() {
            "the file has no [cgroup.NAME] tables".to_string()
        } else {
            format!("known: {}", known.join(", "))
        };
        ctx.err(at, format!("`cgroup` = \"{}\": no [cgroup.\"{name}\"] table ({hint})", at.get_ref()))
    })
}

/// The target of a thread's `cgroup` move (`"/"`: the run's own group).
/// Refused: a session thread (autogroups are for threads in no cpu group),
/// and a move into or out of a cpuset (the kernel's `cpuset_attach()` would
/// change the thread's affinity mid-run, which schedlab does not follow yet).
pub(crate) fn move_target(
    ctx: Ctx,
    at: usize,
    path: &str,
    cgroups: &[CgroupSpec],
    from: Option<(usize, usize)>,
    in_session: bool,
    thread: &str,
) -> Result<Option<usize>, InputError> {
    if in_session {
        return Err(ctx.at(
            at,
            format!(
                "thread `{thread}` runs in a session and moves to a cgroup: a session's threads get their \
                 autogroup only outside cpu cgroups, so the two are not combined"
            ),
        ));
    }
    let to = match path.trim() {
        "/" => None,
        name => Some(cgroups.iter().position(|c| c.name == name.trim_matches('/')).ok_or_else(|| {
            let known: Vec<&str> = cgroups.iter().map(|c| c.name.as_str()).collect();
            let hint = if known.is_empty() {
                "the file has no [cgroup.NAME] tables".to_string()
            } else {
                format!("known: {}, or \"/\" for none", known.join(", "))
            };
            ctx.at(at, format!("`cgroup` = \"{path}\": no [cgroup.\"{}\"] table ({hint})", name.trim_matches('/')))
        })?),
    };
    if partitions(cgroups).next().is_some() {
        // Any superset of the machine serves: both sides are cut from the same one.
        let all = CpuSet::first_n(MAX_CPUS);
        let (a, b) = (cpus_of(cgroups, from.map(|(c, _)| c), &all), cpus_of(cgroups, to, &all));
        if a != b {
            return Err(ctx.at(
                at,
                format!(
                    "thread `{thread}` moves across a cpuset partition (`{}` to `{}`): the move would change the \
                     thread's CPUs mid-run (cpuset_attach), which schedlab does not follow yet",
                    from.map_or("/", |(c, _)| cgroups[c].name.as_str()),
                    to.map_or("/", |c| cgroups[c].name.as_str()),
                ),
            ));
        }
    }
    for (end, which) in [(from.map(|(c, _)| c), "from"), (to, "into")] {
        if let Some(c) = end.filter(|&c| effective_cpus(cgroups, c).is_some()) {
            return Err(ctx.at(
                at,
                format!(
                    "thread `{thread}` moves {which} cgroup `{}`, which has a cpuset: the move would change the \
                     thread's CPUs mid-run (cpuset_attach), which schedlab does not follow yet; move only between \
                     groups without `cpus`",
                    cgroups[c].name
                ),
            ));
        }
    }
    Ok(to)
}

/// A `[cgroup]` table that no thread runs in, at or below it, is refused.
pub(crate) fn unused(
    ctx: Ctx,
    table: &BTreeMap<Spanned<String>, Spanned<RawCgroup>>,
    cgroups: &[CgroupSpec],
    threads_in: impl Iterator<Item = usize>,
) -> Result<(), InputError> {
    let mut used = vec![false; cgroups.len()];
    for c in threads_in {
        let mut at = Some(c);
        while let Some(k) = at {
            used[k] = true;
            at = cgroups[k].parent;
        }
    }
    for ((key, _), used) in table.iter().zip(used) {
        if !used {
            let name = key.get_ref();
            return Err(ctx.err(
                key,
                format!("[cgroup.\"{name}\"]: no thread runs in it (set `cgroup = \"{name}\"` on a [[thread]])"),
            ));
        }
    }
    Ok(())
}

/// `asked ∩ cpuset`, as `sched_setaffinity()` intersects a mask with the
/// task's cpuset; an empty intersection is its EINVAL.
pub(crate) fn within_cpuset(
    ctx: Ctx,
    at: usize,
    asked: &CpuSet,
    cpuset: &CpuSet,
    key: &str,
    cgroups: &[CgroupSpec],
    cgroup: Option<(usize, usize)>,
) -> Result<CpuSet, InputError> {
    let both = asked.and(cpuset);
    if both.is_empty() {
        let whose = match cgroup {
            Some((c, _)) => format!("cgroup `{}`'s cpus", cgroups[c].name),
            None => "the CPUs the partitions leave to the run's own group,".to_string(),
        };
        return Err(ctx.at(
            at,
            format!(
                "`{key}` {} shares no CPU with {whose} {}: sched_setaffinity() would fail with EINVAL",
                asked.to_cpulist(),
                cpuset.to_cpulist()
            ),
        ));
    }
    Ok(both)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(weight: Option<u32>) -> CgroupSpec {
        CgroupSpec {
            name: "g".into(),
            parent: None,
            weight,
            max: None,
            cpus: None,
            idle: false,
            partition: None,
            line: 1,
        }
    }

    #[test]
    fn v1_shares_follow_the_kernels_weight_conversion() {
        assert_eq!(spec(None).shares(), 1024);
        assert_eq!(spec(Some(300)).shares(), 3072);
        assert_eq!(spec(Some(1)).shares(), 10, "1024/100 rounded to the closest");
        assert_eq!(spec(Some(10_000)).shares(), 102_400);
    }

    #[test]
    fn the_nearest_cpuset_up_the_path_applies() {
        let mut a = spec(None);
        a.cpus = Some(CpuSet::first_n(2));
        let b = CgroupSpec { name: "g/b".into(), parent: Some(0), ..spec(None) };
        let c = CgroupSpec { name: "g/b/c".into(), parent: Some(1), cpus: Some(CpuSet::single(1)), ..spec(None) };
        let all = [a, b, c];
        assert_eq!(effective_cpus(&all, 1), Some(CpuSet::first_n(2)));
        assert_eq!(effective_cpus(&all, 2), Some(CpuSet::single(1)));
        assert_eq!(effective_cpus(&all[..1], 0), Some(CpuSet::first_n(2)));
        assert_eq!(effective_cpus(&[spec(None)], 0), None);
    }
}
