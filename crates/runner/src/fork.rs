//! `fork` on the host: a workload thread creating another mid-run.
//!
//! The child is a plain `pthread_create()` (std's thread builder), so the
//! kernel gives it the forker's policy, priority, affinity and cgroup and
//! places it by fork balancing; its first steps are its own table's
//! cgroup, affinity and policy, as rt-app's threads set theirs, then its
//! program. It has the
//! run's deadline like every other thread, and the worker's main thread
//! waits for it as for the threads made at the start.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};

use schedlab_scenario::{Scenario, ThreadSpec, MAX_FORKED_THREADS, MAX_FORKS_PER_OP};

use crate::plan::{Plan, ThreadPlan};
use crate::program::{run_program, End, Outcome, Shared};
use crate::sys;
use crate::worker::{apply_sched, ThreadReport};

/// Stack of a forked thread, as of the threads made at the start.
const STACK_BYTES: usize = 256 << 10;

/// The run's forking: the templates and what the forked threads did.
pub struct ForkHub {
    templates: Vec<(ThreadSpec, ThreadPlan)>,
    state: Mutex<ForkState>,
    /// The run's [`Shared`] (each child holds it) and the worker's channel
    /// of finished threads; set once the run starts.
    link: OnceLock<(Weak<Shared>, Mutex<Done>)>,
}

/// The worker's channel of finished threads (index, outcome).
type Done = mpsc::Sender<(usize, Outcome)>;

#[derive(Default)]
struct ForkState {
    total: u64,
    per_template: Vec<u64>,
    threads: Vec<ThreadReport>,
    live: usize,
}

/// What a worker thread keeps of its own forks: how many each `fork` op
/// of its program made (keyed by the op's address, stable for the run).
#[derive(Default)]
pub struct LocalForks(HashMap<usize, u64>);

impl ForkHub {
    pub fn new(scenario: &Scenario, plan: &Plan) -> ForkHub {
        let templates: Vec<(ThreadSpec, ThreadPlan)> =
            scenario.templates.iter().cloned().zip(plan.templates.iter().cloned()).collect();
        let state = ForkState { per_template: vec![0; templates.len()], ..Default::default() };
        ForkHub { templates, state: Mutex::new(state), link: OnceLock::new() }
    }

    /// Let the run's threads fork: children hold `shared` and report on `done`.
    pub fn link(&self, shared: &Arc<Shared>, done: Done) {
        let _ = self.link.set((Arc::downgrade(shared), Mutex::new(done)));
    }

    /// Forked threads still running.
    pub fn live(&self) -> usize {
        self.state.lock().map(|s| s.live).unwrap_or(0)
    }

    /// Every forked thread's report, in fork order.
    pub fn reports(&self) -> Vec<ThreadReport> {
        self.state.lock().map(|s| s.threads.clone()).unwrap_or_default()
    }
}

/// `fork` of template `template` by the calling thread, from the op at `key`.
pub fn fork(sh: &Shared, template: usize, key: usize, local: &mut LocalForks) -> Result<(), End> {
    let hub = &sh.forks;
    let mine = local.0.entry(key).or_insert(0);
    let Some((weak, done)) = hub.link.get() else {
        return Err(End::Failed("fork before the run started".into()));
    };
    let Some(shared) = weak.upgrade() else { return Err(End::Stopped) };
    let done = done.lock().map_err(|_| End::Failed("the fork channel is poisoned".into()))?.clone();
    let Some((spec, tplan)) = hub.templates.get(template).cloned() else {
        return Err(End::Failed(format!("fork of template {template}, which the run's plan does not have")));
    };
    let (index, comm) = {
        let mut st = hub.state.lock().map_err(|_| End::Failed("the fork table is poisoned".into()))?;
        if *mine >= MAX_FORKS_PER_OP {
            return Err(End::Failed(format!(
                "one `fork` op of a thread may create {MAX_FORKS_PER_OP} threads (rt-app's FORKS_LIMIT)"
            )));
        }
        if st.total >= MAX_FORKED_THREADS {
            return Err(End::Failed(format!("a run may fork {MAX_FORKED_THREADS} threads in all")));
        }
        let n = st.per_template[template];
        st.per_template[template] += 1;
        st.total += 1;
        // The model's names for them (Scenario::forked_comm).
        let comm = schedlab_scenario::forked_comm(&hub.templates[template].0, n);
        st.threads.push(ThreadReport {
            name: comm.clone(),
            tid: 0,
            setup_notes: Vec::new(),
            outcome: None,
            forked_from: Some(template),
        });
        st.live += 1;
        (st.threads.len() - 1, comm)
    };
    *mine += 1;
    let name = comm.clone();
    let spawned = std::thread::Builder::new().name(comm.clone()).stack_size(STACK_BYTES).spawn(move || {
        sys::set_comm(&name);
        let mut notes = Vec::new();
        // It started in its forker's cgroup (the kernel's rule); its own table's comes first.
        if let Some(files) = spec.cgroup.and_then(|k| shared.cgroup_moves.get(k + 1)) {
            if let Err(e) = crate::cgroup::attach(files, sys::gettid()) {
                notes.push(format!("{name}: cannot join its cgroup: {e}"));
            }
        }
        if let Err(e) = sys::set_affinity(&tplan.cpus) {
            notes.push(format!("{name}: sched_setaffinity({:?}) failed: {e}", tplan.cpus));
        }
        notes.extend(apply_sched(&ThreadSpec { name: name.clone(), ..spec.clone() }));
        if let Ok(mut st) = shared.forks.state.lock() {
            st.threads[index].tid = sys::gettid();
            st.threads[index].setup_notes = notes;
        }
        let outcome = run_program(&shared, &spec);
        if let Ok(mut st) = shared.forks.state.lock() {
            st.threads[index].outcome = Some(outcome.clone());
            st.live -= 1;
        }
        let _ = done.send((usize::MAX, outcome));
    });
    if let Err(e) = spawned {
        if let Ok(mut st) = hub.state.lock() {
            st.live -= 1;
            st.threads[index].outcome =
                Some(Outcome { iterations: 0, end: End::Failed(format!("not created: {e}")), cpu_ns: 0 });
        }
        return Err(End::Failed(format!("cannot create thread {comm}: {e}")));
    }
    Ok(())
}
