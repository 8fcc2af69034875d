//! Threads' `session` keys: which threads run in a session of their own.
//!
//! A session is what `setsid()` makes: the real runner starts one process
//! per named session, and with `kernel.sched_autogroup_enabled` (the
//! top-level `autogroup` key, or the host's setting) the kernel gives each
//! session an autogroup — a task group under the root with nice 0's weight
//! (`autogroup_create()`), so each session's threads share one entity per
//! CPU against the rest of the machine. Threads without the key run in the
//! runner's own session.
//!
//! Different sessions are different processes, so the checks here refuse
//! what a process boundary breaks: an object (eventfd, flag, mutex, ...)
//! used by threads of two sessions, a `fork` in a session thread, and a
//! session thread in a cpu-controller cgroup (the kernel only uses a
//! task's autogroup while it is in the root task group, so the session
//! would mean nothing).

use std::collections::BTreeMap;

use schedlab_topology::InputError;
use toml::Spanned;

use crate::file::RawSession;
use crate::validate::ThreadSites;
use crate::values::Ctx;
use crate::{ObjId, Op, Scenario};

const MAX_NAME: usize = 64;

/// A session name: letters, digits, `-`, `_`, `.`.
pub(crate) fn name(ctx: Ctx, v: &Spanned<String>) -> Result<String, InputError> {
    let n = v.get_ref();
    if n.is_empty() || n.len() > MAX_NAME {
        return Err(ctx.err(v, format!("`session` = \"{n}\": expected a name of 1 to {MAX_NAME} bytes")));
    }
    if let Some(c) = n.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Err(ctx.err(v, format!("`session` = \"{n}\": {c:?} is not allowed (letters, digits, `-`, `_`, `.`)")));
    }
    Ok(n.clone())
}

/// `[session.NAME]` tables: options of sessions the threads name.
pub(crate) fn options(
    ctx: Ctx,
    table: &BTreeMap<Spanned<String>, Spanned<RawSession>>,
    sessions: &mut [crate::SessionSpec],
) -> Result<(), InputError> {
    for (key, opts) in table {
        let Some(s) = sessions.iter_mut().find(|s| &s.name == key.get_ref()) else {
            return Err(ctx.err(
                key,
                format!(
                    "[session.{}]: no thread runs in it (set `session = \"{}\"` on a [[thread]])",
                    key.get_ref(),
                    key.get_ref()
                ),
            ));
        };
        if let Some(n) = &opts.get_ref().nice {
            s.nice = crate::values::int_in(
                ctx,
                n,
                "nice",
                -20,
                19,
                "the autogroup's nice, as /proc/PID/autogroup takes it",
            )? as i32;
        }
    }
    Ok(())
}

/// Every object an operation touches.
pub(crate) fn op_objects(op: &Op) -> Vec<ObjId> {
    let r = crate::validate::ids;
    match op {
        Op::Wait { efd } | Op::Signal { efd, .. } => r(efd),
        Op::FutexWait { futex } | Op::FutexPost { futex } | Op::FutexReset { futex } => r(futex),
        Op::Post { flag } => r(flag),
        Op::Poll { flags, .. } => flags.clone(),
        Op::Lock { mutex } | Op::Unlock { mutex } => r(mutex),
        Op::ListAdd { list, futex } => [r(list), r(futex)].concat(),
        Op::WakeList { list, .. } => r(list),
        Op::LockCpu { locks } | Op::UnlockCpu { locks } => vec![*locks],
        Op::GridTimer { timer, .. } => vec![*timer],
        Op::CondWait { cond, mutex } => [r(cond), r(mutex)].concat(),
        Op::CondSignal { cond } | Op::CondBroadcast { cond } => r(cond),
        Op::Barrier { barrier } => vec![*barrier],
        Op::Run { .. }
        | Op::Sleep { .. }
        | Op::Yield
        | Op::Timer { .. }
        | Op::RunWall { .. }
        | Op::SetAffinity { .. }
        | Op::SetScheduler { .. }
        | Op::SetPriority { .. }
        | Op::SetCgroup { .. }
        | Op::Fork { .. } => Vec::new(),
    }
}

/// The checks of the module doc; `session_at[i]` is where thread `i`'s
/// `session` was written.
pub(crate) fn check(
    ctx: Ctx,
    s: &Scenario,
    sites: &[ThreadSites],
    session_at: &[Option<usize>],
) -> Result<(), InputError> {
    let label = |sess: Option<usize>| match sess {
        Some(k) => format!("session `{}`", s.sessions[k].name),
        None => "the runner's session".to_string(),
    };
    let mut first_user: BTreeMap<ObjId, (usize, Option<usize>)> = BTreeMap::new();
    for (i, t) in s.threads.iter().enumerate() {
        let op_at = |k: usize| sites.get(i).and_then(|st| st.ops.get(k)).map_or(0, |o| o.at);
        if let (Some(at), Some(g)) = (session_at.get(i).copied().flatten(), t.cgroup) {
            if s.cgroups[g].controls_cpu() {
                return Err(ctx.at(
                    at,
                    format!(
                        "thread `{}` has a session and is in cgroup `{}`, a cpu-controller group: the kernel \
                         uses a session's autogroup only for tasks outside cpu cgroups, so the session would \
                         change nothing (drop one of the two)",
                        t.name, s.cgroups[g].name
                    ),
                ));
            }
        }
        for (k, op) in t.program.ops.iter().enumerate() {
            if t.session.is_some() && matches!(op, Op::Fork { .. }) {
                return Err(ctx.at(
                    op_at(k),
                    format!(
                        "thread `{}` runs in {} and forks: schedlab starts forked threads in the runner's \
                         process only (fork from a thread without a session)",
                        t.name,
                        label(t.session)
                    ),
                ));
            }
            for id in op_objects(op) {
                let (other, sess) = *first_user.entry(id).or_insert((i, t.session));
                if sess != t.session {
                    return Err(ctx.at(
                        op_at(k),
                        format!(
                            "`{}` is used by thread `{}` ({}) and thread `{}` ({}): sessions are separate \
                             processes, which share no eventfd, flag, mutex or other object here",
                            s.objects[id as usize].name,
                            s.threads[other].name,
                            label(sess),
                            t.name,
                            label(t.session)
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}
