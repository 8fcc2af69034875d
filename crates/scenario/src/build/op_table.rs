//! One `{ op = ..., modifier = ... }` table of a program: which operation
//! it is, its value and modifiers checked where they are written. The
//! result is a template; `build::program` resolves its object names per
//! instance.

use schedlab_topology::{CpuSet, InputError, Topology};
use toml::{Spanned, Value};

use super::names::{name, poll_names, Name};
use super::{policy, sched_params};
use crate::file::{RawOp, OP_KEYS};
use crate::values::{self, a_type, Ctx, Zero};
use crate::{Policy, TimerMode};

#[derive(Clone, Debug)]
pub(super) enum OpT {
    Run(u64),
    Sleep(u64),
    Timer(u64),
    Wait(Name),
    Signal(Name, u64),
    FutexWait(Name),
    FutexPost(Name),
    Post(Name),
    Poll(Vec<Name>, u64),
    Lock(Name),
    Unlock(Name),
    Yield,
    RunWall(u64),
    /// `None`: the thread's own grid (rt-app's `"ref": "unique"`).
    GridTimer(u64, Option<Name>, TimerMode),
    CondWait(Name, Name),
    CondSignal(Name),
    CondBroadcast(Name),
    Barrier(Name),
    SetAffinity(CpuSet),
    SetScheduler(Policy, i32, u32),
    SetPriority(i32),
    /// A cgroup path as written (`"/"`: none); resolved by `build::group`.
    CgroupName(String),
    /// Resolved: the index in `Scenario::cgroups`, `None` for the run's own group.
    SetCgroup(Option<usize>),
    /// The `[[thread]]` table's name, and where it is written.
    Fork(String, usize),
}

/// Parse one `{ op = ..., modifier = ... }` table.
pub(super) fn op_template(ctx: Ctx, op: &Spanned<RawOp>, topo: &Topology) -> Result<(OpT, usize), InputError> {
    let r = op.get_ref();
    let present: Vec<(&str, usize)> = [
        r.run.as_ref().map(|v| v.span().start),
        r.sleep.as_ref().map(|v| v.span().start),
        r.wait.as_ref().map(|v| v.span().start),
        r.signal.as_ref().map(|v| v.span().start),
        r.post.as_ref().map(|v| v.span().start),
        r.poll.as_ref().map(|v| v.span().start),
        r.lock.as_ref().map(|v| v.span().start),
        r.unlock.as_ref().map(|v| v.span().start),
        r.yield_.as_ref().map(|v| v.span().start),
        r.timer.as_ref().map(|v| v.span().start),
        r.run_wall.as_ref().map(|v| v.span().start),
        r.cond_wait.as_ref().map(|v| v.span().start),
        r.cond_signal.as_ref().map(|v| v.span().start),
        r.cond_broadcast.as_ref().map(|v| v.span().start),
        r.barrier.as_ref().map(|v| v.span().start),
        r.setaffinity.as_ref().map(|v| v.span().start),
        r.setscheduler.as_ref().map(|v| v.span().start),
        r.setpriority.as_ref().map(|v| v.span().start),
        r.cgroup.as_ref().map(|v| v.span().start),
        r.fork.as_ref().map(|v| v.span().start),
        r.fwait.as_ref().map(|v| v.span().start),
        r.fpost.as_ref().map(|v| v.span().start),
    ]
    .into_iter()
    .zip(OP_KEYS)
    .filter_map(|(at, key)| at.map(|a| (*key, a)))
    .collect();
    let (key, at) = match present.as_slice() {
        [] => {
            return Err(
                ctx.err(op, format!("operation without an operation key: expected one of {}", OP_KEYS.join(", ")))
            )
        }
        [one] => *one,
        [first, second, ..] => {
            let (first, second) = if first.1 <= second.1 { (first, second) } else { (second, first) };
            return Err(ctx.at(
                second.1,
                format!(
                    "one operation per table: found `{}` and `{}`; write them as two entries of `program`",
                    first.0, second.0
                ),
            ));
        }
    };
    if let Some(c) = &r.count {
        if key != "signal" {
            return Err(ctx.err(c, format!("`count` applies only to `signal`, not `{key}`")));
        }
    }
    if let Some(a) = &r.after {
        if key != "poll" {
            return Err(ctx.err(a, format!("`after` applies only to `poll`, not `{key}`")));
        }
    }
    let modifier_of = |at: usize, modifier: &str, owner: &str| -> Result<(), InputError> {
        if key == owner {
            Ok(())
        } else {
            Err(ctx.at(at, format!("`{modifier}` applies only to `{owner}`, not `{key}`")))
        }
    };
    if let Some(m) = &r.mutex {
        modifier_of(m.span().start, "mutex", "cond_wait")?;
    }
    if let Some(m) = &r.ref_ {
        modifier_of(m.span().start, "ref", "timer")?;
    }
    if let Some(m) = &r.mode {
        modifier_of(m.span().start, "mode", "timer")?;
    }
    if let Some(m) = &r.nice {
        modifier_of(m.span().start, "nice", "setscheduler")?;
    }
    if let Some(m) = &r.priority {
        modifier_of(m.span().start, "priority", "setscheduler")?;
    }
    let t = match key {
        "run" => OpT::Run(values::duration(ctx, r.run.as_ref().unwrap(), "run", Zero::Refused)?),
        "sleep" => OpT::Sleep(values::duration(ctx, r.sleep.as_ref().unwrap(), "sleep", Zero::Allowed)?),
        "timer" => {
            let period = values::duration(ctx, r.timer.as_ref().unwrap(), "timer", Zero::Refused)?;
            let mode = match &r.mode {
                None => TimerMode::Relative,
                Some(m) => match m.get_ref().as_str() {
                    "relative" => TimerMode::Relative,
                    "absolute" => TimerMode::Absolute,
                    other => {
                        return Err(
                            ctx.err(m, format!("timer `mode` = \"{other}\": expected \"relative\" or \"absolute\""))
                        )
                    }
                },
            };
            match (&r.ref_, &r.mode) {
                (None, None) => OpT::Timer(period),
                (None, Some(_)) => OpT::GridTimer(period, None, mode),
                (Some(n), _) => OpT::GridTimer(period, Some(name(ctx, n)?), mode),
            }
        }
        "run_wall" => OpT::RunWall(values::duration(ctx, r.run_wall.as_ref().unwrap(), "run_wall", Zero::Refused)?),
        "cond_wait" => {
            let cond = r.cond_wait.as_ref().unwrap();
            let Some(mutex) = &r.mutex else {
                return Err(ctx.err(
                    cond,
                    "`cond_wait` needs the mutex it holds: { cond_wait = \"c\", mutex = \"m\" } (pthread_cond_wait)",
                ));
            };
            OpT::CondWait(name(ctx, cond)?, name(ctx, mutex)?)
        }
        "cond_signal" => OpT::CondSignal(name(ctx, r.cond_signal.as_ref().unwrap())?),
        "cond_broadcast" => OpT::CondBroadcast(name(ctx, r.cond_broadcast.as_ref().unwrap())?),
        "barrier" => OpT::Barrier(name(ctx, r.barrier.as_ref().unwrap())?),
        "setaffinity" => OpT::SetAffinity(values::affinity(ctx, r.setaffinity.as_ref().unwrap(), topo)?),
        "setscheduler" => {
            let p = r.setscheduler.as_ref().unwrap();
            let policy = policy(ctx, p)?;
            if policy == Policy::Deadline {
                return Err(ctx.err(
                    p,
                    "`setscheduler` to SCHED_DEADLINE is not modeled: give the thread `policy = \"SCHED_DEADLINE\"` \
                     with its `runtime`, `deadline` and `period` instead",
                ));
            }
            let (nice, prio) = sched_params(ctx, policy, r.nice.as_ref(), r.priority.as_ref())?;
            OpT::SetScheduler(policy, nice, prio)
        }
        "fork" => {
            let v = r.fork.as_ref().unwrap();
            if v.get_ref().trim().is_empty() {
                return Err(ctx.err(v, "`fork`: expected the name of a [[thread]] table"));
            }
            OpT::Fork(v.get_ref().clone(), v.span().start)
        }
        "setpriority" => {
            let v = r.setpriority.as_ref().unwrap();
            OpT::SetPriority(values::int_in(ctx, v, "setpriority", -20, 19, "nice value")? as i32)
        }
        "cgroup" => {
            let v = r.cgroup.as_ref().unwrap();
            if v.get_ref().trim().is_empty() {
                return Err(ctx.err(v, "`cgroup`: expected a [cgroup.NAME] path, or \"/\" for none"));
            }
            OpT::CgroupName(v.get_ref().clone())
        }
        "wait" => OpT::Wait(name(ctx, r.wait.as_ref().unwrap())?),
        "signal" => {
            let count = match &r.count {
                Some(c) => values::int_in(ctx, c, "count", 1, u32::MAX as i64, "")? as u64,
                None => 1,
            };
            OpT::Signal(name(ctx, r.signal.as_ref().unwrap())?, count)
        }
        "fwait" => OpT::FutexWait(name(ctx, r.fwait.as_ref().unwrap())?),
        "fpost" => OpT::FutexPost(name(ctx, r.fpost.as_ref().unwrap())?),
        "post" => OpT::Post(name(ctx, r.post.as_ref().unwrap())?),
        "poll" => {
            let after = match &r.after {
                Some(a) => values::duration(ctx, a, "after", Zero::Allowed)?,
                None => 0,
            };
            OpT::Poll(poll_names(ctx, r.poll.as_ref().unwrap())?, after)
        }
        "lock" => OpT::Lock(name(ctx, r.lock.as_ref().unwrap())?),
        "unlock" => OpT::Unlock(name(ctx, r.unlock.as_ref().unwrap())?),
        _ => {
            let y = r.yield_.as_ref().unwrap();
            match y.get_ref() {
                Value::Boolean(true) | Value::String(_) => OpT::Yield,
                other => return Err(ctx.err(y, format!("`yield`: expected `yield = true`, found {}", a_type(other)))),
            }
        }
    };
    Ok((t, at))
}
