//! A streamed run on two threads: the simulation on the caller's, the
//! observer (the report's analysis, the trace writers) on another, joined
//! by a bounded channel of event chunks.
//!
//! The observer sees the task table and then every event in the order the
//! simulation emitted them, as on one thread, so its results are the same
//! bytes; only the wall time changes. Memory: at most [`CHUNKS_IN_FLIGHT`]
//! chunks of [`CHUNK_EVENTS`] events wait between the threads (the
//! simulation blocks when the observer falls behind).

use std::sync::mpsc;

use schedlab_scenario::Scenario;
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

use crate::{simulate_observed, SimError, SimOptions, SimResult, TraceObserver};

/// Events per message between the threads: large enough that the channel's
/// cost per event is negligible, small enough to stay in cache.
pub const CHUNK_EVENTS: usize = 8192;

/// Chunks that may wait for the observer (about 2.5 MB of events).
pub const CHUNKS_IN_FLIGHT: usize = 8;

enum Msg {
    Start(Box<TaskTable>),
    Events(Vec<Event>),
    TaskNew(Pid, TaskInfo),
}

/// The simulation side: batches events and sends them.
struct Sender {
    tx: mpsc::SyncSender<Msg>,
    chunk: Vec<Event>,
    /// Chunks handed back by the observer, to reuse their allocations.
    spare: mpsc::Receiver<Vec<Event>>,
    /// The observer thread has gone (it panicked): stop sending.
    closed: bool,
}

/// The observer side: messages in, emptied chunks back.
struct Receiver {
    rx: mpsc::Receiver<Msg>,
    spare: mpsc::Sender<Vec<Event>>,
}

/// A streamed run's two ends.
fn channel() -> (Sender, Receiver) {
    let (tx, rx) = mpsc::sync_channel::<Msg>(CHUNKS_IN_FLIGHT);
    let (spare_tx, spare_rx) = mpsc::channel::<Vec<Event>>();
    let sender = Sender { tx, chunk: Vec::with_capacity(CHUNK_EVENTS), spare: spare_rx, closed: false };
    (sender, Receiver { rx, spare: spare_tx })
}

impl Sender {
    fn send(&mut self, msg: Msg) {
        if !self.closed && self.tx.send(msg).is_err() {
            self.closed = true;
        }
    }

    fn flush(&mut self) {
        if self.chunk.is_empty() {
            return;
        }
        let next = self.spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK_EVENTS));
        let full = std::mem::replace(&mut self.chunk, next);
        self.send(Msg::Events(full));
    }

    /// Simulate into this end; the channel closes when it returns.
    fn simulate(mut self, scenario: &Scenario, opts: &SimOptions, kernel_events: bool) -> Result<SimResult, SimError> {
        let result = simulate_observed(scenario, opts, &mut self, kernel_events);
        self.flush();
        result
    }
}

impl Receiver {
    /// Hand the next message to `observer`; false once the simulation is over.
    fn deliver(&self, observer: &mut dyn TraceObserver) -> bool {
        match self.rx.recv() {
            Ok(Msg::Start(table)) => observer.start(&table),
            Ok(Msg::TaskNew(pid, info)) => observer.task_new(pid, &info),
            Ok(Msg::Events(mut chunk)) => {
                chunk.iter().for_each(|e| observer.event(e));
                chunk.clear();
                let _ = self.spare.send(chunk);
            }
            Err(_) => return false,
        }
        true
    }
}

impl TraceObserver for Sender {
    fn start(&mut self, table: &TaskTable) {
        self.send(Msg::Start(Box::new(table.clone())));
    }

    fn task_new(&mut self, pid: Pid, info: &TaskInfo) {
        // The events before it go first, so the order stays the run's.
        self.flush();
        self.send(Msg::TaskNew(pid, info.clone()));
    }

    fn event(&mut self, e: &Event) {
        self.chunk.push(*e);
        if self.chunk.len() == CHUNK_EVENTS {
            self.flush();
        }
    }
}

/// [`simulate_observed`] with `observer` on a second thread. A panic in
/// the observer is raised again here once the simulation has stopped.
pub fn simulate_pipelined(
    scenario: &Scenario,
    opts: &SimOptions,
    observer: &mut (dyn TraceObserver + Send),
    kernel_events: bool,
) -> Result<SimResult, SimError> {
    let (sender, receiver) = channel();
    std::thread::scope(|s| {
        let consumer = s.spawn(move || while receiver.deliver(observer) {});
        let result = sender.simulate(scenario, opts, kernel_events);
        if let Err(panic) = consumer.join() {
            std::panic::resume_unwind(panic);
        }
        result
    })
}

/// The caller's side of [`simulate_pair`]: what two simulations emit, each
/// message tagged with its run (0 or 1), in each run's own order.
pub trait PairObserver {
    fn start(&mut self, run: usize, table: &TaskTable);
    fn task_new(&mut self, run: usize, pid: Pid, info: &TaskInfo);
    fn event(&mut self, run: usize, e: &Event);
    /// The run to read next while both still send (e.g. the one behind, to
    /// keep two streams compared event by event close together).
    fn next_run(&self) -> usize;
}

/// One run of a pair, as a plain observer sees it.
struct RunOf<'a> {
    observer: &'a mut dyn PairObserver,
    run: usize,
}

impl TraceObserver for RunOf<'_> {
    fn start(&mut self, table: &TaskTable) {
        self.observer.start(self.run, table);
    }
    fn task_new(&mut self, pid: Pid, info: &TaskInfo) {
        self.observer.task_new(self.run, pid, info);
    }
    fn event(&mut self, e: &Event) {
        self.observer.event(self.run, e);
    }
}

/// Two simulations at once, each on a thread of its own, observed on the
/// caller's thread as [`PairObserver::next_run`] asks: both runs stay
/// streamed (at most [`CHUNKS_IN_FLIGHT`] chunks wait per run), so
/// comparing them needs neither trace in memory. Each run's messages reach
/// the observer in that run's order, so what the observer computes does not
/// depend on the threads' timing. A panic in the observer is raised again
/// once both simulations have stopped.
pub fn simulate_pair(
    runs: [(&Scenario, &SimOptions); 2],
    observer: &mut dyn PairObserver,
    kernel_events: bool,
) -> [Result<SimResult, SimError>; 2] {
    std::thread::scope(|s| {
        let mut receivers = Vec::new();
        let mut handles = Vec::new();
        for (scenario, opts) in runs {
            let (sender, receiver) = channel();
            receivers.push(receiver);
            handles.push(s.spawn(move || sender.simulate(scenario, opts, kernel_events)));
        }
        let observed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut open = [true, true];
            while open[0] || open[1] {
                let run = match open {
                    [true, true] => observer.next_run().min(1),
                    [true, false] => 0,
                    _ => 1,
                };
                open[run] = receivers[run].deliver(&mut RunOf { observer: &mut *observer, run });
            }
        }));
        // Dropping the receivers lets a simulation blocked on a full channel
        // (after an observer panic) run to its end.
        drop(receivers);
        let mut joined = handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        let results = [joined.next().expect("two runs"), joined.next().expect("two runs")];
        if let Err(panic) = observed {
            std::panic::resume_unwind(panic);
        }
        results
    })
}
