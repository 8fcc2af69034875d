//! rt-app's JSON workload files as scenarios.
//!
//! The file is read as rt-app reads it (json-c through its own grammar,
//! `src/rt-app_parse_config.c`): comments are allowed, keys keep their order,
//! and a key written twice in one object is one entry, at the first key's
//! place, holding the last value: json-c replaces the value in place, so
//! rt-app never sees the earlier one (Debian's `mp3-short.json` writes `run`
//! twice in one task; rt-app runs 4725 us, not 275 + 4725). Each such key
//! gets a note; rt-app's `workgen` preprocessor numbers duplicate events to
//! keep them all, and so can the file (`run0`, `run1`). An event is recognised by the prefix
//! of its key, tested in rt-app's order (`runtime1` is a `runtime`, `run2`
//! a `run`). Where rt-app 1.0 (Debian's binary) and master differ, master's
//! grammar wins for what 1.0 lacks (per-phase `policy`/`priority`, a
//! task-level `loop` that ends the task) and 1.0's for what master dropped
//! (`suspend` names the condition it waits on); docs/rtapp.md lists them.
//!
//! The result is the same raw scenario a TOML file gives, with spans that are
//! byte offsets in the JSON text, so every error the builder finds is located
//! in the JSON file. What the model cannot do (`mem`, `iorun`,
//! semaphores, per-phase uclamp, NUMA binding) is refused
//! at the key that asks for it; keys rt-app would silently ignore are refused
//! too, as they are usually typos or the pre-1.0 grammar.

mod events;
mod json;

use std::collections::BTreeMap;
use std::path::Path;

use schedlab_topology::{InputError, Topology};
use toml::{Spanned, Value};

use crate::file::{RawMutex, RawOp, RawScenario, RawThread};
use crate::values::Ctx;
use crate::{build, Scenario};
use events::Phase;
use json::{Obj, Prop};

/// The topology a file without a `schedlab.topology` is modeled on.
pub(crate) const DEFAULT_TOPOLOGY: &str = "qemu-4";

/// How long a file runs whose tasks loop forever and whose `global` sets
/// no `duration` (rt-app runs it until interrupted).
pub(crate) const DEFAULT_DURATION_S: u64 = 10;

/// Operations one thread's program may hold once its phases and their
/// loops are written out (the scenario format has one loop per thread).
pub(crate) const MAX_FLAT_OPS: usize = 100_000;

/// Operations all threads' programs may hold together (each instance has
/// its own copy): about 32 MB, whatever a small file's loops and instances
/// multiply to.
pub(crate) const MAX_TOTAL_OPS: usize = 1_000_000;

/// Keys of `global` that configure rt-app itself (its logs, memory locking,
/// its own tracing and plots): accepted, and meaningless to the model.
const RTAPP_ONLY_GLOBALS: &[&str] =
    &["logdir", "log_basename", "log_size", "lock_pages", "ftrace", "gnuplot", "cumulative_slack", "frag"];

/// Whether `text` is JSON rather than TOML: its first character that is
/// not white space or inside a comment opens an object.
pub(crate) fn looks_like_json(text: &str) -> bool {
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else {
            return rest.starts_with('{');
        }
    }
}

/// Parse an rt-app JSON file into a scenario (see the module comment).
pub(crate) fn parse(
    path: &str,
    text: &str,
    base_dir: &Path,
    topology: Option<Topology>,
) -> Result<Scenario, InputError> {
    let lines = schedlab_topology::diag::LineIndex::new(text);
    let ctx = Ctx { path, text, lines: &lines, rtapp: true };
    let (root, replaced) = json::parse(ctx)?;
    let (raw, mut notes, basename) = translate(ctx, &root)?;
    let mut scenario = build::build(ctx, raw, base_dir, topology)?;
    notes.extend(replaced.iter().map(|r| replaced_note(ctx, r)));
    scenario.notes = notes;
    scenario.rtapp_log_basename = Some(basename);
    Ok(scenario)
}

/// What a reduced duplicate key means for the run, located in the file.
fn replaced_note(ctx: Ctx, r: &json::Replaced) -> String {
    // A value quoted when it is short, else named by its line.
    let value = |range: &std::ops::Range<usize>| {
        let text = &ctx.text[range.clone()];
        if text.len() <= 40 && !text.contains('\n') {
            text.to_string()
        } else {
            format!("the value at line {}", ctx.line_of(range.start))
        }
    };
    if ctx.text[r.kept.clone()] == ctx.text[r.dropped.clone()] {
        return format!(
            "{}:{}: `{key}` is written again, the same, at line {}; rt-app (json-c) keeps one `{key}` here, so it \
             happens once, not twice (to keep both, give them different names, e.g. `{key}0` and `{key}1`, as \
             rt-app's workgen does for events)",
            ctx.path,
            ctx.line_of(r.first_at),
            ctx.line_of(r.kept.start),
            key = r.key,
        );
    }
    format!(
        "{}:{}: `{key}` is written again at line {}; rt-app (json-c) keeps one `{key}` here holding the later \
         value ({}), so {} is never used (to keep both, give them different names, e.g. `{key}0` and `{key}1`, as \
         rt-app's workgen does for events)",
        ctx.path,
        ctx.line_of(r.first_at),
        ctx.line_of(r.kept.start),
        value(&r.kept),
        value(&r.dropped),
        key = r.key,
    )
}

/// rt-app's document → the raw scenario, plus the notes on what was read
/// differently and the log files' basename.
fn translate(ctx: Ctx, root: &Obj) -> Result<(RawScenario, Vec<String>, String), InputError> {
    for p in &root.props {
        if !matches!(p.key.as_str(), "global" | "tasks" | "resources" | "schedlab") {
            return Err(ctx.at(
                p.key_at,
                format!(
                    "`{}` is not an rt-app section: expected `tasks`, `global`, `resources`, or `schedlab` \
                     (schedlab's own settings)",
                    p.key
                ),
            ));
        }
    }
    let mut notes = Vec::new();
    let global = Global::read(ctx, root.get_object(ctx, "global")?, &mut notes)?;
    if let Some(res) = root.get("resources") {
        // Resources are created on first use: the section only names them.
        res.value.as_object(ctx, "resources")?;
    }
    let mut raw = RawScenario {
        name: None,
        description: None,
        duration: global.duration.clone(),
        seed: None,
        topology: Spanned::new(0..0, DEFAULT_TOPOLOGY.to_string()),
        kernel: None,
        features: None,
        stall_threshold: None,
        background: None,
        fair_server_runtime: None,
        sched_rt_runtime_us: None,
        autogroup: None,
        session: None,
        mutex: None,
        cgroup: None,
        thread: None,
        measure: None,
        schbench: None,
    };
    if let Some(own) = root.get_object(ctx, "schedlab")? {
        schedlab_section(ctx, own, &mut raw)?;
    }
    let Some(tasks_prop) = root.get("tasks") else {
        return Err(ctx.at(root.at, "no `tasks` section: rt-app needs at least one task"));
    };
    let tasks = tasks_prop.value.as_object(ctx, "tasks")?;
    if tasks.props.is_empty() {
        return Err(ctx.at(tasks_prop.key_at, "`tasks` is empty: rt-app needs at least one task"));
    }
    let mut threads = Vec::new();
    let mut all_ops: Vec<Vec<events::Op>> = Vec::new();
    let mut total = 0usize;
    for task in &tasks.props {
        let (thread, ops) = read_task(ctx, task, &global)?;
        let instances = thread.instances.as_ref().map_or(1, |i| (*i.get_ref()).clamp(1, crate::MAX_INSTANCES)) as usize;
        total = total.saturating_add(ops.len().saturating_mul(instances));
        if total > MAX_TOTAL_OPS {
            return Err(ctx.at(
                task.key_at,
                format!(
                    "task `{}`: {} operations x {instances} instances brings the threads' programs to {total} \
                     operations once phases and loops are written out, more than the {MAX_TOTAL_OPS} a scenario may \
                     hold",
                    task.key,
                    ops.len()
                ),
            ));
        }
        threads.push(thread);
        all_ops.push(ops);
    }
    let phase_groups = all_ops.iter().flatten().filter_map(|op| match op {
        events::Op::Cgroup(path) => Some(path),
        _ => None,
    });
    raw.cgroup = implied_cgroups(threads.iter().filter_map(|t| t.cgroup.as_ref()).chain(phase_groups));
    if raw.duration.is_none() {
        let endless: Vec<&str> = threads
            .iter()
            .filter(|t| matches!(t.repeat.as_ref().map(|r| r.get_ref()), Some(Value::Integer(-1))))
            .map(|t| t.name.get_ref().as_str())
            .collect();
        if !endless.is_empty() {
            notes.push(format!(
                "no global.duration, and {} loop forever: rt-app would run until interrupted; this run stops \
                 after {DEFAULT_DURATION_S} s (set global.duration, or --duration)",
                endless.join(", ")
            ));
            raw.duration = Some(Spanned::new(0..0, Value::String(format!("{DEFAULT_DURATION_S}s"))));
        }
    }
    let names = events::Names::resolve(&all_ops);
    let mut mutexes = BTreeMap::new();
    for ((thread, ops), task) in threads.iter_mut().zip(&all_ops).zip(&tasks.props) {
        let program: Vec<Spanned<RawOp>> = ops.iter().map(|op| names.raw_op(op)).collect();
        thread.program = Spanned::new(task.key_at..task.key_at, program);
    }
    if global.pi_enabled {
        for name in names.mutexes() {
            mutexes
                .insert(Spanned::new(0..0, name), Spanned::new(0..0, RawMutex { pi: Some(Spanned::new(0..0, true)) }));
        }
        raw.mutex = Some(mutexes);
    }
    let span = tasks_prop.key_at..tasks_prop.key_at;
    raw.thread = Some(Spanned::new(span, threads.into_iter().map(|t| Spanned::new(0..0, t)).collect()));
    Ok((raw, notes, global.log_basename))
}

/// What `global` holds that matters here.
struct Global {
    log_basename: String,
    duration: Option<Spanned<Value>>,
    default_policy: Option<Spanned<String>>,
    pi_enabled: bool,
}

impl Global {
    fn read(ctx: Ctx, g: Option<&Obj>, notes: &mut Vec<String>) -> Result<Global, InputError> {
        let mut out = Global { log_basename: "rt-app".into(), duration: None, default_policy: None, pi_enabled: false };
        let Some(g) = g else { return Ok(out) };
        for p in &g.props {
            match p.key.as_str() {
                // rt-app: seconds; -1 (or 0) runs until the tasks end.
                "duration" => {
                    let secs = p.value.as_int(ctx, "duration")?;
                    if secs > 0 {
                        out.duration = Some(Spanned::new(p.value.span(), Value::String(format!("{secs}s"))));
                    }
                }
                "default_policy" => out.default_policy = Some(p.value.as_spanned_string(ctx, "default_policy")?),
                "pi_enabled" => out.pi_enabled = p.value.as_bool(ctx, "pi_enabled")?,
                "log_basename" => out.log_basename = p.value.as_str(ctx, "log_basename")?.to_string(),
                "calibration" => notes.push(format!(
                    "global.calibration ({}) is rt-app's own busy-loop calibration: the model runs each `run` as \
                     that much CPU time at full capacity, and `schedlab real` calibrates its own loop",
                    p.value.source(ctx)
                )),
                "io_device" | "mem_buffer_size" => {
                    // Only `mem`/`iorun` use them, and those are refused where they appear.
                }
                k if RTAPP_ONLY_GLOBALS.contains(&k) => {}
                other => {
                    return Err(ctx.at(
                        p.key_at,
                        format!(
                            "`global.{other}` is not a key rt-app reads: expected duration, default_policy, \
                             pi_enabled, calibration, or one of rt-app's own settings ({}, io_device, \
                             mem_buffer_size)",
                            RTAPP_ONLY_GLOBALS.join(", ")
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// The `schedlab` section: the settings a scenario file has that rt-app
/// files lack (rt-app ignores the section).
fn schedlab_section(ctx: Ctx, own: &Obj, raw: &mut RawScenario) -> Result<(), InputError> {
    for p in &own.props {
        match p.key.as_str() {
            "topology" => raw.topology = p.value.as_spanned_string(ctx, "topology")?,
            "kernel" => raw.kernel = Some(p.value.as_spanned_string(ctx, "kernel")?),
            "name" => raw.name = Some(p.value.as_spanned_string(ctx, "name")?),
            "description" => raw.description = Some(p.value.as_spanned_string(ctx, "description")?),
            "seed" => raw.seed = Some(Spanned::new(p.value.span(), p.value.as_int(ctx, "seed")?)),
            "stall_threshold" => raw.stall_threshold = Some(p.value.as_duration_string(ctx, "stall_threshold")?),
            "features" => {
                let items = p.value.as_array(ctx, "features")?;
                let mut out = Vec::new();
                for item in items {
                    out.push(item.as_spanned_string(ctx, "features")?);
                }
                raw.features = Some(out);
            }
            other => {
                return Err(ctx.at(
                    p.key_at,
                    format!(
                        "`schedlab.{other}` is not a schedlab setting: expected topology, kernel, features, seed, \
                         stall_threshold, name or description"
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// Task keys rt-app reads that the model does not: refused where written.
const UNMODELED_TASK_KEYS: &[(&str, &str)] = &[("nodes_membind", "NUMA memory binding is not modeled")];

/// One task: its thread settings and its program (phases written out).
fn read_task(ctx: Ctx, task: &Prop, global: &Global) -> Result<(RawThread, Vec<events::Op>), InputError> {
    let body = task.value.as_object(ctx, &format!("task `{}`", task.key))?;
    let mut thread = RawThread {
        name: Spanned::new(task.key_at + 1..task.key_at + 1 + task.key.len(), task.key.clone()),
        instances: None,
        policy: global.default_policy.clone(),
        nice: None,
        priority: None,
        slice: None,
        runtime: None,
        deadline: None,
        period: None,
        // rt-app's sched_setattr() for a deadline task passes no sched_flags
        // (rt-app.c, 2024): there is no reclaiming key to read.
        reclaim: None,
        uclamp_min: None,
        uclamp_max: None,
        timer_slack: None,
        affinity: None,
        start_cpu: None,
        cgroup: None,
        session: None,
        delay: None,
        repeat: None,
        program: Spanned::new(0..0, Vec::new()),
        rows: Vec::new(),
    };
    let mut task_loop: Option<&Prop> = None;
    let mut phases: Option<&Prop> = None;
    let mut group: Option<&Prop> = None;
    // dl-runtime / dl-period / dl-deadline (us), with their values' spans;
    // where the first of them is written.
    let mut dl: [Option<(i64, std::ops::Range<usize>)>; 3] = [None, None, None];
    let mut dl_key_at = None;
    for p in &body.props {
        if events::is_event(&p.key) {
            continue;
        }
        match p.key.as_str() {
            "instance" => thread.instances = Some(Spanned::new(p.value.span(), p.value.as_int(ctx, "instance")?)),
            "policy" => thread.policy = Some(p.value.as_spanned_string(ctx, "policy")?),
            // For fair policies rt-app's priority is the nice value, as in scenarios.
            "priority" => thread.priority = Some(Spanned::new(p.value.span(), p.value.as_int(ctx, "priority")?)),
            "cpus" => thread.affinity = Some(p.value.as_cpus(ctx)?),
            "delay" => {
                let us = p.value.as_int(ctx, "delay")?.max(0);
                thread.delay = Some(Spanned::new(p.value.span(), Value::String(format!("{us}us"))));
            }
            "loop" => task_loop = Some(p),
            "phases" => phases = Some(p),
            "taskgroup" => group = Some(p),
            // rt-app's uclamp keys: -1 (its default) leaves the clamp alone.
            "util_min" | "util_max" => {
                let v = p.value.as_int(ctx, &p.key)?;
                if !(v == -1 || (0..=crate::UCLAMP_MAX_VALUE as i64).contains(&v)) {
                    return Err(ctx.at(
                        p.value.span().start,
                        format!(
                            "`{}` = {v} is out of range: expected -1 (leave the clamp alone) or 0..1024 (rt-app refuses \
                             values above 1024, the kernel negative ones)",
                            p.key
                        ),
                    ));
                }
                let field = if p.key == "util_min" { &mut thread.uclamp_min } else { &mut thread.uclamp_max };
                *field = (v != -1).then(|| Spanned::new(p.value.span(), v));
            }
            "dl-runtime" | "dl-period" | "dl-deadline" => {
                let i = ["dl-runtime", "dl-period", "dl-deadline"].iter().position(|k| *k == p.key).unwrap_or(0);
                dl[i] = Some((p.value.as_int(ctx, &p.key)?, p.value.span()));
                dl_key_at.get_or_insert(p.key_at);
            }
            key => return Err(unknown_key(ctx, p, key, "task")),
        }
    }
    if let Some(p) = group {
        thread.cgroup = taskgroup(ctx, p, thread.policy.as_ref())?;
    }
    deadline_keys(ctx, &mut thread, dl, dl_key_at.unwrap_or(task.key_at))?;
    let phase_list: Vec<Phase> = match phases {
        Some(ph) => {
            let obj = ph.value.as_object(ctx, "phases")?;
            if obj.props.is_empty() {
                return Err(ctx.at(ph.key_at, "`phases` is empty: rt-app needs at least one phase"));
            }
            obj.props.iter().map(|p| Phase::read(ctx, &task.key, p, true)).collect::<Result<_, _>>()?
        }
        None => vec![Phase::read(ctx, &task.key, task, false)?],
    };
    // rt-app master: with phases the task loops `loop` times (default
    // forever); without, the one phase loops `loop` times and the task
    // runs once (forever when `loop` is absent).
    let repeat = match (phases.is_some(), task_loop) {
        (true, Some(l)) => l.value.as_int(ctx, "loop")?,
        (true, None) => -1,
        (false, Some(_)) => 1,
        (false, None) => -1,
    };
    let loop_at = task_loop.map_or(task.key_at, |l| l.value.span().start);
    let (ops, rows, forever) = events::flatten(
        ctx,
        &task.key,
        &phase_list,
        repeat != 1,
        thread.affinity.as_ref(),
        thread.policy.as_ref(),
        thread.cgroup.as_ref(),
    )?;
    let repeat = if forever { -1 } else { repeat };
    if repeat == 0 || repeat < -1 {
        return Err(ctx.at(loop_at, format!("`loop` = {repeat}: expected a positive count or -1 (forever)")));
    }
    thread.repeat = Some(Spanned::new(loop_at..loop_at, Value::Integer(repeat)));
    thread.rows = rows;
    if let Some(first) = phase_list.first().and_then(|p| p.cpus.clone()) {
        thread.affinity = Some(first);
    }
    Ok((thread, ops))
}

/// rt-app's deadline keys (us) as the scenario's `runtime`, `period` and
/// `deadline`: the period defaults to the runtime and the deadline to the
/// period, as rt-app fills them in; a policy other than SCHED_DEADLINE makes
/// rt-app ignore them, which would run another workload than the file
/// says, so they are refused there.
fn deadline_keys(
    ctx: Ctx,
    thread: &mut RawThread,
    dl: [Option<(i64, std::ops::Range<usize>)>; 3],
    key_at: usize,
) -> Result<(), InputError> {
    let Some(first) = dl.iter().flatten().next().cloned() else { return Ok(()) };
    let is_dl = thread.policy.as_ref().is_some_and(|p| {
        let s = p.get_ref().trim().to_ascii_uppercase();
        s == "SCHED_DEADLINE" || s == "DEADLINE"
    });
    if !is_dl {
        return Err(ctx.at(
            key_at,
            "dl-runtime, dl-period and dl-deadline apply to \"policy\": \"SCHED_DEADLINE\" only (rt-app ignores them \
             otherwise)",
        ));
    }
    let [runtime, period, deadline] = dl;
    let runtime = runtime.unwrap_or((0, first.1.clone()));
    let period = period.unwrap_or(runtime.clone());
    let deadline = deadline.unwrap_or(period.clone());
    let us = |(v, span): (i64, std::ops::Range<usize>)| Spanned::new(span, Value::String(format!("{}us", v.max(0))));
    thread.runtime = Some(us(runtime));
    thread.period = Some(us(period));
    thread.deadline = Some(us(deadline));
    Ok(())
}

/// A task's `taskgroup`: rt-app's cgroup path under the cpu controller
/// (`/tg1/tg2`), as a scenario `cgroup` (`tg1/tg2`, whose tables
/// [`implied_cgroups`] adds); `""` is none, as in rt-app. rt-app takes it
/// only for SCHED_OTHER tasks, and so does this.
pub(crate) fn taskgroup(
    ctx: Ctx,
    p: &Prop,
    policy: Option<&Spanned<String>>,
) -> Result<Option<Spanned<String>>, InputError> {
    let s = p.value.as_spanned_string(ctx, "taskgroup")?;
    let path = s.get_ref().trim_matches('/');
    if path.is_empty() {
        return Ok(None);
    }
    if let Some(pol) = policy {
        let name = pol.get_ref().to_ascii_uppercase();
        if !matches!(name.trim_start_matches("SCHED_"), "OTHER" | "NORMAL") {
            return Err(ctx.at(
                p.key_at,
                format!("`taskgroup` is for SCHED_OTHER tasks only (rt-app refuses it with {})", pol.get_ref()),
            ));
        }
    }
    Ok(Some(Spanned::new(s.span(), path.to_string())))
}

/// The `[cgroup]` tables rt-app's taskgroups need: every level of every
/// path, with the defaults (rt-app creates the directories and sets nothing).
fn implied_cgroups<'a>(
    paths: impl Iterator<Item = &'a Spanned<String>>,
) -> Option<BTreeMap<Spanned<String>, Spanned<crate::file::RawCgroup>>> {
    let mut out = BTreeMap::new();
    for c in paths {
        let mut path = String::new();
        for part in c.get_ref().split('/') {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(part);
            let empty = crate::file::RawCgroup {
                weight: None,
                max: None,
                period: None,
                cpus: None,
                idle: None,
                partition: None,
            };
            out.entry(Spanned::new(c.span(), path.clone())).or_insert_with(|| Spanned::new(c.span(), empty));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A key rt-app does not read where it is (it would ignore it), or one it
/// reads and the model does not.
pub(crate) fn unknown_key(ctx: Ctx, p: &Prop, key: &str, place: &str) -> InputError {
    if let Some((_, why)) = UNMODELED_TASK_KEYS.iter().find(|(k, _)| *k == key) {
        return ctx.at(p.key_at, format!("`{key}`: {why}"));
    }
    let legacy = ["exec", "lock_order", "resources", "deadline", "period"];
    let hint = if legacy.contains(&key) {
        " (it is rt-app's pre-1.0 grammar, which rt-app 1.0 no longer reads: describe the task with events)"
    } else {
        " (rt-app would ignore it silently; schedlab refuses it in case it is a typo)"
    };
    const KNOWN: [&str; 24] = [
        "instance",
        "util_min",
        "util_max",
        "loop",
        "policy",
        "priority",
        "cpus",
        "delay",
        "taskgroup",
        "phases",
        "run",
        "runtime",
        "sleep",
        "timer",
        "lock",
        "unlock",
        "wait",
        "signal",
        "broad",
        "sync",
        "barrier",
        "suspend",
        "resume",
        "yield",
    ];
    let meant = schedlab_topology::diag::did_you_mean(key, KNOWN);
    ctx.at(
        p.key_at,
        format!(
            "`{key}` is not a {place} key or an event rt-app knows{meant}{hint}: expected instance, loop, policy, \
             priority, cpus, delay, taskgroup, util_min, util_max, phases, or events (run, runtime, sleep, timer, lock, unlock, wait, signal, \
             broad, sync, barrier, suspend, resume, yield)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::looks_like_json;

    #[test]
    fn json_is_told_from_toml_past_comments() {
        assert!(looks_like_json("  /* a\n comment */\n // line\n {\"tasks\": {}}"));
        assert!(looks_like_json("{}"));
        assert!(!looks_like_json("# toml\nname = \"x\""));
        assert!(!looks_like_json("[[thread]]"));
        assert!(!looks_like_json("/* unterminated"));
    }
}
