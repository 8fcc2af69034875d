//! The blocking window: how long a thread that called `FUTEX_WAIT` stays
//! findable yet still on its runqueue, so that a wake makes it return
//! without sleeping (`ttwu_runnable()` sets it running before
//! `__schedule()` dequeues it).
//!
//! The waiter, pinned to one CPU, stamps CLOCK_MONOTONIC and calls
//! `FUTEX_WAIT`; the waker, pinned to another, waits for the stamp, spins
//! until `delay` after it, posts the word and calls `FUTEX_WAKE`. Whether
//! the waiter slept is its voluntary context switches across the call
//! (`getrusage(RUSAGE_THREAD)`). Over delays from 0 up, the share of waits
//! that returned without sleeping falls from near 1 to 0: read as the
//! distribution of the window's end, measured from the waiter's stamp to
//! the waker's call.

use super::error::ProbeError;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};

use schedlab_topology::host::WindowProbe;

use super::futex;
use super::ProbeBudget;
use crate::sys::{now_ns, set_affinity, set_comm};

/// The delays tried, ns: every 50 ns up to 3 us.
pub const WINDOW_DELAYS_NS: std::ops::RangeInclusive<u64> = 0..=60;
const STEP_NS: u64 = 50;
/// A sample whose partner does not answer within this gives up.
const SAMPLE_TIMEOUT_NS: u64 = 100_000_000;

fn voluntary_switches() -> i64 {
    // SAFETY: `u` is a valid out-pointer for the call.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD is this thread.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    u.ru_nvcsw
}

/// Run the probe with the waiter on `waiter` and the waker on `waker`.
pub fn window_probe(waker: usize, waiter: usize, budget: &ProbeBudget) -> Result<WindowProbe, ProbeError> {
    let word = AtomicU32::new(0);
    let stamp = AtomicU64::new(0);
    let delay = AtomicU64::new(0);
    let posted = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    let deadline = now_ns() + 20_000_000_000;
    let samples = budget.window_samples.max(1);
    std::thread::scope(|s| {
        let w = s.spawn(|| -> Result<(), ProbeError> {
            set_affinity(&[waker]).map_err(|source| ProbeError::Pin { who: "", cpu: waker, source })?;
            set_comm("schedlab-waker");
            loop {
                // Wait for the waiter's stamp (or the end).
                let t0 = loop {
                    if stop.load(SeqCst) || now_ns() >= deadline {
                        return Ok(());
                    }
                    let t = stamp.swap(0, SeqCst);
                    if t != 0 {
                        break t;
                    }
                    std::hint::spin_loop();
                };
                let at = t0 + delay.load(SeqCst);
                while now_ns() < at {
                    std::hint::spin_loop();
                }
                word.store(1, SeqCst);
                futex::wake(&word, 1);
                posted.fetch_add(1, SeqCst);
            }
        });
        let main = s.spawn(|| -> Result<Vec<(u64, usize, usize)>, ProbeError> {
            set_affinity(&[waiter]).map_err(|source| ProbeError::Pin { who: "", cpu: waiter, source })?;
            set_comm("schedlab-waiter");
            let mut points = Vec::new();
            for k in WINDOW_DELAYS_NS {
                let d = k * STEP_NS;
                delay.store(d, SeqCst);
                let mut awake = 0;
                for _ in 0..samples {
                    if now_ns() >= deadline {
                        return Err(ProbeError::Timeout("the probe ran past its deadline"));
                    }
                    word.store(0, SeqCst);
                    let before_posts = posted.load(SeqCst);
                    let before = voluntary_switches();
                    stamp.store(now_ns(), SeqCst);
                    while word.load(SeqCst) == 0 {
                        if futex::wait(&word, 0, SAMPLE_TIMEOUT_NS) == futex::Waited::TimedOut {
                            return Err(ProbeError::Timeout("the waker did not answer within 100 ms"));
                        }
                    }
                    if voluntary_switches() == before {
                        awake += 1;
                    }
                    // The waker's call has returned before the next sample.
                    while posted.load(SeqCst) == before_posts {
                        std::hint::spin_loop();
                    }
                    // Let the waker's CPU settle between samples.
                    crate::sys::sleep_until(now_ns() + 20_000);
                }
                points.push((d, awake, samples));
            }
            Ok(points)
        });
        let r = main.join().map_err(|_| ProbeError::Panicked("the waiter thread")).and_then(|r| r);
        stop.store(true, SeqCst);
        let wr = w.join().map_err(|_| ProbeError::Panicked("the waker thread")).and_then(|r| r);
        let points = r?;
        wr?;
        Ok(WindowProbe { waker, waiter, points })
    })
}
