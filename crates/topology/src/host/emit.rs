//! The host as topology TOML text. Every value is preceded by a comment
//! saying where it came from; the file loads with [`crate::Topology`].

use std::fmt::Write as _;

use super::emit_costs::{costs_section, noise_section};
use super::measured::{exit_curve, timer_exit_curve, CurvePoint, Measured, TimerProbe, WakeProbe};
use super::{HostIdleState, HostMachine};
use crate::{CpuSet, Topology};

/// What the caller adds to the file.
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// `name = ...`; without it the file has none, and the loader names the
    /// topology after the file.
    pub name: Option<String>,
    /// Header lines (without `# `), e.g. how and when the file was made.
    pub header: Vec<String>,
}

/// The whole file.
pub fn render(host: &HostMachine, measured: Option<&Measured>, opts: &RenderOptions) -> String {
    let mut o = String::new();
    let n = host.cpus.len();
    let kind = if host.guest { "guest (CPU flag hypervisor)" } else { "bare metal" };
    for h in &opts.header {
        line(&mut o, &format!("# {h}"));
    }
    line(&mut o, &format!("# This machine: {}, {n} online CPUs, {kind}, kernel {}.", host.cpu_model, host.kernel));
    line(&mut o, "# Each value is marked [<path>] (read from that sysfs/procfs file), [measured: probe ...]");
    line(&mut o, "# (a short real measurement by `schedlab topologies --host`) or [assumed: why].");
    match measured {
        Some(m) => {
            if m.rounds > 1 {
                line(
                    &mut o,
                    &format!(
                        "# The probes ran {} rounds, {:.1} s in all. Each measured figure below is the median of the rounds'\n\
                         # (per percentile and idle length; a \"median of K batches\" is one round's); the noise rounds' gaps\n\
                         # are pooled over their summed time.",
                        m.rounds,
                        m.elapsed_ns as f64 / 1e9
                    ),
                );
            } else {
                line(&mut o, &format!("# The probes ran {:.1} s.", m.elapsed_ns as f64 / 1e9));
            }
            for note in &m.notes {
                line(&mut o, &format!("# probe note: {note}"));
            }
        }
        None => line(&mut o, "# Probes not run (--no-probe): every cost below is assumed."),
    }
    for note in &host.notes {
        line(&mut o, &format!("# note: {note}"));
    }
    line(&mut o, "");
    match &opts.name {
        Some(name) => {
            let _ = writeln!(o, "name = {}", quote(name));
        }
        None => line(&mut o, "# name: the file's name without .toml (the loader's default)"),
    }
    let desc = format!(
        "{DESC_PREFIX}{} ({n} CPUs, {}), kernel {} (HZ={}, preempt={}){DESC_SUFFIX}",
        host.cpu_model,
        if host.guest { "guest" } else { "bare metal" },
        host.kernel,
        host.hz.value,
        host.preempt.value
    );
    let _ = writeln!(o, "description = {}", quote(&desc));
    let _ = writeln!(o, "\n# {}\nhz = {}", host.hz.source, host.hz.value);
    let _ = writeln!(o, "# {}\npreempt = \"{}\"", host.preempt.source, host.preempt.value);
    let _ = writeln!(o, "# {}\nitmt_enabled = {}", host.itmt.source, host.itmt.value);
    cpus_section(&mut o, host);
    super::cpufreq::section(&mut o, host);
    idle_section(&mut o, host, measured);
    costs_section(&mut o, host, measured);
    noise_section(&mut o, measured, host.hz.value);
    o
}

fn line(o: &mut String, s: &str) {
    o.push_str(s);
    o.push('\n');
}

fn quote(s: &str) -> String {
    let mut q = String::from('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => q.push(' '),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// A duration as the file's string syntax, rounded for reading: below 1 us
/// in ns, below 1 ms to 0.1 us, below 1 s to 1 us.
pub(crate) fn dur(ns: u64) -> String {
    fn trim(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
    if ns == 0 {
        "\"0us\"".to_string()
    } else if ns < 1_000 {
        format!("\"{ns}ns\"")
    } else if ns < 1_000_000 {
        let tenths = (ns + 50) / 100;
        format!("\"{}us\"", trim(format!("{}.{}", tenths / 10, tenths % 10)))
    } else if ns < 1_000_000_000 {
        let us = (ns + 500) / 1_000;
        format!("\"{}ms\"", trim(format!("{}.{:03}", us / 1_000, us % 1_000)))
    } else {
        let ms = (ns + 500_000) / 1_000_000;
        format!("\"{}s\"", trim(format!("{}.{:03}", ms / 1_000, ms % 1_000)))
    }
}

/// `(layout counts, smt numbering)` when a `[layout]` generates exactly
/// this machine (same CPU numbers, same groups), else `None`.
fn layout_of(host: &HostMachine) -> Option<String> {
    let cpus = &host.cpus;
    if cpus.is_empty() || host.renumbered() {
        return None;
    }
    // Asymmetric capacities are per-CPU facts: [[cpus]] says them in place.
    let caps: Vec<u32> = cpus.iter().map(|c| c.capacity.unwrap_or(1024)).collect();
    if caps.iter().any(|&c| c != caps[0]) {
        return None;
    }
    let count = |f: fn(&super::HostCpu) -> usize| cpus.iter().map(f).max().map_or(0, |m| m + 1);
    let (cores, llcs, packages, nodes) = (count(|c| c.core), count(|c| c.llc), count(|c| c.package), count(|c| c.node));
    if !(cpus.len().is_multiple_of(cores)
        && cores.is_multiple_of(llcs)
        && llcs.is_multiple_of(packages)
        && nodes.is_multiple_of(packages))
    {
        return None;
    }
    let threads = cpus.len() / cores;
    let body = format!(
        "[layout]\npackages = {packages}\nnodes_per_package = {}\nllcs_per_package = {}\ncores_per_llc = {}\nthreads_per_core = {threads}\n",
        nodes / packages,
        llcs / packages,
        cores / llcs
    );
    let mine = canonical(cpus.iter().map(|c| [c.core, c.llc, c.package, c.node]));
    for numbering in ["sibling-offset", "adjacent"] {
        let text = format!("hz = 250\npreempt = \"none\"\n{body}smt_numbering = \"{numbering}\"\n");
        let Ok(t) = Topology::from_toml_str("<layout check>", &text) else { continue };
        if t.nr_cpus() == cpus.len() && canonical(t.cpus.iter().map(|c| [c.core, c.llc, c.package, c.node])) == mine {
            return Some(if threads > 1 { format!("{body}smt_numbering = \"{numbering}\"\n") } else { body });
        }
    }
    None
}

/// Renumber each column by first appearance, so two numberings of the
/// same grouping compare equal.
fn canonical(rows: impl Iterator<Item = [usize; 4]>) -> Vec<[usize; 4]> {
    let mut maps: [std::collections::HashMap<usize, usize>; 4] = Default::default();
    rows.map(|r| {
        let mut out = [0; 4];
        for k in 0..4 {
            let next = maps[k].len();
            out[k] = *maps[k].entry(r[k]).or_insert(next);
        }
        out
    })
    .collect()
}

/// Capacities scaled so the biggest CPU is 1024 (the loader's rule and the
/// kernel's: arch_scale_cpu_capacity() is relative to the biggest CPU).
fn capacities(host: &HostMachine) -> Vec<u32> {
    let raw: Vec<u32> = host.cpus.iter().map(|c| c.capacity.unwrap_or(1024)).collect();
    let max = raw.iter().copied().max().unwrap_or(1024).max(1);
    raw.iter().map(|&c| ((c as u64 * 1024 + max as u64 / 2) / max as u64).clamp(1, 1024) as u32).collect()
}

/// One priority per core (x86 gives SMT siblings one since 6.5): the core's highest.
fn priorities(host: &HostMachine) -> Option<Vec<i32>> {
    host.prio_source.as_ref()?;
    Some(
        host.cpus
            .iter()
            .map(|c| {
                let best = host.cpus.iter().filter(|o| o.core == c.core).filter_map(|o| o.prio).max().unwrap_or(0);
                best.clamp(i32::MIN as i64, i32::MAX as i64) as i32
            })
            .collect(),
    )
}

/// On an Intel hybrid part (the hybrid PMUs list core types, CPPC gives
/// each CPU's highest performance, no `cpu_capacity`): per CPU the HWP
/// highest performance (its core's highest, siblings alike) and the core
/// type, which the kernel profile turns into its version's regime
/// (`[hwp_highest_perf]`, `[core_type]`) instead of fixed priorities.
fn intel_hybrid(host: &HostMachine) -> Option<(Vec<i32>, Vec<&'static str>)> {
    host.core_type_source.as_ref()?;
    if host.capacity_source.is_some() || !host.prio_source.as_deref()?.ends_with("acpi_cppc/highest_perf") {
        return None;
    }
    let perf = priorities(host)?;
    let types: Option<Vec<&'static str>> = host.cpus.iter().map(|c| c.core_type).collect();
    (perf.iter().all(|p| (1..=255).contains(p))).then_some((perf, types?))
}

fn cpus_section(o: &mut String, host: &HostMachine) {
    let src = "[/sys/devices/system/cpu/cpuN/topology/{thread_siblings_list,physical_package_id}, \
               cpuN/cache/index*/{level,shared_cpu_list} (the LLC), /sys/devices/system/node/nodeN/cpulist]";
    let caps = capacities(host);
    let hybrid = intel_hybrid(host);
    let prios = if hybrid.is_some() { None } else { priorities(host) };
    let cap_src = host.capacity_source.as_deref().unwrap_or("");
    let layout = layout_of(host);
    if let Some(layout) = &layout {
        let _ =
            writeln!(o, "\n# {src}\n# The machine is regular: this [layout] generates exactly the CPUs sysfs lists.");
        o.push_str(layout);
    } else {
        let why = if host.renumbered() {
            "CPU numbers are not 0..N (offline CPUs or holes): model ids are dense, each entry names its sysfs CPU"
        } else {
            "no [layout] generates this machine (uneven groups or capacities): one entry per CPU"
        };
        let _ = writeln!(o, "\n# {src}\n# {why}.");
        for (i, c) in host.cpus.iter().enumerate() {
            let _ = writeln!(o, "[[cpus]]  # sysfs cpu{}", c.sysfs_id);
            let _ =
                writeln!(o, "id = {i}\ncore = {}\nllc = {}\npackage = {}\nnode = {}", c.core, c.llc, c.package, c.node);
            if c.capacity.is_some() && caps.iter().any(|&k| k != 1024) {
                let _ = writeln!(
                    o,
                    "capacity = {}  # [{}]",
                    caps[i],
                    cap_src.replace("cpuN", &format!("cpu{}", c.sysfs_id))
                );
            }
            if let Some(p) = &prios {
                let _ = writeln!(o, "asym_prio = {}  # [{}]", p[i], host.prio_source.as_deref().unwrap_or(""));
            }
        }
    }
    // Capacity and priority comments / tables.
    let scaled = host.cpus.iter().filter_map(|c| c.capacity).max().is_some_and(|m| m != 1024);
    match (&host.capacity_source, caps.iter().all(|&c| c == 1024)) {
        (Some(s), true) => {
            let _ = writeln!(o, "\n# capacity: 1024 on every CPU (the default) [{s}]");
        }
        (Some(s), false) => {
            let scale = if scaled { ", scaled so the biggest CPU is 1024" } else { "" };
            let _ = writeln!(o, "\n# capacity: per CPU in the [[cpus]] entries [{s}{scale}]");
        }
        (None, _) => {
            let _ = writeln!(
                o,
                "\n# capacity: 1024 on every CPU [assumed: no cpuN/cpu_capacity, i.e. the arch reports no asymmetry]"
            );
        }
    }
    if let Some((perf, types)) = &hybrid {
        let _ = writeln!(
            o,
            "# hwp_highest_perf: [{}], the core's highest; core_type: [{}]. An Intel hybrid part: the kernel \
             profile turns these into its version's ITMT priorities or capacities (docs/topology-file.md)",
            host.prio_source.as_deref().unwrap_or(""),
            host.core_type_source.as_deref().unwrap_or("")
        );
        let _ = writeln!(o, "[hwp_highest_perf]");
        for (v, set) in group_by(perf.iter().copied()).iter().rev() {
            let _ = writeln!(o, "\"{}\" = {v}", set.to_cpulist());
        }
        let _ = writeln!(o, "[core_type]");
        for (ty, set) in group_by(types.iter().copied()) {
            let _ = writeln!(o, "\"{}\" = \"{ty}\"", set.to_cpulist());
        }
        return;
    }
    match (&prios, &host.prio_source) {
        (Some(p), Some(s)) => {
            let _ = writeln!(o, "# asym_prio: [{s}], one value per core (the highest of its SMT siblings)");
            if layout.is_some() {
                let _ = writeln!(o, "[asym_prio]");
                for (v, set) in group_by(p.iter().copied()).iter().rev() {
                    let _ = writeln!(o, "\"{}\" = {v}", set.to_cpulist());
                }
            } else {
                let _ = writeln!(o, "# (in the [[cpus]] entries)");
            }
        }
        _ => {
            let _ = writeln!(
                o,
                "# asym_prio: 0 everywhere [assumed: no cpufreq/amd_pstate_prefcore_ranking or acpi_cppc/highest_perf]"
            );
        }
    }
}

/// Model CPU ids by value, in value order.
fn group_by<V: Ord>(values: impl Iterator<Item = V>) -> std::collections::BTreeMap<V, CpuSet> {
    let mut by: std::collections::BTreeMap<V, CpuSet> = Default::default();
    for (i, v) in values.enumerate() {
        by.entry(v).or_default().insert(i);
    }
    by
}

/// The nearest level's wake probe that gives an exit curve.
fn curve(measured: Option<&Measured>) -> Option<(&WakeProbe, Vec<CurvePoint>)> {
    measured?.wake.iter().find_map(|w| exit_curve(w).map(|c| (w, c)))
}

/// The state a vCPU's HLT lands in, which the measured exit curves
/// describe: the driver-less halt, a sysfs state named or described as a
/// HLT (acpi_idle's "ACPI HLT"), or the haltpoll driver's one non-polling
/// state (`haltpoll idle`, "default architecture idle"), whose `enter` is
/// `default_enter_idle()` → `default_idle()` (drivers/cpuidle/
/// cpuidle-haltpoll.c, 6.12). That state's sysfs latency of 1 us is the
/// driver's declaration, not the cost of a vCPU's halt.
fn halt_state(driver: &str, states: &[HostIdleState]) -> Option<usize> {
    let halts: Vec<usize> = states
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            !s.polling && (driver == "haltpoll" || s.name == "HLT" || s.desc.to_ascii_uppercase().contains("HLT"))
        })
        .map(|(i, _)| i)
        .collect();
    (halts.len() == 1).then(|| halts[0])
}

fn idle_section(o: &mut String, host: &HostMachine, measured: Option<&Measured>) {
    let idle = &host.idle;
    let _ = writeln!(o, "\n[idle]\n# {}\ndriver = {}", idle.driver.source, quote(&idle.driver.value));
    let _ = writeln!(o, "# {}\ngovernor = {}", idle.governor.source, quote(&idle.governor.value));
    for note in &idle.notes {
        let _ = writeln!(o, "# note: {note}");
    }
    if idle.driver.value == "none" {
        let _ =
            writeln!(o, "# No cpuidle driver: no per-CPU states in sysfs; the idle loop halts in the one state below.");
    }
    let halt = halt_state(&idle.driver.value, &idle.states);
    let curve = curve(measured);
    let timer = measured.and_then(|m| m.timer.as_ref()).and_then(|t| timer_exit_curve(t).map(|c| (t, c)));
    for (i, s) in idle.states.iter().enumerate() {
        let _ = writeln!(o, "\n[[idle.states]]\n# {}\nname = {}", s.source, quote(&s.name));
        let measured_here = (Some(i) == halt).then_some(curve.as_ref()).flatten();
        match (s.exit_latency_ns, measured_here) {
            (Some(l), None) => {
                let _ = writeln!(o, "# stateK/latency\nexit_latency = {}", dur(l));
            }
            (Some(l), Some(_)) => {
                let _ = writeln!(
                    o,
                    "# stateK/latency: the driver's declared figure; the measured curve below replaces it\nexit_latency = {}",
                    dur(l)
                );
            }
            (None, Some((w, c))) => {
                let _ = writeln!(
                    o,
                    "# [measured: probe wake {}->{}: the shortest idle's point of the curve below]\nexit_latency = {}",
                    w.waker,
                    w.wakee,
                    dur(c[0].p50_ns)
                );
            }
            (None, None) => {
                let (v, why) = if host.guest {
                    (20_000, "a vCPU's HLT exits to the host, which must wake the vCPU thread: tens of us")
                } else {
                    (1_000, "HLT/C1 on current x86 exits in about 1 us")
                };
                let _ = writeln!(o, "# [assumed: {why}]\nexit_latency = {}", dur(v));
            }
        }
        let rsrc =
            if s.exit_latency_ns.is_some() { "stateK/residency" } else { "[assumed: the only state, chosen always]" };
        let _ = writeln!(o, "# {rsrc}\ntarget_residency = {}", dur(s.target_residency_ns));
        let why = if s.polling {
            "name POLL or desc MWAIT: the polling flag stays set, a wakeup needs no IPI"
        } else {
            "not POLL, no MWAIT: a wakeup needs an IPI"
        };
        let _ = writeln!(o, "# {why}\npolling = {}", s.polling);
        if let Some((w, c)) = measured_here {
            let _ = writeln!(
                o,
                "# [measured: probe wake {} -> {} ({} level): CPU {} spins for the idle length while CPU {}'s thread\n\
                 # sleeps in FUTEX_WAIT, then FUTEX_WAKEs it; latency = the wakee's CLOCK_MONOTONIC stamp minus the\n\
                 # waker's. Each point = that latency minus the median latency of the same wakeup onto the CPU\n\
                 # while it runs a nice-19 spinner (no idle exit: {}), floored at 0; p99 likewise.\n\
                 # (On a shared machine a p99 near one tick, 1/HZ, is a wakee that found its CPU running\n\
                 # another task and waited for the tick to preempt it.)\n\
                 # Samples per point: {}]",
                w.waker,
                w.wakee,
                w.level.as_str(),
                w.waker,
                w.wakee,
                w.busy.map_or(String::new(), |b| format!(
                    "p50 {} p99 {}",
                    dur(b.p50).trim_matches('"'),
                    dur(b.p99).trim_matches('"')
                )),
                w.by_idle.iter().map(|(_, p)| p.n.to_string()).collect::<Vec<_>>().join(", ")
            );
            points(o, "exit_latency_by_idle", c);
        }
        if let Some((t, c)) = timer.as_ref().filter(|_| Some(i) == halt) {
            timer_comment(o, t);
            points(o, "timer_exit_latency_by_idle", c);
        }
    }
    if halt.is_none() {
        if let Some((w, c)) = &curve {
            let _ = writeln!(
                o,
                "# [measured, for reference: probe wake {}->{}: wakeup after idle minus busy wakeup (p50): {}]",
                w.waker,
                w.wakee,
                c.iter()
                    .map(|p| format!("{}: {}", dur(p.idle_ns), dur(p.p50_ns)))
                    .collect::<Vec<_>>()
                    .join(", ")
                    .replace('"', "")
            );
        }
    }
    if let Some(h) = &idle.haltpoll {
        let _ = writeln!(
            o,
            "\n[idle.haltpoll]\n# {}\nguest_halt_poll_ns = {}\ngrow = {}\ngrow_start = {}\nshrink = {}\nallow_shrink = {}",
            h.source,
            dur(h.poll_ns),
            h.grow,
            dur(h.grow_start_ns),
            h.shrink,
            h.allow_shrink
        );
    }
}

/// A curve, without the points a disturbed round left beyond what a
/// topology file accepts (each said in a comment, as not measured), so one
/// noisy point costs that point and not the whole file.
pub(super) fn points(o: &mut String, key: &str, c: &[CurvePoint]) {
    let limit = crate::assemble::hardware::MAX_IDLE_NS;
    let (kept, dropped): (Vec<&CurvePoint>, Vec<&CurvePoint>) =
        c.iter().partition(|p| p.p50_ns <= limit && p.p99_ns <= limit);
    for p in &dropped {
        let _ = writeln!(
            o,
            "# {key}: the point at idle {} not measured: p99 {} is beyond the 100 ms a topology accepts (a disturbed \
             probe round; run it again on a quiet machine)",
            dur(p.idle_ns).trim_matches('"'),
            dur(p.p99_ns).trim_matches('"')
        );
    }
    if kept.is_empty() {
        let _ = writeln!(o, "# {key}: not measured (no point left)");
        return;
    }
    let _ = writeln!(o, "{key} = [");
    for p in kept {
        let _ = writeln!(o, "  {{ idle = {}, p50 = {}, p99 = {} }},", dur(p.idle_ns), dur(p.p50_ns), dur(p.p99_ns));
    }
    let _ = writeln!(o, "]");
}

fn timer_comment(o: &mut String, t: &TimerProbe) {
    let _ = writeln!(
        o,
        "# [measured: probe timer on CPU {cpu}: a thread alone on CPU {cpu} (timer slack {slack} ns) sleeps with\n\
         # clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) until the idle length after it last woke; oversleep =\n\
         # its CLOCK_MONOTONIC stamp on waking minus the requested time. Each point = that oversleep minus the\n\
         # median oversleep of the same sleep while a nice-19 spinner keeps the CPU busy (the timer interrupt\n\
         # preempts it, no idle exit: {busy}), floored at 0; p99 likewise. In a VM the CPU's own timer\n\
         # is a host hrtimer that must fire and wake the vCPU thread, unlike an IPI from another vCPU.\n\
         # Samples per point: {n}]",
        cpu = t.cpu,
        slack = t.slack_ns,
        busy = t.busy.map_or(String::new(), |b| format!(
            "p50 {} p99 {}",
            dur(b.p50).trim_matches('"'),
            dur(b.p99).trim_matches('"')
        )),
        n = t.by_idle.iter().map(|(_, p)| p.n.to_string()).collect::<Vec<_>>().join(", ")
    );
}

const DESC_PREFIX: &str = "this host: ";
const DESC_SUFFIX: &str = ", read by schedlab topologies --host";

/// The CPU model and kernel release a `--host` file was read on, from the
/// `description` [`render`] writes; `None` for any other description.
pub fn read_on(description: &str) -> Option<(&str, &str)> {
    let read = description.strip_prefix(DESC_PREFIX)?.strip_suffix(DESC_SUFFIX)?;
    let (rest, _) = read.rsplit_once(" (HZ=")?;
    let (model_and_cpus, kernel) = rest.rsplit_once(", kernel ")?;
    let (model, _) = model_and_cpus.rsplit_once(" (")?;
    Some((model, kernel))
}
