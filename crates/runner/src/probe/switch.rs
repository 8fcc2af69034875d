//! Context switch cost, as `perf bench sched pipe` measures it: two threads
//! on one CPU hand a token back and forth through a futex; each handoff is
//! a wakeup, a sleep and a switch, so one switch costs a round trip / 2.

use super::error::ProbeError;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};

use schedlab_topology::host::Percentiles;

use super::futex;
use super::ProbeBudget;
use crate::sys::{now_ns, set_affinity, set_comm};

const SLEEP_SLICE_NS: u64 = 50_000_000;

/// Wait until `turn` is `mine`; false at the deadline or on stop.
fn await_turn(turn: &AtomicU32, mine: u32, stop: &AtomicBool, deadline: u64) -> bool {
    loop {
        let t = turn.load(SeqCst);
        if t == mine {
            return true;
        }
        if stop.load(SeqCst) || now_ns() >= deadline {
            return false;
        }
        futex::wait(turn, t, SLEEP_SLICE_NS);
    }
}

/// Per-switch cost on `cpu`: the median (and p99) over batches of round trips.
pub fn switch_probe(cpu: usize, budget: &ProbeBudget) -> Result<Percentiles, ProbeError> {
    let turn = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    let deadline = now_ns() + 5_000_000_000;
    std::thread::scope(|s| {
        let partner = s.spawn(|| -> Result<(), ProbeError> {
            set_affinity(&[cpu]).map_err(|source| ProbeError::Pin { who: "", cpu, source })?;
            set_comm("schedlab-pong");
            while await_turn(&turn, 1, &stop, deadline) {
                turn.store(0, SeqCst);
                futex::wake(&turn, 1);
            }
            Ok(())
        });
        let main = s.spawn(|| -> Result<Vec<u64>, ProbeError> {
            set_affinity(&[cpu]).map_err(|source| ProbeError::Pin { who: "", cpu, source })?;
            set_comm("schedlab-ping");
            let mut per_switch = Vec::new();
            // One warm-up batch, not counted.
            for batch in 0..=budget.switch_batches {
                let t0 = now_ns();
                for _ in 0..budget.switch_round_trips {
                    turn.store(1, SeqCst);
                    futex::wake(&turn, 1);
                    if !await_turn(&turn, 0, &stop, deadline) {
                        return Err(ProbeError::Timeout("the partner stopped answering (deadline)"));
                    }
                }
                if batch > 0 {
                    per_switch.push((now_ns() - t0) / (2 * budget.switch_round_trips.max(1) as u64));
                }
            }
            Ok(per_switch)
        });
        let r = main.join().map_err(|_| ProbeError::Panicked("the ping thread")).and_then(|r| r);
        stop.store(true, SeqCst);
        turn.store(1, SeqCst);
        futex::wake(&turn, 1);
        let p = partner.join().map_err(|_| ProbeError::Panicked("the pong thread")).and_then(|r| r);
        let v = r?;
        p?;
        Percentiles::of(&v).ok_or(ProbeError::Empty("no batch finished"))
    })
}
