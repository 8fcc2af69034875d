//! A scenario's task groups in the model: each `[cgroup.NAME]` of the cpu
//! controller becomes a task group under its parent (`cpu.weight` as
//! shares, `cpu.idle`), and with autogroup on each session becomes an
//! autogroup (a task group under the root whose shares are its nice
//! value's weight, `autogroup_set_nice()`), as does the worker's own
//! session for the threads that name none.
//!
//! A `max` becomes the group's CFS bandwidth (`tg_set_cfs_bandwidth()`
//! before any thread joins, as the real runner writes `cpu.max`).
//! Cpuset-only tables are not task groups: the scenario folds their CPUs
//! into the threads' affinities.
//!
//! Placement matches the real runner's cgroup v2 layout: the named groups'
//! entities compete at the top with the threads in no group (the runner's
//! scratch group holds both and is alone at the host's root). On cgroup v1
//! the runner leaves ungrouped threads in its own cgroup, where autogroup
//! applies to them; the difference shows only when a file mixes ungrouped
//! fair threads with cpu groups.

use schedlab_kernel::sched::SCHED_PRIO_TO_WEIGHT;
use schedlab_kernel::{Kernel, Outbox, TaskId};
use schedlab_scenario::Scenario;

/// Whether the run has autogroup on: the file's `autogroup`, else the
/// kernel's default (CONFIG_SCHED_AUTOGROUP=y and enabled, as Debian and
/// Fedora build and boot it).
pub(crate) fn autogroup_on(scenario: &Scenario) -> bool {
    scenario.autogroup.as_ref().is_none_or(|a| a.value)
}

/// The scenario's groups as the kernel model's task groups.
#[derive(Clone, Debug, Default)]
pub(crate) struct GroupMap {
    /// Per `[cgroup]` table, its task group (`None`: a cpuset-only table).
    pub of_cgroup: Vec<Option<usize>>,
    /// Where a thread in no cgroup is: the root, or the worker's autogroup.
    pub root: usize,
    /// Each task group made, with its name.
    pub made: Vec<(String, usize)>,
}

impl GroupMap {
    /// The task group a `cgroup` move (`None`: "/") puts a thread in.
    pub fn target(&self, cgroup: Option<usize>) -> usize {
        cgroup.and_then(|c| self.of_cgroup[c]).unwrap_or(self.root)
    }
}

/// Create the scenario's task groups in `kernel` and put each initial
/// thread (task `tasks[i]` for thread `i`) in its own. Returns the notes to
/// show the user and the mapping.
pub(crate) fn create(
    scenario: &Scenario,
    kernel: &mut Kernel,
    tasks: &[TaskId],
    out: &mut Outbox,
) -> (Vec<String>, GroupMap) {
    let mut notes = Vec::new();
    let mut made = Vec::new();
    let mut of_cgroup = vec![None; scenario.cgroups.len()];
    for (i, g) in scenario.cgroups.iter().enumerate() {
        if !g.controls_cpu() {
            continue;
        }
        // The nearest cpu group up; cpuset-only tables in between are not task groups.
        let mut parent = g.parent;
        while let Some(p) = parent.filter(|&p| of_cgroup[p].is_none()) {
            parent = scenario.cgroups[p].parent;
        }
        let parent_tg = parent.and_then(|p| of_cgroup[p]).unwrap_or(0);
        let tg = kernel.create_task_group(&g.name, parent_tg, g.shares() as u32, g.idle);
        if let Some(max) = g.max {
            // Written before t = 0 from CPU 0, as the runner's setup does from its CPU.
            kernel.set_cfs_bandwidth(tg, max.quota_ns, max.period_ns, 0, 0, out);
        }
        of_cgroup[i] = Some(tg);
        made.push((g.name.clone(), tg));
    }
    let sessions = autogroup_on(scenario) && scenario.threads.iter().any(|t| t.session.is_some());
    let mut of_session = vec![None; scenario.sessions.len()];
    let mut own_session = None;
    if sessions {
        for (i, s) in scenario.sessions.iter().enumerate() {
            let weight = SCHED_PRIO_TO_WEIGHT[(s.nice + 20) as usize];
            let name = format!("autogroup:{}", s.name);
            let tg = kernel.create_task_group(&name, 0, weight, false);
            of_session[i] = Some(tg);
            made.push((name, tg));
        }
        notes.push(format!(
            "autogroup is on ({}): each session is a task group of its nice value's weight, and the threads \
             in no session share one of nice 0 (the worker's session)",
            if scenario.autogroup.is_some() { "the file's `autogroup`" } else { "the kernel's default" }
        ));
    }
    for (i, t) in scenario.threads.iter().enumerate() {
        let tg = match (t.cgroup.and_then(|c| of_cgroup[c]), t.session) {
            (Some(tg), _) => Some(tg),
            // Autogroup applies to tasks in the root cgroup only (`task_wants_autogroup()`).
            (None, Some(s)) => of_session[s],
            (None, None) if sessions => Some(*own_session.get_or_insert_with(|| {
                let tg = kernel.create_task_group("autogroup:main", 0, 1024, false);
                made.push(("autogroup:main".to_string(), tg));
                tg
            })),
            _ => None,
        };
        // RT threads join too: the group matters once they are fair (no RT_GROUP_SCHED).
        if let Some(tg) = tg {
            kernel.set_task_group(tasks[i], tg);
        }
    }
    let root = own_session.unwrap_or(0);
    (notes, GroupMap { of_cgroup, root, made })
}
