//! The host as topology TOML text. Every value is preceded by a comment
//! saying where it came from; the file loads with [`crate::Topology`].

use std::fmt::Write as _;

use super::measured::{
    exit_curve, idle_exit_tail_from_probes, ipi_from_probes, ipi_send_busy_from_probes, ipi_send_curve, irq_shares,
    split_noise, switch_from_probes, switch_net_of_futex, timer_exit_curve, timer_irq_exit_from_probes,
    timer_irq_from_probes, CurvePoint, Measured, NoiseFigures, TimerProbe, WakeProbe,
};
use super::{HostIdleState, HostMachine};
use crate::{Costs, CpuSet, Topology};

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

fn cpus_section(o: &mut String, host: &HostMachine) {
    let src = "[/sys/devices/system/cpu/cpuN/topology/{thread_siblings_list,physical_package_id}, \
               cpuN/cache/index*/{level,shared_cpu_list} (the LLC), /sys/devices/system/node/nodeN/cpulist]";
    let caps = capacities(host);
    let prios = priorities(host);
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
    match (&prios, &host.prio_source) {
        (Some(p), Some(s)) => {
            let _ = writeln!(o, "# asym_prio: [{s}], one value per core (the highest of its SMT siblings)");
            if layout.is_some() {
                let _ = writeln!(o, "[asym_prio]");
                let mut by: std::collections::BTreeMap<i32, CpuSet> = Default::default();
                for (i, v) in p.iter().enumerate() {
                    by.entry(*v).or_default().insert(i);
                }
                for (v, set) in by.iter().rev() {
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
fn points(o: &mut String, key: &str, c: &[CurvePoint]) {
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

fn costs_section(o: &mut String, host: &HostMachine, measured: Option<&Measured>) {
    let d = Costs::default();
    let switch = measured.and_then(|m| m.switch);
    let nearest = measured.and_then(|m| m.wake.iter().find(|w| w.busy.is_some()));
    let _ = writeln!(o, "\n[costs]");
    match nearest.and_then(|w| ipi_from_probes(w, switch.as_ref()).map(|v| (w, v))) {
        Some((w, v)) => {
            let _ = writeln!(
                o,
                "# [measured: probe wake {}->{} onto a busy CPU (p50) minus context_switch_ns; the nearest level]\nipi_ns = {}",
                w.waker,
                w.wakee,
                dur(v)
            );
        }
        None => {
            let (v, why) = if host.guest {
                (5_000, "a guest's IPI is a VM exit on the sender and a posted interrupt or exit on the target")
            } else {
                (d.ipi_ns, "the model's bare-metal default")
            };
            let _ = writeln!(o, "# [assumed: {why}]\nipi_ns = {}", dur(v));
        }
    }
    let syscall = measured.and_then(|m| m.syscall);
    let marker = measured.and_then(|m| m.marker);
    let futex = measured.and_then(|m| m.futex_costs());
    let net_switch = |s: &super::measured::Percentiles| {
        let sw = switch_from_probes(s, syscall.as_ref());
        futex.map_or(sw, |f| switch_net_of_futex(sw, f.futex_wait_ns, f.schedule_entry_ns, f.futex_wake_ns))
    };
    match switch {
        Some(s) => {
            let _ = writeln!(
                o,
                "# [measured: probe switch: two threads on one CPU ping-pong through futexes; round trip / 2,\n\
                 # median of {} batches (p99 {}) = {}, minus its two syscalls (2 x syscall_ns below){}, which the\n\
                 # model charges on the ops that make them]\ncontext_switch_ns = {}",
                s.n,
                dur(s.p99).trim_matches('"'),
                dur(s.p50).trim_matches('"'),
                if futex.is_some() {
                    " and the wait's and wake's\n# futex_wait, schedule_entry and futex_wake ([costs.kernel] below)"
                } else {
                    ""
                },
                dur(net_switch(&s))
            );
        }
        None => {
            let _ = writeln!(o, "# [assumed: the model's default]\ncontext_switch_ns = {}", dur(d.context_switch_ns));
        }
    }
    match syscall {
        Some(s) => {
            let _ = writeln!(
                o,
                "# [measured: probe syscall: an eventfd write() with no waiter, median of {} batches (p99 {})]\nsyscall_ns = {}",
                s.n,
                dur(s.p99).trim_matches('"'),
                dur(s.p50)
            );
        }
        None => {
            let _ = writeln!(o, "# syscall_ns: not measured (0: the ops' syscalls are free)");
        }
    }
    match marker {
        Some(m) => {
            let _ = writeln!(
                o,
                "# [measured: probe capture: a write() to trace_marker with the real runner's capture configured,\n\
                 # median of {} batches (p99 {}); charged per workload marker in runs that model a captured one]\n\
                 trace_marker_ns = {}",
                m.n,
                dur(m.p99).trim_matches('"'),
                dur(m.p50)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "# trace_marker_ns: not measured (see the notes above); captured runs are modeled without it"
            );
        }
    }
    match (measured.and_then(|m| m.tracepoint), measured.and_then(|m| m.events_per_handoff)) {
        (Some(t), Some(per)) => {
            let _ = writeln!(
                o,
                "# [measured: probe capture: the same-CPU switch probe with the runner's six sched events enabled,\n\
                 # minus without, per event ({per:.2} events counted per handoff)]\ntracepoint_ns = {}",
                dur(t.p50)
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "# tracepoint_ns: not measured (see the notes above); captured runs are modeled without it"
            );
        }
    }
    let model_switch = switch.as_ref().map_or(d.context_switch_ns, net_switch);
    let tracepoint = measured.and_then(|m| m.tracepoint.as_ref());
    let irq_exit = match measured.and_then(|m| m.timer_wake_to_switch.as_ref()) {
        Some(w) => {
            let v = timer_irq_exit_from_probes(w, tracepoint);
            let _ = writeln!(
                o,
                "# [measured: probe capture: timer wakeups onto a busy CPU with the capture recording, each\n\
                 # sched_wakeup to the sched_switch into the woken task (p50 {}, p99 {}, {} pairs){}; floor 0]\n\
                 timer_irq_exit_ns = {}",
                dur(w.p50).replace('"', ""),
                dur(w.p99).replace('"', ""),
                w.n,
                if tracepoint.is_some() { ", minus one tracepoint_ns" } else { "" },
                dur(v)
            );
            v
        }
        None => {
            let _ = writeln!(
                o,
                "# timer_irq_exit_ns: not measured (0: the CPU switches as the timer's callback wakes the task)"
            );
            0
        }
    };
    match measured.and_then(|m| Some((m.timer_idle_wake_to_switch.as_ref()?, m.timer_wake_to_switch.as_ref()?))) {
        Some(((cpu, idle), busy)) => {
            let (p50, p99) = idle_exit_tail_from_probes(idle, busy);
            let _ = writeln!(
                o,
                "# [measured: probe capture: the same from idle (1 ms sleeps on CPU {cpu}, the sched_switch out of the idle\n\
                 # task; p50 {}, p99 {}, {} pairs) minus the busy CPU's p50; floor 0. Held back from the idle exit the\n\
                 # curves give until after the timer's handler]\n\
                 idle_exit_tail_ns = {}\nidle_exit_tail_p99_ns = {}",
                dur(idle.p50).replace('"', ""),
                dur(idle.p99).replace('"', ""),
                idle.n,
                dur(p50),
                dur(p99)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "# idle_exit_tail_ns: not measured (0: all of an idle exit comes before the timer's handler)"
            );
        }
    }
    match measured
        .and_then(|m| m.timer.as_ref())
        .and_then(|t| timer_irq_from_probes(t, model_switch, irq_exit).map(|v| (t, v)))
    {
        Some((t, v)) => {
            let _ = writeln!(
                o,
                "# [measured: probe timer on CPU {}: the oversleep while a nice-19 spinner keeps the CPU busy\n\
                 # (p50 {}) minus context_switch_ns and timer_irq_exit_ns, which the model charges for the rest\n\
                 # of it; floor 0]\n\
                 timer_irq_ns = {}",
                t.cpu,
                t.busy.map_or(String::new(), |b| dur(b.p50).replace('"', "")),
                dur(v)
            );
        }
        None => {
            let _ = writeln!(o, "# timer_irq_ns: not measured (0: a timer's handler runs at its expiry)");
        }
    }
    let _ = writeln!(
        o,
        "# [assumed: the model's default; no probe measures cache refill]\nmigration_cold_ns = {}",
        dur(d.migration_cold_ns)
    );
    let smt = host.cpus.iter().any(|c| host.cpus.iter().filter(|o| o.core == c.core).count() > 1);
    if smt {
        let _ = writeln!(o, "# [assumed: the model's default, ~1.2x per core]\nsmt_speed_pct = {}", d.smt_speed_pct);
    } else {
        let _ = writeln!(o, "# no SMT siblings in sysfs: unused\nsmt_speed_pct = 100");
    }
    let _ = writeln!(o, "# newidle_balance_ns_per_cpu: the model's default (not measured)");
    if let Some(m) = measured {
        kernel_costs(o, m);
        for w in &m.wake {
            if let Some(v) = ipi_from_probes(w, switch.as_ref()) {
                let _ = writeln!(
                    o,
                    "\n[costs.{}]\n# [measured: probe wake {}->{} onto a busy CPU (p50 {}) minus context_switch_ns; floor 0]\n\
                     # migration_cold: not measured, the flat migration_cold_ns applies\nipi = {}",
                    w.level.as_str(),
                    w.waker,
                    w.wakee,
                    w.busy.map_or(String::new(), |b| dur(b.p50).replace('"', "")),
                    dur(v)
                );
            }
        }
        // No [jitter]: its uniform IPI delay would count twice what the
        // measured [[noise]] and exit curves already hold (a busy wakeup's
        // p99 on a shared machine is a tick, not IPI spread).
        let _ = writeln!(o, "\n# [jitter]: none; the measured [[noise]] and exit_latency_by_idle tails stand for it");
    }
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

/// `[costs.kernel]`: what the probes measure of the kernel's own CPU time.
/// Only the IPI's sending is: onto a busy CPU (`ipi_send`) and per idle
/// length of a halted one (`ipi_send_by_idle`). The rest of the paths stay
/// inside the probed switch and syscall costs, and 0 here.
fn kernel_costs(o: &mut String, m: &Measured) {
    let _ = writeln!(o, "\n[costs.kernel]");
    let nearest = m.wake.iter().find(|w| w.send_busy.is_some() || !w.send_by_idle.is_empty());
    let Some(w) = nearest else {
        let _ = writeln!(o, "# ipi_send: not measured (no cross-CPU wakeup probe ran): 0");
        return other_kernel_costs(o, m);
    };
    let busy = w.send_busy.map_or("-".to_string(), |p| {
        format!("p50 {} p99 {}", dur(p.p50).trim_matches('"'), dur(p.p99).trim_matches('"'))
    });
    let _ = writeln!(
        o,
        "# [measured: probe wake {}->{}: how long the waker's FUTEX_WAKE took minus syscall_ns, floor 0: a\n\
         # wakelist add or a direct activation and the IPI, all taken as the IPI's sending, charged to the\n\
         # sender's CPU. Onto the busy CPU (a resched IPI; FUTEX_WAKE {busy}): ipi_send. Onto the CPU idle\n\
         # for each length (the wakee's last step in user space to the waker's call, as for\n\
         # exit_latency_by_idle): ipi_send_by_idle; in a guest the host wakes the halted vCPU inside the\n\
         # sender's exit, dearer the longer it halted. Samples per point: {}]",
        w.waker,
        w.wakee,
        w.send_by_idle.iter().map(|(_, p)| p.n.to_string()).collect::<Vec<_>>().join(", "),
    );
    let futex_wake = m.futex_costs().map_or(0, |f| f.futex_wake_ns);
    match ipi_send_busy_from_probes(w, m.syscall.as_ref(), futex_wake) {
        Some(b) => {
            let _ = writeln!(o, "ipi_send = {}", dur(b));
        }
        None => {
            let _ = writeln!(o, "# ipi_send: not measured (the busy phase failed): 0 onto busy CPUs");
        }
    }
    if let Some(c) = ipi_send_curve(w, m.syscall.as_ref(), futex_wake) {
        points(o, "ipi_send_by_idle", &c);
    }
    other_kernel_costs(o, m);
}

/// The blocking handoff's own steps when their probes ran, then the rest (0).
fn other_kernel_costs(o: &mut String, m: &Measured) {
    if let (Some(f), Some(eagain), Some(win)) = (m.futex_costs(), m.futex_wait_eagain, m.window) {
        let _ = writeln!(
            o,
            "# [measured: probe futex: a FUTEX_WAIT whose word changed (-EAGAIN: hash, bucket lock, read), median of\n\
             # {} batches ({}), minus syscall_ns; a FUTEX_WAKE with nobody queued took {}]\nfutex_wait = {}",
            eagain.n,
            dur(eagain.p50).trim_matches('"'),
            m.futex_wake_none.map_or("-".into(), |p| dur(p.p50).trim_matches('"').to_string()),
            dur(f.futex_wait_ns)
        );
        let _ = writeln!(
            o,
            "# [derived: the waker's bucket lock and unqueue, the same work as futex_wait's]\nfutex_wake = {}",
            dur(f.futex_wake_ns)
        );
        let _ = writeln!(
            o,
            "# [measured: probe window: FUTEX_WAKE from another CPU at a delay after the waiter's call; half of\n\
             # the waits returned without sleeping at {} (all slept from {}, {} samples). In the model a wake\n\
             # reaches the waiter syscall_ns + futex_wake after its call and finds it from futex_wait until\n\
             # schedule_entry later: schedule_entry = {} + syscall_ns + futex_wake - futex_wait]\nschedule_entry = {}",
            dur(win.p50).trim_matches('"'),
            dur(win.max).trim_matches('"'),
            win.n,
            dur(win.p50).trim_matches('"'),
            dur(f.schedule_entry_ns)
        );
    }
    if let Some(l) = m.line {
        let _ = writeln!(
            o,
            "# [measured: probe line: one-way latency of a cache line between the nearest CPUs probed, an atomic\n\
             # ping-pong: p50 {}, p99 {}; not a cost of its own, the unit of the remote paths below]",
            dur(l.p50).trim_matches('"'),
            dur(l.p99).trim_matches('"')
        );
    }
    let _ = writeln!(
        o,
        "# enqueue, dequeue, select, select_per_cpu, wakelist, remote_rq, balance_per_cpu, ipi_receive,\n\
         # hrtimer: 0\n\
         # [assumed: inside the probed context_switch_ns and syscall_ns, or not measured]"
    );
}

fn noise_section(o: &mut String, measured: Option<&Measured>, hz: u32) {
    let Some(m) = measured else { return };
    let Some(n) = &m.noise else {
        let _ = writeln!(o, "\n# [[noise]]: none (the noise probe did not run)");
        return;
    };
    let (irq, steal) = split_noise(n);
    let how = format!(
        "probe noise: one spinner per CPU on {} CPUs reads CLOCK_MONOTONIC for {:.2} s; a gap >= {} between\n\
         # two reads is an interruption ({} gaps with an involuntary context switch inside left out: another task ran)",
        n.cpus,
        n.duration_ns as f64 / 1e9,
        dur(n.threshold_ns).replace('"', ""),
        n.preempted
    );
    let entry = |o: &mut String, name: &str, kind: &str, f: &NoiseFigures, what: &str, busy_only: bool| {
        let _ = writeln!(
            o,
            "\n[[noise]]\n# [measured: {how};\n# {what}]\nname = \"{name}\"\nkind = \"{kind}\"\nrate_hz = {:.1}\n\
             duration_p50 = {}\nduration_p99 = {}\nduration_max = {}{}",
            f.rate_hz,
            dur(f.dist.p50),
            dur(f.dist.p99.max(f.dist.p50)),
            dur(f.dist.max.max(f.dist.p99)),
            if busy_only { "\nbusy_only = true" } else { "" }
        );
    };
    match &irq {
        Some(f) => {
            // The spinners keep their CPUs busy, so their gaps include the
            // tick's interrupt (HZ per second), which NOHZ stops on an idle
            // CPU: that share becomes a busy-only source. A gap cannot be
            // told apart as tick or not, so all shares use one distribution.
            let shares = irq_shares(f, n, hz);
            let share = |rate_hz| NoiseFigures { rate_hz, dist: f.dist };
            entry(
                o,
                "tick",
                "irq",
                &share(shares.tick_hz),
                &format!(
                    "{} gaps not counted as steal; HZ = {hz} of their rate are the tick, busy CPUs only",
                    f.dist.n
                ),
                true,
            );
            let counted = n.interrupts.map_or(String::new(), |c| {
                format!(
                    "\n# /proc/interrupts counted {c} on these CPUs over the probe ({:.1}/s per CPU, the tick included)",
                    c as f64 / n.cpu_secs()
                )
            });
            if shares.other_hz >= 1.0 {
                let what = match shares.outside_hz {
                    Some(_) => "the kernel's own interrupts beyond the tick, on busy and idle CPUs",
                    None => {
                        "the rest of the rate, on busy and idle CPUs (/proc/interrupts unread: all taken as interrupts)"
                    }
                };
                entry(o, "irq", "irq", &share(shares.other_hz), &format!("{what}{counted}"), false);
            }
            match shares.outside_hz {
                Some(h) if h >= 1.0 => entry(
                    o,
                    "outside",
                    "steal",
                    &share(h),
                    &format!(
                        "gaps beyond every interrupt the kernel counted: the CPU was outside this kernel (in a VM the\n\
                         # host ran something else; too short for /proc/stat's steal). It wakes no halted vCPU, and\n\
                         # an idle vCPU's share of it is already inside the measured exit curves: busy CPUs only{counted}"
                    ),
                    true,
                ),
                Some(_) => {
                    let _ = writeln!(o, "\n# [[noise]] outside: none (every gap beyond the tick is a counted interrupt){counted}");
                }
                None => {}
            }
        }
        None => {
            let _ = writeln!(
                o,
                "\n# [[noise]] irq: no gap >= {} seen [measured: {how}]",
                dur(n.threshold_ns).replace('"', "")
            );
        }
    }
    match &steal {
        Some(f) => entry(
            o,
            "steal",
            "steal",
            f,
            &format!(
                "/proc/stat steal rose {} over the probe, {} beyond its resolution (one 10 ms tick per CPU):\n\
                 # the longest gaps summing to that are taken as steal ({} gaps)",
                dur(n.steal_raw_ns).replace('"', ""),
                dur(n.steal_ns).replace('"', ""),
                f.dist.n
            ),
            false,
        ),
        None => {
            let _ = writeln!(
                o,
                "\n# [[noise]] steal: none [measured: /proc/stat's steal rose {} over the probe, within its\n\
                 # resolution of one 10 ms tick per CPU; steal that small stays in the short gaps above]",
                dur(n.steal_raw_ns).replace('"', "")
            );
        }
    }
}
