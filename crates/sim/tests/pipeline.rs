//! The two-thread pipeline hands its observer the table and every event in
//! the simulation's order, chunk boundaries included, as one thread does.

use std::path::Path;

use schedlab_scenario::Scenario;
use schedlab_sim::pipeline::CHUNK_EVENTS;
use schedlab_sim::{simulate_observed, simulate_pair, simulate_pipelined, PairObserver, SimOptions, TraceObserver};
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

#[derive(Default)]
struct Keep {
    table: Option<TaskTable>,
    events: Vec<Event>,
}

impl TraceObserver for Keep {
    fn start(&mut self, table: &TaskTable) {
        assert!(self.events.is_empty(), "the table comes before every event");
        self.table = Some(table.clone());
    }
    fn event(&mut self, e: &Event) {
        self.events.push(*e);
    }
}

fn scenario() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/asym_min-2cpu.toml");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_observer_sees_what_one_thread_sees() {
    let s = scenario();
    let opts = SimOptions { duration_ns: Some(1_500_000_000), ..Default::default() };
    let (mut one, mut two) = (Keep::default(), Keep::default());
    let a = simulate_observed(&s, &opts, &mut one, true).unwrap();
    let b = simulate_pipelined(&s, &opts, &mut two, true).unwrap();
    assert!(one.events.len() > 2 * CHUNK_EVENTS, "several chunks: {}", one.events.len());
    assert_ne!(one.events.len() % CHUNK_EVENTS, 0, "and a partial last one");
    assert_eq!(one.table, two.table);
    assert_eq!(one.events, two.events);
    assert_eq!((a.end_ns, a.seed), (b.end_ns, b.seed));
}

#[test]
#[should_panic(expected = "observer failed")]
fn a_panicking_observer_fails_the_run_instead_of_hanging_it() {
    struct Bad(usize);
    impl TraceObserver for Bad {
        fn event(&mut self, _: &Event) {
            self.0 += 1;
            assert!(self.0 < 100, "observer failed");
        }
    }
    let opts = SimOptions { duration_ns: Some(300_000_000), ..Default::default() };
    let _ = simulate_pipelined(&scenario(), &opts, &mut Bad(0), true);
}

/// Both runs of a pair, kept, read in the order `pick` chooses.
struct KeepTwo {
    runs: [Keep; 2],
    pick: fn(&[Keep; 2]) -> usize,
}

impl PairObserver for KeepTwo {
    fn start(&mut self, run: usize, table: &TaskTable) {
        self.runs[run].start(table);
    }
    fn task_new(&mut self, _: usize, _: Pid, _: &TaskInfo) {}
    fn event(&mut self, run: usize, e: &Event) {
        self.runs[run].event(e);
    }
    fn next_run(&self) -> usize {
        (self.pick)(&self.runs)
    }
}

#[test]
fn a_pair_is_each_run_as_it_runs_alone_whatever_order_it_is_read_in() {
    // Two settings of one scenario (they part ways early), read run 0
    // first, run 1 first, or the one behind first.
    let s = scenario();
    let a = SimOptions { duration_ns: Some(800_000_000), ..Default::default() };
    let b = SimOptions { features: vec!["NO_DELAY_DEQUEUE".into()], ..a.clone() };
    let (mut alone_a, mut alone_b) = (Keep::default(), Keep::default());
    simulate_observed(&s, &a, &mut alone_a, true).unwrap();
    simulate_observed(&s, &b, &mut alone_b, true).unwrap();
    assert_ne!(alone_a.events, alone_b.events);
    let picks: [fn(&[Keep; 2]) -> usize; 3] = [|_| 0, |_| 1, |r| usize::from(r[1].events.len() < r[0].events.len())];
    for pick in picks {
        let mut two = KeepTwo { runs: [Keep::default(), Keep::default()], pick };
        let [ra, rb] = simulate_pair([(&s, &a), (&s, &b)], &mut two, true);
        assert!(ra.is_ok() && rb.is_ok());
        assert_eq!(two.runs[0].events, alone_a.events);
        assert_eq!(two.runs[1].events, alone_b.events);
        assert_eq!(two.runs[0].table, alone_a.table);
    }
}
