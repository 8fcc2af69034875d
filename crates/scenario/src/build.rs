//! From the file schema to a [`Scenario`]: defaults, ranges, instance
//! expansion, object interning and `{*}` resolution.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use schedlab_topology::{CpuSet, InputError, Topology};
use toml::Spanned;

use crate::file::RawScenario;
use crate::validate::{self, OpSite, ThreadSites};
use crate::values::{self, Ctx, Zero};
use crate::Background;
use crate::{ObjId, ObjKind, ObjRef, ObjectSpec, Op, Policy, Program, Repeat, Scenario, Spanned as Pos, ThreadSpec};

mod names;
mod op_table;
mod thread_table;
use names::{expand_i, flag_names, star_matches, thread_names, Name};
use op_table::OpT;
use thread_table::group;
use thread_table::{policy, sched_params};

/// Kernel `TASK_COMM_LEN` minus the terminating NUL.
pub const MAX_COMM: usize = 15;
/// Most instances one `[[thread]]` table may ask for.
pub const MAX_INSTANCES: i64 = 1024;
/// Custom slice bounds (`sched_attr.sched_runtime` for fair tasks, 6.12+).
pub const MIN_SLICE_NS: u64 = 100_000;
pub const MAX_SLICE_NS: u64 = 100_000_000;
/// Kernel profile used when the file names none.
pub const DEFAULT_KERNEL: &str = "6.12";
/// Handoff that counts as a stall when the file names none (seed 000).
pub const DEFAULT_STALL_NS: u64 = 500_000;
/// The fair server's runtime per 1 s period on a stock kernel (deadline.c).
pub const DEFAULT_FAIR_SERVER_RUNTIME_NS: u64 = 50_000_000;
/// The fair server's period; its runtime must fit in it.
pub const FAIR_SERVER_PERIOD_NS: u64 = 1_000_000_000;

/// `sched_dl_global_validate()`'s EBUSY rule: RT bandwidth
/// (`sched_rt_runtime_us`, -1 = unlimited) may not drop below what the fair
/// servers (`fair_server_runtime`, default 50 ms per period) already hold.
/// Returns the fair servers' µs per period when the pair is refused.
pub fn rt_runtime_below_fair_servers(sched_rt_runtime_us: i64, fair_server_runtime_ns: Option<u64>) -> Option<u64> {
    let fair_us = fair_server_runtime_ns.unwrap_or(DEFAULT_FAIR_SERVER_RUNTIME_NS) / 1_000;
    (sched_rt_runtime_us >= 0 && (sched_rt_runtime_us as u64) < fair_us).then_some(fair_us)
}
pub const DEFAULT_SEED: u64 = 1;
/// `init_task.timer_slack_ns`: 50 us, what every fair task inherits.
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;
const MAX_TIMER_SLACK_NS: u64 = 1_000_000_000;

struct Group {
    /// rt-app log rows (see [`Program::rows`]).
    rows: Vec<usize>,
    name: String,
    name_at: usize,
    instances: u32,
    policy: Policy,
    nice: i32,
    rt_priority: u32,
    slice_ns: Option<u64>,
    timer_slack_ns: u64,
    dl: Option<crate::DlSpec>,
    uclamp: Option<crate::UclampSpec>,
    affinity: CpuSet,
    start_cpu: Option<usize>,
    delay_ns: u64,
    /// Its `[cgroup]` and where `cgroup` was written.
    cgroup: Option<(usize, usize)>,
    /// Its session's name and where it was written.
    session: Option<(String, usize)>,
    instances_at: Option<usize>,
    start_cpu_at: Option<usize>,
    delay_at: Option<usize>,
    repeat: Repeat,
    repeat_at: Option<usize>,
    ops: Vec<(OpT, usize)>,
    line: usize,
}

impl Group {
    /// The thread `name` (instance `instance`) of this table, running `ops`.
    fn spec(&self, name: String, instance: u32, ops: Vec<Op>) -> ThreadSpec {
        ThreadSpec {
            name,
            group: self.name.clone(),
            instance,
            policy: self.policy,
            nice: self.nice,
            rt_priority: self.rt_priority,
            slice_ns: self.slice_ns,
            timer_slack_ns: self.timer_slack_ns,
            dl: self.dl,
            uclamp: self.uclamp,
            affinity: self.affinity,
            start_cpu: self.start_cpu,
            start_delay_ns: self.delay_ns,
            cgroup: self.cgroup.map(|(c, _)| c),
            session: None,
            program: Program { ops, repeat: self.repeat, rows: self.rows.clone() },
            line: self.line,
        }
    }
}

pub(crate) fn build(
    ctx: Ctx,
    raw: RawScenario,
    base_dir: &Path,
    topology: Option<Topology>,
) -> Result<Scenario, InputError> {
    let name = match &raw.name {
        Some(n) if n.get_ref().trim().is_empty() => return Err(ctx.err(n, "`name` is empty")),
        Some(n) => n.get_ref().clone(),
        None => Path::new(ctx.path).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
    };
    let description = raw.description.as_ref().map(|d| d.get_ref().clone()).unwrap_or_default();
    let duration_ns = match &raw.duration {
        Some(d) => Some(values::duration(ctx, d, "duration", Zero::Refused)?),
        None => None,
    };
    let seed = match &raw.seed {
        Some(s) if *s.get_ref() < 0 => {
            return Err(ctx.err(s, format!("`seed` = {}: expected a non-negative integer", s.get_ref())))
        }
        Some(s) => *s.get_ref() as u64,
        None => DEFAULT_SEED,
    };
    let stall_threshold_ns = match &raw.stall_threshold {
        Some(d) => values::duration(ctx, d, "stall_threshold", Zero::Refused)?,
        None => DEFAULT_STALL_NS,
    };
    let background = match &raw.background {
        None => Background::Quiet,
        Some(b) => match b.get_ref().as_str() {
            "quiet" => Background::Quiet,
            "kernel" => Background::Kernel,
            other => return Err(ctx.err(b, format!("unknown background `{other}` (expected \"quiet\" or \"kernel\")"))),
        },
    };
    let fair_server_runtime_ns = match &raw.fair_server_runtime {
        Some(d) => {
            let ns = values::duration(ctx, d, "fair_server_runtime", Zero::Allowed)?;
            if ns > FAIR_SERVER_PERIOD_NS {
                return Err(ctx.err(d, "fair_server_runtime must fit its 1 s period (expected 0 to 1s)"));
            }
            Some(ns)
        }
        None => None,
    };
    // /proc/sys/kernel/sched_rt_runtime_us: -1 or 0..=period (1 s), as
    // sched_rt_global_validate() accepts; and, as sched_dl_global_validate()
    // checks, not below the deadline bandwidth the fair servers already hold.
    let sched_rt_runtime_us = match &raw.sched_rt_runtime_us {
        Some(v) => {
            let us = values::int_in(ctx, v, "sched_rt_runtime_us", -1, 1_000_000, "-1 (no limit) or 0 to 1000000 µs")?;
            if let Some(fair_us) = rt_runtime_below_fair_servers(us, fair_server_runtime_ns) {
                return Err(ctx.err(
                    v,
                    format!(
                        "sched_rt_runtime_us = {us} is below the fair servers' {fair_us} µs per 1 s period; \
                         the kernel refuses this write with EBUSY (lower fair_server_runtime first)"
                    ),
                ));
            }
            Some(us)
        }
        None => None,
    };
    let kernel_profile = match &raw.kernel {
        Some(k) => ctx.pos(k),
        None => Pos { value: DEFAULT_KERNEL.to_string(), line: 0, col: 0 },
    };
    let features = raw.features.as_ref().map(|f| f.iter().map(|s| ctx.pos(s)).collect()).unwrap_or_default();

    let (topology_ref, topology) = match topology {
        Some(t) => (t.name.clone(), t),
        None => {
            let r = &raw.topology;
            let t = Topology::resolve(r.get_ref(), base_dir).map_err(|e| {
                if e.line == 0 {
                    ctx.err(r, format!("`topology` = \"{}\": {}", r.get_ref(), e.message))
                } else {
                    e
                }
            })?;
            (r.get_ref().clone(), t)
        }
    };

    let no_threads = Spanned::new(0..0, Vec::new());
    let threads_raw = match &raw.thread {
        Some(t) if !t.get_ref().is_empty() => t,
        None if raw.schbench.is_some() => &no_threads,
        Some(t) => return Err(ctx.err(t, "no threads: expected at least one [[thread]] table")),
        None => return Err(ctx.at(0, "no threads: expected at least one [[thread]] table")),
    };
    let cgroups = match &raw.cgroup {
        Some(table) => crate::cgroup::cgroups(ctx, table, &topology)?,
        None => Vec::new(),
    };
    let mut groups = Vec::new();
    for t in threads_raw.get_ref() {
        groups.push(group(ctx, t, &topology, &cgroups)?);
    }
    if let Some(table) = &raw.cgroup {
        let moved_to = groups.iter().flat_map(|g| {
            g.ops.iter().filter_map(|(op, _)| match op {
                OpT::SetCgroup(c) => *c,
                _ => None,
            })
        });
        crate::cgroup::unused(
            ctx,
            table,
            &cgroups,
            groups.iter().filter_map(|g| g.cgroup.map(|(c, _)| c)).chain(moved_to),
        )?;
    }

    let started: usize = groups.iter().map(|g| g.instances as usize).sum();
    if started > crate::MAX_THREADS {
        return Err(ctx.err(
            threads_raw,
            format!(
                "the [[thread]] tables start {started} threads in all, more than the {} a scenario may start \
                 (a limit of schedlab's, see MAX_THREADS): lower some `instances`",
                crate::MAX_THREADS
            ),
        ));
    }
    let comms = thread_names(ctx, &groups)?;
    let flag_names = flag_names(&groups);
    let forked = fork_targets(ctx, &groups, &cgroups)?;

    let mut objects = Objects::default();
    let mut threads = Vec::new();
    let mut sites = Vec::new();
    let mut sessions: Vec<crate::SessionSpec> = Vec::new();
    let mut session_at: Vec<Option<usize>> = Vec::new();
    for (g, comm) in groups.iter().flat_map(|g| (0..g.instances).map(move |i| (g, i))).zip(comms) {
        let (g, i) = g;
        let (ops, op_sites) = program(ctx, g, Some(i), &flag_names, &forked, &mut objects)?;
        sites.push(ThreadSites { ops: op_sites, repeat_at: g.repeat_at, name_at: g.name_at });
        let mut spec = g.spec(comm, i, ops);
        if let Some((name, at)) = &g.session {
            spec.session = Some(sessions.iter().position(|s| &s.name == name).unwrap_or_else(|| {
                sessions.push(crate::SessionSpec { name: name.clone(), nice: 0 });
                sessions.len() - 1
            }));
            session_at.push(Some(*at));
        } else {
            session_at.push(None);
        }
        threads.push(spec);
    }

    // One template per forked table, in the order fork_targets found them.
    let mut templates = Vec::new();
    let mut template_sites = Vec::new();
    for name in forked.keys_in_order() {
        let g = groups.iter().find(|g| &g.name == name).expect("fork_targets checked the name");
        let (ops, op_sites) = program(ctx, g, None, &flag_names, &forked, &mut objects)?;
        template_sites.push(ThreadSites { ops: op_sites, repeat_at: g.repeat_at, name_at: g.name_at });
        // fork_targets refused a start_cpu on it; its copies are numbered on
        // from the table's instances.
        templates.push(g.spec(g.name.clone(), g.instances, ops));
    }

    // The [schbench] generator's threads follow the [[thread]] tables.
    let schbench = match &raw.schbench {
        Some(t) => {
            let at = t.span().start;
            let first = threads.len();
            let mut intern = |name: &str, kind| objects.intern(ctx, name, kind, "schbench", at);
            let (spec, extra) = crate::schbench::expand(ctx, t, &topology, first, &mut intern)?;
            // By name, not by scanning: [schbench] adds up to MAX_THREADS.
            let by_name: std::collections::HashMap<&str, usize> =
                threads.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
            let clash = extra.iter().find_map(|th| by_name.get(th.name.as_str()).map(|&i| (th.name.clone(), i)));
            if let Some((name, i)) = clash {
                return Err(ctx.at(
                    at,
                    format!("[schbench] names a thread `{name}`, which thread `{}` already has", threads[i].group),
                ));
            }
            for th in extra {
                let op_sites = vec![OpSite { at, name: None, binding: None }; th.program.ops.len()];
                sites.push(ThreadSites { ops: op_sites, repeat_at: None, name_at: at });
                threads.push(th);
            }
            Some(spec)
        }
        None => None,
    };
    let duration_ns = duration_ns.or(schbench.as_ref().map(|s| s.runtime_ns));
    if let (Some(b), Background::Kernel, None) = (&raw.background, background, duration_ns) {
        // Its kworkers and the watchdog never finish, so the run would not end.
        return Err(ctx.err(
            b,
            format!(
                "background = \"kernel\" runs per-CPU kworkers and the watchdog forever, but the scenario has \
                 no `duration`, so it could never finish: add e.g. {}",
                ctx.duration_hint()
            ),
        ));
    }

    if let Some(table) = &raw.mutex {
        for (key, opts) in table {
            let id = match objects.index.get(key.get_ref()) {
                Some(id) => *id as usize,
                None => {
                    return Err(ctx.err(key, format!("[mutex.{}]: no thread locks a mutex of that name", key.get_ref())))
                }
            };
            match &mut objects.specs[id].kind {
                ObjKind::Mutex { pi } => *pi = opts.get_ref().pi.as_ref().is_some_and(|p| *p.get_ref()),
                other => {
                    return Err(ctx.err(
                        key,
                        format!("[mutex.{}]: `{}` is {}, not a mutex", key.get_ref(), key.get_ref(), kind_name(other)),
                    ))
                }
            }
        }
    }

    if let Some(table) = &raw.session {
        crate::session::options(ctx, table, &mut sessions)?;
    }
    let measures = match &raw.measure {
        Some(m) => crate::measure::measures(ctx, m, &threads, |name| objects.index.get(name).copied())?,
        None => Vec::new(),
    };

    let scenario = Scenario {
        path: ctx.path.to_string(),
        name,
        description,
        duration_ns,
        seed,
        topology_ref,
        topology,
        kernel_profile,
        features,
        stall_threshold_ns,
        background,
        fair_server_runtime_ns,
        sched_rt_runtime_us,
        objects: objects.specs,
        cgroups,
        sessions,
        autogroup: raw.autogroup.as_ref().map(|a| ctx.pos(a)),
        threads,
        templates,
        measures,
        schbench,
        notes: Vec::new(),
        rtapp_log_basename: None,
    };
    crate::session::check(ctx, &scenario, &sites, &session_at)?;
    if scenario.templates.is_empty() {
        validate::check(ctx, &scenario, &sites)?;
    } else {
        // A forked thread's posts and signals feed the others' waits, and
        // its locks join the lock order: check them as threads.
        let mut all = scenario.clone();
        all.threads.extend(all.templates.iter().cloned());
        sites.extend(template_sites);
        validate::check(ctx, &all, &sites)?;
    }
    Ok(scenario)
}

/// The tables `fork` ops name, in the order first named, each with its
/// index in [`Scenario::templates`].
struct ForkTargets(Vec<String>);

impl ForkTargets {
    fn index(&self, name: &str) -> Option<u32> {
        self.0.iter().position(|n| n == name).map(|i| i as u32)
    }
    fn keys_in_order(&self) -> impl Iterator<Item = &String> {
        self.0.iter()
    }
}

/// Check every `fork` names a table, and every `instances = 0` table is
/// forked (else it would never run).
fn fork_targets(ctx: Ctx, groups: &[Group], cgroups: &[crate::CgroupSpec]) -> Result<ForkTargets, InputError> {
    let mut names: Vec<String> = Vec::new();
    for g in groups {
        for (op, _) in &g.ops {
            if let OpT::Fork(name, at) = op {
                if !groups.iter().any(|t| &t.name == name) {
                    let known: Vec<&str> = groups.iter().map(|t| t.name.as_str()).collect();
                    return Err(ctx.at(
                        *at,
                        format!(
                            "`fork` = \"{name}\": no [[thread]] table has that name (tables: {})",
                            known.join(", ")
                        ),
                    ));
                }
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
    }
    for g in groups {
        let forked = names.contains(&g.name);
        if g.instances == 0 && !forked {
            return Err(ctx.at(
                g.instances_at.unwrap_or(g.name_at),
                format!(
                    "thread `{}` has instances = 0, so only a `fork` could start it, and no `fork` names it",
                    g.name
                ),
            ));
        }
        if !forked {
            continue;
        }
        if let Some(at) = g.delay_at {
            return Err(ctx.at(
                at,
                format!(
                    "thread `{}` is forked, and a forked thread starts when its `fork` runs: `delay` applies \
                     only to threads created at the start (put a `sleep` first in its program)",
                    g.name
                ),
            ));
        }
        if let Some((_, at)) = &g.session {
            return Err(ctx.at(
                *at,
                format!(
                    "thread `{}` is forked, and a forked thread runs in its forker's process: `session` applies \
                     only to threads created at the start",
                    g.name
                ),
            ));
        }
        // A forked thread starts in its forker's cgroup and joins its own
        // table's as its first step (rt-app's set_thread_taskgroup()); into
        // a cpuset that would change its CPUs, which is not followed yet.
        if let Some((c, at)) = g.cgroup.filter(|&(c, _)| crate::cgroup::effective_cpus(cgroups, c).is_some()) {
            return Err(ctx.at(
                at,
                format!(
                    "thread `{}` is forked and its cgroup `{}` has a cpuset: the forked thread joins it after it \
                     starts, which would change its CPUs mid-run (cpuset_attach), not followed yet",
                    g.name, cgroups[c].name
                ),
            ));
        }
        if let Some(at) = g.start_cpu_at {
            return Err(ctx.at(
                at,
                format!(
                    "thread `{}` is forked, and a forked thread starts where fork balancing puts it: \
                     `start_cpu` applies only to threads created at the start",
                    g.name
                ),
            ));
        }
        for (op, at) in &g.ops {
            if matches!(op, OpT::Barrier(_)) {
                return Err(ctx.at(
                    *at,
                    format!(
                        "thread `{}` is forked, and a barrier counts its users when the file is read, \
                         which forked threads are not (rt-app refuses `barrier` with `fork` too)",
                        g.name
                    ),
                ));
            }
        }
    }
    Ok(ForkTargets(names))
}

#[derive(Default)]
struct Objects {
    specs: Vec<ObjectSpec>,
    index: HashMap<String, ObjId>,
    first: Vec<(usize, &'static str)>,
}

fn kind_name(k: &ObjKind) -> &'static str {
    match k {
        ObjKind::Eventfd => "an eventfd",
        ObjKind::Futex => "a futex",
        ObjKind::Flag => "a flag",
        ObjKind::Mutex { .. } => "a mutex",
        ObjKind::WakeList => "a wake list",
        ObjKind::CpuLocks => "a per-CPU lock array",
        ObjKind::Cond => "a condition variable",
        ObjKind::Barrier { .. } => "a barrier",
        ObjKind::Timer => "a timer",
    }
}

impl Objects {
    fn intern(
        &mut self,
        ctx: Ctx,
        name: &str,
        kind: ObjKind,
        op: &'static str,
        at: usize,
    ) -> Result<ObjId, InputError> {
        if let Some(&id) = self.index.get(name) {
            let have = &self.specs[id as usize].kind;
            if std::mem::discriminant(have) != std::mem::discriminant(&kind) {
                let (first_at, first_op) = self.first[id as usize];
                return Err(ctx.at(
                    at,
                    format!(
                        "`{name}` is used as {} here (`{op}`) but as {} at line {} (`{first_op}`); an object has one kind",
                        kind_name(&kind),
                        kind_name(have),
                        ctx.line_of(first_at)
                    ),
                ));
            }
            return Ok(id);
        }
        let id = self.specs.len() as ObjId;
        self.specs.push(ObjectSpec { name: name.to_string(), kind });
        self.index.insert(name.to_string(), id);
        self.first.push((at, op));
        Ok(id)
    }
}

/// The last `poll` with a `{*}` pattern: its op index and the indices it matched.
struct Binding {
    poll: usize,
    indices: Vec<String>,
}

/// Build one instance's ops, resolving names to objects; `instance` is
/// `None` for a fork template, whose copies share one program, so `{i}`
/// is refused in it.
fn program(
    ctx: Ctx,
    g: &Group,
    instance: Option<u32>,
    flags: &BTreeSet<String>,
    forked: &ForkTargets,
    objects: &mut Objects,
) -> Result<(Vec<Op>, Vec<OpSite>), InputError> {
    if instance.is_none() {
        if let Some((at, text)) = template_instance_use(g) {
            let why = if text.contains("/unique") {
                // The rt-app front end names a task's `unique` timers per instance.
                "a timer of each forked copy's own (rt-app's `unique`) is not modeled: give the timer a `ref` \
                 the copies share"
                    .to_string()
            } else {
                "its forked copies share one program, so `{i}` has no value there (name the objects without it)"
                    .to_string()
            };
            return Err(ctx.at(at, format!("thread `{}` is forked, and {why}", g.name)));
        }
    }
    if instance.is_none() {
        if let Some((_, at)) = g.ops.iter().find(|(op, _)| matches!(op, OpT::GridTimer(_, None, _))) {
            return Err(ctx.at(
                *at,
                format!(
                    "thread `{}` is forked, and a timer grid of each forked copy's own (rt-app's `unique`) is not \
                     modeled: give the timer a `ref` the copies share",
                    g.name
                ),
            ));
        }
    }
    let instance = instance.unwrap_or(g.instances);
    let mut ops = Vec::new();
    let mut sites = Vec::new();
    let mut binding: Option<Binding> = None;
    for (k, (op, at)) in g.ops.iter().enumerate() {
        let mut site = OpSite { at: *at, name: None, binding: None };
        let mut resolve = |n: &Name,
                           kind: ObjKind,
                           opname: &'static str,
                           site: &mut OpSite|
         -> Result<ObjRef, InputError> {
            let text = expand_i(&n.text, instance);
            site.name = Some(text.clone());
            match text.split_once("{*}") {
                None => Ok(ObjRef::Fixed(objects.intern(ctx, &text, kind, opname, n.at)?)),
                Some((pre, suf)) => {
                    let Some(b) = &binding else {
                        return Err(ctx.at(
                            n.at,
                            format!(
                                "`{}` uses `{{*}}`, but no `poll` with a `{{*}}` pattern comes before it in this iteration of the program",
                                n.text
                            ),
                        ));
                    };
                    site.binding = Some(b.poll);
                    let ids = b
                        .indices
                        .iter()
                        .map(|ix| objects.intern(ctx, &format!("{pre}{ix}{suf}"), kind, opname, n.at))
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(ObjRef::ByPolled(ids))
                }
            }
        };
        let built = match op {
            OpT::Run(ns) => Op::Run { ns: *ns },
            OpT::Sleep(ns) => Op::Sleep { ns: *ns },
            OpT::Timer(ns) => Op::Timer { period_ns: *ns },
            OpT::Wait(n) => Op::Wait { efd: resolve(n, ObjKind::Eventfd, "wait", &mut site)? },
            OpT::Signal(n, count) => {
                Op::Signal { efd: resolve(n, ObjKind::Eventfd, "signal", &mut site)?, count: *count }
            }
            OpT::FutexWait(n) => Op::FutexWait { futex: resolve(n, ObjKind::Futex, "fwait", &mut site)? },
            OpT::FutexPost(n) => Op::FutexPost { futex: resolve(n, ObjKind::Futex, "fpost", &mut site)? },
            OpT::Post(n) => Op::Post { flag: resolve(n, ObjKind::Flag, "post", &mut site)? },
            OpT::Lock(n) => Op::Lock { mutex: resolve(n, ObjKind::Mutex { pi: false }, "lock", &mut site)? },
            OpT::Unlock(n) => Op::Unlock { mutex: resolve(n, ObjKind::Mutex { pi: false }, "unlock", &mut site)? },
            OpT::Yield => Op::Yield,
            OpT::RunWall(ns) => Op::RunWall { ns: *ns },
            OpT::GridTimer(period_ns, n, mode) => {
                let timer = match n {
                    Some(n) => fixed(resolve(n, ObjKind::Timer, "timer", &mut site)?, ctx, n, "timer")?,
                    // rt-app's "unique": a grid of this thread's own.
                    None => {
                        objects.intern(ctx, &format!("{}-{instance}/timer", g.name), ObjKind::Timer, "timer", *at)?
                    }
                };
                Op::GridTimer { timer, period_ns: *period_ns, mode: *mode }
            }
            OpT::CondWait(c, m) => {
                let cond = resolve(c, ObjKind::Cond, "cond_wait", &mut site)?;
                let mutex = resolve(m, ObjKind::Mutex { pi: false }, "cond_wait", &mut site)?;
                site.name = Some(expand_i(&m.text, instance));
                Op::CondWait { cond, mutex }
            }
            OpT::CondSignal(c) => Op::CondSignal { cond: resolve(c, ObjKind::Cond, "cond_signal", &mut site)? },
            OpT::CondBroadcast(c) => {
                Op::CondBroadcast { cond: resolve(c, ObjKind::Cond, "cond_broadcast", &mut site)? }
            }
            OpT::Barrier(n) => {
                let r = resolve(n, ObjKind::Barrier { users: 0 }, "barrier", &mut site)?;
                let barrier = fixed(r, ctx, n, "barrier")?;
                if let ObjKind::Barrier { users } = &mut objects.specs[barrier as usize].kind {
                    *users = users.saturating_add(1);
                }
                Op::Barrier { barrier }
            }
            OpT::SetAffinity(cpus) => Op::SetAffinity { cpus: *cpus },
            OpT::SetScheduler(policy, nice, rt_priority) => {
                Op::SetScheduler { policy: *policy, nice: *nice, rt_priority: *rt_priority }
            }
            OpT::SetPriority(nice) => Op::SetPriority { nice: *nice },
            OpT::SetCgroup(cgroup) => Op::SetCgroup { cgroup: *cgroup },
            OpT::CgroupName(_) => unreachable!("build::group resolves every cgroup move"),
            OpT::Fork(name, _) => Op::Fork { template: forked.index(name).expect("fork_targets saw every fork") },
            OpT::Poll(names, after_ns) => {
                let first = expand_i(&names[0].text, instance);
                site.name = Some(first.clone());
                let (names, new_binding) = match first.split_once("{*}") {
                    Some((pre, suf)) => {
                        let indices = star_matches(pre, suf, flags);
                        if indices.is_empty() {
                            return Err(ctx.at(
                                names[0].at,
                                format!(
                                    "`{first}` matches no flag: no thread posts or polls a flag named `{pre}N{suf}` (N = 0, 1, ...)"
                                ),
                            ));
                        }
                        let names = indices.iter().map(|ix| format!("{pre}{ix}{suf}")).collect();
                        (names, Some(Binding { poll: k, indices }))
                    }
                    None => (names.iter().map(|n| expand_i(&n.text, instance)).collect::<Vec<_>>(), None),
                };
                // Any poll rebinds: ByPolled operands follow the last poll's match.
                binding = new_binding;
                let ids = names
                    .iter()
                    .map(|n| objects.intern(ctx, n, ObjKind::Flag, "poll", *at))
                    .collect::<Result<Vec<_>, _>>()?;
                Op::Poll { flags: ids, after_ns: *after_ns }
            }
        };
        ops.push(built);
        sites.push(site);
    }
    Ok((ops, sites))
}

/// Where a table's program uses `{i}` in an object name, and the name.
fn template_instance_use(g: &Group) -> Option<(usize, &str)> {
    g.ops.iter().find_map(|(op, _)| {
        let names: Vec<&Name> = match op {
            OpT::Wait(n)
            | OpT::Signal(n, _)
            | OpT::Post(n)
            | OpT::Lock(n)
            | OpT::Unlock(n)
            | OpT::CondSignal(n)
            | OpT::CondBroadcast(n)
            | OpT::Barrier(n) => vec![n],
            OpT::CondWait(c, m) => vec![c, m],
            OpT::GridTimer(_, n, _) => n.iter().collect(),
            OpT::Poll(ns, _) => ns.iter().collect(),
            _ => vec![],
        };
        names.into_iter().find(|n| n.text.contains("{i}")).map(|n| (n.at, n.text.as_str()))
    })
}

/// An operand that must name one object: `{*}` is refused.
fn fixed(r: ObjRef, ctx: Ctx, n: &Name, op: &str) -> Result<ObjId, InputError> {
    match r {
        ObjRef::Fixed(id) => Ok(id),
        ObjRef::ByPolled(_) => Err(ctx.at(n.at, format!("`{op}` takes one object: `{}` cannot use `{{*}}`", n.text))),
    }
}

/// `1500000` → `1.5ms`, for messages.
pub(crate) fn fmt_ns(ns: u64) -> String {
    let (unit, div) = match ns {
        n if n >= 1_000_000_000 => ("s", 1e9),
        n if n >= 1_000_000 => ("ms", 1e6),
        n if n >= 1_000 => ("us", 1e3),
        _ => ("ns", 1.0),
    };
    let v = ns as f64 / div;
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_briefly() {
        assert_eq!(fmt_ns(1_500_000), "1.5ms");
        assert_eq!(fmt_ns(50_000), "50us");
        assert_eq!(fmt_ns(200_000_000), "200ms");
        assert_eq!(fmt_ns(999), "999ns");
        assert_eq!(fmt_ns(30_000_000_000), "30s");
    }
}
