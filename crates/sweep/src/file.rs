//! Sweep files: the serde schema (every table denies unknown keys) and the
//! checks that turn it into a [`Sweep`], each error located in the file.
//!
//! A setting is built from parts: its `[[setting]]` table and, for every
//! `[[axis]]`, one of that axis's values (the cross product). Scalar keys
//! (`itmt`, `energy_aware`, `kernel`, `topology`) may be set by one part only; `features`
//! add up; the per-group tables (`affinity`, `nice`, `slice`) merge, each
//! group set by one part only.

use std::collections::BTreeMap;
use std::path::Path;

use schedlab_scenario::{
    Background, CpuSet, InputError, ObjKind, ObjectSpec, Op, Scenario, Spanned as Pos, MAX_SLICE_NS, MIN_SLICE_NS,
};
use schedlab_sim::kernel_settings;
use schedlab_topology::{parse_cpulist, parse_duration, Topology, MAX_CPUS};
use serde::Deserialize;
use toml::{Spanned, Value};

use crate::setting::SettingSpec;
use crate::shard::{fnv1a, FNV_OFFSET};
use crate::{consecutive_seeds, Setting, Sweep, MAX_ROUNDS};
use schedlab_report::ab::{parse_ab, RawAb};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    scenario: Spanned<String>,
    rounds: Option<Spanned<i64>>,
    duration: Option<Spanned<Value>>,
    seed: Option<Spanned<i64>>,
    seeds: Option<Spanned<Vec<Spanned<i64>>>>,
    wakees: Option<Spanned<Vec<Spanned<String>>>>,
    top_cpu: Option<Spanned<i64>>,
    stall_threshold: Option<Spanned<Value>>,
    breakdown: Option<Vec<Spanned<String>>>,
    setting: Option<Spanned<Vec<Spanned<RawSetting>>>>,
    axis: Option<Vec<Spanned<RawAxis>>>,
    ab: Option<RawAb>,
}

/// A `[[setting]]` table, or one value of an `[[axis]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSetting {
    name: Spanned<String>,
    /// The command line's one-line setting (`diff --a`, `vm --setting`):
    /// expanded into `features`, `itmt`, `energy_aware` and `kernel` by [`expand_set`].
    set: Option<Spanned<String>>,
    itmt: Option<Spanned<bool>>,
    /// `sysctl kernel.sched_energy_aware`: overrides the topology's `sched_energy_aware`.
    energy_aware: Option<Spanned<bool>>,
    kernel: Option<Spanned<String>>,
    topology: Option<Spanned<String>>,
    features: Option<Vec<Spanned<String>>>,
    affinity: Option<BTreeMap<Spanned<String>, Spanned<Value>>>,
    nice: Option<BTreeMap<Spanned<String>, Spanned<i64>>>,
    slice: Option<BTreeMap<Spanned<String>, Spanned<Value>>>,
    /// Per mutex: PTHREAD_PRIO_INHERIT on or off.
    pi: Option<BTreeMap<Spanned<String>, Spanned<bool>>>,
    background: Option<Spanned<String>>,
    fair_server_runtime: Option<Spanned<Value>>,
    /// A `[schbench]` sweep: the published `average rps` of each run of
    /// this setting, printed beside the model's with the steps compared.
    reported_rps: Option<Spanned<Vec<Spanned<f64>>>>,
}

/// `[[axis]]`: every setting is run once with each of `values`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    /// What the axis varies, for the reader and errors; setting names are
    /// built from the values'.
    name: Option<Spanned<String>>,
    values: Spanned<Vec<Spanned<RawSetting>>>,
}

/// The most rows (settings × axis values) a sweep file may define: each
/// row is at least one simulation per round, and the seed sweeps have 5.
pub const MAX_SETTINGS: usize = 10_000;

/// What joins a setting's name and its axis values' names.
pub const AXIS_JOIN: &str = " / ";

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
    let mut raw: RawSweep = toml::from_str(text).map_err(|e| schedlab_topology::diag::toml_error(path, text, &e))?;
    let tables = raw.setting.iter_mut().flat_map(|s| s.get_mut().iter_mut());
    let axis_values = raw.axis.iter_mut().flatten().flat_map(|a| a.get_mut().values.get_mut().iter_mut());
    for rs in tables.chain(axis_values) {
        expand_set(ctx, rs.get_mut())?;
    }

    let scenario_path = base_dir.join(raw.scenario.get_ref());
    if !scenario_path.is_file() && schedlab_bundle::get(&scenario_path).is_none() {
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
    let (seeds, seeds_listed) = match &raw.seeds {
        Some(list) => (seed_list(ctx, list, &raw)?, true),
        None => (consecutive_seeds(seed, rounds), false),
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
    let mut axes: Vec<&[Spanned<RawSetting>]> = Vec::new();
    for a in raw.axis.iter().flatten() {
        let values = &a.get_ref().values;
        if values.get_ref().is_empty() {
            let axis = a.get_ref().name.as_ref().map_or_else(String::new, |n| format!("axis `{}`: ", n.get_ref()));
            return Err(ctx.err(values, format!("{axis}`values` is empty: an axis needs at least one value")));
        }
        axes.push(values.get_ref());
    }
    // The cross product is refused before it is built when it is too large.
    let rows = axes.iter().try_fold(raw_settings.len(), |n, values| n.checked_mul(values.len()));
    if rows.is_none_or(|n| n > MAX_SETTINGS) {
        let at = raw.axis.iter().flatten().next().map_or(0, |a| a.span().start);
        let shown = rows.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
        return Err(InputError::at_offset(
            path,
            text,
            at,
            format!(
                "{} settings crossed with these axes make {shown} rows, more than the limit of {MAX_SETTINGS}: \
                 split the sweep into several files",
                raw_settings.len()
            ),
        ));
    }
    let bounded = duration_ns.or(scenario.duration_ns).is_some();
    let base = Base { scenario: &scenario, groups: &groups, wakees: &wakees, top_cpu, base_dir, bounded };
    let mut settings: Vec<Setting> = Vec::new();
    let mut names: std::collections::HashSet<String> = std::collections::HashSet::new();
    for rs in raw_settings {
        // The cross product of this setting with one value of every axis.
        let mut combos: Vec<Vec<&RawSetting>> = vec![vec![rs.get_ref()]];
        for values in &axes {
            combos = combos
                .iter()
                .flat_map(|c| values.iter().map(move |v| c.iter().copied().chain([v.get_ref()]).collect()))
                .collect();
        }
        for parts in combos {
            let s = setting(ctx, &parts, &base)?;
            if !names.insert(s.name.clone()) {
                let last = &parts[parts.len() - 1].name;
                return Err(ctx.err(last, format!("setting `{}` is defined twice", s.name)));
            }
            settings.push(s);
        }
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

    let names: Vec<&str> = settings.iter().map(|s| s.name.as_str()).collect();
    let ab = match &raw.ab {
        Some(a) => Some(parse_ab(a, &names, &|span, m| InputError::at_offset(path, text, span.start, m))?),
        None => None,
    };

    // What the results depend on besides the options: both files and the
    // machines as resolved (a topology file may have changed).
    let scenario_text = std::fs::read(&scenario_path)
        .ok()
        .or_else(|| schedlab_bundle::get(&scenario_path).map(|t| t.as_bytes().to_vec()))
        .unwrap_or_default();
    let mut source_hash = fnv1a(fnv1a(FNV_OFFSET, text.as_bytes()), &scenario_text);
    for s in &settings {
        source_hash = fnv1a(source_hash, format!("{:?}", s.topology).as_bytes());
    }

    Ok(Sweep {
        path: path.to_string(),
        scenario_path: scenario.path.clone(),
        scenario_name: scenario.name.clone(),
        topology_name: scenario.topology.name.clone(),
        duration_ns,
        seeds,
        seeds_listed,
        wakees,
        stall_threshold_ns,
        settings,
        ab,
        source_hash,
        memory_budget: None,
    })
}

/// `seeds = [..]`: one per round, distinct and non-negative; instead of
/// `seed` and `rounds`.
fn seed_list(ctx: Ctx, list: &Spanned<Vec<Spanned<i64>>>, raw: &RawSweep) -> Result<Vec<u64>, InputError> {
    if let Some(r) = &raw.rounds {
        return Err(ctx.err(r, "`rounds` comes from the length of `seeds`: give one or the other"));
    }
    if let Some(s) = &raw.seed {
        return Err(ctx.err(s, "`seed` and `seeds` both given: give one or the other"));
    }
    let items = list.get_ref();
    if items.is_empty() || items.len() > MAX_ROUNDS as usize {
        return Err(ctx.err(list, format!("`seeds` lists {} seeds: expected 1..{MAX_ROUNDS}", items.len())));
    }
    let mut out: Vec<u64> = Vec::new();
    for s in items {
        let v = *s.get_ref();
        if v < 0 {
            return Err(ctx.err(s, format!("`seeds`: {v} is negative")));
        }
        if out.contains(&(v as u64)) {
            return Err(ctx.err(s, format!("`seeds`: seed {v} is listed twice (a seed gives the same run each time)")));
        }
        out.push(v as u64);
    }
    Ok(out)
}

fn unknown_group(name: &str, scenario: &Scenario, groups: &[&str]) -> String {
    format!(
        "no thread group `{name}` in scenario {} (groups: {})",
        scenario.path,
        groups.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")
    )
}

/// What every setting starts from.
struct Base<'a> {
    scenario: &'a Scenario,
    groups: &'a [&'a str],
    wakees: &'a [String],
    top_cpu: Option<u32>,
    /// Where a setting's `topology` file is resolved: the sweep file's directory.
    base_dir: &'a Path,
    /// The runs have a duration (the sweep's or the scenario's).
    bounded: bool,
}

/// A part's `set = "..."`, parsed by the command line's setting grammar
/// ([`SettingSpec`]), becomes the part's `features`, `itmt` and `kernel`, so
/// a setting written once on the command line can be pasted into a sweep
/// file. Errors point at the `set` value.
fn expand_set(ctx: Ctx, part: &mut RawSetting) -> Result<(), InputError> {
    let Some(set) = part.set.take() else { return Ok(()) };
    let spec = SettingSpec::parse("`set`", set.get_ref()).map_err(|e| ctx.err(&set, e.to_string()))?;
    let twice = |key: &str| ctx.err(&set, format!("`{key}` is given both by `set` and by its own key in this table"));
    let span = set.span();
    if let Some(itmt) = spec.itmt {
        if part.itmt.is_some() {
            return Err(twice("itmt"));
        }
        part.itmt = Some(Spanned::new(span.clone(), itmt));
    }
    if let Some(on) = spec.energy_aware {
        if part.energy_aware.is_some() {
            return Err(twice("energy_aware"));
        }
        part.energy_aware = Some(Spanned::new(span.clone(), on));
    }
    if let Some(kernel) = spec.kernel {
        if part.kernel.is_some() {
            return Err(twice("kernel"));
        }
        part.kernel = Some(Spanned::new(span.clone(), kernel));
    }
    if !spec.features.is_empty() {
        let features = part.features.get_or_insert_with(Vec::new);
        features.extend(spec.features.into_iter().map(|f| Spanned::new(span.clone(), f)));
    }
    Ok(())
}

/// The one part that sets a scalar key, if any; two parts setting it is an error.
fn only_one<'p, T>(
    ctx: Ctx,
    parts: &[&'p RawSetting],
    key: &str,
    get: impl Fn(&'p RawSetting) -> Option<&'p Spanned<T>>,
) -> Result<Option<&'p Spanned<T>>, InputError> {
    let mut found: Option<&Spanned<T>> = None;
    for p in parts {
        if let Some(v) = get(p) {
            if found.is_some() {
                return Err(ctx.err(
                    v,
                    format!(
                        "`{key}` is set twice for this setting (by the setting and an axis value, or two axis values)"
                    ),
                ));
            }
            found = Some(v);
        }
    }
    Ok(found)
}

/// A per-group entry: the group name and its value.
type GroupEntry<'p, V> = (&'p Spanned<String>, &'p Spanned<V>);

/// The per-group entries of a table over all parts, each group once.
fn per_group<'p, V>(
    ctx: Ctx,
    parts: &[&'p RawSetting],
    key: &str,
    get: impl Fn(&'p RawSetting) -> Option<&'p BTreeMap<Spanned<String>, Spanned<V>>>,
) -> Result<Vec<GroupEntry<'p, V>>, InputError> {
    let mut out: Vec<GroupEntry<'p, V>> = Vec::new();
    for (g, v) in parts.iter().filter_map(|p| get(p)).flatten() {
        if out.iter().any(|(o, _)| o.get_ref() == g.get_ref()) {
            return Err(ctx.err(g, format!("`{key}` of group `{}` is set twice for this setting", g.get_ref())));
        }
        out.push((g, v));
    }
    Ok(out)
}

/// One setting: a `[[setting]]` table and one value of each axis, applied
/// to the scenario and checked.
fn setting(ctx: Ctx, parts: &[&RawSetting], base: &Base) -> Result<Setting, InputError> {
    let mut names = Vec::new();
    for p in parts {
        let n = p.name.get_ref().trim();
        if n.is_empty() {
            return Err(ctx.err(&p.name, "setting `name` is empty"));
        }
        names.push(n);
    }
    let name = names.join(AXIS_JOIN);
    let groups = base.groups;
    let mut scenario = base.scenario.clone();
    let mut topology = base.scenario.topology.clone();
    let topo_ref = only_one(ctx, parts, "topology", |p| p.topology.as_ref())?;
    if let Some(t) = topo_ref {
        topology = Topology::resolve(t.get_ref(), base.base_dir).map_err(|e| {
            if e.message.starts_with("no topology preset") {
                ctx.err(t, format!("`topology`: {}", e.message))
            } else {
                e
            }
        })?;
        scenario.topology_ref = t.get_ref().clone();
    }
    if let Some(i) = only_one(ctx, parts, "itmt", |p| p.itmt.as_ref())? {
        topology.itmt_enabled = *i.get_ref();
    }
    if let Some(e) = only_one(ctx, parts, "energy_aware", |p| p.energy_aware.as_ref())? {
        topology.sched_energy_aware = *e.get_ref();
    }
    scenario.topology = topology.clone();
    if let Some(k) = only_one(ctx, parts, "kernel", |p| p.kernel.as_ref())? {
        scenario.kernel_profile = Pos { value: k.get_ref().clone(), line: 0, col: 0 };
        if let Err(e) = kernel_settings(&scenario, &[]) {
            return Err(match e {
                schedlab_sim::SimError::Input(e) if e.line != 0 => e,
                e => ctx.err(k, format!("`kernel`: {}", message(&e))),
            });
        }
    }
    let mut features = Vec::new();
    for f in parts.iter().flat_map(|p| p.features.iter().flatten()) {
        if let Err(e) = kernel_settings(&scenario, std::slice::from_ref(f.get_ref())) {
            let msg = message(&e);
            let msg =
                msg.split_once(": ").filter(|(head, _)| head.starts_with("--features")).map_or(msg.as_str(), |t| t.1);
            return Err(ctx.err(f, format!("`features`: {msg}")));
        }
        features.push(f.get_ref().clone());
    }
    let check_group = |g: &Spanned<String>| {
        if groups.contains(&g.get_ref().as_str()) {
            Ok(())
        } else {
            Err(ctx.err(g, unknown_group(g.get_ref(), base.scenario, groups)))
        }
    };
    for (group, value) in per_group(ctx, parts, "affinity", |p| p.affinity.as_ref())? {
        check_group(group)?;
        let set = affinity(ctx, value, &topology)?;
        for t in scenario.threads.iter_mut().filter(|t| &t.group == group.get_ref()) {
            t.affinity = set;
        }
    }
    for (group, value) in per_group(ctx, parts, "nice", |p| p.nice.as_ref())? {
        check_group(group)?;
        let n = *value.get_ref();
        if !(-20..=19).contains(&n) {
            return Err(ctx.err(value, format!("`nice` = {n}: expected -20..19")));
        }
        for t in scenario.threads.iter_mut().filter(|t| &t.group == group.get_ref()) {
            if t.policy.is_rt() {
                return Err(ctx.err(value, format!("`nice` does not apply to {} thread `{}`", t.policy.name(), t.name)));
            }
            t.nice = n as i32;
        }
    }
    for (group, value) in per_group(ctx, parts, "slice", |p| p.slice.as_ref())? {
        check_group(group)?;
        let ns = duration(ctx, value, "slice")?;
        if !(MIN_SLICE_NS..=MAX_SLICE_NS).contains(&ns) {
            return Err(ctx.err(value, "`slice` is out of range: expected 0.1ms..100ms"));
        }
        for t in scenario.threads.iter_mut().filter(|t| &t.group == group.get_ref()) {
            if t.policy.is_rt() {
                return Err(ctx.err(
                    value,
                    format!("`slice` applies only to fair policies, not {} thread `{}`", t.policy.name(), t.name),
                ));
            }
            t.slice_ns = Some(ns);
        }
    }
    for (mutex, value) in per_group(ctx, parts, "pi", |p| p.pi.as_ref())? {
        let obj = scenario.object_id(mutex.get_ref()).map(|id| &mut scenario.objects[id as usize]);
        match obj {
            Some(ObjectSpec { kind: ObjKind::Mutex { pi }, .. }) => *pi = *value.get_ref(),
            _ => return Err(ctx.err(mutex, format!("`pi`: the scenario has no mutex named `{}`", mutex.get_ref()))),
        }
    }
    if let Some(b) = only_one(ctx, parts, "background", |p| p.background.as_ref())? {
        scenario.background = match b.get_ref().as_str() {
            "quiet" => Background::Quiet,
            "kernel" => Background::Kernel,
            other => return Err(ctx.err(b, format!("`background` = \"{other}\": expected \"quiet\" or \"kernel\""))),
        };
        if scenario.background == Background::Kernel && !base.bounded {
            return Err(ctx.err(
                b,
                "`background` = \"kernel\" never finishes (kworkers, the watchdog), and neither the sweep nor its \
                 scenario has a `duration`: add e.g. `duration = \"10s\"`",
            ));
        }
    }
    if let Some(v) = only_one(ctx, parts, "fair_server_runtime", |p| p.fair_server_runtime.as_ref())? {
        scenario.fair_server_runtime_ns = Some(fair_server_runtime(ctx, v, &scenario)?);
    }
    let reported_rps = match only_one(ctx, parts, "reported_rps", |p| p.reported_rps.as_ref())? {
        None => Vec::new(),
        Some(v) => {
            if scenario.schbench.is_none() {
                return Err(ctx.err(v, "`reported_rps` applies only to a [schbench] scenario (its `average rps`)"));
            }
            if v.get_ref().is_empty() {
                return Err(ctx.err(v, "`reported_rps`: expected the published runs' figures, at least one"));
            }
            let mut out = Vec::new();
            for x in v.get_ref() {
                let f = *x.get_ref();
                if !(f.is_finite() && f > 0.0) {
                    return Err(
                        ctx.err(x, format!("`reported_rps`: {f} is not a positive number of requests per second"))
                    );
                }
                out.push(f);
            }
            out
        }
    };
    if let Some(t) = topo_ref {
        // The scenario's affinities and start CPUs must exist on the new machine.
        let all = topology.all_cpus();
        for th in &scenario.threads {
            let outside = !th.affinity.is_subset(&all) || th.start_cpu.is_some_and(|c| c >= topology.nr_cpus());
            if outside {
                return Err(ctx.err(
                    t,
                    format!(
                        "`topology` {} has CPUs {}, but thread `{}` is bound to {}: set `affinity = {{ {} = ... }}` in this setting",
                        topology.name,
                        all.to_cpulist(),
                        th.name,
                        th.affinity.to_cpulist(),
                        th.group
                    ),
                ));
            }
        }
        if let Some(c) = base.top_cpu.filter(|&c| c as usize >= topology.nr_cpus()) {
            return Err(ctx.err(t, format!("`top_cpu` = {c} is not a CPU of topology `{}`", topology.name)));
        }
    }
    let (profile, feats) = kernel_settings(&scenario, &features)
        .map_err(|e| ctx.err(&parts[0].name, format!("setting `{name}`: {}", message(&e))))?;
    let allowed = scenario
        .threads
        .iter()
        .filter(|t| base.wakees.contains(&t.group))
        .fold(CpuSet::empty(), |acc, t| acc.or(&t.affinity));
    let top_cpu = base.top_cpu.or_else(|| top_ranked(&topology, &allowed));
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
        reported_rps,
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

/// `fair_server_runtime`, by the scenario file's rules: 0 (no fair server)
/// to the 1 s period, and not more than the scenario's
/// `sched_rt_runtime_us` leaves (the kernel refuses that write with EBUSY).
fn fair_server_runtime(ctx: Ctx, v: &Spanned<Value>, scenario: &Scenario) -> Result<u64, InputError> {
    let ns = duration_or_zero(ctx, v, "fair_server_runtime")?;
    if ns > schedlab_scenario::FAIR_SERVER_PERIOD_NS {
        return Err(ctx.err(v, "`fair_server_runtime` must fit its 1 s period (expected 0 to 1s)"));
    }
    let refused = scenario
        .sched_rt_runtime_us
        .and_then(|us| schedlab_scenario::rt_runtime_below_fair_servers(us, Some(ns)).map(|fair_us| (us, fair_us)));
    if let Some((rt_us, fair_us)) = refused {
        return Err(ctx.err(
            v,
            format!(
                "`fair_server_runtime` = {fair_us} µs per 1 s period is above the scenario's \
                 sched_rt_runtime_us = {rt_us}; the kernel refuses this write with EBUSY"
            ),
        ));
    }
    Ok(ns)
}

/// A duration longer than zero: a string with a unit (`"30s"`, `"500us"`)
/// or integer nanoseconds.
fn duration(ctx: Ctx, v: &Spanned<Value>, key: &str) -> Result<u64, InputError> {
    let ns = duration_or_zero(ctx, v, key)?;
    if ns == 0 {
        return Err(ctx.err(v, format!("`{key}` must be longer than zero")));
    }
    Ok(ns)
}

/// A duration, zero allowed.
fn duration_or_zero(ctx: Ctx, v: &Spanned<Value>, key: &str) -> Result<u64, InputError> {
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
