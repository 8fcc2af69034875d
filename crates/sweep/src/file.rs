//! Sweep files: the serde schema (every table denies unknown keys) and the
//! checks that turn it into a [`Sweep`], each error located in the file.

use std::collections::BTreeMap;
use std::path::Path;

use schedlab_scenario::{CpuSet, InputError, Op, Scenario, Spanned as Pos};
use schedlab_sim::kernel_settings;
use schedlab_topology::{parse_cpulist, parse_duration, Topology, MAX_CPUS};
use serde::Deserialize;
use toml::{Spanned, Value};

use crate::{Setting, Sweep, MAX_ROUNDS};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    scenario: Spanned<String>,
    rounds: Option<Spanned<i64>>,
    duration: Option<Spanned<Value>>,
    seed: Option<Spanned<i64>>,
    wakees: Option<Spanned<Vec<Spanned<String>>>>,
    top_cpu: Option<Spanned<i64>>,
    stall_threshold: Option<Spanned<Value>>,
    breakdown: Option<Vec<Spanned<String>>>,
    setting: Option<Spanned<Vec<Spanned<RawSetting>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSetting {
    name: Spanned<String>,
    itmt: Option<Spanned<bool>>,
    kernel: Option<Spanned<String>>,
    features: Option<Vec<Spanned<String>>>,
    affinity: Option<BTreeMap<Spanned<String>, Spanned<Value>>>,
}

/// The file being read: every error is located in it.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    path: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err<T>(&self, v: &Spanned<T>, message: impl Into<String>) -> InputError {
        InputError::at_offset(self.path, self.text, v.span().start, message)
    }
}

/// Parse sweep text. `path` names the file in errors; `base_dir` is where the
/// `scenario` path is resolved (the sweep file's directory).
pub(crate) fn parse(path: &str, text: &str, base_dir: &Path) -> Result<Sweep, InputError> {
    let ctx = Ctx { path, text };
    let raw: RawSweep = toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => InputError::at_offset(path, text, span.start, e.message().trim()),
        None => InputError::whole_file(path, e.message().trim()),
    })?;

    let scenario_path = base_dir.join(raw.scenario.get_ref());
    if !scenario_path.is_file() {
        return Err(ctx.err(
            &raw.scenario,
            format!("`scenario`: no file {} (paths are relative to the sweep file)", scenario_path.display()),
        ));
    }
    let scenario = Scenario::load(&scenario_path)?;

    let rounds = match &raw.rounds {
        Some(r) if !(1..=MAX_ROUNDS as i64).contains(r.get_ref()) => {
            return Err(ctx.err(r, format!("`rounds` = {}: expected 1..{MAX_ROUNDS}", r.get_ref())))
        }
        Some(r) => *r.get_ref() as u32,
        None => 1,
    };
    let duration_ns = raw.duration.as_ref().map(|d| duration(ctx, d, "duration")).transpose()?;
    let seed = match &raw.seed {
        Some(s) if *s.get_ref() < 0 => {
            return Err(ctx.err(s, format!("`seed` = {}: expected a non-negative integer", s.get_ref())))
        }
        Some(s) => *s.get_ref() as u64,
        None => scenario.seed,
    };
    let stall_threshold_ns = match &raw.stall_threshold {
        Some(d) => duration(ctx, d, "stall_threshold")?,
        None => scenario.stall_threshold_ns,
    };

    let groups: Vec<&str> = {
        let mut g: Vec<&str> = Vec::new();
        for t in &scenario.threads {
            if !g.contains(&t.group.as_str()) {
                g.push(&t.group);
            }
        }
        g
    };
    let wakees: Vec<String> = match &raw.wakees {
        Some(list) => {
            if list.get_ref().is_empty() {
                return Err(ctx.err(list, "`wakees` is empty: expected thread group names"));
            }
            let mut out = Vec::new();
            for w in list.get_ref() {
                if !groups.contains(&w.get_ref().as_str()) {
                    return Err(ctx.err(w, unknown_group(w.get_ref(), &scenario, &groups)));
                }
                out.push(w.get_ref().clone());
            }
            out
        }
        // Default: every group whose program waits on an eventfd.
        None => groups
            .iter()
            .filter(|g| {
                scenario
                    .threads
                    .iter()
                    .any(|t| t.group == **g && t.program.ops.iter().any(|o| matches!(o, Op::Wait { .. })))
            })
            .map(|g| g.to_string())
            .collect(),
    };

    let nr_cpus = scenario.topology.nr_cpus();
    let top_cpu = match &raw.top_cpu {
        Some(c) if !(0..nr_cpus as i64).contains(c.get_ref()) => {
            return Err(ctx.err(
                c,
                format!(
                    "`top_cpu` = {}: topology `{}` has CPUs 0-{}",
                    c.get_ref(),
                    scenario.topology.name,
                    nr_cpus - 1
                ),
            ))
        }
        Some(c) => Some(*c.get_ref() as u32),
        None => None,
    };

    let raw_settings = match &raw.setting {
        Some(s) if !s.get_ref().is_empty() => s.get_ref(),
        Some(s) => return Err(ctx.err(s, "no settings: expected at least one [[setting]] table")),
        None => {
            return Err(InputError::at_offset(path, text, 0, "no settings: expected at least one [[setting]] table"))
        }
    };
    let mut settings: Vec<Setting> = Vec::new();
    for rs in raw_settings {
        let s = setting(ctx, rs.get_ref(), &scenario, &groups, &wakees, top_cpu)?;
        if settings.iter().any(|o| o.name == s.name) {
            return Err(ctx.err(&rs.get_ref().name, format!("setting `{}` is defined twice", s.name)));
        }
        settings.push(s);
    }
    for b in raw.breakdown.iter().flatten() {
        match settings.iter_mut().find(|s| &s.name == b.get_ref()) {
            Some(s) => s.breakdown = true,
            None => {
                let names: Vec<String> = settings.iter().map(|s| format!("`{}`", s.name)).collect();
                return Err(ctx.err(
                    b,
                    format!("`breakdown`: no setting named `{}` (settings: {})", b.get_ref(), names.join(", ")),
                ));
            }
        }
    }

    Ok(Sweep {
        path: path.to_string(),
        scenario_path: scenario.path.clone(),
        scenario_name: scenario.name.clone(),
        topology_name: scenario.topology.name.clone(),
        rounds,
        duration_ns,
        seed,
        wakees,
        stall_threshold_ns,
        settings,
    })
}

fn unknown_group(name: &str, scenario: &Scenario, groups: &[&str]) -> String {
    format!(
        "no thread group `{name}` in scenario {} (groups: {})",
        scenario.path,
        groups.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")
    )
}

/// One `[[setting]]`: the scenario with its overrides applied and checked.
fn setting(
    ctx: Ctx,
    rs: &RawSetting,
    base: &Scenario,
    groups: &[&str],
    wakees: &[String],
    top_cpu: Option<u32>,
) -> Result<Setting, InputError> {
    let name = rs.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.err(&rs.name, "setting `name` is empty"));
    }
    let mut scenario = base.clone();
    let mut topology = base.topology.clone();
    if let Some(i) = &rs.itmt {
        topology.itmt_enabled = *i.get_ref();
    }
    if let Some(k) = &rs.kernel {
        scenario.kernel_profile = Pos { value: k.get_ref().clone(), line: 0, col: 0 };
        if let Err(e) = kernel_settings(&scenario, &[]) {
            return Err(match e {
                schedlab_sim::SimError::Input(e) if e.line != 0 => e,
                e => ctx.err(k, format!("`kernel`: {}", message(&e))),
            });
        }
    }
    let mut features = Vec::new();
    for f in rs.features.iter().flatten() {
        if let Err(e) = kernel_settings(&scenario, std::slice::from_ref(f.get_ref())) {
            let msg = message(&e);
            let msg =
                msg.split_once(": ").filter(|(head, _)| head.starts_with("--features")).map_or(msg.as_str(), |t| t.1);
            return Err(ctx.err(f, format!("`features`: {msg}")));
        }
        features.push(f.get_ref().clone());
    }
    for (group, value) in rs.affinity.iter().flatten() {
        if !groups.contains(&group.get_ref().as_str()) {
            return Err(ctx.err(group, unknown_group(group.get_ref(), base, groups)));
        }
        let set = affinity(ctx, value, &topology)?;
        for t in scenario.threads.iter_mut().filter(|t| &t.group == group.get_ref()) {
            t.affinity = set;
        }
    }
    let (profile, feats) = kernel_settings(&scenario, &features)
        .map_err(|e| ctx.err(&rs.name, format!("setting `{name}`: {}", message(&e))))?;
    let allowed = scenario
        .threads
        .iter()
        .filter(|t| wakees.contains(&t.group))
        .fold(CpuSet::empty(), |acc, t| acc.or(&t.affinity));
    let top_cpu = top_cpu.or_else(|| top_ranked(&topology, &allowed));
    Ok(Setting {
        name,
        kernel: profile.name.to_string(),
        features_changed: feats.diff_from(&profile.defaults),
        scenario,
        topology,
        features,
        breakdown: false,
        top_cpu,
        allowed_cpus: allowed,
    })
}

/// The CPU of `allowed` with the highest `asym_prio` (lowest id on a tie, so
/// an SMT sibling never wins over its primary); `None` when all are equal.
pub(crate) fn top_ranked(topo: &Topology, allowed: &CpuSet) -> Option<u32> {
    let prio = |c: usize| topo.cpus.get(c).map_or(0, |i| i.asym_prio);
    let best = allowed.iter().max_by_key(|&c| (prio(c), std::cmp::Reverse(c)))?;
    allowed.iter().any(|c| prio(c) != prio(best)).then_some(best as u32)
}

/// The message of a sim error without its location (which is in the scenario file).
fn message(e: &schedlab_sim::SimError) -> String {
    match e {
        schedlab_sim::SimError::Input(i) => i.message.clone(),
        other => other.to_string(),
    }
}

/// A duration: a string with a unit (`"30s"`, `"500us"`) or integer nanoseconds.
fn duration(ctx: Ctx, v: &Spanned<Value>, key: &str) -> Result<u64, InputError> {
    let ns = match v.get_ref() {
        Value::String(s) => parse_duration(s).map_err(|m| ctx.err(v, format!("`{key}`: {m}")))?,
        Value::Integer(n) if *n >= 0 => *n as u64,
        other => {
            return Err(ctx.err(
                v,
                format!(
                    "`{key}`: expected a duration such as \"30s\" or \"500us\" (or integer nanoseconds), found {}",
                    describe(other)
                ),
            ))
        }
    };
    if ns == 0 {
        return Err(ctx.err(v, format!("`{key}` must be longer than zero")));
    }
    Ok(ns)
}

fn describe(v: &Value) -> String {
    match v {
        Value::Integer(n) => format!("the negative number {n}"),
        Value::Array(a) if a.is_empty() => "an empty list".to_string(),
        other => format!("a {}", other.type_str()),
    }
}

/// A per-group affinity: a cpulist string, a CPU number or a list of CPU
/// numbers, every CPU on the topology.
fn affinity(ctx: Ctx, v: &Spanned<Value>, topo: &Topology) -> Result<CpuSet, InputError> {
    let cpu = |n: i64| -> Result<usize, InputError> {
        if (0..MAX_CPUS as i64).contains(&n) {
            Ok(n as usize)
        } else {
            Err(ctx.err(v, format!("`affinity`: {n} is not a CPU number")))
        }
    };
    let set = match v.get_ref() {
        Value::String(s) => parse_cpulist(s).map_err(|m| ctx.err(v, format!("`affinity`: {m}")))?,
        Value::Integer(n) => CpuSet::single(cpu(*n)?),
        Value::Array(items) if !items.is_empty() => {
            let mut set = CpuSet::empty();
            for item in items {
                match item {
                    Value::Integer(n) => set.insert(cpu(*n)?),
                    other => {
                        return Err(ctx.err(v, format!("`affinity` list: expected CPU numbers, found {}", describe(other))))
                    }
                }
            }
            set
        }
        other => {
            return Err(ctx.err(
                v,
                format!(
                    "`affinity`: expected a cpulist string like \"4-7,20-23\", a CPU number or a non-empty list of CPU numbers, found {}",
                    describe(other)
                ),
            ))
        }
    };
    let all = topo.all_cpus();
    if !set.is_subset(&all) {
        let outside: CpuSet = set.iter().filter(|c| !all.contains(*c)).collect();
        return Err(ctx.err(
            v,
            format!(
                "`affinity` names CPU {} but topology `{}` has CPUs {}",
                outside.to_cpulist(),
                topo.name,
                all.to_cpulist()
            ),
        ));
    }
    Ok(set)
}
