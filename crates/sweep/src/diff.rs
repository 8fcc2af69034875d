//! `schedlab diff`'s two runs: both settings simulated at once, streamed
//! into one [`DiffCollector`] (the command and `bench` share this).

use schedlab_report::DiffCollector;
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate_pair, PairObserver, SimError, SimOptions, SimResult};
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

/// The pair's messages into the collector, reading the run behind first.
struct Feed<'a>(&'a mut DiffCollector);

impl PairObserver for Feed<'_> {
    fn start(&mut self, run: usize, table: &TaskTable) {
        self.0.start(run, table);
    }
    fn task_new(&mut self, run: usize, pid: Pid, info: &TaskInfo) {
        self.0.task_new(run, pid, info);
    }
    fn event(&mut self, run: usize, e: &Event) {
        self.0.event(run, e);
    }
    fn next_run(&self) -> usize {
        self.0.next_run()
    }
}

/// Simulate `a` and `b` (each a scenario and its options) at once into
/// `collector`; the two results, in that order.
pub fn simulate_diff(
    a: (&Scenario, &SimOptions),
    b: (&Scenario, &SimOptions),
    collector: &mut DiffCollector,
) -> [Result<SimResult, SimError>; 2] {
    simulate_pair([a, b], &mut Feed(collector), true)
}
