//! Assembly of `[idle]`, the per-distance `[costs.<level>]` tables and
//! `[[noise]]`: range checks with the offending value's position.

use toml::Spanned;

use super::{cost, Ctx};
use crate::file::{ExitPointFile, HaltpollFile, IdleFile, IdleStateFile, KernelCostsFile, LevelFile, NoiseFile};
use crate::hardware::{
    ExitPoint, Governor, HaltpollParams, Idle, IdleState, KernelCosts, LevelCosts, NoiseKind, NoiseSource,
};
use crate::{parse_cpulist, Costs, CpuSet, InputError};

/// The longest idle-state latency or residency accepted (deep package
/// states are milliseconds; more is a typo).
pub(crate) const MAX_IDLE_NS: u64 = 100_000_000;
/// Noise may not take more than this share of a CPU (rate × median).
const MAX_NOISE_SHARE: f64 = 0.5;

/// The per-level cost table: a level left out takes the flat `[costs]` values.
/// `remote_rq` is `[costs.kernel] remote_rq`, every level's default.
pub(super) fn levels(
    ctx: &Ctx,
    flat: &Costs,
    remote_rq: u64,
    files: [Option<LevelFile>; 4],
) -> Result<[LevelCosts; 4], InputError> {
    let mut out =
        [LevelCosts { ipi_ns: flat.ipi_ns, migration_cold_ns: flat.migration_cold_ns, remote_rq_ns: remote_rq }; 4];
    for (slot, file) in out.iter_mut().zip(files) {
        let Some(f) = file else { continue };
        slot.ipi_ns = cost(ctx, f.ipi, "ipi", flat.ipi_ns)?;
        slot.migration_cold_ns = cost(ctx, f.migration_cold, "migration_cold", flat.migration_cold_ns)?;
        slot.remote_rq_ns = cost(ctx, f.remote_rq, "remote_rq", remote_rq)?;
    }
    Ok(out)
}

/// `[costs.kernel]` (its `remote_rq` goes to the levels).
pub(super) fn kernel_costs(ctx: &Ctx, f: KernelCostsFile) -> Result<KernelCosts, InputError> {
    Ok(KernelCosts {
        enqueue_ns: cost(ctx, f.enqueue, "enqueue", 0)?,
        dequeue_ns: cost(ctx, f.dequeue, "dequeue", 0)?,
        select_ns: cost(ctx, f.select, "select", 0)?,
        select_per_cpu_ns: cost(ctx, f.select_per_cpu, "select_per_cpu", 0)?,
        wakelist_ns: cost(ctx, f.wakelist, "wakelist", 0)?,
        ipi_send_ns: cost(ctx, f.ipi_send, "ipi_send", 0)?,
        ipi_send_by_idle: curve(ctx, f.ipi_send_by_idle, "ipi_send_by_idle")?,
        balance_per_cpu_ns: cost(ctx, f.balance_per_cpu, "balance_per_cpu", 0)?,
        ipi_receive_ns: cost(ctx, f.ipi_receive, "ipi_receive", 0)?,
        hrtimer_ns: cost(ctx, f.hrtimer, "hrtimer", 0)?,
        futex_wait_ns: cost(ctx, f.futex_wait, "futex_wait", 0)?,
        futex_wake_ns: cost(ctx, f.futex_wake, "futex_wake", 0)?,
        schedule_entry_ns: cost(ctx, f.schedule_entry, "schedule_entry", 0)?,
    })
}

/// `[costs] idle_exit_ns` and `idle_polling`: the one idle state of a file
/// without `[idle]` (the format before cpuidle states).
pub(super) struct FlatIdle {
    pub exit: Option<Spanned<crate::DurationNs>>,
    pub polling: Option<bool>,
}

/// The flat idle state's exit latency when `idle_exit_ns` is not given (C1).
const DEFAULT_FLAT_EXIT_NS: u64 = 1_000;

/// `[idle]`, or without it the one state `[costs] idle_exit_ns` /
/// `idle_polling` describe. Both at once is refused: the state would be
/// said twice.
pub(super) fn idle(ctx: &Ctx, file: Option<Spanned<IdleFile>>, flat: FlatIdle) -> Result<Idle, InputError> {
    let Some(file) = file else {
        return Ok(Idle {
            driver: "unspecified".into(),
            governor: Governor::None,
            states: vec![IdleState {
                name: "C1".into(),
                exit_latency_ns: cost(ctx, flat.exit, "idle_exit_ns", DEFAULT_FLAT_EXIT_NS)?,
                target_residency_ns: 0,
                polling: flat.polling.unwrap_or(false),
                exit_by_idle: Vec::new(),
                timer_exit_by_idle: Vec::new(),
            }],
            haltpoll: HaltpollParams::default(),
        });
    };
    let span = file.span();
    if flat.exit.is_some() || flat.polling.is_some() {
        let at = flat.exit.as_ref().map_or(span.clone(), |e| e.span());
        return Err(ctx.err(
            &at,
            "[costs] idle_exit_ns / idle_polling describe the one idle state of a file without [idle]; with [idle], give each state's exit_latency and polling instead",
        ));
    }
    let f = file.into_inner();
    let governor = match &f.governor {
        None => Governor::Menu,
        Some(g) => match g.get_ref().as_str() {
            "none" => Governor::None,
            "menu" => Governor::Menu,
            "teo" => Governor::Teo,
            "haltpoll" => Governor::Haltpoll,
            other => {
                return Err(ctx.err(
                    &g.span(),
                    format!(
                        "unknown cpuidle governor `{other}` (expected \"menu\", \"teo\", \"haltpoll\" or \"none\")"
                    ),
                ))
            }
        },
    };
    let entries = f.states.unwrap_or_default();
    if entries.is_empty() {
        return Err(ctx.err(&span, "[idle] has no [[idle.states]] (expected at least one state, shallowest first)"));
    }
    let mut states: Vec<IdleState> = Vec::with_capacity(entries.len());
    for (k, e) in entries.into_iter().enumerate() {
        let span = e.span();
        let s = state(ctx, k, e.into_inner(), &span)?;
        if let Some(prev) = states.last() {
            if s.target_residency_ns < prev.target_residency_ns {
                return Err(ctx.err(
                    &span,
                    format!(
                        "idle state `{}` has a shorter target_residency than `{}` before it (expected the states shallowest first, as sysfs numbers them)",
                        s.name, prev.name
                    ),
                ));
            }
        }
        states.push(s);
    }
    match governor {
        Governor::None if states.len() > 1 => {
            return Err(ctx.err(
                &span,
                "governor = \"none\" (no cpuidle driver) enters one state, but [idle] lists several (expected one [[idle.states]])",
            ))
        }
        Governor::Haltpoll if !(states.len() == 2 && states[0].polling && !states[1].polling) => {
            return Err(ctx.err(
                &span,
                "governor = \"haltpoll\" chooses between a polling state and a halt (expected two [[idle.states]]: one with polling = true, then one without)",
            ))
        }
        _ => {}
    }
    if f.haltpoll.is_some() && governor != Governor::Haltpoll {
        return Err(ctx.err(&span, "[idle.haltpoll] is set but the governor is not \"haltpoll\""));
    }
    let haltpoll = match f.haltpoll {
        None => HaltpollParams::default(),
        Some(h) => haltpoll(ctx, h.into_inner())?,
    };
    Ok(Idle { driver: f.driver.unwrap_or_else(|| "unspecified".into()), governor, states, haltpoll })
}

fn idle_ns(ctx: &Ctx, v: &Spanned<crate::DurationNs>, key: &str) -> Result<u64, InputError> {
    let ns = v.get_ref().0;
    if ns > MAX_IDLE_NS {
        return Err(ctx.err(&v.span(), format!("{key} = {ns} ns is implausibly large (expected at most 100ms)")));
    }
    Ok(ns)
}

fn state(ctx: &Ctx, k: usize, f: IdleStateFile, span: &std::ops::Range<usize>) -> Result<IdleState, InputError> {
    let name = f.name.unwrap_or_else(|| format!("state{k}"));
    let exit_latency_ns = match &f.exit_latency {
        Some(v) => idle_ns(ctx, v, "exit_latency")?,
        None if f.exit_latency_by_idle.is_some() => 0,
        None => {
            return Err(ctx.err(
                span,
                format!(
                "idle state `{name}` has no exit_latency (expected e.g. exit_latency = \"1us\", sysfs stateN/latency)"
            ),
            ))
        }
    };
    let target_residency_ns = match &f.target_residency {
        Some(v) => idle_ns(ctx, v, "target_residency")?,
        None => 0,
    };
    let exit_by_idle = curve(ctx, f.exit_latency_by_idle, "exit_latency_by_idle")?;
    let timer_exit_by_idle = curve(ctx, f.timer_exit_latency_by_idle, "timer_exit_latency_by_idle")?;
    Ok(IdleState {
        name,
        exit_latency_ns,
        target_residency_ns,
        polling: f.polling.unwrap_or(false),
        exit_by_idle,
        timer_exit_by_idle,
    })
}

/// A cost curve over idle length (`exit_latency_by_idle`,
/// `timer_exit_latency_by_idle`, `[costs.kernel] ipi_send_by_idle`):
/// points in range, p99 >= p50, sorted by idle length.
fn curve(ctx: &Ctx, points: Option<Vec<Spanned<ExitPointFile>>>, key: &str) -> Result<Vec<ExitPoint>, InputError> {
    let mut out: Vec<ExitPoint> = Vec::new();
    for p in points.unwrap_or_default() {
        let pspan = p.span();
        let p = p.into_inner();
        let point = ExitPoint {
            idle_ns: idle_ns(ctx, &p.idle, "idle")?,
            p50_ns: idle_ns(ctx, &p.p50, "p50")?,
            p99_ns: match &p.p99 {
                Some(v) => idle_ns(ctx, v, "p99")?,
                None => p.p50.get_ref().0,
            },
        };
        if point.p99_ns < point.p50_ns {
            return Err(ctx.err(&pspan, format!("{key}: p99 is below p50 (expected p99 >= p50)")));
        }
        if out.last().is_some_and(|last| last.idle_ns >= point.idle_ns) {
            return Err(ctx.err(&pspan, format!("{key} points must be sorted by `idle`, each longer than the last")));
        }
        out.push(point);
    }
    Ok(out)
}

fn haltpoll(ctx: &Ctx, f: HaltpollFile) -> Result<HaltpollParams, InputError> {
    let d = HaltpollParams::default();
    let small = |v: &Option<Spanned<i64>>, key: &str, default: u32| -> Result<u32, InputError> {
        match v {
            None => Ok(default),
            Some(s) if (0..=1000).contains(s.get_ref()) => Ok(*s.get_ref() as u32),
            Some(s) => Err(ctx.err(&s.span(), format!("{key} = {} is out of range (expected 0..=1000)", s.get_ref()))),
        }
    };
    Ok(HaltpollParams {
        guest_halt_poll_ns: match &f.guest_halt_poll_ns {
            Some(v) => idle_ns(ctx, v, "guest_halt_poll_ns")?,
            None => d.guest_halt_poll_ns,
        },
        grow: small(&f.grow, "grow", d.grow)?,
        grow_start_ns: match &f.grow_start {
            Some(v) => idle_ns(ctx, v, "grow_start")?,
            None => d.grow_start_ns,
        },
        shrink: small(&f.shrink, "shrink", d.shrink)?,
        allow_shrink: f.allow_shrink.unwrap_or(d.allow_shrink),
    })
}

/// `[[noise]]` entries; `nr_cpus` bounds their cpulists.
pub(super) fn noise(
    ctx: &Ctx,
    entries: Vec<Spanned<NoiseFile>>,
    nr_cpus: usize,
) -> Result<Vec<NoiseSource>, InputError> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.into_iter().enumerate() {
        let span = e.span();
        let f = e.into_inner();
        let name = f.name.unwrap_or_else(|| format!("noise{i}"));
        let kind = match &f.kind {
            None => return Err(ctx.err(&span, format!("noise `{name}` has no kind (expected kind = \"irq\", \"softirq\" or \"steal\")"))),
            Some(k) => match k.get_ref().as_str() {
                "irq" => NoiseKind::Irq,
                "softirq" => NoiseKind::Softirq,
                "steal" => NoiseKind::Steal,
                other => {
                    return Err(ctx.err(
                        &k.span(),
                        format!("unknown noise kind `{other}` (expected \"irq\", \"softirq\" or \"steal\"; kernel threads are tasks: background = \"kernel\" in the scenario)"),
                    ))
                }
            },
        };
        let cpus = match &f.cpus {
            None => CpuSet::first_n(nr_cpus),
            Some(c) => {
                let set = parse_cpulist(c.get_ref()).map_err(|e| ctx.err(&c.span(), format!("cpus: {e}")))?;
                if let Some(bad) = set.iter().find(|&c| c >= nr_cpus) {
                    return Err(
                        ctx.err(&c.span(), format!("cpus names CPU {bad}, but the machine has CPUs 0-{}", nr_cpus - 1))
                    );
                }
                set
            }
        };
        let rate_hz = match &f.rate_hz {
            None => {
                return Err(ctx
                    .err(&span, format!("noise `{name}` has no rate_hz (expected mean arrivals per second per CPU)")))
            }
            Some(r) if r.get_ref().is_finite() && *r.get_ref() > 0.0 && *r.get_ref() <= 1e6 => *r.get_ref(),
            Some(r) => {
                return Err(ctx.err(
                    &r.span(),
                    format!("rate_hz = {} is out of range (expected 0 < rate_hz <= 1000000)", r.get_ref()),
                ))
            }
        };
        let Some(p50) = &f.duration_p50 else {
            return Err(
                ctx.err(&span, format!("noise `{name}` has no duration_p50 (expected e.g. duration_p50 = \"3us\")"))
            );
        };
        let p50_ns = idle_ns(ctx, p50, "duration_p50")?;
        if p50_ns == 0 {
            return Err(ctx.err(&p50.span(), "duration_p50 must be longer than zero"));
        }
        let p99_ns = match &f.duration_p99 {
            None => p50_ns,
            Some(v) => {
                let ns = idle_ns(ctx, v, "duration_p99")?;
                if ns < p50_ns {
                    return Err(ctx.err(&v.span(), "duration_p99 is below duration_p50 (expected p99 >= p50)"));
                }
                ns
            }
        };
        let max_ns = match &f.duration_max {
            None => p99_ns.saturating_mul(100).min(MAX_IDLE_NS),
            Some(v) => {
                let ns = idle_ns(ctx, v, "duration_max")?;
                if ns < p99_ns {
                    return Err(ctx.err(&v.span(), "duration_max is below duration_p99"));
                }
                ns
            }
        };
        if rate_hz * p50_ns as f64 / 1e9 > MAX_NOISE_SHARE {
            return Err(ctx.err(
                &span,
                format!(
                    "noise `{name}` would take {:.0} % of each CPU (rate_hz x duration_p50; expected at most 50 %)",
                    rate_hz * p50_ns as f64 / 1e7
                ),
            ));
        }
        out.push(NoiseSource {
            name,
            kind,
            cpus,
            rate_hz,
            p50_ns,
            p99_ns,
            max_ns,
            busy_only: f.busy_only.unwrap_or(false),
        });
    }
    Ok(out)
}
