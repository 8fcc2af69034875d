//! One `[[thread]]` table: its policy, nice and priority, slice, timer
//! slack, affinity within its cgroup's cpuset, start, repeat and program
//! templates (each operation checked where written, cgroup moves resolved).

use schedlab_topology::{InputError, Topology};
use toml::Spanned;

use super::op_table::{op_template, OpT};
use super::{fmt_ns, Group, DEFAULT_TIMER_SLACK_NS, MAX_INSTANCES, MAX_SLICE_NS, MAX_TIMER_SLACK_NS, MIN_SLICE_NS};
use crate::file::RawThread;
use crate::values::{self, Ctx, Zero};
use crate::{Policy, Repeat};

pub(super) fn group(
    ctx: Ctx,
    t: &Spanned<RawThread>,
    topo: &Topology,
    cgroups: &[crate::CgroupSpec],
) -> Result<Group, InputError> {
    let raw = t.get_ref();
    let name = raw.name.get_ref();
    if name.is_empty() {
        return Err(ctx.err(&raw.name, "thread `name` is empty"));
    }
    if let Some(c) = name.chars().find(|c| c.is_whitespace() || c.is_control() || matches!(c, '{' | '}')) {
        return Err(ctx.err(
            &raw.name,
            format!("thread name `{name}` contains {c:?}: expected no spaces, braces or control characters"),
        ));
    }
    let instances = match &raw.instances {
        Some(n) => values::int_in(ctx, n, "instances", 0, MAX_INSTANCES, "(0: started only by `fork`)")? as u32,
        None => 1,
    };
    let policy = match &raw.policy {
        Some(p) => policy(ctx, p)?,
        None => Policy::Other,
    };
    let (nice, rt_priority) = sched_params(ctx, policy, raw.nice.as_ref(), raw.priority.as_ref())?;
    let dl = deadline_params(ctx, policy, raw)?;
    let uclamp = uclamp_params(ctx, raw)?;
    let slice_ns = match &raw.slice {
        Some(s) if policy.is_rt_or_dl() => {
            return Err(ctx.err(s, format!("`slice` applies only to fair policies, not {}", policy.name())))
        }
        Some(s) => {
            let ns = values::duration(ctx, s, "slice", Zero::Refused)?;
            if !(MIN_SLICE_NS..=MAX_SLICE_NS).contains(&ns) {
                return Err(ctx.err(
                    s,
                    format!(
                        "`slice` = {} is out of range: expected 0.1ms..100ms (the kernel clamps sched_runtime into that range; schedlab refuses instead)",
                        fmt_ns(ns)
                    ),
                ));
            }
            Some(ns)
        }
        None => None,
    };
    let timer_slack_ns = match &raw.timer_slack {
        Some(s) if policy.is_rt_or_dl() => {
            return Err(ctx.err(
                s,
                format!(
                    "`timer_slack` does not apply to {}: the kernel gives RT and deadline tasks no timer slack (it \
                     sets it to 0)",
                    policy.name()
                ),
            ))
        }
        Some(s) => {
            let ns = values::duration(ctx, s, "timer_slack", Zero::Allowed)?;
            if ns > MAX_TIMER_SLACK_NS {
                return Err(ctx.err(s, format!("`timer_slack` = {} is out of range (expected at most 1s)", fmt_ns(ns))));
            }
            ns
        }
        None if policy.is_rt_or_dl() => 0,
        None => DEFAULT_TIMER_SLACK_NS,
    };
    let cgroup = match &raw.cgroup {
        Some(c) => Some((crate::cgroup::resolve(ctx, cgroups, c)?, c.span().start)),
        None => None,
    };
    let cpuset = crate::cgroup::cpus_of(cgroups, cgroup.map(|(c, _)| c), &topo.all_cpus());
    let affinity = match (&raw.affinity, cpuset) {
        (Some(a), None) => values::affinity(ctx, a, topo)?,
        (None, None) => topo.all_cpus(),
        (None, Some(set)) => set,
        (Some(a), Some(set)) => {
            let asked = values::affinity(ctx, a, topo)?;
            crate::cgroup::within_cpuset(ctx, a.span().start, &asked, &set, "affinity", cgroups, cgroup)?
        }
    };
    let start_cpu = match &raw.start_cpu {
        Some(c) if policy == Policy::Deadline => {
            return Err(ctx.err(
                c,
                "`start_cpu` does not apply to SCHED_DEADLINE: a deadline task may not be narrowed below its root \
                 domain (sched_setattr() fails with EPERM), so the kernel chooses where it runs",
            ))
        }
        Some(c) => {
            let n = *c.get_ref();
            if n < 0 || !affinity.contains(n as usize) {
                return Err(
                    ctx.err(c, format!("`start_cpu` = {n} is not in the thread's affinity {}", affinity.to_cpulist()))
                );
            }
            Some(n as usize)
        }
        None => None,
    };
    let delay_ns = match &raw.delay {
        Some(d) => values::duration(ctx, d, "delay", Zero::Allowed)?,
        None => 0,
    };
    let repeat = match &raw.repeat {
        Some(r) => values::repeat(ctx, r)?,
        None => Repeat::Forever,
    };
    if raw.program.get_ref().is_empty() {
        return Err(
            ctx.err(&raw.program, "`program` is empty: expected at least one operation, e.g. { run = \"1ms\" }")
        );
    }
    let mut ops = Vec::new();
    for op in raw.program.get_ref() {
        let (mut t, at) = op_template(ctx, op, topo)?;
        // (A partition elsewhere narrows every group outside it the same
        // way, so only a cpuset of the forker's own path matters here.)
        let own_cpuset = cgroup.and_then(|(c, _)| crate::cgroup::effective_cpus(cgroups, c));
        if let (OpT::Fork(..), Some(set)) = (&t, own_cpuset) {
            return Err(ctx.at(
                at,
                format!(
                    "thread `{name}` forks in a cgroup with a cpuset ({}): the forked thread would start in it with \
                     CPUs its own table may not allow, which schedlab does not follow yet (fork from a group \
                     without `cpus`)",
                    set.to_cpulist()
                ),
            ));
        }
        if let (OpT::SetAffinity(asked), Some(set)) = (&t, cpuset) {
            t = OpT::SetAffinity(crate::cgroup::within_cpuset(ctx, at, asked, &set, "setaffinity", cgroups, cgroup)?);
        }
        if let OpT::CgroupName(path) = &t {
            t = OpT::SetCgroup(crate::cgroup::move_target(
                ctx,
                at,
                path,
                cgroups,
                cgroup,
                raw.session.is_some(),
                name,
            )?);
        }
        ops.push((t, at));
    }
    Ok(Group {
        rows: raw.rows.clone(),
        name: name.clone(),
        name_at: raw.name.span().start,
        instances,
        policy,
        nice,
        rt_priority,
        slice_ns,
        timer_slack_ns,
        dl,
        uclamp,
        affinity,
        start_cpu,
        delay_ns,
        cgroup,
        session: match &raw.session {
            Some(s) => Some((crate::session::name(ctx, s)?, s.span().start)),
            None => None,
        },
        instances_at: raw.instances.as_ref().map(|n| n.span().start),
        start_cpu_at: raw.start_cpu.as_ref().map(|c| c.span().start),
        delay_at: raw.delay.as_ref().map(|d| d.span().start).filter(|_| delay_ns > 0),
        repeat,
        repeat_at: raw.repeat.as_ref().map(|r| r.span().start),
        ops,
        line: ctx.line_of(t.span().start),
    })
}

/// `uclamp_min` and `uclamp_max`: 0..1024 each, and the floor not above the
/// ceiling (where one is missing, the kernel's default 0 or 1024 stands in),
/// as the kernel's `uclamp_validate()` refuses with EINVAL otherwise.
fn uclamp_params(ctx: Ctx, raw: &RawThread) -> Result<Option<crate::UclampSpec>, InputError> {
    let max_value = crate::UCLAMP_MAX_VALUE as i64;
    let why = "a utilisation clamp, 1024 = the biggest CPU at its highest frequency";
    let read = |v: &Option<Spanned<i64>>, key: &str| -> Result<Option<u32>, InputError> {
        v.as_ref().map(|v| values::int_in(ctx, v, key, 0, max_value, why).map(|n| n as u32)).transpose()
    };
    let (min, max) = (read(&raw.uclamp_min, "uclamp_min")?, read(&raw.uclamp_max, "uclamp_max")?);
    if min.unwrap_or(0) > max.unwrap_or(crate::UCLAMP_MAX_VALUE) {
        let at = raw.uclamp_min.as_ref().expect("a floor above the default ceiling was written");
        return Err(ctx.err(
            at,
            format!(
                "`uclamp_min` = {} is above `uclamp_max` = {}: expected uclamp_min <= uclamp_max (rt-app's \
                 util_min <= util_max; sched_setattr() refuses it with EINVAL)",
                min.unwrap_or(0),
                max.unwrap_or(crate::UCLAMP_MAX_VALUE)
            ),
        ));
    }
    Ok((min.is_some() || max.is_some()).then_some(crate::UclampSpec { min, max }))
}

/// SCHED_DEADLINE's `runtime`, `deadline` and `period` (durations): the
/// first two required with that policy, `period` defaulting to the
/// deadline; and `reclaim` (SCHED_FLAG_RECLAIM, default false). All four
/// are refused with any other policy. The kernel's own checks
/// (`__checkparam_dl()` and the bandwidth) are the simulator's, at start.
fn deadline_params(ctx: Ctx, policy: Policy, raw: &RawThread) -> Result<Option<crate::DlSpec>, InputError> {
    let keys = [("runtime", &raw.runtime), ("deadline", &raw.deadline), ("period", &raw.period)];
    if policy != Policy::Deadline {
        if let Some((key, Some(v))) = keys.iter().find(|(_, v)| v.is_some()) {
            return Err(
                ctx.err(v, format!("`{key}` is a SCHED_DEADLINE parameter; this thread's policy is {}", policy.name()))
            );
        }
        if let Some(r) = &raw.reclaim {
            return Err(ctx.err(
                r,
                format!(
                    "`reclaim` is SCHED_FLAG_RECLAIM, a SCHED_DEADLINE flag (GRUB reclaiming); this thread's policy is \
                     {}",
                    policy.name()
                ),
            ));
        }
        return Ok(None);
    }
    let get = |key: &str, v: &Option<Spanned<toml::Value>>, zero| -> Result<Option<u64>, InputError> {
        v.as_ref().map(|v| values::duration(ctx, v, key, zero)).transpose()
    };
    let (Some(runtime_ns), Some(deadline_ns)) =
        (get("runtime", &raw.runtime, Zero::Refused)?, get("deadline", &raw.deadline, Zero::Refused)?)
    else {
        let at = raw.policy.as_ref().map_or(raw.name.span().start, |p| p.span().start);
        return Err(ctx.at(
            at,
            "SCHED_DEADLINE needs `runtime` and `deadline` (durations; `period` defaults to the deadline), e.g. \
             runtime = \"2ms\", deadline = \"10ms\", period = \"10ms\"",
        ));
    };
    let period_ns = get("period", &raw.period, Zero::Refused)?.unwrap_or(0);
    let reclaim = raw.reclaim.as_ref().is_some_and(|r| *r.get_ref());
    Ok(Some(crate::DlSpec { runtime_ns, deadline_ns, period_ns, reclaim }))
}

/// A policy's nice value and RT priority from `nice` and `priority` (for
/// fair policies rt-app's name for nice; for FIFO/RR 1..99, default 10).
pub(in crate::build) fn sched_params(
    ctx: Ctx,
    policy: Policy,
    nice: Option<&Spanned<i64>>,
    priority: Option<&Spanned<i64>>,
) -> Result<(i32, u32), InputError> {
    if policy == Policy::Deadline {
        if let Some(v) = nice.or(priority) {
            return Err(ctx.err(
                v,
                "`nice` and `priority` do not apply to SCHED_DEADLINE: its reservation (`runtime`, `deadline`, \
                 `period`) is all it has",
            ));
        }
        return Ok((0, 0));
    }
    if policy.is_rt() {
        if let Some(n) = nice {
            return Err(ctx.err(n, format!("`nice` does not apply to {}: set `priority` (1..99)", policy.name())));
        }
        return Ok(match priority {
            Some(p) => (0, values::int_in(ctx, p, "priority", 1, 99, policy.name())? as u32),
            None => (0, 10),
        });
    }
    let zero = Spanned::new(0..0, 0);
    let (key, v) = match (nice, priority) {
        (Some(_), Some(p)) => {
            return Err(ctx.err(p, "give `nice` or `priority` (rt-app's name for nice on fair policies), not both"))
        }
        (Some(n), None) => ("nice", n),
        (None, Some(p)) => ("priority", p),
        (None, None) => ("nice", &zero),
    };
    let n = *v.get_ref();
    if key == "priority" && (20..=99).contains(&n) {
        // An RT priority, on a thread left at the default policy.
        return Err(ctx.err(
            v,
            format!(
                "`priority` = {n} with {}: an RT priority (1..99) applies to SCHED_FIFO and SCHED_RR, a nice value \
                 (-20..19) to SCHED_OTHER, SCHED_BATCH and SCHED_IDLE; set `policy = \"SCHED_FIFO\"` (or RR) for an \
                 RT priority, or `nice` (here `priority` is rt-app's name for nice)",
                policy.name()
            ),
        ));
    }
    Ok((values::int_in(ctx, v, key, -20, 19, &format!("nice value for {}", policy.name()))? as i32, 0))
}

pub(in crate::build) fn policy(ctx: Ctx, p: &Spanned<String>) -> Result<Policy, InputError> {
    let s = p.get_ref().trim().to_ascii_uppercase();
    let s = s.strip_prefix("SCHED_").unwrap_or(&s);
    Ok(match s {
        "OTHER" | "NORMAL" => Policy::Other,
        "BATCH" => Policy::Batch,
        "IDLE" => Policy::Idle,
        "FIFO" => Policy::Fifo,
        "RR" => Policy::Rr,
        "DEADLINE" => Policy::Deadline,
        _ => {
            return Err(ctx.err(
                p,
                format!(
                    "unknown policy `{}`: expected SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR or \
                     SCHED_DEADLINE",
                    p.get_ref()
                ),
            ))
        }
    })
}
