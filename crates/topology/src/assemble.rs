//! Turn a parsed [`TopologyFile`] into a validated [`Topology`].
//!
//! Every check that can fail points at the span of the value responsible:
//! a `[[cpus]]` entry, a cpulist key in `[asym_prio]`/`[capacity]`, or a
//! `[layout]` count. Nothing here may panic, whatever the numbers say: all
//! arithmetic on file values is checked and CPU ids are bounded by
//! [`MAX_CPUS`] before any set or vector is indexed.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use crate::diag::LineIndex;
use crate::file::{CpuFile, LayoutFile, PreemptName, SmtNumbering, TopologyFile};
use crate::{parse_cpulist, Costs, CpuInfo, CpuSet, InputError, Jitter, PreemptModel, Topology, HZ_CHOICES, MAX_CPUS};

/// Largest cost or jitter the loader accepts: anything above is a typo.
const MAX_COST_NS: u64 = 1_000_000_000;

type Span = Range<usize>;
type CpuTable = Spanned<BTreeMap<Spanned<String>, Spanned<i64>>>;

pub(crate) mod hardware;
mod hybrid;
mod perf;

struct Ctx<'a> {
    path: &'a str,
    text: &'a str,
    lines: LineIndex,
}

impl Ctx<'_> {
    fn err(&self, span: &Span, msg: impl Into<String>) -> InputError {
        let (line, col) = self.lines.line_col(self.text, span.start);
        InputError::new(self.path, line, col, msg)
    }
    fn line(&self, span: &Span) -> usize {
        self.lines.line_col(self.text, span.start).0
    }
}

/// A CPU being assembled, with where its values came from.
struct Slot {
    info: CpuInfo,
    /// The `[[cpus]]` entry that named this CPU, if any.
    entry: Option<Span>,
    /// Where the capacity / priority was set, if not defaulted.
    cap_src: Option<Span>,
    prio_src: Option<Span>,
}

pub(crate) fn build(path: &str, text: &str, f: TopologyFile) -> Result<Topology, InputError> {
    let ctx = Ctx { path, text, lines: LineIndex::new(text) };
    let start = 0..0;

    let hz = match &f.hz {
        None => return Err(ctx.err(&start, "missing key `hz` (expected CONFIG_HZ: 100, 250, 300 or 1000)")),
        Some(h) => {
            let v = *h.get_ref();
            match u32::try_from(v) {
                Ok(v) if HZ_CHOICES.contains(&v) => v,
                _ => {
                    return Err(ctx.err(
                        &h.span(),
                        format!("hz = {v} is not a CONFIG_HZ choice (expected 100, 250, 300 or 1000)"),
                    ))
                }
            }
        }
    };
    let preempt = match &f.preempt {
        None => {
            return Err(
                ctx.err(&start, "missing key `preempt` (expected \"none\", \"voluntary\", \"full\" or \"lazy\")")
            )
        }
        Some(p) => match p.get_ref() {
            PreemptName::None => PreemptModel::None,
            PreemptName::Voluntary => PreemptModel::Voluntary,
            PreemptName::Full => PreemptModel::Full,
            PreemptName::Lazy => PreemptModel::Lazy,
        },
    };

    let mut slots = match &f.layout {
        Some(layout) => generate(&ctx, layout)?,
        None => Vec::new(),
    };
    apply_cpu_entries(&ctx, &mut slots, f.layout.as_ref().map(|l| l.span()), f.cpus.as_deref().unwrap_or(&[]))?;
    if slots.is_empty() {
        return Err(ctx.err(&start, "no CPUs: expected a [layout] table or [[cpus]] entries"));
    }
    let layout_span = f.layout.as_ref().map(|l| l.span());

    if let Some(t) = &f.capacity {
        apply_table(&ctx, &mut slots, t, Field::Capacity)?;
    }
    if let Some(t) = &f.asym_prio {
        apply_table(&ctx, &mut slots, t, Field::Prio)?;
    }
    hybrid::apply(&ctx, &mut slots, f.hwp_highest_perf.as_ref(), f.core_type.as_ref())?;
    let perf_domains = perf::perf_domains(&ctx, &mut slots, f.cpufreq_governor, f.perf_domain.unwrap_or_default())?;
    check_structure(&ctx, &slots, layout_span.as_ref())?;
    hybrid::check_siblings(&ctx, &slots)?;
    check_smt_prio(&ctx, &slots)?;
    check_capacity(&ctx, &slots)?;

    let mut costs_file = f.costs.unwrap_or_default();
    let level_files = [costs_file.smt.take(), costs_file.llc.take(), costs_file.package.take(), costs_file.numa.take()];
    let kernel_file = costs_file.kernel.take().unwrap_or_default();
    // Without [idle], these two keys are the machine's one idle state.
    let flat_idle =
        hardware::FlatIdle { exit: costs_file.idle_exit_ns.take(), polling: costs_file.idle_polling.take() };
    let mut costs = costs(&ctx, costs_file)?;
    let remote_rq = cost(&ctx, kernel_file.remote_rq.clone(), "remote_rq", 0)?;
    costs.kernel = hardware::kernel_costs(&ctx, kernel_file)?;
    costs.levels = hardware::levels(&ctx, &costs, remote_rq, level_files)?;
    let jitter = jitter(&ctx, f.jitter.unwrap_or_default())?;
    let idle = hardware::idle(&ctx, f.idle, flat_idle)?;
    let noise = hardware::noise(&ctx, f.noise.unwrap_or_default(), slots.len())?;
    let name = f.name.unwrap_or_else(|| {
        std::path::Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.to_string())
    });

    Ok(Topology {
        name,
        description: f.description.unwrap_or_default(),
        cpus: slots.into_iter().map(|s| s.info).collect(),
        itmt_enabled: f.itmt_enabled.unwrap_or(false),
        sched_energy_aware: f.sched_energy_aware.unwrap_or(true),
        hz,
        preempt,
        costs,
        jitter,
        idle,
        noise,
        perf_domains,
    })
}

/// A `[layout]` count: 1..=MAX_CPUS, or the default when absent.
fn count(ctx: &Ctx, v: &Option<Spanned<i64>>, key: &str, default: usize) -> Result<usize, InputError> {
    match v {
        None => Ok(default),
        Some(s) => positive(ctx, s, key),
    }
}

fn positive(ctx: &Ctx, s: &Spanned<i64>, key: &str) -> Result<usize, InputError> {
    let v = *s.get_ref();
    if v < 1 || v as u64 > MAX_CPUS as u64 {
        return Err(ctx.err(&s.span(), format!("{key} = {v} is out of range (expected 1..={MAX_CPUS})")));
    }
    Ok(v as usize)
}

/// Expand `[layout]` into CPUs, numbered as Linux would.
fn generate(ctx: &Ctx, l: &Spanned<LayoutFile>) -> Result<Vec<Slot>, InputError> {
    let span = l.span();
    let l = l.get_ref();
    let packages = count(ctx, &l.packages, "packages", 1)?;
    let nodes = count(ctx, &l.nodes_per_package, "nodes_per_package", 1)?;
    let llcs = count(ctx, &l.llcs_per_package, "llcs_per_package", 1)?;
    let Some(cores) = &l.cores_per_llc else {
        return Err(
            ctx.err(&span, "[layout] has no `cores_per_llc` (expected the number of physical cores sharing one LLC)")
        );
    };
    let cores = positive(ctx, cores, "cores_per_llc")?;
    let threads = count(ctx, &l.threads_per_core, "threads_per_core", 1)?;
    let numbering = l.smt_numbering.unwrap_or(SmtNumbering::SiblingOffset);

    let total = packages
        .checked_mul(llcs)
        .and_then(|x| x.checked_mul(cores))
        .and_then(|x| x.checked_mul(threads))
        .filter(|&n| n <= MAX_CPUS);
    let Some(total) = total else {
        return Err(ctx.err(
            &span,
            format!(
                "[layout] describes more than {MAX_CPUS} CPUs \
                 (packages × llcs_per_package × cores_per_llc × threads_per_core); the model supports at most {MAX_CPUS}"
            ),
        ));
    };
    if llcs % nodes != 0 {
        let s = l.nodes_per_package.as_ref().map(|s| s.span()).unwrap_or(span);
        return Err(ctx.err(
            &s,
            format!("nodes_per_package = {nodes} does not divide llcs_per_package = {llcs} (expected each NUMA node to hold whole LLCs)"),
        ));
    }
    let total_cores = total / threads;
    let llcs_per_node = llcs / nodes;
    let mut out: Vec<Slot> = Vec::with_capacity(total);
    for p in 0..packages {
        for lc in 0..llcs {
            let llc = p * llcs + lc;
            for c in 0..cores {
                let core = llc * cores + c;
                for t in 0..threads {
                    let id = match numbering {
                        SmtNumbering::SiblingOffset => t * total_cores + core,
                        SmtNumbering::Adjacent => core * threads + t,
                    };
                    out.push(Slot {
                        info: CpuInfo {
                            id,
                            core,
                            llc,
                            package: p,
                            node: p * nodes + lc / llcs_per_node,
                            capacity: 1024,
                            asym_prio: 0,
                            core_type: None,
                            hwp_highest_perf: None,
                        },
                        entry: None,
                        cap_src: None,
                        prio_src: None,
                    });
                }
            }
        }
    }
    out.sort_by_key(|s| s.info.id);
    Ok(out)
}

/// An index field of a `[[cpus]]` entry (core, llc, package, node).
fn index(ctx: &Ctx, s: &Spanned<i64>, key: &str) -> Result<usize, InputError> {
    let v = *s.get_ref();
    if v < 0 || v as u64 >= MAX_CPUS as u64 {
        return Err(ctx.err(&s.span(), format!("{key} = {v} is out of range (expected 0..{MAX_CPUS})")));
    }
    Ok(v as usize)
}

fn capacity_value(ctx: &Ctx, s: &Spanned<i64>) -> Result<u32, InputError> {
    let v = *s.get_ref();
    if !(1..=1024).contains(&v) {
        return Err(ctx.err(
            &s.span(),
            format!("capacity {v} is out of range (expected 1..=1024; 1024 is the biggest CPU, SCHED_CAPACITY_SCALE)"),
        ));
    }
    Ok(v as u32)
}

fn prio_value(ctx: &Ctx, s: &Spanned<i64>) -> Result<i32, InputError> {
    let v = *s.get_ref();
    i32::try_from(v).map_err(|_| {
        ctx.err(
            &s.span(),
            format!("asym_prio {v} does not fit the kernel's int (expected {}..={})", i32::MIN, i32::MAX),
        )
    })
}

/// Apply `[[cpus]]`: overrides of generated CPUs, or the explicit list.
fn apply_cpu_entries(
    ctx: &Ctx,
    slots: &mut Vec<Slot>,
    layout: Option<Span>,
    entries: &[Spanned<CpuFile>],
) -> Result<(), InputError> {
    let generated = slots.len();
    let mut seen: BTreeMap<usize, Span> = BTreeMap::new();
    for e in entries {
        let span = e.span();
        let e = e.get_ref();
        let id_raw = *e.id.get_ref();
        if id_raw < 0 || id_raw as u64 >= MAX_CPUS as u64 {
            return Err(ctx.err(&e.id.span(), format!("CPU id {id_raw} is out of range (expected 0..{MAX_CPUS})")));
        }
        let id = id_raw as usize;
        if layout.is_some() && id >= generated {
            return Err(ctx.err(
                &e.id.span(),
                format!(
                    "CPU {id} does not exist: [layout] gives CPUs 0-{} (expected an id in that range)",
                    generated - 1
                ),
            ));
        }
        if let Some(first) = seen.insert(id, e.id.span()) {
            return Err(ctx.err(
                &e.id.span(),
                format!(
                    "CPU {id} has a second [[cpus]] entry (the first is at line {}; expected one per CPU)",
                    ctx.line(&first)
                ),
            ));
        }
        let core = e.core.as_ref().map(|s| index(ctx, s, "core")).transpose()?;
        let llc = e.llc.as_ref().map(|s| index(ctx, s, "llc")).transpose()?;
        let package = e.package.as_ref().map(|s| index(ctx, s, "package")).transpose()?;
        let node = e.node.as_ref().map(|s| index(ctx, s, "node")).transpose()?;
        let capacity = e.capacity.as_ref().map(|s| capacity_value(ctx, s)).transpose()?;
        let prio = e.asym_prio.as_ref().map(|s| prio_value(ctx, s)).transpose()?;

        let slot = if layout.is_some() {
            &mut slots[id]
        } else {
            let (Some(core), Some(llc)) = (core, llc) else {
                let missing = if core.is_none() { "core" } else { "llc" };
                return Err(ctx.err(
                    &span,
                    format!("CPU {id} has no `{missing}` (expected `core` and `llc` in every [[cpus]] entry when there is no [layout])"),
                ));
            };
            slots.push(Slot {
                info: CpuInfo {
                    id,
                    core,
                    llc,
                    package: 0,
                    node: 0,
                    capacity: 1024,
                    asym_prio: 0,
                    core_type: None,
                    hwp_highest_perf: None,
                },
                entry: None,
                cap_src: None,
                prio_src: None,
            });
            slots.last_mut().expect("just pushed")
        };
        slot.entry = Some(span);
        if let Some(v) = core {
            slot.info.core = v;
        }
        if let Some(v) = llc {
            slot.info.llc = v;
        }
        if let Some(v) = package {
            slot.info.package = v;
        }
        if let Some(v) = node {
            slot.info.node = v;
        }
        if let Some(v) = capacity {
            slot.info.capacity = v;
            slot.cap_src = e.capacity.as_ref().map(|s| s.span());
        }
        if let Some(v) = prio {
            slot.info.asym_prio = v;
            slot.prio_src = e.asym_prio.as_ref().map(|s| s.span());
        }
    }
    if layout.is_none() && !slots.is_empty() {
        slots.sort_by_key(|s| s.info.id);
        if let Some(gap) = slots.iter().enumerate().find(|(i, s)| s.info.id != *i).map(|(i, _)| i) {
            let last = slots.last().expect("not empty");
            return Err(ctx.err(
                last.entry.as_ref().unwrap_or(&(0..0)),
                format!(
                    "CPU ids must be 0..{} without gaps, but there is no [[cpus]] entry for CPU {gap}",
                    last.info.id
                ),
            ));
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Field {
    Capacity,
    Prio,
}

/// The CPUs a `"cpulist" = value` table's key names, all inside the
/// machine's `n` CPUs; errors name the table.
fn table_key_cpus(ctx: &Ctx, key: &Spanned<String>, n: usize, table_name: &str) -> Result<crate::CpuSet, InputError> {
    let set = parse_cpulist(key.get_ref())
        .map_err(|m| ctx.err(&key.span(), format!("bad cpulist `{}` in {table_name}: {m}", key.get_ref())))?;
    if let Some(last) = set.last().filter(|&l| l >= n) {
        return Err(ctx.err(
            &key.span(),
            format!(
                "cpulist `{}` in {table_name} names CPU {last}, but this machine has CPUs 0-{} (expected CPUs inside the machine)",
                key.get_ref(),
                n - 1
            ),
        ));
    }
    Ok(set)
}

/// Apply a `[capacity]` or `[asym_prio]` table of `"cpulist" = value`.
fn apply_table(ctx: &Ctx, slots: &mut [Slot], table: &CpuTable, field: Field) -> Result<(), InputError> {
    let (table_name, what) = match field {
        Field::Capacity => ("[capacity]", "capacity"),
        Field::Prio => ("[asym_prio]", "asym_prio"),
    };
    let n = slots.len();
    let mut entries: Vec<(&Spanned<String>, &Spanned<i64>)> = table.get_ref().iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    let mut owner: Vec<Option<&Spanned<String>>> = vec![None; n];
    for (key, value) in entries {
        let set = table_key_cpus(ctx, key, n, table_name)?;
        let (cap, prio) = match field {
            Field::Capacity => (Some(capacity_value(ctx, value)?), None),
            Field::Prio => (None, Some(prio_value(ctx, value)?)),
        };
        for cpu in set.iter() {
            if let Some(prev) = owner[cpu] {
                return Err(ctx.err(
                    &key.span(),
                    format!(
                        "CPU {cpu} is given {what} by both `{}` and `{}` in {table_name} (expected each CPU once)",
                        prev.get_ref(),
                        key.get_ref()
                    ),
                ));
            }
            owner[cpu] = Some(key);
            let slot = &mut slots[cpu];
            let src = match field {
                Field::Capacity => &mut slot.cap_src,
                Field::Prio => &mut slot.prio_src,
            };
            if let Some(prev) = src {
                return Err(ctx.err(
                    &key.span(),
                    format!(
                        "CPU {cpu} already has its {what} set in its [[cpus]] entry at line {} (expected it in one place only)",
                        ctx.line(prev)
                    ),
                ));
            }
            *src = Some(key.span());
            if let Some(c) = cap {
                slot.info.capacity = c;
            }
            if let Some(p) = prio {
                slot.info.asym_prio = p;
            }
        }
    }
    Ok(())
}

/// Where to point for a structural problem between two CPUs: the later
/// `[[cpus]]` entry of the two, else `[layout]`, else the file start.
fn blame(a: &Slot, b: &Slot, layout: Option<&Span>) -> Span {
    match (&a.entry, &b.entry) {
        (Some(x), Some(y)) => {
            if x.start >= y.start {
                x.clone()
            } else {
                y.clone()
            }
        }
        (Some(x), None) | (None, Some(x)) => x.clone(),
        (None, None) => layout.cloned().unwrap_or(0..0),
    }
}

/// SMT siblings share an LLC, package and node; an LLC lies in one
/// package; core/LLC/package/node ids are dense so other crates can use
/// them as array indices.
fn check_structure(ctx: &Ctx, slots: &[Slot], layout: Option<&Span>) -> Result<(), InputError> {
    type Get = fn(&CpuInfo) -> usize;
    let kinds: [(&str, Get); 4] =
        [("core", |c| c.core), ("LLC", |c| c.llc), ("package", |c| c.package), ("node", |c| c.node)];
    for (kind, get) in kinds {
        let used: CpuSet = slots.iter().map(|s| get(&s.info)).collect();
        if let Some(gap) = (0..slots.len()).find(|&i| !used.contains(i) && used.last().is_some_and(|l| l > i)) {
            let culprit = slots.iter().find(|s| get(&s.info) > gap).expect("a larger id exists");
            let span = culprit.entry.clone().or_else(|| layout.cloned()).unwrap_or(0..0);
            return Err(ctx.err(
                &span,
                format!(
                    "{kind} ids must be numbered 0..k without gaps: no CPU is in {kind} {gap}, but CPU {} is in {kind} {}",
                    culprit.info.id,
                    get(&culprit.info)
                ),
            ));
        }
    }
    let mut first_of_core: BTreeMap<usize, usize> = BTreeMap::new();
    let mut first_of_llc: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, s) in slots.iter().enumerate() {
        let c = &s.info;
        let f = *first_of_core.entry(c.core).or_insert(i);
        let o = &slots[f].info;
        for (what, a, b) in [("LLC", o.llc, c.llc), ("package", o.package, c.package), ("node", o.node, c.node)] {
            if a != b {
                return Err(ctx.err(
                    &blame(&slots[f], s, layout),
                    format!(
                        "CPU {} and CPU {} are SMT siblings (core {}) but are in {what} {a} and {what} {b} (expected siblings to share it)",
                        o.id, c.id, c.core
                    ),
                ));
            }
        }
        let f = *first_of_llc.entry(c.llc).or_insert(i);
        let o = &slots[f].info;
        if o.package != c.package {
            return Err(ctx.err(
                &blame(&slots[f], s, layout),
                format!(
                    "CPU {} and CPU {} share LLC {} but are in package {} and package {} (expected an LLC inside one package)",
                    o.id, c.id, c.llc, o.package, c.package
                ),
            ));
        }
    }
    Ok(())
}

/// x86 gives all SMT siblings of a core the same ITMT priority since 6.5
/// (commit 046a5a95c3b0); a file that disagrees describes no real kernel.
fn check_smt_prio(ctx: &Ctx, slots: &[Slot]) -> Result<(), InputError> {
    let mut first_of_core: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, s) in slots.iter().enumerate() {
        let f = *first_of_core.entry(s.info.core).or_insert(i);
        let o = &slots[f];
        if o.info.asym_prio != s.info.asym_prio {
            let span = match (&o.prio_src, &s.prio_src) {
                (Some(a), Some(b)) => {
                    if a.start > b.start {
                        a.clone()
                    } else {
                        b.clone()
                    }
                }
                (Some(a), None) | (None, Some(a)) => a.clone(),
                (None, None) => 0..0,
            };
            return Err(ctx.err(
                &span,
                format!(
                    "SMT siblings CPU {} and CPU {} have different asym_prio ({} and {}); expected one priority per core, \
                     as x86 gives all SMT siblings the same ITMT priority since 6.5 (commit 046a5a95c3b0)",
                    o.info.id, s.info.id, o.info.asym_prio, s.info.asym_prio
                ),
            ));
        }
    }
    Ok(())
}

fn check_capacity(ctx: &Ctx, slots: &[Slot]) -> Result<(), InputError> {
    if slots.iter().any(|s| s.info.capacity == 1024) {
        return Ok(());
    }
    let span = slots.iter().filter_map(|s| s.cap_src.clone()).min_by_key(|s| s.start).unwrap_or(0..0);
    Err(ctx.err(
        &span,
        "no CPU has capacity 1024 (expected the biggest CPU at 1024 = SCHED_CAPACITY_SCALE; others relative to it)",
    ))
}

fn cost(ctx: &Ctx, v: Option<Spanned<crate::DurationNs>>, key: &str, default: u64) -> Result<u64, InputError> {
    match v {
        None => Ok(default),
        Some(s) if s.get_ref().0 > MAX_COST_NS => {
            Err(ctx.err(&s.span(), format!("{key} = {} ns is implausibly large (expected at most 1s)", s.get_ref().0)))
        }
        Some(s) => Ok(s.get_ref().0),
    }
}

fn costs(ctx: &Ctx, c: crate::file::CostsFile) -> Result<Costs, InputError> {
    let d = Costs::default();
    let smt_speed_pct = match c.smt_speed_pct {
        None => d.smt_speed_pct,
        Some(s) => {
            let v = *s.get_ref();
            if !(1..=100).contains(&v) {
                return Err(ctx.err(&s.span(), format!("smt_speed_pct = {v} is out of range (expected 1..=100)")));
            }
            v as u32
        }
    };
    Ok(Costs {
        ipi_ns: cost(ctx, c.ipi_ns, "ipi_ns", d.ipi_ns)?,
        context_switch_ns: cost(ctx, c.context_switch_ns, "context_switch_ns", d.context_switch_ns)?,
        migration_cold_ns: cost(ctx, c.migration_cold_ns, "migration_cold_ns", d.migration_cold_ns)?,
        smt_speed_pct,
        newidle_balance_ns_per_cpu: cost(
            ctx,
            c.newidle_balance_ns_per_cpu,
            "newidle_balance_ns_per_cpu",
            d.newidle_balance_ns_per_cpu,
        )?,
        syscall_ns: cost(ctx, c.syscall_ns, "syscall_ns", d.syscall_ns)?,
        trace_marker_ns: cost(ctx, c.trace_marker_ns, "trace_marker_ns", d.trace_marker_ns)?,
        tracepoint_ns: cost(ctx, c.tracepoint_ns, "tracepoint_ns", d.tracepoint_ns)?,
        timer_irq_ns: cost(ctx, c.timer_irq_ns, "timer_irq_ns", d.timer_irq_ns)?,
        timer_irq_exit_ns: cost(ctx, c.timer_irq_exit_ns, "timer_irq_exit_ns", d.timer_irq_exit_ns)?,
        idle_exit_tail_ns: cost(ctx, c.idle_exit_tail_ns.clone(), "idle_exit_tail_ns", d.idle_exit_tail_ns)?,
        idle_exit_tail_p99_ns: {
            let p50 = cost(ctx, c.idle_exit_tail_ns.clone(), "idle_exit_tail_ns", d.idle_exit_tail_ns)?;
            match c.idle_exit_tail_p99_ns {
                None => p50,
                Some(v) => {
                    let p99 = cost(ctx, Some(v.clone()), "idle_exit_tail_p99_ns", 0)?;
                    if p99 < p50 {
                        return Err(ctx.err(&v.span(), format!(
                            "idle_exit_tail_p99_ns ({p99} ns) is below idle_exit_tail_ns ({p50} ns) (expected a p99 at or above the median)"
                        )));
                    }
                    p99
                }
            }
        },
        kernel: d.kernel,
        levels: d.levels,
    })
}

fn jitter(ctx: &Ctx, j: crate::file::JitterFile) -> Result<Jitter, InputError> {
    let burst_pct = match j.burst_pct {
        None => 0.0,
        Some(s) => {
            let v = *s.get_ref();
            if !(v.is_finite() && (0.0..100.0).contains(&v)) {
                return Err(
                    ctx.err(&s.span(), format!("burst_pct = {v} is out of range (expected 0 <= burst_pct < 100)"))
                );
            }
            v
        }
    };
    Ok(Jitter { burst_pct, ipi_ns: cost(ctx, j.ipi_ns, "ipi_ns", 0)? })
}
